/*
 * mp_random: random mixes of Put, Get and Acc (int and double) of random
 * sizes and offsets. Every origin owns one slice of every target, so the
 * final contents are deterministic, and keeps a shadow copy of its slices.
 * A Get issued right after a Put or Acc from the same origin, with no fence,
 * must already see the update (ARMCI's location consistency).
 */
#include "mp_common.h"

static int me, np;

/* One origin's slice on one target: raw bytes, then ints, then doubles, so
 * that integer and floating-point accumulates never reinterpret each other's
 * bits (which would make rounding or NaN payloads part of the result). */
enum {
  BYTES_LEN = 16384,
  INT_OFF = BYTES_LEN,
  NINT = 1024,
  DBL_OFF = INT_OFF + NINT * 4,
  NDBL = 1024,
  SLICE = DBL_OFF + NDBL * 8,
  ROUNDS = 4,
  OPS = 400,
};

static void **mem;    /* the tested memory: np slices per rank */
static void **shadow; /* origin's view: slice for target t at t * SLICE */
static mp_rng_t rng;
static uint64_t seed;
static unsigned char *tmp;
static unsigned char *regbuf; /* registered source/destination */
static unsigned char *heapbuf;

static unsigned char *my_shadow(int t) { return (unsigned char *)shadow[me] + (size_t)t * SLICE; }

static char *remote(int t, size_t off) { return (char *)mem[t] + (size_t)me * SLICE + off; }

/* Lengths mostly small, sometimes large, occasionally up to the limit. */
static size_t rand_len(size_t max) {
  uint64_t k = mp_rng_below(&rng, 100);
  size_t cap = k < 70 ? 64 : k < 95 ? 2048 : max;
  if (cap > max) cap = max;
  return 1 + (size_t)mp_rng_below(&rng, cap);
}

static unsigned char *pick_buf(void) { return mp_rng_below(&rng, 2) ? regbuf : heapbuf; }

/* Reads [off, off+len) of this origin's slice on t and compares with the
 * shadow. */
static void check_remote(int t, size_t off, size_t len, const char *why) {
  unsigned char *dst = pick_buf();
  memset(dst, 0xD5, len);
  MP_CHECK_INT(0, ARMCI_Get(remote(t, off), dst, (int)len, t));
  MP_CHECK_BYTES(my_shadow(t) + off, dst, len, why);
}

static void random_op(int round, int op) {
  int t = (int)mp_rng_below(&rng, (uint64_t)np);
  int kind = (int)mp_rng_below(&rng, 100);
  unsigned char *sh = my_shadow(t);
  unsigned char *buf = pick_buf();
  size_t off, len;
  int verify_now = (int)mp_rng_below(&rng, 2);

  if (kind < 25) {
    len = rand_len(BYTES_LEN);
    off = mp_rng_below(&rng, BYTES_LEN - len + 1);
    mp_set_where("seed %#" PRIx64 " round %d op %d: Put %zu bytes to rank %d at slice offset %zu",
                 seed, round, op, len, t, off);
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)mp_rng_next(&rng);
    MP_CHECK_INT(0, ARMCI_Put(buf, remote(t, off), (int)len, t));
    memcpy(sh + off, buf, len);
    if (verify_now) check_remote(t, off, len, "Get right after Put (no fence)");
  } else if (kind < 35) {
    len = rand_len(BYTES_LEN);
    off = mp_rng_below(&rng, BYTES_LEN - len + 1);
    mp_set_where("seed %#" PRIx64 " round %d op %d: Get %zu bytes from rank %d at slice offset %zu",
                 seed, round, op, len, t, off);
    check_remote(t, off, len, "Get of the byte area");
  } else if (kind < 45) {
    size_t n = rand_len(NINT), i0 = mp_rng_below(&rng, NINT - n + 1);
    int *v = (int *)buf;
    for (size_t i = 0; i < n; i++) v[i] = (int)mp_rng_range(&rng, -50, 50);
    off = INT_OFF + i0 * 4;
    len = n * 4;
    mp_set_where("seed %#" PRIx64 " round %d op %d: Put %zu ints to rank %d at index %zu", seed,
                 round, op, n, t, i0);
    MP_CHECK_INT(0, ARMCI_Put(buf, remote(t, off), (int)len, t));
    memcpy(sh + off, buf, len);
    if (verify_now) check_remote(t, off, len, "Get right after Put of ints (no fence)");
  } else if (kind < 62) {
    static const int scales[] = {1, -1, 2, 3};
    int scale = scales[mp_rng_below(&rng, 4)];
    size_t n = rand_len(NINT), i0 = mp_rng_below(&rng, NINT - n + 1);
    int *v = (int *)buf;
    for (size_t i = 0; i < n; i++) v[i] = (int)mp_rng_range(&rng, -20, 20);
    off = INT_OFF + i0 * 4;
    len = n * 4;
    mp_set_where("seed %#" PRIx64 " round %d op %d: Acc of %zu ints (scale %d) to rank %d at index %zu",
                 seed, round, op, n, scale, t, i0);
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_INT, &scale, buf, remote(t, off), (int)len, t));
    for (size_t i = 0; i < n; i++) {
      int s;
      memcpy(&s, sh + off + i * 4, 4);
      s += scale * v[i];
      memcpy(sh + off + i * 4, &s, 4);
    }
    if (verify_now) check_remote(t, off, len, "Get right after Acc of ints (no fence)");
  } else if (kind < 72) {
    size_t n = rand_len(NDBL), i0 = mp_rng_below(&rng, NDBL - n + 1);
    double *v = (double *)buf;
    for (size_t i = 0; i < n; i++) v[i] = (double)mp_rng_range(&rng, -50, 50);
    off = DBL_OFF + i0 * 8;
    len = n * 8;
    mp_set_where("seed %#" PRIx64 " round %d op %d: Put %zu doubles to rank %d at index %zu", seed,
                 round, op, n, t, i0);
    MP_CHECK_INT(0, ARMCI_Put(buf, remote(t, off), (int)len, t));
    memcpy(sh + off, buf, len);
    if (verify_now) check_remote(t, off, len, "Get right after Put of doubles (no fence)");
  } else if (kind < 90) {
    /* Integers times 1, -1, 2 or 0.5: exact, so rounding cannot differ
     * between the library's arithmetic and the shadow's. */
    static const double scales[] = {1.0, -1.0, 2.0, 0.5};
    double scale = scales[mp_rng_below(&rng, 4)];
    size_t n = rand_len(NDBL), i0 = mp_rng_below(&rng, NDBL - n + 1);
    double *v = (double *)buf;
    for (size_t i = 0; i < n; i++) v[i] = (double)mp_rng_range(&rng, -20, 20);
    off = DBL_OFF + i0 * 8;
    len = n * 8;
    mp_set_where("seed %#" PRIx64 " round %d op %d: Acc of %zu doubles (scale %g) to rank %d at index %zu",
                 seed, round, op, n, scale, t, i0);
    MP_CHECK_INT(0, ARMCI_Acc(ARMCI_ACC_DBL, &scale, buf, remote(t, off), (int)len, t));
    for (size_t i = 0; i < n; i++) {
      double s;
      memcpy(&s, sh + off + i * 8, 8);
      s += scale * v[i];
      memcpy(sh + off + i * 8, &s, 8);
    }
    if (verify_now) check_remote(t, off, len, "Get right after Acc of doubles (no fence)");
  } else {
    len = rand_len(SLICE - INT_OFF);
    off = INT_OFF + mp_rng_below(&rng, SLICE - INT_OFF - len + 1);
    mp_set_where("seed %#" PRIx64 " round %d op %d: Get %zu bytes from rank %d at slice offset %zu",
                 seed, round, op, len, t, off);
    check_remote(t, off, len, "Get of the int/double areas");
  }
}

int main(int argc, char **argv) {
  mp_init(&argc, &argv);
  me = mp_me;
  np = mp_np;
  seed = mp_seed();
  mp_rng_init(&rng, seed, me, 0);

  mem = malloc(sizeof(void *) * (size_t)np);
  shadow = malloc(sizeof(void *) * (size_t)np);
  MP_CHECK_INT(0, ARMCI_Malloc(mem, (armci_size_t)SLICE * np));
  MP_CHECK_INT(0, ARMCI_Malloc(shadow, (armci_size_t)SLICE * np));
  memset(mem[me], 0, (size_t)SLICE * (size_t)np);
  memset(shadow[me], 0, (size_t)SLICE * (size_t)np);
  tmp = malloc(SLICE);
  regbuf = ARMCI_Malloc_local(SLICE);
  heapbuf = malloc(SLICE);
  ARMCI_Barrier();

  for (int round = 0; round < ROUNDS; round++) {
    for (int op = 0; op < OPS; op++) random_op(round, op);
    ARMCI_AllFence();
    ARMCI_Barrier();
    /* Whole slices, as seen from the origin. */
    for (int t = 0; t < np; t++) {
      mp_set_where("seed %#" PRIx64 " end of round %d: slice of rank %d on rank %d", seed, round, me, t);
      check_remote(t, 0, SLICE, "whole slice after the round");
    }
    ARMCI_Barrier();
  }

  /* Each target gathers every origin's shadow of its memory and compares it
   * with what it holds. */
  for (int o = 0; o < np; o++) {
    mp_set_where("seed %#" PRIx64 " final: slice of rank %d in the memory of rank %d", seed, o, me);
    MP_CHECK_INT(0, ARMCI_Get((char *)shadow[o] + (size_t)me * SLICE, tmp, SLICE, o));
    MP_CHECK_BYTES(tmp, (char *)mem[me] + (size_t)o * SLICE, SLICE, "target memory vs origin's shadow");
  }
  mp_where[0] = 0;
  ARMCI_Barrier();

  MP_CHECK_INT(0, ARMCI_Free_local(regbuf));
  free(heapbuf);
  free(tmp);
  MP_CHECK_INT(0, ARMCI_Free(shadow[me]));
  MP_CHECK_INT(0, ARMCI_Free(mem[me]));
  free(mem);
  free(shadow);
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass("mp_random", me);
  return 0;
}
