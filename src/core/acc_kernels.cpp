// The Acc kernels, compiled once into the library: a kernel taken by address
// across the library's boundary must not be a template instance a program
// including acc.hpp could define too (an ifunc defined in the executable and
// referenced by the library cannot be resolved: the loader refuses it).
#include <complex>
#include <cstring>

#include "src/core/acc.hpp"

namespace armci {

// target_clones makes an ifunc resolver, and the dynamic loader runs it while
// relocating, before ThreadSanitizer's runtime is set up: an instrumented
// resolver crashes every program that holds a clone (the unit tests died at
// start under scripts/sanitize.sh tsan). Under TSan the kernel is one plain
// function.
#if defined(__SANITIZE_THREAD__)
#define ARMCI_ACC_CLONES
#else
#define ARMCI_ACC_CLONES gnu::target_clones("avx2", "default")
#endif

namespace {
// Through memcpy so unaligned user buffers are fine; the compiler turns these
// into plain (vector) loads and stores. The unit-scale case has its own loop
// because it is the common one and needs no multiply; the choice is made
// once per call, outside the rows.
template <typename T, bool Unit>
[[gnu::always_inline]] inline void add_row(T factor, unsigned char* __restrict d, const unsigned char* __restrict s,
                                           std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, d + i * sizeof(T), sizeof(T));
    std::memcpy(&b, s + i * sizeof(T), sizeof(T));
    if constexpr (Unit) a = wrapping_add(a, b);
    else a = wrapping_add(a, wrapping_mul(factor, b));
    std::memcpy(d + i * sizeof(T), &a, sizeof(T));
  }
}

// The loops start on a 64-byte boundary: AMD Zen's op cache holds code by
// 64-byte line, and the vectorised add (24 bytes) runs at half speed where it
// straddles two lines, so without this the Acc's speed depended on where the
// linker happened to put the kernel (4.6 KiB: 42 against 81 ns per call).
// tests/check-acc-alignment.sh reads the built library to hold this.
template <typename T>
[[gnu::optimize("tree-vectorize", "align-loops=64"), ARMCI_ACC_CLONES]] void accumulate_typed(
    int, const AccScale& scale, void* __restrict dst, const void* __restrict src, std::size_t bytes, std::size_t rows,
    std::ptrdiff_t dst_stride, std::ptrdiff_t src_stride) {
  const std::size_t count = bytes / sizeof(T);
  T factor;
  std::memcpy(&factor, scale.bytes, sizeof(T));
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  if (factor == T(1)) {
    for (std::size_t r = 0; r < rows; ++r, d += dst_stride, s += src_stride) add_row<T, true>(factor, d, s, count);
  } else {
    for (std::size_t r = 0; r < rows; ++r, d += dst_stride, s += src_stride) add_row<T, false>(factor, d, s, count);
  }
}

// The ops other than SUM, through the collectives' combines.
void accumulate_op_row(int datatype, void* dst, const void* src, std::size_t bytes) {
  const std::size_t count = bytes / acc_element_size(datatype);
  const CombineFunction combine = combine_for(reduce_element_type(acc_base_type(datatype)), reduce_op(acc_op(datatype)));
  // The collectives' kernels load whole elements, but an Acc message's
  // payload can sit at a 4-byte offset (UCX's active messages; UBSan
  // caught it) and a user's buffer anywhere: stage those through aligned
  // buffers.
  const std::size_t element = acc_element_size(datatype);
  const std::size_t align = element < 8 ? element : 8;
  if ((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % align == 0) {
    combine(dst, src, count);
    return;
  }
  constexpr std::size_t kStage = 4096;  // a multiple of every element size
  alignas(16) unsigned char into[kStage], from[kStage];
  for (std::size_t done = 0; done < bytes; done += kStage) {
    const std::size_t n = bytes - done < kStage ? bytes - done : kStage;
    std::memcpy(into, static_cast<unsigned char*>(dst) + done, n);
    std::memcpy(from, static_cast<const unsigned char*>(src) + done, n);
    combine(into, from, n / element);
    std::memcpy(static_cast<unsigned char*>(dst) + done, into, n);
  }
}

void accumulate_op(int datatype, const AccScale&, void* dst, const void* src, std::size_t bytes, std::size_t rows,
                   std::ptrdiff_t dst_stride, std::ptrdiff_t src_stride) {
  for (std::size_t r = 0; r < rows; ++r)
    accumulate_op_row(datatype, static_cast<unsigned char*>(dst) + static_cast<std::ptrdiff_t>(r) * dst_stride,
                      static_cast<const unsigned char*>(src) + static_cast<std::ptrdiff_t>(r) * src_stride, bytes);
}

void accumulate_nothing(int, const AccScale&, void*, const void*, std::size_t, std::size_t, std::ptrdiff_t,
                        std::ptrdiff_t) {}
}  // namespace

AccKernel acc_kernel(int datatype) {
  if (acc_op(datatype) != AccOp::sum) return accumulate_op;
  switch (datatype) {
    case kAccInt: return accumulate_typed<int>;
    case kAccLong: return accumulate_typed<long>;
    case kAccFloat: return accumulate_typed<float>;
    case kAccDouble: return accumulate_typed<double>;
    case kAccComplex: return accumulate_typed<std::complex<float>>;
    case kAccDoubleComplex: return accumulate_typed<std::complex<double>>;
    default: return accumulate_nothing;
  }
}

}  // namespace armci
