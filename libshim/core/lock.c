// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_THREAD_MULTIPLE: one lock around the shim.
 *
 * The simplest design that is correct: every shim entry point holds one
 * process-wide mutex (KP_GUARD), so all shim state (requests, the
 * communicator table, the datatype cache, the ring, channels, deferred
 * posts) is touched by one thread at a time, exactly as in a
 * single-threaded program. The lock is released
 *  - around every Open MPI call that can block (pass-through Send/Recv/
 *    Wait..., communicator constructors: KP_PMPI), so a thread blocked in
 *    Open MPI never holds up the others;
 *  - while a blocking call sleeps in the kernel (kp_mt_sleep), and for a
 *    sched_yield() on every spin step, so the other threads get in.
 * A thread that sleeps in KPROG_IOC_WAIT wakes on completions in the ring;
 * if another thread drained them first, or completed its request from a
 * channel, that thread kicks this endpoint (KPROG_IOC_KICK to itself) so
 * that the sleeper looks again (mt_wait.c).
 * Open MPI's progress callback only try-locks: a thread spinning in Open
 * MPI must not wait for one that is in the shim.
 *
 * Cost: with MPI_THREAD_MULTIPLE every call takes the mutex (uncontended:
 * two atomic operations), concurrent calls serialize, and a completion
 * seen by another thread costs a kick system call. Below THREAD_MULTIPLE
 * kp.mt is false and each guard is one predictable branch.
 * The lock is recursive per thread (a depth counter): Fortran entries call
 * C entries, and Open MPI's progress callback may run inside the shim's
 * own Open MPI calls.
 */
#include <pthread.h>
#include <sched.h>
#include "shim.h"

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static __thread int depth;

static int want;		/* threads blocked on the lock */

void kp_mt_lock(void)
{
	if (depth++)
		return;
	__atomic_fetch_add(&want, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&big);
	__atomic_fetch_sub(&want, 1, __ATOMIC_RELAXED);
}

/*
 * A mutex is not fair: a thread polling (MPI_Test, MPI_Iprobe in a loop)
 * would take it again at once. When others wait, give them the CPU.
 */
void kp_mt_unlock(void)
{
	if (--depth)
		return;
	pthread_mutex_unlock(&big);
	if (__atomic_load_n(&want, __ATOMIC_RELAXED))
		sched_yield();
}

bool kp_mt_trylock(void)
{
	if (!kp.mt)
		return true;
	if (depth) {
		depth++;
		return true;
	}
	if (pthread_mutex_trylock(&big))
		return false;
	depth = 1;
	return true;
}

int kp_mt_drop(void)
{
	int d = depth;

	if (d) {
		depth = 0;
		pthread_mutex_unlock(&big);
	}
	return d;
}

void kp_mt_retake(int d)
{
	if (d) {
		__atomic_fetch_add(&want, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&big);
		__atomic_fetch_sub(&want, 1, __ATOMIC_RELAXED);
		depth = d;
	}
}

void kp_mt_yield(void)
{
	int d = kp_mt_drop();

	sched_yield();
	kp_mt_retake(d);
}
