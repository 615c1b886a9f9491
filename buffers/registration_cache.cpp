#include "buffers/registration_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

#include "buffers/memory_hooks.hpp"

namespace armci::buffers {

// An entry registers whole pages but dies only when its anchor, the bytes it
// was acquired for, is released. glibc gives a heap page back only once no
// live block is left in it, so while the anchor is live every page of the
// entry stays (each one holds anchor bytes); keying on pages instead would let
// every free of a small neighbour kill the entry. A page-granular release
// (munmap, madvise) that touches the entry always touches its anchor too.
//
// Live entries may overlap (neighbouring heap buffers share a page, and each
// keeps its own entry rather than evicting the other's on every use), but none
// contains another: then ordering by start also orders by end, the last entry
// starting at or before an address reaches furthest, and lookup stays one
// map search.
struct RegistrationCache::Entry {
  std::uintptr_t begin = 0;  // registered pages
  std::uintptr_t end = 0;
  std::uintptr_t anchor_begin = 0;
  std::uintptr_t anchor_end = 0;
  void* handle = nullptr;
  std::uint32_t uses = 0;
  bool live = false;  // in by_start_ and lru_, else in dead_
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

// A registration made outside the lock: a release of its anchor meanwhile must
// keep it from being cached, since invalidate() could not find it.
struct RegistrationCache::Pending {
  std::uintptr_t anchor_begin = 0;
  std::uintptr_t anchor_end = 0;
  bool invalidated = false;
  Pending* prev = nullptr;
  Pending* next = nullptr;
};

namespace {

// The lock is taken from inside free() (through the release listener). Code
// holding it frees its own bookkeeping (map nodes), which must not be reported
// back into invalidate() on the same thread: that would self-deadlock.
struct Locked {
  ScopedHookBypass bypass;
  std::unique_lock<std::mutex> lock;
  explicit Locked(std::mutex& mutex) : lock(mutex) {}
};

template <class List, class Node>
void push_front(List& list, Node* node) {
  node->prev = nullptr;
  node->next = list.head;
  if (list.head != nullptr) list.head->prev = node;
  list.head = node;
  if (list.tail == nullptr) list.tail = node;
}

template <class List, class Node>
void unlink(List& list, Node* node) {
  (node->prev != nullptr ? node->prev->next : list.head) = node->next;
  (node->next != nullptr ? node->next->prev : list.tail) = node->prev;
  node->prev = node->next = nullptr;
}

bool overlaps(std::uintptr_t b1, std::uintptr_t e1, std::uintptr_t b2, std::uintptr_t e2) {
  return b1 < e2 && b2 < e1;
}

}  // namespace

RegistrationCache::RegistrationCache(Callbacks callbacks, std::size_t max_bytes)
    : callbacks_(std::move(callbacks)),
      max_bytes_(max_bytes),
      page_(static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE))) {
  if (!callbacks_.register_range || !callbacks_.deregister_range)
    throw std::invalid_argument("RegistrationCache: both callbacks are required");
  listener_ = add_release_listener(&RegistrationCache::on_release, this);
  // Without the listener it would hand out registrations of freed memory.
  if (listener_ < 0) throw std::runtime_error("RegistrationCache: no release listener slot left");
  set_release_interest(listener_, 0, 0);  // nothing cached yet
}

RegistrationCache::~RegistrationCache() {
  remove_release_listener(listener_);  // waits for invalidations in flight
  Entry* chain = nullptr;
  {
    Locked locked(mutex_);
    auto take_all = [&](List& list) {
      while (Entry* e = list.head) {
        unlink(list, e);
        e->next = chain;
        chain = e;
      }
    };
    take_all(lru_);
    take_all(dead_);
    by_start_.clear();
  }
  deregister_chain(chain);
}

void RegistrationCache::on_release(void* self, std::uintptr_t begin, std::uintptr_t end) {
  static_cast<RegistrationCache*>(self)->invalidate(begin, end);
}

RegistrationCache::Entry* RegistrationCache::find_covering(std::uintptr_t begin,
                                                           std::uintptr_t end) const {
  auto it = by_start_.upper_bound(begin);
  if (it == by_start_.begin()) return nullptr;
  Entry* e = std::prev(it)->second;
  return end <= e->end ? e : nullptr;
}

void RegistrationCache::retire(Entry* e) {
  by_start_.erase(e->begin);
  unlink(lru_, e);
  e->live = false;
  push_front(dead_, e);
  --stats_.live_entries;
  stats_.live_bytes -= e->end - e->begin;
  ++stats_.dead_entries;
}

void RegistrationCache::evict_over_budget() {
  for (Entry* e = lru_.tail; e != nullptr && stats_.live_bytes > max_bytes_;) {
    Entry* newer = e->prev;
    if (e->uses == 0) {
      retire(e);
      ++stats_.evictions;
    }
    e = newer;
  }
}

void RegistrationCache::update_bounds() {
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  if (!by_start_.empty()) {
    lo = by_start_.begin()->second->begin;
    hi = by_start_.rbegin()->second->end;  // the last to start is the last to end
  }
  for (Pending* p = pending_; p != nullptr; p = p->next) {
    lo = std::min(lo, p->anchor_begin);
    hi = std::max(hi, p->anchor_end);
  }
  if (lo >= hi) lo = hi = 0;
  // Every free() in the process would come here while the cache exists; most
  // are nowhere near a registered buffer and are filtered out before.
  set_release_interest(listener_, lo, hi);
}

RegistrationCache::Entry* RegistrationCache::take_collectable() {
  Entry* chain = nullptr;
  for (Entry* e = dead_.head; e != nullptr;) {
    Entry* next = e->next;
    if (e->uses == 0) {
      unlink(dead_, e);
      --stats_.dead_entries;
      e->next = chain;
      chain = e;
    }
    e = next;
  }
  return chain;
}

void RegistrationCache::deregister_chain(Entry* chain) {
  while (chain != nullptr) {
    Entry* next = chain->next;
    callbacks_.deregister_range(chain->handle);
    delete chain;
    chain = next;
  }
}

void RegistrationCache::collect() {
  Entry* chain;
  {
    Locked locked(mutex_);
    chain = take_collectable();
  }
  deregister_chain(chain);
}

RegistrationCache::Lease RegistrationCache::acquire(const void* address, std::size_t length) {
  const auto begin = reinterpret_cast<std::uintptr_t>(address);
  if (length == 0 || begin + length < begin || begin + length > UINTPTR_MAX - page_) return {};
  const std::uintptr_t end = begin + length;
  const std::uintptr_t page_begin = begin & ~(page_ - 1);
  const std::uintptr_t page_end = (end + page_ - 1) & ~(page_ - 1);

  Lease lease;
  Entry* chain = nullptr;
  Pending pending;
  {
    Locked locked(mutex_);
    chain = take_collectable();
    if (Entry* e = find_covering(begin, end)) {
      ++e->uses;
      unlink(lru_, e);
      push_front(lru_, e);
      ++stats_.hits;
      lease = {e->handle, e};
    } else {
      ++stats_.misses;
      pending.anchor_begin = begin;
      pending.anchor_end = end;
      pending.next = pending_;
      if (pending_ != nullptr) pending_->prev = &pending;
      pending_ = &pending;
      update_bounds();
    }
  }
  if (lease) {
    deregister_chain(chain);
    return lease;
  }

  // Outside the lock: registering may allocate and free, which reports back
  // into invalidate() on this thread.
  auto drop_pending = [&] {
    (pending.prev != nullptr ? pending.prev->next : pending_) = pending.next;
    if (pending.next != nullptr) pending.next->prev = pending.prev;
  };
  std::unique_ptr<Entry> fresh;
  void* handle = nullptr;
  try {
    deregister_chain(chain);
    fresh = std::make_unique<Entry>();  // before registering: nothing to undo
    handle = callbacks_.register_range(reinterpret_cast<void*>(page_begin), page_end - page_begin);
  } catch (...) {
    Locked locked(mutex_);
    drop_pending();  // it lives on this stack frame
    update_bounds();
    throw;
  }

  Locked locked(mutex_);  // released before `fresh` is freed, when unused
  drop_pending();
  if (handle == nullptr) {
    ++stats_.failures;
    update_bounds();
    return {};
  }
  fresh->begin = page_begin;
  fresh->end = page_end;
  fresh->anchor_begin = begin;
  fresh->anchor_end = end;
  fresh->handle = handle;
  fresh->uses = 1;
  Entry* e = fresh.release();
  if (pending.invalidated) {
    // Served to this caller only; deregistered after its release.
    push_front(dead_, e);
    ++stats_.dead_entries;
    ++stats_.invalidations;
    update_bounds();
    return {e->handle, e};
  }
  // Keep "none contains another": entries inside the new one are redundant,
  // and one containing it can only come from a racing acquire.
  auto it = by_start_.upper_bound(e->begin);
  while (it != by_start_.begin() && std::prev(it)->second->end > e->begin) --it;
  while (it != by_start_.end() && it->first < e->end) {
    Entry* old = it->second;
    ++it;
    const bool inside = old->begin >= e->begin && old->end <= e->end;
    const bool around = old->begin <= e->begin && old->end >= e->end;
    if (inside || around) retire(old);
  }
  by_start_.emplace(e->begin, e);
  e->live = true;
  push_front(lru_, e);
  ++stats_.live_entries;
  stats_.live_bytes += e->end - e->begin;
  evict_over_budget();
  update_bounds();
  return {e->handle, e};
}

void RegistrationCache::release(const Lease& lease) {
  Entry* e = lease.entry;
  if (e == nullptr) return;
  Locked locked(mutex_);
  --e->uses;
  if (e->live && e->uses == 0 && stats_.live_bytes > max_bytes_) {
    evict_over_budget();
    update_bounds();
  }
}

void RegistrationCache::invalidate(std::uintptr_t begin, std::uintptr_t end) {
  if (begin >= end) return;
  Locked locked(mutex_);
  for (Pending* p = pending_; p != nullptr; p = p->next)
    if (overlaps(begin, end, p->anchor_begin, p->anchor_end)) p->invalidated = true;
  bool changed = false;
  // Entries reaching past `begin` sit just before the first one starting
  // after it (ends grow with starts).
  auto it = by_start_.upper_bound(begin);
  while (it != by_start_.begin() && std::prev(it)->second->end > begin) --it;
  while (it != by_start_.end() && it->first < end) {
    Entry* e = it->second;
    ++it;
    if (overlaps(begin, end, e->anchor_begin, e->anchor_end)) {
      retire(e);
      ++stats_.invalidations;
      changed = true;
    }
  }
  if (changed) update_bounds();
}

RegistrationCache::Stats RegistrationCache::stats() const {
  Locked locked(mutex_);
  return stats_;
}

}  // namespace armci::buffers
