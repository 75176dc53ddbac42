// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/fake_xport.c: a recording network transport that plays the
 * other nodes of a job (see fake_xport.h).
 */
#include <linux/slab.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "op.h"
#include "msg.h"
#include "umem.h"
#include "transport.h"
#include "ktest.h"
#include "fake_xport.h"

struct kt_fx kt_fx;

/* The node of @rank in @job. */
static u32 fx_node(struct kprog_job *job, u32 rank)
{
	return job->rank_node ? job->rank_node[rank] : 0;
}

static int fx_send_env(struct kprog_job *job, const struct kprog_peer_ref *peer,
		       struct kprog_msg *msg)
{
	struct kt_fx_sent *s;

	if (peer->kind != KPROG_PEER_REMOTE || peer->ep ||
	    (kprog_job_is_local(job, msg->env.dst) && !job->net_only))
		kt_fail(__FILE__, __LINE__,
			"send_env of the network transport to a local rank %u",
			msg->env.dst);
	if (peer->node != fx_node(job, msg->env.dst))
		kt_fail(__FILE__, __LINE__, "send_env: rank %u on node %u, not %u",
			msg->env.dst, fx_node(job, msg->env.dst), peer->node);
	if (kt_fx.send_err)
		return kt_fx.send_err;
	if (kt_fx.bounce && msg->may_bounce)
		return -ENOBUFS;
	if (kt_fx.nsent == KT_FX_MAX)
		kt_fatal(__FILE__, __LINE__, "fake transport: too many sends");
	s = &kt_fx.sent[kt_fx.nsent++];
	s->env = msg->env;
	s->send_req = msg->send_req;
	s->may_bounce = msg->may_bounce;
	s->msg = msg;
	s->cookie = msg->rd.net.cookie;
	return 0;
}

static int fx_get_handle(struct kprog_op *sop, struct kprog_msg *msg)
{
	if (kt_fx.get_handle_err)
		return kt_fx.get_handle_err;
	kt_fx.handles++;
	sop->xhandle = &kt_fx;
	msg->rd.net.conn = &kt_fx;
	msg->rd.net.cookie = 0xc0de0000 + sop->req_id;
	msg->rd.net.addr = sop->buf.nr_iov ? sop->buf.iov[0].base : 0;
	msg->rd.net.len = sop->buf.len;
	msg->rd.net.rkey = 77;
	return 0;
}

static void fx_put_handle(struct kprog_op *sop)
{
	if (sop->xhandle != &kt_fx)
		kt_fail(__FILE__, __LINE__, "put_handle without get_handle");
	sop->xhandle = NULL;
	kt_fx.handles--;
}

static void fx_report(struct kprog_xfer *x, u64 bytes, int err)
{
	if (kt_fx.done_in_softirq)
		mock_softirq_enter();
	kprog_xfer_done(x, bytes, err);
	if (kt_fx.done_in_softirq)
		mock_softirq_exit();
}

/* The remote data lands in the receive buffer (the RDMA READ). */
static u64 fx_copy(struct kprog_xfer *x, const void *data, int *err)
{
	*err = 0;
	if (!data)
		return 0;
	return kprog_umem_copy(&x->rop->buf, NULL, data, x->len, NULL, NULL,
			       err);
}

static int fx_pull(struct kprog_xfer *x, bool inline_ok)
{
	struct kprog_msg *msg = x->msg;
	struct kt_fx_pull *p;
	u64 done;
	int err;

	if (msg->xport != &kt_fx_xport || !kprog_msg_is_rndv(msg))
		kt_fail(__FILE__, __LINE__, "pull of a message not ours");
	if (kt_fx.npulls == KT_FX_MAX)
		kt_fatal(__FILE__, __LINE__, "fake transport: too many pulls");
	p = &kt_fx.pulls[kt_fx.npulls++];
	p->env = msg->env;
	p->cookie = msg->rd.net.cookie;
	p->addr = msg->rd.net.addr;
	p->len = msg->rd.net.len;
	p->rkey = msg->rd.net.rkey;
	p->inline_ok = inline_ok;
	if (kt_fx.pull_err)
		return kt_fx.pull_err;
	if (kt_fx.pull_now) {
		done = fx_copy(x, kt_fx.pull_data, &err);
		kprog_xfer_done(x, done, err);
		return 0;
	}
	p->x = x;
	return 0;
}

static void fx_fin(struct kprog_msg *msg, u64 bytes, int err)
{
	struct kt_fx_fin *f;

	if (kt_fx.nfins == KT_FX_MAX)
		kt_fatal(__FILE__, __LINE__, "fake transport: too many fins");
	f = &kt_fx.fins[kt_fx.nfins++];
	f->env = msg->env;
	f->cookie = msg->rd.net.cookie;
	f->bytes = bytes;
	f->err = err;
}

static void fx_rank_left(struct kprog_job *job, u32 rank)
{
	if (kt_fx.nleft == KT_FX_MAX)
		kt_fatal(__FILE__, __LINE__, "fake transport: too many rank_left");
	if (job->net != &kt_fx_xport && job->net->send_env != fx_send_env)
		kt_fail(__FILE__, __LINE__, "rank_left of a job not using the fake");
	kt_fx.left[kt_fx.nleft++] = rank;
}

static int fx_net_conn(struct kprog_net_conn *c)
{
	if (kt_fx.nconns == KT_FX_MAX)
		kt_fatal(__FILE__, __LINE__, "fake transport: too many net_conn");
	kt_fx.conns[kt_fx.nconns++] = c->peer;
	if (kt_fx.conn_err)
		return kt_fx.conn_err;
	c->status = KPROG_NET_CONNECTED;
	return 0;
}

const struct kprog_transport kt_fx_xport = {
	.name = "fake",
	.features = KPROG_XF_REQUIRE_REGISTRATION | KPROG_XF_SOFTIRQ,
	.send_env = fx_send_env,
	.get_handle = fx_get_handle,
	.put_handle = fx_put_handle,
	.pull = fx_pull,
	.fin = fx_fin,
	.rank_left = fx_rank_left,
	.net_conn = fx_net_conn,
};

void kt_fx_install(void)
{
	memset(&kt_fx, 0, sizeof(kt_fx));
	kprog_xport_set_net(&kt_fx_xport);
}

void kt_fx_pull_done(int i, const void *data, int err)
{
	struct kprog_xfer *x;
	u64 done;
	int cerr;

	if (i < 0 || i >= kt_fx.npulls || !kt_fx.pulls[i].x)
		kt_fatal(__FILE__, __LINE__, "kt_fx_pull_done(%d): no such pull",
			 i);
	x = kt_fx.pulls[i].x;
	kt_fx.pulls[i].x = NULL;
	done = err ? 0 : fx_copy(x, data, &cerr);
	fx_report(x, done, err ?: cerr);
}

static struct kprog_msg *fx_sent_msg(int i)
{
	if (i < 0 || i >= kt_fx.nsent || !kt_fx.sent[i].msg)
		kt_fatal(__FILE__, __LINE__, "fake transport: no sent message %d",
			 i);
	return kt_fx.sent[i].msg;
}

u64 kt_fx_remote_read(int i, void *buf, u64 len)
{
	struct kprog_msg *msg = fx_sent_msg(i);
	const struct kprog_ubuf *b = &msg->sop->buf;
	u64 pos = 0, n;
	u32 k;

	for (k = 0; k < b->nr_iov && pos < len; k++) {
		n = min(b->iov[k].len, len - pos);
		memcpy(buf + pos, (void *)(uintptr_t)b->iov[k].base, n);
		pos += n;
	}
	return pos;
}

void kt_fx_remote_fin(int i, u64 bytes, int err)
{
	struct kprog_msg *msg = fx_sent_msg(i);

	kt_fx.sent[i].msg = NULL;
	if (kprog_msg_is_rndv(msg)) {
		if (msg->sop->xhandle)
			fx_put_handle(msg->sop);
		kprog_send_done(msg->sop, &msg->env, bytes, err);
	}
	kprog_msg_free(msg);
}

static int fx_arrive(struct kt_ep *dst, struct kprog_env *env,
		     const void *data, const struct kprog_rdesc *rd,
		     bool softirq)
{
	struct kprog_ep *ep = dst->ep;
	struct kprog_msg *msg;
	int err;

	kprog_ep_get(ep);
	if (softirq)
		mock_softirq_enter();
	msg = kprog_msg_alloc(env, softirq ? GFP_ATOMIC : GFP_KERNEL);
	if (!msg) {
		err = -ENOMEM;
		goto out;
	}
	if (rd) {
		msg->xport = &kt_fx_xport;
		msg->rd = *rd;
	} else {
		err = kprog_msg_alloc_data(msg, softirq ? GFP_ATOMIC :
					   GFP_KERNEL);
		if (err) {
			kprog_msg_free(msg);
			goto out;
		}
		if (env->len)
			memcpy(msg->data, data, env->len);
	}
	err = kprog_arrive(ep, msg);
	if (err)
		kprog_msg_free(msg);
out:
	if (softirq)
		mock_softirq_exit();
	kprog_ep_put(ep);
	return err;
}

int kt_fx_eager(struct kt_ep *dst, u32 src, u32 context, s32 tag,
		const void *data, u64 len, bool softirq)
{
	struct kprog_env env = {
		.context = context, .src = src, .dst = dst->ep->rank,
		.tag = tag, .len = len, .flags = kt_fx.env_flags,
	};

	return fx_arrive(dst, &env, data, NULL, softirq);
}

int kt_fx_rndv(struct kt_ep *dst, u32 src, u32 context, s32 tag, u64 len,
	       u64 cookie, bool softirq)
{
	struct kprog_env env = {
		.context = context, .src = src, .dst = dst->ep->rank,
		.tag = tag, .len = len, .flags = KPROG_ENV_RNDV | kt_fx.env_flags,
	};
	struct kprog_rdesc rd = {
		.net = { .conn = &kt_fx, .cookie = cookie, .addr = 0x7000000,
			 .len = len, .rkey = 42 },
	};

	return fx_arrive(dst, &env, NULL, &rd, softirq);
}

void kt_fx_node_lost(struct kt_ep *e, u32 node)
{
	struct kprog_job *job = kprog_ep_job(e->ep);
	u32 r;
	int i;

	/* The connection is gone: transfers with the node end ... */
	for (i = 0; i < kt_fx.npulls; i++)
		if (kt_fx.pulls[i].x &&
		    fx_node(job, kt_fx.pulls[i].env.src) == node)
			kt_fx_pull_done(i, NULL, -ECONNRESET);
	for (i = 0; i < kt_fx.nsent; i++)
		if (kt_fx.sent[i].msg &&
		    fx_node(job, kt_fx.sent[i].env.dst) == node)
			kt_fx_remote_fin(i, 0, -ECONNRESET);
	/* ... and the core forgets its ranks. */
	for (r = 0; r < job->size; r++)
		if (fx_node(job, r) == node)
			kprog_peer_gone(job, r, -ECONNRESET);
}

void kt_fx_teardown(void)
{
	int i;

	for (i = 0; i < kt_fx.npulls; i++)
		if (kt_fx.pulls[i].x)
			kt_fx_pull_done(i, NULL, -ECONNRESET);
	for (i = 0; i < kt_fx.nsent; i++)
		if (kt_fx.sent[i].msg)
			kt_fx_remote_fin(i, 0, -ECONNRESET);
	if (kt_fx.handles)
		kt_fail(__FILE__, __LINE__,
			"fake transport: %d handles not put", kt_fx.handles);
	kprog_xport_set_net(NULL);
	kt_fx.npulls = 0;
	kt_fx.nsent = 0;
}

void kt_fx_forget(void)
{
	memset(&kt_fx, 0, sizeof(kt_fx));
	kprog_xport_set_net(NULL);
}
