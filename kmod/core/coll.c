// SPDX-License-Identifier: GPL-2.0
/*
 * kprog collective schedules: KPROG_IOC_COLL hands the module one
 * nonblocking collective as rounds of steps (send, receive, copy,
 * reduce), which the module runs with no further call from the process
 * and which ends with exactly one completion in the ring.
 *
 *   post      the ioctl copies and checks the steps, then runs rounds
 *             itself until one must wait for a message (or all are done:
 *             the ioctl returns the completion, nothing goes to the ring);
 *             a copy or reduction of more than KPROG_COLL_INLINE bytes,
 *             or a rendezvous-sized send or receive, it leaves to the work
 *             item (on another CPU), so that the call stays cheap and the
 *             bytes move while the process computes
 *   order     a round's sends and receives start before its copies and
 *             reductions (a round's steps are independent), so that its
 *             transfers are under way while the starter works
 *   steps     a SEND or RECV is an ordinary kprog operation of the
 *             process, with the schedule's (context, tag) and an envelope
 *             flag that keeps it apart from point-to-point traffic, so
 *             every transport carries it unchanged; its completion is
 *             diverted here (kprog_op_complete()) instead of the ring
 *   rounds    the completion of a round's last step (any context, often
 *             a softirq) queues the schedule's work item, which starts
 *             the next round in process context on the process's mm
 *             (kthread_use_mm()), as the ioctl would; COPY and REDUCE run
 *             there too, on the process's pinned pages (coll_local.c).
 *             The workqueue is unbound and high-priority: when every CPU
 *             computes, a round must preempt someone to finish during
 *             the computation, not after it
 *   end       the last round, or the first failing step (its other steps
 *             withdrawn), completes the schedule's head operation: one
 *             ring entry through the ordinary completion path (overflow,
 *             WAIT, poll unchanged)
 *
 * Locking: ep->coll_mutex serialises everything that starts or withdraws
 * steps of an endpoint's schedules (the ioctl, the work items) against
 * each other and against close (kprog_coll_close()); completions never
 * take it. A schedule's pending count, with a bias held by whoever posts
 * a round, says when the round is over; the one who brings it to zero
 * owns the schedule next. @lock guards only the table of steps in
 * flight, for withdrawal.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/memcontrol.h>
#include <linux/kthread.h>
#include <linux/hrtimer.h>
#include <linux/delay.h>
#include <linux/moduleparam.h>
#include <linux/sched/isolation.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/kprog.h>
#include "kprog.h"
#include "ep.h"
#include "job.h"
#include "op.h"
#include "match.h"
#include "transport.h"
#include "stats.h"
#include "coll.h"

static struct workqueue_struct *kprog_coll_wq;
static struct workqueue_struct *kprog_coll_near_wq;

/*
 * A COPY or REDUCE step longer than this is not run by the ioctl but by
 * the work item (one chunk of coll_local.c: below, a work item's hop
 * costs more than the bytes).
 */
#define KPROG_COLL_INLINE	(16 * 1024)

/* Live schedules, checked at unload to catch leaks. */
static atomic_t kprog_live_scheds = ATOMIC_INIT(0);

/*
 * What the ioctl hands off starts this long after the call, on the
 * caller's CPU (0: at once, on another CPU). Two ranks post a collective
 * at the same moment (after a barrier, in lockstep codes); work woken on
 * a CPU whose rank is still inside its call preempts it there (the
 * worker's high priority, at the call's next might_sleep() or its return
 * to user space), and the call then lasts as long as the round: so the
 * round starts once the caller has returned and computes, on its own CPU,
 * where it preempts the computation instead. Under emulation the return
 * takes tens of microseconds, natively about one.
 */
unsigned int kprog_coll_start_delay_us = 100;
module_param_named(coll_start_delay_us, kprog_coll_start_delay_us, uint, 0644);
MODULE_PARM_DESC(coll_start_delay_us,
		 "Microseconds after the call that a collective's handed-off round starts on the caller's CPU, 0 = at once on another CPU, <= 10000 (default 100)");

/* Armed start timers: unload waits for them (they fire within the delay). */
static atomic_t kprog_coll_timers = ATOMIC_INIT(0);

/**
 * struct kprog_sched - a collective schedule being run
 * @ref: one while it runs (dropped when it ends), one per queued work
 *	item, one held by the ioctl that posts it
 * @ep: its endpoint, referenced
 * @head: the operation whose completion is the schedule's (on the
 *	owner's list while the schedule runs past its ioctl), referenced
 * @mm: the process's address space (mmgrab()ed; mmget_not_zero() while
 *	a round starts from the work item)
 * @req_id: the completion's cookie
 * @context: the context of its messages
 * @tag: the tag of its messages
 * @nr_steps: entries in @steps
 * @next: the first step of the round being started, or of the next
 *	round; this and the next four under ep->coll_mutex
 * @end: the end of the round being started
 * @cur: the next step of the round's pass
 * @pass: the pass of the round being run: its RECV steps, then its SEND
 *	steps, then its COPY and REDUCE steps (kprog_step_pass())
 * @in_round: the round at @next is being started: @pending holds the
 *	runner's bias (also across a hand-off from the ioctl to the work
 *	item)
 * @pending: steps of the current round in flight, plus one while the
 *	round is being started
 * @err: the first failure (0: none); set once, with cmpxchg()
 * @handoff: the round is over and the work item must start the next
 * @in_worker: rounds are being started by the work item, not the ioctl:
 *	a rendezvous already arrived may be pulled right there
 * @lock: guards @ops; irq-safe (completions come from any context)
 * @work: starts rounds and withdraws steps in process context
 * @start: queues @work on its CPU a while after the ioctl handed off
 * @home: the CPU the ioctl ran on, where the work item runs the rounds
 *	that completions start (-1: unbound, the CPU does no unbound work)
 * @memlock: the pin limit of the steps the work item starts
 *	(kprog_memlock_pages() of the posting process, read in its call
 *	before the work item may start any: a kernel thread has every
 *	capability)
 * @memcg: the posting process's memory cgroup, referenced, taken with
 *	@memlock (NULL: none): what the work item allocates for the
 *	schedule is charged there, as in the call (a kernel thread's own
 *	allocations are charged to nobody)
 * @steps: the checked copy of the caller's steps (in @tail)
 * @ops: per step, its operation while it is in flight (referenced; in
 *	@tail)
 * @tail: @ops, then @steps: one allocation per schedule, because each
 *	allocation in the start call costs microseconds under emulation
 */
struct kprog_sched {
	refcount_t ref;
	struct kprog_ep *ep;
	struct kprog_op *head;
	struct mm_struct *mm;
	u64 req_id;
	u32 context;
	s32 tag;
	u32 nr_steps;
	u32 next;
	u32 end;
	u32 cur;
	u8 pass;
	bool in_round;
	atomic_t pending;
	int err;
	bool handoff;
	bool in_worker;
	spinlock_t lock;	/* @ops */
	struct work_struct work;
	struct hrtimer start;
	int home;
	u64 memlock;
	struct mem_cgroup *memcg;
	struct kprog_coll_step *steps;
	struct kprog_op **ops;
	struct kprog_op *tail[];
};

static void kprog_sched_free(struct kprog_sched *s)
{
	if (s->head)
		kprog_op_put(s->head);
	mem_cgroup_put(s->memcg);
	mmdrop(s->mm);
	kprog_ep_put(s->ep);
	kvfree(s);
	atomic_dec(&kprog_live_scheds);
}

/* Process context: the last reference drops the endpoint's. */
static void kprog_sched_put(struct kprog_sched *s)
{
	if (refcount_dec_and_test(&s->ref))
		kprog_sched_free(s);
}

/* Whether bound work of a schedule may run on @cpu (not an isolated one). */
static bool kprog_sched_cpu_ok(int cpu)
{
	return housekeeping_test_cpu(cpu, HK_TYPE_WQ) &&
	       housekeeping_test_cpu(cpu, HK_TYPE_DOMAIN);
}

/*
 * Queue the work item on @cpu's near queue (-1: unbound) with a reference
 * the caller took for it. Any context. An item already pending holds a
 * reference of its own, so ours is dropped; but that item may have run on
 * another CPU since queue_work_on() saw it pending, and ended the schedule:
 * then ours is the last, which only a work item may drop (in process
 * context), and the item is queued again with it.
 */
static void kprog_sched_queue(struct kprog_sched *s, int cpu)
{
	bool queued;

	do {
		if (cpu >= 0)
			queued = queue_work_on(cpu, kprog_coll_near_wq,
					       &s->work);
		else
			queued = queue_work(kprog_coll_wq, &s->work);
	} while (!queued && !refcount_dec_not_one(&s->ref));
}

/*
 * Queue the work item with a reference the caller took for it (before
 * anything it publishes lets a work item already queued end the
 * schedule). Any context.
 */
static void kprog_sched_kick_held(struct kprog_sched *s)
{
	int cpu = READ_ONCE(s->home);

	/*
	 * On the CPU its process posted it from: each rank's rounds run
	 * beside that rank's computation, in parallel with its peers' on
	 * theirs. An unbound worker is woken on the CPU of whoever completed
	 * the round (often a peer's worker), and one rank's rounds then wait
	 * behind the other's, as long as that CPU is busy.
	 *
	 * Once no round is left to start, the work item only ends the
	 * schedule (its completion into the ring): from a worker or a softirq
	 * that runs right here, on the CPU that completed the last step,
	 * after what runs there now. Sent to the home CPU, the end waited for
	 * a wake-up there, and for that CPU itself: an emulated one stalled
	 * for milliseconds at times while the others ran, and the schedule
	 * ended that much after its last byte had moved
	 * (docs/benchmarks-coll.md). Not from a process's own call: a worker
	 * woken on the caller's CPU preempts the caller inside the call.
	 */
	if (READ_ONCE(s->next) == s->nr_steps && !READ_ONCE(s->in_round) &&
	    (!in_task() || (current->flags & PF_WQ_WORKER)) &&
	    kprog_sched_cpu_ok(raw_smp_processor_id()))
		cpu = raw_smp_processor_id();
	if (cpu >= 0 && !cpu_online(cpu))
		cpu = -1;
	kprog_sched_queue(s, cpu);
}

/*
 * Queue the work item, with a reference of its own. Any context; the
 * caller keeps the schedule from ending meanwhile (a step in flight).
 */
static void kprog_sched_kick(struct kprog_sched *s)
{
	refcount_inc(&s->ref);
	kprog_sched_kick_held(s);
}

/*
 * A CPU other than the caller's for work its call hands off: one of the
 * process's (kprog_ep_other_cpu()), else, for a process bound to the
 * caller's CPU alone (mpirun binds each rank to a core), the first other
 * online CPU that does unbound work, where the unbound queue might have
 * run it anyway but would as likely have woken it on the caller's CPU.
 * -1: none (one CPU).
 */
static int kprog_sched_beside_cpu(struct kprog_ep *ep)
{
	int self = raw_smp_processor_id();
	int cpu = kprog_ep_other_cpu(ep);

	if (cpu >= 0)
		return cpu;
	for_each_cpu_wrap(cpu, cpu_online_mask, (self + 1) % nr_cpu_ids) {
		if (cpu != self && housekeeping_test_cpu(cpu, HK_TYPE_WQ) &&
		    housekeeping_test_cpu(cpu, HK_TYPE_DOMAIN))
			return cpu;
	}
	return -1;
}

/*
 * Queue the work item from the process's own call (the ioctl), on another
 * CPU: a high-priority worker on the caller's CPU would preempt the caller
 * inside the call, which would then last as long as the round's copies.
 */
static void kprog_sched_kick_beside(struct kprog_sched *s)
{
	refcount_inc(&s->ref);
	kprog_sched_queue(s, kprog_sched_beside_cpu(s->ep));
}

/* Hard interrupt on the CPU that armed it: the reference passes on. */
static enum hrtimer_restart kprog_sched_start_fire(struct hrtimer *t)
{
	struct kprog_sched *s = container_of(t, struct kprog_sched, start);

	/*
	 * On this CPU (the work item runs only after this returns), unless
	 * the CPU is isolated: then unbound, as the completions' rounds.
	 */
	kprog_sched_queue(s, s->home >= 0 ? smp_processor_id() : -1);
	atomic_dec(&kprog_coll_timers);
	return HRTIMER_NORESTART;
}

/*
 * The ioctl hands the round over: its work item starts after
 * coll_start_delay_us on the caller's CPU, or at once beside it.
 */
static void kprog_sched_kick_handoff(struct kprog_sched *s)
{
	unsigned int us = min(READ_ONCE(kprog_coll_start_delay_us), 10000U);

	if (!us) {
		kprog_sched_kick_beside(s);
		return;
	}
	refcount_inc(&s->ref);
	atomic_inc(&kprog_coll_timers);
	hrtimer_start(&s->start, us * NSEC_PER_USEC, HRTIMER_MODE_REL_PINNED);
}

/* Record the first failure; true if @err is it. */
static bool kprog_sched_fail(struct kprog_sched *s, int err)
{
	return !cmpxchg(&s->err, 0, err);
}

/* A step of the current round ended (or never went in flight). */
static void kprog_sched_step_end(struct kprog_sched *s)
{
	if (!atomic_dec_and_test(&s->pending))
		return;
	/*
	 * The round is over: the work item owns the schedule now. Its
	 * reference is taken before the hand-off is published: a work item
	 * queued already (by a failing step) may see the hand-off at once,
	 * end the schedule and drop every other reference.
	 */
	refcount_inc(&s->ref);
	/* Orders the reference before the hand-off; pairs with xchg(). */
	smp_store_release(&s->handoff, true);
	kprog_sched_kick_held(s);
}

/* Step @i is in flight as @op: withdrawal finds it here. */
static void kprog_sched_track(struct kprog_sched *s, u32 i, struct kprog_op *op)
{
	unsigned long flags;

	kprog_op_get(op);
	atomic_inc(&s->pending);
	spin_lock_irqsave(&s->lock, flags);
	s->ops[i] = op;
	spin_unlock_irqrestore(&s->lock, flags);
}

/* Step @i is no longer in flight; drops the table's reference. */
static void kprog_sched_untrack(struct kprog_sched *s, u32 i,
				struct kprog_op *op)
{
	unsigned long flags;
	bool was;

	spin_lock_irqsave(&s->lock, flags);
	was = s->ops[i] == op;
	if (was)
		s->ops[i] = NULL;
	spin_unlock_irqrestore(&s->lock, flags);
	if (was)
		kprog_op_put(op);
}

/**
 * kprog_coll_op_done() - a SEND or RECV step's operation completed
 * @op: the step's operation (@op->sched set), off its owner's list
 * @cqe: its completion, which does not go to the ring
 *
 * Called by kprog_op_complete(), as @op->divert, in any context, with
 * the owner list's reference, which passes here. A receive that got
 * fewer bytes than its step names failed (-EMSGSIZE), as one that got
 * more.
 */
static void kprog_coll_op_done(struct kprog_op *op, const struct kprog_cqe *cqe)
{
	struct kprog_sched *s = op->sched;
	int err = cqe->error;

	if (!err && !op->is_send && cqe->bytes != op->buf.len)
		err = -EMSGSIZE;
	kprog_sched_untrack(s, op->sched_step, op);
	kprog_op_put(op);
	/* The other steps are withdrawn by the work item (or the runner). */
	if (err && kprog_sched_fail(s, err))
		kprog_sched_kick(s);
	kprog_sched_step_end(s);
}

/* Withdraw every step in flight that can be; under ep->coll_mutex. */
static void kprog_sched_withdraw(struct kprog_sched *s)
{
	unsigned long flags;
	struct kprog_op *op;
	u32 i;

	for (i = 0; i < s->nr_steps; i++) {
		spin_lock_irqsave(&s->lock, flags);
		op = s->ops[i];
		if (op)
			kprog_op_get(op);
		spin_unlock_irqrestore(&s->lock, flags);
		if (!op)
			continue;
		/* Not withdrawn: matched already, it completes by itself. */
		kprog_op_withdraw(op);
		kprog_op_put(op);
	}
}

/* The post a SEND or RECV step makes. */
static void kprog_sched_post_of(const struct kprog_sched *s,
				const struct kprog_coll_step *st, u64 addr,
				struct kprog_post *p)
{
	memset(p, 0, sizeof(*p));
	p->req_id = s->req_id;
	p->addr = addr;
	p->len = st->len;
	p->context = s->context;
	p->peer = st->peer;
	p->tag = s->tag;
	if (st->flags & KPROG_STEP_IOV)
		p->flags = KPROG_POST_IOV;
}

/* A rendezvous SEND step: an operation in flight until its FIN. */
static int kprog_sched_send_rndv(struct kprog_sched *s, u32 i,
				 struct kprog_post *p,
				 const struct kprog_transport *xport,
				 const struct kprog_peer_ref *peer,
				 struct kprog_iov_import *im)
{
	struct kprog_ep *ep = s->ep;
	struct kprog_op *sop;
	struct kprog_msg *msg;
	int err;

	sop = kprog_op_new_mm(ep, p, true, im, KPROG_BUDGET_NONE, s->mm);
	if (IS_ERR(sop))
		return PTR_ERR(sop);
	if (s->in_worker)
		sop->buf.memlock = s->memlock;
	/* Bounded by max_colls * max_coll_steps, not max_rndv. */
	kprog_op_charge_budget(sop, KPROG_BUDGET_RNDV, true);
	sop->sched = s;
	sop->sched_step = i;
	sop->sched_cpu = READ_ONCE(s->home);
	sop->divert = kprog_coll_op_done;
	if (peer->kind == KPROG_PEER_LOCAL) {
		kprog_ep_get(peer->ep);
		sop->dst = peer->ep;
	}
	msg = kprog_rndv_build(sop, xport, KPROG_ENV_COLL, &err);
	if (!msg) {
		kprog_op_uncharge(sop);
		kprog_op_put(sop);
		return err;
	}
	/*
	 * Never pulled by the sender's side on arrival: a receive already
	 * posted is copied on its own schedule's CPU (xport_shm.c), so that
	 * each rank copies what it receives, in parallel with its peers.
	 * Pulled by the sender's worker, the second of two ranks to start a
	 * round moved both halves of the exchange, one after the other, and
	 * which one that was changed from one collective to the next: a
	 * collective's time varied by a copy's length, and OSU's overlap
	 * counts every late one (docs/benchmarks-coll.md).
	 */
	msg->poster_waits = false;
	sop->state = KPROG_OP_POSTED;
	kprog_sched_track(s, i, sop);
	/* Its completion may come before send_env returns. */
	kprog_op_activate(sop);
	err = xport->send_env(ep->job, peer, msg);
	if (err) {
		if (xport->put_handle)
			xport->put_handle(sop);
		kprog_msg_free(msg);
		if (kprog_op_deactivate(sop))
			kprog_op_put(sop);
		kprog_sched_untrack(s, i, sop);
		atomic_dec(&s->pending);	/* the runner's bias remains */
	}
	return err;
}

static int kprog_sched_send(struct kprog_sched *s, u32 i)
{
	const struct kprog_coll_step *st = &s->steps[i];
	struct kprog_ep *ep = s->ep;
	struct kprog_job *job = ep->job;
	const struct kprog_transport *xport;
	struct kprog_iov_import im;
	struct kprog_peer_ref peer;
	struct kprog_msg *msg;
	struct kprog_post p;
	int err;

	kprog_sched_post_of(s, st, st->src, &p);
	err = kprog_iov_import(&im, &p);
	if (err)
		return err;
	kprog_job_peer(job, st->peer, &peer);
	xport = kprog_xport_for(job, &peer);
	if (!xport) {
		err = peer.kind == KPROG_PEER_REMOTE ? -EHOSTUNREACH :
						       -ECONNRESET;
		goto out;
	}
	err = -ENOBUFS;
	if (im.len <= job->eager_limit &&
	    im.len + KPROG_EAGER_OVERHEAD <= kprog_eager_quota) {
		/* Eager: the step is over once the message is handed on. */
		msg = kprog_eager_build(ep, &p, &im, &err);
		if (msg) {
			msg->env.flags |= KPROG_ENV_COLL;
			err = xport->send_env(job, &peer, msg);
			if (err)
				kprog_msg_free(msg);
		}
	}
	/* -ENOBUFS from the eager path: the receiver's quota is used up. */
	if (err == -ENOBUFS)
		err = kprog_sched_send_rndv(s, i, &p, xport, &peer, &im);
out:
	if (peer.ep)
		kprog_ep_put(peer.ep);
	kprog_iov_release(&im);
	return err;
}

static int kprog_sched_recv(struct kprog_sched *s, u32 i)
{
	const struct kprog_coll_step *st = &s->steps[i];
	struct kprog_ep *ep = s->ep;
	struct kprog_msg *msg;
	struct kprog_op *rop;
	struct kprog_post p;
	u64 bytes;
	int err;

	kprog_sched_post_of(s, st, st->dst, &p);
	rop = kprog_op_new_mm(ep, &p, false, NULL, KPROG_BUDGET_NONE, s->mm);
	if (IS_ERR(rop))
		return PTR_ERR(rop);
	if (s->in_worker)
		rop->buf.memlock = s->memlock;
	kprog_op_charge_budget(rop, KPROG_BUDGET_OPS, true);
	rop->sched = s;
	rop->sched_step = i;
	rop->sched_cpu = READ_ONCE(s->home);
	rop->divert = kprog_coll_op_done;
	kprog_sched_track(s, i, rop);
	err = kprog_match_recv(ep, rop, &msg, false);
	if (!err && !msg)
		return 0;	/* posted: the list and the queue hold it */
	if (!err && msg->src_gone) {
		kprog_msg_drop(msg, -ECONNRESET);
		err = -ECONNRESET;
	} else if (!err && kprog_msg_is_rndv(msg)) {
		/*
		 * On the owner's list already; the transfer takes a reference.
		 * The work item pulls it itself (it would only queue another);
		 * the ioctl only a small one, as KPROG_IOC_RECV does.
		 */
		kprog_op_get(rop);
		kprog_rndv_start(msg, rop, s->in_worker ||
				 msg->env.len <= ep->job->eager_limit);
		return 0;
	} else if (!err) {
		bytes = kprog_eager_copy_out(msg, rop, &err);
		kprog_msg_free(msg);
		if (!err && bytes != rop->buf.len)
			err = -EMSGSIZE;
	}
	kprog_sched_untrack(s, i, rop);
	atomic_dec(&s->pending);	/* the runner's bias remains */
	kprog_op_uncharge(rop);
	kprog_op_put(rop);
	return err;
}

/* Start step @i; its own failure is returned, later ones come through
 * kprog_coll_op_done().
 */
static int kprog_sched_step(struct kprog_sched *s, u32 i)
{
	switch (s->steps[i].kind) {
	case KPROG_STEP_SEND:
		return kprog_sched_send(s, i);
	case KPROG_STEP_RECV:
		return kprog_sched_recv(s, i);
	default:
		return kprog_coll_local(&s->steps[i]);
	}
}

static bool kprog_step_is_local(const struct kprog_coll_step *st)
{
	return st->kind == KPROG_STEP_COPY || st->kind == KPROG_STEP_REDUCE;
}

/*
 * Whether the ioctl leaves step @st, and the rest of its round, to the work
 * item: a COPY or REDUCE of more than KPROG_COLL_INLINE bytes, and a SEND
 * or RECV of one block above the eager limit (a rendezvous). Starting a
 * rendezvous in the call costs its matching, the transfer's set-up and a
 * worker's wake-up (often on the CPU of the peer, which posts the same
 * collective at the same moment and then pays for that worker inside its
 * own call); the work item does all of it, and pulls what arrived itself,
 * while the process computes. Eager steps and iovec ones (whose byte
 * count is known only once imported) stay in the call.
 */
static bool kprog_step_is_long(const struct kprog_sched *s,
			       const struct kprog_coll_step *st)
{
	if (kprog_step_is_local(st))
		return st->len > KPROG_COLL_INLINE;
	return !(st->flags & KPROG_STEP_IOV) &&
	       st->len > s->ep->job->eager_limit;
}

/*
 * The pass of a round that starts a step: receives first, so that a peer's
 * send finds them posted (a send started by the work item then moves its
 * bytes itself, msg->poster_waits: two ranks whose work items run at once
 * each move what they send, in parallel, rather than one of them finding
 * both halves and moving both), then sends, then the local steps, which
 * run while the transfers are under way.
 */
#define KPROG_PASS_LOCAL	2
static u8 kprog_step_pass(const struct kprog_coll_step *st)
{
	if (kprog_step_is_local(st))
		return KPROG_PASS_LOCAL;
	return st->kind == KPROG_STEP_SEND;
}

/*
 * Start the steps of the round [@next, @end) from @cur on, in passes
 * (kprog_step_pass()). The ioctl stops at a long step
 * (kprog_step_is_long()) and hands the rest of the round, with its bias,
 * to the work item.
 *
 * Return: false when the work item continues the round.
 */
static bool kprog_sched_round(struct kprog_sched *s)
{
	const struct kprog_coll_step *st;
	int err;

	for (;; s->cur++) {
		if (s->cur == s->end) {
			if (s->pass == KPROG_PASS_LOCAL)
				return true;
			s->pass++;
			s->cur = s->next;
		}
		if (READ_ONCE(s->err))
			return true;
		st = &s->steps[s->cur];
		if (kprog_step_pass(st) != s->pass)
			continue;
		if (!s->in_worker && kprog_step_is_long(s, st)) {
			WRITE_ONCE(s->handoff, true);
			kprog_sched_kick_handoff(s);
			return false;
		}
		err = kprog_sched_step(s, s->cur);
		if (err)
			kprog_sched_fail(s, err);
	}
}

/*
 * Start rounds until one must wait or the schedule is over. The caller
 * owns the schedule (nothing in flight, or the round being started with
 * its bias), holds ep->coll_mutex and runs in process context on the
 * process's mm (unless the schedule failed: then no step starts).
 *
 * Return: true when the schedule is over (@err says how).
 */
static bool kprog_sched_run(struct kprog_sched *s)
{
	u32 end;

	for (;;) {
		if (READ_ONCE(s->ep->coll_closed))
			kprog_sched_fail(s, -ECONNRESET);
		if (!s->in_round) {
			if (READ_ONCE(s->err) || s->next == s->nr_steps)
				return true;
			for (end = s->next + 1; end < s->nr_steps &&
			     s->steps[end].round == s->steps[s->next].round;
			     end++)
				;
			s->end = end;
			s->cur = s->next;
			s->pass = 0;
			WRITE_ONCE(s->in_round, true);
			atomic_set(&s->pending, 1);
		}
		if (!kprog_sched_round(s))
			return false;
		WRITE_ONCE(s->in_round, false);
		WRITE_ONCE(s->next, s->end);
		if (READ_ONCE(s->err))
			kprog_sched_withdraw(s);
		if (!atomic_dec_and_test(&s->pending))
			return false;
	}
}

static void kprog_sched_work(struct work_struct *work)
{
	struct kprog_sched *s = container_of(work, struct kprog_sched, work);
	struct kprog_ep *ep = s->ep;
	u64 start = kprog_stat_clock();
	struct mem_cgroup *memcg;
	struct kprog_cqe c;
	bool over = false, mm = false;

	mutex_lock(&ep->coll_mutex);
	memcg = set_active_memcg(s->memcg);
	if (READ_ONCE(s->err))
		kprog_sched_withdraw(s);
	if (xchg(&s->handoff, false)) {
		/*
		 * A failed schedule starts no step (no mm needed), but a round
		 * handed over by the ioctl still drops its bias in there.
		 */
		if (!READ_ONCE(s->err) && !READ_ONCE(ep->coll_closed)) {
			if (mmget_not_zero(s->mm)) {
				kthread_use_mm(s->mm);
				mm = true;
			} else {
				/* The process is exiting; its close follows. */
				kprog_sched_fail(s, -ECONNRESET);
			}
		}
		s->in_worker = true;
		over = kprog_sched_run(s);
		s->in_worker = false;
		if (mm) {
			kthread_unuse_mm(s->mm);
			mmput(s->mm);
		}
		if (over)
			ep->nr_colls--;
	}
	set_active_memcg(memcg);
	mutex_unlock(&ep->coll_mutex);
	/* Counted before the completion makes it visible to user space. */
	kprog_stat_run(KPROG_STAT_WORK_ITEMS, start);
	if (over) {
		if (!READ_ONCE(s->err) && READ_ONCE(ep->coll_closed))
			kprog_sched_fail(s, -ECONNRESET);
		kprog_cqe_fill(&c, s->req_id, ep->rank, s->tag, 0,
			       READ_ONCE(s->err));
		kprog_op_complete(s->head, &c);
		kprog_sched_put(s);	/* it ran */
	}
	kprog_sched_put(s);		/* the work item's */
}

static bool kprog_sched_overlap(u64 a, u64 b, u64 len)
{
	return len && a < b + len && b < a + len;
}

/* The kernel does not trust a schedule: see <linux/kprog.h>. */
static int kprog_sched_check(const struct kprog_sched *s, u32 size, u32 self)
{
	const struct kprog_coll_step *st;
	u64 bytes;
	u32 i;

	for (i = 0; i < s->nr_steps; i++) {
		st = &s->steps[i];
		if ((st->flags & ~KPROG_STEP_IOV) || st->__pad)
			return -EINVAL;
		if (i && st->round < s->steps[i - 1].round)
			return -EINVAL;
		switch (st->kind) {
		case KPROG_STEP_SEND:
		case KPROG_STEP_RECV:
			if (st->peer < 0 || st->peer >= size || st->peer == self ||
			    st->dtype || st->op)
				return -EINVAL;
			if (st->flags & KPROG_STEP_IOV) {
				if (st->len > kprog_max_iov)
					return -EINVAL;
				bytes = st->len * sizeof(struct kprog_iov);
			} else {
				if (st->len > KPROG_MAX_MSG)
					return -EINVAL;
				bytes = st->len;
			}
			if (!access_ok(u64_to_user_ptr(st->kind == KPROG_STEP_SEND ?
						       st->src : st->dst), bytes))
				return -EFAULT;
			break;
		case KPROG_STEP_REDUCE:
			bytes = kprog_reduce_size(st->dtype, st->op);
			if (!bytes || st->len % bytes)
				return -EINVAL;
			fallthrough;
		case KPROG_STEP_COPY:
			if (st->kind == KPROG_STEP_COPY && (st->dtype || st->op))
				return -EINVAL;
			if ((st->flags & KPROG_STEP_IOV) || st->len > KPROG_MAX_MSG ||
			    kprog_sched_overlap(st->src, st->dst, st->len))
				return -EINVAL;
			if (!access_ok(u64_to_user_ptr(st->src), st->len) ||
			    !access_ok(u64_to_user_ptr(st->dst), st->len))
				return -EFAULT;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

/* Copy in and check the steps of @uc. */
static struct kprog_sched *kprog_sched_new(struct kprog_ep *ep,
					   const struct kprog_coll *uc)
{
	struct kprog_sched *s;
	int err;

	/* nr_steps <= max_coll_steps: no overflow. */
	s = kvzalloc(struct_size(s, tail, uc->nr_steps) +
		     array_size(uc->nr_steps, sizeof(*s->steps)),
		     GFP_KERNEL_ACCOUNT);
	if (!s)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&kprog_live_scheds);
	refcount_set(&s->ref, 1);
	kprog_ep_get(ep);
	s->ep = ep;
	mmgrab(current->mm);
	s->mm = current->mm;
	s->req_id = uc->req_id;
	s->context = uc->context;
	s->tag = uc->tag;
	s->nr_steps = uc->nr_steps;
	spin_lock_init(&s->lock);
	INIT_WORK(&s->work, kprog_sched_work);
	hrtimer_init(&s->start, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED);
	s->home = raw_smp_processor_id();
	if (!kprog_sched_cpu_ok(s->home))
		s->home = -1;
	s->start.function = kprog_sched_start_fire;
	s->ops = s->tail;
	s->steps = (struct kprog_coll_step *)(s->tail + s->nr_steps);
	err = -EFAULT;
	if (copy_from_user(s->steps, u64_to_user_ptr(uc->steps),
			   (size_t)s->nr_steps * sizeof(*s->steps)))
		goto err;
	err = kprog_sched_check(s, ep->job->size, ep->rank);
	if (err)
		goto err;
	return s;
err:
	kprog_sched_free(s);
	return ERR_PTR(err);
}

/**
 * kprog_coll_post() - KPROG_IOC_COLL
 * @ep: joined endpoint
 * @uc: the request, copied in; @done and @cqe are filled
 *
 * Return: 0 (the schedule runs, or is over when @uc->done is set) or a
 * negative errno (nothing was started): -EINVAL, -E2BIG, -ENOBUFS,
 * -EFAULT, -ENOMEM, -EOPNOTSUPP (max_colls is 0).
 */
int kprog_coll_post(struct kprog_ep *ep, struct kprog_coll *uc)
{
	struct kprog_post hp = {
		.req_id = uc->req_id,
		.context = uc->context,
		.peer = ep->rank,
		.tag = uc->tag,
	};
	struct kprog_sched *s;
	struct kprog_op *head;
	int err = 0;

	uc->done = 0;
	if (!kprog_max_colls)
		return -EOPNOTSUPP;
	if (uc->flags || uc->tag < 0 || !uc->nr_steps || !current->mm)
		return -EINVAL;
	if (uc->nr_steps > kprog_max_coll_steps)
		return -E2BIG;
	s = kprog_sched_new(ep, uc);
	if (IS_ERR(s))
		return PTR_ERR(s);
	refcount_inc(&s->ref);	/* the caller's */

	mutex_lock(&ep->coll_mutex);
	if (ep->nr_colls >= kprog_max_colls) {
		err = -ENOBUFS;
		goto out;
	}
	/* Its max_ops slot bounds the overflow list, as any receive's. */
	head = kprog_op_new(ep, &hp, false, NULL, KPROG_BUDGET_OPS);
	if (IS_ERR(head)) {
		err = PTR_ERR(head);
		goto out;
	}
	kprog_op_get(head);
	s->head = head;
	ep->nr_colls++;
	if (kprog_sched_run(s)) {
		ep->nr_colls--;
		uc->done = 1;
		kprog_cqe_fill(&uc->cqe, s->req_id, ep->rank, s->tag, 0,
			       s->err);
		kprog_op_uncharge(head);
		kprog_op_put(head);
		kprog_sched_put(s);	/* it ran */
	} else {
		/*
		 * The poster's pin limit and memory cgroup, for what the work
		 * item does on its behalf; read here, in its call: no work
		 * item starts a step before the mutex is released.
		 */
		s->memlock = kprog_memlock_pages();
		s->memcg = get_mem_cgroup_from_mm(current->mm);
		/*
		 * Its completion goes to the ring. No work item can end the
		 * schedule before it is listed: they wait for the mutex.
		 */
		kprog_op_activate(head);
	}
out:
	mutex_unlock(&ep->coll_mutex);
	if (err)
		kprog_sched_put(s);	/* never ran */
	kprog_sched_put(s);		/* the caller's */
	return err;
}

/**
 * kprog_coll_close() - no schedule of a departing endpoint starts a step
 * @ep: endpoint whose file is released, before kprog_depart()
 *
 * Waits for rounds being started; the steps they left in flight are
 * withdrawn or failed by the departure like any operation of @ep, and
 * each schedule then ends (its completion is dropped with the ring).
 */
void kprog_coll_close(struct kprog_ep *ep)
{
	mutex_lock(&ep->coll_mutex);
	WRITE_ONCE(ep->coll_closed, true);
	mutex_unlock(&ep->coll_mutex);
}

/**
 * kprog_coll_init() - the work queue of schedules
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_coll_init(void)
{
	kprog_coll_wq = alloc_workqueue("kprog_coll",
					WQ_UNBOUND | WQ_HIGHPRI, 0);
	if (!kprog_coll_wq)
		return -ENOMEM;
	/* Bound: rounds handed off by the ioctl, beside the caller. */
	kprog_coll_near_wq = alloc_workqueue("kprog_coll_near", WQ_HIGHPRI, 0);
	if (!kprog_coll_near_wq) {
		destroy_workqueue(kprog_coll_wq);
		return -ENOMEM;
	}
	return 0;
}

/**
 * kprog_coll_exit() - wait for queued rounds; call after the transports
 */
void kprog_coll_exit(void)
{
	/* Each fires within coll_start_delay_us and then queues its work. */
	while (atomic_read(&kprog_coll_timers))
		msleep(20);
	destroy_workqueue(kprog_coll_near_wq);
	destroy_workqueue(kprog_coll_wq);
	if (atomic_read(&kprog_live_scheds))
		pr_err("kprog: leaked %d collective schedules\n",
		       atomic_read(&kprog_live_scheds));
}
