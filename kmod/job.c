// SPDX-License-Identifier: GPL-2.0
/*
 * kprog job registry: jobs by key, rank slots, who may join.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/hashtable.h>
#include <linux/bitmap.h>
#include <linux/cred.h>
#include "kprog.h"

static DEFINE_MUTEX(kprog_jobs_mutex);
static DEFINE_HASHTABLE(kprog_jobs, 8);

static void kprog_job_release(struct kref *ref)
{
	struct kprog_job *job = container_of(ref, struct kprog_job, ref);

	kvfree(job->ranks);
	bitmap_free(job->left);
	kfree(job);
}

/**
 * kprog_job_put() - drop a job reference
 * @job: job, already out of the registry when this is the last reference
 */
void kprog_job_put(struct kprog_job *job)
{
	kref_put(&job->ref, kprog_job_release);
}

static struct kprog_job *kprog_job_find(u64 key)
{
	struct kprog_job *job;

	hash_for_each_possible(kprog_jobs, job, hnode, key)
		if (job->key == key)
			return job;
	return NULL;
}

static struct kprog_job *kprog_job_create(const struct kprog_join *j,
					  u32 eager_limit)
{
	struct kprog_job *job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);

	if (!job)
		return NULL;
	job->ranks = kvcalloc(j->size, sizeof(*job->ranks), GFP_KERNEL_ACCOUNT);
	job->left = bitmap_zalloc(j->size, GFP_KERNEL_ACCOUNT);
	if (!job->ranks || !job->left) {
		kvfree(job->ranks);
		bitmap_free(job->left);
		kfree(job);
		return NULL;
	}
	kref_init(&job->ref);
	spin_lock_init(&job->lock);
	job->key = j->job_key;
	job->owner = current_euid();
	job->shared = j->flags & KPROG_JOIN_SHARED;
	job->size = j->size;
	job->eager_limit = eager_limit;
	return job;
}

/**
 * kprog_job_join() - KPROG_IOC_JOIN
 * @ep: an endpoint not yet in a job
 * @j: the request, copied in; output fields are filled on success
 *
 * Return: 0 or a negative errno as documented in the ABI header.
 */
int kprog_job_join(struct kprog_ep *ep, struct kprog_join *j)
{
	struct kprog_job *job;
	bool created = false;
	u32 eager;
	int err;

	if (kprog_ep_job(ep))
		return -EISCONN;
	if (j->abi_version != KPROG_ABI_VERSION)
		return -EPROTONOSUPPORT;
	if (j->flags & ~KPROG_JOIN_SHARED)
		return -EINVAL;
	if (!j->size)
		return -EINVAL;
	if (j->size > kprog_max_job_size)
		return -E2BIG;
	if (j->rank >= j->size)
		return -EINVAL;
	/* A limit above the quota could never be buffered anyway. */
	eager = j->eager_limit ? j->eager_limit : kprog_eager_limit;
	eager = min(eager, kprog_eager_quota - KPROG_EAGER_OVERHEAD);

	mutex_lock(&kprog_jobs_mutex);
	if (ep->job) {
		mutex_unlock(&kprog_jobs_mutex);
		return -EISCONN;
	}
	err = kprog_ring_alloc(ep);
	if (err) {
		mutex_unlock(&kprog_jobs_mutex);
		return err;
	}
	job = kprog_job_find(j->job_key);
	if (!job) {
		job = kprog_job_create(j, eager);
		if (!job) {
			err = -ENOMEM;
			goto out_unlock;
		}
		created = true;
	} else {
		if (j->size != job->size ||
		    (j->eager_limit && eager != job->eager_limit)) {
			err = -EINVAL;
			goto out_unlock;
		}
		if (!uid_eq(job->owner, current_euid()) &&
		    !(job->shared && (j->flags & KPROG_JOIN_SHARED))) {
			err = -EACCES;
			goto out_unlock;
		}
	}

	spin_lock(&job->lock);
	if (job->ranks[j->rank]) {
		spin_unlock(&job->lock);
		err = -EADDRINUSE;
		goto out_unlock;
	}
	job->ranks[j->rank] = ep;
	clear_bit(j->rank, job->left);
	spin_unlock(&job->lock);

	if (created)
		hash_add(kprog_jobs, &job->hnode, job->key);
	else
		kref_get(&job->ref);
	job->members++;
	ep->rank = j->rank;
	/* Publish a fully set up endpoint; pairs with kprog_ep_job(). */
	smp_store_release(&ep->job, job);
	mutex_unlock(&kprog_jobs_mutex);

	j->eager_limit = job->eager_limit;
	j->ring_entries = ep->ring_entries;
	j->ring_bytes = ep->ring_bytes;
	j->max_iov = kprog_max_iov;
	j->max_ops = kprog_max_ops;
	return 0;

out_unlock:
	kprog_ring_free(ep);
	mutex_unlock(&kprog_jobs_mutex);
	return err;
}

/**
 * kprog_job_leave() - take a joined endpoint out of its job at close
 * @ep: the endpoint; its file is being released
 *
 * Frees the rank slot only after every trace of the endpoint is gone from
 * the matching queues, so that a new process taking the rank cannot be
 * confused with the old one; returns once no transfer touches the
 * endpoint's buffers any more.
 */
void kprog_job_leave(struct kprog_ep *ep)
{
	struct kprog_job *job = ep->job;

	mutex_lock(&kprog_jobs_mutex);
	spin_lock(&job->lock);
	job->ranks[ep->rank] = NULL;
	spin_unlock(&job->lock);
	set_bit(ep->rank, job->left);
	/* Pairs with the lock-free test_bit() of receivers. */
	smp_mb__after_atomic();

	kprog_match_ep_gone(ep);

	if (!--job->members)
		hash_del(&job->hnode);
	mutex_unlock(&kprog_jobs_mutex);

	kprog_match_ep_quiesce(ep);
}

/**
 * kprog_job_get_ep() - the endpoint holding @rank, referenced
 * @job: job
 * @rank: rank < job->size
 *
 * Return: the endpoint or NULL if the rank is not (or no longer) joined.
 */
struct kprog_ep *kprog_job_get_ep(struct kprog_job *job, u32 rank)
{
	struct kprog_ep *ep;

	spin_lock(&job->lock);
	ep = job->ranks[rank];
	if (ep)
		kprog_ep_get(ep);
	spin_unlock(&job->lock);
	return ep;
}
