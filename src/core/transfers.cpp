#include "src/core/transfers.hpp"

#include <algorithm>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/incoming.hpp"
#include "src/core/memory.hpp"
#include "src/core/names.hpp"
#include "src/core/progress.hpp"
#include "src/core/settings.hpp"
#include "src/core/wire.hpp"

namespace armci {

namespace {
constexpr Named<Op> kOpNames[] = {{"put", Op::put}, {"get", Op::get}, {"acc", Op::acc}};
constexpr Named<Mode> kModeNames[] = {
    {"blocking", Mode::blocking}, {"nonblocking", Mode::nonblocking}, {"aggregate", Mode::aggregate}};
}  // namespace

const char* to_string(Op op) { return name_of(kOpNames, op); }
const char* to_string(Mode mode) { return name_of(kModeNames, mode); }

Transfers::Transfers(const Peers& peers, Memory& memory, Progress& progress, Messages& messages,
                     Completions& completions, VectorMessages& vector_messages, Pipeline& pipeline,
                     HostAssisted& host, const Settings& settings)
    : peers_(peers),
      memory_(memory),
      progress_(progress),
      settings_(settings),
      parts_{peers, memory, progress, messages, completions, vector_messages, pipeline, host, settings, *this} {
  recent_regions_ = memory.recent_regions();
  if (progress_.has_network()) {
    // An Acc piece must fit one control message of the layer.
    const std::size_t room = progress_.capabilities().max_message;
    parts_.acc_chunk = std::min(settings_.acc_chunk, room > 256 ? (room - 256) & ~std::size_t{15} : 16);
  }
  parts_.acc_kind = messages.add(
      "acc", [this](int source, auto header, auto payload) { handle_acc(source, header, payload); },
      [](int, std::uint64_t token) {
        reinterpret_cast<platform::Completion*>(token)->pending.fetch_sub(1, std::memory_order_release);
      });
}

void Transfers::select_protocols() {
  table_ = protocols::Table(progress_.has_network() ? &progress_.capabilities() : nullptr, progress_.helper_running(),
                            settings_);
}

void Transfers::contiguous_looked_up(const Call& call, const void* src, void* dst, std::size_t bytes,
                                     const char* argument) {
  // The table's choices for every same-node peer (shm/copy, shm/locked),
  // started here so that they cost no call and no second region lookup.
  const bool get = call.op == Op::get;
  if (argument == nullptr) argument = get ? "src" : "dst";
  const Region& region = memory_.find_region(call.name, argument, call.proc, get ? src : dst, bytes);
  if (region.local != nullptr) [[likely]] {
    std::byte* local = region.local + (reinterpret_cast<std::uintptr_t>(get ? src : dst) - region.base);
    at_mapped(call.op, call.proc, call.acc, local, src, dst, bytes);
    return;
  }
  table_.find(Operation{call.op, Shape::contiguous, call.mode}, memory_.route(call.proc, region), bytes)
      .contiguous(parts_, call, src, dst, bytes);
}

[[gnu::visibility("protected")]] void Transfers::acc_mapped(int proc, const AccArgs& acc, std::byte* local,
                                                            const void* src, void* dst, std::size_t bytes) {
  apply_acc_locked(memory_.control(proc)->acc, acc.datatype, acc.scale, local, src, bytes,
                   reinterpret_cast<std::uintptr_t>(dst));
}

bool Transfers::put_notify(const Call& call, const void* src, void* dst, std::size_t bytes, std::uint32_t tag) {
  const Region& region = memory_.find_region(call.name, "dst", call.proc, dst, bytes);
  if (region.local != nullptr || !progress_.has_network()) {
    copy_same_node(Op::put, region, src, dst, bytes);
    return false;
  }
  parts_.completions.order_after_puts(call.proc, false);
  platform::LocalSegment segment{const_cast<void*>(src), bytes};
  progress_.with_network([&](platform::Network& net) {
    net.put_notify(call.proc, std::span(&segment, 1), reinterpret_cast<std::uintptr_t>(dst), region.key, tag,
                   call.completion);
  });
  parts_.completions.note_put(call.proc);
  return true;
}

std::uint64_t Transfers::notifications(std::uint32_t tag) { return progress_.notifications_received(tag); }

// The target of an acc/net/msg piece.
void Transfers::handle_acc(int source, std::span<const std::byte> header, std::span<const std::byte> payload) {
  incoming::Acc acc;
  // The origin checked the range, but a target trusts only its own table.
  if (incoming::Problem p = incoming::parse_acc(
          source, header, payload,
          [this](std::uintptr_t address, std::size_t bytes) { return memory_.find_own(address, bytes); }, acc))
    fail(p.call, "%s", p.message);
  apply_acc_locked(memory_.own_control().acc, acc.datatype, acc.scale, acc.to, acc.data.data(), acc.data.size(),
                   acc.address);
  parts_.messages.send_ack(source, parts_.acc_kind, acc.token);
}

// Strided and vector calls choose by piece size. Every piece shares the
// call's completion, so blocking, Nb, implicit handles, Wait and Fence
// behave as for contiguous calls.
void Transfers::strided(const Call& call, void* src, const int* src_stride, void* dst, const int* dst_stride,
                        const int* count, int levels) {
  const protocols::StridedLayout layout{static_cast<std::byte*>(src), src_stride, static_cast<std::byte*>(dst),
                                        dst_stride, count, levels};
  // The caller checked the whole remote extent: the region that holds its
  // start holds all of it, and says how it is reached.
  const bool get = call.op == Op::get;
  const Region& region = memory_.find_region(call.name, get ? "src_ptr" : "dst_ptr", call.proc, get ? src : dst, 1);
  table_.find(Operation{call.op, Shape::strided, call.mode}, memory_.route(call.proc, region),
              static_cast<std::size_t>(count[0]))
      .strided(parts_, call, layout);
}

void Transfers::vector(const Call& call, std::span<const VectorList> lists) {
  VectorBatches own;
  const Operation operation{call.op, Shape::vector, call.mode};
  // A neighbour with a part in network memory: its pieces may lie in
  // different regions, reached differently, so each goes by its own region
  // (the same-node row's per-piece protocol does that).
  const PeerKind peer = peers_.kind(call.proc);
  for (const VectorList& list : lists)
    if (list.bytes != 0 && list.count > 0) table_.find(operation, peer, list.bytes).vector(parts_, call, list, own);
  parts_.vector_messages.send_all(own, call.completion);
}

}  // namespace armci
