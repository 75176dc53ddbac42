// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The collectives of libshim/coll_neighbor.c and coll_persist.c against
 * Open MPI's blocking result: MPI_Ialltoallw (MPI_IN_PLACE too) on
 * MPI_COMM_WORLD and a split communicator, MPI_Ineighbor_allgather(v) and
 * MPI_Ineighbor_alltoall(v/w) on Cartesian communicators (1 to 3
 * dimensions, periodic or not; periodic ones of size 1 and 2 only under
 * the shim, see main()), a
 * graph, distributed graphs (a random multigraph with self-loops made by
 * MPI_Dist_graph_create, a ring by MPI_Dist_graph_create_adjacent, and a
 * duplicate of the first), MPI_Ibarrier (rank 1 must not see its barrier
 * complete before rank 0 entered, which waits for rank 1's message), for
 * random counts and per-rank datatypes of the same signature (int, a
 * vector of ints, pairs of ints), several outstanding at once with
 * point-to-point traffic (a wildcard receive posted first must get the
 * user's message) and an Open MPI request (a user-op reduction) in the
 * same Waitall / Waitany / Waitsome / Testall / Testany / Testsome.
 * Then Open MPI's persistent collectives (MPIX_*_init): each started
 * five times with new data, with persistent point-to-point requests in one
 * MPI_Startall, compared after every start, then freed.
 * Usage: coll_more [batches] [seed]
 */
#include <limits.h>
#include <stdbool.h>
#include <unistd.h>
#include "check.h"
#include <mpi-ext.h>	/* MPIX_*_init; after mpi.h */

enum kind { K_BARRIER, K_ALLTOALLW, K_NAG, K_NAGV, K_NA2A, K_NA2AV, K_NA2AW, K_USEROP, K_NR };
static const char *const knames[] = {
	"Ibarrier", "Ialltoallw", "Ineighbor_allgather", "Ineighbor_allgatherv",
	"Ineighbor_alltoall", "Ineighbor_alltoallv", "Ineighbor_alltoallw", "Iallreduce(user op)",
};

/* Three ways to write k ints (k even): int x k, vector x k/2, pair x k/2. */
#define NREP 3
static MPI_Datatype reps[NREP];
static MPI_Aint rep_ext[NREP];
static const int rep_per[NREP] = { 1, 2, 2 };
static MPI_Op user_sum;
static unsigned int own_seed;	/* per-rank choices; rand() is the same on every rank */

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

static int own(int n)
{
	return n > 0 ? rand_r(&own_seed) % n : 0;
}

/* ints on the k-th edge (occ) from u to v, even, known to both ends */
static int edge_ints(int u, int v, int occ, int salt, int big)
{
	unsigned int h = (unsigned int)(u * 7919 + v * 104729 + occ * 31 + salt * 13);

	h ^= h >> 7;
	return 2 * (int)(h % (unsigned int)(big + 1));
}

struct nbrs {
	int nin, nout, *in, *out;
};

static void get_nbrs(MPI_Comm comm, struct nbrs *nb)
{
	int topo, nd, rank, w;

	MPI_Comm_rank(comm, &rank);
	MPI_CHECK(MPI_Topo_test(comm, &topo));
	if (topo == MPI_CART) {
		MPI_Cartdim_get(comm, &nd);
		nb->nin = nb->nout = 2 * nd;
		nb->in = calloc(2 * nd + 1, sizeof(int));
		nb->out = calloc(2 * nd + 1, sizeof(int));
		for (int d = 0; d < nd; d++)
			MPI_CHECK(MPI_Cart_shift(comm, d, 1, &nb->in[2 * d], &nb->in[2 * d + 1]));
		memcpy(nb->out, nb->in, 2 * nd * sizeof(int));
	} else if (topo == MPI_GRAPH) {
		MPI_CHECK(MPI_Graph_neighbors_count(comm, rank, &nb->nin));
		nb->nout = nb->nin;
		nb->in = calloc(nb->nin + 1, sizeof(int));
		nb->out = calloc(nb->nin + 1, sizeof(int));
		MPI_CHECK(MPI_Graph_neighbors(comm, rank, nb->nin, nb->in));
		memcpy(nb->out, nb->in, nb->nin * sizeof(int));
	} else {
		CHECK(topo == MPI_DIST_GRAPH, "topology %d", topo);
		MPI_CHECK(MPI_Dist_graph_neighbors_count(comm, &nb->nin, &nb->nout, &w));
		nb->in = calloc(nb->nin + 1, sizeof(int));
		nb->out = calloc(nb->nout + 1, sizeof(int));
		int *w1 = calloc(nb->nin + 1, sizeof(int)), *w2 = calloc(nb->nout + 1, sizeof(int));

		/* weights given, so MPI_UNWEIGHTED ((int *)2) does not upset gcc's bounds checks */
		MPI_CHECK(MPI_Dist_graph_neighbors(comm, nb->nin, nb->in, w1, nb->nout, nb->out, w2));
		free(w1);
		free(w2);
	}
}

/* occurrences of a[i] among a[0..i) */
static int occ(const int *a, int i)
{
	int n = 0;

	for (int j = 0; j < i; j++)
		n += a[j] == a[i];
	return n;
}

struct side {
	int n;			/* blocks */
	int *ints;		/* per block */
	int *rep;		/* per block (w) or one for all (rep[0]) */
	int *counts;		/* in elements of the block's type */
	int *displs;		/* v: extents; alltoallw: bytes */
	MPI_Aint *adispls;	/* neighbor_alltoallw: bytes */
	MPI_Datatype *types;
	size_t bytes;
};

struct cs {
	enum kind k;
	MPI_Comm comm;
	int rank, size;
	bool inplace;
	struct nbrs nb;
	struct side s, r;
	int count;		/* user op */
	unsigned char *sb, *rb, *in;
};

/* Lay out n blocks of ints[i] ints: one type for all (v) or one per block (w). */
static void layout(struct side *sd, bool per_block, bool bytes_displ)
{
	size_t off = 0;
	int one = own(NREP);

	sd->rep = calloc(sd->n + 1, sizeof(int));
	sd->counts = calloc(sd->n + 1, sizeof(int));
	sd->displs = calloc(sd->n + 1, sizeof(int));
	sd->adispls = calloc(sd->n + 1, sizeof(MPI_Aint));
	sd->types = calloc(sd->n + 1, sizeof(MPI_Datatype));
	for (int i = 0; i < sd->n; i++) {
		int rp = per_block ? own(NREP) : one;

		sd->rep[i] = rp;
		sd->types[i] = reps[rp];
		sd->counts[i] = sd->ints[i] / rep_per[rp];
		if (bytes_displ) {
			off += 4 * (size_t)own(3);
			sd->displs[i] = (int)off;
			sd->adispls[i] = (MPI_Aint)off;
			off += (size_t)sd->counts[i] * rep_ext[rp];
		} else {
			off += (size_t)own(3) * rep_ext[rp];
			sd->displs[i] = (int)(off / rep_ext[rp]);
			off += (size_t)sd->counts[i] * rep_ext[rp];
		}
	}
	sd->bytes = off + 16;
}

static void side_free(struct side *sd)
{
	free(sd->ints);
	free(sd->rep);
	free(sd->counts);
	free(sd->displs);
	free(sd->adispls);
	free(sd->types);
}

static void setup(struct cs *c, enum kind k, MPI_Comm comm, int salt)
{
	int i, topo, big = rnd(8) ? 40 : 6000;

	memset(c, 0, sizeof(*c));
	c->k = k;
	c->comm = comm;
	MPI_Comm_rank(comm, &c->rank);
	MPI_Comm_size(comm, &c->size);
	if (k >= K_NAG && k <= K_NA2AW) {
		get_nbrs(comm, &c->nb);
	} else {
		/* every rank its neighbour: the blocks of alltoallw */
		c->nb.nin = c->nb.nout = c->size;
		c->nb.in = calloc(c->size, sizeof(int));
		c->nb.out = calloc(c->size, sizeof(int));
		for (i = 0; i < c->size; i++)
			c->nb.in[i] = c->nb.out[i] = i;
	}
	c->s.n = c->nb.nout;
	c->r.n = c->nb.nin;
	c->s.ints = calloc(c->s.n + 1, sizeof(int));
	c->r.ints = calloc(c->r.n + 1, sizeof(int));
	switch (k) {
	case K_NAG: case K_NA2A: {
		int n = edge_ints(0, 0, 0, salt, big);	/* one count for all */

		for (i = 0; i < c->s.n; i++)
			c->s.ints[i] = k == K_NAG ? n : n;
		for (i = 0; i < c->r.n; i++)
			c->r.ints[i] = n;
		break;
	}
	case K_NAGV:
		for (i = 0; i < c->s.n; i++)
			c->s.ints[i] = edge_ints(c->rank, 0, 0, salt, big);
		for (i = 0; i < c->r.n; i++)
			c->r.ints[i] = c->nb.in[i] == MPI_PROC_NULL ? 0 :
				       edge_ints(c->nb.in[i], 0, 0, salt, big);
		break;
	case K_NA2AV: case K_NA2AW: case K_ALLTOALLW:
		/* Open MPI 4.1.4's MPI_Ialltoallw crashes with MPI_IN_PLACE: under the shim only */
		c->inplace = k == K_ALLTOALLW && rnd(3) == 0 && test_strict();
		MPI_Topo_test(comm, &topo);
		if (k != K_ALLTOALLW && topo == MPI_CART) {
			/*
			 * What goes up a dimension arrives as from below: block j of
			 * the sender is block j ^ 1 of the receiver (MPI-4; the same
			 * rank may be above and below)
			 */
			for (i = 0; i < c->s.n; i++)
				c->s.ints[i] = c->nb.out[i] == MPI_PROC_NULL ? 0 :
					       edge_ints(c->rank, i, 0, salt, big);
			for (i = 0; i < c->r.n; i++)
				c->r.ints[i] = c->nb.in[i] == MPI_PROC_NULL ? 0 :
					       edge_ints(c->nb.in[i], i ^ 1, 0, salt, big);
			break;
		}
		for (i = 0; i < c->s.n; i++) {
			int v = c->nb.out[i], lo = c->rank < v ? c->rank : v, hi = c->rank ^ v ^ lo;

			c->s.ints[i] = v == MPI_PROC_NULL ? 0 : k == K_ALLTOALLW ?
				       edge_ints(lo, hi, 0, salt, big) :
				       edge_ints(c->rank, v, occ(c->nb.out, i), salt, big);
		}
		for (i = 0; i < c->r.n; i++) {
			int u = c->nb.in[i], lo = c->rank < u ? c->rank : u, hi = c->rank ^ u ^ lo;

			c->r.ints[i] = u == MPI_PROC_NULL ? 0 : k == K_ALLTOALLW ?
				       edge_ints(lo, hi, 0, salt, big) :
				       edge_ints(u, c->rank, occ(c->nb.in, i), salt, big);
		}
		break;
	case K_USEROP:
		c->count = 1 + rnd(big);
		break;
	default:
		break;
	}
	if (k == K_NAG || k == K_NAGV) {
		/* one send block, the same to every neighbour */
		int n = c->s.n ? c->s.ints[0] : edge_ints(c->rank, 0, 0, salt, big);

		if (k == K_NAG)
			n = edge_ints(0, 0, 0, salt, big);
		c->s.n = 1;
		c->s.ints[0] = n;
	}
	layout(&c->s, k == K_ALLTOALLW || k == K_NA2AW, k == K_ALLTOALLW || k == K_NA2AW);
	layout(&c->r, k == K_ALLTOALLW || k == K_NA2AW, k == K_ALLTOALLW || k == K_NA2AW);
	if (c->inplace) {
		/* the receive layout holds both: same ints per block (symmetric) */
		free(c->s.ints);
		c->s.ints = NULL;
	}
	if (k == K_USEROP)
		c->s.bytes = c->r.bytes = (size_t)c->count * sizeof(int);
	c->sb = xmalloc(c->s.bytes + 16);
	c->rb = xmalloc(c->r.bytes + 16);
	c->in = xmalloc(c->s.bytes + c->r.bytes + 32);
}

/* New inputs (a start of a persistent request: every time other data). */
static void fill(struct cs *c, int salt)
{
	pat_fill(c->sb, c->s.bytes, (uint32_t)(salt * 31 + c->rank));
	pat_fill(c->rb, c->r.bytes, (uint32_t)(salt * 77 + 5 + c->rank));
	if (c->k == K_USEROP)
		for (int i = 0; i < c->count; i++)
			((int *)c->sb)[i] = (i + c->rank + salt) % 5;
	memcpy(c->in, c->sb, c->s.bytes);
	memcpy(c->in + c->s.bytes, c->rb, c->r.bytes);
}

enum how { NB, BLOCKING, PERSISTENT };

static void run_case(struct cs *c, MPI_Request *req, enum how how)
{
	MPI_Comm m = c->comm;
	MPI_Info info = MPI_INFO_NULL;
	void *sb = c->inplace ? MPI_IN_PLACE : c->sb;

#define CALL(nb, b, p) MPI_CHECK(how == BLOCKING ? (b) : how == NB ? (nb) : (p))
	switch (c->k) {
	case K_BARRIER:
		CALL(MPI_Ibarrier(m, req), MPI_Barrier(m), MPIX_Barrier_init(m, info, req));
		break;
	case K_ALLTOALLW:
		CALL(MPI_Ialltoallw(sb, c->s.counts, c->s.displs, c->s.types, c->rb, c->r.counts,
				    c->r.displs, c->r.types, m, req),
		     MPI_Alltoallw(sb, c->s.counts, c->s.displs, c->s.types, c->rb, c->r.counts,
				   c->r.displs, c->r.types, m),
		     MPIX_Alltoallw_init(sb, c->s.counts, c->s.displs, c->s.types, c->rb,
					 c->r.counts, c->r.displs, c->r.types, m, info, req));
		break;
	case K_NAG:
		CALL(MPI_Ineighbor_allgather(c->sb, c->s.counts[0], c->s.types[0], c->rb,
					     c->r.n ? c->r.counts[0] : 0, c->r.types[0], m, req),
		     MPI_Neighbor_allgather(c->sb, c->s.counts[0], c->s.types[0], c->rb,
					    c->r.n ? c->r.counts[0] : 0, c->r.types[0], m),
		     MPIX_Neighbor_allgather_init(c->sb, c->s.counts[0], c->s.types[0], c->rb,
						  c->r.n ? c->r.counts[0] : 0, c->r.types[0], m,
						  info, req));
		break;
	case K_NAGV:
		CALL(MPI_Ineighbor_allgatherv(c->sb, c->s.counts[0], c->s.types[0], c->rb,
					      c->r.counts, c->r.displs, c->r.types[0], m, req),
		     MPI_Neighbor_allgatherv(c->sb, c->s.counts[0], c->s.types[0], c->rb,
					     c->r.counts, c->r.displs, c->r.types[0], m),
		     MPIX_Neighbor_allgatherv_init(c->sb, c->s.counts[0], c->s.types[0], c->rb,
						   c->r.counts, c->r.displs, c->r.types[0], m,
						   info, req));
		break;
	case K_NA2A: {
		int sc = c->s.n ? c->s.counts[0] : 0, rc = c->r.n ? c->r.counts[0] : 0;

		CALL(MPI_Ineighbor_alltoall(c->sb, sc, c->s.types[0], c->rb, rc, c->r.types[0], m,
					    req),
		     MPI_Neighbor_alltoall(c->sb, sc, c->s.types[0], c->rb, rc, c->r.types[0], m),
		     MPIX_Neighbor_alltoall_init(c->sb, sc, c->s.types[0], c->rb, rc, c->r.types[0],
						 m, info, req));
		break;
	}
	case K_NA2AV:
		CALL(MPI_Ineighbor_alltoallv(c->sb, c->s.counts, c->s.displs, c->s.types[0], c->rb,
					     c->r.counts, c->r.displs, c->r.types[0], m, req),
		     MPI_Neighbor_alltoallv(c->sb, c->s.counts, c->s.displs, c->s.types[0], c->rb,
					    c->r.counts, c->r.displs, c->r.types[0], m),
		     MPIX_Neighbor_alltoallv_init(c->sb, c->s.counts, c->s.displs, c->s.types[0],
						  c->rb, c->r.counts, c->r.displs, c->r.types[0], m,
						  info, req));
		break;
	case K_NA2AW:
		CALL(MPI_Ineighbor_alltoallw(c->sb, c->s.counts, c->s.adispls, c->s.types, c->rb,
					     c->r.counts, c->r.adispls, c->r.types, m, req),
		     MPI_Neighbor_alltoallw(c->sb, c->s.counts, c->s.adispls, c->s.types, c->rb,
					    c->r.counts, c->r.adispls, c->r.types, m),
		     MPIX_Neighbor_alltoallw_init(c->sb, c->s.counts, c->s.adispls, c->s.types,
						  c->rb, c->r.counts, c->r.adispls, c->r.types, m,
						  info, req));
		break;
	case K_USEROP:
		CALL(MPI_Iallreduce(c->sb, c->rb, c->count, MPI_INT, user_sum, m, req),
		     MPI_Allreduce(c->sb, c->rb, c->count, MPI_INT, user_sum, m),
		     MPIX_Allreduce_init(c->sb, c->rb, c->count, MPI_INT, user_sum, m, info, req));
		break;
	case K_NR:
		break;
	}
#undef CALL
}

/* The nonblocking (or persistent) result against the blocking one on the same inputs. */
static void compare(struct cs *c, int batch)
{
	unsigned char *got = xmalloc(c->r.bytes + 16);

	memcpy(got, c->rb, c->r.bytes);
	CHECK(!memcmp(c->sb, c->in, c->s.bytes), "batch %d %s wrote its send buffer", batch,
	      knames[c->k]);
	memcpy(c->rb, c->in + c->s.bytes, c->r.bytes);
	run_case(c, NULL, BLOCKING);
	for (size_t i = 0; i < c->r.bytes; i++)
		CHECK(got[i] == c->rb[i],
		      "batch %d %s on %d ranks (in %d out %d neighbours, in place %d): byte %zu of %zu is %d, blocking gives %d",
		      batch, knames[c->k], c->size, c->nb.nin, c->nb.nout, c->inplace, i, c->r.bytes,
		      got[i], c->rb[i]);
	free(got);
}

static void release(struct cs *c)
{
	side_free(&c->s);
	side_free(&c->r);
	free(c->nb.in);
	free(c->nb.out);
	free(c->sb);
	free(c->rb);
	free(c->in);
}

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
	default:
		while (left) {
			MPI_CHECK(MPI_Testsome(n, reqs, &outc, outs, st));
			left -= outc;
		}
		break;
	}
	for (int i = 0; i < n; i++)
		CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed by completion", i);
	free(outs);
	free(st);
}

/* Rank 1's barrier cannot complete before rank 0 entered, after rank 1's message. */
static void barrier_order(MPI_Comm comm)
{
	int rank, size, flag, token = 7;
	MPI_Request b;

	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	if (size < 2)
		return;
	if (rank == 0) {
		MPI_CHECK(MPI_Recv(&token, 1, MPI_INT, 1, 99, comm, MPI_STATUS_IGNORE));
		MPI_CHECK(MPI_Ibarrier(comm, &b));
	} else {
		MPI_CHECK(MPI_Ibarrier(comm, &b));
		if (rank == 1) {
			for (int i = 0; i < 20; i++) {
				MPI_CHECK(MPI_Test(&b, &flag, MPI_STATUS_IGNORE));
				CHECK(!flag, "Ibarrier completed before rank 0 entered it");
				usleep(2000);
			}
			MPI_CHECK(MPI_Send(&token, 1, MPI_INT, 0, 99, comm));
		}
	}
	MPI_CHECK(MPI_Wait(&b, MPI_STATUS_IGNORE));
}

/*
 * Open MPI 4.1.4's MPI_Ialltoallw (and MPIX_Alltoallw_init) on a
 * communicator of one rank copies without the displacements: there only
 * under the shim.
 */
static enum kind alltoallw_ok(enum kind k, int size)
{
	return k == K_ALLTOALLW && size == 1 && !test_strict() ? K_BARRIER : k;
}

#define MAXC 4
#define NCOMMS 8

/*
 * Where each rank is, one line per batch (its collectives started): a run
 * that does not finish (docs/DESIGN.md, coll_more at 16 batches) shows in
 * its log which batch or persistent group every rank had reached, and when.
 */
static void progress(int wr, const char *what, int b, int ci, const struct cs *cs, int nc,
		     double t0)
{
	char kinds[MAXC * 24] = "";

	for (int i = 0; i < nc; i++) {
		strcat(kinds, " ");
		strcat(kinds, knames[cs[i].k]);
	}
	printf("coll_more: rank %d %s %d on communicator %d:%s at %.1f s\n", wr, what, b, ci,
	       kinds, now_sec() - t0);
}

int main(int argc, char **argv)
{
	int batches, seed, wr, ws, i, b, nd;
	int dims[3], periods[3];
	MPI_Comm comms[NCOMMS], split;
	MPI_Datatype vec, pair;

	test_init(&argc, &argv, "coll_more", 1, &wr, &ws);
	double t0 = now_sec();
	batches = argc > 1 ? atoi(argv[1]) : 10;	/* TCG VM: 108 s at 4 ranks; see docs/DESIGN.md */
	seed = argc > 2 ? atoi(argv[2]) : 2026;
	own_seed = (unsigned int)(seed * 7 + wr);
	MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	MPI_Type_contiguous(2, MPI_INT, &pair);
	MPI_Type_commit(&pair);
	reps[0] = MPI_INT;
	reps[1] = vec;
	reps[2] = pair;
	for (i = 0; i < NREP; i++) {
		MPI_Aint lb;

		MPI_Type_get_extent(reps[i], &lb, &rep_ext[i]);
	}
	MPI_Op_create(user_sum_fn, 1, &user_sum);
	srand((unsigned int)seed);

	/* the communicators: every rank makes them alike */
	MPI_Comm_split(MPI_COMM_WORLD, wr % 2, -wr, &split);
	comms[0] = MPI_COMM_WORLD;
	comms[1] = split;
	for (i = 0; i < 3; i++) {
		nd = i + 1;
		memset(dims, 0, sizeof(dims));
		MPI_Dims_create(ws, nd, dims);
		/*
		 * A periodic dimension of size 1 or 2 has the same rank above and
		 * below. Open MPI 4.1.4 disagrees with itself there: its blocking
		 * neighbourhood calls deliver what went up as from below (MPI-4),
		 * its nonblocking ones (libnbc) pair messages in block order
		 * (MPI_ERR_TRUNCATE or other data). The shim does what the
		 * blocking calls do; those dimensions only in strict mode (the
		 * shim active), never with plain Open MPI.
		 */
		for (int d = 0; d < nd; d++)
			periods[d] = (i + d) % 2 && (dims[d] > 2 || test_strict());
		MPI_CHECK(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &comms[2 + i]));
	}
	{
		/*
		 * A multigraph with self-loops: an edge to the next rank and 0-3
		 * more from each rank, some repeated. Every rank has an in-edge:
		 * Open MPI 4.1.4's libnbc MPI_Ineighbor_alltoallv crashes
		 * (SIGSEGV in plain Open MPI) on a rank with none.
		 */
		int deg = own(4), dst[9], wts[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, src = wr, k = 0;

		dst[k++] = (wr + 1) % ws;

		for (i = 0; i < deg; i++) {
			dst[k++] = own(ws);
			if (own(3) == 0) {
				dst[k] = dst[k - 1];	/* a repeated edge */
				k++;
			}
		}
		MPI_CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &src, &k, dst, wts,
						MPI_INFO_NULL, 0, &comms[5]));
	}
	{
		int ring[2] = { (wr + ws - 1) % ws, (wr + 1) % ws }, w[2] = { 1, 1 };

		MPI_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, ring, w, 2, ring, w,
							 MPI_INFO_NULL, 0, &comms[6]));
	}
	MPI_CHECK(MPI_Comm_dup(comms[5], &comms[7]));
	MPI_Comm gcomm;
	{
		/* a star graph: rank 0 with every other rank */
		int index[64], edges[128], e = 0;

		for (i = 0; i < ws && i < 64; i++) {
			if (i == 0)
				for (int j = 1; j < ws; j++)
					edges[e++] = j;
			else
				edges[e++] = 0;
			index[i] = e;
		}
		MPI_CHECK(MPI_Graph_create(MPI_COMM_WORLD, ws, index, edges, 0, &gcomm));
	}

	for (int t = 0; t < 3; t++)
		barrier_order(t == 1 ? split : t == 2 ? comms[3] : MPI_COMM_WORLD);

	for (b = 0; b < batches; b++) {
		struct cs cs[MAXC];
		MPI_Request reqs[MAXC + 2];
		int nc, nr = 0, sendv, recvv = -1, rank, size, ci;
		MPI_Comm comm;

		/* the same draws on every rank of comm (the two halves of split differ) */
		srand((unsigned int)(seed * 1000 + b * 7));
		ci = rnd(NCOMMS + 1);
		comm = ci == NCOMMS ? gcomm : comms[ci];
		if (comm == split)
			srand((unsigned int)(seed * 1000 + b * 7 + 1 + wr % 2));
		nc = 1 + rnd(MAXC);

		MPI_Comm_rank(comm, &rank);
		MPI_Comm_size(comm, &size);
		MPI_CHECK(MPI_Irecv(&recvv, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm,
				    &reqs[nr++]));
		for (i = 0; i < nc; i++) {
			enum kind k;
			int topo;

			MPI_Topo_test(comm, &topo);
			/*
			 * Alltoallw on a communicator with a topology only under the
			 * shim: Open MPI 4.1.4's MPI_Ialltoallw crashes there (it
			 * counts the types as for a neighbourhood call)
			 */
			if (topo == MPI_UNDEFINED)	/* no neighbours: the others */
				k = alltoallw_ok(rnd(3) ? K_ALLTOALLW : rnd(2) ? K_BARRIER : K_USEROP,
						 size);
			else if (test_strict())
				k = (enum kind)rnd(K_NR);
			else
				k = (enum kind)(K_NAG + rnd(K_NR - K_NAG));
			setup(&cs[i], k, comm, b * 10 + i);
			fill(&cs[i], b * 10 + i);
			run_case(&cs[i], &reqs[nr++], NB);
		}
		progress(wr, "batch", b, ci, cs, nc, t0);
		sendv = b * 1000 + rank;
		MPI_CHECK(MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % size, b, comm, &reqs[nr++]));
		complete_all(reqs, nr, rnd(6));
		CHECK(recvv == b * 1000 + (rank + size - 1) % size,
		      "batch %d: the wildcard receive got %d", b, recvv);
		for (i = 0; i < nc; i++) {
			compare(&cs[i], b);
			release(&cs[i]);
		}
	}

	/* persistent: init once, start five times with new data, p2p in the same Startall */
	for (b = 0; b < batches / 4 + 1; b++) {
		struct cs cs[MAXC];
		MPI_Request reqs[MAXC + 2];
		int nc, ci, rank, size, sendv, recvv;
		MPI_Comm comm;
		int topo;

		srand((unsigned int)(seed * 3000 + b * 7));
		ci = rnd(NCOMMS);
		comm = comms[ci];
		if (comm == split)
			srand((unsigned int)(seed * 3000 + b * 7 + 1 + wr % 2));
		nc = 1 + rnd(MAXC);

		MPI_Comm_rank(comm, &rank);
		MPI_Comm_size(comm, &size);
		MPI_Topo_test(comm, &topo);
		for (i = 0; i < nc; i++) {
			enum kind k = topo == MPI_UNDEFINED ? (rnd(2) ? K_ALLTOALLW : K_BARRIER) :
				      (enum kind)(K_NAG + rnd(K_NR - K_NAG));

			k = alltoallw_ok(k, size);

			setup(&cs[i], k, comm, 5000 + b * 10 + i);
			run_case(&cs[i], &reqs[i], PERSISTENT);
		}
		progress(wr, "persistent group", b, ci, cs, nc, t0);
		MPI_CHECK(MPI_Recv_init(&recvv, 1, MPI_INT, (rank + size - 1) % size, 5, comm,
					&reqs[nc]));
		MPI_CHECK(MPI_Send_init(&sendv, 1, MPI_INT, (rank + 1) % size, 5, comm,
					&reqs[nc + 1]));
		for (int it = 0; it < 5; it++) {
			for (i = 0; i < nc; i++)
				fill(&cs[i], 7000 + b * 100 + it * 10 + i);
			sendv = it * 100 + rank;
			recvv = -1;
			MPI_CHECK(MPI_Startall(nc + 2, reqs));
			MPI_CHECK(MPI_Waitall(nc + 2, reqs, MPI_STATUSES_IGNORE));
			for (i = 0; i < nc + 2; i++)
				CHECK(reqs[i] != MPI_REQUEST_NULL, "a persistent request was freed");
			CHECK(recvv == it * 100 + (rank + size - 1) % size, "persistent p2p got %d",
			      recvv);
			for (i = 0; i < nc; i++)
				compare(&cs[i], 10000 + b * 10 + it);
		}
		for (i = 0; i < nc + 2; i++)
			MPI_CHECK(MPI_Request_free(&reqs[i]));
		for (i = 0; i < nc; i++)
			release(&cs[i]);
	}

	/*
	 * MPIX_Reduce_scatter(_block)_init that pass through (a user op): the
	 * shim must hand Open MPI's persistent init the call, not its
	 * nonblocking one (an active request MPI_Start refuses). MPICH's
	 * coll/p_red_scat_block and p_redscat found it (docs/testing.md).
	 */
	{
		int size, rank, rs_in[4 * 3], rs_out[3], counts[64];
		MPI_Request rq[2];

		MPI_Comm_size(MPI_COMM_WORLD, &size);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		if (size <= 4) {
			for (i = 0; i < size; i++)
				counts[i] = 3;
			MPI_CHECK(MPIX_Reduce_scatter_block_init(rs_in, rs_out, 3, MPI_INT, user_sum,
								 MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
			MPI_CHECK(MPIX_Reduce_scatter_init(rs_in, rs_out, counts, MPI_INT, user_sum,
							   MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
			for (int it = 0; it < 3; it++) {
				for (int j = 0; j < 2; j++) {
					for (i = 0; i < 3 * size; i++)
						rs_in[i] = i + rank + it;
					MPI_CHECK(MPI_Start(&rq[j]));
					MPI_CHECK(MPI_Wait(&rq[j], MPI_STATUS_IGNORE));
					CHECK(rq[j] != MPI_REQUEST_NULL, "a persistent request was freed");
					for (i = 0; i < 3; i++)
						CHECK(rs_out[i] == size * (3 * rank + i + it) +
								   size * (size - 1) / 2,
						      "reduce_scatter%s_init start %d: [%d] = %d",
						      j ? "" : "_block", it, i, rs_out[i]);
				}
			}
			MPI_CHECK(MPI_Request_free(&rq[0]));
			MPI_CHECK(MPI_Request_free(&rq[1]));
		}
	}

	/*
	 * A root in place passes -1 and MPI_DATATYPE_NULL for the arguments
	 * MPI_IN_PLACE makes insignificant (MPICH's coll/nonblocking): the
	 * root must take the module's path with the others, or each side
	 * waits for the other forever.
	 */
	{
		int size, rank, buf[2 * 64], one[2], cnt[64], dsp[64];
		MPI_Request rq;

		MPI_Comm_size(MPI_COMM_WORLD, &size);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		for (i = 0; i < size; i++) {
			cnt[i] = 2;
			dsp[i] = 2 * (size - 1 - i);
		}
		for (int w = 0; w < 4 && size <= 64; w++) {
			int root = w % size;
			bool r0 = rank == root;

			for (i = 0; i < 2 * size; i++)
				buf[i] = r0 ? 1000 + i : -1;
			one[0] = 10 * rank + w;
			one[1] = 10 * rank + w + 5;
			if (r0) {
				int *mine = w & 1 ? buf + dsp[rank] : buf + 2 * rank;

				mine[0] = one[0];
				mine[1] = one[1];
			}
			if (w == 0)
				MPI_CHECK(MPI_Igather(r0 ? MPI_IN_PLACE : one, r0 ? -1 : 2,
						      r0 ? MPI_DATATYPE_NULL : MPI_INT, buf, 2, MPI_INT,
						      root, MPI_COMM_WORLD, &rq));
			else if (w == 1)
				MPI_CHECK(MPI_Igatherv(r0 ? MPI_IN_PLACE : one, r0 ? -1 : 2,
						       r0 ? MPI_DATATYPE_NULL : MPI_INT, buf, cnt, dsp,
						       MPI_INT, root, MPI_COMM_WORLD, &rq));
			else if (w == 2)
				MPI_CHECK(MPI_Iscatter(buf, 2, MPI_INT, r0 ? MPI_IN_PLACE : one,
						       r0 ? -1 : 2, r0 ? MPI_DATATYPE_NULL : MPI_INT,
						       root, MPI_COMM_WORLD, &rq));
			else
				MPI_CHECK(MPI_Iscatterv(buf, cnt, dsp, MPI_INT,
							r0 ? MPI_IN_PLACE : one, r0 ? -1 : 2,
							r0 ? MPI_DATATYPE_NULL : MPI_INT, root,
							MPI_COMM_WORLD, &rq));
			MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			for (i = 0; i < size && w < 2 && r0; i++) {
				int *got = w & 1 ? buf + dsp[i] : buf + 2 * i;

				CHECK(got[0] == 10 * i + w && got[1] == 10 * i + w + 5,
				      "in-place %s at root %d: block %d = %d %d",
				      w ? "gatherv" : "gather", root, i, got[0], got[1]);
			}
			if (w >= 2 && !r0) {
				int at = w == 3 ? dsp[rank] : 2 * rank;

				CHECK(one[0] == 1000 + at && one[1] == 1001 + at,
				      "in-place %s from root %d: got %d %d", w == 3 ? "scatterv" : "scatter",
				      root, one[0], one[1]);
			}
		}
	}

	/*
	 * In place, MPI_Ialltoall's send count is insignificant: one rank
	 * passing a count the module would refuse must not leave it alone
	 * with Open MPI while the others take the module's path.
	 */
	{
		int size, rank, buf[2 * 64];
		MPI_Request rq;

		MPI_Comm_size(MPI_COMM_WORLD, &size);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		for (i = 0; i < 2 * size && size <= 64; i++)
			buf[i] = 100 * rank + i;
		if (size <= 64) {
			MPI_CHECK(MPI_Ialltoall(MPI_IN_PLACE, rank == 0 ? INT_MAX : 2, MPI_DATATYPE_NULL,
						buf, 2, MPI_INT, MPI_COMM_WORLD, &rq));
			MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			for (i = 0; i < size; i++)
				CHECK(buf[2 * i] == 100 * i + 2 * rank &&
				      buf[2 * i + 1] == 100 * i + 2 * rank + 1,
				      "in-place alltoall: block %d = %d %d", i, buf[2 * i], buf[2 * i + 1]);
		}
	}

	for (i = 1; i < NCOMMS; i++)
		MPI_Comm_free(&comms[i]);
	MPI_Comm_free(&gcomm);
	MPI_Op_free(&user_sum);
	MPI_Type_free(&vec);
	MPI_Type_free(&pair);
	return test_finish();
}
