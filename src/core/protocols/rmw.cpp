#include "src/core/protocols/rmw.hpp"

#include <atomic>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/core/names.hpp"
#include "src/core/sync.hpp"

namespace armci::protocols {

namespace {
constexpr Named<WordOp> kWordOpNames[] = {{"fetch-add", WordOp::fetch_add},
                                          {"compare-swap", WordOp::compare_swap},
                                          {"swap", WordOp::swap},
                                          {"fetch-add32", WordOp::fetch_add32},
                                          {"swap32", WordOp::swap32}};
}  // namespace

const char* to_string(WordOp op) { return name_of(kWordOpNames, op); }

namespace {

template <typename T>
std::atomic_ref<T> atomic_at(std::byte* p) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(p));
}

bool is_lane(WordOp op) { return op == WordOp::fetch_add32 || op == WordOp::swap32; }

// ------------------------------------------------------------------ rmw/shm/cpu-atomic

std::optional<double> cpu_probe(const AtomicSituation& s) {
  if (s.network_peers) return std::nullopt;
  return 0.02;
}

std::uint64_t cpu_apply(NetworkWords&, const char*, const Word& w, WordOp op, std::uint64_t value,
                        std::uint64_t desired) {
  switch (op) {
    case WordOp::fetch_add: return atomic_at<std::uint64_t>(w.local).fetch_add(value);
    case WordOp::compare_swap:
      atomic_at<std::uint64_t>(w.local).compare_exchange_strong(value, desired);
      return value;  // the old value either way
    case WordOp::swap: return atomic_at<std::uint64_t>(w.local).exchange(value);
    case WordOp::fetch_add32: return atomic_at<std::uint32_t>(w.local).fetch_add(static_cast<std::uint32_t>(value));
    case WordOp::swap32: return atomic_at<std::uint32_t>(w.local).exchange(static_cast<std::uint32_t>(value));
  }
  return 0;
}

// ------------------------------------------------------------------ rmw/net/native-atomic

// One network round trip.
constexpr double kNetworkAtomicUs = 2.0;

std::optional<double> native_probe(const AtomicSituation& s) {
  if (!s.network_peers || (s.op != WordOp::fetch_add && s.op != WordOp::compare_swap)) return std::nullopt;
  return kNetworkAtomicUs;
}

std::uint64_t native_apply(NetworkWords& net, const char* call, const Word& w, WordOp op, std::uint64_t value,
                           std::uint64_t desired) {
  if (op == WordOp::fetch_add) return net.network_fetch_add(call, w, value);
  return net.network_compare_swap(call, w, value, desired);
}

// ------------------------------------------------------------------ rmw/net/cas-emulated

std::optional<double> emulated_probe(const AtomicSituation& s) {
  if (!s.network_peers || s.op == WordOp::compare_swap) return std::nullopt;
  // At least one compare-and-swap, and a second when the guess was stale.
  return 2 * kNetworkAtomicUs;
}

// The platform has compare-and-swap and fetch-and-add only (verbs has no
// swap), and only on 64-bit words: loop on the aligned word, each failure
// handing back the current value to try next. A lane leaves the other half
// of its word as it is. (Every ARMCI_Malloc part is page-aligned and its
// mapping page-rounded, so the word is registered memory even where the
// region ends in the middle of it.)
std::uint64_t emulated_apply(NetworkWords& net, const char* call, const Word& w, WordOp op, std::uint64_t value,
                             std::uint64_t) {
  const unsigned offset = is_lane(op) ? static_cast<unsigned>(w.address & 7) : 0;
  Word whole = w;
  whole.address -= offset;
  if (whole.local != nullptr) whole.local -= offset;
  std::uint64_t expected = net.guess(whole);
  for (;;) {
    std::uint64_t desired = 0;
    switch (op) {
      case WordOp::fetch_add: desired = expected + value; break;
      case WordOp::swap: desired = value; break;
      case WordOp::fetch_add32:
        desired = with_lane(expected, offset, word_lane(expected, offset) + static_cast<std::uint32_t>(value));
        break;
      case WordOp::swap32: desired = with_lane(expected, offset, static_cast<std::uint32_t>(value)); break;
      case WordOp::compare_swap: fail(call, "internal: compare-and-swap has no emulation");
    }
    const std::uint64_t old = net.network_compare_swap(call, whole, expected, desired);
    if (old == expected) return is_lane(op) ? word_lane(old, offset) : old;
    expected = old;
  }
}

const AtomicProtocol kCpuAtomic{"shm/cpu-atomic", false, cpu_probe, cpu_apply};
const AtomicProtocol kNativeAtomic{"net/native-atomic", true, native_probe, native_apply};
const AtomicProtocol kCasEmulated{"net/cas-emulated", true, emulated_probe, emulated_apply};
const AtomicProtocol* const kAll[] = {&kCpuAtomic, &kNativeAtomic, &kCasEmulated};

}  // namespace

std::span<const AtomicProtocol* const> atomic_protocols() { return kAll; }

AtomicTable::AtomicTable(bool network_peers) : network_(network_peers) {
  for (int o = 0; o < kWordOps; ++o) {
    const AtomicSituation situation{static_cast<WordOp>(o), network_peers};
    Choice& best = choices_[static_cast<std::size_t>(o)];
    for (const AtomicProtocol* protocol : atomic_protocols()) {
      const std::optional<double> cost = protocol->probe(situation);
      if (cost && (best.protocol == nullptr || *cost < best.cost_us)) best = Choice{protocol, *cost};
    }
    if (best.protocol == nullptr)
      fail("ARMCI_Init", "no protocol for the word operation %s (a bug: some protocol must take it)",
           to_string(situation.op));
    if (best.protocol->network != network_peers)
      fail("ARMCI_Init", "rmw/%s serves %s in a job %s network peers (a bug: one mechanism per job)",
           best.protocol->name, to_string(situation.op), network_peers ? "with" : "without");
  }
}

std::string AtomicTable::describe(const char* prefix) const {
  std::string out;
  char line[256];
  for (int o = 0; o < kWordOps; ++o) {
    const Choice& c = choices_[static_cast<std::size_t>(o)];
    std::snprintf(line, sizeof line, "%s%-5s %-33s rmw/%s (~%.2f us)\n", prefix, "rmw", to_string(static_cast<WordOp>(o)),
                  c.protocol->name, c.cost_us);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "%s%-5s %-33s mutex/mcs-queue: tail by rmw/%s swap, rmw/%s compare-swap; handover by %s\n", prefix,
                "mutex", "lock|trylock|unlock", find(WordOp::swap).name, find(WordOp::compare_swap).name,
                network_ ? "a store where mapped, else a compare-swap" : "a store");
  out += line;
  return out;
}

}  // namespace armci::protocols
