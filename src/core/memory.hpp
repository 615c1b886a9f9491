// Memory: collective allocations (every rank's part, as this process reaches
// it: mapped for self and node neighbours, a remote key for network peers),
// the region table that every operation checks its remote range against, and
// the control blocks each rank exposes for barriers and Acc locks.
//
// Owns: allocations, the segments ARMCI_Malloc parts are carved from (kept
// mapped after ARMCI_Free for later parts, dropped at shutdown), the region
// table, the control blocks, and the exchange of allocation records between
// the ranks (exchange_).
// Called by: the API's ARMCI_Malloc/Free (through the runtime), every
// protocol (find_region), message handlers at the target (find_own), Sync
// (its own collective words), the barrier (control blocks), windows
// (collective_allocate) and groups.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "platform/network.hpp"
#include "platform/shm/segment.hpp"
#include "src/core/acc.hpp"
#include "src/core/peers.hpp"
#include "src/core/progress.hpp"
#include "src/core/region_table.hpp"
#include "src/core/settings.hpp"

namespace armci {

struct PartRecord;

// Synchronisation state each rank exposes to the others; in node-shared
// memory where neighbours map it, registered with the network otherwise.
struct ControlBlock {
  static constexpr int kBarrierRounds = 32;
  // Round k of the dissemination barrier: the epoch the round's partner
  // reached. One writer per word, so a plain store (or put) is enough.
  std::atomic<std::uint64_t> barrier[kBarrierRounds];
  AccStripes acc;
};

// One collective allocation: every rank's part, as this process reaches it.
struct Allocation {
  std::uint64_t id = 0;
  // Per rank: the id under which that rank made its part (names its
  // segment). Ranks count allocations on their own: groups allocate apart.
  std::vector<std::uint64_t> ids;
  std::vector<std::uintptr_t> bases;  // per rank; 0 for a zero-size part (and outside the group)
  std::vector<std::size_t> sizes;
  // Per rank: the segment (an id of that rank's) its ARMCI_Malloc part was
  // carved from, 0 for none; the other allocations own their memory below.
  std::vector<std::uint64_t> segments;
  platform::SharedSegment own;
  std::vector<platform::SharedSegment> mapped;  // neighbours' parts
  platform::MemoryHandle registration{};
  std::vector<std::byte> own_key;         // this rank's part, packed for peers
  std::vector<platform::RemoteKey> keys;  // network peers' parts (and self's with network atomics)

  // Where rank proc's part starts in this process's address space, or
  // nullptr for a network peer.
  std::byte* local(const Peers& peers, int proc) const;
};

class Memory {
 public:
  // Collective: every rank contributes its record, gets everyone's (index
  // = rank). The bootstrap's (PMIx) at start-up, then the collectives'.
  using Exchange = std::function<std::vector<std::vector<std::byte>>(std::span<const std::byte>)>;
  // A subset of the ranks that allocates together (a group): its exchange
  // returns one record per world rank, empty outside the group; its barrier
  // spans the members only.
  struct Members {
    Exchange exchange;
    std::function<void()> barrier;
    std::vector<int> ranks;  // world ranks
  };

  // job_tag names this job's shared segments. With a network, every rank's
  // part gets a remote key, self's and neighbours' too (network atomics
  // reach every rank through the layer).
  // pids: every rank's process id (segment names carry their creator's).
  // keep_freed_bytes: how much of its freed ARMCI_Malloc parts a rank keeps
  // mapped for later allocations (ARMCI_MALLOC_KEEP). shm_fallback
  // (ARMCI_SHM_FALLBACK): whether an ARMCI_Malloc that /dev/shm cannot hold
  // falls back to network memory instead of failing, or always does.
  Memory(const Peers& peers, Progress& progress, Exchange exchange, std::string job_tag, std::vector<long> pids,
         std::size_t keep_freed_bytes, ShmFallback shm_fallback);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // Wiring: the barrier an allocation passes before its segment names go.
  void set_barrier(std::function<void()> barrier) { barrier_ = std::move(barrier); }
  // Wiring: the library's own all-gather replaces the bootstrap's once the
  // collectives exist (the bootstrap's fences cost milliseconds).
  void set_exchange(Exchange exchange) { exchange_ = std::move(exchange); }

  // ARMCI_Malloc / ARMCI_Free, collective over every rank or over members.
  // An allocation whose parts are all empty is not kept (every base is
  // NULL), and a release where every rank passes NULL does nothing.
  // A rank short of /dev/shm fails the call on every rank, unless some
  // rank keeps spare segments (ARMCI_MALLOC_KEEP): then all drop them and
  // try once more. Still short, with a network layer and shm_fallback, the
  // ranks of every node where a rank was short make their parts in private
  // memory that their neighbours reach through the network layer.
  std::vector<void*> allocate(const char* call, std::size_t bytes, const Members* members = nullptr);
  void release(const char* call, void* my_base, const Members* members = nullptr);

  // Collective allocation outside the region table, so no user operation
  // can reach it (control blocks, Sync's words; windows later). With
  // synchronise, it ends with a barrier after which its name is gone from
  // /dev/shm.
  std::unique_ptr<Allocation> collective_allocate(std::size_t bytes, bool synchronise,
                                                  const Members* members = nullptr);
  void free_allocation(Allocation& allocation);

  // The region of proc holding [address, address + bytes); fails naming
  // call, argument and proc when there is none.
  [[gnu::always_inline]] const Region& find_region(const char* call, const char* argument, int proc,
                                                  const void* address, std::size_t bytes) const {
    const Region* region = regions_.find(proc, reinterpret_cast<std::uintptr_t>(address), bytes);
    if (region == nullptr) [[unlikely]]
      region_missing(call, argument, proc, address, bytes);
    return *region;
  }
  // The same-node regions found last, one per rank (RegionTable::recent):
  // the address stays valid as long as this Memory.
  const RecentRegion* recent_regions() const { return regions_.recent(); }
  // Fails (naming call, argument, proc) unless [address, address + bytes)
  // lies inside one ARMCI_Malloc region of proc: lets a multi-piece call
  // check its whole remote extent before it moves anything.
  void check_remote(const char* call, const char* argument, int proc, const void* address,
                    std::size_t bytes) const {
    find_region(call, argument, proc, address, bytes);
  }
  // Where [address, address + bytes) of proc lies in this process's address
  // space (self and node neighbours), nullptr for network peers; fails like
  // check_remote when the range is in no region.
  std::byte* local_mapping(const char* call, const char* argument, int proc, const void* address,
                           std::size_t bytes) const {
    const Region& region = find_region(call, argument, proc, address, bytes);
    if (region.local == nullptr) return nullptr;
    return region.local + (reinterpret_cast<std::uintptr_t>(address) - region.base);
  }
  // How this process reaches proc's part `region`: a node neighbour's part
  // made in private memory (the /dev/shm fallback) through the network
  // layer, like a network peer on this host. Every transfer chooses its
  // protocol by this, so routing is per region, not per peer.
  PeerKind route(int proc, const Region& region) const {
    return region.network_memory ? PeerKind::network_host : peers_.kind(proc);
  }
  // Some operation to proc may travel through the network layer: proc is a
  // network peer, or a neighbour with a part in network memory. Fences,
  // notifications and handles ask this instead of the peer kind.
  bool reached_through_network(int proc) const {
    return peers_.reached_by_network(proc) || network_regions_[static_cast<std::size_t>(proc)] != 0;
  }
  // This rank's region holding the range, or nullptr: for requests arriving
  // from peers, on whichever thread drives progress (it leaves the owner's
  // lookup cache alone).
  const Region* find_own(std::uintptr_t address, std::size_t bytes) const {
    return regions_.find_without_caching(peers_.rank(), address, bytes);
  }
  // The packed key of this rank's part that holds region, or empty.
  const std::vector<std::byte>* own_key(const Region& region) const;

  // Control blocks: made at start-up (collective), before any barrier
  // exists, so a fence of the bootstrap (everyone_mapped) tells when every
  // neighbour has mapped them and their names can go.
  void create_control_blocks(const std::function<void()>& everyone_mapped);
  ControlBlock* control(int proc) const { return control_local_[static_cast<std::size_t>(proc)]; }
  ControlBlock& own_control() const { return *control(peers_.rank()); }
  // Where a field of proc's block is, for a network put.
  std::uintptr_t control_address(int proc, std::size_t offset) const {
    return control_->bases[static_cast<std::size_t>(proc)] + offset;
  }
  platform::RemoteKey control_key(int proc) const { return control_->keys[static_cast<std::size_t>(proc)]; }

  // A dead rank's regions leave the table (return mode, at an API entry):
  // a transfer to it then fails its lookup, where region_missing names the
  // death, so the hot path tests nothing more.
  void forget_rank(int rank);

  // Frees every allocation (shutdown, after the last barrier); the control
  // blocks go last, by free_control_blocks().
  void free_all();
  void free_control_blocks();
  // Removes shared-memory names that are still linked; safe on error paths.
  void cleanup_names();
  // Removes every name of this job made by these ranks (same host only):
  // dead neighbours cannot remove their own.
  void remove_names_of(const std::vector<int>& ranks);

 private:
  // One of this rank's segments that ARMCI_Malloc parts are carved from.
  // ARMCI_Free keeps it (up to keep_freed_bytes_ of them) for a later part
  // it fits; the ranks that mapped it or unpacked its key keep those too, so
  // reusing it costs no system call, no registration and no key exchange.
  struct OwnSegment {
    platform::SharedSegment memory;
    platform::MemoryHandle registration{};
    std::vector<std::byte> packed_key;
    std::vector<bool> known_by;  // by world rank: holds a mapping or key of it
    // Private memory, not in /dev/shm (the fallback): neighbours hold a key
    // of it, never a mapping.
    bool network_memory = false;
  };
  // A rank's segment as this process reaches it (self's too, for its key).
  struct PeerSegment {
    platform::SharedSegment mapped;  // node neighbours'
    platform::RemoteKey key{};       // with a network
  };
  // A segment for an ARMCI_Malloc part of bytes, spare or new (made = true:
  // named in /dev/shm until the allocation's barrier); network_memory: in
  // private memory that neighbours reach through the network layer.
  std::uint64_t take_segment(std::uint64_t id, std::size_t bytes, const std::vector<bool>& members, bool& made,
                             bool network_memory);
  // ARMCI_Free of a part of segment id: kept spare, or (destroy) gone.
  bool should_destroy(std::uint64_t id, const std::vector<bool>& members) const;
  // Some rank outside members holds a mapping or key of segment id.
  bool should_keep_for_others(std::uint64_t id, const std::vector<bool>& members) const;
  void give_back_segment(std::uint64_t id, bool destroy);
  void drop_peer_segment(PeerSegment& segment);
  // One try of allocate(). nullopt: it failed and may be tried again,
  // because some rank had spare segments to give back (may_retry; then
  // fall_back stays empty) or, with may_fall_back, because ranks were short
  // of /dev/shm: fall_back then holds, by node, where the next try makes
  // network memory. A try with fall_back set makes it on those nodes.
  std::optional<std::vector<void*>> try_allocate(const char* call, std::size_t bytes, const Members* members,
                                                 bool may_retry, bool may_fall_back, std::vector<bool>& fall_back);
  // Says once per process, on the lowest member rank of each node that
  // falls back, that its parts now travel through the network layer.
  void warn_fall_back(const char* call, std::size_t bytes, const std::vector<bool>& nodes,
                      const std::vector<std::optional<PartRecord>>& parts);
  // This rank's part of a try: a segment taken (spare or new) or why not.
  PartRecord make_own_part(std::uint64_t id, std::size_t bytes, const std::vector<bool>& mask, bool network_memory);
  // After a try that some rank failed: true when it is worth another (spare
  // segments to give back, or, with may_fall_back, ranks short of /dev/shm:
  // fall_back then says by node where the next try makes network memory);
  // false adds to failures why no fallback was taken.
  bool retry_after_failure(const char* call, std::size_t bytes, const std::vector<std::optional<PartRecord>>& parts,
                           bool may_retry, bool may_fall_back, std::vector<bool>& fall_back, std::string& failures);
  // Rank's segment as this process reaches it (mapped and unpacked when
  // the part is in a new one); nullptr for self without a network.
  const PeerSegment* reach_part(const char* call, int rank, const PartRecord& part);
  // The allocation into the region table and the allocations; its bases.
  std::vector<void*> publish(std::unique_ptr<Allocation> allocation, const std::vector<std::byte*>& local,
                             const std::vector<bool>& network_regions, std::uintptr_t own_base);
  // Collective: every spare segment whose holders all take part goes, and
  // the holders' mappings and keys of it, so its /dev/shm is free again.
  void release_spares(const Members* members);
  std::vector<bool> member_mask(const Members* members) const;

  [[noreturn]] static void region_missing(const char* call, const char* argument, int proc, const void* address,
                                          std::size_t bytes);
  std::string segment_name(int proc, std::uint64_t id) const;
  std::string shm_space_message(const platform::ShmSpaceError& e) const;
  // A new node-shared segment for this rank: in /dev/shm, or where /dev/shm
  // is short and ARMCI_SHM_FALLBACK=memfd, outside it.
  platform::SharedSegment make_shared_segment(std::uint64_t id, std::size_t bytes);
  // Says once per job, on the lowest rank that made one, that segments
  // were made outside /dev/shm. names: each rank's segment name, by rank.
  void warn_outside_shm(const std::vector<std::string>& names);

  const Peers& peers_;
  Progress& progress_;
  Exchange exchange_;
  std::string job_tag_;
  std::vector<long> pids_;
  // The allocation being made (named in /dev/shm, not yet in allocations_):
  // an error on the way still removes its names.
  std::uint64_t allocating_ = 0;
  std::function<void()> barrier_;

  RegionTable regions_;
  std::map<std::uint64_t, std::unique_ptr<Allocation>> allocations_;
  std::map<std::uintptr_t, std::uint64_t> allocation_of_base_;
  std::uint64_t next_allocation_ = 1;

  std::size_t keep_freed_bytes_;
  ShmFallback shm_fallback_;
  bool warned_fall_back_ = false;
  bool warned_outside_shm_ = false;
  // Per rank: its live regions in network memory although it is a node
  // neighbour (reached_through_network).
  std::vector<std::size_t> network_regions_;
  std::map<std::uint64_t, OwnSegment> own_segments_;          // by id
  std::multimap<std::size_t, std::uint64_t> spare_segments_;  // ids by size, not in use
  std::size_t spare_bytes_ = 0;
  std::map<std::pair<int, std::uint64_t>, PeerSegment> peer_segments_;  // by rank and its id

  std::unique_ptr<Allocation> control_;
  std::vector<ControlBlock*> control_local_;  // per rank, where mapped
};

}  // namespace armci
