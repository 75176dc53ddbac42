/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kprog_bench: the interrupt source of the interrupt-cost microbenchmark
 * (seed 001, Hoefler & Lumsdaine: stolen cycles per interrupt).
 *
 * A module of its own, kprog_bench.ko, loaded only to run the
 * microbenchmarks (bench/irqcost) and their selftests: the production
 * module kprog.ko has no timer that fires on demand, no device call that
 * sleeps for it and no netlink command that starts it, so a shared node
 * that runs MPI jobs under kprog carries none of that machinery. It needs
 * nothing from kprog.ko (it loads and works without it) and counts its
 * own fires.
 *
 * Two interfaces:
 *   the misc device KPROG_BENCH_DEVICE (root's, mode 0600), whose only
 *     call is KPROG_BENCH_IOC_IRQ_WAIT;
 *   the generic netlink family KPROG_BENCH_GENL_NAME: per-CPU counters of
 *     the source, and starting, stopping and querying it.
 * Fixed-width types only, one layout for 32- and 64-bit user space.
 */
#ifndef _UAPI_LINUX_KPROG_BENCH_H
#define _UAPI_LINUX_KPROG_BENCH_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define KPROG_BENCH_DEVICE	"/dev/kprog_bench"

/*
 * KPROG_BENCH_IOC_IRQ_WAIT: block until the interrupt source, running in
 * KPROG_BENCH_IRQ_WAKE mode, fires on CPU @cpu, then return its per-CPU
 * fire count in @seq: the "interrupt-driven user thread" of the
 * interrupt-cost benchmark. ENODEV if the source is not running in wake
 * mode on @cpu (also when it stops while waiting), EINVAL for an offline
 * or impossible @cpu or a non-zero @__pad, ETIMEDOUT after @timeout_ns
 * (0: do not sleep; < 0: no limit), EINTR on a signal.
 */
struct kprog_bench_irq_wait {
	__u32 cpu;		/* in */
	__u32 __pad;		/* in: 0 */
	__s64 timeout_ns;	/* in */
	__u64 seq;		/* out: fires on @cpu since the source started */
};

/*
 * kprog's ioctl magic, from 0x40 on: no number here is one of
 * /dev/kprog's, so a call sent to the wrong device fails with ENOTTY.
 * (Until the split, /dev/kprog had this call as number 7; until kprog's
 * ABI version 2 the magic was 0xB7, nsfs's.)
 */
#define KPROG_BENCH_IOC_MAGIC	0xD4
#define KPROG_BENCH_IOC_IRQ_WAIT \
	_IOWR(KPROG_BENCH_IOC_MAGIC, 0x40, struct kprog_bench_irq_wait)

/*
 * Generic netlink family KPROG_BENCH_GENL_NAME (initial network namespace
 * only: the source and its counters are host-wide).
 *
 * KPROG_BENCH_CMD_GET_STATS (dump, any user): one message per possible
 *   CPU, KPROG_BENCH_A_CPU plus every KPROG_BENCH_A_STAT_* counter (u64,
 *   since module load or the last reset). Offline CPUs are included.
 * KPROG_BENCH_CMD_RESET_STATS (CAP_NET_ADMIN): zero every counter.
 * KPROG_BENCH_CMD_IRQ_START (CAP_NET_ADMIN): arm a pinned hrtimer on each
 *   CPU of KPROG_BENCH_A_IRQ_CPUS (all online CPUs if absent; every CPU
 *   named must be online, the attribute a whole number of __u64 words)
 *   firing KPROG_BENCH_A_IRQ_HZ (required) times a second (1..irq_max_hz,
 *   a module parameter) and doing KPROG_BENCH_A_IRQ_MODE
 *   (KPROG_BENCH_IRQ_HARDIRQ if absent) work on each fire, plus
 *   KPROG_BENCH_A_IRQ_LOAD_NS of busy work in that context (0 if absent;
 *   at most 1/4 of the period and irq_max_load_ns). It stops by itself
 *   after KPROG_BENCH_A_IRQ_DURATION_MS (required, at most
 *   irq_max_duration_ms), at KPROG_BENCH_CMD_IRQ_STOP or at module unload.
 *   EBUSY if already running. ERANGE for a value out of its range (hz,
 *   mode, duration, load, or a CPU bitmap shorter than one word or longer
 *   than the kernel's NR_CPUS), EINVAL for a missing, malformed or unknown
 *   attribute or a CPU that does not exist or is offline; both with an
 *   extended ack message.
 * KPROG_BENCH_CMD_IRQ_STOP (CAP_NET_ADMIN): stop it; not an error if idle.
 * KPROG_BENCH_CMD_IRQ_STATUS (any user): KPROG_BENCH_A_IRQ_RUNNING, and
 *   while running KPROG_BENCH_A_IRQ_HZ, _MODE, _LOAD_NS and _CPUS.
 *
 * Once the source is idle, per CPU: TASKLET_RUNS (tasklet mode) or
 * WORK_ITEMS (work mode) + COALESCED = HARDIRQ_RUNS, exactly; and
 * HARDIRQ_RUNS <= hz * duration.
 */
#define KPROG_BENCH_GENL_NAME		"kprog_bench"
#define KPROG_BENCH_GENL_VERSION	1

enum kprog_bench_genl_cmd {
	KPROG_BENCH_CMD_UNSPEC,
	KPROG_BENCH_CMD_GET_STATS,
	KPROG_BENCH_CMD_RESET_STATS,
	KPROG_BENCH_CMD_IRQ_START,
	KPROG_BENCH_CMD_IRQ_STOP,
	KPROG_BENCH_CMD_IRQ_STATUS,
	__KPROG_BENCH_CMD_MAX,
};

#define KPROG_BENCH_CMD_MAX	(__KPROG_BENCH_CMD_MAX - 1)

/* What the interrupt source does on each fire. */
enum kprog_bench_irq_mode {
	KPROG_BENCH_IRQ_HARDIRQ,	/* nothing beyond the hard interrupt */
	KPROG_BENCH_IRQ_TASKLET,	/* schedule a per-CPU tasklet */
	KPROG_BENCH_IRQ_WORK,		/* queue a per-CPU work item (bound wq) */
	KPROG_BENCH_IRQ_WAKE,		/* wake threads in IRQ_WAIT */
	__KPROG_BENCH_IRQ_MODE_MAX,
};

enum kprog_bench_genl_attr {
	KPROG_BENCH_A_UNSPEC,
	KPROG_BENCH_A_PAD,
	KPROG_BENCH_A_CPU,			/* u32 */
	/* the source's configuration */
	KPROG_BENCH_A_IRQ_HZ,			/* u32 */
	KPROG_BENCH_A_IRQ_MODE,			/* u32, enum kprog_bench_irq_mode */
	KPROG_BENCH_A_IRQ_LOAD_NS,		/* u32 */
	KPROG_BENCH_A_IRQ_DURATION_MS,		/* u32 */
	KPROG_BENCH_A_IRQ_CPUS,			/* binary: __u64 words, bit n = CPU n */
	KPROG_BENCH_A_IRQ_RUNNING,		/* u8: 0 or 1 */
	/* per-CPU counters, u64, on the CPU the code ran on */
	KPROG_BENCH_A_STAT_HARDIRQ_RUNS,	/* fires (hrtimer callbacks) */
	KPROG_BENCH_A_STAT_HARDIRQ_NS,		/* time spent in them */
	KPROG_BENCH_A_STAT_TASKLET_RUNS,	/* tasklet (softirq) runs */
	KPROG_BENCH_A_STAT_TASKLET_NS,
	KPROG_BENCH_A_STAT_WORK_ITEMS,		/* work items run */
	KPROG_BENCH_A_STAT_WORK_NS,
	KPROG_BENCH_A_STAT_WAKEUPS,		/* fires that woke IRQ_WAIT sleepers */
	KPROG_BENCH_A_STAT_COALESCED,		/* fires whose tasklet or work was still pending */
	__KPROG_BENCH_A_MAX,
};

#define KPROG_BENCH_A_MAX	(__KPROG_BENCH_A_MAX - 1)

#endif /* _UAPI_LINUX_KPROG_BENCH_H */
