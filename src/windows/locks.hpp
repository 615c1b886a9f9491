// A window's passive-target locks: one interface, three kinds, of which the
// window picks one when it is made (from the window's span and
// ARMCI_WIN_LOCK_MIGRATE), so a lock pays no test of the kind.
//
// - network: one word per target changed only by Sync's atomics (network
//   atomics in a job that has a network); an exclusive lock is one
//   compare-and-swap 0 -> writer, a shared lock one fetch-and-add of a
//   reader, backed out again when the writer bit was set. Neither involves
//   the target's CPU.
// - cpu: every member shares this node's memory, so every locker is a CPU
//   with the target's control block mapped (locks.cpp, "CPU locks").
// - hybrid: a window that spans the network whose locks migrate between a
//   network word and a CPU word (locks.cpp, "Hybrid locks").
//
// The words live in the window's control block (window.hpp has its
// layout): kNetworkWord and kCpuWord at every member, and for cpu locks one
// reader word per group rank from readers_offset.
//
// Owns: nothing but the words' addresses and its counters.
// Called by: Window (lock, unlock, lock_all, unlock_all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/groups.hpp"
#include "src/core/progress.hpp"
#include "src/core/protocols/choices.hpp"
#include "src/core/settings.hpp"
#include "src/core/sync.hpp"

namespace armci {

class WindowLocks {
 public:
  // This rank's lock acquisitions on the window, by the word that served
  // them, and the migrations it made (or had its target make) to take one.
  struct Counters {
    std::uint64_t intra_node = 0;   // CPU atomics on the node-shared mapping
    std::uint64_t network = 0;      // network atomics
    std::uint64_t to_cpu = 0;       // migrations network -> CPU
    std::uint64_t to_network = 0;   // migrations CPU -> network
  };
  static constexpr std::size_t kNetworkWord = 0, kCpuWord = 8;

  virtual ~WindowLocks() = default;
  // Waits until this rank holds rank's lock (rank: a group rank).
  virtual void acquire(const char* call, int rank, bool exclusive) = 0;
  // After the epoch's operations were ordered before it.
  virtual void release(const char* call, int rank, bool exclusive) = 0;
  // Collective, once every member's claims were answered (window free).
  virtual void stop() {}
  virtual protocols::WinLockKind kind() const = 0;
  // The kind's row in the protocol table: lock/network, lock/cpu, lock/hybrid.
  const char* name() const { return protocols::name(kind()); }
  const Counters& counters() const { return counters_; }

 protected:
  explicit WindowLocks(Progress& progress) : progress_(progress) {}
  // A failed attempt: the network moves on (a CPU word's holder may wait
  // for this rank's progress), then the wait backs off.
  void pause(Backoff& backoff) {
    progress_.progress();
    backoff.pause();
  }
  Progress& progress_;
  Counters counters_;
};

// What the locks are built from: the window's control allocation and group.
struct LockSetup {
  const Peers& peers;
  Sync& sync;
  Progress& progress;
  const Allocation& control;
  const Group& group;
  std::size_t readers_offset;  // the first reader word (cpu locks)
  WinLockMigrate migrate;
  unsigned migrate_after;
};

// The kind for this window: cpu when every member shares this node's memory
// (wholly_on_node), hybrid when it spans the network and the policy lets
// locks migrate (and a helper thread serves claims), network otherwise.
// Every member decides alike (the settings are the job's), which the hybrid
// kind needs: the caller then runs a barrier before any member may lock.
std::unique_ptr<WindowLocks> make_window_locks(const LockSetup& setup, bool wholly_on_node);

}  // namespace armci
