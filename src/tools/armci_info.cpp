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
    "usage: armci_info [-v] [-d] [-s] [-p] [-h]\n"
    "What libarmci is, what it finds and how it would move data, with the settings of this\n"
    "environment (ARMCI_* variables). No option: everything.\n"
    "  -v   version and build options\n"
    "  -d   network layers and devices found, with the capabilities protocols are chosen from\n"
    "  -s   every ARMCI_* setting: its value and whether it came from the environment or the default\n"
    "  -p   the protocol selection table for each kind of peer (self, shm: same node;\n"
    "       net-host: through the network to a rank on this host; net: to another host),\n"
    "       and the one for Rmw and mutexes\n"
    "  -h   this text\n";

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

}  // namespace

int main(int argc, char** argv) {
  bool version = false, devices = false, settings_wanted = false, protocols = false;
  for (int c; (c = getopt(argc, argv, "vdsph")) != -1;) {
    switch (c) {
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
