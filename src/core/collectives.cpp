#include "src/core/collectives.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "platform/shm/cross_memory.hpp"
#include "src/core/barrier.hpp"
#include "src/core/completion.hpp"
#include "src/core/error.hpp"
#include "src/core/incoming.hpp"
#include "src/core/collectives_layout.hpp"

namespace armci {

namespace {

using namespace collective_layout;

constexpr std::uint64_t kOwnUpEvery = 8;
static_assert(kOwnUpEvery < Collectives::kCells);
// What a neighbour must read at probe_address to trust single copies.
constexpr std::uint64_t kProbeValue = 0x61726d6369706f6bull;
const std::uint64_t probe_word = kProbeValue;

using NetworkHeader = wire::CollectiveHeader;

}  // namespace

Collectives::Collectives(const Peers& peers, Memory& memory, Progress& progress, Messages& messages,
                         Completions& completions, Barrier& barrier)
    : peers_(peers), memory_(memory), progress_(progress), messages_(messages), completions_(completions) {
  const auto n = static_cast<std::size_t>(peers_.size());
  sent_.assign(kChannels * n, 0);
  received_.assign(kChannels * n, 0);
  pieces_sent_.assign(kChannels * n, 0);
  pieces_received_.assign(kChannels * n, 0);
  consumed_seen_.assign(kChannels * n, 0);
  queues_.resize(kChannels * n);
  node_index_.assign(n, 0);
  for (int node = 0; node < peers_.node_count(); ++node) {
    const auto& members = peers_.node_members(node);
    for (std::size_t i = 0; i < members.size(); ++i) node_index_[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
  }
  node_slots_ = static_cast<int>(peers_.node_members(peers_.node_of(peers_.rank())).size());
  cores_shared_ = peers_.cores_shared_on_host();
  static_assert(sizeof(Cell) == kCellBytes);

  kind_ = messages_.add(
      "collective",
      [this](int source, std::span<const std::byte> header, std::span<const std::byte> payload) {
        NetworkHeader h;
        if (incoming::Problem p = incoming::parse_collective(source, header, payload, kChannels, h))
          fail(p.call, "%s", p.message);
        {
          std::lock_guard guard(queues_mutex_);
          queue(static_cast<Channel>(h.channel), source)
              .emplace(h.sequence, Arrived{h.tag, h.total, std::vector<std::byte>(payload.begin(), payload.end())});
        }
        messages_.send_ack(source, kind_, 0);
      },
      [](int, std::uint64_t) {}, Fenced::no);
  if (progress_.has_network())
    network_piece_ = std::min<std::size_t>(kSlotBytes, progress_.capabilities().max_message - sizeof(NetworkHeader) - 64);

  const std::size_t pairs = kChannels * static_cast<std::size_t>(node_slots_);
  inboxes_ = memory_.collective_allocate(
      sizeof(InboxHeader) + pairs * (sizeof(Consumed) + kCells * sizeof(Cell) + kDepth * sizeof(Slot) + sizeof(Share)),
      true);
  inbox_local_.assign(n, nullptr);
  for (int r = 0; r < peers_.size(); ++r)
    if (!peers_.reached_by_network(r)) inbox_local_[static_cast<std::size_t>(r)] = inboxes_->local(peers_, r);
  probe_single_copy(barrier);
}

// Single copies are used within the node only if every member can read
// every other's memory, so both ends of a message decide alike.
void Collectives::probe_single_copy(Barrier& barrier) {
  // The barriers are the world's: every rank takes part, alone on its node or not.
  std::vector<int> neighbours;  // whose inboxes we map
  for (int r = 0; r < peers_.size(); ++r)
    if (r != peers_.rank() && local(r)) neighbours.push_back(r);
  InboxHeader* mine = header_of(peers_.rank());
  if (!neighbours.empty()) {
    platform::allow_cross_memory_readers();
    mine->pid = getpid();
    mine->probe_address = reinterpret_cast<std::uintptr_t>(&probe_word);
  }
  barrier.wait();
  bool reads_all = true;
  for (int r : neighbours) {
    const InboxHeader* theirs = header_of(r);
    std::uint64_t seen = 0;
    reads_all = reads_all && platform::read_process_memory(static_cast<pid_t>(theirs->pid),
                                                           reinterpret_cast<const void*>(theirs->probe_address),
                                                           &seen, sizeof seen) &&
                seen == kProbeValue;
  }
  mine->reads_neighbours.store(reads_all ? 1 : 0, std::memory_order_release);
  barrier.wait();
  single_copy_ = !neighbours.empty() && reads_all;
  for (int r : neighbours) single_copy_ = single_copy_ && header_of(r)->reads_neighbours.load(std::memory_order_acquire) == 1;
}

Collectives::InboxHeader* Collectives::header_of(int proc) const {
  return reinterpret_cast<InboxHeader*>(inbox_local_[static_cast<std::size_t>(proc)]);
}

Collectives::~Collectives() {
  if (inboxes_) memory_.free_allocation(*inboxes_);
}

// An inbox: the header, then per pair (channel, sender) its Consumed
// counter, its ring of cells and its slots.
Collectives::Consumed* Collectives::consumed_at(int receiver, Channel channel, int sender) const {
  auto* consumed = reinterpret_cast<Consumed*>(inbox_local_[static_cast<std::size_t>(receiver)] + sizeof(InboxHeader));
  return &consumed[pair_index(channel, sender)];
}

Collectives::Cell* Collectives::cell_at(int receiver, Channel channel, int sender, std::uint64_t sequence) const {
  const std::size_t pairs = kChannels * static_cast<std::size_t>(node_slots_);
  auto* cells = reinterpret_cast<Cell*>(inbox_local_[static_cast<std::size_t>(receiver)] + sizeof(InboxHeader) +
                                        pairs * sizeof(Consumed));
  return &cells[pair_index(channel, sender) * kCells + static_cast<std::size_t>((sequence - 1) % kCells)];
}

Collectives::Slot* Collectives::slot_at(int receiver, Channel channel, int sender, std::uint64_t piece) const {
  const std::size_t pairs = kChannels * static_cast<std::size_t>(node_slots_);
  auto* slots = reinterpret_cast<Slot*>(inbox_local_[static_cast<std::size_t>(receiver)] + sizeof(InboxHeader) +
                                        pairs * (sizeof(Consumed) + kCells * sizeof(Cell)));
  return &slots[pair_index(channel, sender) * kDepth + static_cast<std::size_t>((piece - 1) % kDepth)];
}

Collectives::Share* Collectives::share_at(int receiver, Channel channel, int sender) const {
  const std::size_t pairs = kChannels * static_cast<std::size_t>(node_slots_);
  auto* shares = reinterpret_cast<Share*>(inbox_local_[static_cast<std::size_t>(receiver)] + sizeof(InboxHeader) +
                                          pairs * (sizeof(Consumed) + kCells * sizeof(Cell) + kDepth * sizeof(Slot)));
  return &shares[pair_index(channel, sender)];
}

pid_t Collectives::pid_of(int proc) const { return static_cast<pid_t>(header_of(proc)->pid); }

Collectives::Cell* Collectives::next_cell(Channel channel, int to, std::uint64_t sequence) {
  std::uint64_t& seen = counter(consumed_seen_, channel, to);
  if (sequence > seen + kCells) {
    const Consumed* consumed = consumed_at(to, channel, peers_.rank());
    progress_.until_stored([&] {
      seen = consumed->messages.load(std::memory_order_acquire);
      return sequence <= seen + kCells;
    });
  }
  return cell_at(to, channel, peers_.rank(), sequence);
}

// ------------------------------------------------------------------ point to point

void Collectives::send(Channel channel, int to, int tag, const void* data, std::size_t bytes) {
  finish(post(channel, to, tag, data, bytes));
}

Collectives::Posted Collectives::post(Channel channel, int to, int tag, const void* data, std::size_t bytes,
                                      std::uint64_t shared_chunk) {
  const auto* from = static_cast<const std::byte*>(data);
  const Form form = form_of(local(to), single_copy_, channel, bytes);
  if (form == Form::network) {
    send_network(channel, to, tag, from, bytes);
    return {};
  }
  const std::uint64_t sequence = ++counter(sent_, channel, to);
  Cell* cell = next_cell(channel, to, sequence);
  cell->tag = tag;
  cell->total = bytes;
  if (form == Form::inline_cell) {
    if (bytes > 0) std::memcpy(cell->data, from, bytes);
    cell->form = static_cast<std::uint32_t>(bytes);
    cell->sequence.store(sequence, std::memory_order_release);
    return {};
  }
  if (form == Form::single_copy) {
    const std::uint64_t address = reinterpret_cast<std::uintptr_t>(from);
    std::memcpy(cell->data, &address, sizeof address);
    cell->form = shared_chunk > 0 ? kSharedCopy : kSingleCopy;
    std::memcpy(cell->data + sizeof address, &shared_chunk, sizeof shared_chunk);
    cell->sequence.store(sequence, std::memory_order_release);
    return {to, channel, sequence};
  }
  cell->form = kPieces;
  cell->sequence.store(sequence, std::memory_order_release);
  std::uint64_t& pieces = counter(pieces_sent_, channel, to);
  for (std::size_t offset = 0; offset < bytes; offset += kSlotBytes) {
    const std::uint64_t piece = ++pieces;
    Slot* slot = slot_at(to, channel, peers_.rank(), piece);
    // Free once the receiver took the piece that used it kDepth pieces ago.
    const std::uint64_t previous = piece > kDepth ? piece - kDepth : 0;
    progress_.until_stored([&] { return slot->taken.load(std::memory_order_acquire) == previous; });
    std::memcpy(slot->data, from + offset, std::min(kSlotBytes, bytes - offset));
    slot->posted.store(piece, std::memory_order_release);
  }
  return {};
}

const char* Collectives::name(Form form) {
  switch (form) {
    case Form::network: return "coll/network";
    case Form::inline_cell: return "coll/inline";
    case Form::pieces: return "coll/pieces";
    case Form::single_copy: return "coll/single-copy";
  }
  return "?";
}

const char* Collectives::name(Reduction reduction) {
  switch (reduction) {
    case Reduction::direct: return "allreduce/direct";
    case Reduction::recursive_doubling: return "allreduce/recursive-doubling";
    case Reduction::recursive_halving: return "allreduce/recursive-halving";
  }
  return "?";
}

bool Collectives::consumed(const Posted& posted) {
  std::uint64_t& seen = counter(consumed_seen_, posted.channel, posted.to);
  seen = consumed_at(posted.to, posted.channel, peers_.rank())->messages.load(std::memory_order_acquire);
  return seen >= posted.single_copy_sequence;
}

std::int64_t Collectives::claim(Share* share, std::uint64_t sequence, std::uint64_t chunks) {
  // The sequence in the word keeps a late claimant off the reader's next
  // message, which reuses the Share.
  std::uint64_t word = share->claim.load(std::memory_order_acquire);
  for (;;) {
    if (word >> kChunkBits != sequence) return -1;
    const std::uint64_t taken = word & ((std::uint64_t{1} << kChunkBits) - 1);
    if (taken >= chunks) return -1;
    if (share->claim.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return static_cast<std::int64_t>(taken);
  }
}

bool Collectives::push_chunk(const Posted& reader, const std::byte* data, std::size_t bytes, std::size_t chunk) {
  Share* share = share_at(reader.to, reader.channel, peers_.rank());
  if (share->claim.load(std::memory_order_acquire) >> kChunkBits != reader.single_copy_sequence) return false;
  // A reader whose buffer is too short fails on its own; we write nothing.
  if (share->capacity.load(std::memory_order_relaxed) < bytes) return false;
  const std::int64_t index = claim(share, reader.single_copy_sequence, (bytes + chunk - 1) / chunk);
  if (index < 0) return false;
  // Ours until done counts it: the reader does not return before.
  const std::size_t offset = static_cast<std::size_t>(index) * chunk;
  const std::size_t length = std::min(chunk, bytes - offset);
  auto* into = reinterpret_cast<std::byte*>(share->destination.load(std::memory_order_relaxed));
  if (!platform::write_process_memory(pid_of(reader.to), into + offset, data + offset, length))
    fail("armci_msg_bcast", "writing %zu bytes of a broadcast into the memory of rank %d failed: %s", length,
         reader.to, std::strerror(errno));
  share->done.fetch_add(1, std::memory_order_release);
  return true;
}

void Collectives::finish(const Posted& posted) {
  if (posted.single_copy_sequence == 0) return;
  // The receiver reads from our buffer: it stays ours to keep until then.
  const Consumed* consumed = consumed_at(posted.to, posted.channel, peers_.rank());
  std::uint64_t& seen = counter(consumed_seen_, posted.channel, posted.to);
  progress_.until_stored([&] {
    seen = consumed->messages.load(std::memory_order_acquire);
    return seen >= posted.single_copy_sequence;
  });
}

void Collectives::send_network(Channel channel, int to, int tag, const std::byte* data, std::size_t bytes) {
  NetworkHeader header{static_cast<std::uint8_t>(channel), tag, bytes, 0};
  platform::Completion sent;
  std::uint64_t& sequence = counter(sent_, channel, to);
  std::size_t offset = 0;
  do {
    const std::size_t piece = std::min(network_piece_, bytes - offset);
    header.sequence = ++sequence;
    messages_.expect_answer(to, kind_);
    progress_.with_network([&](platform::Network& net) {
      messages_.await_ack(to, kind_, 0);
      net.send_message(to, kind_, std::as_bytes(std::span(&header, 1)), std::span(data + offset, piece), sent);
    });
    offset += piece;
  } while (offset < bytes);
  completions_.wait("armci_msg (send)", sent);
}

std::size_t Collectives::receive(const char* call, Channel channel, int from, int tag, void* data,
                                 std::size_t capacity) {
  return receive_local_or_network(call, channel, from, tag, static_cast<std::byte*>(data), capacity, nullptr);
}

std::size_t Collectives::receive_local_or_network(const char* call, Channel channel, int from, int tag,
                                                  std::byte* into, std::size_t capacity, const Folding* fold) {
  const WaitDeadline::Awaiting awaiting(from);
  if (!local(from)) {
    if (!fold) return receive_network(call, channel, from, tag, into, capacity);
    scratch_.resize(capacity);
    const std::size_t total = receive_network(call, channel, from, tag, scratch_.data(), capacity);
    fold->combine(into, scratch_.data(), total / fold->element_bytes);
    return total;
  }
  // Folding: each piece is combined into place where it lies (the cell,
  // the slot, or a cache-sized stretch read from the sender), never staged
  // whole.
  auto deliver = [&](std::size_t offset, const std::byte* piece, std::size_t bytes) {
    if (fold) fold->combine(into + offset, piece, bytes / fold->element_bytes);
    else std::memcpy(into + offset, piece, bytes);
  };
  const Announced message = await_cell(channel, from);
  const Cell* cell = message.cell;
  const std::size_t total = message.total;
  if (tag >= 0 && cell->tag != tag)
    fail(call, "the next message from rank %d has tag %d, not the tag %d asked for", from, cell->tag, tag);
  if (total > capacity)
    fail(call, "a message of %zu bytes from rank %d does not fit the buffer of %zu bytes", total, from, capacity);
  if (cell->form == kSingleCopy || cell->form == kSharedCopy) {
    std::uint64_t address;
    std::memcpy(&address, cell->data, sizeof address);
    const auto pid = static_cast<pid_t>(header_of(from)->pid);
    const auto* remote = reinterpret_cast<const std::byte*>(address);
    auto read_failed = [&] {
      fail(call, "reading a message of %zu bytes from the memory of rank %d failed: %s", total, from,
           std::strerror(errno));
    };
    Share* share = share_at(peers_.rank(), channel, from);
    if (cell->form == kSharedCopy && !fold &&
        share->claim.load(std::memory_order_relaxed) >> kChunkBits == message.sequence) {
      std::uint64_t chunk;
      std::memcpy(&chunk, cell->data + sizeof address, sizeof chunk);
      const std::uint64_t chunks = (total + chunk - 1) / chunk;
      if (chunk == 0 || chunks >= (std::uint64_t{1} << kChunkBits))
        fail(call, "rank %d announced a broadcast of %zu bytes in chunks of %llu bytes", from, total,
             static_cast<unsigned long long>(chunk));
      for (std::int64_t index; (index = claim(share, message.sequence, chunks)) >= 0;) {
        const std::size_t offset = static_cast<std::size_t>(index) * chunk;
        if (!platform::read_process_memory(pid, remote + offset, into + offset, std::min(chunk, total - offset)))
          read_failed();
        share->done.fetch_add(1, std::memory_order_release);
      }
      // The root's chunks land in our buffer until it counts them.
      progress_.until_stored([&] { return share->done.load(std::memory_order_acquire) == chunks; });
    } else if (!fold) {
      // (A shared copy we did not ask for: the root never touches it.)
      if (total > 0 && !platform::read_process_memory(pid, remote, into, total)) read_failed();
    } else {
      constexpr std::size_t kStretch = 512 * 1024;  // read, then combined while still in the (2 MiB) L2
      stretch_.resize(kStretch);
      for (std::size_t at = 0; at < total; at += kStretch) {
        const std::size_t bytes = std::min(kStretch, total - at);
        if (!platform::read_process_memory(pid, remote + at, stretch_.data(), bytes)) read_failed();
        deliver(at, stretch_.data(), bytes);
      }
    }
  } else if (cell->form == kPieces) {
    std::uint64_t& pieces = counter(pieces_received_, channel, from);
    for (std::size_t offset = 0; offset < total; offset += kSlotBytes) {
      const std::uint64_t piece = pieces + 1;
      Slot* slot = slot_at(peers_.rank(), channel, from, piece);
      progress_.until_stored([&] { return slot->posted.load(std::memory_order_acquire) == piece; });
      deliver(offset, slot->data, std::min(kSlotBytes, total - offset));
      pieces = piece;
      slot->taken.store(piece, std::memory_order_release);
    }
  } else if (total > 0) {
    deliver(0, cell->data, total);
  }
  counter(received_, channel, from) = message.sequence;
  // A sender waits on this only when kCells messages are ahead, or for a
  // single copy to be made: short messages are owned up to in batches, so
  // the line stays here instead of crossing to a sender polling it each
  // message. At most kOwnUpEvery - 1 go unowned, so a sender never waits
  // for messages that were taken.
  if (cell->form == kSingleCopy || cell->form == kSharedCopy || cell->form == kPieces || message.sequence % kOwnUpEvery == 0)
    consumed_at(peers_.rank(), channel, from)->messages.store(message.sequence, std::memory_order_release);
  return total;
}

Collectives::Announced Collectives::await_cell(Channel channel, int from) {
  const std::uint64_t sequence = counter(received_, channel, from) + 1;
  Cell* cell = cell_at(peers_.rank(), channel, from, sequence);
  progress_.until_stored([&] { return cell->sequence.load(std::memory_order_acquire) == sequence; });
  return {cell, sequence, static_cast<std::size_t>(cell->total)};
}

std::size_t Collectives::receive_network(const char* call, Channel channel, int from, int tag, std::byte* data,
                                         std::size_t capacity) {
  std::map<std::uint64_t, Arrived>& arrived = queue(channel, from);
  std::uint64_t& received = counter(received_, channel, from);
  auto next = [&] {
    const std::uint64_t sequence = received + 1;
    progress_.until([&] {
      std::lock_guard guard(queues_mutex_);
      return arrived.count(sequence) != 0;
    });
    std::lock_guard guard(queues_mutex_);
    auto found = arrived.find(sequence);
    Arrived piece = std::move(found->second);
    arrived.erase(found);
    received = sequence;
    return piece;
  };
  Arrived piece = next();
  const std::size_t total = piece.total;
  if (tag >= 0 && piece.tag != tag)
    fail(call, "the next message from rank %d has tag %d, not the tag %d asked for", from, piece.tag, tag);
  if (total > capacity)
    fail(call, "a message of %zu bytes from rank %d does not fit the buffer of %zu bytes", total, from, capacity);
  std::size_t offset = 0;
  for (;;) {
    // Each piece was checked against its own total only: together they
    // must not pass the total this message started with.
    if (piece.bytes.size() > total - offset)
      fail(call, "the pieces of a message of %zu bytes from rank %d carry more than that", total, from);
    if (!piece.bytes.empty()) std::memcpy(data + offset, piece.bytes.data(), piece.bytes.size());
    offset += piece.bytes.size();
    if (offset >= total) break;
    piece = next();
  }
  return total;
}

bool Collectives::waiting(Channel channel, int from) {
  const std::uint64_t next = counter(received_, channel, from) + 1;
  if (local(from)) return cell_at(peers_.rank(), channel, from, next)->sequence.load(std::memory_order_acquire) == next;
  std::lock_guard guard(queues_mutex_);
  return queue(channel, from).count(next) != 0;
}

std::size_t Collectives::next_length(Channel channel, int from) {
  const std::uint64_t next = counter(received_, channel, from) + 1;
  if (local(from)) return await_cell(channel, from).total;
  std::map<std::uint64_t, Arrived>& arrived = queue(channel, from);
  progress_.until([&] {
    std::lock_guard guard(queues_mutex_);
    return arrived.count(next) != 0;
  });
  std::lock_guard guard(queues_mutex_);
  return arrived.at(next).total;
}

int Collectives::wait_any(Channel channel) {
  const int n = peers_.size();
  int found = -1;
  progress_.until([&] {
    for (int i = 0; i < n; ++i) {
      const int from = (any_next_ + i) % n;
      if (waiting(channel, from)) {
        found = from;
        return true;
      }
    }
    return false;
  });
  any_next_ = (found + 1) % n;
  return found;
}

}  // namespace armci
