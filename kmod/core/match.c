// SPDX-License-Identifier: GPL-2.0
/*
 * kprog matching core: the queues of each receiving endpoint and the only
 * code that touches them.
 *
 * Every queue lives in the receiver, under its mlock: posted receives in
 * post order, unexpected messages in arrival order, and messages taken by
 * a dequeuing probe. A message from any sender and any transport enters
 * through kprog_arrive(); a receive through kprog_match_recv(). Matching
 * therefore never needs two match locks, and in-order queues plus
 * in-order arrival per sender give MPI's non-overtaking rule.
 *
 * What happens after a match is the protocol's business: an eager message
 * is copied out (eager.c), a rendezvous message is pulled by the
 * transport that brought it (rndv.c).
 *
 * Departure: kprog_peer_gone() fails everything that waits for a rank that
 * is gone, whether a local process exited or a transport lost a node.
 * Eager messages stay deliverable after their sender has gone; rendezvous
 * messages of a departed sender are withdrawn.
 */
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "match.h"
#include "transport.h"
#include "kprog_trace.h"

/*
 * Times of a match (KPROG_JOIN_TIMES): the receive learns when its send
 * was posted, a local rendezvous send when its receive was.
 */
static void kprog_match_stamp(struct kprog_op *rop, struct kprog_msg *msg)
{
	struct kprog_op *sop = msg->sop;
	u64 now;

	if (!rop->owner->times && !(sop && sop->owner->times))
		return;
	now = ktime_get_ns();
	rop->times.send_ns = msg->send_ns;
	rop->times.match_ns = now;
	if (sop) {
		sop->times.recv_ns = rop->times.recv_ns;
		sop->times.match_ns = now;
	}
}

/**
 * kprog_arrive() - the one arrival path of messages
 * @dst: the receiving endpoint, referenced by the caller
 * @msg: a new message addressed to @dst (envelope, payload or rendezvous
 *	descriptor filled in)
 *
 * Matches @msg with the oldest posted receive that wants it, or queues it
 * as unexpected. A matched message is then delivered: eager data copied
 * into the receive buffer, or the rendezvous started.
 *
 * Process or softirq context, no kprog lock held.
 *
 * Return: 0 when the core took the message; -ECONNRESET when @dst left
 * its job, or -ENOBUFS for an eager message with @may_bounce that would
 * exceed @dst's eager quota: the caller keeps the message in both cases.
 */
int kprog_arrive(struct kprog_ep *dst, struct kprog_msg *msg)
{
	struct kprog_op *rop = NULL, *it;
	u64 key = dst->job->key;
	bool coll;
	u64 charge;

	spin_lock_bh(&dst->mlock);
	if (dst->dead) {
		spin_unlock_bh(&dst->mlock);
		trace_kprog_arrive(key, &msg->env, msg->send_req,
				   KPROG_ARRIVE_REFUSED);
		return -ECONNRESET;
	}
	list_for_each_entry(it, &dst->posted, qnode) {
		if (kprog_env_match(&msg->env, it->context, it->peer,
				    it->tag, it->sched)) {
			rop = it;
			break;
		}
	}
	if (rop) {
		list_del_init(&rop->qnode);
		rop->state = KPROG_OP_MATCHED;
		msg->state = KPROG_MSG_MATCHED;
		kprog_match_stamp(rop, msg);
		spin_unlock_bh(&dst->mlock);
		trace_kprog_arrive(key, &msg->env, msg->send_req,
				   KPROG_ARRIVE_MATCHED);
		trace_kprog_match(key, &msg->env, msg->send_req, rop->req_id,
				  rop->buf.len);
		/* The posted queue's reference passes to the delivery. */
		if (kprog_msg_is_rndv(msg))
			kprog_rndv_start(msg, rop, in_task() &&
					 (msg->env.len <= dst->job->eager_limit ||
					  msg->poster_waits));
		else
			kprog_eager_deliver(msg, rop);
		return 0;
	}
	if (!kprog_msg_is_rndv(msg)) {
		charge = msg->env.len + KPROG_EAGER_OVERHEAD;
		if (msg->may_bounce &&
		    dst->eager_bytes + charge > kprog_eager_quota) {
			spin_unlock_bh(&dst->mlock);
			trace_kprog_arrive(key, &msg->env, msg->send_req,
					   KPROG_ARRIVE_BOUNCED);
			return -ENOBUFS;
		}
		msg->charge = charge;
		dst->eager_bytes += charge;
	}
	msg->state = KPROG_MSG_QUEUED;
	list_add_tail(&msg->qnode, &dst->unexpected);
	coll = msg->env.flags & KPROG_ENV_COLL;
	if (!coll) {
		dst->unexp_seq++;
		kprog_ring_held(&dst->ring, msg->env.src, 1);
	}
	/*
	 * Traced under the lock: once it is released, a receive may take the
	 * queued message and free it (KASAN, the kprog_chan selftest).
	 */
	trace_kprog_arrive(key, &msg->env, msg->send_req, KPROG_ARRIVE_QUEUED);
	spin_unlock_bh(&dst->mlock);
	/* Blocked probes, and a user-space matcher (neither sees a step's). */
	if (!coll)
		kprog_ep_event(dst);
	return 0;
}
EXPORT_SYMBOL_GPL(kprog_arrive);

/*
 * Under ep->mlock: a queued message leaves the unexpected queue. Messages
 * of collective schedules are not in the per-source counts.
 */
static void kprog_unheld(struct kprog_ep *ep, struct kprog_msg *msg)
{
	if (!(msg->env.flags & KPROG_ENV_COLL))
		kprog_ring_held(&ep->ring, msg->env.src, -1);
}

/* Under ep->mlock: take @msg out of a queue for a receive. */
static void kprog_take_msg(struct kprog_ep *ep, struct kprog_msg *msg)
{
	if (msg->state == KPROG_MSG_QUEUED)
		kprog_unheld(ep, msg);
	list_del_init(&msg->qnode);
	ep->eager_bytes -= msg->charge;
	msg->charge = 0;
	msg->state = KPROG_MSG_MATCHED;
}

/**
 * kprog_match_held() - does a message matching a receive wait here?
 * @ep: the receiving endpoint
 * @context: the receive's context
 * @source: its source rank or KPROG_ANY_SOURCE
 * @tag: its tag or KPROG_ANY_TAG
 *
 * A hint only (the message may be taken right after): lets a
 * KPROG_RECV_ARRIVED receive that finds nothing fail before it builds an
 * operation, which is most of what a client's walk of kept-back receives
 * asks.
 *
 * Return: true if one is queued.
 */
bool kprog_match_held(struct kprog_ep *ep, u32 context, s32 source, s32 tag)
{
	struct kprog_msg *it;
	bool found = false;

	spin_lock_bh(&ep->mlock);
	list_for_each_entry(it, &ep->unexpected, qnode) {
		if (kprog_env_match(&it->env, context, source, tag, false)) {
			found = true;
			break;
		}
	}
	spin_unlock_bh(&ep->mlock);
	return found;
}

/**
 * kprog_match_recv() - match a new receive against the queues, or post it
 * @ep: the receiving endpoint (current process)
 * @rop: the new receive (state NEW, not yet on its owner's list)
 * @msgp: set to the matched message, taken off its queue, or to NULL
 * @arrived_only: take a message already held, never post (KPROG_RECV_ARRIVED)
 *
 * A receive that takes a rendezvous message or is posted is put on its
 * owner's list (its completion will go to the ring); one that takes an
 * eager message is not (the caller completes it at once).
 *
 * An uncharged @rop (KPROG_BUDGET_NONE) is charged a max_ops slot here:
 * past the limit when it takes a held message (that message's memory is
 * bounded by its sender's budgets, and refusing would let a program whose
 * receives wait in user space stop progressing), within it when posted.
 *
 * Return: 0 (matched or posted), -ENOENT (KPROG_RECV_MESSAGE with an
 * unknown id), -ECONNRESET (the named source left and nothing of it is
 * buffered: the receive would never match), -EAGAIN (@arrived_only and
 * nothing matched) or -ENOBUFS (max_ops reached, nothing matched).
 */
int kprog_match_recv(struct kprog_ep *ep, struct kprog_op *rop,
		     struct kprog_msg **msgp, bool arrived_only)
{
	struct kprog_msg *msg = NULL, *it;
	int err = 0;

	*msgp = NULL;
	spin_lock_bh(&ep->mlock);
	if (rop->by_msg) {
		list_for_each_entry(it, &ep->mprobed, qnode) {
			if (it->msg_id == rop->msg_id) {
				msg = it;
				break;
			}
		}
		if (!msg)
			err = -ENOENT;
	} else {
		list_for_each_entry(it, &ep->unexpected, qnode) {
			if (kprog_env_match(&it->env, rop->context, rop->peer,
					    rop->tag, rop->sched)) {
				msg = it;
				break;
			}
		}
	}
	if (msg) {
		kprog_take_msg(ep, msg);
		rop->state = KPROG_OP_MATCHED;
		if (rop->budget == KPROG_BUDGET_NONE)
			kprog_op_charge_budget(rop, KPROG_BUDGET_OPS, true);
		kprog_match_stamp(rop, msg);
		if (kprog_msg_is_rndv(msg) && !msg->src_gone)
			kprog_op_activate(rop);
		*msgp = msg;
	} else if (!err && rop->peer != KPROG_ANY_SOURCE &&
		   kprog_job_rank_left(ep->job, rop->peer)) {
		err = -ECONNRESET;
	} else if (!err && arrived_only) {
		err = -EAGAIN;
	} else if (!err && rop->budget == KPROG_BUDGET_NONE) {
		err = kprog_op_charge_budget(rop, KPROG_BUDGET_OPS, false);
	}
	if (!msg && !err) {
		kprog_op_activate(rop);
		kprog_op_get(rop);
		rop->state = KPROG_OP_POSTED;
		list_add_tail(&rop->qnode, &ep->posted);
	}
	spin_unlock_bh(&ep->mlock);
	if (msg)
		trace_kprog_match(ep->job->key, &msg->env, msg->send_req,
				  rop->req_id, rop->buf.len);
	return err;
}

/**
 * kprog_match_probe() - one look for a message a receive would take
 * @ep: joined endpoint
 * @pr: the checked request; @found and the outputs are filled
 *
 * With KPROG_PROBE_DEQUEUE a found message moves to the mprobed list
 * under @pr->msg_id.
 *
 * Return: 0 or -EEXIST (@msg_id of a dequeuing probe already in use).
 */
int kprog_match_probe(struct kprog_ep *ep, struct kprog_probe *pr)
{
	bool dequeue = pr->flags & KPROG_PROBE_DEQUEUE;
	struct kprog_msg *msg = NULL, *it;
	int err = 0;

	pr->found = 0;
	spin_lock_bh(&ep->mlock);
	if (dequeue) {
		list_for_each_entry(it, &ep->mprobed, qnode) {
			if (it->msg_id == pr->msg_id) {
				err = -EEXIST;
				goto out;
			}
		}
	}
	list_for_each_entry(it, &ep->unexpected, qnode) {
		if (kprog_env_match(&it->env, pr->context, pr->source,
				    pr->tag, false)) {
			msg = it;
			break;
		}
	}
	if (msg) {
		pr->found = 1;
		pr->out_source = msg->env.src;
		pr->out_tag = msg->env.tag;
		pr->bytes = msg->env.len;
		if (dequeue) {
			kprog_ring_held(&ep->ring, msg->env.src, -1);
			msg->msg_id = pr->msg_id;
			msg->state = KPROG_MSG_MPROBED;
			list_move_tail(&msg->qnode, &ep->mprobed);
		}
	}
out:
	spin_unlock_bh(&ep->mlock);
	return err;
}

/* Withdraw an unmatched local rendezvous send from its receiver's queue. */
static struct kprog_msg *kprog_withdraw_send(struct kprog_op *sop)
{
	struct kprog_ep *m = sop->dst;
	struct kprog_msg *msg = NULL, *it;

	if (!m)
		return NULL;
	spin_lock_bh(&m->mlock);
	list_for_each_entry(it, &m->unexpected, qnode) {
		if (it->sop == sop) {
			msg = it;
			kprog_unheld(m, msg);
			list_del_init(&msg->qnode);
			msg->state = KPROG_MSG_DONE;
			break;
		}
	}
	spin_unlock_bh(&m->mlock);
	return msg;
}

/**
 * kprog_op_withdraw() - withdraw an operation still waiting for its peer
 * @op: a posted receive, or a rendezvous send, referenced by the caller
 *
 * A withdrawn operation completes with -ECANCELED (a send through its
 * transport). A rendezvous send to another node cannot be withdrawn.
 * Process context, no kprog lock held.
 *
 * Return: true if it was withdrawn; false if it is matched already (it
 * completes normally) or cannot be withdrawn.
 */
bool kprog_op_withdraw(struct kprog_op *op)
{
	struct kprog_ep *ep = op->owner;
	struct kprog_msg *msg = NULL;
	struct kprog_cqe c;
	bool ok = false;

	if (op->is_send) {
		msg = kprog_withdraw_send(op);
		ok = msg;
	} else {
		spin_lock_bh(&ep->mlock);
		if (op->state == KPROG_OP_POSTED) {
			list_del_init(&op->qnode);
			op->state = KPROG_OP_DONE;
			ok = true;
		}
		spin_unlock_bh(&ep->mlock);
	}

	if (msg) {
		/* The transport completes the send, cancelled. */
		kprog_msg_drop(msg, -ECANCELED);
	} else if (ok) {
		kprog_cqe_fill(&c, op->req_id, op->peer, op->tag, 0,
			       -ECANCELED);
		kprog_op_complete(op, &c);
		kprog_op_put(op);	/* the posted queue's */
	}
	return ok;
}

/**
 * kprog_cancel() - KPROG_IOC_CANCEL
 * @ep: joined endpoint
 * @req_id: the cookie of a posted operation of @ep
 *
 * An operation whose completion is still in the ring or held back by an
 * overflow, not yet consumed, counts as complete (EBUSY), not unknown.
 * A rendezvous send to another node cannot be withdrawn (EBUSY), nor a
 * collective schedule (its steps are not operations of the caller's, its
 * head never waits in a queue: EBUSY).
 *
 * Return: 0, -EBUSY or -ENOENT.
 */
int kprog_cancel(struct kprog_ep *ep, u64 req_id)
{
	struct kprog_op *op = NULL, *it;
	unsigned long flags;
	bool ok, busy = false;

	spin_lock_irqsave(&ep->olock, flags);
	list_for_each_entry(it, &ep->ops, onode) {
		if (it->req_id == req_id && !it->sched) {
			op = it;
			kprog_op_get(op);
			break;
		}
	}
	if (!op)
		busy = kprog_cq_holds(ep, req_id);
	spin_unlock_irqrestore(&ep->olock, flags);
	if (!op)
		return busy ? -EBUSY : -ENOENT;

	ok = kprog_op_withdraw(op);
	kprog_op_put(op);
	return ok ? 0 : -EBUSY;
}

/* Fail a receive that was taken off a posted queue. */
static void kprog_fail_recv(struct kprog_op *rop, s32 source, int err)
{
	struct kprog_cqe c;

	kprog_cqe_fill(&c, rop->req_id, source, rop->tag, 0, err);
	kprog_op_complete(rop, &c);
	kprog_op_put(rop);
}

/**
 * kprog_peer_gone() - fail everything that waits for a rank that is gone
 * @job: the job
 * @rank: the rank: a local endpoint that is leaving (its rank already
 *	marked left), or a rank on a node a transport lost
 * @err: the error receives get, normally -ECONNRESET
 *
 * On every local endpoint of @job: receives posted for @rank fail with
 * @err, its unmatched rendezvous messages are withdrawn (its sender is
 * told through &kprog_transport.fin), rendezvous messages of it taken by
 * a dequeuing probe are marked so that their receive fails, and blocked
 * probes are woken. Eager messages stay deliverable. A rank on a lost
 * node is marked left for good, so that later receives naming it fail
 * at once instead of waiting forever.
 *
 * Process context (takes endpoint references).
 */
void kprog_peer_gone(struct kprog_job *job, u32 rank, int err)
{
	struct kprog_msg *msg, *mtmp;
	struct kprog_op *op, *otmp;
	struct kprog_ep *y;
	LIST_HEAD(rq);
	LIST_HEAD(mq);
	u32 r;

	if (!kprog_job_is_local(job, rank)) {
		/* Later receives and probes naming it fail, as for a local one. */
		set_bit(rank, job->left);
		/* Pairs with the lock-free test_bit() of receivers. */
		smp_mb__after_atomic();
	}
	for (r = 0; r < job->size; r++) {
		if (r == rank || !kprog_job_is_local(job, r))
			continue;
		y = kprog_job_get_ep(job, r);
		if (!y)
			continue;
		spin_lock_bh(&y->mlock);
		list_for_each_entry_safe(op, otmp, &y->posted, qnode) {
			if (op->peer == rank) {
				list_move_tail(&op->qnode, &rq);
				op->state = KPROG_OP_DONE;
			}
		}
		list_for_each_entry_safe(msg, mtmp, &y->unexpected, qnode) {
			if (msg->env.src == rank && kprog_msg_is_rndv(msg)) {
				kprog_unheld(y, msg);
				list_move_tail(&msg->qnode, &mq);
				msg->state = KPROG_MSG_DONE;
			}
		}
		list_for_each_entry(msg, &y->mprobed, qnode)
			if (msg->env.src == rank && kprog_msg_is_rndv(msg))
				msg->src_gone = true;
		y->unexp_seq++;
		kprog_ring_src_flags(&y->ring, rank, KPROG_SRC_LEFT);
		spin_unlock_bh(&y->mlock);
		kprog_ep_event(y);

		list_for_each_entry_safe(op, otmp, &rq, qnode) {
			list_del_init(&op->qnode);
			kprog_fail_recv(op, rank, err);
		}
		list_for_each_entry_safe(msg, mtmp, &mq, qnode) {
			list_del_init(&msg->qnode);
			kprog_msg_drop(msg, err);
		}
		kprog_ep_put(y);
		cond_resched();
	}
}
EXPORT_SYMBOL_GPL(kprog_peer_gone);

/**
 * kprog_depart() - take a departing endpoint out of matching
 * @ep: endpoint whose file is released, after kprog_job_leave_begin()
 *
 * Completions of its operations are dropped from now on; its posted
 * receives are withdrawn; messages queued at it are dropped (the
 * senders of rendezvous messages get -ECONNRESET); everything elsewhere
 * that waits for its rank fails (kprog_peer_gone()). Transfers in flight
 * notice the departure and end; kprog_ep_quiesce() waits for them.
 */
void kprog_depart(struct kprog_ep *ep)
{
	struct kprog_msg *msg, *mtmp;
	struct kprog_op *op, *otmp;
	LIST_HEAD(rq);
	LIST_HEAD(mq);

	kprog_cq_close(ep);

	spin_lock_bh(&ep->mlock);
	WRITE_ONCE(ep->dead, true);
	list_splice_init(&ep->posted, &rq);
	list_splice_init(&ep->unexpected, &mq);
	list_splice_tail_init(&ep->mprobed, &mq);
	list_for_each_entry(op, &rq, qnode)
		op->state = KPROG_OP_DONE;
	list_for_each_entry(msg, &mq, qnode)
		msg->state = KPROG_MSG_DONE;
	ep->eager_bytes = 0;
	spin_unlock_bh(&ep->mlock);

	list_for_each_entry_safe(op, otmp, &rq, qnode) {
		list_del_init(&op->qnode);
		kprog_fail_recv(op, op->peer, -ECANCELED);
	}
	list_for_each_entry_safe(msg, mtmp, &mq, qnode) {
		list_del_init(&msg->qnode);
		kprog_msg_drop(msg, -ECONNRESET);
	}

	kprog_peer_gone(ep->job, ep->rank, -ECONNRESET);
}
