// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Persistent requests: MPI_Send_init / MPI_Ssend_init / MPI_Recv_init,
 * MPI_Start / MPI_Startall over many iterations with the data changing
 * between iterations, completion by Wait, Waitall, Test loops and
 * Testall; inactive requests stay allocated, Test / Wait /
 * Request_get_status on them give flag true and an empty status; Waitall
 * over inactive requests; MPI_Request_free of inactive requests (used and
 * never started). Each rank sends to rank+1 and receives from rank-1 on a
 * ring. Run with 2-4 ranks.
 */
#include "check.h"

#define ITERS 40
#define SMALL 100
#define LARGE 300000
#define SYNC 5000
enum { R_SMALL, R_LARGE, R_SYNC, S_SMALL, S_LARGE, S_SYNC, NREQ };

static int rank, size;

static const int lens[NREQ] = { SMALL, LARGE, SYNC, SMALL, LARGE, SYNC };
static const int tags[NREQ] = { 1, 2, 3, 1, 2, 3 };

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check_inactive(MPI_Request *rq, const char *what)
{
	MPI_Status st;
	MPI_Request keep = *rq;
	int flag = 0;

	status_poison(&st);
	MPI_CHECK(MPI_Test(rq, &flag, &st));
	CHECK(flag, "%s: Test on an inactive request gave flag 0", what);
	CHECK(*rq == keep, "%s: Test changed an inactive persistent request",
	      what);
	CHECK_EMPTY_STATUS(&st);
	flag = 0;
	status_poison(&st);
	MPI_CHECK(MPI_Request_get_status(*rq, &flag, &st));
	CHECK(flag, "%s: Request_get_status on inactive gave flag 0", what);
	CHECK_EMPTY_STATUS(&st);
	status_poison(&st);
	MPI_CHECK(MPI_Wait(rq, &st));
	CHECK(*rq == keep, "%s: Wait changed an inactive persistent request",
	      what);
	CHECK_EMPTY_STATUS(&st);
}

int main(int argc, char **argv)
{
	unsigned char *buf[NREQ];
	MPI_Request rq[NREQ], unused;
	MPI_Status st[NREQ];
	int next, prev, it, k;

	test_init(&argc, &argv, "persistent", 2, &rank, &size);
	next = (rank + 1) % size;
	prev = (rank + size - 1) % size;

	for (k = 0; k < NREQ; k++)
		buf[k] = xmalloc(lens[k] + 16);
	for (k = R_SMALL; k <= R_SYNC; k++)
		MPI_CHECK(MPI_Recv_init(buf[k], lens[k] + 16, MPI_BYTE, prev,
					tags[k], MPI_COMM_WORLD, &rq[k]));
	MPI_CHECK(MPI_Send_init(buf[S_SMALL], SMALL, MPI_BYTE, next, tags[S_SMALL],
				MPI_COMM_WORLD, &rq[S_SMALL]));
	MPI_CHECK(MPI_Send_init(buf[S_LARGE], LARGE, MPI_BYTE, next, tags[S_LARGE],
				MPI_COMM_WORLD, &rq[S_LARGE]));
	MPI_CHECK(MPI_Ssend_init(buf[S_SYNC], SYNC, MPI_BYTE, next, tags[S_SYNC],
				 MPI_COMM_WORLD, &rq[S_SYNC]));

	/* Created, never started, freed. */
	MPI_CHECK(MPI_Recv_init(buf[0], 1, MPI_BYTE, prev, 99, MPI_COMM_WORLD,
				&unused));
	check_inactive(&unused, "never-started Recv_init");
	MPI_CHECK(MPI_Request_free(&unused));
	CHECK(unused == MPI_REQUEST_NULL, "Request_free left the handle");
	MPI_CHECK(MPI_Send_init(buf[3], 1, MPI_BYTE, next, 99, MPI_COMM_WORLD,
				&unused));
	MPI_CHECK(MPI_Request_free(&unused));

	for (k = 0; k < NREQ; k++)
		check_inactive(&rq[k], "before the first Start");

	for (it = 0; it < ITERS; it++) {
		int mode = it % 4;

		for (k = 0; k < NREQ; k++) {
			if (k <= R_SYNC)
				memset(buf[k], 0xEE, lens[k] + 16);
			else
				pat_fill(buf[k], lens[k],
					 pat_seed(rank, next, tags[k], it));
			status_poison(&st[k]);
		}
		if (mode == 0) {
			MPI_CHECK(MPI_Startall(NREQ, rq));
			MPI_CHECK(MPI_Waitall(NREQ, rq, st));
		} else if (mode == 1) {
			/* Sends first, one by one; Wait each in reverse. */
			for (k = NREQ - 1; k >= 0; k--)
				MPI_CHECK(MPI_Start(&rq[k]));
			for (k = NREQ - 1; k >= 0; k--)
				MPI_CHECK(MPI_Wait(&rq[k], &st[k]));
		} else if (mode == 2) {
			int flag = 0;

			MPI_CHECK(MPI_Startall(NREQ, rq));
			while (!flag)
				MPI_CHECK(MPI_Testall(NREQ, rq, &flag, st));
		} else {
			int left = NREQ, done[NREQ] = { 0 };

			MPI_CHECK(MPI_Startall(3, rq));
			MPI_CHECK(MPI_Startall(3, rq + 3));
			while (left) {
				for (k = 0; k < NREQ; k++) {
					int flag = 0;
					MPI_Status tmp;

					if (done[k])
						continue;
					MPI_CHECK(MPI_Test(&rq[k], &flag, &tmp));
					if (flag) {
						st[k] = tmp;
						done[k] = 1;
						left--;
					}
				}
			}
		}
		for (k = 0; k < NREQ; k++) {
			CHECK(rq[k] != MPI_REQUEST_NULL, "iteration %d: request "
			      "%d freed by completion (mode %d)", it, k, mode);
			if (k > R_SYNC)
				continue;
			CHECK_STATUS(&st[k], prev, tags[k], lens[k], MPI_BYTE);
			CHECK_PAT(buf[k], lens[k], pat_seed(prev, rank, tags[k],
				  it), "iteration %d receive %d (mode %d)", it, k,
				  mode);
			CHECK_FILL(buf[k] + lens[k], 16, 0xEE, "iteration %d "
				   "receive %d tail", it, k);
		}
		if (it % 8 == 0)
			for (k = 0; k < NREQ; k++)
				check_inactive(&rq[k], "after completion");
		if (it == ITERS / 2) {
			/* Waitall over only inactive requests. */
			for (k = 0; k < NREQ; k++)
				status_poison(&st[k]);
			MPI_CHECK(MPI_Waitall(NREQ, rq, st));
			for (k = 0; k < NREQ; k++)
				CHECK_EMPTY_STATUS(&st[k]);
		}
	}
	/*
	 * Ssend_init really is synchronous: rank 1 starts its receive 1 s
	 * late, so rank 0's Wait on its Ssend_init request must return after
	 * that. Times count from the end of the barrier on each rank: the
	 * ranks may be on two machines, whose monotonic clocks do not compare,
	 * and the ranks leave the barrier up to a scheduling delay apart (88
	 * ms seen across two emulated VMs on a busy host): hence 1 s, and a
	 * margin of 250 ms.
	 */
	{
		double t[2] = { 0, 0 }, t_done, tb;

		MPI_Barrier(MPI_COMM_WORLD);
		tb = mono();
		MPI_CHECK(MPI_Start(&rq[S_SYNC]));
		if (rank == 1) {
			t[0] = mono() - tb;
			sleep_ms(1000);
			t[1] = mono() - tb;
		}
		MPI_CHECK(MPI_Start(&rq[R_SYNC]));
		MPI_CHECK(MPI_Wait(&rq[S_SYNC], &st[S_SYNC]));
		t_done = mono() - tb;
		MPI_CHECK(MPI_Wait(&rq[R_SYNC], &st[R_SYNC]));
		CHECK_STATUS(&st[R_SYNC], prev, tags[R_SYNC], SYNC, MPI_BYTE);
		if (rank == 1)
			MPI_CHECK(MPI_Send(t, 2, MPI_DOUBLE, 0, 50, MPI_COMM_WORLD));
		if (rank == 0) {
			MPI_CHECK(MPI_Recv(t, 2, MPI_DOUBLE, 1, 50, MPI_COMM_WORLD,
					   MPI_STATUS_IGNORE));
			CHECK(t_done >= t[1] - 0.25 && t_done - t[0] >= 0.75,
			      "Ssend_init request completed %.1f ms after rank 1 "
			      "started its 1 s sleep, %.1f ms after it started "
			      "the receive", (t_done - t[0]) * 1e3,
			      (t_done - t[1]) * 1e3);
		}
	}
	for (k = 0; k < NREQ; k++) {
		MPI_CHECK(MPI_Request_free(&rq[k]));
		CHECK(rq[k] == MPI_REQUEST_NULL, "Request_free left request %d",
		      k);
		free(buf[k]);
	}
	return test_finish();
}
