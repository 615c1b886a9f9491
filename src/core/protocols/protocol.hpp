// Protocols as small named objects: one way for one kind of transfer to
// reach one kind of peer. Each has a probe and a start function:
//
//   probe(situation) -> the sizes it takes (bytes; the piece size for
//                       strided and vector calls) and what it costs the
//                       calling thread there, or nothing when it does not
//                       apply to that operation, peer kind, layer or setting;
//   start(parts, call, data) -> moves the data or hands it to the part that
//                       will (the pipeline and host-assisted transfers
//                       progress in the background work of Progress).
//
// The selection table (table.hpp) asks every probe once at start-up; a
// transfer then costs one lookup. Adding a protocol is adding one object to
// a list in contiguous.cpp or strided.cpp (strided and vector lists).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "platform/network.hpp"
#include "src/core/messages.hpp"
#include "src/core/operation.hpp"
#include "src/core/peers.hpp"
#include "src/core/vector_messages.hpp"

namespace armci {

class Completions;
class HostAssisted;
class Memory;
class Pipeline;
class Progress;
class Transfers;
struct Settings;
struct Call;
struct VectorList;

// The data layout of a call: one range, a strided layout, or vector lists.
enum class Shape : std::uint8_t { contiguous, strided, vector };
constexpr int kShapes = 3;

// What the selection table is indexed by, besides the peer kind and size.
struct Operation {
  Op op;
  Shape shape;
  Mode mode;
};
// "put", "gets", "accv": the prefix of the protocol names for an operation.
std::string operation_name(Op op, Shape shape);

namespace protocols {

// Everything a probe may look at; fixed once the runtime has started.
struct Situation {
  Operation operation;
  PeerKind peer;
  const platform::Capabilities* caps;  // nullptr: no network layer
  bool helper;                         // the helper thread runs
  const Settings& settings;
};

// The sizes a protocol takes and a rough estimate of the time the calling
// thread spends starting one transfer of `bytes`: fixed_us + us_per_kib *
// bytes / 1024. Where offers overlap the cheaper one wins; the ranges come
// from the measured thresholds (ARMCI_* settings), so the estimates only
// have to order the protocols that share a range (see table.cpp).
struct Offer {
  std::size_t min_bytes = 1;
  std::size_t max_bytes = SIZE_MAX;
  double fixed_us = 0;
  double us_per_kib = 0;
  double cost(std::size_t bytes) const { return fixed_us + us_per_kib * static_cast<double>(bytes) / 1024.0; }
};

// The parts of the core a protocol's start may use.
struct Parts {
  const Peers& peers;
  Memory& memory;
  Progress& progress;
  Messages& messages;
  Completions& completions;
  VectorMessages& vector_messages;
  Pipeline& pipeline;
  HostAssisted& host;
  const Settings& settings;
  Transfers& transfers;  // per-piece protocols start each piece as a contiguous transfer
  MessageKind acc_kind = 0;
  std::size_t acc_chunk = 0;  // bytes of one Acc message
};

struct StridedLayout {
  std::byte* src;
  const int* src_stride;
  std::byte* dst;
  const int* dst_stride;
  const int* count;
  int levels;
};

struct Protocol {
  const char* name;  // after the operation's prefix: "net/direct" is printed "put/net/direct"
  std::optional<Offer> (*probe)(const Situation&);
  // One of these, for the shape the protocol serves.
  void (*contiguous)(Parts&, const Call&, const void* src, void* dst, std::size_t bytes) = nullptr;
  void (*strided)(Parts&, const Call&, const StridedLayout&) = nullptr;
  // `own`: the vector messages of this call (unless the call's aggregate
  // handle carries them), sent when the last list has started.
  void (*vector)(Parts&, const Call&, const VectorList&, VectorBatches& own) = nullptr;
};

// Every protocol of each shape; selection goes by the probes, not by order.
std::span<const Protocol* const> contiguous_protocols();
std::span<const Protocol* const> strided_protocols();
std::span<const Protocol* const> vector_protocols();

}  // namespace protocols
}  // namespace armci
