/*
 * mp_acc: concurrent accumulates from every rank into one location, for
 * every data type, with unit, non-unit and complex scales, and large arrays.
 * All values are small integers or binary fractions, so every sum is exact
 * whatever the order in which the ranks' updates land.
 */
#include "mp_common.h"


enum { NEL = 5, ITERS = 200, GUARD = 2 };

/* The Acc types, indexed by their number in armci.h (ARMCI_ACC_INT is 0):
 * name, element size, and whether an element is a complex pair. */
static const struct {
  const char *name;
  size_t size;
  int complex_pair;
} acc_types[] = {
    {"ARMCI_ACC_INT", sizeof(int), 0},        {"ARMCI_ACC_LNG", sizeof(long), 0},
    {"ARMCI_ACC_FLT", sizeof(float), 0},      {"ARMCI_ACC_DBL", sizeof(double), 0},
    {"ARMCI_ACC_CPL", 2 * sizeof(float), 1},  {"ARMCI_ACC_DCP", 2 * sizeof(double), 1},
};
#define NTYPES ((int)(sizeof acc_types / sizeof acc_types[0]))
_Static_assert(NTYPES == ARMCI_ACC_DCP + 1, "one row per ARMCI_ACC_* type");

static const char *type_name(int type) { return acc_types[type].name; }
static int is_complex(int type) { return acc_types[type].complex_pair; }

/* Stores component c (0: real or only, 1: imaginary) of element i. */
static void store(int type, void *buf, int i, int c, double v) {
  switch (type) {
  case ARMCI_ACC_INT: ((int *)buf)[i] = (int)v; break;
  case ARMCI_ACC_LNG: ((long *)buf)[i] = (long)v; break;
  case ARMCI_ACC_FLT: ((float *)buf)[i] = (float)v; break;
  case ARMCI_ACC_DBL: ((double *)buf)[i] = v; break;
  case ARMCI_ACC_CPL: ((float *)buf)[2 * i + c] = (float)v; break;
  case ARMCI_ACC_DCP: ((double *)buf)[2 * i + c] = v; break;
  }
}

static double load(int type, const void *buf, int i, int c) {
  switch (type) {
  case ARMCI_ACC_INT: return ((const int *)buf)[i];
  case ARMCI_ACC_LNG: return (double)((const long *)buf)[i];
  case ARMCI_ACC_FLT: return ((const float *)buf)[i];
  case ARMCI_ACC_DBL: return ((const double *)buf)[i];
  case ARMCI_ACC_CPL: return ((const float *)buf)[2 * i + c];
  case ARMCI_ACC_DCP: return ((const double *)buf)[2 * i + c];
  }
  return 0;
}

/* Source value of rank r, element i, component c. The long values use the
 * upper 32 bits so that a 32-bit accumulate of longs is caught. */
static double src_value(int type, int r, int i, int c) {
  switch (type) {
  case ARMCI_ACC_INT: return (i % 2 ? -1 : 1) * (r + 1 + i);
  case ARMCI_ACC_LNG: return 4294967296.0 * (i + 1) + r - 7;
  case ARMCI_ACC_FLT: return r + 1 + 0.5 * i;
  case ARMCI_ACC_DBL: return 3.0 * r - i + 0.25;
  case ARMCI_ACC_CPL: return c == 0 ? r + 1 : i - 2;
  case ARMCI_ACC_DCP: return c == 0 ? r - i : r + i + 1;
  }
  return 0;
}

/* The non-unit scale (real, imaginary). */
static void scale_value(int type, double *re, double *im) {
  *re = 1;
  *im = 0;
  switch (type) {
  case ARMCI_ACC_INT: *re = 3; break;
  case ARMCI_ACC_LNG: *re = -2; break;
  case ARMCI_ACC_FLT: *re = 0.5; break;
  case ARMCI_ACC_DBL: *re = -1.5; break;
  case ARMCI_ACC_CPL: *re = 2; *im = -1; break;
  case ARMCI_ACC_DCP: *re = -0.5; *im = 3; break;
  }
}

/* Every rank accumulates ITERS times into NEL elements of one rank,
 * alternating scale 1 and the type's other scale. Guard elements on both
 * sides must stay untouched. */
static void test_one_location(int type) {
  const size_t es = acc_types[type].size;
  const int target = type % mp_np;
  const size_t bytes = es * (NEL + 2 * GUARD);
  void **base = mp_alloc_all(bytes);
  memset(base[mp_me], 0x7F, bytes); /* guard value; NEL elements zeroed below */
  memset((char *)base[mp_me] + GUARD * es, 0, NEL * es);
  ARMCI_Barrier();

  unsigned char src[NEL * 16], one[16], sc[16];
  for (int i = 0; i < NEL; i++)
    for (int c = 0; c < 1 + is_complex(type); c++) store(type, src, i, c, src_value(type, mp_me, i, c));
  double sre, sim;
  scale_value(type, &sre, &sim);
  store(type, one, 0, 0, 1.0);
  if (is_complex(type)) store(type, one, 0, 1, 0.0);
  store(type, sc, 0, 0, sre);
  if (is_complex(type)) store(type, sc, 0, 1, sim);

  void *dst = (char *)base[target] + GUARD * es;
  for (int it = 0; it < ITERS; it++) {
    mp_set_where("%s accumulate %d into rank %d", type_name(type), it, target);
    MP_CHECK_INT(0, ARMCI_Acc(type, (it % 2) ? sc : one, src, dst, (int)(NEL * es), target));
  }
  mp_where[0] = 0;
  ARMCI_AllFence();
  ARMCI_Barrier();

  if (mp_me == target) {
    /* dst = (ITERS/2) * (1 + s) * sum_r src_r, with a complex product for
     * the complex types: (a+bi)(c+di) = (ac-bd) + (ad+bc)i. */
    const unsigned char *mem = base[mp_me];
    for (int i = 0; i < NEL; i++) {
      double sre_sum = 0, sim_sum = 0;
      for (int r = 0; r < mp_np; r++) {
        sre_sum += src_value(type, r, i, 0);
        if (is_complex(type)) sim_sum += src_value(type, r, i, 1);
      }
      double fre = 1 + sre, fim = sim;
      double ere = (ITERS / 2) * (fre * sre_sum - fim * sim_sum);
      double eim = (ITERS / 2) * (fre * sim_sum + fim * sre_sum);
      mp_set_where("%s element %d after %d accumulates from each of %d ranks", type_name(type), i,
                   ITERS, mp_np);
      MP_CHECK_DBL(ere, load(type, mem + GUARD * es, i, 0));
      if (is_complex(type)) MP_CHECK_DBL(eim, load(type, mem + GUARD * es, i, 1));
    }
    unsigned char guard[16 * GUARD];
    memset(guard, 0x7F, sizeof guard);
    mp_set_where("%s guard elements", type_name(type));
    MP_CHECK_BYTES(guard, mem, GUARD * es, "elements before the accumulated ones");
    MP_CHECK_BYTES(guard, mem + (GUARD + NEL) * es, GUARD * es, "elements after the accumulated ones");
    mp_where[0] = 0;
  }
  ARMCI_Barrier();
  mp_free_all(base);
}

/* Every rank accumulates a large array into every rank's array, starting at
 * a different target, so transfers of many ranks overlap on one array. */
static void test_large(void) {
  enum { N = 200000 };
  void **dbase = mp_alloc_all(N * sizeof(double));
  void **ibase = mp_alloc_all(N * sizeof(int));
  ARMCI_Barrier();

  double *dsrc = ARMCI_Malloc_local((armci_size_t)(N * sizeof(double)));
  int *isrc = malloc(N * sizeof(int));
  for (int j = 0; j < N; j++) {
    dsrc[j] = (double)((j * 7 + mp_me) % 64) - 16.5;
    isrc[j] = j % 1000 - 500 + mp_me;
  }
  double one = 1.0, two = 2.0;
  int ione = 1, ithree = 3;
  for (int k = 0; k < mp_np; k++) {
    int t = (mp_me + k) % mp_np;
    mp_set_where("large accumulates to rank %d", t);
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &one, dsrc, dbase[t], (int)(N * sizeof(double)), t));
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_INT, &ithree, isrc, ibase[t], (int)(N * sizeof(int)), t));
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &two, dsrc, dbase[t], (int)(N * sizeof(double)), t));
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_INT, &ione, isrc, ibase[t], (int)(N * sizeof(int)), t));
  }
  mp_where[0] = 0;
  ARMCI_AllFence();
  ARMCI_Barrier();

  const double *dm = dbase[mp_me];
  const int *im = ibase[mp_me];
  for (int j = 0; j < N; j++) {
    double de = 0;
    long ie = 0;
    for (int r = 0; r < mp_np; r++) {
      de += 3.0 * ((double)((j * 7 + r) % 64) - 16.5);
      ie += 4L * (j % 1000 - 500 + r);
    }
    if (dm[j] != de || im[j] != ie) {
      mp_set_where("large arrays on rank %d, element %d", mp_me, j);
      MP_CHECK_DBL(de, dm[j]);
      MP_CHECK_INT(ie, im[j]);
    }
  }
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free_local(dsrc));
  free(isrc);
  mp_free_all(ibase);
  mp_free_all(dbase);
}

/* Accs sent as messages, with collective messages to the same rank right
 * before and after them, then a notification or a fence: the target must
 * find every Acc applied when the notification or the message sent after
 * the fence arrives (collective messages count for flow control only, the
 * Accs for ordering). N doubles are more than one Acc message. */
static double ordered_value(int rank, int round, int j) { return (double)(j % 17 + rank + round); }

static void test_ordered_among_collectives(void) {
  enum { N = 20000, ROUNDS = 12, TAG = 4242 };
  if (mp_np < 2) return;
  void **base = mp_alloc_all(2 * N * sizeof(double));
  memset(base[mp_me], 0, 2 * N * sizeof(double));
  ARMCI_Barrier();
  const int next = (mp_me + 1) % mp_np, prev = (mp_me + mp_np - 1) % mp_np;
  double *src = ARMCI_Malloc_local((armci_size_t)(N * sizeof(double)));
  const double *by_notify = base[mp_me], *by_fence = (const double *)base[mp_me] + N;
  double one = 1.0;
  for (int round = 0; round < ROUNDS; round++) {
    for (int j = 0; j < N; j++) src[j] = ordered_value(mp_me, round, j);
    double sum = 1.0;
    armci_msg_dgop(&sum, 1, "+");
    MP_CHECK_DBL((double)mp_np, sum);
    int token = round, got = -1, len = 0;
    armci_msg_snd(TAG, &token, sizeof token, next);
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &one, src, base[next], (int)(N * sizeof(double)), next));
    armci_msg_rcv(TAG, &got, sizeof got, &len, prev);
    armci_msg_snd(TAG, &token, sizeof token, next);
    armci_notify(next);
    armci_notify_wait(prev, NULL);
    armci_msg_rcv(TAG, &got, sizeof got, &len, prev);
    MP_CHECK_INT(round, got);

    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &one, src, (double *)base[next] + N, (int)(N * sizeof(double)), next));
    armci_msg_snd(TAG, &token, sizeof token, next);
    ARMCI_Fence(next);
    armci_msg_snd(TAG + 1, &token, sizeof token, next);
    armci_msg_rcv(TAG, &got, sizeof got, &len, prev);
    armci_msg_rcv(TAG + 1, &got, sizeof got, &len, prev);
    MP_CHECK_INT(round, got);

    for (int j = 0; j < N; j++) {
      double expect = 0;
      for (int k = 0; k <= round; k++) expect += ordered_value(prev, k, j);
      if (by_notify[j] != expect || by_fence[j] != expect) {
        mp_set_where("round %d, element %d of the Accs from rank %d", round, j, prev);
        MP_CHECK_DBL(expect, by_notify[j]);
        MP_CHECK_DBL(expect, by_fence[j]);
      }
    }
  }
  mp_where[0] = 0;
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free_local(src));
  mp_free_all(base);
}

static void test_every_type(void) {
  for (int type = 0; type < NTYPES; type++) test_one_location(type);
}

int main(int argc, char **argv) { return MP_RUN_CASES(argc, argv, "mp_acc", test_every_type, test_large,
                                             test_ordered_among_collectives); }
