#include <gtest/gtest.h>

#include "src/core/request_table.hpp"

namespace {
struct Payload {
  int value = 0;
  void reset() { value = 0; }
};
using Table = armci::RequestTable<Payload>;
}  // namespace

TEST(RequestTable, StaleIdsAreRecognised) {
  Table table;
  auto a = table.acquire();
  table.find(a)->value = 7;
  EXPECT_EQ(table.find(a)->value, 7);
  table.release(a);
  EXPECT_EQ(table.find(a), nullptr);
  auto b = table.acquire();  // reuses the slot with a new generation
  EXPECT_EQ(b.index, a.index);
  EXPECT_NE(b.generation, a.generation);
  EXPECT_EQ(table.find(a), nullptr);
  EXPECT_EQ(table.find(b)->value, 0);  // released payloads are reset
}

TEST(RequestTable, GrowsWithoutMovingLiveRequests) {
  Table table;
  std::vector<Table::Id> ids;
  auto first = table.acquire();
  Payload* address = table.find(first);
  for (int i = 0; i < 100000; ++i) ids.push_back(table.acquire());
  EXPECT_EQ(table.find(first), address);
  EXPECT_EQ(table.in_use(), 100001u);
  for (auto id : ids) table.release(id);
  EXPECT_EQ(table.in_use(), 1u);
  EXPECT_EQ(table.find(Table::Id{999999, 0}), nullptr);
}

TEST(RequestTable, GenerationsWrapWithinTheHandleBits) {
  Table table;
  Table::Id id{};
  for (std::uint32_t i = 0; i < Table::kGenerationMask + 5; ++i) {
    id = table.acquire();
    ASSERT_LE(id.generation, Table::kGenerationMask);
    table.release(id);
  }
  EXPECT_EQ(table.capacity(), 1u);
}
