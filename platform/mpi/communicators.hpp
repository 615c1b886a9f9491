// MPI communicators for a program that uses MPI itself, found at run time:
// the library neither links nor needs MPI, and looks up MPI's functions in
// the program (dlsym) only to hand groups a communicator of their members
// (Global Arrays reads ARMCI_Group.comm). Open MPI's handles (pointers);
// with any other MPI, or before MPI_Init / after MPI_Finalize, there are
// no communicators (nullptr). The start and stop of MPI itself serve any
// MPI (their signatures hold no handle).
#pragma once

#include <vector>

namespace armci::platform::mpi {

// ARMCI's world is MPI_COMM_WORLD, or a duplicate of the communicator
// ARMCI_Init_mpi_comm was given (set_world: collective over its members,
// as MPI_Comm_dup; reset_world frees the duplicate while MPI runs).
void set_world(void* communicator);
void reset_world();
// The members of communicator as MPI_COMM_WORLD ranks, in its rank order;
// empty when MPI is not running or communicator is no communicator
// (nullptr, MPI_COMM_NULL).
std::vector<int> world_ranks_of(void* communicator);

// MPI is initialised, not finalised, and ARMCI's world communicator has
// these rank and size (so its ranks are ARMCI ranks).
bool usable(int rank, int size);
// ARMCI's world communicator, or nullptr when not usable.
void* world(int rank, int size);
// A new communicator of these ARMCI ranks, in this order. Collective over
// them (MPI_Comm_create_group); nullptr when not usable.
void* create(const std::vector<int>& world_ranks, int rank, int size);
// MPI_Comm_free, when MPI is still usable.
void release(void* communicator);

// armci_msg_init's part (GA's rule): MPI_Init when the program holds MPI
// and has not started it. True when this call started it.
bool start(int* argc, char*** argv);
// MPI_Finalize, when MPI is running (for what start began).
void stop();

}  // namespace armci::platform::mpi
