// The verbs layer: RC QPs made on first use of a peer through the
// three-way handshake over UD (see verbs_internal.hpp).
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

// --------------------------------------------------------------------------
// connections

ibv_ah_attr VerbsNetwork::ah_attr_for(const WireAddress& a) const {
  ibv_ah_attr ah{};
  ah.port_num = static_cast<std::uint8_t>(port_);
  ah.sl = static_cast<std::uint8_t>(cfg_.sl);
  ah.dlid = a.lid;
  if (roce_ || a.lid == 0) {
    ah.is_global = 1;
    std::memcpy(ah.grh.dgid.raw, a.gid, sizeof a.gid);
    ah.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
    ah.grh.hop_limit = 64;
  }
  return ah;
}

bool VerbsNetwork::create_qp(Peer& p) {
  ibv_qp_init_attr qa = rc_qp_attributes(max_send_sge_, max_inline_);
  active_.reserve(active_.size() + 1);
  p.ring = std::make_unique<std::uintptr_t[]>(sq_depth_);
  p.qp = ibv_create_qp(pd_, &qa);
  if (p.qp == nullptr) {
    fail_peer(p, make_code(p.rank, OpKind::connect, kQpSetup, false));
    return false;
  }
  ++rc_qps_;
  active_.push_back(p.rank);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_INIT;
  at.pkey_index = 0;
  at.port_num = static_cast<std::uint8_t>(port_);
  at.qp_access_flags = remote_access_;
  if (ibv_modify_qp(p.qp, &at,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    fail_peer(p, make_code(p.rank, OpKind::connect, kQpSetup, false));
    return false;
  }
  p.psn = rng_() & 0xffffff;
  return true;
}

// INIT -> RTR -> RTS against the peer's QP named in `m`.
bool VerbsNetwork::bring_up(Peer& p, const Handshake& m) {
  p.remote_qpn = m.qpn;
  p.rd_limit = std::max<std::uint32_t>(1, std::min(initiator_depth_, m.responder_resources));
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_RTR;
  at.path_mtu = static_cast<ibv_mtu>(std::min<int>(port_attr_.active_mtu, p.address.mtu));
  at.dest_qp_num = m.qpn;
  at.rq_psn = m.psn;
  at.max_dest_rd_atomic = static_cast<std::uint8_t>(responder_depth_);
  at.min_rnr_timer = 12;  // 0.64 ms
  at.ah_attr = ah_attr_for(p.address);
  if (ibv_modify_qp(p.qp, &at,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    fail_peer(p, make_code(p.rank, OpKind::connect, kQpSetup, false));
    return false;
  }
  at = {};
  at.qp_state = IBV_QPS_RTS;
  at.timeout = static_cast<std::uint8_t>(cfg_.timeout);
  at.retry_cnt = static_cast<std::uint8_t>(cfg_.retry_cnt);
  at.rnr_retry = 7;  // receiver not ready: retry forever, never fail
  at.sq_psn = p.psn;
  at.max_rd_atomic = static_cast<std::uint8_t>(p.rd_limit);
  if (ibv_modify_qp(p.qp, &at,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
    fail_peer(p, make_code(p.rank, OpKind::connect, kQpSetup, false));
    return false;
  }
  return true;
}

void VerbsNetwork::start_connect(Peer& p) {
  if (!create_qp(p)) return;
  p.state = State::req_sent;
  const auto now = Clock::now();
  p.retry_interval = std::chrono::milliseconds(cfg_.connect_retry_ms);
  p.next_retry = now + p.retry_interval;
  p.deadline = cfg_.connect_timeout > 0
                   ? now + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(cfg_.connect_timeout))
                   : Clock::time_point::max();
  connecting_.push_back(p.rank);
  send_handshake(p, kReq);
}

void VerbsNetwork::become_ready(Peer& p) {
  p.state = State::ready;
  if (p.head != nullptr) mark_blocked(p);  // drained at the end of progress()
}

void VerbsNetwork::send_handshake(Peer& p, std::uint8_t type) {
  // A full UD queue drops this one; the retransmission timers make up for it.
  if (ud_posted_ - ud_done_ >= static_cast<std::size_t>(kUdDepth)) return;
  if (p.ah == nullptr) {
    ibv_ah_attr attr = ah_attr_for(p.address);
    p.ah = ibv_create_ah(pd_, &attr);
    if (p.ah == nullptr) {
      fail_peer(p, make_code(p.rank, OpKind::connect, kQpSetup, false));
      return;
    }
  }
  std::byte* slot = ud_send_slab_.at(ud_posted_ % kUdDepth);
  Handshake m{};
  m.magic = kHandshakeMagic;
  m.type = type;
  m.source = rank_;
  m.target = p.rank;
  m.qpn = p.qp->qp_num;
  m.psn = p.psn;
  m.responder_resources = responder_depth_;
  std::memcpy(slot, &m, sizeof m);
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot), sizeof m, ud_send_slab_.lkey()};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kUdTag;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = p.ah;
  wr.wr.ud.remote_qpn = p.address.ud_qpn;
  wr.wr.ud.remote_qkey = kQkey;
  if (ibv_post_send(ud_qp_, &wr, &bad) == 0) ++ud_posted_;
}

void VerbsNetwork::on_handshake(const Handshake& m) {
  if (m.magic != kHandshakeMagic || m.target != rank_ || m.source < 0 ||
      static_cast<std::size_t>(m.source) >= peers_.size()) {
    return;
  }
  Peer& p = peers_[static_cast<std::size_t>(m.source)];
  // Requests from peers we have no address for, or that arrive before
  // set_peer_addresses, are dropped: the requester retransmits.
  if (!p.known) return;
  if (cfg_.debug) {
    static const char* const names[] = {"idle", "req_sent", "rtr_wait", "ready", "failed"};
    static const char* const types[] = {"?", "REQ", "REP", "RTU"};
    std::fprintf(stderr, "verbs[%d]: %s from %d (qpn %u) in state %s\n", rank_,
                 types[m.type <= kRtu ? m.type : 0], m.source, m.qpn,
                 names[static_cast<int>(p.state)]);
  }
  switch (m.type) {
    case kReq:
      if (p.state == State::idle) {
        if (!create_qp(p)) return;
        p.state = State::req_sent;
        p.retry_interval = std::chrono::milliseconds(cfg_.connect_retry_ms);
        p.deadline = cfg_.connect_timeout > 0
                         ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(cfg_.connect_timeout))
                         : Clock::time_point::max();
        connecting_.push_back(p.rank);
      }
      if (p.state == State::req_sent) {
        if (!bring_up(p, m)) return;
        // Our side can receive now; we wait for REP or RTU before sending.
        p.state = State::rtr_wait;
        p.next_retry = Clock::now() + p.retry_interval;
        send_handshake(p, kRep);
      } else if ((p.state == State::rtr_wait || p.state == State::ready) &&
                 m.qpn == p.remote_qpn) {
        send_handshake(p, kRep);  // our REP was lost
      }
      break;
    case kRep:
      if (p.state == State::req_sent) {
        if (!bring_up(p, m)) return;
        become_ready(p);
        send_handshake(p, kRtu);
      } else if (p.state == State::rtr_wait && m.qpn == p.remote_qpn) {
        become_ready(p);
        send_handshake(p, kRtu);
      } else if (p.state == State::ready && m.qpn == p.remote_qpn) {
        send_handshake(p, kRtu);  // our RTU was lost
      }
      break;
    case kRtu:
      if (p.state == State::rtr_wait && m.qpn == p.remote_qpn) become_ready(p);
      break;
    default:
      break;
  }
}

void VerbsNetwork::handshake_timers() {
  const auto now = Clock::now();
  std::size_t keep = 0;
  for (std::size_t i = 0; i < connecting_.size(); ++i) {
    Peer& p = peers_[static_cast<std::size_t>(connecting_[i])];
    if (p.state != State::req_sent && p.state != State::rtr_wait) continue;
    if (now >= p.deadline) {
      fail_peer(p, make_code(p.rank, OpKind::connect, kConnectTimeout, false));
      continue;
    }
    if (now >= p.next_retry) {
      send_handshake(p, p.state == State::req_sent ? kReq : kRep);
      p.retry_interval = std::min<Clock::duration>(p.retry_interval * 2, std::chrono::seconds(1));
      p.next_retry = now + p.retry_interval;
    }
    connecting_[keep++] = connecting_[i];
  }
  connecting_.resize(keep);
}

// The peer is unusable from now on: everything outstanding or queued for it
// completes with an error, and so does everything issued later.
void VerbsNetwork::fail_peer(Peer& p, int code) {
  if (p.state == State::failed) return;
  p.state = State::failed;
  p.failure = code;
  if (p.qp != nullptr) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(p.qp, &at, IBV_QP_STATE);
  }
  const int status = code & 63;
  // Requests still in the ring come back as flush errors, each taking a CQ
  // slot; cq_outstanding_ keeps counting them until they arrive.
  for (; p.done < p.posted; ++p.done) {
    std::uintptr_t e = p.ring[p.done % sq_depth_];
    if (ring_read(e)) --p.rd_inflight;
    Op* op = ring_op(e);
    if (op == nullptr) continue;
    if (op->error == 0) op->error = make_code(p.rank, op->kind, IBV_WC_WR_FLUSH_ERR, false);
    if (--op->wrs_left == 0 && op->all_posted) finish(*op);
  }
  while (Op* op = p.head) {
    p.head = op->next;
    if (op->error == 0) op->error = make_code(p.rank, op->kind, status, true);
    op->wrs_left = 0;
    finish(*op);
  }
  p.tail = nullptr;
  p.queued = 0;
  while (Op* op = p.flushes) {
    p.flushes = op->next;
    if (op->error == 0) op->error = make_code(p.rank, OpKind::flush, status, true);
    finish(*op);
  }
  p.flushes_tail = nullptr;
}

}  // namespace armci::platform::verbs_detail
