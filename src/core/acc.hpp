// Accumulate kernels: dst[i] += scale * src[i] for ARMCI's data types.
#pragma once

#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/core/reduce.hpp"

namespace armci {

// ARMCI's accumulate types, by include/armci.h's numbers (ARMCI_Acc_e; the
// API checks they agree): the core knows no public header.
enum AccType : int { kAccInt, kAccLong, kAccFloat, kAccDouble, kAccComplex, kAccDoubleComplex };

// The windows' accumulate operations other than SUM (MPI_Accumulate's)
// ride in the bits above the ARMCI type, so every protocol, message and
// batch carries them unchanged (and never merges two different ops).
enum class AccOp : int { sum, prod, max, min, band, bor, bxor };
constexpr int kAccOpShift = 8;
constexpr int acc_datatype(int type, AccOp op) { return type | static_cast<int>(op) << kAccOpShift; }
constexpr int acc_base_type(int datatype) { return datatype & ((1 << kAccOpShift) - 1); }
constexpr AccOp acc_op(int datatype) { return static_cast<AccOp>(datatype >> kAccOpShift); }

// Whether MPI defines op for the type: SUM and PROD for every type, MAX and
// MIN for the real ones, the bitwise ones for the integers.
constexpr bool acc_op_defined(int type, AccOp op) {
  const bool integer = type == kAccInt || type == kAccLong;
  const bool complex = type == kAccComplex || type == kAccDoubleComplex;
  switch (op) {
    case AccOp::sum:
    case AccOp::prod: return true;
    case AccOp::max:
    case AccOp::min: return !complex;
    case AccOp::band:
    case AccOp::bor:
    case AccOp::bxor: return integer;
  }
  return false;
}

// Size of one element of an ARMCI Acc data type (with its op); 0 for an
// unknown type or an op the type does not have.
constexpr std::size_t acc_element_size(int datatype) {
  if (datatype < 0 || !acc_op_defined(acc_base_type(datatype), acc_op(datatype))) return 0;
  switch (acc_base_type(datatype)) {
    case kAccInt: return sizeof(int);
    case kAccLong: return sizeof(long);
    case kAccFloat: return sizeof(float);
    case kAccDouble: return sizeof(double);
    case kAccComplex: return 2 * sizeof(float);
    case kAccDoubleComplex: return 2 * sizeof(double);
    default: return 0;
  }
}

// The scale as bytes of the type's width, so it can travel in a message.
struct AccScale {
  alignas(16) unsigned char bytes[16] = {};
};

inline AccScale make_acc_scale(int datatype, const void* scale) {
  AccScale s;
  std::memcpy(s.bytes, scale, acc_element_size(datatype));
  return s;
}

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

// The windows' ops are the collectives' combines (src/core/reduce.hpp).
constexpr ElementType reduce_element_type(int type) {
  switch (type) {
    case kAccInt: return ElementType::int_;
    case kAccLong: return ElementType::long_;
    case kAccFloat: return ElementType::float_;
    case kAccDouble: return ElementType::double_;
    case kAccComplex: return ElementType::complex_float;
    default: return ElementType::complex_double;
  }
}
constexpr ReduceOp reduce_op(AccOp op) {
  switch (op) {
    case AccOp::prod: return ReduceOp::product;
    case AccOp::max: return ReduceOp::max;
    case AccOp::min: return ReduceOp::min;
    case AccOp::band: return ReduceOp::bit_and;
    case AccOp::bor: return ReduceOp::bit_or;
    case AccOp::bxor: return ReduceOp::bit_xor;
    default: return ReduceOp::sum;
  }
}

namespace detail {
// Through memcpy so unaligned user buffers are fine; the compiler turns these
// into plain (vector) loads and stores. The unit-scale case has its own loop
// because it is the common one and needs no multiply.
template <typename T>
[[gnu::optimize("tree-vectorize"), ARMCI_ACC_CLONES]] void accumulate_typed(void* __restrict dst, const void* __restrict src,
                                                          std::size_t count, const AccScale& scale) {
  T factor;
  std::memcpy(&factor, scale.bytes, sizeof(T));
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  if (factor == T(1)) {
    for (std::size_t i = 0; i < count; ++i) {
      T a, b;
      std::memcpy(&a, d + i * sizeof(T), sizeof(T));
      std::memcpy(&b, s + i * sizeof(T), sizeof(T));
      a = wrapping_add(a, b);
      std::memcpy(d + i * sizeof(T), &a, sizeof(T));
    }
  } else {
    for (std::size_t i = 0; i < count; ++i) {
      T a, b;
      std::memcpy(&a, d + i * sizeof(T), sizeof(T));
      std::memcpy(&b, s + i * sizeof(T), sizeof(T));
      a = wrapping_add(a, wrapping_mul(factor, b));
      std::memcpy(d + i * sizeof(T), &a, sizeof(T));
    }
  }
}
}  // namespace detail

// bytes must be a whole number of elements of a known type (the caller
// checks, so the message can name the call).
inline void accumulate(int datatype, const AccScale& scale, void* dst, const void* src,
                       std::size_t bytes) {
  const std::size_t count = bytes / acc_element_size(datatype);
  if (acc_op(datatype) != AccOp::sum) {
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
    return;
  }
  switch (datatype) {
    case kAccInt: detail::accumulate_typed<int>(dst, src, count, scale); break;
    case kAccLong: detail::accumulate_typed<long>(dst, src, count, scale); break;
    case kAccFloat: detail::accumulate_typed<float>(dst, src, count, scale); break;
    case kAccDouble: detail::accumulate_typed<double>(dst, src, count, scale); break;
    case kAccComplex: detail::accumulate_typed<std::complex<float>>(dst, src, count, scale); break;
    case kAccDoubleComplex: detail::accumulate_typed<std::complex<double>>(dst, src, count, scale); break;
    default: break;
  }
}

// The Acc locks a rank exposes to the others (in its control block):
// stripes of its memory by 4 KiB page of the target address, held while an
// Acc applies. The target's own message handler and its node neighbours
// take the same stripes, so Accs stay atomic per element whoever applies
// them.
struct AccStripes {
  static constexpr int kCount = 64;
  std::atomic<std::uint32_t> lock[kCount];

  // The stripes covering a range, taken (returned as a mask) and given
  // back: a strided Acc holds them once over its extent, not once per piece.
  std::uint64_t take(std::uintptr_t target_address, std::size_t bytes);
  void give_back(std::uint64_t stripes);
};

// dst += scale * src under the stripes that cover
// [target_address, target_address + bytes) of the target.
void apply_acc_locked(AccStripes& stripes, int datatype, const AccScale& scale, void* dst, const void* src,
                      std::size_t bytes, std::uintptr_t target_address);

}  // namespace armci
