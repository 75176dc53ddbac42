// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_THREAD_MULTIPLE: sleeping in the kernel while other threads run the
 * shim (lock.c has the lock and the reasoning). A sleeper may wait for a
 * completion that another thread drains from the ring or takes from a
 * channel; the kernel then has no reason to wake it, so that thread kicks
 * its own endpoint (KPROG_IOC_KICK), which ends every KPROG_IOC_WAIT with
 * KPROG_WAIT_EVENTS of the process. All under the lock except the sleep.
 */
#include <sys/ioctl.h>
#include "shim.h"

static int sleepers;		/* threads between nap_begin and nap_end */

/*
 * A blocking call about to sleep: count it as a sleeper before its last
 * look at the ring and channels (so a thread completing something now
 * kicks it), and have the channels' senders kick while anyone sleeps.
 */
void kp_mt_nap_begin(void)
{
	if (sleepers++ == 0)
		kp_fast_waiting(true);
}

void kp_mt_nap_end(void)
{
	if (--sleepers == 0)
		kp_fast_waiting(false);
}

/* Sleep in the kernel without the lock (between nap_begin and nap_end). */
void kp_mt_sleep(long timeout_ns, uint32_t events)
{
	int d = kp_mt_drop();

	kp_sleep_events(timeout_ns, events);
	kp_mt_retake(d);
}

/* After a progress step that completed something: wake the sleepers. */
void kp_mt_after_progress(void)
{
	__u32 me = (__u32)kp.world_rank;

	if (sleepers)
		ioctl(kp.fd, KPROG_IOC_KICK, &me);
}
