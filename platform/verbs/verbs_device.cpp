// The verbs layer: opening the device, construction and teardown, the
// UD address every process publishes.
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

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
    caps_.puts_ordered = true;
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

}  // namespace armci::platform::verbs_detail
