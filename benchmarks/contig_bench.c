/*
 * contig_bench: latency and bandwidth of contiguous ARMCI Put, Get and Acc
 * between two processes, next to a one-core memcpy of the same size.
 *
 * One source, two builds:
 *   libarmci:  make builds benchmarks/contig_bench
 *   ARMCI-MPI: mpicc -O2 benchmarks/contig_bench.c benchmarks/harness*.c -larmci-openmpi -lm
 * Both are started with `mpirun -np 2`. Rank 0 is the origin, rank 1 the
 * target; further ranks only take part in the collectives.
 *
 * -h lists the options; benchmarks/README.md says what it measures.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#define PAGE 4096
#define GUARD 64
#define GUARD_BYTE 0xA5
#define MAX_SIZES 40
#define MAX_ROWS 8
#define ORIGIN 0
#define TARGET 1

enum kind { K_MEMCPY, K_PUT, K_PUT_FENCE, K_GET, K_ACC };

struct row_def {
  enum kind kind;
  long offset; /* added to the destination address */
  char name[32];
  char what[128];
};

/* One (row, size) cell: iteration counts from the calibration pass and one
 * sample per timed pass, for the blocking [0] and windowed [1] measurement. */
struct cell {
  long iters[2];
  double sec_per_op[2][BENCH_MAX_REPS];
  int window;
};

/* Rows a run can leave out (--ops); memcpy, the reference, always runs. */
enum { OPS_PUT = 1, OPS_PUT_FENCE = 2, OPS_GET = 4, OPS_ACC = 8 };
static const char *const op_choices[] = {"put", "put+fence", "get", "acc", NULL};

struct config {
  long max_size;
  long sizes[MAX_SIZES]; /* --sizes, instead of the powers of 2 up to max_size */
  int nsizes;
  int reps;
  int warmup;
  double rep_seconds;
  int quick;
  long offset;
  int max_window;
  int ops;
  const char *csv_path;
};

static int nproc = 0;

/* The call rather than a builtin: the compiler must not fold or drop copies
 * whose result is never read inside the timed loop. */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;

/* Guards catch a transfer that is the right length but lands at the wrong
 * address, or that writes past its end. */
static void set_guards(unsigned char *dst, size_t n) {
  memset(dst - GUARD, GUARD_BYTE, GUARD);
  memset(dst + n, GUARD_BYTE, GUARD);
}

static void check_guards(const unsigned char *dst, size_t n, const char *what) {
  for (int i = 0; i < GUARD; i++) {
    if (dst[-GUARD + i] != GUARD_BYTE)
      die("%s: byte %d before the destination was overwritten (0x%02x)", what,
           GUARD - i, dst[-GUARD + i]);
    if (dst[n + (size_t)i] != GUARD_BYTE)
      die("%s: byte %d after the destination (%zu bytes) was overwritten (0x%02x)",
           what, i, n, dst[n + (size_t)i]);
  }
}

static double acc_src_value(size_t i) { return (double)(i % 5 + 1); }

/* Room for: alignment slack, a page in front for the leading guard, the
 * largest transfer, the destination offset and the trailing guard. */
static size_t buffer_bytes(const struct config *c) {
  return (size_t)(3 * PAGE) + (size_t)c->max_size + (size_t)c->offset;
}

/* The measured region starts on a page boundary one page into the buffer.
 * For a remote buffer this is computed on the remote address, so that the
 * page offsets the target sees are the ones intended. */
static unsigned char *region_of(void *base) {
  uintptr_t p = ((uintptr_t)base + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
  return (unsigned char *)(p + PAGE);
}

struct phase {
  enum kind kind;
  int nonblocking;
  unsigned char *src;
  unsigned char *dst;
  int bytes;
  int window;
  armci_hdl_t *handles;
  long acc_ops; /* every Acc issued in this phase, to know the expected sum */
};

/* Runs n iterations and returns the elapsed seconds. One iteration is one
 * operation for latency and one window of operations for bandwidth. */
/* Acc in NbPut's shape, for bench_nb_window: doubles, scale 1. */
static double acc_scale = 1.0;
static inline int nb_acc(void *src, void *dst, int bytes, int proc, armci_hdl_t *h) {
  return ARMCI_NbAcc(ARMCI_ACC_DBL, &acc_scale, src, dst, bytes, proc, h);
}

static double run_iters(struct phase *p, long n) {
  const int b = p->bytes, w = p->window;
  double t0 = now();
  switch (p->kind) {
  case K_MEMCPY:
    for (long i = 0; i < n; i++)
      memcpy_fn(p->dst, p->src, (size_t)b);
    break;
  case K_PUT:
  case K_PUT_FENCE:
    if (!p->nonblocking) {
      for (long i = 0; i < n; i++) {
        BENCH_CHECK(ARMCI_Put(p->src, p->dst, b, TARGET), "ARMCI_Put of %d bytes", b);
        if (p->kind == K_PUT_FENCE)
          ARMCI_Fence(TARGET);
      }
    } else {
      for (long i = 0; i < n; i++) {
        bench_nb_window(ARMCI_NbPut, "ARMCI_NbPut", p->src, p->dst, b, TARGET, p->handles, w);
        if (p->kind == K_PUT_FENCE)
          ARMCI_Fence(TARGET);
      }
    }
    /* A put is only done when the target has the data; a repetition that
     * stopped at local completion would time a half-finished job. */
    if (p->kind == K_PUT)
      ARMCI_Fence(TARGET);
    break;
  case K_GET:
    if (!p->nonblocking) {
      for (long i = 0; i < n; i++)
        BENCH_CHECK(ARMCI_Get(p->src, p->dst, b, TARGET), "ARMCI_Get of %d bytes", b);
    } else {
      for (long i = 0; i < n; i++)
        bench_nb_window(ARMCI_NbGet, "ARMCI_NbGet", p->src, p->dst, b, TARGET, p->handles, w);
    }
    break;
  case K_ACC:
    if (!p->nonblocking) {
      for (long i = 0; i < n; i++)
        BENCH_CHECK(ARMCI_Acc(ARMCI_ACC_DBL, &acc_scale, p->src, p->dst, b, TARGET), "ARMCI_Acc of %d bytes", b);
      p->acc_ops += n;
    } else {
      for (long i = 0; i < n; i++)
        bench_nb_window(nb_acc, "ARMCI_NbAcc", p->src, p->dst, b, TARGET, p->handles, w);
      p->acc_ops += n * w;
    }
    ARMCI_Fence(TARGET);
    break;
  }
  return now() - t0;
}

static double run_phase_iters(void *p, long n) { return run_iters(p, n); }

/* The iteration count for one sample of about c->rep_seconds: a doubling
 * probe to an eighth of it (which also warms caches, page mappings and
 * whatever connection state the library sets up on first use), timed three
 * more times, the fastest scaled. */
static long calibrate(struct phase *p, const struct config *c) {
  const struct bench_calibration cal = {c->rep_seconds, 1.0 / 8, 3, 1, 1, 1L << 40};
  return bench_calibrate(&cal, run_phase_iters, p);
}

/* Seconds per operation of one sample. */
static double sample(struct phase *p, long iters) {
  const long ops_per_iter = p->nonblocking ? p->window : 1;
  return run_iters(p, iters) / (double)(iters * ops_per_iter);
}

static int window_for(long size, const struct config *c) {
  /* Enough in flight to hide per-operation overhead for small messages,
   * but a bounded amount of data per window for large ones. */
  long w = (16L << 20) / size;
  if (w < 4)
    w = 4;
  if (w > c->max_window)
    w = c->max_window;
  return (int)w;
}

static const char about[] =
    "Latency and bandwidth of contiguous ARMCI_Put, ARMCI_Get and ARMCI_Acc from rank 0\n"
    "to rank 1, next to a one-core memcpy of the same size measured in the same run.";

static void parse_args(int *argc, char ***argv, struct config *c) {
  const char *q = getenv("CONTIG_BENCH_QUICK");
  int reps_given = 0, time_given = 0;
  *c = (struct config){.max_size = 4L << 20,
                       .reps = 9,
                       .rep_seconds = 0.010,
                       .quick = q && *q && strcmp(q, "0") != 0,
                       .offset = 16,
                       .max_window = 64,
                       .ops = OPS_PUT | OPS_PUT_FENCE | OPS_GET | OPS_ACC};
  const struct bench_opt opts[] = {
      {'q', "quick", OPT_FLAG, &c->quick, 0, 0, NULL,
       "quick run: sizes 8,64,512,4K,64K,1M, 3 samples of 3 ms\n(also CONTIG_BENCH_QUICK=1)", NULL, NULL, 0,
       NULL},
      {'s', "max-size", OPT_BYTES, &c->max_size, 8, 1L << 30, "BYTES",
       "largest message; sizes are the powers of 2 from 8 up to it", NULL, NULL, 0, NULL},
      {0, "sizes", OPT_LIST, c->sizes, 8, 1L << 30, "LIST", "these sizes instead (comma list, K/M suffixes)",
       NULL, &c->nsizes, MAX_SIZES, NULL},
      {'o', "offset", OPT_BYTES, &c->offset, 0, PAGE - GUARD, "BYTES",
       "destination offset of the *_oOFFSET rows; 0 leaves them out", NULL, NULL, 0, NULL},
      BENCH_OPT_REPS('r', &c->reps, &reps_given),
      BENCH_OPT_SAMPLE_MS('t', &c->rep_seconds, &time_given),
      BENCH_OPT_WARMUP(&c->warmup),
      {'w', "window", OPT_INT, &c->max_window, 1, 4096, "N", "most nonblocking operations in one window", NULL,
       NULL, 0, NULL},
      {0, "ops", OPT_SET, &c->ops, 0, 0, "LIST", "which rows besides memcpy: put,put+fence,get,acc", op_choices,
       NULL, 0, NULL},
      BENCH_OPT_CSV('c', &c->csv_path),
      BENCH_OPT_END};
  bench_begin(argc, argv, "contig_bench", opts, about, 2);
  if (c->quick) {
    if (!reps_given)
      c->reps = 3;
    if (!time_given)
      c->rep_seconds = 0.003;
  }
  if (c->nsizes)
    for (int i = 0; i < c->nsizes; i++)
      if (c->sizes[i] > c->max_size)
        c->max_size = c->sizes[i]; /* the buffers are sized by it */
}

static int make_sizes(const struct config *c, long *sizes) {
  int n = 0;
  if (c->nsizes) {
    memcpy(sizes, c->sizes, sizeof(long) * (size_t)c->nsizes);
    n = c->nsizes;
  } else if (c->quick) {
    static const long quick[] = {8, 64, 512, 4096, 65536, 1L << 20};
    for (size_t i = 0; i < sizeof quick / sizeof quick[0]; i++)
      if (quick[i] <= c->max_size)
        sizes[n++] = quick[i];
  } else {
    for (long s = 8; s <= c->max_size && n < MAX_SIZES; s *= 2)
      sizes[n++] = s;
  }
  return n;
}

static int make_rows(const struct config *c, struct row_def *rows) {
  int n = 0;
  rows[n++] = (struct row_def){K_MEMCPY, 0, "memcpy", "one-core memcpy, page-aligned source and destination"};
  if (c->offset) {
    rows[n] = (struct row_def){K_MEMCPY, c->offset, "", ""};
    snprintf(rows[n].what, sizeof rows[n].what,
             "one-core memcpy, destination %ld B past a page boundary, source aligned", c->offset);
    n++;
  }
  if (c->ops & OPS_PUT)
    rows[n++] = (struct row_def){K_PUT, 0, "put", "lat: ARMCI_Put, one ARMCI_Fence per sample | bw: windows of NbPut+Wait, one ARMCI_Fence per sample"};
  if (c->ops & OPS_PUT_FENCE)
    rows[n++] = (struct row_def){K_PUT_FENCE, 0, "put+fence", "lat: ARMCI_Put + ARMCI_Fence each | bw: windows of NbPut+Wait, then ARMCI_Fence"};
  if (c->ops & OPS_GET)
    rows[n++] = (struct row_def){K_GET, 0, "get", "lat: ARMCI_Get | bw: windows of NbGet+Wait"};
  if (c->ops & OPS_ACC)
    rows[n++] = (struct row_def){K_ACC, 0, "acc", "lat: ARMCI_Acc(ARMCI_ACC_DBL, scale 1), one ARMCI_Fence per sample | bw: windows of NbAcc+Wait, one ARMCI_Fence per sample"};
  if (c->offset && (c->ops & OPS_PUT)) {
    rows[n] = (struct row_def){K_PUT, c->offset, "", ""};
    snprintf(rows[n].what, sizeof rows[n].what,
             "as put, the remote destination %ld B past a page boundary", c->offset);
    n++;
  }
  if (c->offset && (c->ops & OPS_GET)) {
    rows[n] = (struct row_def){K_GET, c->offset, "", ""};
    snprintf(rows[n].what, sizeof rows[n].what,
             "as get, the local destination %ld B past a page boundary", c->offset);
    n++;
  }
  for (int i = 0; i < n; i++)
    if (rows[i].name[0] == '\0')
      snprintf(rows[i].name, sizeof rows[i].name, "%s_o%ld",
               rows[i].kind == K_MEMCPY ? "memcpy" : rows[i].kind == K_PUT ? "put" : "get",
               rows[i].offset);
  return n;
}

struct bench {
  struct config cfg;
  long sizes[MAX_SIZES];
  int nsizes;
  struct row_def rows[MAX_ROWS];
  int nrows;
  struct cell cells[MAX_ROWS][MAX_SIZES];
  void **bases;          /* ARMCI_Malloc bases of every rank */
  unsigned char *remote; /* measured region in the target's buffer */
  unsigned char *mine;   /* measured region in this rank's ARMCI_Malloc buffer */
  unsigned char *src, *dst; /* origin's local regions (ARMCI_Malloc_local) */
  armci_hdl_t *handles;
  unsigned seed;
};

/* The memcpy row that matches a row's destination alignment. */
static int memcpy_row_for(const struct bench *b, int ri) { return b->rows[ri].offset ? 1 : 0; }

/* One cell of one pass; collective. Pass 0 calibrates, pass k stores sample
 * k-1. Every pass sets the destination up afresh and checks it afterwards, so
 * a wrong result is caught whichever pass produces it. */
static void run_phase(struct bench *b, int ri, int si, int pass) {
  const struct row_def *row = &b->rows[ri];
  struct cell *cell = &b->cells[ri][si];
  const int bytes = (int)b->sizes[si];
  const size_t n = (size_t)bytes;
  const long off = row->offset;
  const unsigned seed = ++b->seed;
  unsigned char *const src = b->src, *const dst = b->dst, *const mine = b->mine;

  struct phase ph = {row->kind, 0, NULL, NULL, bytes, window_for(bytes, &b->cfg), b->handles, 0};
  cell->window = row->kind == K_MEMCPY ? 0 : ph.window;

  /* Every destination gets guards and data that differs from what the
   * phase must leave there. */
  if (me == ORIGIN) {
    switch (row->kind) {
    case K_MEMCPY:
      fill_pattern(src, n, seed, 0);
      fill_pattern(dst + off, n, seed, 1);
      set_guards(dst + off, n);
      ph.src = src;
      ph.dst = dst + off;
      break;
    case K_PUT:
    case K_PUT_FENCE:
      fill_pattern(src, n, seed, 0);
      ph.src = src;
      ph.dst = b->remote + off;
      break;
    case K_GET:
      fill_pattern(dst + off, n, seed, 1);
      set_guards(dst + off, n);
      ph.src = b->remote;
      ph.dst = dst + off;
      break;
    case K_ACC:
      for (size_t i = 0; i < n / sizeof(double); i++)
        ((double *)src)[i] = acc_src_value(i);
      ph.src = src;
      ph.dst = b->remote;
      break;
    }
  } else if (me == TARGET && row->kind != K_MEMCPY) {
    access_begin(b->bases[me]);
    switch (row->kind) {
    case K_PUT:
    case K_PUT_FENCE:
      fill_pattern(mine + off, n, seed, 1);
      set_guards(mine + off, n);
      break;
    case K_GET:
      fill_pattern(mine, n, seed, 0);
      break;
    case K_ACC:
      memset(mine, 0, n);
      set_guards(mine, n);
      break;
    default:
      break;
    }
    access_end(b->bases[me]);
  }
  ARMCI_Barrier();

  if (me == ORIGIN) {
    const int kinds = row->kind == K_MEMCPY ? 1 : 2;
    for (int nb = 0; nb < kinds; nb++) {
      ph.nonblocking = nb;
      if (pass == 0)
        cell->iters[nb] = calibrate(&ph, &b->cfg);
      else
        cell->sec_per_op[nb][pass - 1] = sample(&ph, cell->iters[nb]);
    }
    if (row->kind == K_ACC) {
      /* The expected sum depends on how many Acc calls ran, which only the
       * origin knows, so the origin reads the result back. */
      ARMCI_Fence(TARGET);
      BENCH_CHECK(ARMCI_Get(b->remote, dst, bytes, TARGET), "ARMCI_Get (acc check) of %d bytes", bytes);
      const double *got = (const double *)dst;
      for (size_t i = 0; i < n / sizeof(double); i++) {
        double want = (double)ph.acc_ops * acc_src_value(i);
        if (got[i] != want)
          die("acc %d bytes: element %zu is %.17g, expected %.17g after %ld Acc calls", bytes,
               i, got[i], want, ph.acc_ops);
      }
    }
  }
  ARMCI_Barrier();

  char what[64];
  snprintf(what, sizeof what, "%s %d bytes", row->name, bytes);
  if (me == ORIGIN && (row->kind == K_MEMCPY || row->kind == K_GET)) {
    long bad = find_pattern_mismatch(dst + off, n, seed);
    if (bad >= 0)
      die("%s: wrong data at byte %ld of the destination", what, bad);
    check_guards(dst + off, n, what);
  } else if (me == TARGET && row->kind != K_MEMCPY) {
    access_begin(b->bases[me]);
    if (row->kind == K_PUT || row->kind == K_PUT_FENCE) {
      long bad = find_pattern_mismatch(mine + off, n, seed);
      if (bad >= 0)
        die("%s: wrong data at byte %ld of the target buffer", what, bad);
      check_guards(mine + off, n, what);
    } else if (row->kind == K_ACC) {
      check_guards(mine, n, what);
    } else if (row->kind == K_GET) {
      long bad = find_pattern_mismatch(mine, n, seed);
      if (bad >= 0)
        die("%s: the get source changed at byte %ld", what, bad);
    }
    access_end(b->bases[me]);
  }
}

/* Seconds per operation of a cell's blocking [0] or windowed [1]
 * measurement, over its samples. */
static struct bench_stats cell_stats(const struct bench *b, int ri, int si, int nb) {
  return bench_stats(b->cells[ri][si].sec_per_op[nb], b->cfg.reps);
}

/* Bandwidth (1e6 B/s) of the windowed measurement (memcpy: of the copies). */
static struct bench_stats cell_bw(const struct bench *b, int ri, int si) {
  const struct bench_stats t = cell_stats(b, ri, si, b->rows[ri].kind == K_MEMCPY ? 0 : 1);
  const double mb = (double)b->sizes[si] * 1e-6;
  return (struct bench_stats){mb / t.median, mb / t.q3, mb / t.q1, mb / t.max, mb / t.min};
}

static const struct bench_col columns[] = {
    {NULL, "op", COL_STR, 0, 0, 0},
    {"size", "size", COL_LONG, 10, 0, 0},
    {"lat_us", "lat_us_median", COL_DOUBLE, 12, 3, 4},
    {"bw_MB/s", "bw_MBps_median", COL_DOUBLE, 12, 1, 2},
    {"window", NULL, COL_DOUBLE, 7, 0, 0},
    {"memcpy_MB/s", "memcpy_bw_MBps", COL_DOUBLE, 13, 1, 2},
    {"bw/memcpy", "ratio_to_memcpy", COL_DOUBLE, 10, 3, 4},
    {NULL, "lat_us_q1", COL_DOUBLE, 0, 0, 4},
    {NULL, "lat_us_q3", COL_DOUBLE, 0, 0, 4},
    {NULL, "bw_MBps_q1", COL_DOUBLE, 0, 0, 2},
    {NULL, "bw_MBps_q3", COL_DOUBLE, 0, 0, 2},
};
static const struct bench_table table = BENCH_TABLE(columns);

/* One table per op; every row also goes to the CSV. */
static void print_results(const struct bench *b) {
  for (int ri = 0; ri < b->nrows; ri++) {
    const struct row_def *row = &b->rows[ri];
    printf("\n== %s: %s\n", row->name, row->what);
    bench_table_header(&table);
    for (int si = 0; si < b->nsizes; si++) {
      const struct bench_stats lat = cell_stats(b, ri, si, 0), bw = cell_bw(b, ri, si);
      const double mbw = cell_bw(b, memcpy_row_for(b, ri), si).median;
      bench_row(&table, row->name, b->sizes[si], lat.median * 1e6, bw.median,
                row->kind == K_MEMCPY ? NAN : (double)b->cells[ri][si].window, mbw, bw.median / mbw,
                lat.q1 * 1e6, lat.q3 * 1e6, bw.q1, bw.q3);
    }
  }
}

static void one_pass(void *ctx, int pass) {
  struct bench *b = ctx;
  for (int ri = 0; ri < b->nrows; ri++)
    for (int si = 0; si < b->nsizes; si++)
      run_phase(b, ri, si, pass);
}

int main(int argc, char **argv) {
  static struct bench bench;
  struct bench *b = &bench;
  parse_args(&argc, &argv, &b->cfg);
  nproc = armci_msg_nproc();
  const struct config *cfg = &b->cfg;
  b->nsizes = make_sizes(cfg, b->sizes);
  b->nrows = make_rows(cfg, b->rows);

  const size_t buf_bytes = buffer_bytes(cfg);
  b->handles = calloc((size_t)cfg->max_window, sizeof *b->handles);
  if (!b->handles)
    die("out of memory");
  b->bases = bench_malloc_all(buf_bytes, 0);
  b->remote = region_of(b->bases[TARGET]);
  b->mine = me <= TARGET ? region_of(b->bases[me]) : NULL;

  void *src_base = NULL, *dst_base = NULL;
  if (me == ORIGIN) {
    src_base = bench_malloc_local(buf_bytes);
    dst_base = bench_malloc_local(buf_bytes);
    b->src = region_of(src_base);
    b->dst = region_of(dst_base);
    memset(src_base, 0, buf_bytes);
    memset(dst_base, 0, buf_bytes);
  }

  struct bench_run run;
  bench_report_open(&run, cfg->csv_path, &table, cfg->reps,
                    "nproc=%d binding=%s reps=%d rep_ms=%.1f max_size=%ld offset=%ld max_window=%d quick=%d", nproc,
                    bench_binding(), cfg->reps, cfg->rep_seconds * 1e3, cfg->max_size, cfg->offset, cfg->max_window,
                    cfg->quick);
  bench_passes(cfg->reps, cfg->warmup, one_pass, b);

  if (me == ORIGIN) {
    bench_report_table(&run, NULL, NULL,
                       "# lat: median time per blocking operation; bw: median bandwidth (1e6 B/s) of\n"
                       "# windows of nonblocking operations; %d samples each, all data checked\n",
                       cfg->reps);
    print_results(b);
    bench_csv_finish();
    ARMCI_Free_local(src_base);
    ARMCI_Free_local(dst_base);
  }

  ARMCI_Barrier();
  bench_free_all(b->bases);
  free(b->handles);
  bench_end();
  return 0;
}
