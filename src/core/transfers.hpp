// Transfers: where every put, get and accumulate starts, contiguous,
// strided or vector, and the choice of how it travels. The API hands over
// checked arguments and a completion; nothing here knows ARMCI's C types.
//
// Owns: nothing but the choice; the protocols' state lives in the parts
// they use (pipeline, vector messages, host-assisted).
// Called by: the API's transfer calls, Sync (Put_flag's data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "platform/network.hpp"
#include "src/core/copy.hpp"
#include "src/core/memory.hpp"
#include "src/core/operation.hpp"
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

class Transfers {
 public:
  // Registers the Acc message kind (collective in effect: at start-up).
  Transfers(const Peers& peers, Memory& memory, Progress& progress, Messages& messages, Completions& completions,
            VectorMessages& vector_messages, Pipeline& pipeline, HostAssisted& host, const Settings& settings);

  // The remote range is checked here (contiguous) or must have been
  // checked by the caller (strided: the whole extent; vector: every piece).
  void contiguous(const Call& call, const void* src, void* dst, std::size_t bytes) {
    // Same node: a copy, decided here so that it costs no call.
    if (bytes == 0) [[unlikely]]
      return;
    if (call.op != Op::acc) {
      const bool get = call.op == Op::get;
      const Region& region = memory_.find_region(call.name, get ? "src" : "dst", call.proc, get ? src : dst, bytes);
      if (region.local != nullptr) [[likely]] {
        if (get) copy_bytes(dst, region.local + (reinterpret_cast<std::uintptr_t>(src) - region.base), bytes);
        else copy_bytes(region.local + (reinterpret_cast<std::uintptr_t>(dst) - region.base), src, bytes);
        return;
      }
    }
    contiguous_elsewhere(call, src, dst, bytes);
  }
  void strided(const Call& call, void* src, const int* src_stride, void* dst, const int* dst_stride,
               const int* count, int levels);
  void vector(const Call& call, std::span<const VectorList> lists);

 private:
  void contiguous_elsewhere(const Call& call, const void* src, void* dst, std::size_t bytes);
  void start_put(const Call& call, const void* src, void* dst, std::size_t bytes, VectorBatches* batches,
                 bool buffered);
  void start_get(const Call& call, const void* src, void* dst, std::size_t bytes, VectorBatches* batches,
                 bool buffered);
  void start_acc(const Call& call, const void* src, void* dst, std::size_t bytes, VectorBatches* batches,
                 bool buffered);
  void start_piece(const Call& call, std::byte* src, std::byte* dst, std::size_t bytes, VectorBatches* batches,
                   bool buffered);
  bool use_buffered(const void* local, std::size_t bytes) const;
  bool use_offload(const Call& call, std::size_t bytes) const;
  void handle_acc(int source, std::span<const std::byte> header, std::span<const std::byte> payload);

  const Peers& peers_;
  Memory& memory_;
  Progress& progress_;
  Messages& messages_;
  Completions& completions_;
  VectorMessages& vector_messages_;
  Pipeline& pipeline_;
  HostAssisted& host_;
  const Settings& settings_;
  std::size_t acc_chunk_ = 0;
  MessageKind acc_kind_ = 0;
};

}  // namespace armci
