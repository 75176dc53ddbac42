// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * irqcost_report.c on synthetic measurements with known answers: per-core
 * and per-mechanism summaries, the ratio to hardirq, the module's
 * ns-per-context accounting, and the data files.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kprog.h>
#include "irqcost_report.h"
#include "test_expect.h"

#define C 2
#define M 2
#define R 3

/* tasklet first: the reference must still be found by mode, not position */
static const int modes[M] = { KPROG_BENCH_IRQ_TASKLET, KPROG_BENCH_IRQ_HARDIRQ };
static const int cpus[C] = { 0, 3 };

/* stolen us per fire: hardirq 2, tasklet 6 (rep 2 noisier: 4 and 12) */
static void fill(struct irqcost_results *r, struct irq_sample *base, struct irq_sample *run)
{
	int rep, mi, k;

	*r = (struct irqcost_results){ .c = C, .cpu = cpus, .m = M, .modes = modes, .reps = R,
				       .hz = 1000, .iters = 12345, .seconds = 1, .fifo = 1,
				       .base = base, .run = run };
	memset(base, 0, sizeof(*base) * R * C);
	memset(run, 0, sizeof(*run) * R * M * C);
	for (rep = 0; rep < R; rep++) {
		for (k = 0; k < C; k++) {
			irqcost_base(r, rep, k)->t = 1.0 + 0.1 * k;
			for (mi = 0; mi < M; mi++) {
				struct irq_sample *s = irqcost_run(r, rep, mi, k);
				double us = modes[mi] == KPROG_BENCH_IRQ_HARDIRQ ? 2 : 6;
				uint64_t n = 1000 + 100 * k;

				if (rep == 2)
					us *= 2;
				s->t = 1.0 + 0.1 * k + (double)n * us * 1e-6;
				s->d.v[KS_HARDIRQ_RUNS] = n;
				s->d.v[KS_HARDIRQ_NS] = n * 500;
				if (modes[mi] == KPROG_BENCH_IRQ_TASKLET) {
					s->d.v[KS_TASKLET_RUNS] = n;
					s->d.v[KS_TASKLET_NS] = n * 1500;
				}
			}
		}
	}
}

static int count_lines(const char *path, int *comments)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int n = 0;

	*comments = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			(*comments)++;
		else
			n++;
	}
	fclose(f);
	return n;
}

void test_irqcost_report(void)
{
	struct irq_sample base[R * C], run[R * M * C];
	struct irqcost_results r;
	struct core_stats cs;
	struct mech_stats ms;
	char dir[] = "/tmp/test_irqcost.XXXXXX", path[128], line[512];
	int comments;
	FILE *f;

	fill(&r, base, run);
	EXPECT(irqcost_ref(&r) == 1, "reference is hardirq wherever it is");

	irqcost_core_stats(&r, 1, 1, &cs);
	EXPECT(NEAR(cs.us_per_irq.median, 2, 1e-6) && NEAR(cs.us_per_irq.max, 4, 1e-6),
	       "hardirq on CPU 3: %g [..%g] us", cs.us_per_irq.median, cs.us_per_irq.max);
	EXPECT(NEAR(cs.t1.median, 1.1, 1e-12) && cs.irqs.median == 1100, "per-core t1 and irqs");
	EXPECT(NEAR(cs.irq_hz, 1100 / 1.1022, 1e-6), "rate achieved %g", cs.irq_hz);
	EXPECT(NEAR(cs.module_us_per_irq, 0.5, 1e-9) && cs.stage1_irqs == 0 && !cs.partial,
	       "module us per fire, hardirq only: %g", cs.module_us_per_irq);
	irqcost_core_stats(&r, 0, 0, &cs);
	EXPECT(NEAR(cs.us_per_irq.median, 6, 1e-6), "tasklet on CPU 0: %g us", cs.us_per_irq.median);
	EXPECT(NEAR(cs.module_us_per_irq, 2.0, 1e-9), "module us per fire, hardirq + tasklet: %g",
	       cs.module_us_per_irq);

	irqcost_mech_stats(&r, 0, irqcost_ref(&r), &ms);
	EXPECT(NEAR(ms.seed_us.median, 6, 1e-6) && NEAR(ms.seed_us.max, 12, 1e-6),
	       "seed aggregate, tasklet: %g [..%g]", ms.seed_us.median, ms.seed_us.max);
	EXPECT(NEAR(ms.ratio, 3, 1e-6), "ratio of the medians to hardirq: %g", ms.ratio);
	EXPECT(NEAR(ms.hardirq_ns, 500, 1e-9) && NEAR(ms.tasklet_ns, 1500, 1e-9) && ms.work_ns == 0,
	       "module ns per context run");
	EXPECT(ms.irqs == (uint64_t)R * (1000 + 1100), "j summed over repetitions");
	EXPECT(ms.coalesced_per_irq == 0 && ms.wakeups_per_irq == 0, "nothing coalesced or woken");
	irqcost_run(&r, 0, 0, 1)->d.v[KS_COALESCED] = 63;
	irqcost_run(&r, 1, 0, 0)->d.v[KS_WAKEUPS] = 420;
	irqcost_mech_stats(&r, 0, irqcost_ref(&r), &ms);
	EXPECT(NEAR(ms.coalesced_per_irq, 63.0 / 6300, 1e-12) &&
	       NEAR(ms.wakeups_per_irq, 420.0 / 6300, 1e-12), "coalesced and wakeups per fire");
	irqcost_core_stats(&r, 0, 0, &cs);
	EXPECT(NEAR(cs.wakeups_per_irq, 420.0 / 3000, 1e-12), "wakeups per fire on one core");
	irqcost_mech_stats(&r, 1, irqcost_ref(&r), &ms);
	EXPECT(NEAR(ms.ratio, 1, 1e-12), "reference against itself is 1");

	/* outside load slows one stage-2 and one stage-1 run: the median is not fooled */
	irqcost_run(&r, 0, 1, 0)->t += 0.01;
	irqcost_base(&r, 2, 0)->t += 0.01;
	irqcost_core_stats(&r, 1, 0, &cs);
	EXPECT(NEAR(cs.us_per_irq.median, 2, 1e-6) && NEAR(cs.us_per_irq.max, 12, 1e-6) &&
	       NEAR(cs.us_per_irq.min, -6, 1e-6), "median %g, per repetition %g..%g",
	       cs.us_per_irq.median, cs.us_per_irq.min, cs.us_per_irq.max);
	fill(&r, base, run);

	/* one repetition without interrupts on a core: that value is dropped, not 0 or inf */
	irqcost_run(&r, 0, 1, 0)->d.v[KS_HARDIRQ_RUNS] = 0;
	irqcost_base(&r, 1, 0)->d.v[KS_HARDIRQ_RUNS] = 7;
	irqcost_run(&r, 2, 1, 0)->partial = 1;
	irqcost_core_stats(&r, 1, 0, &cs);
	EXPECT(cs.us_per_irq.n == 2 && cs.stage1_irqs == 7 && cs.partial,
	       "NaN dropped (n %zu), stage-1 interrupts and partial runs reported", cs.us_per_irq.n);
	fill(&r, base, run);

	if (!mkdtemp(dir)) {
		EXPECT(0, "mkdtemp");
		return;
	}
	EXPECT(irqcost_write_data(dir, &r) == 0, "data files written");
	snprintf(path, sizeof(path), "%s/irqcost.dat", dir);
	EXPECT(count_lines(path, &comments) == R * M * C && comments > 3,
	       "one row per repetition x mechanism x core, with a header");
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && line[0] == '#')
		;
	EXPECT(f && !strncmp(line, "0 tasklet 0 1.000000 1.006000 1000 6.0000 500000 1000 1500000 ", 62),
	       "first data row: %s", line);
	if (f)
		fclose(f);
	unlink(path);
	snprintf(path, sizeof(path), "%s/irqcost-summary.dat", dir);
	EXPECT(count_lines(path, &comments) == M, "summary: one row per mechanism");
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && line[0] == '#')
		;
	EXPECT(f && !strcmp(line, "tasklet 6.0000 6.0000 9.0000 6.0000 6.0000 9.0000 6.0000 6.0000 9.0000\n"),
	       "summary row: %s", line);
	if (f)
		fclose(f);
	unlink(path);
	rmdir(dir);
}
