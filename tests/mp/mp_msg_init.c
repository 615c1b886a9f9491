/*
 * mp_msg_init ORDER: armci_msg_init / armci_msg_finalize as GA's ARMCI has
 * them, in a program that uses MPI. armci_msg_init starts MPI when the
 * program has not; armci_msg_finalize ends MPI only when armci_msg_init
 * started it. ORDER:
 *   msg-init     armci_msg_init, then ARMCI_Init (GA's armci/testing order),
 *                ARMCI_Finalize, armci_msg_finalize: MPI ends with it;
 *   msg-only     armci_msg_init and armci_msg_finalize alone around ARMCI
 *                calls (no ARMCI_Init / ARMCI_Finalize);
 *   mpi-first    MPI_Init by the program, then armci_msg_init:
 *                armci_msg_finalize leaves MPI running;
 *   armci-first  ARMCI_Init, then armci_msg_init (it starts MPI),
 *                ARMCI_Finalize, armci_msg_finalize.
 * In each, MPI and ARMCI agree on ranks, and a put checked through MPI's
 * all-reduce shows both work together.
 */
#include "mp_common.h"

#include <mpi.h>

static void work(const char *order) {
  int mpi_me = -1, mpi_np = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_me);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_np);
  mp_me = armci_msg_me();
  mp_np = armci_msg_nproc();
  mp_set_where("%s", order);
  MP_CHECK_INT(mpi_me, mp_me);
  MP_CHECK_INT(mpi_np, mp_np);

  void **base = malloc(sizeof(void *) * (size_t)mp_np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, sizeof(long)));
  *(long *)base[mp_me] = -1;
  ARMCI_Barrier();
  const int right = (mp_me + 1) % mp_np;
  MP_CHECK_INT(0, ARMCI_PutValueLong(100 + mp_me, base[right], right));
  ARMCI_Fence(right);
  MPI_Barrier(MPI_COMM_WORLD);
  long mine = *(long *)base[mp_me], sum = 0;
  MP_CHECK_INT(100 + (mp_me + mp_np - 1) % mp_np, mine);
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MP_CHECK_INT(100L * mp_np + (long)mp_np * (mp_np - 1) / 2, sum);
  int all = mp_me + 1;
  armci_msg_igop(&all, 1, "&&");
  MP_CHECK_INT(1, all);
  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[mp_me]));
  free(base);
}

static int mpi_running(void) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int main(int argc, char **argv) {
  const char *order = argc > 1 ? argv[1] : "msg-init";
  if (!strcmp(order, "msg-init")) {
    armci_msg_init(&argc, &argv);
    MP_CHECK_INT(1, mpi_running());
    MP_CHECK_INT(0, ARMCI_Init());
    work(order);
    MP_CHECK_INT(0, ARMCI_Finalize());
    armci_msg_finalize();
    MP_CHECK_INT(0, mpi_running());
  } else if (!strcmp(order, "msg-only")) {
    armci_msg_init(&argc, &argv);
    MP_CHECK_INT(1, mpi_running());
    MP_CHECK_INT(1, ARMCI_Initialized());
    work(order);
    armci_msg_finalize();
    MP_CHECK_INT(0, ARMCI_Initialized());
    MP_CHECK_INT(0, mpi_running());
  } else if (!strcmp(order, "mpi-first")) {
    MP_CHECK_INT(MPI_SUCCESS, MPI_Init(&argc, &argv));
    armci_msg_init(&argc, &argv);
    MP_CHECK_INT(0, ARMCI_Init());
    work(order);
    MP_CHECK_INT(0, ARMCI_Finalize());
    armci_msg_finalize();
    MP_CHECK_INT(1, mpi_running());
    MPI_Finalize();
  } else if (!strcmp(order, "armci-first")) {
    MP_CHECK_INT(0, ARMCI_Init());
    armci_msg_init(&argc, &argv);
    MP_CHECK_INT(1, mpi_running());
    work(order);
    MP_CHECK_INT(0, ARMCI_Finalize());
    MP_CHECK_INT(1, mpi_running());
    armci_msg_finalize();
    MP_CHECK_INT(0, mpi_running());
  } else {
    fprintf(stderr, "usage: %s [msg-init|msg-only|mpi-first|armci-first]\n", argv[0]);
    return 2;
  }
  mp_pass("mp_msg_init", mp_me);
  return 0;
}
