// Contiguous put, get and Acc: one range of bytes.
//
// The cost estimates are of the calling thread's time only and are rough;
// what they must get right is the order of protocols whose ranges overlap:
// a piece appended to an aggregate handle's message (vector-msg) < a
// transfer handed to the helper (offload) < a copy through the pool
// (buffered) < a layer call that may register the user's memory (direct).
// Where a layer needs no registration, direct from the layer's own
// protocols is cheaper than the pool, which is then offered only when
// ARMCI_PROTOCOL=buffered says so.
#include <algorithm>

#include "src/core/completion.hpp"
#include "src/core/copy.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/pipeline.hpp"
#include "src/core/progress.hpp"
#include "src/core/protocols/protocol.hpp"
#include "src/core/settings.hpp"
#include "src/core/transfers.hpp"
#include "src/core/wire.hpp"

namespace armci::protocols {
namespace {

bool same_node(PeerKind peer) { return !is_network(peer); }
bool network(const Situation& s) { return s.caps != nullptr && is_network(s.peer); }

// The user's side and the remote side of a put or get.
struct Sides {
  std::byte* local;
  std::uintptr_t remote;
  const Region& region;
};

Sides sides_of(Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
  const bool get = call.op == Op::get;
  const void* remote = get ? src : dst;
  return {static_cast<std::byte*>(const_cast<void*>(get ? dst : src)), reinterpret_cast<std::uintptr_t>(remote),
          parts.memory.find_region(call.name, get ? "src" : "dst", call.proc, remote, bytes)};
}

// ---------------------------------------------------------------- shm/copy, shm/locked

const Protocol shm_copy{
    "shm/copy",
    [](const Situation& s) -> std::optional<Offer> {
      if (s.operation.op == Op::acc || !same_node(s.peer)) return std::nullopt;
      return Offer{1, SIZE_MAX, 0.05, 0.1};
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      const Sides sides = sides_of(parts, call, src, dst, bytes);
      copy_same_node(call.op, sides.region, src, dst, bytes);
    }};

// The target's lock of Acc serialises it with the peers' Accs there.
const Protocol shm_locked{
    "shm/locked",
    [](const Situation& s) -> std::optional<Offer> {
      if (s.operation.op != Op::acc || !same_node(s.peer)) return std::nullopt;
      return Offer{1, SIZE_MAX, 0.1, 0.3};
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      const Region& region = parts.memory.find_region(call.name, "dst", call.proc, dst, bytes);
      acc_same_node(parts.memory.control(call.proc)->acc, *call.acc, region, src, dst, bytes);
    }};

// ---------------------------------------------------------------- net/vector-msg

// Small operations on an aggregate handle wait in its vector message to
// the peer until the handle is waited for (ARMCI_AGGREGATE_PIECE_MAX).
const Protocol net_vector_message{
    "net/vector-msg",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.mode != Mode::aggregate || s.settings.aggregate_piece_max == 0)
        return std::nullopt;
      return Offer{1, s.settings.aggregate_piece_max, 0.05, 0.001};
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      const bool get = call.op == Op::get;
      const void* remote = get ? src : dst;
      parts.memory.check_remote(call.name, get ? "src" : "dst", call.proc, remote, bytes);
      parts.vector_messages.add(call.op, call.acc, static_cast<const std::byte*>(get ? dst : src),
                                reinterpret_cast<std::uintptr_t>(remote), bytes, call.proc, call.completion,
                                *call.aggregate);
    }};

// ---------------------------------------------------------------- net/direct

// The layer's cost to the calling thread: registering (through the cache)
// where it needs registered memory, copying where it moves the data with
// the caller's CPU (a software device; UCX to a peer on this host).
Offer direct_cost(const Situation& s) {
  const platform::Capabilities& caps = *s.caps;
  if (caps.needs_local_registration) return Offer{1, SIZE_MAX, 2.0, 0.25};
  const bool copies = caps.software_device || (caps.copies_on_caller_same_host && s.peer == PeerKind::network_host);
  return Offer{1, SIZE_MAX, 1.0, copies ? 0.2 : 0.0};
}

void start_direct(Parts& parts, const Call& call, const Sides& sides, std::size_t bytes) {
  const bool get = call.op == Op::get;
  parts.completions.order_after_puts(call.proc, get);
  platform::LocalSegment segment{sides.local, bytes};
  parts.progress.with_network([&](platform::Network& net) {
    if (get) net.get(call.proc, std::span(&segment, 1), sides.remote, sides.region.key, call.completion);
    else net.put(call.proc, std::span(&segment, 1), sides.remote, sides.region.key, call.completion);
  });
  if (!get) parts.completions.note_put(call.proc);
}

const Protocol net_direct{
    "net/direct",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.op == Op::acc || s.settings.protocol == ProtocolChoice::buffered)
        return std::nullopt;
      return direct_cost(s);
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      start_direct(parts, call, sides_of(parts, call, src, dst, bytes), bytes);
    }};

// ---------------------------------------------------------------- net/buffered, net/offload

// Both run on the pipeline: buffered copies chunks through the pool of
// registered buffers, offload hands chunks of the user's memory to the
// helper so that a layer that moves data with the posting CPU does so on
// the helper's core.
void start_pipeline(Parts& parts, const Call& call, const Sides& sides, std::size_t bytes, bool through_buffers) {
  const bool get = call.op == Op::get;
  parts.completions.order_after_puts(call.proc, get);
  parts.pipeline.start(call.op, through_buffers, sides.local, sides.remote, sides.region.key, bytes, call.proc,
                       call.completion);
  if (!get) parts.completions.note_put(call.proc);
}

// ARMCI_PROTOCOL=buffered: every size. auto: from above the layer's inline
// size up to ARMCI_BUFFERED_MAX, where the layer needs registered memory.
const Protocol net_buffered{
    "net/buffered",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.op == Op::acc) return std::nullopt;
      switch (s.settings.protocol) {
        case ProtocolChoice::buffered: return Offer{1, SIZE_MAX, 1.0, 0.002};
        case ProtocolChoice::automatic:
          if (!s.caps->needs_local_registration) return std::nullopt;
          return Offer{s.caps->max_inline + 1, s.settings.buffered_max, 1.0, 0.002};
        default: return std::nullopt;
      }
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      const Sides sides = sides_of(parts, call, src, dst, bytes);
      // auto: memory of an ARMCI_Malloc region is registered already.
      if (parts.settings.protocol == ProtocolChoice::automatic &&
          parts.memory.find_own(reinterpret_cast<std::uintptr_t>(sides.local), bytes) != nullptr)
        start_direct(parts, call, sides, bytes);
      else
        start_pipeline(parts, call, sides, bytes, true);
    }};

// Nonblocking transfers from ARMCI_OFFLOAD_MIN (a software device: its own
// minimum) when the helper runs.
const Protocol net_offload{
    "net/offload",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.op == Op::acc || s.operation.mode == Mode::blocking || !s.helper)
        return std::nullopt;
      std::size_t min = SIZE_MAX;
      if (s.caps->software_device) min = s.settings.offload_min_software;
      else if (s.caps->copies_on_caller_same_host && s.peer == PeerKind::network_host) min = s.settings.offload_min;
      if (min == SIZE_MAX) return std::nullopt;
      return Offer{min, SIZE_MAX, 0.5, 0.001};
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      start_pipeline(parts, call, sides_of(parts, call, src, dst, bytes), bytes, false);
    }};

// ---------------------------------------------------------------- acc/net/msg

// The target's helper applies Acc pieces of at most acc_chunk bytes: the
// network cannot add floating-point data.
const Protocol net_message{
    "net/msg",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.op != Op::acc) return std::nullopt;
      return Offer{1, SIZE_MAX, 1.0, 0.2};
    },
    [](Parts& parts, const Call& call, const void* src, void* dst, std::size_t bytes) {
      const int proc = call.proc;
      parts.memory.check_remote(call.name, "dst", proc, dst, bytes);
      const auto target = reinterpret_cast<std::uintptr_t>(dst);
      parts.completions.order_after_puts(proc, true);
      const auto* bytes_in = static_cast<const std::byte*>(src);
      for (std::size_t done = 0; done < bytes; done += parts.acc_chunk) {
        const std::size_t piece = std::min(parts.acc_chunk, bytes - done);
        wire::AccHeader header{};
        header.address = target + done;
        header.token = reinterpret_cast<std::uintptr_t>(&call.completion);
        header.bytes = piece;
        header.datatype = call.acc->datatype;
        header.scale = call.acc->scale;
        parts.messages.expect_answer(proc, parts.acc_kind);
        // One count for the ack, on top of the send's own local completion.
        call.completion.pending.fetch_add(1, std::memory_order_relaxed);
        parts.progress.with_network([&](platform::Network& net) {
          parts.messages.await_ack(proc, parts.acc_kind, header.token);
          net.send_message(proc, parts.acc_kind, std::as_bytes(std::span(&header, 1)),
                           std::span(bytes_in + done, piece), call.completion);
        });
      }
    }};

const Protocol* const kContiguous[] = {&shm_copy,    &shm_locked,   &net_vector_message, &net_direct,
                                       &net_buffered, &net_offload, &net_message};

}  // namespace

std::span<const Protocol* const> contiguous_protocols() { return kContiguous; }

}  // namespace armci::protocols
