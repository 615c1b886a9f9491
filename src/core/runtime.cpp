#include "src/core/runtime.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "platform/network_factory.hpp"
#include "src/core/error.hpp"
#include "src/core/record.hpp"

namespace armci {

Runtime* Runtime::instance_ = nullptr;

namespace {

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string short_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace

// ------------------------------------------------------------------ start-up

void Runtime::initialize() {
  auto* runtime = new Runtime();
  instance_ = runtime;
  try {
    runtime->start_up();
  } catch (const std::exception& e) {
    fail("ARMCI_Init", "start-up failed: %s", e.what());
  }
  set_cleanup_hook([] {
    if (instance_) instance_->cleanup_names();
  });
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
}

Runtime::~Runtime() = default;

void Runtime::start_up() {
  settings_ = Settings::from_environment();
  bootstrap_ = platform::Bootstrap::create();
  const int rank = bootstrap_->rank();
  const int size = bootstrap_->size();
  set_error_rank(rank);

  // Everyone's host and network address, in one exchange.
  if (size > 1) network_ = platform::make_network(to_string(settings_.network), rank, size);
  RecordWriter record;
  const std::string host = hostname();
  record.add_bytes(std::as_bytes(std::span(host.data(), host.size())));
  std::vector<std::byte> address;
  if (network_) address = network_->local_address();
  record.add_bytes(address);
  auto records = bootstrap_->allgather(record.bytes);
  std::vector<std::string> hosts(static_cast<std::size_t>(size));
  std::vector<std::vector<std::byte>> addresses(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    RecordReader in(records[static_cast<std::size_t>(r)]);
    auto h = in.take_bytes();
    hosts[static_cast<std::size_t>(r)].assign(reinterpret_cast<const char*>(h.data()), h.size());
    addresses[static_cast<std::size_t>(r)] = in.take_bytes();
  }
  peers_ = std::make_unique<Peers>(rank, std::move(hosts), settings_.vnode_size, settings_.shared_memory);

  // Every address stays, self and neighbours included: with network peers,
  // Rmw and mutexes reach every rank through the network layer.
  if (peers_->has_network_peers()) {
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
  if (network_) bootstrap_->set_progress([this] { progress_->progress(); });
  messages_ = std::make_unique<Messages>(*progress_, size);
  memory_ = std::make_unique<Memory>(
      *peers_, *progress_, [this](std::span<const std::byte> mine) { return bootstrap_->allgather(mine); },
      short_hash(bootstrap_->job_id()));
  completions_ = std::make_unique<Completions>(*peers_, *progress_, *messages_, settings_);
  vector_messages_ = std::make_unique<VectorMessages>(*progress_, *messages_, *memory_, *completions_, settings_);
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
  collectives_ = std::make_unique<Collectives>(*peers_, *memory_, *progress_, *messages_, *completions_);
  groups_ = std::make_unique<Groups>(*peers_, *collectives_, *memory_);
  progress_->start_helper();
  if (settings_.verbose > 0 && rank == 0) print_info();
}

void Runtime::print_info() const {
  const int size = peers_->size();
  std::fprintf(stderr, "armci: info: %d processes, bootstrap %s, %d node(s)\n", size, bootstrap_->kind(),
               peers_->node_count());
  std::string text = settings_.describe();
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    std::fprintf(stderr, "armci: info: setting %s\n", text.substr(at, end - at).c_str());
    at = end + 1;
  }
  std::fprintf(stderr, "armci: info: network layer: %s\n",
               network_ ? network_->capabilities().name.c_str() : "none (all peers local)");
  std::fprintf(stderr, "armci: info: Rmw and mutexes: %s\n",
               peers_->has_network_peers() ? "network atomics, to every rank (self included)"
                                           : "CPU atomics on node-shared memory");
  if (network_) {
    // The protocol table: which path a transfer to a network peer takes.
    const platform::Capabilities& caps = network_->capabilities();
    std::fprintf(stderr, "armci: info: layer capabilities: max_sge %zu, max_inline %zu, max_message %zu, %s\n",
                 caps.max_sge, caps.max_inline, caps.max_message,
                 caps.needs_local_registration ? "zero-copy needs registered local memory"
                                               : "registers local memory itself");
    const char* contiguous = "direct (the layer's own protocols)";
    if (settings_.protocol == ProtocolChoice::buffered) contiguous = "buffered (pool of registered buffers) always";
    else if (settings_.protocol == ProtocolChoice::direct) contiguous = "direct always";
    else if (caps.needs_local_registration) contiguous = "buffered from unregistered memory up to ARMCI_BUFFERED_MAX, direct above";
    std::fprintf(stderr, "armci: info: contiguous put/get: %s; pool %zu x %zu bytes\n", contiguous,
                 settings_.buffer_count, settings_.buffer_chunk);
    switch (settings_.strided) {
      case StridedChoice::automatic:
        std::fprintf(stderr,
                     "armci: info: strided/vector: buffered (vector messages of %zu bytes) for pieces up to %zu "
                     "bytes, %s, direct above\n",
                     vector_messages_->message_bytes(), settings_.strided_buffered_max,
                     caps.max_sge > 1 ? ("host-assisted put/get up to " + std::to_string(settings_.strided_host_max) +
                                         " bytes").c_str()
                                      : "no host-assisted (the layer has no SGE lists)");
        break;
      default:
        std::fprintf(stderr, "armci: info: strided/vector: %s for every piece size (host-assisted: put/get only)\n",
                     to_string(settings_.strided));
    }
    std::fprintf(stderr, "armci: info: aggregate handles: pieces up to %zu bytes packed, larger ones sent at once\n",
                 settings_.aggregate_piece_max);
    if (!progress_->helper_running())
      std::fprintf(stderr, "armci: info: offload to the helper: none (no helper thread)\n");
    else if (caps.software_device)
      std::fprintf(stderr, "armci: info: offload to the helper: nonblocking transfers from %zu bytes (software device)\n",
                   settings_.offload_min_software);
    else if (caps.copies_on_caller_same_host)
      std::fprintf(stderr, "armci: info: offload to the helper: nonblocking transfers from %zu bytes to peers on this host\n",
                   settings_.offload_min);
  }
  for (int n = 0; n < peers_->node_count(); ++n) {
    std::string members;
    for (int m : peers_->node_members(n)) members += (members.empty() ? "" : ",") + std::to_string(m);
    std::fprintf(stderr, "armci: info: node %d: ranks %s\n", n, members.c_str());
  }
  for (int r = 0; r < size; ++r)
    std::fprintf(stderr, "armci: info: rank 0 -> rank %d: %s\n", r, to_string(peers_->kind(r)));
}

// ------------------------------------------------------------------ shutdown

void Runtime::shut_down() {
  completions_->all_fence();
  completions_->complete_all_requests();
  progress_->drain_pipelines();
  progress_->drain_background();  // host-assisted transfers served here
  barrier_->wait();
  memory_->free_all();
  sync_.reset();
  groups_.reset();
  collectives_.reset();
  // The last barrier's puts completed locally only; flush them before the
  // peers' control blocks go, and let a bootstrap fence cover the peers'
  // puts into ours.
  if (network_) {
    platform::Completion flushed;
    progress_->with_network([&](platform::Network& net) { net.flush_all(flushed); });
    completions_->wait("ARMCI_Finalize", flushed);
  }
  bootstrap_->fence();
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
