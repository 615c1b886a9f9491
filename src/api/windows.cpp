// Windows (include/armci_win.h): argument checks, then the windows core
// (src/windows/window.hpp). An ARMCI_Win is the core's Window; the live ones
// are kept here so a freed or made-up handle is an error, not a crash.
#include "include/armci_win.h"

#include <complex>
#include <set>

#include "src/api/api.hpp"
#include "src/api/groups.hpp"
#include "src/windows/window.hpp"

using namespace armci::api;
using armci::fail;
using armci::Op;

// post and start come once per PSCW epoch, which costs about two
// cache-line transfers over shared memory; translating the group each
// time (its lookup among the live groups, the rank map) cost about a third
// as much again, and programs pass the same groups epoch after epoch.
struct PscwRanks {
  const void* group = nullptr;  // the group handle's core group
  std::uint64_t frees = 0;      // Groups::frees() when translated
  std::vector<int> ranks;       // its members as ranks of the window's group
};

struct armci_win_s : armci::Window {
  using armci::Window::Window;
  PscwRanks post_ranks, start_ranks;
};

namespace {

std::set<const armci_win_s*> live_windows;
// The window window_of last found live: an epoch's calls all name the same
// one, and the set's lookup would cost a lock epoch a third of its time.
const armci_win_s* last_live = nullptr;

constexpr int kAllAsserts = ARMCI_WIN_MODE_NOCHECK | ARMCI_WIN_MODE_NOSTORE | ARMCI_WIN_MODE_NOPUT |
                            ARMCI_WIN_MODE_NOPRECEDE | ARMCI_WIN_MODE_NOSUCCEED;

// The set's lookup, out of line: every call of an epoch pays for the inline
// test alone.
[[gnu::noinline]] armci_win_s& window_looked_up(const char* call, ARMCI_Win win) {
  if (win == nullptr) fail(call, "argument 'win' is NULL");
  if (live_windows.count(win) == 0)
    fail(call, "argument 'win' (%p) is not a live window (freed, or never made by ARMCI_Win_allocate/create)",
         static_cast<void*>(win));
  last_live = win;
  return *win;
}

inline armci_win_s& window_of(const char* call, ARMCI_Win win) {
  if (win == last_live && win != nullptr) [[likely]]
    return *win;
  return window_looked_up(call, win);
}

void check_rank(const char* call, const armci_win_s& w, int rank) {
  if (rank < 0 || rank >= w.size()) [[unlikely]]
    fail(call, "argument 'rank' (%d) is out of range [0, %d) of the window's group", rank, w.size());
}

// Where every window call starts: the library initialised, win live.
inline armci_win_s& live_window(const char* call, ARMCI_Win win) {
  runtime(call);
  return window_of(call, win);
}

// A call on one rank of the window's group.
inline armci_win_s& window_at(const char* call, ARMCI_Win win, int rank) {
  armci_win_s& w = live_window(call, win);
  check_rank(call, w, rank);
  return w;
}

void check_assert(const char* call, int assert) {
  if (assert & ~kAllAsserts)
    fail(call, "argument 'assert' (%d) has bits that are no ARMCI_WIN_MODE_* assert", assert);
}

// A synchronisation call that takes asserts.
armci_win_s& window_asserting(const char* call, ARMCI_Win win, int assert) {
  armci_win_s& w = live_window(call, win);
  check_assert(call, assert);
  return w;
}

// The window's group, or the world for NULL.
armci::Group& window_group(const char* call, armci::Runtime& r, ARMCI_Group* group) {
  return group == nullptr ? r.groups().world() : member_group_of(call, "group", group);
}

armci::WindowParts parts_of(armci::Runtime& r) {
  return armci::WindowParts{r.peers(),       r.memory(),
                            r.progress(),    r.completion(),
                            r.transfers(),   r.sync(),
                            r.groups(),      r.collectives(),
                            r.vector_messages(), r.settings().win_sync_timeout_s,
                            r.settings().win_reorder, r.settings().aggregate_piece_max,
                            r.settings().win_lock_migrate, r.settings().win_lock_migrate_after,
                            r.settings().verbose,        r.settings().win_fence};
}

int make_window(const char* call, void* base, std::size_t bytes, int disp_unit, ARMCI_Group* group, ARMCI_Win* win,
                bool allocate) {
  armci::Runtime& r = runtime(call);
  if (win == nullptr) fail(call, "argument 'win' is NULL");
  if (disp_unit <= 0) fail(call, "argument 'disp_unit' (%d) is not positive", disp_unit);
  if (!allocate && base == nullptr && bytes > 0) fail(call, "argument 'base' is NULL but 'bytes' is %zu", bytes);
  armci::Group& g = window_group(call, r, group);
  auto* w = new armci_win_s(call, parts_of(r), g, base, bytes, disp_unit, allocate);
  live_windows.insert(w);
  *win = w;
  return 0;
}

// The group's members as ranks of the window's group, kept in `cache`
// for the next call with the same group.
[[gnu::noinline]] const std::vector<int>& translate_ranks(const char* call, armci::Runtime& r, const armci_win_s& w,
                                                          ARMCI_Group* group, PscwRanks& cache) {
  armci::Group& g = group_of(call, "group", group);
  std::vector<int>& ranks = cache.ranks;
  cache.group = nullptr;
  ranks.clear();
  for (int world_rank : g.members) {
    const int rank = w.group().rank_of[static_cast<std::size_t>(world_rank)];
    if (rank < 0)
      fail(call, "argument 'group': world rank %d is not a member of the window's group", world_rank);
    ranks.push_back(rank);
  }
  cache.group = &g;
  cache.frees = r.groups().frees();
  return ranks;
}

inline const std::vector<int>& window_ranks(const char* call, armci::Runtime& r, const armci_win_s& w,
                                            ARMCI_Group* group, PscwRanks& cache) {
  if (group != nullptr && group->armci_group_private == cache.group && cache.group != nullptr &&
      r.groups().frees() == cache.frees) [[likely]]
    return cache.ranks;
  return translate_ranks(call, r, w, group, cache);
}

// An accumulate: SUM is ARMCI's Acc with scale 1, REPLACE a put, the
// others ARMCI's Acc with the op carried in the datatype (src/core/acc.hpp),
// applied at the target under the same locks as every Acc.
struct WinAcc {
  armci::AccArgs args;
  Op op;
};

WinAcc win_acc(const char* call, int type, int op) {
  if (op < ARMCI_WIN_SUM || op > ARMCI_WIN_REPLACE)
    fail(call, "argument 'op' (%d) is not an ARMCI_WIN_* operation", op);
  const std::complex<double> one_dcp{1, 0};
  const std::complex<float> one_cpl{1, 0};
  const int one_int = 1;
  const long one_lng = 1;
  const float one_flt = 1;
  const double one_dbl = 1;
  const void* one = type == ARMCI_ACC_INT   ? static_cast<const void*>(&one_int)
                    : type == ARMCI_ACC_LNG ? static_cast<const void*>(&one_lng)
                    : type == ARMCI_ACC_FLT ? static_cast<const void*>(&one_flt)
                    : type == ARMCI_ACC_DBL ? static_cast<const void*>(&one_dbl)
                    : type == ARMCI_ACC_CPL ? static_cast<const void*>(&one_cpl)
                                            : static_cast<const void*>(&one_dcp);
  WinAcc acc{acc_args(call, type, one), op == ARMCI_WIN_REPLACE ? Op::put : Op::acc};
  if (op == ARMCI_WIN_REPLACE || op == ARMCI_WIN_SUM) return acc;
  static_assert(ARMCI_WIN_PROD - ARMCI_WIN_SUM == static_cast<int>(armci::AccOp::prod) &&
                ARMCI_WIN_BXOR - ARMCI_WIN_SUM == static_cast<int>(armci::AccOp::bxor));
  const auto acc_op = static_cast<armci::AccOp>(op - ARMCI_WIN_SUM);
  if (!armci::acc_op_defined(type, acc_op))
    fail(call, "argument 'op' (%d) is not defined for argument 'type' (%d): MAX and MIN need a real type, "
               "BAND, BOR and BXOR ARMCI_ACC_INT or ARMCI_ACC_LNG", op, type);
  acc.args.datatype = armci::acc_datatype(type, acc_op);
  return acc;
}

void check_bytes_of(const char* call, const armci::AccArgs& acc, std::size_t bytes) {
  const std::size_t element = armci::acc_element_size(acc.datatype);
  if (bytes % element != 0)
    fail(call, "argument 'bytes' (%zu) is not a whole number of %zu-byte elements", bytes, element);
}

}  // namespace

ARMCI_API(int, ARMCI_Win_allocate, (size_t bytes, int disp_unit, ARMCI_Group* group, void** base, ARMCI_Win* win)) {
  if (base == nullptr) fail("ARMCI_Win_allocate", "argument 'base' is NULL");
  make_window("ARMCI_Win_allocate", nullptr, bytes, disp_unit, group, win, true);
  *base = (*win)->base();
  return 0;
}

ARMCI_API(int, ARMCI_Win_create, (void* base, size_t bytes, int disp_unit, ARMCI_Group* group, ARMCI_Win* win)) {
  return make_window("ARMCI_Win_create", base, bytes, disp_unit, group, win, false);
}

ARMCI_API(int, ARMCI_Win_free, (ARMCI_Win * win)) {
  const char* call = "ARMCI_Win_free";
  runtime(call);
  if (win == nullptr) fail(call, "argument 'win' is NULL");
  armci_win_s& w = window_of(call, *win);
  w.free(call);
  live_windows.erase(&w);
  if (last_live == &w) last_live = nullptr;
  delete &w;
  *win = nullptr;
  return 0;
}

// ------------------------------------------------------------------ passive target

ARMCI_API(int, ARMCI_Win_lock, (int lock_type, int rank, int assert, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_lock";
  armci_win_s& w = live_window(call, win);
  if (lock_type != ARMCI_WIN_LOCK_SHARED && lock_type != ARMCI_WIN_LOCK_EXCLUSIVE)
    fail(call, "argument 'lock_type' (%d) is not ARMCI_WIN_LOCK_SHARED or ARMCI_WIN_LOCK_EXCLUSIVE", lock_type);
  check_rank(call, w, rank);
  check_assert(call, assert);
  w.lock(call, lock_type, rank, assert);
  return 0;
}

ARMCI_API(int, ARMCI_Win_unlock, (int rank, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_unlock";
  window_at(call, win, rank).unlock(call, rank);
  return 0;
}

ARMCI_API(int, ARMCI_Win_lock_all, (int assert, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_lock_all";
  window_asserting(call, win, assert).lock_all(call, assert);
  return 0;
}

ARMCI_API(int, ARMCI_Win_unlock_all, (ARMCI_Win win)) {
  const char* call = "ARMCI_Win_unlock_all";
  live_window(call, win).unlock_all(call);
  return 0;
}

ARMCI_API(int, ARMCI_Win_flush, (int rank, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_flush";
  window_at(call, win, rank).flush(call, rank);
  return 0;
}

ARMCI_API(int, ARMCI_Win_flush_all, (ARMCI_Win win)) {
  const char* call = "ARMCI_Win_flush_all";
  live_window(call, win).flush_all(call);
  return 0;
}

// ------------------------------------------------------------------ active target

ARMCI_API(int, ARMCI_Win_fence, (int assert, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_fence";
  window_asserting(call, win, assert).fence(call, assert);
  return 0;
}

ARMCI_API(int, ARMCI_Win_post, (ARMCI_Group * group, int assert, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_post";
  armci::Runtime& r = runtime(call);
  armci_win_s& w = window_asserting(call, win, assert);
  w.post(call, window_ranks(call, r, w, group, w.post_ranks), assert);
  return 0;
}

ARMCI_API(int, ARMCI_Win_start, (ARMCI_Group * group, int assert, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_start";
  armci::Runtime& r = runtime(call);
  armci_win_s& w = window_asserting(call, win, assert);
  w.start(call, window_ranks(call, r, w, group, w.start_ranks), assert);
  return 0;
}

ARMCI_API(int, ARMCI_Win_complete, (ARMCI_Win win)) {
  const char* call = "ARMCI_Win_complete";
  live_window(call, win).complete(call);
  return 0;
}

ARMCI_API(int, ARMCI_Win_wait, (ARMCI_Win win)) {
  const char* call = "ARMCI_Win_wait";
  live_window(call, win).wait(call);
  return 0;
}

ARMCI_API(int, ARMCI_Win_test, (ARMCI_Win win, int* flag)) {
  const char* call = "ARMCI_Win_test";
  armci_win_s& w = live_window(call, win);
  if (flag == nullptr) fail(call, "argument 'flag' is NULL");
  *flag = w.test(call) ? 1 : 0;
  return 0;
}

ARMCI_API(int, ARMCIX_Win_lock_counters, (ARMCI_Win win, long counts[4])) {
  const char* call = "ARMCIX_Win_lock_counters";
  const armci_win_s& w = live_window(call, win);
  if (counts == nullptr) fail(call, "argument 'counts' is NULL");
  const auto& c = w.lock_counters();
  counts[0] = static_cast<long>(c.intra_node);
  counts[1] = static_cast<long>(c.network);
  counts[2] = static_cast<long>(c.to_cpu);
  counts[3] = static_cast<long>(c.to_network);
  return 0;
}

// ------------------------------------------------------------------ operations

ARMCI_API(int, ARMCI_Win_put, (const void* src, size_t bytes, int rank, size_t disp, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_put";
  armci_win_s& w = window_at(call, win, rank);
  check_pointer(call, "src", src, bytes);
  w.contiguous(call, Op::put, nullptr, src, bytes, rank, disp);
  return 0;
}

ARMCI_API(int, ARMCI_Win_get, (void* dst, size_t bytes, int rank, size_t disp, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_get";
  armci_win_s& w = window_at(call, win, rank);
  check_pointer(call, "dst", dst, bytes);
  w.contiguous(call, Op::get, nullptr, dst, bytes, rank, disp);
  return 0;
}

ARMCI_API(int, ARMCI_Win_acc,
          (int type, int op, const void* src, size_t bytes, int rank, size_t disp, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_acc";
  armci_win_s& w = live_window(call, win);
  const WinAcc acc = win_acc(call, type, op);
  check_rank(call, w, rank);
  check_pointer(call, "src", src, bytes);
  check_bytes_of(call, acc.args, bytes);
  w.contiguous(call, acc.op, acc.op == Op::acc ? &acc.args : nullptr, src, bytes, rank, disp);
  return 0;
}

ARMCI_API(int, ARMCI_Win_puts, (void* src_ptr, int src_stride_ar[], int dst_stride_ar[], int count[],
                                int stride_levels, int rank, size_t disp, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_puts";
  armci_win_s& w = window_at(call, win, rank);
  w.strided(call, Op::put, nullptr, src_ptr, src_stride_ar, dst_stride_ar, count, stride_levels, rank, disp);
  return 0;
}

ARMCI_API(int, ARMCI_Win_gets, (void* dst_ptr, int dst_stride_ar[], int src_stride_ar[], int count[],
                                int stride_levels, int rank, size_t disp, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_gets";
  armci_win_s& w = window_at(call, win, rank);
  w.strided(call, Op::get, nullptr, dst_ptr, dst_stride_ar, src_stride_ar, count, stride_levels, rank, disp);
  return 0;
}

ARMCI_API(int, ARMCI_Win_accs, (int type, int op, void* src_ptr, int src_stride_ar[], int dst_stride_ar[],
                                int count[], int stride_levels, int rank, size_t disp, ARMCI_Win win)) {
  const char* call = "ARMCI_Win_accs";
  armci_win_s& w = live_window(call, win);
  const WinAcc acc = win_acc(call, type, op);
  check_rank(call, w, rank);
  w.strided(call, acc.op, acc.op == Op::acc ? &acc.args : nullptr, src_ptr, src_stride_ar, dst_stride_ar, count,
            stride_levels, rank, disp);
  return 0;
}
