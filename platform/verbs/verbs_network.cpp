// InfiniBand verbs implementation of platform::Network.
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

namespace armci::platform {
namespace {

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

int make_code(int peer, OpKind kind, int status, bool earlier) {
  const int p = peer < kPeerField ? peer : kPeerField;
  return p << 11 | static_cast<int>(kind) << 7 | (earlier ? 1 << 6 : 0) | (status & 63);
}

const char* kind_name(OpKind k) {
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

std::string status_text(int status) {
  switch (status) {
    case kConnectTimeout: return "connection handshake timed out (the peer never answered over UD)";
    case kQpSetup: return "creating or connecting the RC queue pair failed";
    case kRegisterFailed: return "registering the local buffer failed";
    case kNoAtomics: return "the device does not support atomic operations";
    case kPostFailed: return "ibv_post_send failed";
    default: return ibv_wc_status_str(static_cast<ibv_wc_status>(status));
  }
}

void complete(Completion& c, int error) {
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

[[noreturn]] void fail_errno(const std::string& what) {
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
DeviceChoice open_device(const std::string& name, int want_port, std::string* why) {
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
std::uintptr_t ring_entry(Op* op, OpKind kind, bool read) {
  return reinterpret_cast<std::uintptr_t>(op) | static_cast<std::uintptr_t>(kind) << 1 |
         (read ? 1u : 0u);
}
Op* ring_op(std::uintptr_t e) { return reinterpret_cast<Op*>(e & ~std::uintptr_t{15}); }
OpKind ring_kind(std::uintptr_t e) { return static_cast<OpKind>((e >> 1) & 7); }
bool ring_read(std::uintptr_t e) { return (e & 1) != 0; }

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
  std::uint64_t notifications_received() const override {
    return notifications_.load(std::memory_order_acquire);
  }

  void set_message_handler(std::uint8_t id, MessageHandler handler) override {
    handlers_[id] = std::move(handler);
  }
  void send_message(int peer, std::uint8_t id, std::span<const std::byte> header,
                    std::span<const std::byte> payload, Completion& completion) override;

  void order(int peer) override { peer_at(peer).fence_next = true; }
  void flush(int peer, Completion& completion) override;
  void flush_all(Completion& completion) override;

  std::string error_string(int code) const override;

  int progress() override;
  int wakeup_fd() override { return epoll_fd_; }
  bool arm_wakeup() override;

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
  std::atomic<std::uint64_t> notifications_{0};

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

// --------------------------------------------------------------------------
// construction

VerbsNetwork::VerbsNetwork(int rank, int size, const VerbsOptions& options)
    : rank_(rank), size_(size), cfg_(options) {
  if (size <= 0 || rank < 0 || rank >= size || size > kPeerField) {
    throw std::invalid_argument("verbs network: bad rank/size " + std::to_string(rank) + "/" +
                                std::to_string(size));
  }
  rng_.seed(std::random_device{}() ^ static_cast<unsigned>(rank) * 2654435761u);

  try {
    std::string why;
    DeviceChoice d = open_device(cfg_.device, cfg_.port, &why);
    if (d.context == nullptr) throw std::runtime_error("verbs network: " + why);
    ctx_ = d.context;
    port_ = d.port;
    dev_ = d.device;
    port_attr_ = d.port_attr;
    roce_ = port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET;
    {
      // Soft-RoCE and soft-iWARP run the "device" in the kernel, on the CPU
      // of whoever posts: the core then hands big transfers to its helper.
      const std::string device_name = ibv_get_device_name(ctx_->device);
      caps_.software_device = device_name.rfind("rxe", 0) == 0 || device_name.rfind("siw", 0) == 0;
      caps_.device = device_name + " port " + std::to_string(port_);
    }
    if (dev_.atomic_cap != IBV_ATOMIC_NONE) remote_access_ |= IBV_ACCESS_REMOTE_ATOMIC;

    // GID: RoCE needs one that routes (an IPv4-mapped RoCE v2 entry works
    // across subnets and with rxe); on IB the LID addresses and GID 0 is fine.
    gid_index_ = 0;
    if (cfg_.gid_index >= 0) {
      gid_index_ = cfg_.gid_index;
    } else if (roce_) {
      // The table call returns the valid entries of every port.
      std::vector<ibv_gid_entry> table(static_cast<std::size_t>(std::max(port_attr_.gid_tbl_len, 1)) *
                                       std::max<std::size_t>(dev_.phys_port_cnt, 1));
      ssize_t n = ibv_query_gid_table(ctx_, table.data(), table.size(), 0);
      for (ssize_t i = 0; i < n; ++i) {
        const ibv_gid_entry& e = table[static_cast<std::size_t>(i)];
        const std::uint8_t* g = e.gid.raw;
        bool v4_mapped = std::all_of(g, g + 10, [](std::uint8_t b) { return b == 0; }) &&
                         g[10] == 0xff && g[11] == 0xff;
        if (e.port_num == static_cast<std::uint32_t>(port_) &&
            e.gid_type == IBV_GID_TYPE_ROCE_V2 && v4_mapped) {
          gid_index_ = static_cast<int>(e.gid_index);
          break;
        }
      }
    }
    if (ibv_query_gid(ctx_, static_cast<std::uint8_t>(port_), gid_index_, &gid_) != 0) {
      fail_errno("ibv_query_gid(" + std::to_string(gid_index_) + ")");
    }
    if (roce_ && gid_.global.interface_id == 0 && gid_.global.subnet_prefix == 0) {
      throw std::runtime_error("verbs network: GID index " + std::to_string(gid_index_) +
                               " is empty (set ARMCI_VERBS_GID_INDEX)");
    }

    pd_ = ibv_alloc_pd(ctx_);
    if (pd_ == nullptr) fail_errno("ibv_alloc_pd");
    if (cfg_.reg_cache > 0) {
      // Local access only: the cache serves the local side of transfers.
      reg_cache_ = std::make_unique<buffers::RegistrationCache>(
          buffers::RegistrationCache::Callbacks{
              [this](void* address, std::size_t length) -> void* {
                return ibv_reg_mr(pd_, address, length, IBV_ACCESS_LOCAL_WRITE);
              },
              [](void* registration) { ibv_dereg_mr(static_cast<ibv_mr*>(registration)); }},
          cfg_.reg_cache);
    }
    channel_ = ibv_create_comp_channel(ctx_);
    if (channel_ == nullptr) fail_errno("ibv_create_comp_channel");
    // arm_wakeup() drains events without blocking.
    int fl = fcntl(channel_->fd, F_GETFL);
    if (fl < 0 || fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) fail_errno("fcntl");
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ < 0) fail_errno("timerfd_create");
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) fail_errno("epoll_create1");
    for (int fd : {channel_->fd, timer_fd_}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) fail_errno("epoll_ctl");
    }

    const std::size_t max_cqe = static_cast<std::size_t>(dev_.max_cqe);
    cq_budget_ = std::min(cfg_.cq_size, max_cqe - kUdDepth);
    scq_ = ibv_create_cq(ctx_, static_cast<int>(cq_budget_ + kUdDepth), nullptr, channel_, 0);
    if (scq_ == nullptr) fail_errno("ibv_create_cq (send)");
    const std::size_t recv_count =
        std::min({cfg_.recv_count, static_cast<std::size_t>(dev_.max_srq_wr),
                  max_cqe - kUdDepth});
    rcq_ = ibv_create_cq(ctx_, static_cast<int>(recv_count + kUdDepth), nullptr, channel_, 0);
    if (rcq_ == nullptr) fail_errno("ibv_create_cq (receive)");

    ibv_srq_init_attr sa{};
    sa.attr.max_wr = static_cast<std::uint32_t>(recv_count);
    sa.attr.max_sge = 1;
    srq_ = ibv_create_srq(pd_, &sa);
    if (srq_ == nullptr) fail_errno("ibv_create_srq");

    constexpr int kLocal = IBV_ACCESS_LOCAL_WRITE;
    recv_slab_.create(pd_, cfg_.recv_size, recv_count, kLocal, "receive buffers");
    send_slab_.create(pd_, cfg_.recv_size, cfg_.send_buffers, kLocal, "send buffers");
    bounce_slab_.create(pd_, cfg_.bounce_size, cfg_.bounce_count, kLocal, "bounce buffers");
    atomic_slab_.create(pd_, 8, kAtomicSlots, kLocal, "atomic results");
    ud_recv_slab_.create(pd_, kUdSlot, kUdDepth, kLocal, "handshake receives");
    ud_send_slab_.create(pd_, kUdSlot, kUdDepth, kLocal, "handshake sends");
    for (int i = static_cast<int>(cfg_.send_buffers) - 1; i >= 0; --i) send_free_.push_back(i);
    for (int i = static_cast<int>(cfg_.bounce_count) - 1; i >= 0; --i) bounce_free_.push_back(i);
    for (int i = kAtomicSlots - 1; i >= 0; --i) atomic_free_.push_back(i);
    for (std::size_t i = 0; i < recv_count; ++i) repost_srq(i);

    // Queue pair limits: ask, then learn what the provider granted from a
    // probe QP (inline size in particular is only known that way).
    sq_depth_ = static_cast<std::uint32_t>(
        std::min(cfg_.sq_depth, static_cast<std::size_t>(dev_.max_qp_wr)));
    std::uint32_t want_sge = static_cast<std::uint32_t>(
        std::min({cfg_.max_sge, static_cast<std::size_t>(dev_.max_sge),
                  static_cast<std::size_t>(kMaxSge)}));
    std::uint32_t want_inline = static_cast<std::uint32_t>(cfg_.max_inline);
    for (;;) {
      ibv_qp_init_attr qa = rc_qp_attributes(want_sge, want_inline);
      ibv_qp* probe = ibv_create_qp(pd_, &qa);
      if (probe != nullptr) {
        sq_depth_ = std::min<std::uint32_t>(qa.cap.max_send_wr, sq_depth_);
        max_send_sge_ = std::min<std::uint32_t>(qa.cap.max_send_sge, want_sge);
        max_inline_ = std::min<std::uint32_t>(qa.cap.max_inline_data, want_inline);
        ibv_destroy_qp(probe);
        break;
      }
      if (want_inline > 0) want_inline /= 2;
      else if (want_sge > 1) want_sge /= 2;
      else if (sq_depth_ > 16) sq_depth_ /= 2;
      else fail_errno("ibv_create_qp (RC probe)");
    }
    max_read_sge_ = std::max<std::uint32_t>(
        1, std::min<std::uint32_t>(max_send_sge_, dev_.max_sge_rd ? dev_.max_sge_rd : 1));
    max_msg_ = std::min<std::size_t>(port_attr_.max_msg_sz, std::size_t(1) << 30);
    if (cfg_.max_msg != 0) max_msg_ = std::min(max_msg_, cfg_.max_msg);
    if (max_msg_ == 0) max_msg_ = std::size_t(1) << 30;
    // An inline request is one work request, so it obeys the message limit.
    max_inline_ = static_cast<std::uint32_t>(std::min<std::size_t>(max_inline_, max_msg_));
    initiator_depth_ = static_cast<std::uint32_t>(std::max<std::size_t>(
        1, std::min<std::size_t>(cfg_.rd_atomic, dev_.max_qp_init_rd_atom)));
    responder_depth_ = static_cast<std::uint32_t>(std::max<std::size_t>(
        1, std::min<std::size_t>(cfg_.rd_atomic, dev_.max_qp_rd_atom)));

    // The handshake QP.
    ibv_qp_init_attr ua{};
    ua.send_cq = scq_;
    ua.recv_cq = rcq_;
    ua.qp_type = IBV_QPT_UD;
    ua.cap.max_send_wr = kUdDepth;
    ua.cap.max_recv_wr = kUdDepth;
    ua.cap.max_send_sge = 1;
    ua.cap.max_recv_sge = 1;
    ud_qp_ = ibv_create_qp(pd_, &ua);
    if (ud_qp_ == nullptr) fail_errno("ibv_create_qp (UD)");
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.pkey_index = 0;
    at.port_num = static_cast<std::uint8_t>(port_);
    at.qkey = kQkey;
    if (ibv_modify_qp(ud_qp_, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
      fail_errno("ibv_modify_qp (UD INIT)");
    }
    for (std::size_t i = 0; i < kUdDepth; ++i) repost_ud(i);
    at = {};
    at.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(ud_qp_, &at, IBV_QP_STATE)) fail_errno("ibv_modify_qp (UD RTR)");
    at = {};
    at.qp_state = IBV_QPS_RTS;
    at.sq_psn = rng_() & 0xffffff;
    if (ibv_modify_qp(ud_qp_, &at, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
      fail_errno("ibv_modify_qp (UD RTS)");
    }

    caps_.name = "verbs";
    caps_.max_sge = std::min(max_send_sge_, max_read_sge_);
    caps_.needs_local_registration = true;
    caps_.max_inline = max_inline_;
    caps_.max_message = cfg_.recv_size - sizeof(WireHeader);
    caps_.max_outstanding_reads = initiator_depth_;
    caps_.atomics_coherent_with_cpu = false;
    caps_.native_notify = true;
  } catch (...) {
    teardown();
    throw;
  }
}

void VerbsNetwork::teardown() noexcept {
  for (Peer& p : peers_) {
    if (p.qp != nullptr) ibv_destroy_qp(p.qp);
    p.qp = nullptr;
    if (p.ah != nullptr) ibv_destroy_ah(p.ah);
    p.ah = nullptr;
  }
  if (ud_qp_ != nullptr) ibv_destroy_qp(ud_qp_);
  ud_qp_ = nullptr;
  if (srq_ != nullptr) ibv_destroy_srq(srq_);
  srq_ = nullptr;
  // Operations that never completed may still hold on-the-fly registrations.
  for (auto& chunk : op_chunks_) {
    for (std::size_t i = 0; i < kOpChunk; ++i) {
      for (ibv_mr* mr : chunk[i].temp_mrs) ibv_dereg_mr(mr);
      chunk[i].temp_mrs.clear();
      chunk[i].leases.clear();  // the cache goes below, registrations and all
    }
  }
  op_chunks_.clear();
  free_ops_ = nullptr;
  reg_cache_.reset();
  for (Registration* r : live_regs_) {
    if (r->mr != nullptr) ibv_dereg_mr(r->mr);
    delete r;
  }
  live_regs_.clear();
  regs_.clear();
  for (KeyImpl* k : live_keys_) delete k;
  live_keys_.clear();
  for (Slab* s : {&recv_slab_, &send_slab_, &bounce_slab_, &atomic_slab_, &ud_recv_slab_,
                  &ud_send_slab_}) {
    s->destroy();
  }
  if (scq_ != nullptr) {
    if (scq_events_) ibv_ack_cq_events(scq_, scq_events_);
    ibv_destroy_cq(scq_);
    scq_ = nullptr;
  }
  if (rcq_ != nullptr) {
    if (rcq_events_) ibv_ack_cq_events(rcq_, rcq_events_);
    ibv_destroy_cq(rcq_);
    rcq_ = nullptr;
  }
  scq_events_ = rcq_events_ = 0;
  if (epoll_fd_ >= 0) close(epoll_fd_);
  epoll_fd_ = -1;
  if (timer_fd_ >= 0) close(timer_fd_);
  timer_fd_ = -1;
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  channel_ = nullptr;
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
  if (ctx_ != nullptr) ibv_close_device(ctx_);
  ctx_ = nullptr;
}

// --------------------------------------------------------------------------
// addresses

std::vector<std::byte> VerbsNetwork::local_address() {
  WireAddress a{};
  a.magic = kAddressMagic;
  a.version = 1;
  a.port = static_cast<std::uint8_t>(port_);
  a.link_layer = port_attr_.link_layer;
  a.mtu = static_cast<std::uint8_t>(port_attr_.active_mtu);
  a.lid = port_attr_.lid;
  a.ud_qpn = ud_qp_->qp_num;
  a.recv_size = static_cast<std::uint32_t>(cfg_.recv_size);
  std::memcpy(a.gid, gid_.raw, sizeof a.gid);
  const auto* b = reinterpret_cast<const std::byte*>(&a);
  return {b, b + sizeof a};
}

void VerbsNetwork::set_peer_addresses(std::vector<std::vector<std::byte>> addresses) {
  if (addresses.size() != static_cast<std::size_t>(size_)) {
    throw std::invalid_argument("verbs network: expected " + std::to_string(size_) +
                                " peer addresses, got " + std::to_string(addresses.size()));
  }
  if (!active_.empty()) {
    throw std::logic_error("verbs network: set_peer_addresses after connections were made");
  }
  std::vector<Peer> fresh(addresses.size());
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    Peer& p = fresh[i];
    p.rank = static_cast<int>(i);
    if (addresses[i].empty()) continue;
    if (addresses[i].size() != sizeof(WireAddress)) {
      throw std::invalid_argument("verbs network: address of peer " + std::to_string(i) +
                                  " has " + std::to_string(addresses[i].size()) +
                                  " bytes, not a verbs address");
    }
    std::memcpy(&p.address, addresses[i].data(), sizeof p.address);
    if (p.address.magic != kAddressMagic || p.address.version != 1) {
      throw std::invalid_argument("verbs network: address of peer " + std::to_string(i) +
                                  " is not a verbs address");
    }
    if (p.address.link_layer != port_attr_.link_layer) {
      throw std::invalid_argument("verbs network: peer " + std::to_string(i) +
                                  " uses another link layer (InfiniBand vs. Ethernet)");
    }
    p.known = true;
  }
  peers_ = std::move(fresh);
  connecting_.clear();
  blocked_.clear();
}

Peer& VerbsNetwork::peer_at(int peer) {
  if (peer < 0 || static_cast<std::size_t>(peer) >= peers_.size() ||
      !peers_[static_cast<std::size_t>(peer)].known) {
    throw std::logic_error("verbs network: no address for peer " + std::to_string(peer));
  }
  return peers_[static_cast<std::size_t>(peer)];
}

// --------------------------------------------------------------------------
// memory

MemoryHandle VerbsNetwork::expose_memory(void* address, std::size_t length) {
  return register_range(address, length, false);
}

MemoryHandle VerbsNetwork::register_memory(void* address, std::size_t length) {
  return register_range(address, length, true);
}

MemoryHandle VerbsNetwork::register_range(void* address, std::size_t length, bool local_lookup) {
  auto reg = std::make_unique<Registration>();
  reg->begin = reinterpret_cast<std::uintptr_t>(address);
  reg->end = reg->begin + length;
  live_regs_.reserve(live_regs_.size() + 1);
  regs_.reserve(regs_.size() + 1);
  if (length > 0) {
    reg->mr = ibv_reg_mr(pd_, address, length, remote_access_ | IBV_ACCESS_LOCAL_WRITE);
    if (reg->mr == nullptr) {
      fail_errno("ibv_reg_mr of " + std::to_string(length) + " bytes");
    }
    if (local_lookup) {
      auto at = std::upper_bound(regs_.begin(), regs_.end(), reg->begin,
                                 [](std::uintptr_t b, const Registration* r) { return b < r->begin; });
      regs_.insert(at, reg.get());
      max_reg_length_ = std::max(max_reg_length_, length);
    }
  }
  live_regs_.insert(reg.get());
  return MemoryHandle{reg.release()};
}

void VerbsNetwork::deregister_memory(MemoryHandle handle) {
  if (!handle) return;
  auto* reg = static_cast<Registration*>(handle.impl);
  if (live_regs_.erase(reg) == 0) {
    throw std::logic_error("verbs network: deregister_memory of an unknown handle");
  }
  auto it = std::find(regs_.begin(), regs_.end(), reg);
  if (it != regs_.end()) regs_.erase(it);
  int rc = reg->mr != nullptr ? ibv_dereg_mr(reg->mr) : 0;
  delete reg;
  if (rc != 0) {
    errno = rc;
    fail_errno("ibv_dereg_mr");
  }
}

const Registration* VerbsNetwork::find_registration(const void* address,
                                                    std::size_t length) const {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  auto it = std::upper_bound(regs_.begin(), regs_.end(), a,
                             [](std::uintptr_t v, const Registration* r) { return v < r->begin; });
  // Registrations may overlap; only those starting within the longest
  // registration's reach below `a` can contain it.
  while (it != regs_.begin()) {
    --it;
    const Registration* r = *it;
    if (a - r->begin > max_reg_length_) break;
    if (r->end >= a + length) return r;
  }
  return nullptr;
}

std::vector<std::byte> VerbsNetwork::pack_remote_key(MemoryHandle handle) {
  if (!handle) throw std::invalid_argument("verbs network: pack_remote_key of a null handle");
  auto* reg = static_cast<Registration*>(handle.impl);
  if (live_regs_.count(reg) == 0) {
    throw std::logic_error("verbs network: pack_remote_key of an unknown handle");
  }
  PackedKey k{reg->begin, reg->end - reg->begin, reg->mr != nullptr ? reg->mr->rkey : 0,
              kKeyMagic};
  const auto* b = reinterpret_cast<const std::byte*>(&k);
  return {b, b + sizeof k};
}

RemoteKey VerbsNetwork::unpack_remote_key(int peer, std::span<const std::byte> packed) {
  peer_at(peer);  // connections are made on first use, not here
  PackedKey k;
  if (packed.size() != sizeof k) {
    throw std::invalid_argument("verbs network: packed remote key has the wrong size");
  }
  std::memcpy(&k, packed.data(), sizeof k);
  if (k.magic != kKeyMagic) {
    throw std::invalid_argument("verbs network: not a packed verbs remote key");
  }
  live_keys_.reserve(live_keys_.size() + 1);
  auto* impl = new KeyImpl{k.address, k.length, k.rkey, peer};
  live_keys_.insert(impl);
  return RemoteKey{impl};
}

void VerbsNetwork::release_remote_key(RemoteKey key) {
  if (!key) return;
  auto* impl = static_cast<KeyImpl*>(key.impl);
  if (live_keys_.erase(impl) == 0) {
    throw std::logic_error("verbs network: release_remote_key of an unknown key");
  }
  delete impl;
}

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
      if (!room(p, true)) return Issue::blocked;
      if (op.atomic < 0) {
        if (atomic_free_.empty()) return Issue::blocked;
        op.atomic = atomic_free_.back();
        atomic_free_.pop_back();
      }
      std::byte* slot = atomic_slab_.at(static_cast<std::size_t>(op.atomic));
      ibv_sge sge{reinterpret_cast<std::uintptr_t>(slot), 8, atomic_slab_.lkey()};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = op.kind == OpKind::fetch_add ? IBV_WR_ATOMIC_FETCH_AND_ADD
                                               : IBV_WR_ATOMIC_CMP_AND_SWP;
      wr.wr.atomic.remote_addr = op.remote;
      wr.wr.atomic.rkey = op.rkey;
      wr.wr.atomic.compare_add = op.kind == OpKind::fetch_add ? op.operand : op.compare;
      wr.wr.atomic.swap = op.operand;
      if (int rc = post(p, wr, &op, op.kind, true); rc != 0) {
        if (rc == ENOMEM) return Issue::blocked;
        op.error = make_code(p.rank, op.kind, kPostFailed, false);
        fail_peer(p, op.error);
        return Issue::issued;
      }
      op.all_posted = true;
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
  enqueue(p, op);
}

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
  Op& op = new_op(OpKind::flush, peer, completion);
  // Behind everything queued: it is only issued once those are posted.
  op.next = nullptr;
  if (p.tail != nullptr) p.tail->next = &op;
  else p.head = &op;
  p.tail = &op;
  ++p.queued;
  if (p.state == State::ready) drain(p);
}

void VerbsNetwork::flush_all(Completion& completion) {
  for (int r : active_) flush(r, completion);
}

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
      notifications_.fetch_add(1, std::memory_order_release);
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

  ibv_wc wc[32];
  for (int round = 0; round < 8; ++round) {
    int nr = ibv_poll_cq(rcq_, 32, wc);
    for (int i = 0; i < nr; ++i) on_recv_completion(wc[i]);
    int ns = ibv_poll_cq(scq_, 32, wc);
    for (int i = 0; i < ns; ++i) on_send_completion(wc[i]);
    if (nr <= 0 && ns <= 0) break;
    events += std::max(nr, 0) + std::max(ns, 0);
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

bool VerbsNetwork::arm_wakeup() {
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
  if (ibv_req_notify_cq(scq_, 0) || ibv_req_notify_cq(rcq_, 0)) fail_errno("ibv_req_notify_cq");
  // Whatever completed before the request was armed raises no event: look.
  stashed_recv_ = std::max(0, ibv_poll_cq(rcq_, static_cast<int>(stash_recv_.size()),
                                          stash_recv_.data()));
  stashed_send_ = std::max(0, ibv_poll_cq(scq_, static_cast<int>(stash_send_.size()),
                                          stash_send_.data()));
  return stashed_recv_ == 0 && stashed_send_ == 0;
}

// --------------------------------------------------------------------------

std::string VerbsNetwork::error_string(int code) const {
  if (code == 0) return "Success";
  const int status = code & 63;
  const bool earlier = (code >> 6 & 1) != 0;
  const auto kind = static_cast<OpKind>(code >> 7 & 15);
  const int peer = code >> 11 & kPeerField;
  std::string who = peer == kPeerField ? std::string("a peer") : "peer " + std::to_string(peer);
  std::string out = std::string("verbs: ") + kind_name(kind) + " to " + who;
  if (earlier) {
    out += " not attempted: the connection failed earlier (" + status_text(status) + ")";
  } else {
    out += " failed: " + status_text(status);
  }
  return out;
}

VerbsStats VerbsNetwork::stats() const {
  VerbsStats s;
  s.rc_qps = rc_qps_;
  for (const Peer& p : peers_) {
    if (p.state == State::ready) ++s.connected_peers;
    s.queued_operations += p.queued;
  }
  return s;
}

}  // namespace

std::unique_ptr<Network> make_verbs_network(int rank, int size, const VerbsOptions& options) {
  return std::make_unique<VerbsNetwork>(rank, size, options);
}

bool verbs_device_available(const VerbsOptions& options) {
  try {
    DeviceChoice d = open_device(options.device, options.port, nullptr);
    if (d.context == nullptr) return false;
    ibv_close_device(d.context);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

VerbsStats verbs_stats(const Network& network) {
  const auto* v = dynamic_cast<const VerbsNetwork*>(&network);
  if (v == nullptr) throw std::invalid_argument("verbs_stats: not a verbs network");
  return v->stats();
}

}  // namespace armci::platform
