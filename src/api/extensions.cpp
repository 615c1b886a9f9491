// The rest of ARMCI-MPI 0.3.1's surface: ARMCI_Init_thread, the memdev
// allocations, ARMCI_Set_shm_limit, ARMCI_Access_begin/end, ARMCI_Copy,
// ARMCIX_Progress, ARMCIX mutex handles (the core's queue lock on tails of
// their own).
#include <cstring>
#include <set>
#include <utility>

#include "include/armcix.h"
#include "src/api/api.hpp"
#include "src/api/groups.hpp"

using namespace armci::api;
using armci::fail;

ARMCI_API(int, ARMCI_Init_thread, (int armci_requested)) { return PARMCI_Init(); }

ARMCI_API(int, ARMCI_Malloc_memdev, (void** base_ptrs, armci_size_t bytes, const char* device)) {
  return PARMCI_Malloc(base_ptrs, bytes);
}

ARMCI_API(int, ARMCI_Free_memdev, (void* ptr)) { return PARMCI_Free(ptr); }

ARMCI_API(void, ARMCI_Set_shm_limit, (unsigned long shmemlimit)) {}

ARMCI_API(void, ARMCI_Access_begin, (void* ptr)) {
  armci::Runtime& r = runtime("ARMCI_Access_begin");
  if (ptr == nullptr) fail("ARMCI_Access_begin", "argument 'ptr' is NULL");
  r.memory().check_remote("ARMCI_Access_begin", "ptr", r.rank(), ptr, 1);
}

ARMCI_API(void, ARMCI_Access_end, (void* ptr)) {
  armci::Runtime& r = runtime("ARMCI_Access_end");
  if (ptr == nullptr) fail("ARMCI_Access_end", "argument 'ptr' is NULL");
  r.memory().check_remote("ARMCI_Access_end", "ptr", r.rank(), ptr, 1);
}

ARMCI_API(void, ARMCI_Copy, (void* src, void* dst, int size)) {
  check_bytes("ARMCI_Copy", size);
  check_pointer("ARMCI_Copy", "src", src, size);
  check_pointer("ARMCI_Copy", "dst", dst, size);
  if (size > 0) std::memmove(dst, src, static_cast<std::size_t>(size));
}

ARMCI_API(void, ARMCIX_Progress, (void)) { runtime("ARMCIX_Progress").progress().progress(); }

// ---------------------------------------------------------------- ARMCIX mutex handles

struct armcix_mutex_hdl_s {
  std::unique_ptr<armci::Allocation> tails;
  std::vector<int> members;  // world rank by group rank (a copy: the group may be freed first)
};

namespace {

std::set<const armcix_mutex_hdl_s*> live_handles;

armcix_mutex_hdl_s& handle_of(const char* call, armcix_mutex_hdl_t hdl) {
  runtime(call);
  if (live_handles.count(hdl) == 0)
    fail(call, "argument 'hdl' (%p) is not a live mutex handle (destroyed, or never made by "
               "ARMCIX_Create_mutexes_hdl)", static_cast<void*>(hdl));
  return *hdl;
}

// The world rank of group rank proc, and how many mutexes it hosts.
std::pair<int, int> target(const char* call, const armcix_mutex_hdl_s& h, int proc) {
  if (proc < 0 || static_cast<std::size_t>(proc) >= h.members.size())
    fail(call, "argument 'proc' (%d) is out of range [0, %zu) of the handle's group", proc, h.members.size());
  const int world = h.members[static_cast<std::size_t>(proc)];
  return {world, static_cast<int>(h.tails->sizes[static_cast<std::size_t>(world)] / sizeof(std::uint64_t))};
}

}  // namespace

ARMCI_API_PEERS(armcix_mutex_hdl_t, ARMCIX_Create_mutexes_hdl, (int count, ARMCI_Group* pgroup)) {
  constexpr const char* call = "ARMCIX_Create_mutexes_hdl";
  armci::Runtime& r = runtime(call);
  armci::require_all_alive(call);
  armci::Group& g = pgroup ? member_group_of(call, "pgroup", pgroup) : r.groups().default_group();
  if (!g.member()) fail(call, "this rank is not a member of the default group");
  const armci::Memory::Members members = r.groups().allocation_members(g);
  auto* h = new armcix_mutex_hdl_s{r.sync().create_mutex_set(call, count, &members), g.members};
  live_handles.insert(h);
  return h;
} ARMCI_PEERS_END(armcix_mutex_hdl_t)

ARMCI_API_PEERS(int, ARMCIX_Destroy_mutexes_hdl, (armcix_mutex_hdl_t hdl)) {
  constexpr const char* call = "ARMCIX_Destroy_mutexes_hdl";
  armcix_mutex_hdl_s& h = handle_of(call, hdl);
  armci::Runtime& r = runtime(call);
  armci::require_all_alive(call);
  int me = -1;
  for (std::size_t i = 0; i < h.members.size(); ++i)
    if (h.members[i] == r.rank()) me = static_cast<int>(i);
  const armci::Team team{h.members, me};
  r.sync().destroy_mutex_set(call, *h.tails, [&] { r.collectives().barrier(team); });
  live_handles.erase(hdl);
  delete hdl;
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(void, ARMCIX_Lock_hdl, (armcix_mutex_hdl_t hdl, int mutex, int proc)) {
  constexpr const char* call = "ARMCIX_Lock_hdl";
  armcix_mutex_hdl_s& h = handle_of(call, hdl);
  const auto [world, count] = target(call, h, proc);
  armci::Runtime& r = runtime(call);
  armci::check_alive(world);
  r.sync().lock_in(call, *h.tails, count, mutex, world, false);
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(int, ARMCIX_Trylock_hdl, (armcix_mutex_hdl_t hdl, int mutex, int proc)) {
  constexpr const char* call = "ARMCIX_Trylock_hdl";
  armcix_mutex_hdl_s& h = handle_of(call, hdl);
  const auto [world, count] = target(call, h, proc);
  armci::Runtime& r = runtime(call);
  armci::check_alive(world);
  return r.sync().lock_in(call, *h.tails, count, mutex, world, true) ? 1 : 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(void, ARMCIX_Unlock_hdl, (armcix_mutex_hdl_t hdl, int mutex, int proc)) {
  constexpr const char* call = "ARMCIX_Unlock_hdl";
  armcix_mutex_hdl_s& h = handle_of(call, hdl);
  const auto [world, count] = target(call, h, proc);
  armci::Runtime& r = runtime(call);
  armci::check_alive(world);
  r.sync().unlock_in(call, *h.tails, count, mutex, world);
} ARMCI_PEERS_END(void)
