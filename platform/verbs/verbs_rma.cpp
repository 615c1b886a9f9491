// The verbs layer: operation records, issuing RDMA writes, reads and
// atomics (split by message size and SGE limits), and flush.
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

// --------------------------------------------------------------------------
// operation records

Op& VerbsNetwork::new_op(OpKind kind, int peer, Completion& c) {
  if (free_ops_ == nullptr) [[unlikely]] {
    auto chunk = std::make_unique<Op[]>(kOpChunk);
    for (std::size_t i = 0; i < kOpChunk; ++i) {
      chunk[i].segs.reserve(4);
      chunk[i].next = free_ops_;
      free_ops_ = &chunk[i];
    }
    op_chunks_.push_back(std::move(chunk));
  }
  Op& op = *free_ops_;
  free_ops_ = op.next;
  op.next = nullptr;
  op.kind = kind;
  op.peer = peer;
  op.completion = &c;
  return op;
}

void VerbsNetwork::release_op(Op& op) noexcept {
  op.completion = nullptr;
  op.kind = OpKind::none;
  op.mode = Mode::unset;
  op.fence = op.all_posted = op.completed_early = false;
  op.error = 0;
  op.wrs_left = 0;
  op.segs.clear();
  op.cur_seg = op.cur_offset = 0;
  op.bounce = op.atomic = op.send_slot = -1;
  op.result = nullptr;
  op.message.clear();
  op.message_length = 0;
  op.temp_mrs.clear();
  op.leases.clear();
  op.next = free_ops_;
  free_ops_ = &op;
}

// Releases what the operation held and settles its Completion. Data for gets
// and atomics that went through internal buffers is copied out first.
void VerbsNetwork::finish(Op& op) noexcept {
  if (op.error == 0) {
    if (op.kind == OpKind::get && op.mode == Mode::bounce) {
      const std::byte* from = bounce_slab_.at(static_cast<std::size_t>(op.bounce));
      for (const Seg& s : op.segs) {
        if (s.length != 0) std::memcpy(s.address, from, s.length);
        from += s.length;
      }
    } else if ((op.kind == OpKind::fetch_add || op.kind == OpKind::compare_swap) &&
               op.atomic >= 0) {
      std::memcpy(op.result, atomic_slab_.at(static_cast<std::size_t>(op.atomic)), 8);
    }
  }
  if (op.bounce >= 0) bounce_free_.push_back(op.bounce);
  if (op.atomic >= 0) atomic_free_.push_back(op.atomic);
  if (op.send_slot >= 0) send_free_.push_back(op.send_slot);
  for (ibv_mr* mr : op.temp_mrs) ibv_dereg_mr(mr);
  for (const auto& lease : op.leases) reg_cache_->release(lease);
  if (!op.completed_early && op.completion != nullptr) complete(*op.completion, op.error);
  release_op(op);
}

// --------------------------------------------------------------------------
// issuing

void VerbsNetwork::mark_blocked(Peer& p) {
  if (p.listed_blocked) return;
  p.listed_blocked = true;
  blocked_.push_back(p.rank);
}

void VerbsNetwork::enqueue(Peer& p, Op& op) {
  op.next = nullptr;
  if (p.tail != nullptr) p.tail->next = &op;
  else p.head = &op;
  p.tail = &op;
  ++p.queued;
  if (p.state == State::idle) start_connect(p);
  if (p.state == State::ready) drain(p);
}

void VerbsNetwork::drain(Peer& p) {
  while (Op* op = p.head) {
    if (p.state != State::ready) return;
    Op* next = op->next;  // a flush reuses `next` for its waiter list
    Issue r = issue(p, *op);
    if (r == Issue::blocked) {
      mark_blocked(p);
      return;
    }
    // fail_peer (from a failed post) has emptied the FIFO and finished op.
    if (p.head != op) continue;
    p.head = next;
    if (p.head == nullptr) p.tail = nullptr;
    --p.queued;
    if (r == Issue::done) finish(*op);
  }
}

// Posts one signalled work request. An order() fence rides on the first
// request of the next operation only: later requests of the same operation
// follow it in the queue anyway.
int VerbsNetwork::post(Peer& p, ibv_send_wr& wr, Op* op, OpKind kind, bool read) {
  bool& fence = op != nullptr ? op->fence : p.fence_next;
  wr.wr_id = static_cast<std::uint64_t>(p.rank) << kSeqBits | (p.posted & kSeqMask);
  wr.send_flags |= IBV_SEND_SIGNALED | (fence ? IBV_SEND_FENCE : 0);
  wr.next = nullptr;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(p.qp, &wr, &bad);
  if (rc != 0) return rc;
  fence = false;
  p.ring[p.posted % sq_depth_] = ring_entry(op, kind, read);
  ++p.posted;
  ++cq_outstanding_;
  if (read) ++p.rd_inflight;
  if (op != nullptr) ++op->wrs_left;
  return 0;
}

// Decides, once per operation, how local memory is presented to the device.
VerbsNetwork::Issue VerbsNetwork::start_transfer(Op& op) {
  const bool is_get = op.kind == OpKind::get;
  std::size_t nonempty = 0;
  bool all_registered = true;
  for (Seg& s : op.segs) {
    if (s.length == 0) continue;
    ++nonempty;
    if (const Registration* r = find_registration(s.address, s.length)) {
      s.lkey = r->mr->lkey;
    } else {
      all_registered = false;
    }
  }
  if (!is_get && op.total <= max_inline_ && nonempty <= max_send_sge_) {
    op.mode = Mode::inline_data;
  } else if (all_registered) {
    op.mode = Mode::direct;
  } else if (op.total <= cfg_.bounce_size) {
    if (bounce_free_.empty()) return Issue::blocked;
    op.bounce = bounce_free_.back();
    bounce_free_.pop_back();
    std::byte* slot = bounce_slab_.at(static_cast<std::size_t>(op.bounce));
    if (!is_get) {
      std::byte* to = slot;
      for (const Seg& s : op.segs) {
        if (s.length != 0) std::memcpy(to, s.address, s.length);
        to += s.length;
      }
    }
    op.bounce_seg = Seg{slot, op.total, bounce_slab_.lkey()};
    op.mode = Mode::bounce;
  } else {
    // Large and unregistered: through the registration cache, whose memory
    // hooks retire an entry as soon as its memory is freed or unmapped; with
    // the cache off (ARMCI_VERBS_REG_CACHE=0), pinned for this operation only.
    const int access = is_get ? IBV_ACCESS_LOCAL_WRITE : 0;
    for (Seg& s : op.segs) {
      if (s.length == 0 || find_registration(s.address, s.length) != nullptr) continue;
      if (reg_cache_) {
        if (auto lease = reg_cache_->acquire(s.address, s.length)) {
          op.leases.push_back(lease);
          s.lkey = static_cast<ibv_mr*>(lease.registration)->lkey;
          continue;
        }
      }
      ibv_mr* mr = ibv_reg_mr(pd_, s.address, s.length, access);
      if (mr == nullptr) {
        op.error = make_code(op.peer, op.kind, kRegisterFailed, false);
        return Issue::done;
      }
      op.temp_mrs.push_back(mr);
      s.lkey = mr->lkey;
    }
    op.mode = Mode::direct;
  }
  op.cur_seg = 0;
  op.cur_offset = 0;
  op.cur_remote = op.remote;
  return Issue::issued;
}

// Posts the work requests of a put/get, as many as resources allow; the
// cursor in `op` remembers where to go on.
VerbsNetwork::Issue VerbsNetwork::post_segments(Peer& p, Op& op) {
  const bool read = op.kind == OpKind::get;
  const bool notify = op.kind == OpKind::put_notify;
  std::span<const Seg> segs = op.mode == Mode::bounce ? std::span<const Seg>(&op.bounce_seg, 1)
                                                      : std::span<const Seg>(op.segs);
  const std::uint32_t sge_limit =
      op.mode == Mode::inline_data ? max_send_sge_ : (read ? max_read_sge_ : max_send_sge_);
  const std::size_t msg_limit = op.mode == Mode::inline_data ? op.total : max_msg_;
  auto skip_empty = [&](std::size_t i) {
    while (i < segs.size() && segs[i].length == 0) ++i;
    return i;
  };
  op.cur_seg = skip_empty(op.cur_seg);
  do {
    if (!room(p, read)) return Issue::blocked;
    ibv_sge sge[kMaxSge];
    int n = 0;
    std::size_t bytes = 0;
    std::size_t i = op.cur_seg, off = op.cur_offset;
    while (i < segs.size() && n < static_cast<int>(sge_limit) && bytes < msg_limit) {
      const Seg& s = segs[i];
      const std::size_t take = std::min(s.length - off, msg_limit - bytes);
      sge[n++] = ibv_sge{reinterpret_cast<std::uintptr_t>(s.address + off),
                         static_cast<std::uint32_t>(take), s.lkey};
      bytes += take;
      off += take;
      if (off == s.length) {
        i = skip_empty(i + 1);
        off = 0;
      }
    }
    const bool last = i >= segs.size();
    ibv_send_wr wr{};
    wr.sg_list = n ? sge : nullptr;
    wr.num_sge = n;
    wr.opcode = read ? IBV_WR_RDMA_READ
                     : (notify && last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE);
    if (notify && last) wr.imm_data = htobe32(op.imm);
    if (op.mode == Mode::inline_data) wr.send_flags = IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = op.cur_remote;
    wr.wr.rdma.rkey = op.rkey;
    if (int rc = post(p, wr, &op, op.kind, read); rc != 0) {
      if (rc == ENOMEM) return Issue::blocked;  // provider-side queue full
      // fail_peer finishes op: its posted requests leave the ring, and it is
      // still at the head of the FIFO.
      op.error = make_code(p.rank, op.kind, kPostFailed, false);
      fail_peer(p, op.error);
      return Issue::issued;
    }
    op.cur_seg = i;
    op.cur_offset = off;
    op.cur_remote += bytes;
  } while (op.cur_seg < segs.size());
  op.all_posted = true;
  if (op.mode == Mode::inline_data || (op.mode == Mode::bounce && !read)) {
    // The data was copied (into the request or a bounce buffer): the source
    // is free, which is all a put's completion promises. A later failure
    // shows in flush() and in every later operation to the peer.
    complete(*op.completion, 0);
    op.completed_early = true;
  }
  return Issue::issued;
}

// Posts an atomic's one work request into a result slot (taken here unless
// an earlier attempt took it; the caller checked that one is free).
int VerbsNetwork::post_atomic(Peer& p, Op& op) {
  if (op.atomic < 0) {
    op.atomic = atomic_free_.back();
    atomic_free_.pop_back();
  }
  std::byte* slot = atomic_slab_.at(static_cast<std::size_t>(op.atomic));
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot), 8, atomic_slab_.lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op.kind == OpKind::fetch_add ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.remote_addr = op.remote;
  wr.wr.atomic.rkey = op.rkey;
  wr.wr.atomic.compare_add = op.kind == OpKind::fetch_add ? op.operand : op.compare;
  wr.wr.atomic.swap = op.operand;
  const int rc = post(p, wr, &op, op.kind, true);
  if (rc == 0) op.all_posted = true;
  return rc;
}

VerbsNetwork::Issue VerbsNetwork::issue(Peer& p, Op& op) {
  switch (op.kind) {
    case OpKind::put:
    case OpKind::put_notify:
    case OpKind::get: {
      if (op.mode == Mode::unset) {
        Issue r = start_transfer(op);
        if (r != Issue::issued) return r;
      }
      return post_segments(p, op);
    }
    case OpKind::fetch_add:
    case OpKind::compare_swap: {
      if (!room(p, true) || (op.atomic < 0 && atomic_free_.empty())) return Issue::blocked;
      if (int rc = post_atomic(p, op); rc != 0) {
        if (rc == ENOMEM) return Issue::blocked;
        op.error = make_code(p.rank, op.kind, kPostFailed, false);
        fail_peer(p, op.error);
      }
      return Issue::issued;
    }
    case OpKind::send: {
      if (!room(p, false)) return Issue::blocked;
      const bool as_inline = op.message_length <= max_inline_;
      if (op.send_slot < 0 && !as_inline) {
        if (send_free_.empty()) return Issue::blocked;
        op.send_slot = send_free_.back();
        send_free_.pop_back();
        std::memcpy(send_slab_.at(static_cast<std::size_t>(op.send_slot)), op.message.data(),
                    op.message_length);
      }
      const std::byte* data = op.send_slot >= 0
                                  ? send_slab_.at(static_cast<std::size_t>(op.send_slot))
                                  : op.message.data();
      ibv_sge sge{reinterpret_cast<std::uintptr_t>(data),
                  static_cast<std::uint32_t>(op.message_length), send_slab_.lkey()};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      if (as_inline) wr.send_flags = IBV_SEND_INLINE;
      if (int rc = post(p, wr, &op, op.kind, false); rc != 0) {
        if (rc == ENOMEM) return Issue::blocked;
        op.error = make_code(p.rank, op.kind, kPostFailed, false);
        fail_peer(p, op.error);
        return Issue::issued;
      }
      op.all_posted = true;
      if (as_inline) {
        complete(*op.completion, 0);
        op.completed_early = true;
      }
      return Issue::issued;
    }
    case OpKind::flush: {
      if (p.done == p.posted) return Issue::done;
      op.flush_target = p.posted;
      op.next = nullptr;
      if (p.flushes_tail != nullptr) p.flushes_tail->next = &op;
      else p.flushes = &op;
      p.flushes_tail = &op;
      return Issue::issued;
    }
    default:
      return Issue::done;
  }
}

void VerbsNetwork::transfer(OpKind kind, int peer, std::span<const LocalSegment> local,
                            std::uint64_t remote_address, RemoteKey key, std::uint32_t imm,
                            Completion& completion) {
  Peer& p = peer_at(peer);
  if (!key) throw std::invalid_argument("verbs network: null remote key");
  const std::uint32_t rkey = static_cast<const KeyImpl*>(key.impl)->rkey;
  if (p.state == State::failed) [[unlikely]] {
    fail_now(completion, make_code(peer, kind, p.failure & 63, true));
    return;
  }
  std::size_t total = 0, nonempty = 0;
  for (const LocalSegment& s : local) {
    total += s.length;
    nonempty += s.length != 0;
  }
  if (total == 0 && kind != OpKind::put_notify) return;

  // Hot path: small put on a live connection with room, nothing queued ahead.
  if (kind != OpKind::get && p.state == State::ready && p.head == nullptr &&
      total <= max_inline_ && nonempty <= max_send_sge_ && room(p, false)) {
    ibv_sge sge[kMaxSge];
    int n = 0;
    for (const LocalSegment& s : local) {
      if (s.length != 0) {
        sge[n++] = ibv_sge{reinterpret_cast<std::uintptr_t>(s.address),
                           static_cast<std::uint32_t>(s.length), 0};
      }
    }
    ibv_send_wr wr{};
    wr.sg_list = n ? sge : nullptr;
    wr.num_sge = n;
    wr.opcode = kind == OpKind::put_notify ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    if (kind == OpKind::put_notify) wr.imm_data = htobe32(imm);
    wr.send_flags = IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = remote_address;
    wr.wr.rdma.rkey = rkey;
    if (post(p, wr, nullptr, kind, false) == 0) return;
  }

  // Hot path: a read of one segment, registered or small enough for a bounce
  // buffer, on a live connection with room and nothing queued ahead: posted
  // at once, without going through the FIFO and the general segment walk.
  if (kind == OpKind::get && local.size() == 1 && p.state == State::ready && p.head == nullptr &&
      total <= max_msg_ && room(p, true)) {
    const LocalSegment& s = local[0];
    const Registration* r = find_registration(s.address, s.length);
    if (r != nullptr || (total <= cfg_.bounce_size && !bounce_free_.empty())) {
      completion.pending.fetch_add(1, std::memory_order_relaxed);
      Op& op = new_op(kind, peer, completion);
      op.segs.push_back(Seg{static_cast<std::byte*>(s.address), total, r != nullptr ? r->mr->lkey : 0});
      op.total = total;
      op.remote = op.cur_remote = remote_address;
      op.rkey = rkey;
      op.fence = std::exchange(p.fence_next, false);
      if (r != nullptr) {
        op.mode = Mode::direct;
      } else {
        op.bounce = bounce_free_.back();
        bounce_free_.pop_back();
        op.bounce_seg = Seg{bounce_slab_.at(static_cast<std::size_t>(op.bounce)), total, bounce_slab_.lkey()};
        op.mode = Mode::bounce;
      }
      const Seg& into = op.mode == Mode::bounce ? op.bounce_seg : op.segs[0];
      ibv_sge sge{reinterpret_cast<std::uintptr_t>(into.address), static_cast<std::uint32_t>(total), into.lkey};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_READ;
      wr.wr.rdma.remote_addr = remote_address;
      wr.wr.rdma.rkey = rkey;
      if (post(p, wr, &op, kind, true) == 0) {
        op.all_posted = true;
        return;
      }
      // Not posted: the FIFO's path tries again, and fails the peer (with
      // this operation at its head) if the post keeps failing.
      enqueue(p, op);
      return;
    }
  }

  completion.pending.fetch_add(1, std::memory_order_relaxed);
  Op& op = new_op(kind, peer, completion);
  for (const LocalSegment& s : local) {
    op.segs.push_back(Seg{static_cast<std::byte*>(s.address), s.length, 0});
  }
  op.total = total;
  op.remote = remote_address;
  op.rkey = rkey;
  op.imm = imm;
  op.fence = std::exchange(p.fence_next, false);
  enqueue(p, op);
}

void VerbsNetwork::atomic(OpKind kind, int peer, std::uint64_t remote_address, RemoteKey key,
                          std::uint64_t compare, std::uint64_t operand, std::uint64_t* result,
                          Completion& completion) {
  Peer& p = peer_at(peer);
  if (!key) throw std::invalid_argument("verbs network: null remote key");
  if (p.state == State::failed) [[unlikely]] {
    fail_now(completion, make_code(peer, kind, p.failure & 63, true));
    return;
  }
  if (dev_.atomic_cap == IBV_ATOMIC_NONE) {
    fail_now(completion, make_code(peer, kind, kNoAtomics, false));
    return;
  }
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  Op& op = new_op(kind, peer, completion);
  op.remote = remote_address;
  op.rkey = static_cast<const KeyImpl*>(key.impl)->rkey;
  op.compare = compare;
  op.operand = operand;
  op.result = result;
  op.fence = std::exchange(p.fence_next, false);
  // Nothing queued ahead on a live connection: posted at once, without the
  // FIFO's walk (a lock word's acquire and release come through here). A
  // post that fails goes the FIFO's way, which retries and fails the peer.
  if (p.state == State::ready && p.head == nullptr && room(p, true) && !atomic_free_.empty() &&
      post_atomic(p, op) == 0)
    return;
  enqueue(p, op);
}

// --------------------------------------------------------------------------
// flush

void VerbsNetwork::flush(int peer, Completion& completion) {
  Peer& p = peer_at(peer);
  if (p.state == State::idle) return;  // nothing was ever issued to it
  if (p.state == State::failed) {
    fail_now(completion, make_code(peer, OpKind::flush, p.failure & 63, true));
    return;
  }
  if (p.head == nullptr && p.done == p.posted) return;
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  // Behind everything queued: it is only issued once those are posted.
  enqueue(p, new_op(OpKind::flush, peer, completion));
}

void VerbsNetwork::flush_all(Completion& completion) {
  for (int r : active_) flush(r, completion);
}

}  // namespace armci::platform::verbs_detail
