// What the network tests share: test data, and a fixture that drives one
// network layer in one process. The contract suite (network_contract_test.cpp)
// runs it over every transport; a layer's own tests (test_ucx_network.cpp,
// test_verbs_network.cpp) build on it for what only that layer promises.
//
// Two shapes of one process:
//  * loopback: one network of size 1; peer 0 is this very process;
//  * pair: two networks of size 2 in this process, the origin (rank 0) and
//    the target (rank 1), so the data crosses between two endpoints the way
//    it does between processes (UCX then picks its shared-memory or tcp
//    transports instead of `self`).
// Each wait drives both networks: the target's progress may be what moves
// the data (tcp emulates RMA with messages) or runs a handler.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "platform/network.hpp"

namespace armci::platform::testing {

using Clock = std::chrono::steady_clock;

// Bytes that differ from neighbours and between seeds, so a misplaced or
// missing byte shows.
inline std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

inline std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

inline std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

template <class Pred>
bool progress_until(Network& net, Pred pred, double seconds = 60.0) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    net.progress();
    if (Clock::now() > end) return false;
  }
  return true;
}

// One way to reach a network layer on this machine.
struct Transport {
  std::string name;  // a test-name suffix: letters, digits and '_'
  std::function<std::unique_ptr<Network>(int rank, int size)> make;
  bool pair = false;  // two networks in this process instead of loopback
  // Empty when usable here; otherwise where the transport is tested instead.
  std::function<std::string()> unavailable = [] { return std::string(); };
};

// gtest prints the parameter of a failed test by this.
inline void PrintTo(const Transport& transport, std::ostream* out) { *out << transport.name; }

inline std::string transport_name(const ::testing::TestParamInfo<Transport>& info) { return info.param.name; }

class NetworkFixture {
 protected:
  // Builds the network(s) for `transport`; false (with a gtest failure) when
  // the layer would not start.
  void start(const Transport& transport) {
    transport_ = transport;
    if (!transport.pair) {
      net = transport.make(0, 1);
      std::vector<std::vector<std::byte>> addresses{net->local_address()};
      ASSERT_FALSE(addresses[0].empty());
      net->set_peer_addresses(std::move(addresses));
      peer = 0;
      return;
    }
    net = transport.make(0, 2);
    remote = transport.make(1, 2);
    std::vector<std::vector<std::byte>> addresses{net->local_address(), remote->local_address()};
    ASSERT_FALSE(addresses[0].empty());
    ASSERT_FALSE(addresses[1].empty());
    net->set_peer_addresses(addresses);
    remote->set_peer_addresses(std::move(addresses));
    peer = 1;
  }

  void stop() {
    for (RemoteKey k : keys) net->release_remote_key(k);
    for (MemoryHandle h : handles) target().deregister_memory(h);
    keys.clear();
    handles.clear();
    net.reset();
    remote.reset();
  }

  // The process whose memory the origin reaches and whose handlers run.
  Network& target() { return remote ? *remote : *net; }
  // The rank the target sees messages from.
  int origin_rank() const { return 0; }

  // Registers `buf` at the target; kept until the test ends.
  MemoryHandle reg_target(void* buf, std::size_t len) {
    MemoryHandle h = target().register_memory(buf, len);
    EXPECT_TRUE(h);
    handles.push_back(h);
    return h;
  }

  // Registers `buf` at the origin (a zero-copy source or destination).
  MemoryHandle reg_origin(void* buf, std::size_t len) {
    MemoryHandle h = net->register_memory(buf, len);
    EXPECT_TRUE(h);
    origin_handles.push_back(h);
    return h;
  }

  // Registers `buf` at the target and returns the origin's key for it.
  RemoteKey expose(void* buf, std::size_t len) {
    std::vector<std::byte> packed = target().pack_remote_key(reg_target(buf, len));
    EXPECT_FALSE(packed.empty());
    RemoteKey k = net->unpack_remote_key(peer, packed);
    EXPECT_TRUE(k);
    keys.push_back(k);
    return k;
  }

  // One round of progress on every network of the test.
  int progress() {
    int events = net->progress();
    if (remote) events += remote->progress();
    return events;
  }

  template <class Pred>
  bool until(Pred pred, double seconds = 60.0) {
    auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (!pred()) {
      progress();
      if (Clock::now() > end) return false;
    }
    return true;
  }

  void wait(Completion& c) {
    ASSERT_TRUE(until([&] { return c.done(); })) << "completion never finished";
    EXPECT_EQ(c.error.load(), 0) << net->error_string(c.error.load());
  }

  // Puts complete locally; a flush makes sure the data is in place.
  void wait_remote(Completion& c) {
    wait(c);
    Completion f;
    net->flush(peer, f);
    wait(f);
  }

  void release_origin_handles() {
    for (MemoryHandle h : origin_handles) net->deregister_memory(h);
    origin_handles.clear();
  }

  Transport transport_;
  std::unique_ptr<Network> net;     // the origin: every operation starts here
  std::unique_ptr<Network> remote;  // pair only: the target
  int peer = 0;                     // the target's rank as the origin sees it
  std::vector<MemoryHandle> handles;         // at the target
  std::vector<MemoryHandle> origin_handles;  // at the origin
  std::vector<RemoteKey> keys;               // at the origin
};

// A gtest fixture over one transport given directly (a layer's own tests).
class SingleTransportTest : public ::testing::Test, protected NetworkFixture {
 protected:
  virtual Transport transport() const = 0;
  void SetUp() override {
    const Transport t = transport();
    if (std::string why = t.unavailable(); !why.empty()) GTEST_SKIP() << why;
    start(t);
  }
  void TearDown() override {
    if (!net) return;
    release_origin_handles();
    stop();
  }
};

}  // namespace armci::platform::testing
