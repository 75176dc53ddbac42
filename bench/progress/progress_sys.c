// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/progress_sys.c: kprog detection, kernel worker CPUs, per-core
 * accounting for bench/progress.
 */
#define _GNU_SOURCE
#include "progress_sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the unbound workqueue cpumask ---- */
static char wq_orig[512];
static volatile sig_atomic_t wq_changed;

static int wq_write(const char *s)
{
	int fd = open(WQ_MASK_PATH, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -1 : 0;
}

void wq_restore(void)
{
	if (wq_changed && !wq_write(wq_orig))
		wq_changed = 0;
}

static void wq_on_signal(int sig)
{
	wq_restore();	/* open/write/close only: async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

const char *wq_original(void)
{
	return wq_orig;
}

int wq_init(char *why, size_t len)
{
	FILE *f = fopen(WQ_MASK_PATH, "r");

	if (!f) {
		snprintf(why, len, "%s: %s", WQ_MASK_PATH, strerror(errno));
		return 0;
	}
	if (!fgets(wq_orig, sizeof(wq_orig), f)) {
		fclose(f);
		snprintf(why, len, "%s: empty", WQ_MASK_PATH);
		return 0;
	}
	fclose(f);
	wq_orig[strcspn(wq_orig, "\n")] = 0;
	if (wq_write(wq_orig)) {
		snprintf(why, len, "cannot write %s: %s", WQ_MASK_PATH, strerror(errno));
		return 0;
	}
	atexit(wq_restore);
	signal(SIGTERM, wq_on_signal);
	signal(SIGINT, wq_on_signal);
	signal(SIGHUP, wq_on_signal);
	return 1;
}

int wq_set(const char *mask)
{
	wq_changed = 1;
	return wq_write(mask);
}

void mask_str(char *buf, size_t len, int a, int b)
{
	unsigned char nib[SYS_MAX_CPUS / 4] = { 0 };
	int top = -1, pos = 0;

	if (a >= 0 && a < SYS_MAX_CPUS)
		nib[a / 4] |= 1 << (a % 4);
	if (b >= 0 && b < SYS_MAX_CPUS)
		nib[b / 4] |= 1 << (b % 4);
	for (int i = 0; i < SYS_MAX_CPUS / 4; i++)
		if (nib[i])
			top = i;
	if (len < 2)
		return;
	if (top < 0 || (size_t)top + 2 > len) {	/* empty, or does not fit */
		snprintf(buf, len, "0");
		return;
	}
	for (int i = top; i >= 0; i--)
		buf[pos++] = "0123456789abcdef"[nib[i]];
	buf[pos] = 0;
}

int64_t kworker_unbound_ns(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int64_t sum = 0;
	int seen = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[64], comm[64];
		unsigned long long rt;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f) || strncmp(comm, "kworker/u", 9)) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%.20s/schedstat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &rt) == 1) {
			sum += (int64_t)rt;
			seen = 1;
		}
		fclose(f);
	}
	closedir(d);
	return seen ? sum : -1;
}

int64_t read_cpustat(struct cpustat *cs)
{
	int64_t t = now_ns();
	char line[512];
	FILE *f;

	memset(cs, 0, sizeof(*cs) * SYS_MAX_CPUS);
	f = fopen("/proc/schedstat", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v[9];
			int c;

			/* version 15: cpuN yld_count 0 sched_count sched_goidle
			 * ttwu_count ttwu_local rq_cpu_time run_delay pcount */
			if (strncmp(line, "cpu", 3) ||
			    sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu %llu", &c,
				   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 10)
				continue;
			if (c < 0 || c >= SYS_MAX_CPUS)
				continue;
			cs[c].run_ns = v[6];
			cs[c].delay_ns = v[7];
			cs[c].pcount = v[8];
			cs[c].sched = 1;
		}
		fclose(f);
	}
	f = fopen("/proc/stat", "r");
	if (!f)
		return t;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[8] = { 0 };
		int c;

		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &c,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 8)
			continue;
		if (c < 0 || c >= SYS_MAX_CPUS)
			continue;
		cs[c].user = v[0] + v[1];	/* user + nice */
		cs[c].sys = v[2];
		cs[c].irq = v[5] + v[6];	/* irq + softirq */
		cs[c].idle = v[3] + v[4];	/* idle + iowait */
	}
	fclose(f);
	return t;
}
