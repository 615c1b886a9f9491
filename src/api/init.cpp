// Start-up and shutdown, errors, and what the API's shared header defines
// out of line.
#include <cstring>

#include "src/api/api.hpp"

static_assert(sizeof(armci_hdl_t) == 8, "armci_hdl_t must stay 8 bytes (ARMCI-MPI layout)");
static_assert(sizeof(armci_giov_t) == 24, "armci_giov_t must keep ARMCI-MPI's layout");
static_assert(sizeof(armci_size_t) == sizeof(long), "armci_size_t is long in ARMCI-MPI");

namespace armci::api {

void not_initialised(const char* call) {
  if (error_rank() < 0) {
    // Before start-up the launcher's environment still says who we are.
    for (const char* name : {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
      if (const char* v = std::getenv(name)) {
        set_error_rank(std::atoi(v));
        break;
      }
  }
  fail(call, "the library is not initialised (call ARMCI_Init first)");
}

AccArgs acc_args(const char* call, int datatype, const void* scale) {
  // acc_base_type: the windows' ops in the high bits are no user's type.
  if (acc_base_type(datatype) != datatype || acc_element_size(datatype) == 0)
    fail(call, "argument 'datatype' (%d) is not an ARMCI Acc type (ARMCI_ACC_INT, ARMCI_ACC_LNG, "
               "ARMCI_ACC_FLT, ARMCI_ACC_DBL, ARMCI_ACC_CPL, ARMCI_ACC_DCP)", datatype);
  if (scale == nullptr) fail(call, "argument 'scale' is NULL");
  return AccArgs{datatype, make_acc_scale(datatype, scale)};
}

void check_acc_bytes(const char* call, const AccArgs& acc, int bytes) {
  const std::size_t element = acc_element_size(acc.datatype);
  if (static_cast<std::size_t>(bytes) % element != 0)
    fail(call, "argument 'bytes' (%d) is not a whole number of %zu-byte elements", bytes, element);
}

void accept_peer_failure() {
  try {
    throw;
  } catch (const PeerDead&) {
  } catch (...) {
    // An error from below (a network layer's, say) while a peer is known
    // dead is that death's.
    probe_liveness();
    if (!return_on_peer_failure() || !peer_failure_known()) throw;
  }
  note_returned_peer_error();
}

void abandon_if_dead(armci_hdl_t* h, int peer) {
  if (!is_dead(peer)) return;
  // The slot stays taken: the layer may still complete into it.
  set_handle(h, -1, 0);
  peer_dead(peer);
}

void complete_handle(const char* call, Runtime& r, armci_hdl_t* h) {
  if (h->request < 0) return;
  const auto id = handle_id(h);
  Completions& completion = r.completion();
  if (auto* request = completion.requests().find(id)) {
    if (peer_failure_known()) [[unlikely]]
      abandon_if_dead(h, request->peer);
    completion.complete(call, *request);
    completion.requests().release(id);
  }
  set_handle(h, -1, 0);
}

}  // namespace armci::api

using namespace armci::api;

ARMCI_API(int, ARMCI_Init, (void)) {
  if (armci::Runtime::get() == nullptr) armci::Runtime::initialize();
  return 0;
}

ARMCI_API(int, ARMCI_Init_args, (int* argc, char*** argv)) { return PARMCI_Init(); }

ARMCI_API(int, ARMCI_Init_mpi_comm, (armci_mpi_comm_t comm)) {
  // A second start over some other set of processes could not be told
  // from the first: it is an error, not a no-op as ARMCI_Init's is.
  if (armci::Runtime::get() != nullptr)
    armci::fail("ARMCI_Init_mpi_comm", "the library is already initialised (ARMCI_Finalize first)");
  armci::Runtime::initialize_on("ARMCI_Init_mpi_comm", reinterpret_cast<void*>(comm));
  return 0;
}

ARMCI_API(int, ARMCI_Initialized, (void)) { return armci::Runtime::get() != nullptr; }

ARMCI_API(int, ARMCI_Finalize, (void)) {
  // A second Finalize (GA's and the program's both) has nothing to end.
  if (armci::Runtime::get() == nullptr) return 0;
  runtime("ARMCI_Finalize");  // abort mode: a death known now ends the process here
  // After a death (return mode) only this rank's part ends: say so.
  const bool alone = armci::peer_failure_known();
  armci::Runtime::finalize();
  return alone ? ARMCI_ERR_PEER_DEAD : 0;
}

ARMCI_API(int, ARMCIX_Dead_ranks, (int* ranks, int max)) {
  runtime("ARMCIX_Dead_ranks");
  if (max < 0) armci::fail("ARMCIX_Dead_ranks", "argument 'max' (%d) is negative", max);
  if (ranks == nullptr && max > 0) armci::fail("ARMCIX_Dead_ranks", "argument 'ranks' is NULL");
  const std::vector<int> dead = armci::dead_ranks();
  for (std::size_t i = 0; i < dead.size() && i < static_cast<std::size_t>(max); ++i) ranks[i] = dead[i];
  return static_cast<int>(dead.size());
}

ARMCI_API(int, ARMCIX_Peer_error, (void)) { return armci::take_returned_peer_error() ? ARMCI_ERR_PEER_DEAD : 0; }

ARMCI_API(void, ARMCI_Cleanup, (void)) {
  if (armci::Runtime* r = armci::Runtime::get()) r->cleanup_names();
}

ARMCI_API(void, ARMCI_Error, (const char* msg, int code)) {
  armci::fail("ARMCI_Error", "%s (code %d)", msg ? msg : "(no message)", code);
}
