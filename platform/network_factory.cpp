#include "platform/network_factory.hpp"

#include <stdexcept>
#include <string>

#include "config.h"
#ifdef ARMCI_HAVE_UCX
#include "platform/ucx/ucx_network.hpp"
#endif
#ifdef ARMCI_HAVE_VERBS
#include "platform/verbs/verbs_network.hpp"
#endif

namespace armci::platform {

std::unique_ptr<Network> make_network(std::string_view name, int rank, int size) {
  if (name != "auto" && name != "ucx" && name != "verbs")
    throw std::runtime_error("unknown network layer '" + std::string(name) + "'");
#ifdef ARMCI_HAVE_VERBS
  if (name == "verbs" || (name == "auto" && verbs_device_available())) {
    if (!verbs_device_available())
      throw std::runtime_error("setting ARMCI_NETWORK=verbs, but no verbs device with an active port was found");
    return make_verbs_network(rank, size);
  }
#else
  if (name == "verbs")
    throw std::runtime_error("setting ARMCI_NETWORK=verbs, but this build has no verbs layer "
                             "(configure found no libibverbs)");
#endif
#ifdef ARMCI_HAVE_UCX
  return make_ucx_network(rank, size);
#else
  if (name == "ucx") throw std::runtime_error("setting ARMCI_NETWORK=ucx, but this build has no UCX layer");
  return nullptr;
#endif
}

}  // namespace armci::platform
