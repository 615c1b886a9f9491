#include "src/core/progress.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "src/core/error.hpp"

namespace armci {

void WaitDeadline::check_slow() {
  const auto now = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    since_ = now;
    return;
  }
  if (now - since_ > std::chrono::seconds(seconds_)) expire_(context_);
}

void Backoff::pause_contended() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(delay_ns_);
  while (std::chrono::steady_clock::now() < until)
    if (delay_ns_ >= kYieldFromNs) sched_yield();
  if (delay_ns_ < kMaxDelayNs) delay_ns_ *= 2;
}

void Backoff::pause() {
  if (delay_ns_ != 0) return pause_contended();
  // Oversubscribed (spin 0): the rank we wait for may be runnable on our very
  // core, and every poll round delays it; two rounds catch what is already
  // there, then the core goes to whoever has work.
  const unsigned polls = spin_.load(std::memory_order_relaxed) == 0 ? 2 : 32;
  if (++spins_ <= polls) return;
  if (spins_ <= 32) spins_ = 33;
  // A rank with a CPU of its own keeps it, as MPI's waits do: a yield on a
  // machine where other programs run hands the core away for a whole time
  // slice, which made an 8-byte reduction take 16 us instead of 0.2 while
  // builds ran beside it. Oversubscribed ranks (spin 0) yield at once.
  if (spins_ == 33) {
    const auto spin = Backoff::spin();
    if (spin.count() > 0) {
      spin_until_ = std::chrono::steady_clock::now() + spin;
      spinning_ = true;
    }
  }
  if (spinning_) {
    if (std::chrono::steady_clock::now() < spin_until_) {
      spins_ = 33;  // the yields below count from the end of the spin
      return;
    }
    spinning_ = false;
  }
  if (spins_ < 4096) {
    sched_yield();
    return;
  }
  // A wait this long (a rank idle in a barrier, a lock held for a while)
  // naps instead of yielding in a loop: on a machine with as many ranks as
  // cores, a yielding waiter still takes a whole core from the helper
  // threads and from everything else that has work.
  if (spins_ == 4096) {
    since_ = std::chrono::steady_clock::now();
    return;
  }
  if (std::chrono::steady_clock::now() - since_ < std::chrono::milliseconds(1)) {
    sched_yield();
    return;
  }
  const timespec nap{0, 50 * 1000};
  nanosleep(&nap, nullptr);
}

void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

Progress::Progress(const Settings& settings, int rank, platform::Network* network)
    : settings_(settings), rank_(rank), network_(network) {}

Progress::~Progress() { stop_helper(); }

void Progress::start_helper() {
  if (!network_ || settings_.helper == HelperMode::none) return;
  const int wakeup = network_->wakeup_fd();
  if (wakeup < 0) return;  // the layer cannot block: progress stays inside calls
  stop_ = eventfd(0, EFD_CLOEXEC);
  kick_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_ < 0 || kick_ < 0) fail("ARMCI_Init", "eventfd for the helper thread failed");
  shares_core_ = only_one_cpu_allowed();
  helper_ = std::thread([this, wakeup] {
    name_this_thread("armci-helper");
    helper_loop(wakeup);
  });
  place_helper();
}

// A launcher's default binding (mpirun, srun) gives each rank one core: the
// helper then shares the application's only CPU and must not spin on it.
// It keeps its normal priority: as SCHED_IDLE it got almost nothing while
// the application computed, so a peer's gets and puts to a busy target
// over UCX/TCP fell to 1-18 MB/s (target_busy), and an unprivileged thread
// cannot raise itself back when the application leaves the library.
bool Progress::only_one_cpu_allowed() const {
  if (settings_.helper_cpu >= 0) return false;  // placed on a CPU of its own
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  return sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) < 2;
}

// Where the helper runs. The kernel tends to wake a thread on its waker's
// core, which puts the helper on the application's own core just when it
// should copy beside it (an offloaded transfer then takes as long as doing
// it inline). When the process may use more than one CPU, the helper is
// kept off the one the application thread runs on at start-up (it may
// still move there; the application, unpinned, then moves away).
void Progress::place_helper() {
  if (settings_.helper_cpu == kHelperCpuNone) return;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  cpu_set_t chosen;
  CPU_ZERO(&chosen);
  if (settings_.helper_cpu >= 0) {
    CPU_SET(settings_.helper_cpu, &chosen);
  } else {
    if (CPU_COUNT(&allowed) < 2) return;  // bound to one core: share it
    chosen = allowed;
    const int mine = sched_getcpu();
    if (mine >= 0) CPU_CLR(mine, &chosen);
  }
  if (pthread_setaffinity_np(helper_.native_handle(), sizeof chosen, &chosen) != 0 && settings_.verbose > 0)
    std::fprintf(stderr, "armci: rank %d: could not place the helper thread\n", rank_);
}

// The helper serves the network while the application computes or sits in
// another library (MPI): Accs and vector messages addressed to us, the
// answers a network owes its peers, and the chunks of buffered transfers.
// While the application itself drives the network (it is waiting inside
// the library) the helper stays off it: taking turns on one layer and being
// woken by every completion would cost more than it serves (7x on put+fence
// over verbs). So it sleeps in steps and arms the network's wakeup only once
// a whole step went by without the application progressing. Steps double
// while the application stays busy, up to 4 times the first (800 us by
// default): the longest step is how long a peer may wait for us once the
// application has left the library (for MPI, or to compute), and a peer's
// operation can need this process's CPU (UCX over TCP emulates atomics and
// puts by messages the target's progress answers). At 64 times (12.8 ms) a
// window epoch over UCX/TCP whose target had just gone into MPI_Barrier
// took that long, and win_bench's lock + put + unlock read 0.1-1.9 ms
// instead of 56-70 us. The shorter bound costs about 1250 wakeups a second
// (a few microseconds of CPU each, a percent or two of the core) only
// while the application waits inside the library, where it spins anyway;
// while it computes the helper sleeps on the network's wakeup as before.
// Steps start again short once it has gone. A pipeline left unfinished by a nonblocking call kicks it
// awake at once: its copies are what the application overlaps. Asleep
// without background work it listens only for what peers send: the
// completions of the application's own operations are the application's to
// reap when it waits, and waking for them took the core from it just as it
// came back to the library.
void Progress::helper_loop(int wakeup) {
  const long shortest_ns = settings_.progress_idle_us * 1000;
  const long longest_ns = shortest_ns * 4;
  // Spinning on a shared core only takes it from the application.
  const bool spin = settings_.helper == HelperMode::spin && !shares_core_;
  const auto spin_for = std::chrono::microseconds(settings_.helper_spin_us);
  long step_ns = shortest_ns;
  pollfd control[2] = {{stop_, POLLIN, 0}, {kick_, POLLIN, 0}};
  pollfd all[3] = {{wakeup, POLLIN, 0}, {stop_, POLLIN, 0}, {kick_, POLLIN, 0}};
  // One read empties the eventfd (its counter, not a semaphore); a second
  // read only to hear EAGAIN is a system call on every wakeup.
  auto drain_kicks = [this] {
    std::uint64_t count;
    if (read(kick_, &count, sizeof count) < 0 && errno != EAGAIN) std::perror("armci: the helper's kick eventfd");
  };
  // One chunk per transfer at a time, the lock released in between: the
  // application's own calls get through while the helper copies.
  auto serve_once = [this] { return network_->progress() + advance_background(1); };
  auto application_moved = [this](std::uint64_t seen) {
    return application_progress_.load(std::memory_order_relaxed) != seen && !pipelines_busy();
  };
  std::uint64_t seen = application_progress_.load(std::memory_order_relaxed);
  for (;;) {
    const timespec step{step_ns / 1000000000, step_ns % 1000000000};
    const int ready = ppoll(control, 2, &step, nullptr);
    if (ready > 0 && (control[0].revents & POLLIN)) return;  // asked to stop
    const bool kicked = ready > 0 && (control[1].revents & POLLIN);
    if (kicked) drain_kicks();
    if (!kicked && application_moved(seen)) {
      seen = application_progress_.load(std::memory_order_relaxed);
      step_ns = std::min(step_ns * 2, longest_ns);
      continue;
    }
    step_ns = shortest_ns;
    for (;;) {
      // Back to stepping once the application drives the network itself and
      // left no pipeline work (a later kick wakes the step at once).
      if (application_moved(seen)) break;
      seen = application_progress_.load(std::memory_order_relaxed);
      if (spin) {
        // Spin-then-block: poll the network for a while before sleeping, a
        // core's worth of latency saved when events come close together.
        auto until = std::chrono::steady_clock::now() + spin_for;
        while (std::chrono::steady_clock::now() < until) {
          std::unique_lock lock(mutex_, std::try_to_lock);
          if (lock && serve_once() > 0) until = std::chrono::steady_clock::now() + spin_for;
          if (application_moved(seen)) break;
        }
      }
      for (;;) {
        std::lock_guard guard(mutex_);
        if (serve_once() == 0) break;
      }
      bool armed;
      {
        std::lock_guard guard(mutex_);
        if (serve_once() > 0) continue;
        const bool peers_only = !background_busy();
        armed = peers_only ? network_->arm_wakeup_for_peers() : network_->arm_wakeup();
        helper_hears_peers_only_.store(armed && peers_only, std::memory_order_relaxed);
      }
      if (!armed) continue;
      const int woken = poll(all, 3, -1);
      helper_hears_peers_only_.store(false, std::memory_order_relaxed);
      if (woken < 0 && errno != EINTR) return;
      if (all[1].revents & POLLIN) return;
      if (all[2].revents & POLLIN) drain_kicks();
    }
    seen = application_progress_.load(std::memory_order_relaxed);
  }
}

void Progress::stop_helper() {
  if (!helper_.joinable()) return;
  const std::uint64_t one = 1;
  if (write(stop_, &one, sizeof one) != sizeof one) std::perror("armci: stopping the helper thread");
  helper_.join();
  close(stop_);
  close(kick_);
  stop_ = kick_ = -1;
}

void Progress::kick_helper() {
  if (kick_ < 0) return;
  // The kick wakes the helper whatever it listens for: the progress round
  // that follows a nonblocking call (wake_helper_for_background) must not
  // kick it a second time: each write is a system call that a slow core
  // pays for in tens of microseconds, and every offloaded NbGet/NbPut paid two.
  helper_hears_peers_only_.store(false, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  if (write(kick_, &one, sizeof one) != sizeof one) std::perror("armci: waking the helper thread");
}

}  // namespace armci
