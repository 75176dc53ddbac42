// SPDX-License-Identifier: GPL-2.0
/*
 * kprog completion ring: one per endpoint, shared with user space.
 *
 * User space owns hdr->head and may write anything there (or anywhere in
 * the mapping); the kernel reads only head and keeps its own tail.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/hrtimer.h>
#include "kprog.h"
#include "stats.h"
#include "kprog_trace.h"

/**
 * kprog_ring_alloc() - allocate the ring of a joining endpoint
 * @ep: endpoint without a ring
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_ring_alloc(struct kprog_ep *ep)
{
	u64 bytes = PAGE_ALIGN(KPROG_RING_CQES_OFFSET +
			       (u64)kprog_ring_entries * sizeof(struct kprog_cqe));

	ep->ring = vmalloc_user(bytes);
	if (!ep->ring)
		return -ENOMEM;
	ep->hdr = ep->ring;
	ep->cqes = ep->ring + KPROG_RING_CQES_OFFSET;
	ep->ring_bytes = bytes;
	ep->ring_entries = kprog_ring_entries;
	ep->tail = 0;
	ep->hdr->entries = kprog_ring_entries;
	return 0;
}

/**
 * kprog_ring_free() - free the ring (no-op without one)
 * @ep: endpoint no longer reachable by completions
 */
void kprog_ring_free(struct kprog_ep *ep)
{
	vfree(ep->ring);
	ep->ring = NULL;
	ep->hdr = NULL;
	ep->cqes = NULL;
}

/* Caller holds ep->olock. A garbage head simply reads as "full". */
static bool kprog_ring_room(struct kprog_ep *ep)
{
	u32 head = READ_ONCE(ep->hdr->head);

	return ep->tail - head < ep->ring_entries;
}

static void kprog_ring_write(struct kprog_ep *ep, const struct kprog_cqe *cqe)
{
	ep->cqes[ep->tail & (ep->ring_entries - 1)] = *cqe;
	ep->tail++;
	/* Slot contents before the index; pairs with user space's acquire. */
	smp_store_release(&ep->hdr->tail, ep->tail);
}

/**
 * kprog_ring_holds() - is a completion for @req_id waiting to be consumed?
 * @ep: endpoint; caller holds ep->olock
 * @req_id: cookie
 *
 * Looks at the overflow list and the ring slots user space has not
 * consumed yet (at most ring_entries of them, whatever head says).
 *
 * Return: true if one is found.
 */
bool kprog_ring_holds(struct kprog_ep *ep, u64 req_id)
{
	struct kprog_op *op;
	u32 head = READ_ONCE(ep->hdr->head);
	u32 n = min(ep->tail - head, ep->ring_entries);

	list_for_each_entry(op, &ep->overflow, onode)
		if (op->cqe.req_id == req_id)
			return true;
	while (n--) {
		if (READ_ONCE(ep->cqes[(ep->tail - 1 - n) &
				       (ep->ring_entries - 1)].req_id) == req_id)
			return true;
	}
	return false;
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
	if (ep->closed) {
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
		where = KPROG_WHERE_DROPPED;
	} else if (list_empty(&ep->overflow) && kprog_ring_room(ep)) {
		/* Counted before user space can see it. */
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		kprog_ring_write(ep, cqe);
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
		where = KPROG_WHERE_RING;
	} else {
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		/* The op keeps its slot, which bounds the overflow list. */
		op->cqe = *cqe;
		list_add_tail(&op->onode, &ep->overflow);
		op->olist = KPROG_OL_OVERFLOW;
		WRITE_ONCE(ep->hdr->overflow, 1);
		put = false;
		where = KPROG_WHERE_OVERFLOW;
	}
	spin_unlock_irqrestore(&ep->olock, flags);
	trace_kprog_complete(ep, cqe, where);
	/* wq_has_sleeper() orders the ring update before its check. */
	if (wq_has_sleeper(&ep->wq)) {
		kprog_stat_add(KPROG_STAT_WAKEUPS, 1);
		wake_up(&ep->wq);
	}
	if (put)
		kprog_op_put(op);
}

/**
 * kprog_ring_flush() - move overflowed completions into the ring
 * @ep: joined endpoint
 *
 * Process context.
 */
void kprog_ring_flush(struct kprog_ep *ep)
{
	struct kprog_op *op, *tmp;
	unsigned long flags;
	LIST_HEAD(done);

	if (list_empty_careful(&ep->overflow))
		return;
	spin_lock_irqsave(&ep->olock, flags);
	while (!list_empty(&ep->overflow) && kprog_ring_room(ep)) {
		op = list_first_entry(&ep->overflow, struct kprog_op, onode);
		kprog_ring_write(ep, &op->cqe);
		list_move_tail(&op->onode, &done);
		op->olist = KPROG_OL_NONE;
		kprog_op_release_slot(ep, op);
	}
	if (list_empty(&ep->overflow))
		WRITE_ONCE(ep->hdr->overflow, 0);
	spin_unlock_irqrestore(&ep->olock, flags);

	if (list_empty(&done))
		return;
	wake_up(&ep->wq);
	list_for_each_entry_safe(op, tmp, &done, onode) {
		list_del_init(&op->onode);
		kprog_op_put(op);
	}
}

/* Lock-free wake-up test; the caller re-checks after flushing. */
static bool kprog_ring_ready(struct kprog_ep *ep)
{
	u32 head = READ_ONCE(ep->hdr->head);
	u32 tail = READ_ONCE(ep->tail);

	if (head != tail)
		return true;
	return !list_empty_careful(&ep->overflow);
}

static bool kprog_ring_nonempty(struct kprog_ep *ep)
{
	return READ_ONCE(ep->hdr->head) != READ_ONCE(ep->tail);
}

/**
 * kprog_ring_wait() - KPROG_IOC_WAIT
 * @ep: joined endpoint
 * @timeout_ns: < 0 forever, 0 flush only, > 0 limit
 *
 * Return: 0, -ETIMEDOUT or -EINTR.
 */
int kprog_ring_wait(struct kprog_ep *ep, s64 timeout_ns)
{
	ktime_t deadline = 0;
	long ret;

	if (timeout_ns > 0)
		deadline = ktime_add_safe(ktime_get(), ns_to_ktime(timeout_ns));
	for (;;) {
		kprog_ring_flush(ep);
		if (!timeout_ns || kprog_ring_nonempty(ep))
			return 0;
		if (timeout_ns < 0) {
			ret = wait_event_interruptible(ep->wq,
						       kprog_ring_ready(ep));
		} else {
			ktime_t left = ktime_sub(deadline, ktime_get());

			if (left <= 0)
				return -ETIMEDOUT;
			ret = wait_event_interruptible_hrtimeout
				(ep->wq, kprog_ring_ready(ep), left);
			if (ret == -ETIME)
				return -ETIMEDOUT;
		}
		if (ret)
			return -EINTR;
	}
}

/**
 * kprog_ring_poll() - poll() on an endpoint
 * @ep: endpoint
 * @file: its file
 * @wait: poll table
 *
 * Return: EPOLLIN when the ring holds a completion; EPOLLERR before JOIN.
 */
__poll_t kprog_ring_poll(struct kprog_ep *ep, struct file *file,
			 poll_table *wait)
{
	if (!kprog_ep_job(ep))
		return EPOLLERR;
	poll_wait(file, &ep->wq, wait);
	kprog_ring_flush(ep);
	return kprog_ring_nonempty(ep) ? EPOLLIN | EPOLLRDNORM : 0;
}

/**
 * kprog_ring_mmap() - map the ring at offset 0
 * @ep: endpoint
 * @vma: the mapping, at most ring_bytes long
 *
 * Return: 0, -EBADFD before JOIN, -EINVAL for a bad offset or length or
 * a private mapping (its writes would never reach the kernel).
 */
int kprog_ring_mmap(struct kprog_ep *ep, struct vm_area_struct *vma)
{
	if (!kprog_ep_job(ep))
		return -EBADFD;
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start > ep->ring_bytes ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
#ifdef KPROG_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	return remap_vmalloc_range(vma, ep->ring, 0);
}
