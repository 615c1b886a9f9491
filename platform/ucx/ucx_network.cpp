// UCX (ucp) implementation of platform::Network: the worker, peers and
// endpoints, memory registration, one-sided operations, ordering and
// progress. Control messages live in ucx_messages.cpp, the shared
// declarations in ucx_internal.hpp.
#include "platform/ucx/ucx_network.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "platform/ucx/ucx_internal.hpp"

namespace armci::platform {
namespace ucx {

// ---------------------------------------------------------------------------
// callbacks

void on_record_done(void* request, ucs_status_t status, void* user_data) {
  auto* r = static_cast<OpRecord*>(user_data);
  complete(*r->completion, status);
  r->owner->release_record(r);
  ucp_request_free(request);
}

void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* p = static_cast<Peer*>(arg);
  p->failure = status == UCS_OK ? UCS_ERR_ENDPOINT_TIMEOUT : status;
}

// ---------------------------------------------------------------------------
// construction

void UcxNetwork::open_worker(const char* transports) {
  ucp_config_t* config = nullptr;
  check("ucp_config_read", ucp_config_read(nullptr, nullptr, &config));
  if (transports != nullptr) {
    if (ucs_status_t st = ucp_config_modify(config, "TLS", transports); st != UCS_OK) {
      ucp_config_release(config);
      check("ucp_config_modify", st);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<std::size_t>(size_);
  ucs_status_t st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check("ucp_init", st);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // The core serialises all calls, but from two threads (the application's
  // and its progress thread).
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  check("ucp_worker_create", ucp_worker_create(context_, &wp, &worker_));
}

UcxNetwork::UcxNetwork(int rank, int size, const UcxOptions& options)
    : rank_(rank), size_(size), detect_failures_(options.detect_failures) {
  if (size <= 0 || rank < 0 || rank >= size) {
    throw std::invalid_argument("ucx network: bad rank/size " + std::to_string(rank) + "/" +
                                std::to_string(size));
  }
  caps_.name = "ucx";
  caps_.device = std::string("ucp ") + ucp_get_version_string() + " (UCX_TLS chooses its transports)";
  caps_.max_sge = 1;
  // ucp exposes no per-endpoint short-put threshold through its public API.
  caps_.max_inline = 0;
  caps_.copies_on_caller_same_host = true;
  // Active messages fall back to rendezvous, so any size goes; this bound only
  // keeps arithmetic in the core far from overflow.
  caps_.max_message = std::size_t(1) << 40;
  for (auto& s : slots_) s.owner = this;

  // UCX 1.13 refuses self/posix/sysv for endpoints that ask for peer-failure
  // handling, leaving only tcp (or IB) even to this very process. So failure
  // detection is off unless asked for, and the shared-memory transports that
  // carry virtual-node traffic on one host can be chosen
  // (UcxOptions::detect_failures, ARMCI_UCX_ERR_MODE).
  try {
    open_worker(nullptr);
  } catch (const std::exception& e) {
    // UCX's posix transport keeps its receive queues in /dev/shm, and a
    // container's small one cannot hold them: without it UCX still has
    // sysv, cma and tcp. A choice of transports the user made stands.
    teardown();
    if (std::getenv("UCX_TLS") != nullptr) throw;
    try {
      open_worker("^posix");
    } catch (...) {
      teardown();
      throw std::runtime_error(std::string(e.what()) + " (and again without UCX's posix transport)");
    }
  }
  try {
    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    check("ucp_worker_query", ucp_worker_query(worker_, &attr));
    const auto* bytes = reinterpret_cast<const std::byte*>(attr.address);
    address_.assign(bytes, bytes + attr.address_length);
    ucp_worker_release_address(worker_, attr.address);
    max_am_header_ = attr.max_am_header;

    register_am(kNotifyId, on_notify, this);
  } catch (...) {
    teardown();
    throw;
  }
}

UcxNetwork::~UcxNetwork() { teardown(); }

void UcxNetwork::teardown() noexcept {
  for (void* k : live_rkeys_) ucp_rkey_destroy(static_cast<ucp_rkey_h>(k));
  live_rkeys_.clear();
  if (worker_ != nullptr) {
    std::vector<void*> closing;
    for (auto& p : peers_) {
      if (p.ep == nullptr) continue;
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t st = ucp_ep_close_nbx(p.ep, &prm);
      p.ep = nullptr;
      if (st != nullptr && !UCS_PTR_IS_ERR(st)) closing.push_back(st);
    }
    for (void* req : closing) {
      while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(worker_);
      ucp_request_free(req);
    }
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  if (context_ != nullptr) {
    for (void* m : live_memh_) ucp_mem_unmap(context_, static_cast<ucp_mem_h>(m));
    live_memh_.clear();
    ucp_cleanup(context_);
    context_ = nullptr;
  }
  while (rndv_head_ != nullptr) {
    RndvReceive* r = rndv_head_;
    rndv_head_ = r->next;
    delete r;
  }
}

void UcxNetwork::register_am(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                  UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = id;
  // Handlers are promised the whole payload at once, never fragments.
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  hp.cb = cb;
  hp.arg = arg;
  check("ucp_worker_set_am_recv_handler", ucp_worker_set_am_recv_handler(worker_, &hp));
}

// ---------------------------------------------------------------------------
// peers

void UcxNetwork::set_peer_addresses(std::vector<std::vector<std::byte>> addresses) {
  if (addresses.size() != static_cast<std::size_t>(size_)) {
    throw std::invalid_argument("ucx network: expected " + std::to_string(size_) +
                                " peer addresses, got " + std::to_string(addresses.size()));
  }
  // Error callbacks hold Peer pointers, so the table cannot be rebuilt once
  // an endpoint exists.
  for (const auto& p : peers_) {
    if (p.ep != nullptr) {
      throw std::logic_error("ucx network: set_peer_addresses after endpoints were created");
    }
  }
  peers_.clear();
  peers_.resize(addresses.size());
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    peers_[i].owner = this;
    peers_[i].rank = static_cast<int>(i);
    peers_[i].address = std::move(addresses[i]);
  }
}

Peer& UcxNetwork::peer_at(int peer) {
  if (peer < 0 || static_cast<std::size_t>(peer) >= peers_.size() ||
      peers_[peer].address.empty()) {
    throw std::logic_error("ucx network: no address for peer " + std::to_string(peer));
  }
  return peers_[peer];
}

ucp_ep_h UcxNetwork::connect(Peer& p) {
  if (p.ep != nullptr) return p.ep;
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep.address = reinterpret_cast<const ucp_address_t*>(p.address.data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  if (detect_failures_) {
    ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_peer_error;
    ep.err_handler.arg = &p;
  }
  check("ucp_ep_create", ucp_ep_create(worker_, &ep, &p.ep));
  return p.ep;
}

ucp_ep_h UcxNetwork::usable_ep(int peer, Completion& completion) {
  Peer& p = peer_at(peer);
  if (p.failure != UCS_OK) [[unlikely]] {
    completion.pending.fetch_add(1, std::memory_order_relaxed);
    complete(completion, p.failure);
    return nullptr;
  }
  return p.ep != nullptr ? p.ep : connect(p);
}

// ---------------------------------------------------------------------------
// memory

MemoryHandle UcxNetwork::register_memory(void* address, std::size_t length) {
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = address;
  mp.length = length;
  ucp_mem_h memh = nullptr;
  live_memh_.reserve(live_memh_.size() + 1);  // so the insert below cannot throw
  check("ucp_mem_map", ucp_mem_map(context_, &mp, &memh));
  live_memh_.insert(memh);
  return MemoryHandle{memh};
}

void* UcxNetwork::allocate_memory(std::size_t length, MemoryHandle& handle) {
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  mp.address = nullptr;
  mp.length = length;
  mp.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  live_memh_.reserve(live_memh_.size() + 1);
  if (ucp_mem_map(context_, &mp, &memh) != UCS_OK) return nullptr;
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  if (ucp_mem_query(memh, &attr) != UCS_OK || attr.length < length) {
    ucp_mem_unmap(context_, memh);
    return nullptr;
  }
  // The allocation is zero-filled like every ARMCI_Malloc part.
  std::memset(attr.address, 0, length);
  live_memh_.insert(memh);
  handle = MemoryHandle{memh};
  return attr.address;
}

void UcxNetwork::deregister_memory(MemoryHandle handle) {
  if (!handle) return;
  auto it = live_memh_.find(handle.impl);
  if (it == live_memh_.end()) {
    throw std::logic_error("ucx network: deregister_memory of an unknown handle");
  }
  live_memh_.erase(it);
  check("ucp_mem_unmap", ucp_mem_unmap(context_, static_cast<ucp_mem_h>(handle.impl)));
}

std::vector<std::byte> UcxNetwork::pack_remote_key(MemoryHandle handle) {
  if (!handle) throw std::invalid_argument("ucx network: pack_remote_key of a null handle");
  void* buffer = nullptr;
  std::size_t size = 0;
  check("ucp_rkey_pack",
        ucp_rkey_pack(context_, static_cast<ucp_mem_h>(handle.impl), &buffer, &size));
  const auto* b = static_cast<const std::byte*>(buffer);
  std::vector<std::byte> out(b, b + size);
  ucp_rkey_buffer_release(buffer);
  return out;
}

RemoteKey UcxNetwork::unpack_remote_key(int peer, std::span<const std::byte> packed) {
  ucp_ep_h ep = connect(peer_at(peer));
  ucp_rkey_h rkey = nullptr;
  live_rkeys_.reserve(live_rkeys_.size() + 1);
  check("ucp_ep_rkey_unpack", ucp_ep_rkey_unpack(ep, packed.data(), &rkey));
  live_rkeys_.insert(rkey);
  return RemoteKey{rkey};
}

void UcxNetwork::release_remote_key(RemoteKey key) {
  if (!key) return;
  if (live_rkeys_.erase(key.impl) == 0) {
    throw std::logic_error("ucx network: release_remote_key of an unknown key");
  }
  ucp_rkey_destroy(static_cast<ucp_rkey_h>(key.impl));
}

// ---------------------------------------------------------------------------
// pooled records

OpRecord* UcxNetwork::acquire_record(Completion& completion) {
  if (free_records_ == nullptr) [[unlikely]] {
    constexpr std::size_t kChunk = 64;
    auto chunk = std::make_unique<OpRecord[]>(kChunk);
    for (std::size_t i = 0; i < kChunk; ++i) {
      chunk[i].owner = this;
      chunk[i].next_free = free_records_;
      free_records_ = &chunk[i];
    }
    record_chunks_.push_back(std::move(chunk));
  }
  OpRecord* r = free_records_;
  free_records_ = r->next_free;
  r->completion = &completion;
  return r;
}

void UcxNetwork::release_record(OpRecord* r) noexcept {
  r->big_header.reset();
  r->completion = nullptr;
  r->next_free = free_records_;
  free_records_ = r;
}

void UcxNetwork::settle_record(ucs_status_ptr_t st, OpRecord* r) {
  if (st == nullptr) {
    complete(*r->completion, UCS_OK);
    release_record(r);
  } else if (UCS_PTR_IS_ERR(st)) {
    complete(*r->completion, UCS_PTR_STATUS(st));
    release_record(r);
  }
}

// ---------------------------------------------------------------------------
// RMA and atomics

void UcxNetwork::issue_rma(bool is_put, ucp_ep_h ep, std::span<const LocalSegment> local,
                           std::uint64_t remote_address, RemoteKey key, Completion& completion) {
  auto rkey = static_cast<ucp_rkey_h>(key.impl);
  ucp_request_param_t prm;
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = on_done;
  prm.user_data = &completion;
  for (const LocalSegment& s : local) {
    if (s.length == 0) continue;
    completion.pending.fetch_add(1, std::memory_order_relaxed);
    ucs_status_ptr_t st =
        is_put ? ucp_put_nbx(ep, s.address, s.length, remote_address, rkey, &prm)
               : ucp_get_nbx(ep, s.address, s.length, remote_address, rkey, &prm);
    settle(st, completion);
    remote_address += s.length;
  }
}

void UcxNetwork::put(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
                     RemoteKey key, Completion& completion) {
  if (ucp_ep_h ep = usable_ep(peer, completion)) {
    issue_rma(true, ep, local, remote_address, key, completion);
  }
}

void UcxNetwork::get(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
                     RemoteKey key, Completion& completion) {
  if (ucp_ep_h ep = usable_ep(peer, completion)) {
    issue_rma(false, ep, local, remote_address, key, completion);
  }
}

void UcxNetwork::atomic(int peer, ucp_atomic_op_t op, std::uint64_t remote_address,
                        RemoteKey key, std::uint64_t operand, std::uint64_t* result,
                        Completion& completion) {
  ucp_ep_h ep = usable_ep(peer, completion);
  if (ep == nullptr) return;
  // UCX may read the operand after the call returns, so it lives in a record
  // rather than on this stack frame.
  OpRecord* r = acquire_record(completion);
  r->operand = operand;
  ucp_request_param_t prm;
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  prm.cb.send = on_record_done;
  prm.user_data = r;
  prm.datatype = ucp_dt_make_contig(sizeof(std::uint64_t));
  prm.reply_buffer = result;
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  settle_record(ucp_atomic_op_nbx(ep, op, &r->operand, 1, remote_address,
                                  static_cast<ucp_rkey_h>(key.impl), &prm),
                r);
}

void UcxNetwork::fetch_add(int peer, std::uint64_t remote_address, RemoteKey key,
                           std::uint64_t value, std::uint64_t* result, Completion& completion) {
  atomic(peer, UCP_ATOMIC_OP_ADD, remote_address, key, value, result, completion);
}

void UcxNetwork::compare_swap(int peer, std::uint64_t remote_address, RemoteKey key,
                              std::uint64_t expected, std::uint64_t desired,
                              std::uint64_t* result, Completion& completion) {
  // UCX CSWAP: the operand buffer is the compare value; reply_buffer carries
  // the swap value in and the old remote value out.
  *result = desired;
  atomic(peer, UCP_ATOMIC_OP_CSWAP, remote_address, key, expected, result, completion);
}

void UcxNetwork::put_notify(int peer, std::span<const LocalSegment> local,
                            std::uint64_t remote_address, RemoteKey key, std::uint32_t value,
                            Completion& completion) {
  ucp_ep_h ep = usable_ep(peer, completion);
  if (ep == nullptr) return;
  issue_rma(true, ep, local, remote_address, key, completion);
  // The notification must not overtake the data at the target.
  check("ucp_worker_fence", ucp_worker_fence(worker_));
  // The value travels as the message's header, which UCX may read after
  // the call returns (send_message): it lives in a record until completion.
  OpRecord* r = acquire_record(completion);
  std::memcpy(r->header, &value, sizeof value);
  ucp_request_param_t prm;
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = on_record_done;
  prm.user_data = r;
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  settle_record(ucp_am_send_nbx(ep, kNotifyId, r->header, sizeof value, nullptr, 0, &prm), r);
}

// ---------------------------------------------------------------------------
// ordering, flushing, progress

void UcxNetwork::order(int peer) {
  peer_at(peer);
  // ucp has no per-endpoint fence; the worker-wide one is a superset.
  check("ucp_worker_fence", ucp_worker_fence(worker_));
}

void UcxNetwork::flush(int peer, Completion& completion) {
  Peer& p = peer_at(peer);
  if (p.ep == nullptr) return;  // nothing was ever issued to it
  if (p.failure != UCS_OK) {
    completion.pending.fetch_add(1, std::memory_order_relaxed);
    complete(completion, p.failure);
    return;
  }
  ucp_request_param_t prm;
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = on_done;
  prm.user_data = &completion;
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  settle(ucp_ep_flush_nbx(p.ep, &prm), completion);
}

void UcxNetwork::flush_all(Completion& completion) {
  ucp_request_param_t prm;
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = on_done;
  prm.user_data = &completion;
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  settle(ucp_worker_flush_nbx(worker_, &prm), completion);
}

int UcxNetwork::progress() {
  int n = static_cast<int>(ucp_worker_progress(worker_));
  if (handler_error_) [[unlikely]] {
    std::exception_ptr e = std::exchange(handler_error_, nullptr);
    std::rethrow_exception(e);
  }
  return n;
}

int UcxNetwork::wakeup_fd() {
  if (efd_ == -2) {
    int fd = -1;
    efd_ = ucp_worker_get_efd(worker_, &fd) == UCS_OK ? fd : -1;
  }
  return efd_;
}

bool UcxNetwork::arm_wakeup() {
  ucs_status_t st = ucp_worker_arm(worker_);
  if (st == UCS_ERR_BUSY) return false;
  check("ucp_worker_arm", st);
  return true;
}

}  // namespace ucx

std::unique_ptr<Network> make_ucx_network(int rank, int size, const UcxOptions& options) {
  return std::make_unique<ucx::UcxNetwork>(rank, size, options);
}

}  // namespace armci::platform
