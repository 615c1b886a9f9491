#include "platform/shm/liveness.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace armci::platform {

ProcessWatch::ProcessWatch(const std::vector<pid_t>& pids) : fds_(pids.size(), -1) {
  for (std::size_t r = 0; r < pids.size(); ++r) {
    if (pids[r] <= 0) continue;
#ifdef SYS_pidfd_open
    fds_[r] = static_cast<int>(syscall(SYS_pidfd_open, pids[r], 0));
#endif
    // Without pidfds (kernels before 5.3) a rank whose pid is already gone
    // is still caught below by kill(pid, 0); later deaths are left to the
    // launcher's events.
    if (fds_[r] < 0 && kill(pids[r], 0) != 0 && errno == ESRCH) fds_[r] = -2;
  }
}

ProcessWatch::~ProcessWatch() {
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

std::vector<int> ProcessWatch::exited_ranks() const {
  std::vector<int> exited;
  for (std::size_t r = 0; r < fds_.size(); ++r) {
    bool gone = fds_[r] == -2;
    if (fds_[r] >= 0) {
      pollfd p{fds_[r], POLLIN, 0};
      gone = poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
    }
    if (gone) exited.push_back(static_cast<int>(r));
  }
  return exited;
}

}  // namespace armci::platform
