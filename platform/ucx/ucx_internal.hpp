// The UCX network's parts shared by its files: ucx_network.cpp (the
// worker, peers, memory, one-sided operations, progress) and
// ucx_messages.cpp (control messages and put_notify's notifications).
// Private to platform/ucx.
//
// Completion bookkeeping: every UCX operation is issued with a send callback
// and user_data, so UCX owns the request memory and we only free the handle in
// the callback. Operations whose UCX buffers must outlive the call (atomic
// operands, the control-message wire header) borrow a record from a free list
// that is refilled in chunks, so steady-state issue does not allocate.
#pragma once

#include <ucp/api/ucp.h>

#include <array>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "platform/network.hpp"
#include "platform/options.hpp"

namespace armci::platform::ucx {


// AM id used by put_notify; user handlers may not claim it.
inline constexpr std::uint8_t kNotifyId = 255;

// Every control message carries the sender's rank in front of the caller's
// header: UCX's reply endpoint cannot be mapped back to a rank reliably when
// both sides create endpoints from worker addresses.
using WireRank = std::int32_t;

// Headers up to this size are copied into the pooled record; larger ones
// (rare for control messages) go to a heap buffer.
inline constexpr std::size_t kInlineHeader = 120;

[[noreturn]] inline void fail(const char* call, ucs_status_t status) {
  throw std::runtime_error(std::string("ucx network: ") + call + " failed: " +
                           ucs_status_string(status));
}

inline void check(const char* call, ucs_status_t status) {
  if (status != UCS_OK) fail(call, status);
}

inline void complete(Completion& c, ucs_status_t status) {
  if (status != UCS_OK) {
    int expected = 0;
    c.error.compare_exchange_strong(expected, static_cast<int>(status),
                                    std::memory_order_relaxed);
  }
  c.pending.fetch_sub(1, std::memory_order_release);
}

// Callback for operations whose user_data is the Completion itself.
inline void on_done(void* request, ucs_status_t status, void* user_data) {
  complete(*static_cast<Completion*>(user_data), status);
  ucp_request_free(request);
}

// Accounts for the immediate outcome of an nbx call; a live request is left
// to its callback.
inline void settle(ucs_status_ptr_t st, Completion& c) {
  if (st == nullptr) {
    complete(c, UCS_OK);
  } else if (UCS_PTR_IS_ERR(st)) {
    complete(c, UCS_PTR_STATUS(st));
  }
}

class UcxNetwork;

struct OpRecord {
  UcxNetwork* owner = nullptr;
  Completion* completion = nullptr;
  OpRecord* next_free = nullptr;
  std::uint64_t operand = 0;
  std::unique_ptr<std::byte[]> big_header;
  alignas(8) std::byte header[kInlineHeader];
};

struct Peer {
  UcxNetwork* owner = nullptr;
  int rank = -1;
  std::vector<std::byte> address;
  ucp_ep_h ep = nullptr;
  ucs_status_t failure = UCS_OK;
};

struct HandlerSlot {
  UcxNetwork* owner = nullptr;
  MessageHandler fn;
};

// A rendezvous message whose data is still being fetched; linked so that the
// destructor can reclaim those the worker never finished.
struct RndvReceive {
  UcxNetwork* owner = nullptr;
  HandlerSlot* slot = nullptr;
  int source = -1;
  std::vector<std::byte> header;
  std::unique_ptr<std::byte[]> data;
  std::size_t length = 0;
  RndvReceive* prev = nullptr;
  RndvReceive* next = nullptr;
};

// The callbacks UCX calls (ucx_network.cpp: records, peer errors;
// ucx_messages.cpp: control messages and notifications).
void on_record_done(void* request, ucs_status_t status, void* user_data);
void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status);
ucs_status_t on_notify(void* arg, const void* header, std::size_t header_length, void*, std::size_t,
                       const ucp_am_recv_param_t*);
void on_rndv_data(void* request, ucs_status_t status, std::size_t, void* user_data);
ucs_status_t on_message(void* arg, const void* header, std::size_t header_length, void* data,
                        std::size_t length, const ucp_am_recv_param_t* param);

class UcxNetwork final : public Network {
 public:
  UcxNetwork(int rank, int size, const UcxOptions& options);
  ~UcxNetwork() override;

  UcxNetwork(const UcxNetwork&) = delete;
  UcxNetwork& operator=(const UcxNetwork&) = delete;

  const Capabilities& capabilities() const override { return caps_; }

  std::vector<std::byte> local_address() override { return address_; }
  void set_peer_addresses(std::vector<std::vector<std::byte>> addresses) override;

  MemoryHandle register_memory(void* address, std::size_t length) override;
  void* allocate_memory(std::size_t length, MemoryHandle& handle) override;
  void deregister_memory(MemoryHandle handle) override;
  std::vector<std::byte> pack_remote_key(MemoryHandle handle) override;
  RemoteKey unpack_remote_key(int peer, std::span<const std::byte> packed) override;
  void release_remote_key(RemoteKey key) override;

  void put(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
           RemoteKey key, Completion& completion) override;
  void get(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
           RemoteKey key, Completion& completion) override;
  void fetch_add(int peer, std::uint64_t remote_address, RemoteKey key, std::uint64_t value,
                 std::uint64_t* result, Completion& completion) override;
  void compare_swap(int peer, std::uint64_t remote_address, RemoteKey key,
                    std::uint64_t expected, std::uint64_t desired, std::uint64_t* result,
                    Completion& completion) override;
  void put_notify(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
                  RemoteKey key, std::uint32_t value, Completion& completion) override;
  std::uint64_t notifications_received() const override { return notifications_.total(); }
  std::uint64_t notifications_received(std::uint32_t value) const override { return notifications_.of(value); }

  void set_message_handler(std::uint8_t id, MessageHandler handler) override;
  void send_message(int peer, std::uint8_t id, std::span<const std::byte> header,
                    std::span<const std::byte> payload, Completion& completion) override;

  void order(int peer) override;
  void flush(int peer, Completion& completion) override;
  void flush_all(Completion& completion) override;

  std::string error_string(int code) const override {
    return ucs_status_string(static_cast<ucs_status_t>(code));
  }

  int progress() override;
  int wakeup_fd() override;
  bool arm_wakeup() override;

 private:
  friend void on_record_done(void*, ucs_status_t, void*);
  friend void on_rndv_data(void*, ucs_status_t, std::size_t, void*);
  friend ucs_status_t on_message(void*, const void*, std::size_t, void*, std::size_t,
                                 const ucp_am_recv_param_t*);
  friend ucs_status_t on_notify(void*, const void*, std::size_t, void*, std::size_t,
                                const ucp_am_recv_param_t*);
  friend void on_peer_error(void*, ucp_ep_h, ucs_status_t);

  void teardown() noexcept;
  // ucp_init and ucp_worker_create, with UCX_TLS replaced by transports
  // unless that is null.
  void open_worker(const char* transports);
  Peer& peer_at(int peer);
  ucp_ep_h connect(Peer& p);
  // The endpoint to use, or nullptr after reporting the peer's failure.
  ucp_ep_h usable_ep(int peer, Completion& completion);
  void issue_rma(bool is_put, ucp_ep_h ep, std::span<const LocalSegment> local,
                 std::uint64_t remote_address, RemoteKey key, Completion& completion);
  void atomic(int peer, ucp_atomic_op_t op, std::uint64_t remote_address, RemoteKey key,
              std::uint64_t operand, std::uint64_t* result, Completion& completion);
  void register_am(unsigned id, ucp_am_recv_callback_t cb, void* arg);

  OpRecord* acquire_record(Completion& completion);
  void release_record(OpRecord* r) noexcept;
  void settle_record(ucs_status_ptr_t st, OpRecord* r);

  void deliver(HandlerSlot& slot, int source, std::span<const std::byte> header,
               std::span<const std::byte> payload) noexcept;
  void link(RndvReceive* r) noexcept;
  void unlink(RndvReceive* r) noexcept;

  int rank_;
  int size_;
  Capabilities caps_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<std::byte> address_;
  std::size_t max_am_header_ = 0;
  int efd_ = -2;  // -2: not asked yet
  bool detect_failures_ = false;

  std::vector<Peer> peers_;
  // The Debian UCX build asserts in ucp_cleanup when mappings are still
  // live, so whatever the core leaves registered is released at teardown.
  // A multiset: UCX hands out one shared handle for every zero-length mapping.
  std::unordered_multiset<void*> live_memh_;
  std::unordered_set<void*> live_rkeys_;
  std::array<HandlerSlot, 256> slots_;
  NotificationCounts notifications_;

  std::vector<std::unique_ptr<OpRecord[]>> record_chunks_;
  OpRecord* free_records_ = nullptr;
  RndvReceive* rndv_head_ = nullptr;

  // A handler that throws must not unwind through UCX's C frames; its
  // exception is parked here and rethrown from progress().
  std::exception_ptr handler_error_;
};

}  // namespace armci::platform::ucx
