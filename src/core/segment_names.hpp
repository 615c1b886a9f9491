// Names of the shared segments in /dev/shm: "armci-<job>-<pid>-<rank>-<id>",
// <job> a hash of the launcher's job id, <pid> the creator. A segment's name
// goes as soon as every neighbour has mapped it; what a killed job leaves
// behind in between is found by these names (armci_cleanup: by job, or by a
// creator that is gone). Shared by the library and the armci_cleanup tool.
#pragma once

#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace armci::segment_names {

constexpr const char* kPrefix = "armci-";

// 16 hex digits (FNV-1a) of the launcher's job id.
inline std::string job_tag(const std::string& job_id) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : job_id) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// The shm_open name (leading '/').
inline std::string name(const std::string& tag, long pid, int rank, std::uint64_t id) {
  return "/" + std::string(kPrefix) + tag + "-" + std::to_string(pid) + "-" + std::to_string(rank) + "-" +
         std::to_string(id);
}

struct Parsed {
  std::string tag;
  long pid;
};

// A /dev/shm entry (no leading '/') made by this library, or nothing.
inline std::optional<Parsed> parse(const std::string& entry) {
  const std::string prefix = kPrefix;
  if (entry.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  char tag[17] = {};
  long pid = 0;
  int rank = 0;
  unsigned long long id = 0;
  int end = 0;
  if (std::sscanf(entry.c_str() + prefix.size(), "%16[0-9a-f]-%ld-%d-%llu%n", tag, &pid, &rank, &id, &end) != 4 ||
      entry.size() != prefix.size() + static_cast<std::size_t>(end) || std::string(tag).size() != 16)
    return std::nullopt;
  return Parsed{tag, pid};
}

// Calls visit(entry, parsed) for every /dev/shm entry this library made
// (any job); false when /dev/shm cannot be read.
template <typename Visit>
bool for_each(Visit visit) {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return false;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (const auto parsed = parse(name)) visit(name, *parsed);
  }
  closedir(dir);
  return true;
}

}  // namespace armci::segment_names
