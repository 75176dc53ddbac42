// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* irqcost's summaries, tables and data files (see irqcost_report.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kprog_nl.h"
#include "irqcost_report.h"

/* Finite values of @x (NaN dropped) summarised. */
static struct summary summarize_finite(double *x, size_t n)
{
	size_t i, j = 0;

	for (i = 0; i < n; i++)
		if (isfinite(x[i]))
			x[j++] = x[i];
	return summarize(x, j);
}

static double *scratch(int n)
{
	double *v = calloc((size_t)(n ? n : 1), sizeof(*v));

	if (!v)
		abort();
	return v;
}

/* Module-accounted time of every context, ns */
static uint64_t module_ns(const struct kprog_cpu_stats *d)
{
	return d->v[KS_HARDIRQ_NS] + d->v[KS_TASKLET_NS] + d->v[KS_WORK_NS];
}

void irqcost_core_stats(const struct irqcost_results *r, int mi, int k, struct core_stats *out)
{
	double *t1 = scratch(r->reps), *t2 = scratch(r->reps), *n = scratch(r->reps),
	       *o = scratch(r->reps);
	uint64_t irqs = 0, ns = 0, wakes = 0;	/* over the thread windows */
	int rep;

	memset(out, 0, sizeof(*out));
	for (rep = 0; rep < r->reps; rep++) {
		const struct irq_sample *b = irqcost_base(r, rep, k), *s = irqcost_run(r, rep, mi, k);
		uint64_t i = s->d.v[KS_HARDIRQ_RUNS];

		t1[rep] = b->t;
		t2[rep] = s->t;
		n[rep] = (double)i;
		o[rep] = overhead_per_irq(b->t, s->t, i) * 1e6;
		irqs += i;
		ns += module_ns(&s->d);
		wakes += s->d.v[KS_WAKEUPS];
		out->stage1_irqs += b->d.v[KS_HARDIRQ_RUNS];
		out->partial |= s->partial;
	}
	out->t1 = summarize(t1, (size_t)r->reps);
	out->t2 = summarize(t2, (size_t)r->reps);
	out->irqs = summarize(n, (size_t)r->reps);
	out->us_per_irq = summarize_finite(o, (size_t)r->reps);
	out->module_us_per_irq = kprog_stats_ns_per(ns, irqs) / 1e3;
	out->irq_hz = out->t2.median > 0 ? out->irqs.median / out->t2.median : 0;
	out->wakeups_per_irq = irqs ? (double)wakes / (double)irqs : 0;
	free(t1);
	free(t2);
	free(n);
	free(o);
}

/* The seed's aggregate for mechanism @mi in repetition @rep, microseconds. */
static double seed_us(const struct irqcost_results *r, int rep, int mi, uint64_t *j)
{
	double *t1 = scratch(r->c), *t2 = scratch(r->c), v;
	int k;

	*j = 0;
	for (k = 0; k < r->c; k++) {
		t1[k] = irqcost_base(r, rep, k)->t;
		t2[k] = irqcost_run(r, rep, mi, k)->t;
		*j += irqcost_run(r, rep, mi, k)->d.v[KS_HARDIRQ_RUNS];
	}
	v = seed_overhead(t1, t2, (size_t)r->c, *j) * 1e6;
	free(t1);
	free(t2);
	return v;
}

/* The seed's aggregate of mechanism @mi, per repetition. */
static struct summary mech_overhead(const struct irqcost_results *r, int mi)
{
	double *v = scratch(r->reps);
	struct summary s;
	uint64_t j;
	int rep;

	for (rep = 0; rep < r->reps; rep++)
		v[rep] = seed_us(r, rep, mi, &j);
	s = summarize_finite(v, (size_t)r->reps);
	free(v);
	return s;
}

void irqcost_mech_stats(const struct irqcost_results *r, int mi, int ref, struct mech_stats *out)
{
	struct kprog_cpu_stats sum = { .cpu = -1 };
	uint64_t j;
	int rep, k;

	memset(out, 0, sizeof(*out));
	out->seed_us = mech_overhead(r, mi);
	out->ratio = overhead_ratio(out->seed_us.median, mech_overhead(r, ref).median);
	for (rep = 0; rep < r->reps; rep++) {
		seed_us(r, rep, mi, &j);
		out->irqs += j;
		for (k = 0; k < r->c; k++)
			kprog_stats_add(&sum, &irqcost_run(r, rep, mi, k)->d);
	}
	out->hardirq_ns = kprog_stats_ns_per(sum.v[KS_HARDIRQ_NS], sum.v[KS_HARDIRQ_RUNS]);
	out->tasklet_ns = kprog_stats_ns_per(sum.v[KS_TASKLET_NS], sum.v[KS_TASKLET_RUNS]);
	out->work_ns = kprog_stats_ns_per(sum.v[KS_WORK_NS], sum.v[KS_WORK_ITEMS]);
	out->module_us_per_irq = kprog_stats_ns_per(module_ns(&sum), sum.v[KS_HARDIRQ_RUNS]) / 1e3;
	out->coalesced_per_irq = sum.v[KS_HARDIRQ_RUNS] ?
		(double)sum.v[KS_COALESCED] / (double)sum.v[KS_HARDIRQ_RUNS] : 0;
	out->wakeups_per_irq = sum.v[KS_HARDIRQ_RUNS] ?
		(double)sum.v[KS_WAKEUPS] / (double)sum.v[KS_HARDIRQ_RUNS] : 0;
}

int irqcost_ref(const struct irqcost_results *r)
{
	int mi;

	for (mi = 0; mi < r->m; mi++)
		if (r->modes[mi] == KPROG_BENCH_IRQ_HARDIRQ)
			return mi;
	return 0;
}

/* "median [q1..q3]", "-" for no data. */
static void fmt_summary(char *buf, size_t len, const struct summary *s, int decimals)
{
	if (!s->n)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.*f [%.*f..%.*f]", decimals, s->median, decimals, s->q1,
			 decimals, s->q3);
}

void irqcost_print(FILE *f, const struct irqcost_results *r, int emulated)
{
	int ref = irqcost_ref(r), mi, k, warned = 0;
	const char *refname = kprog_irq_mode_name((uint32_t)r->modes[ref]);
	char a[64], b[64];

	fprintf(f, "\nirqcost: %d core(s), %u Hz asked per core, load %u ns per fire, workload %llu iterations (calibrated for ~%.2f s), %d repetition(s)%s\n",
		r->c, r->hz, r->load_ns, (unsigned long long)r->iters, r->seconds, r->reps,
		r->fifo ? "" : ", wake threads SCHED_OTHER");
	fprintf(f, "t1/t2: workload wall time without/with the source; irqs: the module's hardirq_runs on that core\n"
		"while the thread ran; irq_hz = irqs / t2, the rate achieved. us/irq = (t2 - t1) / irqs per\n"
		"repetition: median [quartiles] over the repetitions.\n");
	if (emulated)
		fprintf(f, "Running under a hypervisor: absolute times are emulated, compare the ratios.\n");

	fprintf(f, "\nPer core (medians)\n%-9s %4s %9s %9s %8s %7s  %-28s %10s %9s\n", "mechanism",
		"cpu", "t1_s", "t2_s", "irqs", "irq_hz", "us/irq [q1..q3]", "module_us", "wakes/irq");
	for (mi = 0; mi < r->m; mi++) {
		for (k = 0; k < r->c; k++) {
			struct core_stats cs;

			irqcost_core_stats(r, mi, k, &cs);
			fmt_summary(a, sizeof(a), &cs.us_per_irq, 3);
			if (r->modes[mi] == KPROG_BENCH_IRQ_WAKE)
				snprintf(b, sizeof(b), "%.3f", cs.wakeups_per_irq);
			else
				snprintf(b, sizeof(b), "-");
			fprintf(f, "%-9s %4d %9.4f %9.4f %8.0f %7.0f  %-28s %10.3f %9s%s\n",
				kprog_irq_mode_name((uint32_t)r->modes[mi]), r->cpu[k], cs.t1.median,
				cs.t2.median, cs.irqs.median, cs.irq_hz, a, cs.module_us_per_irq, b,
				cs.partial ? "  partial" : "");
			if (cs.stage1_irqs && !warned++)
				fprintf(f, "  (the module counted %llu hard-interrupt runs on CPU %d during stage 1: another user of the source?)\n",
					(unsigned long long)cs.stage1_irqs, r->cpu[k]);
		}
	}

	fprintf(f, "\nPer mechanism: the seed's c * (t2 - t1) / j over the %d core(s) (j: all interrupts counted),\n"
		"median [q1..q3] over the repetitions; ratio: of the medians, to %s, measured in the same run\n",
		r->c, refname);
	fprintf(f, "%-9s %-28s %6s %11s %11s %11s %10s %10s %10s\n", "mechanism", "us/irq [q1..q3]",
		"ratio", "hardirq_ns", "tasklet_ns", "work_ns", "module_us", "unseen_us", "coalesced");
	for (mi = 0; mi < r->m; mi++) {
		struct mech_stats ms;

		irqcost_mech_stats(r, mi, ref, &ms);
		fmt_summary(a, sizeof(a), &ms.seed_us, 3);
		fprintf(f, "%-9s %-28s %6.2f %11.0f %11.0f %11.0f %10.3f %10.3f %9.1f%%\n",
			kprog_irq_mode_name((uint32_t)r->modes[mi]), a, ms.ratio, ms.hardirq_ns,
			ms.tasklet_ns, ms.work_ns, ms.module_us_per_irq,
			ms.seed_us.n ? ms.seed_us.median - ms.module_us_per_irq : NAN,
			100 * ms.coalesced_per_irq);
	}
	fprintf(f, "module: ns the module accounted per run of each of its contexts; module_us: in all of them per\n"
		"fire; unseen_us = us/irq - module_us: stolen time its accounting cannot see (interrupt entry and\n"
		"exit, softirq and scheduler work, context switches, caches). coalesced: fires that found the\n"
		"previous tasklet or work item still pending. A ratio is nan when %s's cost was not above 0.\n",
		refname);
}

int irqcost_write_data(const char *dir, const struct irqcost_results *r)
{
	char path[4096];
	FILE *f;
	int rep, mi, k;

	if (mkdir(dir, 0777) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/irqcost.dat", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# irqcost: one row per repetition x mechanism x core; %u Hz, load %u ns, %llu iterations\n"
		"# rep: repetition (0-based); mechanism: what the module did on each fire; cpu: core\n"
		"# t1_s / t2_s: workload wall time without / with the source (s)\n"
		"# irqs: module hardirq_runs on that core during t2; us_per_irq: (t2 - t1) / irqs (us)\n"
		"# hardirq_ns .. coalesced: module counter deltas on that core during t2\n"
		"# user_wakes: returns of the pinned KPROG_BENCH_IOC_IRQ_WAIT thread (wake mode)\n"
		"# stage1_irqs: hardirq_runs during t1 (expected 0); partial: 1 if the source stopped early\n"
		"# rep mechanism cpu t1_s t2_s irqs us_per_irq hardirq_ns tasklet_runs tasklet_ns work_items work_ns wakeups coalesced user_wakes stage1_irqs partial\n",
		r->hz, r->load_ns, (unsigned long long)r->iters);
	for (rep = 0; rep < r->reps; rep++)
		for (mi = 0; mi < r->m; mi++)
			for (k = 0; k < r->c; k++) {
				const struct irq_sample *b = irqcost_base(r, rep, k),
							*s = irqcost_run(r, rep, mi, k);
				const uint64_t *v = s->d.v;

				fprintf(f, "%d %s %d %.6f %.6f %llu %.4f %llu %llu %llu %llu %llu %llu %llu %llu %llu %d\n",
					rep, kprog_irq_mode_name((uint32_t)r->modes[mi]), r->cpu[k], b->t, s->t,
					(unsigned long long)v[KS_HARDIRQ_RUNS],
					overhead_per_irq(b->t, s->t, v[KS_HARDIRQ_RUNS]) * 1e6,
					(unsigned long long)v[KS_HARDIRQ_NS],
					(unsigned long long)v[KS_TASKLET_RUNS],
					(unsigned long long)v[KS_TASKLET_NS],
					(unsigned long long)v[KS_WORK_ITEMS],
					(unsigned long long)v[KS_WORK_NS], (unsigned long long)v[KS_WAKEUPS],
					(unsigned long long)v[KS_COALESCED],
					(unsigned long long)s->user_wakes,
					(unsigned long long)b->d.v[KS_HARDIRQ_RUNS], s->partial);
			}
	if (fclose(f))
		return -errno;

	snprintf(path, sizeof(path), "%s/irqcost-summary.dat", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# irqcost summary: added us per interrupt, median q1 q3 (quartiles) over %d repetition(s)\n"
		"# columns: mechanism, then for each core: median q1 q3, then the seed aggregate: median q1 q3\n"
		"# cores:", r->reps);
	for (k = 0; k < r->c; k++)
		fprintf(f, " %d", r->cpu[k]);
	fprintf(f, "\n");
	for (mi = 0; mi < r->m; mi++) {
		struct mech_stats ms;

		fprintf(f, "%s", kprog_irq_mode_name((uint32_t)r->modes[mi]));
		for (k = 0; k < r->c; k++) {
			struct core_stats cs;

			irqcost_core_stats(r, mi, k, &cs);
			fprintf(f, " %.4f %.4f %.4f", cs.us_per_irq.median, cs.us_per_irq.q1,
				cs.us_per_irq.q3);
		}
		irqcost_mech_stats(r, mi, irqcost_ref(r), &ms);
		fprintf(f, " %.4f %.4f %.4f\n", ms.seed_us.median, ms.seed_us.q1, ms.seed_us.q3);
	}
	return fclose(f) ? -errno : 0;
}
