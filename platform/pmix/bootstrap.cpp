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
  ~PmixBootstrap() override { PMIx_Finalize(nullptr, 0); }

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
      status = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
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

  pmix_proc_t me_{};
  pmix_proc_t everyone_{};
  int size_ = 1;
  std::string job_id_;
  unsigned long round_ = 0;
};

}  // namespace

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
