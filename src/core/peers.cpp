#include "src/core/peers.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "src/core/names.hpp"

namespace armci {

namespace {
constexpr Named<PeerKind> kPeerKindNames[] = {{"self", PeerKind::self},
                                              {"shm", PeerKind::shared_memory},
                                              {"net-host", PeerKind::network_host},
                                              {"net", PeerKind::network}};
}  // namespace

const char* to_string(PeerKind kind) { return name_of(kPeerKindNames, kind); }

Peers::Peers(int rank, std::vector<std::string> hosts, int vnode_size, bool shared_memory, int cpus_on_host)
    : rank_(rank), size_(static_cast<int>(hosts.size())), hosts_(std::move(hosts)) {
  // Ranks of one host, in rank order, cut into virtual nodes of vnode_size.
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < size_; ++r) by_host[hosts_[index(r)]].push_back(r);
  for (auto& [host, ranks] : by_host) {
    const std::size_t group = vnode_size > 0 ? static_cast<std::size_t>(vnode_size) : ranks.size();
    for (std::size_t start = 0; start < ranks.size(); start += group)
      node_members_.emplace_back(ranks.begin() + static_cast<std::ptrdiff_t>(start),
                                 ranks.begin() + static_cast<std::ptrdiff_t>(std::min(start + group, ranks.size())));
  }
  std::sort(node_members_.begin(), node_members_.end(),
            [](const std::vector<int>& a, const std::vector<int>& b) { return a[0] < b[0]; });
  node_of_.assign(index(size_), -1);
  for (std::size_t n = 0; n < node_members_.size(); ++n)
    for (int m : node_members_[n]) node_of_[index(m)] = static_cast<int>(n);

  kind_.assign(index(size_), PeerKind::network);
  for (int r = 0; r < size_; ++r) {
    PeerKind& kind = kind_[index(r)];
    if (r == rank_) kind = PeerKind::self;
    else if (shared_memory && node_of(r) == node_of(rank_)) kind = PeerKind::shared_memory;
    else if (hosts_[index(r)] == hosts_[index(rank_)]) kind = PeerKind::network_host;
    if (kind == PeerKind::shared_memory) neighbours_share_memory_ = true;
    if (is_network(kind)) has_network_peers_ = true;
    present_[static_cast<std::size_t>(kind)] = true;
  }
  const long cpus = cpus_on_host > 0 ? cpus_on_host : sysconf(_SC_NPROCESSORS_ONLN);
  cores_shared_on_host_ = static_cast<long>(by_host[hosts_[index(rank_)]].size()) > cpus;
}

std::vector<std::byte> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<std::byte> bytes(sizeof set);
  std::memcpy(bytes.data(), &set, sizeof set);
  return bytes;
}

int cpus_in_union(std::span<const std::vector<std::byte>> sets) {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (const std::vector<std::byte>& bytes : sets) {
    if (bytes.size() != sizeof(cpu_set_t)) return 0;  // a rank could not tell: unknown
    cpu_set_t one;
    std::memcpy(&one, bytes.data(), sizeof one);
    CPU_OR(&all, &all, &one);
  }
  return CPU_COUNT(&all);
}

}  // namespace armci
