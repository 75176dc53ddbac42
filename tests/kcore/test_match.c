// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/match.c, post.c, eager.c, rndv.c between endpoints of one node:
 * the one arrival path, eager and rendezvous sends, the unexpected queue,
 * wildcards, order, probe and mprobe, cancel, truncation, the departure
 * of endpoints, and what the ring publishes per source (held, unexp,
 * flags, events). Through the ioctls (utils.c); the few checks that look
 * inside are marked "internal".
 */
#include "kprog.h"
#include "ep.h"
#include "op.h"
#include "msg.h"
#include "match.h"
#include "transport.h"
#include "stats.h"
#include "ktest.h"

#define ANY_SRC KPROG_ANY_SOURCE
#define ANY_TAG KPROG_ANY_TAG

static u64 stat(enum kprog_stat s)
{
	struct kprog_stats v;

	kprog_stats_read(0, &v);
	return v.v[s];
}

static struct kprog_probe probe_req(s32 source, s32 tag, u32 flags)
{
	return (struct kprog_probe){ .source = source, .tag = tag,
				     .flags = flags };
}

TEST(match__eager_send_to_a_posted_receive_is_copied_at_once)
{
	struct kt_ep *a, *b;
	char sbuf[64], rbuf[100] = {};
	struct kprog_post ps, pr;
	u64 bytes = stat(KPROG_STAT_BYTES);

	kt_pair(&a, &b);
	kt_fill(sbuf, 64, 1);
	ASSERT_OK(kt_recv(b, 0, 5, rbuf, sizeof(rbuf), 11, 0, &pr));
	EXPECT_EQ(pr.done, 0);
	ASSERT_OK(kt_send(a, 1, 5, sbuf, 64, 21, 0, &ps));
	EXPECT_EQ(ps.done, 1);
	EXPECT_EQ(ps.cqe.req_id, 21);
	EXPECT_EQ(ps.cqe.bytes, 64);
	EXPECT_EQ(ps.cqe.source, 1);
	EXPECT_EQ(ps.cqe.tag, 5);
	EXPECT_EQ(ps.cqe.error, 0);
	EXPECT_EQ(mock_work_queued(), 0);	/* copied in the sender's call */
	EXPECT_CQE(b, 11, 64, 0);
	EXPECT(kt_check(rbuf, 64, 1));
	EXPECT_EQ(stat(KPROG_STAT_BYTES) - bytes, 64);
	EXPECT_EQ(kt_ring_count(a), 0);
}

TEST(match__eager_send_before_the_receive_is_copied_out_by_the_receive)
{
	struct kt_ep *a, *b;
	char sbuf[64], rbuf[64] = {};
	struct kprog_post ps, pr;

	kt_pair(&a, &b);
	kt_fill(sbuf, 64, 2);
	ASSERT_OK(kt_send(a, 1, 5, sbuf, 64, 21, 0, &ps));
	EXPECT_EQ(ps.done, 1);
	memset(sbuf, 0, sizeof(sbuf));	/* the send buffer is free again */
	EXPECT_EQ(b->ep->eager_bytes, 64 + KPROG_EAGER_OVERHEAD); /* internal */
	ASSERT_OK(kt_recv(b, 0, 5, rbuf, 64, 11, 0, &pr));
	EXPECT_EQ(pr.done, 1);
	EXPECT_EQ(pr.cqe.req_id, 11);
	EXPECT_EQ(pr.cqe.bytes, 64);
	EXPECT_EQ(pr.cqe.source, 0);
	EXPECT_EQ(pr.cqe.tag, 5);
	EXPECT(kt_check(rbuf, 64, 2));
	EXPECT_EQ(b->ep->eager_bytes, 0);			/* internal */
	EXPECT_EQ(kt_nr_ops(b), 0);
}

TEST(match__eager_message_outlives_its_sender)
{
	struct kt_ep *a, *b;
	char sbuf[8] = "kprog", rbuf[8] = {};
	struct kprog_post pr;

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, sbuf, 6, 1, 0, NULL));
	kt_close(a);
	ASSERT_OK(kt_recv(b, 0, 0, rbuf, 8, 2, 0, &pr));
	EXPECT_EQ(pr.done, 1);
	EXPECT_EQ(pr.cqe.error, 0);
	EXPECT(!strcmp(rbuf, "kprog"));
}

TEST(match__receive_shorter_than_the_message_is_truncated_with_emsgsize)
{
	struct kt_ep *a, *b;
	char sbuf[64], rbuf[64];
	struct kprog_post pr;

	kt_pair(&a, &b);
	kt_fill(sbuf, 64, 3);
	/* buffered, then received */
	ASSERT_OK(kt_send(a, 1, 0, sbuf, 64, 1, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, rbuf, 10, 2, 0, &pr));
	EXPECT_EQ(pr.done, 1);
	EXPECT_EQ(pr.cqe.bytes, 10);
	EXPECT_ERR(pr.cqe.error, -EMSGSIZE);
	EXPECT(kt_check(rbuf, 10, 3));
	/* posted, then sent */
	ASSERT_OK(kt_recv(b, 0, 0, rbuf, 10, 3, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, sbuf, 64, 4, 0, NULL));
	EXPECT_CQE(b, 3, 10, -EMSGSIZE);
}

TEST(match__wildcards_match_any_source_and_any_tag)
{
	struct kt_ep *v[3];
	char buf[4] = "abc", rbuf[4];
	struct kprog_post pr;
	struct kprog_cqe c;

	kt_job(v, 3);
	ASSERT_OK(kt_recv(v[0], ANY_SRC, ANY_TAG, rbuf, 4, 1, 0, &pr));
	ASSERT_OK(kt_send(v[2], 0, 7, buf, 4, 2, 0, NULL));
	ASSERT(kt_pop(v[0], &c));
	EXPECT_EQ(c.source, 2);
	EXPECT_EQ(c.tag, 7);
	ASSERT_OK(kt_send(v[1], 0, 8, buf, 4, 3, 0, NULL));
	ASSERT_OK(kt_recv(v[0], 1, ANY_TAG, rbuf, 4, 4, 0, &pr));
	EXPECT_EQ(pr.done, 1);
	EXPECT_EQ(pr.cqe.tag, 8);
	ASSERT_OK(kt_send(v[2], 0, 9, buf, 4, 5, 0, NULL));
	ASSERT_OK(kt_recv(v[0], ANY_SRC, 9, rbuf, 4, 6, 0, &pr));
	EXPECT_EQ(pr.done, 1);
	EXPECT_EQ(pr.cqe.source, 2);
}

TEST(match__messages_of_one_sender_are_received_in_order)
{
	struct kt_ep *a, *b;
	char s1[4] = "one", s2[4] = "two", r[4];
	struct kprog_post pr;

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 1, s1, 4, 1, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 2, s2, 4, 2, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, ANY_TAG, r, 4, 3, 0, &pr));
	EXPECT_EQ(pr.cqe.tag, 1);
	EXPECT(!strcmp(r, "one"));
	ASSERT_OK(kt_recv(b, 0, ANY_TAG, r, 4, 4, 0, &pr));
	EXPECT_EQ(pr.cqe.tag, 2);
	EXPECT(!strcmp(r, "two"));
}

TEST(match__context_and_tag_must_match)
{
	struct kt_ep *a, *b;
	char s[4] = "abc", r[4];
	struct kprog_post p = {
		.req_id = 1, .addr = (uintptr_t)s, .len = 4, .context = 5,
		.peer = 1, .tag = 3,
	};
	struct kprog_post q = {
		.req_id = 2, .addr = (uintptr_t)r, .len = 4, .context = 5,
		.peer = 0, .tag = 3,
	};

	kt_pair(&a, &b);
	ASSERT_OK(kt_ioctl(a, KPROG_IOC_SEND, &p));
	ASSERT_OK(kt_recv(b, 0, 3, r, 4, 3, 0, NULL));	/* context 0 */
	ASSERT_OK(kt_recv(b, 0, 4, r, 4, 4, 0, NULL));	/* other tag */
	EXPECT_EQ(kt_nr_ops(b), 2);			/* both posted */
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &q));
	EXPECT_EQ(q.done, 1);
	EXPECT_OK(kt_cancel(b, 3));
	EXPECT_OK(kt_cancel(b, 4));
}

TEST(match__send_errnos)
{
	struct kt_ep *v[3], *c = kt_open();
	char s[4];
	u64 key = kt_new_key();

	v[0] = kt_open();
	v[1] = kt_open_as(mock_proc_new(1000));
	ASSERT_OK(kt_join(v[0], key, 0, 3));
	ASSERT_OK(kt_join(v[1], key, 1, 3));
	EXPECT_ERR(kt_send(v[0], 1, 0, s, 4, 1, 0x80, NULL), -EINVAL);
	EXPECT_ERR(kt_send(v[0], 1, 0, s, 4, 1, KPROG_RECV_MESSAGE, NULL),
		   -EINVAL);
	EXPECT_ERR(kt_send(v[0], -1, 0, s, 4, 1, 0, NULL), -EINVAL);
	EXPECT_ERR(kt_send(v[0], 3, 0, s, 4, 1, 0, NULL), -EINVAL);
	EXPECT_ERR(kt_send(v[0], 1, -1, s, 4, 1, 0, NULL), -EINVAL);
	/* rank 2 never joined */
	EXPECT_ERR(kt_send(v[0], 2, 0, s, 4, 1, 0, NULL), -ECONNRESET);
	EXPECT_ERR(kt_send(v[0], 2, 0, s, 1 << 20, 1, 0, NULL), -ECONNRESET);
	EXPECT_ERR(kt_send(v[0], 1, 0, (void *)MOCK_BAD_UADDR, 4, 1, 0, NULL),
		   -EFAULT);
	EXPECT_EQ(kt_nr_ops(v[0]), 0);
	/* A rendezvous send to itself waits like any other. */
	ASSERT_OK(kt_join(c, kt_new_key(), 0, 1));
	EXPECT_OK(kt_send(c, 0, 0, s, 1 << 20, 1, 0, NULL));
	EXPECT_OK(kt_cancel(c, 1));
	EXPECT_CQE(c, 1, 0, -ECANCELED);
}

TEST(match__recv_errnos)
{
	struct kt_ep *a, *b;
	char r[4];

	kt_pair(&a, &b);
	EXPECT_ERR(kt_recv(b, 0, 0, r, 4, 1, KPROG_SEND_SYNC, NULL), -EINVAL);
	EXPECT_ERR(kt_recv(b, -2, 0, r, 4, 1, 0, NULL), -EINVAL);
	EXPECT_ERR(kt_recv(b, 2, 0, r, 4, 1, 0, NULL), -EINVAL);
	EXPECT_ERR(kt_recv(b, 0, -2, r, 4, 1, 0, NULL), -EINVAL);
	EXPECT_ERR(kt_recv(b, 0, 0, r, KPROG_MAX_MSG + 1, 1, 0, NULL), -EINVAL);
	EXPECT_ERR(kt_recv(b, 0, 0, r, 4, 1, KPROG_RECV_MESSAGE, NULL),
		   -ENOENT);
	EXPECT_EQ(kt_nr_ops(b), 0);
}

/* Internal: the receiver's departure caught between lookup and lock. */
TEST(match__send_to_a_receiver_that_is_leaving_is_econnreset)
{
	struct kt_ep *a, *b;
	char s[4];

	kt_pair(&a, &b);
	b->ep->dead = true;
	EXPECT_ERR(kt_send(a, 1, 0, s, 4, 1, 0, NULL), -ECONNRESET);
	b->ep->dead = false;
	EXPECT_EQ(kt_nr_ops(a), 0);
}

TEST(match__eager_iovec_send_frees_its_array_at_once)
{
	struct kt_ep *a, *b;
	char s1[3] = "ab", s2[3] = "cd", r[6] = {};
	struct kprog_iov iov[2] = { { (uintptr_t)s1, 2 }, { (uintptr_t)s2, 3 } };
	struct kprog_post p;
	long live;

	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, r, 6, 1, 0, NULL));
	live = mock_live_allocs;
	ASSERT_OK(kt_send(a, 1, 0, iov, 2, 2, KPROG_POST_IOV, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(a->ep->iov_total, 0);			/* internal */
	EXPECT_EQ(mock_live_allocs, live - 1);	/* b's receive is done */
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_CQE(b, 1, 5, 0);
	EXPECT(!strcmp(r, "abcd"));
	/* and when it waits in the unexpected queue */
	ASSERT_OK(kt_send(a, 1, 0, iov, 2, 3, KPROG_POST_IOV, &p));
	EXPECT_EQ(a->ep->iov_total, 0);			/* internal */
	ASSERT_OK(kt_recv(b, 0, 0, r, 6, 4, 0, &p));
	EXPECT_EQ(p.cqe.bytes, 5);
}

TEST(match__receive_from_a_rank_that_left_fails_at_once)
{
	struct kt_ep *a, *b;
	char r[4];
	struct kprog_post pr;

	kt_pair(&a, &b);
	kt_close(a);
	ASSERT_OK(kt_recv(b, 0, 0, r, 4, 1, 0, &pr));
	EXPECT_EQ(pr.done, 1);
	EXPECT_ERR(pr.cqe.error, -ECONNRESET);
	EXPECT_EQ(pr.cqe.source, 0);
	ASSERT_OK(kt_recv(b, ANY_SRC, 0, r, 4, 2, 0, &pr));
	EXPECT_EQ(pr.done, 0);		/* someone else may still send */
	EXPECT_ERR(kt_send(b, 0, 0, r, 4, 3, 0, NULL), -ECONNRESET);
}

TEST(match__eager_over_the_receivers_quota_goes_by_rendezvous)
{
	struct kt_ep *a, *b;
	char s1[700], s2[700], r[700];
	struct kprog_post p;

	kprog_eager_quota = 1024;	/* eager limit 1024 - 256 */
	kt_pair(&a, &b);
	kt_fill(s1, 700, 1);
	kt_fill(s2, 700, 2);
	ASSERT_OK(kt_send(a, 1, 0, s1, 700, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	ASSERT_OK(kt_send(a, 1, 0, s2, 700, 2, 0, &p));
	EXPECT_EQ(p.done, 0);		/* over quota */
	ASSERT_OK(kt_recv(b, 0, 0, r, 700, 3, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT(kt_check(r, 700, 1));
	/* small enough to be copied in the receiver's call */
	ASSERT_OK(kt_recv(b, 0, 0, r, 700, 4, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(mock_work_queued(), 0);
	EXPECT_CQE(b, 4, 700, 0);
	EXPECT_CQE(a, 2, 700, 0);
	EXPECT(kt_check(r, 700, 2));
}

TEST(match__rendezvous_goes_through_the_workqueue)
{
	static u8 s[64 << 10], r[64 << 10];
	struct kt_ep *a, *b;
	struct kprog_post p;
	u64 items = stat(KPROG_STAT_WORK_ITEMS);

	kt_pair(&a, &b);
	kt_fill(s, sizeof(s), 4);
	ASSERT_OK(kt_send(a, 1, 3, s, sizeof(s), 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	ASSERT_OK(kt_recv(b, 0, 3, r, sizeof(r), 2, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(kt_ring_count(a) + kt_ring_count(b), 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, sizeof(r), 0);
	EXPECT_CQE(a, 1, sizeof(s), 0);
	EXPECT(kt_check(r, sizeof(r), 4));
	EXPECT_EQ(stat(KPROG_STAT_WORK_ITEMS) - items, 1);
}

TEST(match__rendezvous_with_the_receive_posted_first)
{
	static u8 s[40000], r[50000];
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(s, sizeof(s), 5);
	ASSERT_OK(kt_recv(b, ANY_SRC, ANY_TAG, r, sizeof(r), 2, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 3, s, sizeof(s), 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, sizeof(s), 0);
	EXPECT_CQE(a, 1, sizeof(s), 0);
	EXPECT(kt_check(r, sizeof(s), 5));
}

TEST(match__synchronous_sends_wait_for_the_receive)
{
	struct kt_ep *a, *b;
	char s[100], r[100];
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(s, 100, 6);
	ASSERT_OK(kt_send(a, 1, 0, s, 100, 1, KPROG_SEND_SYNC, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(kt_ring_count(a), 0);
	ASSERT_OK(kt_recv(b, 0, 0, r, 100, 2, 0, NULL));
	EXPECT_CQE(a, 1, 100, 0);
	EXPECT_CQE(b, 2, 100, 0);
	EXPECT(kt_check(r, 100, 6));
	/* empty: completes without the transport */
	ASSERT_OK(kt_send(a, 1, 0, s, 0, 3, KPROG_SEND_SYNC, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, r, 100, 4, 0, NULL));
	EXPECT_CQE(a, 3, 0, 0);
	EXPECT_CQE(b, 4, 0, 0);
}

TEST(match__probe_finds_a_message_without_taking_it)
{
	struct kt_ep *a, *b;
	char s[30], r[30];
	struct kprog_probe pr = probe_req(ANY_SRC, ANY_TAG, 0);
	struct kprog_post p;

	kt_pair(&a, &b);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 0);
	ASSERT_OK(kt_send(a, 1, 4, s, 30, 1, 0, NULL));
	pr = probe_req(0, 4, 0);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.out_source, 0);
	EXPECT_EQ(pr.out_tag, 4);
	EXPECT_EQ(pr.bytes, 30);
	pr = probe_req(0, 5, 0);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 0);
	ASSERT_OK(kt_recv(b, 0, 4, r, 30, 2, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_ERR(kt_probe(b, &(struct kprog_probe){ .source = 2 }), -EINVAL);
	EXPECT_ERR(kt_probe(b, &(struct kprog_probe){ .source = -2 }), -EINVAL);
	EXPECT_ERR(kt_probe(b, &(struct kprog_probe){ .tag = -2 }), -EINVAL);
}

TEST(match__mprobe_keeps_the_message_for_a_receive_by_msg_id)
{
	struct kt_ep *a, *b;
	char s[8] = "mprobe", r[8] = {};
	struct kprog_probe pr = probe_req(ANY_SRC, ANY_TAG, KPROG_PROBE_DEQUEUE);
	struct kprog_post q = {
		.req_id = 3, .addr = (uintptr_t)r, .len = 8,
		.flags = KPROG_RECV_MESSAGE, .msg_id = 77,
	};
	struct kprog_post p;

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 1, s, 7, 1, 0, NULL));
	pr.msg_id = 77;
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	/* gone for ordinary receives and probes */
	pr = probe_req(ANY_SRC, ANY_TAG, 0);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 0);
	ASSERT_OK(kt_recv(b, ANY_SRC, ANY_TAG, r, 8, 2, 0, &p));
	EXPECT_EQ(p.done, 0);
	/* the msg_id is taken */
	ASSERT_OK(kt_send(a, 1, 1, s, 7, 4, KPROG_SEND_SYNC, NULL));
	pr = probe_req(ANY_SRC, ANY_TAG, KPROG_PROBE_DEQUEUE);
	pr.msg_id = 77;
	EXPECT_ERR(kt_probe(b, &pr), -EEXIST);
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &q));
	EXPECT_EQ(q.done, 1);
	EXPECT_EQ(q.cqe.bytes, 7);
	EXPECT(!strcmp(r, "mprobe"));
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV, &q), -ENOENT);
}

static struct kt_ep *hook_from;

static void send_from_hook(void *arg)
{
	char s[4] = "hi";

	EXPECT_OK(kt_send(hook_from, 1, 9, s, 3, 50, 0, NULL));
	mock_schedule_hook = NULL;
}

TEST(match__blocking_probe_sleeps_until_a_message_arrives)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(0, 9, KPROG_PROBE_BLOCK);

	kt_pair(&a, &b);
	hook_from = a;
	mock_schedule_hook = send_from_hook;
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.bytes, 3);
	EXPECT_EQ(mock_schedules, 1);
}

static void kick_then_send(void *arg)
{
	u32 rank = 1;

	EXPECT_OK(kt_ioctl(hook_from, KPROG_IOC_KICK, &rank));
	mock_schedule_hook = send_from_hook;
}

static void close_from_hook(void *arg)
{
	kt_close(hook_from);
	mock_schedule_hook = NULL;
}

TEST(match__blocking_probe_on_a_source_that_left_is_econnreset)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(0, ANY_TAG, KPROG_PROBE_BLOCK);

	kt_pair(&a, &b);
	hook_from = a;
	mock_schedule_hook = close_from_hook;
	EXPECT_ERR(kt_probe(b, &pr), -ECONNRESET);
	EXPECT_EQ(mock_schedules, 1);
	EXPECT_ERR(kt_probe(b, &pr), -ECONNRESET);	/* at once now */
	EXPECT_EQ(mock_schedules, 1);
}

TEST(match__blocking_probe_interrupted_by_a_signal_is_eintr)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(ANY_SRC, ANY_TAG, KPROG_PROBE_BLOCK);

	kt_pair(&a, &b);
	mock_signal(b->proc);
	EXPECT_ERR(kt_probe(b, &pr), -EINTR);
	clear_tsk_thread_flag(&b->proc->task, TIF_SIGPENDING);
}

TEST(match__cancel_of_a_posted_receive_completes_it_cancelled)
{
	struct kt_ep *a, *b;
	char r[4];
	struct kprog_cqe c;

	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, r, 4, 7, 0, NULL));
	EXPECT_OK(kt_cancel(b, 7));
	ASSERT(kt_pop(b, &c));
	EXPECT_EQ(c.req_id, 7);
	EXPECT_ERR(c.error, -ECANCELED);
	EXPECT_EQ(c.flags, KPROG_CQE_CANCELLED);
	EXPECT_EQ(kt_nr_ops(b), 0);
}

TEST(match__cancel_of_unknown_or_completed_operations)
{
	struct kt_ep *a, *b;
	char s[4], r[4];

	kt_pair(&a, &b);
	EXPECT_ERR(kt_cancel(b, 7), -ENOENT);
	ASSERT_OK(kt_recv(b, 0, 0, r, 4, 7, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, 4, 8, 0, NULL));
	/* completed: in the ring, not consumed */
	EXPECT_ERR(kt_cancel(b, 7), -EBUSY);
	EXPECT_CQE(b, 7, 4, 0);
	EXPECT_ERR(kt_cancel(b, 7), -ENOENT);
	/* an eager send completed at post time */
	EXPECT_ERR(kt_cancel(a, 8), -ENOENT);
}

TEST(match__cancel_of_a_queued_rendezvous_send_withdraws_it)
{
	static u8 s[20000];
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(ANY_SRC, ANY_TAG, 0);

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, 0, NULL));
	EXPECT_OK(kt_cancel(a, 1));
	EXPECT_CQE(a, 1, 0, -ECANCELED);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 0);
}

TEST(match__cancel_of_a_matched_rendezvous_is_ebusy_and_it_completes)
{
	static u8 s[20000], r[20000];
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 2, 0, NULL));
	EXPECT_ERR(kt_cancel(a, 1), -EBUSY);
	EXPECT_ERR(kt_cancel(b, 2), -EBUSY);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, sizeof(s), 0);
	EXPECT_CQE(b, 2, sizeof(r), 0);
}

TEST(match__receiver_leaving_fails_the_rendezvous_sends_queued_at_it)
{
	static u8 s[20000];
	struct kt_ep *a, *b;
	char e[4] = "abc";

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, e, 4, 1, 0, NULL));		/* eager */
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 2, 0, NULL));	/* rendezvous */
	kt_close(b);
	EXPECT_CQE(a, 2, 0, -ECONNRESET);
	EXPECT_EQ(kt_ring_count(a), 0);
	EXPECT_EQ(kt_nr_ops(a), 0);
}

TEST(match__sender_leaving_withdraws_its_sends_and_fails_receives_naming_it)
{
	static u8 s[20000];
	struct kt_ep *a, *b;
	char r[4];
	struct kprog_probe pr = probe_req(ANY_SRC, ANY_TAG, 0);

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 1, s, sizeof(s), 1, 0, NULL));
	ASSERT_OK(kt_recv(a, 1, 0, r, 4, 2, 0, NULL));	/* a's own receive */
	ASSERT_OK(kt_recv(b, 0, 5, r, 4, 3, 0, NULL));
	ASSERT_OK(kt_recv(b, ANY_SRC, 6, r, 4, 4, 0, NULL));
	kt_close(a);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 0);		/* the rendezvous send is gone */
	EXPECT_CQE(b, 3, 0, -ECONNRESET);
	EXPECT_EQ(kt_ring_count(b), 0);	/* ANY_SOURCE stays posted */
	EXPECT_OK(kt_cancel(b, 4));
}

static void run_work_from_hook(void *arg)
{
	mock_run_work();
}

TEST(match__close_with_a_transfer_in_flight_waits_for_it)
{
	static u8 s[20000], r[20000];
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 2, 0, NULL));
	EXPECT_EQ(mock_work_queued(), 1);
	/* The worker runs while the closing receiver sleeps. */
	mock_schedule_hook = run_work_from_hook;
	kt_close(b);
	EXPECT_EQ(mock_schedules, 1);
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
}

static struct kt_ep *fail_a, *fail_b;
static char fail_buf[64];

static int eager_send(void *arg)
{
	return kt_send(fail_a, 1, 0, fail_buf, 64, 1, 0, NULL);
}

static int rndv_send(void *arg)
{
	static u8 big[20000];

	return kt_send(fail_a, 1, 0, big, sizeof(big), 1, 0, NULL);
}

static int posted_recv(void *arg)
{
	int err = kt_recv(fail_b, 0, 0, fail_buf, 64, 2, 0, NULL);

	if (!err)
		EXPECT_OK(kt_cancel(fail_b, 2));
	return err;
}

static void drain_b(void *arg)
{
	struct kprog_cqe c;

	while (kt_pop(fail_b, &c))
		;
}

TEST(match__every_allocation_failing_in_a_post_is_enomem)
{
	struct kprog_post p;

	kt_pair(&fail_a, &fail_b);
	/* the message, its payload */
	EXPECT_EQ(kt_each_alloc_failure(eager_send, NULL, NULL, -ENOMEM), 2);
	ASSERT_OK(kt_recv(fail_b, 0, 0, fail_buf, 64, 9, 0, &p));
	EXPECT_EQ(p.done, 1);
	/* the op */
	EXPECT_EQ(kt_each_alloc_failure(posted_recv, drain_b, NULL, -ENOMEM),
		  1);
	/* the op, the message */
	EXPECT_EQ(kt_each_alloc_failure(rndv_send, NULL, NULL, -ENOMEM), 2);
	EXPECT_OK(kt_cancel(fail_a, 1));
	EXPECT_CQE(fail_a, 1, 0, -ECANCELED);
	EXPECT_EQ(kt_nr_ops(fail_a) + kt_nr_ops(fail_b), 0);
}

TEST(eager__delivery_whose_transfer_cannot_be_allocated_fails_the_receive)
{
	struct kt_ep *a, *b;
	char s[8] = "x", r[8];
	struct kprog_post p;

	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, r, 8, 2, 0, NULL));
	mock_kmalloc_errors = 0x4;	/* message, payload, then the transfer */
	ASSERT_OK(kt_send(a, 1, 0, s, 8, 1, 0, &p));
	EXPECT_EQ(p.done, 1);		/* the send is done all the same */
	EXPECT_CQE(b, 2, 0, -ENOMEM);
	/* the page array of the copy */
	ASSERT_OK(kt_recv(b, 0, 0, r, 8, 3, 0, NULL));
	mock_kmalloc_errors = 0x8;
	ASSERT_OK(kt_send(a, 1, 0, s, 8, 1, 0, &p));
	EXPECT_CQE(b, 3, 0, -ENOMEM);
}

TEST(rndv__transfer_that_cannot_be_allocated_fails_both_sides)
{
	static u8 s[20000], r[20000];
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	/* matched at arrival */
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 2, 0, NULL));
	mock_kmalloc_errors = 0x4;	/* op, message, then the transfer */
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_CQE(b, 2, 0, -ENOMEM);
	EXPECT_CQE(a, 1, 0, -ENOMEM);
	/* matched by the receive */
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 3, 0, NULL));
	mock_kmalloc_errors = 0x2;	/* op, then the transfer */
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 4, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_CQE(b, 4, 0, -ENOMEM);
	EXPECT_CQE(a, 3, 0, -ENOMEM);
	EXPECT_EQ(mock_work_queued(), 0);
}

TEST(match__eager_copy_out_to_an_unwritable_buffer_is_efault)
{
	struct kt_ep *a, *b;
	char s[16] = "x";
	struct kprog_iov iov[2] = { { 0, 0 }, { MOCK_BAD_UADDR, 8 } };
	char r[8];
	struct kprog_post p;

	kt_pair(&a, &b);
	iov[0].base = (uintptr_t)r;
	iov[0].len = 8;
	ASSERT_OK(kt_send(a, 1, 0, s, 16, 1, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, iov, 2, 2, KPROG_POST_IOV, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.bytes, 8);	/* the first segment made it */
	EXPECT_ERR(p.cqe.error, -EFAULT);
}

TEST(match__eager_copy_out_scatters_over_the_receive_segments)
{
	struct kt_ep *a, *b;
	char s[100], r1[30], r2[100];
	struct kprog_iov iov[2] = { { (uintptr_t)r1, 30 }, { (uintptr_t)r2, 100 } };
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(s, 100, 7);
	ASSERT_OK(kt_send(a, 1, 0, s, 100, 1, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, iov, 2, 2, KPROG_POST_IOV, &p));
	EXPECT_EQ(p.cqe.bytes, 100);
	EXPECT_OK(p.cqe.error);
	EXPECT(!memcmp(r1, s, 30));
	EXPECT(!memcmp(r2, s + 30, 70));
}

/* ---------------------------------------------------------------------
 * The arrival path: order, held counts, events
 */
TEST(arrival__any_source_matches_the_oldest_posted_receive)
{
	struct kt_ep *v[3];
	char s[4] = "abc", r1[4], r2[4], r3[4];
	struct kprog_cqe c;

	kt_job(v, 3);
	ASSERT_OK(kt_recv(v[0], ANY_SRC, ANY_TAG, r1, 4, 1, 0, NULL));
	ASSERT_OK(kt_recv(v[0], 2, ANY_TAG, r2, 4, 2, 0, NULL));
	ASSERT_OK(kt_recv(v[0], ANY_SRC, 5, r3, 4, 3, 0, NULL));
	ASSERT_OK(kt_send(v[2], 0, 5, s, 4, 10, 0, NULL));
	ASSERT(kt_pop(v[0], &c));
	EXPECT_EQ(c.req_id, 1);		/* posted first, matches all */
	ASSERT_OK(kt_send(v[2], 0, 5, s, 4, 11, 0, NULL));
	ASSERT(kt_pop(v[0], &c));
	EXPECT_EQ(c.req_id, 2);
	ASSERT_OK(kt_send(v[1], 0, 5, s, 4, 12, 0, NULL));
	ASSERT(kt_pop(v[0], &c));
	EXPECT_EQ(c.req_id, 3);
	EXPECT_EQ(c.source, 1);
}

TEST(arrival__receive_takes_the_oldest_matching_unexpected_message)
{
	struct kt_ep *v[3];
	char s[4], r[4];
	struct kprog_post p;

	kt_job(v, 3);
	ASSERT_OK(kt_send(v[1], 0, 7, s, 1, 1, 0, NULL));
	ASSERT_OK(kt_send(v[2], 0, 8, s, 2, 2, 0, NULL));
	ASSERT_OK(kt_send(v[1], 0, 8, s, 3, 3, 0, NULL));
	ASSERT_OK(kt_recv(v[0], ANY_SRC, 8, r, 4, 4, 0, &p));
	EXPECT_EQ(p.cqe.bytes, 2);
	ASSERT_OK(kt_recv(v[0], 1, ANY_TAG, r, 4, 5, 0, &p));
	EXPECT_EQ(p.cqe.bytes, 1);
	ASSERT_OK(kt_recv(v[0], ANY_SRC, ANY_TAG, r, 4, 6, 0, &p));
	EXPECT_EQ(p.cqe.bytes, 3);
}

TEST(arrival__at_a_departed_receiver_is_refused_and_leaves_the_message)
{
	struct kt_ep *a, *b;
	struct kprog_env env = { .src = 0, .dst = 1, .len = 0 };
	struct kprog_msg *msg = kprog_msg_alloc(&env, GFP_KERNEL);

	kt_pair(&a, &b);
	ASSERT(msg);
	b->ep->dead = true;					/* internal */
	EXPECT_ERR(kprog_arrive(b->ep, msg), -ECONNRESET);
	EXPECT_EQ(msg->state, KPROG_MSG_NEW);
	b->ep->dead = false;
	kprog_msg_free(msg);
}

TEST(held__unexpected_messages_are_published_per_source_and_in_total)
{
	static u8 big[20000];
	struct kt_ep *v[3];
	char s[4], r[4];
	struct kprog_probe pr = probe_req(2, ANY_TAG, KPROG_PROBE_DEQUEUE);
	u32 ev;

	kt_job(v, 3);
	ev = kt_events(v[0]);
	ASSERT_OK(kt_send(v[1], 0, 1, s, 4, 1, 0, NULL));
	ASSERT_OK(kt_send(v[1], 0, 2, big, sizeof(big), 2, 0, NULL));
	ASSERT_OK(kt_send(v[2], 0, 3, s, 4, 3, 0, NULL));
	EXPECT_EQ(kt_src(v[0], 1)->held, 2);
	EXPECT_EQ(kt_src(v[0], 2)->held, 1);
	EXPECT_EQ(kt_src(v[0], 0)->held, 0);
	EXPECT_EQ(v[0]->ring->unexp, 3);
	EXPECT_EQ(kt_events(v[0]), ev + 3);	/* one per queued message */
	/* a receive takes one */
	ASSERT_OK(kt_recv(v[0], 1, 1, r, 4, 4, 0, NULL));
	EXPECT_EQ(kt_src(v[0], 1)->held, 1);
	/* a dequeuing probe takes one */
	pr.msg_id = 5;
	ASSERT_OK(kt_probe(v[0], &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(kt_src(v[0], 2)->held, 0);
	EXPECT_EQ(v[0]->ring->unexp, 1);
	/* and a cancelled rendezvous send leaves */
	EXPECT_OK(kt_cancel(v[1], 2));
	EXPECT_EQ(kt_src(v[0], 1)->held, 0);
	EXPECT_EQ(v[0]->ring->unexp, 0);
	EXPECT_EQ(kt_events(v[0]), ev + 3);
	/* a message matched at arrival is never held, nor an event */
	ASSERT_OK(kt_recv(v[0], 1, ANY_TAG, r, 4, 6, 0, NULL));
	ASSERT_OK(kt_send(v[1], 0, 1, s, 4, 7, 0, NULL));
	EXPECT_EQ(kt_src(v[0], 1)->held, 0);
	EXPECT_EQ(kt_events(v[0]), ev + 3);
}

TEST(held__a_departed_source_is_flagged_and_its_rendezvous_uncounted)
{
	static u8 big[20000];
	struct kt_ep *v[3];
	char s[4];
	u32 ev;

	kt_job(v, 3);
	ASSERT_OK(kt_send(v[1], 0, 1, s, 4, 1, 0, NULL));
	ASSERT_OK(kt_send(v[1], 0, 2, big, sizeof(big), 2, 0, NULL));
	ASSERT_OK(kt_send(v[1], 2, 2, big, sizeof(big), 3, 0, NULL));
	EXPECT_EQ(kt_src(v[0], 1)->held, 2);
	ev = kt_events(v[0]);
	kt_close(v[1]);
	EXPECT_EQ(kt_src(v[0], 1)->held, 1);	/* the eager one stays */
	EXPECT_EQ(kt_src(v[0], 1)->flags, KPROG_SRC_LEFT);
	EXPECT_EQ(kt_src(v[2], 1)->held, 0);
	EXPECT_EQ(kt_src(v[2], 1)->flags, KPROG_SRC_LEFT);
	EXPECT_EQ(v[2]->ring->unexp, 0);
	EXPECT_EQ(kt_events(v[0]), ev + 1);
	EXPECT_EQ(kt_src(v[0], 2)->flags, 0);
}

/* ---------------------------------------------------------------------
 * Receives, probes
 */
TEST(eager__send_to_itself_is_copied_in_its_own_process)
{
	struct kt_ep *e = kt_open();
	char s[16] = "to myself", r[16] = {};
	long pins = mock_dirtied_pages;

	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	ASSERT_OK(kt_recv(e, 0, 0, r, 16, 1, 0, NULL));
	ASSERT_OK(kt_send(e, 0, 0, s, 16, 2, 0, NULL));
	EXPECT_CQE(e, 1, 16, 0);
	EXPECT(!strcmp(r, "to myself"));
	EXPECT_EQ(mock_dirtied_pages, pins);	/* copy_to_user(), no pins */
	/* an empty one moves nothing */
	ASSERT_OK(kt_recv(e, 0, 0, r, 16, 3, 0, NULL));
	ASSERT_OK(kt_send(e, 0, 0, s, 0, 4, 0, NULL));
	EXPECT_CQE(e, 3, 0, 0);
}

TEST(eager__delivery_into_an_unmapped_receive_buffer_is_efault)
{
	struct kt_ep *a, *b;
	char s[8] = "x";

	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, (void *)MOCK_BAD_UADDR, 8, 2, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, 8, 1, 0, NULL));
	EXPECT_CQE(b, 2, 0, -EFAULT);
}

TEST(probe__blocking_probe_woken_by_another_event_sleeps_again)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(0, 9, KPROG_PROBE_BLOCK);

	kt_pair(&a, &b);
	hook_from = a;
	mock_schedule_hook = kick_then_send;
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(mock_schedules, 2);
}

TEST(probe__dequeued_rendezvous_is_received_by_message_id)
{
	static u8 s[20000], r[20000];
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(0, 4, KPROG_PROBE_DEQUEUE);
	struct kprog_post q = {
		.req_id = 3, .addr = (uintptr_t)r, .len = sizeof(r),
		.flags = KPROG_RECV_MESSAGE, .msg_id = 9, .peer = -77,
	};

	kt_pair(&a, &b);
	kt_fill(s, sizeof(s), 8);
	ASSERT_OK(kt_send(a, 1, 4, s, sizeof(s), 1, 0, NULL));
	pr.msg_id = 9;
	ASSERT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.bytes, sizeof(s));
	/* cannot be cancelled any more: it is no longer queued */
	EXPECT_ERR(kt_cancel(a, 1), -EBUSY);
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &q));	/* peer ignored */
	EXPECT_EQ(q.done, 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 3, sizeof(r), 0);
	EXPECT_CQE(a, 1, sizeof(s), 0);
	EXPECT(kt_check(r, sizeof(r), 8));
}

TEST(probe__blocking_probe_on_a_named_source_that_left_fails_at_once)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(0, ANY_TAG, KPROG_PROBE_BLOCK);
	char s[4];

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 1, s, 4, 1, 0, NULL));
	kt_close(a);
	/* what it left is still found */
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	ASSERT_OK(kt_recv(b, 0, ANY_TAG, s, 4, 2, 0, NULL));
	EXPECT_ERR(kt_probe(b, &pr), -ECONNRESET);
	EXPECT_EQ(mock_schedules, 0);
}

/* ---------------------------------------------------------------------
 * Cancel
 */
TEST(cancel__of_a_completion_held_back_by_an_overflow_is_ebusy)
{
	struct kt_ep *a, *b;
	char s[4], r[4];

	kprog_ring_entries = 1;
	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, r, 4, 1, 0, NULL));
	ASSERT_OK(kt_recv(b, 0, 0, r, 4, 2, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, 4, 3, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, 4, 4, 0, NULL));
	EXPECT_EQ(b->ring->overflow, 1);
	EXPECT_ERR(kt_cancel(b, 2), -EBUSY);		/* in the overflow */
	EXPECT_ERR(kt_cancel(b, 1), -EBUSY);		/* in the ring */
	EXPECT_CQE(b, 1, 4, 0);
	EXPECT_OK(kt_wait(b, 0));
	EXPECT_CQE(b, 2, 4, 0);
	EXPECT_ERR(kt_cancel(b, 2), -ENOENT);
}

TEST(cancel__of_a_receive_matched_by_a_rendezvous_in_flight_is_ebusy)
{
	static u8 s[20000], r[20000];
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 2, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, 0, NULL));
	EXPECT_ERR(kt_cancel(b, 2), -EBUSY);
	EXPECT_ERR(kt_cancel(a, 1), -EBUSY);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, sizeof(r), 0);
	EXPECT_CQE(a, 1, sizeof(s), 0);
}

/* ---------------------------------------------------------------------
 * Departures
 */
TEST(depart__mprobed_rendezvous_of_a_departed_sender_fails_its_receive)
{
	static u8 s[20000], r[20000];
	struct kt_ep *a, *b;
	struct kprog_probe pr = probe_req(0, ANY_TAG, KPROG_PROBE_DEQUEUE);
	struct kprog_post q = {
		.req_id = 3, .addr = (uintptr_t)r, .len = sizeof(r),
		.flags = KPROG_RECV_MESSAGE, .msg_id = 4,
	};

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, 0, NULL));
	pr.msg_id = 4;
	ASSERT_OK(kt_probe(b, &pr));
	ASSERT_EQ(pr.found, 1);
	kt_close(a);
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &q));
	EXPECT_EQ(q.done, 1);
	EXPECT_EQ(q.cqe.source, 0);
	EXPECT_ERR(q.cqe.error, -ECONNRESET);
	EXPECT_EQ(q.cqe.bytes, 0);
	EXPECT_EQ(kt_nr_ops(b), 0);
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV, &q), -ENOENT);
}

TEST(depart__mprobed_eager_message_of_a_departed_sender_stays_deliverable)
{
	struct kt_ep *a, *b;
	char s[8] = "still", r[8] = {};
	struct kprog_probe pr = probe_req(0, ANY_TAG, KPROG_PROBE_DEQUEUE);
	struct kprog_post q = {
		.req_id = 3, .addr = (uintptr_t)r, .len = sizeof(r),
		.flags = KPROG_RECV_MESSAGE, .msg_id = 4,
	};

	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, s, 6, 1, 0, NULL));
	pr.msg_id = 4;
	ASSERT_OK(kt_probe(b, &pr));
	kt_close(a);
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &q));
	EXPECT_EQ(q.done, 1);
	EXPECT_OK(q.cqe.error);
	EXPECT(!strcmp(r, "still"));
}

TEST(depart__receivers_posted_receives_and_queued_messages_are_dropped)
{
	static u8 big[20000];
	struct kt_ep *v[3];
	char s[4], r[4];
	long live;

	kt_job(v, 3);
	ASSERT_OK(kt_recv(v[0], 1, 0, r, 4, 1, 0, NULL));
	ASSERT_OK(kt_recv(v[0], ANY_SRC, 9, r, 4, 2, 0, NULL));
	ASSERT_OK(kt_send(v[1], 0, 3, s, 4, 3, 0, NULL));		/* eager */
	ASSERT_OK(kt_send(v[2], 0, 3, big, sizeof(big), 4, 0, NULL));
	live = mock_live_allocs;
	kt_close(v[0]);
	/* the rendezvous sender is told, the eager one was done already */
	EXPECT_CQE(v[2], 4, 0, -ECONNRESET);
	EXPECT_EQ(kt_ring_count(v[1]), 0);
	EXPECT_ERR(kt_send(v[1], 0, 3, s, 4, 5, 0, NULL), -ECONNRESET);
	EXPECT(mock_live_allocs < live);
}

TEST(depart__sender_leaving_fails_only_receives_naming_it)
{
	struct kt_ep *v[3];
	char r[4], s[4];
	struct kprog_post p;

	kt_job(v, 3);
	ASSERT_OK(kt_recv(v[0], 1, 0, r, 4, 1, 0, NULL));
	ASSERT_OK(kt_recv(v[0], 2, 0, r, 4, 2, 0, NULL));
	ASSERT_OK(kt_recv(v[2], 1, ANY_TAG, r, 4, 3, 0, NULL));
	kt_close(v[1]);
	EXPECT_CQE(v[0], 1, 0, -ECONNRESET);
	EXPECT_CQE(v[2], 3, 0, -ECONNRESET);
	EXPECT_EQ(kt_ring_count(v[0]), 0);
	ASSERT_OK(kt_send(v[2], 0, 0, s, 4, 4, 0, &p));
	EXPECT_CQE(v[0], 2, 4, 0);
}

/* ---------------------------------------------------------------------
 * Interleavings: another process closes its file while the kernel
 * allocates on behalf of this one (mock_alloc_hook)
 */
static struct kt_ep *il_me, *il_other;
static int il_countdown;

static void close_other_at_nth_alloc(void *arg)
{
	if (il_countdown--)
		return;
	mock_alloc_hook = NULL;
	kt_close(il_other);
	mock_set_current(il_me->proc);
}

static void close_during(struct kt_ep *me, struct kt_ep *other, int nth)
{
	il_me = me;
	il_other = other;
	il_countdown = nth;
	mock_alloc_hook = close_other_at_nth_alloc;
}

TEST(race__receiver_closing_while_an_eager_send_is_built_fails_the_send)
{
	struct kt_ep *a, *b;
	char s[8] = "x";

	kt_pair(&a, &b);
	close_during(a, b, 0);		/* the message */
	EXPECT_ERR(kt_send(a, 1, 0, s, 8, 1, 0, NULL), -ECONNRESET);
	EXPECT(!b->open);
	EXPECT_EQ(kt_nr_ops(a), 0);
}

TEST(race__receiver_closing_while_a_rendezvous_is_built_fails_the_send)
{
	static u8 s[20000];
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	close_during(a, b, 1);		/* the op, then the message */
	EXPECT_ERR(kt_send(a, 1, 0, s, sizeof(s), 1, 0, NULL), -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(kt_ring_count(a), 0);
}

TEST(race__sender_closing_while_a_receive_is_created_fails_the_receive)
{
	struct kt_ep *a, *b;
	char r[8];
	struct kprog_post p;

	kt_pair(&a, &b);
	close_during(b, a, 0);		/* the receive's op */
	ASSERT_OK(kt_recv(b, 0, 0, r, 8, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_ERR(p.cqe.error, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(b), 0);
}

TEST(race__sender_closing_once_its_rendezvous_is_matched_ends_the_pull)
{
	static u8 s[2000], r[2000];
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(r, sizeof(r), 1);
	ASSERT_OK(kt_send(a, 1, 0, s, sizeof(s), 1, KPROG_SEND_SYNC, NULL));
	close_during(b, a, 1);		/* the op, then the transfer */
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 2, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_CQE(b, 2, 0, -ECONNRESET);
	/* nothing was copied after the sender's file was released */
	EXPECT(kt_check(r, sizeof(r), 1));
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(race__receiver_closing_once_an_eager_message_matched_it_is_not_written)
{
	struct kt_ep *a, *b;
	char s[64] = "late", r[64];
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(r, sizeof(r), 2);
	ASSERT_OK(kt_recv(b, 0, 0, r, 64, 1, 0, NULL));
	close_during(a, b, 2);		/* message, payload, the transfer */
	ASSERT_OK(kt_send(a, 1, 0, s, 64, 2, 0, &p));
	EXPECT_EQ(p.done, 1);		/* the send was delivered */
	EXPECT(kt_check(r, sizeof(r), 2));
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(eager__message_into_an_empty_posted_receive_is_truncated)
{
	struct kt_ep *a, *b;
	char s[10] = "abc";

	kt_pair(&a, &b);
	ASSERT_OK(kt_recv(b, 0, 0, NULL, 0, 1, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, 10, 2, 0, NULL));
	EXPECT_CQE(b, 1, 0, -EMSGSIZE);
}

TEST(depart__rendezvous_to_itself_left_queued_at_close_frees_everything)
{
	static u8 s[20000];
	struct kt_ep *e = kt_open();
	long live;

	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	live = mock_live_allocs;
	ASSERT_OK(kt_send(e, 0, 0, s, sizeof(s), 1, 0, NULL));
	EXPECT(mock_live_allocs > live);
	kt_close(e);			/* the fixture checks for leaks */
}

static void arrive_from_hook(void *arg)
{
	EXPECT_OK(kt_send(hook_from, 1, 3, "e", 2, 9, 0, NULL));
	mock_schedule_hook = NULL;
}

TEST(held__a_message_queued_while_waiting_on_events_ends_the_wait)
{
	struct kt_ep *a, *b;
	struct kprog_wait w = { .timeout_ns = -1, .flags = KPROG_WAIT_EVENTS };

	kt_pair(&a, &b);
	w.events = kt_events(b);
	hook_from = a;
	mock_schedule_hook = arrive_from_hook;
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(kt_events(b), w.events + 1);
	EXPECT_EQ(kt_src(b, 0)->held, 1);
	EXPECT_EQ(kt_ring_count(b), 0);
}
