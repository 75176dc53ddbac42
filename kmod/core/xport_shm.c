// SPDX-License-Identifier: GPL-2.0
/*
 * kprog shared-memory transport: the loopback between endpoints of one
 * node.
 *
 * Envelopes go "straight to the receiving path" (kprog_arrive() on the
 * destination endpoint, in the sender's context). A matched rendezvous is
 * pulled by copying from the sender's pages into the receiver's pages
 * (one copy, kprog_umem_copy()): small ones, and those the calling
 * process would only wait for (KPROG_POST_BLOCKING), in the call; the
 * others on a workqueue so that the copy runs while the processes
 * compute. The FIN is a direct completion of the send.
 *
 * Where the worker runs decides whether the copy overlaps anything. With
 * every CPU busy (one process computing, its peer spinning in MPI_Wait)
 * an unbound worker woken by the computing process tends to stay on that
 * process's CPU and takes its time slices: the computation then takes as
 * long as computation and copy together. So a copy goes to the CPU where
 * one of the two processes says it waits (kprog_ring_hdr.waiter_cpu), on
 * a high-priority bound worker that preempts the spinner there; only
 * without such a CPU does it go to the unbound workqueue, whose worker
 * the scheduler may put on any idle CPU. User space writes the hint, so it
 * is honoured only on a CPU that process may use and that is not isolated
 * (kprog_ep_waiter_cpu()).
 *
 * A collective schedule's transfer (KPROG_ENV_COLL) with no waiter goes to
 * a high-priority worker instead: the schedule's next round waits for it
 * while both processes compute, so its worker must preempt one of them, as
 * the schedule's own work items do (coll.c); a normal-priority worker
 * shares a CPU with a computing process and ends after the computation.
 * Started by a process's own call (its KPROG_IOC_COLL), it goes to another
 * CPU of that process (kprog_ep_other_cpu()): on the caller's own, it
 * would preempt the caller inside the call, which then lasts as long as
 * the copy. A transfer into a schedule's receive started from anywhere
 * else (a peer's work item, whose send found the receive posted) is
 * copied on the CPU the receiving schedule runs on (kprog_shm_step_cpu()):
 * each rank copies what it receives, in parallel with its peers, instead
 * of the second of two ranks to start a round copying both directions.
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "kprog.h"
#include "ep.h"
#include "job.h"
#include "op.h"
#include "transport.h"
#include "stats.h"

static struct workqueue_struct *kprog_shm_wq;
static struct workqueue_struct *kprog_shm_near_wq;
static struct workqueue_struct *kprog_shm_coll_wq;

static int kprog_shm_send_env(struct kprog_job *job,
			      const struct kprog_peer_ref *peer,
			      struct kprog_msg *msg)
{
	return kprog_arrive(peer->ep, msg);
}

static bool kprog_shm_aborted(void *arg)
{
	struct kprog_xfer *x = arg;

	/* A process killed while it copies in its own call stops at once. */
	return kprog_xfer_aborted(x) || kprog_ep_gone(x->msg->sop->owner) ||
	       fatal_signal_pending(current);
}

/* The copy; the caller reports the end with kprog_xfer_done(). */
static u64 kprog_shm_copy(struct kprog_xfer *x, int *err)
{
	struct kprog_ep *src = x->msg->sop->owner;
	u64 done;

	done = kprog_umem_copy(&x->rop->buf, &x->msg->sop->buf, NULL, x->len,
			       kprog_shm_aborted, x, err);
	kprog_ep_xfer_put(src);
	return done;
}

static void kprog_shm_work(struct work_struct *work)
{
	struct kprog_xfer *x = container_of(work, struct kprog_xfer, work);
	u64 start = kprog_stat_clock(), done;
	int err;

	done = kprog_shm_copy(x, &err);
	/* Counted before the completions make it visible to user space. */
	kprog_stat_run(KPROG_STAT_WORK_ITEMS, start);
	kprog_xfer_done(x, done, err);
}

/*
 * A CPU other than the caller's on which the receiver or the sender of
 * @x waits, or -1. The caller's own CPU is no use: the caller is about to
 * return to its computation (it would have copied inline otherwise).
 */
static int kprog_shm_waiter_cpu(struct kprog_xfer *x)
{
	int self = raw_smp_processor_id();
	int cpu;

	cpu = kprog_ep_waiter_cpu(x->rop->owner);
	if (cpu >= 0 && cpu != self)
		return cpu;
	cpu = kprog_ep_waiter_cpu(x->msg->sop->owner);
	if (cpu >= 0 && cpu != self)
		return cpu;
	return -1;
}

/*
 * The CPU a collective's transfer into a schedule's receive is copied on:
 * the one the receiving schedule's rounds run on (struct kprog_op
 * @sched_cpu), so that every rank copies what it receives, beside its own
 * computation and in parallel with its peers; -1 for another receive, an
 * unbound schedule, or when the receiving process itself asks from its
 * own call (there it would preempt the caller inside the call).
 */
static int kprog_shm_step_cpu(struct kprog_xfer *x)
{
	struct kprog_op *rop = x->rop;
	int cpu;

	if (!rop->sched)
		return -1;
	cpu = READ_ONCE(rop->sched_cpu);
	if (cpu < 0 || !cpu_online(cpu))
		return -1;
	if (in_task() && !(current->flags & PF_WQ_WORKER) &&
	    current->mm == rop->buf.mm)
		return -1;
	return cpu;
}

static int kprog_shm_pull(struct kprog_xfer *x, bool inline_ok)
{
	bool coll;
	int cpu;

	/* From now on the sender's departure waits for this transfer. */
	kprog_ep_xfer_get(x->msg->sop->owner);
	if (inline_ok) {
		u64 done;
		int err;

		done = kprog_shm_copy(x, &err);
		kprog_xfer_done(x, done, err);
		return 0;
	}
	INIT_WORK(&x->work, kprog_shm_work);
	coll = x->msg->env.flags & KPROG_ENV_COLL;
	cpu = coll ? kprog_shm_step_cpu(x) : -1;
	if (cpu < 0)
		cpu = kprog_shm_waiter_cpu(x);
	/* A collective's, from a process's own call: beside the caller. */
	if (cpu < 0 && coll && in_task() && !(current->flags & PF_WQ_WORKER))
		cpu = kprog_ep_other_cpu(x->rop->owner);
	if (cpu >= 0)
		queue_work_on(cpu, kprog_shm_near_wq, &x->work);
	else if (coll)
		queue_work(kprog_shm_coll_wq, &x->work);
	else
		queue_work(kprog_shm_wq, &x->work);
	return 0;
}

static void kprog_shm_fin(struct kprog_msg *msg, u64 bytes, int err)
{
	kprog_send_done(msg->sop, &msg->env, bytes, err);
}

static int kprog_shm_init(void)
{
	/* Unbound: long copies should spread over CPUs, not follow posters. */
	kprog_shm_wq = alloc_workqueue("kprog_shm", WQ_UNBOUND, 0);
	if (!kprog_shm_wq)
		return -ENOMEM;
	/* Bound and high-priority: it runs where a process only waits. */
	kprog_shm_near_wq = alloc_workqueue("kprog_shm_near", WQ_HIGHPRI, 0);
	if (!kprog_shm_near_wq)
		goto err_near;
	/* Collective transfers: preempt a computing process (see above). */
	kprog_shm_coll_wq = alloc_workqueue("kprog_shm_coll",
					    WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!kprog_shm_coll_wq)
		goto err_coll;
	return 0;
err_coll:
	destroy_workqueue(kprog_shm_near_wq);
err_near:
	destroy_workqueue(kprog_shm_wq);
	return -ENOMEM;
}

static void kprog_shm_exit(void)
{
	destroy_workqueue(kprog_shm_coll_wq);
	destroy_workqueue(kprog_shm_near_wq);
	destroy_workqueue(kprog_shm_wq);
}

const struct kprog_transport kprog_xport_shm = {
	.name = "shm",
	.features = KPROG_XF_CAN_MAP,
	.init = kprog_shm_init,
	.exit = kprog_shm_exit,
	.send_env = kprog_shm_send_env,
	.pull = kprog_shm_pull,
	.fin = kprog_shm_fin,
};
