// Run-time settings, read once from the environment at ARMCI_Init.
#pragma once

#include <cstddef>
#include <string>

namespace armci {

enum class NetworkChoice { automatic, ucx, verbs };

struct Settings {
  NetworkChoice network = NetworkChoice::automatic;  // ARMCI_NETWORK
  bool shared_memory = true;                         // ARMCI_SHM
  int vnode_size = 0;                                // ARMCI_VNODE_SIZE (0: whole host)
  int verbose = 0;                                   // ARMCI_VERBOSE
  std::size_t acc_chunk = 64 * 1024;                 // ARMCI_ACC_CHUNK: bytes per Acc message
  bool progress_thread = true;                       // ARMCI_PROGRESS_THREAD
  long progress_idle_us = 200;                       // ARMCI_PROGRESS_IDLE_US

  // Parses the environment; a malformed value is an error naming the variable.
  static Settings from_environment();
  // One line per setting, as the info mode prints it.
  std::string describe() const;
};

const char* to_string(NetworkChoice choice);

}  // namespace armci
