/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What irqcost measured (one sample per core per stage) and what it makes
 * of it: per-core and per-mechanism summaries, the text tables and the
 * plain-text data files. The measuring itself is in irqcost.c.
 */
#ifndef IRQCOST_REPORT_H
#define IRQCOST_REPORT_H

#include <stdio.h>
#include <stdint.h>
#include "irqcost_stats.h"
#include "kprog_stats.h"

/* One computation thread's result in one stage. */
struct irq_sample {
	double t;			/* seconds of the timed workload */
	struct kprog_cpu_stats d;	/* module counters on its CPU while it ran */
	uint64_t user_wakes;		/* wake mode: KPROG_BENCH_IOC_IRQ_WAIT returns */
	int partial;			/* the source stopped before the thread did */
};

struct irqcost_results {
	int c;			/* cores */
	const int *cpu;		/* [c] their numbers */
	int m;			/* mechanisms */
	const int *modes;	/* [m] enum kprog_bench_irq_mode, in selection order */
	int reps;		/* repetitions completed */
	uint32_t hz, load_ns;
	double seconds;		/* calibration target */
	uint64_t iters;		/* workload iterations */
	int fifo;		/* wake threads ran SCHED_FIFO */
	struct irq_sample *base;	/* stage 1: [rep * c + k] */
	struct irq_sample *run;		/* stage 2: [(rep * m + mi) * c + k] */
};

static inline struct irq_sample *irqcost_base(const struct irqcost_results *r, int rep, int k)
{
	return &r->base[rep * r->c + k];
}

static inline struct irq_sample *irqcost_run(const struct irqcost_results *r, int rep, int mi, int k)
{
	return &r->run[(rep * r->m + mi) * r->c + k];
}

/* One mechanism on one core, over the repetitions. */
struct core_stats {
	struct summary t1, t2, irqs;	/* seconds, seconds, count */
	struct summary us_per_irq;	/* (t2 - t1) / irqs, microseconds */
	double irq_hz;			/* interrupts per second achieved: irqs / t2 (medians) */
	double module_us_per_irq;	/* module-accounted time per fire (all its contexts) */
	double wakeups_per_irq;		/* module's wakeups counter per fire */
	uint64_t stage1_irqs;		/* should be 0: source runs in stage 1 */
	int partial;			/* a repetition ran past the source's end */
};

/* One mechanism over all cores (the seed's aggregate). */
struct mech_stats {
	struct summary seed_us;		/* c * (t2 - t1) / j per repetition, microseconds */
	double ratio;			/* seed_us median / the reference mechanism's */
	uint64_t irqs;			/* j summed over repetitions */
	double hardirq_ns, tasklet_ns, work_ns;	/* module ns per run of each context */
	double module_us_per_irq;	/* all module contexts per fire */
	double wakeups_per_irq;		/* module's wakeups counter per fire */
	double coalesced_per_irq;	/* fires that queued no new tasklet/work run */
};

void irqcost_core_stats(const struct irqcost_results *r, int mi, int k, struct core_stats *out);

/* @ref: index of the reference mechanism for the ratios. */
void irqcost_mech_stats(const struct irqcost_results *r, int mi, int ref, struct mech_stats *out);

/* Index of hardirq among r->modes, else 0 (the first mechanism). */
int irqcost_ref(const struct irqcost_results *r);

/* The per-core and per-mechanism tables. */
void irqcost_print(FILE *f, const struct irqcost_results *r, int emulated);

/* DIR/irqcost.dat and DIR/irqcost-summary.dat; 0 or -errno. */
int irqcost_write_data(const char *dir, const struct irqcost_results *r);

#endif
