/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The wait-state profiler's hooks (waitprof.c has the profiler and its
 * report): what an MPI entry point of the shim calls around its own work
 * when the profiler is on, kp_wp_enter() before and kp_wp_leave() (or
 * kp_wp_leave_recv()) after. The entry points live with the calls they
 * make (MPI_Recv and MPI_Ssend in p2p.c, MPI_Wait and MPI_Waitall in
 * wait.c, the all-to-all collectives in coll/coll_blocking.c); they
 * include this header, and the profiler calls none of them.
 *
 *	if (kp_wp_profiling())
 *		kp_wp_enter(&w, __builtin_return_address(0), KP_WP_RECV);
 *	rc = ...the call itself...;
 *	if (kp_wp_profiling())
 *		kp_wp_leave_recv(&w, bytes);
 */
#ifndef KP_WAITPROF_HOOKS_H
#define KP_WAITPROF_HOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <mpi.h>
#include "shim.h"
#include "waitprof_stats.h"

struct kp_wp_call {
	uint64_t site;
	uint64_t t0;		/* ticks */
	/*
	 * The site's most recent cell and the bytes it was last used for,
	 * looked up by kp_wp_enter(), so that the call's end, between the message's
	 * arrival and the caller's next send, has one compare left to make.
	 * NULL: none cached.
	 */
	struct kp_wp_cell *cell;
	uint64_t bytes;
};

/* Off (KPROG_WAITPROF unset, or the nowp build): one test of a byte. */
static inline bool kp_wp_profiling(void)
{
#ifdef KP_NO_WAITPROF
	return false;
#else
	return kp_wp_on;
#endif
}

/*
 * The cells of the last few (call site, bytes) per function, most used
 * first (waitprof.c says why); kp_wp_record_new() fills them on a miss.
 */
#define KP_WP_RECENT 4
struct kp_wp_recent {
	struct kp_wp_cell *cell;
	uint64_t bytes;
};
extern struct kp_wp_recent kp_wp_recent[KP_WP_NFN][KP_WP_RECENT];
struct kp_wp_cell *kp_wp_record_new(const struct kp_wp_call *w, int fn, uint64_t bytes,
				    uint64_t d);

/*
 * enter() and leave() are forced inline: a profiled 8-byte MPI_Recv
 * costs about a microsecond in the test VM, and a call and return
 * there are two translation-block lookups of the emulator.
 */
static inline __attribute__((always_inline)) void kp_wp_enter(struct kp_wp_call *w, void *site, int fn)
{
	const struct kp_wp_recent *r = kp_wp_recent[fn];
	int i;

	w->site = (uintptr_t)site;
	w->cell = NULL;
	for (i = 0; i < KP_WP_RECENT && r[i].cell; i++)
		if (r[i].cell->site == w->site) {
			w->cell = r[i].cell;
			w->bytes = r[i].bytes;
			break;
		}
	w->t0 = kp_ticks();
	/* An outer profiled call keeps the kernel's times of nested ones. */
	if (!kp_wp_cur) {
		kp_wp_cur = w;
		kp_wp_t0 = w->t0;
		kp_wp_t1 = 0;	/* kp_wp_t1_stamp is read only with it */
		kp_wp_ls_n = 0;
		kp_wp_ls_ns = 0;
	}
}

/* The cached cell of (site, bytes) or of bytes' class at site, or NULL. */
static inline __attribute__((always_inline)) struct kp_wp_cell *kp_wp_recent_find(int fn, uint64_t site,
										   uint64_t bytes)
{
	struct kp_wp_recent *r = kp_wp_recent[fn];
	int i;

	for (i = 0; i < KP_WP_RECENT && r[i].cell; i++) {
		struct kp_wp_cell *c = r[i].cell;

		if (c->site == site && (r[i].bytes == bytes || c->cls == kp_wp_class(bytes))) {
			if (i) {	/* one step to the front */
				struct kp_wp_recent t = r[i - 1];

				r[i - 1] = r[i];
				r[i] = t;
			}
			return c;
		}
	}
	return NULL;
}

static inline __attribute__((always_inline)) void kp_wp_leave(struct kp_wp_call *w, int fn, uint64_t bytes)
{
	bool outer = kp_wp_cur == w;
	/* a receive the channel spin completed: its clock read is the end */
	uint64_t end = outer && fn == KP_WP_RECV && kp_wp_t1 ? kp_wp_t1 : kp_ticks();
	uint64_t d = end - w->t0;	/* in ticks until the report */
	struct kp_wp_cell *c = w->cell;

	/* as enter() guessed (the same bytes as last time), else look again */
	if (__builtin_expect(!c || w->bytes != bytes, 0))
		c = kp_wp_recent_find(fn, w->site, bytes);
	if (__builtin_expect(c != NULL, 1))
		kp_wp_add(c, d);
	else
		c = kp_wp_record_new(w, fn, bytes, d);
	if (!outer)
		return;
	kp_wp_cur = NULL;
	if (c && kp_wp_ls_n) {
		c->ls_n += kp_wp_ls_n;
		c->ls_ns += kp_wp_ls_ns;	/* seconds at kp_wp_fold() */
	}
}

/*
 * MPI_Recv's leave(). The common case, an outer call a channel spin
 * completed with the message of the cell enter() guessed, takes no branch
 * but one: in the VM every conditional jump ends a translated block, and
 * an 8-byte MPI_Recv cost 99 ns more profiled with the Late Sender and
 * the cell update done by branching code, 25 ns without either
 * (bench/run-waitprof --shims, 2026-11-24). Its exact Late Sender comes
 * from the send stamp the spin left in kp_wp_t1_stamp (0: none).
 */
static inline __attribute__((always_inline)) void kp_wp_leave_recv(struct kp_wp_call *w, uint64_t bytes)
{
	struct kp_wp_cell *c = w->cell;
	uint32_t stamp = kp_wp_t1_stamp;
	uint64_t d, send, late, has;

	if (__builtin_expect(kp_wp_cur != w || !kp_wp_t1 || !c || w->bytes != bytes, 0)) {
		if (kp_wp_t1) {	/* charged to the call in progress, outer or not */
			int64_t ls = kp_stamp_late_ns(stamp, kp_wp_t0, kp_wp_t1);

			if (ls >= 0)
				kp_wp_late((uint64_t)ls);
		}
		kp_wp_leave(w, KP_WP_RECV, bytes);
		return;
	}
	d = kp_wp_t1 - w->t0;
	c->n++;
	c->tsum += d;
	c->tmin = d < c->tmin ? d : c->tmin;
	send = kp_stamp_tick(stamp, kp_wp_t1);
	late = send > w->t0 ? send - w->t0 : 0;
	has = stamp != 0;
	c->ls_n += kp_wp_ls_n + has;
	c->ls_ns += kp_wp_ls_ns + (kp_ticks_ns(late) & -has);	/* seconds at kp_wp_fold() */
	kp_wp_cur = NULL;
}

/* Bytes received: Open MPI's status keeps them (the shim fills it too). */
static inline uint64_t kp_wp_status_bytes(const MPI_Status *st)
{
	return st->_ucount;
}

static inline uint64_t kp_wp_type_bytes(int count, MPI_Datatype type)
{
	int size = 0;

	if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS)
		return 0;
	return (uint64_t)count * (uint64_t)size;
}

#endif
