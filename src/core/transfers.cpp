#include "src/core/transfers.hpp"

#include <algorithm>
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/copy.hpp"
#include "src/core/error.hpp"
#include "src/core/host_assisted.hpp"
#include "src/core/memory.hpp"
#include "src/core/pipeline.hpp"
#include "src/core/settings.hpp"
#include "src/core/strided.hpp"
#include "src/core/wire.hpp"

namespace armci {

const char* to_string(Op op) {
  switch (op) {
    case Op::put: return "put";
    case Op::get: return "get";
    case Op::acc: return "acc";
  }
  return "?";
}

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::blocking: return "blocking";
    case Mode::nonblocking: return "nonblocking";
    case Mode::aggregate: return "aggregate";
  }
  return "?";
}

Transfers::Transfers(const Peers& peers, Memory& memory, Progress& progress, Messages& messages,
                     Completions& completions, VectorMessages& vector_messages, Pipeline& pipeline,
                     HostAssisted& host, const Settings& settings)
    : peers_(peers),
      memory_(memory),
      progress_(progress),
      messages_(messages),
      completions_(completions),
      vector_messages_(vector_messages),
      pipeline_(pipeline),
      host_(host),
      settings_(settings) {
  if (progress_.has_network()) {
    // An Acc piece must fit one control message of the layer.
    const std::size_t room = progress_.capabilities().max_message;
    acc_chunk_ = std::min(settings_.acc_chunk, room > 256 ? (room - 256) & ~std::size_t{15} : 16);
  }
  acc_kind_ = messages_.add(
      "acc", [this](int source, auto header, auto payload) { handle_acc(source, header, payload); },
      [](int, std::uint64_t token) {
        reinterpret_cast<platform::Completion*>(token)->pending.fetch_sub(1, std::memory_order_release);
      });
}

// ------------------------------------------------------------------ contiguous

bool Transfers::use_buffered(const void* local, std::size_t bytes) const {
  switch (settings_.protocol) {
    case ProtocolChoice::direct: return false;
    case ProtocolChoice::buffered: return true;
    case ProtocolChoice::automatic: break;
  }
  // A layer that registers and caches local memory itself does better than
  // a copy; small enough to travel inline, nothing to gain either.
  const platform::Capabilities& caps = progress_.capabilities();
  if (!caps.needs_local_registration || bytes <= caps.max_inline || bytes > settings_.buffered_max) return false;
  // Memory of an ARMCI_Malloc region is registered already.
  return memory_.find_own(reinterpret_cast<std::uintptr_t>(local), bytes) == nullptr;
}

// Offload: a nonblocking transfer whose data the layer moves with the
// calling CPU (UCX to a peer on this host copies inside the call) is handed
// to the helper in chunks straight from the user's memory, so the copy runs
// on the helper's core while the application computes.
bool Transfers::use_offload(const Call& call, std::size_t bytes) const {
  if (call.mode == Mode::blocking || !progress_.helper_running()) return false;
  const platform::Capabilities& caps = progress_.capabilities();
  if (caps.software_device) return bytes >= settings_.offload_min_software;
  return caps.copies_on_caller_same_host && peers_.kind(call.proc) == PeerKind::network_host &&
         bytes >= settings_.offload_min;
}

void Transfers::start_put(const Call& call, const void* src, void* dst, std::size_t bytes, VectorBatches* batches,
                          bool buffered) {
  if (bytes == 0) return;
  const int proc = call.proc;
  const Region& region = memory_.find_region(call.name, "dst", proc, dst, bytes);
  if (region.local != nullptr) [[likely]] {
    copy_bytes(region.local + (reinterpret_cast<std::uintptr_t>(dst) - region.base), src, bytes);
    return;
  }
  const auto remote = reinterpret_cast<std::uintptr_t>(dst);
  if (batches != nullptr && (buffered || bytes <= settings_.aggregate_piece_max)) {
    vector_messages_.add(Op::put, nullptr, static_cast<const std::byte*>(src), remote, bytes, proc, call.completion,
                         *batches);
    return;
  }
  completions_.order_after_puts(proc, false);
  auto* user = static_cast<std::byte*>(const_cast<void*>(src));
  if (use_offload(call, bytes)) {
    pipeline_.start(Op::put, false, user, remote, region.key, bytes, proc, call.completion);
  } else if (use_buffered(src, bytes)) {
    pipeline_.start(Op::put, true, user, remote, region.key, bytes, proc, call.completion);
  } else {
    platform::LocalSegment segment{user, bytes};
    progress_.with_network(
        [&](platform::Network& net) { net.put(proc, std::span(&segment, 1), remote, region.key, call.completion); });
  }
  completions_.note_put(proc);
}

void Transfers::start_get(const Call& call, const void* src, void* dst, std::size_t bytes, VectorBatches* batches,
                          bool buffered) {
  if (bytes == 0) return;
  const int proc = call.proc;
  const Region& region = memory_.find_region(call.name, "src", proc, src, bytes);
  if (region.local != nullptr) [[likely]] {
    copy_bytes(dst, region.local + (reinterpret_cast<std::uintptr_t>(src) - region.base), bytes);
    return;
  }
  const auto remote = reinterpret_cast<std::uintptr_t>(src);
  if (batches != nullptr && (buffered || bytes <= settings_.aggregate_piece_max)) {
    vector_messages_.add(Op::get, nullptr, static_cast<const std::byte*>(dst), remote, bytes, proc, call.completion,
                         *batches);
    return;
  }
  completions_.order_after_puts(proc, true);
  auto* user = static_cast<std::byte*>(dst);
  if (use_offload(call, bytes)) {
    pipeline_.start(Op::get, false, user, remote, region.key, bytes, proc, call.completion);
    return;
  }
  if (use_buffered(dst, bytes)) {
    pipeline_.start(Op::get, true, user, remote, region.key, bytes, proc, call.completion);
    return;
  }
  platform::LocalSegment segment{dst, bytes};
  progress_.with_network(
      [&](platform::Network& net) { net.get(proc, std::span(&segment, 1), remote, region.key, call.completion); });
}

void Transfers::start_acc(const Call& call, const void* src, void* dst, std::size_t bytes, VectorBatches* batches,
                          bool buffered) {
  if (bytes == 0) return;
  const int proc = call.proc;
  const Region& region = memory_.find_region(call.name, "dst", proc, dst, bytes);
  const auto target = reinterpret_cast<std::uintptr_t>(dst);
  if (region.local != nullptr) {
    apply_acc_locked(*memory_.control(proc), call.acc->datatype, call.acc->scale, region.local + (target - region.base),
                     src, bytes, target);
    return;
  }
  if (batches != nullptr && (buffered || bytes <= settings_.aggregate_piece_max)) {
    vector_messages_.add(Op::acc, call.acc, static_cast<const std::byte*>(src), target, bytes, proc, call.completion,
                         *batches);
    return;
  }
  // The target applies it: the network cannot add floating-point data.
  completions_.order_after_puts(proc, true);
  const auto* bytes_in = static_cast<const std::byte*>(src);
  for (std::size_t done = 0; done < bytes; done += acc_chunk_) {
    const std::size_t piece = std::min(acc_chunk_, bytes - done);
    wire::AccHeader header{};
    header.address = target + done;
    header.token = reinterpret_cast<std::uintptr_t>(&call.completion);
    header.bytes = piece;
    header.datatype = call.acc->datatype;
    header.scale = call.acc->scale;
    messages_.expect_answer(proc);
    // One count for the ack, on top of the send's own local completion.
    call.completion.pending.fetch_add(1, std::memory_order_relaxed);
    progress_.with_network([&](platform::Network& net) {
      net.send_message(proc, acc_kind_, std::as_bytes(std::span(&header, 1)), std::span(bytes_in + done, piece),
                       call.completion);
    });
  }
}

void Transfers::handle_acc(int source, std::span<const std::byte> header_bytes, std::span<const std::byte> payload) {
  const auto header = wire::read<wire::AccHeader>(header_bytes.data());
  // The origin checked the range, but a target trusts only its own table.
  const Region* region = memory_.find_own(header.address, header.bytes);
  if (region == nullptr || payload.size() != header.bytes || acc_element_size(header.datatype) == 0)
    fail("ARMCI_Acc", "argument 'dst' of a request from rank %d (0x%llx, %llu bytes) is not inside "
                      "any ARMCI_Malloc region of rank %d",
         source, static_cast<unsigned long long>(header.address), static_cast<unsigned long long>(header.bytes),
         error_rank());
  apply_acc_locked(memory_.own_control(), header.datatype, header.scale,
                   region->local + (header.address - region->base), payload.data(), header.bytes, header.address);
  messages_.send_ack(source, acc_kind_, header.token);
}

void Transfers::contiguous_elsewhere(const Call& call, const void* src, void* dst, std::size_t bytes) {
  VectorBatches* batches = call.mode == Mode::aggregate ? call.aggregate : nullptr;
  switch (call.op) {
    case Op::put: start_put(call, src, dst, bytes, batches, false); break;
    case Op::get: start_get(call, src, dst, bytes, batches, false); break;
    case Op::acc: start_acc(call, src, dst, bytes, batches, false); break;
  }
}

// ------------------------------------------------------------------ strided and vector
// The layout is walked piece by piece and each contiguous piece goes
// through start_put/start_get/start_acc with one Completion, so blocking,
// Nb, implicit handles, Wait and Fence behave as for contiguous calls.

namespace {

enum class Protocol { direct, buffered, host };

// Same node, put or get: the remote side is translated once and every piece
// is a plain copy, so small pieces cost a few nanoseconds each.
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

bool copy_strided_locally(const Call& call, const Memory& memory, std::byte* s, const int* src_stride, std::byte* d,
                          const int* dst_stride, const int* count, int levels) {
  const auto extent =
      static_cast<std::size_t>(strided::extent(call.op == Op::get ? src_stride : dst_stride, count, levels));
  if (call.op == Op::get) {
    s = memory.local_mapping(call.name, "src_ptr", call.proc, s, extent);
    if (s == nullptr) return false;
  } else {
    d = memory.local_mapping(call.name, "dst_ptr", call.proc, d, extent);
    if (d == nullptr) return false;
  }
  switch (count[0]) {
    case 8: copy_pieces<8>(s, src_stride, d, dst_stride, count, levels); break;
    case 16: copy_pieces<16>(s, src_stride, d, dst_stride, count, levels); break;
    case 32: copy_pieces<32>(s, src_stride, d, dst_stride, count, levels); break;
    case 64: copy_pieces<64>(s, src_stride, d, dst_stride, count, levels); break;
    case 128: copy_pieces<128>(s, src_stride, d, dst_stride, count, levels); break;
    default: copy_pieces<0>(s, src_stride, d, dst_stride, count, levels); break;
  }
  return true;
}

// How pieces of `piece_bytes` to proc travel. Same node: copied piece by
// piece. Network: packed into vector messages that the target's helper
// unpacks (buffered, small pieces), the layout handed to the target's
// helper which posts gather/scatter lists itself (host-assisted, medium
// pieces where the layer has SGE lists; not for Acc, which the target must
// apply itself), or one network operation per run of pieces contiguous at
// the target (direct).
Protocol strided_protocol(const Peers& peers, const Settings& settings, std::size_t max_sge, Op op, int proc,
                          std::size_t piece_bytes) {
  if (!peers.reached_by_network(proc)) return Protocol::direct;
  switch (settings.strided) {
    case StridedChoice::direct: return Protocol::direct;
    case StridedChoice::buffered: return Protocol::buffered;
    case StridedChoice::host: return op == Op::acc ? Protocol::buffered : Protocol::host;
    case StridedChoice::automatic: break;
  }
  if (piece_bytes <= settings.strided_buffered_max) return Protocol::buffered;
  if (op != Op::acc && max_sge > 1 && piece_bytes <= settings.strided_host_max) return Protocol::host;
  return Protocol::direct;
}

}  // namespace

void Transfers::start_piece(const Call& call, std::byte* s, std::byte* d, std::size_t bytes, VectorBatches* batches,
                            bool buffered) {
  switch (call.op) {
    case Op::put: start_put(call, s, d, bytes, batches, buffered); break;
    case Op::get: start_get(call, s, d, bytes, batches, buffered); break;
    case Op::acc: start_acc(call, s, d, bytes, batches, buffered); break;
  }
}

void Transfers::strided(const Call& call, void* src, const int* src_stride, void* dst, const int* dst_stride,
                        const int* count, int levels) {
  auto* s = static_cast<std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  const int proc = call.proc;
  const Op op = call.op;
  VectorBatches* aggregate = call.mode == Mode::aggregate ? call.aggregate : nullptr;
  if (op != Op::acc && !peers_.reached_by_network(proc) &&
      copy_strided_locally(call, memory_, s, src_stride, d, dst_stride, count, levels))
    return;
  const std::size_t max_sge = progress_.max_sge();
  const Protocol protocol = strided_protocol(peers_, settings_, max_sge, op, proc, static_cast<std::size_t>(count[0]));
  if (protocol == Protocol::host && aggregate == nullptr) {
    if (op == Op::get)
      host_.start(call.name, true, dst, dst_stride, src, src_stride, count, levels, proc, call.completion);
    else
      host_.start(call.name, false, src, src_stride, dst, dst_stride, count, levels, proc, call.completion);
    return;
  }
  if (protocol == Protocol::direct && op != Op::acc && aggregate == nullptr && peers_.reached_by_network(proc)) {
    // Direct: consecutive pieces contiguous at the target leave as one
    // operation with a local gather (put) or scatter (get) list.
    auto send_run = [&](std::span<const platform::LocalSegment> run, std::uint64_t remote_address, std::size_t bytes) {
      void* remote = reinterpret_cast<void*>(remote_address);
      if (run.size() == 1) {
        if (op == Op::put) start_put(call, run[0].address, remote, bytes, nullptr, false);
        else start_get(call, remote, run[0].address, bytes, nullptr, false);
        return;
      }
      const Region& region = memory_.find_region(call.name, op == Op::put ? "dst" : "src", proc, remote, bytes);
      completions_.order_after_puts(proc, op != Op::put);
      progress_.with_network([&](platform::Network& net) {
        if (op == Op::put) net.put(proc, run, remote_address, region.key, call.completion);
        else net.get(proc, run, remote_address, region.key, call.completion);
      });
      if (op == Op::put) completions_.note_put(proc);
    };
    strided::Runs<platform::LocalSegment, decltype(send_run)> runs(max_sge, send_run);
    strided::for_each_piece(src_stride, dst_stride, count, levels, [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
      if (op == Op::put) runs.add(s + so, reinterpret_cast<std::uintptr_t>(d + dso), bytes);
      else runs.add(d + dso, reinterpret_cast<std::uintptr_t>(s + so), bytes);
    });
    runs.finish();
    return;
  }
  const bool buffered = protocol == Protocol::buffered;
  VectorBatches own;
  VectorBatches* batches = aggregate ? aggregate : (buffered ? &own : nullptr);
  strided::for_each_piece(src_stride, dst_stride, count, levels, [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
    start_piece(call, s + so, d + dso, bytes, batches, buffered);
  });
  vector_messages_.send_all(own, call.completion);
}

void Transfers::vector(const Call& call, std::span<const VectorList> lists) {
  VectorBatches* aggregate = call.mode == Mode::aggregate ? call.aggregate : nullptr;
  const std::size_t max_sge = progress_.max_sge();
  VectorBatches own;
  for (const VectorList& list : lists) {
    if (list.bytes == 0) continue;
    // Host-assisted needs a strided layout to hand over: vector lists go
    // buffered or direct.
    const bool buffered = strided_protocol(peers_, settings_, max_sge, call.op, call.proc, list.bytes) == Protocol::buffered;
    VectorBatches* batches = aggregate ? aggregate : (buffered ? &own : nullptr);
    for (int j = 0; j < list.count; ++j)
      start_piece(call, static_cast<std::byte*>(list.src[j]), static_cast<std::byte*>(list.dst[j]), list.bytes, batches,
                  buffered);
  }
  vector_messages_.send_all(own, call.completion);
}

}  // namespace armci
