// The UCX network's control messages (active messages carrying the
// sender's rank before the caller's header, eager or rendezvous) and the
// notifications of put_notify.
#include <cstring>
#include <utility>

#include "platform/ucx/ucx_internal.hpp"

namespace armci::platform::ucx {

ucs_status_t on_notify(void* arg, const void* header, std::size_t header_length, void*, std::size_t,
                       const ucp_am_recv_param_t*) {
  std::uint32_t value = 0;
  if (header_length == sizeof value) std::memcpy(&value, header, sizeof value);
  static_cast<UcxNetwork*>(arg)->notifications_.add(value);
  return UCS_OK;
}

void on_rndv_data(void* request, ucs_status_t status, std::size_t, void* user_data) {
  auto* r = static_cast<RndvReceive*>(user_data);
  UcxNetwork* self = r->owner;
  self->unlink(r);
  // A failed transfer has no Completion to report to on this side; the
  // sender sees the error on its own request.
  if (status == UCS_OK) {
    self->deliver(*r->slot, r->source, r->header, {r->data.get(), r->length});
  }
  delete r;
  if (request != nullptr) ucp_request_free(request);
}

ucs_status_t on_message(void* arg, const void* header, std::size_t header_length, void* data,
                        std::size_t length, const ucp_am_recv_param_t* param) {
  auto* slot = static_cast<HandlerSlot*>(arg);
  UcxNetwork* self = slot->owner;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;

  if (header_length < sizeof(WireRank)) {
    // Not one of ours; let a rendezvous sender complete instead of hanging.
    if (rndv) ucp_am_data_release(self->worker_, data);
    return UCS_OK;
  }
  WireRank source;
  std::memcpy(&source, header, sizeof source);
  std::span<const std::byte> user_header(static_cast<const std::byte*>(header) + sizeof source,
                                         header_length - sizeof source);

  if (!rndv) {
    self->deliver(*slot, source, user_header, {static_cast<const std::byte*>(data), length});
    return UCS_OK;
  }

  RndvReceive* r = nullptr;
  try {
    r = new RndvReceive;
    r->header.assign(user_header.begin(), user_header.end());
    r->data = std::make_unique_for_overwrite<std::byte[]>(length ? length : 1);
  } catch (...) {
    delete r;
    if (!self->handler_error_) self->handler_error_ = std::current_exception();
    ucp_am_data_release(self->worker_, data);
    return UCS_OK;
  }
  r->owner = self;
  r->slot = slot;
  r->source = source;
  r->length = length;

  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.recv_am = on_rndv_data;
  p.user_data = r;
  self->link(r);
  ucs_status_ptr_t st = ucp_am_recv_data_nbx(self->worker_, data, r->data.get(), length, &p);
  if (st == nullptr) {
    on_rndv_data(nullptr, UCS_OK, length, r);
  } else if (UCS_PTR_IS_ERR(st)) {
    on_rndv_data(nullptr, UCS_PTR_STATUS(st), 0, r);
  }
  return UCS_OK;
}

// ---------------------------------------------------------------------------
// control messages

void UcxNetwork::set_message_handler(std::uint8_t id, MessageHandler handler) {
  if (id == kNotifyId) {
    throw std::invalid_argument("ucx network: message id 255 is reserved");
  }
  HandlerSlot& slot = slots_[id];
  slot.fn = std::move(handler);
  // Without a handler UCX drops the message, which beats calling an empty
  // std::function.
  register_am(id, slot.fn ? on_message : nullptr, slot.fn ? &slot : nullptr);
}

void UcxNetwork::send_message(int peer, std::uint8_t id, std::span<const std::byte> header,
                              std::span<const std::byte> payload, Completion& completion) {
  const std::size_t wire_len = sizeof(WireRank) + header.size();
  if (wire_len > max_am_header_) {
    throw std::length_error("ucx network: message header of " + std::to_string(header.size()) +
                            " bytes exceeds the UCX limit");
  }
  ucp_ep_h ep = usable_ep(peer, completion);
  if (ep == nullptr) return;

  // UCX 1.13 may still read the header after the call returns (no
  // COPY_HEADER flag yet), and it has the rank prepended, so it is built in
  // a record that lives until completion.
  OpRecord* r = acquire_record(completion);
  std::byte* wire = r->header;
  if (wire_len > kInlineHeader) [[unlikely]] {
    r->big_header = std::make_unique<std::byte[]>(wire_len);
    wire = r->big_header.get();
  }
  const WireRank me = rank_;
  std::memcpy(wire, &me, sizeof me);
  if (!header.empty()) std::memcpy(wire + sizeof me, header.data(), header.size());

  ucp_request_param_t prm;
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = on_record_done;
  prm.user_data = r;
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  settle_record(ucp_am_send_nbx(ep, id, wire, wire_len, payload.data(), payload.size(), &prm), r);
}

void UcxNetwork::deliver(HandlerSlot& slot, int source, std::span<const std::byte> header,
                         std::span<const std::byte> payload) noexcept {
  if (!slot.fn) return;
  try {
    slot.fn(source, header, payload);
  } catch (...) {
    if (!handler_error_) handler_error_ = std::current_exception();
  }
}

void UcxNetwork::link(RndvReceive* r) noexcept {
  r->prev = nullptr;
  r->next = rndv_head_;
  if (rndv_head_ != nullptr) rndv_head_->prev = r;
  rndv_head_ = r;
}

void UcxNetwork::unlink(RndvReceive* r) noexcept {
  if (r->prev != nullptr) r->prev->next = r->next;
  else rndv_head_ = r->next;
  if (r->next != nullptr) r->next->prev = r->prev;
  r->prev = r->next = nullptr;
}

}  // namespace armci::platform::ucx
