/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The modules' per-CPU counters as user space holds them (one struct per
 * CPU, filled from GET_STATS by kprog_nl.c), and the arithmetic on them:
 * deltas between two samples, sums over CPUs, rates. One set of slots for
 * both families: kprog.ko's progression counters and kprog_bench.ko's
 * interrupt-source counters; a counter a family lacks stays 0. No I/O
 * here, so it is unit-tested without a kernel.
 */
#ifndef KPROG_STATS_H
#define KPROG_STATS_H

#include <stdint.h>
#include <linux/kprog.h>
#include <linux/kprog_bench.h>

/* The generic netlink families. */
enum kprog_family {
	KPROG_FAMILY_KPROG,	/* "kprog": kprog.ko */
	KPROG_FAMILY_BENCH,	/* "kprog_bench": kprog_bench.ko */
};

/* Index into kprog_cpu_stats.v; kprog_stat_attr() gives the netlink attribute. */
enum kprog_stat {
	KS_EVENTS,
	KS_HARDIRQ_RUNS,
	KS_HARDIRQ_NS,
	KS_TASKLET_RUNS,
	KS_TASKLET_NS,
	KS_WORK_ITEMS,
	KS_WORK_NS,
	KS_BYTES,
	KS_WAKEUPS,
	KS_COALESCED,
	KS_NET_PIN_HITS,	/* kprog_ib's pin cache: send chunks found */
	KS_NET_PIN_MISSES,	/* and pinned afresh */
	KS_NSTAT,
};

struct kprog_cpu_stats {
	int cpu;		/* -1: the kernel sent nothing for this slot */
	uint64_t v[KS_NSTAT];
};

/* Short column name of counter @s ("events", "hardirq_ns", ...). */
const char *kprog_stat_name(enum kprog_stat s);

/* The attribute that carries counter @s in family @which; 0 if it has none. */
int kprog_stat_attr(enum kprog_family which, enum kprog_stat s);

/*
 * @out = @after - @before, counter by counter. If any counter went down,
 * the counters were reset in between: @out is then @after itself (what
 * accumulated since the reset) and the function returns 1; otherwise 0.
 */
int kprog_stats_delta(const struct kprog_cpu_stats *before,
		      const struct kprog_cpu_stats *after,
		      struct kprog_cpu_stats *out);

/* @sum += @x, counter by counter (the "all" row). */
void kprog_stats_add(struct kprog_cpu_stats *sum, const struct kprog_cpu_stats *x);

/* Counter @s of @d per second of @seconds (0 when @seconds <= 0). */
double kprog_stats_rate(const struct kprog_cpu_stats *d, enum kprog_stat s, double seconds);

/* Mean nanoseconds per run of a context: @ns / @runs, 0 when @runs is 0. */
double kprog_stats_ns_per(uint64_t ns, uint64_t runs);

#endif
