// Topology and identity: armci_domain_*, ARMCI_Same_node, ARMCI_Uses_shm,
// armci_msg_me / nproc / barrier.
#include "src/api/api.hpp"

using namespace armci::api;
using armci::fail;

namespace {

const armci::Peers& domain_peers(const char* call, armci_domain_t domain) {
  armci::Runtime& r = runtime(call);
  if (domain != ARMCI_DOMAIN_SMP) fail(call, "argument 'domain' (%d) is not ARMCI_DOMAIN_SMP", domain);
  return r.peers();
}

// A domain id as GA and ARMCI-MPI take it: -1 is the caller's own domain
// (GA asks ga_cluster_nprocs(-1) for the size of its node).
int domain_of(const char* call, const armci::Peers& peers, int id) {
  if (id == -1) return peers.node_of(peers.rank());
  if (id < 0 || id >= peers.node_count())
    fail(call, "argument 'id' (%d) is out of range [0, %d) and not -1 (this rank's domain)", id, peers.node_count());
  return id;
}

}  // namespace

armci_api(int, armci_domain_nprocs, (armci_domain_t domain, int id)) {
  const armci::Peers& peers = domain_peers("armci_domain_nprocs", domain);
  return static_cast<int>(peers.node_members(domain_of("armci_domain_nprocs", peers, id)).size());
}

armci_api(int, armci_domain_id, (armci_domain_t domain, int glob_proc_id)) {
  const armci::Peers& peers = domain_peers("armci_domain_id", domain);
  if (glob_proc_id < 0 || glob_proc_id >= peers.size())
    fail("armci_domain_id", "argument 'glob_proc_id' (%d) is out of range [0, %d)", glob_proc_id, peers.size());
  return peers.node_of(glob_proc_id);
}

armci_api(int, armci_domain_glob_proc_id, (armci_domain_t domain, int id, int loc_proc_id)) {
  const armci::Peers& peers = domain_peers("armci_domain_glob_proc_id", domain);
  const auto& members = peers.node_members(domain_of("armci_domain_glob_proc_id", peers, id));
  if (loc_proc_id < 0 || static_cast<std::size_t>(loc_proc_id) >= members.size())
    fail("armci_domain_glob_proc_id", "argument 'loc_proc_id' (%d) is out of range [0, %zu)", loc_proc_id,
         members.size());
  return members[static_cast<std::size_t>(loc_proc_id)];
}

armci_api(int, armci_domain_my_id, (armci_domain_t domain)) {
  const armci::Peers& peers = domain_peers("armci_domain_my_id", domain);
  return peers.node_of(peers.rank());
}

armci_api(int, armci_domain_count, (armci_domain_t domain)) {
  return domain_peers("armci_domain_count", domain).node_count();
}

armci_api(int, armci_domain_same_id, (armci_domain_t domain, int proc)) {
  armci::Runtime& r = runtime("armci_domain_same_id");
  const armci::Peers& peers = domain_peers("armci_domain_same_id", domain);
  check_proc("armci_domain_same_id", r, proc);
  return peers.same_node(proc);
}

ARMCI_API(int, ARMCI_Same_node, (int proc)) {
  armci::Runtime& r = runtime("ARMCI_Same_node");
  check_proc("ARMCI_Same_node", r, proc);
  return r.peers().same_node(proc);
}

ARMCI_API(int, ARMCI_Uses_shm, (void)) { return runtime("ARMCI_Uses_shm").settings().shared_memory ? 1 : 0; }

armci_api(int, armci_msg_me, (void)) { return runtime("armci_msg_me").rank(); }
armci_api(int, armci_msg_nproc, (void)) { return runtime("armci_msg_nproc").size(); }
armci_api(void, armci_msg_barrier, (void)) { runtime("armci_msg_barrier").barrier(); }
