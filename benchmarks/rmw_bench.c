/*
 * rmw_bench: latency of ARMCI_Rmw (each op) and of ARMCI_Lock + ARMCI_Unlock,
 * to self and to rank 1, without contention; then throughput of lock/unlock
 * and of fetch-and-add on one location at rank 0 with every rank hammering it.
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  gcc -O2 -I<src>/include rmw_bench.c -L<build>/.libs -larmci
 *   ARMCI-MPI: mpicc -O2 rmw_bench.c -larmci-openmpi
 * Same node vs. network for libarmci: ARMCI_SHM=1 (default; CPU atomics when
 * all ranks share a node) or ARMCI_SHM=0 (every Rmw through the network layer).
 *
 * Options: -r REPS samples per cell (median reported, default 9), -t MS per
 * latency sample (default 5), -n N lock/unlock (and fetch-add) pairs per rank
 * per contended sample (default 2000), -q quick (3 samples of 2 ms, n 500),
 * -c FILE CSV to FILE instead of stdout. See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#define BENCH_PROGRAM "rmw_bench"
#include "bench_common.h"

#define MAX_REPS 101

static int np;

/* Shared words, at every rank: [0] fetch-add int, [1] fetch-add long,
 * [2] swap int, [3] swap long, [4] contended counter, [5] lock-protected. */
enum { W_FADD_I, W_FADD_L, W_SWAP_I, W_SWAP_L, W_CONTENDED, W_LOCKED, NWORDS };
static long **words;

enum op { OP_FADD_INT, OP_FADD_LONG, OP_SWAP_INT, OP_SWAP_LONG, OP_LOCK_UNLOCK, NOPS };
static const char *op_names[NOPS] = {"fetch_add_int", "fetch_add_long", "swap_int", "swap_long", "lock_unlock"};

static long fadd_done[2][2]; /* [int/long][target index] increments issued, for the check */

static void run_op(enum op op, int target, long iters) {
  int ti = target == me ? 0 : 1;
  long *w = words[target];
  for (long i = 0; i < iters; i++) {
    int iv = (int)i;
    long lv = i;
    switch (op) {
    case OP_FADD_INT: ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &iv, (int *)&w[W_FADD_I], 1, target); break;
    case OP_FADD_LONG: ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &lv, &w[W_FADD_L], 1, target); break;
    case OP_SWAP_INT: ARMCI_Rmw(ARMCI_SWAP, &iv, (int *)&w[W_SWAP_I], 0, target); break;
    case OP_SWAP_LONG: ARMCI_Rmw(ARMCI_SWAP_LONG, &lv, &w[W_SWAP_L], 0, target); break;
    case OP_LOCK_UNLOCK:
      ARMCI_Lock(0, target);
      ARMCI_Unlock(0, target);
      break;
    default: break;
    }
  }
  if (op == OP_FADD_INT) fadd_done[0][ti] += iters;
  if (op == OP_FADD_LONG) fadd_done[1][ti] += iters;
}

struct result {
  char op[32];
  char target[16];
  double lat_us;
  double lat_min_us;
  double mops;
  long iters;
};
static struct result results[32];
static int nresults;

/* Latency: rank 0 alone, the others wait in the barrier. */
static void latency(enum op op, int target, int reps, double sample_s) {
  double samples[MAX_REPS];
  long iters = 1;
  if (me == 0) { /* calibrate */
    for (;;) {
      double t0 = now();
      run_op(op, target, iters);
      double dt = now() - t0;
      if (dt >= sample_s * 0.5 || iters >= (1L << 30)) {
        iters = (long)((double)iters * sample_s / (dt > 0 ? dt : 1e-9)) + 1;
        break;
      }
      iters *= 4;
    }
  }
  for (int r = 0; r < reps; r++) {
    ARMCI_Barrier();
    if (me == 0) {
      double t0 = now();
      run_op(op, target, iters);
      samples[r] = (now() - t0) / (double)iters;
    }
    ARMCI_Barrier();
  }
  if (me == 0) {
    struct result *res = &results[nresults++];
    snprintf(res->op, sizeof res->op, "%s", op_names[op]);
    snprintf(res->target, sizeof res->target, "%s", target == 0 ? "self" : "rank1");
    res->lat_us = median(samples, reps) * 1e6;
    res->lat_min_us = samples[0] * 1e6; /* sorted by median() */
    res->mops = 1.0 / res->lat_us;
    res->iters = iters;
  }
}

/* Throughput: every rank, n operations on one location at rank 0. */
static void contended(enum op op, int reps, long n) {
  double samples[MAX_REPS];
  long *w = words[0];
  for (int r = 0; r < reps; r++) {
    ARMCI_Barrier();
    double t0 = now();
    for (long i = 0; i < n; i++) {
      if (op == OP_LOCK_UNLOCK) {
        ARMCI_Lock(0, 0);
        ARMCI_Unlock(0, 0);
      } else {
        long old;
        ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, &w[W_CONTENDED], 1, 0);
      }
    }
    ARMCI_Barrier();
    samples[r] = now() - t0; /* rank 0's view: the slowest rank ends it */
  }
  if (me == 0) {
    struct result *res = &results[nresults++];
    snprintf(res->op, sizeof res->op, "%s_contended", op_names[op]);
    snprintf(res->target, sizeof res->target, "all->0");
    double t = median(samples, reps);
    res->lat_us = t / (double)(n * np) * 1e6; /* time per operation, all ranks together */
    res->lat_min_us = samples[0] / (double)(n * np) * 1e6;
    res->mops = (double)(n * np) / t / 1e6;
    res->iters = n;
  }
}

/* Not timed: a lock-protected Get/add/Put from every rank, and the fetch-add
 * counters, must come out exact, or the figures above mean nothing. */
static void verify(int reps, long n) {
  const int rounds = 200;
  for (int i = 0; i < rounds; i++) {
    int home = i % np;
    long v;
    ARMCI_Lock(0, home);
    ARMCI_Get(&words[home][W_LOCKED], &v, sizeof v, home);
    v += me + 1;
    ARMCI_Put(&v, &words[home][W_LOCKED], sizeof v, home);
    ARMCI_Unlock(0, home);
  }
  ARMCI_Barrier();
  access_begin(words[me]);
  long expected = 0;
  for (int r = 0; r < np; r++)
    for (int i = 0; i < rounds; i++) expected += (i % np == me) ? r + 1 : 0;
  if (words[me][W_LOCKED] != expected)
    die("check failed: lock-protected counter is %ld, expected %ld", words[me][W_LOCKED], expected);
  if (me == 0 && words[0][W_CONTENDED] != (long)reps * n * np)
    die("check failed: contended fetch-and-add counter is %ld, expected %ld", words[0][W_CONTENDED],
        (long)reps * n * np);
  access_end(words[me]);
  if (me == 0) {
    long self_i, self_l, rem_i = 0, rem_l = 0;
    access_begin(words[0]);
    self_i = (long)*(int *)&words[0][W_FADD_I];
    self_l = words[0][W_FADD_L];
    access_end(words[0]);
    if (np > 1) {
      int iv;
      ARMCI_Get(&words[1][W_FADD_I], &iv, sizeof iv, 1);
      ARMCI_Get(&words[1][W_FADD_L], &rem_l, sizeof rem_l, 1);
      rem_i = iv;
    }
    /* int counters wrap at 2^32 */
    if ((int)self_i != (int)fadd_done[0][0] || self_l != fadd_done[1][0] ||
        (np > 1 && ((int)rem_i != (int)fadd_done[0][1] || rem_l != fadd_done[1][1])))
      die("check failed: fetch-and-add counters self %ld/%ld remote %ld/%ld, expected %ld/%ld and %ld/%ld", self_i,
          self_l, rem_i, rem_l, fadd_done[0][0], fadd_done[1][0], fadd_done[0][1], fadd_done[1][1]);
  }
  ARMCI_Barrier();
}

int main(int argc, char **argv) {
  bench_start(&argc, &argv);
  np = armci_msg_nproc();

  int reps = 9;
  double sample_ms = 5;
  long n = 2000;
  const char *csv_path = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "r:t:n:qc:h")) != -1) {
    switch (opt) {
    case 'r': reps = atoi(optarg); break;
    case 't': sample_ms = atof(optarg); break;
    case 'n': n = atol(optarg); break;
    case 'q': reps = 3, sample_ms = 2, n = 500; break;
    case 'c': csv_path = optarg; break;
    default:
      if (me == 0) fprintf(stderr, "usage: rmw_bench [-r REPS] [-t MS] [-n N] [-q] [-c FILE]\n");
      bench_end();
      return opt == 'h' ? 0 : 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS || sample_ms <= 0 || n < 1) die("bad options: -r 1..%d, -t > 0, -n > 0", MAX_REPS);
  if (np < 2) die("needs at least 2 processes (mpirun -np 2), got %d", np);

  words = malloc(sizeof(long *) * (size_t)np);
  if (ARMCI_Malloc((void **)words, (armci_size_t)(NWORDS * sizeof(long)))) die("ARMCI_Malloc failed");
  access_begin(words[me]);
  memset(words[me], 0, NWORDS * sizeof(long));
  access_end(words[me]);
  ARMCI_Create_mutexes(1);
  ARMCI_Barrier();

  const char *mode = atomics_mode();

  double wall0 = now(), cpu0 = cpu_now();
  for (int op = 0; op < NOPS; op++) {
    latency((enum op)op, 0, reps, sample_ms * 1e-3);
    latency((enum op)op, 1, reps, sample_ms * 1e-3);
  }
  contended(OP_LOCK_UNLOCK, reps, n);
  contended(OP_FADD_LONG, reps, n);
  double wall = now() - wall0, cpu = cpu_now() - cpu0;
  verify(reps, n);

  if (me == 0) {
    printf("# rmw_bench impl=%s mode=%s np=%d reps=%d sample_ms=%g n=%ld\n", IMPL_NAME, mode, np, reps, sample_ms, n);
    printf("# run: %.1f s, rank 0 cpu/wall %.2f\n", wall, cpu / wall);
    printf("%-26s %-7s %12s %12s %12s\n", "op", "target", "lat_us", "min_us", "Mops/s");
    for (int i = 0; i < nresults; i++)
      printf("%-26s %-7s %12.3f %12.3f %12.3f\n", results[i].op, results[i].target, results[i].lat_us,
             results[i].lat_min_us, results[i].mops);
    printf("(contended rows: all ranks on one location at rank 0; lat_us = wall time / all operations)\n");
    FILE *csv = stdout;
    if (csv_path) {
      csv = fopen(csv_path, "w");
      if (!csv) die("cannot write %s", csv_path);
    } else {
      printf("# CSV\n");
    }
    fprintf(csv, "impl,mode,nprocs,op,target,lat_us_median,lat_us_min,mops_median\n");
    for (int i = 0; i < nresults; i++)
      fprintf(csv, "%s,%s,%d,%s,%s,%.4f,%.4f,%.4f\n", IMPL_NAME, mode, np, results[i].op, results[i].target,
              results[i].lat_us, results[i].lat_min_us, results[i].mops);
    if (csv != stdout) fclose(csv);
  }
  ARMCI_Barrier();
  ARMCI_Destroy_mutexes();
  ARMCI_Free(words[me]);
  bench_end();
  return 0;
}
