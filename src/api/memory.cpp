// Collective and local memory: ARMCI_Malloc, ARMCI_Free, *_local.
#include <unistd.h>

#include <cstring>

#include "src/api/api.hpp"

using namespace armci::api;
using armci::fail;

ARMCI_API_PEERS(int, ARMCI_Malloc, (void** base_ptrs, armci_size_t bytes)) {
  armci::Runtime& r = runtime("ARMCI_Malloc");
  armci::require_all_alive("ARMCI_Malloc");
  if (base_ptrs == nullptr) fail("ARMCI_Malloc", "argument 'base_ptrs' is NULL");
  if (bytes < 0) fail("ARMCI_Malloc", "argument 'bytes' (%ld) is negative", bytes);
  auto bases = r.allocate("ARMCI_Malloc", static_cast<std::size_t>(bytes));
  std::memcpy(base_ptrs, bases.data(), bases.size() * sizeof(void*));
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API_PEERS(int, ARMCI_Free, (void* ptr)) {
  armci::Runtime& r = runtime("ARMCI_Free");
  armci::require_all_alive("ARMCI_Free");
  r.release("ARMCI_Free", ptr);
  return 0;
} ARMCI_PEERS_END(int)

ARMCI_API(void*, ARMCI_Malloc_local, (armci_size_t bytes)) {
  runtime("ARMCI_Malloc_local");
  if (bytes < 0) fail("ARMCI_Malloc_local", "argument 'bytes' (%ld) is negative", bytes);
  void* p = nullptr;
  // Cache-line alignment keeps small transfers from straddling lines. From
  // 64 KiB a page's: ARMCI_Malloc's blocks start on one, so a patch moved
  // between the same offsets of both (a GA buffer and its array) is copied
  // with source and destination at one page offset, where the CPU's copy
  // is fastest (64 B apart, a get from cold memory takes ~10% longer).
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t alignment = bytes >= 64 * 1024 ? page : 64;
  if (posix_memalign(&p, alignment, bytes > 0 ? static_cast<std::size_t>(bytes) : 1) != 0)
    fail("ARMCI_Malloc_local", "out of memory for %ld bytes", bytes);
  return p;
}

ARMCI_API(int, ARMCI_Free_local, (void* ptr)) {
  runtime("ARMCI_Free_local");
  std::free(ptr);
  return 0;
}
