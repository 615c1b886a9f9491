#include <armci.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  ARMCI_Init();
  int me = armci_msg_me(), nproc = armci_msg_nproc();
  void **base = malloc(nproc * sizeof *base);
  ARMCI_Malloc(base, sizeof(long)); /* collective: base[r] is rank r's part */
  *(long *)base[me] = 100 + me;
  ARMCI_Barrier();

  int right = (me + 1) % nproc;
  long got = 0;
  armci_hdl_t handle;
  ARMCI_INIT_HANDLE(&handle);
  ARMCI_NbGet(base[right], &got, sizeof got, right, &handle);
  /* ... compute here while the get travels ... */
  ARMCI_Wait(&handle);
  printf("rank %d of %d read %ld from rank %d\n", me, nproc, got, right);

  ARMCI_Barrier();
  ARMCI_Free(base[me]);
  free(base);
  ARMCI_Finalize();
  return got == 100 + right ? 0 : 1;
}
