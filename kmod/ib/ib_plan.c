// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib plans: credit accounting of a connection and the cutting of a
 * buffer into registrations (chunks) and READs (pieces). Pure functions:
 * the callers hold whatever lock protects their arguments; any context.
 *
 * Credits. Each end posts a fixed number of receive buffers and learns
 * the peer's number when the connection is made. A message consumes one
 * of the peer's buffers and returns the buffers this end reposted since
 * its last message (piggybacked in the header). An end keeps its last
 * credit for a message that returns credits, and sends a CREDIT message
 * alone when it owes at least half of its buffers and has nothing else to
 * send them with. No deadlock: an end that is down to its last credit has
 * R - 1 messages at the peer, whose reposted buffers soon reach the
 * threshold, and the peer may spend its last credit to return them.
 *
 * Chunks. One fast registration maps a virtually contiguous range of up
 * to max_pages pages: only its first page may start inside a page and
 * only its last may end inside one. A chunk of a non-contiguous buffer
 * therefore crosses from one segment to the next only where both meet at
 * page boundaries; elsewhere it ends with its segment. READs scatter into
 * a list of pages, so a piece may join segments anywhere; it is bounded
 * by the number of page entries (one per page) of one READ context.
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/errno.h>
#include "ib_plan.h"

/**
 * kprog_ib_credits_init() - credits of a connection that was just made
 * @c: the accounting
 * @peer_bufs: receive buffers the peer posted (from its connection data)
 * @own_bufs: receive buffers this end posted
 */
void kprog_ib_credits_init(struct kprog_ib_credits *c, u32 peer_bufs,
			   u32 own_bufs)
{
	c->avail = peer_bufs;
	c->inflight = 0;
	c->owed = 0;
	c->threshold = max(own_bufs / 2, 1U);
}

/**
 * kprog_ib_credits_may_send() - may one more message go now?
 * @c: the accounting
 * @returns_only: a CREDIT message, which only returns buffers
 *
 * Return: true if a buffer of the peer is available for it: the last one
 * only for a message that returns at least one buffer.
 */
bool kprog_ib_credits_may_send(const struct kprog_ib_credits *c,
			       bool returns_only)
{
	if (returns_only)
		return c->avail >= 1 && c->owed;
	return c->avail >= 2 || (c->avail == 1 && c->owed);
}

/**
 * kprog_ib_credits_take() - a message is posted
 * @c: the accounting; kprog_ib_credits_may_send() said yes
 *
 * Return: the credits the message returns (its header's field).
 */
u16 kprog_ib_credits_take(struct kprog_ib_credits *c)
{
	u16 n = min_t(u32, c->owed, U16_MAX);

	c->avail--;
	c->inflight++;
	c->owed -= n;
	return n;
}

/**
 * kprog_ib_credits_grant() - a received message returned @n buffers
 * @c: the accounting
 * @n: its header's credits
 *
 * Return: 0, or -EPROTO when the peer returns buffers that were never
 * taken (the message is dropped, the count left alone).
 */
int kprog_ib_credits_grant(struct kprog_ib_credits *c, u16 n)
{
	if (n > c->inflight)
		return -EPROTO;
	c->inflight -= n;
	c->avail += n;
	return 0;
}

/**
 * kprog_ib_credits_reposted() - a receive buffer was posted again
 * @c: the accounting
 */
void kprog_ib_credits_reposted(struct kprog_ib_credits *c)
{
	c->owed++;
}

/**
 * kprog_ib_credits_want_return() - should a CREDIT message go now?
 * @c: the accounting
 * @data_waiting: messages wait that could not go (they would carry the
 *	credits otherwise)
 *
 * Return: true when enough buffers are owed and nothing else returns them.
 */
bool kprog_ib_credits_want_return(const struct kprog_ib_credits *c,
				  bool data_waiting)
{
	if (c->owed < c->threshold || !kprog_ib_credits_may_send(c, true))
		return false;
	return !data_waiting || !kprog_ib_credits_may_send(c, false);
}

/* The segment and offset of byte @pos; false past the end. */
static bool kprog_ib_seek(const struct kprog_iov *iov, u32 nr_iov, u64 pos,
			  u32 *idx, u64 *off)
{
	u32 i;

	for (i = 0; i < nr_iov; i++) {
		if (pos < iov[i].len) {
			*idx = i;
			*off = pos;
			return true;
		}
		pos -= iov[i].len;
	}
	return false;
}

/**
 * kprog_ib_span() - how much of a buffer one registration or one READ
 *	covers from a position
 * @iov: the buffer's segments, none empty
 * @nr_iov: entries in @iov
 * @pos: byte position in the buffer
 * @len: at most this many bytes
 * @max_pages: pages (page entries) available
 * @gaps: a READ's scatter list, where segments may join anywhere, rather
 *	than one registration, where they join only at page boundaries
 *
 * Return: bytes from @pos (at least one when @len, @max_pages and the
 * buffer beyond @pos are not empty).
 */
u64 kprog_ib_span(const struct kprog_iov *iov, u32 nr_iov, u64 pos, u64 len,
		  u32 max_pages, bool gaps)
{
	u64 done = 0, off, n, addr;
	u32 i, pages = 0, np, first;

	if (!kprog_ib_seek(iov, nr_iov, pos, &i, &off))
		return 0;
	while (done < len && i < nr_iov) {
		addr = iov[i].base + off;
		n = min(iov[i].len - off, len - done);
		first = offset_in_page(addr);
		np = DIV_ROUND_UP(first + n, PAGE_SIZE);
		if (np > max_pages - pages) {
			/* Up to the end of the last page that fits. */
			if (max_pages > pages)
				done += (u64)(max_pages - pages) * PAGE_SIZE -
					first;
			break;
		}
		pages += np;
		done += n;
		if (done == len || i + 1 == nr_iov)
			break;
		/* One registration continues only page to page. */
		if (!gaps && (offset_in_page(addr + n) ||
			      offset_in_page(iov[i + 1].base)))
			break;
		i++;
		off = 0;
	}
	return done;
}

/**
 * kprog_ib_span_pages() - page entries of a range of a buffer
 * @iov: the buffer's segments
 * @nr_iov: entries in @iov
 * @pos: byte position in the buffer
 * @len: bytes (within the buffer)
 *
 * Return: the pages under each segment's part of the range, summed.
 */
u32 kprog_ib_span_pages(const struct kprog_iov *iov, u32 nr_iov, u64 pos,
			u64 len)
{
	u64 off, n, addr;
	u32 i, pages = 0;

	if (!kprog_ib_seek(iov, nr_iov, pos, &i, &off))
		return 0;
	for (; len && i < nr_iov; i++, off = 0) {
		addr = iov[i].base + off;
		n = min(iov[i].len - off, len);
		pages += DIV_ROUND_UP(offset_in_page(addr) + n, PAGE_SIZE);
		len -= n;
	}
	return pages;
}

/**
 * kprog_ib_pair_step() - the rule both ends of a pair of nodes apply to
 *	the reports of one exchange (KPROG_IOC_NET_CONN)
 * @qpn: this end's QP now (0: none)
 * @reported: the QP this end reported in the exchange
 * @remote: the peer QP this end is connected to (0: fresh)
 * @peer_qpn: the QP the peer reported
 * @peer_remote: the QP of this node the peer reported being connected to
 *	(0: fresh)
 *
 * Each end sees the other's report and its own state, and both decide
 * alike: connected to each other, both are READY; a fresh end whose peer
 * is fresh or already connected to it CONNECTs (so two fresh ends connect
 * in one exchange); an end connected to a QP the peer no longer has is
 * RESET (the peer's module was reloaded or its QP died); anything else,
 * such as an end that changed since it reported or a peer that still
 * holds a stale end of its own, WAITs for the next exchange, where the
 * peer has dropped its stale end. Two fresh ends therefore connect in one
 * exchange, a stale end on one side in two, on both sides in three.
 *
 * Return: enum kprog_ib_pair_step.
 */
enum kprog_ib_pair_step kprog_ib_pair_step(u32 qpn, u32 reported, u32 remote,
					   u32 peer_qpn, u32 peer_remote)
{
	if (!qpn || qpn != reported)
		return KPROG_IB_PAIR_WAIT;
	if (remote && remote != peer_qpn)
		return KPROG_IB_PAIR_RESET;
	if (peer_remote && peer_remote != qpn)
		return KPROG_IB_PAIR_WAIT;
	return remote ? KPROG_IB_PAIR_READY : KPROG_IB_PAIR_CONNECT;
}
