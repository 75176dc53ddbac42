// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_Probe / MPI_Iprobe / MPI_Mprobe / MPI_Improbe with MPI_Mrecv and
 * MPI_Imrecv. Rank 1 sends to rank 0; with 3+ ranks rank 2 sends too (for
 * the ANY_SOURCE cases). Run with 2-3 ranks.
 *
 *  1  Iprobe polling, then Probe twice (no consumption), Recv into a buffer
 *     of exactly the probed size; eager and large sizes
 *  2  Probe for a later tag first, then ANY_TAG still sees the earlier one
 *  3  Mprobe'd message is invisible to Probe / Iprobe / Irecv; Mrecv gets it
 *  4  Improbe + Imrecv, large message, message handle reset to NULL
 *  5  MPI_PROC_NULL with Probe, Iprobe, Mprobe, Improbe, Mrecv
 *  6  a message on MPI_COMM_WORLD is not seen by a probe on a dup
 *  7  Probe(ANY_SOURCE) with two senders
 */
#include "check.h"

static int rank, size;
static MPI_Comm dup;

static const int sizes1[] = { 0, 1, 1000, 65536, 65537, 1 << 20, 3 };
#define N1 ((int)(sizeof(sizes1) / sizeof(sizes1[0])))

static void send_pat(int len, int dst, int tag, int iter, MPI_Comm comm)
{
	unsigned char *b = xmalloc(len);

	pat_fill(b, len, pat_seed(rank, dst, tag, iter));
	MPI_CHECK(MPI_Send(b, len, MPI_BYTE, dst, tag, comm));
	free(b);
}

/* Nonblocking sends, completed by wait_sends(). */
static MPI_Request preq[16];
static unsigned char *pbuf[16];
static int npend;

static void isend_pat(int len, int dst, int tag, int iter, MPI_Comm comm)
{
	unsigned char *b = xmalloc(len);

	CHECK(npend < 16, "too many pending sends");
	pat_fill(b, len, pat_seed(rank, dst, tag, iter));
	pbuf[npend] = b;
	MPI_CHECK(MPI_Isend(b, len, MPI_BYTE, dst, tag, comm, &preq[npend]));
	npend++;
}

static void wait_sends(void)
{
	int i;

	MPI_CHECK(MPI_Waitall(npend, preq, MPI_STATUSES_IGNORE));
	for (i = 0; i < npend; i++)
		free(pbuf[i]);
	npend = 0;
}

static void recv_check(int len, int src, int tag, int iter, MPI_Comm comm)
{
	unsigned char *b = xmalloc(len + 1);
	MPI_Status st;

	b[len] = 0x5c;
	status_poison(&st);
	MPI_CHECK(MPI_Recv(b, len, MPI_BYTE, src, tag, comm, &st));
	CHECK_STATUS(&st, src, tag, len, MPI_BYTE);
	CHECK_PAT(b, len, pat_seed(src, 0, tag, iter), "msg iter %d", iter);
	CHECK(b[len] == 0x5c, "byte after the buffer overwritten");
	free(b);
}

static void test1(void)
{
	int i;

	if (rank == 1) {
		for (i = 0; i < N1; i++)
			send_pat(sizes1[i], 0, 10 + i, i, MPI_COMM_WORLD);
		return;
	}
	if (rank != 0)
		return;
	for (i = 0; i < N1; i++) {
		MPI_Status st, st2;
		int flag = 0, cnt = -1, el = -1, polls = 0;

		/* Nothing is ever sent with tag 9. */
		MPI_CHECK(MPI_Iprobe(1, 9, MPI_COMM_WORLD, &flag, &st));
		CHECK(!flag, "Iprobe found a message with tag 9");
		while (!flag) {
			status_poison(&st);
			MPI_CHECK(MPI_Iprobe(1, 10 + i, MPI_COMM_WORLD, &flag,
					     &st));
			polls++;
		}
		CHECK_STATUS(&st, 1, 10 + i, sizes1[i], MPI_BYTE);
		MPI_CHECK(MPI_Get_elements(&st, MPI_BYTE, &el));
		CHECK(el == sizes1[i], "Get_elements %d, expected %d", el,
		      sizes1[i]);
		/* Probing again finds the same message. */
		status_poison(&st2);
		MPI_CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st2));
		CHECK_STATUS(&st2, 1, 10 + i, sizes1[i], MPI_BYTE);
		status_poison(&st2);
		MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 10 + i, MPI_COMM_WORLD,
				    &st2));
		CHECK_STATUS(&st2, 1, 10 + i, sizes1[i], MPI_BYTE);
		MPI_CHECK(MPI_Get_count(&st2, MPI_BYTE, &cnt));
		recv_check(cnt, st2.MPI_SOURCE, st2.MPI_TAG, i,
			   MPI_COMM_WORLD);
	}
}

/* Probe(tag B) while tag A arrived first; ANY_TAG probe/recv gives A. */
static void test2(void)
{
	MPI_Status st;

	if (rank == 1) {
		isend_pat(100, 0, 21, 0, MPI_COMM_WORLD);
		isend_pat(300000, 0, 22, 1, MPI_COMM_WORLD);
		isend_pat(5, 0, 21, 2, MPI_COMM_WORLD);
		wait_sends();
		return;
	}
	if (rank != 0)
		return;
	status_poison(&st);
	MPI_CHECK(MPI_Probe(1, 22, MPI_COMM_WORLD, &st));
	CHECK_STATUS(&st, 1, 22, 300000, MPI_BYTE);
	status_poison(&st);
	MPI_CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
	CHECK_STATUS(&st, 1, 21, 100, MPI_BYTE);
	recv_check(100, 1, 21, 0, MPI_COMM_WORLD);
	status_poison(&st);
	MPI_CHECK(MPI_Probe(1, 21, MPI_COMM_WORLD, &st));
	CHECK_STATUS(&st, 1, 21, 5, MPI_BYTE);
	status_poison(&st);
	MPI_CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
	CHECK_STATUS(&st, 1, 22, 300000, MPI_BYTE);
	recv_check(300000, 1, 22, 1, MPI_COMM_WORLD);
	recv_check(5, 1, 21, 2, MPI_COMM_WORLD);
}

/* An mprobe'd message is removed from matching. */
static void test3(int len1, int len2)
{
	MPI_Message msg = MPI_MESSAGE_NULL;
	MPI_Request rq;
	MPI_Status st;
	unsigned char *b1, *b2;
	int flag = 1, i;

	if (rank == 1) {
		isend_pat(len1, 0, 30, 0, MPI_COMM_WORLD);
		isend_pat(len2, 0, 30, 1, MPI_COMM_WORLD);
		wait_sends();
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	if (rank != 0) {
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	b1 = xmalloc(len1);
	b2 = xmalloc(len2);
	status_poison(&st);
	MPI_CHECK(MPI_Mprobe(1, 30, MPI_COMM_WORLD, &msg, &st));
	CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC,
	      "Mprobe gave a null message");
	CHECK_STATUS(&st, 1, 30, len1, MPI_BYTE);
	/* Wait until message 2 is surely there, then it is all probes see. */
	status_poison(&st);
	MPI_CHECK(MPI_Probe(1, 30, MPI_COMM_WORLD, &st));
	CHECK_STATUS(&st, 1, 30, len2, MPI_BYTE);
	for (i = 0; i < 10; i++) {
		status_poison(&st);
		MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG,
				     MPI_COMM_WORLD, &flag, &st));
		CHECK(flag, "Iprobe lost message 2");
		CHECK_STATUS(&st, 1, 30, len2, MPI_BYTE);
	}
	MPI_CHECK(MPI_Irecv(b2, len2, MPI_BYTE, 1, 30, MPI_COMM_WORLD, &rq));
	status_poison(&st);
	MPI_CHECK(MPI_Wait(&rq, &st));
	CHECK_STATUS(&st, 1, 30, len2, MPI_BYTE);
	CHECK_PAT(b2, len2, pat_seed(1, 0, 30, 1), "second message (%d B)",
		  len2);
	/* Nothing left to probe. */
	MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
			     &flag, &st));
	CHECK(!flag, "Iprobe found a message after all were taken "
	      "(src %d tag %d)", st.MPI_SOURCE, st.MPI_TAG);
	status_poison(&st);
	MPI_CHECK(MPI_Mrecv(b1, len1, MPI_BYTE, &msg, &st));
	CHECK(msg == MPI_MESSAGE_NULL, "Mrecv did not reset the message");
	CHECK_STATUS(&st, 1, 30, len1, MPI_BYTE);
	CHECK_PAT(b1, len1, pat_seed(1, 0, 30, 0), "mprobed message (%d B)",
		  len1);
	free(b1);
	free(b2);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Improbe + Imrecv. */
static void test4(int len)
{
	MPI_Message msg = MPI_MESSAGE_NULL;
	MPI_Request rq = MPI_REQUEST_NULL;
	MPI_Status st;
	unsigned char *b;
	int flag = 0, t;

	if (rank == 1) {
		for (t = 0; t < 3; t++)
			isend_pat(len + t, 0, 40 + t, t, MPI_COMM_WORLD);
		wait_sends();
		return;
	}
	if (rank != 0)
		return;
	b = xmalloc(len + 3);
	/* Receive in reverse tag order. */
	for (t = 2; t >= 0; t--) {
		flag = 0;
		while (!flag) {
			status_poison(&st);
			MPI_CHECK(MPI_Improbe(1, 40 + t, MPI_COMM_WORLD, &flag,
					      &msg, &st));
		}
		CHECK(msg != MPI_MESSAGE_NULL, "Improbe flag but null message");
		CHECK_STATUS(&st, 1, 40 + t, len + t, MPI_BYTE);
		MPI_CHECK(MPI_Imrecv(b, len + 3, MPI_BYTE, &msg, &rq));
		CHECK(msg == MPI_MESSAGE_NULL, "Imrecv did not reset the "
		      "message handle");
		status_poison(&st);
		if (t == 1) {
			flag = 0;
			while (!flag)
				MPI_CHECK(MPI_Test(&rq, &flag, &st));
		} else {
			MPI_CHECK(MPI_Wait(&rq, &st));
		}
		CHECK(rq == MPI_REQUEST_NULL, "request not freed");
		CHECK_STATUS(&st, 1, 40 + t, len + t, MPI_BYTE);
		CHECK_PAT(b, len + t, pat_seed(1, 0, 40 + t, t), "Imrecv tag "
			  "%d", 40 + t);
	}
	free(b);
}

static void check_proc_null_status(MPI_Status *st)
{
	int cnt = -1;

	MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &cnt));
	CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG &&
	      cnt == 0, "PROC_NULL status: source %d tag %d count %d",
	      st->MPI_SOURCE, st->MPI_TAG, cnt);
}

static void test5(void)
{
	MPI_Message msg = MPI_MESSAGE_NULL;
	MPI_Request rq;
	MPI_Status st;
	char b[4] = "abc";
	int flag = 0;

	status_poison(&st);
	MPI_CHECK(MPI_Probe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, &st));
	check_proc_null_status(&st);
	status_poison(&st);
	MPI_CHECK(MPI_Iprobe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
			     &st));
	CHECK(flag, "Iprobe(PROC_NULL) flag false");
	check_proc_null_status(&st);
	status_poison(&st);
	MPI_CHECK(MPI_Mprobe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, &msg, &st));
	CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) message is not "
	      "MPI_MESSAGE_NO_PROC");
	check_proc_null_status(&st);
	status_poison(&st);
	MPI_CHECK(MPI_Mrecv(b, 4, MPI_CHAR, &msg, &st));
	CHECK(msg == MPI_MESSAGE_NULL, "Mrecv(NO_PROC) left message non-null");
	check_proc_null_status(&st);
	CHECK(!strcmp(b, "abc"), "Mrecv(NO_PROC) wrote the buffer");
	flag = 0;
	msg = MPI_MESSAGE_NULL;
	MPI_CHECK(MPI_Improbe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, &flag, &msg,
			      &st));
	CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL): flag "
	      "%d, message NO_PROC %d", flag, msg == MPI_MESSAGE_NO_PROC);
	MPI_CHECK(MPI_Imrecv(b, 4, MPI_CHAR, &msg, &rq));
	CHECK(msg == MPI_MESSAGE_NULL, "Imrecv(NO_PROC) left message non-null");
	status_poison(&st);
	MPI_CHECK(MPI_Wait(&rq, &st));
	check_proc_null_status(&st);
	CHECK(!strcmp(b, "abc"), "Imrecv(NO_PROC) wrote the buffer");
}

/* A message on WORLD is invisible to probes on a dup and vice versa. */
static void test6(void)
{
	MPI_Status st;
	int flag = 1, i;

	if (rank == 1) {
		send_pat(64, 0, 60, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		send_pat(65, 0, 60, 1, dup);
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	if (rank != 0) {
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	MPI_CHECK(MPI_Probe(1, 60, MPI_COMM_WORLD, &st));
	for (i = 0; i < 5; i++) {
		MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag,
				     &st));
		CHECK(!flag, "Iprobe on dup saw a message sent on WORLD");
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_CHECK(MPI_Probe(1, 60, dup, &st));
	CHECK_STATUS(&st, 1, 60, 65, MPI_BYTE);
	MPI_CHECK(MPI_Probe(1, 60, MPI_COMM_WORLD, &st));
	CHECK_STATUS(&st, 1, 60, 64, MPI_BYTE);
	recv_check(65, 1, 60, 1, dup);
	MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag, &st));
	CHECK(!flag, "Iprobe on dup found a message after it was received");
	recv_check(64, 1, 60, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* Probe(ANY_SOURCE) with two senders: each source's messages in order. */
static void test7(void)
{
	int next[3] = { 0, 0, 0 }, n;

	if (size < 3)
		return;
	if (rank == 1 || rank == 2) {
		for (n = 0; n < 6; n++)
			send_pat(n % 2 ? 100000 + rank : 10 + rank, 0, 70, n,
				 MPI_COMM_WORLD);
		return;
	}
	if (rank != 0)
		return;
	for (n = 0; n < 12; n++) {
		MPI_Status st;
		int s, cnt;

		status_poison(&st);
		MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &st));
		s = st.MPI_SOURCE;
		CHECK(s == 1 || s == 2, "probe source %d", s);
		cnt = next[s] % 2 ? 100000 + s : 10 + s;
		CHECK_STATUS(&st, s, 70, cnt, MPI_BYTE);
		recv_check(cnt, s, 70, next[s], MPI_COMM_WORLD);
		next[s]++;
	}
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "probe", 2, &rank, &size);
	MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	test1();
	MPI_Barrier(MPI_COMM_WORLD);
	test2();
	MPI_Barrier(MPI_COMM_WORLD);
	test3(100, 200000);
	test3(2 << 20, 7);
	test3(10, 20);
	test4(8);
	MPI_Barrier(MPI_COMM_WORLD);
	test4(1 << 20);
	MPI_Barrier(MPI_COMM_WORLD);
	test5();
	MPI_Barrier(MPI_COMM_WORLD);
	test6();
	test7();
	MPI_Comm_free(&dup);
	return test_finish();
}
