#include "src/core/runtime.hpp"

#include <algorithm>
#include <numeric>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "platform/mpi/communicators.hpp"
#include "platform/network_factory.hpp"
#include "src/core/error.hpp"
#include "src/core/peer_failure.hpp"
#include "src/core/segment_names.hpp"
#include "src/core/record.hpp"
#include "src/core/protocols/choices.hpp"

namespace armci {

Runtime* Runtime::instance_ = nullptr;

namespace {

bool message_init_started_mpi = false;
bool message_init_started_runtime = false;

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Ranks that fit the host's CPUs own one each and may poll in their waits;
// more ranks than CPUs must give the CPU away while they wait.
std::chrono::nanoseconds wait_spin(const Settings& settings, const Peers& peers) {
  constexpr long kOwnCpuSpinUs = 200;
  long us = settings.wait_spin_us;
  if (us == kWaitSpinAuto) us = peers.cores_shared_on_host() ? 0 : kOwnCpuSpinUs;
  return std::chrono::microseconds(us);
}

}  // namespace

// ------------------------------------------------------------------ start-up

void Runtime::initialize() { start(nullptr); }

void Runtime::initialize_on(const char* call, void* communicator) {
  // MPI_COMM_WORLD ranks are the launcher's PMIx ranks (Open MPI under a
  // PMIx launcher); the bootstrap checks that this process is the member
  // its rank says.
  std::vector<int> members = platform::mpi::world_ranks_of(communicator);
  if (members.empty())
    fail(call, "argument 'comm' (%p) is not a communicator of a running MPI (MPI_Init first; Open MPI's handles)",
         communicator);
  platform::mpi::set_world(communicator);
  start(&members);
}

void Runtime::start(const std::vector<int>* members) {
  install_terminate_handler();
  set_current_call("ARMCI_Init");
  auto* runtime = new Runtime();
  instance_ = runtime;
  // Before start-up: a segment made at start-up (control blocks, inboxes)
  // must go when start-up fails, a neighbour's too, since the launcher may
  // kill the neighbour before it removes its own.
  set_cleanup_hook([] {
    if (instance_) instance_->cleanup_names();
  });
  try {
    runtime->start_up(members);
  } catch (const std::exception& e) {
    fail("ARMCI_Init", "start-up failed: %s", e.what());
  }
}

void Runtime::finalize() {
  Runtime* runtime = instance_;
  try {
    runtime->shut_down();
  } catch (const std::exception& e) {
    fail("ARMCI_Finalize", "shutdown failed: %s", e.what());
  }
  set_cleanup_hook(nullptr);
  instance_ = nullptr;
  delete runtime;
  platform::mpi::reset_world();
}

Runtime::~Runtime() = default;

void Runtime::message_init(int* argc, char*** argv) {
  if (platform::mpi::start(argc, argv)) message_init_started_mpi = true;
  if (instance_ == nullptr) {
    initialize();
    message_init_started_runtime = true;
  }
}

void Runtime::message_finalize() {
  if (message_init_started_runtime && instance_ != nullptr) finalize();
  message_init_started_runtime = false;
  if (message_init_started_mpi) platform::mpi::stop();
  message_init_started_mpi = false;
}

void Runtime::start_up(const std::vector<int>* members) {
  settings_ = Settings::from_environment();
  set_job_ending(false);
  set_return_on_peer_failure(settings_.return_on_peer_failure);
  bootstrap_ = members ? platform::Bootstrap::create(*members) : platform::Bootstrap::create();
  const int rank = bootstrap_->rank();
  const int size = bootstrap_->size();
  set_error_rank(rank);

  // Everyone's host and network address, in one exchange.
  // A job whose ranks all share memory needs no network layer, so one that
  // cannot start (UCX with a /dev/shm too small for its own segments, say)
  // is an error only once some rank turns out to be on another node.
  std::string network_failure;
  if (size > 1) {
    try {
      network_ = platform::make_network(to_string(settings_.network), rank, size, settings_.network_options);
    } catch (const std::exception& e) {
      network_failure = e.what();
    }
  }
  RecordWriter record;
  const std::string host = hostname();
  record.add_string(host);
  std::vector<std::byte> address;
  if (network_) address = network_->local_address();
  record.add_bytes(address);
  record.add<std::int64_t>(getpid());
  record.add_bytes(allowed_cpus());
  record.add_string(network_failure);
  auto records = bootstrap_->allgather(record.bytes);
  std::vector<std::string> hosts(static_cast<std::size_t>(size));
  std::vector<std::vector<std::byte>> addresses(static_cast<std::size_t>(size));
  std::vector<long> pids(static_cast<std::size_t>(size));
  std::vector<std::vector<std::byte>> cpus_of_host;
  std::string network_failure_anywhere;
  for (int r = 0; r < size; ++r) {
    RecordReader in(records[static_cast<std::size_t>(r)]);
    hosts[static_cast<std::size_t>(r)] = in.take_string();
    addresses[static_cast<std::size_t>(r)] = in.take_bytes();
    pids[static_cast<std::size_t>(r)] = static_cast<long>(in.take<std::int64_t>());
    std::vector<std::byte> cpus = in.take_bytes();
    if (hosts[static_cast<std::size_t>(r)] == host) cpus_of_host.push_back(std::move(cpus));
    // Whether the layer started is decided from everyone's records: a rank
    // that went on alone would make segments and then be killed in the
    // next exchange, leaving them in /dev/shm.
    const std::string failed = in.take_string();
    if (!failed.empty() && network_failure_anywhere.empty())
      network_failure_anywhere = "on rank " + std::to_string(r) + ": " + failed;
  }
  // A dead peer must end our waits, whoever notices first: the launcher's
  // events, or (same host) its process being gone.
  std::vector<pid_t> neighbour_pids(static_cast<std::size_t>(size), 0);
  for (int r = 0; r < size; ++r)
    if (r != rank && hosts[static_cast<std::size_t>(r)] == host)
      neighbour_pids[static_cast<std::size_t>(r)] = static_cast<pid_t>(pids[static_cast<std::size_t>(r)]);
  neighbours_alive_ = std::make_unique<platform::ProcessWatch>(neighbour_pids);
  set_liveness_probe([watch = neighbours_alive_.get()] {
    for (int dead : watch->exited_ranks()) note_peer_failure(dead, "its process has exited");
  });
  bootstrap_->watch_peers([](int dead, const char* why) { note_peer_failure(dead, why); });
  peers_ = std::make_unique<Peers>(rank, std::move(hosts), settings_.vnode_size, settings_.shared_memory,
                                   cpus_in_union(cpus_of_host));

  // Every address stays, self and neighbours included: with network peers,
  // Rmw and mutexes reach every rank through the network layer.
  if (peers_->has_network_peers()) {
    if (!network_failure_anywhere.empty())
      fail("ARMCI_Init", "ranks on other nodes need the network layer, which did not start %s",
           network_failure_anywhere.c_str());
    if (!network_)
      fail("ARMCI_Init", "ranks on other nodes need a network layer, and this build has none "
                         "(configure with UCX)");
    network_->set_peer_addresses(std::move(addresses));
  } else {
    network_.reset();  // nobody to talk to through it
  }

  // The parts, each handed the others it uses. Message kinds are registered
  // as the parts are made: the same order at every rank.
  progress_ = std::make_unique<Progress>(settings_, rank, network_.get());
  Backoff::set_spin(wait_spin(settings_, *peers_));
  bootstrap_->set_progress([this] {
    if (network_) progress_->progress();
    probe_liveness();
  });
  messages_ = std::make_unique<Messages>(*progress_, size);
  memory_ = std::make_unique<Memory>(
      *peers_, *progress_, [this](std::span<const std::byte> mine) { return bootstrap_->allgather(mine); },
      segment_names::job_tag(bootstrap_->job_id()), std::move(pids), malloc_keep_bytes(),
      settings_.shm_fallback);
  set_peer_death_hook([this](int dead) { memory_->forget_rank(dead); });
  completions_ = std::make_unique<Completions>(*peers_, *memory_, *progress_, *messages_, settings_);
  vector_messages_ = std::make_unique<VectorMessages>(*progress_, *messages_, *memory_, *completions_, settings_,
                                                      size);
  completions_->set_send_batches(
      [this](VectorBatches& batches, platform::Completion& c) { vector_messages_->send_all(batches, c); });
  pipeline_ = std::make_unique<Pipeline>(*progress_, settings_);
  progress_->add_background(*pipeline_);
  host_ = std::make_unique<HostAssisted>(*progress_, *messages_, *memory_, *completions_);
  progress_->add_background(*host_);
  transfers_ = std::make_unique<Transfers>(*peers_, *memory_, *progress_, *messages_, *completions_,
                                           *vector_messages_, *pipeline_, *host_, settings_);
  memory_->create_control_blocks([this] { bootstrap_->fence(); });
  barrier_ = std::make_unique<Barrier>(*peers_, *memory_, *progress_, *completions_);
  memory_->set_barrier([this] { barrier_->wait(); });
  sync_ = std::make_unique<Sync>(*peers_, *memory_, *progress_, *completions_, *messages_, *barrier_, *transfers_);
  collectives_ = std::make_unique<Collectives>(*peers_, *memory_, *progress_, *messages_, *completions_, *barrier_);
  groups_ = std::make_unique<Groups>(*peers_, *collectives_, *memory_);
  // From here on allocations exchange their records through the library's
  // own all-gather (node inboxes, network messages): PMIx fences cost
  // milliseconds each.
  std::vector<int> everyone(static_cast<std::size_t>(size));
  std::iota(everyone.begin(), everyone.end(), 0);
  memory_->set_exchange([this, everyone = std::move(everyone)](std::span<const std::byte> mine) {
    return collectives_->allgather(Team{everyone, peers_->rank()}, mine);
  });
  progress_->start_helper();
  if (network_)
    heartbeat_ = std::make_unique<Heartbeat>(*peers_, *progress_, settings_, [this](std::span<const std::byte> mine) {
      return bootstrap_->allgather(mine);
    });
  transfers_->select_protocols();
  if (settings_.verbose > 0 && rank == 0) print_info();
}

std::size_t Runtime::malloc_keep_bytes() const {
  // Spare segments hold /dev/shm that only a collective release gives back,
  // so the node's ranks keep at most a quarter of what was free at start.
  std::size_t keep = settings_.malloc_keep;
  if (!peers_->neighbours_share_memory()) return keep;
  const std::size_t left = platform::shm_space_left();
  const std::size_t ranks = peers_->node_members(peers_->node_of(peers_->rank())).size();
  if (left > 0) keep = std::min(keep, left / 4 / ranks);
  return keep;
}

void Runtime::print_info() const {
  const int size = peers_->size();
  std::fprintf(stderr, "armci: info: %d processes, bootstrap %s, %d node(s)\n", size, bootstrap_->kind(),
               peers_->node_count());
  std::fputs(settings_.describe("armci: info: setting ").c_str(), stderr);
  std::fprintf(stderr, "armci: info: network layer: %s\n",
               network_ ? network_->capabilities().name.c_str() : "none (all peers local)");
  std::fprintf(stderr, "armci: info: Rmw and mutexes, to every rank (one mechanism per job):\n");
  std::fputs(sync_->atomics().describe("armci: info:   ").c_str(), stderr);
  if (network_) {
    const platform::Capabilities& caps = network_->capabilities();
    std::fprintf(stderr, "armci: info: layer: %s\n", platform::describe(caps).c_str());
    std::fprintf(stderr, "armci: info: buffer pool %zu x %zu bytes, vector messages of %zu bytes, helper thread %s\n",
                 settings_.buffer_count, settings_.buffer_chunk, vector_messages_->message_bytes(),
                 progress_->helper_running() ? "running" : "none");
  }
  // The selection table itself, for each kind of peer this job has.
  for (int k = 0; k < kPeerKinds; ++k) {
    const auto kind = static_cast<PeerKind>(k);
    if (!peers_->kind_present(kind)) continue;
    std::fprintf(stderr, "armci: info: protocols to %s peers (strided, vector: by piece size):\n", to_string(kind));
    std::fputs(transfers_->table().describe(kind, "armci: info:   ").c_str(), stderr);
  }
  std::fprintf(stderr, "armci: info: windows and collectives:\n");
  std::fputs(protocols::describe_windows(settings_, network_ != nullptr, progress_->helper_running(), "armci: info:   ")
                 .c_str(),
             stderr);
  std::fputs(protocols::describe_collectives("armci: info:   ").c_str(), stderr);
  for (int n = 0; n < peers_->node_count(); ++n) {
    std::string members;
    for (int m : peers_->node_members(n)) members += (members.empty() ? "" : ",") + std::to_string(m);
    std::fprintf(stderr, "armci: info: node %d: ranks %s\n", n, members.c_str());
  }
  for (int r = 0; r < size; ++r)
    std::fprintf(stderr, "armci: info: rank 0 -> rank %d: %s\n", r, to_string(peers_->kind(r)));
  if (heartbeat_ && heartbeat_->watching())
    std::fprintf(stderr, "armci: info: heartbeat: %s\n", heartbeat_->describe().c_str());
}

// ------------------------------------------------------------------ shutdown

void Runtime::shut_down() {
  // After a peer's death (return mode) nothing collective can finish: this
  // rank drops what it holds on its own, and its names leave /dev/shm
  // (an allocation cut short by the death too, with the dead neighbour's).
  const bool alone = peer_failure_known();
  if (alone) {
    memory_->cleanup_names();
    memory_->remove_names_of(dead_ranks());
  } else {
    completions_->all_fence();
    completions_->complete_all_requests();
    progress_->drain_pipelines();
    progress_->drain_background();  // host-assisted transfers served here
    barrier_->wait();
    set_job_ending(true);
  }
  // Every rank is past the barrier (or this one ends alone), so none waits
  // on a silent peer any more; the counters stay registered until the
  // fence below (later beats may still land in them).
  if (heartbeat_) heartbeat_->stop();
  memory_->free_all();
  sync_.reset();
  groups_.reset();
  collectives_.reset();
  // The last barrier's puts completed locally only; flush them before the
  // peers' control blocks go, and let a bootstrap fence cover the peers'
  // puts into ours.
  if (network_ && !alone) {
    platform::Completion flushed;
    progress_->with_network([&](platform::Network& net) { net.flush_all(flushed); });
    completions_->wait("ARMCI_Finalize", flushed);
  }
  if (!alone) bootstrap_->fence();
  heartbeat_.reset();
  memory_->free_control_blocks();
  bootstrap_->set_progress(nullptr);
  progress_->stop_helper();
  // The helper is gone: what the parts hold of the layer goes back before
  // the layer itself, and each part before the parts it uses.
  if (network_) {
    host_->release_network_resources();
    pipeline_->release_pool();
  }
  transfers_.reset();
  host_.reset();
  pipeline_.reset();
  vector_messages_.reset();
  barrier_.reset();
  completions_.reset();
  memory_.reset();
  messages_.reset();
  progress_.reset();
  network_.reset();
  bootstrap_.reset();
}

void Runtime::cleanup_names() {
  if (memory_) memory_->cleanup_names();
}

}  // namespace armci
