// SPDX-License-Identifier: GPL-2.0
/*
 * kprog matching core: MPI envelope matching in the receiving endpoint,
 * eager/rendezvous decision, probe, cancel and departure of endpoints.
 *
 * Every queue lives in the receiver: posted receives and unexpected sends
 * (in arrival order) under ep->mlock. Matching therefore never needs two
 * match locks, and in-order queues give MPI's non-overtaking rule.
 *
 * Eager sends are copied into a kernel buffer in the sender's context and
 * complete at once. If a receive is already posted, the buffer goes to the
 * transport like a rendezvous source; being small, it is copied at once in
 * the sender's context (&kprog_transport.run). Otherwise it waits in the
 * unexpected queue, charged to the receiver's eager quota, and the receive
 * copies it out in its own context. Over quota, a send goes by rendezvous.
 * Eager messages stay deliverable after their sender has gone; rendezvous
 * sends of a departed sender are withdrawn.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include "kprog.h"
#include "transport.h"
#include "stats.h"
#include "kprog_trace.h"

static const struct kprog_transport *
kprog_transport_for(struct kprog_op *sop, struct kprog_op *rop)
{
	/* Every endpoint is on this host; xport_ib will choose here. */
	return &kprog_xport_shm;
}

static bool kprog_envelope_match(const struct kprog_op *s, u32 context,
				 s32 source, s32 tag)
{
	return s->context == context &&
	       (source == KPROG_ANY_SOURCE || source == s->src_rank) &&
	       (tag == KPROG_ANY_TAG || tag == s->tag);
}

static void kprog_cqe_fill(struct kprog_cqe *c, const struct kprog_op *op,
			   s32 source, s32 tag, u64 bytes, int err)
{
	memset(c, 0, sizeof(*c));
	c->req_id = op->req_id;
	c->bytes = bytes;
	c->source = source;
	c->tag = tag;
	c->error = err;
	if (err == -ECANCELED)
		c->flags = KPROG_CQE_CANCELLED;
}

/*
 * Under rop->mep->mlock. The transfer inherits the queue reference of
 * whichever side was taken from a queue and gets a new one on the other.
 */
static void kprog_xfer_setup(struct kprog_xfer *x, struct kprog_op *s,
			     struct kprog_op *r)
{
	x->sop = s;
	x->rop = r;
	x->src.mm = s->eager ? NULL : s->mm;
	x->src.kbuf = s->eager ? s->kbuf : NULL;
	x->src.iov = s->iov;
	x->src.nr_iov = s->nr_iov;
	x->dst.mm = r->mm;
	x->dst.kbuf = NULL;
	x->dst.iov = r->iov;
	x->dst.nr_iov = r->nr_iov;
	x->len = min(s->len, r->len);
	x->xport = kprog_transport_for(s, r);
	trace_kprog_match(s, r);
	s->state = KPROG_OP_MATCHED;
	r->state = KPROG_OP_MATCHED;
	if (!s->eager)
		atomic_inc(&s->owner->xfers);
	atomic_inc(&r->owner->xfers);
	/*
	 * Pairs with the barrier in kprog_match_ep_quiesce(): either the
	 * departing endpoint waits for this transfer, or the transfer sees
	 * ep->dead before it touches any page.
	 */
	smp_mb__after_atomic();
}

static void kprog_xfer_unref(struct kprog_ep *ep)
{
	if (atomic_dec_and_test(&ep->xfers))
		wake_up(&ep->wq);
}

static void kprog_xfer_start(struct kprog_xfer *x, u32 sync_limit)
{
	int err;

	if (!x->len) {
		kprog_xfer_done(x, 0, 0);
		return;
	}
	/* A small copy costs less than waking a worker for it. */
	if (x->len <= sync_limit && x->xport->run) {
		x->xport->run(x);
		return;
	}
	err = x->xport->submit(x);
	if (err)
		kprog_xfer_done(x, 0, err);
}

void kprog_xfer_done(struct kprog_xfer *x, u64 bytes, int err)
{
	struct kprog_op *s = x->sop, *r = x->rop;
	struct kprog_cqe c;

	kprog_cqe_fill(&c, r, s->src_rank, s->tag, bytes,
		       err ? err : (s->len > r->len ? -EMSGSIZE : 0));
	kprog_op_complete(r, &c);
	if (!s->eager) {
		kprog_cqe_fill(&c, s, s->peer, s->tag, bytes, err);
		kprog_op_complete(s, &c);
		kprog_xfer_unref(s->owner);
	}
	kprog_xfer_unref(r->owner);
	kprog_op_put(s);
	kprog_op_put(r);
	kfree(x);
}

bool kprog_xfer_aborted(const struct kprog_xfer *x)
{
	/* An eager source lives in kbuf and does not depend on its sender. */
	if (!x->sop->eager && READ_ONCE(x->sop->owner->dead))
		return true;
	return READ_ONCE(x->rop->owner->dead);
}

/*
 * An eager op's data is in kbuf from now on: detach its iovec array for the
 * caller to free, before the op is visible to any receiver. Its entries are
 * uncharged with the op's slot in kprog_send_done_now().
 */
static struct kprog_iov *kprog_eager_take_iov(struct kprog_op *op)
{
	struct kprog_iov *iov = op->iov;

	if (iov == &op->iov_inline)
		return NULL;
	op->iov = &op->iov_inline;
	op->nr_iov = 0;
	return iov;
}

/* The sender's part of a send that completed at post time. */
static void kprog_send_done_now(struct kprog_op *op, struct kprog_post *p)
{
	struct kprog_ep *ep = op->owner;

	p->done = 1;
	kprog_cqe_fill(&p->cqe, op, op->peer, op->tag, op->len, 0);
	kprog_op_uncharge(op);
	/* Nobody reads owner or mm of an eager op; see kprog_xfer_aborted(). */
	op->owner = NULL;
	mmdrop(op->mm);
	op->mm = NULL;
	kprog_ep_put(ep);
}

/**
 * kprog_send() - KPROG_IOC_SEND
 * @ep: joined endpoint
 * @p: the request, copied in; @done and @cqe are filled
 *
 * Return: 0 or a negative errno.
 */
int kprog_send(struct kprog_ep *ep, struct kprog_post *p)
{
	struct kprog_job *job = ep->job;
	struct kprog_op *op, *r = NULL, *it;
	struct kprog_ep *dst;
	struct kprog_iov *drop_iov = NULL;
	struct kprog_xfer *x;
	void *drop = NULL;
	bool eager, wake = false;
	u64 charge;
	int err;

	if (p->flags & ~(KPROG_POST_IOV | KPROG_SEND_SYNC))
		return -EINVAL;
	if (p->peer < 0 || p->peer >= job->size || p->tag < 0)
		return -EINVAL;

	op = kprog_op_create(ep, p, true);
	if (IS_ERR(op))
		return PTR_ERR(op);
	trace_kprog_post(ep, op, p->flags);
	charge = op->len + KPROG_EAGER_OVERHEAD;
	eager = !(p->flags & KPROG_SEND_SYNC) && op->len <= job->eager_limit &&
		charge <= kprog_eager_quota;
	if (eager) {
		err = kprog_op_copy_in(op);
		if (err)
			goto err_op;
	}
	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x) {
		err = -ENOMEM;
		goto err_op;
	}
	dst = kprog_job_get_ep(job, p->peer);
	if (!dst) {
		err = -ECONNRESET;
		goto err_x;
	}
	op->mep = dst;

	spin_lock(&dst->mlock);
	if (dst->dead) {
		spin_unlock(&dst->mlock);
		err = -ECONNRESET;
		goto err_x;
	}
	list_for_each_entry(it, &dst->posted, qnode) {
		if (kprog_envelope_match(op, it->context, it->peer, it->tag)) {
			r = it;
			break;
		}
	}
	if (r) {
		list_del_init(&r->qnode);
		op->eager = eager;
		if (eager)
			drop_iov = kprog_eager_take_iov(op);
		else
			kprog_op_activate(op);
		refcount_inc(&op->ref);
		kprog_xfer_setup(x, op, r);
	} else {
		if (eager && dst->eager_bytes + charge > kprog_eager_quota) {
			/* Over quota: fall back to rendezvous. */
			eager = false;
			drop = op->kbuf;
			op->kbuf = NULL;
		}
		op->eager = eager;
		if (eager) {
			op->charge = charge;
			dst->eager_bytes += charge;
			drop_iov = kprog_eager_take_iov(op);
		} else {
			kprog_op_activate(op);
		}
		refcount_inc(&op->ref);
		op->state = KPROG_OP_QUEUED;
		list_add_tail(&op->qnode, &dst->unexpected);
		dst->unexp_seq++;
		wake = true;
	}
	spin_unlock(&dst->mlock);
	/* A rendezvous op is now owned by its list: do not touch it. */

	kvfree(drop);
	kvfree(drop_iov);
	if (wake)
		wake_up(&dst->wq);
	p->done = 0;
	if (eager)
		kprog_send_done_now(op, p);
	if (r)
		kprog_xfer_start(x, job->eager_limit);
	else
		kfree(x);
	if (eager)
		kprog_op_put(op);
	return 0;

err_x:
	kfree(x);
err_op:
	kprog_op_uncharge(op);
	kprog_op_put(op);
	return err;
}

/* Receiver's context: copy a buffered eager message out. */
static u64 kprog_copy_out(struct kprog_op *r, struct kprog_op *s, int *err)
{
	u64 n = min(s->len, r->len), pos = 0, c;
	u32 i;

	*err = 0;
	trace_kprog_copy_start(s, r, n, 0);
	for (i = 0; i < r->nr_iov && pos < n; i++) {
		c = min(r->iov[i].len, n - pos);
		if (copy_to_user(u64_to_user_ptr(r->iov[i].base),
				 s->kbuf + pos, c)) {
			*err = -EFAULT;
			break;
		}
		pos += c;
	}
	kprog_stat_add(KPROG_STAT_BYTES, pos);
	trace_kprog_copy_end(s, r, pos, *err);
	if (!*err && s->len > r->len)
		*err = -EMSGSIZE;
	return pos;
}

/**
 * kprog_recv() - KPROG_IOC_RECV
 * @ep: joined endpoint
 * @p: the request, copied in; @done and @cqe are filled
 *
 * Return: 0 or a negative errno.
 */
int kprog_recv(struct kprog_ep *ep, struct kprog_post *p)
{
	struct kprog_job *job = ep->job;
	struct kprog_op *op, *s = NULL, *it;
	struct kprog_xfer *x;
	bool by_msg = p->flags & KPROG_RECV_MESSAGE;
	bool gone = false;
	u64 bytes;
	int err;

	if (p->flags & ~(KPROG_POST_IOV | KPROG_RECV_MESSAGE))
		return -EINVAL;
	if (!by_msg) {
		if (p->peer != KPROG_ANY_SOURCE &&
		    (p->peer < 0 || p->peer >= job->size))
			return -EINVAL;
		if (p->tag != KPROG_ANY_TAG && p->tag < 0)
			return -EINVAL;
	}

	op = kprog_op_create(ep, p, false);
	if (IS_ERR(op))
		return PTR_ERR(op);
	trace_kprog_post(ep, op, p->flags);
	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x) {
		err = -ENOMEM;
		goto err_op;
	}
	kprog_ep_get(ep);
	op->mep = ep;

	spin_lock(&ep->mlock);
	if (by_msg) {
		list_for_each_entry(it, &ep->mprobed, qnode) {
			if (it->msg_id == p->msg_id) {
				s = it;
				break;
			}
		}
		if (!s) {
			spin_unlock(&ep->mlock);
			err = -ENOENT;
			goto err_x;
		}
	} else {
		list_for_each_entry(it, &ep->unexpected, qnode) {
			if (kprog_envelope_match(it, p->context, p->peer,
						 p->tag)) {
				s = it;
				break;
			}
		}
	}
	if (s) {
		list_del_init(&s->qnode);
		if (s->eager) {
			trace_kprog_match(s, op);
			s->state = KPROG_OP_DONE;
			ep->eager_bytes -= s->charge;
		} else {
			kprog_op_activate(op);
			refcount_inc(&op->ref);
			kprog_xfer_setup(x, s, op);
		}
	} else if (p->peer != KPROG_ANY_SOURCE &&
		   test_bit(p->peer, job->left)) {
		/* Nothing buffered from a rank that left: fail, don't hang. */
		gone = true;
	} else {
		kprog_op_activate(op);
		refcount_inc(&op->ref);
		op->state = KPROG_OP_QUEUED;
		list_add_tail(&op->qnode, &ep->posted);
	}
	spin_unlock(&ep->mlock);

	p->done = 0;
	if (s && !s->eager) {
		kprog_xfer_start(x, job->eager_limit);
		return 0;
	}
	kfree(x);
	if (!s && !gone)
		return 0;

	p->done = 1;
	if (s) {
		bytes = kprog_copy_out(op, s, &err);
		kprog_cqe_fill(&p->cqe, op, s->src_rank, s->tag, bytes, err);
		kprog_op_put(s);
	} else {
		kprog_cqe_fill(&p->cqe, op, p->peer, p->tag, 0, -ECONNRESET);
	}
	kprog_op_uncharge(op);
	kprog_op_put(op);
	return 0;

err_x:
	kfree(x);
err_op:
	kprog_op_uncharge(op);
	kprog_op_put(op);
	return err;
}

/**
 * kprog_probe() - KPROG_IOC_PROBE
 * @ep: joined endpoint
 * @pr: the request, copied in; output fields are filled
 *
 * Return: 0, -EINVAL, -EEXIST, -EINTR, or -ECONNRESET when blocking on a
 * named source that has left and has nothing buffered.
 */
int kprog_probe(struct kprog_ep *ep, struct kprog_probe *pr)
{
	struct kprog_job *job = ep->job;
	bool dequeue = pr->flags & KPROG_PROBE_DEQUEUE;
	struct kprog_op *s, *it;
	u32 seq;
	int err;

	if (pr->flags & ~(KPROG_PROBE_BLOCK | KPROG_PROBE_DEQUEUE))
		return -EINVAL;
	if (pr->source != KPROG_ANY_SOURCE &&
	    (pr->source < 0 || pr->source >= job->size))
		return -EINVAL;
	if (pr->tag != KPROG_ANY_TAG && pr->tag < 0)
		return -EINVAL;

	pr->found = 0;
	for (;;) {
		s = NULL;
		err = 0;
		spin_lock(&ep->mlock);
		if (dequeue) {
			list_for_each_entry(it, &ep->mprobed, qnode) {
				if (it->msg_id == pr->msg_id) {
					err = -EEXIST;
					break;
				}
			}
		}
		if (!err) {
			list_for_each_entry(it, &ep->unexpected, qnode) {
				if (kprog_envelope_match(it, pr->context,
							 pr->source, pr->tag)) {
					s = it;
					break;
				}
			}
		}
		if (s) {
			pr->found = 1;
			pr->out_source = s->src_rank;
			pr->out_tag = s->tag;
			pr->bytes = s->len;
			if (dequeue) {
				s->msg_id = pr->msg_id;
				s->state = KPROG_OP_MPROBED;
				list_move_tail(&s->qnode, &ep->mprobed);
			}
		}
		seq = ep->unexp_seq;
		spin_unlock(&ep->mlock);

		if (err || s || !(pr->flags & KPROG_PROBE_BLOCK))
			return err;
		if (pr->source != KPROG_ANY_SOURCE &&
		    test_bit(pr->source, job->left))
			return -ECONNRESET;
		if (wait_event_interruptible(ep->wq,
					     READ_ONCE(ep->unexp_seq) != seq))
			return -EINTR;
	}
}

/**
 * kprog_cancel() - KPROG_IOC_CANCEL
 * @ep: joined endpoint
 * @req_id: the cookie of a posted operation of @ep
 *
 * An operation whose completion is still in the ring or held back by an
 * overflow, not yet consumed, counts as complete (EBUSY), not unknown.
 *
 * Return: 0, -EBUSY or -ENOENT.
 */
int kprog_cancel(struct kprog_ep *ep, u64 req_id)
{
	struct kprog_op *op = NULL, *it;
	struct kprog_ep *m;
	struct kprog_cqe c;
	unsigned long flags;
	bool ok = false, busy = false;

	spin_lock_irqsave(&ep->olock, flags);
	list_for_each_entry(it, &ep->ops, onode) {
		if (it->req_id == req_id) {
			op = it;
			refcount_inc(&op->ref);
			break;
		}
	}
	if (!op)
		busy = kprog_ring_holds(ep, req_id);
	spin_unlock_irqrestore(&ep->olock, flags);
	if (!op)
		return busy ? -EBUSY : -ENOENT;

	m = op->mep;
	spin_lock(&m->mlock);
	if (op->state == KPROG_OP_QUEUED) {
		list_del_init(&op->qnode);
		op->state = KPROG_OP_DONE;
		ok = true;
	}
	spin_unlock(&m->mlock);

	if (ok) {
		kprog_cqe_fill(&c, op, op->peer, op->tag, 0, -ECANCELED);
		kprog_op_complete(op, &c);
		kprog_op_put(op);	/* queue reference */
	}
	kprog_op_put(op);
	return ok ? 0 : -EBUSY;
}

/**
 * kprog_match_ep_quiesce() - wait until no transfer touches @ep's buffers
 * @ep: endpoint that kprog_match_ep_gone() marked dead
 *
 * Transfers notice ep->dead before their next chunk, so this waits for at
 * most one chunk per transfer. Afterwards user space may reuse every
 * buffer it had posted. Called without locks.
 */
void kprog_match_ep_quiesce(struct kprog_ep *ep)
{
	/* Pairs with kprog_xfer_setup(); ep->dead was set before. */
	smp_mb();
	wait_event(ep->wq, !atomic_read(&ep->xfers));
}

/* Withdraw a taken-off-queue op whose queue owner @ep is leaving. */
static void kprog_withdraw_queued(struct kprog_ep *ep, struct kprog_op *op)
{
	struct kprog_cqe c;

	if (op->is_send && !op->eager) {
		/* The sender learns that its receiver went away. */
		kprog_cqe_fill(&c, op, op->peer, op->tag, 0, -ECONNRESET);
		kprog_op_complete(op, &c);
	} else if (!op->is_send) {
		kprog_cqe_fill(&c, op, op->peer, op->tag, 0, -ECANCELED);
		kprog_op_complete(op, &c);
	}
	kprog_op_put(op);
}

/**
 * kprog_match_ep_gone() - remove a departing endpoint from matching
 * @ep: endpoint whose file is released; its rank slot is already empty
 *
 * Called under kprog_jobs_mutex. Drops everything queued at @ep, withdraws
 * @ep's sends still queued elsewhere and fails receives of other endpoints
 * that name @ep's rank. Transfers in flight see ep->dead and end with
 * -ECONNRESET; they hold their own references, so nothing waits here.
 */
void kprog_match_ep_gone(struct kprog_ep *ep)
{
	struct kprog_job *job = ep->job;
	struct kprog_op *op, *tmp;
	struct kprog_ep *y;
	struct kprog_cqe c;
	unsigned long flags;
	LIST_HEAD(q);
	bool qput;
	u32 rank;

	/* From now on completions for our ops are dropped. */
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

	/* No more matching at this endpoint. */
	spin_lock(&ep->mlock);
	WRITE_ONCE(ep->dead, true);
	list_splice_tail_init(&ep->posted, &q);
	list_splice_tail_init(&ep->unexpected, &q);
	list_splice_tail_init(&ep->mprobed, &q);
	list_for_each_entry(op, &q, qnode)
		op->state = KPROG_OP_DONE;
	ep->eager_bytes = 0;
	spin_unlock(&ep->mlock);
	list_for_each_entry_safe(op, tmp, &q, qnode) {
		list_del_init(&op->qnode);
		kprog_withdraw_queued(ep, op);
	}

	/* Our own ops: sends still queued at other endpoints go away. */
	for (;;) {
		spin_lock_irqsave(&ep->olock, flags);
		op = list_first_entry_or_null(&ep->ops, struct kprog_op, onode);
		if (op) {
			list_del_init(&op->onode);
			op->olist = KPROG_OL_NONE;
			kprog_op_release_slot(ep, op);
		}
		spin_unlock_irqrestore(&ep->olock, flags);
		if (!op)
			break;
		qput = false;
		if (op->mep != ep) {
			spin_lock(&op->mep->mlock);
			if (op->state == KPROG_OP_QUEUED) {
				list_del_init(&op->qnode);
				op->state = KPROG_OP_DONE;
				qput = true;
			}
			spin_unlock(&op->mep->mlock);
		}
		if (qput)
			kprog_op_put(op);
		/* Matched ops complete (into nothing) through their transfer. */
		kprog_op_put(op);
		cond_resched();
	}

	/* Receives elsewhere that wait for us would wait forever. */
	for (rank = 0; rank < job->size; rank++) {
		if (rank == ep->rank)
			continue;
		y = kprog_job_get_ep(job, rank);
		if (!y)
			continue;
		spin_lock(&y->mlock);
		list_for_each_entry_safe(op, tmp, &y->posted, qnode) {
			if (op->peer == ep->rank) {
				list_move_tail(&op->qnode, &q);
				op->state = KPROG_OP_DONE;
			}
		}
		y->unexp_seq++;
		spin_unlock(&y->mlock);
		wake_up(&y->wq);
		list_for_each_entry_safe(op, tmp, &q, qnode) {
			list_del_init(&op->qnode);
			kprog_cqe_fill(&c, op, ep->rank, op->tag, 0,
				       -ECONNRESET);
			kprog_op_complete(op, &c);
			kprog_op_put(op);
		}
		kprog_ep_put(y);
		cond_resched();
	}
}
