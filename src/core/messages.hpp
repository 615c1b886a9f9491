// The control messages the runtime exchanges with its peers' helpers, and
// their wire records. Internal to src/core.
#pragma once

#include <cstdint>

#include "src/core/acc.hpp"

namespace armci::wire {

constexpr std::uint8_t kAcc = 1;         // AccHeader + the data
constexpr std::uint8_t kAck = 2;         // AckHeader
constexpr std::uint8_t kVectorPut = 3;   // VectorHeader + records with data
constexpr std::uint8_t kVectorAcc = 4;   // VectorHeader + records with data
constexpr std::uint8_t kVectorGet = 5;   // VectorHeader + records
constexpr std::uint8_t kVectorAnswer = 6;  // AckHeader + the gathered data
constexpr std::uint8_t kHostPut = 7;     // HostHeader + the origin's packed key
constexpr std::uint8_t kHostGet = 8;     // HostHeader + the origin's packed key

struct AccHeader {
  std::uint64_t address;
  std::uint64_t token;  // the origin's Completion, handed back in the ack
  std::uint64_t bytes;
  std::int32_t datatype;
  std::int32_t reserved;
  AccScale scale;
};

struct AckHeader {
  std::uint64_t token;
  std::uint64_t kind;  // what the token names: kAckCompletion, kAckBatch or kAckHost
};
constexpr std::uint64_t kAckCompletion = 0;  // token is a platform::Completion
constexpr std::uint64_t kAckBatch = 1;       // token is a SentBatch
constexpr std::uint64_t kAckHost = 2;        // token is a HostRequest

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

constexpr std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

}  // namespace armci::wire
