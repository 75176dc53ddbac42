// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Persistent requests: *_init make an inactive kprog request, Start and
 * Startall post it; a completed one goes back to inactive on Wait/Test.
 * The datatype is duplicated so that the user may free theirs meanwhile.
 * Persistent collectives (MPIX_*_init, coll_persist.c) start here too.
 */
#include "shim.h"
#include "coll.h"

static int init_req(int kind, int mode, const void *buf, int count, MPI_Datatype type,
		    int peer, int tag, MPI_Comm comm, struct kp_comm *c, MPI_Request *req)
{
	int ni, na, nd, comb, rc;
	struct kp_req *r;

	rc = kp_check_args(c, count, peer, tag, kind == KR_RECV);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	r = kp_new_op(kind, mode, c, buf, count, type, peer, tag);
	r->persistent = true;
	PMPI_Type_get_envelope(type, &ni, &na, &nd, &comb);
	if (comb != MPI_COMBINER_NAMED && PMPI_Type_dup(type, &r->type) == MPI_SUCCESS)
		r->type_dup = true;
	*req = kp_handle(r);
	return MPI_SUCCESS;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		  MPI_Comm comm, MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c)
		return PMPI_Send_init(buf, count, type, dest, tag, comm, req);
	return init_req(KR_SEND, M_STD, buf, count, type, dest, tag, comm, c, req);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c)
		return PMPI_Ssend_init(buf, count, type, dest, tag, comm, req);
	return init_req(KR_SEND, M_SYNC, buf, count, type, dest, tag, comm, c, req);
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c)
		return PMPI_Rsend_init(buf, count, type, dest, tag, comm, req);
	return init_req(KR_SEND, M_READY, buf, count, type, dest, tag, comm, c, req);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c)
		return PMPI_Bsend_init(buf, count, type, dest, tag, comm, req);
	return init_req(KR_SEND, M_BUFFERED, buf, count, type, dest, tag, comm, c, req);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag,
		  MPI_Comm comm, MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c)
		return PMPI_Recv_init(buf, count, type, source, tag, comm, req);
	return init_req(KR_RECV, M_STD, buf, count, type, source, tag, comm, c, req);
}

static int start_one(struct kp_req *r)
{
	if (!r->persistent || r->state != RS_INACTIVE)
		return MPI_ERR_REQUEST;
	if (r->kind == KR_SEND)
		return kp_start_send(r);
	if (r->kind == KR_COLL)
		return kp_coll_restart(r);	/* MPIX_*_init: coll_persist.c */
	r->post_tick = kp_wp_on ? kp_ticks() : 0;	/* the profiler's receive start */
	return kp_start_recv(r);
}

int MPI_Start(MPI_Request *req)
{
	KP_GUARD();
	struct kp_req *r;
	MPI_Comm ec;
	int rc;

	if (!req || !kp_is_req(*req))
		return PMPI_Start(req);
	kp_progress();
	r = kp_req(*req);
	ec = kp_req_comm(r);
	rc = start_one(r);
	return kp_err(ec, rc);
}

/* Posted in array order, so matching order follows the array. */
int MPI_Startall(int n, MPI_Request reqs[])
{
	KP_GUARD();
	int i, rc;
	bool ours = false;

	for (i = 0; i < n; i++)
		if (kp_is_req(reqs[i]))
			ours = true;
	if (!ours)
		return PMPI_Startall(n, reqs);
	kp_progress();
	for (i = 0; i < n; i++) {
		if (kp_is_req(reqs[i])) {
			struct kp_req *r = kp_req(reqs[i]);
			MPI_Comm ec = kp_req_comm(r);

			rc = start_one(r);
			if (rc != MPI_SUCCESS)
				return kp_err(ec, rc);
		} else {
			rc = PMPI_Start(&reqs[i]);
			if (rc != MPI_SUCCESS)
				return rc;
		}
	}
	return MPI_SUCCESS;
}
