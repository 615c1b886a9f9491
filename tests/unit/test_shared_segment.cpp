// Node-shared segments outside /dev/shm (memory files): what a neighbour
// maps by the name is the very memory the creator wrote, and nothing of it
// stays reachable once unlinked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "platform/shm/segment.hpp"

namespace armci::platform {
namespace {

TEST(SharedSegment, OutsideShmIsSharedWithAProcessThatAttachesByName) {
  SharedSegment made = SharedSegment::create_outside_shm(3 * 4096 + 1);
  ASSERT_TRUE(made.outside_shm());
  EXPECT_EQ(made.size(), page_round(3 * 4096 + 1));
  EXPECT_TRUE(made.name().starts_with("/proc/"));
  auto* bytes = static_cast<unsigned char*>(made.address());
  for (std::size_t i = 0; i < made.size(); ++i) ASSERT_EQ(bytes[i], 0) << "not zero-filled at " << i;
  bytes[5] = 42;
  // Another process: what the neighbour does, through the name alone.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SharedSegment seen = SharedSegment::attach(made.name(), made.size());
    auto* theirs = static_cast<unsigned char*>(seen.address());
    const bool read_ok = theirs[5] == 42;
    theirs[made.size() - 1] = 7;  // written there, read here
    _exit(read_ok ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the neighbour did not see the creator's write";
  EXPECT_EQ(bytes[made.size() - 1], 7) << "the creator did not see the neighbour's write";
}

TEST(SharedSegment, OutsideShmCannotBeAttachedOnceUnlinked) {
  SharedSegment made = SharedSegment::create_outside_shm(4096);
  const std::string name = made.name();
  made.unlink();
  ASSERT_NE(made.address(), nullptr);  // the mapping stays
  static_cast<char*>(made.address())[0] = 1;
  // Nothing opens a descriptor in between, so the number is free.
  EXPECT_THROW(SharedSegment::attach(name, 4096), std::runtime_error);
}

}  // namespace
}  // namespace armci::platform
