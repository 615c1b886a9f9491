// The armci_msg_* calls: identity, point-to-point messages, barriers,
// broadcasts, reductions and selections over scopes and groups. The API
// checks the arguments, picks the members of the scope and the element
// type's combine; the core's Collectives move the bytes.
#include <chrono>
#include <cmath>
#include <cstring>

#include "include/message.h"
#include "src/api/api.hpp"
#include "src/api/groups.hpp"
#include "src/core/reduce.hpp"

using namespace armci::api;
using armci::fail;

namespace {

// The members of a scope within a base group, and this rank's index among
// them (-1: not one of them, e.g. not its node's master).
struct ScopeTeam {
  std::vector<int> subset;                 // SCOPE_NODE, SCOPE_MASTERS
  const std::vector<int>* all = nullptr;   // SCOPE_ALL: the base group's own list, not a copy
  int me = -1;
  const std::vector<int>& members() const { return all ? *all : subset; }
  armci::Team team() const { return armci::Team{members(), me}; }
};

ScopeTeam scope_team(const char* call, armci::Runtime& r, int scope, const armci::Group& base) {
  ScopeTeam t;
  if (scope == SCOPE_ALL) {
    // The common case costs no allocation: a loop of small reductions
    // spends its time moving data, not copying member lists.
    if (!base.member()) fail(call, "this rank is not a member of the group");
    t.all = &base.members;
    t.me = base.my_rank;
    return t;
  }
  const armci::Peers& peers = r.peers();
  std::vector<bool> node_seen(static_cast<std::size_t>(peers.node_count()), false);
  for (int m : base.members) {
    const auto node = static_cast<std::size_t>(peers.node_of(m));
    switch (scope) {
      case SCOPE_NODE:
        if (peers.same_node(m)) t.subset.push_back(m);
        break;
      case SCOPE_MASTERS:
        if (!node_seen[node]) t.subset.push_back(m);
        node_seen[node] = true;
        break;
      default: fail(call, "argument 'scope' (%d) is not SCOPE_ALL, SCOPE_NODE or SCOPE_MASTERS", scope);
    }
  }
  for (std::size_t i = 0; i < t.subset.size(); ++i)
    if (t.subset[i] == r.rank()) t.me = static_cast<int>(i);
  if (t.me < 0 && scope != SCOPE_MASTERS) fail(call, "this rank is not a member of the group");
  return t;
}

armci::Group& default_group(const char* call) { return runtime(call).groups().default_group(); }

armci::ElementType element_type(const char* call, int type) {
  switch (type) {
    case ARMCI_INT: return armci::ElementType::int_;
    case ARMCI_LONG: return armci::ElementType::long_;
    case ARMCI_LONG_LONG: return armci::ElementType::long_long;
    case ARMCI_FLOAT: return armci::ElementType::float_;
    case ARMCI_DOUBLE: return armci::ElementType::double_;
  }
  fail(call, "argument 'type' (%d) is not an armci_msg type (ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG, "
             "ARMCI_FLOAT, ARMCI_DOUBLE)", type);
}

armci::ReduceOp parse_op(const char* call, const char* op, armci::ElementType type) {
  using armci::ReduceOp;
  if (op == nullptr) fail(call, "argument 'op' is NULL");
  ReduceOp parsed;
  if (!armci::parse_reduce_op(op, parsed))
    fail(call, "argument 'op' (\"%s\") is not one of + * max min absmax absmin or && || & | land lor band bor",
         armci::printable_op(op).c_str());
  const bool integer_only = parsed == ReduceOp::bit_or || parsed == ReduceOp::bit_and ||
                            parsed == ReduceOp::logical_and || parsed == ReduceOp::logical_or;
  if (integer_only && !armci::is_integer(type))
    fail(call, "argument 'op' (\"%s\") needs an integer type, not a floating one", armci::printable_op(op).c_str());
  return parsed;
}

void gop(const char* call, int scope, void* x, int n, const char* op, int type, const armci::Group& base) {
  armci::Runtime& r = collective_runtime(call);
  const armci::ElementType element = element_type(call, type);
  const armci::ReduceOp parsed = parse_op(call, op, element);
  check_count(call, n, "n");
  check_pointer(call, "x", x, n);
  const ScopeTeam t = scope_team(call, r, scope, base);
  if (t.me < 0) return;
  const auto count = static_cast<std::size_t>(n);
  // absmax / absmin: the magnitudes are what is compared and returned.
  if (parsed == armci::ReduceOp::absmax || parsed == armci::ReduceOp::absmin) armci::prepare_absolute(element, x, count);
  r.collectives().allreduce(t.team(), x, count, armci::element_bytes(element), armci::combine_for(element, parsed));
}

void bcast(const char* call, int scope, void* buffer, int len, int root_world, const armci::Group& base) {
  armci::Runtime& r = collective_runtime(call);
  check_count(call, len, "len");
  check_pointer(call, "buffer", buffer, len);
  const ScopeTeam t = scope_team(call, r, scope, base);
  if (t.me < 0) return;
  int root = -1;
  const std::vector<int>& members = t.members();
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i] == root_world) root = static_cast<int>(i);
  if (root < 0) fail(call, "argument 'root' (world rank %d) is not a member of the scope", root_world);
  r.collectives().broadcast(t.team(), buffer, static_cast<std::size_t>(len), root);
}

void sel(const char* call, int scope, void* x, int n, const char* op, int type, int contribute,
         const armci::Group& base) {
  armci::Runtime& r = collective_runtime(call);
  const std::size_t element = armci::element_bytes(element_type(call, type));
  if (op == nullptr) fail(call, "argument 'op' is NULL");
  bool want_max = false;
  if (!armci::parse_select_op(op, want_max))
    fail(call, "argument 'op' (\"%s\") is not \"max\" or \"min\"", armci::printable_op(op).c_str());
  if (n < static_cast<int>(element))
    fail(call, "argument 'n' (%d bytes) is shorter than one element of type %d", n, type);
  if (x == nullptr) fail(call, "argument 'x' is NULL");
  const ScopeTeam t = scope_team(call, r, scope, base);
  if (t.me < 0) return;
  // A candidate: whether it takes part, its team index (ties go to the
  // lowest), then the caller's n bytes.
  struct Head {
    std::int32_t contributes;
    std::int32_t index;
  };
  const auto bytes = static_cast<std::size_t>(n);
  std::vector<std::byte> mine(sizeof(Head) + bytes);
  const Head head{contribute != 0, t.me};
  std::memcpy(mine.data(), &head, sizeof head);
  std::memcpy(mine.data() + sizeof head, x, bytes);
  auto better = [type, want_max](const std::byte* a, const std::byte* b) -> bool {  // a strictly better than b
    auto cmp = [&](auto va, auto vb) { return want_max ? va > vb : va < vb; };
    switch (type) {
      case ARMCI_INT: { int va, vb; std::memcpy(&va, a, sizeof va); std::memcpy(&vb, b, sizeof vb); return cmp(va, vb); }
      case ARMCI_LONG: { long va, vb; std::memcpy(&va, a, sizeof va); std::memcpy(&vb, b, sizeof vb); return cmp(va, vb); }
      case ARMCI_LONG_LONG: { long long va, vb; std::memcpy(&va, a, sizeof va); std::memcpy(&vb, b, sizeof vb); return cmp(va, vb); }
      case ARMCI_FLOAT: { float va, vb; std::memcpy(&va, a, sizeof va); std::memcpy(&vb, b, sizeof vb); return cmp(va, vb); }
      default: { double va, vb; std::memcpy(&va, a, sizeof va); std::memcpy(&vb, b, sizeof vb); return cmp(va, vb); }
    }
  };
  r.collectives().allreduce(t.team(), mine.data(), 1, mine.size(), [&](void* into, const void* from, std::size_t) {
    auto* a = static_cast<std::byte*>(into);
    const auto* b = static_cast<const std::byte*>(from);
    Head ha, hb;
    std::memcpy(&ha, a, sizeof ha);
    std::memcpy(&hb, b, sizeof hb);
    bool take = false;
    if (!hb.contributes) take = false;
    else if (!ha.contributes) take = true;
    else if (better(b + sizeof hb, a + sizeof ha)) take = true;
    else if (!better(a + sizeof ha, b + sizeof hb)) take = hb.index < ha.index;
    if (take) std::memcpy(a, b, sizeof(Head) + bytes);
  });
  Head winner;
  std::memcpy(&winner, mine.data(), sizeof winner);
  if (winner.contributes) std::memcpy(x, mine.data() + sizeof(Head), bytes);
}

}  // namespace

armci_api(void, armci_msg_abort, (int code)) { fail("armci_msg_abort", "the program aborted with code %d", code); }

armci_api(double, armci_timer, (void)) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

armci_api(void, armci_msg_init, (int* argc, char*** argv)) { armci::Runtime::message_init(argc, argv); }

armci_api(void, armci_msg_finalize, (void)) { armci::Runtime::message_finalize(); }

// ---------------------------------------------------------------- point to point

armci_api_peers(void, armci_msg_snd, (int tag, void* buffer, int len, int to)) {
  armci::Runtime& r = runtime_for("armci_msg_snd", to, "to");
  check_count("armci_msg_snd", len, "len");
  check_pointer("armci_msg_snd", "buffer", buffer, len);
  r.collectives().send(armci::Channel::user, to, tag, buffer, static_cast<std::size_t>(len));
} ARMCI_PEERS_END(void)

armci_api_peers(void, armci_msg_rcv, (int tag, void* buffer, int buflen, int* msglen, int from)) {
  armci::Runtime& r = runtime_for("armci_msg_rcv", from, "from");
  check_count("armci_msg_rcv", buflen, "buflen");
  check_pointer("armci_msg_rcv", "buffer", buffer, buflen);
  const std::size_t got = r.collectives().receive("armci_msg_rcv", armci::Channel::user, from, tag, buffer,
                                                  static_cast<std::size_t>(buflen));
  if (msglen) *msglen = static_cast<int>(got);
} ARMCI_PEERS_END(void)

armci_api_peers(int, armci_msg_rcvany, (int tag, void* buffer, int buflen, int* msglen)) {
  armci::Runtime& r = runtime("armci_msg_rcvany");
  check_count("armci_msg_rcvany", buflen, "buflen");
  check_pointer("armci_msg_rcvany", "buffer", buffer, buflen);
  const int from = r.collectives().wait_any(armci::Channel::user);
  const std::size_t got = r.collectives().receive("armci_msg_rcvany", armci::Channel::user, from, tag, buffer,
                                                  static_cast<std::size_t>(buflen));
  if (msglen) *msglen = static_cast<int>(got);
  return from;
} ARMCI_PEERS_END(int)

// ---------------------------------------------------------------- barriers, trees

armci_api_peers(void, armci_msg_group_barrier, (ARMCI_Group * group)) {
  armci::Group& g = member_group_of("armci_msg_group_barrier", "group", group);
  collective_runtime("armci_msg_group_barrier").collectives().barrier(g.team());
} ARMCI_PEERS_END(void)

armci_api(void, armci_msg_bintree, (int scope, int* Root, int* Up, int* Left, int* Right)) {
  armci::Runtime& r = runtime("armci_msg_bintree");
  const ScopeTeam t = scope_team("armci_msg_bintree", r, scope, default_group("armci_msg_bintree"));
  if (!Root || !Up || !Left || !Right) fail("armci_msg_bintree", "an output argument is NULL");
  const std::vector<int>& members = t.members();
  const int n = static_cast<int>(members.size());
  auto at = [&](int i) { return i >= 0 && i < n ? members[static_cast<std::size_t>(i)] : -1; };
  *Root = at(0);
  *Up = t.me > 0 ? at((t.me - 1) / 2) : -1;
  *Left = t.me >= 0 ? at(2 * t.me + 1) : -1;
  *Right = t.me >= 0 ? at(2 * t.me + 2) : -1;
}

// ---------------------------------------------------------------- broadcasts

armci_api_peers(void, armci_msg_bcast_scope, (int scope, void* buffer, int len, int root)) {
  bcast("armci_msg_bcast_scope", scope, buffer, len, root, default_group("armci_msg_bcast_scope"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_bcast, (void* buffer, int len, int root)) {
  bcast("armci_msg_bcast", SCOPE_ALL, buffer, len, root, default_group("armci_msg_bcast"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_brdcst, (void* buffer, int len, int root)) {
  bcast("armci_msg_brdcst", SCOPE_ALL, buffer, len, root, default_group("armci_msg_brdcst"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_group_bcast_scope, (int scope, void* buf, int len, int root, ARMCI_Group* group)) {
  armci::Group& g = member_group_of("armci_msg_group_bcast_scope", "group", group);
  // root is a world rank, as GA (its pgroup broadcasts map the originator to
  // a world rank first), GA's ARMCI and ARMCI-MPI take it.
  if (root < 0 || root >= static_cast<int>(g.rank_of.size()) || g.rank_of[static_cast<std::size_t>(root)] < 0)
    fail("armci_msg_group_bcast_scope", "argument 'root' (world rank %d) is not a member of the group", root);
  bcast("armci_msg_group_bcast_scope", scope, buf, len, root, g);
} ARMCI_PEERS_END(void)

// ---------------------------------------------------------------- reductions

armci_api_peers(void, armci_msg_gop_scope, (int scope, void* x, int n, char* op, int type)) {
  gop("armci_msg_gop_scope", scope, x, n, op, type, default_group("armci_msg_gop_scope"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_reduce, (void* x, int n, char* op, int type)) {
  gop("armci_msg_reduce", SCOPE_ALL, x, n, op, type, default_group("armci_msg_reduce"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_reduce_scope, (int scope, void* x, int n, char* op, int type)) {
  gop("armci_msg_reduce_scope", scope, x, n, op, type, default_group("armci_msg_reduce_scope"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_group_gop_scope, (int scope, void* x, int n, char* op, int type, ARMCI_Group* group)) {
  gop("armci_msg_group_gop_scope", scope, x, n, op, type,
      member_group_of("armci_msg_group_gop_scope", "group", group));
} ARMCI_PEERS_END(void)

// The typed reductions of one element type, over all of the default group
// (armci_msg_Xgop) or of a group (armci_msg_group_Xgop).
#define ARMCI_MSG_TYPED_GOPS(X, ctype, type)                                                           \
  armci_api_peers(void, armci_msg_##X##gop, (ctype * x, int n, char* op)) {                             \
    gop("armci_msg_" #X "gop", SCOPE_ALL, x, n, op, type, default_group("armci_msg_" #X "gop"));         \
  } ARMCI_PEERS_END(void)                                                                               \
  armci_api_peers(void, armci_msg_group_##X##gop, (ctype * x, int n, char* op, ARMCI_Group* group)) {  \
    gop("armci_msg_group_" #X "gop", SCOPE_ALL, x, n, op, type,                                         \
        member_group_of("armci_msg_group_" #X "gop", "group", group));                                  \
  } ARMCI_PEERS_END(void)

ARMCI_MSG_TYPED_GOPS(i, int, ARMCI_INT)
ARMCI_MSG_TYPED_GOPS(l, long, ARMCI_LONG)
ARMCI_MSG_TYPED_GOPS(ll, long long, ARMCI_LONG_LONG)
ARMCI_MSG_TYPED_GOPS(f, float, ARMCI_FLOAT)
ARMCI_MSG_TYPED_GOPS(d, double, ARMCI_DOUBLE)

#undef ARMCI_MSG_TYPED_GOPS

// ---------------------------------------------------------------- selection

armci_api_peers(void, armci_msg_sel, (void* x, int n, char* op, int type, int contribute)) {
  sel("armci_msg_sel", SCOPE_ALL, x, n, op, type, contribute, default_group("armci_msg_sel"));
} ARMCI_PEERS_END(void)
armci_api_peers(void, armci_msg_sel_scope, (int scope, void* x, int n, char* op, int type, int contribute)) {
  sel("armci_msg_sel_scope", scope, x, n, op, type, contribute, default_group("armci_msg_sel_scope"));
} ARMCI_PEERS_END(void)
