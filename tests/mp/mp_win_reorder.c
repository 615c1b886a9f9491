/* mp_win_reorder MODE: reordering inside window epochs (ARMCI_WIN_REORDER,
 * set to MODE here before ARMCI_Init: none, gets-first or combine), or the
 * deferred fence (MODE fence-deferred: ARMCI_WIN_FENCE=deferred, no
 * reordering), which holds a fence epoch's operations until it closes. Every
 * closing synchronisation must issue and complete what its epoch queued:
 *  - lock/unlock: K small puts to this origin's own slots at each target and
 *    K gets of the target's constant block, per target (exact values; a
 *    queue an unlock forgot shows as an untouched slot);
 *  - lock_all + flush(t) / flush_all: after the flush and a barrier the
 *    target reads the puts while the origin still holds the lock;
 *  - fence: small puts to both neighbours, SUM accs to rank 0, gets; in
 *    another epoch put, SUM, PROD on one word, a 256 KiB put (several
 *    messages) and a strided SUM over held contiguous SUMs, each checked by
 *    its target right after the closing fence;
 *  - PSCW: small puts to the right neighbour closed by complete;
 *  - one origin's overlapping writes of different kinds keep program order:
 *    put, SUM, PROD, REPLACE on one slot; a small put over a large put and
 *    the reverse; a strided SUM over queued contiguous SUMs;
 *  - a get of bytes put in the same epoch: MPI-2 leaves the value read
 *    undefined, but it is the old or the new one and memory ends new;
 *  - 3000 puts in one epoch (more than the queue holds before it issues
 *    early), all in place. */
#include "mp_common.h"

#include <stdlib.h>
#include <string.h>

#include "armci_win.h"

enum { K = 64, MANY = 3000, BIG = 4096 };

static long value_of(int origin, int target, int i, int round) {
  return 1000000L * round + 10000L * origin + 100L * target + i;
}

/* The window of every test: per origin K slots, then K constant words. */
static long *win_base;
static ARMCI_Win win;
static size_t slots_of(int origin) { return (size_t)origin * K; }
static size_t constant_at(void) { return (size_t)mp_np * K; }
static long constant_of(int target, int i) { return -7000L * (target + 1) - i; }

static void reset_window(void) {
  for (int i = 0; i < mp_np * K; ++i) win_base[i] = -1;
  for (int i = 0; i < K; ++i) win_base[constant_at() + (size_t)i] = constant_of(mp_me, i);
  ARMCI_Barrier();
}

static void check_slots_from_all(int round, const char *what) {
  for (int o = 0; o < mp_np; ++o)
    for (int i = 0; i < K; ++i) {
      const long want = value_of(o, mp_me, i, round), got = win_base[slots_of(o) + (size_t)i];
      MP_CHECK(got == want, "%s: slot %d of origin %d is %ld, expected %ld (a queued put never landed?)", what, i, o,
               got, want);
    }
}

static void lock_unlock(void) {
  long out[K], in[K];
  for (int round = 1; round <= 10; ++round) {
    reset_window();
    for (int d = 0; d < mp_np; ++d) {
      const int t = (mp_me + d) % mp_np;
      for (int i = 0; i < K; ++i) out[i] = value_of(mp_me, t, i, round), in[i] = 0;
      MP_CHECK_INT(0, ARMCI_Win_lock(round % 2 ? ARMCI_WIN_LOCK_EXCLUSIVE : ARMCI_WIN_LOCK_SHARED, t, 0, win));
      for (int i = 0; i < K; ++i) {
        MP_CHECK_INT(0, ARMCI_Win_put(&out[i], sizeof(long), t, slots_of(mp_me) + (size_t)i, win));
        MP_CHECK_INT(0, ARMCI_Win_get(&in[i], sizeof(long), t, constant_at() + (size_t)i, win));
      }
      MP_CHECK_INT(0, ARMCI_Win_unlock(t, win));
      for (int i = 0; i < K; ++i)
        MP_CHECK(in[i] == constant_of(t, i), "get %d from %d: %ld, expected %ld", i, t, in[i], constant_of(t, i));
    }
    ARMCI_Barrier();
    check_slots_from_all(round, "lock/unlock");
  }
}

static void flushes(void) {
  /* One buffer per target: a put's source stays untouched until the flush. */
  long(*to)[K] = malloc(sizeof(long) * K * (size_t)mp_np), out[K];
  for (int round = 1; round <= 6; ++round) {
    reset_window();
    const int right = (mp_me + 1) % mp_np;
    MP_CHECK_INT(0, ARMCI_Win_lock_all(0, win));
    for (int d = 0; d < mp_np; ++d) {
      const int t = (mp_me + d) % mp_np;
      for (int i = 0; i < K; ++i) {
        to[t][i] = value_of(mp_me, t, i, round);
        MP_CHECK_INT(0, ARMCI_Win_put(&to[t][i], sizeof(long), t, slots_of(mp_me) + (size_t)i, win));
      }
      /* flush(t) per target on odd rounds; one flush_all on even rounds. */
      if (round % 2) MP_CHECK_INT(0, ARMCI_Win_flush(t, win));
    }
    if (round % 2 == 0) MP_CHECK_INT(0, ARMCI_Win_flush_all(win));
    /* The epoch is still open: only the flush made the puts land. */
    armci_msg_barrier();
    check_slots_from_all(round, "flush under lock_all");
    armci_msg_barrier();
    /* More puts after the flush, closed by unlock_all alone. */
    for (int i = 0; i < K; ++i) {
      out[i] = value_of(mp_me, right, i, round + 100);
      MP_CHECK_INT(0, ARMCI_Win_put(&out[i], sizeof(long), right, slots_of(mp_me) + (size_t)i, win));
    }
    MP_CHECK_INT(0, ARMCI_Win_unlock_all(win));
    ARMCI_Barrier();
    const int left = (mp_me + mp_np - 1) % mp_np;
    for (int i = 0; i < K; ++i)
      MP_CHECK_INT(value_of(left, mp_me, i, round + 100), win_base[slots_of(left) + (size_t)i]);
  }
  free(to);
}

static void fences(void) {
  long out[2][K], in[K], one = 1;
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  reset_window();
  win_base[constant_at() + K - 1] = 0; /* rank 0's counter; the others' unused */
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOPRECEDE, win));
  for (int round = 1; round <= 20; ++round) {
    for (int i = 0; i < K; ++i) {
      out[0][i] = value_of(mp_me, right, i, round);
      out[1][i] = value_of(mp_me, left, i, round);
      in[i] = 0;
    }
    /* Gets of the constants (K - 1 of them: the last word is the counter). */
    for (int i = 0; i < K; ++i) {
      MP_CHECK_INT(0, ARMCI_Win_put(&out[0][i], sizeof(long), right, slots_of(mp_me) + (size_t)i, win));
      if (i < K - 1) MP_CHECK_INT(0, ARMCI_Win_get(&in[i], sizeof(long), left, constant_at() + (size_t)i, win));
      if (left != right) MP_CHECK_INT(0, ARMCI_Win_put(&out[1][i], sizeof(long), left, slots_of(mp_me) + (size_t)i, win));
    }
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_SUM, &one, sizeof one, 0, constant_at() + K - 1, win));
    MP_CHECK_INT(0, ARMCI_Win_fence(0, win));
    for (int i = 0; i < K - 1; ++i) MP_CHECK_INT(constant_of(left, i), in[i]);
    for (int i = 0; i < K; ++i) {
      MP_CHECK_INT(value_of(left, mp_me, i, round), win_base[slots_of(left) + (size_t)i]);
      MP_CHECK_INT(value_of(right, mp_me, i, round), win_base[slots_of(right) + (size_t)i]);
    }
    if (mp_me == 0) MP_CHECK_INT(round * mp_np, (int)win_base[constant_at() + K - 1]);
    /* Nobody writes the next round before everyone checked this one. */
    MP_CHECK_INT(0, ARMCI_Win_fence(0, win));
  }
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, win));
  ARMCI_Barrier();
}

/* Contiguous SUMs, a strided SUM over them, contiguous SUMs again, into
 * 4 x 8 ints at rows of 16 from byte `mine` of rank `right`: each element
 * summed 1 + 2 + 4, in whatever epoch the caller opened. */
enum { SUM_ROWS = 4, SUM_COLS = 8, SUM_LD = 16 };
static void sums_around_strided(int right, size_t mine, ARMCI_Win w) {
  /* Static: held or queued writes read them when the caller's epoch closes. */
  static int ones[SUM_ROWS * SUM_COLS], twos[SUM_ROWS][SUM_COLS], fours[SUM_ROWS * SUM_COLS];
  for (int i = 0; i < SUM_ROWS * SUM_COLS; ++i) ones[i] = 1, fours[i] = 4, twos[i / SUM_COLS][i % SUM_COLS] = 2;
  int local_stride[1] = {SUM_COLS * (int)sizeof(int)}, remote_stride[1] = {SUM_LD * (int)sizeof(int)};
  int count[2] = {SUM_COLS * (int)sizeof(int), SUM_ROWS};
  for (int r = 0; r < SUM_ROWS; ++r)
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_INT, ARMCI_WIN_SUM, ones + r * SUM_COLS, SUM_COLS * sizeof(int), right,
                                  mine + (size_t)r * SUM_LD * sizeof(int), w));
  MP_CHECK_INT(0, ARMCI_Win_accs(ARMCI_ACC_INT, ARMCI_WIN_SUM, twos, local_stride, remote_stride, count, 1, right,
                                 mine, w));
  for (int r = 0; r < SUM_ROWS; ++r)
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_INT, ARMCI_WIN_SUM, fours + r * SUM_COLS, SUM_COLS * sizeof(int), right,
                                  mine + (size_t)r * SUM_LD * sizeof(int), w));
}

/* What sums_around_strided left at `cells`: 7 in the rows, 0 between. */
static void check_sums(const int *cells) {
  for (int r = 0; r < SUM_ROWS; ++r)
    for (int c = 0; c < SUM_LD; ++c) MP_CHECK_INT(c < SUM_COLS ? 7 : 0, cells[r * SUM_LD + c]);
}

/* Writes of several kinds and paths to the right neighbour in fence epochs,
 * each checked by the target after the fence that closes it (not after a
 * barrier: the fence alone must have applied them). */
static void fence_kinds(void) {
  /* Large enough for several vector messages and the network's rendezvous
   * path, which need not arrive in order with the fence's own messages. */
  enum { FENCE_BIG = 256 * 1024 };
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  const size_t words = FENCE_BIG / sizeof(long), mine = (size_t)mp_me * FENCE_BIG;
  long *big = malloc(FENCE_BIG), *bigwin;
  ARMCI_Win w2;
  MP_CHECK_INT(0, ARMCI_Win_allocate(FENCE_BIG * (size_t)mp_np, 1, NULL, (void **)&bigwin, &w2));
  for (size_t i = 0; i < words * (size_t)mp_np; ++i) bigwin[i] = 0;
  const long *at = bigwin + (size_t)left * words;
  MP_CHECK_INT(0, ARMCI_Win_fence(0, w2));
  for (int round = 1; round <= 10; ++round) {
    long x = 3 + round, y = 4, z = 5;
    for (size_t i = 0; i < words; ++i) big[i] = 1000L * round + (long)i;
    /* word 0: put x, SUM y, PROD z: (x + y) * z; words 2..: one large put. */
    MP_CHECK_INT(0, ARMCI_Win_put(&x, sizeof x, right, mine, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_SUM, &y, sizeof y, right, mine, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_PROD, &z, sizeof z, right, mine, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(big + 2, FENCE_BIG - 16, right, mine + 16, w2));
    MP_CHECK_INT(0, ARMCI_Win_fence(0, w2));
    MP_CHECK(at[0] == (3 + round + 4) * 5, "fence: put, SUM, PROD: %ld, expected %ld", at[0], (3L + round + 4) * 5);
    for (size_t i = 2; i < words; ++i)
      MP_CHECK(at[i] == 1000L * round + (long)i, "fence: large put: word %zu is %ld, expected %ld", i, at[i],
               1000L * round + (long)i);
    MP_CHECK_INT(0, ARMCI_Win_fence(0, w2));
  }
  /* The sums, held around a strided one. */
  for (size_t i = 0; i < words * (size_t)mp_np; ++i) bigwin[i] = 0;
  MP_CHECK_INT(0, ARMCI_Win_fence(0, w2));
  sums_around_strided(right, mine, w2);
  MP_CHECK_INT(0, ARMCI_Win_fence(ARMCI_WIN_MODE_NOSUCCEED, w2));
  check_sums((const int *)at);
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Win_free(&w2));
  free(big);
}

static void pscw(void) {
  ARMCI_Group *single = malloc(sizeof(ARMCI_Group) * (size_t)mp_np);
  for (int r = 0; r < mp_np; ++r) ARMCI_Group_create(1, &r, &single[r]);
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  long out[K];
  reset_window();
  for (int round = 1; round <= 20; ++round) {
    MP_CHECK_INT(0, ARMCI_Win_post(&single[left], 0, win));
    MP_CHECK_INT(0, ARMCI_Win_start(&single[right], 0, win));
    for (int i = 0; i < K; ++i) {
      out[i] = value_of(mp_me, right, i, round);
      MP_CHECK_INT(0, ARMCI_Win_put(&out[i], sizeof(long), right, slots_of(mp_me) + (size_t)i, win));
    }
    MP_CHECK_INT(0, ARMCI_Win_complete(win));
    MP_CHECK_INT(0, ARMCI_Win_wait(win));
    for (int i = 0; i < K; ++i) MP_CHECK_INT(value_of(left, mp_me, i, round), win_base[slots_of(left) + (size_t)i]);
  }
  ARMCI_Barrier();
  for (int r = 0; r < mp_np; ++r) ARMCI_Group_free(&single[r]);
  free(single);
}

/* One origin's overlapping writes, each origin in its own slots at its
 * right neighbour: program order must hold across kinds and paths. */
static void overlaps(void) {
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  long *big = malloc(BIG);
  long *bigwin;
  ARMCI_Win w2;
  const size_t words = BIG / sizeof(long);
  MP_CHECK_INT(0, ARMCI_Win_allocate(BIG * (size_t)mp_np, 1, NULL, (void **)&bigwin, &w2));
  for (size_t i = 0; i < words * (size_t)mp_np; ++i) bigwin[i] = 0;
  ARMCI_Barrier();
  const size_t mine = (size_t)mp_me * BIG; /* byte offset of my region at the target */
  for (int round = 1; round <= 10; ++round) {
    long x = 3 + round, y = 4, z = 5, r = 100 + round, small = 77 + round, after = 99 + round;
    for (size_t i = 0; i < words; ++i) big[i] = 1000L * round + (long)i;
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w2));
    /* word 0: put x, SUM y, PROD z: (x + y) * z. word 1: SUM y, REPLACE r, SUM y: r + y. */
    MP_CHECK_INT(0, ARMCI_Win_put(&x, sizeof x, right, mine, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_SUM, &y, sizeof y, right, mine, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_PROD, &z, sizeof z, right, mine, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_SUM, &y, sizeof y, right, mine + 8, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_REPLACE, &r, sizeof r, right, mine + 8, w2));
    MP_CHECK_INT(0, ARMCI_Win_acc(ARMCI_ACC_LNG, ARMCI_WIN_SUM, &y, sizeof y, right, mine + 8, w2));
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, w2));
    /* A large put, then a small one inside it, then the reverse order on
     * word 3: small, then large over it. */
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(big + 2, BIG - 16, right, mine + 16, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(&small, sizeof small, right, mine + 16 + 8 * 5, w2));
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, w2));
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(&after, sizeof after, right, mine + 8 * 3, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(big + 2, BIG - 16, right, mine + 16, w2));
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, w2));
    ARMCI_Barrier();
    const long *at = bigwin + (size_t)left * words;
    const long x_l = 3 + round;
    MP_CHECK(at[0] == (x_l + 4) * 5, "put, SUM, PROD: %ld, expected %ld", at[0], (x_l + 4) * 5);
    MP_CHECK(at[1] == 100 + round + 4, "SUM, REPLACE, SUM: %ld, expected %ld", at[1], 100L + round + 4);
    for (size_t i = 2; i < words; ++i)
      MP_CHECK(at[i] == 1000L * round + (long)i, "large put after a small one: word %zu is %ld, expected %ld", i,
               at[i], 1000L * round + (long)i);
    ARMCI_Barrier();
    /* The small put over the large one, as left by the second epoch, is
     * covered by the third; check it separately on a fresh word. */
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(big + 2, BIG - 16, right, mine + 16, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(&small, sizeof small, right, mine + 16 + 8 * 5, w2));
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, w2));
    ARMCI_Barrier();
    MP_CHECK(at[7] == 77 + round, "small put after a large one: %ld, expected %ld", at[7], 77L + round);
    MP_CHECK(at[8] == 1000L * round + 8, "large put around it: %ld", at[8]);
    ARMCI_Barrier();
  }

  /* Contiguous SUMs queued, a strided SUM over them, contiguous SUMs again:
   * 4 x 8 ints at rows of 16, each element summed 1 + 2 + 4. */
  {
    int *region = (int *)bigwin;
    ARMCI_Barrier();
    for (size_t i = 0; i < words * (size_t)mp_np; ++i) bigwin[i] = 0;
    ARMCI_Barrier();
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w2));
    sums_around_strided(right, mine, w2);
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, w2));
    ARMCI_Barrier();
    check_sums(region + (size_t)left * BIG / sizeof(int));
  }

  /* A get of bytes put in the same epoch: old or new, memory ends new. */
  ARMCI_Barrier();
  bigwin[(size_t)mp_me * words] = -5;
  ARMCI_Barrier();
  for (int round = 1; round <= 20; ++round) {
    long v = round, seen = -99;
    MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w2));
    MP_CHECK_INT(0, ARMCI_Win_put(&v, sizeof v, right, (size_t)right * BIG, w2));
    MP_CHECK_INT(0, ARMCI_Win_get(&seen, sizeof seen, right, (size_t)right * BIG, w2));
    MP_CHECK_INT(0, ARMCI_Win_unlock(right, w2));
    const long old = round == 1 ? -5 : round - 1;
    MP_CHECK(seen == old || seen == round, "get after put in one epoch: %ld, neither old %ld nor new %d", seen, old,
             round);
  }
  ARMCI_Barrier();
  MP_CHECK_INT(20, (int)bigwin[(size_t)mp_me * words]);
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Win_free(&w2));
  free(big);
}

static void many(void) {
  long *vals = malloc(sizeof(long) * MANY);
  long *base;
  ARMCI_Win w3;
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof(long) * MANY, sizeof(long), NULL, (void **)&base, &w3));
  for (int i = 0; i < MANY; ++i) base[i] = -1;
  ARMCI_Barrier();
  const int right = (mp_me + 1) % mp_np, left = (mp_me + mp_np - 1) % mp_np;
  for (int i = 0; i < MANY; ++i) vals[i] = value_of(mp_me, right, i, 3);
  MP_CHECK_INT(0, ARMCI_Win_lock(ARMCI_WIN_LOCK_EXCLUSIVE, right, 0, w3));
  for (int i = 0; i < MANY; ++i) MP_CHECK_INT(0, ARMCI_Win_put(&vals[i], sizeof(long), right, (size_t)i, w3));
  MP_CHECK_INT(0, ARMCI_Win_unlock(right, w3));
  ARMCI_Barrier();
  for (int i = 0; i < MANY; ++i)
    MP_CHECK(base[i] == value_of(left, mp_me, i, 3), "put %d of %d: %ld, expected %ld", i, MANY, base[i],
             value_of(left, mp_me, i, 3));
  MP_CHECK_INT(0, ARMCI_Win_free(&w3));
  free(vals);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mp_win_reorder none|gets-first|combine|fence-deferred|fence-counted\n");
    return 2;
  }
  if (strcmp(argv[1], "fence-deferred") == 0)
    setenv("ARMCI_WIN_FENCE", "deferred", 1);
  else if (strcmp(argv[1], "fence-counted") == 0)
    setenv("ARMCI_WIN_FENCE", "counted", 1);
  else
    setenv("ARMCI_WIN_REORDER", argv[1], 1);
  mp_init(&argc, &argv);
  MP_CHECK_INT(0, ARMCI_Win_allocate(sizeof(long) * (size_t)(mp_np + 1) * K, sizeof(long), NULL, (void **)&win_base,
                                     &win));
  mp_set_where("lock_unlock (%s)", argv[1]);
  lock_unlock();
  mp_set_where("flushes (%s)", argv[1]);
  flushes();
  mp_set_where("fences (%s)", argv[1]);
  fences();
  mp_set_where("fence_kinds (%s)", argv[1]);
  fence_kinds();
  mp_set_where("pscw (%s)", argv[1]);
  pscw();
  MP_CHECK_INT(0, ARMCI_Win_free(&win));
  mp_set_where("overlaps (%s)", argv[1]);
  overlaps();
  mp_set_where("many (%s)", argv[1]);
  many();
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass("mp_win_reorder", mp_me);
  return 0;
}
