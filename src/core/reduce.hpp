// Element-wise reductions for the collectives: the operations of
// armci_msg_*gop over the element types of message.h, as one combine
// function the all-reduce applies to any stretch of whole elements.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

namespace armci {

// logical_and / logical_or give 1 or 0, as C's && and || (GA's "&&", "||").
enum class ReduceOp { sum, product, max, min, absmax, absmin, bit_or, bit_and, bit_xor, logical_and, logical_or };
// The complex types serve the windows' accumulates (sum and product only).
enum class ElementType { int_, long_, long_long, float_, double_, complex_float, complex_double };

constexpr std::size_t element_bytes(ElementType type) {
  switch (type) {
    case ElementType::int_: return sizeof(int);
    case ElementType::long_: return sizeof(long);
    case ElementType::long_long: return sizeof(long long);
    case ElementType::float_: return sizeof(float);
    case ElementType::double_: return sizeof(double);
    case ElementType::complex_float: return 2 * sizeof(float);
    case ElementType::complex_double: return 2 * sizeof(double);
  }
  return 1;
}

constexpr bool is_integer(ElementType type) {
  return type == ElementType::int_ || type == ElementType::long_ || type == ElementType::long_long;
}

// into[i] = into[i] (op) from[i] for count elements.
using CombineFunction = void (*)(void* into, const void* from, std::size_t count);

// The combine for one operation and type; absmax/absmin compare the
// magnitudes, which the caller has put in place of the values beforehand
// (prepare_absolute). A bitwise or logical op on a floating type, or an order on a
// complex one, is the caller's error to catch: it combines nothing.
CombineFunction combine_for(ElementType type, ReduceOp op);

// Integer sums and products wrap around (two's complement), as every
// ARMCI has it, instead of being undefined: the operands come from peers
// and users, and overflow must not license the compiler to do anything.
template <typename T>
constexpr T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}
template <typename T>
constexpr T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b));
  else
    return a * b;
}
// The op names of armci_msg_*gop, matched by prefix in the order GA's
// ARMCI and ARMCI-MPI match them ("+", "*", "max", "min", "absmax",
// "absmin", "or", "&&"/"land", "||"/"lor", "&"/"band", "|"/"bor"): a
// Fortran caller passes its name with no NUL, followed by whatever memory
// holds next. Reads no further than the first byte that differs. False:
// nothing matches.
bool parse_reduce_op(const char* name, ReduceOp& op);
// "max" or "min" by the same rule (armci_msg_sel): true for max.
bool parse_select_op(const char* name, bool& max);
// The start of an op name for an error message: its printable bytes, at
// most 16, since a Fortran name has no end of its own.
std::string printable_op(const char* name);

// For absmax/absmin: every element replaced by its magnitude.
void prepare_absolute(ElementType type, void* data, std::size_t count);

}  // namespace armci
