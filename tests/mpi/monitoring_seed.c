// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Written from the seed's text only (seed 002, listing 2 and figure 1):
 * how MPI_Barrier is carried out, then the reordering steps, with nothing
 * but the seed's API and constants. Checks that every call returns
 * MPI_SUCCESS and that the files the seed names exist. Any rank count.
 * MONITORING_DIR: where the files go (default: the current directory).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "MPI_Monitoring.h"

#define OK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) { \
	fprintf(stderr, "FAIL monitoring_seed: %s returned %d\n", #call, rc_); \
	MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

int main(void)
{
	const char *dir = getenv("MONITORING_DIR");
	char name[512], path[600];
	unsigned long *size_mat = NULL;
	int myrank, n, provided, array_size, *k, i;
	MPI_Comm opt_comm;

	MPI_Init(NULL, NULL);
	MPI_M_init();
	MPI_M_msid id;
	MPI_M_start(MPI_COMM_WORLD, &id);
	MPI_Barrier(MPI_COMM_WORLD);
	OK(MPI_M_suspend(id));
	snprintf(name, sizeof(name), "%s/barrier", dir && *dir ? dir : ".");
	OK(MPI_M_flush(id, name, MPI_M_ALL_COMM));
	OK(MPI_M_get_info(id, &provided, &array_size));
	OK(MPI_M_free(id));

	/* figure 1: monitor, rootgather at 0, map, broadcast, split */
	MPI_Comm_rank(MPI_COMM_WORLD, &myrank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (array_size != n) {
		fprintf(stderr, "FAIL monitoring_seed: array_size %d of %d\n", array_size, n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	k = malloc(sizeof(int) * n);
	OK(MPI_M_start(MPI_COMM_WORLD, &id));
	MPI_Sendrecv_replace(&myrank, 1, MPI_INT, (myrank + 1) % n, 0, (myrank + n - 1) % n, 0,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Comm_rank(MPI_COMM_WORLD, &myrank);
	OK(MPI_M_suspend(id));
	if (myrank == 0)
		size_mat = calloc((size_t)n * n, sizeof(unsigned long));
	OK(MPI_M_rootgather_data(id, 0, MPI_M_DATA_IGNORE, size_mat, MPI_M_P2P_ONLY));
	if (myrank == 0) {
		for (i = 0; i < n; i++) {	/* the ring: each sent 4 bytes to the next */
			if (size_mat[i * n + (i + 1) % n] != (n > 1 ? sizeof(int) : 0)) {
				fprintf(stderr, "FAIL monitoring_seed: %d sent %lu bytes to %d\n", i,
					size_mat[i * n + (i + 1) % n], (i + 1) % n);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			k[i] = n - 1 - i;	/* some mapping */
		}
	}
	OK(MPI_M_rootflush(id, 0, name, MPI_M_P2P_ONLY));
	MPI_Bcast(k, n, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Comm_split(MPI_COMM_WORLD, 0, k[myrank], &opt_comm);
	MPI_Comm_rank(opt_comm, &i);
	if (i != k[myrank]) {
		fprintf(stderr, "FAIL monitoring_seed: rank %d in opt_comm, not %d\n", i, k[myrank]);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	OK(MPI_M_free(MPI_M_ALL_MSID));
	OK(MPI_M_finalize());
	snprintf(path, sizeof(path), "%s.%d.prof", name, myrank);
	if (access(path, R_OK)) {
		fprintf(stderr, "FAIL monitoring_seed: no %s\n", path);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Comm_free(&opt_comm);
	free(k);
	free(size_mat);
	MPI_Finalize();
	return 0;
}
