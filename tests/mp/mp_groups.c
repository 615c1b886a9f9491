/* mp_groups: the semantics Global Arrays relies on, and process groups.
 *  - ARMCI_Malloc of 0 bytes on every rank (all NULL) and on some ranks
 *    (NULL there), ARMCI_Free(NULL) where the part was empty, Init twice,
 *    Finalize twice;
 *  - the world and default groups, ARMCI_Absolute_id, grp_to_abs/abs_to_grp;
 *  - two disjoint groups (even and odd ranks) allocating, writing and
 *    freeing at the same time, rounds of different sizes, checked data;
 *  - ARMCI_Group_create_child, ARMCIX_Group_split (reversed keys),
 *    ARMCIX_Group_dup, group barriers and reductions, a group as default;
 *  - ARMCIX mutex handles on the world and on each of two disjoint groups
 *    at once, beside ARMCI_Create_mutexes' set: locked increments with no
 *    update lost, Trylock of a held and of a free mutex. */
#include "mp_common.h"

#include <string.h>

#include "armcix.h"

static void zero_size(void) {
  void **bases = malloc(sizeof(void *) * (size_t)mp_np);
  for (int round = 0; round < 3; ++round) {
    MP_CHECK_INT(0, ARMCI_Malloc(bases, 0));
    for (int r = 0; r < mp_np; ++r) MP_CHECK_PTR(NULL, bases[r]);
    MP_CHECK_INT(0, ARMCI_Free(NULL));

    /* Even ranks ask for nothing, odd ranks for 4 KiB. */
    const armci_size_t mine = mp_me % 2 ? 4096 : 0;
    MP_CHECK_INT(0, ARMCI_Malloc(bases, mine));
    for (int r = 0; r < mp_np; ++r) MP_CHECK(r % 2 ? bases[r] != NULL : bases[r] == NULL, "base of rank %d", r);
    for (int t = 1; t < mp_np; t += 2) {
      long v = 1000 * mp_me + round;
      MP_CHECK_INT(0, ARMCI_Put(&v, (long *)bases[t] + mp_me, sizeof v, t));
    }
    ARMCI_Barrier();
    if (mp_me % 2)
      for (int o = 0; o < mp_np; ++o) MP_CHECK_INT(1000 * o + round, (int)((long *)bases[mp_me])[o]);
    ARMCI_Barrier();
    MP_CHECK_INT(0, ARMCI_Free(bases[mp_me]));
  }
  free(bases);
}

static void check_group(ARMCI_Group *g, const int *world_ranks, int n) {
  int size = -1, rank = -2;
  ARMCI_Group_size(g, &size);
  MP_CHECK_INT(n, size);
  MP_CHECK_INT(0, ARMCI_Group_rank(g, &rank));
  int expected_rank = -1;
  for (int i = 0; i < n; ++i) {
    MP_CHECK_INT(world_ranks[i], ARMCI_Absolute_id(g, i));
    MP_CHECK_INT(world_ranks[i], g->grp_to_abs[i]);
    MP_CHECK_INT(i, g->abs_to_grp[world_ranks[i]]);
    if (world_ranks[i] == mp_me) expected_rank = i;
  }
  MP_CHECK_INT(expected_rank, rank);
  MP_CHECK_INT(expected_rank, g->rank);
  MP_CHECK_INT(n, g->size);
}

/* Rounds of allocation, puts to every member, checks and frees in g. */
static void group_memory(ARMCI_Group *g, int rounds) {
  int n, me;
  ARMCI_Group_size(g, &n);
  ARMCI_Group_rank(g, &me);
  void **bases = malloc(sizeof(void *) * (size_t)n);
  for (int round = 0; round < rounds; ++round) {
    const int words = 16 + 100 * (round % 5) + mp_me % 3; /* sizes differ per round and per rank */
    MP_CHECK_INT(0, ARMCI_Malloc_group(bases, (armci_size_t)(sizeof(long) * (size_t)(n * words)), g));
    for (int t = 0; t < n; ++t) {
      long v[2] = {mp_me * 100000L + round, -(long)t};
      const int target = ARMCI_Absolute_id(g, t);
      MP_CHECK_INT(0, ARMCI_Put(v, (long *)bases[t] + 2 * me, sizeof v, target));
    }
    ARMCI_AllFence();
    armci_msg_group_barrier(g);
    long *mine = bases[me];
    for (int o = 0; o < n; ++o) {
      MP_CHECK_INT(ARMCI_Absolute_id(g, o) * 100000L + round, (int)mine[2 * o]);
      MP_CHECK_INT(-me, (int)mine[2 * o + 1]);
    }
    armci_msg_group_barrier(g);
    MP_CHECK_INT(0, ARMCI_Free_group(bases[me], g));
  }
  /* A zero-size group allocation is NULL everywhere and frees as NULL. */
  MP_CHECK_INT(0, ARMCI_Malloc_group(bases, 0, g));
  for (int i = 0; i < n; ++i) MP_CHECK_PTR(NULL, bases[i]);
  MP_CHECK_INT(0, ARMCI_Free_group(NULL, g));
  free(bases);
}

/* Every member adds 1 to a counter at group rank `home`, ROUNDS times,
 * under mutex 0 of home in the handle (Get, add, Put: a lost update shows). */
static void locked_increments(armcix_mutex_hdl_t hdl, ARMCI_Group *g) {
  enum { ROUNDS = 40 };
  int n, me;
  ARMCI_Group_size(g, &n);
  ARMCI_Group_rank(g, &me);
  void **bases = malloc(sizeof(void *) * (size_t)n);
  MP_CHECK_INT(0, ARMCI_Malloc_group(bases, sizeof(long), g));
  *(long *)bases[me] = 0;
  armci_msg_group_barrier(g);
  const int home = n - 1, home_world = ARMCI_Absolute_id(g, home);
  for (int k = 0; k < ROUNDS; ++k) {
    ARMCIX_Lock_hdl(hdl, 0, home);
    long v = -1;
    MP_CHECK_INT(0, ARMCI_Get(bases[home], &v, sizeof v, home_world));
    v += 1;
    MP_CHECK_INT(0, ARMCI_Put(&v, bases[home], sizeof v, home_world));
    ARMCIX_Unlock_hdl(hdl, 0, home);
  }
  armci_msg_group_barrier(g);
  if (me == home) MP_CHECK_INT((long)ROUNDS * n, *(long *)bases[me]);
  /* Trylock: a held mutex is refused, a free one taken. */
  if (me == 0) ARMCIX_Lock_hdl(hdl, 0, 0);
  armci_msg_group_barrier(g);
  if (me != 0) MP_CHECK_INT(0, ARMCIX_Trylock_hdl(hdl, 0, 0));
  armci_msg_group_barrier(g);
  if (me == 0) ARMCIX_Unlock_hdl(hdl, 0, 0);
  armci_msg_group_barrier(g);
  if (me == n - 1) {
    MP_CHECK_INT(1, ARMCIX_Trylock_hdl(hdl, 0, 0));
    ARMCIX_Unlock_hdl(hdl, 0, 0);
  }
  armci_msg_group_barrier(g);
  MP_CHECK_INT(0, ARMCI_Free_group(bases[me], g));
  free(bases);
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  MP_CHECK_INT(0, ARMCI_Init()); /* a second Init is harmless */
  MP_CHECK_INT(0, ARMCI_Init_args(&argc, &argv));
  zero_size();

  int *all = malloc(sizeof(int) * (size_t)mp_np);
  for (int i = 0; i < mp_np; ++i) all[i] = i;
  ARMCI_Group world, dflt;
  ARMCI_Group_get_world(&world);
  ARMCI_Group_get_default(&dflt);
  check_group(&world, all, mp_np);
  check_group(&dflt, all, mp_np);

  /* Evens and odds: every rank makes both (collective over the default
   * group), then each works in its own while the other group does too. */
  int n_even = (mp_np + 1) / 2, n_odd = mp_np / 2;
  int *evens = malloc(sizeof(int) * (size_t)n_even), *odds = malloc(sizeof(int) * (size_t)(n_odd + 1));
  for (int i = 0; i < n_even; ++i) evens[i] = 2 * i;
  for (int i = 0; i < n_odd; ++i) odds[i] = 2 * i + 1;
  ARMCI_Group even_group, odd_group;
  ARMCI_Group_create(n_even, evens, &even_group);
  ARMCI_Group_create(n_odd, odds, &odd_group);
  check_group(&even_group, evens, n_even);
  check_group(&odd_group, odds, n_odd);
  ARMCI_Group *mine = mp_me % 2 ? &odd_group : &even_group;
  group_memory(mine, 12);

  /* Group reductions, and the group as default group. */
  int my_group_rank, my_group_size;
  ARMCI_Group_rank(mine, &my_group_rank);
  ARMCI_Group_size(mine, &my_group_size);
  long sum = mp_me;
  armci_msg_group_lgop(&sum, 1, "+", mine);
  long expected = 0;
  for (int i = 0; i < my_group_size; ++i) expected += ARMCI_Absolute_id(mine, i);
  MP_CHECK_INT((int)expected, (int)sum);
  ARMCI_Group_set_default(mine);
  ARMCI_Group_get_default(&dflt);
  MP_CHECK_INT(my_group_size, dflt.size);
  int count = 1;
  armci_msg_igop(&count, 1, "+");
  MP_CHECK_INT(my_group_size, count);
  ARMCI_Group_set_default(&world);

  /* The world through the group calls: its parts cannot come from what the
   * parity groups freed (the other group never mapped those), and what it
   * frees serves the child below, which leaves the last rank out. */
  group_memory(&world, 3);

  /* A child of the world made of every rank but the last, reversed. */
  if (mp_np > 1) {
    int *rev = malloc(sizeof(int) * (size_t)mp_np);
    for (int i = 0; i < mp_np - 1; ++i) rev[i] = mp_np - 2 - i;
    ARMCI_Group child;
    ARMCI_Group_create_child(mp_np - 1, rev, &child, &world);
    check_group(&child, rev, mp_np - 1);
    if (mp_me < mp_np - 1) group_memory(&child, 3);
    ARMCI_Group_free(&child);
    free(rev);
  }

  /* Split by parity with reversed keys: the highest rank comes first. */
  ARMCI_Group split;
  MP_CHECK_INT(0, ARMCIX_Group_split(&world, mp_me % 2, -mp_me, &split));
  int n_split = mp_me % 2 ? n_odd : n_even;
  int *expect_split = malloc(sizeof(int) * (size_t)n_split);
  for (int i = 0; i < n_split; ++i) expect_split[i] = (mp_me % 2 ? odds : evens)[n_split - 1 - i];
  check_group(&split, expect_split, n_split);
  group_memory(&split, 3);
  ARMCI_Group dup;
  MP_CHECK_INT(0, ARMCIX_Group_dup(&split, &dup));
  check_group(&dup, expect_split, n_split);
  double d = 1.5;
  armci_msg_group_dgop(&d, 1, "+", &dup);
  MP_CHECK_DBL(1.5 * n_split, d);
  ARMCI_Group_free(&dup);
  ARMCI_Group_free(&split);

  /* Mutex handles: the world's, then one per parity group at the same
   * time, all beside ARMCI_Create_mutexes' set. */
  MP_CHECK_INT(0, ARMCI_Create_mutexes(1));
  armcix_mutex_hdl_t world_mutexes = ARMCIX_Create_mutexes_hdl(1 + mp_me % 2, &world);
  MP_CHECK(world_mutexes != NULL, "ARMCIX_Create_mutexes_hdl returned NULL");
  locked_increments(world_mutexes, &world);
  armcix_mutex_hdl_t group_mutexes = ARMCIX_Create_mutexes_hdl(2, mine);
  ARMCI_Lock(0, 0); /* the plain set is independent of the handles */
  ARMCI_Unlock(0, 0);
  locked_increments(group_mutexes, mine);
  MP_CHECK_INT(0, ARMCIX_Destroy_mutexes_hdl(group_mutexes));
  MP_CHECK_INT(0, ARMCIX_Destroy_mutexes_hdl(world_mutexes));
  MP_CHECK_INT(0, ARMCI_Destroy_mutexes());

  const int neighbours = armci_domain_nprocs(ARMCI_DOMAIN_SMP, armci_domain_my_id(ARMCI_DOMAIN_SMP)) > 1;
  MP_CHECK_INT(ARMCI_Uses_shm() && neighbours, ARMCI_Uses_shm_grp(&world));
  ARMCI_Group_free(&even_group);
  ARMCI_Group_free(&odd_group);
  free(all);
  free(evens);
  free(odds);
  free(expect_split);
  MP_CHECK_INT(0, ARMCI_Finalize());
  MP_CHECK_INT(0, ARMCI_Finalize()); /* a second Finalize is harmless */
  mp_pass("mp_groups", mp_me);
  return 0;
}
