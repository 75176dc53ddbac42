// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Progress and waiting: one call makes everything of kprog move that can
 * move in user space (ring completions, deferred posts, fast-path
 * channels); blocking calls spin on that for an adaptive time (spin.h)
 * and then sleep in the kernel until a completion, an event (a message
 * the kernel queued, a departure, a new channel) or a sender's kick.
 */
#define _GNU_SOURCE	/* sched_getcpu() */
#include <dlfcn.h>
#include <sched.h>
#include "cpus.h"
#include "shim.h"
#include "coll.h"
#include "collprof.h"

static bool in_progress, in_hook;

void kp_progress(void)
{
	uint64_t seen = kp.activity;

	if (!kp.active || in_progress)
		return;
	in_progress = true;
	kp_recv_batch_flush();	/* Open MPI's progress callback comes here too */
	kp_ring_drain();
	kp_deferred_flush();
	if (kp_coll_deferred)
		kp_coll_flush();
	kp_fast_poll();
	if (kp_idup_pending && !in_hook)
		kp_idup_poll();
	in_progress = false;
	/* other threads asleep in the kernel may wait for what completed */
	if (kp.mt && kp.activity != seen)
		kp_mt_after_progress();
}

/*
 * Open MPI's own blocking calls (collectives, waits on its requests) spin
 * in opal_progress(); receives posted in user space and completions of
 * ours must move meanwhile too, or a peer's synchronous send to such a
 * receive would wait for the application's next call into kprog.
 */
typedef int (*opal_cb_t)(void);
static int (*opal_unregister)(opal_cb_t);

static int opal_cb(void)
{
	/* never wait for the lock inside Open MPI: a thread in the shim progresses */
	if (!kp_mt_trylock())
		return 0;
	in_hook = true;
	kp_progress();
	in_hook = false;
	if (kp.mt)
		kp_mt_unlock();
	return 0;
}

void kp_progress_hook(bool on)
{
	int (*reg)(opal_cb_t);

	if (on) {
		reg = (int (*)(opal_cb_t))dlsym(RTLD_DEFAULT, "opal_progress_register");
		opal_unregister = (int (*)(opal_cb_t))dlsym(RTLD_DEFAULT,
							    "opal_progress_unregister");
		if (reg && opal_unregister && reg(opal_cb) == 0)
			return;
		opal_unregister = NULL;
		/* a batched receive would then wait through Open MPI's blocking calls */
		kp.rbatch = false;
		kp_log(1, "opal_progress_register not found: receives posted in user space move only in kprog's calls, receives are not batched");
	} else if (opal_unregister) {
		opal_unregister(opal_cb);
		opal_unregister = NULL;
	}
}

/* Open MPI's progress engine, for its own requests while we sleep. */
static void ompi_kick(void)
{
	int flag;

	PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, kp.node_comm, &flag, MPI_STATUS_IGNORE);
}

/*
 * How long one sleep may last before it looks at Open MPI's progress
 * engine (ompi_kick()) on its own: 50 us while the wait includes Open MPI
 * requests; otherwise 1 ms, doubled after every sleep that nothing ended,
 * up to KP_NAP_MAX_NS. The timeout is only a safety net for Open MPI's
 * traffic that this process may owe progress to (a pass-through
 * nonblocking operation): what kprog carries wakes the sleeper itself.
 * Without the back-off a rank parked for seconds woke a thousand times a
 * second; on an oversubscribed node each wake-up took the CPU from the
 * ranks that work, whose spin yields to it (issue 31: npscale's lone pair
 * at np 8 on 2 vCPUs 18-69 us instead of 1.9 with six parked ranks).
 */
#define KP_NAP_MIN_NS	1000000L
#define KP_NAP_MAX_NS	16000000L

static long nap_timeout(const struct kp_wait *w, bool ompi_pending)
{
	long t = KP_NAP_MIN_NS;
	unsigned int i;

	if (ompi_pending)
		return 50000;
	for (i = 0; i < w->naps && t < KP_NAP_MAX_NS; i++)
		t *= 2;
	return t < KP_NAP_MAX_NS ? t : KP_NAP_MAX_NS;
}

/* Sleep until something happens; the caller polls again afterwards. */
static void nap(struct kp_wait *w, bool ompi_pending)
{
	uint64_t act = kp.activity;
	long timeout = nap_timeout(w, ompi_pending);
	uint32_t ev;

	/* Before sleeping: receives kept back may find their messages here. */
	kp_deferred_arrived();
	if (kp.activity != act)
		return;
	ev = __atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE);

	if (kp.mt) {
		/* without the lock; woken by other threads' kicks too (lock.c) */
		kp_mt_nap_begin();
		if (!kp_fast_news() && __atomic_load_n(&kp.ring->tail, __ATOMIC_ACQUIRE) ==
				       kp.ring->head) {
			w->slept = true;
			w->naps++;
			kp_mt_sleep(timeout, ev);
		}
		kp_mt_nap_end();
		if (!ompi_pending)
			ompi_kick();
		return;
	}
	kp_fast_waiting(true);
	/* Last look after asking to be kicked: a sender may have missed the flag. */
	if (!kp_fast_news() && __atomic_load_n(&kp.ring->tail, __ATOMIC_ACQUIRE) ==
			       kp.ring->head) {
		w->slept = true;
		w->naps++;
		kp_sleep_events(timeout, ev);
	}
	kp_fast_waiting(false);
	if (!ompi_pending)
		ompi_kick();
}

/*
 * How long the idle stretch that just ended really was. After a sleep,
 * the time the wake-up took is not part of it: the kernel stamps every
 * event and completion (kprog_ring_hdr.event_ns), so the stretch ends at
 * the stamp, and the spin policy sees the wait as it was, not as slow as
 * the scheduler made it look.
 */
static uint64_t idle_ns(const struct kp_wait *w, uint64_t now)
{
	uint64_t ev, mono, ago;

	if (!w->slept)
		return now - w->last;
	/* the stamp is CLOCK_MONOTONIC, our times kp_clock_ns(): how long ago */
	ev = __atomic_load_n(&kp.ring->event_ns, __ATOMIC_ACQUIRE);
	mono = kp_now_ns();
	if (ev > mono)
		return now - w->last;
	ago = mono - ev;
	return ago < now - w->last ? now - w->last - ago : now - w->last;
}

/*
 * Tells the module on which CPU this process waits (kprog_ring_hdr
 * .waiter_cpu): a rendezvous copy for us is then queued there, where it
 * takes time from our spinning rather than from a peer that computes.
 * The senders of our channels learn it too (kp_waiter_pub(): spin.h
 * KP_SPIN_SEND_YIELD 3). Refreshed at every clock read, as the scheduler
 * may move us.
 */
static void advertise_waiter(void)
{
	bool ring = kp.waiter && kp.ring, pub = kp_waiter_pub();
	uint32_t cpu1;

	if (!ring && !pub)
		return;
	cpu1 = kp_cpu_here();
	if (ring)
		__atomic_store_n(&kp.ring->waiter_cpu, cpu1, __ATOMIC_RELAXED);
	if (pub)
		kp_fast_waiter(cpu1);	/* writes only when it changed */
}

/*
 * Past the shared-case limit: may this wait spin on (spin.h
 * KP_SPIN_QUEUE_NS)? Only up to the alone limit, and only while no task
 * of the machine waits for a CPU, looked at every KP_SPIN_QUEUE_NS.
 */
static bool cpus_free(struct kp_wait *w, uint64_t now)
{
	int q;

	if (now - w->last >= kp.spin.alone_ns)
		return false;
	if (!w->alone || now - w->queue_t >= KP_SPIN_QUEUE_NS) {
		q = kp_cpu_queue();
		w->queue_t = now;
		w->free = q != INT32_MIN && q <= 0;
		if (w->free && !w->alone) {
			w->alone = true;
			kp.spin.alone++;
		}
	}
	return w->free;
}

/*
 * The idle stretch that just ended, to the spin policy. One that ended in
 * the spin past the limit (cpus_free()) is no evidence for the shared
 * limit (nobody else wanted the CPUs): counted, but adapts nothing.
 */
static void stretch_end(struct kp_wait *w, uint64_t now)
{
	if (w->alone && !w->slept)
		kp.spin.alone_ended++;
	kp_spin_record(&kp.spin, w->alone ? 0 : idle_ns(w, now), w->slept);
}

/*
 * One idle step of a blocking call. The spin limit bounds each idle
 * stretch, not the whole wait: while completions keep coming (a window of
 * messages streaming in) the caller keeps spinning, and it sleeps only
 * after the adaptive limit of nothing happening. While the kernel has
 * work for this process (a transfer into one of its receives) the spinner
 * yields now and then, so that a kernel worker competing for this CPU
 * gets it.
 */
void kp_wait_step(struct kp_wait *w, bool ompi_pending)
{
	uint64_t now;

	/*
	 * Poll without PAUSE and read the clock every 16th idle step only:
	 * plain Open MPI polls the same way, and under emulation (the test
	 * VM) a PAUSE leaves the translated code and a clock read is a
	 * helper call, each costing more than a poll.
	 */
	if (kp.mt)
		kp_mt_yield();	/* the other threads' turn (lock.c) */
	if (w->t0 && kp.activity == w->seen && (++w->polls & 15))
		return;
	now = kp_clock_ns();
	advertise_waiter();
	if (kp.spin.watch_next && now >= kp.spin.watch_next)
		kp_spin_watch(&kp.spin, now, kp_run_delay_ns());
	if (!w->t0) {
		w->t0 = w->last = now;
		w->seen = kp.activity;
		return;
	}
	if (kp.activity != w->seen) {
		/* something moved: this idle stretch is over */
		stretch_end(w, now);
		w->seen = kp.activity;
		w->last = now;
		w->slept = false;
		w->alone = false;
		w->naps = 0;
	}
	if (now - w->last < kp_spin_limit(&kp.spin, now)) {
		static uint64_t last_yield, last_poll;

		/*
		 * Across nodes: have the module run the NIC's completions here
		 * rather than wait until their event is handled, perhaps on
		 * another CPU and behind other softirq work (KPROG_WAIT_POLL).
		 */
		if (w->kernel_work && kp.net_poll_ns && now - last_poll >= kp.net_poll_ns) {
			kp_net_poll();
			last_poll = now;
			return;
		}
		if (kp_spin_may_yield(&kp.spin, now)) {
			/* a rank runnable on this CPU (our partner?) goes first */
			kp_spin_yield(now, &w->delay0);
		} else if (w->kernel_work && now - last_yield > 8000) {
			sched_yield();
			last_yield = now;
		}
		return;
	}
	/* shared CPUs, but nobody waits for one: spin on (spin.h KP_SPIN_QUEUE_NS) */
	if (kp.spin.yield && kp.spin.alone_ns && !w->slept && cpus_free(w, now))
		return;
	if (kp.verbose && !w->dumped && now - w->t0 > 20000000000ull) {
		w->dumped = true;
		kp_logf("waiting for 20 s; kprog state:");
		kp_fast_dump();
	}
	nap(w, ompi_pending);
}

/* kp_req_wait_yields() for r, with its source's node (shim.h) */
bool kp_wait_yields(const struct kp_req *r)
{
	bool remote = false;

	if (!kp.small_yield && r->kind == KR_RECV && r->comm && r->peer >= 0 &&
	    r->peer < r->comm->size)
		remote = !kp.local[r->comm->c2w[r->peer]];
	return kp_req_wait_yields(r, kp.small_yield, remote);
}

void kp_wait_end(struct kp_wait *w)
{
	if (!w->t0)
		return;
	stretch_end(w, kp_clock_ns());
	if (kp.ring)
		__atomic_store_n(&kp.ring->waiter_cpu, 0, __ATOMIC_RELAXED);
	if (KP_SPIN_SEND_YIELD == 3)	/* the hand-over's build only */
		kp_fast_waiter(0);	/* nothing when nothing was published */
}

/*
 * Block until r completes. A post of r made meanwhile (a receive moved to
 * the kernel, a deferred post) says that we wait for it.
 */
void kp_wait_one(struct kp_req *r)
{
	struct kp_wait w = { .kernel_work = kp_wait_yields(r) };
	bool blocking = r->blocking;

	r->blocking = true;
	kp_fast_want(kp_fast_want_recv(r));	/* kicks from its source only (fast.c) */
	for (;;) {
		kp_progress();
		if (r->state == RS_COMPLETE || r->state == RS_INACTIVE || r->state == RS_FREE)
			break;
		KP_CP_LOOP();
		kp_wait_step(&w, false);
	}
	kp_fast_want(false);
	r->blocking = blocking;
	kp_wait_end(&w);
}
