// The pure helpers of the synchronisation layer: queue-lock node ids and the
// 32-bit lanes of a 64-bit word that the network compare-and-swap loops edit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "src/core/sync.hpp"

using namespace armci;

TEST(SyncWaiterId, RoundTripsAndZeroMeansNobody) {
  for (int rank : {0, 1, 7, 65535, 1 << 20})
    for (int slot : {0, 1, Sync::kLockSlots - 1}) {
      const std::uint64_t id = encode_waiter(rank, slot);
      EXPECT_NE(0u, id);
      EXPECT_EQ(rank, waiter_rank(id));
      EXPECT_EQ(slot, waiter_slot(id));
    }
  EXPECT_NE(encode_waiter(0, 1), encode_waiter(1, 0));
}

TEST(SyncLanes, MatchMemoryLayout) {
  // The lane at byte offset 0 or 4 of the word is the int stored there.
  const std::int32_t ints[2] = {-16, 0x12345678};
  std::uint64_t word;
  std::memcpy(&word, ints, sizeof word);
  EXPECT_EQ(static_cast<std::uint32_t>(-16), word_lane(word, 0));
  EXPECT_EQ(0x12345678u, word_lane(word, 4));
}

TEST(SyncLanes, ReplacingOneLaneLeavesTheOther) {
  const std::uint64_t word = 0xAAAAAAAA'FFFFFFF0ull;
  // An add in the low lane that wraps must not carry into the high lane.
  const std::uint32_t low = word_lane(word, 0) + 0x20u;
  EXPECT_EQ(0xAAAAAAAA'00000010ull, with_lane(word, 0, low));
  EXPECT_EQ(0x00000001'FFFFFFF0ull, with_lane(word, 4, 1));
  EXPECT_EQ(word, with_lane(word, 4, word_lane(word, 4)));
}
