// SPDX-License-Identifier: GPL-2.0
/*
 * What CPU this process may have: the CPU time its cgroup's quota allows
 * (cgroup v2 cpu.max), and how long it has waited for a CPU while runnable
 * (the scheduler's run delay, /proc/thread-self/schedstat), and whether any
 * task of the machine waits for a CPU now (/proc/loadavg; which ones, for
 * KPROG_VERBOSE=2: /proc/PID/task/TID/stat). The spin policy
 * (spin.h) decides with them whether a waiting rank may keep its CPU.
 * No MPI in here.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cpus.h"

/*
 * The CPUs' worth of time the cgroup of this process may use: cpu.max of
 * its own cgroup and of every ancestor ("max" or "QUOTA PERIOD"), the
 * smallest quota over period, rounded down (at least 1): n ranks that spin
 * need n whole CPUs' time, and 2 ranks under a quota of 1.5 CPUs are
 * throttled for a quarter of every period, their partner with them, if
 * they wait as on CPUs of their own (docs/apps.md, twelfth session).
 * 0: no quota (or no cgroup v2).
 * @self_cgroup: /proc/self/cgroup, @root: the v2 hierarchy's mount point
 * (parameters for the unit test).
 */
int kp_cgroup_cpus_at(const char *self_cgroup, const char *root)
{
	char line[4096], path[8192], *rel, *slash;
	long quota, period;
	int best = 0, n;
	FILE *f;

	f = fopen(self_cgroup, "re");
	if (!f)
		return 0;
	rel = NULL;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {	/* the v2 hierarchy */
			rel = line + 3;
			rel[strcspn(rel, "\n")] = 0;
			break;
		}
	fclose(f);
	if (!rel)
		return 0;
	for (;;) {
		snprintf(path, sizeof(path), "%s%s/cpu.max", root, strcmp(rel, "/") ? rel : "");
		f = fopen(path, "re");
		if (f) {
			if (fscanf(f, "%ld %ld", &quota, &period) == 2 && quota > 0 && period > 0) {
				n = quota >= period ? (int)(quota / period) : 1;
				if (!best || n < best)
					best = n;
			}
			fclose(f);
		}
		slash = strrchr(rel, '/');
		if (!slash || slash == rel)
			break;	/* the root has no cpu.max */
		*slash = 0;
	}
	return best;
}

int kp_cgroup_cpus(void)
{
	return kp_cgroup_cpus_at("/proc/self/cgroup", "/sys/fs/cgroup");
}

/*
 * Parse the small /proc file open on @fd from its start with @fmt: true
 * if all @want conversions matched. The callers keep the file open, so
 * that a waiting rank pays one pread() per look, not an open and a close.
 */
__attribute__((format(scanf, 3, 4)))
static bool scan_proc(int fd, int want, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	ssize_t n;
	int got;

	if (fd < 0)
		return false;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = 0;
	va_start(ap, fmt);
	got = vsscanf(buf, fmt, ap);
	va_end(ap);
	return got == want;
}

static int schedstat_fd = -1;

bool kp_run_delay_open(void)
{
	if (schedstat_fd < 0)
		schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	return schedstat_fd >= 0 && kp_run_delay_ns() != UINT64_MAX;
}

/*
 * Nanoseconds this thread has spent runnable but not running (the second
 * field: "time spent waiting on a runqueue"); UINT64_MAX if unknown.
 */
uint64_t kp_run_delay_ns(void)
{
	unsigned long long run, delay;

	if (!scan_proc(schedstat_fd, 2, "%llu %llu", &run, &delay))
		return UINT64_MAX;
	return delay;
}

void kp_run_delay_close(void)
{
	if (schedstat_fd >= 0)
		close(schedstat_fd);
	schedstat_fd = -1;
}

/*
 * The machine's run queue: /proc/loadavg's fourth field "R/T" counts the
 * tasks running or runnable now (the reader included), against the CPUs
 * this job may use: those online, fewer when its affinity masks or its
 * cgroup quota allow fewer (kp_cpu_queue_open()'s @usable). Global, not
 * this CPU's: a task waiting on another CPU is one the scheduler would
 * move to a CPU that a sleeper leaves idle. Against all CPUs online, two
 * ranks held to one CPU (taskset -c 0, or a quota of one CPU) saw the
 * other CPU's room as free, and a rank spun on for milliseconds while
 * its partner waited behind it (docs/apps.md, twelfth session): the
 * count of tasks that may use our CPUs is not known, so all of them
 * count against ours (a sleep too many rather than a spin in the way).
 */
static int loadavg_fd = -1;
static long usable_cpus;

long kp_cpu_usable(long online, int usable)
{
	if (online <= 0)
		return 0;
	return usable > 0 && usable < online ? usable : online;
}

bool kp_cpu_queue_open(int usable)
{
	if (loadavg_fd < 0)
		loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	usable_cpus = kp_cpu_usable(sysconf(_SC_NPROCESSORS_ONLN), usable);
	return loadavg_fd >= 0 && usable_cpus > 0 && kp_cpu_queue() != INT32_MIN;
}

uint32_t kp_cpu_here(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : (uint32_t)cpu + 1;
}

int kp_cpu_runnable(void)
{
	int running;

	if (!scan_proc(loadavg_fd, 1, "%*s %*s %*s %d/", &running))
		return -1;
	return running;
}

int kp_cpu_queue(void)
{
	int running = kp_cpu_runnable();

	return running < 0 ? INT32_MIN : running - (int)usable_cpus;
}

void kp_cpu_queue_close(void)
{
	if (loadavg_fd >= 0)
		close(loadavg_fd);
	loadavg_fd = -1;
}

/*
 * Which tasks of the machine run or wait for a CPU now: " PID/TID(COMM)"
 * for each thread whose /proc/PID/task/TID/stat says R, into @buf
 * (truncated to @len). A diagnostic (KPROG_VERBOSE=2, spin_yield.c), not a
 * policy input: it opens a file per thread of the machine. It tells a hog
 * of another job from a kernel thread (issue 31: the task beside pw.x's
 * ranks at its lost yields was khugepaged). Returns the tasks listed.
 */
int kp_cpu_runnable_names(char *buf, size_t len)
{
	char path[64], st[256], *rp;
	struct dirent *p, *t;
	DIR *pd, *td;
	size_t o = 0;
	int fd, n = 0;
	ssize_t r;

	if (!len)
		return 0;
	buf[0] = 0;
	pd = opendir("/proc");
	if (!pd)
		return 0;
	while ((p = readdir(pd))) {
		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/task", p->d_name);
		td = opendir(path);
		if (!td)
			continue;	/* gone meanwhile */
		while ((t = readdir(td))) {
			if (t->d_name[0] < '0' || t->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%.16s/task/%.16s/stat", p->d_name, t->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			r = read(fd, st, sizeof(st) - 1);
			close(fd);
			if (r <= 0)
				continue;
			st[r] = 0;
			/* "PID (COMM) S ...": the name may hold spaces and parentheses */
			rp = strrchr(st, ')');
			if (!rp || rp[1] != ' ' || rp[2] != 'R' || !strchr(st, '('))
				continue;
			rp[1] = 0;
			n++;
			if (o < len)
				o += snprintf(buf + o, len - o, " %s/%s%s", p->d_name, t->d_name,
					      strchr(st, '('));
		}
		closedir(td);
	}
	closedir(pd);
	return n;
}
