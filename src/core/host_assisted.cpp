#include "src/core/host_assisted.hpp"

#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/peer_failure.hpp"
#include "src/core/incoming.hpp"
#include "src/core/memory.hpp"
#include "src/core/strided.hpp"
#include "src/core/wire.hpp"

namespace armci {

// What the origin keeps until the target's ack: the completion to count
// down, and the cached registration its memory is exposed through.
struct HostAssisted::Request {
  platform::Completion* completion;
  buffers::RegistrationCache::Lease lease;
};

// What the target posted for one request: complete once its transfers are.
struct HostAssisted::Operation {
  platform::Completion done;
  int source = -1;
  std::uint64_t token = 0;  // the ack still owed, 0: none
  MessageKind kind = 0;
};

HostAssisted::HostAssisted(Progress& progress, Messages& messages, const Memory& memory, Completions& completions)
    : BackgroundWork(false), progress_(progress), messages_(messages), memory_(memory), completions_(completions) {
  auto acked = [this](int, std::uint64_t token) { finish_request(token); };
  put_kind_ = messages_.add("host-put", std::bind_front(&HostAssisted::handle_request, this, false), acked);
  get_kind_ = messages_.add("host-get", std::bind_front(&HostAssisted::handle_request, this, true), acked);
}

HostAssisted::~HostAssisted() = default;

void HostAssisted::release_network_resources() {
  operations_.clear();
  for (auto& [id, key] : peer_keys_) progress_.network_locked().release_remote_key(key);
  peer_keys_.clear();
  exposure_cache_.reset();
}

HostAssisted::Exposure HostAssisted::expose_local(const char* call, const void* address, std::size_t bytes) {
  Exposure exposure;
  // Memory of one of this rank's ARMCI_Malloc parts is registered already.
  if (const Region* region = memory_.find_own(reinterpret_cast<std::uintptr_t>(address), bytes))
    if (const std::vector<std::byte>* key = memory_.own_key(*region)) {
      exposure.packed_key = *key;
      return exposure;
    }
  // Anything else through the exposure cache: registered once, retired by
  // the memory hooks when it is freed or unmapped.
  std::lock_guard guard(progress_.mutex());
  if (!exposure_cache_) {
    exposure_cache_ = std::make_unique<buffers::RegistrationCache>(
        buffers::RegistrationCache::Callbacks{
            [this](void* at, std::size_t length) -> void* {
              try {
                platform::Network& network = progress_.network_locked();
                const platform::MemoryHandle handle = network.expose_memory(at, length);
                auto found = exposure_keys_.find(handle.impl);
                if (found == exposure_keys_.end()) {
                  std::vector<std::byte> packed;
                  try {
                    packed = network.pack_remote_key(handle);
                  } catch (...) {
                    network.deregister_memory(handle);
                    throw;
                  }
                  found = exposure_keys_.emplace(handle.impl, ExposedKey{std::move(packed), 0}).first;
                }
                ++found->second.registrations;
                return handle.impl;
              } catch (const std::exception&) {
                return nullptr;
              }
            },
            [this](void* registration) {
              if (auto found = exposure_keys_.find(registration);
                  found != exposure_keys_.end() && --found->second.registrations == 0)
                exposure_keys_.erase(found);
              progress_.network_locked().deregister_memory(platform::MemoryHandle{registration});
            }},
        std::size_t{1} << 30);
  }
  exposure.lease = exposure_cache_->acquire(address, bytes);
  if (!exposure.lease)
    fail(call, "registering the local side (%p, %zu bytes) for the host-assisted protocol failed", address, bytes);
  exposure.packed_key = exposure_keys_.at(exposure.lease.registration).packed;
  return exposure;
}

void HostAssisted::start(const char* call, bool is_get, void* local, const int* local_stride, void* remote,
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
  auto* request = new Request{&completion, exposure.lease};
  header.token = reinterpret_cast<std::uintptr_t>(request);
  // The target reads or writes its pieces when the message arrives: puts of
  // ours still on the wire must be there first.
  completions_.order_after_puts(proc, true);
  const MessageKind kind = is_get ? get_kind_ : put_kind_;
  messages_.expect_answer(proc, kind);
  completion.pending.fetch_add(1, std::memory_order_relaxed);  // the ack
  // The key must outlive the send (UCX may read the payload until then):
  // it stays with the request until the ack.
  progress_.with_network([&](platform::Network& net) {
    const auto& packed = payloads_.emplace(request, std::move(exposure.packed_key)).first->second;
    messages_.await_ack(proc, kind, header.token);
    net.send_message(proc, kind, std::as_bytes(std::span(&header, 1)), packed, completion);
  });
}

platform::RemoteKey HostAssisted::peer_key(int source, std::span<const std::byte> packed) {
  auto key = std::make_pair(source, std::vector<std::byte>(packed.begin(), packed.end()));
  if (auto found = peer_keys_.find(key); found != peer_keys_.end()) return found->second;
  platform::Network& network = progress_.network_locked();
  if (peer_keys_.size() >= 4096) {
    // Keys of registrations long gone: start again rather than grow.
    for (auto& [id, k] : peer_keys_) network.release_remote_key(k);
    peer_keys_.clear();
  }
  platform::RemoteKey unpacked = network.unpack_remote_key(source, packed);
  peer_keys_.emplace(std::move(key), unpacked);
  return unpacked;
}

void HostAssisted::handle_request(bool is_get, int source, std::span<const std::byte> header_bytes,
                                  std::span<const std::byte> payload) {
  incoming::Host request;
  if (incoming::Problem p = incoming::parse_host(
          is_get, source, header_bytes, payload,
          [this](std::uintptr_t address, std::size_t bytes) { return memory_.find_own(address, bytes); }, request))
    fail(p.call, "%s", p.message);
  const wire::HostHeader& header = request.header;
  platform::Network& network = progress_.network_locked();
  const platform::RemoteKey key = peer_key(source, payload);
  auto operation = std::make_unique<Operation>();
  operation->source = source;
  operation->kind = is_get ? get_kind_ : put_kind_;
  std::byte* mine = request.mine;
  // Runs of pieces contiguous on the origin's side become one transfer
  // with a gather (get: we write to the origin) or scatter (put: we read
  // from it) list of our pieces, cut at the device's SGE limit.
  auto post = [&](std::span<const platform::LocalSegment> run, std::uint64_t origin, std::size_t) {
    if (is_get)
      network.put(source, run, origin, key, operation->done);
    else
      network.get(source, run, origin, key, operation->done);
  };
  strided::Runs<platform::LocalSegment, decltype(post)> runs(network.capabilities().max_sge, post);
  strided::for_each_piece(header.target_stride, header.origin_stride, header.count, header.levels,
                          [&](std::int64_t at_target, std::int64_t at_origin, std::size_t bytes) {
                            runs.add(mine + at_target, header.origin_base + static_cast<std::uint64_t>(at_origin),
                                     bytes);
                          });
  runs.finish();
  if (is_get) {
    // Our writes land before the ack that follows them: no need to wait.
    network.order(source);
    messages_.send_ack(source, operation->kind, header.token);
    if (operation->done.done()) return;
  }
  // Reads from the origin (put) must finish before the origin may reuse its
  // memory, and our own records must outlive what we posted: the ack (or
  // just the record) waits here, polled by progress, never blocking.
  operation->token = is_get ? 0 : header.token;
  operations_.push_back(std::move(operation));
  active_.fetch_add(1);
}

int HostAssisted::advance(std::size_t) {
  int events = 0;
  while (!operations_.empty() && operations_.front()->done.done()) {
    Operation& operation = *operations_.front();
    if (int error = operation.done.error.load(); error != 0) {
      // An origin that died mid-transfer took its memory with it: the
      // transfer was its own, so there is nobody left to serve or to
      // answer, and this rank (in return mode) goes on. Anything else is
      // this rank's error.
      if (!await_peer_failure(operation.source, kNetworkErrorGrace))
        fail("ARMCI_PutS/GetS (host-assisted)", "serving rank %d: the network layer reported: %s",
             operation.source, progress_.network_locked().error_string(error).c_str());
    } else if (operation.token != 0) {
      messages_.send_ack(operation.source, operation.kind, operation.token);
    }
    operations_.pop_front();
    active_.fetch_sub(1);
    ++events;
  }
  return events;
}

void HostAssisted::finish_request(std::uint64_t token) {
  auto* request = reinterpret_cast<Request*>(token);
  if (request->lease) exposure_cache_->release(request->lease);
  payloads_.erase(request);
  request->completion->pending.fetch_sub(1, std::memory_order_release);
  delete request;
}

}  // namespace armci
