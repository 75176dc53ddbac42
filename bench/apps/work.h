/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * work.h - the fixed computation of bench/apps' stand-ins (halo, grid).
 *
 * A fixed amount of work, not a time: a rank that loses its CPU to
 * progression or to another rank shows it as a longer compute phase.
 */
#ifndef KPROG_BENCH_APPS_WORK_H
#define KPROG_BENCH_APPS_WORK_H

static volatile double work_sink;

static inline void compute(long work)
{
	double a = 1.0, b = 1.000001;
	long i;

	for (i = 0; i < work * 200; i++)
		a = a * b + 1e-9;
	work_sink = a;
}

#endif
