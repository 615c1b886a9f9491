// The rest of ARMCI-MPI 0.3.1's surface: ARMCI_Init_thread, the memdev
// allocations, ARMCI_Set_shm_limit, ARMCI_Access_begin/end, ARMCI_Copy,
// ARMCIX_Progress.
#include <cstring>

#include "include/armcix.h"
#include "src/api/api.hpp"

using namespace armci::api;
using armci::fail;

ARMCI_API(int, ARMCI_Init_thread, (int armci_requested)) { return PARMCI_Init(); }

ARMCI_API(int, ARMCI_Malloc_memdev, (void** base_ptrs, armci_size_t bytes, const char* device)) {
  return PARMCI_Malloc(base_ptrs, bytes);
}

ARMCI_API(int, ARMCI_Free_memdev, (void* ptr)) { return PARMCI_Free(ptr); }

ARMCI_API(void, ARMCI_Set_shm_limit, (unsigned long shmemlimit)) {}

ARMCI_API(void, ARMCI_Access_begin, (void* ptr)) {
  armci::Runtime& r = runtime("ARMCI_Access_begin");
  if (ptr == nullptr) fail("ARMCI_Access_begin", "argument 'ptr' is NULL");
  r.memory().check_remote("ARMCI_Access_begin", "ptr", r.rank(), ptr, 1);
}

ARMCI_API(void, ARMCI_Access_end, (void* ptr)) {
  armci::Runtime& r = runtime("ARMCI_Access_end");
  if (ptr == nullptr) fail("ARMCI_Access_end", "argument 'ptr' is NULL");
  r.memory().check_remote("ARMCI_Access_end", "ptr", r.rank(), ptr, 1);
}

ARMCI_API(void, ARMCI_Copy, (void* src, void* dst, int size)) {
  check_bytes("ARMCI_Copy", size);
  check_pointer("ARMCI_Copy", "src", src, size);
  check_pointer("ARMCI_Copy", "dst", dst, size);
  if (size > 0) std::memmove(dst, src, static_cast<std::size_t>(size));
}

ARMCI_API(void, ARMCIX_Progress, (void)) { runtime("ARMCIX_Progress").progress().progress(); }
