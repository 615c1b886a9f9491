// Peer failure: the ranks known to have died, from whatever told us (the
// launcher's PMIx events, a neighbour's process gone, a network error),
// and what the waiting loops do about it. Any thread may note a death;
// every loop that waits on other ranks (Progress::until, the bootstrap's
// fences) and every API entry checks, so a survivor's call ends in an error
// naming the dead rank and the user's call instead of a hang.
//
// ARMCI_ON_PEER_FAILURE=abort (the default) ends the process with that
// error (exit status 1, shared-memory names removed), so with a launcher
// that keeps the job running after a death (mpirun --mca
// orte_enable_recovery 1) every survivor still ends.
//
// ARMCI_ON_PEER_FAILURE=return throws PeerDead instead, which the API turns
// into ARMCI_ERR_PEER_DEAD. The job is then "failed": every collective
// returns the error at once; a call that needs a dead rank (its memory,
// its mutexes, a handle or fence on it) returns it; one-sided work among
// the live ranks goes on; a wait that is not over within
// kWaitAfterFailure of the death being known returns the error too (it may
// wait on the dead rank in a way no one can tell, a mutex it held, say).
// None of this costs the no-failure path anything beyond the one test of
// g_first_dead that abort mode makes too: the dead rank's regions leave
// the region table, so a transfer to it fails in the lookup's miss path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace armci {

// The API call the application is in (set at every entry point), named by
// errors that arise below it (peer failures, exceptions).
// Protected where defined, as copy_bytes: every entry point calls it.
void set_current_call(const char* call);
const char* current_call();

// No rank has died (g_first_dead); -1 stands for the launcher.
constexpr int kNoFailure = -2;

// Return mode: how long a wait goes on once a death is known, for waits
// that may or may not depend on the dead rank.
constexpr std::chrono::seconds kWaitAfterFailure{2};

// How long a network error waits for a death to explain it (see
// await_peer_failure): well inside the 10 s in which a survivor must
// hear of a death, and paid only on the way to an error.
constexpr std::chrono::milliseconds kNetworkErrorGrace{1000};

// Thrown in return mode; not a std::exception, so the library's own
// `catch (const std::exception&)` turning errors into fail() let it pass
// to the API, which returns ARMCI_ERR_PEER_DEAD.
struct PeerDead {
  int rank;
};

namespace peer_failure_detail {
extern std::atomic<int> g_first_dead;
}

inline bool peer_failure_known() {
  return peer_failure_detail::g_first_dead.load(std::memory_order_relaxed) != kNoFailure;
}

// ARMCI_ON_PEER_FAILURE=return (set once at start-up).
void set_return_on_peer_failure(bool on);
bool return_on_peer_failure();

// Runs on the application's thread, at an API entry, once per death noted
// (return mode): the runtime drops the dead rank's regions there, where no
// operation holds one.
void set_peer_death_hook(std::function<void(int rank)> hook);

// Records that `rank` died (-1: the launcher itself is gone); `why` says who
// said so. Thread-safe; the first report is the one the error names.
void note_peer_failure(int rank, const char* why);

// Every rank has passed ARMCI_Finalize's last barrier (true) or a new job
// starts (false): from the barrier on, a peer's exit is its normal end, not
// a death. A rank through the final bootstrap fence may exit while a slower
// one is still in it, whose liveness probe then saw "rank N died" after a
// run that had verified.
void set_job_ending(bool ending);

// Some rank died, seen at an API entry: abort mode ends the process with
// the error; return mode applies the deaths (the hook) and returns.
void report_peer_failure();

inline void check_peers() {
  if (peer_failure_known()) [[unlikely]]
    report_peer_failure();
}

// The rank is dead: abort mode ends the process, return mode throws PeerDead.
[[noreturn]] void peer_dead(int rank);
// The ranks known dead (sorted), and whether rank is one of them.
std::vector<int> dead_ranks();
bool is_dead(int rank);

// A call that needs rank (its mutex, a fence or handle on it): the error
// when it is dead. Costs one load when nobody died.
void check_alive_slow(int rank);
inline void check_alive(int rank) {
  if (peer_failure_known()) [[unlikely]]
    check_alive_slow(rank);
}

// A collective call (needs every rank of the job): the error at entry when
// any rank is dead, and its waits end at once on a death.
void require_all_alive(const char* call);

// A wait on other ranks that is not over: abort mode ends the process on a
// death; return mode throws once the call is collective or the wait has
// gone on kWaitAfterFailure since the death was first seen (since_ns: 0
// until then, kept by the waiting loop).
void check_peers_waiting(std::int64_t& since_ns);

// The error of the last call on this thread that returned early because
// of a dead peer (ARMCIX_Peer_error), cleared when read.
void note_returned_peer_error();
bool take_returned_peer_error();

// A slower check that asks the platform (a neighbour's process gone),
// rate-limited inside; long waits call it now and then. Abort mode ends
// the process when a rank is dead; return mode leaves that to the caller.
void set_liveness_probe(std::function<void()> probe);
void probe_liveness();

// A transfer to a process that is dying fails in the network (over verbs,
// "remote access error": its registrations go as its files close) before
// its process counts as exited or the launcher says so, and the error
// would name the network's symptom instead of the death. Waits up to
// `bound` for the death of `rank` (-1: of any rank) to be known, probing
// the same-host processes meanwhile (PMIx events arrive on their own
// thread); true when it is. Does not end the process.
bool await_peer_failure(int rank, std::chrono::milliseconds bound);

}  // namespace armci
