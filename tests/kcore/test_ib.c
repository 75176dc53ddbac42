// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib.ko (xport_ib.c, ib_dev.c, ib_conn.c, ib_wire.c, ib_recv.c,
 * ib_rndv.c) on the fake verbs layer (mock_ib.c): devices coming and
 * going, the loopback of KPROG_JOIN_NET_ONLY (both ends of every message
 * in the module: eager, credits, RTS / READ / DONE / FIN over many
 * chunks), a node played by the test (KPROG_IOC_NET_CONN, its eager
 * messages and rendezvous in both directions, the node lost mid-read),
 * and every allocation failing in turn.
 */
#include <linux/mm.h>
#include <linux/socket.h>
#include "kprog.h"
#include "job.h"
#include "transport.h"
#include "ib.h"
#include "ib_wire.h"
#include "ktest.h"
#include "mock_ib.h"

static u8 sbuf[2 << 20] __aligned(PAGE_SIZE);
static u8 rbuf[2 << 20] __aligned(PAGE_SIZE);
static u8 pbuf[1 << 20] __aligned(PAGE_SIZE);

static long gauge(enum kprog_ib_gauge g)
{
	return atomic_long_read(&kprog_ib_gauges[g]);
}

/* Nothing pinned, registered or in flight any more. */
static bool ib_idle(void)
{
	return !gauge(KPROG_IB_G_PINNED) && !gauge(KPROG_IB_G_MRS) &&
	       !gauge(KPROG_IB_G_REG_BYTES) && !gauge(KPROG_IB_G_TXS) &&
	       !gauge(KPROG_IB_G_RDVS) && !gauge(KPROG_IB_G_READS) &&
	       !mock_pinned_pages;
}

static void ib_up(void)
{
	mock_ib_dev_add(1);	/* this node: 127.0.0.1, node 0 of kt_join_map() */
	if (kt_ib_load())
		kt_fatal(__FILE__, __LINE__, "kprog_ib does not load");
}

/* Ranks 0 and 1 here, every message between them through the QPs. */
static int loop_join(struct kt_ep *e, u64 key, u32 rank)
{
	static const u32 map[2] = { 0, 0 };
	static struct kprog_node_addr node = {
		.family = AF_INET, .addr = { 127, 0, 0, 1 },
	};
	struct kprog_join j = {
		.abi_version = KPROG_ABI_VERSION,
		.flags = KPROG_JOIN_NET_ONLY,
		.job_key = key,
		.rank = rank,
		.size = 2,
		.rank_nodes = (uintptr_t)map,
		.nodes = (uintptr_t)&node,
		.nr_nodes = 1,
	};

	return kt_join_req(e, &j);
}

/* @proc: the second process (NULL: a new one) */
static void loop_pair_as(struct kt_ep **a, struct kt_ep **b,
			 struct mock_proc *proc)
{
	u64 key = kt_new_key();

	*a = kt_open();
	*b = kt_open_as(proc ?: mock_proc_new(1000));
	if (loop_join(*a, key, 0) || loop_join(*b, key, 1))
		kt_fatal(__FILE__, __LINE__, "net-only join");
}

static void loop_pair(struct kt_ep **a, struct kt_ep **b)
{
	loop_pair_as(a, b, NULL);
}

/* ---------------------------------------------------------------------
 * Devices and loading
 */
TEST(ib__a_device_makes_the_network_transport_and_its_removal_ends_it)
{
	struct kprog_info info;
	struct ib_device *dev;
	struct kt_ep *e;

	ASSERT_OK(kt_ib_load());
	e = kt_open();
	EXPECT_OK(kt_info(e, &info));
	EXPECT(!(info.transports & KPROG_XPORT_IB));
	dev = mock_ib_dev_add(1);
	EXPECT_OK(kt_info(e, &info));
	EXPECT(info.transports & KPROG_XPORT_IB);
	EXPECT_EQ(info.node_addr.family, AF_INET);
	EXPECT_EQ(info.node_addr.addr[0], 127);
	EXPECT_EQ(info.node_addr.addr[3], 1);
	mock_ib_dev_remove(dev);
	EXPECT_OK(kt_info(e, &info));
	EXPECT(!(info.transports & KPROG_XPORT_IB));
	EXPECT(mock_printk_take("removed"));
}

TEST(ib__a_port_that_is_down_gives_no_node_address)
{
	struct kprog_info info;
	struct ib_device *dev;
	struct kt_ep *e;

	dev = mock_ib_dev_add(1);
	mock_ib_port_state(dev, IB_PORT_DOWN);
	ASSERT_OK(kt_ib_load());
	e = kt_open();
	EXPECT_OK(kt_info(e, &info));
	EXPECT_EQ(info.node_addr.family, 0);
	mock_ib_port_state(dev, IB_PORT_ACTIVE);
	mock_ib_query_port_errors = 1;
	EXPECT_OK(kt_info(e, &info));
	EXPECT_EQ(info.node_addr.family, 0);
	EXPECT_OK(kt_info(e, &info));
	EXPECT_EQ(info.node_addr.family, AF_INET);
}

static int load_op(void *arg)
{
	return kt_ib_load();
}

TEST(ib__load_unwinds_every_allocation_failure)
{
	mock_ib_dev_add(1);
	EXPECT(kt_each_alloc_failure(load_op, NULL, NULL, -ENOMEM) >= 2);
}

TEST(ib__bad_parameters_refuse_the_load)
{
	mock_ib_dev_add(1);
	kprog_ib_recv_bufs = 4;
	EXPECT_ERR(kt_ib_load_params(), -EINVAL);
	EXPECT_PRINTK("recv_bufs");
	kprog_ib_recv_bufs = 64;
	kprog_ib_max_reg_mb = 1;
	EXPECT_ERR(kt_ib_load_params(), -EINVAL);
	EXPECT_PRINTK("max_reg_mb");
	kprog_ib_max_reg_mb = 256;
	kprog_ib_keepalive_ms = 50;
	EXPECT_ERR(kt_ib_load_params(), -EINVAL);
	EXPECT_PRINTK("keepalive_ms");
}

/* ---------------------------------------------------------------------
 * The loopback: both ends in the module
 */
TEST(ib__loopback_eager_message_crosses_the_queue_pairs)
{
	struct kprog_post p;
	struct kt_ep *a, *b;

	ib_up();
	loop_pair(&a, &b);
	kt_fill(sbuf, 100, 1);
	EXPECT_OK(kt_recv(b, 0, 5, rbuf, 100, 11, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_OK(kt_send(a, 1, 5, sbuf, 100, 12, 0, &p));
	EXPECT_EQ(p.done, 1);
	/*
	 * a connected pair of QPs on the port (each end with its registration
	 * QP, mock_rxe being rxe), the message posted
	 */
	EXPECT_EQ(mock_ib_nr_qps(), 4);
	EXPECT(mock_ib_pending(IB_WR_SEND) >= 1);
	EXPECT(!kt_ring_count(b));
	mock_ib_run();
	EXPECT_CQE(b, 11, 100, 0);
	EXPECT(kt_check(rbuf, 100, 1));
}

static void rndv_roundtrip(struct kt_ep *a, struct kt_ep *b, u64 len,
			   u32 off, bool recv_first, unsigned int seed)
{
	struct kprog_post p;

	kt_fill(sbuf + off, len, seed);
	memset(rbuf, 0, len + off);
	if (recv_first)
		EXPECT_OK(kt_recv(b, 0, 3, rbuf + off, len, 21, 0, &p));
	EXPECT_OK(kt_send(a, 1, 3, sbuf + off, len, 22, 0, &p));
	EXPECT_EQ(p.done, 0);
	mock_ib_run();
	if (!recv_first) {
		EXPECT_OK(kt_recv(b, 0, 3, rbuf + off, len, 21, 0, &p));
		mock_ib_run();
	}
	EXPECT_CQE(b, 21, len, 0);
	EXPECT_CQE(a, 22, len, 0);
	EXPECT(kt_check(rbuf + off, len, seed));
}

TEST(ib__loopback_rendezvous_is_read_chunk_by_chunk_and_releases_everything)
{
	struct kt_ep *a, *b;

	mock_ib_dev_add(1);
	kt_ib_load();
	kt_ib_unload();
	kprog_ib_reg_pages = 4;	/* 16 KiB chunks: many PULL/DESC/DONE */
	kprog_ib_max_reads = 2;
	ASSERT_OK(kt_ib_load_params());
	loop_pair(&a, &b);
	rndv_roundtrip(a, b, (1 << 20) + 123, 100, true, 7);
	EXPECT(ib_idle());
	EXPECT(mock_dirtied_pages > 0);
	/* unexpected first, then received; page-aligned and not */
	rndv_roundtrip(a, b, 300000, 0, false, 8);
	rndv_roundtrip(a, b, 9000, 4095, true, 9);
	mock_ib_run();
	EXPECT(ib_idle());
	EXPECT_EQ(mock_ib_pending(-1), 0);
}

TEST(ib__loopback_truncated_rendezvous_reports_emsgsize_at_both_ends)
{
	struct kprog_post p;
	struct kt_ep *a, *b;

	ib_up();
	loop_pair(&a, &b);
	kt_fill(sbuf, 100000, 3);
	EXPECT_OK(kt_recv(b, 0, 3, rbuf, 50000, 31, 0, &p));
	EXPECT_OK(kt_send(a, 1, 3, sbuf, 100000, 32, 0, &p));
	mock_ib_run();
	EXPECT_CQE(b, 31, 50000, -EMSGSIZE);
	EXPECT(kt_pop(a, &(struct kprog_cqe){}));
	EXPECT(kt_check(rbuf, 50000, 3));
	EXPECT(ib_idle());
}

TEST(ib__credits_hold_messages_back_until_the_peer_returns_buffers)
{
	struct kprog_post p;
	struct kt_ep *a, *b;
	int i;

	mock_ib_dev_add(1);
	kt_ib_load();
	kt_ib_unload();
	kprog_ib_recv_bufs = 8;
	ASSERT_OK(kt_ib_load_params());
	loop_pair(&a, &b);
	for (i = 0; i < 40; i++) {
		kt_fill(sbuf + i * 64, 64, 100 + i);
		EXPECT_OK(kt_send(a, 1, i, sbuf + i * 64, 64, 1000 + i, 0, &p));
	}
	/* no more SENDs posted than the peer has buffers */
	EXPECT(mock_ib_pending(IB_WR_SEND) <= 8);
	mock_ib_run();
	/* all 40 arrived (unexpected) in order, the credits went round */
	for (i = 0; i < 40; i++) {
		EXPECT_OK(kt_recv(b, 0, i, rbuf + i * 64, 64, 2000 + i, 0, &p));
		EXPECT(p.done && p.cqe.bytes == 64 && !p.cqe.error);
		EXPECT(kt_check(rbuf + i * 64, 64, 100 + i));
	}
	/* and back the other way, for the returned credits of b's end */
	for (i = 0; i < 40; i++)
		EXPECT_OK(kt_send(b, 0, i, sbuf, 8, 3000 + i, 0, &p));
	mock_ib_run();
	for (i = 0; i < 40; i++) {
		EXPECT_OK(kt_recv(a, 1, i, rbuf, 8, 4000 + i, 0, &p));
		EXPECT(p.done && p.cqe.bytes == 8 && !p.cqe.error);
	}
}

/* ---------------------------------------------------------------------
 * A node played by the test
 */
struct peer_ctx {
	struct mock_ib_peer *p;
	struct kt_ep *e;
	u64 key;
	u16 owed;	/* the module's messages received, not yet credited */
	u32 qpn;	/* this node's QP of the connection */
};

static const u32 map2[2] = { 0, 1 };

static int net_conn(struct kt_ep *e, u32 op, const struct kprog_net_qp *local,
		    const struct kprog_net_qp *remote, struct kprog_net_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->peer.family = AF_INET;
	c->peer.addr[0] = 127;
	c->peer.addr[3] = 2;
	if (local)
		c->local = *local;
	if (remote)
		c->remote = *remote;
	return kt_ioctl(e, KPROG_IOC_NET_CONN, c);
}

static void peer_report(struct mock_ib_peer *p, struct kprog_net_qp *q)
{
	memset(q, 0, sizeof(*q));
	q->gid[10] = q->gid[11] = 0xff;
	q->gid[12] = 127;
	q->gid[15] = 2;
	q->qpn = mock_ib_peer_qpn(p);
	q->psn = mock_ib_peer_psn(p);
	q->recv_bufs = 64;
	q->max_msg = KPROG_IB_EAGER_HDR + 8192;
	q->mtu = IB_MTU_4096;
	q->rd_atom = 16;
	q->version = KPROG_NET_VERSION;
}

/*
 * Rank 0 here, rank 1 on node 1 (127.0.0.2), played by the test; @reg_qp:
 * the module parameter while the connection is made.
 */
static void peer_job_reg(struct peer_ctx *c, bool reg_qp)
{
	struct kprog_net_conn nc;
	struct kprog_net_qp r, mine;

	ib_up();
	kprog_ib_reg_qp = reg_qp;
	c->key = kt_new_key();
	c->e = kt_open();
	c->owed = 0;
	ASSERT_OK(kt_join_map(c->e, c->key, 0, 2, map2, 2, 0));
	/* connecting nodes is the administrator's (conn_admin) */
	mock_default_proc->caps |= BIT_ULL(CAP_NET_ADMIN);
	ASSERT_OK(net_conn(c->e, KPROG_NET_PREPARE, NULL, NULL, &nc));
	c->p = mock_ib_peer_new(2);
	peer_report(c->p, &r);
	mine = nc.local;
	ASSERT_OK(net_conn(c->e, KPROG_NET_CONNECT, &mine, &r, &nc));
	ASSERT_EQ(nc.status, KPROG_NET_CONNECTED);
	mock_ib_peer_connect(c->p, mine.qpn, mine.psn);
	EXPECT_EQ(mock_ib_qp_state(mock_ib_qp(mine.qpn)), IB_QPS_RTS);
	c->qpn = mine.qpn;
	mock_default_proc->caps &= ~BIT_ULL(CAP_NET_ADMIN);
}

static void peer_job(struct peer_ctx *c)
{
	peer_job_reg(c, true);
}

static u8 wire[KPROG_IB_EAGER_HDR + 65536];

static void peer_send(struct peer_ctx *c, u32 len, bool inv, u32 rkey)
{
	kprog_ib_set_credits(wire, c->owed);
	c->owed = 0;
	mock_ib_peer_send(c->p, wire, len, inv, rkey);
}

/* The next message the peer got, parsed; false if none. */
static bool peer_recv(struct peer_ctx *c, struct kprog_ib_parsed *m,
		      bool *inv, u32 *rkey)
{
	u32 len;

	if (!mock_ib_peer_recv(c->p, wire, &len, inv, rkey))
		return false;
	c->owed++;
	if (kprog_ib_parse(wire, len, 65536, m) != KPROG_IB_OK) {
		kt_fail(__FILE__, __LINE__, "the module sent a malformed message");
		return false;
	}
	return true;
}

/* The next message that is not a CREDIT. */
static bool peer_recv_data(struct peer_ctx *c, struct kprog_ib_parsed *m,
			   bool *inv, u32 *rkey)
{
	while (peer_recv(c, m, inv, rkey))
		if (m->type != KPROG_IB_CREDIT)
			return true;
	return false;
}

static struct kprog_env env(s32 src, s32 dst, s32 tag, u64 len)
{
	return (struct kprog_env){ .src = src, .dst = dst, .tag = tag,
				   .len = len };
}

TEST(ib__net_conn_connects_a_peer_node_and_eager_messages_cross_both_ways)
{
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	struct kprog_env ev;
	u32 n;

	peer_job(&c);
	/* from the peer: an eager message to rank 0 */
	ev = env(1, 0, 7, 16);
	n = kprog_ib_put_eager(wire, c.key, &ev, 0);
	kt_fill(wire + n, 16, 4);
	peer_send(&c, n + 16, false, 0);
	EXPECT_OK(kt_recv(c.e, 1, 7, rbuf, 16, 41, 0, &p));
	mock_ib_run();
	EXPECT_CQE(c.e, 41, 16, 0);
	EXPECT(kt_check(rbuf, 16, 4));
	/* to the peer */
	kt_fill(sbuf, 32, 5);
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf, 32, 42, 0, &p));
	EXPECT_EQ(p.done, 1);
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	EXPECT_EQ(m.type, KPROG_IB_EAGER);
	EXPECT_EQ(m.key, c.key);
	EXPECT_EQ(m.env.tag, 9);
	EXPECT_EQ(m.env.src, 0);
	EXPECT_EQ(m.env.dst, 1);
	EXPECT_EQ(m.env.len, 32);
	EXPECT(kt_check(m.payload, 32, 5));
	/* a message of another job is dropped, nothing completes */
	ev = env(1, 0, 7, 8);
	n = kprog_ib_put_eager(wire, c.key + 1, &ev, 0);
	peer_send(&c, n + 8, false, 0);
	EXPECT_OK(kt_recv(c.e, 1, 7, rbuf, 8, 43, 0, &p));
	mock_ib_run();
	EXPECT(!kt_ring_count(c.e));
	EXPECT_OK(kt_cancel(c.e, 43));
	EXPECT_CQE(c.e, 43, 0, -ECANCELED);
}

static int cq_events;

static void count_cq_event(struct ib_cq *cq, void *ctx)
{
	cq_events++;
}

/*
 * KPROG_WAIT_POLL raises the completion event of the CQ of the connection
 * to the job's other node (ib_core would then poll it on this CPU), once
 * per call; with net_poll off, or in a job on one node, nothing.
 */
TEST(ib__a_polling_waiter_raises_the_completion_event_of_its_nodes_cq)
{
	struct kprog_wait w = { .timeout_ns = 0, .flags = KPROG_WAIT_POLL };
	struct peer_ctx c;
	struct kt_ep *one;
	struct ib_cq *cq;

	peer_job(&c);
	cq = mock_ib_qp(c.qpn)->recv_cq;
	ASSERT(cq && cq->poll_ctx == IB_POLL_SOFTIRQ);
	cq->comp_handler = count_cq_event;
	cq_events = 0;
	EXPECT_OK(kt_ioctl(c.e, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(cq_events, 1);
	w.flags = 0;
	EXPECT_OK(kt_ioctl(c.e, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(cq_events, 1);
	w.flags = KPROG_WAIT_POLL;
	kprog_ib_net_poll = false;
	EXPECT_OK(kt_ioctl(c.e, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(cq_events, 1);
	kprog_ib_net_poll = true;
	one = kt_open();
	ASSERT_OK(kt_join(one, kt_new_key(), 0, 1));
	EXPECT_OK(kt_ioctl(one, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(cq_events, 1);
	w.flags = 1U << 2;
	EXPECT_ERR(kt_ioctl(c.e, KPROG_IOC_WAIT, &w), -EINVAL);
	cq->comp_handler = NULL;
}

TEST(ib__rts_from_a_peer_is_read_from_its_memory_then_finned)
{
	struct kprog_ib_chunk_desc d;
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	struct kprog_env ev;
	u32 rkey, inv_rkey;
	bool inv;

	peer_job(&c);
	kt_fill(pbuf, 200000, 6);
	rkey = mock_ib_peer_reg(c.p, pbuf, 200000);
	d = (struct kprog_ib_chunk_desc){ .offset = 0, .addr = (uintptr_t)pbuf,
					  .len = 200000, .rkey = rkey };
	ev = env(1, 0, 3, 200000);
	ev.flags = KPROG_ENV_RNDV;
	peer_send(&c, kprog_ib_put_rts(wire, c.key, &ev, 0, 0xabc0001, &d),
		  false, 0);
	EXPECT_OK(kt_recv(c.e, 1, 3, rbuf, 200000, 51, 0, &p));
	mock_ib_run();
	EXPECT_CQE(c.e, 51, 200000, 0);
	EXPECT(kt_check(rbuf, 200000, 6));
	ASSERT(peer_recv_data(&c, &m, &inv, &inv_rkey));
	EXPECT_EQ(m.type, KPROG_IB_FIN);
	EXPECT_EQ(m.cookie, 0xabc0001);
	EXPECT_EQ(m.bytes, 200000);
	EXPECT_EQ(m.status, 0);
	/* the FIN gives the rkey back: a SEND with invalidate of it */
	EXPECT(inv);
	EXPECT_EQ(inv_rkey, rkey);
	EXPECT(ib_idle());
}

TEST(ib__rendezvous_to_a_peer_completes_when_its_fin_invalidates_the_rkey)
{
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u32 n;

	peer_job(&c);
	kt_fill(sbuf + 8, 65536, 7);
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf + 8, 65536, 61, 0, &p));
	EXPECT_EQ(p.done, 0);
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	ASSERT_EQ(m.chunk.len, 65536);
	EXPECT(gauge(KPROG_IB_G_MRS) == 1);
	/* the peer READs the registered chunk */
	EXPECT_OK(mock_ib_peer_read(c.p, pbuf, m.chunk.addr, m.chunk.rkey,
				    65536));
	EXPECT(kt_check(pbuf, 65536, 7));
	/* a wrong rkey or a range outside the chunk is refused */
	EXPECT_ERR(mock_ib_peer_read(c.p, pbuf, m.chunk.addr, m.chunk.rkey + 1,
				     8), -EACCES);
	EXPECT_ERR(mock_ib_peer_read(c.p, pbuf, m.chunk.addr + 65530,
				     m.chunk.rkey, 8), -EACCES);
	EXPECT(!kt_ring_count(c.e));
	n = kprog_ib_put_done(wire, KPROG_IB_FIN, m.cookie, 0, 65536, 0,
			      KPROG_IB_INV);
	peer_send(&c, n, true, m.chunk.rkey);
	mock_ib_run();
	EXPECT_CQE(c.e, 61, 65536, 0);
	EXPECT(ib_idle());
	/* invalid once the FIN came */
	EXPECT_ERR(mock_ib_peer_read(c.p, pbuf, m.chunk.addr, m.chunk.rkey, 8),
		   -EACCES);
}

TEST(ib__a_fin_without_invalidation_is_invalidated_locally_before_the_send_completes)
{
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u32 n;

	peer_job(&c);
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 71, 0, &p));
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	n = kprog_ib_put_done(wire, KPROG_IB_FIN, m.cookie, 0, 65536, 0, 0);
	peer_send(&c, n, false, 0);
	n = kprog_ib_put_done(wire, KPROG_IB_FIN, m.cookie, 0, 65536, 0,
			      KPROG_IB_INV);
	/* names the chunk, invalidates nothing that exists at the receiver */
	mock_ib_run();
	/* the first FIN (no invalidation) ends the send; the rkey is then
	 * invalidated locally before it completes */
	EXPECT_CQE(c.e, 71, 65536, 0);
	EXPECT(ib_idle());
	/* a second FIN for a finished send is dropped */
	peer_send(&c, n, false, 0);
	mock_ib_run();
	EXPECT(!kt_ring_count(c.e));
}

TEST(ib__node_lost_mid_read_fails_both_transfers_and_frees_everything)
{
	struct kprog_ib_chunk_desc d;
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	struct kprog_env ev;
	u32 rkey;

	peer_job(&c);
	/* a send to the peer, waiting for its FIN */
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 81, 0, &p));
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	/* a receive whose READ is on the wire when the node goes */
	rkey = mock_ib_peer_reg(c.p, pbuf, 100000);
	d = (struct kprog_ib_chunk_desc){ .addr = (uintptr_t)pbuf,
					  .len = 100000, .rkey = rkey };
	ev = env(1, 0, 3, 100000);
	ev.flags = KPROG_ENV_RNDV;
	peer_send(&c, kprog_ib_put_rts(wire, c.key, &ev, 0, 0xabc0002, &d),
		  false, 0);
	EXPECT_OK(kt_recv(c.e, 1, 3, rbuf, 100000, 82, 0, &p));
	mock_ib_hold = BIT(IB_WR_RDMA_READ);
	mock_ib_run();
	ASSERT_EQ(mock_ib_pending(IB_WR_RDMA_READ), 1);
	EXPECT(gauge(KPROG_IB_G_READS) == 1);
	EXPECT(mock_pinned_pages > 0);
	mock_ib_peer_lost(c.p);
	mock_ib_hold = 0;
	mock_ib_run();
	/* both fail, the node's connection is gone with every resource */
	EXPECT_CQE(c.e, 81, 0, -ECONNRESET);
	EXPECT_CQE(c.e, 82, 0, -ECONNRESET);
	EXPECT(ib_idle());
	EXPECT_EQ(mock_ib_nr_qps(), 0);
	EXPECT_EQ(gauge(KPROG_IB_G_CONNS), 0);
	/* later sends to that node fail at once */
	EXPECT_ERR(kt_send(c.e, 1, 4, sbuf, 8, 83, 0, &p), -ENOTCONN);
}

TEST(ib__an_idle_connection_finds_its_lost_node_by_keepalive)
{
	struct kprog_post p;
	struct peer_ctx c;

	peer_job(&c);
	EXPECT_OK(kt_recv(c.e, 1, 3, rbuf, 8, 91, 0, &p));
	mock_ib_run();
	mock_ib_peer_lost(c.p);
	/* nothing in flight: only the probe can notice */
	mock_time_advance(2100ULL * NSEC_PER_MSEC);
	mock_run_work();
	EXPECT_EQ(mock_ib_pending(IB_WR_RDMA_WRITE), 1);
	mock_ib_run();
	EXPECT_CQE(c.e, 91, 0, -ECONNRESET);
	EXPECT_EQ(mock_ib_nr_qps(), 0);
}

/* ---------------------------------------------------------------------
 * Failing registrations and posts: an error completion, never a hang
 */

/*
 * The peer READs the 64 KiB chunk @d (filled with @fill by the sender),
 * sends the FIN that invalidates its rkey, and the send @id completes with
 * nothing left behind.
 */
static void peer_reads_and_fins(struct peer_ctx *c,
				const struct kprog_ib_chunk_desc *d,
				u64 cookie, int fill, u64 id)
{
	u32 n;

	EXPECT_OK(mock_ib_peer_read(c->p, pbuf, d->addr, d->rkey, 65536));
	EXPECT(kt_check(pbuf, 65536, fill));
	n = kprog_ib_put_done(wire, KPROG_IB_FIN, cookie, 0, 65536, 0,
			      KPROG_IB_INV);
	peer_send(c, n, true, d->rkey);
	mock_ib_run();
	EXPECT_CQE(c->e, id, 65536, 0);
	EXPECT(ib_idle());
}

/* The send to the peer was failed with @err and nothing is left. */
static void expect_failed_and_freed(struct peer_ctx *c, u64 id, u64 bytes,
				    int err)
{
	EXPECT_CQE(c->e, id, bytes, err);
	EXPECT(ib_idle());
	EXPECT_EQ(mock_ib_nr_qps(), 0);
	EXPECT_EQ(gauge(KPROG_IB_G_CONNS), 0);
}

TEST(ib__a_reg_mr_that_cannot_be_posted_fails_the_send_and_the_connection)
{
	struct kprog_post p;
	struct peer_ctx c;

	peer_job(&c);
	mock_ib_post_fail_opcode = IB_WR_REG_MR;
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 111, 0, &p));
	EXPECT_EQ(p.done, 0);
	/* before: an RTS without its chunk, and a send waiting for ever */
	mock_ib_run();
	expect_failed_and_freed(&c, 111, 0, -ECONNRESET);
}

TEST(ib__a_reg_mr_that_completes_in_error_fails_both_ends_of_a_loopback)
{
	struct kprog_post p;
	struct kt_ep *a, *b;

	ib_up();
	loop_pair(&a, &b);
	EXPECT_OK(kt_recv(b, 0, 3, rbuf, 65536, 121, 0, &p));
	/* as rxe's "rxe_reg_fast_mr: mr->lkey ... not free" */
	mock_ib_wc_fail_opcode = IB_WR_REG_MR;
	EXPECT_OK(kt_send(a, 1, 3, sbuf, 65536, 122, 0, &p));
	mock_ib_run();
	EXPECT_CQE(a, 122, 0, -ECONNRESET);
	EXPECT_CQE(b, 121, 0, -ECONNRESET);
	EXPECT(ib_idle());
	EXPECT_EQ(mock_ib_nr_qps(), 0);
}

TEST(ib__a_local_inv_that_cannot_be_posted_keeps_the_mr_until_the_teardown)
{
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u32 n;

	peer_job(&c);
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 131, 0, &p));
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	ASSERT_EQ(m.chunk.len, 65536);
	/* a FIN that leaves the rkey valid: the module must LOCAL_INV it */
	n = kprog_ib_put_done(wire, KPROG_IB_FIN, m.cookie, 0, 65536, 0, 0);
	peer_send(&c, n, false, 0);
	mock_ib_post_fail_opcode = IB_WR_LOCAL_INV;
	mock_ib_run();
	/*
	 * The data arrived (the FIN says so); the MR was deregistered by the
	 * teardown before the send completed (before: it completed at once
	 * and the MR stayed registered, its pages pinned).
	 */
	expect_failed_and_freed(&c, 131, 65536, 0);
	EXPECT_ERR(mock_ib_peer_read(c.p, pbuf, m.chunk.addr, m.chunk.rkey, 8),
		   -EACCES);
}

/*
 * rxe runs a REG_MR again when it retransmits a SEND posted before it,
 * finds the MR valid and fails the QP (the mock fails such a REG_MR):
 * the module posts one only when nothing is on the wire, and holds new
 * SENDs meanwhile.
 */
TEST(ib__a_reg_mr_waits_until_nothing_is_on_the_wire)
{
	struct kprog_ib_chunk_desc d;
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u64 cookie;
	u32 sends;

	peer_job_reg(&c, false);
	EXPECT_EQ(mock_ib_nr_qps(), 1);
	kt_fill(sbuf, 65536, 12);
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 140, 0, &p));
	EXPECT_EQ(mock_ib_pending(IB_WR_SEND), 1);
	/* an eager SEND is out: the RTS goes without chunk 0 */
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 141, 0, &p));
	EXPECT_EQ(mock_ib_pending(IB_WR_REG_MR), 0);
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	EXPECT_EQ(m.type, KPROG_IB_EAGER);
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	EXPECT_EQ(m.chunk.len, 0);
	cookie = m.cookie;
	/* the peer PULLs chunk 0 while another eager SEND is out */
	peer_send(&c, kprog_ib_put_pull(wire, m.cookie, 0x77, 0), false, 0);
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 142, 0, &p));
	ASSERT(mock_ib_step());	/* the PULL arrives */
	mock_run_work();
	EXPECT_EQ(mock_ib_pending(IB_WR_REG_MR), 0);
	/* while the registration waits, nothing new goes on the wire */
	sends = mock_ib_pending(IB_WR_SEND);
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 143, 0, &p));
	EXPECT_EQ(mock_ib_pending(IB_WR_SEND), sends);
	mock_ib_run();
	EXPECT(!mock_printk_take("not free"));
	/* the eager SEND that was out, the one held, then the DESC */
	EXPECT(peer_recv_data(&c, &m, NULL, NULL) && m.type == KPROG_IB_EAGER);
	EXPECT(peer_recv_data(&c, &m, NULL, NULL) && m.type == KPROG_IB_EAGER);
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_DESC);
	EXPECT_EQ(m.rid, 0x77);
	d = m.chunk;
	ASSERT_EQ(d.len, 65536);
	EXPECT_EQ(gauge(KPROG_IB_G_MRS), 1);
	peer_reads_and_fins(&c, &d, cookie, 12, 141);
	/* the connection lives on */
	EXPECT_EQ(mock_ib_nr_qps(), 1);
	EXPECT_EQ(gauge(KPROG_IB_G_CONNS), 1);
}

/*
 * The same on a registration QP (reg_qp): the REG_MR goes on a QP of its
 * own at once, whatever is on the wire, and the RTS carries chunk 0; the
 * RTS (and what is queued behind it) waits for the REG_MR's completion,
 * since nothing orders two QPs.
 */
TEST(ib__on_rxe_a_reg_mr_goes_on_the_registration_qp_and_the_rts_waits_for_it)
{
	struct kprog_ib_chunk_desc d;
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u64 cookie;

	peer_job(&c);
	/* the data QP and the registration QP */
	EXPECT_EQ(mock_ib_nr_qps(), 2);
	kt_fill(sbuf, 65536, 13);
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 150, 0, &p));
	EXPECT_EQ(mock_ib_pending(IB_WR_SEND), 1);
	mock_ib_hold = BIT_ULL(IB_WR_REG_MR);
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 151, 0, &p));
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 152, 0, &p));
	EXPECT_EQ(mock_ib_pending(IB_WR_REG_MR), 1);
	EXPECT_EQ(mock_ib_pending(IB_WR_SEND), 1);
	mock_ib_run();
	/* the eager SEND that was out went; the RTS and the one after wait */
	EXPECT_EQ(mock_ib_pending(IB_WR_REG_MR), 1);
	EXPECT_EQ(mock_ib_pending(IB_WR_SEND), 0);
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	EXPECT_EQ(m.type, KPROG_IB_EAGER);
	EXPECT(!peer_recv_data(&c, &m, NULL, NULL));
	mock_ib_hold = 0;
	mock_ib_run();
	EXPECT(!mock_printk_take("not free"));
	EXPECT(!mock_printk_take("don't match"));
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	d = m.chunk;
	cookie = m.cookie;
	ASSERT_EQ(d.len, 65536);
	EXPECT(peer_recv_data(&c, &m, NULL, NULL) && m.type == KPROG_IB_EAGER);
	/* an rkey of the registration QP is read through the data QP */
	peer_reads_and_fins(&c, &d, cookie, 13, 151);
	EXPECT_EQ(mock_ib_nr_qps(), 2);
	EXPECT_EQ(gauge(KPROG_IB_G_CONNS), 1);
}

/*
 * A registration QP that cannot be connected (here its RTS) is destroyed,
 * said once in the log, and the connection keeps the fenced path.
 */
TEST(ib__without_a_registration_qp_the_connection_keeps_the_fence)
{
	struct kprog_ib_chunk_desc d;
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u64 cookie;

	/* the data QP's INIT, then the registration QP's INIT, RTR, RTS */
	mock_ib_modify_errors = BIT(3);
	peer_job(&c);
	EXPECT_PRINTK("no registration QP");
	EXPECT_EQ(mock_ib_nr_qps(), 1);
	kt_fill(sbuf, 65536, 14);
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 170, 0, &p));
	/* an eager SEND is out: the RTS goes without chunk 0, as before */
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 171, 0, &p));
	EXPECT_EQ(mock_ib_pending(IB_WR_REG_MR), 0);
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	EXPECT_EQ(m.type, KPROG_IB_EAGER);
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_RTS);
	EXPECT_EQ(m.chunk.len, 0);
	cookie = m.cookie;
	peer_send(&c, kprog_ib_put_pull(wire, cookie, 0x78, 0), false, 0);
	mock_ib_run();
	ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	ASSERT_EQ(m.type, KPROG_IB_DESC);
	d = m.chunk;
	ASSERT_EQ(d.len, 65536);
	peer_reads_and_fins(&c, &d, cookie, 14, 171);
	EXPECT_EQ(mock_ib_nr_qps(), 1);
}

/*
 * A REG_MR of the registration QP that completes in error fails the
 * connection; the teardown drains that QP before it frees the RTS that
 * waited for it, and nothing is left.
 */
TEST(ib__a_failed_reg_mr_on_the_registration_qp_frees_the_rts_it_held)
{
	struct kprog_post p;
	struct peer_ctx c;

	peer_job(&c);
	mock_ib_hold = BIT_ULL(IB_WR_REG_MR);
	EXPECT_OK(kt_send(c.e, 1, 4, sbuf, 65536, 181, 0, &p));
	EXPECT_OK(kt_send(c.e, 1, 9, sbuf + 65536, 8, 182, 0, &p));
	mock_ib_run();
	EXPECT_EQ(mock_ib_pending(IB_WR_REG_MR), 1);
	EXPECT_EQ(mock_ib_pending(IB_WR_SEND), 0);
	mock_ib_hold = 0;
	mock_ib_wc_fail_opcode = IB_WR_REG_MR;
	mock_ib_run();
	expect_failed_and_freed(&c, 181, 0, -ECONNRESET);
}

/* An eager message each way between rank 0 here and the peer's rank 1. */
static void peer_traffic_flows(struct peer_ctx *c, u64 id)
{
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct kprog_env ev = env(1, 0, 7, 8);
	u32 n;

	n = kprog_ib_put_eager(wire, c->key, &ev, 0);
	peer_send(c, n + 8, false, 0);
	EXPECT_OK(kt_recv(c->e, 1, 7, rbuf, 8, id, 0, &p));
	EXPECT_OK(kt_send(c->e, 1, 9, sbuf, 8, id + 1, 0, &p));
	mock_ib_run();
	EXPECT_CQE(c->e, id, 8, 0);
	EXPECT(peer_recv_data(c, &m, NULL, NULL) && m.type == KPROG_IB_EAGER);
}

/*
 * One SEND in send_signal asks for a completion (the HCA gives the slots
 * of the unsignaled ones back with it); the messages leave in order, and
 * those no completion retired yet are freed by the teardown (the leak
 * check at the end of the test).
 */
TEST(ib__one_send_in_send_signal_is_signaled_and_retires_those_before_it)
{
	unsigned int every = kprog_ib_send_signal;
	struct kprog_ib_parsed m;
	struct kprog_post p;
	struct peer_ctx c;
	u64 cqes;
	int i;

	peer_job(&c);
	kt_fill(sbuf, 64, 3);
	cqes = mock_ib_send_cqes;
	for (i = 0; i < 20; i++)
		EXPECT_OK(kt_send(c.e, 1, 9, sbuf + i, 8, 200 + i, 0, &p));
	mock_ib_run();
	for (i = 0; i < 20; i++) {
		ASSERT(peer_recv_data(&c, &m, NULL, NULL));
		EXPECT_EQ(m.type, KPROG_IB_EAGER);
		EXPECT(!memcmp(m.payload, sbuf + i, 8));
	}
	EXPECT_EQ(mock_ib_send_cqes - cqes, 20 / every);
	/* 1: every SEND signaled, as before */
	kprog_ib_send_signal = 1;
	cqes = mock_ib_send_cqes;
	for (i = 0; i < 5; i++)
		EXPECT_OK(kt_send(c.e, 1, 9, sbuf + i, 8, 300 + i, 0, &p));
	mock_ib_run();
	kprog_ib_send_signal = every;
	EXPECT_EQ(mock_ib_send_cqes - cqes, 5);
	for (i = 0; i < 5; i++)
		ASSERT(peer_recv_data(&c, &m, NULL, NULL));
	/* the connection still carries messages both ways */
	peer_traffic_flows(&c, 400);
}


/*
 * One connection per node pair carries every job of both nodes. Another
 * user, whose job spans the same node, hands in a made-up peer end: before
 * conn_admin it reset the connection (every job lost the node); now only
 * CAP_NET_ADMIN may make, connect or drop an end, and reading this node's
 * end or confirming a connection stays open to all.
 */
TEST(ib__another_user_cannot_reset_or_make_the_connection_jobs_share)
{
	static const u32 map3[3] = { 0, 1, 2 };
	struct kprog_net_qp mine, fake;
	struct kprog_net_conn nc;
	struct mock_proc *eve = mock_proc_new(2000);
	struct peer_ctx c;
	struct kt_ep *e;

	peer_job(&c);
	peer_traffic_flows(&c, 100);
	e = kt_open_as(eve);
	ASSERT_OK(kt_join_map(e, kt_new_key(), 0, 3, map3, 3, 0));
	/* this node's end is anyone's to read */
	ASSERT_OK(net_conn(e, KPROG_NET_PREPARE, NULL, NULL, &nc));
	mine = nc.local;
	EXPECT_EQ(mine.remote_qpn, mock_ib_peer_qpn(c.p));
	/* a made-up peer end: the pair rule would drop the connection */
	peer_report(c.p, &fake);
	fake.qpn = 0x4242;
	EXPECT_ERR(net_conn(e, KPROG_NET_CONNECT, &mine, &fake, &nc), -EPERM);
	/* the truth confirms the connection for anyone */
	peer_report(c.p, &fake);
	fake.remote_qpn = mine.qpn;
	EXPECT_OK(net_conn(e, KPROG_NET_CONNECT, &mine, &fake, &nc));
	EXPECT_EQ(nc.status, KPROG_NET_CONNECTED);
	/* no new end toward another node either */
	memset(&nc, 0, sizeof(nc));
	nc.op = KPROG_NET_PREPARE;
	nc.peer.family = AF_INET;
	nc.peer.addr[0] = 127;
	nc.peer.addr[3] = 3;
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_NET_CONN, &nc), -EPERM);
	/* the connection's data QP and registration QP, nothing more */
	EXPECT_EQ(mock_ib_nr_qps(), 2);
	/* the jobs that use the connection never noticed */
	mock_ib_run();
	peer_traffic_flows(&c, 200);
	EXPECT_EQ(mock_ib_qp_state(mock_ib_qp(mine.qpn)), IB_QPS_RTS);
}

TEST(ib__with_conn_admin_off_any_user_drops_a_connection_as_before)
{
	struct kprog_net_qp mine, fake;
	struct kprog_net_conn nc;
	struct peer_ctx c;
	struct kt_ep *e;

	mock_ib_dev_add(1);
	kprog_ib_conn_admin = 2;
	EXPECT_ERR(kt_ib_load_params(), -EINVAL);
	EXPECT_PRINTK("conn_admin");
	mock_ib_dev_remove(mock_ib_dev_add(9));
	peer_job(&c);
	kprog_ib_conn_admin = 0;
	e = kt_open_as(mock_proc_new(2000));
	ASSERT_OK(kt_join_map(e, kt_new_key(), 0, 2, map2, 2, 0));
	ASSERT_OK(net_conn(e, KPROG_NET_PREPARE, NULL, NULL, &nc));
	mine = nc.local;
	peer_report(c.p, &fake);
	fake.qpn = 0x4242;
	EXPECT_OK(net_conn(e, KPROG_NET_CONNECT, &mine, &fake, &nc));
	EXPECT_EQ(nc.status, KPROG_NET_AGAIN);
	mock_ib_run();
	EXPECT_EQ(mock_ib_nr_qps(), 0);
}

/* ---------------------------------------------------------------------
 * Allocation failures
 */
static int prepare_op(void *arg)
{
	struct kprog_net_conn nc;

	return net_conn(arg, KPROG_NET_PREPARE, NULL, NULL, &nc);
}

TEST(ib__net_conn_prepare_unwinds_every_allocation_failure)
{
	struct kt_ep *e;

	mock_ib_dev_add(1);
	kprog_ib_recv_bufs = 8;
	kprog_ib_conn_mrs = 4;
	ASSERT_OK(kt_ib_load_params());
	e = kt_open();
	ASSERT_OK(kt_join_map(e, kt_new_key(), 0, 2, map2, 2, 0));
	EXPECT_ERR(prepare_op(e), -EPERM);
	mock_default_proc->caps |= BIT_ULL(CAP_NET_ADMIN);
	EXPECT(kt_each_alloc_failure(prepare_op, NULL, e, -ENOMEM) > 10);
	EXPECT_EQ(mock_ib_nr_qps(), 1);
}

/*
 * A whole loopback exchange (connection, eager message, rendezvous of
 * several chunks both ways) with the n-th allocation failing, for every n:
 * what completes carries the right data or an error, nothing hangs, and
 * once the files are closed and the module unloaded nothing is left.
 */
TEST(ib__every_allocation_failing_in_a_loopback_exchange_leaves_nothing)
{
	struct kprog_post p;
	struct kprog_cqe cq;
	struct mock_proc *proc = mock_proc_new(1000);
	struct kt_ep *a, *b;
	long live;
	int n, ok = 0;

	mock_ib_dev_add(1);
	for (n = 0; n < 400; n++) {
		kt_recycle_files();
		kprog_ib_recv_bufs = 8;
		kprog_ib_conn_mrs = 4;
		kprog_ib_reg_pages = 4;
		live = mock_live_allocs;
		ASSERT_OK(kt_ib_load_params());
		loop_pair_as(&a, &b, proc);
		kt_fill(sbuf, 40000, n);
		memset(rbuf, 0, 40000);
		mock_kmalloc_fail_nth = n + 1;	/* counted from here */
		if (!kt_recv(b, 0, 1, rbuf, 40000, 1, 0, &p) &&
		    !kt_send(a, 1, 1, sbuf, 40000, 2, 0, &p)) {
			mock_ib_run();
			if (kt_pop(b, &cq) && !cq.error) {
				EXPECT_EQ(cq.bytes, 40000);
				EXPECT(kt_check(rbuf, 40000, n));
				ok++;
			}
		}
		kt_close(a);
		kt_close(b);
		mock_ib_run();
		kt_ib_unload();
		mock_time_advance(TICK_NSEC);	/* deferred frees of ops */
		mock_run_work();
		if (mock_live_allocs != live)
			kt_fail(__FILE__, __LINE__,
				"allocation %d failing: %ld blocks left", n,
				mock_live_allocs - live);
		EXPECT(ib_idle());
		mock_printk_clear();
		/* the failure was never reached: every allocation was tried */
		if (mock_kmalloc_fail_nth) {
			mock_kmalloc_fail_nth = 0;
			break;
		}
	}
	EXPECT(n > 20 && n < 400);
	EXPECT(ok >= 1);
	pr_info("kcore: %d allocations failed in turn, %d exchanges still delivered the data\n",
		n, ok);
	EXPECT_OK(kt_ib_load());
}
