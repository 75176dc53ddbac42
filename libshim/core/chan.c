// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User-space side of a kprog fast-path channel: the producer's and the
 * consumers' steps of the protocol described in include/uapi/linux/kprog.h.
 */
#include <string.h>
#include "hot.h"
#include "chan.h"

void kp_dir_init(struct kp_dir *d, void *base, const struct kprog_chan_open *co, int dir)
{
	d->h = &((struct kprog_chan_hdr *)base)->dir[dir];
	d->ring = (unsigned char *)base + KPROG_CHAN_DATA_OFFSET + (size_t)dir * co->ring_bytes;
	d->mask = co->ring_bytes - 1;
	d->max_msg = co->max_msg;
	d->cons_seen = __atomic_load_n(&d->h->cons, __ATOMIC_ACQUIRE);
}

KP_HOT void *kp_dir_reserve(struct kp_dir *d, uint32_t len, uint32_t context, int32_t tag)
{
	uint64_t prod = d->h->prod;	/* only we write it */
	uint64_t size = KPROG_CHAN_REC_SIZE(len), ring = (uint64_t)d->mask + 1;
	uint64_t off = prod & d->mask, pad = 0;
	struct kprog_chan_rec *r;

	if (len > d->max_msg)
		return NULL;
	if (off + size > ring)
		pad = ring - off;	/* the record starts at the ring's start */
	if (prod + pad + size - d->cons_seen > ring) {
		d->cons_seen = __atomic_load_n(&d->h->cons, __ATOMIC_ACQUIRE);
		if (prod + pad + size - d->cons_seen > ring)
			return NULL;
	}
	if (pad) {
		r = (struct kprog_chan_rec *)(d->ring + off);
		r->flags = KPROG_REC_PAD;
		r->len = 0;
		r->state = KPROG_REC_DONE;
		/* publish the pad alone: the record follows at offset 0 */
		__atomic_store_n(&d->h->prod, prod + pad, __ATOMIC_RELEASE);
		prod += pad;
	}
	r = (struct kprog_chan_rec *)(d->ring + (prod & d->mask));
	r->state = KPROG_REC_NEW;
	r->flags = 0;
	r->len = len;
	r->context = context;
	r->tag = tag;
	r->send_stamp = 0;
	return r + 1;
}

KP_HOT void kp_dir_publish_as(struct kp_dir *d, uint64_t bytes)
{
	uint64_t prod = d->h->prod;
	struct kprog_chan_rec *r = (struct kprog_chan_rec *)(d->ring + (prod & d->mask));

	d->h->msgs++;
	d->h->bytes += bytes;
	/* header and payload before the index: pairs with consumers' acquire */
	__atomic_store_n(&d->h->prod, prod + KPROG_CHAN_REC_SIZE(r->len), __ATOMIC_RELEASE);
}

void kp_dir_publish(struct kp_dir *d)
{
	const struct kprog_chan_rec *r =
		(const struct kprog_chan_rec *)(d->ring + (d->h->prod & d->mask));

	kp_dir_publish_as(d, r->len);
}

uint64_t kp_dir_release(struct kp_dir *d)
{
	uint64_t cons, end, prod, size;
	struct kprog_chan_rec *r;
	unsigned int n;

	/*
	 * Walk over every DONE (or PAD) record from cons, then move cons past
	 * them in one compare-and-swap: a record, once DONE, stays so until
	 * cons has passed it. If the kernel moved cons meanwhile (a drain),
	 * look again from there; the rounds are bounded by the ring.
	 */
	for (n = (d->mask + 1) / KPROG_CHAN_REC_ALIGN; n; n--) {
		cons = __atomic_load_n(&d->h->cons, __ATOMIC_ACQUIRE);
		prod = kp_dir_prod(d);
		/*
		 * More than a ring apart: a drain moved cons between the two
		 * reads (look again), or the peer wrote garbage (the walk below
		 * would go round a ring of DONE records for ever).
		 */
		if (prod - cons > (uint64_t)d->mask + 1)
			continue;
		for (end = cons; end != prod; end += size) {
			r = kp_dir_rec(d, end, prod, &size);
			if (!size)
				break;
			if (!(r->flags & KPROG_REC_PAD) && kp_rec_state(r) != KPROG_REC_DONE)
				break;
		}
		if (end == cons ||
		    __atomic_compare_exchange_n(&d->h->cons, &cons, end, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return end;
	}
	return __atomic_load_n(&d->h->cons, __ATOMIC_ACQUIRE);
}

KP_HOT uint64_t kp_dir_release_taken(struct kp_dir *d, uint64_t prod)
{
	uint64_t cons = __atomic_load_n(&d->h->cons, __ATOMIC_ACQUIRE);
	uint64_t size, next;
	struct kprog_chan_rec *r;

	if (prod - cons > (uint64_t)d->mask + 1 || cons == prod)
		return kp_dir_release(d);	/* garbage, a drain meanwhile, or nothing */
	/* what the walk does for its first record, then one look further */
	r = kp_dir_rec(d, cons, prod, &size);
	if (!size || (r->flags & KPROG_REC_PAD) || kp_rec_state(r) != KPROG_REC_DONE)
		return kp_dir_release(d);
	next = cons + size;
	if (next != prod) {
		r = (struct kprog_chan_rec *)(d->ring + (next & d->mask));
		if ((__atomic_load_n(&r->flags, __ATOMIC_RELAXED) & KPROG_REC_PAD) ||
		    kp_rec_state(r) == KPROG_REC_DONE)
			return kp_dir_release(d);	/* more to pass: walk */
	}
	if (__atomic_compare_exchange_n(&d->h->cons, &cons, next, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return next;
	return kp_dir_release(d);	/* the kernel moved cons: look again */
}
