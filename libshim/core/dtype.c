// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Datatype layouts: flatten a datatype into its ordered byte segments
 * (MPI_Type_get_envelope/get_contents, recursively), merge neighbours and
 * cache the result per handle. Sends and receives then go zero-copy as one
 * segment or an iovec, or are gathered/scattered by hand when there are
 * more segments than the module takes. Types we cannot flatten (named
 * types with holes such as MPI_DOUBLE_INT, darray) use PMPI_Pack/Unpack.
 */
#include <stdlib.h>
#include <string.h>
#include "hot.h"
#include "shim.h"
#include "dtype.h"

#define NBUCKET 128
#define MAX_SEGS (1 << 22)	/* beyond this one element is packed */

static struct kp_layout *table[NBUCKET];

static unsigned int bucket(MPI_Datatype t)
{
	return kp_type_bucket(t) & (NBUCKET - 1);
}

struct segv {
	struct kp_seg *s;
	size_t n, cap;
	bool fail;
};

static void push(struct segv *v, int64_t off, int64_t len)
{
	if (len <= 0 || v->fail)
		return;
	if (v->n && v->s[v->n - 1].off + v->s[v->n - 1].len == off) {
		v->s[v->n - 1].len += len;
		return;
	}
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		struct kp_seg *s;

		if (cap > MAX_SEGS) {
			v->fail = true;
			return;
		}
		s = realloc(v->s, cap * sizeof(*s));
		if (!s) {
			v->fail = true;
			return;
		}
		v->s = s;
		v->cap = cap;
	}
	v->s[v->n].off = off;
	v->s[v->n].len = len;
	v->n++;
}

int kp_seg_merge(struct kp_seg *s, int n)
{
	int i, o = 0;

	for (i = 0; i < n; i++) {
		if (s[i].len <= 0)
			continue;
		if (o && s[o - 1].off + s[o - 1].len == s[i].off)
			s[o - 1].len += s[i].len;
		else
			s[o++] = s[i];
	}
	return o;
}

static bool is_named(MPI_Datatype t)
{
	int ni, na, nd, comb;

	PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
	return comb == MPI_COMBINER_NAMED;
}

static void flatten(MPI_Datatype t, int64_t off, struct segv *v);

/* Append @count copies of the segments @one, @stride bytes apart. */
static void replicate(const struct segv *one, int64_t off, int64_t count, int64_t stride,
		      struct segv *v)
{
	int64_t i;
	size_t s;

	if (one->fail) {
		v->fail = true;
		return;
	}
	if (one->n == 1 && one->s[0].len == stride) {
		push(v, off + one->s[0].off, stride * count);
		return;
	}
	for (i = 0; i < count && !v->fail; i++)
		for (s = 0; s < one->n; s++)
			push(v, off + i * stride + one->s[s].off, one->s[s].len);
}

/* Append @count copies of @old, @stride bytes apart, starting at @off. */
static void repeat(MPI_Datatype old, int64_t off, int64_t count, int64_t stride, struct segv *v)
{
	struct segv one = { 0 };

	if (count <= 0 || v->fail)
		return;
	flatten(old, 0, &one);	/* once, then replicate without asking MPI */
	replicate(&one, off, count, stride, v);
	free(one.s);
}

static MPI_Aint extent_of(MPI_Datatype t)
{
	MPI_Aint lb, ext;

	PMPI_Type_get_extent(t, &lb, &ext);
	return ext;
}

/* Subarray: walk dimension @d (in memory order, slowest first). */
static void subarray(int nd, const int *sizes, const int *subs, const int *starts, int order,
		     MPI_Datatype old, int64_t ext, int64_t off, int d, struct segv *v)
{
	int64_t stride = ext;
	int k, i, dim;

	dim = order == MPI_ORDER_C ? d : nd - 1 - d;
	for (k = d + 1; k < nd; k++)
		stride *= sizes[order == MPI_ORDER_C ? k : nd - 1 - k];
	if (d == nd - 1) {	/* innermost: one run of elements */
		repeat(old, off + (int64_t)starts[dim] * stride, subs[dim], stride, v);
		return;
	}
	for (i = 0; i < subs[dim] && !v->fail; i++)
		subarray(nd, sizes, subs, starts, order, old, ext,
			 off + (int64_t)(starts[dim] + i) * stride, d + 1, v);
}

static void flatten(MPI_Datatype t, int64_t off, struct segv *v)
{
	int ni, na, nd, comb, i, sz;
	int *ints = NULL;
	MPI_Aint *aints = NULL, lb, ext, tlb, text;
	MPI_Datatype *types = NULL;

	if (v->fail)
		return;
	PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
	if (comb == MPI_COMBINER_NAMED) {
		PMPI_Type_size(t, &sz);
		PMPI_Type_get_extent(t, &lb, &ext);
		PMPI_Type_get_true_extent(t, &tlb, &text);
		if (sz == text)
			push(v, off + tlb, sz);
		else
			v->fail = true;	/* pair types with padding */
		return;
	}
	ints = malloc(sizeof(int) * (ni + 1));
	aints = malloc(sizeof(MPI_Aint) * (na + 1));
	types = malloc(sizeof(MPI_Datatype) * (nd + 1));
	if (!ints || !aints || !types) {
		v->fail = true;
		goto out;
	}
	PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types);
	switch (comb) {
	case MPI_COMBINER_DUP:
	case MPI_COMBINER_RESIZED:	/* typemap unchanged, only lb/extent */
		flatten(types[0], off, v);
		break;
	case MPI_COMBINER_CONTIGUOUS:
		repeat(types[0], off, ints[0], extent_of(types[0]), v);
		break;
	case MPI_COMBINER_VECTOR:
	case MPI_COMBINER_HVECTOR: {
		int64_t e = extent_of(types[0]);
		int64_t stride = comb == MPI_COMBINER_VECTOR ? ints[2] * e : aints[0];

		struct segv blk = { 0 };

		repeat(types[0], 0, ints[1], e, &blk);
		replicate(&blk, off, ints[0], stride, v);
		free(blk.s);
		break;
	}
	case MPI_COMBINER_INDEXED:
	case MPI_COMBINER_HINDEXED: {
		int64_t e = extent_of(types[0]);
		int n = ints[0];

		struct segv one = { 0 };

		flatten(types[0], 0, &one);
		for (i = 0; i < n && !v->fail; i++) {
			int64_t d = comb == MPI_COMBINER_INDEXED ? ints[1 + n + i] * e : aints[i];

			replicate(&one, off + d, ints[1 + i], e, v);
		}
		free(one.s);
		break;
	}
	case MPI_COMBINER_INDEXED_BLOCK:
	case MPI_COMBINER_HINDEXED_BLOCK: {
		int64_t e = extent_of(types[0]);
		int n = ints[0];

		struct segv blk = { 0 };

		repeat(types[0], 0, ints[1], e, &blk);
		for (i = 0; i < n && !v->fail; i++) {
			int64_t d = comb == MPI_COMBINER_INDEXED_BLOCK ? ints[2 + i] * e : aints[i];

			replicate(&blk, off + d, 1, 0, v);
		}
		free(blk.s);
		break;
	}
	case MPI_COMBINER_STRUCT: {
		int n = ints[0];

		for (i = 0; i < n && !v->fail; i++)
			repeat(types[i], off + aints[i], ints[1 + i], extent_of(types[i]), v);
		break;
	}
	case MPI_COMBINER_SUBARRAY: {
		int n = ints[0];

		if (n > 0)
			subarray(n, ints + 1, ints + 1 + n, ints + 1 + 2 * n, ints[1 + 3 * n],
				 types[0], extent_of(types[0]), off, 0, v);
		break;
	}
	default:	/* darray, f90 parameterised types: pack */
		v->fail = true;
		break;
	}
	for (i = 0; i < nd; i++)
		if (!is_named(types[i]))
			PMPI_Type_free(&types[i]);
out:
	free(ints);
	free(aints);
	free(types);
}

KP_HOT struct kp_layout *kp_layout_get(MPI_Datatype type)
{
	struct kp_layout *l;
	struct segv v = { 0 };
	unsigned int b = bucket(type);

	for (l = table[b]; l; l = l->next)
		if (l->type == type) {
			l->refs++;
			return l;
		}
	l = calloc(1, sizeof(*l));
	if (!l)
		abort();
	l->type = type;
	l->refs = 2;	/* table + caller */
	{
		MPI_Count sz = 0;

		PMPI_Type_size_x(type, &sz);
		l->size = sz;
	}
	{
		MPI_Aint lb;

		PMPI_Type_get_extent(type, &lb, &l->extent);
	}
	flatten(type, 0, &v);
	if (!v.fail) {
		l->flat = true;
		l->nseg = (int)v.n;
		l->segs = v.s;
	} else {
		free(v.s);
	}
	l->next = table[b];
	table[b] = l;
	return l;
}

KP_HOT void kp_layout_put(struct kp_layout *l)
{
	if (!l || --l->refs)
		return;
	free(l->segs);
	free(l);
}

/*
 * What the fast path asks of a type in every small message: its size, and
 * whether count elements are one block of bytes. A small direct-mapped
 * cache over the layout table saves the lookup and the reference count
 * (about 40 of the 270 instructions that take an 8-byte record);
 * kp_layout_evict() clears a freed type's entry before its handle can be
 * reused.
 */
struct kp_quick_slot kp_quick[KP_NQUICK];

/* kp_type_quick()'s miss (shim.h): fill the type's slot. */
const struct kp_quick_type *kp_type_quick_fill(MPI_Datatype type)
{
	struct kp_quick_slot *q = &kp_quick[kp_type_bucket(type) & (KP_NQUICK - 1)];
	struct kp_layout *l;

	l = kp_layout_get(type);
	q->type = type;
	q->t.size = l->size;
	q->t.block = l->flat && l->nseg == 1 && l->segs[0].len == l->extent;
	q->t.off = q->t.block ? l->segs[0].off : 0;
	kp_layout_put(l);
	return &q->t;
}

void kp_layout_evict(MPI_Datatype type)
{
	struct kp_layout **pp, *l;

	for (int i = 0; i < KP_NQUICK; i++)
		if (kp_quick[i].type == type)
			kp_quick[i].type = MPI_DATATYPE_NULL;
	for (pp = &table[bucket(type)]; (l = *pp); pp = &l->next)
		if (l->type == type) {
			*pp = l->next;
			kp_layout_put(l);
			return;
		}
}

size_t kp_layout_iov(const struct kp_layout *l, const void *buf, int count,
		     struct kprog_iov *iov, size_t max)
{
	size_t n = 0;
	int e, s;

	for (e = 0; e < count; e++) {
		const char *base = (const char *)buf + (int64_t)e * l->extent;

		for (s = 0; s < l->nseg; s++) {
			uint64_t a = (uint64_t)(uintptr_t)(base + l->segs[s].off);

			if (n && iov[n - 1].base + iov[n - 1].len == a) {
				iov[n - 1].len += l->segs[s].len;
				continue;
			}
			if (n == max)
				return max + 1;
			iov[n].base = a;
			iov[n].len = l->segs[s].len;
			n++;
		}
	}
	return n;
}

void kp_gather(const struct kp_layout *l, const void *buf, int count, void *out, size_t bytes)
{
	char *o = out;
	int e, s;

	for (e = 0; e < count && bytes; e++) {
		const char *base = (const char *)buf + (int64_t)e * l->extent;

		for (s = 0; s < l->nseg && bytes; s++) {
			size_t n = (size_t)l->segs[s].len < bytes ? (size_t)l->segs[s].len : bytes;

			memcpy(o, base + l->segs[s].off, n);
			o += n;
			bytes -= n;
		}
	}
}

void kp_scatter(const struct kp_layout *l, void *buf, int count, const void *in, size_t bytes)
{
	const char *i = in;
	int e, s;

	for (e = 0; e < count && bytes; e++) {
		char *base = (char *)buf + (int64_t)e * l->extent;

		for (s = 0; s < l->nseg && bytes; s++) {
			size_t n = (size_t)l->segs[s].len < bytes ? (size_t)l->segs[s].len : bytes;

			memcpy(base + l->segs[s].off, i, n);
			i += n;
			bytes -= n;
		}
	}
}

/* Elements per PMPI_Pack/Unpack call: their packed size fits an int. */
static int pack_chunk(const struct kp_layout *l)
{
	int64_t n = l->size > 0 ? (INT32_MAX / 2) / l->size : 1;

	return n < 1 ? 1 : (int)n;
}

void kp_pack(const struct kp_layout *l, const void *buf, int count, MPI_Datatype type,
	     void *out)
{
	int step = pack_chunk(l), e, n, pos;
	char *o = out;

	for (e = 0; e < count; e += n) {
		n = count - e < step ? count - e : step;
		pos = 0;
		PMPI_Pack((const char *)buf + (int64_t)e * l->extent, n, type, o,
			  (int)(n * l->size), &pos, MPI_COMM_SELF);
		o += (int64_t)n * l->size;
	}
}

void kp_unpack(const struct kp_layout *l, const void *in, size_t bytes, void *buf,
	       MPI_Datatype type)
{
	int step = pack_chunk(l), n, pos;
	int64_t e, whole;
	const char *i = in;

	if (l->size <= 0)
		return;
	whole = (int64_t)(bytes / (size_t)l->size);
	for (e = 0; e < whole; e += n) {
		n = whole - e < step ? (int)(whole - e) : step;
		pos = 0;
		PMPI_Unpack(i, (int)(n * l->size), &pos, (char *)buf + e * l->extent, n, type,
			    MPI_COMM_SELF);
		i += (int64_t)n * l->size;
	}
}

int MPI_Type_free(MPI_Datatype *type)
{
	KP_GUARD();
	MPI_Datatype t = type ? *type : MPI_DATATYPE_NULL;
	int rc = PMPI_Type_free(type);

	if (rc == MPI_SUCCESS)
		kp_layout_evict(t);
	return rc;
}
