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
 * Off, every wrapper costs one test of kp_wp_on before the shim's (or
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
#include "hot.h"
#include "shim.h"
#include "env.h"
#include "waitprof_stats.h"

struct kp_wp_call {
	uint64_t site;
	uint64_t t0;		/* ticks */
	/*
	 * The site's most recent cell and the bytes it was last used for,
	 * looked up by enter(), so that the call's end, between the message's
	 * arrival and the caller's next send, has one compare left to make.
	 * NULL: none cached.
	 */
	struct kp_wp_cell *cell;
	uint64_t bytes;
};

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

static inline bool wp_on(void)
{
#ifdef KP_NO_WAITPROF
	return false;
#else
	return kp_wp_on;
#endif
}
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
#define KP_WP_RECENT 4
struct recent {
	struct kp_wp_cell *cell;
	uint64_t bytes;
};
static struct recent recent[KP_WP_NFN][KP_WP_RECENT];

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

/*
 * enter() and leave() are forced inline: a profiled 8-byte MPI_Recv
 * costs about a microsecond in the test VM, and a call and return
 * there are two translation-block lookups of the emulator.
 */
static inline __attribute__((always_inline)) void enter(struct kp_wp_call *w, void *site, int fn)
{
	const struct recent *r = recent[fn];
	int i;

	w->site = (uintptr_t)site;
	w->cell = NULL;
	for (i = 0; i < KP_WP_RECENT && r[i].cell; i++)
		if (r[i].cell->site == w->site) {
			w->cell = r[i].cell;
			w->bytes = r[i].bytes;
			break;
		}
	w->t0 = kp_ticks();
	/* An outer profiled call keeps the kernel's times of nested ones. */
	if (!kp_wp_cur) {
		kp_wp_cur = w;
		kp_wp_t0 = w->t0;
		kp_wp_t1 = 0;	/* kp_wp_t1_stamp is read only with it */
		kp_wp_ls_n = 0;
		kp_wp_ls_ns = 0;
	}
}

/* The rest of leave(): a (call site, size class) not among the recent cells. */
static struct kp_wp_cell *record(const struct kp_wp_call *w, int fn, uint64_t bytes, uint64_t d)
{
	struct kp_wp_cell *c = kp_wp_record(&tab, fn, w->site, bytes, (double)d);
	struct recent *r = recent[fn];

	if (c) {
		memmove(&r[1], &r[0], (KP_WP_RECENT - 1) * sizeof(*r));
		r[0].cell = c;
		r[0].bytes = bytes;
	}
	return c;
}

/* The cached cell of (site, bytes) or of bytes' class at site, or NULL. */
static inline __attribute__((always_inline)) struct kp_wp_cell *recent_find(int fn, uint64_t site,
									     uint64_t bytes)
{
	struct recent *r = recent[fn];
	int i;

	for (i = 0; i < KP_WP_RECENT && r[i].cell; i++) {
		struct kp_wp_cell *c = r[i].cell;

		if (c->site == site && (r[i].bytes == bytes || c->cls == kp_wp_class(bytes))) {
			if (i) {	/* one step to the front */
				struct recent t = r[i - 1];

				r[i - 1] = r[i];
				r[i] = t;
			}
			return c;
		}
	}
	return NULL;
}

static inline __attribute__((always_inline)) void leave(struct kp_wp_call *w, int fn, uint64_t bytes)
{
	bool outer = kp_wp_cur == w;
	/* a receive the channel spin completed: its clock read is the end */
	uint64_t end = outer && fn == KP_WP_RECV && kp_wp_t1 ? kp_wp_t1 : kp_ticks();
	uint64_t d = end - w->t0;	/* in ticks until the report */
	struct kp_wp_cell *c = w->cell;

	/* as enter() guessed (the same bytes as last time), else look again */
	if (__builtin_expect(!c || w->bytes != bytes, 0))
		c = recent_find(fn, w->site, bytes);
	if (__builtin_expect(c != NULL, 1))
		kp_wp_add(c, d);
	else
		c = record(w, fn, bytes, d);
	if (!outer)
		return;
	kp_wp_cur = NULL;
	if (c && kp_wp_ls_n) {
		c->ls_n += kp_wp_ls_n;
		c->ls_ns += kp_wp_ls_ns;	/* seconds at kp_wp_fold() */
	}
}

/*
 * MPI_Recv's leave(). The common case, an outer call a channel spin
 * completed with the message of the cell enter() guessed, takes no branch
 * but one: in the VM every conditional jump ends a translated block, and
 * an 8-byte MPI_Recv cost 99 ns more profiled with the Late Sender and
 * the cell update done by branching code, 25 ns without either
 * (bench/run-waitprof --shims, 2026-11-24). Its exact Late Sender comes
 * from the send stamp the spin left in kp_wp_t1_stamp (0: none).
 */
static inline __attribute__((always_inline)) void leave_recv(struct kp_wp_call *w, uint64_t bytes)
{
	struct kp_wp_cell *c = w->cell;
	uint32_t stamp = kp_wp_t1_stamp;
	uint64_t d, send, late, has;

	if (__builtin_expect(kp_wp_cur != w || !kp_wp_t1 || !c || w->bytes != bytes, 0)) {
		if (kp_wp_t1) {	/* charged to the call in progress, outer or not */
			int64_t ls = kp_stamp_late_ns(stamp, kp_wp_t0, kp_wp_t1);

			if (ls >= 0)
				kp_wp_late((uint64_t)ls);
		}
		leave(w, KP_WP_RECV, bytes);
		return;
	}
	d = kp_wp_t1 - w->t0;
	c->n++;
	c->tsum += d;
	c->tmin = d < c->tmin ? d : c->tmin;
	send = kp_stamp_tick(stamp, kp_wp_t1);
	late = send > w->t0 ? send - w->t0 : 0;
	has = stamp != 0;
	c->ls_n += kp_wp_ls_n + has;
	c->ls_ns += kp_wp_ls_ns + (kp_ticks_ns(late) & -has);	/* seconds at kp_wp_fold() */
	kp_wp_cur = NULL;
}

void kp_wp_req_done(const struct kp_req *r)
{
	if (r->timed)
		kp_wp_late(r->late_ns);
}

/* Bytes received: Open MPI's status keeps them (the shim fills it too). */
static inline uint64_t status_bytes(const MPI_Status *st)
{
	return st->_ucount;
}

static uint64_t type_bytes(int count, MPI_Datatype type)
{
	int size = 0;

	if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS)
		return 0;
	return (uint64_t)count * (uint64_t)size;
}

/* ---- point-to-point: local minimum ---- */

/*
 * One call of kp_mpi_recv(), which LTO then inlines: the blocking receive
 * runs in this one function and page (hot.h), profiled or not. A profiled
 * call used to call it and return through here, the off path jumped to
 * it, so the profiler also cost a call and a return between two pages: in
 * the VM 110 ns per 8-byte call against 30 now (no send stamps). The
 * received bytes come back from kp_mpi_recv() itself: with a status of
 * the profiler's own in place of MPI_STATUS_IGNORE, the receive copied
 * it between the message's arrival and the return, on the critical path.
 */
KP_HOT_PAGE int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
			 MPI_Comm comm, MPI_Status *status)
{
	struct kp_wp_call w;
	bool prof = wp_on();
	uint64_t bytes = 0;
	int rc;

	if (prof)
		enter(&w, __builtin_return_address(0), KP_WP_RECV);
	rc = kp_mpi_recv(buf, count, type, source, tag, comm, status, prof ? &bytes : NULL);
	if (prof)
		leave_recv(&w, bytes);
	return rc;
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	struct kp_wp_call w;
	int rc;

	if (!wp_on())
		return kp_mpi_ssend(buf, count, type, dest, tag, comm);
	enter(&w, __builtin_return_address(0), KP_WP_SSEND);
	rc = kp_mpi_ssend(buf, count, type, dest, tag, comm);
	leave(&w, KP_WP_SSEND, type_bytes(count, type));
	return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	struct kp_wp_call w;
	MPI_Status st;
	uint64_t cbytes;
	int rc;

	if (!wp_on())
		return kp_mpi_wait(req, status);
	if (status == MPI_STATUS_IGNORE) {
		memset(&st, 0, sizeof(st));	/* a send leaves it as it is */
		status = &st;
	}
	if (req && kp_coll_req(*req, &cbytes)) {
		/* a collective kprog runs: Wait at NxN, by the bytes it sends */
		enter(&w, __builtin_return_address(0), KP_WP_WAIT_NBC);
		rc = kp_mpi_wait(req, status);
		leave(&w, KP_WP_WAIT_NBC, cbytes);
		return rc;
	}
	enter(&w, __builtin_return_address(0), KP_WP_WAIT);
	rc = kp_mpi_wait(req, status);
	leave(&w, KP_WP_WAIT, status_bytes(status));
	return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
	struct kp_wp_call w;
	MPI_Status local[32], *st = statuses;
	uint64_t bytes = 0, nbc_bytes = 0, cbytes;
	int rc, i, fn;

	if (!wp_on())
		return kp_mpi_waitall(n, reqs, statuses);
	if (statuses == MPI_STATUSES_IGNORE && n > 0)
		st = n <= 32 ? local : calloc((size_t)n, sizeof(*st));
	if (!st)	/* no memory for statuses: profile without sizes */
		st = MPI_STATUSES_IGNORE;
	else if (st != statuses)
		memset(st, 0, sizeof(*st) * (size_t)n);
	/* only kprog's collectives in the array: Wait at NxN, as MPI_Wait */
	for (i = 0; i < n && kp_coll_req(reqs[i], &cbytes); i++)
		nbc_bytes += cbytes;
	fn = n > 0 && i == n ? KP_WP_WAITALL_NBC : KP_WP_WAITALL;
	enter(&w, __builtin_return_address(0), fn);
	rc = kp_mpi_waitall(n, reqs, st);
	for (i = 0; st != MPI_STATUSES_IGNORE && i < n; i++)
		bytes += status_bytes(&st[i]);
	leave(&w, fn, fn == KP_WP_WAITALL_NBC ? nbc_bytes : bytes);
	if (st != statuses && st != local && st != MPI_STATUSES_IGNORE)
		free(st);
	return rc;
}

/* ---- all-to-all collectives: global minimum ---- */

#define COLL(fn, bytes, call) do {					\
	struct kp_wp_call w;						\
	int rc;								\
									\
	if (!wp_on())							\
		return call;						\
	enter(&w, __builtin_return_address(0), fn);			\
	rc = call;							\
	leave(&w, fn, bytes);						\
	return rc;							\
} while (0)

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
		  MPI_Comm comm)
{
	COLL(KP_WP_ALLREDUCE, type_bytes(count, type),
	     PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, MPI_Comm comm)
{
	COLL(KP_WP_ALLTOALL, type_bytes(scount, stype),
	     PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
		  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
		  MPI_Comm comm)
{
	/* size class of the first block: the sizes of a v-collective vary */
	COLL(KP_WP_ALLTOALLV, scounts && sbuf != MPI_IN_PLACE ? type_bytes(scounts[0], stype) : 0,
	     PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		  MPI_Datatype rtype, MPI_Comm comm)
{
	COLL(KP_WP_ALLGATHER, type_bytes(sbuf == MPI_IN_PLACE ? rcount : scount,
					 sbuf == MPI_IN_PLACE ? rtype : stype),
	     PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
	COLL(KP_WP_ALLGATHERV, sbuf == MPI_IN_PLACE ? 0 : type_bytes(scount, stype),
	     PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Barrier(MPI_Comm comm)
{
	COLL(KP_WP_BARRIER, 0, PMPI_Barrier(comm));
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
