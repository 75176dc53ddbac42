/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tests/mpich: no MPICH MPIX extensions (Open MPI). What MPICH's tests call
 * by an MPI-4 name that Open MPI 4.1.4 has under another:
 * - the persistent collectives MPI_*_init are Open MPI's MPIX_*_init
 *   (its pcollreq extension, <mpi-ext.h>; same arguments);
 * - MPI_Errhandler_set (removed in MPI-3, an error in Open MPI's mpi.h) is
 *   MPI_Comm_set_errhandler.
 */
#ifndef KPROG_MTEST_MPIX_H
#define KPROG_MTEST_MPIX_H
#include <mpi-ext.h>
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPI_Barrier_init MPIX_Barrier_init
#define MPI_Bcast_init MPIX_Bcast_init
#define MPI_Gather_init MPIX_Gather_init
#define MPI_Gatherv_init MPIX_Gatherv_init
#define MPI_Scatter_init MPIX_Scatter_init
#define MPI_Scatterv_init MPIX_Scatterv_init
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Allgatherv_init MPIX_Allgatherv_init
#define MPI_Alltoall_init MPIX_Alltoall_init
#define MPI_Alltoallv_init MPIX_Alltoallv_init
#define MPI_Alltoallw_init MPIX_Alltoallw_init
#define MPI_Reduce_init MPIX_Reduce_init
#define MPI_Allreduce_init MPIX_Allreduce_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Reduce_scatter_init MPIX_Reduce_scatter_init
#define MPI_Scan_init MPIX_Scan_init
#define MPI_Exscan_init MPIX_Exscan_init
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#define MPI_Neighbor_allgatherv_init MPIX_Neighbor_allgatherv_init
#define MPI_Neighbor_alltoall_init MPIX_Neighbor_alltoall_init
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#define MPI_Neighbor_alltoallw_init MPIX_Neighbor_alltoallw_init
#endif
#undef MPI_Errhandler_set
#define MPI_Errhandler_set MPI_Comm_set_errhandler
#endif
