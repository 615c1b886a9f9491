/* mp_group_comm: with MPI initialised first, every ARMCI_Group carries an
 * MPI communicator of its members (GA's GA_MPI_Comm_pgroup returns
 * group.comm): the world group's is MPI_COMM_WORLD; a created group's has
 * the group's size and ranks, and MPI collectives on it reach exactly the
 * members. <mpi.h> comes first, so ARMCI_Group.comm is an MPI_Comm. */
#include <mpi.h>

#include "mp_common.h"

#include "armcix.h"

static void check_comm(ARMCI_Group *g) {
  int size, rank, mpi_size = -1, mpi_rank = -1;
  ARMCI_Group_size(g, &size);
  ARMCI_Group_rank(g, &rank);
  MP_CHECK(g->comm != MPI_COMM_NULL && g->comm != NULL, "group of %d has no communicator", size);
  MPI_Comm_size(g->comm, &mpi_size);
  MPI_Comm_rank(g->comm, &mpi_rank);
  MP_CHECK_INT(size, mpi_size);
  MP_CHECK_INT(rank, mpi_rank);
  long mine = mp_me, sum = -1, expected = 0;
  for (int i = 0; i < size; ++i) expected += ARMCI_Absolute_id(g, i);
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, g->comm);
  MP_CHECK_INT(expected, sum);
}

int main(int argc, char **argv) {
  MP_CHECK_INT(MPI_SUCCESS, MPI_Init(&argc, &argv));
  mp_init(&argc, &argv);
  ARMCI_Group world;
  ARMCI_Group_get_world(&world);
  MP_CHECK(world.comm == MPI_COMM_WORLD, "the world group's comm is not MPI_COMM_WORLD");
  check_comm(&world);

  int n_even = (mp_np + 1) / 2;
  int *evens = malloc(sizeof(int) * (size_t)n_even);
  for (int i = 0; i < n_even; ++i) evens[i] = 2 * i;
  ARMCI_Group even_group;
  ARMCI_Group_create(n_even, evens, &even_group);
  if (mp_me % 2 == 0) check_comm(&even_group);

  ARMCI_Group split;
  MP_CHECK_INT(0, ARMCIX_Group_split(&world, mp_me % 2, -mp_me, &split));
  check_comm(&split);
  MPI_Barrier(MPI_COMM_WORLD);
  ARMCI_Group_free(&split);
  ARMCI_Group_free(&even_group);
  free(evens);
  MP_CHECK_INT(0, ARMCI_Finalize());
  MP_CHECK_INT(MPI_SUCCESS, MPI_Finalize());
  mp_pass("mp_group_comm", mp_me);
  return 0;
}
