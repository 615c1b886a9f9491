// Single-process tests of the UCX network layer: size 1, peer 0 is this
// process. Every test runs twice: with peer-failure detection (UCX 1.13 then
// only offers tcp, here over loopback) and without it, where UCX picks its
// `self` transport.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "platform/ucx/ucx_network.hpp"

namespace armci::platform {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

class UcxNetworkTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    net = make_ucx_network(0, 1, UcxOptions{std::string(GetParam()) == "peer"});
    std::vector<std::vector<std::byte>> addrs{net->local_address()};
    ASSERT_FALSE(addrs[0].empty());
    net->set_peer_addresses(std::move(addrs));
  }

  void TearDown() override {
    if (!net) return;
    for (RemoteKey k : keys) net->release_remote_key(k);
    for (MemoryHandle h : handles) net->deregister_memory(h);
    net.reset();
  }

  // Registers `buf` and returns a remote key for it as seen from peer 0.
  RemoteKey expose(void* buf, std::size_t len) {
    MemoryHandle h = net->register_memory(buf, len);
    EXPECT_TRUE(h);
    handles.push_back(h);
    std::vector<std::byte> packed = net->pack_remote_key(h);
    EXPECT_FALSE(packed.empty());
    RemoteKey k = net->unpack_remote_key(0, packed);
    EXPECT_TRUE(k);
    keys.push_back(k);
    return k;
  }

  template <class Pred>
  bool progress_until(Pred pred, double seconds = 20.0) {
    auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (!pred()) {
      net->progress();
      if (Clock::now() > end) return false;
    }
    return true;
  }

  void wait(Completion& c) {
    ASSERT_TRUE(progress_until([&] { return c.done(); })) << "completion never finished";
    EXPECT_EQ(c.error.load(), 0) << net->error_string(c.error.load());
  }

  // A put completes locally; the data is only known to be in place after a
  // flush.
  void wait_remote(Completion& c) {
    wait(c);
    Completion f;
    net->flush(0, f);
    wait(f);
  }

  static std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

  std::unique_ptr<Network> net;
  std::vector<MemoryHandle> handles;
  std::vector<RemoteKey> keys;
};

TEST_P(UcxNetworkTest, Capabilities) {
  const Capabilities& c = net->capabilities();
  EXPECT_EQ(c.name, "ucx");
  EXPECT_EQ(c.max_sge, 1u);
  EXPECT_GE(c.max_message, std::size_t(64) << 20);
  EXPECT_FALSE(c.atomics_coherent_with_cpu);
  EXPECT_FALSE(c.native_notify);
}

TEST_P(UcxNetworkTest, RegisterPackUnpack) {
  std::vector<std::byte> buf(4096);
  MemoryHandle h = net->register_memory(buf.data(), buf.size());
  ASSERT_TRUE(h);
  std::vector<std::byte> packed = net->pack_remote_key(h);
  ASSERT_FALSE(packed.empty());
  RemoteKey k = net->unpack_remote_key(0, packed);
  ASSERT_TRUE(k);
  net->release_remote_key(k);
  net->deregister_memory(h);
}

TEST_P(UcxNetworkTest, ZeroLengthRegistrations) {
  char c = 0;
  MemoryHandle a = net->register_memory(&c, 0);
  MemoryHandle b = net->register_memory(&c, 0);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  net->deregister_memory(a);
  net->deregister_memory(b);
}

TEST_P(UcxNetworkTest, TeardownReleasesLeftovers) {
  // Registrations and keys the caller forgot must not trip UCX at shutdown.
  std::vector<std::byte> buf(1 << 20);
  MemoryHandle h = net->register_memory(buf.data(), buf.size());
  RemoteKey k = net->unpack_remote_key(0, net->pack_remote_key(h));
  std::vector<std::byte> src(buf.size(), std::byte{1});
  LocalSegment s{src.data(), src.size()};
  Completion c;
  net->put(0, {&s, 1}, addr(buf.data()), k, c);
  wait_remote(c);
  net.reset();
}

TEST_P(UcxNetworkTest, UnknownHandlesRejected) {
  int x;
  EXPECT_THROW(net->deregister_memory(MemoryHandle{&x}), std::logic_error);
  EXPECT_THROW(net->release_remote_key(RemoteKey{&x}), std::logic_error);
}

TEST_P(UcxNetworkTest, PutSingleSegment) {
  std::vector<std::byte> dst(8192, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(5000, 1);
  LocalSegment seg{src.data(), src.size()};
  Completion c;
  net->put(0, {&seg, 1}, addr(dst.data()) + 100, k, c);
  wait_remote(c);
  EXPECT_EQ(std::memcmp(dst.data() + 100, src.data(), src.size()), 0);
  EXPECT_EQ(dst[99], std::byte{0});
  EXPECT_EQ(dst[100 + src.size()], std::byte{0});
}

TEST_P(UcxNetworkTest, PutGatherThreeSegments) {
  std::vector<std::byte> dst(1 << 16, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto a = pattern(17, 2), b = pattern(3000, 3), d = pattern(40000, 4);
  LocalSegment segs[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {d.data(), d.size()}};
  Completion c;
  net->put(0, segs, addr(dst.data()) + 8, k, c);
  wait_remote(c);
  std::vector<std::byte> expect;
  expect.insert(expect.end(), a.begin(), a.end());
  expect.insert(expect.end(), b.begin(), b.end());
  expect.insert(expect.end(), d.begin(), d.end());
  EXPECT_EQ(std::memcmp(dst.data() + 8, expect.data(), expect.size()), 0);
  EXPECT_EQ(dst[7], std::byte{0});
  EXPECT_EQ(dst[8 + expect.size()], std::byte{0});
}

TEST_P(UcxNetworkTest, GetScatter) {
  auto remote = pattern(70000, 5);
  RemoteKey k = expose(remote.data(), remote.size());
  std::vector<std::byte> a(100, std::byte{0}), b(1, std::byte{0}), d(60000, std::byte{0});
  LocalSegment segs[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {d.data(), d.size()}};
  Completion c;
  net->get(0, segs, addr(remote.data()) + 33, k, c);
  wait(c);
  EXPECT_EQ(std::memcmp(a.data(), remote.data() + 33, a.size()), 0);
  EXPECT_EQ(b[0], remote[133]);
  EXPECT_EQ(std::memcmp(d.data(), remote.data() + 134, d.size()), 0);
}

TEST_P(UcxNetworkTest, FetchAdd) {
  alignas(8) std::uint64_t target[2] = {40, 7};
  RemoteKey k = expose(target, sizeof target);
  std::uint64_t old = 0;
  Completion c;
  net->fetch_add(0, addr(&target[0]), k, 2, &old, c);
  wait(c);
  EXPECT_EQ(old, 40u);
  EXPECT_EQ(target[0], 42u);
  EXPECT_EQ(target[1], 7u);
  net->fetch_add(0, addr(&target[1]), k, 1000, &old, c);
  wait(c);
  EXPECT_EQ(old, 7u);
  EXPECT_EQ(target[1], 1007u);
}

TEST_P(UcxNetworkTest, CompareSwap) {
  alignas(8) std::uint64_t target = 5;
  RemoteKey k = expose(&target, sizeof target);
  std::uint64_t old = 0;
  Completion c;
  net->compare_swap(0, addr(&target), k, /*expected=*/5, /*desired=*/9, &old, c);
  wait(c);
  EXPECT_EQ(old, 5u);
  EXPECT_EQ(target, 9u);

  old = 0;
  net->compare_swap(0, addr(&target), k, /*expected=*/7, /*desired=*/11, &old, c);
  wait(c);
  EXPECT_EQ(old, 9u);
  EXPECT_EQ(target, 9u);

  // Expected equal to desired's slot value must not matter: swap 9 -> 0.
  net->compare_swap(0, addr(&target), k, 9, 0, &old, c);
  wait(c);
  EXPECT_EQ(old, 9u);
  EXPECT_EQ(target, 0u);
}

TEST_P(UcxNetworkTest, PutNotify) {
  std::vector<std::byte> dst(4096, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(1000, 6);
  const std::uint64_t before = net->notifications_received();
  LocalSegment segs[2] = {{src.data(), 400}, {src.data() + 400, 600}};
  Completion c;
  net->put_notify(0, segs, addr(dst.data()), k, 77, c);
  wait(c);
  ASSERT_TRUE(progress_until([&] { return net->notifications_received() == before + 1; }));
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  // No stray extra notification.
  for (int i = 0; i < 100; ++i) net->progress();
  EXPECT_EQ(net->notifications_received(), before + 1);

  net->put_notify(0, segs, addr(dst.data()), k, 78, c);
  wait(c);
  ASSERT_TRUE(progress_until([&] { return net->notifications_received() == before + 2; }));
}

TEST_P(UcxNetworkTest, ReservedMessageIdRejected) {
  EXPECT_THROW(net->set_message_handler(255, [](int, auto, auto) {}), std::invalid_argument);
}

struct Received {
  int count = 0;
  int source = -1;
  std::vector<std::byte> header, payload;
};

class UcxMessageTest : public UcxNetworkTest {
 protected:
  void roundtrip(std::size_t payload_size, const std::string& hdr, std::uint8_t id) {
    Received got;
    net->set_message_handler(id, [&](int src, std::span<const std::byte> h,
                                     std::span<const std::byte> p) {
      ++got.count;
      got.source = src;
      got.header.assign(h.begin(), h.end());
      got.payload.assign(p.begin(), p.end());
    });
    auto payload = pattern(payload_size, static_cast<unsigned>(payload_size));
    Completion c;
    net->send_message(0, id, bytes_of(hdr), payload, c);
    wait(c);
    ASSERT_TRUE(progress_until([&] { return got.count == 1; })) << "handler never ran";
    EXPECT_EQ(got.source, 0);
    ASSERT_EQ(got.header.size(), hdr.size());
    EXPECT_TRUE(std::equal(got.header.begin(), got.header.end(), bytes_of(hdr).begin()));
    ASSERT_EQ(got.payload.size(), payload.size());
    EXPECT_TRUE(got.payload == payload);
    for (int i = 0; i < 50; ++i) net->progress();
    EXPECT_EQ(got.count, 1);
    net->set_message_handler(id, nullptr);
  }
};

TEST_P(UcxMessageTest, Small) { roundtrip(16, "header-bytes", 3); }
TEST_P(UcxMessageTest, EmptyHeaderAndPayload) { roundtrip(0, "", 0); }
TEST_P(UcxMessageTest, OneMiB) { roundtrip(1 << 20, "hdr-1MiB", 7); }
TEST_P(UcxMessageTest, FourMiB) { roundtrip(4 << 20, std::string(200, 'h'), 254); }

TEST_P(UcxNetworkTest, ManyMessagesInFlight) {
  int count = 0;
  std::uint64_t sum = 0;
  net->set_message_handler(9, [&](int, std::span<const std::byte> h,
                                  std::span<const std::byte> p) {
    ++count;
    std::uint32_t v;
    std::memcpy(&v, h.data(), sizeof v);
    sum += v + p.size();
  });
  std::vector<std::uint32_t> hdrs(300);
  std::iota(hdrs.begin(), hdrs.end(), 1u);
  auto payload = pattern(20000, 9);
  Completion c;
  for (auto& h : hdrs) {
    net->send_message(0, 9, {reinterpret_cast<const std::byte*>(&h), sizeof h}, payload, c);
  }
  wait(c);
  ASSERT_TRUE(progress_until([&] { return count == 300; }));
  EXPECT_EQ(sum, 300u * 301u / 2u + 300u * 20000u);
}

TEST_P(UcxNetworkTest, HandlerExceptionSurfacesFromProgress) {
  net->set_message_handler(4, [](int, auto, auto) { throw std::runtime_error("boom"); });
  Completion c;
  net->send_message(0, 4, {}, {}, c);
  bool thrown = false;
  auto end = Clock::now() + std::chrono::seconds(20);
  while (!thrown && Clock::now() < end) {
    try {
      net->progress();
    } catch (const std::runtime_error& e) {
      thrown = std::string(e.what()) == "boom";
    }
  }
  EXPECT_TRUE(thrown);
  wait(c);
}

TEST_P(UcxNetworkTest, OrderPutsOverlapping) {
  std::vector<std::byte> dst(1024, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto first = pattern(1024, 10), second = pattern(1024, 11);
  LocalSegment s1{first.data(), first.size()}, s2{second.data(), second.size()};
  Completion c;
  net->put(0, {&s1, 1}, addr(dst.data()), k, c);
  net->order(0);
  net->put(0, {&s2, 1}, addr(dst.data()), k, c);
  wait_remote(c);
  EXPECT_TRUE(dst == second);
}

TEST_P(UcxNetworkTest, FlushPeerAndAll) {
  // Nothing issued yet to anyone: flush has nothing to wait for.
  Completion idle;
  net->flush(0, idle);
  EXPECT_TRUE(idle.done());

  std::vector<std::byte> dst(1 << 20, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(dst.size(), 12);
  LocalSegment s{src.data(), src.size()};
  Completion puts, fl;
  net->put(0, {&s, 1}, addr(dst.data()), k, puts);
  net->flush(0, fl);
  wait(fl);
  wait(puts);
  EXPECT_TRUE(dst == src);

  auto src2 = pattern(dst.size(), 13);
  LocalSegment s2{src2.data(), src2.size()};
  Completion puts2, all;
  net->put(0, {&s2, 1}, addr(dst.data()), k, puts2);
  net->flush_all(all);
  wait(all);
  wait(puts2);
  EXPECT_TRUE(dst == src2);
}

TEST_P(UcxNetworkTest, ErrorString) {
  EXPECT_EQ(net->error_string(0), "Success");
  std::string a = net->error_string(-4);  // UCS_ERR_NO_MEMORY
  std::string b = net->error_string(-3);  // UCS_ERR_INVALID_PARAM
  EXPECT_FALSE(a.empty());
  EXPECT_FALSE(b.empty());
  EXPECT_NE(a, b);
  EXPECT_NE(a.find("memory"), std::string::npos) << a;
}

TEST_P(UcxNetworkTest, Wakeup) {
  int fd = net->wakeup_fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(net->wakeup_fd(), fd);
  ASSERT_TRUE(progress_until([&] { return net->arm_wakeup(); }));
  // Armed with nothing pending: the descriptor must not report work.
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);

  // Produce work; the fd must become readable or the work already be done.
  int count = 0;
  net->set_message_handler(1, [&](int, auto, auto) { ++count; });
  Completion c;
  net->send_message(0, 1, {}, {}, c);
  int r = ::poll(&p, 1, 200);
  EXPECT_GE(r, 0);
  ASSERT_TRUE(progress_until([&] { return count == 1 && c.done(); }));
  ASSERT_TRUE(progress_until([&] { return net->arm_wakeup(); }));
}

INSTANTIATE_TEST_SUITE_P(ErrMode, UcxNetworkTest, ::testing::Values("peer", "none"));
INSTANTIATE_TEST_SUITE_P(ErrMode, UcxMessageTest, ::testing::Values("peer", "none"));

TEST(UcxNetworkPeers, EmptyAddressIsLogicError) {
  auto net = make_ucx_network(0, 2);
  net->set_peer_addresses({net->local_address(), {}});
  std::vector<std::byte> buf(64);
  MemoryHandle h = net->register_memory(buf.data(), buf.size());
  auto packed = net->pack_remote_key(h);
  try {
    net->unpack_remote_key(1, packed);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("peer 1"), std::string::npos) << e.what();
  }
  RemoteKey k = net->unpack_remote_key(0, packed);
  LocalSegment s{buf.data(), 8};
  Completion c;
  EXPECT_THROW(net->put(1, {&s, 1}, reinterpret_cast<std::uintptr_t>(buf.data()), k, c),
               std::logic_error);
  EXPECT_THROW(net->put(2, {&s, 1}, reinterpret_cast<std::uintptr_t>(buf.data()), k, c),
               std::logic_error);
  EXPECT_TRUE(c.done());
  net->release_remote_key(k);
  net->deregister_memory(h);
}

TEST(UcxNetworkPeers, BadRankRejected) {
  EXPECT_THROW(make_ucx_network(2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace armci::platform
