// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Many outstanding requests. Run with 3 (or 2-4) ranks.
 *
 *  1  every rank posts ~5000 Irecvs and ~5000 Isends to / from all peers
 *     (sizes 0 B .. 2 KiB, every 97th 100 KiB; only 50 tags so many
 *     messages share (source, tag) and must match in order), half the
 *     ranks receives first, half sends first; one Waitall; all checked
 *  2  more than 1024 completions pending at once before any Wait (the
 *     completion ring overflow path): rank 0 pre-posts 3000 Irecvs, rank 1
 *     sends 3000 Issends; both sleep so the completions pile up, then
 *     drain with Testsome / Waitall
 *  3  flood of unexpected messages: rank 1 sends 3000 messages before rank
 *     0 posts anything (eager quota exhausted), then rank 0 receives
 *  4  more operations outstanding than the module's default max_ops
 *     (16384): rank 0 pre-posts 17000 tiny Irecvs (tag i % 3, every 5th
 *     MPI_ANY_TAG) and then a blocking Recv, rank 1 has 17001 Isends
 *     outstanding; receive i must get message i (posts the shim defers
 *     must keep their order), the blocking Recv the last one
 *  5  ranks 0 and 1 both first post 17000 Irecvs (more than max_ops) and
 *     only then 17000 Isends to each other: a legal program that deadlocks
 *     if the receives take every slot and the sends wait behind them
 */
#include "check.h"

#define NTAG 50

static int rank, size;
static int cur_round;	/* of `many PHASES ROUNDS`, for the messages */

static int msg_len(int i)
{
	if (i % 97 == 13)
		return 100 * 1024 + i % 7;
	return (i * 37) % 2049;
}

static void phase1(void)
{
	int per_peer = 5000 / (size - 1), npeer = size - 1;
	int n = per_peer * npeer, k, i, p;
	MPI_Request *rq = xmalloc(sizeof(*rq) * 2 * n);
	MPI_Status *st = xmalloc(sizeof(*st) * 2 * n);
	unsigned char **rb = xmalloc(sizeof(*rb) * n), **sb = xmalloc(sizeof(*sb) * n);
	int *rsrc = xmalloc(sizeof(int) * n), *ridx = xmalloc(sizeof(int) * n);
	int recv_first = rank % 2 == 0;

	for (k = 0; k < 2 * n; k++)
		status_poison(&st[k]);
	for (int pass = 0; pass < 2; pass++) {
		int do_recv = (pass == 0) == recv_first;

		k = 0;
		/* Peers interleaved: message i to each peer, then i + 1. */
		for (i = 0; i < per_peer; i++)
			for (p = 1; p < size; p++, k++) {
				int peer = (rank + p) % size, len = msg_len(i);

				if (do_recv) {
					int src = (rank + size - p) % size;

					len = msg_len(i);
					rb[k] = xmalloc(len);
					rsrc[k] = src;
					ridx[k] = i;
					MPI_CHECK(MPI_Irecv(rb[k], len, MPI_BYTE, src,
							    i % NTAG,
							    MPI_COMM_WORLD,
							    &rq[k]));
				} else {
					sb[k] = xmalloc(len);
					pat_fill(sb[k], len,
						 pat_seed(rank, peer, i % NTAG, i));
					MPI_CHECK(MPI_Isend(sb[k], len, MPI_BYTE,
							    peer, i % NTAG,
							    MPI_COMM_WORLD,
							    &rq[n + k]));
				}
			}
	}
	MPI_CHECK(MPI_Waitall(2 * n, rq, st));
	for (k = 0; k < n; k++) {
		int len = msg_len(ridx[k]);

		CHECK(rq[k] == MPI_REQUEST_NULL && rq[n + k] == MPI_REQUEST_NULL,
		      "phase 1: request %d not freed", k);
		CHECK_STATUS(&st[k], rsrc[k], ridx[k] % NTAG, len, MPI_BYTE);
		CHECK_PAT(rb[k], len, pat_seed(rsrc[k], rank, ridx[k] % NTAG,
			  ridx[k]), "phase 1: message %d from %d", ridx[k],
			  rsrc[k]);
		free(rb[k]);
		free(sb[k]);
	}
	free(rq);
	free(st);
	free(rb);
	free(sb);
	free(rsrc);
	free(ridx);
}

#define N2 3000

static int len2(int i)
{
	return i % 100 == 50 ? 70000 : 1 + i % 64;
}

static void check_recv2(unsigned char *b, MPI_Status *st, int i, int phase)
{
	CHECK_STATUS(st, 1, i % NTAG, len2(i), MPI_BYTE);
	CHECK_PAT(b, len2(i), pat_seed(1, 0, i % NTAG, i + phase * N2),
		  "phase %d: message %d", phase, i);
}

static unsigned char **alloc_bufs(int n, int sender, int phase)
{
	unsigned char **b = xmalloc(sizeof(*b) * n);
	int i;

	for (i = 0; i < n; i++) {
		b[i] = xmalloc(len2(i));
		if (sender)
			pat_fill(b[i], len2(i), pat_seed(1, 0, i % NTAG,
				 i + phase * N2));
	}
	return b;
}

static void free_bufs(unsigned char **b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(b[i]);
	free(b);
}

static void phase2(void)
{
	MPI_Request *rq = xmalloc(sizeof(*rq) * N2);
	MPI_Status *st = xmalloc(sizeof(*st) * N2);
	int *ind = xmalloc(sizeof(int) * N2);
	unsigned char *early = calloc(N2, 1), **b;
	int i, done = 0;

	if (rank > 1) {
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		goto out;
	}
	b = alloc_bufs(N2, rank == 1, 2);
	if (rank == 0)
		for (i = 0; i < N2; i++)
			MPI_CHECK(MPI_Irecv(b[i], len2(i), MPI_BYTE, 1, i % NTAG,
					    MPI_COMM_WORLD, &rq[i]));
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1)
		for (i = 0; i < N2; i++)
			MPI_CHECK(MPI_Issend(b[i], len2(i), MPI_BYTE, 0,
					     i % NTAG, MPI_COMM_WORLD, &rq[i]));
	/* Under kprog the transfers finish in the kernel meanwhile. */
	sleep_ms(300);
	MPI_Barrier(MPI_COMM_WORLD);
	sleep_ms(100);
	/* Drain part with Testsome, the rest with Waitall. */
	while (done < N2 / 2) {
		int out = -1;

		MPI_CHECK(MPI_Testsome(N2, rq, &out, ind, st));
		CHECK(out != MPI_UNDEFINED && out >= 0, "Testsome outcount %d",
		      out);
		for (i = 0; i < out; i++) {
			CHECK(rq[ind[i]] == MPI_REQUEST_NULL, "Testsome did not "
			      "free request %d", ind[i]);
			CHECK(!early[ind[i]], "Testsome returned %d twice",
			      ind[i]);
			early[ind[i]] = 1;
			if (rank == 0)
				check_recv2(b[ind[i]], &st[i], ind[i], 2);
		}
		done += out;
	}
	for (i = 0; i < N2; i++)
		status_poison(&st[i]);
	MPI_CHECK(MPI_Waitall(N2, rq, st));
	for (i = 0; i < N2; i++) {
		if (early[i])
			CHECK_EMPTY_STATUS(&st[i]);
		else if (rank == 0)
			check_recv2(b[i], &st[i], i, 2);
	}
	for (i = 0; i < N2; i++)
		CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
	/* Every receive was checked: by Testsome, or now by content. */
	if (rank == 0)
		for (i = 0; i < N2; i++)
			CHECK_PAT(b[i], len2(i), pat_seed(1, 0, i % NTAG, i + 2 * N2),
				  "phase 2: message %d", i);
	free_bufs(b, N2);
out:
	free(rq);
	free(st);
	free(ind);
	free(early);
}

static void phase3(void)
{
	MPI_Request *rq = xmalloc(sizeof(*rq) * N2);
	MPI_Status *st = xmalloc(sizeof(*st) * N2);
	unsigned char **b;
	int i;

	if (rank > 1) {
		MPI_Barrier(MPI_COMM_WORLD);
		goto out;
	}
	b = alloc_bufs(N2, rank == 1, 3);
	if (rank == 1) {
		for (i = 0; i < N2; i++)
			MPI_CHECK(MPI_Isend(b[i], len2(i), MPI_BYTE, 0, i % NTAG,
					    MPI_COMM_WORLD, &rq[i]));
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_CHECK(MPI_Waitall(N2, rq, MPI_STATUSES_IGNORE));
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		sleep_ms(200);
		/* Tags in reverse order, within each tag in order. */
		for (int t = NTAG - 1; t >= 0; t--)
			for (i = t; i < N2; i += NTAG) {
				status_poison(&st[i]);
				MPI_CHECK(MPI_Irecv(b[i], len2(i), MPI_BYTE, 1, t,
						    MPI_COMM_WORLD, &rq[i]));
			}
		MPI_CHECK(MPI_Waitall(N2, rq, st));
		for (i = 0; i < N2; i++)
			check_recv2(b[i], &st[i], i, 3);
	}
	free_bufs(b, N2);
out:
	free(rq);
	free(st);
}

#define N4 17000

static void phase4(void)
{
	int32_t *buf;
	MPI_Request *rq;
	MPI_Status st;
	int i;

	if (rank > 1)
		return;
	buf = xmalloc(sizeof(*buf) * (N4 + 1));
	rq = xmalloc(sizeof(*rq) * (N4 + 1));
	if (rank == 1) {
		for (i = 0; i <= N4; i++) {
			buf[i] = i ^ 0x5a5a0000;
			MPI_CHECK(MPI_Isend(&buf[i], 1, MPI_INT32_T, 0, i % 3,
					    MPI_COMM_WORLD, &rq[i]));
		}
		MPI_CHECK(MPI_Waitall(N4 + 1, rq, MPI_STATUSES_IGNORE));
	} else {
		int32_t last = -1;
		MPI_Status *sts = xmalloc(sizeof(*sts) * N4);

		for (i = 0; i < N4; i++) {
			buf[i] = -1;
			MPI_CHECK(MPI_Irecv(&buf[i], 1, MPI_INT32_T, 1,
					    i % 5 == 4 ? MPI_ANY_TAG : i % 3,
					    MPI_COMM_WORLD, &rq[i]));
		}
		status_poison(&st);
		MPI_CHECK(MPI_Recv(&last, 1, MPI_INT32_T, 1, MPI_ANY_TAG,
				   MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, N4 % 3, 1, MPI_INT32_T);
		CHECK(last == (N4 ^ 0x5a5a0000), "phase 4: blocking Recv after "
		      "%d posted receives got message %d", N4,
		      last ^ 0x5a5a0000);
		MPI_CHECK(MPI_Waitall(N4, rq, sts));
		for (i = 0; i < N4; i++) {
			CHECK(buf[i] == (i ^ 0x5a5a0000), "phase 4 (round %d): "
			      "receive %d got message %d", cur_round, i,
			      buf[i] ^ 0x5a5a0000);
			CHECK_STATUS(&sts[i], 1, i % 3, 1, MPI_INT32_T);
		}
		free(sts);
	}
	free(buf);
	free(rq);
}

static void phase5(void)
{
	int32_t *rb, *sb;
	MPI_Request *rq;
	MPI_Status *st;
	int i, peer = 1 - rank;

	if (rank > 1)
		return;
	rb = xmalloc(sizeof(*rb) * N4);
	sb = xmalloc(sizeof(*sb) * N4);
	rq = xmalloc(sizeof(*rq) * 2 * N4);
	st = xmalloc(sizeof(*st) * 2 * N4);
	for (i = 0; i < N4; i++) {
		rb[i] = -1;
		MPI_CHECK(MPI_Irecv(&rb[i], 1, MPI_INT32_T, peer, i % 7,
				    MPI_COMM_WORLD, &rq[i]));
	}
	for (i = 0; i < N4; i++) {
		sb[i] = i * 2 + rank;
		MPI_CHECK(MPI_Isend(&sb[i], 1, MPI_INT32_T, peer, i % 7,
				    MPI_COMM_WORLD, &rq[N4 + i]));
	}
	MPI_CHECK(MPI_Waitall(2 * N4, rq, st));
	for (i = 0; i < N4; i++) {
		CHECK(rb[i] == i * 2 + peer, "phase 5 (round %d): receive %d "
		      "got %d, expected %d", cur_round, i, rb[i], i * 2 + peer);
		CHECK_STATUS(&st[i], peer, i % 7, 1, MPI_INT32_T);
	}
	free(rb);
	free(sb);
	free(rq);
	free(st);
}

/*
 * many [PHASES [ROUNDS]]: only the phases named (digits, default "12345"),
 * ROUNDS times over (default 1); e.g. `many 45 50` repeats phases 4 and 5.
 */
int main(int argc, char **argv)
{
	static void (*const phases[])(void) = { phase1, phase2, phase3, phase4, phase5 };
	const char *which = "12345", *p;
	int rounds = 1, round;

	test_init(&argc, &argv, "many", 2, &rank, &size);
	if (argc > 1)
		which = argv[1];
	if (argc > 2)
		rounds = atoi(argv[2]);
	for (p = which; *p; p++)
		CHECK(*p >= '1' && *p <= '5', "many: no phase '%c'", *p);
	for (round = 0; round < rounds; round++)
		for (p = which, cur_round = round; *p; p++) {
			if (p != which || round)
				MPI_Barrier(MPI_COMM_WORLD);
			if (*p >= '1' && *p <= '5')
				phases[*p - '1']();
		}
	return test_finish();
}
