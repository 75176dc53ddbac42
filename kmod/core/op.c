// SPDX-License-Identifier: GPL-2.0
/*
 * kprog operations: creation from a post, the owner's budgets (max_ops,
 * max_rndv, max_iov_total), the owner's list of pending operations, references and
 * the deferred free.
 */
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/capability.h>
#include <linux/workqueue.h>
#include "kprog.h"
#include "op.h"

/*
 * The last reference to an op may go away in a transport's completion
 * callback (any context), but freeing it drops mm and endpoint references
 * and may free a ring, so such frees are deferred to this work item. It
 * runs a tick later, for every op deferred meanwhile: a message from
 * another node completes its receive in softirq, and a worker woken for
 * each such free took the CPU from the rank that was about to see the
 * completion (two context switches per small message, docs/rdma.md).
 */
#define KPROG_OP_FREE_DELAY	1	/* jiffies */

static LLIST_HEAD(kprog_op_free_list);
static struct workqueue_struct *kprog_op_free_wq;

/* Live operations, checked at unload to catch leaks. */
static atomic_t kprog_live_ops = ATOMIC_INIT(0);

static void kprog_op_free(struct kprog_op *op)
{
	kprog_uland_unpin(&op->land, op->buf.mm);
	if (op->buf.iov && op->buf.iov != &op->iov_inline)
		kvfree(op->buf.iov);
	if (op->buf.mm)
		mmdrop(op->buf.mm);
	if (op->dst)
		kprog_ep_put(op->dst);
	if (op->owner)
		kprog_ep_put(op->owner);
	kfree(op);
	atomic_dec(&kprog_live_ops);
}

static void kprog_op_free_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kprog_op_free_list);
	struct kprog_op *op, *tmp;

	llist_for_each_entry_safe(op, tmp, list, fnode)
		kprog_op_free(op);
}

static DECLARE_DELAYED_WORK(kprog_op_free_item, kprog_op_free_work);

/**
 * kprog_op_get() - take an operation reference
 * @op: operation referenced by the caller or protected by a lock
 */
void kprog_op_get(struct kprog_op *op)
{
	refcount_inc(&op->ref);
}
EXPORT_SYMBOL_GPL(kprog_op_get);

/**
 * kprog_op_put() - drop an operation reference
 * @op: operation
 *
 * Any context, but not under a spinlock that does not show in
 * preempt_count() on every configuration (mlock, job->lock): the free is
 * deferred when the caller cannot sleep.
 */
void kprog_op_put(struct kprog_op *op)
{
	if (!refcount_dec_and_test(&op->ref))
		return;
	if (preemptible()) {
		kprog_op_free(op);
		return;
	}
	if (llist_add(&op->fnode, &kprog_op_free_list))
		queue_delayed_work(kprog_op_free_wq, &kprog_op_free_item,
				   KPROG_OP_FREE_DELAY);
}
EXPORT_SYMBOL_GPL(kprog_op_put);

/**
 * kprog_op_charge() - take a max_ops slot and @iov_entries entries
 * @ep: owner
 * @iov_entries: entries of an iovec array (0 for a single buffer)
 *
 * For an eager send, which holds them only during its post.
 *
 * Return: 0 or -ENOBUFS.
 */
int kprog_op_charge(struct kprog_ep *ep, u32 iov_entries)
{
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&ep->olock, flags);
	if (ep->nr_ops >= kprog_max_ops ||
	    ep->iov_total + iov_entries > kprog_max_iov_total) {
		err = -ENOBUFS;
	} else {
		ep->nr_ops++;
		ep->iov_total += iov_entries;
	}
	spin_unlock_irqrestore(&ep->olock, flags);
	return err;
}

/**
 * kprog_op_charge_budget() - charge an uncharged op to one of its
 *	owner's budgets
 * @op: operation with budget KPROG_BUDGET_NONE
 * @budget: KPROG_BUDGET_OPS or KPROG_BUDGET_RNDV
 * @force: past the limits: for a receive that takes a message already
 *	held by its owner, whose memory its sender's budget bounds
 *
 * Any context; takes the owner's olock (irq-safe, may nest in mlock).
 *
 * Return: 0 or -ENOBUFS.
 */
int kprog_op_charge_budget(struct kprog_op *op, enum kprog_op_budget budget,
			   bool force)
{
	struct kprog_ep *ep = op->owner;
	unsigned long flags;
	u32 *count, limit;
	int err = 0;

	if (WARN_ON_ONCE(op->budget != KPROG_BUDGET_NONE))
		return -EINVAL;
	if (budget == KPROG_BUDGET_RNDV) {
		count = &ep->nr_rndv;
		limit = kprog_max_rndv;
	} else {
		count = &ep->nr_ops;
		limit = kprog_max_ops;
	}
	spin_lock_irqsave(&ep->olock, flags);
	if (!force && (*count >= limit ||
		       ep->iov_total + op->iov_charge > kprog_max_iov_total)) {
		err = -ENOBUFS;
	} else {
		(*count)++;
		ep->iov_total += op->iov_charge;
		op->budget = budget;
	}
	spin_unlock_irqrestore(&ep->olock, flags);
	return err;
}

/**
 * kprog_op_uncharge_raw() - undo kprog_op_charge()
 * @ep: owner
 * @iov_entries: as charged
 */
void kprog_op_uncharge_raw(struct kprog_ep *ep, u32 iov_entries)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->olock, flags);
	ep->nr_ops--;
	WARN_ON_ONCE(ep->iov_total < iov_entries);
	ep->iov_total -= iov_entries;
	spin_unlock_irqrestore(&ep->olock, flags);
}

/**
 * kprog_memlock_pages() - what the caller may pin for a network transfer
 *
 * In the poster's own system call only: a kernel thread (a work item on a
 * borrowed mm) has every capability, and its limits are not the process's.
 *
 * Return: RLIMIT_MEMLOCK in pages; U64_MAX without a limit or with
 * CAP_IPC_LOCK.
 */
u64 kprog_memlock_pages(void)
{
	unsigned long lim = rlimit(RLIMIT_MEMLOCK);

	return lim == RLIM_INFINITY || capable(CAP_IPC_LOCK) ? U64_MAX :
							       lim >> PAGE_SHIFT;
}

/**
 * kprog_op_new_mm() - a new operation of @ep on a buffer in @mm
 * @ep: the posting endpoint (joined)
 * @post: the validated request
 * @is_send: a send rather than a receive
 * @im: the post's buffer if the caller imported it already (the op takes
 *	it over, leaving @im empty), or NULL to import it from @post (then
 *	@mm must be current's)
 * @budget: the budget to charge now (ENOBUFS when it is used up), or
 *	KPROG_BUDGET_NONE to charge later with kprog_op_charge_budget()
 * @mm: the address space of the buffer: the poster's, or the granting
 *	sender's for a send the kernel posts on its behalf (grant.c)
 *
 * Copies the iovec array, charges one slot of @budget and the array's
 * entries against max_iov_total, references @mm and @ep. The caller
 * either activates the op or uncharges and puts it. The pin limit
 * (&kprog_ubuf.memlock) is read here when the poster calls on its own mm;
 * otherwise it is 0 (nothing may be pinned long-term) unless the caller
 * sets it (a collective schedule's work item: the poster's, read in its
 * call).
 *
 * Return: the op with one reference, or an ERR_PTR.
 */
struct kprog_op *kprog_op_new_mm(struct kprog_ep *ep,
				 const struct kprog_post *post, bool is_send,
				 struct kprog_iov_import *im,
				 enum kprog_op_budget budget,
				 struct mm_struct *mm)
{
	struct kprog_iov_import own;
	struct kprog_op *op;
	int err;

	if (!mm)
		return ERR_PTR(-EINVAL);
	if (!im) {
		err = kprog_iov_import(&own, post);
		if (err)
			return ERR_PTR(err);
		im = &own;
	}
	op = kzalloc(sizeof(*op), GFP_KERNEL_ACCOUNT);
	if (!op) {
		kprog_iov_release(im);
		return ERR_PTR(-ENOMEM);
	}
	atomic_inc(&kprog_live_ops);
	refcount_set(&op->ref, 1);
	INIT_LIST_HEAD(&op->qnode);
	INIT_LIST_HEAD(&op->onode);
	op->is_send = is_send;
	op->req_id = post->req_id;
	op->context = post->context;
	op->peer = post->peer;
	op->tag = post->tag;
	op->buf.iov = &op->iov_inline;
	if (im->iov == &im->inline_iov) {
		op->iov_inline = im->inline_iov;
	} else {
		op->buf.iov = im->iov;
		op->iov_charge = im->charge;
		im->iov = &im->inline_iov;
	}
	op->buf.nr_iov = im->nr_iov;
	op->buf.len = im->len;
	im->nr_iov = 0;

	op->owner = ep;		/* not referenced yet: kprog_op_free() skips it */
	if (budget != KPROG_BUDGET_NONE) {
		err = kprog_op_charge_budget(op, budget, false);
		if (err) {
			op->owner = NULL;
			kprog_op_free(op);
			return ERR_PTR(err);
		}
	}
	kprog_ep_get(ep);
	mmgrab(mm);
	op->buf.mm = mm;
	/*
	 * Read in the owner's system call: a pin may come from elsewhere.
	 * An op without bytes never pins (a collective's head): it skips
	 * the capability check, microseconds of the start call under
	 * emulation.
	 */
	if (mm == current->mm && op->buf.len &&
	    !(current->flags & PF_KTHREAD))
		op->buf.memlock = kprog_memlock_pages();
	return op;
}

/**
 * kprog_op_new() - kprog_op_new_mm() for a buffer in the poster's mm
 * @ep: the posting endpoint (joined)
 * @post: the validated request; addresses are in current's mm
 * @is_send: a send rather than a receive
 * @im: as for kprog_op_new_mm()
 * @budget: as for kprog_op_new_mm()
 *
 * Return: the op with one reference, or an ERR_PTR.
 */
struct kprog_op *kprog_op_new(struct kprog_ep *ep,
			      const struct kprog_post *post, bool is_send,
			      struct kprog_iov_import *im,
			      enum kprog_op_budget budget)
{
	return kprog_op_new_mm(ep, post, is_send, im, budget, current->mm);
}

/**
 * kprog_op_create() - kprog_op_new() charged to the budget of its kind
 * @ep: the posting endpoint (joined)
 * @post: the validated request
 * @is_send: a rendezvous send (max_rndv) rather than a receive (max_ops)
 * @im: as for kprog_op_new()
 *
 * Return: the op with one reference, or an ERR_PTR.
 */
struct kprog_op *kprog_op_create(struct kprog_ep *ep,
				 const struct kprog_post *post, bool is_send,
				 struct kprog_iov_import *im)
{
	return kprog_op_new(ep, post, is_send, im,
			    is_send ? KPROG_BUDGET_RNDV : KPROG_BUDGET_OPS);
}

/**
 * kprog_op_uncharge() - return the slot and iovec entries of @op
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

/**
 * kprog_op_deactivate() - take an activated op back off its owner's list
 * @op: an op whose post failed after kprog_op_activate(); nothing else
 *	refers to it
 *
 * Returns its slot. The list's reference passes back to the caller.
 *
 * Return: true if the op was still on the list (false: the owner's
 * departure took it and the slot is already returned).
 */
bool kprog_op_deactivate(struct kprog_op *op)
{
	struct kprog_ep *ep = op->owner;
	unsigned long flags;
	bool was = false;

	spin_lock_irqsave(&ep->olock, flags);
	if (op->olist == KPROG_OL_ACTIVE) {
		list_del_init(&op->onode);
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
		was = true;
	}
	spin_unlock_irqrestore(&ep->olock, flags);
	return was;
}

/**
 * kprog_op_init() - set up the deferred-free machinery
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_op_init(void)
{
	kprog_op_free_wq = alloc_workqueue("kprog_free", 0, 0);
	return kprog_op_free_wq ? 0 : -ENOMEM;
}

/**
 * kprog_op_exit() - wait for deferred frees; call after the transports
 */
void kprog_op_exit(void)
{
	cancel_delayed_work_sync(&kprog_op_free_item);
	kprog_op_free_work(&kprog_op_free_item.work);
	destroy_workqueue(kprog_op_free_wq);
	if (atomic_read(&kprog_live_ops))
		pr_err("kprog: leaked %d operations\n",
		       atomic_read(&kprog_live_ops));
}
