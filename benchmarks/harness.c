/* The benchmark harness (see harness.h). Compiled into every benchmark, for
 * libarmci by make and for ARMCI-MPI by the compare scripts (mpicc). */
#define _GNU_SOURCE /* sched_getaffinity, open_memstream */

#include "harness.h"

#ifdef ARMCI_MPI
#include <mpi.h>
#endif

#include <errno.h>
#include <getopt.h>
#include <limits.h>
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

/* -------------------------------------------------------------- options */

long parse_bytes(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || v < 0)
    return -1;
  int shift = 0;
  if (*end == 'k' || *end == 'K')
    shift = 10, end++;
  else if (*end == 'm' || *end == 'M')
    shift = 20, end++;
  else if (*end == 'g' || *end == 'G')
    shift = 30, end++;
  if (shift && *end == 'i')
    end++;
  if (*end == 'B' || *end == 'b')
    end++;
  if (*end || v > (LONG_MAX >> shift))
    return -1;
  return v << shift;
}

const char *format_bytes(long n, char *buf, size_t len) {
  static const struct {
    const char *unit;
    int shift;
  } units[] = {{"G", 30}, {"M", 20}, {"K", 10}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (n >= (1L << units[i].shift) && n % (1L << units[i].shift) == 0) {
      snprintf(buf, len, "%ld%s", n >> units[i].shift, units[i].unit);
      return buf;
    }
  snprintf(buf, len, "%ld", n);
  return buf;
}

static int parse_whole(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end)
    return -1;
  *out = v;
  return 0;
}

static int parse_real(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

static int choice_index(const char *const *choices, const char *s) {
  for (int i = 0; choices[i]; i++)
    if (!strcmp(choices[i], s))
      return i;
  return -1;
}

static void join_choices(const char *const *choices, const char *sep, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; choices[i] && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? sep : "", choices[i]);
}

/* What the option takes, for the message about a bad value. */
static void describe_range(const struct bench_opt *o, char *buf, size_t len) {
  char lo[32], hi[32], names[160];
  switch (o->type) {
  case OPT_INT:
  case OPT_LONG:
    snprintf(buf, len, "a whole number from %.0f to %.0f", o->lo, o->hi);
    break;
  case OPT_BYTES:
    snprintf(buf, len, "a size from %s to %s (K/M/G suffixes)", format_bytes((long)o->lo, lo, sizeof lo),
             format_bytes((long)o->hi, hi, sizeof hi));
    break;
  case OPT_LIST:
    snprintf(buf, len, "a comma list of at most %d sizes from %s to %s (K/M suffixes)", o->max_count,
             format_bytes((long)o->lo, lo, sizeof lo), format_bytes((long)o->hi, hi, sizeof hi));
    break;
  case OPT_DOUBLE:
    snprintf(buf, len, "a number from %g to %g", o->lo, o->hi);
    break;
  case OPT_MS:
    snprintf(buf, len, "milliseconds from %g to %g", o->lo, o->hi);
    break;
  case OPT_CHOICE:
    join_choices(o->choices, ", ", names, sizeof names);
    snprintf(buf, len, "one of %s", names);
    break;
  case OPT_SET:
    join_choices(o->choices, ",", names, sizeof names);
    snprintf(buf, len, "a comma list of %s (or all)", names);
    break;
  default:
    snprintf(buf, len, "a value");
    break;
  }
}

/* Stores the option's value; -1 when it is not one the option takes. */
static int set_value(const struct bench_opt *o, const char *arg) {
  long l;
  double d;
  switch (o->type) {
  case OPT_FLAG:
    *(int *)o->value = 1;
    return 0;
  case OPT_INT:
  case OPT_LONG:
    if (parse_whole(arg, &l) || l < o->lo || l > o->hi)
      return -1;
    if (o->type == OPT_INT)
      *(int *)o->value = (int)l;
    else
      *(long *)o->value = l;
    return 0;
  case OPT_BYTES:
    l = parse_bytes(arg);
    if (l < o->lo || l > o->hi)
      return -1;
    *(long *)o->value = l;
    return 0;
  case OPT_DOUBLE:
  case OPT_MS:
    if (parse_real(arg, &d) || d < o->lo || d > o->hi)
      return -1;
    *(double *)o->value = o->type == OPT_MS ? d * 1e-3 : d;
    return 0;
  case OPT_LIST: {
    char buf[512];
    long *out = o->value;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      l = parse_bytes(tok);
      if (l < o->lo || l > o->hi || n == o->max_count)
        return -1;
      out[n++] = l;
    }
    if (n == 0)
      return -1;
    *o->count = n;
    return 0;
  }
  case OPT_CHOICE: {
    int i = choice_index(o->choices, arg);
    if (i < 0)
      return -1;
    *(int *)o->value = i;
    return 0;
  }
  case OPT_SET: {
    char buf[256];
    int mask = 0;
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (!strcmp(tok, "all") || !strcmp(tok, "both")) {
        for (int i = 0; o->choices[i]; i++)
          mask |= 1 << i;
        continue;
      }
      int i = choice_index(o->choices, tok);
      if (i < 0)
        return -1;
      mask |= 1 << i;
    }
    if (!mask)
      return -1;
    *(int *)o->value = mask;
    return 0;
  }
  case OPT_STRING:
    *(const char **)o->value = arg;
    return 0;
  }
  return -1;
}

/* The value an option holds now, as the usage text shows its default. */
static void format_value(const struct bench_opt *o, char *buf, size_t len) {
  char one[32];
  buf[0] = '\0';
  switch (o->type) {
  case OPT_FLAG:
    snprintf(buf, len, "%s", *(int *)o->value ? "on" : "");
    break;
  case OPT_INT:
    snprintf(buf, len, "%d", *(int *)o->value);
    break;
  case OPT_LONG:
    snprintf(buf, len, "%ld", *(long *)o->value);
    break;
  case OPT_BYTES:
    format_bytes(*(long *)o->value, buf, len);
    break;
  case OPT_DOUBLE:
    snprintf(buf, len, "%g", *(double *)o->value);
    break;
  case OPT_MS:
    snprintf(buf, len, "%g", *(double *)o->value * 1e3);
    break;
  case OPT_LIST: {
    size_t used = 0;
    for (int i = 0; i < *o->count && used < len; i++)
      used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                               format_bytes(((long *)o->value)[i], one, sizeof one));
    break;
  }
  case OPT_CHOICE:
    snprintf(buf, len, "%s", o->choices[*(int *)o->value]);
    break;
  case OPT_SET: {
    size_t used = 0;
    for (int i = 0; o->choices[i] && used < len; i++)
      if (*(int *)o->value & (1 << i))
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", o->choices[i]);
    break;
  }
  case OPT_STRING:
    snprintf(buf, len, "%s", *(const char **)o->value ? *(const char **)o->value : "");
    break;
  }
}

#define MAX_OPTS 32

static void usage(FILE *f, const struct bench_opt *opts, char defaults[][128], const char *about) {
  fprintf(f, "usage: mpirun -np 2 %s [options]\n", bench_program);
  if (about)
    fprintf(f, "%s\n", about);
  fprintf(f, "options (the same long names in every benchmark of benchmarks/):\n");
  for (int i = 0; opts[i].name; i++) {
    const struct bench_opt *o = &opts[i];
    char left[64];
    if (o->letter)
      snprintf(left, sizeof left, "  -%c, --%s%s%s", o->letter, o->name, o->type == OPT_FLAG ? "" : " ",
               o->type == OPT_FLAG ? "" : o->arg);
    else
      snprintf(left, sizeof left, "      --%s%s%s", o->name, o->type == OPT_FLAG ? "" : " ",
               o->type == OPT_FLAG ? "" : o->arg);
    fprintf(f, "%-28s ", left);
    for (const char *p = o->help; *p; p++) {
      fputc(*p, f);
      if (*p == '\n')
        fprintf(f, "%-28s ", "");
    }
    if (defaults[i][0])
      fprintf(f, " (default %s)", defaults[i]);
    fputc('\n', f);
  }
  fprintf(f, "%-28s this text\n", "  -h, --help");
}

void bench_parse(int argc, char **argv, const struct bench_opt *opts, const char *about) {
  struct option longs[MAX_OPTS + 2];
  char shorts[3 * MAX_OPTS + 2];
  char defaults[MAX_OPTS][128];
  int n = 0, s = 0;
  shorts[s++] = ':'; /* a missing value is reported as such */
  for (; opts[n].name; n++) {
    if (n == MAX_OPTS)
      die("bench_parse: more than %d options", MAX_OPTS);
    const int takes_value = opts[n].type != OPT_FLAG;
    longs[n] = (struct option){opts[n].name, takes_value ? required_argument : no_argument, NULL,
                               opts[n].letter ? opts[n].letter : 256 + n};
    if (opts[n].letter) {
      shorts[s++] = (char)opts[n].letter;
      if (takes_value)
        shorts[s++] = ':';
    }
    format_value(&opts[n], defaults[n], sizeof defaults[n]);
  }
  longs[n] = (struct option){"help", no_argument, NULL, 'h'};
  longs[n + 1] = (struct option){NULL, 0, NULL, 0};
  shorts[s++] = 'h';
  shorts[s] = '\0';

  int code = -1, opt, idx;
  opterr = 0;
  while (code < 0 && (opt = getopt_long(argc, argv, shorts, longs, &idx)) != -1) {
    if (opt == 'h') {
      if (me == 0)
        usage(stdout, opts, defaults, about);
      code = 0;
      break;
    }
    const struct bench_opt *o = NULL;
    for (int i = 0; i < n && !o; i++)
      if ((opts[i].letter ? opts[i].letter : 256 + i) == opt)
        o = &opts[i];
    if (!o) {
      if (me == 0) {
        if (opt == ':')
          fprintf(stderr, "%s: %s needs a value\n", bench_program, argv[optind - 1]);
        else
          fprintf(stderr, "%s: unknown option '%s'\n", bench_program, argv[optind - 1]);
        usage(stderr, opts, defaults, about);
      }
      code = 2;
      break;
    }
    if (set_value(o, optarg) != 0) {
      if (me == 0) {
        char range[256];
        describe_range(o, range, sizeof range);
        if (o->letter)
          fprintf(stderr, "%s: -%c (--%s) needs %s, got '%s'\n", bench_program, o->letter, o->name, range,
                  optarg);
        else
          fprintf(stderr, "%s: --%s needs %s, got '%s'\n", bench_program, o->name, range, optarg);
      }
      code = 2;
      break;
    }
    if (o->given)
      *o->given = 1;
  }
  if (code < 0 && optind < argc) {
    if (me == 0) {
      fprintf(stderr, "%s: unexpected argument '%s'\n", bench_program, argv[optind]);
      usage(stderr, opts, defaults, about);
    }
    code = 2;
  }
  if (code < 0)
    return;
  bench_end();
  exit(code);
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

static void emit_row(const struct bench_table *t, int to_table, va_list ap) {
  int first = 1;
  const int to_csv = csv.buf && t == csv.table;
  if (to_csv)
    fprintf(csv.buf, "%s", IMPL_NAME);
  for (int i = 0; i < t->ncols; i++) {
    const struct bench_col *c = &t->cols[i];
    const int in_table = to_table && c->header, in_csv = to_csv && c->csv;
    const char *sep = first ? "" : " ";
    switch (c->type) {
    case COL_STR: {
      const char *v = va_arg(ap, const char *);
      if (in_table)
        printf("%s%*s", sep, c->width, v);
      if (in_csv)
        fprintf(csv.buf, ",%s", v);
      break;
    }
    case COL_LONG: {
      const long v = va_arg(ap, long);
      if (in_table)
        printf("%s%*ld", sep, c->width, v);
      if (in_csv)
        fprintf(csv.buf, ",%ld", v);
      break;
    }
    case COL_DOUBLE: {
      const double v = va_arg(ap, double);
      if (in_table) {
        if (isnan(v))
          printf("%s%*s", sep, c->width, "-");
        else
          printf("%s%*.*f", sep, c->width, c->prec, v);
      }
      if (in_csv) {
        if (isnan(v))
          fprintf(csv.buf, ",");
        else
          fprintf(csv.buf, ",%.*f", c->csv_prec, v);
      }
      break;
    }
    }
    if (in_table)
      first = 0;
  }
  if (to_table && !first)
    printf("\n");
  if (to_csv)
    fprintf(csv.buf, ",%d,%s,%d,%s\n", csv.samples, bench_program, armci_msg_nproc(), bench_binding());
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
