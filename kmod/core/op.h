/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog operations: a send or receive posted by a local endpoint whose
 * completion goes to that endpoint's ring.
 *
 * Life of an operation (see docs/DESIGN.md for the diagram):
 *   NEW      created by a post; a rendezvous send is charged one of the
 *            owner's max_rndv descriptors, a receive one of its max_ops
 *            slots once it is matched or posted (see kprog_op_budget)
 *   POSTED   receive: in owner->posted waiting for a message;
 *            rendezvous send: its message waits at the receiver
 *   MATCHED  receive: a transfer moves the data in; send: the receiver
 *            pulls the data (the transfer ends with a FIN for the send)
 *   DONE     completed or withdrawn; its completion was written to the
 *            ring, kept on the overflow list, or dropped (owner closed)
 * Eager sends never become operations: their data travels in the message.
 */
#ifndef _KPROG_OP_H
#define _KPROG_OP_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/refcount.h>
#include <linux/lockdep.h>
#include <linux/kprog.h>
#include "umem.h"
#include "ep.h"

struct kprog_msg;
struct kprog_sched;
struct file;
struct poll_table_struct;

/**
 * enum kprog_op_state - see the life of an operation above
 * @KPROG_OP_NEW: not yet visible to anybody
 * @KPROG_OP_POSTED: waiting for its peer
 * @KPROG_OP_MATCHED: paired; completes through a transfer
 * @KPROG_OP_DONE: completed or withdrawn
 */
enum kprog_op_state {
	KPROG_OP_NEW,
	KPROG_OP_POSTED,
	KPROG_OP_MATCHED,
	KPROG_OP_DONE,
};

/**
 * enum kprog_op_budget - which of the owner's budgets an op is charged to
 * @KPROG_BUDGET_NONE: none (yet): a receive before matching, or after its
 *	slot was returned
 * @KPROG_BUDGET_OPS: a max_ops slot (receives)
 * @KPROG_BUDGET_RNDV: a max_rndv descriptor (rendezvous sends)
 *
 * Two budgets because of liveness: a rendezvous send that waits for its
 * receiver holds only a descriptor (no pinned page, no buffer), but if it
 * held a max_ops slot, a few such sends could take every slot of their
 * owner while the receives they wait for sit in the peer's user-space
 * queue behind receives that wait for this owner's next sends.
 */
enum kprog_op_budget {
	KPROG_BUDGET_NONE,
	KPROG_BUDGET_OPS,
	KPROG_BUDGET_RNDV,
};

/**
 * enum kprog_op_olist - which owner list an operation is on
 * @KPROG_OL_NONE: none
 * @KPROG_OL_ACTIVE: owner->ops: posted, completion pending
 * @KPROG_OL_OVERFLOW: owner->overflow: completed, the ring was full
 */
enum kprog_op_olist {
	KPROG_OL_NONE,
	KPROG_OL_ACTIVE,
	KPROG_OL_OVERFLOW,
};

/**
 * struct kprog_op - a posted send or receive
 * @ref: one while on an owner list (or held by the posting ioctl before
 *	that), one while in owner->posted, one per message or transfer
 *	that refers to it
 * @owner: the posting endpoint, referenced
 * @qnode: in owner->posted (receives), under owner->mlock
 * @onode: in owner->ops or owner->overflow, under owner->olock
 * @fnode: deferred free
 * @state: enum kprog_op_state; a receive's under owner->mlock, a send's
 *	follows its message (under the receiver's mlock)
 * @olist: enum kprog_op_olist, under owner->olock
 * @is_send: a send rather than a receive
 * @budget: enum kprog_op_budget, under owner->olock
 * @context: communicator context
 * @peer: send: destination rank; receive: source rank or ANY_SOURCE
 * @tag: tag, or ANY_TAG for a receive
 * @req_id: the poster's cookie
 * @msg_id: receive of a message taken by a dequeuing probe
 * @by_msg: @msg_id is valid
 * @buf: the user buffer (@buf.mm is mmgrab()ed)
 * @iov_charge: iovec entries charged at the owner
 * @iov_inline: storage for a single-segment buffer
 * @land: a small receive from another node: its buffer's pages, pinned
 *	at post so that the arrival copies into them from softirq
 * @dst: rendezvous send to a local endpoint: that endpoint, referenced
 * @xhandle: what the transport registered for a rendezvous send
 * @cqe: the completion while on owner->overflow
 * @times: when it and its peer were posted and matched, for the ring of
 *	an owner joined with KPROG_JOIN_TIMES (see struct kprog_cqe_times)
 * @sched: a step of this collective schedule (coll.c); NULL for others
 * @sched_step: its index in @sched
 * @sched_cpu: with @sched, the CPU its schedule's rounds run on (-1:
 *	unbound): a collective's transfer into this receive is copied there
 *	(xport_shm.c)
 * @divert: set with @sched: kprog_op_complete() hands the completion to
 *	it instead of the ring (a pointer, so that cq.c needs nothing of
 *	coll.c: no two files of the core call each other)
 */
struct kprog_op {
	refcount_t ref;
	struct kprog_ep *owner;
	struct list_head qnode;
	struct list_head onode;
	struct llist_node fnode;
	u8 state;
	u8 olist;
	u8 budget;
	bool is_send;
	bool by_msg;
	u32 context;
	s32 peer;
	s32 tag;
	u64 req_id;
	u64 msg_id;
	struct kprog_ubuf buf;
	u32 iov_charge;
	struct kprog_iov iov_inline;
	struct kprog_uland land;
	struct kprog_ep *dst;
	void *xhandle;
	struct kprog_cqe cqe;
	struct kprog_cqe_times times;
	struct kprog_sched *sched;
	u32 sched_step;
	s32 sched_cpu;
	void (*divert)(struct kprog_op *op, const struct kprog_cqe *cqe);
};

struct kprog_op *kprog_op_new(struct kprog_ep *ep,
			      const struct kprog_post *post, bool is_send,
			      struct kprog_iov_import *im,
			      enum kprog_op_budget budget);
u64 kprog_memlock_pages(void);
struct kprog_op *kprog_op_new_mm(struct kprog_ep *ep,
				 const struct kprog_post *post, bool is_send,
				 struct kprog_iov_import *im,
				 enum kprog_op_budget budget,
				 struct mm_struct *mm);
struct kprog_op *kprog_op_create(struct kprog_ep *ep,
				 const struct kprog_post *post, bool is_send,
				 struct kprog_iov_import *im);
int kprog_op_charge_budget(struct kprog_op *op, enum kprog_op_budget budget,
			   bool force);
void kprog_op_get(struct kprog_op *op);
void kprog_op_put(struct kprog_op *op);
void kprog_op_activate(struct kprog_op *op);
bool kprog_op_deactivate(struct kprog_op *op);
void kprog_op_uncharge(struct kprog_op *op);
int kprog_op_charge(struct kprog_ep *ep, u32 iov_entries);
void kprog_op_uncharge_raw(struct kprog_ep *ep, u32 iov_entries);
int kprog_op_init(void);
void kprog_op_exit(void);

/**
 * kprog_op_release_slot() - return the budget slot and iovec entries
 * @ep: its owner, olock held
 * @op: operation leaving the owner's lists (or never put on them)
 *
 * Once per op that kprog_op_new() returned; a second call, or one for an
 * op that was never charged, does nothing.
 */
static inline void kprog_op_release_slot(struct kprog_ep *ep,
					 struct kprog_op *op)
{
	lockdep_assert_held(&ep->olock);
	switch (op->budget) {
	case KPROG_BUDGET_OPS:
		ep->nr_ops--;
		break;
	case KPROG_BUDGET_RNDV:
		ep->nr_rndv--;
		break;
	default:
		return;
	}
	op->budget = KPROG_BUDGET_NONE;
	WARN_ON_ONCE(ep->iov_total < op->iov_charge);
	ep->iov_total -= op->iov_charge;
}

/* cq.c: completions of an endpoint's operations */
void kprog_op_complete(struct kprog_op *op, const struct kprog_cqe *cqe);
void kprog_cqe_fill(struct kprog_cqe *c, u64 req_id, s32 source, s32 tag,
		    u64 bytes, int err);
void kprog_cq_flush(struct kprog_ep *ep);
bool kprog_cq_holds(struct kprog_ep *ep, u64 req_id);
void kprog_cq_close(struct kprog_ep *ep);
int kprog_cq_wait(struct kprog_ep *ep, s64 timeout_ns, bool on_events,
		  u32 events);
__poll_t kprog_cq_poll(struct kprog_ep *ep, struct file *file,
		       struct poll_table_struct *wait);

#endif /* _KPROG_OP_H */
