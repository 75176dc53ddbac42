// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_Comm_idup, the one nonblocking communicator constructor of MPI 3.1
 * (and Open MPI 4.1). Open MPI agrees the new communicator's context id
 * in the background; kprog uses that id (ompi_cid.c), so registering the
 * communicator needs no collective: the returned request is a kprog one
 * wrapping Open MPI's, and every progress step tests Open MPI's request
 * and, once it completed, registers the communicator and completes ours.
 * Wait/Test and mixed arrays therefore treat it like any kprog request.
 * Without a usable Open MPI context id the call passes through (the new
 * communicator then stays with Open MPI).
 */
#include "shim.h"

struct kp_req *kp_idup_pending;

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
	KP_GUARD();
	struct kp_req *r;
	MPI_Request inner;
	int rc;

	/* a duplicate qualifies exactly when its parent does */
	if (!kp_ompi_cid_usable() || !kp_comm_lookup(comm))
		return PMPI_Comm_idup(comm, newcomm, request);
	rc = PMPI_Comm_idup(comm, newcomm, &inner);
	if (rc != MPI_SUCCESS)
		return rc;
	r = kp_req_alloc();
	r->kind = KR_IDUP;
	r->inner = inner;
	/* Open MPI 4.1 hands out the communicator object at once */
	r->newcomm = *newcomm;
	r->state = RS_ACTIVE;
	r->pnext = kp_idup_pending;
	kp_idup_pending = r;
	*request = kp_handle(r);
	return MPI_SUCCESS;
}

/*
 * Called from kp_progress, never from inside Open MPI's progress engine
 * (PMPI_Test there would re-enter it).
 */
void kp_idup_poll(void)
{
	struct kp_req **pp = &kp_idup_pending, *r;
	int flag, rc;

	while ((r = *pp)) {
		flag = 0;
		rc = PMPI_Test(&r->inner, &flag, MPI_STATUS_IGNORE);
		if (!flag && rc == MPI_SUCCESS) {
			pp = &r->pnext;
			continue;
		}
		*pp = r->pnext;
		if (rc == MPI_SUCCESS)
			kp_comm_register(r->newcomm, 0, false);
		kp_complete_now(r, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
		r->err = rc;
		r->status.MPI_ERROR = rc;
		if (r->user_freed)
			kp_req_release(r);
	}
}
