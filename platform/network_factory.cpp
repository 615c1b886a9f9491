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

std::unique_ptr<Network> make_network(std::string_view name, int rank, int size, const NetworkOptions& options) {
  if (name != "auto" && name != "ucx" && name != "verbs")
    throw std::runtime_error("unknown network layer '" + std::string(name) + "'");
#ifdef ARMCI_HAVE_VERBS
  if (name == "verbs" || (name == "auto" && verbs_device_available(options.verbs))) {
    if (!verbs_device_available(options.verbs))
      throw std::runtime_error("the verbs layer found no device with an active port (asked for: " + std::string(name) +
                               ")");
    return make_verbs_network(rank, size, options.verbs);
  }
#else
  if (name == "verbs")
    throw std::runtime_error("setting ARMCI_NETWORK=verbs, but this build has no verbs layer "
                             "(configure found no libibverbs)");
#endif
#ifdef ARMCI_HAVE_UCX
  return make_ucx_network(rank, size, options.ucx);
#else
  if (name == "ucx") throw std::runtime_error("setting ARMCI_NETWORK=ucx, but this build has no UCX layer");
  return nullptr;
#endif
}

std::string describe(const Capabilities& caps) {
  std::string text = caps.name + " on " + (caps.device.empty() ? std::string("?") : caps.device) + ": max_sge " +
                     std::to_string(caps.max_sge) + ", max_inline " + std::to_string(caps.max_inline) +
                     ", max_message " + std::to_string(caps.max_message) + ", ";
  text += caps.needs_local_registration ? "zero-copy needs registered local memory" : "registers local memory itself";
  if (caps.software_device) text += ", software device (moves data on the posting CPU)";
  if (caps.copies_on_caller_same_host) text += ", copies on the caller to peers on this host";
  return text;
}

}  // namespace armci::platform
