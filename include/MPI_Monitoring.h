/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MPI_Monitoring: introspection monitoring sessions (Jeannot & Sartori,
 * Inria RR-9292, section 4), served by libkprog.so.
 *
 *   mpicc -Iinclude app.c -Llibshim -lkprog
 *
 * A session attached to a communicator records the number and the bytes
 * of the messages this process sends to every process of that
 * communicator while the session is active, whatever communicator carries
 * them. Under kprog the point-to-point figures come from the kernel's
 * per-peer accounting and the fast-path channels; traffic that Open MPI
 * carries itself (collectives, one-sided, communicators kprog does not
 * handle) from Open MPI's monitoring MPI_T variables when its monitoring
 * components are enabled (--mca pml_monitoring_enable 2). Every function
 * except MPI_M_get_info is collective over the session's communicator.
 */
#ifndef MPI_MONITORING_H
#define MPI_MONITORING_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libkprog.so, which hides its internals (-fvisibility=hidden). */
#if defined(__GNUC__)
#define MPI_M_EXPORT __attribute__((visibility("default")))
#else
#define MPI_M_EXPORT
#endif

/* Opaque session identifier (an index; MPI_M_ALL_MSID names them all). */
typedef int MPI_M_msid;

#define MPI_M_ALL_MSID		(-1)
#define MPI_M_INT_IGNORE	((int *)0)
#define MPI_M_DATA_IGNORE	((unsigned long *)0)

/* flags of the data accessors: a bitwise combination */
#define MPI_M_P2P_ONLY		0x1
#define MPI_M_COLL_ONLY		0x2
#define MPI_M_OSC_ONLY		0x4
#define MPI_M_ALL_COMM		(MPI_M_P2P_ONLY | MPI_M_COLL_ONLY | MPI_M_OSC_ONLY)

/* Error codes: all distinct from MPI_SUCCESS and from one another. */
#define MPI_M_INTERNAL_FAIL		(-101)	/* malloc or a system call failed */
#define MPI_M_MPIT_FAIL			(-102)	/* an MPI or MPI_T function failed */
#define MPI_M_MISSING_INIT		(-103)	/* no MPI_M_init */
#define MPI_M_SESSION_STILL_ACTIVE	(-104)	/* a session is not suspended */
#define MPI_M_SESSION_NOT_SUSPENDED	(-105)	/* this session is not suspended */
#define MPI_M_INVALID_MSID		(-106)	/* no such session, or ALL_MSID where not allowed */
#define MPI_M_SESSION_OVERFLOW		(-107)	/* MPI_M_MAX_SESSIONS reached */
#define MPI_M_MULTIPLE_CALL		(-108)	/* init/continue/suspend called twice */
#define MPI_M_INVALID_ROOT		(-109)	/* root out of the communicator */

/* Sessions that may exist at once (started and not yet freed). */
#define MPI_M_MAX_SESSIONS	256

MPI_M_EXPORT int MPI_M_init(void);
MPI_M_EXPORT int MPI_M_finalize(void);
MPI_M_EXPORT int MPI_M_start(MPI_Comm comm, MPI_M_msid *msid);
MPI_M_EXPORT int MPI_M_suspend(MPI_M_msid msid);
MPI_M_EXPORT int MPI_M_continue(MPI_M_msid msid);
MPI_M_EXPORT int MPI_M_reset(MPI_M_msid msid);
MPI_M_EXPORT int MPI_M_free(MPI_M_msid msid);
MPI_M_EXPORT int MPI_M_get_info(MPI_M_msid msid, int *provided, int *array_size);
MPI_M_EXPORT int MPI_M_get_data(MPI_M_msid msid, unsigned long *msg_counts,
				unsigned long *msg_sizes, int flags);
MPI_M_EXPORT int MPI_M_allgather_data(MPI_M_msid msid, unsigned long *matrix_counts,
				      unsigned long *matrix_sizes, int flags);
MPI_M_EXPORT int MPI_M_rootgather_data(MPI_M_msid msid, int root, unsigned long *matrix_counts,
				       unsigned long *matrix_sizes, int flags);
MPI_M_EXPORT int MPI_M_flush(MPI_M_msid msid, char *filename, int flags);
MPI_M_EXPORT int MPI_M_rootflush(MPI_M_msid msid, int root, char *filename, int flags);

#ifdef __cplusplus
}
#endif

#endif /* MPI_MONITORING_H */
