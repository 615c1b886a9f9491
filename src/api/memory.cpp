// Collective and local memory: ARMCI_Malloc, ARMCI_Free, *_local.
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
  // Cache-line alignment keeps small transfers from straddling lines.
  if (posix_memalign(&p, 64, bytes > 0 ? static_cast<std::size_t>(bytes) : 1) != 0)
    fail("ARMCI_Malloc_local", "out of memory for %ld bytes", bytes);
  return p;
}

ARMCI_API(int, ARMCI_Free_local, (void* ptr)) {
  runtime("ARMCI_Free_local");
  std::free(ptr);
  return 0;
}
