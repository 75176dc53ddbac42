// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Request and message objects, the completion ring, posting (with a FIFO
 * for posts the module refused with ENOBUFS), the list of receives posted
 * in the kernel, and completion -> status.
 *
 * All objects live in one region reserved at init, so "is this handle
 * ours" is a range check. The kernel req_id is generation << 32 | slot, so
 * a stale completion can never hit a reused slot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include "shim.h"
#include "dtype.h"

#define POOL_SLOTS (1u << 20)

static struct kp_req *pool;
static uint32_t pool_bump;	/* slots handed out at least once */
static uint32_t free_head = KP_NO_REQ;
static uint32_t dq_head[2] = { KP_NO_REQ, KP_NO_REQ };	/* deferred sends, receives */
static uint32_t dq_tail[2] = { KP_NO_REQ, KP_NO_REQ };
static uint32_t n_kernel_recv, recv_cap;	/* receives posted in the kernel, their cap */
static uint32_t recv_pushes;	/* receives ever kept back: a walk looks at new ones */
static struct kp_req *khead;	/* receives posted in the kernel (knext/kprev) */
static const struct kp_req_upcalls *req_up;	/* kp_pool_init()'s */
static void recv_batch_flush(void);

const struct kp_req *kp_kernel_recvs(void)
{
	return khead;
}

static void kernel_recv_add(struct kp_req *r)
{
	r->in_kernel = true;
	n_kernel_recv++;
	r->kprev = NULL;
	r->knext = khead;
	if (khead)
		khead->kprev = r;
	khead = r;
}

static void kernel_recv_del(struct kp_req *r)
{
	r->in_kernel = false;
	if (!--n_kernel_recv)
		req_up->krecv(false);
	if (r->kprev)
		r->kprev->knext = r->knext;
	else
		khead = r->knext;
	if (r->knext)
		r->knext->kprev = r->kprev;
	r->knext = r->kprev = NULL;
}

void kp_pool_init(const struct kp_req_upcalls *up)
{
	void *p = mmap(NULL, (size_t)POOL_SLOTS * sizeof(struct kp_req), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		abort();
	req_up = up;
	kp_rb_flusher = recv_batch_flush;
	pool = p;
	/* slot 0: the completed send, never released (kp_req_done_send) */
	pool[0].kind = KR_SEND;
	pool[0].state = RS_COMPLETE;
	pool[0].shared = true;
	pool[0].next_free = KP_NO_REQ;
	pool[0].next_deferred = KP_NO_REQ;
	pool[0].type = MPI_DATATYPE_NULL;
	pool[0].utype = MPI_DATATYPE_NULL;
	pool[0].status.MPI_SOURCE = MPI_ANY_SOURCE;
	pool[0].status.MPI_TAG = MPI_ANY_TAG;
	pool[0].status.MPI_ERROR = MPI_SUCCESS;
	pool_bump = 1;
}

/*
 * A nonblocking send that the fast path completed in the call (send
 * immediate) needs no object of its own: nothing about it is left to do,
 * and MPI defines nothing in a send's status but the error and the
 * cancelled flag (MPI-4.0 3.7.3). All such sends share this one completed
 * request, as MPICH's lightweight requests do; waiting for it, testing or
 * freeing it only sets the handle to MPI_REQUEST_NULL, cancelling it does
 * nothing (the send is complete), and its status is the empty status.
 * That takes the allocation, the clearing of a request and its release
 * off the path of every small MPI_Isend (seed 004: no heavy request
 * object on the fast path).
 */
struct kp_req *kp_req_done_send(void)
{
	return &pool[0];
}

bool kp_is_req(MPI_Request r)
{
	uintptr_t a = (uintptr_t)(void *)r, b = (uintptr_t)pool;

	return pool && a >= b && a < b + (size_t)POOL_SLOTS * sizeof(struct kp_req);
}

bool kp_is_msg(MPI_Message m)
{
	return kp_is_req((MPI_Request)(void *)m);
}

static uint32_t slot_of(struct kp_req *r)
{
	return (uint32_t)(r - pool);
}

uint32_t kp_req_slot(const struct kp_req *r)
{
	return (uint32_t)(r - pool);
}

struct kp_req *kp_req_at(uint32_t slot)
{
	if (!pool || slot >= pool_bump || pool[slot].state == RS_FREE)
		return NULL;
	return &pool[slot];
}

uint64_t kp_req_id(struct kp_req *r)
{
	return (uint64_t)r->gen << 32 | slot_of(r);
}

struct kp_req *kp_req_alloc(void)
{
	struct kp_req *r;
	uint32_t gen;

	if (free_head != KP_NO_REQ) {
		r = &pool[free_head];
		free_head = r->next_free;
	} else {
		if (pool_bump == POOL_SLOTS) {
			kp_logf("out of request slots");
			abort();
		}
		r = &pool[pool_bump++];
	}
	gen = r->gen + 1;
	memset(r, 0, offsetof(struct kp_req, post));
	r->gen = gen;
	r->next_free = KP_NO_REQ;
	r->next_deferred = KP_NO_REQ;
	r->type = MPI_DATATYPE_NULL;
	r->utype = MPI_DATATYPE_NULL;
	return r;
}

void kp_req_drop(struct kp_req *r)
{
	/* most requests prepared nothing (fast path, one segment): no calls */
	if (!r->tmp && !r->iov && !r->lay && r->utype == MPI_DATATYPE_NULL)
		return;
	free(r->tmp);
	r->tmp = NULL;
	free(r->iov);
	r->iov = NULL;
	kp_layout_put(r->lay);
	r->lay = NULL;
	if (r->utype != MPI_DATATYPE_NULL)
		PMPI_Type_free(&r->utype);
	r->utype = MPI_DATATYPE_NULL;
}

void kp_req_release(struct kp_req *r)
{
	if (r->shared)
		return;
	if (r->coll)
		kp_coll_free(r);	/* a persistent collective's kept schedule */
	kp_req_drop(r);
	if (r->type_dup) {
		PMPI_Type_free(&r->type);
		r->type_dup = false;
	}
	if (r->comm)
		kp_comm_put(r->comm);
	r->comm = NULL;
	r->state = RS_FREE;
	r->next_free = free_head;
	free_head = slot_of(r);
}

int kp_errno_to_mpi(int err)
{
	switch (err) {
	case 0:
		return MPI_SUCCESS;
	case EMSGSIZE:
		return MPI_ERR_TRUNCATE;
	case EFAULT:
		return MPI_ERR_BUFFER;
	case EINVAL:
		return MPI_ERR_ARG;
	case ENOMEM:
		return MPI_ERR_NO_MEM;
	default:	/* ECONNRESET (peer gone) and anything unexpected */
		return MPI_ERR_OTHER;
	}
}

void kp_status_empty(MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = MPI_ANY_SOURCE;
	st->MPI_TAG = MPI_ANY_TAG;
	st->_cancelled = 0;	/* MPI_ERROR kept, as Open MPI does */
	st->_ucount = 0;
}

void kp_status_copy(MPI_Status *dst, const struct kp_req *r, bool with_error)
{
	int e;

	if (dst == MPI_STATUS_IGNORE)
		return;
	e = dst->MPI_ERROR;
	*dst = r->status;
	if (!with_error)	/* single-request calls leave MPI_ERROR alone, like Open MPI */
		dst->MPI_ERROR = e;
}

void kp_complete_now(struct kp_req *r, int src, int tag, size_t bytes)
{
	kp.activity++;
	r->status.MPI_SOURCE = src;
	r->status.MPI_TAG = tag;
	r->status.MPI_ERROR = MPI_SUCCESS;
	r->status._cancelled = 0;
	r->status._ucount = bytes;
	r->err = MPI_SUCCESS;
	r->state = RS_COMPLETE;
}

void (*kp_coll_done)(struct kp_req *r, const struct kprog_cqe *cqe);
void (*kp_coll_free)(struct kp_req *r);

void kp_complete(struct kp_req *r, const struct kprog_cqe *cqe)
{
	if (r->kind == KR_COLL) {
		kp.activity++;
		kp_coll_done(r, cqe);
		return;
	}
	kp.activity++;
	int src = cqe->source;
	bool cancelled = (cqe->flags & KPROG_CQE_CANCELLED) || cqe->error == -ECANCELED;

	if (r->in_kernel)
		kernel_recv_del(r);
	if (r->grant)
		req_up->grant_done(r);

	if (r->kind == KR_RECV) {
		if (src >= 0 && src < kp.world_size && r->comm->w2c[src] >= 0)
			src = r->comm->w2c[src];
	} else {
		src = r->peer;
	}
	r->status.MPI_SOURCE = src;
	r->status.MPI_TAG = cqe->tag;
	/* a receive never reports more than its buffer holds (truncation) */
	r->status._ucount = r->kind == KR_RECV && cqe->bytes > r->cap ? r->cap : cqe->bytes;
	r->status._cancelled = cancelled;
	r->err = cancelled ? MPI_SUCCESS : kp_errno_to_mpi(-cqe->error);
	r->status.MPI_ERROR = r->err;
	/*
	 * Late Sender as the kernel measured it (KPROG_JOIN_TIMES), 0 if
	 * none; from the receive's start in the program (post_tick: MPI_Recv
	 * may have spun on a channel before it posted in the kernel), taken
	 * to the kernel's clock (CLOCK_MONOTONIC).
	 */
	r->timed = r->kind == KR_RECV && kp.cqe_times.send_ns && kp.cqe_times.recv_ns;
	if (r->timed) {
		uint64_t post = r->post_tick ? kp_ticks_to_mono(r->post_tick) : 0;
		uint64_t since = post && post < kp.cqe_times.recv_ns ? post : kp.cqe_times.recv_ns;

		r->late_ns = kp.cqe_times.send_ns > since ? kp.cqe_times.send_ns - since : 0;
	}
	kp_log(3, "complete id %llx kind %d bytes %llu cap %llu err %d", (unsigned long long)cqe->req_id,
	       r->kind, (unsigned long long)cqe->bytes, (unsigned long long)r->cap, cqe->error);

	/* receive through a packed copy: move the bytes into place */
	if (r->kind == KR_RECV && r->tmp && !cancelled && r->status._ucount) {
		size_t n = r->status._ucount < r->tmp_bytes ? r->status._ucount : r->tmp_bytes;

		if (r->lay && r->lay->flat) {
			kp_scatter(r->lay, r->buf, r->count, r->tmp, n);
		} else if (r->lay && r->utype != MPI_DATATYPE_NULL) {
			kp_unpack(r->lay, r->tmp, n, r->buf, r->utype);
		}
	}
	kp_req_drop(r);
	r->state = RS_COMPLETE;
	if (r->user_freed || r->internal)
		kp_req_release(r);
}

void kp_handle_cqe(const struct kprog_cqe *cqe)
{
	uint32_t slot = (uint32_t)cqe->req_id;
	struct kp_req *r;

	if (slot >= pool_bump)
		goto stale;
	r = &pool[slot];
	if (r->gen != (uint32_t)(cqe->req_id >> 32) || r->state != RS_ACTIVE)
		goto stale;
	kp_complete(r, cqe);
	return;
stale:
	kp_log(1, "stale completion for id %llx", (unsigned long long)cqe->req_id);
}

static void drain_ring(void)
{
	struct kprog_ring_hdr *h = kp.ring;
	uint32_t head = h->head, tail;
	struct kprog_cqe cqe;

	tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	while (head != tail) {
		while (head != tail) {
			cqe = kp.cqes[head & kp.ring_mask];
			if (kp.times)	/* the wait-state profiler's kernel times */
				kp.cqe_times = kp.times[head & kp.ring_mask];
			head++;
			/* free the slot before completing: completion may post */
			__atomic_store_n(&h->head, head, __ATOMIC_RELEASE);
			kp_handle_cqe(&cqe);
			kp.cqe_times.send_ns = 0;
		}
		tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	}
}

static void post_flags(struct kp_req *r)
{
	/*
	 * A rendezvous it matches is copied in this call (kprog.h). So is one
	 * already there for a small nonblocking receive (KPROG_RECV_COPY_MAX):
	 * its sender waits for it, and a kernel worker woken on the sender's
	 * CPU costs more than such a copy (an IPI and two context switches;
	 * LAMMPS' halo exchange, docs/apps.md). Open MPI's vader copies there too.
	 */
	if (kp.waiter && (r->blocking || (r->kind == KR_RECV && r->cap <= kp.recv_copy_max)))
		r->post.flags |= KPROG_POST_BLOCKING;
	else
		r->post.flags &= ~KPROG_POST_BLOCKING;
}

static int post_ioctl(struct kp_req *r, unsigned long ioc)
{
	int rc;

	post_flags(r);
	if (ioc == KPROG_IOC_RECV)
		req_up->krecv(true);	/* before the post's drain (rts.c) */
	do {
		rc = ioctl(kp.fd, ioc, &r->post);
	} while (rc < 0 && errno == EINTR);
	rc = rc < 0 ? errno : 0;
	if (ioc == KPROG_IOC_RECV && (rc || r->post.done) && !n_kernel_recv)
		req_up->krecv(false);
	return rc;
}

static unsigned long ioc_of(struct kp_req *r)
{
	return r->kind == KR_SEND ? KPROG_IOC_SEND : KPROG_IOC_RECV;
}

/*
 * Posts the module refused (ENOBUFS: max_ops reached) wait in user space,
 * one FIFO for sends and one for receives, so that sends stay in order
 * among sends and receives among receives; a send never waits behind a
 * receive (that could deadlock). Receives take at most 3/4 of max_ops in
 * the kernel, so that eager sends (which hold a slot during their post)
 * always find room; rendezvous sends have their own budget (max_rndv).
 */

static int q_of(const struct kp_req *r)
{
	return r->kind == KR_SEND ? 0 : 1;
}

static void dq_push(struct kp_req *r)
{
	int q = q_of(r);

	r->state = RS_DEFERRED;
	r->next_deferred = KP_NO_REQ;
	if (q == 1)
		recv_pushes++;
	if (dq_tail[q] == KP_NO_REQ)
		dq_head[q] = slot_of(r);
	else
		pool[dq_tail[q]].next_deferred = slot_of(r);
	dq_tail[q] = slot_of(r);
}

static void fail_now(struct kp_req *r, int err)
{
	struct kprog_cqe cqe = { .req_id = kp_req_id(r), .source = -1, .tag = r->tag,
				 .error = -err };

	r->state = RS_ACTIVE;
	kp_complete(r, &cqe);
}

static void after_post(struct kp_req *r)
{
	r->state = RS_ACTIVE;
	if (r->post.done) {
		/* Found its message already there: no Late Sender, exactly. */
		if (kp.times && r->kind == KR_RECV && !r->post.cqe.error)
			kp.cqe_times = (struct kprog_cqe_times){ .send_ns = 1, .recv_ns = 1 };
		kp_complete(r, &r->post.cqe);
		kp.cqe_times.send_ns = 0;
	} else if (r->kind == KR_RECV) {
		kernel_recv_add(r);
	}
}

static bool recv_room(void)
{
	if (!recv_cap)
		recv_cap = kp.max_ops > 4 ? kp.max_ops - kp.max_ops / 4 : 1;
	return n_kernel_recv < recv_cap;
}

/* Could one message match both receives (kernel form of peer, tag)? */
static bool recvs_overlap(const struct kprog_post *a, const struct kprog_post *b)
{
	return a->context == b->context &&
	       (a->peer == KPROG_ANY_SOURCE || b->peer == KPROG_ANY_SOURCE || a->peer == b->peer) &&
	       (a->tag == KPROG_ANY_TAG || b->tag == KPROG_ANY_TAG || a->tag == b->tag);
}

#define ARRIVED_SCAN 256
#define ARRIVED_GAP_NS 1000000

/* Messages of world rank @w the kernel holds unexpected (ring, per source). */
static uint32_t held_from(int32_t w)
{
	const struct kprog_src *src;
	uint32_t off = kp.ring->src_offset, n = kp.ring->nr_src;

	if (w < 0 || (uint32_t)w >= n ||
	    off + (uint64_t)n * sizeof(*src) > kp.ring_bytes)
		return 1;	/* unknown: ask the kernel */
	src = (const struct kprog_src *)((const char *)kp.ring + off);
	return __atomic_load_n(&src[w].held, __ATOMIC_ACQUIRE);
}

/*
 * Receives kept back here whose message has already arrived take it with
 * KPROG_RECV_ARRIVED, which needs no kernel slot. Without this a program
 * could stop: the receives in the kernel wait for the peer's next sends,
 * while the peer waits for a rendezvous send that only a receive kept back
 * here would match (tests/mpi/smallops).
 *
 * Only a receive that no earlier kept-back receive could match the same
 * message as is tried: a message taken here then belongs to no earlier
 * receive, even one that arrives during the walk (MPI order; receives in
 * the kernel are older still and matched on arrival). New channel records
 * are drained into the kernel first, so that the per-source counts of
 * held messages tell which receives can match at all: only those cost a
 * system call. The walk looks at the first ARRIVED_SCAN kept-back receives
 * (the order check is quadratic), only when a message arrived or a receive
 * was kept back since the last walk, and not while receives are posted in user space (they come
 * first and are not in the kernel). It is a liveness device, not a fast
 * path: outside idle waits (@idle) at most one walk per ARRIVED_GAP_NS.
 */
static void take_arrived(bool idle)
{
	static uint32_t walked, pushed;	/* events, receives kept back at the last walk */
	static uint64_t published, last_ns;
	static bool have_walked;
	const struct kprog_post *seen[ARRIVED_SCAN];
	uint32_t ev, *pp = &dq_head[1], prev = KP_NO_REQ;
	struct kprog_chan_drain d = { .peer = KPROG_ANY_SOURCE };
	uint64_t pub, now;
	int nseen = 0, i, tried = 0, taken = 0;

	if (!kp.recv_arrived || dq_head[1] == KP_NO_REQ || req_up->user_recvs())
		return;
	ev = __atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE);
	pub = req_up->rx_published();
	if (have_walked && ev == walked && pub == published && recv_pushes == pushed)
		return;
	now = kp_clock_ns();
	if (!idle && have_walked && now - last_ns < ARRIVED_GAP_NS)
		return;
	if (pub != published)
		ioctl(kp.fd, KPROG_IOC_CHAN_DRAIN, &d);	/* best effort: each recv drains too */
	/* after the drain: its arrivals bump the events, already looked at */
	walked = __atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE);
	published = pub;
	pushed = recv_pushes;
	last_ns = now;
	have_walked = true;
	while (*pp != KP_NO_REQ && nseen < ARRIVED_SCAN &&
	       __atomic_load_n(&kp.ring->unexp, __ATOMIC_ACQUIRE)) {
		struct kp_req *r = &pool[*pp];
		int e = EAGAIN;

		for (i = 0; i < nseen && !recvs_overlap(seen[i], &r->post); i++)
			;
		if (i == nseen && (r->post.peer == KPROG_ANY_SOURCE || held_from(r->post.peer) ||
				   (r->post.flags & KPROG_RECV_MESSAGE))) {
			r->post.flags |= KPROG_RECV_ARRIVED;
			e = post_ioctl(r, KPROG_IOC_RECV);
			r->post.flags &= ~KPROG_RECV_ARRIVED;
			tried++;
		}
		if (e == EAGAIN) {	/* stays queued: later ones must not overtake it */
			seen[nseen++] = &r->post;
			prev = *pp;
			pp = &r->next_deferred;
			continue;
		}
		*pp = r->next_deferred;
		if (dq_tail[1] == slot_of(r))
			dq_tail[1] = prev;
		taken++;
		if (e)
			fail_now(r, e);
		else
			after_post(r);
	}
	kp_log(3, "kept-back receives: %d tried, %d took an arrived message (%d looked at)",
	       tried, taken, nseen + taken);
}

static void flush_queue(int q)
{
	/* Drain first: completions free slots and ring entries. */
	while (dq_head[q] != KP_NO_REQ) {
		struct kp_req *r = &pool[dq_head[q]];
		int e;

		if (q == 1 && !recv_room()) {
			take_arrived(false);
			return;
		}
		e = post_ioctl(r, ioc_of(r));
		if (e == ENOBUFS) {
			if (q == 1)
				take_arrived(false);
			return;
		}
		dq_head[q] = r->next_deferred;
		if (dq_head[q] == KP_NO_REQ)
			dq_tail[q] = KP_NO_REQ;
		if (e)
			fail_now(r, e);
		else
			after_post(r);
	}
}

/*
 * Receives in batches (rbatch.h, docs/DESIGN.md): a receive MPI_Irecv
 * marked r->batch goes to the queue when it would have been posted at
 * once (nothing kept back before it, room in the kernel counting the
 * queue) and is one segment of at most the eager size; anything else
 * flushes the queue first and is posted as always.
 */
static const struct kprog_post *rb_post(uint32_t slot)
{
	post_flags(&pool[slot]);
	return &pool[slot].post;
}

static void rb_refused(uint32_t slot)
{
	dq_push(&pool[slot]);	/* retried alone: ENOBUFS waits, another error fails it */
}

static void rb_posted(uint32_t slot, const struct kprog_post *p)
{
	struct kp_req *r = &pool[slot];

	r->post.done = p->done;
	r->post.cqe = p->cqe;
	after_post(r);
}

/* ioctl() is variadic: called through a pointer of its own type */
static int rb_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg);
}

static const struct kp_rb_ops rb_ops = {
	.ioctl = rb_ioctl,
	.post = rb_post,
	.refused = rb_refused,
	.posted = rb_posted,
};

static void recv_batch_flush(void)
{
	int e;

	if (!kp_rb_n)
		return;
	req_up->krecv(true);	/* before the posts' drain (rts.c), as post_ioctl() */
	e = kp_rb_flush(kp.fd, &rb_ops);
	if (e)
		kp_log(2, "a batched receive was refused (%d): it and the ones after it wait", e);
	if (!n_kernel_recv)
		req_up->krecv(false);
}

static bool rb_takes(const struct kp_req *r)
{
	const struct kprog_post *p = &r->post;

	return r->batch && dq_head[1] == KP_NO_REQ && !(p->flags & KPROG_POST_IOV) &&
	       !r->tmp && p->len <= kp.eager_limit &&
	       recv_room() && n_kernel_recv + kp_rb_n < recv_cap;
}

int kp_post(struct kp_req *r, unsigned long ioc)
{
	int q = q_of(r), e;

	(void)ioc;
	r->post.req_id = kp_req_id(r);
	if (kp_rb_n || r->batch) {
		if (rb_takes(r)) {
			r->state = RS_DEFERRED;	/* on its way to the kernel */
			if (kp_rb_add(kp_req_slot(r)))
				recv_batch_flush();
			return MPI_SUCCESS;
		}
		recv_batch_flush();
	}
	if (dq_head[q] != KP_NO_REQ || (q == 1 && !recv_room())) {
		dq_push(r);
		return MPI_SUCCESS;
	}
	e = post_ioctl(r, ioc_of(r));
	if (e == ENOBUFS) {
		kp_log(2, "max_ops reached, deferring posts");
		dq_push(r);
		return MPI_SUCCESS;
	}
	if (e)
		return kp_errno_to_mpi(e);
	after_post(r);
	return MPI_SUCCESS;
}

void kp_ring_drain(void)
{
	int i;

	drain_ring();
	for (i = 0; i < 16 && __atomic_load_n(&kp.ring->overflow, __ATOMIC_ACQUIRE); i++) {
		kp_sleep(0);
		drain_ring();
	}
}

void kp_deferred_flush(void)
{
	if (dq_head[0] != KP_NO_REQ)
		flush_queue(0);
	if (dq_head[1] != KP_NO_REQ)
		flush_queue(1);
}

void kp_deferred_arrived(void)
{
	if (dq_head[1] != KP_NO_REQ && !recv_room())
		take_arrived(true);
}

bool kp_deferred_sends(void)
{
	return dq_head[0] != KP_NO_REQ;
}

bool kp_deferred_recvs(void)
{
	return dq_head[1] != KP_NO_REQ;
}

void kp_sleep(long timeout_ns)
{
	struct kprog_wait w = { .timeout_ns = timeout_ns };

	ioctl(kp.fd, KPROG_IOC_WAIT, &w);	/* ETIMEDOUT, EINTR: caller loops */
}

void kp_net_poll(void)
{
	struct kprog_wait w = { .timeout_ns = 0, .flags = KPROG_WAIT_POLL };

	kp.net_polls++;
	ioctl(kp.fd, KPROG_IOC_WAIT, &w);	/* ETIMEDOUT when nothing came */
}

void kp_sleep_events(long timeout_ns, uint32_t events)
{
	struct kprog_wait w = { .timeout_ns = timeout_ns, .flags = KPROG_WAIT_EVENTS,
				.events = events };

	ioctl(kp.fd, KPROG_IOC_WAIT, &w);
}

void kp_cancel(struct kp_req *r)
{
	struct kprog_cancel c;

	if (r->state == RS_DEFERRED) {
		int q = q_of(r);
		uint32_t *pp = &dq_head[q], prev = KP_NO_REQ;
		struct kprog_cqe cqe = { .req_id = kp_req_id(r), .source = -1, .tag = r->tag,
					 .error = -ECANCELED, .flags = KPROG_CQE_CANCELLED };

		while (*pp != KP_NO_REQ && *pp != slot_of(r)) {
			prev = *pp;
			pp = &pool[*pp].next_deferred;
		}
		if (*pp == KP_NO_REQ)
			return;
		*pp = r->next_deferred;
		if (dq_tail[q] == slot_of(r))
			dq_tail[q] = prev;
		r->state = RS_ACTIVE;
		kp_complete(r, &cqe);
		return;
	}
	if (r->state != RS_ACTIVE)
		return;
	if (r->grant && req_up->grant_cancel(r))
		return;
	c.req_id = kp_req_id(r);
	/* EBUSY/ENOENT: it completes normally */
	ioctl(kp.fd, KPROG_IOC_CANCEL, &c);
}

bool kp_deferred_pending(void)
{
	return dq_head[0] != KP_NO_REQ || dq_head[1] != KP_NO_REQ;
}

bool kp_outstanding_internal(void)
{
	uint32_t i;

	for (i = 0; i < pool_bump; i++) {
		struct kp_req *r = &pool[i];

		if ((r->state == RS_ACTIVE || r->state == RS_DEFERRED) && r->kind == KR_SEND &&
		    (r->internal || r->user_freed))
			return true;
	}
	return false;
}

MPI_Comm kp_req_comm(const struct kp_req *r)
{
	return r->comm && !r->comm->freed ? r->comm->comm : MPI_COMM_WORLD;
}

int kp_req_finish(MPI_Request *h, MPI_Status *st, bool with_error, MPI_Comm *errcomm)
{
	struct kp_req *r = kp_req(*h);
	int err = r->err;

	if (errcomm)
		*errcomm = kp_req_comm(r);
	kp_status_copy(st, r, with_error);
	KP_WP_REQ_DONE(r);
	if (r->persistent) {
		r->state = RS_INACTIVE;
	} else {
		kp_req_release(r);
		*h = MPI_REQUEST_NULL;
	}
	return err;
}
