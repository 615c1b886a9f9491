/*
 * armci.h: the C interface of libarmci, an ARMCI 1.x one-sided communication
 * library over node-shared memory, UCX and InfiniBand verbs.
 *
 * Binary compatibility: armci_hdl_t, armci_giov_t and armci_size_t have the
 * size and layout of the ARMCI-MPI 0.3 header, so code compiled against that
 * header links against this library. This header does not need <mpi.h>.
 *
 * Semantics (ARMCI's):
 *  - a blocking Put/Acc returns when the source buffer may be reused; a
 *    blocking Get returns when the data has arrived;
 *  - ARMCI_Wait/ARMCI_Test give local completion of a nonblocking operation;
 *  - ARMCI_Fence(proc) gives remote completion of everything this process
 *    issued to proc; ARMCI_AllFence does so for every process;
 *  - blocking operations from one origin to one target location are seen in
 *    the order they were issued;
 *  - Acc is atomic per element with respect to other Acc operations.
 *
 * Errors: a call given bad arguments (an address outside every ARMCI_Malloc
 * region of the target, a negative size, a rank out of range, a NULL pointer,
 * an uninitialised library) prints a message naming the call, the argument
 * and the rank, and ends the job through ARMCI_Error. Nothing is written.
 */
#ifndef ARMCI_H_
#define ARMCI_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARMCI_LIBARMCI 1

/* Data types of ARMCI_Acc (the values of ARMCI and ARMCI-MPI 0.3.1). The
 * short names ARMCI_INT, ARMCI_LONG, ARMCI_FLOAT, ARMCI_DOUBLE are NOT Acc
 * types: as in ARMCI-MPI they are the armci_msg data types of <message.h>
 * (ARMCI_FLOAT is 3 there, ARMCI_ACC_FLT is 2). */
enum ARMCI_Acc_e { ARMCI_ACC_INT, ARMCI_ACC_LNG, ARMCI_ACC_FLT, ARMCI_ACC_DBL, ARMCI_ACC_CPL, ARMCI_ACC_DCP };

/* MPI_Comm when <mpi.h> came before this header, else a pointer-sized
 * stand-in: the library itself needs no MPI, and Open MPI's handles are
 * pointers, so both spellings have one layout. */
#if defined(MPI_VERSION)
typedef MPI_Comm armci_mpi_comm_t;
#else
typedef void *armci_mpi_comm_t;
#endif

typedef long armci_size_t;

/* A nonblocking handle: 8 bytes, as in ARMCI-MPI. The fields are private.
 * `request` is an index into the library's request table (-1: none) and
 * `tag` holds the request's generation and a marker that tells an initialised
 * handle from stack garbage. Initialise every handle with ARMCI_INIT_HANDLE
 * before its first use. Defined behaviour:
 *  - waiting on (or testing) a handle whose operations completed, or one that
 *    was initialised and never used, returns at once with 0;
 *  - waiting twice on one handle returns at once the second time;
 *  - reusing a handle for a new operation before waiting on it is allowed:
 *    the earlier operation is completed first;
 *  - a handle that was never initialised is an error that names the call. */
typedef struct armci_hdl_s {
  int request;
  int tag;
} armci_hdl_t;

/* One vector segment list, as in ARMCI. */
typedef struct {
  void **src_ptr_array;
  void **dst_ptr_array;
  int bytes;
  int ptr_array_len;
} armci_giov_t;

/* Start-up and shutdown. Collective. MPI_Init may come before or after. */
int ARMCI_Init(void);
int ARMCI_Init_args(int *argc, char ***argv);
/* ARMCI over comm's members alone (MPI running, Open MPI): ARMCI rank =
 * rank in comm, ARMCI_GROUP_WORLD = comm's members in its order (its
 * `comm` a duplicate of comm). Collective over comm; processes outside it
 * never call ARMCI. */
int ARMCI_Init_mpi_comm(armci_mpi_comm_t comm);
int ARMCI_Initialized(void);
/* Thread levels are those of MPI; every level is served (the library takes
 * its own locks), and the level reached is returned. */
int ARMCI_Init_thread(int armci_requested);
/* Finalize twice, or without Init, does nothing. */
int ARMCI_Finalize(void);
/* Releases node-shared segments; safe to call at any time, also from a
 * signal or error path. */
void ARMCI_Cleanup(void);
/* Prints "ARMCI error (rank R): msg (code)" and ends the whole job. */
void ARMCI_Error(const char *msg, int code);

/* Collective allocation: base_ptrs[i] receives rank i's base address (NULL
 * for a rank that asked for 0 bytes). ARMCI_Free is collective too; a rank
 * whose part was empty passes NULL, and when every rank passes NULL (all
 * asked for 0 bytes) nothing happens. */
int ARMCI_Malloc(void **base_ptrs, armci_size_t bytes);
int ARMCI_Free(void *ptr);
/* As ARMCI_Malloc/ARMCI_Free; the device name is accepted and ignored
 * (every part is host memory). */
int ARMCI_Malloc_memdev(void **base_ptrs, armci_size_t bytes, const char *device);
int ARMCI_Free_memdev(void *ptr);
/* Accepted for ARMCI-MPI compatibility; segments are sized by allocation. */
void ARMCI_Set_shm_limit(unsigned long shmemlimit);
/* Direct load/store access to this rank's own part between begin and end
 * (a no-op here: own parts are always coherent with ARMCI operations that
 * completed). */
void ARMCI_Access_begin(void *ptr);
void ARMCI_Access_end(void *ptr);
/* Local copy of size bytes (memcpy with ARMCI's argument order). */
void ARMCI_Copy(void *src, void *dst, int size);
/* Local memory that is registered for fast transfers. */
void *ARMCI_Malloc_local(armci_size_t bytes);
int ARMCI_Free_local(void *ptr);

/* Contiguous transfers. For Put and Acc, dst is remote; for Get, src is. */
int ARMCI_Put(void *src, void *dst, int bytes, int proc);
int ARMCI_Get(void *src, void *dst, int bytes, int proc);
/* dst[i] += scale * src[i] for the data type; scale points to one element of
 * that type (for complex types, to a complex value). */
int ARMCI_Acc(int datatype, void *scale, void *src, void *dst, int bytes, int proc);

void ARMCI_INIT_HANDLE(armci_hdl_t *handle);
void ARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t *handle);
void ARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t *handle);

/* Nonblocking forms. A NULL handle is an implicit one: completed by
 * ARMCI_WaitProc, ARMCI_WaitAll or ARMCI_Fence. */
int ARMCI_NbPut(void *src, void *dst, int bytes, int proc, armci_hdl_t *handle);
int ARMCI_NbGet(void *src, void *dst, int bytes, int proc, armci_hdl_t *handle);
int ARMCI_NbAcc(int datatype, void *scale, void *src, void *dst, int bytes, int proc,
                armci_hdl_t *handle);

int ARMCI_Wait(armci_hdl_t *handle);
/* 0: complete; 1: still in progress. */
int ARMCI_Test(armci_hdl_t *handle);
int ARMCI_WaitProc(int proc);
int ARMCI_WaitAll(void);

void ARMCI_Fence(int proc);
void ARMCI_AllFence(void);
void ARMCI_Barrier(void);

/* Strided transfers (ARMCI's layout). count[0] is the size in bytes of one
 * contiguous piece; for level i = 1..stride_levels (0..8), count[i] blocks of
 * the level below are stride_ar[i-1] bytes apart (one stride array per side).
 * count[0] == 0 means nothing to do. Checked before anything moves: levels in
 * [0, 8], count[0] >= 0, count[i] > 0, strides >= 0, destination strides
 * that keep the pieces from overlapping, and the whole remote extent inside
 * one ARMCI_Malloc region of proc. Pieces move one by one (direct protocol):
 * each is one copy (same node) or one network operation. */
/* Strided Put: remote dst_ptr. */
int ARMCI_PutS(void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
               int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
               int proc);
/* Strided Get: remote src_ptr. */
int ARMCI_GetS(void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
               int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
               int proc);
/* Strided Acc: atomic per element as ARMCI_Acc; count[0] must be a whole
 * number of elements of datatype. */
int ARMCI_AccS(int datatype, void *scale, void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
               int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
               int proc);
/* Nonblocking strided Put; handle as for ARMCI_NbPut (NULL: implicit). */
int ARMCI_NbPutS(void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
                 int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
                 int proc, armci_hdl_t *handle);
/* Nonblocking strided Get; handle as for ARMCI_NbGet. */
int ARMCI_NbGetS(void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
                 int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
                 int proc, armci_hdl_t *handle);
/* Nonblocking strided Acc; handle as for ARMCI_NbAcc. */
int ARMCI_NbAccS(int datatype, void *scale, void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
                 int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
                 int proc, armci_hdl_t *handle);

/* Local pack: copies the strided layout at ptr into the contiguous buf
 * (count[0] * count[1] * ... bytes). */
void armci_write_strided(void *ptr, int stride_levels, int stride_arr[], int count[], char *buf);
/* Local unpack: copies the contiguous buf into the strided layout at ptr. */
void armci_read_strided(void *ptr, int stride_levels, int stride_arr[], int count[], char *buf);

/* Vector transfers: for each of the iov_len lists, ptr_array_len segments of
 * `bytes` bytes from src_ptr_array[j] to dst_ptr_array[j]. Checked before
 * anything moves: iov_len, bytes and ptr_array_len >= 0, no NULL array or
 * pointer, every remote segment inside an ARMCI_Malloc region of proc. */
/* Vector Put: remote dst_ptr_array. */
int ARMCI_PutV(armci_giov_t *iov, int iov_len, int proc);
/* Vector Get: remote src_ptr_array. */
int ARMCI_GetV(armci_giov_t *iov, int iov_len, int proc);
/* Vector Acc: bytes must be a whole number of elements of datatype. */
int ARMCI_AccV(int datatype, void *scale, armci_giov_t *iov, int iov_len, int proc);
/* Nonblocking vector Put; handle as for ARMCI_NbPut (NULL: implicit). */
int ARMCI_NbPutV(armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle);
/* Nonblocking vector Get. */
int ARMCI_NbGetV(armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle);
/* Nonblocking vector Acc. */
int ARMCI_NbAccV(int datatype, void *scale, armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle);

/* Single values. */
int ARMCI_PutValueInt(int src, void *dst, int proc);
int ARMCI_PutValueLong(long src, void *dst, int proc);
int ARMCI_PutValueFloat(float src, void *dst, int proc);
int ARMCI_PutValueDouble(double src, void *dst, int proc);
int ARMCI_NbPutValueInt(int src, void *dst, int proc, armci_hdl_t *handle);
int ARMCI_NbPutValueLong(long src, void *dst, int proc, armci_hdl_t *handle);
int ARMCI_NbPutValueFloat(float src, void *dst, int proc, armci_hdl_t *handle);
int ARMCI_NbPutValueDouble(double src, void *dst, int proc, armci_hdl_t *handle);
int ARMCI_GetValueInt(void *src, int proc);
long ARMCI_GetValueLong(void *src, int proc);
float ARMCI_GetValueFloat(void *src, int proc);
double ARMCI_GetValueDouble(void *src, int proc);

/* Atomic read-modify-write of one int or long at proc (values as in
 * ARMCI-MPI). FETCH_AND_ADD*: *prem += value (value is sign-extended for the
 * LONG form), *ploc receives the old *prem. SWAP*: *prem takes *ploc, and
 * *ploc receives the old *prem. prem must lie in an ARMCI_Malloc region of
 * proc and be aligned to its type (4 or 8 bytes). Rmw operations are atomic
 * with respect to each other, from every rank; not with respect to Put or
 * Acc on the same location. A job with any rank reached through the network
 * does every Rmw through the network layer, self and neighbours included,
 * because network atomics need not be atomic with CPU atomics; a job within
 * one node's shared memory uses CPU atomics. */
enum ARMCI_Rmw_e { ARMCI_FETCH_AND_ADD, ARMCI_FETCH_AND_ADD_LONG, ARMCI_SWAP, ARMCI_SWAP_LONG };
int ARMCI_Rmw(int op, void *ploc, void *prem, int value, int proc);

/* Mutexes. ARMCI_Create_mutexes(count) is collective: each rank hosts
 * `count` mutexes (counts may differ between ranks; 0 is allowed), numbered
 * 0..count-1, all free. Only one set exists at a time: ARMCI_Destroy_mutexes
 * (collective, no mutex held) ends it. ARMCI_Lock(mutex, proc) blocks until
 * this rank holds mutex `mutex` of rank proc; waiters are served in the order
 * they arrived (FIFO queue lock) and wait on their own memory, not by polling
 * proc. Mutexes are not recursive; a rank may hold several different ones.
 * ARMCI_Unlock completes this rank's outstanding Puts and Accs (remote
 * completion) before it hands the mutex on, so the next holder sees them. */
int ARMCI_Create_mutexes(int count);
int ARMCI_Destroy_mutexes(void);
void ARMCI_Lock(int mutex, int proc);
void ARMCI_Unlock(int mutex, int proc);

/* Put followed by *flag = value at proc (flag: an int in an ARMCI_Malloc
 * region of proc): when the target sees the flag's new value, the data is in
 * place. */
int ARMCI_Put_flag(void *src, void *dst, int bytes, int *flag, int value, int proc);
/* Strided put, then *flag = value at proc once every piece is in place. */
int ARMCI_PutS_flag(void *src_ptr, int src_stride_ar[/*stride_levels*/], void *dst_ptr,
                    int dst_stride_ar[/*stride_levels*/], int count[/*stride_levels+1*/], int stride_levels,
                    int *flag, int value, int proc);

/* Pairwise notifications (as in ARMCI). armci_notify(proc) tells proc that
 * this rank's earlier operations to proc are in place and returns how many
 * notifications this rank has sent to proc. armci_notify_wait(proc, &v)
 * waits for one more notification from proc than it waited for before: it
 * returns once the count received from proc reaches the count of waits, with
 * *pval (if not NULL) = the count waited for and the return value = the
 * count received so far (which may be larger). */
int armci_notify(int proc);
int armci_notify_wait(int proc, int *pval);

/* Process groups (ARMCI-MPI 0.3.1 layout, 40 bytes: Debian's Global Arrays
 * reads `comm` directly). `comm` holds an MPI communicator of the members
 * when the program has initialised MPI before the group was made, else
 * NULL. grp_to_abs[i] is the world rank of group rank i, abs_to_grp[w] the
 * group rank of world rank w (-1 outside); rank is -1 at a non-member. The
 * other fields are the library's. ARMCI_Group_create and _create_child are
 * collective over the parent group (the default group for _create); a rank
 * outside pid_list gets a group it is not a member of. */
typedef struct {
  union { armci_mpi_comm_t comm; void *armci_comm_storage; };
  union { armci_mpi_comm_t noncoll_pgroup_comm; void *armci_group_private; };
  int *grp_to_abs;
  int *abs_to_grp;
  int rank;
  int size;
} ARMCI_Group;

void ARMCI_Group_create(int grp_size, int *pid_list, ARMCI_Group *group_out);
void ARMCI_Group_create_child(int grp_size, int *pid_list, ARMCI_Group *group_out, ARMCI_Group *group_parent);
/* Collective over the group's members. */
void ARMCI_Group_free(ARMCI_Group *group);
/* *rank = this process's rank in the group (-1 outside it); returns 0. */
int ARMCI_Group_rank(ARMCI_Group *group, int *rank);
void ARMCI_Group_size(ARMCI_Group *group, int *size);
/* The default group is the one ARMCI_Group_create's parent and SCOPE_ALL
 * collectives refer to (the world until set otherwise). */
void ARMCI_Group_set_default(ARMCI_Group *group);
void ARMCI_Group_get_default(ARMCI_Group *group_out);
void ARMCI_Group_get_world(ARMCI_Group *group_out);
/* The world rank of group rank group_rank. */
int ARMCI_Absolute_id(ARMCI_Group *group, int group_rank);
/* ARMCI_Malloc over the group's members: ptr_arr is indexed by group rank.
 * Disjoint groups may allocate at the same time. */
int ARMCI_Malloc_group(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group);
int ARMCI_Free_group(void *ptr, ARMCI_Group *group);
int ARMCI_Malloc_group_memdev(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group, const char *device);
/* 1 when the group's members on this node reach each other through shared
 * memory. */
int ARMCI_Uses_shm_grp(ARMCI_Group *group);

/* Topology. */
enum armci_domain_e { ARMCI_DOMAIN_SMP };
typedef int armci_domain_t;
int armci_domain_nprocs(armci_domain_t domain, int id);
int armci_domain_id(armci_domain_t domain, int glob_proc_id);
int armci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id);
int armci_domain_my_id(armci_domain_t domain);
int armci_domain_count(armci_domain_t domain);
int armci_domain_same_id(armci_domain_t domain, int proc);

/* 1 when proc shares this process's (virtual) node. */
int ARMCI_Same_node(int proc);
/* 1 when same-node peers are reached through shared memory. */
int ARMCI_Uses_shm(void);

/* Peer failure (ARMCI_ON_PEER_FAILURE=return; libarmci's extension): a call
 * that depends on a dead rank returns ARMCI_ERR_PEER_DEAD instead of ending
 * the process (calls without a result return early; ARMCIX_Peer_error
 * tells). ARMCIX_Dead_ranks fills up to max ranks known dead, ascending, and
 * returns how many there are; ARMCIX_Peer_error returns ARMCI_ERR_PEER_DEAD
 * when a call of this thread returned early because of a dead peer since
 * the last time it was asked, else 0. */
#define ARMCI_ERR_PEER_DEAD (-70)
int ARMCIX_Dead_ranks(int *ranks, int max);
int ARMCIX_Peer_error(void);

/* The profiling interface: every call above also exists as PARMCI_x (armci_x
 * as parmci_x), and the ARMCI_x names are weak aliases of them, so a
 * profiler or a wrapper defines ARMCI_x and calls PARMCI_x. */
int PARMCI_Init(void);
int PARMCI_Init_args(int *argc, char ***argv);
int PARMCI_Init_mpi_comm(armci_mpi_comm_t comm);
int PARMCI_Initialized(void);
int PARMCI_Init_thread(int armci_requested);
int PARMCI_Finalize(void);
void PARMCI_Cleanup(void);
void PARMCI_Error(const char *msg, int code);
int PARMCI_Malloc(void **base_ptrs, armci_size_t bytes);
int PARMCI_Free(void *ptr);
int PARMCI_Malloc_memdev(void **base_ptrs, armci_size_t bytes, const char *device);
int PARMCI_Free_memdev(void *ptr);
void PARMCI_Set_shm_limit(unsigned long shmemlimit);
void PARMCI_Access_begin(void *ptr);
void PARMCI_Access_end(void *ptr);
void PARMCI_Copy(void *src, void *dst, int size);
void *PARMCI_Malloc_local(armci_size_t bytes);
int PARMCI_Free_local(void *ptr);
int PARMCI_Put(void *src, void *dst, int bytes, int proc);
int PARMCI_Get(void *src, void *dst, int bytes, int proc);
int PARMCI_Acc(int datatype, void *scale, void *src, void *dst, int bytes, int proc);
void PARMCI_INIT_HANDLE(armci_hdl_t *handle);
void PARMCI_SET_AGGREGATE_HANDLE(armci_hdl_t *handle);
void PARMCI_UNSET_AGGREGATE_HANDLE(armci_hdl_t *handle);
int PARMCI_NbPut(void *src, void *dst, int bytes, int proc, armci_hdl_t *handle);
int PARMCI_NbGet(void *src, void *dst, int bytes, int proc, armci_hdl_t *handle);
int PARMCI_NbAcc(int datatype, void *scale, void *src, void *dst, int bytes, int proc, armci_hdl_t *handle);
int PARMCI_Wait(armci_hdl_t *handle);
int PARMCI_Test(armci_hdl_t *handle);
int PARMCI_WaitProc(int proc);
int PARMCI_WaitAll(void);
void PARMCI_Fence(int proc);
void PARMCI_AllFence(void);
void PARMCI_Barrier(void);
int PARMCI_PutS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int proc);
int PARMCI_GetS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int proc);
int PARMCI_AccS(int datatype, void *scale, void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int proc);
int PARMCI_NbPutS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int proc, armci_hdl_t *handle);
int PARMCI_NbGetS(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int proc, armci_hdl_t *handle);
int PARMCI_NbAccS(int datatype, void *scale, void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int proc, armci_hdl_t *handle);
int PARMCI_PutV(armci_giov_t *iov, int iov_len, int proc);
int PARMCI_GetV(armci_giov_t *iov, int iov_len, int proc);
int PARMCI_AccV(int datatype, void *scale, armci_giov_t *iov, int iov_len, int proc);
int PARMCI_NbPutV(armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle);
int PARMCI_NbGetV(armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle);
int PARMCI_NbAccV(int datatype, void *scale, armci_giov_t *iov, int iov_len, int proc, armci_hdl_t *handle);
int PARMCI_PutValueInt(int src, void *dst, int proc);
int PARMCI_PutValueLong(long src, void *dst, int proc);
int PARMCI_PutValueFloat(float src, void *dst, int proc);
int PARMCI_PutValueDouble(double src, void *dst, int proc);
int PARMCI_NbPutValueInt(int src, void *dst, int proc, armci_hdl_t *handle);
int PARMCI_NbPutValueLong(long src, void *dst, int proc, armci_hdl_t *handle);
int PARMCI_NbPutValueFloat(float src, void *dst, int proc, armci_hdl_t *handle);
int PARMCI_NbPutValueDouble(double src, void *dst, int proc, armci_hdl_t *handle);
int PARMCI_GetValueInt(void *src, int proc);
long PARMCI_GetValueLong(void *src, int proc);
float PARMCI_GetValueFloat(void *src, int proc);
double PARMCI_GetValueDouble(void *src, int proc);
int PARMCI_Rmw(int op, void *ploc, void *prem, int value, int proc);
int PARMCI_Create_mutexes(int count);
int PARMCI_Destroy_mutexes(void);
void PARMCI_Lock(int mutex, int proc);
void PARMCI_Unlock(int mutex, int proc);
int PARMCI_Put_flag(void *src, void *dst, int bytes, int *flag, int value, int proc);
int PARMCI_PutS_flag(void *src_ptr, int src_stride_ar[], void *dst_ptr, int dst_stride_ar[], int count[], int stride_levels, int *flag, int value, int proc);
void PARMCI_Group_create(int grp_size, int *pid_list, ARMCI_Group *group_out);
void PARMCI_Group_create_child(int grp_size, int *pid_list, ARMCI_Group *group_out, ARMCI_Group *group_parent);
void PARMCI_Group_free(ARMCI_Group *group);
int PARMCI_Group_rank(ARMCI_Group *group, int *rank);
void PARMCI_Group_size(ARMCI_Group *group, int *size);
void PARMCI_Group_set_default(ARMCI_Group *group);
void PARMCI_Group_get_default(ARMCI_Group *group_out);
void PARMCI_Group_get_world(ARMCI_Group *group_out);
int PARMCI_Absolute_id(ARMCI_Group *group, int group_rank);
int PARMCI_Malloc_group(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group);
int PARMCI_Free_group(void *ptr, ARMCI_Group *group);
int PARMCI_Malloc_group_memdev(void **ptr_arr, armci_size_t bytes, ARMCI_Group *group, const char *device);
int PARMCI_Uses_shm_grp(ARMCI_Group *group);
int PARMCI_Same_node(int proc);
int PARMCI_Uses_shm(void);
int PARMCIX_Dead_ranks(int *ranks, int max);
int PARMCIX_Peer_error(void);
void parmci_write_strided(void *ptr, int stride_levels, int stride_arr[], int count[], char *buf);
void parmci_read_strided(void *ptr, int stride_levels, int stride_arr[], int count[], char *buf);
int parmci_notify(int proc);
int parmci_notify_wait(int proc, int *pval);
int parmci_domain_nprocs(armci_domain_t domain, int id);
int parmci_domain_id(armci_domain_t domain, int glob_proc_id);
int parmci_domain_glob_proc_id(armci_domain_t domain, int id, int loc_proc_id);
int parmci_domain_my_id(armci_domain_t domain);
int parmci_domain_count(armci_domain_t domain);
int parmci_domain_same_id(armci_domain_t domain, int proc);

#ifdef __cplusplus
}
#endif

/* The armci_msg_* calls (identity, collectives): ARMCI programs expect them
 * from this header alone. */
#include "message.h"

#endif /* ARMCI_H_ */
