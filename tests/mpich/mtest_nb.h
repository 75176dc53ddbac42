/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tests/mpich/mtest_nb.h, written for kprog: with -DKPROG_MPICH_NB
 * (tests/mpich/run-suite --as-nonblocking), every blocking collective an
 * MPICH test calls is its nonblocking form followed by MPI_Wait, so that
 * MPICH's checks of the blocking calls (every op and type, MPI_IN_PLACE,
 * derived datatypes, odd communicators) exercise the nonblocking
 * collectives the shim turns into the module's schedules. Open MPI 4.1.4
 * has every one of them, so plain Open MPI runs the same program.
 */
#ifndef KPROG_MTEST_NB_H
#define KPROG_MTEST_NB_H
#include <mpi.h>

#define KP_NB_WAIT(icall) do {						\
	MPI_Request r_ = MPI_REQUEST_NULL;				\
	int e_ = (icall);						\
									\
	if (e_ != MPI_SUCCESS)						\
		return e_;						\
	return MPI_Wait(&r_, MPI_STATUS_IGNORE);			\
} while (0)

static inline int kp_nb_Barrier(MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ibarrier(comm, &r_));
}
#define MPI_Barrier kp_nb_Barrier

static inline int kp_nb_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ibcast(b, c, t, root, comm, &r_));
}
#define MPI_Bcast kp_nb_Bcast

static inline int kp_nb_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Igather(sb, sc, st, rb, rc, rt, root, comm, &r_));
}
#define MPI_Gather kp_nb_Gather

static inline int kp_nb_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt, int root, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Igatherv(sb, sc, st, rb, rc, d, rt, root, comm, &r_));
}
#define MPI_Gatherv kp_nb_Gatherv

static inline int kp_nb_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, &r_));
}
#define MPI_Scatter kp_nb_Scatter

static inline int kp_nb_Scatterv(const void *sb, const int sc[], const int d[], MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iscatterv(sb, sc, d, st, rb, rc, rt, root, comm, &r_));
}
#define MPI_Scatterv kp_nb_Scatterv

static inline int kp_nb_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iallgather(sb, sc, st, rb, rc, rt, comm, &r_));
}
#define MPI_Allgather kp_nb_Allgather

static inline int kp_nb_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iallgatherv(sb, sc, st, rb, rc, d, rt, comm, &r_));
}
#define MPI_Allgatherv kp_nb_Allgatherv

static inline int kp_nb_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, &r_));
}
#define MPI_Alltoall kp_nb_Alltoall

static inline int kp_nb_Alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ialltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, &r_));
}
#define MPI_Alltoallv kp_nb_Alltoallv

static inline int kp_nb_Alltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[], void *rb, const int rc[], const int rd[], const MPI_Datatype rt[], MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, &r_));
}
#define MPI_Alltoallw kp_nb_Alltoallw

static inline int kp_nb_Reduce(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ireduce(sb, rb, c, t, op, root, comm, &r_));
}
#define MPI_Reduce kp_nb_Reduce

static inline int kp_nb_Allreduce(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iallreduce(sb, rb, c, t, op, comm, &r_));
}
#define MPI_Allreduce kp_nb_Allreduce

static inline int kp_nb_Reduce_scatter(const void *sb, void *rb, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ireduce_scatter(sb, rb, rc, t, op, comm, &r_));
}
#define MPI_Reduce_scatter kp_nb_Reduce_scatter

static inline int kp_nb_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ireduce_scatter_block(sb, rb, rc, t, op, comm, &r_));
}
#define MPI_Reduce_scatter_block kp_nb_Reduce_scatter_block

static inline int kp_nb_Scan(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iscan(sb, rb, c, t, op, comm, &r_));
}
#define MPI_Scan kp_nb_Scan

static inline int kp_nb_Exscan(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Iexscan(sb, rb, c, t, op, comm, &r_));
}
#define MPI_Exscan kp_nb_Exscan

static inline int kp_nb_Neighbor_allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ineighbor_allgather(sb, sc, st, rb, rc, rt, comm, &r_));
}
#define MPI_Neighbor_allgather kp_nb_Neighbor_allgather

static inline int kp_nb_Neighbor_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ineighbor_allgatherv(sb, sc, st, rb, rc, d, rt, comm, &r_));
}
#define MPI_Neighbor_allgatherv kp_nb_Neighbor_allgatherv

static inline int kp_nb_Neighbor_alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ineighbor_alltoall(sb, sc, st, rb, rc, rt, comm, &r_));
}
#define MPI_Neighbor_alltoall kp_nb_Neighbor_alltoall

static inline int kp_nb_Neighbor_alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ineighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, &r_));
}
#define MPI_Neighbor_alltoallv kp_nb_Neighbor_alltoallv

static inline int kp_nb_Neighbor_alltoallw(const void *sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[], void *rb, const int rc[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm)
{
	KP_NB_WAIT(MPI_Ineighbor_alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, &r_));
}
#define MPI_Neighbor_alltoallw kp_nb_Neighbor_alltoallw

#endif
