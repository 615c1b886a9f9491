// ARMCI mutexes: an MCS queue lock per mutex.
//
// Each mutex is one 64-bit tail word at its home rank, holding the id of the
// last rank in its queue (0: free). Each rank has kLockSlots queue nodes in
// its Sync allocation: {granted_wait, next}. To lock, a rank readies one of
// its nodes, swaps its id into the tail (network: a compare-and-swap loop;
// same-node jobs: a CPU exchange), and if there was a predecessor writes its
// id into the predecessor's `next` and waits until its own `granted_wait`
// drops to 0. To unlock, a rank with no successor swaps the tail back to 0;
// otherwise (or when that fails because a successor is just joining) it
// writes 0 into the successor's `granted_wait`.
//
// So the lock is FIFO (the order of the tail swaps), a waiter reads only its
// own memory (driving the local network progress, never polling a remote
// word), and a handover costs the releaser one write.
//
// That write (link or grant) must happen exactly once: the node's owner
// resets the node for its next lock as soon as it sees it, so a second,
// late copy of the same write is a grant nobody gave (two holders) or a
// link into the wrong episode (a corrupt queue). A put does not promise
// that (see store64), so through the network the handover is a
// compare-and-swap from the value the owner readied, which also catches a
// node in the wrong state instead of corrupting it further.
#include <atomic>
#include <cstddef>

#include "src/core/barrier.hpp"
#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/sync.hpp"

namespace armci {

namespace {

std::uint64_t mutex_key(int mutex, int proc) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(proc)) << 32 | static_cast<std::uint32_t>(mutex);
}

std::atomic_ref<std::uint64_t> node_word(std::byte* node, std::size_t field) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(node + field));
}

}  // namespace

int Sync::mutex_count(int proc) const {
  return mutexes_ ? static_cast<int>(mutexes_->sizes[static_cast<std::size_t>(proc)] / sizeof(std::uint64_t)) : 0;
}

void Sync::create_mutexes(const char* call, int count) {
  if (count < 0) fail(call, "argument 'count' (%d) is negative", count);
  if (mutexes_)
    fail(call, "mutexes exist already (an earlier ARMCI_Create_mutexes was not followed by "
               "ARMCI_Destroy_mutexes)");
  try {
    // Zero-filled: every mutex starts free. The allocation's barrier means
    // no rank locks before every home has its tails.
    mutexes_ = memory_.collective_allocate(static_cast<std::size_t>(count) * sizeof(std::uint64_t), true);
  } catch (const std::exception& e) {
    fail(call, "allocating %d mutexes failed: %s", count, e.what());
  }
}

void Sync::destroy_mutexes(const char* call) {
  if (!mutexes_) fail(call, "no mutexes exist (ARMCI_Create_mutexes was not called, or they were destroyed)");
  if (!held_.empty()) {
    const std::uint64_t key = held_.front().key;
    fail(call, "this rank still holds mutex %d of rank %d (unlock it first)",
         static_cast<int>(key & 0xffffffffu), static_cast<int>(key >> 32));
  }
  // Nobody may still be working on a tail here when it goes.
  completions_.all_fence();
  barrier_.wait();
  memory_.free_allocation(*mutexes_);
  mutexes_.reset();
}

void Sync::complete_outstanding_writes() {
  // What was written under the lock must be in place before the next holder
  // can read it: flush when any put or Acc to a network peer may still be
  // on its way. (Same-node writes are complete when they return, and the
  // release of the tail or of the grant orders them.)
  if (completions_.writes_outstanding()) completions_.all_fence();
}

void Sync::lock(const char* call, int mutex, int proc) {
  if (!mutexes_) fail(call, "no mutexes exist (call ARMCI_Create_mutexes first)");
  lock_in(call, *mutexes_, mutex_count(proc), mutex, proc, false);
}

void Sync::unlock(const char* call, int mutex, int proc) {
  if (!mutexes_) fail(call, "no mutexes exist (call ARMCI_Create_mutexes first)");
  unlock_in(call, *mutexes_, mutex_count(proc), mutex, proc);
}

std::unique_ptr<Allocation> Sync::create_mutex_set(const char* call, int count, const Memory::Members* members) {
  if (count < 0) fail(call, "argument 'count' (%d) is negative", count);
  try {
    // Zero-filled, every mutex free; the allocation's barrier (over the
    // members) means nobody locks before every member has its tails.
    return memory_.collective_allocate(static_cast<std::size_t>(count) * sizeof(std::uint64_t), true, members);
  } catch (const std::exception& e) {
    fail(call, "allocating %d mutexes failed: %s", count, e.what());
  }
}

void Sync::destroy_mutex_set(const char* call, Allocation& tails, const std::function<void()>& barrier) {
  for (const Held& held : held_)
    if (held.set == &tails)
      fail(call, "this rank still holds mutex %d of rank %d of this set (unlock it first)",
           static_cast<int>(held.key & 0xffffffffu), static_cast<int>(held.key >> 32));
  completions_.all_fence();
  barrier();
  memory_.free_allocation(tails);
}

bool Sync::lock_in(const char* call, const Allocation& tails, int count, int mutex, int proc, bool try_only) {
  if (mutex < 0 || mutex >= count)
    fail(call, "argument 'mutex' (%d) is out of range [0, %d) of the mutexes rank %d created", mutex, count, proc);
  const std::uint64_t key = mutex_key(mutex, proc);
  if (find_held(&tails, key) != held_.end())
    fail(call, "argument 'mutex' (%d) of rank %d is held by this rank already (ARMCI mutexes are not recursive)",
         mutex, proc);
  if (free_slots_.empty())
    fail(call, "this rank holds %d mutexes already, the most one rank may hold at once", kLockSlots);
  const int slot = free_slots_.back();
  free_slots_.pop_back();

  const Word mine = word_at(*sync_, peers_.rank(), node_offset(slot));
  node_word(mine.local, offsetof(LockNode, next)).store(0, std::memory_order_relaxed);
  node_word(mine.local, offsetof(LockNode, granted_wait)).store(1, std::memory_order_relaxed);
  // The node is ready before anyone can find it through the tail (a CPU
  // exchange orders this itself; a network operation needs the fence).
  if (network_) std::atomic_thread_fence(std::memory_order_seq_cst);

  const std::uint64_t me = encode_waiter(peers_.rank(), slot);
  const Word tail = word_at(tails, proc, static_cast<std::size_t>(mutex) * 8);
  if (try_only) {
    // Into the queue only when it is empty: then nobody is ahead to wait for.
    if (compare_swap64(call, tail, 0, me) != 0) {
      free_slots_.push_back(slot);
      return false;
    }
    if (network_) std::atomic_thread_fence(std::memory_order_seq_cst);
    held_.push_back({&tails, key, slot});
    return true;
  }
  const std::uint64_t previous = swap64(call, tail, me);
  if (previous != 0) {
    const int holder = waiter_rank(previous);
    const int holder_slot = waiter_slot(previous);
    if (holder < 0 || holder >= peers_.size() || holder_slot >= kLockSlots || holder == peers_.rank())
      fail(call, "mutex %d of rank %d is corrupt (its queue names rank %d, slot %d)", mutex, proc, holder,
           holder_slot);
    handover64(call, word_at(*sync_, holder, node_offset(holder_slot) + offsetof(LockNode, next)), 0, me, mutex,
               proc);
    auto granted = node_word(mine.local, offsetof(LockNode, granted_wait));
    progress_.until([&] { return granted.load(std::memory_order_acquire) == 0; });
  }
  if (network_) std::atomic_thread_fence(std::memory_order_seq_cst);
  held_.push_back({&tails, key, slot});
  return true;
}

void Sync::handover64(const char* call, const Word& w, std::uint64_t ready, std::uint64_t value, int mutex,
                      int proc) {
  if (w.local != nullptr) {
    // One CPU store: written once, and no network atomic on this word to
    // mix with (sync.hpp).
    node_word(w.local, 0).store(value, std::memory_order_release);
    return;
  }
  const std::uint64_t found = compare_swap64(call, w, ready, value);
  if (found != ready)
    fail(call, "mutex %d of rank %d is corrupt (rank %d's queue node holds 0x%llx, expected 0x%llx)", mutex, proc,
         w.proc, static_cast<unsigned long long>(found), static_cast<unsigned long long>(ready));
}

void Sync::unlock_in(const char* call, const Allocation& tails, int count, int mutex, int proc) {
  if (mutex < 0 || mutex >= count)
    fail(call, "argument 'mutex' (%d) is out of range [0, %d) of the mutexes rank %d created", mutex, count, proc);
  const auto found = find_held(&tails, mutex_key(mutex, proc));
  if (found == held_.end()) fail(call, "argument 'mutex' (%d) of rank %d is not held by this rank", mutex, proc);
  const int slot = found->slot;

  complete_outstanding_writes();
  const Word mine = word_at(*sync_, peers_.rank(), node_offset(slot));
  auto next_word = node_word(mine.local, offsetof(LockNode, next));
  std::uint64_t next = next_word.load(std::memory_order_acquire);
  if (next == 0) {
    const std::uint64_t me = encode_waiter(peers_.rank(), slot);
    if (compare_swap64(call, word_at(tails, proc, static_cast<std::size_t>(mutex) * 8), me, 0) != me) {
      // A successor swapped itself in and is about to link: wait for it.
      progress_.until([&] { return (next = next_word.load(std::memory_order_acquire)) != 0; });
    }
  }
  if (next != 0) {
    const int successor = waiter_rank(next);
    const int successor_slot = waiter_slot(next);
    if (successor < 0 || successor >= peers_.size() || successor_slot >= kLockSlots)
      fail(call, "mutex %d of rank %d is corrupt (its queue names rank %d, slot %d)", mutex, proc, successor,
           successor_slot);
    handover64(call, word_at(*sync_, successor, node_offset(successor_slot) + offsetof(LockNode, granted_wait)), 1, 0,
               mutex, proc);
  }
  *found = held_.back();
  held_.pop_back();
  free_slots_.push_back(slot);
}

}  // namespace armci
