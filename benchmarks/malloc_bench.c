/*
 * malloc_bench: what a collective allocation costs, the way Global Arrays
 * pays for it (every GA_Create/GA_Destroy is one): a loop of ARMCI_Malloc +
 * ARMCI_Free of the same size on every rank, and the same through
 * ARMCI_Malloc_group/ARMCI_Free_group over a group of every rank. Time per
 * pair at rank 0 (median and quartiles over samples taken in different
 * passes).
 *
 * The "floor" rows say what the operating system charges for one shared
 * segment of that size here, every rank at once, no library involved:
 * shm_open + ftruncate + posix_fallocate (the reservation that turns a full
 * /dev/shm into an error instead of SIGBUS) + mmap + munmap + close +
 * shm_unlink. A library that makes a fresh segment per ARMCI_Malloc pays at
 * least that.
 *
 * Builds unchanged against ARMCI-MPI (benchmarks/compare_malloc.sh runs
 * both). Every allocation of the checking pass is written by its owner and
 * read back by a neighbour, so an allocator that hands out overlapping or
 * unreachable memory fails the run.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

enum variant { V_WORLD, V_GROUP, V_FLOOR, NVARIANTS };
static const char *variant_names[NVARIANTS] = {"malloc", "group", "floor"};

static struct bench_sizes sizes = {{4096, 65536, 1048576}, 3};
static struct bench_pass_options opt = {.reps = 9, .warmup = 1, .sample_s = 0.05};

struct cell {
  enum variant variant;
  long bytes;
  long iters;
  double samples[BENCH_MAX_REPS];
};
static struct cell cells[NVARIANTS * (int)(sizeof sizes.bytes / sizeof sizes.bytes[0])];
static int ncells;
static int nprocs;
static ARMCI_Group everyone;

static void *allocate(enum variant v, long bytes, void **bases) {
  int rc = v == V_GROUP ? ARMCI_Malloc_group(bases, bytes, &everyone) : ARMCI_Malloc(bases, bytes);
  BENCH_CHECK(rc, "ARMCI_Malloc%s of %ld bytes", v == V_GROUP ? "_group" : "", bytes);
  return bases[me];
}

static void release(enum variant v, void *mine) {
  int rc = v == V_GROUP ? ARMCI_Free_group(mine, &everyone) : ARMCI_Free(mine);
  BENCH_CHECK(rc, "ARMCI_Free%s", v == V_GROUP ? "_group" : "");
}

static void floor_once(long bytes) {
  char name[64];
  snprintf(name, sizeof name, "/malloc_bench.%d.%d", (int)getpid(), me);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) die("floor: shm_open %s failed", name);
  if (ftruncate(fd, bytes) != 0 || posix_fallocate(fd, 0, bytes) != 0) {
    shm_unlink(name);
    die("floor: reserving %ld bytes of /dev/shm failed", bytes);
  }
  void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    shm_unlink(name);
    die("floor: mmap of %ld bytes failed", bytes);
  }
  munmap(p, (size_t)bytes);
  close(fd);
  shm_unlink(name);
}

/* Seconds for n pairs at rank 0; every rank gets rank 0's figure so all
 * take the same calibration decisions. */
static double timed(const struct cell *c, long n) {
  void *bases[nprocs];
  ARMCI_Barrier();
  const double t0 = now();
  for (long i = 0; i < n; i++) {
    if (c->variant == V_FLOOR) {
      floor_once(c->bytes);
      continue;
    }
    release(c->variant, allocate(c->variant, c->bytes, bases));
  }
  double t = now() - t0;
  armci_msg_bcast(&t, (int)sizeof t, 0);
  return t;
}

static double run_cell(void *ctx, long n) { return timed((const struct cell *)ctx, n); }

/* Two allocations live at once, each part filled by its owner with a
 * pattern of its own, then read by the next rank: overlapping parts, or a
 * part the neighbour cannot reach, show as a wrong byte. */
static void check_cell(const struct cell *c) {
  if (c->variant == V_FLOOR) return;
  void *a[nprocs], *b[nprocs];
  unsigned char *mine_a = allocate(c->variant, c->bytes, a);
  unsigned char *mine_b = allocate(c->variant, c->bytes, b);
  access_begin(mine_a);
  fill_pattern(mine_a, (size_t)c->bytes, 2u * (unsigned)me, 0);
  access_end(mine_a);
  access_begin(mine_b);
  fill_pattern(mine_b, (size_t)c->bytes, 2u * (unsigned)me + 1u, 0);
  access_end(mine_b);
  ARMCI_Barrier();
  const int from = (me + 1) % nprocs;
  unsigned char *copy = malloc((size_t)c->bytes);
  for (int k = 0; k < 2; k++) {
    BENCH_CHECK(ARMCI_Get(k == 0 ? a[from] : b[from], copy, (int)c->bytes, from), "ARMCI_Get");
    long bad = find_pattern_mismatch(copy, (size_t)c->bytes, 2u * (unsigned)from + (unsigned)k);
    if (bad >= 0)
      die("%s of %ld bytes: byte %ld of rank %d's part of allocation %c is wrong", variant_names[c->variant],
          c->bytes, bad, from, k == 0 ? 'a' : 'b');
  }
  free(copy);
  ARMCI_Barrier();
  release(c->variant, mine_b);
  release(c->variant, mine_a);
}

static void pass_fn(void *ctx, int pass) {
  (void)ctx;
  for (int k = 0; k < ncells; k++) {
    struct cell *c = &cells[k];
    if (pass == 0) {
      check_cell(c);
      struct bench_calibration cal = {opt.sample_s, 0.25, 1, 1, 1, 1L << 20};
      c->iters = bench_calibrate(&cal, run_cell, c);
      continue;
    }
    c->samples[pass - 1] = timed(c, c->iters) / (double)c->iters;
  }
}

static const struct bench_col cols[] = {
    {"what", "op", COL_STR, -8, 0, 0},
    {"bytes", "size", COL_LONG, 9, 0, 0},
    {"us/pair", "us_median", COL_DOUBLE, 10, 2, 3},
    {"(q1-q3)", NULL, COL_STR, -20, 0, 0},
    {"pairs", "pairs_per_sample", COL_LONG, 7, 0, 0},
    {NULL, "us_q1", COL_DOUBLE, 0, 0, 3},
    {NULL, "us_q3", COL_DOUBLE, 0, 0, 3},
};
static const struct bench_table table = BENCH_TABLE(cols);

/* Rank 0: time per pair, its quartiles and the pairs per sample. */
static void report_row(int k) {
  const struct cell *c = &cells[k];
  const struct bench_figure t = bench_figure(c->samples, opt.reps, 1e6, 2);
  bench_row(&table, variant_names[c->variant], c->bytes, t.median, t.spread, c->iters, t.q1, t.q3);
}

int main(int argc, char **argv) {
  int no_group = 0, no_floor = 0;
  const struct bench_opt opts[] = {
      BENCH_OPTS_PASSES(&opt),
      BENCH_OPT_SIZE_LIST('s', &sizes, 0, 1L << 30),
      {0, "no-group", OPT_FLAG, &no_group, 0, 0, NULL, "skip the ARMCI_Malloc_group rows", NULL, NULL, 0, NULL},
      {0, "no-floor", OPT_FLAG, &no_floor, 0, 0, NULL, "skip the floor rows (one bare shared segment)", NULL,
       NULL, 0, NULL},
      BENCH_OPT_END,
  };
  bench_begin(&argc, &argv, "malloc_bench", opts,
              "ARMCI_Malloc + ARMCI_Free pairs (and the _group calls over every rank) of each size\n"
              "per rank; time per pair at rank 0, and the floor: one bare shm segment made,\n"
              "reserved, mapped and removed.",
              1);
  nprocs = armci_msg_nproc();
  int all[nprocs];
  for (int r = 0; r < nprocs; r++) all[r] = r;
  ARMCI_Group_create(nprocs, all, &everyone);
  for (int s = 0; s < sizes.count; s++) {
    cells[ncells++] = (struct cell){V_WORLD, sizes.bytes[s], 0, {0}};
    if (!no_group) cells[ncells++] = (struct cell){V_GROUP, sizes.bytes[s], 0, {0}};
    if (!no_floor && sizes.bytes[s] > 0) cells[ncells++] = (struct cell){V_FLOOR, sizes.bytes[s], 0, {0}};
  }
  char path[64];
  snprintf(path, sizeof path, "; transfer path %s", transfer_path());
  const struct bench_measurement m = {&table, &opt, pass_fn, ncells, report_row, path};
  bench_measure(&m, NULL);
  bench_csv_finish();
  ARMCI_Group_free(&everyone);
  bench_end();
  return 0;
}
