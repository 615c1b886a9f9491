// UCX (ucp) implementation of platform::Network.
#pragma once

#include <memory>

#include "platform/network.hpp"
#include "platform/options.hpp"

namespace armci::platform {

// rank/size are this process's place in the job; peers are addressed by rank.
std::unique_ptr<Network> make_ucx_network(int rank, int size, const UcxOptions& options = {});

}  // namespace armci::platform
