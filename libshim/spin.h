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

struct kp_spin {
	uint64_t limit_ns;	/* spin this long, then sleep */
	uint64_t min_ns, max_ns;
	bool fixed;		/* KPROG_SPIN_US given, or a dedicated CPU: no adaptation */
	bool dedicated;		/* every rank of the node has its own CPU */
	/* statistics, for KPROG_VERBOSE */
	uint64_t waits, slept, grew, shrank;
};

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
/* One wait ended after wait_ns; slept: it had to sleep in the kernel. */
void kp_spin_record(struct kp_spin *s, uint64_t wait_ns, bool slept);

#endif
