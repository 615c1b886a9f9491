/*
 * mp_basic: collective allocation, contiguous Put/Get of many sizes at odd
 * offsets, single-value transfers, topology queries and repeated
 * allocate/free rounds.
 */
#include "mp_common.h"

static int me, np;

/* Sizes straddle the small-message, eager and large/rendezvous paths. */
static const int sizes[] = {1, 7, 8, 1000, 65536 + 3, 1 << 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* Offsets of each size inside one origin's slot: odd, with untouched gaps
 * between the pieces that must stay zero (an overrun shows up there). */
static size_t piece_off[NSIZES];
static size_t slot_size;

static void layout(void) {
  size_t pos = 0;
  for (int i = 0; i < NSIZES; i++) {
    size_t off = pos + 5;
    if (off % 2 == 0) off++;
    piece_off[i] = off;
    pos = off + (size_t)sizes[i];
  }
  slot_size = (pos + 16 + 63) / 64 * 64;
}

/* Puts every size to every rank (self included) and lets each target check
 * its own memory, gaps included. */
static void test_put_sizes(void) {
  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)(slot_size * (size_t)np)));
  MP_CHECK(base[me] != NULL, "own base pointer is NULL for %zu bytes", slot_size * (size_t)np);
  memset(base[me], 0, slot_size * (size_t)np);
  ARMCI_Barrier();

  /* One registered and one ordinary source buffer: both must work. */
  unsigned char *reg = ARMCI_Malloc_local(sizes[NSIZES - 1] + 2);
  unsigned char *heap = malloc((size_t)sizes[NSIZES - 1] + 2);
  MP_CHECK(reg != NULL && heap != NULL, "local buffers %p %p", (void *)reg, (void *)heap);

  for (int k = 1; k <= np; k++) {
    int t = (me + k) % np; /* staggered so that not every rank hits rank 0 first */
    for (int i = 0; i < NSIZES; i++) {
      unsigned char *src = (i % 2) ? heap : reg;
      size_t off = (size_t)me * slot_size + piece_off[i];
      /* The source is refilled right after each Put returns: a blocking Put
       * must not read it afterwards. */
      mp_fill_pattern(src, (size_t)sizes[i], me, t, off);
      mp_set_where("Put %d bytes to rank %d at offset %zu", sizes[i], t, off);
      MP_CHECK_INT(0, ARMCI_Put(src, (char *)base[t] + off, sizes[i], t));
      memset(src, 0xEE, (size_t)sizes[i]);
    }
  }
  ARMCI_AllFence();
  ARMCI_Barrier();

  const unsigned char *mine = base[me];
  unsigned char *expect = malloc(slot_size);
  for (int o = 0; o < np; o++) {
    memset(expect, 0, slot_size);
    for (int i = 0; i < NSIZES; i++)
      mp_fill_pattern(expect + piece_off[i], (size_t)sizes[i], o, me,
                      (size_t)o * slot_size + piece_off[i]);
    mp_set_where("memory of rank %d written by rank %d (slot of %zu bytes)", me, o, slot_size);
    MP_CHECK_BYTES(expect, mine + (size_t)o * slot_size, slot_size, "target memory after Put");
  }

  /* Reading back what this rank put, through Get, into an odd offset of a
   * guarded buffer. */
  for (int k = 0; k < np; k++) {
    int t = (me + k) % np;
    for (int i = 0; i < NSIZES; i++) {
      unsigned char *dst = (i % 2) ? reg : heap;
      size_t n = (size_t)sizes[i];
      size_t off = (size_t)me * slot_size + piece_off[i];
      memset(dst, 0x5A, n + 2);
      mp_set_where("Get %zu bytes back from rank %d at offset %zu", n, t, off);
      MP_CHECK_INT(0, ARMCI_Get((char *)base[t] + off, dst + 1, (int)n, t));
      mp_fill_pattern(expect, n, me, t, off);
      MP_CHECK_BYTES(expect, dst + 1, n, "Get of data this rank put");
      MP_CHECK_INT(0x5A, dst[0]);
      MP_CHECK_INT(0x5A, dst[n + 1]);
    }
  }
  mp_where[0] = 0;
  free(expect);
  free(heap);
  MP_CHECK_INT(0, ARMCI_Free_local(reg));
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(base);
}

/* Every owner writes its own memory; everybody reads pieces of it. */
static void test_get_sizes(void) {
  const size_t region = (size_t)(1 << 20) + 4096;
  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)region));
  mp_fill_pattern(base[me], region, me, me, 0);
  ARMCI_Barrier();

  unsigned char *dst = ARMCI_Malloc_local((armci_size_t)region + 2);
  unsigned char *expect = malloc(region);
  for (int k = 0; k < np; k++) {
    int t = (me + np - k) % np;
    for (int i = 0; i < NSIZES; i++) {
      size_t n = (size_t)sizes[i];
      size_t off = (size_t)(2 * i + 1) + (size_t)t * 6;
      if (off + n > region) off = region - n;
      memset(dst, 0xC3, n + 2);
      mp_set_where("Get %zu bytes from rank %d at offset %zu", n, t, off);
      MP_CHECK_INT(0, ARMCI_Get((char *)base[t] + off, dst + 1, (int)n, t));
      mp_fill_pattern(expect, n, t, t, off);
      MP_CHECK_BYTES(expect, dst + 1, n, "Get of data the owner wrote");
      MP_CHECK_INT(0xC3, dst[0]);
      MP_CHECK_INT(0xC3, dst[n + 1]);
    }
  }
  mp_where[0] = 0;
  free(expect);
  MP_CHECK_INT(0, ARMCI_Free_local(dst));
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(base);
}

/* Ranks that ask for 0 bytes get NULL; every rank must see the same table. */
static void test_zero_size_malloc(void) {
  const armci_size_t bytes = 256;
  int zero_me = (me == np - 1) || (me % 3 == 1);
  void **base = malloc(sizeof(void *) * (size_t)np);
  void **table = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, zero_me ? 0 : bytes));
  for (int r = 0; r < np; r++) {
    int zero_r = (r == np - 1) || (r % 3 == 1);
    mp_set_where("base_ptrs[%d] of a %s allocation", r, zero_r ? "zero-byte" : "256-byte");
    if (zero_r)
      MP_CHECK_PTR(NULL, base[r]);
    else
      MP_CHECK(base[r] != NULL, "base_ptrs[%d] is NULL", r);
  }
  mp_where[0] = 0;

  /* Rank 0 collects everyone's table (as integers) and compares them. */
  MP_CHECK_INT(0, ARMCI_Malloc(table, (armci_size_t)(sizeof(uint64_t) * (size_t)np * (size_t)np)));
  uint64_t *row = ARMCI_Malloc_local((armci_size_t)(sizeof(uint64_t) * (size_t)np));
  for (int r = 0; r < np; r++) row[r] = (uint64_t)(uintptr_t)base[r];
  MP_CHECK_INT(0, ARMCI_Put(row, (uint64_t *)table[0] + (size_t)me * (size_t)np,
                            (int)(sizeof(uint64_t) * (size_t)np), 0));
  ARMCI_AllFence();
  ARMCI_Barrier();
  if (me == 0) {
    const uint64_t *all = table[0];
    for (int s = 1; s < np; s++)
      for (int r = 0; r < np; r++) {
        mp_set_where("base_ptrs[%d] as seen by rank %d vs rank 0", r, s);
        MP_CHECK_INT(all[r], all[(size_t)s * (size_t)np + (size_t)r]);
      }
    mp_where[0] = 0;
  }

  /* The non-empty parts are usable: each rank puts its id into every one. */
  for (int t = 0; t < np; t++)
    if (base[t]) MP_CHECK_INT(0, ARMCI_PutValueInt(1000 + me, (int *)base[t] + me, t));
  ARMCI_AllFence();
  ARMCI_Barrier();
  if (!zero_me)
    for (int o = 0; o < np; o++) MP_CHECK_INT(1000 + o, ((int *)base[me])[o]);
  ARMCI_Barrier();

  MP_CHECK_INT(0, ARMCI_Free_local(row));
  MP_CHECK_INT(0, ARMCI_Free(table[me]));
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(table);
  free(base);
}

/* Values that differ per (origin, target) and use sign, high bits and
 * fractions, so a truncated or misdirected value is caught. */
static int vint(int o, int t) { return -(1000 * o + t + 1); }
static long vlong(int o, int t) { return -(((long)(o + 1)) << 36) - t; }
static float vfloat(int o, int t) { return (float)o + 0.25f * (float)t + 0.5f; }
static double vdouble(int o, int t) { return -((double)o * 1048576.0 + (double)t + 0.125); }

struct vslot {
  int i;
  int pad0;
  long l;
  float f;
  float pad1;
  double d;
};

static void test_values(void) {
  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)(sizeof(struct vslot) * (size_t)np)));
  memset(base[me], 0, sizeof(struct vslot) * (size_t)np);
  ARMCI_Barrier();

  for (int t = 0; t < np; t++) {
    struct vslot *s = (struct vslot *)base[t] + me;
    MP_CHECK_INT(0, ARMCI_PutValueInt(vint(me, t), &s->i, t));
    MP_CHECK_INT(0, ARMCI_PutValueLong(vlong(me, t), &s->l, t));
    MP_CHECK_INT(0, ARMCI_PutValueFloat(vfloat(me, t), &s->f, t));
    MP_CHECK_INT(0, ARMCI_PutValueDouble(vdouble(me, t), &s->d, t));
  }
  ARMCI_AllFence();
  ARMCI_Barrier();

  const struct vslot *mine = base[me];
  for (int o = 0; o < np; o++) {
    mp_set_where("values put by rank %d into rank %d", o, me);
    MP_CHECK_INT(vint(o, me), mine[o].i);
    MP_CHECK_INT(vlong(o, me), mine[o].l);
    MP_CHECK_DBL(vfloat(o, me), mine[o].f);
    MP_CHECK_DBL(vdouble(o, me), mine[o].d);
    MP_CHECK_INT(0, mine[o].pad0);
    MP_CHECK_DBL(0, mine[o].pad1);
  }

  /* Reading values that other ranks wrote. */
  for (int t = 0; t < np; t++)
    for (int o = 0; o < np; o++) {
      struct vslot *s = (struct vslot *)base[t] + o;
      mp_set_where("GetValue* from rank %d of the slot of rank %d", t, o);
      MP_CHECK_INT(vint(o, t), ARMCI_GetValueInt(&s->i, t));
      MP_CHECK_INT(vlong(o, t), ARMCI_GetValueLong(&s->l, t));
      MP_CHECK_DBL(vfloat(o, t), ARMCI_GetValueFloat(&s->f, t));
      MP_CHECK_DBL(vdouble(o, t), ARMCI_GetValueDouble(&s->d, t));
    }
  mp_where[0] = 0;
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(base);
}

/* A blocking put is seen by every later operation of its origin to the same
 * target without a fence: a get, a read-modify-write and the next put (over
 * verbs the core relies on the queue pair executing writes in order and
 * issues no ordering call between them). The values change every round, so
 * a get or fetch-and-add that overtook the put would read the last round's. */
static void test_put_then_read(void) {
  enum { ROUNDS = 200 };
  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)(2 * sizeof(long) * (size_t)np)));
  memset(base[me], 0, 2 * sizeof(long) * (size_t)np);
  ARMCI_Barrier();
  long *src = ARMCI_Malloc_local(2 * sizeof(long)), *dst = ARMCI_Malloc_local(2 * sizeof(long));
  for (int t = 0; t < np; t++) {
    long *slot = (long *)base[t] + 2 * me;
    for (long i = 1; i <= ROUNDS; i++) {
      mp_set_where("round %ld of put then get/rmw to rank %d", i, t);
      src[0] = vlong(me, t) + i;
      src[1] = i;
      MP_CHECK_INT(0, ARMCI_Put(src, slot, (int)(2 * sizeof(long)), t));
      MP_CHECK_INT(0, ARMCI_Get(slot, dst, (int)sizeof(long), t));
      MP_CHECK_INT(vlong(me, t) + i, dst[0]);
      long before = -1;
      MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &before, slot + 1, 1, t));
      MP_CHECK_INT(i, before);
      /* The next round's put lands after this fetch-and-add (i + 1 here). */
    }
    MP_CHECK_INT(ROUNDS + 1, ARMCI_GetValueLong(slot + 1, t));
  }
  mp_where[0] = 0;
  ARMCI_Free_local(src);
  ARMCI_Free_local(dst);
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(base);
}

static void test_topology(void) {
  const armci_domain_t D = ARMCI_DOMAIN_SMP;
  int count = armci_domain_count(D);
  int my_id = armci_domain_my_id(D);
  MP_CHECK(count >= 1 && count <= np, "domain count %d for %d ranks", count, np);
  MP_CHECK(my_id >= 0 && my_id < count, "my domain id %d of %d", my_id, count);
  MP_CHECK_INT(my_id, armci_domain_id(D, me));
  MP_CHECK_INT(1, ARMCI_Same_node(me));
  MP_CHECK_INT(1, armci_domain_same_id(D, me));

  /* The domains partition the ranks, and glob_proc_id inverts domain_id. */
  int *seen = calloc((size_t)np, sizeof(int));
  int total = 0;
  for (int id = 0; id < count; id++) {
    int n = armci_domain_nprocs(D, id);
    MP_CHECK(n >= 1, "domain %d has %d processes", id, n);
    total += n;
    for (int l = 0; l < n; l++) {
      int g = armci_domain_glob_proc_id(D, id, l);
      mp_set_where("domain %d local process %d", id, l);
      MP_CHECK(g >= 0 && g < np, "global id %d out of range", g);
      MP_CHECK_INT(0, seen[g]);
      seen[g] = 1;
      MP_CHECK_INT(id, armci_domain_id(D, g));
    }
  }
  mp_where[0] = 0;
  MP_CHECK_INT(np, total);
  free(seen);

  for (int p = 0; p < np; p++) {
    int same = armci_domain_id(D, p) == my_id;
    mp_set_where("rank %d vs rank %d", me, p);
    MP_CHECK_INT(same, ARMCI_Same_node(p));
    MP_CHECK_INT(same, armci_domain_same_id(D, p));
  }
  mp_where[0] = 0;

  /* The tests run on one host, where virtual nodes are exact blocks of k
   * consecutive ranks. */
  int k = mp_env_int("ARMCI_VNODE_SIZE", 0);
  if (k > 0 && !getenv("MP_MULTIHOST")) {
    MP_CHECK_INT((np + k - 1) / k, count);
    int first = me / k * k;
    MP_CHECK_INT(np - first < k ? np - first : k, armci_domain_nprocs(D, my_id));
    for (int p = 0; p < np; p++) {
      mp_set_where("ARMCI_VNODE_SIZE=%d: rank %d vs rank %d", k, me, p);
      MP_CHECK_INT(p / k == me / k, ARMCI_Same_node(p));
    }
    mp_where[0] = 0;
  }

  int shm = mp_env_int("ARMCI_SHM", -1);
  if (shm == 0) MP_CHECK_INT(0, ARMCI_Uses_shm());
  if (shm == 1 && armci_domain_nprocs(D, my_id) > 1) MP_CHECK_INT(1, ARMCI_Uses_shm());

  /* Everybody agrees on who shares a node: rank 0 checks the matrix. */
  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, me == 0 ? (armci_size_t)(sizeof(int) * (size_t)np * (size_t)np) : 0));
  int *row = ARMCI_Malloc_local((armci_size_t)(sizeof(int) * (size_t)np));
  for (int p = 0; p < np; p++) row[p] = ARMCI_Same_node(p);
  MP_CHECK_INT(0, ARMCI_Put(row, (int *)base[0] + me * np, (int)(sizeof(int) * (size_t)np), 0));
  ARMCI_AllFence();
  ARMCI_Barrier();
  if (me == 0) {
    const int *m = base[0];
    for (int a = 0; a < np; a++)
      for (int b = 0; b < np; b++) {
        mp_set_where("Same_node matrix [%d][%d] vs [%d][%d]", a, b, b, a);
        MP_CHECK_INT(m[a * np + b], m[b * np + a]);
        MP_CHECK_INT(armci_domain_id(D, a) == armci_domain_id(D, b), m[a * np + b]);
      }
    mp_where[0] = 0;
  }
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free_local(row));
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(base);
}

/* Allocations of different sizes per rank and round, freed in a different
 * order than allocated; a put to a freed-and-reallocated region must land in
 * the new one. */
static void test_malloc_rounds(void) {
  enum { ROUNDS = 6 };
  void **a = malloc(sizeof(void *) * (size_t)np);
  void **b = malloc(sizeof(void *) * (size_t)np);
  for (int round = 0; round < ROUNDS; round++) {
    size_t asz = (size_t)(round + 1) * 1000 + (size_t)me * 17 + 64;
    size_t bsz = (size_t)(ROUNDS - round) * 4096 + (size_t)me;
    MP_CHECK_INT(0, ARMCI_Malloc(a, (armci_size_t)asz));
    MP_CHECK_INT(0, ARMCI_Malloc(b, (armci_size_t)bsz));
    memset(a[me], 0, asz);
    memset(b[me], 0, bsz);
    ARMCI_Barrier();

    int t = (me + 1) % np;
    size_t tasz = (size_t)(round + 1) * 1000 + (size_t)t * 17 + 64;
    size_t tbsz = (size_t)(ROUNDS - round) * 4096 + (size_t)t;
    unsigned char *buf = ARMCI_Malloc_local((armci_size_t)(tasz > tbsz ? tasz : tbsz));
    mp_fill_pattern(buf, tasz, me, t, (size_t)round << 24);
    MP_CHECK_INT(0, ARMCI_Put(buf, a[t], (int)tasz, t));
    mp_fill_pattern(buf, tbsz, me, t, ((size_t)round << 24) + 1);
    MP_CHECK_INT(0, ARMCI_Put(buf, b[t], (int)tbsz, t));
    ARMCI_Fence(t);
    ARMCI_Barrier();

    int o = (me + np - 1) % np;
    unsigned char *expect = malloc(asz > bsz ? asz : bsz);
    mp_set_where("malloc round %d, data from rank %d", round, o);
    mp_fill_pattern(expect, asz, o, me, (size_t)round << 24);
    MP_CHECK_BYTES(expect, a[me], asz, "first region of the round");
    mp_fill_pattern(expect, bsz, o, me, ((size_t)round << 24) + 1);
    MP_CHECK_BYTES(expect, b[me], bsz, "second region of the round");
    mp_where[0] = 0;
    free(expect);
    MP_CHECK_INT(0, ARMCI_Free_local(buf));
    ARMCI_Barrier();
    if (round % 2) {
      MP_CHECK_INT(0, ARMCI_Free(a[me]));
      MP_CHECK_INT(0, ARMCI_Free(b[me]));
    } else {
      MP_CHECK_INT(0, ARMCI_Free(b[me]));
      MP_CHECK_INT(0, ARMCI_Free(a[me]));
    }
  }
  free(a);
  free(b);
}

/* Freed parts are kept and carved into later allocations (ARMCI_MALLOC_KEEP):
 * LIVE allocations at once, half freed and made again (of sizes that reuse
 * the freed parts, and of one that cannot), and every live one written by
 * the next rank with a pattern of its own: two live allocations sharing
 * memory, or a reused part not reaching its new owner, show as wrong bytes.
 * A reused part reads as zeros, like a fresh one. */
static size_t reuse_bytes(int k, int made_in_round, int rank) {
  return 4096 * (size_t)(1 + k % 3) - (size_t)rank * 8 + (made_in_round > 0 && k == 1 ? 4096 : 0);
}

static void test_malloc_reuse(void) {
  enum { LIVE = 6, ROUNDS = 4 };
  void **bases[LIVE];
  int made_in[LIVE]; /* the round allocation k was made in; -1: freed */
  for (int k = 0; k < LIVE; k++) {
    bases[k] = malloc(sizeof(void *) * (size_t)np);
    made_in[k] = -1;
  }
  const int t = (me + 1) % np, o = (me + np - 1) % np;
  for (int round = 0; round < ROUNDS; round++) {
    for (int k = 0; k < LIVE; k++) {
      if (made_in[k] >= 0) continue;
      /* Rounds after the first remake every other allocation, at a size of
       * the freed one (4 KiB steps) or, for k = 1, one page larger. */
      made_in[k] = round;
      const size_t bytes = reuse_bytes(k, round, me);
      MP_CHECK_INT(0, ARMCI_Malloc(bases[k], (armci_size_t)bytes));
      mp_set_where("malloc reuse round %d, allocation %d", round, k);
      unsigned char *zeros = calloc(1, bytes);
      MP_CHECK_BYTES(zeros, bases[k][me], bytes, "a new part reads as zeros");
      free(zeros);
    }
    ARMCI_Barrier(); /* every rank has checked its new parts before any put */
    for (int k = 0; k < LIVE; k++) {
      const size_t tbytes = reuse_bytes(k, made_in[k], t);
      unsigned char *buf = malloc(tbytes);
      mp_fill_pattern(buf, tbytes, me, t, ((size_t)round << 20) + (size_t)k * 4096);
      MP_CHECK_INT(0, ARMCI_Put(buf, bases[k][t], (int)tbytes, t));
      free(buf);
    }
    ARMCI_Fence(t);
    ARMCI_Barrier();
    for (int k = 0; k < LIVE; k++) {
      const size_t bytes = reuse_bytes(k, made_in[k], me);
      unsigned char *expect = malloc(bytes);
      mp_set_where("malloc reuse round %d, allocation %d, data from rank %d", round, k, o);
      mp_fill_pattern(expect, bytes, o, me, ((size_t)round << 20) + (size_t)k * 4096);
      MP_CHECK_BYTES(expect, bases[k][me], bytes, "a live allocation holds what was put into it");
      free(expect);
    }
    mp_where[0] = 0;
    ARMCI_Barrier();
    /* Free every other one, odd ones first in odd rounds. */
    for (int k = round % 2; k < LIVE; k += 2) {
      MP_CHECK_INT(0, ARMCI_Free(bases[k][me]));
      made_in[k] = -1;
    }
  }
  for (int k = 0; k < LIVE; k++) {
    if (made_in[k] >= 0) MP_CHECK_INT(0, ARMCI_Free(bases[k][me]));
    free(bases[k]);
  }
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  me = mp_me;
  np = mp_np;
  MP_CHECK_INT(1, ARMCI_Initialized());
  layout();

  test_topology();
  test_zero_size_malloc();
  test_put_sizes();
  test_get_sizes();
  test_values();
  test_put_then_read();
  test_malloc_rounds();
  test_malloc_reuse();

  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass("mp_basic", me);
  return 0;
}
