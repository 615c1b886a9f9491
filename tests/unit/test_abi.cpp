// Our headers against ARMCI-MPI 0.3.1's (Debian's, in abi_reference.c):
// every size, offset and constant a library compiled against theirs bakes
// in must be the same here, or Debian's Global Arrays would misbehave.
#include <gtest/gtest.h>

#include <cstddef>

#include "include/armci.h"
#include "include/armcix.h"
#include "tests/unit/abi_fields.h"

extern "C" {
extern const long armci_mpi_abi_values[];
extern const char* const armci_mpi_abi_names[];
extern const int armci_mpi_abi_count;
}

namespace {

#define ABI_VALUE(e) static_cast<long>(e),
const long ours[] = {ABI_FIELDS(ABI_VALUE)};

TEST(Abi, MatchesArmciMpi031) {
  ASSERT_EQ(static_cast<int>(sizeof ours / sizeof ours[0]), armci_mpi_abi_count);
  for (int i = 0; i < armci_mpi_abi_count; ++i)
    EXPECT_EQ(armci_mpi_abi_values[i], ours[i]) << armci_mpi_abi_names[i];
}

TEST(Abi, MessageCallsComeWithArmciH) {
  // Programs call armci_msg_igop with only <armci.h>: it includes message.h.
  void (*igop)(int*, int, char*) = &armci_msg_igop;
  EXPECT_NE(igop, nullptr);
  // The msg types are not the Acc types (as in ARMCI-MPI).
  EXPECT_EQ(ARMCI_FLOAT, 3);
  EXPECT_EQ(ARMCI_ACC_FLT, 2);
}

}  // namespace
