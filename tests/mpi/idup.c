// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_Comm_idup: several idups outstanding at once (of MPI_COMM_WORLD and
 * of a split communicator), completed through Wait, Testall and a mixed
 * Waitall with a send on another communicator; then point-to-point on the
 * new communicators: data, statuses, isolation from the parent (same tag,
 * different communicator). All point-to-point traffic of this test is on
 * idup'd communicators, so ./run's kprog-traffic check shows that they go
 * through kprog. Needs >= 2 ranks.
 */
#include "check.h"

static void ring(MPI_Comm comm, int tag, int salt)
{
	int rank, size, out[4], in[4] = { -1, -1, -1, -1 }, i;
	MPI_Status st;

	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	for (i = 0; i < 4; i++)
		out[i] = rank * 100 + salt + i;
	MPI_CHECK(MPI_Sendrecv(out, 4, MPI_INT, (rank + 1) % size, tag, in, 4, MPI_INT,
			       (rank + size - 1) % size, tag, comm, &st));
	CHECK_STATUS(&st, (rank + size - 1) % size, tag, 4, MPI_INT);
	for (i = 0; i < 4; i++)
		CHECK(in[i] == ((rank + size - 1) % size) * 100 + salt + i, "ring data %d: %d", i,
		      in[i]);
}

int main(int argc, char **argv)
{
	int rank, size, flag = 0, i, x = 0, y = 0;
	MPI_Comm half, d[3];
	MPI_Request r[4];
	MPI_Status st;

	test_init(&argc, &argv, "idup", 2, &rank, &size);
	MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));

	/* three at once; Open MPI hands out the handles at once */
	MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d[0], &r[0]));
	MPI_CHECK(MPI_Comm_idup(half, &d[1], &r[1]));
	MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d[2], &r[2]));
	MPI_CHECK(MPI_Wait(&r[1], &st));
	CHECK(r[1] == MPI_REQUEST_NULL, "wait frees the idup request");
	while (!flag)
		MPI_CHECK(MPI_Testall(1, &r[2], &flag, MPI_STATUSES_IGNORE));
	CHECK(r[2] == MPI_REQUEST_NULL, "testall frees the idup request");
	MPI_CHECK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));

	ring(d[0], 5, 1);
	ring(d[1], 5, 2);
	ring(d[2], 5, 3);

	/* isolation: the same tag on the parent and on its duplicate */
	if (rank < 2) {
		int peer = 1 - rank, a = rank + 10, b = rank + 20;

		MPI_CHECK(MPI_Irecv(&x, 1, MPI_INT, peer, 9, d[0], &r[0]));
		MPI_CHECK(MPI_Irecv(&y, 1, MPI_INT, peer, 9, d[2], &r[1]));
		MPI_CHECK(MPI_Send(&b, 1, MPI_INT, peer, 9, d[2]));
		MPI_CHECK(MPI_Send(&a, 1, MPI_INT, peer, 9, d[0]));
		MPI_CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
		CHECK(x == peer + 10 && y == peer + 20, "cross-communicator match: %d %d", x, y);
	}

	/* an idup completing in a mixed array, with a send on another duplicate */
	{
		int peer = 1 - rank, v = rank + 30, w = -1;
		MPI_Comm d3;

		r[0] = r[2] = MPI_REQUEST_NULL;
		if (rank < 2)
			MPI_CHECK(MPI_Irecv(&w, 1, MPI_INT, peer, 11, d[0], &r[0]));
		MPI_CHECK(MPI_Comm_idup(d[2], &d3, &r[1]));
		if (rank < 2)
			MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, peer, 11, d[0], &r[2]));
		MPI_CHECK(MPI_Ibarrier(half, &r[3]));
		MPI_CHECK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
		for (i = 0; i < 4; i++)
			CHECK(r[i] == MPI_REQUEST_NULL, "mixed waitall frees %d", i);
		if (rank < 2) {
			CHECK(w == peer + 30, "mixed: %d", w);
			MPI_CHECK(MPI_Sendrecv(&v, 1, MPI_INT, peer, 12, &w, 1, MPI_INT, peer, 12,
					       d3, &st));
			CHECK(w == peer + 30 && st.MPI_SOURCE == peer, "on the idup of an idup: %d",
			      w);
		}
		MPI_CHECK(MPI_Comm_free(&d3));
	}

	for (i = 0; i < 3; i++)
		MPI_CHECK(MPI_Comm_free(&d[i]));
	MPI_CHECK(MPI_Comm_free(&half));
	return test_finish();
}
