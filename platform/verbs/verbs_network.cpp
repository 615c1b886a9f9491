// The verbs layer: error texts, statistics and the factory functions. The
// layer's parts are listed in verbs_internal.hpp.
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

// --------------------------------------------------------------------------

std::string VerbsNetwork::error_string(int code) const {
  if (code == 0) return "Success";
  const int status = code & 63;
  const bool earlier = (code >> 6 & 1) != 0;
  const auto kind = static_cast<OpKind>(code >> 7 & 15);
  const int peer = code >> 11 & kPeerField;
  std::string who = peer == kPeerField ? std::string("a peer") : "peer " + std::to_string(peer);
  std::string out = std::string("verbs: ") + kind_name(kind) + " to " + who;
  if (earlier) {
    out += " not attempted: the connection failed earlier (" + status_text(status) + ")";
  } else {
    out += " failed: " + status_text(status);
  }
  return out;
}

VerbsStats VerbsNetwork::stats() const {
  VerbsStats s;
  s.rc_qps = rc_qps_;
  for (const Peer& p : peers_) {
    if (p.state == State::ready) ++s.connected_peers;
    s.queued_operations += p.queued;
  }
  return s;
}

}  // namespace armci::platform::verbs_detail

namespace armci::platform {

using verbs_detail::DeviceChoice;
using verbs_detail::VerbsNetwork;
using verbs_detail::open_device;

std::unique_ptr<Network> make_verbs_network(int rank, int size, const VerbsOptions& options) {
  return std::make_unique<VerbsNetwork>(rank, size, options);
}

bool verbs_device_available(const VerbsOptions& options) {
  try {
    DeviceChoice d = open_device(options.device, options.port, nullptr);
    if (d.context == nullptr) return false;
    ibv_close_device(d.context);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

VerbsStats verbs_stats(const Network& network) {
  const auto* v = dynamic_cast<const VerbsNetwork*>(&network);
  if (v == nullptr) throw std::invalid_argument("verbs_stats: not a verbs network");
  return v->stats();
}

}  // namespace armci::platform

