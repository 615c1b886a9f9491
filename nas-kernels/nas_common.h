/*
 * nas_common.h: what the NAS kernels (mg.c, cg.c) share: NPB's random number
 * generator, the command line, the report, and the communication layer that
 * is the only thing the three variants change.
 *
 * Variants: NAS_MPI (MPI point-to-point; ARMCI not started), NAS_ARMCI
 * (blocking ARMCI puts, each message followed by armci_notify; MPI not
 * started) and NAS_ARMCI_NB (nonblocking puts issued before the computation
 * that does not need them, completed when the data is needed).
 */
#ifndef NAS_COMMON_H_
#define NAS_COMMON_H_

#include <stddef.h>

#include <armci.h>

typedef enum { NAS_MPI, NAS_ARMCI, NAS_ARMCI_NB } nas_variant_t;

typedef struct {
  char cls;              /* S, W, A or B */
  nas_variant_t variant;
  int me, np;
  int timers;            /* --timers: print the per-phase timers */
} nas_run_t;

extern nas_run_t nas;

/* Seconds this rank spent inside the communication calls (moving data and
 * waiting for it): what the report's "Comm seconds" line sums. */
extern double nas_comm_seconds;

/* Per-phase timers (NPB's timers): seconds per named phase of the timed
 * part, printed after the report (largest and mean over the ranks) when the
 * run was given --timers. nas_phase names a phase (the same name gives the
 * same phase); nas_toc adds the time since `since` (a nas_wtime()) to it,
 * nas_comm_toc also to nas_comm_seconds. */
#define NAS_PHASES_MAX 16
int nas_phase(const char *name);
void nas_toc(int phase, double since);
void nas_comm_toc(int phase, double since);
/* Zeroes the phases and nas_comm_seconds: call where the timed part starts. */
void nas_timers_reset(void);

/* NPB's linear congruential generator x_{k+1} = a x_k mod 2^46 (46-bit
 * arithmetic in doubles): returns x_{k+1} / 2^46 and updates *x. */
double randlc(double *x, double a);
/* n successive values of randlc into y. */
void vranlc(int n, double *x, double a, double *y);
/* a^n mod 2^46, for jumping ahead in the sequence. */
double randlc_power(double a, long n);

/* Parses --class, --variant and --timers (exits with a usage message on anything
 * else), starts MPI or ARMCI, and checks that the process count is a power
 * of two no larger than max_np. */
void nas_start(int argc, char **argv, const char *kernel, int max_np);
void nas_finish(void);
const char *nas_variant_name(void);
double nas_wtime(void);
void nas_barrier(void);

/* Memory other ranks write into: ARMCI_Malloc'd in the ARMCI variants
 * (bases[r] is rank r's copy), plain calloc for MPI (bases NULL). Zeroed. */
double *nas_alloc(size_t count, void ***bases);
void nas_free(double *p, void **bases);

/* Zeroed private memory for a large array that the computation streams
 * through on every iteration (CG's matrix), on 2 MiB pages where the
 * system's transparent huge pages allow (madvise or always). free() it. */
void *nas_alloc_streamed(size_t bytes);

/* Sum / max of v[0..n-1] over every rank (n <= NAS_REDUCE_MAX); every rank
 * gets the bit-identical result. */
#define NAS_REDUCE_MAX 4
void nas_allreduce_sum(double *v, int n);
void nas_allreduce_max(double *v, int n);

/* Allgather in place: rank r's part is doubles [offs[r], offs[r]+lens[r]) of
 * buf (parts contiguous in rank order); afterwards every rank's buf holds
 * every part. bases: as returned by nas_alloc for buf (ARMCI variants).
 * _start moves the data (all of it for NAS_MPI and NAS_ARMCI; for
 * NAS_ARMCI_NB it only issues the puts); _finish returns once every part is
 * in place here and this rank's buffer may be written again. */
void nas_allgather_start(double *buf, void **bases, const long *offs, const long *lens);
void nas_allgather_finish(void);
/* _finish in two: _arrived returns once every part is here, _release once
 * this rank's part may be written again (call it before writing it). */
void nas_allgather_arrived(void);
void nas_allgather_release(void);

/* The NPB report lines, plus the variant and the communication time (the
 * largest over the ranks, of the timed part: call with comm_seconds measured
 * over it); returns the exit status (0 when verified). Collective. */
int nas_report(const char *name, const char *size, int iterations, double seconds, double mops_total,
               int verified, double comm_seconds);

#endif /* NAS_COMMON_H_ */
