// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rendezvous sends posted through a channel (libshim/core/rts.c: a grant slot
 * and a record, no system call) mixed with every other path of the same
 * sender. Under kprog a contiguous send above the fast path's limit to a
 * rank with no receive in the kernel goes that way; MPI must hold as for
 * any send. Under plain Open MPI this is an ordinary MPI test. 3 ranks
 * (works with 2: E then has one sender).
 *
 *  A  one sender, one tag, the receiver posting only after all are sent:
 *     rendezvous-through-channel, small (channel record), non-contiguous
 *     (the kernel's iovec path), synchronous and zero-byte messages in a
 *     fixed mix, received in order, each with its own data
 *  B  more such sends in flight than there are grant slots (64 by
 *     default): the rest go through the kernel, after the channel's
 *     records, and all arrive in order
 *  C  MPI_Cancel of a rendezvous send whose receiver has not posted:
 *     cancelled where a channel carries it (else it may complete), and
 *     nothing of a cancelled send arrives (probe finds nothing, the next
 *     message of that tag is the next one sent)
 *  D  Probe/Iprobe/Mprobe of such a message report its real length;
 *     Mrecv and Imrecv take it
 *  E  a receive posted in the kernel first (ANY_SOURCE, large buffer):
 *     the senders' messages go to it whichever way they take
 *  F  a rendezvous send into a too small receive: MPI_ERR_TRUNCATE, and
 *     the next message is intact
 */
#include "check.h"

#define LARGE	20000		/* above the fast path's 8192 */
#define NB	100		/* B: more than the 64 grant slots */
static int rank, size;

static void send_pat(const void *buf0, int len, int dst, int tag, int iter, MPI_Request *rq)
{
	unsigned char *buf = (unsigned char *)buf0;

	pat_fill(buf, (size_t)len, pat_seed(rank, dst, tag, iter));
	MPI_CHECK(MPI_Isend(buf, len, MPI_BYTE, dst, tag, MPI_COMM_WORLD, rq));
}

static void recv_pat(int len, int src, int tag, int iter)
{
	unsigned char *buf = malloc((size_t)len + 64);
	MPI_Status st;
	int n = -1;

	CHECK(buf, "malloc");
	MPI_CHECK(MPI_Recv(buf, len + 64, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
	MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
	CHECK(n == len, "message %d from %d: %d bytes, expected %d", iter, src, n, len);
	CHECK_PAT(buf, (size_t)len, pat_seed(src, rank, tag, iter), "message %d", iter);
	free(buf);
}

/* A: the mix; lengths < 0 are vectors of -len bytes (every other byte) */
static const int mix[] = { LARGE, 100, 3 * LARGE, -LARGE, 0, LARGE + 1, 9000, 8192, -600, LARGE };

static void phase_a(void)
{
	int n = (int)(sizeof(mix) / sizeof(mix[0])), i;

	if (rank == 0) {
		unsigned char *bufs[sizeof(mix) / sizeof(mix[0])];
		MPI_Request rq[sizeof(mix) / sizeof(mix[0])];
		MPI_Datatype vec;

		for (i = 0; i < n; i++) {
			int len = mix[i] < 0 ? -mix[i] : mix[i];

			bufs[i] = malloc((size_t)len * 2 + 1);
			CHECK(bufs[i], "malloc");
			if (mix[i] >= 0) {
				if (i == 5) {	/* a synchronous one */
					pat_fill(bufs[i], (size_t)len, pat_seed(0, 1, 1, i));
					MPI_CHECK(MPI_Issend(bufs[i], len, MPI_BYTE, 1, 1,
							     MPI_COMM_WORLD, &rq[i]));
				} else {
					send_pat(bufs[i], len, 1, 1, i, &rq[i]);
				}
				continue;
			}
			/* len bytes taken from every other byte of 2 * len */
			unsigned char *packed = malloc((size_t)len);
			int j;

			CHECK(packed, "malloc");
			pat_fill(packed, (size_t)len, pat_seed(0, 1, 1, i));
			for (j = 0; j < len; j++)
				bufs[i][2 * j] = packed[j];
			free(packed);
			MPI_CHECK(MPI_Type_vector(len, 1, 2, MPI_BYTE, &vec));
			MPI_CHECK(MPI_Type_commit(&vec));
			MPI_CHECK(MPI_Isend(bufs[i], 1, vec, 1, 1, MPI_COMM_WORLD, &rq[i]));
			MPI_CHECK(MPI_Type_free(&vec));
		}
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_CHECK(MPI_Waitall(n, rq, MPI_STATUSES_IGNORE));
		for (i = 0; i < n; i++)
			free(bufs[i]);
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 1)
			for (i = 0; i < n; i++)
				recv_pat(mix[i] < 0 ? -mix[i] : mix[i], 0, 1, i);
	}
}

static void phase_b(void)
{
	int i;

	if (rank == 0) {
		unsigned char *buf = malloc((size_t)NB * 9008);
		MPI_Request rq[NB];

		CHECK(buf, "malloc");
		for (i = 0; i < NB; i++)
			send_pat(buf + (size_t)i * 9008, 9000 + (i % 3), 1, 2, i, &rq[i]);
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_CHECK(MPI_Waitall(NB, rq, MPI_STATUSES_IGNORE));
		free(buf);
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 1)
			for (i = 0; i < NB; i++)
				recv_pat(9000 + (i % 3), 0, 2, i);
	}
}

/*
 * Does a send from rank 0 to rank 1 go through a channel? Only between
 * ranks of one node with the fast path on: KPROG_TRANSPORT=ib sends every
 * message through the ibverbs transport, and ranks of two nodes have no
 * channel. Across the wire a rendezvous send whose request went out is
 * not withdrawn (the transport has no cancel message): MPI_Cancel then
 * fails, as MPI allows and as Open MPI's ob1 does, and the send completes
 * once received.
 */
static int channel_0_to_1(void)
{
	const char *xp = getenv("KPROG_TRANSPORT");
	MPI_Comm node;
	int nrank = -1, mine = 0, apart = 0;

	/* on rank 0's node, rank 1 is node rank 1 (node ranks follow world ranks) */
	MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
				      &node));
	MPI_CHECK(MPI_Comm_rank(node, &nrank));
	MPI_CHECK(MPI_Comm_free(&node));
	mine = rank == 1 && nrank != 1;
	MPI_CHECK(MPI_Allreduce(&mine, &apart, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
	return !apart && !(xp && !strcmp(xp, "ib"));
}

static void phase_c(void)
{
	unsigned char *buf = malloc(3 * LARGE);
	MPI_Request rq;
	MPI_Status st;
	int flag = 0, cancelled = 0;
	int strict = channel_0_to_1() && test_strict();	/* collective: first */

	CHECK(buf, "malloc");
	if (rank == 0) {
		double t0;

		send_pat(buf, 3 * LARGE, 1, 3, 0, &rq);
		MPI_CHECK(MPI_Cancel(&rq));
		/*
		 * Open MPI's ob1 does not cancel sends: this one then completes
		 * only once received, so no MPI_Wait before rank 1 knows. Under
		 * kprog the send waits in the channel and is withdrawn at once.
		 */
		t0 = MPI_Wtime();
		do
			MPI_CHECK(MPI_Test(&rq, &flag, &st));
		while (!flag && MPI_Wtime() - t0 < 1);
		if (flag)
			MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
		CHECK(cancelled || !strict, "a rendezvous send not received was not cancelled");
		MPI_CHECK(MPI_Bcast(&cancelled, 1, MPI_INT, 0, MPI_COMM_WORLD));
		MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		send_pat(buf, LARGE, 1, 3, 1, &rq);
		MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	} else {
		MPI_CHECK(MPI_Bcast(&cancelled, 1, MPI_INT, 0, MPI_COMM_WORLD));
		if (rank == 1) {
			if (cancelled) {
				MPI_CHECK(MPI_Iprobe(0, 3, MPI_COMM_WORLD, &flag, &st));
				if (flag) {	/* only the second one may be there */
					int n;

					MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
					CHECK(n == LARGE, "a cancelled send arrived (%d bytes)", n);
				}
			} else {
				recv_pat(3 * LARGE, 0, 3, 0);
			}
			recv_pat(LARGE, 0, 3, 1);
		}
	}
	free(buf);
}

static void phase_d(void)
{
	unsigned char *buf = malloc(3 * 2 * LARGE);
	MPI_Request rq[3];
	MPI_Message m;
	MPI_Status st;
	int n, flag = 0, i;

	CHECK(buf, "malloc");
	if (rank == 0) {
		for (i = 0; i < 3; i++)
			send_pat(buf + (size_t)i * 2 * LARGE, LARGE + 1000 * i, 1, 4, i, &rq[i]);
		MPI_CHECK(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
	} else if (rank == 1) {
		MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st));
		MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
		CHECK(n == LARGE && st.MPI_SOURCE == 0, "probe: %d bytes from %d", n, st.MPI_SOURCE);
		recv_pat(LARGE, 0, 4, 0);
		while (!flag)
			MPI_CHECK(MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
		MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
		CHECK(n == LARGE + 1000 && st.MPI_TAG == 4, "iprobe: %d bytes tag %d", n, st.MPI_TAG);
		MPI_CHECK(MPI_Mprobe(0, 4, MPI_COMM_WORLD, &m, &st));
		MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
		CHECK(n == LARGE + 1000, "mprobe: %d bytes", n);
		MPI_CHECK(MPI_Mrecv(buf, 2 * LARGE, MPI_BYTE, &m, &st));
		CHECK_PAT(buf, LARGE + 1000, pat_seed(0, 1, 4, 1), "mrecv");
		MPI_CHECK(MPI_Mprobe(0, 4, MPI_COMM_WORLD, &m, &st));
		MPI_CHECK(MPI_Imrecv(buf, 2 * LARGE, MPI_BYTE, &m, &rq[0]));
		MPI_CHECK(MPI_Wait(&rq[0], &st));
		MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
		CHECK(n == LARGE + 2000, "imrecv: %d bytes", n);
		CHECK_PAT(buf, LARGE + 2000, pat_seed(0, 1, 4, 2), "imrecv");
	}
	free(buf);
}

static void phase_e(void)
{
	unsigned char *buf = malloc(4 * LARGE);
	MPI_Request rq;
	MPI_Status st;
	int i, n, seen = 0;

	CHECK(buf, "malloc");
	if (rank == 1) {
		for (i = 0; i < size - 1; i++) {
			MPI_CHECK(MPI_Irecv(buf, 4 * LARGE, MPI_BYTE, MPI_ANY_SOURCE, 5,
					    MPI_COMM_WORLD, &rq));
			if (i == 0)
				MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			MPI_CHECK(MPI_Wait(&rq, &st));
			MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
			CHECK(n == 3 * LARGE, "any source: %d bytes", n);
			CHECK(st.MPI_SOURCE != 1 && !(seen & (1 << st.MPI_SOURCE)),
			      "any source: from %d twice or from itself", st.MPI_SOURCE);
			seen |= 1 << st.MPI_SOURCE;
			CHECK_PAT(buf, (size_t)n, pat_seed(st.MPI_SOURCE, 1, 5, 0), "any source");
		}
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		send_pat(buf, 3 * LARGE, 1, 5, 0, &rq);
		MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	}
	free(buf);
}

static void phase_f(void)
{
	unsigned char *buf = malloc(2 * LARGE);
	MPI_Request rq[2];
	MPI_Status st;
	int rc, cls = -1;

	CHECK(buf, "malloc");
	if (rank == 0) {
		send_pat(buf, 2 * LARGE, 1, 6, 0, &rq[0]);
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_CHECK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
		send_pat(buf, LARGE, 1, 6, 1, &rq[1]);
		MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 1) {
			MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
			rc = MPI_Recv(buf, LARGE, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &st);
			MPI_Error_class(rc, &cls);
			CHECK(cls == MPI_ERR_TRUNCATE, "truncation: %s", test_errclass_str(rc));
			MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
			recv_pat(LARGE, 0, 6, 1);
		}
	}
	free(buf);
}

int main(int argc, char **argv)
{
	test_name = "rts";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size >= 2, "run with 2 or more ranks");
	phase_a();
	phase_b();
	phase_c();
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	phase_d();
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	phase_e();
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	phase_f();
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_Finalize();
	return 0;
}
