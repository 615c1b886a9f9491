// The topology part: virtual nodes, node numbering and peer kinds from the
// host names alone.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <string>
#include <vector>

#include "src/core/peers.hpp"

using armci::PeerKind;
using armci::Peers;

TEST(Peers, OneHostIsOneNodeOfNeighbours) {
  const Peers peers(1, {"a", "a", "a"}, 0, true);
  EXPECT_EQ(1, peers.node_count());
  EXPECT_EQ((std::vector<int>{0, 1, 2}), peers.node_members(0));
  EXPECT_EQ(PeerKind::shared_memory, peers.kind(0));
  EXPECT_EQ(PeerKind::self, peers.kind(1));
  EXPECT_FALSE(peers.has_network_peers());
  EXPECT_TRUE(peers.neighbours_share_memory());
}

TEST(Peers, VirtualNodesCutEachHostInRankOrder) {
  // Hosts interleaved: nodes are cut per host, numbered by their lowest rank.
  const Peers peers(2, {"a", "b", "a", "b", "a"}, 2, true);
  ASSERT_EQ(3, peers.node_count());
  EXPECT_EQ((std::vector<int>{0, 2}), peers.node_members(0));
  EXPECT_EQ((std::vector<int>{1, 3}), peers.node_members(1));
  EXPECT_EQ((std::vector<int>{4}), peers.node_members(2));
  EXPECT_EQ(PeerKind::shared_memory, peers.kind(0));
  EXPECT_EQ(PeerKind::network, peers.kind(1));       // another host
  EXPECT_EQ(PeerKind::network_host, peers.kind(4));  // this host, another virtual node
  EXPECT_TRUE(peers.has_network_peers());
  EXPECT_TRUE(peers.same_node(0));
  EXPECT_FALSE(peers.same_node(4));
}

TEST(Peers, WithoutSharedMemoryNeighboursAreNetworkPeersOnThisHost) {
  const Peers peers(0, {"a", "a"}, 0, false);
  EXPECT_EQ(PeerKind::self, peers.kind(0));
  EXPECT_EQ(PeerKind::network_host, peers.kind(1));
  EXPECT_TRUE(peers.has_network_peers());
  EXPECT_FALSE(peers.neighbours_share_memory());
  EXPECT_TRUE(peers.same_node(1));  // still one node: ARMCI_SHM=0 changes the path, not the topology
  EXPECT_TRUE(peers.kind_present(PeerKind::network_host));
  EXPECT_FALSE(peers.kind_present(PeerKind::shared_memory));
}

namespace {
std::vector<std::byte> cpu_set_of(std::vector<int> cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  std::vector<std::byte> bytes(sizeof set);
  std::memcpy(bytes.data(), &set, sizeof set);
  return bytes;
}
}  // namespace

// Ranks bound to a core each do not share one; ranks confined to one core
// (a container's cpuset, or unbound under `taskset -c 0`) do, whatever the
// machine's online count. Every rank of the host decides the same.
TEST(Peers, CoresAreSharedWhenTheHostsRanksOutnumberTheirCpus) {
  const std::vector<std::vector<std::byte>> bound{cpu_set_of({0}), cpu_set_of({1})};
  const std::vector<std::vector<std::byte>> confined{cpu_set_of({3}), cpu_set_of({3})};
  EXPECT_EQ(2, armci::cpus_in_union(bound));
  EXPECT_EQ(1, armci::cpus_in_union(confined));
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(Peers(r, {"a", "a", "b"}, 0, true, armci::cpus_in_union(bound)).cores_shared_on_host());
    EXPECT_TRUE(Peers(r, {"a", "a", "b"}, 0, true, armci::cpus_in_union(confined)).cores_shared_on_host());
  }
  EXPECT_FALSE(Peers(2, {"a", "a", "b"}, 0, true, armci::cpus_in_union(confined)).cores_shared_on_host());
  // A rank that could not read its set makes the count unknown: the online count.
  const std::vector<std::vector<std::byte>> unknown{cpu_set_of({0}), {}};
  EXPECT_EQ(0, armci::cpus_in_union(unknown));
}

TEST(Peers, AllowedCpusAreThisProcesssAffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(0, sched_getaffinity(0, sizeof set, &set));
  const std::vector<std::vector<std::byte>> mine{armci::allowed_cpus()};
  EXPECT_EQ(CPU_COUNT(&set), armci::cpus_in_union(mine));
}
