// The verbs layer: control messages to a peer's handlers.
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

// --------------------------------------------------------------------------
// control messages

void VerbsNetwork::send_message(int peer, std::uint8_t id, std::span<const std::byte> header,
                                std::span<const std::byte> payload, Completion& completion) {
  Peer& p = peer_at(peer);
  const std::size_t user = header.size() + payload.size();
  const std::size_t limit =
      std::min<std::size_t>(cfg_.recv_size, p.address.recv_size) - sizeof(WireHeader);
  if (user > limit) {
    throw std::length_error("verbs network: message of " + std::to_string(user) +
                            " bytes (header + payload) exceeds the limit of " +
                            std::to_string(limit) + " to peer " + std::to_string(peer));
  }
  if (p.state == State::failed) [[unlikely]] {
    fail_now(completion, make_code(peer, OpKind::send, p.failure & 63, true));
    return;
  }
  WireHeader wh{};
  wh.rank = rank_;
  wh.header_length = static_cast<std::uint32_t>(header.size());
  wh.id = id;
  const std::size_t length = sizeof wh + user;

  // Hot path (acks and other small messages): gathered inline, no buffer.
  if (p.state == State::ready && p.head == nullptr && length <= max_inline_ &&
      max_send_sge_ >= 3 && room(p, false)) {
    ibv_sge sge[3];
    int n = 0;
    sge[n++] = ibv_sge{reinterpret_cast<std::uintptr_t>(&wh), sizeof wh, 0};
    if (!header.empty()) {
      sge[n++] = ibv_sge{reinterpret_cast<std::uintptr_t>(header.data()),
                         static_cast<std::uint32_t>(header.size()), 0};
    }
    if (!payload.empty()) {
      sge[n++] = ibv_sge{reinterpret_cast<std::uintptr_t>(payload.data()),
                         static_cast<std::uint32_t>(payload.size()), 0};
    }
    ibv_send_wr wr{};
    wr.sg_list = sge;
    wr.num_sge = n;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE;
    if (post(p, wr, nullptr, OpKind::send, false) == 0) return;
  }

  // The caller's header and payload may die when this returns: copy them
  // into a registered send buffer, or a private copy while none is free.
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  Op& op = new_op(OpKind::send, peer, completion);
  std::byte* to;
  if (!send_free_.empty()) {
    op.send_slot = send_free_.back();
    send_free_.pop_back();
    to = send_slab_.at(static_cast<std::size_t>(op.send_slot));
  } else {
    op.message.resize(length);
    to = op.message.data();
  }
  std::memcpy(to, &wh, sizeof wh);
  if (!header.empty()) std::memcpy(to + sizeof wh, header.data(), header.size());
  if (!payload.empty()) std::memcpy(to + sizeof wh + header.size(), payload.data(), payload.size());
  op.message_length = length;
  op.fence = std::exchange(p.fence_next, false);
  enqueue(p, op);
}

void VerbsNetwork::deliver(const std::byte* data, std::size_t length) {
  WireHeader wh;
  if (length < sizeof wh) return;
  std::memcpy(&wh, data, sizeof wh);
  if (wh.header_length > length - sizeof wh) return;
  const MessageHandler& h = handlers_[wh.id];
  if (!h) return;
  const std::byte* hdr = data + sizeof wh;
  try {
    h(wh.rank, {hdr, wh.header_length},
      {hdr + wh.header_length, length - sizeof wh - wh.header_length});
  } catch (...) {
    if (!handler_error_) handler_error_ = std::current_exception();
  }
}

}  // namespace armci::platform::verbs_detail
