// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Nonblocking collectives against the blocking Open MPI result: every
 * call the shim hands to the module (MPI_Ibarrier, Ibcast, Iallreduce,
 * Ireduce, Ialltoall(v), Iallgather(v), Igather(v), Iscatter(v),
 * Ireduce_scatter(_block), Iscan, Iexscan) for random sizes, types, ops,
 * roots and MPI_IN_PLACE, on MPI_COMM_WORLD and on a split communicator;
 * several outstanding at once on one communicator, interleaved with
 * point-to-point traffic on it (a wildcard receive posted before them
 * must get the user's message, never a collective's), completed by
 * Waitall / Waitany / Waitsome / Testall / Testany / Testsome / Wait /
 * Request_get_status on arrays that mix collective, point-to-point and
 * Open MPI requests (a reduction with a user-defined op passes through).
 * The reference runs afterwards with the blocking calls (which stay with
 * Open MPI) on copies of the same inputs. Data are small integers, so
 * every sum and product is exact in every type.
 * Usage: coll_nb [batches] [seed]
 */
#include <stdbool.h>
#include "check.h"

enum kind { K_BARRIER, K_BCAST, K_ALLREDUCE, K_REDUCE, K_ALLTOALL, K_ALLGATHER, K_GATHER,
	    K_SCATTER, K_GATHERV, K_SCATTERV, K_ALLGATHERV, K_ALLTOALLV, K_RSCAT, K_RSCAT_BLOCK,
	    K_SCAN, K_EXSCAN, K_USEROP, K_NR };
static const char *const knames[] = {
	"Ibarrier", "Ibcast", "Iallreduce", "Ireduce", "Ialltoall", "Iallgather", "Igather",
	"Iscatter", "Igatherv", "Iscatterv", "Iallgatherv", "Ialltoallv", "Ireduce_scatter",
	"Ireduce_scatter_block", "Iscan", "Iexscan", "Iallreduce(user op)",
};

struct redt {
	MPI_Datatype type;
	MPI_Op op;
	int esize;
	int kind;	/* 0 int, 1 double, 2 float, 3 long, 4 uchar, 5 short, 6 2int, 7 double_int, 8 bool */
};

struct dint { double v; int i; };

struct cs {
	enum kind k;
	MPI_Comm comm;
	int n, rank, root, count;
	bool inplace;
	struct redt rt;
	MPI_Datatype mt;	/* data movement type */
	MPI_Aint mext;		/* its extent */
	int *counts, *displs, *scounts, *sdispls;
	size_t sbytes, rbytes;
	unsigned char *sb, *rb, *ref, *in;	/* in: sb's initial bytes (and rb's for in place) */
};

static MPI_Datatype vec_int;	/* two ints of every three: not one block */
static MPI_Op user_sum;

static void user_sum_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
	(void)t;
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
}

static int rnd(int n)
{
	return n > 0 ? rand() % n : 0;
}

static struct redt rand_redt(void)
{
	const struct { int kind; MPI_Op ops[8]; int nops; } choices[] = {
		{ 0, { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND }, 8 },
		{ 1, { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX }, 4 },
		{ 2, { MPI_SUM, MPI_MAX }, 2 },
		{ 3, { MPI_SUM, MPI_MAX, MPI_LOR }, 3 },
		{ 4, { MPI_BOR, MPI_SUM, MPI_BXOR }, 3 },
		{ 5, { MPI_MIN, MPI_SUM }, 2 },
		{ 6, { MPI_MINLOC, MPI_MAXLOC }, 2 },
		{ 7, { MPI_MAXLOC, MPI_MINLOC }, 2 },
		{ 8, { MPI_LOR, MPI_LAND, MPI_LXOR }, 3 },
	};
	const MPI_Datatype types[] = { MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_LONG,
				       MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_2INT,
				       MPI_DOUBLE_INT, MPI_C_BOOL };
	static const int sizes[] = { 4, 8, 4, 8, 1, 2, 8, 16, 1 };
	int c = rnd(9);
	struct redt rt = { .type = types[c], .op = choices[c].ops[rnd(choices[c].nops)],
			   .esize = sizes[c], .kind = c };
	return rt;
}

/* count reduction elements of rank r's input */
static void fill_red(const struct redt *rt, void *p, int count, int r, int salt)
{
	for (int e = 0; e < count; e++) {
		int v = 1 + (e * 7 + r * 3 + salt) % 3;

		switch (rt->kind) {
		case 0: ((int *)p)[e] = v; break;
		case 1: ((double *)p)[e] = v; break;
		case 2: ((float *)p)[e] = (float)v; break;
		case 3: ((long *)p)[e] = v; break;
		case 4: ((unsigned char *)p)[e] = (unsigned char)v; break;
		case 5: ((short *)p)[e] = (short)v; break;
		case 6: ((int *)p)[2 * e] = v; ((int *)p)[2 * e + 1] = r; break;
		case 7: ((struct dint *)p)[e] = (struct dint){ v, r }; break;
		case 8: ((unsigned char *)p)[e] = v == 2; break;
		}
	}
}

static int rand_count(int big)
{
	switch (rnd(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: case 3: case 4: return 1 + rnd(100);
	case 5: case 6: return 1 + rnd(3000);
	default: return big + rnd(big);
	}
}

static void setup(struct cs *c, enum kind k, MPI_Comm comm, int salt)
{
	int n, i;

	memset(c, 0, sizeof(*c));
	c->k = k;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &c->rank);
	c->comm = comm;
	c->n = n;
	c->root = rnd(n);
	c->inplace = rnd(3) == 0;
	c->rt = rand_redt();
	c->mt = rnd(4) ? (rnd(2) ? MPI_INT : MPI_BYTE) : vec_int;
	{
		MPI_Aint lb;

		MPI_Type_get_extent(c->mt, &lb, &c->mext);
	}
	c->counts = calloc(n, sizeof(int));
	c->displs = calloc(n, sizeof(int));
	c->scounts = calloc(n, sizeof(int));
	c->sdispls = calloc(n, sizeof(int));
	switch (c->k) {
	case K_BCAST:
		c->count = rand_count(20000);
		c->sbytes = c->rbytes = (size_t)c->count * c->mext;
		break;
	case K_ALLREDUCE: case K_REDUCE: case K_SCAN: case K_EXSCAN: case K_USEROP:
		c->count = rand_count(5000);
		if (c->k == K_USEROP)
			c->rt = (struct redt){ MPI_INT, user_sum, 4, 0 };
		c->sbytes = c->rbytes = (size_t)c->count * c->rt.esize;
		break;
	case K_RSCAT: case K_RSCAT_BLOCK: {
		int total = 0;

		c->count = rand_count(1500);
		for (i = 0; i < n; i++) {
			c->counts[i] = c->k == K_RSCAT_BLOCK ? c->count : rnd(c->count + 1);
			total += c->counts[i];
		}
		c->sbytes = c->rbytes = (size_t)total * c->rt.esize;
		break;
	}
	case K_ALLTOALL: case K_ALLGATHER: case K_GATHER: case K_SCATTER:
		c->count = rand_count(c->k == K_ALLTOALL ? 3000 : 2000);
		c->sbytes = c->rbytes = (size_t)c->count * n * c->mext;
		break;
	case K_GATHERV: case K_SCATTERV: case K_ALLGATHERV: case K_ALLTOALLV: {
		int off = 0, soff = 0;

		c->count = rand_count(1000);
		for (i = 0; i < n; i++) {
			/* a rank's share is known to all: a function of (salt, i, rank) */
			int a = c->rank, b = i;

			if (c->k == K_ALLTOALLV) {
				/* counts[i]: from i to me; scounts[i]: from me to i; symmetric */
				int lo = a < b ? a : b, hi = a < b ? b : a;

				c->counts[i] = c->count ? (lo * 31 + hi * 17 + salt) % (c->count + 1) : 0;
				c->scounts[i] = c->counts[i];
			} else {
				c->counts[i] = c->count ? (i * 13 + salt) % (c->count + 1) : 0;
				c->scounts[i] = c->counts[i];
			}
			off += rnd(3);
			soff += rnd(3);
			c->displs[i] = off;
			c->sdispls[i] = soff;
			off += c->counts[i];
			soff += c->scounts[i];
		}
		if (c->k == K_ALLTOALLV && c->inplace)
			memcpy(c->sdispls, c->displs, n * sizeof(int));
		c->rbytes = (size_t)(off + 1) * c->mext;
		c->sbytes = (size_t)((soff > off ? soff : off) + 1) * c->mext;
		break;
	}
	default:
		break;
	}
	c->sb = xmalloc(c->sbytes + 16);
	c->rb = xmalloc(c->rbytes + 16);
	c->ref = xmalloc(c->rbytes + 16);
	c->in = xmalloc(c->sbytes + c->rbytes + 32);
	pat_fill(c->sb, c->sbytes + 16, (uint32_t)(salt * 31 + c->rank));
	pat_fill(c->rb, c->rbytes + 16, (uint32_t)(salt * 77 + 5));
	if (c->k == K_ALLREDUCE || c->k == K_REDUCE || c->k == K_SCAN || c->k == K_EXSCAN ||
	    c->k == K_USEROP || c->k == K_RSCAT || c->k == K_RSCAT_BLOCK)
		fill_red(&c->rt, c->sb, (int)(c->sbytes / c->rt.esize), c->rank, salt);
	if (c->inplace) {
		/* the input where MPI_IN_PLACE takes it from */
		switch (c->k) {
		case K_ALLREDUCE: case K_SCAN: case K_EXSCAN: case K_RSCAT: case K_RSCAT_BLOCK:
		case K_ALLTOALL: case K_USEROP:
			memcpy(c->rb, c->sb, c->rbytes);
			break;
		case K_REDUCE:
			if (c->rank == c->root)
				memcpy(c->rb, c->sb, c->rbytes);
			break;
		case K_ALLTOALLV:
			memcpy(c->rb, c->sb, c->rbytes);
			break;
		case K_ALLGATHER:
			memcpy(c->rb + (size_t)c->rank * c->count * c->mext, c->sb,
			       (size_t)c->count * c->mext);
			break;
		case K_GATHER:
			if (c->rank == c->root)
				memcpy(c->rb + (size_t)c->rank * c->count * c->mext, c->sb,
				       (size_t)c->count * c->mext);
			break;
		case K_ALLGATHERV:
			memcpy(c->rb + (size_t)c->displs[c->rank] * c->mext, c->sb,
			       (size_t)c->counts[c->rank] * c->mext);
			break;
		case K_GATHERV:
			if (c->rank == c->root)
				memcpy(c->rb + (size_t)c->displs[c->rank] * c->mext, c->sb,
				       (size_t)c->counts[c->rank] * c->mext);
			break;
		default:
			break;
		}
	}
	memcpy(c->in, c->sb, c->sbytes);
	memcpy(c->in + c->sbytes, c->rb, c->rbytes);
}

#define SB(c) ((c)->inplace ? MPI_IN_PLACE : (void *)(c)->sb)
#define SB_ROOT(c) ((c)->inplace && (c)->rank == (c)->root ? MPI_IN_PLACE : (void *)(c)->sb)
#define RB_ROOT(c) ((c)->inplace && (c)->rank == (c)->root ? MPI_IN_PLACE : (void *)(c)->rb)

/* Start the nonblocking call (blocking: the reference, into the same buffers). */
static void run_case(struct cs *c, MPI_Request *req, bool blocking)
{
	MPI_Comm m = c->comm;
	MPI_Datatype t = c->mt, rt = c->rt.type;
	int cnt = c->count;

#define CALL(nb, b) MPI_CHECK(blocking ? (b) : (nb))
	switch (c->k) {
	case K_BARRIER:
		CALL(MPI_Ibarrier(m, req), MPI_Barrier(m));
		break;
	case K_BCAST:
		CALL(MPI_Ibcast(c->rb, cnt, t, c->root, m, req),
		     MPI_Bcast(c->rb, cnt, t, c->root, m));
		break;
	case K_ALLREDUCE: case K_USEROP:
		CALL(MPI_Iallreduce(SB(c), c->rb, cnt, rt, c->rt.op, m, req),
		     MPI_Allreduce(SB(c), c->rb, cnt, rt, c->rt.op, m));
		break;
	case K_REDUCE:
		CALL(MPI_Ireduce(SB_ROOT(c), c->rb, cnt, rt, c->rt.op, c->root, m, req),
		     MPI_Reduce(SB_ROOT(c), c->rb, cnt, rt, c->rt.op, c->root, m));
		break;
	case K_SCAN:
		CALL(MPI_Iscan(SB(c), c->rb, cnt, rt, c->rt.op, m, req),
		     MPI_Scan(SB(c), c->rb, cnt, rt, c->rt.op, m));
		break;
	case K_EXSCAN:
		CALL(MPI_Iexscan(SB(c), c->rb, cnt, rt, c->rt.op, m, req),
		     MPI_Exscan(SB(c), c->rb, cnt, rt, c->rt.op, m));
		break;
	case K_RSCAT:
		CALL(MPI_Ireduce_scatter(SB(c), c->rb, c->counts, rt, c->rt.op, m, req),
		     MPI_Reduce_scatter(SB(c), c->rb, c->counts, rt, c->rt.op, m));
		break;
	case K_RSCAT_BLOCK:
		CALL(MPI_Ireduce_scatter_block(SB(c), c->rb, cnt, rt, c->rt.op, m, req),
		     MPI_Reduce_scatter_block(SB(c), c->rb, cnt, rt, c->rt.op, m));
		break;
	case K_ALLTOALL:
		CALL(MPI_Ialltoall(SB(c), cnt, t, c->rb, cnt, t, m, req),
		     MPI_Alltoall(SB(c), cnt, t, c->rb, cnt, t, m));
		break;
	case K_ALLGATHER:
		CALL(MPI_Iallgather(SB(c), cnt, t, c->rb, cnt, t, m, req),
		     MPI_Allgather(SB(c), cnt, t, c->rb, cnt, t, m));
		break;
	case K_GATHER:
		CALL(MPI_Igather(SB_ROOT(c), cnt, t, c->rb, cnt, t, c->root, m, req),
		     MPI_Gather(SB_ROOT(c), cnt, t, c->rb, cnt, t, c->root, m));
		break;
	case K_SCATTER:
		CALL(MPI_Iscatter(c->sb, cnt, t, RB_ROOT(c), cnt, t, c->root, m, req),
		     MPI_Scatter(c->sb, cnt, t, RB_ROOT(c), cnt, t, c->root, m));
		break;
	case K_GATHERV:
		CALL(MPI_Igatherv(SB_ROOT(c), c->counts[c->rank], t, c->rb, c->counts, c->displs, t,
				  c->root, m, req),
		     MPI_Gatherv(SB_ROOT(c), c->counts[c->rank], t, c->rb, c->counts, c->displs, t,
				 c->root, m));
		break;
	case K_SCATTERV:
		CALL(MPI_Iscatterv(c->sb, c->scounts, c->sdispls, t, RB_ROOT(c), c->counts[c->rank],
				   t, c->root, m, req),
		     MPI_Scatterv(c->sb, c->scounts, c->sdispls, t, RB_ROOT(c), c->counts[c->rank],
				  t, c->root, m));
		break;
	case K_ALLGATHERV:
		CALL(MPI_Iallgatherv(SB(c), c->counts[c->rank], t, c->rb, c->counts, c->displs, t,
				     m, req),
		     MPI_Allgatherv(SB(c), c->counts[c->rank], t, c->rb, c->counts, c->displs, t,
				    m));
		break;
	case K_ALLTOALLV:
		CALL(MPI_Ialltoallv(SB(c), c->scounts, c->sdispls, t, c->rb, c->counts, c->displs, t,
				    m, req),
		     MPI_Alltoallv(SB(c), c->scounts, c->sdispls, t, c->rb, c->counts, c->displs, t,
				   m));
		break;
	case K_NR:
		break;
	}
#undef CALL
}

/* Whether the receive buffer of this rank holds a defined result. */
static bool significant(const struct cs *c)
{
	switch (c->k) {
	case K_BARRIER: return false;
	case K_REDUCE: case K_GATHER: case K_GATHERV: return c->rank == c->root;
	case K_EXSCAN: return c->rank != 0;
	case K_SCATTER: case K_SCATTERV: return !(c->inplace && c->rank == c->root);
	default: return true;
	}
}

static bool reduction(const struct cs *c)
{
	return c->k == K_ALLREDUCE || c->k == K_REDUCE || c->k == K_SCAN || c->k == K_EXSCAN ||
	       c->k == K_RSCAT || c->k == K_RSCAT_BLOCK;
}

/* After the nonblocking run: the reference on the same inputs, then compare. */
static void check_case(struct cs *c, int batch)
{
	unsigned char *got = xmalloc(c->rbytes + 16);

	memcpy(got, c->rb, c->rbytes);
	CHECK(!memcmp(c->sb, c->in, c->sbytes) || (c->inplace && c->k == K_ALLTOALLV),
	      "batch %d %s wrote its send buffer", batch, knames[c->k]);
	memcpy(c->sb, c->in, c->sbytes);
	memcpy(c->rb, c->in + c->sbytes, c->rbytes);
	run_case(c, NULL, true);
	if (significant(c)) {
		size_t cmp = c->rbytes;

		/* the result part only: the rest of rb is unspecified for these */
		if (c->k == K_RSCAT || c->k == K_RSCAT_BLOCK)
			cmp = (size_t)c->counts[c->rank] * c->rt.esize;
		for (size_t i = 0; i < cmp; i++)
			/* MPI_DOUBLE_INT: the 4 bytes after the int are padding, undefined */
			CHECK(got[i] == c->rb[i] || (reduction(c) && c->rt.kind == 7 && i % 16 >= 12),
			      "batch %d %s n=%d count %d root %d in place %d type %s / reduction type %d: byte %zu of %zu is %d, blocking gives %d",
			      batch, knames[c->k], c->n, c->count, c->root, c->inplace,
			      c->mt == vec_int ? "vector" : "plain", c->rt.kind, i, cmp, got[i],
			      c->rb[i]);
	}
	free(got);
	free(c->sb);
	free(c->rb);
	free(c->ref);
	free(c->in);
	free(c->counts);
	free(c->displs);
	free(c->scounts);
	free(c->sdispls);
}

/* Complete reqs[0..n) with a randomly chosen call family. */
static void complete_all(MPI_Request *reqs, int n, int how)
{
	int left = n, idx, flag, outc, *outs = malloc(sizeof(int) * n);
	MPI_Status *st = malloc(sizeof(MPI_Status) * n);

	switch (how) {
	case 0:
		MPI_CHECK(MPI_Waitall(n, reqs, st));
		break;
	case 1:
		while (left) {
			MPI_CHECK(MPI_Waitany(n, reqs, &idx, st));
			CHECK(idx != MPI_UNDEFINED && reqs[idx] == MPI_REQUEST_NULL, "waitany");
			left--;
		}
		break;
	case 2:
		while (left) {
			MPI_CHECK(MPI_Waitsome(n, reqs, &outc, outs, st));
			left -= outc;
		}
		break;
	case 3:
		do
			MPI_CHECK(MPI_Testall(n, reqs, &flag, st));
		while (!flag);
		break;
	case 4:
		while (left) {
			MPI_CHECK(MPI_Testany(n, reqs, &idx, &flag, st));
			if (flag && idx != MPI_UNDEFINED)
				left--;
		}
		break;
	case 5:
		while (left) {
			MPI_CHECK(MPI_Testsome(n, reqs, &outc, outs, st));
			left -= outc;
		}
		break;
	default:
		for (int i = n - 1; i >= 0; i--) {
			do
				MPI_CHECK(MPI_Request_get_status(reqs[i], &flag, st));
			while (!flag);
			MPI_CHECK(MPI_Wait(&reqs[i], st));
		}
		break;
	}
	for (int i = 0; i < n; i++)
		CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed by completion", i);
	free(outs);
	free(st);
}

#define MAXC 4

int main(int argc, char **argv)
{
	int rank, size, batches, seed, wr, ws;
	MPI_Comm split;

	test_init(&argc, &argv, "coll_nb", 1, &wr, &ws);
	batches = argc > 1 ? atoi(argv[1]) : 60;
	seed = argc > 2 ? atoi(argv[2]) : 2026;
	MPI_Type_vector(2, 1, 2, MPI_INT, &vec_int);
	MPI_Type_commit(&vec_int);
	MPI_Op_create(user_sum_fn, 1, &user_sum);
	/* the odd ranks and the even ones: communicators of other sizes */
	MPI_Comm_split(MPI_COMM_WORLD, wr % 2, -wr, &split);
	for (int b = 0; b < batches; b++) {
		MPI_Comm comm = b % 3 == 2 ? split : MPI_COMM_WORLD;
		struct cs cs[MAXC];
		MPI_Request reqs[MAXC + 2];
		int nc, nr = 0, sendv, recvv = -1;

		MPI_Comm_rank(comm, &rank);
		MPI_Comm_size(comm, &size);
		/* every rank of comm draws the same cases */
		srand((unsigned int)(seed * 1000 + b * 7 + (comm == split ? wr % 2 : 0)));
		nc = 1 + rnd(MAXC);
		/* a wildcard receive before the collectives: only the user's message matches */
		MPI_CHECK(MPI_Irecv(&recvv, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm,
				    &reqs[nr++]));
		for (int i = 0; i < nc; i++) {
			setup(&cs[i], (enum kind)rnd(K_NR), comm, b * 10 + i);
			run_case(&cs[i], &reqs[nr++], false);
		}
		sendv = b * 1000 + rank;
		MPI_CHECK(MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % size, b, comm, &reqs[nr++]));
		complete_all(reqs, nr, rnd(7));
		CHECK(recvv == b * 1000 + (rank + size - 1) % size,
		      "batch %d: the wildcard receive got %d", b, recvv);
		for (int i = 0; i < nc; i++)
			check_case(&cs[i], b);
	}
	MPI_Comm_free(&split);
	MPI_Op_free(&user_sum);
	MPI_Type_free(&vec_int);
	return test_finish();
}
