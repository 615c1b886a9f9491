// Run-time settings, read once from the environment at ARMCI_Init: every
// ARMCI_* variable, the network layers' included, is parsed here from one
// table (settings.cpp), which the info output and armci_info print with
// each value and where it came from.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "platform/options.hpp"

namespace armci {

enum class NetworkChoice { automatic, ucx, verbs };
// ARMCI_SHM_FALLBACK: what an ARMCI_Malloc that /dev/shm cannot hold does.
// always: every part in network memory from the start, so the tests run
// the fallback's paths without a small /dev/shm.
enum class ShmFallback { memfd, network, error, always };
// What the helper thread does when it has nothing to serve.
enum class HelperMode { block, spin, none };
// ARMCI_PROTOCOL (contiguous; no host) and ARMCI_STRIDED_PROTOCOL: one
// family of protocols forced, or the selection table's choice by size.
enum class ProtocolChoice { automatic, direct, buffered, host };
// ARMCI_WIN_REORDER: what a window does with the puts and accs of an epoch
// (src/windows/window.hpp): issue them at once, hold them until the
// closing synchronisation behind the epoch's gets, or also combine the
// small ones to a target into one vector message.
enum class WinReorder { none, gets_first, combine };
// ARMCI_WIN_FENCE: how a window's fence epoch moves its operations
// (src/windows/window.hpp): issued at once and counted by arrival flags
// (immediate), or held until the closing fence, which sends them as
// messages the targets apply and counts them with a reduction (deferred,
// the two-sided design kept for comparison), or issued at once, puts to
// network targets with a notification each, counted by one reduction
// (counted: the write-with-immediate design).
enum class WinFence { immediate, deferred, counted };
// ARMCI_WIN_LOCK_MIGRATE: whether a window's lock that spans the network
// moves to CPU atomics for its node neighbours (src/windows/locks.cpp):
// never (pinned: network atomics for every locker), at once, or after N
// locks in a row of a node neighbour through the network.
enum class WinLockMigrate { pinned, always, after };

// ARMCI_HELPER_CPU's words: keep the helper off the application's CPU where
// the process may use another (auto), or leave its placement alone (none).
constexpr int kHelperCpuAuto = -1;
// ARMCI_WAIT_SPIN_US=auto: spin while this node's ranks fit its CPUs.
constexpr long kWaitSpinAuto = -1;
constexpr int kHelperCpuNone = -2;

struct Settings {
  NetworkChoice network = NetworkChoice::automatic;  // ARMCI_NETWORK
  bool shared_memory = true;                         // ARMCI_SHM
  int vnode_size = 0;                                // ARMCI_VNODE_SIZE (0: whole host)
  int verbose = 0;                                   // ARMCI_VERBOSE
  std::size_t acc_chunk = 64 * 1024;                 // ARMCI_ACC_CHUNK: bytes per Acc message
  HelperMode helper = HelperMode::block;             // ARMCI_HELPER (ARMCI_PROGRESS_THREAD=0: none)
  long helper_spin_us = 50;                          // ARMCI_HELPER_SPIN_US: spin before blocking
  int helper_cpu = kHelperCpuAuto;                   // ARMCI_HELPER_CPU: or kHelperCpuNone, or a CPU
  long progress_idle_us = 200;                       // ARMCI_PROGRESS_IDLE_US
  long wait_spin_us = kWaitSpinAuto;                 // ARMCI_WAIT_SPIN_US: poll before yielding
  ProtocolChoice protocol = ProtocolChoice::automatic;  // ARMCI_PROTOCOL
  std::size_t buffered_max = 0;                      // ARMCI_BUFFERED_MAX: automatic buffered up to here
  std::size_t buffer_chunk = 64 * 1024;              // ARMCI_BUFFER_CHUNK: bytes per pool buffer
  std::size_t buffer_count = 32;                     // ARMCI_BUFFER_COUNT: pool buffers
  // ARMCI_OFFLOAD_MIN: from this size nonblocking transfers that need a
  // core are the helper's (off: never). Measured defaults: 2 MiB where the
  // layer copies on the caller (UCX, same host), 16 KiB on a software
  // verbs device, where a transfer takes far longer than the handoff.
  std::size_t offload_min = 2 * 1024 * 1024;
  std::size_t offload_min_software = 16 * 1024;
  std::size_t max_pending = 16384;                   // ARMCI_MAX_PENDING: unfinished operations
  std::size_t aggregate_bytes = 64 * 1024;           // ARMCI_AGGREGATE_BYTES: one vector message
  std::size_t aggregate_piece_max = 1024;            // ARMCI_AGGREGATE_PIECE_MAX: larger pieces go alone
  ProtocolChoice strided = ProtocolChoice::automatic;  // ARMCI_STRIDED_PROTOCOL
  std::size_t strided_buffered_max = 2048;           // ARMCI_STRIDED_BUFFERED_MAX: piece size
  std::size_t strided_host_max = 16 * 1024;          // ARMCI_STRIDED_HOST_MAX: piece size
  // ARMCI_MALLOC_KEEP: bytes of its freed ARMCI_Malloc parts a rank keeps
  // for later allocations (capped by a share of /dev/shm, see Memory).
  std::size_t malloc_keep = 64 * 1024 * 1024;
  ShmFallback shm_fallback = ShmFallback::memfd;  // ARMCI_SHM_FALLBACK
  bool return_on_peer_failure = false;              // ARMCI_ON_PEER_FAILURE=return (abort: false)
  long win_sync_timeout_s = 60;                      // ARMCI_WIN_SYNC_TIMEOUT: PSCW waits (0: none)
  WinReorder win_reorder = WinReorder::none;         // ARMCI_WIN_REORDER
  WinFence win_fence = WinFence::immediate;          // ARMCI_WIN_FENCE
  WinLockMigrate win_lock_migrate = WinLockMigrate::pinned;  // ARMCI_WIN_LOCK_MIGRATE
  unsigned win_lock_migrate_after = 1;                // its N (after:N; always is 1)
  // ARMCI_HEARTBEAT_MS (0: off), ARMCI_HEARTBEAT_TIMEOUT_MS: between hosts
  // (src/core/heartbeat.hpp). Five seconds of silence stays clear of the
  // stalls of an emulated guest on a loaded machine yet reports a lost host
  // well within ten.
  long heartbeat_ms = 500;
  long heartbeat_timeout_ms = 5000;
  platform::NetworkOptions network_options;          // ARMCI_VERBS_*, ARMCI_UCX_ERR_MODE

  // Parses the environment; a malformed value is an error naming the variable.
  static Settings from_environment();

  // Every setting, in the table's order.
  struct Row {
    const char* name;
    const char* description;  // one line
    std::string value;
    const char* source;  // "environment" or "default"
  };
  std::vector<Row> rows() const;
  // One line per setting (prefix, NAME=value (source)), as the info output prints it.
  std::string describe(const char* prefix) const;

 private:
  std::vector<bool> from_environment_;  // by row of the table
};

const char* to_string(NetworkChoice choice);
const char* to_string(HelperMode mode);
const char* to_string(ProtocolChoice choice);
const char* to_string(WinReorder reorder);
const char* to_string(WinFence fence);

}  // namespace armci
