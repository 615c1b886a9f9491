#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>

#include "src/core/allocation_record.hpp"

namespace armci {
namespace {

auto fields(const PartRecord& r) {
  return std::tie(r.failure, r.id, r.base, r.bytes, r.segment, r.capacity, r.new_segment, r.key, r.spare_bytes,
                  r.short_of_shm, r.network_memory, r.name);
}

TEST(PartRecord, EveryFieldSurvivesTheExchange) {
  PartRecord sent;
  sent.failure = "rank 3 could not reserve 4096 bytes";
  sent.id = 7;
  sent.base = 0x7f0000001000;
  sent.bytes = 12345;
  sent.segment = 9;
  sent.capacity = 16384;
  sent.new_segment = true;
  sent.key = {std::byte{1}, std::byte{2}, std::byte{3}};
  sent.spare_bytes = 65536;
  sent.short_of_shm = true;
  sent.network_memory = true;
  sent.name = "armci-job-42-1-9";
  const auto got = PartRecord::decode(sent.encode());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(fields(*got), fields(sent));
}

TEST(PartRecord, EmptyRecordIsARankOutsideTheGroup) {
  const std::vector<std::vector<std::byte>> records{PartRecord{}.encode(), {}};
  const auto parts = PartRecord::decode_all(records);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[0].has_value());
  EXPECT_FALSE(parts[1].has_value());
}

TEST(PartRecord, TruncatedRecordIsRefused) {
  PartRecord sent;
  sent.name = "a-name";
  auto bytes = sent.encode();
  bytes.resize(bytes.size() - 1);
  EXPECT_THROW(PartRecord::decode(bytes), std::runtime_error);
}

}  // namespace
}  // namespace armci
