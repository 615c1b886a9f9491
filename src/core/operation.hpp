// The vocabulary every transfer shares: what it does (Op), how the caller
// completes it (Mode), and the arguments of an accumulate.
#pragma once

#include <cstdint>

#include "src/core/acc.hpp"

namespace armci {

enum class Op : std::uint8_t { put, get, acc };
constexpr int kOps = 3;
const char* to_string(Op op);

// blocking: the caller waits right after the start. nonblocking: it may
// compute before it waits, so work can be left to the helper. aggregate: a
// nonblocking call on an aggregate handle, whose small pieces may wait in
// the handle's vector messages until the handle is waited for.
enum class Mode : std::uint8_t { blocking, nonblocking, aggregate };
constexpr int kModes = 3;
const char* to_string(Mode mode);

struct AccArgs {
  int datatype = 0;
  AccScale scale{};
};

}  // namespace armci
