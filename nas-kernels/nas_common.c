/*
 * nas_common.c: NPB's random number generator, start-up, report and the
 * communication layer of the NAS kernels (see nas_common.h).
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include "nas_common.h"

#include <mpi.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

nas_run_t nas;
double nas_comm_seconds;

static struct {
  const char *name[NAS_PHASES_MAX];
  double seconds[NAS_PHASES_MAX];
  int count;
} phases;

int nas_phase(const char *name) {
  for (int i = 0; i < phases.count; i++)
    if (strcmp(phases.name[i], name) == 0) return i;
  if (phases.count == NAS_PHASES_MAX) {
    fprintf(stderr, "nas_phase: more than %d phases (adding '%s')\n", NAS_PHASES_MAX, name);
    exit(3);
  }
  phases.name[phases.count] = name;
  return phases.count++;
}

void nas_toc(int phase, double since) { phases.seconds[phase] += nas_wtime() - since; }

void nas_comm_toc(int phase, double since) {
  const double dt = nas_wtime() - since;
  phases.seconds[phase] += dt;
  nas_comm_seconds += dt;
}

void nas_timers_reset(void) {
  for (int i = 0; i < phases.count; i++) phases.seconds[i] = 0.0;
  nas_comm_seconds = 0.0;
}

/* ------------------------------------------------------------ generator */

double randlc(double *x, double a) {
  const double r23 = 1.0 / 8388608.0, r46 = r23 * r23;
  const double t23 = 8388608.0, t46 = t23 * t23;
  /* a = a1 * 2^23 + a2 and x = x1 * 2^23 + x2; the product mod 2^46 is
   * formed from the partial products, each exact in a double. */
  double t1 = r23 * a;
  const double a1 = (double)(long)t1, a2 = a - t23 * a1;
  t1 = r23 * *x;
  const double x1 = (double)(long)t1, x2 = *x - t23 * x1;
  t1 = a1 * x2 + a2 * x1;
  const double t2 = (double)(long)(r23 * t1);
  const double z = t1 - t23 * t2;
  const double t3 = t23 * z + a2 * x2;
  const double t4 = (double)(long)(r46 * t3);
  *x = t3 - t46 * t4;
  return r46 * *x;
}

void vranlc(int n, double *x, double a, double *y) {
  for (int i = 0; i < n; i++) y[i] = randlc(x, a);
}

double randlc_power(double a, long n) {
  double result = 1.0, square = a;
  while (n != 0) {
    if (n & 1) randlc(&result, square);
    randlc(&square, square);
    n /= 2;
  }
  return result;
}

/* ------------------------------------------------------------- start-up */

static void usage(const char *kernel, const char *why) {
  fprintf(stderr, "%s: %s\nusage: mpirun -np N %s --class S|W|A|B --variant mpi|armci|armci-nb [--timers]\n", kernel, why,
          kernel);
  exit(2);
}

/* The ARMCI variants' allgather state. */
static armci_hdl_t *gather_handles;
static struct {
  int pending;  /* armci-nb: peers' parts not yet known to have arrived */
  int sent;     /* armci-nb: this rank's puts not yet waited */
} gather;

void nas_start(int argc, char **argv, const char *kernel, int max_np) {
  nas.cls = 'S';
  nas.variant = NAS_ARMCI_NB;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--class") == 0 && i + 1 < argc) {
      const char *c = argv[++i];
      if (strlen(c) != 1 || !strchr("SWAB", c[0])) usage(kernel, "--class must be S, W, A or B");
      nas.cls = c[0];
    } else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "mpi") == 0) nas.variant = NAS_MPI;
      else if (strcmp(v, "armci") == 0) nas.variant = NAS_ARMCI;
      else if (strcmp(v, "armci-nb") == 0) nas.variant = NAS_ARMCI_NB;
      else usage(kernel, "--variant must be mpi, armci or armci-nb");
    } else if (strcmp(argv[i], "--timers") == 0) {
      nas.timers = 1;
    } else {
      usage(kernel, "unknown argument");
    }
  }
  if (nas.variant == NAS_MPI) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &nas.me);
    MPI_Comm_size(MPI_COMM_WORLD, &nas.np);
  } else {
    ARMCI_Init();
    nas.me = armci_msg_me();
    nas.np = armci_msg_nproc();
  }
  if (nas.np > max_np || (nas.np & (nas.np - 1)) != 0) {
    if (nas.me == 0)
      fprintf(stderr, "%s: the process count must be a power of two up to %d (got %d)\n", kernel, max_np, nas.np);
    nas_finish();
    exit(2);
  }
  if (nas.variant != NAS_MPI) {
    gather_handles = calloc((size_t)nas.np, sizeof *gather_handles);
  }
}

void nas_finish(void) {
  if (nas.variant == NAS_MPI) {
    MPI_Finalize();
    return;
  }
  free(gather_handles);
  ARMCI_Finalize();
}

const char *nas_variant_name(void) {
  return nas.variant == NAS_MPI ? "mpi" : nas.variant == NAS_ARMCI ? "armci" : "armci-nb";
}

double nas_wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void nas_barrier(void) {
  if (nas.variant == NAS_MPI) MPI_Barrier(MPI_COMM_WORLD);
  else ARMCI_Barrier();
}

double *nas_alloc(size_t count, void ***bases) {
  double *p;
  if (nas.variant == NAS_MPI) {
    *bases = NULL;
    p = calloc(count, sizeof(double));
  } else {
    *bases = calloc((size_t)nas.np, sizeof(void *));
    if (*bases == NULL || ARMCI_Malloc(*bases, (armci_size_t)(count * sizeof(double))) != 0) p = NULL;
    else p = (*bases)[nas.me];
    if (p) memset(p, 0, count * sizeof(double));
    ARMCI_Barrier();  /* nobody writes into a copy before its owner zeroed it */
  }
  if (p == NULL) {
    fprintf(stderr, "rank %d: out of memory allocating %zu doubles\n", nas.me, count);
    exit(3);
  }
  return p;
}

void *nas_alloc_streamed(size_t bytes) {
  /* A stream of 4 KiB pages takes a TLB miss every 4 KiB (one per 340
   * entries of CG's matrix); 2 MiB pages take 512 times fewer. madvise fails
   * harmlessly where transparent huge pages are off: the pages stay small. */
  const size_t huge = (size_t)2 << 20;
  const size_t rounded = (bytes + huge - 1) / huge * huge;
  void *p = NULL;
  if (rounded == 0 || posix_memalign(&p, huge, rounded) != 0) p = NULL;
  if (p == NULL) {
    fprintf(stderr, "rank %d: out of memory allocating %zu bytes\n", nas.me, bytes);
    exit(3);
  }
#ifdef MADV_HUGEPAGE
  (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  memset(p, 0, rounded);
  return p;
}

void nas_free(double *p, void **bases) {
  if (nas.variant == NAS_MPI) {
    free(p);
  } else {
    ARMCI_Free(p);
    free(bases);
  }
}

/* ------------------------------------------------------------ reductions */

typedef enum { REDUCE_SUM, REDUCE_MAX } reduce_op_t;

static void combine(double *acc, const double *v, int n, reduce_op_t op) {
  for (int i = 0; i < n; i++) acc[i] = op == REDUCE_SUM ? acc[i] + v[i] : fmax(acc[i], v[i]);
}

/* MPI: recursive doubling with MPI_Sendrecv. Both partners form a+b (or
 * max), which IEEE arithmetic makes bit-identical on both. */
static void reduce_mpi(double *v, int n, reduce_op_t op) {
  double other[NAS_REDUCE_MAX];
  for (int mask = 1; mask < nas.np; mask <<= 1) {
    const int partner = nas.me ^ mask;
    MPI_Sendrecv(v, n, MPI_DOUBLE, partner, 7, other, n, MPI_DOUBLE, partner, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    combine(v, other, n, op);
  }
}

/* ARMCI: the library's own all-reduce, as Global Arrays reduces (GA_Dgop is
 * armci_msg_dgop): one message each way between two ranks, where a put of
 * the values and a notification behind it are two, which costs more between
 * hosts whose every post is work for the kernel. */
static void reduce_armci(double *v, int n, reduce_op_t op) {
  armci_msg_dgop(v, n, op == REDUCE_SUM ? "+" : "max");
}

static void reduce(double *v, int n, reduce_op_t op) {
  if (nas.np == 1) return;
  const double t0 = nas_wtime();
  if (nas.variant == NAS_MPI) reduce_mpi(v, n, op);
  else reduce_armci(v, n, op);
  nas_comm_toc(nas_phase("reduce"), t0);
}

void nas_allreduce_sum(double *v, int n) { reduce(v, n, REDUCE_SUM); }

void nas_allreduce_max(double *v, int n) { reduce(v, n, REDUCE_MAX); }

/* ------------------------------------------------------------- allgather */


static void gather_moving(double *buf, void **bases, const long *offs, const long *lens);

void nas_allgather_start(double *buf, void **bases, const long *offs, const long *lens) {
  if (nas.np == 1) return;
  const double t0 = nas_wtime();
  gather_moving(buf, bases, offs, lens);
  nas_comm_toc(nas_phase("allgather issue"), t0);
}

static void gather_moving(double *buf, void **bases, const long *offs, const long *lens) {
  if (nas.variant == NAS_MPI) {
    /* Recursive doubling: after the step with `mask`, this rank holds the
     * parts of the 2*mask ranks of its aligned group, one contiguous range. */
    for (int mask = 1; mask < nas.np; mask <<= 1) {
      const int mine = nas.me & ~(mask - 1), theirs = mine ^ mask;
      const long my_len = offs[mine + mask - 1] + lens[mine + mask - 1] - offs[mine];
      const long their_len = offs[theirs + mask - 1] + lens[theirs + mask - 1] - offs[theirs];
      MPI_Sendrecv(buf + offs[mine], (int)my_len, MPI_DOUBLE, nas.me ^ mask, 8, buf + offs[theirs], (int)their_len,
                   MPI_DOUBLE, nas.me ^ mask, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return;
  }
  const int bytes = (int)(lens[nas.me] * (long)sizeof(double));
  for (int k = 1; k < nas.np; k++) {
    const int r = (nas.me + k) % nas.np;
    double *there = (double *)bases[r] + offs[nas.me];
    if (nas.variant == NAS_ARMCI) {
      ARMCI_Put(buf + offs[nas.me], there, bytes, r);
      armci_notify(r);
    } else {
      /* The notification follows the put at once: armci_notify orders
       * itself after this rank's puts in flight, so the peer learns of the
       * data one network crossing after it lands, where waiting for the
       * put's completion first adds the acknowledgement's way back. */
      ARMCI_INIT_HANDLE(&gather_handles[r]);
      ARMCI_NbPut(buf + offs[nas.me], there, bytes, r, &gather_handles[r]);
      armci_notify(r);
    }
  }
  if (nas.variant == NAS_ARMCI) {
    for (int k = 1; k < nas.np; k++) armci_notify_wait((nas.me + nas.np - k) % nas.np, NULL);
  } else {
    gather.pending = 1;
  }
}

/* armci-nb: the peers' parts are here once their notifications are. */
void nas_allgather_arrived(void) {
  if (!gather.pending) return;
  gather.pending = 0;
  gather.sent = 1;
  const double t0 = nas_wtime();
  for (int k = 1; k < nas.np; k++) armci_notify_wait((nas.me + nas.np - k) % nas.np, NULL);
  nas_comm_toc(nas_phase("allgather wait"), t0);
}

/* The puts read this rank's part until they complete, which takes the
 * acknowledgement's way back: waited only before the part is rewritten. */
void nas_allgather_release(void) {
  if (!gather.sent) return;
  gather.sent = 0;
  const double t0 = nas_wtime();
  for (int k = 1; k < nas.np; k++) ARMCI_Wait(&gather_handles[(nas.me + k) % nas.np]);
  nas_comm_toc(nas_phase("allgather release"), t0);
}

void nas_allgather_finish(void) {
  nas_allgather_arrived();
  nas_allgather_release();
}

/* ---------------------------------------------------------------- report */

static void line(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf(" %-15s =  ", key);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

/* Every rank names the same phases in the same order (the kernels run the
 * same code), so phase i is the same phase on every rank. */
static void print_phases(double seconds) {
  /* A copy: the reductions below are themselves timed. */
  const int count = phases.count;
  double mine[NAS_PHASES_MAX];
  memcpy(mine, phases.seconds, sizeof mine);
  if (nas.me == 0) printf("\n  Phase timers (seconds in the timed part; %d ranks)\n  %-18s %9s %9s %7s\n", nas.np,
                          "phase", "max", "mean", "% time");
  for (int i = 0; i < count; i++) {
    double mx = mine[i], sum = mine[i];
    nas_allreduce_max(&mx, 1);
    nas_allreduce_sum(&sum, 1);
    if (nas.me == 0)
      printf("  %-18s %9.3f %9.3f %6.1f%%\n", phases.name[i], mx, sum / nas.np,
             seconds > 0 ? 100.0 * mx / seconds : 0.0);
  }
  if (nas.me == 0) fflush(stdout);
}

int nas_report(const char *name, const char *size, int iterations, double seconds, double mops_total,
               int verified, double comm_seconds) {
  nas_allreduce_max(&comm_seconds, 1);
  if (nas.me == 0) {
    printf("\n\n %s Benchmark Completed.\n", name);
    line("Class", "%c", nas.cls);
    line("Size", "%s", size);
    line("Iterations", "%d", iterations);
    line("Time in seconds", "%.4f", seconds);
    line("Total processes", "%d", nas.np);
    line("Mop/s total", "%.2f", mops_total);
    line("Mop/s/process", "%.2f", mops_total / nas.np);
    line("Operation type", "%s", "floating point");
    line("Variant", "%s", nas_variant_name());
    line("Comm seconds", "%.4f (largest over the ranks: time in exchanges, reductions, waits)", comm_seconds);
    line("Verification", "%s", verified ? "SUCCESSFUL" : "UNSUCCESSFUL");
    fflush(stdout);
  }
  if (nas.timers) print_phases(seconds);
  return verified ? 0 : 1;
}
