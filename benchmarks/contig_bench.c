/*
 * contig_bench: latency and bandwidth of contiguous ARMCI Put, Get and Acc
 * between two processes, next to a one-core memcpy of the same size.
 *
 * One source, two builds:
 *   libarmci:  gcc -O2 -I<src>/include contig_bench.c -L<build>/.libs -larmci
 *   ARMCI-MPI: mpicc -O2 contig_bench.c -larmci-openmpi
 * Both are started with `mpirun -np 2`. Rank 0 is the origin, rank 1 the
 * target; further ranks only take part in the collectives.
 *
 * See benchmarks/README.md for the options and the meaning of each column.
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "contig_bench"
#include "bench_common.h"

#define PAGE 4096
#define GUARD 64
#define GUARD_BYTE 0xA5
#define MAX_REPS 101
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
  double sec_per_op[2][MAX_REPS];
  int window;
};

struct config {
  long max_size;
  int reps;
  double rep_seconds;
  int quick;
  long offset;
  int max_window;
  const char *csv_path;
};

static int nproc = 0;

/* The call rather than a builtin: the compiler must not fold or drop copies
 * whose result is never read inside the timed loop. */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;

/* The 1-minute load average, or -1 where /proc is not there. */
static double load_average(void) {
  double v = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &v) != 1)
      v = -1;
    fclose(f);
  }
  return v;
}

/* A per-phase pattern, so that data left over from an earlier phase (an
 * operation that silently did nothing) cannot pass the check. */
static unsigned char pattern_byte(size_t i, unsigned seed) {
  uint32_t x = (uint32_t)i * 2654435761u ^ (seed * 0x9E3779B9u + 0x7F4A7C15u);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (unsigned char)x;
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed, int inverted) {
  unsigned char mask = inverted ? 0xFF : 0x00;
  for (size_t i = 0; i < n; i++)
    p[i] = pattern_byte(i, seed) ^ mask;
}

static long find_pattern_mismatch(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern_byte(i, seed))
      return (long)i;
  return -1;
}

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

/* ARMCI-MPI requires an exclusive epoch around direct loads and stores to
 * memory from ARMCI_Malloc; libarmci does not. */
static void local_access_begin(void *base) {
#ifdef ARMCI_MPI
  ARMCI_Access_begin(base);
#else
  (void)base;
#endif
}

static void local_access_end(void *base) {
#ifdef ARMCI_MPI
  ARMCI_Access_end(base);
#else
  (void)base;
#endif
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

static void check_rc(int rc, const char *call, int bytes) {
  if (rc != 0)
    die("%s of %d bytes returned %d", call, bytes, rc);
}

/* Runs n iterations and returns the elapsed seconds. One iteration is one
 * operation for latency and one window of operations for bandwidth. */
static double run_iters(struct phase *p, long n) {
  static double scale = 1.0;
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
        check_rc(ARMCI_Put(p->src, p->dst, b, TARGET), "ARMCI_Put", b);
        if (p->kind == K_PUT_FENCE)
          ARMCI_Fence(TARGET);
      }
    } else {
      for (long i = 0; i < n; i++) {
        for (int k = 0; k < w; k++) {
          ARMCI_INIT_HANDLE(&p->handles[k]);
          check_rc(ARMCI_NbPut(p->src, p->dst, b, TARGET, &p->handles[k]), "ARMCI_NbPut", b);
        }
        for (int k = 0; k < w; k++)
          check_rc(ARMCI_Wait(&p->handles[k]), "ARMCI_Wait(NbPut)", b);
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
        check_rc(ARMCI_Get(p->src, p->dst, b, TARGET), "ARMCI_Get", b);
    } else {
      for (long i = 0; i < n; i++) {
        for (int k = 0; k < w; k++) {
          ARMCI_INIT_HANDLE(&p->handles[k]);
          check_rc(ARMCI_NbGet(p->src, p->dst, b, TARGET, &p->handles[k]), "ARMCI_NbGet", b);
        }
        for (int k = 0; k < w; k++)
          check_rc(ARMCI_Wait(&p->handles[k]), "ARMCI_Wait(NbGet)", b);
      }
    }
    break;
  case K_ACC:
    if (!p->nonblocking) {
      for (long i = 0; i < n; i++)
        check_rc(ARMCI_Acc(ARMCI_ACC_DBL, &scale, p->src, p->dst, b, TARGET), "ARMCI_Acc", b);
      p->acc_ops += n;
    } else {
      for (long i = 0; i < n; i++) {
        for (int k = 0; k < w; k++) {
          ARMCI_INIT_HANDLE(&p->handles[k]);
          check_rc(ARMCI_NbAcc(ARMCI_ACC_DBL, &scale, p->src, p->dst, b, TARGET, &p->handles[k]),
                   "ARMCI_NbAcc", b);
        }
        for (int k = 0; k < w; k++)
          check_rc(ARMCI_Wait(&p->handles[k]), "ARMCI_Wait(NbAcc)", b);
      }
      p->acc_ops += n * w;
    }
    ARMCI_Fence(TARGET);
    break;
  }
  return now() - t0;
}

/* The iteration count for one sample of about c->rep_seconds. A doubling
 * probe finds a count that runs for a measurable time; it also warms caches,
 * page mappings and whatever connection state the library sets up on first
 * use. The count is then timed a few more times and the fastest run is used:
 * one run that was preempted would otherwise shrink every sample of the cell
 * for the rest of the benchmark. */
static long calibrate(struct phase *p, const struct config *c) {
  long n = 1;
  double t;
  for (;;) {
    t = run_iters(p, n);
    if (t >= c->rep_seconds / 8 || n >= (1L << 40))
      break;
    n *= 2;
  }
  for (int k = 0; k < 3; k++) {
    double again = run_iters(p, n);
    if (again < t)
      t = again;
  }
  long iters = t > 0 ? (long)((double)n * c->rep_seconds / t) : n;
  return iters < 1 ? 1 : iters;
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

static long parse_size(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || v <= 0)
    return -1;
  if (*end == 'k' || *end == 'K')
    v <<= 10, end++;
  else if (*end == 'm' || *end == 'M')
    v <<= 20, end++;
  if (*end == 'i' || *end == 'B' || *end == 'b')
    end++;
  if (*end == 'B')
    end++;
  return *end ? -1 : v;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np 2 contig_bench [-q] [-s MAXSIZE] [-o OFFSET] [-r REPS]\n"
          "                                 [-t REP_MS] [-w WINDOW] [-c FILE.csv]\n"
          "  -q          quick run: 6 sizes up to 1M, 3 samples of 3 ms\n"
          "              (also CONTIG_BENCH_QUICK=1 in the environment)\n"
          "  -s MAXSIZE  largest message, e.g. 65536, 64K, 1M (default 4M)\n"
          "  -o OFFSET   destination offset of the *_oOFFSET rows; 0 turns\n"
          "              them off (default 16)\n"
          "  -r REPS     samples per measurement, each from its own pass over\n"
          "              all ops and sizes; the median is reported (default 9,\n"
          "              at most %d)\n"
          "  -t REP_MS   target duration of one sample in ms (default 10)\n"
          "  -w WINDOW   most nonblocking operations in flight (default 64)\n"
          "  -c FILE     write the CSV there instead of after '# CSV' on stdout\n",
          MAX_REPS);
}

/* Returns 0 when the run should go on, otherwise the exit code. */
static int parse_args(int argc, char **argv, struct config *c) {
  const char *q = getenv("CONTIG_BENCH_QUICK");
  c->max_size = 4L << 20;
  c->reps = 9;
  c->rep_seconds = 0.010;
  c->quick = q && *q && strcmp(q, "0") != 0;
  c->offset = 16;
  c->max_window = 64;
  c->csv_path = NULL;
  int reps_given = 0, time_given = 0, opt;
  opterr = 0;
  while ((opt = getopt(argc, argv, "qs:o:r:t:w:c:h")) != -1) {
    long v;
    switch (opt) {
    case 'q':
      c->quick = 1;
      break;
    case 's':
      v = parse_size(optarg);
      if (v < 8 || v > (1L << 30)) {
        if (me == 0)
          fprintf(stderr, "contig_bench: -s needs a size from 8 to 1G, got '%s'\n", optarg);
        return 2;
      }
      c->max_size = v;
      break;
    case 'o':
      v = parse_size(optarg);
      if (strcmp(optarg, "0") == 0)
        v = 0;
      if (v < 0 || v > PAGE - GUARD) {
        if (me == 0)
          fprintf(stderr, "contig_bench: -o needs an offset from 0 to %d, got '%s'\n",
                  PAGE - GUARD, optarg);
        return 2;
      }
      c->offset = v;
      break;
    case 'r':
      v = strtol(optarg, NULL, 10);
      if (v < 1 || v > MAX_REPS) {
        if (me == 0)
          fprintf(stderr, "contig_bench: -r needs 1 to %d, got '%s'\n", MAX_REPS, optarg);
        return 2;
      }
      c->reps = (int)v;
      reps_given = 1;
      break;
    case 't': {
      double ms = strtod(optarg, NULL);
      if (!(ms > 0 && ms <= 10000)) {
        if (me == 0)
          fprintf(stderr, "contig_bench: -t needs milliseconds in (0, 10000], got '%s'\n",
                  optarg);
        return 2;
      }
      c->rep_seconds = ms * 1e-3;
      time_given = 1;
      break;
    }
    case 'w':
      v = strtol(optarg, NULL, 10);
      if (v < 1 || v > 4096) {
        if (me == 0)
          fprintf(stderr, "contig_bench: -w needs 1 to 4096, got '%s'\n", optarg);
        return 2;
      }
      c->max_window = (int)v;
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
        fprintf(stderr, "contig_bench: unknown option or missing value '-%c'\n", optopt);
        usage(stderr);
      }
      return 2;
    }
  }
  if (optind < argc) {
    if (me == 0) {
      fprintf(stderr, "contig_bench: unexpected argument '%s'\n", argv[optind]);
      usage(stderr);
    }
    return 2;
  }
  if (c->quick) {
    if (!reps_given)
      c->reps = 3;
    if (!time_given)
      c->rep_seconds = 0.003;
  }
  return 0;
}

static int make_sizes(const struct config *c, long *sizes) {
  int n = 0;
  if (c->quick) {
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
  rows[n++] = (struct row_def){K_PUT, 0, "put", "lat: ARMCI_Put, one ARMCI_Fence per sample | bw: windows of NbPut+Wait, one ARMCI_Fence per sample"};
  rows[n++] = (struct row_def){K_PUT_FENCE, 0, "put+fence", "lat: ARMCI_Put + ARMCI_Fence each | bw: windows of NbPut+Wait, then ARMCI_Fence"};
  rows[n++] = (struct row_def){K_GET, 0, "get", "lat: ARMCI_Get | bw: windows of NbGet+Wait"};
  rows[n++] = (struct row_def){K_ACC, 0, "acc", "lat: ARMCI_Acc(ARMCI_ACC_DBL, scale 1), one ARMCI_Fence per sample | bw: windows of NbAcc+Wait, one ARMCI_Fence per sample"};
  if (c->offset) {
    rows[n] = (struct row_def){K_PUT, c->offset, "", ""};
    snprintf(rows[n].what, sizeof rows[n].what,
             "as put, the remote destination %ld B past a page boundary", c->offset);
    n++;
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
    local_access_begin(b->bases[me]);
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
    local_access_end(b->bases[me]);
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
      check_rc(ARMCI_Get(b->remote, dst, bytes, TARGET), "ARMCI_Get (acc check)", bytes);
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
    local_access_begin(b->bases[me]);
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
    local_access_end(b->bases[me]);
  }
}

/* Median seconds per operation of a cell's blocking [0] or windowed [1]
 * measurement. */
static double cell_median(const struct bench *b, int ri, int si, int nb) {
  double v[MAX_REPS];
  memcpy(v, b->cells[ri][si].sec_per_op[nb], sizeof(double) * (size_t)b->cfg.reps);
  return median(v, b->cfg.reps);
}

static double cell_bw(const struct bench *b, int ri, int si) {
  const int nb = b->rows[ri].kind == K_MEMCPY ? 0 : 1;
  return (double)b->sizes[si] / cell_median(b, ri, si, nb) * 1e-6;
}

static void print_tables(const struct bench *b) {
  for (int ri = 0; ri < b->nrows; ri++) {
    const struct row_def *row = &b->rows[ri];
    printf("\n== %s: %s\n", row->name, row->what);
    if (row->kind == K_MEMCPY)
      printf("%10s %12s %12s\n", "size", "time_us", "bw_MB/s");
    else
      printf("%10s %12s %12s %7s %13s %10s\n", "size", "lat_us", "bw_MB/s", "window",
             "memcpy_MB/s", "bw/memcpy");
    for (int si = 0; si < b->nsizes; si++) {
      const double lat_us = cell_median(b, ri, si, 0) * 1e6, bw = cell_bw(b, ri, si);
      if (row->kind == K_MEMCPY) {
        printf("%10ld %12.3f %12.1f\n", b->sizes[si], lat_us, bw);
      } else {
        const double mbw = cell_bw(b, memcpy_row_for(b, ri), si);
        printf("%10ld %12.3f %12.1f %7d %13.1f %10.3f\n", b->sizes[si], lat_us, bw,
               b->cells[ri][si].window, mbw, bw / mbw);
      }
    }
  }
  fflush(stdout);
}

static void write_csv(const struct bench *b, FILE *csv) {
  fprintf(csv, "impl,op,size,lat_us_median,bw_MBps_median,memcpy_bw_MBps,ratio_to_memcpy\n");
  for (int ri = 0; ri < b->nrows; ri++)
    for (int si = 0; si < b->nsizes; si++) {
      const double bw = cell_bw(b, ri, si), mbw = cell_bw(b, memcpy_row_for(b, ri), si);
      fprintf(csv, "%s,%s,%ld,%.4f,%.2f,%.2f,%.4f\n", IMPL_NAME, b->rows[ri].name,
              b->sizes[si], cell_median(b, ri, si, 0) * 1e6, bw, mbw, bw / mbw);
    }
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv);
  nproc = armci_msg_nproc();

  static struct bench bench;
  struct bench *b = &bench;
  int code = parse_args(argc, argv, &b->cfg);
  if (code == 0 && nproc < 2) {
    if (me == 0)
      fprintf(stderr, "contig_bench: needs 2 processes (mpirun -np 2), got %d\n", nproc);
    code = 2;
  }
  if (code != 0) {
    bench_end();
    return code == 1 ? 0 : code;
  }
  const struct config *cfg = &b->cfg;
  b->nsizes = make_sizes(cfg, b->sizes);
  b->nrows = make_rows(cfg, b->rows);

  const size_t buf_bytes = buffer_bytes(cfg);
  b->bases = calloc((size_t)nproc, sizeof *b->bases);
  b->handles = calloc((size_t)cfg->max_window, sizeof *b->handles);
  if (!b->bases || !b->handles)
    die("out of memory");
  if (ARMCI_Malloc(b->bases, (armci_size_t)buf_bytes) != 0)
    die("ARMCI_Malloc of %zu bytes failed", buf_bytes);
  if (!b->bases[TARGET])
    die("ARMCI_Malloc gave no address for rank %d", TARGET);
  b->remote = region_of(b->bases[TARGET]);
  b->mine = me <= TARGET ? region_of(b->bases[me]) : NULL;

  void *src_base = NULL, *dst_base = NULL;
  FILE *csv = NULL;
  if (me == ORIGIN) {
    src_base = ARMCI_Malloc_local((armci_size_t)buf_bytes);
    dst_base = ARMCI_Malloc_local((armci_size_t)buf_bytes);
    if (!src_base || !dst_base)
      die("ARMCI_Malloc_local of %zu bytes failed", buf_bytes);
    b->src = region_of(src_base);
    b->dst = region_of(dst_base);
    memset(src_base, 0, buf_bytes);
    memset(dst_base, 0, buf_bytes);
    /* Open the CSV now so that a bad path fails before the long part. */
    if (cfg->csv_path && !(csv = fopen(cfg->csv_path, "w")))
      die("cannot write %s: %s", cfg->csv_path, strerror(errno));
    printf("# contig_bench impl=%s nproc=%d reps=%d rep_ms=%.1f max_size=%ld offset=%ld "
           "max_window=%d quick=%d\n",
           IMPL_NAME, nproc, cfg->reps, cfg->rep_seconds * 1e3, cfg->max_size, cfg->offset,
           cfg->max_window, cfg->quick);
    fflush(stdout);
  }

  /* Each pass visits every cell once, and a cell's samples come from
   * different passes: on a shared, noisy machine a burst of load then spoils
   * one sample of many cells (which the median drops) instead of every
   * sample of a few cells. */
  const double load_before = load_average();
  const double t_start = now(), cpu_start = cpu_now();
  for (int pass = 0; pass <= cfg->reps; pass++) {
    for (int ri = 0; ri < b->nrows; ri++)
      for (int si = 0; si < b->nsizes; si++)
        run_phase(b, ri, si, pass);
    if (me == ORIGIN) {
      fprintf(stderr, "# contig_bench: %s %d/%d done, %.1f s\n",
              pass ? "pass" : "calibration", pass, cfg->reps, now() - t_start);
      fflush(stderr);
    }
  }

  if (me == ORIGIN) {
    const double wall = now() - t_start, cpu = cpu_now() - cpu_start;
    /* Numbers to judge a run by: a busy-polling library keeps rank 0 on the
     * CPU all the time, so a share well below 1 means other load took the
     * core for part of the run (a library that sleeps in waits lowers it
     * too). */
    printf("# run: %.1f s; rank 0 cpu/wall %.2f; load average %.2f before, %.2f after\n", wall,
           wall > 0 ? cpu / wall : 0.0, load_before, load_average());
    printf("# lat: median time per blocking operation; bw: median bandwidth (1e6 B/s) of\n"
           "# windows of nonblocking operations; %d samples each, all data checked\n",
           cfg->reps);
    print_tables(b);
    if (csv) {
      write_csv(b, csv);
      if (fclose(csv) != 0)
        die("cannot write %s", cfg->csv_path);
      printf("\n# CSV written to %s\n", cfg->csv_path);
    } else {
      printf("\n# CSV\n");
      write_csv(b, stdout);
    }
    fflush(stdout);
    ARMCI_Free_local(src_base);
    ARMCI_Free_local(dst_base);
  }

  ARMCI_Barrier();
  ARMCI_Free(b->bases[me]);
  free(b->bases);
  free(b->handles);
  bench_end();
  return 0;
}
