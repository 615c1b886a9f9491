/*
 * ga_bench: the data movement of Global Arrays' own benchmark (GA's
 * global/testing/perf2.c) through the ARMCI calls GA makes for it, under
 * the cache state perf2 leaves, next to the limit: the same pattern copied
 * (or scaled and added) by the CPU within one process.
 *
 * What perf2 does, and therefore this program:
 *   - every process owns a 640 x 640 block of doubles (GA_Create of
 *     640 x 640 per process, ARMCI_Malloc underneath); rank 0 works on rank
 *     1's block, the others wait;
 *   - a 2-D patch of c x c doubles is one ARMCI_NbGetS + ARMCI_Wait (GA's
 *     blocking get is its nonblocking get and a wait), ARMCI_PutS or
 *     ARMCI_AccS(ARMCI_ACC_DBL, alpha 1.0), one stride level: rows of 8c bytes,
 *     5,120 bytes apart remotely, 8c bytes apart in the local buffer;
 *     "contiguous" is the same calls with zero stride levels and c*c doubles;
 *   - `loop` = max(2, floor(sqrt(640*640 / (c*c)))) operations are timed
 *     together, alternating between the patch at (0,0) and the one 128
 *     elements further in each dimension (the local buffer moves by 128
 *     doubles too);
 *   - before each kind of operation rank 0 rewrites its whole 3.2 MB local
 *     buffer (fill_array), so the local side is warm and the remote block
 *     has left rank 0's L2 cache.
 * perf2 times each cell once; this program repeats every cell --reps times
 * (rank 0 refills its buffer before each) and reports the median.
 *
 * The limit rows (memcpy_*, scale_add) run the same pattern between the
 * local buffer and a second 3.2 MB block of rank 0 that receives the same
 * treatment as the remote one, with glibc's memcpy per row or a plain
 * vectorised y += a*x loop.
 *
 * One source, two builds (benchmarks/compare_ga.sh): libarmci and ARMCI-MPI.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#define SIZE 640 /* perf2's block edge, in doubles */
#define SHIFT 128 /* perf2's step between the two places */
#define NCHUNK 28
#define ORIGIN 0
#define TARGET 1
#define MAX_SAMPLES BENCH_MAX_REPS

static const int chunks[NCHUNK] = {1,   3,   4,   6,   9,   12,  16,  20,  24,  30,  40,  48,  52,  64,
                                   78,  91,  104, 128, 142, 171, 210, 256, 300, 353, 400, 440, 476, 512};

enum op { OP_GET, OP_PUT, OP_ACC, OP_MEMCPY_GET, OP_MEMCPY_PUT, OP_SCALE_ADD, NOPS };
static const char *const op_names[NOPS] = {"get", "put", "acc", "memcpy_get", "memcpy_put", "scale_add"};
/* The limit of each library operation. */
static const enum op limit_of[3] = {OP_MEMCPY_GET, OP_MEMCPY_PUT, OP_SCALE_ADD};

struct config {
  int reps;
  int warmup;
  long min_bytes;
  const char *csv_path;
};

struct bench {
  struct config cfg;
  void **bases[2]; /* one allocation per shape, as perf2 creates one array for each */
  double *remote[2]; /* rank 1's blocks */
  double *local;  /* rank 0's buffer (ARMCI_Malloc_local, as perf2's MALLOC_LOC) */
  double *shadow; /* rank 0's stand-in for the remote block, for the limit rows */
  double sec[2][NCHUNK][NOPS][MAX_SAMPLES];
  double first[2][NCHUNK][NOPS]; /* pass 0: as perf2 measures, once, on pages rank 0 first touches */
};

/* Calls, not builtins: the compiler must not fold copies nobody reads. */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;

/* Its loop starts on a 64-byte boundary, as the library's Acc kernels do:
 * on AMD Zen a short loop straddling two 64-byte lines runs at half speed,
 * and the limit must not move with where the linker puts it. */
__attribute__((optimize("O3", "align-loops=64"), noinline)) static void
scale_add(double *restrict y, const double *restrict x, double a, long n) {
  for (long i = 0; i < n; i++)
    y[i] += a * x[i];
}

/* perf2's fill_array: the whole local buffer, before each kind of operation. */
__attribute__((noinline)) static void fill_array(double *arr, long count, int which) {
  for (long i = 0; i < count; i++)
    arr[i] = (double)i * 8.23 + which * 2.89;
}

static int loop_of(int c) {
  int loop = (int)sqrt((double)(SIZE * SIZE) / ((double)c * c));
  return loop < 2 ? 2 : loop;
}

/* Times `loop` operations of kind `op` on c x c patches (2-D) or c*c doubles
 * (contiguous), as perf2's time_op; returns seconds per operation. */
static double time_op(struct bench *b, int two_d, int c, enum op op) {
  const int loop = loop_of(c);
  double alpha = 1.0;
  int count[2], stride_rem[1], stride_loc[1];
  int levels;
  long rem_step, loc_step = SHIFT;
  if (two_d) {
    count[0] = c * (int)sizeof(double);
    count[1] = c;
    stride_rem[0] = SIZE * (int)sizeof(double);
    stride_loc[0] = c * (int)sizeof(double);
    levels = 1;
    rem_step = (long)SHIFT * SIZE + SHIFT;
  } else {
    count[0] = c * c * (int)sizeof(double);
    count[1] = 1;
    stride_rem[0] = stride_loc[0] = count[0];
    levels = 0;
    rem_step = SHIFT;
  }
  double *rem = op >= OP_MEMCPY_GET ? b->shadow : b->remote[two_d], *loc = b->local;
  const size_t row = (size_t)count[0];
  const int rows = count[1];
  armci_hdl_t h;
  const double t0 = now();
  for (int i = 0; i < loop; i++) {
    const long ro = (i & 1) ? rem_step : 0, lo = (i & 1) ? loc_step : 0;
    char *r = (char *)(rem + ro), *l = (char *)(loc + lo);
    switch (op) {
    case OP_GET:
      ARMCI_INIT_HANDLE(&h);
      BENCH_CHECK(ARMCI_NbGetS(r, stride_rem, l, stride_loc, count, levels, TARGET, &h),
                  "ARMCI_NbGetS of %d x %d bytes", rows, (int)row);
      BENCH_CHECK(ARMCI_Wait(&h), "ARMCI_Wait after ARMCI_NbGetS");
      break;
    case OP_PUT:
      BENCH_CHECK(ARMCI_PutS(l, stride_loc, r, stride_rem, count, levels, TARGET),
                  "ARMCI_PutS of %d x %d bytes", rows, (int)row);
      break;
    case OP_ACC:
      BENCH_CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &alpha, l, stride_loc, r, stride_rem, count, levels, TARGET),
                  "ARMCI_AccS of %d x %d bytes", rows, (int)row);
      break;
    case OP_MEMCPY_GET:
      for (int k = 0; k < rows; k++)
        memcpy_fn(l + (size_t)k * (size_t)stride_loc[0], r + (size_t)k * (size_t)stride_rem[0], row);
      break;
    case OP_MEMCPY_PUT:
      for (int k = 0; k < rows; k++)
        memcpy_fn(r + (size_t)k * (size_t)stride_rem[0], l + (size_t)k * (size_t)stride_loc[0], row);
      break;
    case OP_SCALE_ADD:
      for (int k = 0; k < rows; k++)
        scale_add((double *)(r + (size_t)k * (size_t)stride_rem[0]),
                  (const double *)(l + (size_t)k * (size_t)stride_loc[0]), alpha, (long)(row / sizeof(double)));
      break;
    default:
      die("time_op: op %d", (int)op);
    }
  }
  return (now() - t0) / loop;
}

/* Before timing: a patch read through the library must hold what rank 1
 * wrote, so that a get that moves nothing cannot look fast. */
static void check_get(struct bench *b, int two_d, int c) {
  const int ld = two_d ? c : c * c, rows = two_d ? c : 1;
  time_op(b, two_d, c, OP_GET); /* the last of its 2 or more gets is at (0,0) when loop is even */
  const int loop = loop_of(c);
  const long ro = (loop - 1) & 1 ? (two_d ? (long)SHIFT * SIZE + SHIFT : SHIFT) : 0;
  const long lo = (loop - 1) & 1 ? SHIFT : 0;
  for (int k = 0; k < rows; k++)
    for (int j = 0; j < ld; j++) {
      const long at = ro + (long)k * SIZE + j;
      const double want = (double)(at % 100003);
      const double got = b->local[lo + (long)k * ld + j];
      if (got != want)
        die("%s get of %d x %d doubles: element (%d,%d) is %g, rank %d wrote %g", two_d ? "2-D" : "contiguous",
            rows, ld, k, j, got, TARGET, want);
    }
}

/* Rank 1's block: element i holds i % 100003 (what check_get expects). */
static void write_target(struct bench *b) {
  if (me == TARGET)
    for (int two_d = 0; two_d < 2; two_d++) {
      double *mine = b->bases[two_d][me];
      access_begin(mine);
      for (long i = 0; i < (long)SIZE * SIZE; i++)
        mine[i] = (double)(i % 100003);
      access_end(mine);
    }
  ARMCI_Barrier();
}

static void one_pass(void *ctx, int pass) {
  struct bench *b = ctx;
  if (me == ORIGIN) {
    for (int two_d = 0; two_d < 2; two_d++)
      for (int ci = 0; ci < NCHUNK; ci++) {
        const int c = chunks[ci];
        if ((long)c * c * (long)sizeof(double) < b->cfg.min_bytes)
          continue;
        /* perf2's order per size: get, put, acc; each limit row right
         * before the operation it bounds, after its own refill. */
        for (int k = 0; k < 3; k++) {
          const enum op ops[2] = {limit_of[k], (enum op)k};
          for (int o = 0; o < 2; o++) {
            fill_array(b->local, (long)SIZE * SIZE, me * 10);
            const double s = time_op(b, two_d, c, ops[o]);
            if (pass > 0)
              b->sec[two_d][ci][ops[o]][pass - 1] = s;
            else
              b->first[two_d][ci][ops[o]] = s;
          }
        }
      }
  }
  ARMCI_Barrier();
}

static const struct bench_col columns[] = {
    {NULL, "op", COL_STR, 0, 0, 0},
    {"shape", "shape", COL_STR, -6, 0, 0},
    {"bytes", "size", COL_LONG, 8, 0, 0},
    {"chunk", "chunk", COL_LONG, 6, 0, 0},
    {"loop", "loop", COL_LONG, 5, 0, 0},
    {"us", "lat_us_median", COL_DOUBLE, 10, 3, 4},
    {"MB/s", "bw_MBps_median", COL_DOUBLE, 9, 0, 2},
    {"limit_us", "limit_us_median", COL_DOUBLE, 10, 3, 4},
    {"limit_MB/s", "limit_MBps_median", COL_DOUBLE, 11, 0, 2},
    {"of_limit", "ratio_to_limit", COL_DOUBLE, 9, 3, 4},
    {"first_us", "first_us", COL_DOUBLE, 10, 3, 4},
    {NULL, "lat_us_q1", COL_DOUBLE, 0, 0, 4},
    {NULL, "lat_us_q3", COL_DOUBLE, 0, 0, 4},
};
static const struct bench_table table = BENCH_TABLE(columns);

static void print_results(const struct bench *b) {
  for (int two_d = 0; two_d < 2; two_d++)
    for (int k = 0; k < 3; k++) {
      printf("\n== %s %s (limit: %s)\n", two_d ? "2-D" : "contiguous", op_names[k], op_names[limit_of[k]]);
      bench_table_header(&table);
      for (int ci = 0; ci < NCHUNK; ci++) {
        const int c = chunks[ci];
        const long bytes = (long)c * c * (long)sizeof(double);
        if (bytes < b->cfg.min_bytes)
          continue;
        const struct bench_stats t = bench_stats(b->sec[two_d][ci][k], b->cfg.reps);
        const struct bench_stats l = bench_stats(b->sec[two_d][ci][limit_of[k]], b->cfg.reps);
        bench_row(&table, op_names[k], two_d ? "2d" : "contig", bytes, (long)c, (long)loop_of(c), t.median * 1e6,
                  (double)bytes / t.median * 1e-6, l.median * 1e6, (double)bytes / l.median * 1e-6,
                  l.median / t.median, b->first[two_d][ci][k] * 1e6, t.q1 * 1e6, t.q3 * 1e6);
      }
    }
}

int main(int argc, char **argv) {
  static struct bench bench;
  struct bench *b = &bench;
  b->cfg = (struct config){.reps = 11, .warmup = 1, .min_bytes = 0, .csv_path = NULL};
  const struct bench_opt opts[] = {
      BENCH_OPT_REPS('r', &b->cfg.reps, NULL),
      BENCH_OPT_WARMUP(&b->cfg.warmup),
      {'m', "min-size", OPT_BYTES, &b->cfg.min_bytes, 0, 1L << 22, "BYTES", "leave out patches smaller than this",
       NULL, NULL, 0, NULL},
      BENCH_OPT_CSV('c', &b->cfg.csv_path),
      BENCH_OPT_END};
  bench_begin(&argc, &argv, "ga_bench", opts,
              "GA's perf2 patterns (contiguous and 2-D get/put/acc of doubles, 8 B to 2 MiB)\n"
              "through ARMCI_NbGetS+Wait, ARMCI_PutS and ARMCI_AccS, with perf2's cold remote\n"
              "block and warm local buffer, next to memcpy / scale-and-add of the same pattern.",
              2);

  /* Rank 1 leaves its blocks unwritten, as GA_Create leaves perf2's arrays:
   * the first pass then also pays for the pages the operations are the
   * first to touch. */
  const size_t block = (size_t)SIZE * SIZE * sizeof(double);
  for (int two_d = 0; two_d < 2; two_d++) {
    b->bases[two_d] = bench_malloc_all(block, 0);
    b->remote[two_d] = b->bases[two_d][TARGET];
  }
  ARMCI_Barrier();
  if (me == ORIGIN) {
    b->local = bench_malloc_local(block);
    b->shadow = bench_malloc_local(block);
    for (long i = 0; i < (long)SIZE * SIZE; i++)
      b->shadow[i] = (double)(i % 100003);
  }

  struct bench_run run;
  bench_report_open(&run, b->cfg.csv_path, &table, b->cfg.reps,
                    "nproc=%d binding=%s reps=%d; page offsets: remote %lu, local %lu, shadow %lu", armci_msg_nproc(),
                    bench_binding(), b->cfg.reps, (unsigned long)((uintptr_t)b->remote[1] & 4095),
                    (unsigned long)((uintptr_t)b->local & 4095), (unsigned long)((uintptr_t)b->shadow & 4095));
  bench_passes(b->cfg.reps, b->cfg.warmup, one_pass, b);
  /* The data check after the timing, so that the first pass touches the
   * remote pages for the first time, as perf2 does; the puts and Accs have
   * changed the block since, so rank 1 writes it again. */
  write_target(b);
  if (me == ORIGIN) {
    for (int two_d = 0; two_d < 2; two_d++)
      for (int ci = 0; ci < NCHUNK; ci++)
        check_get(b, two_d, chunks[ci]);
    bench_report_table(&run, NULL, NULL,
                       "# us: median time per operation over %d samples of `loop` operations each (perf2's\n"
                       "# time_op); of_limit: limit time / our time (1: at the limit); first_us: the first\n"
                       "# sample (pass 0), on remote pages rank 0 had not touched, as perf2 measures\n",
                       b->cfg.reps);
    print_results(b);
    bench_csv_finish();
    ARMCI_Free_local(b->local);
    ARMCI_Free_local(b->shadow);
  }
  ARMCI_Barrier();
  for (int two_d = 0; two_d < 2; two_d++)
    bench_free_all(b->bases[two_d]);
  bench_end();
  return 0;
}
