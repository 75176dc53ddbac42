// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * reorder: the rank-reordering use of monitoring sessions (seed 002,
 * section 5 and figure 1). An iterative program whose heavy partners
 * (rank i and rank i + n/2, plus a light ring) sit on different nodes
 * under the default by-slot placement. It monitors its first iteration
 * with an MPI_M session, gathers the byte matrix at rank 0
 * (MPI_M_rootgather_data, P2P only), maps the processes onto the nodes
 * greedily by affinity (the seed uses TreeMatch; any mapping algorithm
 * fits, this one groups the heaviest communicating processes node by
 * node), broadcasts the mapping k and splits a communicator in which
 * rank i becomes k[i]; then it runs the same iterations on it.
 *
 * Prints t1 (n iterations before), t2 (monitoring, gather, mapping,
 * split), t3 (n iterations after), each the maximum over the ranks, and
 * the seed's gain 100 (t1 - (t2 + t3)) / t1 percent, side by side.
 * On one node every mapping is equivalent: the gain is then about 0 (or
 * the cost of the reordering); across nodes (scripts/vm-run --nodes 2)
 * the heavy pairs become node-local.
 *
 * Usage: mpirun -np N bench/monitoring/reorder [-n ITERS] [-s BYTES]   (N even)
 * Built with -lkprog: the MPI_M_* API is in libkprog.so.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "MPI_Monitoring.h"

static int iters = 50;
static long bytes = 1 << 20;
static char *sbuf[3], *rbuf[3];

/* One iteration: exchange with the partner (heavy) and the ring (light). */
static void iteration(MPI_Comm comm)
{
	int r, n, peer[3], i;
	long len[3];
	MPI_Request q[6];

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &n);
	peer[0] = (r + n / 2) % n;
	peer[1] = (r + 1) % n;
	peer[2] = (r + n - 1) % n;
	len[0] = bytes;
	len[1] = len[2] = bytes / 64;
	for (i = 0; i < 3; i++)
		MPI_Irecv(rbuf[i], (int)len[i], MPI_BYTE, peer[i], i, comm, &q[i]);
	/* tag: the ring's +1 neighbour receives on tag 2, -1 on tag 1 */
	MPI_Isend(sbuf[0], (int)len[0], MPI_BYTE, peer[0], 0, comm, &q[3]);
	MPI_Isend(sbuf[1], (int)len[1], MPI_BYTE, peer[1], 2, comm, &q[4]);
	MPI_Isend(sbuf[2], (int)len[2], MPI_BYTE, peer[2], 1, comm, &q[5]);
	MPI_Waitall(6, q, MPI_STATUSES_IGNORE);
}

static double run(MPI_Comm comm, int n)
{
	double t0, t;
	int i;

	MPI_Barrier(comm);
	t0 = MPI_Wtime();
	for (i = 0; i < n; i++)
		iteration(comm);
	t = MPI_Wtime() - t0;
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
	return t;
}

/*
 * Greedy mapping: slots[] lists the processes (old ranks) node by node,
 * g per node. Fill each node with the unplaced logical rank of largest
 * traffic, then the one with most traffic to those already there.
 * k[slot process] = logical rank placed there.
 */
static void map_greedy(int n, const unsigned long *w, const int *slots, int g, int *k)
{
	int *placed = calloc(n, sizeof(int)), *grp = malloc(sizeof(int) * n);
	int s = 0, m, i, j, best;
	double bw, a;

	while (s < n) {
		m = 0;
		for (; m < g && s < n; m++, s++) {
			best = -1;
			bw = -1;
			for (i = 0; i < n; i++) {
				if (placed[i])
					continue;
				a = 0;
				for (j = 0; j < m; j++)	/* affinity to the group */
					a += (double)w[i * n + grp[j]] + w[grp[j] * n + i];
				if (!m)		/* a new group: the heaviest first */
					for (j = 0; j < n; j++)
						a += (double)w[i * n + j] + w[j * n + i];
				if (a > bw) {
					bw = a;
					best = i;
				}
			}
			placed[best] = 1;
			grp[m] = best;
			k[slots[s]] = best;
		}
	}
	free(placed);
	free(grp);
}

int main(int argc, char **argv)
{
	int rank, size, c, nrank, nsize, *k, *slots, *nodeof, g, i, rc;
	double t1, t2, t3, t0;
	unsigned long *mat = NULL;
	MPI_Comm node, opt;
	MPI_M_msid id;

	MPI_Init(&argc, &argv);
	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		if (c == 'n')
			iters = atoi(optarg);
		else if (c == 's')
			bytes = atol(optarg);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size % 2 || iters < 1 || bytes < 64) {
		if (!rank)
			fprintf(stderr, "reorder: needs an even number of ranks, -n >= 1, -s >= 64\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (i = 0; i < 3; i++) {
		sbuf[i] = calloc(1, bytes);
		rbuf[i] = calloc(1, bytes);
	}
	/* the topology: which node each process is on */
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &nrank);
	MPI_Comm_size(node, &nsize);
	nodeof = malloc(sizeof(int) * size);
	i = rank - nrank;	/* by-slot placement: a node's first world rank names it */
	MPI_Allgather(&i, 1, MPI_INT, nodeof, 1, MPI_INT, MPI_COMM_WORLD);

	/* connections are set up per pair of processes: once, before t1 */
	run(MPI_COMM_WORLD, 2);
	/* figure 1 of the seed: monitor one iteration, gather, map, split */
	t1 = run(MPI_COMM_WORLD, iters);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	rc = MPI_M_init();
	if (rc == MPI_SUCCESS)
		rc = MPI_M_start(MPI_COMM_WORLD, &id);
	iteration(MPI_COMM_WORLD);
	if (rc == MPI_SUCCESS)
		rc = MPI_M_suspend(id);
	if (rank == 0)
		mat = calloc((size_t)size * size, sizeof(*mat));
	if (rc == MPI_SUCCESS)
		rc = MPI_M_rootgather_data(id, 0, MPI_M_DATA_IGNORE, mat, MPI_M_P2P_ONLY);
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "reorder: monitoring failed (%d)\n", rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	k = malloc(sizeof(int) * size);
	if (rank == 0) {
		slots = malloc(sizeof(int) * size);
		for (c = 0, g = 0; c < size; c++) {	/* processes node by node */
			for (i = 0; i < size; i++)
				if (nodeof[i] == c)
					slots[g++] = i;
		}
		map_greedy(size, mat, slots, nsize, k);
		free(slots);
	}
	MPI_Bcast(k, size, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Comm_split(MPI_COMM_WORLD, 0, k[rank], &opt);
	MPI_M_free(id);
	MPI_M_finalize();
	t2 = MPI_Wtime() - t0;
	MPI_Allreduce(MPI_IN_PLACE, &t2, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	t3 = run(opt, iters);

	if (rank == 0) {
		int moved = 0;

		for (i = 0; i < size; i++)
			moved += k[i] != i;
		printf("# reorder: %d ranks on %d node(s), %d iterations of %ld + 2 x %ld bytes\n",
		       size, size / nsize, iters, bytes, bytes / 64);
		printf("# mapping k:");
		for (i = 0; i < size; i++)
			printf(" %d", k[i]);
		printf(" (%d ranks moved)\n", moved);
		printf("%12s %12s %12s %12s %10s\n", "t1_s", "t2_s", "t3_s", "t3/t1", "gain_%");
		printf("%12.6f %12.6f %12.6f %12.3f %10.1f\n", t1, t2, t3, t3 / t1,
		       100.0 * (t1 - (t2 + t3)) / t1);
	}
	MPI_Comm_free(&opt);
	MPI_Comm_free(&node);
	free(k);
	free(mat);
	free(nodeof);
	MPI_Finalize();
	return 0;
}
