#include <gtest/gtest.h>

#include "src/core/region_table.hpp"

using armci::Region;
using armci::RegionTable;

namespace {
Region make(std::uintptr_t base, std::size_t size) {
  Region r;
  r.base = base;
  r.size = size;
  return r;
}
}  // namespace

TEST(RegionTable, FindsTheRegionHoldingTheWholeRange) {
  RegionTable table(2);
  table.insert(1, make(0x3000, 0x1000));
  table.insert(1, make(0x1000, 0x1000));
  table.insert(1, make(0x8000, 0x100));
  ASSERT_NE(table.find(1, 0x1000, 1), nullptr);
  EXPECT_EQ(table.find(1, 0x1000, 1)->base, 0x1000u);
  EXPECT_EQ(table.find(1, 0x3ff0, 0x10)->base, 0x3000u);
  EXPECT_EQ(table.find(1, 0x8000, 0x100)->base, 0x8000u);
  EXPECT_EQ(table.find(1, 0x2000, 0)->base, 0x1000u);  // an empty range at the end
}

TEST(RegionTable, RejectsRangesThatLeaveTheRegion) {
  RegionTable table(2);
  table.insert(0, make(0x1000, 0x1000));
  table.insert(0, make(0x2000, 0x1000));
  EXPECT_EQ(table.find(0, 0x0fff, 1), nullptr);       // before
  EXPECT_EQ(table.find(0, 0x1ff0, 0x20), nullptr);    // straddles two regions
  EXPECT_EQ(table.find(0, 0x2ff0, 0x11), nullptr);    // runs past the end
  EXPECT_EQ(table.find(0, 0x3000, 1), nullptr);       // just past the end
  EXPECT_EQ(table.find(1, 0x1000, 1), nullptr);       // another rank's table
  EXPECT_EQ(table.find(0, 0x1000, SIZE_MAX), nullptr);  // no wrap-around
}

TEST(RegionTable, CachedLookupNeverReturnsAStaleRegion) {
  RegionTable table(1);
  table.insert(0, make(0x1000, 0x1000));
  ASSERT_NE(table.find(0, 0x1800, 8), nullptr);
  EXPECT_TRUE(table.erase(0, 0x1000));
  EXPECT_EQ(table.find(0, 0x1800, 8), nullptr);
  EXPECT_FALSE(table.erase(0, 0x1000));
  table.insert(0, make(0x1800, 0x10));
  EXPECT_EQ(table.find(0, 0x1800, 8)->size, 0x10u);
}

TEST(RegionTable, ManyRegionsAgreeWithLinearSearch) {
  RegionTable table(1);
  std::vector<Region> all;
  for (std::uintptr_t i = 0; i < 500; ++i) {
    all.push_back(make(0x100000 + i * 0x3000, 0x1000 + (i % 7) * 0x100));
    table.insert(0, all.back());
  }
  for (std::uintptr_t a = 0x100000 - 0x100; a < 0x100000 + 500 * 0x3000; a += 0x1f3) {
    const Region* expect = nullptr;
    for (auto& r : all)
      if (r.contains(a, 16)) expect = &r;
    const Region* got = table.find(0, a, 16);
    ASSERT_EQ(expect == nullptr, got == nullptr) << std::hex << a;
    if (got) {
      EXPECT_EQ(got->base, expect->base);
    }
  }
}

namespace {
Region mapped(std::uintptr_t base, std::size_t size, std::uintptr_t local) {
  Region r = make(base, size);
  r.local = reinterpret_cast<std::byte*>(local);
  return r;
}
std::uintptr_t recent_address(const RegionTable& table, int rank, std::uintptr_t address, std::size_t length) {
  return reinterpret_cast<std::uintptr_t>(table.recent()[rank].local_address(address, length));
}
}  // namespace

TEST(RegionTable, RecentEntryHoldsTheMappedRegionFoundLast) {
  RegionTable table(3);
  table.insert(1, mapped(0x10000, 0x1000, 0x7000000));
  table.insert(1, mapped(0x20000, 0x1000, 0x8000000));
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0u);  // nothing found yet
  ASSERT_NE(table.find(1, 0x10010, 8), nullptr);
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0x7000010u);
  EXPECT_EQ(recent_address(table, 1, 0x10000, 0x1000), 0x7000000u);  // the whole region
  EXPECT_EQ(recent_address(table, 1, 0x10ff8, 9), 0u);                // runs past its end
  EXPECT_EQ(recent_address(table, 1, 0x0fff0, 8), 0u);                // before it
  EXPECT_EQ(recent_address(table, 1, 0x20000, 8), 0u);                // another region
  EXPECT_EQ(recent_address(table, 1, 0x10000, SIZE_MAX), 0u);         // no wrap-around
  EXPECT_EQ(recent_address(table, 0, 0x10010, 8), 0u);                // another rank
  EXPECT_EQ(recent_address(table, 2, 0x10010, 8), 0u);
  ASSERT_NE(table.find(1, 0x20100, 8), nullptr);
  EXPECT_EQ(recent_address(table, 1, 0x20100, 8), 0x8000100u);
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0u);  // one entry per rank: the last found
}

TEST(RegionTable, RecentEntryLeavesOutRegionsWithoutAMapping) {
  RegionTable table(2);
  table.insert(1, make(0x10000, 0x1000));  // a network peer's: reached through the layer
  ASSERT_NE(table.find(1, 0x10010, 8), nullptr);
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0u);
  EXPECT_EQ(table.recent()[1].local, nullptr);
}

TEST(RegionTable, FreedRegionLeavesTheRecentEntry) {
  RegionTable table(2);
  table.insert(1, mapped(0x10000, 0x1000, 0x7000000));
  ASSERT_NE(table.find(1, 0x10010, 8), nullptr);
  ASSERT_NE(recent_address(table, 1, 0x10010, 8), 0u);
  EXPECT_TRUE(table.erase(1, 0x10000));
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0u);
  EXPECT_EQ(table.find(1, 0x10010, 8), nullptr);
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0u);  // a failed lookup fills nothing
}

TEST(RegionTable, NewRegionAtTheSameBaseIsFoundWithItsOwnSizeAndMapping) {
  RegionTable table(2);
  table.insert(1, mapped(0x10000, 0x4000, 0x7000000));
  ASSERT_NE(table.find(1, 0x13000, 8), nullptr);
  EXPECT_TRUE(table.erase(1, 0x10000));
  table.insert(1, mapped(0x10000, 0x1000, 0x9000000));  // smaller, mapped elsewhere
  EXPECT_EQ(recent_address(table, 1, 0x13000, 8), 0u);
  EXPECT_EQ(table.find(1, 0x13000, 8), nullptr);  // past the new end
  ASSERT_NE(table.find(1, 0x10010, 8), nullptr);
  EXPECT_EQ(recent_address(table, 1, 0x10010, 8), 0x9000010u);
  EXPECT_EQ(recent_address(table, 1, 0x10ff8, 16), 0u);
}

TEST(RegionTable, AnyChangeToARankEmptiesItsRecentEntryOnly) {
  RegionTable table(3);
  table.insert(1, mapped(0x10000, 0x1000, 0x7000000));
  table.insert(2, mapped(0x10000, 0x1000, 0x8000000));
  ASSERT_NE(table.find(1, 0x10000, 8), nullptr);
  ASSERT_NE(table.find(2, 0x10000, 8), nullptr);
  table.insert(1, mapped(0x30000, 0x1000, 0x9000000));  // an allocation added
  EXPECT_EQ(recent_address(table, 1, 0x10000, 8), 0u);
  EXPECT_EQ(recent_address(table, 2, 0x10000, 8), 0x8000000u);
  ASSERT_NE(table.find(1, 0x10000, 8), nullptr);
  table.clear(1);  // a dead peer's regions go
  EXPECT_EQ(recent_address(table, 1, 0x10000, 8), 0u);
  EXPECT_EQ(table.find(1, 0x10000, 8), nullptr);
  EXPECT_FALSE(table.erase(2, 0x12345));  // no such region: nothing changes
  EXPECT_EQ(recent_address(table, 2, 0x10000, 8), 0x8000000u);
}
