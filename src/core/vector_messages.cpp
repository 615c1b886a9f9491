#include "src/core/vector_messages.hpp"

#include <algorithm>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/incoming.hpp"
#include "src/core/memory.hpp"
#include "src/core/settings.hpp"
#include "src/core/wire.hpp"

namespace armci {
namespace {

// A vector message in flight: its payload must outlive the send (UCX may
// read it until then), and the target's ack, which comes after the send
// completed, ends both.
struct SentBatch {
  platform::Completion* completion;
  std::vector<std::byte> payload;
};

// A vector get waiting for its answer.
struct PendingAnswer {
  platform::Completion* completion;
  std::vector<std::byte> request;
  std::vector<platform::LocalSegment> destinations;
  std::size_t bytes;
};

}  // namespace

struct VectorMessages::OutgoingAnswer {
  platform::Completion sent;
  std::vector<std::byte> data;
};

VectorMessages::VectorMessages(Progress& progress, Messages& messages, const Memory& memory,
                               Completions& completions, const Settings& settings, int size)
    : progress_(progress),
      messages_(messages),
      memory_(memory),
      completions_(completions),
      find_own_([this](std::uintptr_t address, std::size_t bytes) { return memory_.find_own(address, bytes); }),
      writes_sent_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(size))),
      writes_applied_(std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(size))) {
  if (progress_.has_network()) {
    const std::size_t room = progress_.capabilities().max_message;
    batch_limit_ = std::min(settings.aggregate_bytes, room > 1024 ? room - 256 : 768);
  }
  auto batch_acked = [](int, std::uint64_t token) {
    auto* sent = reinterpret_cast<SentBatch*>(token);
    sent->completion->pending.fetch_sub(1, std::memory_order_release);
    delete sent;
  };
  put_kind_ =
      messages_.add("vector-put", std::bind_front(&VectorMessages::handle_put_or_acc, this, false), batch_acked);
  acc_kind_ =
      messages_.add("vector-acc", std::bind_front(&VectorMessages::handle_put_or_acc, this, true), batch_acked);
  get_kind_ = messages_.add("vector-get", std::bind_front(&VectorMessages::handle_get, this));
  answer_kind_ = messages_.add("vector-answer", std::bind_front(&VectorMessages::handle_answer, this));
}

VectorMessages::~VectorMessages() = default;

void VectorMessages::add(Op op, const AccArgs* acc, const std::byte* local, std::uintptr_t remote, std::size_t bytes,
                         int proc, platform::Completion& completion, VectorBatches& batches) {
  VectorBatch* batch = nullptr;
  for (VectorBatch& b : batches)
    if (b.matches(op, proc, acc)) batch = &b;
  if (batch == nullptr) {
    batch = &batches.emplace_back();
    batch->op = op;
    batch->peer = proc;
    if (acc != nullptr) batch->acc = *acc;
  }
  const std::size_t element = op == Op::acc ? acc_element_size(acc->datatype) : 1;
  const std::size_t limit = batch_limit_;
  constexpr std::size_t kRecord = sizeof(wire::PieceRecord);
  // Below this much room a batch is sent rather than cutting a piece into
  // slivers.
  const std::size_t smallest = std::min<std::size_t>(bytes, 256);
  std::size_t done = 0;
  while (done < bytes) {
    std::size_t room;
    if (op == Op::get)
      room = batch->payload.size() + kRecord <= limit ? limit - batch->answer_bytes : 0;
    else
      room = batch->payload.size() + kRecord + 8 <= limit ? limit - batch->payload.size() - kRecord : 0;
    room -= room % std::max<std::size_t>(element, 8);
    if (room < std::min(smallest, bytes - done) || room == 0) {
      send(*batch, completion);
      continue;
    }
    const std::size_t piece = std::min(room, bytes - done);
    wire::PieceRecord record{remote + done, piece};
    const auto* record_bytes = reinterpret_cast<const std::byte*>(&record);
    batch->payload.insert(batch->payload.end(), record_bytes, record_bytes + kRecord);
    if (op == Op::get) {
      batch->destinations.push_back({const_cast<std::byte*>(local + done), piece});
      batch->answer_bytes += piece;
    } else {
      const std::size_t at = batch->payload.size();
      batch->payload.resize(at + wire::padded(piece));
      std::memcpy(batch->payload.data() + at, local + done, piece);
    }
    ++batch->count;
    done += piece;
  }
}

void VectorMessages::send(VectorBatch& batch, platform::Completion& completion) {
  if (batch.count == 0) return;
  const int proc = batch.peer;
  wire::VectorHeader header{};
  header.count = batch.count;
  header.datatype = batch.acc.datatype;
  header.scale = batch.acc.scale;
  MessageKind kind;
  std::span<const std::byte> payload;
  // The target applies or reads the pieces when the message arrives: this
  // origin's puts still on the wire must be there first.
  completions_.order_after_puts(proc, true);
  kind = batch.op == Op::get ? get_kind_ : batch.op == Op::acc ? acc_kind_ : put_kind_;
  messages_.expect_answer(proc, kind);
  // One more count on the completion for the target's ack or answer.
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  if (batch.op == Op::get) {
    auto* answer = new PendingAnswer{&completion, std::move(batch.payload), std::move(batch.destinations),
                                     batch.answer_bytes};
    header.token = reinterpret_cast<std::uintptr_t>(answer);
    payload = answer->request;
  } else {
    auto* sent = new SentBatch{&completion, std::move(batch.payload)};
    header.token = reinterpret_cast<std::uintptr_t>(sent);
    payload = sent->payload;
    writes_sent_[static_cast<std::size_t>(proc)].fetch_add(1, std::memory_order_relaxed);
  }
  progress_.with_network([&](platform::Network& net) {
    if (kind == get_kind_)
      awaited_.emplace(header.token, proc);
    else
      messages_.await_ack(proc, kind, header.token);
    net.send_message(proc, kind, std::as_bytes(std::span(&header, 1)), payload, completion);
  });
  batch.count = 0;
  batch.payload = {};
  batch.destinations = {};
  batch.answer_bytes = 0;
}

void VectorMessages::send_all(VectorBatches& batches, platform::Completion& completion) {
  for (VectorBatch& batch : batches) send(batch, completion);
  batches.clear();
}

void VectorMessages::handle_put_or_acc(bool is_acc, int source, std::span<const std::byte> header,
                                       std::span<const std::byte> payload) {
  const auto kind = is_acc ? incoming::VectorKind::acc : incoming::VectorKind::put;
  incoming::Vector message;
  // Checked whole before any piece is applied.
  if (incoming::Problem p = incoming::parse_vector(kind, source, header, payload, find_own_, 0, message))
    fail(p.call, "%s", p.message);
  incoming::for_each_vector_piece(kind, payload, message.count, find_own_, [&](const incoming::VectorPiece& piece) {
    if (is_acc)
      apply_acc_locked(memory_.own_control().acc, message.datatype, message.scale, piece.at, piece.data.data(),
                       piece.length, piece.address);
    else if (piece.length != 0)
      std::memcpy(piece.at, piece.data.data(), piece.length);
  });
  writes_applied_[static_cast<std::size_t>(source)].fetch_add(1, std::memory_order_release);
  messages_.send_ack(source, is_acc ? acc_kind_ : put_kind_, message.token);
}

void VectorMessages::handle_get(int source, std::span<const std::byte> header, std::span<const std::byte> payload) {
  incoming::Vector message;
  // The answer is one message of the layer.
  const std::size_t max_answer = progress_.capabilities().max_message - sizeof(wire::AckHeader);
  if (incoming::Problem p =
          incoming::parse_vector(incoming::VectorKind::get, source, header, payload, find_own_, max_answer, message))
    fail(p.call, "%s", p.message);
  // Answers the network has finished sending give their memory back.
  while (!answers_.empty() && answers_.front()->sent.done()) answers_.pop_front();
  auto answer = std::make_unique<OutgoingAnswer>();
  answer->data.resize(message.answer_bytes);
  std::size_t at = 0;
  incoming::for_each_vector_piece(incoming::VectorKind::get, payload, message.count, find_own_,
                                  [&](const incoming::VectorPiece& piece) {
                                    // (an empty answer has no data pointer to copy to)
                                    if (piece.length != 0)
                                      std::memcpy(answer->data.data() + at, piece.at, piece.length);
                                    at += piece.length;
                                  });
  wire::AckHeader reply{message.token, get_kind_};
  progress_.network_locked().send_message(source, answer_kind_, std::as_bytes(std::span(&reply, 1)), answer->data,
                                          answer->sent);
  answers_.push_back(std::move(answer));
}

void VectorMessages::handle_answer(int source, std::span<const std::byte> header, std::span<const std::byte> payload) {
  wire::AckHeader reply;
  if (incoming::Problem p = incoming::parse_ack("ARMCI_GetS/GetV (vector answer)", source, header, reply))
    fail(p.call, "%s", p.message);
  // The token is a pointer of ours only if we sent it to this peer and it
  // was not answered yet: anything else would be written through blindly.
  auto found = awaited_.find(reply.token);
  if (found == awaited_.end() || found->second != source)
    fail("ARMCI_GetS/GetV (vector answer)", "rank %d answered a vector get (token 0x%llx) that was not sent to it",
         source, static_cast<unsigned long long>(reply.token));
  awaited_.erase(found);
  auto* answer = reinterpret_cast<PendingAnswer*>(reply.token);
  if (payload.size() != answer->bytes)
    fail("ARMCI_GetS/GetV", "a vector get answer from rank %d carries %zu bytes instead of %zu", source,
         payload.size(), answer->bytes);
  std::size_t at = 0;
  for (const platform::LocalSegment& d : answer->destinations) {
    std::memcpy(d.address, payload.data() + at, d.length);
    at += d.length;
  }
  answer->completion->pending.fetch_sub(1, std::memory_order_release);
  messages_.answered(source, get_kind_);
  delete answer;
}

}  // namespace armci
