// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * halo: LAMMPS' halo exchange alone (CommBrick::forward_comm and
 * reverse_comm), to tell where kprog's longer Comm row of the LJ melt goes
 * (docs/apps.md). The ranks form a ring (LAMMPS' x direction); per step
 * each rank does, for each of the two directions, MPI_Irecv from one
 * neighbour, MPI_Send to the other and MPI_Wait, timed as LAMMPS times
 * its Comm row, then computes for a fixed amount of work (the Pair phase:
 * both ranks arrive at the next exchange about together, as in LAMMPS).
 *
 * With -3 the ranks form LAMMPS' 3-D process grid instead (MPI_Dims_create,
 * periodic): per exchange the two swaps of each dimension in turn, x, y, z,
 * a dimension of one process skipped (LAMMPS copies in place there); with
 * -S the work is the whole job's, split among the ranks (a fixed problem
 * size, as LAMMPS' fixed atom count: -w then says the work of two ranks).
 *
 * Usage: halo [-3] [-S] [-s SIZES] [-n STEPS] [-w WORK] [-x EXCH]
 *   -s  message sizes in bytes, comma separated (default 8192,16384,32768,61440)
 *   -n  steps per size (default 300)
 *   -w  work per step, in units of about a microsecond natively (default 2000)
 *   -x  exchanges per step, each of both directions (default 2: forward and
 *       reverse communication)
 * Output, one line per size (rank 0):
 *   halo size=B steps=N comm_us=C (per message exchanged, average over the ranks)
 *   comm_s=T (Comm row, average over the ranks) comm_max_s=T compute_s=T
 *   check=ok|BAD (every received byte checked)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "work.h"

static void fill(unsigned char *p, size_t n, int rank, long step)
{
	size_t i;

	for (i = 0; i < n; i += 64)
		p[i] = (unsigned char)(rank * 31 + step + i / 64);
}

static int check(const unsigned char *p, size_t n, int rank, long step)
{
	size_t i;

	for (i = 0; i < n; i += 64)
		if (p[i] != (unsigned char)(rank * 31 + step + i / 64))
			return 0;
	return 1;
}

/* the two neighbours of each dimension; ndim: how many dimensions have more than one rank */
static int ndim, lo[3], hi[3];

static void neighbours(int grid3, int rank, int np)
{
	int dims[3] = { 0, 0, 0 }, periods[3] = { 1, 1, 1 }, d;
	MPI_Comm cart;

	if (!grid3) {
		ndim = 1;
		lo[0] = (rank + np - 1) % np;
		hi[0] = (rank + 1) % np;
		return;
	}
	MPI_Dims_create(np, 3, dims);
	MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
	ndim = 0;
	for (d = 0; d < 3; d++) {
		if (dims[d] == 1)
			continue;
		MPI_Cart_shift(cart, d, 1, &lo[ndim], &hi[ndim]);
		ndim++;
	}
	MPI_Comm_free(&cart);
}

static void run(size_t size, long steps, long work, int nexch, int rank, int np)
{
	unsigned char *sbuf = malloc(size), *rbuf = malloc(size);
	double comm = 0, comp = 0, t, sums[2], mx;
	int ok = 1, all_ok;
	long s;
	int x, g;

	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(sbuf, 0, size);
	memset(rbuf, 0, size);
	MPI_Barrier(MPI_COMM_WORLD);
	for (s = 0; s < steps; s++) {
		for (x = 0; x < nexch; x++) {
			for (g = 0; g < ndim * 2; g++) {
				/* swap 0 of a dimension: to the low side, from the high; 1: the other way */
				int to = g & 1 ? hi[g / 2] : lo[g / 2], from = g & 1 ? lo[g / 2] : hi[g / 2];
				long stamp = (s * nexch + x) * 6 + g;
				MPI_Request req;

				fill(sbuf, size, rank, stamp);
				t = MPI_Wtime();
				MPI_Irecv(rbuf, (int)size, MPI_BYTE, from, 0, MPI_COMM_WORLD, &req);
				MPI_Send(sbuf, (int)size, MPI_BYTE, to, 0, MPI_COMM_WORLD);
				MPI_Wait(&req, MPI_STATUS_IGNORE);
				comm += MPI_Wtime() - t;
				ok &= check(rbuf, size, from, stamp);
			}
		}
		t = MPI_Wtime();
		compute(work);
		comp += MPI_Wtime() - t;
	}
	sums[0] = comm;
	sums[1] = comp;
	MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&comm, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (rank == 0)
		printf("halo size=%zu steps=%ld comm_us=%.2f comm_s=%.4f comm_max_s=%.4f compute_s=%.4f check=%s\n",
		       size, steps, 1e6 * sums[0] / np / ((double)steps * nexch * 2 * ndim),
		       sums[0] / np, mx, sums[1] / np, all_ok ? "ok" : "BAD");
	fflush(stdout);
	free(sbuf);
	free(rbuf);
}

int main(int argc, char **argv)
{
	const char *sizes = "8192,16384,32768,61440";
	long steps = 300, work = 2000;
	int nexch = 2, grid3 = 0, strong = 0, rank, np, c;
	char *list, *tok, *save;

	while ((c = getopt(argc, argv, "3Ss:n:w:x:")) != -1) {
		switch (c) {
		case '3': grid3 = 1; break;
		case 'S': strong = 1; break;
		case 's': sizes = optarg; break;
		case 'n': steps = atol(optarg); break;
		case 'w': work = atol(optarg); break;
		case 'x': nexch = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: halo [-3] [-S] [-s SIZES] [-n STEPS] [-w WORK] [-x EXCH]\n");
			return 2;
		}
	}
	if (steps <= 0 || work < 0 || nexch <= 0) {
		fprintf(stderr, "halo: bad -n, -w or -x\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	neighbours(grid3, rank, np);
	if (strong)
		work = work * 2 / np;
	list = strdup(sizes);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long sz = atol(tok);

		if (sz <= 0 || sz > (1L << 30)) {
			if (rank == 0)
				fprintf(stderr, "halo: bad size %s\n", tok);
			continue;
		}
		run((size_t)sz, steps, work, nexch, rank, np);
	}
	free(list);
	MPI_Finalize();
	return 0;
}
