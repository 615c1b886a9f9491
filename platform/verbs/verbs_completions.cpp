// The verbs layer: completions, progress and the wakeup descriptor.
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

// --------------------------------------------------------------------------
// completions and progress

void VerbsNetwork::repost_srq(std::uint64_t index) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(recv_slab_.at(index)),
              static_cast<std::uint32_t>(recv_slab_.slot), recv_slab_.lkey()};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = index;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (ibv_post_srq_recv(srq_, &wr, &bad) != 0) fail_errno("ibv_post_srq_recv");
}

void VerbsNetwork::repost_ud(std::uint64_t index) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(ud_recv_slab_.at(index)),
              static_cast<std::uint32_t>(kUdSlot), ud_recv_slab_.lkey()};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = kUdTag | index;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (ibv_post_recv(ud_qp_, &wr, &bad) != 0) fail_errno("ibv_post_recv (UD)");
}

void VerbsNetwork::on_send_completion(const ibv_wc& wc) {
  if (wc.wr_id & kUdTag) {
    ++ud_done_;
    return;
  }
  --cq_outstanding_;
  const auto rank = static_cast<std::size_t>(wc.wr_id >> kSeqBits);
  if (rank >= peers_.size()) return;
  Peer& p = peers_[rank];
  // After a failure the ring was emptied; these are its flush errors.
  if (p.state == State::failed) return;
  if ((wc.wr_id & kSeqMask) != (p.done & kSeqMask)) return;  // cannot happen with RC ordering
  const std::uintptr_t e = p.ring[p.done % sq_depth_];
  ++p.done;
  if (ring_read(e)) --p.rd_inflight;
  Op* op = ring_op(e);
  if (wc.status != IBV_WC_SUCCESS) [[unlikely]] {
    const int code = make_code(p.rank, ring_kind(e), wc.status, false);
    if (op != nullptr) {
      if (op->error == 0) op->error = code;
      if (--op->wrs_left == 0 && op->all_posted) finish(*op);
    }
    fail_peer(p, code);
    return;
  }
  if (op != nullptr && --op->wrs_left == 0 && op->all_posted) finish(*op);
  while (p.flushes != nullptr && p.flushes->flush_target <= p.done) {
    Op* f = p.flushes;
    p.flushes = f->next;
    if (p.flushes == nullptr) p.flushes_tail = nullptr;
    finish(*f);
  }
  if (p.head != nullptr) mark_blocked(p);
}

void VerbsNetwork::on_recv_completion(const ibv_wc& wc) {
  if (wc.wr_id & kUdTag) {
    const std::uint64_t index = wc.wr_id & ~kUdTag;
    if (wc.status == IBV_WC_SUCCESS && wc.byte_len >= kGrhBytes + sizeof(Handshake)) {
      Handshake m;
      std::memcpy(&m, ud_recv_slab_.at(index) + kGrhBytes, sizeof m);
      repost_ud(index);
      on_handshake(m);
    } else {
      repost_ud(index);
    }
    return;
  }
  const std::uint64_t index = wc.wr_id;
  if (wc.status == IBV_WC_SUCCESS) {
    if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
      // The data of the write is in place before this completion is seen.
      notifications_.add(be32toh(wc.imm_data));
    } else if (wc.opcode == IBV_WC_RECV) {
      deliver(recv_slab_.at(index), wc.byte_len);
    }
  }
  repost_srq(index);
}

void VerbsNetwork::drain_channel() noexcept {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) {
    if (cq == scq_) ++scq_events_;
    else ++rcq_events_;
  }
  // Acking takes a lock in libibverbs; do it in batches.
  if (scq_events_ >= 64) {
    ibv_ack_cq_events(scq_, scq_events_);
    scq_events_ = 0;
  }
  if (rcq_events_ >= 64) {
    ibv_ack_cq_events(rcq_, rcq_events_);
    rcq_events_ = 0;
  }
}

int VerbsNetwork::progress() {
  // A handler that calls progress() again gets nothing; the outer call
  // continues where it was.
  if (in_progress_) return 0;
  in_progress_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{in_progress_};

  int events = 0;
  for (int i = 0; i < stashed_recv_; ++i) on_recv_completion(stash_recv_[i]);
  for (int i = 0; i < stashed_send_; ++i) on_send_completion(stash_send_[i]);
  events += stashed_recv_ + stashed_send_;
  stashed_recv_ = stashed_send_ = 0;

  // A round that found fewer entries than it asked for emptied both CQs:
  // polling again at once costs two more provider calls (each a lock on
  // rxe, paid at an emulated CPU's speed on every blocking wait) for what
  // can only have arrived since, which the next call picks up.
  constexpr int kBatch = 32;
  ibv_wc wc[kBatch];
  for (int round = 0; round < 8; ++round) {
    int nr = ibv_poll_cq(rcq_, kBatch, wc);
    for (int i = 0; i < nr; ++i) on_recv_completion(wc[i]);
    int ns = ibv_poll_cq(scq_, kBatch, wc);
    for (int i = 0; i < ns; ++i) on_send_completion(wc[i]);
    events += std::max(nr, 0) + std::max(ns, 0);
    if (nr < kBatch && ns < kBatch) break;
  }

  if (!connecting_.empty()) handshake_timers();

  if (!blocked_.empty()) {
    blocked_scratch_.clear();
    std::swap(blocked_, blocked_scratch_);
    for (int r : blocked_scratch_) {
      Peer& p = peers_[static_cast<std::size_t>(r)];
      p.listed_blocked = false;
      drain(p);
    }
  }

  if (handler_error_) [[unlikely]] {
    std::exception_ptr e = std::exchange(handler_error_, nullptr);
    std::rethrow_exception(e);
  }
  return events;
}

// Send completions that only finish this process's own operations need not
// wake anyone: the thread that started them polls when it waits. They do
// matter while operations wait in a peer's FIFO for the room those
// completions free, and while a handshake runs.
bool VerbsNetwork::own_work_waits() const {
  if (!blocked_.empty() || !connecting_.empty()) return true;
  for (int r : active_)
    if (peers_[static_cast<std::size_t>(r)].head != nullptr) return true;
  return false;
}

bool VerbsNetwork::arm(bool send_completions) {
  drain_channel();
  std::uint64_t expirations;
  while (read(timer_fd_, &expirations, sizeof expirations) > 0) {
  }
  if (stashed_send_ || stashed_recv_ || handler_error_) return false;
  // Handshakes advance on timers: the next retransmission or deadline arms
  // the timer, so a caller asleep on wakeup_fd() still drives them.
  itimerspec when{};
  if (!connecting_.empty()) {
    Clock::time_point next = Clock::time_point::max();
    for (int r : connecting_) {
      const Peer& p = peers_[static_cast<std::size_t>(r)];
      if (p.state == State::req_sent || p.state == State::rtr_wait) {
        next = std::min({next, p.next_retry, p.deadline});
      }
    }
    const auto now = Clock::now();
    if (next <= now) return false;
    if (next != Clock::time_point::max()) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(next - now).count();
      when.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
      when.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
    }
  }
  // A zero it_value disarms a timer left from an earlier call.
  if (timerfd_settime(timer_fd_, 0, &when, nullptr) != 0) fail_errno("timerfd_settime");
  if ((send_completions && ibv_req_notify_cq(scq_, 0)) || ibv_req_notify_cq(rcq_, 0))
    fail_errno("ibv_req_notify_cq");
  // Whatever completed before the request was armed raises no event: look.
  stashed_recv_ = std::max(0, ibv_poll_cq(rcq_, static_cast<int>(stash_recv_.size()),
                                          stash_recv_.data()));
  stashed_send_ = std::max(0, ibv_poll_cq(scq_, static_cast<int>(stash_send_.size()),
                                          stash_send_.data()));
  return stashed_recv_ == 0 && stashed_send_ == 0;
}

}  // namespace armci::platform::verbs_detail
