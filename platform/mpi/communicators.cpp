#include "platform/mpi/communicators.hpp"

#include <dlfcn.h>

namespace armci::platform::mpi {

namespace {

// MPI's C functions as Open MPI declares them, with every handle a pointer.
using Handle = void*;
using FlagFn = int (*)(int*);
using CommIntFn = int (*)(Handle, int*);
using CommGroupFn = int (*)(Handle, Handle*);
using GroupInclFn = int (*)(Handle, int, const int*, Handle*);
using CreateGroupFn = int (*)(Handle, Handle, int, Handle*);
using FreeFn = int (*)(Handle*);
using InitFn = int (*)(int*, char***);
using FinalizeFn = int (*)();

template <typename F>
F find(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

using GroupIntFn = int (*)(Handle, int*);
using TranslateFn = int (*)(Handle, int, const int*, Handle, int*);

Handle world_set = nullptr;

Handle mpi_comm_world() { return dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world"); }
Handle world_handle() { return world_set != nullptr ? world_set : mpi_comm_world(); }

bool running() {
  auto initialized = find<FlagFn>("MPI_Initialized");
  auto finalized = find<FlagFn>("MPI_Finalized");
  if (!initialized || !finalized) return false;
  int is_initialized = 0, is_finalized = 0;
  initialized(&is_initialized);
  finalized(&is_finalized);
  return is_initialized && !is_finalized;
}

}  // namespace

void set_world(void* communicator) {
  reset_world();
  auto dup = find<CommGroupFn>("MPI_Comm_dup");  // (comm, comm*): the same shape
  Handle copy = nullptr;
  if (dup && running() && dup(communicator, &copy) == 0) world_set = copy;
}

void reset_world() {
  release(world_set);
  world_set = nullptr;
}

std::vector<int> world_ranks_of(void* communicator) {
  Handle mpi_world = mpi_comm_world();
  if (communicator == nullptr || mpi_world == nullptr || !running()) return {};
  if (communicator == dlsym(RTLD_DEFAULT, "ompi_mpi_comm_null")) return {};
  auto comm_group = find<CommGroupFn>("MPI_Comm_group");
  auto group_size = find<GroupIntFn>("MPI_Group_size");
  auto translate = find<TranslateFn>("MPI_Group_translate_ranks");
  auto group_free = find<FreeFn>("MPI_Group_free");
  if (!comm_group || !group_size || !translate || !group_free) return {};
  Handle group = nullptr, world_group = nullptr;
  if (comm_group(communicator, &group) != 0) return {};
  comm_group(mpi_world, &world_group);
  int n = 0;
  group_size(group, &n);
  std::vector<int> ranks(static_cast<std::size_t>(n)), in_world(static_cast<std::size_t>(n), -1);
  for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)] = i;
  translate(group, n, ranks.data(), world_group, in_world.data());
  group_free(&group);
  group_free(&world_group);
  return in_world;
}

bool usable(int rank, int size) {
  Handle world = world_handle();
  if (world == nullptr || !running()) return false;
  auto comm_rank = find<CommIntFn>("MPI_Comm_rank");
  auto comm_size = find<CommIntFn>("MPI_Comm_size");
  if (!comm_rank || !comm_size) return false;
  int mpi_rank = -1, mpi_size = -1;
  comm_rank(world, &mpi_rank);
  comm_size(world, &mpi_size);
  return mpi_rank == rank && mpi_size == size;
}

void* world(int rank, int size) { return usable(rank, size) ? world_handle() : nullptr; }

void* create(const std::vector<int>& world_ranks, int rank, int size) {
  if (!usable(rank, size)) return nullptr;
  auto comm_group = find<CommGroupFn>("MPI_Comm_group");
  auto group_incl = find<GroupInclFn>("MPI_Group_incl");
  auto create_group = find<CreateGroupFn>("MPI_Comm_create_group");
  auto group_free = find<FreeFn>("MPI_Group_free");
  if (!comm_group || !group_incl || !create_group || !group_free) return nullptr;
  Handle world_group = nullptr, members = nullptr, communicator = nullptr;
  comm_group(world_handle(), &world_group);
  group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &members);
  create_group(world_handle(), members, 0, &communicator);
  group_free(&members);
  group_free(&world_group);
  return communicator;
}

void release(void* communicator) {
  if (communicator == nullptr || !running()) return;
  if (auto comm_free = find<FreeFn>("MPI_Comm_free")) comm_free(&communicator);
}

bool start(int* argc, char*** argv) {
  auto initialized = find<FlagFn>("MPI_Initialized");
  auto init = find<InitFn>("MPI_Init");
  if (!initialized || !init) return false;  // a program without MPI
  int is_initialized = 0;
  initialized(&is_initialized);
  if (is_initialized) return false;
  return init(argc, argv) == 0;
}

void stop() {
  if (!running()) return;
  if (auto finalize = find<FinalizeFn>("MPI_Finalize")) finalize();
}

}  // namespace armci::platform::mpi
