// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The exchanges of one round: MPI_Ialltoallw and the neighborhood
 * collectives MPI_Ineighbor_allgather(v) and MPI_Ineighbor_alltoall(v/w)
 * on Cartesian, graph and distributed-graph communicators. Each is one
 * schedule round of sends and receives (a rank that is its own neighbour
 * copies), built from the topology Open MPI keeps (PMPI_Topo_test,
 * Cart_shift, Graph_neighbors, Dist_graph_neighbors).
 *
 * Messages between two ranks pair up in order: the k-th send of A to B
 * meets the k-th receive of B from A. Blocks go in their order, except
 * that on a Cartesian communicator each dimension sends its upper block
 * (to the rank above) before its lower one, so that where the rank above
 * and the rank below are the same (a periodic dimension of size 1 or 2)
 * what went up arrives as from below, as MPI-4 says and Open MPI 4.1 does
 * (checked against its blocking calls). Multigraphs pair in order.
 *
 * Same path on every member (coll.c's header): the decision uses the
 * communicator, its topology kind and a bound on every member's schedule
 * that all members know alike: 4 ndims steps for a Cartesian
 * communicator, 2 edges for a graph, and for a distributed graph the
 * largest (indegree + outdegree) of its members, agreed once when it is
 * created (kp_coll_topo_created(), from comm.c's constructors; a
 * duplicate inherits it). These calls have no KPROG_COLL_MIN: a rank's
 * bytes are not the same on every member.
 */
#include <stdlib.h>
#include <string.h>
#include "coll.h"

#define IN_PLACE(b) ((const void *)(b) == (const void *)MPI_IN_PLACE)

/* One block of an exchange: a peer (communicator rank) and packed bytes. */
struct xblk {
	int peer;
	char *p;
	size_t len;
};

static struct xblk *xblks(int n)
{
	struct xblk *b = calloc(n ? n : 1, sizeof(*b));

	if (!b)
		abort();
	return b;
}

/*
 * One round: every send and receive at once; a block to or from this rank
 * itself is a copy, the k-th send to self into the k-th receive from
 * self. Blocks of no bytes and MPI_PROC_NULL peers are left out (both
 * ends know the length). @swap: sends in pairs swapped (Cartesian).
 */
static void build_exchange(struct kp_sched *s, const struct xblk *snd, int ns,
			   const struct xblk *rcv, int nr, bool swap)
{
	int i, j = 0;

	for (int o = 0; o < ns; o++) {
		i = swap ? o ^ 1 : o;
		if (snd[i].peer == MPI_PROC_NULL || snd[i].peer != s->rank)
			continue;
		while (j < nr && rcv[j].peer != s->rank)
			j++;
		if (j == nr)
			break;
		kp_sched_copy(s, snd[i].p, rcv[j].p, snd[i].len < rcv[j].len ? snd[i].len : rcv[j].len);
		j++;
	}
	for (i = 0; i < nr; i++)
		if (rcv[i].peer != MPI_PROC_NULL && rcv[i].peer != s->rank && rcv[i].len)
			kp_sched_recv(s, rcv[i].peer, rcv[i].p, rcv[i].len);
	for (int o = 0; o < ns; o++) {
		i = swap ? o ^ 1 : o;
		if (snd[i].peer != MPI_PROC_NULL && snd[i].peer != s->rank && snd[i].len)
			kp_sched_send(s, snd[i].peer, snd[i].p, snd[i].len);
	}
	kp_sched_next_round(s);
}

/* ---- MPI_Ialltoallw ---- */

static bool bad_counts(const int *a, int n)
{
	if (!a)
		return true;
	for (int i = 0; i < n; i++)
		if (a[i] < 0)
			return true;
	return false;
}

int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
		   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
		   MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool ip = IN_PLACE(sendbuf);
	struct xblk *snd, *rcv;
	struct kp_req *r;
	int n, i;

	if (!c || bad_counts(recvcounts, c->size) || !rdispls || !recvtypes ||
	    (!ip && (bad_counts(sendcounts, c->size) || !sdispls || !sendtypes)))
		return KP_COLL_PASS(PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
						    recvcounts, rdispls, recvtypes, comm, request),
				    PMPIX_Alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes,
							 recvbuf, recvcounts, rdispls, recvtypes,
							 comm, KP_PINFO, request));
	n = c->size;
	r = kp_coll_new(c);
	r->coll->family = KP_CF_ALLTOALLW;
	snd = xblks(n);
	rcv = xblks(n);
	/* a failed allocation marks the schedule (s.oom): kp_coll_start() reports it */
	for (i = 0; i < n; i++) {
		rcv[i].peer = i;
		rcv[i].p = kp_coll_buf(r, (char *)recvbuf + rdispls[i], recvcounts[i], recvtypes[i],
				       ip, true, &rcv[i].len);
	}
	for (i = 0; i < n; i++) {
		snd[i].peer = i;
		if (ip) {
			/* in place: the blocks for the others leave from copies */
			snd[i].len = rcv[i].len;
			snd[i].p = i == c->rank ? rcv[i].p : kp_sched_tmp(&r->coll->s, rcv[i].len);
			if (i != c->rank && snd[i].p)
				kp_sched_copy(&r->coll->s, rcv[i].p, snd[i].p, rcv[i].len);
		} else {
			snd[i].p = kp_coll_buf(r, (const char *)sendbuf + sdispls[i], sendcounts[i],
					       sendtypes[i], true, false, &snd[i].len);
		}
	}
	kp_sched_next_round(&r->coll->s);
	if (ip)
		rcv[c->rank].peer = snd[c->rank].peer = MPI_PROC_NULL;	/* stays where it is */
	build_exchange(&r->coll->s, snd, n, rcv, n, false);
	free(snd);
	free(rcv);
	return kp_coll_start(r, request);
}

/* ---- neighbourhoods ---- */

/* The neighbours of this rank, in MPI's block order. */
struct nbrs {
	int nin, nout;
	int *in, *out;
	bool cart;		/* pairs (below, above) per dimension */
};

static void nbrs_free(struct nbrs *nb)
{
	free(nb->in);
	free(nb->out);
}

static int *ints(int n)
{
	int *p = calloc(n ? n : 1, sizeof(int));

	if (!p)
		abort();
	return p;
}

/*
 * The neighbours of c's rank if its neighbourhood collectives go to the
 * module (the same answer on every member), else false.
 */
static bool get_nbrs(struct kp_comm *c, struct nbrs *nb)
{
	int topo = MPI_UNDEFINED, nd, i, nnodes, nedges, wtd;
	MPI_Comm comm = c->comm;

	memset(nb, 0, sizeof(*nb));
	if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS)
		return false;
	switch (topo) {
	case MPI_CART:
		PMPI_Cartdim_get(comm, &nd);
		if (4 * (uint64_t)nd > kp.max_coll_steps)
			return false;
		nb->nin = nb->nout = 2 * nd;
		nb->cart = true;
		nb->in = ints(2 * nd);
		nb->out = ints(2 * nd);
		/* per dimension: the rank below, then the one above */
		for (i = 0; i < nd; i++)
			PMPI_Cart_shift(comm, i, 1, &nb->in[2 * i], &nb->in[2 * i + 1]);
		memcpy(nb->out, nb->in, 2 * nd * sizeof(int));
		return true;
	case MPI_GRAPH:
		PMPI_Graphdims_get(comm, &nnodes, &nedges);
		if (2 * (uint64_t)nedges > kp.max_coll_steps)
			return false;
		PMPI_Graph_neighbors_count(comm, c->rank, &nb->nin);
		nb->nout = nb->nin;
		nb->in = ints(nb->nin);
		nb->out = ints(nb->nin);
		PMPI_Graph_neighbors(comm, c->rank, nb->nin, nb->in);
		memcpy(nb->out, nb->in, nb->nin * sizeof(int));
		return true;
	case MPI_DIST_GRAPH: {
		int *w1, *w2;

		if (!c->nbr_max || c->nbr_max > kp.max_coll_steps)
			return false;	/* unknown (not made by a constructor of ours) or too many */
		PMPI_Dist_graph_neighbors_count(comm, &nb->nin, &nb->nout, &wtd);
		nb->in = ints(nb->nin);
		nb->out = ints(nb->nout);
		w1 = ints(nb->nin);
		w2 = ints(nb->nout);
		PMPI_Dist_graph_neighbors(comm, nb->nin, nb->in, w1, nb->nout, nb->out, w2);
		free(w1);
		free(w2);
		return true;
	}
	default:
		return false;
	}
}

static void topo_created(MPI_Comm comm)
{
	struct kp_comm *c = kp_coll_comm(comm);
	int topo = MPI_UNDEFINED, nin = 0, nout = 0, wtd;
	uint32_t mine, most = 0;

	if (!c || PMPI_Topo_test(comm, &topo) != MPI_SUCCESS || topo != MPI_DIST_GRAPH)
		return;
	PMPI_Dist_graph_neighbors_count(comm, &nin, &nout, &wtd);
	mine = (uint32_t)nin + (uint32_t)nout;
	/* the constructor is collective: one more collective in it */
	if (KP_PMPI(PMPI_Allreduce(&mine, &most, 1, MPI_UINT32_T, MPI_MAX, comm)) == MPI_SUCCESS)
		c->nbr_max = most ? most : 1;
}

static void topo_dup(MPI_Comm old, MPI_Comm dup)
{
	struct kp_comm *o = kp_comm_lookup(old), *d = kp_comm_lookup(dup);

	if (o && d)
		d->nbr_max = o->nbr_max;
}

/* A neighbourhood exchange: its blocks, peers from the topology. */
struct nexch {
	struct nbrs nb;
	struct xblk *snd, *rcv;
};

static struct kp_req *nexch_new(struct kp_comm *c, struct nexch *x)
{
	struct kp_req *r = kp_coll_new(c);
	int i;

	r->coll->family = KP_CF_NEIGHBOR;
	x->snd = xblks(x->nb.nout);
	x->rcv = xblks(x->nb.nin);
	for (i = 0; i < x->nb.nout; i++)
		x->snd[i].peer = x->nb.out[i];
	for (i = 0; i < x->nb.nin; i++)
		x->rcv[i].peer = x->nb.in[i];
	return r;
}

static int nexch_start(struct kp_req *r, struct nexch *x, MPI_Request *request)
{
	build_exchange(&r->coll->s, x->snd, x->nb.nout, x->rcv, x->nb.nin, x->nb.cart);
	free(x->snd);
	free(x->rcv);
	nbrs_free(&x->nb);
	return kp_coll_start(r, request);
}

/* n blocks of count elements one after another (the non-v forms) */
static void uniform(int n, int count, int **counts, int **displs)
{
	*counts = ints(n);
	*displs = ints(n);
	for (int i = 0; i < n; i++) {
		(*counts)[i] = count;
		(*displs)[i] = i * count;
	}
}

/*
 * The blocks of @xb from a typed buffer of n blocks (counts, displs in
 * extents). A block of an MPI_PROC_NULL neighbour counts 0: nothing is
 * packed for it, and its part of the receive buffer is never unpacked
 * over (MPI leaves it untouched).
 */
static void typed_blocks(struct kp_req *r, struct xblk *xb, const void *buf, const int *counts,
			 const int *displs, MPI_Datatype type, int n, bool in, bool out)
{
	size_t *bc, *bd;
	int *cnt;
	char *base;

	if (!n)
		return;
	bc = calloc(2 * (size_t)n, sizeof(*bc));
	cnt = ints(n);
	if (!bc)
		abort();
	bd = bc + n;
	for (int i = 0; i < n; i++)
		cnt[i] = xb[i].peer == MPI_PROC_NULL ? 0 : counts[i];
	base = kp_coll_vec(r, buf, cnt, displs, type, n, in, out, bc, bd);
	for (int i = 0; i < n; i++) {
		xb[i].p = base ? base + bd[i] : NULL;
		xb[i].len = bc[i];
	}
	free(cnt);
	free(bc);
}

static bool too_big(int n, int count)
{
	return count < 0 || (int64_t)n * count > INT32_MAX;
}

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
			    MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct nexch x;
	struct kp_req *r;
	int *counts, *displs, i;
	size_t sbytes;
	char *sb;

	if (!c || IN_PLACE(sendbuf) || sendcount < 0 || !get_nbrs(c, &x.nb))
		goto pass;
	if (too_big(x.nb.nin, recvcount)) {
		nbrs_free(&x.nb);
		goto pass;
	}
	r = nexch_new(c, &x);
	sb = kp_coll_buf(r, sendbuf, sendcount, sendtype, true, false, &sbytes);
	for (i = 0; i < x.nb.nout; i++) {
		x.snd[i].p = sb;
		x.snd[i].len = sbytes;
	}
	uniform(x.nb.nin, recvcount, &counts, &displs);
	typed_blocks(r, x.rcv, recvbuf, counts, displs, recvtype, x.nb.nin, false, true);
	free(counts);
	free(displs);
	return nexch_start(r, &x, request);
pass:
	return KP_COLL_PASS(PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
						     recvcount, recvtype, comm, request),
			    PMPIX_Neighbor_allgather_init(sendbuf, sendcount, sendtype,
							  recvbuf, recvcount, recvtype,
							  comm, KP_PINFO, request));
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			     void *recvbuf, const int recvcounts[], const int displs[],
			     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct nexch x;
	struct kp_req *r;
	size_t sbytes;
	char *sb;
	int i;

	if (!c || IN_PLACE(sendbuf) || sendcount < 0 || !get_nbrs(c, &x.nb))
		goto pass;
	if (x.nb.nin && (bad_counts(recvcounts, x.nb.nin) || !displs)) {
		nbrs_free(&x.nb);
		goto pass;
	}
	r = nexch_new(c, &x);
	sb = kp_coll_buf(r, sendbuf, sendcount, sendtype, true, false, &sbytes);
	for (i = 0; i < x.nb.nout; i++) {
		x.snd[i].p = sb;
		x.snd[i].len = sbytes;
	}
	typed_blocks(r, x.rcv, recvbuf, recvcounts, displs, recvtype, x.nb.nin, false, true);
	return nexch_start(r, &x, request);
pass:
	return KP_COLL_PASS(PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
						      recvcounts, displs, recvtype, comm,
						      request),
			    PMPIX_Neighbor_allgatherv_init(sendbuf, sendcount, sendtype,
							   recvbuf, recvcounts, displs,
							   recvtype, comm, KP_PINFO,
							   request));
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			   void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
			   MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	int *counts, *displs;
	struct nexch x;
	struct kp_req *r;

	if (!c || IN_PLACE(sendbuf) || !get_nbrs(c, &x.nb))
		goto pass;
	if (too_big(x.nb.nout, sendcount) || too_big(x.nb.nin, recvcount)) {
		nbrs_free(&x.nb);
		goto pass;
	}
	r = nexch_new(c, &x);
	uniform(x.nb.nout, sendcount, &counts, &displs);
	typed_blocks(r, x.snd, sendbuf, counts, displs, sendtype, x.nb.nout, true, false);
	free(counts);
	free(displs);
	uniform(x.nb.nin, recvcount, &counts, &displs);
	typed_blocks(r, x.rcv, recvbuf, counts, displs, recvtype, x.nb.nin, false, true);
	free(counts);
	free(displs);
	return nexch_start(r, &x, request);
pass:
	return KP_COLL_PASS(PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
						    recvcount, recvtype, comm, request),
			    PMPIX_Neighbor_alltoall_init(sendbuf, sendcount, sendtype,
							 recvbuf, recvcount, recvtype, comm,
							 KP_PINFO, request));
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
			    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
			    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
			    MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct nexch x;
	struct kp_req *r;

	if (!c || IN_PLACE(sendbuf) || !get_nbrs(c, &x.nb))
		goto pass;
	if ((x.nb.nout && (bad_counts(sendcounts, x.nb.nout) || !sdispls)) ||
	    (x.nb.nin && (bad_counts(recvcounts, x.nb.nin) || !rdispls))) {
		nbrs_free(&x.nb);
		goto pass;
	}
	r = nexch_new(c, &x);
	typed_blocks(r, x.snd, sendbuf, sendcounts, sdispls, sendtype, x.nb.nout, true, false);
	typed_blocks(r, x.rcv, recvbuf, recvcounts, rdispls, recvtype, x.nb.nin, false, true);
	return nexch_start(r, &x, request);
pass:
	return KP_COLL_PASS(PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype,
						     recvbuf, recvcounts, rdispls, recvtype,
						     comm, request),
			    PMPIX_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls,
							  sendtype, recvbuf, recvcounts,
							  rdispls, recvtype, comm, KP_PINFO,
							  request));
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
			    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
			    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
			    MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct nexch x;
	struct kp_req *r;
	int i;

	if (!c || IN_PLACE(sendbuf) || !get_nbrs(c, &x.nb))
		goto pass;
	if ((x.nb.nout && (bad_counts(sendcounts, x.nb.nout) || !sdispls || !sendtypes)) ||
	    (x.nb.nin && (bad_counts(recvcounts, x.nb.nin) || !rdispls || !recvtypes))) {
		nbrs_free(&x.nb);
		goto pass;
	}
	r = nexch_new(c, &x);
	/* MPI_PROC_NULL neighbours: no block (their part stays untouched) */
	for (i = 0; i < x.nb.nout; i++)
		if (x.snd[i].peer != MPI_PROC_NULL)
			x.snd[i].p = kp_coll_buf(r, (const char *)sendbuf + sdispls[i],
						 sendcounts[i], sendtypes[i], true, false,
						 &x.snd[i].len);
	for (i = 0; i < x.nb.nin; i++)
		if (x.rcv[i].peer != MPI_PROC_NULL)
			x.rcv[i].p = kp_coll_buf(r, (char *)recvbuf + rdispls[i], recvcounts[i],
						 recvtypes[i], false, true, &x.rcv[i].len);
	return nexch_start(r, &x, request);
pass:
	return KP_COLL_PASS(PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes,
						     recvbuf, recvcounts, rdispls, recvtypes,
						     comm, request),
			    PMPIX_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls,
							  sendtypes, recvbuf, recvcounts,
							  rdispls, recvtypes, comm, KP_PINFO,
							  request));
}

/* The core's communicator calls reach the two above through these. */
__attribute__((constructor)) static void topo_hooks(void)
{
	kp_coll_topo_created = topo_created;
	kp_coll_topo_dup = topo_dup;
}
