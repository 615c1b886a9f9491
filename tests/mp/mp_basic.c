/*
 * mp_basic: collective allocation, contiguous Put/Get of many sizes at odd
 * offsets, single-value transfers, topology queries and repeated
 * allocate/free rounds, and the alignment of ARMCI_Malloc_local.
 */
#include "mp_common.h"

#include <unistd.h>


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

/* Gets n bytes at off in rank t's part into dst + 1, between two guard bytes,
 * and checks them against the pattern origin wrote there (expect: n bytes of
 * room) and the guards against an overrun. */
static void get_guarded(void **base, int t, size_t off, size_t n, int origin, unsigned char *dst, unsigned char guard,
                        unsigned char *expect, const char *what) {
  memset(dst, guard, n + 2);
  mp_set_where("Get %zu bytes of rank %d's data from rank %d at offset %zu", n, origin, t, off);
  MP_CHECK_INT(0, ARMCI_Get((char *)base[t] + off, dst + 1, (int)n, t));
  mp_fill_pattern(expect, n, origin, t, off);
  MP_CHECK_BYTES(expect, dst + 1, n, what);
  MP_CHECK_INT(guard, dst[0]);
  MP_CHECK_INT(guard, dst[n + 1]);
}

/* Puts every size to every rank (self included) and lets each target check
 * its own memory, gaps included. */
static void test_put_sizes(void) {
  void **base = mp_alloc_all(slot_size * (size_t)mp_np);
  MP_CHECK(base[mp_me] != NULL, "own base pointer is NULL for %zu bytes", slot_size * (size_t)mp_np);
  ARMCI_Barrier();

  /* One registered and one ordinary source buffer: both must work. */
  unsigned char *reg = ARMCI_Malloc_local(sizes[NSIZES - 1] + 2);
  unsigned char *heap = malloc((size_t)sizes[NSIZES - 1] + 2);
  MP_CHECK(reg != NULL && heap != NULL, "local buffers %p %p", (void *)reg, (void *)heap);

  for (int k = 1; k <= mp_np; k++) {
    int t = (mp_me + k) % mp_np; /* staggered so that not every rank hits rank 0 first */
    for (int i = 0; i < NSIZES; i++) {
      unsigned char *src = (i % 2) ? heap : reg;
      size_t off = (size_t)mp_me * slot_size + piece_off[i];
      /* The source is refilled right after each Put returns: a blocking Put
       * must not read it afterwards. */
      mp_fill_pattern(src, (size_t)sizes[i], mp_me, t, off);
      mp_set_where("Put %d bytes to rank %d at offset %zu", sizes[i], t, off);
      MP_CHECK_INT(0, ARMCI_Put(src, (char *)base[t] + off, sizes[i], t));
      memset(src, 0xEE, (size_t)sizes[i]);
    }
  }
  ARMCI_AllFence();
  ARMCI_Barrier();

  const unsigned char *mine = base[mp_me];
  unsigned char *expect = malloc(slot_size);
  for (int o = 0; o < mp_np; o++) {
    memset(expect, 0, slot_size);
    for (int i = 0; i < NSIZES; i++)
      mp_fill_pattern(expect + piece_off[i], (size_t)sizes[i], o, mp_me,
                      (size_t)o * slot_size + piece_off[i]);
    mp_set_where("memory of rank %d written by rank %d (slot of %zu bytes)", mp_me, o, slot_size);
    MP_CHECK_BYTES(expect, mine + (size_t)o * slot_size, slot_size, "target memory after Put");
  }

  /* Reading back what this rank put, through Get, into an odd offset of a
   * guarded buffer. */
  for (int k = 0; k < mp_np; k++) {
    int t = (mp_me + k) % mp_np;
    for (int i = 0; i < NSIZES; i++) {
      unsigned char *dst = (i % 2) ? reg : heap;
      size_t off = (size_t)mp_me * slot_size + piece_off[i];
      get_guarded(base, t, off, (size_t)sizes[i], mp_me, dst, 0x5A, expect, "Get of data this rank put");
    }
  }
  mp_where[0] = 0;
  free(expect);
  free(heap);
  MP_CHECK_INT(0, ARMCI_Free_local(reg));
  ARMCI_Barrier();
  mp_free_all(base);
}

/* Every owner writes its own memory; everybody reads pieces of it. */
static void test_get_sizes(void) {
  const size_t region = (size_t)(1 << 20) + 4096;
  void **base = mp_alloc_all(region);
  mp_fill_pattern(base[mp_me], region, mp_me, mp_me, 0);
  ARMCI_Barrier();

  unsigned char *dst = ARMCI_Malloc_local((armci_size_t)region + 2);
  unsigned char *expect = malloc(region);
  for (int k = 0; k < mp_np; k++) {
    int t = (mp_me + mp_np - k) % mp_np;
    for (int i = 0; i < NSIZES; i++) {
      size_t n = (size_t)sizes[i];
      size_t off = (size_t)(2 * i + 1) + (size_t)t * 6;
      if (off + n > region) off = region - n;
      get_guarded(base, t, off, n, t, dst, 0xC3, expect, "Get of data the owner wrote");
    }
  }
  mp_where[0] = 0;
  free(expect);
  MP_CHECK_INT(0, ARMCI_Free_local(dst));
  ARMCI_Barrier();
  mp_free_all(base);
}

/* Every rank's row of row_bytes (in memory from ARMCI_Malloc_local), in rank
 * order, in rank 0's part of the collective allocation returned; the other
 * parts are empty. */
static void **gather_on_rank0(void *row, size_t row_bytes) {
  void **table = mp_alloc_all(mp_me == 0 ? row_bytes * (size_t)mp_np : 0);
  ARMCI_Barrier(); /* rank 0 has zeroed its part */
  MP_CHECK_INT(0, ARMCI_Put(row, (char *)table[0] + (size_t)mp_me * row_bytes, (int)row_bytes, 0));
  ARMCI_AllFence();
  ARMCI_Barrier();
  return table;
}

/* Ranks that ask for 0 bytes get NULL; every rank must see the same table. */
static void test_zero_size_malloc(void) {
  const armci_size_t bytes = 256;
  int zero_me = (mp_me == mp_np - 1) || (mp_me % 3 == 1);
  void **base = malloc(sizeof(void *) * (size_t)mp_np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, zero_me ? 0 : bytes));
  for (int r = 0; r < mp_np; r++) {
    int zero_r = (r == mp_np - 1) || (r % 3 == 1);
    mp_set_where("base_ptrs[%d] of a %s allocation", r, zero_r ? "zero-byte" : "256-byte");
    if (zero_r)
      MP_CHECK_PTR(NULL, base[r]);
    else
      MP_CHECK(base[r] != NULL, "base_ptrs[%d] is NULL", r);
  }
  mp_where[0] = 0;

  /* Rank 0 collects everyone's table (as integers) and compares them. */
  uint64_t *row = ARMCI_Malloc_local((armci_size_t)(sizeof(uint64_t) * (size_t)mp_np));
  for (int r = 0; r < mp_np; r++) row[r] = (uint64_t)(uintptr_t)base[r];
  void **table = gather_on_rank0(row, sizeof(uint64_t) * (size_t)mp_np);
  if (mp_me == 0) {
    const uint64_t *all = table[0];
    for (int s = 1; s < mp_np; s++)
      for (int r = 0; r < mp_np; r++) {
        mp_set_where("base_ptrs[%d] as seen by rank %d vs rank 0", r, s);
        MP_CHECK_INT(all[r], all[(size_t)s * (size_t)mp_np + (size_t)r]);
      }
    mp_where[0] = 0;
  }

  /* The non-empty parts are usable: each rank puts its id into every one. */
  for (int t = 0; t < mp_np; t++)
    if (base[t]) MP_CHECK_INT(0, ARMCI_PutValueInt(1000 + mp_me, (int *)base[t] + mp_me, t));
  ARMCI_AllFence();
  ARMCI_Barrier();
  if (!zero_me)
    for (int o = 0; o < mp_np; o++) MP_CHECK_INT(1000 + o, ((int *)base[mp_me])[o]);
  ARMCI_Barrier();

  MP_CHECK_INT(0, ARMCI_Free_local(row));
  mp_free_all(table);
  mp_free_all(base);
}

/* Values that differ per (origin, target) and use sign, high bits and
 * fractions, so a truncated or misdirected value is caught. */
static int vint(int o, int t) { return -(1000 * o + t + 1); }
static long vlong(int o, int t) { return -(((long)(o + 1)) << 36) - t; }
static float vfloat(int o, int t) { return (float)o + 0.25f * (float)t + 0.5f; }
static double vdouble(int o, int t) { return -((double)o * 1048576.0 + (double)t + 0.125); }

static void test_values(void) {
  void **base = mp_alloc_all(sizeof(struct mp_value_slot) * (size_t)mp_np);
  ARMCI_Barrier();

  for (int t = 0; t < mp_np; t++) {
    struct mp_value_slot *s = (struct mp_value_slot *)base[t] + mp_me;
    MP_CHECK_INT(0, ARMCI_PutValueInt(vint(mp_me, t), &s->i, t));
    MP_CHECK_INT(0, ARMCI_PutValueLong(vlong(mp_me, t), &s->l, t));
    MP_CHECK_INT(0, ARMCI_PutValueFloat(vfloat(mp_me, t), &s->f, t));
    MP_CHECK_INT(0, ARMCI_PutValueDouble(vdouble(mp_me, t), &s->d, t));
  }
  ARMCI_AllFence();
  ARMCI_Barrier();

  const struct mp_value_slot *mine = base[mp_me];
  for (int o = 0; o < mp_np; o++) {
    mp_set_where("values put by rank %d into rank %d", o, mp_me);
    MP_CHECK_INT(vint(o, mp_me), mine[o].i);
    MP_CHECK_INT(vlong(o, mp_me), mine[o].l);
    MP_CHECK_DBL(vfloat(o, mp_me), mine[o].f);
    MP_CHECK_DBL(vdouble(o, mp_me), mine[o].d);
    MP_CHECK_INT(0, mine[o].pad0);
    MP_CHECK_DBL(0, mine[o].pad1);
  }

  /* Reading values that other ranks wrote. */
  for (int t = 0; t < mp_np; t++)
    for (int o = 0; o < mp_np; o++) {
      struct mp_value_slot *s = (struct mp_value_slot *)base[t] + o;
      mp_set_where("GetValue* from rank %d of the slot of rank %d", t, o);
      MP_CHECK_INT(vint(o, t), ARMCI_GetValueInt(&s->i, t));
      MP_CHECK_INT(vlong(o, t), ARMCI_GetValueLong(&s->l, t));
      MP_CHECK_DBL(vfloat(o, t), ARMCI_GetValueFloat(&s->f, t));
      MP_CHECK_DBL(vdouble(o, t), ARMCI_GetValueDouble(&s->d, t));
    }
  mp_where[0] = 0;
  ARMCI_Barrier();
  mp_free_all(base);
}

/* A blocking put is seen by every later operation of its origin to the same
 * target without a fence: a get, a read-modify-write and the next put (over
 * verbs the core relies on the queue pair executing writes in order and
 * issues no ordering call between them). The values change every round, so
 * a get or fetch-and-add that overtook the put would read the last round's. */
static void test_put_then_read(void) {
  enum { ROUNDS = 200 };
  void **base = mp_alloc_all(2 * sizeof(long) * (size_t)mp_np);
  ARMCI_Barrier();
  long *src = ARMCI_Malloc_local(2 * sizeof(long)), *dst = ARMCI_Malloc_local(2 * sizeof(long));
  for (int t = 0; t < mp_np; t++) {
    long *slot = (long *)base[t] + 2 * mp_me;
    for (long i = 1; i <= ROUNDS; i++) {
      mp_set_where("round %ld of put then get/rmw to rank %d", i, t);
      src[0] = vlong(mp_me, t) + i;
      src[1] = i;
      MP_CHECK_INT(0, ARMCI_Put(src, slot, (int)(2 * sizeof(long)), t));
      MP_CHECK_INT(0, ARMCI_Get(slot, dst, (int)sizeof(long), t));
      MP_CHECK_INT(vlong(mp_me, t) + i, dst[0]);
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
  mp_free_all(base);
}

static void test_topology(void) {
  MP_CHECK_INT(1, ARMCI_Initialized());
  const armci_domain_t D = ARMCI_DOMAIN_SMP;
  int count = armci_domain_count(D);
  int my_id = armci_domain_my_id(D);
  MP_CHECK(count >= 1 && count <= mp_np, "domain count %d for %d ranks", count, mp_np);
  MP_CHECK(my_id >= 0 && my_id < count, "my domain id %d of %d", my_id, count);
  MP_CHECK_INT(my_id, armci_domain_id(D, mp_me));
  MP_CHECK_INT(1, ARMCI_Same_node(mp_me));
  MP_CHECK_INT(1, armci_domain_same_id(D, mp_me));

  /* The domains partition the ranks, and glob_proc_id inverts domain_id. */
  int *seen = calloc((size_t)mp_np, sizeof(int));
  int total = 0;
  for (int id = 0; id < count; id++) {
    int n = armci_domain_nprocs(D, id);
    MP_CHECK(n >= 1, "domain %d has %d processes", id, n);
    total += n;
    for (int l = 0; l < n; l++) {
      int g = armci_domain_glob_proc_id(D, id, l);
      mp_set_where("domain %d local process %d", id, l);
      MP_CHECK(g >= 0 && g < mp_np, "global id %d out of range", g);
      MP_CHECK_INT(0, seen[g]);
      seen[g] = 1;
      MP_CHECK_INT(id, armci_domain_id(D, g));
    }
  }
  mp_where[0] = 0;
  MP_CHECK_INT(mp_np, total);
  free(seen);

  for (int p = 0; p < mp_np; p++) {
    int same = armci_domain_id(D, p) == my_id;
    mp_set_where("rank %d vs rank %d", mp_me, p);
    MP_CHECK_INT(same, ARMCI_Same_node(p));
    MP_CHECK_INT(same, armci_domain_same_id(D, p));
  }
  mp_where[0] = 0;

  /* The tests run on one host, where virtual nodes are exact blocks of k
   * consecutive ranks. */
  int k = mp_env_int("ARMCI_VNODE_SIZE", 0);
  if (k > 0 && !getenv("MP_MULTIHOST")) {
    MP_CHECK_INT((mp_np + k - 1) / k, count);
    int first = mp_me / k * k;
    MP_CHECK_INT(mp_np - first < k ? mp_np - first : k, armci_domain_nprocs(D, my_id));
    for (int p = 0; p < mp_np; p++) {
      mp_set_where("ARMCI_VNODE_SIZE=%d: rank %d vs rank %d", k, mp_me, p);
      MP_CHECK_INT(p / k == mp_me / k, ARMCI_Same_node(p));
    }
    mp_where[0] = 0;
  }

  int shm = mp_env_int("ARMCI_SHM", -1);
  if (shm == 0) MP_CHECK_INT(0, ARMCI_Uses_shm());
  if (shm == 1 && armci_domain_nprocs(D, my_id) > 1) MP_CHECK_INT(1, ARMCI_Uses_shm());

  /* Everybody agrees on who shares a node: rank 0 checks the matrix. */
  int *row = ARMCI_Malloc_local((armci_size_t)(sizeof(int) * (size_t)mp_np));
  for (int p = 0; p < mp_np; p++) row[p] = ARMCI_Same_node(p);
  void **base = gather_on_rank0(row, sizeof(int) * (size_t)mp_np);
  if (mp_me == 0) {
    const int *m = base[0];
    for (int a = 0; a < mp_np; a++)
      for (int b = 0; b < mp_np; b++) {
        mp_set_where("Same_node matrix [%d][%d] vs [%d][%d]", a, b, b, a);
        MP_CHECK_INT(m[a * mp_np + b], m[b * mp_np + a]);
        MP_CHECK_INT(armci_domain_id(D, a) == armci_domain_id(D, b), m[a * mp_np + b]);
      }
    mp_where[0] = 0;
  }
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free_local(row));
  mp_free_all(base);
}

/* Allocations of different sizes per rank and round, freed in a different
 * order than allocated; a put to a freed-and-reallocated region must land in
 * the new one. */
static void test_malloc_rounds(void) {
  enum { ROUNDS = 6 };
  void **a = malloc(sizeof(void *) * (size_t)mp_np);
  void **b = malloc(sizeof(void *) * (size_t)mp_np);
  for (int round = 0; round < ROUNDS; round++) {
    size_t asz = (size_t)(round + 1) * 1000 + (size_t)mp_me * 17 + 64;
    size_t bsz = (size_t)(ROUNDS - round) * 4096 + (size_t)mp_me;
    MP_CHECK_INT(0, ARMCI_Malloc(a, (armci_size_t)asz));
    MP_CHECK_INT(0, ARMCI_Malloc(b, (armci_size_t)bsz));
    memset(a[mp_me], 0, asz);
    memset(b[mp_me], 0, bsz);
    ARMCI_Barrier();

    int t = (mp_me + 1) % mp_np;
    size_t tasz = (size_t)(round + 1) * 1000 + (size_t)t * 17 + 64;
    size_t tbsz = (size_t)(ROUNDS - round) * 4096 + (size_t)t;
    unsigned char *buf = ARMCI_Malloc_local((armci_size_t)(tasz > tbsz ? tasz : tbsz));
    mp_fill_pattern(buf, tasz, mp_me, t, (size_t)round << 24);
    MP_CHECK_INT(0, ARMCI_Put(buf, a[t], (int)tasz, t));
    mp_fill_pattern(buf, tbsz, mp_me, t, ((size_t)round << 24) + 1);
    MP_CHECK_INT(0, ARMCI_Put(buf, b[t], (int)tbsz, t));
    ARMCI_Fence(t);
    ARMCI_Barrier();

    int o = (mp_me + mp_np - 1) % mp_np;
    unsigned char *expect = malloc(asz > bsz ? asz : bsz);
    mp_set_where("malloc round %d, data from rank %d", round, o);
    mp_fill_pattern(expect, asz, o, mp_me, (size_t)round << 24);
    MP_CHECK_BYTES(expect, a[mp_me], asz, "first region of the round");
    mp_fill_pattern(expect, bsz, o, mp_me, ((size_t)round << 24) + 1);
    MP_CHECK_BYTES(expect, b[mp_me], bsz, "second region of the round");
    mp_where[0] = 0;
    free(expect);
    MP_CHECK_INT(0, ARMCI_Free_local(buf));
    ARMCI_Barrier();
    if (round % 2) {
      MP_CHECK_INT(0, ARMCI_Free(a[mp_me]));
      MP_CHECK_INT(0, ARMCI_Free(b[mp_me]));
    } else {
      MP_CHECK_INT(0, ARMCI_Free(b[mp_me]));
      MP_CHECK_INT(0, ARMCI_Free(a[mp_me]));
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
    bases[k] = malloc(sizeof(void *) * (size_t)mp_np);
    made_in[k] = -1;
  }
  const int t = (mp_me + 1) % mp_np, o = (mp_me + mp_np - 1) % mp_np;
  for (int round = 0; round < ROUNDS; round++) {
    for (int k = 0; k < LIVE; k++) {
      if (made_in[k] >= 0) continue;
      /* Rounds after the first remake every other allocation, at a size of
       * the freed one (4 KiB steps) or, for k = 1, one page larger. */
      made_in[k] = round;
      const size_t bytes = reuse_bytes(k, round, mp_me);
      MP_CHECK_INT(0, ARMCI_Malloc(bases[k], (armci_size_t)bytes));
      mp_set_where("malloc reuse round %d, allocation %d", round, k);
      unsigned char *zeros = calloc(1, bytes);
      MP_CHECK_BYTES(zeros, bases[k][mp_me], bytes, "a new part reads as zeros");
      free(zeros);
    }
    ARMCI_Barrier(); /* every rank has checked its new parts before any put */
    for (int k = 0; k < LIVE; k++) {
      const size_t tbytes = reuse_bytes(k, made_in[k], t);
      unsigned char *buf = malloc(tbytes);
      mp_fill_pattern(buf, tbytes, mp_me, t, ((size_t)round << 20) + (size_t)k * 4096);
      MP_CHECK_INT(0, ARMCI_Put(buf, bases[k][t], (int)tbytes, t));
      free(buf);
    }
    ARMCI_Fence(t);
    ARMCI_Barrier();
    for (int k = 0; k < LIVE; k++) {
      const size_t bytes = reuse_bytes(k, made_in[k], mp_me);
      unsigned char *expect = malloc(bytes);
      mp_set_where("malloc reuse round %d, allocation %d, data from rank %d", round, k, o);
      mp_fill_pattern(expect, bytes, o, mp_me, ((size_t)round << 20) + (size_t)k * 4096);
      MP_CHECK_BYTES(expect, bases[k][mp_me], bytes, "a live allocation holds what was put into it");
      free(expect);
    }
    mp_where[0] = 0;
    ARMCI_Barrier();
    /* Free every other one, odd ones first in odd rounds. */
    for (int k = round % 2; k < LIVE; k += 2) {
      MP_CHECK_INT(0, ARMCI_Free(bases[k][mp_me]));
      made_in[k] = -1;
    }
  }
  for (int k = 0; k < LIVE; k++) {
    if (made_in[k] >= 0) MP_CHECK_INT(0, ARMCI_Free(bases[k][mp_me]));
    free(bases[k]);
  }
}

/* ARMCI_Malloc_local: cache-line aligned, and from 64 KiB on a page
 * boundary like ARMCI_Malloc's blocks (so GA patches meet at one page
 * offset); every byte usable. */
static void test_local_alignment(void) {
  static const armci_size_t sizes_l[] = {1, 100, 64 * 1024 - 1, 64 * 1024, 3 << 20};
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < 5; i++) {
    unsigned char *p = ARMCI_Malloc_local(sizes_l[i]);
    mp_set_where("ARMCI_Malloc_local(%ld) = %p", (long)sizes_l[i], (void *)p);
    MP_CHECK(p != NULL, "NULL");
    MP_CHECK_INT(0, (long)((uintptr_t)p % 64));
    if (sizes_l[i] >= 64 * 1024) MP_CHECK_INT(0, (long)((uintptr_t)p % page));
    memset(p, 0xA5, (size_t)sizes_l[i]);
    MP_CHECK_INT(0xA5, p[sizes_l[i] - 1]);
    MP_CHECK_INT(0, ARMCI_Free_local(p));
  }
  mp_where[0] = 0;
}

int main(int argc, char **argv) {
  return MP_RUN_CASES(argc, argv, "mp_basic", layout, test_topology, test_zero_size_malloc, test_put_sizes,
                      test_get_sizes, test_values, test_put_then_read, test_malloc_rounds, test_malloc_reuse,
                      test_local_alignment);
}
