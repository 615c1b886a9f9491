// InfiniBand verbs (rdma-core libibverbs) implementation of platform::Network:
// reliable-connected QPs made on first use of a peer through a handshake over
// one UD QP, an SRQ for control messages, RDMA write/read/atomics for the rest.
// Tuning knobs (VerbsOptions, set from ARMCI_VERBS_*) are described in
// platform/verbs/README.md.
#pragma once

#include <cstddef>
#include <memory>

#include "platform/network.hpp"
#include "platform/options.hpp"

namespace armci::platform {

// rank/size are this process's place in the job; peers are addressed by rank.
// Throws std::runtime_error when no usable device/port exists or a verbs
// resource cannot be created, std::invalid_argument for bad settings.
std::unique_ptr<Network> make_verbs_network(int rank, int size, const VerbsOptions& options = {});

// True when a device with an ACTIVE port exists (honouring options.device
// and options.port); opens and closes the device.
bool verbs_device_available(const VerbsOptions& options = {});

// Counters for tests and diagnostics.
struct VerbsStats {
  std::size_t rc_qps = 0;           // RC QPs created: one per peer ever used
  std::size_t connected_peers = 0;  // peers whose connection is up
  std::size_t queued_operations = 0;  // waiting for a connection or resources
};

// `network` must come from make_verbs_network (std::invalid_argument if not).
VerbsStats verbs_stats(const Network& network);

}  // namespace armci::platform
