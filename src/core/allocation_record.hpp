// What one rank tells the others about its part of a collective allocation,
// in the exchange every allocation makes: written by the part's owner,
// read by every member, in one place each.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/core/record.hpp"

namespace armci {

struct PartRecord {
  // Why this rank could not make its part; empty when it did. Every rank
  // reads every record, so all fail the same call.
  std::string failure;
  std::uint64_t id = 0;    // the owner's count of its allocations (names its segment)
  std::uint64_t base = 0;  // the part's address in the owner's space; 0 for no part
  std::uint64_t bytes = 0;
  // ARMCI_Malloc parts are carved from segments an owner keeps: which one,
  // how large it is mapped, and whether it is new (peers map it and unpack
  // its key) or one they reached before.
  std::uint64_t segment = 0;
  std::uint64_t capacity = 0;
  bool new_segment = false;
  std::vector<std::byte> key;  // packed for the network layer; empty without one
  std::uint64_t spare_bytes = 0;  // what the owner keeps spare (a retry can free it)
  bool short_of_shm = false;      // the failure is /dev/shm's size
  bool network_memory = false;    // the part lives in private memory the network reaches
  std::string name;               // the segment's name, for neighbours to map

  std::vector<std::byte> encode() const {
    RecordWriter out;
    out.add_string(failure);
    out.add(id);
    out.add(base);
    out.add(bytes);
    out.add(segment);
    out.add(capacity);
    out.add<std::uint8_t>(new_segment);
    out.add_bytes(key);
    out.add(spare_bytes);
    out.add<std::uint8_t>(short_of_shm);
    out.add<std::uint8_t>(network_memory);
    out.add_string(name);
    return std::move(out.bytes);
  }

  // An empty record is a rank outside the allocating group.
  static std::optional<PartRecord> decode(std::span<const std::byte> bytes) {
    if (bytes.empty()) return std::nullopt;
    RecordReader in(bytes);
    PartRecord r;
    r.failure = in.take_string();
    r.id = in.take<std::uint64_t>();
    r.base = in.take<std::uint64_t>();
    r.bytes = in.take<std::uint64_t>();
    r.segment = in.take<std::uint64_t>();
    r.capacity = in.take<std::uint64_t>();
    r.new_segment = in.take<std::uint8_t>() != 0;
    r.key = in.take_bytes();
    r.spare_bytes = in.take<std::uint64_t>();
    r.short_of_shm = in.take<std::uint8_t>() != 0;
    r.network_memory = in.take<std::uint8_t>() != 0;
    r.name = in.take_string();
    return r;
  }

  static std::vector<std::optional<PartRecord>> decode_all(const std::vector<std::vector<std::byte>>& records) {
    std::vector<std::optional<PartRecord>> parts;
    parts.reserve(records.size());
    for (const auto& bytes : records) parts.push_back(decode(bytes));
    return parts;
  }
};

}  // namespace armci
