/* mp_winlock: hybrid window locks that migrate between CPU and network
 * atomics (ARMCI_WIN_LOCK_MIGRATE; this program sets "always" unless
 * MP_WINLOCK_POLICY or ARMCI_WIN_LOCK_MIGRATE names a policy).
 *  - exclusive counters: every rank locks every target exclusively ROUNDS
 *    times, in an order that differs per rank, so node neighbours (CPU
 *    atomics) and ranks off the node (network atomics) take turns on each
 *    lock; under the lock it adds one to the target's counter by get +
 *    flush + put. Every count must be exact: a migration that let a second
 *    holder in loses increments;
 *  - readers and writers: writers (exclusive) fill a target's pattern with
 *    one value in two halves, flushed apart; readers (shared) read the whole
 *    pattern twice, a yield apart, and must never see two values nor a
 *    change between the reads;
 *  - the counters (ARMCIX_Win_lock_counters): every acquisition counted
 *    once, and when the window spans more than one node, migrations both
 *    ways (a deterministic phase forces one of each). */
#include "mp_common.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "armci_win.h"
#include "message.h"

enum { ROUNDS = 60, PATTERN = 64, RW_ROUNDS = 90 };

/* The window of each rank: [0] the counter, [1..PATTERN] the pattern. */
static long *base;
static ARMCI_Win win;
static long locks_taken;

static void lock(int type, int target) {
  MP_CHECK_INT(0, ARMCI_Win_lock(type, target, 0, win));
  ++locks_taken;
}

static void exclusive_counters(void) {
  for (int i = 0; i < ROUNDS; ++i)
    for (int k = 0; k < mp_np; ++k) {
      /* Rank r starts at target r and walks on: every lock has lockers of
       * both kinds at once. */
      const int target = (mp_me + k + i) % mp_np;
      long v = -1;
      lock(ARMCI_WIN_LOCK_EXCLUSIVE, target);
      MP_CHECK_INT(0, ARMCI_Win_get(&v, sizeof v, target, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_flush(target, win));
      MP_CHECK(v >= 0 && v < (long)ROUNDS * mp_np, "counter at rank %d read %ld", target, v);
      /* Holding the lock across a yield now and then (2 cores, 4 ranks)
       * widens the window in which a second holder, let in by a migration
       * that did not wait, would overwrite this increment. */
      if ((i + k) % 3 == 0) sched_yield();
      v += 1;
      MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, target, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_unlock(target, win));
    }
  ARMCI_Barrier();
  MP_CHECK_INT(ROUNDS * mp_np, (int)base[0]);
}

static void readers_and_writers(void) {
  long pattern[PATTERN], seen[PATTERN], again[PATTERN];
  mp_rng_t rng;
  mp_rng_init(&rng, mp_seed(), mp_me, 13);
  for (int i = 0; i < RW_ROUNDS; ++i) {
    const int target = (int)(mp_rng_next(&rng) % (uint64_t)mp_np);
    if ((i + mp_me) % 3 == 0) {
      const long value = (long)mp_me * 100000 + i + 1;
      for (int j = 0; j < PATTERN; ++j) pattern[j] = value;
      lock(ARMCI_WIN_LOCK_EXCLUSIVE, target);
      /* Two halves, the first in place before the second leaves: a reader
       * let in meanwhile sees two values. */
      MP_CHECK_INT(0, ARMCI_Win_put(pattern, sizeof pattern / 2, target, 1, win));
      MP_CHECK_INT(0, ARMCI_Win_flush(target, win));
      if (i % 2 == 0) sched_yield();
      MP_CHECK_INT(0, ARMCI_Win_put(pattern + PATTERN / 2, sizeof pattern / 2, target, 1 + PATTERN / 2, win));
      MP_CHECK_INT(0, ARMCI_Win_unlock(target, win));
    } else {
      lock(ARMCI_WIN_LOCK_SHARED, target);
      MP_CHECK_INT(0, ARMCI_Win_get(seen, sizeof seen, target, 1, win));
      /* Read again after a yield: no writer may get in while a reader
       * holds the lock, however long it holds it. */
      MP_CHECK_INT(0, ARMCI_Win_flush(target, win));
      sched_yield();
      MP_CHECK_INT(0, ARMCI_Win_get(again, sizeof again, target, 1, win));
      MP_CHECK_INT(0, ARMCI_Win_unlock(target, win));
      for (int j = 1; j < PATTERN; ++j)
        MP_CHECK(seen[j] == seen[0], "rank %d's pattern half-written: [0] %ld, [%d] %ld", target, seen[0], j,
                 seen[j]);
      for (int j = 0; j < PATTERN; ++j)
        MP_CHECK(again[j] == seen[j], "rank %d's pattern changed under a shared lock: [%d] %ld, then %ld", target,
                 j, seen[j], again[j]);
    }
  }
  ARMCI_Barrier();
}

/* Rank 0's lock is taken by rank 0 (a CPU locker: under a migrating policy
 * it moves to CPU mode), then by a rank on another node (it must come back
 * to network mode), then by rank 0 again. */
static void forced_migrations(int other) {
  if (mp_me == 0) {
    lock(ARMCI_WIN_LOCK_EXCLUSIVE, 0);
    MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
  }
  ARMCI_Barrier();
  if (mp_me == other) {
    lock(ARMCI_WIN_LOCK_SHARED, 0);
    MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
  }
  ARMCI_Barrier();
  if (mp_me == 0) {
    lock(ARMCI_WIN_LOCK_SHARED, 0);
    MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
  }
  ARMCI_Barrier();
}

int main(int argc, char **argv) {
  /* The runner clears ARMCI_* settings: MP_WINLOCK_POLICY picks another. */
  const char *policy = getenv("MP_WINLOCK_POLICY");
  if (policy == NULL) policy = getenv("ARMCI_WIN_LOCK_MIGRATE");
  if (policy == NULL) policy = "always";
  setenv("ARMCI_WIN_LOCK_MIGRATE", policy, 1);
  mp_init(&argc, &argv);
  MP_CHECK_INT(0, ARMCI_Win_allocate((1 + PATTERN) * sizeof(long), sizeof(long), NULL, (void **)&base, &win));
  memset(base, 0, (1 + PATTERN) * sizeof(long));
  ARMCI_Barrier();

  exclusive_counters();
  readers_and_writers();
  /* A rank on another node than rank 0, if any. */
  int other = -1;
  for (int r = 1; r < mp_np && other < 0; ++r)
    if (armci_domain_id(ARMCI_DOMAIN_SMP, r) != armci_domain_id(ARMCI_DOMAIN_SMP, 0)) other = r;
  if (other > 0) forced_migrations(other);

  long counts[4] = {-1, -1, -1, -1};
  MP_CHECK_INT(0, ARMCIX_Win_lock_counters(win, counts));
  MP_CHECK(counts[0] + counts[1] == locks_taken, "%ld intra-node + %ld network locks counted, %ld taken", counts[0],
           counts[1], locks_taken);
  long totals[4];
  memcpy(totals, counts, sizeof totals);
  armci_msg_lgop(totals, 4, (char *)"+");
  /* Without a helper thread windows keep network atomics (a claim would
   * wait for a computing target). */
  const char *helper = getenv("ARMCI_HELPER");
  const char *thread = getenv("ARMCI_PROGRESS_THREAD"); /* the old spelling */
  const int has_helper = !(helper ? strcmp(helper, "none") == 0 : thread && strcmp(thread, "0") == 0);
  const int migrating = strcmp(policy, "pinned") != 0 && has_helper;
  if (other < 0) {
    /* One node: CPU words only, nothing to migrate. */
    MP_CHECK(totals[1] == 0 && totals[2] == 0 && totals[3] == 0,
             "one node, yet %ld network locks and %ld + %ld migrations", totals[1], totals[2], totals[3]);
  } else if (migrating) {
    MP_CHECK(totals[2] > 0 && totals[3] > 0, "policy %s, yet migrations %ld to cpu, %ld to network", policy,
             totals[2], totals[3]);
  } else {
    MP_CHECK(totals[0] == 0 && totals[2] + totals[3] == 0,
             "pinned (or no helper), yet %ld intra-node locks, %ld migrations", totals[0], totals[2] + totals[3]);
  }
  if (mp_me == 0)
    printf("mp_winlock: policy %s, np %d: %ld intra-node locks, %ld network, migrations %ld to cpu, %ld to network\n",
           policy, mp_np, totals[0], totals[1], totals[2], totals[3]);

  MP_CHECK_INT(0, ARMCI_Win_free(&win));
  ARMCI_Finalize();
  mp_pass("mp_winlock", mp_me);
  return 0;
}
