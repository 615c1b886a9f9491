/* The benchmark harness (see harness.h). Compiled into every benchmark, for
 * libarmci by make and for ARMCI-MPI by the compare scripts (mpicc), with
 * harness_options.c. */
#define _GNU_SOURCE /* sched_getaffinity, open_memstream */

#include "harness.h"

#ifdef ARMCI_MPI
#include <mpi.h>
#endif

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <unistd.h>

int me = -1;
const char *bench_program = "benchmark";

/* ------------------------------------------------------------ lifecycle */

void bench_start(int *argc, char ***argv, const char *program) {
  bench_program = program;
#ifdef ARMCI_MPI
  MPI_Init(argc, argv);
#else
  (void)argc;
  (void)argv;
#endif
  ARMCI_Init();
  me = armci_msg_me();
}

void bench_end(void) {
  ARMCI_Finalize();
#ifdef ARMCI_MPI
  MPI_Finalize();
#endif
}

static __attribute__((noreturn)) void die_message(const char *msg) {
  fprintf(stderr, "%s (rank %d): %s\n", bench_program, me, msg);
  fflush(stderr);
  fflush(stdout);
  ARMCI_Error((char *)msg, 1);
  exit(1);
}

void die(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  die_message(msg);
}

void bench_failed(int rc, const char *fmt, ...) {
  char what[400], msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(msg, sizeof msg, "%s returned %d", what, rc);
  die_message(msg);
}

void bench_need_procs(int n) {
  const int np = armci_msg_nproc();
  if (np >= n)
    return;
  if (me == 0)
    fprintf(stderr, "%s: needs %d processes (mpirun -np %d), got %d\n", bench_program, n, n, np);
  bench_end();
  exit(2);
}

const char *transfer_path(void) {
#ifdef ARMCI_MPI
  return "mpi";
#else
  return ARMCI_Uses_shm() && ARMCI_Same_node(1 % armci_msg_nproc()) ? "shm" : "network";
#endif
}

const char *atomics_mode(void) {
#ifdef ARMCI_MPI
  return "mpi";
#else
  int all_local = ARMCI_Uses_shm();
  for (int r = 0; r < armci_msg_nproc(); r++)
    all_local &= ARMCI_Same_node(r);
  return all_local ? "cpu-atomics" : "network";
#endif
}

const char *strided_protocol(void) {
#ifdef ARMCI_MPI
  return "armci-mpi";
#else
  const char *p = getenv("ARMCI_STRIDED_PROTOCOL");
  return (p && *p) ? p : "auto";
#endif
}

const char *bench_binding(void) {
  static char buf[32];
  cpu_set_t set;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return "unknown";
  const int mine = CPU_COUNT(&set);
  if (mine == 1)
    return "core";
  if (mine >= online)
    return "none";
  snprintf(buf, sizeof buf, "%d-cpus", mine);
  return buf;
}

void print_settings(FILE *f) {
  static const char *names[] = {"ARMCI_SHM",        "ARMCI_NETWORK",          "ARMCI_HELPER",
                                "ARMCI_PROTOCOL",   "ARMCI_STRIDED_PROTOCOL", "ARMCI_PROGRESS_THREAD",
                                "ARMCI_VNODE_SIZE", "UCX_TLS"};
  fprintf(f, "# settings:");
  int any = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (v) {
      fprintf(f, " %s=%s", names[i], v);
      any = 1;
    }
  }
  fprintf(f, "%s\n", any ? "" : " (library defaults)");
}

/* ---------------------------------------------------------------- clocks */

static double clock_seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cpu_now(void) { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }
double thread_cpu_now(void) { return clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

double load_average(void) {
  double v = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &v) != 1)
      v = -1;
    fclose(f);
  }
  return v;
}

void bench_run_begin(struct bench_run *r) {
  r->load0 = load_average();
  r->wall0 = now();
  r->cpu0 = cpu_now();
}

void bench_run_print(const struct bench_run *r, const char *extra_fmt, ...) {
  const double wall = now() - r->wall0, cpu = cpu_now() - r->cpu0;
  char extra[256] = "";
  if (extra_fmt) {
    va_list ap;
    va_start(ap, extra_fmt);
    vsnprintf(extra, sizeof extra, extra_fmt, ap);
    va_end(ap);
  }
  printf("# run: %.1f s; rank 0 cpu/wall %.2f%s; load average %.2f before, %.2f after\n", wall,
         wall > 0 ? cpu / wall : 0.0, extra, r->load0, load_average());
}

long bench_calibrate(const struct bench_calibration *c, double (*run)(void *ctx, long n), void *ctx) {
  const long step = c->step > 0 ? c->step : 1;
  long n = step;
  double t;
  for (;;) {
    t = run(ctx, n);
    if (t >= c->sample_s * c->probe_frac || n >= c->max)
      break;
    n *= 2;
  }
  for (int k = 0; k < c->retimes; k++) {
    double again = run(ctx, n);
    if (again < t)
      t = again;
  }
  if (!c->rescale)
    return n;
  long iters = (long)((double)n * c->sample_s / (t > 0 ? t : 1e-9));
  iters = (iters + step - 1) / step * step;
  return iters < step ? step : iters;
}

static void progress(const char *what, int done, int of, double t0) {
  if (me != 0)
    return;
  fprintf(stderr, "# %s: %s %d/%d done, %.1f s\n", bench_program, what, done, of, now() - t0);
  fflush(stderr);
}

void bench_passes(int reps, int warmup, void (*pass_fn)(void *ctx, int pass), void *ctx) {
  const double t0 = now();
  pass_fn(ctx, 0);
  progress("calibration", 0, reps, t0);
  for (int w = 1; w <= warmup; w++) {
    pass_fn(ctx, 1);
    progress("warm-up", w, warmup, t0);
  }
  for (int pass = 1; pass <= reps; pass++) {
    pass_fn(ctx, pass);
    progress("pass", pass, reps, t0);
  }
}

/* ------------------------------------------------------------ statistics */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The value at fraction p of the sorted samples, between ranks linearly:
 * p = 0.5 is the usual median (the mean of the middle two for even n). */
static double at_fraction(const double *sorted, int n, double p) {
  const double pos = p * (n - 1);
  const int lo = (int)pos;
  const double frac = pos - lo;
  return lo + 1 < n ? sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]) : sorted[lo];
}

struct bench_stats bench_stats(const double *v, int n) {
  struct bench_stats s = {NAN, NAN, NAN, NAN, NAN};
  if (n < 1)
    return s;
  if (n > BENCH_MAX_REPS)
    die("bench_stats: %d samples, at most %d", n, BENCH_MAX_REPS);
  double sorted[BENCH_MAX_REPS];
  memcpy(sorted, v, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof(double), cmp_double);
  s.median = at_fraction(sorted, n, 0.5);
  s.q1 = at_fraction(sorted, n, 0.25);
  s.q3 = at_fraction(sorted, n, 0.75);
  s.min = sorted[0];
  s.max = sorted[n - 1];
  return s;
}

double bench_median(const double *v, int n) { return bench_stats(v, n).median; }

/* ------------------------------------------------------------------ data */

void fill_pattern(unsigned char *p, size_t n, unsigned seed, int inverted) {
  const unsigned char mask = inverted ? 0xFF : 0x00;
  for (size_t i = 0; i < n; i++)
    p[i] = pattern_byte(i, seed) ^ mask;
}

long find_pattern_mismatch(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern_byte(i, seed))
      return (long)i;
  return -1;
}

/* ---------------------------------------------------------------- memory */

void **bench_malloc_all(size_t bytes, int zeroed) {
  const int np = armci_msg_nproc();
  void **bases = calloc((size_t)np, sizeof *bases);
  if (!bases)
    die("out of memory");
  if (ARMCI_Malloc(bases, (armci_size_t)bytes) != 0)
    die("ARMCI_Malloc of %zu bytes failed", bytes);
  for (int r = 0; r < np && bytes > 0; r++)
    if (!bases[r])
      die("ARMCI_Malloc of %zu bytes gave no address for rank %d", bytes, r);
  if (zeroed) {
    access_begin(bases[me]);
    memset(bases[me], 0, bytes);
    access_end(bases[me]);
  }
  return bases;
}

void bench_free_all(void **bases) {
  ARMCI_Free(bases[me]);
  free(bases);
}

void *bench_malloc_local(size_t bytes) {
  void *p = ARMCI_Malloc_local((armci_size_t)bytes);
  if (!p)
    die("ARMCI_Malloc_local of %zu bytes failed", bytes);
  return p;
}

long bench_largest(const long *v, int n) {
  long largest = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > largest)
      largest = v[i];
  return largest;
}

/* ---------------------------------------------------------- tables, CSV */

static struct {
  FILE *file;       /* the -c file, or NULL: stdout */
  const char *path;
  char *rows;       /* the rows so far (open_memstream) */
  size_t rows_len;
  FILE *buf;
  const struct bench_table *table;
  int samples;
} csv;

void bench_csv_open(const char *path, const struct bench_table *t, int samples) {
  if (me != 0)
    return;
  if (path && !(csv.file = fopen(path, "w")))
    die("cannot write %s: %s", path, strerror(errno));
  csv.path = path;
  csv.table = t;
  csv.samples = samples;
  if (!(csv.buf = open_memstream(&csv.rows, &csv.rows_len)))
    die("out of memory");
}

void bench_csv_finish(void) {
  if (me != 0 || !csv.buf)
    return;
  fclose(csv.buf);
  csv.buf = NULL;
  FILE *out = csv.file ? csv.file : stdout;
  if (!csv.file)
    printf("\n# CSV\n");
  fprintf(out, "impl");
  for (int i = 0; i < csv.table->ncols; i++)
    if (csv.table->cols[i].csv)
      fprintf(out, ",%s", csv.table->cols[i].csv);
  fprintf(out, ",samples,bench,nprocs,binding\n");
  fwrite(csv.rows, 1, csv.rows_len, out);
  free(csv.rows);
  if (csv.file) {
    if (fclose(csv.file) != 0)
      die("cannot write %s", csv.path);
    printf("\n# CSV written to %s\n", csv.path);
  }
  fflush(stdout);
}

void bench_table_header(const struct bench_table *t) {
  int first = 1;
  for (int i = 0; i < t->ncols; i++) {
    const struct bench_col *c = &t->cols[i];
    if (!c->header)
      continue;
    printf("%s%*s", first ? "" : " ", c->width, c->header);
    first = 0;
  }
  printf("\n");
}

/* A cell as the table and as the CSV show it: a double's precisions differ,
 * a NaN is "-" in the table and empty in the CSV. */
static void format_cell(const struct bench_col *c, va_list *ap, char *table_text, char *csv_text,
                        size_t len, const char **table_cell, const char **csv_cell) {
  *table_cell = table_text;
  *csv_cell = csv_text;
  switch (c->type) {
  case COL_STR:
    *table_cell = *csv_cell = va_arg(*ap, const char *);
    break;
  case COL_LONG:
    snprintf(table_text, len, "%ld", va_arg(*ap, long));
    *csv_cell = table_text;
    break;
  case COL_DOUBLE: {
    const double v = va_arg(*ap, double);
    if (isnan(v)) {
      *table_cell = "-";
      *csv_cell = "";
    } else {
      snprintf(table_text, len, "%.*f", c->prec, v);
      snprintf(csv_text, len, "%.*f", c->csv_prec, v);
    }
    break;
  }
  }
}

static void emit_row(const struct bench_table *t, int to_table, va_list args) {
  va_list ap; /* a copy of our own: va_list may be an array, which &args would not point to */
  va_copy(ap, args);
  int first = 1;
  const int to_csv = csv.buf && t == csv.table;
  if (to_csv)
    fprintf(csv.buf, "%s", IMPL_NAME);
  for (int i = 0; i < t->ncols; i++) {
    const struct bench_col *c = &t->cols[i];
    char table_text[400], csv_text[400]; /* room for any double in %f */
    const char *table_cell, *csv_cell;
    format_cell(c, &ap, table_text, csv_text, sizeof table_text, &table_cell, &csv_cell);
    if (to_table && c->header) {
      printf("%s%*s", first ? "" : " ", c->width, table_cell);
      first = 0;
    }
    if (to_csv && c->csv)
      fprintf(csv.buf, ",%s", csv_cell);
  }
  if (to_table && !first)
    printf("\n");
  if (to_csv)
    fprintf(csv.buf, ",%d,%s,%d,%s\n", csv.samples, bench_program, armci_msg_nproc(), bench_binding());
  va_end(ap);
}

void bench_row(const struct bench_table *t, ...) {
  va_list ap;
  va_start(ap, t);
  emit_row(t, 1, ap);
  va_end(ap);
}

void bench_csv_row(const struct bench_table *t, ...) {
  va_list ap;
  va_start(ap, t);
  emit_row(t, 0, ap);
  va_end(ap);
}

/* ---------------------------------------------------------------- report */

void bench_report_open(struct bench_run *r, const char *csv_path, const struct bench_table *t, int samples,
                       const char *fmt, ...) {
  if (me == 0) {
    bench_csv_open(csv_path, t, samples);
    if (fmt) {
      va_list ap;
      va_start(ap, fmt);
      printf("# %s impl=%s ", bench_program, IMPL_NAME);
      vprintf(fmt, ap);
      printf("\n");
      va_end(ap);
    }
    print_settings(stdout);
    fflush(stdout);
  }
  bench_run_begin(r);
}

void bench_report_table(const struct bench_run *r, const char *run_extra, const struct bench_table *t,
                        const char *note_fmt, ...) {
  bench_run_print(r, run_extra ? "%s" : NULL, run_extra);
  if (note_fmt) {
    va_list ap;
    va_start(ap, note_fmt);
    vprintf(note_fmt, ap);
    va_end(ap);
  }
  if (t)
    bench_table_header(t);
}

struct bench_figure bench_figure(const double *samples, int n, double scale, int prec) {
  const struct bench_stats s = bench_stats(samples, n);
  struct bench_figure f = {scale * s.median, scale * s.q1, scale * s.q3, ""};
  snprintf(f.spread, sizeof f.spread, "(%.*f-%.*f)", prec, f.q1, prec, f.q3);
  return f;
}

void bench_measure(const struct bench_measurement *m, void *ctx) {
  struct bench_run run;
  bench_report_open(&run, m->opts->csv_path, m->table, m->opts->reps, NULL);
  bench_passes(m->opts->reps, m->opts->warmup, m->pass, ctx);
  if (me != 0)
    return;
  bench_report_table(&run, m->run_extra, m->table, NULL);
  for (int i = 0; i < m->nrows; i++)
    m->row(i);
}
