// SPDX-License-Identifier: GPL-2.0
/*
 * Collective schedules (kmod/core/coll.c, coll_local.c, coll_reduce.c): checks,
 * rounds started from the completion path, failures that end a schedule,
 * departures, allocation failures, REDUCE on pinned pages and its bounce
 * fallback, and every reduction against a plain C reference. Through the
 * ioctls; "internal" marks looks inside.
 */
#include <linux/string.h>
#include "kprog.h"
#include "ep.h"
#include "job.h"
#include "op.h"
#include "coll.h"
#include "ktest.h"
#include "fake_xport.h"

#define CTX	0		/* the point-to-point tests' context too */
#define BIG	(17 * PAGE_SIZE + 100)	/* rendezvous; COPY/REDUCE span chunks */

static struct kprog_coll_step st[16];
/* On page starts, so that the pinned-page tests choose page offsets. */
static u8 sb[4][BIG] __aligned(PAGE_SIZE), rb[4][BIG] __aligned(PAGE_SIZE);

static struct kprog_coll_step step(u8 kind, u32 round, s32 peer, const void *src,
				   void *dst, u64 len)
{
	struct kprog_coll_step s = {
		.kind = kind,
		.round = round,
		.peer = peer,
		.src = (u64)(uintptr_t)src,
		.dst = (u64)(uintptr_t)dst,
		.len = len,
	};

	return s;
}

static struct kprog_coll_step red(u32 round, u8 dtype, u8 op, const void *src,
				  void *dst, u64 len)
{
	struct kprog_coll_step s = step(KPROG_STEP_REDUCE, round, 0, src, dst,
					len);

	s.dtype = dtype;
	s.op = op;
	return s;
}

static int coll(struct kt_ep *e, const struct kprog_coll_step *steps, u32 n,
		s32 tag, u64 req_id, struct kprog_coll *out)
{
	struct kprog_coll c = {
		.req_id = req_id,
		.steps = (u64)(uintptr_t)steps,
		.nr_steps = n,
		.context = CTX,
		.tag = tag,
		.done = 0xdead,		/* the ioctl must set it */
	};
	int err = kt_ioctl(e, KPROG_IOC_COLL, &c);

	/* A round the call handed off is queued once its start timer fires. */
	mock_time_advance((u64)kprog_coll_start_delay_us * NSEC_PER_USEC);
	if (out)
		*out = c;
	return err;
}

/*
 * A schedule of local steps only, to its end: the ioctl's own completion
 * for short ones, the ring's after the work item for long ones (the ioctl
 * leaves them to it). @out gets the completion as the ioctl returns it.
 */
static int coll_local(struct kt_ep *e, const struct kprog_coll_step *steps,
		      u32 n, s32 tag, u64 req_id, struct kprog_coll *out)
{
	int err = coll(e, steps, n, tag, req_id, out);

	if (err || out->done)
		return err;
	mock_run_work();
	if (!EXPECT(kt_pop(e, &out->cqe)))
		return -EIO;
	out->done = 1;
	return 0;
}

TEST(coll__bad_schedules_get_their_errnos_and_start_nothing)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;
	u32 i;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, 8);
	EXPECT_ERR(coll(a, st, 0, 1, 1, NULL), -EINVAL);
	EXPECT_ERR(coll(a, st, 1, -1, 1, NULL), -EINVAL);
	c = (struct kprog_coll){ .steps = (u64)(uintptr_t)st, .nr_steps = 1,
				 .flags = 1 };
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_COLL, &c), -EINVAL);
	kprog_max_coll_steps = 2;
	EXPECT_ERR(coll(a, st, 3, 1, 1, NULL), -E2BIG);
	EXPECT_ERR(coll(a, (void *)MOCK_BAD_UADDR, 1, 1, 1, NULL), -EFAULT);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_COLL, (void *)MOCK_BAD_UADDR), -EFAULT);

	struct { struct kprog_coll_step s; int err; } bad[] = {
		{ step(0, 0, 1, sb[0], NULL, 8), -EINVAL },		/* kind */
		{ step(9, 0, 1, sb[0], NULL, 8), -EINVAL },
		{ step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, 8), -EINVAL },/* self */
		{ step(KPROG_STEP_SEND, 0, 2, sb[0], NULL, 8), -EINVAL },/* size */
		{ step(KPROG_STEP_RECV, 0, -1, NULL, rb[0], 8), -EINVAL },
		{ step(KPROG_STEP_SEND, 0, 1, (void *)-4096L, NULL, 8), -EFAULT },
		{ step(KPROG_STEP_COPY, 0, 0, sb[0], sb[0] + 4, 8), -EINVAL },
		{ red(0, KPROG_DT_INT32, KPROG_OP_SUM, sb[0], rb[0], 6), -EINVAL },
		{ red(0, KPROG_DT_DOUBLE, KPROG_OP_BAND, sb[0], rb[0], 8), -EINVAL },
		{ red(0, KPROG_DT_INT32, KPROG_OP_MINLOC, sb[0], rb[0], 8), -EINVAL },
		{ red(0, KPROG_DT_2INT, KPROG_OP_SUM, sb[0], rb[0], 8), -EINVAL },
		{ red(0, KPROG_DT_BOOL, KPROG_OP_SUM, sb[0], rb[0], 8), -EINVAL },
		{ red(0, 0, KPROG_OP_SUM, sb[0], rb[0], 8), -EINVAL },
		{ red(0, __KPROG_DT_MAX, KPROG_OP_SUM, sb[0], rb[0], 8), -EINVAL },
		{ red(0, KPROG_DT_INT8, __KPROG_OP_MAX, sb[0], rb[0], 8), -EINVAL },
	};
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		st[0] = bad[i].s;
		if (!EXPECT_ERR(coll(a, st, 1, 1, 1, NULL), bad[i].err))
			kt_fail(__FILE__, __LINE__, "step %u", i);
	}
	/* flags, IOV on a local step, padding, decreasing rounds */
	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, 8);
	st[0].flags = 2;
	EXPECT_ERR(coll(a, st, 1, 1, 1, NULL), -EINVAL);
	st[0] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[0], 8);
	st[0].flags = KPROG_STEP_IOV;
	EXPECT_ERR(coll(a, st, 1, 1, 1, NULL), -EINVAL);
	st[0].flags = 0;
	st[0].__pad = 1;
	EXPECT_ERR(coll(a, st, 1, 1, 1, NULL), -EINVAL);
	st[0] = step(KPROG_STEP_COPY, 1, 0, sb[0], rb[0], 8);
	st[1] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[0], 8);
	EXPECT_ERR(coll(a, st, 2, 1, 1, NULL), -EINVAL);
	kprog_max_coll_steps = 4096;
	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, 8);
	st[0].flags = KPROG_STEP_IOV;
	st[0].len = kprog_max_iov + 1;
	EXPECT_ERR(coll(a, st, 1, 1, 1, NULL), -EINVAL);

	/* max_colls */
	kprog_max_colls = 1;
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	ASSERT_OK(coll(a, st, 1, 1, 1, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_ERR(coll(a, st, 1, 2, 2, NULL), -ENOBUFS);
	kprog_max_colls = 0;
	EXPECT_ERR(coll(a, st, 1, 2, 2, NULL), -EOPNOTSUPP);
	/* Nothing sent, nothing posted but the one schedule. */
	EXPECT_EQ(kt_ring_count(b), 0);
	EXPECT_EQ(a->ep->nr_colls, 1);				/* internal */
	EXPECT_ERR(kt_cancel(a, 1), -EBUSY);	/* a schedule is not cancelled */
}

/* COPY n ints of sb[0] to sb[1], then REDUCE (SUM) them into rb[0]. */
static void copy_then_sum(u32 n)
{
	st[0] = step(KPROG_STEP_COPY, 0, 0, sb[0], sb[1], n * 4);
	st[1] = red(1, KPROG_DT_INT32, KPROG_OP_SUM, sb[1], rb[0], n * 4);
}

static bool summed(u32 n)
{
	s32 *y = (s32 *)rb[0];
	u32 i;

	for (i = 0; i < n; i++)
		if (y[i] != 4 * (s32)i)
			break;
	return EXPECT_EQ(i, n);
}

TEST(coll__short_local_steps_finish_in_the_ioctl)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;
	s32 *x = (s32 *)sb[0], *y = (s32 *)rb[0];
	u32 i, n = 4096;	/* 16 KiB: the longest the ioctl runs itself */

	kt_pair(&a, &b);
	for (i = 0; i < n; i++) {
		x[i] = i;
		y[i] = 3 * i;
	}
	copy_then_sum(n);
	ASSERT_OK(coll(a, st, 2, 5, 77, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_EQ(c.cqe.req_id, 77);
	EXPECT_EQ(c.cqe.error, 0);
	EXPECT_EQ(c.cqe.bytes, 0);
	summed(n);
	EXPECT_EQ(mock_run_work(), 0);
	EXPECT_EQ(kt_ring_count(a), 0);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
	/* A fault in a local step is the schedule's completion, not the call's. */
	st[0] = step(KPROG_STEP_COPY, 0, 0, (void *)MOCK_BAD_UADDR, rb[1], 8);
	ASSERT_OK(coll(a, st, 1, 6, 78, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_ERR(c.cqe.error, -EFAULT);
}

/*
 * A long COPY or REDUCE is the work item's: the ioctl returns at once and
 * the completion comes through the ring; a fault there too.
 */
TEST(coll__long_local_steps_run_in_the_worker)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;
	s32 *x = (s32 *)sb[0], *y = (s32 *)rb[0];
	u32 i, n = BIG / 4;

	kt_pair(&a, &b);
	for (i = 0; i < n; i++) {
		x[i] = i;
		y[i] = 3 * i;
	}
	copy_then_sum(n);
	ASSERT_OK(coll(a, st, 2, 5, 77, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(y[0] + y[1], 3);		/* nothing reduced yet */
	EXPECT_EQ(a->ep->nr_colls, 1);				/* internal */
	EXPECT_EQ(mock_run_work(), 1);	/* both rounds, one item */
	EXPECT_CQE(a, 77, 0, 0);
	summed(n);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
	st[0] = step(KPROG_STEP_COPY, 0, 0, (void *)MOCK_BAD_UADDR, rb[1],
		     BIG);
	ASSERT_OK(coll(a, st, 1, 6, 78, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 78, 0, -EFAULT);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
}

/*
 * A round's sends and receives start before its copies and reductions,
 * whatever their order in the round: the peer has the message while the
 * ioctl has left the long copy to the work item, and the round ends only
 * when both are over.
 */
TEST(coll__round_starts_its_transfers_before_its_local_steps)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	kt_fill(sb[0], BIG, 3);
	kt_fill(sb[2], 100, 4);
	memset(rb, 0, sizeof(rb));
	st[0] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[0], BIG);
	st[1] = step(KPROG_STEP_SEND, 0, 1, sb[2], NULL, 100);
	st[2] = step(KPROG_STEP_COPY, 1, 0, rb[0], rb[1], BIG);
	ASSERT_OK(coll(a, st, 3, 4, 40, &c));
	EXPECT_EQ(c.done, 0);
	st[3] = step(KPROG_STEP_RECV, 0, 0, NULL, rb[2], 100);
	ASSERT_OK(coll(b, st + 3, 1, 4, 41, &c));
	EXPECT_EQ(c.done, 1);		/* the eager message was there */
	EXPECT(kt_check(rb[2], 100, 4));
	EXPECT(!kt_check(rb[1], BIG, 3));	/* round 1 not started */
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 40, 0, 0);
	EXPECT(kt_check(rb[1], BIG, 3));
	EXPECT_EQ(kt_ring_count(b), 0);
}

/*
 * The ioctl handed a round over to the work item while a receive of the
 * round is in flight: the round ends only when both are done, whichever
 * comes first, and a close meanwhile ends the schedule without a leak.
 */
static void handoff_with_receive(bool recv_first, bool close)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	kt_fill(sb[0], BIG, 5);
	kt_fill(sb[1], 64, 6);
	memset(rb, 0, sizeof(rb));
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[1], 64);
	st[1] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[0], BIG);
	st[2] = step(KPROG_STEP_SEND, 1, 1, rb[1], NULL, 64);
	st[3] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, 64);
	st[4] = step(KPROG_STEP_RECV, 1, 0, NULL, rb[2], 64);
	ASSERT_OK(coll(a, st, 3, 8, 80, &c));
	EXPECT_EQ(c.done, 0);
	if (close) {
		kt_close(a);
		mock_run_work();
		EXPECT_EQ(kt_nr_ops(b), 0);
		return;
	}
	if (recv_first) {
		ASSERT_OK(coll(b, st + 3, 2, 8, 81, &c));
		EXPECT_EQ(c.done, 0);
		EXPECT_EQ(kt_ring_count(a), 0);
		EXPECT(mock_run_work() >= 1);	/* copy, then round 1 */
	} else {
		EXPECT_EQ(mock_run_work(), 1);	/* the copy; the receive waits */
		EXPECT_EQ(kt_ring_count(a), 0);
		ASSERT_OK(coll(b, st + 3, 2, 8, 81, &c));
		EXPECT_EQ(c.done, 0);
		EXPECT(mock_run_work() >= 1);	/* round 1 */
	}
	EXPECT_CQE(a, 80, 0, 0);
	mock_run_work();
	EXPECT_CQE(b, 81, 0, 0);
	EXPECT(kt_check(rb[0], BIG, 5));
	EXPECT(kt_check(rb[2], 64, 6));
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
}

TEST(coll__handed_over_round_waits_for_its_receive)
{
	handoff_with_receive(false, false);
}

TEST(coll__handed_over_round_whose_receive_came_first)
{
	handoff_with_receive(true, false);
}

TEST(coll__close_before_the_handed_over_round_runs)
{
	handoff_with_receive(false, true);
}

/*
 * Rank 1 sends two messages in one round; rank 0 receives them in two
 * rounds. Either side may come first; point-to-point receives and probes
 * on the same context and tag never see them, nor do the per-source
 * counts, and a schedule's receive never takes a point-to-point message.
 */
static void exchange(bool receiver_first)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;
	struct kprog_probe pr = { .context = CTX, .source = KPROG_ANY_SOURCE,
				  .tag = KPROG_ANY_TAG };
	char p2p[8] = "p2p";

	kt_pair(&a, &b);
	kt_fill(sb[0], 100, 1);
	kt_fill(sb[1], 200, 2);
	memset(rb, 0, sizeof(rb));
	/* A point-to-point message with the schedule's tag, queued first. */
	ASSERT_OK(kt_send(b, 0, 9, p2p, sizeof(p2p), 50, 0, NULL));
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 100);
	st[1] = step(KPROG_STEP_RECV, 1, 1, NULL, rb[1], 200);
	st[2] = step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, 100);
	st[3] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, 200);
	if (receiver_first) {
		ASSERT_OK(coll(a, st, 2, 9, 1, &c));
		EXPECT_EQ(c.done, 0);
		ASSERT_OK(coll(b, st + 2, 2, 9, 2, &c));
		EXPECT_EQ(c.done, 1);		/* eager sends: over at once */
		EXPECT_EQ(kt_ring_count(a), 0);	/* round 1 waits for the worker */
		EXPECT_EQ(mock_run_work(), 1);
		EXPECT_CQE(a, 1, 0, 0);
	} else {
		ASSERT_OK(coll(b, st + 2, 2, 9, 2, &c));
		EXPECT_EQ(c.done, 1);
		EXPECT_EQ(kt_src(a, 1)->held, 1);	/* the p2p message only */
		pr.tag = 9;
		ASSERT_OK(kt_probe(a, &pr));
		EXPECT_EQ(pr.bytes, sizeof(p2p));
		ASSERT_OK(coll(a, st, 2, 9, 1, &c));
		EXPECT_EQ(c.done, 1);		/* both had arrived */
		EXPECT_EQ(c.cqe.error, 0);
	}
	EXPECT(kt_check(rb[0], 100, 1));
	EXPECT(kt_check(rb[1], 200, 2));
	/* The point-to-point message is still there for a receive. */
	ASSERT_OK(kt_recv(a, KPROG_ANY_SOURCE, KPROG_ANY_TAG, rb[2], 8, 3, 0,
			  NULL));
	EXPECT(!strcmp((char *)rb[2], "p2p"));
	EXPECT_EQ(kt_ring_count(a), 0);
	EXPECT_EQ(kt_ring_count(b), 0);
	EXPECT_EQ(kt_nr_ops(a), 0);
}

TEST(coll__exchange_receiver_first)
{
	exchange(true);
}

TEST(coll__exchange_sender_first)
{
	exchange(false);
}

TEST(coll__schedule_receive_does_not_take_point_to_point_messages)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;
	struct kprog_post p;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	ASSERT_OK(coll(a, st, 1, 4, 1, &c));
	ASSERT_OK(kt_send(b, 0, 4, sb[0], 8, 2, 0, NULL));
	EXPECT_EQ(kt_ring_count(a), 0);
	EXPECT_EQ(kt_src(a, 1)->held, 1);
	ASSERT_OK(kt_recv(a, 1, 4, rb[1], 8, 3, 0, &p));
	EXPECT_EQ(p.done, 1);
	st[1] = step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, 8);
	ASSERT_OK(coll(b, st + 1, 1, 4, 4, &c));
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, 0, 0);
}

/* Rendezvous steps: the data moves in the shm worker, then the rounds. */
TEST(coll__rendezvous_ring_of_two_rounds)
{
	struct kt_ep *e[2];
	struct kprog_coll c;
	double *x[2] = { (double *)sb[0], (double *)sb[1] };
	double *acc[2] = { (double *)rb[0], (double *)rb[1] };
	u32 n = BIG / 8, i, r;

	kprog_eager_limit = 64;
	kt_job(e, 2);
	for (r = 0; r < 2; r++)
		for (i = 0; i < n; i++) {
			x[r][i] = r + 0.5 * i;
			acc[r][i] = x[r][i];
		}
	/* Allreduce of two ranks: exchange, then add what came in. */
	for (r = 0; r < 2; r++) {
		struct kprog_coll_step *s = st + 4 * r;

		s[0] = step(KPROG_STEP_SEND, 0, !r, x[r], NULL, n * 8);
		s[1] = step(KPROG_STEP_RECV, 0, !r, NULL, rb[2 + r], n * 8);
		s[2] = red(1, KPROG_DT_DOUBLE, KPROG_OP_SUM, rb[2 + r], acc[r],
			   n * 8);
		ASSERT_OK(coll(e[r], s, 3, 1, 10 + r, &c));
		EXPECT_EQ(c.done, 0);
	}
	mock_run_work();
	EXPECT_CQE(e[0], 10, 0, 0);
	EXPECT_CQE(e[1], 11, 0, 0);
	for (r = 0; r < 2; r++)
		for (i = 0; i < n; i++)
			if (acc[r][i] != 1 + 1.0 * i)
				break;
	EXPECT_EQ(i, n);
	EXPECT_EQ(kt_nr_ops(e[0]) + kt_nr_ops(e[1]), 0);
}

TEST(coll__shorter_message_is_emsgsize_and_ends_the_schedule)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 16);
	st[1] = step(KPROG_STEP_COPY, 1, 0, sb[0], rb[1], 8);
	st[2] = step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, 8);
	ASSERT_OK(coll(b, st + 2, 1, 3, 2, &c));
	ASSERT_OK(coll(a, st, 2, 3, 1, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_ERR(c.cqe.error, -EMSGSIZE);
	/* A longer one too. */
	st[2].len = 32;
	ASSERT_OK(coll(a, st, 2, 4, 3, &c));
	ASSERT_OK(coll(b, st + 2, 1, 4, 4, &c));
	mock_run_work();
	EXPECT_CQE(a, 3, 0, -EMSGSIZE);
}

/* Non-contiguous steps: a send of two segments into a receive of three. */
static void iov_exchange(u64 len)
{
	struct kprog_iov siov[2] = {
		{ (u64)(uintptr_t)sb[0], len / 2 },
		{ (u64)(uintptr_t)sb[1] + 7, len - len / 2 },
	};
	struct kprog_iov riov[3] = {
		{ (u64)(uintptr_t)rb[0] + 3, len / 3 },
		{ (u64)(uintptr_t)rb[1], 0 },
		{ (u64)(uintptr_t)rb[2] + 1, len - len / 3 },
	};
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	kt_fill(sb[0], len / 2, 5);
	kt_fill(sb[1] + 7, len - len / 2, 6);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, riov, 3);
	st[0].flags = KPROG_STEP_IOV;
	st[1] = step(KPROG_STEP_SEND, 0, 0, siov, NULL, 2);
	st[1].flags = KPROG_STEP_IOV;
	ASSERT_OK(coll(a, st, 1, 1, 1, &c));
	ASSERT_OK(coll(b, st + 1, 1, 1, 2, &c));
	mock_run_work();
	if (!c.done)
		EXPECT_CQE(b, 2, 0, 0);
	EXPECT_CQE(a, 1, 0, 0);
	/* The bytes in order across both layouts. */
	memcpy(rb[3], rb[0] + 3, len / 3);
	memcpy(rb[3] + len / 3, rb[2] + 1, len - len / 3);
	EXPECT(kt_check(rb[3], len / 2, 5));
	EXPECT(kt_check(rb[3] + len / 2, len - len / 2, 6));
	EXPECT_EQ(a->ep->iov_total + b->ep->iov_total, 0);	/* internal */
}

TEST(coll__iovec_steps_eager)
{
	iov_exchange(1000);
}

TEST(coll__iovec_steps_rendezvous)
{
	kprog_eager_limit = 64;
	iov_exchange(3 * PAGE_SIZE + 10);
}

TEST(coll__shorter_rendezvous_is_emsgsize_too)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], BIG);
	st[1] = step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, BIG - 100);
	ASSERT_OK(coll(a, st, 1, 3, 1, &c));
	ASSERT_OK(coll(b, st + 1, 1, 3, 2, &c));
	EXPECT_EQ(c.done, 0);
	mock_run_work();
	EXPECT_CQE(a, 1, 0, -EMSGSIZE);
	EXPECT_CQE(b, 2, 0, 0);		/* the sender's part went well */
}

TEST(coll__rendezvous_step_starts_in_the_worker_not_the_call)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_pair(&a, &b);
	kt_fill(sb[0], 8, 7);
	kt_fill(sb[1], BIG, 8);
	memset(rb, 0, sizeof(rb));
	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, 8);	/* eager */
	st[1] = step(KPROG_STEP_SEND, 0, 1, sb[1], NULL, BIG);
	st[2] = step(KPROG_STEP_RECV, 0, 0, NULL, rb[0], 8);
	st[3] = step(KPROG_STEP_RECV, 0, 0, NULL, rb[1], BIG);
	ASSERT_OK(coll(a, st, 2, 1, 1, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(kt_nr_rndv(a), 0);		/* left to the worker */
	EXPECT_EQ(mock_work_queued(), 1);
	ASSERT_OK(coll(b, st + 2, 2, 1, 2, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_work_queued(), 2);	/* the receiver's too */
	mock_run_work();
	EXPECT_CQE(a, 1, 0, 0);
	EXPECT_CQE(b, 2, 0, 0);
	EXPECT_EQ(memcmp(rb[0], sb[0], 8), 0);
	EXPECT_EQ(memcmp(rb[1], sb[1], BIG), 0);
}

/* The handed-off round starts after the call: on its CPU, or at once beside. */
TEST(coll__handed_off_round_starts_after_the_call_on_its_cpu)
{
	struct kprog_coll c = {
		.req_id = 1, .steps = (u64)(uintptr_t)st, .nr_steps = 1,
		.context = CTX, .tag = 1,
	};
	struct kt_ep *a, *b;

	kprog_eager_limit = 64;
	mock_set_cpus(2, 1);
	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, BIG);
	ASSERT_OK(kt_ioctl(a, KPROG_IOC_COLL, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_work_queued(), 0);	/* not before the delay */
	mock_time_advance((u64)kprog_coll_start_delay_us * NSEC_PER_USEC);
	EXPECT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(mock_work_cpu(), 1);		/* the caller's */
	mock_run_work();
	EXPECT_EQ(kt_nr_rndv(a), 1);
	/* 0: at once, on the other CPU */
	kprog_coll_start_delay_us = 0;
	c.req_id = 2;
	c.tag = 2;
	ASSERT_OK(kt_ioctl(a, KPROG_IOC_COLL, &c));
	EXPECT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(mock_work_cpu(), 0);
}

TEST(coll__failing_step_withdraws_the_others_of_its_round)
{
	struct kt_ep *e[3];
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_job(e, 3);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_SEND, 0, 2, sb[0], NULL, BIG);	/* rendezvous */
	st[2] = step(KPROG_STEP_COPY, 0, 0, (void *)MOCK_BAD_UADDR, rb[1], 8);
	st[3] = step(KPROG_STEP_RECV, 1, 2, NULL, rb[2], 8);
	ASSERT_OK(coll(e[0], st, 4, 1, 1, &c));
	/* The rendezvous send hands the rest of its round to the worker. */
	EXPECT_EQ(c.done, 0);
	mock_run_work();
	EXPECT_CQE(e[0], 1, 0, -EFAULT);
	EXPECT_EQ(kt_nr_ops(e[0]), 0);
	EXPECT_EQ(e[0]->ep->nr_colls, 0);			/* internal */
	/* The withdrawn send is gone from rank 2's queue. */
	st[4] = step(KPROG_STEP_RECV, 0, 0, NULL, rb[3], BIG);
	ASSERT_OK(coll(e[2], st + 4, 1, 1, 2, &c));
	EXPECT_EQ(c.done, 0);
	mock_run_work();
	EXPECT_EQ(kt_ring_count(e[2]), 0);
	EXPECT_EQ(e[2]->ep->nr_colls, 1);			/* internal */
}

TEST(coll__peer_lost_mid_schedule_is_econnreset)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, 8);
	st[1] = step(KPROG_STEP_RECV, 1, 1, NULL, rb[0], 8);
	st[2] = step(KPROG_STEP_RECV, 1, 1, NULL, rb[1], 8);
	ASSERT_OK(coll(a, st, 3, 1, 1, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_run_work(), 0);		/* round 1 was posted in the call */
	kt_close(b);
	mock_run_work();
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(a), 0);
	/* Later schedules naming it fail at once. */
	ASSERT_OK(coll(a, st + 1, 1, 2, 2, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_ERR(c.cqe.error, -ECONNRESET);
}

TEST(coll__close_with_schedules_running_leaks_nothing)
{
	struct kt_ep *e[3];
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_job(e, 3);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_SEND, 0, 2, sb[0], NULL, BIG);
	ASSERT_OK(coll(e[0], st, 2, 1, 1, &c));
	ASSERT_OK(coll(e[0], st, 1, 2, 2, &c));
	/* A round handed to the worker when the close comes. */
	st[2] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, 8);
	ASSERT_OK(coll(e[1], st + 2, 1, 2, 3, &c));
	/* the first's rendezvous send, handed off; the second's round over */
	EXPECT_EQ(mock_work_queued(), 2);
	kt_close(e[0]);
	mock_run_work();
	/* The fixture checks that nothing is left allocated or referenced. */
	EXPECT_EQ(kt_ring_count(e[2]), 0);
}

/* The pending work item runs now, as another CPU would have run it. */
static void run_pending_item(struct work_struct *work)
{
	mock_run_work();
}

/*
 * A peer leaves with two receives of a round posted: the first failure
 * queues the work item; the last step's completion then brings the round
 * to its end and queues it again, which finds it pending. If that item
 * runs before the completion drops what it took for its own queueing (on
 * another CPU, between queue_work_on() and the drop), it ends the schedule
 * and drops every other reference: the completion's was the last. It must
 * be put in process context, by a work item, not dropped in the
 * completion's context (a refcount "hit 0" warning and a leaked schedule,
 * before the fix).
 */
TEST(coll__completion_whose_work_item_runs_meanwhile_leaks_nothing)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[1], 8);
	ASSERT_OK(coll(a, st, 2, 1, 1, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_run_work(), 0);
	mock_queue_busy_hook = run_pending_item;
	kt_close(b);
	EXPECT(!mock_queue_busy_hook);	/* it ran */
	mock_run_work();
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
	/* The fixture checks that the schedule was freed. */
}

/*
 * The same from the start timer: the call handed its round off (timer
 * armed), a failing step's work item ended the schedule meanwhile, and
 * the timer finds that item pending, which then runs before the timer
 * drops its reference: the timer's is the last.
 */
TEST(coll__start_timer_whose_work_item_runs_meanwhile_leaks_nothing)
{
	struct kprog_coll c = {
		.req_id = 1, .steps = (u64)(uintptr_t)st, .nr_steps = 2,
		.context = CTX, .tag = 1,
	};
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[1], BIG);	/* long */
	ASSERT_OK(kt_ioctl(a, KPROG_IOC_COLL, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_work_queued(), 0);	/* the timer is armed */
	kt_close(b);				/* the receive fails */
	EXPECT_EQ(mock_work_queued(), 1);
	mock_queue_busy_hook = run_pending_item;
	mock_time_advance((u64)kprog_coll_start_delay_us * NSEC_PER_USEC);
	EXPECT(!mock_queue_busy_hook);		/* it ran */
	mock_run_work();
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
}

TEST(coll__worker_of_an_exiting_process_ends_the_schedule)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_COPY, 1, 0, sb[0], rb[1], 8);
	st[2] = step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, 8);
	ASSERT_OK(coll(a, st, 2, 1, 1, &c));
	ASSERT_OK(coll(b, st + 2, 1, 1, 2, &c));
	mock_proc_exit_mm(a->proc);
	mock_run_work();
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
}

/* Allocation failures: each one ends in an errno of the call or the cqe. */
static struct kt_ep *fail_ep;

static int post_local(void *arg)
{
	struct kprog_coll c;
	int err;

	st[0] = step(KPROG_STEP_COPY, 0, 0, sb[0], sb[1], 64);
	st[1] = red(1, KPROG_DT_UINT16, KPROG_OP_MAX, sb[1], rb[0], 64);
	err = coll(fail_ep, st, 2, 1, 1, &c);
	if (err)
		return err;
	EXPECT_EQ(c.done, 1);
	return c.cqe.error;
}

/* The same through the bounce buffers: no page can be pinned. */
static int post_local_bounce(void *arg)
{
	int err;

	mock_gup_errors = ~0ULL;
	err = post_local(arg);
	mock_gup_errors = 0;
	return err;
}

static int post_recv(void *arg)
{
	struct kprog_coll c;
	int err;

	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 64);
	err = coll(fail_ep, st, 1, 2, 2, &c);
	if (err || !c.done)
		return err;
	return c.cqe.error;
}

static void nothing_held(void *arg)
{
	EXPECT_EQ(kt_nr_ops(fail_ep), 0);
	EXPECT_EQ(fail_ep->ep->nr_colls, 0);			/* internal */
}

TEST(coll__every_allocation_failure_unwinds)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	fail_ep = a;
	/* schedule (steps and table inside), head op: COPY and REDUCE pin */
	EXPECT_EQ(kt_each_alloc_failure(post_local, nothing_held, NULL,
					-ENOMEM), 2);
	/* the same, then COPY's bounce buffer, REDUCE's two */
	EXPECT_EQ(kt_each_alloc_failure(post_local_bounce, nothing_held, NULL,
					-ENOMEM), 5);
	/* schedule, head op, the receive's op */
	EXPECT_EQ(kt_each_alloc_failure(post_recv, nothing_held, NULL,
					-ENOMEM), 3);
	EXPECT_EQ(a->ep->nr_colls, 1);				/* internal */
}

static int post_rndv(void *arg)
{
	struct kprog_coll c;
	int err;

	struct kprog_cqe cq;

	st[0] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, BIG);
	err = coll(fail_ep, st, 1, 3, 3, &c);
	if (err)
		return err;
	if (c.done)
		return c.cqe.error;
	/* The worker starts a rendezvous step; its failures end in the cqe. */
	EXPECT_EQ(mock_run_work(), 1);
	return kt_pop(fail_ep, &cq) ? cq.error : 0;
}

TEST(coll__allocation_failures_of_a_rendezvous_step_unwind)
{
	struct kt_ep *a, *b;

	kprog_eager_limit = 64;
	kt_pair(&a, &b);
	fail_ep = a;
	/* schedule, head op, the send's op, its message */
	EXPECT_EQ(kt_each_alloc_failure(post_rndv, nothing_held, NULL,
					-ENOMEM), 4);
	EXPECT_EQ(kt_nr_rndv(a), 1);
}

/*
 * Where the work goes. By default what the ioctl hands off (a long COPY)
 * starts coll_start_delay_us after the call on the caller's CPU
 * (coll__handed_off_round_starts_after_the_call_on_its_cpu). With the delay
 * at 0 it starts at once beside the caller (kprog_sched_beside_cpu()): on
 * the first CPU after the caller's that the process may use, online and
 * doing housekeeping, on the bound high-priority queue, not in front of the
 * caller; for a process bound to one CPU, on the first other housekeeping
 * CPU; on a one-CPU machine unbound. A round that a completion resumes
 * runs on the schedule's home CPU, the one its ioctl ran on.
 */
static int long_copy_queued_on(struct kt_ep *a, const char **wq)
{
	struct kprog_coll c;
	int cpu;

	kt_fill(sb[0], BIG, 7);
	st[0] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[0], BIG);
	if (!EXPECT_OK(coll(a, st, 1, 3, 30, &c)) || !EXPECT_EQ(c.done, 0) ||
	    !EXPECT_EQ(mock_work_queued(), 1))
		return -2;
	cpu = mock_work_cpu();
	*wq = mock_work_wq_name();
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 30, 0, 0);
	EXPECT(kt_check(rb[0], BIG, 7));
	return cpu;
}

static void expect_beside(struct kt_ep *a, int caller, int cpu)
{
	const char *wq = "";

	this_cpu_write(cpu_number, caller);
	EXPECT_EQ(long_copy_queued_on(a, &wq), cpu);
	EXPECT(!strcmp(wq, cpu == WORK_CPU_UNBOUND ? "kprog_coll" : "kprog_coll_near"));
}

TEST(coll__handoff_from_the_call_runs_on_another_cpu_of_the_rank)
{
	struct cpumask *allowed = &mock_default_proc->task.cpus_mask;
	struct kt_ep *a, *b;

	kprog_coll_start_delay_us = 0;
	mock_set_cpus(4, 0);
	kt_pair(&a, &b);
	expect_beside(a, 0, 1);
	expect_beside(a, 2, 3);
	expect_beside(a, 3, 0);			/* wraps */
	/* isolcpus=3: no housekeeping work there */
	mock_housekeeping_cpus = ~BIT(3);
	expect_beside(a, 2, 0);
	mock_housekeeping_cpus = ~0UL;
	/* CPU 0 went offline */
	__cpu_online_mask.bits[0] &= ~BIT(0);
	expect_beside(a, 3, 1);
	__cpu_online_mask.bits[0] |= BIT(0);
	/* the rank may run on CPUs 1 and 3 only (seen at the next WAIT) */
	cpumask_clear(allowed);
	cpumask_set_cpu(1, allowed);
	cpumask_set_cpu(3, allowed);
	ASSERT_OK(kt_wait(a, 0));
	expect_beside(a, 1, 3);
	expect_beside(a, 3, 1);
	expect_beside(a, 2, 3);		/* called from elsewhere: still its own */
	cpumask_setall(allowed);
}

/*
 * One CPU allowed (taskset -c 2, as mpirun's default binding): no other CPU
 * of the rank exists, so an immediate hand-off goes to the first other
 * housekeeping CPU, where the unbound queue might have run it anyway but
 * would as likely have woken it on the caller's CPU, inside the call. On a
 * one-CPU machine it is unbound.
 */
TEST(coll__handoff_with_one_allowed_cpu_goes_to_another_housekeeping_cpu)
{
	struct cpumask *allowed = &mock_default_proc->task.cpus_mask;
	struct kt_ep *a, *b;

	kprog_coll_start_delay_us = 0;
	mock_set_cpus(4, 2);
	cpumask_clear(allowed);
	cpumask_set_cpu(2, allowed);
	kt_pair(&a, &b);
	expect_beside(a, 2, 3);
	/* called from elsewhere: its own CPU */
	expect_beside(a, 1, 2);
	/* its one CPU isolated: the next housekeeping one, never CPU 2 */
	mock_housekeeping_cpus = ~BIT(2);
	expect_beside(a, 1, 3);
	mock_housekeeping_cpus = ~0UL;
	cpumask_setall(allowed);
	/* a one-CPU machine */
	mock_set_cpus(1, 0);
	expect_beside(a, 0, WORK_CPU_UNBOUND);
}

/* A resumed round runs on its home CPU; an isolated home: unbound. */
static void resumed_round_runs_on(int home, int cpu, const char *wq)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	mock_set_cpus(4, home);
	kt_pair(&a, &b);
	kt_fill(sb[1], 64, 8);
	kt_fill(sb[0], BIG, 9);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[1], 64);
	st[1] = step(KPROG_STEP_COPY, 1, 0, sb[0], rb[0], BIG);
	ASSERT_OK(coll(a, st, 2, 4, 40, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_work_queued(), 0);
	/* rank 1's send completes the receive inside rank 1's call, on CPU 0 */
	this_cpu_write(cpu_number, 0);
	st[2] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, 64);
	ASSERT_OK(coll(b, st + 2, 1, 4, 41, &c));
	EXPECT_EQ(c.done, 1);
	ASSERT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(mock_work_cpu(), cpu);
	EXPECT(!strcmp(mock_work_wq_name(), wq));
	EXPECT_EQ(mock_run_work(), 1);		/* round 1's copy, in the worker */
	EXPECT_CQE(a, 40, 0, 0);
	EXPECT(kt_check(rb[1], 64, 8));
	EXPECT(kt_check(rb[0], BIG, 9));
}

TEST(coll__round_resumed_by_a_completion_runs_on_its_home_cpu)
{
	resumed_round_runs_on(1, 1, "kprog_coll_near");
}

TEST(coll__round_resumed_by_a_completion_of_an_isolated_home_is_unbound)
{
	mock_housekeeping_cpus = ~BIT(1);
	resumed_round_runs_on(1, WORK_CPU_UNBOUND, "kprog_coll");
	mock_housekeeping_cpus = ~0UL;
}

/*
 * A schedule's end (its completion into the ring, once no round is left to
 * start) runs where its last step completed when a worker (or a softirq)
 * completed it: no wake-up of its home CPU, which may be busy or stalled;
 * on its home CPU when a process's own call completed it (a worker woken
 * on the caller's CPU would preempt the caller inside its call). An eager
 * message arriving in a softirq is copied out by a worker (the step's
 * receive pages are not pinned at post), which completes the step.
 */
static void end_runs_on(bool softirq, int cpu)
{
	static const u32 map[3] = { 0, 0, 1 };	/* rank 2 on another node */
	struct kprog_coll c;
	struct kt_ep *a;

	kprog_eager_limit = 64;
	mock_set_cpus(4, 1);
	kt_fx_install();
	a = kt_open();
	ASSERT_OK(kt_join_map(a, kt_new_key(), 0, 3, map, 2, 0));
	kt_fill(sb[0], 64, 5);
	st[0] = step(KPROG_STEP_RECV, 0, 2, NULL, rb[0], 64);
	ASSERT_OK(coll(a, st, 1, 7, 70, &c));
	EXPECT_EQ(c.done, 0);
	EXPECT_EQ(mock_work_queued(), 0);
	/* rank 2's message arrives on CPU 3 */
	this_cpu_write(cpu_number, 3);
	kt_fx.env_flags = KPROG_ENV_COLL;
	ASSERT_OK(kt_fx_eager(a, 2, CTX, 7, sb[0], 64, softirq));
	if (softirq) {
		ASSERT_EQ(mock_work_queued(), 1);	/* the copy out */
		EXPECT(mock_run_work_one());
	}
	ASSERT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(mock_work_cpu(), cpu);
	EXPECT(!strcmp(mock_work_wq_name(), "kprog_coll_near"));
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 70, 0, 0);
	EXPECT(kt_check(rb[0], 64, 5));
}

TEST(coll__end_completed_by_a_worker_runs_on_that_cpu)
{
	end_runs_on(true, 3);
}

TEST(coll__end_completed_by_a_process_call_runs_on_its_home_cpu)
{
	end_runs_on(false, 1);
}

/*
 * A step the work item starts is an operation made in a kernel thread on
 * the process's borrowed mm, and a kernel thread has every capability:
 * the RLIMIT_MEMLOCK that a network transport charges its pins against
 * must be the posting process's, read in its call (U64_MAX there, before
 * the fix: pins of schedules were never limited).
 */
TEST(coll__steps_the_work_item_starts_carry_the_poster_s_memlock_limit)
{
	static const u32 map[3] = { 0, 0, 1 };	/* rank 2 on another node */
	struct kprog_coll c;
	struct kt_ep *a;

	kprog_eager_limit = 64;
	kt_fx_install();
	a = kt_open();
	ASSERT_OK(kt_join_map(a, kt_new_key(), 0, 3, map, 2, 0));
	a->proc->sig.rlim[RLIMIT_MEMLOCK].rlim_cur = 3 * PAGE_SIZE;
	a->proc->caps = 0;
	st[0] = step(KPROG_STEP_RECV, 0, 2, NULL, rb[0], BIG);
	st[1] = step(KPROG_STEP_SEND, 0, 2, sb[0], NULL, BIG);
	ASSERT_OK(coll(a, st, 2, 7, 70, &c));
	EXPECT_EQ(c.done, 0);
	mock_run_work();			/* the handed-off round */
	ASSERT_EQ(kt_fx.nsent, 1);
	EXPECT_EQ(kt_fx.sent[0].msg->sop->buf.memlock, 3);	/* internal */
	kt_fx.env_flags = KPROG_ENV_COLL;
	EXPECT_EQ(kt_ring_count(a), 0);
	ASSERT_OK(kt_fx_rndv(a, 2, CTX, 7, BIG, 77, false));
	mock_run_work();
	EXPECT_EQ(kt_ring_count(a), 0);
	ASSERT_EQ(kt_fx.npulls, 1);
	EXPECT_EQ(kt_fx.pulls[0].x->rop->buf.memlock, 3);	/* internal */
	kt_fx_pull_done(0, sb[1], 0);
	kt_fx_remote_fin(0, BIG, 0);
	mock_run_work();
	EXPECT_CQE(a, 70, 0, 0);
	a->proc->sig.rlim[RLIMIT_MEMLOCK].rlim_cur = RLIM_INFINITY;
}

/*
 * Allocations of kernel threads working on a process's mm, and those of
 * them not charged to that process's memory cgroup.
 */
static int kthread_allocs, uncharged;

static void note_charge(void *arg)
{
	if (!(current->flags & PF_KTHREAD) || !current->mm)
		return;
	kthread_allocs++;
	if (current->active_memcg != mock_memcg_of(current->mm))
		uncharged++;
}

/*
 * What the work item allocates for a schedule (the next round's operations
 * and eager messages, bounce buffers) is charged to the posting process's
 * memory cgroup, as in its call: a kernel thread's own allocations are
 * charged to nobody (nothing was charged before the fix).
 */
TEST(coll__what_the_work_item_allocates_is_charged_to_the_poster_s_memcg)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_SEND, 1, 1, sb[0], NULL, 8);
	st[2] = step(KPROG_STEP_RECV, 1, 1, NULL, rb[1], 8);
	st[3] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, 8);
	st[4] = step(KPROG_STEP_RECV, 1, 0, NULL, rb[2], 8);
	st[5] = step(KPROG_STEP_SEND, 1, 0, sb[2], NULL, 8);
	ASSERT_OK(coll(a, st, 3, 1, 1, &c));
	EXPECT_EQ(c.done, 0);
	kthread_allocs = uncharged = 0;
	mock_alloc_hook = note_charge;
	ASSERT_OK(coll(b, st + 3, 3, 1, 2, &c));	/* a's round 0 ends */
	EXPECT(mock_run_work() >= 1);		/* a's round 1, in a worker */
	mock_alloc_hook = NULL;
	EXPECT(kthread_allocs > 0);
	EXPECT_EQ(uncharged, 0);
	mock_run_work();
	EXPECT_CQE(a, 1, 0, 0);
	EXPECT_CQE(b, 2, 0, 0);
}

/*
 * A process killed while it copies a transfer in its own call: the pin
 * fails with -EINTR (gup's answer to a fatal signal). Both sides end as for
 * any departure, with -ECONNRESET (-EINTR reached the peer before the fix).
 */
TEST(coll__copy_stopped_by_a_fatal_signal_is_econnreset_for_both_sides)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 0, NULL, rb[0], BIG);
	st[1] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, BIG);
	ASSERT_OK(coll(b, st, 1, 5, 51, &c));
	ASSERT_OK(coll(a, st + 1, 1, 5, 50, &c));
	mock_gup_err = -EINTR;
	mock_gup_errors = 1;
	mock_run_work();
	EXPECT_CQE(a, 50, 0, -ECONNRESET);
	EXPECT_CQE(b, 51, 0, -ECONNRESET);
}

/*
 * Messages of two outstanding schedules of one communicator (two tags)
 * arrive in the opposite order to the schedules' posts, eager or
 * rendezvous: each lands in its own schedule's buffer, and either schedule
 * ends as soon as its own message is in.
 */
static void two_schedules_reversed(u64 len)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_pair(&a, &b);
	kt_fill(sb[0], len, 11);
	kt_fill(sb[1], len, 12);
	memset(rb, 0, sizeof(rb));
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], len);
	ASSERT_OK(coll(a, st, 1, 21, 1, &c));
	EXPECT_EQ(c.done, 0);
	st[1] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[1], len);
	ASSERT_OK(coll(a, st + 1, 1, 22, 2, &c));
	EXPECT_EQ(c.done, 0);
	/* the second schedule's message first */
	st[2] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, len);
	ASSERT_OK(coll(b, st + 2, 1, 22, 3, &c));
	mock_run_work();
	EXPECT_CQE(a, 2, 0, 0);
	EXPECT_EQ(kt_ring_count(a), 0);		/* the first one still waits */
	EXPECT(kt_check(rb[1], len, 12));
	if (!c.done)
		EXPECT_CQE(b, 3, 0, 0);
	st[3] = step(KPROG_STEP_SEND, 0, 0, sb[0], NULL, len);
	ASSERT_OK(coll(b, st + 3, 1, 21, 4, &c));
	mock_run_work();
	EXPECT_CQE(a, 1, 0, 0);
	EXPECT(kt_check(rb[0], len, 11));
	if (!c.done)
		EXPECT_CQE(b, 4, 0, 0);
	EXPECT_EQ(kt_nr_ops(a) + kt_nr_ops(b), 0);
	EXPECT_EQ(a->ep->nr_colls + b->ep->nr_colls, 0);	/* internal */
}

TEST(coll__two_schedules_whose_messages_arrive_reversed_eager)
{
	two_schedules_reversed(48);
}

TEST(coll__two_schedules_whose_messages_arrive_reversed_rendezvous)
{
	two_schedules_reversed(BIG);
}

/* The queued pull runs while the closing peer waits for its transfers. */
static void run_work_hook(void *arg)
{
	mock_run_work();
}

/*
 * The peer leaves while a rendezvous step to it is in flight (its receive
 * posted, the pull queued but not run): the schedule ends with -ECONNRESET
 * and nothing stays pinned or allocated.
 */
TEST(coll__peer_lost_during_a_rendezvous_step)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;

	kprog_eager_limit = 64;
	kt_pair(&a, &b);
	st[0] = step(KPROG_STEP_RECV, 0, 0, NULL, rb[0], BIG);
	ASSERT_OK(coll(b, st, 1, 5, 51, &c));
	EXPECT_EQ(c.done, 0);
	st[1] = step(KPROG_STEP_SEND, 0, 1, sb[0], NULL, BIG);
	st[2] = step(KPROG_STEP_RECV, 1, 1, NULL, rb[1], 8);
	ASSERT_OK(coll(a, st + 1, 2, 5, 50, &c));
	EXPECT_EQ(c.done, 0);
	mock_schedule_hook = run_work_hook;
	kt_close(b);			/* waits for the pull it stops */
	mock_schedule_hook = NULL;
	mock_run_work();
	EXPECT_CQE(a, 50, 0, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(a->ep->nr_colls, 0);				/* internal */
	EXPECT_EQ(mock_pinned_pages, 0);
}

/*
 * Allocation failures in a round the worker starts (round 1 after a long
 * COPY: an eager SEND's message): the schedule's completion carries
 * -ENOMEM, nothing stays held.
 */
static int post_worker_round(void *arg)
{
	struct kprog_coll c;
	struct kprog_cqe cqe;
	int err;

	st[0] = step(KPROG_STEP_COPY, 0, 0, sb[0], rb[0], BIG);
	st[1] = step(KPROG_STEP_SEND, 1, 1, sb[1], NULL, 32);
	err = coll(fail_ep, st, 2, 6, 60, &c);
	if (err)
		return err;
	EXPECT_EQ(c.done, 0);
	mock_run_work();
	if (!EXPECT(kt_pop(fail_ep, &cqe)))
		return -EIO;
	EXPECT_EQ(cqe.req_id, 60);
	return cqe.error;
}

TEST(coll__allocation_failures_in_the_worker_s_round_unwind)
{
	struct kt_ep *a, *b;
	int n;

	kt_pair(&a, &b);
	fail_ep = a;
	/* schedule, head op; in the worker: the message, its payload */
	n = kt_each_alloc_failure(post_worker_round, nothing_held, NULL, -ENOMEM);
	EXPECT_EQ(n, 4);
	EXPECT_EQ(kt_src(b, 0)->held, 0);	/* a schedule's: not counted */
}

/* ---- the reductions against a plain C reference ---- */

struct dt_desc {
	u8 size;
	u8 is_signed, is_float, is_pair;
	u8 vsize;		/* pairs: the value's size; the index at 4 or 8 */
	u8 ioff;
};

static const struct dt_desc dts[__KPROG_DT_MAX] = {
	[KPROG_DT_INT8] = { 1, 1 }, [KPROG_DT_UINT8] = { 1, 0 },
	[KPROG_DT_INT16] = { 2, 1 }, [KPROG_DT_UINT16] = { 2, 0 },
	[KPROG_DT_INT32] = { 4, 1 }, [KPROG_DT_UINT32] = { 4, 0 },
	[KPROG_DT_INT64] = { 8, 1 }, [KPROG_DT_UINT64] = { 8, 0 },
	[KPROG_DT_FLOAT] = { 4, 1, 1 }, [KPROG_DT_DOUBLE] = { 8, 1, 1 },
	[KPROG_DT_BOOL] = { 1, 0 },
	[KPROG_DT_FLOAT_INT] = { 8, 1, 1, 1, 4, 4 },
	[KPROG_DT_DOUBLE_INT] = { 16, 1, 1, 1, 8, 8 },
	[KPROG_DT_LONG_INT] = { 16, 1, 0, 1, 8, 8 },
	[KPROG_DT_2INT] = { 8, 1, 0, 1, 4, 4 },
	[KPROG_DT_SHORT_INT] = { 8, 1, 0, 1, 2, 4 },
};

static bool mpi_allows(u8 dt, u8 op)
{
	const struct dt_desc *d = &dts[dt];

	if (d->is_pair)
		return op == KPROG_OP_MINLOC || op == KPROG_OP_MAXLOC;
	if (op == KPROG_OP_MINLOC || op == KPROG_OP_MAXLOC)
		return false;
	if (dt == KPROG_DT_BOOL)
		return op == KPROG_OP_LAND || op == KPROG_OP_LOR ||
		       op == KPROG_OP_LXOR;
	if (d->is_float)
		return op != KPROG_OP_BAND && op != KPROG_OP_BOR &&
		       op != KPROG_OP_BXOR;
	return true;
}

static s64 ld_int(const u8 *p, u8 size, bool sgn)
{
	u64 v = 0;

	memcpy(&v, p, size);
	if (sgn && size < 8 && (v >> (size * 8 - 1)) & 1)
		v |= ~0ULL << (size * 8);
	return v;
}

static double ld_flt(const u8 *p, u8 size)
{
	float f;
	double d;

	if (size == 4) {
		memcpy(&f, p, 4);
		return f;
	}
	memcpy(&d, p, 8);
	return d;
}

/* The reference: b = a (op) b for one element, the obvious way. */
static void ref_one(u8 dt, u8 op, const u8 *a, u8 *b)
{
	const struct dt_desc *d = &dts[dt];

	if (d->is_pair) {
		s32 ai, bi;
		bool lt, eq;

		memcpy(&ai, a + d->ioff, 4);
		memcpy(&bi, b + d->ioff, 4);
		if (d->is_float) {
			lt = ld_flt(a, d->vsize) < ld_flt(b, d->vsize);
			eq = ld_flt(a, d->vsize) == ld_flt(b, d->vsize);
			if (op == KPROG_OP_MAXLOC)
				lt = ld_flt(a, d->vsize) > ld_flt(b, d->vsize);
		} else {
			s64 x = ld_int(a, d->vsize, true), y = ld_int(b, d->vsize, true);

			lt = op == KPROG_OP_MAXLOC ? x > y : x < y;
			eq = x == y;
		}
		if (lt) {
			memcpy(b, a, d->vsize);
			memcpy(b + d->ioff, &ai, 4);
		} else if (eq && ai < bi) {
			memcpy(b + d->ioff, &ai, 4);
		}
		return;
	}
	if (d->is_float) {
		double x = ld_flt(a, d->size), y = ld_flt(b, d->size), r = 0;

		switch (op) {
		case KPROG_OP_SUM: r = d->size == 4 ? (double)((float)x + (float)y) : x + y; break;
		case KPROG_OP_PROD: r = d->size == 4 ? (double)((float)x * (float)y) : x * y; break;
		case KPROG_OP_MIN: r = x < y ? x : y; break;
		case KPROG_OP_MAX: r = x > y ? x : y; break;
		case KPROG_OP_LAND: r = x != 0 && y != 0; break;
		case KPROG_OP_LOR: r = x != 0 || y != 0; break;
		case KPROG_OP_LXOR: r = (x != 0) != (y != 0); break;
		}
		if (d->size == 4) {
			float f = r;

			memcpy(b, &f, 4);
		} else {
			memcpy(b, &r, 8);
		}
		return;
	}
	{
		s64 x = ld_int(a, d->size, d->is_signed);
		s64 y = ld_int(b, d->size, d->is_signed);
		u64 r = 0;
		bool lt = d->is_signed ? x < y : (u64)x < (u64)y;

		switch (op) {
		case KPROG_OP_SUM: r = (u64)x + (u64)y; break;
		case KPROG_OP_PROD: r = (u64)x * (u64)y; break;
		case KPROG_OP_MIN: r = lt ? x : y; break;
		case KPROG_OP_MAX: r = lt ? y : x; break;
		case KPROG_OP_LAND: r = x && y; break;
		case KPROG_OP_LOR: r = x || y; break;
		case KPROG_OP_LXOR: r = !x != !y; break;
		case KPROG_OP_BAND: r = x & y; break;
		case KPROG_OP_BOR: r = x | y; break;
		case KPROG_OP_BXOR: r = x ^ y; break;
		}
		memcpy(b, &r, d->size);
	}
}

/* Values with ties and signs, valid for the type (bool: 0 or 1). */
static void fill_dt(u8 dt, u8 *p, u32 n, u32 seed)
{
	const struct dt_desc *d = &dts[dt];
	u32 i, x = seed * 2654435761u + 1;

	for (i = 0; i < n; i++, p += d->size) {
		s64 v;

		x = x * 1103515245u + 12345u;
		v = (s64)((x >> 16) % 7) - 3;		/* -3..3: ties */
		if (!(i % 5))
			v = (s64)(x >> 8) - 0x800000;	/* large, wraps */
		memset(p, 0, d->size);
		if (dt == KPROG_DT_BOOL) {
			*p = v & 1;
		} else if (d->is_float) {
			double f = v / 4.0;
			float ff = f;

			if (d->vsize == 4 || d->size == 4)
				memcpy(p, &ff, 4);
			else
				memcpy(p, &f, 8);
		} else {
			memcpy(p, &v, d->is_pair ? d->vsize : d->size);
		}
		if (d->is_pair) {
			s32 idx = (x >> 20) % 4;

			memcpy(p + d->ioff, &idx, 4);
		}
	}
}

TEST(coll__every_reduction_matches_the_reference)
{
	enum { N = 97 };
	static u8 a[N * 16], b[N * 16], want[N * 16];
	u32 dt, op, i, size, checked = 0;

	for (dt = 0; dt <= __KPROG_DT_MAX; dt++) {
		for (op = 0; op <= __KPROG_OP_MAX; op++) {
			size = kprog_reduce_size(dt, op);
			if (dt == 0 || dt >= __KPROG_DT_MAX || op == 0 ||
			    op >= __KPROG_OP_MAX || !mpi_allows(dt, op)) {
				if (!EXPECT_EQ(size, 0))
					kt_fail(__FILE__, __LINE__, "type %u op %u", dt, op);
				continue;
			}
			if (!EXPECT_EQ(size, dts[dt].size)) {
				kt_fail(__FILE__, __LINE__, "type %u op %u", dt, op);
				continue;
			}
			fill_dt(dt, a, N, dt * 31 + op);
			fill_dt(dt, b, N, dt * 17 + op * 3 + 1);
			memcpy(want, b, N * size);
			for (i = 0; i < N; i++)
				ref_one(dt, op, a + i * size, want + i * size);
			kprog_reduce_apply(dt, op, b, a, N);
			if (!EXPECT(!memcmp(b, want, N * size)))
				kt_fail(__FILE__, __LINE__, "type %u op %u", dt, op);
			checked++;
		}
	}
	/* 8 integer types x 10, float and double x 7, bool x 3, 5 pairs x 2 */
	EXPECT_EQ(checked, 8 * 10 + 2 * 7 + 3 + 5 * 2);
}

TEST(coll__reduce_step_spans_pages_and_faults_cleanly)
{
	struct kt_ep *a, *b;
	struct kprog_coll c;
	u32 i, n = BIG / 16 * 16 / 16;
	struct { double v; s32 i; } *x = (void *)sb[0], *y = (void *)rb[0];

	kt_pair(&a, &b);
	for (i = 0; i < n; i++) {
		x[i].v = i % 3;
		x[i].i = 1;
		y[i].v = 1;
		y[i].i = 2;
	}
	st[0] = red(0, KPROG_DT_DOUBLE_INT, KPROG_OP_MINLOC, sb[0], rb[0],
		    n * 16);
	ASSERT_OK(coll_local(a, st, 1, 1, 1, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_EQ(c.cqe.error, 0);
	for (i = 0; i < n; i++) {
		double v = i % 3 < 1 ? 0 : 1;
		s32 idx = i % 3 == 2 ? 2 : 1;

		if (i % 3 == 2)
			v = 1;
		if (y[i].v != v || y[i].i != idx)
			break;
	}
	EXPECT_EQ(i, n);
	/*
	 * Pages that cannot be pinned go through the bounce buffers; there
	 * the write-back faults: the error, no FPU section left open.
	 */
	st[0] = red(0, KPROG_DT_INT32, KPROG_OP_SUM, sb[0], rb[0], 8);
	mock_gup_errors = 1;
	mock_copy_to_user_errors = 2;	/* after the ioctl's own put_user */
	ASSERT_OK(coll(a, st, 1, 2, 2, &c));
	EXPECT_ERR(c.cqe.error, -EFAULT);
}

/*
 * REDUCE on the pinned pages: operands at different offsets in their
 * pages, 16-byte pairs split across page boundaries on either side, a
 * pin of fewer pages than asked (that chunk bounces), operands not aligned
 * to their type (the step bounces); every result against the reference,
 * every pinned page unpinned, the destination's dirtied.
 */
static void reduce_at(struct kt_ep *a, u8 dt, u8 op, u32 soff, u32 doff,
		      bool pinned)
{
	static u8 want[BIG];
	struct kprog_coll c;
	u32 i, size = dts[dt].size, len = 16 * PAGE_SIZE + 96, n = len / size;
	long dirtied = mock_dirtied_pages;
	u8 *x = sb[0] + soff, *y = rb[0] + doff;

	ASSERT(soff + len <= BIG && doff + len <= BIG);
	fill_dt(dt, x, n, soff + n);
	fill_dt(dt, y, n, doff + 7);
	memcpy(want, y, len);
	for (i = 0; i < n; i++)
		ref_one(dt, op, x + i * size, want + i * size);
	st[0] = red(0, dt, op, x, y, len);
	ASSERT_OK(coll_local(a, st, 1, 1, 1, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_EQ(c.cqe.error, 0);
	if (!EXPECT(!memcmp(y, want, len)))
		kt_fail(__FILE__, __LINE__, "type %u op %u at %u, %u", dt, op,
			soff, doff);
	EXPECT_EQ(mock_pinned_pages, 0);
	if (pinned)
		EXPECT(mock_dirtied_pages > dirtied);
	else
		EXPECT_EQ(mock_dirtied_pages, dirtied);
}

TEST(coll__reduce_on_pinned_pages_handles_offsets_and_split_elements)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	/* both on page starts, then pairs split on one side, on both */
	reduce_at(a, KPROG_DT_DOUBLE_INT, KPROG_OP_MAXLOC, 0, 0, true);
	reduce_at(a, KPROG_DT_DOUBLE_INT, KPROG_OP_MINLOC, 8, 0, true);
	reduce_at(a, KPROG_DT_LONG_INT, KPROG_OP_MAXLOC, 24, 8, true);
	reduce_at(a, KPROG_DT_DOUBLE, KPROG_OP_SUM, 8, 4000, true);
	reduce_at(a, KPROG_DT_INT8, KPROG_OP_PROD, 1, 4095, true);
	/* a pin of one page a call never covers a chunk: every chunk bounces */
	mock_gup_max_pages = 1;
	reduce_at(a, KPROG_DT_SHORT_INT, KPROG_OP_MINLOC, 4088, 4080, false);
	mock_gup_max_pages = 0;
	/* the first chunk's destination cannot be pinned: that chunk bounces */
	mock_gup_errors = 2;
	reduce_at(a, KPROG_DT_UINT64, KPROG_OP_SUM, 0, 8, true);
	/* not aligned to the type: the step bounces, with the same result */
	reduce_at(a, KPROG_DT_DOUBLE, KPROG_OP_MAX, 4, 0, false);
	reduce_at(a, KPROG_DT_INT32, KPROG_OP_BXOR, 0, 2, false);
}

/*
 * Three all-to-all schedules at once on four ranks (tests/mpi/coll_more's
 * batch 10: three MPI_Ialltoallw on MPI_COMM_WORLD), with an eager quota
 * that holds only a few unexpected messages per receiver: the later eager
 * sends of a schedule are refused (-ENOBUFS) and go by rendezvous instead.
 * The ranks post one after another (each one's sends find no receive yet)
 * or the other way round; every schedule must end with every block right
 * and nothing left in flight.
 */
#define A2A_N		4
#define A2A_SCHEDS	3
#define A2A_LEN		1000

static u32 a2a_off(u32 sched, u32 peer)
{
	return (sched * A2A_N + peer) * A2A_LEN;
}

/* The bytes of schedule @sched from @src to @dst. */
static u32 a2a_seed(u32 src, u32 dst, u32 sched)
{
	return 1 + (src * A2A_N + dst) * 8 + sched;
}

static void a2a_under_quota(bool last_rank_first)
{
	static struct kprog_coll_step a2a[A2A_N][A2A_SCHEDS][2 * (A2A_N - 1)];
	struct kt_ep *e[A2A_N];
	struct kprog_coll c;
	u32 done[A2A_N] = { 0 }, r, i, k, p, n;
	struct kprog_cqe cqe;

	/* two unexpected blocks per receiver; the job's eager limit follows */
	kprog_eager_quota = 2 * (A2A_LEN + KPROG_EAGER_OVERHEAD) + 100;
	kt_job(e, A2A_N);
	memset(rb, 0, sizeof(rb));
	for (r = 0; r < A2A_N; r++)
		for (k = 0; k < A2A_SCHEDS; k++)
			for (p = 0; p < A2A_N; p++)
				kt_fill(sb[r] + a2a_off(k, p), A2A_LEN, a2a_seed(r, p, k));
	for (i = 0; i < A2A_N; i++) {
		r = last_rank_first ? A2A_N - 1 - i : i;
		for (k = 0; k < A2A_SCHEDS; k++) {
			struct kprog_coll_step *s = a2a[r][k];

			n = 0;
			for (p = 0; p < A2A_N; p++) {
				if (p == r)
					continue;
				s[n++] = step(KPROG_STEP_RECV, 0, p, NULL, rb[r] + a2a_off(k, p),
					      A2A_LEN);
				s[n++] = step(KPROG_STEP_SEND, 0, p, sb[r] + a2a_off(k, p), NULL,
					      A2A_LEN);
			}
			ASSERT_OK(coll(e[r], s, n, 20 + k, 100 + k, &c));
			if (c.done) {
				EXPECT_EQ(c.cqe.error, 0);
				done[r]++;
			}
		}
	}
	EXPECT(e[0]->ep->job->eager_limit >= A2A_LEN);	/* internal: eager first */
	mock_run_work();
	for (r = 0; r < A2A_N; r++) {
		while (kt_pop(e[r], &cqe)) {
			EXPECT_EQ(cqe.error, 0);
			EXPECT(cqe.req_id >= 100 && cqe.req_id < 100 + A2A_SCHEDS);
			done[r]++;
		}
		EXPECT_EQ(done[r], A2A_SCHEDS);
		for (k = 0; k < A2A_SCHEDS; k++)
			for (p = 0; p < A2A_N; p++)
				if (p != r && !kt_check(rb[r] + a2a_off(k, p), A2A_LEN,
							a2a_seed(p, r, k)))
					kt_fail(__FILE__, __LINE__,
						"rank %u schedule %u block from %u", r, k, p);
		EXPECT_EQ(kt_nr_ops(e[r]), 0);
		EXPECT_EQ(e[r]->ep->eager_bytes, 0);	/* internal */
	}
}

TEST(coll__three_alltoalls_on_four_ranks_past_the_eager_quota)
{
	a2a_under_quota(false);
}

TEST(coll__three_alltoalls_on_four_ranks_past_the_eager_quota_reversed)
{
	a2a_under_quota(true);
}

/*
 * A SEND step to a rank that has left (no transport reaches it any more):
 * the step fails as it starts, whether in the call's first round or in a
 * round started by the worker after another peer's message, and the
 * schedule ends with -ECONNRESET, nothing left in flight.
 */
TEST(coll__send_to_a_rank_that_left_is_econnreset)
{
	struct kt_ep *e[3];
	struct kprog_coll c;

	kt_job(e, 3);
	kt_close(e[2]);
	/* first round */
	st[0] = step(KPROG_STEP_SEND, 0, 2, sb[0], NULL, 8);
	ASSERT_OK(coll(e[0], st, 1, 1, 1, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_ERR(c.cqe.error, -ECONNRESET);
	/* a later round, after rank 1's message */
	st[0] = step(KPROG_STEP_RECV, 0, 1, NULL, rb[0], 8);
	st[1] = step(KPROG_STEP_SEND, 1, 2, sb[0], NULL, 8);
	st[2] = step(KPROG_STEP_RECV, 1, 1, NULL, rb[1], 8);
	ASSERT_OK(coll(e[0], st, 3, 2, 2, &c));
	EXPECT_EQ(c.done, 0);
	st[3] = step(KPROG_STEP_SEND, 0, 0, sb[1], NULL, 8);
	ASSERT_OK(coll(e[1], st + 3, 1, 2, 3, &c));
	EXPECT_EQ(c.done, 1);
	EXPECT_EQ(c.cqe.error, 0);
	mock_run_work();
	EXPECT_CQE(e[0], 2, 0, -ECONNRESET);
	EXPECT_EQ(kt_nr_ops(e[0]), 0);
	EXPECT_EQ(kt_ring_count(e[0]), 0);
}
