/*
 * mp_with_mpi [mpi-first|armci-first]: ARMCI and MPI in one program. ARMCI
 * data transfers are synchronised with MPI_Barrier and checked with
 * MPI_Allreduce, which shows that both libraries agree on ranks and that an
 * ARMCI fence plus an MPI barrier publishes ARMCI data.
 */
#include "mp_common.h"

#include <mpi.h>

enum { ITERS = 10, NACC = 1000 };

int main(int argc, char **argv) {
  const char *order = argc > 1 ? argv[1] : "mpi-first";
  int armci_first = strcmp(order, "armci-first") == 0;
  if (!armci_first && strcmp(order, "mpi-first") != 0) {
    fprintf(stderr, "usage: %s [mpi-first|armci-first]\n", argv[0]);
    return 2;
  }
  if (armci_first) {
    mp_init(&argc, &argv);
    MP_CHECK_INT(MPI_SUCCESS, MPI_Init(&argc, &argv));
  } else {
    MP_CHECK_INT(MPI_SUCCESS, MPI_Init(&argc, &argv));
    mp_init(&argc, &argv);
  }
  int me = mp_me, np = mp_np, mpi_me, mpi_np;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_me);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_np);
  MP_CHECK_INT(mpi_me, me);
  MP_CHECK_INT(mpi_np, np);

  /* Layout: np longs (one per origin), then NACC doubles. */
  const size_t bytes = sizeof(long) * (size_t)np + sizeof(double) * NACC;
  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)bytes));
  memset(base[me], 0, bytes);
  long *slots = base[me];
  double *acc = (double *)(slots + np);
  MPI_Barrier(MPI_COMM_WORLD);

  int right = (me + 1) % np, left = (me + np - 1) % np;
  for (int it = 0; it < ITERS; it++) {
    long v = 1000L * it + me;
    mp_set_where("%s, iteration %d", order, it);
    MP_CHECK_INT(0, ARMCI_PutValueLong(v, (long *)base[right] + me, right));
    ARMCI_Fence(right);
    MPI_Barrier(MPI_COMM_WORLD);
    MP_CHECK_INT(1000L * it + left, slots[left]);

    long got = 0, sum = 0;
    MP_CHECK_INT(0, ARMCI_Get((long *)base[left] + ((left + np - 1) % np), &got, sizeof got, left));
    MP_CHECK_INT(1000L * it + (left + np - 1) % np, got);
    MPI_Allreduce(&got, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MP_CHECK_INT(1000L * it * np + (long)np * (np - 1) / 2, sum);
    /* The next Put overwrites the slot just read: nobody may still read it. */
    if (it % 2)
      MPI_Barrier(MPI_COMM_WORLD);
    else
      ARMCI_Barrier();
  }

  /* Everybody accumulates into rank 0; MPI tells everybody whether rank 0
   * found the right sums. */
  double *src = malloc(sizeof(double) * NACC), scale = 2.0;
  for (int j = 0; j < NACC; j++) src[j] = j % 17 + me;
  MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &scale, src, (long *)base[0] + np, NACC * sizeof(double), 0));
  ARMCI_AllFence();
  MPI_Barrier(MPI_COMM_WORLD);
  int ok = 1, all_ok = 0;
  if (me == 0)
    for (int j = 0; j < NACC; j++) {
      double e = 2.0 * (np * (double)(j % 17) + (double)np * (np - 1) / 2);
      if (acc[j] != e) {
        fprintf(stderr, "FAIL rank 0 %s:%d: accumulated element %d: expected %.17g, actual %.17g\n",
                __FILE__, __LINE__, j, e, acc[j]);
        ok = 0;
        break;
      }
    }
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MP_CHECK_INT(1, all_ok);
  mp_where[0] = 0;
  free(src);

  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[me]));
  free(base);
  MP_CHECK_INT(0, ARMCI_Finalize());
  MP_CHECK_INT(MPI_SUCCESS, MPI_Finalize());
  printf("PASS mp_with_mpi rank %d\n", me);
  fflush(stdout);
  return 0;
}
