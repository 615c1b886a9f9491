#include "platform/pmix/bootstrap.hpp"

#include <pmix.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace armci::platform {
namespace {

std::runtime_error pmix_error(const char* call, pmix_status_t status) {
  return std::runtime_error(std::string(call) + " failed: " + PMIx_Error_string(status));
}

class SingletonBootstrap final : public Bootstrap {
 public:
  SingletonBootstrap() : job_id_("single-" + std::to_string(getpid())) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& job_id() const override { return job_id_; }
  const char* kind() const override { return "singleton"; }
  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    return {std::vector<std::byte>(mine.begin(), mine.end())};
  }
  void fence() override {}

 private:
  std::string job_id_;
};

class PmixBootstrap final : public Bootstrap {
 public:
  PmixBootstrap() {
    pmix_status_t status = PMIx_Init(&me_, nullptr, 0);
    if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Init", status);
    PMIX_PROC_CONSTRUCT(&everyone_);
    std::memcpy(everyone_.nspace, me_.nspace, PMIX_MAX_NSLEN + 1);
    everyone_.rank = PMIX_RANK_WILDCARD;
    pmix_value_t* value = nullptr;
    status = PMIx_Get(&everyone_, PMIX_JOB_SIZE, nullptr, 0, &value);
    if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Get(PMIX_JOB_SIZE)", status);
    size_ = static_cast<int>(value->data.uint32);
    PMIX_VALUE_RELEASE(value);
    job_id_ = me_.nspace;
  }
  ~PmixBootstrap() override {
    watcher_ = nullptr;
    if (handler_id_ >= 0) PMIx_Deregister_event_handler(static_cast<std::size_t>(handler_id_), nullptr, nullptr);
    PMIx_Finalize(nullptr, 0);
  }

  void watch_peers(PeerFailure on_failure) override {
    on_failure_ = std::move(on_failure);
    watcher_ = this;
    // Every code: which ones a launcher sends for a death differs (PRRTE:
    // PMIX_EVENT_PROC_TERMINATED, ORTE with recovery: PMIX_ERR_PROC_ABORTED_BY_SIG...);
    // the handler picks out those that mean a process of this job is gone.
    std::atomic<int> outcome{kRegistering};
    PMIx_Register_event_handler(nullptr, 0, nullptr, 0, on_event, on_registered, &outcome);
    while (outcome.load() == kRegistering) sched_yield();
    if (outcome.load() >= 0) handler_id_ = outcome.load();
  }

  int rank() const override { return static_cast<int>(me_.rank); }
  int size() const override { return size_; }
  const std::string& job_id() const override { return job_id_; }
  const char* kind() const override { return "pmix"; }

  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    // Each round gets its own key: PMIx keeps every value published.
    const std::string key = "armci.ag." + std::to_string(round_++);
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = reinterpret_cast<char*>(const_cast<std::byte*>(mine.data()));
    value.data.bo.size = mine.size();
    pmix_status_t status = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
    if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Put", status);
    status = PMIx_Commit();
    if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Commit", status);
    fence_collecting(true);

    std::vector<std::vector<std::byte>> all(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      if (r == rank()) {
        all[static_cast<std::size_t>(r)].assign(mine.begin(), mine.end());
        continue;
      }
      pmix_proc_t peer;
      PMIX_PROC_CONSTRUCT(&peer);
      std::memcpy(peer.nspace, me_.nspace, PMIX_MAX_NSLEN + 1);
      peer.rank = static_cast<pmix_rank_t>(r);
      pmix_value_t* got = nullptr;
      // The collecting fence brought every record here; asking the peer's
      // server instead would wait forever for a peer that died after the
      // fence (the launcher may keep a job alive after a death).
      pmix_info_t optional;
      PMIX_INFO_CONSTRUCT(&optional);
      bool local_only = true;
      PMIX_INFO_LOAD(&optional, PMIX_OPTIONAL, &local_only, PMIX_BOOL);
      status = PMIx_Get(&peer, key.c_str(), &optional, 1, &got);
      PMIX_INFO_DESTRUCT(&optional);
      if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Get(peer record)", status);
      auto* bytes = reinterpret_cast<const std::byte*>(got->data.bo.bytes);
      all[static_cast<std::size_t>(r)].assign(bytes, bytes + got->data.bo.size);
      PMIX_VALUE_RELEASE(got);
    }
    return all;
  }

  void fence() override { fence_collecting(false); }

 private:
  void fence_collecting(bool collect) {
    pmix_info_t info;
    PMIX_INFO_CONSTRUCT(&info);
    bool flag = collect;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
    // Non-blocking, so the caller's progress runs while the others arrive.
    constexpr int kPending = INT_MIN;
    std::atomic<int> outcome{kPending};
    pmix_status_t status = PMIx_Fence_nb(
        &everyone_, 1, &info, 1,
        [](pmix_status_t result, void* data) { static_cast<std::atomic<int>*>(data)->store(result); },
        &outcome);
    if (status != PMIX_SUCCESS) {
      PMIX_INFO_DESTRUCT(&info);
      throw pmix_error("PMIx_Fence_nb", status);
    }
    while (outcome.load() == kPending) {
      if (progress_) progress_();
      sched_yield();
    }
    PMIX_INFO_DESTRUCT(&info);
    if (outcome.load() != PMIX_SUCCESS) throw pmix_error("PMIx_Fence", outcome.load());
  }

  static constexpr int kRegistering = INT_MIN;
  static PmixBootstrap* watcher_;

  static void on_registered(pmix_status_t status, std::size_t id, void* data) {
    static_cast<std::atomic<int>*>(data)->store(status == PMIX_SUCCESS ? static_cast<int>(id) : -1);
  }

  static bool means_death(pmix_status_t status) {
    switch (status) {
      case PMIX_PROC_TERMINATED:
      case PMIX_EVENT_PROC_TERMINATED:
      case PMIX_ERR_PROC_ABORTED_BY_SIG:
      case PMIX_ERR_PROC_KILLED_BY_CMD:
      case PMIX_ERR_PROC_REQUESTED_ABORT:
      case PMIX_ERR_PROC_TERM_WO_SYNC:
      case PMIX_ERR_PROC_ABORTED:
      case PMIX_ERR_LOST_CONNECTION:
      case PMIX_ERR_UNREACH:
        return true;
      default:
        return false;
    }
  }

  static void on_event(std::size_t, pmix_status_t status, const pmix_proc_t* source, pmix_info_t info[],
                       std::size_t ninfo, pmix_info_t*, std::size_t, pmix_event_notification_cbfunc_fn_t cbfunc,
                       void* cbdata) {
    PmixBootstrap* self = watcher_;
    if (self != nullptr && means_death(status)) {
      // The process concerned: the affected proc when the event names one,
      // else its source.
      const pmix_proc_t* proc = source;
      for (std::size_t i = 0; i < ninfo; ++i)
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
          proc = info[i].value.data.proc;
      const bool lost_launcher = status == PMIX_ERR_LOST_CONNECTION || status == PMIX_ERR_UNREACH;
      const bool ours = proc != nullptr && PMIX_CHECK_NSPACE(proc->nspace, self->me_.nspace) &&
                        proc->rank != PMIX_RANK_WILDCARD && proc->rank != self->me_.rank &&
                        proc->rank < static_cast<pmix_rank_t>(self->size_);
      const std::string why = std::string("PMIx event ") + PMIx_Error_string(status);
      if (ours) self->on_failure_(static_cast<int>(proc->rank), why.c_str());
      else if (lost_launcher) self->on_failure_(-1, why.c_str());
    }
    if (cbfunc != nullptr) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
  }

  PeerFailure on_failure_;
  int handler_id_ = -1;
  pmix_proc_t me_{};
  pmix_proc_t everyone_{};
  int size_ = 1;
  std::string job_id_;
  unsigned long round_ = 0;
};

}  // namespace

PmixBootstrap* PmixBootstrap::watcher_ = nullptr;

std::unique_ptr<Bootstrap> Bootstrap::create() {
  // A PMIx launcher (mpirun, prterun, srun --mpi=pmix) names the server in
  // the environment; without one this is a single process.
  if (std::getenv("PMIX_NAMESPACE") == nullptr && std::getenv("PMIX_SERVER_URI41") == nullptr &&
      std::getenv("PMIX_SERVER_URI4") == nullptr && std::getenv("PMIX_SERVER_URI3") == nullptr &&
      std::getenv("PMIX_SERVER_URI2") == nullptr)
    return std::make_unique<SingletonBootstrap>();
  return std::make_unique<PmixBootstrap>();
}

}  // namespace armci::platform
