// SPDX-License-Identifier: GPL-2.0
/*
 * kprog endpoints: allocation, references, and the wait for transfers
 * that still touch a departing endpoint's memory.
 */
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/printk.h>
#include <linux/vmalloc.h>
#include <linux/sched/mm.h>
#include <linux/sched/isolation.h>
#include "ep.h"
#include "job.h"

/* Live endpoints, checked at unload to catch leaks. */
static atomic_t kprog_live_eps = ATOMIC_INIT(0);

static void kprog_ep_release(struct kref *ref)
{
	struct kprog_ep *ep = container_of(ref, struct kprog_ep, ref);

	/* Every op returned its slot and iovec entries before it let go. */
	WARN_ON_ONCE(ep->nr_ops || ep->nr_rndv || ep->iov_total);
	WARN_ON_ONCE(!xa_empty(&ep->chans));
	xa_destroy(&ep->chans);
	kprog_ring_free(&ep->ring);
	kprog_ep_drop_grants(ep);
	if (ep->job)
		kprog_job_put(ep->job);
	mutex_destroy(&ep->join_lock);
	free_cpumask_var(ep->waiter_cpus);
	kfree(ep);
	atomic_dec(&kprog_live_eps);
}

/**
 * kprog_ep_drop_grants() - release the grant table and mm of an endpoint
 * @ep: an endpoint no drain can reach (freed, or whose JOIN failed)
 */
void kprog_ep_drop_grants(struct kprog_ep *ep)
{
	vfree(ep->grants);
	ep->grants = NULL;
	ep->nr_grants = 0;
	if (ep->mm)
		mmdrop(ep->mm);
	ep->mm = NULL;
}

/**
 * kprog_ep_note_cpus() - remember where the calling task may run
 * @ep: the caller's endpoint
 *
 * Called by the calls a task that waits makes (JOIN, WAIT, blocking posts),
 * so that a later sched_setaffinity() or cpuset change is seen at the next
 * such call. Writes only when the mask changed: usually one compare.
 */
void kprog_ep_note_cpus(struct kprog_ep *ep)
{
	if (!cpumask_equal(ep->waiter_cpus, current->cpus_ptr))
		cpumask_copy(ep->waiter_cpus, current->cpus_ptr);
}

/**
 * kprog_ep_waiter_cpu() - the CPU a waiting task of @ep advertises, if usable
 * @ep: joined endpoint
 *
 * The ring header's waiter_cpu is written by user space, so it is only a
 * request: a bound high-priority copy goes there only if the endpoint's
 * process may run on that CPU (its cpuset and affinity) and the CPU does
 * housekeeping work (not isolated by isolcpus=domain or nohz_full, which
 * take it out of HK_TYPE_DOMAIN or HK_TYPE_WQ). Any context.
 *
 * Return: the CPU, or -1 (place the work unbound).
 */
int kprog_ep_waiter_cpu(struct kprog_ep *ep)
{
	int cpu = kprog_ring_waiter_cpu(&ep->ring);

	if (cpu < 0 || !cpumask_test_cpu(cpu, ep->waiter_cpus) ||
	    !housekeeping_test_cpu(cpu, HK_TYPE_WQ) ||
	    !housekeeping_test_cpu(cpu, HK_TYPE_DOMAIN))
		return -1;
	return cpu;
}

/**
 * kprog_ep_other_cpu() - a CPU for work that a process's own call starts
 * @ep: the caller's endpoint
 *
 * A high-priority worker woken from a process's call tends to be placed
 * on the caller's CPU and preempts the caller before it leaves the call,
 * which then lasts as long as the work: the work the call hands off should
 * run beside the caller, not in front of it. Any context.
 *
 * Return: the first CPU after the caller's (wrapping) on which @ep's
 * process may run, online and doing housekeeping (see
 * kprog_ep_waiter_cpu()), or -1 (place the work unbound).
 */
int kprog_ep_other_cpu(struct kprog_ep *ep)
{
	int self = raw_smp_processor_id();
	int cpu;

	for_each_cpu_wrap(cpu, ep->waiter_cpus, (self + 1) % nr_cpu_ids) {
		if (cpu != self && cpu_online(cpu) &&
		    housekeeping_test_cpu(cpu, HK_TYPE_WQ) &&
		    housekeeping_test_cpu(cpu, HK_TYPE_DOMAIN))
			return cpu;
	}
	return -1;
}

/**
 * kprog_ep_alloc() - a new endpoint for an opened file, not in any job
 *
 * Return: the endpoint holding one reference, or NULL.
 */
struct kprog_ep *kprog_ep_alloc(void)
{
	struct kprog_ep *ep = kzalloc(sizeof(*ep), GFP_KERNEL_ACCOUNT);

	if (!ep)
		return NULL;
	if (!zalloc_cpumask_var(&ep->waiter_cpus, GFP_KERNEL_ACCOUNT)) {
		kfree(ep);
		return NULL;
	}
	atomic_inc(&kprog_live_eps);
	kref_init(&ep->ref);
	mutex_init(&ep->join_lock);
	spin_lock_init(&ep->mlock);
	spin_lock_init(&ep->olock);
	INIT_LIST_HEAD(&ep->posted);
	INIT_LIST_HEAD(&ep->unexpected);
	INIT_LIST_HEAD(&ep->mprobed);
	INIT_LIST_HEAD(&ep->ops);
	INIT_LIST_HEAD(&ep->overflow);
	atomic_set(&ep->xfers, 0);
	init_waitqueue_head(&ep->wq);
	atomic_set(&ep->events, 0);
	xa_init(&ep->chans);
	mutex_init(&ep->coll_mutex);
	return ep;
}

/**
 * kprog_ep_put() - drop an endpoint reference
 * @ep: endpoint
 *
 * Must be called where sleeping is allowed: the last put frees the ring.
 */
void kprog_ep_put(struct kprog_ep *ep)
{
	kref_put(&ep->ref, kprog_ep_release);
}
EXPORT_SYMBOL_GPL(kprog_ep_put);

/**
 * kprog_ep_quiesce() - wait until no transfer touches @ep's memory
 * @ep: endpoint already marked dead
 *
 * Transfers notice the departure before their next chunk, so this waits
 * for at most one chunk per transfer. Afterwards user space may reuse
 * every buffer it had posted. Process context, no locks held.
 */
void kprog_ep_quiesce(struct kprog_ep *ep)
{
	/* Pairs with kprog_ep_xfer_get(); ep->dead was set before. */
	smp_mb();
	wait_event(ep->wq, !atomic_read(&ep->xfers));
}

/**
 * kprog_ep_exit() - report endpoints still alive at unload
 */
void kprog_ep_exit(void)
{
	if (atomic_read(&kprog_live_eps))
		pr_err("kprog: leaked %d endpoints\n",
		       atomic_read(&kprog_live_eps));
}
