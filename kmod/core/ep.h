/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog endpoints: one per open file of /dev/kprog, a rank of a job once
 * joined. An endpoint is both a receiver (its matching queues) and the
 * owner of the operations it posted (their completions go to its ring).
 */
#ifndef _KPROG_EP_H
#define _KPROG_EP_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <linux/atomic.h>
#include <linux/xarray.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/timekeeping.h>
#include <linux/cpumask.h>
#include "ring.h"

struct kprog_job;

/**
 * struct kprog_ep - an endpoint
 * @ref: the file, operations, messages and lookups hold references
 * @join_lock: serialises JOINs of this endpoint's file: threads or forked
 *	processes sharing one fd may JOIN it at once, and only one may get
 *	past the "not joined yet" check and write @ring, @grants, @mm and
 *	@times (never taken by mmap, which holds mmap_lock, while JOIN
 *	faults under it)
 * @job: set once by JOIN (release), read with kprog_ep_job()
 * @rank: rank in @job
 * @mlock: protects the matching state below; taken with spin_lock_bh()
 *	because arrivals may come from a transport's softirq
 * @dead: left the job: nothing matches here any more
 * @posted: posted receives (struct kprog_op), in post order
 * @unexpected: arrived messages (struct kprog_msg), in arrival order
 * @mprobed: messages taken by a dequeuing probe, waiting for their receive
 * @eager_bytes: eager quota in use by buffered messages
 * @unexp_seq: bumped on every arrival into @unexpected and departure of a
 *	peer, for blocked probes
 * @olock: protects the owner state below and the ring's producer side;
 *	irq-safe, completions come from any context
 * @closed: the file is being released: completions are dropped
 * @ops: operations whose completion is pending
 * @overflow: completed operations whose completion waits for ring room
 * @nr_ops: receives holding a slot, at most kprog_max_ops (more only by
 *	receives that took a message already held here, see
 *	kprog_match_recv())
 * @nr_rndv: rendezvous sends waiting for their receiver or transfer, at
 *	most kprog_max_rndv
 * @iov_total: their iovec entries, at most kprog_max_iov_total
 * @xfers: transfers that may touch this endpoint's memory
 * @ring: the completion ring
 * @wq: ring waiters, blocked probes, quiesce
 * @events: what a user-space matcher must look at (arrivals into
 *	@unexpected, departures, channels, kicks); published in the ring
 * @chans: fast-path channels by peer rank (chan.c), each referenced
 * @nr_chans: entries in @chans, at most kprog_max_chans and the
 *	endpoint's share of chan_mem_mib (chan.c)
 * @times: joined with KPROG_JOIN_TIMES: its operations are timestamped
 * @grants: its grant table (vmalloc_user(), mapped by its process only;
 *	grant.c), set before JOIN publishes it, or NULL
 * @nr_grants: slots in @grants
 * @mm: the joining process's mm (mmgrab()ed with @grants): the address
 *	space of granted buffers
 * @coll_mutex: serialises the starts and withdrawals of steps of its
 *	collective schedules (coll.c) and their end against close
 * @coll_closed: closing: no schedule starts another step
 * @nr_colls: schedules running, at most kprog_max_colls; under
 *	@coll_mutex
 * @waiter_cpus: CPUs the endpoint's process may run on, as its tasks'
 *	allowed CPUs were at JOIN, WAIT and blocking posts (the calls of a
 *	waiting task): the ring's waiter_cpu hint is honoured only within
 *	them. Concurrent updates from threads of different masks may mix
 *	words of the two, never a CPU neither may use.
 */
struct kprog_ep {
	struct kref ref;
	struct mutex join_lock;	/* JOIN of one fd from many tasks */
	struct kprog_job *job;
	u32 rank;

	spinlock_t mlock;	/* matching state; bh-safe */
	bool dead;
	struct list_head posted;
	struct list_head unexpected;
	struct list_head mprobed;
	u64 eager_bytes;
	u32 unexp_seq;

	spinlock_t olock;	/* owner state and ring; irq-safe */
	bool closed;
	struct list_head ops;
	struct list_head overflow;
	u32 nr_ops;
	u32 nr_rndv;
	u32 iov_total;
	atomic_t xfers;

	struct kprog_ring ring;
	wait_queue_head_t wq;

	atomic_t events;
	struct xarray chans;
	u32 nr_chans;
	bool times;

	struct kprog_grant *grants;
	u32 nr_grants;
	struct mm_struct *mm;

	struct mutex coll_mutex;	/* schedules' steps */
	bool coll_closed;
	u32 nr_colls;
	cpumask_var_t waiter_cpus;
};

struct kprog_ep *kprog_ep_alloc(void);
void kprog_ep_put(struct kprog_ep *ep);
void kprog_ep_quiesce(struct kprog_ep *ep);
void kprog_ep_drop_grants(struct kprog_ep *ep);
void kprog_ep_note_cpus(struct kprog_ep *ep);
int kprog_ep_waiter_cpu(struct kprog_ep *ep);
int kprog_ep_other_cpu(struct kprog_ep *ep);
void kprog_ep_exit(void);

/**
 * kprog_ep_get() - take a reference on an endpoint
 * @ep: endpoint already referenced by the caller or protected by a lock
 */
static inline void kprog_ep_get(struct kprog_ep *ep)
{
	kref_get(&ep->ref);
}

/**
 * kprog_ep_put_not_last() - drop a reference unless it is the last one
 * @ep: endpoint
 *
 * For callers that cannot sleep (a transport's softirq handler): the last
 * reference frees the ring, so it must go through kprog_ep_put() where
 * sleeping is allowed.
 *
 * Return: true when the reference was dropped; false when it is the last
 * one, which the caller still holds.
 */
static inline bool kprog_ep_put_not_last(struct kprog_ep *ep)
{
	return refcount_dec_not_one(&ep->ref.refcount);
}

/**
 * kprog_ep_job() - the endpoint's job, or NULL before JOIN
 * @ep: endpoint
 *
 * Return: the job, fully set up.
 */
static inline struct kprog_job *kprog_ep_job(struct kprog_ep *ep)
{
	/* Pairs with the release in kprog_job_join(). */
	return smp_load_acquire(&ep->job);
}

/**
 * kprog_ep_xfer_get() - a transfer is about to touch @ep's memory
 * @ep: endpoint
 *
 * Pairs with the barrier in kprog_ep_quiesce(): either the departing
 * endpoint waits for the transfer, or the transfer sees @ep->dead before
 * it touches any page.
 */
static inline void kprog_ep_xfer_get(struct kprog_ep *ep)
{
	atomic_inc(&ep->xfers);
	/* The count before any later read of ep->dead. */
	smp_mb__after_atomic();
}

/**
 * kprog_ep_xfer_put() - a transfer no longer touches @ep's memory
 * @ep: endpoint
 *
 * Any context.
 */
static inline void kprog_ep_xfer_put(struct kprog_ep *ep)
{
	if (atomic_dec_and_test(&ep->xfers))
		wake_up(&ep->wq);
}

/**
 * kprog_ep_event() - tell a user-space matcher to look again, and wake it
 * @ep: joined endpoint
 *
 * Any context.
 */
static inline void kprog_ep_event(struct kprog_ep *ep)
{
	WRITE_ONCE(ep->ring.hdr->event_ns, ktime_get_ns());
	WRITE_ONCE(ep->ring.hdr->events, atomic_inc_return(&ep->events));
	/* Most events find nobody asleep: skip the queue's lock then. */
	if (wq_has_sleeper(&ep->wq))
		wake_up(&ep->wq);
}

/**
 * kprog_ep_gone() - has @ep left its job?
 * @ep: endpoint
 *
 * Lockless, for transfers checking between chunks.
 *
 * Return: true once departure began.
 */
static inline bool kprog_ep_gone(const struct kprog_ep *ep)
{
	return READ_ONCE(ep->dead);
}

#endif /* _KPROG_EP_H */
