// The synchronisation calls of ARMCI: Rmw (fetch-and-add, swap), mutexes,
// notify / notify_wait and Put_flag. Owned by the Runtime, used from the
// application's thread only, through the parts' interfaces (peers, memory,
// progress, completion, messages, barrier, transfers).
//
// One mechanism for atomics per job (Peers::has_network_peers()):
// network atomics (a NIC's, or UCX's) need not be atomic with respect to CPU
// atomics on the same word, so mixing them, say CPU atomics for a node
// neighbour and the NIC for a rank on another node, could lose updates to
// one counter. When any rank of the job is reached through the network,
// every atomic goes through the network layer, to self and neighbours too
// (UCX and verbs can target this very process); otherwise CPU atomics act on
// the node-shared mappings. Plain words that only one rank writes at a time
// (queue-lock links and grants, notify counters, Put_flag's flag) are written
// by a store where this process maps the target and by a put otherwise.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "platform/network.hpp"
#include "src/core/memory.hpp"
#include "src/core/messages.hpp"
#include "src/core/protocols/rmw.hpp"

namespace armci {

struct Allocation;
class Barrier;
class Completions;
class Memory;
class Messages;
class Peers;
class Progress;
class Transfers;

// ARMCI_Rmw operations, with the values of ARMCI-MPI's enum ARMCI_Rmw_e.
enum RmwOp : int { kFetchAndAdd = 0, kFetchAndAddLong = 1, kSwap = 2, kSwapLong = 3 };

// Where a queue-lock node id says the waiter is: rank and slot, 0 = nobody.
constexpr std::uint64_t encode_waiter(int rank, int slot) {
  return (static_cast<std::uint64_t>(rank) + 1) << 32 | static_cast<std::uint32_t>(slot);
}
constexpr int waiter_rank(std::uint64_t id) { return static_cast<int>((id >> 32) - 1); }
constexpr int waiter_slot(std::uint64_t id) { return static_cast<int>(id & 0xffffffffu); }

// The 32-bit lane of a 64-bit word at byte `lane_offset` (0 or 4) of the
// word, little-endian, and the word with that lane replaced.
constexpr std::uint32_t word_lane(std::uint64_t word, unsigned lane_offset) {
  return static_cast<std::uint32_t>(word >> (8 * lane_offset));
}
constexpr std::uint64_t with_lane(std::uint64_t word, unsigned lane_offset, std::uint32_t lane) {
  const unsigned shift = 8 * lane_offset;
  return (word & ~(std::uint64_t{0xffffffffu} << shift)) | (std::uint64_t{lane} << shift);
}

// The word atomics go through the protocol objects of protocols/rmw.hpp,
// chosen once at start-up; Sync gives the network ones their primitives.
class Sync : private protocols::NetworkWords {
 public:
  // Collective (part of start-up): allocates every rank's notify counters
  // and queue-lock nodes.
  Sync(const Peers& peers, Memory& memory, Progress& progress, Completions& completions, Messages& messages,
       Barrier& barrier, Transfers& transfers);
  // Local: frees what this rank allocated; the caller has synchronised.
  ~Sync();

  Sync(const Sync&) = delete;
  Sync& operator=(const Sync&) = delete;

  void rmw(const char* call, int op, void* ploc, void* prem, int value, int proc);
  void put_flag(const char* call, const void* src, void* dst, std::size_t bytes, int* flag, int value,
                int proc);
  int notify(const char* call, int proc);
  int notify_wait(const char* call, int proc, int* pval);

  void create_mutexes(const char* call, int count);
  void destroy_mutexes(const char* call);
  void lock(const char* call, int mutex, int proc);
  void unlock(const char* call, int mutex, int proc);

  // Further sets of mutexes (ARMCIX mutex handles), beside the one above:
  // the same queue lock on tails of their own. Create and destroy are
  // collective over members (nullptr: every rank); count mutexes per
  // member; proc is a world rank, mutex checked against `count`.
  std::unique_ptr<Allocation> create_mutex_set(const char* call, int count, const Memory::Members* members);
  void destroy_mutex_set(const char* call, Allocation& tails, const std::function<void()>& barrier);
  // try_only: take the mutex only if it is free; returns whether it was taken.
  bool lock_in(const char* call, const Allocation& tails, int count, int mutex, int proc, bool try_only);
  void unlock_in(const char* call, const Allocation& tails, int count, int mutex, int proc);

  // Queue-lock nodes per rank: how many mutexes one rank may hold or wait
  // for at the same time.
  static constexpr int kLockSlots = 128;

  // Which protocol serves each word operation (the info output prints it).
  const protocols::AtomicTable& atomics() const { return atomics_; }

  // A 64-bit word at some rank: through this process's mapping (local) or
  // through the network (key).
  using Word = protocols::Word;
  // The word at `offset` of proc's part of an allocation outside the region
  // table (Sync's own, mutex tails, windows' control blocks).
  Word word_at(const Allocation& allocation, int proc, std::size_t offset) const;
  // Atomics on 64-bit words, by the protocol the table chose (windows' locks use them).
  std::uint64_t fetch_add64(const char* call, const Word& w, std::uint64_t value);
  std::uint64_t compare_swap64(const char* call, const Word& w, std::uint64_t expected,
                               std::uint64_t desired);
  // A plain 64-bit store into a word only this rank writes. Through the
  // network it is a put, which UCX within one host makes with memcpy: glibc
  // writes 8 bytes with two stores of the same value, so a writer
  // descheduled between them writes the word again later. Words that
  // another rank writes too (queue-lock nodes) take handover64 instead.
  // Inline where the word is mapped here: fence and PSCW flags are stored
  // once per epoch per member, and the call cost a tenth of the epoch.
  void store64(const char* call, const Word& w, std::uint64_t value) {
    if (w.local != nullptr) [[likely]] {
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.local)).store(value, std::memory_order_release);
      return;
    }
    store64_network(call, w, value);
  }
  void store64_network(const char* call, const Word& w, std::uint64_t value);

  // A claim on a word that only the CPUs of its rank's node change (a
  // window's CPU lock word), made by a rank off that node, which cannot
  // touch the word with a coherent atomic: the word's own rank applies it
  // with CPU atomics in a message handler (its helper thread, or its own
  // next call into the library), and never waits there. If the word has a
  // bit of `stop`, it stays as it is; if it is zero apart from `claim`, it
  // becomes `desired`; otherwise `claim` is set in it, which tells the
  // node's lockers to let it drain. Returns the word as it was. Blocking.
  std::uint64_t claim_at_target(const char* call, const Word& w, std::uint64_t desired, std::uint64_t claim,
                                std::uint64_t stop);
  // Peers may claim the words in [offset, offset + bytes) of this rank's
  // part of `allocation` until stop_claims; any other address a peer names
  // is refused (a peer cannot make this process write where it likes).
  void allow_claims(const Allocation& allocation, std::size_t offset, std::size_t bytes);
  void stop_claims(const Allocation& allocation);

 private:
  struct LockNode {  // one queue-lock node: written by other ranks
    std::uint64_t granted_wait;  // 1 while waiting, 0 once the predecessor hands over
    std::uint64_t next;          // the successor's id, 0 while none
  };
  struct Held {
    const Allocation* set;  // the tails the mutex is in
    std::uint64_t key;      // proc << 32 | mutex
    int slot;
  };

  Word user_word(const char* call, int proc, void* prem, std::size_t width);

  std::uint64_t swap64(const char* call, const Word& w, std::uint64_t value);
  // A link or grant into another rank's queue node, which that rank set to
  // `ready` before it made the node reachable: one write, never repeated.
  void handover64(const char* call, const Word& w, std::uint64_t ready, std::uint64_t value, int mutex, int proc);
  // 32-bit lane of the aligned word that holds it; `add` or replace.
  std::uint32_t update32(const char* call, const Word& lane, bool add, std::uint32_t value);

  // protocols::NetworkWords: one network atomic, ordered and waited for.
  std::uint64_t network_fetch_add(const char* call, const Word& w, std::uint64_t value) override;
  std::uint64_t network_compare_swap(const char* call, const Word& w, std::uint64_t expected,
                                     std::uint64_t desired) override;

  std::uint64_t load_own(std::size_t offset) const;

  std::uint64_t guess(const Word& w) const override;
  void remember(const Word& w, std::uint64_t value);

  std::size_t notify_offset(int source) const { return static_cast<std::size_t>(source) * 8; }
  std::size_t node_offset(int slot) const {
    return node_base_ + static_cast<std::size_t>(slot) * sizeof(LockNode);
  }
  void complete_outstanding_writes();
  void put_blocking(const char* call, const void* src, void* dst, std::size_t bytes, int proc);
  int mutex_count(int proc) const;

  void handle_claim(int source, std::span<const std::byte> header);
  void handle_claim_answer(int source, std::span<const std::byte> header);

  const Peers& peers_;
  Memory& memory_;
  Progress& progress_;
  Completions& completions_;
  Messages& messages_;
  Barrier& barrier_;
  Transfers& transfers_;
  protocols::AtomicTable atomics_;
  bool network_;  // atomics through the network layer (atomics_ says so)
  std::unique_ptr<Allocation> sync_;     // notify counters and lock nodes
  std::unique_ptr<Allocation> mutexes_;  // queue tails, one word per mutex
  std::size_t node_base_ = 0;
  std::vector<std::uint64_t> notify_sent_;
  std::vector<std::uint64_t> notify_waited_;
  std::vector<int> free_slots_;
  MessageKind claim_kind_ = 0, claim_answer_kind_ = 0;
  struct Claimable {
    const Allocation* allocation;
    std::uintptr_t low, high;
  };
  std::mutex claimable_mutex_;  // the handler reads it on the helper thread
  std::vector<Claimable> claimable_;
  // The one claim of this rank under way (the application's thread makes
  // them, blocking); the answer's handler fills it in.
  struct PendingClaim {
    std::uint64_t token = 0;
    int proc = -1;
    std::uint64_t old = 0;
    std::atomic<bool> answered{false};
  };
  PendingClaim claim_;
  std::uint64_t claims_made_ = 0;
  std::vector<Held> held_;  // few at a time: a linear search beats a map
  std::vector<Held>::iterator find_held(const Allocation* set, std::uint64_t key) {
    for (auto it = held_.begin(); it != held_.end(); ++it)
      if (it->set == set && it->key == key) return it;
    return held_.end();
  }

  // Last value seen per word, a first guess for compare-and-swap loops.
  struct Seen {
    std::uintptr_t address = 0;
    int proc = -1;
    std::uint64_t value = 0;
  };
  static constexpr std::size_t kSeen = 64;
  Seen seen_[kSeen];
};

}  // namespace armci
