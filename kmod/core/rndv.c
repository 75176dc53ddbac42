// SPDX-License-Identifier: GPL-2.0
/*
 * kprog rendezvous: a send whose data stays in the sender's buffer until
 * the receiving side has matched it, then moves in one transfer.
 *
 *   sender side     kprog_rndv_build(): the message carries the envelope
 *                   and what the transport needs to reach the data (a
 *                   registration for a network transport); the send
 *                   operation stays posted
 *   receiving side  once matched, kprog_rndv_start() hands a transfer to
 *                   the transport that brought the message (&pull); the
 *                   transport calls kprog_xfer_done(), which completes the
 *                   receive and tells the sender (&fin), which completes
 *                   the send through kprog_send_done()
 *
 * Every step after the match runs from the transport's worker or
 * completion handler, never from a call of the application. Transfers of
 * eager messages (eager.c) end in kprog_xfer_done() too.
 */
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "match.h"
#include "transport.h"
#include "stats.h"
#include "kprog_trace.h"

/**
 * kprog_rndv_build() - the message of a rendezvous send
 * @sop: the send operation (created, not yet visible)
 * @xport: the transport that carries it
 * @flags: extra KPROG_ENV_* flags (KPROG_ENV_SYNC)
 * @err: set on failure
 *
 * Return: the message, holding a reference on @sop, or NULL.
 */
struct kprog_msg *kprog_rndv_build(struct kprog_op *sop,
				   const struct kprog_transport *xport,
				   u32 flags, int *err)
{
	struct kprog_env env = {
		.context = sop->context,
		.src = sop->owner->rank,
		.dst = sop->peer,
		.tag = sop->tag,
		.len = sop->buf.len,
		.flags = KPROG_ENV_RNDV | flags,
	};
	struct kprog_msg *msg = kprog_msg_alloc(&env, GFP_KERNEL_ACCOUNT);

	if (!msg) {
		*err = -ENOMEM;
		return NULL;
	}
	msg->xport = xport;
	msg->send_req = sop->req_id;
	kprog_op_get(sop);
	msg->sop = sop;
	if (xport->get_handle) {
		*err = xport->get_handle(sop, msg);
		if (*err) {
			kprog_msg_free(msg);
			return NULL;
		}
	}
	return msg;
}

/**
 * kprog_rndv_start() - a rendezvous message was matched: move its data
 * @msg: the message, off every queue
 * @rop: the receive; the caller's reference passes to the transfer
 * @inline_ok: the caller is a process and the message small, so the
 *	transport may move it before returning
 *
 * Any context the arrival path allows. Failures complete both sides.
 */
void kprog_rndv_start(struct kprog_msg *msg, struct kprog_op *rop,
		      bool inline_ok)
{
	struct kprog_xfer *x;
	int err;

	x = kzalloc(sizeof(*x), in_task() ? GFP_KERNEL : GFP_ATOMIC);
	if (!x) {
		struct kprog_cqe c;

		kprog_cqe_fill(&c, rop->req_id, msg->env.src, msg->env.tag, 0,
			       -ENOMEM);
		kprog_op_complete(rop, &c);
		kprog_op_put(rop);
		kprog_msg_drop(msg, -ENOMEM);
		return;
	}
	x->msg = msg;
	x->rop = rop;
	x->len = min(msg->env.len, rop->buf.len);
	kprog_ep_xfer_get(rop->owner);
	if (msg->src_gone) {
		kprog_xfer_done(x, 0, -ECONNRESET);
		return;
	}
	trace_kprog_copy_start(rop->owner->job->key, &msg->env, msg->send_req,
			       rop->req_id, x->len, 0);
	if (!x->len) {
		kprog_xfer_done(x, 0, 0);
		return;
	}
	err = msg->xport->pull(x, inline_ok);
	if (err)
		kprog_xfer_done(x, 0, err);
}

/**
 * kprog_xfer_done() - report the end of a transfer to the core
 * @x: the transfer handed to &kprog_transport.pull, or an eager delivery
 * @bytes: bytes actually written to the receive buffer
 * @err: 0 or a negative errno (-EFAULT for an unmapped buffer,
 *	-ECONNRESET when a side went away, -ENOMEM, ...)
 *
 * Completes the receive (with -EMSGSIZE when the message was longer than
 * the buffer), tells a rendezvous sender, frees the message and @x.
 * Process or softirq context, no locks held.
 */
void kprog_xfer_done(struct kprog_xfer *x, u64 bytes, int err)
{
	struct kprog_msg *msg = x->msg;
	struct kprog_op *rop = x->rop;
	struct kprog_ep *owner = rop->owner;
	struct kprog_cqe c;

	trace_kprog_copy_end(owner->job->key, &msg->env, msg->send_req,
			     rop->req_id, bytes, err);
	kprog_stat_add(KPROG_STAT_BYTES, bytes);
	if (!err && msg->env.len > rop->buf.len)
		err = -EMSGSIZE;
	kprog_cqe_fill(&c, rop->req_id, msg->env.src, msg->env.tag, bytes, err);
	kprog_op_complete(rop, &c);
	if (kprog_msg_is_rndv(msg) && msg->xport->fin)
		msg->xport->fin(msg, bytes, err == -EMSGSIZE ? 0 : err);
	kprog_ep_xfer_put(owner);
	kprog_op_put(rop);
	kprog_msg_free(msg);
	kfree(x);
}
EXPORT_SYMBOL_GPL(kprog_xfer_done);

/**
 * kprog_xfer_aborted() - should a transfer in progress stop?
 * @x: a transfer handed to &kprog_transport.pull
 *
 * Transports also check the side they serve (the sender's endpoint for
 * shared memory, the connection for a network).
 *
 * Return: true once the receiving endpoint has left. Any context.
 */
bool kprog_xfer_aborted(const struct kprog_xfer *x)
{
	return kprog_ep_gone(x->rop->owner);
}
EXPORT_SYMBOL_GPL(kprog_xfer_aborted);

/**
 * kprog_send_done() - complete a rendezvous send on the sender's side
 * @sop: the send operation
 * @env: its message's envelope
 * @bytes: bytes the receiver got
 * @err: 0 or a negative errno (-ECONNRESET: the receiver left;
 *	-ECANCELED: withdrawn by KPROG_IOC_CANCEL)
 *
 * For transports' &kprog_transport.fin. Any context.
 */
void kprog_send_done(struct kprog_op *sop, const struct kprog_env *env,
		     u64 bytes, int err)
{
	struct kprog_cqe c;

	kprog_cqe_fill(&c, sop->req_id, env->dst, env->tag, bytes, err);
	kprog_op_complete(sop, &c);
}
EXPORT_SYMBOL_GPL(kprog_send_done);

/**
 * kprog_msg_drop() - release a message that will never be received
 * @msg: a message off every queue (withdrawn, or its receiver left)
 * @err: what its rendezvous sender is told
 */
void kprog_msg_drop(struct kprog_msg *msg, int err)
{
	if (kprog_msg_is_rndv(msg) && msg->xport && msg->xport->fin)
		msg->xport->fin(msg, 0, err);
	kprog_msg_free(msg);
}
EXPORT_SYMBOL_GPL(kprog_msg_drop);
