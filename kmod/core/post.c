// SPDX-License-Identifier: GPL-2.0
/*
 * kprog posts: KPROG_IOC_SEND and KPROG_IOC_RECV, from a checked request
 * to a message handed to a transport or a receive handed to the matching
 * core.
 *
 * A send goes eager (its data in the message, done at once) when it is
 * not synchronous, fits the job's eager limit and the receiver's eager
 * quota; otherwise by rendezvous (the send stays posted until the
 * receiving side pulled its data).
 *
 * Fast-path channels carry other messages of the same senders past the
 * kernel; every post and probe here first drains the channels its message
 * could be ordered against (chan.c), so that none overtakes another.
 */
#include <linux/slab.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "match.h"
#include "chan.h"
#include "transport.h"
#include "kprog_trace.h"

/* The sender's part of an eager send, done at post time. */
static int kprog_send_eager(struct kprog_ep *ep, struct kprog_post *p,
			    const struct kprog_transport *xport,
			    const struct kprog_peer_ref *peer,
			    struct kprog_iov_import *im, u64 now)
{
	struct kprog_msg *msg;
	int err;

	/* Held only while posting, as the ABI's budgets promise. */
	err = kprog_op_charge(ep, im->charge);
	if (err)
		return err;
	msg = kprog_eager_build(ep, p, im, &err);
	kprog_op_uncharge_raw(ep, im->charge);
	if (!msg)
		return err;
	msg->send_ns = now;
	err = xport->send_env(ep->job, peer, msg);
	if (err) {
		kprog_msg_free(msg);
		return err;
	}
	p->done = 1;
	kprog_cqe_fill(&p->cqe, p->req_id, p->peer, p->tag, im->len, 0);
	return 0;
}

static int kprog_send_rndv(struct kprog_ep *ep, struct kprog_post *p,
			   const struct kprog_transport *xport,
			   const struct kprog_peer_ref *peer,
			   struct kprog_iov_import *im, u64 now)
{
	struct kprog_op *sop;
	struct kprog_msg *msg;
	int err;

	sop = kprog_op_create(ep, p, true, im);
	if (IS_ERR(sop))
		return PTR_ERR(sop);
	if (peer->kind == KPROG_PEER_LOCAL) {
		kprog_ep_get(peer->ep);
		sop->dst = peer->ep;
	}
	msg = kprog_rndv_build(sop, xport,
			       p->flags & KPROG_SEND_SYNC ? KPROG_ENV_SYNC : 0,
			       &err);
	if (!msg)
		goto err_op;
	msg->send_ns = now;
	msg->poster_waits = p->flags & KPROG_POST_BLOCKING;
	sop->times.send_ns = now;
	sop->state = KPROG_OP_POSTED;
	/* Its completion may come before send_env returns. */
	kprog_op_activate(sop);
	err = xport->send_env(ep->job, peer, msg);
	if (err) {
		if (xport->put_handle)
			xport->put_handle(sop);
		kprog_msg_free(msg);
		if (kprog_op_deactivate(sop))
			kprog_op_put(sop);
		return err;
	}
	p->done = 0;
	return 0;

err_op:
	kprog_op_uncharge(sop);
	kprog_op_put(sop);
	return err;
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
	const struct kprog_transport *xport;
	struct kprog_iov_import im;
	struct kprog_peer_ref peer;
	u64 now;
	int err;

	if (p->flags & ~(KPROG_POST_IOV | KPROG_SEND_SYNC |
			 KPROG_POST_BLOCKING))
		return -EINVAL;
	if (p->peer < 0 || p->peer >= job->size || p->tag < 0)
		return -EINVAL;
	if (!current->mm)
		return -EINVAL;
	p->done = 0;
	/* A clock read only in a job whose receivers want Late Sender times. */
	now = READ_ONCE(job->times) ? ktime_get_ns() : 0;
	err = kprog_iov_import(&im, p);
	if (err)
		return err;
	trace_kprog_post(job->key, ep->rank, true, p->req_id, p->context,
			 p->peer, p->tag, im.len, p->flags);
	kprog_job_peer(job, p->peer, &peer);
	if (peer.kind == KPROG_PEER_LOCAL) {
		err = kprog_chan_drain_to(ep, p->peer);
		if (err)
			goto out;
	}
	xport = kprog_xport_for(job, &peer);
	if (!xport) {
		err = peer.kind == KPROG_PEER_REMOTE ? -EHOSTUNREACH :
						       -ECONNRESET;
		goto out;
	}
	err = -ENOBUFS;
	if (!(p->flags & KPROG_SEND_SYNC) && im.len <= job->eager_limit &&
	    im.len + KPROG_EAGER_OVERHEAD <= kprog_eager_quota)
		err = kprog_send_eager(ep, p, xport, &peer, &im, now);
	/* -ENOBUFS from the eager path: the receiver's quota is used up. */
	if (err == -ENOBUFS && !p->done)
		err = kprog_send_rndv(ep, p, xport, &peer, &im, now);
	if (!err)
		kprog_ring_count_send(&ep->ring, p->peer, im.len);
out:
	if (peer.ep)
		kprog_ep_put(peer.ep);
	kprog_iov_release(&im);
	return err;
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
	struct kprog_msg *msg;
	struct kprog_op *rop;
	bool by_msg = p->flags & KPROG_RECV_MESSAGE;
	bool arrived = p->flags & KPROG_RECV_ARRIVED;
	u64 bytes;
	int err;

	if (p->flags & ~(KPROG_POST_IOV | KPROG_RECV_MESSAGE |
			 KPROG_RECV_ARRIVED | KPROG_POST_BLOCKING))
		return -EINVAL;
	if (!by_msg) {
		if (p->peer != KPROG_ANY_SOURCE &&
		    (p->peer < 0 || p->peer >= job->size))
			return -EINVAL;
		if (p->tag != KPROG_ANY_TAG && p->tag < 0)
			return -EINVAL;
	}

	if (!by_msg) {
		err = kprog_chan_drain(ep, p->peer);
		if (err)
			return err;
	}
	/* Cheap answer to the common question "not yet?" (ECONNRESET aside). */
	if (arrived && !by_msg &&
	    (p->peer == KPROG_ANY_SOURCE || !kprog_job_rank_left(job, p->peer)) &&
	    !kprog_match_held(ep, p->context, p->peer, p->tag))
		return -EAGAIN;
	/* Charged by the match: a held message needs no free slot. */
	rop = kprog_op_new(ep, p, false, NULL, KPROG_BUDGET_NONE);
	if (IS_ERR(rop))
		return PTR_ERR(rop);
	rop->by_msg = by_msg;
	rop->msg_id = p->msg_id;
	/* Small receives another node's message may match: no worker. */
	if (job->net && !by_msg && !arrived &&
	    (job->net_only || p->peer == KPROG_ANY_SOURCE ||
	     !kprog_job_is_local(job, p->peer)))
		kprog_uland_pin(&rop->land, &rop->buf);
	if (ep->times)
		rop->times.recv_ns = ktime_get_ns();
	trace_kprog_post(job->key, ep->rank, false, p->req_id, p->context,
			 p->peer, p->tag, rop->buf.len, p->flags);
	err = kprog_match_recv(ep, rop, &msg, arrived);
	p->done = 0;
	if (err == -ECONNRESET) {
		/* Nothing buffered from a rank that left: fail, don't hang. */
		p->done = 1;
		kprog_cqe_fill(&p->cqe, p->req_id, p->peer, p->tag, 0, err);
		err = 0;
		goto out_uncharge;
	}
	if (err)
		goto out_uncharge;
	if (!msg)
		return 0;	/* posted */
	if (msg->src_gone) {
		p->done = 1;
		kprog_cqe_fill(&p->cqe, p->req_id, msg->env.src, msg->env.tag,
			       0, -ECONNRESET);
		kprog_msg_drop(msg, -ECONNRESET);
		goto out_uncharge;
	}
	if (kprog_msg_is_rndv(msg)) {
		/* On the owner's list already; the transfer takes a reference. */
		kprog_op_get(rop);
		/* A caller that would only wait copies the data itself. */
		kprog_rndv_start(msg, rop, msg->env.len <= job->eager_limit ||
				 (p->flags & KPROG_POST_BLOCKING));
		return 0;
	}
	bytes = kprog_eager_copy_out(msg, rop, &err);
	p->done = 1;
	kprog_cqe_fill(&p->cqe, p->req_id, msg->env.src, msg->env.tag, bytes,
		       err);
	kprog_msg_free(msg);
	err = 0;
out_uncharge:
	kprog_op_uncharge(rop);
	kprog_op_put(rop);
	return err;
}

/**
 * kprog_probe_post() - KPROG_IOC_PROBE
 * @ep: joined endpoint
 * @pr: the request, copied in; output fields are filled
 *
 * With KPROG_PROBE_BLOCK it sleeps until a message matches; a new message
 * in the unexpected queue, a departure, a channel record announced by a
 * kick (KPROG_IOC_KICK) or any other event of the endpoint wakes it.
 *
 * Return: 0, -EINVAL, -EEXIST, -EINTR, -ENOMEM, or -ECONNRESET when
 * blocking on a named source that has left and has nothing buffered.
 */
int kprog_probe_post(struct kprog_ep *ep, struct kprog_probe *pr)
{
	struct kprog_job *job = ep->job;
	u32 events;
	int err;

	if (pr->flags & ~(KPROG_PROBE_BLOCK | KPROG_PROBE_DEQUEUE))
		return -EINVAL;
	if (pr->source != KPROG_ANY_SOURCE &&
	    (pr->source < 0 || pr->source >= job->size))
		return -EINVAL;
	if (pr->tag != KPROG_ANY_TAG && pr->tag < 0)
		return -EINVAL;
	for (;;) {
		events = atomic_read(&ep->events);
		err = kprog_chan_drain(ep, pr->source);
		if (!err)
			err = kprog_match_probe(ep, pr);
		if (err || pr->found || !(pr->flags & KPROG_PROBE_BLOCK))
			return err;
		if (pr->source != KPROG_ANY_SOURCE &&
		    kprog_job_rank_left(job, pr->source))
			return -ECONNRESET;
		if (wait_event_interruptible(ep->wq,
					     (u32)atomic_read(&ep->events) !=
					     events))
			return -EINTR;
	}
}
