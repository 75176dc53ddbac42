/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * User-space side of a kprog fast-path channel (include/uapi/linux/kprog.h
 * has the layout and the protocol): write records as the producer, find,
 * take and release records as the consumer. No MPI, no system calls:
 * the shim and the selftests use it alike. kp_dir_rec() is inline: it
 * runs several times for every record taken.
 */
#ifndef KPROG_SHIM_CHAN_H
#define KPROG_SHIM_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/kprog.h>

/* One direction of a mapped channel as one endpoint sees it. */
struct kp_dir {
	struct kprog_chan_dir *h;	/* shared header of the direction */
	unsigned char *ring;		/* its data ring */
	uint32_t mask;			/* ring_bytes - 1 */
	uint32_t max_msg;		/* largest payload */
	/*
	 * Producer: cons as last read. cons only grows, so room computed from
	 * it is never too much; the shared cons (a line the consumer writes
	 * for every record) is read again only when the ring looks full, as
	 * vader's fast boxes do, instead of moving that line between the
	 * CPUs on every message.
	 */
	uint64_t cons_seen;
};

/* Map one direction of a channel region (base = mmap() result). */
void kp_dir_init(struct kp_dir *d, void *base, const struct kprog_chan_open *co, int dir);

/*
 * Producer: reserve room for a record of len bytes. Returns the payload
 * to fill, or NULL when the ring has no room (or len is too large).
 * kp_dir_publish() then makes it visible; nothing else may be reserved
 * in between.
 */
void *kp_dir_reserve(struct kp_dir *d, uint32_t len, uint32_t context, int32_t tag);
void kp_dir_publish(struct kp_dir *d);
/* The same for a record that stands for a message of bytes (monitoring). */
void kp_dir_publish_as(struct kp_dir *d, uint64_t bytes);

/* Bytes the producer has published. */
static inline uint64_t kp_dir_prod(const struct kp_dir *d)
{
	return __atomic_load_n(&d->h->prod, __ATOMIC_ACQUIRE);
}

/*
 * Consumer: the record at position pos (cons <= pos < prod), its size in
 * the ring, or 0 if it is malformed (then stop using the channel).
 */
static inline struct kprog_chan_rec *kp_dir_rec(const struct kp_dir *d, uint64_t pos,
						 uint64_t prod, uint64_t *size)
{
	uint64_t off = pos & d->mask, ring = (uint64_t)d->mask + 1;
	struct kprog_chan_rec *r = (struct kprog_chan_rec *)(d->ring + off);
	uint32_t flags = __atomic_load_n(&r->flags, __ATOMIC_RELAXED);
	uint32_t len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);

	if (flags & KPROG_REC_PAD)
		*size = ring - off;
	else if (len > d->max_msg)
		*size = 0;
	else
		*size = KPROG_CHAN_REC_SIZE(len);
	if (off + *size > ring || prod - pos < *size || pos % KPROG_CHAN_REC_ALIGN)
		*size = 0;
	return r;
}

/* NEW -> TAKEN; false if someone (the kernel) took it first. */
static inline bool kp_rec_take(struct kprog_chan_rec *r)
{
	uint32_t want = KPROG_REC_NEW;

	return __atomic_compare_exchange_n(&r->state, &want, KPROG_REC_TAKEN, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The payload is read: the record may be released. */
static inline void kp_rec_done(struct kprog_chan_rec *r)
{
	__atomic_store_n(&r->state, KPROG_REC_DONE, __ATOMIC_RELEASE);
}

static inline uint32_t kp_rec_state(const struct kprog_chan_rec *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}

static inline void *kp_rec_payload(struct kprog_chan_rec *r)
{
	return r + 1;
}

/*
 * The payload length of a taken record, read once: kp_dir_rec() checked
 * it, but the peer may rewrite it since; clamped, a copy of this many
 * bytes stays inside the ring whatever the peer wrote.
 */
static inline uint32_t kp_rec_len(const struct kp_dir *d, const struct kprog_chan_rec *r)
{
	uint32_t len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
	size_t left = (size_t)(d->ring + d->mask + 1 - (const unsigned char *)(r + 1));

	if (len > d->max_msg)
		len = d->max_msg;
	return len > left ? (uint32_t)left : len;
}

struct kp_w16 { uint64_t q[2]; };
struct kp_w32 { uint64_t q[4]; };

/* n bytes with sizeof(T) <= n <= 2 * sizeof(T): a move of the first and of the last sizeof(T) */
#define KP_COPY_ENDS(d, s, n, T) do {					\
	T a_, b_;							\
									\
	memcpy(&a_, (s), sizeof(T));					\
	memcpy(&b_, (s) + (n) - sizeof(T), sizeof(T));			\
	memcpy((d), &a_, sizeof(T));					\
	memcpy((d) + (n) - sizeof(T), &b_, sizeof(T));			\
} while (0)

/*
 * Payloads up to this many bytes are copied inline (kp_copy_payload()).
 * Measured in the VM with an osu_latency-like ping-pong: one byte past 64
 * (the old inline limit) cost 0.5 us per trip, i.e. the library's memcpy
 * about 250 ns per call there (its call, size dispatch and AVX code under
 * emulation; plain Open MPI pays it too). See docs/DESIGN.md.
 */
#ifndef KP_COPY_INLINE_MAX
#define KP_COPY_INLINE_MAX 512
#endif

/* One 32-byte block (two SSE moves), not turned back into a memcpy() call. */
static inline void kp_copy32(unsigned char *d, const unsigned char *s)
{
	struct kp_w32 a;

	memcpy(&a, s, sizeof(a));
	memcpy(d, &a, sizeof(a));
}

/*
 * memcpy() with no call for up to KP_COPY_INLINE_MAX bytes: up to 64 two
 * overlapping loads and stores of the largest power of two below n, above
 * that 32-byte blocks and a last one that overlaps. These are the
 * payloads message rates and halo exchanges are made of.
 */
static inline __attribute__((always_inline)) void kp_copy_payload(void *dst, const void *src,
								     size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (n > KP_COPY_INLINE_MAX) {
		memcpy(d, s, n);
	} else if (n > 64) {
		size_t i;

		for (i = 0; i + 32 < n; i += 32) {
			kp_copy32(d + i, s + i);
			/* i opaque: GCC does not turn the loop into a memcpy() call */
			__asm__("" : "+r"(i));
		}
		kp_copy32(d + n - 32, s + n - 32);
	} else if (n > 32) {
		KP_COPY_ENDS(d, s, n, struct kp_w32);
	} else if (n > 16) {
		KP_COPY_ENDS(d, s, n, struct kp_w16);
	} else if (n >= 8) {
		KP_COPY_ENDS(d, s, n, uint64_t);
	} else if (n >= 4) {
		KP_COPY_ENDS(d, s, n, uint32_t);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

/* Advance cons past DONE and PAD records; returns the new cons. */
uint64_t kp_dir_release(struct kp_dir *d);
/*
 * The same after taking one record: when cons is at a DONE record with a
 * record not taken yet (or nothing) after it, the usual case of records
 * taken in order, one compare-and-swap moves cons, with no walk. prod: a
 * value of the producer's index read since the record was published (an
 * older one only leaves DONE records after it for the next release).
 */
uint64_t kp_dir_release_taken(struct kp_dir *d, uint64_t prod);

#endif
