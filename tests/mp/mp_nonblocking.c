/*
 * mp_nonblocking: NbPut/NbGet/NbAcc/NbPutValue* with explicit handles
 * (Wait, Test, waiting twice, reuse) and with implicit handles completed by
 * WaitProc, WaitAll and Fence, including a thousand outstanding operations;
 * zero-level NbPutS/NbGetS/NbAccS as Global Arrays issues them.
 */
#include "mp_common.h"


enum { ASZ = 4096 + 3, ASLOT = 4096 + 16, NIMPL = 1000, EBYTES = 65536 + 64, NEL = 8, ACC_ITERS = 60 };

/* Test must report 1 until the operation completes, then 0. A deadline
 * turns a hang into a failure with a message. */
static void test_until_done(armci_hdl_t *h) {
  double deadline = mp_now() + 60;
  int r;
  long polls = 0;
  while ((r = ARMCI_Test(h)) != 0) {
    MP_CHECK(r == 1, "ARMCI_Test returned %d after %ld polls", r, polls);
    MP_CHECK(mp_now() < deadline, "ARMCI_Test still 1 after %ld polls and 60 s", polls);
    polls++;
  }
}

static void test_unused_handle(void) {
  armci_hdl_t h;
  ARMCI_INIT_HANDLE(&h);
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  MP_CHECK_INT(0, ARMCI_Test(&h));
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  /* Nothing outstanding: these return at once. */
  for (int t = 0; t < mp_np; t++) MP_CHECK_INT(0, ARMCI_WaitProc(t));
  MP_CHECK_INT(0, ARMCI_WaitAll());
}

static void test_explicit_put(void) {
  void **A = mp_alloc_all((size_t)ASLOT * (size_t)mp_np);
  ARMCI_Barrier();
  armci_hdl_t *h = malloc(sizeof(armci_hdl_t) * (size_t)mp_np);
  unsigned char **src = malloc(sizeof(unsigned char *) * (size_t)mp_np);
  /* Every operation is in flight before any is completed; each has its own
   * source, which must stay untouched until its handle completes. */
  for (int k = 1; k <= mp_np; k++) {
    int t = (mp_me + k) % mp_np;
    size_t off = (size_t)mp_me * ASLOT + 1;
    src[t] = (t % 2) ? ARMCI_Malloc_local(ASZ) : malloc(ASZ);
    mp_fill_pattern(src[t], ASZ, mp_me, t, off);
    ARMCI_INIT_HANDLE(&h[t]);
    MP_CHECK_INT(0, ARMCI_NbPut(src[t], (char *)A[t] + off, ASZ, t, &h[t]));
  }
  for (int t = 0; t < mp_np; t++) {
    mp_set_where("completing the NbPut to rank %d with %s", t, t % 2 ? "Test" : "Wait");
    if (t % 2)
      test_until_done(&h[t]);
    else
      MP_CHECK_INT(0, ARMCI_Wait(&h[t]));
  }
  for (int t = 0; t < mp_np; t++) {
    mp_set_where("second Wait/Test on the completed handle of rank %d", t);
    MP_CHECK_INT(0, ARMCI_Wait(&h[t]));
    MP_CHECK_INT(0, ARMCI_Test(&h[t]));
    memset(src[t], 0xEE, ASZ); /* locally complete: the source is free */
  }
  mp_where[0] = 0;
  ARMCI_AllFence();
  ARMCI_Barrier();

  unsigned char *expect = calloc(ASLOT, 1);
  for (int o = 0; o < mp_np; o++) {
    memset(expect, 0, ASLOT);
    mp_fill_pattern(expect + 1, ASZ, o, mp_me, (size_t)o * ASLOT + 1);
    mp_set_where("NbPut from rank %d", o);
    MP_CHECK_BYTES(expect, (char *)A[mp_me] + (size_t)o * ASLOT, ASLOT, "memory after explicit NbPut");
  }
  mp_where[0] = 0;
  free(expect);
  for (int t = 0; t < mp_np; t++) {
    if (t % 2)
      MP_CHECK_INT(0, ARMCI_Free_local(src[t]));
    else
      free(src[t]);
  }
  free(src);
  free(h);
  ARMCI_Barrier();
  mp_free_all(A);
}

static void test_explicit_get(void) {
  static const int gsizes[] = {1, 1000, 65536};
  enum { NG = 3 };
  void **E = mp_alloc_all(EBYTES);
  mp_fill_pattern(E[mp_me], EBYTES, mp_me, mp_me, 0);
  ARMCI_Barrier();

  armci_hdl_t *h = malloc(sizeof(armci_hdl_t) * (size_t)mp_np * NG);
  unsigned char **dst = malloc(sizeof(unsigned char *) * (size_t)mp_np * NG);
  for (int t = 0; t < mp_np; t++)
    for (int j = 0; j < NG; j++) {
      int x = t * NG + j;
      size_t off = (size_t)(7 * t + 2 * j + 1);
      dst[x] = ARMCI_Malloc_local(gsizes[j] + 2);
      memset(dst[x], 0xA7, (size_t)gsizes[j] + 2);
      ARMCI_INIT_HANDLE(&h[x]);
      MP_CHECK_INT(0, ARMCI_NbGet((char *)E[t] + off, dst[x] + 1, gsizes[j], t, &h[x]));
    }
  unsigned char *expect = malloc(65536);
  for (int t = 0; t < mp_np; t++)
    for (int j = 0; j < NG; j++) {
      int x = t * NG + j;
      size_t off = (size_t)(7 * t + 2 * j + 1);
      mp_set_where("NbGet of %d bytes from rank %d at offset %zu", gsizes[j], t, off);
      if (x % 2)
        test_until_done(&h[x]);
      else
        MP_CHECK_INT(0, ARMCI_Wait(&h[x]));
      MP_CHECK_INT(0, ARMCI_Wait(&h[x]));
      mp_fill_pattern(expect, (size_t)gsizes[j], t, t, off);
      MP_CHECK_BYTES(expect, dst[x] + 1, gsizes[j], "data of a completed NbGet");
      MP_CHECK_INT(0xA7, dst[x][0]);
      MP_CHECK_INT(0xA7, dst[x][gsizes[j] + 1]);
      MP_CHECK_INT(0, ARMCI_Free_local(dst[x]));
    }
  mp_where[0] = 0;
  free(expect);
  free(dst);
  free(h);
  ARMCI_Barrier();
  mp_free_all(E);
}

/* One handle reused for every NbAcc without waiting in between: each reuse
 * first completes the previous operation. All ranks hit the same elements. */
static void test_explicit_acc(void) {
  void **C = mp_alloc_all(NEL * sizeof(double));
  ARMCI_Barrier();
  double src[NEL], scale = 2.0;
  for (int i = 0; i < NEL; i++) src[i] = mp_me + 1 + i;
  armci_hdl_t h;
  ARMCI_INIT_HANDLE(&h);
  for (int it = 0; it < ACC_ITERS; it++) {
    int t = (mp_me + it) % mp_np;
    mp_set_where("NbAcc %d to rank %d", it, t);
    MP_CHECK_INT(0, ARMCI_NbAcc(ARMCI_ACC_DBL, &scale, src, C[t], NEL * sizeof(double), t, &h));
  }
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  mp_where[0] = 0;
  ARMCI_AllFence();
  ARMCI_Barrier();
  const double *c = C[mp_me];
  for (int i = 0; i < NEL; i++) {
    double e = 0;
    for (int r = 0; r < mp_np; r++) {
      int hits = 0;
      for (int it = 0; it < ACC_ITERS; it++) hits += (r + it) % mp_np == mp_me;
      e += hits * 2.0 * (r + 1 + i);
    }
    mp_set_where("element %d after NbAcc from all ranks", i);
    MP_CHECK_DBL(e, c[i]);
  }
  mp_where[0] = 0;
  ARMCI_Barrier();
  mp_free_all(C);
}

/* Reusing a handle before waiting completes the earlier operation, so its
 * source may be overwritten as soon as the second call returns; reuse after a
 * wait starts afresh. */
static void test_handle_reuse(void) {
  enum { N = 256 };
  void **F = mp_alloc_all((size_t)mp_np * 3 * N);
  ARMCI_Barrier();
  int t = (mp_me + 1) % mp_np;
  size_t off = (size_t)mp_me * 3 * N;
  unsigned char *a = malloc(N), *b = malloc(N), *g = malloc(N + 2), *expect = malloc(N);
  armci_hdl_t h;
  ARMCI_INIT_HANDLE(&h);
  mp_fill_pattern(a, N, mp_me, t, off);
  MP_CHECK_INT(0, ARMCI_NbPut(a, (char *)F[t] + off, N, t, &h));
  mp_fill_pattern(b, N, mp_me, t, off + N);
  MP_CHECK_INT(0, ARMCI_NbPut(b, (char *)F[t] + off + N, N, t, &h));
  memset(a, 0xEE, N);
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  memset(b, 0xEE, N);
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  ARMCI_Fence(t);

  /* Reuse after completion, for a Get of what was just put. */
  memset(g, 0x3C, N + 2);
  MP_CHECK_INT(0, ARMCI_NbGet((char *)F[t] + off, g + 1, N, t, &h));
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  mp_fill_pattern(expect, N, mp_me, t, off);
  MP_CHECK_BYTES(expect, g + 1, N, "NbGet on a reused handle of data put on it");
  MP_CHECK_INT(0x3C, g[0]);
  MP_CHECK_INT(0x3C, g[N + 1]);

  /* And for a third operation whose handle is completed by Test. */
  mp_fill_pattern(a, N, mp_me, t, off + 2 * N);
  MP_CHECK_INT(0, ARMCI_NbPut(a, (char *)F[t] + off + 2 * N, N, t, &h));
  test_until_done(&h);
  ARMCI_AllFence();
  ARMCI_Barrier();

  int o = (mp_me + mp_np - 1) % mp_np;
  size_t ooff = (size_t)o * 3 * N;
  for (int p = 0; p < 3; p++) {
    mp_fill_pattern(expect, N, o, mp_me, ooff + (size_t)p * N);
    mp_set_where("piece %d put by rank %d through one reused handle", p, o);
    MP_CHECK_BYTES(expect, (char *)F[mp_me] + ooff + (size_t)p * N, N, "memory after handle reuse");
  }
  mp_where[0] = 0;
  free(a);
  free(b);
  free(g);
  free(expect);
  ARMCI_Barrier();
  mp_free_all(F);
}

/* GA's 1-D patches: zero-level NbPutS/NbGetS/NbAccS, each on an explicit
 * handle completed by Wait (twice) or Test, and a handle reused by a second
 * NbAccS before its wait; a same-node target finishes them inside the call,
 * a network target does not, and the data must be the same. */
static void test_zero_levels(void) {
  enum { ZSLOT = 65536 + 64 };
  static const int sizes[] = {8, 4608, 65536 + 8};
  void **Z = mp_alloc_all((size_t)ZSLOT * (size_t)mp_np);
  ARMCI_Barrier();
  unsigned char *src = malloc(ZSLOT), *back = malloc(ZSLOT + 2);
  double *ones = malloc(ZSLOT), *got = malloc(ZSLOT);
  int next = (mp_me + 1) % mp_np, st[1] = {0};
  char *mine = (char *)Z[next] + (size_t)mp_me * ZSLOT;
  for (int si = 0; si < 3; si++) {
    int count[1] = {sizes[si]};
    size_t n = (size_t)sizes[si];
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    mp_set_where("zero-level NbPutS/NbGetS of %zu bytes with rank %d", n, next);
    mp_fill_pattern(src, n, mp_me, next, (size_t)si);
    MP_CHECK_INT(0, ARMCI_NbPutS(src, st, mine, st, count, 0, next, &h));
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    ARMCI_Fence(next);
    memset(back, 0x5C, n + 2);
    MP_CHECK_INT(0, ARMCI_NbGetS(mine, st, back + 1, st, count, 0, next, &h));
    test_until_done(&h);
    MP_CHECK_BYTES(src, back + 1, n, "zero-level NbGetS of what NbPutS wrote");
    MP_CHECK_INT(0x5C, back[0]);
    MP_CHECK_INT(0x5C, back[n + 1]);

    /* Two NbAccS of 1.0 on one handle, the second before any wait. */
    size_t nd = n / sizeof(double);
    for (size_t i = 0; i < nd; i++) ones[i] = 1.0;
    double scale = 1.0;
    MP_CHECK_INT(0, ARMCI_PutS(ones, st, mine, st, count, 0, next));
    ARMCI_Fence(next);
    MP_CHECK_INT(0, ARMCI_NbAccS(ARMCI_ACC_DBL, &scale, ones, st, mine, st, count, 0, next, &h));
    MP_CHECK_INT(0, ARMCI_NbAccS(ARMCI_ACC_DBL, &scale, ones, st, mine, st, count, 0, next, &h));
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    ARMCI_Fence(next);
    MP_CHECK_INT(0, ARMCI_GetS(mine, st, got, st, count, 0, next));
    for (size_t i = 0; i < nd; i++) {
      mp_set_where("element %zu of %zu after two NbAccS on one handle to rank %d", i, nd, next);
      MP_CHECK_DBL(3.0, got[i]);
    }
  }
  mp_where[0] = 0;
  free(src);
  free(back);
  free(ones);
  free(got);
  ARMCI_Barrier();
  mp_free_all(Z);
}

static uint64_t implicit_value(int o, int t, int k, int phase) {
  return mp_mix64(((uint64_t)o << 40) ^ ((uint64_t)t << 32) ^ ((uint64_t)phase << 24) ^ (uint64_t)k) | 1;
}

/* A thousand 8-byte NbPuts with implicit handles, spread over all targets,
 * completed in phase 0 by WaitProc, in phase 1 by WaitAll and in phase 2 by
 * Fence. Each origin owns NIMPL slots on every target; op k uses slot k of
 * target (me + k) % np. */
static void test_implicit_put(void) {
  const size_t area = (size_t)mp_np * NIMPL * sizeof(uint64_t);
  void **B = mp_alloc_all(3 * area);
  ARMCI_Barrier();
  uint64_t *vals = ARMCI_Malloc_local(NIMPL * sizeof(uint64_t));
  for (int phase = 0; phase < 3; phase++) {
    for (int k = 0; k < NIMPL; k++) {
      int t = (mp_me + k) % mp_np;
      vals[k] = implicit_value(mp_me, t, k, phase);
      char *dst = (char *)B[t] + (size_t)phase * area + ((size_t)mp_me * NIMPL + (size_t)k) * sizeof(uint64_t);
      mp_set_where("implicit NbPut %d of phase %d to rank %d", k, phase, t);
      MP_CHECK_INT(0, ARMCI_NbPut(&vals[k], dst, sizeof(uint64_t), t, NULL));
    }
    mp_set_where("completing phase %d of implicit NbPuts", phase);
    if (phase == 0)
      for (int t = 0; t < mp_np; t++) MP_CHECK_INT(0, ARMCI_WaitProc((mp_me + mp_np - t) % mp_np));
    else if (phase == 1)
      MP_CHECK_INT(0, ARMCI_WaitAll());
    else
      for (int t = 0; t < mp_np; t++) ARMCI_Fence(t);
    mp_where[0] = 0;
    memset(vals, 0xEE, NIMPL * sizeof(uint64_t));
  }
  ARMCI_AllFence();
  ARMCI_Barrier();
  for (int phase = 0; phase < 3; phase++) {
    const uint64_t *m = (const uint64_t *)((const char *)B[mp_me] + (size_t)phase * area);
    for (int o = 0; o < mp_np; o++)
      for (int k = 0; k < NIMPL; k++) {
        uint64_t e = (o + k) % mp_np == mp_me ? implicit_value(o, mp_me, k, phase) : 0;
        if (m[(size_t)o * NIMPL + (size_t)k] != e) {
          mp_set_where("phase %d (0 WaitProc, 1 WaitAll, 2 Fence), NbPut %d from rank %d", phase, k, o);
          MP_CHECK_INT(e, m[(size_t)o * NIMPL + (size_t)k]);
        }
      }
  }
  MP_CHECK_INT(0, ARMCI_Free_local(vals));
  ARMCI_Barrier();
  mp_free_all(B);
}

static void test_implicit_get_acc(void) {
  void **E = mp_alloc_all(EBYTES);
  void **CI = mp_alloc_all(4 * sizeof(int));
  mp_fill_pattern(E[mp_me], EBYTES, mp_me, mp_me, 0);
  ARMCI_Barrier();

  /* NbGets into distinct 8-byte cells, all outstanding at once. */
  unsigned char *cells = malloc((size_t)NIMPL * 8);
  memset(cells, 0, (size_t)NIMPL * 8);
  for (int k = 0; k < NIMPL; k++) {
    int t = (mp_me + k) % mp_np;
    size_t off = ((size_t)k * 37) % (EBYTES - 8);
    MP_CHECK_INT(0, ARMCI_NbGet((char *)E[t] + off, cells + (size_t)k * 8, 8, t, NULL));
  }
  MP_CHECK_INT(0, ARMCI_WaitAll());
  unsigned char expect[8];
  for (int k = 0; k < NIMPL; k++) {
    int t = (mp_me + k) % mp_np;
    size_t off = ((size_t)k * 37) % (EBYTES - 8);
    mp_fill_pattern(expect, 8, t, t, off);
    mp_set_where("implicit NbGet %d from rank %d at offset %zu, completed by WaitAll", k, t, off);
    MP_CHECK_BYTES(expect, cells + (size_t)k * 8, 8, "data of implicit NbGet");
  }
  mp_where[0] = 0;
  free(cells);

  /* Implicit NbAccs from every rank to the same four ints of every rank. */
  int src[4] = {1, -2, 3, 100000};
  int scale = 1;
  for (int k = 0; k < NIMPL; k++) {
    int t = (mp_me + k) % mp_np;
    MP_CHECK_INT(0, ARMCI_NbAcc(ARMCI_ACC_INT, &scale, src, CI[t], (int)sizeof src, t, NULL));
  }
  for (int t = 0; t < mp_np; t++) MP_CHECK_INT(0, ARMCI_WaitProc(t));
  ARMCI_AllFence();
  ARMCI_Barrier();
  long hits = 0;
  for (int r = 0; r < mp_np; r++)
    for (int k = 0; k < NIMPL; k++) hits += (r + k) % mp_np == mp_me;
  for (int i = 0; i < 4; i++) {
    mp_set_where("int %d after %ld implicit NbAccs", i, hits);
    MP_CHECK_INT(hits * src[i], ((int *)CI[mp_me])[i]);
  }
  mp_where[0] = 0;
  ARMCI_Barrier();
  mp_free_all(CI);
  mp_free_all(E);
}

static void test_nb_values(void) {
  void **D = mp_alloc_all(sizeof(struct mp_value_slot) * (size_t)mp_np);
  ARMCI_Barrier();
  armci_hdl_t *h = malloc(sizeof(armci_hdl_t) * 4 * (size_t)mp_np);
  for (int t = 0; t < mp_np; t++) {
    struct mp_value_slot *s = (struct mp_value_slot *)D[t] + mp_me;
    armci_hdl_t *ht = h + 4 * t;
    for (int j = 0; j < 4; j++) ARMCI_INIT_HANDLE(&ht[j]);
    MP_CHECK_INT(0, ARMCI_NbPutValueInt(-100 * mp_me - t, &s->i, t, &ht[0]));
    MP_CHECK_INT(0, ARMCI_NbPutValueLong((long)(mp_me + 1) << 40 | t, &s->l, t, &ht[1]));
    MP_CHECK_INT(0, ARMCI_NbPutValueFloat(mp_me + 0.5f * t, &s->f, t, &ht[2]));
    MP_CHECK_INT(0, ARMCI_NbPutValueDouble(-(mp_me * 65536.0 + t + 0.75), &s->d, t, &ht[3]));
  }
  for (int x = 0; x < 4 * mp_np; x++) {
    if (x % 3)
      MP_CHECK_INT(0, ARMCI_Wait(&h[x]));
    else
      test_until_done(&h[x]);
  }
  free(h);
  ARMCI_AllFence();
  ARMCI_Barrier();
  const struct mp_value_slot *m = D[mp_me];
  for (int o = 0; o < mp_np; o++) {
    mp_set_where("NbPutValue* from rank %d", o);
    MP_CHECK_INT(-100 * o - mp_me, m[o].i);
    MP_CHECK_INT((long)(o + 1) << 40 | mp_me, m[o].l);
    MP_CHECK_DBL(o + 0.5f * mp_me, m[o].f);
    MP_CHECK_DBL(-(o * 65536.0 + mp_me + 0.75), m[o].d);
  }
  mp_where[0] = 0;
  ARMCI_Barrier();
  mp_free_all(D);
}

int main(int argc, char **argv) {
  return MP_RUN_CASES(argc, argv, "mp_nonblocking", test_unused_handle, test_explicit_put, test_explicit_get,
                      test_explicit_acc, test_handle_reuse, test_zero_levels, test_implicit_put,
                      test_implicit_get_acc, test_nb_values, test_unused_handle);
}
