// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * C/Fortran handle conversion of requests and messages, as a
 * mixed-language program does it: MPI_Request_c2f / MPI_Request_f2c and
 * MPI_Message_c2f / MPI_Message_f2c. Run with 2 ranks.
 *
 *  1  a nonblocking receive and send (small and large): c2f gives a
 *     Fortran handle other than MPI_REQUEST_NULL's, f2c gives the same C
 *     handle back, and waiting on the converted one completes the transfer
 *  2  the handles of several pending requests convert to distinct values
 *  3  MPI_REQUEST_NULL and a request Open MPI made (a nonblocking barrier)
 *     convert both ways too
 *  4  a message of MPI_Improbe converts both ways and MPI_Mrecv of the
 *     converted handle receives it; MPI_MESSAGE_NULL converts to itself
 */
#include "check.h"

#define NREQ 4

static int rank;

static MPI_Request roundtrip(MPI_Request r)
{
	MPI_Fint f = MPI_Request_c2f(r);
	MPI_Request back = MPI_Request_f2c(f);

	CHECK(back == r, "request %p -> %d -> %p", (void *)r, (int)f, (void *)back);
	return back;
}

static void case_requests(int len, int iter)
{
	unsigned char *b[NREQ];
	MPI_Request req[NREQ];
	MPI_Fint f[NREQ];
	int peer = 1 - rank, i, j;

	for (i = 0; i < NREQ; i++) {
		b[i] = xmalloc(len);
		if (rank == 0) {
			memset(b[i], 0, len);
			MPI_CHECK(MPI_Irecv(b[i], len, MPI_BYTE, peer, i, MPI_COMM_WORLD, &req[i]));
		} else {
			pat_fill(b[i], len, pat_seed(rank, peer, i, iter));
			MPI_CHECK(MPI_Isend(b[i], len, MPI_BYTE, peer, i, MPI_COMM_WORLD, &req[i]));
		}
	}
	for (i = 0; i < NREQ; i++) {
		f[i] = MPI_Request_c2f(req[i]);
		CHECK(req[i] == MPI_REQUEST_NULL || f[i] != MPI_Request_c2f(MPI_REQUEST_NULL),
		      "a pending request converts to the null handle");
		req[i] = roundtrip(req[i]);
	}
	/* receives: every pending one a handle of its own */
	for (i = 0; rank == 0 && i < NREQ; i++)
		for (j = 0; j < i; j++)
			CHECK(f[i] != f[j], "requests %d and %d share Fortran handle %d", i, j, (int)f[i]);
	for (i = 0; i < NREQ; i++) {
		MPI_Request r = MPI_Request_f2c(f[i]);
		MPI_Status st;

		MPI_CHECK(MPI_Wait(&r, &st));
		CHECK(r == MPI_REQUEST_NULL, "wait left the request set");
		if (rank == 0) {
			long bad = pat_find_bad_from(b[i], 0, len, pat_seed(peer, rank, i, iter));

			CHECK(bad < 0, "len %d, request %d: byte %ld wrong", len, i, bad);
		}
		free(b[i]);
	}
}

static void case_null_and_open_mpi(void)
{
	MPI_Request r;

	CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL,
	      "MPI_REQUEST_NULL does not convert to itself");
	MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
	r = roundtrip(r);
	MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
}

static void case_message(int len)
{
	unsigned char *b = xmalloc(len);
	MPI_Message m = MPI_MESSAGE_NULL;
	MPI_Status st;
	MPI_Fint f;
	int flag = 0, n = 0;

	CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL,
	      "MPI_MESSAGE_NULL does not convert to itself");
	if (rank == 1) {
		pat_fill(b, len, pat_seed(1, 0, 77, len));
		MPI_CHECK(MPI_Send(b, len, MPI_BYTE, 0, 77, MPI_COMM_WORLD));
	} else {
		while (!flag)
			MPI_CHECK(MPI_Improbe(1, 77, MPI_COMM_WORLD, &flag, &m, &st));
		f = MPI_Message_c2f(m);
		CHECK(MPI_Message_f2c(f) == m, "message %p -> %d -> %p", (void *)m, (int)f,
		      (void *)MPI_Message_f2c(f));
		m = MPI_Message_f2c(f);
		MPI_CHECK(MPI_Mrecv(b, len, MPI_BYTE, &m, &st));
		MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
		CHECK(n == len, "received %d of %d bytes", n, len);
		CHECK(pat_find_bad_from(b, 0, len, pat_seed(1, 0, 77, len)) < 0, "data");
	}
	free(b);
}

int main(int argc, char **argv)
{
	int size;

	test_name = "handles";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size == 2, "run with 2 ranks");
	case_requests(8, 0);
	case_requests(100000, 1);
	case_null_and_open_mpi();
	case_message(8);
	case_message(100000);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
