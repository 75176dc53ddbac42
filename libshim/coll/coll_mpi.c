// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MPI entry points of the nonblocking collectives. On a communicator
 * whose collectives go to the module (kp_coll_comm()) each turns its
 * buffers into packed bytes (coll.c), builds the schedule (coll_algo.c)
 * and hands it over; everything else passes through to Open MPI
 * unchanged: other communicators (intercommunicators, those Open MPI
 * keeps), a module without KPROG_FEAT_COLL, reductions with a
 * user-defined op or a type the module does not reduce (coll_types.c),
 * and arguments MPI calls erroneous (Open MPI reports them). Each of
 * these is decided alike on every member (coll.c's header says why that
 * matters).
 */
#include <stdlib.h>
#include "coll.h"
#include "dtype.h"

#define IN_PLACE(b) ((const void *)(b) == (const void *)MPI_IN_PLACE)

KP_COLL_TEXT static bool bad_root(const struct kp_comm *c, int root)
{
	return root < 0 || root >= c->size;
}

/* a rooted call's root working in place: its other buffer's count and type are insignificant */
KP_COLL_TEXT static bool root_in_place(const struct kp_comm *c, int root, const void *buf)
{
	return c->rank == root && IN_PLACE(buf);
}

/* count elements per rank for all ranks do not fit an int: Open MPI's (rare) */
KP_COLL_TEXT static bool too_many(const struct kp_comm *c, int count)
{
	return (int64_t)count * c->size > INT32_MAX;
}

/*
 * Below KPROG_COLL_MIN bytes per rank a collective stays with Open MPI:
 * each round of a schedule that waited is started by a kernel work item,
 * which costs more than Open MPI's few shared-memory polls for small
 * data. With KPROG_COLL_MIN unset (-1) the floor is the family's, from
 * NBCBench's work-based overhead (docs/DESIGN.md, "Collectives in the
 * shim", *Which sizes go to the module*): reductions have a work item per
 * round between a transfer and its reduction, data movement only its
 * transfers'. The size is one every member computes alike (MPI's
 * matching type signatures), so all take the same side; the v forms have
 * no such size and always go to the module.
 */
#define KP_COLL_MIN_MOVE	(256 * 1024)	/* bcast, alltoall, gather, scatter, allgather */
#define KP_COLL_MIN_REDUCE	(1024 * 1024)	/* allreduce, reduce, scans, reduce_scatter */

enum kp_coll_fam { KP_FAM_MOVE, KP_FAM_REDUCE };

/*
 * The type's size from the shim's quick table (dtype.h) when the type is
 * there (a hit means a valid type the shim has seen: filled by the
 * module's path of an earlier call, cleared when the program frees the
 * type), else from Open MPI as before, erroneous types included.
 */
KP_COLL_TEXT static bool small(enum kp_coll_fam fam, int count, MPI_Datatype type, int mult)
{
	const struct kp_quick_type *q = kp_type_quick_peek(type);
	uint64_t min = kp.coll_min;
	int64_t tsize;
	int isize;

	if (kp.coll_min_auto)
		min = fam == KP_FAM_REDUCE ? KP_COLL_MIN_REDUCE : KP_COLL_MIN_MOVE;
	if (!min)
		return false;
	if (count < 0)
		return false;	/* erroneous: the module's path reports it as before */
	if (q) {
		tsize = q->size;
	} else {
		if (PMPI_Type_size(type, &isize) != MPI_SUCCESS)
			return false;
		tsize = isize;
	}
	return (uint64_t)count * (uint64_t)tsize * (uint64_t)mult < min;
}

/* n sizes for the vector forms; freed by the caller after the build */
static size_t *sizes(int n, int arrays)
{
	size_t *p = calloc((size_t)n * arrays, sizeof(*p));

	if (!p)
		abort();
	return p;
}

KP_COLL_TEXT int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_req *r;

	if (!c || kp.coll_min || kp.coll_min_auto)
		return KP_COLL_PASS(PMPI_Ibarrier(comm, request),
				    PMPIX_Barrier_init(comm, KP_PINFO, request));
	r = kp_coll_new(c);
	r->coll->family = KP_CF_BARRIER;
	kp_build_barrier(&r->coll->s);
	return kp_coll_start(r, request);
}

KP_COLL_TEXT int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
	       MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_req *r;
	size_t bytes;
	void *b;

	if (!c || count < 0 || bad_root(c, root) || small(KP_FAM_MOVE, count, datatype, 1))
		return KP_COLL_PASS(PMPI_Ibcast(buffer, count, datatype, root, comm, request),
				    PMPIX_Bcast_init(buffer, count, datatype, root, comm, KP_PINFO, request));
	r = kp_coll_new(c);
	b = kp_coll_buf(r, buffer, count, datatype, c->rank == root, c->rank != root, &bytes);
	if (b)
		kp_build_bcast(&r->coll->s, b, bytes, root);
	return kp_coll_start(r, request);
}

KP_COLL_TEXT int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
		   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_redop ro;
	struct kp_req *r;

	if (!c || count < 0 || small(KP_FAM_REDUCE, count, datatype, 1) ||
	    !kp_coll_redop(datatype, op, &ro))
		return KP_COLL_PASS(PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request),
				    PMPIX_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, KP_PINFO, request));
	r = kp_coll_new(c);
	kp_build_allreduce(&r->coll->s, IN_PLACE(sendbuf) ? NULL : sendbuf, recvbuf,
			   (size_t)count, &ro);
	return kp_coll_start(r, request);
}

KP_COLL_TEXT int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
		int root, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_redop ro;
	struct kp_req *r;

	if (!c || count < 0 || bad_root(c, root) || small(KP_FAM_REDUCE, count, datatype, 1) ||
	    !kp_coll_redop(datatype, op, &ro))
		return KP_COLL_PASS(PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request),
				    PMPIX_Reduce_init(sendbuf, recvbuf, count, datatype, op, root, comm, KP_PINFO, request));
	r = kp_coll_new(c);
	kp_build_reduce(&r->coll->s, IN_PLACE(sendbuf) && c->rank == root ? NULL : sendbuf,
			recvbuf, (size_t)count, &ro, root);
	return kp_coll_start(r, request);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
	      MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_redop ro;
	struct kp_req *r;

	if (!c || count < 0 || small(KP_FAM_REDUCE, count, datatype, 1) ||
	    !kp_coll_redop(datatype, op, &ro))
		return KP_COLL_PASS(PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request),
				    PMPIX_Scan_init(sendbuf, recvbuf, count, datatype, op, comm, KP_PINFO, request));
	r = kp_coll_new(c);
	kp_build_scan(&r->coll->s, IN_PLACE(sendbuf) ? NULL : sendbuf, recvbuf, (size_t)count,
		      &ro, false);
	return kp_coll_start(r, request);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
		MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_redop ro;
	struct kp_req *r;

	if (!c || count < 0 || small(KP_FAM_REDUCE, count, datatype, 1) ||
	    !kp_coll_redop(datatype, op, &ro))
		return KP_COLL_PASS(PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request),
				    PMPIX_Exscan_init(sendbuf, recvbuf, count, datatype, op, comm, KP_PINFO, request));
	r = kp_coll_new(c);
	kp_build_scan(&r->coll->s, IN_PLACE(sendbuf) ? NULL : sendbuf, recvbuf, (size_t)count,
		      &ro, true);
	return kp_coll_start(r, request);
}

static int reduce_scatter(struct kp_comm *c, const void *sendbuf, void *recvbuf,
			  const int *recvcounts, int block, const struct kp_redop *ro,
			  MPI_Request *request)
{
	struct kp_req *r = kp_coll_new(c);
	size_t *counts = sizes(c->size, 1);

	for (int i = 0; i < c->size; i++)
		counts[i] = (size_t)(recvcounts ? recvcounts[i] : block);
	kp_build_reduce_scatter(&r->coll->s, IN_PLACE(sendbuf) ? NULL : sendbuf, recvbuf, counts,
				ro);
	free(counts);
	return kp_coll_start(r, request);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
			      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
			      MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_redop ro;

	if (!c || recvcount < 0 || small(KP_FAM_REDUCE, recvcount, datatype, c->size) ||
	    !kp_coll_redop(datatype, op, &ro))
		return KP_COLL_PASS(PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype,
							       op, comm, request),
				    PMPIX_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount,
							       datatype, op, comm, KP_PINFO,
							       request));
	return reduce_scatter(c, sendbuf, recvbuf, NULL, recvcount, &ro, request);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
			MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	struct kp_redop ro;

	if (!c || !recvcounts || !kp_coll_redop(datatype, op, &ro))
		return KP_COLL_PASS(PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
							 comm, request),
				    PMPIX_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype,
							      op, comm, KP_PINFO, request));
	long long total = 0;

	for (int i = 0; i < c->size; i++) {
		if (recvcounts[i] < 0)
			return KP_COLL_PASS(PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
						    comm, request),
				    PMPIX_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype, op,
						    comm, KP_PINFO, request));
		total += recvcounts[i];
	}
	/* recvcounts is significant on every member: the same total everywhere */
	if (total <= INT32_MAX && small(KP_FAM_REDUCE, (int)total, datatype, 1))
		return KP_COLL_PASS(PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op,
							 comm, request),
				    PMPIX_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype,
							      op, comm, KP_PINFO, request));
	return reduce_scatter(c, sendbuf, recvbuf, recvcounts, 0, &ro, request);
}

/* ---- data movement: any datatype, packed where it is not one block ---- */

KP_COLL_TEXT int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool ip = IN_PLACE(sendbuf);
	size_t sbytes, rbytes;
	const void *sb = NULL;
	struct kp_req *r;
	void *rb;

	/* in place, sendcount is insignificant: it must not decide the path (as on every member) */
	if (!c || recvcount < 0 || (!ip && (sendcount < 0 || too_many(c, sendcount))) ||
	    too_many(c, recvcount) || small(KP_FAM_MOVE, recvcount, recvtype, c->size))
		return KP_COLL_PASS(PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      comm, request),
				    PMPIX_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      comm, KP_PINFO, request));
	r = kp_coll_new(c);
	rb = kp_coll_buf(r, recvbuf, recvcount * c->size, recvtype, ip, true, &rbytes);
	if (!ip)
		sb = kp_coll_buf(r, sendbuf, sendcount * c->size, sendtype, true, false, &sbytes);
	if (rb && (ip || sb))
		kp_build_alltoall(&r->coll->s, sb, rb, rbytes / c->size);
	return kp_coll_start(r, request);
}

KP_COLL_TEXT int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool ip = IN_PLACE(sendbuf);
	size_t sbytes, rbytes;
	const void *sb = NULL;
	struct kp_req *r;
	void *rb;

	if (!c || recvcount < 0 || (!ip && sendcount < 0) || too_many(c, recvcount) ||
	    small(KP_FAM_MOVE, recvcount, recvtype, c->size))
		return KP_COLL_PASS(PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				       comm, request),
				    PMPIX_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				       comm, KP_PINFO, request));
	r = kp_coll_new(c);
	rb = kp_coll_buf(r, recvbuf, recvcount * c->size, recvtype, ip, true, &rbytes);
	if (!ip)
		sb = kp_coll_buf(r, sendbuf, sendcount, sendtype, true, false, &sbytes);
	if (rb && (ip || sb))
		kp_build_allgather(&r->coll->s, sb, rb, rbytes / c->size);
	return kp_coll_start(r, request);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool is_root, ip;
	size_t sbytes = 0, rbytes = 0;
	const void *sb = NULL;
	void *rb = NULL;
	struct kp_req *r;

	/*
	 * Only what is significant on this rank decides (as on every member):
	 * the receive arguments at the root only, the send ones not at a root
	 * that gathers in place (MPICH's tests pass -1 and MPI_DATATYPE_NULL).
	 */
	if (!c || bad_root(c, root) ||
	    (sendcount < 0 && !root_in_place(c, root, sendbuf)) ||
	    (c->rank == root && (recvcount < 0 || too_many(c, recvcount))) ||
	    (c->rank == root ? small(KP_FAM_MOVE, recvcount, recvtype, c->size) :
			       small(KP_FAM_MOVE, sendcount, sendtype, c->size)))
		return KP_COLL_PASS(PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				    root, comm, request),
				    PMPIX_Gather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				    root, comm, KP_PINFO, request));
	is_root = c->rank == root;
	ip = is_root && IN_PLACE(sendbuf);
	r = kp_coll_new(c);
	if (is_root)
		rb = kp_coll_buf(r, recvbuf, recvcount * c->size, recvtype, ip, true, &rbytes);
	if (!ip)
		sb = kp_coll_buf(r, sendbuf, sendcount, sendtype, true, false, &sbytes);
	if ((!is_root || rb) && (ip || sb))
		kp_build_gather(&r->coll->s, sb, rb, is_root ? rbytes / c->size : sbytes, root);
	return kp_coll_start(r, request);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		 MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool is_root, ip;
	size_t sbytes = 0, rbytes = 0;
	const void *sb = NULL;
	void *rb = NULL;
	struct kp_req *r;

	/* the send arguments count at the root only, the receive ones not at an in-place root */
	if (!c || bad_root(c, root) ||
	    (c->rank == root && (sendcount < 0 || too_many(c, sendcount))) ||
	    (recvcount < 0 && !root_in_place(c, root, recvbuf)) ||
	    (c->rank == root ? small(KP_FAM_MOVE, sendcount, sendtype, c->size) :
			       small(KP_FAM_MOVE, recvcount, recvtype, c->size)))
		return KP_COLL_PASS(PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				     root, comm, request),
				    PMPIX_Scatter_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				     root, comm, KP_PINFO, request));
	is_root = c->rank == root;
	ip = is_root && IN_PLACE(recvbuf);
	r = kp_coll_new(c);
	if (is_root)
		sb = kp_coll_buf(r, sendbuf, sendcount * c->size, sendtype, true, false, &sbytes);
	if (!ip)
		rb = kp_coll_buf(r, recvbuf, recvcount, recvtype, false, true, &rbytes);
	if ((!is_root || sb) && (ip || rb))
		kp_build_scatter(&r->coll->s, sb, rb, is_root ? sbytes / c->size : rbytes, root);
	return kp_coll_start(r, request);
}

static bool any_negative(const int *a, int n)
{
	if (!a)
		return true;
	for (int i = 0; i < n; i++)
		if (a[i] < 0)
			return true;
	return false;
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
		 MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool is_root, ip;
	size_t sbytes = 0, *bc;
	const void *sb = NULL;
	void *rb = NULL;
	struct kp_req *r;

	if (!c || bad_root(c, root) ||
	    (sendcount < 0 && !root_in_place(c, root, sendbuf)) ||
	    (c->rank == root && (any_negative(recvcounts, c->size) || !displs)))
		return KP_COLL_PASS(PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
				     recvtype, root, comm, request),
				    PMPIX_Gatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
				     recvtype, root, comm, KP_PINFO, request));
	is_root = c->rank == root;
	ip = is_root && IN_PLACE(sendbuf);
	r = kp_coll_new(c);
	bc = sizes(c->size, 2);
	if (is_root)
		rb = kp_coll_vec(r, recvbuf, recvcounts, displs, recvtype, c->size, ip, true, bc,
				 bc + c->size);
	if (!ip)
		sb = kp_coll_buf(r, sendbuf, sendcount, sendtype, true, false, &sbytes);
	if ((!is_root || rb) && (ip || sb))
		kp_build_gatherv(&r->coll->s, sb, sbytes, rb, bc, bc + c->size, root);
	free(bc);
	return kp_coll_start(r, request);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
		  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
		  int root, MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool is_root, ip;
	size_t rbytes = 0, *bc;
	const void *sb = NULL;
	void *rb = NULL;
	struct kp_req *r;

	if (!c || bad_root(c, root) ||
	    (recvcount < 0 && !root_in_place(c, root, recvbuf)) ||
	    (c->rank == root && (any_negative(sendcounts, c->size) || !displs)))
		return KP_COLL_PASS(PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
				      recvtype, root, comm, request),
				    PMPIX_Scatterv_init(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
				      recvtype, root, comm, KP_PINFO, request));
	is_root = c->rank == root;
	ip = is_root && IN_PLACE(recvbuf);
	r = kp_coll_new(c);
	bc = sizes(c->size, 2);
	if (is_root)
		sb = kp_coll_vec(r, sendbuf, sendcounts, displs, sendtype, c->size, true, false,
				 bc, bc + c->size);
	if (!ip)
		rb = kp_coll_buf(r, recvbuf, recvcount, recvtype, false, true, &rbytes);
	if ((!is_root || sb) && (ip || rb))
		kp_build_scatterv(&r->coll->s, sb, bc, bc + c->size, rb, rbytes, root);
	free(bc);
	return kp_coll_start(r, request);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
		    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
		    MPI_Comm comm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool ip = IN_PLACE(sendbuf);
	size_t sbytes = 0, *bc;
	const void *sb = NULL;
	struct kp_req *r;
	void *rb;

	if (!c || (!ip && sendcount < 0) || any_negative(recvcounts, c->size) || !displs)
		return KP_COLL_PASS(PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
					recvtype, comm, request),
				    PMPIX_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
					recvtype, comm, KP_PINFO, request));
	r = kp_coll_new(c);
	bc = sizes(c->size, 2);
	rb = kp_coll_vec(r, recvbuf, recvcounts, displs, recvtype, c->size, ip, true, bc,
			 bc + c->size);
	if (!ip)
		sb = kp_coll_buf(r, sendbuf, sendcount, sendtype, true, false, &sbytes);
	if (rb && (ip || sb))
		kp_build_allgatherv(&r->coll->s, sb, sbytes, rb, bc, bc + c->size);
	free(bc);
	return kp_coll_start(r, request);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
		   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
		   MPI_Request *request)
{
	KP_GUARD();
	struct kp_comm *c = kp_coll_comm(comm);
	bool ip = IN_PLACE(sendbuf);
	size_t *bc;
	const void *sb = NULL;
	struct kp_req *r;
	void *rb;
	int n;

	if (!c || any_negative(recvcounts, c->size) || !rdispls ||
	    (!ip && (any_negative(sendcounts, c->size) || !sdispls)))
		return KP_COLL_PASS(PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
				       rdispls, recvtype, comm, request),
				    PMPIX_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
				       rdispls, recvtype, comm, KP_PINFO, request));
	n = c->size;
	r = kp_coll_new(c);
	bc = sizes(n, 4);	/* send counts, displacements; receive counts, displacements */
	rb = kp_coll_vec(r, recvbuf, recvcounts, rdispls, recvtype, n, ip, true, bc + 2 * n,
			 bc + 3 * n);
	if (!ip)
		sb = kp_coll_vec(r, sendbuf, sendcounts, sdispls, sendtype, n, true, false, bc,
				 bc + n);
	if (rb && (ip || sb))
		kp_build_alltoallv(&r->coll->s, sb, bc, bc + n, rb, bc + 2 * n, bc + 3 * n);
	free(bc);
	return kp_coll_start(r, request);
}
