/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stamps of the shim's own parts of a nonblocking collective's start call
 * and of MPI_Wait on it (collprof.c), in libkprog-collprof.so only (`make
 * -C libshim collprof`, KP_COLL_PROF): a TSC read per stamp (about 20 ns
 * under emulation, against 5-8 us for a uprobe), medians printed per rank
 * at MPI_Finalize. In every other build the stamps are nothing.
 */
#ifndef KPROG_COLLPROF_H
#define KPROG_COLLPROF_H

#include <stdbool.h>
#include <stdint.h>
#include "clock.h"

enum kp_cp_point {
	KP_CP_S_ENTRY,		/* kp_coll_comm(): the MPI_I* call began */
	KP_CP_S_NEW,		/* kp_coll_new(): the call goes to the module */
	KP_CP_S_START,		/* kp_coll_start(): schedule built */
	KP_CP_S_IOCTL,		/* just before KPROG_IOC_COLL */
	KP_CP_S_IOCTL_END,	/* just after it */
	KP_CP_S_END,		/* kp_coll_start() returns */
	KP_CP_W_ENTRY,		/* kp_mpi_wait() on an active collective */
	KP_CP_W_DONE0,		/* kp_coll_complete() in that wait: entry */
	KP_CP_W_DONE1,		/* ... and exit */
	KP_CP_W_END,		/* kp_mpi_wait() returns */
	KP_CP_N
};

#ifdef KP_COLL_PROF
#define KP_CP_ON 1
extern uint64_t kp_cp_t[KP_CP_N];
extern unsigned int kp_cp_loops;	/* kp_wait_one() steps of the wait */
static inline void kp_cp(int p)
{
	kp_cp_t[p] = kp_ticks();
}
void kp_cp_start_done(void);	/* after KP_CP_S_END: keep the call's intervals */
void kp_cp_wait_done(void);	/* after KP_CP_W_END */
void kp_cp_report(int rank);	/* at finalize, to stderr */
#define KP_CP(p) kp_cp(p)
#define KP_CP_IF(cond, p) do { if (cond) kp_cp(p); } while (0)
#define KP_CP_LOOP() (kp_cp_loops++)
#define KP_CP_START_DONE() kp_cp_start_done()
#define KP_CP_WAIT_DONE() kp_cp_wait_done()
#define KP_CP_REPORT(rank) kp_cp_report(rank)
#else
#define KP_CP_ON 0
#define KP_CP(p) ((void)0)
#define KP_CP_IF(cond, p) ((void)0)
#define KP_CP_LOOP() ((void)0)
#define KP_CP_START_DONE() ((void)0)
#define KP_CP_WAIT_DONE() ((void)0)
#define KP_CP_REPORT(rank) ((void)0)
#endif

#endif
