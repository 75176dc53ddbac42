// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/progress: progress-thread and context-switch benchmarks of
 * Hoefler & Lumsdaine, "Message Progression in Parallel Computing - To
 * Thread or not to Thread?" (seed 001, sections III-C and V), for 2 ranks.
 *
 * Rank 0 is the client, rank 1 the server. One round (seed V-A): the
 * client sends a 0-byte NEXT when its bookkeeping of the last round is
 * done; the server posts its receive and sends a 0-byte READY; the client posts
 * MPI_Irecv (the echo) + MPI_Isend, computes, waits for both; the server
 * receives, writes CLOCK_MONOTONIC into the first 8 bytes just before the
 * echo (the last send) and sends the payload back.
 *
 * Per message size, first (no thread): t_b = median time of the blocking
 * round (post, wait at once); the workload lambda that takes t_b alone
 * (seed V-B-3) and its time t_c. Then per scheme, strategy, placement:
 *   time-based: compute for t_b wall time; t_o = time in post + wait
 *   work-based: compute lambda; t_o = t_ov (post..wait end) - t_c
 * Strategies (how the client's requests progress while it computes):
 *   manual  no thread; Open MPI progresses only inside the wait
 *   poll    a thread loops MPI_Testall on the requests
 *   intr    a thread blocks in MPI_Waitall
 *   rt      intr with SCHED_FIFO
 *   kernel  no thread under an active kprog: the module progresses
 * manual and kernel are one code path (no thread); a run names it after
 * what progresses it there: kernel if the kprog module is active on both
 * ranks, manual otherwise.
 *
 * Threading: MPI_THREAD_SERIALIZED (the kprog shim passes MULTIPLE
 * programs through to Open MPI). The main thread posts, then hands the
 * requests over with a release store; from then until the thread's
 * "done" (release, read with acquire) only the thread calls MPI. Between
 * rounds the thread waits without calling MPI (poll: spins on the handoff
 * word; intr/rt: futex).
 *
 * Measured per round besides t_o: the progress entity's wake-up latency
 * (server's stamp before the echo -> the thread's return from
 * MPI_Testall/MPI_Waitall, or the main thread's return from the wait
 * without a thread), getrusage(RUSAGE_THREAD) context switches of the
 * compute thread (post..wait) and of the progress thread (whole round),
 * the progress thread's CPU time, whether the requests were done when the
 * computation ended, and per core: CPU use, run-queue wait and switches.
 *
 * Files: progress_opts.c (options, --help), progress_thread.c (the
 * progress thread and its handoff), progress_sys.c (kprog detection,
 * kernel worker CPUs, per-core accounting), progress_stats.c
 * (percentiles, calibration steps, histogram); this file: the rounds,
 * the plan of points, calibration and output.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "progress_opts.h"
#include "progress_stats.h"
#include "progress_sys.h"
#include "kprog_detect.h"
#include "progress_thread.h"

enum { TAG_READY = 21, TAG_DATA, TAG_ECHO, TAG_CTL, TAG_ERRS, TAG_NEXT };

#define ST_BLOCKING (-1)	/* the t_b rounds */
#define PL_ANY (-1)		/* no placement (no thread, workers unrestricted) */
#define GUARD 64
#define FILLBYTE 0xA5
#define CALIB_REPS 7		/* timed runs of the final workload -> t_c */
#define CALIB_TOL 0.03		/* workload within 3 % of t_b */
#define CALIB_STEPS 10
#define WORK_UNIT 32		/* LCG steps per workload unit: fine enough for t_b of 1 us */
#define MAX_CPUS SYS_MAX_CPUS

static int rank;
static struct popts opt;
static unsigned char *sbuf, *rbuf;
static size_t maxsize;

static volatile uint64_t sink;

static inline uint64_t lcg(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/* time-based scheme: busy computation until the wall clock reaches @end */
static void compute_until(int64_t end)
{
	uint64_t x = sink | 1;

	do
		x = lcg(x, 64);
	while (now_ns() < end);
	sink = x;
}

/* work-based scheme: a fixed amount of computation */
static void work(uint64_t units)
{
	uint64_t x = sink | 1;

	for (uint64_t u = 0; u < units; u++)
		x = lcg(x, WORK_UNIT);
	sink = x;
}

static double time_work_us(uint64_t units)
{
	int64_t t0 = now_ns();

	work(units);
	return (now_ns() - t0) / 1e3;
}

/* ---- payload pattern and check ---- */
static inline uint64_t patw(uint64_t i, uint64_t seed)
{
	uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ULL ^ (seed * 0xC2B2AE3D27D4EB4FULL + 0x165667B19E3779F9ULL);

	return z ^ (z >> 29);
}

static inline unsigned char patb(size_t off, uint64_t seed)
{
	return (unsigned char)(patw(off / 8, seed) >> (8 * (off % 8)));
}

static void fill_pattern(unsigned char *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n / 8; i++) {
		uint64_t w = patw(i, seed);

		memcpy(b + 8 * i, &w, 8);
	}
	for (size_t o = n / 8 * 8; o < n; o++)
		b[o] = patb(o, seed);
}

static long point_errors;

static void bad(const char *who, size_t off, const char *what)
{
	if (point_errors++ < 5)
		fprintf(stderr, "progress: rank %d: DATA ERROR (%s) at byte %zu: %s\n", rank, who, off, what);
}

/* bytes 8.. of @b must be the pattern, GUARD bytes past the end untouched */
static void check_tail(const unsigned char *b, size_t n, uint64_t seed, const char *who)
{
	for (size_t i = 1; i < n / 8; i++) {
		uint64_t w;

		memcpy(&w, b + 8 * i, 8);
		if (w != patw(i, seed))
			bad(who, 8 * i, "payload differs from the pattern");
	}
	for (size_t o = n / 8 * 8; o < n; o++)
		if (b[o] != patb(o, seed))
			bad(who, o, "payload differs from the pattern");
	for (size_t o = n; o < n + GUARD; o++)
		if (b[o] != FILLBYTE)
			bad(who, o, "written past the end of the message");
}

/* agreed over both ranks; returns 1 if active on both, line for rank 0 */
static int kprog_mode(char *buf, size_t len)
{
	int st[2], all[4];

	kprog_local_status(&st[0], &st[1]);
	MPI_Allgather(st, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
	return kprog_describe(all, buf, len);
}

/* ---- CPU layout ---- */
struct layout {
	int server, compute, spare;	/* spare -2: none */
	int ncpu;			/* CPUs considered */
	int cpus[MAX_CPUS];
};
static struct layout lay;
static char layout_note[256];

static int cpu_known(int c)
{
	for (int i = 0; i < lay.ncpu; i++)
		if (lay.cpus[i] == c)
			return 1;
	return 0;
}

/* 0 or -1 with a message; same result on both ranks (same machine, same options) */
static int make_layout(void)
{
	cpu_set_t set;
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	lay.ncpu = 0;
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < MAX_CPUS && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				lay.cpus[lay.ncpu++] = c;
	if (lay.ncpu < online && online <= MAX_CPUS) {
		/* bound by mpirun: the layout is ours to decide, use all online CPUs */
		snprintf(layout_note, sizeof(layout_note),
			 "rank was bound to %d of %ld CPUs (run mpirun with --bind-to none); using all online CPUs",
			 lay.ncpu, online);
		lay.ncpu = 0;
		for (int c = 0; c < online; c++)
			lay.cpus[lay.ncpu++] = c;
	}
	lay.server = opt.cpu_server >= 0 ? opt.cpu_server : lay.cpus[0];
	if (opt.cpu_compute >= 0) {
		lay.compute = opt.cpu_compute;
	} else {
		lay.compute = lay.cpus[lay.ncpu > 1 ? 1 : 0];
		if (lay.compute == lay.server && lay.ncpu > 1)
			lay.compute = lay.cpus[0];
	}
	if (opt.cpu_spare != -1) {
		lay.spare = opt.cpu_spare;
	} else {
		lay.spare = -2;
		for (int i = 0; i < lay.ncpu; i++)
			if (lay.cpus[i] != lay.server && lay.cpus[i] != lay.compute) {
				lay.spare = lay.cpus[i];
				break;
			}
	}
	if (!cpu_known(lay.server) || !cpu_known(lay.compute) ||
	    (lay.spare >= 0 && !cpu_known(lay.spare))) {
		if (rank == 0)
			fprintf(stderr, "progress: a CPU given is not online/allowed (server %d, compute %d, spare %d)\n",
				lay.server, lay.compute, lay.spare);
		return -1;
	}
	if (lay.spare == lay.compute) {
		if (rank == 0)
			fprintf(stderr, "progress: the spare core must differ from the compute core\n");
		return -1;
	}
	return 0;
}

static int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* ---- control messages: the client drives the server point by point ---- */
struct ctl {
	int64_t size;
	int32_t rounds, warmup, iters, point_id, verify_all, stop;
};

static int is_check_round(int i, int warmup, int iters, int all)
{
	int m = i - warmup;

	return m >= 0 && (all || m == 0 || m == iters - 1);
}

static uint64_t round_seed(int point_id, int i)
{
	return ((uint64_t)point_id << 24) + (uint64_t)i;
}

/* what the server reports after each point */
struct srv_report {
	long errors;
	double cpu_us;		/* main thread CPU per measured round, post of its receive .. echo sent */
};

static void server_loop(void)
{
	for (;;) {
		struct srv_report rep = { 0, 0 };
		struct ctl c;

		MPI_Recv(&c, sizeof(c), MPI_BYTE, 0, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (c.stop)
			break;
		point_errors = 0;
		for (int i = 0; i < c.rounds; i++) {
			int check = is_check_round(i, c.warmup, c.iters, c.verify_all);
			uint64_t seed = round_seed(c.point_id, i), w0 = 0;
			size_t n = (size_t)c.size;
			MPI_Request rq;
			int64_t stamp;
			double c0;

			if (check)
				memset(rbuf, FILLBYTE, n + GUARD);
			/* the client has finished its bookkeeping: our CPU window starts */
			MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_NEXT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			c0 = thread_cpu_us();
			MPI_Irecv(rbuf, (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &rq);
			MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
			memcpy(&w0, rbuf, 8);
			stamp = now_ns();	/* just before the last send */
			memcpy(rbuf, &stamp, 8);
			MPI_Send(rbuf, (int)n, MPI_BYTE, 0, TAG_ECHO, MPI_COMM_WORLD);
			if (i >= c.warmup)
				rep.cpu_us += thread_cpu_us() - c0;
			if (check) {
				if (w0 != patw(0, seed))
					bad("server", 0, "payload differs from the pattern");
				check_tail(rbuf, n, seed, "server");
			}
		}
		rep.errors = point_errors;
		rep.cpu_us /= c.iters;
		MPI_Send(&rep, sizeof(rep), MPI_BYTE, 0, TAG_ERRS, MPI_COMM_WORLD);
	}
}

/* ---- client ---- */
struct round {
	double to;		/* us in MPI (time-based: post + wait) */
	double tov;		/* us from post to wait end */
	double tpost, twait;
	double comp_share;	/* main's CPU time / wall time during computation */
	long mv, miv;		/* main's context switches, post..wait */
	int done_end;		/* -1 n/a, 0/1 */
	double lat;		/* us, NAN if not observable */
};

static struct cpustat cs0[SYS_MAX_CPUS], cs1[SYS_MAX_CPUS];	/* around a point's measured rounds */
static int64_t cs_t0, cs_t1;
static int wq_ok;		/* kernel worker CPUs under our control */
static int kactive;		/* kprog module active on both ranks */
static int point_id;
static long total_errors;

static void client_round(int strat, struct prog_thread *pt, int scheme, size_t n,
			 double tb_us, uint64_t lambda, int i, int check, uint64_t seed,
			 struct round *r)
{
	MPI_Request req[2];
	struct rusage ru0, ru1;
	int64_t t0, t1, t2, t3, tobs, stamp;
	double c0, c1;
	uint32_t g = 0;

	if (check) {
		fill_pattern(sbuf, n, seed);
		memset(rbuf, FILLBYTE, n + GUARD);
	}
	/* ready for the round (the server's CPU window opens), then the server has posted its receive */
	MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_NEXT, MPI_COMM_WORLD);
	MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	getrusage(RUSAGE_THREAD, &ru0);

	t0 = now_ns();
	MPI_Irecv(rbuf, (int)n, MPI_BYTE, 1, TAG_ECHO, MPI_COMM_WORLD, &req[0]);
	MPI_Isend(sbuf, (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req[1]);
	if (pt)	/* from here until done, only the thread calls MPI */
		g = prog_thread_handoff(pt, req, i);
	t1 = now_ns();
	c0 = thread_cpu_us();
	if (strat != ST_BLOCKING) {
		if (scheme == SC_TIME)
			compute_until(t1 + (int64_t)(tb_us * 1000));
		else
			work(lambda);
	}
	c1 = thread_cpu_us();
	t2 = now_ns();
	r->done_end = -1;
	if (pt) {
		r->done_end = prog_thread_done(pt, g);
		prog_thread_wait(pt, g);
	} else {
		if (kactive && strat != ST_BLOCKING) {
			int flag;

			/* under kprog a test only reads the completion ring */
			MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE);
			r->done_end = flag;
		}
		MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
	}
	t3 = now_ns();
	getrusage(RUSAGE_THREAD, &ru1);

	r->tpost = (t1 - t0) / 1e3;
	r->twait = (t3 - t2) / 1e3;
	r->to = r->tpost + r->twait;
	r->tov = (t3 - t0) / 1e3;
	r->comp_share = t2 > t1 ? (c1 - c0) / ((t2 - t1) / 1e3) : NAN;
	r->mv = ru1.ru_nvcsw - ru0.ru_nvcsw;
	r->miv = ru1.ru_nivcsw - ru0.ru_nivcsw;
	tobs = pt ? pt->t_obs[i] : t3;
	memcpy(&stamp, rbuf, 8);
	/* kernel: completion happens in the kernel, no user entity wakes for it */
	r->lat = (!pt && kactive && strat != ST_BLOCKING) ? NAN : (tobs - stamp) / 1e3;
	if (check) {
		if (stamp < t0 || stamp > tobs)
			bad("client", 0, "echo time stamp outside the round");
		check_tail(rbuf, n, seed, "client");
	}
}

/* ---- output ---- */
static FILE *fdat, *flat, *fhist, *fcores;

static const char *strat_label(int strat)
{
	if (strat == ST_BLOCKING)
		return "blocking";
	if (strat == ST_MANUAL || strat == ST_KERNEL)
		return kactive ? "kernel" : "manual";
	return po_strat_name[strat];
}

static const char *place_label(int place)
{
	return place == PL_ANY ? "-" : po_place_name[place];
}

static void fmt(char *b, size_t len, const char *f, double v)
{
	if (isnan(v))
		snprintf(b, len, "-");
	else
		snprintf(b, len, f, v);
}

static const char *cpu_role(int c)
{
	if (c == lay.server)
		return "server";
	if (c == lay.compute)
		return "compute";
	if (c == lay.spare)
		return "spare";
	return "other";
}

static void out_header(FILE *f)
{
	fprintf(f, "# %-6s %-8s %-6s %-6s %9s %10s %10s %10s %5s %10s %10s %10s %10s %10s %10s %6s %6s %7s %7s %7s %7s %10s %8s %10s %10s %10s %10s %6s %-8s %10s %10s\n",
		"lib", "strategy", "place", "scheme", "size", "tb_us", "tc_us", "lambda", "iters",
		"to_med", "to_q1", "to_q3", "tov_med", "post_med", "wait_med", "cpu%", "done%",
		"m_vcsw", "m_ivcsw", "t_vcsw", "t_ivcsw", "thr_cpu_us", "polls",
		"lat_p50", "lat_p90", "lat_p99", "lat_max", "errors", "kw_mask", "srv_cpu_us", "kw_cpu_us");
}

/* ---- a point: its measurements, accumulated over the passes ---- */
enum { PK_CALIB, PK_MEASURE };

struct core_acc {
	double user, sys, irq, idle;	/* us, /proc/stat */
	double delay, sw;		/* us, switches; /proc/schedstat */
	int sched;
};

struct point {
	int kind, s, strat, place, scheme;
	int skip;
	int n;				/* measured rounds so far */
	double *to, *tov, *post, *wt, *share, *lat;
	int nlat, nde, ndone;
	long mv, miv;			/* compute thread's context switches */
	double tv, tiv, tcpu, polls;	/* progress thread: sums over the measured rounds */
	double srv_cpu;			/* server CPU, sum over the measured rounds, us */
	double kw_ns;			/* unbound kernel workers, ns */
	int kw_ok;
	long errors;
	double wall_us;			/* measured rounds' wall time, us */
	struct core_acc core[SYS_MAX_CPUS];
	char mask[SYS_MAX_CPUS / 4 + 8];
};

static struct point *points;
static int npoints;

static double tb_us[PO_MAX_SIZES], tc_us[PO_MAX_SIZES];
/* the workload alone, timed in every turn next to the points: t_c = their median */
static double *tc_samples;
static int ntc;
static uint64_t lambda_of[PO_MAX_SIZES];
static int rt_refused;
static char rt_note[160];

static void out_row(FILE *f, const struct point *p, const struct summary *to,
		    const struct summary *tov, const struct summary *post,
		    const struct summary *wt, const struct summary *share,
		    const struct summary *lat)
{
	double n = p->n;
	int thread = p->strat >= ST_POLL && p->strat <= ST_RT;
	char b[22][24];

	fmt(b[0], 24, "%.2f", tb_us[p->s]);
	fmt(b[1], 24, "%.2f", tc_us[p->s]);
	fmt(b[2], 24, "%.3f", to->med);
	fmt(b[3], 24, "%.3f", to->q1);
	fmt(b[4], 24, "%.3f", to->q3);
	fmt(b[5], 24, "%.2f", tov->med);
	fmt(b[6], 24, "%.3f", post->med);
	fmt(b[7], 24, "%.3f", wt->med);
	fmt(b[8], 24, "%.1f", 100 * share->med);
	fmt(b[9], 24, "%.0f", p->nde ? 100.0 * p->ndone / p->nde : NAN);
	fmt(b[10], 24, "%.2f", p->mv / n);
	fmt(b[11], 24, "%.2f", p->miv / n);
	fmt(b[12], 24, "%.2f", thread ? p->tv / n : NAN);
	fmt(b[13], 24, "%.2f", thread ? p->tiv / n : NAN);
	fmt(b[14], 24, "%.2f", thread ? p->tcpu / n : NAN);
	fmt(b[15], 24, "%.1f", p->strat == ST_POLL ? p->polls / n : NAN);
	fmt(b[16], 24, "%.2f", lat->med);
	fmt(b[17], 24, "%.2f", lat->p90);
	fmt(b[18], 24, "%.2f", lat->p99);
	fmt(b[19], 24, "%.2f", lat->max);
	fmt(b[20], 24, "%.2f", p->srv_cpu / n);
	fmt(b[21], 24, "%.2f", p->kw_ok ? p->kw_ns / 1e3 / n : NAN);
	fprintf(f, "  %-6s %-8s %-6s %-6s %9zu %10s %10s %10llu %5d %10s %10s %10s %10s %10s %10s %6s %6s %7s %7s %7s %7s %10s %8s %10s %10s %10s %10s %6ld %-8s %10s %10s\n",
		opt.label[0] ? opt.label : "-", strat_label(p->strat), place_label(p->place),
		p->scheme < 0 ? "-" : po_scheme_name[p->scheme], opt.sizes[p->s], b[0], b[1],
		(unsigned long long)lambda_of[p->s], p->n, b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		b[10], b[11], b[12], b[13], b[14], b[15], b[16], b[17], b[18], b[19], p->errors,
		p->mask[0] ? p->mask : "-", b[20], b[21]);
	fflush(f);
}

/* latency samples (sorted: rank k of n -> F = k/n), histogram, per-core use */
static void out_samples(const struct point *p, const double *lat, int nlat)
{
	const char *lib = opt.label[0] ? opt.label : "-";
	const char *sc = p->scheme < 0 ? "-" : po_scheme_name[p->scheme];
	const char *st = strat_label(p->strat), *pl = place_label(p->place);
	size_t size = opt.sizes[p->s];
	int hist[HIST_BINS] = { 0 };
	double n = p->n;

	if (flat) {
		for (int i = 0; i < nlat; i++)
			fprintf(flat, "%s %s %s %s %zu %d %.3f %.4f\n", lib, st, pl, sc, size, i + 1,
				lat[i], (double)(i + 1) / nlat);
		fflush(flat);
	}
	if (fhist && nlat) {
		for (int i = 0; i < nlat; i++)
			hist[hist_bin(lat[i])]++;
		for (int b = 0; b < HIST_BINS; b++)
			if (hist[b])
				fprintf(fhist, "%s %s %s %s %zu %.3f %.3f %d\n", lib, st, pl, sc, size,
					hist_lo(b), hist_hi(b), hist[b]);
		fflush(fhist);
	}
	if (fcores) {
		for (int i = 0; i < lay.ncpu; i++) {
			int c = lay.cpus[i];
			const struct core_acc *a = &p->core[c];
			char delay[24] = "-", sw[24] = "-";

			if (a->sched) {
				snprintf(delay, sizeof(delay), "%.2f", a->delay / n);
				snprintf(sw, sizeof(sw), "%.2f", a->sw / n);
			}
			fprintf(fcores, "%s %s %s %s %zu %d %s %.2f %.2f %.2f %.2f %s %s %.2f\n", lib, st, pl,
				sc, size, c, cpu_role(c), a->user / n, a->sys / n, a->irq / n, a->idle / n,
				delay, sw, p->wall_us / n);
		}
		fflush(fcores);
	}
}

/* ---- progress lines: point i/N and a time-left estimate ---- */
static int64_t t_start;
static double pred_done;	/* predicted us of the work done */
static int passes_done, passes_total;

static int npasses(void)
{
	return opt.block ? (opt.iters + opt.block - 1) / opt.block : 1;
}

static double tb_estimate(int s)
{
	int best = -1;

	if (tb_us[s] > 0)
		return tb_us[s];
	for (int i = 0; i < opt.nsizes; i++)	/* scale from the nearest calibrated size */
		if (tb_us[i] > 0 && (best < 0 ||
		    fabs(log((double)opt.sizes[i] / opt.sizes[s])) <
		    fabs(log((double)opt.sizes[best] / opt.sizes[s]))))
			best = i;
	/* bandwidth-bound guess; not from a size 16x smaller (latency-bound): unknown */
	if (best < 0 || opt.sizes[s] > 16 * opt.sizes[best])
		return NAN;
	return tb_us[best] * fmax(1.0, (double)opt.sizes[s] / opt.sizes[best]);
}

/* predicted us of one pass of @p with @m measured rounds (a round: about 2 t_b) */
static double pass_cost(const struct point *p, int m)
{
	double tb = tb_estimate(p->s);

	if (p->kind == PK_CALIB)	/* t_b rounds + the workload calibration */
		return tb * (2 * (opt.warmup + opt.tb_iters) + 25);
	return tb * 2 * (opt.warmup + m);
}

static double work_left(int s_from, int pass_from)
{
	double left = 0;

	for (int i = 0; i < npoints; i++) {
		const struct point *p = &points[i];

		if (p->skip || p->s < s_from)
			continue;
		if (p->kind == PK_CALIB) {
			if (p->s > s_from)
				left += pass_cost(p, 0);
			continue;
		}
		for (int k = p->s == s_from ? pass_from : 0; k < npasses(); k++) {
			int m = opt.block ? opt.iters - k * opt.block : opt.iters;

			left += pass_cost(p, opt.block && m > opt.block ? opt.block : m);
		}
	}
	return left;
}

static void progress_line(int s, const char *what, int pass)
{
	double el = (now_ns() - t_start) / 1e9, left = work_left(s, pass);
	char lbuf[64] = "?";

	if (opt.quiet)
		return;
	if (!isnan(left) && pred_done > 0)
		snprintf(lbuf, sizeof(lbuf), "%.0f s", eta_left(el, pred_done, left));
	fprintf(stderr, "[progress %s] pass %d/%d: size %zu B, %s | elapsed %.0f s, left ~%s\n",
		opt.label, passes_done + 1, passes_total, opt.sizes[s], what, el, lbuf);
}

/* ---- the plan: per size a calibration, then the measured points ---- */
static void add_point(int kind, int s, int strat, int place, int scheme)
{
	struct point *p = &points[npoints++];

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->s = s;
	p->strat = strat;
	p->place = place;
	p->scheme = scheme;
	p->kw_ok = 1;
}

static void build_plan(int thread_ok)
{
	int nplace_none = 0, place_none[NPLACE + 1];
	int any_none = opt.strat[ST_MANUAL] || (opt.strat[ST_KERNEL] && kactive);

	/* no-thread points: their placement only matters for kprog's kernel workers */
	if (kactive && wq_ok && opt.kworker != KW_ANY)
		for (int p = 0; p < NPLACE; p++)
			if (opt.place[p] && (p != PL_SPARE || lay.spare >= 0))
				place_none[nplace_none++] = p;
	if (!nplace_none)
		place_none[nplace_none++] = PL_ANY;

	points = calloc((size_t)opt.nsizes * (1 + NSCHEME * NSTRAT * NPLACE), sizeof(*points));
	if (!points) {
		fprintf(stderr, "progress: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int s = 0; s < opt.nsizes; s++) {
		add_point(PK_CALIB, s, ST_BLOCKING, PL_ANY, -1);
		for (int sc = 0; sc < NSCHEME; sc++) {
			if (!opt.scheme[sc])
				continue;
			if (any_none)
				for (int k = 0; k < nplace_none; k++)
					add_point(PK_MEASURE, s, ST_MANUAL, place_none[k], sc);
			for (int st = ST_POLL; st <= ST_RT; st++) {
				if (!opt.strat[st] || !thread_ok)
					continue;
				for (int p = 0; p < NPLACE; p++)
					if (opt.place[p] && (p != PL_SPARE || lay.spare >= 0))
						add_point(PK_MEASURE, s, st, p, sc);
			}
		}
	}
	passes_total = opt.nsizes * (1 + npasses());
}

/* ---- client measurements ---- */
static void send_ctl(size_t size, int rounds, int iters)
{
	struct ctl c = {
		.size = (int64_t)size, .rounds = rounds, .warmup = opt.warmup, .iters = iters,
		.point_id = point_id, .verify_all = opt.verify == VERIFY_ALL, .stop = 0,
	};

	MPI_Send(&c, sizeof(c), MPI_BYTE, 1, TAG_CTL, MPI_COMM_WORLD);
}

static struct srv_report recv_server_report(void)
{
	struct srv_report r;

	MPI_Recv(&r, sizeof(r), MPI_BYTE, 1, TAG_ERRS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return r;
}

static void set_kworkers(int place, char *mask, size_t len)
{
	int core;

	mask[0] = 0;
	if (!kactive || !wq_ok || opt.kworker == KW_ANY || place == PL_ANY)
		return;
	core = place == PL_SPARE ? lay.spare : lay.compute;
	mask_str(mask, len, core, opt.kworker == KW_FOLLOW ? lay.server : -1);
	if (wq_set(mask)) {
		fprintf(stderr, "progress: cannot set %s to %s: %s\n", WQ_MASK_PATH, mask, strerror(errno));
		snprintf(mask, len, "failed");
	}
}

static int alloc_samples(struct point *p, int n)
{
	double **a[] = { &p->to, &p->tov, &p->post, &p->wt, &p->share, &p->lat };

	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		*a[i] = calloc(n, sizeof(double));
		if (!*a[i])
			return -1;
	}
	return 0;
}

static void free_samples(struct point *p)
{
	free(p->to);
	free(p->tov);
	free(p->post);
	free(p->wt);
	free(p->share);
	free(p->lat);
}

/*
 * One pass of @p: opt.warmup unmeasured rounds, then @m measured ones,
 * appended to the point. 0, or -1 if the point cannot run (rt refused).
 */
static int run_pass(struct point *p, int m)
{
	size_t n = opt.sizes[p->s];
	int rounds = opt.warmup + m, thread = p->strat >= ST_POLL && p->strat <= ST_RT;
	int64_t kw0 = -1, kw1 = -1;
	struct prog_thread pt;
	struct srv_report srv;
	double tick_us = 1e6 / sysconf(_SC_CLK_TCK);

	set_kworkers(p->place, p->mask, sizeof(p->mask));
	point_id++;
	point_errors = 0;
	if (thread) {
		int core = p->place == PL_SPARE ? lay.spare : lay.compute;
		int rc = prog_thread_start(&pt, p->strat, core, opt.rt_prio, opt.poll_yield, rounds);

		if (rc == EPERM && p->strat == ST_RT) {
			rt_refused = 1;
			snprintf(rt_note, sizeof(rt_note),
				 "rt: SCHED_FIFO priority %d refused (%s): needs root or CAP_SYS_NICE; rt points skipped",
				 opt.rt_prio, strerror(rc));
			return -1;
		}
		if (rc) {
			fprintf(stderr, "progress: cannot start the progress thread: %s\n", strerror(rc));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	send_ctl(n, rounds, m);
	for (int i = 0; i < rounds; i++) {
		int check = is_check_round(i, opt.warmup, m, opt.verify == VERIFY_ALL);
		int k = p->n + i - opt.warmup;
		struct round r;

		if (i == opt.warmup) {
			kw0 = kworker_unbound_ns();
			cs_t0 = read_cpustat(cs0);
		}
		client_round(p->strat, thread ? &pt : NULL, p->scheme, n, tb_us[p->s], lambda_of[p->s],
			     i, check, round_seed(point_id, i), &r);
		if (i < opt.warmup)
			continue;
		p->post[k] = r.tpost;
		p->wt[k] = r.twait;
		p->tov[k] = r.tov;
		p->to[k] = p->scheme == SC_WORK ? r.tov : r.to;	/* work: - t_c at the end */
		p->share[k] = r.comp_share;
		p->mv += r.mv;
		p->miv += r.miv;
		if (r.done_end >= 0) {
			p->nde++;
			p->ndone += r.done_end;
		}
		if (!isnan(r.lat))
			p->lat[p->nlat++] = r.lat;
	}
	cs_t1 = read_cpustat(cs1);
	kw1 = kworker_unbound_ns();
	if (thread) {
		/* from the end of the warm-up (or the thread's start) to the last round */
		int ref = opt.warmup - 1, last = rounds - 1;

		p->tv += pt.vcsw[last] - (ref >= 0 ? pt.vcsw[ref] : pt.vcsw0);
		p->tiv += pt.ivcsw[last] - (ref >= 0 ? pt.ivcsw[ref] : pt.ivcsw0);
		p->tcpu += pt.cpu[last] - (ref >= 0 ? pt.cpu[ref] : pt.cpu0);
		for (int i = opt.warmup; i < rounds; i++)
			p->polls += pt.polls[i];
		prog_thread_stop(&pt);
	}
	srv = recv_server_report();
	p->errors += point_errors + srv.errors;
	total_errors += point_errors + srv.errors;
	p->srv_cpu += srv.cpu_us * m;
	if (kw0 >= 0 && kw1 >= 0)
		p->kw_ns += kw1 - kw0;
	else
		p->kw_ok = 0;
	p->wall_us += (cs_t1 - cs_t0) / 1e3;
	for (int i = 0; i < lay.ncpu; i++) {
		int c = lay.cpus[i];
		struct core_acc *a = &p->core[c];

		a->user += (cs1[c].user - cs0[c].user) * tick_us;
		a->sys += (cs1[c].sys - cs0[c].sys) * tick_us;
		a->irq += (cs1[c].irq - cs0[c].irq) * tick_us;
		a->idle += (cs1[c].idle - cs0[c].idle) * tick_us;
		a->sched = cs0[c].sched && cs1[c].sched;
		a->delay += (cs1[c].delay_ns - cs0[c].delay_ns) / 1e3;
		a->sw += cs1[c].pcount - cs0[c].pcount;
	}
	p->n += m;
	if (p->kind == PK_MEASURE)	/* calibrations: counted once t_b is known */
		pred_done += pass_cost(p, m);
	return 0;
}

/* summaries, the row on stdout and in the data files */
static void finish_point(struct point *p)
{
	struct summary to, tov, post, wt, share, lat;

	if (p->scheme == SC_WORK)
		for (int k = 0; k < p->n; k++)
			p->to[k] -= tc_us[p->s];

	summarize(p->to, p->n, &to);
	summarize(p->tov, p->n, &tov);
	summarize(p->post, p->n, &post);
	summarize(p->wt, p->n, &wt);
	summarize(p->share, p->n, &share);
	summarize(p->lat, p->nlat, &lat);	/* sorts: the samples go out as a CDF */
	out_row(stdout, p, &to, &tov, &post, &wt, &share, &lat);
	if (fdat)
		out_row(fdat, p, &to, &tov, &post, &wt, &share, &lat);
	out_samples(p, p->lat, p->nlat);
}

/*
 * Seed V-B-3: the workload lambda that takes t_b when run alone (no
 * thread, compute core), and its time t_c (median of CALIB_REPS runs;
 * with the work scheme replaced by the timings taken in turn with the points).
 */
static void calibrate_work(int s)
{
	double target = tb_us[s], t, v[CALIB_REPS];
	uint64_t lambda = 1;
	struct summary sm;

	/* grow until the run is long enough to time (a quarter of t_b) */
	while ((t = time_work_us(lambda)) < target / 4 && lambda < (1ULL << 40))
		lambda = calib_next(lambda, t, target);
	for (int step = 0; step < CALIB_STEPS; step++) {
		for (int k = 0; k < 3; k++)
			v[k] = time_work_us(lambda);
		summarize(v, 3, &sm);
		if (calib_close(sm.med, target, CALIB_TOL))
			break;
		lambda = calib_next(lambda, sm.med, target);
	}
	for (int k = 0; k < CALIB_REPS; k++)
		v[k] = time_work_us(lambda);
	summarize(v, CALIB_REPS, &sm);
	lambda_of[s] = lambda;
	tc_us[s] = sm.med;
}

static void skip_rt_points(void)
{
	for (int i = 0; i < npoints; i++)
		if (points[i].strat == ST_RT)
			points[i].skip = 1;
	printf("# %s\n", rt_note);
}

/*
 * Per size: the calibration (t_b, then lambda), then the measured points
 * in passes of --block rounds each, all points of the size one after the
 * other in every pass, so that a slow spell of a shared machine hits
 * every mechanism alike instead of one point.
 */
static void client_main(void)
{
	t_start = now_ns();
	tc_samples = calloc(opt.iters, sizeof(double));
	if (!tc_samples) {
		fprintf(stderr, "progress: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int s = 0; s < opt.nsizes; s++) {
		int first = -1, last = -1;

		for (int i = 0; i < npoints; i++)
			if (points[i].s == s) {
				if (first < 0)
					first = i;
				last = i;
			}
		for (int i = first; i <= last; i++) {
			struct point *p = &points[i];
			int total = p->kind == PK_CALIB ? opt.tb_iters : opt.iters;

			if (alloc_samples(p, total)) {
				fprintf(stderr, "progress: out of memory\n");
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
		/* the calibration point comes first */
		progress_line(s, "calibration (t_b, workload)", 0);
		run_pass(&points[first], opt.tb_iters);
		{
			struct summary sm;

			summarize(points[first].to, points[first].n, &sm);
			tb_us[s] = sm.med;
		}
		calibrate_work(s);
		finish_point(&points[first]);
		pred_done += pass_cost(&points[first], 0);
		passes_done++;
		for (int k = 0; k < npasses(); k++) {
			int m = opt.block ? opt.iters - k * opt.block : opt.iters;

			if (opt.block && m > opt.block)
				m = opt.block;
			progress_line(s, "all points of the size", k);
			if (opt.scheme[SC_WORK])	/* the reference of the work scheme, in turn too */
				for (int j = 0; j < m; j++)
					tc_samples[ntc++] = time_work_us(lambda_of[s]);
			for (int i = first + 1; i <= last; i++) {
				struct point *p = &points[i];

				if (p->skip)
					continue;
				if (run_pass(p, m))
					skip_rt_points();
			}
			passes_done++;
		}
		if (ntc) {
			struct summary sm;

			summarize(tc_samples, ntc, &sm);
			tc_us[s] = sm.med;
			ntc = 0;
		}
		for (int i = first; i <= last; i++) {
			if (i > first && !points[i].skip && points[i].n)
				finish_point(&points[i]);
			free_samples(&points[i]);
		}
	}
	{
		struct ctl stop = { .stop = 1 };

		MPI_Send(&stop, sizeof(stop), MPI_BYTE, 1, TAG_CTL, MPI_COMM_WORLD);
	}
}

static FILE *open_data(const char *suffix, const char *header)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%s", opt.data, suffix);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (header)
		fputs(header, f);
	return f;
}

static void print_header(int provided, const char *kmode, const char *wq_why, int argc, char **argv)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
	const char *spin = getenv("KPROG_SPIN_US");
	int len;

	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, "\n,")] = 0;
	MPI_Get_processor_name(host, &len);
	printf("# progress: message progression benchmarks (Hoefler & Lumsdaine, seed 001), 2 ranks on %s, run '%s'\n",
	       host, opt.label);
	printf("# library: %s; thread level provided %d (SERIALIZED=%d)\n", lib, provided,
	       MPI_THREAD_SERIALIZED);
	printf("# args:");
	for (int i = 1; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n# kprog-status-start: %s\n", kmode);
	printf("# layout: %d CPUs; server rank on CPU %d; client compute thread on CPU %d\n",
	       lay.ncpu, lay.server, lay.compute);
	if (lay.spare >= 0)
		printf("# layout: spare core = CPU %d; placement spare = progress thread on CPU %d, shared = on CPU %d (the compute core)\n",
		       lay.spare, lay.spare, lay.compute);
	else
		printf("# layout: NO SPARE CORE (%d CPUs): spare-core points skipped; run the VM with --smp 3 or more\n",
		       lay.ncpu);
	if (layout_note[0])
		printf("# layout: %s\n", layout_note);
	if (kactive) {
		printf("# mpi-wait: kprog shim: blocking waits spin KPROG_SPIN_US=%s us on the completion ring, then sleep in KPROG_IOC_WAIT until a completion (and at least every 1 ms, to let Open MPI progress its own requests): intr/rt threads are interrupt-driven\n",
		       spin ? spin : "20 (default)");
		printf("# mpi-test: kprog shim: MPI_Test* that find nothing call sched_yield(); the poll thread yields on every failed poll\n");
		if (wq_ok && opt.kworker != KW_ANY)
			printf("# kworkers: kprog's unbound kernel workers confined per point (%s) through %s: %s (restored at exit to %s)\n",
			       po_kworker_name[opt.kworker], WQ_MASK_PATH,
			       opt.kworker == KW_STRICT ? "spare -> the spare core only, shared -> the compute core only" :
			       "spare -> spare + server core, shared -> compute + server core", wq_original());
		else
			printf("# kworkers: not confined (%s): the no-thread kernel points run once, placement '-'\n",
			       opt.kworker == KW_ANY ? "--kworker-cpus any" : wq_why);
	} else {
		printf("# mpi-wait: Open MPI's MPI_Wait/MPI_Waitall BUSY-POLL (btl vader has no blocking mode): under this library the intr and rt threads poll inside MPI_Waitall; they are interrupt-driven only under kprog\n");
		printf("# kernel strategy: n/a in this run (kprog not active); the no-thread points are manual progression\n");
	}
	printf("# poll thread: MPI_Testall loop%s\n",
	       opt.poll_yield ? ", sched_yield() every --poll-yield failed polls" : ", no sched_yield of its own (--poll-yield 0)");
	printf("# rt thread: SCHED_FIFO priority %d\n", opt.rt_prio);
	printf("# t_b: median of %d blocking rounds (Irecv+Isend, Waitall at once); lambda: workload units (%d LCG steps) calibrated to take t_b alone; t_c: median time of lambda alone, timed --iters times in turn with the points (drifts with the machine as they do)\n",
	       opt.tb_iters, WORK_UNIT);
	printf("# time scheme: compute until t_b wall time has passed; t_o = post + wait. work scheme: compute lambda; t_o = t_ov - t_c\n");
	printf("# per point: %d measured rounds, in turns of %d with the other points of the size (each turn after %d warm-up rounds); to_* median/quartiles of t_o per message (one Isend + the echo's Irecv), us\n",
	       opt.iters, opt.block ? opt.block : opt.iters, opt.warmup);
	printf("# cpu%% = main thread's CPU time / wall time during the computation (median); done%% = rounds whose requests were complete when the computation ended (thread's flag; kernel: one MPI_Testall, a ring read)\n");
	printf("# m_vcsw/m_ivcsw = compute thread's voluntary/involuntary context switches from post to wait end, per message (mean); t_* = progress thread's per message over the whole round (incl. its idle wait), thr_cpu_us its CPU time per message\n");
	printf("# srv_cpu_us = server main thread CPU per message (its receive posted .. echo sent); kw_cpu_us = CPU of all unbound kernel workers per message (kprog's copies run there; /proc/PID/schedstat)\n");
	printf("# lat_* = wake-up latency, us: server's CLOCK_MONOTONIC stamp just before the echo -> the progress entity sees completion (thread: return from MPI_Testall/Waitall; manual, blocking: return from the main thread's MPI_Waitall; kernel: '-', nothing wakes)\n");
	printf("# data check: %s measured round of each point (pattern, 64 guard bytes), outside the timed region\n",
	       opt.verify == VERIFY_ALL ? "every" : "first and last");
	out_header(stdout);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char err[256], kbuf[200], wq_why[256] = "";
	int provided, nprocs, thread_ok;

	popts_defaults(&opt);
	if (popts_parse(&opt, argc, argv, err, sizeof(err))) {
		fprintf(stderr, "progress: %s (see --help)\n", err);
		return 2;
	}
	if (opt.help) {
		popts_usage(stdout);
		return 0;
	}
	if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE")) {
		fprintf(stderr, "progress: run it under mpirun with 2 ranks: mpirun -np 2 --bind-to none %s (see --help)\n",
			argv[0]);
		return 2;
	}
	MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (nprocs != 2) {
		if (rank == 0)
			fprintf(stderr, "progress: needs exactly 2 ranks (mpirun -np 2)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (make_layout())
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (pin_self(rank == 0 ? lay.compute : lay.server)) {
		fprintf(stderr, "progress: rank %d: cannot pin to CPU %d: %s\n", rank,
			rank == 0 ? lay.compute : lay.server, strerror(errno));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	thread_ok = provided >= MPI_THREAD_SERIALIZED;

	for (int i = 0; i < opt.nsizes; i++)
		if (opt.sizes[i] > maxsize)
			maxsize = opt.sizes[i];
	if (posix_memalign((void **)&sbuf, 4096, maxsize + GUARD) ||
	    posix_memalign((void **)&rbuf, 4096, maxsize + GUARD)) {
		fprintf(stderr, "progress: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(sbuf, 0x5A, maxsize + GUARD);	/* first touch outside the timing */
	memset(rbuf, FILLBYTE, maxsize + GUARD);

	kactive = kprog_mode(kbuf, sizeof(kbuf));
	if (rank == 0 && kactive && opt.kworker != KW_ANY)
		wq_ok = wq_init(wq_why, sizeof(wq_why));

	if (rank == 1) {
		server_loop();
	} else {
		if (opt.data) {
			fdat = open_data("dat", NULL);
			out_header(fdat);
			flat = open_data("lat", "# lib strategy placement scheme size rank latency_us cdf (sorted samples of a point; cdf = rank / samples)\n");
			fhist = open_data("hist", "# lib strategy placement scheme size bin_lo_us bin_hi_us count\n");
			fcores = open_data("cores", "# lib strategy placement scheme size cpu role user_us sys_us irq_us idle_us delay_us switches wall_us\n"
				      "# per message: user..idle from /proc/stat ticks; delay (tasks waiting on the run queue), switches (tasks switched in) from /proc/schedstat, '-' without it; wall = round time\n");
		}
		print_header(provided, kbuf, wq_why, argc, argv);
		if (!thread_ok)
			printf("# threads: MPI provided thread level %d < SERIALIZED: poll, intr and rt skipped\n",
			       provided);
		if (opt.strat[ST_KERNEL] && !kactive)
			printf("# kernel: n/a (kprog not active in this run)\n");
		build_plan(thread_ok);
		client_main();
		wq_restore();
	}
	kactive = kprog_mode(kbuf, sizeof(kbuf)) && kactive;
	MPI_Bcast(&total_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("# kprog-status-end: %s\n", kbuf);
		printf("# data-errors: %ld\n", total_errors);
		printf("# done in %.1f s\n", (now_ns() - t_start) / 1e9);
		if (total_errors)
			printf("!! DATA CORRUPTION: %ld bad words/bytes\n", total_errors);
		if (fdat) {
			fclose(fdat);
			fclose(flat);
			fclose(fhist);
			fclose(fcores);
		}
		if (!opt.quiet)
			fprintf(stderr, "[progress %s] done in %.0f s\n", opt.label, (now_ns() - t_start) / 1e9);
	}
	fflush(stdout);
	MPI_Finalize();
	return total_errors ? 1 : 0;
}
