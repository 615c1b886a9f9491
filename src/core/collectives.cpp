#include "src/core/collectives.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "src/core/completion.hpp"
#include "src/core/error.hpp"

namespace armci {

// One piece in flight from one sender to one receiver, in the receiver's
// inbox. The sender writes the piece and then `posted` (its sequence
// number); the receiver copies it out and then sets `taken` to the same
// number, which frees the slot for the next piece. Counters on their own
// cache lines: each has one writer.
struct Collectives::Slot {
  alignas(64) std::atomic<std::uint64_t> posted;
  alignas(64) std::atomic<std::uint64_t> taken;
  alignas(64) std::uint64_t bytes;
  std::uint64_t total;  // the whole message's length (first piece)
  std::int32_t tag;
  alignas(64) std::byte data[kSlotBytes];
};

namespace {

struct NetworkHeader {
  std::uint8_t channel;
  std::int32_t tag;
  std::uint64_t total;
  std::uint64_t sequence;
};

}  // namespace

Collectives::Collectives(const Peers& peers, Memory& memory, Progress& progress, Messages& messages,
                         Completions& completions)
    : peers_(peers), memory_(memory), progress_(progress), messages_(messages), completions_(completions) {
  const auto n = static_cast<std::size_t>(peers_.size());
  sent_.assign(kChannels * n, 0);
  received_.assign(kChannels * n, 0);
  queues_.resize(kChannels * n);
  node_index_.assign(n, 0);
  for (int node = 0; node < peers_.node_count(); ++node) {
    const auto& members = peers_.node_members(node);
    for (std::size_t i = 0; i < members.size(); ++i) node_index_[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
  }
  node_slots_ = static_cast<int>(peers_.node_members(peers_.node_of(peers_.rank())).size());

  kind_ = messages_.add(
      "collective",
      [this](int source, std::span<const std::byte> header, std::span<const std::byte> payload) {
        NetworkHeader h;
        std::memcpy(&h, header.data(), sizeof h);
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

  inboxes_ = memory_.collective_allocate(kChannels * static_cast<std::size_t>(node_slots_) * kDepth * sizeof(Slot),
                                         true);
  inbox_local_.assign(n, nullptr);
  for (int r = 0; r < peers_.size(); ++r)
    if (!peers_.reached_by_network(r)) inbox_local_[static_cast<std::size_t>(r)] = inboxes_->local(peers_, r);
}

Collectives::~Collectives() {
  if (inboxes_) memory_.free_allocation(*inboxes_);
}

Collectives::Slot* Collectives::slot_at(int receiver, Channel channel, int sender, std::uint64_t sequence) const {
  auto* slots = reinterpret_cast<Slot*>(inbox_local_[static_cast<std::size_t>(receiver)]);
  const std::size_t pair = static_cast<std::size_t>(channel) * static_cast<std::size_t>(node_slots_) +
                           static_cast<std::size_t>(node_index_[static_cast<std::size_t>(sender)]);
  return &slots[pair * kDepth + static_cast<std::size_t>((sequence - 1) % kDepth)];
}

// ------------------------------------------------------------------ point to point

void Collectives::send(Channel channel, int to, int tag, const void* data, std::size_t bytes) {
  const auto* from = static_cast<const std::byte*>(data);
  if (!local(to)) return send_network(channel, to, tag, from, bytes);
  std::uint64_t& sent = counter(sent_, channel, to);
  std::size_t offset = 0;
  do {
    const std::size_t piece = std::min(kSlotBytes, bytes - offset);
    const std::uint64_t sequence = ++sent;
    Slot* slot = slot_at(to, channel, peers_.rank(), sequence);
    // Free once the receiver took the piece that used it kDepth pieces ago.
    const std::uint64_t previous = sequence > kDepth ? sequence - kDepth : 0;
    progress_.until([&] { return slot->taken.load(std::memory_order_acquire) == previous; });
    if (piece > 0) std::memcpy(slot->data, from + offset, piece);
    slot->bytes = piece;
    slot->total = bytes;
    slot->tag = tag;
    slot->posted.store(sequence, std::memory_order_release);
    offset += piece;
  } while (offset < bytes);
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
      net.send_message(to, kind_, std::as_bytes(std::span(&header, 1)), std::span(data + offset, piece), sent);
    });
    offset += piece;
  } while (offset < bytes);
  completions_.wait("armci_msg (send)", sent);
}

std::size_t Collectives::receive(const char* call, Channel channel, int from, int tag, void* data,
                                 std::size_t capacity) {
  auto* into = static_cast<std::byte*>(data);
  if (!local(from)) return receive_network(call, channel, from, tag, into, capacity);
  std::uint64_t& received = counter(received_, channel, from);
  std::size_t offset = 0;
  std::size_t total = 0;
  do {
    const std::uint64_t sequence = received + 1;
    Slot* slot = slot_at(peers_.rank(), channel, from, sequence);
    progress_.until([&] { return slot->posted.load(std::memory_order_acquire) == sequence; });
    if (offset == 0) {
      total = slot->total;
      if (tag >= 0 && slot->tag != tag)
        fail(call, "the next message from rank %d has tag %d, not the tag %d asked for", from, slot->tag, tag);
      if (total > capacity)
        fail(call, "a message of %zu bytes from rank %d does not fit the buffer of %zu bytes", total, from, capacity);
    }
    const std::size_t piece = slot->bytes;
    if (piece > 0) std::memcpy(into + offset, slot->data, piece);
    offset += piece;
    received = sequence;
    slot->taken.store(sequence, std::memory_order_release);
  } while (offset < total);
  return total;
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
    if (!piece.bytes.empty()) std::memcpy(data + offset, piece.bytes.data(), piece.bytes.size());
    offset += piece.bytes.size();
    if (offset >= total) break;
    piece = next();
  }
  return total;
}

bool Collectives::waiting(Channel channel, int from) {
  const std::uint64_t next = counter(received_, channel, from) + 1;
  if (local(from)) return slot_at(peers_.rank(), channel, from, next)->posted.load(std::memory_order_acquire) == next;
  std::lock_guard guard(queues_mutex_);
  return queue(channel, from).count(next) != 0;
}

std::size_t Collectives::next_length(Channel channel, int from) {
  const std::uint64_t next = counter(received_, channel, from) + 1;
  if (local(from)) {
    Slot* slot = slot_at(peers_.rank(), channel, from, next);
    progress_.until([&] { return slot->posted.load(std::memory_order_acquire) == next; });
    return slot->total;
  }
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

void Collectives::broadcast_tree(const Team& team, int root, const std::function<void(int)>& receive_from,
                                 const std::function<void(int)>& send_to) {
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
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (relative + mask < n) send_to(member(relative + mask));
}

void Collectives::broadcast(const Team& team, void* data, std::size_t bytes, int root) {
  broadcast_tree(
      team, root, [&](int from) { receive("armci_msg_bcast", Channel::collective, from, -1, data, bytes); },
      [&](int to) { send(Channel::collective, to, 0, data, bytes); });
}

void Collectives::allreduce(const Team& team, void* data, std::size_t bytes, const Combine& combine) {
  // Binomial reduction towards index 0, then the result goes back down the
  // same tree: one order of combination, so every member gets the same bits.
  const int n = team.size();
  if (n == 1) return;
  std::vector<std::byte> incoming(bytes);
  for (int mask = 1; mask < n; mask <<= 1) {
    if (team.me & mask) {
      send(Channel::collective, team.members[static_cast<std::size_t>(team.me - mask)], 0, data, bytes);
      break;
    }
    if (team.me + mask < n) {
      receive("armci_msg_gop", Channel::collective, team.members[static_cast<std::size_t>(team.me + mask)], -1,
              incoming.data(), bytes);
      combine(data, incoming.data());
    }
  }
  broadcast(team, data, bytes, 0);
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
      [&](int to) { send(Channel::collective, to, 0, packed.data(), packed.size()); });
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
