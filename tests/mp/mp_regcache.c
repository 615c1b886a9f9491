/*
 * mp_regcache: transfers between a peer and local memory that is freed or
 * unmapped and then handed out again at the same address. A registration
 * cache that kept the old registration would move the data to or from the
 * old physical pages: the new mapping would not see what a get brought, and
 * a put would send stale bytes. Every round is checked byte by byte.
 */
#define _GNU_SOURCE
#include "mp_common.h"

#include <sys/mman.h>

enum { BYTES = 1 << 20, ROUNDS = 6 };


/* Gets the peer's block into buf and checks it; then puts a fresh pattern
 * from buf and checks (by reading back with a get into a private buffer)
 * that the peer received exactly that. */
static void round_trip(char **base, unsigned char *buf, int peer, int round, const char *what) {
  mp_set_where("%s round %d: get from rank %d", what, round, peer);
  memset(buf, 0, BYTES);
  MP_CHECK_INT(0, ARMCI_Get(base[peer], buf, BYTES, peer));
  unsigned char *expect = malloc(BYTES);
  mp_fill_pattern(expect, BYTES, peer, 0, 0);
  MP_CHECK_BYTES(expect, buf, BYTES, "block got into reused memory");
  mp_set_where("%s round %d: put to rank %d", what, round, peer);
  mp_fill_pattern(buf, BYTES, mp_me, peer, (size_t)round + 1);
  char *slot = base[peer] + BYTES + (size_t)mp_me * BYTES;
  MP_CHECK_INT(0, ARMCI_Put(buf, slot, BYTES, peer));
  ARMCI_Fence(peer);
  unsigned char *back = malloc(BYTES);
  MP_CHECK_INT(0, ARMCI_Get(slot, back, BYTES, peer));
  mp_fill_pattern(expect, BYTES, mp_me, peer, (size_t)round + 1);
  MP_CHECK_BYTES(expect, back, BYTES, "block put from reused memory");
  /* The same block as a strided get of 256 rows of 4000 bytes (every
   * strided protocol, host-assisted included, exposes or registers buf). */
  mp_set_where("%s round %d: strided get from rank %d", what, round, peer);
  memset(buf, 0, BYTES);
  int stride = 4096, count[2] = {4000, 256};
  MP_CHECK_INT(0, ARMCI_GetS(slot, &stride, buf, &stride, count, 1, peer));
  for (int row = 0; row < 256; row++)
    MP_CHECK_BYTES(expect + (size_t)row * 4096, buf + (size_t)row * 4096, 4000, "row of a strided get");
  free(back);
  free(expect);
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  char **base = (char **)mp_alloc_all((size_t)BYTES * (size_t)(mp_np + 1));
  mp_fill_pattern(base[mp_me], BYTES, mp_me, 0, 0);
  ARMCI_Barrier();
  const int peer = (mp_me + 1) % mp_np;

  /* munmap, then a new mapping at the same address. */
  unsigned char *fixed = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  MP_CHECK(fixed != MAP_FAILED, "mmap of %d bytes failed", BYTES);
  int remapped = 0;
  for (int round = 0; round < ROUNDS; round++) {
    round_trip(base, fixed, peer, round, "munmap/mmap");
    MP_CHECK_INT(0, munmap(fixed, BYTES));
    void *again = mmap(fixed, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (again == MAP_FAILED) { /* someone took the range meanwhile: a fresh one */
      again = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      MP_CHECK(again != MAP_FAILED, "mmap of %d bytes failed", BYTES);
    } else {
      remapped++;
    }
    fixed = again;
  }
  MP_CHECK(remapped > 0, "no round got the same address back (%d rounds)", ROUNDS);
  munmap(fixed, BYTES);

  /* malloc / free of a block large enough that glibc maps and unmaps it. */
  void *previous = NULL;
  int same = 0;
  for (int round = 0; round < ROUNDS; round++) {
    unsigned char *heap = malloc(BYTES);
    MP_CHECK(heap != NULL, "malloc(%d) failed", BYTES);
    same += heap == previous;
    round_trip(base, heap, peer, round, "malloc/free");
    previous = heap;
    free(heap);
  }

  /* madvise(DONTNEED) drops the pages of a live mapping. */
  unsigned char *advised = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  MP_CHECK(advised != MAP_FAILED, "mmap of %d bytes failed", BYTES);
  for (int round = 0; round < ROUNDS; round++) {
    round_trip(base, advised, peer, round, "madvise");
    MP_CHECK_INT(0, madvise(advised, BYTES, MADV_DONTNEED));
  }
  munmap(advised, BYTES);

  mp_where[0] = 0;
  ARMCI_Barrier();
  mp_free_all((void **)base);
  if (mp_me == 0) printf("# mp_regcache: %d of %d remaps at the same address, %d of %d mallocs\n", remapped, ROUNDS, same, ROUNDS);
  return mp_finish("mp_regcache");
}
