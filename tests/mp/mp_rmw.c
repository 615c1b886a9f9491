/*
 * mp_rmw: ARMCI_Rmw, mutexes, armci_notify / armci_notify_wait and
 * ARMCI_Put_flag, from every rank at once, on self and remote targets.
 *
 *  - fetch-and-add (int and long): every rank adds to counters at every rank;
 *    the final values are exact and the old values fetched, gathered at the
 *    counter's home, are exactly {start + j*inc : j = 0..N*K-1}, each once,
 *    and in increasing j for each origin. The int counters share 64-bit words
 *    with swap slots (low and high half both), and they cross 0 / 2^32, so a
 *    carry into the neighbouring half or a 32-bit long add shows;
 *  - swap (int and long): token passing; the multiset of tokens (held by the
 *    ranks plus in the slot) is the same after as before;
 *  - mutexes (counts differing per rank, several homes): Get, add, Put of a
 *    block under the lock, hundreds of times per rank, with a holder word that
 *    catches two holders at once (and a count of holders kept beside the
 *    library, with CPU atomics among the ranks of a host), nested locks,
 *    then exact totals (each home recomputes every rank's random choices
 *    from the seed); re-creation;
 *  - notify: ring of data + notify, Acc + notify, several notifications before
 *    the waits, self notification, notify right behind a 2 MiB NbPut;
 *    return values and *pval checked;
 *  - "mp_rmw notify-held" (its own run): notify behind NbPuts whose chunks a
 *    pipeline certainly still holds back;
 *  - Put_flag: 64 KiB + flag around the ring; the target spins on the flag
 *    without calling ARMCI and then checks every byte.
 * MP_RMW_ITERS changes the number of iterations (default 60 per target for
 * Rmw, 300 lock rounds).
 */
#include "mp_common.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

static int K;        /* Rmw rounds per target */
static int LROUNDS;  /* lock rounds per rank */

/* Counter region layout (bytes). */
enum {
  OFF_FADD_A = 0,  /* int, low half of word 0, += 3 from -16 */
  OFF_SWAP_A = 4,  /* int, high half of word 0 */
  OFF_SWAP_B = 8,  /* int, low half of word 1 */
  OFF_FADD_B = 12, /* int, high half of word 1, += -5 from 100 */
  OFF_FADD_L = 16, /* long, += 7 from 2^32 - 16 */
  OFF_SWAP_L = 24, /* long */
  OFF_GUARD = 32,  /* long, untouched */
  OFF_RESULTS = 64 /* 3 x np x K longs: fetched old values; then 3 x np tokens */
};

#define START_A (-16)
#define INC_A 3
#define START_B 100
#define INC_B (-5)
#define START_L 4294967280L
#define INC_L 7
#define GUARD_VALUE 0x1234567890ABCDEFL

static int token_a(int r, int t) { return 0x1000 * (t + 1) + r + 1; }  /* r = -1: the slot's */
static int token_b(int r, int t) { return -(0x1000 * (t + 1) + r + 1); }
static long token_l(int r, int t) { return (0x5AL << 40) | ((long)(t + 1) << 20) | (long)(r + 1); }

static long *results_at(char *base, int which) { return (long *)(base + OFF_RESULTS) + (size_t)which * mp_np * K; }
static long *tokens_at(char *base, int which) {
  return (long *)(base + OFF_RESULTS) + (size_t)3 * mp_np * K + (size_t)which * mp_np;
}

/* j such that value == start + j * inc (mod 2^width), or -1. */
static long position(unsigned long long value, long long start, long long inc, int width) {
  unsigned long long mask = width == 32 ? 0xFFFFFFFFull : ~0ull;
  unsigned long long diff = (value - (unsigned long long)start) & mask;
  long long step = inc;
  if (step < 0) {
    diff = (0ull - diff) & mask;
    step = -step;
  }
  if (diff % (unsigned long long)step != 0) return -1;
  unsigned long long j = diff / (unsigned long long)step;
  return j < (unsigned long long)mp_np * (unsigned long long)K ? (long)j : -1;
}

static void check_fetched(char *mine, int which, long long start, long long inc, int width, const char *name) {
  long *fetched = results_at(mine, which);
  long n = (long)mp_np * K;
  char *seen = calloc((size_t)n, 1);
  for (int r = 0; r < mp_np; r++) {
    long last = -1;
    for (int k = 0; k < K; k++) {
      long v = fetched[(size_t)r * K + k];
      unsigned long long raw = width == 32 ? (unsigned long long)(unsigned)(int)v : (unsigned long long)v;
      long j = position(raw, start, inc, width);
      mp_set_where("%s at rank %d: value %d fetched by rank %d", name, mp_me, k, r);
      MP_CHECK(j >= 0, "fetched old value %ld is not start %lld + j * %lld for any j < %ld", v, start, inc, n);
      MP_CHECK(!seen[j], "old value %ld (j = %ld) was fetched twice: two adds saw the same value", v, j);
      MP_CHECK(j > last, "rank %d's adds were not seen in its order: j %ld after %ld", r, j, last);
      seen[j] = 1;
      last = j;
    }
  }
  mp_set_where("%s", "");
  free(seen);
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* The tokens now (slot + every rank's) against those at the start. */
static void check_tokens(long slot, const long *held, long slot0, long (*initial)(int r), const char *name) {
  long *now = malloc(sizeof(long) * (size_t)(mp_np + 1));
  long *then = malloc(sizeof(long) * (size_t)(mp_np + 1));
  now[0] = slot;
  then[0] = slot0;
  for (int r = 0; r < mp_np; r++) {
    now[r + 1] = held[r];
    then[r + 1] = initial(r);
  }
  qsort(now, (size_t)mp_np + 1, sizeof(long), cmp_long);
  qsort(then, (size_t)mp_np + 1, sizeof(long), cmp_long);
  for (int i = 0; i <= mp_np; i++)
    MP_CHECK(now[i] == then[i], "%s at rank %d: tokens not conserved: sorted token %d is %ld, expected %ld", name,
             mp_me, i, now[i], then[i]);
  free(now);
  free(then);
}

static int tok_target;
static long init_a(int r) { return token_a(r, tok_target); }
static long init_b(int r) { return token_b(r, tok_target); }
static long init_l(int r) { return token_l(r, tok_target); }

static void test_rmw(void) {
  size_t bytes = OFF_RESULTS + sizeof(long) * ((size_t)3 * mp_np * K + (size_t)3 * mp_np);
  void **base = mp_alloc_all(bytes);
  char *mine = base[mp_me];
  *(int *)(mine + OFF_FADD_A) = START_A;
  *(int *)(mine + OFF_SWAP_A) = token_a(-1, mp_me);
  *(int *)(mine + OFF_SWAP_B) = token_b(-1, mp_me);
  *(int *)(mine + OFF_FADD_B) = START_B;
  *(long *)(mine + OFF_FADD_L) = START_L;
  *(long *)(mine + OFF_SWAP_L) = token_l(-1, mp_me);
  *(long *)(mine + OFF_GUARD) = GUARD_VALUE;
  ARMCI_Barrier();

  long *got = malloc(sizeof(long) * (size_t)3 * mp_np * K); /* [which][target][k] */
  int *tok_a = malloc(sizeof(int) * (size_t)mp_np), *tok_b = malloc(sizeof(int) * (size_t)mp_np);
  long *tok_l = malloc(sizeof(long) * (size_t)mp_np);
  for (int t = 0; t < mp_np; t++) {
    tok_a[t] = token_a(mp_me, t);
    tok_b[t] = token_b(mp_me, t);
    tok_l[t] = token_l(mp_me, t);
  }
  for (int k = 0; k < K; k++) {
    for (int i = 0; i < mp_np; i++) {
      int t = (mp_me + i) % mp_np; /* self first, then the others */
      char *b = base[t];
      int oi;
      long ol;
      mp_set_where("Rmw round %d target %d", k, t);
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &oi, b + OFF_FADD_A, INC_A, t));
      got[((size_t)0 * mp_np + t) * K + k] = oi;
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_SWAP, &tok_a[t], b + OFF_SWAP_A, 0, t));
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &oi, b + OFF_FADD_B, INC_B, t));
      got[((size_t)1 * mp_np + t) * K + k] = oi;
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_SWAP, &tok_b[t], b + OFF_SWAP_B, 0, t));
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &ol, b + OFF_FADD_L, INC_L, t));
      got[((size_t)2 * mp_np + t) * K + k] = ol;
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_SWAP_LONG, &tok_l[t], b + OFF_SWAP_L, 0, t));
    }
  }
  mp_set_where("%s", "");
  /* Gather at each home: fetched values and the tokens this rank holds. */
  for (int t = 0; t < mp_np; t++) {
    for (int w = 0; w < 3; w++)
      ARMCI_Put(&got[((size_t)w * mp_np + t) * K], results_at(base[t], w) + (size_t)mp_me * K, (int)(sizeof(long) * K), t);
    long held[3] = {tok_a[t], tok_b[t], tok_l[t]};
    for (int w = 0; w < 3; w++) ARMCI_PutValueLong(held[w], tokens_at(base[t], w) + mp_me, t);
  }
  ARMCI_Barrier();

  long total = (long)mp_np * K;
  MP_CHECK_INT((int)((unsigned)START_A + (unsigned)(INC_A * total)), *(int *)(mine + OFF_FADD_A));
  MP_CHECK_INT((int)((unsigned)START_B + (unsigned)(INC_B * total)), *(int *)(mine + OFF_FADD_B));
  MP_CHECK_INT(START_L + INC_L * total, *(long *)(mine + OFF_FADD_L));
  MP_CHECK_INT(GUARD_VALUE, *(long *)(mine + OFF_GUARD));
  check_fetched(mine, 0, START_A, INC_A, 32, "int fetch-and-add (low half)");
  check_fetched(mine, 1, START_B, INC_B, 32, "int fetch-and-add (high half, negative)");
  check_fetched(mine, 2, START_L, INC_L, 64, "long fetch-and-add");
  tok_target = mp_me;
  check_tokens(*(int *)(mine + OFF_SWAP_A), tokens_at(mine, 0), token_a(-1, mp_me), init_a, "int swap (high half)");
  check_tokens(*(int *)(mine + OFF_SWAP_B), tokens_at(mine, 1), token_b(-1, mp_me), init_b, "int swap (low half)");
  check_tokens(*(long *)(mine + OFF_SWAP_L), tokens_at(mine, 2), token_l(-1, mp_me), init_l, "long swap");

  /* A swap hands back exactly what was there; a fetch-and-add of 0 reads. */
  ARMCI_Barrier();
  if (mp_me == 0) {
    int t = mp_np - 1;
    long v = -42;
    MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_SWAP_LONG, &v, (char *)base[t] + OFF_GUARD, 0, t));
    MP_CHECK_INT(GUARD_VALUE, v);
    MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &v, (char *)base[t] + OFF_GUARD, 0, t));
    MP_CHECK_INT(-42, v);
    int iv = 0;
    MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &iv, (char *)base[t] + OFF_GUARD, 0, t));
    MP_CHECK_INT(-42, iv); /* low half of -42 */
    MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &iv, (char *)base[t] + OFF_GUARD + 4, 1, t));
    MP_CHECK_INT(-1, iv); /* high half of -42; now 0 */
    MP_CHECK_INT(0xFFFFFFD6L, ARMCI_GetValueLong((char *)base[t] + OFF_GUARD, t));
  }
  ARMCI_Barrier();
  free(got);
  free(tok_a);
  free(tok_b);
  free(tok_l);
  ARMCI_Free(mine);
  free(base);
}

/* ------------------------------------------------------------ mutexes */

enum { NSUM = 6, MAXMUTEX = 3 };
typedef struct {
  long holder; /* -1 when nobody holds the lock */
  long count;
  long sum[NSUM];
} block_t;

static int mutexes_of(int r) { return 2 + r % 2; }
/* Block of mutex m homed at h: lives at rank (h + 1) % np, index h*MAXMUTEX + m. */
static int block_rank(int h) { return (h + 1) % mp_np; }
static size_t block_index(int h, int m) { return (size_t)h * MAXMUTEX + (size_t)m; }

typedef struct {
  int h, m;
} pick_t;

static pick_t pick(mp_rng_t *rng) {
  pick_t p;
  p.h = (int)mp_rng_below(rng, (uint64_t)mp_np);
  p.m = (int)mp_rng_below(rng, (uint64_t)mutexes_of(p.h));
  return p;
}

static void update_block(void **base, pick_t p) {
  int d = block_rank(p.h);
  block_t *remote = (block_t *)base[d] + block_index(p.h, p.m);
  block_t b;
  MP_CHECK_INT(0, ARMCI_Get(remote, &b, sizeof b, d));
  MP_CHECK(b.holder == -1, "mutual exclusion violated: mutex %d of rank %d is held by rank %ld too", p.m, p.h,
           b.holder);
  long claim = mp_me;
  MP_CHECK_INT(0, ARMCI_Put(&claim, &remote->holder, sizeof claim, d));
  sched_yield(); /* widen the window a broken lock would let others in through */
  block_t again;
  MP_CHECK_INT(0, ARMCI_Get(remote, &again, sizeof again, d));
  MP_CHECK(again.holder == mp_me && again.count == b.count,
           "mutual exclusion violated: mutex %d of rank %d: holder %ld count %ld, expected %d and %ld", p.m, p.h,
           again.holder, again.count, mp_me, b.count);
  b.count += 1;
  for (int i = 0; i < NSUM; i++) b.sum[i] += (long)(mp_me + 1) * (i + 1);
  b.holder = -1;
  MP_CHECK_INT(0, ARMCI_Put(&b, remote, sizeof b, d));
}

/* Holders of each mutex, counted beside the library with CPU atomics in a
 * file the ranks of this host share (named after their launcher, the common
 * parent): a second holder shows the moment it gets the lock, whatever the
 * data it then reads. Ranks on other hosts count in their own file, so this
 * can miss a violation between hosts (the holder word still sees those) but
 * never report one that did not happen. */
static long *holders; /* [home * MAXMUTEX + mutex] */

/* Zeroed memory the ranks of this host share (collective; munmap frees it). */
static void *host_shared(const char *what, size_t bytes) {
  char name[64];
  snprintf(name, sizeof name, "/mp_rmw_%s_%ld", what, (long)getppid());
  int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
  MP_CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0, "shared %s %s: %s", what, name, strerror(errno));
  void *shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  MP_CHECK(shared != MAP_FAILED, "mapping %s: %s", name, strerror(errno));
  close(fd);
  ARMCI_Barrier(); /* every rank of this host has it mapped: the name can go */
  shm_unlink(name);
  memset(shared, 0, bytes); /* nobody uses it before the next barrier */
  ARMCI_Barrier();
  return shared;
}

static void holders_open(void) { holders = host_shared("holders", sizeof(long) * (size_t)mp_np * MAXMUTEX); }

static void holders_close(void) { munmap(holders, sizeof(long) * (size_t)mp_np * MAXMUTEX); }

static void lock_counted(pick_t p) {
  ARMCI_Lock(p.m, p.h);
  long others = __atomic_fetch_add(&holders[block_index(p.h, p.m)], 1, __ATOMIC_SEQ_CST);
  MP_CHECK(others == 0, "mutual exclusion violated: rank %d got mutex %d of rank %d while %ld other rank(s) of this host held it",
           mp_me, p.m, p.h, others);
}

static void unlock_counted(pick_t p) {
  __atomic_fetch_sub(&holders[block_index(p.h, p.m)], 1, __ATOMIC_SEQ_CST);
  ARMCI_Unlock(p.m, p.h);
}

static int before(pick_t a, pick_t b) { return a.h < b.h || (a.h == b.h && a.m < b.m); }

static void test_mutexes(void) {
  size_t nblocks = (size_t)mp_np * MAXMUTEX;
  void **base = mp_alloc_all(sizeof(block_t) * nblocks);
  block_t *mine = base[mp_me];
  for (size_t i = 0; i < nblocks; i++) mine[i].holder = -1;
  MP_CHECK_INT(0, ARMCI_Create_mutexes(mutexes_of(mp_me)));
  ARMCI_Barrier();

  holders_open();
  mp_rng_t rng;
  mp_rng_init(&rng, mp_seed(), mp_me, 7);
  for (int it = 0; it < LROUNDS; it++) {
    mp_set_where("lock round %d", it);
    pick_t a = pick(&rng);
    if (it % 10 == 9) {
      /* Two mutexes at once, taken in a global order. */
      pick_t b = pick(&rng);
      if (b.h == a.h && b.m == a.m) b.m = (b.m + 1) % mutexes_of(b.h);
      pick_t first = before(a, b) ? a : b, second = before(a, b) ? b : a;
      lock_counted(first);
      lock_counted(second);
      update_block(base, first);
      update_block(base, second);
      unlock_counted(first);
      unlock_counted(second);
    } else {
      lock_counted(a);
      update_block(base, a);
      unlock_counted(a);
    }
  }
  mp_set_where("%s", "");
  ARMCI_Barrier();
  holders_close();

  /* Every home of data replays every rank's picks. */
  long *count = calloc(nblocks, sizeof(long));
  long *weight = calloc(nblocks, sizeof(long));
  for (int r = 0; r < mp_np; r++) {
    mp_rng_t replay;
    mp_rng_init(&replay, mp_seed(), r, 7);
    for (int it = 0; it < LROUNDS; it++) {
      pick_t a = pick(&replay);
      pick_t list[2] = {a, a};
      int n = 1;
      if (it % 10 == 9) {
        pick_t b = pick(&replay);
        if (b.h == a.h && b.m == a.m) b.m = (b.m + 1) % mutexes_of(b.h);
        list[1] = b;
        n = 2;
      }
      for (int i = 0; i < n; i++) {
        count[block_index(list[i].h, list[i].m)] += 1;
        weight[block_index(list[i].h, list[i].m)] += r + 1;
      }
    }
  }
  for (int h = 0; h < mp_np; h++) {
    if (block_rank(h) != mp_me) continue;
    for (int m = 0; m < mutexes_of(h); m++) {
      block_t *b = &mine[block_index(h, m)];
      mp_set_where("block of mutex %d of rank %d", m, h);
      MP_CHECK_INT(-1, b->holder);
      MP_CHECK_INT(count[block_index(h, m)], b->count);
      for (int i = 0; i < NSUM; i++) MP_CHECK_INT(weight[block_index(h, m)] * (i + 1), b->sum[i]);
    }
  }
  mp_set_where("%s", "");
  free(count);
  free(weight);

  /* Destroy, create a different set (none at rank 0), use it. */
  mine[0].count = 0;
  MP_CHECK_INT(0, ARMCI_Destroy_mutexes());
  MP_CHECK_INT(0, ARMCI_Create_mutexes(mp_me == 0 ? 0 : 1));
  for (int i = 0; i < 20 && mp_np > 1; i++) {
    int h = 1 + (mp_me + i) % (mp_np - 1);
    ARMCI_Lock(0, h);
    long v = ARMCI_GetValueLong(&((block_t *)base[h])[0].count, h);
    ARMCI_PutValueLong(v + 1, &((block_t *)base[h])[0].count, h);
    ARMCI_Unlock(0, h);
  }
  ARMCI_Barrier();
  if (mp_me != 0) {
    long expected = 0;
    for (int r = 0; r < mp_np; r++)
      for (int i = 0; i < 20; i++) expected += 1 + (r + i) % (mp_np - 1) == mp_me;
    MP_CHECK_INT(expected, mine[0].count);
  }
  MP_CHECK_INT(0, ARMCI_Destroy_mutexes());
  ARMCI_Barrier();
  ARMCI_Free(mine);
  free(base);
}

/* ------------------------------------------------------------ notify, Put_flag */

enum { NOTE_BYTES = 4096, FLAG_BYTES = 65536, NOTE_ROUNDS = 20, FLAG_ROUNDS = 10, NB_BYTES = 2 << 20, NB_ROUNDS = 5 };

static unsigned char round_byte(int origin, int round, size_t i) { return mp_pattern(origin, round, i); }

static void test_notify(void) {
  int next = (mp_me + 1) % mp_np, prev = (mp_me + mp_np - 1) % mp_np;
  /* [inbox: NOTE_BYTES][acc slot: long][flags: np ints][flag inbox: NB_BYTES] */
  size_t off_acc = NOTE_BYTES, off_flags = NOTE_BYTES + 64, off_fbox = off_flags + 64 * (size_t)mp_np;
  size_t bytes = off_fbox + NB_BYTES;
  void **base = mp_alloc_all(bytes);
  char *mine = base[mp_me];
  unsigned char *src = malloc(NB_BYTES);
  ARMCI_Barrier();

  /* Ring: data, then the notification; the wait must see the data. */
  int sent = 0, waited = 0;
  for (int round = 0; round < NOTE_ROUNDS; round++) {
    mp_set_where("notify round %d", round);
    for (size_t i = 0; i < NOTE_BYTES; i++) src[i] = round_byte(mp_me, round, i);
    MP_CHECK_INT(0, ARMCI_Put(src, base[next], NOTE_BYTES, next));
    long one = round + 1, scale = 1;
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_LNG, &scale, &one, (char *)base[next] + off_acc, sizeof(long), next));
    MP_CHECK_INT(++sent, armci_notify(next));
    int v = -1;
    int received = armci_notify_wait(prev, &v);
    MP_CHECK_INT(++waited, v);
    MP_CHECK(received >= waited, "armci_notify_wait returned %d notifications received, fewer than %d", received,
             waited);
    for (size_t i = 0; i < NOTE_BYTES; i++)
      if ((unsigned char)mine[i] != round_byte(prev, round, i))
        MP_CHECK(0, "inbox byte %zu is 0x%02x after the notification, expected 0x%02x", i, (unsigned char)mine[i],
                 round_byte(prev, round, i));
    MP_CHECK_INT((long)(round + 1) * (round + 2) / 2, *(long *)(mine + off_acc));
    ARMCI_Barrier(); /* nobody overwrites an inbox before its owner has checked it */
  }
  /* Several notifications before the waits. */
  for (int i = 0; i < 3; i++) MP_CHECK_INT(++sent, armci_notify(next));
  for (int i = 0; i < 3; i++) {
    int v = -1;
    int received = armci_notify_wait(prev, &v);
    MP_CHECK_INT(++waited, v);
    MP_CHECK(received >= waited && received <= NOTE_ROUNDS + 3, "received %d after %d waits", received, waited);
  }
  /* To self. */
  MP_CHECK_INT(mp_np == 1 ? sent + 1 : 1, armci_notify(mp_me));
  int v = -1;
  MP_CHECK_INT(mp_np == 1 ? waited + 1 : 1, armci_notify_wait(mp_me, &v));
  MP_CHECK_INT(mp_np == 1 ? waited + 1 : 1, v);
  ARMCI_Barrier();

  /* A notification right behind an NbPut still in flight, from malloc'd
   * memory: the wait must see the data all the same. 2 MiB is
   * ARMCI_OFFLOAD_MIN, from which UCX within a host hands the chunks to the
   * helper (ucx-buffered: 512 chunks through two buffers), so most of them
   * are still to be posted when the notification is asked for. The last
   * byte, posted last, is checked first. Whether the target looks before
   * the helper has posted them is timing: the notify-held case below makes
   * it certain. */
  for (int round = 0; round < NB_ROUNDS && mp_np > 1; round++) {
    mp_set_where("notify behind NbPut round %d", round);
    for (size_t i = 0; i < NB_BYTES; i++) src[i] = round_byte(mp_me + 200, round, i);
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    MP_CHECK_INT(0, ARMCI_NbPut(src, (char *)base[next] + off_fbox, NB_BYTES, next, &h));
    MP_CHECK_INT(++sent, armci_notify(next));
    MP_CHECK_INT(++waited, armci_notify_wait(prev, NULL));
    const unsigned char *box = (const unsigned char *)(mine + off_fbox);
    for (size_t i = NB_BYTES; i-- > 0;) {
      const unsigned char seen = box[i];
      if (seen != round_byte(prev + 200, round, i))
        MP_CHECK(0, "byte %zu of %d is 0x%02x after the notification, expected 0x%02x", i, NB_BYTES, seen,
                 round_byte(prev + 200, round, i));
    }
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    ARMCI_Barrier(); /* nobody overwrites an inbox before its owner has checked it */
  }

  /* Put_flag around the ring: the flag (one per origin) must not show before
   * the data. The target only spins on memory. */
  int *flag_from_prev = (int *)(mine + off_flags + 64 * (size_t)prev);
  for (int round = 0; round < FLAG_ROUNDS && mp_np > 1; round++) {
    mp_set_where("Put_flag round %d", round);
    for (size_t i = 0; i < FLAG_BYTES; i++) src[i] = round_byte(mp_me + 100, round, i);
    int *their_flag = (int *)((char *)base[next] + off_flags + 64 * (size_t)mp_me);
    MP_CHECK_INT(0, ARMCI_Put_flag(src, (char *)base[next] + off_fbox, FLAG_BYTES, their_flag, round + 1, next));
    double deadline = mp_now() + 60;
    while (*(volatile int *)flag_from_prev != round + 1) {
      MP_CHECK(mp_now() < deadline, "flag from rank %d still %d after 60 s, expected %d", prev,
               *(volatile int *)flag_from_prev, round + 1);
      sched_yield();
    }
    const volatile unsigned char *box = (const volatile unsigned char *)(mine + off_fbox);
    for (size_t i = 0; i < FLAG_BYTES; i++)
      if (box[i] != round_byte(prev + 100, round, i))
        MP_CHECK(0, "byte %zu is 0x%02x when the flag is set, expected 0x%02x", i, box[i],
                 round_byte(prev + 100, round, i));
    ARMCI_Barrier();
  }
  mp_set_where("%s", "");
  free(src);
  ARMCI_Free(mine);
  free(base);
}

/* "mp_rmw notify-held": a notification right behind NbPuts whose chunks a
 * pipeline still holds back, which the notification must not overtake. The
 * program sets what makes that certain in every network mode: the buffered
 * protocol with two 4 KiB buffers (a call posts at most one more chunk of
 * each put, as the buffers allow: of the four 64 KiB puts, a handful of
 * their 64 chunks are out when notify is called) and no helper thread
 * (nothing but this rank's own calls into ARMCI posts the rest). The
 * origin then stays out of ARMCI until the target has checked the data: it
 * spins on a word of a file the ranks of its host share. So the check sees
 * every byte only if the notification itself waited for the chunks. A
 * target on another host cannot write that word; the origin then waits in
 * ARMCI, and the check is a race it may win. */
enum { HELD_PUTS = 4, HELD_BYTES = 64 * 1024 };

static const char *const notify_held_settings[][2] = {
    {"ARMCI_HELPER", "none"}, {"ARMCI_PROTOCOL", "buffered"}, {"ARMCI_BUFFER_COUNT", "2"}, {"ARMCI_BUFFER_CHUNK", "4096"}};

static unsigned char held_byte(int origin, int target, size_t i) { return mp_pattern(origin + 300, target, i); }

/* Bytes of the target's inbox unlike the origin's, and the first of them
 * as it was read (the rest may land while the failure is reported). */
static size_t held_wrong(const unsigned char *box, int origin, size_t *first, unsigned char *seen) {
  size_t bad = 0;
  for (size_t i = HELD_PUTS * (size_t)HELD_BYTES; i-- > 0;)
    if (box[i] != held_byte(origin, mp_me, i)) {
      bad++;
      *first = i;
      *seen = box[i];
    }
  return bad;
}

static void test_notify_held(void) {
  /* [np words: 1 for each rank of this host][np words: the turn each target checked] */
  const size_t words = 2 * (size_t)mp_np;
  long *present = host_shared("held", words * sizeof(long)), *checked = present + mp_np;
  __atomic_store_n(&present[mp_me], 1, __ATOMIC_RELEASE);

  const size_t total = HELD_PUTS * (size_t)HELD_BYTES;
  void **base = mp_alloc_all(total);
  unsigned char *mine = base[mp_me];
  unsigned char *src = malloc(total);
  MP_CHECK(src != NULL, "malloc of %zu bytes failed", total);
  int *sent = calloc((size_t)mp_np, sizeof(int)), *waited = calloc((size_t)mp_np, sizeof(int));
  MP_CHECK(sent != NULL && waited != NULL, "%s", "calloc failed");
  ARMCI_Barrier();
  /* Each rank is the origin once, to the next: a pair at a time, the others wait. */
  for (int turn = 0; turn < mp_np && mp_np > 1; turn++) {
    const int origin = turn, target = (turn + 1) % mp_np;
    mp_set_where("notify behind held-back NbPuts, rank %d to rank %d", origin, target);
    if (mp_me == origin) {
      for (size_t i = 0; i < total; i++) src[i] = held_byte(origin, target, i);
      armci_hdl_t h[HELD_PUTS];
      for (int k = 0; k < HELD_PUTS; k++) {
        ARMCI_INIT_HANDLE(&h[k]);
        MP_CHECK_INT(0, ARMCI_NbPut(src + (size_t)k * HELD_BYTES, (char *)base[target] + (size_t)k * HELD_BYTES,
                                    HELD_BYTES, target, &h[k]));
      }
      MP_CHECK_INT(++sent[target], armci_notify(target));
      if (__atomic_load_n(&present[target], __ATOMIC_ACQUIRE)) {
        double deadline = mp_now() + 60;
        while (__atomic_load_n(&checked[target], __ATOMIC_ACQUIRE) != turn + 1) {
          MP_CHECK(mp_now() < deadline, "rank %d has not checked its inbox after 60 s", target);
          sched_yield();
        }
      }
      int v = -1;
      armci_notify_wait(target, &v); /* the target checked */
      MP_CHECK_INT(++waited[target], v);
      for (int k = 0; k < HELD_PUTS; k++) MP_CHECK_INT(0, ARMCI_Wait(&h[k]));
    } else if (mp_me == target) {
      int v = -1;
      armci_notify_wait(origin, &v);
      MP_CHECK_INT(++waited[origin], v);
      size_t first = 0;
      unsigned char seen = 0;
      size_t bad = held_wrong(mine, origin, &first, &seen);
      __atomic_store_n(&checked[mp_me], turn + 1, __ATOMIC_RELEASE);
      MP_CHECK_INT(++sent[origin], armci_notify(origin));
      MP_CHECK(bad == 0,
               "%zu of %zu bytes not there after the notification, first at byte %zu (0x%02x, expected 0x%02x): "
               "the notification overtook chunks a pipeline had not posted",
               bad, total, first, seen, held_byte(origin, mp_me, first));
    }
    ARMCI_Barrier();
    if (mp_me == target) {
      size_t first = 0;
      unsigned char seen = 0;
      size_t bad = held_wrong(mine, origin, &first, &seen);
      MP_CHECK(bad == 0, "%zu of %zu bytes wrong after ARMCI_Wait and the barrier, first at byte %zu (0x%02x)", bad,
               total, first, seen);
    }
  }
  mp_set_where("%s", "");
  free(sent);
  free(waited);
  free(src);
  ARMCI_Free(mine);
  free(base);
  munmap(present, words * sizeof(long));
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "notify-held") == 0) {
    for (size_t i = 0; i < sizeof notify_held_settings / sizeof notify_held_settings[0]; i++)
      setenv(notify_held_settings[i][0], notify_held_settings[i][1], 1);
    mp_init(&argc, &argv);
    test_notify_held();
    ARMCI_Barrier();
    return mp_finish("mp_rmw");
  }
  mp_init(&argc, &argv);
  int iters = mp_env_int("MP_RMW_ITERS", 0);
  K = iters > 0 ? iters : 60;
  LROUNDS = iters > 0 ? 5 * iters : 300;
  double t0 = mp_now();
  test_rmw();
  double t1 = mp_now();
  test_mutexes();
  double t2 = mp_now();
  test_notify();
  double t3 = mp_now();
  if (mp_me == 0)
    printf("mp_rmw: np %d: rmw %.2f s, mutexes %.2f s, notify/Put_flag %.2f s\n", mp_np, t1 - t0, t2 - t1, t3 - t2);
  return mp_finish("mp_rmw");
}
