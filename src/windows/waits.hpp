// The waits of a window's fences and PSCW epochs for their flag words
// (Window::wait_until, Window::wait_owed): templates on the condition, so
// shared by window.cpp, fence.cpp and pscw.cpp through this header.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>

#include "src/core/error.hpp"
#include "src/core/progress.hpp"
#include "src/windows/window.hpp"

namespace armci {

// Yields of a fence or PSCW wait on an oversubscribed node before it
// leaves the rest to Backoff (about a millisecond).
inline constexpr unsigned kWindowYieldRounds = 1024;

template <class Reached>
bool Window::wait_until(Reached reached, bool by_cpu) {
  if (reached()) return false;
  // The timeout counts from the first clock read, 128 polls in: most
  // waits end before it, and a clock read costs a large part of a whole
  // fence + put epoch between two cores.
  std::chrono::steady_clock::time_point start{};
  const auto limit = std::chrono::duration<double>(parts_.sync_timeout_seconds);
  bool late = false;
  unsigned polls = 0;
  auto done = [&] {
    if (reached()) return true;
    if (++polls % 128 != 0 || parts_.sync_timeout_seconds <= 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (polls == 128) start = now;
    late = now - start > limit;
    return late;
  };
  // A flag a neighbour stores is seen by a load: it is polled on its own
  // between rounds of network progress, unless ranks outnumber the cores
  // (no spin): then the rank that stores it may need this very core.
  if (by_cpu && Backoff::spin().count() > 0) {
    parts_.progress.until_stored(done);
  } else if (by_cpu) {
    // Ranks outnumber the cores: the member that stores the flag is most
    // likely waiting for this very core, so every failed poll hands it
    // over at once. Backoff's rounds poll the network between yields and
    // wait a few rounds before the first, which would double a short
    // epoch; network progress here runs every 16 yields, and a wait that
    // lasts (a member computing) goes back to Backoff, which naps.
    for (unsigned round = 1; round <= kWindowYieldRounds; ++round) {
      if (done()) break;
      sched_yield();
      if (round % 16 == 0) parts_.progress.progress();
    }
    if (!late && !reached()) parts_.progress.until(done);
  } else {
    parts_.progress.until(done);
  }
  return late;
}

template <class Want>
void Window::wait_owed(const char* call, const char* argument, const char* what, const char* likely_cause,
                       const std::vector<int>& ranks, const std::uint64_t* words, Want want, Stuck stuck,
                       std::size_t owed) {
  // A matched wait that polls ends long before the first look (a few
  // hundred microseconds of polls): it writes and reads nothing more.
  constexpr unsigned kStuckPolls = 4096;
  unsigned polls = 0;
  auto reached = [&] {
    owed = first_owed(ranks, owed, words, want);
    if (owed == ranks.size()) return true;
    if (stuck != Stuck::none && ++polls % kStuckPolls == 0) [[unlikely]] {
      if (stuck == Stuck::fence) {
        check_owed_posts(call);
      } else {
        if (polls == kStuckPolls) announce_waiting(call, ranks);
        check_start_cycle(call, ranks);
      }
    }
    return false;
  };
  if (!wait_until(reached, flags_by_cpu_)) return;
  for (int r : ranks)
    if (std::atomic_ref<const std::uint64_t>(words[r]).load(std::memory_order_acquire) < want(r))
      fail(call, "argument '%s': window rank %d (world rank %d) did not %s within ARMCI_WIN_SYNC_TIMEOUT "
                 "(%ld s): %s?", argument, r, world(r), what, parts_.sync_timeout_seconds, likely_cause);
}

}  // namespace armci
