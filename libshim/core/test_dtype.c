// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native unit tests of the datatype flattening (dtype.c), no device
 * needed: for many datatypes, the gathered bytes must equal PMPI_Pack's
 * and scattering PMPI_Pack's bytes must equal PMPI_Unpack; segment counts
 * and iovecs are checked where they are known. Last line "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "dtype.h"
#include "expect.h"

EXPECT_COUNTERS;

struct kp_state kp;	/* dtype.c needs none of it */

#define ARENA 65536

/* Compare gather/scatter of @count elements with PMPI_Pack/Unpack. */
static void check_type(const char *name, MPI_Datatype t, int count, int want_flat, int want_nseg)
{
	struct kp_layout *l = kp_layout_get(t);
	unsigned char *src = malloc(ARENA), *a = calloc(1, ARENA), *b = calloc(1, ARENA);
	unsigned char *packed = malloc(ARENA), *gathered = malloc(ARENA);
	char *base_src = (char *)src + ARENA / 2, *base_a = (char *)a + ARENA / 2,
	     *base_b = (char *)b + ARENA / 2;
	int pos = 0, size, i;
	size_t bytes;

	for (i = 0; i < ARENA; i++)
		src[i] = (unsigned char)(i * 31 + 7);
	PMPI_Type_size(t, &size);
	bytes = (size_t)size * count;
	EXPECT(l->size == size, "%s: size %lld vs %d", name, (long long)l->size, size);
	if (want_flat >= 0)
		EXPECT(l->flat == want_flat, "%s: flat %d, want %d", name, l->flat, want_flat);
	if (want_nseg >= 0 && l->flat)
		EXPECT(l->nseg == want_nseg, "%s: nseg %d, want %d", name, l->nseg, want_nseg);
	PMPI_Pack(base_src, count, t, packed, ARENA, &pos, MPI_COMM_SELF);
	EXPECT((size_t)pos == bytes, "%s: packed %d bytes, want %zu", name, pos, bytes);
	if (l->flat) {
		struct kprog_iov iov[4096];
		size_t n, k, off = 0;
		int same = 1;

		kp_gather(l, base_src, count, gathered, bytes);
		EXPECT(!memcmp(gathered, packed, bytes), "%s: gather differs from PMPI_Pack", name);
		pos = 0;
		PMPI_Unpack(packed, (int)bytes, &pos, base_a, count, t, MPI_COMM_SELF);
		kp_scatter(l, base_b, count, packed, bytes);
		EXPECT(!memcmp(a, b, ARENA), "%s: scatter differs from PMPI_Unpack", name);
		/* the iovec describes the same bytes in the same order */
		n = kp_layout_iov(l, base_src, count, iov, 4096);
		if (n <= 4096) {
			for (k = 0; k < n && same; k++) {
				same = !memcmp((void *)(uintptr_t)iov[k].base, packed + off, iov[k].len);
				off += iov[k].len;
			}
			EXPECT(same && off == bytes, "%s: iovec differs from PMPI_Pack", name);
			for (k = 1; k < n; k++)
				if (iov[k - 1].base + iov[k - 1].len == iov[k].base)
					same = 0;
			EXPECT(same, "%s: iovec has unmerged neighbours", name);
		}
		/* a truncated scatter writes only the first bytes */
		if (bytes > 3) {
			memset(a, 0, ARENA);
			memset(b, 0, ARENA);
			kp_scatter(l, base_b, count, packed, bytes - 3);
			kp_scatter(l, base_a, count, packed, bytes);
			{
				size_t diff = 0;

				for (i = 0; i < ARENA; i++)
					diff += a[i] != b[i];
				EXPECT(diff <= 3, "%s: truncated scatter wrote past the end", name);
			}
		}
	}
	kp_layout_put(l);
	free(src);
	free(a);
	free(b);
	free(packed);
	free(gathered);
}

int main(int argc, char **argv)
{
	MPI_Datatype v, hv, ix, hix, ib, st, rs, sa, sa_f, nest, dup, ctg, rsneg, rev, hib;
	int bl[3] = {2, 1, 3}, dp[3] = {0, 5, 9}, dpi[3] = {4, 0, 8};
	MPI_Aint hdp[3] = {0, 40, 100}, sdp[3];
	MPI_Datatype sty[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
	int sbl[3] = {1, 2, 3};
	int sizes[3] = {4, 5, 6}, subs[3] = {2, 3, 2}, starts[3] = {1, 1, 3};

	MPI_Init(&argc, &argv);

	check_type("int", MPI_INT, 10, 1, 1);
	check_type("double_int", MPI_DOUBLE_INT, 3, 1, 1);	/* 12 data bytes, extent 16 */
	check_type("2int", MPI_2INT, 3, 1, 1);

	MPI_Type_vector(100, 32, 64, MPI_CHAR, &v);	/* seed 000 */
	MPI_Type_commit(&v);
	check_type("vector 32/64 char", v, 1, 1, 100);
	check_type("vector 32/64 char x3", v, 3, 1, -1);

	MPI_Type_contiguous(7, MPI_DOUBLE, &ctg);
	MPI_Type_commit(&ctg);
	check_type("contiguous", ctg, 5, 1, 1);

	MPI_Type_create_hvector(4, 3, 20, MPI_INT, &hv);
	MPI_Type_commit(&hv);
	check_type("hvector", hv, 2, 1, 4);

	MPI_Type_indexed(3, bl, dp, MPI_INT, &ix);
	MPI_Type_commit(&ix);
	check_type("indexed", ix, 4, 1, 3);

	MPI_Type_indexed(3, bl, dpi, MPI_INT, &rev);	/* out of address order */
	MPI_Type_commit(&rev);
	check_type("indexed reordered", rev, 2, 1, -1);

	MPI_Type_create_hindexed(3, bl, hdp, MPI_SHORT, &hix);
	MPI_Type_commit(&hix);
	check_type("hindexed", hix, 3, 1, 3);

	MPI_Type_create_indexed_block(3, 2, dp, MPI_FLOAT, &ib);
	MPI_Type_commit(&ib);
	check_type("indexed_block", ib, 2, 1, 3);

	MPI_Type_create_hindexed_block(3, 2, hdp, MPI_FLOAT, &hib);
	MPI_Type_commit(&hib);
	check_type("hindexed_block", hib, 2, 1, 3);

	sdp[0] = 0;
	sdp[1] = 8;
	sdp[2] = 16;
	MPI_Type_create_struct(3, sbl, sdp, sty, &st);
	MPI_Type_commit(&st);
	check_type("struct", st, 3, 1, 1);

	MPI_Type_create_resized(st, 0, 32, &rs);
	MPI_Type_commit(&rs);
	check_type("resized struct", rs, 4, 1, 1);

	MPI_Type_create_resized(MPI_INT, -4, 12, &rsneg);
	MPI_Type_commit(&rsneg);
	check_type("resized negative lb", rsneg, 5, 1, 1);

	MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sa);
	MPI_Type_commit(&sa);
	check_type("subarray C", sa, 1, 1, 6);
	check_type("subarray C x2", sa, 2, 1, -1);

	MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &sa_f);
	MPI_Type_commit(&sa_f);
	check_type("subarray Fortran", sa_f, 1, 1, -1);

	MPI_Type_vector(3, 2, 5, ix, &nest);	/* nested derived */
	MPI_Type_commit(&nest);
	check_type("vector of indexed", nest, 2, 1, -1);

	MPI_Type_dup(v, &dup);
	MPI_Type_commit(&dup);
	check_type("dup", dup, 2, 1, 100);

	/* cache eviction: a freed handle that is reused gets a fresh layout */
	{
		MPI_Datatype a, b;

		MPI_Type_contiguous(3, MPI_INT, &a);
		MPI_Type_commit(&a);
		check_type("evict a", a, 1, 1, 1);
		MPI_Type_free(&a);
		MPI_Type_vector(2, 1, 3, MPI_INT, &b);
		MPI_Type_commit(&b);
		check_type("evict b", b, 1, 1, 2);
		MPI_Type_free(&b);
	}

	/* the fast path's cached view of a type, and its eviction on free */
	{
		const struct kp_quick_type *q = kp_type_quick(MPI_INT);
		MPI_Datatype a, b;
		int i;

		EXPECT(q->size == sizeof(int) && q->block && q->off == 0, "quick MPI_INT");
		q = kp_type_quick(v);
		EXPECT(q->size == 3200 && !q->block, "quick vector: size %lld block %d",
		       (long long)q->size, q->block);
		q = kp_type_quick(ctg);
		EXPECT(q->block, "quick contiguous: one block");
		/* free a type and create another, likely at the same handle */
		for (i = 0; i < 8; i++) {
			MPI_Type_contiguous(2 + i, MPI_DOUBLE, &a);
			MPI_Type_commit(&a);
			q = kp_type_quick(a);
			EXPECT(q->size == (int64_t)((2 + i) * sizeof(double)) && q->block,
			       "quick contiguous %d doubles: size %lld", 2 + i, (long long)q->size);
			MPI_Type_free(&a);
			MPI_Type_vector(2, 1, 4 + i, MPI_SHORT, &b);
			MPI_Type_commit(&b);
			q = kp_type_quick(b);
			EXPECT(q->size == 2 * sizeof(short) && !q->block,
			       "quick vector after a free (round %d): size %lld block %d", i,
			       (long long)q->size, q->block);
			MPI_Type_free(&b);
		}
	}

	MPI_Type_free(&v);
	MPI_Type_free(&ctg);
	MPI_Type_free(&hv);
	MPI_Type_free(&ix);
	MPI_Type_free(&rev);
	MPI_Type_free(&hix);
	MPI_Type_free(&ib);
	MPI_Type_free(&hib);
	MPI_Type_free(&st);
	MPI_Type_free(&rs);
	MPI_Type_free(&rsneg);
	MPI_Type_free(&sa);
	MPI_Type_free(&sa_f);
	MPI_Type_free(&nest);
	MPI_Type_free(&dup);
	MPI_Finalize();
	return EXPECT_SUMMARY();
}
