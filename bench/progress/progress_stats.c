// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/progress_stats.c: percentiles, calibration steps, histogram bins.
 */
#include "progress_stats.h"

#include <math.h>
#include <stdlib.h>

double pct_sorted(const double *v, int n, double p)
{
	double r, f;
	int i;

	if (n <= 0)
		return NAN;
	if (p <= 0)
		return v[0];
	if (p >= 100)
		return v[n - 1];
	r = p / 100.0 * (n - 1);
	i = (int)r;
	f = r - i;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + f * (v[i + 1] - v[i]);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void summarize(double *v, int n, struct summary *s)
{
	double sum = 0;

	s->n = n;
	if (n <= 0) {
		s->min = s->q1 = s->med = s->q3 = s->p90 = s->p99 = s->max = s->mean = NAN;
		return;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	for (int i = 0; i < n; i++)
		sum += v[i];
	s->min = v[0];
	s->max = v[n - 1];
	s->q1 = pct_sorted(v, n, 25);
	s->med = pct_sorted(v, n, 50);
	s->q3 = pct_sorted(v, n, 75);
	s->p90 = pct_sorted(v, n, 90);
	s->p99 = pct_sorted(v, n, 99);
	s->mean = sum / n;
}

uint64_t calib_next(uint64_t lambda, double measured, double target)
{
	double next;

	if (lambda == 0)
		lambda = 1;
	if (!(measured > 0))	/* too fast to see (or NAN): grow as much as allowed */
		return lambda * 4;
	next = (double)lambda * target / measured;
	if (next > (double)lambda * 4)
		next = (double)lambda * 4;
	if (next < (double)lambda / 4)
		next = (double)lambda / 4;
	if (next < 1)
		next = 1;
	return (uint64_t)llround(next);
}

int calib_close(double measured, double target, double tol)
{
	return fabs(measured - target) <= tol * target;
}

int hist_bin(double us)
{
	int b;

	if (!(us >= 1))		/* also NAN and negatives */
		return 0;
	b = 1 + (int)floor(log2(us) * HIST_PER_OCTAVE);
	return b >= HIST_BINS ? HIST_BINS - 1 : b;
}

double hist_lo(int bin)
{
	return bin <= 0 ? 0 : exp2((double)(bin - 1) / HIST_PER_OCTAVE);
}

double hist_hi(int bin)
{
	return bin >= HIST_BINS - 1 ? INFINITY : exp2((double)bin / HIST_PER_OCTAVE);
}

double eta_left(double elapsed, double pred_done, double pred_left)
{
	if (!(pred_done > 0) || elapsed < 0)
		return -1;
	return elapsed / pred_done * pred_left;
}
