/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/progress_thread.h: the user-space progress thread of bench/progress
 * (seed 001, section III-C): it takes over the client's posted requests
 * and completes them while the main thread computes, either by looping
 * MPI_Testall (poll) or by blocking in MPI_Waitall (intr, rt = intr with
 * SCHED_FIFO).
 *
 * Works with MPI_THREAD_SERIALIZED (the kprog shim passes THREAD_MULTIPLE
 * programs through to Open MPI): the main thread posts, then hands the
 * requests over (release store of a generation number); until the thread
 * publishes that generation as done (release, read with acquire) only the
 * thread calls MPI. Between rounds the thread waits without calling MPI:
 * poll spins on the handoff word, intr/rt sleep on it (futex), as the
 * seed's threads sleep on a pipe between operations.
 */
#ifndef PROGRESS_THREAD_H
#define PROGRESS_THREAD_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct prog_thread {
	pthread_t th;
	int strat;			/* ST_POLL, ST_INTR or ST_RT */
	int poll_yield;			/* poll: sched_yield every N failed polls (0: never) */
	uint32_t gen;			/* main: last generation handed over */
	_Atomic uint32_t work;		/* generation handed over; UINT32_MAX: exit */
	_Atomic uint32_t done;		/* generation completed */
	_Atomic uint32_t main_waiting;	/* main sleeps on @done */
	_Atomic uint32_t ready;
	MPI_Request *req;		/* 2 requests, the thread's while work != done */
	int slot;			/* round index of the work */
	/* per round, written by the thread before it publishes done */
	int64_t *t_obs;			/* return from MPI_Testall/Waitall, CLOCK_MONOTONIC ns */
	double *cpu;			/* thread CPU time at done, us */
	long *vcsw, *ivcsw;		/* getrusage(RUSAGE_THREAD) at done */
	long *polls;			/* MPI_Testall calls */
	/* at thread start */
	double cpu0;
	long vcsw0, ivcsw0;
};

/*
 * Starts the thread pinned to @cpu with room for @rounds rounds; rt runs
 * SCHED_FIFO at @rt_prio from its first instruction. 0 or an errno
 * (EPERM: SCHED_FIFO refused).
 */
int prog_thread_start(struct prog_thread *p, int strat, int cpu, int rt_prio,
		      int poll_yield, int rounds);

/* main, after posting: hand @req (2 requests) over for round @slot */
uint32_t prog_thread_handoff(struct prog_thread *p, MPI_Request *req, int slot);

/* main: has the thread completed generation @g? */
int prog_thread_done(struct prog_thread *p, uint32_t g);

/* main: sleep until generation @g is done (never spins: the thread may share our core) */
void prog_thread_wait(struct prog_thread *p, uint32_t g);

/* main: ends the thread (it must be idle) and frees its arrays */
void prog_thread_stop(struct prog_thread *p);

#endif
