/* winlock_bench: the cost of a hybrid window lock (ARMCI_WIN_LOCK_MIGRATE)
 * in each mode and of one migration. The target is rank 0; the local
 * locker is rank 1 (a node neighbour of rank 0: run with ARMCI_VNODE_SIZE=2
 * or more), the remote locker the first rank on another node.
 *
 *   local_lock_unlock    the local locker: exclusive lock + unlock of rank 0,
 *                        over and over (migrating policies: CPU mode)
 *   remote_lock_unlock   the remote locker, the same (network mode)
 *   alt_local            the local locker's lock + unlock right after the
 *                        remote locker's (a barrier apart): under a
 *                        migrating policy each one moves the lock to CPU mode
 *   alt_remote           the remote locker's right after the local one's:
 *                        each moves it back to network mode (a claim
 *                        through rank 0's helper, then a network atomic)
 *
 * Run it once per policy (benchmarks/compare_winlock.sh does): the alt_*
 * cells under `pinned` are the same pattern without migrations, so the
 * difference is what a migration costs. Each sample is the mean of --ops
 * lock/unlock pairs; the table gives median and quartiles of --reps samples.
 * The barriers of the alt_* cells are outside the timed calls. */
#include "harness.h"

#include <armci_win.h>
#include <message.h>
#include <stdlib.h>
#include <string.h>

static ARMCI_Win win;
static int local_rank = 1, remote_rank = -1;

static double lock_unlock(void) {
  const double t0 = now();
  BENCH_CHECK(ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 0, 0, win), "ARMCI_Win_lock");
  BENCH_CHECK(ARMCI_Win_unlock(0, win), "ARMCI_Win_unlock");
  return now() - t0;
}

/* The mean of `ops` lock/unlock pairs by `who` alone; others wait. */
static double alone(int who, int ops) {
  double t = 0;
  ARMCI_Barrier();
  if (me == who) {
    lock_unlock(); /* the mode this locker works in */
    const double t0 = now();
    for (int i = 0; i < ops; ++i) lock_unlock();
    t = (now() - t0) / ops;
  }
  ARMCI_Barrier();
  return t;
}

/* Alternating lockers: the mean time of each one's lock/unlock. */
static void alternate(int ops, double *t_local, double *t_remote) {
  double local = 0, remote = 0;
  for (int i = 0; i < ops; ++i) {
    ARMCI_Barrier();
    if (me == remote_rank) remote += lock_unlock();
    ARMCI_Barrier();
    if (me == local_rank) local += lock_unlock();
  }
  ARMCI_Barrier();
  *t_local = local / ops;
  *t_remote = remote / ops;
}

/* Rank 0 gets rank `from`'s value. */
static double gather(double v, int from) {
  double all[2] = {me == from ? v : 0, 0};
  armci_msg_dgop(all, 1, (char *)"+");
  return all[0];
}

int main(int argc, char **argv) {
  int reps = 9, ops = 200;
  const char *csv = NULL;
  bench_start(&argc, &argv, "winlock_bench");
  const struct bench_opt opts[] = {BENCH_OPT_REPS('r', &reps, NULL),
                                   {'n', "ops", OPT_INT, &ops, 1, 1000000, "N",
                                    "lock/unlock pairs in one sample", NULL, NULL, 0, NULL},
                                   BENCH_OPT_CSV('c', &csv), BENCH_OPT_END};
  bench_parse(argc, argv, opts,
              "The cost of hybrid window locks (ARMCI_WIN_LOCK_MIGRATE) in CPU and network mode and of a\n"
              "migration; target rank 0, local locker rank 1, remote locker the first rank off rank 0's node.");
  const int np = armci_msg_nproc();
  for (int r = 1; r < np && remote_rank < 0; ++r)
    if (armci_domain_id(ARMCI_DOMAIN_SMP, r) != armci_domain_id(ARMCI_DOMAIN_SMP, 0)) remote_rank = r;
  if (np < 3 || remote_rank < 0 || armci_domain_id(ARMCI_DOMAIN_SMP, 1) != armci_domain_id(ARMCI_DOMAIN_SMP, 0))
    die("winlock_bench needs rank 1 on rank 0's node and a rank on another node (np 4, ARMCI_VNODE_SIZE=2)");
  const char *policy = getenv("ARMCI_WIN_LOCK_MIGRATE");
  if (policy == NULL) policy = "pinned";

  void *base;
  BENCH_CHECK(ARMCI_Win_allocate(64, 1, NULL, &base, &win), "ARMCI_Win_allocate");
  enum { CELLS = 4 };
  static const char *names[CELLS] = {"local_lock_unlock", "remote_lock_unlock", "alt_local", "alt_remote"};
  double samples[CELLS][BENCH_MAX_REPS];
  struct bench_run run;
  bench_run_begin(&run);
  alternate(5, &samples[2][0], &samples[3][0]); /* warm-up: connections, mappings */
  for (int rep = 0; rep < reps; ++rep) {
    samples[0][rep] = gather(alone(local_rank, ops), local_rank);
    samples[1][rep] = gather(alone(remote_rank, ops), remote_rank);
    double l, r;
    alternate(ops, &l, &r);
    samples[2][rep] = gather(l, local_rank);
    samples[3][rep] = gather(r, remote_rank);
  }
  long counts[4];
  BENCH_CHECK(ARMCIX_Win_lock_counters(win, counts), "ARMCIX_Win_lock_counters");
  double migrations[2] = {0, 0};
  if (me == local_rank) migrations[0] = (double)counts[2];
  if (me == remote_rank) migrations[1] = (double)counts[3];
  armci_msg_dgop(migrations, 2, (char *)"+");

  static const struct bench_col cols[] = {
      {"cell", "cell", COL_STR, -20, 0, 0},       {"policy", "policy", COL_STR, -10, 0, 0},
      {"median us", "median_us", COL_DOUBLE, 10, 3, 4}, {"q1 us", "q1_us", COL_DOUBLE, 9, 3, 4},
      {"q3 us", "q3_us", COL_DOUBLE, 9, 3, 4},
  };
  static const struct bench_table table = BENCH_TABLE(cols);
  if (me == 0) {
    bench_csv_open(csv, &table, reps);
    print_settings(stdout);
    printf("# np %d, local locker rank %d, remote locker rank %d, binding %s; migrations made: %.0f to cpu by "
           "the local locker, %.0f to network by the remote one\n",
           np, local_rank, remote_rank, bench_binding(), migrations[0], migrations[1]);
    bench_table_header(&table);
    for (int c = 0; c < CELLS; ++c) {
      for (int rep = 0; rep < reps; ++rep) samples[c][rep] *= 1e6;
      const struct bench_stats s = bench_stats(samples[c], reps);
      bench_row(&table, names[c], policy, s.median, s.q1, s.q3);
    }
    bench_run_print(&run, "%s", "");
    bench_csv_finish();
  }
  BENCH_CHECK(ARMCI_Win_free(&win), "ARMCI_Win_free");
  bench_end();
  return 0;
}
