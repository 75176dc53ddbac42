// SPDX-License-Identifier: GPL-2.0
/*
 * Monitoring support of kmod/core/ring.c, post.c, match.c and cq.c: the
 * per-destination send counts every ring carries, and the completion
 * times of an endpoint joined with KPROG_JOIN_TIMES (Late Sender and Late
 * Receiver as seed 003 defines them). Through the ioctls (utils.c) with
 * the mock clock.
 */
#include "kprog.h"
#include "ep.h"
#include "op.h"
#include "msg.h"
#include "job.h"
#include <linux/mm.h>
#include "ktest.h"

static struct kprog_peer_count *peers(struct kt_ep *e)
{
	return (void *)e->ring + e->ring->peer_offset;
}

/* The times of the completion kt_pop() will return next. */
static struct kprog_cqe_times *next_times(struct kt_ep *e)
{
	struct kprog_cqe_times *t = (void *)e->ring + e->ring->times_offset;

	return &t[e->ring->head & (e->ring->entries - 1)];
}

/* A job of two: rank 0 joined with @flags0, rank 1 with @flags1. */
static void timed_pair(struct kt_ep **a, u32 flags0, struct kt_ep **b, u32 flags1)
{
	struct kprog_join j = { .abi_version = KPROG_ABI_VERSION, .size = 2 };

	j.job_key = kt_new_key();
	*a = kt_open();
	j.flags = flags0;
	ASSERT_OK(kt_join_req(*a, &j));
	*b = kt_open_as(mock_proc_new(1000));
	j.rank = 1;
	j.flags = flags1;
	ASSERT_OK(kt_join_req(*b, &j));
}

TEST(mon__sends_are_counted_per_destination_eager_and_rendezvous)
{
	static u8 big[20000];
	struct kt_ep *v[3];
	char s[64] = {};
	struct kprog_post p;
	int i;

	kt_job(v, 3);
	EXPECT(v[0]->ring->peer_offset != 0);
	for (i = 0; i < 3; i++)
		ASSERT_OK(kt_send(v[0], 2, 1, s, sizeof(s), i + 1, 0, &p));
	ASSERT_OK(kt_send(v[0], 2, 1, big, sizeof(big), 9, 0, &p));	/* rendezvous */
	EXPECT_EQ(p.done, 0);
	ASSERT_OK(kt_send(v[0], 1, 1, s, 0, 10, 0, &p));	/* empty: a message */
	EXPECT_EQ(peers(v[0])[2].msgs, 4);
	EXPECT_EQ(peers(v[0])[2].bytes, 3 * 64 + sizeof(big));
	EXPECT_EQ(peers(v[0])[1].msgs, 1);
	EXPECT_EQ(peers(v[0])[1].bytes, 0);
	EXPECT_EQ(peers(v[0])[0].msgs, 0);
	/* the receivers count nothing */
	EXPECT_EQ(peers(v[2])[0].msgs + peers(v[1])[0].msgs, 0);
}

TEST(mon__failed_sends_are_not_counted)
{
	struct kt_ep *a, *b;
	char s[8] = {};
	struct kprog_post p;

	kt_pair(&a, &b);
	EXPECT_ERR(kt_send(a, 2, 1, s, 8, 1, 0, &p), -EINVAL);	/* no rank 2 */
	EXPECT_ERR(kt_send(a, 1, -3, s, 8, 1, 0, &p), -EINVAL);
	EXPECT_ERR(kt_send(a, 1, 1, (void *)MOCK_BAD_UADDR, 8, 1, 0, &p), -EFAULT);
	kt_close(b);
	EXPECT_ERR(kt_send(a, 1, 1, s, 8, 1, 0, &p), -ECONNRESET);
	EXPECT_EQ(peers(a)[1].msgs, 0);
	EXPECT_EQ(peers(a)[1].bytes, 0);
}

TEST(mon__join_times_adds_a_times_slot_per_completion_slot)
{
	struct kt_ep *a, *b;
	u32 off;

	timed_pair(&a, 0, &b, KPROG_JOIN_TIMES);
	EXPECT_EQ(a->ring->times_offset, 0);
	off = b->ring->times_offset;
	EXPECT_EQ(off, ALIGN(b->ring->peer_offset + 2 * sizeof(struct kprog_peer_count), 64));
	EXPECT_EQ(b->join.ring_bytes,
		  PAGE_ALIGN(off + b->ring->entries * sizeof(struct kprog_cqe_times)));
	EXPECT_EQ(b->join.ring_bytes, b->ep->ring.bytes);
}

TEST(mon__late_sender_receive_gets_the_send_and_receive_post_times)
{
	struct kt_ep *a, *b;
	char s[64] = {}, r[64];
	struct kprog_post p;
	struct kprog_cqe_times t;

	timed_pair(&a, 0, &b, KPROG_JOIN_TIMES);
	mock_ktime = 1000;
	ASSERT_OK(kt_recv(b, 0, 4, r, sizeof(r), 7, 0, &p));
	EXPECT_EQ(p.done, 0);
	mock_ktime = 251000;		/* the sender is 250 us late */
	ASSERT_OK(kt_send(a, 1, 4, s, sizeof(s), 8, 0, &p));
	t = *next_times(b);
	EXPECT_CQE(b, 7, 64, 0);
	EXPECT_EQ(t.recv_ns, 1000);
	EXPECT_EQ(t.send_ns, 251000);
	EXPECT_EQ(t.match_ns, 251000);
	EXPECT_EQ(t.__reserved, 0);
}

TEST(mon__receive_after_a_rendezvous_send_has_no_late_sender)
{
	static u8 s[32 << 10], r[32 << 10];
	struct kt_ep *a, *b;
	struct kprog_post p;
	struct kprog_cqe_times tb, ta;

	timed_pair(&a, KPROG_JOIN_TIMES, &b, KPROG_JOIN_TIMES);
	mock_ktime = 5000;
	ASSERT_OK(kt_send(a, 1, 4, s, sizeof(s), 1, KPROG_SEND_SYNC, &p));
	mock_ktime = 9000;		/* the receiver is 4 us late */
	ASSERT_OK(kt_recv(b, 0, 4, r, sizeof(r), 2, 0, &p));
	EXPECT_EQ(p.done, 0);
	mock_ktime = 12000;
	EXPECT_EQ(mock_run_work(), 1);
	tb = *next_times(b);
	EXPECT_CQE(b, 2, sizeof(r), 0);
	ta = *next_times(a);
	EXPECT_CQE(a, 1, sizeof(s), 0);
	/* the receive: send before receive, Late Sender <= 0 */
	EXPECT_EQ(tb.send_ns, 5000);
	EXPECT_EQ(tb.recv_ns, 9000);
	EXPECT_EQ(tb.match_ns, 9000);
	/* the synchronous send: Late Receiver = match - send */
	EXPECT_EQ(ta.send_ns, 5000);
	EXPECT_EQ(ta.recv_ns, 9000);
	EXPECT_EQ(ta.match_ns, 9000);
}

TEST(mon__times_survive_a_ring_overflow)
{
	struct kt_ep *a, *b;
	char s[8] = {}, r[8][8];
	struct kprog_post p;
	struct kprog_cqe c;
	u32 i, n;

	kprog_ring_entries = 2;
	timed_pair(&a, 0, &b, KPROG_JOIN_TIMES);
	for (i = 0; i < 4; i++) {
		mock_ktime = 100 * (i + 1);
		ASSERT_OK(kt_recv(b, 0, i, r[i], 8, 10 + i, 0, &p));
	}
	for (i = 0; i < 4; i++) {
		mock_ktime = 10000 * (i + 1);
		ASSERT_OK(kt_send(a, 1, i, s, 8, 20 + i, 0, &p));
	}
	EXPECT_EQ(b->ring->overflow, 1);
	for (n = 0; n < 4; n++) {
		struct kprog_cqe_times t;

		if (n == 2)
			ASSERT_OK(kt_wait(b, 0));	/* moves the overflow in */
		t = *next_times(b);
		ASSERT(kt_pop(b, &c));
		EXPECT_EQ(c.req_id, 10 + n);
		EXPECT_EQ(t.recv_ns, 100 * (n + 1));
		EXPECT_EQ(t.send_ns, 10000 * (n + 1));
	}
}

TEST(mon__unknown_join_flags_are_still_refused)
{
	struct kt_ep *e = kt_open();
	struct kprog_join j = { .abi_version = KPROG_ABI_VERSION, .size = 1,
				.job_key = kt_new_key(), .flags = 1U << 3 };

	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);
}

TEST(mon__sends_read_the_clock_only_once_a_receiver_asked_for_times)
{
	struct kprog_join j = { .abi_version = KPROG_ABI_VERSION, .size = 3 };
	struct kt_ep *a, *b, *c;
	struct kprog_msg *m;
	char s[8] = {};
	struct kprog_post p;

	j.job_key = kt_new_key();
	a = kt_open();
	ASSERT_OK(kt_join_req(a, &j));
	b = kt_open_as(mock_proc_new(1000));
	j.rank = 1;
	ASSERT_OK(kt_join_req(b, &j));
	mock_ktime = 777;
	ASSERT_OK(kt_send(a, 1, 1, s, 8, 1, 0, &p));
	m = list_first_entry(&b->ep->unexpected, struct kprog_msg, qnode);	/* internal */
	EXPECT_EQ(m->send_ns, 0);
	EXPECT(!a->ep->job->times);
	c = kt_open_as(mock_proc_new(1000));
	j.rank = 2;
	j.flags = KPROG_JOIN_TIMES;
	ASSERT_OK(kt_join_req(c, &j));
	EXPECT(a->ep->job->times);
	ASSERT_OK(kt_send(a, 1, 1, s, 8, 2, 0, &p));
	m = list_last_entry(&b->ep->unexpected, struct kprog_msg, qnode);
	EXPECT_EQ(m->send_ns, 777);
}
