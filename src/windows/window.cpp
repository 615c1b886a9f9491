// Windows: see window.hpp for the layout of the control block.
//
// Passive target (the lock kinds: locks.hpp): operations inside the
// epoch start at once (nonblocking, the implicit completion of their
// target); unlock first orders them before the release of the lock word,
// so the next holder sees everything written under the lock.
//
// Active target: the fences in fence.cpp, PSCW in pscw.cpp.
#include "src/windows/window.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/progress.hpp"
#include "src/core/protocols/choices.hpp"
#include "src/windows/waits.hpp"

namespace armci {

namespace {

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
  close_fence_ = fence_kind(parts_.fence);
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
  locking_ = make_window_locks(LockSetup{parts_.peers, parts_.sync, parts_.progress, *control_, group_,
                                         readers_offset(0), parts_.lock_migrate, parts_.lock_migrate_after},
                               cpu_locks_);
  if (locking_->kind() == protocols::WinLockKind::hybrid) members.barrier();  // every C parked before a lock
  node_regions_.assign(un, Region{});
  for (int r = 0; r < n; ++r) {
    // Only memory the window owns: a window made on the application's
    // ARMCI_Malloc memory keeps Transfers' lookup, which refuses an access
    // after that memory was freed instead of writing into a stale mapping.
    const Target& t = targets_[static_cast<std::size_t>(r)];
    Region& region = node_regions_[static_cast<std::size_t>(r)];
    region.base = t.base;
    region.size = t.bytes;
    if (allocate && t.bytes > 0)
      region.local =
          parts_.memory.local_mapping(call, "base", world(r), reinterpret_cast<const void*>(t.base), t.bytes);
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
  locking_.reset();  // before its words go
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
  locking_->stop();
  const WindowLocks::Counters& counters = locking_->counters();
  const bool hybrid = locking_->kind() == protocols::WinLockKind::hybrid;
  if (parts_.verbose > 0 && (hybrid || counters.intra_node + counters.network > 0))
    std::fprintf(stderr,
                 "armci: info: window locks at rank %d: %llu intra-node, %llu network, migrations %llu to cpu, "
                 "%llu to network (%s, ARMCI_WIN_LOCK_MIGRATE %s)\n",
                 parts_.peers.rank(), static_cast<unsigned long long>(counters.intra_node),
                 static_cast<unsigned long long>(counters.network), static_cast<unsigned long long>(counters.to_cpu),
                 static_cast<unsigned long long>(counters.to_network), locking_->name(),
                 hybrid ? "on" : cpu_locks_ ? "unused: one node" : "pinned");
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
  const Region& region = node_regions_[t];
  if (op != Op::acc && region.local != nullptr && (op == Op::get || parts_.reorder == WinReorder::none)) [[likely]] {
    // A node neighbour (or self). Done when it returns, so it needs no
    // completion; only a write that overlaps an unfinished one of another
    // kind waits.
    auto* remote_ptr = reinterpret_cast<void*>(remote);
    if (op == Op::get) {
      copy_same_node(op, region, remote_ptr, const_cast<void*>(local), bytes);
      return;
    }
    if (issued_[t]) note_write(call, rank, write_kind(op, acc, bytes, false), remote, bytes);
    copy_same_node(op, region, local, remote_ptr, bytes);
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
      strided ? 2 : static_cast<std::uint64_t>(protocols::win_write_path(parts_.reorder, bytes, parts_.combine_max));
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
  for (const Deferred& d : q.ops)
    small += protocols::win_write_path(parts_.reorder, d.bytes, parts_.combine_max) == protocols::WinWritePath::combined;
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
  if (!(assert & kNoCheck)) locking_->acquire(call, rank, exclusive);
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
    locking_->release(call, rank, held == WinLock::exclusive);
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
    for (int r = 0; r < size(); ++r) locking_->acquire(call, r, false);
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
      locking_->release(call, r, false);
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

}  // namespace armci
