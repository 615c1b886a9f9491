/*
 * overlap_bench: how much of a nonblocking ARMCI_NbGet / ARMCI_NbPut the
 * origin can hide behind its own computation.
 *
 * Rank 0 issues a transfer of S bytes between a local malloc'd buffer and
 * rank 1's ARMCI_Malloc region, computes for C microseconds (a calibrated
 * kernel on local data, not a sleep), then waits:
 *   get: ARMCI_NbGet, compute, ARMCI_Wait
 *   put: ARMCI_NbPut, compute, ARMCI_Wait, ARMCI_Fence (the data is at the
 *        target when the clock stops)
 * Per op and size it measures t_comm (the same without compute), the compute
 * alone (compute_us, C set to about t_comm), and t_total with both, and
 * reports overlap_pct = 100 * (t_comm + compute - t_total) / min(t_comm,
 * compute), clipped to 0..100: 100 when the transfer is fully hidden, 0
 * when transfer and compute simply add up. compute_slowdown is the compute
 * time while the transfer is in flight over the compute time alone.
 *
 * The target (rank 1) either sits in ARMCI_Barrier (-t idle) or spins in a
 * loop that never calls the library until rank 0 stores a flag into its
 * memory with ARMCI_Put (-t busy): a library that needs the target's
 * application to call it to move data stalls there (the run ends with an
 * error after -T seconds).
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/overlap_bench
 *   ARMCI-MPI: mpicc -O2 benchmarks/overlap_bench.c benchmarks/harness*.c -larmci-openmpi -lm
 * See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "bench_compute.h"

#define PAGE 4096
#define MAX_SIZES 24
#define MAX_FRACS 17
#define ORIGIN 0
#define TARGET 1

enum op { OP_GET, OP_PUT, NOPS };
static const char *const op_names[NOPS + 1] = {"get", "put", NULL};

struct config {
  int ops; /* bit 1 << op */
  long sizes[MAX_SIZES];
  int nsizes;
  int reps;
  int warmup;
  double sample_s;
  int busy;
  double timeout_s;
  int sweep;
  double tol;
  int local_armci; /* -L: local buffer from ARMCI_Malloc_local */
  const char *csv_path;
};

/* One (op, size): the batch sizes and C from the calibration pass and one
 * sample per timed pass of every measurement, for every C of the sweep.
 * Times are seconds per iteration. */
struct cell {
  long k, rounds;                  /* batch length and batches per sample */
  long units;                      /* kernel units of C = 1.0 * t_comm */
  double comm[MAX_FRACS][BENCH_MAX_REPS];    /* Nb + Wait (+ Fence) */
  double comp[MAX_FRACS][BENCH_MAX_REPS];    /* compute alone */
  double total[MAX_FRACS][BENCH_MAX_REPS];   /* Nb, compute, Wait (+ Fence) */
  double comp_ov[MAX_FRACS][BENCH_MAX_REPS]; /* the kernel part of `total` */
  double comp_in[MAX_FRACS][BENCH_MAX_REPS]; /* the kernel part of `comp` */
};

struct bench {
  struct config cfg;
  double fracs[MAX_FRACS]; /* C / t_comm of each measured point */
  int nfracs, main_frac;   /* main_frac: the point with C = 1.0 * t_comm */
  double units_per_us;
  struct cell cells[NOPS][MAX_SIZES];
  void **bases;
  unsigned char *remote;       /* data region in rank 1's ARMCI_Malloc memory */
  void *remote_flag;           /* rank 1's flag word, as rank 0 addresses it */
  unsigned char *mine;         /* this rank's data region */
  volatile long *my_flag;      /* this rank's flag word */
  unsigned char *local;        /* rank 0's local buffer */
  unsigned seed;
  long seq;
  double timed_wall, timed_cpu; /* rank 0, over the timed parts */
  double idle_wall, idle_cpu;   /* rank 1 (idle), in the barrier while rank 0 times */
};

static inline void issue(struct bench *b, enum op op, int bytes, armci_hdl_t *h) {
  ARMCI_INIT_HANDLE(h);
  if (op == OP_GET)
    BENCH_CHECK(ARMCI_NbGet(b->remote, b->local, bytes, TARGET, h), "ARMCI_NbGet of %d bytes", bytes);
  else
    BENCH_CHECK(ARMCI_NbPut(b->local, b->remote, bytes, TARGET, h), "ARMCI_NbPut of %d bytes", bytes);
}

static inline void complete(enum op op, int bytes, armci_hdl_t *h) {
  BENCH_CHECK(ARMCI_Wait(h), "ARMCI_Wait of %d bytes", bytes);
  if (op == OP_PUT)
    ARMCI_Fence(TARGET);
}

/* Seconds per iteration of Nb + Wait (+ Fence) with nothing in between. */
static double time_comm(struct bench *b, enum op op, int bytes, long iters) {
  armci_hdl_t h;
  double t0 = now();
  for (long i = 0; i < iters; i++) {
    issue(b, op, bytes, &h);
    complete(op, bytes, &h);
  }
  return (now() - t0) / (double)iters;
}

/* Seconds per iteration of the compute alone; *comp_part gets the part
 * between the two clock reads. Those reads are the ones the overlapped loop
 * makes, so their cost cancels in t_comm + compute - t_total. */
static double time_comp(long units, long iters, double *comp_part) {
  double acc = 0, t0 = now();
  for (long i = 0; i < iters; i++) {
    double tb = now();
    kernel_run(units);
    acc += now() - tb;
  }
  *comp_part = acc / (double)iters;
  return (now() - t0) / (double)iters;
}

/* Seconds per iteration of Nb, compute, Wait (+ Fence); *comp_part gets the
 * compute part of it. */
static double time_total(struct bench *b, enum op op, int bytes, long units, long iters,
                         double *comp_part) {
  armci_hdl_t h;
  double acc = 0, t0 = now();
  for (long i = 0; i < iters; i++) {
    issue(b, op, bytes, &h);
    double tb = now();
    kernel_run(units);
    acc += now() - tb;
    complete(op, bytes, &h);
  }
  *comp_part = acc / (double)iters;
  return (now() - t0) / (double)iters;
}

/* Per-iteration averages of one sample of the three measurements. */
struct sample {
  double comm, comp, comp_in, total, comp_ov;
};

/* One sample: `rounds` rounds, each a batch of k iterations of comm alone,
 * of compute alone and of both, in an order that rotates from round to
 * round. Short interleaved batches put the three in the same machine state
 * (caches, clock speed, load from elsewhere), which separate long loops do
 * not on a shared machine. */
static struct sample interleaved(struct bench *b, enum op op, int bytes, long units, long k,
                                 long rounds, int rot, double max_seconds) {
  struct sample s = {0, 0, 0, 0, 0};
  const double t0 = now();
  long r;
  for (r = 0; r < rounds; r++) {
    /* Transfers far slower than in the calibration (a target that is off
     * its CPU) would stretch the sample without bound: fewer rounds then. */
    if (r > 0 && now() - t0 > max_seconds)
      break;
    for (int j = 0; j < 3; j++) {
      double part;
      switch ((j + r + rot) % 3) {
      case 0:
        s.comm += time_comm(b, op, bytes, k);
        break;
      case 1:
        s.comp += time_comp(units, k, &part);
        s.comp_in += part;
        break;
      default:
        s.total += time_total(b, op, bytes, units, k, &part);
        s.comp_ov += part;
        break;
      }
    }
  }
  s.comm /= (double)r;
  s.comp /= (double)r;
  s.comp_in /= (double)r;
  s.total /= (double)r;
  s.comp_ov /= (double)r;
  return s;
}

/* The origin's part of one phase. Pass 0 calibrates: t_comm (the median of
 * five batches, so one preempted batch does not set it), the batch length k
 * (about 20 us of communication), the rounds for a sample of about -m ms of
 * communication, and the kernel units for which the compute alone takes
 * t_comm, measured interleaved with the communication as the samples are. */
static void measure(struct bench *b, enum op op, int si, int pass) {
  struct cell *c = &b->cells[op][si];
  const int bytes = (int)b->cfg.sizes[si];
  if (pass == 0) {
    long n = 1;
    double t;
    time_comm(b, op, bytes, 1); /* first touch, connection set-up */
    for (;;) {
      t = time_comm(b, op, bytes, n) * (double)n;
      if (t >= 200e-6 || n >= (1L << 30))
        break;
      n *= 2;
    }
    double v[5];
    for (int k = 0; k < 5; k++)
      v[k] = time_comm(b, op, bytes, n);
    double t_comm = bench_median(v, 5);
    if (t_comm <= 0)
      t_comm = 1e-9;
    c->k = (long)(20e-6 / t_comm + 0.5);
    if (c->k < 1)
      c->k = 1;
    c->rounds = (long)(b->cfg.sample_s / ((double)c->k * t_comm) + 0.5);
    if (c->rounds < 3)
      c->rounds = 3;
    long units = (long)(t_comm * 1e6 * b->units_per_us + 0.5);
    for (int refine = 0; refine < 3; refine++) {
      if (units < 1)
        units = 1;
      struct sample s = interleaved(b, op, bytes, units, c->k, 3, refine, 8 * b->cfg.sample_s);
      units = (long)((double)units * s.comm / (s.comp > 0 ? s.comp : 1e-9) + 0.5);
    }
    c->units = units < 1 ? 1 : units;
    return;
  }
  const int r = pass - 1;
  for (int f = 0; f < b->nfracs; f++) {
    const long units = (long)(b->fracs[f] * (double)c->units + 0.5);
    /* At C ~ 2 t_comm a round is longer: fewer of them. */
    long rounds = (long)((double)c->rounds / (1.0 + b->fracs[f]) + 0.5);
    struct sample s = interleaved(b, op, bytes, units, c->k, rounds < 2 ? 2 : rounds, pass,
                                  8 * b->cfg.sample_s);
    c->comm[f][r] = s.comm;
    c->comp[f][r] = s.comp;
    c->comp_in[f][r] = s.comp_in;
    c->total[f][r] = s.total;
    c->comp_ov[f][r] = s.comp_ov;
    /* C follows t_comm from pass to pass: a calibration taken during a
     * burst of load from elsewhere is corrected by the next pass, and the
     * medians drop the samples it spoiled. */
    if (f == b->main_frac && s.comp > 0 && s.comm > 0) {
      long units = (long)((double)c->units * s.comm / s.comp + 0.5);
      c->units = units < 1 ? 1 : units;
    }
  }
}

/* One (op, size) of one pass; collective. */
static void run_phase(struct bench *b, enum op op, int si, int pass) {
  const size_t n = (size_t)b->cfg.sizes[si];
  const unsigned seed = ++b->seed;
  const long seq = ++b->seq;

  if (me == ORIGIN) {
    fill_pattern(b->local, n, seed, op == OP_GET); /* put: the data; get: what it must replace */
  } else if (me == TARGET) {
    access_begin(b->bases[me]);
    fill_pattern(b->mine, n, seed, op == OP_PUT);
    access_end(b->bases[me]);
  }
  ARMCI_Barrier();

  if (me == ORIGIN) {
    const double w0 = now(), c0 = thread_cpu_now();
    measure(b, op, si, pass);
    b->timed_wall += now() - w0;
    b->timed_cpu += thread_cpu_now() - c0;
    if (b->cfg.busy)
      set_remote_flag(seq, b->remote_flag, TARGET);
  } else if (me == TARGET && b->cfg.busy) {
    struct spin_result s = spin_until_flag(b->my_flag, seq, 0, b->cfg.timeout_s);
    if (s.timed_out)
      die("-t busy: spun %.1f s in a loop without library calls and rank 0's flag (phase %ld: "
          "%s %zu bytes) never arrived: this library needs the target to call it to complete "
          "the origin's operations",
          s.seconds, seq, op_names[op], n);
  }
  if (me == TARGET && !b->cfg.busy) {
    /* What waiting costs the idle target's core, which a software NIC
       (rdma_rxe) needs to move rank 0's data. */
    const double w0 = now(), c0 = thread_cpu_now();
    ARMCI_Barrier();
    b->idle_wall += now() - w0;
    b->idle_cpu += thread_cpu_now() - c0;
  } else {
    ARMCI_Barrier();
  }

  if (me == ORIGIN && op == OP_GET) {
    long bad = find_pattern_mismatch(b->local, n, seed);
    if (bad >= 0)
      die("get %zu bytes: wrong data at byte %ld of the local buffer", n, bad);
  } else if (me == TARGET && op == OP_PUT) {
    access_begin(b->bases[me]);
    long bad = find_pattern_mismatch(b->mine, n, seed);
    access_end(b->bases[me]);
    if (bad >= 0)
      die("put %zu bytes: wrong data at byte %ld of the target region", n, bad);
  }
}

/* -------------------------------------------------------------- results */

struct result {
  double t_comm, t_total, comp, comp_in, comp_ov, overlap, slowdown;
};

static struct result result_of(const struct bench *b, enum op op, int si, int f) {
  const struct cell *c = &b->cells[op][si];
  const int reps = b->cfg.reps;
  struct result r;
  r.t_comm = bench_median(c->comm[f], reps);
  r.t_total = bench_median(c->total[f], reps);
  r.comp = bench_median(c->comp[f], reps);
  r.comp_in = bench_median(c->comp_in[f], reps);
  r.comp_ov = bench_median(c->comp_ov[f], reps);
  /* The hidden part of the shorter of the two; at C ~ t_comm the textbook
   * 100 * (t_comm + C - t_total) / t_comm. */
  double shorter = r.t_comm < r.comp ? r.t_comm : r.comp;
  double ov = shorter > 0 ? 100.0 * (r.t_comm + r.comp - r.t_total) / shorter : 0;
  r.overlap = ov < 0 ? 0 : ov > 100 ? 100 : ov;
  /* The kernel measured the same way in both loops. */
  r.slowdown = b->fracs[f] > 0 && r.comp_in > 0 ? r.comp_ov / r.comp_in : 0;
  return r;
}

/* The largest swept C for which every point up to it had t_total <=
 * max(t_comm, C) * (1 + tol). */
static double max_hidden_c(const struct bench *b, enum op op, int si, double *frac) {
  double best = -1;
  *frac = -1;
  for (int f = 0; f < b->nfracs; f++) {
    struct result r = result_of(b, op, si, f);
    double bound = r.t_comm > r.comp ? r.t_comm : r.comp;
    if (r.t_total > bound * (1 + b->cfg.tol))
      break;
    best = r.comp;
    *frac = b->fracs[f];
  }
  return best;
}

static const struct bench_col columns[] = {
    {NULL, "path", COL_STR, 0, 0, 0},
    {NULL, "target", COL_STR, 0, 0, 0},
    {"op", "op", COL_STR, -4, 0, 0},
    {"bytes", "bytes", COL_LONG, 9, 0, 0},
    {NULL, "c_frac", COL_DOUBLE, 0, 0, 3},
    {"t_comm_us", "t_comm_us", COL_DOUBLE, 11, 3, 4},
    {"t_total_us", "t_total_us", COL_DOUBLE, 11, 3, 4},
    {"compute_us", "compute_us", COL_DOUBLE, 11, 3, 4},
    {"overlap_pct", "overlap_pct", COL_DOUBLE, 12, 1, 2},
    {"compute_slowdown", "compute_slowdown", COL_DOUBLE, 17, 3, 4},
};
static const struct bench_table table = BENCH_TABLE(columns);

/* The table shows C = t_comm; the CSV has every swept C too. */
static void print_tables(const struct bench *b) {
  printf("\n");
  bench_table_header(&table);
  for (int op = 0; op < NOPS; op++) {
    if (!(b->cfg.ops & (1 << op)))
      continue;
    for (int si = 0; si < b->cfg.nsizes; si++)
      for (int f = 0; f < b->nfracs; f++) {
        struct result r = result_of(b, (enum op)op, si, f);
        (f == b->main_frac ? bench_row : bench_csv_row)(
            &table, transfer_path(), b->cfg.busy ? "busy" : "idle", op_names[op], b->cfg.sizes[si],
            b->fracs[f], r.t_comm * 1e6, r.t_total * 1e6, r.comp * 1e6, r.overlap, r.slowdown);
      }
  }
  if (!b->cfg.sweep)
    return;
  printf("\n== sweep: t_total as C grows; ok: t_total <= max(t_comm, C) * (1 + %.2f)\n",
         b->cfg.tol);
  printf("%-4s %9s %7s %11s %11s %11s %6s\n", "op", "bytes", "C/comm", "compute_us", "t_total_us",
         "bound_us", "ok");
  for (int op = 0; op < NOPS; op++) {
    if (!(b->cfg.ops & (1 << op)))
      continue;
    for (int si = 0; si < b->cfg.nsizes; si++) {
      for (int f = 0; f < b->nfracs; f++) {
        struct result r = result_of(b, (enum op)op, si, f);
        double bound = r.t_comm > r.comp ? r.t_comm : r.comp;
        printf("%-4s %9ld %7.3f %11.3f %11.3f %11.3f %6s\n", op_names[op], b->cfg.sizes[si],
               b->fracs[f], r.comp * 1e6, r.t_total * 1e6, bound * 1e6,
               r.t_total <= bound * (1 + b->cfg.tol) ? "yes" : "no");
      }
    }
  }
  printf("\n== largest C hidden (every swept point up to it ok)\n");
  printf("%-4s %9s %11s %11s %7s\n", "op", "bytes", "t_comm_us", "max_C_us", "C/comm");
  for (int op = 0; op < NOPS; op++) {
    if (!(b->cfg.ops & (1 << op)))
      continue;
    for (int si = 0; si < b->cfg.nsizes; si++) {
      double frac, c = max_hidden_c(b, (enum op)op, si, &frac);
      struct result r = result_of(b, (enum op)op, si, b->main_frac);
      printf("%-4s %9ld %11.3f %11.3f %7.3f\n", op_names[op], b->cfg.sizes[si], r.t_comm * 1e6,
             c * 1e6, frac);
    }
  }
}

static const char about[] =
    "How much of a nonblocking ARMCI_NbGet / ARMCI_NbPut rank 0 hides behind its own\n"
    "computation of about the transfer's length; see benchmarks/README.md.";
static const char *const target_names[] = {"idle", "busy", NULL};

static void parse_args(int *argc, char ***argv, struct config *c) {
  static const long default_sizes[] = {8, 64, 256, 1L << 10, 4L << 10, 16L << 10,
                                       64L << 10, 256L << 10, 1L << 20, 4L << 20};
  *c = (struct config){.ops = 1 << OP_GET | 1 << OP_PUT,
                       .nsizes = (int)(sizeof default_sizes / sizeof default_sizes[0]),
                       .reps = 7,
                       .sample_s = 0.004,
                       .timeout_s = 30,
                       .tol = 0.1};
  memcpy(c->sizes, default_sizes, sizeof default_sizes);
  const struct bench_opt opts[] = {
      {'o', "ops", OPT_SET, &c->ops, 0, 0, "LIST", "get, put or both", op_names, NULL, 0, NULL},
      BENCH_OPT_SIZES('s', c->sizes, &c->nsizes, 1, 1L << 30),
      BENCH_OPT_REPS('r', &c->reps, NULL),
      BENCH_OPT_WARMUP(&c->warmup),
      BENCH_OPT_SAMPLE_MS('m', &c->sample_s, NULL),
      {'t', "target", OPT_CHOICE, &c->busy, 0, 0, "idle|busy",
       "idle: rank 1 waits in ARMCI_Barrier; busy: rank 1 spins without\n"
       "library calls until rank 0 puts a flag into its memory",
       target_names, NULL, 0, NULL},
      BENCH_OPT_TIMEOUT('T', &c->timeout_s),
      {'S', "sweep", OPT_FLAG, &c->sweep, 0, 0, NULL,
       "also sweep C = 0, t_comm/4, ..., 2 t_comm and report the largest C\n"
       "with t_total <= max(t_comm, C) * (1 + TOL)",
       NULL, NULL, 0, NULL},
      {'e', "tolerance", OPT_DOUBLE, &c->tol, 0, 9.999, "TOL", "tolerance of the sweep", NULL, NULL, 0, NULL},
      {'L', "armci-local", OPT_FLAG, &c->local_armci, 0, 0, NULL,
       "local buffer from ARMCI_Malloc_local instead of malloc", NULL, NULL, 0, NULL},
      BENCH_OPT_CSV('c', &c->csv_path),
      BENCH_OPT_END};
  bench_begin(argc, argv, "overlap_bench", opts, about, 2);
}

static void one_pass(void *ctx, int pass) {
  struct bench *b = ctx;
  for (int op = 0; op < NOPS; op++)
    if (b->cfg.ops & (1 << op))
      for (int si = 0; si < b->cfg.nsizes; si++)
        run_phase(b, (enum op)op, si, pass);
}

int main(int argc, char **argv) {
  static struct bench bench;
  struct bench *b = &bench;
  parse_args(&argc, &argv, &b->cfg);
  const struct config *cfg = &b->cfg;
  if (cfg->sweep) {
    b->nfracs = 9;
    for (int f = 0; f < b->nfracs; f++)
      b->fracs[f] = 0.25 * f;
    b->main_frac = 4;
  } else {
    b->nfracs = 1;
    b->fracs[0] = 1.0;
    b->main_frac = 0;
  }
  const long max_size = bench_largest(cfg->sizes, cfg->nsizes);

  /* Each rank's region: a page for the flag word, then the data. */
  b->bases = bench_malloc_all((size_t)PAGE + (size_t)max_size, 1);
  b->remote_flag = b->bases[TARGET];
  b->remote = (unsigned char *)b->bases[TARGET] + PAGE;
  b->mine = (unsigned char *)b->bases[me] + PAGE;
  b->my_flag = (volatile long *)b->bases[me];

  kernel_init();
  void *local_base = NULL;
  if (me == ORIGIN) {
    if (cfg->local_armci)
      local_base = bench_malloc_local((size_t)max_size);
    else if (posix_memalign(&local_base, PAGE, (size_t)max_size) != 0)
      die("malloc of %ld bytes failed", max_size);
    b->local = local_base;
    memset(b->local, 0, (size_t)max_size);
  }
  ARMCI_Barrier();
  /* Calibrated with the target in the barrier, as the idle runs find it. */
  if (me == ORIGIN)
    b->units_per_us = kernel_units_per_us(0.05);
  ARMCI_Barrier();

  struct bench_run run;
  bench_report_open(&run, cfg->csv_path, &table, cfg->reps,
                    "path=%s target=%s binding=%s reps=%d sample_ms=%.1f local=%s kernel=%.1f units/us (%.2f Gflop/s)",
                    transfer_path(), cfg->busy ? "busy" : "idle", bench_binding(), cfg->reps, cfg->sample_s * 1e3,
                    cfg->local_armci ? "ARMCI_Malloc_local" : "malloc", b->units_per_us,
                    kernel_flops(1) * b->units_per_us * 1e-3);
  bench_passes(cfg->reps, cfg->warmup, one_pass, b);
  if (me == TARGET && !cfg->busy && b->idle_wall > 0) {
    printf("target_idle_cpu: %.1f%% of %.3f s in ARMCI_Barrier while rank 0 timed (main thread CPU)\n",
           100 * b->idle_cpu / b->idle_wall, b->idle_wall);
    fflush(stdout);
  }

  if (me == ORIGIN) {
    char timing[48];
    snprintf(timing, sizeof timing, ", while timing %.2f", b->timed_wall > 0 ? b->timed_cpu / b->timed_wall : 0.0);
    bench_report_table(&run, timing, NULL,
                       "# medians of %d samples; get: NbGet, compute, Wait; put: NbPut, compute, Wait, "
                       "Fence;\n# overlap_pct = 100 (t_comm + compute - t_total) / min(t_comm, compute), "
                       "clipped to 0..100\n",
                       cfg->reps);
    print_tables(b);
    bench_csv_finish();
    printf("# kernel checksum %.6f\n", kernel_checksum());
    fflush(stdout);
    if (cfg->local_armci)
      ARMCI_Free_local(local_base);
    else
      free(local_base);
  }
  ARMCI_Barrier();
  bench_free_all(b->bases);
  bench_end();
  return 0;
}
