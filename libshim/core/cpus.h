/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPU this process may have (cpus.c): its cgroup's quota and the time
 * it waits for a CPU while runnable. No MPI in here.
 */
#ifndef KPROG_SHIM_CPUS_H
#define KPROG_SHIM_CPUS_H

#include <stdbool.h>
#include <stdint.h>

/* CPUs' worth of time the cgroup v2 quota (cpu.max) allows, rounded up; 0: unlimited */
int kp_cgroup_cpus(void);
int kp_cgroup_cpus_at(const char *self_cgroup, const char *root);	/* the same, from other files */
/* Open /proc/thread-self/schedstat of the calling thread; false: no run delay known */
bool kp_run_delay_open(void);
/* The calling (opening) thread's run delay so far in ns; UINT64_MAX if unknown */
uint64_t kp_run_delay_ns(void);
void kp_run_delay_close(void);

#endif
