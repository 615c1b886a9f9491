// Single values: ARMCI_PutValue*, ARMCI_NbPutValue*, ARMCI_GetValue*.
#include "src/api/api.hpp"

using namespace armci::api;
using armci::Op;

namespace {

template <typename T>
int put_value(const char* call, T src, void* dst, int proc) {
  armci::Runtime& r = runtime(call);
  check_proc(call, r, proc);
  check_pointer(call, "dst", dst, 1);
  return blocking(call, r, [&](Completion& c, armci::Mode mode, armci::VectorBatches*) {
    r.transfers().contiguous(armci::Call{call, Op::put, mode, proc, nullptr, c, nullptr}, &src, dst, sizeof(T));
  });
}

// The value lives on this stack frame, so the put is complete locally
// before the call returns: the handle is left with nothing to wait for.
template <typename T>
int nb_put_value(const char* call, T src, void* dst, int proc, armci_hdl_t* handle) {
  armci::Runtime& r = runtime(call);
  if (handle != nullptr) {
    check_handle(call, handle);
    if (!is_aggregate(handle)) complete_handle(call, r, handle);
  }
  return put_value(call, src, dst, proc);
}

template <typename T>
T get_value(const char* call, void* src, int proc) {
  armci::Runtime& r = runtime(call);
  check_proc(call, r, proc);
  check_pointer(call, "src", src, 1);
  T value{};
  blocking(call, r, [&](Completion& c, armci::Mode mode, armci::VectorBatches*) {
    r.transfers().contiguous(armci::Call{call, Op::get, mode, proc, nullptr, c, nullptr}, src, &value, sizeof(T));
  });
  return value;
}

}  // namespace

ARMCI_API_PEERS(int, ARMCI_PutValueInt, (int src, void* dst, int proc)) {
  return put_value("ARMCI_PutValueInt", src, dst, proc);
} ARMCI_PEERS_END(int)
ARMCI_API_PEERS(int, ARMCI_PutValueLong, (long src, void* dst, int proc)) {
  return put_value("ARMCI_PutValueLong", src, dst, proc);
} ARMCI_PEERS_END(int)
ARMCI_API_PEERS(int, ARMCI_PutValueFloat, (float src, void* dst, int proc)) {
  return put_value("ARMCI_PutValueFloat", src, dst, proc);
} ARMCI_PEERS_END(int)
ARMCI_API_PEERS(int, ARMCI_PutValueDouble, (double src, void* dst, int proc)) {
  return put_value("ARMCI_PutValueDouble", src, dst, proc);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbPutValueInt, (int src, void* dst, int proc, armci_hdl_t* handle)) {
  return nb_put_value("ARMCI_NbPutValueInt", src, dst, proc, handle);
} ARMCI_PEERS_END(int)
ARMCI_API_PEERS(int, ARMCI_NbPutValueLong, (long src, void* dst, int proc, armci_hdl_t* handle)) {
  return nb_put_value("ARMCI_NbPutValueLong", src, dst, proc, handle);
} ARMCI_PEERS_END(int)
ARMCI_API_PEERS(int, ARMCI_NbPutValueFloat, (float src, void* dst, int proc, armci_hdl_t* handle)) {
  return nb_put_value("ARMCI_NbPutValueFloat", src, dst, proc, handle);
} ARMCI_PEERS_END(int)
ARMCI_API_PEERS(int, ARMCI_NbPutValueDouble, (double src, void* dst, int proc, armci_hdl_t* handle)) {
  return nb_put_value("ARMCI_NbPutValueDouble", src, dst, proc, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_GetValueInt, (void* src, int proc)) { return get_value<int>("ARMCI_GetValueInt", src, proc); } ARMCI_PEERS_END_VALUE(int)
ARMCI_API_PEERS(long, ARMCI_GetValueLong, (void* src, int proc)) { return get_value<long>("ARMCI_GetValueLong", src, proc); } ARMCI_PEERS_END_VALUE(long)
ARMCI_API_PEERS(float, ARMCI_GetValueFloat, (void* src, int proc)) {
  return get_value<float>("ARMCI_GetValueFloat", src, proc);
} ARMCI_PEERS_END_VALUE(float)
ARMCI_API_PEERS(double, ARMCI_GetValueDouble, (void* src, int proc)) {
  return get_value<double>("ARMCI_GetValueDouble", src, proc);
} ARMCI_PEERS_END_VALUE(double)
