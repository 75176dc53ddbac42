/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * How long a blocking call spins before it sleeps in the kernel.
 *
 * Spinning costs CPU time the kernel's workers may need; sleeping costs
 * a wake-up through the scheduler (microseconds on a server, hundreds of
 * microseconds under emulation) that a short exchange then pays in full.
 * The limit bounds one idle stretch (nothing completed, nothing arrived)
 * and follows the stretches this process has seen: one that ended while
 * spinning at t lets the limit grow to 2t; one that had to sleep but ended
 * (by the kernel's time stamp of the event, without the wake-up) within
 * the longest spin we allow makes it grow to twice its length (spinning
 * would have been cheaper than the wake-up); one that ran longer than
 * that halves it, towards the minimum, so a process whose peers compute
 * for long stretches sleeps almost at once.
 *
 * That adaptation is for a node whose CPUs are shared: there a spinner
 * takes the CPU from a peer or a kernel worker. When every rank of the
 * node has a CPU of its own (kp_spin_dedicate()), spinning takes nothing
 * from anybody, while a sleep puts a wake-up on the critical path of the
 * very next message (a sender waiting for its next round, then posting a
 * rendezvous late: receiver-side overlap lost). There the limit is fixed
 * at a few milliseconds, like Open MPI's busy polling but bounded: a wait
 * longer than that sleeps, and its wake-up is then a small part of it.
 *
 * When the node's ranks outnumber the CPUs they may use (kp_spin_oversub(),
 * decided at MPI_Init: affinity masks, cgroup quota), the partner a rank
 * waits for is often runnable on the waiter's own CPU, and every
 * microsecond of spinning delays the very message it waits for. Adapting
 * from the waits' lengths then goes the wrong way: a wait that ended soon
 * after a sleep ended because the sleep gave the partner the CPU, and the
 * adaptive limit grew to its maximum (1 ms) on that evidence (issue 31:
 * npscale's pairs 20x slower than plain Open MPI's, LAMMPS 1.3x). There the
 * limit is fixed and short (a partner running on another CPU answers
 * within it), the spinner yields at every clock read, as Open MPI's ranks
 * do when oversubscribed (mpi_yield_when_idle), and then sleeps in the
 * kernel, where the sender's kick wakes it.
 *
 * A node whose ranks have a CPU each may still be shared with another job.
 * The dedicated case therefore watches its run delay (the time it was
 * runnable but waited for a CPU, cpus.c) now and then while it waits
 * (kp_spin_watch()): above KP_SPIN_CROWDED_PCT of the time since the last
 * look it waits as if oversubscribed, below KP_SPIN_CLEAR_PCT as dedicated
 * again. The load average would say the same only for the past minute and
 * counts this job's own ranks; the run delay is this rank's own evidence.
 *
 * A yield helps only when what runs instead soon blocks again: the partner
 * of a tight exchange. When it is a task that computes (another job's CPU
 * hog, or a rank of the same job between two exchanges, as in LAMMPS at 4
 * ranks on 2 CPUs) the yield hands it a whole time slice (milliseconds),
 * and a message arriving meanwhile waits for that slice: the spinner is
 * runnable, so the sender's kick cannot make the scheduler prefer it, as
 * it does a sleeper it wakes. Each yield is therefore timed
 * (kp_spin_yielded()); one that kept the CPU away longer than
 * KP_SPIN_YIELD_LOST_NS, while this thread waited in the run queue (its
 * run delay grew: another task ran; a vCPU that the host of a virtual
 * machine took away shows the time but not the delay, and says nothing
 * about this machine's tasks), stops the yields for KP_SPIN_NOYIELD_NS, during
 * which the shared cases spin at most KP_SPIN_NOYIELD_SPIN_NS without
 * yielding and then sleep (kp_spin_limit()). Oversubscribed, that holds
 * only while another job's task may have taken the CPU (KP_SPIN_OWN):
 * when the task that ran was one of our own ranks, sleeping instead of
 * yielding puts a wake-up on every later message between our ranks
 * (npscale, all pairs at once at 8 ranks on 2 vCPUs: the yields off after
 * a few long yields, the adaptive limit shrunk to 1 us by the waits that
 * slept, and every message paid a wake-up: 440-480 us against 144-164
 * us for plain Open MPI), while our own rank will answer or compute what
 * we wait for anyway. Measured in the 2-vCPU VM
 * (issue 31): LAMMPS at 4 ranks 26.2 s plain, 29.1 s yielding for the
 * adaptive limit, 19.4 s with a 5 us spin and a sleep, while npscale's
 * pairs all at once, whose co-runners are partners, need the yields (1.4
 * us against 159 us with the short spin); docs/apps.md has the
 * application figures of this rule.
 * No MPI in here.
 */
#ifndef KPROG_SHIM_SPIN_H
#define KPROG_SHIM_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Polls of a channel between two clock reads of a spin on it
 * (kp_fast_recv_spin()). Natively a TSC read is a few cycles and any
 * interval would do. Under emulation (the test VM, QEMU TCG) every guest
 * TSC read takes the emulator's global clock lock, so when the two ranks
 * of an exchange read the clock in turn, each read moves that lock
 * between the host's CPUs. bench/clockpoll (a two-thread handover on two
 * vCPUs, 2026-11-24): 1.07 us per round trip with the waiter reading the
 * clock every 16th poll, 0.52 with every 256th (0.47 never); one more
 * read by the sender per message (the wait-state profiler's send stamp)
 * added 0.35 us to the first and 0.08 us to the second. 256 polls of a channel take
 * about a microsecond natively and ten emulated: a fine enough grain for
 * a limit whose purpose is to beat a wake-up.
 */
#define KP_SPIN_CLOCK_POLLS 256
_Static_assert((KP_SPIN_CLOCK_POLLS & (KP_SPIN_CLOCK_POLLS - 1)) == 0, "a power of two");

/*
 * Polls between two yields of a shared-case channel spin (oversubscribed
 * or crowded). Trial knob (issue 31, docs/apps.md seventh session): 1
 * yields at every poll, as Open MPI's progress loop does when
 * oversubscribed.
 */
#ifndef KP_SPIN_YIELD_POLLS
#define KP_SPIN_YIELD_POLLS KP_SPIN_CLOCK_POLLS
#endif
_Static_assert((KP_SPIN_YIELD_POLLS & (KP_SPIN_YIELD_POLLS - 1)) == 0, "a power of two");

/*
 * Oversubscribed, a blocking send that completed at once yields once
 * (kp_spin_handover(), spin_yield.c): 1 after every such send, 2 only
 * after one that woke its receiver from a sleep in the kernel (a kick),
 * 3 only when its receiver waits on this very CPU (the channel's
 * kprog_chan_dir.waiter_cpu, which a receiver sets while it waits:
 * fast.c); 0: it does not (the rule before). A yield helps only a
 * receiver that is runnable behind us on our CPU: 1 and 2 also yielded
 * when it waited on another CPU, or computed (docs/apps.md, seventh and
 * ninth sessions).
 */
#ifndef KP_SPIN_SEND_YIELD
#define KP_SPIN_SEND_YIELD 0
#endif

/* The run-delay watch: a look every 20 ms of waiting at most; the thresholds */
#define KP_SPIN_WATCH_NS	20000000ull
#define KP_SPIN_CROWDED_PCT	10
#define KP_SPIN_CLEAR_PCT	2

/*
 * A yield that kept the CPU from us this long handed it to a task that
 * computes (a time slice is milliseconds; a partner's answer and a
 * context switch there and back take tens of microseconds even under
 * emulation): no yields for the next KP_SPIN_NOYIELD_NS, and a spin of at
 * most KP_SPIN_NOYIELD_SPIN_NS before sleeping.
 */
/* #ifndef: a trial build may set them (-D, bench/apps/run-apps --shim columns) */
#ifndef KP_SPIN_YIELD_LOST_NS
#define KP_SPIN_YIELD_LOST_NS	500000ull
#endif
#ifndef KP_SPIN_NOYIELD_NS
#define KP_SPIN_NOYIELD_NS	100000000ull
#endif
#ifndef KP_SPIN_NOYIELD_SPIN_NS
#define KP_SPIN_NOYIELD_SPIN_NS	10000ull
#endif

/*
 * Oversubscribed by its own ranks, a job's long yield went to one of its
 * ranks unless the machine's run queue, read when the yield returned,
 * holds more tasks than the job has ranks on the node: only then is some
 * other job's task (a hog) runnable, and only then does the yield count
 * as lost. KP_SPIN_OWN 0: every long yield counts (the rule before).
 */
#ifndef KP_SPIN_OWN
#define KP_SPIN_OWN 1
#endif

/*
 * Past the shared-case limit, a wait sleeps only if some task of the
 * machine waits for a CPU (cpus.c kp_cpu_queue(): /proc/loadavg's count of
 * runnable tasks against the CPUs online). While none does, the spin takes
 * time from nobody, and a sleep would leave a CPU idle and put a wake-up on
 * the message's path (under emulation an idle vCPU's: the emulator's
 * thread sleeps on the host and must be woken too). So the wait spins on,
 * without yielding (nobody to yield to), up to alone_ns (the dedicated
 * limit, KPROG_SPIN_DEDICATED_US), looking at the run queue every
 * KP_SPIN_QUEUE_NS at most; the first task that waits for a CPU (a rank
 * woken by a message, a kernel worker) makes it sleep at the next look.
 * Issue 31: LAMMPS at 8 ranks on 2 vCPUs, where most waits slept after
 * 10 us (the lost-yield rule) while the other ranks were asleep too.
 */
#define KP_SPIN_QUEUE_NS	20000ull

struct kp_spin {
	uint64_t limit_ns;	/* spin this long, then sleep */
	uint64_t min_ns, max_ns;
	bool fixed;		/* KPROG_SPIN_US given, a dedicated CPU or oversubscribed: no adaptation */
	bool dedicated;		/* every rank of the node has its own CPU */
	bool oversub;		/* the node's ranks outnumber their CPUs */
	bool crowded;		/* dedicated, but other tasks take our CPUs now (run delay) */
	bool yield;		/* oversub or crowded: sched_yield() while spinning */
	bool delay_known;	/* the run delay can be read (cpus.c): it qualifies lost yields */
	uint64_t amin_ns, amax_ns, astart_ns;	/* the adaptive bounds and start */
	uint64_t dedicated_ns;	/* the dedicated limit */
	long oversub_us;	/* the oversubscribed limit; < 0: adaptive */
	uint64_t watch_next;	/* next look at the run delay (kp_clock_ns); 0: no watch */
	uint64_t watch_t, watch_delay;	/* the last look: when, and the run delay then */
	uint64_t noyield_until;	/* no yields before this time (kp_clock_ns): one was lost */
	uint64_t alone_ns;	/* shared case: spin on this long while no task waits for a CPU; 0: never */
	int job_ranks;		/* oversubscribed: this job's ranks on the node (KP_SPIN_OWN) */
	/* statistics, for KPROG_VERBOSE */
	uint64_t waits, slept, grew, shrank, crowded_times, yields, yields_lost;
	uint64_t yields_own;	/* long yields with no other job's task runnable: not lost */
	uint64_t handovers;	/* blocking sends that yielded (KP_SPIN_SEND_YIELD) */
	uint64_t alone, alone_ended;	/* spun on past the limit (CPUs free); ended so, no sleep */
};

/* May a shared-case spin yield now (yield set, no lost yield recently)? */
static inline bool kp_spin_may_yield(const struct kp_spin *s, uint64_t now)
{
	return s->yield && now >= s->noyield_until;
}

/*
 * Does a blocking send that completed at once yield (kp_spin_handover())?
 * @mode: KP_SPIN_SEND_YIELD; @kicked: the send woke its receiver;
 * @waiter: the receiver's CPU + 1 (its channel's waiter_cpu, 0: it does
 * not wait); @here: ours + 1 (0: unknown). Oversubscribed only: crowded
 * by another job, the task behind us is not our receiver; and not while
 * the yields are off after a lost one.
 */
static inline bool kp_spin_hands_over(const struct kp_spin *s, uint64_t now, int mode,
				      bool kicked, uint32_t waiter, uint32_t here)
{
	bool want = mode == 1 || (mode == 2 && kicked) || (mode == 3 && waiter && waiter == here);

	return want && s->oversub && kp_spin_may_yield(s, now);
}

/* The spin limit now: shorter while yields are off after a lost one. */
static inline uint64_t kp_spin_limit(const struct kp_spin *s, uint64_t now)
{
	if (s->yield && now < s->noyield_until && s->limit_ns > KP_SPIN_NOYIELD_SPIN_NS)
		return KP_SPIN_NOYIELD_SPIN_NS;
	return s->limit_ns;
}

/*
 * fixed_us >= 0: always spin that long (the old KPROG_SPIN_US);
 * fixed_us < 0: adapt between min_us and max_us, starting at start_us.
 */
void kp_spin_init(struct kp_spin *s, long fixed_us, long min_us, long max_us, long start_us);
/*
 * The node has at least as many CPUs as ranks: spin dedicated_us before
 * sleeping, with no adaptation (unless KPROG_SPIN_US fixed the spin).
 */
void kp_spin_dedicate(struct kp_spin *s, long dedicated_us);
/*
 * The node's ranks outnumber their CPUs: spin oversub_us (< 0: the
 * adaptive limit), yielding, then sleep (unless KPROG_SPIN_US fixed it).
 */
void kp_spin_oversub(struct kp_spin *s, long oversub_us, int job_ranks);
/*
 * A dedicated spin that watches the run delay (now: kp_clock_ns(), delay:
 * the thread's run delay so far); crowded, it spins as kp_spin_oversub().
 */
void kp_spin_watch_start(struct kp_spin *s, long oversub_us, uint64_t now, uint64_t delay);
/*
 * The shared cases (oversubscribed, crowded) spin on past their limit for
 * up to alone_us while no task waits for a CPU (KP_SPIN_QUEUE_NS); the
 * caller has checked that the machine's run queue can be read.
 */
void kp_spin_when_free(struct kp_spin *s, long alone_us);
/* One look at the run delay (the caller checks now >= s->watch_next first). */
void kp_spin_watch(struct kp_spin *s, uint64_t now, uint64_t delay);
/*
 * A sched_yield() called at @before returned at @after (kp_clock_ns);
 * @delay_ns: how much of the wait so far this thread spent runnable but
 * waiting for a CPU (UINT64_MAX: unknown, then the elapsed time counts);
 * @runnable: the machine's tasks running or runnable when it returned
 * (-1: not read; kp_spin_yield_asks() says when it is needed).
 */
void kp_spin_yielded(struct kp_spin *s, uint64_t before, uint64_t after, uint64_t delay_ns,
		     int runnable);

/* Does kp_spin_yielded() want the run queue for a yield of this length? */
static inline bool kp_spin_yield_asks(const struct kp_spin *s, uint64_t yield_ns)
{
	return s->oversub && yield_ns > KP_SPIN_YIELD_LOST_NS;
}
/* One wait ended after wait_ns; slept: it had to sleep in the kernel. */
void kp_spin_record(struct kp_spin *s, uint64_t wait_ns, bool slept);

#endif
