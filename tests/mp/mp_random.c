/*
 * mp_random [OPS]: OPS (default MP_RANDOM_OPS, else 4000) random operations
 * per rank, of every
 * shape (contiguous, strided with 1 to 3 levels, vector), every kind (Put,
 * Get, Acc of int, long, float and double with several scales) and every
 * completion (blocking, nonblocking with an explicit handle finished by Wait
 * or a Test loop, implicit finished by WaitProc, WaitAll or Fence, and
 * aggregate), from local memory that is registered or plain heap.
 *
 * Every origin owns one slice of every target and keeps a shadow of what its
 * slices must hold, so the result is deterministic although nothing orders
 * the origins. Nonblocking operations are not ordered among themselves, so
 * an operation that would race with one still outstanding to the same bytes
 * (a Put with anything, a Get with a Put or Acc; Accs of one type commute)
 * first completes that target (its handles, then ARMCI_Fence). Gets are
 * checked once complete, and so are the bytes around what they wrote; a
 * blocking Get right after a blocking Put or Acc, with no fence, must see it
 * (location consistency). Every epoch (a random number of operations) ends
 * with everything completed and this origin's touched bytes on every target
 * read back and compared with the shadow; at the end every target compares
 * its memory with every origin's shadow. MP_SEED changes the sequence; a
 * failure names the seed, the epoch and the operation.
 */
#include "mp_common.h"

#include <stddef.h>

static int me, np;

/* One origin's slice on one target: a byte area, then one area per Acc
 * type, so integer and floating-point accumulates never reinterpret each
 * other's bits (rounding or NaN payloads would make the result depend on
 * the order). */
enum { A_BYTES, A_INT, A_LONG, A_FLT, A_DBL, NAREAS };
typedef struct {
  size_t off, size, elem;
  int type; /* ARMCI_ACC_*, -1 for the byte area */
  const char *name;
} area_t;
static const area_t areas[NAREAS] = {
    {0, 16384, 1, -1, "bytes"},
    {16384, 4096, 4, ARMCI_ACC_INT, "int"},
    {20480, 8192, 8, ARMCI_ACC_LNG, "long"},
    {28672, 4096, 4, ARMCI_ACC_FLT, "float"},
    {32768, 8192, 8, ARMCI_ACC_DBL, "double"},
};
enum { SLICE = 40960 };
_Static_assert(sizeof(long) == 8, "the long area holds 8-byte elements");

enum { K_PUT, K_GET, K_ACC, NKINDS };
enum { S_CONTIG, S_STRIDED, S_VECTOR, NSHAPES };
enum { C_BLOCKING, C_EXPLICIT, C_IMPLICIT, C_AGGREGATE, NCOMPS };
static const char *kind_name[] = {"Put", "Get", "Acc"};
static const char *shape_name[] = {"", "S", "V"};
static const char *comp_name[] = {"blocking", "explicit handle", "implicit handle", "aggregate handle"};

/* Marks of outstanding nonblocking operations on a target's bytes. */
enum { F_PUT = 1, F_ACC = 2, F_GET = 4 };
static const unsigned char conflicts_with[NKINDS] = {F_PUT | F_ACC | F_GET, F_PUT | F_ACC, F_PUT | F_GET};

enum { MAXPIECES = 64, MAXLISTS = 3, MAXSEGS = 8, MAXPEND = 128, ARENA = 2 << 20, CANARY = 8 };
enum { GUARD_BYTE = 0xD5, SCRIBBLE = 0xEE };

typedef struct {
  size_t roff; /* in the slice */
  size_t loff; /* in the local region */
  size_t len;
} piece_t;

typedef struct {
  int used, done; /* done: locally complete */
  int kind, shape, comp, t, area;
  unsigned char *local; /* the region; CANARY bytes of guard on each side */
  size_t lsize;
  int npieces;
  piece_t p[MAXPIECES];
  int levels, count[4], lstride[3], rstride[3];
  int nlists;
  armci_giov_t iov[MAXLISTS];
  void *src_ptrs[MAXLISTS * MAXSEGS], *dst_ptrs[MAXLISTS * MAXSEGS];
  union {
    int i;
    long l;
    float f;
    double d;
  } scale;
  armci_hdl_t h;
  char desc[200];
} op_t;

static void **mem;    /* the tested memory: np slices per rank */
static void **shadow; /* origin's view: its slice of target t at t * SLICE */
static mp_rng_t rng;
static uint64_t seed;
static unsigned char *flags; /* np * SLICE marks */
static unsigned char *arena[2], *scratch, *expect;
static size_t arena_used[2];
static op_t *ops;
static int npending;
static armci_hdl_t agg;
static int agg_used;
static long epoch, opno;
static size_t touched_lo[64], touched_hi[64];
static long stats[NKINDS][NSHAPES][NCOMPS];
static long conflict_flushes, early_completions;

static unsigned char *my_shadow(int t) { return (unsigned char *)shadow[me] + (size_t)t * SLICE; }
static char *remote(int t, size_t off) { return (char *)mem[t] + (size_t)me * SLICE + off; }
static unsigned char *marks(int t) { return flags + (size_t)t * SLICE; }

static void touch(int t, size_t lo, size_t hi) {
  if (lo < touched_lo[t]) touched_lo[t] = lo;
  if (hi > touched_hi[t]) touched_hi[t] = hi;
}

/* Mostly small, sometimes up to the limit. */
static size_t rand_elems(size_t max) {
  uint64_t k = mp_rng_below(&rng, 100);
  size_t cap = k < 60 ? 8 : k < 90 ? 64 : max;
  if (cap > max) cap = max;
  return 1 + (size_t)mp_rng_below(&rng, cap);
}

/* ------------------------------------------------------------ layouts */

static int64_t extent_of(const int *stride, const int *count, int levels) {
  int64_t e = count[0];
  for (int i = 1; i <= levels; i++) e += (int64_t)stride[i - 1] * (count[i] - 1);
  return e;
}

/* Strides for one side: each at least the extent of one block of the level
 * below (no overlapping pieces), plus a random gap of whole elements. */
static void make_strides(int *stride, const int *count, int levels, size_t elem, int gaps) {
  for (int i = 0; i < levels; i++) {
    int64_t below = extent_of(stride, count, i);
    stride[i] = (int)(below + (int64_t)elem * (int64_t)mp_rng_below(&rng, (uint64_t)gaps + 1));
  }
}

static void gen_strided(op_t *o, const area_t *a) {
  const size_t e = a->elem, cap = a->size / e;
  for (int attempt = 0;; attempt++) {
    o->levels = 1 + (int)mp_rng_below(&rng, 3);
    size_t elems = rand_elems(attempt < 4 ? cap / 4 : 4);
    o->count[0] = (int)(elems * e);
    for (int i = 1; i <= o->levels; i++) o->count[i] = 1 + (int)mp_rng_below(&rng, 4);
    make_strides(o->rstride, o->count, o->levels, e, attempt < 4 ? 16 : 1);
    if ((size_t)extent_of(o->rstride, o->count, o->levels) <= a->size) break;
    if (attempt > 8) { /* cannot happen with the sizes above; stay safe */
      o->levels = 1;
      o->count[0] = (int)e;
      o->count[1] = 1;
      o->rstride[0] = (int)e;
      break;
    }
  }
  make_strides(o->lstride, o->count, o->levels, e, 4);
  size_t rext = (size_t)extent_of(o->rstride, o->count, o->levels);
  size_t roff = a->off + e * mp_rng_below(&rng, (a->size - rext) / e + 1);
  o->lsize = (size_t)extent_of(o->lstride, o->count, o->levels);
  /* The pieces in ARMCI's order, level 1 fastest. */
  int idx[4] = {0, 0, 0, 0};
  o->npieces = 0;
  for (;;) {
    size_t r = roff, l = 0;
    for (int i = 1; i <= o->levels; i++) {
      r += (size_t)idx[i] * (size_t)o->rstride[i - 1];
      l += (size_t)idx[i] * (size_t)o->lstride[i - 1];
    }
    o->p[o->npieces++] = (piece_t){r, l, (size_t)o->count[0]};
    int i = 1;
    for (; i <= o->levels; i++) {
      if (++idx[i] < o->count[i]) break;
      idx[i] = 0;
    }
    if (i > o->levels) break;
  }
}

static int overlaps(const op_t *o, size_t lo, size_t len) {
  for (int i = 0; i < o->npieces; i++)
    if (lo < o->p[i].roff + o->p[i].len && o->p[i].roff < lo + len) return 1;
  return 0;
}

/* Lists of segments of one size each, disjoint on the remote side (one
 * call's pieces are not ordered among themselves), with gaps between them
 * on the local side. */
static void gen_vector(op_t *o, const area_t *a) {
  const size_t e = a->elem;
  o->nlists = 1 + (int)mp_rng_below(&rng, MAXLISTS);
  o->npieces = 0;
  size_t lcur = 0;
  for (int li = 0; li < o->nlists; li++) {
    size_t bytes = e * rand_elems(a->size / e / 16);
    int want = 1 + (int)mp_rng_below(&rng, MAXSEGS), got = 0;
    for (int s = 0; s < want; s++) {
      for (int attempt = 0; attempt < 4; attempt++) {
        size_t roff = a->off + e * mp_rng_below(&rng, (a->size - bytes) / e + 1);
        if (overlaps(o, roff, bytes)) continue;
        lcur += e * mp_rng_below(&rng, 3);
        o->p[o->npieces++] = (piece_t){roff, lcur, bytes};
        lcur += bytes;
        got++;
        break;
      }
    }
    if (got == 0) { /* every place was taken: this list is empty */
      o->iov[li].bytes = (int)bytes;
      o->iov[li].ptr_array_len = 0;
    } else {
      o->iov[li].bytes = (int)bytes;
      o->iov[li].ptr_array_len = got;
    }
  }
  o->lsize = lcur;
}

static void gen_contig(op_t *o, const area_t *a) {
  size_t len = a->elem * rand_elems(a->size / a->elem);
  size_t roff = a->off + a->elem * mp_rng_below(&rng, (a->size - len) / a->elem + 1);
  o->npieces = 1;
  o->p[0] = (piece_t){roff, 0, len};
  o->lsize = len;
}

/* --------------------------------------------------------- local memory */

static unsigned char *arena_alloc(size_t bytes) {
  int which = (int)mp_rng_below(&rng, 2); /* registered or plain heap */
  size_t need = (bytes + 2 * CANARY + 15) & ~(size_t)15;
  if (arena_used[which] + need > ARENA) return NULL;
  unsigned char *at = arena[which] + arena_used[which];
  arena_used[which] += need;
  return at + CANARY;
}

/* A value of the area's type as the shadow and the library compute it: small
 * integers, so float and double arithmetic stays exact in any order. */
static void fill_source(op_t *o, const area_t *a) {
  memset(o->local - CANARY, 0xAB, o->lsize + 2 * CANARY); /* gaps: bytes nobody should move */
  for (int i = 0; i < o->npieces; i++) {
    unsigned char *at = o->local + o->p[i].loff;
    size_t n = o->p[i].len / a->elem;
    long lo = o->kind == K_ACC ? -20 : -50, hi = -lo;
    for (size_t j = 0; j < n; j++) {
      switch (a->type) {
        case -1: at[j] = (unsigned char)mp_rng_next(&rng); break;
        case ARMCI_ACC_INT: ((int *)at)[j] = (int)mp_rng_range(&rng, lo, hi); break;
        case ARMCI_ACC_LNG:
          /* Upper bits too, so a long handled as an int shows. */
          ((long *)at)[j] = mp_rng_range(&rng, lo, hi) * (o->kind == K_ACC ? 1 : (1L << 36));
          break;
        case ARMCI_ACC_FLT: ((float *)at)[j] = (float)mp_rng_range(&rng, lo, hi); break;
        case ARMCI_ACC_DBL: ((double *)at)[j] = (double)mp_rng_range(&rng, lo, hi); break;
      }
    }
  }
}

static void pick_scale(op_t *o, const area_t *a) {
  static const int iscales[] = {1, -1, 2, 3};
  static const long lscales[] = {1, -1, 3, -2};
  static const double fscales[] = {1.0, -1.0, 2.0, 0.5};
  int k = (int)mp_rng_below(&rng, 4);
  switch (a->type) {
    case ARMCI_ACC_INT: o->scale.i = iscales[k]; break;
    case ARMCI_ACC_LNG: o->scale.l = lscales[k]; break;
    case ARMCI_ACC_FLT: o->scale.f = (float)fscales[k]; break;
    case ARMCI_ACC_DBL: o->scale.d = fscales[k]; break;
  }
}

/* Element j of the shadow += scale * element j of the source, for one
 * type; through memcpy, as neither buffer need be aligned for it. */
#define SHADOW_ACC(T, scale)                  \
  do {                                        \
    T d_, s_;                                 \
    memcpy(&d_, dst + sizeof(T) * j, sizeof(T)); \
    memcpy(&s_, src + sizeof(T) * j, sizeof(T)); \
    d_ += (scale) * s_;                       \
    memcpy(dst + sizeof(T) * j, &d_, sizeof(T)); \
  } while (0)

static void apply_to_shadow(const op_t *o) {
  const area_t *a = &areas[o->area];
  unsigned char *sh = my_shadow(o->t);
  for (int i = 0; i < o->npieces; i++) {
    unsigned char *dst = sh + o->p[i].roff;
    const unsigned char *src = o->local + o->p[i].loff;
    size_t n = o->p[i].len / a->elem;
    if (o->kind == K_PUT) {
      memcpy(dst, src, o->p[i].len);
      continue;
    }
    for (size_t j = 0; j < n; j++) {
      switch (a->type) {
        case ARMCI_ACC_INT: SHADOW_ACC(int, o->scale.i); break;
        case ARMCI_ACC_LNG: SHADOW_ACC(long, o->scale.l); break;
        case ARMCI_ACC_FLT: SHADOW_ACC(float, o->scale.f); break;
        case ARMCI_ACC_DBL: SHADOW_ACC(double, o->scale.d); break;
      }
    }
  }
}

/* A finished Get: the pieces hold the shadow, every other byte of the
 * region and its guards is still the guard byte. */
static void check_get(const op_t *o) {
  size_t n = o->lsize + 2 * CANARY;
  memset(expect, GUARD_BYTE, n);
  for (int i = 0; i < o->npieces; i++)
    memcpy(expect + CANARY + o->p[i].loff, my_shadow(o->t) + o->p[i].roff, o->p[i].len);
  snprintf(mp_where, sizeof mp_where, "%s", o->desc);
  MP_CHECK_BYTES(expect, o->local - CANARY, n, "completed Get (region with guards) vs shadow");
}

/* ---------------------------------------------------------- completion */

static void locally_done(op_t *o) {
  if (o->done) return;
  o->done = 1;
  if (o->kind == K_GET)
    check_get(o);
  else /* the library must not read the source after local completion */
    memset(o->local, SCRIBBLE, o->lsize);
}

static void wait_explicit(op_t *o) {
  if (mp_rng_below(&rng, 2)) {
    snprintf(mp_where, sizeof mp_where, "ARMCI_Wait of %s", o->desc);
    MP_CHECK_INT(0, ARMCI_Wait(&o->h));
  } else {
    snprintf(mp_where, sizeof mp_where, "ARMCI_Test loop of %s", o->desc);
    int rc;
    while ((rc = ARMCI_Test(&o->h)) == 1) {
    }
    MP_CHECK_INT(0, rc);
    MP_CHECK_INT(0, ARMCI_Test(&o->h)); /* stays complete */
  }
  locally_done(o);
}

static void wait_aggregate(void) {
  if (!agg_used) return;
  snprintf(mp_where, sizeof mp_where, "seed %#" PRIx64 " epoch %ld: ARMCI_Wait of the aggregate handle", seed,
           epoch);
  MP_CHECK_INT(0, ARMCI_Wait(&agg));
  for (int i = 0; i < MAXPEND; i++)
    if (ops[i].used && ops[i].comp == C_AGGREGATE) locally_done(&ops[i]);
  ARMCI_UNSET_AGGREGATE_HANDLE(&agg);
  ARMCI_INIT_HANDLE(&agg);
  ARMCI_SET_AGGREGATE_HANDLE(&agg);
  agg_used = 0;
}

/* t < 0: implicit operations to every target. */
static void implicit_done(int t) {
  for (int i = 0; i < MAXPEND; i++)
    if (ops[i].used && ops[i].comp == C_IMPLICIT && (t < 0 || ops[i].t == t)) locally_done(&ops[i]);
}

static void retire(int t) {
  for (int i = 0; i < MAXPEND; i++)
    if (ops[i].used && ops[i].t == t) {
      locally_done(&ops[i]);
      ops[i].used = 0;
      npending--;
    }
  memset(marks(t), 0, SLICE);
  if (npending == 0) arena_used[0] = arena_used[1] = 0;
}

/* Everything outstanding to t complete, locally and at t. */
static void complete_target(int t) {
  for (int i = 0; i < MAXPEND; i++)
    if (ops[i].used && ops[i].t == t && !ops[i].done) {
      if (ops[i].comp == C_EXPLICIT) wait_explicit(&ops[i]);
      if (ops[i].comp == C_AGGREGATE) wait_aggregate();
    }
  snprintf(mp_where, sizeof mp_where, "seed %#" PRIx64 " epoch %ld: completing rank %d", seed, epoch, t);
  switch (mp_rng_below(&rng, 3)) {
    case 0: MP_CHECK_INT(0, ARMCI_WaitProc(t)); break;
    case 1:
      MP_CHECK_INT(0, ARMCI_WaitAll());
      implicit_done(-1);
      break;
    default: break; /* the fence alone finishes implicit operations */
  }
  ARMCI_Fence(t);
  implicit_done(t);
  retire(t);
}

static void complete_all(void) {
  if (mp_rng_below(&rng, 2)) {
    for (int t = 0; t < np; t++) complete_target(t);
    return;
  }
  for (int i = 0; i < MAXPEND; i++)
    if (ops[i].used && !ops[i].done && ops[i].comp == C_EXPLICIT) wait_explicit(&ops[i]);
  wait_aggregate();
  snprintf(mp_where, sizeof mp_where, "seed %#" PRIx64 " epoch %ld: WaitAll and AllFence", seed, epoch);
  MP_CHECK_INT(0, ARMCI_WaitAll());
  implicit_done(-1);
  ARMCI_AllFence();
  for (int t = 0; t < np; t++) retire(t);
}

/* Some completions in the middle of an epoch, so handles finish in every
 * order and sources are reused while other operations are in flight. */
static void maybe_complete_some(void) {
  uint64_t k = mp_rng_below(&rng, 64);
  if (k < 6) {
    int start = (int)mp_rng_below(&rng, MAXPEND);
    for (int j = 0; j < MAXPEND; j++) {
      op_t *o = &ops[(start + j) % MAXPEND];
      if (o->used && !o->done && o->comp == C_EXPLICIT) {
        wait_explicit(o);
        early_completions++;
        return;
      }
    }
  } else if (k < 8) {
    wait_aggregate();
  } else if (k < 9) {
    int t = (int)mp_rng_below(&rng, (uint64_t)np);
    MP_CHECK_INT(0, ARMCI_WaitProc(t));
    implicit_done(t);
  } else if (k < 10) {
    MP_CHECK_INT(0, ARMCI_WaitAll());
    implicit_done(-1);
  }
}

static int conflicts(const op_t *o) {
  const unsigned char *m = marks(o->t), bad = conflicts_with[o->kind];
  for (int i = 0; i < o->npieces; i++)
    for (size_t b = o->p[i].roff; b < o->p[i].roff + o->p[i].len; b++)
      if (m[b] & bad) return 1;
  return 0;
}

static void mark(const op_t *o) {
  unsigned char *m = marks(o->t), f = o->kind == K_PUT ? F_PUT : o->kind == K_ACC ? F_ACC : F_GET;
  for (int i = 0; i < o->npieces; i++)
    for (size_t b = o->p[i].roff; b < o->p[i].roff + o->p[i].len; b++) m[b] |= f;
}

/* ---------------------------------------------------------------- ops */

static int issue(op_t *o) {
  const area_t *a = &areas[o->area];
  armci_hdl_t *h = o->comp == C_EXPLICIT ? &o->h : o->comp == C_AGGREGATE ? &agg : NULL;
  const int nb = o->comp != C_BLOCKING, t = o->t;
  char *rbase = remote(t, 0);
  unsigned char *l = o->local;
  void *scale = &o->scale;
  if (o->comp == C_EXPLICIT) ARMCI_INIT_HANDLE(&o->h);
  if (o->comp == C_AGGREGATE) agg_used = 1;
  if (o->shape == S_CONTIG) {
    char *r = rbase + o->p[0].roff;
    int n = (int)o->p[0].len;
    switch (o->kind) {
      case K_PUT: return nb ? ARMCI_NbPut(l, r, n, t, h) : ARMCI_Put(l, r, n, t);
      case K_GET: return nb ? ARMCI_NbGet(r, l, n, t, h) : ARMCI_Get(r, l, n, t);
      default: return nb ? ARMCI_NbAcc(a->type, scale, l, r, n, t, h) : ARMCI_Acc(a->type, scale, l, r, n, t);
    }
  }
  if (o->shape == S_STRIDED) {
    char *r = rbase + o->p[0].roff;
    int *ls = o->lstride, *rs = o->rstride, *c = o->count, lv = o->levels;
    switch (o->kind) {
      case K_PUT: return nb ? ARMCI_NbPutS(l, ls, r, rs, c, lv, t, h) : ARMCI_PutS(l, ls, r, rs, c, lv, t);
      case K_GET: return nb ? ARMCI_NbGetS(r, rs, l, ls, c, lv, t, h) : ARMCI_GetS(r, rs, l, ls, c, lv, t);
      default:
        return nb ? ARMCI_NbAccS(a->type, scale, l, ls, r, rs, c, lv, t, h)
                  : ARMCI_AccS(a->type, scale, l, ls, r, rs, c, lv, t);
    }
  }
  int k = 0;
  for (int li = 0; li < o->nlists; li++) {
    o->iov[li].src_ptr_array = &o->src_ptrs[k];
    o->iov[li].dst_ptr_array = &o->dst_ptrs[k];
    for (int s = 0; s < o->iov[li].ptr_array_len; s++, k++) {
      void *lp = l + o->p[k].loff, *rp = rbase + o->p[k].roff;
      o->src_ptrs[k] = o->kind == K_GET ? rp : lp;
      o->dst_ptrs[k] = o->kind == K_GET ? lp : rp;
    }
  }
  switch (o->kind) {
    case K_PUT: return nb ? ARMCI_NbPutV(o->iov, o->nlists, t, h) : ARMCI_PutV(o->iov, o->nlists, t);
    case K_GET: return nb ? ARMCI_NbGetV(o->iov, o->nlists, t, h) : ARMCI_GetV(o->iov, o->nlists, t);
    default:
      return nb ? ARMCI_NbAccV(a->type, scale, o->iov, o->nlists, t, h)
                : ARMCI_AccV(a->type, scale, o->iov, o->nlists, t);
  }
}

static void describe(op_t *o) {
  const area_t *a = &areas[o->area];
  int n = snprintf(o->desc, sizeof o->desc, "seed %#" PRIx64 " epoch %ld op %ld: %s%s%s", seed, epoch, opno,
                   o->comp == C_BLOCKING ? "" : "Nb", kind_name[o->kind], shape_name[o->shape]);
  if (o->kind == K_ACC) {
    double s = a->type == ARMCI_ACC_INT ? o->scale.i
               : a->type == ARMCI_ACC_LNG ? (double)o->scale.l
               : a->type == ARMCI_ACC_FLT ? o->scale.f
                                          : o->scale.d;
    n += snprintf(o->desc + n, sizeof o->desc - (size_t)n, "(%s, scale %g)", a->name, s);
  }
  if (o->shape == S_STRIDED)
    n += snprintf(o->desc + n, sizeof o->desc - (size_t)n, " levels %d count [%d %d %d %d] rstride [%d %d %d]",
                  o->levels, o->count[0], o->count[1], o->count[2], o->count[3], o->rstride[0], o->rstride[1],
                  o->rstride[2]);
  else if (o->shape == S_VECTOR)
    n += snprintf(o->desc + n, sizeof o->desc - (size_t)n, " %d lists, %d segments", o->nlists, o->npieces);
  snprintf(o->desc + n, sizeof o->desc - (size_t)n, " %s area, rank %d, slice offset %zu, %zu bytes first, %s",
           a->name, o->t, o->p[0].roff, o->p[0].len, comp_name[o->comp]);
}

static op_t *free_slot(void) {
  if (npending == MAXPEND) complete_all();
  for (int i = 0; i < MAXPEND; i++)
    if (!ops[i].used) return &ops[i];
  return NULL; /* not reached */
}

/* Reads back [off, off + len) of this origin's slice on t: location
 * consistency, right after a blocking Put or Acc. */
static void read_back(int t, size_t off, size_t len, const char *why) {
  memset(scratch, GUARD_BYTE, len);
  MP_CHECK_INT(0, ARMCI_Get(remote(t, off), scratch, (int)len, t));
  MP_CHECK_BYTES(my_shadow(t) + off, scratch, len, why);
}

static void random_op(void) {
  op_t *o = free_slot();
  memset(o, 0, offsetof(op_t, desc));
  o->t = (int)mp_rng_below(&rng, (uint64_t)np);
  uint64_t k = mp_rng_below(&rng, 100);
  o->kind = k < 35 ? K_PUT : k < 60 ? K_GET : K_ACC;
  o->area = o->kind == K_ACC ? 1 + (int)mp_rng_below(&rng, NAREAS - 1) : (int)mp_rng_below(&rng, NAREAS);
  k = mp_rng_below(&rng, 100);
  o->shape = k < 40 ? S_CONTIG : k < 75 ? S_STRIDED : S_VECTOR;
  o->comp = (int)mp_rng_below(&rng, NCOMPS);
  const area_t *a = &areas[o->area];
  if (o->shape == S_CONTIG)
    gen_contig(o, a);
  else if (o->shape == S_STRIDED)
    gen_strided(o, a);
  else
    gen_vector(o, a);
  if (o->npieces == 0) return; /* a vector with nothing in it */
  if (o->kind == K_ACC) pick_scale(o, a);
  describe(o);
  /* Before the local region is taken: completing a target may empty the
   * arenas. */
  if (conflicts(o)) {
    conflict_flushes++;
    complete_target(o->t);
  }
  o->local = arena_alloc(o->lsize);
  if (o->local == NULL) {
    complete_all();
    o->local = arena_alloc(o->lsize);
  }
  if (o->kind == K_GET)
    memset(o->local - CANARY, GUARD_BYTE, o->lsize + 2 * CANARY);
  else
    fill_source(o, a);
  stats[o->kind][o->shape][o->comp]++;
  for (int i = 0; i < o->npieces; i++) touch(o->t, o->p[i].roff, o->p[i].roff + o->p[i].len);
  snprintf(mp_where, sizeof mp_where, "%s", o->desc);
  MP_CHECK_INT(0, issue(o));
  if (o->kind != K_GET) apply_to_shadow(o);
  if (o->comp == C_BLOCKING) {
    o->done = 1;
    if (o->kind == K_GET) check_get(o);
    /* Location consistency: a blocking Get of what a blocking Put or Acc just
     * wrote sees it, with no fence (unless a nonblocking op still races). */
    if (o->kind != K_GET && mp_rng_below(&rng, 4) == 0) {
      op_t probe = *o;
      probe.kind = K_GET;
      if (!conflicts(&probe)) {
        snprintf(mp_where, sizeof mp_where, "Get right after %s", o->desc);
        for (int i = 0; i < o->npieces; i++) read_back(o->t, o->p[i].roff, o->p[i].len, "Get right after it, no fence");
      }
    }
    return; /* its slot stays free */
  }
  o->used = 1;
  npending++;
  mark(o);
}

/* The epoch's end: everything complete, then this origin's touched bytes on
 * every target read back in one Get each. */
static void end_epoch(void) {
  complete_all();
  for (int t = 0; t < np; t++) {
    if (touched_hi[t] <= touched_lo[t]) continue;
    snprintf(mp_where, sizeof mp_where, "seed %#" PRIx64 " end of epoch %ld: slice offsets %zu..%zu on rank %d",
             seed, epoch, touched_lo[t], touched_hi[t], t);
    read_back(t, touched_lo[t], touched_hi[t] - touched_lo[t], "slice after the epoch vs shadow");
    touched_lo[t] = SLICE;
    touched_hi[t] = 0;
  }
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  me = mp_me;
  np = mp_np;
  MP_CHECK(np <= 64, "at most 64 ranks (%d)", np);
  long total = argc > 1 ? strtol(argv[1], NULL, 0) : mp_env_int("MP_RANDOM_OPS", 4000);
  MP_CHECK(total > 0, "OPS must be positive (%ld)", total);
  seed = mp_seed();
  mp_rng_init(&rng, seed, me, 0);

  mem = malloc(sizeof(void *) * (size_t)np);
  shadow = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(mem, (armci_size_t)SLICE * np));
  MP_CHECK_INT(0, ARMCI_Malloc(shadow, (armci_size_t)SLICE * np));
  memset(mem[me], 0, (size_t)SLICE * (size_t)np);
  memset(shadow[me], 0, (size_t)SLICE * (size_t)np);
  flags = calloc((size_t)np, SLICE);
  arena[0] = ARMCI_Malloc_local(ARENA);
  arena[1] = malloc(ARENA);
  scratch = malloc(SLICE + 2 * CANARY);
  expect = malloc(ARENA);
  ops = calloc(MAXPEND, sizeof(op_t));
  MP_CHECK(flags && arena[0] && arena[1] && scratch && expect && ops, "out of memory");
  for (int t = 0; t < np; t++) touched_lo[t] = SLICE;
  ARMCI_INIT_HANDLE(&agg);
  ARMCI_SET_AGGREGATE_HANDLE(&agg);
  ARMCI_Barrier();

  double t0 = mp_now();
  for (opno = 0; opno < total;) {
    long n = 1 + (long)mp_rng_below(&rng, 256);
    for (long i = 0; i < n && opno < total; i++, opno++) {
      random_op();
      maybe_complete_some();
    }
    end_epoch();
    epoch++;
  }
  double secs = mp_now() - t0;
  ARMCI_UNSET_AGGREGATE_HANDLE(&agg);
  ARMCI_Barrier();

  /* Each target gathers every origin's shadow of its memory and compares it
   * with what it holds. */
  unsigned char *tmp = malloc(SLICE);
  for (int o = 0; o < np; o++) {
    mp_set_where("seed %#" PRIx64 " final: slice of rank %d in the memory of rank %d", seed, o, me);
    MP_CHECK_INT(0, ARMCI_Get((char *)shadow[o] + (size_t)me * SLICE, tmp, SLICE, o));
    MP_CHECK_BYTES(tmp, (char *)mem[me] + (size_t)o * SLICE, SLICE, "target memory vs origin's shadow");
  }
  mp_where[0] = 0;
  ARMCI_Barrier();
  if (me == 0) {
    long nb = 0, by_comp[NCOMPS] = {0}, by_shape[NSHAPES] = {0}, by_kind[NKINDS] = {0};
    for (int a = 0; a < NKINDS; a++)
      for (int b = 0; b < NSHAPES; b++)
        for (int c = 0; c < NCOMPS; c++) {
          nb += stats[a][b][c];
          by_kind[a] += stats[a][b][c];
          by_shape[b] += stats[a][b][c];
          by_comp[c] += stats[a][b][c];
        }
    printf("mp_random: rank 0: %ld ops in %ld epochs, %.2f s (seed %#" PRIx64 "): put %ld get %ld acc %ld; "
           "contiguous %ld strided %ld vector %ld; blocking %ld explicit %ld implicit %ld aggregate %ld; "
           "%ld conflict flushes, %ld early waits\n",
           nb, epoch, secs, seed, by_kind[K_PUT], by_kind[K_GET], by_kind[K_ACC], by_shape[S_CONTIG],
           by_shape[S_STRIDED], by_shape[S_VECTOR], by_comp[C_BLOCKING], by_comp[C_EXPLICIT], by_comp[C_IMPLICIT],
           by_comp[C_AGGREGATE], conflict_flushes, early_completions);
    fflush(stdout);
  }

  free(tmp);
  free(ops);
  free(expect);
  free(scratch);
  free(arena[1]);
  MP_CHECK_INT(0, ARMCI_Free_local(arena[0]));
  free(flags);
  MP_CHECK_INT(0, ARMCI_Free(shadow[me]));
  MP_CHECK_INT(0, ARMCI_Free(mem[me]));
  free(mem);
  free(shadow);
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass("mp_random", me);
  return 0;
}
