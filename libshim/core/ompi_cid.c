// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The one place that reads Open MPI internals: a communicator's context id
 * (ompi_communicator_t.c_contextid, from Open MPI's installed headers).
 *
 * Why: Open MPI 4.1 agrees every intra-communicator's context id among
 * its members when it creates it (ompi_comm_nextcid: the same cid on
 * every member, ob1 puts it in its wire headers). Using it as the kprog
 * context needs no agreement of our own: no Allreduce in the constructors
 * (so communicators made concurrently by several threads cannot pick the
 * same id) and a communicator from MPI_Comm_idup gets its context when
 * Open MPI completes the idup, without a blocking call.
 * Safety: at init the layout is checked against public calls (rank,
 * Fortran index, WORLD = 0, SELF = 1, as kprog numbers them); if anything
 * differs the shim agrees context ids itself as before (comm.c).
 */
#include <stddef.h>
#include "ompi/communicator/communicator.h"
#include "shim.h"

static bool usable;

static bool looks_right(MPI_Comm comm, uint32_t want)
{
	const struct ompi_communicator_t *c = (const struct ompi_communicator_t *)comm;
	int rank;

	PMPI_Comm_rank(comm, &rank);
	return c->c_contextid == want && c->c_my_rank == rank &&
	       c->c_f_to_c_index == PMPI_Comm_c2f(comm);
}

bool kp_ompi_cid_init(void)
{
	usable = looks_right(MPI_COMM_WORLD, 0) && looks_right(MPI_COMM_SELF, 1);
	return usable;
}

bool kp_ompi_cid_usable(void)
{
	return usable;
}

uint32_t kp_ompi_cid(MPI_Comm comm)
{
	return ((const struct ompi_communicator_t *)comm)->c_contextid;
}
