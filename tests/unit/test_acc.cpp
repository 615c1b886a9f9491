#include <gtest/gtest.h>

#include <atomic>
#include <complex>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "include/armci.h"
#include "src/core/acc.hpp"

using armci::accumulate;
using armci::make_acc_scale;

template <typename T>
static void check_real(int type) {
  std::vector<T> dst{1, 2, 3, 4, 5}, src{10, 20, 30, 40, 50};
  T scale = 3;
  accumulate(type, make_acc_scale(type, &scale), dst.data(), src.data(), sizeof(T) * 4);
  EXPECT_EQ(dst, (std::vector<T>{31, 62, 93, 124, 5}));  // the fifth is outside the range
  T one = 1;
  accumulate(type, make_acc_scale(type, &one), dst.data(), src.data(), sizeof(T) * 5);
  EXPECT_EQ(dst, (std::vector<T>{41, 82, 123, 164, 55}));
}

TEST(Acc, RealTypes) {
  check_real<int>(ARMCI_ACC_INT);
  check_real<long>(ARMCI_ACC_LNG);
  check_real<float>(ARMCI_ACC_FLT);
  check_real<double>(ARMCI_ACC_DBL);
}

template <typename T>
static void check_complex(int type) {
  using C = std::complex<T>;
  std::vector<C> dst{{1, 1}, {2, -1}}, src{{3, 4}, {-1, 2}};
  C scale{2, 1};  // (2+i)(3+4i) = 2+11i; (2+i)(-1+2i) = -4+3i
  accumulate(type, make_acc_scale(type, &scale), dst.data(), src.data(), sizeof(C) * 2);
  EXPECT_EQ(dst[0], C(3, 12));
  EXPECT_EQ(dst[1], C(-2, 2));
}

TEST(Acc, ComplexTypesMultiplyTheScale) {
  check_complex<float>(ARMCI_ACC_CPL);
  check_complex<double>(ARMCI_ACC_DCP);
}

TEST(Acc, UnalignedBuffers) {
  alignas(8) unsigned char dst_raw[8 * 4 + 3] = {}, src_raw[8 * 4 + 5] = {};
  double values[4] = {1.5, 2.5, -3, 4}, base[4] = {1, 1, 1, 1};
  std::memcpy(dst_raw + 3, base, sizeof base);
  std::memcpy(src_raw + 5, values, sizeof values);
  double scale = 2;
  accumulate(ARMCI_ACC_DBL, make_acc_scale(ARMCI_ACC_DBL, &scale), dst_raw + 3, src_raw + 5, sizeof values);
  double out[4];
  std::memcpy(out, dst_raw + 3, sizeof out);
  EXPECT_EQ(out[0], 4);
  EXPECT_EQ(out[1], 6);
  EXPECT_EQ(out[2], -5);
  EXPECT_EQ(out[3], 9);
}

TEST(Acc, ElementSizes) {
  EXPECT_EQ(armci::acc_element_size(ARMCI_ACC_INT), sizeof(int));
  EXPECT_EQ(armci::acc_element_size(ARMCI_ACC_DCP), 16u);
  EXPECT_EQ(armci::acc_element_size(42), 0u);
  EXPECT_EQ(armci::acc_element_size(-1), 0u);
}

// The windows' ops ride in the datatype's high bits (acc_datatype).
TEST(Acc, WindowOpsCombineWithoutScale) {
  using armci::AccOp;
  using armci::acc_datatype;
  const armci::AccScale ignored{};
  std::vector<long> l{6, -3, 12}, lsrc{3, 5, 10};
  accumulate(acc_datatype(ARMCI_ACC_LNG, AccOp::prod), ignored, l.data(), lsrc.data(), sizeof(long) * 3);
  EXPECT_EQ(l, (std::vector<long>{18, -15, 120}));
  accumulate(acc_datatype(ARMCI_ACC_LNG, AccOp::band), ignored, l.data(), lsrc.data(), sizeof(long) * 3);
  EXPECT_EQ(l, (std::vector<long>{18 & 3, -15 & 5, 120 & 10}));
  std::vector<int> i{0x0f, 7}, isrc{0xf0, 5};
  accumulate(acc_datatype(ARMCI_ACC_INT, AccOp::bxor), ignored, i.data(), isrc.data(), sizeof(int) * 2);
  EXPECT_EQ(i, (std::vector<int>{0xff, 2}));
  accumulate(acc_datatype(ARMCI_ACC_INT, AccOp::bor), ignored, i.data(), isrc.data(), sizeof(int) * 2);
  EXPECT_EQ(i, (std::vector<int>{0xff, 7}));
  std::vector<double> d{1.5, -2}, dsrc{-1, 4};
  accumulate(acc_datatype(ARMCI_ACC_DBL, AccOp::max), ignored, d.data(), dsrc.data(), sizeof(double) * 2);
  EXPECT_EQ(d, (std::vector<double>{1.5, 4}));
  accumulate(acc_datatype(ARMCI_ACC_DBL, AccOp::min), ignored, d.data(), dsrc.data(), sizeof(double) * 2);
  EXPECT_EQ(d, (std::vector<double>{-1, 4}));
  std::complex<float> c{1, 2}, csrc{3, -1};  // (1+2i)(3-i) = 5+5i
  accumulate(acc_datatype(ARMCI_ACC_CPL, AccOp::prod), ignored, &c, &csrc, sizeof c);
  EXPECT_EQ(c, std::complex<float>(5, 5));
}

TEST(Acc, WindowOpsOnlyWhereMpiDefinesThem) {
  using armci::AccOp;
  using armci::acc_datatype;
  EXPECT_EQ(armci::acc_element_size(acc_datatype(ARMCI_ACC_LNG, AccOp::bxor)), sizeof(long));
  EXPECT_EQ(armci::acc_element_size(acc_datatype(ARMCI_ACC_DCP, AccOp::prod)), 16u);
  EXPECT_EQ(armci::acc_element_size(acc_datatype(ARMCI_ACC_DBL, AccOp::band)), 0u);
  EXPECT_EQ(armci::acc_element_size(acc_datatype(ARMCI_ACC_CPL, AccOp::max)), 0u);
  EXPECT_EQ(armci::acc_element_size(ARMCI_ACC_INT | 99 << armci::kAccOpShift), 0u);
}

TEST(Acc, KernelLookedUpOnceAddsLikeAccumulate) {
  double scale = 2, one = 1;
  std::vector<double> dst{1, 2, 3}, src{10, 20, 30};
  const armci::AccKernel kernel = armci::acc_kernel(ARMCI_ACC_DBL);
  kernel(ARMCI_ACC_DBL, make_acc_scale(ARMCI_ACC_DBL, &scale), dst.data(), src.data(), sizeof(double) * 2, 1, 0, 0);
  kernel(ARMCI_ACC_DBL, make_acc_scale(ARMCI_ACC_DBL, &one), dst.data() + 2, src.data() + 2, sizeof(double), 1, 0, 0);
  EXPECT_EQ(dst, (std::vector<double>{21, 42, 33}));
  std::vector<int> i{6, 7}, isrc{3, 5};
  const int max = armci::acc_datatype(ARMCI_ACC_INT, armci::AccOp::max);
  armci::acc_kernel(max)(max, armci::AccScale{}, i.data(), isrc.data(), sizeof(int) * 2, 1, 0, 0);
  EXPECT_EQ(i, (std::vector<int>{6, 7}));
}

// The stripes of a range are bits of one word: by 4 KiB page, modulo 64,
// all of them from 64 pages on; taken and given back as a mask.
TEST(AccStripes, OneBitPerPageModulo64) {
  armci::AccStripes stripes;
  const std::uintptr_t base = std::uintptr_t{1} << 30;
  std::uint64_t s = stripes.take(base + 4095, 2);  // bytes 4095 and 4096
  EXPECT_EQ(s, 0b11u);
  EXPECT_EQ(stripes.held.load(), 0b11u);
  stripes.give_back(s);
  EXPECT_EQ(stripes.held.load(), 0u);
  s = stripes.take(base + 63 * 4096, 4096 * 2);  // pages 63 and 64: stripes 63 and 0
  EXPECT_EQ(s, (std::uint64_t{1} << 63) | 1u);
  stripes.give_back(s);
  s = stripes.take(base + 100, 64 * 4096);  // 65 pages
  EXPECT_EQ(s, ~std::uint64_t{0});
  stripes.give_back(s);
  EXPECT_EQ(stripes.held.load(), 0u);
}

// Overlapping Accs exclude each other; disjoint ones do not wait.
TEST(AccStripes, OverlappingRangesWaitDisjointOnesDoNot) {
  armci::AccStripes stripes;
  const std::uintptr_t base = std::uintptr_t{1} << 30;
  const std::uint64_t held = stripes.take(base + 2 * 4096, 3 * 4096);  // stripes 2-4
  const std::uint64_t other = stripes.take(base, 2 * 4096);             // 0-1: free
  EXPECT_EQ(held & other, 0u);
  std::atomic<bool> got{false};
  std::thread t([&] {
    const std::uint64_t s = stripes.take(base, 4 * 4096);  // 0-3: waits for both
    got.store(true);
    stripes.give_back(s);
  });
  stripes.give_back(other);
  // The waiter can take stripes 0 and 1 now but not 2 and 3, which `held` has.
  while ((stripes.held.load() & 0b11u) != 0b11u) std::this_thread::yield();
  EXPECT_FALSE(got.load());
  stripes.give_back(held);
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(stripes.held.load(), 0u);
}

// Two threads adding over ranges that overlap in a shifting way: every
// element ends with every addition (the stripes exclude), and neither
// deadlocks (ascending order).
TEST(AccStripes, ConcurrentAccsAddEverything) {
  armci::AccStripes stripes;
  constexpr std::size_t kPages = 80;
  std::vector<double> target(kPages * 512, 0.0), ones(kPages * 512, 1.0);
  const double one = 1;
  const armci::AccScale scale = make_acc_scale(ARMCI_ACC_DBL, &one);
  constexpr int kRounds = 2000;
  auto worker = [&](int seed) {
    for (int r = 0; r < kRounds; ++r) {
      const std::size_t first = static_cast<std::size_t>((r * 7 + seed * 13) % 70);
      const std::size_t pages = static_cast<std::size_t>(1 + (r + seed) % 9);
      const std::size_t bytes = pages * 4096;
      auto* at = reinterpret_cast<char*>(target.data()) + first * 4096;
      armci::apply_acc_locked(stripes, ARMCI_ACC_DBL, scale, at, ones.data(), bytes,
                              reinterpret_cast<std::uintptr_t>(at));
    }
  };
  std::thread a(worker, 1), b(worker, 2);
  a.join();
  b.join();
  std::vector<double> want(kPages * 512, 0.0);
  for (int seed : {1, 2})
    for (int r = 0; r < kRounds; ++r) {
      const std::size_t first = static_cast<std::size_t>((r * 7 + seed * 13) % 70);
      const std::size_t pages = static_cast<std::size_t>(1 + (r + seed) % 9);
      for (std::size_t k = first * 512; k < (first + pages) * 512; ++k) want[k] += 1;
    }
  EXPECT_EQ(target, want);
  EXPECT_EQ(stripes.held.load(), 0u);
}

// The stripes of every range, by page count and start, against the bit per
// page they stand for.
TEST(AccStripes, MaskIsEveryPageOfTheRange) {
  armci::AccStripes stripes;
  const std::uintptr_t base = std::uintptr_t{1} << 30;
  for (std::uintptr_t start : {0ul, 1ul, 4095ul, 5 * 4096ul + 17, 63 * 4096ul, 64 * 4096ul + 100})
    for (std::size_t bytes : {1ul, 8ul, 4096ul, 4097ul, 24 * 5120ul, 63 * 4096ul, 63 * 4096ul + 1, 64 * 4096ul}) {
      const std::uintptr_t at = base + start;
      std::uint64_t want = 0;
      for (std::uintptr_t page = at >> 12; page <= (at + bytes - 1) >> 12; ++page) want |= std::uint64_t{1} << (page % 64);
      const std::uint64_t got = stripes.take(at, bytes);
      EXPECT_EQ(got, want) << "start " << start << " bytes " << bytes;
      stripes.give_back(got);
    }
  EXPECT_EQ(stripes.held.load(), 0u);
}

// The SUM kernels against a scalar reference, for every type, scale 1 and
// another, element counts that leave every vector remainder, buffers at
// every offset within an element and a vector, and several rows apart by
// strides that are not multiples of a vector.
template <typename T>
static T test_value(int i) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
    return T(static_cast<typename T::value_type>(i % 13 - 6), static_cast<typename T::value_type>(i % 7 + 1));
  else
    return static_cast<T>(i % 29 - 11);
}

template <typename T>
static void check_kernel_against_reference(int type) {
  const armci::AccKernel kernel = armci::acc_kernel(type);
  for (const T scale : {T(1), test_value<T>(5)}) {
    const armci::AccScale s = make_acc_scale(type, &scale);
    for (std::size_t count : {1ul, 2ul, 3ul, 5ul, 7ul, 8ul, 15ul, 24ul, 31ul, 33ul, 67ul})
      for (std::size_t rows : {1ul, 3ul})
        for (std::size_t dst_off : {0ul, 1ul, 4ul, 8ul, 24ul})
          for (std::size_t src_off : {0ul, 3ul, 16ul}) {
            const std::size_t bytes = count * sizeof(T);
            const std::ptrdiff_t dst_stride = static_cast<std::ptrdiff_t>(bytes + 40 + sizeof(T));
            const std::ptrdiff_t src_stride = static_cast<std::ptrdiff_t>(bytes + 8);
            std::vector<unsigned char> dst(dst_off + rows * static_cast<std::size_t>(dst_stride) + 64);
            std::vector<unsigned char> src(src_off + rows * static_cast<std::size_t>(src_stride) + 64);
            for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<unsigned char>(i * 31 + 7);
            for (std::size_t r = 0; r < rows; ++r)
              for (std::size_t i = 0; i < count; ++i) {
                const T d = test_value<T>(static_cast<int>(r * 100 + i)), x = test_value<T>(static_cast<int>(r * 7 + i * 3));
                std::memcpy(&dst[dst_off + r * static_cast<std::size_t>(dst_stride) + i * sizeof(T)], &d, sizeof(T));
                std::memcpy(&src[src_off + r * static_cast<std::size_t>(src_stride) + i * sizeof(T)], &x, sizeof(T));
              }
            std::vector<unsigned char> want = dst;
            for (std::size_t r = 0; r < rows; ++r)
              for (std::size_t i = 0; i < count; ++i) {
                T d, x;
                unsigned char* at = &want[dst_off + r * static_cast<std::size_t>(dst_stride) + i * sizeof(T)];
                std::memcpy(&d, at, sizeof(T));
                std::memcpy(&x, &src[src_off + r * static_cast<std::size_t>(src_stride) + i * sizeof(T)], sizeof(T));
                d += scale * x;
                std::memcpy(at, &d, sizeof(T));
              }
            kernel(type, s, dst.data() + dst_off, src.data() + src_off, bytes, rows, dst_stride, src_stride);
            ASSERT_EQ(dst, want) << "type " << type << " count " << count << " rows " << rows << " offsets "
                                 << dst_off << "/" << src_off;
          }
  }
}

TEST(Acc, KernelsMatchScalarReferenceAtEveryLengthAndAlignment) {
  check_kernel_against_reference<int>(ARMCI_ACC_INT);
  check_kernel_against_reference<long>(ARMCI_ACC_LNG);
  check_kernel_against_reference<float>(ARMCI_ACC_FLT);
  check_kernel_against_reference<double>(ARMCI_ACC_DBL);
  check_kernel_against_reference<std::complex<float>>(ARMCI_ACC_CPL);
  check_kernel_against_reference<std::complex<double>>(ARMCI_ACC_DCP);
}

// The windows' ops take rows too (the strided shm protocol hands them all
// the first level's rows at once).
TEST(Acc, OpKernelsTakeRows) {
  const int max = armci::acc_datatype(ARMCI_ACC_INT, armci::AccOp::max);
  std::vector<int> dst{1, 9, -5, 0, 4, 2}, src{5, 5, 5, 5};
  armci::acc_kernel(max)(max, armci::AccScale{}, dst.data(), src.data(), 2 * sizeof(int), 2, 3 * sizeof(int),
                         2 * sizeof(int));
  EXPECT_EQ(dst, (std::vector<int>{5, 9, -5, 5, 5, 2}));
}
