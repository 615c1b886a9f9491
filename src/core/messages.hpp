// Messages: the registry of control-message kinds, the acks that come back
// for them, and the flow control that bounds unanswered messages per peer.
// A part (or a later layer: collectives, groups, windows) registers its own
// kind with a handler and, when its messages are acked, an ack handler; no
// central enum lists them. Ids are handed out in registration order, so
// every rank must register the same kinds in the same order (parts do so at
// start-up; a later layer, in its collective creation call).
//
// Owns: the kinds, the ack kind, two per-peer counts of messages waiting for
// an ack or an answer: all of them (flow control), and those whose effects
// at the target a fence or a notification must come after.
// Called by: the parts and protocols that send messages (vector messages,
// Acc, host-assisted, collectives), completion (a fence waits until no
// message to a peer has effects pending), Sync (notify must not overtake
// earlier Accs).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/network.hpp"
#include "src/core/progress.hpp"

namespace armci {

using MessageKind = std::uint8_t;

// Whether a fence or a notification to the target must wait for the answers
// to a kind's messages. It must where handling a message reads or writes the
// target's memory (Accs, vector and host-assisted transfers): what follows
// the fence must find it done. A collective's message only feeds the
// receiver's own queue, which its sequence numbers order; waiting for its
// ack would cost a round trip per notification after a reduction and order
// nothing.
enum class Fenced : bool { no, yes };

class Messages {
 public:
  // Runs inside progress (network mutex held). `payload` is valid only
  // during the call.
  using Handler = std::function<void(int source, std::span<const std::byte> header,
                                     std::span<const std::byte> payload)>;
  // The target acked a message of this kind carrying `token`.
  using AckHandler = std::function<void(int source, std::uint64_t token)>;

  Messages(Progress& progress, int size);

  // Registers a kind; with on_ack, the target's send_ack(kind, token) comes
  // back to it. Collective in effect (same order at every rank).
  MessageKind add(std::string name, Handler handler, AckHandler on_ack = {}, Fenced fenced = Fenced::yes);
  const std::string& name(MessageKind kind) const { return kinds_.at(kind).name; }

  // Origin: a message of `kind` to proc that will be acked or answered.
  // Past kInFlightPerPeer unanswered ones of any kind the caller progresses
  // until the target has answered some (its receive buffers are shared by
  // all peers).
  void expect_answer(int proc, MessageKind kind) {
    const auto p = static_cast<std::size_t>(proc);
    auto& pending = in_flight_[p];
    if (pending.load(std::memory_order_acquire) >= kInFlightPerPeer)
      progress_.until([&] { return pending.load(std::memory_order_acquire) < kInFlightPerPeer; });
    pending.fetch_add(1, std::memory_order_relaxed);
    if (kinds_[kind].fenced == Fenced::yes) effects_pending_[p].fetch_add(1, std::memory_order_relaxed);
  }
  // The answer to one of those came in (ack handlers are counted here
  // already; an answer kind calls this itself with the asking kind).
  void answered(int proc, MessageKind kind) {
    const auto p = static_cast<std::size_t>(proc);
    if (kinds_[kind].fenced == Fenced::yes) effects_pending_[p].fetch_sub(1, std::memory_order_release);
    in_flight_[p].fetch_sub(1, std::memory_order_release);
  }
  // Messages to proc whose effects there a fence or notification waits for.
  std::int64_t effects_pending(int proc) const {
    return effects_pending_[static_cast<std::size_t>(proc)].load(std::memory_order_acquire);
  }
  // Every message to proc not answered yet.
  std::int64_t in_flight(int proc) const {
    return in_flight_[static_cast<std::size_t>(proc)].load(std::memory_order_acquire);
  }

  // Origin, network mutex held, right before sending a message of `kind`
  // to proc that proc will ack with `token`. Tokens are the origin's own
  // pointers: an ack is taken only for one sent to that peer and not acked
  // yet, so a peer cannot make the ack handlers write through anything else.
  void await_ack(int proc, MessageKind kind, std::uint64_t token) { ++awaited_[AwaitedAck{proc, kind, token}]; }

  // Target, inside a handler or background work (network mutex held).
  void send_ack(int source, MessageKind kind, std::uint64_t token);

  // Messages a target must answer or ack use its receive buffers until it
  // has; past this many unanswered ones to one peer the origin waits (the
  // verbs layer's shared receive queue has 256 buffers for every peer: two
  // ranks flooding each other with a thousand requests each ended in
  // receiver-not-ready retries that stalled for minutes on a slow device).
  static constexpr std::int64_t kInFlightPerPeer = 32;

 private:
  struct Kind {
    std::string name;
    AckHandler on_ack;
    Fenced fenced = Fenced::yes;
  };
  void handle_ack(int source, std::span<const std::byte> header);

  struct AwaitedAck {
    int proc;
    MessageKind kind;
    std::uint64_t token;
    bool operator==(const AwaitedAck&) const = default;
  };
  struct AwaitedHash {
    std::size_t operator()(const AwaitedAck& a) const {
      return std::hash<std::uint64_t>{}(a.token ^ (std::uint64_t{a.kind} << 56) ^ (std::uint64_t(unsigned(a.proc)) << 32));
    }
  };

  Progress& progress_;
  std::vector<Kind> kinds_;  // index = id
  // Acks owed to this rank: how many of each (peer, kind, token) are out
  // (one token may ride on several messages, e.g. one Acc cut in pieces).
  std::unordered_map<AwaitedAck, std::uint32_t, AwaitedHash> awaited_;
  MessageKind ack_ = 0;
  std::unique_ptr<std::atomic<std::int64_t>[]> in_flight_;
  std::unique_ptr<std::atomic<std::int64_t>[]> effects_pending_;  // the fenced ones of in_flight_
};

}  // namespace armci
