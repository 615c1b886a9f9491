#include "buffers/memory_hooks.hpp"

#include "config.h"

#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdlib>

#ifdef ARMCI_HAVE_UCX
#include <ucm/api/ucm.h>
#endif

// glibc exports its allocator under these names too. Calling them directly
// reaches glibc's free without dlsym, which may allocate and would re-enter.
extern "C" {
void* __libc_malloc(std::size_t size);
void __libc_free(void* ptr);
void* __libc_realloc(void* ptr, std::size_t size);
}

namespace armci::buffers {
namespace {

// Everything here is constant-initialised: free() can run before any static
// constructor (other libraries' constructors free memory), so nothing may
// depend on dynamic initialisation having happened.

// One word answers the question free() asks on every call, so that with glibc
// malloc and no listener the hot path is a single relaxed load.
constexpr unsigned kResolved = 1;      // which malloc the process uses is known
constexpr unsigned kForeign = 2;       // ... and it is not glibc's
constexpr unsigned kListenerUnit = 4;  // the rest counts listeners
constexpr unsigned kFastFree = kResolved;
constinit std::atomic<unsigned> g_state{0};

struct Slot {
  std::atomic<ReleaseListener> fn{nullptr};
  std::atomic<void*> ctx{nullptr};
  // Threads inside fn: removal waits for zero, so a listener's context can be
  // destroyed as soon as remove_release_listener returns.
  std::atomic<unsigned> busy{0};
  std::atomic<int> id{-1};
  std::atomic<bool> taken{false};
  std::atomic<int> generation{0};
  std::atomic<std::uintptr_t> interest_begin{0};
  std::atomic<std::uintptr_t> interest_end{0};
};
constinit Slot g_slots[kMaxReleaseListeners];

// Initial-exec: the general-dynamic model may call malloc/free on a thread's
// first access (dlopen'ed library), which would recurse into the hooks.
#define ARMCI_TLS thread_local __attribute__((tls_model("initial-exec")))

// Non-zero while this thread runs listeners or holds a ScopedHookBypass: its
// releases then only forward, so a listener that frees cannot recurse.
constinit ARMCI_TLS unsigned t_depth = 0;

void dispatch(std::uintptr_t begin, std::uintptr_t end) noexcept {
  if (begin >= end) return;
  ++t_depth;
  for (Slot& slot : g_slots) {
    if (slot.fn.load(std::memory_order_acquire) == nullptr) continue;
    if (end <= slot.interest_begin.load(std::memory_order_acquire) ||
        begin >= slot.interest_end.load(std::memory_order_acquire))
      continue;
    // Announce before re-reading fn (both seq_cst, as in the remover): either
    // the remover sees busy != 0 and waits, or this thread sees fn == nullptr.
    slot.busy.fetch_add(1, std::memory_order_seq_cst);
    ReleaseListener fn = slot.fn.load(std::memory_order_seq_cst);
    if (fn != nullptr) fn(slot.ctx.load(std::memory_order_acquire), begin, end);
    slot.busy.fetch_sub(1, std::memory_order_release);
  }
  --t_depth;
}

bool reporting(unsigned state) noexcept { return state >= kListenerUnit && t_depth == 0; }

#ifdef ARMCI_HAVE_UCX
// UCX's memory hooks (bistro mode, the default) patch the first instructions
// of munmap/mremap/madvise: libc's, or ours when libucm comes after libc in the
// search order (libarmci pulling UCX in, as in a plain link). Ours then never
// run and UCX dispatches the release instead; listening to UCX's event keeps
// those releases reported. NO_INSTALL: only hear what UCX hooks anyway, never
// make UCX install hooks (its malloc replacement included) on our account.
void ucm_unmapped(ucm_event_type_t, ucm_event_t* event, void*) {
  // UCX passes the caller's length; the kernel releases whole pages.
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto address = reinterpret_cast<std::uintptr_t>(event->vm_unmapped.address);
  notify_release(address & ~(page - 1), (address + event->vm_unmapped.size + page - 1) & ~(page - 1));
}

void listen_to_ucx() noexcept {
  static std::atomic<bool> done{false};
  if (done.exchange(true, std::memory_order_acq_rel)) return;
  ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_FLAG_NO_INSTALL, -1, ucm_unmapped, nullptr);
}
#endif

}  // namespace

int add_release_listener(ReleaseListener fn, void* ctx) noexcept {
  if (fn == nullptr) return -1;
#ifdef ARMCI_HAVE_UCX
  listen_to_ucx();
#endif
  for (int i = 0; i < kMaxReleaseListeners; ++i) {
    Slot& slot = g_slots[i];
    bool expected = false;
    if (!slot.taken.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
    // The generation makes a stale id (removed twice) miss the slot's next owner.
    const int generation = (slot.generation.fetch_add(1, std::memory_order_relaxed) + 1) & 0xffffff;
    const int id = generation * kMaxReleaseListeners + i;
    slot.id.store(id, std::memory_order_relaxed);
    slot.interest_begin.store(0, std::memory_order_relaxed);
    slot.interest_end.store(UINTPTR_MAX, std::memory_order_relaxed);
    slot.ctx.store(ctx, std::memory_order_relaxed);
    slot.fn.store(fn, std::memory_order_release);
    g_state.fetch_add(kListenerUnit, std::memory_order_relaxed);
    return id;
  }
  return -1;
}

void remove_release_listener(int id) noexcept {
  if (id < 0) return;
  Slot& slot = g_slots[id % kMaxReleaseListeners];
  if (!slot.taken.load(std::memory_order_acquire) || slot.id.load(std::memory_order_relaxed) != id)
    return;
  if (slot.fn.exchange(nullptr, std::memory_order_seq_cst) == nullptr) return;
  while (slot.busy.load(std::memory_order_seq_cst) != 0) sched_yield();
  slot.id.store(-1, std::memory_order_relaxed);
  g_state.fetch_sub(kListenerUnit, std::memory_order_relaxed);
  slot.taken.store(false, std::memory_order_release);
}

void set_release_interest(int id, std::uintptr_t begin, std::uintptr_t end) noexcept {
  if (id < 0) return;
  Slot& slot = g_slots[id % kMaxReleaseListeners];
  if (slot.id.load(std::memory_order_relaxed) != id) return;
  slot.interest_begin.store(begin, std::memory_order_release);
  slot.interest_end.store(end, std::memory_order_release);
}

void notify_release(std::uintptr_t begin, std::uintptr_t end) noexcept {
  if (reporting(g_state.load(std::memory_order_relaxed))) dispatch(begin, end);
}

ScopedHookBypass::ScopedHookBypass() noexcept { ++t_depth; }
ScopedHookBypass::~ScopedHookBypass() { --t_depth; }

namespace {
struct Probe {
  std::uintptr_t expect;
  bool seen;
};
constinit ARMCI_TLS Probe t_probe{0, false};

// Listeners run on the releasing thread, so a thread-local tells this probe's
// own releases from those of other threads.
void probe_listener(void*, std::uintptr_t begin, std::uintptr_t end) {
  if (t_probe.expect != 0 && begin <= t_probe.expect && t_probe.expect < end) t_probe.seen = true;
}

template <class F>
bool probe(void* address, F&& release) {
  t_probe = {reinterpret_cast<std::uintptr_t>(address), false};
  release();
  const bool seen = t_probe.seen;
  t_probe = {0, false};
  return seen;
}
}  // namespace

unsigned active_memory_hooks() noexcept {
  const int id = add_release_listener(probe_listener, nullptr);
  if (id < 0) return 0;
  // Through volatile pointers: the compiler may neither drop a call it thinks
  // it understands nor bind it to this file's definition; the calls must go
  // where any other caller's would.
  void (*volatile free_fn)(void*) = &free;
  void* (*volatile realloc_fn)(void*, std::size_t) = &realloc;
  int (*volatile munmap_fn)(void*, std::size_t) = &munmap;
  void* (*volatile mremap_fn)(void*, std::size_t, std::size_t, int, ...) = &mremap;
  int (*volatile madvise_fn)(void*, std::size_t, int) = &madvise;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  auto map_page = [&] {
    void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  };

  unsigned active = 0;
  if (void* p = malloc(64)) {
    if (probe(p, [&] { free_fn(p); })) active |= kHookFree;
  }
  if (void* p = malloc(64)) {
    void* q = nullptr;
    if (probe(p, [&] { q = realloc_fn(p, 4096); })) active |= kHookRealloc;
    free_fn(q != nullptr ? q : p);
  }
  if (void* p = map_page()) {
    if (probe(p, [&] { munmap_fn(p, page); })) active |= kHookMunmap;
  }
  if (void* p = map_page()) {
    void* q = MAP_FAILED;
    if (probe(p, [&] { q = mremap_fn(p, page, 2 * page, MREMAP_MAYMOVE); })) active |= kHookMremap;
    if (q != MAP_FAILED)
      munmap_fn(q, 2 * page);
    else
      munmap_fn(p, page);
  }
  if (void* p = map_page()) {
    if (probe(p, [&] { madvise_fn(p, page, MADV_DONTNEED); })) active |= kHookMadvise;
    munmap_fn(p, page);
  }
  remove_release_listener(id);
  return active;
}

}  // namespace armci::buffers

#ifndef ARMCI_NO_MEMORY_HOOKS

namespace armci::buffers {
namespace {

// Set while this thread looks up a foreign allocator with dlsym.
constinit ARMCI_TLS bool t_resolving = false;

using FreeFn = void (*)(void*);
using ReallocFn = void* (*)(void*, std::size_t);
constinit std::atomic<FreeFn> g_next_free{nullptr};
constinit std::atomic<ReallocFn> g_next_realloc{nullptr};

std::uintptr_t page_up(std::uintptr_t length) noexcept {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  return (length + page - 1) & ~(page - 1);
}

// Forwarding free() to __libc_free is only right when glibc allocated the
// block. If another allocator's malloc comes first in the process (jemalloc or
// tcmalloc linked after libarmci, a sanitizer's runtime in a static link), its
// free must get the block, and the usable size cannot be asked of glibc either.
unsigned resolve_allocator() noexcept {
  unsigned state = g_state.load(std::memory_order_acquire);
  if (state & kResolved) return state;
  bool glibc = reinterpret_cast<void*>(&malloc) == reinterpret_cast<void*>(&__libc_malloc);
  if (!glibc) {
    // A non-PIE executable may see PLT addresses for both: ask the linker.
    if (t_resolving) return state;  // a dlsym below freed: caller copes
    t_resolving = true;
    void* first = dlsym(RTLD_DEFAULT, "malloc");
    glibc = first != nullptr && first == dlsym(RTLD_DEFAULT, "__libc_malloc");
    if (!glibc) {
      g_next_free.store(reinterpret_cast<FreeFn>(dlsym(RTLD_NEXT, "free")),
                        std::memory_order_relaxed);
      g_next_realloc.store(reinterpret_cast<ReallocFn>(dlsym(RTLD_NEXT, "realloc")),
                           std::memory_order_relaxed);
    }
    t_resolving = false;
  }
  const unsigned bits = kResolved | (glibc ? 0u : kForeign);
  return g_state.fetch_or(bits, std::memory_order_acq_rel) | bits;
}

[[gnu::noinline]] void free_slow(void* ptr) noexcept {
  if (ptr == nullptr) return;
  const unsigned state = resolve_allocator();
  if (!(state & kResolved)) return;  // freed by dlsym while resolving: leaked, once
  if (state & kForeign) {
    FreeFn next = g_next_free.load(std::memory_order_relaxed);
    if (next != nullptr) next(ptr);
    return;
  }
  if (reporting(state)) {
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    dispatch(begin, begin + malloc_usable_size(ptr));
  }
  __libc_free(ptr);
}

// The libc wrappers of the three system calls, found once libc is up. Calling
// them rather than syscall() keeps other interposers working: UCX's memory
// hooks (bistro mode) patch the code of the first munmap/mremap/madvise found
// after libucm in the search order, which is libc's when libucm comes before
// libc (and ours otherwise), and a raw system call would hide these releases
// from UCX's own registration cache. The forwarding runs under a bypass: UCX
// would report the release back to us (listen_to_ucx) a second time. Before
// the constructor ran, syscall() is all there is (and nobody who could have
// patched libc exists yet).
using MunmapFn = int (*)(void*, std::size_t);
using MremapFn = void* (*)(void*, std::size_t, std::size_t, int, ...);
using MadviseFn = int (*)(void*, std::size_t, int);
constinit std::atomic<MunmapFn> g_libc_munmap{nullptr};
constinit std::atomic<MremapFn> g_libc_mremap{nullptr};
constinit std::atomic<MadviseFn> g_libc_madvise{nullptr};

bool releases_pages(int advice) noexcept {
  switch (advice) {
    case MADV_DONTNEED:
    case MADV_FREE:
    case MADV_REMOVE:
#ifdef MADV_DONTNEED_LOCKED
    case MADV_DONTNEED_LOCKED:
#endif
      return true;
    default:
      return false;
  }
}

__attribute__((constructor(101))) void find_libc_wrappers() {
  g_libc_munmap.store(reinterpret_cast<MunmapFn>(dlsym(RTLD_NEXT, "munmap")),
                      std::memory_order_relaxed);
  g_libc_mremap.store(reinterpret_cast<MremapFn>(dlsym(RTLD_NEXT, "mremap")),
                      std::memory_order_relaxed);
  g_libc_madvise.store(reinterpret_cast<MadviseFn>(dlsym(RTLD_NEXT, "madvise")),
                       std::memory_order_relaxed);
}

}  // namespace
}  // namespace armci::buffers

using namespace armci::buffers;

// The interposed functions. Each reports before forwarding: once the memory
// is back with the system, another thread could map and register the same
// addresses and must not find the old registration still cached.
extern "C" {

void free(void* ptr) noexcept {
  if (g_state.load(std::memory_order_relaxed) == kFastFree) [[likely]] {
    __libc_free(ptr);
    return;
  }
  free_slow(ptr);
}

// Invalidates whenever the old block exists: whether glibc moves or shrinks it
// is not known beforehand, and a spurious invalidation costs one registration.
void* realloc(void* ptr, std::size_t size) noexcept {
  const unsigned state = resolve_allocator();
  if (!(state & kResolved)) return nullptr;  // only from dlsym while resolving
  if (state & kForeign) {
    ReallocFn next = g_next_realloc.load(std::memory_order_relaxed);
    return next != nullptr ? next(ptr, size) : nullptr;
  }
  if (ptr != nullptr && reporting(state)) {
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    dispatch(begin, begin + malloc_usable_size(ptr));
  }
  return __libc_realloc(ptr, size);
}

int munmap(void* address, std::size_t length) noexcept {
  if (reporting(g_state.load(std::memory_order_relaxed))) {
    const auto begin = reinterpret_cast<std::uintptr_t>(address);
    dispatch(begin, begin + page_up(length));
  }
  const ScopedHookBypass reported;  // see g_libc_munmap
  if (MunmapFn libc = g_libc_munmap.load(std::memory_order_relaxed)) return libc(address, length);
  return static_cast<int>(syscall(SYS_munmap, address, length));
}

// The old range goes whether the mapping moves or not: growing in place keeps
// the pages, but which one happens is only known afterwards.
void* mremap(void* old_address, std::size_t old_size, std::size_t new_size, int flags, ...) noexcept {
  void* new_address = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list args;
    va_start(args, flags);
    new_address = va_arg(args, void*);
    va_end(args);
  }
  if (reporting(g_state.load(std::memory_order_relaxed))) {
    const auto begin = reinterpret_cast<std::uintptr_t>(old_address);
    dispatch(begin, begin + page_up(old_size));  // old_size 0 duplicates: nothing goes
    if (flags & MREMAP_FIXED) {  // whatever was mapped at the target is replaced
      const auto target = reinterpret_cast<std::uintptr_t>(new_address);
      dispatch(target, target + page_up(new_size));
    }
  }
  const ScopedHookBypass reported;
  if (MremapFn libc = g_libc_mremap.load(std::memory_order_relaxed))
    return libc(old_address, old_size, new_size, flags, new_address);
  return reinterpret_cast<void*>(
      syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address));
}

// Only advice that drops the pages matters: the next touch maps fresh ones.
int madvise(void* address, std::size_t length, int advice) noexcept {
  if (releases_pages(advice) && reporting(g_state.load(std::memory_order_relaxed))) {
    const auto begin = reinterpret_cast<std::uintptr_t>(address);
    dispatch(begin, begin + page_up(length));
  }
  const ScopedHookBypass reported;
  if (MadviseFn libc = g_libc_madvise.load(std::memory_order_relaxed))
    return libc(address, length, advice);
  return static_cast<int>(syscall(SYS_madvise, address, length, advice));
}

}  // extern "C"

#endif  // ARMCI_NO_MEMORY_HOOKS
