/* What the overlap benchmarks of benchmarks/ share on top of the harness
 * (include harness.h first): a calibrated compute kernel that touches only
 * local data and never calls the library, and a library-free wait for a
 * flag that another rank stores with ARMCI_Put. Builds against libarmci and
 * ARMCI-MPI alike. */
#ifndef ARMCI_BENCH_COMPUTE_H
#define ARMCI_BENCH_COMPUTE_H

#ifndef ARMCI_BENCH_HARNESS_H
#error "include harness.h before bench_compute.h"
#endif

/* ---------------------------------------------------------------- kernel */

/* One kernel unit: KERNEL_N multiply-adds on an L1-resident array of doubles
 * (2 * KERNEL_N flops, about 10 ns). The array is global and
 * read back by kernel_checksum(), so the compiler cannot drop the work. */
#define KERNEL_N 64
static double kernel_data[KERNEL_N];

static inline void kernel_init(void) {
  for (int i = 0; i < KERNEL_N; i++)
    kernel_data[i] = 1.0 + 1e-3 * i;
}

/* Runs `units` kernel units. The factors keep the values bounded (the
 * iteration converges to b / (1 - a) = 1), so no denormals or infinities
 * change the speed over a long run. Never inlined: one copy of the machine
 * code, with one alignment, serves every caller, so a loop that times the
 * kernel alone and one that times it next to communication run the same
 * instructions. */
__attribute__((noinline, aligned(64))) static void kernel_run(long units) {
  const double a = 0.999, b = 0.001;
  for (long u = 0; u < units; u++)
    for (int i = 0; i < KERNEL_N; i++)
      kernel_data[i] = kernel_data[i] * a + b;
  __asm__ __volatile__("" ::: "memory");
}

static inline double kernel_checksum(void) {
  double s = 0;
  for (int i = 0; i < KERNEL_N; i++)
    s += kernel_data[i];
  return s;
}

static inline double kernel_flops(long units) { return 2.0 * KERNEL_N * (double)units; }

/* Kernel units per microsecond on this core now: the fastest of a few
 * timed runs of about `seconds` each (a preempted run only looks slower). */
static inline double kernel_units_per_us(double seconds) {
  long units = 64;
  double t;
  for (;;) {
    double t0 = now();
    kernel_run(units);
    t = now() - t0;
    if (t >= seconds / 4 || units > (1L << 40))
      break;
    units *= 2;
  }
  units = (long)((double)units * seconds / (t > 0 ? t : 1e-9)) + 1;
  double best = 0;
  for (int k = 0; k < 3; k++) {
    double t0 = now();
    kernel_run(units);
    double rate = (double)units / ((now() - t0) * 1e6);
    if (rate > best)
      best = rate;
  }
  return best;
}

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
