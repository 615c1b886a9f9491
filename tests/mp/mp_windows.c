/* mp_windows: windows with MPI-2 one-sided semantics (include/armci_win.h).
 *  - exclusive locks under contention: every rank increments a counter at
 *    rank 0 N times by get + flush + put under the lock; the count is exact;
 *    the same on a window of ranks 0 and 1 only (CPU lock words in the
 *    mixed modes);
 *  - shared locks: two ranks hold a shared lock on one target at once (a
 *    lock that excluded readers from each other would hang); readers never
 *    see a writer's half update (the writer puts each half separately);
 *  - lock_all with Acc SUM from every rank: exact sums;
 *  - every other acc op (PROD, MAX, MIN, BAND, BOR, BXOR) from every rank
 *    at once to every target under lock_all: exact results;
 *  - fence: puts and accs to neighbours, all in place after the fence;
 *    gets of the neighbour's value between fences with NOPUT / NOSTORE;
 *  - PSCW ring: post to the left, start to the right, several rounds;
 *  - fence and PSCW epochs in turn on a window whose ranks are the world's
 *    reversed (the flags are found by window rank): every rank's puts are
 *    checked after each epoch, so a flag read at the wrong place (an epoch
 *    that ends early) shows as stale data or a timeout;
 *  - a fence under NOPRECEDE (which need not wait for the members): each
 *    target's own store before it is never overwritten by a put made after
 *    it, with one target late to the fence each round;
 *  - a window over a subgroup (reversed ranks: group ranks are translated)
 *    and over the even ranks (locks and a fence over the subgroup), two
 *    windows locked at once, strided puts/gets/accs, ARMCI_Win_create over
 *    ARMCI_Malloc memory;
 *  - two windows whose fence epochs overlap, with puts in flight to the
 *    same targets in both, closed in turn (each fence counts its own);
 *  - a fence right after 2 MiB of 64 KiB puts to a rank, checked at once.
 * With the argument fence-deferred or fence-counted, all of it under
 * ARMCI_WIN_FENCE=deferred or counted (set here before ARMCI_Init). */
#include "mp_common.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "armci_win.h"

enum { COUNTS = 200, ROUNDS = 50, HALF = 32 };

static void group_barrier(ARMCI_Group *group) {
  if (group == NULL)
    ARMCI_Barrier();
  else
    armci_msg_group_barrier(group);
}

/* group NULL: the world; otherwise ranks 0 and 1 only (one node in the
 * mixed modes, whose other ranks make the job use network atomics: the
 * window's lock words then go by CPU atomics). */
static void exclusive_counter_in(ARMCI_Group *group, int members) {
  long *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof(long), sizeof(long), group, (void **)&base, &win));
  *base = 0;
  group_barrier(group);
  for (int i = 0; i < COUNTS; ++i) {
    long v = -1;
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 0, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_get(&v, sizeof v, 0, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_flush(0, win));
    v += 1;
    MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, 0, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
  }
  group_barrier(group);
  if (mp_me == 0) MP_CHECK_INT(COUNTS * members, (int)*base);
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
  MP_CHECK_PTR(NULL, win);
}

static void exclusive_counter(void) {
  exclusive_counter_in(NULL, mp_np);
  int pair[2] = {0, 1};
  ARMCI_Group first_two;
  ARMCI_Group_create(2, pair, &first_two);
  if (mp_me < 2) exclusive_counter_in(&first_two, 2);
  ARMCI_Barrier();
  ARMCI_Group_free(&first_two);
}

static void shared_readers(void) {
  long *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(2 * HALF * sizeof(long), 1, NULL, (void **)&base, &win));
  for (int i = 0; i < 2 * HALF; ++i) base[i] = 0;
  ARMCI_Barrier();
  /* Readers share: rank 0 holds a shared lock on rank 0 while rank 1 takes
   * one too. */
  if (mp_me == 0) MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_SHARED, 0, 0, win));
  armci_msg_barrier();
  if (mp_me == 1) MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_SHARED, 0, 0, win));
  armci_msg_barrier();
  if (mp_me <= 1) MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
  ARMCI_Barrier();

  /* Rank 1 writes rounds 1..ROUNDS half by half; the others read. */
  long half[HALF], seen[2 * HALF];
  for (int round = 1; round <= ROUNDS; ++round) {
    if (mp_me == 1) {
      for (int i = 0; i < HALF; ++i) half[i] = round;
      MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 0, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_put(half, sizeof half, 0, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_flush(0, win));
      MP_CHECK_INT(0, ARMCI_Win_put(half, sizeof half, 0, sizeof half, win));
      MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
    } else {
      MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_SHARED, 0, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_get(seen, sizeof seen, 0, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
      for (int i = 1; i < 2 * HALF; ++i)
        MP_CHECK(seen[i] == seen[0], "reader saw a half update: word %d is %ld, word 0 is %ld", i, seen[i], seen[0]);
    }
  }
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

static void lock_all_acc(void) {
  double *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(4 * sizeof(double), sizeof(double), NULL, (void **)&base, &win));
  for (int i = 0; i < 4; ++i) base[i] = 0;
  ARMCI_Barrier();
  double add[4] = {1, 2, 3, 4};
  MP_CHECK_INT(0, ARMCI_Win_lock_all(0, win));
  for (int i = 0; i < 10; ++i)
    for (int t = 0; t < mp_np; ++t)
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_DBL, ARMCI_WIN_SUM, add, sizeof add, t, 0, win));
  MP_CHECK_INT(0, ARMCI_Win_flush_all(win));
  MP_CHECK_INT(0, ARMCI_Win_unlock_all(win));
  ARMCI_Barrier();
  for (int i = 0; i < 4; ++i) MP_CHECK_DBL(10.0 * mp_np * (i + 1), base[i]);
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

static void fence_neighbours(void) {
  enum { N = 512 };
  unsigned char *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(2 * N + sizeof(long), 1, NULL, (void **)&base, &win));
  memset(base, 0, 2 * N + sizeof(long));
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE, win));
  unsigned char out[N], expect[N];
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  for (int round = 0; round < 5; ++round) {
    mp_fill_pattern(out, N, mp_me + round, right, 0);
    MP_CHECK_INT(0, ARMCI_Win_put(out, N, right, (size_t)(round % 2) * N, win));
    long one = 1;
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_SUM, &one, sizeof one, 0, 2 * N, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(0, win));
    mp_fill_pattern(expect, N, left + round, mp_me, 0);
    MP_CHECK_BYTES(expect, base + (round % 2) * N, N, "fence: data from the left neighbour");
    if (mp_me == 0) {
      long sum;
      memcpy(&sum, base + 2 * N, sizeof sum);
      MP_CHECK_INT((round + 1) * mp_np, (int)sum);
    }
    /* Nobody writes the next round before everyone has checked this one. */
    MP_CHECK_INT(0, ARMCI_Win_fence(0, win));
  }
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, win));
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

/* Two windows whose fence epochs overlap, with puts in flight to the same
 * targets in both: each round puts two large blocks into A and many small
 * pieces into B, then closes A and B in turn (B first in odd rounds) and
 * checks each right after its fence. The counted fence counts each
 * window's notifications apart: a target that took B's for A's would leave
 * A's fence before A's data landed (stale data here). Slots alternate by
 * round: the left neighbour can be one round ahead, never two (it needs
 * this rank at the next fence of the same window). */
static void two_windows_alternate(void) {
  enum { BIG = 128 * 1024, PIECE = 64, PIECES = 32, ALT_ROUNDS = 6 };
  static unsigned char out_a[2][BIG], out_b[PIECES * PIECE], expect[BIG];
  unsigned char *a, *b;
  ARMCI_Win wa, wb;
  MP_CHECK_INT(0, ARMCI_Win_allocate(4 * BIG, 1, NULL, (void **)&a, &wa));
  MP_CHECK_INT(0, ARMCI_Win_allocate(2 * PIECES * PIECE, 1, NULL, (void **)&b, &wb));
  memset(a, 0, 4 * BIG);
  memset(b, 0, 2 * PIECES * PIECE);
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  MP_CHECK_INT(0, ARMCI_Win_fence(0, wa));
  MP_CHECK_INT(0, ARMCI_Win_fence(0, wb));
  for (int round = 0; round < ALT_ROUNDS; ++round) {
    const size_t slot_a = (size_t)(round % 2) * 2 * BIG, slot_b = (size_t)(round % 2) * PIECES * PIECE;
    for (int k = 0; k < 2; ++k) {
      mp_fill_pattern(out_a[k], BIG, mp_me + round, right, (size_t)k * BIG);
      MP_CHECK_INT(0, ARMCI_Win_put(out_a[k], BIG, right, slot_a + (size_t)k * BIG, wa));
    }
    mp_fill_pattern(out_b, sizeof out_b, mp_me + 7 * round, right, 0);
    for (int k = 0; k < PIECES; ++k)
      MP_CHECK_INT(0, ARMCI_Win_put(out_b + k * PIECE, PIECE, right, slot_b + (size_t)k * PIECE, wb));
    for (int i = 0; i < 2; ++i) {
      if ((i == 0) == (round % 2 == 0)) {
        MP_CHECK_INT(0, ARMCI_Win_fence(0, wa));
        for (int k = 0; k < 2; ++k) {
          mp_fill_pattern(expect, BIG, left + round, mp_me, (size_t)k * BIG);
          MP_CHECK_BYTES(expect, a + slot_a + (size_t)k * BIG, BIG, "window A after its fence, B's puts in flight");
        }
      } else {
        MP_CHECK_INT(0, ARMCI_Win_fence(0, wb));
        mp_fill_pattern(expect, PIECES * PIECE, left + 7 * round, mp_me, 0);
        MP_CHECK_BYTES(expect, b + slot_b, PIECES * PIECE, "window B after its fence, A's puts in flight");
      }
    }
  }
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, wa));
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, wb));
  MP_CHECK_INT(0, ARMCI_Win_free(&wb));
  MP_CHECK_INT(0, ARMCI_Win_free(&wa));
}

/* A fence that closes many large puts still on their way: every rank puts
 * BLOCKS blocks of BLOCK bytes (past every transport's eager sizes) to its
 * left neighbour, fences, and checks at once what its right neighbour put.
 * Coverage of large puts in flight at a fence, not a proof of the counted
 * fence's wait: with that wait removed it still passed over ucx, mixed and
 * ucx-tcp at np 2-4 (a UCX put on one host has landed by the time it
 * completes locally, which the fence waits for). Slots alternate by round,
 * as in two_windows_alternate. */
static void fence_bulk_puts(void) {
  enum { BLOCK = 64 * 1024, BLOCKS = 32, BULK_ROUNDS = 4 };
  static unsigned char out[BLOCKS * BLOCK], expect[BLOCKS * BLOCK];
  const size_t slot_bytes = (size_t)BLOCKS * BLOCK;
  unsigned char *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(2 * slot_bytes, 1, NULL, (void **)&base, &win));
  memset(base, 0, 2 * slot_bytes);
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  MP_CHECK_INT(0, ARMCI_Win_fence(0, win));
  for (int round = 0; round < BULK_ROUNDS; ++round) {
    const size_t slot = (size_t)(round % 2) * slot_bytes;
    mp_fill_pattern(out, slot_bytes, mp_me + 11 * round, left, 0);
    for (int k = 0; k < BLOCKS; ++k)
      MP_CHECK_INT(0, ARMCI_Win_put(out + (size_t)k * BLOCK, BLOCK, left, slot + (size_t)k * BLOCK, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(0, win));
    mp_fill_pattern(expect, slot_bytes, right + 11 * round, mp_me, 0);
    /* The last block first: the one most likely still on its way. */
    MP_CHECK_BYTES(expect + slot_bytes - BLOCK, base + slot + slot_bytes - BLOCK, BLOCK,
                   "bulk fence: the last block from the right neighbour");
    MP_CHECK_BYTES(expect, base + slot, slot_bytes, "bulk fence: every block from the right neighbour");
  }
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, win));
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

/* Every ARMCI_WIN_* op from every rank at once to every target, under
 * lock_all (shared: the ops race at the target, so a lost update shows):
 * PROD (long, and double complex by i), MAX (int), MIN (double), BAND,
 * BXOR (long), BOR (int), each over E elements with a per-element value. */
enum { E = 16, ACC_ROUNDS = 3 };
struct acc_slots {
  long prod[E], band[E], bxor[E];
  int max[E], bor[E];
  double min[E];
  double dcp[2];
};

static void acc_ops(void) {
  struct acc_slots *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof *base, 1, NULL, (void **)&base, &win));
  for (int i = 0; i < E; ++i) {
    base->prod[i] = i % 2 ? -1 : 1;
    base->band[i] = -1;
    base->bxor[i] = 0;
    base->max[i] = -1000;
    base->bor[i] = 0;
    base->min[i] = 1000;
  }
  base->dcp[0] = 1;
  base->dcp[1] = 0;
  ARMCI_Barrier();
  long two[E], band[E], bxor[E];
  int max[E], bor[E];
  double min[E], by_i[2] = {0, 1};
  for (int i = 0; i < E; ++i) {
    two[i] = 2;
    band[i] = ~(1L << (mp_me + i));
    bxor[i] = 1L << (mp_me + i);
    max[i] = 100 * mp_me + i;
    bor[i] = 1 << ((mp_me + i) % 31);
    min[i] = -(double)mp_me - i;
  }
#define OFF(field) offsetof(struct acc_slots, field)
  MP_CHECK_INT(0, ARMCI_Win_lock_all(0, win));
  for (int t = 0; t < mp_np; ++t)
    for (int round = 0; round < ACC_ROUNDS; ++round) {
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_PROD, two, sizeof two, t, OFF(prod), win));
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_BAND, band, sizeof band, t, OFF(band), win));
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_BXOR, bxor, sizeof bxor, t, OFF(bxor), win));
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_INT, ARMCI_WIN_MAX, max, sizeof max, t, OFF(max), win));
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_INT, ARMCI_WIN_BOR, bor, sizeof bor, t, OFF(bor), win));
      MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_DBL, ARMCI_WIN_MIN, min, sizeof min, t, OFF(min), win));
      if (round == 0)
        MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_DCP, ARMCI_WIN_PROD, by_i, sizeof by_i, t, OFF(dcp), win));
    }
#undef OFF
  MP_CHECK_INT(0, ARMCI_Win_unlock_all(win));
  ARMCI_Barrier();
  for (int i = 0; i < E; ++i) {
    long all_bits = 0;
    for (int r = 0; r < mp_np; ++r) all_bits |= 1L << (r + i);
    int all_or = 0;
    for (int r = 0; r < mp_np; ++r) all_or |= 1 << ((r + i) % 31);
    const long prod = (i % 2 ? -1L : 1L) * (1L << (ACC_ROUNDS * mp_np));
    MP_CHECK(base->prod[i] == prod, "PROD: element %d is %ld, expected %ld", i, base->prod[i], prod);
    MP_CHECK(base->band[i] == ~all_bits, "BAND: element %d is %lx, expected %lx", i, base->band[i], ~all_bits);
    /* An odd number of rounds: every rank's bit stays set. */
    MP_CHECK(base->bxor[i] == all_bits, "BXOR: element %d is %lx, expected %lx", i, base->bxor[i], all_bits);
    MP_CHECK_INT(100 * (mp_np - 1) + i, base->max[i]);
    MP_CHECK_INT(all_or, base->bor[i]);
    MP_CHECK_DBL(-(double)(mp_np - 1) - i, base->min[i]);
  }
  /* i^np */
  static const double powers[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  MP_CHECK_DBL(powers[mp_np % 4][0], base->dcp[0]);
  MP_CHECK_DBL(powers[mp_np % 4][1], base->dcp[1]);
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

/* Fence with gets and NOPRECEDE / NOSTORE / NOPUT asserts: each round every
 * rank writes a round number into its own window, fences, gets the left
 * neighbour's value, fences (the get is complete and nobody writes the
 * next round before everyone read). */
static void fence_gets(void) {
  long *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof(long), sizeof(long), NULL, (void **)&base, &win));
  *base = -1;
  const int left = (mp_me + mp_np - 1) % mp_np;
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE, win));
  for (int round = 0; round < ROUNDS; ++round) {
    *base = 1000L * round + mp_me;
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPUT, win));
    long got = -2;
    MP_CHECK_INT(0, ARMCI_Win_get(&got, sizeof got, left, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSTORE, win));
    MP_CHECK(got == 1000L * round + left, "fence get: round %d got %ld from rank %d", round, got, left);
  }
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, win));
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

static void pscw_ring(void) {
  enum { N = 256 };
  /* Every rank makes every one-rank group, in the same order. */
  ARMCI_Group *single = malloc(sizeof(ARMCI_Group) * (size_t)mp_np);
  for (int r = 0; r < mp_np; ++r) ARMCI_Group_create(1, &r, &single[r]);
  unsigned char *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(N, 1, NULL, (void **)&base, &win));
  memset(base, 0, N);
  ARMCI_Barrier();
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  unsigned char out[N], expect[N];
  for (int round = 0; round < ROUNDS; ++round) {
    MP_CHECK_INT(0, ARMCI_Win_post(&single[left], 0, win));
    MP_CHECK_INT(0, ARMCI_Win_start(&single[right], 0, win));
    mp_fill_pattern(out, N, mp_me + round, right, 0);
    MP_CHECK_INT(0, ARMCI_Win_put(out, N, right, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_complete(win));
    if (round % 2) {
      int flag = 0;
      while (!flag) MP_CHECK_INT(0, ARMCI_Win_test(win, &flag));
    } else {
      MP_CHECK_INT(0, ARMCI_Win_wait(win));
    }
    mp_fill_pattern(expect, N, left + round, mp_me, 0);
    MP_CHECK_BYTES(expect, base, N, "PSCW: data from the left neighbour");
  }
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
  for (int r = 0; r < mp_np; ++r) ARMCI_Group_free(&single[r]);
  free(single);
}

/* PSCW with groups made afresh every round, the partner at a distance
 * that changes with the round: post/start keep the last group's
 * translation while no group is freed, and a new group at a freed one's
 * address must not reuse it (the put would go to a target outside the
 * access epoch, or the data come from the wrong origin). */
static void pscw_regrouped(void) {
  enum { N = 64 };
  unsigned char *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(N, 1, NULL, (void **)&base, &win));
  memset(base, 0, N);
  ARMCI_Barrier();
  ARMCI_Group *single = malloc(sizeof(ARMCI_Group) * (size_t)mp_np);
  unsigned char out[N], expect[N];
  for (int round = 0; round < 2 * mp_np; ++round) {
    const int shift = 1 + round % (mp_np > 1 ? mp_np - 1 : 1);
    const int to = (mp_me + shift) % mp_np, from = (mp_me + mp_np - shift % mp_np) % mp_np;
    for (int r = 0; r < mp_np; ++r) ARMCI_Group_create(1, &r, &single[r]);
    for (int epoch = 0; epoch < 2; ++epoch) {
      MP_CHECK_INT(0, ARMCI_Win_post(&single[from], 0, win));
      MP_CHECK_INT(0, ARMCI_Win_start(&single[to], 0, win));
      mp_fill_pattern(out, N, mp_me + 7 * round + epoch, to, 0);
      MP_CHECK_INT(0, ARMCI_Win_put(out, N, to, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_complete(win));
      MP_CHECK_INT(0, ARMCI_Win_wait(win));
      mp_fill_pattern(expect, N, from + 7 * round + epoch, mp_me, 0);
      MP_CHECK_BYTES(expect, base, N, "PSCW with regrouped partners: data from the origin at this round's distance");
    }
    for (int r = 0; r < mp_np; ++r) ARMCI_Group_free(&single[r]);
  }
  free(single);
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

/* A window over the ranks in reverse order: window rank w is world rank
 * np-1-w. Each rank writes its world rank into slot (its window rank) at
 * window rank 0 (world rank np-1) under an exclusive lock. */
static void reversed_group(void) {
  int *order = malloc(sizeof(int) * (size_t)mp_np);
  for (int i = 0; i < mp_np; ++i) order[i] = mp_np - 1 - i;
  ARMCI_Group reversed;
  ARMCI_Group_create(mp_np, order, &reversed);
  int wrank;
  ARMCI_Group_rank(&reversed, &wrank);
  MP_CHECK_INT(mp_np - 1 - mp_me, wrank);
  long *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof(long) * (size_t)mp_np, sizeof(long), &reversed, (void **)&base, &win));
  for (int i = 0; i < mp_np; ++i) base[i] = -1;
  ARMCI_Barrier();
  long v = mp_me;
  MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, 0, 0, win));
  MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, 0, (size_t)wrank, win));
  MP_CHECK_INT(0, ARMCI_Win_unlock(0, win));
  ARMCI_Barrier();
  if (mp_me == mp_np - 1)
    for (int w = 0; w < mp_np; ++w) MP_CHECK_INT(mp_np - 1 - w, (int)base[w]);
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
  ARMCI_Group_free(&reversed);
  free(order);
}

/* Each round every rank stores -1 into its window, then fences under
 * NOPRECEDE; its left neighbour then puts the round's value there and a
 * fence closes the epoch. One rank a round computes a while before its
 * store, so that a put not held until its target's arrival would land
 * first and be overwritten. Then the same with a lock epoch after the
 * NOPRECEDE fence (and an empty NOPRECEDE | NOSUCCEED fence before it). */
static void fence_noprecede(void) {
  long *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(2 * sizeof(long), sizeof(long), NULL, (void **)&base, &win));
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  for (int round = 0; round < ROUNDS; ++round) {
    if (round % mp_np == mp_me) {
      volatile unsigned long spin = 0;
      for (unsigned long i = 0; i < 2000000UL; ++i) spin += i;
    }
    base[0] = -1;
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE, win));
    long v = 1000L * round + mp_me;
    MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, right, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, win));
    MP_CHECK(base[0] == 1000L * round + left, "NOPRECEDE fence round %d: the left neighbour's put reads %ld", round,
             base[0]);
  }
  for (int round = 0; round < ROUNDS; ++round) {
    if (round % mp_np == mp_me) {
      volatile unsigned long spin = 0;
      for (unsigned long i = 0; i < 2000000UL; ++i) spin += i;
    }
    base[1] = -1;
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE | ARMCI_WIN_MODE_NOSUCCEED, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE, win));
    long v = 1000L * round + mp_me;
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, win));
    MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, right, 1, win));
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, win));
    ARMCI_Barrier();
    MP_CHECK(base[1] == 1000L * round + left, "lock after a NOPRECEDE fence, round %d: the left neighbour's put reads %ld",
             round, base[1]);
    ARMCI_Barrier();
  }
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
}

/* Window rank w is world rank np-1-w. Each round: a fence epoch in which
 * every rank puts 1000 round + its window rank into its slot at every other
 * member, then a PSCW star in which window rank 0 exposes itself to all the
 * others, each putting 1000 round + 500 + its window rank into its slot. */
static void epochs_by_window_rank(void) {
  int *order = malloc(sizeof(int) * (size_t)mp_np);
  for (int i = 0; i < mp_np; ++i) order[i] = mp_np - 1 - i;
  ARMCI_Group reversed, hub, spokes;
  /* Every rank makes every group, in the same order. */
  ARMCI_Group_create(mp_np, order, &reversed);
  ARMCI_Group_create(1, &order[0], &hub);
  ARMCI_Group_create(mp_np - 1, &order[1], &spokes);
  int wrank;
  ARMCI_Group_rank(&reversed, &wrank);
  long *base;
  ARMCI_Win win;
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof(long) * (size_t)mp_np, sizeof(long), &reversed, (void **)&base, &win));
  for (int i = 0; i < mp_np; ++i) base[i] = -1;
  for (int round = 0; round < ROUNDS; ++round) {
    MP_CHECK_INT(0, ARMCI_Win_fence(round == 0 ? ARMCI_WIN_MODE_NOPRECEDE : 0, win));
    long v = 1000L * round + wrank;
    for (int t = 0; t < mp_np; ++t)
      if (t != wrank) MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, t, (size_t)wrank, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, win));
    for (int w = 0; w < mp_np; ++w)
      if (w != wrank)
        MP_CHECK(base[w] == 1000L * round + w, "fence round %d: slot of window rank %d holds %ld", round, w, base[w]);
    if (wrank == 0) {
      MP_CHECK_INT(0, ARMCI_Win_post(&spokes, 0, win));
      MP_CHECK_INT(0, ARMCI_Win_wait(win));
      for (int w = 1; w < mp_np; ++w)
        MP_CHECK(base[w] == 1000L * round + 500 + w, "PSCW round %d: slot of window rank %d holds %ld", round, w,
                 base[w]);
    } else {
      MP_CHECK_INT(0, ARMCI_Win_start(&hub, 0, win));
      v = 1000L * round + 500 + wrank;
      MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, 0, (size_t)wrank, win));
      MP_CHECK_INT(0, ARMCI_Win_complete(win));
    }
  }
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
  ARMCI_Group_free(&spokes);
  ARMCI_Group_free(&hub);
  ARMCI_Group_free(&reversed);
  free(order);
}

/* The even ranks' window while the odd ranks stay out; two windows (one
 * allocated, one created over ARMCI_Malloc memory) locked at once;
 * strided put, get and acc of a 4 x 8 patch of ints. */
static void subgroup_and_two_windows(void) {
  const int n_even = (mp_np + 1) / 2;
  int *evens = malloc(sizeof(int) * (size_t)n_even);
  for (int i = 0; i < n_even; ++i) evens[i] = 2 * i;
  ARMCI_Group even_group;
  ARMCI_Group_create(n_even, evens, &even_group);
  if (mp_me % 2 == 0) {
    enum { ROWS = 4, COLS = 8, LD = 16 };
    int *a;
    ARMCI_Win wa, wb;
    MP_CHECK_INT(0, ARMCI_Win_allocate(ROWS * LD * sizeof(int), sizeof(int), &even_group, (void **)&a, &wa));
    void **mem = malloc(sizeof(void *) * (size_t)n_even);
    MP_CHECK_INT(0, ARMCI_Malloc_group(mem, ROWS * LD * sizeof(int), &even_group));
    int *b = mem[mp_me / 2];
    MP_CHECK_INT(0, ARMCI_Win_create(b, ROWS * LD * sizeof(int), sizeof(int), &even_group, &wb));
    memset(a, 0, ROWS * LD * sizeof(int));
    memset(b, 0, ROWS * LD * sizeof(int));
    armci_msg_group_barrier(&even_group);

    const int me = mp_me / 2, target = (me + 1) % n_even, source = (me + n_even - 1) % n_even;
    int patch[ROWS][COLS], got[ROWS][COLS];
    for (int r = 0; r < ROWS; ++r)
      for (int c = 0; c < COLS; ++c) patch[r][c] = 1000 * me + 10 * r + c;
    int local_stride[1] = {COLS * (int)sizeof(int)}, remote_stride[1] = {LD * (int)sizeof(int)};
    int count[2] = {COLS * (int)sizeof(int), ROWS};
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, target, 0, wa));
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, target, 0, wb));
    MP_CHECK_INT(0, ARMCI_Win_puts(patch, local_stride, remote_stride, count, 1, target, 2, wa));
    MP_CHECK_INT(0, ARMCI_Win_accs(ARMCI_ACC_INT, ARMCI_WIN_SUM, patch, local_stride, remote_stride, count, 1,
                                   target, 2, wb));
    MP_CHECK_INT(0, ARMCI_Win_accs(ARMCI_ACC_INT, ARMCI_WIN_SUM, patch, local_stride, remote_stride, count, 1,
                                   target, 2, wb));
    MP_CHECK_INT(0, ARMCI_Win_unlock(target, wb));
    MP_CHECK_INT(0, ARMCI_Win_flush(target, wa));
    MP_CHECK_INT(0, ARMCI_Win_gets(got, local_stride, remote_stride, count, 1, target, 2, wa));
    MP_CHECK_INT(0, ARMCI_Win_unlock(target, wa));
    MP_CHECK_BYTES(&patch[0][0], &got[0][0], sizeof patch, "strided get of what the strided put wrote");
    armci_msg_group_barrier(&even_group);
    for (int r = 0; r < ROWS; ++r)
      for (int c = 0; c < LD; ++c) {
        const int in = c >= 2 && c < 2 + COLS;
        const int v = 1000 * source + 10 * r + (c - 2);
        MP_CHECK_INT(in ? v : 0, a[r * LD + c]);
        MP_CHECK_INT(in ? 2 * v : 0, b[r * LD + c]);
      }
    /* A fence over the subgroup: each even rank puts its window rank into
     * slot 0 of its right neighbour's first window. */
    int mine = me;
    MP_CHECK_INT(0, ARMCI_Win_fence(0, wa));
    MP_CHECK_INT(0, ARMCI_Win_put(&mine, sizeof mine, target, 0, wa));
    MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, wa));
    MP_CHECK_INT(source, a[0]);
    MP_CHECK_INT(0, ARMCI_Win_free(&wb));
    MP_CHECK_INT(0, ARMCI_Free_group(b, &even_group));
    MP_CHECK_INT(0, ARMCI_Win_free(&wa));
    free(mem);
  }
  ARMCI_Barrier();
  ARMCI_Group_free(&even_group);
  free(evens);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    if (strcmp(argv[1], "fence-deferred") == 0) {
      setenv("ARMCI_WIN_FENCE", "deferred", 1);
    } else if (strcmp(argv[1], "fence-counted") == 0) {
      setenv("ARMCI_WIN_FENCE", "counted", 1);
    } else {
      fprintf(stderr, "usage: mp_windows [fence-deferred|fence-counted]\n");
      return 2;
    }
  }
  mp_init(&argc, &argv);
  mp_set_where("exclusive_counter");
  exclusive_counter();
  mp_set_where("shared_readers");
  shared_readers();
  mp_set_where("lock_all_acc");
  lock_all_acc();
  mp_set_where("fence_neighbours");
  fence_neighbours();
  mp_set_where("acc_ops");
  acc_ops();
  mp_set_where("fence_gets");
  fence_gets();
  mp_set_where("pscw_ring");
  pscw_ring();
  mp_set_where("pscw_regrouped");
  pscw_regrouped();
  mp_set_where("reversed_group");
  reversed_group();
  mp_set_where("fence_noprecede");
  fence_noprecede();
  mp_set_where("epochs_by_window_rank");
  epochs_by_window_rank();
  mp_set_where("subgroup_and_two_windows");
  subgroup_and_two_windows();
  mp_set_where("two_windows_alternate");
  two_windows_alternate();
  mp_set_where("fence_bulk_puts");
  fence_bulk_puts();
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass("mp_windows", mp_me);
  return 0;
}
