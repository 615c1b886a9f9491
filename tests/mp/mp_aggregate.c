/*
 * mp_aggregate: aggregate handles (many NbPut/NbGet/NbAcc on one handle,
 * sizes below and above the aggregation limit, several targets, Test and
 * Wait) and operations kept in flight by the hundred thousand, with explicit
 * and implicit handles. Every value is checked against what memory must
 * hold.
 */
#include "mp_common.h"


enum { NAGG = 1000, NACC = 300 };

static uint64_t value_of(int origin, int target, long k, int round) {
  return mp_mix64(((uint64_t)origin << 48) ^ ((uint64_t)target << 40) ^ ((uint64_t)round << 32) ^ (uint64_t)k) | 1;
}

/* Each origin owns a slice of NAGG words plus a large block on every target.
 * Round 0: NAGG 8-byte NbPuts on one aggregate handle to one target, the
 * source rewritten right after Wait. Round 1: the same to every target on
 * one handle, mixed with a 20000-byte NbPut (too big to aggregate). Then
 * NAGG aggregate NbGets read it all back. */
static void test_aggregate_put_get(void) {
  const size_t slice = NAGG * sizeof(uint64_t) + 20000 + 64;
  void **B = mp_alloc_all(slice * (size_t)mp_np * 2);
  ARMCI_Barrier();
  uint64_t *vals = malloc(NAGG * sizeof(uint64_t) * (size_t)mp_np);
  unsigned char *big = malloc(20000);
  for (int round = 0; round < 2; round++) {
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    ARMCI_SET_AGGREGATE_HANDLE(&h);
    const int ntargets = round == 0 ? 1 : mp_np;
    for (int j = 0; j < ntargets; j++) {
      const int t = (mp_me + 1 + j) % mp_np;
      char *base = (char *)B[t] + ((size_t)round * mp_np + (size_t)mp_me) * slice;
      for (long k = 0; k < NAGG; k++) {
        uint64_t *v = &vals[(size_t)t * NAGG + (size_t)k];
        *v = value_of(mp_me, t, k, round);
        mp_set_where("aggregate NbPut %ld of round %d to rank %d", k, round, t);
        MP_CHECK_INT(0, ARMCI_NbPut(v, base + (size_t)k * sizeof(uint64_t), sizeof(uint64_t), t, &h));
      }
      if (round == 1) {
        mp_fill_pattern(big, 20000, mp_me, t, 1);
        MP_CHECK_INT(0, ARMCI_NbPut(big, base + NAGG * sizeof(uint64_t) + 1, 20000, t, &h));
        MP_CHECK_INT(0, ARMCI_Wait(&h)); /* big is reused for the next target */
      }
    }
    mp_set_where("waiting for the aggregate handle of round %d", round);
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    MP_CHECK_INT(0, ARMCI_Wait(&h)); /* a second wait is a no-op */
    memset(vals, 0xEE, NAGG * sizeof(uint64_t) * (size_t)mp_np);
    ARMCI_UNSET_AGGREGATE_HANDLE(&h);
  }
  ARMCI_AllFence();
  ARMCI_Barrier();
  for (int round = 0; round < 2; round++)
    for (int o = 0; o < mp_np; o++) {
      const int wrote = round == 0 ? ((o + 1) % mp_np == mp_me) : 1;
      const uint64_t *m = (const uint64_t *)((const char *)B[mp_me] + ((size_t)round * mp_np + (size_t)o) * slice);
      for (long k = 0; k < NAGG; k++) {
        const uint64_t e = wrote ? value_of(o, mp_me, k, round) : 0;
        if (m[k] != e) {
          mp_set_where("round %d, word %ld from rank %d", round, k, o);
          MP_CHECK_INT(e, m[k]);
        }
      }
      if (round == 1) {
        unsigned char expect[20000];
        mp_fill_pattern(expect, sizeof expect, o, mp_me, 1);
        MP_CHECK_BYTES(expect, (const unsigned char *)m + NAGG * sizeof(uint64_t) + 1, sizeof expect,
                       "20000-byte NbPut on an aggregate handle");
      }
    }
  ARMCI_Barrier();
  /* Aggregate gets of everything round 1 wrote on the next rank. */
  {
    const int t = (mp_me + 1) % mp_np;
    uint64_t *got = malloc(NAGG * sizeof(uint64_t) * (size_t)mp_np);
    memset(got, 0, NAGG * sizeof(uint64_t) * (size_t)mp_np);
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    ARMCI_SET_AGGREGATE_HANDLE(&h);
    for (int o = 0; o < mp_np; o++) {
      const char *base = (const char *)B[t] + ((size_t)mp_np + (size_t)o) * slice;
      for (long k = 0; k < NAGG; k++)
        MP_CHECK_INT(0, ARMCI_NbGet((void *)(base + (size_t)k * sizeof(uint64_t)), &got[(size_t)o * NAGG + (size_t)k],
                                    sizeof(uint64_t), t, &h));
    }
    double deadline = mp_now() + 60;
    int r;
    while ((r = ARMCI_Test(&h)) != 0) {
      MP_CHECK(r == 1, "ARMCI_Test returned %d", r);
      MP_CHECK(mp_now() < deadline, "aggregate get not complete after 60 s");
    }
    for (int o = 0; o < mp_np; o++)
      for (long k = 0; k < NAGG; k++) {
        const uint64_t e = value_of(o, t, k, 1);
        if (got[(size_t)o * NAGG + (size_t)k] != e) {
          mp_set_where("aggregate NbGet of word %ld of rank %d's slice on rank %d", k, o, t);
          MP_CHECK_INT(e, got[(size_t)o * NAGG + (size_t)k]);
        }
      }
    free(got);
  }
  ARMCI_Barrier();
  free(big);
  free(vals);
  mp_free_all(B);
}

/* Every rank adds into the same words of every target through one
 * aggregate handle: doubles with scale 2 and longs with scale 3 (two kinds of
 * Acc on one handle), exact sums. */
static void test_aggregate_acc(void) {
  void **C = mp_alloc_all(NACC * (sizeof(double) + sizeof(long)));
  ARMCI_Barrier();
  double *d = malloc(NACC * sizeof(double));
  long *l = malloc(NACC * sizeof(long));
  for (int k = 0; k < NACC; k++) {
    d[k] = (double)(mp_me + 1) * 0.5 + k;
    l[k] = (long)(mp_me + 1) * 1000 + k;
  }
  double two = 2.0;
  long three = 3;
  armci_hdl_t h;
  ARMCI_INIT_HANDLE(&h);
  ARMCI_SET_AGGREGATE_HANDLE(&h);
  for (int t = 0; t < mp_np; t++) {
    double *dd = (double *)C[t];
    long *ll = (long *)((char *)C[t] + NACC * sizeof(double));
    for (int k = 0; k < NACC; k++) {
      MP_CHECK_INT(0, ARMCI_NbAcc(ARMCI_ACC_DBL, &two, &d[k], &dd[k], sizeof(double), t, &h));
      MP_CHECK_INT(0, ARMCI_NbAcc(ARMCI_ACC_LNG, &three, &l[k], &ll[k], sizeof(long), t, &h));
    }
  }
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  ARMCI_AllFence();
  ARMCI_Barrier();
  const double *dd = (const double *)C[mp_me];
  const long *ll = (const long *)((const char *)C[mp_me] + NACC * sizeof(double));
  for (int k = 0; k < NACC; k++) {
    double de = 0;
    long le = 0;
    for (int o = 0; o < mp_np; o++) {
      de += 2.0 * ((double)(o + 1) * 0.5 + k);
      le += 3 * ((long)(o + 1) * 1000 + k);
    }
    mp_set_where("aggregate Acc word %d", k);
    MP_CHECK_DBL(de, dd[k]);
    MP_CHECK_INT(le, ll[k]);
  }
  ARMCI_Barrier();
  free(d);
  free(l);
  mp_free_all(C);
}

/* Hundreds of thousands of operations in flight: the library completes the
 * oldest when its resources run out, so none is lost and none waits
 * forever. Explicit handles (one each), then implicit ones. */
static void test_many_in_flight(void) {
  const long n = mp_env_int("MP_INFLIGHT", 200000);
  const int t = (mp_me + 1) % mp_np;
  void **D = mp_alloc_all((size_t)n * sizeof(uint64_t) * 2);
  ARMCI_Barrier();
  uint64_t *vals = malloc((size_t)n * sizeof(uint64_t));
  armci_hdl_t *h = malloc((size_t)n * sizeof(armci_hdl_t));
  for (long k = 0; k < n; k++) {
    vals[k] = value_of(mp_me, t, k, 7);
    ARMCI_INIT_HANDLE(&h[k]);
    mp_set_where("explicit NbPut %ld of %ld in flight", k, n);
    MP_CHECK_INT(0, ARMCI_NbPut(&vals[k], (uint64_t *)D[t] + k, sizeof(uint64_t), t, &h[k]));
  }
  for (long k = n - 1; k >= 0; k--) MP_CHECK_INT(0, ARMCI_Wait(&h[k]));
  for (long k = 0; k < n; k++) {
    vals[k] = value_of(mp_me, t, k, 8);
    mp_set_where("implicit NbPut %ld of %ld in flight", k, n);
    MP_CHECK_INT(0, ARMCI_NbPut(&vals[k], (uint64_t *)D[t] + n + k, sizeof(uint64_t), t, NULL));
  }
  MP_CHECK_INT(0, ARMCI_WaitAll());
  mp_where[0] = 0;
  ARMCI_AllFence();
  ARMCI_Barrier();
  const int o = (mp_me + mp_np - 1) % mp_np;
  const uint64_t *m = (const uint64_t *)D[mp_me];
  for (long k = 0; k < n; k++) {
    if (m[k] != value_of(o, mp_me, k, 7)) {
      mp_set_where("explicit word %ld from rank %d", k, o);
      MP_CHECK_INT(value_of(o, mp_me, k, 7), m[k]);
    }
    if (m[n + k] != value_of(o, mp_me, k, 8)) {
      mp_set_where("implicit word %ld from rank %d", k, o);
      MP_CHECK_INT(value_of(o, mp_me, k, 8), m[n + k]);
    }
  }
  ARMCI_Barrier();
  free(h);
  free(vals);
  mp_free_all(D);
}

int main(int argc, char **argv) {
  return MP_RUN_CASES(argc, argv, "mp_aggregate", test_aggregate_put_get, test_aggregate_acc, test_many_in_flight);
}
