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

// MPI is initialised, not finalised, and its world has these rank and size
// (so world ranks are ARMCI ranks).
bool usable(int rank, int size);
// MPI_COMM_WORLD, or nullptr when not usable.
void* world(int rank, int size);
// A new communicator of these world ranks, in this order. Collective over
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
