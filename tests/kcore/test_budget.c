// SPDX-License-Identifier: GPL-2.0
/*
 * The budgets of an endpoint and the liveness they must keep with small
 * limits: receives hold max_ops slots, rendezvous sends max_rndv
 * descriptors, a receive that finds its message already arrived is never
 * refused for want of a slot, and KPROG_RECV_ARRIVED takes such a message
 * without ever posting. Through the ioctls; "internal" marks looks inside.
 */
#include "kprog.h"
#include "ep.h"
#include "op.h"
#include "ktest.h"

#define BIG (64 << 10)		/* above the eager limit: rendezvous */

static u8 sbuf[4][BIG], rbuf[4][BIG];

TEST(budget__rendezvous_sends_take_max_rndv_not_max_ops)
{
	struct kt_ep *a, *b;
	char r[4];

	kt_pair(&a, &b);
	kprog_max_ops = 1;
	kprog_max_rndv = 2;
	ASSERT_OK(kt_send(a, 1, 0, sbuf[0], BIG, 1, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, sbuf[1], BIG, 2, 0, NULL));
	EXPECT_EQ(kt_nr_rndv(a), 2);
	EXPECT_ERR(kt_send(a, 1, 0, sbuf[2], BIG, 3, 0, NULL), -ENOBUFS);
	/* The max_ops slot is still free for a receive, and eager sends. */
	ASSERT_OK(kt_recv(a, 1, 9, r, 4, 4, 0, NULL));
	EXPECT_EQ(a->ep->nr_ops, 1);				/* internal */
	EXPECT_ERR(kt_recv(a, 1, 8, r, 4, 5, 0, NULL), -ENOBUFS);
	EXPECT_OK(kt_cancel(a, 4));
	EXPECT_CQE(a, 4, 0, -ECANCELED);
	EXPECT_OK(kt_send(a, 1, 0, r, 4, 6, 0, NULL));		/* eager */
	/* A descriptor returns when its send completes. */
	ASSERT_OK(kt_recv(b, 0, 0, rbuf[0], BIG, 7, 0, NULL));
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 7, BIG, 0);
	EXPECT_CQE(a, 1, BIG, 0);
	EXPECT_EQ(kt_nr_rndv(a), 1);
	EXPECT_OK(kt_send(a, 1, 0, sbuf[2], BIG, 3, 0, NULL));
	EXPECT_OK(kt_cancel(a, 2));
	EXPECT_OK(kt_cancel(a, 3));
	EXPECT_CQE(a, 2, 0, -ECANCELED);
	EXPECT_CQE(a, 3, 0, -ECANCELED);
	EXPECT_EQ(kt_nr_ops(a), 0);
}

TEST(budget__receive_of_an_arrived_message_needs_no_free_slot)
{
	struct kt_ep *a, *b;
	char s[4] = "abc", r[2][4], w[4];
	struct kprog_post p;

	kt_pair(&a, &b);
	kprog_max_ops = 1;
	ASSERT_OK(kt_recv(b, 0, 7, w, 4, 1, 0, NULL));		/* the slot */
	ASSERT_OK(kt_send(a, 1, 3, sbuf[0], BIG, 2, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 4, s, 4, 3, 0, NULL));		/* eager */
	/* Both messages are held: the receives go past the full budget. */
	ASSERT_OK(kt_recv(b, 0, 3, rbuf[0], BIG, 4, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(b->ep->nr_ops, 2);				/* internal */
	ASSERT_OK(kt_recv(b, 0, 4, r[0], 4, 5, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.bytes, 4);
	/* One that would have to wait is still refused. */
	EXPECT_ERR(kt_recv(b, 0, 5, r[1], 4, 6, 0, NULL), -ENOBUFS);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 4, BIG, 0);
	EXPECT_CQE(a, 2, BIG, 0);
	EXPECT_EQ(b->ep->nr_ops, 1);				/* internal */
	EXPECT_OK(kt_cancel(b, 1));
	EXPECT_CQE(b, 1, 0, -ECANCELED);
	EXPECT_EQ(kt_nr_ops(a) + kt_nr_ops(b), 0);
}

TEST(budget__recv_arrived_takes_a_held_message_or_fails_eagain)
{
	struct kt_ep *a, *b;
	char s[4] = "xyz", r[4] = "";
	struct kprog_post p;
	long live;

	kt_pair(&a, &b);
	kprog_max_ops = 1;
	live = mock_live_allocs;
	EXPECT_ERR(kt_recv(b, 0, 1, r, 4, 1, KPROG_RECV_ARRIVED, NULL),
		   -EAGAIN);
	EXPECT_EQ(mock_live_allocs, live);	/* nothing posted or kept */
	EXPECT_EQ(kt_nr_ops(b), 0);
	ASSERT_OK(kt_send(a, 1, 1, s, 4, 2, 0, NULL));
	/* Even with a posted receive holding the only slot. */
	ASSERT_OK(kt_recv(b, 0, 9, rbuf[1], 4, 3, 0, NULL));
	ASSERT_OK(kt_recv(b, KPROG_ANY_SOURCE, 1, r, 4, 4, KPROG_RECV_ARRIVED, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.bytes, 4);
	EXPECT(!strcmp(r, "xyz"));
	/* A rendezvous message: taken, completes through the transfer. */
	ASSERT_OK(kt_send(a, 1, 2, sbuf[0], BIG, 5, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 2, rbuf[0], BIG, 6, KPROG_RECV_ARRIVED, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 6, BIG, 0);
	EXPECT_CQE(a, 5, BIG, 0);
	EXPECT(!memcmp(rbuf[0], sbuf[0], BIG));
	EXPECT_OK(kt_cancel(b, 3));
	EXPECT_CQE(b, 3, 0, -ECANCELED);
	EXPECT_EQ(kt_nr_ops(a) + kt_nr_ops(b), 0);
}

TEST(budget__recv_arrived_from_a_rank_that_left_completes_econnreset)
{
	struct kt_ep *a, *b;
	char r[4];
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_close(a);
	ASSERT_OK(kt_recv(b, 0, 0, r, 4, 1, KPROG_RECV_ARRIVED, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_ERR(p.cqe.error, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(b), 0);
}

/*
 * The deadlock of issue 12 at the module's level: each side's only
 * max_ops slot holds a receive for the peer's second message while the
 * peer's first (rendezvous) send waits for a receive its owner could not
 * post. Sends no longer take that slot, and the receive for the first
 * message, kept back by the client, gets in past the full budget.
 */
TEST(budget__crossed_rendezvous_with_one_slot_each_make_progress)
{
	struct kt_ep *v[2];
	struct kprog_post p;
	int i, peer;

	kt_pair(&v[0], &v[1]);
	kprog_max_ops = 1;
	for (i = 0; i < 2; i++)
		kt_fill(sbuf[i], BIG, 10 + i);
	for (i = 0; i < 2; i++) {
		peer = !i;
		/* posted receive of the peer's message tagged 2 */
		ASSERT_OK(kt_recv(v[i], peer, 2, rbuf[2 + i], BIG, 10 + i, 0,
				  NULL));
		/* its own first message, tagged 1: waits at the peer */
		ASSERT_OK(kt_send(v[i], peer, 1, sbuf[i], BIG, 20 + i, 0,
				  NULL));
	}
	for (i = 0; i < 2; i++) {
		peer = !i;
		/* no slot for a receive that would wait */
		EXPECT_ERR(kt_recv(v[i], peer, 3, rbuf[i], BIG, 30 + i, 0,
				   NULL), -ENOBUFS);
		/* the receive for tag 1 the client kept back: plain, or
		 * asking only for an arrived message
		 */
		ASSERT_OK(kt_recv(v[i], peer, 1, rbuf[i], BIG, 30 + i,
				  i ? KPROG_RECV_ARRIVED : 0, &p));
		EXPECT_EQ(p.done, 0);
	}
	EXPECT_EQ(mock_run_work(), 2);
	for (i = 0; i < 2; i++) {
		struct kprog_cqe c[2];

		ASSERT(kt_pop(v[i], &c[0]) && kt_pop(v[i], &c[1]));
		EXPECT_EQ(c[0].req_id + c[1].req_id, 50 + 2 * i);
		EXPECT(kt_check(rbuf[i], BIG, 10 + !i));
		/* the second messages now flow into the posted receives */
		ASSERT_OK(kt_send(v[i], !i, 2, sbuf[i], BIG, 40 + i, 0, NULL));
	}
	EXPECT_EQ(mock_run_work(), 2);
	for (i = 0; i < 2; i++) {
		struct kprog_cqe c[2];

		ASSERT(kt_pop(v[i], &c[0]) && kt_pop(v[i], &c[1]));
		EXPECT_EQ(c[0].req_id + c[1].req_id, 50 + 2 * i);
		EXPECT(kt_check(rbuf[2 + i], BIG, 10 + !i));
		EXPECT_EQ(kt_nr_ops(v[i]), 0);
	}
}

TEST(budget__iovec_entries_of_a_receive_are_charged_when_it_is_posted)
{
	struct kt_ep *a, *b;
	char r1[2], r2[2], s[4] = "abc";
	struct kprog_iov iov[2] = { { (uintptr_t)r1, 2 }, { (uintptr_t)r2, 2 } };
	struct kprog_post p;

	kt_pair(&a, &b);
	kprog_max_iov_total = kprog_max_iov = 2;
	ASSERT_OK(kt_recv(b, 0, 0, iov, 2, 1, KPROG_POST_IOV, NULL));
	EXPECT_EQ(b->ep->iov_total, 2);				/* internal */
	EXPECT_ERR(kt_recv(b, 0, 1, iov, 2, 2, KPROG_POST_IOV, NULL),
		   -ENOBUFS);
	/* arrived: past the limit, and returned at once */
	ASSERT_OK(kt_send(a, 1, 1, s, 4, 3, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 1, iov, 2, 2, KPROG_POST_IOV, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(b->ep->iov_total, 2);				/* internal */
	EXPECT_OK(kt_cancel(b, 1));
	EXPECT_CQE(b, 1, 0, -ECANCELED);
	EXPECT_EQ(b->ep->iov_total, 0);				/* internal */
}
