// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib receive dispatch: what a message received on a connection
 * does, and the core-facing side of remote departures.
 *
 * Called by the receive completion handler (softirq) with the message
 * still in its receive buffer. Nothing in it is trusted:
 *
 *   1. kprog_ib_parse() checks it without state (ib_wire.c);
 *   2. the credits it returns must have been taken (ib_plan.c);
 *   3. an envelope (EAGER, RTS) is admitted only for a job that exists on
 *      this node and has a node map (its ranks named this node), when the
 *      connection's peer is the node of the claimed source rank (a rank of
 *      this node only for a KPROG_JOIN_NET_ONLY job, over the loopback)
 *      and the destination rank is on this node; the destination must be
 *      joined (a message for a rank that has not joined yet or left is
 *      dropped, and an RTS answered with a failing FIN so that its sender
 *      does not wait for ever);
 *   4. PULL, DESC, DONE and FIN name transfers by cookies that must
 *      belong to this connection (ib_rndv.c); GONE names a rank that must
 *      live on the peer's node.
 *
 * Whatever fails a check is dropped and counted (net_dropped); a message
 * that cannot be delivered for lack of memory fails the connection (both
 * sides then see errors instead of a silent loss).
 *
 * Departures. A GONE (a rank of the peer's node left a job) and the loss
 * of a node's connection end in kprog_peer_gone() for the ranks
 * concerned, after kprog_job_mark_left(): receives naming them fail,
 * their rendezvous messages are withdrawn. That needs process context: a
 * worker does it.
 */
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/workqueue.h>
#include <linux/timekeeping.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "match.h"
#include "transport.h"
#include "stats.h"
#include "ib.h"
#include "ib_trace.h"

/**
 * kprog_ib_addr_eq() - is a connection's peer the node of a map entry?
 * @a: the connection's peer
 * @na: the node map's entry (the port does not matter: a node's
 *	connections come from any port)
 *
 * Return: true for the same IPv4 address.
 */
bool kprog_ib_addr_eq(const struct kprog_ib_addr *a,
		      const struct kprog_node_addr *na)
{
	return a->family == AF_INET && na->family == AF_INET &&
	       !memcmp(a->addr, na->addr, 4);
}

static void kprog_ib_drop(const char *why)
{
	kprog_stat_add(KPROG_STAT_NET_DROPPED, 1);
	pr_debug("kprog_ib: message dropped: %s\n", why);
}

/* Does the job's node map put @rank on the connection's peer? */
static bool kprog_ib_rank_at_peer(const struct kprog_ib_conn *conn,
				  const struct kprog_job *job, u32 rank)
{
	return kprog_ib_addr_eq(&conn->peer,
				&job->nodes[job->rank_node[rank]]) &&
	       (job->net_only || !kprog_job_is_local(job, rank));
}

/* May this envelope enter the job? */
static bool kprog_ib_admit(const struct kprog_ib_conn *conn,
			   const struct kprog_job *job,
			   const struct kprog_env *env)
{
	if (!job->rank_node || job->net != &kprog_ib_xport)
		return false;
	if (env->src >= job->size || env->dst >= job->size)
		return false;
	return kprog_job_is_local(job, env->dst) &&
	       kprog_ib_rank_at_peer(conn, job, env->src);
}

/* An RTS that will not be received: its sender completes with an error. */
static void kprog_ib_refuse(struct kprog_ib_conn *conn,
			    const struct kprog_ib_parsed *m)
{
	struct kprog_ib_out *out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX,
						      GFP_ATOMIC);

	if (!out) {
		kprog_ib_conn_fail(conn, -ENOMEM);
		return;
	}
	out->len = kprog_ib_put_done(out->buf, KPROG_IB_FIN, m->cookie, 0, 0,
				     -ECONNRESET,
				     m->chunk.len ? KPROG_IB_INV : 0);
	out->inv = m->chunk.len;
	out->inv_rkey = m->chunk.rkey;
	trace_kprog_ib_fin(m->cookie, 0, -ECONNRESET, false);
	if (kprog_ib_conn_queue(conn, out))
		kprog_ib_out_free(out);
}

/*
 * EAGER and RTS: into the matching core of the destination endpoint.
 * Returns the endpoint if the caller must drop its last reference in
 * process context.
 */
static struct kprog_ep *kprog_ib_deliver(struct kprog_ib_conn *conn,
					 const struct kprog_ib_parsed *m)
{
	bool rndv = m->type == KPROG_IB_RTS;
	struct kprog_job *job = kprog_job_lookup(m->key);
	struct kprog_ib_rdv *rdv;
	struct kprog_msg *msg;
	struct kprog_ep *ep;
	int err;

	if (!job || !kprog_ib_admit(conn, job, &m->env)) {
		kprog_ib_drop(job ? "envelope not admitted" : "unknown job");
		goto refuse;
	}
	ep = kprog_job_get_ep(job, m->env.dst);
	if (!ep) {
		kprog_ib_drop("destination rank not joined");
		goto refuse;
	}
	msg = kprog_msg_alloc(&m->env, GFP_ATOMIC);
	if (!msg)
		goto nomem;
	msg->send_req = m->send_req;
	/*
	 * The sender's clock is another machine's: its arrival here stands
	 * for the post (late by one network latency), so that a late sender
	 * is still seen in this node's time (KPROG_JOIN_TIMES).
	 */
	if (READ_ONCE(job->times))
		msg->send_ns = ktime_get_ns();
	if (!rndv) {
		if (kprog_msg_alloc_data(msg, GFP_ATOMIC))
			goto nomem_msg;
		if (m->env.len)
			memcpy(msg->data, m->payload, m->env.len);
	} else {
		rdv = kprog_ib_rdv_new(conn, m);
		if (!rdv)
			goto nomem_msg;
		msg->xport = &kprog_ib_xport;
		msg->rd.net.conn = rdv;
		msg->rd.net.cookie = m->cookie;
		msg->rd.net.addr = m->chunk.addr;
		msg->rd.net.len = m->chunk.len;
		msg->rd.net.rkey = m->chunk.rkey;
		trace_kprog_ib_rts(m->key, &m->env, m->cookie, m->chunk.len,
				   false);
	}
	err = kprog_arrive(ep, msg);
	if (err) {
		/* The receiver left meanwhile. */
		if (rndv)
			kprog_msg_drop(msg, err);
		else
			kprog_msg_free(msg);
	}
	goto out;

nomem_msg:
	kprog_msg_free(msg);
nomem:
	kprog_ib_conn_fail(conn, -ENOMEM);
out:
	kprog_job_put(job);
	return kprog_ep_put_not_last(ep) ? NULL : ep;

refuse:
	if (job)
		kprog_job_put(job);
	if (rndv)
		kprog_ib_refuse(conn, m);
	return NULL;
}

/**
 * struct kprog_ib_gone - a GONE on its way to process context
 * @work: runs kprog_ib_gone_work()
 * @conn: the connection it came on (referenced)
 * @key: the job
 * @rank: the rank that left
 */
struct kprog_ib_gone {
	struct work_struct work;
	struct kprog_ib_conn *conn;
	u64 key;
	u32 rank;
};

static void kprog_ib_gone_work(struct work_struct *work)
{
	struct kprog_ib_gone *g = container_of(work, struct kprog_ib_gone,
					       work);
	struct kprog_job *job = kprog_job_lookup(g->key);
	struct kprog_ep *ep;

	/* The job ended here already: nothing waits for the rank. */
	if (!job)
		goto out;
	if (!job->rank_node || job->net != &kprog_ib_xport ||
	    g->rank >= job->size ||
	    !kprog_ib_rank_at_peer(g->conn, job, g->rank)) {
		kprog_ib_drop("GONE not admitted");
		goto out;
	}
	if (kprog_job_is_local(job, g->rank)) {
		/* Loopback: the rank left here; unless it joined again. */
		ep = kprog_job_get_ep(job, g->rank);
		if (ep) {
			kprog_ep_put(ep);
			goto out;
		}
	} else {
		kprog_job_mark_left(job, g->rank);
	}
	kprog_peer_gone(job, g->rank, -ECONNRESET);
out:
	if (job)
		kprog_job_put(job);
	kprog_ib_conn_put(g->conn);
	kfree(g);
}

static void kprog_ib_gone(struct kprog_ib_conn *conn,
			  const struct kprog_ib_parsed *m)
{
	struct kprog_ib_gone *g = kmalloc(sizeof(*g), GFP_ATOMIC);

	if (!g) {
		kprog_ib_conn_fail(conn, -ENOMEM);
		return;
	}
	INIT_WORK(&g->work, kprog_ib_gone_work);
	kref_get(&conn->ref);
	g->conn = conn;
	g->key = m->key;
	g->rank = m->rank;
	queue_work(kprog_ib_wq, &g->work);
}

/**
 * kprog_ib_recv() - a message arrived on a connection
 * @conn: the connection
 * @buf: the receive buffer
 * @len: bytes received
 * @inv: the SEND invalidated one of this node's rkeys
 * @inv_rkey: which
 *
 * Softirq context (the receive completion).
 *
 * Return: an endpoint whose last reference the caller must drop with
 * kprog_ep_put() in process context before reposting @buf, or NULL.
 */
struct kprog_ep *kprog_ib_recv(struct kprog_ib_conn *conn, const void *buf,
			       u32 len, bool inv, u32 inv_rkey)
{
	struct kprog_ib_parsed m;
	int err = 0;

	if (kprog_ib_parse(buf, len, kprog_ib_eager_size, &m)) {
		kprog_ib_drop("malformed");
		return NULL;
	}
	if (inv && m.type != KPROG_IB_DONE && m.type != KPROG_IB_FIN) {
		/* It invalidated an rkey no protocol step releases. */
		kprog_ib_drop("invalidation outside DONE/FIN");
		kprog_ib_conn_fail(conn, -EPROTO);
		return NULL;
	}
	if (kprog_ib_conn_grant(conn, m.credits)) {
		kprog_ib_drop("credits never taken");
		return NULL;
	}
	switch (m.type) {
	case KPROG_IB_EAGER:
	case KPROG_IB_RTS:
		return kprog_ib_deliver(conn, &m);
	case KPROG_IB_PULL:
		err = kprog_ib_tx_pull(conn, &m);
		break;
	case KPROG_IB_DESC:
		err = kprog_ib_rdv_desc(conn, &m);
		break;
	case KPROG_IB_DONE:
	case KPROG_IB_FIN:
		err = kprog_ib_tx_done(conn, &m, inv, inv_rkey);
		break;
	case KPROG_IB_GONE:
		kprog_ib_gone(conn, &m);
		break;
	default:	/* KPROG_IB_CREDIT: the header did it */
		break;
	}
	if (err)
		kprog_ib_drop("unknown or stale transfer");
	return NULL;
}

static int kprog_ib_node_lost_job(struct kprog_job *job, void *arg)
{
	struct kprog_ib_conn *conn = arg;
	u32 r;

	if (!job->rank_node || job->net != &kprog_ib_xport)
		return 0;
	for (r = 0; r < job->size; r++) {
		if (!kprog_ib_rank_at_peer(conn, job, r))
			continue;
		kprog_job_mark_left(job, r);
		kprog_peer_gone(job, r, -ECONNRESET);
	}
	return 0;
}

/**
 * kprog_ib_node_lost() - the node at the other end of @conn is lost
 * @conn: its connection, dead
 *
 * For every job with ranks on that node (with KPROG_JOIN_NET_ONLY over
 * the loopback: every rank of this node), each such rank is marked left
 * and kprog_peer_gone() fails what waits for it. Process context.
 */
void kprog_ib_node_lost(struct kprog_ib_conn *conn)
{
	if (kprog_job_for_each(kprog_ib_node_lost_job, conn))
		pr_warn("kprog_ib: out of memory failing the ranks of %pI4\n",
			conn->peer.addr);
}
