/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog_ib plans: the arithmetic of the protocol, kept apart from the
 * verbs so that it is tested natively (tests/kcore): credit accounting of
 * a connection, how a buffer is cut into registrations and READs, and
 * the rule that connects the two ends of a pair of nodes.
 */
#ifndef _KPROG_IB_PLAN_H
#define _KPROG_IB_PLAN_H

#include <linux/types.h>
#include <linux/kprog.h>

/**
 * struct kprog_ib_credits - credits of one end of a connection
 * @avail: receive buffers of the peer this end may fill
 * @inflight: messages sent whose buffers the peer has not returned
 * @owed: this end's buffers reposted and not yet returned to the peer
 * @threshold: @owed at which a CREDIT message is worth sending alone
 *
 * Every message takes one of the peer's buffers (@avail) and carries the
 * buffers this end reposted (@owed). The last credit is kept for a
 * message that returns credits: when both ends are down to it, each can
 * still tell the other, so neither waits for the other for ever.
 */
struct kprog_ib_credits {
	u32 avail;
	u32 inflight;
	u32 owed;
	u32 threshold;
};

void kprog_ib_credits_init(struct kprog_ib_credits *c, u32 peer_bufs,
			   u32 own_bufs);
bool kprog_ib_credits_may_send(const struct kprog_ib_credits *c,
			       bool returns_only);
u16 kprog_ib_credits_take(struct kprog_ib_credits *c);
int kprog_ib_credits_grant(struct kprog_ib_credits *c, u16 n);
void kprog_ib_credits_reposted(struct kprog_ib_credits *c);
bool kprog_ib_credits_want_return(const struct kprog_ib_credits *c,
				  bool data_waiting);

/**
 * enum kprog_ib_pair_step - what an end does with the peer's report
 * @KPROG_IB_PAIR_WAIT: nothing now; exchange again
 * @KPROG_IB_PAIR_CONNECT: connect this fresh end to the peer's QP
 * @KPROG_IB_PAIR_READY: connected to each other already
 * @KPROG_IB_PAIR_RESET: this end is connected to a QP the peer no longer
 *	has: drop it, exchange again
 */
enum kprog_ib_pair_step {
	KPROG_IB_PAIR_WAIT,
	KPROG_IB_PAIR_CONNECT,
	KPROG_IB_PAIR_READY,
	KPROG_IB_PAIR_RESET,
};

enum kprog_ib_pair_step kprog_ib_pair_step(u32 qpn, u32 reported, u32 remote,
					   u32 peer_qpn, u32 peer_remote);

u64 kprog_ib_span(const struct kprog_iov *iov, u32 nr_iov, u64 pos, u64 len,
		  u32 max_pages, bool gaps);
u32 kprog_ib_span_pages(const struct kprog_iov *iov, u32 nr_iov, u64 pos,
			u64 len);

#endif /* _KPROG_IB_PLAN_H */
