// SPDX-License-Identifier: GPL-2.0
/*
 * kprog generic netlink family KPROG_GENL_NAME (see the uapi header):
 * per-CPU counters (stats.c). This file builds the replies.
 *
 * Commands take no attributes and reject any (resv_start_op 0); the
 * numbers the interrupt source's commands had (kprog_bench.ko's now) are
 * left unserved: EOPNOTSUPP. The family lives in the initial network
 * namespace only: the counters are host-wide.
 */
#include <linux/kernel.h>
#include <linux/kprog.h>
#include <net/genetlink.h>
#include "netlink.h"
#include "stats.h"

/* Numbers of the ABI that must not move when entries are retired. */
static_assert(KPROG_CMD_MAX == 5);
static_assert(KPROG_A_STAT_WAKEUPS == 11);
static_assert(KPROG_A_STAT_NET_CQES == 19);

static struct genl_family kprog_genl_family;

static int kprog_nl_fill_stats(struct sk_buff *skb, unsigned int cpu,
			       u32 portid, u32 seq)
{
	struct kprog_stats s;
	void *hdr;
	int i;

	hdr = genlmsg_put(skb, portid, seq, &kprog_genl_family, NLM_F_MULTI,
			  KPROG_CMD_GET_STATS);
	if (!hdr)
		return -EMSGSIZE;
	kprog_stats_read(cpu, &s);
	if (nla_put_u32(skb, KPROG_A_CPU, cpu))
		goto cancel;
	for (i = 0; i < KPROG_NR_STATS; i++)
		if (nla_put_u64_64bit(skb, kprog_stat_descs[i].attr, s.v[i],
				      KPROG_A_PAD))
			goto cancel;
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/* cb->args[0]: the CPU to continue with. */
static int kprog_nl_get_stats(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned int cpu;
	int err;

	for (cpu = cb->args[0]; cpu < nr_cpu_ids; cpu++) {
		if (!cpu_possible(cpu))
			continue;
		err = kprog_nl_fill_stats(skb, cpu,
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

static int kprog_nl_reset_stats(struct sk_buff *skb, struct genl_info *info)
{
	kprog_stats_reset();
	return 0;
}

static const struct genl_ops kprog_genl_ops[] = {
	{
		.cmd = KPROG_CMD_GET_STATS,
		.dumpit = kprog_nl_get_stats,
	},
	{
		.cmd = KPROG_CMD_RESET_STATS,
		.doit = kprog_nl_reset_stats,
		.flags = GENL_ADMIN_PERM,
	},
};

/*
 * resv_start_op 0: the reserved header field must be zero and commands
 * without a policy take no attributes, for every command.
 */
static struct genl_family kprog_genl_family __ro_after_init = {
	.name = KPROG_GENL_NAME,
	.version = KPROG_GENL_VERSION,
	.module = THIS_MODULE,
	.ops = kprog_genl_ops,
	.n_ops = ARRAY_SIZE(kprog_genl_ops),
	.resv_start_op = 0,
};

/**
 * kprog_nl_init() - register the generic netlink family
 *
 * Return: 0 or a negative errno.
 */
int kprog_nl_init(void)
{
	return genl_register_family(&kprog_genl_family);
}

/**
 * kprog_nl_exit() - unregister it; waits for requests in progress
 */
void kprog_nl_exit(void)
{
	genl_unregister_family(&kprog_genl_family);
}
