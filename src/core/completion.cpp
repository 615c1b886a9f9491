#include "src/core/completion.hpp"

#include <atomic>
#include <cstring>

#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/peer_failure.hpp"

namespace armci {

Completions::Completions(const Peers& peers, const Memory& memory, Progress& progress, Messages& messages,
                         const Settings& settings)
    : peers_(peers),
      memory_(memory),
      progress_(progress),
      messages_(messages),
      settings_(settings),
      implicit_(std::make_unique<platform::Completion[]>(static_cast<std::size_t>(peers.size()))),
      puts_unordered_(static_cast<std::size_t>(peers.size()), 0) {}

void Completions::network_failed(const char* call, int error) {
  const std::string text = progress_.has_network()
                               ? progress_.with_network([&](platform::Network& net) { return net.error_string(error); })
                               : std::string("?");
  // The error may be a death's first sign: then the error is the death,
  // naming the rank (and in return mode ARMCI_ERR_PEER_DEAD, not the end).
  const int peer =
      progress_.has_network() ? progress_.with_network([&](platform::Network& net) { return net.error_peer(error); })
                              : -1;
  if (await_peer_failure(peer, kNetworkErrorGrace))
    peer_dead(peer >= 0 ? peer : peer_failure_detail::g_first_dead.load(std::memory_order_relaxed));
  // Named after the user's call: `call` may be an internal step of it (the
  // fence that orders a Put after earlier ones).
  const char* user_call = current_call();
  if (std::strcmp(user_call, call) == 0)
    fail(user_call, "the network layer reported: %s", text.c_str());
  fail(user_call, "the network layer reported: %s (in %s)", text.c_str(), call);
}

void Completions::order_after_puts(int proc, bool full_flush) {
  auto& unordered = puts_unordered_[static_cast<std::size_t>(proc)];
  if (!unordered) return;
  if (full_flush) {
    platform::Completion flushed;
    progress_.with_network([&](platform::Network& net) { net.flush(proc, flushed); });
    wait("ARMCI_Fence", flushed);
  } else if (!progress_.capabilities().puts_ordered) {
    progress_.with_network([&](platform::Network& net) { net.order(proc); });
  }
  unordered = 0;
}

bool Completions::writes_outstanding() const {
  if (!progress_.has_network()) return false;
  for (int r = 0; r < peers_.size(); ++r)
    if (puts_unordered_[static_cast<std::size_t>(r)] || messages_.effects_pending(r) != 0) return true;
  return false;
}

void Completions::fence(int proc) {
  if (!memory_.reached_through_network(proc)) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  progress_.drain_pipelines();
  platform::Completion flushed;
  progress_.with_network([&](platform::Network& net) { net.flush(proc, flushed); });
  wait("ARMCI_Fence", flushed);
  progress_.until([&] { return messages_.effects_pending(proc) == 0; });
  puts_unordered_[static_cast<std::size_t>(proc)] = 0;
}

void Completions::order_before_next(int proc) {
  if (!memory_.reached_through_network(proc)) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  // A neighbour with parts in network memory: what comes next may be a CPU
  // access, which the layer's ordering does not cover.
  if (!peers_.reached_by_network(proc)) {
    fence(proc);
    return;
  }
  progress_.drain_pipelines();
  if (messages_.effects_pending(proc) != 0) {
    fence(proc);
    return;
  }
  progress_.with_network([&](platform::Network& net) { net.order(proc); });
  puts_unordered_[static_cast<std::size_t>(proc)] = 0;
}

void Completions::all_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!progress_.has_network()) return;
  progress_.drain_pipelines();
  platform::Completion flushed;
  progress_.with_network([&](platform::Network& net) { net.flush_all(flushed); });
  wait("ARMCI_AllFence", flushed);
  for (int r = 0; r < peers_.size(); ++r) {
    progress_.until([&] { return messages_.effects_pending(r) == 0; });
    puts_unordered_[static_cast<std::size_t>(r)] = 0;
  }
}

void Completions::wait_all() {
  for (int r = 0; r < peers_.size(); ++r) wait("ARMCI_WaitAll", implicit(r));
}

void Completions::limit_implicit(int proc) {
  platform::Completion& c = implicit(proc);
  if (static_cast<std::size_t>(c.pending.load(std::memory_order_relaxed)) <= settings_.max_pending) return;
  progress_.until([&] {
    return static_cast<std::size_t>(c.pending.load(std::memory_order_acquire)) <= settings_.max_pending / 2;
  });
}

void Completions::note_pending(Requests::Id id) {
  pending_.push_back(id);
  if (pending_.size() <= settings_.max_pending) return;
  // Completes the oldest request still unfinished; its slot stays the
  // user's until Wait or Test.
  const Requests::Id oldest = pending_.front();
  pending_.pop_front();
  if (ExplicitRequest* request = requests_.find(oldest))
    complete("ARMCI_Nb* (completing the oldest request to make room)", *request);
}

void Completions::complete_all_requests() {
  requests_.for_each_busy([&](Requests::Id, ExplicitRequest& request) {
    send_unsent(request);
    progress_.until([&] { return request.completion.done(); });
  });
}

}  // namespace armci
