// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tests/mpich/mtest_run.c: main() for the MPICH tests written as
 * `int run(const char *arg)` (most of test/mpi/coll), written for kprog as
 * the counterpart of MPICH's util/run_mpitests.c built without MULTI_TESTS:
 * the command line's words joined by spaces are run()'s argument, and rank
 * 0 prints "No Errors" or "Found N errors" for the sum over the ranks.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpitest.h"

int main(int argc, char **argv)
{
	size_t len = 1;
	int i, ret, all = 0, rank;
	char *args;

	for (i = 1; i < argc; i++)
		len += strlen(argv[i]) + 1;
	args = calloc(1, len);
	for (i = 1; i < argc; i++) {
		if (i > 1)
			strcat(args, " ");
		strcat(args, argv[i]);
	}
	MTest_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	ret = run(args);
	MPI_Reduce(&ret, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (all)
			printf("Found %d errors\n", all);
		else
			printf("No Errors\n");
		fflush(stdout);
	}
	free(args);
	MPI_Finalize();
	return ret;
}
