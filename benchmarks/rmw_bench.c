/*
 * rmw_bench: latency of ARMCI_Rmw (each op) and of ARMCI_Lock + ARMCI_Unlock,
 * to self and to rank 1, without contention; then throughput of lock/unlock
 * and of fetch-and-add on one location at rank 0 with every rank hammering it.
 *
 * One source, two builds (as contig_bench):
 *   libarmci:  make builds benchmarks/rmw_bench
 *   ARMCI-MPI: mpicc -O2 benchmarks/rmw_bench.c benchmarks/harness*.c -larmci-openmpi -lm
 * Same node vs. network for libarmci: ARMCI_SHM=1 (default; CPU atomics when
 * all ranks share a node) or ARMCI_SHM=0 (every Rmw through the network layer).
 *
 * Options: -r REPS samples per cell (median reported, default 9), -t MS per
 * latency sample (default 5), -n N lock/unlock (and fetch-add) pairs per rank
 * per contended sample (default 2000), -q quick (3 samples of 2 ms, n 500),
 * -c FILE CSV to FILE instead of stdout. See benchmarks/README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"



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

struct op_ctx {
  enum op op;
  int target;
};

static double run_op_timed(void *ctx, long n) {
  struct op_ctx *c = ctx;
  const double t0 = now();
  run_op(c->op, c->target, n);
  return now() - t0;
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
  double samples[BENCH_MAX_REPS];
  long iters = 1;
  if (me == 0) {
    struct op_ctx ctx = {op, target};
    const struct bench_calibration cal = {sample_s, 0.5, 0, 1, 1, 1L << 30};
    iters = bench_calibrate(&cal, run_op_timed, &ctx);
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
    const struct bench_stats st = bench_stats(samples, reps);
    res->lat_us = st.median * 1e6;
    res->lat_min_us = st.min * 1e6;
    res->mops = 1.0 / res->lat_us;
    res->iters = iters;
  }
}

/* Throughput: every rank, n operations on one location at rank 0. */
static void contended(enum op op, int reps, long n) {
  double samples[BENCH_MAX_REPS];
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
    const struct bench_stats st = bench_stats(samples, reps);
    const double t = st.median;
    res->lat_us = t / (double)(n * np) * 1e6; /* time per operation, all ranks together */
    res->lat_min_us = st.min / (double)(n * np) * 1e6;
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

static const struct bench_col columns[] = {
    {NULL, "mode", COL_STR, 0, 0, 0},
    {"op", "op", COL_STR, -26, 0, 0},
    {"target", "target", COL_STR, -7, 0, 0},
    {"lat_us", "lat_us_median", COL_DOUBLE, 12, 3, 4},
    {"min_us", "lat_us_min", COL_DOUBLE, 12, 3, 4},
    {"Mops/s", "mops_median", COL_DOUBLE, 12, 3, 4},
};
static const struct bench_table table = BENCH_TABLE(columns);

static const char about[] =
    "Latency of ARMCI_Rmw and of ARMCI_Lock + ARMCI_Unlock to self and to rank 1, then\n"
    "lock/unlock and fetch-and-add throughput with every rank on one location at rank 0.";

int main(int argc, char **argv) {
  int reps = 9, quick = 0, reps_given = 0, time_given = 0, n_given = 0;
  double sample_s = 0.005;
  long n = 2000;
  const char *csv_path = NULL;
  const struct bench_opt opts[] = {
      BENCH_OPT_REPS('r', &reps, &reps_given),
      BENCH_OPT_SAMPLE_MS('t', &sample_s, &time_given),
      {'n', "count", OPT_LONG, &n, 1, 1L << 40, "N",
       "lock/unlock (and fetch-add) pairs per rank per contended sample\n(500 with -q)", NULL, NULL, 0,
       &n_given},
      {'q', "quick", OPT_FLAG, &quick, 0, 0, NULL, "quick run", NULL, NULL, 0, NULL},
      BENCH_OPT_CSV('c', &csv_path),
      BENCH_OPT_END};
  bench_begin(&argc, &argv, "rmw_bench", opts, about, 2);
  np = armci_msg_nproc();
  if (quick) {
    reps = reps_given ? reps : 3;
    sample_s = time_given ? sample_s : 0.002;
    n = n_given ? n : 500;
  }

  words = (long **)bench_malloc_all(NWORDS * sizeof(long), 1);
  ARMCI_Create_mutexes(1);
  ARMCI_Barrier();

  const char *mode = atomics_mode();
  struct bench_run run;
  bench_report_open(&run, csv_path, &table, reps, "mode=%s np=%d binding=%s reps=%d sample_ms=%g n=%ld", mode, np,
                    bench_binding(), reps, sample_s * 1e3, n);
  for (int op = 0; op < NOPS; op++) {
    latency((enum op)op, 0, reps, sample_s);
    latency((enum op)op, 1, reps, sample_s);
  }
  contended(OP_LOCK_UNLOCK, reps, n);
  contended(OP_FADD_LONG, reps, n);
  if (me == 0)
    bench_run_print(&run, NULL);
  verify(reps, n);

  if (me == 0) {
    bench_table_header(&table);
    for (int i = 0; i < nresults; i++)
      bench_row(&table, mode, results[i].op, results[i].target, results[i].lat_us, results[i].lat_min_us,
                results[i].mops);
    printf("(contended rows: all ranks on one location at rank 0; lat_us = wall time / all operations)\n");
    bench_csv_finish();
  }
  ARMCI_Barrier();
  ARMCI_Destroy_mutexes();
  bench_free_all((void **)words);
  bench_end();
  return 0;
}
