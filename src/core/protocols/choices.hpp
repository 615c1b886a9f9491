// The protocol table's rows for what is not a transfer: a window's lock,
// fence, PSCW and reordering kinds, and the collectives' transport forms
// and all-reduce algorithms. Each row comes from the function the code
// dispatches on (Collectives::form_of and reduction_of, win_lock_kind,
// win_write_path), evaluated at the sizes where its answer may change, so
// what armci_info -p and ARMCI_VERBOSE print is what runs (checked by
// tests/unit/test_choices.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/collectives.hpp"
#include "src/core/settings.hpp"

namespace armci::protocols {

// A window's passive-target lock kind (src/windows/locks.hpp), chosen when
// the window is made: CPU words when every member shares this node's
// memory; words that migrate between network and CPU atomics when the
// window spans the network, ARMCI_WIN_LOCK_MIGRATE lets them and a helper
// thread serves claims from off the node; network atomics otherwise.
enum class WinLockKind : std::uint8_t { cpu, hybrid, network };
constexpr WinLockKind win_lock_kind(bool wholly_on_node, WinLockMigrate migrate, bool network, bool helper) {
  if (wholly_on_node) return WinLockKind::cpu;
  if (migrate != WinLockMigrate::pinned && network && helper) return WinLockKind::hybrid;
  return WinLockKind::network;
}
const char* name(WinLockKind kind);

// The path a window's contiguous write takes under ARMCI_WIN_REORDER: the
// small ones of combine join a vector message (the aggregate handle's
// vector-msg protocol, up to ARMCI_AGGREGATE_PIECE_MAX), the others go on
// their own. Two paths are not ordered with each other.
enum class WinWritePath : std::uint8_t { combined, direct };
constexpr WinWritePath win_write_path(WinReorder reorder, std::size_t bytes, std::size_t combine_max) {
  return reorder == WinReorder::combine && bytes <= combine_max ? WinWritePath::combined : WinWritePath::direct;
}

// One printed range: name for sizes low..high (bytes).
struct ChoiceRange {
  const char* name;
  std::size_t low, high;
};
// The ranges of a collective message's forms to one member.
std::vector<ChoiceRange> collective_forms(bool local, bool single_copy, Channel channel);
// The ranges of an all-reduce's algorithms over n members, for elements of
// element_bytes.
std::vector<ChoiceRange> reductions(int n, std::size_t element_bytes, bool may_go_direct);

// The rows, one line each, prefixed with `prefix`. network: a job with
// network peers; helper: the helper thread runs.
std::string describe_windows(const Settings& settings, bool network, bool helper, const char* prefix);
std::string describe_collectives(const char* prefix);

}  // namespace armci::protocols
