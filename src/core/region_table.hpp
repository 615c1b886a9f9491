// Maps (rank, remote address) to the ARMCI_Malloc region that holds it:
// every operation looks up its target range here, so a bad address is caught
// before anything moves.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "platform/network.hpp"

namespace armci {

struct Region {
  std::uintptr_t base = 0;       // address in the owner's address space
  std::size_t size = 0;
  std::byte* local = nullptr;    // this process's mapping, when it has one
  platform::RemoteKey key{};     // the owner's registration, for network peers
  std::uint64_t allocation = 0;  // which collective allocation it belongs to
  // A node neighbour's part that lives in its private memory (the /dev/shm
  // fallback): local is nullptr and the network layer reaches it.
  bool network_memory = false;

  bool contains(std::uintptr_t address, std::size_t length) const {
    return address >= base && address - base <= size && length <= size - (address - base);
  }
};

// The mapped region a lookup of one rank found last, for the same-node
// fast path: after a copy of a few KiB the L1 cache no longer holds the
// table's vectors, and every dependent load on the way to the copy's
// address costs a miss. One flat entry per rank is one load. An empty
// entry (local == nullptr) yields no address.
struct alignas(32) RecentRegion {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  std::byte* local = nullptr;  // this process's mapping of base

  // This process's address of [address, address + length), or nullptr when
  // the range is not inside the region (or the entry is empty).
  std::byte* local_address(std::uintptr_t address, std::size_t length) const {
    const std::uintptr_t offset = address - base;
    if (address < base || offset > size || length > size - offset) return nullptr;
    return local + offset;
  }
};

class RegionTable {
 public:
  // The number of ranks is fixed: Transfers keeps the address of recent().
  explicit RegionTable(int ranks)
      : by_rank_(static_cast<std::size_t>(ranks)), recent_(new RecentRegion[static_cast<std::size_t>(ranks)]) {}

  // Every change to a rank's regions empties its recent entry, so that the
  // fast path never reaches a freed region or an old size of a new one.
  // Regions of one rank never overlap (they are that rank's live memory).
  void insert(int rank, const Region& region) {
    auto& list = by_rank_[static_cast<std::size_t>(rank)].regions;
    auto at = std::lower_bound(list.begin(), list.end(), region.base,
                               [](const Region& r, std::uintptr_t b) { return r.base < b; });
    list.insert(at, region);
    by_rank_[static_cast<std::size_t>(rank)].last = 0;
    recent_[static_cast<std::size_t>(rank)] = {};
  }

  bool erase(int rank, std::uintptr_t base) {
    auto& entry = by_rank_[static_cast<std::size_t>(rank)];
    auto at = std::lower_bound(entry.regions.begin(), entry.regions.end(), base,
                               [](const Region& r, std::uintptr_t b) { return r.base < b; });
    if (at == entry.regions.end() || at->base != base) return false;
    entry.regions.erase(at);
    entry.last = 0;
    recent_[static_cast<std::size_t>(rank)] = {};
    return true;
  }

  void clear(int rank) {
    auto& entry = by_rank_[static_cast<std::size_t>(rank)];
    entry.regions.clear();
    entry.last = 0;
    recent_[static_cast<std::size_t>(rank)] = {};
  }

  // The region of `rank` that holds all of [address, address + length), or
  // nullptr. O(1) when the same region as last time, O(log n) otherwise.
  // A mapped region found becomes the rank's recent entry.
  const Region* find(int rank, std::uintptr_t address, std::size_t length) const {
    const auto& entry = by_rank_[static_cast<std::size_t>(rank)];
    const auto& list = entry.regions;
    const Region* found = nullptr;
    if (entry.last < list.size() && list[entry.last].contains(address, length)) {
      found = &list[entry.last];
    } else {
      auto after = std::upper_bound(list.begin(), list.end(), address,
                                    [](std::uintptr_t a, const Region& r) { return a < r.base; });
      if (after == list.begin() || !(after - 1)->contains(address, length)) return nullptr;
      found = &*(after - 1);
      entry.last = static_cast<std::size_t>(found - list.data());
    }
    if (found->local != nullptr) recent_[static_cast<std::size_t>(rank)] = {found->base, found->size, found->local};
    return found;
  }

  // One entry per rank, at an address that never changes (the owner's
  // thread only, like find()).
  const RecentRegion* recent() const { return recent_.get(); }

  // The same answer as find(), for a thread other than the owner's: it
  // leaves the owner's one-entry cache alone.
  const Region* find_without_caching(int rank, std::uintptr_t address, std::size_t length) const {
    const auto& list = by_rank_[static_cast<std::size_t>(rank)].regions;
    auto after = std::upper_bound(list.begin(), list.end(), address,
                                  [](std::uintptr_t a, const Region& r) { return a < r.base; });
    if (after == list.begin() || !(after - 1)->contains(address, length)) return nullptr;
    return &*(after - 1);
  }

  std::size_t count(int rank) const { return by_rank_[static_cast<std::size_t>(rank)].regions.size(); }

 private:
  struct PerRank {
    std::vector<Region> regions;
    mutable std::size_t last = 0;  // the region the previous lookup found
  };
  std::vector<PerRank> by_rank_;
  std::unique_ptr<RecentRegion[]> recent_;
};

}  // namespace armci
