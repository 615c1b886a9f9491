// Windows with MPI-2 one-sided semantics (include/armci_win.h) on the core:
// the memory is an ARMCI allocation (region table), so puts, gets and accs
// go through Transfers with their protocols (puts and gets to a node
// neighbour are copies through the window's own mapping of the target, the
// copy Transfers would make); the synchronisation words live
// in a control allocation of their own that no user operation reaches.
//
// Per member, the control block holds
//   [0]                 the lock word: bit 63 the writer, the low bits the
//                       number of readers (Sync's mechanism for the job:
//                       the network word of a hybrid lock); when the whole
//                       group shares one node's memory, the writer bit
//                       alone, by CPU atomics (readers: readers_offset)
//   [8]                 a hybrid lock's CPU word (locks.cpp, "hybrid locks")
//   [exposed_offset]    one word per group rank t: how many times t posted
//                       an exposure epoch that includes this rank (t writes)
//   [completed_offset]  one word per group rank o: how many access epochs
//                       o completed towards this rank (o writes)
//   [fenced_offset]     one word per group rank o: the number of the last
//                       fence o arrived at (o writes)
//   [readers_offset]    one word per group rank o: 1 while o holds a shared
//                       lock on this rank or tries to (windows wholly on one
//                       node only: their lock word then holds the writer
//                       alone; locks.cpp, "CPU locks")
//   [waiting_offset]    one word per group rank o: o's access epoch that
//                       waits in ARMCI_Win_start for this rank's post
//                       (high half: o's start count towards this rank) and
//                       o's posts to this rank until then (low half);
//                       written only by a start that waits long
//                       (window.cpp, "Mismatched PSCW groups")
// Every word of the last three has one writer, so a store (or a put) does,
// and the counts only grow, so the reader waits for "at least".
//
// Reordering inside an epoch (ARMCI_WIN_REORDER): MPI-2 gives no order to
// the operations of one epoch, so gets start at once while puts and accs
// wait in their target's queue until the synchronisation that closes the
// epoch (unlock, flush, fence, complete), which issues them after the gets
// (gets-first), or with the small ones to a target packed into one vector
// message (combine). What MPI does order is kept: writes leave in program
// order, and in every mode (none too: a put and an acc travel different
// paths) a write that overlaps earlier ones of another kind (put against
// acc, two acc ops or types, a small combined piece against a large direct
// one, strided against contiguous) first completes them.
//
// Deferred fence (ARMCI_WIN_FENCE=deferred, the two-sided design kept for
// comparison with the immediate one): while a fence epoch is open, the
// contiguous operations (gets too) wait in their target's held list; the
// closing fence sends them to network targets as vector messages that the
// target applies (or answers), and a reduction of every member's count of
// such messages tells each target how many it must have applied before
// the barrier. Node neighbours have no messages in the layer: their held
// operations are copies the origin makes at the fence. Strided operations
// are issued at once, after the target's held ones are in place.
//
// Counted fence (ARMCI_WIN_FENCE=counted, the write-with-immediate design):
// operations are issued at once; a contiguous put to a target reached
// through the network carries a notification tagged for the target's
// window (Transfers::put_notify), and the origin counts them per target.
// Everything else (gets, accs, strided, node neighbours' copies) the
// closing fence completes at its target. Then one reduction of the counts
// tells each target how many notifications to wait for, and a barrier
// opens the next epoch.
//
// Owns: its control allocation and (allocate) its memory.
// Called by: the API (src/api/windows.cpp), after argument checks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/groups.hpp"
#include "src/core/progress.hpp"
#include "src/core/settings.hpp"
#include "src/core/strided.hpp"
#include "src/core/sync.hpp"
#include "src/core/transfers.hpp"
#include "src/windows/locks.hpp"

namespace armci {

// What a window works with: the parts of the runtime it needs.
struct WindowParts {
  const Peers& peers;
  Memory& memory;
  Progress& progress;
  Completions& completions;
  Transfers& transfers;
  Sync& sync;
  Groups& groups;
  Collectives& collectives;
  VectorMessages& vector_messages;
  long sync_timeout_seconds;            // ARMCI_WIN_SYNC_TIMEOUT (0: wait for ever)
  WinReorder reorder;                   // ARMCI_WIN_REORDER
  std::size_t combine_max;              // ARMCI_AGGREGATE_PIECE_MAX: combined writes up to here
  WinLockMigrate lock_migrate = WinLockMigrate::pinned;  // ARMCI_WIN_LOCK_MIGRATE
  unsigned lock_migrate_after = 1;
  int verbose = 0;  // ARMCI_VERBOSE: the lock counters are printed at free
  WinFence fence = WinFence::immediate;  // ARMCI_WIN_FENCE
};

enum class WinLock : std::uint8_t { none, shared, exclusive, nocheck };

class Window {
 public:
  static constexpr int kNoCheck = 1, kNoStore = 2, kNoPut = 4, kNoPrecede = 8, kNoSucceed = 16;
  static constexpr int kLockShared = 1, kLockExclusive = 2;

  // Collective over group's members. allocate: the window's memory is a
  // fresh allocation of `bytes`; otherwise `base` (NULL when bytes is 0)
  // must lie in an ARMCI_Malloc region of this rank.
  Window(const char* call, WindowParts parts, const Group& group, void* base, std::size_t bytes, int disp_unit,
         bool allocate);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Collective: no epoch may be open at this rank.
  void free(const char* call);

  const WindowLocks::Counters& lock_counters() const { return locking_->counters(); }

  void* base() const { return reinterpret_cast<void*>(targets_[static_cast<std::size_t>(group_.my_rank)].base); }
  int size() const { return group_.size(); }
  const Group& group() const { return group_; }

  // Passive target.
  void lock(const char* call, int type, int rank, int assert);
  void unlock(const char* call, int rank);
  void lock_all(const char* call, int assert);
  void unlock_all(const char* call);
  void flush(const char* call, int rank);
  void flush_all(const char* call);
  // Active target. post/start take window ranks (checked by the caller).
  void fence(const char* call, int assert);
  void post(const char* call, const std::vector<int>& origins, int assert);
  void start(const char* call, const std::vector<int>& targets, int assert);
  void complete(const char* call);
  void wait(const char* call);
  bool test(const char* call);

  // Operations: rank in the group, disp in the target's disp_units. acc:
  // nullptr for put/get.
  void contiguous(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
                  std::size_t disp);
  void strided(const char* call, Op op, const AccArgs* acc, void* local, const int* local_stride,
               const int* remote_stride, const int* count, int levels, int rank, std::size_t disp);

 private:
  struct Target {
    std::uintptr_t base = 0;
    std::uint64_t bytes = 0;
    std::int64_t disp_unit = 1;
  };
  int world(int rank) const { return group_.members[static_cast<std::size_t>(rank)]; }
  void check_epoch(const char* call, int rank) const;
  // contiguous() through Transfers: accs, network targets, reordering.
  [[gnu::noinline]] void transfer(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes,
                                  int rank, std::uintptr_t remote);
  // The target address of [disp, disp + extent) at rank, checked.
  std::uintptr_t target_address(const char* call, int rank, std::size_t disp, std::size_t extent) const;
  void finish_ops(const char* call, int rank);  // local and remote completion of this rank's ops to rank
  void finish_all_ops(const char* call);
  // Local completion, and the next network operation to rank (a lock's
  // release, a PSCW count) applied after them: its completion implies theirs.
  void order_ops_before_next(const char* call, int rank) {
    if (issued_[static_cast<std::size_t>(rank)]) order_issued_before_next(call, rank);
  }
  // Its wait, out of line: a node neighbour's copies issue nothing, and
  // the epochs that close without it keep a small frame.
  [[gnu::noinline]] void order_issued_before_next(const char* call, int rank);
  void note_issued(int rank) {
    issued_[static_cast<std::size_t>(rank)] |= kIssuedOther;
    any_issued_ = true;
  }
  // Reordering (see the top): a write held until the epoch closes.
  struct Deferred {
    Op op;
    bool has_acc;
    AccArgs acc;
    const void* src;  // the caller's buffer: MPI's rule keeps it untouched until the epoch closes
    std::size_t bytes;
    std::uintptr_t remote;
  };
  struct WriteQueue {
    std::vector<Deferred> ops;
    // Everything written to the target since its last completion (queued
    // or issued), for the overlap rule: a few spans of one kind each
    // (touching writes of a kind merge); past kMaxSpans they fold into one
    // span of mixed kind, which only makes the rule more cautious.
    struct Span {
      std::uintptr_t low, high;
      std::uint64_t kind;
      bool mixed;
    };
    std::vector<Span> spans;
  };
  static constexpr std::size_t kMaxSpans = 16;
  std::uint64_t write_kind(Op op, const AccArgs* acc, std::size_t bytes, bool strided) const;
  // A write enters the target's span; a conflict first completes what is there.
  void note_write(const char* call, int rank, std::uint64_t kind, std::uintptr_t remote, std::size_t extent);
  void defer(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
             std::uintptr_t remote);
  // Issues the target's queue in program order (its span stays until completion).
  void issue_queued(const char* call, int rank);
  // Closing synchronisation: the queue leaves, and what follows completes it.
  void close_queue(const char* call, int rank) {
    if (!queues_[static_cast<std::size_t>(rank)].ops.empty()) issue_queued(call, rank);
    forget_span(rank);
  }
  void close_all_queues(const char* call) {
    for (int r = 0; r < size(); ++r) close_queue(call, r);
  }
  void forget_span(int rank) { queues_[static_cast<std::size_t>(rank)].spans.clear(); }

  // Deferred fence (see the top).
  bool hold(const char* call, Op op, const AccArgs* acc, const void* local, std::size_t bytes, int rank,
            std::uintptr_t remote);
  void send_held(const char* call, int rank);
  void send_all_held(const char* call);
  void fence_deferred(const char* call, int assert);
  void fence_immediate(const char* call, int assert);
  // The fence kind, chosen when the window is made (ARMCI_WIN_FENCE).
  using FenceKind = void (Window::*)(const char* call, int assert);
  static FenceKind fence_kind(WinFence fence);
  FenceKind close_fence_ = &Window::fence_immediate;

  // Counted fence (see the top).
  void put_notified(const char* call, const void* local, std::size_t bytes, int rank, std::uintptr_t remote);
  void fence_counted(const char* call, int assert);
  // Sums every member's per-target counts (counts_) into every member's counts_.
  void sum_counts_over_members();
  // The deferred and counted fences' collective steps wait under
  // ARMCI_WIN_SYNC_TIMEOUT too: a member that never arrives ends them with
  // fence_step_expired's error instead of a hang. Lives as long as the step.
  struct FenceStep {
    FenceStep(const Window* w, const char* c, const char* s)
        : window(w), call(c), step(s), bound(w->parts_.sync_timeout_seconds, fence_step_expired, this) {}
    const Window* window;
    const char* call;
    const char* step;
    const WaitDeadline bound;
  };
  static void fence_step_expired(const void* context);

  std::uint64_t own_word(std::size_t offset) const;
  Sync::Word word(int rank, std::size_t offset) const;
  std::size_t exposed_offset(int from) const { return 64 + static_cast<std::size_t>(from) * 8; }
  std::size_t completed_offset(int from) const {
    return 64 + static_cast<std::size_t>(group_.size() + from) * 8;
  }
  std::size_t fenced_offset(int from) const { return 64 + static_cast<std::size_t>(2 * group_.size() + from) * 8; }
  std::size_t readers_offset(int from) const { return 64 + static_cast<std::size_t>(3 * group_.size() + from) * 8; }
  std::size_t waiting_offset(int from) const { return 64 + static_cast<std::size_t>(4 * group_.size() + from) * 8; }
  // Waits until every word reaches its count, want(rank); after the
  // timeout, fails naming the first rank still missing (mismatched PSCW
  // groups, a member that skips a fence).
  // words: this rank's array of one kind (exposed, completed, fenced), by group rank.
  // owed: the index in ranks of the first rank that may still be missing
  // (those before it were seen at their counts, which only grow).
  // stuck: what a long wait also looks for (window.cpp, "Mismatched PSCW
  // groups"): a start announces itself to the targets it waits for and
  // looks for a target that waits for it in turn; a fence for a member
  // that waits in ARMCI_Win_start for a post of this rank.
  // The matched path (every count there at the first look) is the inline
  // scan alone; the polls and their diagnostics live in wait_owed.
  enum class Stuck : std::uint8_t { none, start, fence };
  template <class Want>
  void wait_counts(const char* call, const char* argument, const char* what, const char* likely_cause,
                   const std::vector<int>& ranks, const std::uint64_t* words, Want want, Stuck stuck = Stuck::none,
                   std::size_t owed = 0) {
    owed = first_owed(ranks, owed, words, want);
    if (owed == ranks.size()) [[likely]]
      return;
    wait_owed(call, argument, what, likely_cause, ranks, words, want, stuck, owed);
  }
  template <class Want>
  [[gnu::noinline]] void wait_owed(const char* call, const char* argument, const char* what, const char* likely_cause,
                                   const std::vector<int>& ranks, const std::uint64_t* words, Want want, Stuck stuck,
                                   std::size_t owed);
  // Mismatched PSCW groups, found without the timeout (each fails naming
  // the rank). The start's counts are starts_, by target.
  void announce_waiting(const char* call, const std::vector<int>& targets);
  void check_start_cycle(const char* call, const std::vector<int>& targets);
  void check_owed_posts(const char* call);
  void check_unexposed_completions(const char* call) {
    // Every origin's word, not only the group's: an origin outside it is
    // what this looks for. The rank's own contiguous words, a load each.
    const std::uint64_t* done = own_words(completed_offset(0));
    for (std::size_t o = 0; o < posts_.size(); ++o)
      if (std::atomic_ref<const std::uint64_t>(done[o]).load(std::memory_order_acquire) > posts_[o]) [[unlikely]]
        unexposed_completion(call, static_cast<int>(o));
  }
  [[noreturn, gnu::cold]] void unexposed_completion(const char* call, int origin) const;
  // Polls until reached() (loads only when by_cpu: every word it reads is
  // stored by CPUs); true when ARMCI_WIN_SYNC_TIMEOUT passed first.
  template <class Reached>
  bool wait_until(Reached reached, bool by_cpu);
  // The index in ranks, from `from` on, of the first rank whose word is
  // below want(rank); ranks.size() when there is none.
  template <class Want>
  static std::size_t first_owed(const std::vector<int>& ranks, std::size_t from, const std::uint64_t* words,
                                Want want) {
    for (; from < ranks.size(); ++from) {
      const int r = ranks[from];
      if (std::atomic_ref<const std::uint64_t>(words[r]).load(std::memory_order_acquire) < want(r)) break;
    }
    return from;
  }
  // A PSCW epoch's group, kept from the last epoch: programs pass the same
  // group epoch after epoch, and the comparison costs less than the copy.
  static void keep_group(std::vector<int>& kept, const std::vector<int>& given) {
    if (kept != given) kept = given;
  }
  [[noreturn, gnu::cold]] void refuse_start(const char* call) const;
  const std::uint64_t* own_words(std::size_t first) const {
    return reinterpret_cast<const std::uint64_t*>(own_block_ + first);
  }

  WindowParts parts_;
  Group group_;  // a copy: the window outlives the caller's group handle
  std::vector<Target> targets_;
  // Per target: its window memory as the region table maps it (a node
  // neighbour or self; windows from ARMCI_Win_allocate only), local nullptr
  // otherwise. Puts and gets there are put/shm/copy and get/shm/copy, made
  // without the table's lookup, done when they return.
  std::vector<Region> node_regions_;
  std::unique_ptr<Allocation> control_;
  std::unique_ptr<WindowLocks> locking_;  // the kind chosen at creation (locks.hpp)
  void* allocated_ = nullptr;  // allocate: this rank's part, released at free
  bool allocated_any_ = false;
  bool freed_ = false;
  bool cpu_locks_ = false;  // every member on this node: lock words by CPU atomics

  // Epochs of this rank as an origin.
  std::vector<WinLock> locks_;  // per target
  // Per target: operations issued since they were last completed (an epoch
  // that issued none closes without a network flush), by kind: notified
  // puts are complete at the target once the counted fence has counted
  // them, so that fence waits only for their local completion.
  static constexpr std::uint8_t kIssuedOther = 1, kIssuedNotified = 2;
  std::vector<std::uint8_t> issued_;
  bool any_issued_ = false;
  std::vector<WriteQueue> queues_;  // per target (reordering)
  VectorBatches batches_;           // combine: the vector messages being filled
  int locks_held_ = 0;
  bool lock_all_ = false;
  bool lock_all_nocheck_ = false;
  bool fence_open_ = false;
  // Deferred fence: a fence epoch is open, its operations are held.
  bool hold_ops_ = false;
  std::vector<std::vector<Deferred>> held_;  // per target
  VectorBatches held_batches_, held_get_batches_;
  // The acks of held writes sent (waited for only where order needs them
  // and at free) and the answers to held gets (waited for at the fence).
  platform::Completion held_writes_, held_gets_;
  // Counted fence: a fence epoch is open, puts to network targets notify.
  bool notify_puts_ = false;
  // Per target: the notified puts this rank sent it since the window was
  // made (counts only grow, so an epoch closed under NOPRECEDE needs no
  // reduction of its own), and the notification tag of its window.
  std::vector<std::uint64_t> notified_sent_;
  std::vector<std::uint32_t> tags_;
  // A fence under NOPRECEDE completes nothing, so it does not wait for the
  // members: an operation after it, in any epoch, first waits for its
  // target's arrival (its flag), and the next fence for every member's.
  bool arrivals_pending_ = false;
  void await_arrival(const char* call, int rank);
  std::uint64_t fences_ = 0;  // fences this rank arrived at (the flags it writes)
  std::vector<std::uint8_t> started_;  // per target: in the open PSCW access epoch
  bool access_open_ = false;           // between ARMCI_Win_start and _complete
  std::vector<int> access_group_;      // the last start's targets (kept: see keep_group)
  std::vector<std::uint64_t> starts_;     // per target: access epochs started towards it
  std::vector<std::uint64_t> completes_;  // per target: access epochs completed towards it
  // As a target.
  bool posted_ = false;
  std::vector<int> exposure_group_;     // the last post's origins (kept: see keep_group)
  // Per origin: exposures posted to it. The open exposure epoch waits for
  // each member's completed word to reach its count here.
  std::vector<std::uint64_t> posts_;
  // The index in exposure_group_ of the first origin whose completion may
  // still be missing: wait and test poll from there, not the whole group.
  std::size_t exposure_owed_ = 0;

  // Fence and PSCW epochs cost about one cache-line transfer over shared
  // memory, so what they would look up or allocate on every call is kept:
  // this rank's control block, the members but itself, and this rank's
  // flag words at every member.
  std::byte* own_block_ = nullptr;
  bool flags_by_cpu_ = false;  // every member stores its flags here with CPU stores: poll them on their own
  std::vector<int> others_;
  std::vector<Sync::Word> fenced_words_, exposed_words_, completed_words_;  // per member: this rank's word there
  std::vector<std::uint64_t> counts_;  // the deferred and counted fences' per-target counts
  std::vector<int> one_member_;        // await_arrival's one rank, kept so it allocates nothing
};

}  // namespace armci
