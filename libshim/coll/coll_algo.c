// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Schedule builders of the nonblocking collectives: each turns one call
 * into rounds of send/recv/copy/reduce steps (kprog.h, KPROG_IOC_COLL) on
 * packed byte buffers, choosing the algorithm by size and rank count, as
 * LibNBC's schedules do. A step of round r may use what every step of the
 * rounds before it produced; within a round nothing is both read by one
 * step and written by another. Both ends of every message compute the
 * same length from the same arguments, so a message of 0 bytes is left
 * out at both ends (except the barrier's, which carry only the order).
 */
#include <stdlib.h>
#include <string.h>
#include "coll_algo.h"

KP_COLL_TEXT void kp_sched_init(struct kp_sched *s, int rank, int size)
{
	memset(s, 0, sizeof(*s));
	s->rank = rank;
	s->size = size;
}

KP_COLL_TEXT void kp_sched_reset(struct kp_sched *s)
{
	uint32_t i;

	for (i = 0; i < s->ntmp; i++)
		free(s->tmps[i]);
	s->ntmp = 0;
	s->n = 0;
}

KP_COLL_TEXT void kp_sched_reuse(struct kp_sched *s, int rank, int size)
{
	struct kprog_coll_step *steps = s->steps;
	void **tmps = s->tmps;
	uint32_t cap = s->cap, tmpcap = s->tmpcap;

	kp_sched_reset(s);
	kp_sched_init(s, rank, size);
	s->steps = steps;
	s->cap = cap;
	s->tmps = tmps;
	s->tmpcap = tmpcap;
}

void kp_sched_free(struct kp_sched *s)
{
	uint32_t i;

	free(s->steps);
	s->steps = NULL;
	s->n = s->cap = 0;
	for (i = 0; i < s->ntmp; i++)
		free(s->tmps[i]);
	free(s->tmps);
	s->tmps = NULL;
	s->ntmp = s->tmpcap = 0;
}

KP_COLL_TEXT void *kp_sched_tmp(struct kp_sched *s, size_t bytes)
{
	void *p;

	if (s->ntmp == s->tmpcap) {
		uint32_t cap = s->tmpcap ? 2 * s->tmpcap : 4;
		void **t = realloc(s->tmps, cap * sizeof(*t));

		if (!t) {
			s->oom = true;
			return NULL;
		}
		s->tmps = t;
		s->tmpcap = cap;
	}
	/* 64-byte aligned: the module's reductions run on whole lines */
	p = aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
	if (!p) {
		s->oom = true;
		return NULL;
	}
	s->tmps[s->ntmp++] = p;
	return p;
}

KP_COLL_TEXT static void add(struct kp_sched *s, int kind, int peer, const void *src, void *dst, size_t len,
		int dtype, int op)
{
	struct kprog_coll_step *st;

	if (s->oom)
		return;
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 16;
		struct kprog_coll_step *n = realloc(s->steps, cap * sizeof(*n));

		if (!n) {
			s->oom = true;
			return;
		}
		s->steps = n;
		s->cap = cap;
	}
	st = &s->steps[s->n++];
	memset(st, 0, sizeof(*st));
	st->kind = (uint8_t)kind;
	st->dtype = (uint8_t)dtype;
	st->op = (uint8_t)op;
	st->round = s->round;
	st->peer = peer;
	st->src = (uint64_t)(uintptr_t)src;
	st->dst = (uint64_t)(uintptr_t)dst;
	st->len = len;
	s->round_used = true;
}

KP_COLL_TEXT void kp_sched_send(struct kp_sched *s, int peer, const void *src, size_t len)
{
	add(s, KPROG_STEP_SEND, peer, src, NULL, len, 0, 0);
}

KP_COLL_TEXT void kp_sched_recv(struct kp_sched *s, int peer, void *dst, size_t len)
{
	add(s, KPROG_STEP_RECV, peer, NULL, dst, len, 0, 0);
}

KP_COLL_TEXT void kp_sched_copy(struct kp_sched *s, const void *src, void *dst, size_t len)
{
	if (len && src != dst)
		add(s, KPROG_STEP_COPY, 0, src, dst, len, 0, 0);
}

KP_COLL_TEXT void kp_sched_reduce(struct kp_sched *s, const void *src, void *dst, size_t len, int dtype, int op)
{
	if (len)
		add(s, KPROG_STEP_REDUCE, 0, src, dst, len, dtype, op);
}

KP_COLL_TEXT void kp_sched_next_round(struct kp_sched *s)
{
	if (s->round_used)
		s->round++;
	s->round_used = false;
}

/* Data movement: a message only when it carries bytes (both ends agree). */
KP_COLL_TEXT static void xsend(struct kp_sched *s, int peer, const void *src, size_t len)
{
	if (len)
		kp_sched_send(s, peer, src, len);
}

KP_COLL_TEXT static void xrecv(struct kp_sched *s, int peer, void *dst, size_t len)
{
	if (len)
		kp_sched_recv(s, peer, dst, len);
}

KP_COLL_TEXT static int mod(int a, int n)
{
	a %= n;
	return a < 0 ? a + n : a;
}

static int pow2_floor(int n)
{
	int p = 1;

	while (p * 2 <= n)
		p *= 2;
	return p;
}

/* ---- barrier: dissemination, ceil(log2 n) rounds of empty messages ---- */
void kp_build_barrier(struct kp_sched *s)
{
	static char token;
	int k;

	for (k = 1; k < s->size; k <<= 1) {
		kp_sched_send(s, mod(s->rank + k, s->size), &token, 0);
		kp_sched_recv(s, mod(s->rank - k, s->size), &token, 0);
		kp_sched_next_round(s);
	}
}

/* ---- bcast ---- */

/* Binomial tree over ranks relative to the root: log2 n rounds of the whole buffer. */
KP_COLL_TEXT static void bcast_binomial(struct kp_sched *s, char *buf, size_t bytes, int root)
{
	int n = s->size, vr = mod(s->rank - root, n), low = 1, m;

	if (vr) {
		low = vr & -vr;
		kp_sched_recv(s, mod(vr - low + root, n), buf, bytes);
		kp_sched_next_round(s);
	} else {
		while (low < n)
			low <<= 1;
	}
	for (m = low >> 1; m >= 1; m >>= 1)
		if (vr + m < n)
			kp_sched_send(s, mod(vr + m + root, n), buf, bytes);
	kp_sched_next_round(s);
}

/* Chunk i of n over bytes (the last ones may be short or empty). */
KP_COLL_TEXT static void chunk(size_t bytes, int n, int i, size_t *off, size_t *len)
{
	size_t ch = (bytes + n - 1) / n, o = ch * i;

	*off = o < bytes ? o : bytes;
	*len = o + ch <= bytes ? ch : bytes - *off;
}

/*
 * Large: the root scatters n chunks, then a ring allgather of the chunks
 * (van de Geijn): 2 (n-1)/n of the bytes through every link instead of
 * log2 n times the whole. The root already holds every chunk, so the ring
 * step into it is left out at both ends.
 */
KP_COLL_TEXT static void bcast_scatter_allgather(struct kp_sched *s, char *buf, size_t bytes, int root)
{
	int n = s->size, vr = mod(s->rank - root, n), j, st;
	size_t off, len;

	if (vr == 0) {
		for (j = 1; j < n; j++) {
			chunk(bytes, n, j, &off, &len);
			xsend(s, mod(j + root, n), buf + off, len);
		}
	} else {
		chunk(bytes, n, vr, &off, &len);
		xrecv(s, root, buf + off, len);
	}
	kp_sched_next_round(s);
	for (st = 0; st < n - 1; st++) {
		if (vr != n - 1) {
			chunk(bytes, n, mod(vr - st, n), &off, &len);
			xsend(s, mod(vr + 1 + root, n), buf + off, len);
		}
		if (vr != 0) {
			chunk(bytes, n, mod(vr - st - 1, n), &off, &len);
			xrecv(s, mod(vr - 1 + root, n), buf + off, len);
		}
		kp_sched_next_round(s);
	}
}

KP_COLL_TEXT void kp_build_bcast(struct kp_sched *s, void *buf, size_t bytes, int root)
{
	if (s->size == 1 || !bytes)
		return;
	if (bytes >= KP_BCAST_LARGE && s->size > 2)
		bcast_scatter_allgather(s, buf, bytes, root);
	else
		bcast_binomial(s, buf, bytes, root);
}

/* ---- reduce ---- */

/*
 * Binomial tree towards the root (small). A rank with children reduces
 * into its accumulator (the receive buffer at the root, else a temporary:
 * never the send buffer): the first child's vector arrives there directly
 * and this rank's own is reduced into it (the ops are commutative), so no
 * rank copies its input first; later children's arrive in a temporary,
 * the second one's in the round that reduces the rank's own input (they
 * touch different buffers). In place, the root's input is in the receive
 * buffer already and every child's arrives in the temporary.
 */
KP_COLL_TEXT static void reduce_binomial(struct kp_sched *s, const char *sbuf, char *rbuf,
					 size_t bytes, const struct kp_redop *ro, int root)
{
	int n = s->size, vr = mod(s->rank - root, n), mask;
	const char *own = sbuf;		/* not reduced into the accumulator yet */
	char *tmp = NULL, *accw = NULL;

	if (s->rank == root)
		accw = rbuf;
	else if (!(vr & 1) && vr + 1 < n && !(accw = kp_sched_tmp(s, bytes)))
		return;
	for (mask = 1; mask < n; mask <<= 1) {
		if (vr & mask) {
			kp_sched_next_round(s);
			kp_sched_send(s, mod(vr - mask + root, n), accw ? accw : sbuf, bytes);
			kp_sched_next_round(s);
			return;
		}
		if (vr + mask >= n)
			continue;
		if (own && accw) {
			kp_sched_recv(s, mod(vr + mask + root, n), accw, bytes);
			kp_sched_next_round(s);
			kp_sched_reduce(s, own, accw, bytes, ro->dtype, ro->op);
			own = NULL;
			continue;	/* the next receive joins this round */
		}
		if (!tmp && !(tmp = kp_sched_tmp(s, bytes)))
			return;
		kp_sched_recv(s, mod(vr + mask + root, n), tmp, bytes);
		kp_sched_next_round(s);
		kp_sched_reduce(s, tmp, accw, bytes, ro->dtype, ro->op);
		kp_sched_next_round(s);
	}
	kp_sched_next_round(s);
	/* the root without children (n == 1) */
	if (own && accw)
		kp_sched_copy(s, own, accw, bytes);
}

/* Block i of count elements over n ranks: first elements and count. */
KP_COLL_TEXT static void eblock(size_t count, int n, int i, size_t *first, size_t *cnt)
{
	size_t base = count / n, extra = count % n;

	*first = base * i + ((size_t)i < extra ? (size_t)i : extra);
	*cnt = base + ((size_t)i < extra);
}

/*
 * Large: ring reduce-scatter, then the reduced blocks gathered at the root
 * (Rabenseifner's reduce-scatter + gather, with a ring for the first half:
 * n-1 steps of 1/n of the vector, each block reduced on its way round the
 * ring). Every rank receives and reduces (n-1)/n of the vector, in
 * parallel, and the root then receives the n-1 reduced blocks it lacks:
 * 2 (n-1)/n of the vector through the root and (n-1)/n reduced there,
 * where the binomial tree has it receive and reduce the whole vector
 * log2 n times, one child after the other, while its children wait.
 *
 * The root works in its receive buffer as allreduce_ring() does (blocks
 * arrive there straight, its own share from the send buffer reduced into
 * them; in place, they arrive in a temporary and are reduced into the
 * receive buffer). The others have no receive buffer: the block a step
 * receives arrives in one of two block-sized temporaries, in turn, its own
 * share is reduced into it, and the next step sends it on while the other
 * temporary receives. Rank r ends with block r + 1 reduced over all ranks
 * and sends it to the root, which holds its own such block already.
 */
KP_COLL_TEXT static void reduce_ring_gather(struct kp_sched *s, const char *sbuf, char *rbuf,
					    size_t count, const struct kp_redop *ro, int root)
{
	int n = s->size, r = s->rank, st, b, next = mod(r + 1, n), prev = mod(r - 1, n);
	size_t es = ro->esize, f, c, f2, c2, bmax = (count / n + 1) * es;
	bool is_root = r == root;
	char *tmp = NULL, *w[2] = { NULL, NULL }, *have = NULL;
	const char *out;

	if (is_root && !sbuf && !(tmp = kp_sched_tmp(s, bmax)))
		return;
	if (!is_root && (!(w[0] = kp_sched_tmp(s, bmax)) ||
			 (n > 2 && !(w[1] = kp_sched_tmp(s, bmax)))))
		return;
	for (st = 0; st < n - 1; st++) {
		eblock(count, n, mod(r - st, n), &f, &c);
		eblock(count, n, mod(r - st - 1, n), &f2, &c2);
		if (!st)
			out = (sbuf ? sbuf : rbuf) + f * es;
		else
			out = is_root ? rbuf + f * es : have;
		xsend(s, next, out, c * es);
		if (is_root) {
			char *dst = rbuf + f2 * es;

			xrecv(s, prev, sbuf ? dst : tmp, c2 * es);
			kp_sched_next_round(s);
			kp_sched_reduce(s, sbuf ? sbuf + f2 * es : tmp, dst, c2 * es, ro->dtype,
					ro->op);
		} else {
			have = w[st & 1];
			xrecv(s, prev, have, c2 * es);
			kp_sched_next_round(s);
			kp_sched_reduce(s, sbuf + f2 * es, have, c2 * es, ro->dtype, ro->op);
		}
		/*
		 * The root's last reduction (into block r + 1) shares its round
		 * with the gather's receives (into the others): one hand-off
		 * fewer on the root's path
		 */
		if (!is_root || st < n - 2)
			kp_sched_next_round(s);
	}
	/* gather: block b is with rank b - 1 */
	if (!is_root) {
		eblock(count, n, next, &f, &c);
		xsend(s, root, have, c * es);
	} else {
		for (b = 0; b < n; b++) {
			if (b == next)
				continue;
			eblock(count, n, b, &f, &c);
			xrecv(s, mod(b - 1, n), rbuf + f * es, c * es);
		}
	}
	kp_sched_next_round(s);
}

size_t kp_reduce_large = SIZE_MAX;

void kp_build_reduce(struct kp_sched *s, const void *sbuf, void *rbuf, size_t count,
		     const struct kp_redop *ro, int root)
{
	size_t bytes = count * ro->esize;

	if (!bytes)
		return;
	if (s->size > 1 && bytes >= kp_reduce_large && count >= (size_t)s->size)
		reduce_ring_gather(s, sbuf, rbuf, count, ro, root);
	else
		reduce_binomial(s, sbuf, rbuf, bytes, ro, root);
}

/* ---- allreduce ---- */

/*
 * Recursive doubling (small): log2 p exchanges of the whole vector among
 * the p = 2^k ranks; with n = p + rem, the first 2 rem ranks pair up
 * first (the even one hands its vector to the odd one and gets the
 * result back at the end), as MPICH does.
 */
KP_COLL_TEXT static void allreduce_rd(struct kp_sched *s, char *rbuf, size_t bytes, const struct kp_redop *ro)
{
	int n = s->size, r = s->rank, p2 = pow2_floor(n), rem = n - p2, newr, mask;
	char *tmp = kp_sched_tmp(s, bytes);

	if (!tmp)
		return;
	if (r < 2 * rem) {
		if (!(r & 1)) {
			kp_sched_send(s, r + 1, rbuf, bytes);
			newr = -1;
		} else {
			kp_sched_recv(s, r - 1, tmp, bytes);
			kp_sched_next_round(s);
			kp_sched_reduce(s, tmp, rbuf, bytes, ro->dtype, ro->op);
			newr = r / 2;
		}
		kp_sched_next_round(s);
	} else {
		newr = r - rem;
	}
	if (newr >= 0) {
		for (mask = 1; mask < p2; mask <<= 1) {
			int pn = newr ^ mask, peer = pn < rem ? 2 * pn + 1 : pn + rem;

			kp_sched_send(s, peer, rbuf, bytes);
			kp_sched_recv(s, peer, tmp, bytes);
			kp_sched_next_round(s);
			kp_sched_reduce(s, tmp, rbuf, bytes, ro->dtype, ro->op);
			kp_sched_next_round(s);
		}
	}
	if (r < 2 * rem) {
		if (!(r & 1))
			kp_sched_recv(s, r + 1, rbuf, bytes);
		else
			kp_sched_send(s, r - 1, rbuf, bytes);
		kp_sched_next_round(s);
	}
}

/*
 * Large: ring reduce-scatter (n-1 steps, each block reduced on its way
 * round the ring), then ring allgather of the reduced blocks: every rank
 * sends and receives 2 (n-1)/n of the vector in all. With a send buffer,
 * nothing is copied first: the first step sends from it, and each block
 * arriving goes straight into the receive buffer, where this rank's share
 * of it (from the send buffer) is reduced into it (the ops are
 * commutative); the one block that never arrives there in the
 * reduce-scatter arrives in the allgather. In place, blocks arrive in a
 * temporary and are reduced into the receive buffer.
 */
KP_COLL_TEXT static void allreduce_ring(struct kp_sched *s, const char *sbuf, char *rbuf, size_t count,
			   const struct kp_redop *ro)
{
	int n = s->size, r = s->rank, st, next = mod(r + 1, n), prev = mod(r - 1, n);
	size_t es = ro->esize, f, c, f2, c2;
	char *tmp = NULL;

	if (!sbuf && !(tmp = kp_sched_tmp(s, (count / n + 1) * es)))
		return;
	for (st = 0; st < n - 1; st++) {
		eblock(count, n, mod(r - st, n), &f, &c);
		eblock(count, n, mod(r - st - 1, n), &f2, &c2);
		xsend(s, next, (st || !sbuf ? rbuf : sbuf) + f * es, c * es);
		if (sbuf) {
			xrecv(s, prev, rbuf + f2 * es, c2 * es);
			kp_sched_next_round(s);
			kp_sched_reduce(s, sbuf + f2 * es, rbuf + f2 * es, c2 * es, ro->dtype,
					ro->op);
		} else {
			xrecv(s, prev, tmp, c2 * es);
			kp_sched_next_round(s);
			kp_sched_reduce(s, tmp, rbuf + f2 * es, c2 * es, ro->dtype, ro->op);
		}
		kp_sched_next_round(s);
	}
	/* rank r now holds block r + 1 reduced over all ranks */
	for (st = 0; st < n - 1; st++) {
		eblock(count, n, mod(r + 1 - st, n), &f, &c);
		eblock(count, n, mod(r - st, n), &f2, &c2);
		xsend(s, next, rbuf + f * es, c * es);
		xrecv(s, prev, rbuf + f2 * es, c2 * es);
		kp_sched_next_round(s);
	}
}

KP_COLL_TEXT void kp_build_allreduce(struct kp_sched *s, const void *sbuf, void *rbuf, size_t count,
			const struct kp_redop *ro)
{
	size_t bytes = count * ro->esize;

	if (!bytes)
		return;
	if (s->size > 1 && bytes >= KP_ALLREDUCE_LARGE && count >= (size_t)s->size) {
		allreduce_ring(s, sbuf, rbuf, count, ro);
		return;
	}
	if (sbuf)
		kp_sched_copy(s, sbuf, rbuf, bytes);
	kp_sched_next_round(s);
	if (s->size > 1)
		allreduce_rd(s, rbuf, bytes, ro);
}

/* ---- alltoall ---- */
KP_COLL_TEXT void kp_build_alltoall(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block)
{
	int n = s->size, r = s->rank, st;
	const char *src = sbuf;
	char *dst = rbuf;

	if (!block)
		return;
	if (!src) {
		/* in place: send from a copy, the blocks are overwritten meanwhile */
		char *t = kp_sched_tmp(s, block * n);

		if (!t)
			return;
		kp_sched_copy(s, dst, t, block * n);
		kp_sched_next_round(s);
		src = t;
	}
	kp_sched_copy(s, src + block * r, dst + block * r, block);
	if (block < KP_ALLTOALL_PAIRWISE) {
		/* small: every message at once, latency rather than bandwidth */
		for (st = 1; st < n; st++) {
			kp_sched_send(s, mod(r + st, n), src + block * mod(r + st, n), block);
			kp_sched_recv(s, mod(r - st, n), dst + block * mod(r - st, n), block);
		}
		kp_sched_next_round(s);
		return;
	}
	/*
	 * pairwise: one peer pair per round, n-1 rounds; the own block's copy
	 * shares the first (it touches neither block that round moves), so
	 * the module starts that round's transfers before the copy, and the
	 * copy runs while they are under way rather than before them
	 */
	for (st = 1; st < n; st++) {
		kp_sched_send(s, mod(r + st, n), src + block * mod(r + st, n), block);
		kp_sched_recv(s, mod(r - st, n), dst + block * mod(r - st, n), block);
		kp_sched_next_round(s);
	}
}

/* ---- allgather(v) ---- */

/* Ring: n-1 rounds, each passes one block on to the next rank. */
static void allgatherv_ring(struct kp_sched *s, char *rbuf, const size_t *counts,
			    const size_t *displs)
{
	int n = s->size, r = s->rank, st, b;

	for (st = 0; st < n - 1; st++) {
		b = mod(r - st, n);
		xsend(s, mod(r + 1, n), rbuf + displs[b], counts[b]);
		b = mod(r - st - 1, n);
		xrecv(s, mod(r - 1, n), rbuf + displs[b], counts[b]);
		kp_sched_next_round(s);
	}
}

/* Recursive doubling (n a power of two): log2 n rounds of growing ranges. */
static void allgather_rd(struct kp_sched *s, char *rbuf, size_t block)
{
	int r = s->rank, mask, mine, theirs;

	for (mask = 1; mask < s->size; mask <<= 1) {
		mine = r & ~(mask - 1);
		theirs = (r ^ mask) & ~(mask - 1);
		kp_sched_send(s, r ^ mask, rbuf + block * mine, block * mask);
		kp_sched_recv(s, r ^ mask, rbuf + block * theirs, block * mask);
		kp_sched_next_round(s);
	}
}

void kp_build_allgatherv(struct kp_sched *s, const void *sbuf, size_t sbytes, void *rbuf,
			 const size_t *counts, const size_t *displs)
{
	char *dst = rbuf;

	if (sbuf)
		kp_sched_copy(s, sbuf, dst + displs[s->rank], sbytes);
	kp_sched_next_round(s);
	allgatherv_ring(s, dst, counts, displs);
}

void kp_build_allgather(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block)
{
	int n = s->size, i;
	size_t *cd;

	if (!block)
		return;
	if (!(n & (n - 1)) && block * n < KP_BCAST_LARGE) {
		if (sbuf)
			kp_sched_copy(s, sbuf, (char *)rbuf + block * s->rank, block);
		kp_sched_next_round(s);
		allgather_rd(s, rbuf, block);
		return;
	}
	cd = kp_sched_tmp(s, 2 * n * sizeof(size_t));
	if (!cd)
		return;
	for (i = 0; i < n; i++) {
		cd[i] = block;
		cd[n + i] = block * i;
	}
	kp_build_allgatherv(s, sbuf, block, rbuf, cd, cd + n);
}

/* ---- gather(v), scatter(v): linear, every message at once ---- */
void kp_build_gatherv(struct kp_sched *s, const void *sbuf, size_t sbytes, void *rbuf,
		      const size_t *counts, const size_t *displs, int root)
{
	int i;

	if (s->rank != root) {
		xsend(s, root, sbuf, sbytes);
		return;
	}
	for (i = 0; i < s->size; i++)
		if (i != root)
			xrecv(s, i, (char *)rbuf + displs[i], counts[i]);
	if (sbuf)
		kp_sched_copy(s, sbuf, (char *)rbuf + displs[root], counts[root]);
}

void kp_build_gather(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block, int root)
{
	int i;

	if (!block)
		return;
	if (s->rank != root) {
		kp_sched_send(s, root, sbuf, block);
		return;
	}
	for (i = 0; i < s->size; i++)
		if (i != root)
			kp_sched_recv(s, i, (char *)rbuf + block * i, block);
	if (sbuf)
		kp_sched_copy(s, sbuf, (char *)rbuf + block * root, block);
}

/* For scatter(v) a NULL rbuf at the root is MPI_IN_PLACE. */
void kp_build_scatterv(struct kp_sched *s, const void *sbuf, const size_t *counts,
		       const size_t *displs, void *rbuf, size_t rbytes, int root)
{
	int i;

	if (s->rank != root) {
		xrecv(s, root, rbuf, rbytes);
		return;
	}
	for (i = 0; i < s->size; i++)
		if (i != root)
			xsend(s, i, (const char *)sbuf + displs[i], counts[i]);
	if (rbuf)
		kp_sched_copy(s, (const char *)sbuf + displs[root], rbuf, counts[root]);
}

void kp_build_scatter(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block, int root)
{
	int i;

	if (!block)
		return;
	if (s->rank != root) {
		kp_sched_recv(s, root, rbuf, block);
		return;
	}
	for (i = 0; i < s->size; i++)
		if (i != root)
			kp_sched_send(s, i, (const char *)sbuf + block * i, block);
	if (rbuf)
		kp_sched_copy(s, (const char *)sbuf + block * root, rbuf, block);
}

/* ---- alltoallv: every message at once ---- */
void kp_build_alltoallv(struct kp_sched *s, const void *sbuf, const size_t *scounts,
			const size_t *sdispls, void *rbuf, const size_t *rcounts,
			const size_t *rdispls)
{
	int n = s->size, r = s->rank, st, i;
	const char *src = sbuf;
	char *dst = rbuf;

	if (!src) {
		/* in place: the send blocks are the receive blocks; send from a copy */
		size_t end = 0;
		char *t;

		for (i = 0; i < n; i++)
			if (rdispls[i] + rcounts[i] > end)
				end = rdispls[i] + rcounts[i];
		t = kp_sched_tmp(s, end);
		if (!t)
			return;
		kp_sched_copy(s, dst, t, end);
		kp_sched_next_round(s);
		src = t;
		scounts = rcounts;
		sdispls = rdispls;
	}
	kp_sched_copy(s, src + sdispls[r], dst + rdispls[r], rcounts[r] < scounts[r] ?
		      rcounts[r] : scounts[r]);
	for (st = 1; st < n; st++) {
		i = mod(r + st, n);
		xsend(s, i, src + sdispls[i], scounts[i]);
		i = mod(r - st, n);
		xrecv(s, i, dst + rdispls[i], rcounts[i]);
	}
	kp_sched_next_round(s);
}

/* ---- scan, exscan: recursive doubling (Hillis-Steele) ---- */
void kp_build_scan(struct kp_sched *s, const void *sbuf, void *rbuf, size_t count,
		   const struct kp_redop *ro, bool exclusive)
{
	int n = s->size, r = s->rank, mask;
	size_t bytes = count * ro->esize;
	char *acc, *tmp;
	bool have = false;

	if (!bytes || n == 1) {
		if (!exclusive && sbuf)
			kp_sched_copy(s, sbuf, rbuf, bytes);
		return;
	}
	/* acc: the reduction over ranks r - 2^k + 1 .. r, sent up the line */
	if (exclusive) {
		acc = kp_sched_tmp(s, bytes);
		if (!acc)
			return;
		kp_sched_copy(s, sbuf ? sbuf : rbuf, acc, bytes);
	} else {
		acc = rbuf;
		if (sbuf)
			kp_sched_copy(s, sbuf, rbuf, bytes);
	}
	tmp = kp_sched_tmp(s, bytes);
	if (!tmp)
		return;
	kp_sched_next_round(s);
	for (mask = 1; mask < n; mask <<= 1) {
		if (r + mask < n)
			kp_sched_send(s, r + mask, acc, bytes);
		if (r - mask >= 0)
			kp_sched_recv(s, r - mask, tmp, bytes);
		kp_sched_next_round(s);
		if (r - mask >= 0) {
			kp_sched_reduce(s, tmp, acc, bytes, ro->dtype, ro->op);
			if (exclusive) {
				/* the result leaves out this rank's own contribution */
				if (have)
					kp_sched_reduce(s, tmp, rbuf, bytes, ro->dtype, ro->op);
				else
					kp_sched_copy(s, tmp, rbuf, bytes);
				have = true;
			}
		}
		kp_sched_next_round(s);
	}
}

/* ---- reduce_scatter: allreduce into a temporary, keep this rank's block ---- */
void kp_build_reduce_scatter(struct kp_sched *s, const void *sbuf, void *rbuf,
			     const size_t *counts, const struct kp_redop *ro)
{
	size_t total = 0, first = 0;
	char *t;
	int i;

	for (i = 0; i < s->size; i++) {
		if (i == s->rank)
			first = total;
		total += counts[i];
	}
	if (!total)
		return;
	t = kp_sched_tmp(s, total * ro->esize);
	if (!t)
		return;
	kp_build_allreduce(s, sbuf ? sbuf : rbuf, t, total, ro);
	kp_sched_next_round(s);
	kp_sched_copy(s, t + first * ro->esize, rbuf, counts[s->rank] * ro->esize);
}
