/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The arithmetic of the interrupt-cost benchmark (seed 001, section V-B-2,
 * Hoefler & Lumsdaine): robust summaries of repeated measurements and the
 * time an interrupt steals from the computation. Pure functions, unit-tested.
 */
#ifndef IRQCOST_STATS_H
#define IRQCOST_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Median, quartiles and extremes of a sample. */
struct summary {
	size_t n;
	double min, q1, median, q3, max;
};

/*
 * Summarise @n values of @x (not modified). Quartiles interpolate linearly
 * between order statistics (type 7 of Hyndman & Fan, R's default). n = 0
 * gives all NaN.
 */
struct summary summarize(const double *x, size_t n);

/*
 * Added time per interrupt on one core, in the unit of @t1/@t2:
 * (t2 - t1) / irqs, where t1 is the workload's time without and t2 with
 * the interrupt source, and irqs the interrupts the module counted on that
 * core while t2 ran. NaN if irqs is 0.
 */
double overhead_per_irq(double t1, double t2, uint64_t irqs);

/*
 * The seed's aggregate: t1 = sum(t1^i)/c, t2 = sum(t2^i)/c over the c
 * cores, t = t2 - t1, and the CPU overhead per interrupt per core
 * t / j * c, with j the interrupts of stage 2. In the paper one RTC
 * interrupt source served all cores and j was estimated as t2 * f; here
 * every core has its own source and j is the sum of the module's counts
 * over the c cores, which reduces to the same quantity: the total stolen
 * time c * t divided by the total number of interrupts. NaN if c or j is 0.
 */
double seed_overhead(const double *t1, const double *t2, size_t c, uint64_t j);

/*
 * @x / @ref, the cost of a mechanism relative to the reference one
 * measured in the same run. NaN when @ref <= 0 (no measurable reference
 * cost: a ratio would be meaningless) or either is NaN.
 */
double overhead_ratio(double x, double ref);

/* j as the paper estimated it for one source at @hz: t2 * f. */
double seed_irq_estimate(double t2, double hz);

#endif
