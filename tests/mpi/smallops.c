// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Liveness with more receives outstanding than the module takes (its
 * max_ops): legal programs whose receives wait for messages that the
 * peer sends only after one of its own rendezvous sends was received.
 * Run with 2 ranks; meant for a module loaded with a small max_ops
 * (`scripts/vm-run --modparams max_ops=64`), where the shim keeps most
 * receives in user space, but it passes at any setting.
 *
 *  1  crossed pre-posted receives: each rank posts NREQ Irecvs (tags
 *     0..NREQ-1, rendezvous sizes) from the other, then does blocking
 *     Sends in reverse tag order. The first Send (tag NREQ-1) can only
 *     complete once the peer lets a receive it kept back take a message
 *     that is already there, while the receives it holds in the kernel
 *     wait for later Sends.
 *  2  the same with synchronous Issends in reverse order and one Waitall,
 *     and small (eager-sized) messages mixed in.
 *  3  order among kept-back receives: NREQ Irecvs with one (source, tag)
 *     plus an MPI_ANY_TAG one in the middle; the peer sends NREQ + 1
 *     messages numbered in order: receive i must get message i.
 */
#include "check.h"

#define NREQ 150
#define BIG (20 << 10)		/* above the default eager limit of 8 KiB */

static int rank, size, peer;

static size_t len_of(int i)
{
	return i % 7 == 3 ? 100 : BIG + (size_t)i * 8;
}

static void crossed(int sync, int mixed)
{
	MPI_Request *rq = calloc(2 * NREQ, sizeof(*rq));
	unsigned char **rb = calloc(NREQ, sizeof(*rb));
	unsigned char **sb = calloc(NREQ, sizeof(*sb));
	MPI_Status st;
	int i;

	CHECK(rq && rb && sb, "calloc");
	for (i = 0; i < NREQ; i++) {
		size_t n = mixed ? len_of(i) : BIG;

		rb[i] = malloc(n);
		sb[i] = malloc(n);
		CHECK(rb[i] && sb[i], "malloc");
		pat_fill(sb[i], n, (uint32_t)(rank * 100000 + i));
		MPI_CHECK(MPI_Irecv(rb[i], (int)n, MPI_BYTE, peer, i,
				    MPI_COMM_WORLD, &rq[i]));
	}
	for (i = NREQ - 1; i >= 0; i--) {
		size_t n = mixed ? len_of(i) : BIG;

		if (sync)
			MPI_CHECK(MPI_Issend(sb[i], (int)n, MPI_BYTE, peer, i,
					     MPI_COMM_WORLD, &rq[NREQ + i]));
		else
			MPI_CHECK(MPI_Send(sb[i], (int)n, MPI_BYTE, peer, i,
					   MPI_COMM_WORLD));
	}
	if (sync)
		MPI_CHECK(MPI_Waitall(2 * NREQ, rq, MPI_STATUSES_IGNORE));
	for (i = 0; i < NREQ; i++) {
		size_t n = mixed ? len_of(i) : BIG;
		int count;

		if (!sync) {
			MPI_CHECK(MPI_Wait(&rq[i], &st));
			MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
			CHECK(count == (int)n && st.MPI_TAG == i, "receive %d: %d bytes, tag %d",
			      i, count, st.MPI_TAG);
		}
		CHECK_PAT(rb[i], n, (uint32_t)(peer * 100000 + i), "receive %d", i);
		free(rb[i]);
		free(sb[i]);
	}
	free(rq);
	free(rb);
	free(sb);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void order(void)
{
	int *got = calloc(NREQ + 1, sizeof(int)), i;
	MPI_Request *rq = calloc(NREQ + 1, sizeof(*rq));
	MPI_Status *st = calloc(NREQ + 1, sizeof(*st));

	CHECK(got && rq && st, "calloc");
	if (rank == 0) {
		for (i = 0; i <= NREQ; i++)
			MPI_CHECK(MPI_Irecv(&got[i], 1, MPI_INT, 1,
					    i == NREQ / 2 ? MPI_ANY_TAG : 5,
					    MPI_COMM_WORLD, &rq[i]));
		MPI_CHECK(MPI_Waitall(NREQ + 1, rq, st));
		for (i = 0; i <= NREQ; i++)
			CHECK(got[i] == i, "receive %d got message %d", i, got[i]);
	} else {
		for (i = 0; i <= NREQ; i++)
			MPI_CHECK(MPI_Send(&i, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
	}
	free(got);
	free(rq);
	free(st);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "smallops", 2, &rank, &size);
	peer = !rank;
	crossed(0, 0);
	crossed(1, 1);
	order();
	return test_finish();
}
