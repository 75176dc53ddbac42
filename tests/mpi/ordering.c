// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Non-overtaking: messages from one sender on one (tag, comm) are received
 * in the order they were sent, whatever their size. Sizes alternate
 * between eager and rendezvous (1 B .. 4 MiB) from each sender, so a
 * transport that lets a small message pass a large one is caught.
 * Ranks 1..n-1 send to rank 0. Run with 2-4 ranks.
 *
 * Phases (each a fresh set of messages, every byte checked):
 *  A  receives pre-posted (Irecv) before the sends, specific source/tag
 *  B  sender first (blocking Send and Isend mixed), receiver late (Recv)
 *  C  tags vary per message, receiver uses MPI_ANY_TAG: order still holds
 *  D  all senders, receiver uses MPI_ANY_SOURCE: per-sender order holds
 */
#include "check.h"

static const size_t sizes[] = {
	1, 4194304, 7, 65536, 0, 1048576, 13, 65537, 100, 262144, 4095,
	4096, 4097, 8192, 12345, 131072, 1, 2097152, 64, 65535, 2, 524288,
	3, 4194303,
};
#define NMSG ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define MAXSZ 4194304
#define TAG 5

static int rank, size;

static uint32_t seed_of(int src, int tag, int phase, int i)
{
	return pat_seed(src, 0, tag, phase * 1000 + i);
}

/* Sender side: all messages of a phase; @blocking_mix uses Send for odd i. */
static void send_phase(int phase, int tag_varies, int blocking_mix)
{
	MPI_Request *req = xmalloc(sizeof(*req) * NMSG);
	unsigned char **buf = xmalloc(sizeof(*buf) * NMSG);
	int i;

	for (i = 0; i < NMSG; i++) {
		int tag = tag_varies ? TAG + (i % 3) : TAG;

		buf[i] = xmalloc(sizes[i]);
		pat_fill(buf[i], sizes[i], seed_of(rank, tag, phase, i));
		req[i] = MPI_REQUEST_NULL;
		if (blocking_mix && (i & 1))
			MPI_CHECK(MPI_Send(buf[i], (int)sizes[i], MPI_BYTE, 0,
					   tag, MPI_COMM_WORLD));
		else
			MPI_CHECK(MPI_Isend(buf[i], (int)sizes[i], MPI_BYTE, 0,
					    tag, MPI_COMM_WORLD, &req[i]));
	}
	MPI_CHECK(MPI_Waitall(NMSG, req, MPI_STATUSES_IGNORE));
	for (i = 0; i < NMSG; i++) {
		CHECK(req[i] == MPI_REQUEST_NULL, "send request %d not freed", i);
		free(buf[i]);
	}
	free(buf);
	free(req);
}

static void check_msg(const unsigned char *buf, MPI_Status *st, int src,
		      int tag, int phase, int i)
{
	CHECK_STATUS(st, src, tag, (int)sizes[i], MPI_BYTE);
	CHECK(st->MPI_ERROR == MPI_SUCCESS || st->MPI_ERROR == (int)0xA5A5A5A5,
	      "phase %d msg %d: MPI_ERROR %d", phase, i, st->MPI_ERROR);
	CHECK_PAT(buf, sizes[i], seed_of(src, tag, phase, i),
		  "phase %c from %d msg %d (%zu bytes)", 'A' + phase, src, i,
		  sizes[i]);
}

/* A: receiver pre-posts every receive (one buffer each, max size). */
static void phase_a(void)
{
	const int phase = 0;
	int src, i;

	if (rank != 0) {
		MPI_Barrier(MPI_COMM_WORLD);
		send_phase(phase, 0, 0);
		return;
	}
	for (src = 1; src < size; src++) {
		MPI_Request req[NMSG];
		MPI_Status st[NMSG];
		unsigned char *buf[NMSG];

		for (i = 0; i < NMSG; i++) {
			/* Slack so a wrong message shows as a wrong count. */
			int cap = (int)sizes[i] + 4096;

			buf[i] = xmalloc(cap);
			status_poison(&st[i]);
			MPI_CHECK(MPI_Irecv(buf[i], cap, MPI_BYTE, src, TAG,
					    MPI_COMM_WORLD, &req[i]));
		}
		if (src == 1)
			MPI_Barrier(MPI_COMM_WORLD);
		MPI_CHECK(MPI_Waitall(NMSG, req, st));
		for (i = 0; i < NMSG; i++) {
			check_msg(buf[i], &st[i], src, TAG, phase, i);
			free(buf[i]);
		}
	}
}

/* B: senders go first; receiver sleeps, then receives in order. */
static void phase_b(void)
{
	const int phase = 1;
	unsigned char *buf;
	MPI_Status st;
	int src, i;

	if (rank != 0) {
		send_phase(phase, 0, 1);
		return;
	}
	buf = xmalloc(MAXSZ);
	sleep_ms(100);
	for (src = 1; src < size; src++)
		for (i = 0; i < NMSG; i++) {
			status_poison(&st);
			MPI_CHECK(MPI_Recv(buf, MAXSZ, MPI_BYTE, src, TAG,
					   MPI_COMM_WORLD, &st));
			check_msg(buf, &st, src, TAG, phase, i);
		}
	free(buf);
}

/* C: tag varies, receiver uses MPI_ANY_TAG from a specific source. */
static void phase_c(void)
{
	const int phase = 2;
	unsigned char *buf;
	MPI_Status st;
	int src, i;

	if (rank != 0) {
		send_phase(phase, 1, 0);
		return;
	}
	buf = xmalloc(MAXSZ);
	for (src = size - 1; src >= 1; src--)
		for (i = 0; i < NMSG; i++) {
			status_poison(&st);
			MPI_CHECK(MPI_Recv(buf, MAXSZ, MPI_BYTE, src,
					   MPI_ANY_TAG, MPI_COMM_WORLD, &st));
			check_msg(buf, &st, src, TAG + (i % 3), phase, i);
		}
	free(buf);
}

/* D: MPI_ANY_SOURCE: each sender's messages still arrive in order. */
static void phase_d(void)
{
	const int phase = 3;
	unsigned char *buf;
	int next[8] = { 0 };
	MPI_Status st;
	int n;

	if (rank != 0) {
		send_phase(phase, 0, 0);
		return;
	}
	buf = xmalloc(MAXSZ);
	for (n = 0; n < NMSG * (size - 1); n++) {
		int src;

		status_poison(&st);
		MPI_CHECK(MPI_Recv(buf, MAXSZ, MPI_BYTE, MPI_ANY_SOURCE, TAG,
				   MPI_COMM_WORLD, &st));
		src = st.MPI_SOURCE;
		CHECK(src >= 1 && src < size, "bad source %d", src);
		CHECK(next[src] < NMSG, "too many messages from %d", src);
		check_msg(buf, &st, src, TAG, phase, next[src]);
		next[src]++;
	}
	free(buf);
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "ordering", 2, &rank, &size);
	CHECK(size <= 8, "at most 8 ranks");
	phase_a();
	MPI_Barrier(MPI_COMM_WORLD);
	phase_b();
	MPI_Barrier(MPI_COMM_WORLD);
	phase_c();
	MPI_Barrier(MPI_COMM_WORLD);
	phase_d();
	return test_finish();
}
