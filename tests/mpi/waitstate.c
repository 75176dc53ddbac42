// SPDX-License-Identifier: GPL-2.0
/*
 * Wait-state profiler (KPROG_WAITPROF, seed 003) on planted wait states,
 * 2 ranks:
 *  - Late Sender: R times, rank 1 posts MPI_Recv (late_recv()) and rank 0
 *    computes T before sending 64 KiB (through the kernel, not a fast-path
 *    channel). R more receives of the same size from another call site
 *    (early_recv()) find their message already sent: they give the
 *    minimum. Under the module the exact, kernel-measured Late Sender
 *    time of late_recv() must be within 5% of T per message; the
 *    minimum-based estimate is reported beside it and must show most of
 *    R x T too.
 *  - Wait at NxN: R times, rank 1 computes T before MPI_Allreduce
 *    (late_allreduce()): rank 0's row must show about R x T of waiting.
 * The program sets KPROG_WAITPROF itself and reads its reports after
 * MPI_Finalize (WAITSTATE_DIR, default /tmp).
 */
#include <unistd.h>
#include "check.h"

#define R 8
#define BYTES (64 << 10)
static const double T = 0.05;	/* seconds */

static char buf[BYTES];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void compute(double t)
{
	double end = now() + t;

	while (now() < end)
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

__attribute__((noinline)) void late_allreduce(void)
{
	double x = 1, y;

	MPI_CHECK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
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

int main(int argc, char **argv)
{
	const char *dir = getenv("WAITSTATE_DIR");
	char prefix[256], path[300];
	int rank, size, i, kernel;
	MPI_Request req;
	struct row r;

	test_name = "waitstate";
	snprintf(prefix, sizeof(prefix), "%s/waitstate.%d", dir && *dir ? dir : "/tmp",
		 (int)getppid());
	setenv("KPROG_WAITPROF", "1", 1);
	setenv("KPROG_WAITPROF_OUT", prefix, 1);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size == 2, "needs 2 ranks");
	kernel = access("/dev/kprog", F_OK) == 0 && !getenv("KPROG_DISABLE");

	for (i = 0; i < R; i++) {
		/* early: the send is posted before the receive */
		if (rank == 0)
			MPI_CHECK(MPI_Isend(buf, BYTES, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req));
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 1) {
			compute(0.002);
			early_recv();
		} else {
			MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
		}
		/* late: the sender computes T first */
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 0) {
			compute(T);
			MPI_CHECK(MPI_Send(buf, BYTES, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
		} else {
			late_recv();
		}
		/* Wait at NxN: rank 1 arrives T late */
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 1)
			compute(T);
		late_allreduce();
	}
	MPI_Finalize();

	snprintf(path, sizeof(path), "%s.%d", prefix, rank);
	if (rank == 1) {
		r = find(path, "late_recv+", "MPI_Recv");
		CHECK(r.found, "no MPI_Recv row of late_recv in %s", path);
		CHECK(r.calls == R, "late_recv calls %llu", r.calls);
		printf("late sender: planted %.6f s per message; estimate %.6f s, kernel %.6f s "
		       "(%llu messages timed)\n", T, r.wait / R, r.kls >= 0 ? r.kls / R : -1.0, r.lsn);
		if (kernel) {
			CHECK(r.lsn == R, "kernel timed %llu of %d receives", r.lsn, R);
			CHECK(r.kls / R > 0.95 * T && r.kls / R < 1.05 * T,
			      "kernel Late Sender %.6f s per message, planted %.6f s", r.kls / R, T);
		}
		/* the estimate: at least half of what was planted */
		CHECK(r.wait > 0.5 * R * T, "estimated Late Sender %.6f s of %.6f s", r.wait, R * T);
	} else {
		r = find(path, "late_allreduce+", "MPI_Allreduce");
		CHECK(r.found, "no MPI_Allreduce row of late_allreduce in %s", path);
		printf("wait at NxN: planted %.6f s per call; estimate %.6f s\n", T, r.wait / R);
		CHECK(r.wait > 0.5 * R * T && r.wait < 2.0 * R * T,
		      "Wait at NxN %.6f s, planted %.6f s", r.wait, R * T);
	}
	unlink(path);
	if (rank == 0) {
		snprintf(path, sizeof(path), "%s.all", prefix);
		CHECK(access(path, R_OK) == 0, "aggregated report %s", path);
		unlink(path);
	}
	return 0;
}
