// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/overlap: the MPI overlap benchmark suite of Denis & Trahay,
 * "MPI Overlap: Benchmark and Analysis" (ICPP 2016), for 2 ranks.
 *
 * Benchmarks (node 0 = rank 0 measures, node 1 = rank 1):
 *   sender     rank 0: MPI_Isend, compute, MPI_Wait, recv 0-byte ACK;
 *              rank 1: blocking MPI_Recv, send ACK.
 *              T_measured = full sequence on rank 0 - 0-byte latency.
 *   receiver   rank 0: send 0-byte CTS, MPI_Irecv, compute, MPI_Wait;
 *              rank 1: recv CTS, blocking MPI_Send.
 *              T_measured = full sequence on rank 0 - 0-byte latency.
 *   both       rank 0: Isend, compute, Wait, Irecv, compute, Wait;
 *              rank 1: Irecv, compute, Wait, Isend, compute, Wait.
 *              T_measured = half the full sequence on rank 0.
 *   noncontig  as sender, with a vector of blocks of 32 MPI_CHAR with a
 *              stride of 64 bytes; T_comm = ping-pong with that type.
 *   cpu        rank 0: Isend, compute, Wait (no ACK); rank 1: blocking
 *              recv. T_measured = full sequence on rank 0;
 *              T_comm = time of a blocking MPI_Send on rank 0.
 *   nload      both ranks run N computing threads in the background
 *              (MPI_THREAD_FUNNELED); main thread: blocking send then
 *              recv (rank 1: recv then send). T_measured = half the
 *              sequence; "ratio" = T_measured / T_comm(no threads)
 *              (slowdown, drawn on a log scale as in the paper).
 * Base benchmarks, run first per size: ping-pong contiguous (T_comm of
 * sender, receiver, both, nload), ping-pong derived datatype (noncontig),
 * blocking MPI_Send time (cpu) and the 0-byte latency.
 *
 * Overhead ratio, equation 1:
 *   ratio = (T_measured - max(T_comm, T_comp)) / min(T_comm, T_comp)
 * 0 = perfect overlap, 1 = serialized, > 1 worse than serialized.
 *
 * References (0-byte latency, T_comm) are measured in blocks spread over
 * the whole run and pooled (median); every point keeps its rounds and is
 * evaluated at the end (ovl_eval_point): rounds the reference cannot
 * describe are invalid, and a point with too few valid rounds or a ratio
 * below 0 beyond its spread is reported invalid (NAN, with a reason)
 * instead of with a misleading ratio.
 *
 * Every round starts with an explicit send/recv synchronisation in which
 * the receiving side is ready first (no MPI_Barrier). Times come from
 * clock_gettime(CLOCK_MONOTONIC), never MPI_Wtime; each point reports the
 * median of --iters rounds. Received data is checked against a pattern
 * (first and last measured round of every point, or every round with
 * --verify all), outside the timed region.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <math.h>
#include <errno.h>
#include <unistd.h>
#include <getopt.h>

#include "overlap_stats.h"
#include "kprog_detect.h"

enum { B_SENDER, B_RECEIVER, B_BOTH, B_NONCONTIG, B_CPU, B_NLOAD, NBENCH };
static const char *bench_name[NBENCH] = {
	"sender", "receiver", "both", "noncontig", "cpu", "nload"
};

/* base measurements */
enum { K_PINGPONG = NBENCH, K_PINGPONG_DT, K_SENDTIME };

enum { TAG_SYNC = 11, TAG_DATA = 12, TAG_ACK = 13, TAG_CTL = 14 };

#define MAXSIZES 256
#define MAXCOMPS 256
#define MAXTHREADS 1024
#define GUARD 64
#define FILLBYTE 0xA5
#define LAT0_ROUNDS 200	/* at least, for the 0-byte latency */

static int rank;
static int peer;
static unsigned char *sbuf, *rbuf;

/* options */
static int want[NBENCH];
static size_t sizes[MAXSIZES];
static int nsizes;
static double comps[MAXCOMPS];
static int ncomps;
static int comp_auto = 1, comp_equal;
static double comp_min = 1.0, comp_max;	/* us; comp_max 0 = 2 x max T_comm */
static double comp_max_cap;	/* us; 0 = none */
static int iters = 50, warmup = 2;
static int verify_all;
static int threads_list[MAXTHREADS];
static int nthreads_list;
static clockid_t comp_clock = CLOCK_THREAD_CPUTIME_ID;
static int comp_calibrated = 1;	/* default: fixed block count, no clock reads */
static double blocks_per_us;
static double blocks_first;	/* the start-up calibration */
#define CALIB_KEEP 9		/* rolling calibration: median of the last samples */
static double calib_ring[CALIB_KEEP];
static int calib_n;
static double calib_lo = INFINITY, calib_hi;	/* range of the rate over the run */
static const char *csv_path;
static const char *label = "";
static int quiet;
static int irecv_first;	/* receiver: post the Irecv before the CTS (paper: after) */

/* results of the base benchmarks, per size index, in us */
/* the first block of each reference (the grid and --comp-equal use it) */
static double lat0_first;
static int lat0_first_n;
static double t_pp[MAXSIZES], t_ppdt[MAXSIZES], t_send[MAXSIZES];
static long errs_lat0, errs_pp[MAXSIZES], errs_ppdt[MAXSIZES], errs_send[MAXSIZES];

static long total_errors;
static long pt_errors;		/* this rank, current point */
static long pt_first_bad = -1;

static double t_start;

/*
 * This thread's run delay so far in microseconds (time runnable but
 * waiting for a CPU: /proc/thread-self/schedstat, second field); -1 if
 * unknown. Over the run it tells whether other tasks (CPU hogs, another
 * job, the other rank on a shared CPU) took the CPUs: then the ratios
 * measure the scheduler more than the library.
 */
static double run_delay_us(void)
{
	unsigned long long run, delay;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu", &run, &delay);
	fclose(f);
	return n == 2 ? delay / 1e3 : -1;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The computation: integer work until @us of this thread's CPU time
 * (default: a fixed amount of work on a CPU; if something else takes the
 * CPU away, the computation takes longer in wall time, as real work would)
 * or of wall-clock time (--comp-clock wall) have passed.
 */
static volatile uint64_t sink;
/*
 * CPU time of this round's computations and their number. Under emulation
 * the guest's CPU-time clock also advances while the host does not run the
 * vCPU, but not while another thread of the guest (kprog's kernel worker)
 * runs on it: the computation's pure time under the host's current load.
 */
static double comp_cpu_us;
static int comp_calls;
static double cpu_read_us;	/* cost of one read of the CPU-time clock */

#define LCG_BLOCK(x) do {						\
	for (int i_ = 0; i_ < 32; i_++)					\
		(x) = (x) * 6364136223846793005ULL + 1442695040888963407ULL; \
} while (0)

static void compute(double us)
{
	int64_t end;
	uint64_t x = sink | 1;

	if (us <= 0)
		return;
	if (comp_calibrated) {
		/*
		 * One read of this thread's CPU-time clock before and after (none
		 * inside): the round's own T_comp (see comp_cpu_us). Their cost
		 * is taken out of the round's time (one_round).
		 */
		int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), c1;

		for (uint64_t n = (uint64_t)llround(us * blocks_per_us); n; n--)
			LCG_BLOCK(x);
		c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		sink = x;
		comp_cpu_us += (c1 - c0) / 1e3;
		comp_calls++;
		return;
	}
	end = clock_ns(comp_clock) + (int64_t)(us * 1000.0);
	do {
		LCG_BLOCK(x);
	} while (clock_ns(comp_clock) < end);
	sink = x;
}

/*
 * Blocks of the busy loop per microsecond of this thread's CPU time: the
 * fastest of 7 runs of ~20 ms (the least disturbed), after a warm-up run
 * (under emulation the first run also pays for code translation).
 */
static void calibrate_compute(void)
{
	uint64_t x = 1, n = 1 << 12;
	double best = 0;

	for (int r = 0; r < 8; r++) {
		int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), dt;

		for (uint64_t k = n; k; k--)
			LCG_BLOCK(x);
		dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (dt < 20000000) {	/* too short to time: grow and redo */
			n *= 2;
			r--;
			continue;
		}
		if (r > 0 && n * 1000.0 / dt > best)
			best = n * 1000.0 / dt;
	}
	sink = x;
	blocks_per_us = best;
	blocks_first = best;
}

/*
 * Rolling calibration, before every point: ~2 ms of the loop timed on this
 * thread's CPU-time clock, like the start-up calibration; the rate is the
 * median of the last CALIB_KEEP samples. Under emulation the CPU-time clock
 * also runs while the host does not run the vCPU, so the rate is that of
 * the host's current load, which changes within minutes on a shared host
 * (start-up calibrations a minute apart: 6.5 and 10.6 iterations/us); CPU
 * taken by other threads of the guest (kprog's kernel worker) is not in it.
 */
static void recalibrate(void)
{
	uint64_t x = sink | 1, n = (uint64_t)(2000 * blocks_per_us) + 1;
	int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), dt;
	double v[CALIB_KEEP];
	int k;

	for (uint64_t i = n; i; i--)
		LCG_BLOCK(x);
	dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	sink = x;
	if (dt <= 0)
		return;
	calib_ring[calib_n++ % CALIB_KEEP] = n * 1000.0 / dt;
	k = calib_n < CALIB_KEEP ? calib_n : CALIB_KEEP;
	if (k < 3)
		return;
	memcpy(v, calib_ring, sizeof(double) * k);
	blocks_per_us = ovl_median(v, k);
	calib_lo = fmin(calib_lo, blocks_per_us);
	calib_hi = fmax(calib_hi, blocks_per_us);
}

/* The cost of one CPU-time clock read: the fastest of 5 batches of 200. */
static void measure_cpu_read(void)
{
	double best = INFINITY;

	for (int k = 0; k < 5; k++) {
		double t0 = now_us();

		for (int i = 0; i < 200; i++)
			(void)clock_ns(CLOCK_THREAD_CPUTIME_ID);
		best = fmin(best, (now_us() - t0) / 200);
	}
	cpu_read_us = best;
}

/* ---- data pattern ---- */
static inline uint64_t patw(uint64_t i, uint64_t seed)
{
	uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ULL ^ (seed * 0xC2B2AE3D27D4EB4FULL + 0x165667B19E3779F9ULL);

	z ^= z >> 29;
	return z;
}

static inline unsigned char patb(uint64_t off, uint64_t seed)
{
	return (unsigned char)(patw(off / 8, seed) >> (8 * (off % 8)));
}

/* bytes of the buffer a message of @size occupies (vector type: 2x) */
static size_t extent_of(size_t size, int noncontig)
{
	if (!noncontig)
		return size;
	return size ? (size / 32 - 1) * 64 + 32 : 0;
}

static void fill_send(unsigned char *b, size_t size, int noncontig, uint64_t seed)
{
	size_t n = extent_of(size, noncontig), w = n / 8;
	uint64_t *p = (uint64_t *)b;

	for (size_t i = 0; i < w; i++)
		p[i] = patw(i, seed);
	for (size_t o = w * 8; o < n; o++)
		b[o] = patb(o, seed);
}

static void prefill_recv(unsigned char *b, size_t size, int noncontig)
{
	memset(b, FILLBYTE, extent_of(size, noncontig) + GUARD);
}

static void bad(long off)
{
	pt_errors++;
	if (pt_first_bad < 0)
		pt_first_bad = off;
}

static void check_recv(const unsigned char *b, size_t size, int noncontig, uint64_t seed)
{
	size_t n = extent_of(size, noncontig);
	const uint64_t *p = (const uint64_t *)b;
	const uint64_t fillw = 0x0101010101010101ULL * FILLBYTE;

	if (!noncontig) {
		size_t w = n / 8;

		for (size_t i = 0; i < w; i++)
			if (p[i] != patw(i, seed))
				bad(i * 8);
		for (size_t o = w * 8; o < n; o++)
			if (b[o] != patb(o, seed))
				bad(o);
	} else {
		/* blocks of 32 bytes every 64 bytes; the gaps stay untouched */
		for (size_t blk = 0; blk < size / 32; blk++) {
			size_t w0 = blk * 8;

			for (size_t i = w0; i < w0 + 4; i++)
				if (p[i] != patw(i, seed))
					bad(i * 8);
			if (blk + 1 < size / 32)
				for (size_t i = w0 + 4; i < w0 + 8; i++)
					if (p[i] != fillw)
						bad(i * 8);
		}
	}
	for (size_t o = n; o < n + GUARD; o++)	/* nothing written past the end */
		if (b[o] != FILLBYTE)
			bad(o);
}

/* one line saying whether kprog is in use, agreed over both ranks */
static const char *kprog_mode(char *buf, size_t len)
{
	int st[2], all[4];

	kprog_local_status(&st[0], &st[1]);
	MPI_Gather(st, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank != 0)
		return "";
	kprog_describe(all, buf, len);
	return buf;
}

/* ---- background threads for nload ---- */
static atomic_int bg_stop;

static void *bg_thread(void *arg)
{
	uint64_t x = (uintptr_t)arg | 1;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	/* not confined to the core mpirun bound the rank to */
	CPU_ZERO(&set);
	for (long c = 0; c < ncpu && c < CPU_SETSIZE; c++)
		CPU_SET(c, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!atomic_load_explicit(&bg_stop, memory_order_relaxed))
		for (int i = 0; i < 256; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
	return NULL;
}

/* ---- one round ---- */
static void sync_wait(void)	/* rank 0 waits until rank 1 is ready */
{
	MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void sync_ready(void)
{
	MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_SYNC, MPI_COMM_WORLD);
}

static double last_cpu;	/* rank 0: the computation's CPU time in the last round (per half for both) */

/*
 * Runs one round of @kind; returns T (us) on rank 0. @dt/@count describe
 * the message of @size payload bytes.
 */
static double one_round(int kind, size_t size, MPI_Datatype dt, int count,
			int nc, double comp, int check, uint64_t seed)
{
	MPI_Request req;
	double t0 = 0, t1 = 0, T = 0;
	uint64_t s01 = seed * 2, s10 = seed * 2 + 1;	/* per direction */

	comp_cpu_us = 0;
	comp_calls = 0;

	switch (kind) {
	case K_PINGPONG:
	case K_PINGPONG_DT:
	case B_NLOAD:
		if (rank == 0) {
			if (check) {
				fill_send(sbuf, size, nc, s01);
				prefill_recv(rbuf, size, nc);
			}
			sync_wait();
			t0 = now_us();
			MPI_Send(sbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD);
			MPI_Recv(rbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			t1 = now_us();
			T = (t1 - t0) / 2;
			if (check)	/* rank 1 echoes what it received */
				check_recv(rbuf, size, nc, s01);
		} else {
			if (check)
				prefill_recv(rbuf, size, nc);
			sync_ready();
			MPI_Recv(rbuf, count, dt, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(rbuf, count, dt, 0, TAG_DATA, MPI_COMM_WORLD);
			if (check)
				check_recv(rbuf, size, nc, s01);
		}
		break;

	case K_SENDTIME:
	case B_SENDER:
	case B_NONCONTIG:
	case B_CPU:
		if (rank == 0) {
			if (check)
				fill_send(sbuf, size, nc, s01);
			sync_wait();
			t0 = now_us();
			if (kind == K_SENDTIME) {
				MPI_Send(sbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD);
			} else {
				MPI_Isend(sbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD, &req);
				compute(comp);
				MPI_Wait(&req, MPI_STATUS_IGNORE);
			}
			if (kind == B_SENDER || kind == B_NONCONTIG)
				MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			t1 = now_us();
			T = t1 - t0;
		} else {
			if (check)
				prefill_recv(rbuf, size, nc);
			sync_ready();
			MPI_Recv(rbuf, count, dt, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (kind == B_SENDER || kind == B_NONCONTIG)
				MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
			if (check)
				check_recv(rbuf, size, nc, s01);
		}
		break;

	case B_RECEIVER:
		if (rank == 0) {
			if (check)
				prefill_recv(rbuf, size, nc);
			t0 = now_us();
			/* the 0-byte CTS: the receiver is ready first */
			if (irecv_first) {
				MPI_Irecv(rbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD, &req);
				MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_SYNC, MPI_COMM_WORLD);
			} else {
				MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_SYNC, MPI_COMM_WORLD);
				MPI_Irecv(rbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD, &req);
			}
			compute(comp);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			t1 = now_us();
			T = t1 - t0;
			if (check)
				check_recv(rbuf, size, nc, s10);
		} else {
			if (check)
				fill_send(sbuf, size, nc, s10);
			MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(sbuf, count, dt, 0, TAG_DATA, MPI_COMM_WORLD);
		}
		break;

	case B_BOTH:
		if (check) {
			fill_send(sbuf, size, nc, rank == 0 ? s01 : s10);
			prefill_recv(rbuf, size, nc);
		}
		if (rank == 0) {
			sync_wait();
			t0 = now_us();
			MPI_Isend(sbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD, &req);
			compute(comp);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			MPI_Irecv(rbuf, count, dt, 1, TAG_DATA, MPI_COMM_WORLD, &req);
			compute(comp);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			t1 = now_us();
			T = (t1 - t0) / 2;
			if (check)
				check_recv(rbuf, size, nc, s10);
		} else {
			MPI_Irecv(rbuf, count, dt, 0, TAG_DATA, MPI_COMM_WORLD, &req);
			sync_ready();
			compute(comp);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			MPI_Isend(sbuf, count, dt, 0, TAG_DATA, MPI_COMM_WORLD, &req);
			compute(comp);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			if (check)
				check_recv(rbuf, size, nc, s01);
		}
		break;
	}
	/* the CPU-time clock reads around the computations are not the benchmark's */
	if (comp_calls)
		T -= 2 * comp_calls * cpu_read_us / (kind == B_BOTH ? 2 : 1);
	last_cpu = !comp_calls ? NAN : kind == B_BOTH ? comp_cpu_us / 2 : comp_cpu_us;
	return T;
}

static MPI_Datatype vec_type(size_t size)
{
	MPI_Datatype t;

	MPI_Type_vector((int)(size / 32), 32, 64, MPI_CHAR, &t);
	MPI_Type_commit(&t);
	return t;
}

static size_t round_dt(size_t s)	/* payload of a vector of 32-byte blocks */
{
	s -= s % 32;
	return s < 32 ? 32 : s;
}

static int point_id;

/* A growing array of samples (rank 0). */
struct vec {
	double *v;
	int n, cap;
};

static void vec_add(struct vec *a, const double *v, int n)
{
	if (a->n + n > a->cap) {
		int cap = a->cap ? a->cap : 64;

		while (cap < a->n + n)
			cap *= 2;
		a->v = realloc(a->v, sizeof(double) * cap);
		if (!a->v) {
			fprintf(stderr, "overlap: out of memory\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		a->cap = cap;
	}
	memcpy(a->v + a->n, v, sizeof(double) * n);
	a->n += n;
}

/*
 * The references, pooled over the whole run (bench/README.md, "Robust
 * references"): the 0-byte latency from a block of --lat0-rounds before
 * every point (plus the first block of LAT0_ROUNDS), each size's ping-pong
 * (datatype ping-pong, blocking-send time) from the base block and a
 * block before every sweep over that size.
 */
static struct vec lat0_pool;
static int lat0_blocks;
static int lat0_rounds = 5;
static struct vec pool_pp[MAXSIZES], pool_ppdt[MAXSIZES], pool_send[MAXSIZES];
static int blocks_pp[MAXSIZES], blocks_ppdt[MAXSIZES], blocks_send[MAXSIZES];

/* A measured point, evaluated at the end against the pooled references. */
struct point {
	int kind, s, threads;
	size_t size;
	double comp;
	long errs;
	double *seq;	/* rank 0: the T of each measured round (before the latency subtraction) */
	double *cpu;	/* rank 0: the CPU time of its computation (NAN: none) */
	int n;
	int t0;		/* index of the same benchmark's T0 point, -1 */
};
static struct point *points;
static int npoints, cap_points;

/*
 * One point: warm-up rounds, then @n measured rounds; returns the rounds'
 * times on rank 0 (malloc'ed; NULL on rank 1) and adds the data errors of
 * both ranks to *errs.
 */
static double *run_rounds(int kind, size_t size, double comp, int n, long *errs, double **cpu)
{
	double *samples = NULL, *cpus = NULL;
	int nc = (kind == K_PINGPONG_DT || kind == B_NONCONTIG);
	MPI_Datatype dt = MPI_BYTE;
	int count = (int)size;
	long e1 = 0, fb1 = -1;

	if (rank == 0) {
		samples = malloc(sizeof(double) * (n ? n : 1));
		cpus = malloc(sizeof(double) * (n ? n : 1));
		if (!samples || !cpus) {
			fprintf(stderr, "overlap: out of memory\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	if (nc && size) {
		dt = vec_type(size);
		count = 1;
	}
	pt_errors = 0;
	pt_first_bad = -1;
	point_id++;
	for (int i = 0; i < warmup + n; i++) {
		int m = i - warmup;
		int check = m >= 0 && (verify_all || m == 0 || m == n - 1);
		uint64_t seed = ((uint64_t)point_id << 24) + (uint64_t)i;
		double T = one_round(kind, size, dt, count, nc, comp, check, seed);

		if (m >= 0 && samples) {
			samples[m] = T;
			cpus[m] = last_cpu;
		}
	}
	if (nc && size)
		MPI_Type_free(&dt);
	/* collect rank 1's error count; also keeps the ranks in step */
	if (rank == 0) {
		long v[2];

		MPI_Recv(v, 2, MPI_LONG, 1, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		e1 = v[0];
		fb1 = v[1];
	} else {
		long v[2] = { pt_errors, pt_first_bad };

		MPI_Send(v, 2, MPI_LONG, 0, TAG_CTL, MPI_COMM_WORLD);
		*errs = 0;
		if (cpu)
			*cpu = NULL;
		return NULL;
	}
	if (cpu)
		*cpu = cpus;
	else
		free(cpus);
	*errs = pt_errors + e1;
	if (*errs) {
		fprintf(stderr,
			"overlap%s: ERROR: data corrupt: %s size %zu comp %.1f us: corrupt words/bytes rank 0 %ld (first at offset %ld), rank 1 %ld (first at offset %ld)\n",
			label, kind < NBENCH ? bench_name[kind] :
			kind == K_PINGPONG ? "pingpong" : kind == K_PINGPONG_DT ? "pingpong-dt" : "send",
			size, comp, pt_errors, pt_first_bad, e1, fb1);
		total_errors += *errs;
	}
	return samples;
}

/* A block of @n rounds of a reference kind, added to @pool on rank 0. */
static long ref_block(int kind, size_t size, int n, struct vec *pool, int *blocks)
{
	long errs;
	double *v;

	if (n <= 0)
		return 0;
	v = run_rounds(kind, size, 0, n, &errs, NULL);
	if (v) {
		vec_add(pool, v, n);
		(*blocks)++;
		free(v);
	}
	return errs;
}

/* A measured point: a block of 0-byte latency rounds, then the point itself. */
static int add_point(int kind, int s, size_t size, double comp, int threads, int t0)
{
	struct point *p;
	long errs;

	if (comp_calibrated && kind != B_NLOAD)
		recalibrate();
	errs = ref_block(K_PINGPONG, 0, lat0_rounds, &lat0_pool, &lat0_blocks);
	if (npoints == cap_points) {
		cap_points = cap_points ? 2 * cap_points : 256;
		points = realloc(points, sizeof(*points) * cap_points);
		if (!points) {
			fprintf(stderr, "overlap: out of memory\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	p = &points[npoints];
	p->kind = kind;
	p->s = s;
	p->size = size;
	p->comp = comp;
	p->threads = threads;
	p->n = iters;
	p->t0 = t0;
	p->seq = run_rounds(kind, size, comp, iters, &p->errs, &p->cpu);
	p->errs += errs;
	return npoints++;
}

/* ---- output ---- */
static FILE *csv;

/* @v printed with @fmt into @buf, or @none when it is NAN (not measured). */
static const char *fmt_num(char *buf, size_t len, const char *fmt, double v, const char *none)
{
	if (isnan(v))
		return none;
	snprintf(buf, len, fmt, v);
	return buf;
}

/* One result line on stdout and in the CSV (rank 0). */
static void out_row(const struct ovl_row *r)
{
	char b[8][32], line[1024], rounds[32] = "-";

	if (rank != 0)
		return;
	if (r->rounds >= 0)
		snprintf(rounds, sizeof(rounds), "%d/%d", r->rounds_valid, r->rounds);
	printf("%-10s %10zu %11.2f %11.2f %11.2f %8s %3d %6ld %11s %8s %5.0f %11.2f %8s %11.2f %11.2f %8s %8s %11s %9s %s\n",
	       r->bench, r->size, r->comp, r->tcomm, r->tmeas,
	       fmt_num(b[0], 32, "%.3f", r->ratio, "-"), r->threads, r->errors,
	       fmt_num(b[1], 32, "%.2f", r->t0, "-"), fmt_num(b[2], 32, "%.3f", r->ratio0, "-"),
	       r->iqr_pct, r->tmin, fmt_num(b[3], 32, "%.3f", r->ratio_min, "-"),
	       r->tmeas_q1, r->tmeas_q3, fmt_num(b[4], 32, "%.3f", r->ratio_q1, "-"),
	       fmt_num(b[5], 32, "%.3f", r->ratio_q3, "-"), fmt_num(b[6], 32, "%.2f", r->tcomp_cpu, "-"),
	       rounds, r->valid ? "ok" : r->reason);
	if (csv) {
		ovl_format_row(line, sizeof(line), r);
		fputs(line, csv);
	}
}

static void row_init(struct ovl_row *r, const char *bench, size_t size, double comp)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->bench, sizeof(r->bench), "%s", bench);
	r->size = size;
	r->comp = comp;
	r->tcomm = r->tmeas = r->ratio = r->t0 = r->ratio0 = r->iqr_pct = r->tmin = NAN;
	r->ratio_min = r->tmeas_q1 = r->tmeas_q3 = r->ratio_q1 = r->ratio_q3 = NAN;
	r->ratio_raw = r->lat0 = NAN;
	r->valid = 1;
	r->rounds_valid = r->rounds = -1;
}

/* A reference's own row: its pooled statistics. */
static void out_ref(const char *bench, size_t size, const struct vec *pool, long errs)
{
	struct ovl_row r;
	struct ovl_ref ref = ovl_ref_of(pool->v, pool->n);
	double *c = malloc(sizeof(double) * (pool->n ? pool->n : 1));
	struct ovl_quart q = { NAN, NAN, NAN };

	if (c && pool->n) {
		memcpy(c, pool->v, sizeof(double) * pool->n);
		q = ovl_quartiles(c, pool->n);
	}
	free(c);
	row_init(&r, bench, size, 0);
	r.tcomm = ref.q1;	/* the reference */
	r.tmeas = ref.med;
	r.errors = errs;
	r.iqr_pct = q.med > 0 ? 100 * (q.q3 - q.q1) / q.med : 0;
	r.tmin = ref.min;
	r.tmeas_q1 = q.q1;
	r.tmeas_q3 = q.q3;
	r.rounds_valid = r.rounds = pool->n;
	r.valid = ref.n > 0;
	if (!r.valid)
		snprintf(r.reason, sizeof(r.reason), "%s", ovl_reason_name(OVL_NOREF));
	out_row(&r);
}

/*
 * Rank 0, at the end: the pooled references, then every row, each point
 * evaluated against them (ovl_eval_point: valid rounds, the capped latency
 * subtraction, eq. 1 with its sign checked).
 */
static void report(void)
{
	struct ovl_ref L = ovl_ref_of(lat0_pool.v, lat0_pool.n);
	static struct ovl_ref rpp[MAXSIZES], rppdt[MAXSIZES], rsend[MAXSIZES];
	struct ovl_point *ev = calloc(npoints ? npoints : 1, sizeof(*ev));
	int ninv = 0, nbp = 0, nblk = 0;

	if (!ev) {
		fprintf(stderr, "overlap: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int s = 0; s < nsizes; s++) {
		rpp[s] = ovl_ref_of(pool_pp[s].v, pool_pp[s].n);
		rppdt[s] = ovl_ref_of(pool_ppdt[s].v, pool_ppdt[s].n);
		rsend[s] = ovl_ref_of(pool_send[s].v, pool_send[s].n);
		nblk += blocks_pp[s];
		nbp += pool_pp[s].n;
	}
	for (int i = 0; i < npoints; i++) {
		struct point *p = &points[i];
		int s = p->s;
		struct ovl_point_in in = {
			.seq = p->seq, .cpu = comp_calibrated ? p->cpu : NULL, .n = p->n,
			.sub_lat0 = p->kind == B_SENDER || p->kind == B_RECEIVER || p->kind == B_NONCONTIG,
			.comp = p->kind == B_NLOAD ? 0 : p->comp, .lat0 = L,
			.tcomm = p->kind == B_NONCONTIG ? rppdt[s] : p->kind == B_CPU ? rsend[s] : rpp[s],
		};

		ev[i] = ovl_eval_point(&in);
		if (p->kind == B_NLOAD && !ev[i].reason && !(in.tcomm.q1 > 0))
			ev[i].reason = OVL_NOREF;
		ninv += ev[i].reason != OVL_OK && p->comp > 0;
	}

	printf("# lat0 (0-byte ping-pong / 2) = %.2f us: lower quartile of %d rounds pooled from %d blocks spread over the run (median %.2f, min %.2f); the first block alone: median %.2f us (of %d)\n",
	       L.q1, L.n, lat0_blocks, L.med, L.min, lat0_first, lat0_first_n);
	printf("# T_comm (ping-pong / 2) = lower quartile of each size's rounds pooled from the base block and one block before every sweep over that size (%d rounds in %d blocks over %d sizes)\n",
	       nbp, nblk, nsizes);
	if (comp_calibrated)
		printf("# T_comp of eq. 1 = each round's own computation time, on the thread's CPU-time clock (under emulation it includes time the host took the vCPU away,\n"
		       "#   not time other threads of the guest took: that stays overhead); Tcomp_cpu = its median; T_comp column = the work asked for (the grid); clock reads: %.2f us each, taken out\n",
		       cpu_read_us);
	if (comp_calibrated)
		printf("# computation: busy loop recalibrated before every point (2 ms on the thread's CPU-time clock, median of the last %d): %.1f iterations per us at the start, %.1f..%.1f during the run, %.1f at the end\n",
		       CALIB_KEEP, blocks_first, calib_hi > 0 ? calib_lo : blocks_first,
		       calib_hi > 0 ? calib_hi : blocks_first, blocks_per_us);
	printf("# sender/receiver/noncontig: the latency subtracted from a round is at most its sequence - T_comp (lat0 column: the median subtracted)\n");
	printf("# a round is invalid when lat0 >= its sequence or T < %.0f%% of T_comp; a point is invalid (ratio '-', reason in the last column) with fewer than half of its rounds valid,\n",
	       100 * (1 - OVL_COMP_SLACK));
	printf("#   a missing reference, or eq. 1 below 0 beyond the references' spread (T_comm's fastest round, T_comp - 10%%); within it, it reads 0. Ratios of valid points are never negative.\n");
	printf("# invalid points: %d of %d with computation\n", ninv, npoints);
	printf("# T0 = T_measured of the same benchmark without computation; ratio0 = eq. 1 with T_comm := T0 (extra column, not in the paper)\n");
	printf("# iqr%% = interquartile range of the valid rounds' T_measured, in %% of the median (noise indicator)\n");
	printf("# Tmin = fastest valid round; ratio_min = eq. 1 from minima (Tmin with the fastest lat0, fastest ping-pong): robust on a busy machine, not the paper's median\n");
	printf("# Tq1/Tq3 = quartiles of T_measured; rq1/rq3 = the ratio at those quartiles; rounds = valid/measured\n");
	printf("# %-8s %10s %11s %11s %11s %8s %3s %6s %11s %8s %5s %11s %8s %11s %11s %8s %8s %11s %9s %s\n", "bench", "size",
	       "T_comp", "T_comm", "T_measured", "ratio", "thr", "errors", "T0", "ratio0", "iqr%", "Tmin",
	       "ratio_min", "Tq1", "Tq3", "rq1", "rq3", "Tcomp_cpu", "rounds", "status");

	out_ref("lat0", 0, &lat0_pool, errs_lat0);
	for (int s = 0; s < nsizes; s++) {
		out_ref("pingpong", sizes[s], &pool_pp[s], errs_pp[s]);
		if (want[B_NONCONTIG])
			out_ref("pingpong-dt", round_dt(sizes[s]), &pool_ppdt[s], errs_ppdt[s]);
		if (want[B_CPU])
			out_ref("send", sizes[s], &pool_send[s], errs_send[s]);
	}
	for (int i = 0; i < npoints; i++) {
		struct point *p = &points[i];
		struct ovl_point *e = &ev[i];
		struct ovl_ref R = p->kind == B_NONCONTIG ? rppdt[p->s] :
			p->kind == B_CPU ? rsend[p->s] : rpp[p->s];
		struct ovl_row r;

		row_init(&r, bench_name[p->kind], p->size, p->kind == B_NLOAD ? 0 : p->comp);
		r.tcomm = R.q1;
		r.tmeas = e->tmeas;
		r.threads = p->threads;
		r.errors = p->errs;
		r.iqr_pct = e->iqr_pct;
		r.tmin = e->tmin;
		r.tmeas_q1 = e->q1;
		r.tmeas_q3 = e->q3;
		r.rounds_valid = e->nvalid;
		r.rounds = e->n;
		r.lat0 = e->lat0_used;
		r.tcomp_cpu = comp_calibrated && p->comp > 0 && p->kind != B_NLOAD ? e->tcomp : NAN;
		r.valid = e->reason == OVL_OK;
		if (!r.valid)
			snprintf(r.reason, sizeof(r.reason), "%s", ovl_reason_name(e->reason));
		if (p->kind == B_NLOAD) {	/* slowdown, not eq. 1 */
			r.ratio_raw = R.q1 > 0 ? e->tmeas / R.q1 : NAN;
			if (r.valid) {
				r.ratio = r.ratio_raw;
				r.ratio_q1 = e->q1 / R.q1;
				r.ratio_q3 = e->q3 / R.q1;
				r.ratio_min = R.min > 0 ? e->tmin / R.min : NAN;
			}
		} else if (p->t0 < 0) {		/* a T0 row */
			r.t0 = r.valid ? e->tmeas : NAN;
		} else {
			struct ovl_point *z = &ev[p->t0];

			r.ratio = e->ratio;
			r.ratio_raw = e->ratio_raw;
			r.ratio_q1 = e->rq1;
			r.ratio_q3 = e->rq3;
			r.ratio_min = e->rmin;
			if (z->reason == OVL_OK) {
				r.t0 = z->tmeas;
				if (r.valid)
					r.ratio0 = ovl_ratio_checked(e->tmeas, z->tmeas, z->q1, e->tcomp, NULL);
			}
		}
		out_row(&r);
	}
	fflush(stdout);
	if (csv)
		fflush(csv);
	free(ev);
}

static void progress(const char *what, size_t size, int done, int total)
{
	static double phase_start;
	static int phase_total = -1;
	double el, eta;

	if (rank != 0 || quiet)
		return;
	if (total != phase_total) {	/* a new phase: base, then overlap */
		phase_total = total;
		phase_start = now_us();
	}
	el = (now_us() - phase_start) / 1e6;
	eta = ovl_eta(done, total, el);
	fprintf(stderr, "[overlap%s] %-10s size %9zu  point %d/%d  elapsed %.1f s  left %s%.0f s\n",
		label, what, size, done, total, (now_us() - t_start) / 1e6,
		eta < 0 ? "~" : "", eta < 0 ? 0 : eta);
}

/* ---- options ---- */
static size_t parse_size(const char *s)
{
	size_t v;

	if (ovl_parse_size(s, &v)) {
		if (rank == 0)
			fprintf(stderr, "overlap: bad size '%s' (bytes, K/M/G suffixes)\n", s);
		MPI_Finalize();
		exit(2);
	}
	return v;
}

static void print_help(FILE *f)
{
	fprintf(f,
"usage: mpirun -np 2 overlap [options]\n"
"The overlap benchmarks of Denis & Trahay (ICPP 2016) on 2 ranks. Rank 0\n"
"prints one line per grid point (median of --iters rounds) at the end, each\n"
"evaluated against references pooled over the whole run; see bench/README.md.\n"
"  --bench LIST       benchmarks to run, comma-separated: sender, receiver, both,\n"
"                     noncontig, cpu, nload, or all (default all)\n"
"  --sizes LIST       message sizes in bytes (K, M, G suffixes = 2^10, 2^20, 2^30),\n"
"                     e.g. 64K,1M,8M; replaces the size grid\n"
"  --min-size S --max-size S   size grid: S_min x sqrt(2)^k up to S_max\n"
"                     (default 1K..16M)\n"
"  --comp LIST|auto   computation times in us; auto (default) = sqrt(2) grid from\n"
"                     --comp-min to --comp-max\n"
"  --comp-min US      smallest computation time of the auto grid (default 1)\n"
"  --comp-max US      largest (default 2 x the largest measured T_comm)\n"
"  --comp-max-cap US  at most this for the default largest (0 = no cap)\n"
"  --comp-equal       one computation time per size: that size's T_comm\n"
"  --comp-clock calibrated|cpu|wall  calibrated (default): the busy loop runs a\n"
"                     fixed number of iterations, calibrated at start-up on this\n"
"                     thread's CPU time; cpu / wall: it reads this thread's CPU\n"
"                     time / the wall clock until T_comp has passed\n"
"  --threads LIST     computing-thread counts for nload (default 0..number of CPUs)\n"
"  --iters N          measured rounds per point; the median is reported (default 50)\n"
"  --warmup N         unmeasured rounds before them (default 2)\n"
"  --lat0-rounds N    0-byte latency rounds measured before every point (default 5);\n"
"                     the 0-byte latency subtracted is the median of all of them\n"
"                     (and of a first block of 200), pooled over the run\n"
"  --verify first-last|all   rounds whose received data are checked (default the\n"
"                     first and last measured round of each point)\n"
"  --csv FILE         also write the results as CSV (header: " OVL_CSV_HEADER ")\n"
"  --label NAME       name shown in the progress lines on stderr\n"
"  --quiet            no progress lines\n"
"  -h, --help         this text (works without mpirun)\n"
"Environment: OVERLAP_IRECV_FIRST=1 posts the receiver-side MPI_Irecv before the\n"
"CTS (the paper sends the CTS first).\n");
}

static void usage(int st)
{
	if (rank == 0)
		print_help(st ? stderr : stdout);
	MPI_Finalize();
	exit(st);
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bench", 1, 0, 'b' }, { "sizes", 1, 0, 's' },
		{ "min-size", 1, 0, 'm' }, { "max-size", 1, 0, 'M' },
		{ "comp", 1, 0, 'c' }, { "comp-equal", 0, 0, 'e' },
		{ "comp-min", 1, 0, 'n' }, { "comp-max", 1, 0, 'x' },
		{ "comp-clock", 1, 0, 'k' }, { "threads", 1, 0, 't' },
		{ "iters", 1, 0, 'i' }, { "warmup", 1, 0, 'w' },
		{ "verify", 1, 0, 'v' }, { "csv", 1, 0, 'o' },
		{ "label", 1, 0, 'l' }, { "quiet", 0, 0, 'q' },
		{ "lat0-rounds", 1, 0, 'L' }, { "comp-max-cap", 1, 0, 'C' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	size_t minsz = 1024, maxsz = 16 << 20;
	int c, anyb = 0;
	char *tok, *save;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				int found = 0;

				for (int b = 0; b < NBENCH; b++)
					if (!strcmp(tok, "all") || !strcmp(tok, bench_name[b]) ||
					    (!strcmp(tok, "sender-side") && b == B_SENDER) ||
					    (!strcmp(tok, "receiver-side") && b == B_RECEIVER) ||
					    (!strcmp(tok, "both-sides") && b == B_BOTH)) {
						want[b] = 1;
						found = 1;
					}
				if (!found) {
					if (rank == 0)
						fprintf(stderr, "overlap: unknown bench '%s'\n", tok);
					usage(2);
				}
				anyb = 1;
			}
			break;
		case 's':
			nsizes = 0;
			for (tok = strtok_r(optarg, ",", &save); tok && nsizes < MAXSIZES;
			     tok = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = parse_size(tok);
			break;
		case 'm': minsz = parse_size(optarg); break;
		case 'M': maxsz = parse_size(optarg); break;
		case 'c':
			if (!strcmp(optarg, "auto")) {
				comp_auto = 1;
				break;
			}
			comp_auto = 0;
			ncomps = 0;
			for (tok = strtok_r(optarg, ",", &save); tok && ncomps < MAXCOMPS;
			     tok = strtok_r(NULL, ",", &save))
				if (atof(tok) > 0)
					comps[ncomps++] = atof(tok);
			break;
		case 'e': comp_equal = 1; break;
		case 'n': comp_min = atof(optarg); break;
		case 'x': comp_max = atof(optarg); break;
		case 'C': comp_max_cap = atof(optarg); break;
		case 'k':
			comp_calibrated = 0;
			if (!strcmp(optarg, "wall"))
				comp_clock = CLOCK_MONOTONIC;
			else if (!strcmp(optarg, "cpu"))
				comp_clock = CLOCK_THREAD_CPUTIME_ID;
			else if (!strcmp(optarg, "calibrated"))
				comp_calibrated = 1;
			else
				usage(2);
			break;
		case 't':
			nthreads_list = 0;
			for (tok = strtok_r(optarg, ",", &save); tok && nthreads_list < MAXTHREADS;
			     tok = strtok_r(NULL, ",", &save))
				threads_list[nthreads_list++] = atoi(tok);
			break;
		case 'i': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		case 'L': lat0_rounds = atoi(optarg) < 0 ? 0 : atoi(optarg); break;
		case 'v':
			if (!strcmp(optarg, "all"))
				verify_all = 1;
			else if (!strcmp(optarg, "first-last"))
				verify_all = 0;
			else
				usage(2);
			break;
		case 'o': csv_path = optarg; break;
		case 'l': {
			static char lb[64];

			snprintf(lb, sizeof(lb), " %s", optarg);
			label = lb;
			break;
		}
		case 'q': quiet = 1; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind < argc)
		usage(2);
	if (!anyb)
		for (int b = 0; b < NBENCH; b++)
			want[b] = 1;
	if (iters < 1)
		iters = 1;
	if (!nsizes)
		nsizes = ovl_grid_size(minsz, maxsz, sizes, MAXSIZES);
	if (!nsizes) {
		if (rank == 0)
			fprintf(stderr, "overlap: empty size grid (--min-size above --max-size?)\n");
		usage(2);
	}
	if (!nthreads_list) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		for (int t = 0; t <= n && t < MAXTHREADS; t++)
			threads_list[nthreads_list++] = t;
	}
}

int main(int argc, char **argv)
{
	int provided, nprocs;
	size_t maxsz = 0;
	char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
	char kbuf[160];
	int len;
	const char *kmode;
	int total, done = 0;
	double tmax = 0, delay_start, delay_pct, delay_max;

	for (int i = 1; i < argc; i++)	/* help needs no MPI job */
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			print_help(stdout);
			return 0;
		}
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	t_start = now_us();
	delay_start = run_delay_us();
	if (nprocs != 2) {
		if (rank == 0)
			fprintf(stderr, "overlap: needs exactly 2 ranks (mpirun -np 2)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	peer = 1 - rank;
	parse_args(argc, argv);
	if (comp_calibrated) {
		calibrate_compute();
		measure_cpu_read();
	}
	irecv_first = getenv("OVERLAP_IRECV_FIRST") != NULL;

	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > maxsz)
			maxsz = sizes[i];
	if (posix_memalign((void **)&sbuf, 4096, 2 * maxsz + 4096) ||
	    posix_memalign((void **)&rbuf, 4096, 2 * maxsz + 4096)) {
		fprintf(stderr, "overlap: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(sbuf, 0x5A, 2 * maxsz + 4096);	/* first touch outside timing */
	memset(rbuf, FILLBYTE, 2 * maxsz + 4096);

	if (csv_path && rank == 0) {
		csv = fopen(csv_path, "w");
		if (!csv) {
			perror(csv_path);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		fprintf(csv, "%s\n", OVL_CSV_HEADER);
	}

	kmode = kprog_mode(kbuf, sizeof(kbuf));
	if (rank == 0) {
		cpu_set_t set;

		MPI_Get_processor_name(name, &len);
		MPI_Get_library_version(lib, &len);
		lib[strcspn(lib, "\n,")] = 0;
		sched_getaffinity(0, sizeof(set), &set);
		printf("# overlap: MPI overlap benchmark (Denis & Trahay, ICPP 2016), 2 ranks on %s, %ld CPUs online, rank 0 may run on %d\n",
		       name, sysconf(_SC_NPROCESSORS_ONLN), CPU_COUNT(&set));
		printf("# library: %s; thread level provided %d (FUNNELED=%d)\n", lib, provided,
		       MPI_THREAD_FUNNELED);
		printf("# kprog-status-start: %s\n", kmode);
		printf("# times in microseconds (clock_gettime CLOCK_MONOTONIC); T_measured = median of %d rounds after %d warm-up rounds\n",
		       iters, warmup);
		printf("# each round starts with a 0-byte send/recv synchronisation, receiver ready first\n");
		if (comp_calibrated)
			printf("# computation: calibrated busy integer loop, %.1f iterations per us on rank 0 (fixed work: CPU taken away lengthens it)\n",
			       blocks_per_us);
		else
			printf("# computation: busy integer loop until T_comp of %s has passed\n",
			       comp_clock == CLOCK_MONOTONIC ? "wall-clock time" :
			       "this thread's CPU time (a fixed amount of work: CPU taken away lengthens it)");
		printf("# ratio = (T_measured - max(T_comm,T_comp)) / min(T_comm,T_comp)  (eq. 1: 0 overlap, 1 serialized); nload: T_measured/T_comm (slowdown)\n");
		printf("# sender:    Isend, compute, Wait, recv ACK; T_measured = sequence - 0-byte latency; T_comm = contiguous ping-pong/2\n");
		printf("# receiver:  send CTS, Irecv, compute, Wait; T_measured = sequence - 0-byte latency; T_comm = contiguous ping-pong/2\n");
		printf("# both:      Isend,compute,Wait,Irecv,compute,Wait (rank 1 recv first); T_measured = sequence/2; T_comm = ping-pong/2\n");
		printf("# noncontig: as sender, vector of 32-byte MPI_CHAR blocks, stride 64; T_comm = ping-pong/2 with that type\n");
		printf("# cpu:       Isend, compute, Wait, no ACK; T_measured = sequence; T_comm = blocking MPI_Send time\n");
		printf("# nload:     N computing threads per rank in background, blocking send+recv in main thread; T_measured = sequence/2\n");
		printf("# data check: %s measured round of each point (pattern; gaps and %d bytes past the end must stay untouched)\n",
		       verify_all ? "every" : "first and last", GUARD);
		fflush(stdout);
	}

	/* noncontig sizes must hold whole 32-byte blocks */
	/* ---- base benchmarks: the first block of every reference ---- */
	total = 1 + nsizes * (1 + want[B_NONCONTIG] + want[B_CPU]);
	progress("latency", 0, done, total);
	errs_lat0 += ref_block(K_PINGPONG, 0, iters > LAT0_ROUNDS ? iters : LAT0_ROUNDS,
			       &lat0_pool, &lat0_blocks);
	if (rank == 0) {
		struct ovl_ref r = ovl_ref_of(lat0_pool.v, lat0_pool.n);

		lat0_first = r.med;
		lat0_first_n = r.n;
	}
	done++;
	for (int s = 0; s < nsizes; s++) {
		progress("base", sizes[s], done, total);
		errs_pp[s] += ref_block(K_PINGPONG, sizes[s], iters, &pool_pp[s], &blocks_pp[s]);
		t_pp[s] = rank == 0 ? ovl_ref_of(pool_pp[s].v, pool_pp[s].n).q1 : 0;
		done++;
		if (want[B_NONCONTIG]) {
			errs_ppdt[s] += ref_block(K_PINGPONG_DT, round_dt(sizes[s]), iters,
						  &pool_ppdt[s], &blocks_ppdt[s]);
			t_ppdt[s] = rank == 0 ? ovl_ref_of(pool_ppdt[s].v, pool_ppdt[s].n).q1 : 0;
			done++;
		}
		if (want[B_CPU]) {
			errs_send[s] += ref_block(K_SENDTIME, sizes[s], iters, &pool_send[s],
						  &blocks_send[s]);
			t_send[s] = rank == 0 ? ovl_ref_of(pool_send[s].v, pool_send[s].n).q1 : 0;
			done++;
		}
		if (t_pp[s] > tmax)
			tmax = t_pp[s];
	}
	/* every rank needs the first T_comm values (comp-equal, auto grid) */
	MPI_Bcast(t_pp, nsizes, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	MPI_Bcast(t_ppdt, nsizes, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	MPI_Bcast(t_send, nsizes, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	MPI_Bcast(&tmax, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

	if (!comp_equal && comp_auto) {
		if (comp_max <= 0) {
			comp_max = 2 * tmax;
			if (comp_max_cap > 0 && comp_max > comp_max_cap) {
				if (rank == 0)
					printf("# comp-grid: 2 x max T_comm = %.0f us, capped at %.0f us\n",
					       comp_max, comp_max_cap);
				comp_max = comp_max_cap;
			}
		}
		ncomps = ovl_grid_double(comp_min, comp_max, comps, MAXCOMPS);
	}
	if (rank == 0) {
		if (comp_equal)
			printf("# comp: equal to each size's T_comm (lower quartile of its blocks before the sweep)\n");
		else if (comp_auto)
			printf("# comp-grid: sqrt2 min %.3f max %.3f (%d values)\n", comp_min, comp_max, ncomps);
		else
			printf("# comp: %d given values\n", ncomps);
		fflush(stdout);
	}

	/* ---- overlap benchmarks ---- */
	done = 0;
	total = 0;
	for (int b = 0; b < NBENCH; b++)
		if (want[b])
			total += nsizes * (b == B_NLOAD ? nthreads_list : comp_equal ? 1 : ncomps);
	for (int b = 0; b < NBENCH; b++) {
		if (!want[b] || b == B_NLOAD)
			continue;
		for (int s = 0; s < nsizes; s++) {
			size_t size = b == B_NONCONTIG ? round_dt(sizes[s]) : sizes[s];
			double tcomm = b == B_NONCONTIG ? t_ppdt[s] : b == B_CPU ? t_send[s] : t_pp[s];
			int nc = comp_equal ? 1 : ncomps, t0;

			progress(bench_name[b], size, done, total);
			/* one more block of this benchmark's T_comm reference */
			if (b == B_NONCONTIG)
				errs_ppdt[s] += ref_block(K_PINGPONG_DT, size, iters, &pool_ppdt[s],
							  &blocks_ppdt[s]);
			else if (b == B_CPU)
				errs_send[s] += ref_block(K_SENDTIME, size, iters, &pool_send[s],
							  &blocks_send[s]);
			else
				errs_pp[s] += ref_block(K_PINGPONG, size, iters, &pool_pp[s],
							&blocks_pp[s]);
			if (comp_equal) {	/* T_comp := T_comm, from every block so far */
				struct vec *pool = b == B_NONCONTIG ? &pool_ppdt[s] :
					b == B_CPU ? &pool_send[s] : &pool_pp[s];

				if (rank == 0)
					tcomm = ovl_ref_of(pool->v, pool->n).q1;
				MPI_Bcast(&tcomm, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			}
			t0 = add_point(b, s, size, 0, 0, -1);
			for (int c = 0; c < nc; c++) {
				add_point(b, s, size, comp_equal ? tcomm : comps[c], 0, t0);
				done++;
			}
		}
	}
	if (want[B_NLOAD]) {
		for (int ti = 0; ti < nthreads_list; ti++) {
			int n = threads_list[ti];
			pthread_t *th = calloc(n ? n : 1, sizeof(*th));

			atomic_store(&bg_stop, 0);
			for (int i = 0; i < n; i++)
				pthread_create(&th[i], NULL, bg_thread, (void *)(uintptr_t)(i + 1));
			for (int s = 0; s < nsizes; s++) {
				if (s == 0)
					progress("nload", sizes[s], done, total);
				add_point(B_NLOAD, s, sizes[s], 0, n, -1);
				done++;
			}
			atomic_store(&bg_stop, 1);
			for (int i = 0; i < n; i++)
				pthread_join(th[i], NULL);
			free(th);
		}
	}
	if (rank == 0)
		report();

	/* the larger of the two ranks' run delays, in % of the run's wall time */
	delay_pct = delay_start < 0 || run_delay_us() < 0 ? -1 :
		100 * (run_delay_us() - delay_start) / (now_us() - t_start);
	MPI_Reduce(&delay_pct, &delay_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	kmode = kprog_mode(kbuf, sizeof(kbuf));
	if (rank == 0) {
		if (delay_max >= 0)
			printf("# run-delay: %.1f%% of the run (the larger rank's time runnable but waiting for a CPU)\n",
			       delay_max);
		printf("# kprog-status-end: %s\n", kmode);
		printf("# data-errors: %ld\n", total_errors);
		printf("# done in %.1f s\n", (now_us() - t_start) / 1e6);
		fflush(stdout);
		progress("done", 0, done, total);
		if (csv)
			fclose(csv);
	}
	MPI_Bcast(&total_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return total_errors ? 1 : 0;
}
