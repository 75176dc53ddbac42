/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The shim's cheap clock, for spin limits and the wait-state profiler.
 *
 * A blocking receive on the fast path reads the clock when it starts and
 * when it ends, and the profiler stamps every message; clock_gettime()
 * costs 25 ns natively but about 115 ns in the emulated test VM (a helper
 * call per TSC read plus the vDSO's arithmetic), against 20 ns for a bare
 * RDTSC, which made the clock a tenth of an 8-byte one-way trip there.
 * Where the kernel itself keeps time with the TSC (its clocksource is
 * "tsc": invariant and synchronised across CPUs, so comparable between
 * the processes of a node), the shim reads it directly and scales it with
 * a factor calibrated against CLOCK_MONOTONIC at start-up; elsewhere
 * (other clocksources, other architectures) a tick is a nanosecond of
 * CLOCK_MONOTONIC. Ticks are never compared with the kernel's time
 * stamps, which are CLOCK_MONOTONIC: kp_ticks_to_mono() converts.
 * No MPI in here.
 */
#ifndef KPROG_SHIM_CLOCK_H
#define KPROG_SHIM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct kp_clock {
	bool tsc;		/* ticks are the TSC; else CLOCK_MONOTONIC ns */
	uint64_t mult;		/* ns per tick, fixed point: (ticks * mult) >> 32 */
	uint64_t t0;		/* ticks at kp_clock_init() */
};
extern struct kp_clock kp_clk;

uint64_t kp_now_ns(void);	/* CLOCK_MONOTONIC: what the kernel stamps */

/*
 * Decide and calibrate (a few milliseconds of polling the clocks);
 * clocksource_path: the kernel's current clocksource file (tests pass
 * their own), NULL for the system's.
 */
void kp_clock_init(const char *clocksource_path);

static inline uint64_t kp_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(kp_clk.tsc, 1))
		return __builtin_ia32_rdtsc();
#endif
	return kp_now_ns();
}

/* A tick interval in nanoseconds. */
static inline uint64_t kp_ticks_ns(uint64_t d)
{
	return (uint64_t)(((unsigned __int128)d * kp_clk.mult) >> 32);
}

/* Nanoseconds since kp_clock_init(), for intervals only. */
static inline uint64_t kp_clock_ns(void)
{
	return kp_ticks_ns(kp_ticks() - kp_clk.t0);
}

/* CLOCK_MONOTONIC of an earlier tick reading (one clock_gettime). */
uint64_t kp_ticks_to_mono(uint64_t tick);

/*
 * The send stamp of a fast-path record (kprog_chan_rec.send_stamp, for
 * the wait-state profiler): ticks / 1024 modulo 2^32, never 0 (0: none).
 * The two processes of a channel read the same clock; 1024 ticks are
 * about 0.3 us of a TSC (1 us of CLOCK_MONOTONIC) and the stamp wraps
 * after about 24 minutes of a 3 GHz TSC (73 of CLOCK_MONOTONIC).
 */
#define KP_STAMP_SHIFT 10
static inline uint32_t kp_stamp(uint64_t tick)
{
	uint32_t s = (uint32_t)(tick >> KP_STAMP_SHIFT);

	return s ? s : 1;
}

/* The tick of a (nonzero) stamp read at tick now, as kp_stamp_late_ns() reads it. */
static inline uint64_t kp_stamp_tick(uint32_t stamp, uint64_t now)
{
	return ((now >> KP_STAMP_SHIFT) - (uint32_t)((uint32_t)(now >> KP_STAMP_SHIFT) - stamp))
	       << KP_STAMP_SHIFT;
}

/*
 * Late Sender of a receive started at tick post whose message, stamped
 * stamp, was taken at tick now: how much later than the receive the send
 * started, in ns, 0 if it did not. The stamp is taken as the latest such
 * time before now, which it is for any wait shorter than the wrap. -1:
 * no stamp (the sender's profiler is off).
 */
static inline int64_t kp_stamp_late_ns(uint32_t stamp, uint64_t post, uint64_t now)
{
	uint64_t send;

	if (!stamp)
		return -1;
	send = kp_stamp_tick(stamp, now);
	return send > post ? (int64_t)kp_ticks_ns(send - post) : 0;
}

#endif
