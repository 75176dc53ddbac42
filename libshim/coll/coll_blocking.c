// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The blocking all-to-all collectives MPI_Allreduce, MPI_Alltoall(v),
 * MPI_Allgather(v) and MPI_Barrier: Open MPI's own (PMPI), timed by the
 * wait-state profiler when it is on (waitprof_hooks.h: Wait at NxN from
 * the global minimum). Their nonblocking forms are coll_mpi.c's.
 */
#include <mpi.h>
#include "shim.h"
#include "waitprof_hooks.h"

#define COLL(fn, bytes, call) do {					\
	struct kp_wp_call w;						\
	int rc;								\
									\
	if (!kp_wp_profiling())							\
		return call;						\
	kp_wp_enter(&w, __builtin_return_address(0), fn);			\
	rc = call;							\
	kp_wp_leave(&w, fn, bytes);						\
	return rc;							\
} while (0)

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
		  MPI_Comm comm)
{
	COLL(KP_WP_ALLREDUCE, kp_wp_type_bytes(count, type),
	     PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, MPI_Comm comm)
{
	COLL(KP_WP_ALLTOALL, kp_wp_type_bytes(scount, stype),
	     PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
		  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
		  MPI_Comm comm)
{
	/* size class of the first block: the sizes of a v-collective vary */
	COLL(KP_WP_ALLTOALLV, scounts && sbuf != MPI_IN_PLACE ? kp_wp_type_bytes(scounts[0], stype) : 0,
	     PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		  MPI_Datatype rtype, MPI_Comm comm)
{
	COLL(KP_WP_ALLGATHER, kp_wp_type_bytes(sbuf == MPI_IN_PLACE ? rcount : scount,
					 sbuf == MPI_IN_PLACE ? rtype : stype),
	     PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
	COLL(KP_WP_ALLGATHERV, sbuf == MPI_IN_PLACE ? 0 : kp_wp_type_bytes(scount, stype),
	     PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Barrier(MPI_Comm comm)
{
	COLL(KP_WP_BARRIER, 0, PMPI_Barrier(comm));
}
