/*
 * win_bench: ARMCI_Win_* (include/armci_win.h) beside Open MPI's MPI_Win_*
 * (windows from MPI_Win_allocate), the same logic on the same processes in
 * one run. Every rank works on its right neighbour at once (no two ranks
 * lock the same target), so at np > cores the figures include the
 * oversubscription, as the reference does:
 *   lock_put_unlock_x   lock exclusive + 8 B put + unlock
 *   lock_put_unlock_s   the same with a shared lock
 *   lock_unlock         exclusive lock and unlock, nothing inside
 *   fence_empty         one fence, no operation
 *   fence_put           an 8 B put to the right neighbour + one fence
 *   pscw_ring           post(left) start(right) put complete wait
 *   self_pscw           post(self) start(self) put to self complete wait:
 *                       no other rank is waited for, so the time is the
 *                       library's own work, and callgrind on rank 0 counts
 *                       its instructions without polls (benchmarks/README.md)
 *   lpu_x_<size>        lock exclusive + put of <size> (8 B .. 1 MiB) + unlock
 *   contend_<k>         ranks 0..k-1 each lock rank 0 exclusive, put 8 B
 *                       into their own slot, unlock (k = 1..np; the time
 *                       per epoch of one locker, all finishing)
 *   halo_<size>         put <size> to both neighbours + fence
 *   epoch16_lock        lock exclusive + 16 puts of 8 B, then 16 gets of 8 B
 *                       + unlock (what ARMCI_WIN_REORDER reorders)
 *   epoch16_fence       the same 16 + 16 between two fences
 *   fence_np_put        fence(NOPRECEDE) + 8 B put to the right neighbour +
 *                       fence(NOSUCCEED): an epoch of fences of its own
 *   fence_nbr8          an 8 B put to each of the ranks r+-1..r+-4 (mod np;
 *                       the distinct ones other than r: fewer than 8 below
 *                       np 9, the output says how many) + one fence
 *   overlap_<size>      lock exclusive + put of <size> (64 KiB .. 1 MiB) +
 *                       computation for about the epoch's own time without
 *                       it (calibrated per implementation) + unlock; the
 *                       overlap fraction is computed as overlap_bench does
 *                       from the epoch alone, the computation alone and
 *                       both (0%: they add up, 100%: the transfer hidden)
 * --one-way: in the lock cells (lock_put_unlock_*, lock_unlock, lpu_x_*)
 * only the even ranks time epochs, the odd ones wait in the barrier: one
 * origin per target, as perftest's latency pairs run (with every rank
 * busy, two origins share the device and, on two cores, the CPUs too).
 * Samples of the two alternate (which goes first alternates too); each is a
 * calibrated number of back-to-back epochs between two MPI_Barriers, timed
 * on rank 0. Each cell is checked once before timing: the value written
 * must be in the neighbour's window.
 *
 * libarmci only (ARMCI-MPI has no windows API). Options: see --help;
 * --cells PREFIX,... runs only the cells whose names start so.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "armci_win.h"
#include "harness.h"
#include "bench_compute.h"

enum op { OP_LPU_X, OP_LPU_S, OP_LU, OP_FENCE_EMPTY, OP_FENCE_PUT, OP_PSCW, OP_LPU_SIZE, OP_CONTEND, OP_HALO,
          OP_E16_LOCK, OP_E16_FENCE, OP_FENCE_NBR8, OP_OVERLAP, OP_FENCE_NP, OP_PSCW_SELF };
static const char *op_names[] = {"lock_put_unlock_x", "lock_put_unlock_s", "lock_unlock", "fence_empty",
                                 "fence_put",         "pscw_ring",         NULL,          NULL,
                                 NULL,                "epoch16_lock",      "epoch16_fence",
                                 "fence_nbr8",        NULL,          "fence_np_put",      "self_pscw"};
/* epoch16: puts into the first 16 words, gets from 16 words at the end of
 * the window that nothing writes. */
enum { E16 = 16 };
static size_t e16_gets;
static long e16_got[E16];
enum { MAX_PUT = 1 << 20, MAX_HALO = 1 << 16, MAX_CELLS = 64, MAX_LOCKERS = 8 };
/* The window: [0, MAX_PUT) the lock cells' target, then one slot of 8 B
 * per rank (contention), then two halo slots, the epoch16 gets' words and
 * one slot of 8 B per rank (fence_nbr8: the slot of the rank that writes). */
static size_t slot_offset, halo_offset, nbr_offset, win_bytes;
/* fence_nbr8: the distinct ranks among r+-1..r+-4 mod np other than r; the
 * relation is symmetric, so they are also the ranks that write here. */
static int nbrs[8], nnbrs;
/* overlap cells: what the epoch runs (the transfer, both, the computation
 * alone) and the kernel's speed on this rank's core (a first guess: the
 * calibration then times the computation itself). */
enum overlap_part { OV_BOTH, OV_COMM, OV_COMPUTE };
static enum overlap_part overlap_part = OV_BOTH;
static double units_per_us;
static unsigned char *payload; /* MAX_PUT bytes, its first long the value */
enum impl { IMPL_ARMCI, IMPL_MPI, NIMPLS };

static struct bench_pass_options opt = {.reps = 9, .warmup = 1, .sample_s = 0.02};
static const char *only_cells;
static int np, left, right;
static int one_way; /* --one-way */

static ARMCI_Win awin;
static long *abase;
static ARMCI_Group agroups[3]; /* {left}, {right}, {me} */
static MPI_Win mwin;
static long *mbase;
static MPI_Group mgroups[3];

struct cell {
  enum op op;
  size_t bytes; /* OP_LPU_SIZE, OP_HALO */
  int lockers;  /* OP_CONTEND */
  char name[24];
  long iters;
  double samples[NIMPLS][BENCH_MAX_REPS];
  /* OP_OVERLAP: kernel units per epoch, and the samples of the transfer
   * alone and of the computation alone (samples[] holds both together). */
  long units[NIMPLS];
  double comm[NIMPLS][BENCH_MAX_REPS], comp[NIMPLS][BENCH_MAX_REPS];
};
static struct cell cells[MAX_CELLS];
static int ncells;

/* --cells: a comma list of name prefixes (NULL: every cell). */
static int cell_wanted(const char *name) {
  if (only_cells == NULL) return 1;
  for (const char *p = only_cells; *p;) {
    size_t n = strcspn(p, ",");
    if (n > 0 && strncmp(name, p, n) == 0) return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

static void add_cell(enum op op, size_t bytes, int lockers) {
  struct cell *c = &cells[ncells++];
  c->op = op;
  c->bytes = bytes;
  c->lockers = lockers;
  char size[16];
  if (op == OP_LPU_SIZE)
    snprintf(c->name, sizeof c->name, "lpu_x_%s", format_bytes((long)bytes, size, sizeof size));
  else if (op == OP_HALO)
    snprintf(c->name, sizeof c->name, "halo_%s", format_bytes((long)bytes, size, sizeof size));
  else if (op == OP_CONTEND)
    snprintf(c->name, sizeof c->name, "contend_%d", lockers);
  else if (op == OP_OVERLAP)
    snprintf(c->name, sizeof c->name, "overlap_%s", format_bytes((long)bytes, size, sizeof size));
  else
    snprintf(c->name, sizeof c->name, "%s", op_names[op]);
  if (!cell_wanted(c->name)) ncells--;
}

/* Functions of their own, never inlined into the timed loop: callgrind then
 * counts an epoch's instructions per call (benchmarks/README.md). */
__attribute__((noinline)) static void armci_epoch(const struct cell *c, long value) {
  const enum op op = c->op;
  switch (op) {
    case OP_OVERLAP:
      if (overlap_part == OV_COMPUTE) {
        kernel_run(c->units[IMPL_ARMCI]);
        break;
      }
      memcpy(payload, &value, sizeof value);
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, awin);
      ARMCI_Win_put(payload, c->bytes, right, 0, awin);
      if (overlap_part == OV_BOTH) kernel_run(c->units[IMPL_ARMCI]);
      ARMCI_Win_unlock(right, awin);
      break;
    case OP_FENCE_NBR8:
      for (int j = 0; j < nnbrs; j++) ARMCI_Win_put(&value, sizeof value, nbrs[j], nbr_offset + 8 * (size_t)me, awin);
      ARMCI_Win_fence(0, awin);
      break;
    case OP_LPU_SIZE:
      memcpy(payload, &value, sizeof value);
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, awin);
      ARMCI_Win_put(payload, c->bytes, right, 0, awin);
      ARMCI_Win_unlock(right, awin);
      break;
    case OP_CONTEND:
      if (me >= c->lockers) break;
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 0, 0, awin);
      ARMCI_Win_put(&value, sizeof value, 0, slot_offset + 8 * (size_t)me, awin);
      ARMCI_Win_unlock(0, awin);
      break;
    case OP_HALO:
      memcpy(payload, &value, sizeof value);
      ARMCI_Win_put(payload, c->bytes, right, halo_offset, awin);
      ARMCI_Win_put(payload, c->bytes, left, halo_offset + MAX_HALO, awin);
      ARMCI_Win_fence(0, awin);
      break;
    case OP_LPU_X:
    case OP_LPU_S:
      ARMCI_Win_lock(op == OP_LPU_X ? ARMCI_WIN_LOCK_EXCLUSIVE : ARMCI_WIN_LOCK_SHARED, right, 0, awin);
      ARMCI_Win_put(&value, sizeof value, right, 0, awin);
      ARMCI_Win_unlock(right, awin);
      break;
    case OP_LU:
      ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, awin);
      ARMCI_Win_unlock(right, awin);
      break;
    case OP_FENCE_EMPTY: ARMCI_Win_fence(0, awin); break;
    case OP_FENCE_PUT:
      ARMCI_Win_put(&value, sizeof value, right, 0, awin);
      ARMCI_Win_fence(0, awin);
      break;
    case OP_FENCE_NP:
      ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE, awin);
      ARMCI_Win_put(&value, sizeof value, right, 0, awin);
      ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, awin);
      break;
    case OP_E16_LOCK:
    case OP_E16_FENCE:
      if (op == OP_E16_LOCK) ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, awin);
      for (int j = 0; j < E16; j++) ARMCI_Win_put(&value, sizeof value, right, 8 * (size_t)j, awin);
      for (int j = 0; j < E16; j++) ARMCI_Win_get(&e16_got[j], sizeof(long), right, e16_gets + 8 * (size_t)j, awin);
      if (op == OP_E16_LOCK)
        ARMCI_Win_unlock(right, awin);
      else
        ARMCI_Win_fence(0, awin);
      break;
    case OP_PSCW:
      ARMCI_Win_post(&agroups[0], 0, awin);
      ARMCI_Win_start(&agroups[1], 0, awin);
      ARMCI_Win_put(&value, sizeof value, right, 0, awin);
      ARMCI_Win_complete(awin);
      ARMCI_Win_wait(awin);
      break;
    case OP_PSCW_SELF: /* into this rank's own fence_nbr8 slot, which no neighbour writes */
      ARMCI_Win_post(&agroups[2], 0, awin);
      ARMCI_Win_start(&agroups[2], 0, awin);
      ARMCI_Win_put(&value, sizeof value, me, nbr_offset + 8 * (size_t)me, awin);
      ARMCI_Win_complete(awin);
      ARMCI_Win_wait(awin);
      break;
    default: break;
  }
}

__attribute__((noinline)) static void mpi_epoch(const struct cell *c, long value) {
  const enum op op = c->op;
  switch (op) {
    case OP_OVERLAP:
      if (overlap_part == OV_COMPUTE) {
        kernel_run(c->units[IMPL_MPI]);
        break;
      }
      memcpy(payload, &value, sizeof value);
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, mwin);
      MPI_Put(payload, (int)c->bytes, MPI_BYTE, right, 0, (int)c->bytes, MPI_BYTE, mwin);
      if (overlap_part == OV_BOTH) kernel_run(c->units[IMPL_MPI]);
      MPI_Win_unlock(right, mwin);
      break;
    case OP_FENCE_NBR8:
      for (int j = 0; j < nnbrs; j++)
        MPI_Put(&value, 1, MPI_LONG, nbrs[j], (MPI_Aint)(nbr_offset + 8 * (size_t)me), 1, MPI_LONG, mwin);
      MPI_Win_fence(0, mwin);
      break;
    case OP_LPU_SIZE:
      memcpy(payload, &value, sizeof value);
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, mwin);
      MPI_Put(payload, (int)c->bytes, MPI_BYTE, right, 0, (int)c->bytes, MPI_BYTE, mwin);
      MPI_Win_unlock(right, mwin);
      break;
    case OP_CONTEND:
      if (me >= c->lockers) break;
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, mwin);
      MPI_Put(&value, 1, MPI_LONG, 0, (MPI_Aint)(slot_offset + 8 * (size_t)me), 1, MPI_LONG, mwin);
      MPI_Win_unlock(0, mwin);
      break;
    case OP_HALO:
      memcpy(payload, &value, sizeof value);
      MPI_Put(payload, (int)c->bytes, MPI_BYTE, right, (MPI_Aint)halo_offset, (int)c->bytes, MPI_BYTE, mwin);
      MPI_Put(payload, (int)c->bytes, MPI_BYTE, left, (MPI_Aint)(halo_offset + MAX_HALO), (int)c->bytes, MPI_BYTE,
              mwin);
      MPI_Win_fence(0, mwin);
      break;
    case OP_LPU_X:
    case OP_LPU_S:
      MPI_Win_lock(op == OP_LPU_X ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, right, 0, mwin);
      MPI_Put(&value, 1, MPI_LONG, right, 0, 1, MPI_LONG, mwin);
      MPI_Win_unlock(right, mwin);
      break;
    case OP_LU:
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, mwin);
      MPI_Win_unlock(right, mwin);
      break;
    case OP_FENCE_EMPTY: MPI_Win_fence(0, mwin); break;
    case OP_FENCE_PUT:
      MPI_Put(&value, 1, MPI_LONG, right, 0, 1, MPI_LONG, mwin);
      MPI_Win_fence(0, mwin);
      break;
    case OP_FENCE_NP:
      MPI_Win_fence(MPI_MODE_NOPRECEDE, mwin);
      MPI_Put(&value, 1, MPI_LONG, right, 0, 1, MPI_LONG, mwin);
      MPI_Win_fence(MPI_MODE_NOSUCCEED, mwin);
      break;
    case OP_E16_LOCK:
    case OP_E16_FENCE:
      if (op == OP_E16_LOCK) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, mwin);
      for (int j = 0; j < E16; j++) MPI_Put(&value, 1, MPI_LONG, right, 8 * j, 1, MPI_LONG, mwin);
      for (int j = 0; j < E16; j++) MPI_Get(&e16_got[j], 1, MPI_LONG, right, (MPI_Aint)(e16_gets + 8 * (size_t)j), 1, MPI_LONG, mwin);
      if (op == OP_E16_LOCK)
        MPI_Win_unlock(right, mwin);
      else
        MPI_Win_fence(0, mwin);
      break;
    case OP_PSCW:
      MPI_Win_post(mgroups[0], 0, mwin);
      MPI_Win_start(mgroups[1], 0, mwin);
      MPI_Put(&value, 1, MPI_LONG, right, 0, 1, MPI_LONG, mwin);
      MPI_Win_complete(mwin);
      MPI_Win_wait(mwin);
      break;
    case OP_PSCW_SELF:
      MPI_Win_post(mgroups[2], 0, mwin);
      MPI_Win_start(mgroups[2], 0, mwin);
      MPI_Put(&value, 1, MPI_LONG, me, (MPI_Aint)(nbr_offset + 8 * (size_t)me), 1, MPI_LONG, mwin);
      MPI_Win_complete(mwin);
      MPI_Win_wait(mwin);
      break;
    default: break;
  }
}

/* Fence cells run inside an open fence epoch; the others outside one. */
static void open_epochs(enum op op, int open) {
  const int fence =
      op == OP_FENCE_EMPTY || op == OP_FENCE_PUT || op == OP_HALO || op == OP_E16_FENCE || op == OP_FENCE_NBR8;
  if (!fence) return;
  ARMCI_Win_fence(open ? 0 : ARMCI_WIN_MODE_NOSUCCEED, awin);
  MPI_Win_fence(open ? 0 : MPI_MODE_NOSUCCEED, mwin);
}

static double timed(const struct cell *c, enum impl impl, long iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now();
  const int lock_cell = c->op == OP_LPU_X || c->op == OP_LPU_S || c->op == OP_LU || c->op == OP_LPU_SIZE;
  if (one_way && lock_cell && me % 2) iters = 0;
  for (long i = 0; i < iters; i++) {
    if (impl == IMPL_ARMCI)
      armci_epoch(c, i);
    else
      mpi_epoch(c, i);
  }
  /* Contention: the time until every locker is through. */
  if (c->op == OP_CONTEND) MPI_Barrier(MPI_COMM_WORLD);
  double t = now() - t0;
  /* No rank moves on before every rank is through: under Open MPI's osc
   * ucx a lock's atomics may be messages its target must progress, and a
   * target gone on to the next cell's ARMCI fence stalled its lockers. */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

static double run_both(void *ctx, long n) {
  const struct cell *c = ctx;
  double a = timed(c, IMPL_ARMCI, n), b = timed(c, IMPL_MPI, n);
  return a > b ? a : b;
}

/* What rank r's epoch leaves where: the value it writes. */
static long cell_value(const struct cell *c, int r) { return 1000003L * (long)(c - cells + 1) + r; }

/* The window word(s) the cell's epoch from the neighbours must have set. */
static int cell_holds(const struct cell *c, const unsigned char *base, const char **what, long *got, long *want) {
  long v;
  switch (c->op) {
    case OP_LU:
    case OP_FENCE_EMPTY: return 1;
    case OP_CONTEND:
      if (me != 0) return 1;
      for (int r = 0; r < c->lockers; r++) {
        memcpy(&v, base + slot_offset + 8 * (size_t)r, sizeof v);
        if (v != cell_value(c, r)) {
          *what = "contention slot", *got = v, *want = cell_value(c, r);
          return 0;
        }
      }
      return 1;
    case OP_HALO:
      memcpy(&v, base + halo_offset + MAX_HALO, sizeof v);
      if (v != cell_value(c, right)) {
        *what = "halo from the right", *got = v, *want = cell_value(c, right);
        return 0;
      }
      /* and the left neighbour's, below */
      memcpy(&v, base + halo_offset, sizeof v);
      *what = "halo from the left";
      break;
    case OP_FENCE_NBR8:
      for (int j = 0; j < nnbrs; j++) {
        memcpy(&v, base + nbr_offset + 8 * (size_t)nbrs[j], sizeof v);
        if (v != cell_value(c, nbrs[j])) {
          *what = "the slot of a neighbour", *got = v, *want = cell_value(c, nbrs[j]);
          return 0;
        }
      }
      return 1;
    case OP_PSCW_SELF:
      memcpy(&v, base + nbr_offset + 8 * (size_t)me, sizeof v);
      *what = "value put to self", *got = v, *want = cell_value(c, me);
      return v == *want;
    case OP_E16_LOCK:
    case OP_E16_FENCE:
      for (int j = 0; j < E16; j++) {
        memcpy(&v, base + 8 * (size_t)j, sizeof v);
        if (v != cell_value(c, left)) {
          *what = "one of the 16 puts from the left", *got = v, *want = cell_value(c, left);
          return 0;
        }
      }
      break;
    default:
      memcpy(&v, base, sizeof v);
      *what = "value from the left";
      break;
  }
  *got = v, *want = cell_value(c, left);
  return v == *want;
}

/* One epoch writing a known value; after a barrier the value must be in
 * this rank's window (written by the neighbours or the lockers). */
static void check_cell(const struct cell *c) {
  if (c->op == OP_LU || c->op == OP_FENCE_EMPTY) return;
  const int fence = c->op == OP_FENCE_PUT || c->op == OP_HALO || c->op == OP_E16_FENCE || c->op == OP_FENCE_NBR8;
  const int e16 = c->op == OP_E16_LOCK || c->op == OP_E16_FENCE;
  MPI_Barrier(MPI_COMM_WORLD);
  /* The gets read words nobody writes (0xff bytes): -1 once complete. */
  for (int impl = 0; impl < NIMPLS; impl++) {
    if (e16) memset(e16_got, 0, sizeof e16_got);
    if (impl == IMPL_ARMCI)
      armci_epoch(c, cell_value(c, me));
    else
      mpi_epoch(c, cell_value(c, me));
    if (e16 && fence) {
      if (impl == IMPL_ARMCI)
        ARMCI_Win_fence(0, awin);
      else
        MPI_Win_fence(0, mwin);
    }
    for (int j = 0; e16 && j < E16; j++)
      if (e16_got[j] != -1) die("%s (%s): get %d read %ld, expected -1", c->name, impl == IMPL_ARMCI ? "armci" : "mpi", j, e16_got[j]);
  }
  if (fence && !e16) {
    ARMCI_Win_fence(0, awin);
    MPI_Win_fence(0, mwin);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const char *what = "";
  long got, want;
  if (!cell_holds(c, (const unsigned char *)abase, &what, &got, &want))
    die("%s (armci): rank %d's window: %s is %ld, expected %ld", c->name, me, what, got, want);
  if (!fence) MPI_Win_lock(MPI_LOCK_SHARED, me, 0, mwin); /* passive target: read inside an epoch */
  const int ok = cell_holds(c, (const unsigned char *)mbase, &what, &got, &want);
  if (!fence) MPI_Win_unlock(me, mwin);
  if (!ok) die("%s (mpi): rank %d's window: %s is %ld, expected %ld", c->name, me, what, got, want);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void pass_fn(void *ctx, int pass) {
  (void)ctx;
  for (int k = 0; k < ncells; k++) {
    struct cell *c = &cells[k];
    open_epochs(c->op, 1);
    if (pass == 0) {
      check_cell(c);
      struct bench_calibration cal = {opt.sample_s, 0.25, 1, 1, 1, 1L << 22};
      c->iters = bench_calibrate(&cal, run_both, c) / 2;
      if (c->iters < 1) c->iters = 1;
      /* Each implementation computes for about its own epoch's time
       * (rank 0's, which every rank receives; the fastest of three, as a
       * preempted run only looks slower), on its own core's speed. */
      if (c->op == OP_OVERLAP)
        for (int impl = 0; impl < NIMPLS; impl++) {
          overlap_part = OV_COMM;
          double t = timed(c, (enum impl)impl, c->iters);
          for (int k = 0; k < 2; k++) {
            const double again = timed(c, (enum impl)impl, c->iters);
            if (again < t) t = again;
          }
          t /= (double)c->iters;
          c->units[impl] = (long)(t * 1e6 * units_per_us) + 1;
          /* Then the computation timed as the samples time it (rank 0's
           * clock, the other ranks computing too: at np > cores they share
           * the cores), and scaled to the epoch's time, twice. */
          overlap_part = OV_COMPUTE;
          for (int k = 0; k < 2; k++) {
            const double comp = timed(c, (enum impl)impl, c->iters) / (double)c->iters;
            if (comp > 0) c->units[impl] = (long)((double)c->units[impl] * t / comp) + 1;
          }
          overlap_part = OV_BOTH;
        }
    } else {
      for (int j = 0; j < NIMPLS; j++) {
        const enum impl impl = (enum impl)((j + pass) % NIMPLS);
        c->samples[impl][pass - 1] = timed(c, impl, c->iters) / (double)c->iters;
        if (c->op != OP_OVERLAP) continue;
        overlap_part = OV_COMM;
        c->comm[impl][pass - 1] = timed(c, impl, c->iters) / (double)c->iters;
        overlap_part = OV_COMPUTE;
        c->comp[impl][pass - 1] = timed(c, impl, c->iters) / (double)c->iters;
        overlap_part = OV_BOTH;
      }
    }
    open_epochs(c->op, 0);
  }
}

static const struct bench_col cols[] = {
    {"op", "op", COL_STR, -18, 0, 0},
    BENCH_COLS_OURS_VS_MPI(9, 3),
    {NULL, "armci_overlap_pct", COL_DOUBLE, 0, 0, 1},
    {NULL, "mpi_overlap_pct", COL_DOUBLE, 0, 0, 1},
};
static const struct bench_table table = BENCH_TABLE(cols);

/* overlap_bench's figure from the medians: 100 (comm + compute - total) /
 * min(comm, compute), clipped to 0..100. */
static double overlap_pct(double comm, double comp, double total) {
  const double lo = comm < comp ? comm : comp;
  double ov = lo > 0 ? 100.0 * (comm + comp - total) / lo : 0;
  return ov < 0 ? 0 : ov > 100 ? 100 : ov;
}

/* Rank 0: ours and MPI's time per epoch, their quartiles, MPI over ours and,
 * for the overlap cells, the overlap of each. */
static void report_row(int k) {
  const struct cell *c = &cells[k];
  const struct bench_figure a = bench_figure(c->samples[IMPL_ARMCI], opt.reps, 1e6, 3),
                            m = bench_figure(c->samples[IMPL_MPI], opt.reps, 1e6, 3);
  double ova = NAN, ovm = NAN;
  if (c->op == OP_OVERLAP) {
    ova = overlap_pct(bench_median(c->comm[IMPL_ARMCI], opt.reps), bench_median(c->comp[IMPL_ARMCI], opt.reps),
                      bench_median(c->samples[IMPL_ARMCI], opt.reps));
    ovm = overlap_pct(bench_median(c->comm[IMPL_MPI], opt.reps), bench_median(c->comp[IMPL_MPI], opt.reps),
                      bench_median(c->samples[IMPL_MPI], opt.reps));
  }
  bench_row(&table, c->name, a.median, a.spread, m.median, m.spread, m.median / a.median, a.q1, a.q3, m.q1, m.q3,
            ova, ovm);
}

/* Rank 0: the overlap cells' parts, after the table. */
static void print_overlap_cells(void) {
  int header = 0;
  for (int k = 0; k < ncells; k++) {
    const struct cell *c = &cells[k];
    if (c->op != OP_OVERLAP) continue;
    if (!header++)
      printf("\n# overlap cells: medians in us of the epoch alone (comm), the computation alone (compute) and\n"
             "# both (total); overlap %% = 100 (comm + compute - total) / min(comm, compute), clipped to 0..100\n"
             "%-14s %-6s %10s %10s %10s %9s\n", "op", "impl", "comm", "compute", "total", "overlap%");
    for (int impl = 0; impl < NIMPLS; impl++) {
      const double comm = bench_median(c->comm[impl], opt.reps), comp = bench_median(c->comp[impl], opt.reps),
                   total = bench_median(c->samples[impl], opt.reps);
      printf("%-14s %-6s %10.2f %10.2f %10.2f %9.1f\n", c->name, impl == IMPL_ARMCI ? "armci" : "mpi", 1e6 * comm,
             1e6 * comp, 1e6 * total, overlap_pct(comm, comp, total));
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct bench_opt opts[] = {
      BENCH_OPTS_PASSES(&opt),
      {0, "cells", OPT_STRING, &only_cells, 0, 0, "PREFIXES",
       "run only the cells whose names start with one of these (comma list)", NULL, NULL, 0, NULL},
      {0, "one-way", OPT_FLAG, &one_way, 0, 0, NULL,
       "lock cells: only even ranks lock their right neighbour, as perftest's pairs", NULL, NULL, 0, NULL},
      BENCH_OPT_END,
  };
  bench_begin(&argc, &argv, "win_bench", opts,
              "ARMCI_Win_* against MPI_Win_* (MPI_Win_allocate), alternating samples in one run;\n"
              "time per epoch at rank 0 (median, quartiles), MPI over ours.",
              2);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  left = (me + np - 1) % np;
  right = (me + 1) % np;

  slot_offset = MAX_PUT;
  halo_offset = slot_offset + 8 * (size_t)np;
  e16_gets = halo_offset + 2 * MAX_HALO;
  nbr_offset = e16_gets + 8 * E16;
  win_bytes = nbr_offset + 8 * (size_t)np;
  for (int k = 1; k <= 4; k++)
    for (int sign = -1; sign <= 1; sign += 2) {
      const int r = ((me + sign * k) % np + np) % np;
      int seen = r == me;
      for (int j = 0; j < nnbrs; j++) seen |= nbrs[j] == r;
      if (!seen) nbrs[nnbrs++] = r;
    }
  kernel_init();
  units_per_us = kernel_units_per_us(0.02);
  payload = calloc(MAX_PUT, 1);
  if (payload == NULL) die("out of memory");
  BENCH_CHECK(ARMCI_Win_allocate(win_bytes, 1, NULL, (void **)&abase, &awin), "ARMCI_Win_allocate");
  MPI_Win_allocate((MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mbase, &mwin);
  memset(abase, 0xff, win_bytes);
  memset(mbase, 0xff, win_bytes);
  /* Every one-rank group on every rank, in the same order. */
  for (int r = 0; r < np; r++) {
    ARMCI_Group g;
    ARMCI_Group_create(1, &r, &g);
    if (r == left) agroups[0] = g;
    if (r == right) agroups[1] = g;
    if (r == me) agroups[2] = g;
    if (r != left && r != right && r != me) ARMCI_Group_free(&g);
  }
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, 1, &left, &mgroups[0]);
  MPI_Group_incl(world, 1, &right, &mgroups[1]);
  MPI_Group_incl(world, 1, &me, &mgroups[2]);
  for (int k = OP_LPU_X; k <= OP_PSCW; k++) add_cell((enum op)k, 8, 0);
  size_t last = 0;
  for (size_t bytes = 8; bytes <= MAX_PUT; bytes *= 8) add_cell(OP_LPU_SIZE, last = bytes, 0);
  if (last != MAX_PUT) add_cell(OP_LPU_SIZE, MAX_PUT, 0);
  for (int k = 1; k <= np && k <= MAX_LOCKERS; k++) add_cell(OP_CONTEND, 8, k);
  for (size_t bytes = 8; bytes <= MAX_HALO; bytes *= 64) add_cell(OP_HALO, bytes, 0);
  add_cell(OP_E16_LOCK, 8, 0);
  add_cell(OP_E16_FENCE, 8, 0);
  add_cell(OP_FENCE_NBR8, 8, 0);
  add_cell(OP_FENCE_NP, 8, 0);
  add_cell(OP_PSCW_SELF, 8, 0);
  for (size_t bytes = 64 << 10; bytes <= MAX_PUT; bytes *= 4) add_cell(OP_OVERLAP, bytes, 0);
  if (ncells == 0) die("--cells %s: no cell's name starts so", only_cells);

  if (me == 0)
    for (int k = 0; k < ncells; k++)
      if (cells[k].op == OP_FENCE_NBR8)
        printf("# fence_nbr8: %d distinct neighbour%s (r+-1..r+-4 mod np %d, self excluded)%s\n", nnbrs,
               nnbrs == 1 ? "" : "s", np, nnbrs < 8 ? ": fewer than 8 at this np" : "");
  const struct bench_measurement m = {&table, &opt, pass_fn, ncells, report_row, NULL};
  bench_measure(&m, NULL);
  if (me == 0) {
    print_overlap_cells();
    bench_csv_finish();
  }
  BENCH_CHECK(ARMCI_Win_free(&awin), "ARMCI_Win_free");
  free(payload);
  MPI_Win_free(&mwin);
  bench_end();
  MPI_Finalize();
  return 0;
}
