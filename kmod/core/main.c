// SPDX-License-Identifier: GPL-2.0
/*
 * kprog: in-kernel progression of MPI point-to-point messages.
 *
 * The misc device /dev/kprog; one endpoint per open file. This file holds
 * the module parameters, copies and checks ioctl arguments, sequences
 * JOIN and the departure at close, and hands everything else to the
 * matching core and the completion queue.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/log2.h>
#include <linux/socket.h>
#include <linux/poll.h>
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/uidgid.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "match.h"
#include "chan.h"
#include "grant.h"
#include "coll.h"
#include "transport.h"
#include "netlink.h"
#include "stats.h"
#include "kprog_trace.h"

unsigned int kprog_eager_limit = 8192;
module_param_named(eager_limit, kprog_eager_limit, uint, 0444);
MODULE_PARM_DESC(eager_limit,
		 "Default eager limit in bytes of a job (default 8192)");

unsigned int kprog_eager_quota = 1 << 20;
module_param_named(eager_quota, kprog_eager_quota, uint, 0444);
MODULE_PARM_DESC(eager_quota,
		 "Bytes of buffered eager messages per receiving endpoint, each charged 256 bytes extra (default 1 MiB)");

unsigned int kprog_max_ops = 16384;
module_param_named(max_ops, kprog_max_ops, uint, 0444);
MODULE_PARM_DESC(max_ops,
		 "Receives an endpoint may have posted or held back (default 16384)");

/*
 * Descriptor-only: a rendezvous send waiting for its receiver holds its
 * envelope and an op, not its pages. Apart from max_ops so that sends
 * waiting at a peer can never take the slots the receives they wait for
 * need (op.h, enum kprog_op_budget).
 */
unsigned int kprog_max_rndv = 16384;
module_param_named(max_rndv, kprog_max_rndv, uint, 0444);
MODULE_PARM_DESC(max_rndv,
		 "Rendezvous sends an endpoint may have waiting for their receiver, a few hundred bytes each (default 16384)");

unsigned int kprog_max_iov = 1024;
module_param_named(max_iov, kprog_max_iov, uint, 0444);
MODULE_PARM_DESC(max_iov, "Most kprog_iov entries per post (default 1024)");

unsigned int kprog_max_iov_total = 65536;
module_param_named(max_iov_total, kprog_max_iov_total, uint, 0444);
MODULE_PARM_DESC(max_iov_total,
		 "kprog_iov entries held by an endpoint's operations, >= max_iov (default 65536, 1 MiB)");

unsigned int kprog_ring_entries = 1024;
module_param_named(ring_entries, kprog_ring_entries, uint, 0444);
MODULE_PARM_DESC(ring_entries,
		 "Completion ring slots per endpoint, a power of two (default 1024)");

unsigned int kprog_max_job_size = 4096;
module_param_named(max_job_size, kprog_max_job_size, uint, 0444);
MODULE_PARM_DESC(max_job_size, "Most ranks in a job (default 4096)");

/*
 * As large as the default eager limit, so that no size between the two
 * takes the kernel's eager path (a system call and two kernel copies on
 * each side): in the emulated test VM that path moved 8 KiB one way in
 * 55 us against 8 us through a channel and 21 us for Open MPI's vader.
 */
unsigned int kprog_fast_limit = 8192;
module_param_named(fast_limit, kprog_fast_limit, uint, 0444);
MODULE_PARM_DESC(fast_limit,
		 "Largest message through a fast-path channel in bytes, 0 = no channels (default 8192)");

unsigned int kprog_chan_bytes = 65536;
module_param_named(chan_bytes, kprog_chan_bytes, uint, 0444);
MODULE_PARM_DESC(chan_bytes,
		 "Bytes of each direction of a channel, a power of two in [4096, 8 MiB] (default 65536)");

unsigned int kprog_max_chans = 256;
module_param_named(max_chans, kprog_max_chans, uint, 0444);
MODULE_PARM_DESC(max_chans,
		 "Channels one endpoint may have, each 4 KiB + 2 * chan_bytes (default 256)");

/*
 * All channels of the node together: without it their memory grows with
 * the square of the ranks on a node (128 ranks all-to-all: 8128 channels
 * of 132 KiB, about 1 GiB). Past it CHAN_OPEN is ENOSPC, as at max_chans,
 * and the pair goes through the kernel path (the shim's fallback).
 */
unsigned int kprog_chan_mem_mib = 512;
module_param_named(chan_mem_mib, kprog_chan_mem_mib, uint, 0444);
MODULE_PARM_DESC(chan_mem_mib,
		 "MiB of fast-path channels on this node, all jobs together; then pairs use the kernel path (default 512)");

/*
 * One endpoint's share of chan_mem_mib: it holds at most chan_mem_mib /
 * chan_shares of channels (at least one channel), so that the node's
 * channel memory grows with the ranks on it, not their square, and one
 * job's ranks cannot take what other jobs need (a job also holds at most
 * half of chan_mem_mib, chan.c). The default gives an endpoint 4 MiB, 31
 * channels of 132 KiB: a 3-D 27-point stencil's 26 neighbours and a few
 * collective partners; a job of 128 ranks on a node all-to-all holds at
 * most half of the node's bound (bench/stat/chanmem, docs/DESIGN.md).
 */
unsigned int kprog_chan_shares = 128;
module_param_named(chan_shares, kprog_chan_shares, uint, 0444);
MODULE_PARM_DESC(chan_shares,
		 "One endpoint holds at most chan_mem_mib / chan_shares of channels, at least one channel; [1, 65536] (default 128)");

/*
 * Rendezvous sends posted with no system call (grant.c): one 64-byte
 * slot per send waiting in a channel; 64 slots are one page per endpoint
 * and more sends waiting at once than a window of 64 KiB messages needs.
 */
unsigned int kprog_max_grants = 64;
module_param_named(max_grants, kprog_max_grants, uint, 0444);
MODULE_PARM_DESC(max_grants,
		 "Rendezvous sends an endpoint may post through its channels at once, 0 = none, <= 4096 (default 64)");

/*
 * Collective schedules (coll.c): a step is 40 bytes copied in plus a
 * pointer, so a schedule holds at most 48 * max_coll_steps bytes (192 KiB
 * at the default, enough for a ring allreduce over 680 ranks) and an
 * endpoint at most max_colls of them.
 */
unsigned int kprog_max_coll_steps = 4096;
module_param_named(max_coll_steps, kprog_max_coll_steps, uint, 0444);
MODULE_PARM_DESC(max_coll_steps,
		 "Steps of one collective schedule, <= 1048576 (default 4096)");

unsigned int kprog_max_colls = 64;
module_param_named(max_colls, kprog_max_colls, uint, 0444);
MODULE_PARM_DESC(max_colls,
		 "Collective schedules an endpoint may have running, 0 = none, <= 65536 (default 64)");

/*
 * Who may open /dev/kprog. The node's mode comes from dev_mode (devtmpfs
 * takes it from the misc device); devtmpfs cannot give a misc device's
 * node a group, so the udev rule (packaging/udev/) sets the node's group,
 * and dev_group makes the module itself refuse everybody else, whatever
 * the node's permissions (a copied node, a container's own /dev).
 */
unsigned int kprog_dev_mode = 0660;
module_param_named(dev_mode, kprog_dev_mode, uint, 0444);
MODULE_PARM_DESC(dev_mode,
		 "Permissions of /dev/kprog as devtmpfs creates it (default 0660)");

int kprog_dev_group = -1;
module_param_named(dev_group, kprog_dev_group, int, 0444);
MODULE_PARM_DESC(dev_group,
		 "Only members of this group id (or CAP_DAC_OVERRIDE) may open /dev/kprog; -1: no check (default)");

static bool kprog_open_allowed(void)
{
	if (kprog_dev_group < 0)
		return true;
	return in_group_p(make_kgid(&init_user_ns, kprog_dev_group)) ||
	       capable(CAP_DAC_OVERRIDE);
}

static int kprog_open(struct inode *inode, struct file *file)
{
	struct kprog_ep *ep;

	if (!kprog_open_allowed())
		return -EACCES;
	ep = kprog_ep_alloc();
	if (!ep)
		return -ENOMEM;
	file->private_data = ep;
	return 0;
}

static int kprog_release(struct inode *inode, struct file *file)
{
	struct kprog_ep *ep = file->private_data;
	struct kprog_job *job = kprog_ep_job(ep);

	if (job) {
		/* Our channel records are messages already sent: deliver them. */
		kprog_chan_flush_out(ep);
		/* No schedule starts a step from now on. */
		kprog_coll_close(ep);
		/* Nothing new reaches us, then nothing of us stays queued. */
		kprog_job_leave_begin(ep);
		kprog_depart(ep);
		kprog_chan_depart(ep);
		/* Other nodes may hold our messages or wait for us. */
		if (job->net && job->net->rank_left)
			job->net->rank_left(job, ep->rank);
		kprog_job_leave_end(ep);
		kprog_ep_quiesce(ep);
	}
	kprog_ep_put(ep);
	return 0;
}

static void kprog_map_free(struct kprog_job_nodes *map)
{
	kfree(map->nodes);
	kvfree(map->rank_node);
	if (map->net)
		kprog_xport_net_put(map->net);
}

/* Does the job reach some rank through the network transport? */
static bool kprog_map_needs_net(const struct kprog_join *j,
				const struct kprog_job_nodes *map)
{
	u32 r;

	if (j->flags & KPROG_JOIN_NET_ONLY)
		return true;
	for (r = 0; map->nr_nodes && r < j->size; r++)
		if (map->rank_node[r] != map->self_node)
			return true;
	return false;
}

/* Copies and checks the node map of a JOIN; all zero: one node. */
static int kprog_map_import(const struct kprog_join *j,
			    struct kprog_job_nodes *map)
{
	u32 r, n;

	memset(map, 0, sizeof(*map));
	if (!j->nr_nodes && !j->nodes && !j->rank_nodes && !j->self_node)
		return 0;
	if (!j->nr_nodes || j->nr_nodes > KPROG_MAX_NODES || !j->nodes ||
	    !j->rank_nodes || j->self_node >= j->nr_nodes)
		return -EINVAL;
	map->nr_nodes = j->nr_nodes;
	map->self_node = j->self_node;
	map->nodes = memdup_user(u64_to_user_ptr(j->nodes),
				 (size_t)j->nr_nodes * sizeof(*map->nodes));
	if (IS_ERR(map->nodes)) {
		int err = PTR_ERR(map->nodes);

		map->nodes = NULL;
		return err;
	}
	map->rank_node = kvmalloc_array(j->size, sizeof(*map->rank_node),
					GFP_KERNEL_ACCOUNT);
	if (!map->rank_node)
		return -ENOMEM;
	if (copy_from_user(map->rank_node, u64_to_user_ptr(j->rank_nodes),
			   (size_t)j->size * sizeof(*map->rank_node)))
		return -EFAULT;
	for (n = 0; n < map->nr_nodes; n++) {
		if (map->nodes[n].family != AF_INET &&
		    map->nodes[n].family != AF_INET6)
			return -EINVAL;
		map->nodes[n].__pad = 0;
	}
	for (r = 0; r < j->size; r++) {
		if (map->rank_node[r] >= map->nr_nodes)
			return -EINVAL;
		/* Ranks elsewhere need a transport that reaches them. */
		if (map->rank_node[r] != map->self_node &&
		    !(kprog_xport_mask() & KPROG_XPORT_IB))
			return -EHOSTUNREACH;
	}
	return 0;
}

static int kprog_join_check(struct kprog_join *j)
{
	if (j->abi_version != KPROG_ABI_VERSION)
		return -EPROTONOSUPPORT;
	if (j->flags & ~(KPROG_JOIN_SHARED | KPROG_JOIN_NET_ONLY |
			 KPROG_JOIN_TIMES))
		return -EINVAL;
	if ((j->flags & KPROG_JOIN_NET_ONLY) && !j->nr_nodes)
		return -EINVAL;	/* the node map names this node's address */
	if ((j->flags & KPROG_JOIN_NET_ONLY) &&
	    !(kprog_xport_mask() & KPROG_XPORT_IB))
		return -EHOSTUNREACH;
	if (!j->size)
		return -EINVAL;
	if (j->size > kprog_max_job_size)
		return -E2BIG;
	if (j->rank >= j->size)
		return -EINVAL;
	/* A limit above the quota could never be buffered anyway. */
	if (j->eager_limit)
		j->eager_limit = min(j->eager_limit,
				     kprog_eager_quota - KPROG_EAGER_OVERHEAD);
	return 0;
}

static long kprog_ioc_join(struct kprog_ep *ep, unsigned int cmd,
			   void __user *uarg)
{
	size_t size = _IOC_SIZE(cmd);
	struct kprog_job_nodes map;
	struct kprog_ring ring = {};
	struct kprog_join j = {};
	int err;

	if (copy_from_user(&j, uarg, size))
		return -EFAULT;
	/* Fail on an unwritable argument before joining, not after. */
	if (copy_to_user(uarg, &j, size))
		return -EFAULT;
	/*
	 * One JOIN per endpoint at a time: threads or a parent and its child
	 * sharing the fd would otherwise both pass the check below and write
	 * the endpoint's grant table and ring over each other.
	 */
	if (mutex_lock_killable(&ep->join_lock))
		return -EINTR;
	err = kprog_ep_job(ep) ? -EISCONN : kprog_join_check(&j);
	if (err) {
		mutex_unlock(&ep->join_lock);
		return err;
	}
	err = kprog_map_import(&j, &map);
	if (err)
		goto out_map;
	if (kprog_map_needs_net(&j, &map)) {
		/* The job keeps the transport's module until it is freed. */
		map.net = kprog_xport_net_get();
		if (!map.net) {
			err = -EHOSTUNREACH;
			goto out_map;
		}
	}
	err = kprog_ring_alloc(&ring, kprog_ring_entries, j.size,
			       j.flags & KPROG_JOIN_TIMES);
	if (err)
		goto out_map;
	/* Before the endpoint is visible: peers' drains read its grants. */
	err = kprog_fast_limit ? kprog_grant_setup(ep) : 0;
	if (err) {
		kprog_ring_free(&ring);
		goto out_map;
	}
	/* Before the endpoint is visible: its posts read it unlocked. */
	ep->times = j.flags & KPROG_JOIN_TIMES;
	kprog_ep_note_cpus(ep);
	err = kprog_job_join(ep, &j, &map, &ring);
	if (err) {
		ep->times = false;
		kprog_ep_drop_grants(ep);
		kprog_ring_free(&ring);
		goto out_map;
	}
	/* Senders stamp their posts from now on (Late Sender at receivers). */
	if (ep->times)
		WRITE_ONCE(ep->job->times, true);
	mutex_unlock(&ep->join_lock);
	kprog_map_free(&map);
	j.ring_entries = ep->ring.entries;
	j.ring_bytes = ep->ring.bytes;
	j.max_iov = kprog_max_iov;
	j.max_ops = kprog_max_ops;
	return copy_to_user(uarg, &j, size) ? -EFAULT : 0;

out_map:
	mutex_unlock(&ep->join_lock);
	kprog_map_free(&map);
	return err;
}

static long kprog_ioc_info(void __user *uarg)
{
	struct kprog_info info = {
		.abi_version = KPROG_ABI_VERSION,
		.features = KPROG_FEAT_MULTINODE | KPROG_FEAT_LARGE_MSG |
			    KPROG_FEAT_RECV_ARRIVED | KPROG_FEAT_PEERS |
			    KPROG_FEAT_TIMES | KPROG_FEAT_WAITER |
			    KPROG_FEAT_RECV_BATCH | KPROG_FEAT_WAIT_POLL,
		.transports = kprog_xport_mask(),
		.eager_limit = kprog_eager_limit,
		.eager_quota = kprog_eager_quota,
		.max_ops = kprog_max_ops,
		.max_rndv = kprog_max_rndv,
		.max_iov = kprog_max_iov,
		.max_iov_total = kprog_max_iov_total,
		.ring_entries = kprog_ring_entries,
		.max_job_size = kprog_max_job_size,
		.max_msg = KPROG_MAX_MSG,
		.fast_limit = kprog_fast_limit,
		.chan_bytes = kprog_chan_bytes,
		.max_chans = kprog_max_chans,
		.max_grants = kprog_fast_limit ? kprog_max_grants : 0,
		.max_coll_steps = kprog_max_colls ? kprog_max_coll_steps : 0,
	};

	const struct kprog_transport *net = kprog_xport_net_get();

	if (kprog_fast_limit)
		info.features |= KPROG_FEAT_FASTPATH;
	if (kprog_fast_limit && kprog_max_grants)
		info.features |= KPROG_FEAT_GRANTS;
	if (kprog_max_colls)
		info.features |= KPROG_FEAT_COLL;
	if (net) {
		if (net->local_addr && net->local_addr(&info.node_addr))
			memset(&info.node_addr, 0, sizeof(info.node_addr));
		if (net->net_conn)
			info.features |= KPROG_FEAT_NET_CONN;
		kprog_xport_net_put(net);
	}

	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

/* Is @peer one of the other nodes of @job's node map? */
static bool kprog_job_has_node(const struct kprog_job *job,
			       const struct kprog_node_addr *peer)
{
	size_t len = peer->family == AF_INET ? 4 : 16;
	u32 n;

	if (!job->nodes ||
	    (peer->family != AF_INET && peer->family != AF_INET6))
		return false;
	for (n = 0; n < job->nr_nodes; n++)
		if (n != job->self_node &&
		    job->nodes[n].family == peer->family &&
		    !memcmp(job->nodes[n].addr, peer->addr, len))
			return true;
	return false;
}

/*
 * KPROG_IOC_NET_CONN, for a joined endpoint only: it connects this node
 * to the nodes its job spans, through the transport the job holds.
 */
static long kprog_ioc_net_conn(struct kprog_ep *ep, void __user *uarg)
{
	const struct kprog_job *job = kprog_ep_job(ep);
	struct kprog_net_conn c;
	int err;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	/* A job with ranks elsewhere holds the transport that reaches them. */
	if (!job->net || !kprog_job_has_node(job, &c.peer))
		return -EINVAL;
	if (!job->net->net_conn)
		return -EOPNOTSUPP;
	err = job->net->net_conn(&c);
	if (err)
		return err;
	return copy_to_user(uarg, &c, sizeof(c)) ? -EFAULT : 0;
}

/*
 * One post from @up; *@posted tells whether it was posted, so that a
 * result that cannot be written back (EFAULT) is told from a post refused.
 */
static long kprog_ioc_post_one(struct kprog_ep *ep,
			       struct kprog_post __user *up, bool is_send,
			       bool *posted)
{
	struct kprog_post p;
	int err;

	*posted = false;

	if (copy_from_user(&p, up, sizeof(p)))
		return -EFAULT;
	/* The result must be deliverable before anything is posted. */
	if (put_user(0U, &up->done))
		return -EFAULT;
	if (p.flags & KPROG_POST_BLOCKING)
		kprog_ep_note_cpus(ep);
	err = is_send ? kprog_send(ep, &p) : kprog_recv(ep, &p);
	if (err)
		return err;
	*posted = true;
	if (p.done) {
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		trace_kprog_complete(ep->job->key, ep->rank, &p.cqe,
				     KPROG_WHERE_INLINE);
	}
	if (copy_to_user(&up->done, &p.done, sizeof(p.done)) ||
	    copy_to_user(&up->cqe, &p.cqe, sizeof(p.cqe)))
		return -EFAULT;
	return 0;
}

static long kprog_ioc_post(struct kprog_ep *ep, void __user *uarg,
			   bool is_send)
{
	bool posted;

	return kprog_ioc_post_one(ep, uarg, is_send, &posted);
}

/*
 * KPROG_IOC_RECV_BATCH: the entries in order, each as KPROG_IOC_RECV,
 * stopping at the first that fails (kprog.h).
 */
static long kprog_ioc_recv_batch(struct kprog_ep *ep, void __user *uarg)
{
	struct kprog_recv_batch __user *ub = uarg;
	struct kprog_post __user *up;
	struct kprog_recv_batch b;
	bool posted;
	long err = 0;
	u32 i, n = 0;

	if (copy_from_user(&b, ub, sizeof(b)))
		return -EFAULT;
	if (!b.count || b.count > KPROG_RECV_BATCH_MAX || b.flags)
		return -EINVAL;
	/* The count must be deliverable before anything is posted. */
	if (put_user(0U, &ub->posted))
		return -EFAULT;
	up = u64_to_user_ptr(b.posts);
	for (i = 0; i < b.count && !err; i++) {
		/* EFAULT may come after the post: its result undeliverable */
		err = kprog_ioc_post_one(ep, &up[i], false, &posted);
		n += posted;
	}
	if (put_user(n, &ub->posted))
		return -EFAULT;
	return err;
}

static long kprog_ioc_coll(struct kprog_ep *ep, void __user *uarg)
{
	struct kprog_coll __user *uc = uarg;
	struct kprog_coll c;
	int err;

	if (copy_from_user(&c, uc, sizeof(c)))
		return -EFAULT;
	/* The result must be deliverable before anything is started. */
	if (put_user(0U, &uc->done))
		return -EFAULT;
	err = kprog_coll_post(ep, &c);
	if (err)
		return err;
	if (c.done) {
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		trace_kprog_complete(ep->job->key, ep->rank, &c.cqe,
				     KPROG_WHERE_INLINE);
	}
	if (copy_to_user(&uc->done, &c.done, sizeof(c.done)) ||
	    copy_to_user(&uc->cqe, &c.cqe, sizeof(c.cqe)))
		return -EFAULT;
	return 0;
}

static long kprog_ioc_probe(struct kprog_ep *ep, void __user *uarg)
{
	struct kprog_probe pr;
	int err;

	if (copy_from_user(&pr, uarg, sizeof(pr)))
		return -EFAULT;
	if (copy_to_user(uarg, &pr, sizeof(pr)))
		return -EFAULT;
	err = kprog_probe_post(ep, &pr);
	if (err)
		return err;
	if (copy_to_user(uarg, &pr, sizeof(pr)))
		return -EFAULT;
	return 0;
}

static long kprog_ioc_chan_open(struct kprog_ep *ep, void __user *uarg)
{
	struct kprog_chan_open co;
	int err;

	if (copy_from_user(&co, uarg, sizeof(co)))
		return -EFAULT;
	err = kprog_chan_open(ep, &co);
	if (err)
		return err;
	return copy_to_user(uarg, &co, sizeof(co)) ? -EFAULT : 0;
}

static long kprog_ioc_wait(struct kprog_ep *ep, unsigned int cmd,
			   void __user *uarg)
{
	struct kprog_wait w = {};

	if (copy_from_user(&w, uarg, _IOC_SIZE(cmd)))
		return -EFAULT;
	if (w.flags & ~(KPROG_WAIT_EVENTS | KPROG_WAIT_POLL))
		return -EINVAL;
	if (w.flags & KPROG_WAIT_POLL)
		kprog_xport_poll(ep->job);
	kprog_ep_note_cpus(ep);
	return kprog_cq_wait(ep, w.timeout_ns, w.flags & KPROG_WAIT_EVENTS,
			     w.events);
}

/* The JOIN and WAIT of ABI version 1, smaller structs, still accepted. */
#define KPROG_IOC_JOIN_V1 \
	_IOC(_IOC_READ | _IOC_WRITE, KPROG_IOC_MAGIC, 1, KPROG_JOIN_V1_SIZE)
#define KPROG_IOC_WAIT_V1 \
	_IOC(_IOC_WRITE, KPROG_IOC_MAGIC, 6, KPROG_WAIT_V1_SIZE)

static long kprog_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	struct kprog_ep *ep = file->private_data;
	void __user *uarg = (void __user *)arg;
	struct kprog_chan_drain drain;
	struct kprog_cancel cancel;
	u32 rank;

	switch (cmd) {
	case KPROG_IOC_VERSION:
	/* the old magic's VERSION: an old client learns it is one */
	case KPROG_IOC_VERSION_V1:
		return put_user((u32)KPROG_ABI_VERSION, (u32 __user *)uarg);
	case KPROG_IOC_GET_INFO:
		return kprog_ioc_info(uarg);
	case KPROG_IOC_JOIN:
	case KPROG_IOC_JOIN_V1:
		return kprog_ioc_join(ep, cmd, uarg);
	case KPROG_IOC_NET_CONN:
	case KPROG_IOC_SEND:
	case KPROG_IOC_RECV:
	case KPROG_IOC_RECV_BATCH:
	case KPROG_IOC_PROBE:
	case KPROG_IOC_CANCEL:
	case KPROG_IOC_WAIT:
	case KPROG_IOC_WAIT_V1:
	case KPROG_IOC_CHAN_OPEN:
	case KPROG_IOC_CHAN_DRAIN:
	case KPROG_IOC_KICK:
	case KPROG_IOC_COLL:
		break;
	default:
		return -ENOTTY;
	}
	/* Nothing but VERSION, GET_INFO and JOIN before JOIN. */
	if (!kprog_ep_job(ep))
		return -EBADFD;
	if (cmd == KPROG_IOC_NET_CONN)
		return kprog_ioc_net_conn(ep, uarg);

	kprog_cq_flush(ep);
	switch (cmd) {
	case KPROG_IOC_SEND:
		return kprog_ioc_post(ep, uarg, true);
	case KPROG_IOC_RECV:
		return kprog_ioc_post(ep, uarg, false);
	case KPROG_IOC_RECV_BATCH:
		return kprog_ioc_recv_batch(ep, uarg);
	case KPROG_IOC_PROBE:
		return kprog_ioc_probe(ep, uarg);
	case KPROG_IOC_COLL:
		return kprog_ioc_coll(ep, uarg);
	case KPROG_IOC_CANCEL:
		if (copy_from_user(&cancel, uarg, sizeof(cancel)))
			return -EFAULT;
		return kprog_cancel(ep, cancel.req_id);
	case KPROG_IOC_CHAN_OPEN:
		return kprog_ioc_chan_open(ep, uarg);
	case KPROG_IOC_CHAN_DRAIN:
		if (copy_from_user(&drain, uarg, sizeof(drain)))
			return -EFAULT;
		if ((drain.flags & ~KPROG_DRAIN_TO) ||
		    (drain.peer != KPROG_ANY_SOURCE &&
		     (drain.peer < 0 || drain.peer >= ep->job->size)))
			return -EINVAL;
		if (drain.flags & KPROG_DRAIN_TO)
			return drain.peer == KPROG_ANY_SOURCE ? -EINVAL :
			       kprog_chan_drain_to(ep, drain.peer);
		return kprog_chan_drain(ep, drain.peer);
	case KPROG_IOC_KICK:
		if (get_user(rank, (u32 __user *)uarg))
			return -EFAULT;
		return kprog_chan_kick(ep, rank);
	default: /* KPROG_IOC_WAIT */
		return kprog_ioc_wait(ep, cmd, uarg);
	}
}

static int kprog_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kprog_ep *ep = file->private_data;

	if (!kprog_ep_job(ep))
		return -EBADFD;
	if (vma->vm_pgoff == KPROG_GRANT_MMAP_OFFSET >> PAGE_SHIFT)
		return kprog_grant_mmap(ep, vma);
	if (vma->vm_pgoff)
		return kprog_chan_mmap(ep, vma);
	return kprog_ring_mmap(&ep->ring, vma);
}

static __poll_t kprog_poll(struct file *file, poll_table *wait)
{
	return kprog_cq_poll(file->private_data, file, wait);
}

static const struct file_operations kprog_fops = {
	.owner = THIS_MODULE,
	.open = kprog_open,
	.release = kprog_release,
	.unlocked_ioctl = kprog_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kprog_mmap,
	.poll = kprog_poll,
	.llseek = noop_llseek,
};

static struct miscdevice kprog_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kprog",
	.fops = &kprog_fops,
};

static int kprog_check_params(void)
{
	if (!kprog_ring_entries || !is_power_of_2(kprog_ring_entries) ||
	    kprog_ring_entries > (1U << 20)) {
		pr_err("kprog: ring_entries must be a power of two <= 1048576\n");
		return -EINVAL;
	}
	if (kprog_eager_quota <= KPROG_EAGER_OVERHEAD ||
	    kprog_eager_quota > (1U << 30)) {
		pr_err("kprog: eager_quota must be in (%u, 1 GiB]\n",
		       KPROG_EAGER_OVERHEAD);
		return -EINVAL;
	}
	if (kprog_eager_limit > (64U << 20)) {
		pr_err("kprog: eager_limit must be <= 64 MiB\n");
		return -EINVAL;
	}
	if (!kprog_max_ops || kprog_max_ops > (1U << 20)) {
		pr_err("kprog: max_ops must be in [1, 1048576]\n");
		return -EINVAL;
	}
	if (!kprog_max_rndv || kprog_max_rndv > (1U << 20)) {
		pr_err("kprog: max_rndv must be in [1, 1048576]\n");
		return -EINVAL;
	}
	if (!kprog_max_iov || kprog_max_iov > 65536) {
		pr_err("kprog: max_iov must be in [1, 65536]\n");
		return -EINVAL;
	}
	if (kprog_max_iov_total < kprog_max_iov ||
	    kprog_max_iov_total > (1U << 24)) {
		pr_err("kprog: max_iov_total must be in [max_iov, 16777216]\n");
		return -EINVAL;
	}
	if (!kprog_max_job_size || kprog_max_job_size > (1U << 20)) {
		pr_err("kprog: max_job_size must be in [1, 1048576]\n");
		return -EINVAL;
	}
	if (kprog_chan_bytes < 4096 || kprog_chan_bytes > (8U << 20) ||
	    !is_power_of_2(kprog_chan_bytes)) {
		pr_err("kprog: chan_bytes must be a power of two in [4096, 8 MiB]\n");
		return -EINVAL;
	}
	if (kprog_fast_limit > (1U << 20)) {
		pr_err("kprog: fast_limit must be <= 1 MiB\n");
		return -EINVAL;
	}
	if (kprog_max_chans > 65536) {
		pr_err("kprog: max_chans must be <= 65536\n");
		return -EINVAL;
	}
	if (kprog_chan_mem_mib > (1U << 20)) {
		pr_err("kprog: chan_mem_mib must be <= 1048576\n");
		return -EINVAL;
	}
	if (!kprog_chan_shares || kprog_chan_shares > 65536) {
		pr_err("kprog: chan_shares must be in [1, 65536]\n");
		return -EINVAL;
	}
	if (kprog_max_grants > 4096) {
		pr_err("kprog: max_grants must be <= 4096\n");
		return -EINVAL;
	}
	if (!kprog_max_coll_steps || kprog_max_coll_steps > (1U << 20)) {
		pr_err("kprog: max_coll_steps must be in [1, 1048576]\n");
		return -EINVAL;
	}
	if (kprog_max_colls > 65536) {
		pr_err("kprog: max_colls must be <= 65536\n");
		return -EINVAL;
	}
	if (kprog_dev_mode > 0777) {
		pr_err("kprog: dev_mode must be <= 0777\n");
		return -EINVAL;
	}
	if (kprog_dev_group < -1 ||
	    (kprog_dev_group >= 0 &&
	     !gid_valid(make_kgid(&init_user_ns, kprog_dev_group)))) {
		pr_err("kprog: dev_group must be a group id or -1\n");
		return -EINVAL;
	}
	return 0;
}

static int __init kprog_init(void)
{
	int err;

	err = kprog_check_params();
	if (err)
		return err;
	err = kprog_op_init();
	if (err)
		return err;
	err = kprog_eager_init();
	if (err)
		goto err_op;
	err = kprog_coll_init();
	if (err)
		goto err_eager;
	err = kprog_xport_init();
	if (err)
		goto err_coll;
	kprog_stats_debugfs_init();
	kprog_misc.mode = kprog_dev_mode;
	err = misc_register(&kprog_misc);
	if (err)
		goto err_debugfs;
	err = kprog_nl_init();
	if (err)
		goto err_misc;
	return 0;

err_misc:
	misc_deregister(&kprog_misc);
err_debugfs:
	kprog_stats_debugfs_exit();
	kprog_xport_exit();
err_coll:
	kprog_coll_exit();
err_eager:
	kprog_eager_exit();
err_op:
	kprog_op_exit();
	return err;
}

static void __exit kprog_exit(void)
{
	/* No new netlink request, then no new file. */
	kprog_nl_exit();
	misc_deregister(&kprog_misc);
	kprog_stats_debugfs_exit();
	/* Transfers may still run after the last close; they free into ep. */
	kprog_xport_exit();
	/* Schedules end once their steps did; their last puts free ops. */
	kprog_coll_exit();
	kprog_eager_exit();
	kprog_op_exit();
	/* Jobs are freed after a grace period, by code of this module. */
	rcu_barrier();
	kprog_msg_exit();
	kprog_ep_exit();
}

module_init(kprog_init);
module_exit(kprog_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kprog: in-kernel progression of MPI point-to-point messages");
MODULE_AUTHOR("kprog developers");
MODULE_VERSION(KPROG_VERSION);
