// The wire records of the control messages the core exchanges with its
// peers' helpers (the kinds themselves are registered with Messages by the
// parts that send them). Internal to src/core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/core/acc.hpp"

namespace armci::wire {

struct AccHeader {
  std::uint64_t address;
  std::uint64_t token;  // the origin's Completion, handed back in the ack
  std::uint64_t bytes;
  std::int32_t datatype;
  std::int32_t reserved;
  AccScale scale;
};

// An ack, or the header of an answer: the token the origin sent, handed
// back to the message kind that sent it.
struct AckHeader {
  std::uint64_t token;
  std::uint64_t kind;  // the Messages kind of the message acked
};

struct VectorHeader {
  std::uint64_t token;
  std::uint32_t count;
  std::int32_t datatype;
  AccScale scale;
};

// A host-assisted strided transfer: the layout on both sides, so the
// target's helper can post the gathers and scatters itself.
struct HostHeader {
  std::uint64_t token;
  std::uint64_t target_base;  // the target's side, in its address space
  std::uint64_t origin_base;  // the origin's side, reached with the key
  std::int32_t levels;
  std::int32_t count[9];
  std::int32_t target_stride[8];
  std::int32_t origin_stride[8];
};

// One piece of a vector message; for put and acc its data follows, padded
// to a multiple of 8 bytes.
struct PieceRecord {
  std::uint64_t address;
  std::uint64_t length;
};

// A piece of a collective message between nodes.
struct CollectiveHeader {
  std::uint8_t channel;
  std::int32_t tag;
  std::uint64_t total;     // bytes of the whole message
  std::uint64_t sequence;  // per (channel, sender), from 1
};

constexpr std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

// A record at any alignment (payloads come as bytes).
template <typename T>
T read(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace armci::wire
