#include "src/core/settings.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "src/core/error.hpp"

namespace armci {
namespace {

long parse_integer(const char* name, long minimum, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < minimum)
    fail("ARMCI_Init", "setting %s='%s' is not an integer >= %ld", name, text, minimum);
  return value;
}

}  // namespace

const char* to_string(NetworkChoice choice) {
  switch (choice) {
    case NetworkChoice::automatic: return "auto";
    case NetworkChoice::ucx: return "ucx";
    case NetworkChoice::verbs: return "verbs";
  }
  return "?";
}

Settings Settings::from_environment() {
  Settings s;
  if (const char* net = std::getenv("ARMCI_NETWORK"); net && *net) {
    if (!std::strcmp(net, "auto")) s.network = NetworkChoice::automatic;
    else if (!std::strcmp(net, "ucx")) s.network = NetworkChoice::ucx;
    else if (!std::strcmp(net, "verbs")) s.network = NetworkChoice::verbs;
    else fail("ARMCI_Init", "setting ARMCI_NETWORK='%s' is not one of auto, ucx, verbs", net);
  }
  s.shared_memory = parse_integer("ARMCI_SHM", 0, 1) != 0;
  s.vnode_size = static_cast<int>(parse_integer("ARMCI_VNODE_SIZE", 0, 0));
  s.verbose = static_cast<int>(parse_integer("ARMCI_VERBOSE", 0, 0));
  s.acc_chunk = static_cast<std::size_t>(parse_integer("ARMCI_ACC_CHUNK", 64, 64 * 1024));
  s.acc_chunk &= ~std::size_t{15};  // whole elements of every type
  s.progress_thread = parse_integer("ARMCI_PROGRESS_THREAD", 0, 1) != 0;
  s.progress_idle_us = parse_integer("ARMCI_PROGRESS_IDLE_US", 1, 200);
  if (s.progress_idle_us >= 1000000)
    fail("ARMCI_Init", "setting ARMCI_PROGRESS_IDLE_US=%ld is a second or more", s.progress_idle_us);
  return s;
}

std::string Settings::describe() const {
  std::ostringstream out;
  out << "ARMCI_NETWORK=" << to_string(network) << "\n"
      << "ARMCI_SHM=" << (shared_memory ? 1 : 0) << "\n"
      << "ARMCI_VNODE_SIZE=" << vnode_size << (vnode_size == 0 ? " (whole host)" : "") << "\n"
      << "ARMCI_ACC_CHUNK=" << acc_chunk << "\n"
      << "ARMCI_PROGRESS_THREAD=" << (progress_thread ? 1 : 0) << "\n"
      << "ARMCI_PROGRESS_IDLE_US=" << progress_idle_us << "\n"
      << "ARMCI_VERBOSE=" << verbose << "\n";
  return out.str();
}

}  // namespace armci
