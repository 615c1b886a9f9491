// Strided transfers to network peers without a copy on either side:
// direct runs (one network operation per range that is contiguous at the
// target, gathering or scattering the local pieces) and the host-assisted
// protocol, where the layout travels to the target and its helper posts the
// gathers and scatters between its own pieces and the origin's memory.
#include <algorithm>
#include <cstring>

#include "src/core/error.hpp"
#include "src/core/messages.hpp"
#include "src/core/runtime.hpp"
#include "src/core/strided.hpp"

namespace armci {

// What the origin keeps until the target's ack: the completion to count
// down, and the cached registration its memory is exposed through.
struct HostRequest {
  platform::Completion* completion;
  buffers::RegistrationCache::Lease lease;
};

void Runtime::start_put_segments(const char* call, std::span<const platform::LocalSegment> local, void* dst,
                                 std::size_t bytes, int proc, platform::Completion& completion) {
  const Region& region = find_region(call, "dst", proc, dst, bytes);
  order_after_puts(proc, false);
  with_network([&](platform::Network& net) {
    net.put(proc, local, reinterpret_cast<std::uintptr_t>(dst), region.key, completion);
  });
  puts_unordered_[static_cast<std::size_t>(proc)] = 1;
}

void Runtime::start_get_segments(const char* call, std::span<const platform::LocalSegment> local, const void* src,
                                 std::size_t bytes, int proc, platform::Completion& completion) {
  const Region& region = find_region(call, "src", proc, src, bytes);
  order_after_puts(proc, true);
  with_network([&](platform::Network& net) {
    net.get(proc, local, reinterpret_cast<std::uintptr_t>(src), region.key, completion);
  });
}

Runtime::Exposure Runtime::expose_local(const char* call, const void* address, std::size_t bytes) {
  Exposure exposure;
  // Memory of one of this rank's ARMCI_Malloc parts is registered already.
  if (const Region* region = regions_.find_without_caching(rank_, reinterpret_cast<std::uintptr_t>(address), bytes)) {
    auto found = allocations_.find(region->allocation);
    if (found != allocations_.end() && !found->second->own_key.empty()) {
      exposure.packed_key = found->second->own_key;
      return exposure;
    }
  }
  // Anything else through the exposure cache: registered once, retired by
  // the memory hooks when it is freed or unmapped.
  std::lock_guard guard(network_mutex_);
  if (!exposure_cache_) {
    exposure_cache_ = std::make_unique<buffers::RegistrationCache>(
        buffers::RegistrationCache::Callbacks{
            [this](void* at, std::size_t length) -> void* {
              try {
                const platform::MemoryHandle handle = network_->expose_memory(at, length);
                exposure_keys_[handle.impl] = network_->pack_remote_key(handle);
                return handle.impl;
              } catch (const std::exception&) {
                return nullptr;
              }
            },
            [this](void* registration) {
              exposure_keys_.erase(registration);
              network_->deregister_memory(platform::MemoryHandle{registration});
            }},
        std::size_t{1} << 30);
  }
  exposure.lease = exposure_cache_->acquire(address, bytes);
  if (!exposure.lease)
    fail(call, "registering the local side (%p, %zu bytes) for the host-assisted protocol failed", address, bytes);
  exposure.packed_key = exposure_keys_.at(exposure.lease.registration);
  return exposure;
}

void Runtime::start_host_strided(const char* call, bool is_get, void* local, const int* local_stride, void* remote,
                                 const int* remote_stride, const int* count, int levels, int proc,
                                 platform::Completion& completion) {
  const std::int64_t local_extent = strided::extent(local_stride, count, levels);
  Exposure exposure = expose_local(call, local, static_cast<std::size_t>(local_extent));
  wire::HostHeader header{};
  header.target_base = reinterpret_cast<std::uintptr_t>(remote);
  header.origin_base = reinterpret_cast<std::uintptr_t>(local);
  header.levels = levels;
  for (int i = 0; i <= levels; ++i) header.count[i] = count[i];
  for (int i = 0; i < levels; ++i) {
    header.target_stride[i] = remote_stride[i];
    header.origin_stride[i] = local_stride[i];
  }
  auto* request = new HostRequest{&completion, exposure.lease};
  header.token = reinterpret_cast<std::uintptr_t>(request);
  // The target reads or writes its pieces when the message arrives: puts of
  // ours still on the wire must be there first.
  order_after_puts(proc, true);
  make_room_for_message(proc);
  completion.pending.fetch_add(1, std::memory_order_relaxed);  // the ack
  acks_pending_[static_cast<std::size_t>(proc)].fetch_add(1, std::memory_order_relaxed);
  // The key must outlive the send (UCX may read the payload until then):
  // it stays with the request until the ack.
  with_network([&](platform::Network& net) {
    const auto& packed = host_payloads_.emplace(request, std::move(exposure.packed_key)).first->second;
    net.send_message(proc, is_get ? wire::kHostGet : wire::kHostPut, std::as_bytes(std::span(&header, 1)), packed,
                     completion);
  });
}

platform::RemoteKey Runtime::host_key(int source, std::span<const std::byte> packed) {
  auto key = std::make_pair(source, std::vector<std::byte>(packed.begin(), packed.end()));
  if (auto found = host_keys_.find(key); found != host_keys_.end()) return found->second;
  if (host_keys_.size() >= 4096) {
    // Keys of registrations long gone: start again rather than grow.
    for (auto& [id, k] : host_keys_) network_->release_remote_key(k);
    host_keys_.clear();
  }
  platform::RemoteKey unpacked = network_->unpack_remote_key(source, packed);
  host_keys_.emplace(std::move(key), unpacked);
  return unpacked;
}

void Runtime::handle_host_request(int source, bool is_get, std::span<const std::byte> header_bytes,
                                  std::span<const std::byte> payload) {
  const char* call = is_get ? "ARMCI_GetS (host-assisted)" : "ARMCI_PutS (host-assisted)";
  wire::HostHeader header;
  std::memcpy(&header, header_bytes.data(), sizeof header);
  if (header.levels < 0 || header.levels > strided::kMaxLevels)
    fail(call, "a request from rank %d has %d stride levels", source, header.levels);
  strided::Shape shape;
  if (strided::check(header.origin_stride, header.target_stride, header.count, header.levels, shape))
    fail(call, "a request from rank %d carries a layout that does not check", source);
  const Region* region = regions_.find_without_caching(rank_, header.target_base,
                                                       static_cast<std::size_t>(shape.dst_extent));
  if (region == nullptr || region->local == nullptr)
    fail(call, "argument '%s' of a request from rank %d (0x%llx, %lld bytes) is not inside any ARMCI_Malloc "
               "region of rank %d",
         is_get ? "src_ptr" : "dst_ptr", source, static_cast<unsigned long long>(header.target_base),
         static_cast<long long>(shape.dst_extent), rank_);
  const platform::RemoteKey key = host_key(source, payload);
  auto operation = std::make_unique<HostOperation>();
  operation->source = source;
  operation->token = header.token;
  std::byte* mine = region->local + (header.target_base - region->base);
  // Runs of pieces contiguous on the origin's side become one transfer
  // with a gather (get: we write to the origin) or scatter (put: we read
  // from it) list of our pieces, cut at the device's SGE limit.
  auto post = [&](std::span<const platform::LocalSegment> run, std::uint64_t origin, std::size_t) {
    if (is_get)
      network_->put(source, run, origin, key, operation->done);
    else
      network_->get(source, run, origin, key, operation->done);
  };
  strided::Runs<platform::LocalSegment, decltype(post)> runs(network_->capabilities().max_sge, post);
  strided::for_each_piece(header.target_stride, header.origin_stride, header.count, header.levels,
                          [&](std::int64_t at_target, std::int64_t at_origin, std::size_t bytes) {
                            runs.add(mine + at_target, header.origin_base + static_cast<std::uint64_t>(at_origin),
                                     bytes);
                          });
  runs.finish();
  if (is_get) {
    // Our writes land before the ack that follows them: no need to wait.
    network_->order(source);
    send_ack(source, header.token, wire::kAckHost);
    if (operation->done.done()) return;
  }
  // Reads from the origin (put) must finish before the origin may reuse its
  // memory, and our own records must outlive what we posted: the ack (or
  // just the record) waits here, polled by progress, never blocking.
  operation->token = is_get ? 0 : header.token;
  host_operations_.push_back(std::move(operation));
  host_active_.fetch_add(1);
}

int Runtime::advance_host_operations() {
  int events = 0;
  while (!host_operations_.empty() && host_operations_.front()->done.done()) {
    HostOperation& operation = *host_operations_.front();
    if (int error = operation.done.error.load(); error != 0)
      fail("ARMCI_PutS/GetS (host-assisted)", "serving rank %d: the network layer reported: %s", operation.source,
           network_->error_string(error).c_str());
    if (operation.token != 0) send_ack(operation.source, operation.token, wire::kAckHost);
    host_operations_.pop_front();
    host_active_.fetch_sub(1);
    ++events;
  }
  return events;
}

void Runtime::finish_host_request(std::uint64_t token) {
  auto* request = reinterpret_cast<HostRequest*>(token);
  if (request->lease) exposure_cache_->release(request->lease);
  host_payloads_.erase(request);
  request->completion->pending.fetch_sub(1, std::memory_order_release);
  delete request;
}

}  // namespace armci
