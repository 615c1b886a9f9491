#include "platform/shm/cross_memory.hpp"

#include <sys/prctl.h>
#include <sys/uio.h>

#include <cerrno>

namespace armci::platform {

void allow_cross_memory_readers() {
#ifdef PR_SET_PTRACER
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

bool read_process_memory(pid_t pid, const void* remote, void* local, std::size_t bytes) {
  auto* into = static_cast<char*>(local);
  auto* from = static_cast<char*>(const_cast<void*>(remote));
  while (bytes > 0) {
    iovec mine{into, bytes};
    iovec theirs{from, bytes};
    const ssize_t got = process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    // A partial read stops at a page the kernel could not pin: go on from there.
    into += got;
    from += got;
    bytes -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace armci::platform
