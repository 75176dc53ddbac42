// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Statistics and overhead formulas of the interrupt-cost benchmark. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "irqcost_stats.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Quantile @p of sorted @s[0..n-1], linear interpolation (type 7). */
static double quantile(const double *s, size_t n, double p)
{
	double h = (double)(n - 1) * p;
	size_t lo = (size_t)floor(h);

	if (lo + 1 >= n)
		return s[n - 1];
	return s[lo] + (h - (double)lo) * (s[lo + 1] - s[lo]);
}

struct summary summarize(const double *x, size_t n)
{
	struct summary r = { .n = n, .min = NAN, .q1 = NAN, .median = NAN,
			     .q3 = NAN, .max = NAN };
	double *s;

	if (!n)
		return r;
	s = malloc(n * sizeof(*s));
	if (!s)
		abort();
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	r.min = s[0];
	r.q1 = quantile(s, n, 0.25);
	r.median = quantile(s, n, 0.5);
	r.q3 = quantile(s, n, 0.75);
	r.max = s[n - 1];
	free(s);
	return r;
}

double overhead_per_irq(double t1, double t2, uint64_t irqs)
{
	return irqs ? (t2 - t1) / (double)irqs : NAN;
}

double seed_overhead(const double *t1, const double *t2, size_t c, uint64_t j)
{
	double s1 = 0, s2 = 0;
	size_t i;

	if (!c || !j)
		return NAN;
	for (i = 0; i < c; i++) {
		s1 += t1[i];
		s2 += t2[i];
	}
	return (s2 / (double)c - s1 / (double)c) / (double)j * (double)c;
}

double seed_irq_estimate(double t2, double hz)
{
	return t2 * hz;
}

double overhead_ratio(double x, double ref)
{
	if (isnan(x) || isnan(ref) || ref <= 0)
		return NAN;
	return x / ref;
}
