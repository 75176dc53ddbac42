// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Wait-state profiler statistics: see waitprof_stats.h. An open-addressed
 * table, fixed when the profiler starts: a profile must not allocate on
 * the calls it measures. Once it is 3/4 full, new (fn, site, class)
 * triples go to the triple's site-0 cell, so nothing is dropped, only
 * merged (the report says so).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "waitprof_stats.h"

static const char *const names[KP_WP_NFN] = {
	"MPI_Recv", "MPI_Wait", "MPI_Waitall", "MPI_Ssend", "MPI_Allreduce", "MPI_Alltoall",
	"MPI_Alltoallv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Barrier", "MPI_Wait(nbc)",
	"MPI_Waitall(nbc)",
};

const char *kp_wp_fn_name(int fn)
{
	return fn >= 0 && fn < KP_WP_NFN ? names[fn] : "?";
}

int kp_wp_table_init(struct kp_wp_table *t, unsigned int cap)
{
	t->cap = cap;
	t->used = 0;
	t->cells = calloc(cap, sizeof(*t->cells));
	return t->cells ? 0 : -1;
}

void kp_wp_table_free(struct kp_wp_table *t)
{
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

static unsigned int hash(int fn, uint64_t site, int cls)
{
	uint64_t h = site * 0x9e3779b97f4a7c15ull ^ ((uint64_t)fn << 40) ^ ((uint64_t)cls << 32);

	return (unsigned int)(h ^ (h >> 29));
}

static struct kp_wp_cell *find(struct kp_wp_table *t, int fn, uint64_t site, int cls, bool add)
{
	unsigned int i = hash(fn, site, cls) & (t->cap - 1), n;
	struct kp_wp_cell *c;

	for (n = 0; n < t->cap; n++, i = (i + 1) & (t->cap - 1)) {
		c = &t->cells[i];
		if (!c->used) {
			if (!add)
				return NULL;
			c->used = true;
			c->fn = fn;
			c->cls = cls;
			c->site = site;
			c->min = INFINITY;
			c->tmin = UINT64_MAX;
			t->used++;
			return c;
		}
		if (c->fn == fn && c->cls == cls && c->site == site)
			return c;
	}
	return NULL;
}

struct kp_wp_cell *kp_wp_record(struct kp_wp_table *t, int fn, uint64_t site, uint64_t bytes,
				double d)
{
	int cls = kp_wp_class(bytes);
	struct kp_wp_cell *c = find(t, fn, site, cls, false);

	if (!c)
		c = find(t, fn, t->used * 4 < t->cap * 3 ? site : 0, cls, true);
	if (!c)
		return NULL;	/* only if cap is tiny: 3/4 rule leaves room */
	c->n++;
	c->sum += d;
	if (d < c->min)
		c->min = d;
	return c;
}

void kp_wp_fold(struct kp_wp_table *t)
{
	unsigned int i;

	for (i = 0; i < t->cap; i++) {
		struct kp_wp_cell *c = &t->cells[i];

		if (!c->used)
			continue;
		c->sum += (double)c->tsum;
		if (c->tmin != UINT64_MAX && (double)c->tmin < c->min)
			c->min = (double)c->tmin;
		c->ls_exact += (double)c->ls_ns * 1e-9;
		c->tsum = 0;
		c->tmin = UINT64_MAX;
		c->ls_ns = 0;
	}
}

void kp_wp_local_min(const struct kp_wp_table *t, double mins[KP_WP_NFN][KP_WP_NCLASS])
{
	unsigned int i;
	int f, s;

	for (f = 0; f < KP_WP_NFN; f++)
		for (s = 0; s < KP_WP_NCLASS; s++)
			mins[f][s] = INFINITY;
	for (i = 0; i < t->cap; i++) {
		const struct kp_wp_cell *c = &t->cells[i];

		if (c->used && c->n && c->min < mins[c->fn][c->cls])
			mins[c->fn][c->cls] = c->min;
	}
}
