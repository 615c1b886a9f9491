// The collectives' algorithms (collectives.hpp): barrier, broadcast,
// all-reduce, all-gather, built on the transport of collectives.cpp
// (send, post, receive, exchange), as ARMCI-MPI keeps its global
// operations apart from its messages.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "platform/shm/cross_memory.hpp"
#include "src/core/barrier.hpp"
#include "src/core/collectives.hpp"
#include "src/core/collectives_layout.hpp"
#include "src/core/completion.hpp"
#include "src/core/error.hpp"

namespace armci {

using collective_layout::kChunkBits;
using collective_layout::share_chunk;

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
  // down its levels, each waiting for the one above.
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
    // reader on its core: that costs more than it balances until the
    // chunks are long enough for the copy to outweigh the time slice.
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
// of the other's buffer in the kernel, which costs more than the second
// copy saves. Where ranks share cores a slot waits for its reader's time
// slice, and one-sided single copies win.
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
  const Reduction how = reduction_of(bytes, count, n, [&] {
    return single_copy_ && all_local(team) && !reduces_through_slots(team);
  });
  if (how == Reduction::direct) {
    allreduce_direct(team, bytes_of, count, element_bytes, combine);
    return;
  }
  // The largest power of two of members reduce among themselves; each of
  // the others first hands its data to one of them and gets the result
  // back at the end.
  const int members = power_of_two_below(n);
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
  if (how == Reduction::recursive_doubling)
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
