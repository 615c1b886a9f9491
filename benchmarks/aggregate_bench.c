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
 *   ARMCI-MPI: mpicc -O2 benchmarks/aggregate_bench.c -larmci-openmpi
 * See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "aggregate_bench"
#include "bench_common.h"
#include "bench_compute.h"

#define MAX_REPS 101
#define ORIGIN 0
#define TARGET 1
#define GAP_WORD 0x6A6A6A6A6A6A6A6AULL

enum op { OP_PUT, OP_GET, NOPS };
static const char *op_names[NOPS] = {"put", "get"};
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
  int ops[NOPS];
  const char *csv_path;
};

struct bench {
  struct config cfg;
  double sec[NOPS][NMETHODS][MAX_REPS];
  void **bases;
  unsigned char *remote, *mine, *local;
  armci_hdl_t *handles;
  unsigned seed;
};

static void check_rc(int rc, const char *call, long i) {
  if (rc != 0)
    die("%s (operation %ld of the batch) returned %d", call, i, rc);
}

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

/* One batch; returns the elapsed seconds. */
static double batch(struct bench *b, enum op op, enum method m) {
  const long n = b->cfg.n, stride = b->cfg.stride;
  unsigned char *const rem = b->remote, *const loc = b->local;
  armci_hdl_t h;
  double t0 = now();
  if (op == OP_PUT) {
    switch (m) {
    case M_AGG:
      ARMCI_INIT_HANDLE(&h);
      ARMCI_SET_AGGREGATE_HANDLE(&h);
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_NbPut(loc + i * stride, rem + i * stride, 8, TARGET, &h), "ARMCI_NbPut", i);
      check_rc(ARMCI_Wait(&h), "ARMCI_Wait (aggregate)", n);
      ARMCI_UNSET_AGGREGATE_HANDLE(&h);
      break;
    case M_NB:
      for (long i = 0; i < n; i++) {
        ARMCI_INIT_HANDLE(&b->handles[i]);
        check_rc(ARMCI_NbPut(loc + i * stride, rem + i * stride, 8, TARGET, &b->handles[i]),
                 "ARMCI_NbPut", i);
      }
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_Wait(&b->handles[i]), "ARMCI_Wait", i);
      break;
    default:
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_Put(loc + i * stride, rem + i * stride, 8, TARGET), "ARMCI_Put", i);
      break;
    }
    ARMCI_Fence(TARGET);
  } else {
    switch (m) {
    case M_AGG:
      ARMCI_INIT_HANDLE(&h);
      ARMCI_SET_AGGREGATE_HANDLE(&h);
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_NbGet(rem + i * stride, loc + i * stride, 8, TARGET, &h), "ARMCI_NbGet", i);
      check_rc(ARMCI_Wait(&h), "ARMCI_Wait (aggregate)", n);
      ARMCI_UNSET_AGGREGATE_HANDLE(&h);
      break;
    case M_NB:
      for (long i = 0; i < n; i++) {
        ARMCI_INIT_HANDLE(&b->handles[i]);
        check_rc(ARMCI_NbGet(rem + i * stride, loc + i * stride, 8, TARGET, &b->handles[i]),
                 "ARMCI_NbGet", i);
      }
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_Wait(&b->handles[i]), "ARMCI_Wait", i);
      break;
    default:
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_Get(rem + i * stride, loc + i * stride, 8, TARGET), "ARMCI_Get", i);
      break;
    }
  }
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

static double med(const double *v, int n) {
  double tmp[MAX_REPS];
  memcpy(tmp, v, sizeof(double) * (size_t)n);
  return median(tmp, n);
}

/* -------------------------------------------------------------- options */

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np 2 aggregate_bench [-n N] [-S STRIDE] [-r REPS] [-o put|get|both]\n"
          "                                    [-c FILE.csv]\n"
          "  -n N        operations per batch (default 1000)\n"
          "  -S STRIDE   bytes from one 8-byte slot to the next, a multiple of 8 (default 16:\n"
          "              8-byte gaps between the slots, checked to stay untouched)\n"
          "  -r REPS     batches per way, median reported (default 15, at most %d)\n"
          "  -o OPS      put, get or both (default both)\n"
          "  -c FILE     write the CSV there instead of after '# CSV' on stdout\n",
          MAX_REPS);
}

static int parse_args(int argc, char **argv, struct config *c) {
  c->n = 1000;
  c->stride = 16;
  c->reps = 15;
  c->ops[OP_PUT] = c->ops[OP_GET] = 1;
  c->csv_path = NULL;
  int opt;
  opterr = 0;
  while ((opt = getopt(argc, argv, "n:S:r:o:c:h")) != -1) {
    switch (opt) {
    case 'n':
      c->n = atol(optarg);
      if (c->n < 1 || c->n > 10000000)
        goto bad;
      break;
    case 'S':
      c->stride = parse_bytes(optarg);
      if (c->stride < 8 || c->stride % 8 != 0 || c->stride > (1L << 20))
        goto bad;
      break;
    case 'r':
      c->reps = atoi(optarg);
      if (c->reps < 1 || c->reps > MAX_REPS)
        goto bad;
      break;
    case 'o':
      if (!strcmp(optarg, "put"))
        c->ops[OP_PUT] = 1, c->ops[OP_GET] = 0;
      else if (!strcmp(optarg, "get"))
        c->ops[OP_PUT] = 0, c->ops[OP_GET] = 1;
      else if (!strcmp(optarg, "both"))
        c->ops[OP_PUT] = c->ops[OP_GET] = 1;
      else
        goto bad;
      break;
    case 'c':
      c->csv_path = optarg;
      break;
    case 'h':
      if (me == 0)
        usage(stdout);
      return 1;
    default:
      if (me == 0) {
        fprintf(stderr, "aggregate_bench: unknown option or missing value '-%c'\n", optopt);
        usage(stderr);
      }
      return 2;
    }
    continue;
  bad:
    if (me == 0) {
      fprintf(stderr, "aggregate_bench: bad value '%s' for -%c\n", optarg, opt);
      usage(stderr);
    }
    return 2;
  }
  if (optind < argc) {
    if (me == 0)
      fprintf(stderr, "aggregate_bench: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (c->n * c->stride > (1L << 31) - 1) {
    if (me == 0)
      fprintf(stderr, "aggregate_bench: -n times -S must stay below 2 GiB\n");
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv);
  const int nproc = armci_msg_nproc();
  static struct bench bench;
  struct bench *b = &bench;
  int code = parse_args(argc, argv, &b->cfg);
  if (code == 0 && nproc < 2) {
    if (me == 0)
      fprintf(stderr, "aggregate_bench: needs 2 processes (mpirun -np 2), got %d\n", nproc);
    code = 2;
  }
  if (code != 0) {
    bench_end();
    return code == 1 ? 0 : code;
  }
  const struct config *cfg = &b->cfg;
  const size_t span = (size_t)(cfg->n * cfg->stride);
  b->bases = calloc((size_t)nproc, sizeof *b->bases);
  b->handles = calloc((size_t)cfg->n, sizeof *b->handles);
  if (!b->bases || !b->handles)
    die("out of memory");
  if (ARMCI_Malloc(b->bases, (armci_size_t)span) != 0 || !b->bases[TARGET])
    die("ARMCI_Malloc of %zu bytes failed", span);
  b->remote = b->bases[TARGET];
  b->mine = b->bases[me];

  FILE *csv = NULL;
  if (me == ORIGIN) {
    b->local = ARMCI_Malloc_local((armci_size_t)span);
    if (!b->local)
      die("ARMCI_Malloc_local of %zu bytes failed", span);
    if (cfg->csv_path && !(csv = fopen(cfg->csv_path, "w")))
      die("cannot write %s: %s", cfg->csv_path, strerror(errno));
    printf("# aggregate_bench impl=%s path=%s n=%ld stride=%ld reps=%d\n", IMPL_NAME,
           transfer_path(), cfg->n, cfg->stride, cfg->reps);
    print_settings(stdout);
    fflush(stdout);
  }

  /* Each pass runs one batch of every way, the order rotating from pass to
   * pass, so that slow drifts of the machine's load spread over all three. */
  const double t_start = now(), cpu_start = cpu_now();
  for (int pass = 0; pass <= cfg->reps; pass++)
    for (int op = 0; op < NOPS; op++)
      if (cfg->ops[op])
        for (int k = 0; k < NMETHODS; k++)
          run_phase(b, (enum op)op, (enum method)((k + pass) % NMETHODS), pass);

  if (me == ORIGIN) {
    const double wall = now() - t_start, cpu = cpu_now() - cpu_start;
    printf("# run: %.1f s; rank 0 cpu/wall %.2f; load average %.2f\n", wall,
           wall > 0 ? cpu / wall : 0.0, load_average());
    printf("# medians of %d batches of %ld operations of 8 bytes, every batch checked;\n"
           "# ratio = time / time of blk (below 1: faster than blocking)\n",
           cfg->reps, cfg->n);
    printf("\n%-4s %-4s %12s %11s %9s  %s\n", "op", "way", "batch_us", "per_op_us", "ratio",
           "what");
    FILE *out = csv ? csv : stdout;
    char lines[NOPS * NMETHODS][160];
    int nl = 0;
    for (int op = 0; op < NOPS; op++) {
      if (!cfg->ops[op])
        continue;
      const double blk = med(b->sec[op][M_BLK], cfg->reps);
      for (int m = 0; m < NMETHODS; m++) {
        const double t = med(b->sec[op][m], cfg->reps);
        printf("%-4s %-4s %12.1f %11.4f %9.3f  %s\n", op_names[op], method_names[m], t * 1e6,
               t * 1e6 / (double)cfg->n, t / blk, method_what[op][m]);
        snprintf(lines[nl++], sizeof lines[0], "%s,%s,%s,%s,%ld,%ld,%.3f,%.5f,%.4f", IMPL_NAME,
                 transfer_path(), op_names[op], method_names[m], cfg->n, cfg->stride, t * 1e6,
                 t * 1e6 / (double)cfg->n, t / blk);
      }
    }
    if (!csv)
      printf("\n# CSV\n");
    fprintf(out, "impl,path,op,way,n,stride,batch_us,per_op_us,ratio_to_blk\n");
    for (int i = 0; i < nl; i++)
      fprintf(out, "%s\n", lines[i]);
    if (csv) {
      if (fclose(csv) != 0)
        die("cannot write %s", cfg->csv_path);
      printf("\n# CSV written to %s\n", cfg->csv_path);
    }
    fflush(stdout);
    ARMCI_Free_local(b->local);
  }
  ARMCI_Barrier();
  ARMCI_Free(b->bases[me]);
  free(b->bases);
  free(b->handles);
  bench_end();
  return 0;
}
