/*
 * Windows with MPI-2 one-sided semantics on libarmci's core.
 *
 * A window is a collective object over a group (NULL: the world): each
 * member exposes `bytes` of memory; `rank` in every call is a rank in the
 * window's group and `disp` counts the target's `disp_unit`s.
 *
 * Synchronisation, as in MPI-2/3:
 *  - passive target: ARMCI_Win_lock/unlock (one target, shared or exclusive),
 *    lock_all/unlock_all (shared at every member), flush/flush_all;
 *  - active target: ARMCI_Win_fence (collective over the group), and
 *    post/start/complete/wait/test with groups.
 * Operations (put, get, acc and their strided forms) are legal only inside
 * an access epoch to their target and are complete (at origin and target)
 * when the epoch ends or on flush. Put/get buffers must not be touched
 * until then.
 *
 * Memory: ARMCI_Win_allocate allocates it (collective); ARMCI_Win_create
 * takes memory this rank got from ARMCI_Malloc or ARMCI_Malloc_group (or
 * bytes = 0), since every network reaches only registered memory.
 *
 * Errors: a bad argument, an operation outside an epoch, unlock without
 * lock, a rank outside the group, a range past the target's window or
 * mismatched epochs end the job with a message naming call, argument and
 * rank, as every ARMCI call does. Calls return 0.
 */
#ifndef ARMCI_WIN_H_
#define ARMCI_WIN_H_

#include <stddef.h>

#include "armci.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct armci_win_s *ARMCI_Win;

enum ARMCI_Win_lock_e { ARMCI_WIN_LOCK_SHARED = 1, ARMCI_WIN_LOCK_EXCLUSIVE = 2 };

/* Asserts (bit flags, combined with |; 0: none). */
enum ARMCI_Win_mode_e {
  ARMCI_WIN_MODE_NOCHECK = 1,   /* lock: no conflicting lock exists; start: the posts happened */
  ARMCI_WIN_MODE_NOSTORE = 2,   /* no local stores since the last synchronisation */
  ARMCI_WIN_MODE_NOPUT = 4,     /* no remote writes until the next synchronisation */
  ARMCI_WIN_MODE_NOPRECEDE = 8, /* fence: no operation of this rank precedes it */
  ARMCI_WIN_MODE_NOSUCCEED = 16 /* fence: no operation follows it (closes the epoch) */
};

/* Accumulate operations, for the types where MPI defines them: SUM, PROD
 * and REPLACE for every ARMCI_ACC_* type, MAX and MIN for the real ones,
 * BAND, BOR and BXOR for ARMCI_ACC_INT and ARMCI_ACC_LNG. Accumulates to
 * the same location are atomic per element with respect to each other. */
enum ARMCI_Win_op_e {
  ARMCI_WIN_SUM,
  ARMCI_WIN_PROD,
  ARMCI_WIN_MAX,
  ARMCI_WIN_MIN,
  ARMCI_WIN_BAND,
  ARMCI_WIN_BOR,
  ARMCI_WIN_BXOR,
  ARMCI_WIN_REPLACE
};

int ARMCI_Win_allocate(size_t bytes, int disp_unit, ARMCI_Group *group, void **base, ARMCI_Win *win);
int ARMCI_Win_create(void *base, size_t bytes, int disp_unit, ARMCI_Group *group, ARMCI_Win *win);
int ARMCI_Win_free(ARMCI_Win *win);

int ARMCI_Win_lock(int lock_type, int rank, int assert, ARMCI_Win win);
int ARMCI_Win_unlock(int rank, ARMCI_Win win);
int ARMCI_Win_lock_all(int assert, ARMCI_Win win);
int ARMCI_Win_unlock_all(ARMCI_Win win);
int ARMCI_Win_flush(int rank, ARMCI_Win win);
int ARMCI_Win_flush_all(ARMCI_Win win);

int ARMCI_Win_fence(int assert, ARMCI_Win win);
int ARMCI_Win_post(ARMCI_Group *group, int assert, ARMCI_Win win);
int ARMCI_Win_start(ARMCI_Group *group, int assert, ARMCI_Win win);
int ARMCI_Win_complete(ARMCI_Win win);
int ARMCI_Win_wait(ARMCI_Win win);
int ARMCI_Win_test(ARMCI_Win win, int *flag);

int ARMCI_Win_put(const void *src, size_t bytes, int rank, size_t disp, ARMCI_Win win);
int ARMCI_Win_get(void *dst, size_t bytes, int rank, size_t disp, ARMCI_Win win);
/* type: ARMCI_ACC_INT ... ARMCI_ACC_DCP; bytes: whole elements. */
int ARMCI_Win_acc(int type, int op, const void *src, size_t bytes, int rank, size_t disp, ARMCI_Win win);

/* Strided forms: the remote side starts at disp (in disp_units) and follows
 * dst_stride_ar (put, acc) or src_stride_ar (get) in bytes, as ARMCI_PutS. */
int ARMCI_Win_puts(void *src_ptr, int src_stride_ar[], int dst_stride_ar[], int count[], int stride_levels,
                   int rank, size_t disp, ARMCI_Win win);
int ARMCI_Win_gets(void *dst_ptr, int dst_stride_ar[], int src_stride_ar[], int count[], int stride_levels,
                   int rank, size_t disp, ARMCI_Win win);
int ARMCI_Win_accs(int type, int op, void *src_ptr, int src_stride_ar[], int dst_stride_ar[], int count[],
                   int stride_levels, int rank, size_t disp, ARMCI_Win win);

/* This rank's lock acquisitions on the window so far (extension): counts[0]
 * taken with CPU atomics on a node neighbour's (or its own) mapping,
 * counts[1] with network atomics, counts[2] migrations of a lock from
 * network to CPU mode and counts[3] from CPU to network mode that this rank
 * made to take a lock (ARMCI_WIN_LOCK_MIGRATE). Returns 0. */
int ARMCIX_Win_lock_counters(ARMCI_Win win, long counts[4]);

#ifdef __cplusplus
}
#endif

#endif /* ARMCI_WIN_H_ */
