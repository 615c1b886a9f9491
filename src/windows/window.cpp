// Windows: see window.hpp for the layout of the control block.
//
// Passive target: an exclusive lock is one compare-and-swap 0 -> writer on
// the target's lock word; a shared lock one fetch-and-add of a reader, backed
// out again when the writer bit was set. Neither involves the target's CPU
// with network atomics. Failed attempts back off exponentially (bounded).
// Windows wholly on one node use CPU atomics and a reader word per rank
// instead of the count (see "Locks on one node" at acquire_cpu).
// Operations inside the epoch start at once (nonblocking, the implicit
// completion of their target); unlock first completes them at the target
// (wait + the library's fence to it), then releases the word, so the next
// holder sees everything written under the lock.
//
// Hybrid locks (ARMCI_WIN_LOCK_MIGRATE, a window that spans the network):
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
// one CPU word.
//
// Active target: fence writes an arrival flag at every member, ordered
// after this rank's operations to it, and waits for every member's flag
// (see fence()). PSCW: post stores a count
// into each origin's `exposed` word, start waits for the counts of its
// targets, complete finishes its operations and stores a count into each
// target's `completed` word, wait waits for those of its origins.
#include "src/windows/window.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/copy.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/progress.hpp"

namespace armci {

namespace {

constexpr std::uint64_t kWriter = std::uint64_t{1} << 63;
constexpr std::uint64_t kParked = std::uint64_t{1} << 62;   // hybrid: this word is not in force
constexpr std::uint64_t kClaimed = std::uint64_t{1} << 61;  // hybrid C: a rank off the node waits for it

// Bounded exponential back-off between lock attempts: a short spin first
// (the holder is usually about to release), yielding once the delay is long
// (on an oversubscribed node the holder may need this very core).
class LockBackoff {
 public:
  explicit LockBackoff(Progress& progress) : progress_(progress) {}
  void pause() {
    progress_.progress();
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(delay_ns_);
    while (std::chrono::steady_clock::now() < until)
      if (delay_ns_ >= kYieldFromNs) sched_yield();
    if (delay_ns_ < kMaxNs) delay_ns_ *= 2;
  }

 private:
  static constexpr long kMaxNs = 256 * 1000, kYieldFromNs = 4 * 1000;
  Progress& progress_;
  long delay_ns_ = 250;
};

// Yields of a fence or PSCW wait on an oversubscribed node before it
// leaves the rest to Backoff (about a millisecond).
constexpr unsigned kYieldRounds = 1024;

const char* lock_name(WinLock held) {
  switch (held) {
    case WinLock::shared: return "shared";
    case WinLock::exclusive: return "exclusive";
    case WinLock::nocheck: return "NOCHECK";
    default: return "none";
  }
}

}  // namespace

Window::Window(const char* call, WindowParts parts, const Group& group, void* base, std::size_t bytes,
               int disp_unit, bool allocate)
    : parts_(std::move(parts)), group_(group) {
  group_.communicator = nullptr;  // the copy never owns the caller's communicator
  group_.owns_communicator = false;
  const int n = group_.size();
  const Memory::Members members = parts_.groups.allocation_members(group_);
  if (allocate) {
    auto bases = parts_.memory.allocate(call, bytes, &members);
    allocated_any_ = true;
    allocated_ = bases[static_cast<std::size_t>(parts_.peers.rank())];
    base = allocated_;
  } else if (bytes > 0) {
    parts_.memory.check_remote(call, "base", parts_.peers.rank(), base, bytes);
  }
  const Target mine{reinterpret_cast<std::uintptr_t>(base), bytes, disp_unit};
  auto records = parts_.collectives.allgather(
      group_.team(), std::span(reinterpret_cast<const std::byte*>(&mine), sizeof mine));
  targets_.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) std::memcpy(&targets_[static_cast<std::size_t>(r)], records[static_cast<std::size_t>(r)].data(), sizeof(Target));
  try {
    control_ = parts_.memory.collective_allocate(waiting_offset(n), true, &members);
  } catch (const std::exception& e) {
    fail(call, "allocating the window's control block failed: %s", e.what());
  }
  // The hybrid lock's same-node half: when every member shares this node's
  // memory (and is not reached through the network), every locker of every
  // lock word is a CPU here, so CPU atomics serve the words even in a job
  // whose other ranks make Sync use network atomics; the same holds at
  // every member, so no word is ever touched by both kinds.
  cpu_locks_ = true;
  for (int r = 0; r < n; ++r)
    if (parts_.peers.reached_by_network(world(r)) || control_->local(parts_.peers, world(r)) == nullptr)
      cpu_locks_ = false;
  const auto un = static_cast<std::size_t>(n);
  if (cpu_locks_)
    for (int r = 0; r < n; ++r) {
      std::byte* at = control_->local(parts_.peers, world(r));
      cpu_lock_.push_back(CpuLock{reinterpret_cast<std::uint64_t*>(at + kNetworkWord),
                                  reinterpret_cast<std::uint64_t*>(at + readers_offset(0)),
                                  reinterpret_cast<std::uint64_t*>(at + readers_offset(group_.my_rank))});
    }
  lock_words_.reserve(2 * un);
  mapped_.assign(un, nullptr);
  for (int r = 0; r < n; ++r) {
    lock_words_.push_back(word(r, kNetworkWord));
    lock_words_.push_back(word(r, kCpuWord));
    // Only memory the window owns: a window made on the application's
    // ARMCI_Malloc memory keeps Transfers' lookup, which refuses an access
    // after that memory was freed instead of writing into a stale mapping.
    const Target& t = targets_[static_cast<std::size_t>(r)];
    if (allocate && t.bytes > 0)
      mapped_[static_cast<std::size_t>(r)] =
          parts_.memory.local_mapping(call, "base", world(r), reinterpret_cast<const void*>(t.base), t.bytes);
  }
  // A claim from off the node is served by the target's helper thread;
  // without one it would wait until the target's application next calls
  // the library, and a passive target may compute for long: such windows
  // keep network atomics, which need no target CPU at all. Every member
  // decides alike (the settings are the job's).
  hybrid_ = !cpu_locks_ && parts_.lock_migrate != WinLockMigrate::pinned && parts_.progress.has_network() &&
            parts_.progress.helper_running();
  if (hybrid_) {
    cpu_reach_.assign(un, 0);
    for (int r = 0; r < n; ++r)
      cpu_reach_[static_cast<std::size_t>(r)] =
          !parts_.peers.reached_by_network(world(r)) && control_->local(parts_.peers, world(r)) != nullptr;
    mode_cpu_.assign(un, 0);
    held_cpu_.assign(un, 0);
    network_streak_.assign(un, 0);
    // Every lock starts in network mode (what every member can lock): this
    // rank's C is parked before any member may lock, hence the barrier.
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(control_->local(parts_.peers,
                                                                                     parts_.peers.rank()) +
                                                                      kCpuWord))
        .store(kWriter | kParked, std::memory_order_release);
    parts_.sync.allow_claims(*control_, kCpuWord, 8);
    members.barrier();
  }
  locks_.assign(static_cast<std::size_t>(n), WinLock::none);
  issued_.assign(static_cast<std::size_t>(n), 0);
  started_.assign(static_cast<std::size_t>(n), 0);
  starts_.assign(static_cast<std::size_t>(n), 0);
  completes_.assign(static_cast<std::size_t>(n), 0);
  posts_.assign(static_cast<std::size_t>(n), 0);
  queues_.resize(static_cast<std::size_t>(n));
  notified_sent_.assign(static_cast<std::size_t>(n), 0);
  // The counted fence's tags (see put_notified): 32 bits of an id that
  // counts allocations, which a job does not wrap.
  for (int r = 0; r < n; ++r)
    tags_.push_back(static_cast<std::uint32_t>(control_->ids[static_cast<std::size_t>(world(r))]));
  own_block_ = control_->local(parts_.peers, parts_.peers.rank());
  flags_by_cpu_ = true;
  const int me = group_.my_rank;
  for (int r = 0; r < n; ++r) {
    if (r != me) others_.push_back(r);
    if (control_->local(parts_.peers, world(r)) == nullptr) flags_by_cpu_ = false;
    fenced_words_.push_back(word(r, fenced_offset(me)));
    exposed_words_.push_back(word(r, exposed_offset(me)));
    completed_words_.push_back(word(r, completed_offset(me)));
  }
}

Window::~Window() {
  if (hybrid_ && control_) parts_.sync.stop_claims(*control_);
  if (!freed_ && control_) parts_.memory.free_allocation(*control_);
}

void Window::free(const char* call) {
  if (locks_held_ > 0 || lock_all_)
    fail(call, "argument 'win': this rank still holds a lock on the window (unlock it first)");
  if (access_open_) fail(call, "argument 'win': an access epoch (ARMCI_Win_start) is still open");
  if (posted_) fail(call, "argument 'win': an exposure epoch (ARMCI_Win_post) is still open");
  send_all_held(call);     // a fence epoch left open: its writes still land
  close_all_queues(call);
  parts_.completions.wait(call, held_writes_);
  parts_.completions.wait(call, held_gets_);
  parts_.completions.all_fence();
  check_owed_posts(call);  // a member already waiting for a post of this rank would hang the barrier
  const Memory::Members members = parts_.groups.allocation_members(group_);
  if (allocated_any_) {
    parts_.memory.release(call, allocated_, &members);  // ends with the members' barrier
  } else {
    members.barrier();
  }
  // After the barrier: every member's claims were answered (they block).
  if (hybrid_) parts_.sync.stop_claims(*control_);
  if (parts_.verbose > 0 && (hybrid_ || counters_.intra_node + counters_.network > 0))
    std::fprintf(stderr,
                 "armci: info: window locks at rank %d: %llu intra-node, %llu network, migrations %llu to cpu, "
                 "%llu to network (ARMCI_WIN_LOCK_MIGRATE %s)\n",
                 parts_.peers.rank(), static_cast<unsigned long long>(counters_.intra_node),
                 static_cast<unsigned long long>(counters_.network), static_cast<unsigned long long>(counters_.to_cpu),
                 static_cast<unsigned long long>(counters_.to_network),
                 hybrid_ ? "on" : cpu_locks_ ? "unused: one node" : "pinned");
  parts_.memory.free_allocation(*control_);
  freed_ = true;
}

// ------------------------------------------------------------------ words

std::uint64_t Window::own_word(std::size_t offset) const {
  std::byte* local = own_block_ + offset;
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(local)).load(std::memory_order_acquire);
}

Sync::Word Window::word(int rank, std::size_t offset) const {
  return parts_.sync.word_at(*control_, world(rank), offset);
}

// ------------------------------------------------------------------ operations

inline void Window::check_epoch(const char* call, int rank) const {
  const auto t = static_cast<std::size_t>(rank);
  if (locks_[t] != WinLock::none || lock_all_ || fence_open_ || started_[t]) [[likely]]
    return;
  fail(call, "argument 'rank' (%d): no access epoch to this target is open (call ARMCI_Win_lock, "
             "ARMCI_Win_lock_all, ARMCI_Win_fence or ARMCI_Win_start first)", rank);
}

inline std::uintptr_t Window::target_address(const char* call, int rank, std::size_t disp, std::size_t extent) const {
  const Target& t = targets_[static_cast<std::size_t>(rank)];
  std::uint64_t offset = 0, end = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(disp), static_cast<std::uint64_t>(t.disp_unit), &offset) ||
      __builtin_add_overflow(offset, static_cast<std::uint64_t>(extent), &end) || end > t.bytes) [[unlikely]]
    fail(call, "argument 'disp' (%zu x disp_unit %lld) with %zu bytes runs past the end of rank %d's window "
               "(%llu bytes)", disp, static_cast<long long>(t.disp_unit), extent, rank,
         static_cast<unsigned long long>(t.bytes));
  return t.base + offset;
}

void Window::contiguous(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
                        std::size_t disp) {
  check_epoch(call, rank);
  if (arrivals_pending_) [[unlikely]]
    await_arrival(call, rank);
  const std::uintptr_t remote = target_address(call, rank, disp, bytes);
  if (bytes == 0) return;
  if (hold_ops_) [[unlikely]]
    if (hold(call, op, acc, local, bytes, rank, remote)) return;
  const auto t = static_cast<std::size_t>(rank);
  if (op != Op::acc && mapped_[t] != nullptr && (op == Op::get || parts_.reorder == WinReorder::none)) [[likely]] {
    // A node neighbour (or self): the copy Transfers would make, without
    // its region lookup. Done when it returns, so it needs no completion;
    // only a write that overlaps an unfinished one of another kind waits.
    std::byte* at = mapped_[t] + (remote - targets_[t].base);
    if (op == Op::get) {
      copy_bytes(const_cast<void*>(local), at, bytes);
      return;
    }
    if (issued_[t]) note_write(call, rank, write_kind(op, acc, bytes, false), remote, bytes);
    copy_bytes(at, local, bytes);
    // CPU lock words and flags are released after it (the release orders
    // the copy); a network word needs the order that unlock and fence
    // give what they issued.
    if (!cpu_locks_) note_issued(rank);
    return;
  }
  transfer(call, op, acc, local, bytes, rank, remote);
}

void Window::transfer(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
                      std::uintptr_t remote) {
  const int proc = world(rank);
  auto* remote_ptr = reinterpret_cast<void*>(remote);
  void* local_ptr = const_cast<void*>(local);
  if (notify_puts_ && op == Op::put) [[unlikely]] {
    const auto t = static_cast<std::size_t>(rank);
    // Targets in a lock or PSCW epoch keep their own rules.
    if (locks_[t] == WinLock::none && !lock_all_ && !started_[t]) return put_notified(call, local, bytes, rank, remote);
  }
  if (op != Op::get) {
    if (parts_.reorder != WinReorder::none) {
      defer(call, op, acc, local, bytes, rank, remote);
      note_issued(rank);
      return;
    }
    note_write(call, rank, write_kind(op, acc, bytes, false), remote, bytes);
  }
  platform::Completion& done = parts_.completions.implicit(proc);
  const Call c{call, op, Mode::nonblocking, proc, acc, done, nullptr};
  note_issued(rank);
  if (op == Op::get)
    parts_.transfers.contiguous(c, remote_ptr, local_ptr, bytes);
  else
    parts_.transfers.contiguous(c, local_ptr, remote_ptr, bytes);
  parts_.completions.limit_implicit(proc);
}

void Window::strided(const char* call, Op op, const AccArgs* acc, void* local, const int* local_stride,
                     const int* remote_stride, const int* count, int levels, int rank, std::size_t disp) {
  check_epoch(call, rank);
  if (arrivals_pending_) [[unlikely]]
    await_arrival(call, rank);
  const bool get = op == Op::get;
  strided::Shape shape;
  // The side written to must not overlap itself: the remote one for put
  // and acc, the local one for get.
  const strided::Problem p = get ? strided::check(remote_stride, local_stride, count, levels, shape)
                                 : strided::check(local_stride, remote_stride, count, levels, shape);
  if (p) fail(call, "%s", p.message);
  const auto remote_extent = static_cast<std::size_t>(get ? shape.src_extent : shape.dst_extent);
  const std::uintptr_t remote = target_address(call, rank, disp, shape.pieces == 0 ? 0 : remote_extent);
  if (shape.pieces == 0) return;
  if (local == nullptr) fail(call, "argument '%s' is NULL", get ? "dst_ptr" : "src_ptr");
  if (acc != nullptr && shape.piece_bytes % static_cast<std::int64_t>(acc_element_size(acc->datatype)) != 0)
    fail(call, "argument 'count' (count[0] = %lld bytes) is not a whole number of %zu-byte elements",
         static_cast<long long>(shape.piece_bytes), acc_element_size(acc->datatype));
  if (hold_ops_ && !held_.empty() && !held_[static_cast<std::size_t>(rank)].empty()) [[unlikely]] {
    // Not held either: what was held for this target is applied first, in
    // program order.
    send_held(call, rank);
    parts_.completions.wait(call, held_writes_);
    parts_.completions.wait(call, held_gets_);
  }
  if (!get) {
    // Not queued (the caller's stride arrays are not ours to keep), but
    // after the writes queued before it, as in program order.
    note_write(call, rank, write_kind(op, acc, 0, true), remote, remote_extent);
    issue_queued(call, rank);
  }
  const int proc = world(rank);
  auto* remote_ptr = reinterpret_cast<void*>(remote);
  platform::Completion& done = parts_.completions.implicit(proc);
  const Call c{call, op, Mode::nonblocking, proc, acc, done, nullptr};
  note_issued(rank);
  if (get)
    parts_.transfers.strided(c, remote_ptr, remote_stride, local, local_stride, count, levels);
  else
    parts_.transfers.strided(c, local, local_stride, remote_ptr, remote_stride, count, levels);
  parts_.completions.limit_implicit(proc);
}

// ------------------------------------------------------------------ reordering

std::uint64_t Window::write_kind(Op op, const AccArgs* acc, std::size_t bytes, bool strided) const {
  // The path a write takes: combined into a vector message, contiguous on
  // its own, strided. Two paths are not ordered with each other.
  const std::uint64_t path =
      strided ? 2 : parts_.reorder == WinReorder::combine && bytes <= parts_.combine_max ? 0 : 1;
  const auto datatype = static_cast<std::uint32_t>(acc != nullptr ? acc->datatype : 0);
  return static_cast<std::uint64_t>(op) | path << 8 | std::uint64_t{datatype} << 32;
}

void Window::note_write(const char* call, int rank, std::uint64_t kind, std::uintptr_t remote, std::size_t extent) {
  WriteQueue& q = queues_[static_cast<std::size_t>(rank)];
  const std::uintptr_t end = remote + extent;
  for (const WriteQueue::Span& span : q.spans)
    if (remote < span.high && span.low < end && (span.mixed || span.kind != kind)) {
      // Overlapping writes of two kinds (a put over an acc, accs of two
      // ops, a combined piece over a direct one) would not keep program
      // order along two paths: what came first completes before this one.
      issue_queued(call, rank);
      finish_ops(call, rank);
      q.spans.clear();
      break;
    }
  for (WriteQueue::Span& span : q.spans)
    if (span.kind == kind && !span.mixed && remote <= span.high && span.low <= end) {
      span.low = std::min(span.low, remote);
      span.high = std::max(span.high, end);
      return;
    }
  if (q.spans.size() == kMaxSpans) {
    WriteQueue::Span all{remote, end, kind, true};
    for (const WriteQueue::Span& span : q.spans) all.low = std::min(all.low, span.low), all.high = std::max(all.high, span.high);
    q.spans.assign(1, all);
    return;
  }
  q.spans.push_back(WriteQueue::Span{remote, end, kind, false});
}

void Window::defer(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
                   std::uintptr_t remote) {
  note_write(call, rank, write_kind(op, acc, bytes, false), remote, bytes);
  WriteQueue& q = queues_[static_cast<std::size_t>(rank)];
  q.ops.push_back(Deferred{op, acc != nullptr, acc != nullptr ? *acc : AccArgs{}, local, bytes, remote});
  // A bounded queue: past this many the writes leave early, so a long
  // epoch neither grows memory nor stalls its close on one huge batch.
  constexpr std::size_t kMaxQueued = 1024;
  if (q.ops.size() >= kMaxQueued) issue_queued(call, rank);
}

void Window::issue_queued(const char* call, int rank) {
  WriteQueue& q = queues_[static_cast<std::size_t>(rank)];
  if (q.ops.empty()) return;
  const int proc = world(rank);
  platform::Completion& done = parts_.completions.implicit(proc);
  // One small write alone gains nothing from a message the target's
  // helper must apply: it goes as mode none would send it.
  std::size_t small = 0;
  if (parts_.reorder == WinReorder::combine)
    for (const Deferred& d : q.ops) small += d.bytes <= parts_.combine_max ? 1 : 0;
  const bool combine = small >= 2;
  // Aggregate mode: pieces up to ARMCI_AGGREGATE_PIECE_MAX to a network
  // peer join the vector message, larger ones and same-node peers go at once.
  const Mode mode = combine ? Mode::aggregate : Mode::nonblocking;
  for (const Deferred& d : q.ops) {
    const Call c{call, d.op, mode, proc, d.has_acc ? &d.acc : nullptr, done, combine ? &batches_ : nullptr};
    parts_.transfers.contiguous(c, d.src, reinterpret_cast<void*>(d.remote), d.bytes);
    if (!combine) parts_.completions.limit_implicit(proc);
  }
  if (combine) {
    parts_.vector_messages.send_all(batches_, done);
    parts_.completions.limit_implicit(proc);
  }
  q.ops.clear();
}

void Window::finish_ops(const char* call, int rank) {
  if (!issued_[static_cast<std::size_t>(rank)]) return;
  const int proc = world(rank);
  parts_.completions.wait(call, parts_.completions.implicit(proc));
  parts_.completions.fence(proc);
  issued_[static_cast<std::size_t>(rank)] = 0;
}

void Window::order_issued_before_next(const char* call, int rank) {
  const int proc = world(rank);
  parts_.completions.wait(call, parts_.completions.implicit(proc));
  parts_.completions.order_before_next(proc);
  issued_[static_cast<std::size_t>(rank)] = 0;
}

void Window::finish_all_ops(const char* call) {
  if (!any_issued_) return;
  for (int r = 0; r < size(); ++r)
    if (issued_[static_cast<std::size_t>(r)]) parts_.completions.wait(call, parts_.completions.implicit(world(r)));
  parts_.completions.all_fence();
  issued_.assign(issued_.size(), 0);
  any_issued_ = false;
}

// ------------------------------------------------------------------ passive target

std::uint64_t Window::lock_fetch_add(const char* call, const Sync::Word& w, std::uint64_t value, bool cpu) {
  if (cpu) return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.local)).fetch_add(value);
  return parts_.sync.fetch_add64(call, w, value);
}

std::uint64_t Window::lock_compare_swap(const char* call, const Sync::Word& w, std::uint64_t expected,
                                        std::uint64_t desired, bool cpu) {
  if (cpu) {
    std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(w.local));
    word.compare_exchange_strong(expected, desired);
    return expected;  // the old value either way
  }
  return parts_.sync.compare_swap64(call, w, expected, desired);
}

// Locks on one node: every locker is a CPU with the target's control block
// mapped, so a reader need not count itself into the word a writer takes.
// Each reader has a word of its own at the target (readers_offset), the
// lock word holds the writer alone, and the two sides meet as in Dekker's
// algorithm: a reader sets its word, then reads the lock word; a writer
// takes the lock word (CAS), then reads the reader words. Both are
// sequentially consistent, so at least one of the two sees the other, and
// whoever sees the other backs out (readers first, as the counting word
// does: a writer never holds the word while it waits, so readers keep
// sharing the lock while one waits). Releases are then plain stores, which
// also order the epoch's copies before them, and a reader's epoch costs
// one atomic on a line that other readers do not write.
inline void Window::acquire_cpu(int rank, bool exclusive) {
  const CpuLock& l = cpu_lock_[static_cast<std::size_t>(rank)];
  std::atomic_ref<std::uint64_t> writer(*l.writer);
  LockBackoff backoff(parts_.progress);
  if (!exclusive) {
    std::atomic_ref<std::uint64_t> mine(*l.mine);
    for (;;) {
      mine.exchange(1);
      if (!(writer.load() & kWriter)) [[likely]]
        break;
      mine.store(0, std::memory_order_release);
      backoff.pause();
    }
  } else {
    for (;;) {
      std::uint64_t expected = 0;
      if (writer.compare_exchange_strong(expected, kWriter)) {
        int r = 0;
        while (r < size() && std::atomic_ref<std::uint64_t>(l.readers[r]).load() == 0) ++r;
        if (r == size()) break;
        writer.store(0, std::memory_order_release);  // a reader is in: it goes first
      }
      backoff.pause();
    }
  }
  ++counters_.intra_node;
}

inline void Window::release_cpu(int rank, bool exclusive) {
  const CpuLock& l = cpu_lock_[static_cast<std::size_t>(rank)];
  std::atomic_ref<std::uint64_t>(exclusive ? *l.writer : *l.mine).store(0, std::memory_order_release);
}

inline void Window::acquire(const char* call, int rank, bool exclusive) {
  if (hybrid_) return acquire_hybrid(call, rank, exclusive);
  if (cpu_locks_) return acquire_cpu(rank, exclusive);
  const Sync::Word& w = lock_word(rank, kNetworkWord);
  LockBackoff backoff(parts_.progress);
  if (exclusive) {
    while (lock_compare_swap(call, w, 0, kWriter, false) != 0) backoff.pause();
  } else {
    while (lock_fetch_add(call, w, 1, false) & kWriter) {
      lock_fetch_add(call, w, ~std::uint64_t{0}, false);  // back out: a writer holds it
      backoff.pause();
    }
  }
  ++counters_.network;
}

// A word no correct sequence of lock operations leaves: a parked word
// without its writer bit, a parked word claimed, a reader count that went
// below zero. Without this check such a word would keep every locker
// retrying for ever.
static void check_word(const char* call, int rank, bool cpu, std::uint64_t old) {
  const std::uint64_t readers = old & (kClaimed - 1);
  if (((old & kParked) && (!(old & kWriter) || (old & kClaimed))) || readers > (std::uint64_t{1} << 32))
    fail(call, "argument 'rank' (%d): the window's %s lock word at that rank reads 0x%llx, which no lock "
               "sequence leaves (a peer released a lock it did not hold, or memory was overwritten)",
         rank, cpu ? "CPU" : "network", static_cast<unsigned long long>(old));
}

bool Window::try_word(const char* call, int rank, bool cpu, bool exclusive, std::uint64_t& old) {
  const Sync::Word& w = lock_word(rank, cpu ? kCpuWord : kNetworkWord);
  if (exclusive) {
    old = lock_compare_swap(call, w, 0, kWriter, cpu);
    if (old != 0) check_word(call, rank, cpu, old);
    return old == 0;
  }
  old = lock_fetch_add(call, w, 1, cpu);
  check_word(call, rank, cpu, old);
  // A claim from off the node also keeps new readers out, so C drains.
  if (!(old & (kWriter | kClaimed))) return true;
  lock_fetch_add(call, w, ~std::uint64_t{0}, cpu);  // back out
  return false;
}

void Window::acquire_hybrid(const char* call, int rank, bool exclusive) {
  const auto t = static_cast<std::size_t>(rank);
  LockBackoff backoff(parts_.progress);
  std::uint64_t old = 0;
  // Finding both words parked is a migration under way: after one flip of
  // the mode, wait before the next.
  int flips = 0;
  auto flip = [&] {
    if (++flips > 1) backoff.pause();
  };
  if (cpu_reach_[t] && !exclusive) {
    // Readers always read on N, so readers of both kinds share the lock (a
    // reader holding C would shut out a remote reader until it unlocks: a
    // program that holds a shared lock across a barrier with one would
    // hang). C thus only ever has one writer; a neighbour's reader that
    // finds it in force brings the lock back to N itself, once C is free
    // (a pending claim from off the node wants the same).
    std::atomic_ref<std::uint64_t> c(*reinterpret_cast<std::uint64_t*>(lock_word(rank, kCpuWord).local));
    for (;;) {
      if (!mode_cpu_[t]) {
        if (try_word(call, rank, false, false, old)) {
          held_cpu_[t] = 0;
          ++counters_.network;
          return;
        }
        if (old & kParked) {
          mode_cpu_[t] = 1;
          flip();
          continue;
        }
        backoff.pause();
        continue;
      }
      old = c.load(std::memory_order_acquire);
      if (old & kParked) {
        mode_cpu_[t] = 0;
        flip();
        continue;
      }
      if ((old & ~kClaimed) == 0 && c.compare_exchange_strong(old, kWriter | kParked)) {
        lock_fetch_add(call, lock_word(rank, kNetworkWord), 0 - (kParked + kWriter - 1), false);  // N: a reader
        mode_cpu_[t] = 0;
        held_cpu_[t] = 0;
        ++counters_.to_network;
        ++counters_.network;
        return;
      }
      check_word(call, rank, true, old);
      backoff.pause();
    }
  }
  if (cpu_reach_[t]) {
    // A node neighbour's writer: C where it is in force; N otherwise, or a
    // migration.
    for (;;) {
      if (mode_cpu_[t]) {
        if (try_word(call, rank, true, exclusive, old)) {
          held_cpu_[t] = 1;
          network_streak_[t] = 0;
          ++counters_.intra_node;
          return;
        }
        if (old & kParked) {
          mode_cpu_[t] = 0;
          flip();
          continue;
        }
        backoff.pause();
        continue;
      }
      bool migrate = network_streak_[t] + 1 >= parts_.lock_migrate_after;  // (a writer: readers stay on N)
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
        held_cpu_[t] = 0;
        if (!migrate) {
          ++network_streak_[t];
          ++counters_.network;
          return;
        }
        lock_fetch_add(call, lock_word(rank, kNetworkWord), kParked, false);  // N: kWriter | kParked from now on
        const std::uint64_t take = exclusive ? kParked : kParked + kWriter - 1;
        lock_fetch_add(call, lock_word(rank, kCpuWord), 0 - take, true);     // C: ours
        mode_cpu_[t] = 1;
        held_cpu_[t] = 1;
        network_streak_[t] = 0;
        ++counters_.to_cpu;
        ++counters_.intra_node;
        return;
      }
      if (old & kParked) {
        mode_cpu_[t] = 1;
        flip();
        continue;
      }
      backoff.pause();
    }
  }
  // Off the target's node: N only; when C is in force, claim it through the
  // target so that N comes back to the network.
  for (;;) {
    if (try_word(call, rank, false, exclusive, old)) {
      held_cpu_[t] = 0;
      ++counters_.network;
      return;
    }
    if (old & kParked) {
      const std::uint64_t was = parts_.sync.claim_at_target(call, lock_word(rank, kCpuWord), kWriter | kParked, kClaimed, kParked);
      if (!(was & kParked) && (was & ~kClaimed) == 0) {
        // Granted: C is parked and N, parked, is ours to unpark.
        const std::uint64_t take = exclusive ? kParked : kParked + kWriter - 1;
        lock_fetch_add(call, lock_word(rank, kNetworkWord), 0 - take, false);
        held_cpu_[t] = 0;
        ++counters_.to_network;
        ++counters_.network;
        return;
      }
      if (was & kParked) {  // N came back meanwhile, or is on its way
        flip();
        continue;
      }
    }
    backoff.pause();
  }
}

inline void Window::release(const char* call, int rank, WinLock held) {
  if (held == WinLock::nocheck) return;
  if (cpu_locks_) return release_cpu(rank, held == WinLock::exclusive);
  const bool cpu = hybrid_ && held_cpu_[static_cast<std::size_t>(rank)] != 0;
  const std::size_t offset = hybrid_ && cpu ? kCpuWord : kNetworkWord;
  // Adding the two's complement: one atomic whatever readers do meanwhile.
  lock_fetch_add(call, lock_word(rank, offset), held == WinLock::exclusive ? 0 - kWriter : ~std::uint64_t{0}, cpu);
}

void Window::lock(const char* call, int type, int rank, int assert) {
  WinLock& held = locks_[static_cast<std::size_t>(rank)];
  if (held != WinLock::none || lock_all_)
    fail(call, "argument 'rank' (%d): this rank holds a lock on that target already (%s)", rank,
         lock_all_ ? "ARMCI_Win_lock_all" : lock_name(held));
  // A fence epoch that no operation used may be followed by a lock (MPI
  // programs fence at creation); an open PSCW access epoch may not.
  if (access_open_)
    fail(call, "argument 'win': a PSCW access epoch (ARMCI_Win_start) is open; complete it first");
  const bool exclusive = type == kLockExclusive;
  if (!(assert & kNoCheck)) acquire(call, rank, exclusive);
  held = assert & kNoCheck ? WinLock::nocheck : exclusive ? WinLock::exclusive : WinLock::shared;
  ++locks_held_;
}

void Window::unlock(const char* call, int rank) {
  WinLock& held = locks_[static_cast<std::size_t>(rank)];
  if (held == WinLock::none)
    fail(call, "argument 'rank' (%d): this rank holds no lock on that target (ARMCI_Win_lock was not called%s)",
         rank, lock_all_ ? "; use ARMCI_Win_unlock_all after ARMCI_Win_lock_all" : "");
  close_queue(call, rank);
  if (held == WinLock::nocheck) {
    finish_ops(call, rank);
  } else {
    // The release is itself a network operation to the target: ordered
    // after the epoch's operations, its completion implies theirs, so no
    // separate flush round trip.
    order_ops_before_next(call, rank);
    release(call, rank, held);
  }
  held = WinLock::none;
  --locks_held_;
}

void Window::lock_all(const char* call, int assert) {
  if (lock_all_ || locks_held_ > 0)
    fail(call, "argument 'win': this rank holds a lock on the window already (%s)",
         lock_all_ ? "ARMCI_Win_lock_all" : "ARMCI_Win_lock");
  if (access_open_)
    fail(call, "argument 'win': a PSCW access epoch (ARMCI_Win_start) is open; complete it first");
  if (!(assert & kNoCheck))
    for (int r = 0; r < size(); ++r) acquire(call, r, false);
  lock_all_ = true;
  lock_all_nocheck_ = (assert & kNoCheck) != 0;
}

void Window::unlock_all(const char* call) {
  if (!lock_all_) fail(call, "argument 'win': this rank holds no ARMCI_Win_lock_all on the window");
  close_all_queues(call);
  if (lock_all_nocheck_) {
    finish_all_ops(call);
  } else {
    for (int r = 0; r < size(); ++r) {
      order_ops_before_next(call, r);
      release(call, r, WinLock::shared);
    }
    any_issued_ = false;
  }
  lock_all_ = false;
}

void Window::flush(const char* call, int rank) {
  if (locks_[static_cast<std::size_t>(rank)] == WinLock::none && !lock_all_)
    fail(call, "argument 'rank' (%d): no passive-target epoch (ARMCI_Win_lock) to this target is open", rank);
  close_queue(call, rank);
  finish_ops(call, rank);
}

void Window::flush_all(const char* call) {
  if (locks_held_ == 0 && !lock_all_)
    fail(call, "argument 'win': no passive-target epoch (ARMCI_Win_lock or _lock_all) is open");
  close_all_queues(call);
  finish_all_ops(call);
}

// ------------------------------------------------------------------ active target

void Window::fence(const char* call, int assert) {
  if (locks_held_ > 0 || lock_all_)
    fail(call, "argument 'win': a passive-target epoch (ARMCI_Win_lock) is open; unlock first");
  if (access_open_ || posted_)
    fail(call, "argument 'win': a PSCW epoch (ARMCI_Win_start or _post) is open; close it first");
  if (parts_.fence == WinFence::deferred) [[unlikely]] {
    fence_deferred(call, assert);
    return;
  }
  if (parts_.fence == WinFence::counted) [[unlikely]] {
    fence_counted(call, assert);
    return;
  }
  // NOPRECEDE and NOSUCCEED together: nothing before and nothing after, so
  // no other rank can be affected by when this one passes.
  // Even under NOPRECEDE: a queued write is never dropped.
  close_all_queues(call);
  const bool nothing_around = (assert & kNoPrecede) && (assert & kNoSucceed);
  if (nothing_around) {
    fence_open_ = false;
    return;
  }
  // Arrival flags instead of completion + barrier: each member writes the
  // fence's number into its own word at every other member, ordered after
  // its operations to that member, and leaves once every member's word
  // reached it. A member's flag thus says both "it has arrived" and "its
  // operations to me are in place", so the fence costs one one-way latency
  // (the flags travel at once) and no flush round trip.
  const std::uint64_t epoch = ++fences_;
  const bool ops_before = !(assert & kNoPrecede);
  for (int t : others_) {
    if (ops_before) order_ops_before_next(call, t);
    parts_.sync.store64(call, fenced_words_[static_cast<std::size_t>(t)], epoch);
  }
  if (ops_before) finish_ops(call, group_.my_rank);
  any_issued_ = false;
  fence_open_ = !(assert & kNoSucceed);
  // Under NOPRECEDE (which every member gives, or none) no member has
  // anything to complete here, and what must follow every member's arrival
  // (the next epoch's operations to it) waits for it then: the fence is
  // only the flags, and the members' arrivals overlap their next epoch.
  if (!ops_before && fence_open_) {
    arrivals_pending_ = true;
    return;
  }
  arrivals_pending_ = false;  // the wait below covers every earlier fence's arrivals
  wait_counts(call, "win", "reach the fence", "a member that never calls ARMCI_Win_fence", others_,
              own_words(fenced_offset(0)), [epoch](int) { return epoch; }, Stuck::fence);
  // The members' writes into this window, announced by their flags, are
  // seen by what the application reads next.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// ------------------------------------------------------------------ deferred fence

// A contiguous operation of a fence epoch, kept for the closing fence;
// false for a target in a lock or PSCW epoch, which keep their own rules.
bool Window::hold(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
                  std::uintptr_t remote) {
  const auto t = static_cast<std::size_t>(rank);
  if (locks_[t] != WinLock::none || lock_all_ || started_[t]) return false;
  if (held_.empty()) held_.resize(static_cast<std::size_t>(size()));
  std::vector<Deferred>& list = held_[t];
  list.push_back(Deferred{op, acc != nullptr, acc != nullptr ? *acc : AccArgs{}, local, bytes, remote});
  // Bounded, as the reordering queue is: a long epoch does not grow memory.
  constexpr std::size_t kMaxHeld = 1024;
  if (list.size() >= kMaxHeld) send_held(call, rank);
  return true;
}

void Window::send_held(const char* call, int rank) {
  if (held_.empty()) return;
  std::vector<Deferred>& list = held_[static_cast<std::size_t>(rank)];
  if (list.empty()) return;
  const int proc = world(rank);
  if (rank == group_.my_rank || !parts_.peers.reached_by_network(proc) || !parts_.progress.has_network()) {
    // No message reaches a node neighbour: the origin applies them now, as
    // the immediate design would have when they were called.
    platform::Completion& done = parts_.completions.implicit(proc);
    for (const Deferred& d : list) {
      const Call c{call, d.op, Mode::nonblocking, proc, d.has_acc ? &d.acc : nullptr, done, nullptr};
      auto* remote = reinterpret_cast<void*>(d.remote);
      if (d.op == Op::get)
        parts_.transfers.contiguous(c, remote, const_cast<void*>(d.src), d.bytes);
      else
        parts_.transfers.contiguous(c, d.src, remote, d.bytes);
      parts_.completions.limit_implicit(proc);
    }
    note_issued(rank);
    list.clear();
    return;
  }
  const Deferred* previous = nullptr;
  for (const Deferred& d : list) {
    const auto* local = static_cast<const std::byte*>(d.src);
    if (d.op == Op::get) {
      parts_.vector_messages.add(d.op, nullptr, local, d.remote, d.bytes, proc, held_gets_, held_get_batches_);
      continue;
    }
    // Writes of two kinds (a put and an acc, accs of two ops or types)
    // travel in different messages, whose order the target need not keep:
    // the earlier kind is applied before the next leaves.
    const bool same_kind = previous != nullptr && previous->op == d.op && previous->has_acc == d.has_acc &&
                           (!d.has_acc || (previous->acc.datatype == d.acc.datatype &&
                                           !std::memcmp(&previous->acc.scale, &d.acc.scale, sizeof d.acc.scale)));
    if (previous != nullptr && !same_kind) {
      parts_.vector_messages.send_all(held_batches_, held_writes_);
      parts_.completions.wait(call, held_writes_);
    }
    parts_.vector_messages.add(d.op, d.has_acc ? &d.acc : nullptr, local, d.remote, d.bytes, proc, held_writes_,
                               held_batches_);
    previous = &d;
  }
  parts_.vector_messages.send_all(held_batches_, held_writes_);
  parts_.vector_messages.send_all(held_get_batches_, held_gets_);
  list.clear();
}

void Window::send_all_held(const char* call) {
  for (int r = 0; r < size() && !held_.empty(); ++r) send_held(call, r);
}

// The closing fence sends what the epoch held, then one reduction of every
// member's count of messages sent to each target (since start-up: a count
// never goes back, and other windows' or handles' messages count on both
// sides alike), then each member waits until it applied that many from the
// members, then the barrier. The origin never waits for an ack of its writes.
void Window::fence_deferred(const char* call, int assert) {
  send_all_held(call);  // under NOPRECEDE too: a held write is never dropped
  close_all_queues(call);
  const bool nothing_around = (assert & kNoPrecede) && (assert & kNoSucceed);
  // Gets' data is in place when the fence returns; what went directly (a
  // node neighbour's copies, strided operations) is complete at its target.
  parts_.completions.wait(call, held_gets_);
  finish_all_ops(call);
  if (assert & kNoPrecede) {
    // Erroneous writes under NOPRECEDE are not counted by the members: they land before the barrier.
    parts_.completions.wait(call, held_writes_);
  } else {
    const int n = size();
    counts_.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) counts_[static_cast<std::size_t>(r)] = parts_.vector_messages.writes_sent(world(r));
    const FenceStep step{this, call, "reduction of the message counts or the wait for those messages"};
    sum_counts_over_members();
    const std::uint64_t expected = counts_[static_cast<std::size_t>(group_.my_rank)];
    // No member sends more before the barrier, so the sum reaching the
    // count means every member's messages were applied.
    auto applied = [&] {
      std::uint64_t sum = 0;
      for (int o = 0; o < n; ++o) sum += parts_.vector_messages.writes_applied(world(o));
      return sum >= expected;
    };
    if (!applied()) parts_.progress.until(applied);
  }
  fence_open_ = hold_ops_ = !(assert & kNoSucceed);
  if (nothing_around) return;
  const FenceStep step{this, call, "barrier"};
  parts_.collectives.barrier(group_.team());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Window::fence_step_expired(const void* context) {
  const auto& at = *static_cast<const FenceStep*>(context);
  const Window& w = *at.window;
  const int awaited = WaitDeadline::awaited();
  int awaited_in_window = -1;
  for (int r = 0; r < w.size() && awaited >= 0; ++r)
    if (w.world(r) == awaited) awaited_in_window = r;
  // The step's partner: the absent member itself, or one that waits on it.
  if (awaited_in_window >= 0)
    fail(at.call, "argument 'win': window rank %d (world rank %d) waited ARMCI_WIN_SYNC_TIMEOUT (%ld s) in the "
                  "fence's %s over the window's %d members, at the step that waits on window rank %d (world "
                  "rank %d): a member that never calls ARMCI_Win_fence (that one, or one it waits on)?",
         w.group_.my_rank, w.world(w.group_.my_rank), w.parts_.sync_timeout_seconds, at.step, w.size(),
         awaited_in_window, awaited);
  fail(at.call, "argument 'win': window rank %d (world rank %d) waited ARMCI_WIN_SYNC_TIMEOUT (%ld s) in the "
                "fence's %s over the window's %d members: a member that never calls ARMCI_Win_fence?",
       w.group_.my_rank, w.world(w.group_.my_rank), w.parts_.sync_timeout_seconds, at.step, w.size());
}

void Window::sum_counts_over_members() {
  parts_.collectives.allreduce(group_.team(), counts_.data(), counts_.size(), sizeof(std::uint64_t),
                               [](void* into, const void* from, std::size_t count) {
                                 auto* a = static_cast<std::uint64_t*>(into);
                                 const auto* b = static_cast<const std::uint64_t*>(from);
                                 for (std::size_t i = 0; i < count; ++i) a[i] += b[i];
                               });
}

// ------------------------------------------------------------------ counted fence

// Tags: the target's id of the window's control allocation (every rank
// numbers its allocations apart and never reuses a number), so the
// notifications of two windows, or of Put_notify users to come, are
// counted apart at the target. Epochs need no tag of their own: a put of
// the next epoch leaves only after the barrier, which the target enters
// after it counted this epoch's. (A reduction of the global count after a
// barrier would need no tag, but costs the barrier twice and still counts
// a window fenced by other members meanwhile.)
void Window::put_notified(const char* call, const void* local, std::size_t bytes, int rank, std::uintptr_t remote) {
  // Whatever the reordering mode: it goes now, along the direct path.
  note_write(call, rank, write_kind(Op::put, nullptr, SIZE_MAX, false), remote, bytes);
  const int proc = world(rank);
  platform::Completion& done = parts_.completions.implicit(proc);
  const Call c{call, Op::put, Mode::nonblocking, proc, nullptr, done, nullptr};
  const auto t = static_cast<std::size_t>(rank);
  if (parts_.transfers.put_notify(c, local, reinterpret_cast<void*>(remote), bytes, tags_[t])) {
    ++notified_sent_[t];
    issued_[t] |= kIssuedNotified;
    any_issued_ = true;
  }
  parts_.completions.limit_implicit(proc);
}

void Window::fence_counted(const char* call, int assert) {
  close_all_queues(call);  // under NOPRECEDE too: a queued write is never dropped
  const bool nothing_around = (assert & kNoPrecede) && (assert & kNoSucceed);
  // What went without a notification is completed at its target (it counts
  // 0); a target that got only notified puts needs no flush round trip.
  if (any_issued_) {
    for (int r = 0; r < size(); ++r) {
      const auto t = static_cast<std::size_t>(r);
      if (issued_[t] & kIssuedOther) {
        finish_ops(call, r);
      } else if (issued_[t] != 0) {
        parts_.completions.wait(call, parts_.completions.implicit(world(r)));  // the caller's buffers are free
        issued_[t] = 0;
      }
    }
    any_issued_ = false;
  }
  if (!(assert & kNoPrecede)) {
    counts_.assign(notified_sent_.begin(), notified_sent_.end());
    {
      const FenceStep step{this, call, "reduction of the notification counts"};
      sum_counts_over_members();
    }
    const std::uint64_t expected = counts_[static_cast<std::size_t>(group_.my_rank)];
    const std::uint32_t tag = tags_[static_cast<std::size_t>(group_.my_rank)];
    std::uint64_t received = 0;
    // Notifications come from the network alone: no CPU-stored word to poll on its own.
    if (wait_until([&] { return (received = parts_.transfers.notifications(tag)) >= expected; }, false))
      fail(call, "argument 'win': window rank %d (world rank %d) received %llu of the %llu notified puts the "
                 "members sent it within ARMCI_WIN_SYNC_TIMEOUT (%ld s): a notification lost by the network "
                 "layer?", group_.my_rank, world(group_.my_rank), static_cast<unsigned long long>(received),
           static_cast<unsigned long long>(expected), parts_.sync_timeout_seconds);
  }
  fence_open_ = notify_puts_ = !(assert & kNoSucceed);
  if (nothing_around) return;
  const FenceStep step{this, call, "barrier"};
  parts_.collectives.barrier(group_.team());
  // The members' writes, counted or completed before the barrier, are seen
  // by what the application reads next.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Window::await_arrival(const char* call, int rank) {
  if (rank == group_.my_rank || own_word(fenced_offset(rank)) >= fences_) return;
  one_member_.assign(1, rank);
  wait_counts(call, "rank", "reach the fence", "a member that never calls ARMCI_Win_fence", one_member_,
              own_words(fenced_offset(0)), [epoch = fences_](int) { return epoch; }, Stuck::fence);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Window::post(const char* call, const std::vector<int>& origins, int assert) {
  if (posted_) fail(call, "argument 'win': an exposure epoch is open already (ARMCI_Win_wait it first)");
  // The application's own stores into the window are in memory before an
  // origin can write next to them.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int o : origins) {
    const auto i = static_cast<std::size_t>(o);
    parts_.sync.store64(call, exposed_words_[i], ++posts_[i]);
  }
  keep_group(exposure_group_, origins);
  exposure_owed_ = 0;
  posted_ = true;
}

template <class Reached>
bool Window::wait_until(Reached reached, bool by_cpu) {
  if (reached()) return false;
  // The timeout counts from the first clock read, 128 polls in: most
  // waits end before it, and a clock read (45 ns here) costs a fifth of a
  // whole fence + put epoch between two cores.
  std::chrono::steady_clock::time_point start{};
  const auto limit = std::chrono::duration<double>(parts_.sync_timeout_seconds);
  bool late = false;
  unsigned polls = 0;
  auto done = [&] {
    if (reached()) return true;
    if (++polls % 128 != 0 || parts_.sync_timeout_seconds <= 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (polls == 128) start = now;
    late = now - start > limit;
    return late;
  };
  // A flag a neighbour stores is seen by a load: it is polled on its own
  // between rounds of network progress, unless ranks outnumber the cores
  // (no spin): then the rank that stores it may need this very core.
  if (by_cpu && Backoff::spin().count() > 0) {
    parts_.progress.until_stored(done);
  } else if (by_cpu) {
    // Ranks outnumber the cores: the member that stores the flag is most
    // likely waiting for this very core, so every failed poll hands it
    // over at once. Backoff's rounds poll the network between yields and
    // wait a few rounds before the first (twice the epoch at np 4 on 2
    // cores); network progress here runs every 16 yields, and a wait that
    // lasts (a member computing) goes back to Backoff, which naps.
    for (unsigned round = 1; round <= kYieldRounds; ++round) {
      if (done()) break;
      sched_yield();
      if (round % 16 == 0) parts_.progress.progress();
    }
    if (!late && !reached()) parts_.progress.until(done);
  } else {
    parts_.progress.until(done);
  }
  return late;
}

template <class Want>
void Window::wait_owed(const char* call, const char* argument, const char* what, const char* likely_cause,
                       const std::vector<int>& ranks, const std::uint64_t* words, Want want, Stuck stuck,
                       std::size_t owed) {
  // A matched wait that polls ends long before the first look (a few
  // hundred microseconds of polls): it writes and reads nothing more.
  constexpr unsigned kStuckPolls = 4096;
  unsigned polls = 0;
  auto reached = [&] {
    owed = first_owed(ranks, owed, words, want);
    if (owed == ranks.size()) return true;
    if (stuck != Stuck::none && ++polls % kStuckPolls == 0) [[unlikely]] {
      if (stuck == Stuck::fence) {
        check_owed_posts(call);
      } else {
        if (polls == kStuckPolls) announce_waiting(call, ranks);
        check_start_cycle(call, ranks);
      }
    }
    return false;
  };
  if (!wait_until(reached, flags_by_cpu_)) return;
  for (int r : ranks)
    if (std::atomic_ref<const std::uint64_t>(words[r]).load(std::memory_order_acquire) < want(r))
      fail(call, "argument '%s': window rank %d (world rank %d) did not %s within ARMCI_WIN_SYNC_TIMEOUT "
                 "(%ld s): %s?", argument, r, world(r), what, parts_.sync_timeout_seconds, likely_cause);
}

// ------------------------------------------------------------------ mismatched PSCW groups

// MPI matches the k-th start of o towards t with the k-th post of t that
// includes o, however late: a start that finds its target exposed to
// others only may be waiting, legally, for that target's next post. So a
// mismatch is named where waiting can no longer end, which a rank sees
// from its own words alone:
// * a start that waits long stores, once, into each target it still waits
//   for, its start count and its posts to that target (waiting_offset);
// * a target in a fence or ARMCI_Win_free (collective: they need that
//   origin, which cannot leave its start before this rank posts) that owes
//   a waiting origin a post fails;
// * a target that waits in its own start for that origin's post, when every
//   post the origin made arrived, fails (neither can post while in start);
// * at wait and test, a completion count above this rank's posts to the
//   origin means an access epoch no post exposed (NOCHECK without a
//   matching post, or a start whose target's group left it out): its
//   writes were not synchronised, and the target says so.
// A rank's own counts are exact, so none of these fires for a legal
// program; a mismatch that still hangs elsewhere (a target that never calls
// a window function) is left to ARMCI_WIN_SYNC_TIMEOUT.
void Window::announce_waiting(const char* call, const std::vector<int>& targets) {
  for (int t : targets) {
    const std::uint64_t count = starts_[static_cast<std::size_t>(t)];
    if (own_word(exposed_offset(t)) >= count) continue;
    const std::uint64_t announced = (count & 0xffffffffu) << 32 | (posts_[static_cast<std::size_t>(t)] & 0xffffffffu);
    parts_.sync.store64(call, word(t, waiting_offset(group_.my_rank)), announced);
  }
}

void Window::check_start_cycle(const char* call, const std::vector<int>& targets) {
  for (int t : targets) {
    const std::uint64_t exposed = own_word(exposed_offset(t));
    if (t == group_.my_rank || exposed >= starts_[static_cast<std::size_t>(t)]) continue;
    const std::uint64_t w = own_word(waiting_offset(t));
    const bool waits_for_me = (w >> 32) > (posts_[static_cast<std::size_t>(t)] & 0xffffffffu);
    const bool its_posts_arrived = (w & 0xffffffffu) <= (exposed & 0xffffffffu);
    if (w != 0 && waits_for_me && its_posts_arrived)
      fail(call, "argument 'group': window rank %d (world rank %d) waits in its ARMCI_Win_start for an exposure "
                 "epoch of this rank (window rank %d) while this rank waits for one of its: neither posted to the "
                 "other (mismatched PSCW groups)", t, world(t), group_.my_rank);
  }
}

void Window::check_owed_posts(const char* call) {
  for (int o : others_) {
    const std::uint64_t w = own_word(waiting_offset(o));
    if ((w >> 32) > (posts_[static_cast<std::size_t>(o)] & 0xffffffffu))
      fail(call, "argument 'win': window rank %d (world rank %d) waits in ARMCI_Win_start for an exposure epoch "
                 "(ARMCI_Win_post) of this rank (window rank %d), which called %s instead (mismatched PSCW "
                 "groups)", o, world(o), group_.my_rank, call);
  }
}

void Window::unexposed_completion(const char* call, int o) const {
  fail(call, "argument 'group': window rank %d (world rank %d) completed an access epoch towards this rank "
             "(window rank %d) that no ARMCI_Win_post of this rank exposed to it: its operations were not "
             "synchronised (mismatched PSCW groups, or ARMCI_WIN_MODE_NOCHECK before the matching post)",
       o, world(o), group_.my_rank);
}

void Window::refuse_start(const char* call) const {
  if (access_open_) fail(call, "argument 'win': an access epoch is open already (ARMCI_Win_complete it first)");
  fail(call, "argument 'win': a passive-target epoch (ARMCI_Win_lock) is open; unlock first");
}

void Window::start(const char* call, const std::vector<int>& targets, int assert) {
  if (access_open_ || locks_held_ > 0 || lock_all_) [[unlikely]]
    refuse_start(call);
  for (int t : targets) ++starts_[static_cast<std::size_t>(t)];
  if (!(assert & kNoCheck))
    wait_counts(call, "group", "post an exposure epoch including this rank", "mismatched PSCW groups", targets,
                own_words(exposed_offset(0)), [this](int t) { return starts_[static_cast<std::size_t>(t)]; },
                Stuck::start);
  for (int t : targets) started_[static_cast<std::size_t>(t)] = 1;
  keep_group(access_group_, targets);
  access_open_ = true;  // empty groups are legal: the epoch is open all the same
}

void Window::complete(const char* call) {
  if (!access_open_) fail(call, "argument 'win': no access epoch is open (ARMCI_Win_start was not called)");
  for (int t : access_group_) {
    close_queue(call, t);
    // Ordered after the operations: the count cannot overtake what it announces.
    order_ops_before_next(call, t);
    parts_.sync.store64(call, completed_words_[static_cast<std::size_t>(t)], ++completes_[static_cast<std::size_t>(t)]);
    started_[static_cast<std::size_t>(t)] = 0;
  }
  access_open_ = false;
}

void Window::wait(const char* call) {
  if (!posted_) fail(call, "argument 'win': no exposure epoch is open (ARMCI_Win_post was not called)");
  wait_counts(call, "group", "complete its access epoch", "mismatched PSCW groups", exposure_group_,
              own_words(completed_offset(0)), [this](int o) { return posts_[static_cast<std::size_t>(o)]; },
              Stuck::none, exposure_owed_);
  check_unexposed_completions(call);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  posted_ = false;
}

bool Window::test(const char* call) {
  if (!posted_) fail(call, "argument 'win': no exposure epoch is open (ARMCI_Win_post was not called)");
  parts_.progress.progress();
  exposure_owed_ = first_owed(exposure_group_, exposure_owed_, own_words(completed_offset(0)),
                              [this](int o) { return posts_[static_cast<std::size_t>(o)]; });
  if (exposure_owed_ != exposure_group_.size()) return false;
  check_unexposed_completions(call);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  posted_ = false;
  return true;
}

}  // namespace armci
