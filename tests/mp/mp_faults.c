/*
 * mp_faults CASE [ARGS]: the library's side of the fault tests that
 * tests/mp/faults-test.sh drives (it checks messages, exit status, time and
 * /dev/shm).
 *
 *   alloc KIB...  ARMCI_Malloc of each size in turn, every byte written;
 *                 prints "allocated N KiB rank R" after each (a full
 *                 /dev/shm must fail the call on every rank instead)
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
 * Every rank that gets past the fault prints "survived CASE rank R": the
 * script counts that as a failure. With MP_PIDDIR set each rank writes its
 * pid to $MP_PIDDIR/rank.R first.
 */
#include "mp_common.h"

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
    ARMCI_Finalize();
    mp_pass("mp_faults", me);
    return 0;
  }
  if (strcmp(c, "mallocloop") == 0) {
    int rounds = argc > 2 ? atoi(argv[2]) : 1000;
    for (int i = 0; i < rounds; i++) {
      MP_CHECK_INT(0, ARMCI_Malloc(base, 256 * 1024));
      ARMCI_Free(base[me]);
    }
  } else if (strcmp(c, "barrier") == 0) {
    ARMCI_Barrier();
    if (me == victim) raise(SIGKILL);
    ARMCI_Barrier();
  } else if (strcmp(c, "lock") == 0) {
    MP_CHECK_INT(0, ARMCI_Create_mutexes(1));
    if (me == victim) ARMCI_Lock(0, 0);
    ARMCI_Barrier();
    if (me == victim) raise(SIGKILL);
    ARMCI_Lock(0, 0);
  } else if (strcmp(c, "wait") == 0) {
    MP_CHECK_INT(0, ARMCI_Malloc(base, 1 << 20));
    char *buf = malloc(1 << 20);
    ARMCI_Barrier();
    if (me == victim) raise(SIGKILL);
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
  } else {
    MP_CHECK(0, "unknown case '%s'", c);
  }
  printf("survived %s rank %d\n", c, me);
  fflush(stdout);
  ARMCI_Finalize();
  return 0;
}
