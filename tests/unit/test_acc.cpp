#include <gtest/gtest.h>

#include <complex>
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
