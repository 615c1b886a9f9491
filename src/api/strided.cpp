// Strided transfers (ARMCI's stride_levels/count/stride arrays) and the
// local pack/unpack calls. Every argument, and the whole remote extent, is
// checked before the first piece moves; the core chooses how pieces travel.
#include <cstring>

#include "src/api/api.hpp"

using namespace armci::api;
using armci::AccArgs;
using armci::Op;
using armci::fail;

namespace armci::api {
namespace {

void check_strided_problem(const char* call, const strided::Problem& p) {
  if (p) [[unlikely]] fail(call, "%s", p.message);
}

// An Acc's pieces are whole elements of its type.
void check_strided_acc(const char* call, const AccArgs& acc, std::int64_t piece_bytes) {
  const std::size_t element = acc_element_size(acc.datatype);
  if (piece_bytes % static_cast<std::int64_t>(element) != 0)
    fail(call, "argument 'count' (count[0] = %lld bytes) is not a whole number of %zu-byte elements",
         static_cast<long long>(piece_bytes), element);
}

// Checks everything of a strided call; false when there is nothing to do.
bool check_strided(const char* call, Runtime& r, Op op, const AccArgs* acc, const void* src, const int* src_stride,
                   const void* dst, const int* dst_stride, const int* count, int levels, int proc) {
  check_proc(call, r, proc);
  strided::Shape shape;
  check_strided_problem(call, strided::check(src_stride, dst_stride, count, levels, shape));
  if (shape.pieces == 0) return false;
  if (src == nullptr) fail(call, "argument 'src_ptr' is NULL");
  if (dst == nullptr) fail(call, "argument 'dst_ptr' is NULL");
  if (acc != nullptr) check_strided_acc(call, *acc, shape.piece_bytes);
  // One region must hold the remote side from its lowest to its highest byte.
  if (op == Op::get)
    r.memory().check_remote(call, "src_ptr", proc, src, static_cast<std::size_t>(shape.src_extent));
  else
    r.memory().check_remote(call, "dst_ptr", proc, dst, static_cast<std::size_t>(shape.dst_extent));
  return true;
}

// Local pack/unpack between a strided layout at ptr and a contiguous buffer.
void copy_strided(const char* call, void* ptr, int levels, int* stride, int* count, char* buf, bool pack) {
  strided::Shape shape;
  check_strided_problem(call, strided::check(stride, stride, count, levels, shape));
  if (shape.pieces == 0) return;
  if (ptr == nullptr) fail(call, "argument 'ptr' is NULL");
  if (buf == nullptr) fail(call, "argument 'buf' is NULL");
  auto* base = static_cast<char*>(ptr);
  std::size_t at = 0;
  strided::for_each_piece(stride, stride, count, levels, [&](std::int64_t off, std::int64_t, std::size_t n) {
    if (pack)
      std::memcpy(buf + at, base + off, n);
    else
      std::memcpy(base + off, buf + at, n);
    at += n;
  });
}

}  // namespace

namespace {

// A strided call with stride levels (checks its whole extent first).
int strided_levels(const char* call, Runtime& r, Op op, const AccArgs* acc, void* src, int* src_stride, void* dst,
                   int* dst_stride, int* count, int levels, int proc, bool nb, armci_hdl_t* handle) {
  if (!check_strided(call, r, op, acc, src, src_stride, dst, dst_stride, count, levels, proc)) {
    if (nb && handle != nullptr) check_handle(call, handle);
    return 0;
  }
  return transfer(call, r, proc, nb, handle, [&](Completion& c, Mode mode, VectorBatches* aggregate) {
    r.transfers().strided(Call{call, op, mode, proc, acc, c, aggregate}, src, src_stride, dst, dst_stride, count,
                          levels);
  });
}

// Zero levels past the fast path: one contiguous piece, checked and found
// in one lookup (the layout's checks, extent and protocol choice would cost
// more than copying a few KiB).
[[gnu::noinline]] int contiguous_piece(const char* call, Runtime& r, Op op, const AccArgs* acc, void* src, void* dst,
                                       std::size_t bytes, int proc, bool nb, armci_hdl_t* handle) {
  return transfer(call, r, proc, nb, handle, [&](Completion& c, Mode mode, VectorBatches* aggregate) {
    r.transfers().contiguous(Call{call, op, mode, proc, acc, c, aggregate}, src, dst, bytes,
                             op == Op::get ? "src_ptr" : "dst_ptr");
  });
}

// Inlined into each entry point: zero levels is one contiguous piece (every
// 1-D patch of Global Arrays), which a same-node region found last moves
// with no call on the way.
[[gnu::always_inline]] inline int strided_entry(const char* call, Op op, const AccArgs* acc, void* src,
                                                int* src_stride, void* dst, int* dst_stride, int* count, int levels,
                                                int proc, bool nb, armci_hdl_t* handle) {
  Runtime& r = runtime(call);
  if (levels == 0 && count != nullptr && count[0] > 0 && src != nullptr && dst != nullptr) [[likely]] {
    check_proc(call, r, proc);
    if (acc != nullptr) check_strided_acc(call, *acc, count[0]);
    const auto bytes = static_cast<std::size_t>(count[0]);
    if (finished_mapped(r, op, acc, src, dst, bytes, proc, nb, handle)) [[likely]]
      return 0;
    return contiguous_piece(call, r, op, acc, src, dst, bytes, proc, nb, handle);
  }
  return strided_levels(call, r, op, acc, src, src_stride, dst, dst_stride, count, levels, proc, nb, handle);
}

}  // namespace

int strided_call(const char* call, Op op, const AccArgs* acc, void* src, int* src_stride, void* dst, int* dst_stride,
                 int* count, int levels, int proc, bool nb, armci_hdl_t* handle) {
  return strided_entry(call, op, acc, src, src_stride, dst, dst_stride, count, levels, proc, nb, handle);
}

}  // namespace armci::api

ARMCI_API_PEERS(int, ARMCI_PutS, (void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                            int stride_levels, int proc)) {
  return strided_entry("ARMCI_PutS", Op::put, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_GetS, (void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                            int stride_levels, int proc)) {
  return strided_entry("ARMCI_GetS", Op::get, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_AccS, (int datatype, void* scale, void* src_ptr, int src_stride_ar[], void* dst_ptr,
                            int dst_stride_ar[], int count[], int stride_levels, int proc)) {
  runtime("ARMCI_AccS");
  const AccArgs acc = acc_args("ARMCI_AccS", datatype, scale);
  return strided_entry("ARMCI_AccS", Op::acc, &acc, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, false, nullptr);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbPutS, (void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                              int stride_levels, int proc, armci_hdl_t* handle)) {
  return strided_entry("ARMCI_NbPutS", Op::put, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, true, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbGetS, (void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                              int stride_levels, int proc, armci_hdl_t* handle)) {
  return strided_entry("ARMCI_NbGetS", Op::get, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, true, handle);
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_NbAccS, (int datatype, void* scale, void* src_ptr, int src_stride_ar[], void* dst_ptr,
                              int dst_stride_ar[], int count[], int stride_levels, int proc, armci_hdl_t* handle)) {
  runtime("ARMCI_NbAccS");
  const AccArgs acc = acc_args("ARMCI_NbAccS", datatype, scale);
  return strided_entry("ARMCI_NbAccS", Op::acc, &acc, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, true, handle);
} ARMCI_PEERS_END(int)

armci_api(void, armci_write_strided, (void* ptr, int stride_levels, int stride_arr[], int count[], char* buf)) {
  copy_strided("armci_write_strided", ptr, stride_levels, stride_arr, count, buf, true);
}

armci_api(void, armci_read_strided, (void* ptr, int stride_levels, int stride_arr[], int count[], char* buf)) {
  copy_strided("armci_read_strided", ptr, stride_levels, stride_arr, count, buf, false);
}
