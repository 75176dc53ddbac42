/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/progress_sys.h: what bench/progress asks of the system, without
 * MPI: clocks, whether the kprog shim is active in this process, the
 * CPUs kprog's kernel workers may use, and per-core CPU accounting.
 */
#ifndef PROGRESS_SYS_H
#define PROGRESS_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SYS_MAX_CPUS 256
#define WQ_MASK_PATH "/sys/devices/virtual/workqueue/cpumask"

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline double thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* this process: libkprog.so mapped (/proc/self/maps), /dev/kprog open (fds) */

/*
 * kprog's rendezvous copies run on an unbound workqueue; the system-wide
 * unbound cpumask decides where. wq_init() reads it and writes it back
 * unchanged (proves we may), arranges for it to be restored at exit and
 * on SIGTERM/SIGINT/SIGHUP; 0 and a reason in @why if not possible.
 */
int wq_init(char *why, size_t len);
int wq_set(const char *mask);		/* 0 or -1 (errno) */
void wq_restore(void);
const char *wq_original(void);

/* hex cpumask (kernel format, no commas) of CPUs @a and @b (-1: none) */
void mask_str(char *buf, size_t len, int a, int b);

/*
 * One core's counters: /proc/stat ticks (USER_HZ) and, if the kernel has
 * CONFIG_SCHED_INFO, /proc/schedstat: ns tasks ran there, ns they waited
 * on its run queue, tasks switched in.
 */
struct cpustat {
	unsigned long long user, sys, irq, idle;
	unsigned long long run_ns, delay_ns, pcount;
	int sched;		/* schedstat values valid */
};

/*
 * CPU time (ns, exact: sum_exec_runtime from /proc/PID/schedstat) of all
 * unbound kernel workers ("kworker/u*"), where kprog's rendezvous copies
 * run; -1 if the kernel does not show it.
 */
int64_t kworker_unbound_ns(void);

/* fills cs[0..SYS_MAX_CPUS-1] (zeroes first), returns the time of reading, ns */
int64_t read_cpustat(struct cpustat *cs);

#endif
