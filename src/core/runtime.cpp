#include "src/core/runtime.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "src/core/copy.hpp"
#include "src/core/error.hpp"
#include "src/core/messages.hpp"
#include "src/core/sync.hpp"
#include "platform/network_factory.hpp"

namespace armci {

Runtime* Runtime::instance_ = nullptr;

namespace {

// Byte-wise serialisation of the start-up and allocation records.
class Writer {
 public:
  template <typename T>
  void add(const T& value) {
    auto* p = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void add_bytes(std::span<const std::byte> data) {
    add<std::uint64_t>(data.size());
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
  std::vector<std::byte> bytes;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> data) : data_(data) {}
  template <typename T>
  T take() {
    T value;
    check(sizeof(T));
    std::memcpy(&value, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::vector<std::byte> take_bytes() {
    auto n = take<std::uint64_t>();
    check(n);
    std::vector<std::byte> out(data_.begin() + static_cast<std::ptrdiff_t>(at_),
                               data_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += n;
    return out;
  }

 private:
  void check(std::size_t n) const {
    if (at_ + n > data_.size()) throw std::runtime_error("truncated start-up record");
  }
  std::span<const std::byte> data_;
  std::size_t at_ = 0;
};

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string short_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace

void Backoff::pause() {
  if (++spins_ <= 32) return;
  if (spins_ < 4096) {
    sched_yield();
    return;
  }
  // A wait this long (a rank idle in a barrier, a lock held for a while)
  // naps instead of yielding in a loop: on a machine with as many ranks as
  // cores, a yielding waiter still takes a whole core from the helper
  // threads and from everything else that has work.
  if (spins_ == 4096) {
    since_ = std::chrono::steady_clock::now();
    return;
  }
  if (std::chrono::steady_clock::now() - since_ < std::chrono::milliseconds(1)) {
    sched_yield();
    return;
  }
  const timespec nap{0, 50 * 1000};
  nanosleep(&nap, nullptr);
}

const char* to_string(PeerKind kind) {
  switch (kind) {
    case PeerKind::self: return "self";
    case PeerKind::shared_memory: return "shm";
    case PeerKind::network: return "network";
  }
  return "?";
}

// ------------------------------------------------------------------ start-up

void Runtime::initialize() {
  auto* runtime = new Runtime();
  instance_ = runtime;
  try {
    runtime->start_up();
  } catch (const std::exception& e) {
    fail("ARMCI_Init", "start-up failed: %s", e.what());
  }
  set_cleanup_hook([] {
    if (instance_) instance_->cleanup_names();
  });
}

void Runtime::finalize() {
  Runtime* runtime = instance_;
  try {
    runtime->shut_down();
  } catch (const std::exception& e) {
    fail("ARMCI_Finalize", "shutdown failed: %s", e.what());
  }
  set_cleanup_hook(nullptr);
  instance_ = nullptr;
  delete runtime;
}

void Runtime::start_up() {
  settings_ = Settings::from_environment();
  bootstrap_ = platform::Bootstrap::create();
  rank_ = bootstrap_->rank();
  size_ = bootstrap_->size();
  set_error_rank(rank_);

  // start_up runs inside initialize()'s handler, which reports the reason.
  if (size_ > 1) network_ = platform::make_network(to_string(settings_.network), rank_, size_);
  Writer record;
  const std::string host = hostname();
  record.add_bytes(std::as_bytes(std::span(host.data(), host.size())));
  std::vector<std::byte> address;
  if (network_) address = network_->local_address();
  record.add_bytes(address);
  auto records = bootstrap_->allgather(record.bytes);

  std::vector<std::string> hosts(static_cast<std::size_t>(size_));
  std::vector<std::vector<std::byte>> addresses(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    Reader in(records[static_cast<std::size_t>(r)]);
    auto h = in.take_bytes();
    hosts[static_cast<std::size_t>(r)].assign(reinterpret_cast<const char*>(h.data()), h.size());
    addresses[static_cast<std::size_t>(r)] = in.take_bytes();
  }
  build_topology(hosts);
  same_host_.assign(static_cast<std::size_t>(size_), 0);
  for (int r = 0; r < size_; ++r)
    same_host_[static_cast<std::size_t>(r)] = hosts[static_cast<std::size_t>(r)] == hosts[static_cast<std::size_t>(rank_)];

  // Every address stays, self and neighbours included: with network peers,
  // Rmw and mutexes reach every rank through the network layer
  // (atomics_over_network()).
  if (has_network_peers_) {
    bootstrap_->set_progress([this] { progress_network(); });
    if (!network_)
      fail("ARMCI_Init", "ranks on other nodes need a network layer, and this build has none "
                         "(configure with UCX)");
    network_->set_peer_addresses(std::move(addresses));
    // An Acc piece must fit one control message of the layer.
    const std::size_t room = network_->capabilities().max_message;
    acc_chunk_ = std::min(settings_.acc_chunk, room > 256 ? (room - 256) & ~std::size_t{15} : 16);
    batch_limit_ = std::min(settings_.aggregate_bytes, room > 1024 ? room - 256 : 768);
    network_->set_message_handler(wire::kAcc, [this](int source, auto header, auto payload) {
      handle_acc_message(source, header, payload);
    });
    network_->set_message_handler(wire::kAck, [this](int source, auto header, auto) { handle_ack(source, header); });
    install_vector_handlers();
  } else {
    network_.reset();  // nobody to talk to through it
  }

  implicit_ = std::make_unique<platform::Completion[]>(static_cast<std::size_t>(size_));
  acks_pending_ = std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(size_));
  puts_unordered_.assign(static_cast<std::size_t>(size_), 0);
  regions_.resize(size_);

  // The control blocks: allocated like user memory, but never in the region
  // table, so no user operation can reach them.
  control_ = collective_allocate(sizeof(ControlBlock), false);
  control_local_.assign(static_cast<std::size_t>(size_), nullptr);
  for (int r = 0; r < size_; ++r) {
    if (peer_kind_[static_cast<std::size_t>(r)] == PeerKind::self)
      control_local_[static_cast<std::size_t>(r)] = static_cast<ControlBlock*>(control_->own.address());
    else if (peer_kind_[static_cast<std::size_t>(r)] == PeerKind::shared_memory)
      control_local_[static_cast<std::size_t>(r)] =
          static_cast<ControlBlock*>(control_->mapped[static_cast<std::size_t>(r)].address());
  }
  bootstrap_->fence();
  control_->own.unlink();
  sync_ = std::make_unique<Sync>(*this);
  if (network_) start_progress_thread();
  if (settings_.verbose > 0 && rank_ == 0) print_info();
}

void Runtime::start_progress_thread() {
  if (settings_.helper == HelperMode::none) return;
  const int wakeup = network_->wakeup_fd();
  if (wakeup < 0) return;  // the layer cannot block: progress stays inside calls
  stop_progress_ = eventfd(0, EFD_CLOEXEC);
  kick_progress_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_progress_ < 0 || kick_progress_ < 0) fail("ARMCI_Init", "eventfd for the helper thread failed");
  progress_thread_ = std::thread([this, wakeup] { helper_loop(wakeup); });
  place_helper();
}

// Where the helper runs. The kernel tends to wake a thread on its waker's
// core, which puts the helper on the application's own core just when it
// should copy beside it (an offloaded transfer then takes as long as doing
// it inline). When the process may use more than one CPU, the helper is
// kept off the one the application thread runs on at start-up (it may
// still move there; the application, unpinned, then moves away).
void Runtime::place_helper() {
  if (settings_.helper_cpu == -2) return;  // ARMCI_HELPER_CPU=none
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  cpu_set_t chosen;
  CPU_ZERO(&chosen);
  if (settings_.helper_cpu >= 0) {
    CPU_SET(settings_.helper_cpu, &chosen);
  } else {
    if (CPU_COUNT(&allowed) < 2) return;  // bound to one core: share it
    chosen = allowed;
    const int mine = sched_getcpu();
    if (mine >= 0) CPU_CLR(mine, &chosen);
  }
  if (pthread_setaffinity_np(progress_thread_.native_handle(), sizeof chosen, &chosen) != 0 &&
      settings_.verbose > 0)
    std::fprintf(stderr, "armci: rank %d: could not place the helper thread\n", rank_);
}

// The helper serves the network while the application computes or sits in
// another library (MPI): Accs and vector messages addressed to us, the
// answers a network owes its peers, and the chunks of buffered transfers.
// While the application itself drives the network (it is waiting inside
// the library) the helper stays off it: taking turns on one layer and being
// woken by every completion would cost more than it serves (7x on put+fence
// over verbs). So it sleeps in steps and arms the network's wakeup only once
// a whole step went by without the application progressing. Steps double
// while the application stays busy (up to 64 times the first), so a long run
// of library calls costs a few wakeups a second, and start again short once
// it has gone. A buffered transfer left unfinished by a nonblocking call
// kicks it awake at once: its copies are what the application overlaps.
void Runtime::helper_loop(int wakeup) {
  const long shortest_ns = settings_.progress_idle_us * 1000;
  const long longest_ns = shortest_ns * 64;
  const bool spin = settings_.helper == HelperMode::spin;
  const auto spin_for = std::chrono::microseconds(settings_.helper_spin_us);
  long step_ns = shortest_ns;
  pollfd control[2] = {{stop_progress_, POLLIN, 0}, {kick_progress_, POLLIN, 0}};
  pollfd all[3] = {{wakeup, POLLIN, 0}, {stop_progress_, POLLIN, 0}, {kick_progress_, POLLIN, 0}};
  auto drain_kicks = [this] {
    std::uint64_t count;
    while (read(kick_progress_, &count, sizeof count) == sizeof count) {
    }
  };
  // One chunk per transfer at a time, the lock released in between: the
  // application's own calls get through while the helper copies.
  auto serve_once = [this] { return network_->progress() + advance_background(1); };
  std::uint64_t seen = application_progress_.load(std::memory_order_relaxed);
  for (;;) {
    const timespec step{step_ns / 1000000000, step_ns % 1000000000};
    const int ready = ppoll(control, 2, &step, nullptr);
    if (ready > 0 && (control[0].revents & POLLIN)) return;  // asked to stop
    const bool kicked = ready > 0 && (control[1].revents & POLLIN);
    if (kicked) drain_kicks();
    const std::uint64_t now = application_progress_.load(std::memory_order_relaxed);
    if (!kicked && now != seen && buffered_active_.load() == 0) {
      seen = now;
      step_ns = std::min(step_ns * 2, longest_ns);
      continue;
    }
    step_ns = shortest_ns;
    for (;;) {
      // Back to stepping once the application drives the network itself and
      // left no pipeline work (a later kick wakes the step at once).
      if (application_progress_.load(std::memory_order_relaxed) != seen && buffered_active_.load() == 0) break;
      seen = application_progress_.load(std::memory_order_relaxed);
      if (spin) {
        // Spin-then-block: poll the network for a while before sleeping, a
        // core's worth of latency saved when events come close together.
        auto until = std::chrono::steady_clock::now() + spin_for;
        while (std::chrono::steady_clock::now() < until) {
          std::unique_lock lock(network_mutex_, std::try_to_lock);
          if (lock && serve_once() > 0) until = std::chrono::steady_clock::now() + spin_for;
          if (application_progress_.load(std::memory_order_relaxed) != seen && buffered_active_.load() == 0) break;
        }
      }
      for (;;) {
        std::lock_guard guard(network_mutex_);
        if (serve_once() == 0) break;
      }
      bool armed;
      {
        std::lock_guard guard(network_mutex_);
        if (serve_once() > 0) continue;
        armed = network_->arm_wakeup();
      }
      if (!armed) continue;
      if (poll(all, 3, -1) < 0 && errno != EINTR) return;
      if (all[1].revents & POLLIN) return;
      if (all[2].revents & POLLIN) drain_kicks();
    }
    seen = application_progress_.load(std::memory_order_relaxed);
  }
}

void Runtime::stop_progress_thread() {
  if (!progress_thread_.joinable()) return;
  const std::uint64_t one = 1;
  if (write(stop_progress_, &one, sizeof one) != sizeof one) std::perror("armci: stopping the progress thread");
  progress_thread_.join();
  close(stop_progress_);
  close(kick_progress_);
  stop_progress_ = kick_progress_ = -1;
}

void Runtime::build_topology(const std::vector<std::string>& hosts) {
  // Ranks of one host, in rank order, cut into virtual nodes of vnode_size.
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < size_; ++r) by_host[hosts[static_cast<std::size_t>(r)]].push_back(r);
  node_of_.assign(static_cast<std::size_t>(size_), -1);
  node_members_.clear();
  for (int r = 0; r < size_; ++r) {
    if (node_of_[static_cast<std::size_t>(r)] >= 0) continue;
    const auto& same_host = by_host[hosts[static_cast<std::size_t>(r)]];
    const std::size_t group =
        settings_.vnode_size > 0 ? static_cast<std::size_t>(settings_.vnode_size) : same_host.size();
    for (std::size_t start = 0; start < same_host.size(); start += group) {
      std::vector<int> members(same_host.begin() + static_cast<std::ptrdiff_t>(start),
                               same_host.begin() + static_cast<std::ptrdiff_t>(std::min(start + group, same_host.size())));
      const int node = static_cast<int>(node_members_.size());
      for (int m : members) node_of_[static_cast<std::size_t>(m)] = node;
      node_members_.push_back(std::move(members));
    }
  }
  // Nodes are numbered in the order of their lowest rank.
  std::vector<int> order(node_members_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return node_members_[static_cast<std::size_t>(a)][0] < node_members_[static_cast<std::size_t>(b)][0]; });
  std::vector<std::vector<int>> sorted;
  for (int old : order) sorted.push_back(node_members_[static_cast<std::size_t>(old)]);
  node_members_ = std::move(sorted);
  for (std::size_t n = 0; n < node_members_.size(); ++n)
    for (int m : node_members_[n]) node_of_[static_cast<std::size_t>(m)] = static_cast<int>(n);

  peer_kind_.assign(static_cast<std::size_t>(size_), PeerKind::network);
  has_network_peers_ = false;
  neighbours_share_memory_ = false;
  for (int r = 0; r < size_; ++r) {
    PeerKind& kind = peer_kind_[static_cast<std::size_t>(r)];
    if (r == rank_) kind = PeerKind::self;
    else if (settings_.shared_memory && node_of(r) == node_of(rank_)) kind = PeerKind::shared_memory;
    if (kind == PeerKind::shared_memory) neighbours_share_memory_ = true;
    if (kind == PeerKind::network) has_network_peers_ = true;
  }
}

void Runtime::print_info() const {
  std::fprintf(stderr, "armci: info: %d processes, bootstrap %s, %d node(s)\n", size_,
               bootstrap_->kind(), node_count());
  std::string text = settings_.describe();
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    std::fprintf(stderr, "armci: info: setting %s\n", text.substr(at, end - at).c_str());
    at = end + 1;
  }
  std::fprintf(stderr, "armci: info: network layer: %s\n",
               network_ ? network_->capabilities().name.c_str() : "none (all peers local)");
  std::fprintf(stderr, "armci: info: Rmw and mutexes: %s\n",
               atomics_over_network() ? "network atomics, to every rank (self included)"
                                      : "CPU atomics on node-shared memory");
  if (network_) {
    // The protocol table: which path a transfer to a network peer takes.
    const platform::Capabilities& caps = network_->capabilities();
    std::fprintf(stderr, "armci: info: layer capabilities: max_sge %zu, max_inline %zu, max_message %zu, %s\n",
                 caps.max_sge, caps.max_inline, caps.max_message,
                 caps.needs_local_registration ? "zero-copy needs registered local memory"
                                               : "registers local memory itself");
    const char* contiguous = "direct (the layer's own protocols)";
    if (settings_.protocol == ProtocolChoice::buffered) contiguous = "buffered (pool of registered buffers) always";
    else if (settings_.protocol == ProtocolChoice::direct) contiguous = "direct always";
    else if (caps.needs_local_registration) contiguous = "buffered from unregistered memory up to ARMCI_BUFFERED_MAX, direct above";
    std::fprintf(stderr, "armci: info: contiguous put/get: %s; pool %zu x %zu bytes\n", contiguous,
                 settings_.buffer_count, settings_.buffer_chunk);
    switch (settings_.strided) {
      case StridedChoice::automatic:
        std::fprintf(stderr,
                     "armci: info: strided/vector: buffered (vector messages of %zu bytes) for pieces up to %zu "
                     "bytes, %s, direct above\n",
                     batch_limit_, settings_.strided_buffered_max,
                     caps.max_sge > 1 ? ("host-assisted put/get up to " + std::to_string(settings_.strided_host_max) +
                                         " bytes").c_str()
                                      : "no host-assisted (the layer has no SGE lists)");
        break;
      default:
        std::fprintf(stderr, "armci: info: strided/vector: %s for every piece size (host-assisted: put/get only)\n",
                     to_string(settings_.strided));
    }
    std::fprintf(stderr, "armci: info: aggregate handles: pieces up to %zu bytes packed, larger ones sent at once\n",
                 settings_.aggregate_piece_max);
    if (!progress_thread_.joinable())
      std::fprintf(stderr, "armci: info: offload to the helper: none (no helper thread)\n");
    else if (caps.software_device)
      std::fprintf(stderr, "armci: info: offload to the helper: nonblocking transfers from %zu bytes (software device)\n",
                   settings_.offload_min_software);
    else if (caps.copies_on_caller_same_host)
      std::fprintf(stderr, "armci: info: offload to the helper: nonblocking transfers from %zu bytes to peers on this host\n",
                   settings_.offload_min);
  }
  for (int n = 0; n < node_count(); ++n) {
    std::string members;
    for (int m : node_members(n)) members += (members.empty() ? "" : ",") + std::to_string(m);
    std::fprintf(stderr, "armci: info: node %d: ranks %s\n", n, members.c_str());
  }
  for (int r = 0; r < size_; ++r)
    std::fprintf(stderr, "armci: info: rank 0 -> rank %d: %s\n", r, to_string(peer_kind(r)));
}

void Runtime::shut_down() {
  all_fence();
  // Explicit requests the user never waited for may still be writing into
  // memory that is about to go.
  requests_.for_each_busy([&](Requests::Id, ExplicitRequest& request) {
    send_batches(request.batches, request.completion);
    progress_until([&] { return request.completion.done(); });
  });
  finish_buffered();
  progress_until([&] { return host_active_.load() == 0; });
  barrier_only();
  for (auto& [id, allocation] : allocations_) free_allocation(*allocation);
  allocations_.clear();
  allocation_of_base_.clear();
  sync_.reset();
  // The last barrier's puts completed locally only; flush them before the
  // peers' control blocks go, and let a bootstrap fence cover the peers'
  // puts into ours.
  if (network_) {
    platform::Completion flushed;
    with_network([&](platform::Network& net) { net.flush_all(flushed); });
    wait("ARMCI_Finalize", flushed);
  }
  bootstrap_->fence();
  free_allocation(*control_);
  control_.reset();
  bootstrap_->set_progress(nullptr);
  stop_progress_thread();
  answers_.clear();
  for (auto& [id, key] : host_keys_) network_->release_remote_key(key);
  host_keys_.clear();
  exposure_cache_.reset();
  if (pool_registration_) network_->deregister_memory(pool_registration_);
  pool_registration_ = {};
  network_.reset();
  bootstrap_.reset();
}

void Runtime::cleanup_names() {
  if (control_) control_->own.unlink();
  for (auto& [id, allocation] : allocations_) allocation->own.unlink();
}

// ------------------------------------------------------------------ memory

std::unique_ptr<Allocation> Runtime::collective_allocate(std::size_t bytes, bool synchronise_with_barrier) {
  auto allocation = std::make_unique<Allocation>();
  allocation->id = next_allocation_++;
  if (bytes > 0) {
    if (neighbours_share_memory_) {
      const std::string name = "/armci-" + short_hash(bootstrap_->job_id()) + "-" +
                               std::to_string(rank_) + "-" + std::to_string(allocation->id);
      allocation->own = platform::SharedSegment::create(name, bytes);
    } else if (void* memory = has_network_peers_ ? with_network([&](platform::Network& net) {
                 return net.allocate_memory(platform::page_round(bytes), allocation->registration);
               })
                                                 : nullptr) {
      // The layer's own memory: same-host peers reached through it attach
      // it, so their transfers need nothing from this process.
      allocation->own = platform::SharedSegment::borrowed(memory, platform::page_round(bytes));
    } else {
      allocation->own = platform::SharedSegment::anonymous(bytes);
    }
  }
  Writer record;
  record.add<std::uint64_t>(reinterpret_cast<std::uintptr_t>(allocation->own.address()));
  record.add<std::uint64_t>(bytes);
  std::vector<std::byte> packed;
  if (bytes > 0 && has_network_peers_) {
    with_network([&](platform::Network& net) {
      if (!allocation->registration)
        allocation->registration = net.register_memory(allocation->own.address(), allocation->own.size());
      packed = net.pack_remote_key(allocation->registration);
    });
    allocation->own_key = packed;
  }
  record.add_bytes(packed);
  auto records = bootstrap_->allgather(record.bytes);

  const auto n = static_cast<std::size_t>(size_);
  allocation->bases.assign(n, 0);
  allocation->sizes.assign(n, 0);
  allocation->mapped.resize(n);
  allocation->keys.assign(n, platform::RemoteKey{});
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    Reader in(records[i]);
    allocation->bases[i] = in.take<std::uint64_t>();
    allocation->sizes[i] = in.take<std::uint64_t>();
    auto key = in.take_bytes();
    if (allocation->sizes[i] == 0) continue;
    if (peer_kind(r) == PeerKind::shared_memory) {
      const std::string name = "/armci-" + short_hash(bootstrap_->job_id()) + "-" + std::to_string(r) +
                               "-" + std::to_string(allocation->id);
      allocation->mapped[i] = platform::SharedSegment::attach(name, allocation->sizes[i]);
    }
    // Self and neighbours too when atomics go through the network.
    if (peer_kind(r) == PeerKind::network || (atomics_over_network() && !key.empty()))
      allocation->keys[i] = with_network([&](platform::Network& net) { return net.unpack_remote_key(r, key); });
  }
  // Every neighbour has mapped my segment once all have passed this point;
  // then its name can go, so a crash leaves nothing behind in /dev/shm.
  if (synchronise_with_barrier) {
    barrier_only();
    allocation->own.unlink();
  }
  return allocation;
}

void Runtime::free_allocation(Allocation& allocation) {
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (allocation.keys[i])
      with_network([&](platform::Network& net) { net.release_remote_key(allocation.keys[i]); });
    allocation.keys[i] = {};
    allocation.mapped[i].release();
  }
  if (allocation.registration)
    with_network([&](platform::Network& net) { net.deregister_memory(allocation.registration); });
  allocation.registration = {};
  allocation.own.release();
}

std::vector<void*> Runtime::allocate(const char* call, std::size_t bytes) {
  std::unique_ptr<Allocation> allocation;
  try {
    allocation = collective_allocate(bytes, true);
  } catch (const std::exception& e) {
    fail(call, "allocating %zu bytes failed: %s", bytes, e.what());
  }
  std::vector<void*> bases(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    bases[i] = reinterpret_cast<void*>(allocation->bases[i]);
    if (allocation->sizes[i] == 0) continue;
    Region region;
    region.base = allocation->bases[i];
    region.size = allocation->sizes[i];
    region.allocation = allocation->id;
    region.key = allocation->keys[i];
    if (peer_kind(r) == PeerKind::self) region.local = static_cast<std::byte*>(allocation->own.address());
    else if (peer_kind(r) == PeerKind::shared_memory)
      region.local = static_cast<std::byte*>(allocation->mapped[i].address());
    {
      std::lock_guard guard(network_mutex_);  // the progress thread reads the table
      regions_.insert(r, region);
    }
  }
  if (allocation->sizes[static_cast<std::size_t>(rank_)] > 0)
    allocation_of_base_[allocation->bases[static_cast<std::size_t>(rank_)]] = allocation->id;
  const std::uint64_t id = allocation->id;
  allocations_[id] = std::move(allocation);
  return bases;
}

void Runtime::release(const char* call, void* my_base) {
  // A rank whose part was empty passes NULL, so the ranks agree on which
  // allocation goes by exchanging what each of them knows.
  std::int64_t mine = -1;
  if (my_base != nullptr) {
    auto found = allocation_of_base_.find(reinterpret_cast<std::uintptr_t>(my_base));
    if (found == allocation_of_base_.end())
      fail(call, "argument 'ptr' (%p) is not the base of a live ARMCI_Malloc allocation", my_base);
    mine = static_cast<std::int64_t>(found->second);
  }
  all_fence();
  auto all = bootstrap_->allgather(std::as_bytes(std::span(&mine, 1)));
  std::int64_t chosen = -1;
  for (int r = 0; r < size_; ++r) {
    std::int64_t theirs;
    std::memcpy(&theirs, all[static_cast<std::size_t>(r)].data(), sizeof theirs);
    if (theirs < 0) continue;
    if (chosen >= 0 && theirs != chosen)
      fail(call, "argument 'ptr': ranks passed parts of different allocations (rank %d's differs)", r);
    chosen = theirs;
  }
  if (chosen < 0) fail(call, "argument 'ptr': every rank passed NULL");
  auto found = allocations_.find(static_cast<std::uint64_t>(chosen));
  if (found == allocations_.end()) fail(call, "argument 'ptr': allocation %lld is unknown here", static_cast<long long>(chosen));
  if (my_base == nullptr && found->second->sizes[static_cast<std::size_t>(rank_)] != 0)
    fail(call, "argument 'ptr' is NULL but this rank's part of the allocation is not empty");
  Allocation& allocation = *found->second;
  for (int r = 0; r < size_; ++r)
    if (allocation.sizes[static_cast<std::size_t>(r)] > 0)
    {
      std::lock_guard guard(network_mutex_);
      regions_.erase(r, allocation.bases[static_cast<std::size_t>(r)]);
    }
  if (my_base != nullptr) allocation_of_base_.erase(reinterpret_cast<std::uintptr_t>(my_base));
  free_allocation(allocation);
  allocations_.erase(found);
}

// ------------------------------------------------------------------ transfers

const Region& Runtime::find_region(const char* call, const char* argument, int proc,
                                   const void* address, std::size_t bytes) const {
  const Region* region = regions_.find(proc, reinterpret_cast<std::uintptr_t>(address), bytes);
  if (region == nullptr) [[unlikely]]
    fail(call, "argument '%s' (%p, %zu bytes) is not inside any ARMCI_Malloc region of rank %d",
         argument, address, bytes, proc);
  return *region;
}

void Runtime::order_after_puts(int proc, bool full_flush) {
  // Blocking operations to one target must be seen in order; a put from the
  // network layer is not ordered with what follows it unless told so.
  auto& unordered = puts_unordered_[static_cast<std::size_t>(proc)];
  if (!unordered) return;
  if (full_flush) {
    platform::Completion flushed;
    with_network([&](platform::Network& net) { net.flush(proc, flushed); });
    wait("ARMCI_Fence", flushed);
  } else {
    with_network([&](platform::Network& net) { net.order(proc); });
  }
  unordered = 0;
}

void Runtime::start_put(const char* call, const void* src, void* dst, std::size_t bytes, int proc,
                        platform::Completion& completion, VectorBatches* batches, bool buffered) {
  if (bytes == 0) return;
  const Region& region = find_region(call, "dst", proc, dst, bytes);
  if (region.local != nullptr) [[likely]] {
    copy_bytes(region.local + (reinterpret_cast<std::uintptr_t>(dst) - region.base), src, bytes);
    return;
  }
  const auto remote = reinterpret_cast<std::uintptr_t>(dst);
  if (batches != nullptr && (buffered || bytes <= settings_.aggregate_piece_max)) {
    batch_add(VectorBatch::Kind::put, 0, AccScale{}, static_cast<const std::byte*>(src), remote, bytes, proc,
              completion, *batches);
    return;
  }
  order_after_puts(proc, false);
  if (use_offload(proc, bytes)) {
    start_buffered(false, static_cast<std::byte*>(const_cast<void*>(src)), remote, region.key, bytes, proc,
                   completion, true);
  } else if (use_buffered(src, bytes)) {
    start_buffered(false, static_cast<std::byte*>(const_cast<void*>(src)), remote, region.key, bytes, proc,
                   completion);
  } else {
    platform::LocalSegment segment{const_cast<void*>(src), bytes};
    with_network([&](platform::Network& net) { net.put(proc, std::span(&segment, 1), remote, region.key, completion); });
  }
  puts_unordered_[static_cast<std::size_t>(proc)] = 1;
}

void Runtime::start_get(const char* call, const void* src, void* dst, std::size_t bytes, int proc,
                        platform::Completion& completion, VectorBatches* batches, bool buffered) {
  if (bytes == 0) return;
  const Region& region = find_region(call, "src", proc, src, bytes);
  if (region.local != nullptr) [[likely]] {
    copy_bytes(dst, region.local + (reinterpret_cast<std::uintptr_t>(src) - region.base), bytes);
    return;
  }
  const auto remote = reinterpret_cast<std::uintptr_t>(src);
  if (batches != nullptr && (buffered || bytes <= settings_.aggregate_piece_max)) {
    batch_add(VectorBatch::Kind::get, 0, AccScale{}, static_cast<const std::byte*>(dst), remote, bytes, proc,
              completion, *batches);
    return;
  }
  order_after_puts(proc, true);
  if (use_offload(proc, bytes)) {
    start_buffered(true, static_cast<std::byte*>(dst), remote, region.key, bytes, proc, completion, true);
    return;
  }
  if (use_buffered(dst, bytes)) {
    start_buffered(true, static_cast<std::byte*>(dst), remote, region.key, bytes, proc, completion);
    return;
  }
  platform::LocalSegment segment{dst, bytes};
  with_network([&](platform::Network& net) { net.get(proc, std::span(&segment, 1), remote, region.key, completion); });
}

void Runtime::apply_acc_locally(ControlBlock& control, int datatype, const AccScale& scale, void* dst,
                                const void* src, std::size_t bytes, std::uintptr_t target_address) {
  // Stripes by 4 KiB page of the target address, taken in ascending order so
  // two Accs over overlapping ranges cannot deadlock.
  const std::uintptr_t first = target_address >> 12;
  const std::uintptr_t last = (target_address + bytes - 1) >> 12;
  std::uint64_t stripes = 0;
  if (last - first + 1 >= ControlBlock::kAccStripes) {
    stripes = ~std::uint64_t{0};
  } else {
    for (std::uintptr_t page = first; page <= last; ++page)
      stripes |= std::uint64_t{1} << (page % ControlBlock::kAccStripes);
  }
  for (std::uint64_t left = stripes; left != 0; left &= left - 1) {
    auto& lock = control.acc_lock[__builtin_ctzll(left)];
    Backoff backoff;
    while (lock.load(std::memory_order_relaxed) != 0 || lock.exchange(1, std::memory_order_acquire) != 0)
      backoff.pause();
  }
  accumulate(datatype, scale, dst, src, bytes);
  for (std::uint64_t left = stripes; left != 0; left &= left - 1)
    control.acc_lock[__builtin_ctzll(left)].store(0, std::memory_order_release);
}

void Runtime::start_acc(const char* call, int datatype, const AccScale& scale, const void* src, void* dst,
                        std::size_t bytes, int proc, platform::Completion& completion, VectorBatches* batches,
                        bool buffered) {
  if (bytes == 0) return;
  const Region& region = find_region(call, "dst", proc, dst, bytes);
  const auto target = reinterpret_cast<std::uintptr_t>(dst);
  if (region.local != nullptr) {
    apply_acc_locally(*control_local_[static_cast<std::size_t>(proc)], datatype, scale,
                      region.local + (target - region.base), src, bytes, target);
    return;
  }
  if (batches != nullptr && (buffered || bytes <= settings_.aggregate_piece_max)) {
    batch_add(VectorBatch::Kind::acc, datatype, scale, static_cast<const std::byte*>(src), target, bytes, proc,
              completion, *batches);
    return;
  }
  // The target applies it: the network cannot add floating-point data.
  order_after_puts(proc, true);
  const auto* bytes_in = static_cast<const std::byte*>(src);
  for (std::size_t done = 0; done < bytes; done += acc_chunk_) {
    const std::size_t piece = std::min(acc_chunk_, bytes - done);
    wire::AccHeader header{};
    header.address = target + done;
    header.token = reinterpret_cast<std::uintptr_t>(&completion);
    header.bytes = piece;
    header.datatype = datatype;
    header.scale = scale;
    make_room_for_message(proc);
    // One count for the ack, on top of the send's own local completion.
    completion.pending.fetch_add(1, std::memory_order_relaxed);
    acks_pending_[static_cast<std::size_t>(proc)].fetch_add(1, std::memory_order_relaxed);
    with_network([&](platform::Network& net) {
      net.send_message(proc, wire::kAcc, std::as_bytes(std::span(&header, 1)), std::span(bytes_in + done, piece),
                       completion);
    });
  }
}

void Runtime::handle_acc_message(int source, std::span<const std::byte> header_bytes,
                                 std::span<const std::byte> payload) {
  wire::AccHeader header;
  std::memcpy(&header, header_bytes.data(), sizeof header);
  // The origin checked the range, but a target trusts only its own table.
  // Runs on whichever thread drives progress: no write to the lookup cache.
  const Region* region = regions_.find_without_caching(rank_, header.address, header.bytes);
  if (region == nullptr || payload.size() != header.bytes || acc_element_size(header.datatype) == 0)
    fail("ARMCI_Acc", "argument 'dst' of a request from rank %d (0x%llx, %llu bytes) is not inside "
                      "any ARMCI_Malloc region of rank %d",
         source, static_cast<unsigned long long>(header.address),
         static_cast<unsigned long long>(header.bytes), rank_);
  apply_acc_locally(*control_local_[static_cast<std::size_t>(rank_)], header.datatype, header.scale,
                    region->local + (header.address - region->base), payload.data(), header.bytes,
                    header.address);
  send_ack(source, header.token, wire::kAckCompletion);
}

void Runtime::wait(const char* call, platform::Completion& completion) {
  progress_until([&] { return completion.done(); });
  if (int error = completion.error.load(); error != 0) [[unlikely]]
    fail(call, "the network layer reported: %s", network_ ? network_->error_string(error).c_str() : "?");
}

bool Runtime::test(const char* call, platform::Completion& completion, bool advance_pipelines) {
  if (!completion.done()) progress_network(advance_pipelines);
  if (!completion.done()) return false;
  if (int error = completion.error.load(); error != 0) [[unlikely]]
    fail(call, "the network layer reported: %s", network_ ? network_->error_string(error).c_str() : "?");
  return true;
}

void Runtime::wait_proc(int proc) { wait("ARMCI_WaitProc", implicit_completion(proc)); }

void Runtime::wait_all() {
  for (int r = 0; r < size_; ++r) wait("ARMCI_WaitAll", implicit_completion(r));
}

void Runtime::fence(int proc) {
  if (peer_kind(proc) != PeerKind::network) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  finish_buffered();
  platform::Completion flushed;
  with_network([&](platform::Network& net) { net.flush(proc, flushed); });
  wait("ARMCI_Fence", flushed);
  progress_until([&] { return acks_pending_[static_cast<std::size_t>(proc)].load(std::memory_order_acquire) == 0; });
  puts_unordered_[static_cast<std::size_t>(proc)] = 0;
}

void Runtime::all_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!network_) return;
  finish_buffered();
  platform::Completion flushed;
  with_network([&](platform::Network& net) { net.flush_all(flushed); });
  wait("ARMCI_AllFence", flushed);
  for (int r = 0; r < size_; ++r) {
    progress_until([&] { return acks_pending_[static_cast<std::size_t>(r)].load(std::memory_order_acquire) == 0; });
    puts_unordered_[static_cast<std::size_t>(r)] = 0;
  }
}

// ------------------------------------------------------------------ barrier

void Runtime::signal_barrier(int to, int round, std::uint64_t epoch) {
  if (ControlBlock* block = control_local_[static_cast<std::size_t>(to)]) {
    block->barrier[round].store(epoch, std::memory_order_release);
    return;
  }
  barrier_source_[round] = epoch;
  const std::uintptr_t remote = control_->bases[static_cast<std::size_t>(to)] + offsetof(ControlBlock, barrier) +
                                static_cast<std::size_t>(round) * sizeof(std::uint64_t);
  platform::LocalSegment segment{&barrier_source_[round], sizeof(std::uint64_t)};
  platform::Completion sent;
  with_network([&](platform::Network& net) {
    net.put(to, std::span(&segment, 1), remote, control_->keys[static_cast<std::size_t>(to)], sent);
  });
  wait("ARMCI_Barrier", sent);
}

void Runtime::barrier_only() {
  if (size_ == 1) return;
  // Dissemination: after round k every rank has heard, directly or not,
  // from the 2^(k+1) ranks before it.
  const std::uint64_t epoch = ++barrier_epoch_;
  ControlBlock& mine = *control_local_[static_cast<std::size_t>(rank_)];
  int round = 0;
  for (int distance = 1; distance < size_; distance <<= 1, ++round) {
    signal_barrier((rank_ + distance) % size_, round, epoch);
    progress_until([&] { return mine.barrier[round].load(std::memory_order_acquire) >= epoch; });
  }
}

void Runtime::barrier() {
  all_fence();
  barrier_only();
}

}  // namespace armci
