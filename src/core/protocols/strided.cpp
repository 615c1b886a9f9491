// Strided put, get and Acc, chosen by piece size (count[0]). Over verbs and
// UCX (benchmarks/strided_protocols.sh measures them side by side): small pieces
// travel best packed in vector messages, medium ones host-assisted where
// the layer has SGE lists, large ones as direct runs; the thresholds are
// ARMCI_STRIDED_BUFFERED_MAX and ARMCI_STRIDED_HOST_MAX. The estimates order
// the protocols where those ranges overlap: vector-msg < host-assisted <
// direct-sge < per-piece.
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/copy.hpp"
#include "src/core/host_assisted.hpp"
#include "src/core/memory.hpp"
#include "src/core/progress.hpp"
#include "src/core/protocols/protocol.hpp"
#include "src/core/settings.hpp"
#include "src/core/strided.hpp"
#include "src/core/transfers.hpp"

namespace armci::protocols {
namespace {

bool network(const Situation& s) { return s.caps != nullptr && is_network(s.peer); }

// Each piece started as a contiguous transfer (its own table row): the
// fallback for every operation and peer.
void start_pieces(Parts& parts, const Call& call, const StridedLayout& l) {
  strided::for_each_piece(l.src_stride, l.dst_stride, l.count, l.levels,
                          [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
                            parts.transfers.contiguous(call, l.src + so, l.dst + dso, bytes);
                          });
}

const Protocol any_per_piece{
    "any/per-piece", [](const Situation&) -> std::optional<Offer> { return Offer{1, SIZE_MAX, 5.0, 0.5}; },
    nullptr, start_pieces};

// ---------------------------------------------------------------- shm/copy

// The remote side is translated once and every piece is a plain copy, so
// small pieces cost a few nanoseconds each.
template <std::size_t Fixed>
void copy_pieces(std::byte* s, const int* src_stride, std::byte* d, const int* dst_stride, const int* count,
                 int levels) {
  const auto bytes = static_cast<std::size_t>(count[0]);
  if (levels == 1) {
    const std::int64_t ss = src_stride[0], ds = dst_stride[0];
    for (int i = 0; i < count[1]; ++i, s += ss, d += ds) {
      if constexpr (Fixed != 0) std::memcpy(d, s, Fixed);
      else if (bytes < 256) std::memcpy(d, s, bytes);
      else copy_bytes(d, s, bytes);
    }
    return;
  }
  strided::for_each_piece(src_stride, dst_stride, count, levels, [&](std::int64_t so, std::int64_t dso, std::size_t n) {
    if constexpr (Fixed != 0) std::memcpy(d + dso, s + so, Fixed);
    else if (n < 256) std::memcpy(d + dso, s + so, n);
    else copy_bytes(d + dso, s + so, n);
  });
}

const Protocol shm_copy{
    "shm/copy",
    [](const Situation& s) -> std::optional<Offer> {
      if (s.operation.op == Op::acc || is_network(s.peer)) return std::nullopt;
      return Offer{1, SIZE_MAX, 0.01, 0.1};
    },
    nullptr,
    [](Parts& parts, const Call& call, const StridedLayout& l) {
      std::byte* s = l.src;
      std::byte* d = l.dst;
      const bool get = call.op == Op::get;
      const auto extent = static_cast<std::size_t>(strided::extent(get ? l.src_stride : l.dst_stride, l.count, l.levels));
      std::byte*& remote = get ? s : d;
      remote = parts.memory.local_mapping(call.name, get ? "src_ptr" : "dst_ptr", call.proc, remote, extent);
      if (remote == nullptr) return start_pieces(parts, call, l);
      switch (l.count[0]) {
        case 8: copy_pieces<8>(s, l.src_stride, d, l.dst_stride, l.count, l.levels); break;
        case 16: copy_pieces<16>(s, l.src_stride, d, l.dst_stride, l.count, l.levels); break;
        case 32: copy_pieces<32>(s, l.src_stride, d, l.dst_stride, l.count, l.levels); break;
        case 64: copy_pieces<64>(s, l.src_stride, d, l.dst_stride, l.count, l.levels); break;
        case 128: copy_pieces<128>(s, l.src_stride, d, l.dst_stride, l.count, l.levels); break;
        default: copy_pieces<0>(s, l.src_stride, d, l.dst_stride, l.count, l.levels); break;
      }
    }};

// Acc to a node neighbour: the target's stripes over the layout's whole
// extent are taken once and every piece is added through the mapping by the
// type's kernel, looked up once, so a patch of many rows pays the region
// lookup, the locks and the type dispatch once, not once per row.
const Protocol shm_locked{
    "shm/locked",
    [](const Situation& s) -> std::optional<Offer> {
      if (s.operation.op != Op::acc || is_network(s.peer)) return std::nullopt;
      return Offer{1, SIZE_MAX, 0.05, 0.3};
    },
    nullptr,
    [](Parts& parts, const Call& call, const StridedLayout& l) {
      const auto extent = static_cast<std::size_t>(strided::extent(l.dst_stride, l.count, l.levels));
      std::byte* d = parts.memory.local_mapping(call.name, "dst_ptr", call.proc, l.dst, extent);
      if (d == nullptr) return start_pieces(parts, call, l);
      AccStripes& stripes = parts.memory.control(call.proc)->acc;
      const int datatype = call.acc->datatype;
      const AccScale& scale = call.acc->scale;
      const AccKernel kernel = acc_kernel(datatype);
      const auto bytes = static_cast<std::size_t>(l.count[0]);
      const std::uint64_t held = stripes.take(reinterpret_cast<std::uintptr_t>(l.dst), extent);
      if (l.levels == 0) {
        kernel(datatype, scale, d, l.src, bytes, 1, 0, 0);
      } else {
        // The kernel takes the first level's rows itself; the levels above
        // it are walked as pieces of count[1] rows (the layout shifted by
        // one level).
        strided::for_each_piece(l.src_stride + 1, l.dst_stride + 1, l.count + 1, l.levels - 1,
                                [&](std::int64_t so, std::int64_t dso, std::size_t rows) {
                                  kernel(datatype, scale, d + dso, l.src + so, bytes, rows, l.dst_stride[0],
                                         l.src_stride[0]);
                                });
      }
      stripes.give_back(held);
    }};

// ---------------------------------------------------------------- net/vector-msg

// Pieces packed into vector messages that the target's helper unpacks
// (or answers, for gets): ARMCI_STRIDED_PROTOCOL=buffered, or auto up to
// ARMCI_STRIDED_BUFFERED_MAX; an Acc asked to go host-assisted goes here,
// since its target must add.
std::optional<Offer> vector_message_offer(const Situation& s) {
  if (!network(s)) return std::nullopt;
  const Offer cost{1, SIZE_MAX, 0.05, 0.001};
  switch (s.settings.strided) {
    case ProtocolChoice::buffered: return cost;
    case ProtocolChoice::host: return s.operation.op == Op::acc ? std::optional(cost) : std::nullopt;
    case ProtocolChoice::automatic: return Offer{1, s.settings.strided_buffered_max, cost.fixed_us, cost.us_per_kib};
    default: return std::nullopt;
  }
}

const Protocol net_vector_message{
    "net/vector-msg", vector_message_offer, nullptr, [](Parts& parts, const Call& call, const StridedLayout& l) {
      VectorBatches own;
      VectorBatches& batches = call.mode == Mode::aggregate ? *call.aggregate : own;
      const bool get = call.op == Op::get;
      strided::for_each_piece(l.src_stride, l.dst_stride, l.count, l.levels,
                              [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
                                const std::byte* local = get ? l.dst + dso : l.src + so;
                                const auto remote = reinterpret_cast<std::uintptr_t>(get ? l.src + so : l.dst + dso);
                                parts.vector_messages.add(call.op, call.acc, local, remote, bytes, call.proc,
                                                          call.completion, batches);
                              });
      parts.vector_messages.send_all(own, call.completion);
    }};

// ---------------------------------------------------------------- net/host-assisted

// The layout goes to the target's helper, which posts the gathers and
// scatters itself (the layer needs SGE lists); not for Acc, not on an
// aggregate handle (whose operations wait in its messages).
const Protocol net_host_assisted{
    "net/host-assisted",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.op == Op::acc || s.operation.mode == Mode::aggregate) return std::nullopt;
      const Offer cost{1, SIZE_MAX, 2.0, 0.001};
      if (s.settings.strided == ProtocolChoice::host) return cost;
      if (s.settings.strided != ProtocolChoice::automatic || s.caps->max_sge <= 1) return std::nullopt;
      return Offer{1, s.settings.strided_host_max, cost.fixed_us, cost.us_per_kib};
    },
    nullptr,
    [](Parts& parts, const Call& call, const StridedLayout& l) {
      if (call.op == Op::get)
        parts.host.start(call.name, true, l.dst, l.dst_stride, l.src, l.src_stride, l.count, l.levels, call.proc,
                         call.completion);
      else
        parts.host.start(call.name, false, l.src, l.src_stride, l.dst, l.dst_stride, l.count, l.levels, call.proc,
                         call.completion);
    }};

// ---------------------------------------------------------------- net/direct-sge

// Consecutive pieces contiguous at the target leave as one operation with a
// local gather (put) or scatter (get) list of up to max_sge entries; a run
// of one piece is a contiguous transfer.
const Protocol net_direct_sge{
    "net/direct-sge",
    [](const Situation& s) -> std::optional<Offer> {
      if (!network(s) || s.operation.op == Op::acc || s.operation.mode == Mode::aggregate) return std::nullopt;
      if (s.settings.strided != ProtocolChoice::automatic && s.settings.strided != ProtocolChoice::direct)
        return std::nullopt;
      return Offer{1, SIZE_MAX, 3.0, 0.001};
    },
    nullptr,
    [](Parts& parts, const Call& call, const StridedLayout& l) {
      const int proc = call.proc;
      const bool put = call.op == Op::put;
      auto send_run = [&](std::span<const platform::LocalSegment> run, std::uint64_t remote_address, std::size_t bytes) {
        void* remote = reinterpret_cast<void*>(remote_address);
        if (run.size() == 1) {
          if (put) parts.transfers.contiguous(call, run[0].address, remote, bytes);
          else parts.transfers.contiguous(call, remote, run[0].address, bytes);
          return;
        }
        const Region& region = parts.memory.find_region(call.name, put ? "dst" : "src", proc, remote, bytes);
        parts.completions.order_after_puts(proc, !put);
        parts.progress.with_network([&](platform::Network& net) {
          if (put) net.put(proc, run, remote_address, region.key, call.completion);
          else net.get(proc, run, remote_address, region.key, call.completion);
        });
        if (put) parts.completions.note_put(proc);
      };
      strided::Runs<platform::LocalSegment, decltype(send_run)> runs(parts.progress.max_sge(), send_run);
      strided::for_each_piece(l.src_stride, l.dst_stride, l.count, l.levels,
                              [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
                                if (put) runs.add(l.src + so, reinterpret_cast<std::uintptr_t>(l.dst + dso), bytes);
                                else runs.add(l.dst + dso, reinterpret_cast<std::uintptr_t>(l.src + so), bytes);
                              });
      runs.finish();
    }};

const Protocol* const kStrided[] = {&any_per_piece, &shm_copy, &shm_locked, &net_vector_message, &net_host_assisted,
                                    &net_direct_sge};

// ---------------------------------------------------------------- vector lists

// Vector lists have no strided layout to hand over, so no host-assisted:
// they go packed (as strided pieces would) or piece by piece.
const Protocol vector_per_piece{
    "any/per-piece", [](const Situation&) -> std::optional<Offer> { return Offer{1, SIZE_MAX, 5.0, 0.5}; }, nullptr,
    nullptr, [](Parts& parts, const Call& call, const VectorList& list, VectorBatches&) {
      for (int j = 0; j < list.count; ++j) parts.transfers.contiguous(call, list.src[j], list.dst[j], list.bytes);
    }};

const Protocol vector_message{
    "net/vector-msg", vector_message_offer, nullptr, nullptr,
    [](Parts& parts, const Call& call, const VectorList& list, VectorBatches& own) {
      VectorBatches& batches = call.mode == Mode::aggregate ? *call.aggregate : own;
      const bool get = call.op == Op::get;
      for (int j = 0; j < list.count; ++j) {
        const auto* local = static_cast<const std::byte*>(get ? list.dst[j] : list.src[j]);
        const auto remote = reinterpret_cast<std::uintptr_t>(get ? list.src[j] : list.dst[j]);
        parts.vector_messages.add(call.op, call.acc, local, remote, list.bytes, call.proc, call.completion, batches);
      }
    }};

const Protocol* const kVector[] = {&vector_per_piece, &vector_message};

}  // namespace

std::span<const Protocol* const> strided_protocols() { return kStrided; }
std::span<const Protocol* const> vector_protocols() { return kVector; }

}  // namespace armci::protocols
