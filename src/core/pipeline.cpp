#include "src/core/pipeline.hpp"

#include <algorithm>
#include <cstring>

namespace armci {

Pipeline::Pipeline(Progress& progress, const Settings& settings)
    : BackgroundWork(true), progress_(progress), settings_(settings) {}

Pipeline::~Pipeline() = default;

void Pipeline::release_pool() {
  if (pool_registration_) progress_.network_locked().deregister_memory(pool_registration_);
  pool_registration_ = {};
}

void Pipeline::start(Op op, bool through_buffers, std::byte* user, std::uintptr_t remote, platform::RemoteKey key,
                     std::size_t bytes, int proc, platform::Completion& completion) {
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  bool unfinished;
  {
    std::lock_guard guard(progress_.mutex());
    if (through_buffers && pool_free_.empty() && pool_memory_.empty()) {
      // The pool is made on first use: jobs that never need it pay nothing.
      const std::size_t chunk = settings_.buffer_chunk;
      pool_memory_.resize(chunk * settings_.buffer_count + 4096);
      pool_registration_ = progress_.network_locked().register_memory(pool_memory_.data(), pool_memory_.size());
      for (int i = static_cast<int>(settings_.buffer_count) - 1; i >= 0; --i) pool_free_.push_back(i);
    }
    Transfer& t = transfers_.emplace_back();
    t.is_get = op == Op::get;
    t.peer = proc;
    t.user = user;
    t.remote = remote;
    t.key = key;
    t.bytes = bytes;
    t.completion = &completion;
    t.zero_copy = !through_buffers;
    active_.fetch_add(1);
    // The caller starts the first chunk moving; the rest is the helper's
    // (kicked below) while the application computes, or the caller's own
    // when it waits. An offloaded transfer is the helper's from the start:
    // its first chunk would be a copy on this very core.
    advance(through_buffers ? 1 : 0);
    unfinished = !transfers_.empty();
  }
  if (unfinished) progress_.kick_helper();
}

int Pipeline::advance(std::size_t new_chunks) {
  platform::Network& network = progress_.network_locked();
  const std::size_t chunk_size = settings_.buffer_chunk;
  // Buffers start on a 4 KiB boundary of the pool, whatever the vector's own
  // alignment.
  std::byte* pool = pool_memory_.data() + ((4096 - reinterpret_cast<std::uintptr_t>(pool_memory_.data()) % 4096) % 4096);
  int events = 0;
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    Transfer& t = *it;
    while (!t.chunks.empty() && t.chunks.front().done.done()) {
      Transfer::Chunk& c = t.chunks.front();
      if (int error = c.done.error.load(); error != 0) {
        int expected = 0;
        t.completion->error.compare_exchange_strong(expected, error);
      }
      if (c.buffer >= 0) {
        if (t.is_get) std::memcpy(t.user + c.offset, pool + static_cast<std::size_t>(c.buffer) * chunk_size, c.length);
        pool_free_.push_back(c.buffer);
      }
      t.finished += c.length;
      t.chunks.pop_front();
      ++events;
    }
    for (std::size_t started = 0; started < new_chunks && t.issued < t.bytes && (t.zero_copy || !pool_free_.empty());
         ++started) {
      Transfer::Chunk& c = t.chunks.emplace_back();
      c.offset = t.issued;
      c.length = std::min(chunk_size, t.bytes - t.issued);
      std::byte* local = t.user + c.offset;
      if (!t.zero_copy) {
        c.buffer = pool_free_.back();
        pool_free_.pop_back();
        local = pool + static_cast<std::size_t>(c.buffer) * chunk_size;
        if (!t.is_get) std::memcpy(local, t.user + c.offset, c.length);
      }
      platform::LocalSegment segment{local, c.length};
      if (t.is_get)
        network.get(t.peer, std::span(&segment, 1), t.remote + c.offset, t.key, c.done);
      else
        network.put(t.peer, std::span(&segment, 1), t.remote + c.offset, t.key, c.done);
      t.issued += c.length;
      ++events;
    }
    if (t.finished == t.bytes) {
      t.completion->pending.fetch_sub(1, std::memory_order_release);
      it = transfers_.erase(it);
      active_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++it;
    }
  }
  return events;
}

}  // namespace armci
