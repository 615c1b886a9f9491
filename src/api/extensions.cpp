// The rest of ARMCI-MPI 0.3.1's surface: ARMCI_Init_thread, the memdev
// allocations, ARMCI_Set_shm_limit, ARMCI_Access_begin/end, ARMCI_Copy,
// ARMCIX_Progress, ARMCIX mutex handles (the core's queue lock on tails of
// their own).
#include <cstring>
#include <set>

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

namespace {

// Access_begin/end have nothing to do but check: a process reads and
// writes its own part of an allocation directly.
void check_access(const char* call, void* ptr) {
  armci::Runtime& r = runtime(call);
  if (ptr == nullptr) fail(call, "argument 'ptr' is NULL");
  r.memory().check_remote(call, "ptr", r.rank(), ptr, 1);
}

}  // namespace

ARMCI_API(void, ARMCI_Access_begin, (void* ptr)) { check_access("ARMCI_Access_begin", ptr); }

ARMCI_API(void, ARMCI_Access_end, (void* ptr)) { check_access("ARMCI_Access_end", ptr); }

ARMCI_API(void, ARMCI_Copy, (void* src, void* dst, int size)) {
  check_count("ARMCI_Copy", size);
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

// The mutexes group rank proc hosts under a live handle: its world rank
// (not known dead) and how many there are.
struct MutexTarget {
  armci::Sync& sync;
  const armci::Allocation& tails;
  int world;
  int count;
};

MutexTarget target(const char* call, armcix_mutex_hdl_t hdl, int proc) {
  const armcix_mutex_hdl_s& h = handle_of(call, hdl);
  if (proc < 0 || static_cast<std::size_t>(proc) >= h.members.size())
    fail(call, "argument 'proc' (%d) is out of range [0, %zu) of the handle's group", proc, h.members.size());
  const int world = h.members[static_cast<std::size_t>(proc)];
  armci::Runtime& r = runtime(call);
  armci::check_alive(world);
  return {r.sync(), *h.tails, world,
          static_cast<int>(h.tails->sizes[static_cast<std::size_t>(world)] / sizeof(std::uint64_t))};
}

}  // namespace

ARMCI_API_PEERS(armcix_mutex_hdl_t, ARMCIX_Create_mutexes_hdl, (int count, ARMCI_Group* pgroup)) {
  constexpr const char* call = "ARMCIX_Create_mutexes_hdl";
  armci::Runtime& r = collective_runtime(call);
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
  armci::Runtime& r = collective_runtime(call);
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
  const MutexTarget t = target(call, hdl, proc);
  t.sync.lock_in(call, t.tails, t.count, mutex, t.world, false);
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(int, ARMCIX_Trylock_hdl, (armcix_mutex_hdl_t hdl, int mutex, int proc)) {
  constexpr const char* call = "ARMCIX_Trylock_hdl";
  const MutexTarget t = target(call, hdl, proc);
  return t.sync.lock_in(call, t.tails, t.count, mutex, t.world, true) ? 1 : 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(void, ARMCIX_Unlock_hdl, (armcix_mutex_hdl_t hdl, int mutex, int proc)) {
  constexpr const char* call = "ARMCIX_Unlock_hdl";
  const MutexTarget t = target(call, hdl, proc);
  t.sync.unlock_in(call, t.tails, t.count, mutex, t.world);
} ARMCI_PEERS_END(void)
