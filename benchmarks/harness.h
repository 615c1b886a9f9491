/* The benchmark harness: what every program of benchmarks/ shares, so that
 * each one keeps only its measured loop and its table's columns.
 *
 *   start and end      bench_begin (start, options, process count),
 *                      bench_end (MPI_Init first for ARMCI-MPI)
 *   options            a table of struct bench_opt: parsing, range checks,
 *                      usage text with the defaults, the same long names
 *                      (--reps, --csv, --sizes, ...) in every program
 *                      (harness_options.c)
 *   memory             ARMCI_Malloc on every rank, ARMCI_Malloc_local, a
 *                      window of nonblocking transfers
 *   timing             now(), CPU clocks, calibration of a sample's length,
 *                      the pass loop (calibration, warm-up, samples), the
 *                      "# run:" line that says how disturbed a run was
 *   statistics         median, quartiles, min/max of the samples
 *   output             one column list per table: each row goes to the
 *                      human-readable table and to the CSV (a file, or
 *                      stdout after "# CSV"), which also records the
 *                      program, the process count and the binding
 *   report             the output's start (CSV, header line, settings),
 *                      the run line and note before a table, medians with
 *                      their quartiles, and bench_measure: a benchmark
 *                      sampled in passes from the first line to the rows
 *
 * Every benchmark builds against libarmci and, unchanged, against ARMCI-MPI
 * (Debian's -larmci-openmpi, with harness.c and harness_options.c compiled
 * beside it), so only calls both provide appear here. */
#ifndef ARMCI_BENCH_HARNESS_H
#define ARMCI_BENCH_HARNESS_H

#include <armci.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(ARMCI_MPI)
#define IMPL_NAME "armci-mpi"
#elif defined(ARMCI_LIBARMCI)
#define IMPL_NAME "libarmci"
#else
#define IMPL_NAME "armci"
#endif

#define BENCH_MAX_REPS 101 /* most samples any benchmark takes of one cell */

extern int me;                     /* this process's rank, once ARMCI is up */
extern const char *bench_program;  /* for messages and the CSV */

/* ------------------------------------------------------------ lifecycle */

/* ARMCI-MPI's ARMCI_Init refuses to run before MPI_Init; libarmci needs no MPI. */
void bench_start(int *argc, char ***argv, const char *program);
void bench_end(void);

/* Ends every process of the job (ARMCI_Error), so no peer is left waiting
 * in a barrier for a rank that gave up. */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
__attribute__((noreturn, format(printf, 2, 3))) void bench_failed(int rc, const char *fmt, ...);

/* A library call that must return 0. A macro: the message is only formatted
 * on failure, so a timed loop pays one compare. */
#define BENCH_CHECK(call_rc, ...)                                                                  \
  do {                                                                                             \
    int bench_rc_ = (call_rc);                                                                     \
    if (bench_rc_ != 0)                                                                            \
      bench_failed(bench_rc_, __VA_ARGS__);                                                        \
  } while (0)

/* Ends the run with status 2 unless at least `n` processes take part. */
void bench_need_procs(int n);

/* Local loads and stores to ARMCI_Malloc memory: ARMCI-MPI wants an epoch. */
static inline void access_begin(void *p) {
#ifdef ARMCI_MPI
  ARMCI_Access_begin(p);
#else
  (void)p;
#endif
}
static inline void access_end(void *p) {
#ifdef ARMCI_MPI
  ARMCI_Access_end(p);
#else
  (void)p;
#endif
}

/* How rank 0 reaches rank 1 ("shm", "network"; "mpi" for ARMCI-MPI). */
const char *transfer_path(void);
/* Where libarmci runs atomics: "cpu-atomics" when every rank shares this
 * node's memory, "network" otherwise ("mpi" for ARMCI-MPI). */
const char *atomics_mode(void);
/* ARMCI_STRIDED_PROTOCOL as libarmci sees it ("auto" unset; "armci-mpi"). */
const char *strided_protocol(void);
/* Rank 0's CPU binding: "core" (one CPU), "none" (every online CPU) or
 * "N-cpus"; mpirun binds every rank alike, so rank 0 speaks for all. */
const char *bench_binding(void);
/* "# settings:" with the ARMCI_* / UCX_TLS variables the run was given. */
void print_settings(FILE *f);

/* ---------------------------------------------------------------- clocks */

/* Inline: the overlap loops read the clock around every compute piece. */
static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* CPU time of every thread of the process (a library's helpers included). */
double cpu_now(void);
/* CPU time of the calling thread alone. */
double thread_cpu_now(void);
/* The 1-minute load average, or -1 where /proc is not there. */
double load_average(void);

/* The run's clock, for the "# run:" line: its wall time, the share of it
 * rank 0 was on a CPU (a busy-polling library keeps that near 1; well below
 * 1 means other load took the core), the load average before and after. */
struct bench_run {
  double wall0, cpu0, load0;
};
void bench_run_begin(struct bench_run *r);
/* Prints "# run: W s; rank 0 cpu/wall S[EXTRA]; load average B before, A
 * after"; the compare scripts read the number after "cpu/wall". */
__attribute__((format(printf, 2, 3))) void bench_run_print(const struct bench_run *r,
                                                          const char *extra_fmt, ...);

/* Operations per sample of about `sample_s` seconds. Doubles a count
 * (starting at and kept a multiple of `step`) until one run takes
 * probe_frac * sample_s or the count reaches `max` (the first runs also
 * warm caches, mappings and connections); then times it `retimes` more
 * times and keeps the fastest (one preempted run would otherwise shrink
 * every sample of the cell). With `rescale` the count is scaled to
 * sample_s, otherwise the probed count is returned. `run` returns the
 * seconds that `n` operations took. */
struct bench_calibration {
  double sample_s, probe_frac;
  int retimes, rescale;
  long step, max;
};
long bench_calibrate(const struct bench_calibration *c, double (*run)(void *ctx, long n), void *ctx);

/* The pass loop: pass 0 calibrates, then `warmup` passes run as pass 1
 * (their samples are overwritten) and passes 1..reps each store sample
 * pass-1 of every cell. A cell's samples thus come from different moments
 * of the run: a burst of load from elsewhere spoils one sample of many
 * cells (which the median drops), not every sample of a few. Rank 0 reports
 * progress on stderr. Collective. */
void bench_passes(int reps, int warmup, void (*pass_fn)(void *ctx, int pass), void *ctx);

/* ------------------------------------------------------------ statistics */

struct bench_stats {
  double median, q1, q3, min, max;
};
/* Of n samples (v is left as it is); quartiles interpolate between ranks. */
struct bench_stats bench_stats(const double *v, int n);
double bench_median(const double *v, int n);

/* ------------------------------------------------------------------ data */

/* A per-phase byte pattern, so that data left over from an earlier phase (an
 * operation that silently did nothing) cannot pass a check. */
static inline unsigned char pattern_byte(size_t i, unsigned seed) {
  uint32_t x = (uint32_t)i * 2654435761u ^ (seed * 0x9E3779B9u + 0x7F4A7C15u);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (unsigned char)x;
}
/* The pattern, or (inverted) bytes that differ from it everywhere. */
void fill_pattern(unsigned char *p, size_t n, unsigned seed, int inverted);
/* The first byte that is not the pattern, or -1. */
long find_pattern_mismatch(const unsigned char *p, size_t n, unsigned seed);

/* ---------------------------------------------------------------- memory */

/* ARMCI_Malloc of `bytes` on every rank (collective): every rank's base in
 * a malloc'd array, this rank's part zeroed when `zeroed`; the run ends when
 * it fails. bench_free_all gives both back (collective). */
void **bench_malloc_all(size_t bytes, int zeroed);
void bench_free_all(void **bases);
/* ARMCI_Malloc_local, or the run ends. */
void *bench_malloc_local(size_t bytes);
/* The largest of n values (0 for none): buffers are sized by a list's largest. */
long bench_largest(const long *v, int n);

/* One window of nonblocking transfers: w calls of `nb` (ARMCI_NbPut or
 * ARMCI_NbGet; `name` for messages) of the same bytes on handles[0..w-1],
 * then ARMCI_Wait on each. Inline, so that a constant `nb` is a direct call
 * in the timed loop. */
typedef int (*bench_nb_fn)(void *src, void *dst, int bytes, int proc, armci_hdl_t *handle);
static inline void bench_nb_window(bench_nb_fn nb, const char *name, void *src, void *dst, int bytes, int proc,
                                   armci_hdl_t *handles, int w) {
  for (int k = 0; k < w; k++) {
    ARMCI_INIT_HANDLE(&handles[k]);
    BENCH_CHECK(nb(src, dst, bytes, proc, &handles[k]), "%s of %d bytes", name, bytes);
  }
  for (int k = 0; k < w; k++)
    BENCH_CHECK(ARMCI_Wait(&handles[k]), "ARMCI_Wait after %s of %d bytes", name, bytes);
}

/* -------------------------------------------------------------- options */

enum bench_opt_type {
  OPT_FLAG,   /* int, set to 1 */
  OPT_INT,    /* int in [lo, hi] */
  OPT_LONG,   /* long in [lo, hi] */
  OPT_BYTES,  /* long in [lo, hi], K/M/G suffixes */
  OPT_DOUBLE, /* double in [lo, hi] */
  OPT_MS,     /* given in ms, stored as seconds (double) in [lo, hi] ms */
  OPT_LIST,   /* comma list of byte sizes into long[max_count], *count */
  OPT_CHOICE, /* one of choices[]: int index */
  OPT_SET,    /* comma list of choices[] (or "both", "all"): int bit mask */
  OPT_STRING  /* const char * */
};

struct bench_opt {
  int letter;       /* the short option, as the program always had it */
  const char *name; /* the long option; shared names mean the same everywhere */
  enum bench_opt_type type;
  void *value;
  double lo, hi;
  const char *arg;  /* what the usage text calls the value */
  const char *help; /* one line (more lines: "\n" and indent) */
  const char *const *choices; /* OPT_CHOICE / OPT_SET, NULL-terminated */
  int *count;                 /* OPT_LIST: how many were given */
  int max_count;              /* OPT_LIST: room in value */
  int *given;                 /* set to 1 when the option was on the command line */
};

/* The options every benchmark spells the same way; `given` (or NULL) is
 * set when the option was on the command line. */
#define BENCH_OPT_REPS(letter, ptr, given)                                                          \
  {letter, "reps", OPT_INT, ptr, 1, BENCH_MAX_REPS, "N",                                           \
   "samples of every measurement; the median is reported", NULL, NULL, 0, given}
#define BENCH_OPT_SAMPLE_MS(letter, ptr, given)                                                     \
  {letter, "sample-ms", OPT_MS, ptr, 1e-3, 1e5, "MS", "length of one sample in milliseconds",      \
   NULL, NULL, 0, given}
#define BENCH_OPT_WARMUP(ptr)                                                                      \
  {0, "warmup", OPT_INT, ptr, 0, 100, "N",                                                         \
   "extra untimed passes over every cell before the samples", NULL, NULL, 0, NULL}
#define BENCH_OPT_SIZES(letter, arr, countp, lo, hi)                                               \
  {letter, "sizes", OPT_LIST, arr, lo, hi, "LIST",                                                 \
   "message sizes, comma list with K/M suffixes", NULL, countp,                                    \
   (int)(sizeof(arr) / sizeof((arr)[0])), NULL}
/* The message sizes a benchmark runs, set by --sizes (BENCH_OPT_SIZE_LIST). */
struct bench_sizes {
  long bytes[32];
  int count;
};
#define BENCH_OPT_SIZE_LIST(letter, list, lo, hi) BENCH_OPT_SIZES(letter, (list)->bytes, &(list)->count, lo, hi)
/* A busy target that never sees the origin's stop word gives up after this. */
#define BENCH_OPT_TIMEOUT(letter, ptr)                                                             \
  {letter, "timeout", OPT_DOUBLE, ptr, 1e-3, 1e6, "SECONDS",                                       \
   "a busy target that has not seen rank 0's stop word after this\nlong gives up (error)", NULL,   \
   NULL, 0, NULL}
#define BENCH_OPT_CSV(letter, ptr)                                                                 \
  {letter, "csv", OPT_STRING, ptr, 0, 0, "FILE",                                                   \
   "write the CSV to FILE instead of after '# CSV' on stdout", NULL, NULL, 0, NULL}
#define BENCH_OPT_END {0, NULL, OPT_FLAG, NULL, 0, 0, NULL, NULL, NULL, NULL, 0, NULL}

/* Parses argv against opts (ended by BENCH_OPT_END); -h and --help print
 * the usage: "usage: mpirun -np 2 PROGRAM [options]", `about` (what the
 * program measures, a few lines), then one line per option with its default.
 * On -h or a bad option it ends the process (status 0 or 2) after
 * bench_end(); only rank 0 prints. Call after bench_start. */
void bench_parse(int argc, char **argv, const struct bench_opt *opts, const char *about);

/* How every benchmark begins: bench_start, bench_parse against opts, then
 * bench_need_procs(min_procs) when min_procs > 1. */
void bench_begin(int *argc, char ***argv, const char *program, const struct bench_opt *opts, const char *about,
                 int min_procs);

/* "64", "64K", "4M", "1G", "4MiB"; -1 when malformed. */
long parse_bytes(const char *s);
/* "4K" for 4096; for tables and messages. */
const char *format_bytes(long n, char *buf, size_t len);

/* ---------------------------------------------------------- tables, CSV */

enum bench_col_type { COL_STR, COL_LONG, COL_DOUBLE };

/* One column of a result table: in the printed table when `header` is set,
 * in the CSV when `csv` is set. A NaN double prints "-" in the table and
 * nothing in the CSV. width < 0 aligns left. */
struct bench_col {
  const char *header;
  const char *csv;
  enum bench_col_type type;
  int width, prec, csv_prec;
};

struct bench_table {
  const struct bench_col *cols;
  int ncols;
};
#define BENCH_TABLE(cols) {cols, (int)(sizeof(cols) / sizeof((cols)[0]))}

/* The CSV (rank 0): opened at the start so that a bad path fails before the
 * long part; its rows are kept until bench_csv_finish, which writes them to
 * the file, or to stdout after a "# CSV" line. Columns: impl, the table's
 * CSV columns, then samples (per reported figure), bench, nprocs, binding.
 * One CSV table per program. */
void bench_csv_open(const char *path, const struct bench_table *t, int samples);
void bench_csv_finish(void);

/* The table's header line on stdout. */
void bench_table_header(const struct bench_table *t);
/* One row: one argument per column, in order (const char *, long, double);
 * to the printed table and to the CSV. */
void bench_row(const struct bench_table *t, ...);
/* The same row to the CSV only (rows the printed table summarises). */
void bench_csv_row(const struct bench_table *t, ...);

/* ---------------------------------------------------------------- report */

/* What a benchmark's output starts with: on rank 0 the CSV opened
 * (bench_csv_open), when fmt is given a line "# PROGRAM impl=IMPL " and fmt,
 * then the "# settings:" line; on every rank the run clock r started. */
__attribute__((format(printf, 5, 6))) void bench_report_open(struct bench_run *r, const char *csv_path,
                                                             const struct bench_table *t, int samples,
                                                             const char *fmt, ...);
/* Rank 0, after the measurements: the "# run:" line of r with run_extra
 * after the cpu/wall share (or NULL), the note (a printf format, or NULL),
 * then the header of t (NULL: the caller prints its own). */
__attribute__((format(printf, 4, 5))) void bench_report_table(const struct bench_run *r, const char *run_extra,
                                                              const struct bench_table *t, const char *note_fmt,
                                                              ...);

/* A median with its quartiles, scaled (1e6: seconds to microseconds), and
 * "(q1-q3)" with `prec` decimals, for the tables that print the spread beside
 * the median. */
struct bench_figure {
  double median, q1, q3;
  char spread[48];
};
struct bench_figure bench_figure(const double *samples, int n, double scale, int prec);

/* The columns of a benchmark that times ours against MPI's (msg_bench,
 * win_bench): each one's median in us (width, prec) with its "(q1-q3)"
 * beside it (bench_figure), MPI's over ours, then the four quartiles as CSV
 * columns. A row passes ours.median, ours.spread, mpi.median, mpi.spread,
 * the ratio, ours.q1, ours.q3, mpi.q1, mpi.q3. */
#define BENCH_COLS_OURS_VS_MPI(width, prec)                                                        \
  {"armci us", "armci_us", COL_DOUBLE, width, prec, 4}, {"(q1-q3)", NULL, COL_STR, -16, 0, 0},       \
      {"mpi us", "mpi_us", COL_DOUBLE, width, prec, 4}, {"(q1-q3)", NULL, COL_STR, -16, 0, 0},       \
      {"mpi/armci", "mpi_over_armci", COL_DOUBLE, 10, 2, 3}, {NULL, "armci_q1_us", COL_DOUBLE, 0, 0, 4}, \
      {NULL, "armci_q3_us", COL_DOUBLE, 0, 0, 4}, {NULL, "mpi_q1_us", COL_DOUBLE, 0, 0, 4},         \
      {NULL, "mpi_q3_us", COL_DOUBLE, 0, 0, 4}

/* What a benchmark measured by bench_measure is told: samples per cell,
 * untimed passes before them, a sample's length, where the CSV goes;
 * BENCH_OPTS_PASSES lists them as -r, -t, --warmup and -c. */
struct bench_pass_options {
  int reps, warmup;
  double sample_s;
  const char *csv_path;
};
#define BENCH_OPTS_PASSES(o)                                                                       \
  BENCH_OPT_REPS('r', &(o)->reps, NULL), BENCH_OPT_SAMPLE_MS('t', &(o)->sample_s, NULL),           \
      BENCH_OPT_WARMUP(&(o)->warmup), BENCH_OPT_CSV('c', &(o)->csv_path)

/* The whole life of a benchmark sampled in passes: bench_report_open (no
 * header line), bench_passes(reps, warmup, pass, ctx), then on rank 0
 * bench_report_table with run_extra and row(i) for every i < nrows.
 * The caller ends the CSV (bench_csv_finish) after anything it adds. */
struct bench_measurement {
  const struct bench_table *table;
  const struct bench_pass_options *opts;
  void (*pass)(void *ctx, int pass);
  int nrows;
  void (*row)(int i);
  const char *run_extra;
};
void bench_measure(const struct bench_measurement *m, void *ctx);

#endif /* ARMCI_BENCH_HARNESS_H */
