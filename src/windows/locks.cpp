// The three lock kinds of locks.hpp.
#include "src/windows/locks.hpp"

#include <atomic>

#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/peers.hpp"
#include "src/core/protocols/choices.hpp"

namespace armci {

namespace {

constexpr std::size_t kNetworkWord = WindowLocks::kNetworkWord, kCpuWord = WindowLocks::kCpuWord;
constexpr std::uint64_t kWriter = std::uint64_t{1} << 63;
constexpr std::uint64_t kParked = std::uint64_t{1} << 62;   // hybrid: this word is not in force
constexpr std::uint64_t kClaimed = std::uint64_t{1} << 61;  // hybrid C: a rank off the node waits for it

int world(const Group& group, int rank) { return group.members[static_cast<std::size_t>(rank)]; }

// ------------------------------------------------------------------ network locks

class NetworkLocks final : public WindowLocks {
 public:
  explicit NetworkLocks(const LockSetup& s) : WindowLocks(s.progress), sync_(s.sync) {
    for (int r = 0; r < s.group.size(); ++r) words_.push_back(s.sync.word_at(s.control, world(s.group, r), kNetworkWord));
  }
  void acquire(const char* call, int rank, bool exclusive) override {
    const Sync::Word& w = words_[static_cast<std::size_t>(rank)];
    Backoff backoff = Backoff::contended();
    if (exclusive) {
      while (sync_.compare_swap64(call, w, 0, kWriter) != 0) pause(backoff);
    } else {
      while (sync_.fetch_add64(call, w, 1) & kWriter) {
        sync_.fetch_add64(call, w, ~std::uint64_t{0});  // back out: a writer holds it
        pause(backoff);
      }
    }
    ++counters_.network;
  }
  void release(const char* call, int rank, bool exclusive) override {
    // Adding the two's complement: one atomic whatever readers do meanwhile.
    sync_.fetch_add64(call, words_[static_cast<std::size_t>(rank)], exclusive ? 0 - kWriter : ~std::uint64_t{0});
  }
  protocols::WinLockKind kind() const override { return protocols::WinLockKind::network; }

 private:
  Sync& sync_;
  std::vector<Sync::Word> words_;  // per target, made once: a lock pays no lookup
};

// ------------------------------------------------------------------ CPU locks

// Every locker is a CPU with the target's control block mapped, so a reader
// need not count itself into the word a writer takes. Each reader has a
// word of its own at the target (readers_offset), the lock word holds the
// writer alone, and the two sides meet as in Dekker's algorithm: a reader
// sets its word, then reads the lock word; a writer takes the lock word
// (CAS), then reads the reader words. Both are sequentially consistent, so
// at least one of the two sees the other, and whoever sees the other backs
// out (readers first, as the counting word does: a writer never holds the
// word while it waits, so readers keep sharing the lock while one waits).
// Releases are then plain stores, which also order the epoch's copies
// before them, and a reader's epoch costs one atomic on a line that other
// readers do not write.
class CpuLocks final : public WindowLocks {
 public:
  explicit CpuLocks(const LockSetup& s) : WindowLocks(s.progress), members_(s.group.size()) {
    for (int r = 0; r < members_; ++r) {
      std::byte* at = s.control.local(s.peers, world(s.group, r));
      targets_.push_back(Target{reinterpret_cast<std::uint64_t*>(at + kNetworkWord),
                                reinterpret_cast<std::uint64_t*>(at + s.readers_offset),
                                reinterpret_cast<std::uint64_t*>(at + s.readers_offset + 8 * static_cast<std::size_t>(s.group.my_rank))});
    }
  }
  void acquire(const char*, int rank, bool exclusive) override {
    const Target& l = targets_[static_cast<std::size_t>(rank)];
    std::atomic_ref<std::uint64_t> writer(*l.writer);
    Backoff backoff = Backoff::contended();
    if (!exclusive) {
      std::atomic_ref<std::uint64_t> mine(*l.mine);
      for (;;) {
        mine.exchange(1);
        if (!(writer.load() & kWriter)) [[likely]]
          break;
        mine.store(0, std::memory_order_release);
        pause(backoff);
      }
    } else {
      for (;;) {
        std::uint64_t expected = 0;
        if (writer.compare_exchange_strong(expected, kWriter)) {
          int r = 0;
          while (r < members_ && std::atomic_ref<std::uint64_t>(l.readers[r]).load() == 0) ++r;
          if (r == members_) break;
          writer.store(0, std::memory_order_release);  // a reader is in: it goes first
        }
        pause(backoff);
      }
    }
    ++counters_.intra_node;
  }
  void release(const char*, int rank, bool exclusive) override {
    const Target& l = targets_[static_cast<std::size_t>(rank)];
    std::atomic_ref<std::uint64_t>(exclusive ? *l.writer : *l.mine).store(0, std::memory_order_release);
  }
  protocols::WinLockKind kind() const override { return protocols::WinLockKind::cpu; }

 private:
  // Per target: its lock word and reader words in this process's mapping,
  // and this rank's reader word there.
  struct Target {
    std::uint64_t* writer;
    std::uint64_t* readers;  // one per group rank
    std::uint64_t* mine;
  };
  int members_;
  std::vector<Target> targets_;
};

// ------------------------------------------------------------------ hybrid locks
//
// ARMCI_WIN_LOCK_MIGRATE, a window that spans the network:
// each target's lock has two words, N (kNetworkWord), changed only by
// network atomics (any rank; node neighbours through loopback), and C
// (kCpuWord), changed only by CPU atomics of the target's node (neighbours
// on the shared mapping, the target's own message handler). CPU and NIC
// atomics need not be coherent with each other, but plain loads are not the
// issue: only two read-modify-writes of different kinds on one word can
// lose an update, and this layout never lets that happen.
// At any time one word is in force and the other is parked: it carries
// kWriter | kParked, so every attempt on it fails (a CAS from 0, a reader's
// fetch-and-add that sees the writer bit and backs out) and the old value
// it returns says "the other word is in force". No mode word is needed:
// the failed attempt is the read of the mode.
// Mutual exclusion: a holder of the lock holds the word in force (writer
// bit or a reader count), as in a plain lock. A migration is made only by
// a party that holds the old word exclusively, so no other holder exists;
// it parks the old word by adding kParked (it already carries kWriter, and
// it stays so until a migration back takes it over) and hands the parked
// new word to itself by taking kParked (and, for a reader, kWriter) off
// it, an atomic of the new word's kind that leaves the transient counts
// of failed readers intact. Between the two steps both words are parked
// and every locker retries; after them the migrator is the only holder, of
// the new word. So at every instant at most one party holds exclusively,
// or only readers hold, and each word only ever sees atomics of its kind.
// Network -> CPU: a node neighbour takes N exclusively (network CAS),
// parks it (network add), unparks C to itself (CPU add).
// CPU -> network: a rank off the node cannot touch C, so it claims C
// through the target (Sync::claim_at_target): the target's handler, with
// CPU atomics and without waiting, turns a free C into kWriter | kParked,
// or marks a held C with kClaimed so that no neighbour enters it any more
// and it drains (the claimer asks again after a back-off). A granted claim
// makes the claimer the holder of the parked N, which it unparks to itself
// with a network add. Readers, of either kind, only ever hold N (a
// neighbour's reader that finds C in force moves the lock back to N the
// same way, with its own CPU CAS on C): C has at most one holder, a writer,
// so a claim waits for one epoch at most, and readers of both kinds share
// the lock as they do without migration. Windows wholly on one node keep

// A word no correct sequence of lock operations leaves: a parked word
// without its writer bit, a parked word claimed, a reader count that went
// below zero. Without this check such a word would keep every locker
// retrying for ever.
void check_word(const char* call, int rank, bool cpu, std::uint64_t old) {
  const std::uint64_t readers = old & (kClaimed - 1);
  if (((old & kParked) && (!(old & kWriter) || (old & kClaimed))) || readers > (std::uint64_t{1} << 32))
    fail(call, "argument 'rank' (%d): the window's %s lock word at that rank reads 0x%llx, which no lock "
               "sequence leaves (a peer released a lock it did not hold, or memory was overwritten)",
         rank, cpu ? "CPU" : "network", static_cast<unsigned long long>(old));
}

class HybridLocks final : public WindowLocks {
 public:
  explicit HybridLocks(const LockSetup& s)
      : WindowLocks(s.progress), sync_(s.sync), control_(s.control), migrate_after_(s.migrate_after) {
    const auto n = static_cast<std::size_t>(s.group.size());
    for (int r = 0; r < s.group.size(); ++r) {
      const int proc = world(s.group, r);
      words_.push_back(s.sync.word_at(s.control, proc, kNetworkWord));
      words_.push_back(s.sync.word_at(s.control, proc, kCpuWord));
      cpu_reach_.push_back(!s.peers.reached_by_network(proc) && s.control.local(s.peers, proc) != nullptr);
    }
    mode_cpu_.assign(n, 0);
    held_cpu_.assign(n, 0);
    network_streak_.assign(n, 0);
    // Every lock starts in network mode (what every member can lock): this
    // rank's C is parked before any member may lock (the caller's barrier).
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(s.control.local(s.peers, s.peers.rank()) +
                                                                      kCpuWord))
        .store(kWriter | kParked, std::memory_order_release);
    s.sync.allow_claims(s.control, kCpuWord, 8);
  }
  ~HybridLocks() override { stop(); }
  void stop() override { sync_.stop_claims(control_); }
  void acquire(const char* call, int rank, bool exclusive) override {
    const auto t = static_cast<std::size_t>(rank);
    if (!cpu_reach_[t]) return acquire_far(call, rank, exclusive);
    if (exclusive) return acquire_near_writer(call, rank, true);
    acquire_near_reader(call, rank);
  }
  void release(const char* call, int rank, bool exclusive) override {
    const bool cpu = held_cpu_[static_cast<std::size_t>(rank)] != 0;
    fetch_add(call, word(rank, cpu), exclusive ? 0 - kWriter : ~std::uint64_t{0}, cpu);
  }
  protocols::WinLockKind kind() const override { return protocols::WinLockKind::hybrid; }

 private:
  const Sync::Word& word(int rank, bool cpu) const { return words_[2 * static_cast<std::size_t>(rank) + cpu]; }
  // The lock word's atomics: CPU ones on a C word, Sync's on N.
  std::uint64_t fetch_add(const char* call, const Sync::Word& w, std::uint64_t value, bool cpu) {
    if (cpu) return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.local)).fetch_add(value);
    return sync_.fetch_add64(call, w, value);
  }
  std::uint64_t compare_swap(const char* call, const Sync::Word& w, std::uint64_t expected, std::uint64_t desired,
                             bool cpu) {
    if (cpu) {
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.local)).compare_exchange_strong(expected,
                                                                                                         desired);
      return expected;  // the old value either way
    }
    return sync_.compare_swap64(call, w, expected, desired);
  }
  // One try on the word of one kind; returns the word's old value, and
  // whether the lock was taken.
  bool try_word(const char* call, int rank, bool cpu, bool exclusive, std::uint64_t& old) {
    const Sync::Word& w = word(rank, cpu);
    if (exclusive) {
      old = compare_swap(call, w, 0, kWriter, cpu);
      if (old != 0) check_word(call, rank, cpu, old);
      return old == 0;
    }
    old = fetch_add(call, w, 1, cpu);
    check_word(call, rank, cpu, old);
    // A claim from off the node also keeps new readers out, so C drains.
    if (!(old & (kWriter | kClaimed))) return true;
    fetch_add(call, w, ~std::uint64_t{0}, cpu);  // back out
    return false;
  }
  // Taken on the word of this kind: the bookkeeping of every way in.
  void took(int rank, bool cpu, std::uint64_t Counters::*counter) {
    held_cpu_[static_cast<std::size_t>(rank)] = cpu;
    ++(counters_.*counter);
  }
  // Finding both words parked is a migration under way: after one flip of
  // the mode, wait before the next.
  struct Waits {
    Backoff backoff = Backoff::contended();
    int flips = 0;
  };
  void flip(Waits& w) {
    if (++w.flips > 1) pause(w.backoff);
  }
  // A failed try on one word (old: its value): parked, the other word is
  // in force, which the mode then says; held, the holder is waited for.
  void missed(int rank, std::uint64_t old, bool other_is_cpu, Waits& w) {
    if (old & kParked) {
      mode_cpu_[static_cast<std::size_t>(rank)] = other_is_cpu;
      flip(w);
    } else {
      pause(w.backoff);
    }
  }
  void acquire_near_reader(const char* call, int rank);
  void acquire_near_writer(const char* call, int rank, bool exclusive);
  void acquire_far(const char* call, int rank, bool exclusive);

  Sync& sync_;
  const Allocation& control_;
  unsigned migrate_after_;
  std::vector<Sync::Word> words_;  // per target: N, C
  // Per target: whether this rank may use CPU atomics on its words (a node
  // neighbour), the kind of word last found in force there, the kind of
  // word this rank holds, and the neighbour's locks in a row through the
  // network (for after:N).
  std::vector<std::uint8_t> cpu_reach_, mode_cpu_, held_cpu_;
  std::vector<unsigned> network_streak_;
};

// Readers always read on N, so readers of both kinds share the lock (a
// reader holding C would shut out a remote reader until it unlocks: a
// program that holds a shared lock across a barrier with one would hang).
// C thus only ever has one writer; a neighbour's reader that finds it in
// force brings the lock back to N itself, once C is free (a pending claim
// from off the node wants the same).
void HybridLocks::acquire_near_reader(const char* call, int rank) {
  const auto t = static_cast<std::size_t>(rank);
  Waits waits;
  std::uint64_t old = 0;
  std::atomic_ref<std::uint64_t> c(*reinterpret_cast<std::uint64_t*>(word(rank, true).local));
  for (;;) {
    if (!mode_cpu_[t]) {
      if (try_word(call, rank, false, false, old)) return took(rank, false, &Counters::network);
      missed(rank, old, true, waits);
      continue;
    }
    old = c.load(std::memory_order_acquire);
    if (old & kParked) {
      mode_cpu_[t] = 0;
      flip(waits);
      continue;
    }
    if ((old & ~kClaimed) == 0 && c.compare_exchange_strong(old, kWriter | kParked)) {
      fetch_add(call, word(rank, false), 0 - (kParked + kWriter - 1), false);  // N: a reader
      mode_cpu_[t] = 0;
      ++counters_.to_network;
      return took(rank, false, &Counters::network);
    }
    check_word(call, rank, true, old);
    pause(waits.backoff);
  }
}

// A node neighbour's writer: C where it is in force; N otherwise, or a
// migration.
void HybridLocks::acquire_near_writer(const char* call, int rank, bool exclusive) {
  const auto t = static_cast<std::size_t>(rank);
  Waits waits;
  std::uint64_t old = 0;
  for (;;) {
    if (mode_cpu_[t]) {
      if (try_word(call, rank, true, exclusive, old)) {
        network_streak_[t] = 0;
        return took(rank, true, &Counters::intra_node);
      }
      missed(rank, old, false, waits);
      continue;
    }
    bool migrate = network_streak_[t] + 1 >= migrate_after_;
    // Only an exclusive holder may migrate: a reader who wants to tries
    // for the whole lock first, to become a reader on C, and else reads
    // on N as it is (waiting for the whole lock could deadlock with a
    // lock_all that holds N shared and waits for this rank's other locks).
    bool taken = try_word(call, rank, false, exclusive || migrate, old);
    if (!taken && migrate && !exclusive && !(old & kParked)) {
      migrate = false;
      taken = try_word(call, rank, false, false, old);
    }
    if (taken) {
      if (!migrate) {
        ++network_streak_[t];
        return took(rank, false, &Counters::network);
      }
      fetch_add(call, word(rank, false), kParked, false);  // N: kWriter | kParked from now on
      const std::uint64_t take = exclusive ? kParked : kParked + kWriter - 1;
      fetch_add(call, word(rank, true), 0 - take, true);  // C: ours
      mode_cpu_[t] = 1;
      network_streak_[t] = 0;
      ++counters_.to_cpu;
      return took(rank, true, &Counters::intra_node);
    }
    missed(rank, old, true, waits);
  }
}

// Off the target's node: N only; when C is in force, claim it through the
// target so that N comes back to the network.
void HybridLocks::acquire_far(const char* call, int rank, bool exclusive) {
  Waits waits;
  std::uint64_t old = 0;
  for (;;) {
    if (try_word(call, rank, false, exclusive, old)) return took(rank, false, &Counters::network);
    if (old & kParked) {
      const std::uint64_t was = sync_.claim_at_target(call, word(rank, true), kWriter | kParked, kClaimed, kParked);
      if (!(was & kParked) && (was & ~kClaimed) == 0) {
        // Granted: C is parked and N, parked, is ours to unpark.
        const std::uint64_t take = exclusive ? kParked : kParked + kWriter - 1;
        fetch_add(call, word(rank, false), 0 - take, false);
        ++counters_.to_network;
        return took(rank, false, &Counters::network);
      }
      if (was & kParked) {  // N came back meanwhile, or is on its way
        flip(waits);
        continue;
      }
    }
    pause(waits.backoff);
  }
}

}  // namespace

// A claim from off the node is served by the target's helper thread;
// without one it would wait until the target's application next calls the
// library, and a passive target may compute for long: such windows keep
// network atomics, which need no target CPU at all.
std::unique_ptr<WindowLocks> make_window_locks(const LockSetup& setup, bool wholly_on_node) {
  switch (protocols::win_lock_kind(wholly_on_node, setup.migrate, setup.progress.has_network(),
                                   setup.progress.helper_running())) {
    case protocols::WinLockKind::cpu: return std::make_unique<CpuLocks>(setup);
    case protocols::WinLockKind::hybrid: return std::make_unique<HybridLocks>(setup);
    case protocols::WinLockKind::network: break;
  }
  return std::make_unique<NetworkLocks>(setup);
}

}  // namespace armci
