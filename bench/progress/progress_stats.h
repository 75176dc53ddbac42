/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/progress_stats.h: the arithmetic of bench/progress that does not
 * need MPI (percentiles, workload calibration, latency histogram bins,
 * time-left estimate), kept apart so bench/test_progress.c can test it.
 */
#ifndef PROGRESS_STATS_H
#define PROGRESS_STATS_H

#include <stdint.h>

struct summary {
	int n;
	double min, q1, med, q3, p90, p99, max, mean;
};

/*
 * Percentile @p (0..100) of @n ascending values, linear interpolation
 * between the two nearest ranks (rank = p/100 * (n - 1)); NAN if n == 0.
 */
double pct_sorted(const double *v, int n, double p);

/* Sorts @v in place (ascending) and fills @s; all NAN if n == 0. */
void summarize(double *v, int n, struct summary *s);

/*
 * Work-based scheme (seed V-B-3): the next workload size when @lambda
 * units took @measured and the target is @target (same unit). Scales
 * proportionally, by at most 4x either way per step, at least 1 unit.
 */
uint64_t calib_next(uint64_t lambda, double measured, double target);

/* |measured - target| <= tol * target */
int calib_close(double measured, double target, double tol);

/*
 * Latency histogram: HIST_PER_OCTAVE logarithmic bins per factor 2,
 * bin 0 = [0, 1 us), bin b >= 1 = [2^((b-1)/HIST_PER_OCTAVE),
 * 2^(b/HIST_PER_OCTAVE)) us, the last bin open-ended.
 */
#define HIST_PER_OCTAVE 4
#define HIST_BINS (1 + 30 * HIST_PER_OCTAVE)	/* up to ~1000 s */
int hist_bin(double us);
double hist_lo(int bin);	/* lower edge in us */
double hist_hi(int bin);	/* upper edge in us (INFINITY for the last) */

/*
 * Seconds left: the work done so far was predicted at @pred_done units
 * and took @elapsed seconds; @pred_left units remain. Negative if unknown.
 */
double eta_left(double elapsed, double pred_done, double pred_left);

#endif
