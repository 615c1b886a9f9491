/* ga_logical: Debian's Global Arrays on this library, the calls GA 5.8's
 * own tests failed on: GA's logical and bitwise reductions (GA_Igop,
 * GA_Lgop, GA_Llgop and GA_Pgroup_igop with "&&", "||", "&", "|"), its
 * cluster queries (GA_Cluster_nnodes, _nodeid, _nprocs of a node and of -1,
 * _procid, _proc_nodeid) and NGA_Select_elem. Every value is checked
 * against what this rank computes. Prints PASS like the tests in tests/mp. */
#include <stdlib.h>

#include "ga_test.h"

/* Element k: every rank non-zero, all zero, rank 0 alone zero, rank 0 alone
 * non-zero, each rank its own bit. */
static long value(int r, int k) {
  switch (k) {
    case 0: return r + 1;
    case 1: return 0;
    case 2: return r == 0 ? 0 : 5;
    case 3: return r == 0 ? 9 : 0;
    default: return 1L << r;
  }
}

static long fold(const char *op, int k, int first, int count) {
  long acc = value(first, k);
  for (int r = first + 1; r < first + count; ++r) {
    long v = value(r, k);
    if (op[0] == '&' && op[1] == '&') acc = acc && v;
    else if (op[0] == '|' && op[1] == '|') acc = acc || v;
    else if (op[0] == '&') acc &= v;
    else acc |= v;
  }
  return acc;
}

static void reductions(void) {
  static const char *ops[] = {"&&", "||", "&", "|"};
  for (int o = 0; o < 4; ++o) {
    int xi[5];
    long xl[5];
    long long xll[5];
    for (int k = 0; k < 5; ++k) xi[k] = (int)value(ga_me, k), xl[k] = value(ga_me, k), xll[k] = value(ga_me, k);
    GA_Igop(xi, 5, (char *)ops[o]);
    GA_Lgop(xl, 5, (char *)ops[o]);
    GA_Llgop(xll, 5, (char *)ops[o]);
    for (int k = 0; k < 5; ++k) {
      const long want = fold(ops[o], k, 0, ga_np);
      CHECK(xi[k] == want && xl[k] == want && xll[k] == want, "op %s element %d: int %d long %ld long long %lld, expected %ld",
            ops[o], k, xi[k], xl[k], xll[k], want);
    }
  }
  /* The upper half as a process group (armci_msg_group_igop). */
  const int first = ga_np / 2, count = ga_np - ga_np / 2;
  int *list = malloc(sizeof(int) * (size_t)count);
  for (int k = 0; k < count; ++k) list[k] = first + k;
  const int grp = GA_Pgroup_create(list, count);
  if (ga_me >= first) {
    for (int o = 0; o < 4; ++o) {
      int xi[5];
      for (int k = 0; k < 5; ++k) xi[k] = (int)value(ga_me, k);
      GA_Pgroup_igop(grp, xi, 5, (char *)ops[o]);
      for (int k = 0; k < 5; ++k)
        CHECK(xi[k] == fold(ops[o], k, first, count), "group op %s element %d: %d, expected %ld", ops[o], k, xi[k],
              fold(ops[o], k, first, count));
    }
  }
  GA_Sync();
  free(list);
}

static void cluster(void) {
  const int nodes = GA_Cluster_nnodes(), node = GA_Cluster_nodeid();
  CHECK(nodes >= 1 && nodes <= ga_np && node >= 0 && node < nodes, "node %d of %d", node, nodes);
  CHECK(GA_Cluster_nprocs(-1) == GA_Cluster_nprocs(node), "GA_Cluster_nprocs(-1) %d, of my node %d",
        GA_Cluster_nprocs(-1), GA_Cluster_nprocs(node));
  int total = 0, seen_me = 0;
  for (int n = 0; n < nodes; ++n) {
    const int size = GA_Cluster_nprocs(n);
    CHECK(size >= 1, "node %d has %d processes", n, size);
    for (int l = 0; l < size; ++l) {
      const int p = GA_Cluster_procid(n, l);
      CHECK(GA_Cluster_proc_nodeid(p) == n, "process %d: node %d, expected %d", p, GA_Cluster_proc_nodeid(p), n);
      seen_me += p == ga_me;
    }
    total += size;
  }
  CHECK(total == ga_np && seen_me == 1, "nodes hold %d processes, me %d times", total, seen_me);
}

static void select_elem(void) {
  int dims[1] = {10 * ga_np}, chunk[1] = {-1};
  const int g = NGA_Create(C_DBL, 1, dims, "sel", chunk);
  CHECK(g != 0, "NGA_Create");
  if (ga_me == 0) {
    double v[10 * 64];
    for (int i = 0; i < dims[0]; ++i) v[i] = (i * 37) % dims[0] - 5;
    int lo[1] = {0}, hi[1] = {dims[0] - 1}, ld[1] = {1};
    NGA_Put(g, lo, hi, v, ld);
  }
  GA_Sync();
  double best;
  int at[1];
  NGA_Select_elem(g, "max", &best, at);
  CHECK(best == dims[0] - 6 && (at[0] * 37) % dims[0] == dims[0] - 1, "max %g at %d", best, at[0]);
  NGA_Select_elem(g, "min", &best, at);
  CHECK(best == -5 && (at[0] * 37) % dims[0] == 0, "min %g at %d", best, at[0]);
  GA_Destroy(g);
}

int main(int argc, char **argv) {
  ga_start(&argc, &argv, "ga_logical", 100000);
  CHECK(ga_np <= 64, "np %d", ga_np);
  reductions();
  cluster();
  select_elem();
  return ga_pass();
}
