// SPDX-License-Identifier: GPL-2.0
/*
 * kprog job registry: jobs by key, who may join them, and the rank table
 * of peers (a local endpoint, or a rank on another node).
 *
 * This file calls nothing else of the module: JOIN and departure are
 * sequenced by their callers (main.c, match.c), which use the helpers
 * here to change a rank's state.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/hashtable.h>
#include <linux/bitmap.h>
#include <linux/cred.h>
#include <linux/mutex.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "transport.h"

static DEFINE_MUTEX(kprog_jobs_mutex);
static DEFINE_HASHTABLE(kprog_jobs, 8);

static void kprog_job_free(struct kprog_job *job)
{
	/* The network transport's module may go once no job uses it. */
	if (job->net)
		module_put(job->net->owner);
	kvfree(job->peers);
	bitmap_free(job->left);
	kvfree(job->rank_node);
	kfree(job->nodes);
	kfree(job);
}

static void kprog_job_free_rcu(struct rcu_head *rcu)
{
	kprog_job_free(container_of(rcu, struct kprog_job, rcu));
}

/* Lookups under RCU may still see the job: free after a grace period. */
static void kprog_job_release(struct kref *ref)
{
	call_rcu(&container_of(ref, struct kprog_job, ref)->rcu,
		 kprog_job_free_rcu);
}

/**
 * kprog_job_get() - take a job reference
 * @job: job referenced by the caller
 */
void kprog_job_get(struct kprog_job *job)
{
	kref_get(&job->ref);
}

/**
 * kprog_job_put() - drop a job reference
 * @job: job, already out of the registry when this is the last reference
 */
void kprog_job_put(struct kprog_job *job)
{
	kref_put(&job->ref, kprog_job_release);
}
EXPORT_SYMBOL_GPL(kprog_job_put);

static struct kprog_job *kprog_job_find(u64 key)
{
	struct kprog_job *job;

	hash_for_each_possible(kprog_jobs, job, hnode, key)
		if (job->key == key)
			return job;
	return NULL;
}

/* Takes over the arrays of @map on success. */
static struct kprog_job *kprog_job_create(const struct kprog_join *j,
					  u32 eager_limit,
					  struct kprog_job_nodes *map)
{
	struct kprog_job *job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	u32 r;

	if (!job)
		return NULL;
	job->peers = kvcalloc(j->size, sizeof(*job->peers), GFP_KERNEL_ACCOUNT);
	job->left = bitmap_zalloc(j->size, GFP_KERNEL_ACCOUNT);
	if (!job->peers || !job->left) {
		kprog_job_free(job);
		return NULL;
	}
	kref_init(&job->ref);
	spin_lock_init(&job->lock);
	job->key = j->job_key;
	job->owner = current_euid();
	job->shared = j->flags & KPROG_JOIN_SHARED;
	job->size = j->size;
	job->eager_limit = eager_limit;
	job->net_only = j->flags & KPROG_JOIN_NET_ONLY;
	if (map->nr_nodes) {
		job->nr_nodes = map->nr_nodes;
		job->self_node = map->self_node;
		job->nodes = map->nodes;
		job->rank_node = map->rank_node;
		job->net = map->net;
		map->nodes = NULL;
		map->rank_node = NULL;
		map->net = NULL;
	} else {
		job->nr_nodes = 1;
	}
	for (r = 0; r < job->size; r++) {
		job->peers[r].node = job->rank_node ? job->rank_node[r] : 0;
		job->peers[r].kind = kprog_job_is_local(job, r) ?
				     KPROG_PEER_ABSENT : KPROG_PEER_REMOTE;
	}
	return job;
}

/* Does a later joiner's node map equal the job's? */
static bool kprog_job_same_map(const struct kprog_job *job,
			       const struct kprog_job_nodes *map)
{
	if (!map->nr_nodes)
		return !job->rank_node;
	if (!job->rank_node || map->nr_nodes != job->nr_nodes ||
	    map->self_node != job->self_node)
		return false;
	return !memcmp(map->nodes, job->nodes,
		       job->nr_nodes * sizeof(*job->nodes)) &&
	       !memcmp(map->rank_node, job->rank_node,
		       job->size * sizeof(*job->rank_node));
}

/**
 * kprog_job_lookup() - the job with @key on this node, referenced
 * @key: job key (from the wire)
 *
 * Any context (RCU).
 *
 * Return: the job, or NULL; kprog_job_put() when done.
 */
struct kprog_job *kprog_job_lookup(u64 key)
{
	struct kprog_job *job, *found = NULL;

	rcu_read_lock();
	hash_for_each_possible_rcu(kprog_jobs, job, hnode, key) {
		if (job->key == key && kref_get_unless_zero(&job->ref)) {
			found = job;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}
EXPORT_SYMBOL_GPL(kprog_job_lookup);

/**
 * kprog_job_for_each() - call @fn for every job on this node
 * @fn: called with a referenced job, in process context, without the
 *	registry lock; a non-zero return stops the walk
 * @arg: its argument
 *
 * For a transport that lost a node: it fails the ranks of every job on it.
 *
 * Return: what @fn last returned.
 */
int kprog_job_for_each(int (*fn)(struct kprog_job *job, void *arg), void *arg)
{
	struct kprog_job **jobs, *job;
	unsigned int n = 0, i, bkt;
	int ret = 0;

	mutex_lock(&kprog_jobs_mutex);
	hash_for_each(kprog_jobs, bkt, job, hnode)
		n++;
	jobs = kvmalloc_array(n ?: 1, sizeof(*jobs), GFP_KERNEL);
	if (!jobs) {
		mutex_unlock(&kprog_jobs_mutex);
		return -ENOMEM;
	}
	n = 0;
	hash_for_each(kprog_jobs, bkt, job, hnode) {
		kprog_job_get(job);
		jobs[n++] = job;
	}
	mutex_unlock(&kprog_jobs_mutex);
	for (i = 0; i < n; i++) {
		if (!ret)
			ret = fn(jobs[i], arg);
		kprog_job_put(jobs[i]);
	}
	kvfree(jobs);
	return ret;
}
EXPORT_SYMBOL_GPL(kprog_job_for_each);

/**
 * kprog_job_mark_left() - a rank on another node is gone for good
 * @job: job
 * @rank: a remote rank whose node a transport lost
 *
 * Receives posted for it afterwards fail at once; the caller then calls
 * kprog_peer_gone() for what already waits.
 */
void kprog_job_mark_left(struct kprog_job *job, u32 rank)
{
	set_bit(rank, job->left);
	/* Pairs with the lock-free test_bit() of receivers. */
	smp_mb__after_atomic();
}
EXPORT_SYMBOL_GPL(kprog_job_mark_left);

/**
 * kprog_job_is_local() - is @rank on this node?
 * @job: job
 * @rank: rank < job->size
 *
 * Return: true for a rank served by shared memory.
 */
bool kprog_job_is_local(const struct kprog_job *job, u32 rank)
{
	return !job->rank_node || job->rank_node[rank] == job->self_node;
}
EXPORT_SYMBOL_GPL(kprog_job_is_local);

/**
 * kprog_job_join() - put a new endpoint into a job (KPROG_IOC_JOIN)
 * @ep: an endpoint not yet in a job, with its ring allocated
 * @j: the request, checked for sizes and flags; @eager_limit (0: the
 *	module default, else clamped to the quota) is set to the job's
 * @map: the node map, checked for ranges; its arrays pass to the job if
 *	it is created, else stay with the caller
 * @ring: the endpoint's completion ring, allocated; it passes to @ep on
 *	success
 *
 * Return: 0, -EISCONN (already joined), -ENOMEM, -EINVAL (size, eager
 * limit or node map differ from the job's), -EACCES (another user's job
 * not shared by both), -EADDRINUSE (rank taken, or still leaving), or
 * -EINVAL for a rank that is not on this node.
 */
int kprog_job_join(struct kprog_ep *ep, struct kprog_join *j,
		   struct kprog_job_nodes *map, struct kprog_ring *ring)
{
	struct kprog_job *job;
	bool created = false;
	int err = 0;

	mutex_lock(&kprog_jobs_mutex);
	if (ep->job) {
		err = -EISCONN;
		goto out_unlock;
	}
	job = kprog_job_find(j->job_key);
	if (!job) {
		job = kprog_job_create(j, j->eager_limit ? j->eager_limit :
				       min(kprog_eager_limit, kprog_eager_quota -
					   KPROG_EAGER_OVERHEAD), map);
		if (!job) {
			err = -ENOMEM;
			goto out_unlock;
		}
		created = true;
	} else {
		if (j->size != job->size ||
		    (j->eager_limit && j->eager_limit != job->eager_limit) ||
		    !!(j->flags & KPROG_JOIN_NET_ONLY) != job->net_only ||
		    !kprog_job_same_map(job, map)) {
			err = -EINVAL;
			goto out_unlock;
		}
		if (!uid_eq(job->owner, current_euid()) &&
		    !(job->shared && (j->flags & KPROG_JOIN_SHARED))) {
			err = -EACCES;
			goto out_unlock;
		}
	}
	if (!kprog_job_is_local(job, j->rank)) {
		err = -EINVAL;
		goto out_free;
	}

	/*
	 * Peers reach the endpoint as soon as its rank is in the table (a
	 * message arrives, a kick writes its ring header): rank, ring and job
	 * are set before that, never after (a kick found a NULL ring header
	 * under the fuzzer, 2026-11-23).
	 */
	ep->rank = j->rank;
	ep->ring = *ring;
	if (!created)
		kprog_job_get(job);
	spin_lock_bh(&job->lock);
	if (job->peers[j->rank].kind != KPROG_PEER_ABSENT) {
		spin_unlock_bh(&job->lock);
		/* @ring stays the caller's to free */
		ep->rank = 0;
		memset(&ep->ring, 0, sizeof(ep->ring));
		if (!created)
			kprog_job_put(job);
		err = -EADDRINUSE;
		goto out_free;
	}
	/* Publish a fully set up endpoint; pairs with kprog_ep_job(). */
	smp_store_release(&ep->job, job);
	job->peers[j->rank].kind = KPROG_PEER_LOCAL;
	job->peers[j->rank].ep = ep;
	clear_bit(j->rank, job->left);
	spin_unlock_bh(&job->lock);

	if (created)
		hash_add_rcu(kprog_jobs, &job->hnode, job->key);
	job->members++;
	j->eager_limit = job->eager_limit;
	mutex_unlock(&kprog_jobs_mutex);
	return 0;

out_free:
	if (created)
		kprog_job_put(job);
out_unlock:
	mutex_unlock(&kprog_jobs_mutex);
	return err;
}

/**
 * kprog_job_leave_begin() - a joined endpoint starts to leave
 * @ep: the endpoint; its file is being released
 *
 * From now on lookups of its rank find nothing, receivers that test the
 * rank see it left, and nobody can take the rank until
 * kprog_job_leave_end().
 */
void kprog_job_leave_begin(struct kprog_ep *ep)
{
	struct kprog_job *job = ep->job;

	spin_lock_bh(&job->lock);
	job->peers[ep->rank].kind = KPROG_PEER_LEAVING;
	spin_unlock_bh(&job->lock);
	set_bit(ep->rank, job->left);
	/* Pairs with the lock-free test_bit() of receivers. */
	smp_mb__after_atomic();
}

/**
 * kprog_job_leave_end() - the endpoint is out of every queue: free its rank
 * @ep: the endpoint after kprog_job_leave_begin() and its departure
 *
 * The endpoint keeps its job reference until it is freed.
 */
void kprog_job_leave_end(struct kprog_ep *ep)
{
	struct kprog_job *job = ep->job;

	mutex_lock(&kprog_jobs_mutex);
	spin_lock_bh(&job->lock);
	job->peers[ep->rank].kind = KPROG_PEER_ABSENT;
	job->peers[ep->rank].ep = NULL;
	spin_unlock_bh(&job->lock);
	if (!--job->members)
		hash_del_rcu(&job->hnode);
	mutex_unlock(&kprog_jobs_mutex);
}

/**
 * kprog_job_peer() - how to reach @rank now
 * @job: job
 * @rank: rank < job->size
 * @out: filled; out->ep is referenced when out->kind is LOCAL
 */
void kprog_job_peer(struct kprog_job *job, u32 rank,
		    struct kprog_peer_ref *out)
{
	struct kprog_peer *p = &job->peers[rank];

	spin_lock_bh(&job->lock);
	out->kind = p->kind;
	out->node = p->node;
	out->ep = NULL;
	if (p->kind == KPROG_PEER_LOCAL && job->net_only) {
		/* reached through the network transport, looping back */
		out->kind = KPROG_PEER_REMOTE;
	} else if (p->kind == KPROG_PEER_LOCAL) {
		out->ep = p->ep;
		kprog_ep_get(out->ep);
	}
	spin_unlock_bh(&job->lock);
}

/**
 * kprog_job_get_ep() - the local endpoint holding @rank, referenced
 * @job: job
 * @rank: rank < job->size
 *
 * Return: the endpoint or NULL if the rank is not (or no longer) joined
 * on this node.
 */
struct kprog_ep *kprog_job_get_ep(struct kprog_job *job, u32 rank)
{
	struct kprog_ep *ep = NULL;

	spin_lock_bh(&job->lock);
	if (job->peers[rank].kind == KPROG_PEER_LOCAL) {
		ep = job->peers[rank].ep;
		kprog_ep_get(ep);
	}
	spin_unlock_bh(&job->lock);
	return ep;
}
EXPORT_SYMBOL_GPL(kprog_job_get_ep);
