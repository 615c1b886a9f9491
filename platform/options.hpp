// The layers' tuning, as plain values. The layers read no environment: the
// core parses every ARMCI_* setting in one place (src/core/settings.cpp)
// and hands these over, so its info output shows them with the others.
// The defaults here are the layers' own.
#pragma once

#include <cstddef>
#include <string>

namespace armci::platform {

// platform/verbs/README.md explains each; the setting names are the core's
// (ARMCI_VERBS_<NAME>).
struct VerbsOptions {
  std::string device;            // empty: the first device with an active port
  int port = 0;                  // 0: first active
  int gid_index = -1;            // -1: choose
  std::size_t recv_size = 8192;  // bytes of one receive buffer (largest message)
  std::size_t recv_count = 256;
  std::size_t send_buffers = 64;
  std::size_t bounce_size = 4096;
  std::size_t bounce_count = 256;
  std::size_t sq_depth = 128;
  std::size_t cq_size = 4096;
  std::size_t max_inline = 256;
  std::size_t max_sge = 16;
  std::size_t max_msg = 0;  // 0: the port's max_msg_sz
  std::size_t rd_atomic = 16;
  int sl = 0;
  int timeout = 14;  // 4.096 us * 2^14 = 67 ms per ack timeout
  int retry_cnt = 7;
  double connect_timeout = 600;  // seconds, 0: forever
  int connect_retry_ms = 50;
  bool debug = false;                            // trace handshakes on stderr
  std::size_t reg_cache = std::size_t(1) << 30;  // bytes kept registered
};

struct UcxOptions {
  // Endpoints detect failed peers; UCX 1.13 then refuses its shared-memory
  // transports.
  bool detect_failures = false;
};

struct NetworkOptions {
  VerbsOptions verbs;
  UcxOptions ucx;
};

}  // namespace armci::platform
