// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_bench generic netlink family KPROG_BENCH_GENL_NAME (see
 * include/uapi/linux/kprog_bench.h): the interrupt source's per-CPU
 * counters, and starting, stopping and querying it (bench_irq.c). This
 * file parses and checks the requests and builds the replies.
 *
 * Every command has its own strict policy; commands that take no
 * attributes reject any. As the netlink core does for a value outside a
 * policy range, a value above a module parameter's limit gets ERANGE;
 * missing, malformed or unknown attributes and unusable CPUs get EINVAL.
 * The family lives in the initial network namespace only: the counters
 * and the source are host-wide.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#ifdef KPROG_HAVE_LINUX_UNALIGNED
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <net/genetlink.h>
#include "bench.h"

/* Largest KPROG_BENCH_A_IRQ_CPUS: one bit for each CPU the kernel supports. */
#define KBENCH_NL_CPUS_MAX	(DIV_ROUND_UP(NR_CPUS, 64) * sizeof(u64))

static struct netlink_range_validation kbench_nl_hz_range = {
	.min = 1,
	.max = KPROG_BENCH_HZ_LIMIT,
};

static const struct nla_policy kbench_nl_irq_start_policy[KPROG_BENCH_A_MAX + 1] = {
	[KPROG_BENCH_A_IRQ_HZ] = NLA_POLICY_FULL_RANGE(NLA_U32, &kbench_nl_hz_range),
	[KPROG_BENCH_A_IRQ_MODE] = NLA_POLICY_MAX(NLA_U32, __KPROG_BENCH_IRQ_MODE_MAX - 1),
	[KPROG_BENCH_A_IRQ_LOAD_NS] = { .type = NLA_U32 },
	[KPROG_BENCH_A_IRQ_DURATION_MS] = NLA_POLICY_MIN(NLA_U32, 1),
	[KPROG_BENCH_A_IRQ_CPUS] = NLA_POLICY_RANGE(NLA_BINARY, sizeof(u64),
						    KBENCH_NL_CPUS_MAX),
};

static struct genl_family kbench_genl_family;

static int kbench_nl_fill_stats(struct sk_buff *skb, unsigned int cpu,
				u32 portid, u32 seq)
{
	struct kprog_bench_stats s;
	void *hdr;
	int i;

	hdr = genlmsg_put(skb, portid, seq, &kbench_genl_family, NLM_F_MULTI,
			  KPROG_BENCH_CMD_GET_STATS);
	if (!hdr)
		return -EMSGSIZE;
	kprog_bench_stats_read(cpu, &s);
	if (nla_put_u32(skb, KPROG_BENCH_A_CPU, cpu))
		goto cancel;
	for (i = 0; i < KPROG_BENCH_NR_STATS; i++)
		if (nla_put_u64_64bit(skb, kprog_bench_stat_attrs[i], s.v[i],
				      KPROG_BENCH_A_PAD))
			goto cancel;
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* cb->args[0]: the CPU to continue with. */
static int kbench_nl_get_stats(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned int cpu;
	int err;

	for (cpu = cb->args[0]; cpu < nr_cpu_ids; cpu++) {
		if (!cpu_possible(cpu))
			continue;
		err = kbench_nl_fill_stats(skb, cpu,
					   NETLINK_CB(cb->skb).portid,
					   cb->nlh->nlmsg_seq);
		if (err) {
			/* Not even one CPU fits into an empty message. */
			if (!skb->len)
				return err;
			break;
		}
	}
	cb->args[0] = cpu;
	return skb->len;
}

static int kbench_nl_reset_stats(struct sk_buff *skb, struct genl_info *info)
{
	kprog_bench_stats_reset();
	return 0;
}

/* The u64-word bitmap of KPROG_BENCH_A_IRQ_CPUS into @mask. */
static int kbench_nl_parse_cpus(const struct nlattr *attr,
				struct cpumask *mask,
				struct netlink_ext_ack *extack)
{
	const u8 *data = nla_data(attr);
	unsigned int i, bit, cpu;
	u64 word;

	if (nla_len(attr) % sizeof(u64)) {
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "length is not a whole number of u64 words");
		return -EINVAL;
	}
	cpumask_clear(mask);
	for (i = 0; i < nla_len(attr) / sizeof(u64); i++) {
		word = get_unaligned((const u64 *)(data + i * sizeof(u64)));
		for (bit = 0; bit < 64; bit++) {
			if (!(word & BIT_ULL(bit)))
				continue;
			cpu = i * 64 + bit;
			if (cpu >= nr_cpu_ids || !cpu_possible(cpu)) {
				NL_SET_ERR_MSG_ATTR(extack, attr,
						    "names a CPU that does not exist");
				return -EINVAL;
			}
			cpumask_set_cpu(cpu, mask);
		}
	}
	if (cpumask_empty(mask)) {
		NL_SET_ERR_MSG_ATTR(extack, attr, "names no CPU");
		return -EINVAL;
	}
	return 0;
}

static int kbench_nl_irq_start(struct sk_buff *skb, struct genl_info *info)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr **tb = info->attrs;
	struct kprog_bench_irq_config cfg = { .mode = KPROG_BENCH_IRQ_HARDIRQ };
	u64 period;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, KPROG_BENCH_A_IRQ_HZ)) {
		NL_SET_ERR_MSG(extack, "KPROG_BENCH_A_IRQ_HZ is required");
		return -EINVAL;
	}
	if (GENL_REQ_ATTR_CHECK(info, KPROG_BENCH_A_IRQ_DURATION_MS)) {
		NL_SET_ERR_MSG(extack, "KPROG_BENCH_A_IRQ_DURATION_MS is required");
		return -EINVAL;
	}
	cfg.hz = nla_get_u32(tb[KPROG_BENCH_A_IRQ_HZ]);
	if (cfg.hz > kprog_bench_max_hz) {
		NL_SET_ERR_MSG_ATTR(extack, tb[KPROG_BENCH_A_IRQ_HZ],
				    "above the irq_max_hz module parameter");
		return -ERANGE;
	}
	cfg.duration_ms = nla_get_u32(tb[KPROG_BENCH_A_IRQ_DURATION_MS]);
	if (cfg.duration_ms > kprog_bench_max_duration_ms) {
		NL_SET_ERR_MSG_ATTR(extack, tb[KPROG_BENCH_A_IRQ_DURATION_MS],
				    "above the irq_max_duration_ms module parameter");
		return -ERANGE;
	}
	if (tb[KPROG_BENCH_A_IRQ_MODE])
		cfg.mode = nla_get_u32(tb[KPROG_BENCH_A_IRQ_MODE]);
	if (tb[KPROG_BENCH_A_IRQ_LOAD_NS]) {
		cfg.load_ns = nla_get_u32(tb[KPROG_BENCH_A_IRQ_LOAD_NS]);
		period = div_u64(NSEC_PER_SEC, cfg.hz);
		if (cfg.load_ns > period / 4 ||
		    cfg.load_ns > kprog_bench_max_load_ns) {
			NL_SET_ERR_MSG_ATTR(extack, tb[KPROG_BENCH_A_IRQ_LOAD_NS],
					    "above 1/4 of the period or the irq_max_load_ns module parameter");
			return -ERANGE;
		}
	}
	if (!zalloc_cpumask_var(&cfg.cpus, GFP_KERNEL))
		return -ENOMEM;
	cfg.all_online = !tb[KPROG_BENCH_A_IRQ_CPUS];
	if (!cfg.all_online) {
		err = kbench_nl_parse_cpus(tb[KPROG_BENCH_A_IRQ_CPUS],
					   cfg.cpus, extack);
		if (err)
			goto out;
	}
	err = kprog_bench_irq_start(&cfg, extack);
out:
	free_cpumask_var(cfg.cpus);
	return err;
}

static int kbench_nl_irq_stop(struct sk_buff *skb, struct genl_info *info)
{
	kprog_bench_irq_stop();
	return 0;
}

/* @mask as KPROG_BENCH_A_IRQ_CPUS: u64 words covering every possible CPU id. */
static int kbench_nl_put_cpus(struct sk_buff *skb, const struct cpumask *mask)
{
	unsigned int words = DIV_ROUND_UP(nr_cpu_ids, 64), cpu;
	struct nlattr *attr;
	u8 *data;
	u64 w;

	attr = nla_reserve(skb, KPROG_BENCH_A_IRQ_CPUS, words * sizeof(u64));
	if (!attr)
		return -EMSGSIZE;
	data = nla_data(attr);
	memset(data, 0, words * sizeof(u64));
	for_each_cpu(cpu, mask) {
		u8 *p = data + cpu / 64 * sizeof(u64);

		w = get_unaligned((u64 *)p) | BIT_ULL(cpu % 64);
		put_unaligned(w, (u64 *)p);
	}
	return 0;
}

static int kbench_nl_irq_status(struct sk_buff *skb, struct genl_info *info)
{
	struct kprog_bench_irq_config cfg = {};
	struct sk_buff *msg;
	bool running;
	void *hdr;
	int err = -EMSGSIZE;

	if (!zalloc_cpumask_var(&cfg.cpus, GFP_KERNEL))
		return -ENOMEM;
	running = kprog_bench_irq_status(&cfg);
	msg = genlmsg_new(nla_total_size(sizeof(u8)) +
			  3 * nla_total_size(sizeof(u32)) +
			  nla_total_size(DIV_ROUND_UP(nr_cpu_ids, 64) *
					 sizeof(u64)), GFP_KERNEL);
	if (!msg) {
		err = -ENOMEM;
		goto out;
	}
	hdr = genlmsg_put_reply(msg, info, &kbench_genl_family, 0,
				KPROG_BENCH_CMD_IRQ_STATUS);
	if (!hdr)
		goto err_msg;
	if (nla_put_u8(msg, KPROG_BENCH_A_IRQ_RUNNING, running))
		goto err_msg;
	if (running &&
	    (nla_put_u32(msg, KPROG_BENCH_A_IRQ_HZ, cfg.hz) ||
	     nla_put_u32(msg, KPROG_BENCH_A_IRQ_MODE, cfg.mode) ||
	     nla_put_u32(msg, KPROG_BENCH_A_IRQ_LOAD_NS, cfg.load_ns) ||
	     kbench_nl_put_cpus(msg, cfg.cpus)))
		goto err_msg;
	genlmsg_end(msg, hdr);
	err = genlmsg_reply(msg, info);
	goto out;
err_msg:
	nlmsg_free(msg);
out:
	free_cpumask_var(cfg.cpus);
	return err;
}

static const struct genl_ops kbench_genl_ops[] = {
	{
		.cmd = KPROG_BENCH_CMD_GET_STATS,
		.dumpit = kbench_nl_get_stats,
	},
	{
		.cmd = KPROG_BENCH_CMD_RESET_STATS,
		.doit = kbench_nl_reset_stats,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = KPROG_BENCH_CMD_IRQ_START,
		.doit = kbench_nl_irq_start,
		.flags = GENL_ADMIN_PERM,
		.policy = kbench_nl_irq_start_policy,
		.maxattr = ARRAY_SIZE(kbench_nl_irq_start_policy) - 1,
	},
	{
		.cmd = KPROG_BENCH_CMD_IRQ_STOP,
		.doit = kbench_nl_irq_stop,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = KPROG_BENCH_CMD_IRQ_STATUS,
		.doit = kbench_nl_irq_status,
	},
};

/*
 * resv_start_op 0: the reserved header field must be zero and commands
 * without a policy take no attributes, for every command.
 */
static struct genl_family kbench_genl_family __ro_after_init = {
	.name = KPROG_BENCH_GENL_NAME,
	.version = KPROG_BENCH_GENL_VERSION,
	.module = THIS_MODULE,
	.ops = kbench_genl_ops,
	.n_ops = ARRAY_SIZE(kbench_genl_ops),
	.resv_start_op = 0,
};

/**
 * kprog_bench_nl_init() - register the generic netlink family
 *
 * Return: 0 or a negative errno.
 */
int kprog_bench_nl_init(void)
{
	return genl_register_family(&kbench_genl_family);
}

/**
 * kprog_bench_nl_exit() - unregister it; waits for requests in progress
 */
void kprog_bench_nl_exit(void)
{
	genl_unregister_family(&kbench_genl_family);
}
