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

// The calls of one value type: ARMCI_PutValueX, ARMCI_NbPutValueX and
// ARMCI_GetValueX.
#define ARMCI_VALUE_CALLS(X, ctype)                                                                      \
  ARMCI_API_PEERS(int, ARMCI_PutValue##X, (ctype src, void* dst, int proc)) {                            \
    return put_value("ARMCI_PutValue" #X, src, dst, proc);                                               \
  } ARMCI_PEERS_END(int)                                                                                 \
  ARMCI_API_PEERS(int, ARMCI_NbPutValue##X, (ctype src, void* dst, int proc, armci_hdl_t* handle)) {     \
    return nb_put_value("ARMCI_NbPutValue" #X, src, dst, proc, handle);                                  \
  } ARMCI_PEERS_END(int)                                                                                 \
  ARMCI_API_PEERS(ctype, ARMCI_GetValue##X, (void* src, int proc)) {                                     \
    return get_value<ctype>("ARMCI_GetValue" #X, src, proc);                                             \
  } ARMCI_PEERS_END_VALUE(ctype)

ARMCI_VALUE_CALLS(Int, int)
ARMCI_VALUE_CALLS(Long, long)
ARMCI_VALUE_CALLS(Float, float)
ARMCI_VALUE_CALLS(Double, double)

#undef ARMCI_VALUE_CALLS
