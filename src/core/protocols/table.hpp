// The selection table: for each (operation, peer kind), the protocol for
// each size range, built once from the probes. The hot path is find(); the
// info output and armci_info print describe(), so what they show is what
// runs.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "src/core/protocols/protocol.hpp"

namespace armci::protocols {

class Table {
 public:
  // Empty until built: every lookup fails.
  Table() = default;
  // caps: nullptr without a network layer; helper: the helper thread runs.
  Table(const platform::Capabilities* caps, bool helper, const Settings& settings);

  // The protocol for a transfer of `bytes` (strided, vector: piece bytes);
  // bytes > 0.
  const Protocol& find(Operation operation, PeerKind peer, std::size_t bytes) const {
    const Row& row = rows_[index(operation, peer)];
    for (std::uint8_t i = 0; i + 1 < row.count; ++i)
      if (bytes <= row.choices[i].max_bytes) return *row.choices[i].protocol;
    if (row.count == 0) [[unlikely]]
      no_protocol(operation, peer);
    return *row.choices[row.count - 1].protocol;
  }

  // The table for one peer kind, one line per operation (modes that choose
  // alike share a line), each line prefixed with `prefix`.
  std::string describe(PeerKind peer, const char* prefix) const;

 private:
  static constexpr std::size_t kMaxChoices = 6;
  struct Choice {
    std::size_t max_bytes;  // sizes up to here (from the previous choice's max + 1)
    const Protocol* protocol;
    Offer offer;
  };
  struct Row {
    std::uint8_t count = 0;
    std::array<Choice, kMaxChoices> choices{};
  };
  static std::size_t index(Operation operation, PeerKind peer) {
    return ((static_cast<std::size_t>(operation.op) * kShapes + static_cast<std::size_t>(operation.shape)) * kModes +
            static_cast<std::size_t>(operation.mode)) *
               kPeerKinds +
           static_cast<std::size_t>(peer);
  }
  [[noreturn]] static void no_protocol(Operation operation, PeerKind peer);
  static Row build(const Situation& situation);
  std::string describe_row(const Row& row, Op op, Shape shape) const;

  std::array<Row, static_cast<std::size_t>(kOps) * kShapes * kModes * kPeerKinds> rows_{};
};

}  // namespace armci::protocols
