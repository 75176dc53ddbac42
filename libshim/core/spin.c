// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Adaptive spin limit of blocking calls (see spin.h for the policy).
 */
#include "hot.h"
#include "spin.h"

void kp_spin_init(struct kp_spin *s, long fixed_us, long min_us, long max_us, long start_us)
{
	*s = (struct kp_spin){ 0 };
	if (fixed_us >= 0) {
		s->fixed = true;
		s->limit_ns = s->min_ns = s->max_ns = (uint64_t)fixed_us * 1000;
		return;
	}
	if (min_us < 0)
		min_us = 0;
	if (max_us < min_us)
		max_us = min_us;
	if (start_us < min_us)
		start_us = min_us;
	if (start_us > max_us)
		start_us = max_us;
	s->min_ns = s->amin_ns = (uint64_t)min_us * 1000;
	s->max_ns = s->amax_ns = (uint64_t)max_us * 1000;
	s->limit_ns = s->astart_ns = (uint64_t)start_us * 1000;
}

void kp_spin_dedicate(struct kp_spin *s, long dedicated_us)
{
	if (s->fixed || dedicated_us < 0)
		return;
	s->fixed = s->dedicated = true;
	s->limit_ns = s->min_ns = s->max_ns = s->dedicated_ns = (uint64_t)dedicated_us * 1000;
}

/* Wait as on an oversubscribed node: yielding, the oversubscribed limit. */
static void share(struct kp_spin *s)
{
	s->yield = true;
	if (s->oversub_us >= 0) {
		s->fixed = true;
		s->limit_ns = s->min_ns = s->max_ns = (uint64_t)s->oversub_us * 1000;
	} else {
		s->fixed = false;
		s->min_ns = s->amin_ns;
		s->max_ns = s->amax_ns;
		s->limit_ns = s->astart_ns;
	}
}

void kp_spin_oversub(struct kp_spin *s, long oversub_us, int job_ranks)
{
	if (s->fixed)
		return;		/* KPROG_SPIN_US */
	s->oversub = true;
	s->job_ranks = job_ranks;
	s->oversub_us = oversub_us;
	share(s);
}

void kp_spin_when_free(struct kp_spin *s, long alone_us)
{
	s->alone_ns = alone_us > 0 ? (uint64_t)alone_us * 1000 : 0;
}

void kp_spin_watch_start(struct kp_spin *s, long oversub_us, uint64_t now, uint64_t delay)
{
	if (!s->dedicated || delay == UINT64_MAX)
		return;
	s->oversub_us = oversub_us;
	s->watch_t = now;
	s->watch_delay = delay;
	s->watch_next = now + KP_SPIN_WATCH_NS;
}

void kp_spin_watch(struct kp_spin *s, uint64_t now, uint64_t delay)
{
	uint64_t dt = now - s->watch_t, dd;

	s->watch_next = now + KP_SPIN_WATCH_NS;
	if (delay == UINT64_MAX || delay < s->watch_delay || now <= s->watch_t)
		return;
	dd = delay - s->watch_delay;
	s->watch_t = now;
	s->watch_delay = delay;
	if (!s->crowded && dd * 100 > dt * KP_SPIN_CROWDED_PCT) {
		s->crowded = true;
		s->crowded_times++;
		share(s);
	} else if (s->crowded && dd * 100 < dt * KP_SPIN_CLEAR_PCT) {
		s->crowded = s->yield = false;
		s->fixed = true;
		s->limit_ns = s->min_ns = s->max_ns = s->dedicated_ns;
	}
}

void kp_spin_yielded(struct kp_spin *s, uint64_t before, uint64_t after, uint64_t delay_ns,
		     int runnable)
{
	s->yields++;
	if (after - before <= KP_SPIN_YIELD_LOST_NS ||
	    (delay_ns != UINT64_MAX && delay_ns <= KP_SPIN_YIELD_LOST_NS / 2))
		return;
	/* oversubscribed: the CPU went to one of our ranks (KP_SPIN_OWN) */
	if (KP_SPIN_OWN && s->oversub && runnable >= 0 && runnable <= s->job_ranks) {
		s->yields_own++;
		return;
	}
	s->yields_lost++;
	s->noyield_until = after + KP_SPIN_NOYIELD_NS;
}

static void set_limit(struct kp_spin *s, uint64_t v)
{
	if (v < s->min_ns)
		v = s->min_ns;
	if (v > s->max_ns)
		v = s->max_ns;
	if (v > s->limit_ns)
		s->grew++;
	else if (v < s->limit_ns)
		s->shrank++;
	s->limit_ns = v;
}

KP_HOT void kp_spin_record(struct kp_spin *s, uint64_t wait_ns, bool slept)
{
	s->waits++;
	if (slept)
		s->slept++;
	if (s->fixed)
		return;
	if (!slept) {
		/* covered: keep at least twice what it took */
		if (2 * wait_ns > s->limit_ns)
			set_limit(s, 2 * wait_ns);
		return;
	}
	/* it slept after spinning limit_ns, so wait_ns >= limit_ns */
	if (wait_ns <= s->max_ns)
		set_limit(s, 2 * wait_ns);	/* spinning would have been cheaper */
	else
		set_limit(s, s->limit_ns / 2);	/* long waits: sleep early */
}
