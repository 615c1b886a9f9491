/*
 * helper_cost: what the library's threads cost an application that computes.
 *
 * After ARMCI_Init every rank runs the same compute kernel (local data, no
 * library calls) for about -d seconds (0.2), -k times (9), all ranks at once
 * (a barrier before each run), and reports the median rate. Run it under
 * different helper settings (ARMCI_HELPER=none|block|spin) and compare the
 * rates: a helper thread that sleeps while nothing arrives should cost
 * (nearly) nothing, one that spins takes a core.
 *
 * -m mixed: rank 1 also issues an ARMCI_Put of -b bytes (4096) to rank 0
 * every -p microseconds (1000) between pieces of its kernel, so rank 0's
 * side of the library has traffic to serve while rank 0 computes (with
 * ARMCI_SHM=0 the puts go through the network layer; over shared memory they
 * are copies by rank 1 that rank 0 never sees). Rank 0 checks afterwards
 * that the last put of every run arrived.
 *
 * Columns per rank: the kernel rate over wall time (median, min, max, in
 * Gflop/s), the rate over the main thread's CPU time (what the kernel does
 * while it has a core: insensitive to other jobs taking the core), the main
 * thread's CPU time over wall time while computing (below 1: descheduled, by
 * the library's threads or by other load), and the CPU time of the process's
 * other threads over that wall time (the library's helper and network
 * threads).
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/helper_cost
 *   ARMCI-MPI: mpicc -O2 benchmarks/helper_cost.c benchmarks/harness*.c -larmci-openmpi -lm
 * See benchmarks/README.md; benchmarks/compare_overlap.sh runs it under each
 * helper setting.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "bench_compute.h"

#define MAX_PROCS 64
#define NSTATS 9
#define STAT_PAGE 4096 /* rank 0: everyone's results, then the put target */

struct config {
  int runs;
  double seconds;
  int mixed;
  double period_us;
  long put_bytes;
  const char *csv_path;
};

enum { S_SECONDS, S_RATE, S_RATE_MIN, S_RATE_MAX, S_CPU_RATE, S_MAIN_CPU, S_OTHER_CPU, S_PUTS,
       S_LAST_SEED };

static const char *helper_setting(void) {
  static char buf[96];
  const char *h = getenv("ARMCI_HELPER"), *p = getenv("ARMCI_PROGRESS_THREAD");
  if (!h && !p)
    return "default";
  snprintf(buf, sizeof buf, "%s%s%s%s", h ? "ARMCI_HELPER=" : "", h ? h : "",
           p ? (h ? "+ARMCI_PROGRESS_THREAD=" : "ARMCI_PROGRESS_THREAD=") : "", p ? p : "");
  return buf;
}

static const struct bench_col columns[] = {
    {NULL, "path", COL_STR, 0, 0, 0},
    {NULL, "mode", COL_STR, 0, 0, 0},
    {NULL, "helper", COL_STR, 0, 0, 0},
    {"rank", "rank", COL_LONG, 4, 0, 0},
    {"role", "role", COL_STR, -7, 0, 0},
    {"seconds", "seconds_median", COL_DOUBLE, 10, 4, 5},
    {"Gflop/s", "gflops_median", COL_DOUBLE, 9, 3, 4},
    {"min", "gflops_min", COL_DOUBLE, 9, 3, 4},
    {"max", "gflops_max", COL_DOUBLE, 9, 3, 4},
    {"Gf/cpu-s", "gflops_per_cpu_s", COL_DOUBLE, 10, 3, 4},
    {"main_cpu", "main_cpu", COL_DOUBLE, 9, 3, 4},
    {"other_cpu", "other_cpu", COL_DOUBLE, 9, 3, 4},
    {"puts", "puts", COL_DOUBLE, 8, 0, 0},
};
static const struct bench_table table = BENCH_TABLE(columns);

static const char about[] =
    "What the library's threads cost an application that computes: every rank runs a\n"
    "compute kernel without library calls; compare the rates across ARMCI_HELPER settings.";
static const char *const mode_names[] = {"idle", "mixed", NULL};

static void parse_args(int *argc, char ***argv, struct config *c) {
  *c = (struct config){.runs = 9, .seconds = 0.2, .period_us = 1000, .put_bytes = 4096};
  const struct bench_opt opts[] = {
      BENCH_OPT_REPS('k', &c->runs, NULL),
      {'d', "seconds", OPT_DOUBLE, &c->seconds, 1e-3, 60, "SECONDS", "length of one run", NULL, NULL, 0, NULL},
      {'m', "mode", OPT_CHOICE, &c->mixed, 0, 0, "idle|mixed",
       "idle: no communication; mixed: rank 1 puts to rank 0 while both\ncompute", mode_names, NULL, 0, NULL},
      {'p', "period-us", OPT_DOUBLE, &c->period_us, 1, 1e9, "US",
       "mixed: one put every US microseconds of rank 1's kernel", NULL, NULL, 0, NULL},
      {'b', "bytes", OPT_BYTES, &c->put_bytes, 8, 64L << 20, "BYTES", "mixed: bytes per put", NULL, NULL, 0,
       NULL},
      BENCH_OPT_CSV('c', &c->csv_path),
      BENCH_OPT_END};
  bench_begin(argc, argv, "helper_cost", opts, about, 1);
  if (c->mixed)
    bench_need_procs(2);
}

int main(int argc, char **argv) {
  struct config cfg;
  parse_args(&argc, &argv, &cfg);
  const int nproc = armci_msg_nproc();
  if (nproc > MAX_PROCS) {
    if (me == 0)
      fprintf(stderr, "helper_cost: needs at most %d processes, got %d\n", MAX_PROCS, nproc);
    bench_end();
    return 2;
  }

  /* Rank 0's region: one page of results from every rank, then the
   * destination of rank 1's puts. */
  const size_t stats_bytes = (size_t)MAX_PROCS * NSTATS * sizeof(double);
  const size_t region = stats_bytes + STAT_PAGE + (size_t)cfg.put_bytes;
  void **bases = bench_malloc_all(region, 1);
  unsigned char *put_dst = (unsigned char *)bases[0] + stats_bytes + STAT_PAGE;
  const int putter = cfg.mixed && me == 1;
  unsigned char *put_src = putter ? bench_malloc_local((size_t)cfg.put_bytes) : NULL;
  kernel_init();

  /* Every rank sizes its own kernel; rates, not times, are compared. */
  ARMCI_Barrier();
  const double upus = kernel_units_per_us(0.05);
  const long units = (long)(upus * cfg.seconds * 1e6) + 1;
  /* The putter's kernel comes in pieces of one period each. */
  long piece = putter ? (long)(upus * cfg.period_us) : units;
  if (piece < 1)
    piece = 1;

  double secs[BENCH_MAX_REPS], rate[BENCH_MAX_REPS], cpu_rate[BENCH_MAX_REPS], main_cpu[BENCH_MAX_REPS],
      other_cpu[BENCH_MAX_REPS];
  long puts = 0;
  unsigned last_seed = 0; /* of rank 1's last put */
  const char *path = nproc > 1 ? transfer_path() : "-", *mode = cfg.mixed ? "mixed" : "idle";
  char puts_setting[64] = "";
  if (cfg.mixed)
    snprintf(puts_setting, sizeof puts_setting, " put_bytes=%ld period_us=%.0f", cfg.put_bytes, cfg.period_us);
  struct bench_run total;
  bench_report_open(&total, cfg.csv_path, &table, cfg.runs,
                    "path=%s mode=%s helper=%s nproc=%d binding=%s runs=%d seconds=%.2f%s", path, mode,
                    helper_setting(), nproc, bench_binding(), cfg.runs, cfg.seconds, puts_setting);
  for (int run = 0; run < cfg.runs; run++) {
    ARMCI_Barrier();
    const double w0 = now(), p0 = cpu_now(), c0 = thread_cpu_now();
    long done = 0, k = 0;
    while (done < units) {
      long n = units - done < piece ? units - done : piece;
      kernel_run(n);
      done += n;
      if (putter) {
        /* Every put carries its own numbers, so that the last one of the
         * run can be recognised at rank 0. */
        fill_pattern(put_src, (size_t)cfg.put_bytes, (unsigned)(run * 100003 + k), 0);
        if (ARMCI_Put(put_src, put_dst, (int)cfg.put_bytes, 0) != 0)
          die("ARMCI_Put of %ld bytes to rank 0 failed", cfg.put_bytes);
        k++;
      }
    }
    const double w = now() - w0, p = cpu_now() - p0, c = thread_cpu_now() - c0;
    secs[run] = w;
    rate[run] = kernel_flops(units) / w * 1e-9;
    cpu_rate[run] = c > 0 ? kernel_flops(units) / c * 1e-9 : 0;
    main_cpu[run] = c / w;
    other_cpu[run] = p > c ? (p - c) / w : 0; /* the two clocks tick apart */
    if (putter) {
      ARMCI_Fence(0);
      puts += k;
      last_seed = (unsigned)(run * 100003 + k - 1);
    }
    ARMCI_Barrier();
  }

  /* Results into rank 0's memory; rank 1 also says which of its puts came
   * last, for rank 0 to check that it arrived. */
  double mine[NSTATS];
  const struct bench_stats rates = bench_stats(rate, cfg.runs);
  mine[S_SECONDS] = bench_median(secs, cfg.runs);
  mine[S_RATE] = rates.median;
  mine[S_RATE_MIN] = rates.min;
  mine[S_RATE_MAX] = rates.max;
  mine[S_CPU_RATE] = bench_median(cpu_rate, cfg.runs);
  mine[S_MAIN_CPU] = bench_median(main_cpu, cfg.runs);
  mine[S_OTHER_CPU] = bench_median(other_cpu, cfg.runs);
  mine[S_PUTS] = (double)puts;
  mine[S_LAST_SEED] = (double)last_seed;
  if (ARMCI_Put(mine, (double *)bases[0] + me * NSTATS, (int)sizeof mine, 0) != 0)
    die("ARMCI_Put of the results to rank 0 failed");
  ARMCI_Fence(0);
  ARMCI_Barrier();

  if (me == 0) {
    double all[MAX_PROCS * NSTATS];
    access_begin(bases[0]);
    memcpy(all, bases[0], sizeof(double) * (size_t)nproc * NSTATS);
    long bad = -1;
    if (cfg.mixed) /* the last put of the last run */
      bad = find_pattern_mismatch(put_dst, (size_t)cfg.put_bytes, (unsigned)all[NSTATS + S_LAST_SEED]);
    access_end(bases[0]);
    if (bad >= 0)
      die("-m mixed: rank 1's last put did not arrive (byte %ld differs)", bad);

    bench_report_table(&total, NULL, &table,
                       "# Gflop/s of the kernel over wall time, median/min/max of %d runs; Gf/cpu-s: over\n"
                       "# the main thread's CPU time (what the kernel does while it has a core); main_cpu:\n"
                       "# the main thread's CPU time / wall time; other_cpu: the process's other threads'\n"
                       "# (helper, network) CPU time / wall time\n\n",
                       cfg.runs);
    for (int r = 0; r < nproc; r++) {
      const double *s = all + r * NSTATS;
      bench_row(&table, path, mode, helper_setting(), (long)r, cfg.mixed && r == 1 ? "putter" : "compute",
                s[S_SECONDS], s[S_RATE], s[S_RATE_MIN], s[S_RATE_MAX], s[S_CPU_RATE],
                s[S_MAIN_CPU], s[S_OTHER_CPU], s[S_PUTS]);
    }
    bench_csv_finish();
    printf("# kernel checksum %.6f\n", kernel_checksum());
    fflush(stdout);
  }
  ARMCI_Barrier();
  if (put_src)
    ARMCI_Free_local(put_src);
  bench_free_all(bases);
  bench_end();
  return 0;
}
