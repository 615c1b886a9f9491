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
 *   ARMCI-MPI: mpicc -O2 benchmarks/helper_cost.c -larmci-openmpi
 * See benchmarks/README.md; benchmarks/compare_overlap.sh runs it under each
 * helper setting.
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "helper_cost"
#include "bench_common.h"
#include "bench_compute.h"

#define MAX_REPS 101
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

static double med(const double *v, int n) {
  double tmp[MAX_REPS];
  memcpy(tmp, v, sizeof(double) * (size_t)n);
  return median(tmp, n);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np 2 helper_cost [-k RUNS] [-d SECONDS] [-m idle|mixed] [-p PERIOD_US]\n"
          "                                [-b BYTES] [-c FILE.csv]\n"
          "  -k RUNS     kernel runs per rank, median reported (default 9, at most %d)\n"
          "  -d SECONDS  length of one run (default 0.2)\n"
          "  -m MODE     idle: no communication (default); mixed: rank 1 puts to rank 0\n"
          "              while both compute\n"
          "  -p US       mixed: one put every US microseconds of rank 1's kernel (default 1000)\n"
          "  -b BYTES    mixed: bytes per put (default 4096)\n"
          "  -c FILE     write the CSV there instead of after '# CSV' on stdout\n",
          MAX_REPS);
}

static int parse_args(int argc, char **argv, struct config *c) {
  c->runs = 9;
  c->seconds = 0.2;
  c->mixed = 0;
  c->period_us = 1000;
  c->put_bytes = 4096;
  c->csv_path = NULL;
  int opt;
  opterr = 0;
  while ((opt = getopt(argc, argv, "k:d:m:p:b:c:h")) != -1) {
    switch (opt) {
    case 'k':
      c->runs = atoi(optarg);
      if (c->runs < 1 || c->runs > MAX_REPS)
        goto bad;
      break;
    case 'd':
      c->seconds = strtod(optarg, NULL);
      if (!(c->seconds > 0 && c->seconds <= 60))
        goto bad;
      break;
    case 'm':
      if (!strcmp(optarg, "idle"))
        c->mixed = 0;
      else if (!strcmp(optarg, "mixed"))
        c->mixed = 1;
      else
        goto bad;
      break;
    case 'p':
      c->period_us = strtod(optarg, NULL);
      if (!(c->period_us >= 1))
        goto bad;
      break;
    case 'b':
      c->put_bytes = parse_bytes(optarg);
      if (c->put_bytes < 8 || c->put_bytes > (64L << 20))
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
        fprintf(stderr, "helper_cost: unknown option or missing value '-%c'\n", optopt);
        usage(stderr);
      }
      return 2;
    }
    continue;
  bad:
    if (me == 0) {
      fprintf(stderr, "helper_cost: bad value '%s' for -%c\n", optarg, opt);
      usage(stderr);
    }
    return 2;
  }
  if (optind < argc) {
    if (me == 0)
      fprintf(stderr, "helper_cost: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv);
  const int nproc = armci_msg_nproc();
  struct config cfg;
  int code = parse_args(argc, argv, &cfg);
  if (code == 0 && (nproc > MAX_PROCS || (cfg.mixed && nproc < 2))) {
    if (me == 0)
      fprintf(stderr, "helper_cost: needs 1 to %d processes (2 or more with -m mixed), got %d\n",
              MAX_PROCS, nproc);
    code = 2;
  }
  if (code != 0) {
    bench_end();
    return code == 1 ? 0 : code;
  }

  /* Rank 0's region: one page of results from every rank, then the
   * destination of rank 1's puts. */
  const size_t stats_bytes = (size_t)MAX_PROCS * NSTATS * sizeof(double);
  const size_t region = stats_bytes + STAT_PAGE + (size_t)cfg.put_bytes;
  void **bases = calloc((size_t)nproc, sizeof *bases);
  if (!bases)
    die("out of memory");
  if (ARMCI_Malloc(bases, (armci_size_t)region) != 0 || !bases[0])
    die("ARMCI_Malloc of %zu bytes failed", region);
  unsigned char *put_dst = (unsigned char *)bases[0] + stats_bytes + STAT_PAGE;
  access_begin(bases[me]);
  memset(bases[me], 0, region);
  access_end(bases[me]);
  const int putter = cfg.mixed && me == 1;
  unsigned char *put_src = NULL;
  if (putter && !(put_src = ARMCI_Malloc_local((armci_size_t)cfg.put_bytes)))
    die("ARMCI_Malloc_local of %ld bytes failed", cfg.put_bytes);

  kernel_init();
  FILE *csv = NULL;
  if (me == 0 && cfg.csv_path && !(csv = fopen(cfg.csv_path, "w")))
    die("cannot write %s: %s", cfg.csv_path, strerror(errno));

  /* Every rank sizes its own kernel; rates, not times, are compared. */
  ARMCI_Barrier();
  const double upus = kernel_units_per_us(0.05);
  const long units = (long)(upus * cfg.seconds * 1e6) + 1;
  /* The putter's kernel comes in pieces of one period each. */
  long piece = putter ? (long)(upus * cfg.period_us) : units;
  if (piece < 1)
    piece = 1;

  double secs[MAX_REPS], rate[MAX_REPS], cpu_rate[MAX_REPS], main_cpu[MAX_REPS],
      other_cpu[MAX_REPS];
  long puts = 0;
  unsigned last_seed = 0; /* of rank 1's last put */
  const double t_start = now();
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
  const double total_wall = now() - t_start;

  /* Results into rank 0's memory; rank 1 also says which of its puts came
   * last, for rank 0 to check that it arrived. */
  double mine[NSTATS];
  double sorted[MAX_REPS];
  memcpy(sorted, rate, sizeof(double) * (size_t)cfg.runs);
  qsort(sorted, (size_t)cfg.runs, sizeof(double), cmp_double);
  mine[S_SECONDS] = med(secs, cfg.runs);
  mine[S_RATE] = med(rate, cfg.runs);
  mine[S_RATE_MIN] = sorted[0];
  mine[S_RATE_MAX] = sorted[cfg.runs - 1];
  mine[S_CPU_RATE] = med(cpu_rate, cfg.runs);
  mine[S_MAIN_CPU] = med(main_cpu, cfg.runs);
  mine[S_OTHER_CPU] = med(other_cpu, cfg.runs);
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

    printf("# helper_cost impl=%s path=%s mode=%s helper=%s nproc=%d runs=%d seconds=%.2f",
           IMPL_NAME, nproc > 1 ? transfer_path() : "-", cfg.mixed ? "mixed" : "idle",
           helper_setting(), nproc, cfg.runs, cfg.seconds);
    if (cfg.mixed)
      printf(" put_bytes=%ld period_us=%.0f", cfg.put_bytes, cfg.period_us);
    printf("\n");
    print_settings(stdout);
    printf("# run: %.1f s; load average %.2f\n", total_wall, load_average());
    printf("# Gflop/s of the kernel over wall time, median/min/max of %d runs; Gf/cpu-s: over\n"
           "# the main thread's CPU time (what the kernel does while it has a core); main_cpu:\n"
           "# the main thread's CPU time / wall time; other_cpu: the process's other threads'\n"
           "# (helper, network) CPU time / wall time\n",
           cfg.runs);
    printf("\n%4s %-7s %10s %9s %9s %9s %10s %9s %9s %8s\n", "rank", "role", "seconds", "Gflop/s",
           "min", "max", "Gf/cpu-s", "main_cpu", "other_cpu", "puts");
    for (int r = 0; r < nproc; r++) {
      const double *s = all + r * NSTATS;
      printf("%4d %-7s %10.4f %9.3f %9.3f %9.3f %10.3f %9.3f %9.3f %8.0f\n", r,
             cfg.mixed && r == 1 ? "putter" : "compute", s[S_SECONDS], s[S_RATE], s[S_RATE_MIN],
             s[S_RATE_MAX], s[S_CPU_RATE], s[S_MAIN_CPU], s[S_OTHER_CPU], s[S_PUTS]);
    }
    FILE *out = csv ? csv : stdout;
    if (!csv)
      printf("\n# CSV\n");
    fprintf(out, "impl,path,mode,helper,rank,role,runs,seconds_median,gflops_median,gflops_min,"
                 "gflops_max,gflops_per_cpu_s,main_cpu,other_cpu,puts\n");
    for (int r = 0; r < nproc; r++) {
      const double *s = all + r * NSTATS;
      fprintf(out, "%s,%s,%s,%s,%d,%s,%d,%.5f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f\n", IMPL_NAME,
              nproc > 1 ? transfer_path() : "-", cfg.mixed ? "mixed" : "idle", helper_setting(), r,
              cfg.mixed && r == 1 ? "putter" : "compute", cfg.runs, s[S_SECONDS], s[S_RATE],
              s[S_RATE_MIN], s[S_RATE_MAX], s[S_CPU_RATE], s[S_MAIN_CPU], s[S_OTHER_CPU],
              s[S_PUTS]);
    }
    if (csv) {
      if (fclose(csv) != 0)
        die("cannot write %s", cfg.csv_path);
      printf("\n# CSV written to %s\n", cfg.csv_path);
    }
    printf("# kernel checksum %.6f\n", kernel_checksum());
    fflush(stdout);
  }
  ARMCI_Barrier();
  if (put_src)
    ARMCI_Free_local(put_src);
  ARMCI_Free(bases[me]);
  free(bases);
  bench_end();
  return 0;
}
