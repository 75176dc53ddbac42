/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog_bench.ko: the interrupt source of the interrupt-cost benchmark
 * (bench_irq.c), its per-CPU counters, its generic netlink family
 * (bench_nl.c) and its misc device (bench_main.c). A module of its own,
 * apart from kprog.ko (include/uapi/linux/kprog_bench.h says why); it
 * shares no symbol with it.
 */
#ifndef _KPROG_BENCH_H
#define _KPROG_BENCH_H

#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/sched/clock.h>
#include <linux/kprog_bench.h>

struct netlink_ext_ack;

/* Hard upper bound of the irq_max_hz parameter: a 1 us period. */
#define KPROG_BENCH_HZ_LIMIT	1000000

/* Module parameters (bench_irq.c), checked by kprog_bench_irq_init(). */
extern unsigned int kprog_bench_max_hz;
extern unsigned int kprog_bench_max_duration_ms;
extern unsigned int kprog_bench_max_load_ns;

/**
 * enum kprog_bench_stat - what is counted, per CPU (the CPU the code ran on)
 * @KPROG_BENCH_STAT_HARDIRQ_RUNS: fires of the source (hrtimer callbacks)
 * @KPROG_BENCH_STAT_HARDIRQ_NS: time spent in them
 * @KPROG_BENCH_STAT_TASKLET_RUNS: runs of the source's tasklets
 * @KPROG_BENCH_STAT_TASKLET_NS: time spent in them
 * @KPROG_BENCH_STAT_WORK_ITEMS: runs of the source's work items
 * @KPROG_BENCH_STAT_WORK_NS: time spent in them
 * @KPROG_BENCH_STAT_WAKEUPS: fires in wake mode that found a sleeper
 * @KPROG_BENCH_STAT_COALESCED: fires that found their tasklet or work item
 *	still pending, so that no new run was queued
 * @KPROG_BENCH_NR_STATS: number of counters
 */
enum kprog_bench_stat {
	KPROG_BENCH_STAT_HARDIRQ_RUNS,
	KPROG_BENCH_STAT_HARDIRQ_NS,
	KPROG_BENCH_STAT_TASKLET_RUNS,
	KPROG_BENCH_STAT_TASKLET_NS,
	KPROG_BENCH_STAT_WORK_ITEMS,
	KPROG_BENCH_STAT_WORK_NS,
	KPROG_BENCH_STAT_WAKEUPS,
	KPROG_BENCH_STAT_COALESCED,
	KPROG_BENCH_NR_STATS,
};

/* kprog_bench_stat_run() relies on each time counter following its runs. */
static_assert(KPROG_BENCH_STAT_HARDIRQ_NS - KPROG_BENCH_STAT_HARDIRQ_RUNS == 1);
static_assert(KPROG_BENCH_STAT_TASKLET_NS - KPROG_BENCH_STAT_TASKLET_RUNS == 1);
static_assert(KPROG_BENCH_STAT_WORK_NS - KPROG_BENCH_STAT_WORK_ITEMS == 1);

/**
 * struct kprog_bench_stats - one CPU's counters
 * @v: indexed by enum kprog_bench_stat
 *
 * Bumped with this_cpu_*() (any context, no shared cache line), read from
 * other CPUs with READ_ONCE(); a reset races with increments, as for
 * kprog.ko's counters (stats.h).
 */
struct kprog_bench_stats {
	u64 v[KPROG_BENCH_NR_STATS];
};

DECLARE_PER_CPU(struct kprog_bench_stats, kprog_bench_stats);

/* The KPROG_BENCH_A_STAT_* attribute of each counter (bench_irq.c). */
extern const int kprog_bench_stat_attrs[KPROG_BENCH_NR_STATS];

/**
 * kprog_bench_clock() - timestamp for the *_NS counters
 *
 * Return: local_clock() nanoseconds.
 */
static inline u64 kprog_bench_clock(void)
{
	return local_clock();
}

/**
 * kprog_bench_stat_add() - add to one of this CPU's counters
 * @stat: counter
 * @n: amount
 *
 * Any context.
 */
static inline void kprog_bench_stat_add(enum kprog_bench_stat stat, u64 n)
{
	this_cpu_add(kprog_bench_stats.v[stat], n);
}

/**
 * kprog_bench_stat_run() - count one run of a context and its time
 * @runs: KPROG_BENCH_STAT_HARDIRQ_RUNS, _TASKLET_RUNS or _WORK_ITEMS; the
 *	time goes to the counter after it
 * @start: kprog_bench_clock() when the run began
 */
static inline void kprog_bench_stat_run(enum kprog_bench_stat runs, u64 start)
{
	this_cpu_inc(kprog_bench_stats.v[runs]);
	this_cpu_add(kprog_bench_stats.v[runs + 1],
		     kprog_bench_clock() - start);
}

void kprog_bench_stats_read(unsigned int cpu, struct kprog_bench_stats *out);
void kprog_bench_stats_reset(void);

/**
 * struct kprog_bench_irq_config - what the interrupt source does
 * @hz: fires per second on each CPU, 1..kprog_bench_max_hz
 * @mode: enum kprog_bench_irq_mode
 * @load_ns: busy time per fire in the mode's context
 * @duration_ms: run time, 1..kprog_bench_max_duration_ms
 * @all_online: use every online CPU, ignore @cpus
 * @cpus: the CPUs to fire on
 */
struct kprog_bench_irq_config {
	u32 hz;
	u32 mode;
	u32 load_ns;
	u32 duration_ms;
	bool all_online;
	cpumask_var_t cpus;
};

int kprog_bench_irq_init(void);
void kprog_bench_irq_exit(void);
int kprog_bench_irq_start(const struct kprog_bench_irq_config *cfg,
			  struct netlink_ext_ack *extack);
void kprog_bench_irq_stop(void);
bool kprog_bench_irq_status(struct kprog_bench_irq_config *cfg);
int kprog_bench_irq_wait(struct kprog_bench_irq_wait *w);

int kprog_bench_nl_init(void);
void kprog_bench_nl_exit(void);

#endif /* _KPROG_BENCH_H */
