// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * grid: the shape of pw.x's subspace diagonalisation at 8 ranks on 2 CPUs
 * (docs/apps.md, issue 31), where kprog's point-to-point was 3x slower per
 * MPI_Recv than plain Open MPI's. ScaLAPACK runs on a grid of half the
 * ranks and moves its panels with BLACS: chains of small blocking
 * messages (a ring broadcast: each rank receives from its predecessor and
 * sends to its successor), a little computation between them; the other
 * half of the job waits meanwhile in an Open MPI collective (pw.x's
 * broadcast of the result), spinning and yielding on the same CPUs.
 *
 * Per round: the first G ranks (the grid) run C chains, each a ring
 * broadcast of S bytes from a rotating root with MPI_Recv + MPI_Send and
 * W units of work after each message; then every rank takes part in an
 * MPI_Allreduce of the round's checksum (the others enter it at once and
 * wait there). Every received byte is checked.
 *
 * Usage: grid [-g G] [-s SIZE] [-c CHAINS] [-r ROUNDS] [-w WORK]
 *   -g  ranks in the grid (default half of the job, at least 2)
 *   -s  message size in bytes (default 2048)
 *   -c  chains per round (default 40)
 *   -r  rounds (default 20)
 *   -w  work after each message, in units of about a microsecond natively
 *       (default 50)
 * Output (rank 0): grid np=N g=G size=S msg_us=M (MPI_Recv per message,
 *   average over the grid's ranks) round_ms=R (per round, rank 0)
 *   check=ok|BAD
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "work.h"

static unsigned char pattern(int root, long n, size_t i)
{
	return (unsigned char)(root * 37 + n * 11 + i / 64);
}

int main(int argc, char **argv)
{
	int rank, np, g = 0, opt, bad = 0, gbad;
	long size = 2048, chains = 40, rounds = 20, work = 50, r, c, n = 0;
	double t_recv = 0, t0, t_round, sum, msgs = 0, v[2], tot[2];
	unsigned char *buf;
	size_t i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	while ((opt = getopt(argc, argv, "g:s:c:r:w:")) != -1) {
		switch (opt) {
		case 'g': g = atoi(optarg); break;
		case 's': size = atol(optarg); break;
		case 'c': chains = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		case 'w': work = atol(optarg); break;
		default:
			if (!rank)
				fprintf(stderr, "usage: grid [-g G] [-s SIZE] [-c CHAINS] [-r ROUNDS] [-w WORK]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (!g)
		g = np / 2;
	if (g < 2 || g > np || size < 1 || chains < 1 || rounds < 1 || work < 0) {
		if (!rank)
			fprintf(stderr, "grid: needs 2 <= G <= np, positive sizes and counts\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(size);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (r = 0; r < rounds; r++) {
		sum = 0;
		for (c = 0; rank < g && c < chains; c++, n++) {
			int root = (int)(n % g), pos = (rank - root + g) % g;
			double t;

			if (pos == 0) {
				for (i = 0; i < (size_t)size; i++)
					buf[i] = pattern(root, n, i);
			} else {
				t = MPI_Wtime();
				MPI_Recv(buf, (int)size, MPI_BYTE, (rank - 1 + g) % g, (int)(n & 0x7fff),
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				t_recv += MPI_Wtime() - t;
				msgs++;
				for (i = 0; i < (size_t)size; i += 64)
					bad |= buf[i] != pattern(root, n, i);
			}
			if (pos != g - 1)
				MPI_Send(buf, (int)size, MPI_BYTE, (rank + 1) % g, (int)(n & 0x7fff),
					 MPI_COMM_WORLD);
			sum += buf[size - 1];
			compute(work);
		}
		MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	}
	t_round = (MPI_Wtime() - t0) / rounds;
	v[0] = t_recv;
	v[1] = msgs;
	MPI_Reduce(v, tot, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Allreduce(&bad, &gbad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (!rank)
		printf("grid np=%d g=%d size=%ld msg_us=%.1f round_ms=%.2f check=%s\n", np, g, size,
		       tot[1] > 0 ? 1e6 * tot[0] / tot[1] : 0.0, 1e3 * t_round, gbad ? "BAD" : "ok");
	free(buf);
	MPI_Finalize();
	return gbad ? 1 : 0;
}
