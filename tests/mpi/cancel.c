// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_Cancel. Rank 1 sends to rank 0. Run with 2 ranks.
 *
 *  1  unmatched Irecv (specific and ANY_SOURCE): Cancel, Wait,
 *     Test_cancelled true, buffer untouched; a later message with that tag
 *     goes to the next receive
 *  2  Irecv already matched (the sender's Ssend completed): Cancel, Wait,
 *     not cancelled, data intact; eager and large
 *  3  every other one of 10 posted Irecvs cancelled: messages land in the
 *     remaining ones in posting order
 *  4  Isend / Issend cancelled (eager, large): either outcome is allowed,
 *     but if cancelled the message is never received and if not it is
 *  5  started persistent receive cancelled, then started again and used
 */
#include "check.h"

static int rank, size;

static void send_pat(int len, int dst, int tag, int iter, int sync)
{
	unsigned char *b = xmalloc(len);

	pat_fill(b, len, pat_seed(rank, dst, tag, iter));
	if (sync)
		MPI_CHECK(MPI_Ssend(b, len, MPI_BYTE, dst, tag, MPI_COMM_WORLD));
	else
		MPI_CHECK(MPI_Send(b, len, MPI_BYTE, dst, tag, MPI_COMM_WORLD));
	free(b);
}

static void check_cancelled(MPI_Status *st, int want, const char *what)
{
	int c = -1;

	MPI_CHECK(MPI_Test_cancelled(st, &c));
	CHECK(c == want, "%s: Test_cancelled %d, expected %d", what, c, want);
}

static void test1(void)
{
	int src, i;

	for (i = 0; i < 2; i++) {
		src = i ? MPI_ANY_SOURCE : 1;
		if (rank == 0) {
			char buf[64];
			MPI_Request rq;
			MPI_Status st;

			memset(buf, 0x77, sizeof(buf));
			MPI_CHECK(MPI_Irecv(buf, 64, MPI_BYTE, src, 11,
					    MPI_COMM_WORLD, &rq));
			MPI_CHECK(MPI_Cancel(&rq));
			CHECK(rq != MPI_REQUEST_NULL, "Cancel freed the request");
			status_poison(&st);
			MPI_CHECK(MPI_Wait(&rq, &st));
			CHECK(rq == MPI_REQUEST_NULL, "Wait did not free the "
			      "cancelled request");
			check_cancelled(&st, 1, "unmatched Irecv");
			CHECK_FILL(buf, 64, 0x77, "cancelled receive buffer");
			MPI_Barrier(MPI_COMM_WORLD);
			/* The message sent now goes to the new receive. */
			MPI_CHECK(MPI_Irecv(buf, 64, MPI_BYTE, src, 11,
					    MPI_COMM_WORLD, &rq));
			status_poison(&st);
			MPI_CHECK(MPI_Wait(&rq, &st));
			check_cancelled(&st, 0, "receive after a cancel");
			CHECK_STATUS(&st, 1, 11, 40, MPI_BYTE);
			CHECK_PAT(buf, 40, pat_seed(1, 0, 11, i), "after cancel");
			CHECK_FILL(buf + 40, 24, 0x77, "beyond the message");
		} else {
			MPI_Barrier(MPI_COMM_WORLD);
			if (rank == 1)
				send_pat(40, 0, 11, i, 0);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

/* Irecv matched before the cancel: Ssend completion proves the match. */
static void test2(int len, int sync)
{
	if (rank == 0) {
		unsigned char *buf = xmalloc(len);
		MPI_Request rq;
		MPI_Status st;

		MPI_CHECK(MPI_Irecv(buf, len, MPI_BYTE, 1, 12, MPI_COMM_WORLD,
				    &rq));
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);	/* sender's send completed */
		MPI_CHECK(MPI_Cancel(&rq));
		status_poison(&st);
		MPI_CHECK(MPI_Wait(&rq, &st));
		check_cancelled(&st, 0, "matched Irecv");
		CHECK_STATUS(&st, 1, 12, len, MPI_BYTE);
		CHECK_PAT(buf, len, pat_seed(1, 0, 12, len), "matched then "
			  "cancelled receive (%d B)", len);
		free(buf);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 1)
			send_pat(len, 0, 12, len, sync);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test3(void)
{
	enum { N = 10 };

	if (rank == 0) {
		unsigned char buf[N][100];
		MPI_Request rq[N];
		MPI_Status st[N];
		int i;

		memset(buf, 0x33, sizeof(buf));
		for (i = 0; i < N; i++)
			MPI_CHECK(MPI_Irecv(buf[i], 100, MPI_BYTE,
					    i % 3 ? 1 : MPI_ANY_SOURCE, 13,
					    MPI_COMM_WORLD, &rq[i]));
		for (i = 1; i < N; i += 2)
			MPI_CHECK(MPI_Cancel(&rq[i]));
		MPI_Barrier(MPI_COMM_WORLD);
		for (i = 0; i < N; i++)
			status_poison(&st[i]);
		MPI_CHECK(MPI_Waitall(N, rq, st));
		for (i = 0; i < N; i++) {
			check_cancelled(&st[i], i & 1, "every other cancelled");
			if (i & 1) {
				CHECK_FILL(buf[i], 100, 0x33, "cancelled "
					   "receive %d", i);
				continue;
			}
			CHECK_STATUS(&st[i], 1, 13, 50 + i, MPI_BYTE);
			CHECK_PAT(buf[i], 50 + i, pat_seed(1, 0, 13, i / 2),
				  "receive %d", i);
			CHECK_FILL(buf[i] + 50 + i, 50 - i, 0x33, "receive %d "
				   "tail", i);
		}
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 1) {
			int k;

			for (k = 0; k < N / 2; k++)
				send_pat(50 + 2 * k, 0, 13, k, 0);
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * Isend + Cancel + Wait on the sender; it then tells the receiver whether
 * the send was cancelled and sends a marker message with the same tag.
 * The receiver's first receive on that tag must get the data if the send
 * was not cancelled, the marker if it was.
 */
static void test4(int len, int sync, int iter)
{
	const int tag = 14, ctl = 15;
	uint32_t dseed = pat_seed(1, 0, tag, 100 + iter);
	uint32_t mseed = pat_seed(1, 0, tag, 200 + iter);

	if (rank == 1) {
		unsigned char *b = xmalloc(len), *m = xmalloc(32);
		MPI_Request rq;
		MPI_Status st;
		int c = -1;

		pat_fill(b, len, dseed);
		pat_fill(m, 32, mseed);
		if (sync)
			MPI_CHECK(MPI_Issend(b, len, MPI_BYTE, 0, tag,
					     MPI_COMM_WORLD, &rq));
		else
			MPI_CHECK(MPI_Isend(b, len, MPI_BYTE, 0, tag,
					    MPI_COMM_WORLD, &rq));
		MPI_CHECK(MPI_Cancel(&rq));
		status_poison(&st);
		MPI_CHECK(MPI_Wait(&rq, &st));
		MPI_CHECK(MPI_Test_cancelled(&st, &c));
		CHECK(c == 0 || c == 1, "Test_cancelled flag %d", c);
		MPI_CHECK(MPI_Send(&c, 1, MPI_INT, 0, ctl, MPI_COMM_WORLD));
		MPI_CHECK(MPI_Send(m, 32, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
		free(b);
		free(m);
	} else if (rank == 0) {
		unsigned char *b = xmalloc(len + 32);
		MPI_Status st;
		int c = -1, cnt;

		sleep_ms(100);	/* let the sender cancel before we match */
		status_poison(&st);
		MPI_CHECK(MPI_Recv(b, len + 32, MPI_BYTE, 1, tag,
				   MPI_COMM_WORLD, &st));
		MPI_CHECK(MPI_Recv(&c, 1, MPI_INT, 1, ctl, MPI_COMM_WORLD,
				   MPI_STATUS_IGNORE));
		MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &cnt));
		if (c) {
			CHECK(cnt == 32 && pat_find_bad(b, 32, mseed) < 0,
			      "%s of %d B reported cancelled, but the receiver "
			      "got %d B that are %s", sync ? "Issend" : "Isend",
			      len, cnt, cnt == len && pat_find_bad(b, len,
			      dseed) < 0 ? "the cancelled data" : "garbage");
		} else {
			CHECK_STATUS(&st, 1, tag, len, MPI_BYTE);
			CHECK_PAT(b, len, dseed, "%s of %d B not cancelled",
				  sync ? "Issend" : "Isend", len);
			status_poison(&st);
			MPI_CHECK(MPI_Recv(b, len + 32, MPI_BYTE, 1, tag,
					   MPI_COMM_WORLD, &st));
		}
		CHECK_STATUS(&st, 1, tag, 32, MPI_BYTE);
		CHECK_PAT(b, 32, mseed, "marker after %s of %d B (cancelled %d)",
			  sync ? "Issend" : "Isend", len, c);
		free(b);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Persistent receive: Start, Cancel, Wait (cancelled), Start again, used. */
static void test5(void)
{
	if (rank == 0) {
		unsigned char buf[256];
		MPI_Request rq;
		MPI_Status st;
		int it;

		MPI_CHECK(MPI_Recv_init(buf, 256, MPI_BYTE, 1, 16,
					MPI_COMM_WORLD, &rq));
		for (it = 0; it < 3; it++) {
			memset(buf, 0x44, sizeof(buf));
			MPI_CHECK(MPI_Start(&rq));
			MPI_CHECK(MPI_Cancel(&rq));
			status_poison(&st);
			MPI_CHECK(MPI_Wait(&rq, &st));
			CHECK(rq != MPI_REQUEST_NULL, "Wait freed a persistent "
			      "request");
			check_cancelled(&st, 1, "persistent receive");
			CHECK_FILL(buf, 256, 0x44, "cancelled persistent recv");
		}
		MPI_CHECK(MPI_Start(&rq));
		MPI_Barrier(MPI_COMM_WORLD);
		status_poison(&st);
		MPI_CHECK(MPI_Wait(&rq, &st));
		check_cancelled(&st, 0, "persistent receive after cancels");
		CHECK_STATUS(&st, 1, 16, 200, MPI_BYTE);
		CHECK_PAT(buf, 200, pat_seed(1, 0, 16, 0), "persistent recv");
		CHECK_FILL(buf + 200, 56, 0x44, "persistent recv tail");
		MPI_CHECK(MPI_Request_free(&rq));
		CHECK(rq == MPI_REQUEST_NULL, "Request_free did not null it");
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 1)
			send_pat(200, 0, 16, 0, 0);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "cancel", 2, &rank, &size);
	test1();
	test2(16, 1);
	test2(300000, 1);
	test2(2 << 20, 0);
	test3();
	test4(8, 0, 0);
	test4(8, 1, 1);
	test4(1 << 20, 0, 2);
	test4(1 << 20, 1, 3);
	test4(70000, 0, 4);
	test5();
	return test_finish();
}
