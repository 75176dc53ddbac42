// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * C half of monitoring_f: Open MPI's Fortran bindings call its C PMPI_
 * functions directly, so Fortran MPI_Send never passes the shim (nor any
 * C PMPI tool). The traffic the Fortran test monitors is therefore sent
 * here, in C: rank r sends r+1 messages of r+1 doubles to r+1 (mod size)
 * and receives from r-1; tag as given.
 */
#include <mpi.h>

void ring_traffic_(int *tag)
{
	double buf[64] = { 0 };
	int rank, size, i, nxt, prv;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	nxt = (rank + 1) % size;
	prv = (rank + size - 1) % size;
	for (i = 0; i <= rank; i++)
		MPI_Send(buf, rank + 1, MPI_DOUBLE, nxt, *tag, MPI_COMM_WORLD);
	for (i = 0; i <= prv; i++)
		MPI_Recv(buf, 64, MPI_DOUBLE, prv, *tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
