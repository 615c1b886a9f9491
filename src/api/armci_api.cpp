// The C entry points: check arguments, translate ARMCI's types, call the core.
#include <cstdlib>
#include <cstring>

#include "include/armci.h"
#include "src/core/acc.hpp"
#include "src/core/copy.hpp"
#include "src/core/error.hpp"
#include "src/core/runtime.hpp"
#include "src/core/strided.hpp"
#include "src/core/sync.hpp"

using armci::fail;
using armci::PeerKind;
using armci::Runtime;
using armci::platform::Completion;

static_assert(sizeof(armci_hdl_t) == 8, "armci_hdl_t must stay 8 bytes (ARMCI-MPI layout)");
static_assert(sizeof(armci_giov_t) == 24, "armci_giov_t must keep ARMCI-MPI's layout");
static_assert(sizeof(armci_size_t) == sizeof(long), "armci_size_t is long in ARMCI-MPI");

namespace {

// ---------------------------------------------------------------- checks

Runtime& runtime(const char* call) {
  Runtime* r = Runtime::get();
  if (r == nullptr) [[unlikely]] {
    if (armci::error_rank() < 0) {
      // Before start-up the launcher's environment still says who we are.
      for (const char* name : {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(name)) {
          armci::set_error_rank(std::atoi(v));
          break;
        }
    }
    fail(call, "the library is not initialised (call ARMCI_Init first)");
  }
  return *r;
}

inline void check_proc(const char* call, const Runtime& r, int proc) {
  if (proc < 0 || proc >= r.size()) [[unlikely]]
    fail(call, "argument 'proc' (%d) is out of range [0, %d)", proc, r.size());
}

inline void check_bytes(const char* call, int bytes) {
  if (bytes < 0) [[unlikely]] fail(call, "argument 'bytes' (%d) is negative", bytes);
}

inline void check_pointer(const char* call, const char* name, const void* p, int bytes) {
  if (p == nullptr && bytes > 0) [[unlikely]] fail(call, "argument '%s' is NULL", name);
}

void check_acc(const char* call, int datatype, const void* scale, int bytes) {
  const std::size_t element = armci::acc_element_size(datatype);
  if (element == 0)
    fail(call, "argument 'datatype' (%d) is not an ARMCI Acc type (ARMCI_INT, ARMCI_LONG, "
               "ARMCI_FLOAT, ARMCI_DOUBLE, ARMCI_SCPL, ARMCI_DCPL)", datatype);
  if (scale == nullptr) fail(call, "argument 'scale' is NULL");
  if (static_cast<std::size_t>(bytes) % element != 0)
    fail(call, "argument 'bytes' (%d) is not a whole number of %zu-byte elements", bytes, element);
}

inline void check_transfer(const char* call, const Runtime& r, const void* src, const void* dst, int bytes,
                           int proc) {
  check_proc(call, r, proc);
  check_bytes(call, bytes);
  check_pointer(call, "src", src, bytes);
  check_pointer(call, "dst", dst, bytes);
}

// A blocking operation: started, then waited for unless already finished
// (same-node transfers finish inside start).
template <typename Start>
int blocking(const char* call, Runtime& r, Start start) {
  Completion done;
  start(done, static_cast<armci::VectorBatches*>(nullptr));
  if (!done.done()) r.wait(call, done);
  return 0;
}

// ---------------------------------------------------------------- handles

// tag = marker (8 bits) | aggregate (1 bit) | generation (23 bits).
constexpr unsigned kMarker = 0x5Au;
constexpr unsigned kAggregateBit = 1u << 23;
constexpr unsigned kGenerationMask = Runtime::Requests::kGenerationMask;

inline unsigned tag_bits(const armci_hdl_t* h) { return static_cast<unsigned>(h->tag); }

// A handle either holds no request (-1) or the index of a slot the table
// has handed out; anything else is memory that never saw ARMCI_INIT_HANDLE.
inline void check_handle(const char* call, const armci_hdl_t* h) {
  const Runtime* r = Runtime::get();
  if ((tag_bits(h) >> 24) != kMarker || h->request < -1 ||
      (r && h->request >= 0 && static_cast<std::size_t>(h->request) >= const_cast<Runtime*>(r)->requests().capacity()))
      [[unlikely]]
    fail(call, "argument 'handle' (%p) was not initialised with ARMCI_INIT_HANDLE", static_cast<const void*>(h));
}

inline bool is_aggregate(const armci_hdl_t* h) { return tag_bits(h) & kAggregateBit; }

inline void set_handle(armci_hdl_t* h, int request, unsigned generation) {
  h->request = request;
  h->tag = static_cast<int>((kMarker << 24) | (tag_bits(h) & kAggregateBit) | (generation & kGenerationMask));
}

Runtime::Requests::Id handle_id(const armci_hdl_t* h) {
  return {static_cast<std::uint32_t>(h->request), tag_bits(h) & kGenerationMask};
}

// Waits for whatever the handle still holds and empties it.
void complete_handle(const char* call, Runtime& r, armci_hdl_t* h) {
  if (h->request < 0) return;
  const auto id = handle_id(h);
  if (auto* request = r.requests().find(id)) {
    r.send_batches(request->batches, request->completion);
    r.wait(call, request->completion);
    r.requests().release(id);
  }
  set_handle(h, -1, 0);
}

// Runs one nonblocking operation with the completion its handle calls for.
// start(completion, batches): batches is the aggregate handle's list of
// vector messages being filled, or nullptr.
template <typename Start>
int nonblocking(const char* call, Runtime& r, int proc, armci_hdl_t* handle, Start start) {
  const Runtime::NonblockingScope nonblocking_call(r);
  if (handle == nullptr) {
    start(r.implicit_completion(proc), static_cast<armci::VectorBatches*>(nullptr));
    r.limit_implicit(proc);
    return 0;
  }
  check_handle(call, handle);
  if (r.peer_kind(proc) != PeerKind::network && handle->request < 0) {
    // Same-node transfers are finished when start() returns: no slot needed.
    Completion done;
    start(done, static_cast<armci::VectorBatches*>(nullptr));
    return 0;
  }
  Runtime::Requests::Id id{};
  armci::ExplicitRequest* request = nullptr;
  if (handle->request >= 0) {
    if (auto* found = r.requests().find(handle_id(handle)); found && is_aggregate(handle)) {
      id = handle_id(handle);
      request = found;  // aggregate: more operations on one request
    } else {
      complete_handle(call, r, handle);  // reuse before wait: finish the old one first
    }
  }
  const bool fresh = request == nullptr;
  if (fresh) {
    id = r.requests().acquire();
    request = r.requests().find(id);
    request->peer = proc;
    set_handle(handle, static_cast<int>(id.index), id.generation);
  }
  start(request->completion, is_aggregate(handle) ? &request->batches : nullptr);
  if (request->batches.empty() && r.test(call, request->completion, false)) {
    r.requests().release(id);
    set_handle(handle, -1, 0);
  } else if (fresh) {
    r.note_pending(id);
  }
  return 0;
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- start-up

int ARMCI_Init(void) {
  if (Runtime::get() == nullptr) Runtime::initialize();
  return 0;
}

int ARMCI_Init_args(int* argc, char*** argv) { return ARMCI_Init(); }

int ARMCI_Initialized(void) { return Runtime::get() != nullptr; }

int ARMCI_Finalize(void) {
  runtime("ARMCI_Finalize");
  Runtime::finalize();
  return 0;
}

void ARMCI_Cleanup(void) {
  if (Runtime* r = Runtime::get()) r->cleanup_names();
}

void ARMCI_Error(const char* msg, int code) {
  fail("ARMCI_Error", "%s (code %d)", msg ? msg : "(no message)", code);
}

// ---------------------------------------------------------------- memory

int ARMCI_Malloc(void** base_ptrs, armci_size_t bytes) {
  Runtime& r = runtime("ARMCI_Malloc");
  if (base_ptrs == nullptr) fail("ARMCI_Malloc", "argument 'base_ptrs' is NULL");
  if (bytes < 0) fail("ARMCI_Malloc", "argument 'bytes' (%ld) is negative", bytes);
  auto bases = r.allocate("ARMCI_Malloc", static_cast<std::size_t>(bytes));
  std::memcpy(base_ptrs, bases.data(), bases.size() * sizeof(void*));
  return 0;
}

int ARMCI_Free(void* ptr) {
  runtime("ARMCI_Free").release("ARMCI_Free", ptr);
  return 0;
}

void* ARMCI_Malloc_local(armci_size_t bytes) {
  runtime("ARMCI_Malloc_local");
  if (bytes < 0) fail("ARMCI_Malloc_local", "argument 'bytes' (%ld) is negative", bytes);
  void* p = nullptr;
  // Cache-line alignment keeps small transfers from straddling lines.
  if (posix_memalign(&p, 64, bytes > 0 ? static_cast<std::size_t>(bytes) : 1) != 0)
    fail("ARMCI_Malloc_local", "out of memory for %ld bytes", bytes);
  return p;
}

int ARMCI_Free_local(void* ptr) {
  runtime("ARMCI_Free_local");
  std::free(ptr);
  return 0;
}

// ---------------------------------------------------------------- transfers

int ARMCI_Put(void* src, void* dst, int bytes, int proc) {
  Runtime& r = runtime("ARMCI_Put");
  check_transfer("ARMCI_Put", r, src, dst, bytes, proc);
  return blocking("ARMCI_Put", r, [&](Completion& c, armci::VectorBatches*) {
    r.start_put("ARMCI_Put", src, dst, static_cast<std::size_t>(bytes), proc, c);
  });
}

int ARMCI_Get(void* src, void* dst, int bytes, int proc) {
  Runtime& r = runtime("ARMCI_Get");
  check_transfer("ARMCI_Get", r, src, dst, bytes, proc);
  return blocking("ARMCI_Get", r, [&](Completion& c, armci::VectorBatches*) {
    r.start_get("ARMCI_Get", src, dst, static_cast<std::size_t>(bytes), proc, c);
  });
}

int ARMCI_Acc(int datatype, void* scale, void* src, void* dst, int bytes, int proc) {
  Runtime& r = runtime("ARMCI_Acc");
  check_transfer("ARMCI_Acc", r, src, dst, bytes, proc);
  check_acc("ARMCI_Acc", datatype, scale, bytes);
  const auto factor = armci::make_acc_scale(datatype, scale);
  return blocking("ARMCI_Acc", r, [&](Completion& c, armci::VectorBatches*) {
    r.start_acc("ARMCI_Acc", datatype, factor, src, dst, static_cast<std::size_t>(bytes), proc, c);
  });
}

void ARMCI_INIT_HANDLE(armci_hdl_t* handle) {
  if (handle == nullptr) fail("ARMCI_INIT_HANDLE", "argument 'handle' is NULL");
  handle->request = -1;
  handle->tag = static_cast<int>(kMarker << 24);
}

void ARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t* handle) {
  if (handle == nullptr) fail("ARMCI_SET_AGGREGATE_HANDLE", "argument 'handle' is NULL");
  check_handle("ARMCI_SET_AGGREGATE_HANDLE", handle);
  handle->tag = static_cast<int>(tag_bits(handle) | kAggregateBit);
}

void ARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t* handle) {
  if (handle == nullptr) fail("ARMCI_UNSET_AGGREGATE_HANDLE", "argument 'handle' is NULL");
  check_handle("ARMCI_UNSET_AGGREGATE_HANDLE", handle);
  handle->tag = static_cast<int>(tag_bits(handle) & ~kAggregateBit);
}

int ARMCI_NbPut(void* src, void* dst, int bytes, int proc, armci_hdl_t* handle) {
  Runtime& r = runtime("ARMCI_NbPut");
  check_transfer("ARMCI_NbPut", r, src, dst, bytes, proc);
  return nonblocking("ARMCI_NbPut", r, proc, handle, [&](Completion& c, armci::VectorBatches* batches) {
    r.start_put("ARMCI_NbPut", src, dst, static_cast<std::size_t>(bytes), proc, c, batches);
  });
}

int ARMCI_NbGet(void* src, void* dst, int bytes, int proc, armci_hdl_t* handle) {
  Runtime& r = runtime("ARMCI_NbGet");
  check_transfer("ARMCI_NbGet", r, src, dst, bytes, proc);
  return nonblocking("ARMCI_NbGet", r, proc, handle, [&](Completion& c, armci::VectorBatches* batches) {
    r.start_get("ARMCI_NbGet", src, dst, static_cast<std::size_t>(bytes), proc, c, batches);
  });
}

int ARMCI_NbAcc(int datatype, void* scale, void* src, void* dst, int bytes, int proc, armci_hdl_t* handle) {
  Runtime& r = runtime("ARMCI_NbAcc");
  check_transfer("ARMCI_NbAcc", r, src, dst, bytes, proc);
  check_acc("ARMCI_NbAcc", datatype, scale, bytes);
  const auto factor = armci::make_acc_scale(datatype, scale);
  return nonblocking("ARMCI_NbAcc", r, proc, handle, [&](Completion& c, armci::VectorBatches* batches) {
    r.start_acc("ARMCI_NbAcc", datatype, factor, src, dst, static_cast<std::size_t>(bytes), proc, c, batches);
  });
}

int ARMCI_Wait(armci_hdl_t* handle) {
  Runtime& r = runtime("ARMCI_Wait");
  if (handle == nullptr) fail("ARMCI_Wait", "argument 'handle' is NULL");
  check_handle("ARMCI_Wait", handle);
  complete_handle("ARMCI_Wait", r, handle);
  return 0;
}

int ARMCI_Test(armci_hdl_t* handle) {
  Runtime& r = runtime("ARMCI_Test");
  if (handle == nullptr) fail("ARMCI_Test", "argument 'handle' is NULL");
  check_handle("ARMCI_Test", handle);
  if (handle->request < 0) return 0;
  const auto id = handle_id(handle);
  auto* request = r.requests().find(id);
  if (request != nullptr) r.send_batches(request->batches, request->completion);
  if (request != nullptr && !r.test("ARMCI_Test", request->completion)) return 1;
  if (request != nullptr) r.requests().release(id);
  set_handle(handle, -1, 0);
  return 0;
}

int ARMCI_WaitProc(int proc) {
  Runtime& r = runtime("ARMCI_WaitProc");
  check_proc("ARMCI_WaitProc", r, proc);
  r.wait_proc(proc);
  return 0;
}

int ARMCI_WaitAll(void) {
  runtime("ARMCI_WaitAll").wait_all();
  return 0;
}

void ARMCI_Fence(int proc) {
  Runtime& r = runtime("ARMCI_Fence");
  check_proc("ARMCI_Fence", r, proc);
  r.fence(proc);
}

void ARMCI_AllFence(void) { runtime("ARMCI_AllFence").all_fence(); }

void ARMCI_Barrier(void) { runtime("ARMCI_Barrier").barrier(); }

// ---------------------------------------------------------------- values

#define ARMCI_VALUE_CALLS(Suffix, Type)                                                     \
  int ARMCI_PutValue##Suffix(Type src, void* dst, int proc) {                               \
    Runtime& r = runtime("ARMCI_PutValue" #Suffix);                                         \
    check_proc("ARMCI_PutValue" #Suffix, r, proc);                                          \
    check_pointer("ARMCI_PutValue" #Suffix, "dst", dst, 1);                                 \
    return blocking("ARMCI_PutValue" #Suffix, r, [&](Completion& c, armci::VectorBatches*) {                       \
      r.start_put("ARMCI_PutValue" #Suffix, &src, dst, sizeof(Type), proc, c);              \
    });                                                                                     \
  }                                                                                         \
  /* The value lives on this stack frame, so the put is complete locally  */                \
  /* before the call returns: the handle is left with nothing to wait for. */               \
  int ARMCI_NbPutValue##Suffix(Type src, void* dst, int proc, armci_hdl_t* handle) {        \
    Runtime& r = runtime("ARMCI_NbPutValue" #Suffix);                                       \
    if (handle != nullptr) {                                                                \
      check_handle("ARMCI_NbPutValue" #Suffix, handle);                                     \
      if (!is_aggregate(handle)) complete_handle("ARMCI_NbPutValue" #Suffix, r, handle);    \
    }                                                                                       \
    return ARMCI_PutValue##Suffix(src, dst, proc);                                          \
  }                                                                                         \
  Type ARMCI_GetValue##Suffix(void* src, int proc) {                                        \
    Runtime& r = runtime("ARMCI_GetValue" #Suffix);                                         \
    check_proc("ARMCI_GetValue" #Suffix, r, proc);                                          \
    check_pointer("ARMCI_GetValue" #Suffix, "src", src, 1);                                 \
    Type value{};                                                                           \
    blocking("ARMCI_GetValue" #Suffix, r, [&](Completion& c, armci::VectorBatches*) {                              \
      r.start_get("ARMCI_GetValue" #Suffix, src, &value, sizeof(Type), proc, c);            \
    });                                                                                     \
    return value;                                                                           \
  }

ARMCI_VALUE_CALLS(Int, int)
ARMCI_VALUE_CALLS(Long, long)
ARMCI_VALUE_CALLS(Float, float)
ARMCI_VALUE_CALLS(Double, double)
#undef ARMCI_VALUE_CALLS

// ---------------------------------------------------------------- synchronisation

int ARMCI_Rmw(int op, void* ploc, void* prem, int value, int proc) {
  Runtime& r = runtime("ARMCI_Rmw");
  check_proc("ARMCI_Rmw", r, proc);
  if (op < ARMCI_FETCH_AND_ADD || op > ARMCI_SWAP_LONG)
    fail("ARMCI_Rmw", "argument 'op' (%d) is not ARMCI_FETCH_AND_ADD, ARMCI_FETCH_AND_ADD_LONG, "
                      "ARMCI_SWAP or ARMCI_SWAP_LONG", op);
  check_pointer("ARMCI_Rmw", "ploc", ploc, 1);
  check_pointer("ARMCI_Rmw", "prem", prem, 1);
  r.sync().rmw("ARMCI_Rmw", op, ploc, prem, value, proc);
  return 0;
}

int ARMCI_Create_mutexes(int count) {
  runtime("ARMCI_Create_mutexes").sync().create_mutexes("ARMCI_Create_mutexes", count);
  return 0;
}

int ARMCI_Destroy_mutexes(void) {
  runtime("ARMCI_Destroy_mutexes").sync().destroy_mutexes("ARMCI_Destroy_mutexes");
  return 0;
}

void ARMCI_Lock(int mutex, int proc) {
  Runtime& r = runtime("ARMCI_Lock");
  check_proc("ARMCI_Lock", r, proc);
  r.sync().lock("ARMCI_Lock", mutex, proc);
}

void ARMCI_Unlock(int mutex, int proc) {
  Runtime& r = runtime("ARMCI_Unlock");
  check_proc("ARMCI_Unlock", r, proc);
  r.sync().unlock("ARMCI_Unlock", mutex, proc);
}

int ARMCI_Put_flag(void* src, void* dst, int bytes, int* flag, int value, int proc) {
  Runtime& r = runtime("ARMCI_Put_flag");
  check_transfer("ARMCI_Put_flag", r, src, dst, bytes, proc);
  check_pointer("ARMCI_Put_flag", "flag", flag, 1);
  r.sync().put_flag("ARMCI_Put_flag", src, dst, static_cast<std::size_t>(bytes), flag, value, proc);
  return 0;
}

int armci_notify(int proc) {
  Runtime& r = runtime("armci_notify");
  check_proc("armci_notify", r, proc);
  return r.sync().notify("armci_notify", proc);
}

int armci_notify_wait(int proc, int* pval) {
  Runtime& r = runtime("armci_notify_wait");
  check_proc("armci_notify_wait", r, proc);
  return r.sync().notify_wait("armci_notify_wait", proc, pval);
}

// ---------------------------------------------------------------- topology

static Runtime& domain_runtime(const char* call, armci_domain_t domain) {
  Runtime& r = runtime(call);
  if (domain != ARMCI_DOMAIN_SMP) fail(call, "argument 'domain' (%d) is not ARMCI_DOMAIN_SMP", domain);
  return r;
}

static void check_node(const char* call, const Runtime& r, int id) {
  if (id < 0 || id >= r.node_count())
    fail(call, "argument 'id' (%d) is out of range [0, %d)", id, r.node_count());
}

int armci_domain_nprocs(armci_domain_t domain, int id) {
  Runtime& r = domain_runtime("armci_domain_nprocs", domain);
  check_node("armci_domain_nprocs", r, id);
  return static_cast<int>(r.node_members(id).size());
}

int armci_domain_id(armci_domain_t domain, int glob_proc_id) {
  Runtime& r = domain_runtime("armci_domain_id", domain);
  if (glob_proc_id < 0 || glob_proc_id >= r.size())
    fail("armci_domain_id", "argument 'glob_proc_id' (%d) is out of range [0, %d)", glob_proc_id, r.size());
  return r.node_of(glob_proc_id);
}

int armci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id) {
  Runtime& r = domain_runtime("armci_domain_glob_proc_id", domain);
  check_node("armci_domain_glob_proc_id", r, id);
  const auto& members = r.node_members(id);
  if (loc_proc_id < 0 || static_cast<std::size_t>(loc_proc_id) >= members.size())
    fail("armci_domain_glob_proc_id", "argument 'loc_proc_id' (%d) is out of range [0, %zu)", loc_proc_id,
         members.size());
  return members[static_cast<std::size_t>(loc_proc_id)];
}

int armci_domain_my_id(armci_domain_t domain) {
  Runtime& r = domain_runtime("armci_domain_my_id", domain);
  return r.node_of(r.rank());
}

int armci_domain_count(armci_domain_t domain) { return domain_runtime("armci_domain_count", domain).node_count(); }

int armci_domain_same_id(armci_domain_t domain, int proc) {
  Runtime& r = domain_runtime("armci_domain_same_id", domain);
  check_proc("armci_domain_same_id", r, proc);
  return r.node_of(proc) == r.node_of(r.rank());
}

int ARMCI_Same_node(int proc) {
  Runtime& r = runtime("ARMCI_Same_node");
  check_proc("ARMCI_Same_node", r, proc);
  return r.node_of(proc) == r.node_of(r.rank());
}

int ARMCI_Uses_shm(void) { return runtime("ARMCI_Uses_shm").settings().shared_memory ? 1 : 0; }

int armci_msg_me(void) { return runtime("armci_msg_me").rank(); }
int armci_msg_nproc(void) { return runtime("armci_msg_nproc").size(); }
void armci_msg_barrier(void) { runtime("armci_msg_barrier").barrier(); }

}  // extern "C"

// ---------------------------------------------------------------- strided and vector
// The layout is walked piece by piece and each contiguous piece goes
// through start_put/start_get/start_acc with one Completion, so blocking,
// Nb, implicit handles, Wait and Fence behave as for contiguous calls.
// Direct protocol: each piece is its own network operation. Buffered: pieces
// are packed into vector messages that the target's helper unpacks (chosen
// for small pieces to network peers, ARMCI_STRIDED_PROTOCOL and
// ARMCI_STRIDED_BUFFERED_MAX). Every argument, and the whole remote extent,
// is checked before the first piece moves.

namespace {

enum class Op { put, get, acc };

struct AccArgs {
  int datatype = 0;
  armci::AccScale scale{};
};

void check_strided_problem(const char* call, const armci::strided::Problem& p) {
  if (p) [[unlikely]] fail(call, "%s", p.message);
}

// Checks everything of a strided call; false when there is nothing to do.
bool check_strided(const char* call, Runtime& r, Op op, const AccArgs* acc, const void* src, const int* src_stride,
                   const void* dst, const int* dst_stride, const int* count, int levels, int proc) {
  check_proc(call, r, proc);
  armci::strided::Shape shape;
  check_strided_problem(call, armci::strided::check(src_stride, dst_stride, count, levels, shape));
  if (shape.pieces == 0) return false;
  if (src == nullptr) fail(call, "argument 'src_ptr' is NULL");
  if (dst == nullptr) fail(call, "argument 'dst_ptr' is NULL");
  if (acc != nullptr) {
    const std::size_t element = armci::acc_element_size(acc->datatype);
    if (shape.piece_bytes % static_cast<std::int64_t>(element) != 0)
      fail(call, "argument 'count' (count[0] = %lld bytes) is not a whole number of %zu-byte elements",
           static_cast<long long>(shape.piece_bytes), element);
  }
  // One region must hold the remote side from its lowest to its highest byte.
  if (op == Op::get)
    r.check_remote(call, "src_ptr", proc, src, static_cast<std::size_t>(shape.src_extent));
  else
    r.check_remote(call, "dst_ptr", proc, dst, static_cast<std::size_t>(shape.dst_extent));
  return true;
}

enum class Protocol { direct, buffered, host };

// How pieces of `piece_bytes` to proc travel. Same node: copied piece by
// piece. Network: packed into vector messages that the target's helper
// unpacks (buffered, small pieces), the layout handed to the target's
// helper which posts gather/scatter lists itself (host-assisted, medium
// pieces where the layer has SGE lists; not for Acc, which the target must
// apply itself), or one network operation per run of pieces contiguous at
// the target (direct).
Protocol strided_protocol(const Runtime& r, Op op, int proc, std::size_t piece_bytes) {
  if (r.peer_kind(proc) != PeerKind::network) return Protocol::direct;
  switch (r.settings().strided) {
    case armci::StridedChoice::direct: return Protocol::direct;
    case armci::StridedChoice::buffered: return Protocol::buffered;
    case armci::StridedChoice::host: return op == Op::acc ? Protocol::buffered : Protocol::host;
    case armci::StridedChoice::automatic: break;
  }
  if (piece_bytes <= r.settings().strided_buffered_max) return Protocol::buffered;
  if (op != Op::acc && r.network_max_sge() > 1 && piece_bytes <= r.settings().strided_host_max) return Protocol::host;
  return Protocol::direct;
}

// Sends one piece the way the protocol says; `batches` collects buffered
// pieces (the call's own list, or an aggregate handle's).
void start_piece(const char* call, Runtime& r, Op op, const AccArgs* acc, std::byte* s, std::byte* d,
                 std::size_t bytes, int proc, Completion& c, armci::VectorBatches* batches, bool buffered) {
  switch (op) {
    case Op::put: r.start_put(call, s, d, bytes, proc, c, batches, buffered); break;
    case Op::get: r.start_get(call, s, d, bytes, proc, c, batches, buffered); break;
    case Op::acc: r.start_acc(call, acc->datatype, acc->scale, s, d, bytes, proc, c, batches, buffered); break;
  }
}


// Same node, put or get: the remote side is translated once and every piece
// is a plain copy, so small pieces cost a few nanoseconds each.
template <std::size_t Fixed>
void copy_pieces(std::byte* s, const int* src_stride, std::byte* d, const int* dst_stride, const int* count,
                 int levels) {
  const auto bytes = static_cast<std::size_t>(count[0]);
  if (levels == 1) {
    const std::int64_t ss = src_stride[0], ds = dst_stride[0];
    for (int i = 0; i < count[1]; ++i, s += ss, d += ds) {
      if constexpr (Fixed != 0) std::memcpy(d, s, Fixed);
      else if (bytes < 256) std::memcpy(d, s, bytes);
      else armci::copy_bytes(d, s, bytes);
    }
    return;
  }
  armci::strided::for_each_piece(src_stride, dst_stride, count, levels,
                                 [&](std::int64_t so, std::int64_t dso, std::size_t n) {
                                   if constexpr (Fixed != 0) std::memcpy(d + dso, s + so, Fixed);
                                   else if (n < 256) std::memcpy(d + dso, s + so, n);
                                   else armci::copy_bytes(d + dso, s + so, n);
                                 });
}

bool copy_strided_locally(const char* call, Runtime& r, Op op, std::byte* s, const int* src_stride, std::byte* d,
                          const int* dst_stride, const int* count, int levels, int proc) {
  const auto extent = static_cast<std::size_t>(
      armci::strided::extent(op == Op::get ? src_stride : dst_stride, count, levels));
  if (op == Op::get) {
    s = r.local_mapping(call, "src_ptr", proc, s, extent);
    if (s == nullptr) return false;
  } else {
    d = r.local_mapping(call, "dst_ptr", proc, d, extent);
    if (d == nullptr) return false;
  }
  switch (count[0]) {
    case 8: copy_pieces<8>(s, src_stride, d, dst_stride, count, levels); break;
    case 16: copy_pieces<16>(s, src_stride, d, dst_stride, count, levels); break;
    case 32: copy_pieces<32>(s, src_stride, d, dst_stride, count, levels); break;
    case 64: copy_pieces<64>(s, src_stride, d, dst_stride, count, levels); break;
    case 128: copy_pieces<128>(s, src_stride, d, dst_stride, count, levels); break;
    default: copy_pieces<0>(s, src_stride, d, dst_stride, count, levels); break;
  }
  return true;
}

void start_strided(const char* call, Runtime& r, Op op, const AccArgs* acc, void* src, const int* src_stride,
                   void* dst, const int* dst_stride, const int* count, int levels, int proc, Completion& c,
                   armci::VectorBatches* aggregate) {
  auto* s = static_cast<std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  if (op != Op::acc && r.peer_kind(proc) != PeerKind::network &&
      copy_strided_locally(call, r, op, s, src_stride, d, dst_stride, count, levels, proc))
    return;
  const Protocol protocol = strided_protocol(r, op, proc, static_cast<std::size_t>(count[0]));
  if (protocol == Protocol::host && aggregate == nullptr) {
    if (op == Op::get)
      r.start_host_strided(call, true, dst, dst_stride, src, src_stride, count, levels, proc, c);
    else
      r.start_host_strided(call, false, src, src_stride, dst, dst_stride, count, levels, proc, c);
    return;
  }
  if (protocol == Protocol::direct && op != Op::acc && aggregate == nullptr &&
      r.peer_kind(proc) == PeerKind::network) {
    // Direct: consecutive pieces contiguous at the target leave as one
    // operation with a local gather (put) or scatter (get) list.
    auto send_run = [&](std::span<const armci::platform::LocalSegment> run, std::uint64_t remote_address,
                        std::size_t bytes) {
      void* remote = reinterpret_cast<void*>(remote_address);
      if (run.size() == 1 && op == Op::put) r.start_put(call, run[0].address, remote, bytes, proc, c);
      else if (run.size() == 1) r.start_get(call, remote, run[0].address, bytes, proc, c);
      else if (op == Op::put) r.start_put_segments(call, run, remote, bytes, proc, c);
      else r.start_get_segments(call, run, remote, bytes, proc, c);
    };
    armci::strided::Runs<armci::platform::LocalSegment, decltype(send_run)> runs(r.network_max_sge(), send_run);
    armci::strided::for_each_piece(src_stride, dst_stride, count, levels,
                                   [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
                                     if (op == Op::put) runs.add(s + so, reinterpret_cast<std::uintptr_t>(d + dso), bytes);
                                     else runs.add(d + dso, reinterpret_cast<std::uintptr_t>(s + so), bytes);
                                   });
    runs.finish();
    return;
  }
  const bool buffered = protocol == Protocol::buffered;
  armci::VectorBatches own;
  armci::VectorBatches* batches = aggregate ? aggregate : (buffered ? &own : nullptr);
  armci::strided::for_each_piece(src_stride, dst_stride, count, levels,
                                 [&](std::int64_t so, std::int64_t dso, std::size_t bytes) {
                                   start_piece(call, r, op, acc, s + so, d + dso, bytes, proc, c, batches, buffered);
                                 });
  r.send_batches(own, c);
}

AccArgs make_acc(const char* call, int datatype, const void* scale) {
  check_acc(call, datatype, scale, 0);
  return AccArgs{datatype, armci::make_acc_scale(datatype, scale)};
}

int strided_call(const char* call, Op op, const AccArgs* acc, void* src, int* src_stride, void* dst, int* dst_stride,
                 int* count, int levels, int proc, bool nb, armci_hdl_t* handle) {
  Runtime& r = runtime(call);
  if (!check_strided(call, r, op, acc, src, src_stride, dst, dst_stride, count, levels, proc)) {
    if (nb && handle != nullptr) check_handle(call, handle);
    return 0;
  }
  auto start = [&](Completion& c, armci::VectorBatches* aggregate) {
    start_strided(call, r, op, acc, src, src_stride, dst, dst_stride, count, levels, proc, c, aggregate);
  };
  return nb ? nonblocking(call, r, proc, handle, start) : blocking(call, r, start);
}

// Checks a whole vector call (every segment list, every remote piece).
void check_vector(const char* call, Runtime& r, Op op, const AccArgs* acc, const armci_giov_t* iov, int iov_len,
                  int proc) {
  check_proc(call, r, proc);
  if (iov_len < 0) fail(call, "argument 'iov_len' (%d) is negative", iov_len);
  if (iov_len > 0 && iov == nullptr) fail(call, "argument 'iov' is NULL");
  const std::size_t element = acc ? armci::acc_element_size(acc->datatype) : 1;
  for (int i = 0; i < iov_len; ++i) {
    const armci_giov_t& v = iov[i];
    if (v.bytes < 0) fail(call, "argument 'bytes' (iov[%d].bytes = %d) is negative", i, v.bytes);
    if (v.ptr_array_len < 0)
      fail(call, "argument 'ptr_array_len' (iov[%d].ptr_array_len = %d) is negative", i, v.ptr_array_len);
    if (v.bytes == 0 || v.ptr_array_len == 0) continue;
    if (v.src_ptr_array == nullptr) fail(call, "argument 'src_ptr_array' (iov[%d]) is NULL", i);
    if (v.dst_ptr_array == nullptr) fail(call, "argument 'dst_ptr_array' (iov[%d]) is NULL", i);
    if (static_cast<std::size_t>(v.bytes) % element != 0)
      fail(call, "argument 'bytes' (iov[%d].bytes = %d) is not a whole number of %zu-byte elements", i, v.bytes,
           element);
    for (int j = 0; j < v.ptr_array_len; ++j) {
      if (v.src_ptr_array[j] == nullptr) fail(call, "argument 'src_ptr_array' (iov[%d][%d]) is NULL", i, j);
      if (v.dst_ptr_array[j] == nullptr) fail(call, "argument 'dst_ptr_array' (iov[%d][%d]) is NULL", i, j);
      if (op == Op::get)
        r.check_remote(call, "src_ptr_array", proc, v.src_ptr_array[j], static_cast<std::size_t>(v.bytes));
      else
        r.check_remote(call, "dst_ptr_array", proc, v.dst_ptr_array[j], static_cast<std::size_t>(v.bytes));
    }
  }
}

void start_vector(const char* call, Runtime& r, Op op, const AccArgs* acc, const armci_giov_t* iov, int iov_len,
                  int proc, Completion& c, armci::VectorBatches* aggregate) {
  armci::VectorBatches own;
  for (int i = 0; i < iov_len; ++i) {
    const armci_giov_t& v = iov[i];
    if (v.bytes == 0) continue;
    const auto bytes = static_cast<std::size_t>(v.bytes);
    // Host-assisted needs a strided layout to hand over: vector lists go
    // buffered or direct.
    const bool buffered = strided_protocol(r, op, proc, bytes) == Protocol::buffered;
    armci::VectorBatches* batches = aggregate ? aggregate : (buffered ? &own : nullptr);
    for (int j = 0; j < v.ptr_array_len; ++j)
      start_piece(call, r, op, acc, static_cast<std::byte*>(v.src_ptr_array[j]),
                  static_cast<std::byte*>(v.dst_ptr_array[j]), bytes, proc, c, batches, buffered);
  }
  r.send_batches(own, c);
}

int vector_call(const char* call, Op op, const AccArgs* acc, armci_giov_t* iov, int iov_len, int proc, bool nb,
                armci_hdl_t* handle) {
  Runtime& r = runtime(call);
  check_vector(call, r, op, acc, iov, iov_len, proc);
  auto start = [&](Completion& c, armci::VectorBatches* aggregate) {
    start_vector(call, r, op, acc, iov, iov_len, proc, c, aggregate);
  };
  return nb ? nonblocking(call, r, proc, handle, start) : blocking(call, r, start);
}

// Local pack/unpack between a strided layout at ptr and a contiguous buffer.
void copy_strided(const char* call, void* ptr, int levels, int* stride, int* count, char* buf, bool pack) {
  armci::strided::Shape shape;
  check_strided_problem(call, armci::strided::check(stride, stride, count, levels, shape));
  if (shape.pieces == 0) return;
  if (ptr == nullptr) fail(call, "argument 'ptr' is NULL");
  if (buf == nullptr) fail(call, "argument 'buf' is NULL");
  auto* base = static_cast<char*>(ptr);
  std::size_t at = 0;
  armci::strided::for_each_piece(stride, stride, count, levels, [&](std::int64_t off, std::int64_t, std::size_t n) {
    if (pack)
      std::memcpy(buf + at, base + off, n);
    else
      std::memcpy(base + off, buf + at, n);
    at += n;
  });
}

}  // namespace

extern "C" {

int ARMCI_PutS(void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
               int stride_levels, int proc) {
  return strided_call("ARMCI_PutS", Op::put, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, false, nullptr);
}

int ARMCI_PutS_flag(void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                    int stride_levels, int* flag, int value, int proc) {
  Runtime& r = runtime("ARMCI_PutS_flag");
  check_proc("ARMCI_PutS_flag", r, proc);
  check_pointer("ARMCI_PutS_flag", "flag", flag, 1);
  r.check_remote("ARMCI_PutS_flag", "flag", proc, flag, sizeof(int));
  // A blocking strided put is complete at the target for every protocol
  // whose pieces a helper applies (buffered, host-assisted); direct pieces
  // are ordered before the flag by put_flag's own ordering.
  strided_call("ARMCI_PutS_flag", Op::put, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
               stride_levels, proc, false, nullptr);
  r.sync().put_flag("ARMCI_PutS_flag", nullptr, nullptr, 0, flag, value, proc);
  return 0;
}

int ARMCI_GetS(void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
               int stride_levels, int proc) {
  return strided_call("ARMCI_GetS", Op::get, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, false, nullptr);
}

int ARMCI_AccS(int datatype, void* scale, void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[],
               int count[], int stride_levels, int proc) {
  runtime("ARMCI_AccS");
  const AccArgs acc = make_acc("ARMCI_AccS", datatype, scale);
  return strided_call("ARMCI_AccS", Op::acc, &acc, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, false, nullptr);
}

int ARMCI_NbPutS(void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                 int stride_levels, int proc, armci_hdl_t* handle) {
  return strided_call("ARMCI_NbPutS", Op::put, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, true, handle);
}

int ARMCI_NbGetS(void* src_ptr, int src_stride_ar[], void* dst_ptr, int dst_stride_ar[], int count[],
                 int stride_levels, int proc, armci_hdl_t* handle) {
  return strided_call("ARMCI_NbGetS", Op::get, nullptr, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, true, handle);
}

int ARMCI_NbAccS(int datatype, void* scale, void* src_ptr, int src_stride_ar[], void* dst_ptr,
                 int dst_stride_ar[], int count[], int stride_levels, int proc, armci_hdl_t* handle) {
  runtime("ARMCI_NbAccS");
  const AccArgs acc = make_acc("ARMCI_NbAccS", datatype, scale);
  return strided_call("ARMCI_NbAccS", Op::acc, &acc, src_ptr, src_stride_ar, dst_ptr, dst_stride_ar, count,
                      stride_levels, proc, true, handle);
}

int ARMCI_PutV(armci_giov_t* iov, int iov_len, int proc) {
  return vector_call("ARMCI_PutV", Op::put, nullptr, iov, iov_len, proc, false, nullptr);
}

int ARMCI_GetV(armci_giov_t* iov, int iov_len, int proc) {
  return vector_call("ARMCI_GetV", Op::get, nullptr, iov, iov_len, proc, false, nullptr);
}

int ARMCI_AccV(int datatype, void* scale, armci_giov_t* iov, int iov_len, int proc) {
  runtime("ARMCI_AccV");
  const AccArgs acc = make_acc("ARMCI_AccV", datatype, scale);
  return vector_call("ARMCI_AccV", Op::acc, &acc, iov, iov_len, proc, false, nullptr);
}

int ARMCI_NbPutV(armci_giov_t* iov, int iov_len, int proc, armci_hdl_t* handle) {
  return vector_call("ARMCI_NbPutV", Op::put, nullptr, iov, iov_len, proc, true, handle);
}

int ARMCI_NbGetV(armci_giov_t* iov, int iov_len, int proc, armci_hdl_t* handle) {
  return vector_call("ARMCI_NbGetV", Op::get, nullptr, iov, iov_len, proc, true, handle);
}

int ARMCI_NbAccV(int datatype, void* scale, armci_giov_t* iov, int iov_len, int proc, armci_hdl_t* handle) {
  runtime("ARMCI_NbAccV");
  const AccArgs acc = make_acc("ARMCI_NbAccV", datatype, scale);
  return vector_call("ARMCI_NbAccV", Op::acc, &acc, iov, iov_len, proc, true, handle);
}

void armci_write_strided(void* ptr, int stride_levels, int stride_arr[], int count[], char* buf) {
  copy_strided("armci_write_strided", ptr, stride_levels, stride_arr, count, buf, true);
}

void armci_read_strided(void* ptr, int stride_levels, int stride_arr[], int count[], char* buf) {
  copy_strided("armci_read_strided", ptr, stride_levels, stride_arr, count, buf, false);
}

}  // extern "C"
