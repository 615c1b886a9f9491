// The heartbeat between hosts (src/core/heartbeat.hpp), with two ranks of
// two pretend hosts ("a", "b") in one process over UCX: beating ranks keep
// each other alive with nobody else driving their networks, and a rank whose
// beats stop is a peer failure naming it within the timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/ucx/ucx_network.hpp"
#include "src/core/heartbeat.hpp"
#include "src/core/peer_failure.hpp"

namespace armci {
namespace {

using namespace std::chrono_literals;

// The two ranks' all-gather, each called from its own thread.
class Exchange {
 public:
  std::vector<std::vector<std::byte>> all(int rank, std::span<const std::byte> mine) {
    std::unique_lock lock(mutex_);
    records_[static_cast<std::size_t>(rank)].assign(mine.begin(), mine.end());
    ++arrived_;
    arrived_signal_.notify_all();
    arrived_signal_.wait(lock, [this] { return arrived_ == 2; });
    return records_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_signal_;
  std::vector<std::vector<std::byte>> records_{2};
  int arrived_ = 0;
};

// One rank: its network, its view of the job, its heartbeat.
struct Rank {
  Rank(int rank, const Settings& settings)
      : network(platform::make_ucx_network(rank, 2, platform::UcxOptions{false})),
        peers(rank, {"a", "b"}, 0, true),
        progress(settings, rank, network.get()) {}
  std::unique_ptr<platform::Network> network;
  Peers peers;
  Progress progress;
  std::unique_ptr<Heartbeat> heartbeat;
};

class TwoHosts {
 public:
  TwoHosts() {
    // Wide enough for a loaded machine: a false alarm here fails the test.
    settings_.heartbeat_ms = 50;
    settings_.heartbeat_timeout_ms = 1000;
    for (int r = 0; r < 2; ++r) ranks_.push_back(std::make_unique<Rank>(r, settings_));
    std::vector<std::vector<std::byte>> addresses{ranks_[0]->network->local_address(),
                                                  ranks_[1]->network->local_address()};
    for (auto& r : ranks_) r->network->set_peer_addresses(addresses);
    // The constructor is a collective: both at once.
    std::thread other([this] { start(1); });
    start(0);
    other.join();
  }
  ~TwoHosts() {
    // Every beat stops before any counter goes, as ARMCI_Finalize's fence ensures.
    for (auto& r : ranks_) r->heartbeat->stop();
    // The last beats reach their targets (a flush needs both ends' progress here).
    platform::Completion flushed[2];
    for (int i = 0; i < 2; ++i)
      ranks_[i]->progress.with_network([&](platform::Network& net) { net.flush_all(flushed[i]); });
    while (!flushed[0].done() || !flushed[1].done())
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

bool someone_died() { return peer_failure_detail::g_first_dead.load() != kNoFailure; }

TEST(Heartbeat, BeatingRanksOfTwoHostsKeepEachOtherAlive) {
  TwoHosts job;
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
        TwoHosts job;
        job.heartbeat(1).stop();  // host b goes silent
        const auto end = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < end && !someone_died()) std::this_thread::sleep_for(10ms);
        check_peers();  // what every wait of the library does
        std::exit(0);
      },
      ::testing::ExitedWithCode(1), "rank 1 died \\(no heartbeat from host b for [0-9.]+ s\\)");
}

}  // namespace
}  // namespace armci
