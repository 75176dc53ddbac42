// SPDX-License-Identifier: GPL-2.0
/*
 * kprog grants: rendezvous sends posted with no system call.
 *
 * A send above the fast path's limit used to cost its sender a system
 * call (KPROG_IOC_SEND: about 5 us of kernel work in the emulated test VM
 * against under 1 us for Open MPI's rendezvous header), enough to lose
 * the sender-side overlap of a 64 KiB message. Instead the sender may
 * describe its buffer in a slot of its own grant table and write a record
 * flagged KPROG_REC_RNDV into the channel; when the kernel drains that
 * record (in the receiver's receive or probe, or on either side's
 * request; always in record order) it sends the message from the grant
 * exactly as KPROG_IOC_SEND would have, on behalf of the sender.
 *
 * Trust: the channel is writable by both processes, the grant table only
 * by its owner (mapped only into the process that joined, not inherited
 * by fork), so a record only points at a slot and the kernel believes the
 * slot, read once: it takes a slot only while OPEN, addressed to the
 * draining receiver and repeating the record's request id, by changing
 * its state to TAKEN (compare and swap, so a send withdrawn by its owner
 * is never sent), and reads nothing of the sender but the granted range,
 * through the sender's mm, as a rendezvous copy does. A record that does
 * not name such a slot is dropped.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/vmalloc.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "op.h"
#include "msg.h"
#include "grant.h"
#include "vmem.h"
#include "match.h"
#include "transport.h"
#include "kprog_trace.h"

/**
 * kprog_grant_setup() - give a joining endpoint its grant table
 * @ep: the endpoint, in the joining process's system call
 *
 * kprog_ep_drop_grants() (ep.c) releases it with the endpoint.
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_grant_setup(struct kprog_ep *ep)
{
	if (!kprog_max_grants || !current->mm)
		return 0;
	ep->grants = kprog_vmem_alloc(KPROG_GRANT_BYTES(kprog_max_grants));
	if (!ep->grants)
		return -ENOMEM;
	ep->nr_grants = kprog_max_grants;
	mmgrab(current->mm);
	ep->mm = current->mm;
	return 0;
}

/**
 * kprog_grant_mmap() - map @ep's grant table into its own process
 * @ep: joined endpoint
 * @vma: a shared mapping at KPROG_GRANT_MMAP_OFFSET, at most the table
 *
 * Return: 0, -EINVAL (length, offset, a private mapping), -ENODEV (no
 * grants) or -EPERM (a process other than the one that joined).
 */
int kprog_grant_mmap(struct kprog_ep *ep, struct vm_area_struct *vma)
{
	if (!ep->grants)
		return -ENODEV;
	if (current->mm != ep->mm)
		return -EPERM;
	if (vma->vm_pgoff != KPROG_GRANT_MMAP_OFFSET >> PAGE_SHIFT ||
	    !(vma->vm_flags & VM_SHARED) ||
	    vma->vm_end - vma->vm_start >
	    PAGE_ALIGN(KPROG_GRANT_BYTES(ep->nr_grants)))
		return -EINVAL;
	/* VM_DONTCOPY: a forked child must not grant its parent's memory */
#ifdef KPROG_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	return kprog_vmem_mmap(vma, ep->grants,
			       KPROG_GRANT_BYTES(ep->nr_grants));
}

/* A grant slot as read once from the sender's table. */
struct kprog_grant_snap {
	u32 state;
	u64 send_ns;
	struct kprog_post post;
	struct kprog_iov_import im;
};

/* Reads slot @idx of @se once; false unless it is a send to @dst. */
static bool kprog_grant_read(struct kprog_ep *se, u32 idx, u64 req_id,
			     u32 dst, struct kprog_grant_snap *g)
{
	struct kprog_grant *slot;

	if (idx >= se->nr_grants)
		return false;
	slot = &se->grants[idx];
	g->state = READ_ONCE(slot->state);
	/* The fields after the state: pairs with the owner's release. */
	smp_rmb();
	memset(&g->post, 0, sizeof(g->post));
	g->post.req_id = READ_ONCE(slot->req_id);
	g->post.context = READ_ONCE(slot->context);
	g->post.peer = READ_ONCE(slot->dst);
	g->post.tag = READ_ONCE(slot->tag);
	memset(&g->im, 0, sizeof(g->im));
	g->im.inline_iov.base = READ_ONCE(slot->addr);
	g->im.inline_iov.len = READ_ONCE(slot->len);
	g->im.iov = &g->im.inline_iov;
	g->im.nr_iov = 1;
	g->im.len = g->im.inline_iov.len;
	g->send_ns = READ_ONCE(slot->send_ns);
	return KPROG_GRANT_STATE(g->state) == KPROG_GRANT_OPEN &&
	       g->post.req_id == req_id && g->post.peer == dst &&
	       g->post.tag >= 0 && g->im.len <= KPROG_MAX_MSG &&
	       g->im.inline_iov.base + g->im.len >= g->im.inline_iov.base;
}

/*
 * The send of a taken grant, as kprog_send_rndv() builds it: an op of the
 * sender (its mm, its budget counted but never refused: the table bounds
 * it) and a rendezvous message holding it.
 */
static struct kprog_msg *kprog_grant_build(struct kprog_ep *se,
					   struct kprog_grant_snap *g)
{
	struct kprog_op *sop;
	struct kprog_msg *msg;
	int err;

	sop = kprog_op_new_mm(se, &g->post, true, &g->im, KPROG_BUDGET_NONE,
			      se->mm);
	if (IS_ERR(sop))
		return NULL;
	if (kprog_op_charge_budget(sop, KPROG_BUDGET_RNDV, true))
		goto err_put;
	msg = kprog_rndv_build(sop, &kprog_xport_shm, 0, &err);
	if (!msg)
		goto err_uncharge;
	/* As KPROG_IOC_SEND stamps it, only for jobs that keep times. */
	if (READ_ONCE(se->job->times)) {
		msg->send_ns = g->send_ns;
		sop->times.send_ns = g->send_ns;
	}
	sop->state = KPROG_OP_POSTED;
	/* The first reference passes to the owner's list at activation. */
	return msg;

err_uncharge:
	kprog_op_uncharge(sop);
err_put:
	kprog_op_put(sop);
	return NULL;
}

/* Undoes kprog_grant_build() for a send never activated. */
static void kprog_grant_unbuild(struct kprog_msg *msg)
{
	struct kprog_op *sop = msg->sop;

	kprog_msg_free(msg);	/* puts the message's reference */
	kprog_op_uncharge(sop);
	kprog_op_put(sop);
}

/**
 * kprog_grant_take() - a rendezvous record drained from a channel
 * @dst: the receiving endpoint
 * @src: the sending rank
 * @rec: the record in the channel (shared memory), state NEW, its header
 *	checked by the caller
 * @len: its payload length as the caller read it
 *
 * Sends the message the record's grant describes to @dst's matching, or
 * drops the record when it names no such grant (a withdrawn send; a
 * sender that left). Process context, under the channel's drain lock.
 *
 * Return: 0 (the record is consumed: DONE), -ENOMEM (left NEW, for a
 * later drain) or -EBADMSG (a malformed record).
 */
int kprog_grant_take(struct kprog_ep *dst, u32 src, struct kprog_chan_rec *rec,
		     u32 len)
{
	struct kprog_chan_rts *rts = (void *)(rec + 1);
	struct kprog_grant_snap g;
	struct kprog_msg *msg = NULL;
	struct kprog_ep *se;
	u32 idx;
	u64 req_id;
	int err;

	if (len != sizeof(*rts))
		return -EBADMSG;
	idx = READ_ONCE(rts->grant);
	req_id = READ_ONCE(rts->req_id);
	se = kprog_job_get_ep(dst->job, src);
	/*
	 * A sender that left, or whose process is exiting (its own records
	 * flushed at release), took its grants with it: nothing to send.
	 */
	if (se && !READ_ONCE(se->closed) && se->mm &&
	    atomic_read(&se->mm->mm_users) &&
	    kprog_grant_read(se, idx, req_id, dst->rank, &g)) {
		msg = kprog_grant_build(se, &g);
		if (!msg) {
			kprog_ep_put(se);
			return -ENOMEM;
		}
	}
	if (cmpxchg(&rec->state, KPROG_REC_NEW, KPROG_REC_KTAKEN) != KPROG_REC_NEW)
		goto drop;
	if (msg && cmpxchg(&se->grants[idx].state, g.state,
			   KPROG_GRANT_SEQ(g.state) | KPROG_GRANT_TAKEN) != g.state)
		goto done;	/* withdrawn (or refilled) since it was read */
	if (msg) {
		trace_kprog_post(dst->job->key, se->rank, true, g.post.req_id,
				 g.post.context, dst->rank, g.post.tag, g.im.len, 0);
		kprog_op_activate(msg->sop);
		err = kprog_arrive(dst, msg);
		/* the receiver left: the sender hears it in its ring */
		if (err)
			kprog_msg_drop(msg, -ECONNRESET);
		msg = NULL;
	}
done:
	/* Matched or queued (held[] counted) before DONE, as for eager ones. */
	smp_store_release(&rec->state, KPROG_REC_DONE);
drop:
	if (msg)
		kprog_grant_unbuild(msg);
	if (se)
		kprog_ep_put(se);
	return 0;
}
