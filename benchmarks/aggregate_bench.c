/*
 * aggregate_bench: N small (8-byte) puts or gets between rank 0 and N
 * distinct addresses in rank 1's ARMCI_Malloc region, issued three ways:
 *   agg  one handle: ARMCI_INIT_HANDLE, ARMCI_SET_AGGREGATE_HANDLE, N x
 *        ARMCI_NbPut (NbGet) on it, ARMCI_Wait, ARMCI_UNSET_AGGREGATE_HANDLE
 *   nb   N handles: N x ARMCI_NbPut (NbGet), then ARMCI_Wait on each
 *   blk  N x blocking ARMCI_Put (ARMCI_Get)
 * Puts end with ARMCI_Fence inside the timing, so every way has delivered its
 * data when the clock stops. Reported: the median time per batch of N and
 * per operation, and the ratio to blk (below 1: faster than blocking).
 *
 * Every batch carries values of its own; afterwards the side that received
 * them checks every slot and the gaps between slots, and a mismatch ends the
 * run with an error.
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/aggregate_bench
 *   ARMCI-MPI: mpicc -O2 benchmarks/aggregate_bench.c benchmarks/harness*.c -larmci-openmpi -lm
 * See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#define ORIGIN 0
#define TARGET 1
#define GAP_WORD 0x6A6A6A6A6A6A6A6AULL

enum op { OP_PUT, OP_GET, NOPS };
static const char *const op_names[NOPS + 1] = {"put", "get", NULL};
enum method { M_AGG, M_NB, M_BLK, NMETHODS };
static const char *method_names[NMETHODS] = {"agg", "nb", "blk"};
static const char *method_what[NOPS][NMETHODS] = {
    {"one aggregate handle: N NbPut, Wait, Fence", "N handles: N NbPut, N Wait, Fence",
     "N blocking Put, Fence"},
    {"one aggregate handle: N NbGet, Wait", "N handles: N NbGet, N Wait", "N blocking Get"}};

struct config {
  long n;
  long stride;
  int reps;
  int warmup;
  int ops; /* bit 1 << op */
  const char *csv_path;
};

struct bench {
  struct config cfg;
  double sec[NOPS][NMETHODS][BENCH_MAX_REPS];
  void **bases;
  unsigned char *remote, *mine, *local;
  armci_hdl_t *handles;
  unsigned seed;
};

/* The value of slot i in the batch with this seed: distinct per slot and per
 * batch. */
static uint64_t slot_value(long i, unsigned seed) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)seed << 32 | seed);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return x == GAP_WORD ? x + 1 : x;
}

/* Slots with the values (or their complement), every other word of a stride
 * set to the gap marker. */
static void fill_slots(unsigned char *base, long n, long stride, unsigned seed, int inverted) {
  for (long i = 0; i < n; i++) {
    uint64_t *p = (uint64_t *)(base + i * stride);
    p[0] = inverted ? ~slot_value(i, seed) : slot_value(i, seed);
    for (long w = 1; w < stride / 8; w++)
      p[w] = GAP_WORD;
  }
}

static void check_slots(const unsigned char *base, long n, long stride, unsigned seed,
                        const char *what) {
  for (long i = 0; i < n; i++) {
    const uint64_t *p = (const uint64_t *)(base + i * stride);
    if (p[0] != slot_value(i, seed))
      die("%s: slot %ld holds 0x%016llx, expected 0x%016llx", what, i, (unsigned long long)p[0],
          (unsigned long long)slot_value(i, seed));
    for (long w = 1; w < stride / 8; w++)
      if (p[w] != GAP_WORD)
        die("%s: the gap after slot %ld (word %ld) was overwritten", what, i, w);
  }
}

/* One batch; returns the elapsed seconds. Puts and gets differ only in the
 * calls and in which side is the source. */
static double batch(struct bench *b, enum op op, enum method m) {
  const long n = b->cfg.n, stride = b->cfg.stride;
  const int put = op == OP_PUT;
  int (*const nb)(void *, void *, int, int, armci_hdl_t *) = put ? ARMCI_NbPut : ARMCI_NbGet;
  int (*const blocking)(void *, void *, int, int) = put ? ARMCI_Put : ARMCI_Get;
  const char *const nb_name = put ? "ARMCI_NbPut" : "ARMCI_NbGet", *const name = put ? "ARMCI_Put" : "ARMCI_Get";
  unsigned char *const src = put ? b->local : b->remote, *const dst = put ? b->remote : b->local;
  armci_hdl_t h;
  double t0 = now();
  switch (m) {
  case M_AGG:
    ARMCI_INIT_HANDLE(&h);
    ARMCI_SET_AGGREGATE_HANDLE(&h);
    for (long i = 0; i < n; i++)
      BENCH_CHECK(nb(src + i * stride, dst + i * stride, 8, TARGET, &h), "%s (operation %ld of the batch)", nb_name,
                  i);
    BENCH_CHECK(ARMCI_Wait(&h), "ARMCI_Wait on the aggregate handle of %ld operations", n);
    ARMCI_UNSET_AGGREGATE_HANDLE(&h);
    break;
  case M_NB:
    for (long i = 0; i < n; i++) {
      ARMCI_INIT_HANDLE(&b->handles[i]);
      BENCH_CHECK(nb(src + i * stride, dst + i * stride, 8, TARGET, &b->handles[i]),
                  "%s (operation %ld of the batch)", nb_name, i);
    }
    for (long i = 0; i < n; i++)
      BENCH_CHECK(ARMCI_Wait(&b->handles[i]), "ARMCI_Wait (operation %ld of the batch)", i);
    break;
  default:
    for (long i = 0; i < n; i++)
      BENCH_CHECK(blocking(src + i * stride, dst + i * stride, 8, TARGET), "%s (operation %ld of the batch)", name, i);
    break;
  }
  if (put) ARMCI_Fence(TARGET);
  return now() - t0;
}

/* One batch of one way in one pass, set up and checked; collective. Pass 0
 * is a warm-up. */
static void run_phase(struct bench *b, enum op op, enum method m, int pass) {
  const long n = b->cfg.n, stride = b->cfg.stride;
  const unsigned seed = ++b->seed;
  char what[96];
  snprintf(what, sizeof what, "%s %s, %ld operations of 8 bytes", op_names[op], method_names[m],
           n);
  if (me == ORIGIN) {
    fill_slots(b->local, n, stride, seed, op == OP_GET);
  } else if (me == TARGET) {
    access_begin(b->bases[me]);
    fill_slots(b->mine, n, stride, seed, op == OP_PUT);
    access_end(b->bases[me]);
  }
  ARMCI_Barrier();
  if (me == ORIGIN) {
    double t = batch(b, op, m);
    if (pass > 0)
      b->sec[op][m][pass - 1] = t;
  }
  ARMCI_Barrier();
  if (me == ORIGIN && op == OP_GET) {
    check_slots(b->local, n, stride, seed, what);
  } else if (me == TARGET && op == OP_PUT) {
    access_begin(b->bases[me]);
    check_slots(b->mine, n, stride, seed, what);
    access_end(b->bases[me]);
  }
}

static void one_pass(void *ctx, int pass) {
  struct bench *b = ctx;
  /* Every way in every pass, the order rotating from pass to pass, so that
   * slow drifts of the machine's load spread over all three. */
  for (int op = 0; op < NOPS; op++)
    if (b->cfg.ops & (1 << op))
      for (int k = 0; k < NMETHODS; k++)
        run_phase(b, (enum op)op, (enum method)((k + pass) % NMETHODS), pass);
}

static const struct bench_col columns[] = {
    {NULL, "path", COL_STR, 0, 0, 0},
    {"op", "op", COL_STR, -4, 0, 0},
    {"way", "way", COL_STR, -4, 0, 0},
    {NULL, "n", COL_LONG, 0, 0, 0},
    {NULL, "stride", COL_LONG, 0, 0, 0},
    {"batch_us", "batch_us", COL_DOUBLE, 12, 1, 3},
    {"per_op_us", "per_op_us", COL_DOUBLE, 11, 4, 5},
    {"ratio", "ratio_to_blk", COL_DOUBLE, 9, 3, 4},
    {"what", NULL, COL_STR, -1, 0, 0},
};
static const struct bench_table table = BENCH_TABLE(columns);

static const char about[] =
    "N 8-byte puts or gets between rank 0 and N distinct addresses of rank 1's region:\n"
    "on one aggregate handle, on N handles, or blocking; see benchmarks/README.md.";

static void parse_args(int *argc, char ***argv, struct config *c) {
  *c = (struct config){.n = 1000, .stride = 16, .reps = 15, .ops = 1 << OP_PUT | 1 << OP_GET};
  const struct bench_opt opts[] = {
      {'n', "count", OPT_LONG, &c->n, 1, 10000000, "N", "operations per batch", NULL, NULL, 0, NULL},
      {'S', "stride", OPT_BYTES, &c->stride, 8, 1L << 20, "BYTES",
       "bytes from one 8-byte slot to the next, a multiple of 8\n(the gaps are checked to stay untouched)",
       NULL, NULL, 0, NULL},
      BENCH_OPT_REPS('r', &c->reps, NULL),
      BENCH_OPT_WARMUP(&c->warmup),
      {'o', "ops", OPT_SET, &c->ops, 0, 0, "LIST", "put, get or both", op_names, NULL, 0, NULL},
      BENCH_OPT_CSV('c', &c->csv_path),
      BENCH_OPT_END};
  bench_begin(argc, argv, "aggregate_bench", opts, about, 2);
  if (c->stride % 8 != 0 || c->n * c->stride > (1L << 31) - 1) {
    if (me == 0)
      fprintf(stderr, "aggregate_bench: -S must be a multiple of 8 and -n times -S below 2 GiB\n");
    bench_end();
    exit(2);
  }
}

int main(int argc, char **argv) {
  static struct bench bench;
  struct bench *b = &bench;
  parse_args(&argc, &argv, &b->cfg);
  const struct config *cfg = &b->cfg;
  const size_t span = (size_t)(cfg->n * cfg->stride);
  b->handles = calloc((size_t)cfg->n, sizeof *b->handles);
  if (!b->handles)
    die("out of memory");
  b->bases = bench_malloc_all(span, 0);
  b->remote = b->bases[TARGET];
  b->mine = b->bases[me];
  if (me == ORIGIN)
    b->local = bench_malloc_local(span);

  struct bench_run run;
  bench_report_open(&run, cfg->csv_path, &table, cfg->reps, "path=%s binding=%s n=%ld stride=%ld reps=%d",
                    transfer_path(), bench_binding(), cfg->n, cfg->stride, cfg->reps);
  bench_passes(cfg->reps, cfg->warmup, one_pass, b);

  if (me == ORIGIN) {
    bench_report_table(&run, NULL, &table,
                       "# medians of %d batches of %ld operations of 8 bytes, every batch checked;\n"
                       "# ratio = time / time of blk (below 1: faster than blocking)\n\n",
                       cfg->reps, cfg->n);
    for (int op = 0; op < NOPS; op++) {
      if (!(cfg->ops & (1 << op)))
        continue;
      const double blk = bench_median(b->sec[op][M_BLK], cfg->reps);
      for (int m = 0; m < NMETHODS; m++) {
        const double t = bench_median(b->sec[op][m], cfg->reps);
        bench_row(&table, transfer_path(), op_names[op], method_names[m], cfg->n, cfg->stride, t * 1e6,
                  t * 1e6 / (double)cfg->n, t / blk, method_what[op][m]);
      }
    }
    bench_csv_finish();
    ARMCI_Free_local(b->local);
  }
  ARMCI_Barrier();
  bench_free_all(b->bases);
  free(b->handles);
  bench_end();
  return 0;
}
