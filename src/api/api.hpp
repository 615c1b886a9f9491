// What every family of C entry points shares: the entry-point macro (each
// call is defined as PARMCI_x with a weak ARMCI_x alias, so a profiler can
// define ARMCI_x and call PARMCI_x), the argument checks, the encoding of
// armci_hdl_t, and the blocking/nonblocking drivers that hand a transfer to
// the core with the completion its handle calls for. Internal to src/api:
// the API checks and translates; the core chooses how anything travels.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <type_traits>

#include "include/armci.h"
#include "src/core/acc.hpp"
#include "src/core/error.hpp"
#include "src/core/peer_failure.hpp"
#include "src/core/runtime.hpp"
#include "src/core/strided.hpp"

// The core's accumulate types are the public ones (src/core/acc.hpp).
static_assert(armci::kAccInt == int{ARMCI_ACC_INT} && armci::kAccLong == int{ARMCI_ACC_LNG} &&
              armci::kAccFloat == int{ARMCI_ACC_FLT} && armci::kAccDouble == int{ARMCI_ACC_DBL} &&
              armci::kAccComplex == int{ARMCI_ACC_CPL} && armci::kAccDoubleComplex == int{ARMCI_ACC_DCP});

// ARMCI_API(int, ARMCI_Put, (void* src, ...)) { body } defines PARMCI_Put
// and makes ARMCI_Put a weak alias of it; armci_api does the same for the
// lower-case calls (parmci_notify for armci_notify). Calls between entry
// points inside the library use the P names, so a profiler counts each
// user call once.
#define ARMCI_API(ret, name, params)                                 \
  extern "C" ret P##name params;                                     \
  extern "C" ret name params __attribute__((weak, alias("P" #name))); \
  extern "C" ret P##name params
#define armci_api(ret, name, params)                                 \
  extern "C" ret p##name params;                                     \
  extern "C" ret name params __attribute__((weak, alias("p" #name))); \
  extern "C" ret p##name params

// Entry points whose work can depend on another rank: a function-try-block
// (ARMCI_PEERS_END after the body) turns a dead peer's PeerDead, in return
// mode, into the call's error result. Zero-cost: nothing runs unless
// something throws.
#define ARMCI_API_PEERS(ret, name, params) ARMCI_API(ret, name, params) try
#define armci_api_peers(ret, name, params) armci_api(ret, name, params) try
#define ARMCI_PEERS_END(ret) \
  catch (...) {              \
    return armci::api::peer_failure_result<ret>(); \
  }
// The same for calls whose result is data (GetValue): 0, not the code.
#define ARMCI_PEERS_END_VALUE(ret) \
  catch (...) {                    \
    armci::api::accept_peer_failure(); \
    return ret{};                  \
  }

namespace armci::api {

using platform::Completion;

// Inside the catch of an entry point: the exception is a dead peer's
// (PeerDead, or any error from below once a death is known, return mode),
// noted for ARMCIX_Peer_error; anything else goes on (and ends the job).
void accept_peer_failure();

template <typename T>
T peer_failure_result() {
  accept_peer_failure();
  if constexpr (std::is_same_v<T, int>) return ARMCI_ERR_PEER_DEAD;
  else if constexpr (!std::is_void_v<T>) return T{};
}

// ---------------------------------------------------------------- checks

[[noreturn]] void not_initialised(const char* call);

// The runtime, or an error naming the call when ARMCI_Init has not run.
inline Runtime& runtime(const char* call) {
  Runtime* r = Runtime::get();
  if (r == nullptr) [[unlikely]]
    not_initialised(call);
  set_current_call(call);
  // A dead peer's memory is gone from the job, over shared memory too:
  // calls that never wait (same-node copies) still look now and then.
  // (initial-exec: see t_call in peer_failure.cpp)
  [[gnu::tls_model("initial-exec")]] static thread_local unsigned calls = 0;
  if ((++calls & 1023) == 0) [[unlikely]]
    probe_liveness();
  check_peers();
  return *r;
}

// proc (or the rank argument `name`) is a rank of the job.
inline void check_proc(const char* call, const Runtime& r, int proc, const char* name = "proc") {
  if (proc < 0 || proc >= r.size()) [[unlikely]]
    fail(call, "argument '%s' (%d) is out of range [0, %d)", name, proc, r.size());
}

// The runtime, for a call on one peer: proc in range and not known dead.
inline Runtime& runtime_for(const char* call, int proc, const char* name = "proc") {
  Runtime& r = runtime(call);
  check_proc(call, r, proc, name);
  check_alive(proc);
  return r;
}

// The runtime, for a call every rank of the job takes part in.
inline Runtime& collective_runtime(const char* call) {
  Runtime& r = runtime(call);
  require_all_alive(call);
  return r;
}

// A count argument (bytes, len, n) is not negative.
inline void check_count(const char* call, int count, const char* name = "bytes") {
  if (count < 0) [[unlikely]] fail(call, "argument '%s' (%d) is negative", name, count);
}

// A pointer argument is not NULL where it must reach bytes (an int or a size_t).
template <typename Count>
inline void check_pointer(const char* call, const char* name, const void* p, Count bytes) {
  if (p == nullptr && bytes > 0) [[unlikely]] fail(call, "argument '%s' is NULL", name);
}

inline void check_transfer(const char* call, const Runtime& r, const void* src, const void* dst, int bytes, int proc) {
  check_proc(call, r, proc);
  check_count(call, bytes);
  check_pointer(call, "src", src, bytes);
  check_pointer(call, "dst", dst, bytes);
}

// An Acc's type and scale, checked, as the core takes them.
AccArgs acc_args(const char* call, int datatype, const void* scale);
// bytes is a whole number of elements of the Acc's type.
void check_acc_bytes(const char* call, const AccArgs& acc, int bytes);

// ---------------------------------------------------------------- handles
// armci_hdl_t (8 bytes, ARMCI-MPI's layout): request = slot index or -1,
// tag = marker (8 bits) | aggregate (1 bit) | generation (23 bits).

constexpr unsigned kMarker = 0x5Au;
constexpr unsigned kAggregateBit = 1u << 23;
constexpr unsigned kGenerationMask = Completions::Requests::kGenerationMask;

inline unsigned tag_bits(const armci_hdl_t* h) { return static_cast<unsigned>(h->tag); }
inline bool is_aggregate(const armci_hdl_t* h) { return tag_bits(h) & kAggregateBit; }

inline void set_handle(armci_hdl_t* h, int request, unsigned generation) {
  h->request = request;
  h->tag = static_cast<int>((kMarker << 24) | (tag_bits(h) & kAggregateBit) | (generation & kGenerationMask));
}

inline Completions::Requests::Id handle_id(const armci_hdl_t* h) {
  return {static_cast<std::uint32_t>(h->request), tag_bits(h) & kGenerationMask};
}

// A handle either holds no request (-1) or the index of a slot the table
// has handed out; anything else is memory that never saw ARMCI_INIT_HANDLE.
inline void check_handle(const char* call, const armci_hdl_t* h) {
  Runtime* r = Runtime::get();
  if ((tag_bits(h) >> 24) != kMarker || h->request < -1 ||
      (r && h->request >= 0 && static_cast<std::size_t>(h->request) >= r->completion().requests().capacity()))
      [[unlikely]]
    fail(call, "argument 'handle' (%p) was not initialised with ARMCI_INIT_HANDLE", static_cast<const void*>(h));
}

// An initialised handle that holds no request: what ARMCI_INIT_HANDLE and
// every completed operation leave, same-node ones from inside their call.
inline bool handle_empty(const armci_hdl_t* h) { return h->request == -1 && (tag_bits(h) >> 24) == kMarker; }

// ARMCI_Wait and ARMCI_Test on an empty handle, after ARMCI_Init: nothing
// to wait for, nothing named in an error, and only the dead-peer check
// every entry makes (the call's name is set when something can fail).
inline bool empty_handle_entry(const armci_hdl_t* h) {
  if (h == nullptr || !handle_empty(h) || Runtime::get() == nullptr) [[unlikely]]
    return false;
  check_peers();
  return true;
}

// A handle the caller must pass: not NULL, and initialised.
inline void check_given_handle(const char* call, const armci_hdl_t* h) {
  if (h == nullptr) fail(call, "argument 'handle' is NULL");
  check_handle(call, h);
}

// A handle on a dead peer's operation: emptied, and the peer's error.
void abandon_if_dead(armci_hdl_t* h, int peer);

// Waits for whatever the handle still holds and empties it.
void complete_handle(const char* call, Runtime& r, armci_hdl_t* h);

// ---------------------------------------------------------------- drivers
// start(completion, mode, aggregate) starts the transfer in the core; these
// give it the completion, mode and vector-message list its call asks for.

// A blocking operation: started, then waited for unless already finished
// (same-node transfers finish inside start).
template <typename Start>
[[gnu::always_inline]] inline int blocking(const char* call, Runtime& r, Start&& start) {
  Completion done;
  start(done, Mode::blocking, static_cast<VectorBatches*>(nullptr));
  if (!done.done()) r.completion().wait(call, done);
  return 0;
}

// Runs one nonblocking operation with the completion its handle calls for:
// the implicit one of proc (NULL handle), a fresh request, or the request
// an aggregate handle is still filling.
template <typename Start>
int nonblocking(const char* call, Runtime& r, int proc, armci_hdl_t* handle, Start&& start) {
  Completions& completion = r.completion();
  if (handle == nullptr) {
    start(completion.implicit(proc), Mode::nonblocking, static_cast<VectorBatches*>(nullptr));
    completion.limit_implicit(proc);
    return 0;
  }
  check_handle(call, handle);
  if (!r.memory().reached_through_network(proc) && handle->request < 0) {
    // Same-node transfers are finished when start() returns: no slot needed
    // (unless the neighbour has parts in network memory).
    Completion done;
    start(done, Mode::nonblocking, static_cast<VectorBatches*>(nullptr));
    return 0;
  }
  Completions::Requests& requests = completion.requests();
  Completions::Requests::Id id{};
  ExplicitRequest* request = nullptr;
  if (handle->request >= 0) {
    if (auto* found = requests.find(handle_id(handle)); found && is_aggregate(handle)) {
      id = handle_id(handle);
      request = found;  // aggregate: more operations on one request
    } else {
      complete_handle(call, r, handle);  // reuse before wait: finish the old one first
    }
  }
  const bool fresh = request == nullptr;
  if (fresh) {
    id = requests.acquire();
    request = requests.find(id);
    request->peer = proc;
    set_handle(handle, static_cast<int>(id.index), id.generation);
  }
  if (is_aggregate(handle))
    start(request->completion, Mode::aggregate, &request->batches);
  else
    start(request->completion, Mode::nonblocking, static_cast<VectorBatches*>(nullptr));
  if (request->batches.empty() && completion.test(call, request->completion, false)) {
    requests.release(id);
    set_handle(handle, -1, 0);
  } else if (fresh) {
    completion.note_pending(id);
  }
  return 0;
}

// A strided put, get or acc, checked and started (src/api/strided.cpp;
// ARMCI_PutS_flag uses it too).
int strided_call(const char* call, Op op, const AccArgs* acc, void* src, int* src_stride, void* dst, int* dst_stride,
                 int* count, int levels, int proc, bool nb, armci_hdl_t* handle);

// A transfer of any shape: blocking (handle unused) or not.
template <typename Start>
[[gnu::always_inline]] inline int transfer(const char* call, Runtime& r, int proc, bool nb, armci_hdl_t* handle,
                                           Start&& start) {
  return nb ? nonblocking(call, r, proc, handle, start) : blocking(call, r, start);
}

// A contiguous transfer (Put/Get/Acc and zero-level strided calls) that
// the core's same-node fast path finished: blocking, or nonblocking with
// no handle or an empty one, whose handle then stays empty (no request, no
// implicit count), so that Wait and Test on it return at once (GA's
// blocking get is ARMCI_NbGetS and ARMCI_Wait). False: nothing was done,
// the call goes the general way. Inlined with no Call or Completion built
// and nothing stored: right after a copy of some KiB a store waits for the
// copy's stores, and each pointer followed is a miss.
[[gnu::always_inline]] inline bool finished_mapped(Runtime& r, Op op, const AccArgs* acc, const void* src, void* dst,
                                                   std::size_t bytes, int proc, bool nb, const armci_hdl_t* handle) {
  if (nb && handle != nullptr && !handle_empty(handle)) return false;
  return r.transfers().contiguous_if_mapped(op, proc, acc, src, dst, bytes);
}

}  // namespace armci::api
