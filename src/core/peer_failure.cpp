#include "src/core/peer_failure.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "src/core/error.hpp"

namespace armci {

namespace peer_failure_detail {
std::atomic<int> g_first_dead{kNoFailure};
}

namespace {
std::atomic<const char*> g_call{nullptr};
std::mutex g_mutex;
std::string g_why;  // under g_mutex
std::function<void()> g_probe;
std::atomic<std::int64_t> g_next_probe_ns{0};
}  // namespace

void set_current_call(const char* call) { g_call.store(call, std::memory_order_relaxed); }
const char* current_call() {
  const char* call = g_call.load(std::memory_order_relaxed);
  return call ? call : "ARMCI (outside any call)";
}

void note_peer_failure(int rank, const char* why) {
  std::lock_guard guard(g_mutex);
  // Every dead rank is named: once one survivor ends, the others may see
  // its exit before the death that caused it, so the first seen need not be
  // the cause.
  const std::string who = rank < 0 ? "the launcher" : "rank " + std::to_string(rank);
  if (g_why.find(who + " ") != std::string::npos) return;
  g_why += (g_why.empty() ? "" : ", ") + who + (rank < 0 ? " is gone (" : " died (") + why + ")";
  int expected = kNoFailure;
  peer_failure_detail::g_first_dead.compare_exchange_strong(expected, rank);
}

void report_peer_failure() {
  std::string why;
  {
    std::lock_guard guard(g_mutex);
    why = g_why;
  }
  fail(current_call(), "%s; ending this process (ARMCI_ON_PEER_FAILURE=abort)", why.c_str());
}

void set_liveness_probe(std::function<void()> probe) {
  std::lock_guard guard(g_mutex);
  g_probe = std::move(probe);
}

void probe_liveness() {
  // A death must be seen within seconds, not microseconds: a probe every
  // 50 ms keeps its system calls out of short waits.
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t next = g_next_probe_ns.load(std::memory_order_relaxed);
  if (now >= next && g_next_probe_ns.compare_exchange_strong(next, now + 50'000'000)) {
    std::function<void()> probe;
    {
      std::lock_guard guard(g_mutex);
      probe = g_probe;
    }
    if (probe) probe();
  }
  check_peers();
}

}  // namespace armci
