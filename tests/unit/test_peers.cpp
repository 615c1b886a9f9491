// The topology part: virtual nodes, node numbering and peer kinds from the
// host names alone.
#include <gtest/gtest.h>

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
