// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib connections: one reliable connection (RC QP, kernel rdma_cm)
 * per pair of nodes, shared by all jobs; receive buffers and credits; the
 * send path; completion handlers of sends and receives; teardown.
 *
 * Making one. The first message to a node connects (kprog_ib_conn_get(),
 * from the sender's process): address and route are resolved, then the
 * QP, its CQ (from the device's CQ pool, IB_POLL_SOFTIRQ), a protection
 * domain and an MR pool of its own and the receive buffers are made, and
 * the connection is requested with a private datum (magic, version,
 * receive buffers, largest message). Messages queue meanwhile, in order.
 * Every node listens on the port of the module parameter.
 *
 * One per pair. A request from a node that has a listed connection being
 * made by this side is a simultaneous connect: the side with the lower
 * address keeps its own request and refuses the other's (a consumer
 * reject saying so); the higher side accepts the request and moves what
 * its own attempt had queued onto the accepted connection. The refused
 * side waits for the request that won (and gives up after a while). A
 * request from a node with an established connection replaces it: that
 * node lost its end. A connection to this node's own address is the
 * loopback of KPROG_JOIN_NET_ONLY: its active end carries the messages,
 * its passive end (not listed) the answers.
 *
 * Completion context. The CQs are polled in softirq (IB_POLL_SOFTIRQ):
 * the handlers only parse, match (kprog_arrive() allows softirq), post
 * and complete, which is the cheapest context with the lowest latency;
 * whatever sleeps goes to kprog_ib_wq (pinning, READ set-up, endpoint
 * puts, departures) or kprog_ib_cm_wq (teardown).
 *
 * Sending. A message (struct kprog_ib_out) is posted at once when the
 * connection is up, a send slot and a credit are free (ib_plan.c), else
 * appended to the backlog, which the completions of sends and the credits
 * of received messages drain in order. Each header carries the credits
 * owed; a CREDIT message alone goes when half the buffers are owed and
 * nothing else returns them.
 *
 * Dying. A failed completion (not a flush), a disconnect, a refused or
 * failed connect, the device's removal or unload mark the connection
 * dead; a worker then moves the QP to error and drains it, waits for the
 * transfer workers, fails what was queued or bound to it (ib_rndv.c),
 * tells the core that the ranks of the peer's node are lost (if it was
 * the node's connection), and frees the QP, CQ, MRs, buffers, PD and id.
 * The next message to that node connects again.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/socket.h>
#include <linux/delay.h>
#include <linux/seq_file.h>
#include <rdma/rdma_cm.h>
#include <rdma/ib_cm.h>
#include <rdma/mr_pool.h>
#include "kprog.h"
#include "ep.h"
#include "stats.h"
#include "ib.h"

#define KPROG_IB_CM_MAGIC	0x6b706962	/* "kpib" */
#define KPROG_IB_CM_TIMEOUT_MS	2000
#define KPROG_IB_RACE_WAIT	(5 * HZ)
#define KPROG_IB_REJ_RACE	1
#define KPROG_IB_REJ_REFUSED	2

/**
 * struct kprog_ib_cm_data - private data of a connection request and of
 *	its acceptance
 * @magic: KPROG_IB_CM_MAGIC
 * @version: KPROG_IB_WIRE_VERSION
 * @rsvd: zero
 * @recv_bufs: receive buffers the sender of it posted (initial credits)
 * @max_msg: largest message it receives
 */
struct kprog_ib_cm_data {
	__le32 magic;
	u8 version;
	u8 rsvd[3];
	__le32 recv_bufs;
	__le32 max_msg;
};

/**
 * struct kprog_ib_cm_rej - private data of a refusal
 * @magic: KPROG_IB_CM_MAGIC
 * @reason: KPROG_IB_REJ_*
 */
struct kprog_ib_cm_rej {
	__le32 magic;
	__le32 reason;
};

DEFINE_SPINLOCK(kprog_ib_conns_lock);
static LIST_HEAD(kprog_ib_conns);
static u32 kprog_ib_nr_conns;
static struct rdma_cm_id *kprog_ib_listen_id;
static struct workqueue_struct *kprog_ib_cm_wq;
struct workqueue_struct *kprog_ib_wq;

static void kprog_ib_send_done(struct ib_cq *cq, struct ib_wc *wc);
static void kprog_ib_recv_done(struct ib_cq *cq, struct ib_wc *wc);
static void kprog_ib_rx_work(struct work_struct *work);

/**
 * kprog_ib_out_alloc() - a message to send
 * @len: bytes of header, body and payload
 * @gfp: allocation flags
 *
 * Return: the message (its buffer not initialized) or NULL.
 */
struct kprog_ib_out *kprog_ib_out_alloc(u32 len, gfp_t gfp)
{
	struct kprog_ib_out *out = kmalloc(sizeof(*out) + len, gfp);

	if (!out)
		return NULL;
	INIT_LIST_HEAD(&out->node);
	out->conn = NULL;
	out->len = len;
	out->inv = false;
	out->credit = false;
	out->inv_rkey = 0;
	out->dma = 0;
	return out;
}

/**
 * kprog_ib_out_free() - free a message that was not or no longer is posted
 * @out: the message
 */
void kprog_ib_out_free(struct kprog_ib_out *out)
{
	kfree(out);
}

/**
 * kprog_ib_conn_count() - account one work completion
 * @wc: the completion (unused beyond the count)
 * @start: kprog_stat_clock() when its handler began
 *
 * A completion handled in softirq counts as a tasklet run, one handled in
 * a workqueue (process context) as a work item.
 */
void kprog_ib_conn_count(struct ib_wc *wc, u64 start)
{
	kprog_stat_add(KPROG_STAT_NET_CQES, 1);
	kprog_stat_run(in_task() ? KPROG_STAT_WORK_ITEMS :
		       KPROG_STAT_TASKLET_RUNS, start);
}

static void kprog_ib_conn_release(struct kref *ref)
{
	struct kprog_ib_conn *conn = container_of(ref, struct kprog_ib_conn,
						  ref);

	kprog_ib_out_free(conn->credit_out);
	kfree(conn);
	kprog_ib_gauge_add(KPROG_IB_G_CONNS, -1);
}

/**
 * kprog_ib_conn_put() - drop a connection reference
 * @conn: the connection
 *
 * Any context: the last reference is dropped after teardown freed every
 * verbs object, so only memory is left.
 */
void kprog_ib_conn_put(struct kprog_ib_conn *conn)
{
	kref_put(&conn->ref, kprog_ib_conn_release);
}

static void kprog_ib_conn_dead_work(struct work_struct *work);
static void kprog_ib_conn_retry_work(struct work_struct *work);

static struct kprog_ib_conn *kprog_ib_conn_alloc(const struct kprog_ib_addr *peer)
{
	struct kprog_ib_conn *conn = kzalloc(sizeof(*conn), GFP_KERNEL);

	if (!conn)
		return NULL;
	conn->credit_out = kprog_ib_out_alloc(sizeof(struct kprog_ib_hdr),
					      GFP_KERNEL);
	if (!conn->credit_out) {
		kfree(conn);
		return NULL;
	}
	conn->credit_out->credit = true;
	kprog_ib_put_credit(conn->credit_out->buf);
	kref_init(&conn->ref);
	spin_lock_init(&conn->lock);
	conn->state = KPROG_IB_CS_RESOLVING;
	conn->peer = *peer;
	conn->loopback = kprog_ib_addr_is_local(peer);
	INIT_LIST_HEAD(&conn->lnode);
	INIT_LIST_HEAD(&conn->mrs);
	INIT_LIST_HEAD(&conn->backlog);
	INIT_LIST_HEAD(&conn->read_wait);
	INIT_LIST_HEAD(&conn->mr_wait);
	INIT_LIST_HEAD(&conn->txs);
	INIT_LIST_HEAD(&conn->rdvs);
	INIT_WORK(&conn->dead_work, kprog_ib_conn_dead_work);
	INIT_DELAYED_WORK(&conn->retry_work, kprog_ib_conn_retry_work);
	kprog_ib_gauge_add(KPROG_IB_G_CONNS, 1);
	return conn;
}

/**
 * kprog_ib_conn_fail_locked() - kprog_ib_conn_fail() with the lock held
 * @conn: the connection, its lock held
 * @err: why
 */
void kprog_ib_conn_fail_locked(struct kprog_ib_conn *conn, int err)
{
	if (conn->state == KPROG_IB_CS_DEAD)
		return;
	conn->state = KPROG_IB_CS_DEAD;
	conn->err = err;
	kref_get(&conn->ref);
	queue_work(kprog_ib_cm_wq, &conn->dead_work);
}

/**
 * kprog_ib_conn_fail() - the connection is unusable: tear it down
 * @conn: the connection
 * @err: why (kept for the log)
 *
 * Any context; later calls do nothing.
 */
void kprog_ib_conn_fail(struct kprog_ib_conn *conn, int err)
{
	spin_lock_bh(&conn->lock);
	kprog_ib_conn_fail_locked(conn, err);
	spin_unlock_bh(&conn->lock);
}

/**
 * kprog_ib_conn_alive() - may new work go on the connection?
 * @conn: the connection
 *
 * Return: false once it is dead.
 */
bool kprog_ib_conn_alive(struct kprog_ib_conn *conn)
{
	return READ_ONCE(conn->state) != KPROG_IB_CS_DEAD;
}

/* Under conn->lock: post one message. */
static int kprog_ib_conn_post(struct kprog_ib_conn *conn,
			      struct kprog_ib_out *out)
{
	struct ib_sge sge;
	struct ib_send_wr wr = {};
	int err;

	kprog_ib_set_credits(out->buf, kprog_ib_credits_take(&conn->cr));
	out->conn = conn;
	out->cqe.done = kprog_ib_send_done;
	out->dma = ib_dma_map_single(conn->dev, out->buf, out->len,
				     DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->dev, out->dma))
		return -ENOMEM;
	sge.addr = out->dma;
	sge.length = out->len;
	sge.lkey = conn->pd->local_dma_lkey;
	wr.wr_cqe = &out->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IB_SEND_SIGNALED;
	if (out->inv) {
		wr.opcode = IB_WR_SEND_WITH_INV;
		wr.ex.invalidate_rkey = out->inv_rkey;
	} else {
		wr.opcode = IB_WR_SEND;
	}
	conn->sends_free--;
	err = ib_post_send(conn->qp, &wr, NULL);
	if (err) {
		conn->sends_free++;
		ib_dma_unmap_single(conn->dev, out->dma, out->len,
				    DMA_TO_DEVICE);
	}
	return err;
}

/* Under conn->lock, connected: post what the budgets allow, in order. */
static void kprog_ib_conn_flush(struct kprog_ib_conn *conn)
{
	struct kprog_ib_out *out;
	int err;

	while ((out = list_first_entry_or_null(&conn->backlog,
					       struct kprog_ib_out, node))) {
		if (!conn->sends_free ||
		    !kprog_ib_credits_may_send(&conn->cr, false))
			break;
		list_del_init(&out->node);
		err = kprog_ib_conn_post(conn, out);
		if (err) {
			kprog_ib_out_free(out);
			kprog_ib_conn_fail_locked(conn, err);
			return;
		}
	}
	if (conn->credit_busy || !conn->sends_free ||
	    !kprog_ib_credits_want_return(&conn->cr,
					  !list_empty(&conn->backlog)))
		return;
	conn->credit_busy = true;
	err = kprog_ib_conn_post(conn, conn->credit_out);
	if (err) {
		conn->credit_busy = false;
		kprog_ib_conn_fail_locked(conn, err);
	}
}

/**
 * kprog_ib_conn_queue() - send a message on a connection, in order
 * @conn: the connection
 * @out: the message; the connection owns it on success
 *
 * Any context.
 *
 * Return: 0, or -ECONNRESET when the connection is dead (the caller
 * keeps @out).
 */
int kprog_ib_conn_queue(struct kprog_ib_conn *conn, struct kprog_ib_out *out)
{
	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_DEAD) {
		spin_unlock_bh(&conn->lock);
		return -ECONNRESET;
	}
	list_add_tail(&out->node, &conn->backlog);
	if (conn->state == KPROG_IB_CS_CONNECTED)
		kprog_ib_conn_flush(conn);
	spin_unlock_bh(&conn->lock);
	return 0;
}

/**
 * kprog_ib_conn_queue_locked() - kprog_ib_conn_queue() with the lock held
 * @conn: the connection, its lock held
 * @out: the message; the connection owns it (a dead one frees it)
 *
 * For a message that must leave together with a change of state (an RTS
 * binding its transfer to the connection, a PULL, DONE, FIN).
 */
void kprog_ib_conn_queue_locked(struct kprog_ib_conn *conn,
				struct kprog_ib_out *out)
{
	if (conn->state == KPROG_IB_CS_DEAD) {
		kprog_ib_out_free(out);
		return;
	}
	list_add_tail(&out->node, &conn->backlog);
	if (conn->state == KPROG_IB_CS_CONNECTED)
		kprog_ib_conn_flush(conn);
}

/**
 * kprog_ib_conn_kick() - send what waits for a budget that was returned
 * @conn: the connection
 */
void kprog_ib_conn_kick(struct kprog_ib_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_CONNECTED)
		kprog_ib_conn_flush(conn);
	spin_unlock_bh(&conn->lock);
}

/**
 * kprog_ib_conn_grant() - credits a received message returned
 * @conn: the connection it came on
 * @credits: its header's field
 *
 * Return: 0, or -EPROTO for credits that were never taken.
 */
int kprog_ib_conn_grant(struct kprog_ib_conn *conn, u16 credits)
{
	int err;

	spin_lock_bh(&conn->lock);
	err = kprog_ib_credits_grant(&conn->cr, credits);
	if (!err && credits && conn->state == KPROG_IB_CS_CONNECTED)
		kprog_ib_conn_flush(conn);
	spin_unlock_bh(&conn->lock);
	return err;
}

static void kprog_ib_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kprog_ib_out *out = container_of(wc->wr_cqe,
						struct kprog_ib_out, cqe);
	struct kprog_ib_conn *conn = out->conn;
	u64 start = kprog_stat_clock();

	ib_dma_unmap_single(conn->dev, out->dma, out->len, DMA_TO_DEVICE);
	spin_lock_bh(&conn->lock);
	conn->sends_free++;
	if (out->credit)
		conn->credit_busy = false;
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_debug("kprog_ib: send failed: %s\n",
				 ib_wc_status_msg(wc->status));
		kprog_ib_conn_fail_locked(conn, -ECONNRESET);
	} else if (conn->state == KPROG_IB_CS_CONNECTED) {
		kprog_ib_conn_flush(conn);
	}
	spin_unlock_bh(&conn->lock);
	if (!out->credit)
		kprog_ib_out_free(out);
	kprog_ib_conn_count(wc, start);
}

/* Give a receive buffer back to the HCA; owes the peer a credit. */
static void kprog_ib_conn_repost(struct kprog_ib_conn *conn,
				 struct kprog_ib_rx *rx)
{
	struct ib_sge sge = {
		.addr = rx->dma,
		.length = conn->rx_size,
		.lkey = conn->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &rx->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(conn->dev, rx->dma, conn->rx_size,
				      DMA_FROM_DEVICE);
	spin_lock_bh(&conn->lock);
	if (conn->state != KPROG_IB_CS_DEAD) {
		if (ib_post_recv(conn->qp, &wr, NULL)) {
			kprog_ib_conn_fail_locked(conn, -EIO);
		} else {
			kprog_ib_credits_reposted(&conn->cr);
			if (conn->state == KPROG_IB_CS_CONNECTED)
				kprog_ib_conn_flush(conn);
		}
	}
	spin_unlock_bh(&conn->lock);
}

static void kprog_ib_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kprog_ib_rx *rx = container_of(wc->wr_cqe, struct kprog_ib_rx,
					      cqe);
	struct kprog_ib_conn *conn = rx->conn;
	u64 start = kprog_stat_clock();
	struct kprog_ep *ep;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_debug("kprog_ib: receive failed: %s\n",
				 ib_wc_status_msg(wc->status));
		kprog_ib_conn_fail(conn, -ECONNRESET);
		kprog_ib_conn_count(wc, start);
		return;
	}
	ib_dma_sync_single_for_cpu(conn->dev, rx->dma, conn->rx_size,
				   DMA_FROM_DEVICE);
	ep = kprog_ib_recv(conn, rx->buf, wc->byte_len,
			   wc->wc_flags & IB_WC_WITH_INVALIDATE,
			   wc->ex.invalidate_rkey);
	if (ep) {
		/* The last endpoint reference is dropped where it may sleep. */
		rx->ep = ep;
		queue_work(kprog_ib_wq, &rx->work);
	} else {
		kprog_ib_conn_repost(conn, rx);
	}
	kprog_ib_conn_count(wc, start);
}

static void kprog_ib_rx_work(struct work_struct *work)
{
	struct kprog_ib_rx *rx = container_of(work, struct kprog_ib_rx, work);

	kprog_ep_put(rx->ep);
	rx->ep = NULL;
	kprog_ib_conn_repost(rx->conn, rx);
}

/* Frees whatever kprog_ib_conn_setup() made; the QP is drained or new. */
static void kprog_ib_conn_free_res(struct kprog_ib_conn *conn)
{
	u32 i;

	if (conn->qp) {
		kprog_ib_rndv_mr_free(conn);
		rdma_destroy_qp(conn->cm_id);
		conn->qp = NULL;
	}
	if (conn->rx) {
		for (i = 0; i < conn->nr_rx; i++) {
			struct kprog_ib_rx *rx = &conn->rx[i];

			if (!rx->buf)
				continue;
			if (rx->dma)
				ib_dma_unmap_single(conn->dev, rx->dma,
						    conn->rx_size,
						    DMA_FROM_DEVICE);
			kfree(rx->buf);
		}
		kfree(conn->rx);
		conn->rx = NULL;
	}
	if (conn->cq) {
		ib_cq_pool_put(conn->cq, conn->cq_size);
		conn->cq = NULL;
	}
	if (conn->pd) {
		ib_dealloc_pd(conn->pd);
		conn->pd = NULL;
	}
}

/* Receive buffers, mapped and posted. */
static int kprog_ib_conn_rx_init(struct kprog_ib_conn *conn)
{
	struct kprog_ib_rx *rx;
	u32 i;

	conn->rx_size = KPROG_IB_EAGER_HDR + kprog_ib_eager_size;
	conn->rx = kcalloc(kprog_ib_recv_bufs, sizeof(*conn->rx), GFP_KERNEL);
	if (!conn->rx)
		return -ENOMEM;
	conn->nr_rx = kprog_ib_recv_bufs;
	for (i = 0; i < conn->nr_rx; i++) {
		struct ib_sge sge;
		struct ib_recv_wr wr = {};

		rx = &conn->rx[i];
		rx->conn = conn;
		rx->cqe.done = kprog_ib_recv_done;
		INIT_WORK(&rx->work, kprog_ib_rx_work);
		rx->buf = kmalloc(conn->rx_size, GFP_KERNEL);
		if (!rx->buf)
			return -ENOMEM;
		rx->dma = ib_dma_map_single(conn->dev, rx->buf, conn->rx_size,
					    DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(conn->dev, rx->dma)) {
			rx->dma = 0;
			return -ENOMEM;
		}
		sge.addr = rx->dma;
		sge.length = conn->rx_size;
		sge.lkey = conn->pd->local_dma_lkey;
		wr.wr_cqe = &rx->cqe;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ib_post_recv(conn->qp, &wr, NULL))
			return -EIO;
	}
	return 0;
}

/*
 * The verbs objects of a connection whose id is bound to a device: PD,
 * CQ, QP, MR pool, receive buffers. Unwinds itself on failure.
 */
static int kprog_ib_conn_setup(struct kprog_ib_conn *conn,
			       struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;
	const struct ib_device_attr *a = &dev->attrs;
	struct ib_qp_init_attr qa = {};
	u32 sge_rd, read_wrs, sq;
	int err;

	if (!(a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !a->max_fast_reg_page_list_len)
		return -EOPNOTSUPP;
	spin_lock_bh(&conn->lock);
	conn->dev = dev;
	conn->port_num = id->port_num;
	spin_unlock_bh(&conn->lock);
	conn->max_pages = min_t(u32, kprog_ib_reg_pages,
				a->max_fast_reg_page_list_len);
	sge_rd = max(1, min(a->max_sge_rd, a->max_send_sge));
	read_wrs = DIV_ROUND_UP(conn->max_pages, sge_rd);
	/* SENDs (one more for CREDIT), a REG_MR or LOCAL_INV per MR, READs */
	sq = kprog_ib_recv_bufs + 1 + kprog_ib_conn_mrs +
	     kprog_ib_max_reads * read_wrs + 1;
	if (sq + 3 * kprog_ib_max_reads > a->max_qp_wr ||
	    kprog_ib_recv_bufs + 1 > a->max_qp_wr)
		return -EINVAL;

	conn->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(conn->pd)) {
		err = PTR_ERR(conn->pd);
		conn->pd = NULL;
		return err;
	}
	conn->cq_size = sq + 3 * kprog_ib_max_reads + kprog_ib_recv_bufs + 2;
	conn->cq = ib_cq_pool_get(dev, conn->cq_size, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->cq)) {
		err = PTR_ERR(conn->cq);
		conn->cq = NULL;
		goto err_free;
	}
	qa.qp_context = conn;
	qa.send_cq = conn->cq;
	qa.recv_cq = conn->cq;
	qa.cap.max_send_wr = sq;
	qa.cap.max_recv_wr = kprog_ib_recv_bufs + 1;
	qa.cap.max_send_sge = sge_rd;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_rdma_ctxs = kprog_ib_max_reads;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_RC;
	qa.port_num = id->port_num;
	err = rdma_create_qp(id, conn->pd, &qa);
	if (err)
		goto err_free;
	conn->qp = id->qp;
	err = ib_mr_pool_init(conn->qp, &conn->mrs, kprog_ib_conn_mrs,
			      IB_MR_TYPE_MEM_REG, conn->max_pages, 0);
	if (err)
		goto err_free;
	/*
	 * Before the first receive is posted: a message may come in before
	 * this end sees the connection established.
	 */
	spin_lock_bh(&conn->lock);
	kprog_ib_credits_init(&conn->cr, 0, kprog_ib_recv_bufs);
	conn->sends_free = kprog_ib_recv_bufs + 1;
	conn->reads_free = kprog_ib_max_reads;
	spin_unlock_bh(&conn->lock);
	err = kprog_ib_conn_rx_init(conn);
	if (err)
		goto err_free;
	return 0;

err_free:
	kprog_ib_conn_free_res(conn);
	return err;
}

static void kprog_ib_cm_data_fill(struct kprog_ib_cm_data *d)
{
	memset(d, 0, sizeof(*d));
	d->magic = cpu_to_le32(KPROG_IB_CM_MAGIC);
	d->version = KPROG_IB_WIRE_VERSION;
	d->recv_bufs = cpu_to_le32(kprog_ib_recv_bufs);
	d->max_msg = cpu_to_le32(KPROG_IB_EAGER_HDR + kprog_ib_eager_size);
}

/*
 * The peer's connection datum: same wire version, receive buffers within
 * the module's limits, and messages of this node's largest size fit.
 * Returns its receive buffers, or 0 if it is unusable.
 */
static u32 kprog_ib_cm_data_check(const void *data, u8 len, u32 *max_msg)
{
	const struct kprog_ib_cm_data *d = data;
	u32 bufs;

	if (!d || len < sizeof(*d) ||
	    le32_to_cpu(d->magic) != KPROG_IB_CM_MAGIC ||
	    d->version != KPROG_IB_WIRE_VERSION)
		return 0;
	bufs = le32_to_cpu(d->recv_bufs);
	*max_msg = le32_to_cpu(d->max_msg);
	if (bufs < 2 || bufs > 65535 ||
	    *max_msg < KPROG_IB_EAGER_HDR + kprog_ib_eager_size)
		return 0;
	return bufs;
}

static void kprog_ib_conn_param(struct rdma_conn_param *p,
				const struct ib_device *dev,
				struct kprog_ib_cm_data *d)
{
	u8 rd = min3(dev->attrs.max_qp_rd_atom, dev->attrs.max_qp_init_rd_atom,
		     16);

	memset(p, 0, sizeof(*p));
	kprog_ib_cm_data_fill(d);
	p->private_data = d;
	p->private_data_len = sizeof(*d);
	p->responder_resources = rd;
	p->initiator_depth = rd;
	p->flow_control = 1;
	/*
	 * Not 7: rxe (and the IB spec for rnr_retry) take 7 for "retry for
	 * ever", and a node that vanished must fail the QP (retry exceeded)
	 * so that its transfers end with an error.
	 */
	p->retry_count = 6;
	p->rnr_retry_count = 7;
}

/* ROUTE_RESOLVED of an active connection: resources, then the request. */
static int kprog_ib_conn_connect(struct kprog_ib_conn *conn,
				 struct rdma_cm_id *id)
{
	struct kprog_ib_cm_data d;
	struct rdma_conn_param p;
	int err;

	err = kprog_ib_conn_setup(conn, id);
	if (err)
		return err;
	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_DEAD) {
		spin_unlock_bh(&conn->lock);
		return 0;
	}
	conn->state = KPROG_IB_CS_CONNECTING;
	spin_unlock_bh(&conn->lock);
	kprog_ib_conn_param(&p, id->device, &d);
	return rdma_connect_locked(id, &p);
}

static int kprog_ib_conn_established(struct kprog_ib_conn *conn,
				     struct rdma_cm_event *ev)
{
	u32 bufs = 0, max_msg;

	/* The passive end learnt the peer's buffers from the request. */
	if (conn->active) {
		bufs = kprog_ib_cm_data_check(ev->param.conn.private_data,
					      ev->param.conn.private_data_len,
					      &max_msg);
		if (!bufs)
			return -EPROTO;
		conn->peer_max = max_msg;
	}
	spin_lock_bh(&conn->lock);
	if (conn->state != KPROG_IB_CS_DEAD) {
		conn->cr.avail += bufs;
		conn->state = KPROG_IB_CS_CONNECTED;
		kprog_ib_conn_flush(conn);
	}
	spin_unlock_bh(&conn->lock);
	return 0;
}

static void kprog_ib_conn_rejected(struct kprog_ib_conn *conn,
				   struct rdma_cm_id *id,
				   struct rdma_cm_event *ev)
{
	const struct kprog_ib_cm_rej *r = NULL;
	u8 len = 0;

	if (ev->status == IB_CM_REJ_CONSUMER_DEFINED)
		r = rdma_consumer_reject_data(id, ev, &len);
	if (r && len >= sizeof(*r) &&
	    le32_to_cpu(r->magic) == KPROG_IB_CM_MAGIC &&
	    le32_to_cpu(r->reason) == KPROG_IB_REJ_RACE) {
		/* The peer's own request wins: it will arrive here. */
		spin_lock_bh(&conn->lock);
		if (conn->state != KPROG_IB_CS_DEAD) {
			conn->state = KPROG_IB_CS_WAIT_PEER;
			kref_get(&conn->ref);
			if (!queue_delayed_work(kprog_ib_cm_wq,
						&conn->retry_work,
						KPROG_IB_RACE_WAIT))
				kref_put(&conn->ref, kprog_ib_conn_release);
		}
		spin_unlock_bh(&conn->lock);
		return;
	}
	kprog_ib_conn_fail(conn, -ECONNREFUSED);
}

static void kprog_ib_conn_retry_work(struct work_struct *work)
{
	struct kprog_ib_conn *conn = container_of(to_delayed_work(work),
						  struct kprog_ib_conn,
						  retry_work);

	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_WAIT_PEER)
		kprog_ib_conn_fail_locked(conn, -ETIMEDOUT);
	spin_unlock_bh(&conn->lock);
	kprog_ib_conn_put(conn);
}

static bool kprog_ib_addr_same(const struct kprog_ib_addr *a,
			       const struct kprog_ib_addr *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 4);
}

static void kprog_ib_addr_from_sin(struct kprog_ib_addr *a,
				   const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	memcpy(a->addr, &sin->sin_addr.s_addr, 4);
}

/* Under the list lock: the node's listed connection, if it lives. */
static struct kprog_ib_conn *kprog_ib_conn_find(const struct kprog_ib_addr *a)
{
	struct kprog_ib_conn *conn;

	list_for_each_entry(conn, &kprog_ib_conns, lnode)
		if (conn->listed && kprog_ib_addr_same(&conn->peer, a) &&
		    READ_ONCE(conn->state) != KPROG_IB_CS_DEAD)
			return conn;
	return NULL;
}

static void kprog_ib_cm_reject(struct rdma_cm_id *id, u32 reason)
{
	struct kprog_ib_cm_rej r = {
		.magic = cpu_to_le32(KPROG_IB_CM_MAGIC),
		.reason = cpu_to_le32(reason),
	};

	rdma_reject(id, &r, sizeof(r), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * Under the list lock and @old's lock: @conn, not yet visible, takes over
 * what @old queued while it was being made; @old dies quietly.
 */
static void kprog_ib_conn_supersede(struct kprog_ib_conn *conn,
				    struct kprog_ib_conn *old)
{
	struct kprog_ib_tx *tx;

	list_splice_tail_init(&old->backlog, &conn->backlog);
	list_for_each_entry(tx, &old->txs, cnode) {
		kref_get(&conn->ref);
		tx->conn = conn;
		/* @old's reference is dropped by its teardown below. */
		kref_put(&old->ref, kprog_ib_conn_release);
	}
	list_splice_tail_init(&old->txs, &conn->txs);
	old->listed = false;
	old->notify = false;
	kprog_ib_conn_fail_locked(old, -ECONNABORTED);
}

/*
 * CONNECT_REQUEST on the listener: a new passive connection. Returns
 * non-zero to have rdma_cm destroy @id (after a refusal).
 */
static int kprog_ib_conn_accept(struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	struct kprog_ib_conn *conn, *old = NULL;
	struct kprog_ib_addr peer, self;
	struct kprog_ib_cm_data d;
	struct rdma_conn_param p;
	u32 bufs, max_msg, reason = KPROG_IB_REJ_REFUSED;
	int err;

	bufs = kprog_ib_cm_data_check(ev->param.conn.private_data,
				      ev->param.conn.private_data_len,
				      &max_msg);
	if (!bufs || id->route.addr.dst_addr.ss_family != AF_INET)
		goto reject;
	kprog_ib_addr_from_sin(&peer, (struct sockaddr *)&id->route.addr.dst_addr);
	kprog_ib_addr_from_sin(&self, (struct sockaddr *)&id->route.addr.src_addr);
	conn = kprog_ib_conn_alloc(&peer);
	if (!conn)
		goto reject;
	conn->loopback = kprog_ib_addr_same(&peer, &self);

	spin_lock_bh(&kprog_ib_conns_lock);
	if (kprog_ib_nr_conns >= kprog_ib_max_conns)
		goto reject_unlock;
	if (!conn->loopback)
		old = kprog_ib_conn_find(&peer);
	if (old) {
		spin_lock(&old->lock);
		if (old->active && old->state != KPROG_IB_CS_CONNECTED &&
		    old->state != KPROG_IB_CS_WAIT_PEER &&
		    memcmp(self.addr, peer.addr, 4) < 0) {
			/* Simultaneous connects: the lower address's wins. */
			spin_unlock(&old->lock);
			reason = KPROG_IB_REJ_RACE;
			goto reject_unlock;
		}
		if (old->state != KPROG_IB_CS_CONNECTED) {
			kprog_ib_conn_supersede(conn, old);
		} else {
			/* The peer lost its end: this one replaces it. */
			old->listed = false;
			kprog_ib_conn_fail_locked(old, -ECONNRESET);
		}
		spin_unlock(&old->lock);
	}
	/* The passive end of a loopback only answers: not listed. */
	conn->listed = !conn->loopback;
	conn->notify = !conn->loopback;
	conn->state = KPROG_IB_CS_CONNECTING;
	conn->cm_id = id;
	id->context = conn;
	list_add_tail(&conn->lnode, &kprog_ib_conns);
	kprog_ib_nr_conns++;
	spin_unlock_bh(&kprog_ib_conns_lock);

	conn->peer_max = max_msg;
	err = kprog_ib_conn_setup(conn, id);
	if (!err) {
		spin_lock_bh(&conn->lock);
		conn->cr.avail = bufs;
		spin_unlock_bh(&conn->lock);
		kprog_ib_conn_param(&p, id->device, &d);
		p.responder_resources = min(p.responder_resources,
					    ev->param.conn.initiator_depth);
		p.initiator_depth = min(p.initiator_depth,
					ev->param.conn.responder_resources);
		err = rdma_accept(id, &p);
		if (!err)
			return 0;
		kprog_ib_conn_free_res(conn);
	}
	/* rdma_cm destroys the id when this returns non-zero. */
	conn->cm_id = NULL;
	kprog_ib_conn_fail(conn, err);
	kprog_ib_cm_reject(id, KPROG_IB_REJ_REFUSED);
	return 1;

reject_unlock:
	spin_unlock_bh(&kprog_ib_conns_lock);
	kprog_ib_conn_put(conn);
reject:
	kprog_ib_cm_reject(id, reason);
	return 1;
}

static int kprog_ib_cm_handler(struct rdma_cm_id *id,
			       struct rdma_cm_event *ev)
{
	struct kprog_ib_conn *conn = id->context;
	int err = 0;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return kprog_ib_conn_accept(id, ev);
	/* The listener; or a connection whose teardown has begun. */
	if (!conn || !kprog_ib_conn_alive(conn))
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = rdma_resolve_route(id, KPROG_IB_CM_TIMEOUT_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = kprog_ib_conn_connect(conn, id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		err = kprog_ib_conn_established(conn, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		kprog_ib_conn_rejected(conn, id, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		err = -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		err = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		err = -ENODEV;
		break;
	default:
		break;
	}
	if (err) {
		pr_debug("kprog_ib: connection to %pI4: %s: %d\n",
			 conn->peer.addr, rdma_event_msg(ev->event), err);
		kprog_ib_conn_fail(conn, err);
	}
	return 0;
}

/* An active connection's first steps; the handler does the rest. */
static int kprog_ib_conn_start(struct kprog_ib_conn *conn, u16 port)
{
	struct sockaddr_in dst = { .sin_family = AF_INET }, src;
	struct kprog_node_addr self;
	struct rdma_cm_id *id;
	bool bind;

	id = rdma_create_id(&init_net, kprog_ib_cm_handler, conn,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	conn->cm_id = id;
	dst.sin_port = htons(port);
	memcpy(&dst.sin_addr.s_addr, conn->peer.addr, 4);
	/* From this node's address, which is what the peer checks. */
	bind = !kprog_ib_local_addr(&self) && self.family == AF_INET;
	if (bind) {
		memset(&src, 0, sizeof(src));
		src.sin_family = AF_INET;
		memcpy(&src.sin_addr.s_addr, self.addr, 4);
	}
	return rdma_resolve_addr(id, bind ? (struct sockaddr *)&src : NULL,
				 (struct sockaddr *)&dst,
				 KPROG_IB_CM_TIMEOUT_MS);
}

/**
 * kprog_ib_conn_get() - the connection to a node, referenced
 * @na: the node's address from a job's node map (port 0: the default)
 * @create: connect if there is none
 *
 * Process context (connecting may sleep).
 *
 * Return: the connection (perhaps still being made), NULL when there is
 * none and @create is false, or an ERR_PTR (-EAFNOSUPPORT: not IPv4,
 * -ENOBUFS: max_conns reached, -ENOMEM, or the error of the first step).
 */
struct kprog_ib_conn *kprog_ib_conn_get(const struct kprog_node_addr *na,
					bool create)
{
	struct kprog_ib_conn *conn, *new;
	struct kprog_ib_addr a;
	int err;

	if (na->family != AF_INET)
		return ERR_PTR(-EAFNOSUPPORT);
	kprog_ib_addr_from_node(&a, na);
	spin_lock_bh(&kprog_ib_conns_lock);
	conn = kprog_ib_conn_find(&a);
	if (conn)
		kref_get(&conn->ref);
	spin_unlock_bh(&kprog_ib_conns_lock);
	if (conn || !create)
		return conn;

	new = kprog_ib_conn_alloc(&a);
	if (!new)
		return ERR_PTR(-ENOMEM);
	new->active = true;
	spin_lock_bh(&kprog_ib_conns_lock);
	conn = kprog_ib_conn_find(&a);
	if (conn || kprog_ib_nr_conns >= kprog_ib_max_conns) {
		if (conn)
			kref_get(&conn->ref);
		spin_unlock_bh(&kprog_ib_conns_lock);
		kprog_ib_conn_put(new);
		return conn ?: ERR_PTR(-ENOBUFS);
	}
	new->listed = true;
	new->notify = true;
	list_add_tail(&new->lnode, &kprog_ib_conns);
	kprog_ib_nr_conns++;
	kref_get(&new->ref);	/* the caller's */
	spin_unlock_bh(&kprog_ib_conns_lock);

	err = kprog_ib_conn_start(new, na->port ? ntohs(na->port) :
				  kprog_ib_port);
	if (err) {
		kprog_ib_conn_fail(new, err);
		kprog_ib_conn_put(new);
		return ERR_PTR(err);
	}
	return new;
}

static void kprog_ib_conn_dead_work(struct work_struct *work)
{
	struct kprog_ib_conn *conn = container_of(work, struct kprog_ib_conn,
						  dead_work);
	struct kprog_ib_out *out, *tmp;
	LIST_HEAD(backlog);

	pr_debug("kprog_ib: connection to %pI4 (%s) down: %d\n",
		 conn->peer.addr, conn->active ? "active" : "passive",
		 conn->err);
	spin_lock_bh(&kprog_ib_conns_lock);
	conn->listed = false;
	spin_unlock_bh(&kprog_ib_conns_lock);
	/*
	 * A handler of the id that began before the connection died ends
	 * first (what it made is freed below); later ones see it dead.
	 */
	if (conn->cm_id) {
		rdma_lock_handler(conn->cm_id);
		rdma_unlock_handler(conn->cm_id);
	}
	/* No completion after this; every posted request was flushed. */
	if (conn->qp) {
		rdma_disconnect(conn->cm_id);
		ib_drain_qp(conn->qp);
	}
	/* Transfer workers see the state and stop touching it. */
	flush_workqueue(kprog_ib_wq);
	cancel_delayed_work_sync(&conn->retry_work);

	spin_lock_bh(&conn->lock);
	list_splice_init(&conn->backlog, &backlog);
	spin_unlock_bh(&conn->lock);
	list_for_each_entry_safe(out, tmp, &backlog, node) {
		list_del(&out->node);
		if (!out->credit)
			kprog_ib_out_free(out);
	}
	kprog_ib_rndv_conn_dead(conn);
	if (conn->notify)
		kprog_ib_node_lost(conn);

	kprog_ib_conn_free_res(conn);
	if (conn->cm_id)
		rdma_destroy_id(conn->cm_id);
	conn->cm_id = NULL;

	spin_lock_bh(&kprog_ib_conns_lock);
	list_del_init(&conn->lnode);
	kprog_ib_nr_conns--;
	spin_unlock_bh(&kprog_ib_conns_lock);
	kprog_ib_conn_put(conn);	/* the list's */
	kprog_ib_conn_put(conn);	/* this worker's */
}

/**
 * kprog_ib_conn_dev_gone() - an RDMA device is being removed
 * @dev: the device
 *
 * Tears down every connection on it and waits until that is done (the
 * ib_client's remove must free everything it made on the device).
 * Process context.
 */
void kprog_ib_conn_dev_gone(struct ib_device *dev)
{
	struct kprog_ib_conn *conn;

	spin_lock_bh(&kprog_ib_conns_lock);
	list_for_each_entry(conn, &kprog_ib_conns, lnode) {
		spin_lock(&conn->lock);
		if (conn->dev == dev)
			kprog_ib_conn_fail_locked(conn, -ENODEV);
		spin_unlock(&conn->lock);
	}
	spin_unlock_bh(&kprog_ib_conns_lock);
	flush_workqueue(kprog_ib_cm_wq);
}

/**
 * kprog_ib_conn_show() - one line per connection, for the state file
 * @m: the seq_file
 */
void kprog_ib_conn_show(struct seq_file *m)
{
	struct kprog_ib_conn *conn;

	spin_lock_bh(&kprog_ib_conns_lock);
	list_for_each_entry(conn, &kprog_ib_conns, lnode) {
		spin_lock(&conn->lock);
		seq_printf(m, "conn %pI4 %s%s%s state %u credits %u inflight %u owed %u sends_free %u reads_free %u mrs_out %u\n",
			   conn->peer.addr, conn->active ? "active" : "passive",
			   conn->listed ? " listed" : "",
			   conn->loopback ? " loopback" : "", conn->state,
			   conn->cr.avail, conn->cr.inflight, conn->cr.owed,
			   conn->sends_free, conn->reads_free, conn->mrs_out);
		spin_unlock(&conn->lock);
	}
	spin_unlock_bh(&kprog_ib_conns_lock);
}

/**
 * kprog_ib_conn_init() - workqueues and the listener
 *
 * Return: 0 or a negative errno.
 */
int kprog_ib_conn_init(void)
{
	struct sockaddr_in any = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_ANY),
		.sin_port = htons(kprog_ib_port),
	};
	struct rdma_cm_id *id;
	int err = -ENOMEM;

	kprog_ib_wq = alloc_workqueue("kprog_ib", WQ_UNBOUND, 0);
	if (!kprog_ib_wq)
		return -ENOMEM;
	kprog_ib_cm_wq = alloc_workqueue("kprog_ib_cm", WQ_UNBOUND, 0);
	if (!kprog_ib_cm_wq)
		goto err_wq;
	id = rdma_create_id(&init_net, kprog_ib_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		err = PTR_ERR(id);
		goto err_cm_wq;
	}
	err = rdma_bind_addr(id, (struct sockaddr *)&any);
	if (!err)
		err = rdma_listen(id, 128);
	if (err) {
		pr_err("kprog_ib: cannot listen on port %u: %d\n",
		       kprog_ib_port, err);
		rdma_destroy_id(id);
		goto err_cm_wq;
	}
	kprog_ib_listen_id = id;
	return 0;

err_cm_wq:
	destroy_workqueue(kprog_ib_cm_wq);
err_wq:
	destroy_workqueue(kprog_ib_wq);
	return err;
}

/**
 * kprog_ib_conn_exit() - stop listening, tear down every connection
 *
 * No job uses the transport any more (each holds the module).
 */
void kprog_ib_conn_exit(void)
{
	struct kprog_ib_conn *conn;

	rdma_destroy_id(kprog_ib_listen_id);
	for (;;) {
		spin_lock_bh(&kprog_ib_conns_lock);
		list_for_each_entry(conn, &kprog_ib_conns, lnode)
			kprog_ib_conn_fail(conn, -ESHUTDOWN);
		spin_unlock_bh(&kprog_ib_conns_lock);
		flush_workqueue(kprog_ib_cm_wq);
		spin_lock_bh(&kprog_ib_conns_lock);
		if (list_empty(&kprog_ib_conns)) {
			spin_unlock_bh(&kprog_ib_conns_lock);
			break;
		}
		spin_unlock_bh(&kprog_ib_conns_lock);
		msleep(20);
	}
	destroy_workqueue(kprog_ib_cm_wq);
	destroy_workqueue(kprog_ib_wq);
}
