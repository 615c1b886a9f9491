/* What strided_bench and vector_columns share: the busy target (rank 1
 * computes without calling the library while rank 0 measures, until rank 0
 * puts a stop word into its memory) and the measurement of one phase, every
 * kind of transfer in turn. Include after harness.h. */
#ifndef ARMCI_BENCH_BUSY_H
#define ARMCI_BENCH_BUSY_H

/* Control words in a small ARMCI_Malloc region of every rank; only rank 1's
 * is used. Rank 0 puts the phase number into CTL_STOP; rank 1 stores what it
 * computed during the phase at CTL_RESULT for rank 0 to get. */
#define CTL_STOP 0     /* long: the last phase rank 1 may stop computing for */
#define CTL_RESULT 64  /* double[3]: compute share, seconds, timed out (0/1) */
#define CTL_BYTES 4096

static double work[512]; /* 4 KiB of private data: stays in L1 */
static volatile double sink;
static long block_iters = 1000; /* iterations of compute_block in ~10 us */
static double block_seconds = 10e-6; /* their measured time on an idle core */

static void compute_block(long n) {
  for (long i = 0; i < n; i++) {
    double *w = &work[i & 511];
    *w = *w * 0.9999999 + 1e-7;
  }
}

/* Sizes a compute block to ~10 us (best of several tries: the machine is shared). */
static void calibrate_compute(void) {
  for (int i = 0; i < 512; i++) work[i] = 1.0 + i;
  const long n = 200000; /* ~0.1 ms */
  double best = 1e30;
  for (int t = 0; t < 20; t++) {
    double t0 = now();
    compute_block(n);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  block_iters = (long)(10e-6 / (best / (double)n));
  if (block_iters < 16) block_iters = 16;
  block_seconds = best / (double)n * (double)block_iters;
  sink = work[7];
}

struct phase_ctl {
  int busy;
  double limit_s;
  char **ctl; /* ARMCI_Malloc'd control regions, indexed by rank */
  long *stop_src; /* ARMCI_Malloc_local: the source of the stop put */
  long seq;
  /* what rank 1 reported for the last phase (valid on rank 0 when busy) */
  double tgt_share, tgt_seconds;
  int tgt_timed_out, any_timed_out;
};

/* Rank 1 computes until rank 0's stop word reaches seq or limit_s passes. No
 * library call in the loop, for ARMCI-MPI either: the load is a plain
 * volatile read of the window's memory (no access epoch, which would be a
 * library call), relying on a cache-coherent unified memory model. */
static void busy_until(struct phase_ctl *pc, long seq) {
  volatile long *stop = (volatile long *)(pc->ctl[me] + CTL_STOP);
  const double t0 = now();
  long blocks = 0;
  int timed_out = 0;
  while (*stop < seq) {
    compute_block(block_iters);
    blocks++;
    if ((blocks & 255) == 0 && now() - t0 > pc->limit_s) {
      timed_out = 1;
      break;
    }
  }
  const double elapsed = now() - t0;
  sink = work[blocks & 511];
  access_begin(pc->ctl[me]);
  double *res = (double *)(pc->ctl[me] + CTL_RESULT);
  res[0] = elapsed > 0 ? (double)blocks * block_seconds / elapsed : 0.0;
  res[1] = elapsed;
  res[2] = timed_out;
  access_end(pc->ctl[me]);
  if (timed_out)
    fprintf(stderr, "%s (rank 1): busy target gave up after %.3g s without the stop word (phase %ld)\n",
            bench_program, pc->limit_s, seq);
}

static void phase_begin(struct phase_ctl *pc) {
  ARMCI_Barrier();
  pc->seq++;
  if (pc->busy && me == 1) busy_until(pc, pc->seq);
}

static void phase_end(struct phase_ctl *pc) {
  if (pc->busy && me == 0) {
    *pc->stop_src = pc->seq;
    if (ARMCI_Put(pc->stop_src, pc->ctl[1] + CTL_STOP, (int)sizeof(long), 1) != 0) die("stop put failed");
    ARMCI_Fence(1);
  }
  ARMCI_Barrier();
  if (pc->busy && me == 0) {
    double res[3];
    if (ARMCI_Get(pc->ctl[1] + CTL_RESULT, res, (int)sizeof res, 1) != 0) die("result get failed");
    pc->tgt_share = res[0];
    pc->tgt_seconds = res[1];
    pc->tgt_timed_out = res[2] != 0.0;
    pc->any_timed_out |= pc->tgt_timed_out;
  }
}

/* -b: the target computes; -T: how long at most (phase_ctl.limit_s). */
#define BUSY_TARGET_OPTS(pc)                                                                        \
  {'b', "busy", OPT_FLAG, &(pc)->busy, 0, 0, NULL,                                                 \
   "busy target: rank 1 computes without library calls until rank 0\n"                            \
   "puts a stop word into its memory",                                                            \
   NULL, NULL, 0, NULL},                                                                          \
      BENCH_OPT_TIMEOUT('T', &(pc)->limit_s)

/* The first columns of both tables: what was measured and how. */
#define CONFIG_COLUMNS                                                                              \
  {"op", "op", COL_STR, -11, 0, 0}, {"path", "path", COL_STR, -7, 0, 0},                           \
      {"protocol", "protocol", COL_STR, -9, 0, 0}, {"target", "target", COL_STR, -6, 0, 0}

/* The last columns of both tables: the busy target's compute share in the
 * phase ("!": it gave up waiting) and with no transfers; a row passes the
 * three fields of struct busy_cells. */
#define BUSY_COLUMNS                                                                                \
  {"tgt_cpu", NULL, COL_STR, 8, 0, 0}, {NULL, "tgt_cpu_share", COL_DOUBLE, 0, 0, 3},                \
      {NULL, "tgt_cpu_baseline", COL_DOUBLE, 0, 0, 3}

struct busy_cells {
  char text[32];
  double share, baseline;
};
static struct busy_cells busy_cells(const struct phase_ctl *pc, double baseline) {
  struct busy_cells c = {"-", NAN, NAN};
  if (pc->busy) {
    snprintf(c.text, sizeof c.text, "%.2f%s", pc->tgt_share, pc->tgt_timed_out ? "!" : "");
    c.share = pc->tgt_share;
    c.baseline = baseline;
  }
  return c;
}

/* The control regions (collective); limit_s and busy as the options say. */
static void phase_ctl_init(struct phase_ctl *pc) {
  pc->ctl = (char **)bench_malloc_all(CTL_BYTES, 1);
  pc->stop_src = bench_malloc_local(sizeof(long));
  calibrate_compute();
}

/* The end of the program: the control regions and the measured region
 * (bases) given back, the library finalised; the exit status (4: the busy
 * target gave up waiting in some phase). Collective. */
static int phases_end(struct phase_ctl *pc, void **bases) {
  ARMCI_Free_local(pc->stop_src);
  bench_free_all((void **)pc->ctl);
  bench_free_all(bases);
  bench_end();
  return pc->any_timed_out ? 4 : 0;
}

/* After a check's put: rank 1's first `bytes` hold `image` again (rank 0). */
static void restore_target(void *remote, const void *image, long bytes) {
  if (ARMCI_Put((void *)image, remote, (int)bytes, 1) != 0)
    die("restore put failed");
  ARMCI_Fence(1);
}

/* Rank 1's part of the measured region holds `image` (collective). */
static void target_holds(void **bases, const void *image, size_t bytes) {
  if (me == 1) {
    access_begin(bases[1]);
    memcpy(bases[1], image, bytes);
    access_end(bases[1]);
  }
  ARMCI_Barrier();
}

/* The busy target's share of compute in a phase in which rank 0 spins 50 ms
 * without any transfer: below 1.00 there means other load on the machine,
 * not the library. -1 with an idle target. Collective. */
static double busy_baseline(struct phase_ctl *pc) {
  if (!pc->busy)
    return -1;
  phase_begin(pc);
  if (me == 0)
    for (double t0 = now(); now() - t0 < 0.05;) {
    }
  phase_end(pc);
  return pc->tgt_share;
}

/* Rank 0: the busy target's calibration (when busy), then the table's header. */
static void print_busy_header(const struct phase_ctl *pc, double baseline, const struct bench_table *t) {
  if (me != 0)
    return;
  if (pc->busy)
    printf("# busy target: compute blocks of %ld iterations (%.1f us on an idle core); tgt_cpu with no "
           "transfers (rank 0 spinning 50 ms): %.2f\n",
           block_iters, block_seconds * 1e6, baseline);
  bench_table_header(t);
}

/* Rank 0, after the table: what tgt_cpu says, for phases of `phase`. */
static void print_busy_note(const struct phase_ctl *pc, const char *phase) {
  if (pc->busy)
    printf("# tgt_cpu: share of the phase (%s) rank 1 spent in compute blocks, at their idle speed (1.00: "
           "nothing taken from it)%s\n",
           phase, pc->any_timed_out ? "; '!': the target gave up waiting for the stop word (-T)" : "");
}

/* ------------------------------------------------- one phase's measurement */

#define MAX_KINDS 8

struct kind_run {
  double (*run)(void *ctx, int kind, long n);
  void *ctx;
  int kind;
};

static double run_kind(void *p, long n) {
  const struct kind_run *r = p;
  return r->run(r->ctx, r->kind, n);
}

/* Rank 0's part of a phase: every kind calibrated to samples of about
 * sample_s, then `reps` rounds of one sample of each kind in turn, so that
 * a burst of other load spoils one sample of each kind (which the median
 * drops) rather than every sample of one, and a kind is measured beside its
 * bound. med[k]: kind k's median seconds per transfer. run(ctx, k, n) times
 * n transfers of kind k. */
static void measure_kinds(int nkinds, int reps, double sample_s, double (*run)(void *ctx, int kind, long n),
                          void *ctx, double *med) {
  long iters[MAX_KINDS];
  double samples[MAX_KINDS][BENCH_MAX_REPS];
  const struct bench_calibration cal = {sample_s, 1.0, 0, 0, 1, 1L << 20};
  for (int k = 0; k < nkinds; k++) {
    struct kind_run r = {run, ctx, k};
    iters[k] = bench_calibrate(&cal, run_kind, &r);
  }
  for (int i = 0; i < reps; i++)
    for (int k = 0; k < nkinds; k++)
      samples[k][i] = run(ctx, k, iters[k]) / (double)iters[k];
  for (int k = 0; k < nkinds; k++)
    med[k] = bench_median(samples[k], reps);
}

#endif /* ARMCI_BENCH_BUSY_H */
