/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Wait-state profiler statistics (seed 003, section 3), without MPI so
 * that they are unit-tested natively: per (MPI function, call site,
 * logarithmic message-size class) a call count, the summed duration and
 * the minimum duration; the minimum over call sites M_p(f, s); the
 * waiting time of a call site, sum_s [sum d - n * M(f, s)]; and beside it
 * the Late Sender time kprog's kernel measured for the same calls.
 */
#ifndef KPROG_WAITPROF_STATS_H
#define KPROG_WAITPROF_STATS_H

#include <stdint.h>
#include <stdbool.h>

enum kp_wp_fn {
	KP_WP_RECV, KP_WP_WAIT, KP_WP_WAITALL, KP_WP_SSEND,		/* local minimum */
	KP_WP_ALLREDUCE, KP_WP_ALLTOALL, KP_WP_ALLTOALLV, KP_WP_ALLGATHER,
	KP_WP_ALLGATHERV, KP_WP_BARRIER,				/* global minimum */
	KP_WP_WAIT_NBC, KP_WP_WAITALL_NBC,	/* waits on kprog's nonblocking collectives */
	KP_WP_NFN
};
#define KP_WP_FIRST_NXN KP_WP_ALLREDUCE
#define KP_WP_NCLASS 48		/* class 0: 0 bytes; c >= 1: [2^(c-1), 2^c) */

const char *kp_wp_fn_name(int fn);
/* Size class of a message of bytes (inline: the profiled calls' hot path). */
static inline int kp_wp_class(uint64_t bytes)
{
	int c = bytes ? 64 - __builtin_clzll(bytes) : 0;	/* bit length */

	return c < KP_WP_NCLASS ? c : KP_WP_NCLASS - 1;
}

struct kp_wp_cell {
	uint64_t site;		/* call site (return address), 0 = slot of an overflow */
	uint16_t fn, cls;
	bool used;
	uint64_t n;
	double sum, min;	/* seconds */
	uint64_t ls_n;		/* completed receives with kernel times */
	double ls_exact;	/* their summed Late Sender time, seconds */
	/*
	 * The profiled calls' hot path adds integers only (floating point is
	 * a helper call per operation under emulation, the test VM): ticks
	 * and nanoseconds here, folded into sum, min and ls_exact by
	 * kp_wp_fold() before any statistics are read.
	 */
	uint64_t tsum, tmin;	/* ticks; tmin UINT64_MAX while none */
	uint64_t ls_ns;
};

struct kp_wp_table {
	unsigned int cap;	/* power of two */
	unsigned int used;
	struct kp_wp_cell *cells;
};

int kp_wp_table_init(struct kp_wp_table *t, unsigned int cap);
void kp_wp_table_free(struct kp_wp_table *t);
/* Records one call; returns its cell (for the kernel's Late Sender). */
struct kp_wp_cell *kp_wp_record(struct kp_wp_table *t, int fn, uint64_t site, uint64_t bytes,
				double d);
/* One more call of d ticks on cell c (the hot path: integers only). */
static inline void kp_wp_add(struct kp_wp_cell *c, uint64_t d)
{
	c->n++;
	c->tsum += d;
	if (d < c->tmin)
		c->tmin = d;
}
/* Fold the integer sums into sum, min and ls_exact (before reading them). */
void kp_wp_fold(struct kp_wp_table *t);
/* mins[fn][cls]: minimum over the table's call sites (INFINITY if none). */
void kp_wp_local_min(const struct kp_wp_table *t, double mins[KP_WP_NFN][KP_WP_NCLASS]);
/* Waiting time of one cell given the minimum of its (fn, cls). */
static inline double kp_wp_wait(const struct kp_wp_cell *c, double min)
{
	double w = c->sum - (double)c->n * min;

	return w > 0 ? w : 0;
}

#endif
