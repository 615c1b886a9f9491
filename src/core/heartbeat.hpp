// Heartbeat between hosts: a lost host is a peer failure within seconds.
// Neither PMIx nor the network says anything when a whole host vanishes
// (power, kernel, cable): its daemon's ssh link times out after a minute,
// and a transfer to it may never be posted at all. So each rank has one
// watched rank on every other host, which bumps a counter in this rank's
// memory by a network put every ARMCI_HEARTBEAT_MS from a thread of its
// own (so a rank computing outside the library still beats); a counter
// that stays put for ARMCI_HEARTBEAT_TIMEOUT_MS is note_peer_failure() for
// its rank, which every wait of the library then reports.
//
// Nothing on the Put/Get path: the thread takes the network mutex once a
// period. Ranks of one host (virtual nodes included) never beat: their
// deaths are seen through their processes (platform/shm/liveness).
//
// Owns: the heartbeat thread, the registered counters (one per other host),
// the remote keys of the ranks it beats to.
// Called by: the runtime (made at start-up, a collective; stopped after the
// last barrier of ARMCI_Finalize, released after the fence that follows).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
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

  // Whom rank `me` (local index `index` on its host) watches on a host of
  // `count` ranks, and so whom a rank beats to: the pairing both sides
  // compute alone. Every rank of the bigger host gets a watched rank.
  static int watched_index(int index, int count) { return index % count; }

 private:
  struct Target {
    int rank;
    std::uint64_t address;  // its counter for this rank's host
    platform::RemoteKey key;
  };
  struct Watched {
    int rank;
    std::size_t slot;  // index into counters_ (the host of `rank`)
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
  std::vector<std::uint64_t> counters_;  // by host index; written by peers' puts
  platform::MemoryHandle registration_;
  std::vector<Target> targets_;
  std::vector<Watched> watched_;
  std::vector<std::string> host_names_;  // by host index
  std::chrono::steady_clock::time_point last_check_;
  std::uint64_t beat_ = 0;                // the source of every put; changed only when none is in flight
  platform::Completion sent_;
  std::thread thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;  // under stop_mutex_
};

}  // namespace armci
