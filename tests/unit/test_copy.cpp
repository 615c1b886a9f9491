#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "src/core/copy.hpp"

// Every size around the vector widths and thresholds (2 KiB, 16 KiB, 1 MiB), at page offsets that
// take the backward path (dst a little ahead of src) and those that don't.
TEST(Copy, AllSizesAndRelativeOffsets) {
  const std::size_t page = 4096;
  std::vector<unsigned char> src(260 * page), dst(260 * page);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  auto* s_page = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(src.data()) + page - 1) & ~(page - 1));
  auto* d_page = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(dst.data()) + page - 1) & ~(page - 1));
  for (std::size_t size : {0ul, 1ul, 31ul, 32ul, 33ul, 1023ul, 1024ul, 1057ul, 2047ul, 2048ul, 2049ul, 4096ul,
                            3 * page + 17, 16383ul, 16384ul, 16385ul, 48ul * 1024, 48ul * 1024 + 1, 65536ul + 17, 200000ul, 1048575ul,
                            1048576ul}) {
    for (std::size_t src_off : {0ul, 1ul, 16ul, 100ul}) {
      for (std::size_t delta : {0ul, 1ul, 8ul, 16ul, 64ul, 255ul, 256ul, 2000ul}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        unsigned char* s = s_page + src_off;
        unsigned char* d = d_page + src_off + delta;
        armci::copy_bytes(d, s, size);
        for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(d[i], s[i]) << size << " " << src_off << " " << delta << " at " << i;
        if (d > dst.data()) {
          ASSERT_EQ(d[-1], 0xEE) << "wrote before the destination";
        }
        ASSERT_EQ(d[size], 0xEE) << "wrote past the destination";
      }
    }
  }
}
