// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native unit tests of the fast path's MPI-free parts: the channel record
 * protocol as user space runs it (chan.c: reserve/publish, pad records at
 * the ring's end, room, taking out of order, release of cons only past
 * DONE and PAD records, a kernel-taken record, malformed records) and the
 * adaptive spin policy (spin.c), the cheap clock and the send stamps
 * (clock.c, clock.h). Last line "N passed, N failed".
 */
#define _GNU_SOURCE	/* gettid() */
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "chan.h"
#include "spin.h"
#include "cpus.h"
#include "clock.h"
#include "expect.h"

EXPECT_COUNTERS;

#define RING 4096

struct region {
	struct kprog_chan_open co;
	void *mem;
	struct kp_dir tx, rx;	/* both ends of direction 0 */
};

static void region_init(struct region *r, uint32_t max_msg)
{
	r->co = (struct kprog_chan_open){ .ring_bytes = RING, .max_msg = max_msg };
	r->mem = aligned_alloc(4096, KPROG_CHAN_DATA_OFFSET + 2 * RING);
	memset(r->mem, 0, KPROG_CHAN_DATA_OFFSET + 2 * RING);
	kp_dir_init(&r->tx, r->mem, &r->co, 0);
	kp_dir_init(&r->rx, r->mem, &r->co, 0);
}

static int put(struct region *r, uint32_t len, int tag)
{
	unsigned char *p = kp_dir_reserve(&r->tx, len, 7, tag);

	if (!p)
		return 0;
	memset(p, tag & 0xff, len);
	kp_dir_publish(&r->tx);
	return 1;
}

/* The n-th record (0-based, pads skipped) from cons; NULL if none. */
static struct kprog_chan_rec *nth(struct region *r, int n, uint64_t *pos_out)
{
	uint64_t pos = r->rx.h->cons, prod = kp_dir_prod(&r->rx), size;
	struct kprog_chan_rec *rec;

	for (; pos != prod; pos += size) {
		rec = kp_dir_rec(&r->rx, pos, prod, &size);
		if (!size)
			return NULL;
		if (rec->flags & KPROG_REC_PAD)
			continue;
		if (!n--) {
			if (pos_out)
				*pos_out = pos;
			return rec;
		}
	}
	return NULL;
}

/* The header's layout: naming a word of the padding moved nothing (the ABI) */
static void test_layout(void)
{
	EXPECT(sizeof(struct kprog_chan_dir) == 256 && sizeof(struct kprog_chan_hdr) == 512 &&
	       offsetof(struct kprog_chan_dir, cons) == 64 &&
	       offsetof(struct kprog_chan_dir, waiting) == 128 &&
	       offsetof(struct kprog_chan_dir, krecv) == 132 &&
	       offsetof(struct kprog_chan_dir, waiter_cpu) == 136 &&
	       offsetof(struct kprog_chan_dir, closed) == 192,
	       "struct kprog_chan_dir: 256 bytes, waiter_cpu in the receiver's line, closed at 192");
}

static void test_records(void)
{
	struct region r;
	struct kprog_chan_rec *rec;
	int i, n = 0;

	region_init(&r, 1024);
	EXPECT(KPROG_CHAN_REC_SIZE(0) == 64, "empty record %llu bytes",
	       (unsigned long long)KPROG_CHAN_REC_SIZE(0));
	EXPECT(KPROG_CHAN_REC_SIZE(40) == 64, "40 bytes fit one line");
	EXPECT(KPROG_CHAN_REC_SIZE(41) == 128, "41 bytes need two lines");
	EXPECT(!kp_dir_reserve(&r.tx, 1025, 0, 0), "a record above max_msg is refused");

	/* fill: 64 records of 40 bytes fill 4096 bytes exactly */
	while (put(&r, 40, n))
		n++;
	EXPECT(n == RING / 64, "%d small records fit", n);
	EXPECT(r.tx.h->msgs == (uint64_t)n && r.tx.h->bytes == (uint64_t)n * 40,
	       "producer statistics %llu msgs %llu bytes", (unsigned long long)r.tx.h->msgs,
	       (unsigned long long)r.tx.h->bytes);

	/* take the third out of order: cons does not move */
	rec = nth(&r, 2, NULL);
	EXPECT(rec && rec->tag == 2 && rec->context == 7 && rec->len == 40, "third record");
	EXPECT(kp_rec_take(rec), "NEW -> TAKEN");
	EXPECT(!kp_rec_take(rec), "a taken record cannot be taken twice");
	kp_rec_done(rec);
	EXPECT(kp_dir_release(&r.rx) == 0, "cons stays behind a NEW record");
	EXPECT(!put(&r, 40, 99), "still full");

	/* the kernel took the first one: cons waits until it is DONE */
	rec = nth(&r, 0, NULL);
	rec->state = KPROG_REC_KTAKEN;
	EXPECT(kp_dir_release(&r.rx) == 0, "cons stays behind a KTAKEN record");
	rec->state = KPROG_REC_DONE;
	EXPECT(kp_dir_release(&r.rx) == 64, "cons passes the first DONE record");
	rec = nth(&r, 0, NULL);
	EXPECT(rec && rec->tag == 1, "second record is now first");
	EXPECT(kp_rec_take(rec), "take it");
	kp_rec_done(rec);
	EXPECT(kp_dir_release(&r.rx) == 3 * 64, "cons passes both DONE records");

	/* room for 3 more; a larger record does not fit at the end: pad */
	for (i = 0; i < 3; i++)
		EXPECT(put(&r, 40, 100 + i), "refill %d", i);
	EXPECT(!put(&r, 40, 200), "full again");
	for (i = 0; i < 64; i++) {
		rec = nth(&r, 0, NULL);
		if (!rec)
			break;
		kp_rec_take(rec);
		kp_rec_done(rec);
		kp_dir_release(&r.rx);
	}
	EXPECT(r.rx.h->cons == r.tx.h->prod, "all released");
	/* prod is at 4096 + 192: a 1024-byte record from offset 192 fits */
	EXPECT(put(&r, 1000, 5), "a large record");
	EXPECT(put(&r, 1000, 6), "another");
	EXPECT(put(&r, 1000, 7), "another");
	/* offset 192 + 3 * 1024 = 3264: 1024 more do not fit before 4096 */
	EXPECT(!put(&r, 1000, 8), "no room for pad + record while the old ones stay");
	rec = nth(&r, 0, NULL);
	kp_rec_take(rec);
	kp_rec_done(rec);
	kp_dir_release(&r.rx);
	EXPECT(put(&r, 1000, 8), "pad + record at the start after room was made");
	{
		uint64_t pos;

		rec = nth(&r, 2, &pos);
		EXPECT(rec && rec->tag == 8 && (pos & (RING - 1)) == 0,
		       "the record after the pad starts the ring (tag %d)", rec ? rec->tag : -1);
	}
	/* a malformed length: the consumer sees size 0 */
	rec = nth(&r, 0, NULL);
	rec->len = 5000;
	{
		uint64_t size;

		kp_dir_rec(&r.rx, r.rx.h->cons, kp_dir_prod(&r.rx), &size);
		EXPECT(size == 0, "oversized record is malformed");
		EXPECT(kp_dir_release(&r.rx) == r.rx.h->cons, "cons does not move over it");
	}
	/*
	 * A peer's garbage prod, many rings ahead, over a ring of DONE records:
	 * the release must not walk round it for ever, nor move cons.
	 */
	{
		uint64_t cons = r.rx.h->cons, pos;

		for (pos = 0; pos < RING; pos += 64) {
			rec = (struct kprog_chan_rec *)(r.rx.ring + pos);
			rec->flags = 0;
			rec->len = 8;
			rec->state = KPROG_REC_DONE;
		}
		r.tx.h->prod = cons + 64 * RING;
		EXPECT(kp_dir_release(&r.rx) == cons, "garbage prod: cons stays, no endless walk");
	}
	free(r.mem);
}

/* Take the n-th record from cons and release as the shim does after a take. */
static uint64_t take_release(struct region *r, int n)
{
	struct kprog_chan_rec *rec = nth(r, n, NULL);

	if (!rec || !kp_rec_take(rec))
		return ~0ull;
	kp_rec_done(rec);
	return kp_dir_release_taken(&r->rx, kp_dir_prod(&r->rx));
}

/* kp_dir_release_taken(): one step in order, a walk otherwise, same result. */
static void test_release_taken(void)
{
	struct region r;
	struct kprog_chan_rec *rec;
	uint64_t size;
	int i;

	region_init(&r, 1024);
	for (i = 0; i < 4; i++)
		put(&r, 8, i);
	EXPECT(take_release(&r, 0) == 64, "in order: cons passes the record taken");
	EXPECT(take_release(&r, 1) == 64, "out of order: cons stays behind the NEW one");
	EXPECT(take_release(&r, 0) == 3 * 64, "then passes both DONE records (the walk)");
	EXPECT(take_release(&r, 0) == 4 * 64 && r.rx.h->cons == kp_dir_prod(&r.rx),
	       "the last one: cons at prod");
	EXPECT(kp_dir_release_taken(&r.rx, kp_dir_prod(&r.rx)) == 4 * 64,
	       "nothing to release: cons stays");

	/* a record the kernel holds at cons: cons waits */
	put(&r, 8, 10);
	put(&r, 8, 11);
	nth(&r, 0, NULL)->state = KPROG_REC_KTAKEN;
	EXPECT(take_release(&r, 1) == 4 * 64, "cons stays behind a KTAKEN record");
	nth(&r, 0, NULL)->state = KPROG_REC_DONE;
	EXPECT(kp_dir_release_taken(&r.rx, kp_dir_prod(&r.rx)) == 6 * 64,
	       "and passes it once DONE");

	/* a pad at the ring's end is passed with the record after it */
	while (put(&r, 1000, 20))
		;
	while ((rec = nth(&r, 0, NULL)) && rec->tag == 20) {
		uint64_t before = r.rx.h->cons;

		if (take_release(&r, 0) == before)
			break;
	}
	EXPECT(r.rx.h->cons == kp_dir_prod(&r.rx), "every large record released in order");
	EXPECT(put(&r, 1000, 21), "a record after the pad");
	EXPECT(take_release(&r, 0) == kp_dir_prod(&r.rx), "pad and record released");

	/* an old prod: the record at cons goes, DONE ones after it wait */
	put(&r, 8, 40);
	put(&r, 8, 41);
	{
		uint64_t old = r.rx.h->cons + 64;

		rec = nth(&r, 1, NULL);
		kp_rec_take(rec);
		kp_rec_done(rec);
		rec = nth(&r, 0, NULL);
		kp_rec_take(rec);
		kp_rec_done(rec);
		EXPECT(kp_dir_release_taken(&r.rx, old) == old, "an old prod: one record");
		EXPECT(kp_dir_release(&r.rx) == kp_dir_prod(&r.rx), "the next release takes the rest");
	}

	/* garbage from the peer: a wrong length stops the step, cons stays */
	put(&r, 8, 30);
	rec = nth(&r, 0, NULL);
	kp_rec_take(rec);
	kp_rec_done(rec);
	rec->len = 5000;
	size = r.rx.h->cons;
	EXPECT(kp_dir_release_taken(&r.rx, kp_dir_prod(&r.rx)) == size,
	       "a malformed record at cons is not passed");
	EXPECT(kp_rec_len(&r.rx, rec) <= 1024, "its length clamps to max_msg (%u)",
	       kp_rec_len(&r.rx, rec));
	rec->len = 1024;
	r.rx.max_msg = 4096;
	EXPECT((const unsigned char *)kp_rec_payload(rec) + kp_rec_len(&r.rx, rec) <=
	       r.rx.ring + RING, "and to the ring's end");
	free(r.mem);
}

/* kp_copy_payload(): every length up to past its inline range, any alignment, nothing outside */
static void test_copy(void)
{
	enum { LEN = KP_COPY_INLINE_MAX + 100 };
	static unsigned char src[LEN + 40], dst[LEN + 40], ref[LEN + 40];
	int bad = 0, off, i;
	size_t n;

	for (off = 0; off < 8; off++)
		for (n = 0; n <= LEN; n++) {
			for (i = 0; i < LEN + 40; i++) {
				src[i] = (unsigned char)(i * 7 + n + off);
				dst[i] = ref[i] = 0xa5;
			}
			kp_copy_payload(dst + off, src + 3, n);
			memcpy(ref + off, src + 3, n);
			bad += memcmp(dst, ref, sizeof(dst)) != 0;
		}
	EXPECT(!bad, "inline copy equals memcpy for 0..%d bytes at 8 alignments (%d differ)", LEN, bad);
}

static void test_spin(void)
{
	struct kp_spin s;

	kp_spin_init(&s, 20, 1, 1000, 50);
	EXPECT(s.fixed && s.limit_ns == 20000, "KPROG_SPIN_US fixes the limit");
	kp_spin_record(&s, 5000000, true);
	EXPECT(s.limit_ns == 20000, "a fixed limit does not adapt");

	kp_spin_init(&s, -1, 1, 1000, 50);
	EXPECT(!s.fixed && s.limit_ns == 50000 && s.min_ns == 1000 && s.max_ns == 1000000,
	       "adaptive: start 50 us in [1 us, 1 ms]");
	kp_spin_record(&s, 10000, false);
	EXPECT(s.limit_ns == 50000, "a short covered stretch keeps the limit");
	kp_spin_record(&s, 40000, false);
	EXPECT(s.limit_ns == 80000, "a covered stretch of t lifts the limit to 2t");
	kp_spin_record(&s, 300000, true);
	EXPECT(s.limit_ns == 600000, "a slept stretch within the maximum: 2t (%llu)",
	       (unsigned long long)s.limit_ns);
	kp_spin_record(&s, 900000, true);
	EXPECT(s.limit_ns == 1000000, "clamped to the maximum");
	kp_spin_record(&s, 50000000, true);
	EXPECT(s.limit_ns == 500000, "a long stretch halves it");
	for (int i = 0; i < 20; i++)
		kp_spin_record(&s, 50000000, true);
	EXPECT(s.limit_ns == 1000, "long stretches bring it to the minimum");
	EXPECT(s.waits == 25 && s.slept == 23, "statistics %llu %llu",
	       (unsigned long long)s.waits, (unsigned long long)s.slept);
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	EXPECT(s.fixed && s.dedicated && s.limit_ns == 5000000,
	       "a dedicated CPU spins the dedicated time");
	kp_spin_record(&s, 50000000, true);
	EXPECT(s.limit_ns == 5000000, "and long waits do not shrink it");
	kp_spin_init(&s, 20, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	EXPECT(!s.dedicated && s.limit_ns == 20000, "KPROG_SPIN_US wins over dedication");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, -1);
	EXPECT(!s.fixed && s.limit_ns == 50000, "a negative dedicated time keeps adapting");
	kp_spin_init(&s, -1, 10, 5, 50);
	EXPECT(s.min_ns == 10000 && s.max_ns == 10000 && s.limit_ns == 10000,
	       "max below min and start outside are clamped");

	/* oversubscribed: short and yielding */
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_oversub(&s, 5, 8);
	EXPECT(s.oversub && s.yield && s.fixed && s.limit_ns == 5000,
	       "oversubscribed: a fixed 5 us spin that yields");
	kp_spin_record(&s, 300000, true);
	EXPECT(s.limit_ns == 5000, "a short slept wait does not grow it (the sleep let the partner run)");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_oversub(&s, -1, 8);
	EXPECT(s.oversub && s.yield && !s.fixed && s.limit_ns == 50000,
	       "KPROG_SPIN_OVERSUB_US=-1: adaptive, still yielding");
	kp_spin_init(&s, 20, 1, 1000, 50);
	kp_spin_oversub(&s, 5, 8);
	EXPECT(!s.oversub && !s.yield && s.limit_ns == 20000, "KPROG_SPIN_US wins over oversubscription");

	/* a yield that lost the CPU for a time slice: no yields for a while, a short spin */
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_oversub(&s, -1, 8);
	EXPECT(kp_spin_may_yield(&s, 1000000) && kp_spin_limit(&s, 1000000) == 50000,
	       "oversubscribed: yields, the adaptive limit");
	kp_spin_yielded(&s, 1000000, 1000000 + 30000, UINT64_MAX, -1);
	EXPECT(s.yields == 1 && !s.yields_lost && kp_spin_may_yield(&s, 1040000),
	       "a 30 us yield (a partner's turn) keeps the yields");
	kp_spin_yielded(&s, 1500000, 1500000 + 4000000, 20000, 10);
	EXPECT(!s.yields_lost && kp_spin_may_yield(&s, 5600000),
	       "a 4 ms yield with 20 us of run delay (the host took the vCPU) keeps the yields");
	kp_spin_yielded(&s, 1800000, 1800000 + 4000000, 3900000, 8);
	EXPECT(!s.yields_lost && s.yields_own == 1 && kp_spin_may_yield(&s, 5900000),
	       "a 4 ms yield with 8 tasks runnable for 8 ranks (one of ours computed) keeps the yields");
	kp_spin_yielded(&s, 2000000, 2000000 + 4000000, 3900000, 10);
	EXPECT(s.yields_lost == 1 && !kp_spin_may_yield(&s, 6100000) &&
	       kp_spin_limit(&s, 6100000) == KP_SPIN_NOYIELD_SPIN_NS,
	       "a 4 ms yield (a computing task's slice): no yields, a %llu ns spin",
	       (unsigned long long)kp_spin_limit(&s, 6100000));
	EXPECT(kp_spin_may_yield(&s, 6000000 + KP_SPIN_NOYIELD_NS) &&
	       kp_spin_limit(&s, 6000000 + KP_SPIN_NOYIELD_NS) == 50000,
	       "after KP_SPIN_NOYIELD_NS it yields again");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	s.noyield_until = UINT64_MAX;
	EXPECT(!kp_spin_may_yield(&s, 0) && kp_spin_limit(&s, 0) == 5000000,
	       "dedicated: the rule does not touch the dedicated spin");

	/* the yield after a blocking send: oversubscribed, yields not off (modes: KP_SPIN_SEND_YIELD) */
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_oversub(&s, -1, 8);
	EXPECT(!kp_spin_hands_over(&s, 1000000, 0, true, 2, 2) &&
	       kp_spin_hands_over(&s, 1000000, 1, false, 0, 0) &&
	       kp_spin_hands_over(&s, 1000000, 2, true, 0, 0) &&
	       !kp_spin_hands_over(&s, 1000000, 2, false, 2, 2),
	       "oversubscribed: 0 never yields, 1 after every send, 2 only after a kick");
	EXPECT(kp_spin_hands_over(&s, 1000000, 3, false, 2, 2) &&
	       kp_spin_hands_over(&s, 1000000, 3, true, 1, 1),
	       "3: the receiver waits on this CPU: the send yields (kicked or not)");
	EXPECT(!kp_spin_hands_over(&s, 1000000, 3, true, 1, 2) &&
	       !kp_spin_hands_over(&s, 1000000, 3, false, 2, 1),
	       "3: the receiver waits on another CPU: no yield");
	EXPECT(!kp_spin_hands_over(&s, 1000000, 3, true, 0, 1) &&
	       !kp_spin_hands_over(&s, 1000000, 3, true, 0, 0) &&
	       !kp_spin_hands_over(&s, 1000000, 3, true, 2, 0),
	       "3: the receiver does not wait (0), or our CPU is unknown: no yield");
	s.noyield_until = 2000000;
	EXPECT(!kp_spin_hands_over(&s, 1000000, 1, true, 0, 0) &&
	       !kp_spin_hands_over(&s, 1000000, 3, true, 2, 2) &&
	       kp_spin_hands_over(&s, 2000000, 1, true, 0, 0) &&
	       kp_spin_hands_over(&s, 2000000, 3, true, 2, 2),
	       "not while the yields are off after a lost one, again after");
	/* the lost-yield rule itself turns the same-CPU hand-over off */
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_oversub(&s, -1, 8);
	kp_spin_yielded(&s, 3000000, 3000000 + 4000000, 3900000, 10);
	EXPECT(s.yields_lost == 1 && !kp_spin_hands_over(&s, 7100000, 3, false, 2, 2) &&
	       kp_spin_hands_over(&s, 7000000 + KP_SPIN_NOYIELD_NS, 3, false, 2, 2),
	       "3: a yield lost to another job's task stops it for KP_SPIN_NOYIELD_NS");
	kp_spin_yielded(&s, 7000000 + KP_SPIN_NOYIELD_NS, 11000000 + KP_SPIN_NOYIELD_NS, 3900000, 8);
	EXPECT(s.yields_lost == 1 && kp_spin_hands_over(&s, 11100000 + KP_SPIN_NOYIELD_NS, 3, false, 2, 2),
	       "3: a long yield to one of our own ranks does not");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	kp_spin_watch_start(&s, 5, 1000000000ull, 0);
	kp_spin_watch(&s, 1100000000ull, 50000000);
	EXPECT(s.crowded && s.yield && !kp_spin_hands_over(&s, 1100000000ull, 1, true, 2, 2) &&
	       !kp_spin_hands_over(&s, 1100000000ull, 3, true, 2, 2),
	       "crowded by another job: no yield after a send");
	kp_spin_init(&s, -1, 1, 1000, 50);
	EXPECT(!kp_spin_hands_over(&s, 0, 1, true, 2, 2) && !kp_spin_hands_over(&s, 0, 3, true, 2, 2),
	       "neither oversubscribed nor crowded: none");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	EXPECT(!kp_spin_hands_over(&s, 0, 3, true, 2, 2), "dedicated: none");
	{
		uint32_t here = kp_cpu_here();
		cpu_set_t set;

		CPU_ZERO(&set);
		EXPECT(sched_getaffinity(0, sizeof(set), &set) == 0 && here >= 1 &&
		       CPU_ISSET(here - 1, &set),
		       "kp_cpu_here(): a CPU we may run on, + 1 (%u)", here);
	}

	/* a dedicated node that another job crowds, and that clears again */
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	kp_spin_watch_start(&s, 5, 1000000000ull, 7000);
	EXPECT(s.watch_next == 1000000000ull + KP_SPIN_WATCH_NS, "the first look is one interval on");
	kp_spin_watch(&s, 1100000000ull, 7000 + 1000000);	/* 1% of 100 ms */
	EXPECT(!s.crowded && !s.yield && s.limit_ns == 5000000, "1%% run delay: still dedicated");
	kp_spin_watch(&s, 1200000000ull, 7000 + 1000000 + 30000000);	/* 30% */
	EXPECT(s.crowded && s.yield && s.limit_ns == 5000 && s.crowded_times == 1,
	       "30%% run delay: crowded, the oversubscribed spin");
	kp_spin_watch(&s, 1300000000ull, 7000 + 31000000 + 5000000);	/* 5% */
	EXPECT(s.crowded, "5%% keeps it crowded (hysteresis)");
	kp_spin_yielded(&s, 1300000000ull, 1304000000ull, 3900000, 2);
	EXPECT(s.yields_lost == 1 && !kp_spin_may_yield(&s, 1305000000ull),
	       "crowded (another job's tasks by definition): a long yield is lost whatever the run queue");
	s.noyield_until = 0;
	kp_spin_watch(&s, 1400000000ull, 7000 + 36000000 + 1000000);	/* 1% */
	EXPECT(!s.crowded && !s.yield && s.fixed && s.limit_ns == 5000000,
	       "below 2%%: dedicated again");
	kp_spin_watch(&s, 1500000000ull, UINT64_MAX);
	EXPECT(!s.crowded && s.watch_next == 1500000000ull + KP_SPIN_WATCH_NS,
	       "an unknown run delay changes nothing");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_dedicate(&s, 5000);
	kp_spin_watch_start(&s, -1, 1000000000ull, 0);
	kp_spin_watch(&s, 1100000000ull, 50000000);
	EXPECT(s.crowded && !s.fixed && s.limit_ns == 50000 && s.max_ns == 1000000,
	       "crowded with an adaptive oversubscribed spin: the adaptive bounds");
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_watch_start(&s, 5, 1000000000ull, 0);
	EXPECT(!s.watch_next, "no watch without a dedicated spin");

	/* past the shared limit while no task waits for a CPU (progress.c cpus_free()) */
	kp_spin_init(&s, -1, 1, 1000, 50);
	kp_spin_oversub(&s, -1, 8);
	kp_spin_when_free(&s, 5000);
	EXPECT(s.alone_ns == 5000000 && s.limit_ns == 50000,
	       "spin on for the dedicated time, the shared limit unchanged");
	kp_spin_when_free(&s, -1);
	EXPECT(!s.alone_ns, "KPROG_SPIN_DEDICATED_US=-1: never past the limit");
}

static void test_cpu_queue(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int q;

	EXPECT(kp_cpu_queue_open(0), "/proc/loadavg can be read");
	q = kp_cpu_queue();
	EXPECT(q != INT32_MIN && q >= 1 - online,
	       "the reader itself runs: runnable - online CPUs = %d, online %ld", q, online);
	EXPECT(kp_cpu_runnable() >= 1, "the reader is among the runnable tasks");
	kp_cpu_queue_close();
	EXPECT(kp_cpu_queue() == INT32_MIN, "closed: unknown");
	/* one usable CPU (taskset -c 0, a quota of one CPU): the reader fills it */
	EXPECT(kp_cpu_queue_open(1), "/proc/loadavg can be read, one CPU usable");
	q = kp_cpu_queue();
	EXPECT(q != INT32_MIN && q >= 0, "one usable CPU: the reader alone leaves none free (%d)", q);
	kp_cpu_queue_close();
	EXPECT(kp_cpu_usable(2, 1) == 1 && kp_cpu_usable(2, 0) == 2 && kp_cpu_usable(2, 4) == 2 &&
	       kp_cpu_usable(8, 3) == 3 && kp_cpu_usable(0, 1) == 0 && kp_cpu_usable(4, -1) == 4,
	       "the CPUs counted against: the usable ones, at most those online");
}

/* The diagnostic list of runnable threads (KPROG_VERBOSE=2 at a lost yield) */
static void test_runnable_names(void)
{
	char buf[4096], me[64], tiny[8];
	int n;

	/* this thread runs while it reads, so it is among them */
	n = kp_cpu_runnable_names(buf, sizeof(buf));
	snprintf(me, sizeof(me), " %d/%d(", (int)getpid(), (int)gettid());
	EXPECT(n >= 1 && strstr(buf, me), "the caller %s is listed among %d: %.200s", me, n, buf);
	n = kp_cpu_runnable_names(tiny, sizeof(tiny));
	EXPECT(n >= 1 && strlen(tiny) < sizeof(tiny), "a short buffer is cut, still terminated: \"%s\"",
	       tiny);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* cgroup v2 quota: the smallest cpu.max over the cgroup and its ancestors */
static void test_cgroup(void)
{
	char dir[] = "/tmp/kprog-test-cgroup-XXXXXX", p[512], cg[600];

	if (!mkdtemp(dir)) {
		EXPECT(0, "mkdtemp");
		return;
	}
	snprintf(p, sizeof(p), "%s/a", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/a/b", dir);
	mkdir(p, 0700);
	put_file(dir, "cg", "1:cpu:/\n0::/a/b\n");
	put_file(dir, "a/b/cpu.max", "max 100000\n");
	put_file(dir, "a/cpu.max", "250000 100000\n");
	snprintf(cg, sizeof(cg), "%s/cg", dir);
	EXPECT(kp_cgroup_cpus_at(cg, dir) == 2, "2.5 CPUs of quota in the parent: 2 (%d)",
	       kp_cgroup_cpus_at(cg, dir));
	put_file(dir, "a/cpu.max", "150000 100000\n");
	EXPECT(kp_cgroup_cpus_at(cg, dir) == 1,
	       "1.5 CPUs: 1, two spinning ranks would be throttled (%d)", kp_cgroup_cpus_at(cg, dir));
	put_file(dir, "a/cpu.max", "200000 100000\n");
	EXPECT(kp_cgroup_cpus_at(cg, dir) == 2, "exactly 2 CPUs: 2 (%d)", kp_cgroup_cpus_at(cg, dir));
	put_file(dir, "a/cpu.max", "250000 100000\n");
	put_file(dir, "a/b/cpu.max", "50000 100000\n");
	EXPECT(kp_cgroup_cpus_at(cg, dir) == 1, "the smaller quota of the two, half a CPU: 1");
	put_file(dir, "a/b/cpu.max", "max 100000\n");
	put_file(dir, "a/cpu.max", "max 100000\n");
	EXPECT(kp_cgroup_cpus_at(cg, dir) == 0, "no quota anywhere: 0");
	put_file(dir, "cg", "1:cpu:/\n");
	EXPECT(kp_cgroup_cpus_at(cg, dir) == 0, "no cgroup v2: 0");
	snprintf(p, sizeof(p), "%s/nothing", dir);
	EXPECT(kp_cgroup_cpus_at(p, dir) == 0, "no /proc/self/cgroup: 0");
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	EXPECT(system(p) == 0, "clean up");
	EXPECT(kp_run_delay_open() == (access("/proc/thread-self/schedstat", R_OK) == 0),
	       "the run delay is known where schedstat is");
	kp_run_delay_close();
}

static const char *clocksource_file(const char *name)
{
	static char path[] = "/tmp/kprog-test-clocksource-XXXXXX";
	int fd;

	strcpy(path, "/tmp/kprog-test-clocksource-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, name, strlen(name)) != (ssize_t)strlen(name)) {
		perror("clocksource file");
		exit(1);
	}
	close(fd);
	return path;
}

/* A tick interval against CLOCK_MONOTONIC: the best of a few tries within 1%. */
static bool ticks_agree(void)
{
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = kp_ticks(), n0 = kp_now_ns(), t1, n1;
		double r;

		while (kp_now_ns() - n0 < 20000000)
			;
		t1 = kp_ticks();
		n1 = kp_now_ns();
		r = (double)kp_ticks_ns(t1 - t0) / (double)(n1 - n0);
		if (r > 0.99 && r < 1.01)
			return true;
		printf("# try %d: %.4f\n", i, r);
	}
	return false;
}

static void test_clock(void)
{
	const char *p;
	uint64_t a, b, post, now;

	p = clocksource_file("hpet\n");
	kp_clock_init(p);
	unlink(p);
	EXPECT(!kp_clk.tsc && kp_clk.mult == 1ull << 32,
	       "another clocksource: ticks are CLOCK_MONOTONIC ns");
	a = kp_now_ns();
	b = kp_ticks();
	EXPECT(b >= a && b - a < 1000000000ull, "and read it (%llu, %llu)",
	       (unsigned long long)a, (unsigned long long)b);
	EXPECT(ticks_agree(), "1 tick is 1 ns");
	kp_clock_init("/nonexistent/clocksource");
	EXPECT(!kp_clk.tsc, "no clocksource file: CLOCK_MONOTONIC");
#if defined(__x86_64__) || defined(__i386__)
	p = clocksource_file("tsc\n");
	kp_clock_init(p);
	unlink(p);
	EXPECT(kp_clk.tsc && kp_clk.mult, "the kernel keeps time with the TSC: so do we");
	EXPECT(ticks_agree(), "calibrated TSC ticks measure CLOCK_MONOTONIC within 1%%");
	a = kp_ticks();
	b = kp_ticks_to_mono(a);
	now = kp_now_ns();
	EXPECT(b <= now && now - b < 10000000, "an earlier tick in CLOCK_MONOTONIC");
#endif

	/* send stamps (the profiler's exact Late Sender of fast-path messages) */
	kp_clk.mult = 1ull << 32;	/* 1 ns per tick: exact arithmetic below */
	EXPECT(kp_stamp(0) == 1 && kp_stamp(1023) == 1 && kp_stamp(5 << 10) == 5,
	       "stamps are ticks / 1024, never 0");
	EXPECT(kp_stamp_late_ns(0, 100, 200) == -1, "no stamp: -1");
	post = 1000 << 10;
	now = post + 1000000;
	EXPECT(kp_stamp_late_ns(kp_stamp(post + (7 << 10) + 5), post, now) == 7 << 10,
	       "sent 7 x 1024 ticks after the receive started: late by that (to 1024)");
	EXPECT(kp_stamp_late_ns(kp_stamp(post - 4096), post, now) == 0,
	       "sent before the receive: not late");
	post = (1ull << 42) - (50 << 10);	/* the stamp wraps in between */
	now = (1ull << 42) + (100 << 10);
	EXPECT(kp_stamp_late_ns(kp_stamp((1ull << 42) + (10 << 10)), post, now) == 60 << 10,
	       "across the stamp's wrap");
	post = (3ull << 42) + 12345;
	now = post + (200ull << 20);
	EXPECT(kp_stamp_late_ns(kp_stamp(post + (100ull << 20)), post, now) ==
	       (int64_t)(((post + (100ull << 20)) & ~1023ull) - post),
	       "an unaligned start, far from 0: the send time rounded down to 1024 ticks");
	kp_clk.mult = 3ull << 31;	/* 1.5 ns per tick */
	post = 1 << 20;
	EXPECT(kp_stamp_late_ns(kp_stamp(post + (2 << 10)), post, post + (4 << 10)) == 3 << 10,
	       "scaled to ns");
}

int main(void)
{
	test_layout();
	test_records();
	test_release_taken();
	test_copy();
	test_spin();
	test_cgroup();
	test_cpu_queue();
	test_runnable_names();
	test_clock();
	return EXPECT_SUMMARY();
}
