// Slots for requests behind explicit handles. A handle carries (index,
// generation); a slot's generation changes each time it is released, so a
// stale handle is recognised instead of touching someone else's request.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace armci {

template <typename Request>
class RequestTable {
 public:
  // Generations wrap within the bits a handle has for them.
  static constexpr std::uint32_t kGenerationBits = 23;
  static constexpr std::uint32_t kGenerationMask = (1u << kGenerationBits) - 1;

  struct Id {
    std::uint32_t index = 0;
    std::uint32_t generation = 0;
  };

  // Slots live in a deque so their addresses stay put while the table grows:
  // the network holds pointers to their completions.
  Id acquire() {
    std::uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[index];
    slot.busy = true;
    ++in_use_;
    return Id{index, slot.generation};
  }

  // nullptr when the id is stale (released since) or was never handed out.
  Request* find(Id id) {
    if (id.index >= slots_.size()) return nullptr;
    Slot& slot = slots_[id.index];
    if (!slot.busy || slot.generation != id.generation) return nullptr;
    return &slot.request;
  }

  void release(Id id) {
    Slot& slot = slots_[id.index];
    slot.busy = false;
    slot.generation = (slot.generation + 1) & kGenerationMask;
    slot.request.reset();
    free_.push_back(id.index);
    --in_use_;
  }

  std::size_t in_use() const { return in_use_; }
  std::size_t capacity() const { return slots_.size(); }

  template <typename F>
  void for_each_busy(F&& visit) {
    for (std::uint32_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].busy) visit(Id{i, slots_[i].generation}, slots_[i].request);
  }

 private:
  struct Slot {
    Request request;
    std::uint32_t generation = 0;
    bool busy = false;
  };
  std::deque<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::size_t in_use_ = 0;
};

}  // namespace armci
