// What only the UCX layer promises; the interface itself is tested once for
// every layer in network_contract_test.cpp (ucx_self, ucx_shm, ucx_tcp).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "platform/ucx/ucx_network.hpp"

namespace armci::platform {
namespace {

TEST(UcxNetwork, Capabilities) {
  for (bool detect_failures : {false, true}) {
    auto net = make_ucx_network(0, 1, UcxOptions{detect_failures});
    const Capabilities& c = net->capabilities();
    EXPECT_EQ(c.name, "ucx");
    EXPECT_EQ(c.max_sge, 1u) << "UCX takes one contiguous local buffer per operation";
    EXPECT_GE(c.max_message, std::size_t(64) << 20);
    EXPECT_FALSE(c.needs_local_registration);
  }
}

TEST(UcxNetwork, NotifyMessageIdReserved) {
  // Id 255 carries put_notify's notification.
  auto net = make_ucx_network(0, 1);
  EXPECT_THROW(net->set_message_handler(255, [](int, auto, auto) {}), std::invalid_argument);
}

TEST(UcxNetwork, ErrorStringsAreUcxs) {
  auto net = make_ucx_network(0, 1);
  const std::string no_memory = net->error_string(-4);  // UCS_ERR_NO_MEMORY
  const std::string invalid = net->error_string(-3);    // UCS_ERR_INVALID_PARAM
  EXPECT_NE(no_memory, invalid);
  EXPECT_NE(no_memory.find("memory"), std::string::npos) << no_memory;
}

}  // namespace
}  // namespace armci::platform
