/* mp_msg: the armci_msg_* calls, values checked against what each rank
 * computes locally from every rank's known contribution.
 *  - igop/lgop/llgop/fgop/dgop with + * max min absmax absmin (or for the
 *    integer types) on 1, 1000 and 100000 elements (longer than a slot);
 *  - gop_scope and reduce_scope over SCOPE_ALL, SCOPE_NODE, SCOPE_MASTERS;
 *  - bcast/brdcst from every root, 0 B to 1 MiB; bcast_scope over the node;
 *  - long bcasts and igops back to back with moving roots, no barrier between;
 *  - sel max/min with some ranks not contributing;
 *  - snd/rcv around a ring (small and 300 KB messages, tags), rcvany;
 *  - bintree, armci_timer, a barrier per step. */
#include "mp_common.h"

#include <math.h>
#include <string.h>

/* Rank r's value of element i: small integers, so products and sums stay
 * exact in every type. Signs alternate so absmax/absmin differ from max/min. */
static long contribution(int r, long i) {
  long v = (r * 7 + i * 3) % 5 + 1;
  return (r + i) % 2 ? -v : v;
}

static long reduce_expected(const char *op, long i, const int *ranks, int n) {
  long acc = contribution(ranks[0], i);
  if (!strcmp(op, "absmax") || !strcmp(op, "absmin")) acc = labs(acc);
  for (int k = 1; k < n; ++k) {
    long v = contribution(ranks[k], i);
    if (!strcmp(op, "+")) acc += v;
    else if (!strcmp(op, "*")) acc *= v;
    else if (!strcmp(op, "max")) acc = v > acc ? v : acc;
    else if (!strcmp(op, "min")) acc = v < acc ? v : acc;
    else if (!strcmp(op, "absmax")) acc = labs(v) > acc ? labs(v) : acc;
    else if (!strcmp(op, "absmin")) acc = labs(v) < acc ? labs(v) : acc;
    else if (!strcmp(op, "or")) acc |= v;
  }
  return acc;
}

/* One gop of every type over the given members (world ranks) with op. */
static void check_gop(int scope, const char *op, int n, const int *ranks, int nranks, int use_short_calls) {
  int *xi = malloc(sizeof(int) * (size_t)n);
  long *xl = malloc(sizeof(long) * (size_t)n);
  long long *xll = malloc(sizeof(long long) * (size_t)n);
  float *xf = malloc(sizeof(float) * (size_t)n);
  double *xd = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; ++i) {
    long v = contribution(mp_me, i);
    xi[i] = (int)v, xl[i] = v, xll[i] = v, xf[i] = (float)v, xd[i] = (double)v;
  }
  const int integer_only = !strcmp(op, "or");
  const int product = !strcmp(op, "*");
  /* A product over many ranks would overflow nothing at np <= 4 (5^4). */
  (void)product;
  char *o = (char *)op;
  if (use_short_calls) {
    armci_msg_igop(xi, n, o);
    armci_msg_lgop(xl, n, o);
    armci_msg_llgop(xll, n, o);
    if (!integer_only) {
      armci_msg_fgop(xf, n, o);
      armci_msg_dgop(xd, n, o);
    }
  } else {
    armci_msg_gop_scope(scope, xi, n, o, ARMCI_INT);
    armci_msg_gop_scope(scope, xl, n, o, ARMCI_LONG);
    armci_msg_reduce_scope(scope, xll, n, o, ARMCI_LONG_LONG);
    if (!integer_only) {
      armci_msg_gop_scope(scope, xf, n, o, ARMCI_FLOAT);
      armci_msg_reduce_scope(scope, xd, n, o, ARMCI_DOUBLE);
    }
  }
  for (int i = 0; i < n; ++i) {
    long e = reduce_expected(op, i, ranks, nranks);
    mp_set_where("op %s n %d element %d scope %d", op, n, i, scope);
    MP_CHECK_INT(e, xi[i]);
    MP_CHECK_INT(e, xl[i]);
    MP_CHECK_INT(e, xll[i]);
    if (!integer_only) {
      MP_CHECK_DBL((double)e, (double)xf[i]);
      MP_CHECK_DBL((double)e, xd[i]);
    }
  }
  mp_set_where("%s", "");
  free(xi), free(xl), free(xll), free(xf), free(xd);
}

/* Rounding differs with the order of combination: every rank must still
 * end with the same bits (GA compares reduced norms across ranks). */
static void same_bits_everywhere(void) {
  static const int sizes[] = {7, 5000, 100003};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const int n = sizes[s];
    double *x = malloc(sizeof(double) * (size_t)n);
    double *root = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; ++i) x[i] = 1.0 / (3.0 + i + 7.0 * mp_me);
    armci_msg_dgop(x, n, "+");
    memcpy(root, x, sizeof(double) * (size_t)n);
    armci_msg_bcast(root, (int)(sizeof(double) * (size_t)n), 0);
    mp_set_where("dgop of %d doubles: the bits of rank 0", n);
    MP_CHECK_INT(0, memcmp(root, x, sizeof(double) * (size_t)n));
    free(x), free(root);
  }
  mp_set_where("%s", "");
}

static void reductions(void) {
  static const char *ops[] = {"+", "*", "max", "min", "absmax", "absmin", "or"};
  /* 100003: uneven shares in the large all-reduce. */
  static const int sizes[] = {1, 1000, 100003};
  int *world = malloc(sizeof(int) * (size_t)mp_np);
  for (int r = 0; r < mp_np; ++r) world[r] = r;
  for (size_t k = 0; k < sizeof ops / sizeof *ops; ++k)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
      check_gop(SCOPE_ALL, ops[k], sizes[s], world, mp_np, 1);
      check_gop(SCOPE_ALL, ops[k], sizes[s], world, mp_np, 0);
    }

  /* The node: its members; the masters: the lowest rank of every node. */
  const int node = armci_domain_my_id(ARMCI_DOMAIN_SMP);
  const int nlocal = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node);
  int *local = malloc(sizeof(int) * (size_t)nlocal);
  for (int i = 0; i < nlocal; ++i) local[i] = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, i);
  const int nodes = armci_domain_count(ARMCI_DOMAIN_SMP);
  int *masters = malloc(sizeof(int) * (size_t)nodes);
  for (int i = 0; i < nodes; ++i) masters[i] = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, i, 0);
  for (size_t k = 0; k < 3; ++k) {
    check_gop(SCOPE_NODE, ops[k], 1000, local, nlocal, 0);
    if (local[0] == mp_me) check_gop(SCOPE_MASTERS, ops[k], 1000, masters, nodes, 0);
  }
  /* A non-master's SCOPE_MASTERS call returns at once, buffer untouched. */
  if (local[0] != mp_me) {
    int x = 42;
    armci_msg_gop_scope(SCOPE_MASTERS, &x, 1, "+", ARMCI_INT);
    MP_CHECK_INT(42, x);
  }
  free(world), free(local), free(masters);
}

static void broadcasts(void) {
  const int sizes[] = {0, 1, 8, 1000, 40000, 1 << 20};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const size_t n = (size_t)sizes[s];
    unsigned char *buf = malloc(n + 1), *expect = malloc(n + 1);
    for (int root = 0; root < mp_np; ++root) {
      mp_fill_pattern(expect, n, root, -1, s);
      if (mp_me == root) memcpy(buf, expect, n);
      else memset(buf, 0xEE, n);
      if (root % 2) armci_msg_brdcst(buf, (int)n, root);
      else armci_msg_bcast(buf, (int)n, root);
      mp_set_where("bcast %zu bytes from %d", n, root);
      MP_CHECK_BYTES(expect, buf, n, "broadcast data");
    }
    /* Within the node, from its last member. */
    const int node = armci_domain_my_id(ARMCI_DOMAIN_SMP);
    const int nlocal = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node);
    const int root = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, nlocal - 1);
    mp_fill_pattern(expect, n, root, node, s);
    if (mp_me == root) memcpy(buf, expect, n);
    else memset(buf, 0xEE, n);
    armci_msg_bcast_scope(SCOPE_NODE, buf, (int)n, root);
    MP_CHECK_BYTES(expect, buf, n, "node broadcast data");
    free(buf), free(expect);
  }
  mp_set_where("%s", "");
}

/* Long broadcasts and all-reduces back to back, no barrier between them:
 * the root writes chunks into readers while they read others, and a
 * reader's next broadcast reuses what the last one shared, so a root late
 * on one message must not touch the next. Sizes off page and chunk
 * boundaries; every result checked exactly (integer sums). */
static void back_to_back(void) {
  static const int sizes[] = {16385, 40000, 65536, 262147, (1 << 20) + 12};
  const int rounds = 40;
  const size_t largest = (1 << 20) + 12;
  unsigned char *buf = malloc(largest), *expect = malloc(largest);
  int *x = malloc(largest);
  for (int k = 0; k < rounds; ++k) {
    const size_t n = (size_t)sizes[k % 5];
    const int root = (k / 5 + k) % mp_np;
    mp_fill_pattern(expect, n, root, k, (size_t)k);
    if (mp_me == root) memcpy(buf, expect, n);
    else memset(buf, 0xEE, n);
    armci_msg_bcast(buf, (int)n, root);
    mp_set_where("back-to-back bcast %d: %zu bytes from %d", k, n, root);
    MP_CHECK_BYTES(expect, buf, n, "broadcast data");
    const int count = (int)(n / sizeof(int));
    for (int i = 0; i < count; ++i) x[i] = (int)contribution(mp_me, i + k);
    armci_msg_igop(x, count, "+");
    mp_set_where("back-to-back igop %d: %d ints", k, count);
    for (int i = 0; i < count; ++i) {
      long sum = 0;
      for (int r = 0; r < mp_np; ++r) sum += contribution(r, i + k);
      if (x[i] != (int)sum) {
        mp_set_where("back-to-back igop %d: %d ints, element %d", k, count, i);
        MP_CHECK_INT((int)sum, x[i]);
      }
    }
  }
  free(buf), free(expect), free(x);
  mp_set_where("%s", "");
}

static void selections(void) {
  /* Key = element 0; payload after it names the owner. Odd ranks do not
   * contribute, so the best even rank wins. */
  for (int want_max = 0; want_max < 2; ++want_max) {
    double x[3] = {(double)((mp_me * 5) % 7), (double)mp_me, 99.0};
    const int contribute = mp_me % 2 == 0;
    armci_msg_sel(x, sizeof x, want_max ? "max" : "min", ARMCI_DOUBLE, contribute);
    int best = 0;
    for (int r = 2; r < mp_np; r += 2) {
      double kr = (double)((r * 5) % 7), kb = (double)((best * 5) % 7);
      if (want_max ? kr > kb : kr < kb) best = r;
    }
    MP_CHECK_DBL((double)((best * 5) % 7), x[0]);
    MP_CHECK_DBL((double)best, x[1]);
    long y[2] = {mp_me, 7};
    armci_msg_sel_scope(SCOPE_ALL, y, sizeof y, want_max ? "max" : "min", ARMCI_LONG, 1);
    MP_CHECK_INT(want_max ? mp_np - 1 : 0, y[0]);
  }
}

static void point_to_point(void) {
  if (mp_np < 2) return;
  const int next = (mp_me + 1) % mp_np, prev = (mp_me + mp_np - 1) % mp_np;
  const int sizes[] = {0, 4, 300000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const size_t n = (size_t)sizes[s];
    unsigned char *out = malloc(n + 1), *in = malloc(n + 1), *expect = malloc(n + 1);
    mp_fill_pattern(out, n, mp_me, next, s);
    mp_fill_pattern(expect, n, prev, mp_me, s);
    /* Even ranks send first, odd ranks receive first: no rank waits on a
     * full channel for a receiver that is itself sending. */
    int len = -1;
    if (mp_me % 2 == 0) {
      armci_msg_snd(10 + (int)s, out, (int)n, next);
      armci_msg_rcv(10 + (int)s, in, (int)n, &len, prev);
    } else {
      armci_msg_rcv(10 + (int)s, in, (int)n, &len, prev);
      armci_msg_snd(10 + (int)s, out, (int)n, next);
    }
    MP_CHECK_INT((int)n, len);
    MP_CHECK_BYTES(expect, in, n, "ring message");
    free(out), free(in), free(expect);
  }
  /* Everyone tells rank 0 who they are; rank 0 takes them in any order. */
  if (mp_me == 0) {
    int *seen = calloc((size_t)mp_np, sizeof(int));
    for (int k = 1; k < mp_np; ++k) {
      int who = -1, len = -1;
      int from = armci_msg_rcvany(5, &who, sizeof who, &len);
      MP_CHECK_INT(sizeof who, len);
      MP_CHECK_INT(from, who);
      MP_CHECK(from > 0 && from < mp_np && !seen[from], "sender %d", from);
      seen[from] = 1;
    }
    free(seen);
  } else {
    armci_msg_snd(5, &mp_me, sizeof mp_me, 0);
  }
}

static void trees_and_timer(void) {
  int root, up, left, right;
  armci_msg_bintree(SCOPE_ALL, &root, &up, &left, &right);
  MP_CHECK_INT(0, root);
  MP_CHECK_INT(mp_me == 0 ? -1 : (mp_me - 1) / 2, up);
  MP_CHECK_INT(2 * mp_me + 1 < mp_np ? 2 * mp_me + 1 : -1, left);
  MP_CHECK_INT(2 * mp_me + 2 < mp_np ? 2 * mp_me + 2 : -1, right);
  double t0 = armci_timer();
  armci_msg_barrier();
  MP_CHECK(armci_timer() >= t0, "armci_timer went backwards");
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  reductions();
  same_bits_everywhere();
  armci_msg_barrier();
  broadcasts();
  back_to_back();
  selections();
  point_to_point();
  trees_and_timer();
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass("mp_msg", mp_me);
  return 0;
}
