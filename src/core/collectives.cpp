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

namespace armci {

// One message from one sender to one receiver, in the receiver's inbox.
// The sender fills it and then stores `sequence`; the receiver reads it
// and, once done with the whole message, advances the pair's Consumed
// counter, which frees this cell kCells messages later.
struct alignas(64) Collectives::Cell {
  std::atomic<std::uint64_t> sequence;
  std::uint32_t form;  // bytes inline, or kPieces / kSingleCopy / kSharedCopy
  std::int32_t tag;
  std::uint64_t total;
  std::byte data[kInlineBytes];  // the message, or the sender's address (and a shared copy's chunk bytes)
};

// A piece of a longer message. Counters on their own cache lines: each
// has one writer.
struct Collectives::Slot {
  alignas(64) std::atomic<std::uint64_t> posted;
  alignas(64) std::atomic<std::uint64_t> taken;
  alignas(64) std::byte data[kSlotBytes];
};

// How many of a sender's messages the receiver has finished with; the
// sender reads it only when the ring looks full (or to know that a
// single copy was made), so the line mostly stays with the receiver.
struct alignas(64) Collectives::Consumed {
  std::atomic<std::uint64_t> messages;
};

// A broadcast's copy into one reader, shared out chunk by chunk between
// the reader, which reads from the root's buffer, and the root, which
// writes into the reader's: two cores copy where one did, and a reader
// that has no CPU at the moment (4 ranks on 2 cores) is served by the
// root instead of waiting for a time slice. The reader publishes it before
// it waits for the message, so the root can start at once.
struct alignas(64) Collectives::Share {
  std::atomic<std::uint64_t> claim;  // the message's sequence << kChunkBits | chunks taken
  std::atomic<std::uint64_t> done;   // chunks copied
  std::atomic<std::uint64_t> destination;
  std::atomic<std::uint64_t> capacity;
};

// The start of every inbox: what a neighbour needs to read this process's
// memory directly, and whether this process could read all of theirs.
struct Collectives::InboxHeader {
  alignas(64) std::int64_t pid;
  std::uint64_t probe_address;
  std::atomic<std::int32_t> reads_neighbours;  // 1 yes, 0 not yet or no
};

namespace {

// Cell forms beyond the inline lengths: the message follows in slot
// pieces, or is to be read from the sender's buffer at the address the
// cell carries.
constexpr std::uint32_t kPieces = ~std::uint32_t{0};
constexpr std::uint32_t kSingleCopy = kPieces - 1;
// A single copy that the sender helps with, through the receiver's Share.
constexpr std::uint32_t kSharedCopy = kPieces - 2;
constexpr int kChunkBits = 16;

// The chunks of a broadcast's shared copy to each of `readers`: each is
// one system call, and two per reader share the copying out among the
// root and the readers (np 2, 1 MiB: 2 chunks 88 us, 8 chunks 101 us,
// 16 chunks 118 us; np 4 on 2 cores did better with 6-8 than with 2-4,
// all measured on a loaded host under chrt -r); never under
// 16 KiB, and few enough to count in kChunkBits.
std::size_t share_chunk(std::size_t total, std::size_t readers) {
  const std::size_t even = (total / (2 * readers) + 4095) & ~std::size_t{4095};
  return std::max({std::size_t{16 * 1024}, even, (total >> kChunkBits) + 1});
}
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
      [](int, std::uint64_t) {});
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
  if (!local(to)) {
    send_network(channel, to, tag, from, bytes);
    return {};
  }
  const std::uint64_t sequence = ++counter(sent_, channel, to);
  Cell* cell = next_cell(channel, to, sequence);
  cell->tag = tag;
  cell->total = bytes;
  if (bytes <= kInlineBytes) {
    if (bytes > 0) std::memcpy(cell->data, from, bytes);
    cell->form = static_cast<std::uint32_t>(bytes);
    cell->sequence.store(sequence, std::memory_order_release);
    return {};
  }
  if (single_copy_ && bytes >= (channel == Channel::collective ? kCollectiveSingleCopyMin : kSingleCopyMin)) {
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
    messages_.expect_answer(to);
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

// ------------------------------------------------------------------ collectives

void Collectives::barrier(const Team& team) {
  // Dissemination: after the round at distance d every member has heard,
  // directly or not, from the 2d members before it.
  const int n = team.size();
  for (int distance = 1; distance < n; distance <<= 1) {
    send(Channel::collective, team.members[static_cast<std::size_t>((team.me + distance) % n)], 0, nullptr, 0);
    receive("armci_msg_barrier", Channel::collective,
            team.members[static_cast<std::size_t>((team.me - distance + n) % n)], -1, nullptr, 0);
  }
}

template <typename ReceiveFrom, typename PostTo>
void Collectives::broadcast_tree(const Team& team, int root, ReceiveFrom&& receive_from, PostTo&& post_to) {
  // Binomial tree over indices relative to the root.
  const int n = team.size();
  const int relative = (team.me - root + n) % n;
  auto member = [&](int rel) { return team.members[static_cast<std::size_t>((rel + root) % n)]; };
  int mask = 1;
  for (; mask < n; mask <<= 1)
    if (relative & mask) {
      receive_from(member(relative - mask));
      break;
    }
  // Every child is told before any is waited for, so children reading
  // our buffer in single copies read it at the same time.
  Posted children[sizeof(int) * 8];
  int count = 0;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (relative + mask < n) children[count++] = post_to(member(relative + mask));
  for (int i = 0; i < count; ++i) finish(children[i]);
}

void Collectives::broadcast(const Team& team, void* data, std::size_t bytes, int root) {
  // Within one node, members read a long message straight from the root's
  // buffer all at once: a tree would make the copies follow one another
  // down its levels (at np 4, 32 KiB took 39 us where MPI took 17).
  const bool flat = single_copy_ && bytes >= kCollectiveSingleCopyMin && all_local(team);
  if (flat) {
    const int root_rank = team.members[static_cast<std::size_t>(root)];
    if (team.me != root) {
      Share* share = share_at(peers_.rank(), Channel::collective, root_rank);
      share->destination.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_relaxed);
      share->capacity.store(bytes, std::memory_order_relaxed);
      share->done.store(0, std::memory_order_relaxed);
      share->claim.store((counter(received_, Channel::collective, root_rank) + 1) << kChunkBits,
                         std::memory_order_release);
      receive("armci_msg_bcast", Channel::collective, root_rank, -1, data, bytes);
      return;
    }
    std::vector<Posted> readers;
    readers.reserve(team.members.size());
    // Where ranks share cores, what the root copies is time taken from a
    // reader on its core: at np 4 on 2 cores that cost more than it
    // balanced below 128 KiB chunks (32 KiB: 22 -> 53 us, 256 KiB: 103 ->
    // 123) and gained above (1 MiB: 382 -> 349 us).
    std::size_t chunk = share_chunk(bytes, team.members.size() - 1);
    if (cores_shared_ && chunk < 128 * 1024) chunk = 0;
    for (int member : team.members)
      if (member != root_rank) readers.push_back(post(Channel::collective, member, 0, data, bytes, chunk));
    // The root copies into readers while they copy, a chunk per reader in
    // turn, until every reader is through with its buffer.
    if (chunk == 0) {
      for (const Posted& reader : readers) finish(reader);
      return;
    }
    const auto* from = static_cast<const std::byte*>(data);
    progress_.until_stored([&] {
      bool all = true;
      for (const Posted& reader : readers)
        if (!consumed(reader)) {
          all = false;
          push_chunk(reader, from, bytes, chunk);
        }
      return all;
    });
    return;
  }
  broadcast_tree(
      team, root, [&](int from) { receive("armci_msg_bcast", Channel::collective, from, -1, data, bytes); },
      [&](int to) { return post(Channel::collective, to, 0, data, bytes); });
}

bool Collectives::all_local(const Team& team) const {
  return std::all_of(team.members.begin(), team.members.end(), [&](int member) { return local(member); });
}

// Two node neighbours with a core each reduce faster by copying through the
// slots than by single copies: both copy at once, in user space, through
// slots that stay in the cache, where a single copy pins every 4 KiB page
// of the other's buffer in the kernel (np 2, 1 MiB dgop: process_vm_readv
// and _writev moved 512 KiB in 75-90 us each, 6 GB/s; the direct all-reduce
// took 180-206 us, recursive halving over single copies 177, over the slots
// 163-165, MPI 181-187). Where ranks share cores a slot waits for its
// reader's time slice, and one-sided single copies win.
bool Collectives::reduces_through_slots(const Team& team) const {
  return team.size() == 2 && !cores_shared_ && all_local(team);
}

void Collectives::exchange(int partner, const void* out, std::size_t out_bytes, void* in, std::size_t in_bytes,
                           const Folding* fold, bool through_slots) {
  // Both ends take the same branch: the sizes are the same two numbers.
  if (!local(partner) || (single_copy_ && !through_slots) || std::max(out_bytes, in_bytes) <= kSlotBytes * kDepth) {
    // Neither end blocks in its post: a network send completes without the
    // receiver, a single copy is waited for after our own receive, and up
    // to kDepth pieces fit the slots.
    const Posted posted = post(Channel::collective, partner, 0, out, out_bytes);
    receive_local_or_network("armci_msg_gop", Channel::collective, partner, -1, static_cast<std::byte*>(in), in_bytes,
                             fold);
    finish(posted);
    return;
  }
  // Copies through the slots: one slot's worth at a time each way.
  const auto* from = static_cast<const std::byte*>(out);
  auto* into = static_cast<std::byte*>(in);
  auto pieces = [](std::size_t bytes) { return std::max<std::size_t>(1, (bytes + kSlotBytes - 1) / kSlotBytes); };
  const std::size_t sends = pieces(out_bytes);
  const std::size_t receives = pieces(in_bytes);
  for (std::size_t i = 0; i < std::max(sends, receives); ++i) {
    const std::size_t at = i * kSlotBytes;
    if (i < sends) send(Channel::collective, partner, 0, from + at, std::min(kSlotBytes, out_bytes - at));
    if (i < receives)
      receive_local_or_network("armci_msg_gop", Channel::collective, partner, -1, into + at,
                               std::min(kSlotBytes, in_bytes - at), fold);
  }
}

void Collectives::allreduce(const Team& team, void* data, std::size_t count, std::size_t element_bytes,
                            const Combine& combine) {
  const int n = team.size();
  if (n == 1 || count == 0) return;
  auto* bytes_of = static_cast<std::byte*>(data);
  const std::size_t bytes = count * element_bytes;
  if (single_copy_ && bytes / static_cast<std::size_t>(n) >= kDirectShareMin && all_local(team) &&
      !reduces_through_slots(team)) {
    allreduce_direct(team, bytes_of, count, element_bytes, combine);
    return;
  }
  // The largest power of two of members reduce among themselves; each of
  // the others first hands its data to one of them and gets the result
  // back at the end.
  int members = 1;
  while (members * 2 <= n) members *= 2;
  auto at = [&](int index) { return team.members[static_cast<std::size_t>(index)]; };
  if (team.me >= members) {
    send(Channel::collective, at(team.me - members), 0, data, bytes);
    receive("armci_msg_gop", Channel::collective, at(team.me - members), -1, data, bytes);
    return;
  }
  const bool folds_in = team.me + members < n;
  if (folds_in) {
    scratch_.resize(bytes);
    receive("armci_msg_gop", Channel::collective, at(team.me + members), -1, scratch_.data(), bytes);
    combine(data, scratch_.data(), count);
  }
  if (bytes <= kWholeBufferReduceMax || count < static_cast<std::size_t>(members))
    allreduce_whole(team, members, bytes_of, bytes, count, combine);
  else
    allreduce_shares(team, members, bytes_of, count, element_bytes, combine);
  if (folds_in) send(Channel::collective, at(team.me + members), 0, data, bytes);
}

void Collectives::allreduce_whole(const Team& team, int members, std::byte* data, std::size_t bytes,
                                  std::size_t count, const Combine& combine) {
  // Recursive doubling: partners swap what they hold and both compute
  // (lower half's) op (upper half's), so every member ends with one result.
  scratch_.resize(bytes);
  for (int mask = 1; mask < members; mask <<= 1) {
    const int partner = team.me ^ mask;
    exchange(team.members[static_cast<std::size_t>(partner)], data, bytes, scratch_.data(), bytes);
    if (team.me < partner) {
      combine(data, scratch_.data(), count);
    } else {
      combine(scratch_.data(), data, count);
      std::memcpy(data, scratch_.data(), bytes);
    }
  }
}

void Collectives::allreduce_shares(const Team& team, int members, std::byte* data, std::size_t count,
                                   std::size_t element_bytes, const Combine& combine) {
  // Recursive halving: each round a member keeps half of what it is
  // responsible for, gives the other half to its partner and combines
  // what it gets, so each element is reduced by exactly one member; then
  // the rounds in reverse gather every member's share back.
  struct Round {
    int partner;
    std::size_t keep_first, keep_count, give_first, give_count;
  };
  std::vector<Round> rounds;
  const bool through_slots = reduces_through_slots(team);
  std::size_t first = 0;
  std::size_t length = count;
  for (int mask = members / 2; mask >= 1; mask >>= 1) {
    const int partner = team.me ^ mask;
    const std::size_t lower = length / 2;
    const bool upper_half = (team.me & mask) != 0;
    Round r{team.members[static_cast<std::size_t>(partner)], upper_half ? first + lower : first,
            upper_half ? length - lower : lower, upper_half ? first : first + lower, upper_half ? lower : length - lower};
    const Folding fold{combine, element_bytes};
    exchange(r.partner, data + r.give_first * element_bytes, r.give_count * element_bytes,
             data + r.keep_first * element_bytes, r.keep_count * element_bytes, &fold, through_slots);
    rounds.push_back(r);
    first = r.keep_first;
    length = r.keep_count;
  }
  for (auto r = rounds.rbegin(); r != rounds.rend(); ++r)
    exchange(r->partner, data + r->keep_first * element_bytes, r->keep_count * element_bytes,
             data + r->give_first * element_bytes, r->give_count * element_bytes, nullptr, through_slots);
}

void Collectives::allreduce_direct(const Team& team, std::byte* data, std::size_t count, std::size_t element_bytes,
                                   const Combine& combine) {
  // Member i reduces share i: reads it from every other member a stretch
  // at a time, combines each into its own vector while the stretch is in
  // the cache, and writes the result straight into the others' vectors.
  // Every element is combined by one member in one order, so all end with
  // the same bits; a member reads and writes in one pass what
  // reduce-scatter + gather did in two, with no hand-over between them.
  const int n = team.size();
  auto member = [&](int index) { return team.members[static_cast<std::size_t>(index)]; };
  // The address also says that the sender's data is in place.
  const std::uint64_t mine = reinterpret_cast<std::uintptr_t>(data);
  for (int i = 1; i < n; ++i) send(Channel::collective, member((team.me + i) % n), 0, &mine, sizeof mine);
  vectors_.resize(static_cast<std::size_t>(n));
  for (int i = 1; i < n; ++i) {
    const int from = (team.me - i + n) % n;
    receive("armci_msg_gop", Channel::collective, member(from), -1, &vectors_[static_cast<std::size_t>(from)],
            sizeof(std::uint64_t));
  }
  const auto members = static_cast<std::size_t>(n);
  const auto me = static_cast<std::size_t>(team.me);
  const std::size_t first = me * (count / members) + std::min(me, count % members);
  const std::size_t end = first + count / members + (me < count % members ? 1 : 0);
  const std::size_t per_stretch = std::max<std::size_t>(1, kDirectStretch / element_bytes);
  stretch_.resize(per_stretch * element_bytes);
  for (std::size_t at = first; at < end; at += per_stretch) {
    const std::size_t elements = std::min(per_stretch, end - at);
    const std::size_t offset = at * element_bytes;
    const std::size_t bytes = elements * element_bytes;
    for (int i = 1; i < n; ++i) {
      const int peer = (team.me + i) % n;
      const auto* theirs = reinterpret_cast<const std::byte*>(vectors_[static_cast<std::size_t>(peer)]);
      if (!platform::read_process_memory(pid_of(member(peer)), theirs + offset, stretch_.data(), bytes))
        fail("armci_msg_gop", "reading %zu bytes from the memory of rank %d failed: %s", bytes, member(peer),
             std::strerror(errno));
      combine(data + offset, stretch_.data(), elements);
    }
    for (int i = 1; i < n; ++i) {
      const int peer = (team.me + i) % n;
      auto* theirs = reinterpret_cast<std::byte*>(vectors_[static_cast<std::size_t>(peer)]);
      if (!platform::write_process_memory(pid_of(member(peer)), theirs + offset, data + offset, bytes))
        fail("armci_msg_gop", "writing %zu bytes into the memory of rank %d failed: %s", bytes, member(peer),
             std::strerror(errno));
    }
  }
  // Our vector is the others' to read and write until they are through.
  barrier(team);
}

std::vector<std::vector<std::byte>> Collectives::allgather(const Team& team, std::span<const std::byte> mine) {
  // Gathered at index 0 as length-prefixed records, then broadcast: one
  // message per record and one per tree edge, each sized by what its first
  // piece says (allocations run one of these per ARMCI_Malloc and Free).
  const int n = team.size();
  std::vector<std::byte> packed;
  if (team.me == 0) {
    auto append_length = [&](std::uint64_t length) {
      const auto* l = reinterpret_cast<const std::byte*>(&length);
      packed.insert(packed.end(), l, l + sizeof length);
    };
    append_length(mine.size());
    packed.insert(packed.end(), mine.begin(), mine.end());
    for (int i = 1; i < n; ++i) {
      const int from = team.members[static_cast<std::size_t>(i)];
      const std::size_t length = next_length(Channel::collective, from);
      append_length(length);
      packed.resize(packed.size() + length);
      receive("allgather", Channel::collective, from, -1, packed.data() + packed.size() - length, length);
    }
  } else {
    send(Channel::collective, team.members[0], 0, mine.data(), mine.size());
  }
  broadcast_tree(
      team, 0,
      [&](int from) {
        packed.resize(next_length(Channel::collective, from));
        receive("allgather", Channel::collective, from, -1, packed.data(), packed.size());
      },
      [&](int to) { return post(Channel::collective, to, 0, packed.data(), packed.size()); });
  std::vector<std::vector<std::byte>> records(static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (auto& record : records) {
    std::uint64_t length;
    std::memcpy(&length, packed.data() + at, sizeof length);
    at += sizeof length;
    record.assign(packed.begin() + static_cast<std::ptrdiff_t>(at), packed.begin() + static_cast<std::ptrdiff_t>(at + length));
    at += length;
  }
  return records;
}

}  // namespace armci
