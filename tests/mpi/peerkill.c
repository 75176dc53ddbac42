// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * peerkill: the peer of a large transfer dies in the middle of it; the
 * surviving rank must get an error through its communicator's error
 * handler instead of hanging. Run by tests/mpi/run-kill (mpirun
 * --enable-recovery, so that Open MPI's runtime lets the survivor go on).
 *
 *   mpirun --enable-recovery -np 2 peerkill [-m recv|send|unposted] [-b BYTES] [-d MS] [-k kill|vm]
 *     -m recv  the survivor (rank 0) receives, the victim (rank 1) sends (default)
 *     -m send  the survivor sends, the victim receives
 *     -m unposted  the survivor sends, the victim dies without posting the
 *              receive: under kprog a rendezvous send that waits in the
 *              channel (libshim/core/rts.c), not in the kernel
 *     -m coll  both start MPI_Iallreduce (sum of doubles) of -b bytes, a
 *              schedule the module runs (libshim/coll/coll.c); the victim dies
 *              in the middle of it
 *     -b       message size (default 256 MiB: the transfer must outlast -d)
 *     -d       the victim dies this long after both have posted (default 200 ms)
 *     -k kill  the victim raises SIGKILL (default); vm: it resets its whole
 *              machine (sysrq 'b', root only: a VM of scripts/vm-run --nodes 2)
 *
 * Rank 0 prints one line and exits 0 only if MPI_Wait returned an error,
 * the error handler of MPI_COMM_WORLD saw the same error, and a receive
 * naming the dead rank afterwards fails too (or is still pending after
 * 10 s: Open MPI's own p2p does not notice dead peers without ULFM):
 *   peerkill: survivor rank 0 (HOST): MPI_Wait -> MPI_ERR_OTHER ... through the error handler after 0.8 s
 * It exits with _exit(): MPI_Finalize would wait for the dead rank.
 * Exit 1: the transfer completed before the victim died (inconclusive:
 * use a larger -b) or no error came within 300 s.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int handler_calls, handler_code;

static void on_error(MPI_Comm *comm, int *code, ...)
{
	(void)comm;
	handler_calls++;
	handler_code = *code;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *errstr(int code)
{
	static char s[MPI_MAX_ERROR_STRING + 32];
	int cls = 0, len = 0;
	char txt[MPI_MAX_ERROR_STRING];

	MPI_Error_class(code, &cls);
	MPI_Error_string(code, txt, &len);
	snprintf(s, sizeof(s), "class %d (%s)", cls, txt);
	return s;
}

static void die(const char *how)
{
	if (!strcmp(how, "vm")) {
		int fd = open("/proc/sysrq-trigger", O_WRONLY);

		/* reset at once: no orderly shutdown, nothing said to the peer */
		if (fd >= 0 && write(fd, "b", 1) == 1)
			pause();
		perror("peerkill: /proc/sysrq-trigger");
	}
	raise(SIGKILL);
	_exit(9);
}

int main(int argc, char **argv)
{
	const char *mode = "recv", *how = "kill";
	size_t bytes = 256u << 20;
	int rank, size, opt, rc, rc2, delay_ms = 200, flag = 0;
	char host[MPI_MAX_PROCESSOR_NAME];
	MPI_Errhandler eh;
	MPI_Datatype kib;
	MPI_Request req = MPI_REQUEST_NULL, req2;
	MPI_Status st;
	double t0, t;
	char *buf, *out = NULL, probe;
	bool coll;

	while ((opt = getopt(argc, argv, "m:b:d:k:")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'b': bytes = strtoull(optarg, NULL, 0); break;
		case 'd': delay_ms = atoi(optarg); break;
		case 'k': how = optarg; break;
		default:
			fprintf(stderr, "usage: peerkill [-m recv|send|unposted|coll] [-b BYTES] [-d MS] [-k kill|vm]\n");
			return 2;
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	rc = 0;
	MPI_Get_processor_name(host, &rc);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "peerkill: run with 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_create_errhandler(on_error, &eh);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
	buf = malloc(bytes);
	if (!buf) {
		perror("peerkill: malloc");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(buf, rank + 1, bytes);	/* every page mapped: no faults mid-transfer */
	/* 1 KiB elements: counts stay in an int up to 2 TiB */
	bytes &= ~(size_t)1023;
	MPI_Type_contiguous(1024, MPI_BYTE, &kib);
	MPI_Type_commit(&kib);
	coll = !strcmp(mode, "coll");
	if (coll) {
		/* the reduction's output: its own buffer, every page mapped too */
		out = malloc(bytes);
		if (!out) {
			perror("peerkill: malloc");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		memset(out, 0, bytes);
		bytes &= ~(size_t)7;
		MPI_Barrier(MPI_COMM_WORLD);
		rc = MPI_Iallreduce(buf, out, (int)(bytes >> 3), MPI_DOUBLE, MPI_SUM,
				    MPI_COMM_WORLD, &req);
		if (rank == 1) {
			usleep(delay_ms * 1000);
			fprintf(stderr, "peerkill: victim rank 1 (%s) dies now (%s), in MPI_Iallreduce\n",
				host, how);
			fflush(stderr);
			die(how);
		}
		mode = "MPI_Iallreduce";
	} else if (rank == 1) {
		if (!strcmp(mode, "recv"))
			MPI_Isend(buf, (int)(bytes >> 10), kib, 0, 1, MPI_COMM_WORLD, &req);
		else if (!strcmp(mode, "send"))
			MPI_Irecv(buf, (int)(bytes >> 10), kib, 0, 1, MPI_COMM_WORLD, &req);
		MPI_Barrier(MPI_COMM_WORLD);
		usleep(delay_ms * 1000);
		fprintf(stderr, "peerkill: victim rank 1 (%s) dies now (%s)\n", host, how);
		fflush(stderr);
		die(how);
	}
	if (!coll && !strcmp(mode, "recv"))
		rc = MPI_Irecv(buf, (int)(bytes >> 10), kib, 1, 1, MPI_COMM_WORLD, &req);
	if (!coll)
		MPI_Barrier(MPI_COMM_WORLD);
	if (!coll && strcmp(mode, "recv"))
		rc = MPI_Isend(buf, (int)(bytes >> 10), kib, 1, 1, MPI_COMM_WORLD, &req);
	t0 = now();
	/*
	 * A loaded host may run the survivor's post after the victim died
	 * (it sleeps only -d ms after the barrier): then the post itself
	 * fails through the handler, and there is no request to wait for.
	 */
	if (rc == MPI_SUCCESS)
		rc = MPI_Wait(&req, &st);
	else
		mode = "the post itself";
	t = now() - t0;
	if (rc == MPI_SUCCESS) {
		printf("peerkill: survivor rank 0 (%s): MPI_Wait succeeded after %.2f s: the transfer of %zu bytes ended before the victim died (inconclusive: larger -b)\n",
		       host, t, bytes);
		fflush(stdout);
		_exit(1);
	}
	if (handler_calls != 1 || handler_code != rc) {
		printf("peerkill: survivor rank 0 (%s): MPI_Wait -> %s after %.2f s, but the error handler ran %d times (code %d)\n",
		       host, errstr(rc), t, handler_calls, handler_code);
		fflush(stdout);
		_exit(1);
	}
	printf("peerkill: survivor rank 0 (%s): MPI_Wait (%s of %zu bytes) -> %s through the error handler after %.2f s\n",
	       host, mode, bytes, errstr(rc), t);
	/* a new receive naming the dead rank must not wait for it forever */
	handler_calls = 0;
	rc2 = MPI_Irecv(&probe, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req2);
	t0 = now();
	while (rc2 == MPI_SUCCESS && !flag && now() - t0 < 10)
		rc2 = MPI_Test(&req2, &flag, &st);
	if (rc2 != MPI_SUCCESS)
		printf("peerkill: a receive from the dead rank afterwards -> %s (error handler %s)\n",
		       errstr(rc2), handler_calls ? "ran" : "DID NOT run");
	else
		printf("peerkill: a receive from the dead rank afterwards: %s after 10 s\n",
		       flag ? "COMPLETED (wrong)" : "still pending");
	fflush(stdout);
	_exit(rc2 != MPI_SUCCESS && handler_calls != 1 ? 1 : flag ? 1 : 0);
}
