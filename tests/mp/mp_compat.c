/* Binary compatibility: compiled against the ARMCI-MPI 0.3 header that Debian
 * ships (/usr/include/armci.h, libarmci-mpi-dev), linked against libarmci.
 * The handle, the size type and the calls must line up, and the data must
 * arrive where that header's layout says. */
#include <armci.h>
#ifndef ARMCI_MPI
#error "mp_compat must be compiled against ARMCI-MPI's armci.h"
#endif
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "FAIL rank %d: ", armci_msg_me());  \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      ARMCI_Error("mp_compat check failed", 1);           \
    }                                                     \
  } while (0)

int main(int argc, char **argv) {
  ARMCI_Init_args(&argc, &argv);
  int me = armci_msg_me(), n = armci_msg_nproc();
  void **base = malloc(sizeof(void *) * (size_t)n);
  armci_size_t bytes = 1024;
  ARMCI_Malloc(base, bytes);

  long mine = 1000 + me, got = 0;
  int right = (me + 1) % n, left = (me + n - 1) % n;
  ARMCI_Put(&mine, (char *)base[right] + 8 * me, sizeof mine, right);
  ARMCI_Barrier();

  armci_hdl_t handles[4];
  for (int i = 0; i < 4; i++) ARMCI_INIT_HANDLE(&handles[i]);
  long several[4] = {0};
  for (int i = 0; i < 4; i++)
    ARMCI_NbGet((char *)base[me] + 8 * left, &several[i], sizeof several[i], me, &handles[i]);
  for (int i = 0; i < 4; i++) ARMCI_Wait(&handles[i]);
  for (int i = 0; i < 4; i++) CHECK(several[i] == 1000 + left, "get %d: %ld, expected %d", i, several[i], 1000 + left);
  got = ARMCI_GetValueLong((char *)base[right] + 8 * me, right);
  CHECK(got == mine, "GetValueLong %ld, expected %ld", got, mine);

  double one = 1, two = 2;
  ARMCI_Acc(ARMCI_ACC_DBL, &one, &two, (char *)base[0] + 512, sizeof two, 0);
  ARMCI_Barrier();
  if (me == 0) CHECK(*(double *)((char *)base[0] + 512) == 2.0 * n, "acc %g", *(double *)((char *)base[0] + 512));

  ARMCI_Barrier();
  ARMCI_Free(base[me]);
  free(base);
  printf("PASS mp_compat rank %d\n", me);
  ARMCI_Finalize();
  return 0;
}
