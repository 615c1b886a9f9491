// Peer failure: the ranks known to have died, from whatever told us (the
// launcher's PMIx events, a neighbour's process gone, a network error),
// and what the waiting loops do about it. Any thread may note a death;
// every loop that waits on other ranks (Progress::until, the bootstrap's
// fences) and every API entry checks, so a survivor's call ends in an error
// naming the dead rank and the user's call instead of a hang.
//
// ARMCI_ON_PEER_FAILURE=abort (the default and, for now, the only policy)
// ends the process with that error (exit status 1, shared-memory names
// removed), so with a launcher that keeps the job running after a death
// (mpirun --mca orte_enable_recovery 1) every survivor still ends.
#pragma once

#include <atomic>
#include <functional>

namespace armci {

// The API call the application is in (set at every entry point), named by
// errors that arise below it (peer failures, exceptions).
void set_current_call(const char* call);
const char* current_call();

// No rank has died (g_first_dead); -1 stands for the launcher.
constexpr int kNoFailure = -2;

namespace peer_failure_detail {
extern std::atomic<int> g_first_dead;
}

// Records that `rank` died (-1: the launcher itself is gone); `why` says who
// said so. Thread-safe; the first report is the one the error names.
void note_peer_failure(int rank, const char* why);

// Some rank died: ends the call in progress with the error (abort policy).
[[noreturn]] void report_peer_failure();

inline void check_peers() {
  if (peer_failure_detail::g_first_dead.load(std::memory_order_relaxed) != kNoFailure) [[unlikely]]
    report_peer_failure();
}

// A slower check that asks the platform (a neighbour's process gone),
// rate-limited inside; long waits call it now and then.
void set_liveness_probe(std::function<void()> probe);
void probe_liveness();

}  // namespace armci
