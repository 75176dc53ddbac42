// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rendezvous sends with no system call (KPROG_FEAT_GRANTS; the protocol
 * is in include/uapi/linux/kprog.h, the kernel's side in kmod/core/grant.c).
 *
 * A send above the fast path's limit used to be a KPROG_IOC_SEND: about
 * 5 us of kernel work in the emulated test VM, where Open MPI writes a
 * rendezvous header into shared memory in under 1 us, and that was the
 * sender-side overlap lost at 64 KiB (README). Here the sender fills a
 * slot of its grant table (its buffer, the receiver, the envelope) and
 * writes a record flagged KPROG_REC_RNDV into the channel; the request
 * then waits for its completion in the ring like any send in the kernel.
 * The receiver hands the record to the kernel when a receive of it looks
 * (fast.c), whose drain sends the message from the grant on the sender's
 * behalf; the copy is then that of any rendezvous.
 *
 * Only when the receiver has no receive in the kernel (the channel's
 * krecv hint): a receive posted there progresses without its owner,
 * which is receiver-side overlap, and a record in the channel would wait
 * for the receiver's next call instead. Contiguous buffers only (a grant
 * is one range), not while sends wait in user space for budget (order).
 * KPROG_RTS=0 turns it off.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "shim.h"
#include "dtype.h"
#include "env.h"
#include "chan.h"

static struct kprog_grant *grants;
static uint32_t ngrants;
static size_t grants_bytes;
static uint32_t *free_slot;	/* a stack of the slots not in use */
static uint32_t nfree;
static uint64_t max_msg;	/* the module's; a longer send gets its error from KPROG_IOC_SEND */
static uint64_t sent;

uint64_t kp_rts_sent(void)
{
	return sent;
}

void kp_rts_init(const struct kprog_info *info)
{
	long page = sysconf(_SC_PAGESIZE);
	void *m;
	uint32_t i;

	if (!kp_env_bool(KP_ENV_RTS) || !(info->features & KPROG_FEAT_GRANTS) ||
	    !info->max_grants || !kp_fast_limit() || page <= 0)
		return;
	grants_bytes = (KPROG_GRANT_BYTES(info->max_grants) + (size_t)page - 1) &
		       ~((size_t)page - 1);
	free_slot = malloc(info->max_grants * sizeof(*free_slot));
	if (!free_slot)
		return;
	m = mmap(NULL, grants_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kp.fd,
		 (off_t)KPROG_GRANT_MMAP_OFFSET);
	if (m == MAP_FAILED) {
		kp_log(1, "grant table not mapped (%s): rendezvous sends through the kernel",
		       strerror(errno));
		free(free_slot);
		free_slot = NULL;
		return;
	}
	grants = m;
	ngrants = info->max_grants;
	max_msg = info->max_msg;
	for (i = 0; i < ngrants; i++)
		free_slot[i] = ngrants - 1 - i;
	nfree = ngrants;
	kp_log(2, "rendezvous sends through channels: %u grant slots", ngrants);
}

void kp_rts_fini(void)
{
	if (grants)
		munmap(grants, grants_bytes);
	free(free_slot);
	grants = NULL;
	free_slot = NULL;
	ngrants = nfree = 0;
}

int kp_rts_send(struct kp_req *r)
{
	const struct kp_quick_type *q;
	struct kprog_chan_rts *rts;
	struct kprog_grant *g;
	struct kp_dir *tx;
	uint64_t bytes;
	uint32_t idx, seq;
	int w;

	if (!nfree || r->count <= 0 || r->mode == M_BUFFERED || kp_deferred_sends())
		return 0;
	q = kp_type_quick(r->type);
	if (!q->block || q->size <= 0)
		return 0;	/* more than one range: the kernel's iovec */
	bytes = (uint64_t)q->size * (uint64_t)r->count;
	if (bytes <= kp_fast_limit() || bytes > max_msg)
		return 0;	/* a full channel declined it: the kernel buffers it */
	w = r->comm->c2w[r->peer];
	tx = kp_fast_tx(w);
	if (!tx || __atomic_load_n(&tx->h->krecv, __ATOMIC_RELAXED))
		return 0;
	rts = kp_dir_reserve(tx, sizeof(*rts), r->comm->ctx, r->tag);
	if (!rts)
		return 0;
	idx = free_slot[--nfree];
	g = &grants[idx];
	/* a new count per fill: a withdrawn fill is never taken for this one */
	seq = KPROG_GRANT_SEQ(__atomic_load_n(&g->state, __ATOMIC_RELAXED)) + 4;
	g->dst = (uint32_t)w;
	g->context = r->comm->ctx;
	g->tag = r->tag;
	g->req_id = kp_req_id(r);
	g->addr = (uintptr_t)r->buf + (uintptr_t)q->off;
	g->len = bytes;
	g->send_ns = kp.times ? kp_now_ns() : 0;	/* Late Sender for the profiler */
	__atomic_store_n(&g->state, seq | KPROG_GRANT_OPEN, __ATOMIC_RELEASE);
	((struct kprog_chan_rec *)rts - 1)->flags = KPROG_REC_RNDV;
	rts->grant = idx;
	rts->__pad = 0;
	rts->req_id = g->req_id;
	kp_dir_publish_as(tx, bytes);
	r->grant = idx + 1;
	r->post.req_id = g->req_id;
	r->state = RS_ACTIVE;
	sent++;
	kp_fast_kick(w);	/* its fence orders the record before the hint */
	if (__atomic_load_n(&tx->h->krecv, __ATOMIC_RELAXED)) {
		/* a receive went to the kernel meanwhile: give it the record */
		struct kprog_chan_drain d = { .peer = w, .flags = KPROG_DRAIN_TO };

		while (ioctl(kp.fd, KPROG_IOC_CHAN_DRAIN, &d) < 0 && errno == EINTR)
			;
	}
	return 1;
}

/* OPEN -> FREE unless the kernel took it first: true if withdrawn. */
static bool withdraw(struct kprog_grant *g)
{
	uint32_t s = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);

	return KPROG_GRANT_STATE(s) == KPROG_GRANT_OPEN &&
	       __atomic_compare_exchange_n(&g->state, &s, KPROG_GRANT_SEQ(s) | KPROG_GRANT_FREE,
					   false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/*
 * A receiver that left never drains its channel: the kernel marks it
 * closed (and sends us an event), and its records' sends fail here, as
 * the kernel fails sends it holds for a departed receiver.
 */
void kp_rts_reap(void)
{
	uint32_t i, s;

	if (nfree == ngrants)
		return;
	for (i = 0; i < ngrants; i++) {
		struct kprog_grant *g = &grants[i];
		struct kprog_cqe cqe = { .source = -1, .error = -ECONNRESET };

		s = __atomic_load_n(&g->state, __ATOMIC_ACQUIRE);
		if (KPROG_GRANT_STATE(s) != KPROG_GRANT_OPEN || !kp_fast_closed((int)g->dst))
			continue;
		cqe.req_id = g->req_id;
		cqe.tag = g->tag;
		if (withdraw(g))
			kp_handle_cqe(&cqe);
	}
}

void kp_rts_done(struct kp_req *r)
{
	free_slot[nfree++] = r->grant - 1;
	r->grant = 0;
}

int kp_rts_cancel(struct kp_req *r)
{
	struct kprog_cqe cqe = { .req_id = kp_req_id(r), .source = -1, .tag = r->tag,
				 .error = -ECANCELED, .flags = KPROG_CQE_CANCELLED };

	/* taken: the send is the kernel's now, KPROG_IOC_CANCEL decides */
	if (!withdraw(&grants[r->grant - 1]))
		return 0;
	/* its record stays in the channel; the kernel drops it (slot not OPEN) */
	kp_complete(r, &cqe);
	return 1;
}
