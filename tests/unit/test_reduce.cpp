// The op names of armci_msg_*gop and armci_msg_sel as GA's ARMCI and
// ARMCI-MPI read them: by prefix, so a Fortran name with no NUL works.
#include <gtest/gtest.h>

#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#include "src/core/reduce.hpp"

namespace {

using armci::ReduceOp;

ReduceOp parsed(const char* name) {
  ReduceOp op{};
  EXPECT_TRUE(armci::parse_reduce_op(name, op)) << name;
  return op;
}

TEST(ReduceOpNames, EveryNameAndItsLongerForms) {
  EXPECT_EQ(ReduceOp::sum, parsed("+"));
  EXPECT_EQ(ReduceOp::product, parsed("*"));
  EXPECT_EQ(ReduceOp::max, parsed("max"));
  EXPECT_EQ(ReduceOp::min, parsed("minmax"));
  EXPECT_EQ(ReduceOp::absmax, parsed("absmax"));
  EXPECT_EQ(ReduceOp::absmin, parsed("absmin   "));
  EXPECT_EQ(ReduceOp::bit_or, parsed("or"));
  EXPECT_EQ(ReduceOp::logical_and, parsed("&&"));
  EXPECT_EQ(ReduceOp::logical_and, parsed("land"));
  EXPECT_EQ(ReduceOp::logical_or, parsed("||garbage"));
  EXPECT_EQ(ReduceOp::logical_or, parsed("lor"));
  EXPECT_EQ(ReduceOp::bit_and, parsed("&"));
  EXPECT_EQ(ReduceOp::bit_and, parsed("band"));
  EXPECT_EQ(ReduceOp::bit_or, parsed("|"));
  EXPECT_EQ(ReduceOp::bit_or, parsed("bor"));
}

TEST(ReduceOpNames, UnknownNamesAreRejected) {
  ReduceOp op{};
  for (const char* name : {"", "sqrt", "ma", "abs", "xor", "l", "b"}) EXPECT_FALSE(armci::parse_reduce_op(name, op)) << name;
  bool max = false;
  EXPECT_FALSE(armci::parse_select_op("mi", max));
  EXPECT_FALSE(armci::parse_select_op("+", max));
  EXPECT_TRUE(armci::parse_select_op("maxminibincnt", max));
  EXPECT_TRUE(max);
  EXPECT_TRUE(armci::parse_select_op("minmax", max));
  EXPECT_FALSE(max);
}

// A name whose last byte is the last readable one: nothing past it is read.
TEST(ReduceOpNames, ReadsNothingPastTheName) {
  const long page = sysconf(_SC_PAGESIZE);
  auto* pages = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(MAP_FAILED, pages);
  ASSERT_EQ(0, mprotect(pages + page, page, PROT_NONE));
  for (const char* name : {"+", "*", "max", "min", "absmax", "absmin", "or", "&&", "||", "land", "lor", "band", "bor"}) {
    const std::size_t len = std::strlen(name);
    char* at = pages + page - len;
    std::memcpy(at, name, len);
    ReduceOp op{};
    EXPECT_TRUE(armci::parse_reduce_op(at, op)) << name;
  }
  std::memcpy(pages + page - 3, "min", 3);
  bool max = true;
  EXPECT_TRUE(armci::parse_select_op(pages + page - 3, max));
  EXPECT_FALSE(max);
  munmap(pages, 2 * page);
}

TEST(ReduceOps, LogicalGiveOneOrZero) {
  int into[4] = {5, 0, 7, 0}, from[4] = {3, 4, 0, 0};
  armci::combine_for(armci::ElementType::int_, ReduceOp::logical_and)(into, from, 4);
  EXPECT_EQ(1, into[0]);
  EXPECT_EQ(0, into[1]);
  EXPECT_EQ(0, into[2]);
  EXPECT_EQ(0, into[3]);
  long long a[3] = {5, 0, 0}, b[3] = {0, 9, 0};
  armci::combine_for(armci::ElementType::long_long, ReduceOp::logical_or)(a, b, 3);
  EXPECT_EQ(1, a[0]);
  EXPECT_EQ(1, a[1]);
  EXPECT_EQ(0, a[2]);
}

TEST(ReduceOps, PrintableOpStopsAtTheFirstOddByte) {
  EXPECT_EQ("sqrt", armci::printable_op("sqrt"));
  EXPECT_EQ("abc", armci::printable_op("abc\x01zz"));
  EXPECT_EQ(16u, armci::printable_op("0123456789abcdefghij").size());
}

}  // namespace
