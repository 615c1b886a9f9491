/* mp_msg_ga: the armci_msg_* and armci_domain_* calls in the forms Global
 * Arrays 5.8 makes them, values checked against what each rank computes
 * from every rank's known contribution.
 *  - "&&" "||" "&" "|" and their names land lor band bor, with every
 *    integer family: igop/lgop/llgop, reduce and reduce_scope, gop_scope
 *    over SCOPE_ALL, SCOPE_NODE and SCOPE_MASTERS, group_igop/lgop/llgop
 *    and group_gop_scope over the world and over the ranks in reverse;
 *  - op names as a Fortran caller passes them: followed by other bytes
 *    ("maxminibincnt"), and with no terminating byte at all, the name's last
 *    byte the last one of a readable page (a guard page after it);
 *  - armci_msg_sel_scope over SCOPE_ALL with every type and an info record
 *    larger than the element (GA's select), some ranks not contributing;
 *  - GA's own calls: gop_scope(SCOPE_MASTERS, "+", double),
 *    gop_scope(SCOPE_NODE, "min", long and int);
 *  - armci_domain_nprocs and armci_domain_glob_proc_id with id -1 (my
 *    domain), against the id of this rank's domain;
 *  - armci_msg_group_bcast_scope with root a world rank (GA's pgroup
 *    broadcast), over the ranks in reverse and over all ranks but 0, from
 *    every member. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "mp_common.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { N = 64 };

/* Rank r's value of element i: rows where every rank is non-zero, where
 * all are zero, where one rank is zero, where one rank alone is not. */
static long contribution(int r, int i) {
  switch (i % 4) {
    case 0: return r + 1 + i;
    case 1: return 0;
    case 2: return r == i % mp_np ? 0 : r + 2;
    default: return r == i % mp_np ? 3 + i : 0;
  }
}

static long apply(const char *op, long a, long b) {
  if (!strncmp(op, "&&", 2) || !strncmp(op, "land", 4)) return a && b;
  if (!strncmp(op, "||", 2) || !strncmp(op, "lor", 3)) return a || b;
  if (!strncmp(op, "&", 1) || !strncmp(op, "band", 4)) return a & b;
  return a | b; /* "|", "bor" */
}

static long expected(const char *op, int i, const int *ranks, int n) {
  long acc = contribution(ranks[0], i);
  for (int k = 1; k < n; ++k) acc = apply(op, acc, contribution(ranks[k], i));
  return acc;
}

/* The members of this rank's node and the node masters, from the domains. */
static int node_ranks[64], n_node, master_ranks[64], n_masters, i_am_master;
static void find_scopes(void) {
  const int node = armci_domain_my_id(ARMCI_DOMAIN_SMP);
  n_node = armci_domain_nprocs(ARMCI_DOMAIN_SMP, node);
  for (int l = 0; l < n_node; ++l) node_ranks[l] = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, node, l);
  n_masters = armci_domain_count(ARMCI_DOMAIN_SMP);
  for (int d = 0; d < n_masters; ++d) master_ranks[d] = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, d, 0);
  i_am_master = node_ranks[0] == mp_me;
}

/* What the messages call the op: an unterminated name cannot be printed. */
static const char *op_label;

enum call { IGOP, LGOP, LLGOP, REDUCE, REDUCE_SCOPE, GOP_SCOPE, GROUP_IGOP, GROUP_LGOP, GROUP_LLGOP, GROUP_GOP_SCOPE };
static const char *call_names[] = {"igop",       "lgop",       "llgop",       "reduce",       "reduce_scope",
                                   "gop_scope",  "group_igop", "group_lgop",  "group_llgop",  "group_gop_scope"};

/* One reduction of type (ARMCI_INT, _LONG, _LONG_LONG) by call over scope;
 * group is used by the group_ calls, whose members are ranks[0..n). */
static void check_logical(enum call c, int type, int scope, const char *op, ARMCI_Group *group, const int *ranks,
                          int n, int member) {
  int xi[N];
  long xl[N];
  long long xll[N];
  for (int i = 0; i < N; ++i) xi[i] = (int)contribution(mp_me, i), xl[i] = xi[i], xll[i] = xi[i];
  void *x = type == ARMCI_INT ? (void *)xi : type == ARMCI_LONG ? (void *)xl : (void *)xll;
  char *o = (char *)op;
  switch (c) {
    case IGOP: armci_msg_igop(xi, N, o); break;
    case LGOP: armci_msg_lgop(xl, N, o); break;
    case LLGOP: armci_msg_llgop(xll, N, o); break;
    case REDUCE: armci_msg_reduce(x, N, o, type); break;
    case REDUCE_SCOPE: armci_msg_reduce_scope(scope, x, N, o, type); break;
    case GOP_SCOPE: armci_msg_gop_scope(scope, x, N, o, type); break;
    case GROUP_IGOP: armci_msg_group_igop(xi, N, o, group); break;
    case GROUP_LGOP: armci_msg_group_lgop(xl, N, o, group); break;
    case GROUP_LLGOP: armci_msg_group_llgop(xll, N, o, group); break;
    case GROUP_GOP_SCOPE: armci_msg_group_gop_scope(scope, x, N, o, type, group); break;
  }
  for (int i = 0; i < N; ++i) {
    mp_set_where("armci_msg_%s type %d scope %d op %s element %d", call_names[c], type, scope, op_label, i);
    const long want = member ? expected(op, i, ranks, n) : contribution(mp_me, i);
    const long got = type == ARMCI_INT ? xi[i] : type == ARMCI_LONG ? xl[i] : (long)xll[i];
    MP_CHECK_INT(want, got);
  }
}

static void check_all_logical(const char *op, ARMCI_Group *reversed, const int *reverse_ranks) {
  static int world[64];
  for (int r = 0; r < mp_np; ++r) world[r] = r;
  check_logical(IGOP, ARMCI_INT, SCOPE_ALL, op, NULL, world, mp_np, 1);
  check_logical(LGOP, ARMCI_LONG, SCOPE_ALL, op, NULL, world, mp_np, 1);
  check_logical(LLGOP, ARMCI_LONG_LONG, SCOPE_ALL, op, NULL, world, mp_np, 1);
  const int types[] = {ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG};
  for (int t = 0; t < 3; ++t) {
    check_logical(REDUCE, types[t], SCOPE_ALL, op, NULL, world, mp_np, 1);
    for (enum call c = REDUCE_SCOPE; c <= GOP_SCOPE; ++c) {
      check_logical(c, types[t], SCOPE_ALL, op, NULL, world, mp_np, 1);
      check_logical(c, types[t], SCOPE_NODE, op, NULL, node_ranks, n_node, 1);
      check_logical(c, types[t], SCOPE_MASTERS, op, NULL, master_ranks, n_masters, i_am_master);
    }
    check_logical(GROUP_GOP_SCOPE, types[t], SCOPE_ALL, op, reversed, reverse_ranks, mp_np, 1);
  }
  check_logical(GROUP_IGOP, ARMCI_INT, SCOPE_ALL, op, reversed, reverse_ranks, mp_np, 1);
  check_logical(GROUP_LGOP, ARMCI_LONG, SCOPE_ALL, op, reversed, reverse_ranks, mp_np, 1);
  check_logical(GROUP_LLGOP, ARMCI_LONG_LONG, SCOPE_ALL, op, reversed, reverse_ranks, mp_np, 1);
}

/* name copied so that its last byte is the last readable one: a guard page
 * follows, so a read past the name's end (looking for a NUL) would crash. */
static char *guard_page;
static const char *unterminated(const char *name) {
  const long page = sysconf(_SC_PAGESIZE);
  size_t len = strlen(name);
  char *at = guard_page + page - len;
  memcpy(at, name, len);
  return at;
}

/* GA's select record: the value, then what GA carries with it. */
struct sel_info {
  union {
    int i;
    long l;
    long long ll;
    float f;
    double d;
  } value; /* the type's element leads the record */
  long index;
  int subscript[3];
};

static void check_select(const char *op, int max) {
  const int types[] = {ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG, ARMCI_FLOAT, ARMCI_DOUBLE};
  for (int t = 0; t < 5; ++t) {
    struct sel_info info;
    memset(&info, 0, sizeof info);
    /* Values 10..10+np-1 in a shuffled order; rank 1 holds the best but
     * does not contribute (np > 2), so the next best wins. */
    const int v = 10 + (mp_me * 3) % mp_np;
    switch (types[t]) {
      case ARMCI_INT: info.value.i = max ? v : -v; break;
      case ARMCI_LONG: info.value.l = max ? v : -v; break;
      case ARMCI_LONG_LONG: info.value.ll = max ? v : -v; break;
      case ARMCI_FLOAT: info.value.f = (float)(max ? v : -v); break;
      default: info.value.d = max ? v : -v;
    }
    info.index = 1000 + mp_me;
    info.subscript[2] = mp_me;
    int best = -1, best_v = 0;
    for (int r = 0; r < mp_np; ++r) {
      const int contributes = mp_np <= 2 || r != 1;
      const int rv = 10 + (r * 3) % mp_np;
      if (contributes && (best < 0 || rv > best_v)) best = r, best_v = rv;
    }
    armci_msg_sel_scope(SCOPE_ALL, &info, (int)sizeof info, (char *)op, types[t], mp_np <= 2 || mp_me != 1);
    mp_set_where("armci_msg_sel_scope op %s type %d", op_label, types[t]);
    MP_CHECK_INT(1000 + best, info.index);
    MP_CHECK_INT(best, info.subscript[2]);
    long got;
    switch (types[t]) {
      case ARMCI_INT: got = info.value.i; break;
      case ARMCI_LONG: got = info.value.l; break;
      case ARMCI_LONG_LONG: got = (long)info.value.ll; break;
      case ARMCI_FLOAT: got = (long)info.value.f; break;
      default: got = (long)info.value.d;
    }
    MP_CHECK_INT(max ? best_v : -best_v, got);
  }
}

/* The calls of GA's base.c and matmul.c, with their arguments. */
static void check_ga_calls(void) {
  double z[N];
  for (int i = 0; i < N; ++i) z[i] = mp_me + i;
  armci_msg_gop_scope(SCOPE_MASTERS, z, N, "+", ARMCI_DOUBLE);
  for (int i = 0; i < N; ++i) {
    double want = mp_me + i;
    if (i_am_master) {
      want = 0;
      for (int k = 0; k < n_masters; ++k) want += master_ranks[k] + i;
    }
    mp_set_where("gop_scope(SCOPE_MASTERS, \"+\", ARMCI_DOUBLE) element %d", i);
    MP_CHECK_DBL(want, z[i]);
  }
  long avail = 100 - mp_me;
  int avail_int = 100 - mp_me;
  armci_msg_gop_scope(SCOPE_NODE, &avail, 1, "min", ARMCI_LONG);
  armci_msg_gop_scope(SCOPE_NODE, &avail_int, 1, "min", ARMCI_INT);
  const int last = node_ranks[n_node - 1];
  mp_set_where("gop_scope(SCOPE_NODE, \"min\")");
  MP_CHECK_INT(100 - last, avail);
  MP_CHECK_INT(100 - last, avail_int);
}

static void check_domains(void) {
  const int node = armci_domain_my_id(ARMCI_DOMAIN_SMP);
  mp_set_where("armci_domain_* with id -1");
  MP_CHECK_INT(armci_domain_nprocs(ARMCI_DOMAIN_SMP, node), armci_domain_nprocs(ARMCI_DOMAIN_SMP, -1));
  for (int l = 0; l < n_node; ++l)
    MP_CHECK_INT(node_ranks[l], armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, -1, l));
}

static void check_group_bcast(ARMCI_Group *group, const int *ranks, int n) {
  int mine = 0;
  for (int k = 0; k < n; ++k) mine |= ranks[k] == mp_me;
  for (int k = 0; k < n; ++k) {
    const int root = ranks[k];
    long v[N];
    for (int i = 0; i < N; ++i) v[i] = mp_me == root ? 1000L * root + i : -1;
    if (mine) armci_msg_group_bcast_scope(SCOPE_ALL, v, (int)sizeof v, root, group);
    mp_set_where("armci_msg_group_bcast_scope from world rank %d over %d ranks", root, n);
    for (int i = 0; i < N && mine; ++i) MP_CHECK_INT(1000L * root + i, v[i]);
  }
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  MP_CHECK(mp_np <= 64, "np %d", mp_np);
  find_scopes();
  const long page = sysconf(_SC_PAGESIZE);
  guard_page = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  MP_CHECK(guard_page != MAP_FAILED, "mmap");
  MP_CHECK_INT(0, mprotect(guard_page + page, (size_t)page, PROT_NONE));

  int reverse_ranks[64];
  for (int k = 0; k < mp_np; ++k) reverse_ranks[k] = mp_np - 1 - k;
  ARMCI_Group reversed;
  ARMCI_Group_create(mp_np, reverse_ranks, &reversed);

  static const char *ops[] = {"&&", "||", "&", "|", "land", "lor", "band", "bor",
                              "&&garbage", "||x", "lor,", "band&&"};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; ++k) {
    op_label = ops[k];
    check_all_logical(ops[k], &reversed, reverse_ranks);
  }
  /* No NUL after the name at all (not for "&" and "|" alone: "&&" and "||"
   * are tried first, as GA's and ARMCI-MPI's ARMCI do, which reads the
   * byte after them). */
  static const char *bare[] = {"&&", "||", "land", "lor", "band", "bor"};
  for (size_t k = 0; k < sizeof bare / sizeof *bare; ++k) {
    op_label = bare[k]; /* (unterminated) */
    check_all_logical(unterminated(bare[k]), &reversed, reverse_ranks);
  }

  /* The other ops, unterminated, through the same prefix rule. */
  static const char *arith[] = {"+", "*", "max", "min", "absmax", "absmin", "or"};
  for (size_t k = 0; k < sizeof arith / sizeof *arith; ++k) {
    long x = mp_me + 1, want = 1;
    for (int r = 0; r < mp_np; ++r) {
      const long v = r + 1;
      switch (k) {
        case 0: want = r ? want + v : v; break;
        case 1: want = r ? want * v : v; break;
        case 2: case 4: want = v > want ? v : want; break;
        case 3: case 5: want = r ? (v < want ? v : want) : v; break;
        default: want = r ? want | v : v;
      }
    }
    armci_msg_lgop(&x, 1, (char *)unterminated(arith[k]));
    mp_set_where("armci_msg_lgop op \"%s\" unterminated", arith[k]);
    MP_CHECK_INT(want, x);
  }

  static const char *sel_ops[] = {"max", "min", "maxminibincnt", "minmax"};
  for (int k = 0; k < 4; ++k) {
    op_label = sel_ops[k];
    check_select(sel_ops[k], k % 2 == 0);
  }
  op_label = "max (unterminated)";
  check_select(unterminated("max"), 1);
  op_label = "min (unterminated)";
  check_select(unterminated("min"), 0);

  check_ga_calls();
  check_domains();
  check_group_bcast(&reversed, reverse_ranks, mp_np);
  ARMCI_Group not_first;
  ARMCI_Group_create(mp_np - 1, reverse_ranks, &not_first); /* world ranks np-1 .. 1 */
  check_group_bcast(&not_first, reverse_ranks, mp_np - 1);
  ARMCI_Group_free(&not_first);

  ARMCI_Group_free(&reversed);
  munmap(guard_page, 2 * (size_t)page);
  armci_msg_barrier();
  ARMCI_Finalize();
  mp_pass("mp_msg_ga", mp_me);
  return 0;
}
