// The interface every network layer implements (UCX, verbs). It speaks of
// peers (0..size-1), registered memory, remote keys and completions, and
// knows nothing of ARMCI. Calls are made from one thread at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace armci::platform {

// What the core may rely on when it chooses protocols.
struct Capabilities {
  std::string name;                   // "ucx", "verbs"
  std::string device;                 // what it runs on, for people: "rxe0 port 1"
  std::size_t max_sge = 1;            // local gather/scatter entries per operation
  std::size_t max_inline = 0;         // bytes a put may carry inline
  std::size_t max_message = 0;        // largest header + payload of one control message
  // Zero-copy needs local memory registered with this layer (verbs). A
  // layer that registers and caches on its own (UCX) says false, and the
  // core then leaves every transfer to it unless told otherwise.
  bool needs_local_registration = false;
  // Who moves the data. A software device (rdma_rxe, siw) does it in the
  // kernel on the posting CPU; UCX to a peer on the same host copies on the
  // calling core (shared memory). Either way a transfer needs a core, and
  // overlap needs it to be another one than the application's.
  bool software_device = false;
  bool copies_on_caller_same_host = false;
  // A put is applied at the target before anything issued after it to the
  // same peer (verbs RC: one queue pair per peer executes writes, reads,
  // atomics and sends in order), so order(peer) after puts is a no-op the
  // core need not call: one lock round per blocking put saved.
  bool puts_ordered = false;
};

// Completion of one or more operations. The caller owns it and keeps it alive
// until `pending` is zero; every operation started with it adds to `pending`
// before it returns (one, or one per piece the layer issues it as: UCX counts
// each segment, and put_notify's notification) and takes as much back when it
// completes (locally for put and send_message, with the data in place for get
// and atomics). So `pending` is the work in flight, for flow control, and zero
// means all of it completed. A failure sets `error` (first one wins) and
// still completes. (tests/unit/network_contract_test.cpp checks all of this
// interface against every layer.)
struct Completion {
  std::atomic<int> pending{0};
  std::atomic<int> error{0};
  bool done() const { return pending.load(std::memory_order_acquire) == 0; }
};

// One piece of local memory in a gather (put) or scatter (get) list.
struct LocalSegment {
  void* address;
  std::size_t length;
};

// A registration of local memory; opaque to the core.
struct MemoryHandle {
  void* impl = nullptr;
  explicit operator bool() const { return impl != nullptr; }
};

// A peer's remote key for one of its registrations, unpacked for this
// process; opaque to the core.
struct RemoteKey {
  void* impl = nullptr;
  explicit operator bool() const { return impl != nullptr; }
};

// A control message handler: runs inside progress(). `payload` is valid only
// during the call.
using MessageHandler =
    std::function<void(int source, std::span<const std::byte> header,
                       std::span<const std::byte> payload)>;

// The notifications a layer received, in all and by their value (a write
// with immediate's 32 bits), so that a waiter for the ones tagged with its
// value is not confused by others that arrive meanwhile. Counted by the
// layer's progress, read by any thread; a mutex rather than atomics because
// values are not known in advance, and a count is read once per poll.
class NotificationCounts {
 public:
  void add(std::uint32_t value) {
    std::lock_guard<std::mutex> hold(mutex_);
    ++by_value_[value];
    total_.fetch_add(1, std::memory_order_release);
  }
  std::uint64_t total() const { return total_.load(std::memory_order_acquire); }
  std::uint64_t of(std::uint32_t value) const {
    std::lock_guard<std::mutex> hold(mutex_);
    const auto it = by_value_.find(value);
    return it == by_value_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint32_t, std::uint64_t> by_value_;
  std::atomic<std::uint64_t> total_{0};
};

// One line: the capabilities the core chooses protocols from.
std::string describe(const Capabilities& caps);

class Network {
 public:
  virtual ~Network() = default;

  virtual const Capabilities& capabilities() const = 0;

  // Bootstrap: the bytes this process publishes so peers can reach it, then
  // the addresses of all peers (index = rank; empty for peers this layer will
  // not talk to). Connections may be made lazily on first use.
  virtual std::vector<std::byte> local_address() = 0;
  virtual void set_peer_addresses(std::vector<std::vector<std::byte>> addresses) = 0;

  virtual MemoryHandle register_memory(void* address, std::size_t length) = 0;
  // A registration for peers to reach this memory for a while (the origin
  // side of a host-assisted transfer). Unlike register_memory it is never
  // used for this process's own transfers: the caller deregisters it lazily,
  // after the memory may already have been unmapped and mapped again.
  virtual MemoryHandle expose_memory(void* address, std::size_t length) { return register_memory(address, length); }
  // Memory the layer allocates and registers itself, for when it reaches
  // such memory better than any other (UCX: peers on the same host attach
  // it, so their puts and gets need nothing from this process).
  // deregister_memory frees it. nullptr: the layer does not allocate.
  virtual void* allocate_memory(std::size_t length, MemoryHandle& handle) { return nullptr; }
  virtual void deregister_memory(MemoryHandle handle) = 0;
  virtual std::vector<std::byte> pack_remote_key(MemoryHandle handle) = 0;
  virtual RemoteKey unpack_remote_key(int peer, std::span<const std::byte> packed) = 0;
  virtual void release_remote_key(RemoteKey key) = 0;

  // One-sided transfers between a local gather/scatter list and a contiguous
  // remote range. Operations are not ordered among themselves unless
  // order(peer) is called between them.
  virtual void put(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
                   RemoteKey key, Completion& completion) = 0;
  virtual void get(int peer, std::span<const LocalSegment> local, std::uint64_t remote_address,
                   RemoteKey key, Completion& completion) = 0;

  // 64-bit remote atomics; the old value lands in *result.
  virtual void fetch_add(int peer, std::uint64_t remote_address, RemoteKey key,
                         std::uint64_t value, std::uint64_t* result, Completion& completion) = 0;
  virtual void compare_swap(int peer, std::uint64_t remote_address, RemoteKey key,
                            std::uint64_t expected, std::uint64_t desired, std::uint64_t* result,
                            Completion& completion) = 0;

  // A put after which the target's notification counters (all, and the
  // one of `value`) grow by one, once the data is in place (verbs: RDMA
  // write with immediate). A put the layer splits notifies once, after
  // all of its pieces.
  virtual void put_notify(int peer, std::span<const LocalSegment> local,
                          std::uint64_t remote_address, RemoteKey key, std::uint32_t value,
                          Completion& completion) = 0;
  // Thread-safe (NotificationCounts): callable without the caller's
  // network mutex, beside progress on another thread.
  virtual std::uint64_t notifications_received() const = 0;
  virtual std::uint64_t notifications_received(std::uint32_t value) const = 0;

  // Two-sided control messages to a peer's handler for `id`.
  virtual void set_message_handler(std::uint8_t id, MessageHandler handler) = 0;
  virtual void send_message(int peer, std::uint8_t id, std::span<const std::byte> header,
                            std::span<const std::byte> payload, Completion& completion) = 0;

  // Operations issued to peer before this call are applied at the target
  // before those issued after it.
  virtual void order(int peer) = 0;
  // Remote completion of everything issued to peer (or to all peers).
  virtual void flush(int peer, Completion& completion) = 0;
  virtual void flush_all(Completion& completion) = 0;

  // Text for a non-zero Completion::error of this layer.
  virtual std::string error_string(int code) const = 0;
  // The peer a non-zero Completion::error is about, or -1 when the layer's
  // codes do not say.
  virtual int error_peer(int /*code*/) const { return -1; }

  // Drives completions and handlers; returns how many events it handled.
  virtual int progress() = 0;
  // A descriptor that becomes readable when progress() has work, after
  // arm_wakeup() returned true; -1 when the layer cannot block.
  virtual int wakeup_fd() = 0;
  virtual bool arm_wakeup() = 0;
  // As arm_wakeup(), for a caller that need not hear of this process's own
  // operations completing (their starter reaps them when it waits), only of
  // what peers send and of work the layer itself has queued. A layer that
  // cannot tell them apart arms for everything.
  virtual bool arm_wakeup_for_peers() { return arm_wakeup(); }
};

}  // namespace armci::platform
