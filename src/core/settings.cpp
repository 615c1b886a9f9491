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

template <typename Enum, std::size_t N>
Enum parse_choice(const char* name, const char* const (&names)[N], const Enum (&values)[N], Enum fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  std::string allowed;
  for (std::size_t i = 0; i < N; ++i) {
    if (!std::strcmp(text, names[i])) return values[i];
    allowed += (i ? ", " : "") + std::string(names[i]);
  }
  fail("ARMCI_Init", "setting %s='%s' is not one of %s", name, text, allowed.c_str());
}

}  // namespace

const char* to_string(HelperMode mode) {
  switch (mode) {
    case HelperMode::block: return "block";
    case HelperMode::spin: return "spin";
    case HelperMode::none: return "none";
  }
  return "?";
}

const char* to_string(ProtocolChoice choice) {
  switch (choice) {
    case ProtocolChoice::automatic: return "auto";
    case ProtocolChoice::direct: return "direct";
    case ProtocolChoice::buffered: return "buffered";
    case ProtocolChoice::host: return "host";
  }
  return "?";
}

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
  const bool thread = parse_integer("ARMCI_PROGRESS_THREAD", 0, 1) != 0;
  s.helper = parse_choice("ARMCI_HELPER", {"block", "spin", "none"},
                          {HelperMode::block, HelperMode::spin, HelperMode::none},
                          thread ? HelperMode::block : HelperMode::none);
  s.helper_spin_us = parse_integer("ARMCI_HELPER_SPIN_US", 0, 50);
  if (const char* cpu = std::getenv("ARMCI_HELPER_CPU"); cpu && *cpu) {
    if (!std::strcmp(cpu, "auto")) s.helper_cpu = kHelperCpuAuto;
    else if (!std::strcmp(cpu, "none")) s.helper_cpu = kHelperCpuNone;
    else s.helper_cpu = static_cast<int>(parse_integer("ARMCI_HELPER_CPU", 0, 0));
  }
  s.protocol = parse_choice("ARMCI_PROTOCOL", {"auto", "direct", "buffered"},
                            {ProtocolChoice::automatic, ProtocolChoice::direct, ProtocolChoice::buffered},
                            ProtocolChoice::automatic);
  s.buffered_max = static_cast<std::size_t>(parse_integer("ARMCI_BUFFERED_MAX", 0, 0));
  s.buffer_chunk = static_cast<std::size_t>(parse_integer("ARMCI_BUFFER_CHUNK", 4096, 64 * 1024));
  s.buffer_count = static_cast<std::size_t>(parse_integer("ARMCI_BUFFER_COUNT", 2, 32));
  if (const char* off = std::getenv("ARMCI_OFFLOAD_MIN"); off && !std::strcmp(off, "off")) {
    s.offload_min = s.offload_min_software = SIZE_MAX;
  } else if (off && *off) {
    s.offload_min = s.offload_min_software = static_cast<std::size_t>(parse_integer("ARMCI_OFFLOAD_MIN", 0, 0));
  }
  s.max_pending = static_cast<std::size_t>(parse_integer("ARMCI_MAX_PENDING", 1, 16384));
  s.aggregate_bytes = static_cast<std::size_t>(parse_integer("ARMCI_AGGREGATE_BYTES", 1024, 64 * 1024));
  s.aggregate_piece_max = static_cast<std::size_t>(parse_integer("ARMCI_AGGREGATE_PIECE_MAX", 0, 1024));
  s.strided = parse_choice("ARMCI_STRIDED_PROTOCOL", {"auto", "direct", "buffered", "host"},
                           {ProtocolChoice::automatic, ProtocolChoice::direct, ProtocolChoice::buffered,
                            ProtocolChoice::host},
                           ProtocolChoice::automatic);
  s.strided_buffered_max = static_cast<std::size_t>(parse_integer("ARMCI_STRIDED_BUFFERED_MAX", 0, 2048));
  s.strided_host_max = static_cast<std::size_t>(parse_integer("ARMCI_STRIDED_HOST_MAX", 0, 16 * 1024));
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
      << "ARMCI_HELPER=" << to_string(helper) << "\n"
      << "ARMCI_HELPER_SPIN_US=" << helper_spin_us << "\n"
      << "ARMCI_HELPER_CPU=" << (helper_cpu == kHelperCpuAuto ? std::string("auto") : helper_cpu == kHelperCpuNone ? std::string("none") : std::to_string(helper_cpu)) << "\n"
      << "ARMCI_PROTOCOL=" << to_string(protocol) << "\n"
      << "ARMCI_BUFFERED_MAX=" << buffered_max << "\n"
      << "ARMCI_BUFFER_CHUNK=" << buffer_chunk << "\n"
      << "ARMCI_BUFFER_COUNT=" << buffer_count << "\n"
      << "ARMCI_OFFLOAD_MIN=" << (offload_min == SIZE_MAX ? std::string("off") : std::to_string(offload_min))
      << " (software verbs device: " << offload_min_software << ")\n"
      << "ARMCI_MAX_PENDING=" << max_pending << "\n"
      << "ARMCI_AGGREGATE_BYTES=" << aggregate_bytes << "\n"
      << "ARMCI_AGGREGATE_PIECE_MAX=" << aggregate_piece_max << "\n"
      << "ARMCI_STRIDED_PROTOCOL=" << to_string(strided) << "\n"
      << "ARMCI_STRIDED_BUFFERED_MAX=" << strided_buffered_max << "\n"
      << "ARMCI_STRIDED_HOST_MAX=" << strided_host_max << "\n"
      << "ARMCI_PROGRESS_IDLE_US=" << progress_idle_us << "\n"
      << "ARMCI_VERBOSE=" << verbose << "\n";
  return out.str();
}

}  // namespace armci
