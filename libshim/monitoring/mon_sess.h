/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Monitoring sessions (seed 002, section 4): the state machine and the
 * counting of one process, without MPI, so that it is unit-tested natively.
 *
 * The sources (mon_src.c) give cumulative counters per world rank, per
 * class of traffic and kind (messages, bytes): a struct kp_mcount. A
 * session keeps, per rank of its communicator, the counters seen when it
 * last became active (base) and what it accumulated over its active
 * stretches (acc); suspend adds cur - base to acc.
 */
#ifndef KPROG_MON_SESS_H
#define KPROG_MON_SESS_H

#include <stdint.h>
#include <stddef.h>

enum { KP_MC_P2P, KP_MC_COLL, KP_MC_OSC, KP_MC_NCLASS };
enum { KP_MK_COUNT, KP_MK_SIZE, KP_MK_NKIND };

/* Cumulative counters: v[class][kind][world rank]. */
struct kp_mcount {
	int world;
	uint64_t *v;
};

static inline uint64_t *kp_mcount_at(const struct kp_mcount *c, int cls, int kind, int w)
{
	return &c->v[((size_t)cls * KP_MK_NKIND + kind) * (size_t)c->world + (size_t)w];
}

enum kp_mstate { KP_MS_FREE, KP_MS_ACTIVE, KP_MS_SUSPENDED };

struct kp_msess {
	enum kp_mstate state;
	int size;		/* ranks of the session's communicator */
	int *c2w;		/* its rank -> world rank */
	uint64_t *base;		/* [class][kind][size] at the last start/continue */
	uint64_t *acc;		/* [class][kind][size] over the active stretches */
	void *priv;		/* the MPI side's (its communicator) */
};

/* 0 or -1 (no memory); takes c2w (malloc'd). */
int kp_msess_start(struct kp_msess *s, int size, int *c2w, const struct kp_mcount *cur);
void kp_msess_suspend(struct kp_msess *s, const struct kp_mcount *cur);
void kp_msess_continue(struct kp_msess *s, const struct kp_mcount *cur);
void kp_msess_reset(struct kp_msess *s);
void kp_msess_free(struct kp_msess *s);
/* Sums of the classes in flags (MPI_M_*_ONLY bits); out arrays of size, or NULL. */
void kp_msess_data(const struct kp_msess *s, int flags, unsigned long *counts,
		   unsigned long *sizes);

/*
 * File formats of MPI_M_flush (one process: "<rank> <peer> <count>
 * <bytes>" lines, see mon_file.c) and MPI_M_rootflush (a matrix: one
 * line per sending rank, n values separated by spaces).
 */
int kp_mfile_write_vector(const char *path, int rank, int n, const unsigned long *counts,
			  const unsigned long *sizes);
int kp_mfile_write_matrix(const char *path, int n, const unsigned long *m);
/* Reads a matrix written above; returns n, or -1. m: n * n values. */
int kp_mfile_read_matrix(const char *path, unsigned long *m, int max_n);

#endif
