#include "src/core/vector_messages.hpp"

#include <algorithm>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"
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
                               Completions& completions, const Settings& settings)
    : progress_(progress), messages_(messages), memory_(memory), completions_(completions) {
  if (progress_.has_network()) {
    const std::size_t room = progress_.capabilities().max_message;
    batch_limit_ = std::min(settings.aggregate_bytes, room > 1024 ? room - 256 : 768);
  }
  auto batch_acked = [](int, std::uint64_t token) {
    auto* sent = reinterpret_cast<SentBatch*>(token);
    sent->completion->pending.fetch_sub(1, std::memory_order_release);
    delete sent;
  };
  put_kind_ = messages_.add(
      "vector-put", [this](int source, auto header, auto payload) { handle_put_or_acc(source, false, header, payload); },
      batch_acked);
  acc_kind_ = messages_.add(
      "vector-acc", [this](int source, auto header, auto payload) { handle_put_or_acc(source, true, header, payload); },
      batch_acked);
  get_kind_ = messages_.add("vector-get",
                            [this](int source, auto header, auto payload) { handle_get(source, header, payload); });
  answer_kind_ = messages_.add(
      "vector-answer", [this](int source, auto header, auto payload) { handle_answer(source, header, payload); });
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
  messages_.expect_answer(proc);
  // One more count on the completion for the target's ack or answer.
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  if (batch.op == Op::get) {
    auto* answer = new PendingAnswer{&completion, std::move(batch.payload), std::move(batch.destinations),
                                     batch.answer_bytes};
    header.token = reinterpret_cast<std::uintptr_t>(answer);
    kind = get_kind_;
    payload = answer->request;
  } else {
    auto* sent = new SentBatch{&completion, std::move(batch.payload)};
    header.token = reinterpret_cast<std::uintptr_t>(sent);
    kind = batch.op == Op::acc ? acc_kind_ : put_kind_;
    payload = sent->payload;
  }
  progress_.with_network([&](platform::Network& net) {
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

void VectorMessages::handle_put_or_acc(int source, bool is_acc, std::span<const std::byte> header_bytes,
                                       std::span<const std::byte> payload) {
  const auto header = wire::read<wire::VectorHeader>(header_bytes.data());
  const char* call = is_acc ? "ARMCI_AccS/AccV (vector message)" : "ARMCI_PutS/PutV (vector message)";
  if (is_acc && acc_element_size(header.datatype) == 0)
    fail(call, "a request from rank %d names Acc type %d, which is not an ARMCI type", source, header.datatype);
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if (at + sizeof(wire::PieceRecord) > payload.size())
      fail(call, "a vector message from rank %d is truncated (%zu bytes)", source, payload.size());
    const auto record = wire::read<wire::PieceRecord>(payload.data() + at);
    at += sizeof record;
    // The origin checked the range, but a target trusts only its own table.
    const Region* region = memory_.find_own(record.address, record.length);
    if (region == nullptr || at + record.length > payload.size())
      fail(call, "argument 'dst' of a request from rank %d (0x%llx, %llu bytes) is not inside any "
                 "ARMCI_Malloc region of rank %d",
           source, static_cast<unsigned long long>(record.address), static_cast<unsigned long long>(record.length),
           error_rank());
    std::byte* to = region->local + (record.address - region->base);
    if (is_acc)
      apply_acc_locked(memory_.own_control(), header.datatype, header.scale, to, payload.data() + at, record.length,
                       record.address);
    else
      std::memcpy(to, payload.data() + at, record.length);
    at += wire::padded(record.length);
  }
  messages_.send_ack(source, is_acc ? acc_kind_ : put_kind_, header.token);
}

void VectorMessages::handle_get(int source, std::span<const std::byte> header_bytes,
                                std::span<const std::byte> payload) {
  const auto header = wire::read<wire::VectorHeader>(header_bytes.data());
  // Answers the network has finished sending give their memory back.
  while (!answers_.empty() && answers_.front()->sent.done()) answers_.pop_front();
  auto answer = std::make_unique<OutgoingAnswer>();
  std::size_t total = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if ((i + 1) * sizeof(wire::PieceRecord) > payload.size())
      fail("ARMCI_GetS/GetV (vector message)", "a vector get from rank %d is truncated", source);
    total += wire::read<wire::PieceRecord>(payload.data() + i * sizeof(wire::PieceRecord)).length;
  }
  answer->data.resize(total);
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    const auto record = wire::read<wire::PieceRecord>(payload.data() + i * sizeof(wire::PieceRecord));
    const Region* region = memory_.find_own(record.address, record.length);
    if (region == nullptr)
      fail("ARMCI_GetS/GetV (vector message)",
           "argument 'src' of a request from rank %d (0x%llx, %llu bytes) is not inside any ARMCI_Malloc region "
           "of rank %d",
           source, static_cast<unsigned long long>(record.address), static_cast<unsigned long long>(record.length),
           error_rank());
    std::memcpy(answer->data.data() + at, region->local + (record.address - region->base), record.length);
    at += record.length;
  }
  wire::AckHeader reply{header.token, get_kind_};
  progress_.network_locked().send_message(source, answer_kind_, std::as_bytes(std::span(&reply, 1)), answer->data,
                                          answer->sent);
  answers_.push_back(std::move(answer));
}

void VectorMessages::handle_answer(int source, std::span<const std::byte> header_bytes,
                                   std::span<const std::byte> payload) {
  const auto reply = wire::read<wire::AckHeader>(header_bytes.data());
  auto* answer = reinterpret_cast<PendingAnswer*>(reply.token);
  if (payload.size() != answer->bytes)
    fail("ARMCI_GetS/GetV", "a vector get answer carries %zu bytes instead of %zu", payload.size(), answer->bytes);
  std::size_t at = 0;
  for (const platform::LocalSegment& d : answer->destinations) {
    std::memcpy(d.address, payload.data() + at, d.length);
    at += d.length;
  }
  answer->completion->pending.fetch_sub(1, std::memory_order_release);
  messages_.answered(source);
  delete answer;
}

}  // namespace armci
