// Progress: the one network layer shared by the application's thread and the
// helper thread, the mutex that serialises them, the waiting loops, and the
// helper thread itself (its placement, its sleep on the layer's wakeup
// descriptor, the kicks that wake it).
//
// Owns: the network mutex, the helper thread and its eventfds, the list of
// background work (parts whose transfers move on with progress: the buffered
// pipeline, host-assisted transfers served here).
// Called by: every part that talks to the network (with_network), every
// waiting loop (until), the bootstrap while a collective waits; the
// completion part drains pipelines before a fence.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/network.hpp"
#include "src/core/peer_failure.hpp"
#include "src/core/settings.hpp"

namespace armci {

// Waiting loops spin briefly, then give the core away: with more ranks than
// cores the rank being waited for may need this very core.
class Backoff {
 public:
  // How long every wait polls before it starts to give its CPU away; set
  // once at ARMCI_Init (Runtime) from ARMCI_WAIT_SPIN_US.
  static void set_spin(std::chrono::nanoseconds spin) { spin_.store(spin.count(), std::memory_order_relaxed); }
  static std::chrono::nanoseconds spin() { return std::chrono::nanoseconds(spin_.load(std::memory_order_relaxed)); }
  // Retries of a word another rank holds (a window lock): each pause waits
  // twice as long as the last, from 250 ns to 256 us (yielding from 4 us),
  // so the contenders do not take the cache line from its holder at every
  // retry.
  static Backoff contended() {
    Backoff b;
    b.delay_ns_ = kFirstDelayNs;
    return b;
  }
  void pause();

 private:
  static constexpr long kFirstDelayNs = 250, kMaxDelayNs = 256 * 1000, kYieldFromNs = 4 * 1000;
  void pause_contended();
  static inline std::atomic<std::int64_t> spin_{0};
  long delay_ns_ = 0;  // 0: a wait's backoff; else contended()'s next delay
  unsigned spins_ = 0;
  std::chrono::steady_clock::time_point since_{};
  std::chrono::steady_clock::time_point spin_until_{};
  bool spinning_ = false;
};

// Work that moves on whenever the network is progressed, by whichever
// thread does it. advance() runs with the network mutex held.
class BackgroundWork {
 public:
  virtual ~BackgroundWork() = default;
  // Moves the work on, starting at most new_chunks new pieces of each
  // transfer; returns how many events it handled.
  virtual int advance(std::size_t new_chunks) = 0;
  // Anything to move (read without the lock, any thread).
  bool busy() const { return active_.load(std::memory_order_relaxed) != 0; }
  // A pipeline: the helper keeps serving it even while the application
  // drives the network itself (its copies are what the application overlaps).
  bool is_pipeline() const { return pipeline_; }

 protected:
  explicit BackgroundWork(bool pipeline) : pipeline_(pipeline) {}
  std::atomic<int> active_{0};  // transfers under way

 private:
  bool pipeline_;
};

// A bound on the waits of one thread while it lives, for a collective that
// has no timeout of its own (a window fence's reduction and barrier under
// ARMCI_WIN_SYNC_TIMEOUT: a live member that never arrives would hang the
// others, and no death detection ends that). Checked beside the liveness
// probe, every 256 rounds of a wait: a wait that ends sooner pays nothing,
// and no clock is read before the first check, from which the bound counts.
class WaitDeadline {
 public:
  // seconds <= 0: no bound. expire(context) reports the error (it does not return).
  using Expire = void (*)(const void* context);
  WaitDeadline(long seconds, Expire expire, const void* context) : previous_(current_) {
    if (seconds <= 0) return;
    seconds_ = seconds;
    expire_ = expire;
    context_ = context;
    current_ = this;
  }
  ~WaitDeadline() { current_ = previous_; }
  WaitDeadline(const WaitDeadline&) = delete;
  WaitDeadline& operator=(const WaitDeadline&) = delete;
  static void check() {
    if (current_ != nullptr) [[unlikely]]
      current_->check_slow();
  }
  // The world rank this thread's current wait expects to hear from, or -1:
  // lets an expiry name the member that never came. A collective's receive
  // sets it for as long as it waits.
  static int awaited() { return awaited_; }
  class Awaiting {
   public:
    explicit Awaiting(int world_rank) : previous_(awaited_) { awaited_ = world_rank; }
    ~Awaiting() { awaited_ = previous_; }
    Awaiting(const Awaiting&) = delete;
    Awaiting& operator=(const Awaiting&) = delete;

   private:
    int previous_;
  };

 private:
  void check_slow();
  static inline thread_local WaitDeadline* current_ = nullptr;
  static inline thread_local int awaited_ = -1;
  WaitDeadline* previous_;
  long seconds_ = 0;
  Expire expire_ = nullptr;
  const void* context_ = nullptr;
  std::chrono::steady_clock::time_point since_{};
  bool started_ = false;
};

// Gives the calling thread a name that ps, top -H and perf's sched traces
// show, so a trace tells the library's threads from the application's.
void name_this_thread(const char* name);

class Progress {
 public:
  // network: nullptr when every peer is reached without one.
  Progress(const Settings& settings, int rank, platform::Network* network);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool has_network() const { return network_ != nullptr; }
  // The layer's capabilities: fixed once it exists, so any thread reads
  // them without the lock. Only with a network.
  const platform::Capabilities& capabilities() const { return network_->capabilities(); }
  std::size_t max_sge() const { return network_ ? network_->capabilities().max_sge : 1; }
  // Every call into the network layer holds the network mutex: the helper
  // thread and the application's thread share one (serialised) layer. The
  // same-node path never takes it.
  template <typename F>
  decltype(auto) with_network(F&& f) {
    application_progress_.fetch_add(1, std::memory_order_relaxed);  // inside the library: the helper keeps off
    std::lock_guard guard(mutex_);
    return f(*network_);
  }
  // with_network(f), then one round of the layer's progress under the same
  // lock: for a blocking operation whose completion may already be there
  // when the post returns (a software device runs the whole exchange in the
  // poster's system call, rdma_rxe's atomics), so that its wait finds it
  // done without another round through the lock.
  template <typename F>
  void with_network_then_progress(F&& f) {
    application_progress_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard guard(mutex_);
      f(*network_);
      network_->progress();
      advance_background();
    }
    wake_helper_for_background();
  }
  // This process's notifications received with `tag`, read without the
  // mutex: the layer's counts are thread-safe (platform::NotificationCounts),
  // so a fence polling them does not contend with the helper's progress.
  std::uint64_t notifications_received(std::uint32_t tag) const {
    return network_ ? network_->notifications_received(tag) : 0;
  }
  // The layer itself, for code that already holds the mutex: message
  // handlers and background work (they run inside progress()).
  platform::Network& network_locked() { return *network_; }
  std::mutex& mutex() { return mutex_; }

  // One round of progress. advance_pipelines=false: only the layer's own
  // progress, never waiting for a helper that is busy copying chunks (right
  // after a nonblocking call started them).
  void progress(bool advance_pipelines = true) {
    if (!network_) return;
    application_progress_.fetch_add(1, std::memory_order_relaxed);  // tells the helper to keep off
    if (!advance_pipelines) {
      std::unique_lock lock(mutex_, std::try_to_lock);
      if (lock) network_->progress();
    } else {
      std::lock_guard guard(mutex_);
      network_->progress();
      advance_background();
    }
    wake_helper_for_background();
  }
  // For a thread that is neither the application's nor the helper (the
  // heartbeat): one round of the layer's progress, then f(network), under
  // the mutex, without counting as the application being in the library
  // (which would keep the helper off the network).
  template <typename F>
  void aside(F&& f) {
    if (!network_) return;
    {
      std::lock_guard guard(mutex_);
      network_->progress();
      f(*network_);
    }
    wake_helper_for_background();
  }
  // Every wait on other ranks comes through here, so a dead peer ends it
  // (peer_failure.hpp) instead of hanging.
  template <typename Done>
  void until(Done done) {
    Backoff backoff;
    unsigned rounds = 0;
    std::int64_t failure_seen_ns = 0;
    while (!done()) {
      progress();
      if (done()) break;
      if (peer_failure_known()) [[unlikely]]
        check_peers_waiting(failure_seen_ns);
      if ((++rounds & 255) == 0) {
        probe_liveness();
        WaitDeadline::check();
      }
      backoff.pause();
    }
  }

  // A wait for a node neighbour's store to shared memory: the condition is
  // polled on its own a while between rounds of network progress, each of
  // which costs as much as a message takes to arrive (a poll is a load from
  // the cache).
  template <typename Done>
  void until_stored(Done done) {
    until([&] {
      for (int poll = 0; poll < 128; ++poll)
        if (done()) return true;
      return false;
    });
  }

  // Background work is registered once, at start-up, before the helper runs.
  void add_background(BackgroundWork& work) { background_.push_back(&work); }
  // Pipelines still waiting for buffers are not on the wire yet: a fence
  // first lets them all go.
  void drain_pipelines() {
    if (pipelines_busy()) until([&] { return !pipelines_busy(); });
  }
  // Every background work finished (shutdown).
  void drain_background() {
    until([&] { return !background_busy(); });
  }

  void start_helper();
  void stop_helper();
  bool helper_running() const { return helper_.joinable(); }
  // Wakes the helper at once: a nonblocking call left pipeline work. Even a
  // serving helper may be asleep on the network's wakeup, which a pipeline
  // copying through the CPU (UCX within one host) never fires.
  void kick_helper();

 private:
  // A handler run by progress() may have started work (serving a peer's
  // strided transfer) that moves on with our own completions, which the
  // sleeping helper does not hear of: it must, should the application leave now.
  void wake_helper_for_background() {
    if (helper_hears_peers_only_.load(std::memory_order_relaxed) && background_busy() &&
        helper_hears_peers_only_.exchange(false, std::memory_order_relaxed))
      kick_helper();
  }
  int advance_background(std::size_t new_chunks = SIZE_MAX) {
    int events = 0;
    for (BackgroundWork* work : background_)
      if (work->busy()) events += work->advance(new_chunks);
    return events;
  }
  bool background_busy() const {
    for (const BackgroundWork* work : background_)
      if (work->busy()) return true;
    return false;
  }
  bool pipelines_busy() const {
    for (const BackgroundWork* work : background_)
      if (work->is_pipeline() && work->busy()) return true;
    return false;
  }
  void helper_loop(int wakeup);
  void place_helper();
  bool only_one_cpu_allowed() const;

  const Settings& settings_;
  int rank_;
  platform::Network* network_;
  std::mutex mutex_;
  std::vector<BackgroundWork*> background_;
  std::thread helper_;
  bool shares_core_ = false;  // the helper runs on the application's only CPU
  std::atomic<std::uint64_t> application_progress_{0};
  // The helper sleeps armed for what peers send only (no background work).
  std::atomic<bool> helper_hears_peers_only_{false};
  int stop_ = -1;  // eventfd: the helper ends
  int kick_ = -1;  // eventfd: pipeline work for the helper
};

}  // namespace armci
