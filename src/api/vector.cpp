// Vector transfers (armci_giov_t lists). Every list and every remote piece
// is checked before the first piece moves; the core chooses how they travel.
#include <vector>

#include "src/api/api.hpp"

using namespace armci::api;
using armci::AccArgs;
using armci::Op;
using armci::fail;

namespace {

// Checks a whole vector call (every segment list, every remote piece) and
// translates the lists for the core.
std::vector<armci::VectorList> check_vector(const char* call, armci::Runtime& r, Op op, const AccArgs* acc,
                                            const armci_giov_t* iov, int iov_len, int proc) {
  check_proc(call, r, proc);
  if (iov_len < 0) fail(call, "argument 'iov_len' (%d) is negative", iov_len);
  if (iov_len > 0 && iov == nullptr) fail(call, "argument 'iov' is NULL");
  const std::size_t element = acc ? armci::acc_element_size(acc->datatype) : 1;
  std::vector<armci::VectorList> lists;
  lists.reserve(static_cast<std::size_t>(iov_len));
  for (int i = 0; i < iov_len; ++i) {
    const armci_giov_t& v = iov[i];
    if (v.bytes < 0) fail(call, "argument 'bytes' (iov[%d].bytes = %d) is negative", i, v.bytes);
    if (v.ptr_array_len < 0)
      fail(call, "argument 'ptr_array_len' (iov[%d].ptr_array_len = %d) is negative", i, v.ptr_array_len);
    if (v.bytes == 0 || v.ptr_array_len == 0) continue;
    if (v.src_ptr_array == nullptr) fail(call, "argument 'src_ptr_array' (iov[%d]) is NULL", i);
    if (v.dst_ptr_array == nullptr) fail(call, "argument 'dst_ptr_array' (iov[%d]) is NULL", i);
    if (static_cast<std::size_t>(v.bytes) % element != 0)
      fail(call, "argument 'bytes' (iov[%d].bytes = %d) is not a whole number of %zu-byte elements", i, v.bytes,
           element);
    for (int j = 0; j < v.ptr_array_len; ++j) {
      if (v.src_ptr_array[j] == nullptr) fail(call, "argument 'src_ptr_array' (iov[%d][%d]) is NULL", i, j);
      if (v.dst_ptr_array[j] == nullptr) fail(call, "argument 'dst_ptr_array' (iov[%d][%d]) is NULL", i, j);
      if (op == Op::get)
        r.memory().check_remote(call, "src_ptr_array", proc, v.src_ptr_array[j], static_cast<std::size_t>(v.bytes));
      else
        r.memory().check_remote(call, "dst_ptr_array", proc, v.dst_ptr_array[j], static_cast<std::size_t>(v.bytes));
    }
    lists.push_back({v.src_ptr_array, v.dst_ptr_array, static_cast<std::size_t>(v.bytes), v.ptr_array_len});
  }
  return lists;
}

int vector_call(const char* call, Op op, const AccArgs* acc, armci_giov_t* iov, int iov_len, int proc, bool nb,
                armci_hdl_t* handle) {
  armci::Runtime& r = runtime(call);
  const std::vector<armci::VectorList> lists = check_vector(call, r, op, acc, iov, iov_len, proc);
  return transfer(call, r, proc, nb, handle, [&](Completion& c, armci::Mode mode, armci::VectorBatches* aggregate) {
    r.transfers().vector(armci::Call{call, op, mode, proc, acc, c, aggregate}, lists);
  });
}

}  // namespace

ARMCI_API_PEERS(int, ARMCI_PutV, (armci_giov_t* iov, int iov_len, int proc)) {
  return vector_call("ARMCI_PutV", Op::put, nullptr, iov, iov_len, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_GetV, (armci_giov_t* iov, int iov_len, int proc)) {
  return vector_call("ARMCI_GetV", Op::get, nullptr, iov, iov_len, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_AccV, (int datatype, void* scale, armci_giov_t* iov, int iov_len, int proc)) {
  runtime("ARMCI_AccV");
  const AccArgs acc = acc_args("ARMCI_AccV", datatype, scale);
  return vector_call("ARMCI_AccV", Op::acc, &acc, iov, iov_len, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbPutV, (armci_giov_t* iov, int iov_len, int proc, armci_hdl_t* handle)) {
  return vector_call("ARMCI_NbPutV", Op::put, nullptr, iov, iov_len, proc, true, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbGetV, (armci_giov_t* iov, int iov_len, int proc, armci_hdl_t* handle)) {
  return vector_call("ARMCI_NbGetV", Op::get, nullptr, iov, iov_len, proc, true, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbAccV, (int datatype, void* scale, armci_giov_t* iov, int iov_len, int proc, armci_hdl_t* handle)) {
  runtime("ARMCI_NbAccV");
  const AccArgs acc = acc_args("ARMCI_NbAccV", datatype, scale);
  return vector_call("ARMCI_NbAccV", Op::acc, &acc, iov, iov_len, proc, true, handle);
} ARMCI_PEERS_END(int)
