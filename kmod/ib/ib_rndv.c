// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib rendezvous: the receiving node reads the sender's buffer with
 * RDMA READ, chunk by chunk, every step started by a completion.
 *
 *   sender                                  receiver
 *   get_handle: pin chunk 0 (budget allows)
 *   send_env: REG_MR chunk 0, RTS(chunk 0) ---> kprog_arrive(); matched
 *                                             pull: pin a piece of the
 *                                             receive buffer, READ it
 *                                   <--- PULL(next chunk), if any
 *   pin + REG_MR the next chunk, DESC  --->
 *                                             READ done: unpin; more of
 *                                             this chunk, or
 *                                   <--- DONE(chunk) with invalidate
 *   unpin, MR back to the pool               READ the next chunk ...
 *                                             last READ done:
 *                                             kprog_xfer_done(), then
 *                                   <--- FIN(bytes, status), invalidate
 *   LOCAL_INV of what is still valid, then
 *   kprog_send_done(), unpin
 *
 * Registration. Every chunk is registered for one transfer only: an MR
 * from the connection's pool (ib_mr_pool, in the connection's own PD),
 * mapped with ib_map_mr_sg() and a new key (ib_inc_rkey()), registered
 * with IB_WR_REG_MR for REMOTE_READ only. No global rkey is ever made.
 * The rkey is valid from the RTS or DESC that carries it until the DONE
 * or FIN that invalidates it (SEND_WITH_INV, checked against the chunk;
 * anything else is a protocol error that fails the connection), or a
 * LOCAL_INV; the send completes only once none of its rkeys is valid.
 * Each registration bumps the key (a new rkey per transfer) of an MR that
 * is invalid: new, invalidated by the peer's SEND_WITH_INV or by our
 * LOCAL_INV, and only then back in the pool. On soft-RoCE a REG_MR is
 * also posted alone (conn->reg_alone): rxe's requester, when it
 * retransmits (req_retry()), runs every local work request behind the
 * oldest unacknowledged one again, and a REG_MR run twice finds its MR
 * valid ("rxe_reg_fast_mr: mr->lkey ... not free"), fails and takes the
 * QP down. So a REG_MR is posted only when no SEND, READ or WRITE of the
 * connection is on the wire; a transfer that would register meanwhile
 * waits on conn->fence_wait, and while one waits nothing new goes on the
 * wire (the backlog, READs and the keepalive hold), so the wait ends once
 * what is out completes. With the reg_qp parameter (the default) a
 * connection on rxe instead has a second QP, connected to itself, that
 * carries only REG_MRs (conn->reg_qp): no packet ever leaves it, so rxe
 * never retries it and runs each REG_MR once, at once. An MR is the PD's,
 * so the peer's READ on the data QP finds the rkey. Nothing orders two
 * QPs, and rxe runs a posted REG_MR later from a tasklet: the RTS or DESC
 * carrying the rkey waits in the backlog (out->reg_wait) until the REG_MR
 * completed, and what was queued behind it waits too, so messages keep
 * their order. The fence then never applies.
 *
 * Bounded memory. A chunk is at most reg_pages pages (and what the device
 * maps); a transfer holds at most two at once (the one being read and the
 * next, asked for by a PULL when its predecessor's READ starts, so that
 * registration overlaps the READ); every sender chunk is charged to the
 * max_reg_mb budget. Chunk 0 is pinned when the send is posted and
 * registered with the RTS only while the budget is less than half used
 * and the connection has more than half of its MRs free: unmatched
 * messages never hold the half that matched transfers need to progress.
 * Otherwise the RTS carries no chunk and the receiver PULLs chunk 0 once
 * it matched. Receivers pin only the piece being read (at most
 * max_pages page entries per READ, max_reads READs per connection).
 *
 * Contexts. Completion handlers (softirq) post, queue messages and call
 * kprog_xfer_done()/kprog_send_done(); pinning and READ set-up (rdma_rw
 * allocates) run in transfer workers on kprog_ib_xfer_wq (high priority:
 * see ib_conn.c); unpinning in its own worker on kprog_ib_wq. A transfer
 * on a dead connection is completed by the teardown only (after the QP
 * was drained), so that each completes exactly once.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/xarray.h>
#include <linux/llist.h>
#include <rdma/mr_pool.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "op.h"
#include "transport.h"
#include "stats.h"
#include "ib.h"
#include "ib_trace.h"

static DEFINE_XARRAY_FLAGS(kprog_ib_txs, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
static DEFINE_XARRAY_FLAGS(kprog_ib_rdvs, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
static u32 kprog_ib_tx_next, kprog_ib_rdv_next;
static atomic_t kprog_ib_gen = ATOMIC_INIT(0);

static LLIST_HEAD(kprog_ib_unpins);
static void kprog_ib_pin_uncharge(struct kprog_ib_pin *pin)
{
	if (!pin->mm)
		return;
	atomic64_sub(pin->npages, &pin->mm->pinned_vm);
	mmdrop(pin->mm);
	pin->mm = NULL;
}

static void kprog_ib_unpin_work(struct work_struct *work);
static DECLARE_WORK(kprog_ib_unpin_item, kprog_ib_unpin_work);

static DEFINE_SPINLOCK(kprog_ib_budget_lock);
static LIST_HEAD(kprog_ib_budget_wait);
static u64 kprog_ib_budget_used;

static void kprog_ib_tx_work(struct work_struct *work);
static void kprog_ib_tx_put(struct kprog_ib_tx *tx);
static void kprog_ib_rdv_work(struct work_struct *work);
static void kprog_ib_read_done(struct ib_cq *cq, struct ib_wc *wc);
static void kprog_ib_reg_done(struct ib_cq *cq, struct ib_wc *wc);
static void kprog_ib_inv_done(struct ib_cq *cq, struct ib_wc *wc);

/* ---------------------------------------------------------------------
 * Pinned pages and the registration budget
 */

static bool kprog_ib_budget_take(u64 bytes, bool prereg)
{
	u64 limit = (u64)kprog_ib_max_reg_mb << 20;
	bool ok;

	if (prereg)
		limit /= 2;
	spin_lock_bh(&kprog_ib_budget_lock);
	ok = kprog_ib_budget_used + bytes <= limit;
	if (ok)
		kprog_ib_budget_used += bytes;
	spin_unlock_bh(&kprog_ib_budget_lock);
	if (ok)
		kprog_ib_gauge_add(KPROG_IB_G_REG_BYTES, bytes);
	return ok;
}

static void kprog_ib_budget_release(u64 bytes)
{
	struct kprog_ib_tx *tx, *tmp;
	LIST_HEAD(wake);

	spin_lock_bh(&kprog_ib_budget_lock);
	kprog_ib_budget_used -= bytes;
	list_splice_init(&kprog_ib_budget_wait, &wake);
	list_for_each_entry(tx, &wake, wnode)
		tx->waiting = false;
	spin_unlock_bh(&kprog_ib_budget_lock);
	kprog_ib_gauge_add(KPROG_IB_G_REG_BYTES, -(long)bytes);
	/* Each waiter tries again; its list reference goes to the worker. */
	list_for_each_entry_safe(tx, tmp, &wake, wnode) {
		list_del_init(&tx->wnode);
		if (!queue_work(kprog_ib_xfer_wq, &tx->work))
			kprog_ib_tx_put(tx);
	}
}

/* Under nothing; true if @tx now waits for the budget. */
static bool kprog_ib_budget_wait_for(struct kprog_ib_tx *tx, u64 bytes)
{
	bool queued = false;

	spin_lock_bh(&kprog_ib_budget_lock);
	if (kprog_ib_budget_used + bytes > ((u64)kprog_ib_max_reg_mb << 20)) {
		kref_get(&tx->ref);
		tx->waiting = true;
		list_add_tail(&tx->wnode, &kprog_ib_budget_wait);
		queued = true;
	}
	spin_unlock_bh(&kprog_ib_budget_lock);
	return queued;
}

static void kprog_ib_unpin_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kprog_ib_unpins);
	struct kprog_ib_pin *pin, *tmp;
	u32 i;

	llist_for_each_entry_safe(pin, tmp, list, lnode) {
		if (pin->cent) {
			/* A view: the cache keeps the pages pinned. */
			for (i = 0; pin->dirty && i < pin->npages; i++)
				set_page_dirty_lock(pin->pages[i]);
			kprog_ib_pcache_unuse(pin->cent);
		} else {
			unpin_user_pages_dirty_lock(pin->pages, pin->npages,
						    pin->dirty);
			kprog_ib_gauge_add(KPROG_IB_G_PINNED,
					   -(long)pin->npages);
			kprog_ib_pin_uncharge(pin);
		}
		sg_free_table(&pin->sgt);
		if (pin->budget)
			kprog_ib_budget_release(pin->budget);
		kvfree(pin);
	}
}

/* Any context: the pages are unpinned (and the budget returned) soon. */
static void kprog_ib_pin_release(struct kprog_ib_pin *pin)
{
	if (llist_add(&pin->lnode, &kprog_ib_unpins))
		queue_work(kprog_ib_wq, &kprog_ib_unpin_item);
}

/*
 * Pins the pages of bytes [pos, pos + len) of @b, with a scatter list of
 * one entry per page, from the pin cache when it can. Process context.
 */
static struct kprog_ib_pin *kprog_ib_pin(const struct kprog_ubuf *b, u64 pos,
					 u64 len, bool write, int *err)
{
	unsigned int flags = FOLL_LONGTERM | (write ? FOLL_WRITE : 0);
	u32 npages = kprog_ib_span_pages(b->iov, b->nr_iov, pos, len);
	struct kprog_ib_pin *pin;
	struct scatterlist *sg;
	u64 off = pos, n;
	u32 i = 0, j, po;
	long ret = 0;

	if (!mmget_not_zero(b->mm)) {
		*err = -ECONNRESET;	/* the process is gone */
		return NULL;
	}
	pin = kprog_ib_pcache_pin(b, pos, len, write, err);
	mmput(b->mm);
	if (pin || *err != -EAGAIN)
		return pin;
	pin = kvzalloc(struct_size(pin, pages, npages), GFP_KERNEL);
	if (!pin) {
		*err = -ENOMEM;
		return NULL;
	}
	if (sg_alloc_table(&pin->sgt, npages, GFP_KERNEL)) {
		kvfree(pin);
		*err = -ENOMEM;
		return NULL;
	}
	if (!mmget_not_zero(b->mm)) {
		*err = -ECONNRESET;	/* the process is gone */
		goto err_free;
	}
	*err = kprog_ib_pin_charge(b, npages);
	if (*err) {
		mmput(b->mm);
		goto err_free;
	}
	while (off >= b->iov[i].len) {
		off -= b->iov[i].len;
		i++;
	}
	sg = pin->sgt.sgl;
	mmap_read_lock(b->mm);
	for (; len; i++, off = 0) {
		unsigned long addr = b->iov[i].base + off;
		u32 np;

		n = min(b->iov[i].len - off, len);
		np = DIV_ROUND_UP(offset_in_page(addr) + n, PAGE_SIZE);
#ifdef KPROG_GUP_HAS_VMAS
		ret = pin_user_pages_remote(b->mm, addr & PAGE_MASK, np, flags,
					    pin->pages + pin->npages, NULL,
					    NULL);
#else
		ret = pin_user_pages_remote(b->mm, addr & PAGE_MASK, np, flags,
					    pin->pages + pin->npages, NULL);
#endif
		if (ret > 0) {
			pin->npages += ret;
			kprog_ib_gauge_add(KPROG_IB_G_PINNED, ret);
		}
		if (ret != np)
			break;
		for (j = 0; j < np; j++) {
			po = j ? 0 : offset_in_page(addr);
			sg_set_page(sg, pin->pages[pin->npages - np + j],
				    min_t(u64, PAGE_SIZE - po, n), po);
			n -= min_t(u64, PAGE_SIZE - po, n);
			sg = sg_next(sg);
		}
		len -= min(b->iov[i].len - off, len);
	}
	mmap_read_unlock(b->mm);
	/* The charge is for npages; what was pinned is what is returned. */
	atomic64_sub(npages - pin->npages, &b->mm->pinned_vm);
	mmgrab(b->mm);
	pin->mm = b->mm;
	mmput(b->mm);
	if (len) {
		*err = ret < 0 ? ret : -EFAULT;
		goto err_free;
	}
	return pin;

err_free:
	unpin_user_pages(pin->pages, pin->npages);
	kprog_ib_pin_uncharge(pin);
	kprog_ib_gauge_add(KPROG_IB_G_PINNED, -(long)pin->npages);
	sg_free_table(&pin->sgt);
	kvfree(pin);
	return NULL;
}

/* ---------------------------------------------------------------------
 * The sending side
 */

static void kprog_ib_tx_release(struct kref *ref)
{
	struct kprog_ib_tx *tx = container_of(ref, struct kprog_ib_tx, ref);

	xa_erase_bh(&kprog_ib_txs, tx->id);
	if (tx->conn)
		kprog_ib_conn_put(tx->conn);
	kprog_op_put(tx->sop);
	kfree(tx);
	kprog_ib_gauge_add(KPROG_IB_G_TXS, -1);
}

static void kprog_ib_tx_put(struct kprog_ib_tx *tx)
{
	kref_put(&tx->ref, kprog_ib_tx_release);
}

/* The transfer named by @cookie, referenced, or NULL. */
static struct kprog_ib_tx *kprog_ib_tx_find(u64 cookie)
{
	struct kprog_ib_tx *tx;

	xa_lock_bh(&kprog_ib_txs);
	tx = xa_load(&kprog_ib_txs, (u32)cookie);
	if (tx && (tx->cookie != cookie || !kref_get_unless_zero(&tx->ref)))
		tx = NULL;
	xa_unlock_bh(&kprog_ib_txs);
	return tx;
}

static void kprog_ib_queue_tx(struct kprog_ib_tx *tx)
{
	kref_get(&tx->ref);
	if (!queue_work(kprog_ib_xfer_wq, &tx->work))
		kprog_ib_tx_put(tx);
}

/* Under conn->lock: an MR came back; the first waiter may take it. */
static void kprog_ib_mr_back(struct kprog_ib_conn *conn)
{
	struct kprog_ib_tx *tx;

	tx = list_first_entry_or_null(&conn->mr_wait, struct kprog_ib_tx,
				      wnode);
	if (!tx)
		return;
	list_del_init(&tx->wnode);
	tx->waiting = false;
	/* The list's reference goes to the worker. */
	if (!queue_work(kprog_ib_xfer_wq, &tx->work))
		kref_put(&tx->ref, kprog_ib_tx_release);
}

/*
 * Under conn->lock: register a pinned chunk (REG_MR posted now, before
 * the SEND that describes it; on conn->reg_qp the caller holds that SEND
 * with kprog_ib_chunk_hold()). -EAGAIN: no MR free; -EBUSY: it must wait
 * for the wire to be idle (conn->reg_alone); other errors fail the
 * connection (the caller's job).
 */
static int kprog_ib_chunk_register(struct kprog_ib_conn *conn,
				   struct kprog_ib_chunk *ch,
				   struct kprog_ib_chunk_desc *d)
{
	struct ib_mr *mr;
	int nents, n, err;

	/* rxe would run it again if something ahead were retransmitted */
	if (conn->reg_alone && conn->wire_out && !conn->reg_qp)
		return -EBUSY;
	mr = ib_mr_pool_get(conn->qp, &conn->mrs);
	if (!mr)
		return -EAGAIN;
	nents = ib_dma_map_sg(conn->dev, ch->pin->sgt.sgl,
			      ch->pin->sgt.orig_nents, DMA_TO_DEVICE);
	if (!nents) {
		err = -ENOMEM;
		goto err_put;
	}
	n = ib_map_mr_sg(mr, ch->pin->sgt.sgl, nents, NULL, PAGE_SIZE);
	if (n != nents) {
		err = n < 0 ? n : -EINVAL;
		goto err_unmap;
	}
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	memset(&ch->reg_wr, 0, sizeof(ch->reg_wr));
	ch->reg_cqe.done = kprog_ib_reg_done;
	ch->reg_wr.wr.opcode = IB_WR_REG_MR;
	ch->reg_wr.wr.wr_cqe = &ch->reg_cqe;
	ch->reg_wr.wr.send_flags = IB_SEND_SIGNALED;
	ch->reg_wr.mr = mr;
	ch->reg_wr.key = mr->rkey;
	ch->reg_wr.access = IB_ACCESS_REMOTE_READ;
	kref_get(&ch->tx->ref);		/* until the REG_MR completes */
	ch->reg_out = NULL;
	err = ib_post_send(conn->reg_qp ?: conn->qp, &ch->reg_wr.wr, NULL);
	if (err) {
		kref_put(&ch->tx->ref, kprog_ib_tx_release);
		goto err_unmap;
	}
	ch->mr = mr;
	ch->nents = nents;
	ch->rkey = mr->rkey;
	ch->registered = true;
	conn->mrs_out++;
	kprog_ib_gauge_add(KPROG_IB_G_MRS, 1);
	kprog_stat_add(KPROG_STAT_NET_REG_BYTES, ch->len);
	d->offset = ch->off;
	d->addr = mr->iova;
	d->len = mr->length;
	d->rkey = mr->rkey;
	return 0;

err_unmap:
	ib_dma_unmap_sg(conn->dev, ch->pin->sgt.sgl, ch->pin->sgt.orig_nents,
			DMA_TO_DEVICE);
err_put:
	ib_mr_pool_put(conn->qp, &conn->mrs, mr);
	return err;
}

/*
 * Under conn->lock, right after kprog_ib_chunk_register() succeeded and
 * before @out is queued: on the registration QP nothing orders the REG_MR
 * before @out's SEND (rxe runs it later, from a tasklet), so @out and what
 * is queued behind it wait in the backlog until kprog_ib_reg_done().
 */
static void kprog_ib_chunk_hold(struct kprog_ib_conn *conn,
				struct kprog_ib_chunk *ch,
				struct kprog_ib_out *out)
{
	if (!conn->reg_qp)
		return;
	out->reg_wait = true;
	ch->reg_out = out;
}

/* Under conn->lock: the chunk's MR goes back to the pool (rkey invalid). */
static void kprog_ib_chunk_mr_put(struct kprog_ib_conn *conn,
				  struct kprog_ib_chunk *ch)
{
	if (ch->registered)
		kprog_ib_gauge_add(KPROG_IB_G_MRS, -1);
	ch->registered = false;
	ib_dma_unmap_sg(conn->dev, ch->pin->sgt.sgl, ch->pin->sgt.orig_nents,
			DMA_TO_DEVICE);
	ib_mr_pool_put(conn->qp, &conn->mrs, ch->mr);
	ch->mr = NULL;
	conn->mrs_out--;
	kprog_ib_mr_back(conn);
}

/* Under conn->lock: forget a chunk whose MR (if any) is back. */
static void kprog_ib_chunk_clear(struct kprog_ib_chunk *ch)
{
	if (ch->pin)
		kprog_ib_pin_release(ch->pin);
	ch->pin = NULL;
	ch->len = 0;
}

/*
 * Under conn->lock, connection alive: release a chunk. An rkey the peer
 * did not invalidate is invalidated here first (LOCAL_INV); the chunk is
 * held until that completes. Returns true while it is.
 */
static bool kprog_ib_chunk_release(struct kprog_ib_conn *conn,
				   struct kprog_ib_chunk *ch, bool remote_inv)
{
	struct ib_send_wr wr = {};

	if (!ch->len || ch->invalidating)
		return ch->invalidating;
	if (ch->mr && ch->registered && !remote_inv) {
		wr.opcode = IB_WR_LOCAL_INV;
		wr.ex.invalidate_rkey = ch->rkey;
		wr.send_flags = IB_SEND_SIGNALED;
		ch->inv_cqe.done = kprog_ib_inv_done;
		wr.wr_cqe = &ch->inv_cqe;
		kref_get(&ch->tx->ref);
		ch->invalidating = true;
		if (ib_post_send(conn->qp, &wr, NULL)) {
			kref_put(&ch->tx->ref, kprog_ib_tx_release);
			/*
			 * Still valid: the transfer stays on the connection
			 * until the teardown deregisters the MR and completes
			 * it.
			 */
			kprog_ib_conn_fail_locked(conn, -EIO);
		}
		return true;
	}
	if (ch->mr)
		kprog_ib_chunk_mr_put(conn, ch);
	kprog_ib_chunk_clear(ch);
	return false;
}

static struct kprog_ib_chunk *kprog_ib_tx_chunk(struct kprog_ib_tx *tx,
						u64 off)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(tx->ch); i++)
		if (tx->ch[i].len && tx->ch[i].off == off)
			return &tx->ch[i];
	return NULL;
}

/**
 * kprog_ib_get_handle() - &kprog_transport.get_handle: a rendezvous send
 *	to another node
 * @sop: the send, being posted by the current process
 * @msg: its message; the cookie goes into @msg->rd.net
 *
 * Makes the sending transfer and, while the budget's first half allows,
 * pins the first chunk of the buffer now, in the sender's process.
 *
 * Return: 0, -ENOMEM, or the pinning's error (-EFAULT for a buffer that
 * is not mapped).
 */
int kprog_ib_get_handle(struct kprog_op *sop, struct kprog_msg *msg)
{
	struct kprog_ib_tx *tx = kzalloc(sizeof(*tx), GFP_KERNEL_ACCOUNT);
	struct kprog_ib_pin *pin;
	u64 len0;
	int err, i;

	if (!tx)
		return -ENOMEM;
	kref_init(&tx->ref);
	INIT_LIST_HEAD(&tx->cnode);
	INIT_LIST_HEAD(&tx->wnode);
	INIT_WORK(&tx->work, kprog_ib_tx_work);
	for (i = 0; i < ARRAY_SIZE(tx->ch); i++)
		tx->ch[i].tx = tx;
	tx->want = U64_MAX;
	tx->env = msg->env;
	tx->key = sop->owner->job->key;
	err = xa_alloc_cyclic_bh(&kprog_ib_txs, &tx->id, tx, xa_limit_32b,
				 &kprog_ib_tx_next, GFP_KERNEL);
	if (err < 0) {
		kfree(tx);
		return err;
	}
	tx->cookie = (u64)(u32)atomic_inc_return(&kprog_ib_gen) << 32 | tx->id;
	kprog_op_get(sop);
	tx->sop = sop;
	kprog_ib_gauge_add(KPROG_IB_G_TXS, 1);

	len0 = kprog_ib_span(sop->buf.iov, sop->buf.nr_iov, 0, tx->env.len,
			     kprog_ib_reg_pages, false);
	if (len0 && kprog_ib_budget_take(len0, true)) {
		pin = kprog_ib_pin(&sop->buf, 0, len0, false, &err);
		if (!pin) {
			kprog_ib_budget_release(len0);
			kprog_ib_tx_put(tx);
			return err;
		}
		pin->budget = len0;
		tx->ch[0].pin = pin;
		tx->ch[0].len = len0;
	}
	sop->xhandle = tx;
	msg->rd.net.cookie = tx->cookie;
	return 0;
}

/**
 * kprog_ib_put_handle() - &kprog_transport.put_handle: the send was not
 *	sent after all (its post failed)
 * @sop: the send; its transfer was never bound to a connection
 */
void kprog_ib_put_handle(struct kprog_op *sop)
{
	struct kprog_ib_tx *tx = sop->xhandle;

	sop->xhandle = NULL;
	if (tx->ch[0].pin)
		kprog_ib_pin_release(tx->ch[0].pin);
	kprog_ib_tx_put(tx);
}

/**
 * kprog_ib_tx_rts() - send the RTS of a rendezvous on a connection
 * @conn: the connection to the receiver's node (referenced by the caller)
 * @key: the job key
 * @msg: the message made by kprog_rndv_build(); the caller frees it on
 *	success
 *
 * Binds the transfer to @conn and queues the RTS, with chunk 0 if it is
 * pinned, the connection is up and the MR pool more than half free.
 * Process context.
 *
 * Return: 0, or -ENOMEM / -ECONNRESET (nothing was bound: the core's
 * put_handle releases the transfer).
 */
int kprog_ib_tx_rts(struct kprog_ib_conn *conn, u64 key,
		    struct kprog_msg *msg)
{
	struct kprog_ib_tx *tx = msg->sop->xhandle;
	struct kprog_ib_chunk *ch = &tx->ch[0];
	struct kprog_ib_chunk_desc d, *dp = NULL;
	struct kprog_ib_out *out;
	int err;

	out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX, GFP_KERNEL);
	if (!out)
		return -ENOMEM;
	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_DEAD) {
		spin_unlock_bh(&conn->lock);
		kprog_ib_out_free(out);
		return -ECONNRESET;
	}
	kref_get(&conn->ref);
	tx->conn = conn;
	tx->state = KPROG_IB_TX_SENT;
	kref_get(&tx->ref);		/* the connection's list */
	list_add_tail(&tx->cnode, &conn->txs);
	if (ch->pin && conn->state == KPROG_IB_CS_CONNECTED &&
	    ch->pin->npages <= conn->max_pages &&
	    list_empty(&conn->mr_wait) && !kprog_ib_conn_fenced(conn) &&
	    conn->mrs_out < kprog_ib_conn_mrs / 2) {
		err = kprog_ib_chunk_register(conn, ch, &d);
		if (!err) {
			dp = &d;
			kprog_ib_chunk_hold(conn, ch, out);
		} else if (err != -EAGAIN && err != -EBUSY) {
			/* The RTS is dropped; the teardown fails the send. */
			kprog_ib_conn_fail_locked(conn, err);
		}
	}
	tx->next = dp ? d.len : 0;
	out->len = kprog_ib_put_rts(out->buf, key, &tx->env, msg->send_req,
				    tx->cookie, dp);
	kprog_ib_conn_queue_locked(conn, out);
	spin_unlock_bh(&conn->lock);
	trace_kprog_ib_rts(key, &tx->env, tx->cookie, dp ? d.len : 0, true);
	return 0;
}

/**
 * kprog_ib_tx_pull() - PULL: the receiver wants the chunk at an offset
 * @conn: the connection it came on
 * @m: the message
 *
 * Softirq. The chunk is pinned and registered by the transfer's worker.
 *
 * Return: 0, -ENOENT (no such send) or -EPROTO (not this connection's,
 * or not the chunk expected next).
 */
int kprog_ib_tx_pull(struct kprog_ib_conn *conn,
		     const struct kprog_ib_parsed *m)
{
	struct kprog_ib_tx *tx = kprog_ib_tx_find(m->cookie);
	int err = 0, i, used = 0;

	if (!tx)
		return -ENOENT;
	spin_lock_bh(&conn->lock);
	for (i = 0; i < ARRAY_SIZE(tx->ch); i++)
		if (tx->ch[i].len && tx->ch[i].off != m->offset)
			used++;
	if (tx->conn != conn || tx->state != KPROG_IB_TX_SENT ||
	    m->offset != tx->next || m->offset >= tx->env.len ||
	    tx->want != U64_MAX || used == ARRAY_SIZE(tx->ch)) {
		err = -EPROTO;
	} else {
		tx->want = m->offset;
		tx->rid = m->rid;
		kprog_ib_queue_tx(tx);
	}
	spin_unlock_bh(&conn->lock);
	kprog_ib_tx_put(tx);
	return err;
}

/*
 * Under conn->lock: @tx no longer waits for the wire to be idle; the last
 * one to leave lets the held SENDs and READs go. Returns the reference of
 * the list, for the caller to drop once unlocked.
 */
static struct kprog_ib_tx *kprog_ib_fence_leave(struct kprog_ib_conn *conn,
						struct kprog_ib_tx *tx)
{
	if (!tx->fenced)
		return NULL;
	list_del_init(&tx->wnode);
	tx->fenced = false;
	if (!kprog_ib_conn_fenced(conn) && conn->state != KPROG_IB_CS_DEAD) {
		kprog_ib_conn_kick_locked(conn);
		kprog_ib_rndv_post_reads(conn);
	}
	return tx;
}

/**
 * kprog_ib_rndv_wire_idle() - nothing of a connection is on the wire:
 *	the registrations waiting for that may go
 * @conn: the connection, its lock held
 *
 * Each waiting transfer's worker runs; each stays on the list (holding
 * the wire) until it posted its REG_MR. Any context.
 */
void kprog_ib_rndv_wire_idle(struct kprog_ib_conn *conn)
{
	struct kprog_ib_tx *tx;

	if (conn->state == KPROG_IB_CS_DEAD)
		return;		/* the teardown empties the list */
	list_for_each_entry(tx, &conn->fence_wait, wnode)
		kprog_ib_queue_tx(tx);
}

/*
 * The worker of a sending transfer: pins (if need be) and registers the
 * chunk a PULL asked for, then sends its DESC. Waits for the budget, an
 * MR or an idle wire by putting itself on a wait list.
 */
static void kprog_ib_tx_work(struct work_struct *work)
{
	struct kprog_ib_tx *tx = container_of(work, struct kprog_ib_tx, work);
	struct kprog_ib_conn *conn = tx->conn;
	struct kprog_ib_chunk *ch = NULL, *free = NULL;
	struct kprog_ib_pin *pin = NULL;
	struct kprog_ib_chunk_desc d;
	struct kprog_ib_out *out;
	struct kprog_ib_tx *left = NULL;
	u64 start = kprog_stat_clock(), off, len = 0;
	int err = 0, i;

	out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX, GFP_KERNEL);
	spin_lock_bh(&conn->lock);
	off = tx->want;
	if (off == U64_MAX || tx->state != KPROG_IB_TX_SENT ||
	    conn->state == KPROG_IB_CS_DEAD || tx->waiting) {
		left = left ?: kprog_ib_fence_leave(conn, tx);
		spin_unlock_bh(&conn->lock);
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(tx->ch); i++) {
		if (tx->ch[i].len && tx->ch[i].off == off)
			ch = &tx->ch[i];
		else if (!tx->ch[i].len)
			free = &tx->ch[i];
	}
	/* A chunk 0 pinned for the RTS that the device cannot map whole. */
	if (ch && !ch->mr && ch->pin->npages > conn->max_pages) {
		kprog_ib_chunk_clear(ch);
		free = ch;
		ch = NULL;
	}
	/* Only a pinned chunk waits for the wire; wnode serves one list. */
	if (!ch)
		left = left ?: kprog_ib_fence_leave(conn, tx);
	if (!out) {
		left = left ?: kprog_ib_fence_leave(conn, tx);
		kprog_ib_conn_fail_locked(conn, -ENOMEM);
		spin_unlock_bh(&conn->lock);
		goto out;
	}
	spin_unlock_bh(&conn->lock);
	if (!ch) {
		len = kprog_ib_span(tx->sop->buf.iov, tx->sop->buf.nr_iov, off,
				    tx->env.len - off, conn->max_pages, false);
		if (!kprog_ib_budget_take(len, false)) {
			/* Retried when a chunk anywhere is released. */
			if (kprog_ib_budget_wait_for(tx, len))
				goto out;
			if (!kprog_ib_budget_take(len, false)) {
				kprog_ib_queue_tx(tx);
				goto out;
			}
		}
		pin = kprog_ib_pin(&tx->sop->buf, off, len, false, &err);
		if (pin)
			pin->budget = len;
		else
			kprog_ib_budget_release(len);
	}

	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_DEAD || tx->state != KPROG_IB_TX_SENT) {
		left = left ?: kprog_ib_fence_leave(conn, tx);
		spin_unlock_bh(&conn->lock);
		if (pin)
			kprog_ib_pin_release(pin);
		goto out;
	}
	if (!ch && pin) {
		ch = free;
		ch->off = off;
		ch->len = len;
		ch->pin = pin;
	}
	if (!ch) {
		/* The sender's pages are gone: the receiver must give up. */
		left = left ?: kprog_ib_fence_leave(conn, tx);
		tx->err = err;
		out->len = kprog_ib_put_desc(out->buf, tx->rid, NULL);
	} else {
		err = kprog_ib_chunk_register(conn, ch, &d);
		if (err == -EBUSY) {
			/* Woken by kprog_ib_rndv_wire_idle(). */
			if (!tx->fenced) {
				kref_get(&tx->ref);
				tx->fenced = true;
				list_add_tail(&tx->wnode, &conn->fence_wait);
			}
			kprog_ib_conn_fence_flush(conn);
			spin_unlock_bh(&conn->lock);
			goto out;
		}
		/* Registered, or waiting for an MR: the wire may move again. */
		left = left ?: kprog_ib_fence_leave(conn, tx);
		if (err == -EAGAIN) {
			kref_get(&tx->ref);
			tx->waiting = true;
			list_add_tail(&tx->wnode, &conn->mr_wait);
			spin_unlock_bh(&conn->lock);
			goto out;
		}
		if (err) {
			kprog_ib_conn_fail_locked(conn, err);
			spin_unlock_bh(&conn->lock);
			goto out;
		}
		tx->next = off + d.len;
		out->len = kprog_ib_put_desc(out->buf, tx->rid, &d);
		kprog_ib_chunk_hold(conn, ch, out);
	}
	tx->want = U64_MAX;
	kprog_ib_conn_queue_locked(conn, out);
	out = NULL;
	spin_unlock_bh(&conn->lock);
	kprog_stat_run(KPROG_STAT_WORK_ITEMS, start);
out:
	if (out)
		kprog_ib_out_free(out);
	if (left)
		kprog_ib_tx_put(left);	/* the fence list's */
	kprog_ib_tx_put(tx);
}

/* Completes a sending transfer (conn lock not held). */
static void kprog_ib_tx_complete(struct kprog_ib_tx *tx, u64 bytes, int err)
{
	trace_kprog_ib_fin(tx->cookie, bytes, err, true);
	kprog_send_done(tx->sop, &tx->env, bytes, err);
	tx->sop->xhandle = NULL;
	kprog_ib_tx_put(tx);	/* the connection list's */
	/* get_handle's: the core calls put_handle only if the RTS never left */
	kprog_ib_tx_put(tx);
}

/* Under conn->lock: FIN came and no rkey is valid: take it off the list. */
static bool kprog_ib_tx_finished(struct kprog_ib_tx *tx)
{
	int i;

	if (tx->state != KPROG_IB_TX_FIN)
		return false;
	for (i = 0; i < ARRAY_SIZE(tx->ch); i++)
		if (tx->ch[i].invalidating)
			return false;
	tx->state = KPROG_IB_TX_DONE;
	list_del_init(&tx->cnode);
	return true;
}

/**
 * kprog_ib_tx_done() - DONE or FIN from the receiving node
 * @conn: the connection it came on
 * @m: the message
 * @inv: its SEND invalidated an rkey
 * @inv_rkey: which
 *
 * DONE releases a chunk the peer read (and invalidated). FIN ends the
 * transfer: what the peer did not invalidate is invalidated locally, then
 * the send completes. An invalidation of any other rkey than the one the
 * message names fails the connection. Softirq.
 *
 * Return: 0, -ENOENT or -EPROTO.
 */
int kprog_ib_tx_done(struct kprog_ib_conn *conn,
		     const struct kprog_ib_parsed *m, bool inv, u32 inv_rkey)
{
	struct kprog_ib_tx *tx = kprog_ib_tx_find(m->cookie);
	bool named = m->flags & KPROG_IB_INV, finished = false;
	struct kprog_ib_tx *left = NULL;
	struct kprog_ib_chunk *ch = NULL;
	int err = 0, i;

	spin_lock_bh(&conn->lock);
	if (!tx || tx->conn != conn || tx->state != KPROG_IB_TX_SENT) {
		err = tx ? -EPROTO : -ENOENT;
		goto bad;
	}
	if (named)
		ch = kprog_ib_tx_chunk(tx, m->offset);
	if (named != inv || (named && (!ch || !ch->registered ||
				       ch->invalidating ||
				       inv_rkey != ch->rkey))) {
		err = -EPROTO;
		goto bad;
	}
	if (ch)
		kprog_ib_chunk_release(conn, ch, true);
	if (m->type == KPROG_IB_FIN) {
		left = left ?: kprog_ib_fence_leave(conn, tx);
		tx->state = KPROG_IB_TX_FIN;
		tx->fin_bytes = min(m->bytes, tx->env.len);
		tx->fin_status = tx->err ?: kprog_ib_status(m->status);
		for (i = 0; i < ARRAY_SIZE(tx->ch); i++)
			kprog_ib_chunk_release(conn, &tx->ch[i], false);
		finished = kprog_ib_tx_finished(tx);
	}
	spin_unlock_bh(&conn->lock);
	if (left)
		kprog_ib_tx_put(left);	/* the fence list's */
	if (finished)
		kprog_ib_tx_complete(tx, tx->fin_bytes, tx->fin_status);
	kprog_ib_tx_put(tx);
	return 0;

bad:
	/* An rkey of this connection was invalidated out of turn. */
	if (inv)
		kprog_ib_conn_fail_locked(conn, -EPROTO);
	spin_unlock_bh(&conn->lock);
	if (tx)
		kprog_ib_tx_put(tx);
	return err;
}

static void kprog_ib_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kprog_ib_chunk *ch = container_of(wc->wr_cqe,
						 struct kprog_ib_chunk,
						 reg_cqe);
	struct kprog_ib_tx *tx = ch->tx;
	struct kprog_ib_conn *conn = tx->conn;
	u64 start = kprog_stat_clock();

	spin_lock_bh(&conn->lock);
	if (wc->status != IB_WC_SUCCESS)
		kprog_ib_conn_fail_locked(conn, -EIO);
	/* The RTS or DESC that carries the rkey may go now (reg_qp). */
	if (ch->reg_out) {
		ch->reg_out->reg_wait = false;
		ch->reg_out = NULL;
		kprog_ib_conn_kick_locked(conn);
	}
	spin_unlock_bh(&conn->lock);
	kprog_ib_tx_put(tx);
	kprog_ib_conn_count(wc, start);
}

static void kprog_ib_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kprog_ib_chunk *ch = container_of(wc->wr_cqe,
						 struct kprog_ib_chunk,
						 inv_cqe);
	struct kprog_ib_tx *tx = ch->tx;
	struct kprog_ib_conn *conn = tx->conn;
	u64 start = kprog_stat_clock();
	bool finished = false;

	spin_lock_bh(&conn->lock);
	ch->invalidating = false;
	if (wc->status == IB_WC_SUCCESS) {
		kprog_ib_chunk_mr_put(conn, ch);
		kprog_ib_chunk_clear(ch);
		finished = kprog_ib_tx_finished(tx);
	} else {
		/* Still registered: the teardown deregisters it. */
		kprog_ib_conn_fail_locked(conn, -EIO);
	}
	spin_unlock_bh(&conn->lock);
	if (finished)
		kprog_ib_tx_complete(tx, tx->fin_bytes, tx->fin_status);
	kprog_ib_tx_put(tx);
	kprog_ib_conn_count(wc, start);
}

/* ---------------------------------------------------------------------
 * The receiving side
 */

static void kprog_ib_rdv_release(struct kref *ref)
{
	struct kprog_ib_rdv *rdv = container_of(ref, struct kprog_ib_rdv, ref);

	xa_erase_bh(&kprog_ib_rdvs, rdv->id);
	kprog_ib_conn_put(rdv->conn);
	kfree(rdv);
	kprog_ib_gauge_add(KPROG_IB_G_RDVS, -1);
}

/**
 * kprog_ib_rdv_put() - drop a reference on a receiving transfer
 * @rdv: the transfer
 */
void kprog_ib_rdv_put(struct kprog_ib_rdv *rdv)
{
	kref_put(&rdv->ref, kprog_ib_rdv_release);
}

static struct kprog_ib_rdv *kprog_ib_rdv_find(u64 rid)
{
	struct kprog_ib_rdv *rdv;

	xa_lock_bh(&kprog_ib_rdvs);
	rdv = xa_load(&kprog_ib_rdvs, (u32)rid);
	if (rdv && (rdv->rid != rid || !kref_get_unless_zero(&rdv->ref)))
		rdv = NULL;
	xa_unlock_bh(&kprog_ib_rdvs);
	return rdv;
}

static void kprog_ib_queue_rdv(struct kprog_ib_rdv *rdv)
{
	kref_get(&rdv->ref);
	if (!queue_work(kprog_ib_xfer_wq, &rdv->work))
		kprog_ib_rdv_put(rdv);
}

/**
 * kprog_ib_rdv_new() - the receiving side of an RTS
 * @conn: the connection it came on
 * @m: the RTS
 *
 * Softirq. The message that carries it holds the reference returned.
 *
 * Return: the transfer, or NULL (out of memory).
 */
struct kprog_ib_rdv *kprog_ib_rdv_new(struct kprog_ib_conn *conn,
				      const struct kprog_ib_parsed *m)
{
	struct kprog_ib_rdv *rdv = kzalloc(sizeof(*rdv), GFP_ATOMIC);

	if (!rdv)
		return NULL;
	if (xa_alloc_cyclic_bh(&kprog_ib_rdvs, &rdv->id, rdv, xa_limit_32b,
			       &kprog_ib_rdv_next, GFP_ATOMIC) < 0) {
		kfree(rdv);
		return NULL;
	}
	kref_init(&rdv->ref);
	INIT_LIST_HEAD(&rdv->cnode);
	INIT_LIST_HEAD(&rdv->wnode);
	INIT_WORK(&rdv->work, kprog_ib_rdv_work);
	rdv->read_cqe.done = kprog_ib_read_done;
	rdv->rid = (u64)(u32)atomic_inc_return(&kprog_ib_gen) << 32 | rdv->id;
	kref_get(&conn->ref);
	rdv->conn = conn;
	rdv->cookie = m->cookie;
	rdv->want = U64_MAX;
	if (m->chunk.len) {
		rdv->ch[0] = m->chunk;
		rdv->nch = 1;
	}
	kprog_ib_gauge_add(KPROG_IB_G_RDVS, 1);
	return rdv;
}

/* Under conn->lock: take the transfer to complete it; NULL if gone. */
static struct kprog_xfer *kprog_ib_rdv_claim(struct kprog_ib_rdv *rdv)
{
	struct kprog_xfer *x = rdv->x;

	if (!x || rdv->conn->state == KPROG_IB_CS_DEAD)
		return NULL;
	rdv->x = NULL;
	list_del_init(&rdv->cnode);
	return x;
}

/**
 * kprog_ib_pull() - &kprog_transport.pull: a rendezvous from another
 *	node was matched
 * @x: the transfer
 * @inline_ok: unused: READs are always started by the transfer's worker
 *
 * Starts the READ of the chunk the RTS described, or asks for chunk 0
 * (PULL). Any context.
 *
 * Return: 0, -ENOMEM or -ECONNRESET (the connection is gone).
 */
int kprog_ib_pull(struct kprog_xfer *x, bool inline_ok)
{
	struct kprog_ib_rdv *rdv = x->msg->rd.net.conn;
	struct kprog_ib_conn *conn = rdv->conn;
	struct kprog_ib_out *out = NULL;

	if (!rdv->nch) {
		out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX,
					 in_task() ? GFP_KERNEL : GFP_ATOMIC);
		if (!out)
			return -ENOMEM;
	}
	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_DEAD) {
		spin_unlock_bh(&conn->lock);
		if (out)
			kprog_ib_out_free(out);
		return -ECONNRESET;
	}
	rdv->x = x;
	list_add_tail(&rdv->cnode, &conn->rdvs);
	if (out) {
		rdv->want = 0;
		out->len = kprog_ib_put_pull(out->buf, rdv->cookie, rdv->rid, 0);
		kprog_ib_conn_queue_locked(conn, out);
	} else {
		rdv->reading = true;
		kprog_ib_queue_rdv(rdv);
	}
	spin_unlock_bh(&conn->lock);
	return 0;
}

/**
 * kprog_ib_rdv_desc() - DESC: the sender describes the chunk asked for
 * @conn: the connection it came on
 * @m: the message
 *
 * Softirq. A DESC without a chunk means the sender cannot provide it:
 * the transfer fails.
 *
 * Return: 0, -ENOENT or -EPROTO (not asked for on this connection).
 */
int kprog_ib_rdv_desc(struct kprog_ib_conn *conn,
		      const struct kprog_ib_parsed *m)
{
	struct kprog_ib_rdv *rdv = kprog_ib_rdv_find(m->rid);
	struct kprog_xfer *x = NULL;
	int err = 0;

	if (!rdv)
		return -ENOENT;
	spin_lock_bh(&conn->lock);
	if (rdv->conn != conn || !rdv->x || rdv->want == U64_MAX ||
	    (m->chunk.len && m->chunk.offset != rdv->want) ||
	    rdv->nch == ARRAY_SIZE(rdv->ch)) {
		err = -EPROTO;
	} else if (!m->chunk.len) {
		rdv->want = U64_MAX;
		rdv->err = -ECONNRESET;
		if (!rdv->reading)
			x = kprog_ib_rdv_claim(rdv);
	} else {
		rdv->ch[rdv->nch++] = m->chunk;
		rdv->want = U64_MAX;
		if (!rdv->reading) {
			rdv->reading = true;
			kprog_ib_queue_rdv(rdv);
		}
	}
	spin_unlock_bh(&conn->lock);
	if (x)
		kprog_xfer_done(x, rdv->pos, rdv->err);
	kprog_ib_rdv_put(rdv);
	return err;
}

/* Under conn->lock: post a READ that was set up. */
static void kprog_ib_read_post(struct kprog_ib_conn *conn,
			       struct kprog_ib_rdv *rdv)
{
	int err;

	conn->reads_free--;
	kref_get(&rdv->ref);
	kprog_ib_gauge_add(KPROG_IB_G_READS, 1);
	trace_kprog_ib_read_start(rdv->rid, rdv->cookie, rdv->pos, rdv->piece);
	err = rdma_rw_ctx_post(&rdv->rw, conn->qp, conn->port_num,
			       &rdv->read_cqe, NULL);
	if (err) {
		conn->reads_free++;
		kprog_ib_gauge_add(KPROG_IB_G_READS, -1);
		kref_put(&rdv->ref, kprog_ib_rdv_release);
		kprog_ib_conn_fail_locked(conn, err);
		return;
	}
	conn->wire_out++;
	rdv->posted = true;
}

/**
 * kprog_ib_rndv_post_reads() - post READs that waited for a context
 * @conn: the connection, its lock held
 */
void kprog_ib_rndv_post_reads(struct kprog_ib_conn *conn)
{
	struct kprog_ib_rdv *rdv;

	while (conn->reads_free && conn->state != KPROG_IB_CS_DEAD &&
	       !kprog_ib_conn_fenced(conn) &&
	       (rdv = list_first_entry_or_null(&conn->read_wait,
					       struct kprog_ib_rdv, wnode))) {
		list_del_init(&rdv->wnode);
		kprog_ib_read_post(conn, rdv);
	}
}

/* Undo a READ that was set up and never posted (conn lock not held). */
static void kprog_ib_read_unset(struct kprog_ib_rdv *rdv)
{
	struct kprog_ib_conn *conn = rdv->conn;

	rdma_rw_ctx_destroy(&rdv->rw, conn->qp, conn->port_num,
			    rdv->pin->sgt.sgl, rdv->pin->sgt.orig_nents,
			    DMA_FROM_DEVICE);
	kprog_ib_pin_release(rdv->pin);
	rdv->pin = NULL;
}

/*
 * The worker of a receiving transfer: pins the next piece of the receive
 * buffer, sets its READ up and posts it; asks for the next chunk.
 */
static void kprog_ib_rdv_work(struct work_struct *work)
{
	struct kprog_ib_rdv *rdv = container_of(work, struct kprog_ib_rdv,
						work);
	struct kprog_ib_conn *conn = rdv->conn;
	struct kprog_ib_out *out = NULL;
	struct kprog_xfer *x = NULL;
	struct kprog_ib_chunk_desc c;
	struct kprog_ib_pin *pin;
	u64 start = kprog_stat_clock(), n, next;
	int err = 0, nwr;

	spin_lock_bh(&conn->lock);
	if (!rdv->x || conn->state == KPROG_IB_CS_DEAD) {
		spin_unlock_bh(&conn->lock);
		goto out;
	}
	if (kprog_xfer_aborted(rdv->x)) {
		/* The receiver left: stop before touching its pages. */
		rdv->reading = false;
		x = kprog_ib_rdv_claim(rdv);
		spin_unlock_bh(&conn->lock);
		err = -ECONNRESET;
		goto done;
	}
	c = rdv->ch[0];
	next = c.offset + c.len;
	spin_unlock_bh(&conn->lock);

	n = min(next, rdv->x->len) - rdv->pos;
	n = kprog_ib_span(rdv->x->rop->buf.iov, rdv->x->rop->buf.nr_iov,
			  rdv->pos, n, conn->max_pages, true);
	pin = kprog_ib_pin(&rdv->x->rop->buf, rdv->pos, n, true, &err);
	if (!pin)
		goto fail;
	nwr = rdma_rw_ctx_init(&rdv->rw, conn->qp, conn->port_num,
			       pin->sgt.sgl, pin->sgt.orig_nents, 0,
			       c.addr + (rdv->pos - c.offset), c.rkey,
			       DMA_FROM_DEVICE);
	if (nwr < 0) {
		kprog_ib_pin_release(pin);
		err = nwr;
		goto fail;
	}
	rdv->pin = pin;
	rdv->piece = n;
	rdv->rw_nwr = nwr;
	if (next < rdv->x->len)
		out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX, GFP_KERNEL);

	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_DEAD) {
		/* The teardown completes the transfer. */
		spin_unlock_bh(&conn->lock);
		kprog_ib_read_unset(rdv);
		goto out;
	}
	if (conn->reads_free && !kprog_ib_conn_fenced(conn))
		kprog_ib_read_post(conn, rdv);
	else
		list_add_tail(&rdv->wnode, &conn->read_wait);
	/* Registration of the next chunk overlaps this READ. */
	if (next < rdv->x->len && rdv->nch == 1 && rdv->want == U64_MAX) {
		if (out) {
			rdv->want = next;
			out->len = kprog_ib_put_pull(out->buf, rdv->cookie,
						     rdv->rid, next);
			kprog_ib_conn_queue_locked(conn, out);
			out = NULL;
		} else {
			kprog_ib_conn_fail_locked(conn, -ENOMEM);
		}
	}
	spin_unlock_bh(&conn->lock);
	kprog_stat_run(KPROG_STAT_WORK_ITEMS, start);
	goto out;

fail:
	spin_lock_bh(&conn->lock);
	rdv->reading = false;
	x = kprog_ib_rdv_claim(rdv);
	spin_unlock_bh(&conn->lock);
done:
	if (x)
		kprog_xfer_done(x, rdv->pos, err);
out:
	if (out)
		kprog_ib_out_free(out);
	kprog_ib_rdv_put(rdv);
}

static void kprog_ib_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kprog_ib_rdv *rdv = container_of(wc->wr_cqe,
						struct kprog_ib_rdv, read_cqe);
	struct kprog_ib_conn *conn = rdv->conn;
	struct kprog_ib_out *done_out;
	struct kprog_xfer *x = NULL;
	u64 start = kprog_stat_clock();
	int err = 0;

	rdma_rw_ctx_destroy(&rdv->rw, conn->qp, conn->port_num,
			    rdv->pin->sgt.sgl, rdv->pin->sgt.orig_nents,
			    DMA_FROM_DEVICE);
	rdv->pin->dirty = wc->status == IB_WC_SUCCESS;
	kprog_ib_pin_release(rdv->pin);
	rdv->pin = NULL;
	kprog_ib_gauge_add(KPROG_IB_G_READS, -1);
	trace_kprog_ib_read_end(rdv->rid, rdv->pos, rdv->piece,
				wc->status == IB_WC_SUCCESS ? 0 : -EIO);
	done_out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX, GFP_ATOMIC);

	spin_lock_bh(&conn->lock);
	conn->reads_free++;
	rdv->posted = false;
	rdv->reading = false;
	kprog_ib_conn_wire_done(conn);
	if (wc->status != IB_WC_SUCCESS) {
		/* The teardown completes the transfer. */
		kprog_ib_conn_fail_locked(conn, -EIO);
		goto unlock;
	}
	kprog_ib_rndv_post_reads(conn);
	rdv->pos += rdv->piece;
	if (rdv->pos == rdv->x->len || rdv->err) {
		/* Its FIN invalidates the chunk last read. */
		err = rdv->pos == rdv->x->len ? 0 : rdv->err;
		x = kprog_ib_rdv_claim(rdv);
		goto unlock;
	}
	if (rdv->pos == rdv->ch[0].offset + rdv->ch[0].len) {
		if (!done_out) {
			kprog_ib_conn_fail_locked(conn, -ENOMEM);
			goto unlock;
		}
		done_out->len = kprog_ib_put_done(done_out->buf, KPROG_IB_DONE,
						  rdv->cookie,
						  rdv->ch[0].offset, 0, 0,
						  KPROG_IB_INV);
		done_out->inv = true;
		done_out->inv_rkey = rdv->ch[0].rkey;
		kprog_ib_conn_queue_locked(conn, done_out);
		done_out = NULL;
		rdv->ch[0] = rdv->ch[1];
		rdv->nch--;
	}
	if (rdv->nch) {
		rdv->reading = true;
		kprog_ib_queue_rdv(rdv);
	}
unlock:
	spin_unlock_bh(&conn->lock);
	if (done_out)
		kprog_ib_out_free(done_out);
	if (x)
		kprog_xfer_done(x, rdv->pos, err);
	kprog_ib_rdv_put(rdv);	/* the READ's */
	kprog_ib_conn_count(wc, start);
}

/**
 * kprog_ib_fin() - &kprog_transport.fin: the receiving side is done with
 *	a rendezvous message from another node
 * @msg: the message (its rd.net.conn is the receiving transfer)
 * @bytes: bytes the receive got
 * @err: 0 or a negative errno
 *
 * Sends the FIN, invalidating the chunk still described (read last, or
 * the RTS's chunk of a message never pulled), and drops the message's
 * reference. Any context, no lock held.
 */
void kprog_ib_fin(struct kprog_msg *msg, u64 bytes, int err)
{
	struct kprog_ib_rdv *rdv = msg->rd.net.conn;
	struct kprog_ib_conn *conn = rdv->conn;
	struct kprog_ib_out *out;
	bool inv;

	out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX,
				 in_task() ? GFP_KERNEL : GFP_ATOMIC);
	spin_lock_bh(&conn->lock);
	list_del_init(&rdv->cnode);
	if (conn->state != KPROG_IB_CS_DEAD) {
		if (out) {
			inv = rdv->nch;
			out->len = kprog_ib_put_done(out->buf, KPROG_IB_FIN,
						     rdv->cookie,
						     inv ? rdv->ch[0].offset : 0,
						     bytes, err,
						     inv ? KPROG_IB_INV : 0);
			out->inv = inv;
			out->inv_rkey = rdv->ch[0].rkey;
			kprog_ib_conn_queue_locked(conn, out);
			out = NULL;
		} else {
			/* Both sides see the failure rather than a hang. */
			kprog_ib_conn_fail_locked(conn, -ENOMEM);
		}
	}
	spin_unlock_bh(&conn->lock);
	trace_kprog_ib_fin(rdv->cookie, bytes, err, false);
	if (out)
		kprog_ib_out_free(out);
	kprog_ib_rdv_put(rdv);
}

/**
 * kprog_ib_rndv_conn_dead() - fail the transfers bound to a dead connection
 * @conn: the connection, drained (no completion will come) and its
 *	workers flushed
 *
 * Sends waiting for a FIN complete with -ECONNRESET (or what their FIN
 * said, if it came and only invalidations were pending), their chunks are
 * released (their MRs go back to the pool, which the teardown destroys:
 * deregistered); transfers being pulled complete with -ECONNRESET.
 * Process context.
 */
void kprog_ib_rndv_conn_dead(struct kprog_ib_conn *conn)
{
	struct kprog_ib_tx *tx, *ttmp;
	struct kprog_ib_rdv *rdv, *rtmp;
	struct kprog_xfer *x;
	LIST_HEAD(txs);
	LIST_HEAD(rdvs);
	int i, err;

	spin_lock_bh(&conn->lock);
	list_splice_init(&conn->txs, &txs);
	list_splice_init(&conn->rdvs, &rdvs);
	list_for_each_entry_safe(tx, ttmp, &conn->mr_wait, wnode) {
		list_del_init(&tx->wnode);
		tx->waiting = false;
		kref_put(&tx->ref, kprog_ib_tx_release);
	}
	list_for_each_entry_safe(tx, ttmp, &conn->fence_wait, wnode) {
		list_del_init(&tx->wnode);
		tx->fenced = false;
		kref_put(&tx->ref, kprog_ib_tx_release);
	}
	list_for_each_entry_safe(rdv, rtmp, &conn->read_wait, wnode)
		list_del_init(&rdv->wnode);
	list_for_each_entry(tx, &txs, cnode) {
		for (i = 0; i < ARRAY_SIZE(tx->ch); i++) {
			tx->ch[i].invalidating = false;
			if (tx->ch[i].mr)
				kprog_ib_chunk_mr_put(conn, &tx->ch[i]);
			kprog_ib_chunk_clear(&tx->ch[i]);
		}
	}
	spin_unlock_bh(&conn->lock);

	list_for_each_entry_safe(tx, ttmp, &txs, cnode) {
		bool fin = tx->state == KPROG_IB_TX_FIN;

		list_del_init(&tx->cnode);
		err = fin ? tx->fin_status : -ECONNRESET;
		tx->state = KPROG_IB_TX_DONE;
		kprog_ib_tx_complete(tx, fin ? tx->fin_bytes : 0, err);
	}
	list_for_each_entry_safe(rdv, rtmp, &rdvs, cnode) {
		list_del_init(&rdv->cnode);
		if (rdv->pin)
			kprog_ib_read_unset(rdv);
		rdv->reading = false;
		x = rdv->x;
		rdv->x = NULL;
		if (x)
			kprog_xfer_done(x, rdv->pos, -ECONNRESET);
	}
}

/**
 * kprog_ib_rndv_init() - nothing to set up beyond static data
 *
 * Return: 0.
 */
int kprog_ib_rndv_init(void)
{
	return 0;
}

/**
 * kprog_ib_rndv_exit() - every transfer is gone: release the id tables
 */
void kprog_ib_rndv_exit(void)
{
	flush_work(&kprog_ib_unpin_item);
	WARN_ON(!xa_empty(&kprog_ib_txs) || !xa_empty(&kprog_ib_rdvs));
	xa_destroy(&kprog_ib_txs);
	xa_destroy(&kprog_ib_rdvs);
}
