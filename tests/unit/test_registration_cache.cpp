#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "buffers/memory_hooks.hpp"
#include "buffers/registration_cache.hpp"

using armci::buffers::RegistrationCache;
namespace hooks = armci::buffers;

namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The compiler may drop a malloc whose block is only freed: these must happen.
void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }
void malloc_and_free(std::size_t size) {
  void* volatile block = std::malloc(size);
  std::free(block);
}

unsigned active_hooks() {
  static const unsigned active = hooks::active_memory_hooks();
  return active;
}

#define REQUIRE_HOOK(bit)                                                                \
  do {                                                                                   \
    if (!(active_hooks() & (bit)))                                                       \
      GTEST_SKIP() << #bit " does not reach libarmci in this process (sanitizer or "     \
                      "another allocator owns it, or ARMCI_NO_MEMORY_HOOKS)";            \
  } while (0)

// Counts what the cache asks of the network. Each registration is a distinct
// handle remembering its range and when it was made.
struct FakeNetwork {
  struct Reg {
    std::uintptr_t begin;
    std::size_t length;
    std::uint64_t stamp;
  };
  std::mutex mutex;
  std::map<std::uintptr_t, Reg> live;  // by handle
  std::uintptr_t next_handle = 1;
  int registrations = 0;
  int deregistrations = 0;
  int failures_to_inject = 0;
  std::function<void(void*, std::size_t)> during_register;  // another thread, say
  std::atomic<std::uint64_t>* clock = nullptr;

  RegistrationCache::Callbacks callbacks() {
    return {[this](void* address, std::size_t length) -> void* {
              // Registration code allocates and frees: this runs without the
              // cache's lock, and the free reports back into invalidate().
              malloc_and_free(100);
              if (during_register) during_register(address, length);
              std::lock_guard<std::mutex> lock(mutex);
              if (failures_to_inject > 0) {
                --failures_to_inject;
                return nullptr;
              }
              ++registrations;
              const std::uint64_t stamp = clock != nullptr ? ++*clock : 0;
              const std::uintptr_t handle = next_handle++;
              live[handle] = {addr(address), length, stamp};
              return reinterpret_cast<void*>(handle);
            },
            [this](void* registration) {
              std::lock_guard<std::mutex> lock(mutex);
              ++deregistrations;
              EXPECT_EQ(live.erase(addr(registration)), 1u) << "deregistered twice or never made";
            }};
  }

  Reg reg(void* handle) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(addr(handle));
    EXPECT_NE(it, live.end());
    return it == live.end() ? Reg{} : it->second;
  }
};

// What a test expects of RegistrationCache::stats(), in the order of its
// fields; a counter left out is not checked.
struct ExpectedStats {
  std::optional<std::uint64_t> hits{}, misses{}, invalidations{}, evictions{}, failures{};
  std::optional<std::size_t> live_entries{}, live_bytes{}, dead_entries{};
};

// Every counter that differs, by name, in one failure.
::testing::AssertionResult StatsAre(const RegistrationCache::Stats& s, const ExpectedStats& e) {
  std::string wrong;
  auto check = [&wrong](const char* name, std::uint64_t actual, const auto& expected) {
    if (expected && *expected != actual)
      wrong += std::string(" ") + name + " is " + std::to_string(actual) + ", expected " + std::to_string(*expected);
  };
  check("hits", s.hits, e.hits);
  check("misses", s.misses, e.misses);
  check("invalidations", s.invalidations, e.invalidations);
  check("evictions", s.evictions, e.evictions);
  check("failures", s.failures, e.failures);
  check("live_entries", s.live_entries, e.live_entries);
  check("live_bytes", s.live_bytes, e.live_bytes);
  check("dead_entries", s.dead_entries, e.dead_entries);
  if (wrong.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "cache stats:" << wrong;
}

void* map_pages(std::size_t pages) {
  void* p = mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  return p == MAP_FAILED ? nullptr : p;
}

// Reserves `pages` pages and gives the space back: a later mmap of the same
// size lands at the same address (the kernel reuses the gap it left).
void* mmap_at(void* where, std::size_t pages) {
  void* p = mmap(where, pages * kPage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// A cache whose budget no test reaches, over a FakeNetwork, and the pages a
// test registers, unmapped at the end unless the test did it.
class CacheWithLargeBudget : public ::testing::Test {
 protected:
  ~CacheWithLargeBudget() override { unmap(); }
  char* map(std::size_t pages) {
    mapped_ = static_cast<char*>(map_pages(pages));
    pages_ = pages;
    return mapped_;
  }
  void unmap() {
    if (mapped_ != nullptr) munmap(mapped_, pages_ * kPage);
    mapped_ = nullptr;
  }

  FakeNetwork net;
  RegistrationCache cache{net.callbacks(), 1 << 30};

 private:
  char* mapped_ = nullptr;
  std::size_t pages_ = 0;
};

}  // namespace

// ---------------------------------------------------------------- memory hooks

namespace {
struct Recorder {
  static constexpr int kMax = 16;
  std::uintptr_t begin[kMax];
  std::uintptr_t end[kMax];
  std::atomic<int> count{0};
};
thread_local bool t_recording = false;

// The compiler knows free() reads no user variable and could move a plain
// store to the flag across it; the barriers pin the store in place.
void set_recording(bool on) {
  asm volatile("" ::: "memory");
  t_recording = on;
  asm volatile("" ::: "memory");
}

// Only this test's thread: gtest or libraries may free on others.
void record(void* ctx, std::uintptr_t begin, std::uintptr_t end) {
  if (!t_recording) return;
  auto* r = static_cast<Recorder*>(ctx);
  const int i = r->count.fetch_add(1);
  if (i < Recorder::kMax) {
    r->begin[i] = begin;
    r->end[i] = end;
  }
}

std::string describe(const Recorder& r) {
  std::string out = "heard:";
  char line[64];
  for (int i = 0; i < std::min(r.count.load(), Recorder::kMax); ++i) {
    std::snprintf(line, sizeof line, " [%#lx, +%#lx)", static_cast<unsigned long>(r.begin[i]),
                  static_cast<unsigned long>(r.end[i] - r.begin[i]));
    out += line;
  }
  return out;
}

struct Recording {
  Recorder recorder;
  int id;
  Recording() : id(hooks::add_release_listener(record, &recorder)) { set_recording(true); }
  ~Recording() {
    set_recording(false);
    hooks::remove_release_listener(id);
  }
};
}  // namespace

TEST(MemoryHooks, AllHooksReachTheLibrary) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(ARMCI_NO_MEMORY_HOOKS)
  GTEST_SKIP() << "free/realloc belong to the sanitizer runtime (or hooks compiled out); active mask "
               << active_hooks();
#endif
  EXPECT_EQ(active_hooks(), unsigned{hooks::kAllMemoryHooks});
}

TEST(MemoryHooks, FreeAndReallocReportTheWholeBlock) {
  REQUIRE_HOOK(hooks::kHookFree | hooks::kHookRealloc);
  Recording rec;
  ASSERT_GE(rec.id, 0);
  void* p = std::malloc(1000);
  const std::uintptr_t p_begin = addr(p), p_end = p_begin + malloc_usable_size(p);
  std::free(p);
  ASSERT_EQ(rec.recorder.count.load(), 1);
  EXPECT_EQ(rec.recorder.begin[0], p_begin);
  EXPECT_EQ(rec.recorder.end[0], p_end);

  std::free(nullptr);  // nothing to report
  void* q = std::realloc(nullptr, 64);  // an allocation, not a release
  EXPECT_EQ(rec.recorder.count.load(), 1);
  const std::uintptr_t q_begin = addr(q), q_end = q_begin + malloc_usable_size(q);
  void* r = std::realloc(q, 1 << 20);
  ASSERT_EQ(rec.recorder.count.load(), 2);
  EXPECT_EQ(rec.recorder.begin[1], q_begin);
  EXPECT_EQ(rec.recorder.end[1], q_end);
  std::free(r);
  EXPECT_EQ(rec.recorder.count.load(), 3);
}

TEST(MemoryHooks, SystemCallsReportWholePages) {
  REQUIRE_HOOK(hooks::kHookMunmap | hooks::kHookMremap | hooks::kHookMadvise);
  Recording rec;
  char* p = static_cast<char*>(map_pages(4));
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(madvise(p, kPage, MADV_WILLNEED), 0);  // keeps the pages: not a release
  ASSERT_EQ(madvise(p, kPage, MADV_NORMAL), 0);
  EXPECT_EQ(rec.recorder.count.load(), 0) << describe(rec.recorder);
  ASSERT_EQ(madvise(p + kPage, 10, MADV_DONTNEED), 0);  // the kernel rounds up to the page
  ASSERT_EQ(rec.recorder.count.load(), 1) << describe(rec.recorder);
  EXPECT_EQ(rec.recorder.begin[0], addr(p + kPage));
  EXPECT_EQ(rec.recorder.end[0], addr(p + 2 * kPage));
  ASSERT_EQ(madvise(p, kPage, MADV_FREE), 0);
  ASSERT_EQ(madvise(p, kPage, MADV_REMOVE), -1);  // private anonymous: refused, still reported
  EXPECT_EQ(rec.recorder.count.load(), 3) << describe(rec.recorder);

  void* moved = mremap(p + 2 * kPage, 2 * kPage, 8 * kPage, MREMAP_MAYMOVE);
  ASSERT_NE(moved, MAP_FAILED);
  ASSERT_EQ(rec.recorder.count.load(), 4) << describe(rec.recorder);
  EXPECT_EQ(rec.recorder.begin[3], addr(p + 2 * kPage));
  EXPECT_EQ(rec.recorder.end[3], addr(p + 4 * kPage));

  ASSERT_EQ(munmap(p, 2 * kPage - 1), 0);
  ASSERT_EQ(munmap(moved, 8 * kPage), 0);
  ASSERT_EQ(rec.recorder.count.load(), 6) << describe(rec.recorder);
  EXPECT_EQ(rec.recorder.begin[4], addr(p));
  EXPECT_EQ(rec.recorder.end[4], addr(p + 2 * kPage));
  EXPECT_EQ(rec.recorder.begin[5], addr(moved));
  EXPECT_EQ(rec.recorder.end[5], addr(moved) + 8 * kPage);
}

TEST(MemoryHooks, RemovedListenerHearsNothingAndSlotsAreBounded) {
  REQUIRE_HOOK(hooks::kHookFree);
  Recorder recorder;
  std::vector<int> ids;
  ids.reserve(hooks::kMaxReleaseListeners + 1);
  int id;
  while ((id = hooks::add_release_listener(record, &recorder)) >= 0) ids.push_back(id);
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), std::size_t{hooks::kMaxReleaseListeners});
  set_recording(true);
  malloc_and_free(10);
  set_recording(false);
  EXPECT_EQ(recorder.count.load(), static_cast<int>(ids.size()));
  for (int i : ids) hooks::remove_release_listener(i);
  const int again = hooks::add_release_listener(record, &recorder);  // reuses a slot
  hooks::remove_release_listener(ids[0]);  // a stale id: must not remove `again`
  set_recording(true);
  malloc_and_free(10);
  set_recording(false);
  EXPECT_EQ(recorder.count.load(), static_cast<int>(ids.size()) + 1);
  hooks::remove_release_listener(again);
  set_recording(true);
  malloc_and_free(10);
  set_recording(false);
  EXPECT_EQ(recorder.count.load(), static_cast<int>(ids.size()) + 1);
}

namespace {
std::atomic<int> g_reentrant_calls{0};
void free_inside(void*, std::uintptr_t, std::uintptr_t) {
  ++g_reentrant_calls;
  malloc_and_free(32);  // nested: forwarded, not reported again
  std::vector<int>* volatile vector = new std::vector<int>(100);
  delete vector;
}
}  // namespace

TEST(MemoryHooks, ListenerThatFreesDoesNotRecurseOrDeadlock) {
  const int id = hooks::add_release_listener(free_inside, nullptr);
  ASSERT_GE(id, 0);
  g_reentrant_calls = 0;
  void* p = std::malloc(64);
  if (active_hooks() & hooks::kHookFree) {
    std::free(p);
  } else {
    hooks::notify_release(addr(p), addr(p) + 64);
    std::free(p);
  }
  const int calls = g_reentrant_calls.load();
  hooks::remove_release_listener(id);
  // Other threads do not free here, so exactly this one release was heard.
  EXPECT_EQ(calls, 1);
}

// ---------------------------------------------------------------- the cache

TEST_F(CacheWithLargeBudget, HitsOnRepeatAndRegistersWholePages) {
  char* p = map(4);
  ASSERT_NE(p, nullptr);

  auto a = cache.acquire(p + 100, 5000);
  ASSERT_TRUE(a);
  EXPECT_EQ(net.registrations, 1);
  const auto reg = net.reg(a.registration);
  EXPECT_EQ(reg.begin, addr(p));
  EXPECT_EQ(reg.length, 2 * kPage);
  cache.release(a);

  auto b = cache.acquire(p + 100, 5000);
  auto c = cache.acquire(p + kPage, 10);  // inside the same registered pages
  EXPECT_EQ(b.registration, a.registration);
  EXPECT_EQ(c.registration, a.registration);
  EXPECT_EQ(net.registrations, 1);
  cache.release(b);
  cache.release(c);

  EXPECT_TRUE(StatsAre(cache.stats(), {.hits = 2u, .misses = 1u, .invalidations = 0u, .evictions = 0u,
                                       .live_entries = 1u, .live_bytes = 2 * kPage}));
  EXPECT_FALSE(cache.acquire(p, 0));  // nothing to register
}

TEST_F(CacheWithLargeBudget, MissesOnAnotherBufferAndWhenRegistrationFails) {
  char* p = map(8);
  auto a = cache.acquire(p, kPage);
  auto b = cache.acquire(p + 4 * kPage, kPage);
  auto c = cache.acquire(p + kPage + 1, 10);  // next page: not covered
  EXPECT_NE(a.registration, b.registration);
  EXPECT_NE(c.registration, a.registration);
  EXPECT_EQ(net.registrations, 3);
  net.failures_to_inject = 1;
  auto d = cache.acquire(p + 6 * kPage, kPage);
  EXPECT_FALSE(d);
  EXPECT_EQ(d.registration, nullptr);
  cache.release(d);  // an empty lease is harmless
  for (auto* l : {&a, &b, &c}) cache.release(*l);
  EXPECT_TRUE(StatsAre(cache.stats(), {.hits = 0u, .misses = 4u, .failures = 1u, .live_entries = 3u}));
}

TEST_F(CacheWithLargeBudget, BuffersSharingAPageKeepTheirOwnEntries) {
  char* p = map(4);
  // Used in turn, as double buffers are: neither may push the other out.
  RegistrationCache::Lease first, second;
  for (int round = 0; round < 3; ++round) {
    first = cache.acquire(p + 100, 2 * kPage - 200);          // pages 0-1
    second = cache.acquire(p + 2 * kPage - 50, kPage);        // pages 1-2
    cache.release(first);
    cache.release(second);
  }
  EXPECT_NE(first.registration, second.registration);
  EXPECT_EQ(net.registrations, 2);
  EXPECT_EQ(net.reg(second.registration).begin, addr(p + kPage));
  EXPECT_EQ(net.reg(second.registration).length, 2 * kPage);
  EXPECT_TRUE(StatsAre(cache.stats(), {.hits = 4u, .misses = 2u, .live_entries = 2u,
                                       .live_bytes = 4 * kPage}));

  // Releasing the first buffer's bytes kills only its entry, even in the
  // shared page.
  hooks::notify_release(addr(p + 100), addr(p + 2 * kPage - 100));
  EXPECT_EQ(cache.stats().invalidations, 1u);
  EXPECT_EQ(cache.acquire(p + 2 * kPage - 50, 10).registration, second.registration);
  EXPECT_EQ(cache.stats().live_entries, 1u);
  cache.release(second);
}

TEST_F(CacheWithLargeBudget, AWiderRangeReplacesTheEntriesItContains) {
  char* p = map(4);
  auto a = cache.acquire(p, kPage);
  auto b = cache.acquire(p + 2 * kPage, kPage);
  cache.release(b);
  auto wide = cache.acquire(p, 4 * kPage);  // a is still leased: retired, kept
  EXPECT_EQ(net.registrations, 3);
  EXPECT_TRUE(StatsAre(cache.stats(), {.invalidations = 0u, .evictions = 0u, .live_entries = 1u,
                                       .live_bytes = 4 * kPage, .dead_entries = 2u}));
  EXPECT_EQ(net.deregistrations, 0);
  EXPECT_EQ(cache.acquire(p + 2 * kPage, 10).registration, wide.registration);
  EXPECT_EQ(net.deregistrations, 1);  // b, collected by that acquire
  cache.release(a);
  cache.collect();
  EXPECT_EQ(net.deregistrations, 2);
  EXPECT_EQ(cache.stats().dead_entries, 0u);
  cache.release(wide);
  cache.release(wide);
}

TEST_F(CacheWithLargeBudget, FreeInvalidatesTheEntryOfAMallocedBuffer) {
  REQUIRE_HOOK(hooks::kHookFree);
  constexpr std::size_t kSize = 1 << 20;
  void* p = std::malloc(kSize);
  ASSERT_NE(p, nullptr);
  auto a = cache.acquire(p, kSize);
  ASSERT_TRUE(a);
  cache.release(a);
  EXPECT_EQ(cache.acquire(p, kSize).registration, a.registration);
  cache.release(a);

  std::free(p);
  EXPECT_TRUE(StatsAre(cache.stats(), {.invalidations = 1u, .live_entries = 0u, .live_bytes = 0u,
                                       .dead_entries = 1u}));
  EXPECT_EQ(net.deregistrations, 0);  // never from inside free()

  void* q = std::malloc(kSize);
  ASSERT_NE(q, nullptr);
  // glibc serves 1 MiB by mmap, and the kernel hands the same gap back.
  EXPECT_EQ(q, p) << "the case under test needs the same address again";
  auto b = cache.acquire(q, kSize);
  ASSERT_TRUE(b);
  EXPECT_EQ(net.registrations, 2);
  EXPECT_EQ(net.deregistrations, 1);  // the dead entry, collected by acquire
  EXPECT_TRUE(StatsAre(cache.stats(), {.hits = 1u, .misses = 2u, .dead_entries = 0u}));
  cache.release(b);
  std::free(q);
  EXPECT_EQ(cache.stats().invalidations, 2u);
}

TEST_F(CacheWithLargeBudget, FreeOfANeighbourInTheSamePageKeepsTheEntry) {
  REQUIRE_HOOK(hooks::kHookFree);
  // Small blocks share pages; a neighbour's release frees no page of ours.
  std::vector<char*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(256)));
    escape(blocks.back());
  }
  char* buffer = nullptr;
  for (std::size_t i = 0; i + 1 < blocks.size() && buffer == nullptr; ++i)
    if (addr(blocks[i]) / kPage == addr(blocks[i + 1]) / kPage) buffer = blocks[i];
  ASSERT_NE(buffer, nullptr) << "no two blocks share a page";
  auto a = cache.acquire(buffer, 256);
  const auto reg = net.reg(a.registration);
  cache.release(a);
  int neighbours_in_our_page = 0;
  for (char* b : blocks) {
    if (b == buffer) continue;
    if (addr(b) >= reg.begin && addr(b) < reg.begin + reg.length) ++neighbours_in_our_page;
    std::free(b);
  }
  EXPECT_GE(neighbours_in_our_page, 1);
  EXPECT_EQ(cache.stats().invalidations, 0u);
  EXPECT_EQ(cache.acquire(buffer, 256).registration, a.registration);
  cache.release(a);
  std::free(buffer);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  EXPECT_EQ(net.registrations, 1);
}

TEST_F(CacheWithLargeBudget, MunmapInvalidates) {
  REQUIRE_HOOK(hooks::kHookMunmap);
  char* p = map(4);
  auto a = cache.acquire(p, 4 * kPage);
  cache.release(a);
  ASSERT_EQ(munmap(p + kPage, kPage), 0);  // one page in the middle is enough
  EXPECT_EQ(cache.stats().invalidations, 1u);
  ASSERT_EQ(mmap_at(p + kPage, 1), p + kPage);
  auto b = cache.acquire(p, 4 * kPage);
  EXPECT_NE(b.registration, a.registration);
  EXPECT_EQ(net.registrations, 2);
  EXPECT_EQ(cache.stats().misses, 2u);
  cache.release(b);
  unmap();
  EXPECT_EQ(cache.stats().invalidations, 2u);
}

TEST(RegistrationCache, MremapInvalidates) {
  REQUIRE_HOOK(hooks::kHookMremap);
  FakeNetwork net;
  RegistrationCache cache(net.callbacks(), 1 << 30);
  char* p = static_cast<char*>(map_pages(2));
  auto a = cache.acquire(p, 2 * kPage);
  cache.release(a);
  char* moved = static_cast<char*>(mremap(p, 2 * kPage, 64 * kPage, MREMAP_MAYMOVE));
  ASSERT_NE(moved, MAP_FAILED);
  EXPECT_TRUE(StatsAre(cache.stats(), {.invalidations = 1u, .live_entries = 0u}));
  auto b = cache.acquire(moved, 2 * kPage);
  EXPECT_EQ(net.registrations, 2);
  cache.release(b);
  munmap(moved, 64 * kPage);
}

TEST_F(CacheWithLargeBudget, MadviseDontneedInvalidatesOtherAdviceDoesNot) {
  REQUIRE_HOOK(hooks::kHookMadvise);
  char* p = map(4);
  auto a = cache.acquire(p, 4 * kPage);
  cache.release(a);
  ASSERT_EQ(madvise(p, 4 * kPage, MADV_WILLNEED), 0);
  ASSERT_EQ(madvise(p, 4 * kPage, MADV_SEQUENTIAL), 0);
  EXPECT_EQ(cache.stats().invalidations, 0u);
  EXPECT_EQ(cache.acquire(p, kPage).registration, a.registration);
  cache.release(a);
  ASSERT_EQ(madvise(p + 3 * kPage, kPage, MADV_DONTNEED), 0);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  auto b = cache.acquire(p, 4 * kPage);
  EXPECT_NE(b.registration, a.registration);
  EXPECT_EQ(net.registrations, 2);
  cache.release(b);
}

TEST_F(CacheWithLargeBudget, EntryInUseIsDeregisteredOnlyAfterReleaseAndCollect) {
  char* p = map(2);
  auto a = cache.acquire(p, 2 * kPage);
  hooks::notify_release(addr(p), addr(p) + kPage);  // what the hooks call
  EXPECT_TRUE(StatsAre(cache.stats(), {.invalidations = 1u, .live_entries = 0u, .dead_entries = 1u}));

  auto b = cache.acquire(p, 2 * kPage);  // no longer found, although registered
  EXPECT_NE(b.registration, a.registration);
  EXPECT_EQ(net.registrations, 2);
  EXPECT_EQ(net.deregistrations, 0);
  cache.collect();
  EXPECT_EQ(net.deregistrations, 0);  // still leased
  cache.release(a);
  EXPECT_EQ(net.deregistrations, 0);  // release alone never deregisters
  EXPECT_EQ(cache.stats().dead_entries, 1u);
  cache.collect();
  EXPECT_EQ(net.deregistrations, 1);
  EXPECT_EQ(net.live.count(addr(a.registration)), 0u);
  EXPECT_EQ(cache.stats().dead_entries, 0u);
  cache.release(b);
}

TEST_F(CacheWithLargeBudget, MemoryReleasedWhileBeingRegisteredIsNotCached) {
  char* p = map(2);
  // The lookup missed and the lock is dropped for register_range: a release
  // now cannot find an entry, yet must keep this one out of the cache.
  net.during_register = [&](void*, std::size_t) {
    hooks::notify_release(addr(p + kPage), addr(p + kPage) + 8);
  };
  auto a = cache.acquire(p, 2 * kPage);
  net.during_register = nullptr;
  ASSERT_TRUE(a);  // the caller still gets its registration
  EXPECT_TRUE(StatsAre(cache.stats(), {.invalidations = 1u, .live_entries = 0u, .dead_entries = 1u}));
  auto b = cache.acquire(p, 2 * kPage);
  EXPECT_NE(b.registration, a.registration);
  EXPECT_EQ(cache.stats().misses, 2u);
  cache.release(a);
  cache.collect();
  EXPECT_EQ(net.deregistrations, 1);
  EXPECT_EQ(cache.acquire(p, 2 * kPage).registration, b.registration);
  cache.release(b);
  cache.release(b);
}

TEST(RegistrationCache, EvictsLeastRecentlyUsedWithinBudgetButNeverAnEntryInUse) {
  FakeNetwork net;
  RegistrationCache cache(net.callbacks(), 3 * kPage);
  char* p = static_cast<char*>(map_pages(8));
  auto page = [&](int i) { return p + i * kPage; };
  RegistrationCache::Lease l[8];
  for (int i = 0; i < 3; ++i) {
    l[i] = cache.acquire(page(i), kPage);  // adjacent pages: separate entries
    cache.release(l[i]);
  }
  EXPECT_TRUE(StatsAre(cache.stats(), {.evictions = 0u, .live_bytes = 3 * kPage}));
  cache.release(cache.acquire(page(0), 1));  // 0 becomes the most recent

  l[3] = cache.acquire(page(3), kPage);  // over budget: 1 is the least recent
  EXPECT_TRUE(StatsAre(cache.stats(), {.evictions = 1u, .live_entries = 3u, .live_bytes = 3 * kPage}));
  EXPECT_EQ(cache.acquire(page(0), 1).registration, l[0].registration);  // kept, leased again
  EXPECT_EQ(cache.acquire(page(2), 1).registration, l[2].registration);  // kept, leased again
  auto again = cache.acquire(page(1), 1);
  EXPECT_NE(again.registration, l[1].registration);  // evicted
  EXPECT_EQ(net.deregistrations, 1);

  // Now 0, 2, 3 and the new 1 are all leased: none may go, whatever the budget.
  EXPECT_TRUE(StatsAre(cache.stats(), {.evictions = 1u, .live_entries = 4u, .live_bytes = 4 * kPage}));
  l[4] = cache.acquire(page(4), kPage);
  EXPECT_TRUE(StatsAre(cache.stats(), {.evictions = 1u, .live_entries = 5u}));

  // Least recent first (0, 3 leased): releasing 0 lets it go at once, 2
  // likewise; then the idle entries fit in the budget and stay.
  cache.release(l[0]);
  EXPECT_EQ(cache.stats().evictions, 2u);
  cache.release(l[2]);
  EXPECT_EQ(cache.stats().evictions, 3u);
  cache.release(l[3]);
  cache.release(again);
  cache.release(l[4]);
  EXPECT_TRUE(StatsAre(cache.stats(), {.evictions = 3u, .live_entries = 3u, .live_bytes = 3 * kPage,
                                       .dead_entries = 2u}));
  cache.collect();
  EXPECT_EQ(net.deregistrations, 3);
  EXPECT_EQ(cache.acquire(page(3), 1).registration, l[3].registration);
  EXPECT_EQ(cache.acquire(page(4), 1).registration, l[4].registration);
  EXPECT_EQ(cache.acquire(page(1), 1).registration, again.registration);
  EXPECT_EQ(cache.stats().hits, 6u);
  munmap(p, 8 * kPage);
}

namespace {
char g_static_buffer[64];  // below the heap, so the cache listens to all of it
}

TEST(RegistrationCache, FreeingItsOwnNodesUnderTheLockDoesNotReenter) {
  FakeNetwork net;
  RegistrationCache cache(net.callbacks(), kPage);
  auto a = cache.acquire(g_static_buffer, sizeof g_static_buffer);
  cache.release(a);
  char* p = static_cast<char*>(map_pages(1));
  // Evicting `a` frees a map node while the cache holds its lock; the node
  // lies inside the range the cache listens to. Reported, it would re-enter
  // invalidate() on this thread and deadlock.
  auto b = cache.acquire(p, kPage);
  EXPECT_TRUE(StatsAre(cache.stats(), {.invalidations = 0u, .evictions = 1u, .live_entries = 1u}));
  cache.release(b);
  cache.collect();
  EXPECT_EQ(net.deregistrations, 1);
  munmap(p, kPage);
}

TEST(RegistrationCache, DestructorDeregistersEverything) {
  FakeNetwork net;
  char* p = static_cast<char*>(map_pages(4));
  {
    RegistrationCache cache(net.callbacks(), 1 << 30);
    auto a = cache.acquire(p, kPage);
    auto b = cache.acquire(p + 2 * kPage, kPage);
    cache.release(b);
    hooks::notify_release(addr(p + 2 * kPage), addr(p + 3 * kPage));  // b dead, not collected
    EXPECT_EQ(cache.stats().dead_entries, 1u);
    (void)a;  // still leased when the cache goes
  }
  EXPECT_EQ(net.registrations, 2);
  EXPECT_EQ(net.deregistrations, 2);
  EXPECT_TRUE(net.live.empty());
  munmap(p, 4 * kPage);
}

// A thread frees buffers while this one acquires others. A registration older
// than the buffer it is served for would be one of freed memory: every buffer
// spans several whole pages of its own, so no live entry may legitimately
// cover it before it exists.
TEST(RegistrationCache, ConcurrentFreeWhileAcquiringNeverServesAStaleRegistration) {
  std::atomic<std::uint64_t> clock{0};
  FakeNetwork net;
  net.clock = &clock;
  const bool free_hooked = active_hooks() & hooks::kHookFree;
  // Without the free hook (TSan, ASan) report as it would have.
  auto release_block = [free_hooked](void* p, std::size_t size) {
    if (!free_hooked) hooks::notify_release(addr(p), addr(p) + size);
    std::free(p);
  };

  constexpr int kRounds = 3000;
  int acquires = 0;
  {
    RegistrationCache cache(net.callbacks(), 64u << 20);
    std::mutex mutex;
    std::condition_variable cv, drained;
    std::deque<std::pair<void*, std::size_t>> to_free;
    bool done = false;

    std::thread freer([&] {
      std::mt19937 rng(7);
      for (;;) {
        std::pair<void*, std::size_t> item;
        {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return done || !to_free.empty(); });
          if (to_free.empty()) return;
          item = to_free.front();
          to_free.pop_front();
          drained.notify_one();
        }
        release_block(item.first, item.second);
        // Churn of unrelated blocks, some in the same pages as cached buffers.
        for (int i = 0; i < 4; ++i) release_block(std::malloc(16 + rng() % 4000), 16);
      }
    });

    std::mt19937 rng(11);
    const std::size_t sizes[] = {64 << 10, 200 << 10, 1 << 20};
    std::vector<std::pair<void*, std::size_t>> held;
    for (int round = 0; round < kRounds; ++round) {
      const std::size_t size = sizes[rng() % 3];
      void* p = std::malloc(size);
      ASSERT_NE(p, nullptr);
      const std::uint64_t born = ++clock;
      for (int k = 0; k < 2; ++k) {  // the second is normally a hit
        auto lease = cache.acquire(p, size);
        ++acquires;
        ASSERT_TRUE(lease);
        const auto reg = net.reg(lease.registration);
        ASSERT_GT(reg.stamp, born) << "served a registration made before the buffer existed";
        ASSERT_LE(reg.begin, addr(p));
        ASSERT_GE(reg.begin + reg.length, addr(p) + size);
        cache.release(lease);
      }
      held.emplace_back(p, size);
      if (held.size() > 3 || round == kRounds - 1) {
        // Bounded backlog: live entries stay far below the budget, so no
        // entry is evicted before its buffer is freed and the counts are exact.
        std::unique_lock<std::mutex> lock(mutex);
        drained.wait(lock, [&] { return to_free.size() < 8; });
        for (auto& h : held) to_free.push_back(h);
        held.clear();
        cv.notify_one();
      }
      if (round % 64 == 0) cache.collect();
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      cv.notify_one();
    }
    freer.join();
    // Each buffer: one miss, one hit, and its entry dies when it is freed.
    EXPECT_EQ(acquires, 2 * kRounds);
    const std::uint64_t rounds = kRounds;
    EXPECT_TRUE(StatsAre(cache.stats(), {.hits = rounds, .misses = rounds, .invalidations = rounds, .evictions = 0u,
                                         .live_entries = 0u}));
  }
  EXPECT_EQ(net.registrations, net.deregistrations);
  EXPECT_TRUE(net.live.empty());
}
