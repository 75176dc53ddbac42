/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog per-CPU progression accounting.
 *
 * Every counter is a u64 in a per-CPU array, bumped with this_cpu_*(): on
 * x86-64 a single instruction on the CPU's own per-CPU area, safe against
 * preemption and interrupts, so the same helpers serve process, softirq and
 * hard interrupt context and no cache line is shared on the hot path.
 * Readers on other CPUs use READ_ONCE() (a 64-bit kernel reads a u64 in one
 * access). A reset races with increments on other CPUs: an increment that
 * overlaps it may survive it or be lost, so reset on a quiet system.
 */
#ifndef _KPROG_STATS_H
#define _KPROG_STATS_H

#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/percpu.h>
#include <linux/sched/clock.h>

/**
 * enum kprog_stat - what is counted, per CPU (the CPU the code ran on)
 * @KPROG_STAT_EVENTS: completions produced for an open endpoint: written to
 *	its ring, held in its overflow list, or returned by the posting
 *	ioctl (done = 1)
 * @KPROG_STAT_TASKLET_RUNS: runs of the module's tasklets
 * @KPROG_STAT_TASKLET_NS: time spent in them
 * @KPROG_STAT_WORK_ITEMS: progression work items run (transport transfers
 *	handed to a worker); housekeeping work such as deferred frees is not
 *	counted
 * @KPROG_STAT_WORK_NS: time spent in them
 * @KPROG_STAT_BYTES: payload bytes written into receive buffers, by a
 *	transport's copy or by a receive copying out a buffered eager message:
 *	the sum of cqe.bytes over receive completions
 * @KPROG_STAT_WAKEUPS: wake-ups issued to at least one sleeping thread by a
 *	completion (ring waiters)
 * @KPROG_STAT_NET_CQES: work completions (sends, receives, registrations,
 *	READs) handled by the network transport; each one's run is also
 *	counted in the context it ran in (tasklet runs for softirq, work
 *	items for a workqueue)
 * @KPROG_STAT_NET_DROPPED: messages from the network dropped: malformed,
 *	or not admitted (unknown job, a node that is not the sender's, a
 *	rank not on this node)
 * @KPROG_STAT_NET_REG_BYTES: bytes of send buffers registered for the
 *	remote reads of rendezvous transfers
 * @KPROG_STAT_NET_PIN_HITS: rendezvous chunks (send) and pieces (receive)
 *	whose pages kprog_ib's pin cache held
 * @KPROG_STAT_NET_PIN_MISSES: those it had to pin (and may keep)
 * @KPROG_NR_STATS: number of counters
 */
enum kprog_stat {
	KPROG_STAT_EVENTS,
	KPROG_STAT_TASKLET_RUNS,
	KPROG_STAT_TASKLET_NS,
	KPROG_STAT_WORK_ITEMS,
	KPROG_STAT_WORK_NS,
	KPROG_STAT_BYTES,
	KPROG_STAT_WAKEUPS,
	KPROG_STAT_NET_CQES,
	KPROG_STAT_NET_DROPPED,
	KPROG_STAT_NET_REG_BYTES,
	KPROG_STAT_NET_PIN_HITS,
	KPROG_STAT_NET_PIN_MISSES,
	KPROG_NR_STATS,
};

/* kprog_stat_run() relies on each time counter following its run counter. */
static_assert(KPROG_STAT_TASKLET_NS - KPROG_STAT_TASKLET_RUNS == 1);
static_assert(KPROG_STAT_WORK_NS - KPROG_STAT_WORK_ITEMS == 1);

/**
 * struct kprog_stats - one CPU's counters
 * @v: indexed by enum kprog_stat
 */
struct kprog_stats {
	u64 v[KPROG_NR_STATS];
};

DECLARE_PER_CPU(struct kprog_stats, kprog_stats);

/**
 * struct kprog_stat_desc - how a counter is shown
 * @name: column name in debugfs
 * @attr: KPROG_A_STAT_* netlink attribute
 */
struct kprog_stat_desc {
	const char *name;
	int attr;
};

extern const struct kprog_stat_desc kprog_stat_descs[KPROG_NR_STATS];

/**
 * kprog_stat_clock() - timestamp for the *_NS counters
 *
 * local_clock(): cheap, and on x86 with a stable TSC the CPUs agree, so a
 * work item that migrates while it runs is still measured correctly.
 *
 * Return: nanoseconds.
 */
static inline u64 kprog_stat_clock(void)
{
	return local_clock();
}

/**
 * kprog_stat_add() - add to one of this CPU's counters
 * @stat: counter
 * @n: amount
 *
 * Any context.
 */
static inline void kprog_stat_add(enum kprog_stat stat, u64 n)
{
	this_cpu_add(kprog_stats.v[stat], n);
}

/**
 * kprog_stat_run() - count one run of a context and the time it took
 * @runs: KPROG_STAT_TASKLET_RUNS or KPROG_STAT_WORK_ITEMS; the time goes
 *	to the counter after it
 * @start: kprog_stat_clock() when the run began
 */
static inline void kprog_stat_run(enum kprog_stat runs, u64 start)
{
	this_cpu_inc(kprog_stats.v[runs]);
	this_cpu_add(kprog_stats.v[runs + 1], kprog_stat_clock() - start);
}

void kprog_stats_read(unsigned int cpu, struct kprog_stats *out);
void kprog_stats_reset(void);
void kprog_stats_debugfs_init(void);
void kprog_stats_debugfs_exit(void);

#endif /* _KPROG_STATS_H */
