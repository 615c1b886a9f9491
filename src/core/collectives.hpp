// Collectives: ordered point-to-point channels between every pair of ranks,
// and the collective algorithms (barrier, broadcast, all-reduce, all-gather)
// that armci_msg_*, groups and group allocations run over them. No MPI:
// between node neighbours a message goes through a slot in the receiver's
// node-shared inbox, to a network peer as the network layer's messages.
//
// Owns: the inboxes (one slot per node neighbour and channel), the queues of
// messages that arrived through the network, the sequence counters.
// Called by: the API's armci_msg_* calls, Groups (group barriers and
// allocation exchanges), the runtime (builds it after the barrier).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "src/core/memory.hpp"
#include "src/core/messages.hpp"
#include "src/core/peers.hpp"
#include "src/core/progress.hpp"

namespace armci {

class Completions;

// Two independent streams per pair: the library's collectives, and the
// program's armci_msg_snd/rcv (whose messages must not be taken by a
// collective waiting on the same peer).
enum class Channel : std::uint8_t { collective = 0, user = 1 };
constexpr int kChannels = 2;

// The ranks a collective runs over, in order, and this rank's index.
struct Team {
  const std::vector<int>& members;
  int me;
  int size() const { return static_cast<int>(members.size()); }
};

class Collectives {
 public:
  // Collective (every rank, at start-up, after the barrier exists).
  Collectives(const Peers& peers, Memory& memory, Progress& progress, Messages& messages,
              Completions& completions);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  // A message of bytes to world rank `to`. Returns once the data may be
  // reused; waits while the receiver has not taken the piece sent kDepth
  // pieces earlier (a channel holds kDepth slots per pair).
  void send(Channel channel, int to, int tag, const void* data, std::size_t bytes);
  // The next message from `from` on this channel, into data; its length is
  // returned. Fails naming call when it is longer than capacity or carries
  // another tag (tag < 0: any).
  std::size_t receive(const char* call, Channel channel, int from, int tag, void* data, std::size_t capacity);
  // Waits for a message from any rank on this channel; returns its sender.
  int wait_any(Channel channel);

  // Collectives over a team: every member calls, in the same order.
  void barrier(const Team& team);
  // root: an index into team.members.
  void broadcast(const Team& team, void* data, std::size_t bytes, int root);
  // combine(into, from): into = into (op) from, for whole buffers of bytes.
  // Every member ends with the same result (reduced at index 0, then
  // broadcast).
  using Combine = std::function<void(void* into, const void* from)>;
  void allreduce(const Team& team, void* data, std::size_t bytes, const Combine& combine);
  // Everyone's record, by team index.
  std::vector<std::vector<std::byte>> allgather(const Team& team, std::span<const std::byte> mine);

  // Bytes one slot carries; longer messages go in pieces, up to kDepth of
  // them ahead of the receiver. Every rank's inbox holds channels x node
  // size x kDepth slots made at ARMCI_Init, so this is /dev/shm that every
  // job pays for before its first ARMCI_Malloc (and it grows with the
  // square of the ranks per node): 4 x 64 KiB took 2 MiB per rank at 4 ranks
  // and left a shared-memory-only job unable to start in a 1 MiB /dev/shm.
  static constexpr std::size_t kSlotBytes = 16 * 1024;
  static constexpr int kDepth = 2;

 private:
  struct Slot;
  struct Arrived {
    int tag;
    std::uint64_t total;
    std::vector<std::byte> bytes;
  };

  // The slot piece `sequence` (from 1) from sender to receiver goes through.
  Slot* slot_at(int receiver, Channel channel, int sender, std::uint64_t sequence) const;
  bool local(int proc) const { return inbox_local_[static_cast<std::size_t>(proc)] != nullptr; }
  bool waiting(Channel channel, int from);
  // The length of the next message from `from`, once its first piece is
  // here (it stays to be received).
  std::size_t next_length(Channel channel, int from);
  // The binomial tree of a broadcast: receive_from(member) once (but at the
  // root), then send_to(member) for each child.
  void broadcast_tree(const Team& team, int root, const std::function<void(int)>& receive_from,
                      const std::function<void(int)>& send_to);
  void send_network(Channel channel, int to, int tag, const std::byte* data, std::size_t bytes);
  std::size_t receive_network(const char* call, Channel channel, int from, int tag, std::byte* data,
                              std::size_t capacity);
  // Pieces that came through the network, by sequence number: the layer
  // may reorder messages of different sizes (eager and rendezvous).
  std::map<std::uint64_t, Arrived>& queue(Channel channel, int from) {
    return queues_[static_cast<std::size_t>(channel) * static_cast<std::size_t>(peers_.size()) +
                   static_cast<std::size_t>(from)];
  }
  std::uint64_t& counter(std::vector<std::uint64_t>& counters, Channel channel, int proc) {
    return counters[static_cast<std::size_t>(channel) * static_cast<std::size_t>(peers_.size()) +
                    static_cast<std::size_t>(proc)];
  }

  const Peers& peers_;
  Memory& memory_;
  Progress& progress_;
  Messages& messages_;
  Completions& completions_;
  MessageKind kind_ = 0;
  std::size_t network_piece_ = kSlotBytes;

  std::unique_ptr<Allocation> inboxes_;
  std::vector<std::byte*> inbox_local_;  // per rank, where mapped (self, node neighbours)
  std::vector<int> node_index_;           // per rank: index among its node's members
  int node_slots_ = 0;                    // slots per channel in an inbox

  std::vector<std::uint64_t> sent_;      // per channel and rank: pieces sent (both paths)
  std::vector<std::uint64_t> received_;  // per channel and rank: pieces taken
  std::mutex queues_mutex_;              // handlers run on whichever thread progresses
  std::vector<std::map<std::uint64_t, Arrived>> queues_;
  int any_next_ = 0;  // where wait_any starts looking, so no sender starves
};

}  // namespace armci
