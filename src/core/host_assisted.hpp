// Host-assisted strided transfers to network peers: the origin sends the
// layout and a key to its own (exposed) memory; the target's helper posts
// the transfers between its pieces and the origin's memory with gather and
// scatter lists, never copying data and never waiting on what it posted.
//
// Owns: the exposure cache (local memory registered for peers to reach),
// the keys packed for requests until their ack, the peers' unpacked keys,
// and, at the target, the operations posted and not yet complete.
// Called by: the host-assisted protocols (start); messages (the request
// handlers), progress (advance, as background work).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "buffers/registration_cache.hpp"
#include "platform/network.hpp"
#include "src/core/messages.hpp"
#include "src/core/progress.hpp"

namespace armci {

class Completions;
class Memory;

class HostAssisted : public BackgroundWork {
 public:
  // Registers its message kinds (collective in effect: at start-up).
  HostAssisted(Progress& progress, Messages& messages, const Memory& memory, Completions& completions);
  ~HostAssisted() override;

  // Origin: a strided put (local -> remote) or get (remote -> local) to proc.
  void start(const char* call, bool is_get, void* local, const int* local_stride, void* remote,
             const int* remote_stride, const int* count, int levels, int proc, platform::Completion& completion);

  int advance(std::size_t new_chunks) override;

  // Shutdown, helper stopped: gives keys and registrations back.
  void release_network_resources();

 private:
  struct Exposure {
    std::vector<std::byte> packed_key;
    buffers::RegistrationCache::Lease lease;  // released when the transfer ends
  };
  struct Request;
  struct Operation;
  Exposure expose_local(const char* call, const void* address, std::size_t bytes);
  void handle_request(bool is_get, int source, std::span<const std::byte> header, std::span<const std::byte> payload);
  void finish_request(std::uint64_t token);
  platform::RemoteKey peer_key(int source, std::span<const std::byte> packed);

  Progress& progress_;
  Messages& messages_;
  const Memory& memory_;
  Completions& completions_;
  MessageKind put_kind_ = 0, get_kind_ = 0;
  // Origin: local memory exposed to peers, and the packed key of each of its
  // registrations (network mutex); keys sent, kept until the ack.
  std::unique_ptr<buffers::RegistrationCache> exposure_cache_;
  // UCX hands out the same memory handle again for a range it has mapped
  // already (its own registration cache), so one handle can back several
  // entries of ours: its key lives until the last of them is deregistered.
  struct ExposedKey {
    std::vector<std::byte> packed;
    int registrations = 0;
  };
  std::map<void*, ExposedKey> exposure_keys_;
  std::map<const void*, std::vector<std::byte>> payloads_;
  // Target: the operations it posted, and the origins' keys it unpacked.
  std::deque<std::unique_ptr<Operation>> operations_;
  std::map<std::pair<int, std::vector<std::byte>>, platform::RemoteKey> peer_keys_;
};

}  // namespace armci
