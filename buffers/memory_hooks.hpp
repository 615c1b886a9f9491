// Process-wide notice of memory being given back, so that a cached network
// registration of memory that was freed or unmapped is never used again: once
// the pages go, the same virtual addresses can come back backed by other
// physical pages, and a stale registration would move the wrong bytes.
//
// libarmci defines free, realloc, munmap, mremap and madvise itself. Being
// found before libc in the process's symbol search order, these take every
// call made through the dynamic linker, report the range to the listeners and
// forward to glibc. Built with UCX, releases that UCX's own hooks intercept
// (it patches the code of munmap/mremap/madvise, possibly ours) are heard
// through UCX's VM_UNMAPPED event instead. What is not seen (see
// active_memory_hooks() for the process at hand):
//  * free/realloc when another allocator owns them (jemalloc or tcmalloc
//    ahead of libarmci, ASan, TSan, UCX's malloc hooks): its blocks go back to
//    it unreported. Its munmap/madvise calls through libc are still heard,
//    which covers pages it returns to the system; a block it recycles keeps
//    its pages, so a registration of it stays valid;
//  * releases inside glibc that skip the dynamic linker other than through
//    free/realloc (thread stacks, dlclose), shmdt, brk/sbrk, mmap(MAP_FIXED)
//    over a mapping, raw system calls, and the target range of
//    mremap(MREMAP_FIXED) when UCX has patched mremap.
// Building with -DARMCI_NO_MEMORY_HOOKS leaves the five functions out (for
// sanitizer builds that link the library statically, or where another layer
// must own these symbols); listeners then hear UCX's events and
// notify_release() only.
#pragma once

#include <cstdint>

namespace armci::buffers {

// Called on the thread that releases [begin, end), before the memory goes, so
// that no thread can register the same addresses anew in between. It may run
// inside free(), while glibc or the caller holds locks: it must be quick and
// must not wait on anything a freeing thread could hold. It may allocate and
// free (nested releases on the same thread are not reported again). It must
// not add or remove listeners.
using ReleaseListener = void (*)(void* ctx, std::uintptr_t begin, std::uintptr_t end);

inline constexpr int kMaxReleaseListeners = 8;

// Returns an id for remove_release_listener, or -1 when all slots are taken.
int add_release_listener(ReleaseListener fn, void* ctx) noexcept;

// Once this returns, `fn` runs on no thread and will not be called again, so
// its context may be destroyed. Must not be called from inside a listener.
void remove_release_listener(int id) noexcept;

// Releases outside [begin, end) need not reach listener `id` (a new listener
// hears everything). Checked before the listener is entered, without touching
// any shared cache line, so that a listener interested in a few buffers does
// not make every free() in the process pay for it. Releases that race with the
// narrowing may be missed: only widen before handing out what needs it.
void set_release_interest(int id, std::uintptr_t begin, std::uintptr_t end) noexcept;

// Reports a release that the hooks cannot see (e.g. before shmdt, or when the
// hooks are compiled out).
void notify_release(std::uintptr_t begin, std::uintptr_t end) noexcept;

enum MemoryHook : unsigned {
  kHookFree = 1u << 0,
  kHookRealloc = 1u << 1,
  kHookMunmap = 1u << 2,
  kHookMremap = 1u << 3,
  kHookMadvise = 1u << 4,
  kAllMemoryHooks = (1u << 5) - 1,
};

// Which releases made by ordinary calls actually reach the listeners in this
// process, found by performing each one (needs one free listener slot). Not
// for use inside a listener or a ScopedHookBypass.
unsigned active_memory_hooks() noexcept;

// Releases by this thread inside the scope are not reported. For code that
// frees only its own bookkeeping while holding a lock that a listener takes:
// reporting would re-enter the listener on the same thread and self-deadlock.
class ScopedHookBypass {
 public:
  ScopedHookBypass() noexcept;
  ~ScopedHookBypass();
  ScopedHookBypass(const ScopedHookBypass&) = delete;
  ScopedHookBypass& operator=(const ScopedHookBypass&) = delete;
};

}  // namespace armci::buffers
