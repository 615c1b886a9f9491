// The network contract: what platform/network.hpp promises, each case
// written once and run against every transport this machine has (the
// instantiation suffix names it):
//   ucx_self  UCX, loopback (peer 0 is this process: UCX's `self`);
//   ucx_shm   UCX, two networks in this process (shared-memory transports);
//   ucx_tcp   UCX with peer-failure detection, two networks (UCX 1.13 then
//             offers tcp only, here over loopback);
//   verbs     raw verbs, loopback (an RC QP connected to itself);
//   verbs_pair raw verbs, two networks in this process (a handshake and an
//             RC QP at each end). Both only where a device has an active
//             port: the Soft-RoCE VM suite (scripts/test-verbs-vm.sh) runs
//             them, and a host run says so.
// What only one layer does (its limits, connection handling, its error
// texts) stays in test_ucx_network.cpp and test_verbs_network.cpp.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.h"
#include "tests/unit/network_fixture.hpp"
#ifdef ARMCI_HAVE_UCX
#include "platform/ucx/ucx_network.hpp"
#endif
#ifdef ARMCI_HAVE_VERBS
#include "platform/verbs/verbs_network.hpp"
#endif

namespace armci::platform::testing {
namespace {

std::vector<Transport> all_transports() {
  std::vector<Transport> all;
#ifdef ARMCI_HAVE_UCX
  auto ucx = [](bool detect_failures) {
    return [detect_failures](int rank, int size) { return make_ucx_network(rank, size, UcxOptions{detect_failures}); };
  };
  all.push_back({"ucx_self", ucx(false), false});
  all.push_back({"ucx_shm", ucx(false), true});
  all.push_back({"ucx_tcp", ucx(true), true});
#endif
#ifdef ARMCI_HAVE_VERBS
  auto verbs_absent = [] {
    return verbs_device_available() ? std::string()
                                    : std::string("no RDMA device with an active port on this machine");
  };
  auto verbs = [](int rank, int size) { return make_verbs_network(rank, size); };
  all.push_back({"verbs", verbs, false, verbs_absent});
  all.push_back({"verbs_pair", verbs, true, verbs_absent});
#endif
  return all;
}

std::vector<Transport> usable_transports() {
  std::vector<Transport> usable;
  for (Transport& t : all_transports())
    if (t.unavailable().empty()) usable.push_back(std::move(t));
  return usable;
}

// Says once per run which transports this machine lacks and where their
// instantiation runs instead, so a missing one is never a silent gap.
class AbsentTransports : public ::testing::Environment {
 public:
  void SetUp() override {
    for (const Transport& t : all_transports())
      if (std::string why = t.unavailable(); !why.empty())
        std::printf("[ contract ] NetworkContract/%s not instantiated here: %s; scripts/test-verbs-vm.sh runs it "
                    "in the Soft-RoCE VM\n",
                    t.name.c_str(), why.c_str());
  }
};
[[maybe_unused]] ::testing::Environment* const absent_transports =
    ::testing::AddGlobalTestEnvironment(new AbsentTransports);

class NetworkContract : public ::testing::TestWithParam<Transport>, protected NetworkFixture {
 protected:
  void SetUp() override { start(GetParam()); }
  void TearDown() override {
    if (!net) return;
    release_origin_handles();
    stop();
  }

  // Puts `segments` at `offset` of `dst` (zeroed, registered at the target)
  // and checks every byte written and the bytes on both sides.
  void put_and_check(std::vector<std::byte>& dst, RemoteKey key, std::span<const LocalSegment> segments,
                     std::size_t offset) {
    std::fill(dst.begin(), dst.end(), std::byte{0});
    Completion c;
    net->put(peer, segments, addr(dst.data()) + offset, key, c);
    wait_remote(c);
    std::size_t at = offset;
    for (const LocalSegment& s : segments) {
      if (s.length > 0) {
        EXPECT_EQ(std::memcmp(dst.data() + at, s.address, s.length), 0) << "segment at " << at;
      }
      at += s.length;
    }
    if (offset > 0) {
      EXPECT_EQ(dst[offset - 1], std::byte{0}) << "byte before the put";
    }
    if (at < dst.size()) {
      EXPECT_EQ(dst[at], std::byte{0}) << "byte after the put";
    }
  }

  // Gets `remote[offset..]` into `bufs` (one segment each) and checks them.
  void get_and_check(const std::vector<std::byte>& remote_bytes, RemoteKey key,
                     std::vector<std::vector<std::byte>>& bufs, std::size_t offset) {
    std::vector<LocalSegment> segs;
    for (auto& b : bufs) segs.push_back({b.data(), b.size()});
    Completion c;
    net->get(peer, segs, addr(remote_bytes.data()) + offset, key, c);
    wait(c);
    std::size_t at = offset;
    for (auto& b : bufs) {
      if (!b.empty()) {
        EXPECT_EQ(std::memcmp(b.data(), remote_bytes.data() + at, b.size()), 0) << "segment at " << at;
      }
      at += b.size();
    }
  }

  // The sizes where layers change how they move data: a word, the inline
  // limit and one past it, a bounce buffer, registered on the fly, large.
  std::vector<std::size_t> size_classes() const {
    std::vector<std::size_t> sizes{1, 8, 63, 4093, 65539, (3u << 20) / 2 + 4093};
    const std::size_t inline_max = net->capabilities().max_inline;
    if (inline_max > 0) {
      sizes.push_back(inline_max);
      sizes.push_back(inline_max + 1);
    }
    std::sort(sizes.begin(), sizes.end());
    return sizes;
  }
};

TEST_P(NetworkContract, Capabilities) {
  const Capabilities& c = net->capabilities();
  EXPECT_EQ(GetParam().name.rfind(c.name, 0), 0u) << c.name << " for transport " << GetParam().name;
  EXPECT_FALSE(c.device.empty());
  EXPECT_GE(c.max_sge, 1u);
  EXPECT_GE(c.max_message, 1024u);
  EXPECT_FALSE(describe(c).empty());
  std::printf("[ info     ] %s\n", describe(c).c_str());
}

TEST_P(NetworkContract, RegisterPackUnpackRelease) {
  std::vector<std::byte> buf(4096);
  MemoryHandle h = target().register_memory(buf.data(), buf.size());
  ASSERT_TRUE(h);
  std::vector<std::byte> packed = target().pack_remote_key(h);
  ASSERT_FALSE(packed.empty());
  RemoteKey k = net->unpack_remote_key(peer, packed);
  ASSERT_TRUE(k);
  net->release_remote_key(k);
  net->release_remote_key(RemoteKey{});  // a null key is no key: nothing to do
  target().deregister_memory(h);

  // Zero bytes, twice at one address: two handles.
  char c = 0;
  MemoryHandle a = net->register_memory(&c, 0);
  MemoryHandle b = net->register_memory(&c, 0);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  net->deregister_memory(a);
  net->deregister_memory(b);
}

TEST_P(NetworkContract, UnknownHandlesAndKeysRejected) {
  int x;
  EXPECT_THROW(net->deregister_memory(MemoryHandle{&x}), std::logic_error);
  EXPECT_THROW(net->release_remote_key(RemoteKey{&x}), std::logic_error);
  EXPECT_THROW(net->pack_remote_key(MemoryHandle{}), std::invalid_argument);
}

TEST_P(NetworkContract, PutEverySizeClass) {
  const std::vector<std::size_t> sizes = size_classes();
  std::vector<std::byte> dst(sizes.back() + 64);
  RemoteKey k = expose(dst.data(), dst.size());
  for (std::size_t n : sizes) {
    SCOPED_TRACE("bytes " + std::to_string(n));
    auto src = pattern(n, static_cast<unsigned>(n));
    LocalSegment s{src.data(), src.size()};
    put_and_check(dst, k, {&s, 1}, 7);
  }
  // From registered memory (zero copy where the layer does it).
  auto regd = pattern(200000, 3);
  reg_origin(regd.data(), regd.size());
  for (std::size_t n : {std::size_t{8}, std::size_t{5000}, std::size_t{190000}}) {
    SCOPED_TRACE("registered source, bytes " + std::to_string(n));
    LocalSegment s{regd.data() + 1000, n};
    put_and_check(dst, k, {&s, 1}, 1);
  }
}

TEST_P(NetworkContract, PutSourceReusableOnLocalCompletion) {
  // Once the put's completion is done the source may change: what lands is
  // what was there at the call.
  std::vector<std::byte> dst(70000, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  for (std::size_t n : {std::size_t{8}, std::size_t{300}, std::size_t{65536}}) {
    auto src = pattern(n, 41);
    const auto sent = src;
    LocalSegment s{src.data(), n};
    Completion c;
    net->put(peer, {&s, 1}, addr(dst.data()), k, c);
    wait(c);
    std::fill(src.begin(), src.end(), std::byte{0xee});
    Completion f;
    net->flush(peer, f);
    wait(f);
    EXPECT_EQ(std::memcmp(dst.data(), sent.data(), n), 0) << n << " bytes";
  }
}

TEST_P(NetworkContract, PutGather) {
  std::vector<std::byte> dst(1 << 21);
  RemoteKey k = expose(dst.data(), dst.size());
  auto a = pattern(17, 5), b = pattern(3, 6), d = pattern(900, 7), e = pattern(40000, 8);
  auto f = pattern(700000, 9), g = pattern(300000, 10);
  reg_origin(f.data(), f.size());
  LocalSegment tiny[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {a.data(), 5}};
  put_and_check(dst, k, tiny, 8);
  LocalSegment with_empty[4] = {{a.data(), a.size()}, {b.data(), 0}, {d.data(), d.size()}, {b.data(), b.size()}};
  put_and_check(dst, k, with_empty, 1);
  LocalSegment mix[4] = {{e.data(), e.size()}, {f.data(), f.size()}, {g.data(), g.size()}, {a.data(), a.size()}};
  put_and_check(dst, k, mix, 64);
  // More segments than one operation of any layer takes.
  std::vector<std::vector<std::byte>> parts;
  std::vector<LocalSegment> many;
  for (unsigned i = 0; i < 70; ++i) parts.push_back(pattern(1000 + 37 * i, 20 + i));
  for (auto& p : parts) many.push_back({p.data(), p.size()});
  ASSERT_GT(many.size(), net->capabilities().max_sge);
  put_and_check(dst, k, many, 3);
}

TEST_P(NetworkContract, GetEverySizeClass) {
  const std::vector<std::size_t> sizes = size_classes();
  auto remote_bytes = pattern(sizes.back() + 64, 11);
  RemoteKey k = expose(remote_bytes.data(), remote_bytes.size());
  for (std::size_t n : sizes) {
    SCOPED_TRACE("bytes " + std::to_string(n));
    std::vector<std::vector<std::byte>> one{std::vector<std::byte>(n)};
    get_and_check(remote_bytes, k, one, 5);
  }
  // Into registered memory.
  std::vector<std::byte> into(1 << 20);
  reg_origin(into.data(), into.size());
  LocalSegment s{into.data() + 8, into.size() - 16};
  Completion c;
  net->get(peer, {&s, 1}, addr(remote_bytes.data()) + 1, k, c);
  wait(c);
  EXPECT_EQ(std::memcmp(into.data() + 8, remote_bytes.data() + 1, s.length), 0);
}

TEST_P(NetworkContract, GetScatter) {
  auto remote_bytes = pattern(3 << 20, 12);
  RemoteKey k = expose(remote_bytes.data(), remote_bytes.size());
  std::vector<std::vector<std::byte>> small = {std::vector<std::byte>(100), std::vector<std::byte>(1),
                                               std::vector<std::byte>(2000)};
  get_and_check(remote_bytes, k, small, 33);
  std::vector<std::vector<std::byte>> large = {std::vector<std::byte>(5000), std::vector<std::byte>(0),
                                               std::vector<std::byte>(1 << 20), std::vector<std::byte>(77)};
  get_and_check(remote_bytes, k, large, 4096 + 3);
  std::vector<std::vector<std::byte>> many;
  for (unsigned i = 0; i < 50; ++i) many.push_back(std::vector<std::byte>(500 + i));
  get_and_check(remote_bytes, k, many, 12345);
}

TEST_P(NetworkContract, FetchAdd) {
  alignas(8) std::uint64_t words[2] = {40, 7};
  RemoteKey k = expose(words, sizeof words);
  std::uint64_t old = 0;
  Completion c;
  net->fetch_add(peer, addr(&words[0]), k, 2, &old, c);
  wait(c);
  EXPECT_EQ(old, 40u);
  EXPECT_EQ(words[0], 42u);
  EXPECT_EQ(words[1], 7u);
  net->fetch_add(peer, addr(&words[1]), k, 1000, &old, c);
  wait(c);
  EXPECT_EQ(old, 7u);
  EXPECT_EQ(words[1], 1007u);
  // All 64 bits, wrapping.
  words[0] = 0xfffffffffffffff0ull;
  net->fetch_add(peer, addr(&words[0]), k, 0x20, &old, c);
  wait(c);
  EXPECT_EQ(old, 0xfffffffffffffff0ull);
  EXPECT_EQ(words[0], 0x10u);
}

TEST_P(NetworkContract, CompareSwap) {
  alignas(8) std::uint64_t word = 5;
  RemoteKey k = expose(&word, sizeof word);
  std::uint64_t old = 0;
  Completion c;
  net->compare_swap(peer, addr(&word), k, 5, 0x123456789abcdefull, &old, c);
  wait(c);
  EXPECT_EQ(old, 5u);
  EXPECT_EQ(word, 0x123456789abcdefull);
  old = 0;
  net->compare_swap(peer, addr(&word), k, 7, 11, &old, c);  // fails: unchanged
  wait(c);
  EXPECT_EQ(old, 0x123456789abcdefull);
  EXPECT_EQ(word, 0x123456789abcdefull);
  net->compare_swap(peer, addr(&word), k, 0x123456789abcdefull, 0, &old, c);
  wait(c);
  EXPECT_EQ(old, 0x123456789abcdefull);
  EXPECT_EQ(word, 0u);
}

TEST_P(NetworkContract, ManyAtomicsAndReadsInFlight) {
  // Far more reads and atomics at once than any layer keeps outstanding.
  alignas(8) std::uint64_t counter = 0;
  RemoteKey k = expose(&counter, sizeof counter);
  auto remote_bytes = pattern(4096, 40);
  RemoteKey rk = expose(remote_bytes.data(), remote_bytes.size());
  constexpr std::size_t kN = 600;
  std::vector<std::uint64_t> olds(kN, ~0ull), gets(kN, 0);
  Completion c;
  for (std::size_t i = 0; i < kN; ++i) {
    net->fetch_add(peer, addr(&counter), k, 1, &olds[i], c);
    LocalSegment s{&gets[i], 8};
    net->get(peer, {&s, 1}, addr(remote_bytes.data()) + 8 * (i % 512), rk, c);
  }
  wait(c);
  EXPECT_EQ(counter, kN);
  std::sort(olds.begin(), olds.end());
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(olds[i], i) << "every old value once";
  for (std::size_t i = 0; i < kN; ++i) ASSERT_EQ(std::memcmp(&gets[i], remote_bytes.data() + 8 * (i % 512), 8), 0);
}

TEST_P(NetworkContract, PutNotify) {
  std::vector<std::byte> dst(1 << 20, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(1000, 6);
  const std::uint64_t before = target().notifications_received();
  LocalSegment segs[2] = {{src.data(), 400}, {src.data() + 400, 600}};
  Completion c;
  net->put_notify(peer, segs, addr(dst.data()), k, 77, c);
  wait(c);
  ASSERT_TRUE(until([&] { return target().notifications_received() == before + 1; }));
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  for (int i = 0; i < 100; ++i) progress();
  EXPECT_EQ(target().notifications_received(), before + 1) << "one put, one notification";

  // Large: the data is in place once the counter moves.
  auto big = pattern(dst.size() - 64, 7);
  LocalSegment b{big.data(), big.size()};
  net->put_notify(peer, {&b, 1}, addr(dst.data()) + 64, k, 78, c);
  ASSERT_TRUE(until([&] { return target().notifications_received() == before + 2; }));
  EXPECT_EQ(std::memcmp(dst.data() + 64, big.data(), big.size()), 0);
  wait(c);

  // Zero bytes still notify.
  net->put_notify(peer, {}, addr(dst.data()), k, 79, c);
  wait(c);
  ASSERT_TRUE(until([&] { return target().notifications_received() == before + 3; }));
}

// Counted by value as well: a waiter for one tag (a window's counted fence)
// is not satisfied by notifications of another.
TEST_P(NetworkContract, PutNotifyCountsByValue) {
  std::vector<std::byte> dst(4096, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(64, 8);
  LocalSegment s{src.data(), src.size()};
  constexpr std::uint32_t kA = 0x5eed0001, kB = 0xfffffffe;  // the high bit too: verbs carries it big-endian
  const std::uint64_t before_a = target().notifications_received(kA), before_b = target().notifications_received(kB);
  const std::uint64_t before = target().notifications_received();
  Completion c;
  for (int i = 0; i < 3; ++i) net->put_notify(peer, {&s, 1}, addr(dst.data()), k, kA, c);
  net->put_notify(peer, {&s, 1}, addr(dst.data()) + 64, k, kB, c);
  wait(c);
  ASSERT_TRUE(until([&] { return target().notifications_received() == before + 4; }));
  EXPECT_EQ(target().notifications_received(kA), before_a + 3);
  EXPECT_EQ(target().notifications_received(kB), before_b + 1);
  EXPECT_EQ(target().notifications_received(kA + 1), 0u) << "a value never sent counts nothing";
}

struct Received {
  int count = 0;
  int source = -1;
  std::vector<std::byte> header, payload;
};

TEST_P(NetworkContract, MessagesExactBytes) {
  auto roundtrip = [&](std::size_t payload_size, const std::string& hdr, std::uint8_t id) {
    SCOPED_TRACE("message id " + std::to_string(id) + ", payload " + std::to_string(payload_size));
    Received got;
    target().set_message_handler(id, [&](int src, std::span<const std::byte> h, std::span<const std::byte> p) {
      ++got.count;
      got.source = src;
      got.header.assign(h.begin(), h.end());
      got.payload.assign(p.begin(), p.end());
    });
    auto payload = pattern(payload_size, static_cast<unsigned>(payload_size));
    Completion c;
    net->send_message(peer, id, bytes_of(hdr), payload, c);
    wait(c);
    ASSERT_TRUE(until([&] { return got.count == 1; })) << "handler never ran";
    EXPECT_EQ(got.source, origin_rank());
    ASSERT_EQ(got.header.size(), hdr.size());
    EXPECT_TRUE(std::equal(got.header.begin(), got.header.end(), bytes_of(hdr).begin()));
    ASSERT_EQ(got.payload.size(), payload.size());
    EXPECT_TRUE(got.payload == payload);
    for (int i = 0; i < 50; ++i) progress();
    EXPECT_EQ(got.count, 1) << "delivered once";
    target().set_message_handler(id, nullptr);
  };
  // Up to the layer's largest message (4 MiB where it allows more).
  const std::size_t max = std::min<std::size_t>(net->capabilities().max_message, 4 << 20);
  roundtrip(16, "header-bytes", 3);
  roundtrip(0, "", 0);
  roundtrip(3000, std::string(40, 'h'), 254);
  roundtrip(max - 24, std::string(24, 'm'), 7);
  roundtrip(max, "", 8);
}

TEST_P(NetworkContract, ManyMessagesInFlight) {
  // More than any layer's posted receives and send buffers.
  int count = 0;
  std::uint64_t sum = 0;
  target().set_message_handler(9, [&](int, std::span<const std::byte> h, std::span<const std::byte> p) {
    ++count;
    std::uint32_t v;
    std::memcpy(&v, h.data(), sizeof v);
    sum += v + p.size();
    EXPECT_EQ(p[p.size() - 1], std::byte(v & 0xff));
  });
  constexpr unsigned kN = 700;
  std::vector<std::uint32_t> hdrs(kN);
  std::iota(hdrs.begin(), hdrs.end(), 1u);
  // Header and payload stay the caller's until the send completes locally.
  std::vector<std::vector<std::byte>> payloads;
  for (auto h : hdrs) {
    payloads.push_back(pattern(4000 + h % 7, 1));
    payloads.back().back() = std::byte(h & 0xff);
  }
  Completion c;
  for (std::size_t i = 0; i < kN; ++i)
    net->send_message(peer, 9, {reinterpret_cast<const std::byte*>(&hdrs[i]), sizeof hdrs[i]}, payloads[i], c);
  wait(c);
  ASSERT_TRUE(until([&] { return count == static_cast<int>(kN); }));
  std::uint64_t expect = 0;
  for (auto h : hdrs) expect += h + 4000 + h % 7;
  EXPECT_EQ(sum, expect);
}

TEST_P(NetworkContract, HandlerMayReplyAndThrow) {
  // A handler that sends (as the core's acks do), then one that throws: the
  // exception comes out of progress() and messages still flow after it.
  int replies = 0;
  net->set_message_handler(2, [&](int, auto, auto) { ++replies; });
  Completion acks;
  target().set_message_handler(1, [&](int src, std::span<const std::byte> h, auto) {
    target().send_message(src, 2, h, {}, acks);
  });
  Completion c;
  std::uint64_t token = 99;
  net->send_message(peer, 1, {reinterpret_cast<const std::byte*>(&token), 8}, {}, c);
  ASSERT_TRUE(until([&] { return replies == 1 && c.done() && acks.done(); }));

  target().set_message_handler(4, [](int, auto, auto) { throw std::runtime_error("boom"); });
  net->send_message(peer, 4, {}, {}, c);
  bool thrown = false;
  auto end = Clock::now() + std::chrono::seconds(60);
  while (!thrown && Clock::now() < end) {
    try {
      progress();
    } catch (const std::runtime_error& e) {
      thrown = std::string(e.what()) == "boom";
    }
  }
  EXPECT_TRUE(thrown);
  wait(c);
  net->send_message(peer, 1, {reinterpret_cast<const std::byte*>(&token), 8}, {}, c);
  ASSERT_TRUE(until([&] { return replies == 2; }));
}

TEST_P(NetworkContract, OneCompletionCountsEveryOperation) {
  // Each operation adds to `pending` before it returns and takes as much
  // back when it completes (a layer may count pieces): done() means every
  // one of them has completed, each with its effect.
  std::vector<std::byte> dst(8192, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  alignas(8) std::uint64_t word = 0;
  RemoteKey wk = expose(&word, sizeof word);
  auto src = pattern(4096, 50);
  auto remote_half = pattern(4096, 51);
  std::memcpy(dst.data() + 4096, remote_half.data(), remote_half.size());
  std::vector<std::byte> back(4096);
  int received = 0;
  target().set_message_handler(11, [&](int, auto, auto) { ++received; });
  const std::uint64_t notified = target().notifications_received();

  Completion c;
  auto count_start = [&] { EXPECT_GE(c.pending.load(), 0); };
  LocalSegment put_seg{src.data(), 2048}, notify_seg{src.data() + 2048, 2048}, get_seg{back.data(), back.size()};
  std::uint64_t added_to = ~0ull, swapped_from = ~0ull;
  net->put(peer, {&put_seg, 1}, addr(dst.data()), k, c);
  count_start();
  net->get(peer, {&get_seg, 1}, addr(dst.data()) + 4096, k, c);
  count_start();
  net->fetch_add(peer, addr(&word), wk, 5, &added_to, c);
  count_start();
  net->order(peer);
  net->compare_swap(peer, addr(&word), wk, 5, 9, &swapped_from, c);
  count_start();
  net->send_message(peer, 11, bytes_of("hdr"), src, c);
  count_start();
  net->put_notify(peer, {&notify_seg, 1}, addr(dst.data()) + 2048, k, 1, c);
  count_start();
  wait_remote(c);
  EXPECT_EQ(c.pending.load(), 0);
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0) << "put and put_notify";
  EXPECT_TRUE(back == remote_half) << "get";
  EXPECT_EQ(added_to, 0u);
  EXPECT_EQ(swapped_from, 5u);
  EXPECT_EQ(word, 9u);
  ASSERT_TRUE(until([&] { return received == 1 && target().notifications_received() == notified + 1; }));
}

TEST_P(NetworkContract, Order) {
  std::vector<std::byte> dst(64 * 1024, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto first = pattern(dst.size(), 10), second = pattern(dst.size(), 11);
  LocalSegment s1{first.data(), first.size()}, s2{second.data(), second.size()};
  Completion c;
  net->put(peer, {&s1, 1}, addr(dst.data()), k, c);
  net->order(peer);
  net->put(peer, {&s2, 1}, addr(dst.data()), k, c);
  wait_remote(c);
  EXPECT_TRUE(dst == second) << "put, order, put";

  std::vector<std::byte> seen(dst.size());
  LocalSegment g{seen.data(), seen.size()};
  net->get(peer, {&g, 1}, addr(dst.data()), k, c);
  net->order(peer);
  net->put(peer, {&s1, 1}, addr(dst.data()), k, c);
  wait_remote(c);
  EXPECT_TRUE(seen == second) << "get, order, put: the get sees the old data";
  EXPECT_TRUE(dst == first);

  alignas(8) std::uint64_t word = 1;
  RemoteKey wk = expose(&word, 8);
  std::uint64_t old = 0, three = 3;
  LocalSegment w{&three, 8};
  net->fetch_add(peer, addr(&word), wk, 10, &old, c);
  net->order(peer);
  net->put(peer, {&w, 1}, addr(&word), wk, c);
  wait_remote(c);
  EXPECT_EQ(old, 1u);
  EXPECT_EQ(word, 3u) << "atomic, order, put";
}

TEST_P(NetworkContract, FlushPeerAndAll) {
  // Nothing issued: nothing to wait for, and no connection needed.
  Completion idle;
  net->flush(peer, idle);
  net->flush_all(idle);
  net->order(peer);
  EXPECT_TRUE(idle.done());

  std::vector<std::byte> dst(1 << 20, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  auto src = pattern(dst.size(), 12);
  LocalSegment s{src.data(), src.size()};
  Completion puts, fl;
  net->put(peer, {&s, 1}, addr(dst.data()), k, puts);
  net->flush(peer, fl);
  wait(fl);
  wait(puts);
  EXPECT_TRUE(dst == src);

  auto src2 = pattern(dst.size(), 13);
  LocalSegment s2{src2.data(), src2.size()};
  Completion puts2, all;
  net->put(peer, {&s2, 1}, addr(dst.data()), k, puts2);
  net->flush_all(all);
  wait(all);
  wait(puts2);
  EXPECT_TRUE(dst == src2);
}

TEST_P(NetworkContract, ThousandsOfOutstandingPuts) {
  // Far beyond any send queue and buffer pool, issued without progress in
  // between: everything queues and drains.
  constexpr std::size_t kSmall = 5000, kMid = 1500, kMidSize = 1000;
  std::vector<std::byte> dst(kSmall * 8 + kMid * kMidSize, std::byte{0});
  RemoteKey k = expose(dst.data(), dst.size());
  std::vector<std::uint64_t> small(kSmall);
  for (std::size_t i = 0; i < kSmall; ++i) small[i] = i * 2654435761u + 1;
  auto mid = pattern(kMid * kMidSize, 14);
  Completion c;
  for (std::size_t i = 0; i < kSmall; ++i) {
    LocalSegment s{&small[i], 8};
    net->put(peer, {&s, 1}, addr(dst.data()) + 8 * i, k, c);
  }
  for (std::size_t i = 0; i < kMid; ++i) {
    LocalSegment s{mid.data() + i * kMidSize, kMidSize};
    net->put(peer, {&s, 1}, addr(dst.data()) + kSmall * 8 + i * kMidSize, k, c);
  }
  wait_remote(c);
  EXPECT_EQ(std::memcmp(dst.data(), small.data(), kSmall * 8), 0);
  EXPECT_EQ(std::memcmp(dst.data() + kSmall * 8, mid.data(), mid.size()), 0);
}

TEST_P(NetworkContract, Wakeup) {
  Network& t = target();
  const int fd = t.wakeup_fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(t.wakeup_fd(), fd) << "one descriptor for the network's life";
  ASSERT_TRUE(until([&] { return t.arm_wakeup(); }));
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "armed and idle: nothing to report";

  int count = 0;
  t.set_message_handler(1, [&](int, auto, auto) { ++count; });
  Completion c;
  net->send_message(peer, 1, {}, {}, c);
  EXPECT_GE(::poll(&p, 1, 200), 0);
  ASSERT_TRUE(until([&] { return count == 1 && c.done(); }));
  ASSERT_TRUE(until([&] { return t.arm_wakeup(); })) << "can be armed again once the work is done";
}

TEST_P(NetworkContract, ErrorStringOfSuccess) {
  EXPECT_EQ(net->error_string(0), "Success");
  EXPECT_FALSE(net->error_string(-3).empty());
}

TEST_P(NetworkContract, TeardownReleasesLeftovers) {
  // Registrations, keys and a put the caller left behind must not trip the
  // layer when it goes.
  std::vector<std::byte> buf(1 << 20);
  MemoryHandle h = target().register_memory(buf.data(), buf.size());
  RemoteKey k = net->unpack_remote_key(peer, target().pack_remote_key(h));
  auto src = pattern(buf.size(), 15);
  LocalSegment s{src.data(), src.size()};
  Completion c;
  net->put(peer, {&s, 1}, addr(buf.data()), k, c);
  wait_remote(c);
  EXPECT_TRUE(buf == src);
  net->put(peer, {&s, 1}, addr(buf.data()), k, c);  // left in flight on purpose
  net.reset();
  remote.reset();
}

INSTANTIATE_TEST_SUITE_P(Transport, NetworkContract, ::testing::ValuesIn(usable_transports()), transport_name);
// A build without any network layer has nothing to instantiate.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NetworkContract);

// Arguments: ranks out of range, peers without an address.
class NetworkContractPeers : public ::testing::TestWithParam<Transport> {};

TEST_P(NetworkContractPeers, ArgumentsChecked) {
  const Transport& t = GetParam();
  EXPECT_THROW(t.make(2, 2), std::invalid_argument);
  EXPECT_THROW(t.make(-1, 2), std::invalid_argument);
  auto net = t.make(0, 2);
  EXPECT_THROW(net->set_peer_addresses({net->local_address()}), std::invalid_argument);
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
  EXPECT_THROW(net->get(-1, {&s, 1}, addr(buf.data()), k, c), std::logic_error);
  EXPECT_TRUE(c.done()) << "a refused operation adds nothing to wait for";
  net->release_remote_key(k);
  net->deregister_memory(h);
}

INSTANTIATE_TEST_SUITE_P(Transport, NetworkContractPeers, ::testing::ValuesIn(usable_transports()), transport_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NetworkContractPeers);

}  // namespace
}  // namespace armci::platform::testing
