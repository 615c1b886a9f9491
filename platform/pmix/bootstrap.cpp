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

// The translation between this bootstrap's ranks and the job's PMIx ranks:
// the identity for the whole job, members[r] for a part of it. Every PMIx
// rank this file hands PMIx, or takes from it, goes through here.
class RankMap {
 public:
  RankMap() = default;
  explicit RankMap(std::vector<int> members) : members_(std::move(members)) {}
  bool whole_job() const { return members_.empty(); }
  pmix_rank_t pmix_rank(int rank) const {
    return static_cast<pmix_rank_t>(whole_job() ? rank : members_[static_cast<std::size_t>(rank)]);
  }
  // -1: not one of ours.
  int rank_of(pmix_rank_t pmix, int job_size) const {
    if (whole_job()) return pmix < static_cast<pmix_rank_t>(job_size) ? static_cast<int>(pmix) : -1;
    for (std::size_t r = 0; r < members_.size(); ++r)
      if (static_cast<pmix_rank_t>(members_[r]) == pmix) return static_cast<int>(r);
    return -1;
  }
  std::size_t size() const { return members_.size(); }

 private:
  std::vector<int> members_;
};

class PmixBootstrap final : public Bootstrap {
 public:
  explicit PmixBootstrap(RankMap map = {}) : map_(std::move(map)) {
    pmix_status_t status = PMIx_Init(&me_, nullptr, 0);
    if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Init", status);
    PMIX_PROC_CONSTRUCT(&everyone_);
    std::memcpy(everyone_.nspace, me_.nspace, PMIX_MAX_NSLEN + 1);
    everyone_.rank = PMIX_RANK_WILDCARD;
    pmix_value_t* value = nullptr;
    status = PMIx_Get(&everyone_, PMIX_JOB_SIZE, nullptr, 0, &value);
    if (status != PMIX_SUCCESS) throw pmix_error("PMIx_Get(PMIX_JOB_SIZE)", status);
    job_size_ = static_cast<int>(value->data.uint32);
    PMIX_VALUE_RELEASE(value);
    job_id_ = me_.nspace;
    if (map_.whole_job()) {
      size_ = job_size_;
      rank_ = static_cast<int>(me_.rank);
      fence_procs_.push_back(everyone_);
      return;
    }
    size_ = static_cast<int>(map_.size());
    rank_ = map_.rank_of(me_.rank, job_size_);
    if (rank_ < 0)
      throw std::runtime_error("this process (PMIx rank " + std::to_string(me_.rank) +
                               ") is not one of the processes it starts with");
    for (int r = 0; r < size_; ++r) {
      const pmix_rank_t pmix = map_.pmix_rank(r);
      if (pmix >= static_cast<pmix_rank_t>(job_size_))
        throw std::runtime_error("member " + std::to_string(r) + " (PMIx rank " + std::to_string(pmix) +
                                 ") is not a process of this job of " + std::to_string(job_size_));
      pmix_proc_t proc;
      PMIX_PROC_CONSTRUCT(&proc);
      std::memcpy(proc.nspace, me_.nspace, PMIX_MAX_NSLEN + 1);
      proc.rank = pmix;
      fence_procs_.push_back(proc);
    }
    // Shared segments are named by job and rank: a part of the job names
    // its own (two parts may both start ARMCI).
    job_id_ += "-p" + std::to_string(map_.pmix_rank(0));
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

  int rank() const override { return rank_; }
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
      peer.rank = map_.pmix_rank(r);
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
        fence_procs_.data(), fence_procs_.size(), &info, 1,
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
                        self->map_.rank_of(proc->rank, self->job_size_) >= 0;
      const std::string why = std::string("PMIx event ") + PMIx_Error_string(status);
      if (ours) self->on_failure_(self->map_.rank_of(proc->rank, self->job_size_), why.c_str());
      else if (lost_launcher) self->on_failure_(-1, why.c_str());
    }
    if (cbfunc != nullptr) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
  }

  PeerFailure on_failure_;
  int handler_id_ = -1;
  RankMap map_;
  pmix_proc_t me_{};
  pmix_proc_t everyone_{};
  std::vector<pmix_proc_t> fence_procs_;  // the job (wildcard), or each member
  int job_size_ = 1;
  int size_ = 1;
  int rank_ = 0;
  std::string job_id_;
  unsigned long round_ = 0;
};

PmixBootstrap* PmixBootstrap::watcher_ = nullptr;

// A PMIx launcher (mpirun, prterun, srun --mpi=pmix) names the server in
// the environment; without one this is a single process.
bool launcher_named() {
  for (const char* name : {"PMIX_NAMESPACE", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
                           "PMIX_SERVER_URI2"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

}  // namespace

std::unique_ptr<Bootstrap> Bootstrap::create() {
  if (!launcher_named()) return std::make_unique<SingletonBootstrap>();
  return std::make_unique<PmixBootstrap>();
}

std::unique_ptr<Bootstrap> Bootstrap::create(const std::vector<int>& members) {
  if (!launcher_named()) {
    if (members.size() != 1 || members[0] != 0)
      throw std::runtime_error("a part of the job needs a PMIx launcher, and none is named in the environment");
    return std::make_unique<SingletonBootstrap>();
  }
  return std::make_unique<PmixBootstrap>(RankMap(members));
}

}  // namespace armci::platform
