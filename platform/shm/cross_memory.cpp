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

namespace {

// Both directions go on after a partial transfer, which stops at a page the
// kernel could not pin.
template <typename Transfer>
bool transfer_all(char* local, char* remote, std::size_t bytes, Transfer transfer) {
  while (bytes > 0) {
    iovec mine{local, bytes};
    iovec theirs{remote, bytes};
    const ssize_t done = transfer(&mine, &theirs);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    local += done;
    remote += done;
    bytes -= static_cast<std::size_t>(done);
  }
  return true;
}

}  // namespace

bool read_process_memory(pid_t pid, const void* remote, void* local, std::size_t bytes) {
  return transfer_all(static_cast<char*>(local), static_cast<char*>(const_cast<void*>(remote)), bytes,
                      [pid](iovec* mine, iovec* theirs) { return process_vm_readv(pid, mine, 1, theirs, 1, 0); });
}

bool write_process_memory(pid_t pid, void* remote, const void* local, std::size_t bytes) {
  return transfer_all(static_cast<char*>(const_cast<void*>(local)), static_cast<char*>(remote), bytes,
                      [pid](iovec* mine, iovec* theirs) { return process_vm_writev(pid, mine, 1, theirs, 1, 0); });
}

}  // namespace armci::platform
