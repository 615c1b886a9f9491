// The protocol table's window and collective rows: every printed range
// names what the dispatching function chooses at every size in it (swept
// around each boundary and across powers of two), as test_protocols does
// for the transfer table, and the rules themselves where the README states
// them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/core/protocols/choices.hpp"

namespace armci::protocols {
namespace {

// Sizes to try: every power of two up to 16 MiB, each +-1, and each
// range's ends +-1.
std::vector<std::size_t> sizes_around(const std::vector<ChoiceRange>& rows) {
  std::vector<std::size_t> sizes;
  for (std::size_t p = 1; p <= (std::size_t{16} << 20); p *= 2)
    for (std::size_t s : {p - 1, p, p + 1}) sizes.push_back(s);
  for (const ChoiceRange& r : rows)
    for (std::size_t s : {r.low - 1, r.low, r.low + 1, r.high - 1, r.high, r.high + 1}) sizes.push_back(s);
  return sizes;
}

const char* printed(const std::vector<ChoiceRange>& rows, std::size_t bytes) {
  for (const ChoiceRange& r : rows)
    if (r.low <= bytes && bytes <= r.high) return r.name;
  return "";
}

TEST(Choices, CollectiveFormsPrintedAreTheOnesPostTakes) {
  for (bool local : {false, true})
    for (bool single_copy : {false, true})
      for (Channel channel : {Channel::collective, Channel::user}) {
        const auto rows = collective_forms(local, single_copy, channel);
        ASSERT_FALSE(rows.empty());
        EXPECT_EQ(rows.front().low, 1u);
        EXPECT_EQ(rows.back().high, SIZE_MAX);
        for (std::size_t bytes : sizes_around(rows)) {
          if (bytes == 0 || bytes == SIZE_MAX) continue;
          EXPECT_STREQ(printed(rows, bytes), Collectives::name(Collectives::form_of(local, single_copy, channel, bytes)))
              << bytes << " bytes, local " << local << ", single copy " << single_copy;
        }
      }
}

TEST(Choices, CollectiveFormsFollowTheirSizes) {
  using C = Collectives;
  const auto forms = [](bool local, bool single_copy, Channel channel, std::size_t bytes) {
    return std::string(C::name(C::form_of(local, single_copy, channel, bytes)));
  };
  EXPECT_EQ(forms(false, true, Channel::collective, 8), "coll/network");
  EXPECT_EQ(forms(true, true, Channel::collective, C::kInlineBytes), "coll/inline");
  EXPECT_EQ(forms(true, true, Channel::collective, C::kInlineBytes + 1), "coll/pieces");
  EXPECT_EQ(forms(true, true, Channel::collective, C::kSlotBytes + 1), "coll/single-copy");
  // A program's sends of up to two slots never wait for the receiver.
  EXPECT_EQ(forms(true, true, Channel::user, 2 * C::kSlotBytes), "coll/pieces");
  EXPECT_EQ(forms(true, false, Channel::collective, std::size_t{1} << 20), "coll/pieces");
}

TEST(Choices, ReductionsPrintedAreTheOnesAllreduceTakes) {
  for (int n = 2; n <= 9; ++n)
    for (bool direct : {false, true})
      for (std::size_t element : {std::size_t{4}, std::size_t{8}, std::size_t{16}}) {
        const auto rows = reductions(n, element, direct);
        for (std::size_t bytes : sizes_around(rows)) {
          if (bytes < element || bytes == SIZE_MAX) continue;
          const auto chosen =
              Collectives::reduction_of(bytes, bytes / element, n, [direct] { return direct; });
          EXPECT_STREQ(printed(rows, bytes), Collectives::name(chosen)) << bytes << " bytes over " << n;
        }
      }
  EXPECT_EQ(Collectives::reduction_of(Collectives::kDirectShareMin * 4, 1 << 20, 4, [] { return true; }),
            Collectives::Reduction::direct);
  EXPECT_EQ(Collectives::reduction_of(Collectives::kWholeBufferReduceMax, 1024, 4, [] { return true; }),
            Collectives::Reduction::recursive_doubling);
  EXPECT_EQ(Collectives::reduction_of(Collectives::kWholeBufferReduceMax + 8, 1025, 4, [] { return false; }),
            Collectives::Reduction::recursive_halving);
}

TEST(Choices, WindowLockKinds) {
  EXPECT_EQ(win_lock_kind(true, WinLockMigrate::always, true, true), WinLockKind::cpu);
  EXPECT_EQ(win_lock_kind(false, WinLockMigrate::always, true, true), WinLockKind::hybrid);
  EXPECT_EQ(win_lock_kind(false, WinLockMigrate::after, true, false), WinLockKind::network)
      << "no helper thread to serve claims from off the node";
  EXPECT_EQ(win_lock_kind(false, WinLockMigrate::pinned, true, true), WinLockKind::network);
}

TEST(Choices, WindowRowsNameTheSettingsKinds) {
  Settings settings;
  settings.win_fence = WinFence::counted;
  settings.win_reorder = WinReorder::combine;
  settings.aggregate_piece_max = 512;
  settings.win_lock_migrate = WinLockMigrate::always;
  const std::string text = describe_windows(settings, true, true, "");
  EXPECT_NE(text.find("lock/cpu (every member on this node), lock/hybrid (spanning the network)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fence/counted"), std::string::npos) << text;
  EXPECT_NE(text.find("reorder/combine (ARMCI_WIN_REORDER): writes combined 1 B..512 B, direct 513 B.."),
            std::string::npos)
      << text;
  EXPECT_EQ(win_write_path(WinReorder::combine, 512, 512), WinWritePath::combined);
  EXPECT_EQ(win_write_path(WinReorder::combine, 513, 512), WinWritePath::direct);
  EXPECT_EQ(win_write_path(WinReorder::gets_first, 8, 512), WinWritePath::direct);
}

}  // namespace
}  // namespace armci::protocols
