// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * clockpoll: what reading the clock costs a spinning receiver and its
 * sender (libshim/core/spin.h, KP_SPIN_CLOCK_POLLS).
 *
 * Two threads on two CPUs hand a flag back and forth, the shape of a
 * fast-path ping-pong: the waiter reads the TSC when it starts and ends
 * waiting (as the shim's channel spin does) and every K-th poll (K from
 * the table, "never" = no reads while polling); with "stamp" the sender
 * also reads the TSC before it publishes, as the wait-state profiler's
 * send stamp does. Natively these reads cost a few cycles each. Under
 * emulation (QEMU TCG) each takes the emulator's global clock lock, and
 * when two vCPUs read it in turn the lock moves between host CPUs: this
 * program measures how much that costs per round trip.
 *
 * Usage: clockpoll [--iters N] [--reps R] [--cpus A,B]
 * Prints ns per round trip (median and minimum over R runs of N round
 * trips) per poll interval, without and with the sender's stamp, and
 * the stamp's cost. No MPI, no module.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if !defined(__x86_64__) && !defined(__i386__)
#error "clockpoll measures the x86 TSC"
#endif

struct pattern {
	unsigned int every;	/* clock read every this many polls, 0: never */
	int stamp;		/* the sender reads the clock before publishing */
};

static volatile uint64_t flag __attribute__((aligned(64)));
static struct pattern cur;
static long iters = 100000;
static int cpu_a, cpu_b = 1;
static __thread uint64_t sink;	/* keeps the reads; per thread: no shared line but flag */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static inline void wait_for(uint64_t v)
{
	uint64_t x = __builtin_ia32_rdtsc();	/* the spin's start */
	unsigned int n = 0;

	while (flag != v)
		if (cur.every && ++n == cur.every) {
			n = 0;
			x += __builtin_ia32_rdtsc();
		}
	x += __builtin_ia32_rdtsc();		/* its end */
	sink += x;
}

static inline void post(uint64_t v)
{
	if (cur.stamp)
		sink += __builtin_ia32_rdtsc();
	flag = v;
}

static void *pong(void *arg)
{
	long i;

	(void)arg;
	if (pin(cpu_b))
		perror("clockpoll: sched_setaffinity (second thread)");
	for (i = 1; i <= iters; i++) {
		wait_for(2 * (uint64_t)i - 1);
		post(2 * (uint64_t)i);
	}
	return NULL;
}

/* One run of iters round trips: ns per round trip, < 0 on error. */
static double run(void)
{
	pthread_t t;
	double t0, t1;
	long i;

	flag = 0;
	if (pthread_create(&t, NULL, pong, NULL))
		return -1;
	t0 = now_s();
	for (i = 1; i <= iters; i++) {
		post(2 * (uint64_t)i - 1);
		wait_for(2 * (uint64_t)i);
	}
	t1 = now_s();
	pthread_join(t, NULL);
	return (t1 - t0) / (double)iters * 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define NEVERY 4
static const unsigned int every[NEVERY] = { 0, 16, 256, 4096 };

int main(int argc, char **argv)
{
	double *all[NEVERY][2];
	int reps = 5, i, e, s, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
			if (sscanf(argv[++i], "%d,%d", &cpu_a, &cpu_b) != 2) {
				fprintf(stderr, "clockpoll: --cpus A,B\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: clockpoll [--iters N] [--reps R] [--cpus A,B]\n");
			return 2;
		}
	}
	if (iters < 1 || reps < 1) {
		fprintf(stderr, "clockpoll: --iters and --reps must be positive\n");
		return 2;
	}
	if (pin(cpu_a)) {
		fprintf(stderr, "clockpoll: cannot run on CPU %d: %s\n", cpu_a, strerror(errno));
		return 2;
	}
	for (e = 0; e < NEVERY; e++)
		for (s = 0; s < 2; s++) {
			all[e][s] = calloc((size_t)reps, sizeof(double));
			if (!all[e][s]) {
				fprintf(stderr, "clockpoll: no memory\n");
				return 1;
			}
		}
	/* runs interleave the patterns, so that a drift of the host hits all alike */
	for (r = 0; r < reps; r++)
		for (e = 0; e < NEVERY; e++)
			for (s = 0; s < 2; s++) {
				cur = (struct pattern){ every[e], s };
				all[e][s][r] = run();
				if (all[e][s][r] < 0) {
					fprintf(stderr, "clockpoll: cannot start a thread\n");
					return 1;
				}
			}
	printf("# clockpoll: %ld round trips x %d runs per pattern, CPUs %d and %d; the waiter reads the TSC\n"
	       "# when each wait starts and ends, and every K-th poll; 'stamp': the sender reads it too\n"
	       "# ns per round trip, median (minimum) over the runs\n",
	       iters, reps, cpu_a, cpu_b);
	printf("%-14s %20s %20s %12s\n", "clock every", "no stamp", "stamp", "stamp adds");
	for (e = 0; e < NEVERY; e++) {
		double m0, m1;
		char k[24];

		if (every[e])
			snprintf(k, sizeof(k), "%u polls", every[e]);
		else
			snprintf(k, sizeof(k), "never");
		m0 = median(all[e][0], reps);	/* sorts: [0] is the minimum then */
		m1 = median(all[e][1], reps);
		printf("%-14s %12.1f (%5.0f) %12.1f (%5.0f) %12.1f\n", k, m0, all[e][0][0], m1,
		       all[e][1][0], m1 - m0);
	}
	for (e = 0; e < NEVERY; e++)
		for (s = 0; s < 2; s++)
			free(all[e][s]);
	return (int)(sink & 0);
}
