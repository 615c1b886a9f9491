// The shared-memory layout of the collectives' inboxes (collectives.hpp):
// what the transport (collectives.cpp) writes and the algorithms
// (collective_algorithms.cpp) reach directly for a flat broadcast's
// shared copy. Private to those two files.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "src/core/collectives.hpp"

namespace armci {

// One message from one sender to one receiver, in the receiver's inbox.
// The sender fills it and then stores `sequence`; the receiver reads it
// and, once done with the whole message, advances the pair's Consumed
// counter, which frees this cell kCells messages later.
struct alignas(64) Collectives::Cell {
  std::atomic<std::uint64_t> sequence;
  std::uint32_t form;  // bytes inline, or kPieces / kSingleCopy / kSharedCopy
  std::int32_t tag;
  std::uint64_t total;
  std::byte data[kInlineBytes];  // the message, or the sender's address (and a shared copy's chunk bytes)
};

// A piece of a longer message. Counters on their own cache lines: each
// has one writer.
struct Collectives::Slot {
  alignas(64) std::atomic<std::uint64_t> posted;
  alignas(64) std::atomic<std::uint64_t> taken;
  alignas(64) std::byte data[kSlotBytes];
};

// How many of a sender's messages the receiver has finished with; the
// sender reads it only when the ring looks full (or to know that a
// single copy was made), so the line mostly stays with the receiver.
struct alignas(64) Collectives::Consumed {
  std::atomic<std::uint64_t> messages;
};

// A broadcast's copy into one reader, shared out chunk by chunk between
// the reader, which reads from the root's buffer, and the root, which
// writes into the reader's: two cores copy where one did, and a reader
// that has no CPU at the moment (4 ranks on 2 cores) is served by the
// root instead of waiting for a time slice. The reader publishes it before
// it waits for the message, so the root can start at once.
struct alignas(64) Collectives::Share {
  std::atomic<std::uint64_t> claim;  // the message's sequence << kChunkBits | chunks taken
  std::atomic<std::uint64_t> done;   // chunks copied
  std::atomic<std::uint64_t> destination;
  std::atomic<std::uint64_t> capacity;
};

// The start of every inbox: what a neighbour needs to read this process's
// memory directly, and whether this process could read all of theirs.
struct Collectives::InboxHeader {
  alignas(64) std::int64_t pid;
  std::uint64_t probe_address;
  std::atomic<std::int32_t> reads_neighbours;  // 1 yes, 0 not yet or no
};

namespace collective_layout {

// Cell forms beyond the inline lengths: the message follows in slot
// pieces, or is to be read from the sender's buffer at the address the
// cell carries.
inline constexpr std::uint32_t kPieces = ~std::uint32_t{0};
inline constexpr std::uint32_t kSingleCopy = kPieces - 1;
// A single copy that the sender helps with, through the receiver's Share.
inline constexpr std::uint32_t kSharedCopy = kPieces - 2;
inline constexpr int kChunkBits = 16;

// The chunks of a broadcast's shared copy to each of `readers`: each is
// one system call, and two per reader let the root and the readers share
// the copying out (fewer leave one side idle at the end, more cost calls
// without balancing better); never under 16 KiB, and few enough to count
// in kChunkBits.
inline std::size_t share_chunk(std::size_t total, std::size_t readers) {
  const std::size_t even = (total / (2 * readers) + 4095) & ~std::size_t{4095};
  return std::max({std::size_t{16 * 1024}, even, (total >> kChunkBits) + 1});
}

}  // namespace collective_layout
}  // namespace armci
