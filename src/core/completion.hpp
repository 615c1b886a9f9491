// Completion: waiting for and testing operations, the order of blocking
// operations to one target, fences, the requests behind explicit handles,
// the completions behind implicit ones, and the bounds on unfinished work.
//
// Owns: the request table, the list of pending explicit requests, one
// implicit completion per peer, the per-peer "puts not yet ordered" flags.
// Called by: the API (Wait, Test, WaitProc, WaitAll, Fence, handles), every
// protocol (wait, order_after_puts, note_put), Sync (ordering, fences before
// an unlock), the runtime (barrier, free, shutdown), windows (epochs end in
// fences) and peer-failure handling (waits that must give up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "platform/network.hpp"
#include "src/core/messages.hpp"
#include "src/core/peers.hpp"
#include "src/core/progress.hpp"
#include "src/core/request_table.hpp"
#include "src/core/settings.hpp"
#include "src/core/vector_messages.hpp"

namespace armci {

struct ExplicitRequest {
  platform::Completion completion;
  int peer = -1;
  VectorBatches batches;  // an aggregate handle's operations not sent yet
  void reset() {
    completion.pending.store(0, std::memory_order_relaxed);
    completion.error.store(0, std::memory_order_relaxed);
    peer = -1;
    batches.clear();
  }
};

class Memory;

class Completions {
 public:
  using Requests = RequestTable<ExplicitRequest>;
  // Sends an aggregate handle's vector messages (then empties the list).
  using SendBatches = std::function<void(VectorBatches&, platform::Completion&)>;

  // memory: which peers some operation may reach through the network layer
  // (a neighbour's part in network memory counts, not only network peers).
  Completions(const Peers& peers, const Memory& memory, Progress& progress, Messages& messages,
              const Settings& settings);

  // Wiring: how a request's unsent vector messages leave before it is waited for.
  void set_send_batches(SendBatches send) { send_batches_ = std::move(send); }

  void wait(const char* call, platform::Completion& completion) {
    progress_.until([&] { return completion.done(); });
    check(call, completion);
  }
  // advance_pipelines=false: only the layer's own progress, leaving the
  // chunks of buffered and offloaded transfers to the helper (right after
  // a nonblocking call started them).
  bool test(const char* call, platform::Completion& completion, bool advance_pipelines = true) {
    if (!completion.done()) progress_.progress(advance_pipelines);
    if (!completion.done()) return false;
    check(call, completion);
    return true;
  }

  // Blocking operations to one target must be seen in order; a put from the
  // network layer is not ordered with what follows it unless told so.
  // note_put: a put to proc left through the network. order_after_puts: what
  // follows is ordered after those puts (full_flush: they are complete at
  // the target, for gets and messages that a target's helper applies).
  void note_put(int proc) { puts_unordered_[static_cast<std::size_t>(proc)] = 1; }
  void order_after_puts(int proc, bool full_flush);
  // Some network put or message of this rank may still be on its way.
  bool writes_outstanding() const;

  void fence(int proc);
  void all_fence();
  // Everything this rank issued to proc is applied there before the next
  // network operation to proc: only an ordering point when nothing but
  // one-sided transfers (already complete here) remains, so the next
  // operation's completion implies theirs and one round trip is saved; the
  // full fence while messages or pipeline chunks are still out.
  void order_before_next(int proc);

  // Implicit handles (NULL): one completion per target.
  platform::Completion& implicit(int proc) { return implicit_[static_cast<std::size_t>(proc)]; }
  void limit_implicit(int proc);
  void wait_proc(int proc) { wait("ARMCI_WaitProc", implicit(proc)); }
  void wait_all();

  // Explicit handles.
  Requests& requests() { return requests_; }
  // An aggregate handle's vector messages leave (Test, Wait).
  void send_unsent(ExplicitRequest& request) {
    if (!request.batches.empty()) send_batches_(request.batches, request.completion);
  }
  // Sends what the request still holds and waits for it.
  void complete(const char* call, ExplicitRequest& request) {
    send_unsent(request);
    wait(call, request.completion);
  }
  // Nonblocking operations left unfinished: past max_pending the oldest is
  // completed, so the network's queues and buffers stay bounded however
  // many the application keeps in flight.
  void note_pending(Requests::Id id);
  // Shutdown: requests the user never waited for may still be writing into
  // memory that is about to go.
  void complete_all_requests();

 private:
  void check(const char* call, platform::Completion& completion) {
    if (int error = completion.error.load(); error != 0) [[unlikely]]
      network_failed(call, error);
  }
  [[noreturn]] void network_failed(const char* call, int error);

  const Peers& peers_;
  const Memory& memory_;
  Progress& progress_;
  Messages& messages_;
  const Settings& settings_;
  SendBatches send_batches_;
  std::unique_ptr<platform::Completion[]> implicit_;
  std::vector<std::uint8_t> puts_unordered_;  // per network peer
  Requests requests_;
  std::deque<Requests::Id> pending_;  // explicit requests, oldest first
};

}  // namespace armci
