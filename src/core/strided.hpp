// Strided layouts (ARMCI's stride_levels/count/stride arrays): validation
// and iteration over the contiguous pieces, as (source offset, destination
// offset) pairs. Pure: no runtime, no memory access, so it is unit-tested on
// its own. count[0] is the piece size in bytes; level i (1..stride_levels)
// repeats the level below count[i] times, stride[i-1] bytes apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

namespace armci::strided {

constexpr int kMaxLevels = 8;

// What is wrong with a layout: the argument to name and a message.
struct Problem {
  const char* argument = nullptr;  // nullptr: no problem
  char message[160] = {};
  explicit operator bool() const { return argument != nullptr; }
};

struct Shape {
  std::int64_t pieces = 0;       // number of contiguous pieces (0: nothing to do)
  std::int64_t piece_bytes = 0;  // count[0]
  std::int64_t src_extent = 0;   // bytes from the first to one past the last source byte
  std::int64_t dst_extent = 0;
};

// Bytes from the first byte to one past the last of a layout with
// non-negative strides, or -1 on overflow.
inline std::int64_t extent(const int* stride, const int* count, int levels) {
  std::int64_t span = count[0];
  for (int i = 1; i <= levels; ++i) {
    std::int64_t step = 0;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(stride[i - 1]), static_cast<std::int64_t>(count[i] - 1),
                               &step) ||
        __builtin_add_overflow(span, step, &span))
      return -1;
  }
  return span;
}

// check()'s work: true and `p` filled when the layout is wrong. check()
// returns its one Problem in place, so the 168-byte Problem is not copied
// on every call of a hot path.
inline bool find_problem(const int* src_stride, const int* dst_stride, const int* count, int levels, Shape& shape,
                         Problem& p) {
  auto say = [&p](const char* argument, const char* fmt, auto... values) {
    p.argument = argument;
    std::snprintf(p.message, sizeof p.message, fmt, values...);
    return true;
  };
  if (levels < 0 || levels > kMaxLevels)
    return say("stride_levels", "argument 'stride_levels' (%d) is outside [0, %d]", levels, kMaxLevels);
  if (count == nullptr) return say("count", "argument 'count' is NULL");
  if (levels > 0 && src_stride == nullptr) return say("src_stride_ar", "argument 'src_stride_ar' is NULL");
  if (levels > 0 && dst_stride == nullptr) return say("dst_stride_ar", "argument 'dst_stride_ar' is NULL");
  if (count[0] < 0) return say("count", "argument 'count' has count[0] = %d bytes, which is negative", count[0]);
  for (int i = 1; i <= levels; ++i)
    if (count[i] <= 0) return say("count", "argument 'count' has count[%d] = %d, which is not positive", i, count[i]);
  for (int i = 0; i < levels; ++i) {
    if (src_stride[i] < 0)
      return say("src_stride_ar", "argument 'src_stride_ar' has stride[%d] = %d, which is negative", i,
                 src_stride[i]);
    if (dst_stride[i] < 0)
      return say("dst_stride_ar", "argument 'dst_stride_ar' has stride[%d] = %d, which is negative", i,
                 dst_stride[i]);
  }
  // Destination pieces must not overlap: each stride at least the extent of
  // one block of the level below (when that level repeats at all).
  if (count[0] > 0)
    for (int i = 0; i < levels; ++i) {
      if (count[i + 1] <= 1) continue;
      const std::int64_t below = extent(dst_stride, count, i);
      if (below < 0) return say("dst_stride_ar", "argument 'dst_stride_ar' makes the extent overflow");
      if (dst_stride[i] < below)
        return say("dst_stride_ar",
                   "argument 'dst_stride_ar' has stride[%d] = %d, less than the %lld bytes of one block of the "
                   "level below: destination pieces would overlap",
                   i, dst_stride[i], static_cast<long long>(below));
    }
  shape = Shape{};
  shape.piece_bytes = count[0];
  if (count[0] == 0) return false;
  std::int64_t pieces = 1;
  for (int i = 1; i <= levels; ++i)
    if (__builtin_mul_overflow(pieces, static_cast<std::int64_t>(count[i]), &pieces))
      return say("count", "argument 'count' makes the number of pieces overflow");
  shape.pieces = pieces;
  shape.src_extent = extent(src_stride, count, levels);
  shape.dst_extent = extent(dst_stride, count, levels);
  if (shape.src_extent < 0) return say("src_stride_ar", "argument 'src_stride_ar' makes the extent overflow");
  if (shape.dst_extent < 0) return say("dst_stride_ar", "argument 'dst_stride_ar' makes the extent overflow");
  return false;
}

// Checks a layout. `dst_stride` is the side whose pieces must not overlap
// (the side written). count[0] == 0 is allowed and means nothing to do.
// On success fills `shape`.
inline Problem check(const int* src_stride, const int* dst_stride, const int* count, int levels, Shape& shape) {
  Problem p;
  find_problem(src_stride, dst_stride, count, levels, shape, p);
  return p;
}

// Calls f(src_offset, dst_offset, bytes) for each piece, in ARMCI's order
// (level 1 fastest). The layout must have passed check(). A layout with
// only one side (pack/unpack) passes the same strides twice.
template <typename F>
void for_each_piece(const int* src_stride, const int* dst_stride, const int* count, int levels, F&& f) {
  if (count[0] <= 0) return;
  const auto bytes = static_cast<std::size_t>(count[0]);
  int index[kMaxLevels + 1] = {};
  std::int64_t src = 0, dst = 0;
  for (;;) {
    f(src, dst, bytes);
    int level = 1;
    for (; level <= levels; ++level) {
      if (++index[level] < count[level]) {
        src += src_stride[level - 1];
        dst += dst_stride[level - 1];
        break;
      }
      // Back to the start of this level.
      src -= static_cast<std::int64_t>(src_stride[level - 1]) * (count[level] - 1);
      dst -= static_cast<std::int64_t>(dst_stride[level - 1]) * (count[level] - 1);
      index[level] = 0;
    }
    if (level > levels) return;
  }
}

// Groups pieces into runs for zero-copy transfers: consecutive pieces whose
// far side is contiguous become one operation, the near side a gather or
// scatter list of at most max_pieces entries (the layer's SGE limit).
// flush(span of Segment, far start, bytes) is called once per run; call
// finish() after the last piece. Segment is constructed from
// (std::byte* address, std::size_t length).
template <typename Segment, typename Flush>
class Runs {
 public:
  Runs(std::size_t max_pieces, Flush flush) : max_pieces_(max_pieces), flush_(std::move(flush)) {}

  void add(std::byte* near, std::uint64_t far, std::size_t bytes) {
    if (run_.empty() || far != far_ + bytes_ || run_.size() >= max_pieces_) {
      finish();
      far_ = far;
    }
    run_.push_back(Segment{near, bytes});
    bytes_ += bytes;
  }

  void finish() {
    if (run_.empty()) return;
    flush_(std::span<const Segment>(run_), far_, bytes_);
    run_.clear();
    bytes_ = 0;
  }

 private:
  std::size_t max_pieces_;
  Flush flush_;
  std::vector<Segment> run_;
  std::uint64_t far_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace armci::strided
