// The strided layout helper: validation and the pieces it yields.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "src/core/strided.hpp"

using armci::strided::check;
using armci::strided::for_each_piece;
using armci::strided::Shape;

namespace {

using Piece = std::tuple<std::int64_t, std::int64_t, std::size_t>;

std::vector<Piece> pieces(const int* ss, const int* ds, const int* count, int levels) {
  std::vector<Piece> out;
  for_each_piece(ss, ds, count, levels,
                 [&](std::int64_t s, std::int64_t d, std::size_t n) { out.emplace_back(s, d, n); });
  return out;
}

// Reference: nested loops written out, for any level count.
std::vector<Piece> reference(const int* ss, const int* ds, const int* count, int levels) {
  std::vector<Piece> out;
  std::int64_t total = 1;
  for (int i = 1; i <= levels; ++i) total *= count[i];
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t rest = k, s = 0, d = 0;
    for (int i = 1; i <= levels; ++i) {
      const std::int64_t idx = rest % count[i];
      rest /= count[i];
      s += idx * ss[i - 1];
      d += idx * ds[i - 1];
    }
    out.emplace_back(s, d, static_cast<std::size_t>(count[0]));
  }
  return out;
}

}  // namespace

TEST(Strided, LevelZeroIsOnePiece) {
  int count[] = {13};
  Shape shape;
  ASSERT_FALSE(check(nullptr, nullptr, count, 0, shape));
  EXPECT_EQ(shape.pieces, 1);
  EXPECT_EQ(shape.dst_extent, 13);
  auto p = pieces(nullptr, nullptr, count, 0);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], Piece(0, 0, 13));
}

TEST(Strided, TwoLevelsOrderAndOffsets) {
  int count[] = {3, 2, 2};
  int ss[] = {5, 11};
  int ds[] = {4, 9};
  Shape shape;
  ASSERT_FALSE(check(ss, ds, count, 2, shape));
  EXPECT_EQ(shape.pieces, 4);
  EXPECT_EQ(shape.src_extent, 5 + 11 + 3);
  EXPECT_EQ(shape.dst_extent, 4 + 9 + 3);
  std::vector<Piece> want = {{0, 0, 3}, {5, 4, 3}, {11, 9, 3}, {16, 13, 3}};
  EXPECT_EQ(pieces(ss, ds, count, 2), want);
}

TEST(Strided, MatchesReferenceForAllLevels) {
  for (int levels = 0; levels <= armci::strided::kMaxLevels; ++levels) {
    int count[9], ss[8], ds[8];
    count[0] = 1 + levels;
    std::int64_t sblock = count[0], dblock = count[0];
    for (int i = 1; i <= levels; ++i) {
      count[i] = 1 + (i % 3);
      ss[i - 1] = static_cast<int>(sblock + i);      // gaps
      ds[i - 1] = static_cast<int>(dblock + 2 * i);
      sblock = ss[i - 1] * count[i];
      dblock = ds[i - 1] * count[i];
    }
    Shape shape;
    ASSERT_FALSE(check(ss, ds, count, levels, shape)) << levels;
    auto got = pieces(ss, ds, count, levels);
    EXPECT_EQ(got, reference(ss, ds, count, levels)) << levels;
    EXPECT_EQ(static_cast<std::int64_t>(got.size()), shape.pieces);
    std::int64_t hi = 0;
    for (auto& [s, d, n] : got) hi = std::max<std::int64_t>(hi, d + static_cast<std::int64_t>(n));
    EXPECT_EQ(hi, shape.dst_extent) << levels;
  }
}

TEST(Strided, CountZeroIsNothingToDo) {
  int count[] = {0, 4};
  int s[] = {8};
  Shape shape;
  ASSERT_FALSE(check(s, s, count, 1, shape));
  EXPECT_EQ(shape.pieces, 0);
  EXPECT_TRUE(pieces(s, s, count, 1).empty());
}

TEST(Strided, RejectsBadLayouts) {
  Shape shape;
  int count[] = {4, 2, 2};
  int ok[] = {4, 8};
  EXPECT_STREQ(check(ok, ok, count, -1, shape).argument, "stride_levels");
  EXPECT_STREQ(check(ok, ok, count, 9, shape).argument, "stride_levels");
  EXPECT_STREQ(check(ok, ok, nullptr, 2, shape).argument, "count");
  EXPECT_STREQ(check(nullptr, ok, count, 2, shape).argument, "src_stride_ar");
  EXPECT_STREQ(check(ok, nullptr, count, 2, shape).argument, "dst_stride_ar");
  int negcount[] = {-1, 2, 2};
  EXPECT_STREQ(check(ok, ok, negcount, 2, shape).argument, "count");
  int zerolevel[] = {4, 0, 2};
  EXPECT_STREQ(check(ok, ok, zerolevel, 2, shape).argument, "count");
  int neg[] = {-4, 8};
  EXPECT_STREQ(check(neg, ok, count, 2, shape).argument, "src_stride_ar");
  EXPECT_STREQ(check(ok, neg, count, 2, shape).argument, "dst_stride_ar");
  int overlap0[] = {3, 8};  // 4-byte pieces 3 apart
  EXPECT_STREQ(check(ok, overlap0, count, 2, shape).argument, "dst_stride_ar");
  int overlap1[] = {4, 7};  // a level-1 block is 8 bytes
  EXPECT_STREQ(check(ok, overlap1, count, 2, shape).argument, "dst_stride_ar");
  // Overlap on the source side is only read: allowed.
  EXPECT_FALSE(check(overlap0, ok, count, 2, shape));
  // A level with count 1 never steps, so its stride may be anything >= 0.
  int one[] = {4, 1, 2};
  int small[] = {0, 4};
  EXPECT_FALSE(check(small, small, one, 2, shape));
  EXPECT_EQ(shape.pieces, 2);
  int huge[] = {1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30};
  int big[] = {1 << 30, 2, 2, 2, 2, 2, 2, 2, 2};
  EXPECT_TRUE(check(huge, huge, big, 8, shape));  // extent overflows or overlaps: never accepted
}

namespace {
struct RunPiece {
  std::byte* address;
  std::size_t length;
};
}  // namespace

// Runs: pieces contiguous on the far side are grouped, at most max_pieces
// per run, and every piece lands in exactly one run in order.
TEST(StridedRuns, GroupsFarContiguousPiecesUpToTheLimit) {
  std::byte local[64];
  std::vector<std::vector<std::size_t>> lengths;
  std::vector<std::uint64_t> starts, totals;
  auto flush = [&](std::span<const RunPiece> run, std::uint64_t far, std::size_t bytes) {
    std::vector<std::size_t> l;
    for (const RunPiece& p : run) l.push_back(p.length);
    lengths.push_back(l);
    starts.push_back(far);
    totals.push_back(bytes);
  };
  armci::strided::Runs<RunPiece, decltype(flush)> runs(3, flush);
  runs.add(local, 1000, 4);       // run 1
  runs.add(local + 8, 1004, 4);   //   contiguous far side
  runs.add(local + 16, 1008, 2);  //   third: the limit
  runs.add(local + 20, 1010, 2);  // run 2: limit reached
  runs.add(local + 24, 2000, 1);  // run 3: far gap
  runs.finish();
  runs.finish();  // nothing left: no empty run
  ASSERT_EQ(lengths.size(), 3u);
  EXPECT_EQ(lengths[0], (std::vector<std::size_t>{4, 4, 2}));
  EXPECT_EQ(lengths[1], (std::vector<std::size_t>{2}));
  EXPECT_EQ(lengths[2], (std::vector<std::size_t>{1}));
  EXPECT_EQ(starts, (std::vector<std::uint64_t>{1000, 1010, 2000}));
  EXPECT_EQ(totals, (std::vector<std::uint64_t>{10, 2, 1}));
}
