// Atomics and mutexes: ARMCI_Rmw, the mutex calls, Put_flag and PutS_flag,
// armci_notify / armci_notify_wait.
#include "src/api/api.hpp"

using namespace armci::api;
using armci::fail;

ARMCI_API_PEERS(int, ARMCI_Rmw, (int op, void* ploc, void* prem, int value, int proc)) {
  armci::Runtime& r = runtime_for("ARMCI_Rmw", proc);
  if (op < ARMCI_FETCH_AND_ADD || op > ARMCI_SWAP_LONG)
    fail("ARMCI_Rmw", "argument 'op' (%d) is not ARMCI_FETCH_AND_ADD, ARMCI_FETCH_AND_ADD_LONG, "
                      "ARMCI_SWAP or ARMCI_SWAP_LONG", op);
  check_pointer("ARMCI_Rmw", "ploc", ploc, 1);
  check_pointer("ARMCI_Rmw", "prem", prem, 1);
  r.sync().rmw("ARMCI_Rmw", op, ploc, prem, value, proc);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Create_mutexes, (int count)) {
  collective_runtime("ARMCI_Create_mutexes").sync().create_mutexes("ARMCI_Create_mutexes", count);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Destroy_mutexes, (void)) {
  collective_runtime("ARMCI_Destroy_mutexes").sync().destroy_mutexes("ARMCI_Destroy_mutexes");
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(void, ARMCI_Lock, (int mutex, int proc)) {
  runtime_for("ARMCI_Lock", proc).sync().lock("ARMCI_Lock", mutex, proc);
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(void, ARMCI_Unlock, (int mutex, int proc)) {
  runtime_for("ARMCI_Unlock", proc).sync().unlock("ARMCI_Unlock", mutex, proc);
} ARMCI_PEERS_END(void)

ARMCI_API_PEERS(int, ARMCI_Put_flag, (void* src, void* dst, int bytes, int* flag, int value, int proc)) {
  armci::Runtime& r = runtime("ARMCI_Put_flag");
  check_transfer("ARMCI_Put_flag", r, src, dst, bytes, proc);
  check_pointer("ARMCI_Put_flag", "flag", flag, 1);
  armci::check_alive(proc);
  r.sync().put_flag("ARMCI_Put_flag", src, dst, static_cast<std::size_t>(bytes), flag, value, proc);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_PutS_flag, (void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                                 int stride_levels, int* flag, int value, int proc)) {
  armci::Runtime& r = runtime_for("ARMCI_PutS_flag", proc);
  check_pointer("ARMCI_PutS_flag", "flag", flag, 1);
  r.memory().check_remote("ARMCI_PutS_flag", "flag", proc, flag, sizeof(int));
  // A blocking strided put is complete at the target for every protocol
  // whose pieces a helper applies (vector messages, host-assisted); direct
  // pieces are ordered before the flag by put_flag's own ordering.
  strided_call("ARMCI_PutS_flag", armci::Op::put, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
               stride_levels, proc, false, nullptr);
  r.sync().put_flag("ARMCI_PutS_flag", nullptr, nullptr, 0, flag, value, proc);
  return 0;
} ARMCI_PEERS_END(int)

armci_api_peers(int, armci_notify, (int proc)) {
  return runtime_for("armci_notify", proc).sync().notify("armci_notify", proc);
} ARMCI_PEERS_END(int)

armci_api_peers(int, armci_notify_wait, (int proc, int* pval)) {
  return runtime_for("armci_notify_wait", proc).sync().notify_wait("armci_notify_wait", proc, pval);
} ARMCI_PEERS_END(int)
