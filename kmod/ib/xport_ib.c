// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib: the ibverbs transport of kprog, a module of its own
 * (kprog_ib.ko) on top of kprog.ko and ib_core. kprog.ko loads
 * and works without it, on machines without RDMA.
 *
 * This file holds the transport ops the core calls (&struct
 * kprog_transport), the module parameters (checked at load), load and
 * unload, and /sys/kernel/debug/kprog_ib/state (gauges that return to 0
 * when nothing is in flight: connections, pinned pages, registered MRs,
 * ...). ib.h lists the other files.
 *
 * Unload. Every job that reaches ranks through the transport holds a
 * reference on this module (JOIN takes it, the job's end drops it), so
 * `rmmod kprog_ib` is refused (module in use) while such a job exists,
 * and every transfer belongs to one. When idle it tears down the
 * remaining connections (no job is left to notice) and unregisters from
 * the core.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/socket.h>
#include "kprog.h"
#include "job.h"
#include "msg.h"
#include "transport.h"
#include "ib.h"

unsigned int kprog_ib_eager_size = 8192;
module_param_named(eager_size, kprog_ib_eager_size, uint, 0444);
MODULE_PARM_DESC(eager_size,
		 "Largest eager payload between nodes in bytes, [64, 65536]; larger messages go by rendezvous; every node must use the same (default 8192)");

unsigned int kprog_ib_recv_bufs = 64;
module_param_named(recv_bufs, kprog_ib_recv_bufs, uint, 0444);
MODULE_PARM_DESC(recv_bufs,
		 "Receive buffers (credits) per connection, [8, 4096] (default 64)");

unsigned int kprog_ib_max_conns = 64;
module_param_named(max_conns, kprog_ib_max_conns, uint, 0444);
MODULE_PARM_DESC(max_conns, "Most connections (both ends count), [1, 4096] (default 64)");

unsigned int kprog_ib_max_reg_mb = 256;
module_param_named(max_reg_mb, kprog_ib_max_reg_mb, uint, 0444);
MODULE_PARM_DESC(max_reg_mb,
		 "MiB of send buffers pinned and registered for remote reads at once, at least two chunks, at most 65536 (default 256)");

unsigned int kprog_ib_reg_pages = 512;
module_param_named(reg_pages, kprog_ib_reg_pages, uint, 0444);
MODULE_PARM_DESC(reg_pages,
		 "Pages one registration (chunk) maps, [1, 8192], at most what the device maps (default 512)");

unsigned int kprog_ib_max_reads = 8;
module_param_named(max_reads, kprog_ib_max_reads, uint, 0444);
MODULE_PARM_DESC(max_reads, "RDMA READs in flight per connection, [1, 64] (default 8)");

unsigned int kprog_ib_conn_mrs = 16;
module_param_named(conn_mrs, kprog_ib_conn_mrs, uint, 0444);
MODULE_PARM_DESC(conn_mrs, "MRs in each connection's pool, [4, 1024] (default 16)");

unsigned int kprog_ib_keepalive_ms = 2000;
module_param_named(keepalive_ms, kprog_ib_keepalive_ms, uint, 0444);
MODULE_PARM_DESC(keepalive_ms,
		 "Probe an established connection this often, in ms, so that a node that vanished while nothing was in flight fails its operations (ACK timeout and retries add about 8 s); 0 = off, else [100, 600000] (default 2000)");

unsigned int kprog_ib_conn_admin = 1;
module_param_named(conn_admin, kprog_ib_conn_admin, uint, 0444);
MODULE_PARM_DESC(conn_admin,
		 "1: making or dropping a connection between two nodes (KPROG_IOC_NET_CONN) needs CAP_NET_ADMIN, so that no user can disturb the connection other users' jobs share; 0: any user whose job spans the node may (default 1)");
/*
 * Registrations on a queue pair of their own (docs/rdma.md, "Registering on
 * a queue pair of its own"): on rxe, where a REG_MR on the data QP must
 * wait until nothing is on the wire, a per-connection QP connected to
 * itself carries only REG_MRs, so they neither wait nor are replayed.
 * Read when a connection is set up; devices without the quirk keep their
 * REG_MRs on the data QP.
 */
bool kprog_ib_reg_qp = true;
module_param_named(reg_qp, kprog_ib_reg_qp, bool, 0644);
MODULE_PARM_DESC(reg_qp,
		 "1: on soft-RoCE post registrations on a queue pair of their own, connected to itself (no REG_MR fence); 0: fenced on the data QP; read at connection set-up (default 1)");

/*
 * Off by default: on soft-RoCE (rxe, kernel 6.1) a REG_MR posted shortly
 * behind unacknowledged SENDs is executed again when those are
 * retransmitted (rxe_requester() runs local work requests again after
 * req_retry()), and fails on the MR it already registered, which fails
 * the connection; the cache makes REG_MRs follow sends that closely
 * (docs/DESIGN.md, "The pin cache").
 */
unsigned int kprog_ib_pin_cache_mb;
module_param_named(pin_cache_mb, kprog_ib_pin_cache_mb, uint, 0644);
MODULE_PARM_DESC(pin_cache_mb,
		 "MiB of send and receive buffers kept pinned between transfers on this node (each charged to its process's RLIMIT_MEMLOCK), 0 = no cache (default: see docs/DESIGN.md), at most 65536");

/*
 * One SEND in this many asks for a completion (UCX's rc transport: one in
 * 64): the others cost no completion, no softirq and no lock round on the
 * sender; their buffers are freed by the next completion. Writable at run
 * time (each post reads it), within its bounds, so that one boot can
 * compare settings.
 */
unsigned int kprog_ib_send_signal = 16;

static int kprog_ib_send_signal_set(const char *val,
				    const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 256);
}

static const struct kernel_param_ops kprog_ib_send_signal_ops = {
	.set = kprog_ib_send_signal_set,
	.get = param_get_uint,
};

module_param_cb(send_signal, &kprog_ib_send_signal_ops,
		&kprog_ib_send_signal, 0644);
MODULE_PARM_DESC(send_signal,
		 "Ask for a completion of one SEND in this many (1: every SEND), [1, 256] (default 16)");

/*
 * KPROG_WAIT_POLL runs the connections' completions on the waiter's CPU
 * (kprog_ib_conn_poll()); 0: it polls nothing and completions wait for
 * their event as before. Writable at run time, so that one boot can
 * compare the two.
 */
bool kprog_ib_net_poll = true;
module_param_named(net_poll, kprog_ib_net_poll, bool, 0644);
MODULE_PARM_DESC(net_poll,
		 "A rank that spins for a message from another node may run this node's completions itself (KPROG_WAIT_POLL), 0 = off (default 1)");

static char *kprog_ib_node_addr_param = "";
module_param_named(node_addr, kprog_ib_node_addr_param, charp, 0444);
MODULE_PARM_DESC(node_addr,
		 "IPv4 address this node is known by: the RoCE port whose v2 GID holds it is used (default: the first active RoCE port's IPv4 GID); on InfiniBand, required (e.g. the IPoIB address), GID 0 is used");

atomic_long_t kprog_ib_gauges[KPROG_IB_NR_GAUGES];

static const char *const kprog_ib_gauge_names[KPROG_IB_NR_GAUGES] = {
	[KPROG_IB_G_CONNS] = "conns",
	[KPROG_IB_G_PINNED] = "pinned_pages",
	[KPROG_IB_G_MRS] = "registered_mrs",
	[KPROG_IB_G_REG_BYTES] = "reg_bytes",
	[KPROG_IB_G_TXS] = "send_transfers",
	[KPROG_IB_G_RDVS] = "recv_transfers",
	[KPROG_IB_G_READS] = "reads",
	[KPROG_IB_G_CACHED] = "cached_pages",
};

static struct dentry *kprog_ib_debugfs;

static int kprog_ib_send_env(struct kprog_job *job,
			     const struct kprog_peer_ref *peer,
			     struct kprog_msg *msg)
{
	struct kprog_ib_conn *conn;
	struct kprog_ib_out *out;
	u32 hdr;
	int err;

	if (!job->rank_node || peer->node >= job->nr_nodes)
		return -EHOSTUNREACH;
	/* Too big for the receive buffers: the core sends it by rendezvous. */
	if (!kprog_msg_is_rndv(msg) && msg->env.len > kprog_ib_eager_size)
		return -ENOBUFS;
	conn = kprog_ib_conn_get(&job->nodes[peer->node], true);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	if (kprog_msg_is_rndv(msg)) {
		err = kprog_ib_tx_rts(conn, job->key, msg);
	} else {
		out = kprog_ib_out_alloc(KPROG_IB_EAGER_HDR + msg->env.len,
					 GFP_KERNEL);
		err = -ENOMEM;
		if (out) {
			hdr = kprog_ib_put_eager(out->buf, job->key, &msg->env,
						 msg->send_req);
			if (msg->env.len)
				memcpy(out->buf + hdr, msg->data, msg->env.len);
			err = kprog_ib_conn_queue(conn, out);
			if (err)
				kprog_ib_out_free(out);
		}
	}
	kprog_ib_conn_put(conn);
	if (!err)
		kprog_msg_free(msg);
	return err;
}

/*
 * The existing connection to node @n of @job, referenced, if that node is
 * reached through this transport (another node, or any with net_only);
 * NULL otherwise. Connects nothing.
 */
static struct kprog_ib_conn *kprog_ib_job_conn(struct kprog_job *job, u32 n)
{
	struct kprog_ib_conn *conn;

	if (n == job->self_node && !job->net_only)
		return NULL;
	conn = kprog_ib_conn_get(&job->nodes[n], false);
	return IS_ERR_OR_NULL(conn) ? NULL : conn;
}

/* Tell the nodes this node talks to that @rank of @job left. */
static void kprog_ib_rank_left(struct kprog_job *job, u32 rank)
{
	struct kprog_ib_conn *conn;
	struct kprog_ib_out *out;
	u32 n;

	for (n = 0; n < job->nr_nodes; n++) {
		/* Only where a connection exists: others hold nothing of it. */
		conn = kprog_ib_job_conn(job, n);
		if (!conn)
			continue;
		out = kprog_ib_out_alloc(KPROG_IB_CTL_MAX, GFP_KERNEL);
		if (out) {
			out->len = kprog_ib_put_gone(out->buf, job->key, rank);
			if (kprog_ib_conn_queue(conn, out))
				kprog_ib_out_free(out);
		}
		kprog_ib_conn_put(conn);
	}
}

/*
 * KPROG_WAIT_POLL: the completions of the connections to the job's nodes
 * now, on the waiter's CPU (kprog_ib_conn_poll()); net_poll=0 turns it
 * off.
 */
static void kprog_ib_poll(struct kprog_job *job)
{
	struct kprog_ib_conn *conn;
	u32 n;

	if (!READ_ONCE(kprog_ib_net_poll) || !job->rank_node)
		return;
	for (n = 0; n < job->nr_nodes; n++) {
		conn = kprog_ib_job_conn(job, n);
		if (!conn)
			continue;
		kprog_ib_conn_poll(conn);
		kprog_ib_conn_put(conn);
	}
}

const struct kprog_transport kprog_ib_xport = {
	.name = "ib",
	.owner = THIS_MODULE,
	.features = KPROG_XF_REQUIRE_REGISTRATION | KPROG_XF_SOFTIRQ,
	.send_env = kprog_ib_send_env,
	.get_handle = kprog_ib_get_handle,
	.put_handle = kprog_ib_put_handle,
	.pull = kprog_ib_pull,
	.fin = kprog_ib_fin,
	.rank_left = kprog_ib_rank_left,
	.local_addr = kprog_ib_local_addr,
	.net_conn = kprog_ib_net_conn,
	.poll = kprog_ib_poll,
};

static int kprog_ib_state_show(struct seq_file *m, void *unused)
{
	int i;

	for (i = 0; i < KPROG_IB_NR_GAUGES; i++)
		seq_printf(m, "%s %ld\n", kprog_ib_gauge_names[i],
			   atomic_long_read(&kprog_ib_gauges[i]));
	kprog_ib_pcache_show(m);
	kprog_ib_conn_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kprog_ib_state);

static int kprog_ib_check_params(void)
{
	u64 chunk = (u64)kprog_ib_reg_pages * PAGE_SIZE;

	if (kprog_ib_eager_size < 64 || kprog_ib_eager_size > 65536) {
		pr_err("kprog_ib: eager_size must be in [64, 65536]\n");
		return -EINVAL;
	}
	if (kprog_ib_recv_bufs < 8 || kprog_ib_recv_bufs > 4096) {
		pr_err("kprog_ib: recv_bufs must be in [8, 4096]\n");
		return -EINVAL;
	}
	if (!kprog_ib_max_conns || kprog_ib_max_conns > 4096) {
		pr_err("kprog_ib: max_conns must be in [1, 4096]\n");
		return -EINVAL;
	}
	if (!kprog_ib_reg_pages || kprog_ib_reg_pages > 8192) {
		pr_err("kprog_ib: reg_pages must be in [1, 8192]\n");
		return -EINVAL;
	}
	if (kprog_ib_max_reg_mb > 65536 ||
	    ((u64)kprog_ib_max_reg_mb << 20) < 2 * chunk) {
		pr_err("kprog_ib: max_reg_mb must hold two chunks (reg_pages) and be <= 65536\n");
		return -EINVAL;
	}
	if (!kprog_ib_max_reads || kprog_ib_max_reads > 64) {
		pr_err("kprog_ib: max_reads must be in [1, 64]\n");
		return -EINVAL;
	}
	if (kprog_ib_conn_mrs < 4 || kprog_ib_conn_mrs > 1024) {
		pr_err("kprog_ib: conn_mrs must be in [4, 1024]\n");
		return -EINVAL;
	}
	if (kprog_ib_keepalive_ms &&
	    (kprog_ib_keepalive_ms < 100 || kprog_ib_keepalive_ms > 600000)) {
		pr_err("kprog_ib: keepalive_ms must be 0 or in [100, 600000]\n");
		return -EINVAL;
	}
	if (!kprog_ib_send_signal || kprog_ib_send_signal > 256) {
		pr_err("kprog_ib: send_signal must be in [1, 256]\n");
		return -EINVAL;
	}
	if (kprog_ib_conn_admin > 1) {
		pr_err("kprog_ib: conn_admin must be 0 or 1\n");
		return -EINVAL;
	}
	if (kprog_ib_pin_cache_mb > 65536) {
		pr_err("kprog_ib: pin_cache_mb must be <= 65536\n");
		return -EINVAL;
	}
	if (kprog_ib_parse_node_addr(kprog_ib_node_addr_param)) {
		pr_err("kprog_ib: node_addr must be an IPv4 address\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * The connection layer (ib_conn.c) reports what it receives and loses to
 * the files above it through these, so that it calls none of them.
 */
static const struct kprog_ib_conn_upcalls kprog_ib_conn_upcalls = {
	.recv = kprog_ib_recv,
	.transfers_dead = kprog_ib_rndv_conn_dead,
	.node_lost = kprog_ib_node_lost,
	.wire_idle = kprog_ib_rndv_wire_idle,
};

static int __init kprog_ib_init(void)
{
	int err;

	err = kprog_ib_check_params();
	if (err)
		return err;
	err = kprog_ib_rndv_init();
	if (err)
		return err;
	err = kprog_ib_conn_init(&kprog_ib_conn_upcalls);
	if (err)
		goto err_rndv;
	kprog_ib_debugfs = debugfs_create_dir("kprog_ib", NULL);
	debugfs_create_file("state", 0444, kprog_ib_debugfs, NULL,
			    &kprog_ib_state_fops);
	/* Registers with the core as soon as a usable device is seen. */
	err = kprog_ib_dev_init(kprog_ib_conn_dev_gone);
	if (err)
		goto err_conn;
	return 0;

err_conn:
	debugfs_remove_recursive(kprog_ib_debugfs);
	kprog_ib_conn_exit();
err_rndv:
	kprog_ib_rndv_exit();
	return err;
}

static void __exit kprog_ib_exit(void)
{
	int i;

	/* Each device's removal unregisters and tears its connections down. */
	kprog_ib_dev_exit();
	debugfs_remove_recursive(kprog_ib_debugfs);
	kprog_ib_conn_exit();
	kprog_ib_rndv_exit();
	kprog_ib_pcache_exit();
	for (i = 0; i < KPROG_IB_NR_GAUGES; i++)
		if (atomic_long_read(&kprog_ib_gauges[i]))
			pr_err("kprog_ib: %s is %ld at unload\n",
			       kprog_ib_gauge_names[i],
			       atomic_long_read(&kprog_ib_gauges[i]));
}

module_init(kprog_ib_init);
module_exit(kprog_ib_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kprog: ibverbs transport between nodes (RC QPs, RDMA READ rendezvous)");
MODULE_AUTHOR("kprog developers");
MODULE_VERSION(KPROG_VERSION);
MODULE_SOFTDEP("pre: kprog");
