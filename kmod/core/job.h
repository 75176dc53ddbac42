/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog jobs: the processes of one MPI job that agreed on a key, and the
 * rank table that says how each rank is reached from this node.
 */
#ifndef _KPROG_JOB_H
#define _KPROG_JOB_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/kref.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include <linux/kprog.h>

struct kprog_ep;
struct kprog_ring;
struct kprog_transport;

/**
 * enum kprog_peer_kind - how a rank of a job is reached from this node
 * @KPROG_PEER_ABSENT: a rank of this node that has not joined, or left
 * @KPROG_PEER_LOCAL: an endpoint on this node (shared memory)
 * @KPROG_PEER_LEAVING: a local endpoint whose file is being released;
 *	nothing new reaches it and its rank cannot be taken yet
 * @KPROG_PEER_REMOTE: a rank on another node, reached through the
 *	transport that serves that node
 */
enum kprog_peer_kind {
	KPROG_PEER_ABSENT,
	KPROG_PEER_LOCAL,
	KPROG_PEER_LEAVING,
	KPROG_PEER_REMOTE,
};

/**
 * struct kprog_peer - one rank of a job as seen from this node
 * @kind: enum kprog_peer_kind, under &kprog_job.lock
 * @node: index into &kprog_job.nodes (the rank's node)
 * @ep: the endpoint while @kind is LOCAL or LEAVING (not referenced: the
 *	slot is cleared before the endpoint can go away)
 */
struct kprog_peer {
	u8 kind;
	u32 node;
	struct kprog_ep *ep;
};

/**
 * struct kprog_peer_ref - a snapshot of a peer for one operation
 * @kind: enum kprog_peer_kind at the time of the lookup
 * @node: the rank's node
 * @ep: LOCAL: the endpoint, referenced (kprog_ep_put() when done)
 */
struct kprog_peer_ref {
	u8 kind;
	u32 node;
	struct kprog_ep *ep;
};

/**
 * struct kprog_job - a job on this node
 * @hnode: in the job registry, under the registry mutex (RCU readers)
 * @rcu: frees the job after lookups that may still see it
 * @ref: one per endpoint that ever joined, plus one per holder
 * @key: the job key all ranks agreed on
 * @owner: effective uid of the creator
 * @shared: created with KPROG_JOIN_SHARED
 * @net_only: created with KPROG_JOIN_NET_ONLY: other local ranks are
 *	reached through the network transport too (testing on one node)
 * @times: some endpoint joined with KPROG_JOIN_TIMES (sticky): sends
 *	are timestamped for its receives; read locklessly
 * @size: ranks in the job (all nodes)
 * @eager_limit: eager limit of the job in bytes
 * @members: endpoints joined on this node, under the registry mutex
 * @self_node: index of this node in @nodes
 * @nr_nodes: entries in @nodes (1 for a job on one node)
 * @nodes: address of each node of the job (unused entries zero)
 * @rank_node: node index of each rank, or NULL: every rank on this node
 * @net: the network transport that reaches its other nodes (or, with
 *	@net_only, its other ranks), its module referenced until the job is
 *	freed; NULL for a job on this node only
 * @lock: protects @peers; a leaf lock, taken with spin_lock_bh()
 * @left: ranks of this node that left, and ranks of lost nodes; atomic
 *	bitops, read locklessly
 * @peers: the rank table
 * @chan_mem: bytes of the job's fast-path channels on this node, at most
 *	half of chan_mem_mib (chan.c); each channel holds a job reference
 */
struct kprog_job {
	struct hlist_node hnode;
	struct rcu_head rcu;
	struct kref ref;
	u64 key;
	kuid_t owner;
	bool shared;
	bool net_only;
	bool times;
	u32 size;
	u32 eager_limit;
	u32 members;
	u32 self_node;
	u32 nr_nodes;
	struct kprog_node_addr *nodes;
	u32 *rank_node;
	const struct kprog_transport *net;
	spinlock_t lock;	/* @peers */
	unsigned long *left;
	struct kprog_peer *peers;
	atomic64_t chan_mem;
};

/**
 * struct kprog_job_nodes - the node map of a joining endpoint, copied in
 * @nr_nodes: entries in @nodes; 0 = every rank is on this node
 * @self_node: this node's index
 * @nodes: node addresses (kernel copy), NULL when @nr_nodes is 0
 * @rank_node: node of each rank (kernel copy, job size entries)
 * @net: the network transport (module referenced) when the job needs one;
 *	passes to the job if it is created, else stays with the caller
 */
struct kprog_job_nodes {
	u32 nr_nodes;
	u32 self_node;
	struct kprog_node_addr *nodes;
	u32 *rank_node;
	const struct kprog_transport *net;
};

int kprog_job_join(struct kprog_ep *ep, struct kprog_join *j,
		   struct kprog_job_nodes *map, struct kprog_ring *ring);
void kprog_job_leave_begin(struct kprog_ep *ep);
void kprog_job_leave_end(struct kprog_ep *ep);
struct kprog_ep *kprog_job_get_ep(struct kprog_job *job, u32 rank);
struct kprog_job *kprog_job_lookup(u64 key);
int kprog_job_for_each(int (*fn)(struct kprog_job *job, void *arg), void *arg);
void kprog_job_mark_left(struct kprog_job *job, u32 rank);
void kprog_job_peer(struct kprog_job *job, u32 rank,
		    struct kprog_peer_ref *out);
bool kprog_job_is_local(const struct kprog_job *job, u32 rank);
void kprog_job_get(struct kprog_job *job);
void kprog_job_put(struct kprog_job *job);

/**
 * kprog_job_rank_left() - has a rank left the job (or its node been lost)?
 * @job: job
 * @rank: rank < job->size
 *
 * Lockless; pairs with the barriers in kprog_job_leave_begin() and
 * kprog_peer_gone().
 *
 * Return: true once the rank's endpoint began to leave, or its node was
 * lost.
 */
static inline bool kprog_job_rank_left(const struct kprog_job *job, u32 rank)
{
	return test_bit(rank, job->left);
}

#endif /* _KPROG_JOB_H */
