// Handles and completion: ARMCI_INIT_HANDLE and the aggregate flag, Wait,
// Test, WaitProc, WaitAll, Fence, AllFence, Barrier.
#include "src/api/api.hpp"

using namespace armci::api;
using armci::fail;

ARMCI_API(void, ARMCI_INIT_HANDLE, (armci_hdl_t* handle)) {
  if (handle == nullptr) fail("ARMCI_INIT_HANDLE", "argument 'handle' is NULL");
  handle->request = -1;
  handle->tag = static_cast<int>(kMarker << 24);
}

ARMCI_API(void, ARMCI_SET_AGGREGATE_HANDLE, (armci_hdl_t* handle)) {
  check_given_handle("ARMCI_SET_AGGREGATE_HANDLE", handle);
  handle->tag = static_cast<int>(tag_bits(handle) | kAggregateBit);
}

ARMCI_API(void, ARMCI_UNSET_AGGREGATE_HANDLE, (armci_hdl_t* handle)) {
  check_given_handle("ARMCI_UNSET_AGGREGATE_HANDLE", handle);
  handle->tag = static_cast<int>(tag_bits(handle) & ~kAggregateBit);
}

ARMCI_API_PEERS(int, ARMCI_Wait, (armci_hdl_t* handle)) {
  if (empty_handle_entry(handle)) [[likely]]
    return 0;
  armci::Runtime& r = runtime("ARMCI_Wait");
  check_given_handle("ARMCI_Wait", handle);
  complete_handle("ARMCI_Wait", r, handle);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Test, (armci_hdl_t* handle)) {
  if (empty_handle_entry(handle)) [[likely]]
    return 0;
  armci::Runtime& r = runtime("ARMCI_Test");
  check_given_handle("ARMCI_Test", handle);
  if (handle->request < 0) return 0;
  const auto id = handle_id(handle);
  armci::Completions& completion = r.completion();
  if (auto* request = completion.requests().find(id)) {
    if (armci::peer_failure_known()) [[unlikely]]
      abandon_if_dead(handle, request->peer);
    completion.send_unsent(*request);
    if (!completion.test("ARMCI_Test", request->completion)) return 1;
    completion.requests().release(id);
  }
  set_handle(handle, -1, 0);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_WaitProc, (int proc)) {
  runtime_for("ARMCI_WaitProc", proc).completion().wait_proc(proc);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_WaitAll, (void)) {
  runtime("ARMCI_WaitAll").completion().wait_all();
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(void, ARMCI_Fence, (int proc)) {
  runtime_for("ARMCI_Fence", proc).completion().fence(proc);
} ARMCI_PEERS_END(void)

// AllFence fences the dead rank too: it needs every rank, like a collective.
ARMCI_API_PEERS(void, ARMCI_AllFence, (void)) {
  collective_runtime("ARMCI_AllFence").completion().all_fence();
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(void, ARMCI_Barrier, (void)) {
  collective_runtime("ARMCI_Barrier").barrier();
} ARMCI_PEERS_END(void)
