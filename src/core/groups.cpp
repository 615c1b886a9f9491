#include "src/core/groups.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "platform/mpi/communicators.hpp"
#include "src/core/error.hpp"

namespace armci {

Groups::Groups(const Peers& peers, Collectives& collectives, Memory& memory)
    : peers_(peers), collectives_(collectives), memory_(memory) {
  std::vector<int> everyone(static_cast<std::size_t>(peers_.size()));
  for (int r = 0; r < peers_.size(); ++r) everyone[static_cast<std::size_t>(r)] = r;
  world_ = make(std::move(everyone));
  live_.insert(world_.get());
  default_ = world_.get();
}

Groups::~Groups() = default;

std::unique_ptr<Group> Groups::make(std::vector<int> members) const {
  auto group = std::make_unique<Group>();
  group->rank_of.assign(static_cast<std::size_t>(peers_.size()), -1);
  for (std::size_t i = 0; i < members.size(); ++i) group->rank_of[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
  group->my_rank = group->rank_of[static_cast<std::size_t>(peers_.rank())];
  group->members = std::move(members);
  return group;
}

Group& Groups::world() {
  world_->communicator = platform::mpi::world(peers_.rank(), peers_.size());
  return *world_;
}

Group& Groups::create(const char* call, const char* argument, std::vector<int> members) {
  std::vector<bool> seen(static_cast<std::size_t>(peers_.size()), false);
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int r = members[i];
    if (r < 0 || r >= peers_.size())
      fail(call, "argument '%s': entry %zu (world rank %d) is out of range [0, %d)", argument, i, r, peers_.size());
    if (seen[static_cast<std::size_t>(r)])
      fail(call, "argument '%s': world rank %d appears twice (entry %zu)", argument, r, i);
    seen[static_cast<std::size_t>(r)] = true;
  }
  auto group = make(std::move(members));
  if (group->member()) {
    group->communicator = platform::mpi::create(group->members, peers_.rank(), peers_.size());
    group->owns_communicator = group->communicator != nullptr;
  }
  Group& made = *group;
  live_.insert(group.get());
  owned_.insert(std::move(group));
  return made;
}

Group& Groups::split(const char* call, Group& parent, int color, int key) {
  std::int32_t mine[2] = {color, key};
  auto records = collectives_.allgather(parent.team(), std::as_bytes(std::span(mine)));
  std::vector<std::tuple<int, int, int>> chosen;  // key, parent rank, world rank
  for (int i = 0; i < parent.size(); ++i) {
    std::int32_t theirs[2];
    std::memcpy(theirs, records[static_cast<std::size_t>(i)].data(), sizeof theirs);
    if (color >= 0 && theirs[0] == color) chosen.emplace_back(theirs[1], i, parent.members[static_cast<std::size_t>(i)]);
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<int> members;
  for (const auto& [k, parent_rank, world_rank] : chosen) members.push_back(world_rank);
  return create(call, "color", std::move(members));
}

void Groups::free(Group& group) {
  if (&group == world_.get()) return;
  if (group.owns_communicator) platform::mpi::release(group.communicator);
  if (default_ == &group) default_ = world_.get();
  live_.erase(&group);
  ++frees_;
  for (auto it = owned_.begin(); it != owned_.end(); ++it)
    if (it->get() == &group) {
      owned_.erase(it);
      break;
    }
}

Group* Groups::find(const void* address) const {
  auto found = live_.find(static_cast<const Group*>(address));
  return found == live_.end() ? nullptr : const_cast<Group*>(*found);
}

Memory::Members Groups::allocation_members(const Group& group) {
  Memory::Members members;
  members.exchange = [this, &group](std::span<const std::byte> mine) {
    auto records = collectives_.allgather(group.team(), mine);
    std::vector<std::vector<std::byte>> by_world_rank(static_cast<std::size_t>(peers_.size()));
    for (int i = 0; i < group.size(); ++i)
      by_world_rank[static_cast<std::size_t>(group.members[static_cast<std::size_t>(i)])] =
          std::move(records[static_cast<std::size_t>(i)]);
    return by_world_rank;
  };
  members.barrier = [this, &group] { collectives_.barrier(group.team()); };
  members.ranks = group.members;
  return members;
}

}  // namespace armci
