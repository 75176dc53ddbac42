// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Request arrays that mix point-to-point requests on MPI_COMM_WORLD (the
 * shim's) with requests that only Open MPI knows: MPI_Ibarrier,
 * MPI_Ibcast, point-to-point on an inter-communicator (the shim passes it
 * through) and a generalized request (MPI_Grequest_start, completed by
 * MPI_Grequest_complete), plus MPI_REQUEST_NULL entries. Completed in
 * every way: Waitall (with statuses and with MPI_STATUSES_IGNORE), Waitany
 * loop, Waitsome loop, Testall / Testany / Testsome polling,
 * MPI_Request_get_status polling. Also MPI_Request_free on an active send,
 * and the all-null array cases. Run with 2 or 4 ranks (even).
 */
#include "check.h"

enum {
	W_RECV, W_SEND, NUL1, BARRIER, BCAST, I_RECV, I_SEND, GREQ, W_RECV2,
	NUL2, W_SEND2, NSLOT
};

#define BCAST_N 1000
#define GREQ_SRC 1234
#define GREQ_TAG 4321
#define GREQ_ELEMS 42

static int rank, size, next, prev;
static MPI_Comm inter;
static int inter_rank, inter_remote;
static int greq_freed, greq_queried;

static int greq_query(void *extra, MPI_Status *st)
{
	(void)extra;
	greq_queried++;
	MPI_Status_set_elements(st, MPI_BYTE, GREQ_ELEMS);
	MPI_Status_set_cancelled(st, 0);
	st->MPI_SOURCE = GREQ_SRC;
	st->MPI_TAG = GREQ_TAG;
	return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
	(void)extra;
	greq_freed++;
	return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
	(void)extra;
	(void)complete;
	return MPI_SUCCESS;
}

static int wlen(int round, int slot)
{
	/* Eager and rendezvous sizes alternate with the round. */
	if (slot == W_RECV || slot == W_SEND)
		return round % 2 ? 200000 + round : 100 + round;
	if (slot == W_RECV2 || slot == W_SEND2)
		return round % 3 ? 64 : 70000;
	return 5000 + round;	/* intercomm */
}

struct round {
	MPI_Request rq[NSLOT];
	MPI_Status st[NSLOT];
	unsigned char *buf[NSLOT];
	int bc[BCAST_N];
	int done[NSLOT];
	int greq_completed;
};

static void start_round(struct round *r, int round)
{
	int k, root = round % size;

	memset(r->done, 0, sizeof(r->done));
	for (k = 0; k < NSLOT; k++) {
		r->rq[k] = MPI_REQUEST_NULL;
		r->buf[k] = NULL;
		status_poison(&r->st[k]);
	}
	r->buf[W_RECV] = xmalloc(wlen(round, W_RECV));
	r->buf[W_SEND] = xmalloc(wlen(round, W_SEND));
	r->buf[I_RECV] = xmalloc(wlen(round, I_RECV));
	r->buf[I_SEND] = xmalloc(wlen(round, I_SEND));
	r->buf[W_RECV2] = xmalloc(wlen(round, W_RECV2));
	r->buf[W_SEND2] = xmalloc(wlen(round, W_SEND2));
	pat_fill(r->buf[W_SEND], wlen(round, W_SEND),
		 pat_seed(rank, next, 1, round));
	pat_fill(r->buf[W_SEND2], wlen(round, W_SEND2),
		 pat_seed(rank, prev, 2, round));
	pat_fill(r->buf[I_SEND], wlen(round, I_SEND),
		 pat_seed(rank, inter_remote, 3, round));
	for (k = 0; k < BCAST_N; k++)
		r->bc[k] = rank == root ? round * 100000 + k : -1;

	MPI_CHECK(MPI_Irecv(r->buf[W_RECV], wlen(round, W_RECV), MPI_BYTE, prev,
			    1, MPI_COMM_WORLD, &r->rq[W_RECV]));
	MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &r->rq[BARRIER]));
	MPI_CHECK(MPI_Irecv(r->buf[I_RECV], wlen(round, I_RECV), MPI_BYTE,
			    inter_rank, 3, inter, &r->rq[I_RECV]));
	MPI_CHECK(MPI_Isend(r->buf[W_SEND], wlen(round, W_SEND), MPI_BYTE, next,
			    1, MPI_COMM_WORLD, &r->rq[W_SEND]));
	MPI_CHECK(MPI_Ibcast(r->bc, BCAST_N, MPI_INT, root, MPI_COMM_WORLD,
			     &r->rq[BCAST]));
	MPI_CHECK(MPI_Irecv(r->buf[W_RECV2], wlen(round, W_RECV2), MPI_BYTE,
			    MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &r->rq[W_RECV2]));
	MPI_CHECK(MPI_Isend(r->buf[I_SEND], wlen(round, I_SEND), MPI_BYTE,
			    inter_rank, 3, inter, &r->rq[I_SEND]));
	MPI_CHECK(MPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL,
				     &r->rq[GREQ]));
	r->greq_completed = 0;
	MPI_CHECK(MPI_Isend(r->buf[W_SEND2], wlen(round, W_SEND2), MPI_BYTE,
			    prev, 2, MPI_COMM_WORLD, &r->rq[W_SEND2]));
}

static void complete_greq(struct round *r)
{
	if (!r->greq_completed) {
		MPI_CHECK(MPI_Grequest_complete(r->rq[GREQ]));
		r->greq_completed = 1;
	}
}

/* Checks data and (if @statuses) the statuses of all slots. */
static void check_round(struct round *r, int round, int statuses,
			int null_statuses, const char *how)
{
	int k, el = -1;

	for (k = 0; k < NSLOT; k++)
		CHECK(r->rq[k] == MPI_REQUEST_NULL, "%s round %d: slot %d not "
		      "MPI_REQUEST_NULL after completion", how, round, k);
	CHECK_PAT(r->buf[W_RECV], wlen(round, W_RECV),
		  pat_seed(prev, rank, 1, round), "%s round %d world recv", how,
		  round);
	CHECK_PAT(r->buf[W_RECV2], wlen(round, W_RECV2),
		  pat_seed(next, rank, 2, round), "%s round %d world recv 2",
		  how, round);
	CHECK_PAT(r->buf[I_RECV], wlen(round, I_RECV),
		  pat_seed(inter_remote, rank, 3, round), "%s round %d "
		  "intercomm recv", how, round);
	for (k = 0; k < BCAST_N; k++)
		CHECK(r->bc[k] == round * 100000 + k, "%s round %d: "
		      "Ibcast element %d is %d", how, round, k, r->bc[k]);
	if (statuses) {
		CHECK_STATUS(&r->st[W_RECV], prev, 1, wlen(round, W_RECV),
			     MPI_BYTE);
		CHECK_STATUS(&r->st[W_RECV2], next, 2, wlen(round, W_RECV2),
			     MPI_BYTE);
		CHECK_STATUS(&r->st[I_RECV], inter_rank, 3,
			     wlen(round, I_RECV), MPI_BYTE);
		MPI_CHECK(MPI_Get_elements(&r->st[GREQ], MPI_BYTE, &el));
		CHECK(r->st[GREQ].MPI_SOURCE == GREQ_SRC &&
		      r->st[GREQ].MPI_TAG == GREQ_TAG && el == GREQ_ELEMS,
		      "%s round %d: generalized request status source %d tag "
		      "%d elements %d", how, round, r->st[GREQ].MPI_SOURCE,
		      r->st[GREQ].MPI_TAG, el);
	}
	if (null_statuses) {
		CHECK_EMPTY_STATUS(&r->st[NUL1]);
		CHECK_EMPTY_STATUS(&r->st[NUL2]);
	}
	CHECK(greq_freed == round + 1, "%s round %d: grequest free_fn called "
	      "%d times in all", how, round, greq_freed);
	for (k = 0; k < NSLOT; k++)
		free(r->buf[k]);
}

static void mark_done(struct round *r, int idx, MPI_Status *st, int round,
		      const char *how)
{
	CHECK(idx >= 0 && idx < NSLOT, "%s round %d: index %d", how, round,
	      idx);
	CHECK(idx != NUL1 && idx != NUL2, "%s round %d: index %d is a "
	      "MPI_REQUEST_NULL slot", how, round, idx);
	CHECK(!r->done[idx], "%s round %d: slot %d completed twice", how,
	      round, idx);
	CHECK(r->rq[idx] == MPI_REQUEST_NULL, "%s round %d: slot %d reported "
	      "complete but its handle is not MPI_REQUEST_NULL", how, round, idx);
	r->done[idx] = 1;
	if (st)
		r->st[idx] = *st;
}

static int ndone(struct round *r)
{
	int k, n = 0;

	for (k = 0; k < NSLOT; k++)
		n += r->done[k];
	return n;
}

#define NREAL (NSLOT - 2)

static void all_null_cases(void)
{
	MPI_Request rq[3] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL,
			      MPI_REQUEST_NULL };
	MPI_Status st[3];
	int idx = 5, flag = 0, out = 5, ind[3];

	status_poison(&st[0]);
	MPI_CHECK(MPI_Waitany(3, rq, &idx, &st[0]));
	CHECK(idx == MPI_UNDEFINED, "Waitany(all null) index %d", idx);
	CHECK_EMPTY_STATUS(&st[0]);
	idx = 5;
	status_poison(&st[0]);
	MPI_CHECK(MPI_Testany(3, rq, &idx, &flag, &st[0]));
	CHECK(idx == MPI_UNDEFINED && flag, "Testany(all null) index %d flag "
	      "%d", idx, flag);
	CHECK_EMPTY_STATUS(&st[0]);
	MPI_CHECK(MPI_Waitsome(3, rq, &out, ind, st));
	CHECK(out == MPI_UNDEFINED, "Waitsome(all null) outcount %d", out);
	out = 5;
	MPI_CHECK(MPI_Testsome(3, rq, &out, ind, st));
	CHECK(out == MPI_UNDEFINED, "Testsome(all null) outcount %d", out);
	flag = 0;
	MPI_CHECK(MPI_Testall(3, rq, &flag, st));
	CHECK(flag, "Testall(all null) flag 0");
	MPI_CHECK(MPI_Waitall(3, rq, st));
	MPI_CHECK(MPI_Waitall(0, rq, MPI_STATUSES_IGNORE));
	flag = 0;
	MPI_CHECK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st[0]));
	CHECK(flag, "Request_get_status(MPI_REQUEST_NULL) flag 0");
	CHECK_EMPTY_STATUS(&st[0]);
}

static void run_round(int round)
{
	struct round r;
	const char *how = "?";
	int mode = round % 8;

	start_round(&r, round);
	switch (mode) {
	case 0:
		how = "Waitall";
		complete_greq(&r);
		MPI_CHECK(MPI_Waitall(NSLOT, r.rq, r.st));
		break;
	case 1:
		how = "Waitall(STATUSES_IGNORE)";
		complete_greq(&r);
		MPI_CHECK(MPI_Waitall(NSLOT, r.rq, MPI_STATUSES_IGNORE));
		break;
	case 2:
		how = "Waitany";
		while (ndone(&r) < NREAL) {
			MPI_Status st;
			int idx = -7;

			status_poison(&st);
			MPI_CHECK(MPI_Waitany(NSLOT, r.rq, &idx, &st));
			mark_done(&r, idx, &st, round, how);
			complete_greq(&r);
		}
		break;
	case 3:
		how = "Waitsome";
		while (ndone(&r) < NREAL) {
			MPI_Status st[NSLOT];
			int ind[NSLOT], out = -7, i;

			MPI_CHECK(MPI_Waitsome(NSLOT, r.rq, &out, ind, st));
			CHECK(out >= 1 && out <= NREAL - ndone(&r), "%s outcount "
			      "%d with %d pending", how, out, NREAL - ndone(&r));
			for (i = 0; i < out; i++)
				mark_done(&r, ind[i], &st[i], round, how);
			complete_greq(&r);
		}
		break;
	case 4: {
		int flag = 0, polls = 0;

		how = "Testall";
		while (!flag) {
			MPI_CHECK(MPI_Testall(NSLOT, r.rq, &flag, r.st));
			if (++polls == 3)
				complete_greq(&r);
			if (!flag) {
				int k;

				for (k = 0; k < NSLOT; k++)
					CHECK(r.rq[k] != MPI_REQUEST_NULL ||
					      k == NUL1 || k == NUL2, "%s flag 0 "
					      "but slot %d freed", how, k);
			}
		}
		break;
	}
	case 5: {
		int polls = 0;

		how = "Testany";
		while (ndone(&r) < NREAL) {
			MPI_Status st;
			int idx = -7, flag = -1;

			status_poison(&st);
			MPI_CHECK(MPI_Testany(NSLOT, r.rq, &idx, &flag, &st));
			CHECK(flag == 0 || flag == 1, "Testany flag %d", flag);
			if (flag) {
				CHECK(idx != MPI_UNDEFINED, "Testany flag 1, index "
				      "MPI_UNDEFINED with %d pending",
				      NREAL - ndone(&r));
				mark_done(&r, idx, &st, round, how);
			} else {
				CHECK(idx == MPI_UNDEFINED, "Testany flag 0 with "
				      "index %d", idx);
			}
			if (++polls == 3)
				complete_greq(&r);
		}
		break;
	}
	case 6: {
		int polls = 0;

		how = "Testsome";
		while (ndone(&r) < NREAL) {
			MPI_Status st[NSLOT];
			int ind[NSLOT], out = -7, i;

			MPI_CHECK(MPI_Testsome(NSLOT, r.rq, &out, ind, st));
			CHECK(out >= 0 && out <= NREAL - ndone(&r), "%s outcount "
			      "%d with %d pending", how, out, NREAL - ndone(&r));
			for (i = 0; i < out; i++)
				mark_done(&r, ind[i], &st[i], round, how);
			if (++polls == 3)
				complete_greq(&r);
		}
		break;
	}
	case 7: {
		int k, polls = 0, left = NREAL;

		how = "Request_get_status";
		while (left) {
			for (k = 0; k < NSLOT; k++) {
				int flag = 0;
				MPI_Status st;

				if (r.done[k] || k == NUL1 || k == NUL2)
					continue;
				MPI_CHECK(MPI_Request_get_status(r.rq[k], &flag,
								 &st));
				CHECK(r.rq[k] != MPI_REQUEST_NULL, "%s freed "
				      "slot %d", how, k);
				if (flag) {
					r.done[k] = 1;
					left--;
					r.st[k] = st;
				}
			}
			if (++polls == 3)
				complete_greq(&r);
		}
		/* The requests still exist: Waitall frees them. */
		{
			MPI_Status st2[NSLOT];

			MPI_CHECK(MPI_Waitall(NSLOT, r.rq, st2));
			CHECK_STATUS(&st2[W_RECV], prev, 1,
				     wlen(round, W_RECV), MPI_BYTE);
			CHECK_STATUS(&st2[W_RECV2], next, 2,
				     wlen(round, W_RECV2), MPI_BYTE);
		}
		break;
	}
	}
	if (mode >= 2 && mode != 4)
		CHECK(ndone(&r) == NREAL, "%s: %d completed", how, ndone(&r));
	check_round(&r, round, mode != 1, mode == 0 || mode == 4, how);
}

/* MPI_Request_free on an active send: the message still arrives. */
static void free_active_send(void)
{
	static const int lens[] = { 10, 100000, 1 << 20 };
	unsigned char *sb[3], *rb;
	MPI_Request rq;
	MPI_Status st;
	int i;

	for (i = 0; i < 3; i++) {
		sb[i] = xmalloc(lens[i]);
		pat_fill(sb[i], lens[i], pat_seed(rank, next, 7, i));
		MPI_CHECK(MPI_Isend(sb[i], lens[i], MPI_BYTE, next, 7,
				    MPI_COMM_WORLD, &rq));
		MPI_CHECK(MPI_Request_free(&rq));
		CHECK(rq == MPI_REQUEST_NULL, "Request_free left the handle");
	}
	rb = xmalloc(1 << 20);
	for (i = 0; i < 3; i++) {
		status_poison(&st);
		MPI_CHECK(MPI_Recv(rb, 1 << 20, MPI_BYTE, prev, 7,
				   MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, prev, 7, lens[i], MPI_BYTE);
		CHECK_PAT(rb, lens[i], pat_seed(prev, rank, 7, i), "message of a "
			  "freed active send (%d B)", lens[i]);
	}
	/* Our receiver got everything: the send buffers may go now. */
	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < 3; i++)
		free(sb[i]);
	free(rb);
}

int main(int argc, char **argv)
{
	MPI_Comm local;
	int color, round, rsize;

	test_init(&argc, &argv, "mixed", 2, &rank, &size);
	CHECK(size % 2 == 0, "needs an even number of ranks");
	next = (rank + 1) % size;
	prev = (rank + size - 1) % size;
	color = rank % 2;
	MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local));
	MPI_CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77,
				       &inter));
	MPI_CHECK(MPI_Comm_remote_size(inter, &rsize));
	MPI_CHECK(MPI_Comm_rank(inter, &inter_rank));
	CHECK(rsize == size / 2, "remote size %d", rsize);
	/* Local rank i talks to remote rank i: world rank i*2 + 1-color. */
	inter_remote = inter_rank * 2 + 1 - color;

	all_null_cases();
	for (round = 0; round < 24; round++)
		run_round(round);
	CHECK(greq_queried >= 1, "grequest query_fn called %d times",
	      greq_queried);
	free_active_send();
	MPI_Comm_free(&inter);
	MPI_Comm_free(&local);
	return test_finish();
}
