// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Arithmetic on the modules' per-CPU counters (see kprog_stats.h). */
#include "kprog_stats.h"

static const char *const names[KS_NSTAT] = {
	[KS_EVENTS] = "events",
	[KS_HARDIRQ_RUNS] = "hardirq_runs",
	[KS_HARDIRQ_NS] = "hardirq_ns",
	[KS_TASKLET_RUNS] = "tasklet_runs",
	[KS_TASKLET_NS] = "tasklet_ns",
	[KS_WORK_ITEMS] = "work_items",
	[KS_WORK_NS] = "work_ns",
	[KS_BYTES] = "bytes",
	[KS_WAKEUPS] = "wakeups",
	[KS_COALESCED] = "coalesced",
	[KS_NET_PIN_HITS] = "net_pin_hits",
	[KS_NET_PIN_MISSES] = "net_pin_misses",
};

static const int attrs[KS_NSTAT] = {	/* kprog.ko's: no interrupt source */
	[KS_EVENTS] = KPROG_A_STAT_EVENTS,
	[KS_TASKLET_RUNS] = KPROG_A_STAT_TASKLET_RUNS,
	[KS_TASKLET_NS] = KPROG_A_STAT_TASKLET_NS,
	[KS_WORK_ITEMS] = KPROG_A_STAT_WORK_ITEMS,
	[KS_WORK_NS] = KPROG_A_STAT_WORK_NS,
	[KS_BYTES] = KPROG_A_STAT_BYTES,
	[KS_WAKEUPS] = KPROG_A_STAT_WAKEUPS,
	[KS_NET_PIN_HITS] = KPROG_A_STAT_NET_PIN_HITS,
	[KS_NET_PIN_MISSES] = KPROG_A_STAT_NET_PIN_MISSES,
};

static const int bench_attrs[KS_NSTAT] = {	/* kprog_bench.ko's */
	[KS_HARDIRQ_RUNS] = KPROG_BENCH_A_STAT_HARDIRQ_RUNS,
	[KS_HARDIRQ_NS] = KPROG_BENCH_A_STAT_HARDIRQ_NS,
	[KS_TASKLET_RUNS] = KPROG_BENCH_A_STAT_TASKLET_RUNS,
	[KS_TASKLET_NS] = KPROG_BENCH_A_STAT_TASKLET_NS,
	[KS_WORK_ITEMS] = KPROG_BENCH_A_STAT_WORK_ITEMS,
	[KS_WORK_NS] = KPROG_BENCH_A_STAT_WORK_NS,
	[KS_WAKEUPS] = KPROG_BENCH_A_STAT_WAKEUPS,
	[KS_COALESCED] = KPROG_BENCH_A_STAT_COALESCED,
};

int kprog_stat_attr(enum kprog_family which, enum kprog_stat s)
{
	if ((unsigned int)s >= KS_NSTAT)
		return 0;
	return which == KPROG_FAMILY_BENCH ? bench_attrs[s] : attrs[s];
}

const char *kprog_stat_name(enum kprog_stat s)
{
	return (unsigned int)s < KS_NSTAT ? names[s] : "?";
}

int kprog_stats_delta(const struct kprog_cpu_stats *before,
		      const struct kprog_cpu_stats *after,
		      struct kprog_cpu_stats *out)
{
	int s, reset = 0;

	for (s = 0; s < KS_NSTAT; s++)
		if (after->v[s] < before->v[s])
			reset = 1;
	out->cpu = after->cpu;
	for (s = 0; s < KS_NSTAT; s++)
		out->v[s] = reset ? after->v[s] : after->v[s] - before->v[s];
	return reset;
}

void kprog_stats_add(struct kprog_cpu_stats *sum, const struct kprog_cpu_stats *x)
{
	int s;

	for (s = 0; s < KS_NSTAT; s++)
		sum->v[s] += x->v[s];
}

double kprog_stats_rate(const struct kprog_cpu_stats *d, enum kprog_stat s, double seconds)
{
	return seconds > 0 ? (double)d->v[s] / seconds : 0;
}

double kprog_stats_ns_per(uint64_t ns, uint64_t runs)
{
	return runs ? (double)ns / (double)runs : 0;
}
