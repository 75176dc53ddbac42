// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/mock_ib.c: a fake ib_core for kprog_ib.ko (mock_ib.h has
 * what the tests see). Verbs objects (PD, CQ, QP, MR) come from the mocked
 * allocator, so the allocation-failure sweeps reach them as they reach
 * kmalloc(), and a leaked one names the line that made it. The device
 * uses virtual DMA (no dma_device), as rxe does: DMA addresses are kernel
 * addresses, which for the mocked user pages are the user addresses.
 *
 * Nothing moves by itself: posted requests wait until the test steps the
 * fabric. A step takes the head of one QP's send queue (requests of a QP
 * leave in order; the QP whose head was posted first goes first) and
 * does what the responder's HCA would, then delivers the completions in
 * softirq context. Checked on the way, as a real HCA or ib_core would
 * refuse: QP state transitions and their attribute masks, posting in the
 * wrong state, queue and CQ depths, PSNs of the two ends, rkeys (valid,
 * of the responder's PD, REMOTE_READ, within the region), REG_MR of a
 * valid MR, LOCAL_INV or remote invalidation of an invalid one, FRMR page
 * lists, objects freed while in use (a CQ or PD with QPs, a QP with MRs
 * taken from its pool).
 */
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <linux/refcount.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_addr.h>
#include <rdma/mr_pool.h>
#include <rdma/rw.h>
#include "mock.h"
#include "mock_int.h"
#include "mock_ib.h"
#include "runner.h"

u64 mock_ib_send_cqes;
u64 mock_ib_modify_errors, mock_ib_post_send_errors, mock_ib_post_recv_errors;
int mock_ib_post_fail_opcode = -1, mock_ib_wc_fail_opcode = -1;
u64 mock_ib_resolve_errors, mock_ib_query_port_errors, mock_ib_map_mr_errors;
u64 mock_ib_hold;

struct mock_dev {
	struct ib_device ib;
	struct ib_port_data port_data[2];
	struct ib_gid_attr gids[2];
	enum ib_port_state state;
	struct list_head node;
	void *client_data;
	bool client_added;
};

struct mock_wr {
	struct list_head node;
	u64 seq;
	enum ib_wr_opcode opcode;
	struct ib_cqe *cqe;
	bool signaled;
	int slots;
	int num_sge;
	struct ib_sge *sge;
	u32 inv_rkey;
	u64 remote_addr;
	u32 rkey;
	struct ib_mr *mr;
	u32 key;
	int access;
	bool replayed;		/* rxe would run this REG_MR twice */
	void *data;		/* a peer's message, owned */
};

struct mock_qp {
	struct ib_qp qp;
	struct list_head node;
	struct mock_ib_peer *peer;
	enum ib_qp_state state;
	u32 dest_qpn;
	u32 sq_psn, rq_psn;
	int access;
	u32 max_send_wr, max_recv_wr;
	int sq_used, rq_used;
	int sq_unsig;	/* slots of unsignaled requests done, not yet freed */
	struct list_head sq, rq;
	bool lost;
};

struct mock_mr {
	struct ib_mr mr;
	struct list_head all;
	bool valid;
	int access;
	u32 max_sg;
	int nseg;
	u64 *seg_addr;
	u64 *seg_len;
};

struct mock_msg {
	struct list_head node;
	u32 len;
	bool inv;
	u32 rkey;
	u8 data[];
};

struct mock_reg {
	struct list_head node;
	const void *buf;
	u64 len;
	u32 rkey;
	bool valid;
};

struct mock_ib_peer {
	struct list_head node;
	struct mock_qp mq;
	struct ib_pd pd;
	struct list_head inbox;
	struct list_head regs;
	u32 next_rkey;
};

static LIST_HEAD(devs);
static LIST_HEAD(qps);
static LIST_HEAD(mrs);
static LIST_HEAD(peers);
static struct ib_client *client;
static u64 seq;
static u32 next_qpn, next_key;
static long live_pds, live_cqs, gid_refs;

static struct mock_dev *to_md(struct ib_device *ib)
{
	return container_of(ib, struct mock_dev, ib);
}

static struct mock_qp *to_mq(struct ib_qp *qp)
{
	return container_of(qp, struct mock_qp, qp);
}

/* ---------------------------------------------------------------------
 * Devices, clients, ports and GIDs
 */
static int mock_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad);
static int mock_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad);

struct ib_device *mock_ib_dev_add(u8 host)
{
	struct mock_dev *md = calloc(1, sizeof(*md));
	struct ib_device_attr *a;
	int i;

	if (!md)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	md->ib.dev.init_name = "mock_rxe0";
	md->ib.phys_port_cnt = 1;
	md->ib.port_data = md->port_data;
	md->port_data[1].immutable.core_cap_flags =
		RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	md->port_data[1].immutable.gid_tbl_len = 2;
	refcount_set(&md->ib.refcount, 1);
	md->ib.ops.post_send = mock_post_send;
	md->ib.ops.driver_id = RDMA_DRIVER_RXE;
	md->ib.ops.post_recv = mock_post_recv;
	a = &md->ib.attrs;
	a->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS;
	a->max_fast_reg_page_list_len = 512;
	a->max_qp_rd_atom = 128;
	a->max_qp_init_rd_atom = 128;
	a->max_sge_rd = 32;
	a->max_send_sge = 32;
	a->max_recv_sge = 32;
	a->max_qp_wr = 16384;
	md->state = IB_PORT_ACTIVE;
	for (i = 0; i < 2; i++) {
		md->gids[i].device = &md->ib;
		md->gids[i].port_num = 1;
		md->gids[i].index = i;
		md->gids[i].gid_type = IB_GID_TYPE_ROCE_UDP_ENCAP;
	}
	/* GID 0: the IPv6 link-local one rxe has; GID 1: the IPv4 one */
	md->gids[0].gid.raw[0] = 0xfe;
	md->gids[0].gid.raw[1] = 0x80;
	md->gids[0].gid.raw[15] = host;
	ipv6_addr_set_v4mapped(htonl(0x7f000000 | host),
			       (struct in6_addr *)md->gids[1].gid.raw);
	list_add_tail(&md->node, &devs);
	if (client && !client->add(&md->ib))
		md->client_added = true;
	return &md->ib;
}

void mock_ib_dev_remove(struct ib_device *ib)
{
	struct mock_dev *md = to_md(ib);

	if (client && md->client_added)
		client->remove(ib, md->client_data);
	md->client_added = false;
	if (refcount_read(&ib->refcount) != 1)
		mock_fail_at(CALLER, "device removed with %u references held",
			     refcount_read(&ib->refcount) - 1);
	list_del(&md->node);
	free(md);
}

void mock_ib_port_state(struct ib_device *ib, enum ib_port_state state)
{
	to_md(ib)->state = state;
}

int ib_register_client(struct ib_client *c)
{
	struct mock_dev *md;

	mock_might_sleep(CALLER, "ib_register_client()");
	if (client)
		mock_fatal_at(CALLER, "a second ib_client");
	client = c;
	list_for_each_entry(md, &devs, node)
		md->client_added = !c->add(&md->ib);
	return 0;
}

void ib_unregister_client(struct ib_client *c)
{
	struct mock_dev *md;

	mock_might_sleep(CALLER, "ib_unregister_client()");
	if (client != c)
		mock_fatal_at(CALLER, "ib_unregister_client() of a client not registered");
	list_for_each_entry(md, &devs, node) {
		if (md->client_added)
			c->remove(&md->ib, md->client_data);
		md->client_added = false;
		md->client_data = NULL;
	}
	client = NULL;
}

void ib_set_client_data(struct ib_device *device, struct ib_client *c,
			void *data)
{
	to_md(device)->client_data = data;
}

void ib_device_put(struct ib_device *device)
{
	if (refcount_read(&device->refcount) <= 1)
		mock_fail_at(CALLER, "ib_device_put() without a reference");
	else
		refcount_dec(&device->refcount);
}

int ib_query_port(struct ib_device *device, u32 port_num,
		  struct ib_port_attr *port_attr)
{
	if (port_num != 1)
		mock_fail_at(CALLER, "ib_query_port() of port %u", port_num);
	if (mock_check_error(&mock_ib_query_port_errors))
		return -EINVAL;
	memset(port_attr, 0, sizeof(*port_attr));
	port_attr->state = to_md(device)->state;
	port_attr->gid_tbl_len = 2;
	port_attr->active_mtu = IB_MTU_4096;
	port_attr->max_mtu = IB_MTU_4096;
	return 0;
}

const struct ib_gid_attr *rdma_get_gid_attr(struct ib_device *device,
					    u32 port_num, int index)
{
	if (port_num != 1 || index < 0 || index >= 2)
		return ERR_PTR(-EINVAL);
	gid_refs++;
	return &to_md(device)->gids[index];
}

void rdma_put_gid_attr(const struct ib_gid_attr *attr)
{
	if (--gid_refs < 0)
		mock_fail_at(CALLER, "rdma_put_gid_attr() without a reference");
}

/* The route to a GID: answered at once with a made-up MAC. */
int rdma_resolve_ip(struct sockaddr *src_addr, const struct sockaddr *dst_addr,
		    struct rdma_dev_addr *addr, unsigned long timeout_ms,
		    void (*callback)(int status, struct sockaddr *src_addr,
				     struct rdma_dev_addr *addr, void *context),
		    bool resolve_by_gid_attr, void *context)
{
	static const u8 mac[ETH_ALEN] = { 0x52, 0x54, 0, 0, 0, 2 };

	mock_might_sleep(CALLER, "rdma_resolve_ip()");
	if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6)
		mock_fail_at(CALLER, "rdma_resolve_ip() of family %u",
			     dst_addr->sa_family);
	if (mock_check_error(&mock_ib_resolve_errors)) {
		callback(-ENODATA, src_addr, addr, context);
		return 0;
	}
	memcpy(addr->dst_dev_addr, mac, ETH_ALEN);
	addr->hoplimit = 64;
	callback(0, src_addr, addr, context);
	return 0;
}

const char *ib_wc_status_msg(enum ib_wc_status status)
{
	return status == IB_WC_SUCCESS ? "success" : "mock error";
}

/* ---------------------------------------------------------------------
 * PDs, CQs, QPs
 */
struct ib_pd *__ib_alloc_pd(struct ib_device *device, unsigned int flags,
			    const char *caller)
{
	struct ib_pd *pd = mock_alloc(sizeof(*pd), GFP_KERNEL | __GFP_ZERO,
				      MOCK_KMALLOC, CALLER);

	if (flags)
		mock_fail_at(CALLER, "ib_alloc_pd() with flags %#x (a global rkey?)",
			     flags);
	if (!pd)
		return ERR_PTR(-ENOMEM);
	pd->device = device;
	pd->local_dma_lkey = 0x1000 + ++next_key;
	live_pds++;
	return pd;
}

int ib_dealloc_pd_user(struct ib_pd *pd, struct ib_udata *udata)
{
	struct mock_qp *mq;
	struct mock_mr *m;

	list_for_each_entry(mq, &qps, node)
		if (mq->qp.pd == pd)
			mock_fail_at(CALLER, "PD freed while QP %u uses it",
				     mq->qp.qp_num);
	list_for_each_entry(m, &mrs, all)
		if (m->mr.pd == pd)
			mock_fail_at(CALLER, "PD freed while an MR uses it");
	live_pds--;
	mock_free(pd, KFREE_KINDS, "ib_dealloc_pd", CALLER);
	return 0;
}

struct ib_cq *ib_cq_pool_get(struct ib_device *dev, unsigned int nr_cqe,
			     int comp_vector_hint,
			     enum ib_poll_context poll_ctx)
{
	struct ib_cq *cq = mock_alloc(sizeof(*cq), GFP_KERNEL | __GFP_ZERO,
				      MOCK_KMALLOC, CALLER);

	mock_might_sleep(CALLER, "ib_cq_pool_get()");
	if (!cq)
		return ERR_PTR(-ENOMEM);
	cq->device = dev;
	cq->cqe = nr_cqe;
	cq->poll_ctx = poll_ctx;
	live_cqs++;
	return cq;
}

void ib_cq_pool_put(struct ib_cq *cq, unsigned int nr_cqe)
{
	struct mock_qp *mq;

	if (nr_cqe != cq->cqe)
		mock_fail_at(CALLER, "ib_cq_pool_put() of %u entries, got %d",
			     nr_cqe, cq->cqe);
	list_for_each_entry(mq, &qps, node)
		if (mq->qp.send_cq == cq || mq->qp.recv_cq == cq)
			mock_fail_at(CALLER, "CQ put back while QP %u uses it",
				     mq->qp.qp_num);
	live_cqs--;
	mock_free(cq, KFREE_KINDS, "ib_cq_pool_put", CALLER);
}

static void qp_init(struct mock_qp *mq)
{
	INIT_LIST_HEAD(&mq->sq);
	INIT_LIST_HEAD(&mq->rq);
	INIT_LIST_HEAD(&mq->qp.rdma_mrs);
	spin_lock_init(&mq->qp.mr_lock);
	mq->state = IB_QPS_RESET;
	mq->qp.qp_num = ++next_qpn;
	list_add_tail(&mq->node, &qps);
}

struct ib_qp *ib_create_qp_kernel(struct ib_pd *pd,
				  struct ib_qp_init_attr *a,
				  const char *caller)
{
	struct ib_device_attr *da = &pd->device->attrs;
	struct mock_qp *mq;

	mock_might_sleep(CALLER, "ib_create_qp()");
	if (a->qp_type != IB_QPT_RC || !a->send_cq || !a->recv_cq ||
	    a->cap.max_send_wr > da->max_qp_wr ||
	    a->cap.max_recv_wr > da->max_qp_wr ||
	    a->cap.max_send_sge > da->max_send_sge ||
	    a->cap.max_recv_sge > da->max_recv_sge)
		return ERR_PTR(-EINVAL);
	mq = mock_alloc(sizeof(*mq), GFP_KERNEL | __GFP_ZERO, MOCK_KMALLOC,
			CALLER);
	if (!mq)
		return ERR_PTR(-ENOMEM);
	mq->qp.device = pd->device;
	mq->qp.pd = pd;
	mq->qp.send_cq = a->send_cq;
	mq->qp.recv_cq = a->recv_cq;
	mq->qp.qp_context = a->qp_context;
	mq->qp.qp_type = a->qp_type;
	mq->qp.port = a->port_num;
	mq->qp.max_read_sge = min_t(u32, a->cap.max_send_sge, da->max_sge_rd);
	mq->max_send_wr = a->cap.max_send_wr +
			  a->cap.max_rdma_ctxs;	/* rdma_rw's room, as ib_core adds */
	mq->max_recv_wr = a->cap.max_recv_wr;
	qp_init(mq);
	return &mq->qp;
}

static void wr_free(struct mock_wr *w)
{
	list_del(&w->node);
	free(w->sge);
	free(w->data);
	free(w);
}

int ib_destroy_qp_user(struct ib_qp *qp, struct ib_udata *udata)
{
	struct mock_qp *mq = to_mq(qp);
	struct mock_wr *w, *t;

	mock_might_sleep(CALLER, "ib_destroy_qp()");
	if (qp->mrs_used)
		mock_fail_at(CALLER, "QP %u destroyed with %d MRs of its pool out",
			     qp->qp_num, qp->mrs_used);
	if (!list_empty(&qp->rdma_mrs))
		mock_fail_at(CALLER, "QP %u destroyed with its MR pool", qp->qp_num);
	/* Requests vanish with it (a drained QP has none). */
	list_for_each_entry_safe(w, t, &mq->sq, node)
		wr_free(w);
	list_for_each_entry_safe(w, t, &mq->rq, node)
		wr_free(w);
	list_del(&mq->node);
	mock_free(mq, KFREE_KINDS, "ib_destroy_qp", CALLER);
	return 0;
}

int ib_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask)
{
	static const int need[] = {
		[IB_QPS_INIT] = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				IB_QP_ACCESS_FLAGS,
		[IB_QPS_RTR] = IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			       IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			       IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER,
		[IB_QPS_RTS] = IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			       IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			       IB_QP_MAX_QP_RD_ATOMIC,
		[IB_QPS_ERR] = IB_QP_STATE,
	};
	static const enum ib_qp_state from[] = {
		[IB_QPS_INIT] = IB_QPS_RESET,
		[IB_QPS_RTR] = IB_QPS_INIT,
		[IB_QPS_RTS] = IB_QPS_RTR,
	};
	struct mock_qp *mq = to_mq(qp);
	enum ib_qp_state to = attr->qp_state;

	mock_might_sleep(CALLER, "ib_modify_qp()");
	if (!(mask & IB_QP_STATE) || to >= ARRAY_SIZE(need) || !need[to]) {
		mock_fail_at(CALLER, "ib_modify_qp() to state %d", to);
		return -EINVAL;
	}
	if (mask != need[to]) {
		mock_fail_at(CALLER, "ib_modify_qp() to %d with mask %#x, IB wants %#x",
			     to, mask, need[to]);
		return -EINVAL;
	}
	if (to != IB_QPS_ERR && mq->state != from[to])
		return -EINVAL;
	if (mock_check_error(&mock_ib_modify_errors))
		return -EINVAL;
	switch (to) {
	case IB_QPS_INIT:
		if (attr->port_num != 1)
			return -EINVAL;
		mq->access = attr->qp_access_flags;
		break;
	case IB_QPS_RTR:
		if (!attr->dest_qp_num || attr->dest_qp_num > 0xffffff ||
		    attr->rq_psn > 0xffffff ||
		    rdma_ah_get_port_num(&attr->ah_attr) != 1 ||
		    attr->ah_attr.type != RDMA_AH_ATTR_TYPE_ROCE ||
		    !(rdma_ah_get_ah_flags(&attr->ah_attr) & IB_AH_GRH))
			return -EINVAL;
		mq->dest_qpn = attr->dest_qp_num;
		mq->rq_psn = attr->rq_psn;
		break;
	case IB_QPS_RTS:
		if (attr->sq_psn > 0xffffff)
			return -EINVAL;
		mq->sq_psn = attr->sq_psn;
		break;
	default:
		break;
	}
	mq->state = to;
	return 0;
}

/* ---------------------------------------------------------------------
 * Posting
 */
static int cq_load(struct ib_cq *cq)
{
	struct mock_qp *mq;
	int n = 0;

	list_for_each_entry(mq, &qps, node) {
		if (mq->qp.send_cq == cq)
			n += mq->sq_used;
		if (mq->qp.recv_cq == cq)
			n += mq->rq_used;
	}
	return n;
}

static struct mock_wr *wr_new(const struct ib_sge *sge, int num_sge)
{
	struct mock_wr *w = calloc(1, sizeof(*w));

	if (!w || (num_sge && !(w->sge = calloc(num_sge, sizeof(*sge)))))
		kt_fatal(__FILE__, __LINE__, "out of memory");
	if (num_sge)
		memcpy(w->sge, sge, num_sge * sizeof(*sge));
	w->num_sge = num_sge;
	w->seq = ++seq;
	w->slots = 1;
	return w;
}

/* Queues @w on @mq's send queue, or refuses it as the HCA would. */
static bool on_wire(const struct mock_wr *w)
{
	return w->opcode == IB_WR_SEND || w->opcode == IB_WR_SEND_WITH_INV ||
	       w->opcode == IB_WR_RDMA_READ || w->opcode == IB_WR_RDMA_WRITE;
}

static int sq_add(struct mock_qp *mq, struct mock_wr *w, void *pc)
{
	struct mock_wr *o;
	bool fail_op = (int)w->opcode == mock_ib_post_fail_opcode;

	if (mq->state != IB_QPS_RTS && mq->state != IB_QPS_ERR) {
		free(w->sge);
		free(w);
		return -EINVAL;
	}
	if (fail_op)
		mock_ib_post_fail_opcode = -1;
	if (mq->sq_used + w->slots > mq->max_send_wr || fail_op ||
	    mock_check_error(&mock_ib_post_send_errors)) {
		free(w->sge);
		free(w);
		return -ENOMEM;
	}
	/*
	 * rxe runs a REG_MR again when it retransmits a request posted
	 * before it (req_retry()), and then fails it: "not free".
	 */
	if (w->opcode == IB_WR_REG_MR &&
	    mq->qp.device->ops.driver_id == RDMA_DRIVER_RXE)
		list_for_each_entry(o, &mq->sq, node)
			if (on_wire(o))
				w->replayed = true;
	mq->sq_used += w->slots;
	list_add_tail(&w->node, &mq->sq);
	if (mq->qp.send_cq && cq_load(mq->qp.send_cq) > mq->qp.send_cq->cqe)
		mock_fail_at(pc, "CQ overrun: %d requests for %d entries",
			     cq_load(mq->qp.send_cq), mq->qp.send_cq->cqe);
	return 0;
}

static int mock_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad)
{
	struct mock_qp *mq = to_mq(qp);
	const struct ib_rdma_wr *rw;
	const struct ib_reg_wr *reg;
	struct mock_wr *w;
	int err;

	for (; wr; wr = wr->next) {
		if (wr->num_sge > qp->device->attrs.max_send_sge) {
			*bad = wr;
			return -EINVAL;
		}
		w = wr_new(wr->sg_list, wr->num_sge);
		w->opcode = wr->opcode;
		w->cqe = wr->wr_cqe;
		w->signaled = wr->send_flags & IB_SEND_SIGNALED;
		switch (wr->opcode) {
		case IB_WR_SEND:
			break;
		case IB_WR_SEND_WITH_INV:
		case IB_WR_LOCAL_INV:
			w->inv_rkey = wr->ex.invalidate_rkey;
			break;
		case IB_WR_RDMA_WRITE:
		case IB_WR_RDMA_READ:
			rw = container_of(wr, struct ib_rdma_wr, wr);
			w->remote_addr = rw->remote_addr;
			w->rkey = rw->rkey;
			break;
		case IB_WR_REG_MR:
			reg = container_of(wr, struct ib_reg_wr, wr);
			w->mr = reg->mr;
			w->key = reg->key;
			w->access = reg->access;
			break;
		default:
			mock_fail_at(CALLER,
				     "posted opcode %d", wr->opcode);
		}
		if (w->signaled && !w->cqe)
			mock_fail_at(CALLER,
				     "a signaled request without a cqe");
		err = sq_add(mq, w, CALLER);
		if (err) {
			*bad = wr;
			return err;
		}
	}
	return 0;
}

static int mock_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad)
{
	struct mock_qp *mq = to_mq(qp);
	struct mock_wr *w;

	for (; wr; wr = wr->next) {
		if (mq->state == IB_QPS_RESET || !wr->wr_cqe ||
		    mq->rq_used >= mq->max_recv_wr ||
		    mock_check_error(&mock_ib_post_recv_errors)) {
			*bad = wr;
			return mq->state == IB_QPS_RESET || !wr->wr_cqe ?
			       -EINVAL : -ENOMEM;
		}
		w = wr_new(wr->sg_list, wr->num_sge);
		w->cqe = wr->wr_cqe;
		w->signaled = true;
		mq->rq_used++;
		list_add_tail(&w->node, &mq->rq);
		if (cq_load(qp->recv_cq) > qp->recv_cq->cqe)
			mock_fail_at(CALLER,
				     "CQ overrun: %d requests for %d entries",
				     cq_load(qp->recv_cq), qp->recv_cq->cqe);
	}
	return 0;
}

void ib_drain_qp(struct ib_qp *qp);

/* ---------------------------------------------------------------------
 * Memory regions and their pool, DMA mapping
 */
int ib_dma_virt_map_sg(struct ib_device *dev, struct scatterlist *sg,
		       int nents)
{
	struct scatterlist *s;
	int i;

	for_each_sg(sg, s, nents, i) {
		sg_dma_address(s) = (uintptr_t)sg_virt(s);
		sg_dma_len(s) = s->length;
	}
	return nents;
}

int ib_mr_pool_init(struct ib_qp *qp, struct list_head *list, int nr,
		    enum ib_mr_type type, u32 max_num_sg, u32 max_num_meta_sg)
{
	struct mock_mr *m;
	int i;

	mock_might_sleep(CALLER, "ib_mr_pool_init()");
	if (type != IB_MR_TYPE_MEM_REG ||
	    max_num_sg > qp->device->attrs.max_fast_reg_page_list_len)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		m = mock_alloc(sizeof(*m), GFP_KERNEL | __GFP_ZERO,
			       MOCK_KMALLOC, CALLER);
		if (!m) {
			ib_mr_pool_destroy(qp, list);
			return -ENOMEM;
		}
		m->seg_addr = calloc(max_num_sg, sizeof(u64));
		m->seg_len = calloc(max_num_sg, sizeof(u64));
		if (!m->seg_addr || !m->seg_len)
			kt_fatal(__FILE__, __LINE__, "out of memory");
		m->max_sg = max_num_sg;
		m->mr.device = qp->device;
		m->mr.pd = qp->pd;
		m->mr.type = type;
		next_key += 0x100;
		m->mr.lkey = m->mr.rkey = next_key & 0xffffff00;
		list_add_tail(&m->all, &mrs);
		list_add_tail(&m->mr.qp_entry, list);
	}
	return 0;
}

void ib_mr_pool_destroy(struct ib_qp *qp, struct list_head *list)
{
	struct mock_mr *m;
	struct ib_mr *mr;

	while ((mr = list_first_entry_or_null(list, struct ib_mr, qp_entry))) {
		list_del(&mr->qp_entry);
		m = container_of(mr, struct mock_mr, mr);
		list_del(&m->all);
		free(m->seg_addr);
		free(m->seg_len);
		mock_free(m, KFREE_KINDS, "ib_mr_pool_destroy", CALLER);
	}
}

struct ib_mr *ib_mr_pool_get(struct ib_qp *qp, struct list_head *list)
{
	struct ib_mr *mr = list_first_entry_or_null(list, struct ib_mr,
						    qp_entry);

	if (mr) {
		list_del(&mr->qp_entry);
		qp->mrs_used++;
	}
	return mr;
}

void ib_mr_pool_put(struct ib_qp *qp, struct list_head *list, struct ib_mr *mr)
{
	list_add(&mr->qp_entry, list);
	if (--qp->mrs_used < 0)
		mock_fail_at(CALLER, "ib_mr_pool_put() of an MR never taken");
}

/* A fast-registration page list: whole pages, but the ends. */
int ib_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg, int sg_nents,
		 unsigned int *sg_offset, unsigned int page_size)
{
	struct mock_mr *m = container_of(mr, struct mock_mr, mr);
	struct scatterlist *s;
	int i, n = 0;

	if (sg_offset || page_size != PAGE_SIZE)
		mock_fail_at(CALLER, "ib_map_mr_sg() with an offset or page size %u",
			     page_size);
	if (m->valid)
		mock_fail_at(CALLER, "ib_map_mr_sg() of an MR still registered");
	if (mock_check_error(&mock_ib_map_mr_errors))
		return -EINVAL;
	mr->length = 0;
	for_each_sg(sg, s, sg_nents, i) {
		u64 a = sg_dma_address(s), l = sg_dma_len(s);

		if (n == m->max_sg || (n && offset_in_page(a)) ||
		    (n && offset_in_page(m->seg_addr[n - 1] + m->seg_len[n - 1])))
			break;
		m->seg_addr[n] = a;
		m->seg_len[n] = l;
		if (!n)
			mr->iova = a;
		mr->length += l;
		n++;
	}
	m->nseg = n;
	mr->page_size = page_size;
	return n;
}

/* Copies [addr, addr + len) of a registered region; false if out of it. */
static bool mr_copy(struct mock_mr *m, u64 addr, void *dst, u64 len)
{
	u64 off, n;
	int i;

	if (addr < m->mr.iova || addr + len > m->mr.iova + m->mr.length)
		return false;
	off = addr - m->mr.iova;
	for (i = 0; i < m->nseg && len; i++) {
		if (off >= m->seg_len[i]) {
			off -= m->seg_len[i];
			continue;
		}
		n = min(m->seg_len[i] - off, len);
		memcpy(dst, (void *)(uintptr_t)(m->seg_addr[i] + off), n);
		dst += n;
		len -= n;
		off = 0;
	}
	return true;
}

static struct mock_mr *mr_find(struct ib_pd *pd, u32 key)
{
	struct mock_mr *m;

	list_for_each_entry(m, &mrs, all)
		if (m->mr.pd == pd && m->mr.rkey == key)
			return m;
	return NULL;
}

/* ---------------------------------------------------------------------
 * rdma_rw: one READ of a scatter list (the sges kept with the context)
 */
int rdma_rw_ctx_init(struct rdma_rw_ctx *ctx, struct ib_qp *qp, u32 port_num,
		     struct scatterlist *sg, u32 sg_cnt, u32 sg_offset,
		     u64 remote_addr, u32 rkey, enum dma_data_direction dir)
{
	struct scatterlist *s;
	struct ib_sge *sges;
	u32 i;

	mock_might_sleep(CALLER, "rdma_rw_ctx_init()");
	if (dir != DMA_FROM_DEVICE || sg_offset || !sg_cnt)
		mock_fail_at(CALLER, "rdma_rw_ctx_init(): only READs of whole lists are mocked");
	memset(ctx, 0, sizeof(*ctx));
	sges = mock_alloc(sg_cnt * sizeof(*sges), GFP_KERNEL, MOCK_KMALLOC,
			  CALLER);
	if (!sges)
		return -ENOMEM;
	ctx->map.wrs = mock_alloc(sizeof(*ctx->map.wrs),
				  GFP_KERNEL | __GFP_ZERO, MOCK_KMALLOC, CALLER);
	if (!ctx->map.wrs) {
		mock_free(sges, KFREE_KINDS, "rdma_rw_ctx_init", CALLER);
		return -ENOMEM;
	}
	for_each_sg(sg, s, sg_cnt, i) {
		sges[i].addr = (uintptr_t)sg_virt(s);
		sges[i].length = s->length;
	}
	ctx->map.sges = sges;
	ctx->map.wrs->remote_addr = remote_addr;
	ctx->map.wrs->rkey = rkey;
	ctx->map.wrs->wr.num_sge = sg_cnt;
	ctx->nr_ops = DIV_ROUND_UP(sg_cnt, qp->max_read_sge);
	return ctx->nr_ops;
}

int rdma_rw_ctx_post(struct rdma_rw_ctx *ctx, struct ib_qp *qp, u32 port_num,
		     struct ib_cqe *cqe, struct ib_send_wr *chain_wr)
{
	struct mock_wr *w;

	if (!ctx->map.wrs || chain_wr || !cqe)
		mock_fail_at(CALLER, "rdma_rw_ctx_post() of a context not set up, or chained");
	w = wr_new(ctx->map.sges, ctx->map.wrs->wr.num_sge);
	w->opcode = IB_WR_RDMA_READ;
	w->cqe = cqe;
	w->signaled = true;
	w->slots = ctx->nr_ops;
	w->remote_addr = ctx->map.wrs->remote_addr;
	w->rkey = ctx->map.wrs->rkey;
	return sq_add(to_mq(qp), w, CALLER);
}

void rdma_rw_ctx_destroy(struct rdma_rw_ctx *ctx, struct ib_qp *qp,
			 u32 port_num, struct scatterlist *sg, u32 sg_cnt,
			 enum dma_data_direction dir)
{
	if (!ctx->map.wrs)
		mock_fail_at(CALLER, "rdma_rw_ctx_destroy() of a context not set up");
	mock_free(ctx->map.sges, KFREE_KINDS, "rdma_rw_ctx_destroy", CALLER);
	mock_free(ctx->map.wrs, KFREE_KINDS, "rdma_rw_ctx_destroy", CALLER);
	memset(ctx, 0, sizeof(*ctx));
}

/* ---------------------------------------------------------------------
 * The fabric
 */
static struct mock_qp *qp_find(u32 qpn)
{
	struct mock_qp *mq;

	list_for_each_entry(mq, &qps, node)
		if (mq->qp.qp_num == qpn && !mq->lost)
			return mq;
	return NULL;
}

/* The responder of @a's requests, if one answers. */
static struct mock_qp *responder(struct mock_qp *a)
{
	struct mock_qp *b = qp_find(a->dest_qpn);

	if (!b || b->dest_qpn != a->qp.qp_num ||
	    (b->state != IB_QPS_RTR && b->state != IB_QPS_RTS) ||
	    a->sq_psn != b->rq_psn)
		return NULL;
	return b;
}

static void deliver(struct mock_qp *mq, struct mock_wr *w,
		    enum ib_wc_status status, u32 byte_len, bool inv,
		    u32 inv_rkey, bool recv)
{
	struct ib_cq *cq = recv ? mq->qp.recv_cq : mq->qp.send_cq;
	struct ib_cqe *cqe = w->cqe;
	void (*done)(struct ib_cq *cq, struct ib_wc *wc) = cqe ? cqe->done : NULL;
	bool signaled = w->signaled || status != IB_WC_SUCCESS;
	struct ib_wc wc = {};
	int held, pc;

	/*
	 * As an HCA: an unsignaled request's slot comes back only with the
	 * next completion of the send queue.
	 */
	if (recv) {
		mq->rq_used--;
	} else if (!signaled) {
		mq->sq_unsig += w->slots;
	} else {
		mq->sq_used -= w->slots + mq->sq_unsig;
		mq->sq_unsig = 0;
		mock_ib_send_cqes++;
	}
	wr_free(w);
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR)
		mq->state = IB_QPS_ERR;
	if (!signaled || !cqe)
		return;
	wc.wr_cqe = cqe;
	wc.status = status;
	wc.qp = &mq->qp;
	wc.byte_len = byte_len;
	wc.opcode = recv ? IB_WC_RECV : IB_WC_SEND;
	if (inv) {
		wc.wc_flags |= IB_WC_WITH_INVALIDATE;
		wc.ex.invalidate_rkey = inv_rkey;
	}
	/* ib_drain_qp()'s caller may hold its own locks meanwhile */
	held = mock_locks_held();
	pc = preempt_count();
	mock_softirq_enter();
	done(cq, &wc);
	mock_softirq_exit();
	if (mock_locks_held() != held || preempt_count() != pc ||
	    !mock_irqs_enabled())
		mock_fail_at((void *)done + 1,
			     "completion handler returned with %d locks held (%d before), preempt_count %#x",
			     mock_locks_held(), held, preempt_count());
}

static u64 sge_len(const struct mock_wr *w)
{
	u64 n = 0;
	int i;

	for (i = 0; i < w->num_sge; i++)
		n += w->sge[i].length;
	return n;
}

/* A SEND from @a's head request @w to @b: false if @b has no buffer (RNR). */
static bool do_send(struct mock_qp *a, struct mock_wr *w, struct mock_qp *b)
{
	u64 len = sge_len(w), off = 0;
	bool inv = w->opcode == IB_WR_SEND_WITH_INV;
	u32 inv_rkey = w->inv_rkey;
	struct mock_msg *msg;
	struct mock_wr *r;
	struct mock_mr *m;
	struct mock_reg *g;
	int i;

	if (b->peer) {
		msg = malloc(sizeof(*msg) + len);
		if (!msg)
			kt_fatal(__FILE__, __LINE__, "out of memory");
		for (i = 0; i < w->num_sge; i++) {
			memcpy(msg->data + off,
			       (void *)(uintptr_t)w->sge[i].addr,
			       w->sge[i].length);
			off += w->sge[i].length;
		}
		msg->len = len;
		msg->inv = inv;
		msg->rkey = w->inv_rkey;
		if (inv)
			list_for_each_entry(g, &b->peer->regs, node)
				if (g->rkey == w->inv_rkey)
					g->valid = false;
		list_add_tail(&msg->node, &b->peer->inbox);
		deliver(a, w, IB_WC_SUCCESS, 0, false, 0, false);
		return true;
	}
	r = list_first_entry_or_null(&b->rq, struct mock_wr, node);
	if (!r)
		return false;
	if (len > sge_len(r)) {
		deliver(b, r, IB_WC_LOC_LEN_ERR, 0, false, 0, true);
		deliver(a, w, IB_WC_REM_INV_REQ_ERR, 0, false, 0, false);
		return true;
	}
	if (inv) {
		m = mr_find(b->qp.pd, w->inv_rkey);
		if (!m || !m->valid) {
			deliver(b, r, IB_WC_LOC_PROT_ERR, 0, false, 0, true);
			deliver(a, w, IB_WC_REM_OP_ERR, 0, false, 0, false);
			return true;
		}
		m->valid = false;
	}
	/* one receive sge, as kprog posts them */
	for (i = 0; i < w->num_sge; i++) {
		memcpy((void *)(uintptr_t)(r->sge[0].addr + off),
		       (void *)(uintptr_t)w->sge[i].addr, w->sge[i].length);
		off += w->sge[i].length;
	}
	deliver(a, w, IB_WC_SUCCESS, 0, false, 0, false);
	deliver(b, r, IB_WC_SUCCESS, len, inv, inv_rkey, true);
	return true;
}

static void do_read(struct mock_qp *a, struct mock_wr *w, struct mock_qp *b)
{
	u64 addr = w->remote_addr, len = sge_len(w);
	struct mock_reg *g, *found = NULL;
	struct mock_mr *m;
	bool ok = false;
	int i;

	if (b->peer) {
		list_for_each_entry(g, &b->peer->regs, node)
			if (g->rkey == w->rkey && g->valid)
				found = g;
		ok = found && addr >= (uintptr_t)found->buf &&
		     addr + len <= (uintptr_t)found->buf + found->len;
		for (i = 0; ok && i < w->num_sge; i++) {
			memcpy((void *)(uintptr_t)w->sge[i].addr,
			       (void *)(uintptr_t)addr, w->sge[i].length);
			addr += w->sge[i].length;
		}
	} else {
		m = mr_find(b->qp.pd, w->rkey);
		ok = m && m->valid && (m->access & IB_ACCESS_REMOTE_READ) &&
		     (b->access & IB_ACCESS_REMOTE_READ) &&
		     addr >= m->mr.iova &&
		     addr + len <= m->mr.iova + m->mr.length;
		for (i = 0; ok && i < w->num_sge; i++) {
			mr_copy(m, addr, (void *)(uintptr_t)w->sge[i].addr,
				w->sge[i].length);
			addr += w->sge[i].length;
		}
	}
	deliver(a, w, ok ? IB_WC_SUCCESS : IB_WC_REM_ACCESS_ERR, len, false, 0,
		false);
}

/* Moves @a's head request; false if it cannot move now. */
static bool qp_step(struct mock_qp *a)
{
	struct mock_wr *w = list_first_entry_or_null(&a->sq, struct mock_wr,
						     node);
	struct mock_qp *b;
	struct mock_mr *m;

	if (!w)
		return false;
	if (a->state == IB_QPS_ERR) {
		deliver(a, w, IB_WC_WR_FLUSH_ERR, 0, false, 0, false);
		return true;
	}
	if ((int)w->opcode == mock_ib_wc_fail_opcode) {
		/* as rxe fails a local operation: the QP goes to error */
		mock_ib_wc_fail_opcode = -1;
		deliver(a, w, IB_WC_LOC_QP_OP_ERR, 0, false, 0, false);
		return true;
	}
	switch (w->opcode) {
	case IB_WR_REG_MR:
		m = container_of(w->mr, struct mock_mr, mr);
		if (w->replayed) {
			pr_warn("mock_ib: rxe_reg_fast_mr: mr->lkey = 0x%x not free (REG_MR posted behind a request on the wire)\n",
				w->mr->lkey);
			deliver(a, w, IB_WC_LOC_QP_OP_ERR, 0, false, 0, false);
			return true;
		}
		/* rxe_reg_fast_mr(): only a QP of the MR's PD registers it */
		if (w->mr->pd != a->qp.pd) {
			pr_warn("mock_ib: rxe_reg_fast_mr: qp->pd and mr->pd don't match\n");
			deliver(a, w, IB_WC_LOC_QP_OP_ERR, 0, false, 0, false);
			return true;
		}
		if (m->valid || w->key != w->mr->rkey) {
			deliver(a, w, IB_WC_MW_BIND_ERR, 0, false, 0, false);
			return true;
		}
		m->valid = true;
		m->access = w->access;
		deliver(a, w, IB_WC_SUCCESS, 0, false, 0, false);
		return true;
	case IB_WR_LOCAL_INV:
		m = mr_find(a->qp.pd, w->inv_rkey);
		if (!m || !m->valid) {
			deliver(a, w, IB_WC_LOC_PROT_ERR, 0, false, 0, false);
			return true;
		}
		m->valid = false;
		deliver(a, w, IB_WC_SUCCESS, 0, false, 0, false);
		return true;
	default:
		break;
	}
	b = responder(a);
	if (!b) {
		/* Nobody acknowledges: the retries run out. */
		deliver(a, w, IB_WC_RETRY_EXC_ERR, 0, false, 0, false);
		return true;
	}
	switch (w->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_INV:
		return do_send(a, w, b);
	case IB_WR_RDMA_READ:
		do_read(a, w, b);
		return true;
	case IB_WR_RDMA_WRITE:
		if (sge_len(w))
			mock_fail_at(NULL, "an RDMA WRITE with data");
		if (!b->peer && !(b->access & IB_ACCESS_REMOTE_WRITE)) {
			deliver(a, w, IB_WC_REM_ACCESS_ERR, 0, false, 0, false);
			return true;
		}
		deliver(a, w, IB_WC_SUCCESS, 0, false, 0, false);
		return true;
	default:
		mock_fail_at(NULL, "opcode %d on the fabric", w->opcode);
		deliver(a, w, IB_WC_GENERAL_ERR, 0, false, 0, false);
		return true;
	}
}

/* A QP in error flushes its receives too. */
static bool qp_flush_recv(struct mock_qp *mq)
{
	struct mock_wr *r = list_first_entry_or_null(&mq->rq, struct mock_wr,
						     node);

	if (mq->state != IB_QPS_ERR || !r || !list_empty(&mq->sq))
		return false;
	deliver(mq, r, IB_WC_WR_FLUSH_ERR, 0, false, 0, true);
	return true;
}

bool mock_ib_step(void)
{
	struct mock_qp *mq, *best;
	struct mock_wr *w;
	u64 bseq;

	/* The oldest head that can move, trying in order of age. */
	for (;;) {
		best = NULL;
		bseq = U64_MAX;
		list_for_each_entry(mq, &qps, node) {
			w = list_first_entry_or_null(&mq->sq, struct mock_wr,
						     node);
			if (!w || w->seq >= bseq ||
			    (mq->state != IB_QPS_ERR &&
			     (w->opcode < 64 && (mock_ib_hold & BIT_ULL(w->opcode)))))
				continue;
			/* RNR: a SEND its responder cannot take yet */
			if (mq->state == IB_QPS_RTS &&
			    (w->opcode == IB_WR_SEND ||
			     w->opcode == IB_WR_SEND_WITH_INV) &&
			    responder(mq) && !responder(mq)->peer &&
			    list_empty(&responder(mq)->rq))
				continue;
			best = mq;
			bseq = w->seq;
		}
		if (best)
			return qp_step(best);
		list_for_each_entry(mq, &qps, node)
			if (qp_flush_recv(mq))
				return true;
		return false;
	}
}

int mock_ib_run(void)
{
	int n = 0;

	while (mock_ib_step() || mock_run_work_one())
		n++;
	return n;
}

int mock_ib_pending(int opcode)
{
	struct mock_qp *mq;
	struct mock_wr *w;
	int n = 0;

	list_for_each_entry(mq, &qps, node)
		list_for_each_entry(w, &mq->sq, node)
			n += opcode < 0 || w->opcode == opcode;
	return n;
}

int mock_ib_nr_qps(void)
{
	struct mock_qp *mq;
	int n = 0;

	list_for_each_entry(mq, &qps, node)
		n += !mq->peer;
	return n;
}

struct ib_qp *mock_ib_qp(u32 qpn)
{
	struct mock_qp *mq = qp_find(qpn);

	return mq && !mq->peer ? &mq->qp : NULL;
}

enum ib_qp_state mock_ib_qp_state(struct ib_qp *qp)
{
	return to_mq(qp)->state;
}

/* Flushes everything @qp has posted, as ib_core's drain waits for. */
void ib_drain_qp(struct ib_qp *qp)
{
	struct mock_qp *mq = to_mq(qp);
	struct mock_wr *w;

	mock_might_sleep(CALLER, "ib_drain_qp()");
	mq->state = IB_QPS_ERR;
	while ((w = list_first_entry_or_null(&mq->sq, struct mock_wr, node)))
		deliver(mq, w, IB_WC_WR_FLUSH_ERR, 0, false, 0, false);
	while ((w = list_first_entry_or_null(&mq->rq, struct mock_wr, node)))
		deliver(mq, w, IB_WC_WR_FLUSH_ERR, 0, false, 0, true);
}

/* ---------------------------------------------------------------------
 * Nodes played by the test
 */
struct mock_ib_peer *mock_ib_peer_new(u8 host)
{
	struct mock_ib_peer *p = calloc(1, sizeof(*p));

	if (!p)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	p->mq.peer = p;
	p->mq.qp.pd = &p->pd;
	p->mq.max_send_wr = 1 << 20;
	p->mq.access = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;
	INIT_LIST_HEAD(&p->inbox);
	INIT_LIST_HEAD(&p->regs);
	qp_init(&p->mq);
	p->mq.state = IB_QPS_INIT;
	p->mq.sq_psn = (0x5000 + host * 0x111) & 0xffffff;
	p->next_rkey = 0x7700 + host;
	list_add_tail(&p->node, &peers);
	return p;
}

u32 mock_ib_peer_qpn(struct mock_ib_peer *p)
{
	return p->mq.qp.qp_num;
}

u32 mock_ib_peer_psn(struct mock_ib_peer *p)
{
	return p->mq.sq_psn;
}

void mock_ib_peer_connect(struct mock_ib_peer *p, u32 qpn, u32 psn)
{
	p->mq.dest_qpn = qpn;
	p->mq.rq_psn = psn;
	p->mq.state = IB_QPS_RTS;
}

void mock_ib_peer_send(struct mock_ib_peer *p, const void *buf, u32 len,
		       bool inv, u32 inv_rkey)
{
	struct ib_sge sge = { .length = len };
	struct mock_wr *w = wr_new(&sge, 1);

	w->data = malloc(len ?: 1);
	if (!w->data)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	memcpy(w->data, buf, len);
	w->sge[0].addr = (uintptr_t)w->data;
	w->opcode = inv ? IB_WR_SEND_WITH_INV : IB_WR_SEND;
	w->inv_rkey = inv_rkey;
	if (sq_add(&p->mq, w, CALLER))
		kt_fatal(__FILE__, __LINE__, "the peer's QP is not connected");
}

bool mock_ib_peer_recv(struct mock_ib_peer *p, void *buf, u32 *len,
		       bool *inv, u32 *inv_rkey)
{
	struct mock_msg *m = list_first_entry_or_null(&p->inbox,
						      struct mock_msg, node);

	if (!m)
		return false;
	memcpy(buf, m->data, m->len);
	*len = m->len;
	if (inv)
		*inv = m->inv;
	if (inv_rkey)
		*inv_rkey = m->rkey;
	list_del(&m->node);
	free(m);
	return true;
}

u32 mock_ib_peer_reg(struct mock_ib_peer *p, const void *buf, u64 len)
{
	struct mock_reg *g = calloc(1, sizeof(*g));

	if (!g)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	g->buf = buf;
	g->len = len;
	g->rkey = (p->next_rkey += 0x100);
	g->valid = true;
	list_add_tail(&g->node, &p->regs);
	return g->rkey;
}

int mock_ib_peer_read(struct mock_ib_peer *p, void *dst, u64 addr, u32 rkey,
		      u64 len)
{
	struct mock_qp *b = qp_find(p->mq.dest_qpn);
	struct mock_mr *m = b ? mr_find(b->qp.pd, rkey) : NULL;

	if (!m || !m->valid || !(m->access & IB_ACCESS_REMOTE_READ) ||
	    !mr_copy(m, addr, dst, len))
		return -EACCES;
	return 0;
}

void mock_ib_peer_lost(struct mock_ib_peer *p)
{
	struct mock_wr *w, *t;

	p->mq.lost = true;
	p->mq.state = IB_QPS_ERR;
	list_for_each_entry_safe(w, t, &p->mq.sq, node)
		wr_free(w);
	p->mq.sq_used = 0;
	p->mq.sq_unsig = 0;
}

static void peer_free(struct mock_ib_peer *p)
{
	struct mock_msg *m, *mt;
	struct mock_reg *g, *gt;
	struct mock_wr *w, *t;

	list_for_each_entry_safe(w, t, &p->mq.sq, node)
		wr_free(w);
	list_for_each_entry_safe(m, mt, &p->inbox, node)
		free(m);
	list_for_each_entry_safe(g, gt, &p->regs, node)
		free(g);
	list_del(&p->mq.node);
	list_del(&p->node);
	free(p);
}

/* ---------------------------------------------------------------------
 * Per test
 */
void mock_ib_reset(void)
{
	mock_ib_modify_errors = mock_ib_post_send_errors = 0;
	mock_ib_post_recv_errors = mock_ib_resolve_errors = 0;
	mock_ib_query_port_errors = mock_ib_map_mr_errors = 0;
	mock_ib_post_fail_opcode = mock_ib_wc_fail_opcode = -1;
	mock_ib_hold = 0;
	live_pds = live_cqs = gid_refs = 0;
	next_qpn = 0x100;
	next_key = 0x10000;
}

static void forget(bool check)
{
	struct mock_ib_peer *p, *pt;
	struct mock_dev *md, *mt;
	struct mock_qp *mq, *qt;

	list_for_each_entry_safe(p, pt, &peers, node)
		peer_free(p);
	if (check) {
		list_for_each_entry(mq, &qps, node)
			mock_fail_after("QP %u left", mq->qp.qp_num);
		if (!list_empty(&mrs))
			mock_fail_after("MRs left");
		if (live_pds || live_cqs)
			mock_fail_after("%ld PDs and %ld CQs left", live_pds,
					live_cqs);
		if (gid_refs)
			mock_fail_after("%ld GID attribute references left",
					gid_refs);
		if (client)
			mock_fail_after("an ib_client left registered");
	}
	/* The memory itself is the allocator's to report (or forget). */
	list_for_each_entry_safe(mq, qt, &qps, node)
		list_del_init(&mq->node);
	INIT_LIST_HEAD(&mrs);
	list_for_each_entry_safe(md, mt, &devs, node) {
		if (check && refcount_read(&md->ib.refcount) != 1)
			mock_fail_after("device references left");
		list_del(&md->node);
		free(md);
	}
	client = NULL;
}

void mock_ib_check(void)
{
	forget(true);
}

void mock_ib_forget(void)
{
	forget(false);
}
