/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU this process may have (cpus.c): its cgroup's quota, the time it
 * waits for a CPU while runnable, whether any task waits for one now,
 * and (a diagnostic) which threads those are.
 * No MPI in here.
 */
#ifndef KPROG_SHIM_CPUS_H
#define KPROG_SHIM_CPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CPUs' worth of time the cgroup v2 quota (cpu.max) allows, rounded down, >= 1; 0: unlimited */
int kp_cgroup_cpus(void);
int kp_cgroup_cpus_at(const char *self_cgroup, const char *root);	/* the same, from other files */
/* Open /proc/thread-self/schedstat of the calling thread; false: no run delay known */
bool kp_run_delay_open(void);
/* The calling (opening) thread's run delay so far in ns; UINT64_MAX if unknown */
uint64_t kp_run_delay_ns(void);
void kp_run_delay_close(void);
/*
 * Open /proc/loadavg; @usable: the CPUs this job may use (affinity, quota;
 * <= 0: all online). false: the machine's run queue cannot be read.
 */
bool kp_cpu_queue_open(int usable);
/* The CPUs kp_cpu_queue() counts against: @usable if in 1..@online, else @online */
long kp_cpu_usable(long online, int usable);
/*
 * Tasks running or runnable on the machine now, minus the CPUs this job
 * may use: > 0 some wait for a CPU; INT32_MIN if unknown
 */
int kp_cpu_queue(void);
/* Tasks running or runnable on the machine now (the caller included); -1 if unknown */
int kp_cpu_runnable(void);
void kp_cpu_queue_close(void);
/*
 * The CPU the calling thread runs on now + 1, 0 if unknown: sched_getcpu(),
 * which glibc answers from the thread's rseq area or the vDSO, without a
 * system call.
 */
uint32_t kp_cpu_here(void);
/* The running and runnable threads now, " PID/TID(COMM)" each, into buf; how many */
int kp_cpu_runnable_names(char *buf, size_t len);

#endif
