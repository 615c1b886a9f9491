// The protocol selection table: what each setting and capability makes it
// choose, size by size. The expectations are the rules docs/architecture.md states
// for ARMCI_PROTOCOL, ARMCI_BUFFERED_MAX, ARMCI_OFFLOAD_MIN,
// ARMCI_AGGREGATE_PIECE_MAX and ARMCI_STRIDED_*; and the Rmw table's
// choices, with each word-atomic protocol's results checked.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "src/core/protocols/rmw.hpp"
#include "src/core/protocols/table.hpp"
#include "src/core/settings.hpp"

namespace armci::protocols {
namespace {

platform::Capabilities ucx_caps() {
  platform::Capabilities caps;
  caps.name = "ucx";
  caps.max_sge = 1;
  caps.max_message = std::size_t(1) << 40;
  caps.copies_on_caller_same_host = true;
  return caps;
}

// A software verbs device (rdma_rxe), as in the Soft-RoCE VM.
platform::Capabilities verbs_caps() {
  platform::Capabilities caps;
  caps.name = "verbs";
  caps.max_sge = 16;
  caps.max_inline = 256;
  caps.max_message = 8192;
  caps.needs_local_registration = true;
  caps.software_device = true;
  return caps;
}

struct Chooser {
  explicit Chooser(platform::Capabilities layer) : caps(std::move(layer)) {}
  platform::Capabilities caps;
  Settings settings;
  bool helper = true;

  std::string operator()(Op op, Shape shape, Mode mode, PeerKind peer, std::size_t bytes) const {
    const Table table(&caps, helper, settings);
    return operation_name(op, shape) + "/" + table.find(Operation{op, shape, mode}, peer, bytes).name;
  }
};

constexpr auto kRemote = PeerKind::network;
constexpr auto kSameHost = PeerKind::network_host;
constexpr auto kBlocking = Mode::blocking;
constexpr auto kNb = Mode::nonblocking;
constexpr auto kAggregate = Mode::aggregate;

TEST(ProtocolTable, SameNodePeersCopyAndAccLocks) {
  const Chooser choose{ucx_caps()};
  for (auto peer : {PeerKind::self, PeerKind::shared_memory})
    for (auto mode : {kBlocking, kNb, kAggregate}) {
      EXPECT_EQ(choose(Op::put, Shape::contiguous, mode, peer, 8), "put/shm/copy");
      EXPECT_EQ(choose(Op::get, Shape::contiguous, mode, peer, 1 << 20), "get/shm/copy");
      EXPECT_EQ(choose(Op::acc, Shape::contiguous, mode, peer, 64), "acc/shm/locked");
      EXPECT_EQ(choose(Op::put, Shape::strided, mode, peer, 8), "puts/shm/copy");
      EXPECT_EQ(choose(Op::acc, Shape::strided, mode, peer, 8), "accs/shm/locked");
      EXPECT_EQ(choose(Op::get, Shape::vector, mode, peer, 8), "getv/any/per-piece");
    }
}

TEST(ProtocolTable, UcxContiguousOffloadsLargeNonblockingToSameHostOnly) {
  const Chooser choose{ucx_caps()};
  const std::size_t min = choose.settings.offload_min;
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kBlocking, kSameHost, 8), "put/net/direct");
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kBlocking, kSameHost, 64 << 20), "put/net/direct");
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kSameHost, min - 1), "put/net/direct");
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kSameHost, min), "put/net/offload");
  EXPECT_EQ(choose(Op::get, Shape::contiguous, kNb, kSameHost, min), "get/net/offload");
  EXPECT_EQ(choose(Op::get, Shape::contiguous, kNb, kRemote, min), "get/net/direct");
  EXPECT_EQ(choose(Op::acc, Shape::contiguous, kNb, kSameHost, min), "acc/net/msg");
}

TEST(ProtocolTable, NoHelperNoOffload) {
  Chooser choose{ucx_caps()};
  choose.helper = false;
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kSameHost, 64 << 20), "put/net/direct");
  choose.helper = true;
  choose.settings.offload_min = SIZE_MAX;  // ARMCI_OFFLOAD_MIN=off
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kSameHost, 64 << 20), "put/net/direct");
}

TEST(ProtocolTable, AggregatePiecesUpToTheirMaximumWaitInTheMessage) {
  const Chooser choose{ucx_caps()};
  const std::size_t max = choose.settings.aggregate_piece_max;
  for (Op op : {Op::put, Op::get, Op::acc})
    EXPECT_EQ(choose(op, Shape::contiguous, kAggregate, kRemote, max),
              operation_name(op, Shape::contiguous) + "/net/vector-msg");
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kAggregate, kRemote, max + 1), "put/net/direct");
  EXPECT_EQ(choose(Op::acc, Shape::contiguous, kAggregate, kRemote, max + 1), "acc/net/msg");
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kRemote, 8), "put/net/direct");
}

TEST(ProtocolTable, BufferedByThresholdOnlyWhereTheLayerNeedsRegistration) {
  Chooser verbs{verbs_caps()};
  verbs.settings.buffered_max = 64 * 1024;
  EXPECT_EQ(verbs(Op::put, Shape::contiguous, kBlocking, kRemote, 256), "put/net/direct");
  EXPECT_EQ(verbs(Op::put, Shape::contiguous, kBlocking, kRemote, 257), "put/net/buffered");
  EXPECT_EQ(verbs(Op::get, Shape::contiguous, kBlocking, kRemote, 64 * 1024), "get/net/buffered");
  EXPECT_EQ(verbs(Op::get, Shape::contiguous, kBlocking, kRemote, 64 * 1024 + 1), "get/net/direct");
  // The default threshold, 0: never.
  verbs.settings.buffered_max = 0;
  EXPECT_EQ(verbs(Op::put, Shape::contiguous, kBlocking, kRemote, 4096), "put/net/direct");
  Chooser ucx{ucx_caps()};
  ucx.settings.buffered_max = 64 * 1024;
  EXPECT_EQ(ucx(Op::put, Shape::contiguous, kBlocking, kRemote, 4096), "put/net/direct");
}

TEST(ProtocolTable, ForcedContiguousProtocols) {
  Chooser choose{verbs_caps()};
  choose.settings.protocol = ProtocolChoice::buffered;
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kBlocking, kRemote, 8), "put/net/buffered");
  EXPECT_EQ(choose(Op::get, Shape::contiguous, kBlocking, kRemote, 64 << 20), "get/net/buffered");
  // Offload still takes large nonblocking transfers, as before the table.
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kRemote, 1 << 20), "put/net/offload");
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kNb, kRemote, 16 * 1024 - 1), "put/net/buffered");
  choose.settings.protocol = ProtocolChoice::direct;
  choose.settings.buffered_max = 64 * 1024;
  EXPECT_EQ(choose(Op::put, Shape::contiguous, kBlocking, kRemote, 4096), "put/net/direct");
}

TEST(ProtocolTable, StridedAutoBySizeAndLayer) {
  const Chooser verbs{verbs_caps()};
  const std::size_t buffered = verbs.settings.strided_buffered_max, host = verbs.settings.strided_host_max;
  EXPECT_EQ(verbs(Op::put, Shape::strided, kBlocking, kRemote, buffered), "puts/net/vector-msg");
  EXPECT_EQ(verbs(Op::put, Shape::strided, kBlocking, kRemote, buffered + 1), "puts/net/host-assisted");
  EXPECT_EQ(verbs(Op::get, Shape::strided, kNb, kRemote, host), "gets/net/host-assisted");
  EXPECT_EQ(verbs(Op::get, Shape::strided, kNb, kRemote, host + 1), "gets/net/direct-sge");
  EXPECT_EQ(verbs(Op::acc, Shape::strided, kBlocking, kRemote, buffered), "accs/net/vector-msg");
  EXPECT_EQ(verbs(Op::acc, Shape::strided, kBlocking, kRemote, buffered + 1), "accs/any/per-piece");
  // An aggregate handle: packed, or each piece on the contiguous table.
  EXPECT_EQ(verbs(Op::put, Shape::strided, kAggregate, kRemote, buffered), "puts/net/vector-msg");
  EXPECT_EQ(verbs(Op::put, Shape::strided, kAggregate, kRemote, buffered + 1), "puts/any/per-piece");
  // Vector lists: no layout to hand over.
  EXPECT_EQ(verbs(Op::put, Shape::vector, kBlocking, kRemote, buffered), "putv/net/vector-msg");
  EXPECT_EQ(verbs(Op::put, Shape::vector, kBlocking, kRemote, buffered + 1), "putv/any/per-piece");
  // No SGE lists (UCX): no host-assisted.
  const Chooser ucx{ucx_caps()};
  EXPECT_EQ(ucx(Op::put, Shape::strided, kBlocking, kSameHost, buffered + 1), "puts/net/direct-sge");
}

TEST(ProtocolTable, ForcedStridedProtocols) {
  Chooser choose{verbs_caps()};
  choose.settings.strided = ProtocolChoice::buffered;
  EXPECT_EQ(choose(Op::get, Shape::strided, kBlocking, kRemote, 1 << 20), "gets/net/vector-msg");
  EXPECT_EQ(choose(Op::get, Shape::vector, kBlocking, kRemote, 1 << 20), "getv/net/vector-msg");
  choose.settings.strided = ProtocolChoice::direct;
  EXPECT_EQ(choose(Op::put, Shape::strided, kBlocking, kRemote, 8), "puts/net/direct-sge");
  EXPECT_EQ(choose(Op::acc, Shape::strided, kBlocking, kRemote, 8), "accs/any/per-piece");
  EXPECT_EQ(choose(Op::put, Shape::vector, kBlocking, kRemote, 8), "putv/any/per-piece");
  choose.settings.strided = ProtocolChoice::host;
  EXPECT_EQ(choose(Op::put, Shape::strided, kBlocking, kRemote, 8), "puts/net/host-assisted");
  EXPECT_EQ(choose(Op::get, Shape::strided, kNb, kRemote, 1 << 20), "gets/net/host-assisted");
  EXPECT_EQ(choose(Op::acc, Shape::strided, kBlocking, kRemote, 1 << 20), "accs/net/vector-msg");
  EXPECT_EQ(choose(Op::put, Shape::strided, kAggregate, kRemote, 8), "puts/any/per-piece");
  EXPECT_EQ(choose(Op::put, Shape::vector, kBlocking, kRemote, 8), "putv/any/per-piece");
  EXPECT_EQ(choose(Op::acc, Shape::vector, kBlocking, kRemote, 8), "accv/net/vector-msg");
}

TEST(ProtocolTable, DescribePrintsWhatFindChooses) {
  Chooser choose{verbs_caps()};
  const Table table(&choose.caps, true, choose.settings);
  const std::string text = table.describe(kRemote, "> ");
  EXPECT_NE(text.find("> puts  blocking|nonblocking"), std::string::npos) << text;
  EXPECT_NE(text.find("puts/net/vector-msg 1 B..2 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("puts/net/host-assisted 2049 B..16 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("puts/net/direct-sge 16385 B.."), std::string::npos) << text;
  EXPECT_NE(text.find("> put   blocking "), std::string::npos) << text;
}

}  // namespace
}  // namespace armci::protocols

namespace armci::protocols {
namespace {

std::string rmw_choice(bool network_peers, WordOp op) {
  return std::string("rmw/") + AtomicTable(network_peers).find(op).name;
}

TEST(RmwTable, OneMechanismPerJob) {
  for (int o = 0; o < kWordOps; ++o) {
    const auto op = static_cast<WordOp>(o);
    EXPECT_EQ(rmw_choice(false, op), "rmw/shm/cpu-atomic") << to_string(op);
    EXPECT_TRUE(AtomicTable(true).find(op).network) << to_string(op);
  }
  EXPECT_FALSE(AtomicTable(false).network());
  EXPECT_TRUE(AtomicTable(true).network());
}

TEST(RmwTable, NetworkAtomicsWhereTheLayerHasThemElseCompareSwapLoops) {
  EXPECT_EQ(rmw_choice(true, WordOp::fetch_add), "rmw/net/native-atomic");
  EXPECT_EQ(rmw_choice(true, WordOp::compare_swap), "rmw/net/native-atomic");
  EXPECT_EQ(rmw_choice(true, WordOp::swap), "rmw/net/cas-emulated");
  EXPECT_EQ(rmw_choice(true, WordOp::fetch_add32), "rmw/net/cas-emulated");
  EXPECT_EQ(rmw_choice(true, WordOp::swap32), "rmw/net/cas-emulated");
  const std::string text = AtomicTable(true).describe("");
  EXPECT_NE(text.find("mutex/mcs-queue: tail by rmw/net/cas-emulated swap"), std::string::npos) << text;
}

// A network that applies its atomics to this process's memory, counting
// them, and guesses a stale value so loops must retry.
class LocalWords : public NetworkWords {
 public:
  std::uint64_t network_fetch_add(const char*, const Word& w, std::uint64_t value) override {
    ++atomics;
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.address)).fetch_add(value);
  }
  std::uint64_t network_compare_swap(const char*, const Word& w, std::uint64_t expected,
                                     std::uint64_t desired) override {
    ++atomics;
    EXPECT_EQ(w.address % 8, 0u) << "network atomics are on aligned 64-bit words";
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.address))
        .compare_exchange_strong(expected, desired);
    return expected;
  }
  std::uint64_t guess(const Word&) const override { return 12345; }
  int atomics = 0;
};

Word word_of(void* p) {
  Word w;
  w.proc = 0;
  w.address = reinterpret_cast<std::uintptr_t>(p);
  w.local = static_cast<std::byte*>(p);
  return w;
}

TEST(RmwProtocols, EveryChoiceComputesTheSameResults) {
  for (bool network_peers : {false, true}) {
    SCOPED_TRACE(network_peers ? "network job" : "same-node job");
    const AtomicTable table(network_peers);
    LocalWords net;
    auto apply = [&](WordOp op, void* p, std::uint64_t value, std::uint64_t desired = 0) {
      return table.find(op).apply(net, "test", word_of(p), op, value, desired);
    };
    alignas(8) std::uint64_t word = 0xfffffffffffffff0ull;
    EXPECT_EQ(apply(WordOp::fetch_add, &word, 0x20), 0xfffffffffffffff0ull);
    EXPECT_EQ(word, 0x10u);
    EXPECT_EQ(apply(WordOp::compare_swap, &word, 7, 9), 0x10u);  // fails
    EXPECT_EQ(word, 0x10u);
    EXPECT_EQ(apply(WordOp::compare_swap, &word, 0x10, 9), 0x10u);
    EXPECT_EQ(word, 9u);
    EXPECT_EQ(apply(WordOp::swap, &word, 0x123456789abcdefull), 9u);
    EXPECT_EQ(word, 0x123456789abcdefull);

    // 32-bit lanes: the other half of the word stays.
    alignas(8) std::uint32_t lanes[2] = {0xfffffffeu, 70};
    EXPECT_EQ(apply(WordOp::fetch_add32, &lanes[0], 3), 0xfffffffeu);
    EXPECT_EQ(lanes[0], 1u);
    EXPECT_EQ(lanes[1], 70u);
    EXPECT_EQ(apply(WordOp::swap32, &lanes[1], 0xabcdef01u), 70u);
    EXPECT_EQ(lanes[1], 0xabcdef01u);
    EXPECT_EQ(lanes[0], 1u);
    EXPECT_EQ(apply(WordOp::fetch_add32, &lanes[1], 1), 0xabcdef01u);
    EXPECT_EQ(lanes[1], 0xabcdef02u);
    EXPECT_EQ(lanes[0], 1u);
    if (network_peers) {
      EXPECT_GT(net.atomics, 0) << "a network job's atomics go through the network";
    } else {
      EXPECT_EQ(net.atomics, 0) << "a same-node job's atomics stay on the CPU";
    }
  }
}

}  // namespace
}  // namespace armci::protocols
