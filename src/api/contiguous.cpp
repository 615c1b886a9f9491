// Contiguous transfers: Put, Get, Acc and their nonblocking forms.
#include "src/api/api.hpp"

using namespace armci::api;
using armci::AccArgs;
using armci::Op;

namespace {

// Past the fast path (or bytes == 0): the general way.
[[gnu::noinline]] int contiguous_general(const char* call, armci::Runtime& r, Op op, const AccArgs* acc, void* src,
                                         void* dst, std::size_t bytes, int proc, bool nb, armci_hdl_t* handle) {
  return transfer(call, r, proc, nb, handle, [&](Completion& c, armci::Mode mode, armci::VectorBatches* aggregate) {
    r.transfers().contiguous(armci::Call{call, op, mode, proc, acc, c, aggregate}, src, dst, bytes);
  });
}

[[gnu::always_inline]] inline int contiguous(const char* call, armci::Runtime& r, Op op, const AccArgs* acc, void* src,
                                             void* dst, int bytes, int proc, bool nb, armci_hdl_t* handle) {
  check_transfer(call, r, src, dst, bytes, proc);
  if (acc != nullptr) check_acc_bytes(call, *acc, bytes);
  const auto n = static_cast<std::size_t>(bytes);
  if (n > 0 && finished_mapped(r, op, acc, src, dst, n, proc, nb, handle)) [[likely]]
    return 0;
  return contiguous_general(call, r, op, acc, src, dst, n, proc, nb, handle);
}

}  // namespace

ARMCI_API_PEERS(int, ARMCI_Put, (void* src, void* dst, int bytes, int proc)) {
  return contiguous("ARMCI_Put", runtime("ARMCI_Put"), Op::put, nullptr, src, dst, bytes, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Get, (void* src, void* dst, int bytes, int proc)) {
  return contiguous("ARMCI_Get", runtime("ARMCI_Get"), Op::get, nullptr, src, dst, bytes, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Acc, (int datatype, void* scale, void* src, void* dst, int bytes, int proc)) {
  armci::Runtime& r = runtime("ARMCI_Acc");
  const AccArgs acc = acc_args("ARMCI_Acc", datatype, scale);
  return contiguous("ARMCI_Acc", r, Op::acc, &acc, src, dst, bytes, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbPut, (void* src, void* dst, int bytes, int proc, armci_hdl_t* handle)) {
  return contiguous("ARMCI_NbPut", runtime("ARMCI_NbPut"), Op::put, nullptr, src, dst, bytes, proc, true, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbGet, (void* src, void* dst, int bytes, int proc, armci_hdl_t* handle)) {
  return contiguous("ARMCI_NbGet", runtime("ARMCI_NbGet"), Op::get, nullptr, src, dst, bytes, proc, true, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbAcc, (int datatype, void* scale, void* src, void* dst, int bytes, int proc, armci_hdl_t* handle)) {
  armci::Runtime& r = runtime("ARMCI_NbAcc");
  const AccArgs acc = acc_args("ARMCI_NbAcc", datatype, scale);
  return contiguous("ARMCI_NbAcc", r, Op::acc, &acc, src, dst, bytes, proc, true, handle);
} ARMCI_PEERS_END(int)
