// The barrier: a dissemination barrier over the control blocks, a store
// into a neighbour's block and a put into a network peer's.
//
// Owns: the barrier epoch and the words network puts are sent from.
// Called by: the runtime (ARMCI_Barrier after a fence, allocations before
// their segment names go, shutdown), Sync (destroying mutexes), groups and
// collectives.
#pragma once

#include <cstdint>

#include "src/core/memory.hpp"

namespace armci {

class Completions;

class Barrier {
 public:
  Barrier(const Peers& peers, Memory& memory, Progress& progress, Completions& completions);
  // Every rank has entered once this returns; nothing is fenced (see
  // Runtime::barrier for ARMCI_Barrier's fence).
  void wait();

 private:
  void signal(int to, int round, std::uint64_t epoch);

  const Peers& peers_;
  Memory& memory_;
  Progress& progress_;
  Completions& completions_;
  std::uint64_t epoch_ = 0;
  std::uint64_t source_[ControlBlock::kBarrierRounds] = {};
};

}  // namespace armci
