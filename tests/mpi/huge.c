// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Messages above 2 GiB and 4 GiB: rank 0 sends N MPI_LONG_LONG (as a
 * contiguous count, as a count of a derived contiguous type, or as one
 * element of a vector type with a few large blocks) with MPI_Send to every
 * other rank, which MPI_Recv them and check every element and the count
 * from MPI_Get_count / MPI_Get_elements_x.
 *
 *   huge [contig|derived|vector] [N]     default: contig 270000000 (2.16 GB)
 *
 * Needs (ranks) * N * 8 bytes of memory; tests/mpi/run-huge picks the
 * cases that fit.
 */
#include <stdbool.h>
#include "check.h"

#define BLOCK_ELEMS	1000		/* elements of the derived type */
#define VEC_BLOCKS	16		/* blocks of the vector type */

static long long value(long long i)
{
	return i * 2654435761LL + 12345;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "contig";
	long long n = argc > 2 ? atoll(argv[2]) : 270000000LL;
	long long i, span, bad = -1;
	int rank, size, count, r;
	MPI_Datatype type = MPI_LONG_LONG;
	MPI_Count elems;
	MPI_Status st;
	long long *buf;

	test_name = "huge";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size >= 2, "needs at least 2 ranks");
	CHECK(n > 0, "bad element count %lld", n);

	span = n;
	count = (int)n;
	if (!strcmp(mode, "contig")) {
		CHECK(n <= 0x7fffffffLL, "contig: %lld elements do not fit an int", n);
	} else if (!strcmp(mode, "derived")) {
		n -= n % BLOCK_ELEMS;
		span = n;
		MPI_CHECK(MPI_Type_contiguous(BLOCK_ELEMS, MPI_LONG_LONG, &type));
		count = (int)(n / BLOCK_ELEMS);
	} else if (!strcmp(mode, "vector")) {
		/* blocks of n/16 elements, one element of gap between them */
		long long blk = n / VEC_BLOCKS;

		n = blk * VEC_BLOCKS;
		span = (blk + 1) * VEC_BLOCKS;
		CHECK(blk <= 0x7fffffffLL, "vector: block of %lld elements", blk);
		MPI_CHECK(MPI_Type_vector(VEC_BLOCKS, (int)blk, (int)blk + 1,
					  MPI_LONG_LONG, &type));
		count = 1;
	} else {
		CHECK(0, "unknown mode %s", mode);
	}
	if (type != MPI_LONG_LONG)
		MPI_CHECK(MPI_Type_commit(&type));

	buf = malloc(span * sizeof(*buf));
	CHECK(buf, "cannot allocate %lld bytes", span * 8);
	if (rank == 0) {
		for (i = 0; i < span; i++)
			buf[i] = value(i);
		for (r = 1; r < size; r++)
			MPI_CHECK(MPI_Send(buf, count, type, r, 7, MPI_COMM_WORLD));
	} else {
		memset(buf, 0, span * sizeof(*buf));
		MPI_CHECK(MPI_Recv(buf, count, type, 0, 7, MPI_COMM_WORLD, &st));
		MPI_CHECK(MPI_Get_elements_x(&st, MPI_LONG_LONG, &elems));
		CHECK(elems == n, "%s: received %lld elements, expected %lld", mode,
		      (long long)elems, n);
		MPI_CHECK(MPI_Get_count(&st, type, &r));
		CHECK(r == count, "%s: MPI_Get_count %d, expected %d", mode, r, count);
		for (i = 0; i < span && bad < 0; i++) {
			/* the vector's gaps stay untouched */
			bool gap = !strcmp(mode, "vector") &&
				   i % (n / VEC_BLOCKS + 1) == n / VEC_BLOCKS;

			if (buf[i] != (gap ? 0 : value(i)))
				bad = i;
		}
		CHECK(bad < 0, "%s: element %lld is %lld", mode, bad, buf[bad]);
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (type != MPI_LONG_LONG)
		MPI_Type_free(&type);
	free(buf);
	MPI_Finalize();
	return 0;
}
