// SPDX-License-Identifier: GPL-2.0
/*
 * kprog endpoints and the lifetime of operations.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include "kprog.h"

/*
 * The last reference to an op may go away in a transport's completion
 * callback (any context), but freeing it drops mm and endpoint references
 * and may vfree a ring, so such frees are deferred to this work item.
 */
static LLIST_HEAD(kprog_free_list);
static struct workqueue_struct *kprog_free_wq;

/* Live objects, checked at unload to catch leaks. */
static atomic_t kprog_live_eps = ATOMIC_INIT(0);
static atomic_t kprog_live_ops = ATOMIC_INIT(0);

static void kprog_ep_release(struct kref *ref)
{
	struct kprog_ep *ep = container_of(ref, struct kprog_ep, ref);

	/* Every op returned its slot and iovec entries before it let go. */
	WARN_ON_ONCE(ep->nr_ops || ep->iov_total);
	kprog_ring_free(ep);
	if (ep->job)
		kprog_job_put(ep->job);
	kfree(ep);
	atomic_dec(&kprog_live_eps);
}

/**
 * kprog_ep_alloc() - a new endpoint for an opened file, not in any job
 *
 * Return: the endpoint holding one reference, or NULL.
 */
struct kprog_ep *kprog_ep_alloc(void)
{
	struct kprog_ep *ep = kzalloc(sizeof(*ep), GFP_KERNEL_ACCOUNT);

	if (!ep)
		return NULL;
	atomic_inc(&kprog_live_eps);
	kref_init(&ep->ref);
	spin_lock_init(&ep->mlock);
	spin_lock_init(&ep->olock);
	INIT_LIST_HEAD(&ep->posted);
	INIT_LIST_HEAD(&ep->unexpected);
	INIT_LIST_HEAD(&ep->mprobed);
	INIT_LIST_HEAD(&ep->ops);
	INIT_LIST_HEAD(&ep->overflow);
	init_waitqueue_head(&ep->wq);
	return ep;
}

/**
 * kprog_ep_put() - drop an endpoint reference
 * @ep: endpoint
 *
 * Must be called where sleeping is allowed; the last put frees the ring.
 */
void kprog_ep_put(struct kprog_ep *ep)
{
	kref_put(&ep->ref, kprog_ep_release);
}

static void kprog_op_free(struct kprog_op *op)
{
	kvfree(op->kbuf);
	if (op->iov != &op->iov_inline)
		kvfree(op->iov);
	if (op->mm)
		mmdrop(op->mm);
	if (op->owner)
		kprog_ep_put(op->owner);
	if (op->mep)
		kprog_ep_put(op->mep);
	kfree(op);
	atomic_dec(&kprog_live_ops);
}

static void kprog_free_work_fn(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kprog_free_list);
	struct kprog_op *op, *tmp;

	llist_for_each_entry_safe(op, tmp, list, fnode)
		kprog_op_free(op);
}

static DECLARE_WORK(kprog_free_work, kprog_free_work_fn);

/**
 * kprog_op_put() - drop an operation reference
 * @op: operation
 *
 * Safe in any context except under ep->mlock or job->lock (plain
 * spinlocks that do not show in preempt_count() on every configuration):
 * the free is deferred when the caller cannot sleep.
 */
void kprog_op_put(struct kprog_op *op)
{
	if (!refcount_dec_and_test(&op->ref))
		return;
	if (preemptible()) {
		kprog_op_free(op);
		return;
	}
	if (llist_add(&op->fnode, &kprog_free_list))
		queue_work(kprog_free_wq, &kprog_free_work);
}

/**
 * kprog_op_uncharge() - return the operation slot and iovec entries of @op
 * @op: operation of its owner, not on the owner's lists
 *
 * For operations that end without a ring entry (failed or completed at
 * post time).
 */
void kprog_op_uncharge(struct kprog_op *op)
{
	struct kprog_ep *ep = op->owner;
	unsigned long flags;

	spin_lock_irqsave(&ep->olock, flags);
	kprog_op_release_slot(ep, op);
	spin_unlock_irqrestore(&ep->olock, flags);
}

/**
 * kprog_op_activate() - put a posted operation on its owner's list
 * @op: operation about to become visible; its completion goes to the ring
 *
 * The op's first reference passes to the list.
 */
void kprog_op_activate(struct kprog_op *op)
{
	struct kprog_ep *ep = op->owner;
	unsigned long flags;

	spin_lock_irqsave(&ep->olock, flags);
	list_add_tail(&op->onode, &ep->ops);
	op->olist = KPROG_OL_ACTIVE;
	spin_unlock_irqrestore(&ep->olock, flags);
}

static int kprog_op_import(struct kprog_op *op, const struct kprog_post *p)
{
	struct kprog_iov *iov;
	u64 total = 0;
	u32 i, n;

	if (!(p->flags & KPROG_POST_IOV)) {
		if (p->len > KPROG_MAX_MSG || p->addr + p->len < p->addr)
			return -EINVAL;
		op->len = p->len;
		op->iov = &op->iov_inline;
		if (p->len) {
			op->iov_inline.base = p->addr;
			op->iov_inline.len = p->len;
			op->nr_iov = 1;
		}
		return 0;
	}

	if (p->len > kprog_max_iov)
		return -EINVAL;
	n = p->len;
	op->iov = &op->iov_inline;
	if (!n)
		return 0;
	iov = kvmalloc_array(n, sizeof(*iov), GFP_KERNEL_ACCOUNT);
	if (!iov)
		return -ENOMEM;
	if (copy_from_user(iov, u64_to_user_ptr(p->addr), n * sizeof(*iov))) {
		kvfree(iov);
		return -EFAULT;
	}
	op->iov = iov;
	for (i = 0; i < n; i++) {
		if (!iov[i].len)
			continue;
		if (iov[i].base + iov[i].len < iov[i].base ||
		    iov[i].len > KPROG_MAX_MSG - total)
			return -EINVAL;
		total += iov[i].len;
		/* Empty segments are dropped so transports never see them. */
		iov[op->nr_iov++] = iov[i];
	}
	op->len = total;
	return 0;
}

/**
 * kprog_op_create() - a new operation of @ep from a post
 * @ep: the posting endpoint (joined)
 * @post: the validated request; addresses are in current's mm
 * @is_send: a send rather than a receive
 *
 * Copies the iovec array, charges one of the endpoint's max_ops slots and
 * the array's entries against max_iov_total (ENOBUFS), references the
 * poster's mm and @ep. The caller either activates the op or uncharges and
 * puts it.
 *
 * Return: the op with one reference, or an ERR_PTR.
 */
struct kprog_op *kprog_op_create(struct kprog_ep *ep,
				 const struct kprog_post *post, bool is_send)
{
	struct kprog_op *op;
	unsigned long flags;
	u32 charge;
	int err;

	if (!current->mm)
		return ERR_PTR(-EINVAL);
	op = kzalloc(sizeof(*op), GFP_KERNEL_ACCOUNT);
	if (!op)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&kprog_live_ops);
	refcount_set(&op->ref, 1);
	INIT_LIST_HEAD(&op->qnode);
	INIT_LIST_HEAD(&op->onode);
	op->is_send = is_send;
	op->req_id = post->req_id;
	op->context = post->context;
	op->peer = post->peer;
	op->tag = post->tag;
	op->src_rank = ep->rank;
	err = kprog_op_import(op, post);
	if (err)
		goto err_free;

	/* Only an allocated iovec array is charged, as many entries as it has. */
	charge = op->iov != &op->iov_inline ? post->len : 0;
	spin_lock_irqsave(&ep->olock, flags);
	if (ep->nr_ops >= kprog_max_ops ||
	    ep->iov_total + charge > kprog_max_iov_total) {
		spin_unlock_irqrestore(&ep->olock, flags);
		err = -ENOBUFS;
		goto err_free;
	}
	ep->nr_ops++;
	ep->iov_total += charge;
	op->iov_charge = charge;
	spin_unlock_irqrestore(&ep->olock, flags);

	kprog_ep_get(ep);
	op->owner = ep;
	mmgrab(current->mm);
	op->mm = current->mm;
	return op;

err_free:
	kprog_op_free(op);
	return ERR_PTR(err);
}

/**
 * kprog_op_copy_in() - copy a send's payload into a kernel buffer
 * @op: a send created by the current task, not yet visible
 *
 * Return: 0, -ENOMEM or -EFAULT.
 */
int kprog_op_copy_in(struct kprog_op *op)
{
	u64 pos = 0;
	u32 i;

	if (!op->len)
		return 0;
	op->kbuf = kvmalloc(op->len, GFP_KERNEL_ACCOUNT);
	if (!op->kbuf)
		return -ENOMEM;
	for (i = 0; i < op->nr_iov; i++) {
		if (copy_from_user(op->kbuf + pos,
				   u64_to_user_ptr(op->iov[i].base),
				   op->iov[i].len))
			return -EFAULT;
		pos += op->iov[i].len;
	}
	return 0;
}

/**
 * kprog_ep_init() - set up the deferred-free machinery
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_ep_init(void)
{
	kprog_free_wq = alloc_workqueue("kprog_free", 0, 0);
	return kprog_free_wq ? 0 : -ENOMEM;
}

/**
 * kprog_ep_exit() - wait for deferred frees; call after the transports
 */
void kprog_ep_exit(void)
{
	destroy_workqueue(kprog_free_wq);
	if (atomic_read(&kprog_live_eps) || atomic_read(&kprog_live_ops))
		pr_err("kprog: leaked %d endpoints, %d operations\n",
		       atomic_read(&kprog_live_eps),
		       atomic_read(&kprog_live_ops));
}
