// A window's generalized active target (ARMCI_Win_post, _start, _complete,
// _wait, _test): post stores a count into each origin's `exposed` word,
// start waits for the counts of its targets, complete finishes its
// operations and stores a count into each target's `completed` word, wait
// waits for those of its origins. Mismatched groups fail naming the rank.
#include <atomic>
#include <chrono>
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/windows/waits.hpp"
#include "src/windows/window.hpp"

namespace armci {

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
