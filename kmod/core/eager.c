// SPDX-License-Identifier: GPL-2.0
/*
 * kprog eager protocol: a small send's data travels in its message, so
 * the send completes at once whatever the receiver does.
 *
 *   sender side     kprog_eager_build() copies the payload into the
 *                   message (one copy); the send completes at post
 *   receiving side  a receive that finds it in the unexpected queue
 *                   copies it out in its own process (kprog_eager_copy_out,
 *                   the second copy); a message that finds its receive
 *                   already posted is copied into that receive's pages at
 *                   once from the arriving context when that is a
 *                   process or when the receive's pages were pinned at
 *                   post (a small receive that a message from another
 *                   node may match), else from a worker
 *                   (kprog_eager_deliver)
 */
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/workqueue.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "match.h"
#include "transport.h"
#include "stats.h"
#include "kprog_trace.h"

static struct workqueue_struct *kprog_eager_wq;

/**
 * kprog_eager_build() - the message of an eager send, payload copied in
 * @ep: the sending endpoint (current process)
 * @p: the post
 * @im: its imported buffer
 * @err: set on failure (-ENOMEM, -EFAULT)
 *
 * Return: the message, or NULL.
 */
struct kprog_msg *kprog_eager_build(struct kprog_ep *ep,
				    const struct kprog_post *p,
				    const struct kprog_iov_import *im,
				    int *err)
{
	struct kprog_env env = {
		.context = p->context,
		.src = ep->rank,
		.dst = p->peer,
		.tag = p->tag,
		.len = im->len,
	};
	struct kprog_msg *msg = kprog_msg_alloc(&env, GFP_KERNEL_ACCOUNT);

	if (!msg) {
		*err = -ENOMEM;
		return NULL;
	}
	msg->send_req = p->req_id;
	msg->may_bounce = true;
	*err = kprog_msg_alloc_data(msg, GFP_KERNEL_ACCOUNT);
	if (!*err)
		*err = kprog_umem_copy_in(msg->data, im->iov, im->nr_iov,
					  im->len);
	if (*err) {
		kprog_msg_free(msg);
		return NULL;
	}
	return msg;
}

/**
 * kprog_eager_copy_out() - copy an eager message into a receive buffer of
 *	the current process
 * @msg: the message, taken off its queue
 * @rop: the receive, posted by the current process
 * @err: set to 0, -EFAULT or -EMSGSIZE (the message was longer)
 *
 * Return: bytes copied.
 */
u64 kprog_eager_copy_out(struct kprog_msg *msg, struct kprog_op *rop,
			 int *err)
{
	u64 n = min(msg->env.len, rop->buf.len), pos;
	u64 key = rop->owner->job->key;

	trace_kprog_copy_start(key, &msg->env, msg->send_req, rop->req_id, n,
			       0);
	pos = kprog_umem_copy_out(rop->buf.iov, rop->buf.nr_iov, msg->data, n,
				  err);
	kprog_stat_add(KPROG_STAT_BYTES, pos);
	trace_kprog_copy_end(key, &msg->env, msg->send_req, rop->req_id, pos,
			     *err);
	if (!*err && msg->env.len > rop->buf.len)
		*err = -EMSGSIZE;
	return pos;
}

static bool kprog_eager_aborted(void *arg)
{
	return kprog_xfer_aborted(arg);
}

/* Into another process's pages; process context. */
static u64 kprog_eager_copy(struct kprog_xfer *x, int *err)
{
	return kprog_umem_copy(&x->rop->buf, NULL, x->msg->data, x->len,
			       kprog_eager_aborted, x, err);
}

static void kprog_eager_work(struct work_struct *work)
{
	struct kprog_xfer *x = container_of(work, struct kprog_xfer, work);
	u64 start = kprog_stat_clock(), done;
	int err;

	done = kprog_eager_copy(x, &err);
	/* Counted before the completion makes it visible to user space. */
	kprog_stat_run(KPROG_STAT_WORK_ITEMS, start);
	kprog_xfer_done(x, done, err);
}

/**
 * kprog_eager_deliver() - an eager message found its receive posted
 * @msg: the message, off every queue
 * @rop: the receive; the caller's reference passes to the delivery
 *
 * Copies at once when called by a process (the sender's, for local
 * messages: cheaper than waking a worker for a small copy), else from a
 * worker. Any context the arrival path allows.
 */
void kprog_eager_deliver(struct kprog_msg *msg, struct kprog_op *rop)
{
	struct kprog_xfer *x;
	struct kprog_cqe c;
	u64 done;
	int err;

	x = kzalloc(sizeof(*x), in_task() ? GFP_KERNEL : GFP_ATOMIC);
	if (!x) {
		kprog_cqe_fill(&c, rop->req_id, msg->env.src, msg->env.tag, 0,
			       -ENOMEM);
		kprog_op_complete(rop, &c);
		kprog_op_put(rop);
		kprog_msg_free(msg);
		return;
	}
	x->msg = msg;
	x->rop = rop;
	x->len = min(msg->env.len, rop->buf.len);
	kprog_ep_xfer_get(rop->owner);
	trace_kprog_copy_start(rop->owner->job->key, &msg->env, msg->send_req,
			       rop->req_id, x->len, 0);
	if (!x->len) {
		kprog_xfer_done(x, 0, 0);
	} else if (in_task() && current->mm == rop->buf.mm) {
		/* A process sending to itself: plain copy_to_user(). */
		done = kprog_umem_copy_out(rop->buf.iov, rop->buf.nr_iov,
					   msg->data, x->len, &err);
		kprog_xfer_done(x, done, err);
	} else if (in_task()) {
		done = kprog_eager_copy(x, &err);
		kprog_xfer_done(x, done, err);
	} else if (rop->land.nr) {
		/*
		 * From another node, into pages pinned at post: a worker's
		 * wake-up, pin and copy were most of a small message's time
		 * on the receiving node (docs/rdma.md, "Small messages").
		 */
		done = kprog_uland_copy(&rop->land, msg->data, x->len);
		kprog_xfer_done(x, done, 0);
	} else {
		INIT_WORK(&x->work, kprog_eager_work);
		queue_work(kprog_eager_wq, &x->work);
	}
}

/**
 * kprog_eager_init() - the worker for deliveries from softirq context
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_eager_init(void)
{
	kprog_eager_wq = alloc_workqueue("kprog_eager", WQ_UNBOUND, 0);
	return kprog_eager_wq ? 0 : -ENOMEM;
}

/**
 * kprog_eager_exit() - wait for queued deliveries and free the worker
 */
void kprog_eager_exit(void)
{
	destroy_workqueue(kprog_eager_wq);
}
