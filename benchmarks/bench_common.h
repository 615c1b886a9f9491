/* What every benchmark of benchmarks/ shares. Each one builds against
 * libarmci and, unchanged, against ARMCI-MPI (Debian's -larmci-openmpi), so
 * only calls both provide appear here. Define BENCH_PROGRAM (its name, for
 * messages) before including this. */
#ifndef ARMCI_BENCH_COMMON_H
#define ARMCI_BENCH_COMMON_H

#include <armci.h>
#ifdef ARMCI_MPI
#include <mpi.h>
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(ARMCI_MPI)
#define IMPL_NAME "armci-mpi"
#elif defined(ARMCI_LIBARMCI)
#define IMPL_NAME "libarmci"
#else
#define IMPL_NAME "armci"
#endif

static int me = -1; /* this process's rank, once ARMCI is up */

/* Ends every process of the job (ARMCI_Error), so no peer is left waiting
 * in a barrier for a rank that gave up. */
static inline void die(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s (rank %d): %s\n", BENCH_PROGRAM, me, msg);
  fflush(stderr);
  fflush(stdout);
  ARMCI_Error(msg, 1);
  exit(1);
}

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v in place. The machine is shared and noisy: medians, not means. */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Local loads and stores to ARMCI_Malloc memory: ARMCI-MPI wants an epoch. */
static inline void access_begin(void *p) {
#ifdef ARMCI_MPI
  ARMCI_Access_begin(p);
#else
  (void)p;
#endif
}
static inline void access_end(void *p) {
#ifdef ARMCI_MPI
  ARMCI_Access_end(p);
#else
  (void)p;
#endif
}

/* Where atomics run, by libarmci's rule: CPU atomics when every rank shares
 * this node through shared memory, the network otherwise ("mpi" for ARMCI-MPI). */
static inline const char *atomics_mode(void) {
#ifdef ARMCI_MPI
  return "mpi";
#else
  int all_local = ARMCI_Uses_shm();
  for (int r = 0; r < armci_msg_nproc(); r++) all_local &= ARMCI_Same_node(r);
  return all_local ? "cpu-atomics" : "network";
#endif
}

/* ARMCI-MPI's ARMCI_Init refuses to run before MPI_Init; libarmci needs no MPI. */
static inline void bench_start(int *argc, char ***argv) {
#ifdef ARMCI_MPI
  MPI_Init(argc, argv);
#else
  (void)argc;
  (void)argv;
#endif
  ARMCI_Init();
  me = armci_msg_me();
}

static inline void bench_end(void) {
  ARMCI_Finalize();
#ifdef ARMCI_MPI
  MPI_Finalize();
#endif
}

#endif /* ARMCI_BENCH_COMMON_H */
