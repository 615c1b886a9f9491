// Vector messages: small pieces to one network peer that travel together as
// one message, which the target's helper applies (puts, Accs) or answers
// with the data (gets). They carry the operations of an aggregate handle and
// strided and vector transfers on the vector-message protocols.
//
// Owns: the batching of pieces into messages of at most message_bytes(),
// the message kinds vector-put, vector-acc, vector-get and vector-answer
// with their target-side handlers, and the answers a target still sends.
// Called by: the vector-message protocols, completion (an aggregate handle's
// batches leave before it is waited for), the runtime at shutdown.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <unordered_map>
#include <memory>
#include <span>
#include <vector>

#include "platform/network.hpp"
#include "src/core/messages.hpp"
#include "src/core/operation.hpp"

namespace armci {

class Completions;
class Memory;
struct Region;
struct Settings;

// The pieces of one operation kind to one peer, collected for one message.
struct VectorBatch {
  Op op = Op::put;
  int peer = -1;
  AccArgs acc{};
  std::uint32_t count = 0;
  // put/acc: records of (address, length, data padded to 8 bytes);
  // get: records of (address, length) only.
  std::vector<std::byte> payload;
  std::vector<platform::LocalSegment> destinations;  // get: where the answer goes
  std::size_t answer_bytes = 0;                      // get: bytes the answer carries

  bool matches(Op o, int p, const AccArgs* a) const {
    return op == o && peer == p &&
           (o != Op::acc || (acc.datatype == a->datatype && !std::memcmp(&acc.scale, &a->scale, sizeof acc.scale)));
  }
};
using VectorBatches = std::vector<VectorBatch>;

class VectorMessages {
 public:
  // Registers its message kinds (collective in effect: at start-up).
  VectorMessages(Progress& progress, Messages& messages, const Memory& memory, Completions& completions,
                 const Settings& settings, int size);
  ~VectorMessages();

  // Adds [local, local + bytes) <-> remote of proc to the batch for (op,
  // proc, acc type) in `batches`, sending batches that fill up on the way.
  void add(Op op, const AccArgs* acc, const std::byte* local, std::uintptr_t remote, std::size_t bytes, int proc,
           platform::Completion& completion, VectorBatches& batches);
  // Sends every batch of the list (then empties it).
  void send_all(VectorBatches& batches, platform::Completion& completion);
  // Bytes of one message.
  std::size_t message_bytes() const { return batch_limit_; }
  // Put and acc messages sent to proc, and applied here from proc, since
  // start-up: a window's deferred fence (ARMCI_WIN_FENCE) sums the first
  // over its members and waits until the second reaches that sum, which
  // needs no ack on the way back.
  std::uint64_t writes_sent(int proc) const {
    return writes_sent_[static_cast<std::size_t>(proc)].load(std::memory_order_relaxed);
  }
  std::uint64_t writes_applied(int proc) const {
    return writes_applied_[static_cast<std::size_t>(proc)].load(std::memory_order_acquire);
  }

 private:
  struct OutgoingAnswer;
  void send(VectorBatch& batch, platform::Completion& completion);
  void handle_put_or_acc(bool is_acc, int source, std::span<const std::byte> header,
                         std::span<const std::byte> payload);
  void handle_get(int source, std::span<const std::byte> header, std::span<const std::byte> payload);
  void handle_answer(int source, std::span<const std::byte> header, std::span<const std::byte> payload);

  Progress& progress_;
  Messages& messages_;
  const Memory& memory_;
  Completions& completions_;
  std::size_t batch_limit_ = 0;
  MessageKind put_kind_ = 0, acc_kind_ = 0, get_kind_ = 0, answer_kind_ = 0;
  std::function<const Region*(std::uintptr_t, std::size_t)> find_own_;
  // Vector gets sent and not answered: token -> peer (network mutex).
  std::unordered_map<std::uint64_t, int> awaited_;
  // Per rank (a helper that sends offloaded transfers counts too).
  std::unique_ptr<std::atomic<std::uint64_t>[]> writes_sent_, writes_applied_;
  // Answers to vector gets, kept until the network has sent them.
  std::deque<std::unique_ptr<OutgoingAnswer>> answers_;
};

}  // namespace armci
