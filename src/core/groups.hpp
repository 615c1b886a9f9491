// Groups: ordered subsets of the world's ranks with translation both ways,
// the collectives and allocations that span only their members, and (for a
// program that uses MPI) an MPI communicator of the members.
//
// Owns: every live group, the world group, the default group.
// Called by: the API's ARMCI_Group_*, ARMCIX_Group_*, *_group calls and the
// scoped armci_msg_* calls.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "src/core/collectives.hpp"
#include "src/core/memory.hpp"
#include "src/core/peers.hpp"

namespace armci {

struct Group {
  std::vector<int> members;  // world rank by group rank
  std::vector<int> rank_of;  // group rank by world rank; -1 outside
  int my_rank = -1;          // -1: this rank is not a member
  void* communicator = nullptr;
  bool owns_communicator = false;

  int size() const { return static_cast<int>(members.size()); }
  bool member() const { return my_rank >= 0; }
  Team team() const { return Team{members, my_rank}; }
};

class Groups {
 public:
  Groups(const Peers& peers, Collectives& collectives, Memory& memory);
  ~Groups();
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;

  // The world (its communicator looked up again each time: MPI may start
  // after ARMCI_Init).
  Group& world();
  Group& default_group() { return *default_; }
  void set_default(Group& group) { default_ = &group; }

  // A group of these world ranks (checked: in range, no repeats; fails
  // naming call and argument). Collective over the members when MPI is in
  // use (their communicator); a non-member gets a group it is not in.
  Group& create(const char* call, const char* argument, std::vector<int> members);
  // MPI_Comm_split's rule over parent (collective over its members):
  // color < 0 gives an empty group.
  Group& split(const char* call, Group& parent, int color, int key);
  // Collective over the members. The world is never freed.
  void free(Group& group);
  // The live group at this address, or nullptr (freed, never made).
  Group* find(const void* address) const;
  // Groups freed so far: a cache of what a group's address meant holds
  // while this is unchanged (a new group may reuse a freed one's address).
  std::uint64_t frees() const { return frees_; }

  // What a group allocation exchanges and synchronises over.
  Memory::Members allocation_members(const Group& group);

 private:
  std::uint64_t frees_ = 0;
  std::unique_ptr<Group> make(std::vector<int> members) const;

  const Peers& peers_;
  Collectives& collectives_;
  Memory& memory_;
  std::unique_ptr<Group> world_;
  Group* default_ = nullptr;
  std::set<const Group*> live_;
  std::set<std::unique_ptr<Group>> owned_;
};

}  // namespace armci
