// Process groups: ARMCI_Group_*, ARMCI_Absolute_id, ARMCI_Malloc_group /
// Free_group (and _memdev), ARMCI_Uses_shm_grp, ARMCIX_Group_split / dup.
#include "src/api/groups.hpp"

#include "include/armcix.h"
#include "src/api/api.hpp"

static_assert(sizeof(ARMCI_Group) == 40, "ARMCI_Group must keep ARMCI-MPI 0.3.1's 40 bytes");
static_assert(offsetof(ARMCI_Group, comm) == 0, "GA reads ARMCI_Group.comm at offset 0");
static_assert(offsetof(ARMCI_Group, rank) == 32 && offsetof(ARMCI_Group, size) == 36,
              "ARMCI_Group's rank and size sit where ARMCI-MPI has them");

namespace armci::api {

Group& group_of(const char* call, const char* argument, const ARMCI_Group* handle) {
  Runtime& r = runtime(call);
  if (handle == nullptr) fail(call, "argument '%s' is NULL", argument);
  Group* group = r.groups().find(handle->armci_group_private);
  if (group == nullptr)
    fail(call, "argument '%s' (%p) is not a live group (freed, or never made by ARMCI_Group_create)", argument,
         static_cast<const void*>(handle));
  return *group;
}

Group& member_group_of(const char* call, const char* argument, const ARMCI_Group* handle) {
  Group& group = group_of(call, argument, handle);
  if (!group.member()) fail(call, "argument '%s': this rank is not a member of the group", argument);
  return group;
}

void describe(ARMCI_Group* out, Group& group) {
  out->armci_comm_storage = group.communicator;
  out->armci_group_private = &group;
  out->grp_to_abs = group.members.data();
  out->abs_to_grp = group.rank_of.data();
  out->rank = group.my_rank;
  out->size = group.size();
}

}  // namespace armci::api

using namespace armci::api;
using armci::fail;

namespace {

void check_out(const char* call, const void* out) {
  if (out == nullptr) fail(call, "argument 'group_out' is NULL");
}

// A group of the parent's ranks pid_list[0..n), made collectively over the
// parent's members.
void create_from(const char* call, int n, const int* pid_list, ARMCI_Group* out, armci::Group& parent) {
  check_out(call, out);
  if (n < 0 || n > parent.size()) fail(call, "argument 'grp_size' (%d) is out of range [0, %d]", n, parent.size());
  if (n > 0 && pid_list == nullptr) fail(call, "argument 'pid_list' is NULL");
  if (!parent.member()) fail(call, "this rank is not a member of the parent group");
  std::vector<int> members(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (pid_list[i] < 0 || pid_list[i] >= parent.size())
      fail(call, "argument 'pid_list': entry %d (%d) is not a rank of the parent group [0, %d)", i, pid_list[i],
           parent.size());
    members[static_cast<std::size_t>(i)] = parent.members[static_cast<std::size_t>(pid_list[i])];
  }
  armci::Runtime& r = runtime(call);
  armci::require_all_alive(call);
  describe(out, r.groups().create(call, "pid_list", std::move(members)));
}

}  // namespace

ARMCI_API_PEERS(void, ARMCI_Group_create, (int grp_size, int* pid_list, ARMCI_Group* group_out)) {
  create_from("ARMCI_Group_create", grp_size, pid_list, group_out,
              runtime("ARMCI_Group_create").groups().default_group());
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(void, ARMCI_Group_create_child,
          (int grp_size, int* pid_list, ARMCI_Group* group_out, ARMCI_Group* group_parent)) {
  create_from("ARMCI_Group_create_child", grp_size, pid_list, group_out,
              group_of("ARMCI_Group_create_child", "group_parent", group_parent));
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(void, ARMCI_Group_free, (ARMCI_Group * group)) {
  armci::Group& g = group_of("ARMCI_Group_free", "group", group);
  armci::Runtime& r = runtime("ARMCI_Group_free");
  armci::require_all_alive("ARMCI_Group_free");
  r.groups().free(g);
  group->armci_group_private = nullptr;
  group->grp_to_abs = group->abs_to_grp = nullptr;
} ARMCI_PEERS_END(void)

ARMCI_API(int, ARMCI_Group_rank, (ARMCI_Group * group, int* rank)) {
  armci::Group& g = group_of("ARMCI_Group_rank", "group", group);
  if (rank == nullptr) fail("ARMCI_Group_rank", "argument 'rank' is NULL");
  *rank = g.my_rank;
  return 0;
}

ARMCI_API(void, ARMCI_Group_size, (ARMCI_Group * group, int* size)) {
  armci::Group& g = group_of("ARMCI_Group_size", "group", group);
  if (size == nullptr) fail("ARMCI_Group_size", "argument 'size' is NULL");
  *size = g.size();
}

ARMCI_API(void, ARMCI_Group_set_default, (ARMCI_Group * group)) {
  armci::Group& g = group_of("ARMCI_Group_set_default", "group", group);
  runtime("ARMCI_Group_set_default").groups().set_default(g);
}

ARMCI_API(void, ARMCI_Group_get_default, (ARMCI_Group * group_out)) {
  armci::Runtime& r = runtime("ARMCI_Group_get_default");
  check_out("ARMCI_Group_get_default", group_out);
  r.groups().world();  // the world's communicator, should the default be the world
  describe(group_out, r.groups().default_group());
}

ARMCI_API(void, ARMCI_Group_get_world, (ARMCI_Group * group_out)) {
  armci::Runtime& r = runtime("ARMCI_Group_get_world");
  check_out("ARMCI_Group_get_world", group_out);
  describe(group_out, r.groups().world());
}

ARMCI_API(int, ARMCI_Absolute_id, (ARMCI_Group * group, int group_rank)) {
  armci::Group& g = group_of("ARMCI_Absolute_id", "group", group);
  if (group_rank < 0 || group_rank >= g.size())
    fail("ARMCI_Absolute_id", "argument 'group_rank' (%d) is out of range [0, %d)", group_rank, g.size());
  return g.members[static_cast<std::size_t>(group_rank)];
}

namespace {

int malloc_group(const char* call, void** ptr_arr, armci_size_t bytes, ARMCI_Group* group) {
  armci::Runtime& r = runtime(call);
  armci::require_all_alive(call);
  armci::Group& g = member_group_of(call, "group", group);
  if (ptr_arr == nullptr) fail(call, "argument 'ptr_arr' is NULL");
  if (bytes < 0) fail(call, "argument 'bytes' (%ld) is negative", bytes);
  const armci::Memory::Members members = r.groups().allocation_members(g);
  auto bases = r.memory().allocate(call, static_cast<std::size_t>(bytes), &members);
  for (int i = 0; i < g.size(); ++i)
    ptr_arr[i] = bases[static_cast<std::size_t>(g.members[static_cast<std::size_t>(i)])];
  return 0;
}

}  // namespace

ARMCI_API_PEERS(int, ARMCI_Malloc_group, (void** ptr_arr, armci_size_t bytes, ARMCI_Group* group)) {
  return malloc_group("ARMCI_Malloc_group", ptr_arr, bytes, group);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Malloc_group_memdev,
          (void** ptr_arr, armci_size_t bytes, ARMCI_Group* group, const char* device)) {
  return malloc_group("ARMCI_Malloc_group_memdev", ptr_arr, bytes, group);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Free_group, (void* ptr, ARMCI_Group* group)) {
  armci::Runtime& r = runtime("ARMCI_Free_group");
  armci::require_all_alive("ARMCI_Free_group");
  armci::Group& g = member_group_of("ARMCI_Free_group", "group", group);
  const armci::Memory::Members members = r.groups().allocation_members(g);
  r.completion().all_fence();
  r.memory().release("ARMCI_Free_group", ptr, &members);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API(int, ARMCI_Uses_shm_grp, (ARMCI_Group * group)) {
  armci::Runtime& r = runtime("ARMCI_Uses_shm_grp");
  armci::Group& g = group_of("ARMCI_Uses_shm_grp", "group", group);
  if (!r.settings().shared_memory) return 0;
  for (int m : g.members)
    if (m != r.rank() && r.peers().kind(m) == armci::PeerKind::shared_memory) return 1;
  return 0;
}

ARMCI_API_PEERS(int, ARMCIX_Group_split, (ARMCI_Group * parent, int color, int key, ARMCI_Group* new_group)) {
  armci::Group& p = member_group_of("ARMCIX_Group_split", "parent", parent);
  check_out("ARMCIX_Group_split", new_group);
  armci::Runtime& r = runtime("ARMCIX_Group_split");
  armci::require_all_alive("ARMCIX_Group_split");
  describe(new_group, r.groups().split("ARMCIX_Group_split", p, color, key));
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCIX_Group_dup, (ARMCI_Group * parent, ARMCI_Group* new_group)) {
  armci::Group& p = member_group_of("ARMCIX_Group_dup", "parent", parent);
  check_out("ARMCIX_Group_dup", new_group);
  armci::Runtime& r = runtime("ARMCIX_Group_dup");
  armci::require_all_alive("ARMCIX_Group_dup");
  describe(new_group, r.groups().create("ARMCIX_Group_dup", "parent", p.members));
  return 0;
} ARMCI_PEERS_END(int)
