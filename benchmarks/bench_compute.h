/* What the overlap benchmarks of benchmarks/ share on top of the harness
 * (include harness.h first): the calibrated compute kernel of
 * bench_kernel.h, and a library-free wait for a
 * flag that another rank stores with ARMCI_Put. Builds against libarmci and
 * ARMCI-MPI alike. */
#ifndef ARMCI_BENCH_COMPUTE_H
#define ARMCI_BENCH_COMPUTE_H

#ifndef ARMCI_BENCH_HARNESS_H
#error "include harness.h before bench_compute.h"
#endif

#include "bench_kernel.h"

/* ------------------------------------------------------- flag, no library */

/* A word in the ARMCI_Malloc memory of the waiting rank. Another rank stores
 * a sequence number into it with ARMCI_Put (+ ARMCI_Fence); the waiting rank
 * reads it with plain volatile loads: no library call, so whatever moves the
 * data must do so without this rank's help. (ARMCI-MPI asks for an access
 * epoch around local loads; taking one would be a library call, so the loads
 * go without, which Open MPI's unified memory model allows in practice.) */
struct spin_result {
  long units;     /* kernel units run while waiting */
  double seconds; /* time spent waiting */
  int timed_out;
};

/* Runs kernel chunks of `chunk` units (0: just spin) until *flag == want or
 * `timeout` seconds have passed. */
static inline struct spin_result spin_until_flag(volatile long *flag, long want, long chunk,
                                                 double timeout) {
  struct spin_result r = {0, 0, 0};
  const double t0 = now();
  unsigned long polls = 0;
  while (*flag != want) {
    if (chunk > 0) {
      kernel_run(chunk);
      r.units += chunk;
    } else {
      __asm__ __volatile__("" ::: "memory");
    }
    /* The clock (vDSO, not the library) every so often for the deadline. */
    if ((++polls & (chunk > 0 ? 15 : 4095)) == 0 && now() - t0 > timeout) {
      r.timed_out = 1;
      break;
    }
  }
  r.seconds = now() - t0;
  return r;
}

/* Stores `value` into the flag word at `remote` on `proc` and makes it
 * visible there. */
static inline void set_remote_flag(long value, void *remote, int proc) {
  long v = value;
  if (ARMCI_Put(&v, remote, (int)sizeof v, proc) != 0)
    die("ARMCI_Put of the flag to rank %d failed", proc);
  ARMCI_Fence(proc);
}

#endif /* ARMCI_BENCH_COMPUTE_H */
