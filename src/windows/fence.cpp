// A window's fences (window.hpp describes the three kinds): the immediate
// fence of arrival flags, the deferred fence that holds the epoch's
// contiguous operations for vector messages, the counted fence of notified
// puts. The window picks one when it is made (ARMCI_WIN_FENCE).
#include <atomic>
#include <chrono>
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/windows/waits.hpp"
#include "src/windows/window.hpp"

namespace armci {

// ------------------------------------------------------------------ the fence kinds

void Window::fence(const char* call, int assert) {
  if (locks_held_ > 0 || lock_all_)
    fail(call, "argument 'win': a passive-target epoch (ARMCI_Win_lock) is open; unlock first");
  if (access_open_ || posted_)
    fail(call, "argument 'win': a PSCW epoch (ARMCI_Win_start or _post) is open; close it first");
  (this->*close_fence_)(call, assert);
}

Window::FenceKind Window::fence_kind(WinFence fence) {
  switch (fence) {
    case WinFence::deferred: return &Window::fence_deferred;
    case WinFence::counted: return &Window::fence_counted;
    default: return &Window::fence_immediate;
  }
}

// Arrival flags instead of completion + barrier: each member writes the
// fence's number into its own word at every other member, ordered after
// its operations to that member, and leaves once every member's word
// reached it. A member's flag thus says both "it has arrived" and "its
// operations to me are in place", so the fence costs one one-way latency
// (the flags travel at once) and no flush round trip.
void Window::fence_immediate(const char* call, int assert) {
  // NOPRECEDE and NOSUCCEED together: nothing before and nothing after, so
  // no other rank can be affected by when this one passes.
  // Even under NOPRECEDE: a queued write is never dropped.
  close_all_queues(call);
  const bool nothing_around = (assert & kNoPrecede) && (assert & kNoSucceed);
  if (nothing_around) {
    fence_open_ = false;
    return;
  }
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

}  // namespace armci
