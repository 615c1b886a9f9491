/*
 * mp_faults CASE [ARGS]: the library's side of the fault tests that
 * tests/mp/faults-test.sh drives (it checks messages, exit status, time and
 * /dev/shm).
 *
 *   alloc KIB...  ARMCI_Malloc of each size in turn, every byte written;
 *                 prints "allocated N KiB rank R" after each (a full
 *                 /dev/shm must fail the call on every rank instead)
 *   allocfree A B ARMCI_Malloc of A KiB, freed (kept spare), then of B KiB;
 *                 every rank writes its part of B, reads its neighbour's
 *                 back and checks it; prints "allocated B KiB rank R"
 *   mallocloop N  N rounds of Malloc/Free of 256 KiB; the script kills a
 *                 rank from outside at some point of it
 *   barrier       the last rank dies (SIGKILL) after a barrier; the others
 *                 enter ARMCI_Barrier
 *   lock          the last rank takes mutex 0 of rank 0 and dies holding it;
 *                 the others wait in ARMCI_Lock
 *   wait          the last rank dies; the others NbGet from its memory and
 *                 ARMCI_Wait, over and over (then a barrier)
 *   errorfree     the last rank calls ARMCI_Error while the others are in
 *                 ARMCI_Free
 *   return        (ARMCI_ON_PEER_FAILURE=return, np 3) the last rank takes
 *                 mutex 0 of rank 0 and dies; the survivors check that
 *                 every call needing it returns ARMCI_ERR_PEER_DEAD (or,
 *                 without a result, sets ARMCIX_Peer_error), that every
 *                 collective does, that they still move correct data
 *                 between themselves, and that ARMCI_Finalize returns;
 *                 prints "returned rank R" at the end
 *   fallback BIG SMALL  the first half of the ranks (one virtual node)
 *                 allocates BIG KiB each, the others SMALL: in a /dev/shm
 *                 too small for the big parts, they fall back (outside
 *                 /dev/shm by default, to network memory with
 *                 ARMCI_SHM_FALLBACK=network); every rank
 *                 then moves data to and from every rank (contiguous,
 *                 strided, vector, nonblocking, Acc, Rmw, notify) and checks
 *                 what memory holds; prints "moved rank R" (with =error the
 *                 ARMCI_Malloc must fail on every rank instead)
 * Every rank that gets past the fault prints "survived CASE rank R": the
 * script counts that as a failure. With MP_PIDDIR set each rank writes its
 * pid to $MP_PIDDIR/rank.R first; with MP_DEATH_FILE the victim writes the
 * time of its death there.
 */
#include "mp_common.h"

#include <armcix.h>
#include <signal.h>
#include <unistd.h>

static void write_pid(int me) {
  const char *dir = getenv("MP_PIDDIR");
  if (dir == NULL) return;
  char path[512];
  snprintf(path, sizeof path, "%s/rank.%d", dir, me);
  FILE *f = fopen(path, "w");
  MP_CHECK(f != NULL, "cannot write %s", path);
  fprintf(f, "%ld\n", (long)getpid());
  fclose(f);
}

/* The victim's death. With MP_DEATH_FILE set, the wall-clock time of it
 * goes there first, from which the script measures to the survivors' end
 * (the issue's bound is 10 s). A file, not stdout: mpirun drops what a
 * rank printed just before it was killed. */
static void die_now(void) {
  const char *path = getenv("MP_DEATH_FILE");
  if (path != NULL) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    FILE *f = fopen(path, "w");
    MP_CHECK(f != NULL, "cannot write %s", path);
    fprintf(f, "%lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
    fclose(f);
  }
  raise(SIGKILL);
}

/* A call without a result returned early because of the dead peer. */
#define CHECK_PEER_ERROR(call)                                \
  do {                                                        \
    call;                                                     \
    MP_CHECK(ARMCIX_Peer_error() == ARMCI_ERR_PEER_DEAD, "%s set no peer error", #call); \
  } while (0)

enum { kRegion = 1 << 16 };

static void return_case(int me, int np, int victim, void **base) {
  MP_CHECK(np == 3, "the return case runs on 3 ranks");
  MP_CHECK_INT(0, ARMCI_Malloc(base, kRegion));
  MP_CHECK_INT(0, ARMCI_Create_mutexes(1));
  armcix_mutex_hdl_t mutexes = ARMCIX_Create_mutexes_hdl(1, NULL);
  mp_fill_pattern(base[me], kRegion, me, me, 0);
  char *buf = malloc(kRegion), *want = malloc(kRegion);
  if (me == victim) ARMCI_Lock(0, 0);
  ARMCI_Barrier();
  if (me == victim) die_now();

  /* The barrier waits for the dead rank until its death is known, then
   * returns early; from then on every collective fails at once. */
  double t0 = mp_now();
  CHECK_PEER_ERROR(ARMCI_Barrier());
  MP_CHECK(mp_now() - t0 < 10, "the barrier took %.1f s to see the death", mp_now() - t0);
  printf("barrier saw the death after %.2f s rank %d\n", mp_now() - t0, me);
  fflush(stdout);
  int dead[4] = {-1, -1, -1, -1};
  MP_CHECK_INT(1, ARMCIX_Dead_ranks(dead, 4));
  MP_CHECK_INT(victim, dead[0]);
  MP_CHECK_INT(0, ARMCIX_Peer_error()); /* read once, cleared */
  CHECK_PEER_ERROR(ARMCI_Barrier());
  CHECK_PEER_ERROR(ARMCI_AllFence());
  int sum = 1;
  CHECK_PEER_ERROR(armci_msg_igop(&sum, 1, "+"));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Malloc(base, 4096));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Free(base[me]));

  /* Everything that reaches the dead rank. */
  char *far = base[victim];
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Put(buf, far, 64, victim));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Get(far, buf, 64, victim));
  double scale = 1.0;
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Acc(ARMCI_ACC_DBL, &scale, buf, far, 64, victim));
  int stride[1] = {128}, count[2] = {64, 4};
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_PutS(buf, stride, far, stride, count, 1, victim));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_GetS(far, stride, buf, stride, count, 1, victim));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_AccS(ARMCI_ACC_DBL, &scale, buf, stride, far, stride, count, 1, victim));
  void *src[2] = {buf, buf + 256}, *dst[2] = {far, far + 256};
  armci_giov_t iov = {src, dst, 64, 2};
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_PutV(&iov, 1, victim));
  armci_hdl_t h;
  ARMCI_INIT_HANDLE(&h);
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_NbGet(far, buf, 64, victim, &h));
  int old = 0;
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &old, far, 1, victim));
  CHECK_PEER_ERROR(ARMCI_Fence(victim));
  CHECK_PEER_ERROR(ARMCIX_Lock_hdl(mutexes, 0, victim));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCIX_Destroy_mutexes_hdl(mutexes));
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_WaitProc(victim));
  /* Mutex 0 of rank 0 is held by the dead rank: no one can tell it will
   * never come back, so the wait gives up after a while, with the error. */
  t0 = mp_now();
  CHECK_PEER_ERROR(ARMCI_Lock(0, 0));
  MP_CHECK(mp_now() - t0 < 10, "Lock of the dead rank's mutex took %.1f s", mp_now() - t0);

  /* The survivors still move correct data between themselves: each reads
   * the other's pattern (written before the death), then writes its own
   * into the other's region and tells it so through armci_notify. */
  const int partner = 1 - me;
  MP_CHECK_INT(0, ARMCI_Get(base[partner], buf, kRegion, partner));
  mp_fill_pattern(want, kRegion, partner, partner, 0);
  MP_CHECK_BYTES(want, buf, kRegion, "survivor's memory read after the death");
  mp_fill_pattern(buf, kRegion / 2, me, partner, 0);
  MP_CHECK_INT(0, ARMCI_Put(buf, (char *)base[partner] + (me == 0 ? 0 : kRegion / 2), kRegion / 2, partner));
  ARMCI_Fence(partner);
  MP_CHECK_INT(0, ARMCIX_Peer_error());
  ARMCI_INIT_HANDLE(&h);
  MP_CHECK_INT(0, ARMCI_NbPut(buf, (char *)base[partner] + (me == 0 ? 0 : kRegion / 2), 64, partner, &h));
  MP_CHECK_INT(0, ARMCI_Wait(&h));
  MP_CHECK(armci_notify(partner) >= 0, "armci_notify to the survivor failed");
  int value = 0;
  armci_notify_wait(partner, &value);
  MP_CHECK_INT(0, ARMCIX_Peer_error());
  mp_fill_pattern(want, kRegion / 2, partner, me, 0);
  MP_CHECK_BYTES(want, (char *)base[me] + (partner == 0 ? 0 : kRegion / 2), kRegion / 2,
                 "survivor's put after the death");
  long got = 0;
  MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &got, base[partner], 0, partner));
  /* Neither finalizes while the other may still reach its memory: its
   * registrations go with it (over verbs the Rmw then failed with "remote
   * access error" at one run in two). */
  MP_CHECK(armci_notify(partner) >= 0, "armci_notify to the survivor failed");
  armci_notify_wait(partner, &value);

  /* Finalize ends this rank's part alone and says so. */
  MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Finalize());
  printf("returned rank %d\n", me);
  fflush(stdout);
}

/* The fallback case: every kind of transfer between every pair of ranks,
 * checked in memory. Each section of a part holds one 4 KiB slot per origin. */
enum { kSlot = 4096 };
static void fallback_case(int me, int np, void **base) {
  const size_t section = (size_t)np * kSlot;
  char *src = malloc(kSlot), *want = malloc(kSlot), *got = malloc(kSlot);
  for (int t = 0; t < np; t++) {
    char *part = base[t];
    mp_set_where("fallback: rank %d -> %d", me, t);
    /* 0: contiguous put; 1: strided put (16 rows of 128 B, every other 256 B
     * at the target); 2: vector put (64 pieces of 64 B); 3: nonblocking put. */
    mp_fill_pattern(src, kSlot, me, t, 0);
    MP_CHECK_INT(0, ARMCI_Put(src, part + me * kSlot, kSlot, t));
    int src_stride[1] = {128}, dst_stride[1] = {256}, count[2] = {128, 16};
    MP_CHECK_INT(0, ARMCI_PutS(src, src_stride, part + section + me * kSlot, dst_stride, count, 1, t));
    void *vs[64], *vd[64];
    for (int i = 0; i < 64; i++) {
      vs[i] = src + i * 64;
      vd[i] = part + 2 * section + me * kSlot + i * 64;
    }
    armci_giov_t iov = {vs, vd, 64, 64};
    MP_CHECK_INT(0, ARMCI_PutV(&iov, 1, t));
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    MP_CHECK_INT(0, ARMCI_NbPut(src, part + 3 * section + me * kSlot, kSlot, t, &h));
    MP_CHECK_INT(0, ARMCI_Wait(&h));
    /* 4: Acc of (me + 1) into 64 shared doubles; 5: fetch-and-add. */
    double ones[64], scale = me + 1;
    for (int i = 0; i < 64; i++) ones[i] = 1.0;
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &scale, ones, part + 4 * section, sizeof ones, t));
    long old = 0;
    MP_CHECK_INT(0, ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &old, part + 5 * section, 1, t));
    ARMCI_Fence(t);
  }
  /* 6: a put to the next rank, then a notification, which must not pass it. */
  const int next = (me + 1) % np, prev = (me + np - 1) % np;
  mp_fill_pattern(src, kSlot, me, next, 6);
  MP_CHECK_INT(0, ARMCI_Put(src, (char *)base[next] + 6 * section, kSlot, next));
  armci_notify(next);
  armci_notify_wait(prev, NULL);
  mp_fill_pattern(want, kSlot, prev, me, 6);
  MP_CHECK_BYTES(want, (char *)base[me] + 6 * section, kSlot, "put before the notification");
  ARMCI_Barrier();
  /* Every origin's slots, read back from every rank (and at home). */
  for (int t = 0; t < np; t++) {
    char *part = base[t];
    for (int o = 0; o < np; o++) {
      mp_set_where("fallback: rank %d reads rank %d's slots from rank %d", me, o, t);
      mp_fill_pattern(want, kSlot, o, t, 0);
      MP_CHECK_INT(0, ARMCI_Get(part + o * kSlot, got, kSlot, t));
      MP_CHECK_BYTES(want, got, kSlot, "contiguous put");
      memset(got, 0, kSlot);
      MP_CHECK_INT(0, ARMCI_Get(part + 2 * section + o * kSlot, got, kSlot, t));
      MP_CHECK_BYTES(want, got, kSlot, "vector put");
      MP_CHECK_INT(0, ARMCI_Get(part + 3 * section + o * kSlot, got, kSlot, t));
      MP_CHECK_BYTES(want, got, kSlot, "nonblocking put");
      /* The strided rows, gathered back by a strided get. */
      int src_stride[1] = {256}, dst_stride[1] = {128}, count[2] = {128, 16};
      memset(got, 0, kSlot);
      MP_CHECK_INT(0, ARMCI_GetS(part + section + o * kSlot, src_stride, got, dst_stride, count, 1, t));
      MP_CHECK_BYTES(want, got, 16 * 128, "strided put");
    }
    double sums[64];
    MP_CHECK_INT(0, ARMCI_Get(part + 4 * section, sums, sizeof sums, t));
    for (int i = 0; i < 64; i++) MP_CHECK_DBL(np * (np + 1) / 2.0, sums[i]);
    long count = 0;
    MP_CHECK_INT(0, ARMCI_Get(part + 5 * section, &count, sizeof count, t));
    MP_CHECK_INT(np, (int)count);
  }
  ARMCI_Barrier();
  free(src);
  free(want);
  free(got);
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  const int me = mp_me, np = mp_np, victim = np - 1;
  MP_CHECK(argc >= 2, "usage: mp_faults CASE [ARGS]");
  const char *c = argv[1];
  write_pid(me);
  void **base = malloc(sizeof(void *) * (size_t)np);

  if (strcmp(c, "alloc") == 0) {
    for (int i = 2; i < argc; i++) {
      long kib = atol(argv[i]);
      MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)kib * 1024));
      memset(base[me], 0x5a, (size_t)kib * 1024); /* a SIGBUS here would mean pages were not reserved */
      printf("allocated %ld KiB rank %d\n", kib, me);
      fflush(stdout);
    }
    return mp_finish("mp_faults");
  }
  if (strcmp(c, "allocfree") == 0) {
    MP_CHECK(argc == 4, "usage: mp_faults allocfree KIB KIB");
    const size_t first = (size_t)atol(argv[2]) * 1024, second = (size_t)atol(argv[3]) * 1024;
    MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)first));
    memset(base[me], 0x5a, first);
    MP_CHECK_INT(0, ARMCI_Free(base[me]));
    MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)second));
    mp_fill_pattern(base[me], second, me, me, 0);
    ARMCI_Barrier();
    const int next = (me + 1) % np;
    unsigned char *got = malloc(second), *want = malloc(second);
    MP_CHECK_INT(0, ARMCI_Get(base[next], got, (int)second, next));
    mp_fill_pattern(want, second, next, next, 0);
    MP_CHECK_BYTES(want, got, second, "neighbour's part read back");
    printf("allocated %s KiB rank %d\n", argv[3], me);
    fflush(stdout);
    ARMCI_Barrier();
    MP_CHECK_INT(0, ARMCI_Free(base[me]));
    return mp_finish("mp_faults");
  }
  if (strcmp(c, "fallback") == 0) {
    MP_CHECK(argc == 4, "usage: mp_faults fallback BIG SMALL");
    const long kib = me < np / 2 ? atol(argv[2]) : atol(argv[3]);
    MP_CHECK((size_t)kib * 1024 >= 7 * (size_t)np * kSlot, "parts of %ld KiB are too small", kib);
    MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)kib * 1024));
    printf("allocated %ld KiB rank %d\n", kib, me);
    fflush(stdout);
    fallback_case(me, np, base);
    printf("moved rank %d\n", me);
    fflush(stdout);
    MP_CHECK_INT(0, ARMCI_Free(base[me]));
    free(base);
    return mp_finish("mp_faults");
  }
  if (strcmp(c, "mallocloop") == 0) {
    int rounds = argc > 2 ? atoi(argv[2]) : 1000;
    for (int i = 0; i < rounds; i++) {
      /* Return mode: the death ends the loop with the code, not the process. */
      int rc = ARMCI_Malloc(base, 256 * 1024);
      if (rc == 0) rc = ARMCI_Free(base[me]);
      if (rc != 0) {
        MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, rc);
        MP_CHECK_INT(ARMCI_ERR_PEER_DEAD, ARMCI_Finalize());
        printf("returned rank %d\n", me);
        return 0;
      }
    }
  } else if (strcmp(c, "barrier") == 0) {
    ARMCI_Barrier();
    if (me == victim) die_now();
    ARMCI_Barrier();
  } else if (strcmp(c, "lock") == 0) {
    MP_CHECK_INT(0, ARMCI_Create_mutexes(1));
    if (me == victim) ARMCI_Lock(0, 0);
    ARMCI_Barrier();
    if (me == victim) die_now();
    ARMCI_Lock(0, 0);
  } else if (strcmp(c, "wait") == 0) {
    MP_CHECK_INT(0, ARMCI_Malloc(base, 1 << 20));
    char *buf = malloc(1 << 20);
    ARMCI_Barrier();
    if (me == victim) die_now();
    double until = mp_now() + 20;
    while (mp_now() < until) {
      armci_hdl_t h;
      ARMCI_INIT_HANDLE(&h);
      MP_CHECK_INT(0, ARMCI_NbGet(base[victim], buf, 1 << 20, victim, &h));
      MP_CHECK_INT(0, ARMCI_Wait(&h));
    }
    ARMCI_Barrier();
  } else if (strcmp(c, "errorfree") == 0) {
    MP_CHECK_INT(0, ARMCI_Malloc(base, 4096));
    if (me == victim) ARMCI_Error("errorfree: the victim gives up", 3);
    ARMCI_Free(base[me]);
  } else if (strcmp(c, "return") == 0) {
    return_case(me, np, victim, base);
    return 0;
  } else {
    MP_CHECK(0, "unknown case '%s'", c);
  }
  printf("survived %s rank %d\n", c, me);
  fflush(stdout);
  ARMCI_Finalize();
  return 0;
}
