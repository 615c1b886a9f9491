// Contiguous transfers: Put, Get, Acc and their nonblocking forms.
#include "src/api/api.hpp"

using namespace armci::api;
using armci::AccArgs;
using armci::Op;

namespace {

[[gnu::always_inline]] inline int contiguous(const char* call, armci::Runtime& r, Op op, const AccArgs* acc, void* src,
                                             void* dst, int bytes, int proc, bool nb, armci_hdl_t* handle) {
  check_transfer(call, r, src, dst, bytes, proc);
  if (acc != nullptr) check_acc_bytes(call, *acc, bytes);
  const auto n = static_cast<std::size_t>(bytes);
  return contiguous_transfer(
      call, r, proc, nb, handle,
      [&](Completion& c) {
        return n > 0 && r.transfers().contiguous_if_mapped(
                            armci::Call{call, op, armci::Mode::nonblocking, proc, acc, c, nullptr}, src, dst, n);
      },
      [&](Completion& c, armci::Mode mode, armci::VectorBatches* aggregate) {
        r.transfers().contiguous(armci::Call{call, op, mode, proc, acc, c, aggregate}, src, dst, n);
      });
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
