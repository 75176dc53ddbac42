// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI-4's persistent collectives as Open MPI 4.1 exports them (MPIX_*_init,
 * its pcollreq extension, <mpi-ext.h>). Each builds the schedule once,
 * through the nonblocking entry point with kp_coll_pinit set: the request
 * keeps its steps (peers already job ranks), temporaries, typed inputs to
 * pack and outputs to unpack, and its sequence number (tag), drawn at the
 * init, which MPI orders like any collective. MPI_Start/Startall
 * (persist.c -> kp_coll_restart()) pack the inputs and hand the same steps
 * to the module again; completion unpacks and leaves the request inactive;
 * MPI_Request_free releases what it kept.
 *
 * Why the shim keeps the schedule, not the module: the module would save
 * only the copy and the checks of the steps (48 bytes each, a few dozen
 * steps) per start, and a schedule kept in the kernel would hold kernel
 * memory (bounded by max_colls) for as long as the program keeps the
 * request, even between starts, and need a new ioctl and its own
 * lifetime rules; the per-start cost that matters (building the schedule,
 * packing decisions, allocating temporaries) is what the shim saves.
 *
 * Whatever the nonblocking call would pass through to Open MPI goes to
 * Open MPI's MPIX_*_init instead (KP_COLL_PASS), with the info argument.
 */
#include "coll.h"

#define PINIT(call) do {						\
	KP_GUARD();							\
	int rc_;							\
									\
	kp_coll_pinit = (struct kp_coll_pinit){ .on = true, .info = info };	\
	rc_ = (call);							\
	kp_coll_pinit.on = false;					\
	return rc_;							\
} while (0)

int MPIX_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
	PINIT(MPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
	      request));
}

int MPIX_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
	      comm, request));
}

int MPIX_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request));
}

int MPIX_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
	PINIT(MPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
	      request));
}

int MPIX_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
	PINIT(MPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
	      recvtype, comm, request));
}

int MPIX_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                        const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
	      recvtypes, comm, request));
}

int MPIX_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ibarrier(comm, request));
}

int MPIX_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ibcast(buffer, count, datatype, root, comm, request));
}

int MPIX_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request));
}

int MPIX_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request)
{
	PINIT(MPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
	      request));
}

int MPIX_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
	      root, comm, request));
}

int MPIX_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request));
}

int MPIX_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request)
{
	PINIT(MPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request));
}

int MPIX_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request)
{
	PINIT(MPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request));
}

int MPIX_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request));
}

int MPIX_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request)
{
	PINIT(MPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
	      request));
}

int MPIX_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                       MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                       int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
	      root, comm, request));
}

int MPIX_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
	      comm, request));
}

int MPIX_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const int recvcounts[], const int displs[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
	PINIT(MPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
	      recvtype, comm, request));
}

int MPIX_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
	      comm, request));
}

int MPIX_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request)
{
	PINIT(MPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
	      rdispls, recvtype, comm, request));
}

int MPIX_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                 const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                 MPI_Request *request)
{
	PINIT(MPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
	      rdispls, recvtypes, comm, request));
}
