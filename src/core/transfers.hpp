// Transfers: where every put, get and accumulate starts, contiguous,
// strided or vector. One lookup in the protocol selection table
// (protocols/table.hpp) says how it travels; the protocol objects
// (protocols/*.cpp) start it. The API hands over checked arguments and a
// completion; nothing here knows ARMCI's C types.
//
// Owns: the selection table, the Acc message kind; the protocols' state
// lives in the parts they use (pipeline, vector messages, host-assisted).
// Called by: the API's transfer calls, Sync (Put_flag's data), the
// per-piece protocols, the info output (the table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "platform/network.hpp"
#include "src/core/acc.hpp"
#include "src/core/copy.hpp"
#include "src/core/memory.hpp"
#include "src/core/operation.hpp"
#include "src/core/protocols/table.hpp"
#include "src/core/vector_messages.hpp"

namespace armci {

class Completions;
class HostAssisted;
class Pipeline;
struct Settings;

// What one transfer call carries besides its data layout.
struct Call {
  const char* name;  // the ARMCI call, for messages
  Op op;
  Mode mode;
  int proc;
  const AccArgs* acc;  // Op::acc only
  platform::Completion& completion;
  VectorBatches* aggregate;  // Mode::aggregate: the handle's vector messages
};

// One list of a vector call: count pieces of `bytes` bytes each.
struct VectorList {
  void* const* src;
  void* const* dst;
  std::size_t bytes;
  int count;
};

// put/shm/copy and get/shm/copy: the bytes of a same-node peer's region
// through this process's mapping of it.
inline void copy_same_node(Op op, const Region& region, const void* src, void* dst, std::size_t bytes) {
  if (op == Op::get) copy_bytes(dst, region.local + (reinterpret_cast<std::uintptr_t>(src) - region.base), bytes);
  else copy_bytes(region.local + (reinterpret_cast<std::uintptr_t>(dst) - region.base), src, bytes);
}

// acc/shm/locked: dst += scale * src in a same-node peer's region, under
// the target's Acc stripes.
inline void acc_same_node(AccStripes& stripes, const AccArgs& acc, const Region& region, const void* src, void* dst,
                          std::size_t bytes) {
  const auto target = reinterpret_cast<std::uintptr_t>(dst);
  apply_acc_locked(stripes, acc.datatype, acc.scale, region.local + (target - region.base), src, bytes, target);
}

class Transfers {
 public:
  // Registers the Acc message kind (collective in effect: at start-up).
  Transfers(const Peers& peers, Memory& memory, Progress& progress, Messages& messages, Completions& completions,
            VectorMessages& vector_messages, Pipeline& pipeline, HostAssisted& host, const Settings& settings);
  // The recent entries die with Memory: a call after ARMCI_Finalize that
  // got past the API's checks would then fault on null, not read freed memory.
  ~Transfers() { recent_regions_ = nullptr; }
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  // Builds the selection table; once the helper thread runs or is known
  // not to (offload needs it), before the first transfer.
  void select_protocols();
  const protocols::Table& table() const { return table_; }

  // The remote range is checked here (contiguous) or must have been
  // checked by the caller (strided: the whole extent; vector: every piece).
  // `argument` names the remote pointer in errors (default "src"/"dst").
  // Inlined into the API: a range inside the same-node region found last
  // for call.proc costs one load (the recent entry) before the copy; any
  // other goes through the region lookup, which checks it and says how it
  // travels.
  [[gnu::always_inline]] void contiguous(const Call& call, const void* src, void* dst, std::size_t bytes,
                                         const char* argument = nullptr) {
    if (bytes == 0) [[unlikely]]
      return;
    if (contiguous_if_mapped(call.op, call.proc, call.acc, src, dst, bytes)) [[likely]]
      return;
    contiguous_looked_up(call, src, dst, bytes, argument);
  }
  // contiguous()'s fast path alone: true when the range (bytes > 0) lies in
  // the same-node region found last for proc, and the transfer is then
  // complete; false when nothing was done. A nonblocking call that gets
  // true needs no request: the API leaves its handle empty. The entry is
  // reached from a static pointer: two dependent loads before the copy
  // can start, where the runtime's and this object's pointers would add
  // two more (each a miss to L2 after a copy of some KiB).
  [[gnu::always_inline]] bool contiguous_if_mapped(Op op, int proc, const AccArgs* acc, const void* src, void* dst,
                                                   std::size_t bytes) {
    const RecentRegion& recent = recent_regions_[proc];
    std::byte* local = recent.local_address(reinterpret_cast<std::uintptr_t>(op == Op::get ? src : dst), bytes);
    if (local == nullptr) return false;
    at_mapped(op, proc, acc, local, src, dst, bytes);
    return true;
  }
  // A contiguous put that raises the target's notification count of `tag`
  // once its data is in place (the counted window fence). It goes to the
  // layer directly, whatever the table says for plain puts (buffered or
  // offloaded chunks would need a notification of their own each). False
  // when the target is not reached through the network: then it was a
  // copy through the node's mapping, done on return, with no notification.
  bool put_notify(const Call& call, const void* src, void* dst, std::size_t bytes, std::uint32_t tag);
  // This process's notifications received with `tag`.
  std::uint64_t notifications(std::uint32_t tag);

  void strided(const Call& call, void* src, const int* src_stride, void* dst, const int* dst_stride,
               const int* count, int levels);
  void vector(const Call& call, std::span<const VectorList> lists);

 private:
  // contiguous() past the recent entry: the region lookup (which fails on a
  // bad range and refreshes the entry), then the table's protocol.
  void contiguous_looked_up(const Call& call, const void* src, void* dst, std::size_t bytes, const char* argument);
  // put/shm/copy, get/shm/copy or acc/shm/locked at this process's address
  // of the remote range.
  [[gnu::always_inline]] void at_mapped(Op op, int proc, const AccArgs* acc, std::byte* local, const void* src,
                                        void* dst, std::size_t bytes) {
    if (op == Op::get) copy_bytes(dst, local, bytes);
    else if (op == Op::put) copy_bytes(local, src, bytes);
    else acc_mapped(proc, *acc, local, src, dst, bytes);
  }
  // acc/shm/locked at this process's address of the target range
  // (protected where defined, as copy_bytes).
  void acc_mapped(int proc, const AccArgs& acc, std::byte* local, const void* src, void* dst, std::size_t bytes);
  void handle_acc(int source, std::span<const std::byte> header, std::span<const std::byte> payload);

  const Peers& peers_;
  Memory& memory_;
  Progress& progress_;
  const Settings& settings_;
  // memory_.recent_regions() of the live runtime's Transfers (one at a
  // time); hidden: read straight, not through the GOT (a load more).
  [[gnu::visibility("hidden")]] static inline const RecentRegion* recent_regions_ = nullptr;
  protocols::Parts parts_;
  protocols::Table table_;
};

}  // namespace armci
