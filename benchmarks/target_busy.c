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
 *   ARMCI-MPI: mpicc -O2 benchmarks/target_busy.c -larmci-openmpi
 * See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "target_busy"
#include "bench_common.h"
#include "bench_compute.h"

#define PAGE 4096
#define STATS_BYTES (64 * 1024)
#define MAX_REPS 51
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
  double sample_s;
  int window;
  double timeout_s;
  const char *csv_path;
};

struct bench {
  struct config cfg;
  long iters[NOPS][MAX_SIZES];                   /* per sample, from the idle calibration */
  double sec[NMODES][NOPS][MAX_SIZES][MAX_REPS]; /* rank 0: seconds per operation */
  double rate[NOPS][MAX_SIZES][MAX_REPS];        /* rank 1: kernel units/us while busy */
  double ref_rate[MAX_REPS];                     /* rank 1: the same with no transfers */
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

static void check_rc(int rc, const char *call, long bytes) {
  if (rc != 0)
    die("%s of %ld bytes returned %d", call, bytes, rc);
}

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
      check_rc(ARMCI_Get(b->remote, b->local, bytes, TARGET), "ARMCI_Get", bytes);
    }
    break;
  case OP_PUT:
    for (i = 0; i < iters; i++) {
      if ((i & 7) == 7 && now() - t0 > max_seconds)
        break;
      check_rc(ARMCI_Put(b->local, b->remote, bytes, TARGET), "ARMCI_Put", bytes);
    }
    ARMCI_Fence(TARGET);
    break;
  case OP_NBGET:
  case OP_NBPUT:
    for (i = 0; i < iters; i += w) {
      if (i > 0 && now() - t0 > max_seconds)
        break;
      for (int k = 0; k < w; k++) {
        ARMCI_INIT_HANDLE(&b->handles[k]);
        if (op == OP_NBGET)
          check_rc(ARMCI_NbGet(b->remote, b->local, bytes, TARGET, &b->handles[k]), "ARMCI_NbGet",
                   bytes);
        else
          check_rc(ARMCI_NbPut(b->local, b->remote, bytes, TARGET, &b->handles[k]), "ARMCI_NbPut",
                   bytes);
      }
      for (int k = 0; k < w; k++)
        check_rc(ARMCI_Wait(&b->handles[k]), "ARMCI_Wait", bytes);
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

/* Operations per sample of about -m ms (a multiple of the window for the nb
 * ops), from a doubling probe with the target idle. */
static long calibrate(struct bench *b, enum op op, int bytes) {
  const long step = (op == OP_NBGET || op == OP_NBPUT) ? b->cfg.window : 1;
  long n = step, done;
  double t;
  run_ops(b, op, bytes, step, 1e9, &done); /* first touch, connection set-up */
  for (;;) {
    t = run_ops(b, op, bytes, n, 1e9, &done);
    if (t >= b->cfg.sample_s / 4 || n >= (1L << 30))
      break;
    n *= 2;
  }
  long iters = (long)((double)n * b->cfg.sample_s / (t > 0 ? t : 1e-9));
  iters = (iters + step - 1) / step * step;
  return iters < step ? step : iters;
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

static double med(const double *v, int n) {
  double tmp[MAX_REPS];
  memcpy(tmp, v, sizeof(double) * (size_t)n);
  return median(tmp, n);
}

/* -------------------------------------------------------------- options */

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np 2 target_busy [-s SIZES] [-r REPS] [-m MS] [-w WINDOW] [-T SECONDS]\n"
          "                                [-c FILE.csv]\n"
          "  -s SIZES    comma list, K/M suffixes (default 64K,128K,256K,512K,1M,2M,4M)\n"
          "  -r REPS     samples per measurement, median reported (default 7, at most %d)\n"
          "  -m MS       length of one sample in ms, target idle (default 10)\n"
          "  -w WINDOW   nonblocking operations in flight (default 16, at most %d)\n"
          "  -T SECONDS  give up (error) when rank 1 has computed this long without the\n"
          "              stop flag arriving (default 60)\n"
          "  -c FILE     write the CSV there instead of after '# CSV' on stdout\n",
          MAX_REPS, MAX_WINDOW);
}

static int parse_args(int argc, char **argv, struct config *c) {
  c->nsizes = 0;
  for (long s = 64L << 10; s <= 4L << 20; s *= 2)
    c->sizes[c->nsizes++] = s;
  c->reps = 7;
  c->sample_s = 0.010;
  c->window = 16;
  c->timeout_s = 60;
  c->csv_path = NULL;
  int opt;
  opterr = 0;
  while ((opt = getopt(argc, argv, "s:r:m:w:T:c:h")) != -1) {
    switch (opt) {
    case 's':
      c->nsizes = parse_size_list(optarg, c->sizes, MAX_SIZES, 1, 1L << 30);
      if (c->nsizes < 1)
        goto bad;
      break;
    case 'r':
      c->reps = atoi(optarg);
      if (c->reps < 1 || c->reps > MAX_REPS)
        goto bad;
      break;
    case 'm':
      c->sample_s = strtod(optarg, NULL) * 1e-3;
      if (!(c->sample_s > 0 && c->sample_s <= 10))
        goto bad;
      break;
    case 'w':
      c->window = atoi(optarg);
      if (c->window < 1 || c->window > MAX_WINDOW)
        goto bad;
      break;
    case 'T':
      c->timeout_s = strtod(optarg, NULL);
      if (!(c->timeout_s > 0))
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
        fprintf(stderr, "target_busy: unknown option or missing value '-%c'\n", optopt);
        usage(stderr);
      }
      return 2;
    }
    continue;
  bad:
    if (me == 0) {
      fprintf(stderr, "target_busy: bad value '%s' for -%c\n", optarg, opt);
      usage(stderr);
    }
    return 2;
  }
  if (optind < argc) {
    if (me == 0)
      fprintf(stderr, "target_busy: unexpected argument '%s'\n", argv[optind]);
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
      fprintf(stderr, "target_busy: needs 2 processes (mpirun -np 2), got %d\n", nproc);
    code = 2;
  }
  if (code != 0) {
    bench_end();
    return code == 1 ? 0 : code;
  }
  const struct config *cfg = &b->cfg;
  long max_size = 0;
  for (int i = 0; i < cfg->nsizes; i++)
    if (cfg->sizes[i] > max_size)
      max_size = cfg->sizes[i];

  /* Each rank's region: the flag page, rank 1's results, then the data. */
  const size_t region = (size_t)PAGE + STATS_BYTES + (size_t)max_size;
  b->bases = calloc((size_t)nproc, sizeof *b->bases);
  if (!b->bases)
    die("out of memory");
  if (ARMCI_Malloc(b->bases, (armci_size_t)region) != 0 || !b->bases[TARGET])
    die("ARMCI_Malloc of %zu bytes failed", region);
  b->remote_flag = b->bases[TARGET];
  b->remote_stats = (char *)b->bases[TARGET] + PAGE;
  b->remote = (unsigned char *)b->bases[TARGET] + PAGE + STATS_BYTES;
  b->my_flag = (volatile long *)b->bases[me];
  b->my_stats = (double *)((char *)b->bases[me] + PAGE);
  b->mine = (unsigned char *)b->bases[me] + PAGE + STATS_BYTES;
  access_begin(b->bases[me]);
  memset(b->bases[me], 0, region);
  access_end(b->bases[me]);
  kernel_init();

  FILE *csv = NULL;
  if (me == ORIGIN) {
    b->local = ARMCI_Malloc_local((armci_size_t)max_size);
    if (!b->local)
      die("ARMCI_Malloc_local of %ld bytes failed", max_size);
    memset(b->local, 0, (size_t)max_size);
    if (cfg->csv_path && !(csv = fopen(cfg->csv_path, "w")))
      die("cannot write %s: %s", cfg->csv_path, strerror(errno));
    printf("# target_busy impl=%s path=%s reps=%d sample_ms=%.1f window=%d\n", IMPL_NAME,
           transfer_path(), cfg->reps, cfg->sample_s * 1e3, cfg->window);
    print_settings(stdout);
    fflush(stdout);
  }

  /* Each pass takes one sample of every (op, size, mode); idle and busy of
   * one cell run back to back, in an order that alternates between passes,
   * so both see the same machine. */
  const double load_before = load_average();
  const double t_start = now(), cpu_start = cpu_now();
  for (int pass = 0; pass <= cfg->reps; pass++) {
    reference_phase(b, cfg->sample_s, pass);
    for (int si = 0; si < cfg->nsizes; si++)
      for (int op = 0; op < NOPS; op++)
        for (int k = 0; k < NMODES; k++) {
          enum mode mode = pass == 0 ? (enum mode)k : (enum mode)((k + pass) % NMODES);
          run_phase(b, (enum op)op, si, mode, pass);
        }
    if (me == ORIGIN) {
      fprintf(stderr, "# target_busy: %s %d/%d done, %.1f s\n", pass ? "pass" : "calibration",
              pass, cfg->reps, now() - t_start);
      fflush(stderr);
    }
  }

  /* Rank 1's medians go to rank 0 through rank 1's memory. */
  const int ncells = NOPS * cfg->nsizes;
  if (me == TARGET) {
    access_begin(b->bases[me]);
    for (int op = 0; op < NOPS; op++)
      for (int si = 0; si < cfg->nsizes; si++)
        b->my_stats[op * cfg->nsizes + si] = med(b->rate[op][si], cfg->reps);
    b->my_stats[ncells] = med(b->ref_rate, cfg->reps);
    access_end(b->bases[me]);
  }
  ARMCI_Barrier();
  if (me == ORIGIN) {
    double stats[NOPS * MAX_SIZES + 1];
    check_rc(ARMCI_Get(b->remote_stats, stats, (int)sizeof(double) * (ncells + 1), TARGET),
             "ARMCI_Get (rank 1's results)", (long)sizeof(double) * (ncells + 1));
    const double ref = stats[ncells];
    const double wall = now() - t_start, cpu = cpu_now() - cpu_start;
    printf("# run: %.1f s; rank 0 cpu/wall %.2f, while timing: %.2f (target idle), %.2f "
           "(target busy); load average %.2f before, %.2f after\n",
           wall, wall > 0 ? cpu / wall : 0.0,
           b->timed_wall[IDLE] > 0 ? b->timed_cpu[IDLE] / b->timed_wall[IDLE] : 0.0,
           b->timed_wall[BUSY] > 0 ? b->timed_cpu[BUSY] / b->timed_wall[BUSY] : 0.0, load_before,
           load_average());
    printf("# medians of %d samples; MB/s = 1e6 B/s; target_compute = rank 1's compute rate\n"
           "# while busy as the target, over its rate with no transfers (%.1f units/us)\n",
           cfg->reps, ref);
    printf("\n%-6s %9s %6s %11s %11s %10s %15s\n", "op", "bytes", "window", "idle_MB/s",
           "busy_MB/s", "busy/idle", "target_compute");
    for (int op = 0; op < NOPS; op++)
      for (int si = 0; si < cfg->nsizes; si++) {
        const double bytes = (double)cfg->sizes[si];
        const double idle = bytes / med(b->sec[IDLE][op][si], cfg->reps) * 1e-6;
        const double busy = bytes / med(b->sec[BUSY][op][si], cfg->reps) * 1e-6;
        const double trate = ref > 0 ? stats[op * cfg->nsizes + si] / ref : 0;
        printf("%-6s %9ld %6d %11.1f %11.1f %10.3f %15.3f\n", op_names[op], cfg->sizes[si],
               (op == OP_NBGET || op == OP_NBPUT) ? cfg->window : 1, idle, busy, busy / idle,
               trate);
      }
    FILE *out = csv ? csv : stdout;
    if (!csv)
      printf("\n# CSV\n");
    fprintf(out, "impl,path,op,bytes,window,idle_MBps,busy_MBps,busy_over_idle,target_compute\n");
    for (int op = 0; op < NOPS; op++)
      for (int si = 0; si < cfg->nsizes; si++) {
        const double bytes = (double)cfg->sizes[si];
        const double idle = bytes / med(b->sec[IDLE][op][si], cfg->reps) * 1e-6;
        const double busy = bytes / med(b->sec[BUSY][op][si], cfg->reps) * 1e-6;
        const double trate = ref > 0 ? stats[op * cfg->nsizes + si] / ref : 0;
        fprintf(out, "%s,%s,%s,%ld,%d,%.2f,%.2f,%.4f,%.4f\n", IMPL_NAME, transfer_path(),
                op_names[op], cfg->sizes[si], (op == OP_NBGET || op == OP_NBPUT) ? cfg->window : 1,
                idle, busy, busy / idle, trate);
      }
    if (csv) {
      if (fclose(csv) != 0)
        die("cannot write %s", cfg->csv_path);
      printf("\n# CSV written to %s\n", cfg->csv_path);
    }
    fflush(stdout);
    ARMCI_Free_local(b->local);
  }
  ARMCI_Barrier();
  if (me == TARGET && kernel_checksum() == 0)
    printf("# kernel checksum 0\n"); /* keeps the kernel's work observable */
  ARMCI_Free(b->bases[me]);
  free(b->bases);
  bench_end();
  return 0;
}
