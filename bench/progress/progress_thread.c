// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/progress_thread.c: the progress thread and its handoff.
 */
#define _GNU_SOURCE
#include "progress_thread.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "progress_opts.h"
#include "progress_sys.h"

static long futex(_Atomic uint32_t *a, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)a, op, val, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void *prog_thread_main(void *arg)
{
	struct prog_thread *p = arg;
	uint32_t seen = 0;
	long idle = 0;
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	p->vcsw0 = ru.ru_nvcsw;
	p->ivcsw0 = ru.ru_nivcsw;
	p->cpu0 = thread_cpu_us();
	atomic_store_explicit(&p->ready, 1, memory_order_release);
	for (;;) {
		uint32_t g;
		long polls = 0;
		int slot;

		/* wait for work without calling MPI: the main thread owns it now */
		while ((g = atomic_load_explicit(&p->work, memory_order_acquire)) == seen) {
			if (p->strat != ST_POLL)
				futex(&p->work, FUTEX_WAIT_PRIVATE, seen);
			else if (p->poll_yield && ++idle % p->poll_yield == 0)
				sched_yield();
			else
				cpu_relax();
		}
		if (g == UINT32_MAX)
			break;
		seen = g;
		slot = p->slot;
		if (p->strat == ST_POLL) {
			int flag = 0;

			do {
				MPI_Testall(2, p->req, &flag, MPI_STATUSES_IGNORE);
				polls++;
				if (!flag && p->poll_yield && polls % p->poll_yield == 0)
					sched_yield();
			} while (!flag);
		} else {
			MPI_Waitall(2, p->req, MPI_STATUSES_IGNORE);
		}
		p->t_obs[slot] = now_ns();
		getrusage(RUSAGE_THREAD, &ru);
		p->vcsw[slot] = ru.ru_nvcsw;
		p->ivcsw[slot] = ru.ru_nivcsw;
		p->cpu[slot] = thread_cpu_us();
		p->polls[slot] = polls;
		/* seq_cst: pairs with the main thread's main_waiting store + done load */
		atomic_store_explicit(&p->done, g, memory_order_seq_cst);
		if (atomic_load_explicit(&p->main_waiting, memory_order_seq_cst))
			futex(&p->done, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

static void free_arrays(struct prog_thread *p)
{
	free(p->t_obs);
	free(p->cpu);
	free(p->vcsw);
	free(p->ivcsw);
	free(p->polls);
}

int prog_thread_start(struct prog_thread *p, int strat, int cpu, int rt_prio,
		      int poll_yield, int rounds)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int rc;

	memset(p, 0, sizeof(*p));
	p->strat = strat;
	p->poll_yield = poll_yield;
	p->t_obs = calloc(rounds, sizeof(*p->t_obs));
	p->cpu = calloc(rounds, sizeof(*p->cpu));
	p->vcsw = calloc(rounds, sizeof(*p->vcsw));
	p->ivcsw = calloc(rounds, sizeof(*p->ivcsw));
	p->polls = calloc(rounds, sizeof(*p->polls));
	if (!p->t_obs || !p->cpu || !p->vcsw || !p->ivcsw || !p->polls) {
		free_arrays(p);
		return ENOMEM;
	}
	pthread_attr_init(&attr);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (strat == ST_RT) {
		struct sched_param sp = { .sched_priority = rt_prio };

		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
	}
	rc = pthread_create(&p->th, &attr, prog_thread_main, p);
	pthread_attr_destroy(&attr);
	if (rc) {
		free_arrays(p);
		return rc;
	}
	while (!atomic_load_explicit(&p->ready, memory_order_acquire)) {
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);	/* not a spin: the thread may share our core */
	}
	return 0;
}

uint32_t prog_thread_handoff(struct prog_thread *p, MPI_Request *req, int slot)
{
	uint32_t g = ++p->gen;

	p->req = req;
	p->slot = slot;
	atomic_store_explicit(&p->work, g, memory_order_release);
	if (p->strat != ST_POLL)	/* it sleeps on the futex */
		futex(&p->work, FUTEX_WAKE_PRIVATE, 1);
	return g;
}

int prog_thread_done(struct prog_thread *p, uint32_t g)
{
	return atomic_load_explicit(&p->done, memory_order_acquire) == g;
}

void prog_thread_wait(struct prog_thread *p, uint32_t g)
{
	while (atomic_load_explicit(&p->done, memory_order_acquire) != g) {
		atomic_store_explicit(&p->main_waiting, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&p->done, memory_order_seq_cst) != g)
			futex(&p->done, FUTEX_WAIT_PRIVATE, g - 1);
		atomic_store_explicit(&p->main_waiting, 0, memory_order_relaxed);
	}
}

void prog_thread_stop(struct prog_thread *p)
{
	atomic_store_explicit(&p->work, UINT32_MAX, memory_order_release);
	futex(&p->work, FUTEX_WAKE_PRIVATE, 1);
	pthread_join(p->th, NULL);
	free_arrays(p);
}
