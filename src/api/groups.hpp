// What the group calls share with the armci_msg calls: ARMCI_Group <-> the
// core's Group. Internal to src/api.
#pragma once

#include "include/armci.h"
#include "src/core/groups.hpp"

namespace armci::api {

// The live group behind handle; fails naming call (and 'argument') when it
// is NULL, freed or never made.
Group& group_of(const char* call, const char* argument, const ARMCI_Group* handle);
// Same, and this rank must be a member.
Group& member_group_of(const char* call, const char* argument, const ARMCI_Group* handle);
// Fills the ARMCI-MPI layout from the core's group.
void describe(ARMCI_Group* out, Group& group);

}  // namespace armci::api
