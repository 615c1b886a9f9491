#include "src/core/settings.hpp"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <type_traits>

#include "src/core/error.hpp"
#include "src/core/names.hpp"

namespace armci {
namespace {

long long parse_number(const char* name, const char* text, long long minimum, long long maximum, int base) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, base);
  if (errno == 0 && end != text && *end == '\0' && value >= minimum && value <= maximum) return value;
  if (maximum == LLONG_MAX) fail("ARMCI_Init", "setting %s='%s' is not an integer >= %lld", name, text, minimum);
  fail("ARMCI_Init", "setting %s='%s' is not an integer in [%lld, %lld]", name, text, minimum, maximum);
}

template <typename Table>
auto parse_choice(const char* name, const char* text, const Table& table) {
  std::string allowed;
  for (const auto& row : table) {
    if (!std::strcmp(text, row.name)) return row.value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(row.name);
  }
  fail("ARMCI_Init", "setting %s='%s' is not one of %s", name, text, allowed.c_str());
}

// The words of the settings that take one from a list, in the order the
// error for any other word lists them.
constexpr Named<NetworkChoice> kNetworks[] = {{"auto", NetworkChoice::automatic}, {"ucx", NetworkChoice::ucx},
                                              {"verbs", NetworkChoice::verbs}};
constexpr Named<HelperMode> kHelperModes[] = {{"block", HelperMode::block}, {"spin", HelperMode::spin},
                                              {"none", HelperMode::none}};
// Every strided protocol; ARMCI_PROTOCOL (contiguous) takes all but host.
constexpr Named<ProtocolChoice> kStridedProtocols[] = {{"auto", ProtocolChoice::automatic},
    {"direct", ProtocolChoice::direct}, {"buffered", ProtocolChoice::buffered}, {"host", ProtocolChoice::host}};
constexpr std::span<const Named<ProtocolChoice>> kProtocols{kStridedProtocols, 3};
constexpr Named<WinReorder> kWinReorders[] = {{"none", WinReorder::none}, {"gets-first", WinReorder::gets_first},
                                              {"combine", WinReorder::combine}};
constexpr Named<WinFence> kWinFences[] = {{"immediate", WinFence::immediate}, {"deferred", WinFence::deferred},
                                          {"counted", WinFence::counted}};
constexpr Named<WinLockMigrate> kWinLockMigrations[] = {{"pinned", WinLockMigrate::pinned},
    {"always", WinLockMigrate::always}, {"after:N", WinLockMigrate::after}};
constexpr Named<ShmFallback> kShmFallbacks[] = {{"memfd", ShmFallback::memfd}, {"network", ShmFallback::network},
                                                {"error", ShmFallback::error}, {"always", ShmFallback::always}};
constexpr Named<bool> kOnPeerFailure[] = {{"abort", false}, {"return", true}};
constexpr Named<bool> kUcxErrModes[] = {{"none", false}, {"peer", true}};

// One row of the table: how a variable's text becomes settings, and how the
// settings show it again.
struct Entry {
  const char* name;
  const char* description;  // one line, for armci_info and docs/settings.md
  void (*parse)(Settings& s, const char* name, const char* text);
  std::string (*show)(const Settings& s);
};

// A number kept in one field; field(s) names it. The verbs layer's numbers
// have always taken C's prefixes (0x...): base 0.
template <auto field, long long minimum, long long maximum = LLONG_MAX, int base = 10>
constexpr Entry number(const char* name, const char* description) {
  return {name, description,
          [](Settings& s, const char* n, const char* text) {
            auto& value = field(s);
            value = static_cast<std::remove_reference_t<decltype(value)>>(parse_number(n, text, minimum, maximum, base));
          },
          [](const Settings& s) { return std::to_string(field(const_cast<Settings&>(s))); }};
}

template <auto field, long long minimum, long long maximum>
constexpr Entry verbs_number(const char* name, const char* description) {
  return number<field, minimum, maximum, 0>(name, description);
}

// A word of table kept in one field.
template <auto field, const auto& table>
constexpr Entry choice(const char* name, const char* description) {
  return {name, description, [](Settings& s, const char* n, const char* text) { field(s) = parse_choice(n, text, table); },
          [](const Settings& s) -> std::string { return name_of(table, field(const_cast<Settings&>(s))); }};
}

#define FIELD(member) [](Settings & s) -> auto& { return s.member; }
#define VERBS(member) [](Settings & s) -> auto& { return s.network_options.verbs.member; }

const Entry kEntries[] = {
    choice<FIELD(network), kNetworks>("ARMCI_NETWORK",
        "network layer for peers not reached through shared memory: auto takes verbs where a device has "
        "an active port, else UCX"),
    {"ARMCI_SHM",
     "1: same-node peers through shared memory; 0: through the network layer",
     [](Settings& s, const char* n, const char* text) { s.shared_memory = parse_number(n, text, 0, LLONG_MAX, 10) != 0; },
     [](const Settings& s) { return std::string(s.shared_memory ? "1" : "0"); }},
    number<FIELD(vnode_size), 0, INT_MAX>("ARMCI_VNODE_SIZE",
        "every k consecutive ranks of a host form one virtual node, so network paths run between local "
        "processes (tests); 0: the whole host"),
    number<FIELD(verbose), 0, INT_MAX>("ARMCI_VERBOSE",
        "1: rank 0 prints the settings, the network layer, the protocol tables, the node map and how it "
        "reaches each peer"),
    {"ARMCI_ACC_CHUNK",
     "bytes: largest piece of one Acc message to a network peer",
     [](Settings& s, const char* n, const char* text) {
       // Whole elements of every type.
       s.acc_chunk = static_cast<std::size_t>(parse_number(n, text, 64, LLONG_MAX, 10)) & ~std::size_t{15};
     },
     [](const Settings& s) { return std::to_string(s.acc_chunk); }},
    // The old spelling of ARMCI_HELPER=none; ARMCI_HELPER, after it, wins.
    {"ARMCI_PROGRESS_THREAD",
     "0: the old spelling of ARMCI_HELPER=none",
     [](Settings& s, const char* n, const char* text) {
       s.helper = parse_number(n, text, 0, 1, 10) != 0 ? HelperMode::block : HelperMode::none;
     },
     [](const Settings& s) { return std::string(s.helper == HelperMode::none ? "0" : "1"); }},
    choice<FIELD(helper), kHelperModes>("ARMCI_HELPER",
        "the helper thread that serves peers while the application computes: block (sleeps on the "
        "network's wakeup), spin (polls first), none (no thread)"),
    number<FIELD(helper_spin_us), 0>("ARMCI_HELPER_SPIN_US",
        "microseconds a spin helper polls before it blocks"),
    {"ARMCI_HELPER_CPU",
     "where the helper runs: auto (off the application's CPU when the process may use another), none "
     "(left to the kernel), or a CPU number",
     [](Settings& s, const char* n, const char* text) {
       if (!std::strcmp(text, "auto")) s.helper_cpu = kHelperCpuAuto;
       else if (!std::strcmp(text, "none")) s.helper_cpu = kHelperCpuNone;
       else s.helper_cpu = static_cast<int>(parse_number(n, text, 0, INT_MAX, 10));
     },
     [](const Settings& s) {
       return s.helper_cpu == kHelperCpuAuto ? std::string("auto")
              : s.helper_cpu == kHelperCpuNone ? std::string("none")
                                               : std::to_string(s.helper_cpu);
     }},
    number<FIELD(progress_idle_us), 1, 999999>("ARMCI_PROGRESS_IDLE_US",
        "microseconds the application must stay out of the library before the helper takes over the network"),
    {"ARMCI_WAIT_SPIN_US",
     "microseconds a waiting rank polls before it yields its CPU; auto: 200 when the host's ranks "
     "fit their CPUs, 0 when oversubscribed",
     [](Settings& s, const char* n, const char* text) {
       s.wait_spin_us = !std::strcmp(text, "auto") ? kWaitSpinAuto : parse_number(n, text, 0, 10000000, 10);
     },
     [](const Settings& s) { return s.wait_spin_us == kWaitSpinAuto ? std::string("auto") : std::to_string(s.wait_spin_us); }},
    choice<FIELD(protocol), kProtocols>("ARMCI_PROTOCOL",
        "contiguous put/get to a network peer: direct (zero-copy), buffered (through the registered "
        "pool), or auto (the selection table)"),
    number<FIELD(buffered_max), 0>("ARMCI_BUFFERED_MAX",
        "bytes: auto takes buffered for unregistered memory up to here (0: never)"),
    number<FIELD(buffer_chunk), 4096>("ARMCI_BUFFER_CHUNK",
        "bytes of one buffer of the registered pool"),
    number<FIELD(buffer_count), 2>("ARMCI_BUFFER_COUNT",
        "buffers in the registered pool (made on first use)"),
    {"ARMCI_OFFLOAD_MIN",
     "bytes (or off): nonblocking transfers from this size whose data the layer moves with the "
     "posting CPU are handed to the helper thread",
     [](Settings& s, const char* n, const char* text) {
       s.offload_min = s.offload_min_software =
           !std::strcmp(text, "off") ? SIZE_MAX : static_cast<std::size_t>(parse_number(n, text, 0, LLONG_MAX, 10));
     },
     [](const Settings& s) {
       if (s.offload_min == SIZE_MAX) return std::string("off");
       if (s.offload_min == s.offload_min_software) return std::to_string(s.offload_min);
       return std::to_string(s.offload_min) + " (software verbs device: " + std::to_string(s.offload_min_software) + ")";
     }},
    number<FIELD(max_pending), 1>("ARMCI_MAX_PENDING",
        "unfinished nonblocking operations before the oldest is completed to make room"),
    number<FIELD(win_sync_timeout_s), 0>("ARMCI_WIN_SYNC_TIMEOUT",
        "seconds a window's PSCW start/wait or fence waits for the other members before it names the "
        "missing rank (0: no limit)"),
    choice<FIELD(win_reorder), kWinReorders>("ARMCI_WIN_REORDER",
        "puts and accs of a window epoch: none (issued at once), gets-first (held until the closing "
        "synchronisation), combine (also packed into vector messages)"),
    choice<FIELD(win_fence), kWinFences>("ARMCI_WIN_FENCE",
        "design of a window's fence: immediate (flags per pair), deferred (held, sent as messages, "
        "counted by a reduction), counted (notified puts)"),
    {"ARMCI_WIN_LOCK_MIGRATE",
     "whether a window lock that spans the network moves to CPU atomics for node neighbours: pinned "
     "(never), always, after:N locks in a row",
     [](Settings& s, const char* n, const char* text) {
       if (!std::strncmp(text, "after:", 6)) {
         s.win_lock_migrate = WinLockMigrate::after;
         s.win_lock_migrate_after = static_cast<unsigned>(parse_number(n, text + 6, 1, 1 << 30, 10));
         return;
       }
       s.win_lock_migrate = parse_choice(n, text, kWinLockMigrations);
       if (s.win_lock_migrate == WinLockMigrate::after) fail("ARMCI_Init", "setting %s='%s': N must be a number", n, text);
       s.win_lock_migrate_after = 1;
     },
     [](const Settings& s) -> std::string {
       if (s.win_lock_migrate == WinLockMigrate::after) return "after:" + std::to_string(s.win_lock_migrate_after);
       return name_of(kWinLockMigrations, s.win_lock_migrate);
     }},
    number<FIELD(heartbeat_ms), 0, 3600000>("ARMCI_HEARTBEAT_MS",
        "milliseconds between heartbeats to the watching ranks of other hosts (0: off)"),
    number<FIELD(heartbeat_timeout_ms), 1, 86400000>("ARMCI_HEARTBEAT_TIMEOUT_MS",
        "milliseconds of heartbeat silence after which a rank of another host counts as dead"),
    number<FIELD(aggregate_bytes), 1024>("ARMCI_AGGREGATE_BYTES",
        "bytes of one vector message of an aggregate handle (the layer's message size if smaller)"),
    number<FIELD(aggregate_piece_max), 0>("ARMCI_AGGREGATE_PIECE_MAX",
        "bytes: operations on an aggregate handle up to this size are packed into one vector message "
        "per peer"),
    choice<FIELD(strided), kStridedProtocols>("ARMCI_STRIDED_PROTOCOL",
        "strided and vector transfers to a network peer: buffered (vector messages), direct "
        "(gather/scatter lists), host (target's helper posts them), or auto"),
    number<FIELD(strided_buffered_max), 0>("ARMCI_STRIDED_BUFFERED_MAX",
        "piece bytes up to which auto packs strided pieces into vector messages"),
    number<FIELD(strided_host_max), 0>("ARMCI_STRIDED_HOST_MAX",
        "piece bytes up to which auto takes host-assisted strided put/get where the layer has gather lists"),
    number<FIELD(malloc_keep), 0>("ARMCI_MALLOC_KEEP",
        "bytes of freed ARMCI_Malloc parts a rank keeps mapped for later allocations (at most a quarter "
        "of the /dev/shm free at start-up)"),
    choice<FIELD(shm_fallback), kShmFallbacks>("ARMCI_SHM_FALLBACK",
        "a shared segment /dev/shm cannot hold: memfd (anonymous memory file), network (private memory "
        "reached through the network), error, always (tests)"),
    choice<FIELD(return_on_peer_failure), kOnPeerFailure>("ARMCI_ON_PEER_FAILURE",
        "what survivors do when a peer dies: abort (end with an error naming the rank) or return (calls "
        "return ARMCI_ERR_PEER_DEAD)"),
    choice<FIELD(network_options.ucx.detect_failures), kUcxErrModes>("ARMCI_UCX_ERR_MODE",
        "peer: UCX endpoints detect failed peers (UCX 1.13 then refuses its shared-memory transports); none"),
    {"ARMCI_VERBS_DEVICE",
     "verbs device by name (rxe0, mlx5_0)",
     [](Settings& s, const char*, const char* text) { s.network_options.verbs.device = text; },
     [](const Settings& s) {
       return s.network_options.verbs.device.empty() ? std::string("(first with an active port)")
                                                     : s.network_options.verbs.device;
     }},
    verbs_number<VERBS(port), 0, 255>("ARMCI_VERBS_PORT",
        "verbs port number (0: the first active)"),
    {"ARMCI_VERBS_GID_INDEX",
     "GID table index on RoCE (auto: IPv4-mapped RoCE v2, else 0); the same GID type on every host",
     [](Settings& s, const char* n, const char* text) {
       s.network_options.verbs.gid_index = static_cast<int>(parse_number(n, text, 0, 1 << 16, 0));
     },
     [](const Settings& s) {
       const int index = s.network_options.verbs.gid_index;
       return index < 0 ? std::string("auto") : std::to_string(index);
     }},
    verbs_number<VERBS(recv_size), 256, 1ll << 30>("ARMCI_VERBS_RECV_SIZE",
        "bytes of one receive buffer; the largest control message is this less 16 (equal across the job)"),
    verbs_number<VERBS(recv_count), 16, 1 << 20>("ARMCI_VERBS_RECV_COUNT",
        "receive buffers on the shared receive queue"),
    verbs_number<VERBS(send_buffers), 1, 1 << 20>("ARMCI_VERBS_SEND_BUFFERS",
        "registered send buffers for control messages"),
    verbs_number<VERBS(bounce_size), 64, 1 << 24>("ARMCI_VERBS_BOUNCE_SIZE",
        "bytes: small unregistered put/get up to here are copied through a bounce buffer"),
    verbs_number<VERBS(bounce_count), 1, 1 << 20>("ARMCI_VERBS_BOUNCE_COUNT",
        "bounce buffers"),
    verbs_number<VERBS(sq_depth), 4, 1 << 16>("ARMCI_VERBS_SQ_DEPTH",
        "send queue entries per RC queue pair"),
    verbs_number<VERBS(cq_size), 16, 1 << 22>("ARMCI_VERBS_CQ_SIZE",
        "RC requests in flight, all peers together"),
    verbs_number<VERBS(max_inline), 0, 4096>("ARMCI_VERBS_MAX_INLINE",
        "inline bytes asked of the device"),
    verbs_number<VERBS(max_sge), 1, 32>("ARMCI_VERBS_MAX_SGE",
        "gather/scatter entries per request (at most the device's)"),
    verbs_number<VERBS(max_msg), 0, 1ll << 31>("ARMCI_VERBS_MAX_MSG",
        "bytes per work request (0: the port's max_msg_sz, at most 1 GiB)"),
    verbs_number<VERBS(rd_atomic), 1, 255>("ARMCI_VERBS_RD_ATOMIC",
        "RDMA reads and atomics in flight per queue pair (at most the device's)"),
    verbs_number<VERBS(sl), 0, 15>("ARMCI_VERBS_SL",
        "InfiniBand service level"),
    verbs_number<VERBS(timeout), 1, 31>("ARMCI_VERBS_TIMEOUT",
        "RC ack timeout exponent (4.096 us * 2^N; 14 is 67 ms); 18 where acks come late (Soft-RoCE, "
        "congested fabrics)"),
    verbs_number<VERBS(retry_cnt), 0, 7>("ARMCI_VERBS_RETRY_CNT",
        "RC transport retries before a queue pair fails"),
    {"ARMCI_VERBS_CONNECT_TIMEOUT",
     "seconds before an unanswered connection handshake is an error (0: never)",
     [](Settings& s, const char* n, const char* text) {
       s.network_options.verbs.connect_timeout = static_cast<double>(parse_number(n, text, 0, 1ll << 30, 0));
     },
     [](const Settings& s) { return std::to_string(static_cast<long long>(s.network_options.verbs.connect_timeout)); }},
    verbs_number<VERBS(connect_retry_ms), 1, 60000>("ARMCI_VERBS_CONNECT_RETRY_MS",
        "milliseconds before the first handshake retransmission (doubling to 1 s)"),
    {"ARMCI_VERBS_DEBUG",
     "1: trace connection handshakes on stderr",
     [](Settings& s, const char* n, const char* text) {
       s.network_options.verbs.debug = parse_number(n, text, 0, 1, 0) != 0;
     },
     [](const Settings& s) { return std::string(s.network_options.verbs.debug ? "1" : "0"); }},
    verbs_number<VERBS(reg_cache), 0, 1ll << 46>("ARMCI_VERBS_REG_CACHE",
        "bytes of user memory the verbs layer keeps registered between transfers (0: no cache)"),
};

#undef FIELD
#undef VERBS

}  // namespace

const char* to_string(HelperMode mode) { return name_of(kHelperModes, mode); }
const char* to_string(ProtocolChoice choice) { return name_of(kStridedProtocols, choice); }
const char* to_string(WinReorder reorder) { return name_of(kWinReorders, reorder); }
const char* to_string(WinFence fence) { return name_of(kWinFences, fence); }
const char* to_string(NetworkChoice choice) { return name_of(kNetworks, choice); }

Settings Settings::from_environment() {
  Settings s;
  s.from_environment_.assign(std::size(kEntries), false);
  for (std::size_t i = 0; i < std::size(kEntries); ++i) {
    const char* text = std::getenv(kEntries[i].name);
    if (text == nullptr || *text == '\0') continue;
    kEntries[i].parse(s, kEntries[i].name, text);
    s.from_environment_[i] = true;
  }
  return s;
}

std::vector<Settings::Row> Settings::rows() const {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < std::size(kEntries); ++i)
    rows.push_back({kEntries[i].name, kEntries[i].description, kEntries[i].show(*this),
                    i < from_environment_.size() && from_environment_[i] ? "environment" : "default"});
  return rows;
}

std::string Settings::describe(const char* prefix) const {
  std::string out;
  for (const Row& row : rows()) out += std::string(prefix) + row.name + "=" + row.value + " (" + row.source + ")\n";
  return out;
}

}  // namespace armci
