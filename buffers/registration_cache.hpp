// Keeps user buffers registered with the network across calls, so that the
// direct protocol pays for a registration once per buffer rather than once per
// operation. Network-agnostic: registrations are opaque handles made and
// dropped by callbacks. Entries die when the memory under them is released
// (memory_hooks), when they fall out of the byte budget (least recently used
// first) or when a wider registration covers them; an entry still in use
// dies only for lookups and is deregistered once its last lease is released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace armci::buffers {

class RegistrationCache {
 public:
  struct Callbacks {
    // Registers [address, address + length) (whole pages); nullptr on failure.
    // Called without the cache's lock held, so it may allocate and free.
    std::function<void*(void* address, std::size_t length)> register_range;
    std::function<void(void* registration)> deregister_range;
  };

  struct Entry;

  // A registration that covers the acquired range, valid until release().
  struct Lease {
    void* registration = nullptr;
    Entry* entry = nullptr;
    explicit operator bool() const { return entry != nullptr; }
  };

  struct Stats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t invalidations = 0;  // entries killed by released memory
    std::uint64_t evictions = 0;      // entries retired for the byte budget
    std::uint64_t failures = 0;       // register_range returned nullptr
    std::size_t live_entries = 0;     // found by acquire
    std::size_t live_bytes = 0;
    std::size_t dead_entries = 0;     // still registered, waiting for collect()
  };

  // max_bytes bounds the registered bytes of live entries that nobody uses;
  // entries in use are never evicted, so it may be exceeded while they are.
  RegistrationCache(Callbacks callbacks, std::size_t max_bytes);
  ~RegistrationCache();  // deregisters everything, leased or not
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // A lease on a registration of whole pages covering [address, address +
  // length); an empty lease when the range cannot be registered or is empty.
  // Deregisters retired entries first (see collect()).
  Lease acquire(const void* address, std::size_t length);
  void release(const Lease& lease);

  // Memory in [begin, end) is being released: entries that hold any of it are
  // no longer found. Safe from any thread and from inside free(): it neither
  // calls the callbacks nor waits on anything but the cache's lock.
  void invalidate(std::uintptr_t begin, std::uintptr_t end);

  // Deregisters retired entries that nobody uses any more. On the owner's
  // thread (progress, or acquire itself); never from a release hook.
  void collect();

  Stats stats() const;

 private:
  struct List {
    Entry* head = nullptr;
    Entry* tail = nullptr;
  };
  struct Pending;

  static void on_release(void* self, std::uintptr_t begin, std::uintptr_t end);

  Entry* find_covering(std::uintptr_t begin, std::uintptr_t end) const;
  void retire(Entry* entry);  // lookup -> dead list
  void evict_over_budget();
  void update_bounds();
  Entry* take_collectable();
  void deregister_chain(Entry* chain);

  Callbacks callbacks_;
  std::size_t max_bytes_;
  std::uintptr_t page_;
  int listener_ = -1;

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Entry*> by_start_;  // live entries; none contains another
  List lru_;                                   // live entries, most recent first
  List dead_;                                  // retired, still registered
  Pending* pending_ = nullptr;                 // registrations in flight
  Stats stats_;
};

}  // namespace armci::buffers
