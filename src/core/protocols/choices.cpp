#include "src/core/protocols/choices.hpp"

#include <algorithm>
#include <cstdio>

namespace armci::protocols {

const char* name(WinLockKind kind) {
  static constexpr const char* kNames[] = {"lock/cpu", "lock/hybrid", "lock/network"};  // by WinLockKind
  return kNames[static_cast<std::size_t>(kind)];
}

namespace {

// The ranges of choose(bytes) over sizes from 1, cut where it may change:
// at every start in `starts` (the constants the rules compare with).
template <class Choose>
std::vector<ChoiceRange> ranges(std::vector<std::size_t> starts, Choose choose) {
  starts.push_back(1);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<ChoiceRange> out;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (starts[i] == 0) continue;
    const std::size_t high = i + 1 < starts.size() ? starts[i + 1] - 1 : SIZE_MAX;
    const char* name = choose(starts[i]);
    if (!out.empty() && out.back().name == name) {
      out.back().high = high;
    } else {
      out.push_back({name, starts[i], high});
    }
  }
  return out;
}

std::string size_text(std::size_t bytes) {
  if (bytes == SIZE_MAX) return "";
  char text[32];
  if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof text, "%zu KiB", bytes / 1024);
  else
    std::snprintf(text, sizeof text, "%zu B", bytes);
  return text;
}

std::string text_of(const std::vector<ChoiceRange>& rows) {
  std::string text;
  for (const ChoiceRange& r : rows)
    text += (text.empty() ? "" : ", ") + std::string(r.name) + " " + size_text(r.low) + ".." + size_text(r.high);
  return text;
}

std::string line(const char* prefix, const char* what, const std::string& text) {
  char head[64];
  std::snprintf(head, sizeof head, "%-39s ", what);
  return prefix + std::string(head) + text + "\n";
}

}  // namespace

std::vector<ChoiceRange> collective_forms(bool local, bool single_copy, Channel channel) {
  using C = Collectives;
  return ranges({C::kInlineBytes + 1, C::kCollectiveSingleCopyMin, C::kSingleCopyMin}, [&](std::size_t bytes) {
    return C::name(C::form_of(local, single_copy, channel, bytes));
  });
}

std::vector<ChoiceRange> reductions(int n, std::size_t element_bytes, bool may_go_direct) {
  using C = Collectives;
  const std::size_t members = static_cast<std::size_t>(C::power_of_two_below(n));
  return ranges({C::kWholeBufferReduceMax + 1, C::kDirectShareMin * static_cast<std::size_t>(n),
                 members * element_bytes},
                [&](std::size_t bytes) {
                  return C::name(C::reduction_of(bytes, bytes / element_bytes, n, [&] { return may_go_direct; }));
                });
}

std::string describe_windows(const Settings& settings, bool network, bool helper, const char* prefix) {
  std::string out;
  out += line(prefix, "window locks",
              std::string(name(win_lock_kind(true, settings.win_lock_migrate, network, helper))) +
                  " (every member on this node), " +
                  name(win_lock_kind(false, settings.win_lock_migrate, network, helper)) + " (spanning the network)");
  out += line(prefix, "window fences", std::string("fence/") + to_string(settings.win_fence) + " (ARMCI_WIN_FENCE)");
  out += line(prefix, "window PSCW", "pscw/counts (post and complete store counts the other side waits for)");
  std::string reorder = std::string("reorder/") + to_string(settings.win_reorder) + " (ARMCI_WIN_REORDER)";
  if (settings.win_reorder == WinReorder::combine)
    reorder += ": writes " +
               text_of(ranges({settings.aggregate_piece_max + 1}, [&](std::size_t bytes) {
                 return win_write_path(settings.win_reorder, bytes, settings.aggregate_piece_max) ==
                                WinWritePath::combined
                            ? "combined"
                            : "direct";
               }));
  out += line(prefix, "window writes", reorder);
  return out;
}

std::string describe_collectives(const char* prefix) {
  std::string out;
  out += line(prefix, "coll to network members", text_of(collective_forms(false, true, Channel::collective)));
  out += line(prefix, "coll to node neighbours", text_of(collective_forms(true, true, Channel::collective)) +
                                                     " (without cross-memory attach: " +
                                                     text_of(collective_forms(true, false, Channel::collective)) + ")");
  out += line(prefix, "armci_msg_snd to neighbours", text_of(collective_forms(true, true, Channel::user)));
  for (int n : {2, 3, 4, 8}) {
    char what[64];
    std::snprintf(what, sizeof what, "allreduce np %d, doubles", n);
    out += line(prefix, what, text_of(reductions(n, sizeof(double), true)) + " (direct only on one node with " +
                                  "cross-memory attach, not two members with a core each)");
  }
  return out;
}

}  // namespace armci::protocols
