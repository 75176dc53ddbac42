// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The timed yield of a shared-case spin, for both spinning loops
 * (progress.c's waits and fast.c's channel waits): a file of its own below
 * them, so that neither calls the other for it (no circle of files).
 */
#include <sched.h>
#include "shim.h"
#include "cpus.h"

/* Lost yields logged with the machine's runnable tasks (KPROG_VERBOSE=2) */
#define KP_LOST_LOGGED 8

/*
 * KPROG_VERBOSE=2: who had the CPU when a yield counted as lost, for the
 * first KP_LOST_LOGGED of them: another job's hog, or a kernel thread that
 * the run queue's count cannot tell from one (docs/apps.md, issue 31).
 */
static void log_lost(int runnable, uint64_t ns)
{
	static int logged;
	char names[1024];

	if (kp.verbose < 2 || logged >= KP_LOST_LOGGED)
		return;
	logged++;
	kp_cpu_runnable_names(names, sizeof(names));
	kp_logf("yield lost (%llu us, %d tasks runnable, %d ranks here); running now:%s",
		(unsigned long long)ns / 1000, runnable, kp.spin.job_ranks, names);
}

/*
 * One yield of a shared-case spin, timed (spin.h: a yield lost to a task
 * that computes turns the yields off for a while). *@delay0: the run
 * delay when this wait first yielded, 0 before; read again only after a
 * long yield, so a yield costs one more system call per wait at most.
 * Threads share no run delay: with MPI_THREAD_MULTIPLE the time decides.
 */
void kp_spin_yield(uint64_t now, uint64_t *delay0)
{
	bool known = kp.spin.delay_known && !kp.mt;
	uint64_t after, d, delay = UINT64_MAX, lost;
	int runnable = -1;

	if (known && !*delay0)
		*delay0 = kp_run_delay_ns();
	sched_yield();
	after = kp_clock_ns();
	if (after - now > KP_SPIN_YIELD_LOST_NS && known && *delay0 != UINT64_MAX) {
		d = kp_run_delay_ns();
		delay = d != UINT64_MAX && d >= *delay0 ? d - *delay0 : UINT64_MAX;
	}
	if (kp_spin_yield_asks(&kp.spin, after - now))
		runnable = kp_cpu_runnable();
	lost = kp.spin.yields_lost;
	kp_spin_yielded(&kp.spin, now, after, delay, runnable);
	if (kp.spin.yields_lost != lost)
		log_lost(runnable, after - now);
}

/*
 * After a blocking send completed at once, oversubscribed: yield once, so
 * that a receiver runnable on this CPU (spinning, or just woken by our
 * kick) takes the message now rather than after our next computation's
 * time slice. Plain Open MPI does the same: its MPI_Send runs the progress
 * loop, which yields when oversubscribed (issue 31, docs/apps.md seventh
 * session: grid's and pw.x's BLACS chains, where every plain MPI_Send
 * handed the CPU over and the shim's never did). Timed like the spin's
 * yields, so that one lost to another job's task turns them off too.
 * @kicked: the send woke its receiver (spin.h KP_SPIN_SEND_YIELD 2);
 * @waiter: the receiver's CPU + 1 from its channel (KP_SPIN_SEND_YIELD 3:
 * yield only when that is this CPU; 0 its receiver does not wait, and then
 * our own CPU is not even read).
 */
void kp_spin_handover(bool kicked, uint32_t waiter)
{
	uint64_t now, delay0 = 0;
	uint32_t here = 0;

	if (!KP_SPIN_SEND_YIELD || !kp.spin.oversub || kp.mt)
		return;
	if (KP_SPIN_SEND_YIELD == 3) {
		if (!waiter)
			return;
		here = kp_cpu_here();
	}
	now = kp_clock_ns();
	if (kp_spin_hands_over(&kp.spin, now, KP_SPIN_SEND_YIELD, kicked, waiter, here)) {
		kp.spin.handovers++;
		kp_spin_yield(now, &delay0);
	}
}
