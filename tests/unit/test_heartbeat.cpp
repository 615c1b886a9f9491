// The heartbeat between hosts (src/core/heartbeat.hpp), with the ranks of
// pretend hosts ("a", "b", ...) in one process over UCX: beating ranks keep
// each other alive with nobody else driving their networks, and a rank whose
// beats stop is a peer failure naming it within the timeout, whatever the
// hosts' rank counts (with one counter per host and pairing by index modulo
// the other host's count, the ranks of the bigger host beyond the smaller
// one's count were watched by nobody there).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "platform/ucx/ucx_network.hpp"
#include "src/core/heartbeat.hpp"
#include "src/core/peer_failure.hpp"

namespace armci {
namespace {

using namespace std::chrono_literals;

// The ranks' all-gather, each called from its own thread.
class Exchange {
 public:
  explicit Exchange(std::size_t ranks) : records_(ranks) {}
  std::vector<std::vector<std::byte>> all(int rank, std::span<const std::byte> mine) {
    std::unique_lock lock(mutex_);
    records_[static_cast<std::size_t>(rank)].assign(mine.begin(), mine.end());
    ++arrived_;
    arrived_signal_.notify_all();
    arrived_signal_.wait(lock, [this] { return arrived_ == records_.size(); });
    return records_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_signal_;
  std::vector<std::vector<std::byte>> records_;
  std::size_t arrived_ = 0;
};

// One rank: its network, its view of the job, its heartbeat.
struct Rank {
  Rank(int rank, const std::vector<std::string>& hosts, const Settings& settings)
      : network(platform::make_ucx_network(rank, static_cast<int>(hosts.size()), platform::UcxOptions{false})),
        peers(rank, hosts, 0, true),
        progress(settings, rank, network.get()) {}
  std::unique_ptr<platform::Network> network;
  Peers peers;
  Progress progress;
  std::unique_ptr<Heartbeat> heartbeat;
};

// hosts: the host name of every rank.
class Job {
 public:
  explicit Job(std::vector<std::string> hosts = {"a", "b"}) : exchange_(hosts.size()) {
    // Wide enough for a loaded machine: a false alarm here fails the test.
    settings_.heartbeat_ms = 50;
    settings_.heartbeat_timeout_ms = 1000;
    const int n = static_cast<int>(hosts.size());
    for (int r = 0; r < n; ++r) ranks_.push_back(std::make_unique<Rank>(r, hosts, settings_));
    std::vector<std::vector<std::byte>> addresses;
    for (auto& r : ranks_) addresses.push_back(r->network->local_address());
    for (auto& r : ranks_) r->network->set_peer_addresses(addresses);
    // The constructor is a collective: all at once.
    std::vector<std::thread> others;
    for (int r = 1; r < n; ++r) others.emplace_back([this, r] { start(r); });
    start(0);
    for (auto& t : others) t.join();
  }
  ~Job() {
    // Every beat stops before any counter goes, as ARMCI_Finalize's fence ensures.
    for (auto& r : ranks_) r->heartbeat->stop();
    // The last beats reach their targets (a flush needs both ends' progress here).
    std::vector<platform::Completion> flushed(ranks_.size());
    for (std::size_t i = 0; i < ranks_.size(); ++i)
      ranks_[i]->progress.with_network([&](platform::Network& net) { net.flush_all(flushed[i]); });
    while (!std::all_of(flushed.begin(), flushed.end(), [](const auto& f) { return f.done(); }))
      for (auto& r : ranks_) r->progress.progress();
    for (auto& r : ranks_) r->heartbeat.reset();
  }
  Heartbeat& heartbeat(int rank) { return *ranks_[static_cast<std::size_t>(rank)]->heartbeat; }

 private:
  void start(int rank) {
    Rank& r = *ranks_[static_cast<std::size_t>(rank)];
    r.heartbeat = std::make_unique<Heartbeat>(r.peers, r.progress, settings_, [this, rank](std::span<const std::byte> mine) {
      return exchange_.all(rank, mine);
    });
  }
  Settings settings_;
  Exchange exchange_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

// Hosts of 1 to 4 ranks, two to four of them: partnership is mutual (so a
// watched rank beats to its watcher), and every rank has a partner on every
// other host (so no rank goes unwatched there).
TEST(Heartbeat, PartnersAreMutualAndCoverEveryRankOfEveryOtherHost) {
  for (int hosts = 2; hosts <= 4; ++hosts) {
    std::vector<int> sizes(static_cast<std::size_t>(hosts), 1);
    while (true) {
      std::vector<std::vector<int>> members;
      std::vector<std::size_t> host_of;
      for (std::size_t h = 0; h < sizes.size(); ++h) {
        members.emplace_back();
        for (int i = 0; i < sizes[h]; ++i) {
          members[h].push_back(static_cast<int>(host_of.size()));
          host_of.push_back(h);
        }
      }
      const auto partners_of = [&](int rank) {
        const auto h = host_of[static_cast<std::size_t>(rank)];
        const auto index = std::find(members[h].begin(), members[h].end(), rank) - members[h].begin();
        return Heartbeat::partners(members, h, static_cast<int>(index));
      };
      for (int r = 0; r < static_cast<int>(host_of.size()); ++r) {
        const auto mine = partners_of(r);
        for (int p : mine) {
          const auto theirs = partners_of(p);
          EXPECT_NE(host_of[static_cast<std::size_t>(p)], host_of[static_cast<std::size_t>(r)]);
          EXPECT_EQ(std::count(theirs.begin(), theirs.end(), r), 1) << "rank " << r << " and " << p;
        }
        for (std::size_t h = 0; h < members.size(); ++h) {
          if (h == host_of[static_cast<std::size_t>(r)]) continue;
          const auto on_h = [&](int p) { return host_of[static_cast<std::size_t>(p)] == h; };
          EXPECT_TRUE(std::any_of(mine.begin(), mine.end(), on_h)) << "rank " << r << " has no partner on host " << h;
        }
      }
      // The next combination of sizes, 1 to 4 each.
      std::size_t k = 0;
      while (k < sizes.size() && sizes[k] == 4) sizes[k++] = 1;
      if (k == sizes.size()) break;
      ++sizes[k];
    }
  }
}

bool someone_died() { return peer_failure_detail::g_first_dead.load() != kNoFailure; }

TEST(Heartbeat, BeatingRanksOfTwoHostsKeepEachOtherAlive) {
  Job job;
  EXPECT_TRUE(job.heartbeat(0).watching());
  EXPECT_NE(job.heartbeat(0).describe().find("watching rank 1 (b)"), std::string::npos) << job.heartbeat(0).describe();
  // Ten timeouts with nobody but the heartbeats driving the networks.
  const auto end = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < end && !someone_died()) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(someone_died());
}

TEST(HeartbeatDeathTest, ASilentHostIsAPeerFailureNamingItsRank) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Job job;
        job.heartbeat(1).stop();  // host b goes silent
        const auto end = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < end && !someone_died()) std::this_thread::sleep_for(10ms);
        check_peers();  // what every wait of the library does
        std::exit(0);
      },
      ::testing::ExitedWithCode(1), "rank 1 died \\(no heartbeat from host b for [0-9.]+ s\\)");
}

// Every rank of `hosts` beats for two timeouts without a false alarm (exit
// status 2 if there is one: a rank watched by one that does not beat to
// it), then rank `silent` stops: some rank of another host must report it,
// and it alone even a timeout and a half later (its partners' puts to it
// may never complete, which must not hold back their beats to the others).
[[noreturn]] void silence_one(const std::vector<std::string>& hosts, int silent) {
  Job job(hosts);
  auto end = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < end && !someone_died()) std::this_thread::sleep_for(10ms);
  if (someone_died()) {
    std::fprintf(stderr, "false alarm: rank %d\n", peer_failure_detail::g_first_dead.load());
    std::exit(2);
  }
  job.heartbeat(silent).stop();
  end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end && !someone_died()) std::this_thread::sleep_for(10ms);
  if (someone_died()) std::this_thread::sleep_for(1500ms);  // room for a false alarm, not a synchronisation
  check_peers();  // exits 1 naming the dead ranks
  std::exit(0);
}

TEST(HeartbeatDeathTest, TwoHostsOfTwoRanks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(silence_one({"a", "a", "b", "b"}, 3), ::testing::ExitedWithCode(1),
              "\\): rank 3 died \\(no heartbeat from host b for [0-9.]+ s\\); ending");
}

// Ranks 1 and 2 of the host of three were watched by nobody on the other.
TEST(HeartbeatDeathTest, ThreeRanksAndOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(silence_one({"a", "a", "a", "b"}, 2), ::testing::ExitedWithCode(1),
              "\\): rank 2 died \\(no heartbeat from host a for [0-9.]+ s\\); ending");
}

TEST(HeartbeatDeathTest, OneRankAndThree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(silence_one({"a", "b", "b", "b"}, 3), ::testing::ExitedWithCode(1),
              "\\): rank 3 died \\(no heartbeat from host b for [0-9.]+ s\\); ending");
}

TEST(HeartbeatDeathTest, ThreeRanksAndTwo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(silence_one({"a", "a", "a", "b", "b"}, 2), ::testing::ExitedWithCode(1),
              "\\): rank 2 died \\(no heartbeat from host a for [0-9.]+ s\\); ending");
}

// Hosts of 2, 1 and 3 ranks, the ranks of one host not consecutive.
TEST(HeartbeatDeathTest, ThreeHostsOfTwoOneAndThree) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(silence_one({"a", "c", "a", "b", "c", "c"}, 5), ::testing::ExitedWithCode(1),
              "\\): rank 5 died \\(no heartbeat from host c for [0-9.]+ s\\); ending");
}

}  // namespace
}  // namespace armci
