// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The small-message fast path (seed 004's "send immediate" / "receive
 * immediate"): messages up to the channel limit go between two processes
 * of the node through a kprog channel (chan.c, include/uapi/linux/kprog.h)
 * with no system call, and are matched here, in user space.
 *
 * Matching stays MPI's because of three rules (docs/DESIGN.md has the
 * reasoning):
 *  1. Order per sender. A channel is a FIFO per sender; a message of the
 *     same sender that goes through the kernel makes the kernel drain the
 *     channel first. So every message the kernel holds of a sender is
 *     older than every record still in its channel: a record is taken
 *     here only while the kernel holds nothing of that sender (src.held)
 *     and no older record is being drained (KPROG_REC_KTAKEN).
 *  2. Order of posted receives. Receives posted here (user-posted, only
 *     small ones) are always younger than every receive in the kernel:
 *     before a receive goes to the kernel, all user-posted ones go first,
 *     in order. A record that a receive in the kernel could take is
 *     drained into the kernel (KPROG_IOC_CHAN_DRAIN), not matched here.
 *  3. Anything unclear goes to the kernel, which sees both paths: when the
 *     kernel holds messages a user-posted receive could want (an arrival
 *     event with unexp > 0), the user-posted receives move to the kernel.
 * Large messages, synchronous sends and whatever the fast path declines
 * use the kernel path exactly as before.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include "hot.h"
#include "shim.h"
#include "dtype.h"
#include "chan.h"
#include "cpus.h"

enum { PEER_UNKNOWN, PEER_NONE, PEER_MAPPED };

struct kp_peer {
	uint8_t state;		/* PEER_* */
	bool broken;		/* a malformed record: no more matching here */
	struct kp_dir tx, rx;
	void *map;
	size_t map_bytes;
	uint64_t scan;		/* rx records below this were matched against */
	uint64_t seen_prod;	/* rx prod at the last poll */
	/*
	 * rx prod as the last look at the records read it: releasing a record
	 * just taken needs a recent value, not the newest, and reading the
	 * line the sender writes for every record once less per message saves
	 * a transfer of it between the CPUs.
	 */
	uint64_t prod_hint;
	/*
	 * tx cons when a send last waited KPROG_FULL_WAIT_US in vain for room:
	 * while it has not moved the receiver is not taking records, and the
	 * next send goes through the kernel at once.
	 */
	uint64_t full_cons;
};

static struct kp_peer *peers;		/* by world rank */
static int *active;			/* world ranks of mapped peers */
static int nactive, rr;			/* rr: round robin for ANY_SOURCE */
static uint32_t seen_chan_gen, seen_events;
static struct kp_req *uhead, *utail;	/* user-posted receives, in order */
static bool fast_on;
static const struct kp_fast_upcalls *fast_up;	/* kp_fast_init()'s */
static uint32_t fast_limit;
static struct kprog_src *src_state;	/* kernel-written, per rank */
static struct kp_fast_stats fstats;
static bool want_narrow;		/* kp_fast_want(): kick only from want[] */
static uint8_t *want;			/* by world rank */

bool kp_fast_active(void)
{
	return fast_on;
}

const struct kp_fast_stats *kp_fast_stats(void)
{
	return &fstats;
}

uint32_t kp_fast_limit(void)
{
	return fast_on ? fast_limit : 0;
}

/*
 * The module's fast_limit is the most a channel takes; a job may lower it
 * (KPROG_FAST_LIMIT): ranks that disagree stay correct, since a message a
 * receive posted in the kernel wants is drained into the kernel first.
 */
void kp_fast_init(const struct kprog_info *info, long limit, const struct kp_fast_upcalls *up)
{
	fast_up = up;
	fast_on = false;
	if (!(info->features & KPROG_FEAT_FASTPATH) || !info->fast_limit || !limit ||
	    !kp.ring->src_offset || kp.ring->nr_src != (uint32_t)kp.world_size)
		return;
	peers = calloc(kp.world_size, sizeof(*peers));
	active = calloc(kp.world_size, sizeof(*active));
	if (!peers || !active) {
		free(peers);
		free(active);
		peers = NULL;
		active = NULL;
		return;
	}
	src_state = (struct kprog_src *)((char *)kp.ring + kp.ring->src_offset);
	fast_limit = info->fast_limit;
	if (limit > 0 && (unsigned long)limit < fast_limit)
		fast_limit = (uint32_t)limit;
	seen_events = __atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE);
	fast_on = true;
}

void kp_fast_fini(void)
{
	int i;

	if (!peers)
		return;
	for (i = 0; i < nactive; i++)
		munmap(peers[active[i]].map, peers[active[i]].map_bytes);
	free(peers);
	free(active);
	free(want);
	peers = NULL;
	active = NULL;
	want = NULL;
	want_narrow = false;
	nactive = 0;
	fast_on = false;
}

/* ---- channels ---- */

/*
 * The krecv hint in every channel (kprog.h): set before a receive goes to
 * the kernel (that post drains after it, so a rendezvous record written
 * before a sender saw the hint is found), cleared once none is there.
 */
static bool krecv_on;

static void krecv_publish(int w)
{
	__atomic_store_n(&peers[w].rx.h->krecv, krecv_on, __ATOMIC_RELAXED);
}

static bool peer_map(int w)
{
	struct kp_peer *p = &peers[w];
	struct kprog_chan_open co = { .peer = (uint32_t)w };
	void *m;

	if (p->state != PEER_UNKNOWN)
		return p->state == PEER_MAPPED;
	if (w == kp.world_rank || !kp.local[w] || ioctl(kp.fd, KPROG_IOC_CHAN_OPEN, &co) < 0) {
		/* ENOTCONN (not joined yet): ask again later */
		if (w == kp.world_rank || !kp.local[w] || errno != ENOTCONN)
			p->state = PEER_NONE;
		return false;
	}
	m = mmap(NULL, co.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kp.fd, (off_t)co.offset);
	if (m == MAP_FAILED) {
		p->state = PEER_NONE;
		return false;
	}
	p->map = m;
	p->map_bytes = co.bytes;
	kp_dir_init(&p->tx, m, &co, (int)co.tx);
	kp_dir_init(&p->rx, m, &co, 1 - (int)co.tx);
	p->scan = __atomic_load_n(&p->rx.h->cons, __ATOMIC_ACQUIRE);
	p->full_cons = UINT64_MAX;
	p->state = PEER_MAPPED;
	active[nactive++] = w;
	krecv_publish(w);
	kp_log(2, "fast path with rank %d: %u-byte rings, messages up to %u bytes", w,
	       co.ring_bytes, co.max_msg);
	return true;
}

/* Map the channels peers opened to us since we last looked. */
static void map_new(void)
{
	uint32_t gen = __atomic_load_n(&kp.ring->chan_gen, __ATOMIC_ACQUIRE);
	int w;

	if (gen == seen_chan_gen)
		return;
	seen_chan_gen = gen;
	for (w = 0; w < kp.world_size; w++)
		if (peers[w].state == PEER_UNKNOWN &&
		    (__atomic_load_n(&src_state[w].flags, __ATOMIC_ACQUIRE) & KPROG_SRC_CHAN))
			peer_map(w);
}

static uint32_t held(int w)
{
	return __atomic_load_n(&src_state[w].held, __ATOMIC_ACQUIRE);
}

static void chan_drain(int w)
{
	struct kprog_chan_drain d = { .peer = w };

	fstats.drains++;
	while (ioctl(kp.fd, KPROG_IOC_CHAN_DRAIN, &d) < 0 && errno == EINTR)
		;
}

/* ---- payload <-> buffer ---- */

KP_HOT static size_t pack_into(void *dst, const void *buf, int count, MPI_Datatype type,
			       const struct kp_layout *l, size_t bytes)
{
	if (!bytes)
		return 0;
	if (l->flat && l->nseg == 1 && (count == 1 || l->segs[0].len == l->extent))
		kp_copy_payload(dst, (const char *)buf + l->segs[0].off, bytes);
	else if (l->flat)
		kp_gather(l, buf, count, dst, bytes);
	else
		kp_pack(l, buf, count, type, dst);
	return bytes;
}

/* Copy a payload into a receive buffer; returns the MPI error code. */
KP_HOT static int unpack_from(const void *src, size_t len, void *buf, int count, MPI_Datatype type,
			      size_t *got)
{
	const struct kp_quick_type *q;
	struct kp_layout *l;
	size_t cap, n;

	*got = 0;
	if (!len)
		return MPI_SUCCESS;
	if (count == 0)
		return MPI_ERR_TRUNCATE;
	q = kp_type_quick(type);
	if (q->block) {
		cap = (size_t)q->size * (size_t)count;
		n = len < cap ? len : cap;
		kp_copy_payload((char *)buf + q->off, src, n);
		*got = n;
		return len > cap ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
	}
	l = kp_layout_get(type);
	cap = (size_t)l->size * (size_t)count;
	n = len < cap ? len : cap;
	if (n) {
		if (l->flat && l->nseg == 1 && (count == 1 || l->segs[0].len == l->extent))
			kp_copy_payload((char *)buf + l->segs[0].off, src, n);
		else if (l->flat)
			kp_scatter(l, buf, count, src, n);
		else
			kp_unpack(l, src, n, buf, type);
	}
	kp_layout_put(l);
	*got = n;
	return len > cap ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

static void status_fill(MPI_Status *st, struct kp_comm *c, int w, int tag, size_t got, int err)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = c->w2c[w];
	st->MPI_TAG = tag;
	st->_cancelled = 0;
	st->_ucount = got;
	st->MPI_ERROR = err;
}

/* ---- the wait-state profiler's exact Late Sender of fast-path messages ---- */

static uint32_t took_stamp;	/* send stamp of the record take_rec() took last */
uint64_t kp_fast_spin_t0;	/* ticks when kp_fast_recv_spin() last began */

/* ---- sends ---- */

KP_HOT int kp_fast_send(struct kp_comm *c, const void *buf, int count, MPI_Datatype type, int dest,
			int tag, int mode)
{
	struct kp_layout *l;
	struct kp_peer *p;
	size_t bytes;
	void *pl;
	int w;

	if (!fast_on || mode == M_SYNC || dest == MPI_PROC_NULL || kp_deferred_sends())
		return 0;
	w = c->c2w[dest];
	p = &peers[w];
	if (p->state != PEER_MAPPED && !peer_map(w))
		return 0;
	if (__atomic_load_n(&p->tx.h->closed, __ATOMIC_RELAXED))
		return 0;
	if (count == 0) {
		bytes = 0;
		l = NULL;
	} else {
		l = kp_layout_get(type);
		bytes = (size_t)l->size * (size_t)count;
	}
	if (bytes > fast_limit || bytes > p->tx.max_msg) {
		kp_layout_put(l);
		return 0;
	}
	pl = kp_dir_reserve(&p->tx, (uint32_t)bytes, c->ctx, tag);
	if (!pl && kp.full_wait_ns > 0 && p->tx.cons_seen != p->full_cons) {
		/*
		 * Full: a receiver that is taking records makes room within
		 * microseconds; one that computes does not, and then the kernel
		 * path buffers the message instead (after draining the channel).
		 */
		uint64_t t0 = kp_clock_ns();

		fstats.full++;
		unsigned int n = 0;

		do {
			fast_up->progress();
			pl = kp_dir_reserve(&p->tx, (uint32_t)bytes, c->ctx, tag);
		} while (!pl && ((++n & 15) || kp_clock_ns() - t0 < (uint64_t)kp.full_wait_ns));
	}
	if (!pl) {
		p->full_cons = p->tx.cons_seen;
		fstats.full_fallback++;
		kp_layout_put(l);
		return 0;
	}
	/*
	 * The receiver's exact Late Sender (kp_stamp_late_ns()): the send's
	 * start, stamped while the header's line is still ours (after the
	 * payload, the stamp cost 110 ns per 1 KiB message in the VM).
	 */
	if (kp_wp_stamp)
		((struct kprog_chan_rec *)pl - 1)->send_stamp = kp_stamp(kp_ticks());
	if (bytes)
		pack_into(pl, buf, count, type, l, bytes);
	kp_layout_put(l);
	kp_dir_publish(&p->tx);
	fstats.sent++;
	kp_fast_kick(w);
	return 1;
}

KP_HOT void kp_fast_kick(int w)
{
	struct kp_peer *p = &peers[w];

	/* The record before the flag: pairs with the receiver's fence. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* One kick per sleep: the first sender to see the flag takes it. */
	if (__atomic_load_n(&p->tx.h->waiting, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&p->tx.h->waiting, 0, __ATOMIC_ACQ_REL)) {
		uint32_t r = (uint32_t)w;

		fstats.kicks++;
		ioctl(kp.fd, KPROG_IOC_KICK, &r);
	}
}

uint32_t kp_fast_waiter_of(const struct kp_comm *c, int dest)
{
	/* a send to dest went through its channel: mapped */
	return __atomic_load_n(&peers[c->c2w[dest]].tx.h->waiter_cpu, __ATOMIC_RELAXED);
}

bool kp_fast_closed(int w)
{
	return peers[w].state == PEER_MAPPED &&
	       __atomic_load_n(&peers[w].tx.h->closed, __ATOMIC_ACQUIRE);
}

struct kp_dir *kp_fast_tx(int w)
{
	struct kp_peer *p;

	if (!fast_on || w == kp.world_rank)
		return NULL;
	p = &peers[w];
	if (p->state != PEER_MAPPED && !peer_map(w))
		return NULL;
	if (__atomic_load_n(&p->tx.h->closed, __ATOMIC_RELAXED))
		return NULL;
	return &p->tx;
}


void kp_fast_krecv(bool on)
{
	int i;

	if (!fast_on || on == krecv_on)
		return;
	krecv_on = on;
	for (i = 0; i < nactive; i++)
		krecv_publish(active[i]);
	/* The hint before the post's drain: pairs with the sender's fence. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- the kernel's receives, and moving ours there ---- */

/* Would a receive in the kernel take a message (ctx, w, tag)? */
static bool kernel_wants(uint32_t ctx, int w, int tag)
{
	const struct kp_req *r;

	for (r = kp_kernel_recvs(); r; r = r->knext) {
		const struct kprog_post *po = &r->post;

		if (r->mrecv || po->context != ctx)
			continue;
		if ((po->peer == KPROG_ANY_SOURCE || po->peer == w) &&
		    (po->tag == KPROG_ANY_TAG || po->tag == tag))
			return true;
	}
	return false;
}

static void upost_unlink(struct kp_req *r)
{
	if (r->uprev)
		r->uprev->unext = r->unext;
	else
		uhead = r->unext;
	if (r->unext)
		r->unext->uprev = r->uprev;
	else
		utail = r->uprev;
	r->unext = r->uprev = NULL;
	r->upost = false;
}

/* Move one user-posted receive to the kernel (ENOMEM completes it). */
static void move_to_kernel(struct kp_req *r)
{
	upost_unlink(r);
	r->state = RS_INACTIVE;
	fstats.to_kernel++;
	if (kp_post_kernel(r) != MPI_SUCCESS) {
		struct kprog_cqe cqe = { .req_id = kp_req_id(r), .source = -1,
					 .tag = r->tag, .error = -ENOMEM };

		r->state = RS_ACTIVE;
		kp_complete(r, &cqe);
	}
}

void kp_fast_to_kernel(void)
{
	while (uhead)
		move_to_kernel(uhead);
}

/*
 * The kernel holds unexpected messages: move user-posted receives to it,
 * oldest first, only until it holds none. A prefix moves, so the kernel's
 * receives stay older than ours; each moved receive takes the message the
 * kernel's matching gives it. Usually the held messages are those a full
 * channel pushed through the kernel, and the rest of a window of receives
 * stays here.
 */
static void to_kernel_while_held(void)
{
	while (uhead && __atomic_load_n(&kp.ring->unexp, __ATOMIC_ACQUIRE)) {
		move_to_kernel(uhead);
		kp_ring_drain();
	}
}

/* ---- receives ---- */

/* Does record rec of world rank w match receive envelope (ctx, source, tag)? */
static bool rec_match(const struct kprog_chan_rec *rec, uint32_t ctx, int tag)
{
	return rec->context == ctx && (tag == MPI_ANY_TAG || tag == rec->tag);
}

/*
 * Did a kernel drain move w's cons since we read @cons? Then what looked
 * malformed may be records released and rewritten under our scan: a race,
 * not a broken peer; the next poll looks again.
 */
static bool cons_moved(const struct kp_peer *p, uint64_t cons)
{
	return __atomic_load_n(&p->rx.h->cons, __ATOMIC_ACQUIRE) != cons;
}

enum { FOUND, NONE, KERNEL };

/*
 * The oldest record of w's channel that matches (ctx, tag) and may be
 * taken here. KERNEL: the kernel holds (or is taking) older messages of
 * w, or a receive in the kernel wants the record: ask the kernel.
 */
KP_HOT static int find_rec(int w, uint32_t ctx, int tag, struct kprog_chan_rec **out)
{
	struct kp_peer *p = &peers[w];
	uint64_t pos, prod, size, cons, end;
	struct kprog_chan_rec *rec;
	bool ktaken = false;

	if (p->state != PEER_MAPPED || p->broken)
		return held(w) || p->broken ? KERNEL : NONE;
	cons = __atomic_load_n(&p->rx.h->cons, __ATOMIC_ACQUIRE);	/* before prod */
	prod = kp_dir_prod(&p->rx);
	p->prod_hint = prod;
	if (prod - cons > (uint64_t)p->rx.mask + 1)
		return KERNEL;	/* garbage indices: let the kernel judge */
	/*
	 * Records past the last poll were not matched against the receives
	 * posted here yet: an older one of those may want them first.
	 */
	end = uhead ? p->scan : prod;
	if ((int64_t)(end - cons) < 0)
		end = cons;
	for (pos = cons; pos != end; pos += size) {
		rec = kp_dir_rec(&p->rx, pos, prod, &size);
		if (!size) {
			if (!cons_moved(p, cons))
				p->broken = true;
			return KERNEL;
		}
		if (rec->flags & KPROG_REC_PAD)
			continue;
		switch (kp_rec_state(rec)) {
		case KPROG_REC_KTAKEN:
			ktaken = true;
			continue;
		case KPROG_REC_NEW:
			break;
		default:
			continue;
		}
		if (!rec_match(rec, ctx, tag))
			continue;
		if (ktaken || held(w))
			return KERNEL;
		/*
		 * A rendezvous record (rts.c) is the kernel's to send: hand it
		 * over, so that the receive (and any user-posted one, which then
		 * sees it held) goes to the kernel and finds it there.
		 */
		if ((rec->flags & KPROG_REC_RNDV) ||
		    (kp_kernel_recvs() && kernel_wants(rec->context, w, rec->tag))) {
			chan_drain(w);
			return KERNEL;
		}
		*out = rec;
		return FOUND;
	}
	return held(w) ? KERNEL : NONE;
}

/* Take rec of w into (buf, count, type); false if the kernel took it first. */
KP_HOT static bool take_rec(struct kprog_chan_rec *rec, int w, struct kp_comm *c, void *buf,
			    int count, MPI_Datatype type, MPI_Status *st, int *err)
{
	size_t got;

	if (!kp_rec_take(rec))
		return false;
	kp.activity++;
	took_stamp = rec->send_stamp;	/* before DONE: then it may be rewritten */
	*err = unpack_from(kp_rec_payload(rec), kp_rec_len(&peers[w].rx, rec), buf, count, type,
			   &got);
	status_fill(st, c, w, rec->tag, got, *err);
	kp_rec_done(rec);
	kp_dir_release_taken(&peers[w].rx, peers[w].prod_hint);
	fstats.received++;
	return true;
}

/*
 * Receive immediate: take the message a receive (source, tag) on c would
 * get now, from the channels. 1: done (st, *err filled); 0: not here.
 */
KP_HOT static int recv_now(struct kp_comm *c, void *buf, int count, MPI_Datatype type, int source,
			   int tag, MPI_Status *st, int *err)
{
	struct kprog_chan_rec *rec;
	int i, w, res;

	if (!fast_on || kp_deferred_recvs())
		return 0;
	if (source != MPI_ANY_SOURCE) {
		/* its channel alone: peer_map() maps it if the peer opened it */
		w = c->c2w[source];
		if (peers[w].state != PEER_MAPPED && !peer_map(w))
			return 0;
		for (;;) {
			if (find_rec(w, c->ctx, tag, &rec) != FOUND)
				return 0;
			if (take_rec(rec, w, c, buf, count, type, st, err))
				return 1;
		}
	}
	map_new();
	if (__atomic_load_n(&kp.ring->unexp, __ATOMIC_ACQUIRE))
		return 0;	/* the kernel may hold an older message of the winner */
	for (i = 0; i < nactive; i++) {
		w = active[(rr + i) % nactive];
		if (c->w2c[w] < 0)
			continue;
		res = find_rec(w, c->ctx, tag, &rec);
		if (res == KERNEL)
			return 0;
		if (res == FOUND && take_rec(rec, w, c, buf, count, type, st, err)) {
			rr = (rr + i + 1) % nactive;
			return 1;
		}
	}
	return 0;
}

int kp_fast_recv_now(struct kp_comm *c, void *buf, int count, MPI_Datatype type, int source,
		     int tag, MPI_Status *st, int *err)
{
	if (source == MPI_PROC_NULL || !recv_now(c, buf, count, type, source, tag, st, err))
		return 0;
	kp_wp_late(0);	/* the message was there first: exactly no Late Sender */
	return 1;
}

/*
 * Directed polling for a blocking receive from one source with nothing
 * else posted here: look at that source's channel only, for at most the
 * spin limit, with no request object. 0: use the general path (something
 * arrived through the kernel, or the limit passed).
 */
static int recv_spin(struct kp_comm *c, void *buf, int count, MPI_Datatype type, int w,
		     int tag, MPI_Status *st, int *err, uint32_t *cpu1)
{
	struct kprog_chan_rec *rec;
	unsigned int n, every;
	uint64_t t0, now, delay0 = 0;
	uint32_t ev;

	ev = __atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE);
	t0 = kp_wp_cur ? kp_wp_t0 : kp_ticks();	/* the profiler read it on entry */
	kp_fast_spin_t0 = t0;	/* the receive's start, for the profiler (p2p.c) */
	/* KPROG_SPIN_US=0: one poll, as before the clock was read less often */
	every = kp.spin.limit_ns ? KP_SPIN_CLOCK_POLLS - 1 : 0;
	if (every && kp.spin.yield)
		every = KP_SPIN_YIELD_POLLS - 1;	/* a yield per that many polls (spin.h) */
	for (n = 0;; n++) {
		switch (find_rec(w, c->ctx, tag, &rec)) {
		case FOUND:
			if (!take_rec(rec, w, c, buf, count, type, st, err))
				continue;
			now = kp_ticks();
			kp_spin_record(&kp.spin, kp_ticks_ns(now - t0), false);
			if (kp_wp_on) {
				kp_wp_t1 = now;	/* the profiled call's end */
				kp_wp_t1_stamp = took_stamp;
			}
			return 1;
		case KERNEL:
			return 0;
		default:
			break;
		}
		if (__atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE) != ev)
			return 0;
		/* no PAUSE (see kp_wait_step()); the clock: KP_SPIN_CLOCK_POLLS */
		if ((n & every) == every) {
			uint64_t tk = kp_ticks();

			now = kp_ticks_ns(tk - kp_clk.t0);	/* kp_clock_ns(), one read */
			if (kp_ticks_ns(tk - t0) >= kp_spin_limit(&kp.spin, now))
				return 0;
			/* oversubscribed: the sender may be runnable on this CPU (spin.h) */
			if (kp_spin_may_yield(&kp.spin, now)) {
				kp_spin_yield(now, &delay0);
				/* a yield may have moved us: tell the sender (spin.h) */
				if (KP_SPIN_SEND_YIELD == 3 && *cpu1) {
					uint32_t here = kp_cpu_here();

					if (here != *cpu1) {
						*cpu1 = here;
						__atomic_store_n(&peers[w].rx.h->waiter_cpu, here,
								 __ATOMIC_RELAXED);
					}
				}
			}
		}
	}
}

int kp_fast_recv_spin(struct kp_comm *c, void *buf, int count, MPI_Datatype type, int source,
		      int tag, MPI_Status *st, int *err)
{
	uint32_t cpu1 = 0;
	int w, res;

	/* threads: spinning here would hold the shim's lock (lock.c) */
	if (!fast_on || source < 0 || uhead || kp_deferred_recvs() || kp.mt)
		return 0;
	w = c->c2w[source];
	if (peers[w].state != PEER_MAPPED)
		return 0;
	if (!kp_waiter_pub())
		return recv_spin(c, buf, count, type, w, tag, st, err, &cpu1);
	/* the same-CPU hand-over (spin.h KP_SPIN_SEND_YIELD 3): where we wait */
	cpu1 = kp_cpu_here();
	__atomic_store_n(&peers[w].rx.h->waiter_cpu, cpu1, __ATOMIC_RELAXED);
	res = recv_spin(c, buf, count, type, w, tag, st, err, &cpu1);
	__atomic_store_n(&peers[w].rx.h->waiter_cpu, 0, __ATOMIC_RELAXED);
	return res;
}

void kp_fast_dump(void)
{
	const struct kp_req *r;
	int i, n = 0;

	if (!fast_on)
		return;
	kp_logf("ring events %u unexp %u chan_gen %u; receives posted here:",
		kp.ring->events, kp.ring->unexp, kp.ring->chan_gen);
	for (r = uhead; r && n < 8; r = r->unext, n++)
		kp_logf("  user-posted ctx %u source %d tag %d cap %llu", r->comm->ctx, r->peer,
			r->tag, (unsigned long long)r->cap);
	for (r = kp_kernel_recvs(), n = 0; r && n < 8; r = r->knext, n++)
		kp_logf("  in the kernel ctx %u source %d tag %d", r->post.context, r->post.peer,
			r->post.tag);
	for (i = 0; i < nactive; i++) {
		struct kp_peer *p = &peers[active[i]];

		kp_logf("  rank %d: rx prod %llu cons %llu scan %llu held %u waiting %u; tx prod %llu cons %llu%s",
			active[i], (unsigned long long)p->rx.h->prod,
			(unsigned long long)p->rx.h->cons, (unsigned long long)p->scan,
			held(active[i]), p->rx.h->waiting, (unsigned long long)p->tx.h->prod,
			(unsigned long long)p->tx.h->cons, p->broken ? " broken" : "");
	}
}

bool kp_fast_try_recv(struct kp_req *r)
{
	int err;

	if (r->mrecv || r->proc_null)
		return false;
	if (!recv_now(r->comm, r->buf, r->count, r->type, r->peer, r->tag, &r->status, &err))
		return false;
	r->timed = kp_wp_on;	/* the message was there first: no Late Sender */
	r->late_ns = 0;
	r->err = err;
	r->state = RS_COMPLETE;
	if (r->user_freed)
		kp_req_release(r);
	return true;
}

bool kp_fast_upost(struct kp_req *r)
{
	size_t cap = 0;
	int w;

	if (!fast_on || r->mrecv || kp_deferred_recvs())
		return false;
	if (r->count)
		cap = (size_t)kp_type_quick(r->type)->size * (size_t)r->count;
	if (cap > fast_limit)
		return false;	/* may need a rendezvous: the kernel drives it */
	if (r->peer == MPI_ANY_SOURCE) {
		if (__atomic_load_n(&kp.ring->unexp, __ATOMIC_ACQUIRE))
			return false;
	} else {
		w = r->comm->c2w[r->peer];
		if (peers[w].state != PEER_MAPPED && !peer_map(w))
			return false;	/* messages of w come through the kernel */
		if (held(w) || peers[w].broken ||
		    (__atomic_load_n(&src_state[w].flags, __ATOMIC_ACQUIRE) & KPROG_SRC_LEFT))
			return false;
	}
	r->upost = true;
	r->uprev = utail;
	r->unext = NULL;
	if (utail)
		utail->unext = r;
	else
		uhead = r;
	utail = r;
	r->cap = cap;
	r->state = RS_ACTIVE;
	fstats.uposted++;
	return true;
}

/*
 * MPI_Irecv from one source with no progress beyond that source's channel:
 * receive immediate, else catch up on the records of the source that
 * arrived since the last poll (older user-posted receives get them first),
 * try again, else post in user space. The rest of kp_progress() (the
 * completion ring, deferred posts, the other channels) is not this
 * receive's business: it costed a non-arrived 8-byte MPI_Irecv about
 * 480 of its 850 instructions (callgrind, msgrate). 1: r is complete or
 * posted; 0: use the general path (kp_progress(), kp_start_recv()).
 */
static void poll_peer(int w);

int kp_fast_irecv(struct kp_req *r)
{
	struct kp_peer *p;
	int w;

	if (!fast_on || r->peer == MPI_ANY_SOURCE || r->proc_null || r->mrecv)
		return 0;
	if (kp_fast_try_recv(r))
		return 1;
	w = r->comm->c2w[r->peer];
	p = &peers[w];
	if (p->state != PEER_MAPPED)
		return 0;
	if (uhead && p->scan != kp_dir_prod(&p->rx)) {
		/* recv_now() stopped at the last poll: look at the rest */
		poll_peer(w);
		if (kp_fast_try_recv(r))
			return 1;
	}
	return kp_fast_upost(r);
}

int kp_fast_cancel(struct kp_req *r)
{
	struct kprog_cqe cqe = { .req_id = kp_req_id(r), .source = -1, .tag = r->tag,
				 .error = -ECANCELED, .flags = KPROG_CQE_CANCELLED };

	if (!r->upost)
		return 0;
	upost_unlink(r);
	kp_complete(r, &cqe);
	return 1;
}

/* A user-posted receive takes record rec of w. */
static void deliver_upost(struct kp_req *r, struct kprog_chan_rec *rec, int w)
{
	int err;

	upost_unlink(r);
	if (!take_rec(rec, w, r->comm, r->buf, r->count, r->type, &r->status, &err)) {
		/* the kernel took it: everything goes through the kernel now */
		r->upost = true;
		r->uprev = NULL;
		r->unext = uhead;
		if (uhead)
			uhead->uprev = r;
		else
			utail = r;
		uhead = r;
		kp_fast_to_kernel();
		return;
	}
	if (r->post_tick) {	/* the profiler is on */
		int64_t late = kp_stamp_late_ns(took_stamp, r->post_tick, kp_ticks());

		if (late >= 0) {
			r->timed = true;
			r->late_ns = (uint64_t)late;
		}
	}
	r->err = err;
	r->state = RS_COMPLETE;
	if (r->user_freed || r->internal)
		kp_req_release(r);
}

/* Match the new records of w against the user-posted receives. */
static void poll_peer(int w)
{
	struct kp_peer *p = &peers[w];
	uint64_t pos, prod, size;
	struct kprog_chan_rec *rec;
	struct kp_req *r;
	bool ktaken = false;

	uint64_t cons;

	/*
	 * cons before prod: a kernel drain may release records between the
	 * two reads, and cons read after prod could then be past it.
	 */
	cons = __atomic_load_n(&p->rx.h->cons, __ATOMIC_ACQUIRE);
	prod = kp_dir_prod(&p->rx);
	p->seen_prod = prod;
	p->prod_hint = prod;
	if (p->scan == prod) {
		/*
		 * The sender's drains do not release the records they hand to
		 * the kernel (kmod/core/chan.c, the receiver may be about to
		 * take one): we do.
		 */
		if (cons != prod && !p->broken && prod - cons <= (uint64_t)p->rx.mask + 1)
			kp_dir_release(&p->rx);
		return;
	}
	if (p->broken) {
		/* our receives are in the kernel: it takes (and judges) the records */
		p->scan = prod;
		chan_drain(w);
		return;
	}
	if (prod - cons > (uint64_t)p->rx.mask + 1) {
		if (cons_moved(p, cons))
			return;
		p->broken = true;	/* the peer wrote garbage indices */
		kp_fast_to_kernel();
		return;
	}
	for (pos = cons; pos != prod; pos += size) {
		rec = kp_dir_rec(&p->rx, pos, prod, &size);
		if (!size) {
			if (cons_moved(p, cons))
				return;
			p->broken = true;
			kp_fast_to_kernel();
			return;
		}
		if (rec->flags & KPROG_REC_PAD)
			continue;
		if (kp_rec_state(rec) == KPROG_REC_KTAKEN)
			ktaken = true;
		if (kp_rec_state(rec) != KPROG_REC_NEW || pos < p->scan)
			continue;
		if (kp_kernel_recvs() && kernel_wants(rec->context, w, rec->tag)) {
			chan_drain(w);	/* the kernel matches it, and the rest */
			p->scan = prod;	/* not past what the kernel saw */
			return;
		}
		for (r = uhead; r; r = r->unext)
			if ((r->peer == MPI_ANY_SOURCE || r->comm->c2w[r->peer] == w) &&
			    r->comm->w2c[w] >= 0 && rec_match(rec, r->comm->ctx, r->tag))
				break;
		if (!r)
			continue;	/* unexpected: it waits in the channel */
		if (rec->flags & KPROG_REC_RNDV) {
			/* larger than any user-posted receive: the kernel judges */
			chan_drain(w);
			to_kernel_while_held();
			p->scan = prod;
			return;
		}
		if (ktaken || held(w)) {
			/* older messages of w are (going) in the kernel */
			to_kernel_while_held();
			p->scan = pos;	/* look at this record again */
			return;
		}
		deliver_upost(r, rec, w);
	}
	p->scan = prod;
	kp_dir_release(&p->rx);
}

void kp_fast_poll(void)
{
	uint32_t ev;
	int i;

	if (!fast_on)
		return;
	map_new();
	ev = __atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE);
	if (ev != seen_events) {
		seen_events = ev;
		fast_up->departed();	/* a departure is an event */
		/* the kernel holds messages: let it match the user-posted receives */
		if (uhead && __atomic_load_n(&kp.ring->unexp, __ATOMIC_ACQUIRE))
			to_kernel_while_held();
		else if (uhead)
			for (struct kp_req *r = uhead; r; r = r->unext)
				if (r->peer != MPI_ANY_SOURCE &&
				    (__atomic_load_n(&src_state[r->comm->c2w[r->peer]].flags,
						     __ATOMIC_ACQUIRE) & KPROG_SRC_LEFT)) {
					kp_fast_to_kernel();	/* it fails them or delivers */
					break;
				}
	}
	for (i = 0; i < nactive; i++)
		poll_peer(active[i]);
}

bool kp_fast_news(void)
{
	int i;

	if (!fast_on)
		return false;
	if (__atomic_load_n(&kp.ring->events, __ATOMIC_ACQUIRE) != seen_events)
		return true;
	for (i = 0; i < nactive; i++)
		if (kp_dir_prod(&peers[active[i]].rx) != peers[active[i]].seen_prod)
			return true;
	return false;
}

bool kp_fast_user_recvs(void)
{
	return uhead != NULL;
}

uint64_t kp_fast_rx_published(void)
{
	uint64_t sum = 0;
	int i;

	if (!fast_on)
		return 0;
	map_new();
	for (i = 0; i < nactive; i++)
		sum += kp_dir_prod(&peers[active[i]].rx);
	return sum;
}

/*
 * Which channels a sleeping wait asks to be kicked on. A wait whose
 * requests are all receives posted here with a given source (MPI_Wait on
 * one halo receive, MPI_Recv, Waitall of receives) is completed by those
 * peers' records only: a record from any other peer would be held
 * unmatched until this rank posts again, so its kick would only wake the
 * rank to sleep once more (two context switches and a system call each,
 * on a CPU that other ranks need when they outnumber the CPUs; LULESH's
 * 7-26 neighbours send while each waits for one). The kicks then come
 * from the sources of every receive posted here (a rendezvous record for
 * a receive not waited on is still taken at once: its sender waits for
 * it), from all peers while one of them is MPI_ANY_SOURCE. Anything else
 * (probes, sends, receives in the kernel, Waitany/some, threads) keeps
 * every channel asking. Completions in the ring wake the rank either way.
 */

bool kp_fast_want_recv(const struct kp_req *r)
{
	if (r->state == RS_COMPLETE || r->state == RS_INACTIVE || r->state == RS_FREE)
		return true;	/* nothing to wait for */
	return r->kind == KR_RECV && r->upost && !r->mrecv && !r->in_kernel &&
	       r->state == RS_ACTIVE && r->peer >= 0;
}

void kp_fast_want(bool narrow)
{
	want_narrow = narrow && fast_on && !kp.mt;
}

/* Mark the peers whose records may complete a receive posted here; false: all may. */
static bool want_mark(void)
{
	int i, w;

	if (!want) {
		want = calloc((size_t)kp.world_size, 1);
		if (!want)
			return false;
	}
	if (krecv_on)
		return false;	/* receives in the kernel: their records are drained by our polls */
	for (i = 0; i < nactive; i++)
		want[active[i]] = 0;
	for (struct kp_req *r = uhead; r; r = r->unext) {
		if (r->peer < 0)
			return false;	/* MPI_ANY_SOURCE */
		w = r->comm->c2w[r->peer];
		if (peers[w].state != PEER_MAPPED)
			return false;	/* a channel not mapped yet: its first record */
		want[w] = 1;
	}
	return true;
}

void kp_fast_waiting(bool on)
{
	int i;

	if (on && want_narrow && want_mark()) {
		for (i = 0; i < nactive; i++)
			__atomic_store_n(&peers[active[i]].rx.h->waiting, want[active[i]],
					 __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return;
	}
	for (i = 0; i < nactive; i++)
		__atomic_store_n(&peers[active[i]].rx.h->waiting, on ? 1 : 0, __ATOMIC_RELAXED);
	/* The flag before the last look at the channels: pairs with the senders' fence. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * The CPU + 1 this rank waits on, to the senders whose records the wait
 * may take (kp_waiter_pub(): the same set as the kicks of
 * kp_fast_waiting(), narrowed to the wait's sources when they are known),
 * 0: the wait is over. Written when the wait starts and when the
 * scheduler moved us (the caller reads the CPU with the clock), not at
 * every poll: each write moves the header's line, which the senders read.
 */
static uint32_t waiter_pub;	/* what kp_fast_waiter() published last */

void kp_fast_waiter(uint32_t cpu1)
{
	bool narrow;
	int i;

	if (!fast_on || cpu1 == waiter_pub)
		return;
	narrow = cpu1 && want_narrow && want_mark();
	for (i = 0; i < nactive; i++) {
		uint32_t *p = &peers[active[i]].rx.h->waiter_cpu;
		uint32_t v = narrow && !want[active[i]] ? 0 : cpu1;

		if (__atomic_load_n(p, __ATOMIC_RELAXED) != v)
			__atomic_store_n(p, v, __ATOMIC_RELAXED);
	}
	waiter_pub = cpu1;
}

/* ---- probes ---- */

int kp_fast_probe(struct kp_comm *c, int source, int tag, struct kp_req *m, int *found,
		  MPI_Status *st)
{
	struct kprog_chan_rec *rec;
	uint32_t len;
	int i, w, res;

	if (!fast_on || kp_deferred_recvs())
		return 0;
	map_new();
	if (source != MPI_ANY_SOURCE) {
		w = c->c2w[source];
		if (peers[w].state != PEER_MAPPED && !peer_map(w))
			return 0;
		res = find_rec(w, c->ctx, tag, &rec);
	} else {
		if (__atomic_load_n(&kp.ring->unexp, __ATOMIC_ACQUIRE))
			return 0;
		res = NONE;
		for (i = 0; i < nactive && res == NONE; i++) {
			w = active[(rr + i) % nactive];
			if (c->w2c[w] >= 0)
				res = find_rec(w, c->ctx, tag, &rec);
		}
	}
	if (res == KERNEL)
		return 0;
	*found = res == FOUND;
	if (!*found)
		return 1;
	if (!m) {
		status_fill(st, c, w, rec->tag, kp_rec_len(&peers[w].rx, rec), MPI_SUCCESS);
		return 1;
	}
	/* Mprobe: the message leaves the channel into the message handle. */
	if (!kp_rec_take(rec))
		return 0;
	len = kp_rec_len(&peers[w].rx, rec);
	m->tmp = malloc(len ? len : 1);
	if (!m->tmp) {
		kp_logf("out of memory for a probed message");
		abort();
	}
	memcpy(m->tmp, kp_rec_payload(rec), len);
	m->tmp_bytes = len;
	m->umsg = true;
	status_fill(&m->status, c, w, rec->tag, len, MPI_SUCCESS);
	status_fill(st, c, w, rec->tag, len, MPI_SUCCESS);
	kp_rec_done(rec);
	kp_dir_release_taken(&peers[w].rx, peers[w].prod_hint);
	fstats.received++;
	return 1;
}

int kp_fast_mrecv(struct kp_req *m, void *buf, int count, MPI_Datatype type, MPI_Status *st)
{
	size_t got;
	int err = unpack_from(m->tmp, m->tmp_bytes, buf, count, type, &got);

	if (st != MPI_STATUS_IGNORE) {
		int e = st->MPI_ERROR;

		*st = m->status;
		st->_ucount = got;
		st->MPI_ERROR = e;	/* single status: left alone, as Open MPI does */
	}
	return err;
}

/* Monitoring (mon_src.c): add what this process published on each channel. */
void kp_fast_sent_counts(uint64_t *msgs, uint64_t *bytes)
{
	int i, w;

	for (i = 0; i < nactive; i++) {
		w = active[i];
		msgs[w] += __atomic_load_n(&peers[w].tx.h->msgs, __ATOMIC_RELAXED);
		bytes[w] += __atomic_load_n(&peers[w].tx.h->bytes, __ATOMIC_RELAXED);
	}
}
