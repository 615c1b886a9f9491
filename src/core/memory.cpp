#include "src/core/memory.hpp"

#include <algorithm>

#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "src/core/allocation_record.hpp"
#include "src/core/error.hpp"
#include "src/core/peer_failure.hpp"
#include "src/core/record.hpp"
#include "src/core/segment_names.hpp"

namespace armci {

std::byte* Allocation::local(const Peers& peers, int proc) const {
  switch (peers.kind(proc)) {
    case PeerKind::self: return static_cast<std::byte*>(own.address());
    case PeerKind::shared_memory: return static_cast<std::byte*>(mapped[static_cast<std::size_t>(proc)].address());
    case PeerKind::network_host:
    case PeerKind::network: break;
  }
  return nullptr;
}

namespace {

// Every rank's part, empty until its record is read.
void size_parts(Allocation& allocation, std::size_t n) {
  allocation.ids.assign(n, 0);
  allocation.bases.assign(n, 0);
  allocation.sizes.assign(n, 0);
  allocation.keys.assign(n, platform::RemoteKey{});
}

void take_part(Allocation& allocation, std::size_t i, const PartRecord& part) {
  allocation.ids[i] = part.id;
  allocation.bases[i] = part.base;
  allocation.sizes[i] = part.bytes;
}

// The members' failures joined, so every rank fails with the same text.
std::string joined_failures(const std::vector<std::optional<PartRecord>>& parts) {
  std::string failures;
  for (const auto& part : parts) {
    if (!part || part->failure.empty()) continue;
    if (!failures.empty()) failures += "; ";
    failures += part->failure;
  }
  return failures;
}

}  // namespace

Memory::Memory(const Peers& peers, Progress& progress, Exchange exchange, std::string job_tag, std::vector<long> pids,
               std::size_t keep_freed_bytes, ShmFallback shm_fallback)
    : peers_(peers),
      progress_(progress),
      exchange_(std::move(exchange)),
      job_tag_(std::move(job_tag)),
      pids_(std::move(pids)),
      regions_(peers.size()),
      keep_freed_bytes_(keep_freed_bytes),
      shm_fallback_(shm_fallback),
      network_regions_(static_cast<std::size_t>(peers.size()), 0) {}

Memory::~Memory() = default;

void Memory::region_missing(const char* call, const char* argument, int proc, const void* address,
                            std::size_t bytes) {
  if (peer_failure_known() && is_dead(proc)) peer_dead(proc);
  fail(call, "argument '%s' (%p, %zu bytes) is not inside any ARMCI_Malloc region of rank %d", argument, address,
       bytes, proc);
}

std::string Memory::shm_space_message(const platform::ShmSpaceError& e) const {
  return "rank " + std::to_string(peers_.rank()) + " could not reserve " + std::to_string(e.asked()) +
         " bytes of shared memory: /dev/shm has " + std::to_string(e.left()) +
         " bytes free (make /dev/shm larger, e.g. docker run --shm-size, or set ARMCI_SHM=0 so that "
         "ARMCI_Malloc memory comes from the network layer instead)";
}

platform::SharedSegment Memory::make_shared_segment(std::uint64_t id, std::size_t bytes) {
  try {
    return platform::SharedSegment::create(segment_name(peers_.rank(), id), bytes);
  } catch (const platform::ShmSpaceError&) {
    if (shm_fallback_ != ShmFallback::memfd) throw;
    // Still shared memory, at full speed, only not bounded by /dev/shm's
    // size; if even that cannot be reserved, the /dev/shm error stands.
    try {
      return platform::SharedSegment::create_outside_shm(bytes);
    } catch (const platform::ShmSpaceError&) {
    }
    throw;
  }
}

void Memory::warn_outside_shm(const std::vector<std::string>& names) {
  if (warned_outside_shm_) return;
  for (std::size_t r = 0; r < names.size(); ++r) {
    if (!names[r].starts_with("/proc/")) continue;
    warned_outside_shm_ = true;
    if (static_cast<int>(r) == peers_.rank())
      std::fprintf(stderr,
                   "armci: rank %d: /dev/shm is too small (%zu bytes free): shared segments are made outside "
                   "it, in memory files that neighbours map through /proc (as fast; counted as this process's "
                   "memory; ARMCI_SHM_FALLBACK=error makes this an error). Said once.\n",
                   peers_.rank(), platform::shm_space_left());
    return;
  }
}

std::string Memory::segment_name(int proc, std::uint64_t id) const {
  return segment_names::name(job_tag_, pids_[static_cast<std::size_t>(proc)], proc, id);
}

// ------------------------------------------------------------------ collective allocations

std::unique_ptr<Allocation> Memory::collective_allocate(std::size_t bytes, bool synchronise,
                                                        const Members* members) {
  auto allocation = std::make_unique<Allocation>();
  allocation->id = next_allocation_++;
  allocating_ = allocation->id;
  const bool network = progress_.has_network();
  // A rank that cannot make its part says why in its record, so every rank
  // fails the same call (none returns memory a neighbour never got) and
  // what the others made goes with their unwinding.
  std::string failure;
  if (bytes > 0 && peers_.neighbours_share_memory()) {
    try {
      allocation->own = make_shared_segment(allocation->id, bytes);
    } catch (const platform::ShmSpaceError& e) {
      failure = shm_space_message(e);
    } catch (const std::exception& e) {
      failure = "rank " + std::to_string(peers_.rank()) + " could not make its shared segment: " + e.what();
    }
  } else if (bytes > 0) {
    if (void* memory = network ? progress_.with_network([&](platform::Network& net) {
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
  PartRecord mine;
  mine.failure = std::move(failure);
  mine.id = allocation->id;
  mine.base = reinterpret_cast<std::uintptr_t>(allocation->own.address());
  mine.bytes = bytes;
  if (bytes > 0 && network) {
    progress_.with_network([&](platform::Network& net) {
      if (!allocation->registration)
        allocation->registration = net.register_memory(allocation->own.address(), allocation->own.size());
      mine.key = net.pack_remote_key(allocation->registration);
    });
    allocation->own_key = mine.key;
  }
  mine.name = allocation->own.name();
  const auto parts = PartRecord::decode_all(members ? members->exchange(mine.encode()) : exchange_(mine.encode()));
  if (std::string failures = joined_failures(parts); !failures.empty()) {
    free_allocation(*allocation);
    throw std::runtime_error(failures);
  }

  const auto n = static_cast<std::size_t>(peers_.size());
  size_parts(*allocation, n);
  allocation->mapped.resize(n);
  std::vector<std::string> names(n);
  for (int r = 0; r < peers_.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (!parts[i]) continue;  // outside the group
    take_part(*allocation, i, *parts[i]);
    names[i] = parts[i]->name;
    if (allocation->sizes[i] == 0) continue;
    if (peers_.kind(r) == PeerKind::shared_memory)
      allocation->mapped[i] = platform::SharedSegment::attach(names[i], allocation->sizes[i]);
    // With a network every rank packs a key, and every key is unpacked:
    // self's and neighbours' too, for network atomics.
    if (!parts[i]->key.empty())
      allocation->keys[i] =
          progress_.with_network([&](platform::Network& net) { return net.unpack_remote_key(r, parts[i]->key); });
  }
  // Every neighbour has mapped my segment once all have passed this point;
  // then its name can go, so a crash leaves nothing behind in /dev/shm.
  if (synchronise) {
    if (members) members->barrier();
    else barrier_();
    allocation->own.unlink();
  }
  warn_outside_shm(names);
  allocating_ = 0;
  return allocation;
}

void Memory::free_allocation(Allocation& allocation) {
  for (std::size_t i = 0; i < allocation.keys.size(); ++i) {
    if (allocation.keys[i])
      progress_.with_network([&](platform::Network& net) { net.release_remote_key(allocation.keys[i]); });
    allocation.keys[i] = {};
    allocation.mapped[i].release();
  }
  if (allocation.registration)
    progress_.with_network([&](platform::Network& net) { net.deregister_memory(allocation.registration); });
  allocation.registration = {};
  allocation.own.release();
}

// ------------------------------------------------------------------ ARMCI_Malloc / ARMCI_Free

std::vector<bool> Memory::member_mask(const Members* members) const {
  std::vector<bool> mask(static_cast<std::size_t>(peers_.size()), members == nullptr);
  if (members)
    for (int r : members->ranks) mask[static_cast<std::size_t>(r)] = true;
  return mask;
}

std::uint64_t Memory::take_segment(std::uint64_t id, std::size_t bytes, const std::vector<bool>& members,
                                   bool& made, bool network_memory) {
  const std::size_t need = platform::page_round(bytes);
  // A spare segment up to twice the size, of the kind asked (a fallback
  // part stays out of /dev/shm; a shared part stays in reach of the CPU),
  // that every member still reaches.
  for (auto it = spare_segments_.lower_bound(need); it != spare_segments_.end() && it->first <= 2 * need; ++it) {
    OwnSegment& spare = own_segments_.at(it->second);
    bool reached = spare.network_memory == network_memory;
    for (std::size_t r = 0; r < members.size(); ++r) reached &= !members[r] || spare.known_by[r];
    if (!reached) continue;
    const std::uint64_t found = it->second;
    spare_bytes_ -= it->first;
    spare_segments_.erase(it);
    // As zero-filled as a fresh segment: no part shows an earlier one's data.
    std::memset(spare.memory.address(), 0, bytes);
    made = false;
    return found;
  }
  OwnSegment segment;
  segment.known_by = members;
  segment.network_memory = network_memory;
  const bool network = progress_.has_network();
  if (network_memory) {
    // Not the layer's allocate_memory: UCX may place that in /dev/shm
    // too, without reserving it.
    segment.memory = platform::SharedSegment::anonymous(bytes);
  } else if (peers_.neighbours_share_memory()) {
    segment.memory = make_shared_segment(id, bytes);
  } else if (void* memory = network ? progress_.with_network([&](platform::Network& net) {
               return net.allocate_memory(need, segment.registration);
             })
                                    : nullptr) {
    // The layer's own memory: same-host peers reached through it attach
    // it, so their transfers need nothing from this process.
    segment.memory = platform::SharedSegment::borrowed(memory, need);
  } else {
    segment.memory = platform::SharedSegment::anonymous(bytes);
  }
  if (network)
    progress_.with_network([&](platform::Network& net) {
      if (!segment.registration)
        segment.registration = net.register_memory(segment.memory.address(), segment.memory.size());
      segment.packed_key = net.pack_remote_key(segment.registration);
    });
  own_segments_.emplace(id, std::move(segment));
  made = true;
  return id;
}

bool Memory::should_keep_for_others(std::uint64_t id, const std::vector<bool>& members) const {
  const OwnSegment& segment = own_segments_.at(id);
  for (std::size_t r = 0; r < members.size(); ++r)
    if (segment.known_by[r] && !members[r]) return true;
  return false;
}

bool Memory::should_destroy(std::uint64_t id, const std::vector<bool>& members) const {
  // Only a release that every holder of a mapping or key takes part in can
  // tell them all to drop theirs; otherwise it stays spare.
  if (should_keep_for_others(id, members)) return false;
  return spare_bytes_ + own_segments_.at(id).memory.size() > keep_freed_bytes_;
}

void Memory::give_back_segment(std::uint64_t id, bool destroy) {
  auto found = own_segments_.find(id);
  if (!destroy) {
    spare_bytes_ += found->second.memory.size();
    spare_segments_.emplace(found->second.memory.size(), id);
    return;
  }
  if (found->second.registration)
    progress_.with_network([&](platform::Network& net) { net.deregister_memory(found->second.registration); });
  own_segments_.erase(found);
}

void Memory::drop_peer_segment(PeerSegment& segment) {
  if (segment.key)
    progress_.with_network([&](platform::Network& net) { net.release_remote_key(segment.key); });
  segment.key = {};
  segment.mapped.release();
}

std::vector<void*> Memory::allocate(const char* call, std::size_t bytes, const Members* members) {
  std::vector<bool> fall_back;
  if (shm_fallback_ == ShmFallback::always && progress_.has_network() && peers_.neighbours_share_memory()) {
    fall_back.assign(static_cast<std::size_t>(peers_.node_count()), true);
    return std::move(*try_allocate(call, bytes, members, false, false, fall_back));
  }
  if (auto bases = try_allocate(call, bytes, members, true, true, fall_back)) return std::move(*bases);
  if (fall_back.empty()) {
    release_spares(members);
    if (auto bases = try_allocate(call, bytes, members, false, true, fall_back)) return std::move(*bases);
  }
  return std::move(*try_allocate(call, bytes, members, false, false, fall_back));
}

void Memory::warn_fall_back(const char* call, std::size_t bytes, const std::vector<bool>& nodes,
                            const std::vector<std::optional<PartRecord>>& parts) {
  const int node = peers_.node_of(peers_.rank());
  if (warned_fall_back_ || !nodes[static_cast<std::size_t>(node)]) return;
  warned_fall_back_ = true;
  for (int r = 0; r < peers_.rank(); ++r)
    if (parts[static_cast<std::size_t>(r)] && peers_.node_of(r) == node) return;
  std::fprintf(stderr,
               "armci: rank %d: %s: /dev/shm is too small for this node's parts (%zu bytes here): they are made "
               "in private memory that neighbours reach through the network layer (slower; "
               "ARMCI_SHM_FALLBACK=error makes this an error). Said once.\n",
               peers_.rank(), call, bytes);
}

void Memory::release_spares(const Members* members) {
  const std::vector<bool> mask = member_mask(members);
  std::vector<std::uint64_t> mine;
  for (const auto& [size, id] : spare_segments_)
    if (!should_keep_for_others(id, mask)) mine.push_back(id);
  RecordWriter record;
  record.add<std::uint64_t>(mine.size());
  for (std::uint64_t id : mine) record.add<std::uint64_t>(id);
  auto records = members ? members->exchange(record.bytes) : exchange_(record.bytes);
  for (int r = 0; r < peers_.size(); ++r) {
    if (records[static_cast<std::size_t>(r)].empty()) continue;  // outside the group
    RecordReader in(records[static_cast<std::size_t>(r)]);
    for (auto n = in.take<std::uint64_t>(); n > 0; --n) {
      auto reached = peer_segments_.find({r, in.take<std::uint64_t>()});
      if (reached == peer_segments_.end()) continue;
      drop_peer_segment(reached->second);
      peer_segments_.erase(reached);
    }
  }
  for (auto it = spare_segments_.begin(); it != spare_segments_.end();) {
    if (std::find(mine.begin(), mine.end(), it->second) == mine.end()) {
      ++it;
      continue;
    }
    spare_bytes_ -= it->first;
    give_back_segment(it->second, true);
    it = spare_segments_.erase(it);
  }
  // A segment's pages are free once its last mapping is gone: everyone's.
  if (members) members->barrier();
  else barrier_();
}

PartRecord Memory::make_own_part(std::uint64_t id, std::size_t bytes, const std::vector<bool>& mask,
                                 bool network_memory) {
  PartRecord mine;
  mine.id = id;
  mine.network_memory = network_memory;
  if (bytes > 0) {
    try {
      mine.segment = take_segment(id, bytes, mask, mine.new_segment, network_memory);
    } catch (const platform::ShmSpaceError& e) {
      mine.failure = shm_space_message(e);
      mine.short_of_shm = true;
    } catch (const std::exception& e) {
      mine.failure = "rank " + std::to_string(peers_.rank()) + " could not make its shared segment: " + e.what();
    }
  }
  mine.spare_bytes = spare_bytes_;
  if (mine.segment == 0) return mine;
  const OwnSegment& own = own_segments_.at(mine.segment);
  mine.base = reinterpret_cast<std::uintptr_t>(own.memory.address());
  mine.bytes = bytes;
  mine.capacity = own.memory.size();
  // Keys and names go with new segments only: the holders keep those of
  // spare ones.
  if (mine.new_segment) {
    mine.key = own.packed_key;
    mine.name = own.memory.name();
  }
  return mine;
}

std::optional<std::vector<void*>> Memory::try_allocate(const char* call, std::size_t bytes, const Members* members,
                                                       bool may_retry, bool may_fall_back, std::vector<bool>& fall_back) {
  auto allocation = std::make_unique<Allocation>();
  allocation->id = next_allocation_++;
  allocating_ = allocation->id;
  const std::vector<bool> mask = member_mask(members);
  // The whole node falls back together, so that every neighbour's part is
  // either mapped or reached through the network, whatever rank was short.
  const bool network_memory =
      !fall_back.empty() && fall_back[static_cast<std::size_t>(peers_.node_of(peers_.rank()))];
  // A rank that cannot make its part says why in its record, so every rank
  // fails the same call (none returns memory a neighbour never got).
  const PartRecord mine = make_own_part(allocation->id, bytes, mask, network_memory);
  // This rank's part is in the table before any peer can know of it: a
  // peer leaves the exchange (or the barrier) while this rank is still
  // reading the records, and its first request through the network (a
  // vector message, an Acc) is looked up here by the helper.
  if (mine.segment != 0) {
    Region own;
    own.base = mine.base;
    own.size = bytes;
    own.allocation = allocation->id;
    own.local = reinterpret_cast<std::byte*>(mine.base);
    std::lock_guard guard(progress_.mutex());
    regions_.insert(peers_.rank(), own);
  }
  std::vector<std::optional<PartRecord>> parts;
  try {
    parts = PartRecord::decode_all(members ? members->exchange(mine.encode()) : exchange_(mine.encode()));
  } catch (const std::exception& e) {
    // A peer's death is the likelier cause of a failed exchange: say so.
    probe_liveness();
    fail(call, "allocating %zu bytes failed: %s", bytes, e.what());
  }
  if (std::string failures = joined_failures(parts); !failures.empty()) {
    if (mine.segment != 0) {
      {
        std::lock_guard guard(progress_.mutex());
        regions_.erase(peers_.rank(), mine.base);
      }
      give_back_segment(mine.segment, mine.new_segment);
    }
    if (retry_after_failure(call, bytes, parts, may_retry, may_fall_back, fall_back, failures)) {
      allocating_ = 0;
      return std::nullopt;
    }
    // Every rank read the same records: the failure is theirs, not a death.
    // (A neighbour that failed first may be gone already; probing here
    // would name its exit instead.)
    fail(call, "allocating %zu bytes failed: %s", bytes, failures.c_str());
  }

  const auto n = static_cast<std::size_t>(peers_.size());
  size_parts(*allocation, n);
  allocation->segments.assign(n, 0);
  std::vector<std::byte*> local(n, nullptr);
  std::vector<bool> network_regions(n, false);
  std::vector<std::string> names(n);
  bool any_made = false;
  for (int r = 0; r < peers_.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (!parts[i]) continue;  // outside the group
    const PartRecord& part = *parts[i];
    take_part(*allocation, i, part);
    allocation->segments[i] = part.segment;
    names[i] = part.name;
    any_made |= part.new_segment;
    if (part.bytes == 0) continue;
    // A neighbour's part in its private memory: reached through the
    // network layer by its key, like a network peer's (self copies its own).
    network_regions[i] = part.network_memory && peers_.kind(r) == PeerKind::shared_memory;
    const PeerSegment* reached = reach_part(call, r, part);
    if (reached == nullptr) continue;
    allocation->keys[i] = reached->key;
    if (peers_.kind(r) == PeerKind::shared_memory && !network_regions[i])
      local[i] = static_cast<std::byte*>(reached->mapped.address());
  }
  if (mine.segment != 0) {
    local[static_cast<std::size_t>(peers_.rank())] = reinterpret_cast<std::byte*>(mine.base);
    allocation->own_key = own_segments_.at(mine.segment).packed_key;
  }
  // Every neighbour has mapped a new segment once all have passed this
  // point; then its name can go, so a crash leaves nothing behind in
  // /dev/shm. Allocations from spare segments need no barrier: the
  // exchange already waited for every member.
  if (any_made) {
    if (members) members->barrier();
    else barrier_();
    if (mine.new_segment) own_segments_.at(mine.segment).memory.unlink();
  }
  warn_outside_shm(names);
  allocating_ = 0;
  return publish(std::move(allocation), local, network_regions, mine.base);
}

bool Memory::retry_after_failure(const char* call, std::size_t bytes, const std::vector<std::optional<PartRecord>>& parts,
                                 bool may_retry, bool may_fall_back, std::vector<bool>& fall_back,
                                 std::string& failures) {
  bool any_spares = false, only_short = true;
  std::vector<bool> short_nodes(static_cast<std::size_t>(peers_.node_count()), false);
  for (std::size_t r = 0; r < parts.size(); ++r) {
    if (!parts[r]) continue;
    any_spares |= parts[r]->spare_bytes != 0;
    if (parts[r]->failure.empty()) continue;
    if (parts[r]->short_of_shm) short_nodes[static_cast<std::size_t>(peers_.node_of(static_cast<int>(r)))] = true;
    else only_short = false;
  }
  if (may_retry && any_spares) return true;
  // Every rank decides from the same records, so all fall back or none.
  const bool network = progress_.has_network();
  if (may_fall_back && only_short && shm_fallback_ != ShmFallback::error && network) {
    fall_back = std::move(short_nodes);
    warn_fall_back(call, bytes, fall_back, parts);
    return true;
  }
  // Why it did not fall back, when it might have.
  if (only_short && fall_back.empty()) {
    if (shm_fallback_ == ShmFallback::error)
      failures += " (ARMCI_SHM_FALLBACK=error: no fallback to network memory)";
    else if (!network)
      failures += " (no fallback to network memory, ARMCI_SHM_FALLBACK=network: no network layer runs in this "
                  "job, whose ranks all share memory)";
  }
  return false;
}

const Memory::PeerSegment* Memory::reach_part(const char* call, int rank, const PartRecord& part) {
  const std::pair<int, std::uint64_t> which{rank, part.segment};
  if (part.new_segment) {
    PeerSegment& reached = peer_segments_[which];
    if (peers_.kind(rank) == PeerKind::shared_memory && !part.network_memory)
      reached.mapped = platform::SharedSegment::attach(part.name, part.capacity);
    // With a network every rank packs a key, and every key is unpacked:
    // self's and neighbours' too, for network atomics.
    if (!part.key.empty())
      reached.key = progress_.with_network([&](platform::Network& net) { return net.unpack_remote_key(rank, part.key); });
  }
  auto found = peer_segments_.find(which);
  if (found != peer_segments_.end()) return &found->second;
  if (peers_.kind(rank) == PeerKind::self) return nullptr;  // self needs no key without a network
  fail(call, "rank %d's part reuses its segment %llu, which this rank never reached", rank,
       static_cast<unsigned long long>(part.segment));
}

std::vector<void*> Memory::publish(std::unique_ptr<Allocation> allocation, const std::vector<std::byte*>& local,
                                   const std::vector<bool>& network_regions, std::uintptr_t own_base) {
  const auto n = static_cast<std::size_t>(peers_.size());
  std::vector<void*> bases(n);
  bool any_part = false;
  for (std::size_t size : allocation->sizes) any_part |= size > 0;
  if (!any_part) return bases;  // nothing to reach, and nothing by which ARMCI_Free could name it
  for (int r = 0; r < peers_.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    bases[i] = reinterpret_cast<void*>(allocation->bases[i]);
    if (allocation->sizes[i] == 0) continue;
    Region region;
    region.base = allocation->bases[i];
    region.size = allocation->sizes[i];
    region.allocation = allocation->id;
    region.key = allocation->keys[i];
    region.local = local[i];
    region.network_memory = network_regions[i];
    std::lock_guard guard(progress_.mutex());  // the helper reads the table
    // This rank's part: in the table since before the exchange, now with its key.
    if (r == peers_.rank()) regions_.erase(r, own_base);
    regions_.insert(r, region);
    if (region.network_memory) ++network_regions_[i];
  }
  const auto me = static_cast<std::size_t>(peers_.rank());
  if (allocation->sizes[me] > 0) allocation_of_base_[allocation->bases[me]] = allocation->id;
  const std::uint64_t id = allocation->id;
  allocations_[id] = std::move(allocation);
  return bases;
}

void Memory::release(const char* call, void* my_base, const Members* members) {
  // A rank whose part was empty passes NULL, so the ranks agree on which
  // allocation goes by exchanging the id each of them made its part under,
  // and whether its segment goes or stays spare.
  struct Record {
    std::int64_t id;
    std::uint8_t destroy;
  } mine{-1, 0};
  const std::vector<bool> mask = member_mask(members);
  if (my_base != nullptr) {
    auto found = allocation_of_base_.find(reinterpret_cast<std::uintptr_t>(my_base));
    if (found == allocation_of_base_.end())
      fail(call, "argument 'ptr' (%p) is not the base of a live ARMCI_Malloc allocation", my_base);
    mine.id = static_cast<std::int64_t>(found->second);
    const Allocation& allocation = *allocations_.at(found->second);
    mine.destroy = should_destroy(allocation.segments[static_cast<std::size_t>(peers_.rank())], mask) ? 1 : 0;
  }
  auto mine_bytes = std::as_bytes(std::span(&mine, 1));
  std::vector<std::vector<std::byte>> all;
  try {
    all = members ? members->exchange(mine_bytes) : exchange_(mine_bytes);
  } catch (const std::exception& e) {
    probe_liveness();
    fail(call, "the exchange between the ranks failed: %s", e.what());
  }
  std::vector<Record> theirs(static_cast<std::size_t>(peers_.size()), Record{-1, 0});
  for (std::size_t r = 0; r < theirs.size(); ++r)
    if (!all[r].empty()) std::memcpy(&theirs[r], all[r].data(), sizeof(Record));
  auto matches = [&](const Allocation& a) {
    for (std::size_t r = 0; r < theirs.size(); ++r)
      if (theirs[r].id >= 0 && a.ids[r] != static_cast<std::uint64_t>(theirs[r].id)) return false;
    return true;
  };
  auto found = allocations_.end();
  if (mine.id >= 0) {
    found = allocations_.find(static_cast<std::uint64_t>(mine.id));
  } else {
    for (std::size_t r = 0; r < theirs.size() && found == allocations_.end(); ++r)
      if (theirs[r].id >= 0)
        for (auto it = allocations_.begin(); it != allocations_.end(); ++it)
          if (it->second->ids[r] == static_cast<std::uint64_t>(theirs[r].id) && it->second->sizes[r] > 0) {
            found = it;
            break;
          }
    if (found == allocations_.end()) {
      bool anyone = false;
      for (const Record& record : theirs) anyone |= record.id >= 0;
      if (!anyone) return;  // every part was empty: the allocation was never kept
      fail(call, "argument 'ptr' is NULL, and no allocation here matches the other ranks' pointers");
    }
  }
  if (found == allocations_.end() || !matches(*found->second))
    fail(call, "argument 'ptr': the ranks passed parts of different allocations");
  Allocation& allocation = *found->second;
  if (my_base == nullptr && allocation.sizes[static_cast<std::size_t>(peers_.rank())] != 0)
    fail(call, "argument 'ptr' is NULL but this rank's part of the allocation is not empty");
  for (int r = 0; r < peers_.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (allocation.sizes[i] == 0) continue;
    {
      std::lock_guard guard(progress_.mutex());
      if (const Region* region = regions_.find_without_caching(r, allocation.bases[i], 1);
          region != nullptr && region->network_memory)
        --network_regions_[i];
      regions_.erase(r, allocation.bases[i]);
    }
    if (!theirs[i].destroy) continue;
    auto reached = peer_segments_.find({r, allocation.segments[i]});
    if (reached == peer_segments_.end()) continue;
    drop_peer_segment(reached->second);
    peer_segments_.erase(reached);
  }
  if (my_base != nullptr) {
    allocation_of_base_.erase(reinterpret_cast<std::uintptr_t>(my_base));
    give_back_segment(allocation.segments[static_cast<std::size_t>(peers_.rank())], mine.destroy != 0);
  }
  allocations_.erase(found);
}

const std::vector<std::byte>* Memory::own_key(const Region& region) const {
  auto found = allocations_.find(region.allocation);
  if (found == allocations_.end() || found->second->own_key.empty()) return nullptr;
  return &found->second->own_key;
}

void Memory::forget_rank(int rank) {
  std::lock_guard guard(progress_.mutex());  // the helper reads the table
  regions_.clear(rank);
  network_regions_[static_cast<std::size_t>(rank)] = 0;
}

// ------------------------------------------------------------------ control blocks

void Memory::create_control_blocks(const std::function<void()>& everyone_mapped) {
  // Allocated like user memory, but never in the region table, so no user
  // operation can reach them.
  control_ = collective_allocate(sizeof(ControlBlock), false);
  control_local_.assign(static_cast<std::size_t>(peers_.size()), nullptr);
  for (int r = 0; r < peers_.size(); ++r)
    control_local_[static_cast<std::size_t>(r)] = reinterpret_cast<ControlBlock*>(control_->local(peers_, r));
  everyone_mapped();
  control_->own.unlink();
}

void Memory::free_all() {
  allocations_.clear();
  std::fill(network_regions_.begin(), network_regions_.end(), 0);
  allocation_of_base_.clear();
  for (auto& [which, segment] : peer_segments_) drop_peer_segment(segment);
  peer_segments_.clear();
  spare_segments_.clear();
  spare_bytes_ = 0;
  while (!own_segments_.empty()) give_back_segment(own_segments_.begin()->first, true);
}

void Memory::free_control_blocks() {
  if (!control_) return;
  free_allocation(*control_);
  control_.reset();
}

void Memory::cleanup_names() {
  if (control_) control_->own.unlink();
  for (auto& [id, segment] : own_segments_) segment.memory.unlink();
  // An allocation cut short (a neighbour died inside it, or this rank is
  // failing in it): its names, this rank's and every same-host rank's, go
  // too, since a dead neighbour cannot remove its own. A neighbour's id for
  // it need not be ours (groups allocate apart), so every name of this job
  // made by a same-host rank goes: this path ends the job, and a finished
  // allocation's names are gone already.
  if (allocating_ == 0 || !peers_.neighbours_share_memory()) return;
  std::vector<int> neighbours;
  for (int r = 0; r < peers_.size(); ++r)
    if (peers_.kind(r) == PeerKind::self || peers_.kind(r) == PeerKind::shared_memory) neighbours.push_back(r);
  remove_names_of(neighbours);
}

void Memory::remove_names_of(const std::vector<int>& ranks) {
  std::vector<long> pids;
  for (int r : ranks)
    if (peers_.kind(r) == PeerKind::self || peers_.kind(r) == PeerKind::shared_memory)
      pids.push_back(pids_[static_cast<std::size_t>(r)]);
  if (pids.empty()) return;
  segment_names::for_each([&](const std::string& name, const segment_names::Parsed& parsed) {
    if (parsed.tag == job_tag_ && std::find(pids.begin(), pids.end(), parsed.pid) != pids.end())
      shm_unlink(("/" + name).c_str());
  });
}

}  // namespace armci
