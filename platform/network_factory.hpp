// Picks and builds the network layer by name, so the core names no network.
#pragma once

#include <memory>
#include <string_view>

#include "platform/network.hpp"
#include "platform/options.hpp"

namespace armci::platform {

// name: "auto" (raw verbs where a device with an active port exists, else
// UCX), "ucx" or "verbs". Throws std::runtime_error, with a message for the
// user, when the named layer is not built or has no device.
std::unique_ptr<Network> make_network(std::string_view name, int rank, int size, const NetworkOptions& options);

}  // namespace armci::platform
