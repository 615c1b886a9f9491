/*
 * armcix.h: the ARMCIX extensions of ARMCI-MPI 0.3.1 that this library
 * provides: group split/dup, mutex handles, explicit progress.
 */
#ifndef ARMCIX_H_
#define ARMCIX_H_

#include <stdint.h>

#include "armci.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over parent's members, as MPI_Comm_split / MPI_Comm_dup:
 * members with one color form a group, ordered by key then parent rank.
 * Return 0. */
int ARMCIX_Group_split(ARMCI_Group *parent, int color, int key, ARMCI_Group *new_group);
int ARMCIX_Group_dup(ARMCI_Group *parent, ARMCI_Group *new_group);

/* Mutex handles: sets of mutexes that coexist (with each other and with
 * ARMCI_Create_mutexes' set), so libraries can have their own. Create and
 * destroy are collective over the group (NULL: the default group); each
 * member hosts `count` mutexes (counts may differ); proc is a rank of that
 * group. Lock waits in FIFO order (the queue lock of ARMCI_Lock); Trylock
 * returns 1 when it took the mutex, 0 when it was held or waited for.
 * Unlock completes this rank's outstanding Puts and Accs first. */
typedef struct armcix_mutex_hdl_s *armcix_mutex_hdl_t;

armcix_mutex_hdl_t ARMCIX_Create_mutexes_hdl(int count, ARMCI_Group *pgroup);
int ARMCIX_Destroy_mutexes_hdl(armcix_mutex_hdl_t hdl);
void ARMCIX_Lock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
int ARMCIX_Trylock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
void ARMCIX_Unlock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);

/* Serves what peers asked of this process (their gets, accs, locks). */
void ARMCIX_Progress(void);

int PARMCIX_Group_split(ARMCI_Group *parent, int color, int key, ARMCI_Group *new_group);
int PARMCIX_Group_dup(ARMCI_Group *parent, ARMCI_Group *new_group);
armcix_mutex_hdl_t PARMCIX_Create_mutexes_hdl(int count, ARMCI_Group *pgroup);
int PARMCIX_Destroy_mutexes_hdl(armcix_mutex_hdl_t hdl);
void PARMCIX_Lock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
int PARMCIX_Trylock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
void PARMCIX_Unlock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
void PARMCIX_Progress(void);

#ifdef __cplusplus
}
#endif

#endif /* ARMCIX_H_ */
