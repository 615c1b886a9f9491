#include "src/core/acc.hpp"

#include <bit>

#include "src/core/progress.hpp"

namespace armci {

std::uint64_t AccStripes::take(std::uintptr_t target_address, std::size_t bytes) {
  const std::uintptr_t first = target_address >> 12;
  const std::uintptr_t last = (target_address + bytes - 1) >> 12;
  // The pages' bits are a run, rotated to the first page's stripe: a strided
  // Acc's extent spans dozens of pages, and a loop over them cost as much as
  // the compare-exchange.
  const std::uintptr_t pages = last - first + 1;
  const std::uint64_t stripes =
      pages >= kCount ? ~std::uint64_t{0} : std::rotl((std::uint64_t{1} << pages) - 1, static_cast<int>(first % kCount));
  // Free stripes are taken in ascending order, as many at a time as are free
  // below the lowest busy one, so two Accs over overlapping ranges cannot
  // deadlock; uncontended that is one compare-exchange for all of them.
  std::uint64_t seen = held.load(std::memory_order_relaxed);
  Backoff backoff;
  for (std::uint64_t mine = 0; mine != stripes;) {
    const std::uint64_t want = stripes & ~mine;
    const std::uint64_t busy = want & seen;
    const std::uint64_t now = busy == 0 ? want : want & ((busy & (~busy + 1)) - 1);
    if (now == 0) {
      backoff.pause();
      seen = held.load(std::memory_order_relaxed);
    } else if (held.compare_exchange_weak(seen, seen | now, std::memory_order_acquire, std::memory_order_relaxed)) {
      mine |= now;
      seen |= now;
    }
  }
  return stripes;
}

void AccStripes::give_back(std::uint64_t stripes) { held.fetch_and(~stripes, std::memory_order_release); }

void apply_acc_locked(AccStripes& stripes, int datatype, const AccScale& scale, void* dst, const void* src,
                      std::size_t bytes, std::uintptr_t target_address) {
  const std::uint64_t held = stripes.take(target_address, bytes);
  accumulate(datatype, scale, dst, src, bytes);
  stripes.give_back(held);
}

}  // namespace armci
