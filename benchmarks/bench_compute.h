/* What the overlap benchmarks of benchmarks/ share on top of bench_common.h
 * (include that first): a calibrated compute kernel that touches only local
 * data and never calls the library, a library-free wait for a flag that
 * another rank stores with ARMCI_Put, size lists, and a line that records
 * the library's settings from the environment. Builds against libarmci and
 * ARMCI-MPI alike. */
#ifndef ARMCI_BENCH_COMPUTE_H
#define ARMCI_BENCH_COMPUTE_H

#ifndef ARMCI_BENCH_COMMON_H
#error "include bench_common.h before bench_compute.h"
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

/* ---------------------------------------------------------------- data */

/* A per-phase byte pattern, so that data left over from an earlier phase (an
 * operation that silently did nothing) cannot pass a check. */
static inline unsigned char pattern_byte(size_t i, unsigned seed) {
  uint32_t x = (uint32_t)i * 2654435761u ^ (seed * 0x9E3779B9u + 0x7F4A7C15u);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (unsigned char)x;
}

/* The pattern, or (inverted) bytes that differ from it everywhere. */
static inline void fill_pattern(unsigned char *p, size_t n, unsigned seed, int inverted) {
  const unsigned char mask = inverted ? 0xFF : 0x00;
  for (size_t i = 0; i < n; i++)
    p[i] = pattern_byte(i, seed) ^ mask;
}

/* The first byte that is not the pattern, or -1. */
static inline long find_pattern_mismatch(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern_byte(i, seed))
      return (long)i;
  return -1;
}

/* CPU time of the calling thread alone (cpu_now() counts every thread of
 * the process, a library's helper threads included). */
static inline double thread_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The 1-minute load average, or -1 where /proc is not there. */
static inline double load_average(void) {
  double v = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &v) != 1)
      v = -1;
    fclose(f);
  }
  return v;
}

/* ---------------------------------------------------------------- options */

/* "64", "64K", "4M", "4MiB"; -1 when malformed. */
static inline long parse_bytes(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || v < 0)
    return -1;
  if (*end == 'k' || *end == 'K')
    v <<= 10, end++;
  else if (*end == 'm' || *end == 'M')
    v <<= 20, end++;
  if (*end == 'i')
    end++;
  if (*end == 'B' || *end == 'b')
    end++;
  return *end ? -1 : v;
}

/* A comma list of sizes into out[max]; returns how many, -1 when malformed. */
static inline int parse_size_list(const char *s, long *out, int max, long lo, long hi) {
  int n = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    long v = parse_bytes(tok);
    if (v < lo || v > hi || n == max)
      return -1;
    out[n++] = v;
  }
  return n;
}

/* ------------------------------------------------------------ environment */

/* The library settings in the environment that these benchmarks are run
 * under, for the header line (unset ones are left out). */
static inline void print_settings(FILE *f) {
  static const char *names[] = {"ARMCI_SHM",      "ARMCI_NETWORK",         "ARMCI_HELPER",
                                "ARMCI_PROTOCOL", "ARMCI_PROGRESS_THREAD", "ARMCI_VNODE_SIZE",
                                "UCX_TLS"};
  fprintf(f, "# settings:");
  int any = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    if (v) {
      fprintf(f, " %s=%s", names[i], v);
      any = 1;
    }
  }
  fprintf(f, "%s\n", any ? "" : " (library defaults)");
}

/* Where same-node transfers go for libarmci: "shm" or "network". */
static inline const char *transfer_path(void) {
#ifdef ARMCI_MPI
  return "mpi";
#else
  return ARMCI_Uses_shm() && ARMCI_Same_node(1 % armci_msg_nproc()) ? "shm" : "network";
#endif
}

#endif /* ARMCI_BENCH_COMPUTE_H */
