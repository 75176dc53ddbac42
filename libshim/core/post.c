// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A request becomes a post to /dev/kprog (struct kprog_post): its buffer
 * described as one segment, an iovec or a packed copy, then posted
 * (req.c). Below the calls that post (p2p.c, the fast path's fallbacks in
 * fast.c), which all end here when a message goes through the kernel.
 */
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "dtype.h"

/* Describe r's buffer in r->post: one segment, an iovec, or a packed copy. */
static int prepare(struct kp_req *r)
{
	bool send = r->kind == KR_SEND;
	struct kp_layout *l;
	size_t bytes, n, cap;
	struct kprog_post *p = &r->post;

	memset(p, 0, sizeof(*p));
	p->context = r->comm->ctx;
	if (send) {
		p->peer = r->comm->c2w[r->peer];
		p->tag = r->tag;
		if (r->mode == M_SYNC)
			p->flags |= KPROG_SEND_SYNC;
	} else if (r->mrecv) {
		p->peer = KPROG_ANY_SOURCE;
		p->tag = KPROG_ANY_TAG;
		p->flags |= KPROG_RECV_MESSAGE;
		p->msg_id = r->msg_id;
	} else {
		p->peer = r->peer == MPI_ANY_SOURCE ? KPROG_ANY_SOURCE : r->comm->c2w[r->peer];
		p->tag = r->tag == MPI_ANY_TAG ? KPROG_ANY_TAG : r->tag;
	}
	p->addr = (uintptr_t)r->buf;
	r->cap = 0;
	if (r->count == 0)
		return MPI_SUCCESS;
	l = kp_layout_get(r->type);
	bytes = (size_t)l->size * (size_t)r->count;
	r->cap = bytes;
	if (bytes == 0) {
		kp_layout_put(l);
		return MPI_SUCCESS;
	}
	if (send && r->mode == M_BUFFERED)
		goto pack;
	if (l->flat && l->nseg == 1 && (r->count == 1 || l->segs[0].len == l->extent)) {
		/* contiguous: zero-copy, one segment */
		p->addr = (uintptr_t)((char *)r->buf + l->segs[0].off);
		p->len = bytes;
		kp_layout_put(l);
		return MPI_SUCCESS;
	}
	if (l->flat && kp.max_iov >= 2) {
		cap = (size_t)l->nseg * (size_t)r->count;
		if (cap > kp.max_iov)
			cap = kp.max_iov;
		r->iov = malloc(cap * sizeof(*r->iov));
		if (!r->iov)
			goto nomem;
		n = kp_layout_iov(l, r->buf, r->count, r->iov, kp.max_iov);
		if (n <= kp.max_iov) {
			if (n == 1) {
				p->addr = r->iov[0].base;
				p->len = r->iov[0].len;
				free(r->iov);
				r->iov = NULL;
			} else {
				p->addr = (uintptr_t)r->iov;
				p->len = n;
				p->flags |= KPROG_POST_IOV;
			}
			kp_layout_put(l);
			return MPI_SUCCESS;
		}
		free(r->iov);	/* too many segments: pack */
		r->iov = NULL;
	}
pack:
	r->tmp = malloc(bytes);
	if (!r->tmp)
		goto nomem;
	r->tmp_bytes = bytes;
	p->addr = (uintptr_t)r->tmp;
	p->len = bytes;
	if (send) {
		if (l->flat)
			kp_gather(l, r->buf, r->count, r->tmp, bytes);
		else
			kp_pack(l, r->buf, r->count, r->type, r->tmp);
		kp_layout_put(l);
	} else {
		r->lay = l;	/* scattered or unpacked at completion */
		if (!l->flat)
			PMPI_Type_dup(r->type, &r->utype);
	}
	return MPI_SUCCESS;
nomem:
	kp_layout_put(l);
	kp_req_drop(r);
	return MPI_ERR_NO_MEM;
}

int kp_post_kernel(struct kp_req *r)
{
	int rc = prepare(r);

	if (rc == MPI_SUCCESS)
		rc = kp_post(r, 0);
	if (rc != MPI_SUCCESS)
		kp_req_drop(r);
	return rc;
}
