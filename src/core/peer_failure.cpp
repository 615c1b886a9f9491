#include "src/core/peer_failure.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "src/core/error.hpp"

namespace armci {

namespace peer_failure_detail {
std::atomic<int> g_first_dead{kNoFailure};
}

namespace {
// The call of each application thread (ARMCI_Init_thread with several
// threads in the library: one in Put, another in Barrier); the library's own
// threads (helper, heartbeat, PMIx events) have none and name the call the
// application was last in, which is the one their error ends.
// Set at every entry point, so in the initial-exec TLS model: one load
// from %fs, where a shared library's default model calls __tls_get_addr
// (a quarter of an 8-byte armci_msg_bcast). The few bytes fit glibc's
// static TLS surplus should a program dlopen the library.
[[gnu::tls_model("initial-exec")]] thread_local const char* t_call = nullptr;
std::atomic<const char*> g_call{nullptr};
// The collective call in progress (require_all_alive), compared with g_call
// by waits: a wait of a collective ends at once on a death.
std::atomic<const char*> g_collective_call{nullptr};
std::atomic<bool> g_return{false};
std::atomic<bool> g_job_ending{false};
std::mutex g_mutex;
std::string g_why;              // under g_mutex
std::vector<int> g_dead;        // under g_mutex, sorted
std::size_t g_applied = 0;      // under g_mutex: how many of g_dead the hook has seen
std::set<const char*> g_told;   // under g_mutex: calls whose error was printed
std::function<void(int)> g_death_hook;
std::function<void()> g_probe;
std::atomic<std::int64_t> g_next_probe_ns{0};
[[gnu::tls_model("initial-exec")]] thread_local bool t_returned_error = false;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void abort_on_failure() {
  std::string why;
  {
    std::lock_guard guard(g_mutex);
    why = g_why;
  }
  fail(current_call(), "%s; ending this process (ARMCI_ON_PEER_FAILURE=abort)", why.c_str());
}
}  // namespace

[[gnu::visibility("protected")]] void set_current_call(const char* call) {
  // Written only when it changes: most calls repeat the previous one (a
  // loop of puts), and right after a large copy a store waits for the
  // copy's stores to drain, where a load does not.
  if (t_call != call) t_call = call;
  if (g_call.load(std::memory_order_relaxed) != call) g_call.store(call, std::memory_order_relaxed);
}
namespace {
const char* call_of_this_thread() { return t_call ? t_call : g_call.load(std::memory_order_relaxed); }
}  // namespace
const char* current_call() {
  const char* call = call_of_this_thread();
  return call ? call : "ARMCI (outside any call)";
}

void set_return_on_peer_failure(bool on) { g_return.store(on, std::memory_order_relaxed); }
bool return_on_peer_failure() { return g_return.load(std::memory_order_relaxed); }

void set_peer_death_hook(std::function<void(int)> hook) {
  std::lock_guard guard(g_mutex);
  g_death_hook = std::move(hook);
  g_applied = 0;
}

void set_job_ending(bool ending) { g_job_ending.store(ending, std::memory_order_release); }

void note_peer_failure(int rank, const char* why) {
  if (g_job_ending.load(std::memory_order_acquire)) return;
  std::lock_guard guard(g_mutex);
  // Every dead rank is named: once one survivor ends, the others may see
  // its exit before the death that caused it, so the first seen need not be
  // the cause.
  const std::string who = rank < 0 ? "the launcher" : "rank " + std::to_string(rank);
  if (g_why.find(who + " ") != std::string::npos) return;
  g_why += (g_why.empty() ? "" : ", ") + who + (rank < 0 ? " is gone (" : " died (") + why + ")";
  if (rank >= 0) g_dead.insert(std::upper_bound(g_dead.begin(), g_dead.end(), rank), rank);
  int expected = kNoFailure;
  peer_failure_detail::g_first_dead.compare_exchange_strong(expected, rank);
}

void report_peer_failure() {
  if (!return_on_peer_failure()) abort_on_failure();
  // Deaths noted since the last entry: the hook drops what they owned. It
  // runs unlocked (it takes the network's mutex, which a noting thread may
  // hold); g_applied moves first so that no other thread runs it twice.
  for (;;) {
    std::function<void(int)> hook;
    int rank = -1;
    {
      std::lock_guard guard(g_mutex);
      if (g_applied >= g_dead.size()) return;
      rank = g_dead[g_applied++];
      hook = g_death_hook;
    }
    if (hook) hook(rank);
  }
}

std::vector<int> dead_ranks() {
  std::lock_guard guard(g_mutex);
  return g_dead;
}

bool is_dead(int rank) {
  std::lock_guard guard(g_mutex);
  return std::binary_search(g_dead.begin(), g_dead.end(), rank);
}

void peer_dead(int rank) {
  if (!return_on_peer_failure()) abort_on_failure();
  const char* call = current_call();
  std::string why;
  bool first_for_call = false;
  {
    std::lock_guard guard(g_mutex);
    why = g_why;
    first_for_call = g_told.insert(call).second;
  }
  // Once per call: a program that goes on calling must not flood stderr.
  if (first_for_call)
    std::fprintf(stderr, "armci: rank %d: %s: %s; returning ARMCI_ERR_PEER_DEAD (ARMCI_ON_PEER_FAILURE=return)\n",
                 error_rank(), call, why.c_str());
  throw PeerDead{rank};
}

void check_alive_slow(int rank) {
  if (!return_on_peer_failure()) abort_on_failure();
  if (is_dead(rank)) peer_dead(rank);
}

void require_all_alive(const char* call) {
  // Both from this one pointer: equal literals need not share an address.
  set_current_call(call);
  g_collective_call.store(call, std::memory_order_relaxed);
  if (peer_failure_known()) [[unlikely]]
    peer_dead(peer_failure_detail::g_first_dead.load(std::memory_order_relaxed));
}

void check_peers_waiting(std::int64_t& since_ns) {
  if (!peer_failure_known()) [[likely]]
    return;
  if (!return_on_peer_failure()) abort_on_failure();
  const int first = peer_failure_detail::g_first_dead.load(std::memory_order_relaxed);
  const char* call = call_of_this_thread();
  if (call != nullptr && call == g_collective_call.load(std::memory_order_relaxed)) peer_dead(first);
  const std::int64_t now = now_ns();
  if (since_ns == 0) since_ns = now;
  else if (now - since_ns > std::chrono::duration_cast<std::chrono::nanoseconds>(kWaitAfterFailure).count())
    peer_dead(first);
}

void note_returned_peer_error() { t_returned_error = true; }
bool take_returned_peer_error() { return std::exchange(t_returned_error, false); }

void set_liveness_probe(std::function<void()> probe) {
  std::lock_guard guard(g_mutex);
  g_probe = std::move(probe);
}

namespace {
void run_probe() {
  std::function<void()> probe;
  {
    std::lock_guard guard(g_mutex);
    probe = g_probe;
  }
  if (probe) probe();
}
}  // namespace

bool await_peer_failure(int rank, std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    run_probe();
    if (rank < 0 ? peer_failure_known() : is_dead(rank)) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void probe_liveness() {
  // A death must be seen within seconds, not microseconds: a probe every
  // 50 ms keeps its system calls out of short waits.
  const std::int64_t now = now_ns();
  std::int64_t next = g_next_probe_ns.load(std::memory_order_relaxed);
  if (now >= next && g_next_probe_ns.compare_exchange_strong(next, now + 50'000'000)) run_probe();
  if (peer_failure_known() && !return_on_peer_failure()) abort_on_failure();
}

}  // namespace armci
