// Peers and topology: who this process is, the host of every rank, the
// (virtual) nodes, and how each peer is reached (self, node-shared memory,
// network). Built once at start-up from everyone's host name and never
// changed, so any part and any thread may read it without a lock.
//
// Owns: rank, size, host names, node map, peer kinds, same-host flags.
// Called by: every other part (routes, allocation, atomics), the API's
// topology calls (armci_domain_*), and later groups and collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace armci {

// How this process reaches a peer's memory. network_host: a network peer on
// this very host (the layer may move its data with the calling CPU).
enum class PeerKind : std::uint8_t { self, shared_memory, network_host, network };
constexpr int kPeerKinds = 4;
const char* to_string(PeerKind kind);
constexpr bool is_network(PeerKind kind) { return kind == PeerKind::network_host || kind == PeerKind::network; }

class Peers {
 public:
  // hosts: every rank's host name (index = rank). vnode_size > 0 cuts the
  // ranks of one host into virtual nodes of that many consecutive ranks;
  // shared_memory = false reaches even node neighbours through the network.
  // cpus_on_host: how many CPUs this host's ranks may run on together
  // (cpus_in_union of their allowed_cpus); 0: unknown, the online count.
  Peers(int rank, std::vector<std::string> hosts, int vnode_size, bool shared_memory, int cpus_on_host = 0);

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& host(int proc) const { return hosts_[index(proc)]; }
  PeerKind kind(int proc) const { return kind_[index(proc)]; }
  bool reached_by_network(int proc) const { return is_network(kind(proc)); }

  // Topology: the (virtual) node of each rank; nodes are numbered in the
  // order of their lowest rank.
  int node_of(int proc) const { return node_of_[index(proc)]; }
  int node_count() const { return static_cast<int>(node_members_.size()); }
  const std::vector<int>& node_members(int node) const { return node_members_[static_cast<std::size_t>(node)]; }
  bool same_node(int proc) const { return node_of(proc) == node_of(rank_); }

  // Some rank is reached through the network (the same answer at every rank).
  bool has_network_peers() const { return has_network_peers_; }
  // Some other rank maps this process's segments (so they must be named).
  bool neighbours_share_memory() const { return neighbours_share_memory_; }
  // The peer kinds present in this job, for the info output.
  bool kind_present(PeerKind kind) const { return present_[static_cast<std::size_t>(kind)]; }

  // More ranks on this host than CPUs they may run on: a rank that waits
  // must give its CPU away instead of polling. The same answer at every
  // rank of the host, which the collectives' choice of protocol relies on.
  bool cores_shared_on_host() const { return cores_shared_on_host_; }

 private:
  static std::size_t index(int proc) { return static_cast<std::size_t>(proc); }

  int rank_;
  int size_;
  std::vector<std::string> hosts_;
  std::vector<PeerKind> kind_;
  std::vector<int> node_of_;
  std::vector<std::vector<int>> node_members_;
  bool has_network_peers_ = false;
  bool neighbours_share_memory_ = false;
  bool present_[kPeerKinds] = {};
  bool cores_shared_on_host_ = false;
};

// The CPUs this process may run on, as bytes to exchange at start-up. The
// union over a host's ranks counts what a container's cpuset or a batch
// allocation gives the job there, where the online count shows the whole
// machine; each rank's own set alone would not do (a launcher binds each
// to a core of its own, which they do not share).
std::vector<std::byte> allowed_cpus();
int cpus_in_union(std::span<const std::vector<std::byte>> sets);

}  // namespace armci
