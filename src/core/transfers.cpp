// Transfers that do more than hand one range to the network: vector
// messages (aggregate handles, buffered strided and vector calls), the
// buffered pipeline for contiguous transfers, and the bound on unfinished
// operations.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "src/core/error.hpp"
#include "src/core/messages.hpp"
#include "src/core/runtime.hpp"

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

template <typename T>
T read_record(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace

// ------------------------------------------------------------------ vector messages

void Runtime::install_vector_handlers() {
  network_->set_message_handler(wire::kVectorPut, [this](int source, auto header, auto payload) {
    handle_vector_message(source, false, header, payload);
  });
  network_->set_message_handler(wire::kVectorAcc, [this](int source, auto header, auto payload) {
    handle_vector_message(source, true, header, payload);
  });
  network_->set_message_handler(wire::kVectorGet, [this](int source, auto header, auto payload) {
    handle_vector_get(source, header, payload);
  });
  network_->set_message_handler(wire::kVectorAnswer, [this](int source, auto header, auto payload) {
    handle_vector_answer(source, header, payload);
  });
  network_->set_message_handler(wire::kHostPut, [this](int source, auto header, auto payload) {
    handle_host_request(source, false, header, payload);
  });
  network_->set_message_handler(wire::kHostGet, [this](int source, auto header, auto payload) {
    handle_host_request(source, true, header, payload);
  });
}

void Runtime::batch_add(VectorBatch::Kind kind, int datatype, const AccScale& scale, const std::byte* local,
                        std::uintptr_t remote, std::size_t bytes, int proc, platform::Completion& completion,
                        VectorBatches& batches) {
  VectorBatch* batch = nullptr;
  for (VectorBatch& b : batches)
    if (b.matches(kind, proc, datatype, scale)) batch = &b;
  if (batch == nullptr) {
    batch = &batches.emplace_back();
    batch->kind = kind;
    batch->peer = proc;
    batch->datatype = datatype;
    batch->scale = scale;
  }
  const std::size_t element = kind == VectorBatch::Kind::acc ? acc_element_size(datatype) : 1;
  const std::size_t limit = batch_limit_;
  constexpr std::size_t kRecord = sizeof(wire::PieceRecord);
  // Below this much room a batch is sent rather than cutting a piece into
  // slivers.
  const std::size_t smallest = std::min<std::size_t>(bytes, 256);
  std::size_t done = 0;
  while (done < bytes) {
    std::size_t room;
    if (kind == VectorBatch::Kind::get)
      room = batch->payload.size() + kRecord <= limit ? limit - batch->answer_bytes : 0;
    else
      room = batch->payload.size() + kRecord + 8 <= limit ? limit - batch->payload.size() - kRecord : 0;
    room -= room % std::max<std::size_t>(element, 8);
    if (room < std::min(smallest, bytes - done) || room == 0) {
      send_batch(*batch, completion);
      continue;
    }
    const std::size_t piece = std::min(room, bytes - done);
    wire::PieceRecord record{remote + done, piece};
    const auto* record_bytes = reinterpret_cast<const std::byte*>(&record);
    batch->payload.insert(batch->payload.end(), record_bytes, record_bytes + kRecord);
    if (kind == VectorBatch::Kind::get) {
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

void Runtime::send_batch(VectorBatch& batch, platform::Completion& completion) {
  if (batch.count == 0) return;
  const int proc = batch.peer;
  wire::VectorHeader header{};
  header.count = batch.count;
  header.datatype = batch.datatype;
  header.scale = batch.scale;
  std::uint8_t id;
  std::span<const std::byte> payload;
  make_room_for_message(proc);
  // One more count on the completion for the target's ack or answer.
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  acks_pending_[static_cast<std::size_t>(proc)].fetch_add(1, std::memory_order_relaxed);
  if (batch.kind == VectorBatch::Kind::get) {
    // A get must not overtake this origin's puts still on the wire.
    order_after_puts(proc, true);
    auto* answer = new PendingAnswer{&completion, std::move(batch.payload), std::move(batch.destinations),
                                     batch.answer_bytes};
    header.token = reinterpret_cast<std::uintptr_t>(answer);
    id = wire::kVectorGet;
    payload = answer->request;
  } else {
    order_after_puts(proc, true);
    auto* sent = new SentBatch{&completion, std::move(batch.payload)};
    header.token = reinterpret_cast<std::uintptr_t>(sent);
    id = batch.kind == VectorBatch::Kind::acc ? wire::kVectorAcc : wire::kVectorPut;
    payload = sent->payload;
  }
  with_network([&](platform::Network& net) {
    net.send_message(proc, id, std::as_bytes(std::span(&header, 1)), payload, completion);
  });
  batch.count = 0;
  batch.payload = {};
  batch.destinations = {};
  batch.answer_bytes = 0;
}

void Runtime::send_batches(VectorBatches& batches, platform::Completion& completion) {
  for (VectorBatch& batch : batches) send_batch(batch, completion);
  batches.clear();
}

void Runtime::send_ack(int source, std::uint64_t token, std::uint64_t kind) {
  // The ack's own completion is not waited for: it is a small eager
  // message, and the layer keeps it until it is sent.
  static platform::Completion acks_sent;
  wire::AckHeader ack{token, kind};
  network_->send_message(source, wire::kAck, std::as_bytes(std::span(&ack, 1)), {}, acks_sent);
}

void Runtime::handle_vector_message(int source, bool is_acc, std::span<const std::byte> header_bytes,
                                    std::span<const std::byte> payload) {
  const auto header = read_record<wire::VectorHeader>(header_bytes.data());
  const char* call = is_acc ? "ARMCI_AccS/AccV (vector message)" : "ARMCI_PutS/PutV (vector message)";
  if (is_acc && acc_element_size(header.datatype) == 0)
    fail(call, "a request from rank %d names Acc type %d, which is not an ARMCI type", source, header.datatype);
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if (at + sizeof(wire::PieceRecord) > payload.size())
      fail(call, "a vector message from rank %d is truncated (%zu bytes)", source, payload.size());
    const auto record = read_record<wire::PieceRecord>(payload.data() + at);
    at += sizeof record;
    // The origin checked the range, but a target trusts only its own table.
    const Region* region = regions_.find_without_caching(rank_, record.address, record.length);
    if (region == nullptr || at + record.length > payload.size())
      fail(call, "argument 'dst' of a request from rank %d (0x%llx, %llu bytes) is not inside any "
                 "ARMCI_Malloc region of rank %d",
           source, static_cast<unsigned long long>(record.address),
           static_cast<unsigned long long>(record.length), rank_);
    std::byte* to = region->local + (record.address - region->base);
    if (is_acc)
      apply_acc_locally(*control_local_[static_cast<std::size_t>(rank_)], header.datatype, header.scale, to,
                        payload.data() + at, record.length, record.address);
    else
      std::memcpy(to, payload.data() + at, record.length);
    at += wire::padded(record.length);
  }
  send_ack(source, header.token, wire::kAckBatch);
}

void Runtime::handle_vector_get(int source, std::span<const std::byte> header_bytes,
                                std::span<const std::byte> payload) {
  const auto header = read_record<wire::VectorHeader>(header_bytes.data());
  // Answers the network has finished sending give their memory back.
  while (!answers_.empty() && answers_.front()->sent.done()) answers_.pop_front();
  auto answer = std::make_unique<OutgoingAnswer>();
  std::size_t total = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if ((i + 1) * sizeof(wire::PieceRecord) > payload.size())
      fail("ARMCI_GetS/GetV (vector message)", "a vector get from rank %d is truncated", source);
    total += read_record<wire::PieceRecord>(payload.data() + i * sizeof(wire::PieceRecord)).length;
  }
  answer->data.resize(total);
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    const auto record = read_record<wire::PieceRecord>(payload.data() + i * sizeof(wire::PieceRecord));
    const Region* region = regions_.find_without_caching(rank_, record.address, record.length);
    if (region == nullptr)
      fail("ARMCI_GetS/GetV (vector message)",
           "argument 'src' of a request from rank %d (0x%llx, %llu bytes) is not inside any ARMCI_Malloc region "
           "of rank %d",
           source, static_cast<unsigned long long>(record.address),
           static_cast<unsigned long long>(record.length), rank_);
    std::memcpy(answer->data.data() + at, region->local + (record.address - region->base), record.length);
    at += record.length;
  }
  wire::AckHeader reply{header.token, wire::kAckBatch};
  network_->send_message(source, wire::kVectorAnswer, std::as_bytes(std::span(&reply, 1)), answer->data,
                         answer->sent);
  answers_.push_back(std::move(answer));
}

void Runtime::handle_vector_answer(int source, std::span<const std::byte> header_bytes,
                                   std::span<const std::byte> payload) {
  const auto reply = read_record<wire::AckHeader>(header_bytes.data());
  auto* answer = reinterpret_cast<PendingAnswer*>(reply.token);
  if (payload.size() != answer->bytes)
    fail("ARMCI_GetS/GetV", "a vector get answer carries %zu bytes instead of %zu", payload.size(), answer->bytes);
  std::size_t at = 0;
  for (const platform::LocalSegment& d : answer->destinations) {
    std::memcpy(d.address, payload.data() + at, d.length);
    at += d.length;
  }
  answer->completion->pending.fetch_sub(1, std::memory_order_release);
  acks_pending_[static_cast<std::size_t>(source)].fetch_sub(1, std::memory_order_release);
  delete answer;
}

void Runtime::handle_ack(int source, std::span<const std::byte> header_bytes) {
  const auto ack = read_record<wire::AckHeader>(header_bytes.data());
  platform::Completion* completion;
  if (ack.kind == wire::kAckHost) {
    finish_host_request(ack.token);
    acks_pending_[static_cast<std::size_t>(source)].fetch_sub(1, std::memory_order_release);
    return;
  }
  if (ack.kind == wire::kAckBatch) {
    auto* sent = reinterpret_cast<SentBatch*>(ack.token);
    completion = sent->completion;
    delete sent;
  } else {
    completion = reinterpret_cast<platform::Completion*>(ack.token);
  }
  completion->pending.fetch_sub(1, std::memory_order_release);
  acks_pending_[static_cast<std::size_t>(source)].fetch_sub(1, std::memory_order_release);
}

// ------------------------------------------------------------------ buffered pipeline

bool Runtime::use_buffered(const void* local, std::size_t bytes) const {
  switch (settings_.protocol) {
    case ProtocolChoice::direct: return false;
    case ProtocolChoice::buffered: return true;
    case ProtocolChoice::automatic: break;
  }
  // A layer that registers and caches local memory itself does better than
  // a copy; small enough to travel inline, nothing to gain either.
  const platform::Capabilities& caps = network_->capabilities();
  if (!caps.needs_local_registration || bytes <= caps.max_inline || bytes > settings_.buffered_max) return false;
  // Memory of an ARMCI_Malloc region is registered already.
  return regions_.find_without_caching(rank_, reinterpret_cast<std::uintptr_t>(local), bytes) == nullptr;
}

void Runtime::start_buffered(bool is_get, std::byte* user, std::uintptr_t remote, platform::RemoteKey key,
                             std::size_t bytes, int proc, platform::Completion& completion, bool offload) {
  completion.pending.fetch_add(1, std::memory_order_relaxed);
  bool unfinished;
  {
    std::lock_guard guard(network_mutex_);
    if (!offload && pool_free_.empty() && pool_memory_.empty()) {
      // The pool is made on first use: jobs that never need it pay nothing.
      const std::size_t chunk = settings_.buffer_chunk;
      pool_memory_.resize(chunk * settings_.buffer_count + 4096);
      pool_registration_ = network_->register_memory(pool_memory_.data(), pool_memory_.size());
      for (int i = static_cast<int>(settings_.buffer_count) - 1; i >= 0; --i) pool_free_.push_back(i);
    }
    BufferedTransfer& t = buffered_.emplace_back();
    t.is_get = is_get;
    t.peer = proc;
    t.user = user;
    t.remote = remote;
    t.key = key;
    t.bytes = bytes;
    t.completion = &completion;
    t.zero_copy = offload;
    buffered_active_.fetch_add(1);
    // The caller starts the first chunk moving; the rest is the helper's
    // (kicked below) while the application computes, or the caller's own
    // when it waits. An offloaded transfer is the helper's from the start:
    // its first chunk would be a copy on this very core.
    advance_buffered(offload ? 0 : 1);
    unfinished = !buffered_.empty();
  }
  // The rest of the pipeline is the helper's while the application computes.
  if (unfinished) kick_helper();
}

int Runtime::advance_buffered(std::size_t new_chunks) {
  const std::size_t chunk_size = settings_.buffer_chunk;
  // Buffers start on a 4 KiB boundary of the pool, whatever the vector's own
  // alignment.
  std::byte* pool = pool_memory_.data() + ((4096 - reinterpret_cast<std::uintptr_t>(pool_memory_.data()) % 4096) % 4096);
  int events = 0;
  for (auto it = buffered_.begin(); it != buffered_.end();) {
    BufferedTransfer& t = *it;
    while (!t.chunks.empty() && t.chunks.front().done.done()) {
      BufferedTransfer::Chunk& c = t.chunks.front();
      if (int error = c.done.error.load(); error != 0) {
        int expected = 0;
        t.completion->error.compare_exchange_strong(expected, error);
      }
      if (c.buffer >= 0) {
        if (t.is_get) std::memcpy(t.user + c.offset, pool + static_cast<std::size_t>(c.buffer) * chunk_size, c.length);
        pool_free_.push_back(c.buffer);
      }
      t.finished += c.length;
      t.chunks.pop_front();
      ++events;
    }
    for (std::size_t started = 0; started < new_chunks && t.issued < t.bytes && (t.zero_copy || !pool_free_.empty());
         ++started) {
      BufferedTransfer::Chunk& c = t.chunks.emplace_back();
      c.offset = t.issued;
      c.length = std::min(chunk_size, t.bytes - t.issued);
      if (t.zero_copy) {
        platform::LocalSegment segment{t.user + c.offset, c.length};
        if (t.is_get)
          network_->get(t.peer, std::span(&segment, 1), t.remote + c.offset, t.key, c.done);
        else
          network_->put(t.peer, std::span(&segment, 1), t.remote + c.offset, t.key, c.done);
        t.issued += c.length;
        ++events;
        continue;
      }
      c.buffer = pool_free_.back();
      pool_free_.pop_back();
      std::byte* buffer = pool + static_cast<std::size_t>(c.buffer) * chunk_size;
      platform::LocalSegment segment{buffer, c.length};
      if (t.is_get) {
        network_->get(t.peer, std::span(&segment, 1), t.remote + c.offset, t.key, c.done);
      } else {
        std::memcpy(buffer, t.user + c.offset, c.length);
        network_->put(t.peer, std::span(&segment, 1), t.remote + c.offset, t.key, c.done);
      }
      t.issued += c.length;
      ++events;
    }
    if (t.finished == t.bytes) {
      t.completion->pending.fetch_sub(1, std::memory_order_release);
      it = buffered_.erase(it);
      buffered_active_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++it;
    }
  }
  return events;
}

void Runtime::kick_helper() {
  // Even a serving helper may be asleep on the network's wakeup, which a
  // pipeline copying through the CPU (UCX within one host) never fires.
  if (kick_progress_ < 0) return;
  const std::uint64_t one = 1;
  if (write(kick_progress_, &one, sizeof one) != sizeof one) std::perror("armci: waking the helper thread");
}

// ------------------------------------------------------------------ bounds

void Runtime::note_pending(Requests::Id id) {
  pending_.push_back(id);
  if (pending_.size() <= settings_.max_pending) return;
  // Completes the oldest request still unfinished; its slot stays the
  // user's until Wait or Test.
  const Requests::Id oldest = pending_.front();
  pending_.pop_front();
  if (ExplicitRequest* request = requests_.find(oldest)) {
    send_batches(request->batches, request->completion);
    wait("ARMCI_Nb* (completing the oldest request to make room)", request->completion);
  }
}

void Runtime::limit_implicit(int proc) {
  platform::Completion& c = implicit_completion(proc);
  if (static_cast<std::size_t>(c.pending.load(std::memory_order_relaxed)) <= settings_.max_pending) return;
  progress_until([&] {
    return static_cast<std::size_t>(c.pending.load(std::memory_order_acquire)) <= settings_.max_pending / 2;
  });
}

}  // namespace armci
