// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tests/twonode/pingpong: a small MPI ping-pong between exactly two ranks
 * (meant to be one per node) that checks every byte it receives.
 *
 *   pingpong [-n ITERS] [-b ITERS] [-w WINDOW] [-s] [-2]
 *     -n  round trips of the 8-byte latency test (default 200)
 *     -b  rounds of the 1 MiB bandwidth test (default 8), each WINDOW
 *         messages rank 0 -> 1 followed by a 4-byte ack (osu_bw style)
 *     -w  WINDOW (default 8)
 *     -s  sizes only: skip the timed tests
 *     -2  fail unless the two ranks run on different hosts
 *
 * First a size sweep (0 B to 4 MiB + 3, both directions, blocking and
 * non-blocking), then the timed tests; every message carries a pattern that
 * depends on size, round and sender, and is checked on arrival. Rank 0 prints
 *   pingpong: rank 0 on HOST, rank 1 on HOST
 *   pingpong: 8 B round trip: median U us, min U us (N round trips)
 *   pingpong: 1 MiB bandwidth: B MB/s (N messages)
 *   pingpong: data ok
 * and every rank exits 0 if all was well, 1 otherwise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static int rank, errors;

static unsigned char pattern(size_t i, size_t size, int round, int from)
{
	return (unsigned char)(i * 131 + size * 7 + round * 31 + from * 97 + 1);
}

static void fill(unsigned char *b, size_t size, int round, int from)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pattern(i, size, round, from);
}

static void check(const unsigned char *b, size_t size, int round, int from, const char *what)
{
	for (size_t i = 0; i < size; i++) {
		if (b[i] != pattern(i, size, round, from)) {
			if (errors++ < 5)
				fprintf(stderr, "pingpong: rank %d: %s: %zu bytes, round %d: byte %zu is %u, want %u\n",
					rank, what, size, round, i, b[i], pattern(i, size, round, from));
			return;
		}
	}
}

static void check_status(MPI_Status *st, size_t size, int from, const char *what)
{
	int count;

	MPI_Get_count(st, MPI_BYTE, &count);
	if ((size_t)count != size || st->MPI_SOURCE != from) {
		if (errors++ < 5)
			fprintf(stderr, "pingpong: rank %d: %s: got %d bytes from %d, want %zu from %d\n",
				rank, what, count, st->MPI_SOURCE, size, from);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* one exchange of SIZE bytes each way, checked on both sides */
static void sweep_one(unsigned char *sbuf, unsigned char *rbuf, size_t size, int round, int nonblocking)
{
	int peer = 1 - rank;
	MPI_Status st;
	MPI_Request rq[2];

	fill(sbuf, size, round, rank);
	memset(rbuf, 0, size);
	if (nonblocking) {
		MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, round, MPI_COMM_WORLD, &rq[0]);
		MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, round, MPI_COMM_WORLD, &rq[1]);
		MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
		MPI_Wait(&rq[0], &st);
	} else if (rank == 0) {
		MPI_Send(sbuf, (int)size, MPI_BYTE, peer, round, MPI_COMM_WORLD);
		MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, round, MPI_COMM_WORLD, &st);
	} else {
		MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, round, MPI_COMM_WORLD, &st);
		MPI_Send(sbuf, (int)size, MPI_BYTE, peer, round, MPI_COMM_WORLD);
	}
	check_status(&st, size, peer, nonblocking ? "sweep (nonblocking)" : "sweep");
	check(rbuf, size, round, peer, nonblocking ? "sweep (nonblocking)" : "sweep");
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 1, 8, 100, 1000, 4096, 8191, 65536, 65537,
					262144, MIB, 4 * MIB + 3 };
	int size, opt, iters = 200, rounds = 8, window = 8, sizes_only = 0, two_hosts = 0;
	char host[MPI_MAX_PROCESSOR_NAME] = "", other[MPI_MAX_PROCESSOR_NAME] = "";
	unsigned char *sbuf, *rbuf;
	int len, round = 0, all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((opt = getopt(argc, argv, "n:b:w:s2")) != -1) {
		switch (opt) {
		case 'n': iters = atoi(optarg); break;
		case 'b': rounds = atoi(optarg); break;
		case 'w': window = atoi(optarg); break;
		case 's': sizes_only = 1; break;
		case '2': two_hosts = 1; break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: pingpong [-n ITERS] [-b ROUNDS] [-w WINDOW] [-s] [-2]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (size != 2 || iters < 1 || rounds < 1 || window < 1 || window > 64) {
		if (rank == 0)
			fprintf(stderr, "pingpong: needs exactly 2 ranks (has %d) and positive counts, window <= 64\n",
				size);
		MPI_Finalize();
		return 2;
	}
	MPI_Get_processor_name(host, &len);
	MPI_Sendrecv(host, sizeof(host), MPI_CHAR, 1 - rank, 99, other, sizeof(other), MPI_CHAR,
		     1 - rank, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (rank == 0)
		printf("pingpong: rank 0 on %s, rank 1 on %s\n", host, other);
	if (two_hosts && strcmp(host, other) == 0) {
		if (rank == 0)
			fprintf(stderr, "pingpong: both ranks run on %s (-2 wants two hosts)\n", host);
		errors++;
	}

	sbuf = malloc(64 * MIB);
	rbuf = malloc(64 * MIB);
	if (!sbuf || !rbuf) {
		fprintf(stderr, "pingpong: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	/* size sweep, blocking and non-blocking */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		sweep_one(sbuf, rbuf, sizes[i], round++, 0);
		sweep_one(sbuf, rbuf, sizes[i], round++, 1);
	}

	if (!sizes_only) {
		double *rtt = malloc(sizeof(double) * iters), t0, t;
		MPI_Status st;
		long nbytes;

		/* 8-byte latency: rank 0 sends, rank 1 echoes what it got back */
		for (int i = -10; i < iters; i++) {
			int r = (i + 1000) & 0xffff;

			if (rank == 0) {
				fill(sbuf, 8, r, 0);
				t0 = MPI_Wtime();
				MPI_Send(sbuf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
				MPI_Recv(rbuf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st);
				t = MPI_Wtime() - t0;
				if (i >= 0)
					rtt[i] = t;
				check(rbuf, 8, r, 0, "latency echo");
			} else {
				MPI_Recv(rbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
				check(rbuf, 8, r, 0, "latency");
				MPI_Send(rbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
			}
		}
		if (rank == 0) {
			qsort(rtt, iters, sizeof(double), cmp_double);
			printf("pingpong: 8 B round trip: median %.1f us, min %.1f us (%d round trips)\n",
			       rtt[iters / 2] * 1e6, rtt[0] * 1e6, iters);
		}
		free(rtt);

		/*
		 * 1 MiB bandwidth: WINDOW messages from 0 to 1, then an ack. The
		 * patterns are written before and checked after the timed loop
		 * (the last round's data): under emulation they would cost a
		 * good part of the transfer time.
		 */
		if (rank == 0)
			for (int w = 0; w < window; w++)
				fill(sbuf + (size_t)w * MIB, MIB, 5000 + w, 0);
		else
			memset(rbuf, 0, (size_t)window * MIB);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int r = 0; r < rounds; r++) {
			MPI_Request rq[64];

			for (int w = 0; w < window; w++) {
				unsigned char *b = (rank == 0 ? sbuf : rbuf) + (size_t)w * MIB;

				if (rank == 0)
					MPI_Isend(b, MIB, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[w]);
				else
					MPI_Irecv(b, MIB, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[w]);
			}
			MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
			if (rank == 1)
				MPI_Send(sbuf, 4, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
			else
				MPI_Recv(rbuf + 63 * MIB, 4, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		t = MPI_Wtime() - t0;
		if (rank == 1)
			for (int w = 0; w < window; w++)
				check(rbuf + (size_t)w * MIB, MIB, 5000 + w, 0, "bandwidth");
		nbytes = (long)rounds * window * MIB;
		if (rank == 0)
			printf("pingpong: 1 MiB bandwidth: %.1f MB/s (%d messages)\n", nbytes / t / 1e6,
			       rounds * window);
	}

	MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("pingpong: %s\n", all ? "DATA ERRORS" : "data ok");
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return all ? 1 : 0;
}
