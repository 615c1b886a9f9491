// Heartbeat between hosts: a lost host is a peer failure within seconds.
// Neither PMIx nor the network says anything when a whole host vanishes
// (power, kernel, cable): its daemon's ssh link times out after a minute,
// and a transfer to it may never be posted at all. So each rank pairs with
// at least one rank of every other host (partners(): every rank of both
// hosts, whatever their rank counts), and each of a pair bumps a counter of
// its own in the other's memory by a network put every ARMCI_HEARTBEAT_MS
// from a thread of its own (so a rank computing outside the library still
// beats); a counter that stays put for ARMCI_HEARTBEAT_TIMEOUT_MS is
// note_peer_failure() for its rank, which every wait of the library then
// reports.
//
// Nothing on the Put/Get path: the thread takes the network mutex once a
// period. Ranks of one host (virtual nodes included) never beat: their
// deaths are seen through their processes (platform/shm/liveness).
//
// Owns: the heartbeat thread, the registered counters (one per partner),
// the remote keys of the ranks it beats to.
// Called by: the runtime (made at start-up, a collective; stopped after the
// last barrier of ARMCI_Finalize, released after the fence that follows).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "platform/network.hpp"
#include "src/core/peers.hpp"
#include "src/core/progress.hpp"
#include "src/core/settings.hpp"

namespace armci {

class Heartbeat {
 public:
  using Allgather = std::function<std::vector<std::vector<std::byte>>(std::span<const std::byte>)>;
  // Collective over every rank when the job spans more than one host (the
  // allgather of the counters' keys); starts the thread.
  Heartbeat(const Peers& peers, Progress& progress, const Settings& settings, const Allgather& allgather);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // True when some rank of another host is watched (for armci_info).
  bool watching() const { return !watched_.empty(); }
  std::string describe() const;
  // Ends the beats (and waits for the last put); the counters stay
  // registered until the destructor, after every rank has stopped.
  void stop();

  // The ranks that the rank at `index` of host `host` beats to and watches,
  // by host then rank (hosts: each host's ranks): rank i of a host of nA
  // ranks and rank j of another of nB are partners iff i % m == j % m,
  // m = min(nA, nB). Symmetric, so a rank's watched ranks are exactly those
  // that beat to it, and every rank of either host has a partner on the
  // other, so none goes unwatched when the hosts' rank counts differ.
  static std::vector<int> partners(const std::vector<std::vector<int>>& hosts, std::size_t host, int index);

 private:
  struct Target {
    Target(int r, std::uint64_t a, platform::RemoteKey k) : rank(r), address(a), key(k) {}
    int rank;
    std::uint64_t address;  // its counter for this rank
    platform::RemoteKey key;
    std::uint64_t beat = 0;  // the source of its puts; changed only when none is in flight
    platform::Completion sent;
  };
  struct Watched {
    int rank;
    std::size_t slot;  // its counter in counters_
    std::size_t host;  // of `rank`, into host_names_
    std::uint64_t last = 0;
    std::chrono::steady_clock::time_point since;
    bool reported = false;
  };

  void run();
  void beat();
  void check(std::chrono::steady_clock::time_point now);

  const Peers& peers_;
  Progress& progress_;
  std::chrono::milliseconds period_;
  std::chrono::milliseconds timeout_;
  std::vector<std::uint64_t> counters_;  // one per partner (see partners()); written by its puts
  platform::MemoryHandle registration_;
  std::deque<Target> targets_;  // a deque: a Target does not move (its completion)
  std::vector<Watched> watched_;
  std::vector<std::string> host_names_;  // by host index
  std::chrono::steady_clock::time_point last_check_;
  std::thread thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;  // under stop_mutex_
};

}  // namespace armci
