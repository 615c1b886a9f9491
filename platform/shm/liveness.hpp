// Whether the processes of same-host peers still run: a pidfd per peer,
// readable once that process has exited (even before its parent reaps it),
// so a neighbour killed by a signal is noticed whatever the launcher says.
#pragma once

#include <sys/types.h>

#include <vector>

namespace armci::platform {

class ProcessWatch {
 public:
  // pids: by rank; 0 for ranks on other hosts and for this process.
  explicit ProcessWatch(const std::vector<pid_t>& pids);
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  // The watched ranks whose processes have exited. Does not block.
  std::vector<int> exited_ranks() const;

 private:
  std::vector<int> fds_;  // by rank, -1 when not watched
};

}  // namespace armci::platform
