/*
 * mp_init_comm half|reverse: ARMCI_Init_mpi_comm over a communicator that is
 * not MPI_COMM_WORLD.
 *   half     the upper half of MPI_COMM_WORLD (ranks np/2 ..); the others
 *            never call ARMCI and wait in MPI_Barrier at the end only;
 *   reverse  every process, in the reverse of the world's order.
 * The members check that ARMCI's world follows the communicator: rank and
 * size, ARMCI_GROUP_WORLD (its members and its comm), the domains, and
 * ARMCI_Malloc, puts, a barrier, armci_msg_igop and armci_msg_bcast with
 * their data.
 */
#include "mp_common.h"

#include <mpi.h>

static void members_work(MPI_Comm comm, const char *how) {
  int crank, csize;
  MPI_Comm_rank(comm, &crank);
  MPI_Comm_size(comm, &csize);
  MP_CHECK_INT(0, ARMCI_Init_mpi_comm(comm));
  mp_me = armci_msg_me();
  mp_np = armci_msg_nproc();
  mp_set_where("%s", how);
  MP_CHECK_INT(crank, mp_me);
  MP_CHECK_INT(csize, mp_np);

  ARMCI_Group world;
  ARMCI_Group_get_world(&world);
  int grank = -1, gsize = -1, cmp = MPI_UNEQUAL;
  ARMCI_Group_rank(&world, &grank);
  ARMCI_Group_size(&world, &gsize);
  MP_CHECK_INT(crank, grank);
  MP_CHECK_INT(csize, gsize);
  MPI_Comm_compare(world.comm, comm, &cmp);
  MP_CHECK(cmp == MPI_IDENT || cmp == MPI_CONGRUENT, "ARMCI_GROUP_WORLD.comm is not comm's members in its order");

  /* The domains partition the ARMCI ranks. */
  int total = 0;
  for (int d = 0; d < armci_domain_count(ARMCI_DOMAIN_SMP); ++d) total += armci_domain_nprocs(ARMCI_DOMAIN_SMP, d);
  MP_CHECK_INT(mp_np, total);
  MP_CHECK_INT(armci_domain_my_id(ARMCI_DOMAIN_SMP), armci_domain_id(ARMCI_DOMAIN_SMP, mp_me));

  /* Each rank puts its rank into every rank's slot of its own. */
  void **base = malloc(sizeof(void *) * (size_t)mp_np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)(sizeof(long) * (size_t)mp_np)));
  long *mine = base[mp_me];
  for (int r = 0; r < mp_np; ++r) mine[r] = -1;
  ARMCI_Barrier();
  for (int t = 0; t < mp_np; ++t) {
    long v = 1000 + mp_me;
    MP_CHECK_INT(0, ARMCI_Put(&v, (long *)base[t] + mp_me, sizeof v, t));
  }
  ARMCI_Barrier();
  for (int r = 0; r < mp_np; ++r) MP_CHECK_INT(1000 + r, mine[r]);
  long got = 0;
  const int left = (mp_me + mp_np - 1) % mp_np;
  MP_CHECK_INT(0, ARMCI_Get((long *)base[left] + mp_me, &got, sizeof got, left));
  MP_CHECK_INT(1000 + mp_me, got);

  int sum = mp_me + 1;
  armci_msg_igop(&sum, 1, "+");
  MP_CHECK_INT(mp_np * (mp_np + 1) / 2, sum);
  long word = mp_me == mp_np - 1 ? 4242 : 0;
  armci_msg_bcast(&word, sizeof word, mp_np - 1);
  MP_CHECK_INT(4242, word);
  /* The same through MPI on comm: both agree on who is who. */
  int mpi_sum = 0, one = mp_me;
  MPI_Allreduce(&one, &mpi_sum, 1, MPI_INT, MPI_SUM, comm);
  MP_CHECK_INT(mp_np * (mp_np - 1) / 2, mpi_sum);

  ARMCI_Barrier();
  MP_CHECK_INT(0, ARMCI_Free(base[mp_me]));
  free(base);
  MP_CHECK_INT(0, ARMCI_Finalize());
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "half";
  MP_CHECK_INT(MPI_SUCCESS, MPI_Init(&argc, &argv));
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  mp_me = wrank;
  MPI_Comm comm;
  int member = 1;
  if (!strcmp(how, "half")) {
    member = wrank >= wsize / 2;
    MPI_Comm_split(MPI_COMM_WORLD, member ? 1 : MPI_UNDEFINED, wrank, &comm);
  } else if (!strcmp(how, "reverse")) {
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comm);
  } else {
    fprintf(stderr, "usage: %s [half|reverse]\n", argv[0]);
    return 2;
  }
  if (member) {
    members_work(comm, how);
    MPI_Comm_free(&comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  mp_pass("mp_init_comm", wrank);
  return 0;
}
