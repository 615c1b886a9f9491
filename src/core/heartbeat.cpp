#include "src/core/heartbeat.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/core/peer_failure.hpp"
#include "src/core/record.hpp"

namespace armci {

Heartbeat::Heartbeat(const Peers& peers, Progress& progress, const Settings& settings, const Allgather& allgather)
    : peers_(peers),
      progress_(progress),
      period_(settings.heartbeat_ms),
      timeout_(settings.heartbeat_timeout_ms) {
  // Hosts in the order of their first rank, each with its ranks: every rank
  // computes the same map.
  std::vector<std::vector<int>> members;
  std::vector<std::size_t> host_of(static_cast<std::size_t>(peers.size()));
  std::vector<int> index_of(static_cast<std::size_t>(peers.size()));
  for (int r = 0; r < peers.size(); ++r) {
    const auto known = std::find(host_names_.begin(), host_names_.end(), peers.host(r));
    const auto h = static_cast<std::size_t>(known - host_names_.begin());
    if (known == host_names_.end()) {
      host_names_.push_back(peers.host(r));
      members.emplace_back();
    }
    index_of[static_cast<std::size_t>(r)] = static_cast<int>(members[h].size());
    members[h].push_back(r);
    host_of[static_cast<std::size_t>(r)] = h;
  }
  if (host_names_.size() < 2) return;  // the same answer at every rank: no exchange
  if (period_.count() > 0 && timeout_ < 2 * period_)
    fail("ARMCI_Init", "ARMCI_HEARTBEAT_TIMEOUT_MS=%lld must be at least twice ARMCI_HEARTBEAT_MS=%lld",
         static_cast<long long>(timeout_.count()), static_cast<long long>(period_.count()));

  const int me = peers.rank();
  const auto mine = partners(members, host_of[static_cast<std::size_t>(me)], index_of[static_cast<std::size_t>(me)]);

  // Each rank publishes whether it beats and where its counters are.
  RecordWriter record;
  std::vector<std::byte> packed;
  if (period_.count() > 0) {
    counters_.assign(mine.size(), 0);
    progress_.with_network([&](platform::Network& net) {
      registration_ = net.register_memory(counters_.data(), counters_.size() * sizeof(std::uint64_t));
      packed = net.pack_remote_key(registration_);
    });
  }
  record.add<std::uint8_t>(period_.count() > 0 ? 1 : 0);
  record.add<std::uint64_t>(reinterpret_cast<std::uintptr_t>(counters_.data()));
  record.add_bytes(packed);
  const auto records = allgather(record.bytes);
  if (period_.count() == 0) return;

  const auto start = std::chrono::steady_clock::now();
  last_check_ = start;
  progress_.with_network([&](platform::Network& net) {
    for (std::size_t slot = 0; slot < mine.size(); ++slot) {
      const int rank = mine[slot];
      const auto r = static_cast<std::size_t>(rank);
      RecordReader in(records[r]);
      if (in.take<std::uint8_t>() == 0) continue;  // it neither beats nor watches
      const auto address = in.take<std::uint64_t>();
      const auto key = in.take_bytes();
      // This rank's counter over there: its place among that rank's partners.
      const auto theirs = partners(members, host_of[r], index_of[r]);
      const auto there = static_cast<std::size_t>(std::find(theirs.begin(), theirs.end(), me) - theirs.begin());
      targets_.emplace_back(rank, address + there * sizeof(std::uint64_t), net.unpack_remote_key(rank, key));
      watched_.push_back({rank, slot, host_of[r], 0, start, false});
    }
  });
  thread_ = std::thread([this] {
    name_this_thread("armci-heartbeat");
    run();
  });
}

std::vector<int> Heartbeat::partners(const std::vector<std::vector<int>>& hosts, std::size_t host, int index) {
  std::vector<int> found;
  const int mine = static_cast<int>(hosts[host].size());
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (h == host) continue;
    const int count = static_cast<int>(hosts[h].size());
    const int m = std::min(mine, count);
    for (int j = index % m; j < count; j += m) found.push_back(hosts[h][static_cast<std::size_t>(j)]);
  }
  return found;
}

Heartbeat::~Heartbeat() {
  stop();
  if (!registration_ && targets_.empty()) return;
  progress_.with_network([&](platform::Network& net) {
    for (const Target& t : targets_) net.release_remote_key(t.key);
    if (registration_) net.deregister_memory(registration_);
  });
}

std::string Heartbeat::describe() const {
  std::string beats, watches;
  for (const Target& t : targets_) beats += (beats.empty() ? "" : ",") + std::to_string(t.rank);
  for (const Watched& w : watched_)
    watches += (watches.empty() ? "" : ", ") + ("rank " + std::to_string(w.rank) + " (" + host_names_[w.host] + ")");
  if (beats.empty() && watches.empty()) return "off";
  return "every " + std::to_string(period_.count()) + " ms to rank(s) " + (beats.empty() ? "none" : beats) +
         "; watching " + (watches.empty() ? "none" : watches) + ", dead after " + std::to_string(timeout_.count()) +
         " ms of silence";
}

void Heartbeat::stop() {
  {
    std::lock_guard guard(stop_mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  stop_signal_.notify_all();
  thread_.join();
  // The last beats' puts read their sources and count on their completions until they complete.
  progress_.until(
      [this] { return std::all_of(targets_.begin(), targets_.end(), [](const Target& t) { return t.sent.done(); }); });
}

void Heartbeat::run() {
  std::unique_lock lock(stop_mutex_);
  while (!stopping_) {
    lock.unlock();
    beat();
    check(std::chrono::steady_clock::now());
    lock.lock();
    stop_signal_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

void Heartbeat::beat() {
  // One round of the layer's progress first: nobody else may be reaping
  // (the application computes, the helper sleeps armed for peers only),
  // and a layer that moves puts in software needs it at the target too.
  progress_.aside([this](platform::Network& net) {
    for (Target& t : targets_) {
      // Its last beat still on its way (a lost or stalled rank): no second
      // one behind it, and the others' beats not held back for it, or its
      // silence would read as this rank's at theirs.
      if (!t.sent.done()) continue;
      t.sent.error.store(0, std::memory_order_relaxed);  // silence is what counts, not a failed put
      ++t.beat;
      const platform::LocalSegment source{&t.beat, sizeof t.beat};
      net.put(t.rank, std::span(&source, 1), t.address, t.key, t.sent);
    }
  });
}

void Heartbeat::check(std::chrono::steady_clock::time_point now) {
  // This thread itself got no CPU for a while (a stalled virtual machine, an
  // overloaded host): the peers' beats may still be on their way to us, so
  // silence is judged from now on rather than read as their death.
  const bool was_away = now - last_check_ > timeout_ / 2;
  last_check_ = now;
  for (Watched& w : watched_) {
    const std::uint64_t seen = std::atomic_ref(counters_[w.slot]).load(std::memory_order_relaxed);
    if (seen != w.last || w.reported || was_away) {
      w.last = seen;
      w.since = now;
      continue;
    }
    if (now - w.since < timeout_) continue;
    w.reported = true;
    char why[160];
    std::snprintf(why, sizeof why, "no heartbeat from host %s for %.1f s", host_names_[w.host].c_str(),
                  std::chrono::duration<double>(now - w.since).count());
    note_peer_failure(w.rank, why);
  }
}

}  // namespace armci
