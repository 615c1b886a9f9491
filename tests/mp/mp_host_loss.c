/*
 * mp_host_loss: the workload of the host-loss scenario
 * (tests/mp/two_hosts_loss.sh). Every rank puts its round number into its
 * slot at every other rank, gets it back, checks it, and meets the others in
 * a barrier, round after round, so that when a host vanishes the survivors
 * are inside transfers and barriers with the lost ranks. Rank 0 prints
 * "round 1 done" once everyone is connected and has moved data; the
 * scenario powers the other host off after that line.
 *
 * It never passes by itself: a job that ends without a peer failure having
 * been reported (MP_HOST_LOSS_SECONDS, default 900, elapsed) exits 1.
 */
#include "mp_common.h"

#include <unistd.h>

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  const int me = mp_me, np = mp_np;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  printf("rank %d on %s\n", me, host);
  fflush(stdout);

  void **base = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)(sizeof(long) * (size_t)np)));
  long *mine = ARMCI_Malloc_local(sizeof(long));
  long *back = ARMCI_Malloc_local(sizeof(long));
  const double limit = mp_env_int("MP_HOST_LOSS_SECONDS", 900);
  const double start = mp_now();
  long round = 0;
  while (mp_now() - start < limit) {
    round++;
    for (int k = 1; k < np; k++) {
      const int p = (me + k) % np;
      long *slot = (long *)base[p] + me;
      *mine = round * np + me;
      mp_set_where("round %ld, peer %d", round, p);
      MP_CHECK_INT(0, ARMCI_Put(mine, slot, sizeof(long), p));
      MP_CHECK_INT(0, ARMCI_Get(slot, back, sizeof(long), p));
      MP_CHECK_INT(round * np + me, *back);
    }
    ARMCI_Barrier();
    if (round == 1 && me == 0) {
      printf("round 1 done\n");
      fflush(stdout);
    }
  }
  fprintf(stderr, "mp_host_loss rank %d: %ld rounds in %.0f s and no peer failure reported\n", me, round,
          limit);
  return 1;
}
