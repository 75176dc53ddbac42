// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Communicators: ranks, statuses and matching are per communicator.
 * Run with 4 (or 2-4) ranks.
 *
 *  1  MPI_Comm_dup: ring exchange
 *  2  MPI_Comm_split odd/even with reversed key (ranks permuted): ring
 *     exchange, status MPI_SOURCE is the rank in the new communicator,
 *     payload names the world rank, checked by MPI_Group_translate_ranks
 *  3  MPI_Comm_create from a permuted group (not all ranks): ANY_SOURCE
 *     receives report communicator ranks; MPI_COMM_NULL outside
 *  4  MPI_Cart_create (2-D, one dimension periodic) + MPI_Cart_shift halo
 *     exchange with MPI_Sendrecv (MPI_PROC_NULL at the open edges) and
 *     MPI_Sendrecv_replace
 *  5  identical (source, tag) on WORLD, a dup and the split communicator
 *     at the same time: each message lands in its own communicator, also
 *     with ANY_SOURCE / ANY_TAG receives posted in either order
 *  6  MPI_Comm_free and recreate 20 times, messages on each
 *  7  MPI_COMM_SELF and WORLD send-to-self, eager and large
 *  8  MPI_Comm_idup (a constructor the shim may not wrap): ring on it,
 *     with a message on WORLD with the same (source, tag) in flight
 */
#include "check.h"

static int rank, size;

struct hdr {
	int32_t world_src, comm_src, tag, iter;
};

/* len >= 16: header then pattern */
static void fill_msg(unsigned char *b, int len, int comm_src, int tag,
		     int iter)
{
	struct hdr h = { rank, comm_src, tag, iter };

	pat_fill(b, len, pat_seed(rank, comm_src, tag, iter));
	memcpy(b, &h, sizeof(h));
}

static void check_msg(const unsigned char *b, int len, MPI_Status *st,
		      MPI_Comm comm, int want_src, int tag, int iter,
		      const char *what)
{
	struct hdr h;
	MPI_Group cg, wg;
	int wsrc = -1, cnt = -1;

	MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &cnt));
	CHECK(cnt == len, "%s: count %d, expected %d", what, cnt, len);
	CHECK(want_src == MPI_ANY_SOURCE || st->MPI_SOURCE == want_src,
	      "%s: status source %d, expected %d", what, st->MPI_SOURCE,
	      want_src);
	CHECK(st->MPI_TAG == tag, "%s: status tag %d, expected %d", what,
	      st->MPI_TAG, tag);
	memcpy(&h, b, sizeof(h));
	MPI_Comm_group(comm, &cg);
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Group_translate_ranks(cg, 1, &st->MPI_SOURCE, wg, &wsrc);
	MPI_Group_free(&cg);
	MPI_Group_free(&wg);
	CHECK(h.world_src == wsrc && h.tag == tag && h.iter == iter,
	      "%s: message from world rank %d (tag %d iter %d), but status "
	      "source %d is world rank %d (tag %d iter %d)", what, h.world_src,
	      h.tag, h.iter, st->MPI_SOURCE, wsrc, tag, iter);
	CHECK_PAT_FROM(b, sizeof(h), (size_t)len,
		       pat_seed(h.world_src, h.comm_src, tag, iter), "%s", what);
}

/* Ring exchange in @comm: to rank+1, from rank-1, eager and large. */
static void ring(MPI_Comm comm, int iter, const char *what)
{
	static const int lens[] = { 16, 1000, 200000 };
	int r, n, i;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &n);
	for (i = 0; i < 3; i++) {
		int len = lens[i], next = (r + 1) % n, prev = (r + n - 1) % n;
		unsigned char *sb = xmalloc(len), *rb = xmalloc(len);
		MPI_Request rq[2];
		MPI_Status st[2];

		fill_msg(sb, len, r, 40 + i, iter);
		status_poison(&st[0]);
		MPI_CHECK(MPI_Irecv(rb, len, MPI_BYTE, prev, 40 + i, comm, &rq[0]));
		MPI_CHECK(MPI_Isend(sb, len, MPI_BYTE, next, 40 + i, comm, &rq[1]));
		MPI_CHECK(MPI_Waitall(2, rq, st));
		check_msg(rb, len, &st[0], comm, prev, 40 + i, iter, what);
		free(sb);
		free(rb);
	}
}

static void test_dup(void)
{
	MPI_Comm dup;
	int r, n;

	MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_Comm_rank(dup, &r);
	MPI_Comm_size(dup, &n);
	CHECK(r == rank && n == size, "dup rank %d size %d", r, n);
	ring(dup, 1, "dup ring");
	MPI_CHECK(MPI_Comm_free(&dup));
	CHECK(dup == MPI_COMM_NULL, "Comm_free did not null the handle");
}

static MPI_Comm split_comm(void)
{
	MPI_Comm c;
	int r, n, want_n, want_r, k;

	MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &c));
	MPI_Comm_rank(c, &r);
	MPI_Comm_size(c, &n);
	want_n = (size - rank % 2 + 1) / 2;
	/* Reversed key: the highest world rank of the color is rank 0. */
	want_r = 0;
	for (k = rank + 2; k < size; k += 2)
		want_r++;
	CHECK(n == want_n && r == want_r, "split: rank %d size %d, expected "
	      "%d %d", r, n, want_r, want_n);
	return c;
}

static void test_split(void)
{
	MPI_Comm c = split_comm();

	ring(c, 2, "split ring");
	MPI_CHECK(MPI_Comm_free(&c));
}

static void test_create(void)
{
	MPI_Group wg, g;
	MPI_Comm c;
	int ranks[4], n = 0, k;

	/* World ranks size-1, .., 1 (not 0) in reverse; 2 ranks: {1, 0}. */
	if (size == 2) {
		ranks[n++] = 1;
		ranks[n++] = 0;
	} else {
		for (k = size - 1; k >= 1; k--)
			ranks[n++] = k;
	}
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_CHECK(MPI_Group_incl(wg, n, ranks, &g));
	MPI_CHECK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
	if (size > 2 && rank == 0) {
		CHECK(c == MPI_COMM_NULL, "rank 0 not in the group but got a "
		      "communicator");
	} else {
		int r, m, i;

		CHECK(c != MPI_COMM_NULL, "member got MPI_COMM_NULL");
		MPI_Comm_rank(c, &r);
		MPI_Comm_size(c, &m);
		for (k = 0; k < n; k++)
			if (ranks[k] == rank)
				break;
		CHECK(r == k && m == n, "create: rank %d size %d, expected %d "
		      "%d", r, m, k, n);
		ring(c, 3, "create ring");
		/* Everyone sends to comm rank 0, which uses ANY_SOURCE. */
		if (r == 0) {
			unsigned char b[64];
			int seen[4] = { 0 };

			for (i = 1; i < m; i++) {
				MPI_Status st;

				status_poison(&st);
				MPI_CHECK(MPI_Recv(b, 64, MPI_BYTE, MPI_ANY_SOURCE,
						   MPI_ANY_TAG, c, &st));
				CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < m &&
				      !seen[st.MPI_SOURCE], "create: ANY_SOURCE "
				      "status source %d", st.MPI_SOURCE);
				seen[st.MPI_SOURCE] = 1;
				check_msg(b, 20 + st.MPI_SOURCE, &st, c,
					  st.MPI_SOURCE, 50, 3, "create "
					  "ANY_SOURCE");
			}
		} else {
			unsigned char b[64];

			fill_msg(b, 20 + r, r, 50, 3);
			MPI_CHECK(MPI_Send(b, 20 + r, MPI_BYTE, 0, 50, c));
		}
		MPI_CHECK(MPI_Comm_free(&c));
	}
	MPI_Group_free(&g);
	MPI_Group_free(&wg);
}

static void test_cart(void)
{
	int dims[2] = { 0, 0 }, periods[2] = { 1, 0 }, coords[2], r, d;
	MPI_Comm cart;

	MPI_CHECK(MPI_Dims_create(size, 2, dims));
	MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart));
	MPI_Comm_rank(cart, &r);
	MPI_CHECK(MPI_Cart_coords(cart, r, 2, coords));
	for (d = 0; d < 2; d++) {
		int disp, src, dst;

		for (disp = -1; disp <= 1; disp += 2) {
			unsigned char sb[600], rb[600 + 16];
			MPI_Status st;
			int len = 500 + d * 10 + (disp > 0), tag = 60 + d;

			MPI_CHECK(MPI_Cart_shift(cart, d, disp, &src, &dst));
			fill_msg(sb, len, r, tag, disp + 10);
			memset(rb, 0xEE, sizeof(rb));
			status_poison(&st);
			MPI_CHECK(MPI_Sendrecv(sb, len, MPI_BYTE, dst, tag, rb,
					       sizeof(rb), MPI_BYTE, src, tag, cart,
					       &st));
			if (src == MPI_PROC_NULL) {
				int cnt = -1;

				MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &cnt));
				CHECK(st.MPI_SOURCE == MPI_PROC_NULL &&
				      st.MPI_TAG == MPI_ANY_TAG && cnt == 0,
				      "cart: PROC_NULL neighbour status source "
				      "%d tag %d count %d", st.MPI_SOURCE,
				      st.MPI_TAG, cnt);
				CHECK_FILL(rb, sizeof(rb), 0xEE, "cart: receive "
					   "from PROC_NULL wrote the buffer");
			} else {
				check_msg(rb, len, &st, cart, src, tag, disp + 10,
					  "cart Sendrecv");
				CHECK_FILL(rb + len, sizeof(rb) - len, 0xEE,
					   "cart: tail");
			}
			/* Same with Sendrecv_replace. */
			fill_msg(rb, len, r, tag, disp + 20);
			status_poison(&st);
			MPI_CHECK(MPI_Sendrecv_replace(rb, len, MPI_BYTE, dst,
						       tag, src, tag, cart, &st));
			if (src == MPI_PROC_NULL) {
				CHECK(st.MPI_SOURCE == MPI_PROC_NULL,
				      "cart: Sendrecv_replace from PROC_NULL "
				      "status source %d", st.MPI_SOURCE);
				CHECK_PAT_FROM(rb, sizeof(struct hdr), len,
					       pat_seed(rank, r, tag, disp + 20),
					       "cart: Sendrecv_replace from "
					       "PROC_NULL changed the buffer");
			} else
				check_msg(rb, len, &st, cart, src, tag,
					  disp + 20, "cart Sendrecv_replace");
		}
	}
	MPI_CHECK(MPI_Comm_free(&cart));
}

/*
 * Same (source, tag) on three communicators at once. World rank 1 sends
 * to world rank 0 on WORLD, on a dup of WORLD and on the split comm (if 0
 * and 1 share it, else rank 2 -> 0); receives are posted in every order.
 */
static void test_cross(void)
{
	MPI_Comm dup, split;
	int it;

	MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	split = split_comm();	/* even ranks: world 0 and 2 */
	for (it = 0; it < 6; it++) {
		int sr, split_peer_world = size > 2 ? 2 : -1;

		MPI_Comm_rank(split, &sr);
		if (rank == 0) {
			unsigned char b[3][4096];
			MPI_Request rq[3];
			MPI_Status st[3];
			MPI_Comm comms[3] = { MPI_COMM_WORLD, dup, split };
			int order[3], k, n = split_peer_world >= 0 ? 3 : 2;
			int wild = it >= 3, split_src;

			/* World rank 2 is split rank 0 (reversed key), 0 is 1. */
			split_src = 0;
			for (k = 0; k < 3; k++)
				order[k] = (k + it) % 3;
			for (k = 0; k < 3; k++) {
				int c = order[k];

				rq[c] = MPI_REQUEST_NULL;
				status_poison(&st[c]);
				if (c == 2 && n < 3)
					continue;
				MPI_CHECK(MPI_Irecv(b[c], sizeof(b[c]), MPI_BYTE,
						    wild ? MPI_ANY_SOURCE :
						    c == 2 ? split_src : 1,
						    wild ? MPI_ANY_TAG : 70,
						    comms[c], &rq[c]));
			}
			MPI_Barrier(MPI_COMM_WORLD);
			MPI_CHECK(MPI_Waitall(3, rq, st));
			check_msg(b[0], 100 + it, &st[0], MPI_COMM_WORLD, 1, 70,
				  it, "WORLD message");
			check_msg(b[1], 200 + it, &st[1], dup, 1, 70, it,
				  "dup message");
			if (n == 3)
				check_msg(b[2], 300 + it, &st[2], split, split_src,
					  70, it, "split message");
		} else {
			unsigned char b[3][400];

			MPI_Barrier(MPI_COMM_WORLD);
			if (rank == 1) {
				/* Send order rotates too. */
				int k;

				for (k = 0; k < 2; k++) {
					int c = (k + it) % 2;

					fill_msg(b[c], (c + 1) * 100 + it,
						 1, 70, it);
					MPI_CHECK(MPI_Send(b[c], (c + 1) * 100 + it,
							   MPI_BYTE, 0, 70,
							   c ? dup : MPI_COMM_WORLD));
				}
			} else if (rank == split_peer_world) {
				fill_msg(b[2], 300 + it, sr, 70, it);
				MPI_CHECK(MPI_Send(b[2], 300 + it, MPI_BYTE, 1, 70,
						   split));
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_CHECK(MPI_Comm_free(&dup));
	MPI_CHECK(MPI_Comm_free(&split));
}

static void test_recreate(void)
{
	int it;

	for (it = 0; it < 20; it++) {
		MPI_Comm c;

		if (it % 2)
			MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
		else
			MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0,
						 (rank + it) % size, &c));
		ring(c, 100 + it, "recreated communicator ring");
		MPI_CHECK(MPI_Comm_free(&c));
	}
}

static void test_self(void)
{
	static const int lens[] = { 16, 5000, 1 << 20 };
	MPI_Comm comms[2] = { MPI_COMM_SELF, MPI_COMM_WORLD };
	int c, i;

	for (c = 0; c < 2; c++)
		for (i = 0; i < 3; i++) {
			int len = lens[i], me = c ? rank : 0;
			unsigned char *sb = xmalloc(len), *rb = xmalloc(len);
			MPI_Request rq;
			MPI_Status st;

			fill_msg(sb, len, me, 80 + i, c);
			MPI_CHECK(MPI_Isend(sb, len, MPI_BYTE, me, 80 + i, comms[c],
					    &rq));
			status_poison(&st);
			MPI_CHECK(MPI_Recv(rb, len, MPI_BYTE, MPI_ANY_SOURCE, 80 + i,
					   comms[c], &st));
			check_msg(rb, len, &st, comms[c], me, 80 + i, c,
				  c ? "WORLD send-to-self" : "SELF send-to-self");
			MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			/* Sendrecv with oneself. */
			status_poison(&st);
			MPI_CHECK(MPI_Sendrecv(sb, len, MPI_BYTE, me, 80 + i, rb,
					       len, MPI_BYTE, me, 80 + i, comms[c],
					       &st));
			check_msg(rb, len, &st, comms[c], me, 80 + i, c,
				  "Sendrecv with self");
			free(sb);
			free(rb);
		}
}

static void test_idup(void)
{
	MPI_Comm c;
	MPI_Request rq;
	unsigned char sb[100], rb[100];
	MPI_Status st;
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;

	/* A WORLD message with tag 40 waits while the idup'd ring runs. */
	fill_msg(sb, 100, rank, 40, 999);
	MPI_CHECK(MPI_Isend(sb, 100, MPI_BYTE, next, 40, MPI_COMM_WORLD, &rq));
	{
		MPI_Request ir;

		MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &c, &ir));
		MPI_CHECK(MPI_Wait(&ir, MPI_STATUS_IGNORE));
	}
	ring(c, 200, "idup ring");
	status_poison(&st);
	MPI_CHECK(MPI_Recv(rb, 100, MPI_BYTE, prev, 40, MPI_COMM_WORLD, &st));
	check_msg(rb, 100, &st, MPI_COMM_WORLD, prev, 40, 999,
		  "WORLD message during the idup ring");
	MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	MPI_CHECK(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "comms", 2, &rank, &size);
	CHECK(size <= 4, "at most 4 ranks");
	test_dup();
	test_split();
	test_create();
	test_cart();
	test_cross();
	test_recreate();
	test_self();
	test_idup();
	return test_finish();
}
