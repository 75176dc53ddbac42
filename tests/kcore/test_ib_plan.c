// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/ib/ib_plan.c, the pure arithmetic of the ibverbs transport: the rule
 * both ends of a pair of nodes apply to one exchange of KPROG_IOC_NET_CONN
 * reports (played out over several exchanges here, as the shim repeats
 * them), and the credits of a connection.
 */
#include "ib_plan.h"
#include "ktest.h"

/* One end of a pair: its QP now and the peer QP it is connected to. */
struct end {
	u32 qpn;
	u32 remote;
	u32 next;	/* the QPN its next fresh QP gets */
};

/* PREPARE: a dropped end gets a fresh QP. */
static void prepare(struct end *e)
{
	if (!e->qpn) {
		e->qpn = e->next++;
		e->remote = 0;
	}
}

/* CONNECT on end @e with the reports of one exchange; true: connected. */
static bool connect(struct end *e, u32 reported, u32 rep_remote,
		    u32 peer_qpn, u32 peer_remote)
{
	switch (kprog_ib_pair_step(e->qpn, reported, e->remote, peer_qpn,
				   peer_remote)) {
	case KPROG_IB_PAIR_CONNECT:
		e->remote = peer_qpn;
		return true;
	case KPROG_IB_PAIR_READY:
		return true;
	case KPROG_IB_PAIR_RESET:
		e->qpn = 0;
		e->remote = 0;
		return false;
	default:
		return false;
	}
}

/* Exchanges until both ends say connected; returns how many (0: > 5). */
static int exchanges(struct end *a, struct end *b)
{
	int round;

	for (round = 1; round <= 5; round++) {
		u32 aq, ar, bq, br;
		bool ca, cb;

		prepare(a);
		prepare(b);
		aq = a->qpn;
		ar = a->remote;
		bq = b->qpn;
		br = b->remote;
		ca = connect(a, aq, ar, bq, br);
		cb = connect(b, bq, br, aq, ar);
		if (ca && cb) {
			EXPECT_EQ(a->remote, b->qpn);
			EXPECT_EQ(b->remote, a->qpn);
			return round;
		}
	}
	return 0;
}

TEST_NO_MODULE(ib_plan__two_fresh_ends_connect_in_one_exchange)
{
	struct end a = { .next = 10 }, b = { .next = 20 };

	EXPECT_EQ(exchanges(&a, &b), 1);
	/* the next job finds them connected: reused, nothing changes */
	EXPECT_EQ(exchanges(&a, &b), 1);
	EXPECT_EQ(a.qpn, 10);
	EXPECT_EQ(b.qpn, 20);
}

TEST_NO_MODULE(ib_plan__a_reloaded_peer_costs_one_more_exchange)
{
	struct end a = { .next = 10 }, b = { .next = 20 };

	EXPECT_EQ(exchanges(&a, &b), 1);
	/* b's module reloaded: a fresh end; a still holds the old pair */
	b = (struct end){ .next = 30 };
	EXPECT_EQ(exchanges(&a, &b), 2);
	EXPECT_EQ(a.qpn, 11);	/* a dropped its stale end */
	EXPECT_EQ(b.qpn, 30);
}

TEST_NO_MODULE(ib_plan__stale_ends_on_both_sides_are_both_dropped)
{
	struct end a = { .qpn = 10, .remote = 99, .next = 11 };
	struct end b = { .qpn = 20, .remote = 98, .next = 21 };

	EXPECT_EQ(exchanges(&a, &b), 2);
	EXPECT_EQ(a.qpn, 11);
	EXPECT_EQ(b.qpn, 21);
}

TEST_NO_MODULE(ib_plan__the_rule_case_by_case)
{
	/* an end that changed since it reported waits */
	EXPECT_EQ(kprog_ib_pair_step(11, 10, 0, 20, 0), KPROG_IB_PAIR_WAIT);
	EXPECT_EQ(kprog_ib_pair_step(0, 10, 0, 20, 0), KPROG_IB_PAIR_WAIT);
	/* fresh facing fresh, or facing a peer already connected to it */
	EXPECT_EQ(kprog_ib_pair_step(10, 10, 0, 20, 0), KPROG_IB_PAIR_CONNECT);
	EXPECT_EQ(kprog_ib_pair_step(10, 10, 0, 20, 10), KPROG_IB_PAIR_CONNECT);
	/* connected, the peer fresh with that QP (another job connects it) */
	EXPECT_EQ(kprog_ib_pair_step(10, 10, 20, 20, 0), KPROG_IB_PAIR_READY);
	EXPECT_EQ(kprog_ib_pair_step(10, 10, 20, 20, 10), KPROG_IB_PAIR_READY);
	/* connected to a QP the peer no longer has */
	EXPECT_EQ(kprog_ib_pair_step(10, 10, 20, 21, 0), KPROG_IB_PAIR_RESET);
	/* fresh, the peer still connected to an old QP of this node */
	EXPECT_EQ(kprog_ib_pair_step(10, 10, 0, 20, 9), KPROG_IB_PAIR_WAIT);
}

TEST_NO_MODULE(ib_plan__credits_keep_the_last_for_a_return)
{
	struct kprog_ib_credits c;
	int sent = 0;

	kprog_ib_credits_init(&c, 4, 4);
	while (kprog_ib_credits_may_send(&c, false)) {
		kprog_ib_credits_take(&c);
		sent++;
	}
	EXPECT_EQ(sent, 3);
	/* the last credit only goes with buffers to return */
	EXPECT(!kprog_ib_credits_may_send(&c, true));
	kprog_ib_credits_reposted(&c);
	EXPECT(kprog_ib_credits_may_send(&c, true));
	EXPECT_EQ(kprog_ib_credits_grant(&c, 3), 0);
	EXPECT(kprog_ib_credits_may_send(&c, false));
	/* credits never taken are a protocol error */
	EXPECT_EQ(kprog_ib_credits_grant(&c, 5), -EPROTO);
}
