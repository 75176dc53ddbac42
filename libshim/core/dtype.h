/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Datatype layouts (dtype.c): a datatype flattened into its byte
 * segments, the layout cache, the fast path's cache of small types, and
 * the copies between typed buffers and packed bytes. Included by the files
 * that move data; shim.h knows only that a request may hold a layout.
 */
#ifndef KP_DTYPE_H
#define KP_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <linux/kprog.h>

struct kp_seg {
	int64_t off;		/* bytes from the buffer address */
	int64_t len;
};

struct kp_layout {
	MPI_Datatype type;
	int refs;
	bool flat;		/* segs valid; false = use PMPI_Pack/Unpack */
	int64_t size;		/* bytes of one element (MPI_Type_size_x) */
	MPI_Aint extent;
	int nseg;		/* segments of one element, merged */
	struct kp_seg *segs;
	struct kp_layout *next;
};

struct kp_layout *kp_layout_get(MPI_Datatype type);	/* takes a ref */
void kp_layout_put(struct kp_layout *l);
void kp_layout_evict(MPI_Datatype type);
/* Size of one element; block: count elements are one block at off. */
struct kp_quick_type {
	int64_t size;
	MPI_Aint off;
	bool block;
};
/*
 * What the fast path asks of a type in every small message (dtype.c): a
 * direct-mapped cache whose hit is inline here, the fill out of line.
 */
#define KP_NQUICK 16
struct kp_quick_slot {
	MPI_Datatype type;
	struct kp_quick_type t;
};
extern struct kp_quick_slot kp_quick[KP_NQUICK];

/* Hash of a type handle (also dtype.c's layout table). */
static inline unsigned int kp_type_bucket(MPI_Datatype type)
{
	uintptr_t p = (uintptr_t)type;

	return (unsigned int)((p >> 4) ^ (p >> 11));
}

const struct kp_quick_type *kp_type_quick_fill(MPI_Datatype type);

/* The quick table's entry of type if it is there, else NULL (no fill). */
static inline const struct kp_quick_type *kp_type_quick_peek(MPI_Datatype type)
{
	struct kp_quick_slot *q = &kp_quick[kp_type_bucket(type) & (KP_NQUICK - 1)];

	return q->type == type && type != MPI_DATATYPE_NULL ? &q->t : NULL;
}

static inline const struct kp_quick_type *kp_type_quick(MPI_Datatype type)
{
	const struct kp_quick_type *q = kp_type_quick_peek(type);

	return q ? q : kp_type_quick_fill(type);
}
/* Segments of count elements; returns the merged count, stops at max. */
size_t kp_layout_iov(const struct kp_layout *l, const void *buf, int count,
		     struct kprog_iov *iov, size_t max);
/* Copy between a typed buffer and packed bytes (flat layouts only). */
void kp_gather(const struct kp_layout *l, const void *buf, int count, void *out, size_t bytes);
void kp_scatter(const struct kp_layout *l, void *buf, int count, const void *in, size_t bytes);
/*
 * PMPI_Pack/Unpack of count elements of a type the flattener does not
 * take, in pieces whose packed size fits the int of the MPI 3.1 calls, so
 * messages above 2 GiB work too. bytes: the packed size (count * size, or
 * less for a truncated unpack: whole elements only).
 */
void kp_pack(const struct kp_layout *l, const void *buf, int count, MPI_Datatype type,
	     void *out);
void kp_unpack(const struct kp_layout *l, const void *in, size_t bytes, void *buf,
	       MPI_Datatype type);
/* Test hook: flatten without MPI (dtype tests build layouts by hand). */
int kp_seg_merge(struct kp_seg *s, int n);

#endif
