// The pipeline: a contiguous transfer cut into chunks that move one after
// the other, either through a pool of registered buffers (the copy of one
// chunk overlapping the transfer of the one before: the buffered protocol)
// or straight from the user's memory (offload: the chunks are posted by the
// helper thread, so a layer that moves data with the posting CPU does it on
// the helper's core). The caller starts the first chunk; the rest move with
// progress, the helper's (kicked) or the caller's own when it waits.
//
// Owns: the pool (made on first use), the transfers under way.
// Called by: the buffered and offload protocols; progress (advance, as
// background work, with the network mutex held).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <vector>

#include "platform/network.hpp"
#include "src/core/operation.hpp"
#include "src/core/progress.hpp"
#include "src/core/settings.hpp"

namespace armci {

class Pipeline : public BackgroundWork {
 public:
  Pipeline(Progress& progress, const Settings& settings);
  ~Pipeline() override;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // op: put or get. through_buffers: the buffered protocol; otherwise the
  // chunks are the user's memory itself and all of them are the helper's.
  void start(Op op, bool through_buffers, std::byte* user, std::uintptr_t remote, platform::RemoteKey key,
             std::size_t bytes, int proc, platform::Completion& completion);

  int advance(std::size_t new_chunks) override;

  // Shutdown, helper stopped: gives the pool's registration back.
  void release_pool();

 private:
  struct Transfer {
    struct Chunk {
      int buffer = -1;
      std::size_t offset = 0;
      std::size_t length = 0;
      platform::Completion done;
    };
    bool is_get = false;
    bool zero_copy = false;
    int peer = -1;
    std::byte* user = nullptr;
    std::uintptr_t remote = 0;
    platform::RemoteKey key{};
    std::size_t bytes = 0;
    std::size_t issued = 0;
    std::size_t finished = 0;
    platform::Completion* completion = nullptr;
    std::deque<Chunk> chunks;  // in flight, oldest first
  };

  Progress& progress_;
  const Settings& settings_;
  // The pool and the transfers using it (network mutex).
  std::vector<std::byte> pool_memory_;
  platform::MemoryHandle pool_registration_{};
  std::vector<int> pool_free_;
  std::list<Transfer> transfers_;
};

}  // namespace armci
