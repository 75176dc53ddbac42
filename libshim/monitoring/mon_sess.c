// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Monitoring sessions: state changes and counting (see mon_sess.h). The
 * checks of the API (which state allows what, error codes) are in mon.c;
 * these functions assume a legal transition.
 */
#include <stdlib.h>
#include <string.h>
#include "mon_sess.h"

#define P2P 0x1		/* MPI_M_P2P_ONLY; the three flags are bits by class */

static size_t cells(const struct kp_msess *s)
{
	return (size_t)KP_MC_NCLASS * KP_MK_NKIND * (size_t)s->size;
}

static void snap(struct kp_msess *s, const struct kp_mcount *cur)
{
	int cls, kind, i;

	for (cls = 0; cls < KP_MC_NCLASS; cls++)
		for (kind = 0; kind < KP_MK_NKIND; kind++)
			for (i = 0; i < s->size; i++)
				s->base[((size_t)cls * KP_MK_NKIND + kind) * s->size + i] =
					*kp_mcount_at(cur, cls, kind, s->c2w[i]);
}

int kp_msess_start(struct kp_msess *s, int size, int *c2w, const struct kp_mcount *cur)
{
	memset(s, 0, sizeof(*s));
	s->size = size;
	s->c2w = c2w;
	s->base = calloc(cells(s), sizeof(uint64_t));
	s->acc = calloc(cells(s), sizeof(uint64_t));
	if (!s->base || !s->acc) {
		free(s->base);
		free(s->acc);
		memset(s, 0, sizeof(*s));
		return -1;
	}
	snap(s, cur);
	s->state = KP_MS_ACTIVE;
	return 0;
}

void kp_msess_suspend(struct kp_msess *s, const struct kp_mcount *cur)
{
	int cls, kind, i;
	size_t at;
	uint64_t now;

	for (cls = 0; cls < KP_MC_NCLASS; cls++)
		for (kind = 0; kind < KP_MK_NKIND; kind++)
			for (i = 0; i < s->size; i++) {
				at = ((size_t)cls * KP_MK_NKIND + kind) * s->size + i;
				now = *kp_mcount_at(cur, cls, kind, s->c2w[i]);
				/* A source that vanished (MPI_T session lost) adds nothing. */
				if (now > s->base[at])
					s->acc[at] += now - s->base[at];
			}
	s->state = KP_MS_SUSPENDED;
}

void kp_msess_continue(struct kp_msess *s, const struct kp_mcount *cur)
{
	snap(s, cur);
	s->state = KP_MS_ACTIVE;
}

void kp_msess_reset(struct kp_msess *s)
{
	memset(s->acc, 0, cells(s) * sizeof(uint64_t));
}

void kp_msess_free(struct kp_msess *s)
{
	free(s->c2w);
	free(s->base);
	free(s->acc);
	memset(s, 0, sizeof(*s));
}

void kp_msess_data(const struct kp_msess *s, int flags, unsigned long *counts,
		   unsigned long *sizes)
{
	int cls, i;

	for (i = 0; i < s->size; i++) {
		unsigned long c = 0, b = 0;

		for (cls = 0; cls < KP_MC_NCLASS; cls++) {
			if (!(flags & (P2P << cls)))
				continue;
			c += s->acc[((size_t)cls * KP_MK_NKIND + KP_MK_COUNT) * s->size + i];
			b += s->acc[((size_t)cls * KP_MK_NKIND + KP_MK_SIZE) * s->size + i];
		}
		if (counts)
			counts[i] = c;
		if (sizes)
			sizes[i] = b;
	}
}
