// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib connections: one reliable connection (an RC QP at each end)
 * per pair of nodes, shared by all jobs; receive buffers and credits; the
 * send path; completion handlers of sends and receives; teardown.
 *
 * Making one: out of band, with ib_core alone (no rdma_cm), as UCX does.
 * The shim, at MPI_Init, asks each node's module for its end toward each
 * other node (KPROG_NET_PREPARE: the port's GID, a QP in INIT with its
 * receive buffers posted, its first PSN, the peer QP it is connected to),
 * exchanges these over MPI and hands each module the peer's end
 * (KPROG_NET_CONNECT), which moves the QP to RTR and RTS: the address
 * vector names the peer's GID, its destination MAC is resolved from the
 * GID's IP address (rdma_resolve_ip(), as ib_core does for user-space
 * verbs). rdma_cm is not used: it takes every 127.0.0.0/8 address for
 * "this host" and cannot resolve a RoCE route to one (the test VMs have
 * only such addresses), and the exchange works the same on a cluster.
 *
 * One per pair, shared. Both ends apply one rule to the same two reports
 * (kprog_ib_pair_step(), ib_plan.c): an end connected to the QP the peer
 * reports, with the peer connected to it or fresh, is reused; a fresh end
 * facing a fresh peer (or one connected to it) connects; an end connected
 * to a QP the peer no longer has (the peer's module was reloaded, its QP
 * died) is dropped, and the shim exchanges again. Messages sent before
 * the connection is up queue in order; only connected ones are handed
 * out for new messages. A connection to this node's own address is the
 * loopback of KPROG_JOIN_NET_ONLY: two QPs on the port connected to each
 * other at first use, no exchange; the listed end carries the messages,
 * its twin the answers.
 *
 * Completion context. The CQs are polled in softirq (IB_POLL_SOFTIRQ):
 * the handlers only parse, match (kprog_arrive() allows softirq), post
 * and complete, which is the cheapest context with the lowest latency;
 * whatever sleeps goes to kprog_ib_xfer_wq (pinning, READ set-up),
 * kprog_ib_wq (unpinning, endpoint puts, departures) or kprog_ib_cm_wq
 * (teardown).
 *
 * Sending. A message (struct kprog_ib_out) is posted at once when the
 * connection is up, a send slot and a credit are free (ib_plan.c), else
 * appended to the backlog, which the completions of sends and the credits
 * of received messages drain in order. Each header carries the credits
 * owed; a CREDIT message alone goes when half the buffers are owed and
 * nothing else returns them. One SEND in send_signal asks for a
 * completion, which retires the unsignaled ones before it
 * (kprog_ib_conn_post()).
 *
 * Dying. A failed completion (not a flush; a vanished peer shows as
 * retry exceeded), a stale end found by an exchange, the device's removal
 * or unload mark the connection dead; a worker then moves the QP to error
 * and drains it, waits for the transfer workers, fails what was queued or
 * bound to it (ib_rndv.c), tells the core that the ranks of the peer's
 * node are lost (if it was the node's connection), and frees the QP, CQ,
 * MRs, buffers and PD. The next job's exchange connects again.
 *
 * Keepalive. A node that vanishes while this end has nothing posted (a
 * sender waiting for the FIN of a transfer the peer was reading, a
 * receive posted for a rank there) would never show as a failed
 * completion. So every keepalive_ms an established connection posts a
 * zero-length RDMA WRITE: the peer's HCA acknowledges it without touching
 * memory, buffers or credits (a zero-byte operation needs no rkey, IBA
 * C9-88), and an unanswered one fails with retry exceeded like any other
 * request. Not a zero-length READ: rxe answers a retransmitted READ by
 * looking up its rkey again (read_reply(), rxe_recheck_mr()), which fails
 * for a zero-byte one and would kill a healthy connection whose ACK was
 * merely late.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/socket.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/completion.h>
#include <linux/capability.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/mr_pool.h>
#include "kprog.h"
#include "ep.h"
#include "stats.h"
#include "ib.h"

/*
 * Local ACK timeout 4.096 us * 2^18 = 1.07 s, 6 retries: a vanished peer
 * fails the QP (retry exceeded) within about eight seconds, and a peer
 * that stalls for a second or two (a loaded host, an emulated VM
 * descheduled) does not: with 268 ms a test across two emulated VMs on a
 * busy host once lost its connection.
 */
#define KPROG_IB_ACK_TIMEOUT	18
#define KPROG_IB_RETRY_CNT	6
/* 7: retry for ever when the peer has no receive buffer (credits rule it out) */
#define KPROG_IB_RNR_RETRY	7
#define KPROG_IB_MIN_RNR_TIMER	12
#define KPROG_IB_RESOLVE_MS	2000
/*
 * An end made by KPROG_NET_PREPARE whose exchange never completed (the
 * job died during MPI_Init, or a made-up peer) is dropped after this: it
 * would hold a connection slot for ever.
 */
#define KPROG_IB_INIT_TIMEOUT	(60 * HZ)

DEFINE_SPINLOCK(kprog_ib_conns_lock);
static LIST_HEAD(kprog_ib_conns);
static u32 kprog_ib_nr_conns;
static struct workqueue_struct *kprog_ib_cm_wq;
struct workqueue_struct *kprog_ib_wq;
/*
 * The rendezvous transfer workers (ib_rndv.c: the sender's pin and
 * registration of a chunk, the receiver's pin and READ set-up), of
 * point-to-point messages and collective steps alike: high priority, as
 * the core's kprog_coll and kprog_shm_coll queues. A transfer runs while
 * its ranks compute; a normal-priority worker shares the CPU with a
 * computing rank (one vCPU per node here), so the READ starts only when
 * the scheduler gets round to it and the transfer ends after the
 * computation instead of during it. The workers only pin and post: the
 * data moves in the NIC (softirq on soft-RoCE), so they take little CPU.
 */
struct workqueue_struct *kprog_ib_xfer_wq;
/* kprog_ib_conn_init()'s: the files above, reached only through these */
static const struct kprog_ib_conn_upcalls *kprog_ib_up;

/**
 * kprog_ib_addr_from_node() - a connection address from a node map entry
 * @a: filled
 * @na: the node's address
 */
void kprog_ib_addr_from_node(struct kprog_ib_addr *a,
			     const struct kprog_node_addr *na)
{
	memset(a, 0, sizeof(*a));
	a->family = na->family;
	memcpy(a->addr, na->addr, na->family == AF_INET ? 4 : 16);
}

static void kprog_ib_send_done(struct ib_cq *cq, struct ib_wc *wc);
static void kprog_ib_recv_done(struct ib_cq *cq, struct ib_wc *wc);
static void kprog_ib_rx_work(struct work_struct *work);
static void kprog_ib_ka_work(struct work_struct *work);
static void kprog_ib_ka_done(struct ib_cq *cq, struct ib_wc *wc);

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
	out->reg_wait = false;
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
static void kprog_ib_conn_init_work(struct work_struct *work);

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
	mutex_init(&conn->qp_mutex);
	conn->state = KPROG_IB_CS_INIT;
	conn->peer = *peer;
	INIT_LIST_HEAD(&conn->lnode);
	INIT_LIST_HEAD(&conn->mrs);
	INIT_LIST_HEAD(&conn->backlog);
	INIT_LIST_HEAD(&conn->read_wait);
	INIT_LIST_HEAD(&conn->mr_wait);
	INIT_LIST_HEAD(&conn->fence_wait);
	INIT_LIST_HEAD(&conn->sent);
	INIT_LIST_HEAD(&conn->txs);
	INIT_LIST_HEAD(&conn->rdvs);
	INIT_WORK(&conn->dead_work, kprog_ib_conn_dead_work);
	INIT_DELAYED_WORK(&conn->init_work, kprog_ib_conn_init_work);
	INIT_DELAYED_WORK(&conn->ka_work, kprog_ib_ka_work);
	conn->ka_cqe.done = kprog_ib_ka_done;
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

/**
 * kprog_ib_conn_poll() - run the connection's completions now, on this CPU
 * @conn: the connection
 *
 * KPROG_WAIT_POLL. The CQ is polled in softirq (IB_POLL_SOFTIRQ), once
 * its completion event has been handled: on rxe that is a tasklet of the
 * CPU that received the packet, which runs only after the rest of that
 * softirq work (the responder's ACK, later packets), about 120 us after
 * the completion is in the queue under emulation (docs/rdma.md,
 * thirteenth session), while a rank spinning on another CPU for that
 * message could have had it at once, as a user-space verbs library that
 * polls its CQ has it. So the waiter raises the CQ's completion event
 * itself, with bottom halves off: ib_core's handler schedules the CQ's
 * irq_poll on this CPU and local_bh_enable() runs it here. irq_poll
 * admits one poller of a CQ at a time, so completions are still handled
 * one after the other, in order, whoever raises the event; a CQ without
 * completions costs one empty poll and a re-arm. Only while the
 * connection is up (its CQ is then in use; after teardown it is back in
 * the device's pool, which outlives the connection).
 *
 * Process context.
 */
void kprog_ib_conn_poll(struct kprog_ib_conn *conn)
{
	struct ib_cq *cq;

	spin_lock_bh(&conn->lock);
	cq = conn->cq;
	if (READ_ONCE(conn->state) == KPROG_IB_CS_CONNECTED && cq &&
	    cq->poll_ctx == IB_POLL_SOFTIRQ && cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
	spin_unlock_bh(&conn->lock);	/* runs the poll, without the lock */
}

/*
 * Under conn->lock: post one message. Most SENDs are unsignaled: one in
 * send_signal asks for a completion, and so does the one that takes the
 * last send slot (the slots of unsignaled SENDs come back only with a
 * later completion) and the CREDIT message (reused once it completed).
 * Completions of an RC send queue come in order, so a signaled one
 * retires every message posted before it (kprog_ib_conn_retire()); a
 * registration waiting for the wire gets a signaled probe behind
 * unsignaled SENDs (kprog_ib_conn_fence_flush()).
 */
static int kprog_ib_conn_post(struct kprog_ib_conn *conn,
			      struct kprog_ib_out *out)
{
	struct ib_sge sge;
	struct ib_send_wr wr = {};
	u32 unsignaled = conn->unsignaled;
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
	if (out->credit || conn->sends_free == 1 ||
	    ++conn->unsignaled >= READ_ONCE(kprog_ib_send_signal)) {
		wr.send_flags = IB_SEND_SIGNALED;
		conn->unsignaled = 0;
	}
	if (out->inv) {
		wr.opcode = IB_WR_SEND_WITH_INV;
		wr.ex.invalidate_rkey = out->inv_rkey;
	} else {
		wr.opcode = IB_WR_SEND;
	}
	conn->sends_free--;
	out->seq = conn->post_seq + 1;
	err = ib_post_send(conn->qp, &wr, NULL);
	if (err) {
		conn->sends_free++;
		conn->unsignaled = unsignaled;
		ib_dma_unmap_single(conn->dev, out->dma, out->len,
				    DMA_TO_DEVICE);
		return err;
	}
	conn->post_seq++;
	list_add_tail(&out->node, &conn->sent);
	conn->wire_out++;
	return 0;
}

/*
 * Under conn->lock: a completion says that every message posted up to
 * @seq is done (sent, or flushed): give their slots back and move them to
 * @done, to be freed without the lock (the CREDIT message stays).
 */
static void kprog_ib_conn_retire(struct kprog_ib_conn *conn, u64 seq,
				 struct list_head *done)
{
	struct kprog_ib_out *out, *tmp;

	list_for_each_entry_safe(out, tmp, &conn->sent, node) {
		if (out->seq > seq)
			break;
		list_del_init(&out->node);
		ib_dma_unmap_single(conn->dev, out->dma, out->len,
				    DMA_TO_DEVICE);
		conn->sends_free++;
		if (out->credit)
			conn->credit_busy = false;
		else
			list_add_tail(&out->node, done);
		kprog_ib_conn_wire_done(conn);
	}
}

static void kprog_ib_outs_free(struct list_head *list)
{
	struct kprog_ib_out *out, *tmp;

	list_for_each_entry_safe(out, tmp, list, node)
		kprog_ib_out_free(out);
}

/**
 * kprog_ib_conn_wire_done() - a SEND, READ or WRITE completed
 * @conn: the connection, its lock held
 *
 * Once none is on the wire, the registrations that wait for that go
 * ("Registration" in ib_rndv.c).
 */
void kprog_ib_conn_wire_done(struct kprog_ib_conn *conn)
{
	if (WARN_ON_ONCE(!conn->wire_out))
		return;
	if (!--conn->wire_out && kprog_ib_conn_fenced(conn))
		kprog_ib_up->wire_idle(conn);
}

/* Under conn->lock, connected: post what the budgets allow, in order. */
static void kprog_ib_conn_flush(struct kprog_ib_conn *conn)
{
	struct kprog_ib_out *out;
	int err;

	/* A registration waits for the wire to be idle: nothing new on it. */
	if (kprog_ib_conn_fenced(conn))
		return;
	while ((out = list_first_entry_or_null(&conn->backlog,
					       struct kprog_ib_out, node))) {
		/* Its rkey is valid only once the REG_MR completed. */
		if (out->reg_wait || !conn->sends_free ||
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
 * kprog_ib_conn_kick_locked() - kprog_ib_conn_kick() with the lock held
 * @conn: the connection, its lock held
 */
void kprog_ib_conn_kick_locked(struct kprog_ib_conn *conn)
{
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
	kprog_ib_conn_kick_locked(conn);
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
	LIST_HEAD(done);

	spin_lock_bh(&conn->lock);
	kprog_ib_conn_retire(conn, out->seq, &done);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_debug("kprog_ib: send failed: %s\n",
				 ib_wc_status_msg(wc->status));
		kprog_ib_conn_fail_locked(conn, -ECONNRESET);
	} else if (conn->state == KPROG_IB_CS_CONNECTED) {
		kprog_ib_conn_flush(conn);
	}
	spin_unlock_bh(&conn->lock);
	kprog_ib_outs_free(&done);
	kprog_ib_conn_count(wc, start);
}

/* Under conn->lock: probe again in keepalive_ms (the timer holds a ref). */
static void kprog_ib_ka_arm(struct kprog_ib_conn *conn)
{
	if (!kprog_ib_keepalive_ms || conn->loopback ||
	    conn->state != KPROG_IB_CS_CONNECTED)
		return;
	kref_get(&conn->ref);
	if (!queue_delayed_work(kprog_ib_wq, &conn->ka_work,
				msecs_to_jiffies(kprog_ib_keepalive_ms)))
		kprog_ib_conn_put(conn);	/* not the last: the caller has one */
}

/* Under conn->lock, connected: post the zero-length WRITE. */
static int kprog_ib_ka_post(struct kprog_ib_conn *conn)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = &conn->ka_cqe,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	int err;

	conn->sends_free--;
	err = ib_post_send(conn->qp, &wr.wr, NULL);
	if (err) {
		conn->sends_free++;
		return err;
	}
	conn->wire_out++;
	conn->ka_busy = true;
	conn->ka_probes++;
	/* Completions come in order: its own retires the SENDs before it. */
	conn->ka_seq = conn->post_seq;
	conn->unsignaled = 0;
	return 0;
}

/**
 * kprog_ib_conn_fence_flush() - let a registration's wait for the wire end
 * @conn: the connection, its lock held
 *
 * A REG_MR on rxe waits until nothing is on the wire (@wire_out 0), and
 * meanwhile nothing new is posted. Unsignaled SENDs count until a later
 * completion retires them, so when the last request posted was one, the
 * keepalive's zero-length WRITE, signaled, goes behind them (or again
 * when the probe already out completes).
 */
void kprog_ib_conn_fence_flush(struct kprog_ib_conn *conn)
{
	int err;

	if (!conn->unsignaled || conn->ka_busy || !conn->sends_free ||
	    conn->state != KPROG_IB_CS_CONNECTED)
		return;
	err = kprog_ib_ka_post(conn);
	if (err)
		kprog_ib_conn_fail_locked(conn, err);
}

static void kprog_ib_ka_work(struct work_struct *work)
{
	struct kprog_ib_conn *conn = container_of(to_delayed_work(work),
						  struct kprog_ib_conn,
						  ka_work);
	int err;

	spin_lock_bh(&conn->lock);
	/*
	 * A probe still out, no send slot, or a registration waiting for
	 * the wire to be idle: the QP's retries decide.
	 */
	if (conn->state == KPROG_IB_CS_CONNECTED && !conn->ka_busy &&
	    conn->sends_free && !kprog_ib_conn_fenced(conn)) {
		err = kprog_ib_ka_post(conn);
		if (err)
			kprog_ib_conn_fail_locked(conn, err);
	}
	kprog_ib_ka_arm(conn);
	spin_unlock_bh(&conn->lock);
	kprog_ib_conn_put(conn);	/* the timer's */
}

static void kprog_ib_ka_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kprog_ib_conn *conn = container_of(wc->wr_cqe,
						  struct kprog_ib_conn, ka_cqe);
	u64 start = kprog_stat_clock();
	LIST_HEAD(done);

	spin_lock_bh(&conn->lock);
	kprog_ib_conn_retire(conn, conn->ka_seq, &done);
	conn->sends_free++;
	conn->ka_busy = false;
	kprog_ib_conn_wire_done(conn);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_debug("kprog_ib: keepalive to %pI4 failed: %s\n",
				 conn->peer.addr, ib_wc_status_msg(wc->status));
		kprog_ib_conn_fail_locked(conn, -ETIMEDOUT);
	} else if (conn->state == KPROG_IB_CS_CONNECTED) {
		if (kprog_ib_conn_fenced(conn))
			kprog_ib_conn_fence_flush(conn);
		kprog_ib_conn_flush(conn);	/* a send slot came back */
	}
	spin_unlock_bh(&conn->lock);
	kprog_ib_outs_free(&done);
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
	ep = kprog_ib_up->recv(conn, rx->buf, wc->byte_len,
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

	if (conn->reg_qp) {
		ib_destroy_qp(conn->reg_qp);
		conn->reg_qp = NULL;
	}
	if (conn->qp) {
		/* every MR is back in the pool: the transfers are gone */
		ib_mr_pool_destroy(conn->qp, &conn->mrs);
		ib_destroy_qp(conn->qp);
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

static int kprog_ib_resolve_dmac(struct kprog_ib_conn *conn,
				 const union ib_gid *dgid, u8 *dmac, u8 *hop);

/* What a connection's QPs share: its CQ for both queues, RC, @port. */
static void kprog_ib_qp_attr_init(struct kprog_ib_conn *conn,
				  struct ib_qp_init_attr *qa, u32 port)
{
	qa->qp_context = conn;
	qa->send_cq = conn->cq;
	qa->recv_cq = conn->cq;
	qa->cap.max_recv_sge = 1;
	qa->sq_sig_type = IB_SIGNAL_REQ_WR;
	qa->qp_type = IB_QPT_RC;
	qa->port_num = port;
}

/* RESET to INIT on @port, admitting the remote @access. May sleep. */
static int kprog_ib_qp_to_init(struct ib_qp *qp, u32 port, int access)
{
	struct ib_qp_attr attr = {};

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = port;
	attr.qp_access_flags = access;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * The address vector of an RTR toward @dgid (RoCE: resolves the next
 * hop's MAC, may sleep) or @dlid (InfiniBand, one subnet: the LID routes).
 */
static int kprog_ib_qp_av(struct kprog_ib_conn *conn, struct rdma_ah_attr *ah,
			  union ib_gid *dgid, u16 dlid)
{
	u8 hop = 1;
	int err;

	ah->type = rdma_ah_find_type(conn->dev, conn->port_num);
	rdma_ah_set_port_num(ah, conn->port_num);
	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE) {
		rdma_ah_set_dlid(ah, dlid);
		return 0;
	}
	err = kprog_ib_resolve_dmac(conn, dgid, ah->roce.dmac, &hop);
	if (err)
		return err;
	rdma_ah_set_grh(ah, dgid, 0, conn->gid_index, hop, 0);
	return 0;
}

/*
 * INIT to RTR toward @dgid / @dlid with @rtr's path, then RTS with @rts's
 * timers and PSN: what the data QP and the registration QP share. May
 * sleep. -EHOSTUNREACH: no route to the peer's address.
 */
static int kprog_ib_qp_rtr_rts(struct kprog_ib_conn *conn, struct ib_qp *qp,
			       struct ib_qp_attr *rtr, struct ib_qp_attr *rts,
			       union ib_gid *dgid, u16 dlid)
{
	int err;

	rtr->qp_state = IB_QPS_RTR;
	rtr->min_rnr_timer = KPROG_IB_MIN_RNR_TIMER;
	err = kprog_ib_qp_av(conn, &rtr->ah_attr, dgid, dlid);
	if (err)
		return err == -ENODATA || err == -ETIMEDOUT ? -EHOSTUNREACH :
		       err;
	err = ib_modify_qp(qp, rtr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	rts->qp_state = IB_QPS_RTS;
	return ib_modify_qp(qp, rts, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/*
 * The registration QP of a connection on rxe (ib_rndv.c, "Registration"):
 * an RC QP on the connection's PD (a REG_MR needs the MR's PD; an rkey is
 * the PD's, so the peer's READs on the data QP find it), connected to
 * itself so that it reaches RTS, with no retransmission timeout. It only
 * ever carries REG_MRs: no packet, so rxe never retries it and runs each
 * REG_MR once. On failure the connection keeps the fenced path. May
 * sleep.
 */
static void kprog_ib_reg_qp_make(struct kprog_ib_conn *conn,
				 const struct kprog_ib_port *p)
{
	struct ib_qp_init_attr qa = {};
	struct ib_qp_attr rtr = {}, rts = {};
	struct ib_qp *qp;
	int err;

	kprog_ib_qp_attr_init(conn, &qa, p->port);
	qa.cap.max_send_wr = kprog_ib_conn_mrs + 1;
	qa.cap.max_recv_wr = 1;		/* ib_drain_qp()'s marker */
	qa.cap.max_send_sge = 1;
	qp = ib_create_qp(conn->pd, &qa);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		goto err;
	}
	err = kprog_ib_qp_to_init(qp, p->port, 0);
	if (err)
		goto err_destroy;
	/* to itself; PSNs, RD atomics, retries 0: no retransmission timer */
	rtr.path_mtu = conn->mtu;
	rtr.dest_qp_num = qp->qp_num;
	err = kprog_ib_qp_rtr_rts(conn, qp, &rtr, &rts, &conn->gid, conn->lid);
	if (err)
		goto err_destroy;
	conn->reg_qp = qp;
	return;

err_destroy:
	ib_destroy_qp(qp);
err:
	pr_info("kprog_ib: no registration QP on %s (%d): REG_MR fenced on the data QP\n",
		dev_name(&conn->dev->dev), err);
}

/*
 * The verbs objects of a connection on @p: PD, CQ, QP (moved to INIT),
 * MR pool, receive buffers. Unwinds itself on failure.
 */
static int kprog_ib_conn_setup(struct kprog_ib_conn *conn,
			       const struct kprog_ib_port *p)
{
	struct ib_device *dev = p->dev;
	const struct ib_device_attr *a = &dev->attrs;
	struct ib_qp_init_attr qa = {};
	u32 sge_rd, read_wrs, sq;
	struct ib_qp *qp;
	int err;

	if (!(a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !a->max_fast_reg_page_list_len)
		return -EOPNOTSUPP;
	conn->dev = dev;
	conn->port_num = p->port;
	conn->gid_index = p->gid_index;
	conn->gid = p->gid;
	conn->lid = p->lid;
	conn->mtu = p->mtu;
	conn->rd_atom = min3(a->max_qp_rd_atom, a->max_qp_init_rd_atom, 16);
	conn->reg_alone = dev->ops.driver_id == RDMA_DRIVER_RXE;
	conn->psn = get_random_u32() & 0xffffff;
	conn->max_pages = min_t(u32, kprog_ib_reg_pages,
				a->max_fast_reg_page_list_len);
	sge_rd = max(1, min(a->max_sge_rd, a->max_send_sge));
	read_wrs = DIV_ROUND_UP(conn->max_pages, sge_rd);
	/* SENDs (one more for CREDIT), a REG_MR or LOCAL_INV per MR, READs */
	sq = kprog_ib_recv_bufs + 1 + kprog_ib_conn_mrs +
	     kprog_ib_max_reads * read_wrs + 1;
	if (sq + 3 * kprog_ib_max_reads > a->max_qp_wr ||
	    kprog_ib_recv_bufs + 1 > a->max_qp_wr || !conn->rd_atom)
		return -EINVAL;

	conn->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(conn->pd)) {
		err = PTR_ERR(conn->pd);
		conn->pd = NULL;
		return err;
	}
	/* and the registration QP's REG_MRs and drain markers */
	conn->cq_size = sq + 3 * kprog_ib_max_reads + kprog_ib_recv_bufs + 2 +
			kprog_ib_conn_mrs + 3;
	conn->cq = ib_cq_pool_get(dev, conn->cq_size, -1, IB_POLL_SOFTIRQ);
	if (IS_ERR(conn->cq)) {
		err = PTR_ERR(conn->cq);
		conn->cq = NULL;
		goto err_free;
	}
	kprog_ib_qp_attr_init(conn, &qa, p->port);
	qa.cap.max_send_wr = sq;
	qa.cap.max_recv_wr = kprog_ib_recv_bufs + 1;
	qa.cap.max_send_sge = sge_rd;
	qa.cap.max_rdma_ctxs = kprog_ib_max_reads;
	qp = ib_create_qp(conn->pd, &qa);
	if (IS_ERR(qp)) {
		err = PTR_ERR(qp);
		goto err_free;
	}
	conn->qp = qp;
	conn->qpn = qp->qp_num;
	/*
	 * The peer READs this end's registrations. REMOTE_WRITE only admits
	 * the zero-length keepalive WRITE: every MR is registered for remote
	 * reads alone and the PD has no global rkey, so no byte of memory
	 * is writable from the wire.
	 */
	err = kprog_ib_qp_to_init(qp, p->port, IB_ACCESS_REMOTE_READ |
				  IB_ACCESS_REMOTE_WRITE);
	if (err)
		goto err_free;
	err = ib_mr_pool_init(conn->qp, &conn->mrs, kprog_ib_conn_mrs,
			      IB_MR_TYPE_MEM_REG, conn->max_pages, 0);
	if (err)
		goto err_free;
	/* Before the first receive is posted: the peer may send at once. */
	spin_lock_bh(&conn->lock);
	kprog_ib_credits_init(&conn->cr, 0, kprog_ib_recv_bufs);
	conn->sends_free = kprog_ib_recv_bufs + 1;
	conn->reads_free = kprog_ib_max_reads;
	spin_unlock_bh(&conn->lock);
	err = kprog_ib_conn_rx_init(conn);
	if (err)
		goto err_free;
	if (conn->reg_alone && READ_ONCE(kprog_ib_reg_qp))
		kprog_ib_reg_qp_make(conn, p);
	return 0;

err_free:
	kprog_ib_conn_free_res(conn);
	return err;
}

/* This end as the peer needs it (KPROG_NET_PREPARE). */
static void kprog_ib_conn_describe(struct kprog_ib_conn *conn,
				   struct kprog_net_qp *q)
{
	memset(q, 0, sizeof(*q));
	memcpy(q->gid, conn->gid.raw, sizeof(q->gid));
	q->qpn = conn->qpn;
	q->psn = conn->psn;
	spin_lock_bh(&conn->lock);
	q->remote_qpn = conn->state == KPROG_IB_CS_DEAD ? 0 : conn->remote_qpn;
	spin_unlock_bh(&conn->lock);
	q->recv_bufs = kprog_ib_recv_bufs;
	q->max_msg = KPROG_IB_EAGER_HDR + kprog_ib_eager_size;
	q->lid = conn->lid;
	q->mtu = conn->mtu;
	q->rd_atom = conn->rd_atom;
	q->version = KPROG_NET_VERSION;
}

/*
 * A peer's end from user space (through the shim, from the other node):
 * never trusted. Same version, a QPN and PSN of 24 bits, receive buffers
 * within the module's limits, messages of this node's largest size fit,
 * a real MTU and READ depth, a GID.
 */
static bool kprog_ib_net_qp_ok(const struct kprog_net_qp *q)
{
	return q->version == KPROG_NET_VERSION &&
	       q->qpn && q->qpn <= 0xffffff && q->psn <= 0xffffff &&
	       q->remote_qpn <= 0xffffff &&
	       q->recv_bufs >= 2 && q->recv_bufs <= 65535 &&
	       q->max_msg >= KPROG_IB_EAGER_HDR + kprog_ib_eager_size &&
	       q->mtu >= IB_MTU_256 && q->mtu <= IB_MTU_4096 &&
	       q->rd_atom >= 1 && q->rd_atom <= 16 &&
	       memchr_inv(q->gid, 0, sizeof(q->gid));
}

/**
 * struct kprog_ib_resolve - one rdma_resolve_ip() waited for
 * @done: completed by its callback
 * @status: its result
 */
struct kprog_ib_resolve {
	struct completion done;
	int status;
};

static void kprog_ib_resolved(int status, struct sockaddr *src,
			      struct rdma_dev_addr *addr, void *context)
{
	struct kprog_ib_resolve *r = context;

	r->status = status;
	complete(&r->done);
}

/*
 * RoCE: the destination MAC and hop limit of the peer's GID, from the
 * route and neighbour of its IP address through the netdev of this end's
 * GID (what ib_core does for a user-space modify_qp). May sleep.
 */
static int kprog_ib_resolve_dmac(struct kprog_ib_conn *conn,
				 const union ib_gid *dgid, u8 *dmac, u8 *hop)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in sin;
		struct sockaddr_in6 sin6;
	} src, dst;
	const struct ib_gid_attr *sgid_attr;
	struct rdma_dev_addr dev_addr = {};
	struct kprog_ib_resolve r;
	int err;

	sgid_attr = rdma_get_gid_attr(conn->dev, conn->port_num,
				      conn->gid_index);
	if (IS_ERR(sgid_attr))
		return PTR_ERR(sgid_attr);
	rdma_gid2ip(&src.sa, &sgid_attr->gid);
	rdma_gid2ip(&dst.sa, dgid);
	dev_addr.net = &init_net;
	dev_addr.sgid_attr = sgid_attr;
	init_completion(&r.done);
	err = rdma_resolve_ip(&src.sa, &dst.sa, &dev_addr, KPROG_IB_RESOLVE_MS,
			      kprog_ib_resolved, true, &r);
	if (!err) {
		wait_for_completion(&r.done);
		err = r.status;
	}
	if (!err) {
		memcpy(dmac, dev_addr.dst_dev_addr, ETH_ALEN);
		*hop = dev_addr.hoplimit;
	}
	rdma_put_gid_attr(sgid_attr);
	return err;
}

/*
 * Under conn->qp_mutex, the QP in INIT: connect it to the peer's end @r
 * (RTR, then RTS) and let messages flow.
 */
static int kprog_ib_conn_rtr_rts(struct kprog_ib_conn *conn,
				 const struct kprog_net_qp *r)
{
	struct ib_qp_attr rtr = {}, rts = {};
	u8 rd = min(conn->rd_atom, r->rd_atom);
	union ib_gid dgid;
	int err;

	memcpy(dgid.raw, r->gid, sizeof(dgid.raw));
	rtr.path_mtu = min_t(u8, conn->mtu, r->mtu);
	rtr.dest_qp_num = r->qpn;
	rtr.rq_psn = r->psn;
	rtr.max_dest_rd_atomic = rd;
	rts.timeout = KPROG_IB_ACK_TIMEOUT;
	rts.retry_cnt = KPROG_IB_RETRY_CNT;
	rts.rnr_retry = KPROG_IB_RNR_RETRY;
	rts.sq_psn = conn->psn;
	rts.max_rd_atomic = rd;
	err = kprog_ib_qp_rtr_rts(conn, conn->qp, &rtr, &rts, &dgid, r->lid);
	if (err)
		return err;
	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_INIT) {
		conn->remote_qpn = r->qpn;
		conn->peer_max = r->max_msg;
		conn->cr.avail += r->recv_bufs;
		conn->state = KPROG_IB_CS_CONNECTED;
		kprog_ib_conn_flush(conn);
		kprog_ib_ka_arm(conn);
	}
	spin_unlock_bh(&conn->lock);
	return 0;
}

static bool kprog_ib_addr_same(const struct kprog_ib_addr *a,
			       const struct kprog_ib_addr *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 4);
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

/* A connection never listed: free what it made. */
static void kprog_ib_conn_discard(struct kprog_ib_conn *conn)
{
	if (!conn)
		return;
	kprog_ib_conn_free_res(conn);
	kprog_ib_conn_put(conn);
}

/*
 * List @conns (@n of them, made and set up, one node's ends) unless the
 * node got a listed connection meanwhile or max_conns would be passed;
 * @conns[0] is listed. Returns the node's connection, referenced: @conns[0]
 * or the one found (the caller discards its own), or an ERR_PTR.
 */
static struct kprog_ib_conn *kprog_ib_conn_add(struct kprog_ib_conn **conns,
					       int n)
{
	struct kprog_ib_conn *conn;
	int i;

	spin_lock_bh(&kprog_ib_conns_lock);
	conn = kprog_ib_conn_find(&conns[0]->peer);
	if (conn || kprog_ib_nr_conns + n > kprog_ib_max_conns) {
		if (conn)
			kref_get(&conn->ref);
		spin_unlock_bh(&kprog_ib_conns_lock);
		return conn ?: ERR_PTR(-ENOBUFS);
	}
	for (i = 0; i < n; i++) {
		conns[i]->notify = !i;
		list_add_tail(&conns[i]->lnode, &kprog_ib_conns);
		kprog_ib_nr_conns++;
	}
	conns[0]->listed = true;
	kref_get(&conns[0]->ref);	/* the caller's */
	spin_unlock_bh(&kprog_ib_conns_lock);
	/* A device removed meanwhile missed these: fail them here. */
	if (!kprog_ib_dev_present(conns[0]->dev))
		for (i = 0; i < n; i++)
			kprog_ib_conn_fail(conns[i], -ENODEV);
	return conns[0];
}

/*
 * The loopback of KPROG_JOIN_NET_ONLY: two QPs on this node's port
 * connected to each other. Process context.
 */
static struct kprog_ib_conn *kprog_ib_loop_make(const struct kprog_ib_addr *a)
{
	struct kprog_ib_conn *c[2] = {}, *conn;
	struct kprog_net_qp q[2];
	struct kprog_ib_port p;
	int err, i;

	err = kprog_ib_port_get(&p);
	if (err)
		return ERR_PTR(err);
	for (i = 0; i < 2; i++) {
		err = -ENOMEM;
		c[i] = kprog_ib_conn_alloc(a);
		if (!c[i])
			goto err;
		c[i]->loopback = true;
		err = kprog_ib_conn_setup(c[i], &p);
		if (err)
			goto err;
		kprog_ib_conn_describe(c[i], &q[i]);
	}
	for (i = 0; i < 2; i++) {
		err = kprog_ib_conn_rtr_rts(c[i], &q[!i]);
		if (err)
			goto err;
	}
	/* Each keeps its twin until its teardown, which takes the twin down. */
	kref_get(&c[1]->ref);
	c[0]->twin = c[1];
	kref_get(&c[0]->ref);
	c[1]->twin = c[0];
	conn = kprog_ib_conn_add(c, 2);
	if (conn != c[0]) {
		for (i = 0; i < 2; i++) {
			kprog_ib_conn_put(c[i]->twin);
			c[i]->twin = NULL;
			kprog_ib_conn_discard(c[i]);
		}
	}
	kprog_ib_port_put(&p);
	return conn;

err:
	for (i = 0; i < 2; i++)
		kprog_ib_conn_discard(c[i]);
	kprog_ib_port_put(&p);
	return ERR_PTR(err);
}

/* A node's end in INIT, listed (or the one that appeared meanwhile). */
static struct kprog_ib_conn *kprog_ib_conn_make(const struct kprog_ib_addr *a)
{
	struct kprog_ib_conn *conn, *new;
	struct kprog_ib_port p;
	int err;

	err = kprog_ib_port_get(&p);
	if (err)
		return ERR_PTR(err);
	new = kprog_ib_conn_alloc(a);
	err = -ENOMEM;
	if (new)
		err = kprog_ib_conn_setup(new, &p);
	if (err) {
		kprog_ib_port_put(&p);
		kprog_ib_conn_discard(new);
		return ERR_PTR(err);
	}
	conn = kprog_ib_conn_add(&new, 1);
	if (conn != new) {
		kprog_ib_conn_discard(new);
	} else {
		kref_get(&new->ref);	/* the timer's */
		queue_delayed_work(kprog_ib_cm_wq, &new->init_work,
				   KPROG_IB_INIT_TIMEOUT);
	}
	kprog_ib_port_put(&p);
	return conn;
}

static void kprog_ib_conn_init_work(struct work_struct *work)
{
	struct kprog_ib_conn *conn = container_of(to_delayed_work(work),
						  struct kprog_ib_conn,
						  init_work);

	spin_lock_bh(&conn->lock);
	if (conn->state == KPROG_IB_CS_INIT) {
		/* No job used it: nobody to tell. */
		conn->notify = false;
		kprog_ib_conn_fail_locked(conn, -ETIMEDOUT);
	}
	spin_unlock_bh(&conn->lock);
	kprog_ib_conn_put(conn);
}

/* The node's listed connection, referenced, or NULL. */
static struct kprog_ib_conn *kprog_ib_conn_lookup(const struct kprog_ib_addr *a)
{
	struct kprog_ib_conn *conn;

	spin_lock_bh(&kprog_ib_conns_lock);
	conn = kprog_ib_conn_find(a);
	if (conn)
		kref_get(&conn->ref);
	spin_unlock_bh(&kprog_ib_conns_lock);
	return conn;
}

/**
 * kprog_ib_conn_get() - the connection to a node, referenced
 * @na: the node's address from a job's node map
 * @create: for this node's own address, connect the loopback if there is
 *	none (other nodes are connected by KPROG_IOC_NET_CONN only)
 *
 * Process context (connecting may sleep).
 *
 * Return: the connection, NULL when there is none and @create is false,
 * or an ERR_PTR: -EAFNOSUPPORT (not IPv4), -ENOTCONN (another node not
 * connected, or not yet), -ENOBUFS (max_conns), -ENOMEM, -ENODEV, or the
 * error of connecting the loopback.
 */
struct kprog_ib_conn *kprog_ib_conn_get(const struct kprog_node_addr *na,
					bool create)
{
	struct kprog_ib_conn *conn;
	struct kprog_ib_addr a;

	if (na->family != AF_INET)
		return ERR_PTR(-EAFNOSUPPORT);
	kprog_ib_addr_from_node(&a, na);
	conn = kprog_ib_conn_lookup(&a);
	/*
	 * An end still in INIT belongs to an exchange under way: a job that
	 * runs already lost that node with its previous connection.
	 */
	if (conn && !conn->loopback &&
	    READ_ONCE(conn->state) != KPROG_IB_CS_CONNECTED) {
		kprog_ib_conn_put(conn);
		return create ? ERR_PTR(-ENOTCONN) : NULL;
	}
	if (conn || !create)
		return conn;
	if (!kprog_ib_addr_is_local(&a))
		return ERR_PTR(-ENOTCONN);
	return kprog_ib_loop_make(&a);
}

/*
 * May the caller change a node pair (make an end, connect it, drop it)?
 * One connection per pair of nodes carries every job of both nodes, and
 * the ends it is made from come from user space: with conn_admin (the
 * default) only CAP_NET_ADMIN may change it, so that a user cannot reset
 * the connection other users' jobs use, nor connect a fresh end to a QP
 * of its own. Anyone may read this node's end and have an existing
 * connection confirmed (READY), which is all a job needs once the nodes
 * are connected (docs/rdma.md: connecting nodes).
 */
static bool kprog_ib_may_change(void)
{
	return !kprog_ib_conn_admin || capable(CAP_NET_ADMIN);
}

/*
 * KPROG_NET_CONNECT: apply the pair rule to this end and the peer's
 * report @r; @mine is what PREPARE reported here.
 */
static int kprog_ib_net_connect(const struct kprog_ib_addr *a,
				const struct kprog_net_qp *mine,
				const struct kprog_net_qp *r, u32 *status)
{
	struct kprog_ib_conn *conn;
	enum kprog_ib_pair_step step;
	u32 qpn = 0, remote = 0;
	int err = 0;

	*status = KPROG_NET_AGAIN;
	if (!kprog_ib_net_qp_ok(r))
		return -EINVAL;
	conn = kprog_ib_conn_lookup(a);
	if (!conn)
		return 0;
	/*
	 * RoCE routes by the GID's address: it must be the node's name, or
	 * messages from elsewhere would pass for that node's.
	 */
	if (rdma_protocol_roce(conn->dev, conn->port_num) &&
	    (!ipv6_addr_v4mapped((const struct in6_addr *)r->gid) ||
	     memcmp(&r->gid[12], a->addr, 4))) {
		kprog_ib_conn_put(conn);
		return -EINVAL;
	}
	mutex_lock(&conn->qp_mutex);
	spin_lock_bh(&conn->lock);
	if (conn->state != KPROG_IB_CS_DEAD) {
		qpn = conn->qpn;
		remote = conn->remote_qpn;
	}
	spin_unlock_bh(&conn->lock);
	step = kprog_ib_pair_step(qpn, mine->qpn, remote, r->qpn,
				  r->remote_qpn);
	if ((step == KPROG_IB_PAIR_CONNECT || step == KPROG_IB_PAIR_RESET) &&
	    !kprog_ib_may_change()) {
		err = -EPERM;
		step = KPROG_IB_PAIR_WAIT;
	}
	switch (step) {
	case KPROG_IB_PAIR_READY:
		*status = KPROG_NET_CONNECTED;
		break;
	case KPROG_IB_PAIR_CONNECT:
		err = kprog_ib_conn_rtr_rts(conn, r);
		if (err)
			kprog_ib_conn_fail(conn, err);
		else
			*status = KPROG_NET_CONNECTED;
		break;
	case KPROG_IB_PAIR_RESET:
		pr_debug("kprog_ib: %pI4: QP %u is connected to %u, the peer reports %u: dropped\n",
			 a->addr, qpn, remote, r->qpn);
		kprog_ib_conn_fail(conn, -ECONNRESET);
		break;
	default:
		break;
	}
	mutex_unlock(&conn->qp_mutex);
	kprog_ib_conn_put(conn);
	return err;
}

/**
 * kprog_ib_net_conn() - KPROG_IOC_NET_CONN (the transport's net_conn)
 * @c: the request, copied from user space; filled for the answer
 *
 * Process context.
 *
 * Return: 0 or a negative errno (see include/uapi/linux/kprog.h).
 */
int kprog_ib_net_conn(struct kprog_net_conn *c)
{
	struct kprog_ib_conn *conn;
	struct kprog_ib_addr a;
	u32 status;
	int err;

	if (c->peer.family != AF_INET)
		return -EINVAL;
	kprog_ib_addr_from_node(&a, &c->peer);
	if (kprog_ib_addr_is_local(&a))
		return -EINVAL;
	switch (c->op) {
	case KPROG_NET_PREPARE:
		conn = kprog_ib_conn_lookup(&a);
		if (!conn && !kprog_ib_may_change())
			return -EPERM;
		if (!conn)
			conn = kprog_ib_conn_make(&a);
		if (IS_ERR(conn))
			return PTR_ERR(conn);
		kprog_ib_conn_describe(conn, &c->local);
		kprog_ib_conn_put(conn);
		c->status = 0;
		return 0;
	case KPROG_NET_CONNECT:
		err = kprog_ib_net_connect(&a, &c->local, &c->remote, &status);
		c->status = status;
		return err;
	default:
		return -EINVAL;
	}
}

static void kprog_ib_conn_dead_work(struct work_struct *work)
{
	struct kprog_ib_conn *conn = container_of(work, struct kprog_ib_conn,
						  dead_work);
	struct kprog_ib_out *out, *tmp;
	LIST_HEAD(backlog);

	pr_debug("kprog_ib: connection to %pI4 (QP %u%s) down: %d\n",
		 conn->peer.addr, conn->qpn,
		 conn->loopback ? ", loopback" : "", conn->err);
	spin_lock_bh(&kprog_ib_conns_lock);
	conn->listed = false;
	spin_unlock_bh(&kprog_ib_conns_lock);
	/*
	 * A KPROG_NET_CONNECT that began before it died ends first; no
	 * completion after the drain: every posted request was flushed.
	 */
	mutex_lock(&conn->qp_mutex);
	if (conn->qp)
		ib_drain_qp(conn->qp);
	/* After this no REG_MR completion refers to a message of the backlog. */
	if (conn->reg_qp)
		ib_drain_qp(conn->reg_qp);
	mutex_unlock(&conn->qp_mutex);
	/* Transfer workers see the state and stop touching it. */
	flush_workqueue(kprog_ib_wq);
	flush_workqueue(kprog_ib_xfer_wq);
	if (cancel_delayed_work_sync(&conn->init_work))
		kprog_ib_conn_put(conn);	/* the timer's */
	/* Dead: a running probe worker does not arm again. */
	if (cancel_delayed_work_sync(&conn->ka_work))
		kprog_ib_conn_put(conn);	/* the timer's */

	spin_lock_bh(&conn->lock);
	/* Unsignaled SENDs that completed with no later completion */
	list_for_each_entry_safe(out, tmp, &conn->sent, node) {
		list_del_init(&out->node);
		ib_dma_unmap_single(conn->dev, out->dma, out->len,
				    DMA_TO_DEVICE);
		conn->wire_out--;
		list_add_tail(&out->node, &backlog);
	}
	conn->unsignaled = 0;
	list_splice_init(&conn->backlog, &backlog);
	spin_unlock_bh(&conn->lock);
	list_for_each_entry_safe(out, tmp, &backlog, node) {
		list_del(&out->node);
		if (!out->credit)
			kprog_ib_out_free(out);
	}
	kprog_ib_up->transfers_dead(conn);
	if (conn->notify)
		kprog_ib_up->node_lost(conn);

	mutex_lock(&conn->qp_mutex);
	kprog_ib_conn_free_res(conn);
	mutex_unlock(&conn->qp_mutex);
	/* A loopback's ends live and die together. */
	if (conn->twin) {
		kprog_ib_conn_fail(conn->twin, -ECONNRESET);
		kprog_ib_conn_put(conn->twin);
		conn->twin = NULL;
	}

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
		seq_printf(m, "conn %pI4 qp %u remote %u%s%s state %u credits %u inflight %u owed %u sends_free %u reads_free %u mrs_out %u probes %llu\n",
			   conn->peer.addr, conn->qpn, conn->remote_qpn,
			   conn->listed ? " listed" : "",
			   conn->loopback ? " loopback" : "", conn->state,
			   conn->cr.avail, conn->cr.inflight, conn->cr.owed,
			   conn->sends_free, conn->reads_free, conn->mrs_out,
			   conn->ka_probes);
		spin_unlock(&conn->lock);
	}
	spin_unlock_bh(&kprog_ib_conns_lock);
}

/**
 * kprog_ib_conn_init() - the workqueues
 * @up: what to call with what the connections receive and lose
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_ib_conn_init(const struct kprog_ib_conn_upcalls *up)
{
	kprog_ib_up = up;
	kprog_ib_wq = alloc_workqueue("kprog_ib", WQ_UNBOUND, 0);
	if (!kprog_ib_wq)
		return -ENOMEM;
	kprog_ib_xfer_wq = alloc_workqueue("kprog_ib_xfer",
					   WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!kprog_ib_xfer_wq) {
		destroy_workqueue(kprog_ib_wq);
		return -ENOMEM;
	}
	kprog_ib_cm_wq = alloc_workqueue("kprog_ib_cm", WQ_UNBOUND, 0);
	if (!kprog_ib_cm_wq) {
		destroy_workqueue(kprog_ib_xfer_wq);
		destroy_workqueue(kprog_ib_wq);
		return -ENOMEM;
	}
	return 0;
}

/**
 * kprog_ib_conn_exit() - tear down every connection
 *
 * No job uses the transport any more (each holds the module).
 */
void kprog_ib_conn_exit(void)
{
	struct kprog_ib_conn *conn;

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
	destroy_workqueue(kprog_ib_xfer_wq);
	destroy_workqueue(kprog_ib_wq);
}
