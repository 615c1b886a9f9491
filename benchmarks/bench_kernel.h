/* The calibrated compute kernel of the overlap benchmarks: it touches only
 * local data and never calls a library. Its own header so that programs
 * without the library (overlap_floor) run the same instructions as
 * overlap_bench. Include after a definition of `static double now(void)`
 * (seconds, monotonic): harness.h has one. */
#ifndef ARMCI_BENCH_KERNEL_H
#define ARMCI_BENCH_KERNEL_H

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

#endif /* ARMCI_BENCH_KERNEL_H */
