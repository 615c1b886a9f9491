// The words of an enum (or bool) kept as data: one table of rows gives both
// directions, so what the settings accept and what the info output prints
// come from the same list and cannot drift apart.
#pragma once

namespace armci {

template <typename T>
struct Named {
  const char* name;
  T value;
};

// The word of value in table (an array or span of Named<T>), "?" for a
// value it lacks.
template <typename Table, typename T>
constexpr const char* name_of(const Table& table, T value) {
  for (const Named<T>& row : table)
    if (row.value == value) return row.name;
  return "?";
}

}  // namespace armci
