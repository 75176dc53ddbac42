// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_THREAD_MULTIPLE: THREADS threads per rank call MPI at once, for
 * ROUNDS rounds, each round:
 *  1. per thread, on its own duplicate of MPI_COMM_WORLD (made by the
 *     threads concurrently with MPI_Comm_dup): a ring Irecv/Isend +
 *     Waitall, blocking Send/Recv pairs, Probe + Recv, Waitany over
 *     several receives, Testsome polling, Issend + Test polling;
 *  2. on one shared communicator: every thread of every rank sends
 *     MSGS messages to every other rank, and all threads of a rank take
 *     them with MPI_Mprobe(ANY_SOURCE, ANY_TAG) + MPI_Mrecv (or Improbe
 *     + Imrecv); each message must arrive exactly once and intact.
 * Checks data, statuses and that no message is lost or duplicated. Any
 * number of ranks >= 2. Under the shim ./run also checks that the ranks
 * joined kprog with threads (no pass-through) and moved messages.
 */
#include <pthread.h>
#include "check.h"

#define THREADS 4
#define ROUNDS 4
#define MSGS 16
#define NRECV 4

static int rank, size;
static MPI_Comm tcomm[THREADS];
static MPI_Comm shared;
static pthread_barrier_t bar;
static unsigned char *seen;	/* [src][thread][msg], shared receive bitmap */
static int taken;		/* messages of the shared phase claimed here */

static int val(int src, int t, int round, int i)
{
	return ((src * THREADS + t) * ROUNDS + round) * 1000 + i;
}

static void own_comm(int t, int round, MPI_Comm comm)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int out[8], in[8], i, k, idx, got[NRECV], rin[NRECV], flag, done;
	MPI_Request r[NRECV + 1];
	MPI_Status st, sts[NRECV];

	/* ring */
	for (i = 0; i < 8; i++)
		out[i] = val(rank, t, round, i);
	MPI_CHECK(MPI_Irecv(in, 8, MPI_INT, left, 1, comm, &r[0]));
	MPI_CHECK(MPI_Isend(out, 8, MPI_INT, right, 1, comm, &r[1]));
	MPI_CHECK(MPI_Waitall(2, r, sts));
	CHECK_STATUS(&sts[0], left, 1, 8, MPI_INT);
	for (i = 0; i < 8; i++)
		CHECK(in[i] == val(left, t, round, i), "ring t%d: %d", t, in[i]);

	/* blocking pairs: even ranks send first */
	if (rank % 2 == 0) {
		MPI_CHECK(MPI_Send(out, 3, MPI_INT, right, 2, comm));
		MPI_CHECK(MPI_Recv(in, 8, MPI_INT, left, 2, comm, &st));
	} else {
		MPI_CHECK(MPI_Recv(in, 8, MPI_INT, left, 2, comm, &st));
		MPI_CHECK(MPI_Send(out, 3, MPI_INT, right, 2, comm));
	}
	CHECK_STATUS(&st, left, 2, 3, MPI_INT);
	CHECK(in[2] == val(left, t, round, 2), "pair t%d", t);

	/* probe, then receive what it saw */
	MPI_CHECK(MPI_Isend(out, 5, MPI_INT, right, 3, comm, &r[0]));
	MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 3, comm, &st));
	CHECK_STATUS(&st, left, 3, 5, MPI_INT);
	MPI_CHECK(MPI_Recv(in, 5, MPI_INT, st.MPI_SOURCE, 3, comm, MPI_STATUS_IGNORE));
	CHECK(in[4] == val(left, t, round, 4), "probe t%d", t);
	MPI_CHECK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));

	/* Waitany over NRECV receives with different tags */
	for (k = 0; k < NRECV; k++)
		MPI_CHECK(MPI_Irecv(&rin[k], 1, MPI_INT, left, 10 + k, comm, &r[k]));
	for (k = NRECV - 1; k >= 0; k--) {
		int v = val(rank, t, round, k);

		MPI_CHECK(MPI_Send(&v, 1, MPI_INT, right, 10 + k, comm));
	}
	memset(got, 0, sizeof(got));
	for (k = 0; k < NRECV; k++) {
		MPI_CHECK(MPI_Waitany(NRECV, r, &idx, &st));
		CHECK(idx >= 0 && idx < NRECV && !got[idx], "waitany index %d", idx);
		got[idx] = 1;
		CHECK(st.MPI_TAG == 10 + idx && rin[idx] == val(left, t, round, idx),
		      "waitany t%d idx %d", t, idx);
	}

	/* Testsome polling */
	for (k = 0; k < NRECV; k++)
		MPI_CHECK(MPI_Irecv(&rin[k], 1, MPI_INT, left, 20 + k, comm, &r[k]));
	for (k = 0; k < NRECV; k++) {
		int v = val(rank, t, round, k + 50);

		MPI_CHECK(MPI_Send(&v, 1, MPI_INT, right, 20 + k, comm));
	}
	for (done = 0; done < NRECV;) {
		int n, ids[NRECV];

		MPI_CHECK(MPI_Testsome(NRECV, r, &n, ids, sts));
		CHECK(n != MPI_UNDEFINED, "testsome ran out");
		for (i = 0; i < n; i++)
			CHECK(rin[ids[i]] == val(left, t, round, ids[i] + 50), "testsome t%d", t);
		done += n;
	}

	/* synchronous send completed through Test polling */
	MPI_CHECK(MPI_Irecv(in, 8, MPI_INT, left, 4, comm, &r[0]));
	MPI_CHECK(MPI_Issend(out, 8, MPI_INT, right, 4, comm, &r[1]));
	for (flag = 0; !flag;)
		MPI_CHECK(MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE));
	MPI_CHECK(MPI_Wait(&r[0], &st));
	CHECK_STATUS(&st, left, 4, 8, MPI_INT);
}

static void shared_phase(int t, int round)
{
	int expect = (size - 1) * THREADS * MSGS, dst, i, buf[4], n;
	MPI_Status st;
	MPI_Message m;
	MPI_Request r;

	for (dst = 0; dst < size; dst++) {
		if (dst == rank)
			continue;
		for (i = 0; i < MSGS; i++) {
			int p[4] = { rank, t, i, val(rank, t, round, i) };

			MPI_CHECK(MPI_Send(p, 4, MPI_INT, dst, 100 + t, shared));
		}
	}
	/*
	 * All threads take whatever comes: a thread that claims one of the
	 * expected messages is sure to find one, so it may block.
	 */
	for (n = 0; __atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED) < expect; n++) {
		if ((n + t) % 2) {
			int flag = 0;

			while (!flag)
				MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, shared, &flag, &m,
						      &st));
			MPI_CHECK(MPI_Imrecv(buf, 4, MPI_INT, &m, &r));
			MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		} else {
			MPI_CHECK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, shared, &m, &st));
			MPI_CHECK(MPI_Mrecv(buf, 4, MPI_INT, &m, MPI_STATUS_IGNORE));
		}
		CHECK(m == MPI_MESSAGE_NULL, "mrecv leaves MPI_MESSAGE_NULL");
		CHECK(st.MPI_SOURCE == buf[0] && st.MPI_TAG == 100 + buf[1], "mprobe status");
		CHECK(buf[0] >= 0 && buf[0] < size && buf[0] != rank && buf[1] >= 0 &&
		      buf[1] < THREADS && buf[2] >= 0 && buf[2] < MSGS &&
		      buf[3] == val(buf[0], buf[1], round, buf[2]),
		      "shared message %d %d %d %d", buf[0], buf[1], buf[2], buf[3]);
		CHECK(__atomic_fetch_add(&seen[(buf[0] * THREADS + buf[1]) * MSGS + buf[2]], 1,
					 __ATOMIC_RELAXED) == 0,
		      "message %d/%d/%d received twice", buf[0], buf[1], buf[2]);
	}
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg, round;
	MPI_Comm mine;

	/* communicator constructors from all threads at once (distinct parents) */
	MPI_CHECK(MPI_Comm_dup(tcomm[t], &mine));
	for (round = 0; round < ROUNDS; round++) {
		own_comm(t, round, mine);
		pthread_barrier_wait(&bar);
		if (t == 0) {
			memset(seen, 0, (size_t)size * THREADS * MSGS);
			taken = 0;
			/* the whole job starts the shared phase together */
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
		pthread_barrier_wait(&bar);
		shared_phase(t, round);
		pthread_barrier_wait(&bar);
		if (t == 0) {
			int s, th, i;

			for (s = 0; s < size; s++)
				for (th = 0; th < THREADS && s != rank; th++)
					for (i = 0; i < MSGS; i++)
						CHECK(seen[(s * THREADS + th) * MSGS + i] == 1,
						      "message %d/%d/%d lost", s, th, i);
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
		pthread_barrier_wait(&bar);
	}
	MPI_CHECK(MPI_Comm_free(&mine));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	int provided, t;

	test_name = "threads";
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size >= 2, "needs 2 ranks");
	seen = xmalloc((size_t)size * THREADS * MSGS);
	for (t = 0; t < THREADS; t++)
		MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]));
	MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &shared));
	pthread_barrier_init(&bar, NULL, THREADS);
	for (t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "thread");
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (t = 0; t < THREADS; t++)
		MPI_CHECK(MPI_Comm_free(&tcomm[t]));
	MPI_CHECK(MPI_Comm_free(&shared));
	free(seen);
	return test_finish();
}
