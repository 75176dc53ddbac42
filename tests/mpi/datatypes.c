// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Derived datatypes. Each case sends @scount of @stype and receives
 * @rcount of @rtype (same type signature, or a prefix of it for partial
 * receives) between ranks 0 and 1, both directions. Every byte of the
 * receive buffer, gaps and guard areas included, is compared with the
 * expected image, which is built by MPI_Unpack (Open MPI's own datatype
 * engine, not something the shim intercepts) of the same packed pattern
 * into a buffer with the same filler; the vector layout is also checked
 * by hand, so the reference itself is checked once.
 *
 * Types: the seed-000 benchmark vector (32-char blocks, stride 64 bytes)
 * for 1 KiB .. 4 MiB payloads against itself and against contiguous
 * MPI_CHAR both ways; MPI_Type_indexed with unsorted displacements;
 * MPI_Type_create_struct with gaps (padding) against a packed struct;
 * MPI_Type_create_subarray (C and Fortran order, 3-D doubles and a 1 MiB
 * 2-D char plane); MPI_Type_create_resized (bigger extent, negative lb);
 * nested (contiguous of vector); hvector with a negative stride; a send
 * type with overlapping entries (legal for sends); absolute addresses
 * from MPI_BOTTOM, both directions. Partial receives: MPI_Get_count gives
 * MPI_UNDEFINED and MPI_Get_elements the basic element count, and only
 * the received elements are written. Run with 2 ranks.
 */
#include "check.h"

#define GUARD 64
#define FILL_S 0x5A
#define FILL_R 0xC3

static int rank, size;

struct tbuf {
	unsigned char *alloc, *base;
	size_t total;
};

static void tbuf_init(struct tbuf *b, MPI_Datatype t, int count, int fill)
{
	MPI_Aint lb, ext, tlb, text;
	size_t span = 0;

	MPI_CHECK(MPI_Type_get_extent(t, &lb, &ext));
	MPI_CHECK(MPI_Type_get_true_extent(t, &tlb, &text));
	CHECK(ext > 0, "extent %ld", (long)ext);
	if (count > 0)
		span = (size_t)(count - 1) * ext + text;
	b->total = span + 2 * GUARD;
	b->alloc = xmalloc(b->total);
	b->base = b->alloc + GUARD - tlb;
	memset(b->alloc, fill, b->total);
}

/* Unpacks @nbytes of the pattern @seed into the buffer as count x type. */
static void tbuf_unpack(struct tbuf *b, MPI_Datatype t, int count,
			uint32_t seed)
{
	int tsize, pos = 0;
	size_t n;
	unsigned char *p;

	MPI_CHECK(MPI_Type_size(t, &tsize));
	n = (size_t)tsize * count;
	p = xmalloc(n);
	pat_fill(p, n, seed);
	MPI_CHECK(MPI_Unpack(p, (int)n, &pos, b->base, count, t,
			     MPI_COMM_SELF));
	CHECK((size_t)pos == n, "MPI_Unpack consumed %d of %zu", pos, n);
	free(p);
}

static void tbuf_compare(struct tbuf *got, struct tbuf *exp,
			 const char *what)
{
	size_t i;

	CHECK(got->total == exp->total, "%s: sizes", what);
	if (!memcmp(got->alloc, exp->alloc, got->total))
		return;
	for (i = 0; i < got->total; i++)
		if (got->alloc[i] != exp->alloc[i])
			break;
	test_fail(__FILE__, __LINE__, "receive buffer image", "%s: byte at "
		  "offset %ld from the buffer start is 0x%02x, expected 0x%02x "
		  "(%s)", what, (long)(got->alloc + i - got->base), got->alloc[i],
		  exp->alloc[i], exp->alloc[i] == FILL_R ? "a gap/guard byte "
		  "was written" : "data");
}

static void tbuf_free(struct tbuf *b)
{
	free(b->alloc);
}

static int case_no;

/*
 * One case: rank @from sends scount x stype, rank @to receives rcount x
 * rtype; @nbasic_sent is the number of basic elements sent, used for
 * partial receives (@partial: the expected image is built by @mkexp).
 */
static void run_case(const char *name, MPI_Datatype stype, int scount,
		     MPI_Datatype rtype, int rcount, int nonblocking,
		     int want_count, int want_elems,
		     void (*mkexp)(struct tbuf *, uint32_t))
{
	uint32_t seed;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		int from = dir, to = 1 - dir;
		char what[160];

		case_no++;
		seed = pat_seed(from, to, case_no, 0);
		snprintf(what, sizeof(what), "case %d %s (%d -> %d)", case_no,
			 name, from, to);
		if (rank == from) {
			struct tbuf sb;
			MPI_Request rq;

			tbuf_init(&sb, stype, scount, FILL_S);
			tbuf_unpack(&sb, stype, scount, seed);
			if (nonblocking) {
				MPI_CHECK(MPI_Isend(sb.base, scount, stype, to,
						    case_no, MPI_COMM_WORLD, &rq));
				MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			} else {
				MPI_CHECK(MPI_Send(sb.base, scount, stype, to,
						   case_no, MPI_COMM_WORLD));
			}
			tbuf_free(&sb);
		} else if (rank == to) {
			struct tbuf rb, eb;
			MPI_Status st;
			MPI_Request rq;
			int cnt = -7, el = -7;
			MPI_Count elx = -7;

			tbuf_init(&rb, rtype, rcount, FILL_R);
			tbuf_init(&eb, rtype, rcount, FILL_R);
			if (mkexp)
				mkexp(&eb, seed);
			else
				tbuf_unpack(&eb, rtype, rcount, seed);
			status_poison(&st);
			if (nonblocking) {
				MPI_CHECK(MPI_Irecv(rb.base, rcount, rtype, from,
						    case_no, MPI_COMM_WORLD, &rq));
				MPI_CHECK(MPI_Wait(&rq, &st));
			} else {
				MPI_CHECK(MPI_Recv(rb.base, rcount, rtype, from,
						   case_no, MPI_COMM_WORLD, &st));
			}
			CHECK(st.MPI_SOURCE == from && st.MPI_TAG == case_no,
			      "%s: status source %d tag %d", what,
			      st.MPI_SOURCE, st.MPI_TAG);
			MPI_CHECK(MPI_Get_count(&st, rtype, &cnt));
			MPI_CHECK(MPI_Get_elements(&st, rtype, &el));
			MPI_CHECK(MPI_Get_elements_x(&st, rtype, &elx));
			CHECK(cnt == want_count, "%s: Get_count %d, expected %d",
			      what, cnt, want_count);
			CHECK(el == want_elems && elx == want_elems,
			      "%s: Get_elements %d / _x %lld, expected %d", what,
			      el, (long long)elx, want_elems);
			tbuf_compare(&rb, &eb, what);
			tbuf_free(&rb);
			tbuf_free(&eb);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

static int nbasic(MPI_Datatype t, int count)
{
	/* Basic elements in count x t, from a fake full receive status. */
	MPI_Status st;
	int tsize, el = -1;

	MPI_CHECK(MPI_Type_size(t, &tsize));
	MPI_CHECK(MPI_Status_set_elements(&st, MPI_BYTE, tsize * count));
	MPI_CHECK(MPI_Get_elements(&st, t, &el));
	return el;
}

static void full_case(const char *name, MPI_Datatype stype, int scount,
		      MPI_Datatype rtype, int rcount, int nonblocking)
{
	int ss, rs;

	MPI_CHECK(MPI_Type_size(stype, &ss));
	MPI_CHECK(MPI_Type_size(rtype, &rs));
	CHECK((long)ss * scount == (long)rs * rcount, "%s: sizes differ", name);
	run_case(name, stype, scount, rtype, rcount, nonblocking, rcount,
		 nbasic(rtype, rcount), NULL);
}

/* Hand check of the vector layout against MPI_Unpack, once. */
static void check_reference(MPI_Datatype vec, int payload)
{
	struct tbuf b;
	size_t blk, j;

	tbuf_init(&b, vec, 1, FILL_R);
	tbuf_unpack(&b, vec, 1, 1234);
	CHECK_FILL(b.alloc, GUARD, FILL_R, "vector reference: front guard");
	for (blk = 0; blk < (size_t)payload / 32; blk++) {
		for (j = 0; j < 32; j++)
			CHECK(b.base[blk * 64 + j] == pat_byte(1234, blk * 32 + j),
			      "vector reference: block %zu byte %zu", blk, j);
		if (blk + 1 < (size_t)payload / 32)
			CHECK_FILL(b.base + blk * 64 + 32, 32, FILL_R,
				   "vector reference: gap %zu", blk);
	}
	CHECK_FILL(b.base + (payload / 32 - 1) * 64 + 32, GUARD, FILL_R,
		   "vector reference: back guard");
	tbuf_free(&b);
}

static MPI_Datatype commit(MPI_Datatype t)
{
	MPI_CHECK(MPI_Type_commit(&t));
	return t;
}

/* Partial receive into vector(2, 3, 5, MPI_INT) x 10: 20 ints sent. */
static MPI_Datatype pv_type;
static void pv_exp(struct tbuf *b, uint32_t seed)
{
	unsigned char p[80];
	int e, k, n = 0;

	pat_fill(p, 80, seed);
	for (e = 0; e < 10 && n < 20; e++)
		for (k = 0; k < 6 && n < 20; k++, n++)
			memcpy(b->base + e * 32 + (k / 3) * 20 + (k % 3) * 4,
			       p + n * 4, 4);
}

/* struct with gaps */
struct s {
	char c;
	double d;
	int i[3];
	short sh;
};
static MPI_Datatype s_type;
static void s_partial_exp(struct tbuf *b, uint32_t seed)
{
	unsigned char p[1 + 8 + 12 + 2 + 1 + 8];
	struct s *x = (struct s *)b->base;

	pat_fill(p, sizeof(p), seed);
	memcpy(&x[0].c, p, 1);
	memcpy(&x[0].d, p + 1, 8);
	memcpy(&x[0].i, p + 9, 12);
	memcpy(&x[0].sh, p + 21, 2);
	memcpy(&x[1].c, p + 23, 1);
	memcpy(&x[1].d, p + 24, 8);
}

/* Send type with overlapping entries: expected = what packing gives. */
static MPI_Datatype ov_type;
static void ov_exp(struct tbuf *b, uint32_t seed)
{
	struct tbuf sb;
	int tsize, pos = 0, pos2 = 0;
	unsigned char p[256];

	tbuf_init(&sb, ov_type, 1, FILL_S);
	tbuf_unpack(&sb, ov_type, 1, seed);
	MPI_CHECK(MPI_Type_size(ov_type, &tsize));
	CHECK(tsize <= (int)sizeof(p), "overlap type too big");
	MPI_CHECK(MPI_Pack(sb.base, 1, ov_type, p, sizeof(p), &pos,
			   MPI_COMM_SELF));
	MPI_CHECK(MPI_Unpack(p, pos, &pos2, b->base, tsize / 4, MPI_INT,
			     MPI_COMM_SELF));
	tbuf_free(&sb);
}

/* MPI_BOTTOM with absolute addresses of two separate buffers. */
static void bottom_case(void)
{
	int dir;

	for (dir = 0; dir < 2; dir++) {
		int *a = xmalloc(100 * sizeof(int));
		double *d = xmalloc(50 * sizeof(double));
		unsigned char packed[180], *pa = (unsigned char *)a,
			      *pd = (unsigned char *)d;
		int bl[3] = { 20, 10, 5 }, rel_bl[3] = { 20, 10, 5 };
		MPI_Aint ad[3], rd[3] = { 0, 80, 160 };
		MPI_Datatype ty[3] = { MPI_INT, MPI_DOUBLE, MPI_INT }, abs, rel;
		uint32_t seed = pat_seed(dir, 1 - dir, 500, 0);
		int bottom_side = dir;	/* dir 0: rank 0 sends from BOTTOM */
		MPI_Status st;
		int i;

		MPI_CHECK(MPI_Get_address(&a[10], &ad[0]));
		MPI_CHECK(MPI_Get_address(&d[5], &ad[1]));
		MPI_CHECK(MPI_Get_address(&a[0], &ad[2]));
		MPI_CHECK(MPI_Type_create_struct(3, bl, ad, ty, &abs));
		MPI_CHECK(MPI_Type_commit(&abs));
		MPI_CHECK(MPI_Type_create_struct(3, rel_bl, rd, ty, &rel));
		MPI_CHECK(MPI_Type_commit(&rel));
		memset(a, FILL_R, 100 * sizeof(int));
		memset(d, FILL_R, 50 * sizeof(double));
		memset(packed, FILL_R, sizeof(packed));
		if (rank == 0) {
			if (bottom_side == 0) {
				pat_fill(packed, 180, seed);
				memcpy(pa + 40, packed, 80);
				memcpy(pd + 40, packed + 80, 80);
				memcpy(pa, packed + 160, 20);
				MPI_CHECK(MPI_Send(MPI_BOTTOM, 1, abs, 1, 500,
						   MPI_COMM_WORLD));
			} else {
				pat_fill(packed, 180, seed);
				MPI_CHECK(MPI_Send(packed, 1, rel, 1, 500,
						   MPI_COMM_WORLD));
			}
		} else if (rank == 1) {
			status_poison(&st);
			if (bottom_side == 0) {
				MPI_CHECK(MPI_Recv(packed, 1, rel, 0, 500,
						   MPI_COMM_WORLD, &st));
				CHECK_PAT(packed, 180, seed, "send from MPI_BOTTOM");
			} else {
				MPI_CHECK(MPI_Recv(MPI_BOTTOM, 1, abs, 0, 500,
						   MPI_COMM_WORLD, &st));
				for (i = 0; i < 400; i++) {
					unsigned char want = FILL_R;

					if (i >= 40 && i < 120)
						want = pat_byte(seed, i - 40);
					else if (i < 20)
						want = pat_byte(seed, 160 + i);
					CHECK(pa[i] == want, "receive into MPI_BOTTOM: "
					      "int buffer byte %d is 0x%02x, expected "
					      "0x%02x", i, pa[i], want);
				}
				for (i = 0; i < 400; i++) {
					unsigned char want = FILL_R;

					if (i >= 40 && i < 120)
						want = pat_byte(seed, 80 + i - 40);
					CHECK(pd[i] == want, "receive into MPI_BOTTOM: "
					      "double buffer byte %d is 0x%02x, "
					      "expected 0x%02x", i, pd[i], want);
				}
			}
			CHECK_STATUS(&st, 0, 500, 1, dir ? abs : rel);
		}
		MPI_Type_free(&abs);
		MPI_Type_free(&rel);
		free(a);
		free(d);
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

static void s3_exp(struct tbuf *b, uint32_t seed)
{
	tbuf_unpack(b, s_type, 3, seed);
}

int main(int argc, char **argv)
{
	static const int payloads[] = { 1024, 32768, 65536, 1 << 20, 4 << 20 };
	MPI_Datatype vec, idx, spk, sub3c, sub3f, sub2, rsz, rszneg, nest,
		     s2part, t;
	int i;

	test_init(&argc, &argv, "datatypes", 2, &rank, &size);
	CHECK(size == 2, "run with 2 ranks");

	/* 1. The benchmark's vector, 1 KiB .. 4 MiB payloads. */
	for (i = 0; i < (int)(sizeof(payloads) / sizeof(payloads[0])); i++) {
		int p = payloads[i];
		char name[64];

		MPI_CHECK(MPI_Type_vector(p / 32, 32, 64, MPI_CHAR, &vec));
		vec = commit(vec);
		if (i == 0 && rank == 0)
			check_reference(vec, p);
		snprintf(name, sizeof(name), "vector %d B -> vector", p);
		full_case(name, vec, 1, vec, 1, i % 2);
		if (p > (1 << 20)) {
			MPI_Type_free(&vec);
			continue;	/* keep the TCG run short */
		}
		snprintf(name, sizeof(name), "contiguous %d B -> vector", p);
		full_case(name, MPI_CHAR, p, vec, 1, 0);
		snprintf(name, sizeof(name), "vector %d B -> contiguous", p);
		full_case(name, vec, 1, MPI_CHAR, p, 1);
		if (p <= 65536) {
			snprintf(name, sizeof(name), "3 x vector %d B -> "
				 "contiguous", p);
			full_case(name, vec, 3, MPI_CHAR, 3 * p, 0);
		}
		MPI_Type_free(&vec);
	}

	/* 2. Indexed, unsorted displacements. */
	{
		int bl[] = { 3, 1, 7, 2, 5 }, dp[] = { 20, 0, 9, 40, 2 };

		MPI_CHECK(MPI_Type_indexed(5, bl, dp, MPI_INT, &idx));
		idx = commit(idx);
		full_case("indexed x3 -> int", idx, 3, MPI_INT, 54, 0);
		full_case("int -> indexed x3", MPI_INT, 54, idx, 3, 1);
		full_case("indexed x1000 -> indexed", idx, 1000, idx, 1000, 0);
	}

	/* 3. Struct with gaps, resized to sizeof, against a packed struct. */
	{
		int bl[] = { 1, 1, 3, 1 };
		MPI_Aint dp[] = { offsetof(struct s, c), offsetof(struct s, d),
				  offsetof(struct s, i), offsetof(struct s, sh) };
		MPI_Aint pdp[] = { 0, 1, 9, 21 };
		MPI_Datatype ty[] = { MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT };

		MPI_CHECK(MPI_Type_create_struct(4, bl, dp, ty, &t));
		MPI_CHECK(MPI_Type_create_resized(t, 0, sizeof(struct s),
						  &s_type));
		MPI_Type_free(&t);
		s_type = commit(s_type);
		MPI_CHECK(MPI_Type_create_struct(4, bl, pdp, ty, &spk));
		spk = commit(spk);
		full_case("struct x100 -> struct", s_type, 100, s_type, 100, 0);
		full_case("struct x100 -> packed struct", s_type, 100, spk, 100,
			  1);
		full_case("packed struct x5000 -> struct", spk, 5000, s_type,
			  5000, 0);
	}

	/* 4. Subarrays. */
	{
		int sz[] = { 6, 7, 8 }, sub[] = { 3, 4, 5 }, st[] = { 1, 2, 3 };
		int sz2[] = { 2048, 1024 }, sub2s[] = { 1024, 1024 },
		    st2[] = { 512, 0 };

		MPI_CHECK(MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C,
						   MPI_DOUBLE, &sub3c));
		sub3c = commit(sub3c);
		MPI_CHECK(MPI_Type_create_subarray(3, sz, sub, st,
						   MPI_ORDER_FORTRAN, MPI_DOUBLE,
						   &sub3f));
		sub3f = commit(sub3f);
		full_case("subarray C -> double", sub3c, 1, MPI_DOUBLE, 60, 0);
		full_case("double -> subarray C", MPI_DOUBLE, 60, sub3c, 1, 0);
		full_case("subarray C x2 -> subarray Fortran", sub3c, 2, sub3f,
			  2, 1);
		MPI_CHECK(MPI_Type_create_subarray(2, sz2, sub2s, st2,
						   MPI_ORDER_C, MPI_CHAR, &sub2));
		sub2 = commit(sub2);
		full_case("subarray 1 MiB plane -> char", sub2, 1, MPI_CHAR,
			  1 << 20, 0);
		full_case("char -> subarray 1 MiB plane", MPI_CHAR, 1 << 20,
			  sub2, 1, 1);
	}

	/* 5. Resized. */
	{
		MPI_CHECK(MPI_Type_create_resized(MPI_INT, 0, 12, &rsz));
		rsz = commit(rsz);
		MPI_CHECK(MPI_Type_create_resized(MPI_INT, -4, 8, &rszneg));
		rszneg = commit(rszneg);
		full_case("resized(extent 12) x1000 -> int", rsz, 1000, MPI_INT,
			  1000, 0);
		full_case("int -> resized(extent 12) x30000", MPI_INT, 30000,
			  rsz, 30000, 1);
		full_case("resized(lb -4) -> resized(extent 12)", rszneg, 777,
			  rsz, 777, 0);
	}

	/* 6. Nested: contiguous(3) of a small vector. */
	{
		MPI_CHECK(MPI_Type_vector(4, 32, 64, MPI_CHAR, &vec));
		MPI_CHECK(MPI_Type_contiguous(3, vec, &nest));
		nest = commit(nest);
		full_case("contiguous of vector x10 -> char", nest, 10,
			  MPI_CHAR, 3840, 0);
		MPI_Type_free(&vec);
	}

	/* 6b. Negative stride; overlapping send entries; MPI_BOTTOM. */
	{
		int bl[] = { 4, 4, 4 }, dp[] = { 0, 0, 2 };
		MPI_Datatype hv;

		MPI_CHECK(MPI_Type_create_hvector(8, 16, -64, MPI_CHAR, &hv));
		hv = commit(hv);
		full_case("hvector stride -64 x3 -> char", hv, 3, MPI_CHAR,
			  384, 0);
		full_case("char -> hvector stride -64 x3", MPI_CHAR, 384, hv, 3,
			  1);
		full_case("hvector stride -64 x3 -> vector", hv, 3, nest, 1,
			  0);
		MPI_Type_free(&hv);
		MPI_CHECK(MPI_Type_indexed(3, bl, dp, MPI_INT, &ov_type));
		ov_type = commit(ov_type);
		run_case("overlapping send type -> int", ov_type, 1, MPI_INT,
			 12, 0, 12, 12, ov_exp);
		MPI_Type_free(&ov_type);
		bottom_case();
	}

	/* 7. Partial receives: Get_count undefined, Get_elements exact. */
	{
		int bl[] = { 1, 1, 3, 1, 1, 1 };
		MPI_Aint dp[] = { 0, 8, 16, 28, 32, 40 };
		MPI_Datatype ty[] = { MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT,
				      MPI_CHAR, MPI_DOUBLE };

		MPI_CHECK(MPI_Type_vector(2, 3, 5, MPI_INT, &pv_type));
		pv_type = commit(pv_type);
		run_case("20 int -> vector(2,3,5,int) x10", MPI_INT, 20,
			 pv_type, 10, 0, MPI_UNDEFINED, 20, pv_exp);
		run_case("20 int -> vector(2,3,5,int) x10 nonblocking",
			 MPI_INT, 20, pv_type, 10, 1, MPI_UNDEFINED, 20,
			 pv_exp);
		CHECK(sizeof(struct s) == 32 && offsetof(struct s, sh) == 28,
		      "unexpected struct layout");
		MPI_CHECK(MPI_Type_create_struct(6, bl, dp, ty, &s2part));
		s2part = commit(s2part);
		run_case("struct + 2 elements -> struct x5", s2part, 1, s_type,
			 5, 0, MPI_UNDEFINED, 8, s_partial_exp);
		/* Whole structs, fewer than posted: count is exact. */
		run_case("struct x3 -> struct x5", s_type, 3, s_type, 5, 1, 3,
			 18, s3_exp);
	}

	MPI_Type_free(&idx);
	MPI_Type_free(&s_type);
	MPI_Type_free(&spk);
	MPI_Type_free(&sub3c);
	MPI_Type_free(&sub3f);
	MPI_Type_free(&sub2);
	MPI_Type_free(&rsz);
	MPI_Type_free(&rszneg);
	MPI_Type_free(&nest);
	MPI_Type_free(&pv_type);
	MPI_Type_free(&s2part);
	return test_finish();
}
