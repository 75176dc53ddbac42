// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Client of the generic netlink families "kprog" (kprog.ko) and
 * "kprog_bench" (kprog_bench.ko) on libnl-genl-3 (see kprog_nl.h). One
 * request at a time: send, then read until the ACK (do commands) or
 * NLMSG_DONE (dumps) or an error, with a receive timeout so that a kernel
 * that never answers cannot hang the caller.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include "cpulist.h"
#include "kprog_nl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct kprog_nl {
	struct nl_sock *sk;
	enum kprog_family which;
	int family;
	char ext_msg[256];	/* extended ack of the last failed request */
	char errbuf[320];	/* kprog_nl_strerror's result */
};

/* Room for the attributes of either family. */
#define TB_MAX	(KPROG_A_MAX > KPROG_BENCH_A_MAX ? KPROG_A_MAX : KPROG_BENCH_A_MAX)

/*
 * What the attributes must look like; longer ones are accepted (newer
 * kernels). Every counter kprog_stat_attr() names must be NLA_U64 here.
 */
static struct nla_policy kprog_policy[KPROG_A_MAX + 1] = {
	[KPROG_A_CPU] = { .type = NLA_U32 },
	[KPROG_A_STAT_EVENTS] = { .type = NLA_U64 },
	[KPROG_A_STAT_TASKLET_RUNS] = { .type = NLA_U64 },
	[KPROG_A_STAT_TASKLET_NS] = { .type = NLA_U64 },
	[KPROG_A_STAT_WORK_ITEMS] = { .type = NLA_U64 },
	[KPROG_A_STAT_WORK_NS] = { .type = NLA_U64 },
	[KPROG_A_STAT_BYTES] = { .type = NLA_U64 },
	[KPROG_A_STAT_WAKEUPS] = { .type = NLA_U64 },
	[KPROG_A_STAT_NET_PIN_HITS] = { .type = NLA_U64 },
	[KPROG_A_STAT_NET_PIN_MISSES] = { .type = NLA_U64 },
};

static struct nla_policy bench_policy[KPROG_BENCH_A_MAX + 1] = {
	[KPROG_BENCH_A_CPU] = { .type = NLA_U32 },
	[KPROG_BENCH_A_IRQ_HZ] = { .type = NLA_U32 },
	[KPROG_BENCH_A_IRQ_MODE] = { .type = NLA_U32 },
	[KPROG_BENCH_A_IRQ_LOAD_NS] = { .type = NLA_U32 },
	[KPROG_BENCH_A_IRQ_DURATION_MS] = { .type = NLA_U32 },
	[KPROG_BENCH_A_IRQ_CPUS] = { .type = NLA_UNSPEC },
	[KPROG_BENCH_A_IRQ_RUNNING] = { .type = NLA_U8 },
	[KPROG_BENCH_A_STAT_HARDIRQ_RUNS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_HARDIRQ_NS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_TASKLET_RUNS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_TASKLET_NS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_WORK_ITEMS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_WORK_NS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_WAKEUPS] = { .type = NLA_U64 },
	[KPROG_BENCH_A_STAT_COALESCED] = { .type = NLA_U64 },
};

/* What differs between the two families. */
static const struct family_desc {
	const char *name;
	int version;
	int maxattr;
	struct nla_policy *policy;
	int cpu_attr;
	uint8_t get_stats, reset_stats;
} families[] = {
	[KPROG_FAMILY_KPROG] = { KPROG_GENL_NAME, KPROG_GENL_VERSION, KPROG_A_MAX, kprog_policy,
				 KPROG_A_CPU, KPROG_CMD_GET_STATS, KPROG_CMD_RESET_STATS },
	[KPROG_FAMILY_BENCH] = { KPROG_BENCH_GENL_NAME, KPROG_BENCH_GENL_VERSION, KPROG_BENCH_A_MAX,
				 bench_policy, KPROG_BENCH_A_CPU, KPROG_BENCH_CMD_GET_STATS,
				 KPROG_BENCH_CMD_RESET_STATS },
};

const char *kprog_family_name(enum kprog_family which)
{
	return families[which].name;
}

static const char *const mode_names[__KPROG_BENCH_IRQ_MODE_MAX] = {
	[KPROG_BENCH_IRQ_HARDIRQ] = "hardirq",
	[KPROG_BENCH_IRQ_TASKLET] = "tasklet",
	[KPROG_BENCH_IRQ_WORK] = "work",
	[KPROG_BENCH_IRQ_WAKE] = "wake",
};

const char *kprog_irq_mode_name(uint32_t mode)
{
	return mode < __KPROG_BENCH_IRQ_MODE_MAX ? mode_names[mode] : NULL;
}

int kprog_irq_mode_parse(const char *name)
{
	int m;

	for (m = 0; m < __KPROG_BENCH_IRQ_MODE_MAX; m++)
		if (!strcmp(name, mode_names[m]))
			return m;
	return -1;
}

/* libnl's own error codes, for failures that are not the kernel's errno. */
static int nlerr_to_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case NLE_NOMEM: return ENOMEM;
	case NLE_PERM: return EPERM;
	case NLE_AGAIN: return ETIMEDOUT;
	case NLE_INTR: return EINTR;
	case NLE_OBJ_NOTFOUND: return ENOENT;
	case NLE_NOACCESS: return EACCES;
	case NLE_MSGSIZE: return EMSGSIZE;
	case NLE_MSG_TRUNC:
	case NLE_MSG_TOOSHORT:
	case NLE_MSG_OVERFLOW:
	case NLE_PARSE_ERR:
	case NLE_SEQ_MISMATCH:
	case NLE_MSGTYPE_NOSUPPORT:
	case NLE_INVAL:
	case NLE_RANGE:
		return EPROTO;
	default:
		return EIO;
	}
}

int kprog_nl_parse_stats(enum kprog_family which, struct nlmsghdr *nlh,
			 struct kprog_cpu_stats *out)
{
	const struct family_desc *f = &families[which];
	struct nlattr *tb[TB_MAX + 1];
	int s, a;

	if (genlmsg_parse(nlh, 0, tb, f->maxattr, f->policy) < 0 || !tb[f->cpu_attr])
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->cpu = (int)nla_get_u32(tb[f->cpu_attr]);
	if (out->cpu < 0)
		return -EPROTO;
	for (s = 0; s < KS_NSTAT; s++) {
		a = kprog_stat_attr(which, s);
		if (a && tb[a])
			out->v[s] = nla_get_u64(tb[a]);
	}
	return 0;
}

int kprog_nl_parse_irq_status(struct nlmsghdr *nlh, struct kprog_irq_status *out)
{
	struct nlattr *tb[KPROG_BENCH_A_MAX + 1];

	if (genlmsg_parse(nlh, 0, tb, KPROG_BENCH_A_MAX, bench_policy) < 0 ||
	    !tb[KPROG_BENCH_A_IRQ_RUNNING])
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->running = nla_get_u8(tb[KPROG_BENCH_A_IRQ_RUNNING]) != 0;
	if (tb[KPROG_BENCH_A_IRQ_HZ])
		out->hz = nla_get_u32(tb[KPROG_BENCH_A_IRQ_HZ]);
	if (tb[KPROG_BENCH_A_IRQ_MODE])
		out->mode = nla_get_u32(tb[KPROG_BENCH_A_IRQ_MODE]);
	if (tb[KPROG_BENCH_A_IRQ_LOAD_NS])
		out->load_ns = nla_get_u32(tb[KPROG_BENCH_A_IRQ_LOAD_NS]);
	CPU_ZERO(&out->cpus);
	if (tb[KPROG_BENCH_A_IRQ_CPUS]) {
		const unsigned char *bits = nla_data(tb[KPROG_BENCH_A_IRQ_CPUS]);
		int len = nla_len(tb[KPROG_BENCH_A_IRQ_CPUS]), c;
		uint64_t w;

		if (len % 8)
			return -EPROTO;
		out->have_cpus = 1;
		for (c = 0; c < len * 8 && c < CPU_SETSIZE; c++) {
			memcpy(&w, bits + c / 64 * 8, 8);
			if (w >> (c % 64) & 1)
				CPU_SET(c, &out->cpus);
		}
	}
	return 0;
}

int kprog_nl_parse_error(struct nlmsghdr *nlh, char *msg, size_t len)
{
	struct nlmsgerr *e = nlmsg_data(nlh);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off;

	if (len)
		msg[0] = '\0';
	if (nlh->nlmsg_len < (uint32_t)nlmsg_size(sizeof(*e)))
		return EPROTO;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return -e->error;
	/* TLVs follow the error, after the echoed request unless capped */
	off = sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len > NLMSG_HDRLEN)
		off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
	if (off >= (size_t)nlmsg_datalen(nlh))
		return -e->error;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)e + off),
		      nlmsg_datalen(nlh) - (int)off, NULL) < 0)
		return -e->error;
	if (tb[NLMSGERR_ATTR_MSG] && len) {
		size_t n = strnlen(nla_data(tb[NLMSGERR_ATTR_MSG]),
				   (size_t)nla_len(tb[NLMSGERR_ATTR_MSG]));

		if (n >= len)
			n = len - 1;
		memcpy(msg, nla_data(tb[NLMSGERR_ATTR_MSG]), n);
		msg[n] = '\0';
	}
	return -e->error;
}

/* One request in flight and how its answer is consumed. */
struct xact {
	struct kprog_nl *nl;
	uint32_t seq;
	int (*parse)(struct nlmsghdr *nlh, void *arg);
	void *arg;
	int seen;	/* messages of ours received */
	int done;
	int err;	/* first negative errno */
};

static int on_msg_in(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;

	if (nlmsg_hdr(msg)->nlmsg_seq != x->seq)
		return NL_SKIP;		/* not an answer to this request */
	x->seen++;
	return NL_OK;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;
	int err;

	if (!x->parse)
		return NL_OK;
	err = x->parse(nlmsg_hdr(msg), x->arg);
	if (err && !x->err)
		x->err = err;
	return NL_OK;
}

int kprog_nl_parse_done(struct nlmsghdr *nlh)
{
	int err;

	if (nlh->nlmsg_type != NLMSG_DONE || nlmsg_datalen(nlh) < (int)sizeof(err))
		return 0;
	memcpy(&err, nlmsg_data(nlh), sizeof(err));
	return err < 0 ? -err : 0;
}

/* NLMSG_DONE ends a dump (a failed dump carries its errno), an ACK a request. */
static int on_done(struct nl_msg *msg, void *arg)
{
	struct xact *x = arg;
	int err = kprog_nl_parse_done(nlmsg_hdr(msg));

	if (err && !x->err)
		x->err = -err;
	x->done = 1;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct xact *x = arg;
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	int err;

	(void)who;
	if (nlh->nlmsg_seq != x->seq)
		return NL_SKIP;
	err = kprog_nl_parse_error(nlh, x->nl->ext_msg, sizeof(x->nl->ext_msg));
	x->err = -(err ? err : EPROTO);
	x->done = 1;
	return NL_STOP;
}

/*
 * Send @msg (consumed) and read its answers; @parse is called on each
 * data message. Returns 0 or a negative errno.
 */
static int transact(struct kprog_nl *nl, struct nl_msg *msg,
		    int (*parse)(struct nlmsghdr *, void *), void *arg)
{
	struct xact x = { .nl = nl, .parse = parse, .arg = arg };
	struct nl_cb *cb;
	int r;

	nl->ext_msg[0] = '\0';
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_MSG_IN, NL_CB_CUSTOM, on_msg_in, &x);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &x);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &x);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_done, &x);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &x);

	r = nl_send_auto(nl->sk, msg);
	x.seq = nlmsg_hdr(msg)->nlmsg_seq;
	nlmsg_free(msg);
	if (r < 0) {
		x.err = -nlerr_to_errno(r);
		goto out;
	}
	while (!x.done) {
		int before = x.seen;

		r = nl_recvmsgs(nl->sk, cb);
		if (x.done)
			break;
		if (r < 0) {
			if (!x.err)
				x.err = -nlerr_to_errno(r);
			break;
		}
		if (x.seen == before) {	/* nl_recv gave up: receive timeout */
			x.err = -ETIMEDOUT;
			break;
		}
	}
out:
	nl_cb_put(cb);
	return x.err;
}

int kprog_nl_open(struct kprog_nl **nlp, enum kprog_family which)
{
	struct timeval tv = { .tv_sec = KPROG_NL_TIMEOUT_S };
	struct kprog_nl *nl;
	int one = 1, r, fd;

	*nlp = NULL;
	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->which = which;
	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		free(nl);
		return -ENOMEM;
	}
	r = genl_connect(nl->sk);
	if (r < 0) {
		r = -nlerr_to_errno(r);
		goto fail;
	}
	/* acks are asked for per request: dumps end with NLMSG_DONE instead */
	nl_socket_disable_auto_ack(nl->sk);
	fd = nl_socket_get_fd(nl->sk);
	/* the kernel's error strings; best effort, old kernels lack them */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		r = -errno;
		goto fail;
	}
	r = genl_ctrl_resolve(nl->sk, families[which].name);
	if (r < 0) {
		r = r == -NLE_OBJ_NOTFOUND ? -ENOENT : -nlerr_to_errno(r);
		goto fail;
	}
	nl->family = r;
	*nlp = nl;
	return 0;
fail:
	nl_socket_free(nl->sk);
	free(nl);
	return r;
}

void kprog_nl_close(struct kprog_nl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->sk);
	free(nl);
}

const char *kprog_nl_ext_msg(const struct kprog_nl *nl)
{
	return nl->ext_msg;
}

const char *kprog_nl_strerror(struct kprog_nl *nl, int err)
{
	if (nl && nl->ext_msg[0])
		snprintf(nl->errbuf, sizeof(nl->errbuf), "%s: %s", strerror(err < 0 ? -err : err),
			 nl->ext_msg);
	else if (nl)
		snprintf(nl->errbuf, sizeof(nl->errbuf), "%s", strerror(err < 0 ? -err : err));
	else
		return strerror(err < 0 ? -err : err);
	return nl->errbuf;
}

/* A request without attributes; @flags NLM_F_DUMP or NLM_F_ACK. */
static struct nl_msg *new_request(struct kprog_nl *nl, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (msg && !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0, flags, cmd,
				families[nl->which].version)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	return msg;
}

struct stats_acc {
	enum kprog_family which;
	struct kprog_cpu_stats *v;
	int n, cap;
};

static int collect_stats(struct nlmsghdr *nlh, void *arg)
{
	struct stats_acc *a = arg;
	struct kprog_cpu_stats s;
	int err = kprog_nl_parse_stats(a->which, nlh, &s);

	if (err)
		return err;
	if (s.cpu >= CPU_SETSIZE)
		return -EPROTO;
	if (s.cpu >= a->cap) {
		int cap = a->cap ? a->cap : 8, i;
		struct kprog_cpu_stats *v;

		while (cap <= s.cpu)
			cap *= 2;
		v = realloc(a->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (i = a->cap; i < cap; i++)
			v[i].cpu = -1;
		a->v = v;
		a->cap = cap;
	}
	a->v[s.cpu] = s;
	if (s.cpu >= a->n)
		a->n = s.cpu + 1;
	return 0;
}

int kprog_nl_get_stats(struct kprog_nl *nl, struct kprog_cpu_stats **stats, int *n)
{
	struct stats_acc a = { .which = nl->which };
	struct nl_msg *msg = new_request(nl, families[nl->which].get_stats, NLM_F_DUMP);
	int err;

	*stats = NULL;
	*n = 0;
	if (!msg)
		return -ENOMEM;
	err = transact(nl, msg, collect_stats, &a);
	if (!err && !a.n)
		err = -EPROTO;	/* every possible CPU must be there, and there is one */
	if (err) {
		free(a.v);
		return err;
	}
	*stats = a.v;
	*n = a.n;
	return 0;
}

static int simple_cmd(struct kprog_nl *nl, uint8_t cmd)
{
	struct nl_msg *msg = new_request(nl, cmd, NLM_F_ACK);

	return msg ? transact(nl, msg, NULL, NULL) : -ENOMEM;
}

int kprog_nl_reset_stats(struct kprog_nl *nl)
{
	return simple_cmd(nl, families[nl->which].reset_stats);
}

int kprog_nl_irq_stop(struct kprog_nl *nl)
{
	if (nl->which != KPROG_FAMILY_BENCH)
		return -EOPNOTSUPP;
	return simple_cmd(nl, KPROG_BENCH_CMD_IRQ_STOP);
}

struct nl_msg *kprog_nl_build_irq_start(int family, const struct kprog_irq_req *req)
{
	struct nl_msg *msg = nlmsg_alloc();
	uint64_t words[CPU_SETSIZE / 64];

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_ACK,
			 KPROG_BENCH_CMD_IRQ_START, KPROG_BENCH_GENL_VERSION) ||
	    nla_put_u32(msg, KPROG_BENCH_A_IRQ_HZ, req->hz) < 0 ||
	    nla_put_u32(msg, KPROG_BENCH_A_IRQ_MODE, req->mode) < 0 ||
	    nla_put_u32(msg, KPROG_BENCH_A_IRQ_LOAD_NS, req->load_ns) < 0 ||
	    nla_put_u32(msg, KPROG_BENCH_A_IRQ_DURATION_MS, req->duration_ms) < 0)
		goto fail;
	if (req->cpus) {
		size_t nw = cpulist_to_words(req->cpus, words, CPU_SETSIZE / 64);

		if (!nw || nla_put(msg, KPROG_BENCH_A_IRQ_CPUS, (int)(nw * sizeof(words[0])), words) < 0)
			goto fail;
	}
	return msg;
fail:
	nlmsg_free(msg);
	return NULL;
}

int kprog_nl_irq_start(struct kprog_nl *nl, const struct kprog_irq_req *req)
{
	struct nl_msg *msg;

	if (nl->which != KPROG_FAMILY_BENCH)
		return -EOPNOTSUPP;
	if (req->cpus && !CPU_COUNT(req->cpus))
		return -EINVAL;
	msg = kprog_nl_build_irq_start(nl->family, req);
	return msg ? transact(nl, msg, NULL, NULL) : -ENOMEM;
}

static int collect_status(struct nlmsghdr *nlh, void *arg)
{
	return kprog_nl_parse_irq_status(nlh, arg);
}

int kprog_nl_irq_status(struct kprog_nl *nl, struct kprog_irq_status *st)
{
	struct nl_msg *msg;
	int err;

	memset(st, 0, sizeof(*st));
	st->running = -1;
	if (nl->which != KPROG_FAMILY_BENCH)
		return -EOPNOTSUPP;
	msg = new_request(nl, KPROG_BENCH_CMD_IRQ_STATUS, NLM_F_ACK);
	if (!msg)
		return -ENOMEM;
	err = transact(nl, msg, collect_status, st);
	if (!err && st->running < 0)
		err = -EPROTO;	/* acked without a status message */
	return err;
}
