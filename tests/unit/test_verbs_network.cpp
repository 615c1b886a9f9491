// Tests of the verbs network layer.
//
// Without an RDMA device (the host CI) every test skips. With one (e.g. the
// Soft-RoCE VM: /work/shared/rxe-vm/run-in-rxe-vm.sh BINARY) the single-process
// tests run at size 1, where peer 0 is this process and its RC QP is
// connected to itself.
//
// Pair mode: VERBS_PAIR_RANK=r VERBS_PAIR_SIZE=n VERBS_PAIR_DIR=dir, one
// instance per rank started together (gtest filter VerbsPair.*). They swap
// local_address() bytes and remote keys through files in dir, connect lazily
// (rank 0 talks to everyone, the others only to rank 0, all starting at once
// so connections are requested from both ends simultaneously) and check data.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "platform/verbs/verbs_network.hpp"

namespace armci::platform {
namespace {

using Clock = std::chrono::steady_clock;

bool device_present() {
  static const bool present = verbs_device_available();
  return present;
}

#define REQUIRE_DEVICE()                                                                  \
  do {                                                                                    \
    if (!device_present())                                                                \
      GTEST_SKIP() << "no RDMA device with an ACTIVE port; run this binary inside "       \
                      "/work/shared/rxe-vm/run-in-rxe-vm.sh to test the verbs layer";     \
  } while (0)

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Drives `net` the way the core's progress thread does: progress, arm, and
// sleep on the descriptor. Returns the number of sleeps, or -1 on timeout.
// `spins` counts arm_wakeup() refusals (it must not busy-loop).
template <class Pred>
int sleep_until(Network& net, Pred pred, int& spins, double seconds = 60.0) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  int sleeps = 0;
  spins = 0;
  const int fd = net.wakeup_fd();
  while (!pred()) {
    if (Clock::now() > end) return -1;
    while (net.progress() > 0) {
    }
    if (pred()) break;
    if (!net.arm_wakeup()) {
      ++spins;
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 5000);
    ++sleeps;
  }
  return sleeps;
}

template <class Pred>
bool progress_until(Network& net, Pred pred, double seconds = 60.0) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    net.progress();
    if (Clock::now() > end) return false;
  }
  return true;
}

class VerbsSelf : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_DEVICE();
    net = make_verbs_network(0, 1);
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

  MemoryHandle reg(void* buf, std::size_t len) {
    MemoryHandle h = net->register_memory(buf, len);
    EXPECT_TRUE(h);
    handles.push_back(h);
    return h;
  }

  // Registers `buf` and returns a remote key for it as seen from peer 0.
  RemoteKey expose(void* buf, std::size_t len) {
    MemoryHandle h = reg(buf, len);
    RemoteKey k = net->unpack_remote_key(0, net->pack_remote_key(h));
    EXPECT_TRUE(k);
    keys.push_back(k);
    return k;
  }

  template <class Pred>
  bool until(Pred pred, double seconds = 60.0) {
    return progress_until(*net, pred, seconds);
  }

  void wait(Completion& c) {
    ASSERT_TRUE(until([&] { return c.done(); })) << "completion never finished";
    EXPECT_EQ(c.error.load(), 0) << net->error_string(c.error.load());
  }

  // Puts complete locally; a flush makes sure the data is in place.
  void wait_remote(Completion& c) {
    wait(c);
    Completion f;
    net->flush(0, f);
    wait(f);
  }

  std::unique_ptr<Network> net;
  std::vector<MemoryHandle> handles;
  std::vector<RemoteKey> keys;
};

TEST_F(VerbsSelf, Capabilities) {
  const Capabilities& c = net->capabilities();
  EXPECT_EQ(c.name, "verbs");
  EXPECT_GE(c.max_sge, 1u);
  EXPECT_EQ(c.max_message, 8192u - 16u);
  EXPECT_GE(c.max_outstanding_reads, 1u);
  EXPECT_FALSE(c.atomics_coherent_with_cpu);
  EXPECT_TRUE(c.native_notify);
  std::printf("[ info     ] max_sge=%zu max_inline=%zu max_message=%zu max_outstanding_reads=%zu\n",
              c.max_sge, c.max_inline, c.max_message, c.max_outstanding_reads);
}

TEST_F(VerbsSelf, ConnectsOnFirstUseOnly) {
  std::vector<std::byte> buf(4096);
  RemoteKey k = expose(buf.data(), buf.size());
  EXPECT_EQ(verbs_stats(*net).rc_qps, 0u);
  Completion idle;
  net->flush(0, idle);  // nothing issued: no connection either
  net->order(0);
  EXPECT_TRUE(idle.done());
  for (int i = 0; i < 20; ++i) net->progress();
  EXPECT_EQ(verbs_stats(*net).rc_qps, 0u);

  std::uint64_t v = 7;
  LocalSegment s{&v, sizeof v};
  Completion c;
  net->put(0, {&s, 1}, addr(buf.data()), k, c);
  EXPECT_EQ(verbs_stats(*net).rc_qps, 1u);
  wait_remote(c);
  EXPECT_EQ(std::memcmp(buf.data(), &v, sizeof v), 0);
  VerbsStats st = verbs_stats(*net);
  EXPECT_EQ(st.rc_qps, 1u);
  EXPECT_EQ(st.connected_peers, 1u);
  EXPECT_EQ(st.queued_operations, 0u);
}

TEST_F(VerbsSelf, RegisterPackUnpackAndUnknownHandles) {
  std::vector<std::byte> buf(4096);
  MemoryHandle h = net->register_memory(buf.data(), buf.size());
  ASSERT_TRUE(h);
  auto packed = net->pack_remote_key(h);
  RemoteKey k = net->unpack_remote_key(0, packed);
  ASSERT_TRUE(k);
  net->release_remote_key(k);
  net->deregister_memory(h);

  char c = 0;
  MemoryHandle a = net->register_memory(&c, 0);
  MemoryHandle b = net->register_memory(&c, 0);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  net->deregister_memory(a);
  net->deregister_memory(b);

  int x;
  EXPECT_THROW(net->deregister_memory(MemoryHandle{&x}), std::logic_error);
  EXPECT_THROW(net->release_remote_key(RemoteKey{&x}), std::logic_error);
  EXPECT_THROW(net->unpack_remote_key(0, std::span<const std::byte>(packed).first(5)),
               std::invalid_argument);
}

TEST_F(VerbsSelf, PutInlineSize) {
  const std::size_t n = std::max<std::size_t>(1, std::min<std::size_t>(
                                                     net->capabilities().max_inline, 200));
  std::vector<std::byte> dst(1024, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(n, 1);
  LocalSegment s{src.data(), src.size()};
  Completion c;
  net->put(0, {&s, 1}, addr(dst.data()) + 5, k, c);
  // Inline data is copied at post time: the source may change right away.
  auto keep = src;
  wait(c);
  std::fill(src.begin(), src.end(), std::byte{0xee});
  Completion f;
  net->flush(0, f);
  wait(f);
  EXPECT_EQ(std::memcmp(dst.data() + 5, keep.data(), n), 0);
  EXPECT_EQ(dst[4], std::byte{0});
  EXPECT_EQ(dst[5 + n], std::byte{0});
}

TEST_F(VerbsSelf, PutBounceRegisteredAndLarge) {
  const std::size_t big = (3u << 20) / 2 + 4093;  // 1.5 MiB and odd
  std::vector<std::byte> dst(big + 16384, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());

  // Small, unregistered: through a bounce buffer.
  auto small = pattern(3000, 2);
  LocalSegment s1{small.data(), small.size()};
  // Large, unregistered: registered for this operation only.
  auto large = pattern(big, 3);
  LocalSegment s2{large.data(), large.size()};
  // Registered source: zero copy.
  auto regd = pattern(6000, 4);
  reg(regd.data(), regd.size());
  LocalSegment s3{regd.data() + 1000, 5000};

  Completion c;
  net->put(0, {&s1, 1}, addr(dst.data()), k, c);
  net->put(0, {&s2, 1}, addr(dst.data()) + 4000, k, c);
  net->put(0, {&s3, 1}, addr(dst.data()) + 4000 + big, k, c);
  wait_remote(c);
  EXPECT_EQ(std::memcmp(dst.data(), small.data(), small.size()), 0);
  EXPECT_EQ(dst[3000], std::byte{0});
  EXPECT_EQ(std::memcmp(dst.data() + 4000, large.data(), big), 0);
  EXPECT_EQ(std::memcmp(dst.data() + 4000 + big, regd.data() + 1000, 5000), 0);
  EXPECT_EQ(dst[4000 + big + 5000], std::byte{0});
}

TEST_F(VerbsSelf, PutGather) {
  std::vector<std::byte> dst(1 << 21, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto check = [&](std::span<const LocalSegment> segs, std::size_t offset) {
    Completion c;
    net->put(0, segs, addr(dst.data()) + offset, k, c);
    wait_remote(c);
    std::size_t at = offset;
    for (const LocalSegment& s : segs) {
      EXPECT_EQ(std::memcmp(dst.data() + at, s.address, s.length), 0) << "segment at " << at;
      at += s.length;
    }
    EXPECT_EQ(dst[at], std::byte{0});
    std::fill(dst.begin(), dst.end(), std::byte{0});
  };
  // Tiny pieces (inline), a bounce-sized mix with an empty segment, and a
  // large mix of registered and unregistered pieces.
  auto a = pattern(17, 5), b = pattern(3, 6), d = pattern(900, 7), e = pattern(40000, 8);
  auto f = pattern(700000, 9), g = pattern(300000, 10);
  reg(f.data(), f.size());
  LocalSegment tiny[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {a.data(), 5}};
  check(tiny, 8);
  LocalSegment mid[4] = {{a.data(), a.size()}, {b.data(), 0}, {d.data(), d.size()},
                         {b.data(), b.size()}};
  check(mid, 1);
  LocalSegment mix[4] = {{e.data(), e.size()}, {f.data(), f.size()}, {g.data(), g.size()},
                         {a.data(), a.size()}};
  check(mix, 64);
  // More segments than one work request takes.
  std::vector<std::vector<std::byte>> parts;
  std::vector<LocalSegment> many;
  for (unsigned i = 0; i < 70; ++i) parts.push_back(pattern(1000 + 37 * i, 20 + i));
  for (auto& p : parts) many.push_back({p.data(), p.size()});
  ASSERT_GT(many.size(), net->capabilities().max_sge);
  check(many, 3);
}

TEST_F(VerbsSelf, GetScatter) {
  auto remote = pattern(3 << 20, 11);
  RemoteKey k = expose(remote.data(), remote.size());
  auto check = [&](std::vector<std::vector<std::byte>>& bufs, std::size_t offset) {
    std::vector<LocalSegment> segs;
    for (auto& b : bufs) segs.push_back({b.data(), b.size()});
    Completion c;
    net->get(0, segs, addr(remote.data()) + offset, k, c);
    wait(c);
    std::size_t at = offset;
    for (auto& b : bufs) {
      if (b.empty()) continue;
      EXPECT_EQ(std::memcmp(b.data(), remote.data() + at, b.size()), 0) << "segment at " << at;
      at += b.size();
    }
  };
  std::vector<std::vector<std::byte>> small = {std::vector<std::byte>(100),
                                               std::vector<std::byte>(1),
                                               std::vector<std::byte>(2000)};
  check(small, 33);  // through a bounce buffer, copied out on completion
  std::vector<std::vector<std::byte>> large = {std::vector<std::byte>(5000),
                                               std::vector<std::byte>(0),
                                               std::vector<std::byte>(1 << 20),
                                               std::vector<std::byte>(77)};
  check(large, 4096 + 3);
  std::vector<std::vector<std::byte>> many;
  for (unsigned i = 0; i < 50; ++i) many.push_back(std::vector<std::byte>(500 + i));
  check(many, 12345);

  // Into registered memory: zero copy.
  std::vector<std::byte> into(2 << 20);
  reg(into.data(), into.size());
  LocalSegment s{into.data() + 8, (2 << 20) - 16};
  Completion c;
  net->get(0, {&s, 1}, addr(remote.data()) + 1, k, c);
  wait(c);
  EXPECT_EQ(std::memcmp(into.data() + 8, remote.data() + 1, s.length), 0);
}

TEST_F(VerbsSelf, SplitsByMessageSizeAndSge) {
  // A fresh network whose limits force many work requests per operation.
  net.reset();
  handles.clear();
  keys.clear();
  VerbsOptions options;
  options.max_msg = 4096;
  options.max_sge = 2;
  options.sq_depth = 8;
  options.rd_atomic = 2;
  net = make_verbs_network(0, 1, options);
  net->set_peer_addresses({net->local_address()});
  EXPECT_EQ(net->capabilities().max_sge, 2u);
  EXPECT_LE(net->capabilities().max_inline, 4096u);
  std::vector<std::byte> dst(300000, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto a = pattern(100000, 30), b = pattern(50, 31), d = pattern(123457, 32);
  LocalSegment segs[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {d.data(), d.size()}};
  Completion c;
  net->put_notify(0, segs, addr(dst.data()) + 10, k, 5, c);
  wait(c);
  ASSERT_TRUE(until([&] { return net->notifications_received() == 1; }));
  EXPECT_EQ(std::memcmp(dst.data() + 10, a.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(dst.data() + 10 + a.size(), b.data(), b.size()), 0);
  EXPECT_EQ(std::memcmp(dst.data() + 10 + a.size() + b.size(), d.data(), d.size()), 0);

  std::vector<std::byte> x(70001), y(3), z(100000);
  LocalSegment back[3] = {{x.data(), x.size()}, {y.data(), y.size()}, {z.data(), z.size()}};
  Completion g;
  net->get(0, back, addr(dst.data()) + 10, k, g);
  wait(g);
  std::vector<std::byte> joined;
  for (auto* v : {&x, &y, &z}) joined.insert(joined.end(), v->begin(), v->end());
  EXPECT_EQ(std::memcmp(joined.data(), dst.data() + 10, joined.size()), 0);
}

TEST_F(VerbsSelf, FetchAdd) {
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
  // Wider than 32 bits, and wrapping.
  target[0] = 0xfffffffffffffff0ull;
  net->fetch_add(0, addr(&target[0]), k, 0x20, &old, c);
  wait(c);
  EXPECT_EQ(old, 0xfffffffffffffff0ull);
  EXPECT_EQ(target[0], 0x10u);
}

TEST_F(VerbsSelf, CompareSwap) {
  alignas(8) std::uint64_t target = 5;
  RemoteKey k = expose(&target, sizeof target);
  std::uint64_t old = 0;
  Completion c;
  net->compare_swap(0, addr(&target), k, 5, 0x123456789abcdefull, &old, c);
  wait(c);
  EXPECT_EQ(old, 5u);
  EXPECT_EQ(target, 0x123456789abcdefull);

  old = 0;
  net->compare_swap(0, addr(&target), k, 7, 11, &old, c);  // fails: value unchanged
  wait(c);
  EXPECT_EQ(old, 0x123456789abcdefull);
  EXPECT_EQ(target, 0x123456789abcdefull);
}

TEST_F(VerbsSelf, ManyAtomicsAndReadsQueue) {
  // Far more than max_rd_atomic reads/atomics at once: they queue.
  alignas(8) std::uint64_t counter = 0;
  RemoteKey k = expose(&counter, sizeof counter);
  auto remote = pattern(4096, 40);
  RemoteKey rk = expose(remote.data(), remote.size());
  constexpr int kN = 600;
  std::vector<std::uint64_t> olds(kN, ~0ull);
  std::vector<std::uint64_t> gets(kN, 0);
  Completion c;
  for (int i = 0; i < kN; ++i) {
    net->fetch_add(0, addr(&counter), k, 1, &olds[static_cast<std::size_t>(i)], c);
    LocalSegment s{&gets[static_cast<std::size_t>(i)], 8};
    net->get(0, {&s, 1}, addr(remote.data()) + 8 * (static_cast<std::size_t>(i) % 512), rk, c);
  }
  wait(c);
  EXPECT_EQ(counter, static_cast<std::uint64_t>(kN));
  std::sort(olds.begin(), olds.end());
  for (int i = 0; i < kN; ++i) ASSERT_EQ(olds[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(std::memcmp(&gets[static_cast<std::size_t>(i)],
                          remote.data() + 8 * (static_cast<std::size_t>(i) % 512), 8), 0);
  }
}

TEST_F(VerbsSelf, PutNotify) {
  std::vector<std::byte> dst(1 << 20, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(1000, 6);
  const std::uint64_t before = net->notifications_received();
  LocalSegment segs[2] = {{src.data(), 400}, {src.data() + 400, 600}};
  Completion c;
  net->put_notify(0, segs, addr(dst.data()), k, 77, c);
  wait(c);
  ASSERT_TRUE(until([&] { return net->notifications_received() == before + 1; }));
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  for (int i = 0; i < 100; ++i) net->progress();
  EXPECT_EQ(net->notifications_received(), before + 1);

  // Large: the data is in place once the counter moves.
  auto big = pattern(dst.size() - 64, 7);
  LocalSegment b{big.data(), big.size()};
  net->put_notify(0, {&b, 1}, addr(dst.data()) + 64, k, 78, c);
  ASSERT_TRUE(until([&] { return net->notifications_received() == before + 2; }));
  EXPECT_EQ(std::memcmp(dst.data() + 64, big.data(), big.size()), 0);
  wait(c);

  // Zero bytes still notify.
  net->put_notify(0, {}, addr(dst.data()), k, 79, c);
  wait(c);
  ASSERT_TRUE(until([&] { return net->notifications_received() == before + 3; }));
}

struct Received {
  int count = 0;
  int source = -1;
  std::vector<std::byte> header, payload;
};

TEST_F(VerbsSelf, MessagesExactBytes) {
  auto roundtrip = [&](std::size_t payload_size, const std::string& hdr, std::uint8_t id) {
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
    ASSERT_TRUE(until([&] { return got.count == 1; })) << "handler never ran";
    EXPECT_EQ(got.source, 0);
    ASSERT_EQ(got.header.size(), hdr.size());
    EXPECT_TRUE(std::equal(got.header.begin(), got.header.end(), bytes_of(hdr).begin()));
    ASSERT_EQ(got.payload.size(), payload.size());
    EXPECT_TRUE(got.payload == payload);
    for (int i = 0; i < 50; ++i) net->progress();
    EXPECT_EQ(got.count, 1);
    net->set_message_handler(id, nullptr);
  };
  const std::size_t max = net->capabilities().max_message;
  roundtrip(16, "header-bytes", 3);
  roundtrip(0, "", 0);
  roundtrip(3000, std::string(40, 'h'), 255);
  roundtrip(max - 24, std::string(24, 'm'), 7);  // exactly the maximum
  roundtrip(max, "", 8);

  Completion c;
  std::vector<std::byte> too_big(max + 1);
  EXPECT_THROW(net->send_message(0, 1, {}, too_big, c), std::length_error);
  EXPECT_THROW(net->send_message(0, 1, bytes_of("x"), std::span(too_big).first(max), c),
               std::length_error);
  EXPECT_TRUE(c.done());
}

TEST_F(VerbsSelf, ManyMessagesBeyondBuffers) {
  // More than the posted receives and the registered send buffers.
  int count = 0;
  std::uint64_t sum = 0;
  net->set_message_handler(9, [&](int, std::span<const std::byte> h,
                                  std::span<const std::byte> p) {
    ++count;
    std::uint32_t v;
    std::memcpy(&v, h.data(), sizeof v);
    sum += v + p.size();
    EXPECT_EQ(p[p.size() - 1], std::byte(v & 0xff));
  });
  constexpr unsigned kN = 700;
  std::vector<std::uint32_t> hdrs(kN);
  std::iota(hdrs.begin(), hdrs.end(), 1u);
  Completion c;
  for (auto& h : hdrs) {
    auto payload = pattern(4000 + h % 7, 1);
    payload.back() = std::byte(h & 0xff);
    net->send_message(0, 9, {reinterpret_cast<const std::byte*>(&h), sizeof h}, payload, c);
  }
  wait(c);
  ASSERT_TRUE(until([&] { return count == static_cast<int>(kN); }));
  std::uint64_t expect = 0;
  for (auto h : hdrs) expect += h + 4000 + h % 7;
  EXPECT_EQ(sum, expect);
}

TEST_F(VerbsSelf, HandlerMayReplyAndThrow) {
  // A handler that sends (as the core's acks do), then one that throws.
  int replies = 0;
  net->set_message_handler(2, [&](int, auto, auto) { ++replies; });
  Completion static_acks;
  net->set_message_handler(1, [&](int src, std::span<const std::byte> h, auto) {
    net->send_message(src, 2, h, {}, static_acks);
  });
  Completion c;
  std::uint64_t token = 99;
  net->send_message(0, 1, {reinterpret_cast<const std::byte*>(&token), 8}, {}, c);
  ASSERT_TRUE(until([&] { return replies == 1 && c.done() && static_acks.done(); }));

  net->set_message_handler(4, [](int, auto, auto) { throw std::runtime_error("boom"); });
  net->send_message(0, 4, {}, {}, c);
  bool thrown = false;
  auto end = Clock::now() + std::chrono::seconds(60);
  while (!thrown && Clock::now() < end) {
    try {
      net->progress();
    } catch (const std::runtime_error& e) {
      thrown = std::string(e.what()) == "boom";
    }
  }
  EXPECT_TRUE(thrown);
  wait(c);
  // The receive buffer went back: messages still flow.
  net->send_message(0, 1, {reinterpret_cast<const std::byte*>(&token), 8}, {}, c);
  ASSERT_TRUE(until([&] { return replies == 2; }));
}

TEST_F(VerbsSelf, Order) {
  std::vector<std::byte> dst(64 * 1024, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto first = pattern(dst.size(), 10), second = pattern(dst.size(), 11);
  LocalSegment s1{first.data(), first.size()}, s2{second.data(), second.size()};
  Completion c;
  net->put(0, {&s1, 1}, addr(dst.data()), k, c);
  net->order(0);
  net->put(0, {&s2, 1}, addr(dst.data()), k, c);
  wait_remote(c);
  EXPECT_TRUE(dst == second);

  // A get, then (ordered) a put over the same bytes: the get sees the old data.
  std::vector<std::byte> seen(dst.size());
  LocalSegment g{seen.data(), seen.size()};
  net->get(0, {&g, 1}, addr(dst.data()), k, c);
  net->order(0);
  net->put(0, {&s1, 1}, addr(dst.data()), k, c);
  wait_remote(c);
  EXPECT_TRUE(seen == second);
  EXPECT_TRUE(dst == first);

  // An atomic, then (ordered) a put of the same word.
  alignas(8) std::uint64_t word = 1;
  RemoteKey wk = expose(&word, 8);
  std::uint64_t old = 0, three = 3;
  LocalSegment w{&three, 8};
  net->fetch_add(0, addr(&word), wk, 10, &old, c);
  net->order(0);
  net->put(0, {&w, 1}, addr(&word), wk, c);
  wait_remote(c);
  EXPECT_EQ(old, 1u);
  EXPECT_EQ(word, 3u);
}

TEST_F(VerbsSelf, FlushPeerAndAll) {
  Completion idle;
  net->flush(0, idle);
  net->flush_all(idle);
  EXPECT_TRUE(idle.done());

  std::vector<std::byte> dst(1 << 20, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(dst.size(), 12);
  LocalSegment s{src.data(), src.size()};
  Completion puts, fl;
  net->put(0, {&s, 1}, addr(dst.data()), k, puts);
  net->flush(0, fl);
  wait(fl);
  EXPECT_TRUE(puts.done());  // flush completes after what came before it
  EXPECT_TRUE(dst == src);

  auto src2 = pattern(dst.size(), 13);
  LocalSegment s2{src2.data(), src2.size()};
  Completion puts2, all;
  net->put(0, {&s2, 1}, addr(dst.data()), k, puts2);
  net->flush_all(all);
  wait(all);
  EXPECT_TRUE(puts2.done());
  EXPECT_TRUE(dst == src2);
}

TEST_F(VerbsSelf, ThousandsOfOutstandingPuts) {
  // Far beyond the send queue, the CQ budget and the bounce buffers, issued
  // without progress in between: everything queues and drains.
  constexpr std::size_t kSmall = 5000, kMid = 1500, kMidSize = 1000;
  std::vector<std::byte> dst(kSmall * 8 + kMid * kMidSize, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  std::vector<std::uint64_t> small(kSmall);
  for (std::size_t i = 0; i < kSmall; ++i) small[i] = i * 2654435761u + 1;
  auto mid = pattern(kMid * kMidSize, 14);
  Completion c;
  for (std::size_t i = 0; i < kSmall; ++i) {
    LocalSegment s{&small[i], 8};
    net->put(0, {&s, 1}, addr(dst.data()) + 8 * i, k, c);
  }
  for (std::size_t i = 0; i < kMid; ++i) {
    LocalSegment s{mid.data() + i * kMidSize, kMidSize};
    net->put(0, {&s, 1}, addr(dst.data()) + kSmall * 8 + i * kMidSize, k, c);
  }
  EXPECT_GT(verbs_stats(*net).queued_operations, 0u);
  wait_remote(c);
  EXPECT_EQ(std::memcmp(dst.data(), small.data(), kSmall * 8), 0);
  EXPECT_EQ(std::memcmp(dst.data() + kSmall * 8, mid.data(), mid.size()), 0);
  EXPECT_EQ(verbs_stats(*net).queued_operations, 0u);
}

TEST_F(VerbsSelf, WorkCompletionErrorsNameThePeer) {
  std::vector<std::byte> buf(4096);
  MemoryHandle h = reg(buf.data(), buf.size());
  auto packed = net->pack_remote_key(h);
  // A key the target never issued.
  std::uint32_t rkey;
  std::memcpy(&rkey, packed.data() + 16, 4);
  rkey ^= 0x00ffff00u;
  std::memcpy(packed.data() + 16, &rkey, 4);
  RemoteKey bad = net->unpack_remote_key(0, packed);
  keys.push_back(bad);

  std::vector<std::byte> into(64);
  LocalSegment s{into.data(), into.size()};
  Completion c;
  net->get(0, {&s, 1}, addr(buf.data()), bad, c);
  ASSERT_TRUE(until([&] { return c.done(); }));
  const int code = c.error.load();
  ASSERT_NE(code, 0);
  const std::string text = net->error_string(code);
  std::printf("[ info     ] %s\n", text.c_str());
  EXPECT_NE(text.find("peer 0"), std::string::npos) << text;
  EXPECT_NE(text.find("RDMA READ"), std::string::npos) << text;
  EXPECT_TRUE(text.find(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)) != std::string::npos ||
              text.find(ibv_wc_status_str(IBV_WC_REM_INV_REQ_ERR)) != std::string::npos)
      << text;

  // The QP is in error now: later operations finish at once, with an error.
  RemoteKey good = expose(buf.data(), buf.size());
  std::uint64_t v = 1;
  LocalSegment p{&v, 8};
  Completion later;
  net->put(0, {&p, 1}, addr(buf.data()), good, later);
  EXPECT_TRUE(later.done());
  EXPECT_NE(later.error.load(), 0);
  std::string t2 = net->error_string(later.error.load());
  EXPECT_NE(t2.find("peer 0"), std::string::npos) << t2;
  EXPECT_NE(t2.find("RDMA WRITE"), std::string::npos) << t2;
  Completion msg, fl;
  net->send_message(0, 1, {}, {}, msg);
  net->flush(0, fl);
  EXPECT_TRUE(msg.done() && msg.error.load() != 0);
  EXPECT_TRUE(fl.done() && fl.error.load() != 0);
  EXPECT_EQ(net->error_string(0), "Success");
}

TEST_F(VerbsSelf, Wakeup) {
  // The connection itself (handshake timers included) advances while the
  // caller sleeps on the descriptor between progress calls.
  int count = 0;
  net->set_message_handler(1, [&](int, auto, auto) { ++count; });
  Completion c;
  net->send_message(0, 1, {}, {}, c);
  int spins = 0;
  EXPECT_GE(sleep_until(*net, [&] { return count == 1 && c.done(); }, spins), 0);
  EXPECT_LT(spins, 100);

  int fd = net->wakeup_fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(net->wakeup_fd(), fd);
  ASSERT_TRUE(until([&] { return net->arm_wakeup(); }));
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // armed and idle: nothing to report

  net->send_message(0, 1, {}, std::vector<std::byte>(5000), c);
  EXPECT_EQ(::poll(&p, 1, 20000), 1) << "no wakeup for a completion";
  ASSERT_TRUE(until([&] { return count == 2 && c.done(); }));
  ASSERT_TRUE(until([&] { return net->arm_wakeup(); }));
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TEST_F(VerbsSelf, WakeupForPeersOnly) {
  // Armed for peers only, a sleeper is not woken by its own put completing
  // (whoever waits for the put reaps it), but is by a message arriving;
  // armed for everything, the same put wakes it.
  std::vector<std::byte> buf(4096);
  RemoteKey k = expose(buf.data(), buf.size());
  auto src = pattern(1024, 21);
  LocalSegment s{src.data(), src.size()};
  Completion c;
  net->put(0, {&s, 1}, addr(buf.data()), k, c);
  wait_remote(c);  // connected
  const int fd = net->wakeup_fd();
  pollfd p{fd, POLLIN, 0};
  auto put_and_reap = [&] {
    Completion done;
    net->put(0, {&s, 1}, addr(buf.data()), k, done);
    wait_remote(done);
  };

  ASSERT_TRUE(until([&] { return net->arm_wakeup(); }));
  put_and_reap();
  EXPECT_EQ(::poll(&p, 1, 20000), 1) << "armed for everything: no wakeup for our own put";

  ASSERT_TRUE(until([&] { return net->arm_wakeup_for_peers(); }));
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  put_and_reap();
  // The device signals a completion asynchronously: give an unwanted event
  // time to show.
  EXPECT_EQ(::poll(&p, 1, 300), 0) << "armed for peers only: woken by our own put";

  int count = 0;
  net->set_message_handler(2, [&](int, auto, auto) { ++count; });
  Completion m;
  net->send_message(0, 2, {}, {}, m);
  EXPECT_EQ(::poll(&p, 1, 20000), 1) << "armed for peers only: no wakeup for a message";
  ASSERT_TRUE(until([&] { return count == 1 && m.done(); }));
}

TEST_F(VerbsSelf, TeardownReleasesLeftovers) {
  std::vector<std::byte> buf(1 << 20);
  MemoryHandle h = net->register_memory(buf.data(), buf.size());
  RemoteKey k = net->unpack_remote_key(0, net->pack_remote_key(h));
  auto src = pattern(buf.size(), 15);
  LocalSegment s{src.data(), src.size()};
  Completion c;
  net->put(0, {&s, 1}, addr(buf.data()), k, c);
  wait_remote(c);
  // Left in flight on purpose: the destructor must cope.
  net->put(0, {&s, 1}, addr(buf.data()), k, c);
  net.reset();
}

// ---------------------------------------------------------------------------
// more than one peer in one process

TEST(VerbsPeers, ArgumentsChecked) {
  REQUIRE_DEVICE();
  EXPECT_THROW(make_verbs_network(2, 2), std::invalid_argument);
  auto net = make_verbs_network(0, 2);
  EXPECT_THROW(net->set_peer_addresses({net->local_address()}), std::invalid_argument);
  EXPECT_THROW(net->set_peer_addresses({net->local_address(), std::vector<std::byte>(5)}),
               std::invalid_argument);
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
  EXPECT_THROW(net->put(1, {&s, 1}, addr(buf.data()), k, c), std::logic_error);
  EXPECT_THROW(net->put(2, {&s, 1}, addr(buf.data()), k, c), std::logic_error);
  EXPECT_TRUE(c.done());
  net->release_remote_key(k);
  net->deregister_memory(h);
}

TEST(VerbsPeers, UnansweredHandshakeFailsWithoutHanging) {
  REQUIRE_DEVICE();
  VerbsOptions options;
  options.connect_timeout = 2;
  auto net = make_verbs_network(0, 2, options);
  // Peer 1 "lives" at a UD QP number nobody owns.
  auto ghost = net->local_address();
  std::uint32_t qpn;
  std::memcpy(&qpn, ghost.data() + 12, 4);
  qpn = (qpn + 0x1000) & 0xffffff;
  std::memcpy(ghost.data() + 12, &qpn, 4);
  net->set_peer_addresses({net->local_address(), ghost});
  std::vector<std::byte> buf(64);
  MemoryHandle h = net->register_memory(buf.data(), buf.size());
  RemoteKey k = net->unpack_remote_key(1, net->pack_remote_key(h));
  std::uint64_t v = 3;
  LocalSegment s{&v, 8};
  Completion c;
  net->put(1, {&s, 1}, addr(buf.data()), k, c);
  std::vector<std::byte> big(100000);
  LocalSegment sb{big.data(), big.size()};
  net->get(1, {&sb, 1}, addr(buf.data()), k, c);
  EXPECT_FALSE(c.done());
  EXPECT_EQ(verbs_stats(*net).queued_operations, 2u);
  // Asleep on the descriptor: retransmission timers and the deadline wake
  // it, a few times rather than in a busy loop.
  int spins = 0;
  const int sleeps = sleep_until(*net, [&] { return c.done(); }, spins, 30);
  ASSERT_GE(sleeps, 1);
  EXPECT_LT(sleeps + spins, 100) << sleeps << " sleeps, " << spins << " spins";
  const std::string text = net->error_string(c.error.load());
  EXPECT_NE(text.find("peer 1"), std::string::npos) << text;
  EXPECT_NE(text.find("handshake"), std::string::npos) << text;
  EXPECT_EQ(verbs_stats(*net).rc_qps, 1u);
  EXPECT_EQ(verbs_stats(*net).queued_operations, 0u);
  net->release_remote_key(k);
  net->deregister_memory(h);
}

// ---------------------------------------------------------------------------
// pair mode: several processes

class Files {
 public:
  Files(std::string dir, int rank, int size) : dir_(std::move(dir)), rank_(rank), size_(size) {}

  void publish(const std::string& what, std::span<const std::byte> bytes) const {
    const std::string final_name = name(what, rank_);
    const std::string tmp = final_name + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    }
    ASSERT_EQ(std::rename(tmp.c_str(), final_name.c_str()), 0);
  }

  // Waits for every rank's `what`, driving `net` meanwhile (peers may need
  // our progress to finish their handshakes and operations).
  std::vector<std::vector<std::byte>> gather(const std::string& what, Network* net) const {
    std::vector<std::vector<std::byte>> all(static_cast<std::size_t>(size_));
    auto end = Clock::now() + std::chrono::seconds(300);
    for (int r = 0; r < size_; ++r) {
      for (;;) {
        std::ifstream in(name(what, r), std::ios::binary);
        if (in) {
          std::vector<char> raw{std::istreambuf_iterator<char>(in), {}};
          auto& dst = all[static_cast<std::size_t>(r)];
          dst.resize(raw.size());
          if (!raw.empty()) std::memcpy(dst.data(), raw.data(), raw.size());
          break;
        }
        if (Clock::now() > end) throw std::runtime_error("pair mode: rank " + std::to_string(r) +
                                                         " never published " + what);
        if (net) {
          for (int i = 0; i < 50; ++i) net->progress();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    return all;
  }

  void barrier(const std::string& what, Network* net) const {
    publish(what, {});
    gather(what, net);
  }

 private:
  std::string name(const std::string& what, int r) const {
    return dir_ + "/" + what + "." + std::to_string(r);
  }
  std::string dir_;
  int rank_, size_;
};

struct Window {
  static constexpr std::size_t kSlice = 512 * 1024;  // one per origin rank
  std::uint64_t counter = 0;                          // fetch_add target
  std::uint64_t cas[8] = {};                          // one per origin rank
};

TEST(VerbsPair, LazyConnectionsAndData) {
  const char* rank_env = std::getenv("VERBS_PAIR_RANK");
  const char* dir = std::getenv("VERBS_PAIR_DIR");
  if (rank_env == nullptr || dir == nullptr) {
    GTEST_SKIP() << "pair mode: start one instance per rank with VERBS_PAIR_RANK, "
                    "VERBS_PAIR_SIZE (default 2) and a shared VERBS_PAIR_DIR";
  }
  REQUIRE_DEVICE();
  const int rank = std::atoi(rank_env);
  const int size = std::getenv("VERBS_PAIR_SIZE") ? std::atoi(std::getenv("VERBS_PAIR_SIZE")) : 2;
  ASSERT_TRUE(size >= 2 && size <= 8 && rank >= 0 && rank < size);
  Files files(dir, rank, size);

  auto net = make_verbs_network(rank, size);
  files.publish("addr", net->local_address());
  net->set_peer_addresses(files.gather("addr", nullptr));

  // The window: one slice per origin, plus atomics.
  std::vector<std::byte> slices(Window::kSlice * static_cast<std::size_t>(size), std::byte{0});
  Window win;
  MemoryHandle hs = net->register_memory(slices.data(), slices.size());
  MemoryHandle hw = net->register_memory(&win, sizeof win);
  struct Published {
    std::uint64_t slices, window;
    std::byte ks[24], kw[24];
  } mine{};
  mine.slices = addr(slices.data());
  mine.window = addr(&win);
  auto pk = net->pack_remote_key(hs), pw = net->pack_remote_key(hw);
  ASSERT_EQ(pk.size(), 24u);
  std::memcpy(mine.ks, pk.data(), 24);
  std::memcpy(mine.kw, pw.data(), 24);
  files.publish("keys", std::as_bytes(std::span(&mine, 1)));
  auto all = files.gather("keys", net.get());

  std::vector<int> partners;
  for (int q = 0; q < size; ++q) {
    if (q != rank && (rank == 0 || q == 0)) partners.push_back(q);
  }
  std::vector<Published> theirs(static_cast<std::size_t>(size));
  std::vector<RemoteKey> kslices(static_cast<std::size_t>(size)), kwin(static_cast<std::size_t>(size));
  for (int q : partners) {
    auto& t = theirs[static_cast<std::size_t>(q)];
    ASSERT_EQ(all[static_cast<std::size_t>(q)].size(), sizeof t);
    std::memcpy(&t, all[static_cast<std::size_t>(q)].data(), sizeof t);
    kslices[static_cast<std::size_t>(q)] = net->unpack_remote_key(q, {t.ks, 24});
    kwin[static_cast<std::size_t>(q)] = net->unpack_remote_key(q, {t.kw, 24});
  }
  EXPECT_EQ(verbs_stats(*net).rc_qps, 0u) << "connections must wait for first use";

  int messages = 0;
  std::vector<int> message_from(static_cast<std::size_t>(size), 0);
  net->set_message_handler(7, [&](int src, std::span<const std::byte> h,
                                  std::span<const std::byte> p) {
    ++messages;
    ++message_from[static_cast<std::size_t>(src)];
    std::uint32_t origin;
    std::memcpy(&origin, h.data(), 4);
    EXPECT_EQ(static_cast<int>(origin), src);
    auto expect = pattern(p.size(), 500 + static_cast<unsigned>(src));
    EXPECT_TRUE(std::equal(p.begin(), p.end(), expect.begin())) << "payload from " << src;
  });

  // Everyone starts at once: rank 0 and each partner request the connection
  // from both ends.
  files.barrier("go", net.get());
  const std::size_t kLarge = 300 * 1024;
  auto data_for = [&](int q) {
    return pattern(Window::kSlice, 100u * static_cast<unsigned>(rank) + static_cast<unsigned>(q));
  };
  std::vector<std::vector<std::byte>> outgoing(static_cast<std::size_t>(size));
  Completion c;
  std::vector<std::uint64_t> fadd_old(static_cast<std::size_t>(size), ~0ull);
  const std::uint32_t me = static_cast<std::uint32_t>(rank);
  for (int q : partners) {
    auto& out = outgoing[static_cast<std::size_t>(q)] = data_for(q);
    const auto& t = theirs[static_cast<std::size_t>(q)];
    const std::uint64_t base = t.slices + Window::kSlice * static_cast<std::size_t>(rank);
    RemoteKey ks = kslices[static_cast<std::size_t>(q)];
    LocalSegment inl{out.data(), 48};                       // inline
    LocalSegment bnc[2] = {{out.data() + 48, 1000}, {out.data() + 1048, 1000}};  // bounce
    LocalSegment lg{out.data() + 2048, kLarge};             // registered on the fly
    net->put(q, {&inl, 1}, base, ks, c);
    net->put(q, bnc, base + 48, ks, c);
    net->put(q, {&lg, 1}, base + 2048, ks, c);
    net->fetch_add(q, t.window + offsetof(Window, counter), kwin[static_cast<std::size_t>(q)],
                   static_cast<std::uint64_t>(rank) + 1, &fadd_old[static_cast<std::size_t>(q)], c);
    auto payload = pattern(5000, 500 + me);
    net->send_message(q, 7, {reinterpret_cast<const std::byte*>(&me), 4}, payload, c);
    auto max_payload = pattern(net->capabilities().max_message - 4, 500 + me);
    net->send_message(q, 7, {reinterpret_cast<const std::byte*>(&me), 4}, max_payload, c);
    LocalSegment tail{out.data() + 2048 + kLarge, 4096};
    net->put_notify(q, {&tail, 1}, base + 2048 + kLarge, ks, me, c);
  }
  ASSERT_TRUE(progress_until(*net, [&] { return c.done(); }, 300));
  ASSERT_EQ(c.error.load(), 0) << net->error_string(c.error.load());
  Completion fl;
  net->flush_all(fl);
  ASSERT_TRUE(progress_until(*net, [&] { return fl.done(); }, 300));
  ASSERT_EQ(fl.error.load(), 0) << net->error_string(fl.error.load());
  files.barrier("written", net.get());

  // What the partners put here is in place, and all their notifications and
  // messages arrived (they flushed before the barrier).
  ASSERT_TRUE(progress_until(*net, [&] {
    return messages == 2 * static_cast<int>(partners.size()) &&
           net->notifications_received() == partners.size();
  }, 120));
  std::uint64_t expect_counter = 0;
  for (int q : partners) {
    const std::size_t used = 2048 + kLarge + 4096;
    auto expect = pattern(Window::kSlice, 100u * static_cast<unsigned>(q) + static_cast<unsigned>(rank));
    EXPECT_EQ(std::memcmp(slices.data() + Window::kSlice * static_cast<std::size_t>(q),
                          expect.data(), used), 0) << "data from rank " << q;
    EXPECT_EQ(message_from[static_cast<std::size_t>(q)], 2);
    expect_counter += static_cast<std::uint64_t>(q) + 1;
  }
  EXPECT_EQ(win.counter, expect_counter);

  // Read back what this rank wrote, and swap.
  for (int q : partners) {
    const auto& t = theirs[static_cast<std::size_t>(q)];
    std::vector<std::byte> back(2048 + kLarge + 4096);
    std::vector<std::byte> small(100);
    LocalSegment segs[2] = {{small.data(), small.size()}, {back.data() + 100, back.size() - 100}};
    Completion g;
    net->get(q, segs, t.slices + Window::kSlice * static_cast<std::size_t>(rank),
             kslices[static_cast<std::size_t>(q)], g);
    std::uint64_t old1 = 1, old2 = 1;
    const std::uint64_t cas_at = t.window + offsetof(Window, cas) + 8 * static_cast<std::size_t>(rank);
    net->compare_swap(q, cas_at, kwin[static_cast<std::size_t>(q)], 0, 1000 + me, &old1, g);
    net->compare_swap(q, cas_at, kwin[static_cast<std::size_t>(q)], 0, 2000 + me, &old2, g);
    ASSERT_TRUE(progress_until(*net, [&] { return g.done(); }, 300));
    ASSERT_EQ(g.error.load(), 0) << net->error_string(g.error.load());
    std::memcpy(back.data(), small.data(), small.size());
    EXPECT_EQ(std::memcmp(back.data(), outgoing[static_cast<std::size_t>(q)].data(), back.size()), 0);
    EXPECT_EQ(old1, 0u);
    EXPECT_EQ(old2, 1000u + me);
    EXPECT_NE(fadd_old[static_cast<std::size_t>(q)], ~0ull);
  }

  const VerbsStats st = verbs_stats(*net);
  std::printf("[ info     ] rank %d: %zu RC QP(s), %zu connected peer(s), size %d\n", rank,
              st.rc_qps, st.connected_peers, size);
  EXPECT_EQ(st.rc_qps, partners.size()) << "one RC QP per peer actually used";
  EXPECT_EQ(st.connected_peers, partners.size());
  files.barrier("checked", net.get());
  for (int q = 0; q < size; ++q) {
    if (win.cas[q] != 0) {
      EXPECT_EQ(win.cas[q], 1000u + static_cast<unsigned>(q));
    }
  }

  // Passive side: rank 1 never asks rank 2 for anything; rank 2's first
  // operation makes rank 1 create and connect a QP inside its progress().
  std::vector<RemoteKey> extra;
  if (size >= 3) {
    auto out = pattern(20000, 777);
    if (rank == 2) {
      Published t;
      std::memcpy(&t, all[1].data(), sizeof t);
      RemoteKey k = net->unpack_remote_key(1, {t.ks, 24});
      extra.push_back(k);
      LocalSegment s{out.data(), out.size()};
      Completion pc;
      net->put(1, {&s, 1}, t.slices + Window::kSlice * 2, k, pc);
      std::vector<std::byte> back(out.size());
      LocalSegment g{back.data(), back.size()};
      net->order(1);
      net->get(1, {&g, 1}, t.slices + Window::kSlice * 2, k, pc);
      ASSERT_TRUE(progress_until(*net, [&] { return pc.done(); }, 300));
      ASSERT_EQ(pc.error.load(), 0) << net->error_string(pc.error.load());
      EXPECT_TRUE(back == out);
    }
    files.barrier("passive", net.get());
    if (rank == 1) {
      EXPECT_EQ(std::memcmp(slices.data() + Window::kSlice * 2, out.data(), out.size()), 0);
    }
    if (rank == 1 || rank == 2) {
      EXPECT_EQ(verbs_stats(*net).rc_qps, 2u);
      EXPECT_EQ(verbs_stats(*net).connected_peers, 2u);
    }
  }
  files.barrier("exit", net.get());
  for (RemoteKey k : extra) net->release_remote_key(k);
  for (int q : partners) {
    net->release_remote_key(kslices[static_cast<std::size_t>(q)]);
    net->release_remote_key(kwin[static_cast<std::size_t>(q)]);
  }
  net->deregister_memory(hs);
  net->deregister_memory(hw);
}

}  // namespace
}  // namespace armci::platform
