// Word atomics as protocol objects: how ARMCI_Rmw and the mutexes' queue
// lock change a word at some rank. Like the transfer protocols
// (protocol.hpp) each has a probe, and a table built once at start-up says
// which serves each word operation; Sync then makes one lookup per call.
//
//   rmw/shm/cpu-atomic    CPU atomics on the node-shared mapping;
//   rmw/net/native-atomic one network atomic of the layer (64-bit
//                         fetch-and-add, compare-and-swap);
//   rmw/net/cas-emulated  a compare-and-swap loop through the layer, for what
//                         it has no atomic for (swap; 32-bit lanes, since
//                         network atomics are 64-bit).
//
// The mechanism is one per job (sync.hpp says why): with any network peer
// every word, even this process's own, goes through the network layer, so
// the probes look at the job, not at the peer. The mutexes are one
// algorithm (an MCS queue lock, mutexes.cpp) over these word operations;
// the table names which protocols serve it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "platform/network.hpp"

namespace armci::protocols {

// The word operations. 64-bit words unless named 32 (a lane of one).
enum class WordOp : std::uint8_t { fetch_add, compare_swap, swap, fetch_add32, swap32 };
constexpr int kWordOps = 5;
const char* to_string(WordOp op);

// A 64-bit word (or a 32-bit lane) at some rank: through this process's
// mapping (local) or through the network (key).
struct Word {
  int proc = -1;
  std::uintptr_t address = 0;  // in proc's address space
  platform::RemoteKey key{};
  std::byte* local = nullptr;
};

// One network atomic on a 64-bit word, ordered after this rank's earlier
// puts to the word's rank and waited for (Sync provides it).
class NetworkWords {
 public:
  virtual std::uint64_t network_fetch_add(const char* call, const Word& word, std::uint64_t value) = 0;
  virtual std::uint64_t network_compare_swap(const char* call, const Word& word, std::uint64_t expected,
                                             std::uint64_t desired) = 0;
  // The value last seen in the word: the first guess of a compare-and-swap loop.
  virtual std::uint64_t guess(const Word& word) const = 0;

 protected:
  ~NetworkWords() = default;
};

// What a probe looks at; fixed once the runtime has started.
struct AtomicSituation {
  WordOp op;
  bool network_peers;  // some rank of the job is reached through the network
};

struct AtomicProtocol {
  const char* name;  // after "rmw/": "net/native-atomic"
  bool network;      // goes through the network layer (callers order around it)
  // A rough estimate of one operation's time (us); nothing: does not apply.
  std::optional<double> (*probe)(const AtomicSituation&);
  // Returns the old value (of the lane for the 32-bit operations).
  // compare_swap: `value` is the expected value; the others ignore `desired`.
  std::uint64_t (*apply)(NetworkWords& network, const char* call, const Word& word, WordOp op, std::uint64_t value,
                         std::uint64_t desired);
};

// Every word-atomic protocol; selection goes by the probes, not by order.
std::span<const AtomicProtocol* const> atomic_protocols();

class AtomicTable {
 public:
  // Empty until built.
  AtomicTable() = default;
  explicit AtomicTable(bool network_peers);

  const AtomicProtocol& find(WordOp op) const { return *choices_[static_cast<std::size_t>(op)].protocol; }
  // Every choice goes through the network layer (one mechanism per job).
  bool network() const { return network_; }

  // One line per word operation and one for the mutexes, each prefixed.
  std::string describe(const char* prefix) const;

 private:
  struct Choice {
    const AtomicProtocol* protocol = nullptr;
    double cost_us = 0;
  };
  std::array<Choice, kWordOps> choices_{};
  bool network_ = false;
};

}  // namespace armci::protocols
