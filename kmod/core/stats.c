// SPDX-License-Identifier: GPL-2.0
/*
 * kprog per-CPU progression accounting: the counters, their reset and
 * reader, and the debugfs view /sys/kernel/debug/kprog/stats (one line per
 * possible CPU). The netlink family (netlink.c) reads them the same way.
 */
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/kprog.h>
#include "stats.h"

DEFINE_PER_CPU(struct kprog_stats, kprog_stats);
EXPORT_PER_CPU_SYMBOL_GPL(kprog_stats);

const struct kprog_stat_desc kprog_stat_descs[KPROG_NR_STATS] = {
	[KPROG_STAT_EVENTS] = { "events", KPROG_A_STAT_EVENTS },
	[KPROG_STAT_TASKLET_RUNS] = { "tasklet_runs", KPROG_A_STAT_TASKLET_RUNS },
	[KPROG_STAT_TASKLET_NS] = { "tasklet_ns", KPROG_A_STAT_TASKLET_NS },
	[KPROG_STAT_WORK_ITEMS] = { "work_items", KPROG_A_STAT_WORK_ITEMS },
	[KPROG_STAT_WORK_NS] = { "work_ns", KPROG_A_STAT_WORK_NS },
	[KPROG_STAT_BYTES] = { "bytes", KPROG_A_STAT_BYTES },
	[KPROG_STAT_WAKEUPS] = { "wakeups", KPROG_A_STAT_WAKEUPS },
	[KPROG_STAT_NET_CQES] = { "net_cqes", KPROG_A_STAT_NET_CQES },
	[KPROG_STAT_NET_DROPPED] = { "net_dropped", KPROG_A_STAT_NET_DROPPED },
	[KPROG_STAT_NET_REG_BYTES] = { "net_reg_bytes", KPROG_A_STAT_NET_REG_BYTES },
	[KPROG_STAT_NET_PIN_HITS] = { "net_pin_hits", KPROG_A_STAT_NET_PIN_HITS },
	[KPROG_STAT_NET_PIN_MISSES] = { "net_pin_misses", KPROG_A_STAT_NET_PIN_MISSES },
};

/**
 * kprog_stats_read() - snapshot of one CPU's counters
 * @cpu: a possible CPU
 * @out: filled
 *
 * Each counter is read once; they are not read atomically as a set.
 */
void kprog_stats_read(unsigned int cpu, struct kprog_stats *out)
{
	const struct kprog_stats *s = per_cpu_ptr(&kprog_stats, cpu);
	int i;

	for (i = 0; i < KPROG_NR_STATS; i++)
		out->v[i] = READ_ONCE(s->v[i]);
}

/**
 * kprog_stats_reset() - zero every counter of every possible CPU
 *
 * Best effort against concurrent increments (see stats.h). Any context.
 */
void kprog_stats_reset(void)
{
	unsigned int cpu;
	int i;

	for_each_possible_cpu(cpu) {
		struct kprog_stats *s = per_cpu_ptr(&kprog_stats, cpu);

		for (i = 0; i < KPROG_NR_STATS; i++)
			WRITE_ONCE(s->v[i], 0);
	}
}

/*
 * seq_file position 0 is the header line, n + 1 the first possible CPU
 * >= n. An element is SEQ_START_TOKEN or its CPU number + 2 (never NULL
 * and never the token, which is 1).
 */
#define KPROG_SEQ_CPU(v)	((unsigned long)(v) - 2)

static void *kprog_stats_seq_pos(loff_t pos)
{
	unsigned int cpu;

	if (!pos)
		return SEQ_START_TOKEN;
	if (pos > nr_cpu_ids)
		return NULL;
	cpu = cpumask_next(pos - 2, cpu_possible_mask);
	return cpu < nr_cpu_ids ? (void *)(unsigned long)(cpu + 2) : NULL;
}

static void *kprog_stats_seq_start(struct seq_file *m, loff_t *pos)
{
	return kprog_stats_seq_pos(*pos);
}

static void *kprog_stats_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	/* The next possible CPU after the one just shown. */
	*pos = v == SEQ_START_TOKEN ? 1 : KPROG_SEQ_CPU(v) + 2;
	return kprog_stats_seq_pos(*pos);
}

static void kprog_stats_seq_stop(struct seq_file *m, void *v)
{
}

static int kprog_stats_seq_show(struct seq_file *m, void *v)
{
	struct kprog_stats s;
	unsigned int cpu;
	int i;

	if (v == SEQ_START_TOKEN) {
		seq_puts(m, "cpu");
		for (i = 0; i < KPROG_NR_STATS; i++)
			seq_printf(m, " %s", kprog_stat_descs[i].name);
		seq_putc(m, '\n');
		return 0;
	}
	cpu = KPROG_SEQ_CPU(v);
	kprog_stats_read(cpu, &s);
	seq_printf(m, "%u", cpu);
	for (i = 0; i < KPROG_NR_STATS; i++)
		seq_printf(m, " %llu", s.v[i]);
	seq_putc(m, '\n');
	return 0;
}

static const struct seq_operations kprog_stats_seq_sops = {
	.start = kprog_stats_seq_start,
	.next = kprog_stats_seq_next,
	.stop = kprog_stats_seq_stop,
	.show = kprog_stats_seq_show,
};
DEFINE_SEQ_ATTRIBUTE(kprog_stats_seq);

static struct dentry *kprog_debugfs_dir;

/**
 * kprog_stats_debugfs_init() - create /sys/kernel/debug/kprog/stats
 *
 * A debugfs failure only loses the view; the module works without it.
 */
void kprog_stats_debugfs_init(void)
{
	kprog_debugfs_dir = debugfs_create_dir("kprog", NULL);
	debugfs_create_file("stats", 0444, kprog_debugfs_dir, NULL,
			    &kprog_stats_seq_fops);
}

/**
 * kprog_stats_debugfs_exit() - remove the debugfs directory
 */
void kprog_stats_debugfs_exit(void)
{
	debugfs_remove_recursive(kprog_debugfs_dir);
}
