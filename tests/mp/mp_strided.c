/*
 * mp_strided: strided (ARMCI_PutS/GetS/AccS and the Nb forms) and vector
 * (ARMCI_PutV/GetV/AccV and the Nb forms) transfers from every rank to every
 * rank, self included, for 0..4 stride levels with odd piece sizes (1 byte,
 * not multiples of 8) and different strides on each side; blocking, Nb with
 * explicit handles and Nb with implicit handles. Every result is checked
 * byte by byte (Put/Get) or element by element (Acc) against a shadow copy
 * that the test computes with its own loops. Also armci_write_strided /
 * armci_read_strided round trips, and layouts larger than a message, a pool
 * buffer and an SGE list (NbPutS, NbGetS, ARMCI_PutS_flag).
 */
#include "mp_common.h"

#include <sched.h>


enum { SLOT = 1024, MAXL = 8 };

typedef struct {
  int levels;
  int count[MAXL + 1];
  int ss[MAXL]; /* source strides */
  int ds[MAXL]; /* destination strides */
} layout_t;

/* Byte layouts for Put/Get: 1-byte pieces, odd sizes, gaps on both sides. */
static const layout_t byte_layouts[] = {
    {0, {13}, {0}, {0}},
    {1, {1, 7}, {3}, {2}},
    {2, {5, 3, 4}, {7, 23}, {6, 20}},
    {3, {12, 2, 3, 2}, {13, 30, 95}, {16, 35, 110}},
    {4, {11, 2, 2, 2, 2}, {11, 25, 60, 130}, {32, 70, 150, 310}},
};
/* Acc layouts: whole 8-byte elements at 8-byte aligned offsets. */
static const layout_t acc_layouts[] = {
    {0, {24}, {0}, {0}},
    {1, {8, 5}, {16}, {24}},
    {2, {16, 3, 2}, {24, 80}, {32, 104}},
    {3, {8, 2, 2, 3}, {8, 16, 40}, {16, 40, 96}},
    {4, {24, 2, 2, 2, 2}, {24, 48, 96, 192}, {32, 64, 136, 280}},
};
#define NBYTE ((int)(sizeof byte_layouts / sizeof byte_layouts[0]))
#define NACC ((int)(sizeof acc_layouts / sizeof acc_layouts[0]))

/* The test's own enumeration of pieces (independent of the library's). */
static long npieces(const layout_t *L) {
  long n = 1;
  for (int i = 1; i <= L->levels; i++) n *= L->count[i];
  return n;
}
static void piece(const layout_t *L, long k, long *so, long *dof) {
  long s = 0, d = 0;
  for (int i = 1; i <= L->levels; i++) {
    long idx = k % L->count[i];
    k /= L->count[i];
    s += idx * L->ss[i - 1];
    d += idx * L->ds[i - 1];
  }
  *so = s;
  *dof = d;
}
static long extent(const layout_t *L, const int *stride) {
  long e = L->count[0];
  for (int i = 1; i <= L->levels; i++) e += (long)stride[i - 1] * (L->count[i] - 1);
  return e;
}

enum mode { BLOCKING, NB_HANDLE, NB_IMPLICIT, NMODES };
static const char *mode_name[] = {"blocking", "nb-handle", "nb-implicit"};
enum kind { STRIDED, VECTOR };
static const char *kind_name[] = {"strided", "vector"};

/* Vector form of a layout: the pieces split over two segment lists. */
typedef struct {
  armci_giov_t iov[2];
  void *ptrs[4][64];
  int len;
} vec_t;
static void make_vec(vec_t *v, const layout_t *L, char *src, char *dst) {
  long n = npieces(L);
  MP_CHECK(n <= 128, "too many pieces %ld", n);
  long half = (n + 1) / 2;
  v->len = n > 1 ? 2 : 1;
  for (int g = 0; g < v->len; g++) {
    long first = g == 0 ? 0 : half, last = g == 0 ? (n > 1 ? half : n) : n;
    for (long k = first; k < last; k++) {
      long so, dof;
      piece(L, k, &so, &dof);
      v->ptrs[2 * g][k - first] = src + so;
      v->ptrs[2 * g + 1][k - first] = dst + dof;
    }
    v->iov[g].src_ptr_array = v->ptrs[2 * g];
    v->iov[g].dst_ptr_array = v->ptrs[2 * g + 1];
    v->iov[g].bytes = L->count[0];
    v->iov[g].ptr_array_len = (int)(last - first);
  }
}

enum op { PUT, GET, ACC };

/* Starts one transfer of layout L between s and d on rank t, of the kind and
 * in the mode asked (type and scale for ACC only); the vector form builds its
 * segment lists in v, which must live until the transfer completes. */
static void issue(enum op op, enum kind kd, enum mode m, const layout_t *L, char *s, char *d, int t, armci_hdl_t *h,
                  vec_t *v, int type, void *scale) {
  int *cnt = (int *)L->count, *ss = (int *)L->ss, *ds = (int *)L->ds, lv = L->levels;
  ARMCI_INIT_HANDLE(h);
  armci_hdl_t *hp = m == NB_HANDLE ? h : NULL;
  const int blocking = m == BLOCKING;
  int rc = -1;
  if (kd == VECTOR) make_vec(v, L, s, d);
  switch (op) {
  case PUT:
    if (kd == VECTOR) rc = blocking ? ARMCI_PutV(v->iov, v->len, t) : ARMCI_NbPutV(v->iov, v->len, t, hp);
    else rc = blocking ? ARMCI_PutS(s, ss, d, ds, cnt, lv, t) : ARMCI_NbPutS(s, ss, d, ds, cnt, lv, t, hp);
    break;
  case GET:
    if (kd == VECTOR) rc = blocking ? ARMCI_GetV(v->iov, v->len, t) : ARMCI_NbGetV(v->iov, v->len, t, hp);
    else rc = blocking ? ARMCI_GetS(s, ss, d, ds, cnt, lv, t) : ARMCI_NbGetS(s, ss, d, ds, cnt, lv, t, hp);
    break;
  case ACC:
    if (kd == VECTOR)
      rc = blocking ? ARMCI_AccV(type, scale, v->iov, v->len, t) : ARMCI_NbAccV(type, scale, v->iov, v->len, t, hp);
    else
      rc = blocking ? ARMCI_AccS(type, scale, s, ss, d, ds, cnt, lv, t)
                    : ARMCI_NbAccS(type, scale, s, ss, d, ds, cnt, lv, t, hp);
    break;
  }
  MP_CHECK_INT(0, rc);
}

static void complete(enum mode m, armci_hdl_t *h) {
  if (m == NB_HANDLE) {
    for (int t = 0; t < mp_np; t++) ARMCI_Wait(&h[t]);
  } else if (m == NB_IMPLICIT) {
    ARMCI_WaitAll();
  }
}

/* ------------------------------------------------------------- Put */

static void test_put(char **base, enum kind kd, enum mode m, const layout_t *L, int li) {
  const size_t off = 3; /* odd start inside each origin's slot */
  memset(base[mp_me], 0, (size_t)SLOT * (size_t)mp_np);
  ARMCI_Barrier();
  long sext = extent(L, L->ss);
  char *src = malloc((size_t)sext * (size_t)mp_np);
  armci_hdl_t h[mp_np];
  vec_t *vec = malloc(sizeof *vec * (size_t)mp_np);
  for (int k = 0; k < mp_np; k++) {
    int t = (mp_me + k) % mp_np;
    char *s = src + (size_t)t * (size_t)sext;
    mp_fill_pattern(s, (size_t)sext, mp_me, t, (size_t)li * 1000);
    char *d = base[t] + (size_t)mp_me * SLOT + off;
    mp_set_where("%s Put %s layout %d to rank %d", kind_name[kd], mode_name[m], li, t);
    issue(PUT, kd, m, L, s, d, t, &h[t], &vec[t], 0, NULL);
    /* A blocking Put must not read its source after returning. */
    if (m == BLOCKING) memset(s, 0xEE, (size_t)sext);
  }
  complete(m, h);
  ARMCI_AllFence();
  ARMCI_Barrier();
  unsigned char *expect = malloc(SLOT);
  unsigned char *pat = malloc((size_t)sext);
  for (int o = 0; o < mp_np; o++) {
    memset(expect, 0, SLOT);
    mp_fill_pattern(pat, (size_t)sext, o, mp_me, (size_t)li * 1000);
    for (long k = 0; k < npieces(L); k++) {
      long so, dof;
      piece(L, k, &so, &dof);
      memcpy(expect + off + dof, pat + so, (size_t)L->count[0]);
    }
    mp_set_where("%s Put %s layout %d: memory of rank %d from rank %d", kind_name[kd], mode_name[m], li, mp_me, o);
    MP_CHECK_BYTES(expect, base[mp_me] + (size_t)o * SLOT, SLOT, "target slot after strided Put");
  }
  ARMCI_Barrier();
  free(expect);
  free(pat);
  free(src);
  free(vec);
}

/* ------------------------------------------------------------- Get */

static void test_get(char **base, enum kind kd, enum mode m, const layout_t *L, int li) {
  const size_t off = 5;
  mp_fill_pattern(base[mp_me], (size_t)SLOT * (size_t)mp_np, mp_me, mp_me, 77);
  ARMCI_Barrier();
  long dext = extent(L, L->ds);
  char *dst = malloc((size_t)dext * (size_t)mp_np);
  memset(dst, 0xEE, (size_t)dext * (size_t)mp_np);
  armci_hdl_t h[mp_np];
  vec_t *vec = malloc(sizeof *vec * (size_t)mp_np);
  for (int k = 0; k < mp_np; k++) {
    int t = (mp_me + k) % mp_np;
    char *s = base[t] + (size_t)mp_me * SLOT + off;
    char *d = dst + (size_t)t * (size_t)dext;
    mp_set_where("%s Get %s layout %d from rank %d", kind_name[kd], mode_name[m], li, t);
    issue(GET, kd, m, L, s, d, t, &h[t], &vec[t], 0, NULL);
  }
  complete(m, h);
  unsigned char *expect = malloc((size_t)dext);
  unsigned char *remote = malloc((size_t)SLOT * (size_t)mp_np);
  for (int t = 0; t < mp_np; t++) {
    mp_fill_pattern(remote, (size_t)SLOT * (size_t)mp_np, t, t, 77);
    memset(expect, 0xEE, (size_t)dext);
    for (long k = 0; k < npieces(L); k++) {
      long so, dof;
      piece(L, k, &so, &dof);
      memcpy(expect + dof, remote + (size_t)mp_me * SLOT + off + so, (size_t)L->count[0]);
    }
    mp_set_where("%s Get %s layout %d from rank %d", kind_name[kd], mode_name[m], li, t);
    MP_CHECK_BYTES(expect, dst + (size_t)t * (size_t)dext, dext, "local buffer after strided Get");
  }
  ARMCI_Barrier();
  free(expect);
  free(remote);
  free(dst);
  free(vec);
}

/* ------------------------------------------------------------- Acc */

/* Every rank accumulates into the same place at each target (slot 0), so
 * per-element atomicity matters. Values are small integers: exact. */
static double src_value(int origin, long element) { return (double)(origin + 1) + (double)(element % 7); }
static double init_value(int target, long element) { return (double)(target * 100) + (double)(element % 13); }

static void test_acc(char **base, enum kind kd, enum mode m, const layout_t *L, int li, int dbl) {
  const size_t es = dbl ? sizeof(double) : sizeof(int);
  const int type = dbl ? ARMCI_ACC_DBL : ARMCI_ACC_INT;
  const size_t off = 8;
  const long nel = SLOT / (long)es;
  for (long e = 0; e < nel; e++) {
    if (dbl) ((double *)base[mp_me])[e] = init_value(mp_me, e);
    else ((int *)base[mp_me])[e] = (int)init_value(mp_me, e);
  }
  ARMCI_Barrier();
  long sext = extent(L, L->ss);
  char *src = malloc((size_t)sext);
  for (long e = 0; e < sext / (long)es; e++) {
    if (dbl) ((double *)src)[e] = src_value(mp_me, e);
    else ((int *)src)[e] = (int)src_value(mp_me, e);
  }
  int iscale = 2;
  double dscale = 0.5;
  void *scale = dbl ? (void *)&dscale : (void *)&iscale;
  armci_hdl_t h[mp_np];
  vec_t *vec = malloc(sizeof *vec * (size_t)mp_np);
  for (int k = 0; k < mp_np; k++) {
    int t = (mp_me + k) % mp_np;
    char *d = base[t] + off;
    mp_set_where("%s Acc(%s) %s layout %d to rank %d", kind_name[kd], dbl ? "dbl" : "int", mode_name[m], li, t);
    issue(ACC, kd, m, L, src, d, t, &h[t], &vec[t], type, scale);
  }
  complete(m, h);
  ARMCI_AllFence();
  ARMCI_Barrier();
  double *expect = malloc(sizeof(double) * (size_t)nel);
  for (long e = 0; e < nel; e++) expect[e] = init_value(mp_me, e);
  for (int o = 0; o < mp_np; o++)
    for (long k = 0; k < npieces(L); k++) {
      long so, dof;
      piece(L, k, &so, &dof);
      for (long b = 0; b < L->count[0]; b += (long)es) {
        long de = ((long)off + dof + b) / (long)es, se = (so + b) / (long)es;
        expect[de] += (dbl ? dscale : (double)iscale) * src_value(o, se);
      }
    }
  for (long e = 0; e < nel; e++) {
    mp_set_where("%s Acc(%s) %s layout %d: rank %d element %ld", kind_name[kd], dbl ? "dbl" : "int",
                 mode_name[m], li, mp_me, e);
    if (dbl) MP_CHECK_DBL(expect[e], ((double *)base[mp_me])[e]);
    else MP_CHECK_INT((long long)expect[e], ((int *)base[mp_me])[e]);
  }
  ARMCI_Barrier();
  free(expect);
  free(src);
  free(vec);
}

/* ------------------------------------------------------------- pack */

static void test_pack(void) {
  for (int li = 0; li < NBYTE; li++) {
    const layout_t *L = &byte_layouts[li];
    long ext = extent(L, L->ds), n = npieces(L), total = n * L->count[0];
    unsigned char *strided = malloc((size_t)ext), *buf = malloc((size_t)total + 1), *expect = malloc((size_t)ext);
    mp_fill_pattern(strided, (size_t)ext, mp_me, li, 0);
    memset(buf, 0xEE, (size_t)total + 1);
    armci_write_strided(strided, L->levels, (int *)L->ds, (int *)L->count, (char *)buf);
    mp_set_where("armci_write_strided layout %d", li);
    for (long k = 0; k < n; k++) {
      long so, dof;
      piece(L, k, &so, &dof);
      MP_CHECK_BYTES(strided + dof, buf + k * L->count[0], L->count[0], "packed piece");
    }
    MP_CHECK_INT(0xEE, buf[total]);
    memset(strided, 0x11, (size_t)ext);
    memset(expect, 0x11, (size_t)ext);
    mp_fill_pattern(buf, (size_t)total, li, mp_me, 9);
    for (long k = 0; k < n; k++) {
      long so, dof;
      piece(L, k, &so, &dof);
      memcpy(expect + dof, buf + k * L->count[0], (size_t)L->count[0]);
    }
    armci_read_strided(strided, L->levels, (int *)L->ds, (int *)L->count, (char *)buf);
    mp_set_where("armci_read_strided layout %d", li);
    MP_CHECK_BYTES(expect, strided, ext, "unpacked layout");
    free(strided);
    free(buf);
    free(expect);
  }
}

/* Layouts larger than one vector message, one pool buffer and one SGE
 * list: NbPutS to the next rank, then NbGetS back into another layout, then
 * ARMCI_PutS_flag with the target spinning on the flag only. */
static void test_large(void) {
  static const int shapes[][4] = {/* piece bytes, pieces, remote stride, local stride */
                                  {1500, 100, 1600, 1504},
                                  {12, 4000, 40, 13},
                                  {1, 3000, 3, 1},
                                  {20000, 6, 20480, 20001}};
  const size_t region = 160 * 1024 + 64;
  void **R = mp_alloc_all(region);
  const int next = (mp_me + 1) % mp_np, prev = (mp_me + mp_np - 1) % mp_np;
  for (int si = 0; si < 4; si++) {
    const int piece = shapes[si][0], n = shapes[si][1], rs = shapes[si][2], ls = shapes[si][3];
    const size_t lext = (size_t)ls * (size_t)(n - 1) + (size_t)piece;
    unsigned char *src = malloc(lext), *back = malloc(lext), *expect = malloc(lext);
    mp_fill_pattern(src, lext, mp_me, next, (size_t)si);
    memset(R[mp_me], 0, region);
    int count[2] = {piece, n}, rstride[1] = {rs}, lstride[1] = {ls};
    ARMCI_Barrier();
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    mp_set_where("large NbPutS shape %d to rank %d", si, next);
    MP_CHECK_INT(0, ARMCI_NbPutS(src, lstride, (char *)R[next] + 8, rstride, count, 1, next, &h));
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    ARMCI_Fence(next);
    ARMCI_Barrier();
    /* What prev wrote here, checked against its pattern. */
    unsigned char *theirs = malloc(lext);
    mp_fill_pattern(theirs, lext, prev, mp_me, (size_t)si);
    const unsigned char *mine = (const unsigned char *)R[mp_me] + 8;
    for (int k = 0; k < n; k++) {
      mp_set_where("large NbPutS shape %d from rank %d, piece %d", si, prev, k);
      MP_CHECK_BYTES(theirs + (size_t)k * (size_t)ls, mine + (size_t)k * (size_t)rs, (size_t)piece, "piece");
      if (k + 1 < n)
        for (int g = piece; g < rs; g++) MP_CHECK_INT(0, mine[(size_t)k * (size_t)rs + (size_t)g]);
    }
    /* Get it back from next into a fresh layout; the gaps stay untouched. */
    memset(back, 0x5A, lext);
    memset(expect, 0x5A, lext);
    for (int k = 0; k < n; k++) memcpy(expect + (size_t)k * (size_t)ls, src + (size_t)k * (size_t)ls, (size_t)piece);
    ARMCI_INIT_HANDLE(&h);
    mp_set_where("large NbGetS shape %d from rank %d", si, next);
    MP_CHECK_INT(0, ARMCI_NbGetS((char *)R[next] + 8, rstride, back, lstride, count, 1, next, &h));
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    MP_CHECK_BYTES(expect, back, lext, "strided get of what this rank put");
    ARMCI_Barrier();
    /* PutS_flag: new data, then the flag; the target watches memory only. */
    memset(R[mp_me], 0, region);
    ARMCI_Barrier();
    for (size_t i = 0; i < lext; i++) src[i] ^= 0xA5;
    int *flag_there = (int *)((char *)R[next] + region - 64);
    mp_set_where("ARMCI_PutS_flag shape %d to rank %d", si, next);
    MP_CHECK_INT(0, ARMCI_PutS_flag(src, lstride, (char *)R[next] + 8, rstride, count, 1, flag_there, si + 1, next));
    volatile int *flag_here = (volatile int *)((char *)R[mp_me] + region - 64);
    double deadline = mp_now() + 60;
    while (*flag_here != si + 1) {
      MP_CHECK(mp_now() < deadline, "PutS_flag from rank %d: flag still %d after 60 s", prev, *flag_here);
      sched_yield();
    }
    for (size_t i = 0; i < lext; i++) theirs[i] ^= 0xA5;
    for (int k = 0; k < n; k++) {
      mp_set_where("PutS_flag shape %d from rank %d, piece %d (flag already set)", si, prev, k);
      MP_CHECK_BYTES(theirs + (size_t)k * (size_t)ls, (const unsigned char *)R[mp_me] + 8 + (size_t)k * (size_t)rs,
                     (size_t)piece, "piece");
    }
    ARMCI_Barrier();
    free(theirs);
    free(src);
    free(back);
    free(expect);
  }
  mp_free_all(R);
}

/* Every layout in every kind and mode, in one allocation of a slot per rank. */
static void test_layouts(void) {
  void **base = mp_alloc_all((size_t)SLOT * (size_t)mp_np);
  for (int kd = STRIDED; kd <= VECTOR; kd++)
    for (int m = 0; m < NMODES; m++) {
      for (int li = 0; li < NBYTE; li++) {
        test_put((char **)base, kd, m, &byte_layouts[li], li);
        test_get((char **)base, kd, m, &byte_layouts[li], li);
      }
      for (int li = 0; li < NACC; li++) {
        test_acc((char **)base, kd, m, &acc_layouts[li], li, 0);
        test_acc((char **)base, kd, m, &acc_layouts[li], li, 1);
      }
    }
  mp_set_where("freeing the layouts' slots");
  ARMCI_Barrier();
  mp_free_all(base);
}

int main(int argc, char **argv) { return MP_RUN_CASES(argc, argv, "mp_strided", test_layouts, test_pack, test_large); }
