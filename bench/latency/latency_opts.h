/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/latency_opts.h: options of bench/latency, its --help text and the
 * batch plan; no MPI (unit-tested by test_latency.c).
 */
#ifndef LATENCY_OPTS_H
#define LATENCY_OPTS_H

#include <stdio.h>

#include "latency_stats.h"

enum { LAT_PINGPONG = 1, LAT_NPSCALE = 2, LAT_MSGRATE = 4 };

struct lat_opts {
	unsigned modes;			/* LAT_* */
	size_t pp_sizes[LAT_MAX_SIZES], np_sizes[LAT_MAX_SIZES], mr_sizes[LAT_MAX_SIZES];
	int n_pp, n_np, n_mr;
	/* ping-pong (pingpong mode): round trips per size */
	int iters, iters_large, warmup, warmup_large, batches;
	size_t large;			/* sizes above use the *_large counts */
	/* npscale: round trips per pair */
	int np_iters, np_warmup, np_batches;
	int concurrent;			/* npscale: also every pair at once */
	/* pingpong: batches with the shim's wait-state profiler off and on in turn */
	int waitprof_ab;
	/* msgrate */
	int window, loops, reps, mr_warmup, ack;
	double time_limit;		/* seconds per point (per pair); 0 none */
	const char *csv, *label;
	int help;
};

/* The defaults (see lat_usage). */
void lat_opts_default(struct lat_opts *o);

/*
 * Parse argv[1..argc-1] into @o (defaults first). Modes: positional words
 * or --mode, comma lists, "all". Returns 0, or -1 with a message in @err.
 * --help sets o->help and returns 0.
 */
int lat_parse_opts(int argc, char **argv, struct lat_opts *o, char *err, size_t errlen);

/* The --help text. */
void lat_usage(FILE *f, const char *prog);

/*
 * Round trips @iters split into @batches batches: *k round trips per
 * batch (>= 1) and *nb batches (<= @batches, >= 1). Total = k * nb <=
 * iters (at least 1).
 */
void lat_batch_plan(int iters, int batches, int *k, int *nb);

#endif
