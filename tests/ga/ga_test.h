/* ga_test.h: what the C programs that run Debian's Global Arrays on this
 * library share: a check that names the program, the rank and the place,
 * the start (MPI, GA, MA) and the end that prints PASS like the tests in
 * tests/mp. Header-only, for programs of one C file. */
#ifndef GA_TEST_H_
#define GA_TEST_H_

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ga.h"
#include "macdecls.h"

static const char *ga_name = "?";
static int ga_me = -1, ga_np = 0;

static void ga_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* MPI_Abort, not GA_Error: it ends the job even if the library under test
 * is what broke. */
static void ga_fail(const char *file, int line, const char *expr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL %s rank %d %s:%d: %s: ", ga_name, ga_me, file, line, expr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  abort();
}

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (!(cond)) ga_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);    \
  } while (0)

/* MPI, then GA with ma_words doubles of MA stack and heap. */
static inline void ga_start(int *argc, char ***argv, const char *name, long ma_words) {
  ga_name = name;
  MPI_Init(argc, argv);
  GA_Initialize();
  CHECK(MA_init(C_DBL, ma_words, ma_words), "MA_init of %ld words", ma_words);
  ga_me = GA_Nodeid();
  ga_np = GA_Nnodes();
}

/* PASS after MPI_Finalize, so that a crash or hang at shutdown is a failure. */
static inline int ga_pass(void) {
  GA_Terminate();
  MPI_Finalize();
  printf("PASS %s rank %d\n", ga_name, ga_me);
  return 0;
}

#endif /* GA_TEST_H_ */
