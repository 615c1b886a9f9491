#include "src/core/reduce.hpp"

#include <complex>
#include <cstring>

namespace armci {
namespace {

template <typename T>
constexpr bool is_complex = false;
template <typename T>
constexpr bool is_complex<std::complex<T>> = true;

// Through memcpy: a window's accumulate lands at whatever address the user
// named and its operand may sit anywhere in a message, so neither side need
// be aligned for T; the compiler makes plain loads and stores of it.
template <typename T, ReduceOp op>
void combine(void* into_bytes, const void* from_bytes, std::size_t count) {
  auto* into = static_cast<unsigned char*>(into_bytes);
  const auto* from = static_cast<const unsigned char*>(from_bytes);
  constexpr bool ordered = !is_complex<T>;
  // -O2's cost model leaves these loops scalar (it neither peels nor
  // versions them); a large armci_msg_dgop spends its time here. The two
  // never overlap: a received piece is combined into the caller's data.
#pragma omp simd
  for (std::size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, into + i * sizeof(T), sizeof(T));
    std::memcpy(&b, from + i * sizeof(T), sizeof(T));
    if constexpr (op == ReduceOp::sum) a = wrapping_add(a, b);
    else if constexpr (op == ReduceOp::product) a = wrapping_mul(a, b);
    else if constexpr ((op == ReduceOp::max || op == ReduceOp::absmax) && ordered)
      a = a < b ? b : a;
    else if constexpr ((op == ReduceOp::min || op == ReduceOp::absmin) && ordered)
      a = b < a ? b : a;
    else if constexpr (op == ReduceOp::bit_or && std::is_integral_v<T>) a = a | b;
    else if constexpr (op == ReduceOp::bit_and && std::is_integral_v<T>) a = a & b;
    else if constexpr (op == ReduceOp::bit_xor && std::is_integral_v<T>) a = a ^ b;
    else if constexpr (op == ReduceOp::logical_and && std::is_integral_v<T>) a = (a != 0 && b != 0) ? 1 : 0;
    else if constexpr (op == ReduceOp::logical_or && std::is_integral_v<T>) a = (a != 0 || b != 0) ? 1 : 0;
    std::memcpy(into + i * sizeof(T), &a, sizeof(T));
  }
}

template <typename T>
CombineFunction combine_typed(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return combine<T, ReduceOp::sum>;
    case ReduceOp::product: return combine<T, ReduceOp::product>;
    case ReduceOp::max: return combine<T, ReduceOp::max>;
    case ReduceOp::min: return combine<T, ReduceOp::min>;
    case ReduceOp::absmax: return combine<T, ReduceOp::absmax>;
    case ReduceOp::absmin: return combine<T, ReduceOp::absmin>;
    case ReduceOp::bit_or: return combine<T, ReduceOp::bit_or>;
    case ReduceOp::bit_and: return combine<T, ReduceOp::bit_and>;
    case ReduceOp::bit_xor: return combine<T, ReduceOp::bit_xor>;
    case ReduceOp::logical_and: return combine<T, ReduceOp::logical_and>;
    case ReduceOp::logical_or: return combine<T, ReduceOp::logical_or>;
  }
  return combine<T, ReduceOp::sum>;
}

template <typename T>
void absolute(void* data, std::size_t count) {
  T* x = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) x[i] = x[i] < 0 ? static_cast<T>(-x[i]) : x[i];
}

}  // namespace

CombineFunction combine_for(ElementType type, ReduceOp op) {
  switch (type) {
    case ElementType::int_: return combine_typed<int>(op);
    case ElementType::long_: return combine_typed<long>(op);
    case ElementType::long_long: return combine_typed<long long>(op);
    case ElementType::float_: return combine_typed<float>(op);
    case ElementType::double_: return combine_typed<double>(op);
    case ElementType::complex_float: return combine_typed<std::complex<float>>(op);
    case ElementType::complex_double: return combine_typed<std::complex<double>>(op);
  }
  return combine_typed<double>(op);
}

namespace {
bool starts(const char* name, const char* prefix) { return std::strncmp(name, prefix, std::strlen(prefix)) == 0; }
}  // namespace

bool parse_reduce_op(const char* name, ReduceOp& op) {
  struct Name {
    const char* prefix;
    ReduceOp op;
  };
  // Order matters: "&&" before "&", "||" before "|".
  static constexpr Name kNames[] = {
      {"+", ReduceOp::sum},          {"*", ReduceOp::product},     {"max", ReduceOp::max},
      {"min", ReduceOp::min},        {"absmax", ReduceOp::absmax}, {"absmin", ReduceOp::absmin},
      {"or", ReduceOp::bit_or},      {"&&", ReduceOp::logical_and}, {"land", ReduceOp::logical_and},
      {"||", ReduceOp::logical_or},  {"lor", ReduceOp::logical_or}, {"&", ReduceOp::bit_and},
      {"band", ReduceOp::bit_and},   {"|", ReduceOp::bit_or},      {"bor", ReduceOp::bit_or},
  };
  for (const Name& n : kNames)
    if (starts(name, n.prefix)) {
      op = n.op;
      return true;
    }
  return false;
}

bool parse_select_op(const char* name, bool& max) {
  if (starts(name, "max")) max = true;
  else if (starts(name, "min")) max = false;
  else return false;
  return true;
}

std::string printable_op(const char* name) {
  std::string shown;
  for (std::size_t i = 0; i < 16 && name[i] >= 0x20 && name[i] < 0x7f; ++i) shown += name[i];
  return shown;
}

void prepare_absolute(ElementType type, void* data, std::size_t count) {
  switch (type) {
    case ElementType::int_: return absolute<int>(data, count);
    case ElementType::long_: return absolute<long>(data, count);
    case ElementType::long_long: return absolute<long long>(data, count);
    case ElementType::float_: return absolute<float>(data, count);
    case ElementType::double_: return absolute<double>(data, count);
    case ElementType::complex_float:
    case ElementType::complex_double: return;  // absmax/absmin are not defined for them
  }
}

}  // namespace armci
