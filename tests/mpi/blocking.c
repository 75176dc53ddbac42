// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Blocking point-to-point between ranks 0 and 1 (others only join the
 * barriers). Run with 2 (or 3) ranks.
 *
 *  1  Send / Recv ping-pong, 0 B .. 4 MiB, data changing per iteration;
 *     zero-byte receive with a NULL buffer; the largest tag (MPI_TAG_UB)
 *  2  Ssend / Issend are synchronous: the receiver posts its receive
 *     200 ms late and records the time (CLOCK_MONOTONIC, shared by all
 *     processes of the host); the Ssend must return, and Test on the
 *     Issend must stay false, until after that time, and >= 150 ms after
 *     the receiver left the barrier before its sleep
 *  3  Rsend / Irsend with the receive pre-posted before a barrier
 *  4  Bsend / Ibsend with MPI_Buffer_attach: they return before the
 *     receiver posts anything (the receiver sleeps 500 ms and records the
 *     time); MPI_Buffer_detach gives the buffer back
 *  5  PROC_NULL: Send / Recv / Sendrecv with PROC_NULL neighbours
 *  6  sends from read-only memory (mprotect PROT_READ), eager and large;
 *     one buffer in several outstanding sends at once; zero-byte Ssend
 *     with a NULL buffer
 */
#include <sys/mman.h>
#include "check.h"

static int rank, size;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_pingpong(void)
{
	static const int lens[] = { 0, 1, 100, 4096, 65535, 65536, 65537,
				    300000, 1 << 20, 4 << 20 };
	int i, it, tag_ub = 0, *tub, flag = 0;
	unsigned char *b = xmalloc(4 << 20);
	MPI_Status st;

	for (i = 0; i < 10; i++)
		for (it = 0; it < (lens[i] > 1 << 20 ? 2 : 4); it++) {
			int len = lens[i], tag = i * 10 + it;

			if (rank == 0) {
				pat_fill(b, len, pat_seed(0, 1, tag, it));
				MPI_CHECK(MPI_Send(b, len, MPI_BYTE, 1, tag,
						   MPI_COMM_WORLD));
				memset(b, 0, len);
				status_poison(&st);
				MPI_CHECK(MPI_Recv(b, 4 << 20, MPI_BYTE, 1, tag,
						   MPI_COMM_WORLD, &st));
				CHECK_STATUS(&st, 1, tag, len, MPI_BYTE);
				CHECK_PAT(b, len, pat_seed(1, 0, tag, it),
					  "pong %d B iteration %d", len, it);
			} else if (rank == 1) {
				status_poison(&st);
				MPI_CHECK(MPI_Recv(b, len, MPI_BYTE, 0, tag,
						   MPI_COMM_WORLD, &st));
				CHECK_STATUS(&st, 0, tag, len, MPI_BYTE);
				CHECK_PAT(b, len, pat_seed(0, 1, tag, it),
					  "ping %d B iteration %d", len, it);
				pat_fill(b, len, pat_seed(1, 0, tag, it));
				MPI_CHECK(MPI_Send(b, len, MPI_BYTE, 0, tag,
						   MPI_COMM_WORLD));
			}
		}
	/* Zero bytes into a NULL buffer; the largest tag. */
	MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tub, &flag));
	CHECK(flag, "no MPI_TAG_UB");
	tag_ub = *tub;
	if (rank == 0) {
		MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
		pat_fill(b, 33, pat_seed(0, 1, tag_ub, 0));
		MPI_CHECK(MPI_Send(b, 33, MPI_BYTE, 1, tag_ub, MPI_COMM_WORLD));
	} else if (rank == 1) {
		status_poison(&st);
		MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 0, 7, 0, MPI_BYTE);
		status_poison(&st);
		MPI_CHECK(MPI_Recv(b, 64, MPI_BYTE, 0, MPI_ANY_TAG,
				   MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 0, tag_ub, 33, MPI_BYTE);
		CHECK_PAT(b, 33, pat_seed(0, 1, tag_ub, 0), "tag MPI_TAG_UB");
	}
	free(b);
	MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * Ranks 0 and 1 on one host share CLOCK_MONOTONIC: their times are then
 * compared directly. Across hosts each counts from its own exit of a
 * barrier, which can differ by milliseconds on a loaded machine (a false
 * "completed before the receive was posted" of plain Open MPI, 2026-11-23).
 */
static int same_host;

static void find_same_host(void)
{
	char me[MPI_MAX_PROCESSOR_NAME] = "", other[MPI_MAX_PROCESSOR_NAME] = "";
	int len;

	MPI_CHECK(MPI_Get_processor_name(me, &len));
	if (rank == 0 || rank == 1) {
		MPI_CHECK(MPI_Sendrecv(me, sizeof(me), MPI_CHAR, 1 - rank, 89,
				       other, sizeof(other), MPI_CHAR, 1 - rank, 89,
				       MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		same_host = !strcmp(me, other);
	}
}

/* The time base of a timed test: 0 on one host, else the barrier's end. */
static double time_base(void)
{
	return same_host ? 0 : mono();
}

static void test_ssend(int len, int nonblocking)
{
	unsigned char *b = xmalloc(len);
	double t_post = 0, t_done, t0, t1[2] = { 0, 0 }, tb;
	MPI_Status st;

	MPI_Barrier(MPI_COMM_WORLD);
	/* times from the end of the barrier when the ranks are on two machines */
	tb = time_base();
	if (rank == 0) {
		pat_fill(b, len, pat_seed(0, 1, 90, len));
		t0 = mono() - tb;
		if (nonblocking) {
			MPI_Request rq;
			int flag = 0;

			MPI_CHECK(MPI_Issend(b, len, MPI_BYTE, 1, 90,
					     MPI_COMM_WORLD, &rq));
			while (!flag)
				MPI_CHECK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
		} else {
			MPI_CHECK(MPI_Ssend(b, len, MPI_BYTE, 1, 90,
					    MPI_COMM_WORLD));
		}
		t_done = mono() - tb;
		MPI_CHECK(MPI_Recv(t1, 2, MPI_DOUBLE, 1, 91, MPI_COMM_WORLD,
				   MPI_STATUS_IGNORE));
		t_post = t1[1];
		CHECK(t_done >= t_post, "%s of %d B completed %.1f ms before the "
		      "receiver posted its receive", nonblocking ? "Issend" :
		      "Ssend", len, (t_post - t_done) * 1e3);
		/*
		 * Elapsed from the receiver's leaving the barrier, so a late
		 * start of this rank cannot make it look short.
		 */
		CHECK(t_done - t1[0] >= 0.15, "%s of %d B returned %.1f ms after "
		      "the receiver left the barrier (it then slept 200 ms); "
		      "%.1f ms after our start", nonblocking ? "Issend" : "Ssend",
		      len, (t_done - t1[0]) * 1e3, (t_done - t0) * 1e3);
	} else if (rank == 1) {
		t1[0] = mono() - tb;
		sleep_ms(200);
		t_post = t1[1] = mono() - tb;
		status_poison(&st);
		MPI_CHECK(MPI_Recv(b, len, MPI_BYTE, 0, 90, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 0, 90, len, MPI_BYTE);
		CHECK_PAT(b, len, pat_seed(0, 1, 90, len), "Ssend data");
		(void)t_post;
		MPI_CHECK(MPI_Send(t1, 2, MPI_DOUBLE, 0, 91, MPI_COMM_WORLD));
	}
	free(b);
}

static void test_rsend(int len, int nonblocking)
{
	unsigned char *b = xmalloc(len);
	MPI_Request rq;
	MPI_Status st;

	if (rank == 1) {
		memset(b, 0, len);
		MPI_CHECK(MPI_Irecv(b, len, MPI_BYTE, 0, 92, MPI_COMM_WORLD, &rq));
		MPI_Barrier(MPI_COMM_WORLD);
		status_poison(&st);
		MPI_CHECK(MPI_Wait(&rq, &st));
		CHECK_STATUS(&st, 0, 92, len, MPI_BYTE);
		CHECK_PAT(b, len, pat_seed(0, 1, 92, len), "Rsend data");
	} else if (rank == 0) {
		pat_fill(b, len, pat_seed(0, 1, 92, len));
		MPI_Barrier(MPI_COMM_WORLD);
		if (nonblocking) {
			MPI_CHECK(MPI_Irsend(b, len, MPI_BYTE, 1, 92,
					     MPI_COMM_WORLD, &rq));
			MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		} else {
			MPI_CHECK(MPI_Rsend(b, len, MPI_BYTE, 1, 92,
					    MPI_COMM_WORLD));
		}
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
	}
	free(b);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test_bsend(void)
{
	static const int lens[] = { 10, 5000, 100000, 1 << 20 };
	enum { N = 4 };
	unsigned char *msg[N];
	int i, bsize = 0;
	double t_bar;

	for (i = 0; i < N; i++) {
		int s = 0;

		MPI_CHECK(MPI_Pack_size(lens[i], MPI_BYTE, MPI_COMM_WORLD, &s));
		bsize += s + MPI_BSEND_OVERHEAD;
		msg[i] = xmalloc(lens[i]);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	/* on two machines, from the end of this barrier on each (time_base()) */
	t_bar = time_base();
	if (rank == 0) {
		void *att = xmalloc(bsize), *det = NULL;
		double t_done, t_post = 0;
		MPI_Request rq;
		int dsize = 0;

		MPI_CHECK(MPI_Buffer_attach(att, bsize));
		for (i = 0; i < N; i++) {
			pat_fill(msg[i], lens[i], pat_seed(0, 1, 93 + i, 0));
			if (i == 2) {
				MPI_CHECK(MPI_Ibsend(msg[i], lens[i], MPI_BYTE, 1,
						     93 + i, MPI_COMM_WORLD, &rq));
				MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			} else {
				MPI_CHECK(MPI_Bsend(msg[i], lens[i], MPI_BYTE, 1,
						    93 + i, MPI_COMM_WORLD));
			}
			/* The data were copied: the user buffer is free. */
			memset(msg[i], 0xFF, lens[i]);
		}
		t_done = mono() - t_bar;
		MPI_CHECK(MPI_Buffer_detach(&det, &dsize));
		CHECK(det == att && dsize == bsize, "Buffer_detach gave %p %d, "
		      "attached %p %d", det, dsize, att, bsize);
		MPI_CHECK(MPI_Recv(&t_post, 1, MPI_DOUBLE, 1, 99, MPI_COMM_WORLD,
				   MPI_STATUS_IGNORE));
		CHECK(t_done < t_post, "Bsends returned only %.1f ms after the "
		      "receiver posted its first receive (it slept 500 ms)",
		      (t_done - t_post) * 1e3);
		free(att);
	} else if (rank == 1) {
		double t_post;
		MPI_Status st;

		sleep_ms(500);
		t_post = mono() - t_bar;
		/* Receive in reverse order. */
		for (i = N - 1; i >= 0; i--) {
			status_poison(&st);
			MPI_CHECK(MPI_Recv(msg[i], lens[i], MPI_BYTE, 0, 93 + i,
					   MPI_COMM_WORLD, &st));
			CHECK_STATUS(&st, 0, 93 + i, lens[i], MPI_BYTE);
			CHECK_PAT(msg[i], lens[i], pat_seed(0, 1, 93 + i, 0),
				  "Bsend message %d (%d B)", i, lens[i]);
		}
		MPI_CHECK(MPI_Send(&t_post, 1, MPI_DOUBLE, 0, 99,
				   MPI_COMM_WORLD));
	}
	for (i = 0; i < N; i++)
		free(msg[i]);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void check_proc_null(MPI_Status *st, const char *what)
{
	int cnt = -1;

	MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &cnt));
	CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG &&
	      cnt == 0, "%s: status source %d tag %d count %d", what,
	      st->MPI_SOURCE, st->MPI_TAG, cnt);
}

static void test_proc_null(void)
{
	unsigned char sb[300000], rb[300000];
	MPI_Status st;
	int lens[2] = { 50, 300000 }, i;

	memset(sb, 0x11, sizeof(sb));
	memset(rb, 0xAB, sizeof(rb));
	MPI_CHECK(MPI_Send(sb, 10, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
	MPI_CHECK(MPI_Ssend(sb, 10, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
	status_poison(&st);
	MPI_CHECK(MPI_Recv(rb, 10, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
			   &st));
	check_proc_null(&st, "Recv(PROC_NULL)");
	CHECK_FILL(rb, 10, 0xAB, "Recv(PROC_NULL) wrote the buffer");
	/* A chain 0 -> 1 with PROC_NULL at both ends. */
	for (i = 0; i < 2; i++) {
		int len = lens[i];
		int dst = rank == 0 ? 1 : MPI_PROC_NULL;
		int src = rank == 1 ? 0 : MPI_PROC_NULL;

		if (rank > 1)
			dst = src = MPI_PROC_NULL;
		pat_fill(sb, len, pat_seed(rank, dst, 95, i));
		memset(rb, 0xAB, len);
		status_poison(&st);
		MPI_CHECK(MPI_Sendrecv(sb, len, MPI_BYTE, dst, 95, rb, len,
				       MPI_BYTE, src, 95, MPI_COMM_WORLD, &st));
		if (src == MPI_PROC_NULL) {
			check_proc_null(&st, "Sendrecv from PROC_NULL");
			CHECK_FILL(rb, len, 0xAB, "Sendrecv from PROC_NULL wrote "
				   "the buffer");
		} else {
			CHECK_STATUS(&st, src, 95, len, MPI_BYTE);
			CHECK_PAT(rb, len, pat_seed(src, rank, 95, i), "Sendrecv "
				  "with a PROC_NULL destination");
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test_odd_buffers(void)
{
	static const int lens[] = { 100, 8192, 8193, 300000, 2 << 20 };
	size_t map = 2 << 20;
	unsigned char *ro, *rb = xmalloc(map);
	MPI_Request rq[4];
	MPI_Status st;
	int i, k;

	ro = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	CHECK(ro != MAP_FAILED, "mmap");
	pat_fill(ro, map, pat_seed(rank, 0, 97, 0));
	CHECK(!mprotect(ro, map, PROT_READ), "mprotect");
	for (i = 0; i < 5; i++) {
		int len = lens[i];

		if (rank == 0) {
			MPI_CHECK(MPI_Send(ro, len, MPI_BYTE, 1, 97,
					   MPI_COMM_WORLD));
			MPI_CHECK(MPI_Ssend(ro + 1, len - 1, MPI_BYTE, 1, 98,
					    MPI_COMM_WORLD));
		} else if (rank == 1) {
			status_poison(&st);
			MPI_CHECK(MPI_Recv(rb, len, MPI_BYTE, 0, 97,
					   MPI_COMM_WORLD, &st));
			CHECK_STATUS(&st, 0, 97, len, MPI_BYTE);
			CHECK_PAT(rb, len, pat_seed(0, 0, 97, 0), "send of %d B "
				  "from read-only memory", len);
			status_poison(&st);
			MPI_CHECK(MPI_Recv(rb, len, MPI_BYTE, 0, 98,
					   MPI_COMM_WORLD, &st));
			CHECK_STATUS(&st, 0, 98, len - 1, MPI_BYTE);
			for (k = 0; k < len - 1; k++)
				CHECK(rb[k] == pat_byte(pat_seed(0, 0, 97, 0),
							k + 1), "Ssend of %d B "
				      "from read-only memory: byte %d", len - 1,
				      k);
		}
	}
	/* One (read-only) buffer in four outstanding sends. */
	for (i = 0; i < 5; i++) {
		int len = lens[i];

		if (rank == 0) {
			for (k = 0; k < 4; k++)
				MPI_CHECK(MPI_Isend(ro, len, MPI_BYTE, 1, 100 + k,
						    MPI_COMM_WORLD, &rq[k]));
			MPI_CHECK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
		} else if (rank == 1) {
			for (k = 3; k >= 0; k--) {
				memset(rb, 0, len);
				status_poison(&st);
				MPI_CHECK(MPI_Recv(rb, len, MPI_BYTE, 0, 100 + k,
						   MPI_COMM_WORLD, &st));
				CHECK_STATUS(&st, 0, 100 + k, len, MPI_BYTE);
				CHECK_PAT(rb, len, pat_seed(0, 0, 97, 0),
					  "buffer sent 4 times at once, copy %d "
					  "(%d B)", k, len);
			}
		}
	}
	/* Zero bytes, synchronous, NULL buffer. */
	if (rank == 0) {
		MPI_CHECK(MPI_Ssend(NULL, 0, MPI_BYTE, 1, 104, MPI_COMM_WORLD));
		MPI_CHECK(MPI_Issend(NULL, 0, MPI_BYTE, 1, 105, MPI_COMM_WORLD,
				     &rq[0]));
		MPI_CHECK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	} else if (rank == 1) {
		status_poison(&st);
		MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, 104, MPI_COMM_WORLD,
				   &st));
		CHECK_STATUS(&st, 0, 104, 0, MPI_BYTE);
		status_poison(&st);
		MPI_CHECK(MPI_Recv(rb, 10, MPI_BYTE, 0, 105, MPI_COMM_WORLD,
				   &st));
		CHECK_STATUS(&st, 0, 105, 0, MPI_BYTE);
	}
	munmap(ro, map);
	free(rb);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "blocking", 2, &rank, &size);
	find_same_host();
	test_pingpong();
	test_ssend(8, 0);
	test_ssend(8, 1);
	test_ssend(1 << 20, 0);
	test_ssend(200000, 1);
	test_rsend(16, 0);
	test_rsend(16, 1);
	test_rsend(500000, 0);
	test_rsend(500000, 1);
	test_bsend();
	test_proc_null();
	test_odd_buffers();
	return test_finish();
}
