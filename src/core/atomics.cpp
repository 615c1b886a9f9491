// ARMCI_Rmw, notify / notify_wait and Put_flag, on top of the word-level
// atomics of Sync (see sync.hpp for why one mechanism serves the whole job).
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "src/core/barrier.hpp"
#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/incoming.hpp"
#include "src/core/memory.hpp"
#include "src/core/sync.hpp"
#include "src/core/transfers.hpp"

namespace armci {

static_assert(sizeof(long) == 8, "ARMCI_FETCH_AND_ADD_LONG and ARMCI_SWAP_LONG assume a 64-bit long");
static_assert(sizeof(int) == 4, "ARMCI_FETCH_AND_ADD and ARMCI_SWAP assume a 32-bit int");

namespace {

template <typename T>
std::atomic_ref<T> atomic_at(std::byte* p) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(p));
}

// ARMCI_Rmw's local operand and result: an int or a long at ploc, at any
// alignment the caller gave it.
template <typename T>
T load_at(const void* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}
template <typename T>
void store_at(void* p, T value) {
  std::memcpy(p, &value, sizeof value);
}

// claim_at_target's request and answer (both ends are this library: plain
// 64-bit fields).
struct ClaimHeader {
  std::uint64_t token;
  std::uint64_t address;  // in the target's address space
  std::uint64_t desired, claim, stop;
};
struct ClaimAnswer {
  std::uint64_t token;
  std::uint64_t old;
};

}  // namespace

// ------------------------------------------------------------------ set-up

Sync::Sync(const Peers& peers, Memory& memory, Progress& progress, Completions& completions, Messages& messages,
           Barrier& barrier, Transfers& transfers)
    : peers_(peers),
      memory_(memory),
      progress_(progress),
      completions_(completions),
      messages_(messages),
      barrier_(barrier),
      transfers_(transfers),
      atomics_(peers.has_network_peers()),
      network_(atomics_.network()) {
  const auto n = static_cast<std::size_t>(peers_.size());
  // [notify counters: one word per source rank][lock nodes], the same layout
  // at every rank.
  node_base_ = (n * sizeof(std::uint64_t) + 63) & ~std::size_t{63};
  sync_ = memory_.collective_allocate(node_base_ + kLockSlots * sizeof(LockNode), true);
  notify_sent_.assign(n, 0);
  notify_waited_.assign(n, 0);
  for (int s = kLockSlots - 1; s >= 0; --s) free_slots_.push_back(s);
  claim_kind_ = messages_.add("word-claim", [this](int source, auto header, auto) { handle_claim(source, header); });
  claim_answer_kind_ = messages_.add("word-claim-answer",
                                     [this](int source, auto header, auto) { handle_claim_answer(source, header); });
}

Sync::~Sync() {
  if (mutexes_) memory_.free_allocation(*mutexes_);
  if (sync_) memory_.free_allocation(*sync_);
}

Sync::Word Sync::word_at(const Allocation& allocation, int proc, std::size_t offset) const {
  const auto i = static_cast<std::size_t>(proc);
  Word w;
  w.proc = proc;
  w.address = allocation.bases[i] + offset;
  w.key = allocation.keys[i];
  if (std::byte* base = allocation.local(peers_, proc)) w.local = base + offset;
  return w;
}

Sync::Word Sync::user_word(const char* call, int proc, void* prem, std::size_t width) {
  const auto address = reinterpret_cast<std::uintptr_t>(prem);
  if (address % width != 0) [[unlikely]]
    fail(call, "argument 'prem' (%p) is not %zu-byte aligned (an atomic %s at rank %d must be)", prem, width,
         width == sizeof(long) ? "long" : "int", proc);
  const Region& region = memory_.find_region(call, "prem", proc, prem, width);
  Word w;
  w.proc = proc;
  w.address = address;
  w.key = region.key;
  if (region.local != nullptr) w.local = region.local + (address - region.base);
  if (network_ ? !w.key : w.local == nullptr) [[unlikely]]
    fail(call, "internal: rank %d's region holding 'prem' (%p) has no %s", proc, prem,
         network_ ? "network key" : "local mapping");
  return w;
}

// ------------------------------------------------------------------ words

std::uint64_t Sync::guess(const Word& w) const {
  const Seen& s = seen_[(w.address >> 3 ^ static_cast<std::size_t>(w.proc) * 0x9E3779B1u) % kSeen];
  return s.address == w.address && s.proc == w.proc ? s.value : 0;
}

void Sync::remember(const Word& w, std::uint64_t value) {
  Seen& s = seen_[(w.address >> 3 ^ static_cast<std::size_t>(w.proc) * 0x9E3779B1u) % kSeen];
  s = {w.address, w.proc, value};
}

std::uint64_t Sync::fetch_add64(const char* call, const Word& w, std::uint64_t value) {
  return atomics_.find(protocols::WordOp::fetch_add).apply(*this, call, w, protocols::WordOp::fetch_add, value, 0);
}

std::uint64_t Sync::compare_swap64(const char* call, const Word& w, std::uint64_t expected,
                                   std::uint64_t desired) {
  return atomics_.find(protocols::WordOp::compare_swap)
      .apply(*this, call, w, protocols::WordOp::compare_swap, expected, desired);
}

std::uint64_t Sync::swap64(const char* call, const Word& w, std::uint64_t value) {
  return atomics_.find(protocols::WordOp::swap).apply(*this, call, w, protocols::WordOp::swap, value, 0);
}

std::uint32_t Sync::update32(const char* call, const Word& lane, bool add, std::uint32_t value) {
  const auto op = add ? protocols::WordOp::fetch_add32 : protocols::WordOp::swap32;
  return static_cast<std::uint32_t>(atomics_.find(op).apply(*this, call, lane, op, value, 0));
}

std::uint64_t Sync::network_fetch_add(const char* call, const Word& w, std::uint64_t value) {
  // Blocking operations to one target are seen in order: an earlier put
  // must not land after this.
  completions_.order_after_puts(w.proc, false);
  std::uint64_t old = 0;
  platform::Completion done;
  progress_.with_network_then_progress(
      [&](platform::Network& net) { net.fetch_add(w.proc, w.address, w.key, value, &old, done); });
  completions_.wait(call, done);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  remember(w, old + value);
  return old;
}

std::uint64_t Sync::network_compare_swap(const char* call, const Word& w, std::uint64_t expected,
                                         std::uint64_t desired) {
  completions_.order_after_puts(w.proc, false);
  std::uint64_t old = 0;
  platform::Completion done;
  progress_.with_network_then_progress([&](platform::Network& net) {
    net.compare_swap(w.proc, w.address, w.key, expected, desired, &old, done);
  });
  completions_.wait(call, done);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  remember(w, old == expected ? desired : old);
  return old;
}

void Sync::store64_network(const char* call, const Word& w, std::uint64_t value) {
  std::uint64_t source = value;  // lives until the put completes locally
  platform::LocalSegment segment{&source, sizeof source};
  platform::Completion sent;
  progress_.with_network([&](platform::Network& net) {
    net.put(w.proc, std::span(&segment, 1), w.address, w.key, sent);
  });
  completions_.wait(call, sent);
}

// ------------------------------------------------------------------ claims

void Sync::allow_claims(const Allocation& allocation, std::size_t offset, std::size_t bytes) {
  const std::uintptr_t low = reinterpret_cast<std::uintptr_t>(allocation.own.address()) + offset;
  std::lock_guard guard(claimable_mutex_);
  claimable_.push_back(Claimable{&allocation, low, low + bytes});
}

void Sync::stop_claims(const Allocation& allocation) {
  std::lock_guard guard(claimable_mutex_);
  std::erase_if(claimable_, [&](const Claimable& c) { return c.allocation == &allocation; });
}

std::uint64_t Sync::claim_at_target(const char* call, const Word& w, std::uint64_t desired, std::uint64_t claim,
                                    std::uint64_t stop) {
  if (!progress_.has_network()) fail(call, "internal: a word claim at rank %d without a network layer", w.proc);
  const ClaimHeader header{++claims_made_, w.address, desired, claim, stop};
  claim_.token = header.token;
  claim_.proc = w.proc;
  claim_.answered.store(false, std::memory_order_relaxed);
  messages_.expect_answer(w.proc, claim_kind_);
  platform::Completion sent;
  progress_.with_network([&](platform::Network& net) {
    net.send_message(w.proc, claim_kind_, std::as_bytes(std::span(&header, 1)), {}, sent);
  });
  progress_.until([&] { return sent.done() && claim_.answered.load(std::memory_order_acquire); });
  if (sent.error.load()) fail(call, "sending a word claim to rank %d failed", w.proc);
  claim_.proc = -1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return claim_.old;
}

void Sync::handle_claim(int source, std::span<const std::byte> header) {
  constexpr const char* call = "ARMCI_Win_lock (word claim)";
  ClaimHeader h{};
  if (incoming::Problem p = incoming::parse_fixed(call, "a word claim", source, header, h)) fail(p.call, "%s", p.message);
  bool allowed = false;
  {
    std::lock_guard guard(claimable_mutex_);
    for (const Claimable& c : claimable_)
      allowed = allowed || (h.address >= c.low && h.address + 8 <= c.high && h.address % 8 == 0);
  }
  if (!allowed)
    fail(call, "rank %d claimed the word at 0x%llx, which is no lock word of this rank's windows", source,
         static_cast<unsigned long long>(h.address));
  std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(static_cast<std::uintptr_t>(h.address)));
  std::uint64_t old = word.load(std::memory_order_acquire);
  for (;;) {
    if (old & h.stop) break;
    const std::uint64_t next = (old & ~h.claim) == 0 ? h.desired : old | h.claim;
    if (next == old || word.compare_exchange_weak(old, next, std::memory_order_acq_rel)) break;
  }
  const ClaimAnswer answer{h.token, old};
  // Not waited for: a small eager message the layer keeps until it is sent.
  static platform::Completion answers_sent;
  progress_.network_locked().send_message(source, claim_answer_kind_, std::as_bytes(std::span(&answer, 1)), {},
                                          answers_sent);
}

void Sync::handle_claim_answer(int source, std::span<const std::byte> header) {
  constexpr const char* call = "ARMCI_Win_lock (word claim answer)";
  ClaimAnswer a{};
  if (incoming::Problem p = incoming::parse_fixed(call, "a word claim answer", source, header, a))
    fail(p.call, "%s", p.message);
  if (source != claim_.proc || a.token != claim_.token || claim_.answered.load(std::memory_order_relaxed))
    fail(call, "rank %d answered a word claim (token %llu) that was not made to it", source,
         static_cast<unsigned long long>(a.token));
  claim_.old = a.old;
  claim_.answered.store(true, std::memory_order_release);
  messages_.answered(source, claim_kind_);
}

std::uint64_t Sync::load_own(std::size_t offset) const {
  return atomic_at<std::uint64_t>(static_cast<std::byte*>(sync_->own.address()) + offset)
      .load(std::memory_order_acquire);
}

// ------------------------------------------------------------------ Rmw

void Sync::rmw(const char* call, int op, void* ploc, void* prem, int value, int proc) {
  // The old value goes to ploc; a swap's new value comes from there.
  switch (op) {
    case kFetchAndAdd: {
      const Word w = user_word(call, proc, prem, sizeof(int));
      return store_at(ploc, update32(call, w, true, static_cast<std::uint32_t>(value)));
    }
    case kFetchAndAddLong: {
      const Word w = user_word(call, proc, prem, sizeof(long));
      // The increment is an int, sign-extended to long.
      return store_at(ploc, fetch_add64(call, w, static_cast<std::uint64_t>(static_cast<long>(value))));
    }
    case kSwap: {
      const Word w = user_word(call, proc, prem, sizeof(int));
      return store_at(ploc, update32(call, w, false, load_at<std::uint32_t>(ploc)));
    }
    case kSwapLong: {
      const Word w = user_word(call, proc, prem, sizeof(long));
      return store_at(ploc, swap64(call, w, load_at<std::uint64_t>(ploc)));
    }
    default:
      fail(call, "argument 'op' (%d) is not ARMCI_FETCH_AND_ADD, ARMCI_FETCH_AND_ADD_LONG, ARMCI_SWAP or "
                 "ARMCI_SWAP_LONG", op);
  }
}

// ------------------------------------------------------------------ flags and notifications

void Sync::put_flag(const char* call, const void* src, void* dst, std::size_t bytes, int* flag, int value,
                    int proc) {
  // Both ranges are checked before anything moves.
  if (reinterpret_cast<std::uintptr_t>(flag) % alignof(int) != 0)
    fail(call, "argument 'flag' (%p) is not %zu-byte aligned", static_cast<void*>(flag), alignof(int));
  const Region& flag_region = memory_.find_region(call, "flag", proc, flag, sizeof(int));
  std::byte* flag_local =
      flag_region.local ? flag_region.local + (reinterpret_cast<std::uintptr_t>(flag) - flag_region.base) : nullptr;
  if (bytes > 0) put_blocking(call, src, dst, bytes, proc);  // checks 'dst' before it writes
  if (flag_local != nullptr) {
    // Data that went through the network layer (a neighbour's part in
    // network memory) must have landed before the CPU's store of the flag.
    if (memory_.reached_through_network(proc)) completions_.order_after_puts(proc, true);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    atomic_at<int>(flag_local).store(value, std::memory_order_release);
    return;
  }
  // One atomic write, ordered after the data: a put of the flag may write
  // the word twice (store64's comment), and the second copy could land
  // after the target saw the first and reset the flag, a notification
  // nobody sent.
  completions_.order_after_puts(proc, false);
  update32(call, user_word(call, proc, flag, sizeof(int)), false, static_cast<std::uint32_t>(value));
}

void Sync::put_blocking(const char* call, const void* src, void* dst, std::size_t bytes, int proc) {
  platform::Completion done;
  transfers_.contiguous(Call{call, Op::put, Mode::blocking, proc, nullptr, done, nullptr}, src, dst, bytes);
  if (!done.done()) completions_.wait(call, done);
}

int Sync::notify(const char* call, int proc) {
  const auto p = static_cast<std::size_t>(proc);
  const std::uint64_t count = ++notify_sent_[p];
  // The notification must not overtake this rank's earlier operations to
  // proc: Accs still being applied there, puts not yet ordered, and
  // nonblocking puts whose chunks a pipeline has not posted yet (the layer
  // orders only what it was given), so a notify may follow an NbPut at once.
  if (memory_.reached_through_network(proc)) progress_.drain_pipelines();
  if (peers_.reached_by_network(proc)) {
    progress_.until([&] { return messages_.effects_pending(proc) == 0; });
    completions_.order_after_puts(proc, false);
  } else if (memory_.reached_through_network(proc)) {
    // A neighbour with parts in network memory: the count is a CPU store,
    // which the layer does not order, so the layer's puts must have landed.
    progress_.until([&] { return messages_.effects_pending(proc) == 0; });
    completions_.order_after_puts(proc, true);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // One writer per counter (this rank), so a store or put of the count does.
  store64(call, word_at(*sync_, proc, notify_offset(peers_.rank())), count);
  return static_cast<int>(count);
}

int Sync::notify_wait(const char* call, int proc, int* pval) {
  const std::uint64_t want = ++notify_waited_[static_cast<std::size_t>(proc)];
  std::uint64_t got = 0;
  progress_.until([&] { return (got = load_own(notify_offset(proc))) >= want; });
  if (pval != nullptr) *pval = static_cast<int>(want);
  return static_cast<int>(got);
}

}  // namespace armci
