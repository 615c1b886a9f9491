// armci_info: what this installation of libarmci is and would do, in the
// manner of ucx_info and fi_info. It runs as one process without a
// launcher: it opens each network layer of the build on its own (as rank 0
// of 1) to read its capabilities, and builds the same protocol selection
// table the library builds at ARMCI_Init, from the same settings.
#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "platform/network_factory.hpp"
#include "src/core/protocols/choices.hpp"
#include "src/core/protocols/rmw.hpp"
#include "src/core/protocols/table.hpp"
#include "src/core/settings.hpp"

namespace {

const char* const kUsage =
    "usage: armci_info [-v] [-d] [-s] [-p] [-h] [--markdown settings|protocols]\n"
    "What libarmci is, what it finds and how it would move data, with the settings of this\n"
    "environment (ARMCI_* variables). No option: everything.\n"
    "  -v   version and build options\n"
    "  -d   network layers and devices found, with the capabilities protocols are chosen from\n"
    "  -s   every ARMCI_* setting: its value and whether it came from the environment or the default\n"
    "  -p   the protocol selection table for each kind of peer (self, shm: same node;\n"
    "       net-host: through the network to a rank on this host; net: to another host),\n"
    "       and the one for Rmw and mutexes\n"
    "  -h   this text\n"
    "  --markdown settings    every setting with its default and description, as docs/settings.md\n"
    "  --markdown protocols   the selection tables for reference network capabilities, as\n"
    "                         docs/protocols.md (defaults only: the environment is not read)\n";

struct Layer {
  std::string name;
  std::unique_ptr<armci::platform::Network> network;  // null: not available
  std::string why;                                     // when not available
};

std::vector<Layer> open_layers(const armci::Settings& settings) {
  std::vector<Layer> layers;
  std::vector<std::string> names;
#ifdef ARMCI_HAVE_VERBS
  names.push_back("verbs");
#endif
#ifdef ARMCI_HAVE_UCX
  names.push_back("ucx");
#endif
  for (const std::string& name : names) {
    Layer layer{name, nullptr, ""};
    try {
      layer.network = armci::platform::make_network(name, 0, 1, settings.network_options);
    } catch (const std::exception& e) {
      layer.why = e.what();
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

void print_version() {
  std::printf("# version\nlibarmci %s\n", PACKAGE_VERSION);
  std::printf("# build\n");
  std::printf("configure:%s\n", ARMCI_CONFIGURE_ARGS[0] ? ARMCI_CONFIGURE_ARGS : " (no options)");
  std::printf("compiler: g++ %s\n", __VERSION__);
#ifdef ARMCI_HAVE_UCX
  std::printf("network layer ucx: built\n");
#else
  std::printf("network layer ucx: not built\n");
#endif
#ifdef ARMCI_HAVE_VERBS
  std::printf("network layer verbs: built\n");
#else
  std::printf("network layer verbs: not built\n");
#endif
  std::printf("same-node peers: shared memory; bootstrap: PMIx (one process without a server)\n");
}

void print_devices(const std::vector<Layer>& layers, const armci::Settings& settings) {
  std::printf("# network layers (ARMCI_NETWORK=%s: auto takes verbs where a device has an active port)\n",
              armci::to_string(settings.network));
  for (const Layer& layer : layers) {
    if (layer.network) std::printf("%s\n", armci::platform::describe(layer.network->capabilities()).c_str());
    else std::printf("%s: not available: %s\n", layer.name.c_str(), layer.why.c_str());
  }
  if (layers.empty()) std::printf("none built: only same-node peers\n");
}

void print_settings(const armci::Settings& settings) {
  std::printf("# settings\n%s", settings.describe("").c_str());
}

void print_protocols(const std::vector<Layer>& layers, const armci::Settings& settings) {
  using armci::PeerKind;
  // The helper runs unless told not to (a layer without a wakeup
  // descriptor also goes without; both layers here have one).
  const bool helper = settings.helper != armci::HelperMode::none;
  std::printf("# protocols (strided, vector: by piece size; ~cost: the calling thread's, rough)\n");
  const armci::protocols::Table local(nullptr, helper, settings);
  for (PeerKind kind : {PeerKind::self, PeerKind::shared_memory}) {
    std::printf("to %s peers:\n", armci::to_string(kind));
    std::fputs(local.describe(kind, "  ").c_str(), stdout);
  }
  // Rmw and mutexes use one mechanism per job, whoever the peer is.
  std::printf("Rmw and mutexes in a job without network peers:\n");
  std::fputs(armci::protocols::AtomicTable(false).describe("  ").c_str(), stdout);
  if (std::any_of(layers.begin(), layers.end(), [](const Layer& layer) { return layer.network != nullptr; })) {
    std::printf("Rmw and mutexes in a job with network peers (to every rank, self included):\n");
    std::fputs(armci::protocols::AtomicTable(true).describe("  ").c_str(), stdout);
  }
  for (const Layer& layer : layers) {
    if (!layer.network) continue;
    const armci::protocols::Table table(&layer.network->capabilities(), helper, settings);
    for (PeerKind kind : {PeerKind::network_host, PeerKind::network}) {
      std::printf("to %s peers over %s:\n", armci::to_string(kind), layer.name.c_str());
      std::fputs(table.describe(kind, "  ").c_str(), stdout);
    }
  }
  std::printf("windows (a job with network peers) and collectives:\n");
  std::fputs(armci::protocols::describe_windows(settings, true, helper, "  ").c_str(), stdout);
  std::fputs(armci::protocols::describe_collectives("  ").c_str(), stdout);
}

// The generated pages hold what the code says whatever machine prints them:
// defaults, not this environment, and the capabilities of reference devices,
// not the ones found here (armci_info -s and -p show those).
void print_markdown_settings() {
  std::printf(
      "# Settings\n\n"
      "<!-- Generated by `armci_info --markdown settings` (scripts/gen-docs.sh); do not edit. -->\n\n"
      "Every `ARMCI_*` environment variable, read once at `ARMCI_Init` from one table\n"
      "(`src/core/settings.cpp`). A malformed value stops `ARMCI_Init` naming the variable, the\n"
      "value and the range. `armci_info -s` prints each value in the current environment and\n"
      "whether it came from there or the default. UCX's own variables (`UCX_TLS`, ...) apply to\n"
      "the UCX layer.\n\n"
      "| variable | default | meaning |\n|---|---|---|\n");
  for (const armci::Settings::Row& row : armci::Settings().rows())
    std::printf("| `%s` | `%s` | %s |\n", row.name, row.value.c_str(), row.description);
}

armci::platform::Capabilities reference_ucx() {
  armci::platform::Capabilities caps;
  caps.name = "ucx";
  caps.max_sge = 1;
  caps.max_message = std::size_t(1) << 40;
  caps.copies_on_caller_same_host = true;
  return caps;
}

armci::platform::Capabilities reference_verbs(bool software) {
  const armci::platform::VerbsOptions options;
  armci::platform::Capabilities caps;
  caps.name = "verbs";
  caps.max_sge = options.max_sge;
  caps.max_inline = options.max_inline;
  caps.max_message = options.recv_size - 16;
  caps.needs_local_registration = true;
  caps.puts_ordered = true;
  caps.software_device = software;
  return caps;
}

void print_markdown_protocols() {
  using armci::PeerKind;
  const armci::Settings settings;
  std::printf(
      "# Protocols\n\n"
      "<!-- Generated by `armci_info --markdown protocols` (scripts/gen-docs.sh); do not edit. -->\n\n"
      "How a transfer travels is a protocol object (`src/core/protocols/`) named\n"
      "`<operation>/<peer>/<how>`. At `ARMCI_Init` the probes of every protocol build one\n"
      "selection table per (operation, mode, peer kind): the size axis (the piece size for\n"
      "strided and vector calls) is cut at every offer's bounds and each range goes to the\n"
      "cheapest offer (`~cost`: a rough estimate of the calling thread's time, which only has to\n"
      "order the protocols that share a range). A transfer is then one lookup. The ranges are the\n"
      "thresholds of [the settings](settings.md), so changing a setting changes these tables.\n\n"
      "Below: the default settings with the helper thread on, for reference devices.\n"
      "`armci_info -p` prints the tables for this environment and the devices found,\n"
      "`ARMCI_VERBOSE=1` the ones a job uses.\n\n"
      "Peer kinds: `self`; `shm`, a rank on this node through shared memory; `net-host`, a rank\n"
      "on this host through the network layer (`ARMCI_SHM=0`, `ARMCI_VNODE_SIZE`); `net`, a rank\n"
      "on another host.\n\n");
  const armci::protocols::Table local(nullptr, true, settings);
  for (PeerKind kind : {PeerKind::self, PeerKind::shared_memory}) {
    std::printf("## To %s peers\n\n```\n", armci::to_string(kind));
    std::fputs(local.describe(kind, "").c_str(), stdout);
    std::printf("```\n\n");
  }
  struct Reference {
    const char* title;
    armci::platform::Capabilities caps;
  };
  const Reference references[] = {
      {"UCX (no gather lists; registers memory itself; copies on the caller to peers on the same host)",
       reference_ucx()},
      {"verbs on a hardware RNIC (the verbs layer's default options)", reference_verbs(false)},
      {"verbs on a software device, rdma_rxe or siw (the device runs on the posting CPU)", reference_verbs(true)},
  };
  for (const Reference& reference : references) {
    const armci::protocols::Table table(&reference.caps, true, settings);
    for (PeerKind kind : {PeerKind::network_host, PeerKind::network}) {
      std::printf("## To %s peers over %s\n\n```\n", armci::to_string(kind), reference.title);
      std::fputs(table.describe(kind, "").c_str(), stdout);
      std::printf("```\n\n");
    }
  }
  std::printf(
      "## Rmw and mutexes\n\n"
      "One mechanism per job, whoever the peer is: NIC atomics need not be atomic with respect to\n"
      "the CPU's on the same word, so a job with any network peer sends every Rmw and mutex\n"
      "operation through the network layer, self and node neighbours included.\n\n"
      "In a job without network peers:\n\n```\n");
  std::fputs(armci::protocols::AtomicTable(false).describe("").c_str(), stdout);
  std::printf("```\n\nIn a job with network peers:\n\n```\n");
  std::fputs(armci::protocols::AtomicTable(true).describe("").c_str(), stdout);
  std::printf("```\n");
  std::printf(
      "\n## Windows and collectives\n\n"
      "Chosen by the same functions the code dispatches with (`src/core/protocols/choices.cpp`):\n"
      "a window's lock kind, fence kind and reordering once when the window is made, a\n"
      "collective's transport form per message and its all-reduce algorithm per call. A window\n"
      "that spans the network, with the helper thread on:\n\n```\n");
  std::fputs(armci::protocols::describe_windows(settings, true, true, "").c_str(), stdout);
  std::fputs(armci::protocols::describe_collectives("").c_str(), stdout);
  std::printf("```\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool version = false, devices = false, settings_wanted = false, protocols = false;
  const option long_options[] = {{"markdown", required_argument, nullptr, 'm'}, {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "vdsph", long_options, nullptr)) != -1;) {
    switch (c) {
      case 'm':
        if (!std::strcmp(optarg, "settings")) print_markdown_settings();
        else if (!std::strcmp(optarg, "protocols")) print_markdown_protocols();
        else {
          std::fprintf(stderr, "armci_info: --markdown takes settings or protocols, not '%s'\n%s", optarg, kUsage);
          return 2;
        }
        return 0;
      case 'v': version = true; break;
      case 'd': devices = true; break;
      case 's': settings_wanted = true; break;
      case 'p': protocols = true; break;
      case 'h': std::fputs(kUsage, stdout); return 0;
      default: std::fputs(kUsage, stderr); return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "armci_info: unexpected argument '%s'\n%s", argv[optind], kUsage);
    return 2;
  }
  if (!version && !devices && !settings_wanted && !protocols) version = devices = settings_wanted = protocols = true;
  const armci::Settings settings = armci::Settings::from_environment();
  if (version) print_version();
  if (settings_wanted) print_settings(settings);
  if (devices || protocols) {
    const std::vector<Layer> layers = open_layers(settings);
    if (devices) print_devices(layers, settings);
    if (protocols) print_protocols(layers, settings);
  }
  return 0;
}
