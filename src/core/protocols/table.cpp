#include "src/core/protocols/table.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "src/core/copy.hpp"
#include "src/core/error.hpp"
#include "src/core/settings.hpp"

namespace armci {

std::string operation_name(Op op, Shape shape) {
  std::string name = to_string(op);
  if (shape == Shape::strided) name += 's';
  if (shape == Shape::vector) name += 'v';
  return name;
}

namespace protocols {
namespace {

std::span<const Protocol* const> protocols_of(Shape shape) {
  switch (shape) {
    case Shape::contiguous: return contiguous_protocols();
    case Shape::strided: return strided_protocols();
    case Shape::vector: return vector_protocols();
  }
  return {};
}

std::string size_text(std::size_t bytes) {
  if (bytes == SIZE_MAX) return "";
  char text[32];
  if (bytes >= 1024 && bytes % (1024 * 1024) == 0)
    std::snprintf(text, sizeof text, "%zu MiB", bytes / (1024 * 1024));
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof text, "%zu KiB", bytes / 1024);
  else
    std::snprintf(text, sizeof text, "%zu B", bytes);
  return text;
}

}  // namespace

Table::Table(const platform::Capabilities* caps, bool helper, const Settings& settings) {
  for (int o = 0; o < kOps; ++o)
    for (int s = 0; s < kShapes; ++s)
      for (int m = 0; m < kModes; ++m)
        for (int k = 0; k < kPeerKinds; ++k) {
          const Operation operation{static_cast<Op>(o), static_cast<Shape>(s), static_cast<Mode>(m)};
          const auto peer = static_cast<PeerKind>(k);
          rows_[index(operation, peer)] = build(Situation{operation, peer, caps, helper, settings});
        }
}

// The size axis is cut at every offer's bounds; each piece goes to the
// cheapest offer that covers it (its estimate at the piece's smallest
// size), and neighbouring pieces with the same protocol merge.
Table::Row Table::build(const Situation& situation) {
  struct Candidate {
    const Protocol* protocol;
    Offer offer;
  };
  std::vector<Candidate> candidates;
  std::vector<std::size_t> starts{1};
  for (const Protocol* protocol : protocols_of(situation.operation.shape)) {
    std::optional<Offer> offer = protocol->probe(situation);
    if (!offer || offer->max_bytes < offer->min_bytes || offer->max_bytes == 0) continue;
    offer->min_bytes = std::max<std::size_t>(offer->min_bytes, 1);
    candidates.push_back({protocol, *offer});
    starts.push_back(offer->min_bytes);
    if (offer->max_bytes != SIZE_MAX) starts.push_back(offer->max_bytes + 1);
  }
  Row row;
  if (candidates.empty()) return row;
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t low = starts[i];
    const std::size_t high = i + 1 < starts.size() ? starts[i + 1] - 1 : SIZE_MAX;
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates)
      if (c.offer.min_bytes <= low && high <= c.offer.max_bytes &&
          (best == nullptr || c.offer.cost(low) < best->offer.cost(low)))
        best = &c;
    if (best == nullptr)
      fail("ARMCI_Init", "no protocol for %s to a %s peer of %zu to %zu bytes (a bug: some protocol must take every size)",
           operation_name(situation.operation.op, situation.operation.shape).c_str(), to_string(situation.peer), low,
           high);
    if (row.count > 0 && row.choices[row.count - 1].protocol == best->protocol) {
      row.choices[row.count - 1].max_bytes = high;
      continue;
    }
    if (row.count == kMaxChoices)
      fail("ARMCI_Init", "more than %zu protocols for %s to a %s peer", kMaxChoices,
           operation_name(situation.operation.op, situation.operation.shape).c_str(), to_string(situation.peer));
    row.choices[row.count++] = Choice{high, best->protocol, best->offer};
  }
  return row;
}

void Table::no_protocol(Operation operation, PeerKind peer) {
  fail("ARMCI", "no protocol for %s (%s) to a %s peer: this build or start-up has no layer that reaches it",
       operation_name(operation.op, operation.shape).c_str(), to_string(operation.mode), to_string(peer));
}

std::string Table::describe_row(const Row& row, Op op, Shape shape) const {
  const std::string prefix = operation_name(op, shape);
  std::string text;
  std::size_t low = 1;
  for (std::uint8_t i = 0; i < row.count; ++i) {
    const Choice& c = row.choices[i];
    char cost[64];
    std::snprintf(cost, sizeof cost, " (~%.2f us + %.3f us/KiB)", c.offer.fixed_us, c.offer.us_per_kib);
    if (!text.empty()) text += ", ";
    text += prefix + "/" + c.protocol->name + " " + size_text(low) + ".." + size_text(c.max_bytes) + cost;
    low = c.max_bytes + 1;
  }
  return text.empty() ? "none" : text;
}

std::string Table::describe(PeerKind peer, const char* prefix) const {
  std::string out;
  for (int o = 0; o < kOps; ++o)
    for (int s = 0; s < kShapes; ++s) {
      // Modes that choose alike share a line.
      std::string lines[kModes];
      for (int m = 0; m < kModes; ++m) {
        const Operation operation{static_cast<Op>(o), static_cast<Shape>(s), static_cast<Mode>(m)};
        lines[m] = describe_row(rows_[index(operation, peer)], operation.op, operation.shape);
      }
      bool printed[kModes] = {};
      for (int m = 0; m < kModes; ++m) {
        if (printed[m]) continue;
        std::string modes;
        for (int n = m; n < kModes; ++n)
          if (!printed[n] && lines[n] == lines[m]) {
            printed[n] = true;
            modes += (modes.empty() ? "" : "|") + std::string(to_string(static_cast<Mode>(n)));
          }
        char head[64];
        std::snprintf(head, sizeof head, "%-5s %-33s ", operation_name(static_cast<Op>(o), static_cast<Shape>(s)).c_str(),
                      modes.c_str());
        out += prefix + std::string(head) + lines[m] + "\n";
      }
    }
  if (!is_network(peer)) {
    char head[64];
    std::snprintf(head, sizeof head, "%-5s %-33s ", "copy", "(every */shm/copy)");
    out += prefix + std::string(head) + copy_rule() + "\n";
  }
  return out;
}

}  // namespace protocols
}  // namespace armci
