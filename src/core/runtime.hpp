// The runtime: builds the parts of the core at ARMCI_Init, wires them, and
// takes them down at ARMCI_Finalize. Each part has its own header saying
// what it owns and who calls it:
//
//   peers.hpp            rank, size, hosts, nodes, how each peer is reached
//   progress.hpp         the network mutex, waiting loops, the helper thread
//   messages.hpp         message kinds and their handlers, acks, flow control
//   memory.hpp           collective allocations, regions, control blocks
//   completion.hpp       wait/test, ordering, fences, requests, handles' limits
//   barrier.hpp          the dissemination barrier
//   vector_messages.hpp  pieces batched into messages the target applies
//   pipeline.hpp         chunked transfers (buffered, offload)
//   host_assisted.hpp    strided transfers the target's helper posts
//   transfers.hpp        where every put/get/acc starts, and how it travels
//   sync.hpp             Rmw, mutexes, notify, Put_flag
//   collectives.hpp      point-to-point channels, armci_msg collectives
//   groups.hpp           process groups and their allocations
//
// The API reaches the parts through the accessors below; parts reach each
// other through the references the runtime hands them, never through it.
#pragma once

#include "platform/shm/liveness.hpp"

#include <cstddef>
#include <memory>
#include <vector>

#include "platform/network.hpp"
#include "platform/pmix/bootstrap.hpp"
#include "src/core/barrier.hpp"
#include "src/core/collectives.hpp"
#include "src/core/completion.hpp"
#include "src/core/groups.hpp"
#include "src/core/heartbeat.hpp"
#include "src/core/host_assisted.hpp"
#include "src/core/memory.hpp"
#include "src/core/messages.hpp"
#include "src/core/peers.hpp"
#include "src/core/pipeline.hpp"
#include "src/core/progress.hpp"
#include "src/core/settings.hpp"
#include "src/core/sync.hpp"
#include "src/core/transfers.hpp"
#include "src/core/vector_messages.hpp"

namespace armci {

class Runtime {
 public:
  static void initialize();
  // ARMCI_Init_mpi_comm: the world is communicator's members in its rank
  // order (ARMCI rank = rank in communicator); the processes outside it
  // take no part. Fails naming call when communicator is no communicator
  // of a running MPI.
  static void initialize_on(const char* call, void* communicator);
  static void finalize();
  static Runtime* get() { return instance_; }
  // armci_msg_init / armci_msg_finalize, GA's rule: MPI is started when the
  // program holds it and has not, and ended only by the finalize of the
  // init that started it; the runtime likewise (ARMCI_Init and
  // ARMCI_Finalize may come between).
  static void message_init(int* argc, char*** argv);
  static void message_finalize();

  const Settings& settings() const { return settings_; }
  const Peers& peers() const { return *peers_; }
  Progress& progress() { return *progress_; }
  Messages& messages() { return *messages_; }
  Memory& memory() { return *memory_; }
  Completions& completion() { return *completions_; }
  Transfers& transfers() { return *transfers_; }
  VectorMessages& vector_messages() { return *vector_messages_; }
  Sync& sync() { return *sync_; }
  Collectives& collectives() { return *collectives_; }
  Groups& groups() { return *groups_; }
  int rank() const { return peers_->rank(); }
  int size() const { return peers_->size(); }

  // Collective calls that span parts.
  std::vector<void*> allocate(const char* call, std::size_t bytes) { return memory_->allocate(call, bytes); }
  void release(const char* call, void* my_base) {
    completions_->all_fence();
    memory_->release(call, my_base);
  }
  void barrier() {
    completions_->all_fence();
    barrier_->wait();
  }

  // Removes shared-memory names that are still linked; safe on error paths.
  void cleanup_names();
  ~Runtime();

 private:
  Runtime() = default;
  static void start(const std::vector<int>* members);
  // members: the PMIx ranks of the world, by ARMCI rank; null: the job.
  void start_up(const std::vector<int>* members);
  void shut_down();
  void print_info() const;
  // ARMCI_MALLOC_KEEP within this node's share of /dev/shm.
  std::size_t malloc_keep_bytes() const;

  // Hidden: every entry point loads it, and no code outside the library
  // does; a load from the GOT first would be one more cache miss.
  [[gnu::visibility("hidden")]] static Runtime* instance_;

  Settings settings_;
  std::unique_ptr<platform::Bootstrap> bootstrap_;
  std::unique_ptr<platform::Network> network_;
  std::unique_ptr<Peers> peers_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<Messages> messages_;
  std::unique_ptr<Memory> memory_;
  std::unique_ptr<Completions> completions_;
  std::unique_ptr<Barrier> barrier_;
  std::unique_ptr<VectorMessages> vector_messages_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<HostAssisted> host_;
  std::unique_ptr<Transfers> transfers_;
  std::unique_ptr<Sync> sync_;
  std::unique_ptr<Collectives> collectives_;
  std::unique_ptr<Groups> groups_;
  std::unique_ptr<platform::ProcessWatch> neighbours_alive_;  // same-host peers' processes
  std::unique_ptr<Heartbeat> heartbeat_;                      // peers on other hosts
};

}  // namespace armci
