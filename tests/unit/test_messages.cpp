// The two counts of src/core/messages.hpp between two ranks in one process
// over UCX: every message that waits for an ack counts for flow control, but
// only a kind whose handling touches the target's memory holds up a fence or
// a notification (Messages::effects_pending), and it does until its handler
// has run there. A collective's message must not: a notification after each
// reduction would otherwise wait for an ack round trip.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "platform/ucx/ucx_network.hpp"
#include "src/core/messages.hpp"
#include "src/core/progress.hpp"
#include "src/core/settings.hpp"

namespace armci {
namespace {

struct Rank {
  Rank(int rank, const Settings& settings)
      : network(platform::make_ucx_network(rank, 2, platform::UcxOptions{false})),
        progress(settings, rank, network.get()),
        messages(progress, 2) {}
  std::unique_ptr<platform::Network> network;
  Progress progress;
  Messages messages;
  MessageKind writes = 0, queued = 0;
};

class MessagesPair : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int r = 0; r < 2; ++r) ranks_.push_back(std::make_unique<Rank>(r, settings_));
    std::vector<std::vector<std::byte>> addresses;
    for (auto& r : ranks_) addresses.push_back(r->network->local_address());
    for (auto& r : ranks_) r->network->set_peer_addresses(addresses);
    // The same kinds in the same order at both ranks, as the parts add theirs.
    for (auto& owner : ranks_) {
      Rank* r = owner.get();
      r->writes = r->messages.add(
          "writes", [this, r](int source, auto header, auto) {
            std::uint64_t value;
            std::memcpy(&value, header.data(), sizeof value);
            written_ = value;
            r->messages.send_ack(source, r->writes, value);
          },
          [](int, std::uint64_t) {});
      r->queued = r->messages.add(
          "queued", [this, r](int source, auto, auto) {
            ++queued_;
            r->messages.send_ack(source, r->queued, 0);
          },
          [](int, std::uint64_t) {}, Fenced::no);
    }
  }

  // Rank 0 sends one message of `kind` to rank 1.
  void send(MessageKind kind, std::uint64_t value) {
    Rank& origin = *ranks_[0];
    origin.messages.expect_answer(1, kind);
    origin.progress.with_network([&](platform::Network& net) {
      origin.messages.await_ack(1, kind, value);
      net.send_message(1, kind, std::as_bytes(std::span(&value, 1)), {}, sent_);
    });
  }

  template <class Pred>
  void until(Pred pred) {
    while (!pred())
      for (auto& r : ranks_) r->progress.progress();
  }

  Settings settings_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  platform::Completion sent_;
  std::uint64_t written_ = 0;
  int queued_ = 0;
};

TEST_F(MessagesPair, QueuedKindCountsForFlowControlButNotForFences) {
  Messages& m = ranks_[0]->messages;
  send(ranks_[0]->queued, 0);
  // Before any progress at the target: unanswered, yet nothing to order.
  EXPECT_EQ(1, m.in_flight(1));
  EXPECT_EQ(0, m.effects_pending(1));
  until([&] { return m.in_flight(1) == 0; });
  EXPECT_EQ(1, queued_);
  EXPECT_EQ(0, m.effects_pending(1));
}

TEST_F(MessagesPair, WritingKindHoldsFencesUntilItsHandlerRan) {
  Messages& m = ranks_[0]->messages;
  send(ranks_[0]->queued, 0);
  send(ranks_[0]->writes, 41);
  send(ranks_[0]->writes, 42);
  EXPECT_EQ(3, m.in_flight(1));
  EXPECT_EQ(2, m.effects_pending(1));
  // What a fence waits for: once nothing is pending, the last write is there.
  until([&] { return m.effects_pending(1) == 0; });
  EXPECT_EQ(42u, written_);
  until([&] { return m.in_flight(1) == 0; });
  EXPECT_EQ(1, queued_);
}

}  // namespace
}  // namespace armci
