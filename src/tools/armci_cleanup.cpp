// armci_cleanup: removes the shared-memory segments a dead libarmci job left
// in /dev/shm (a rank killed between making a segment and its neighbours
// mapping it). Segment names carry the job and their creator's pid:
//
//   armci_cleanup               remove segments whose creator has exited
//   armci_cleanup --job ID      remove every segment of job ID (the PMIx
//                               namespace, e.g. $PMIX_NAMESPACE), live or not
//   armci_cleanup --dry-run     only list what would go
//
// Prints one line per segment removed; exit 1 when a removal failed.
#include <dirent.h>
#include <sys/mman.h>
#include <sys/types.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "src/core/segment_names.hpp"

namespace {

bool process_gone(long pid) { return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

int usage() {
  std::fprintf(stderr, "usage: armci_cleanup [--job JOB_ID] [--dry-run]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string job_tag;
  bool dry_run = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--job") == 0 && i + 1 < argc) job_tag = armci::segment_names::job_tag(argv[++i]);
    else if (std::strcmp(argv[i], "--dry-run") == 0) dry_run = true;
    else return usage();
  }
  int status = 0;
  const bool listed = armci::segment_names::for_each([&](const std::string& name, const armci::segment_names::Parsed& parsed) {
    const bool chosen = job_tag.empty() ? process_gone(parsed.pid) : parsed.tag == job_tag;
    if (!chosen) return;
    if (dry_run) {
      std::printf("would remove /dev/shm/%s\n", name.c_str());
    } else if (shm_unlink(("/" + name).c_str()) == 0) {
      std::printf("removed /dev/shm/%s\n", name.c_str());
    } else if (errno != ENOENT) {
      std::fprintf(stderr, "armci_cleanup: removing /dev/shm/%s: %s\n", name.c_str(), std::strerror(errno));
      status = 1;
    }
  });
  if (!listed) {
    std::perror("armci_cleanup: /dev/shm");
    return 1;
  }
  return status;
}
