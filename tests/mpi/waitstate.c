// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Wait-state profiler (KPROG_WAITPROF, seed 003) on planted wait states,
 * 2 ranks:
 *  - Late Sender: R times, rank 1 posts MPI_Recv (late_recv()) at an
 *    agreed instant and rank 0 computes T from that instant before sending
 *    64 KiB (through the kernel, not a fast-path channel); the send time
 *    travels in the message, so rank 1 knows the lateness it really got
 *    (T plus how late a loaded machine woke the sender up). R more
 *    receives of the same size from another call site (early_recv())
 *    find their message already sent: they give the minimum. Under the
 *    module the exact, kernel-measured Late Sender time of late_recv()
 *    must be within 5% of that lateness; the minimum-based estimate is
 *    reported beside it and must show at least half of R x T. The same
 *    again with 64-byte messages (late_recv_small(), early_recv_small()),
 *    which take the fast-path channels: there the exact time comes from
 *    the send time the sender's shim stamps in the record.
 *  - Wait at NxN: R times, rank 1 computes T longer before MPI_Allreduce
 *    (late_allreduce()): rank 0's row must show at least half of R x T,
 *    rank 1's less than half of rank 0's.
 *  - Wait at NxN of a nonblocking collective: the same with
 *    MPI_Iallreduce of 128 KiB (the module's: tests/mpi/run sets KPROG_COLL_MIN=65536) and
 *    MPI_Wait (late_iallreduce()): under the module rank 0's row is
 *    "MPI_Wait(nbc)", with at least half of R x T, rank 1's less than half
 *    of rank 0's; without it an Open MPI request, a plain MPI_Wait row.
 * The program sets KPROG_WAITPROF itself and reads its reports after
 * MPI_Finalize; they stay in WAITSTATE_DIR (default: the current
 * directory; ./run's log directory, removed when everything passed).
 */
#include <unistd.h>
#include "check.h"

#define R 5
#define BYTES (64 << 10)
#define SMALL 64	/* below fast_limit: a channel record */
static const double T = 0.2;	/* seconds: well above a loaded machine's wake-up delays */

static char buf[BYTES];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * The planted computation: until an absolute CLOCK_MONOTONIC instant. It
 * sleeps rather than spins: on a machine with as many CPUs as ranks (the
 * test VM), a spinning rank would compete with the waiting one, and the
 * wait states would then be the scheduler's rather than the program's.
 */
static void compute_until(double t)
{
	struct timespec ts = { .tv_sec = (time_t)t, .tv_nsec = (long)((t - (time_t)t) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

/* Not static, and the program is linked with -rdynamic: the report names them. */
__attribute__((noinline)) void late_recv(void)
{
	MPI_CHECK(MPI_Recv(buf, BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

__attribute__((noinline)) void early_recv(void)
{
	MPI_CHECK(MPI_Recv(buf, BYTES, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

__attribute__((noinline)) void late_recv_small(void)
{
	MPI_CHECK(MPI_Recv(buf, SMALL, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

__attribute__((noinline)) void early_recv_small(void)
{
	MPI_CHECK(MPI_Recv(buf, SMALL, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

__attribute__((noinline)) void late_allreduce(void)
{
	double x = 1, y;

	MPI_CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
}

#define NBC_COUNT (16 << 10)	/* doubles: 128 KiB, from KPROG_COLL_MIN=65536 up (tests/mpi/run) */
static double nbc_in[NBC_COUNT], nbc_out[NBC_COUNT];

__attribute__((noinline)) void late_iallreduce(void)
{
	MPI_Request req;

	MPI_CHECK(MPI_Iallreduce(nbc_in, nbc_out, NBC_COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
				 &req));
	MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

/*
 * Rank 0's CLOCK_MONOTONIC minus rank 1's (returned on rank 1; 0 on rank
 * 0): on two nodes each clock counts from its own machine's boot.
 * Cristian's method: the shortest of 20 round trips bounds the error by
 * half of it (about a millisecond across the test VMs, of T = 200 ms).
 */
static double clock_offset(int rank)
{
	double best = 1e9, off = 0, t0, ta, tb;
	int k;

	for (k = 0; k < 20; k++) {
		if (rank == 0) {
			MPI_CHECK(MPI_Recv(&t0, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD,
					   MPI_STATUS_IGNORE));
			t0 = now();
			MPI_CHECK(MPI_Send(&t0, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD));
		} else {
			ta = now();
			MPI_CHECK(MPI_Send(&ta, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD));
			MPI_CHECK(MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD,
					   MPI_STATUS_IGNORE));
			tb = now();
			if (tb - ta < best) {
				best = tb - ta;
				off = t0 - (ta + tb) / 2;
			}
		}
	}
	return off;
}

struct row {
	double time, wait, kls;
	unsigned long long calls, lsn;
	int found;
};

/* The row of call site prefix `site` and function `fn` in a rank's report. */
static struct row find(const char *path, const char *site, const char *fn)
{
	struct row r = { 0 };
	char line[512], where[128], f[32], kls[32], lsn[32];
	FILE *fp = fopen(path, "r");

	CHECK(fp, "open %s", path);
	while (fgets(line, sizeof(line), fp)) {
		double min, ratio;

		if (line[0] == '#' || !strncmp(line, "call site", 9))
			continue;
		/* where fn pattern bytes calls time min wait ratio% kernel_ls ls_msgs */
		if (sscanf(line, "%127s %31s %*s %*s %llu %lf %lf %lf %lf%% %31s %31s", where, f,
			   &r.calls, &r.time, &min, &r.wait, &ratio, kls, lsn) != 9)
			continue;
		if (strncmp(where, site, strlen(site)) || strcmp(f, fn))
			continue;
		r.kls = strcmp(kls, "-") ? atof(kls) : -1;
		r.lsn = strtoull(lsn, NULL, 10);
		r.found = 1;
		break;
	}
	fclose(fp);
	return r;
}

/*
 * One early and one late receive of @bytes (tags @tl, @te); on rank 1
 * returns the lateness the program really produced (see the top).
 */
static double late_sender(int rank, double off, int bytes, int tl, int te, void (*late)(void),
			  void (*early)(void))
{
	double start, ts, tr;
	MPI_Request req;

	/* early: the send is posted before the receive */
	if (rank == 0)
		MPI_CHECK(MPI_Isend(buf, bytes, MPI_BYTE, 1, te, MPI_COMM_WORLD, &req));
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 1) {
		compute_until(now() + 0.002);
		early();
	} else {
		MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	}
	/*
	 * late: the sender computes T longer than the receiver. They
	 * start at an agreed instant S of rank 0's clock (rank 1
	 * converts it, and the time in the message, with the clock
	 * offset), so that how late each leaves the broadcast does
	 * not count.
	 */
	start = now() + 0.02;
	MPI_CHECK(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
	start -= off;
	if (rank == 0) {
		compute_until(start + T);
		ts = now();	/* travels in the message */
		memcpy(buf, &ts, sizeof(ts));
		MPI_CHECK(MPI_Send(buf, bytes, MPI_BYTE, 1, tl, MPI_COMM_WORLD));
		return 0;
	}
	compute_until(start);
	tr = now();
	late();
	memcpy(&ts, buf, sizeof(ts));
	return ts - off - tr;
}

/*
 * Rank 1: the rows of one late/early pair of call sites; the exact time
 * within 5% of the lateness produced (under the module), the estimate at
 * least half of what was planted.
 */
static void check_late(const char *path, const char *site, const char *what, double actual,
		       int kernel)
{
	struct row r = find(path, site, "MPI_Recv");

	CHECK(r.found, "no MPI_Recv row of %s in %s", site, path);
	CHECK(r.calls == R, "%s calls %llu", site, r.calls);
	printf("late sender per message (%s): planted %.6f s, as the program saw it %.6f s; "
	       "exact %.6f s (%llu messages timed), estimate %.6f s\n", what, T, actual / R,
	       r.kls >= 0 ? r.kls / R : -1.0, r.lsn, r.wait / R);
	/*
	 * The reference is the lateness the program produced, each side
	 * reading CLOCK_MONOTONIC just before its call: a loaded machine
	 * wakes the sender up later than asked, and kprog must see exactly
	 * that.
	 */
	if (kernel) {
		CHECK(r.lsn == R, "%s: kprog timed %llu of %d receives", what, r.lsn, R);
		CHECK(r.kls > 0.95 * actual && r.kls < 1.05 * actual,
		      "%s: exact Late Sender %.6f s per message, the program's %.6f s", what,
		      r.kls / R, actual / R);
	}
	/* the estimate: at least half of what was planted */
	CHECK(r.wait > 0.5 * R * T, "%s: estimated Late Sender %.6f s of %.6f s", what, r.wait,
	      R * T);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("WAITSTATE_DIR");
	char prefix[256], path[300];
	int rank, size, i, kernel;
	double start, actual = 0, actual_small = 0, off;
	struct row r;

	test_name = "waitstate";
	/*
	 * One name for the job on every node (rank 0 reads rank 1's report):
	 * PMIx's namespace; the launcher's pid only where there is none.
	 */
	if (getenv("PMIX_NAMESPACE"))
		snprintf(prefix, sizeof(prefix), "%s/waitstate.%s", dir && *dir ? dir : ".",
			 getenv("PMIX_NAMESPACE"));
	else
		snprintf(prefix, sizeof(prefix), "%s/waitstate.%d", dir && *dir ? dir : ".",
			 (int)getppid());
	setenv("KPROG_WAITPROF", "1", 1);
	setenv("KPROG_WAITPROF_OUT", prefix, 1);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size == 2, "needs 2 ranks");
	kernel = access("/dev/kprog", F_OK) == 0 && !getenv("KPROG_DISABLE");
	off = clock_offset(rank);

	for (i = 0; i < R; i++) {
		actual += late_sender(rank, off, BYTES, 1, 2, late_recv, early_recv);
		actual_small += late_sender(rank, off, SMALL, 3, 4, late_recv_small,
					    early_recv_small);
		/* Wait at NxN: rank 1 arrives T late, from an agreed instant */
		start = now() + 0.02;
		MPI_CHECK(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
		start -= off;
		compute_until(start + (rank == 1 ? T : 0));
		late_allreduce();
		/* the same for a nonblocking collective's wait */
		start = now() + 0.02;
		MPI_CHECK(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
		start -= off;
		compute_until(start + (rank == 1 ? T : 0));
		late_iallreduce();
	}
	MPI_Finalize();

	snprintf(path, sizeof(path), "%s.%d", prefix, rank);
	if (rank == 1) {
		check_late(path, "late_recv+", "64 KiB, kernel path", actual, kernel);
		check_late(path, "late_recv_small+", "64 B, fast path", actual_small, kernel);
	}
	/*
	 * Wait at NxN shows on rank 0, the early one, and much less on the
	 * late rank 1 (its calls give the global minimum). No upper bound:
	 * on a loaded machine a descheduled rank only adds waiting.
	 */
	r = find(path, "late_allreduce+", "MPI_Allreduce");
	CHECK(r.found, "no MPI_Allreduce row of late_allreduce in %s", path);
	printf("wait at NxN, rank %d: planted %.6f s per call on rank 0; estimate %.6f s\n", rank, T,
	       r.wait / R);
	if (rank == 0) {
		/* rank 1 wrote its report before the gather rank 0 finished in */
		struct row late;

		snprintf(path, sizeof(path), "%s.1", prefix);
		late = find(path, "late_allreduce+", "MPI_Allreduce");
		CHECK(late.found, "no MPI_Allreduce row of late_allreduce in %s", path);
		CHECK(r.wait > 0.5 * R * T, "Wait at NxN %.6f s, planted %.6f s", r.wait, R * T);
		CHECK(late.wait < 0.5 * r.wait, "the late rank waits %.6f s of the early's %.6f s",
		      late.wait, r.wait);
		snprintf(path, sizeof(path), "%s.all", prefix);
		CHECK(access(path, R_OK) == 0, "aggregated report %s", path);
	}
	/* the nonblocking collective: its wait, as Wait at NxN under the module */
	snprintf(path, sizeof(path), "%s.%d", prefix, rank);
	r = find(path, "late_iallreduce+", kernel ? "MPI_Wait(nbc)" : "MPI_Wait");
	CHECK(r.found, "no %s row of late_iallreduce in %s", kernel ? "MPI_Wait(nbc)" : "MPI_Wait",
	      path);
	CHECK(r.calls == R, "late_iallreduce: %llu waits", r.calls);
	printf("wait at NxN of MPI_Iallreduce, rank %d: planted %.6f s per call on rank 0; estimate %.6f s\n",
	       rank, T, r.wait / R);
	if (rank == 0 && kernel) {
		struct row late;

		snprintf(path, sizeof(path), "%s.1", prefix);
		late = find(path, "late_iallreduce+", "MPI_Wait(nbc)");
		CHECK(late.found, "no MPI_Wait(nbc) row of late_iallreduce in %s", path);
		CHECK(r.wait > 0.5 * R * T, "Wait at NxN (nbc) %.6f s, planted %.6f s", r.wait,
		      R * T);
		CHECK(late.wait < 0.5 * r.wait, "nbc: the late rank waits %.6f s of the early's %.6f s",
		      late.wait, r.wait);
	}
	return 0;
}
