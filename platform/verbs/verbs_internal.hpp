// The verbs layer's internals, shared by its parts (one file per object):
//   verbs_device.cpp       opening the device, construction and teardown, addresses
//   verbs_memory.cpp       registration, exposure, remote keys
//   verbs_connections.cpp  RC QPs made on demand through the UD handshake
//   verbs_rma.cpp          operation records, issuing puts/gets/atomics, flush
//   verbs_messages.cpp     control messages (SRQ receives, send buffers)
//   verbs_completions.cpp  completions, progress and the wakeup descriptor
//   verbs_network.cpp      error texts, statistics and the factory functions
// Not part of the platform interface: only platform/verbs includes it.
//
// Connections: every process publishes one UD QP. The first operation to a
// peer creates an RC QP for it and runs a three-way handshake over UD
// (REQ -> REP -> RTU, each carrying the sender's RC QPN and PSN). A side only
// posts RC work once it knows the other end is at least RTR: the REP says so
// for the requester, the RTU for the responder. Simultaneous requests from
// both ends meet in the middle with one QP per side. Lost UD datagrams are
// covered by retransmission from progress().
//
// Send-queue bookkeeping: every RC work request is signalled, and each QP has
// a ring with one entry per posted request (the operation record, its kind and
// whether it holds a read/atomic slot). RC completions arrive in posting order,
// so a completion retires the ring entry at `done`. Operations that do not fit
// (queue depth, read/atomic slots, CQ room, bounce buffers, a connection not
// up yet) wait in a per-peer FIFO that progress() drains; nothing fails for
// lack of resources.
#pragma once

#include "platform/verbs/verbs_network.hpp"

#include "buffers/registration_cache.hpp"

#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace armci::platform::verbs_detail {


using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kAddressMagic = 0x41525642;    // "ARVB"
constexpr std::uint32_t kHandshakeMagic = 0x41525648;  // "ARVH"
constexpr std::uint32_t kKeyMagic = 0x4152564b;        // "ARVK"
// The high bit of a Q_Key marks privileged keys.
constexpr std::uint32_t kQkey = 0x1bc0ffee;
constexpr int kMaxSge = 32;
constexpr std::size_t kGrhBytes = 40;  // UD receives start with a GRH slot
constexpr int kUdDepth = 64;
constexpr std::size_t kUdSlot = 128;
constexpr int kAtomicSlots = 512;
constexpr std::size_t kOpChunk = 64;

// wr_id layout. RC sends: peer << 40 | sequence. UD (send and receive) carry
// the top bit; SRQ receives are the plain buffer index.
constexpr std::uint64_t kUdTag = std::uint64_t{1} << 63;
constexpr int kSeqBits = 40;
constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << kSeqBits) - 1;

// Every control message carries the sender's rank (as in the UCX layer) and
// the split between header and payload.
struct WireHeader {
  std::int32_t rank;
  std::uint32_t header_length;
  std::uint8_t id;
  std::uint8_t reserved[7];
};
static_assert(sizeof(WireHeader) == 16);

struct WireAddress {
  std::uint32_t magic;
  std::uint8_t version;
  std::uint8_t port;
  std::uint8_t link_layer;
  std::uint8_t mtu;  // enum ibv_mtu
  std::uint16_t lid;
  std::uint16_t reserved;
  std::uint32_t ud_qpn;
  std::uint32_t recv_size;  // largest control message the peer accepts
  std::uint8_t gid[16];
};
static_assert(sizeof(WireAddress) == 36);

enum : std::uint8_t { kReq = 1, kRep = 2, kRtu = 3 };

struct Handshake {
  std::uint32_t magic;
  std::uint8_t type;
  std::uint8_t reserved[3];
  std::int32_t source;
  std::int32_t target;
  std::uint32_t qpn;
  std::uint32_t psn;
  std::uint32_t responder_resources;  // reads/atomics it accepts in flight
};

struct PackedKey {
  std::uint64_t address;
  std::uint64_t length;
  std::uint32_t rkey;
  std::uint32_t magic;
};

// --------------------------------------------------------------------------
// error codes: peer (20 bits) | operation (4) | "earlier failure" (1) | status (6)

enum class OpKind : std::uint8_t {
  none = 0, put, put_notify, get, fetch_add, compare_swap, send, flush, connect
};

enum LocalStatus : int {
  kConnectTimeout = 48,  // handshake unanswered
  kQpSetup,              // QP/AH creation or state change failed
  kRegisterFailed,       // on-the-fly registration of a local buffer failed
  kNoAtomics,            // device without atomic support
  kPostFailed,           // ibv_post_send refused a request
};

constexpr int kPeerField = (1 << 20) - 1;

inline int make_code(int peer, OpKind kind, int status, bool earlier) {
  const int p = peer < kPeerField ? peer : kPeerField;
  return p << 11 | static_cast<int>(kind) << 7 | (earlier ? 1 << 6 : 0) | (status & 63);
}

inline const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::put: return "RDMA WRITE (put)";
    case OpKind::put_notify: return "RDMA WRITE WITH IMMEDIATE (put_notify)";
    case OpKind::get: return "RDMA READ (get)";
    case OpKind::fetch_add: return "ATOMIC FETCH_AND_ADD (fetch_add)";
    case OpKind::compare_swap: return "ATOMIC CMP_AND_SWP (compare_swap)";
    case OpKind::send: return "SEND (send_message)";
    case OpKind::flush: return "flush";
    case OpKind::connect: return "connection handshake";
    case OpKind::none: break;
  }
  return "operation";
}

inline std::string status_text(int status) {
  switch (status) {
    case kConnectTimeout: return "connection handshake timed out (the peer never answered over UD)";
    case kQpSetup: return "creating or connecting the RC queue pair failed";
    case kRegisterFailed: return "registering the local buffer failed";
    case kNoAtomics: return "the device does not support atomic operations";
    case kPostFailed: return "ibv_post_send failed";
    default: return ibv_wc_status_str(static_cast<ibv_wc_status>(status));
  }
}

inline void complete(Completion& c, int error) {
  if (error != 0) {
    int expected = 0;
    c.error.compare_exchange_strong(expected, error, std::memory_order_relaxed);
  }
  c.pending.fetch_sub(1, std::memory_order_release);
}

// --------------------------------------------------------------------------
// settings

// ARMCI_VERBS_* are parsed by the core (src/core/settings.cpp).
using Settings = VerbsOptions;

[[noreturn]] inline void fail_errno(const std::string& what) {
  throw std::runtime_error("verbs network: " + what + " failed: " + std::strerror(errno));
}

// --------------------------------------------------------------------------
// device discovery

struct DeviceChoice {
  ibv_context* context = nullptr;
  int port = 0;
  ibv_device_attr device{};
  ibv_port_attr port_attr{};
};

// Opens the requested device (or the first with an ACTIVE port); the caller
// owns the returned context. context stays null when nothing fits.
inline DeviceChoice open_device(const std::string& name, int want_port, std::string* why) {
  DeviceChoice out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    if (why) *why = std::string("ibv_get_device_list: ") + std::strerror(errno);
    return out;
  }
  std::string reason = n == 0 ? "no RDMA devices" : "no device with an ACTIVE port";
  for (int i = 0; i < n && out.context == nullptr; ++i) {
    const char* dev_name = ibv_get_device_name(list[i]);
    if (!name.empty() && name != dev_name) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) continue;
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) == 0) {
      for (int p = 1; p <= attr.phys_port_cnt; ++p) {
        if (want_port != 0 && p != want_port) continue;
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &pa) == 0 &&
            pa.state == IBV_PORT_ACTIVE) {
          out.context = ctx;
          out.port = p;
          out.device = attr;
          out.port_attr = pa;
          break;
        }
      }
    }
    if (out.context == nullptr) ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  if (out.context == nullptr && !name.empty()) {
    reason = "device '" + name + "' not found or without an ACTIVE port";
    if (want_port != 0) reason += " " + std::to_string(want_port);
  }
  if (out.context == nullptr && why) *why = reason;
  return out;
}

// --------------------------------------------------------------------------
// records

struct Seg {
  std::byte* address;
  std::size_t length;
  std::uint32_t lkey;
};

enum class Mode : std::uint8_t { unset, inline_data, direct, bounce };

// One operation: lives in a pool, in a peer's FIFO while it waits, and in the
// peer's ring while work requests of it are outstanding.
struct alignas(16) Op {
  Op* next = nullptr;
  Completion* completion = nullptr;
  OpKind kind = OpKind::none;
  Mode mode = Mode::unset;
  bool fence = false;
  bool all_posted = false;
  bool completed_early = false;  // inline data: the Completion was settled at post
  int error = 0;
  int peer = -1;
  std::uint32_t wrs_left = 0;  // posted, not yet completed
  std::uint32_t rkey = 0;
  std::uint32_t imm = 0;
  std::uint64_t remote = 0;
  std::size_t total = 0;
  std::vector<Seg> segs;  // capacity is kept across reuse
  Seg bounce_seg{};
  std::size_t cur_seg = 0;
  std::size_t cur_offset = 0;
  std::uint64_t cur_remote = 0;
  int bounce = -1;
  int atomic = -1;
  int send_slot = -1;
  std::uint64_t operand = 0;
  std::uint64_t compare = 0;
  std::uint64_t* result = nullptr;
  std::size_t message_length = 0;
  std::vector<std::byte> message;  // copy of a queued message with no send slot
  std::vector<ibv_mr*> temp_mrs;
  std::vector<buffers::RegistrationCache::Lease> leases;  // cached registrations in use
  std::uint64_t flush_target = 0;
};

// Ring entries: the Op pointer (16-aligned) with the kind in bits 1..3 and
// bit 0 set when the request holds a read/atomic slot.
inline std::uintptr_t ring_entry(Op* op, OpKind kind, bool read) {
  return reinterpret_cast<std::uintptr_t>(op) | static_cast<std::uintptr_t>(kind) << 1 |
         (read ? 1u : 0u);
}
inline Op* ring_op(std::uintptr_t e) { return reinterpret_cast<Op*>(e & ~std::uintptr_t{15}); }
inline OpKind ring_kind(std::uintptr_t e) { return static_cast<OpKind>((e >> 1) & 7); }
inline bool ring_read(std::uintptr_t e) { return (e & 1) != 0; }

enum class State : std::uint8_t { idle, req_sent, rtr_wait, ready, failed };

struct Peer {
  int rank = -1;
  bool known = false;
  WireAddress address{};
  ibv_ah* ah = nullptr;

  State state = State::idle;
  ibv_qp* qp = nullptr;
  std::uint32_t psn = 0;
  std::uint32_t remote_qpn = 0;
  std::uint32_t rd_limit = 1;
  std::uint32_t rd_inflight = 0;
  std::uint64_t posted = 0;
  std::uint64_t done = 0;
  std::unique_ptr<std::uintptr_t[]> ring;
  bool fence_next = false;
  bool listed_blocked = false;
  int failure = 0;

  Op* head = nullptr;  // FIFO of operations not (fully) posted
  Op* tail = nullptr;
  std::size_t queued = 0;
  Op* flushes = nullptr;  // flush waiters, in target order
  Op* flushes_tail = nullptr;

  Clock::time_point next_retry{};
  Clock::time_point deadline{};
  Clock::duration retry_interval{};
};

struct Registration {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  ibv_mr* mr = nullptr;  // null for zero-length registrations
};

struct KeyImpl {
  std::uint64_t address;
  std::uint64_t length;
  std::uint32_t rkey;
  int peer;
};

// Registered, page-aligned memory cut into equal slots.
struct Slab {
  std::byte* memory = nullptr;
  std::size_t bytes = 0;
  ibv_mr* mr = nullptr;
  std::size_t slot = 0;

  std::byte* at(std::size_t i) const { return memory + i * slot; }
  std::uint32_t lkey() const { return mr->lkey; }

  void create(ibv_pd* pd, std::size_t slot_size, std::size_t count, int access,
              const char* what) {
    slot = slot_size;
    bytes = slot_size * count;
    const std::size_t rounded = (bytes + 4095) & ~std::size_t{4095};
    void* p = nullptr;
    if (posix_memalign(&p, 4096, rounded) != 0) throw std::bad_alloc();
    memory = static_cast<std::byte*>(p);
    std::memset(memory, 0, rounded);
    mr = ibv_reg_mr(pd, memory, rounded, access);
    if (mr == nullptr) fail_errno(std::string("ibv_reg_mr (") + what + ")");
  }

  void destroy() noexcept {
    if (mr != nullptr) ibv_dereg_mr(mr);
    mr = nullptr;
    std::free(memory);
    memory = nullptr;
  }
};

class VerbsNetwork final : public Network {
 public:
  VerbsNetwork(int rank, int size, const VerbsOptions& options);
  ~VerbsNetwork() override { teardown(); }

  VerbsNetwork(const VerbsNetwork&) = delete;
  VerbsNetwork& operator=(const VerbsNetwork&) = delete;

  const Capabilities& capabilities() const override { return caps_; }

  std::vector<std::byte> local_address() override;
  void set_peer_addresses(std::vector<std::vector<std::byte>> addresses) override;

  MemoryHandle register_memory(void* address, std::size_t length) override;
  MemoryHandle expose_memory(void* address, std::size_t length) override;
  void deregister_memory(MemoryHandle handle) override;
  std::vector<std::byte> pack_remote_key(MemoryHandle handle) override;
  RemoteKey unpack_remote_key(int peer, std::span<const std::byte> packed) override;
  void release_remote_key(RemoteKey key) override;

  void put(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
           RemoteKey key, Completion& completion) override {
    transfer(OpKind::put, peer, local, remote_address, key, 0, completion);
  }
  void get(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
           RemoteKey key, Completion& completion) override {
    transfer(OpKind::get, peer, local, remote_address, key, 0, completion);
  }
  void put_notify(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
                  RemoteKey key, std::uint32_t value, Completion& completion) override {
    transfer(OpKind::put_notify, peer, local, remote_address, key, value, completion);
  }
  void fetch_add(int peer, std::uint64_t remote_address, RemoteKey key, std::uint64_t value,
                 std::uint64_t* result, Completion& completion) override {
    atomic(OpKind::fetch_add, peer, remote_address, key, 0, value, result, completion);
  }
  void compare_swap(int peer, std::uint64_t remote_address, RemoteKey key,
                    std::uint64_t expected, std::uint64_t desired, std::uint64_t* result,
                    Completion& completion) override {
    atomic(OpKind::compare_swap, peer, remote_address, key, expected, desired, result,
           completion);
  }
  std::uint64_t notifications_received() const override { return notifications_.total(); }
  std::uint64_t notifications_received(std::uint32_t value) const override { return notifications_.of(value); }

  void set_message_handler(std::uint8_t id, MessageHandler handler) override {
    handlers_[id] = std::move(handler);
  }
  void send_message(int peer, std::uint8_t id, std::span<const std::byte> header,
                    std::span<const std::byte> payload, Completion& completion) override;

  // RC applies a peer's requests in posting order except that a later one
  // may pass an RDMA read or atomic still in flight: only then (or with
  // requests still queued here, which may hold one) is a fence needed.
  // A fence behind nothing but writes also stalled Soft-RoCE for good: the
  // fenced atomic of a window unlock after a put never completed.
  void order(int peer) override {
    Peer& p = peer_at(peer);
    if (p.rd_inflight > 0 || p.queued > 0) p.fence_next = true;
  }
  void flush(int peer, Completion& completion) override;
  void flush_all(Completion& completion) override;

  std::string error_string(int code) const override;
  int error_peer(int code) const override {
    const int peer = code >> 11 & kPeerField;
    return code == 0 || peer == kPeerField ? -1 : peer;
  }

  int progress() override;
  int wakeup_fd() override { return epoll_fd_; }
  bool arm_wakeup() override { return arm(true); }
  bool arm_wakeup_for_peers() override { return arm(own_work_waits()); }

  VerbsStats stats() const;

 private:
  enum class Issue { blocked, issued, done };

  void teardown() noexcept;
  Peer& peer_at(int peer);

  // connections
  void start_connect(Peer& p);
  bool create_qp(Peer& p);
  // The RC queue pair every peer gets (and the start-up probe asks for).
  ibv_qp_init_attr rc_qp_attributes(std::uint32_t send_sge, std::uint32_t inline_bytes) const {
    ibv_qp_init_attr qa{};
    qa.send_cq = scq_;
    qa.recv_cq = rcq_;
    qa.srq = srq_;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = sq_depth_;
    qa.cap.max_send_sge = send_sge;
    qa.cap.max_inline_data = inline_bytes;
    return qa;
  }
  bool bring_up(Peer& p, const Handshake& m);
  void become_ready(Peer& p);
  void send_handshake(Peer& p, std::uint8_t type);
  void on_handshake(const Handshake& m);
  void handshake_timers();
  ibv_ah_attr ah_attr_for(const WireAddress& a) const;
  void fail_peer(Peer& p, int code);

  // issue
  Op& new_op(OpKind kind, int peer, Completion& c);
  void release_op(Op& op) noexcept;
  void enqueue(Peer& p, Op& op);
  void drain(Peer& p);
  void mark_blocked(Peer& p);
  Issue issue(Peer& p, Op& op);
  Issue start_transfer(Op& op);
  Issue post_segments(Peer& p, Op& op);
  bool room(const Peer& p, bool read) const {
    return p.posted - p.done < sq_depth_ && cq_outstanding_ < cq_budget_ &&
           (!read || p.rd_inflight < p.rd_limit);
  }
  int post(Peer& p, ibv_send_wr& wr, Op* op, OpKind kind, bool read);
  int post_atomic(Peer& p, Op& op);
  void finish(Op& op) noexcept;
  void fail_now(Completion& c, int code) {
    c.pending.fetch_add(1, std::memory_order_relaxed);
    complete(c, code);
  }
  const Registration* find_registration(const void* address, std::size_t length) const;
  // local_lookup: whether this process's own transfers may use it (not for
  // exposures, which may outlive their memory until deregistered).
  MemoryHandle register_range(void* address, std::size_t length, bool local_lookup);
  void transfer(OpKind kind, int peer, std::span<const LocalSegment> local,
                std::uint64_t remote_address, RemoteKey key, std::uint32_t imm,
                Completion& completion);
  void atomic(OpKind kind, int peer, std::uint64_t remote_address, RemoteKey key,
              std::uint64_t compare, std::uint64_t operand, std::uint64_t* result,
              Completion& completion);

  // completions
  void on_send_completion(const ibv_wc& wc);
  void on_recv_completion(const ibv_wc& wc);
  void deliver(const std::byte* data, std::size_t length);
  void repost_srq(std::uint64_t index);
  void repost_ud(std::uint64_t index);
  void drain_channel() noexcept;
  bool arm(bool send_completions);
  bool own_work_waits() const;

  int rank_;
  int size_;
  Settings cfg_;
  Capabilities caps_;

  ibv_context* ctx_ = nullptr;
  int port_ = 1;
  ibv_device_attr dev_{};
  ibv_port_attr port_attr_{};
  bool roce_ = false;
  // Devices without atomics may refuse registrations that ask for them.
  int remote_access_ = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  int gid_index_ = 0;
  ibv_gid gid_{};
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  // wakeup_fd(): an epoll set of the completion channel and a timer for
  // handshake retransmissions, which no completion would announce.
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  ibv_cq* scq_ = nullptr;
  ibv_cq* rcq_ = nullptr;
  ibv_srq* srq_ = nullptr;
  ibv_qp* ud_qp_ = nullptr;

  std::uint32_t sq_depth_ = 0;
  std::uint32_t max_send_sge_ = 1;
  std::uint32_t max_read_sge_ = 1;
  std::uint32_t max_inline_ = 0;
  std::size_t max_msg_ = 0;
  std::uint32_t initiator_depth_ = 1;
  std::uint32_t responder_depth_ = 1;
  std::size_t cq_budget_ = 0;
  std::size_t cq_outstanding_ = 0;
  std::size_t ud_posted_ = 0;
  std::size_t ud_done_ = 0;

  Slab recv_slab_, send_slab_, bounce_slab_, atomic_slab_, ud_recv_slab_, ud_send_slab_;
  std::unique_ptr<buffers::RegistrationCache> reg_cache_;
  std::vector<int> send_free_, bounce_free_, atomic_free_;

  std::vector<Registration*> regs_;  // sorted by begin, non-empty ranges only
  std::size_t max_reg_length_ = 0;
  std::unordered_set<Registration*> live_regs_;
  std::unordered_set<KeyImpl*> live_keys_;

  std::array<MessageHandler, 256> handlers_;
  NotificationCounts notifications_;

  std::vector<Peer> peers_;
  std::vector<int> connecting_;  // peers in req_sent / rtr_wait
  std::vector<int> blocked_;     // peers whose FIFO waits for resources
  std::vector<int> blocked_scratch_;
  std::vector<int> active_;      // peers with an RC QP
  std::size_t rc_qps_ = 0;
  std::mt19937 rng_;

  std::vector<std::unique_ptr<Op[]>> op_chunks_;
  Op* free_ops_ = nullptr;

  // Completions polled by arm_wakeup() to learn that work is pending;
  // progress() handles them first.
  std::array<ibv_wc, 16> stash_send_{}, stash_recv_{};
  int stashed_send_ = 0, stashed_recv_ = 0;
  unsigned scq_events_ = 0, rcq_events_ = 0;

  bool in_progress_ = false;
  // A handler's exception waits here until progress() has reposted buffers.
  std::exception_ptr handler_error_;
};

}  // namespace armci::platform::verbs_detail
