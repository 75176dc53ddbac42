// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Wait-state profiler (seed 003): KPROG_WAITPROF=1 turns it on (off by
 * default). Through PMPI it times MPI_Recv, MPI_Wait, MPI_Waitall and
 * MPI_Ssend (Late Sender and Late Receiver from the process-local
 * minimum) and the all-to-all collectives MPI_Allreduce, MPI_Alltoall(v),
 * MPI_Allgather(v) and MPI_Barrier (Wait at NxN from the global minimum,
 * a few reductions at MPI_Finalize), and MPI_Wait / MPI_Waitall on the
 * nonblocking collectives kprog runs ("MPI_Wait(nbc)", Wait at NxN too,
 * size class by the bytes the schedule sends; those Open MPI runs are
 * plain MPI_Wait: their requests are Open MPI's), per call site (the caller's address:
 * the cheap call path) and logarithmic message-size class. Beyond the
 * seed: for receives kprog's kernel timed (KPROG_JOIN_TIMES), the exact
 * Late Sender time (send post minus receive post, when positive) is added
 * up beside the estimate, per call site and class; for fast-path messages
 * the same from the send time the sender's shim stamps into the record
 * (kprog_chan_rec.send_stamp, fast.c; KPROG_WAITPROF_STAMP=0 leaves the
 * stamps out, and with them these messages' exact times), or exactly 0
 * when the message was there before the receive.
 *
 * At MPI_Finalize: <prefix>.<rank> per process and <prefix>.all (all
 * ranks, per call path) written by world rank 0, prefix
 * KPROG_WAITPROF_OUT (default "kprog-waitprof").
 *
 * The timed calls are the shim's MPI entry points (p2p.c, wait.c,
 * coll/coll_blocking.c), which call this file's hooks (waitprof_hooks.h)
 * around their own work; this file holds the profiler's state, its table
 * and the report, and calls none of them.
 *
 * Off, every entry point costs one test of kp_wp_on before the shim's (or
 * Open MPI's) own function. libkprog-nowp.so (make -C libshim nowp) is
 * built with KP_NO_WAITPROF, where that test is constant: the A/B
 * benchmark of what the profiler costs when off (docs/benchmarks.md); never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "env.h"
#include "waitprof_stats.h"
#include "waitprof_hooks.h"

bool kp_wp_on;
bool kp_wp_stamp;
static bool stamp_env;	/* KPROG_WAITPROF_STAMP is not 0 */

/* kp_wp_stamp follows kp_wp_on: the send tests one byte, not two. */
static void wp_set(bool on)
{
	kp_wp_on = on;
	kp_wp_stamp = on && stamp_env;
}

static bool wp_started;	/* KPROG_WAITPROF: the report is written at finalize */
/*
 * The outermost profiled call in progress. Its receives' kernel times
 * add up in kp_wp_ls_n/ns: a nested profiled call (an MPI_Wait inside a
 * profiled collective's implementation) leaves them to the outer one.
 */
struct kp_wp_call *kp_wp_cur;
uint64_t kp_wp_t0, kp_wp_t1;
uint32_t kp_wp_t1_stamp;
uint64_t kp_wp_ls_n, kp_wp_ls_ns;
static struct kp_wp_table tab;

static uint64_t t_init;	/* CLOCK_MONOTONIC: the run's length in the report */
static const char *out_prefix;
/*
 * The cells of the last few (call site, bytes) per function, most used
 * first: the receives of a loop often come from two or three call sites
 * (a halo exchange; bench/latency's ping-pong, whose every 16th, timed
 * receive is another site), and a miss costs a hash lookup in the table
 * (kp_wp_record()). With one cached cell that lookup took 2 of every 16
 * profiled receives of the ping-pong, and what it cost moved with where
 * the code fell (in the VM 4 to 10% of an 8-byte call between paddings).
 */
struct kp_wp_recent kp_wp_recent[KP_WP_NFN][KP_WP_RECENT];	/* KP_WP_RECENT: waitprof_hooks.h */

/*
 * A call costs two reads of the shim's cheap clock (clock.h: the TSC
 * where the kernel keeps time with it, ~20 ns emulated against ~115 for
 * clock_gettime); durations stay in its ticks until MPI_Finalize, which
 * scales them with the clock's calibration.
 */

/*
 * @threads: MPI_THREAD_MULTIPLE. The profiler keeps one call in progress
 * and one table per process, unlocked (its wrappers run outside the
 * shim's lock, lock.c): threads calling MPI at once would mix their calls
 * and corrupt the table, so it stays off there and says so once.
 */
void kp_wp_init(bool threads)
{
	if (!kp_env_bool(KP_ENV_WAITPROF))
		return;
	if (threads) {
		if (kp.world_rank == 0)
			fprintf(stderr, "kprog: KPROG_WAITPROF: not with MPI_THREAD_MULTIPLE (one profile per process, not per thread): profiler off\n");
		return;
	}
	if (kp_wp_table_init(&tab, 4096)) {
		fprintf(stderr, "kprog: KPROG_WAITPROF: no memory, profiler off\n");
		return;
	}
	out_prefix = kp_env_str(KP_ENV_WAITPROF_OUT);
	t_init = kp_now_ns();
	/*
	 * KPROG_WAITPROF_STAMP=0: fast-path sends carry no send time, so
	 * their receives have no exact Late Sender (kernel-path messages and
	 * messages there before the receive still do); the sender's clock
	 * read was most of what the profiler cost an 8-byte trip in the
	 * test VM (docs/benchmarks.md, "What the optional features cost").
	 */
	stamp_env = kp_env_bool(KP_ENV_WAITPROF_STAMP);
	wp_set(true);
	wp_started = true;
}

/**
 * kprog_waitprof_bench_set() - pause or resume a started profiler
 * @on: 0 pauses, else resumes
 *
 * For bench/latency --waitprof-ab only, which finds it with dlsym(): it
 * measures the profiler's cost in one run, batches with it off and on in
 * turn in the same processes, since separate runs differ by more than
 * that cost. Called between MPI calls, on both ranks of a pair for the
 * same batch. Not part of the shim's interface.
 *
 * Return: 0, or -1 when KPROG_WAITPROF did not start the profiler.
 */
__attribute__((visibility("default"))) int kprog_waitprof_bench_set(int on)
{
#ifdef KP_NO_WAITPROF
	(void)on;
	return -1;
#else
	if (!wp_started || kp_wp_cur)
		return -1;
	wp_set(on != 0);
	return 0;
#endif
}

/* The rest of leave(): a (call site, size class) not among the recent cells. */
struct kp_wp_cell *kp_wp_record_new(const struct kp_wp_call *w, int fn, uint64_t bytes, uint64_t d)
{
	struct kp_wp_cell *c = kp_wp_record(&tab, fn, w->site, bytes, (double)d);
	struct kp_wp_recent *r = kp_wp_recent[fn];

	if (c) {
		memmove(&r[1], &r[0], (KP_WP_RECENT - 1) * sizeof(*r));
		r[0].cell = c;
		r[0].bytes = bytes;
	}
	return c;
}

void kp_wp_req_done(const struct kp_req *r)
{
	if (r->timed)
		kp_wp_late(r->late_ns);
}

/* ---- the report ---- */

static void to_seconds(void)
{
	double sec_per_tick = (double)kp_clk.mult / 4294967296.0 * 1e-9;	/* clock.h */
	unsigned int i;

	kp_wp_fold(&tab);
	for (i = 0; i < tab.cap; i++) {
		tab.cells[i].sum *= sec_per_tick;
		tab.cells[i].min *= sec_per_tick;
	}
}

/* One row of a rank's profile, as gathered at world rank 0. */
struct row {
	char where[112];	/* call site: symbol+offset or object+offset */
	int fn, cls;
	uint64_t n, ls_n;
	double sum, min, wait, ls_exact;
};

static void site_name(uint64_t site, char *out, size_t len)
{
	Dl_info di;
	const char *obj;

	if (!site) {
		snprintf(out, len, "(other sites)");
		return;
	}
	if (!dladdr((void *)(uintptr_t)site, &di) || !di.dli_fname) {
		snprintf(out, len, "0x%llx", (unsigned long long)site);
		return;
	}
	obj = strrchr(di.dli_fname, '/');
	obj = obj ? obj + 1 : di.dli_fname;
	/* offsets, not addresses: the same site on every rank despite ASLR */
	if (di.dli_sname)
		snprintf(out, len, "%s+0x%llx", di.dli_sname,
			 (unsigned long long)(site - (uintptr_t)di.dli_saddr));
	else
		snprintf(out, len, "%s+0x%llx", obj,
			 (unsigned long long)(site - (uintptr_t)di.dli_fbase));
}

static const char *kind_of(int fn)
{
	if (fn >= KP_WP_FIRST_NXN)
		return "wait_at_nxn";
	return fn == KP_WP_SSEND ? "late_receiver" : "late_sender";
}

static int rows_of(double gmin[KP_WP_NFN][KP_WP_NCLASS], struct row **out)
{
	double lmin[KP_WP_NFN][KP_WP_NCLASS];
	struct row *rows = calloc(tab.used ? tab.used : 1, sizeof(*rows));
	unsigned int i;
	int n = 0;

	if (!rows)
		return -1;
	kp_wp_local_min(&tab, lmin);
	for (i = 0; i < tab.cap; i++) {
		const struct kp_wp_cell *c = &tab.cells[i];
		struct row *r;

		if (!c->used || !c->n)
			continue;
		r = &rows[n++];
		site_name(c->site, r->where, sizeof(r->where));
		r->fn = c->fn;
		r->cls = c->cls;
		r->n = c->n;
		r->sum = c->sum;
		r->min = c->min;
		r->wait = kp_wp_wait(c, c->fn >= KP_WP_FIRST_NXN ? gmin[c->fn][c->cls] :
				     lmin[c->fn][c->cls]);
		r->ls_n = c->ls_n;
		r->ls_exact = c->ls_exact;
	}
	*out = rows;
	return n;
}

static void class_range(int cls, char *out, size_t len)
{
	if (!cls)
		snprintf(out, len, "0");
	else
		snprintf(out, len, "%llu-%llu", 1ull << (cls - 1), (1ull << cls) - 1);
}

static void write_rows(FILE *f, const struct row *rows, int n, double runtime)
{
	char range[48];
	int i;

	fprintf(f, "%-40s %-14s %-13s %-17s %10s %12s %12s %12s %8s %14s %10s\n", "call site",
		"function", "pattern", "bytes", "calls", "time_s", "min_s", "wait_s", "ratio",
		"kernel_ls_s", "ls_msgs");
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		class_range(r->cls, range, sizeof(range));
		fprintf(f, "%-40s %-14s %-13s %-17s %10llu %12.6f %12.9f %12.6f %7.2f%% ",
			r->where, kp_wp_fn_name(r->fn), kind_of(r->fn), range,
			(unsigned long long)r->n, r->sum, r->min, r->wait,
			runtime > 0 ? 100.0 * r->wait / runtime : 0.0);
		if (r->ls_n)
			fprintf(f, "%14.6f %10llu\n", r->ls_exact, (unsigned long long)r->ls_n);
		else
			fprintf(f, "%14s %10s\n", "-", "0");
	}
}

/* Rows of all ranks summed per (call site, function): the seed's call-path table. */
static void write_all(FILE *f, struct row *rows, int n, double runtime, int nprocs)
{
	int i, j, m = 0;

	for (i = 0; i < n; i++) {
		for (j = 0; j < m; j++)
			if (rows[j].fn == rows[i].fn && !strcmp(rows[j].where, rows[i].where))
				break;
		if (j == m) {
			rows[m] = rows[i];
			rows[m].cls = -1;
			m++;
			continue;
		}
		rows[j].n += rows[i].n;
		rows[j].sum += rows[i].sum;
		rows[j].wait += rows[i].wait;
		rows[j].ls_n += rows[i].ls_n;
		rows[j].ls_exact += rows[i].ls_exact;
		if (rows[i].min < rows[j].min)
			rows[j].min = rows[i].min;
	}
	fprintf(f, "# all %d ranks, per call path; ratio = wait / (%d x %.6f s)\n", nprocs,
		nprocs, runtime);
	fprintf(f, "%-40s %-14s %-13s %10s %12s %12s %8s %14s %10s\n", "call site", "function",
		"pattern", "calls", "time_s", "wait_s", "ratio", "kernel_ls_s", "ls_msgs");
	for (i = 0; i < m; i++) {
		const struct row *r = &rows[i];

		fprintf(f, "%-40s %-14s %-13s %10llu %12.6f %12.6f %7.2f%% ", r->where,
			kp_wp_fn_name(r->fn), kind_of(r->fn), (unsigned long long)r->n, r->sum,
			r->wait, runtime > 0 ? 100.0 * r->wait / (runtime * nprocs) : 0.0);
		if (r->ls_n)
			fprintf(f, "%14.6f %10llu\n", r->ls_exact, (unsigned long long)r->ls_n);
		else
			fprintf(f, "%14s %10s\n", "-", "0");
	}
}

void kp_wp_finalize(void)
{
	double lmin[KP_WP_NFN][KP_WP_NCLASS], gmin[KP_WP_NFN][KP_WP_NCLASS], runtime, rmax;
	struct row *rows = NULL, *all = NULL;
	int rank, size, n, i, *counts = NULL, *displs = NULL, total = 0;
	char *path = NULL;
	FILE *f;

#ifdef KP_NO_WAITPROF
	return;	/* the variant without the profiler writes no report */
#endif
	if (!wp_started)
		return;
	wp_set(false);	/* the reductions below are not profiled */
	runtime = (kp_now_ns() - t_init) * 1e-9;
	to_seconds();
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	kp_wp_local_min(&tab, lmin);
	PMPI_Allreduce(lmin, gmin, KP_WP_NFN * KP_WP_NCLASS, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
	PMPI_Allreduce(&runtime, &rmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	n = rows_of(gmin, &rows);
	if (n < 0)
		n = 0;
	if (asprintf(&path, "%s.%d", out_prefix, rank) >= 0 && (f = fopen(path, "w"))) {
		fprintf(f, "# kprog wait-state profile of rank %d, %.6f s from MPI_Init to MPI_Finalize%s\n",
			rank, runtime, tab.used * 4 >= tab.cap * 3 ? " (call sites merged: table full)" : "");
		fprintf(f, "# wait: time above the minimum of the (function, size class), local for point-to-point, global for collectives (seed 003);\n"
			   "# kernel_ls: exact Late Sender measured by kprog for the ls_msgs receives it timed (the kernel's time stamps; for fast-path messages the send time the sender stamped in the record)\n");
		write_rows(f, rows, n, runtime);
		/*
		 * On disk before the gather below: a reader on another node
		 * of a shared file system (rank 0 after MPI_Finalize) sees it.
		 */
		fflush(f);
		fsync(fileno(f));
		fclose(f);
	}
	free(path);
	path = NULL;
	/* the aggregated table at world rank 0 */
	if (rank == 0) {
		counts = calloc(size, sizeof(int));
		displs = calloc(size, sizeof(int));
	}
	i = n * (int)sizeof(struct row);
	PMPI_Gather(&i, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0 && counts && displs) {
		for (i = 0; i < size; i++) {
			displs[i] = total;
			total += counts[i];
		}
		all = malloc(total ? total : 1);
	}
	PMPI_Gatherv(rows, n * (int)sizeof(struct row), MPI_BYTE, all, counts, displs, MPI_BYTE, 0,
		     MPI_COMM_WORLD);
	if (rank == 0 && all && asprintf(&path, "%s.all", out_prefix) >= 0 &&
	    (f = fopen(path, "w"))) {
		write_all(f, all, total / (int)sizeof(struct row), rmax, size);
		fclose(f);
		fprintf(stderr, "kprog: wait-state profile in %s and %s.<rank>\n", path, out_prefix);
	}
	free(path);
	free(all);
	free(counts);
	free(displs);
	free(rows);
	kp_wp_table_free(&tab);
}
