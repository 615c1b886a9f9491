/*
 * mp_common.h: checks, a deterministic RNG and data patterns shared by the
 * multi-process tests. Header-only so that every test stays one C file.
 */
#ifndef MP_COMMON_H_
#define MP_COMMON_H_

/* clock_gettime under -std=c11; include this header before any other. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <armci.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* -1 until mp_init: a failure before ARMCI_Init cannot name the rank. */
static int mp_me = -1;
static int mp_np = 0;
/* Set by a test to say where in a long loop it was when a check failed. */
static char mp_where[256];

static inline void mp_set_where(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void mp_set_where(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mp_where, sizeof mp_where, fmt, ap);
  va_end(ap);
}

static void mp_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

static void mp_fail(const char *file, int line, const char *expr, const char *fmt, ...) {
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL rank %d %s:%d: check `%s' failed: %s%s%s\n", mp_me, file, line, expr,
          detail, mp_where[0] ? " | at: " : "", mp_where);
  fflush(stderr);
  fflush(stdout);
  /* ARMCI_Error ends the whole job, so the other ranks do not hang in a
   * barrier waiting for this one. */
  if (ARMCI_Initialized()) ARMCI_Error("multi-process test check failed", line);
  exit(1);
}

#define MP_CHECK(cond, ...)                                      \
  do {                                                           \
    if (!(cond)) mp_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

#define MP_CHECK_INT(expected, actual)                                                        \
  do {                                                                                        \
    long long mp_e_ = (long long)(expected), mp_a_ = (long long)(actual);                     \
    if (mp_e_ != mp_a_)                                                                       \
      mp_fail(__FILE__, __LINE__, #actual " == " #expected, "expected %lld, actual %lld",     \
              mp_e_, mp_a_);                                                                  \
  } while (0)

/* Exact: the tests use values whose arithmetic is exact in binary floating
 * point, so any difference is a wrong result, not rounding. */
#define MP_CHECK_DBL(expected, actual)                                                        \
  do {                                                                                        \
    double mp_e_ = (double)(expected), mp_a_ = (double)(actual);                              \
    if (!(mp_e_ == mp_a_))                                                                    \
      mp_fail(__FILE__, __LINE__, #actual " == " #expected, "expected %.17g, actual %.17g",   \
              mp_e_, mp_a_);                                                                  \
  } while (0)

#define MP_CHECK_PTR(expected, actual)                                                        \
  do {                                                                                        \
    const void *mp_e_ = (const void *)(expected), *mp_a_ = (const void *)(actual);           \
    if (mp_e_ != mp_a_)                                                                       \
      mp_fail(__FILE__, __LINE__, #actual " == " #expected, "expected %p, actual %p", mp_e_, \
              mp_a_);                                                                         \
  } while (0)

/* Compares n bytes and reports the first difference and how many differ, which
 * tells a shifted copy from a truncated or a missing one. */
#define MP_CHECK_BYTES(expected, actual, n, what)                                          \
  do {                                                                                     \
    const unsigned char *mp_e_ = (const unsigned char *)(expected);                        \
    const unsigned char *mp_a_ = (const unsigned char *)(actual);                          \
    size_t mp_n_ = (size_t)(n);                                                            \
    if (memcmp(mp_e_, mp_a_, mp_n_) != 0) {                                                \
      size_t mp_first_ = 0, mp_bad_ = 0;                                                   \
      while (mp_e_[mp_first_] == mp_a_[mp_first_]) mp_first_++;                            \
      for (size_t mp_i_ = mp_first_; mp_i_ < mp_n_; mp_i_++) mp_bad_ += mp_e_[mp_i_] != mp_a_[mp_i_]; \
      mp_fail(__FILE__, __LINE__, what,                                                    \
              "%zu of %zu bytes differ, first at byte %zu: expected 0x%02x, actual 0x%02x", \
              mp_bad_, mp_n_, mp_first_, mp_e_[mp_first_], mp_a_[mp_first_]);              \
    }                                                                                      \
  } while (0)

static inline void mp_init(int *argc, char ***argv) {
  MP_CHECK_INT(0, ARMCI_Init_args(argc, argv));
  mp_me = armci_msg_me();
  mp_np = armci_msg_nproc();
  MP_CHECK(mp_np >= 1 && mp_me >= 0 && mp_me < mp_np, "me %d nproc %d", mp_me, mp_np);
}

/* Printed after ARMCI_Finalize, so a crash or hang at shutdown is a failure. */
static inline void mp_pass(const char *name, int me) {
  printf("PASS %s rank %d\n", name, me);
  fflush(stdout);
}

/* Ends a test that got through: ARMCI_Finalize must succeed, and PASS comes
 * after it. */
static inline int mp_finish(const char *name) {
  MP_CHECK_INT(0, ARMCI_Finalize());
  mp_pass(name, mp_me);
  return 0;
}

/* One case of a test: a function that checks on every rank. */
typedef void (*mp_case_t)(void);

/* main() of a test made of cases run in order; the barrier keeps a rank from
 * finalizing while another still works on the last case. */
static inline int mp_run_cases(int argc, char **argv, const char *name, const mp_case_t *cases, size_t n) {
  mp_init(&argc, &argv);
  for (size_t i = 0; i < n; i++) {
    mp_where[0] = 0; /* a case that fails early must not show the last one's place */
    cases[i]();
  }
  mp_set_where("%s", "the barrier and ARMCI_Finalize after the last case");
  ARMCI_Barrier();
  return mp_finish(name);
}
#define MP_RUN_CASES(argc, argv, name, ...)                                              \
  mp_run_cases(argc, argv, name, (const mp_case_t[]){__VA_ARGS__},                       \
               sizeof((const mp_case_t[]){__VA_ARGS__}) / sizeof(mp_case_t))

/* Every rank's part of a collective allocation of bytes each, this rank's
 * zeroed (no barrier: the caller fills it first or adds one). */
static inline void **mp_alloc_all(size_t bytes) {
  void **base = (void **)malloc(sizeof(void *) * (size_t)mp_np);
  MP_CHECK(base != NULL, "malloc of %d pointers failed", mp_np);
  MP_CHECK_INT(0, ARMCI_Malloc(base, (armci_size_t)bytes));
  if (bytes) memset(base[mp_me], 0, bytes);
  return base;
}

static inline void mp_free_all(void **base) {
  MP_CHECK_INT(0, ARMCI_Free(base[mp_me]));
  free(base);
}

/* One origin's slot for the four single-value puts, with padding that must
 * stay zero. */
struct mp_value_slot {
  int i;
  int pad0;
  long l;
  float f;
  float pad1;
  double d;
};

static inline double mp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ RNG */

/* splitmix64: tiny, fast and identical on every platform, so a failing
 * sequence can be replayed from the seed printed with the failure. */
typedef struct {
  uint64_t s;
} mp_rng_t;

static inline uint64_t mp_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline uint64_t mp_seed(void) {
  const char *s = getenv("MP_SEED");
  return s ? strtoull(s, NULL, 0) : 0x5EEDF00Dull;
}

static inline void mp_rng_init(mp_rng_t *r, uint64_t seed, int rank, int stream) {
  r->s = mp_mix64(seed ^ mp_mix64(((uint64_t)(unsigned)rank << 32) | (unsigned)stream));
}

static inline uint64_t mp_rng_next(mp_rng_t *r) {
  r->s += 0x9E3779B97F4A7C15ull;
  return mp_mix64(r->s);
}

/* Uniform enough for test sizes: n is far below 2^64. */
static inline uint64_t mp_rng_below(mp_rng_t *r, uint64_t n) { return n ? mp_rng_next(r) % n : 0; }

static inline long mp_rng_range(mp_rng_t *r, long lo, long hi) {
  return lo + (long)mp_rng_below(r, (uint64_t)(hi - lo + 1));
}

/* ------------------------------------------------------------- patterns */

/* A byte that depends on who wrote it, where it went and the offset, so a
 * misdirected, shifted or stale copy does not look right by accident. */
static inline unsigned char mp_pattern(int origin, int target, size_t offset) {
  uint64_t x = ((uint64_t)(unsigned)origin << 48) ^ ((uint64_t)(unsigned)target << 40) ^ offset;
  return (unsigned char)(mp_mix64(x) >> 24);
}

static inline void mp_fill_pattern(void *buf, size_t n, int origin, int target, size_t offset) {
  unsigned char *p = (unsigned char *)buf;
  for (size_t i = 0; i < n; i++) p[i] = mp_pattern(origin, target, offset + i);
}

/* The environment value as an int, or dflt when unset or empty. */
static inline int mp_env_int(const char *name, int dflt) {
  const char *s = getenv(name);
  return (s && *s) ? atoi(s) : dflt;
}

#endif /* MP_COMMON_H_ */
