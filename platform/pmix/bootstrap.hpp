// Start-up through PMIx: who am I, how many are we, who shares my host, and
// an exchange of small records. Without a PMIx server in the environment the
// program runs as a single process.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace armci::platform {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // A name unique to this job (used to name shared segments).
  virtual const std::string& job_id() const = 0;
  // "pmix" or "singleton".
  virtual const char* kind() const = 0;

  // Collective: every process contributes `mine`, gets everyone's (index = rank).
  virtual std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) = 0;
  // Collective synchronisation without data.
  virtual void fence() = 0;

  // Calls on_failure(rank, why) from the launcher's event thread when the
  // launcher reports that a process of this job ended or failed (rank -1:
  // the connection to the launcher itself is lost). Nothing for a singleton.
  using PeerFailure = std::function<void(int rank, const char* why)>;
  virtual void watch_peers(PeerFailure on_failure) {}

  // Called over and over while a collective waits for the others, so this
  // process keeps serving the network (a peer may need our answer to finish
  // what it must do before it joins the collective).
  void set_progress(std::function<void()> progress) { progress_ = std::move(progress); }

  // Connects to the launcher's PMIx server, or returns a singleton bootstrap
  // when the environment names none.
  static std::unique_ptr<Bootstrap> create();
  // Over some of the job's processes only (ARMCI_Init_mpi_comm): members
  // are their PMIx ranks, and rank r of this bootstrap is members[r]. Its
  // exchanges and fences span the members alone, and peer failures are
  // reported by member index; processes outside are never waited for.
  // This process must be a member (fails naming its PMIx rank otherwise).
  static std::unique_ptr<Bootstrap> create(const std::vector<int>& members);

 protected:
  std::function<void()> progress_;
};

}  // namespace armci::platform
