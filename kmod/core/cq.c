// SPDX-License-Identifier: GPL-2.0
/*
 * kprog completions: an endpoint's operations complete into its ring, or
 * onto its overflow list while the ring is full (nothing is ever
 * dropped while the endpoint is open), and its process waits for them.
 * Completion may happen in any context.
 */
#include <linux/poll.h>
#include <linux/hrtimer.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "stats.h"
#include "kprog_trace.h"

/**
 * kprog_cqe_fill() - build a completion entry
 * @c: the entry
 * @req_id: the operation's cookie
 * @source: rank of the sender (receive) or of the peer (send)
 * @tag: tag of the message
 * @bytes: bytes moved
 * @err: 0 or a negative errno; -ECANCELED also sets KPROG_CQE_CANCELLED
 */
void kprog_cqe_fill(struct kprog_cqe *c, u64 req_id, s32 source, s32 tag,
		    u64 bytes, int err)
{
	memset(c, 0, sizeof(*c));
	c->req_id = req_id;
	c->bytes = bytes;
	c->source = source;
	c->tag = tag;
	c->error = err;
	if (err == -ECANCELED)
		c->flags = KPROG_CQE_CANCELLED;
}

/**
 * kprog_op_complete() - deliver the completion of an active operation
 * @op: operation; nothing happens unless it is on its owner's ops list
 * @cqe: its completion
 *
 * Writes @cqe to the owner's ring, or keeps it on the overflow list while
 * the ring is full; drops it if the owner is closed. Any context.
 */
void kprog_op_complete(struct kprog_op *op, const struct kprog_cqe *cqe)
{
	struct kprog_ep *ep = op->owner;
	unsigned long flags;
	bool put = true;
	int where;

	spin_lock_irqsave(&ep->olock, flags);
	if (op->olist != KPROG_OL_ACTIVE) {
		spin_unlock_irqrestore(&ep->olock, flags);
		return;
	}
	list_del_init(&op->onode);
	if (op->divert) {
		/* A step of a collective: its schedule decides what follows. */
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
		spin_unlock_irqrestore(&ep->olock, flags);
		op->divert(op, cqe);
		return;
	}
	if (ep->closed) {
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
		where = KPROG_WHERE_DROPPED;
	} else if (list_empty(&ep->overflow) && kprog_ring_room(&ep->ring)) {
		/* Counted before user space can see it. */
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		kprog_ring_write(&ep->ring, cqe, &op->times);
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
		where = KPROG_WHERE_RING;
	} else {
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		/* The op keeps its slot, which bounds the overflow list. */
		op->cqe = *cqe;
		list_add_tail(&op->onode, &ep->overflow);
		op->olist = KPROG_OL_OVERFLOW;
		kprog_ring_set_overflow(&ep->ring, true);
		put = false;
		where = KPROG_WHERE_OVERFLOW;
	}
	spin_unlock_irqrestore(&ep->olock, flags);
	trace_kprog_complete(ep->job->key, ep->rank, cqe, where);
	/* wq_has_sleeper() orders the ring update before its check. */
	if (wq_has_sleeper(&ep->wq)) {
		kprog_stat_add(KPROG_STAT_WAKEUPS, 1);
		wake_up(&ep->wq);
	}
	if (put)
		kprog_op_put(op);
}

/**
 * kprog_cq_flush() - move overflowed completions into the ring
 * @ep: joined endpoint
 *
 * Process context.
 */
void kprog_cq_flush(struct kprog_ep *ep)
{
	struct kprog_op *op, *tmp;
	unsigned long flags;
	LIST_HEAD(done);

	if (list_empty_careful(&ep->overflow))
		return;
	spin_lock_irqsave(&ep->olock, flags);
	while (!list_empty(&ep->overflow) && kprog_ring_room(&ep->ring)) {
		op = list_first_entry(&ep->overflow, struct kprog_op, onode);
		kprog_ring_write(&ep->ring, &op->cqe, &op->times);
		list_move_tail(&op->onode, &done);
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
	}
	if (list_empty(&ep->overflow))
		kprog_ring_set_overflow(&ep->ring, false);
	spin_unlock_irqrestore(&ep->olock, flags);

	if (list_empty(&done))
		return;
	wake_up(&ep->wq);
	list_for_each_entry_safe(op, tmp, &done, onode) {
		list_del_init(&op->onode);
		kprog_op_put(op);
	}
}

/**
 * kprog_cq_holds() - is a completion for @req_id waiting to be consumed?
 * @ep: endpoint; caller holds ep->olock
 * @req_id: cookie
 *
 * Return: true if the overflow list or an unconsumed ring slot has it.
 */
bool kprog_cq_holds(struct kprog_ep *ep, u64 req_id)
{
	struct kprog_op *op;

	lockdep_assert_held(&ep->olock);
	list_for_each_entry(op, &ep->overflow, onode)
		if (op->cqe.req_id == req_id)
			return true;
	return kprog_ring_find(&ep->ring, req_id);
}

/**
 * kprog_cq_close() - stop delivering completions of a departing endpoint
 * @ep: endpoint whose file is released
 *
 * Completions from now on are dropped; held-back ones are released.
 */
void kprog_cq_close(struct kprog_ep *ep)
{
	struct kprog_op *op, *tmp;
	unsigned long flags;
	LIST_HEAD(q);

	spin_lock_irqsave(&ep->olock, flags);
	ep->closed = true;
	list_splice_init(&ep->overflow, &q);
	list_for_each_entry(op, &q, onode) {
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
	}
	spin_unlock_irqrestore(&ep->olock, flags);
	list_for_each_entry_safe(op, tmp, &q, onode) {
		list_del_init(&op->onode);
		kprog_op_put(op);
	}
}

/* Lock-free wake-up test; the caller re-checks after flushing. */
static bool kprog_cq_ready(struct kprog_ep *ep, bool on_events, u32 events)
{
	return kprog_ring_nonempty(&ep->ring) ||
	       !list_empty_careful(&ep->overflow) ||
	       (on_events && (u32)atomic_read(&ep->events) != events);
}

/**
 * kprog_cq_wait() - KPROG_IOC_WAIT
 * @ep: joined endpoint
 * @timeout_ns: < 0 forever, 0 flush only, > 0 limit
 * @on_events: also return when the endpoint's event count is not @events
 * @events: the count the caller has seen
 *
 * Return: 0, -ETIMEDOUT or -EINTR.
 */
int kprog_cq_wait(struct kprog_ep *ep, s64 timeout_ns, bool on_events,
		  u32 events)
{
	ktime_t deadline = 0;
	long ret;

	if (timeout_ns > 0)
		deadline = ktime_add_safe(ktime_get(), ns_to_ktime(timeout_ns));
	for (;;) {
		kprog_cq_flush(ep);
		if (!timeout_ns || kprog_ring_nonempty(&ep->ring) ||
		    (on_events && (u32)atomic_read(&ep->events) != events))
			return 0;
		if (timeout_ns < 0) {
			ret = wait_event_interruptible
				(ep->wq, kprog_cq_ready(ep, on_events, events));
		} else {
			ktime_t left = ktime_sub(deadline, ktime_get());

			if (left <= 0)
				return -ETIMEDOUT;
			ret = wait_event_interruptible_hrtimeout
				(ep->wq, kprog_cq_ready(ep, on_events, events),
				 left);
			if (ret == -ETIME)
				return -ETIMEDOUT;
		}
		if (ret)
			return -EINTR;
	}
}

/**
 * kprog_cq_poll() - poll() on an endpoint
 * @ep: endpoint
 * @file: its file
 * @wait: poll table
 *
 * Return: EPOLLIN when the ring holds a completion; EPOLLERR before JOIN.
 */
__poll_t kprog_cq_poll(struct kprog_ep *ep, struct file *file,
		       struct poll_table_struct *wait)
{
	if (!kprog_ep_job(ep))
		return EPOLLERR;
	poll_wait(file, &ep->wq, wait);
	kprog_cq_flush(ep);
	return kprog_ring_nonempty(&ep->ring) ? EPOLLIN | EPOLLRDNORM : 0;
}
