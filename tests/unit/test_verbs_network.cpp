// What only the verbs layer does; the interface itself is tested once for
// every layer in network_contract_test.cpp (its `verbs` instantiation).
//
// Without an RDMA device (the host CI) every test here skips, saying where
// it runs: scripts/test-verbs-vm.sh runs them in the Soft-RoCE VM
// (/work/shared/rxe-vm/run-in-rxe-vm.sh BINARY), where the single-process
// tests run at size 1: peer 0 is this process, its RC QP connected to itself.
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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "platform/verbs/verbs_network.hpp"
#include "tests/unit/network_fixture.hpp"

namespace armci::platform {
namespace {

using testing::addr;
using testing::bytes_of;
using testing::Clock;
using testing::pattern;
using testing::progress_until;

bool device_present() {
  static const bool present = verbs_device_available();
  return present;
}

constexpr const char* kNoDevice =
    "no RDMA device with an ACTIVE port; scripts/test-verbs-vm.sh runs this in the Soft-RoCE VM";

#define REQUIRE_DEVICE()                             \
  do {                                               \
    if (!device_present()) GTEST_SKIP() << kNoDevice; \
  } while (0)

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

testing::Transport verbs_loopback(VerbsOptions options = {}) {
  return {"verbs", [options](int rank, int size) { return make_verbs_network(rank, size, options); }, false,
          [] { return device_present() ? std::string() : std::string(kNoDevice); }};
}

class VerbsSelf : public testing::SingleTransportTest {
 protected:
  testing::Transport transport() const override { return verbs_loopback(); }
};

TEST_F(VerbsSelf, Capabilities) {
  const Capabilities& c = net->capabilities();
  EXPECT_EQ(c.name, "verbs");
  EXPECT_EQ(c.max_message, 8192u - 16u);
  EXPECT_TRUE(c.needs_local_registration);
  std::printf("[ info     ] max_sge=%zu max_inline=%zu max_message=%zu\n", c.max_sge, c.max_inline, c.max_message);
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


TEST_F(VerbsSelf, MalformedKeysRejected) {
  std::vector<std::byte> buf(4096);
  auto packed = net->pack_remote_key(reg_target(buf.data(), buf.size()));
  EXPECT_THROW(net->unpack_remote_key(0, std::span<const std::byte>(packed).first(5)), std::invalid_argument);
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


TEST_F(VerbsSelf, MessagesBeyondTheLimitRefused) {
  const std::size_t max = net->capabilities().max_message;
  Completion c;
  std::vector<std::byte> too_big(max + 1);
  EXPECT_THROW(net->send_message(0, 1, {}, too_big, c), std::length_error);
  EXPECT_THROW(net->send_message(0, 1, bytes_of("x"), std::span(too_big).first(max), c), std::length_error);
  EXPECT_TRUE(c.done());
}

TEST_F(VerbsSelf, PutsBeyondTheSendQueueWait) {
  // The contract suite checks the data; here, that they queued and drained.
  std::vector<std::uint64_t> dst(5000, 0), src(5000, 1);
  RemoteKey k = expose(dst.data(), dst.size() * 8);
  Completion c;
  for (std::size_t i = 0; i < src.size(); ++i) {
    LocalSegment s{&src[i], 8};
    net->put(0, {&s, 1}, addr(&dst[i]), k, c);
  }
  EXPECT_GT(verbs_stats(*net).queued_operations, 0u);
  wait_remote(c);
  EXPECT_TRUE(dst == src);
  EXPECT_EQ(verbs_stats(*net).queued_operations, 0u);
}

TEST_F(VerbsSelf, WorkCompletionErrorsNameThePeer) {
  std::vector<std::byte> buf(4096);
  MemoryHandle h = reg_target(buf.data(), buf.size());
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
  EXPECT_EQ(net->error_peer(code), 0);  // what lets the core ask whether peer 0 died
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

// ---------------------------------------------------------------------------
// more than one peer in one process

TEST(VerbsPeers, MalformedAddressesRejected) {
  REQUIRE_DEVICE();
  auto net = make_verbs_network(0, 2);
  EXPECT_THROW(net->set_peer_addresses({net->local_address(), std::vector<std::byte>(5)}), std::invalid_argument);
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
