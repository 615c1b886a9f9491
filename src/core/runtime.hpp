// The runtime: peers, global memory, requests and completion. It chooses,
// per target, between a direct copy into node-shared memory and the network
// layer; it knows no particular network.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <list>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "buffers/registration_cache.hpp"
#include "platform/network.hpp"
#include "platform/pmix/bootstrap.hpp"
#include "platform/shm/segment.hpp"
#include <cstring>

#include "src/core/acc.hpp"
#include "src/core/region_table.hpp"
#include "src/core/request_table.hpp"
#include "src/core/settings.hpp"

namespace armci {

class Sync;  // Rmw, mutexes, notify, Put_flag (src/core/sync.hpp)

// Waiting loops spin briefly, then give the core away: with more ranks than
// cores the rank being waited for may need this very core.
class Backoff {
 public:
  void pause();

 private:
  unsigned spins_ = 0;
  std::chrono::steady_clock::time_point since_{};
};

enum class PeerKind : std::uint8_t { self, shared_memory, network };
const char* to_string(PeerKind kind);

// Synchronisation state each rank exposes to the others; in node-shared
// memory where neighbours map it, registered with the network otherwise.
struct ControlBlock {
  static constexpr int kBarrierRounds = 32;
  static constexpr int kAccStripes = 64;
  // Round k of the dissemination barrier: the epoch the round's partner
  // reached. One writer per word, so a plain store (or put) is enough.
  std::atomic<std::uint64_t> barrier[kBarrierRounds];
  // Stripes of the target's memory (by 4 KiB page) that an Acc holds while
  // it applies: the target's own message handler and node neighbours take
  // the same locks, so Accs stay atomic per element whoever applies them.
  std::atomic<std::uint32_t> acc_lock[kAccStripes];
};

// Small pieces to one network peer that travel together as one vector
// message: the operations of an aggregate handle, and strided or vector
// transfers on the buffered protocol. The target's helper applies them.
struct VectorBatch {
  enum class Kind : std::uint8_t { put, get, acc };
  Kind kind = Kind::put;
  int peer = -1;
  int datatype = 0;
  AccScale scale{};
  std::uint32_t count = 0;
  // put/acc: records of (address, length, data padded to 8 bytes);
  // get: records of (address, length) only.
  std::vector<std::byte> payload;
  std::vector<platform::LocalSegment> destinations;  // get: where the answer goes
  std::size_t answer_bytes = 0;                      // get: bytes the answer carries

  bool matches(Kind k, int p, int type, const AccScale& s) const {
    return kind == k && peer == p && (k != Kind::acc || (datatype == type && !std::memcmp(&scale, &s, sizeof s)));
  }
};
using VectorBatches = std::vector<VectorBatch>;

struct ExplicitRequest {
  platform::Completion completion;
  int peer = -1;
  VectorBatches batches;  // an aggregate handle's operations not sent yet
  void reset() {
    completion.pending.store(0, std::memory_order_relaxed);
    completion.error.store(0, std::memory_order_relaxed);
    peer = -1;
    batches.clear();
  }
};

// A contiguous transfer on the buffered protocol: chunks flow through the
// pool of registered buffers, the copy of one overlapping the transfer of
// the one before.
struct BufferedTransfer {
  struct Chunk {
    int buffer = -1;
    std::size_t offset = 0;
    std::size_t length = 0;
    platform::Completion done;
  };
  bool is_get = false;
  bool zero_copy = false;  // offloaded: chunks move straight from/to user memory
  int peer = -1;
  std::byte* user = nullptr;
  std::uintptr_t remote = 0;
  platform::RemoteKey key{};
  std::size_t bytes = 0;
  std::size_t issued = 0;
  std::size_t finished = 0;
  platform::Completion* completion = nullptr;
  std::deque<Chunk> chunks;  // in flight, oldest first
};

// One collective allocation: every rank's part, as this process reaches it.
struct Allocation {
  std::uint64_t id = 0;
  std::vector<std::uintptr_t> bases;  // per rank; 0 for a zero-size part
  std::vector<std::size_t> sizes;
  platform::SharedSegment own;
  std::vector<platform::SharedSegment> mapped;  // neighbours' parts
  platform::MemoryHandle registration{};
  std::vector<std::byte> own_key;         // this rank's part, packed for peers
  std::vector<platform::RemoteKey> keys;  // network peers' parts
};

class Runtime {
 public:
  using Requests = RequestTable<ExplicitRequest>;

  static void initialize();
  static void finalize();
  static Runtime* get() { return instance_; }

  int rank() const { return rank_; }
  int size() const { return size_; }
  PeerKind peer_kind(int proc) const { return peer_kind_[static_cast<std::size_t>(proc)]; }
  const Settings& settings() const { return settings_; }

  // Rmw and mutexes use one mechanism per job, because network atomics need
  // not be atomic with respect to CPU atomics (verbs NICs): when any rank of
  // the job is reached through the network, every atomic goes through the
  // network layer, to self and node neighbours too; otherwise CPU atomics on
  // the shared mappings. The condition is the same at every rank.
  bool atomics_over_network() const { return has_network_peers_; }
  Sync& sync() { return *sync_; }

  // Topology: the (virtual) node of each rank.
  int node_of(int proc) const { return node_of_[static_cast<std::size_t>(proc)]; }
  int node_count() const { return static_cast<int>(node_members_.size()); }
  const std::vector<int>& node_members(int node) const {
    return node_members_[static_cast<std::size_t>(node)];
  }

  // Collective memory.
  std::vector<void*> allocate(const char* call, std::size_t bytes);
  void release(const char* call, void* my_base);

  // Transfers start here and complete through `completion` (which may
  // already be done when they return). Arguments are checked by the caller
  // except the remote range, checked here against the target's regions.
  // With `batches`, pieces to a network peer of up to
  // aggregate_piece_max bytes join a vector message there instead of
  // leaving now (aggregate handles, buffered strided transfers); pieces of
  // any size join when `buffered` is set.
  void start_put(const char* call, const void* src, void* dst, std::size_t bytes, int proc,
                 platform::Completion& completion, VectorBatches* batches = nullptr, bool buffered = false);
  void start_get(const char* call, const void* src, void* dst, std::size_t bytes, int proc,
                 platform::Completion& completion, VectorBatches* batches = nullptr, bool buffered = false);
  void start_acc(const char* call, int datatype, const AccScale& scale, const void* src, void* dst,
                 std::size_t bytes, int proc, platform::Completion& completion,
                 VectorBatches* batches = nullptr, bool buffered = false);
  // Direct protocol, several local pieces that are one contiguous range at
  // the target: one network operation gathering (put) or scattering (get)
  // them. The remote range must have been checked.
  void start_put_segments(const char* call, std::span<const platform::LocalSegment> local, void* dst,
                          std::size_t bytes, int proc, platform::Completion& completion);
  void start_get_segments(const char* call, std::span<const platform::LocalSegment> local, const void* src,
                          std::size_t bytes, int proc, platform::Completion& completion);
  // Host-assisted strided put or get to a network peer: the layout travels
  // to the target, whose helper posts the transfers between its pieces and
  // this process's (exposed) memory with gather/scatter lists.
  void start_host_strided(const char* call, bool is_get, void* local, const int* local_stride, void* remote,
                          const int* remote_stride, const int* count, int levels, int proc,
                          platform::Completion& completion);
  std::size_t network_max_sge() const { return network_ ? network_->capabilities().max_sge : 1; }
  // Sends every batch of the list (then empties it).
  void send_batches(VectorBatches& batches, platform::Completion& completion);

  // Held by the API around a nonblocking call: only those may leave their
  // data to the helper (offload); a blocking call waits anyway.
  class NonblockingScope {
   public:
    explicit NonblockingScope(Runtime& r) : r_(r) { r_.in_nonblocking_ = true; }
    ~NonblockingScope() { r_.in_nonblocking_ = false; }
    NonblockingScope(const NonblockingScope&) = delete;
    NonblockingScope& operator=(const NonblockingScope&) = delete;

   private:
    Runtime& r_;
  };

  // Nonblocking operations left unfinished: past max_pending the oldest is
  // completed, so the network's queues and buffers stay bounded however
  // many the application keeps in flight.
  void note_pending(Requests::Id id);
  void limit_implicit(int proc);

  // Fails (naming call, argument, proc) unless [address, address + bytes)
  // lies inside one ARMCI_Malloc region of proc: lets a multi-piece call
  // check its whole remote extent before it moves anything.
  void check_remote(const char* call, const char* argument, int proc, const void* address,
                    std::size_t bytes) const {
    find_region(call, argument, proc, address, bytes);
  }
  // Where [address, address + bytes) of proc lies in this process's
  // address space (self and node neighbours), nullptr for network peers;
  // fails like check_remote when the range is in no region.
  std::byte* local_mapping(const char* call, const char* argument, int proc, const void* address,
                           std::size_t bytes) const {
    const Region& region = find_region(call, argument, proc, address, bytes);
    if (region.local == nullptr) return nullptr;
    return region.local + (reinterpret_cast<std::uintptr_t>(address) - region.base);
  }

  void wait(const char* call, platform::Completion& completion);
  // advance_pipelines=false: only the layer's own progress, leaving the
  // chunks of buffered and offloaded transfers to the helper (right after
  // a nonblocking call started them).
  bool test(const char* call, platform::Completion& completion, bool advance_pipelines = true);

  platform::Completion& implicit_completion(int proc) { return implicit_[static_cast<std::size_t>(proc)]; }
  Requests& requests() { return requests_; }

  void wait_proc(int proc);
  void wait_all();
  void fence(int proc);
  void all_fence();
  void barrier();
  ~Runtime();

  // Removes shared-memory names that are still linked; safe on error paths.
  void cleanup_names();

 private:
  friend class Sync;
  Runtime() = default;
  void start_up();
  void shut_down();
  void build_topology(const std::vector<std::string>& hosts);
  std::unique_ptr<Allocation> collective_allocate(std::size_t bytes, bool synchronise_with_barrier);
  void free_allocation(Allocation& allocation);
  void barrier_only();
  void signal_barrier(int to, int round, std::uint64_t epoch);
  const Region& find_region(const char* call, const char* argument, int proc, const void* address,
                            std::size_t bytes) const;
  void apply_acc_locally(ControlBlock& control, int datatype, const AccScale& scale, void* dst,
                         const void* src, std::size_t bytes, std::uintptr_t target_address);
  void handle_acc_message(int source, std::span<const std::byte> header,
                          std::span<const std::byte> payload);
  void install_vector_handlers();
  void handle_vector_message(int source, bool is_acc, std::span<const std::byte> header,
                             std::span<const std::byte> payload);
  void handle_vector_get(int source, std::span<const std::byte> header, std::span<const std::byte> payload);
  void handle_vector_answer(int source, std::span<const std::byte> header, std::span<const std::byte> payload);
  // kind: what the token names at the origin (wire::kAck*).
  void send_ack(int source, std::uint64_t token, std::uint64_t kind);
  void handle_ack(int source, std::span<const std::byte> header);
  void batch_add(VectorBatch::Kind kind, int datatype, const AccScale& scale, const std::byte* local,
                 std::uintptr_t remote, std::size_t bytes, int proc, platform::Completion& completion,
                 VectorBatches& batches);
  void send_batch(VectorBatch& batch, platform::Completion& completion);
  // Buffered contiguous transfers.
  bool use_buffered(const void* local, std::size_t bytes) const;
  void start_buffered(bool is_get, std::byte* user, std::uintptr_t remote, platform::RemoteKey key,
                      std::size_t bytes, int proc, platform::Completion& completion, bool offload = false);
  // Offload: a nonblocking transfer whose data the layer moves with the
  // calling CPU (UCX to a peer on this host copies inside the call) is
  // handed to the helper in chunks straight from the user's memory, so the
  // copy runs on the helper's core while the application computes.
  bool use_offload(int proc, std::size_t bytes) const {
    if (!in_nonblocking_ || !progress_thread_.joinable()) return false;
    const platform::Capabilities& caps = network_->capabilities();
    if (caps.software_device) return bytes >= settings_.offload_min_software;
    return caps.copies_on_caller_same_host && same_host_[static_cast<std::size_t>(proc)] &&
           bytes >= settings_.offload_min;
  }
  // Moves every buffered transfer on: reaps finished chunks, starts up to
  // new_chunks more per transfer. network_mutex_ held.
  int advance_buffered(std::size_t new_chunks = SIZE_MAX);
  void kick_helper();
  // Host-assisted transfers.
  void handle_host_request(int source, bool is_get, std::span<const std::byte> header,
                           std::span<const std::byte> payload);
  int advance_host_operations();  // network_mutex_ held
  void finish_host_request(std::uint64_t token);
  platform::RemoteKey host_key(int source, std::span<const std::byte> packed);
  struct Exposure {
    std::vector<std::byte> packed_key;
    buffers::RegistrationCache::Lease lease;  // released when the transfer ends
  };
  Exposure expose_local(const char* call, const void* address, std::size_t bytes);
  int advance_background(std::size_t new_chunks = SIZE_MAX) {
    int events = 0;
    if (buffered_active_.load(std::memory_order_relaxed) != 0) events += advance_buffered(new_chunks);
    if (host_active_.load(std::memory_order_relaxed) != 0) events += advance_host_operations();
    return events;
  }
  // Buffered transfers still waiting for pool buffers are not on the wire
  // yet: a fence first lets them all go.
  // Messages a target must answer or ack use its receive buffers until it
  // has; past this many unanswered ones to one peer the origin waits (the
  // verbs layer's shared receive queue has 256 buffers for every peer: two
  // ranks flooding each other with a thousand requests each ended in
  // receiver-not-ready retries that took minutes under Soft-RoCE).
  static constexpr std::int64_t kMessagesInFlightPerPeer = 32;
  void make_room_for_message(int proc) {
    auto& pending = acks_pending_[static_cast<std::size_t>(proc)];
    if (pending.load(std::memory_order_acquire) >= kMessagesInFlightPerPeer)
      progress_until([&] { return pending.load(std::memory_order_acquire) < kMessagesInFlightPerPeer; });
  }
  void finish_buffered() {
    if (buffered_active_.load() != 0) progress_until([&] { return buffered_active_.load() == 0; });
  }
  void order_after_puts(int proc, bool full_flush);
  template <typename Done>
  void progress_until(Done done) {
    Backoff backoff;
    while (!done()) {
      progress_network();
      if (!done()) backoff.pause();
    }
  }
  void print_info() const;
  void start_progress_thread();
  void helper_loop(int wakeup);
  void place_helper();
  void stop_progress_thread();

  // Every call into the network layer holds network_mutex_: the progress
  // thread and the application's thread share one (serialised) layer. The
  // same-node path never takes it.
  template <typename F>
  decltype(auto) with_network(F&& f) {
    std::lock_guard guard(network_mutex_);
    return f(*network_);
  }
  void progress_network(bool advance_pipelines = true) {
    if (!network_) return;
    application_progress_.fetch_add(1, std::memory_order_relaxed);  // tells the progress thread to keep off
    if (!advance_pipelines) {
      // Right after a nonblocking call: never wait for a helper that is
      // busy copying chunks.
      std::unique_lock lock(network_mutex_, std::try_to_lock);
      if (lock) network_->progress();
      return;
    }
    std::lock_guard guard(network_mutex_);
    network_->progress();
    advance_background();
  }

  static Runtime* instance_;

  Settings settings_;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<platform::Bootstrap> bootstrap_;
  std::unique_ptr<platform::Network> network_;
  bool has_network_peers_ = false;
  std::size_t acc_chunk_ = 0;
  std::mutex network_mutex_;
  std::thread progress_thread_;
  std::atomic<std::uint64_t> application_progress_{0};
  int stop_progress_ = -1;
  int kick_progress_ = -1;                       // eventfd: pipeline work for the helper
  std::size_t batch_limit_ = 0;                  // bytes of one vector message
  // Buffered protocol: the pool and the transfers using it (network_mutex_).
  std::vector<std::byte> pool_memory_;
  platform::MemoryHandle pool_registration_{};
  std::vector<int> pool_free_;
  std::list<BufferedTransfer> buffered_;
  std::atomic<int> buffered_active_{0};
  std::deque<Requests::Id> pending_;             // explicit requests, oldest first
  std::vector<std::uint8_t> same_host_;          // per rank: on this host
  bool in_nonblocking_ = false;  // see NonblockingScope
  // Answers to vector gets, kept until the network has sent them.
  struct OutgoingAnswer {
    platform::Completion sent;
    std::vector<std::byte> data;
  };
  std::deque<std::unique_ptr<OutgoingAnswer>> answers_;
  // Host-assisted transfers this process serves as the target.
  struct HostOperation {
    platform::Completion done;
    int source = -1;
    std::uint64_t token = 0;
  };
  std::deque<std::unique_ptr<HostOperation>> host_operations_;
  std::atomic<int> host_active_{0};
  std::map<std::pair<int, std::vector<std::byte>>, platform::RemoteKey> host_keys_;
  std::map<const void*, std::vector<std::byte>> host_payloads_;  // keys sent, until the ack
  // Local memory exposed to peers for host-assisted transfers, and the
  // packed key of each of its registrations (network_mutex_).
  std::unique_ptr<buffers::RegistrationCache> exposure_cache_;
  std::map<void*, std::vector<std::byte>> exposure_keys_;
  std::vector<PeerKind> peer_kind_;
  std::vector<int> node_of_;
  std::vector<std::vector<int>> node_members_;
  bool neighbours_share_memory_ = false;  // some other rank maps my segments

  RegionTable regions_;
  std::map<std::uint64_t, std::unique_ptr<Allocation>> allocations_;
  std::map<std::uintptr_t, std::uint64_t> allocation_of_base_;
  std::uint64_t next_allocation_ = 1;

  std::unique_ptr<Allocation> control_;
  std::vector<ControlBlock*> control_local_;  // per rank, where mapped
  std::uint64_t barrier_epoch_ = 0;
  std::uint64_t barrier_source_[ControlBlock::kBarrierRounds] = {};

  std::unique_ptr<platform::Completion[]> implicit_;
  std::unique_ptr<std::atomic<std::int64_t>[]> acks_pending_;
  std::vector<std::uint8_t> puts_unordered_;  // per network peer
  Requests requests_;
  std::unique_ptr<Sync> sync_;
};

}  // namespace armci
