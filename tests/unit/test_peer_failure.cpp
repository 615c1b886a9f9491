// Which call an error names when several threads are inside the library.
#include <gtest/gtest.h>

#include <barrier>
#include <string>
#include <thread>

#include "src/core/peer_failure.hpp"

namespace armci {
namespace {

TEST(PeerFailure, EachApplicationThreadNamesItsOwnCall) {
  std::barrier both_set(2);
  std::string seen_by_put, seen_by_barrier;
  std::thread put([&] {
    set_current_call("ARMCI_Put");
    both_set.arrive_and_wait();
    seen_by_put = current_call();
    both_set.arrive_and_wait();
  });
  std::thread barrier([&] {
    set_current_call("ARMCI_Barrier");
    both_set.arrive_and_wait();
    seen_by_barrier = current_call();
    both_set.arrive_and_wait();
  });
  put.join();
  barrier.join();
  EXPECT_EQ(seen_by_put, "ARMCI_Put");
  EXPECT_EQ(seen_by_barrier, "ARMCI_Barrier");
}

TEST(PeerFailure, LibraryThreadNamesTheApplicationsLastCall) {
  set_current_call("ARMCI_Wait");
  std::string seen;
  std::thread helper([&] { seen = current_call(); });
  helper.join();
  EXPECT_EQ(seen, "ARMCI_Wait");
}

}  // namespace
}  // namespace armci
