/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Selftest client of the generic netlink families (libnl-genl-3) of
 * kprog.ko ("kprog") and kprog_bench.ko ("kprog_bench"): raw requests with
 * any attributes (to test bad ones), kprog's per-CPU counters, and the
 * errno plus extended-ack message of every failed request. Also CPU lists
 * from sysfs. The interrupt source's requests are in kprog_bench.c.
 *
 * Like kprog_test.h, helpers never ASSERT: they return 0 or -errno.
 */
#ifndef KPROG_GENL_H
#define KPROG_GENL_H

#include "kprog_test.h"
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/kprog_bench.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

#define KPN_TMO_S	20	/* no answer within this: -ETIMEDOUT */
#define KPN_MAX_CPUS	4096
/* Room for the attributes of either family. */
#define KPN_TB_MAX	(KPROG_A_MAX > KPROG_BENCH_A_MAX ? KPROG_A_MAX : KPROG_BENCH_A_MAX)

/* kprog.ko's per-CPU counters, in the order of kprog_stat_names[]. */
enum {
	KS_EVENTS, KS_TASKLET_RUNS, KS_TASKLET_NS, KS_WORK_ITEMS, KS_WORK_NS,
	KS_BYTES, KS_WAKEUPS, KS_NET_CQES, KS_NET_DROPPED, KS_NET_REG_BYTES,
	KS_NET_PIN_HITS, KS_NET_PIN_MISSES,
	KS_N,
};

static const int kpn_stat_attr[KS_N] = {
	KPROG_A_STAT_EVENTS, KPROG_A_STAT_TASKLET_RUNS,
	KPROG_A_STAT_TASKLET_NS, KPROG_A_STAT_WORK_ITEMS,
	KPROG_A_STAT_WORK_NS, KPROG_A_STAT_BYTES, KPROG_A_STAT_WAKEUPS,
	KPROG_A_STAT_NET_CQES, KPROG_A_STAT_NET_DROPPED,
	KPROG_A_STAT_NET_REG_BYTES, KPROG_A_STAT_NET_PIN_HITS,
	KPROG_A_STAT_NET_PIN_MISSES,
};

/* Also the debugfs column names, after "cpu". */
static const char *const kprog_stat_names[KS_N] = {
	"events", "tasklet_runs", "tasklet_ns", "work_items", "work_ns",
	"bytes", "wakeups", "net_cqes", "net_dropped", "net_reg_bytes",
	"net_pin_hits", "net_pin_misses",
};

struct kpn {
	struct nl_sock *sk;
	int family;
	int version;		/* of the family's messages */
	int maxattr;
	char msg[256];		/* extended-ack message of the last error */
	int miss_type;		/* its missing attribute, or 0 */
	int bad_attr;		/* it named an attribute (offset given) */
};

struct kpn_attr {
	int type;
	int len;
	const void *data;
};

/* One GET_STATS message. */
struct kpn_cpu {
	int cpu;		/* -1: no KPROG_A_CPU */
	int missing;		/* counter attributes absent from the message */
	__u64 v[KS_N];
};

/* Called for each reply message with its attributes. 0 or -errno. */
typedef int (*kpn_msg_fn)(struct nlattr **tb, void *arg);

struct kpn_ctx {
	struct kpn *k;
	kpn_msg_fn fn;
	void *arg;
	int done;
	int err;
	int nmsg;
};

static inline int kpn_valid_cb(struct nl_msg *msg, void *arg)
{
	struct kpn_ctx *c = arg;
	struct nlattr *tb[KPN_TB_MAX + 1];
	int ret;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, c->k->maxattr, NULL)) {
		c->err = -EPROTO;
		return NL_SKIP;
	}
	c->nmsg++;
	if (c->fn) {
		ret = c->fn(tb, c->arg);
		if (ret && !c->err)
			c->err = ret;
	}
	return NL_OK;
}

/* NLMSG_ERROR with an errno: keep it and the extack message. */
static inline int kpn_err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e,
			     void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct kpn_ctx *c = arg;
	size_t off = sizeof(*e);
	int len;

	(void)nla;
	c->err = e->error;
	c->done = 1;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	len = (int)nlh->nlmsg_len - NLMSG_HDRLEN - (int)off;
	if (len <= 0 ||
	    nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)e + off), len, NULL))
		return NL_STOP;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(c->k->msg, sizeof(c->k->msg), "%s",
			 (char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
	if (tb[NLMSGERR_ATTR_MISS_TYPE])
		c->k->miss_type = nla_get_u32(tb[NLMSGERR_ATTR_MISS_TYPE]);
	c->k->bad_attr = !!tb[NLMSGERR_ATTR_OFFS];
	return NL_STOP;
}

static inline int kpn_ack_cb(struct nl_msg *msg, void *arg)
{
	struct kpn_ctx *c = arg;

	(void)msg;
	c->done = 1;
	return NL_STOP;
}

/* NLMSG_DONE of a dump; it carries the dump's errno, if any. */
static inline int kpn_finish_cb(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct kpn_ctx *c = arg;
	int err;

	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int)) {
		memcpy(&err, nlmsg_data(nlh), sizeof(err));
		if (err < 0 && !c->err)
			c->err = err;
	}
	c->done = 1;
	return NL_STOP;
}

static inline void kpn_close(struct kpn *k)
{
	if (k->sk)
		nl_socket_free(k->sk);
	k->sk = NULL;
}

/*
 * Connect and resolve family @name (@version, attributes up to @maxattr);
 * -ENOENT if it is not registered.
 */
static inline int kpn_open_family(struct kpn *k, const char *name,
				  int version, int maxattr)
{
	struct timeval tv = { .tv_sec = KPN_TMO_S };
	int one = 1;

	memset(k, 0, sizeof(*k));
	k->sk = nl_socket_alloc();
	if (!k->sk)
		return -ENOMEM;
	if (genl_connect(k->sk)) {
		kpn_close(k);
		return -EIO;
	}
	setsockopt(nl_socket_get_fd(k->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	setsockopt(nl_socket_get_fd(k->sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	k->version = version;
	k->maxattr = maxattr;
	k->family = genl_ctrl_resolve(k->sk, name);
	if (k->family < 0) {
		kpn_close(k);
		return -ENOENT;
	}
	return 0;
}

/* kprog.ko's family. */
static inline int kpn_open(struct kpn *k)
{
	return kpn_open_family(k, KPROG_GENL_NAME, KPROG_GENL_VERSION,
			       KPROG_A_MAX);
}

/*
 * Send @cmd (a dump if @dump) with @n raw attributes and collect the
 * answer; @fn sees every reply message, *@nmsg (if not NULL) counts them.
 * 0, the kernel's -errno (its message in k->msg), or -EIO/-ETIMEDOUT/
 * -EPROTO for trouble on our side.
 */
static inline int kpn_request(struct kpn *k, int cmd, int dump,
			      const struct kpn_attr *a, int n, kpn_msg_fn fn,
			      void *arg, int *nmsg)
{
	struct kpn_ctx c = { .k = k, .fn = fn, .arg = arg };
	long long end = kp_now_ms() + KPN_TMO_S * 1000LL;
	struct nl_msg *m;
	struct nl_cb *cb;
	int i, ret = 0;

	k->msg[0] = 0;
	k->miss_type = 0;
	k->bad_attr = 0;
	m = nlmsg_alloc();
	if (!m)
		return -ENOMEM;
	if (!genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, k->family, 0,
			 dump ? NLM_F_DUMP : 0, cmd, k->version)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (nla_put(m, a[i].type, a[i].len, a[i].data)) {
			nlmsg_free(m);
			return -EMSGSIZE;
		}
	}
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, kpn_valid_cb, &c);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, kpn_ack_cb, &c);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, kpn_finish_cb, &c);
	nl_cb_err(cb, NL_CB_CUSTOM, kpn_err_cb, &c);
	if (nl_send_auto(k->sk, m) < 0)
		ret = -EIO;
	nlmsg_free(m);
	while (!ret && !c.done) {
		if (nl_recvmsgs(k->sk, cb) < 0 && !c.done)
			ret = -EIO;
		else if (!c.done && kp_now_ms() > end)
			ret = -ETIMEDOUT;
	}
	nl_cb_put(cb);
	if (nmsg)
		*nmsg = c.nmsg;
	return ret ? ret : c.err;
}

static inline int kpn_cmd(struct kpn *k, int cmd)
{
	return kpn_request(k, cmd, 0, NULL, 0, NULL, NULL, NULL);
}

struct kpn_stats_arg {
	struct kpn_cpu *cpus;
	int max, n;
};

static inline int kpn_stats_msg(struct nlattr **tb, void *arg)
{
	struct kpn_stats_arg *s = arg;
	struct kpn_cpu *c;
	int i;

	if (s->n >= s->max)
		return -E2BIG;
	c = &s->cpus[s->n++];
	memset(c, 0, sizeof(*c));
	c->cpu = tb[KPROG_A_CPU] ? (int)nla_get_u32(tb[KPROG_A_CPU]) : -1;
	for (i = 0; i < KS_N; i++) {
		struct nlattr *a = tb[kpn_stat_attr[i]];

		if (a && nla_len(a) == sizeof(__u64))
			c->v[i] = nla_get_u64(a);
		else
			c->missing++;
	}
	return 0;
}

/* GET_STATS: *@n messages into @cpus (in the order received). */
static inline int kpn_get_stats(struct kpn *k, struct kpn_cpu *cpus, int max,
				int *n)
{
	struct kpn_stats_arg s = { .cpus = cpus, .max = max };
	int ret;

	ret = kpn_request(k, KPROG_CMD_GET_STATS, 1, NULL, 0, kpn_stats_msg,
			  &s, NULL);
	*n = s.n;
	return ret;
}

/* Counters indexed by CPU number (zero where no message), and the sums. */
static inline int kpn_stats_by_cpu(struct kpn *k, __u64 (*by)[KS_N],
				   __u64 *sum)
{
	static struct kpn_cpu cpus[KPN_MAX_CPUS];
	int n, i, j, ret;

	ret = kpn_get_stats(k, cpus, KPN_MAX_CPUS, &n);
	if (ret)
		return ret;
	memset(by, 0, sizeof(*by) * KPN_MAX_CPUS);
	memset(sum, 0, sizeof(*sum) * KS_N);
	for (i = 0; i < n; i++) {
		if (cpus[i].cpu < 0 || cpus[i].cpu >= KPN_MAX_CPUS ||
		    cpus[i].missing)
			return -EPROTO;
		for (j = 0; j < KS_N; j++) {
			by[cpus[i].cpu][j] = cpus[i].v[j];
			sum[j] += cpus[i].v[j];
		}
	}
	return 0;
}

/* A sysfs CPU list ("0-3,5") as a bitmap; returns the CPU count or -errno. */
static inline int kp_cpulist(const char *path, __u64 *mask, int words)
{
	char buf[4096], *p;
	int fd, n, count = 0;

	memset(mask, 0, words * sizeof(*mask));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	for (p = buf; *p && *p != '\n';) {
		long a = strtol(p, &p, 10), b = a, c;

		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		if (a < 0 || b < a || b >= words * 64)
			return -ERANGE;
		for (c = a; c <= b; c++, count++)
			mask[c / 64] |= 1ULL << (c % 64);
		if (*p == ',')
			p++;
	}
	return count;
}

static inline int kp_bit(const __u64 *mask, int cpu)
{
	return !!(mask[cpu / 64] & (1ULL << (cpu % 64)));
}

static inline int kp_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

#endif /* KPROG_GENL_H */
