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

#include <sys/types.h>

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

class Barrier;
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
              Completions& completions, Barrier& barrier);
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
  // data: count elements of element_bytes each. combine(into, from, n):
  // into = into (op) from for n elements; it need not be commutative in
  // its bits (max of -0 and +0): every member ends with the same bits.
  using Combine = std::function<void(void* into, const void* from, std::size_t count)>;
  void allreduce(const Team& team, void* data, std::size_t count, std::size_t element_bytes, const Combine& combine);
  // Everyone's record, by team index.
  std::vector<std::vector<std::byte>> allgather(const Team& team, std::span<const std::byte> mine);

  // Every node message is announced by a cell in a ring per pair, and a
  // short one travels inside its cell: the sender writes one cache line
  // and the receiver reads it, where separate flag, length and data lines
  // cost four transfers each way. kCells messages may be ahead of their
  // receiver: a sender that may run only a message or two ahead (a root
  // broadcasting back to back) waits for its receiver's time slice
  // wherever ranks share cores.
  static constexpr int kCells = 32;
  static constexpr std::size_t kCellBytes = 128;
  // Bytes a cell carries itself; the first 40 share the cache line of
  // its sequence number.
  static constexpr std::size_t kInlineBytes = 104;
  // Longer messages follow their cell in pieces through slots of this many
  // bytes, up to kDepth of them ahead of the receiver. Every rank's inbox
  // holds channels x node size x kDepth slots made at ARMCI_Init, so this is
  // /dev/shm that every job pays for before its first ARMCI_Malloc (and it
  // grows with the square of the ranks per node): 4 x 64 KiB took 2 MiB per
  // rank at 4 ranks and left a shared-memory-only job unable to start in a
  // 1 MiB /dev/shm.
  static constexpr std::size_t kSlotBytes = 16 * 1024;
  static constexpr int kDepth = 2;
  // Longer messages to a node neighbour are read by the receiver straight
  // from the sender's buffer (cross-memory attach) where the kernel allows
  // it: one copy instead of two, and no slot hand-offs. Shorter ones keep
  // the slots, so a send of up to kDepth pieces still never waits for the
  // receiver (programs exchanging armci_msg_snd both ways rely on it).
  static constexpr std::size_t kSingleCopyMin = kSlotBytes * kDepth + 1;
  // The library's own collectives never count on a send being buffered, so
  // theirs go single-copy as soon as they would need a second slot: two
  // slot hand-offs cost more than one copy from the sender's buffer.
  static constexpr std::size_t kCollectiveSingleCopyMin = kSlotBytes + 1;
  // All-reduces up to here exchange whole buffers (recursive doubling);
  // longer ones reduce a share each and gather the shares.
  static constexpr std::size_t kWholeBufferReduceMax = 8 * 1024;
  // Where each member's share is this long, an all-reduce among node
  // neighbours that read each other's memory goes direct: each reads its
  // share from every other member, combines it and writes the result back
  // into them, a stretch at a time; shorter shares do not repay the
  // system calls. Not for two members with a core each: see
  // reduces_through_slots.
  static constexpr std::size_t kDirectShareMin = 16 * 1024;
  // Long enough to amortise a system call, short enough to stay in cache.
  static constexpr std::size_t kDirectStretch = 128 * 1024;

  // The choices post() and allreduce() make, as functions of exactly what
  // they dispatch on, so that the protocol table's rows (protocols/
  // choices.hpp: armci_info -p, ARMCI_VERBOSE) and the tests read the
  // rules that run.
  // How one message to a member travels: the network layer's messages,
  // inside its cell, in slot pieces, or read by the receiver straight from
  // the sender's buffer (single_copy: every node neighbour reads every
  // other's memory).
  enum class Form : std::uint8_t { network, inline_cell, pieces, single_copy };
  static constexpr Form form_of(bool local, bool single_copy, Channel channel, std::size_t bytes) {
    if (!local) return Form::network;
    if (bytes <= kInlineBytes) return Form::inline_cell;
    if (single_copy && bytes >= (channel == Channel::collective ? kCollectiveSingleCopyMin : kSingleCopyMin))
      return Form::single_copy;
    return Form::pieces;
  }
  // An all-reduce of bytes (count elements) over n members: direct among
  // node neighbours (may_go_direct(): single copies, every member on this
  // node, not two members with a core each), else recursive doubling over
  // whole buffers or recursive halving over shares among the largest power
  // of two of members.
  enum class Reduction : std::uint8_t { direct, recursive_doubling, recursive_halving };
  template <class MayGoDirect>
  static constexpr Reduction reduction_of(std::size_t bytes, std::size_t count, int n, MayGoDirect may_go_direct) {
    if (bytes / static_cast<std::size_t>(n) >= kDirectShareMin && may_go_direct()) return Reduction::direct;
    if (bytes <= kWholeBufferReduceMax || count < static_cast<std::size_t>(power_of_two_below(n)))
      return Reduction::recursive_doubling;
    return Reduction::recursive_halving;
  }
  static constexpr int power_of_two_below(int n) {
    int members = 1;
    while (members * 2 <= n) members *= 2;
    return members;
  }
  static const char* name(Form form);
  static const char* name(Reduction reduction);

 private:
  struct Cell;
  struct Slot;
  struct Consumed;
  struct Share;
  struct InboxHeader;
  // A message started towards `to`: done once `finish` returns.
  struct Posted {
    // Made by post() or value-initialised ({}: nothing to wait for); no
    // member initialisers, so an array of them costs nothing to declare.
    int to;
    Channel channel;
    std::uint64_t single_copy_sequence;  // 0: nothing left to wait for
  };
  // A message the receiver has seen announced: in its cell, pieces or a
  // single copy to follow.
  struct Announced {
    Cell* cell;
    std::uint64_t sequence;
    std::size_t total;
  };
  Announced await_cell(Channel channel, int from);
  struct Arrived {
    int tag;
    std::uint64_t total;
    std::vector<std::byte> bytes;
  };

  // Where message `sequence` (from 1) from sender to receiver is announced,
  // where piece `piece` (from 1) of the longer ones goes through, and how
  // far the receiver has taken the sender's messages.
  Cell* cell_at(int receiver, Channel channel, int sender, std::uint64_t sequence) const;
  Slot* slot_at(int receiver, Channel channel, int sender, std::uint64_t piece) const;
  Consumed* consumed_at(int receiver, Channel channel, int sender) const;
  Share* share_at(int receiver, Channel channel, int sender) const;
  // The next chunk of message `sequence` nobody has taken yet, or -1.
  static std::int64_t claim(Share* share, std::uint64_t sequence, std::uint64_t chunks);
  // A broadcast root copies chunks into a reader that asked for them:
  // false once none is left to take.
  bool push_chunk(const Posted& reader, const std::byte* data, std::size_t bytes, std::size_t chunk);
  bool consumed(const Posted& posted);
  std::size_t pair_index(Channel channel, int sender) const {
    return static_cast<std::size_t>(channel) * static_cast<std::size_t>(node_slots_) +
           static_cast<std::size_t>(node_index_[static_cast<std::size_t>(sender)]);
  }
  // A free cell for our next message to `to`: the one kCells back taken.
  Cell* next_cell(Channel channel, int to, std::uint64_t sequence);
  bool local(int proc) const { return inbox_local_[static_cast<std::size_t>(proc)] != nullptr; }
  InboxHeader* header_of(int proc) const;
  // shared_chunk > 0: a broadcast's single copy that the root helps with,
  // in chunks of this many bytes (Share).
  Posted post(Channel channel, int to, int tag, const void* data, std::size_t bytes,
              std::uint64_t shared_chunk = 0);
  void finish(const Posted& posted);
  // Sends `out` to partner and receives its message into `in`, as both
  // call it: never two blocked senders.
  // A receive that combines what arrives into the buffer instead of
  // overwriting it.
  struct Folding {
    const Combine& combine;
    std::size_t element_bytes;
  };
  // through_slots: the slot copies even where single copies are possible
  // (both ends must pass the same).
  void exchange(int partner, const void* out, std::size_t out_bytes, void* in, std::size_t in_bytes,
                const Folding* fold = nullptr, bool through_slots = false);
  std::size_t receive_local_or_network(const char* call, Channel channel, int from, int tag, std::byte* into,
                                       std::size_t capacity, const Folding* fold);
  void probe_single_copy(Barrier& barrier);
  void allreduce_whole(const Team& team, int members, std::byte* data, std::size_t bytes, std::size_t count,
                       const Combine& combine);
  void allreduce_shares(const Team& team, int members, std::byte* data, std::size_t count, std::size_t element_bytes,
                        const Combine& combine);
  void allreduce_direct(const Team& team, std::byte* data, std::size_t count, std::size_t element_bytes,
                        const Combine& combine);
  bool all_local(const Team& team) const;
  bool reduces_through_slots(const Team& team) const;
  pid_t pid_of(int proc) const;
  bool waiting(Channel channel, int from);
  // The length of the next message from `from`, once its first piece is
  // here (it stays to be received).
  std::size_t next_length(Channel channel, int from);
  // The binomial tree of a broadcast: receive_from(member) once (but at the
  // root), then post_to(member) for each child, then finishes those.
  // (A template, not std::function: a broadcast of 8 bytes spent more on
  // allocating the two callables than on the message.)
  template <typename ReceiveFrom, typename PostTo>
  void broadcast_tree(const Team& team, int root, ReceiveFrom&& receive_from, PostTo&& post_to);
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
  bool single_copy_ = false;              // every node neighbour can read every other's memory
  bool cores_shared_ = false;             // more ranks on this node than CPUs
  std::vector<std::byte> scratch_;        // all-reduce: the partner's data
  std::vector<std::byte> stretch_;        // a cache-sized piece read from a sender, combined at once
  std::vector<std::uint64_t> vectors_;    // direct all-reduce: every member's vector, by team index

  std::vector<std::uint64_t> sent_;      // per channel and rank: messages (node) or pieces (network) sent
  std::vector<std::uint64_t> received_;  // per channel and rank: the same, taken
  std::vector<std::uint64_t> pieces_sent_;      // per channel and node neighbour: slot pieces
  std::vector<std::uint64_t> pieces_received_;  // per channel and node neighbour
  std::vector<std::uint64_t> consumed_seen_;    // per channel and node neighbour: its last known progress
  std::mutex queues_mutex_;              // handlers run on whichever thread progresses
  std::vector<std::map<std::uint64_t, Arrived>> queues_;
  int any_next_ = 0;  // where wait_any starts looking, so no sender starves
};

}  // namespace armci
