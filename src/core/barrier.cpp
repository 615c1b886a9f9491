#include "src/core/barrier.hpp"

#include <cstddef>

#include "src/core/completion.hpp"

namespace armci {

Barrier::Barrier(const Peers& peers, Memory& memory, Progress& progress, Completions& completions)
    : peers_(peers), memory_(memory), progress_(progress), completions_(completions) {}

void Barrier::signal(int to, int round, std::uint64_t epoch) {
  if (ControlBlock* block = memory_.control(to)) {
    block->barrier[round].store(epoch, std::memory_order_release);
    return;
  }
  source_[round] = epoch;
  const std::uintptr_t remote = memory_.control_address(
      to, offsetof(ControlBlock, barrier) + static_cast<std::size_t>(round) * sizeof(std::uint64_t));
  platform::LocalSegment segment{&source_[round], sizeof(std::uint64_t)};
  platform::Completion sent;
  progress_.with_network([&](platform::Network& net) {
    net.put(to, std::span(&segment, 1), remote, memory_.control_key(to), sent);
  });
  completions_.wait("ARMCI_Barrier", sent);
}

void Barrier::wait() {
  const int size = peers_.size();
  const int rank = peers_.rank();
  if (size == 1) return;
  // Dissemination: after round k every rank has heard, directly or not,
  // from the 2^(k+1) ranks before it.
  const std::uint64_t epoch = ++epoch_;
  ControlBlock& mine = memory_.own_control();
  int round = 0;
  for (int distance = 1; distance < size; distance <<= 1, ++round) {
    signal((rank + distance) % size, round, epoch);
    const WaitDeadline::Awaiting awaiting((rank - distance + size) % size);
    progress_.until([&] { return mine.barrier[round].load(std::memory_order_acquire) >= epoch; });
  }
}

}  // namespace armci
