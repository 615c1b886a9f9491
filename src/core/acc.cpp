#include "src/core/acc.hpp"

#include "src/core/progress.hpp"

namespace armci {

std::uint64_t AccStripes::take(std::uintptr_t target_address, std::size_t bytes) {
  // Taken in ascending order, so two Accs over overlapping ranges cannot
  // deadlock.
  const std::uintptr_t first = target_address >> 12;
  const std::uintptr_t last = (target_address + bytes - 1) >> 12;
  std::uint64_t stripes = 0;
  if (last - first + 1 >= kCount) {
    stripes = ~std::uint64_t{0};
  } else {
    for (std::uintptr_t page = first; page <= last; ++page) stripes |= std::uint64_t{1} << (page % kCount);
  }
  for (std::uint64_t left = stripes; left != 0; left &= left - 1) {
    auto& word = lock[__builtin_ctzll(left)];
    Backoff backoff;
    while (word.load(std::memory_order_relaxed) != 0 || word.exchange(1, std::memory_order_acquire) != 0)
      backoff.pause();
  }
  return stripes;
}

void AccStripes::give_back(std::uint64_t stripes) {
  for (std::uint64_t left = stripes; left != 0; left &= left - 1)
    lock[__builtin_ctzll(left)].store(0, std::memory_order_release);
}

void apply_acc_locked(AccStripes& stripes, int datatype, const AccScale& scale, void* dst, const void* src,
                      std::size_t bytes, std::uintptr_t target_address) {
  const std::uint64_t held = stripes.take(target_address, bytes);
  accumulate(datatype, scale, dst, src, bytes);
  stripes.give_back(held);
}

}  // namespace armci
