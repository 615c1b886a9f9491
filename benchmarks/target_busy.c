/*
 * target_busy: does a get or put from rank 0 still run at full speed when
 * rank 1, the target, is computing and never calls the library?
 *
 * Rank 0 measures the bandwidth of
 *   get    blocking ARMCI_Get
 *   put    blocking ARMCI_Put, one ARMCI_Fence at the end of each sample
 *   nbget  windows of W (16) ARMCI_NbGet, then ARMCI_Wait on each
 *   nbput  windows of W ARMCI_NbPut, then ARMCI_Wait on each, one
 *          ARMCI_Fence at the end of each sample
 * of 64 KiB .. 4 MiB between its ARMCI_Malloc_local buffer and rank 1's
 * ARMCI_Malloc region, twice: with rank 1 idle in ARMCI_Barrier, and with
 * rank 1 busy in a compute loop without library calls that ends when rank 0
 * stores a stop flag into rank 1's memory (ARMCI_Put + ARMCI_Fence). It
 * prints both bandwidths and busy/idle, and how fast rank 1 computed while
 * it was the target, relative to a pass in which rank 0 did nothing.
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/target_busy
 *   ARMCI-MPI: mpicc -O2 benchmarks/target_busy.c benchmarks/harness*.c -larmci-openmpi -lm
 * See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "bench_compute.h"

#define PAGE 4096
#define STATS_BYTES (64 * 1024)
#define MAX_SIZES 16
#define MAX_WINDOW 256
#define ORIGIN 0
#define TARGET 1
#define CHUNK_UNITS 64 /* kernel units between two looks at the flag */

enum op { OP_GET, OP_PUT, OP_NBGET, OP_NBPUT, NOPS };
static const char *op_names[NOPS] = {"get", "put", "nbget", "nbput"};
enum mode { IDLE, BUSY, NMODES };

struct config {
  long sizes[MAX_SIZES];
  int nsizes;
  int reps;
  int warmup;
  double sample_s;
  int window;
  double timeout_s;
  const char *csv_path;
};

struct bench {
  struct config cfg;
  long iters[NOPS][MAX_SIZES];                   /* per sample, from the idle calibration */
  double sec[NMODES][NOPS][MAX_SIZES][BENCH_MAX_REPS]; /* rank 0: seconds per operation */
  double rate[NOPS][MAX_SIZES][BENCH_MAX_REPS];        /* rank 1: kernel units/us while busy */
  double ref_rate[BENCH_MAX_REPS];                     /* rank 1: the same with no transfers */
  void **bases;
  unsigned char *remote, *mine, *local;
  void *remote_flag;
  volatile long *my_flag;
  double *my_stats;   /* rank 1's medians, for rank 0 to fetch */
  void *remote_stats; /* the same, as rank 0 addresses it */
  armci_hdl_t handles[MAX_WINDOW];
  unsigned seed;
  long seq;
  double timed_wall[NMODES], timed_cpu[NMODES]; /* rank 0, over the timed parts */
};

/* Runs `iters` operations (whole windows for the nb ops) and returns the
 * elapsed seconds; *done gets the operations run, fewer than `iters` when
 * they took more than `max_seconds` (a busy target far slower than the idle
 * one the count was calibrated with). */
static double run_ops(struct bench *b, enum op op, int bytes, long iters, double max_seconds,
                      long *done) {
  const int w = b->cfg.window;
  double t0 = now();
  long i = 0;
  switch (op) {
  case OP_GET:
    for (i = 0; i < iters; i++) {
      if ((i & 7) == 7 && now() - t0 > max_seconds)
        break;
      BENCH_CHECK(ARMCI_Get(b->remote, b->local, bytes, TARGET), "ARMCI_Get of %d bytes", bytes);
    }
    break;
  case OP_PUT:
    for (i = 0; i < iters; i++) {
      if ((i & 7) == 7 && now() - t0 > max_seconds)
        break;
      BENCH_CHECK(ARMCI_Put(b->local, b->remote, bytes, TARGET), "ARMCI_Put of %d bytes", bytes);
    }
    ARMCI_Fence(TARGET);
    break;
  case OP_NBGET:
  case OP_NBPUT:
    for (i = 0; i < iters; i += w) {
      if (i > 0 && now() - t0 > max_seconds)
        break;
      if (op == OP_NBGET)
        bench_nb_window(ARMCI_NbGet, "ARMCI_NbGet", b->remote, b->local, bytes, TARGET, b->handles, w);
      else
        bench_nb_window(ARMCI_NbPut, "ARMCI_NbPut", b->local, b->remote, bytes, TARGET, b->handles, w);
    }
    if (op == OP_NBPUT)
      ARMCI_Fence(TARGET);
    break;
  default:
    break;
  }
  *done = i;
  return now() - t0;
}

struct ops_ctx {
  struct bench *b;
  enum op op;
  int bytes;
};

static double run_ops_unbounded(void *ctx, long n) {
  struct ops_ctx *c = ctx;
  long done;
  return run_ops(c->b, c->op, c->bytes, n, 1e9, &done);
}

/* Operations per sample of about -m ms (a multiple of the window for the nb
 * ops), from a doubling probe with the target idle. */
static long calibrate(struct bench *b, enum op op, int bytes) {
  const long step = (op == OP_NBGET || op == OP_NBPUT) ? b->cfg.window : 1;
  struct ops_ctx ctx = {b, op, bytes};
  const struct bench_calibration cal = {b->cfg.sample_s, 0.25, 0, 1, step, 1L << 30};
  run_ops_unbounded(&ctx, step); /* first touch, connection set-up */
  return bench_calibrate(&cal, run_ops_unbounded, &ctx);
}

/* Rank 1's side of a busy phase: compute until rank 0's flag arrives. */
static double target_busy_loop(struct bench *b, long seq, const char *what) {
  struct spin_result s = spin_until_flag(b->my_flag, seq, CHUNK_UNITS, b->cfg.timeout_s);
  if (s.timed_out)
    die("rank 1 computed %.1f s without library calls and rank 0's stop flag (%s) never "
        "arrived: this library needs the target to call it to complete the origin's operations",
        s.seconds, what);
  return s.seconds > 0 ? (double)s.units / (s.seconds * 1e6) : 0;
}

/* One (op, size, mode) of one pass; collective. Pass 0 calibrates (idle) and
 * warms the busy path. */
static void run_phase(struct bench *b, enum op op, int si, enum mode mode, int pass) {
  const int bytes = (int)b->cfg.sizes[si];
  const size_t n = (size_t)bytes;
  const unsigned seed = ++b->seed;
  const long seq = ++b->seq;
  const int is_get = op == OP_GET || op == OP_NBGET;
  char what[64];
  snprintf(what, sizeof what, "%s %d bytes, target %s", op_names[op], bytes,
           mode == BUSY ? "busy" : "idle");

  if (me == ORIGIN) {
    fill_pattern(b->local, n, seed, is_get);
  } else if (me == TARGET) {
    access_begin(b->bases[me]);
    fill_pattern(b->mine, n, seed, !is_get);
    access_end(b->bases[me]);
  }
  ARMCI_Barrier();

  if (me == ORIGIN) {
    const double w0 = now(), c0 = thread_cpu_now();
    double t;
    long iters, done = 1;
    if (pass == 0 && mode == IDLE) {
      iters = b->iters[op][si] = calibrate(b, op, bytes);
      t = 0;
    } else {
      iters = pass == 0 ? (op == OP_NBGET || op == OP_NBPUT ? b->cfg.window : 1) : b->iters[op][si];
      t = run_ops(b, op, bytes, iters, 8 * b->cfg.sample_s, &done);
    }
    if (pass > 0) {
      b->sec[mode][op][si][pass - 1] = t / (double)done;
      b->timed_wall[mode] += now() - w0;
      b->timed_cpu[mode] += thread_cpu_now() - c0;
    }
    if (mode == BUSY)
      set_remote_flag(seq, b->remote_flag, TARGET);
  } else if (me == TARGET && mode == BUSY) {
    double rate = target_busy_loop(b, seq, what);
    if (pass > 0)
      b->rate[op][si][pass - 1] = rate;
  }
  ARMCI_Barrier();

  if (me == ORIGIN && is_get) {
    long bad = find_pattern_mismatch(b->local, n, seed);
    if (bad >= 0)
      die("%s: wrong data at byte %ld of the local buffer", what, bad);
  } else if (me == TARGET && !is_get) {
    access_begin(b->bases[me]);
    long bad = find_pattern_mismatch(b->mine, n, seed);
    access_end(b->bases[me]);
    if (bad >= 0)
      die("%s: wrong data at byte %ld of the target region", what, bad);
  }
}

/* Rank 1 computes for about `seconds` while rank 0 only waits (no
 * transfers): the target's compute rate to compare the busy phases with. */
static void reference_phase(struct bench *b, double seconds, int pass) {
  const long seq = ++b->seq;
  ARMCI_Barrier();
  if (me == ORIGIN) {
    struct timespec ts = {0, (long)(seconds * 1e9)};
    nanosleep(&ts, NULL);
    set_remote_flag(seq, b->remote_flag, TARGET);
  } else if (me == TARGET) {
    double rate = target_busy_loop(b, seq, "reference phase");
    if (pass > 0)
      b->ref_rate[pass - 1] = rate;
  }
  ARMCI_Barrier();
}

/* Each pass takes one sample of every (op, size, mode); idle and busy of
 * one cell run back to back, in an order that alternates between passes,
 * so both see the same machine. */
static void one_pass(void *ctx, int pass) {
  struct bench *b = ctx;
  reference_phase(b, b->cfg.sample_s, pass);
  for (int si = 0; si < b->cfg.nsizes; si++)
    for (int op = 0; op < NOPS; op++)
      for (int k = 0; k < NMODES; k++) {
        enum mode mode = pass == 0 ? (enum mode)k : (enum mode)((k + pass) % NMODES);
        run_phase(b, (enum op)op, si, mode, pass);
      }
}

static const struct bench_col columns[] = {
    {NULL, "path", COL_STR, 0, 0, 0},
    {"op", "op", COL_STR, -6, 0, 0},
    {"bytes", "bytes", COL_LONG, 9, 0, 0},
    {"window", "window", COL_LONG, 6, 0, 0},
    {"idle_MB/s", "idle_MBps", COL_DOUBLE, 11, 1, 2},
    {"busy_MB/s", "busy_MBps", COL_DOUBLE, 11, 1, 2},
    {"busy/idle", "busy_over_idle", COL_DOUBLE, 10, 3, 4},
    {"target_compute", "target_compute", COL_DOUBLE, 15, 3, 4},
};
static const struct bench_table table = BENCH_TABLE(columns);

/* -------------------------------------------------------------- options */

static const char about[] =
    "Bandwidth of get/put from rank 0 with rank 1 idle in ARMCI_Barrier and busy in a\n"
    "compute loop without library calls; see benchmarks/README.md.";

static void parse_args(int *argc, char ***argv, struct config *c) {
  *c = (struct config){.reps = 7, .sample_s = 0.010, .window = 16, .timeout_s = 60};
  for (long s = 64L << 10; s <= 4L << 20; s *= 2)
    c->sizes[c->nsizes++] = s;
  const struct bench_opt opts[] = {
      BENCH_OPT_SIZES('s', c->sizes, &c->nsizes, 1, 1L << 30),
      BENCH_OPT_REPS('r', &c->reps, NULL),
      BENCH_OPT_WARMUP(&c->warmup),
      BENCH_OPT_SAMPLE_MS('m', &c->sample_s, NULL),
      {'w', "window", OPT_INT, &c->window, 1, MAX_WINDOW, "N", "nonblocking operations in flight", NULL, NULL,
       0, NULL},
      BENCH_OPT_TIMEOUT('T', &c->timeout_s),
      BENCH_OPT_CSV('c', &c->csv_path),
      BENCH_OPT_END};
  bench_begin(argc, argv, "target_busy", opts, about, 2);
}

int main(int argc, char **argv) {
  static struct bench bench;
  struct bench *b = &bench;
  parse_args(&argc, &argv, &b->cfg);
  const struct config *cfg = &b->cfg;
  const long max_size = bench_largest(cfg->sizes, cfg->nsizes);

  /* Each rank's region: the flag page, rank 1's results, then the data. */
  b->bases = bench_malloc_all((size_t)PAGE + STATS_BYTES + (size_t)max_size, 1);
  b->remote_flag = b->bases[TARGET];
  b->remote_stats = (char *)b->bases[TARGET] + PAGE;
  b->remote = (unsigned char *)b->bases[TARGET] + PAGE + STATS_BYTES;
  b->my_flag = (volatile long *)b->bases[me];
  b->my_stats = (double *)((char *)b->bases[me] + PAGE);
  b->mine = (unsigned char *)b->bases[me] + PAGE + STATS_BYTES;
  kernel_init();
  if (me == ORIGIN) {
    b->local = bench_malloc_local((size_t)max_size);
    memset(b->local, 0, (size_t)max_size);
  }

  struct bench_run run;
  bench_report_open(&run, cfg->csv_path, &table, cfg->reps, "path=%s binding=%s reps=%d sample_ms=%.1f window=%d",
                    transfer_path(), bench_binding(), cfg->reps, cfg->sample_s * 1e3, cfg->window);
  bench_passes(cfg->reps, cfg->warmup, one_pass, b);

  /* Rank 1's medians go to rank 0 through rank 1's memory. */
  const int ncells = NOPS * cfg->nsizes;
  if (me == TARGET) {
    access_begin(b->bases[me]);
    for (int op = 0; op < NOPS; op++)
      for (int si = 0; si < cfg->nsizes; si++)
        b->my_stats[op * cfg->nsizes + si] = bench_median(b->rate[op][si], cfg->reps);
    b->my_stats[ncells] = bench_median(b->ref_rate, cfg->reps);
    access_end(b->bases[me]);
  }
  ARMCI_Barrier();
  if (me == ORIGIN) {
    double stats[NOPS * MAX_SIZES + 1];
    BENCH_CHECK(ARMCI_Get(b->remote_stats, stats, (int)sizeof(double) * (ncells + 1), TARGET),
                "ARMCI_Get of rank 1's results");
    const double ref = stats[ncells];
    char timing[96];
    snprintf(timing, sizeof timing, ", while timing: %.2f (target idle), %.2f (target busy)",
             b->timed_wall[IDLE] > 0 ? b->timed_cpu[IDLE] / b->timed_wall[IDLE] : 0.0,
             b->timed_wall[BUSY] > 0 ? b->timed_cpu[BUSY] / b->timed_wall[BUSY] : 0.0);
    bench_report_table(&run, timing, &table,
                       "# medians of %d samples; MB/s = 1e6 B/s; target_compute = rank 1's compute rate\n"
                       "# while busy as the target, over its rate with no transfers (%.1f units/us)\n\n",
                       cfg->reps, ref);
    for (int op = 0; op < NOPS; op++)
      for (int si = 0; si < cfg->nsizes; si++) {
        const double bytes = (double)cfg->sizes[si];
        const double idle = bytes / bench_median(b->sec[IDLE][op][si], cfg->reps) * 1e-6;
        const double busy = bytes / bench_median(b->sec[BUSY][op][si], cfg->reps) * 1e-6;
        const double trate = ref > 0 ? stats[op * cfg->nsizes + si] / ref : 0;
        bench_row(&table, transfer_path(), op_names[op], cfg->sizes[si],
                  (long)((op == OP_NBGET || op == OP_NBPUT) ? cfg->window : 1), idle, busy, busy / idle, trate);
      }
    bench_csv_finish();
    fflush(stdout);
    ARMCI_Free_local(b->local);
  }
  ARMCI_Barrier();
  if (me == TARGET && kernel_checksum() == 0)
    printf("# kernel checksum 0\n"); /* keeps the kernel's work observable */
  bench_free_all(b->bases);
  bench_end();
  return 0;
}
