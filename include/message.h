/*
 * message.h: the armci_msg_* calls of ARMCI (ARMCI-MPI 0.3.1's set and
 * constants): identity, point-to-point messages and collectives, run on the
 * library's own transport (node-shared memory within a node, the network
 * layer's messages between nodes), so a program without MPI has them too.
 *
 * Reductions take an op string: "+", "*", "max", "min", "absmax", "absmin"
 * (and "or" for the integer types). Every collective is called by every
 * member of its scope or group, in the same order. Bad input (an unknown op
 * or type, a rank outside the group, a freed group) ends the job with a
 * message naming the call, the argument and the rank.
 */
#ifndef ARMCI_MESSAGE_H_
#define ARMCI_MESSAGE_H_

#include "armci.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SCOPE_ALL: the default group (the world unless ARMCI_Group_set_default
 * said otherwise); SCOPE_NODE: the processes of this (virtual) node;
 * SCOPE_MASTERS: the lowest rank of every node; a call from a rank that is
 * not its node's master returns at once, its buffer untouched. */
enum armci_scope_e { SCOPE_ALL, SCOPE_NODE, SCOPE_MASTERS };

/* Data types of the armci_msg reductions (not the Acc types: see armci.h). */
enum armci_type_e { ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG, ARMCI_FLOAT, ARMCI_DOUBLE };

int armci_msg_me(void);
int armci_msg_nproc(void);
/* Prints the code and ends the whole job. */
void armci_msg_abort(int code);
/* Seconds since an arbitrary point, monotonic. */
double armci_timer(void);
/* Accepted for ARMCI compatibility; ARMCI_Init does the work. */
void armci_msg_init(int *argc, char ***argv);
void armci_msg_finalize(void);

/* Blocking point-to-point messages (world ranks). rcv takes the next
 * message from `from` with this tag; *msglen (if not NULL) receives its
 * length, which must not exceed buflen. rcvany takes one from any rank and
 * returns the sender. Messages between two ranks with one tag arrive in the
 * order they were sent. */
void armci_msg_snd(int tag, void *buffer, int len, int to);
void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from);
int armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen);

/* Barriers: no fence (ARMCI_Barrier fences first). */
void armci_msg_barrier(void);
void armci_msg_group_barrier(ARMCI_Group *group);
/* The binary tree the collectives of this scope use (world ranks; -1 for
 * none): the root, this rank's parent and its two children. */
void armci_msg_bintree(int scope, int *Root, int *Up, int *Left, int *Right);

/* Broadcasts of len bytes from root, a world rank also in the group form
 * (there it must be one of the group's members), as GA passes it. */
void armci_msg_bcast(void *buffer, int len, int root);
void armci_msg_brdcst(void *buffer, int len, int root);
void armci_msg_bcast_scope(int scope, void *buffer, int len, int root);
void armci_msg_group_bcast_scope(int scope, void *buf, int len, int root, ARMCI_Group *group);

/* All-reductions of n elements in place: every member ends with the result. */
void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type);
void armci_msg_igop(int *x, int n, char *op);
void armci_msg_lgop(long *x, int n, char *op);
void armci_msg_llgop(long long *x, int n, char *op);
void armci_msg_fgop(float *x, int n, char *op);
void armci_msg_dgop(double *x, int n, char *op);
void armci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type, ARMCI_Group *group);
void armci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group);
/* Reductions: ARMCI defines the result at the scope's root only; here every
 * member gets it (as gop). */
void armci_msg_reduce(void *x, int n, char *op, int type);
void armci_msg_reduce_scope(int scope, void *x, int n, char *op, int type);

/* Selection: x holds n bytes whose first element (of type) is the key; the
 * member with the largest ("max") or smallest ("min") key among those with
 * contribute != 0 gives its n bytes to everyone (ties: the lowest rank).
 * When nobody contributes, x is left as it was. */
void armci_msg_sel(void *x, int n, char *op, int type, int contribute);
void armci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute);

/* Profiling twins (see armci.h). */
int parmci_msg_me(void);
int parmci_msg_nproc(void);
void parmci_msg_barrier(void);
void parmci_msg_group_barrier(ARMCI_Group *group);

#ifdef __cplusplus
}
#endif

#endif /* ARMCI_MESSAGE_H_ */
