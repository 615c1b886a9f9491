#include <gtest/gtest.h>

#include <stdexcept>

#include "src/core/allocation_record.hpp"

namespace armci {
namespace {

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
  EXPECT_EQ(got->failure, sent.failure);
  EXPECT_EQ(got->id, sent.id);
  EXPECT_EQ(got->base, sent.base);
  EXPECT_EQ(got->bytes, sent.bytes);
  EXPECT_EQ(got->segment, sent.segment);
  EXPECT_EQ(got->capacity, sent.capacity);
  EXPECT_EQ(got->new_segment, sent.new_segment);
  EXPECT_EQ(got->key, sent.key);
  EXPECT_EQ(got->spare_bytes, sent.spare_bytes);
  EXPECT_EQ(got->short_of_shm, sent.short_of_shm);
  EXPECT_EQ(got->network_memory, sent.network_memory);
  EXPECT_EQ(got->name, sent.name);
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
