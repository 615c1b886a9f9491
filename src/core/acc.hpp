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

// One Acc kernel: dst += scale * src over `rows` rows of `bytes` (whole
// elements of datatype) each, the rows dst_stride and src_stride bytes
// apart. A strided Acc looks its kernel up once and hands it all the rows of
// its first level in one call, so short rows do not each pay the type
// dispatch, an indirect call and the kernel's setup, which for rows of a few
// hundred bytes cost as much as the adding.
using AccKernel = void (*)(int datatype, const AccScale& scale, void* dst, const void* src, std::size_t bytes,
                           std::size_t rows, std::ptrdiff_t dst_stride, std::ptrdiff_t src_stride);

// The kernel of a known datatype (with its op), one vectorised loop per
// type for SUM (src/core/acc_kernels.cpp).
AccKernel acc_kernel(int datatype);

// bytes must be a whole number of elements of a known type (the caller
// checks, so the message can name the call).
inline void accumulate(int datatype, const AccScale& scale, void* dst, const void* src, std::size_t bytes) {
  acc_kernel(datatype)(datatype, scale, dst, src, bytes, 1, 0, 0);
}

// The Acc locks a rank exposes to the others (in its control block):
// stripes of its memory by 4 KiB page of the target address, held while an
// Acc applies. The target's own message handler and its node neighbours
// take the same stripes, so Accs stay atomic per element whoever applies
// them.
// One bit per stripe, in one word, so an Acc takes all its stripes with one
// atomic when none is held.
struct AccStripes {
  static constexpr int kCount = 64;
  std::atomic<std::uint64_t> held{0};

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
