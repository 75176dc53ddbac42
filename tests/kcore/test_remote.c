// SPDX-License-Identifier: GPL-2.0
/*
 * The envelope path to and from other nodes, played by the recording
 * fake transport (fake_xport.c): sends to remote ranks, remote eager and
 * rendezvous arrivals into posted and unexpected receives (from process
 * and softirq context), pulls and fins, wildcards mixing local and
 * remote senders, and the loss of a node.
 *
 * The job: ranks 0 and 1 here (node 0), 2 and 3 on node 1, 4 on node 2.
 */
#include <linux/mm.h>
#include <linux/socket.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "op.h"
#include "msg.h"
#include "match.h"
#include "transport.h"
#include "stats.h"
#include "ktest.h"
#include "fake_xport.h"

#define ANY_SRC KPROG_ANY_SOURCE
#define ANY_TAG KPROG_ANY_TAG
#define GiB	(1ULL << 30)

static const u32 map5[5] = { 0, 0, 1, 1, 2 };

/* a = rank 0, b = rank 1, both here; the fake transport installed */
static void remote_job(struct kt_ep **a, struct kt_ep **b)
{
	u64 key = kt_new_key();

	kt_fx_install();
	*a = kt_open();
	*b = kt_open_as(mock_proc_new(1000));
	if (kt_join_map(*a, key, 0, 5, map5, 3, 0) ||
	    kt_join_map(*b, key, 1, 5, map5, 3, 0))
		kt_fatal(__FILE__, __LINE__, "join with a node map");
}

static u64 stat(enum kprog_stat s)
{
	struct kprog_stats v;

	kprog_stats_read(0, &v);
	return v.v[s];
}

static struct kprog_post ctx_post(void *buf, u64 len, u32 context, s32 peer,
				  s32 tag, u64 req_id)
{
	return (struct kprog_post){ .req_id = req_id, .addr = (uintptr_t)buf,
				    .len = len, .context = context,
				    .peer = peer, .tag = tag };
}

/* ---------------------------------------------------------------------
 * Sends to remote ranks
 */
TEST(remote__eager_send_is_handed_to_the_transport_and_done_at_once)
{
	struct kt_ep *a, *b;
	char s[64];
	struct kprog_post p = ctx_post(s, 64, 3, 2, 5, 11);
	struct kt_fx_sent *m = &kt_fx.sent[0];

	remote_job(&a, &b);
	kt_fill(s, 64, 1);
	ASSERT_OK(kt_ioctl(a, KPROG_IOC_SEND, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.bytes, 64);
	EXPECT_EQ(p.cqe.source, 2);
	ASSERT_EQ(kt_fx.nsent, 1);
	EXPECT_EQ(m->env.src, 0);
	EXPECT_EQ(m->env.dst, 2);
	EXPECT_EQ(m->env.context, 3);
	EXPECT_EQ(m->env.tag, 5);
	EXPECT_EQ(m->env.len, 64);
	EXPECT_EQ(m->env.flags, 0);
	EXPECT_EQ(m->send_req, 11);
	EXPECT(m->may_bounce);
	EXPECT(kt_check(m->msg->data, 64, 1));
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(kt_fx.handles, 0);
}

TEST(remote__send_without_a_network_transport_is_ehostunreach)
{
	static u8 big[20000];
	struct kt_ep *a, *b;
	char s[4];

	remote_job(&a, &b);
	kprog_xport_set_net(NULL);	/* the device went away */
	EXPECT_ERR(kt_send(a, 2, 0, s, 4, 1, 0, NULL), -EHOSTUNREACH);
	EXPECT_ERR(kt_send(a, 4, 0, big, sizeof(big), 2, 0, NULL),
		   -EHOSTUNREACH);
	EXPECT_EQ(kt_nr_ops(a), 0);
	kprog_xport_set_net(&kt_fx_xport);
	EXPECT_OK(kt_send(a, 4, 0, s, 4, 3, 0, NULL));
}

TEST(remote__large_send_goes_by_rendezvous_with_a_registered_buffer)
{
	static u8 s[20000], got[20000];
	struct kt_ep *a, *b;
	struct kprog_post p;
	struct kt_fx_sent *m = &kt_fx.sent[0];

	remote_job(&a, &b);
	kt_fill(s, sizeof(s), 2);
	ASSERT_OK(kt_send(a, 3, 7, s, sizeof(s), 21, 0, &p));
	EXPECT_EQ(p.done, 0);
	ASSERT_EQ(kt_fx.nsent, 1);
	EXPECT_EQ(m->env.flags, KPROG_ENV_RNDV);
	EXPECT_EQ(m->env.len, sizeof(s));
	EXPECT_EQ(m->cookie, 0xc0de0000 + 21);
	EXPECT_EQ(m->msg->rd.net.addr, (uintptr_t)s);
	EXPECT_EQ(m->msg->rd.net.len, sizeof(s));
	EXPECT_EQ(kt_fx.handles, 1);
	EXPECT_EQ(kt_nr_ops(a), 1);
	/* the remote receiver reads it and says so */
	EXPECT_EQ(kt_fx_remote_read(0, got, sizeof(got)), sizeof(s));
	EXPECT(kt_check(got, sizeof(got), 2));
	EXPECT_EQ(kt_ring_count(a), 0);
	kt_fx_remote_fin(0, sizeof(s), 0);
	EXPECT_EQ(kt_fx.handles, 0);
	EXPECT_CQE(a, 21, sizeof(s), 0);
	EXPECT_EQ(kt_nr_ops(a), 0);
}

TEST(remote__sync_send_is_a_rendezvous_and_the_fin_error_reaches_the_sender)
{
	struct kt_ep *a, *b;
	char s[8];
	struct kprog_cqe c;

	remote_job(&a, &b);
	ASSERT_OK(kt_send(a, 2, 1, s, 8, 1, KPROG_SEND_SYNC, NULL));
	EXPECT_EQ(kt_fx.sent[0].env.flags, KPROG_ENV_RNDV | KPROG_ENV_SYNC);
	kt_fx_remote_fin(0, 0, -ECONNRESET);
	ASSERT(kt_pop(a, &c));
	EXPECT_EQ(c.req_id, 1);
	EXPECT_ERR(c.error, -ECONNRESET);
	EXPECT_EQ(c.source, 2);
	EXPECT_EQ(c.tag, 1);
}

TEST(remote__eager_send_refused_by_the_transport_goes_by_rendezvous)
{
	struct kt_ep *a, *b;
	char s[8];
	struct kprog_post p;

	remote_job(&a, &b);
	kt_fx.bounce = true;
	ASSERT_OK(kt_send(a, 2, 1, s, 8, 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	ASSERT_EQ(kt_fx.nsent, 1);
	EXPECT_EQ(kt_fx.sent[0].env.flags, KPROG_ENV_RNDV);
	EXPECT(!kt_fx.sent[0].may_bounce);
	kt_fx_remote_fin(0, 8, 0);
	EXPECT_CQE(a, 1, 8, 0);
}

TEST(remote__send_env_failure_fails_the_post_and_returns_everything)
{
	static u8 big[20000];
	struct kt_ep *a, *b;
	char s[8];
	long live = mock_live_allocs;

	remote_job(&a, &b);
	live = mock_live_allocs;
	kt_fx.send_err = -EIO;
	EXPECT_ERR(kt_send(a, 2, 1, s, 8, 1, 0, NULL), -EIO);
	EXPECT_ERR(kt_send(a, 2, 1, big, sizeof(big), 2, 0, NULL), -EIO);
	EXPECT_EQ(kt_fx.handles, 0);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_EQ(kt_ring_count(a), 0);
}

TEST(remote__registration_failure_fails_the_rendezvous_post)
{
	static u8 big[20000];
	struct kt_ep *a, *b;
	long live;

	remote_job(&a, &b);
	live = mock_live_allocs;
	kt_fx.get_handle_err = -ENOMEM;
	EXPECT_ERR(kt_send(a, 2, 1, big, sizeof(big), 2, 0, NULL), -ENOMEM);
	EXPECT_EQ(kt_nr_ops(a), 0);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_EQ(kt_fx.nsent, 0);
}

TEST(remote__rendezvous_send_to_another_node_cannot_be_cancelled)
{
	static u8 big[20000];
	struct kt_ep *a, *b;

	remote_job(&a, &b);
	ASSERT_OK(kt_send(a, 4, 1, big, sizeof(big), 2, 0, NULL));
	EXPECT_ERR(kt_cancel(a, 2), -EBUSY);
	kt_fx_remote_fin(0, 0, -ECANCELED);
	EXPECT_CQE(a, 2, 0, -ECANCELED);
}

TEST(remote__iovec_send_of_6_gib_carries_its_length_in_the_envelope)
{
	struct kt_ep *a, *b;
	struct kprog_iov iov[2] = {
		{ 0x10000000, 3 * GiB }, { 0x10000000 + 3 * GiB, 3 * GiB },
	};

	remote_job(&a, &b);
	/* nothing is read: the remote side pulls the registered buffer */
	ASSERT_OK(kt_send(a, 2, 0, iov, 2, 1, KPROG_POST_IOV, NULL));
	EXPECT_EQ(kt_fx.sent[0].env.len, 6 * GiB);
	EXPECT_EQ(kt_fx.sent[0].msg->rd.net.len, 6 * GiB);
	EXPECT_EQ(a->ep->iov_total, 2);				/* internal */
	kt_fx_remote_fin(0, 6 * GiB, 0);
	EXPECT_CQE(a, 1, 6 * GiB, 0);
	EXPECT_EQ(a->ep->iov_total, 0);
}

/* ---------------------------------------------------------------------
 * Arrivals from remote ranks
 */
TEST(remote__eager_arrival_matches_a_posted_receive)
{
	struct kt_ep *a, *b;
	char d[64], r[64] = {};
	struct kprog_post p = ctx_post(r, 64, 3, 2, 5, 1);

	remote_job(&a, &b);
	kt_fill(d, 64, 3);
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_OK(kt_fx_eager(b, 2, 3, 5, d, 64, false));
	EXPECT_EQ(mock_work_queued(), 0);
	EXPECT_CQE(b, 1, 64, 0);
	EXPECT(kt_check(r, 64, 3));
	EXPECT_EQ(kt_src(b, 2)->held, 0);
}

TEST(remote__eager_arrival_is_queued_and_received_later)
{
	struct kt_ep *a, *b;
	char d[64], r[64] = {};
	struct kprog_probe pr = { .context = 3, .source = ANY_SRC,
				  .tag = ANY_TAG };
	struct kprog_post p = ctx_post(r, 64, 3, 2, 5, 1);
	u32 ev;

	remote_job(&a, &b);
	kt_fill(d, 64, 4);
	ev = kt_events(b);
	EXPECT_OK(kt_fx_eager(b, 2, 3, 5, d, 64, true));	/* softirq */
	EXPECT_EQ(kt_events(b), ev + 1);
	EXPECT_EQ(kt_src(b, 2)->held, 1);
	EXPECT_EQ(b->ep->eager_bytes, 64 + KPROG_EAGER_OVERHEAD); /* internal */
	ASSERT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.out_source, 2);
	EXPECT_EQ(pr.bytes, 64);
	ASSERT_OK(kt_ioctl(b, KPROG_IOC_RECV, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.source, 2);
	EXPECT(kt_check(r, 64, 4));
	EXPECT_EQ(kt_src(b, 2)->held, 0);
	EXPECT_EQ(b->ep->eager_bytes, 0);
}

TEST(remote__eager_arrival_in_a_softirq_is_copied_into_pages_pinned_at_post)
{
	struct kt_ep *a, *b;
	char d[100], r[100] = {}, big[KPROG_ULAND_MAX + 1];
	u64 items = stat(KPROG_STAT_WORK_ITEMS), bytes = stat(KPROG_STAT_BYTES);
	long pinned = mock_pinned_pages;

	remote_job(&a, &b);
	kt_fill(d, 100, 5);
	/* from another node (rank 4): pinned while posted */
	ASSERT_OK(kt_recv(b, 4, 1, r, 100, 1, 0, NULL));
	EXPECT(mock_pinned_pages > pinned);
	EXPECT_OK(kt_fx_eager(b, 4, 0, 1, d, 100, true));	/* softirq */
	EXPECT_CQE(b, 1, 100, 0);		/* complete before any worker ran */
	EXPECT(kt_check(r, 100, 5));
	EXPECT_EQ(stat(KPROG_STAT_WORK_ITEMS) - items, 0);
	EXPECT_EQ(stat(KPROG_STAT_BYTES) - bytes, 100);
	mock_time_advance(TICK_NSEC);		/* the deferred frees */
	mock_run_work();
	EXPECT_EQ(mock_pinned_pages, pinned);
	/* any source may be another node: pinned too */
	ASSERT_OK(kt_recv(b, ANY_SRC, 1, r, 100, 2, 0, NULL));
	EXPECT(mock_pinned_pages > pinned);
	EXPECT_OK(kt_fx_eager(b, 2, 0, 1, d, 50, true));
	EXPECT_CQE(b, 2, 50, 0);
	mock_time_advance(TICK_NSEC);
	mock_run_work();
	EXPECT_EQ(mock_pinned_pages, pinned);
	/* from a rank of this node, or too large: nothing pinned */
	ASSERT_OK(kt_recv(b, 0, 1, r, 100, 3, 0, NULL));
	ASSERT_OK(kt_recv(b, 4, 1, big, sizeof(big), 4, 0, NULL));
	EXPECT_EQ(mock_pinned_pages, pinned);
	EXPECT_OK(kt_cancel(b, 3));
	EXPECT_OK(kt_cancel(b, 4));
	EXPECT_CQE(b, 3, 0, -ECANCELED);
	EXPECT_CQE(b, 4, 0, -ECANCELED);
	/* a receive withdrawn before its message unpins */
	ASSERT_OK(kt_recv(b, 4, 1, r, 100, 5, 0, NULL));
	EXPECT(atomic64_read(&b->proc->mm->pinned_vm) > 0);	/* charged */
	EXPECT_OK(kt_cancel(b, 5));
	EXPECT_CQE(b, 5, 0, -ECANCELED);
	mock_time_advance(TICK_NSEC);
	mock_run_work();
	EXPECT_EQ(mock_pinned_pages, pinned);
	EXPECT_EQ(atomic64_read(&b->proc->mm->pinned_vm), 0);
	/* at its RLIMIT_MEMLOCK: nothing pinned, the worker copies */
	b->proc->sig.rlim[RLIMIT_MEMLOCK].rlim_cur = 0;
	ASSERT_OK(kt_recv(b, 4, 1, r, 100, 6, 0, NULL));
	EXPECT_EQ(mock_pinned_pages, pinned);
	EXPECT_EQ(atomic64_read(&b->proc->mm->pinned_vm), 0);
	EXPECT_OK(kt_fx_eager(b, 4, 0, 1, d, 100, true));
	EXPECT_EQ(mock_run_work(), 1);		/* the eager worker */
	EXPECT_CQE(b, 6, 100, 0);
	b->proc->sig.rlim[RLIMIT_MEMLOCK].rlim_cur = RLIM_INFINITY;
}

TEST(remote__eager_arrival_in_a_softirq_is_copied_by_the_eager_worker)
{
	struct kt_ep *a, *b;
	char d[100], r[100] = {};
	u64 items = stat(KPROG_STAT_WORK_ITEMS), bytes = stat(KPROG_STAT_BYTES);

	remote_job(&a, &b);
	kt_fill(d, 100, 5);
	mock_gup_errors = 1;	/* its pages could not be pinned at post */
	ASSERT_OK(kt_recv(b, 4, 1, r, 100, 1, 0, NULL));
	EXPECT_OK(kt_fx_eager(b, 4, 0, 1, d, 100, true));
	EXPECT_EQ(kt_ring_count(b), 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 1, 100, 0);
	EXPECT(kt_check(r, 100, 5));
	EXPECT_EQ(stat(KPROG_STAT_WORK_ITEMS) - items, 1);
	EXPECT_EQ(stat(KPROG_STAT_BYTES) - bytes, 100);
	/* an empty one needs no worker */
	mock_gup_errors = 1;
	ASSERT_OK(kt_recv(b, 4, 1, r, 100, 2, 0, NULL));
	EXPECT_OK(kt_fx_eager(b, 4, 0, 1, d, 0, true));
	EXPECT_CQE(b, 2, 0, 0);
}

TEST(remote__eager_worker_stops_when_the_receiver_left)
{
	struct kt_ep *a, *b;
	char d[100], r[100];

	remote_job(&a, &b);
	mock_gup_errors = 1;	/* not pinned at post: the worker copies */
	ASSERT_OK(kt_recv(b, 4, 1, r, 100, 1, 0, NULL));
	EXPECT_OK(kt_fx_eager(b, 4, 0, 1, d, 100, true));
	b->ep->dead = true;	/* internal: departure began, worker first */
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 1, 0, -ECONNRESET);
	b->ep->dead = false;
}

TEST(remote__rendezvous_arrival_to_a_posted_receive_is_pulled_and_fins)
{
	struct kt_ep *a, *b;
	char d[3000], r[3000] = {};
	struct kt_fx_pull *pl = &kt_fx.pulls[0];

	remote_job(&a, &b);
	kt_fill(d, 3000, 6);
	ASSERT_OK(kt_recv(b, 2, 5, r, 3000, 1, 0, NULL));
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 3000, 77, false));
	ASSERT_EQ(kt_fx.npulls, 1);
	EXPECT_EQ(pl->cookie, 77);
	EXPECT_EQ(pl->len, 3000);
	EXPECT_EQ(pl->rkey, 42);
	EXPECT_EQ(pl->env.src, 2);
	EXPECT(pl->inline_ok);		/* a process, a small message */
	EXPECT(!kprog_xfer_aborted(pl->x));
	EXPECT_EQ(kt_ring_count(b), 0);
	kt_fx_pull_done(0, d, 0);
	EXPECT_CQE(b, 1, 3000, 0);
	EXPECT(kt_check(r, 3000, 6));
	ASSERT_EQ(kt_fx.nfins, 1);
	EXPECT_EQ(kt_fx.fins[0].cookie, 77);
	EXPECT_EQ(kt_fx.fins[0].bytes, 3000);
	EXPECT_OK(kt_fx.fins[0].err);
}

TEST(remote__rendezvous_queued_then_received_short_is_truncated_not_failed)
{
	struct kt_ep *a, *b;
	static char d[20000], r[1000];
	struct kprog_post p;

	remote_job(&a, &b);
	kt_fill(d, sizeof(d), 7);
	EXPECT_OK(kt_fx_rndv(b, 3, 0, 5, sizeof(d), 78, false));
	EXPECT_EQ(kt_src(b, 3)->held, 1);
	ASSERT_OK(kt_recv(b, ANY_SRC, 5, r, sizeof(r), 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	ASSERT_EQ(kt_fx.npulls, 1);
	EXPECT(!kt_fx.pulls[0].inline_ok);	/* above the eager limit */
	kt_fx_pull_done(0, d, 0);
	EXPECT_CQE(b, 1, sizeof(r), -EMSGSIZE);
	EXPECT(kt_check(r, sizeof(r), 7));
	EXPECT_EQ(kt_fx.fins[0].bytes, sizeof(r));
	EXPECT_OK(kt_fx.fins[0].err);		/* the sender is not truncated */
}

TEST(remote__rendezvous_arriving_in_a_softirq_is_never_pulled_inline)
{
	struct kt_ep *a, *b;
	char r[10];

	remote_job(&a, &b);
	ASSERT_OK(kt_recv(b, 2, 5, r, 10, 1, 0, NULL));
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 10, 79, true));
	ASSERT_EQ(kt_fx.npulls, 1);
	EXPECT(!kt_fx.pulls[0].inline_ok);
	/* reported from the transport's softirq: the op is freed later */
	kt_fx.done_in_softirq = true;
	kt_fx_pull_done(0, "remote ok", 0);
	EXPECT_CQE(b, 1, 10, 0);
	EXPECT(!strcmp(r, "remote ok"));
	mock_time_advance(TICK_NSEC);
	EXPECT_EQ(mock_run_work(), 1);		/* the deferred free, a tick later */
}

TEST(remote__refused_pull_fails_the_receive_and_fins_the_sender)
{
	struct kt_ep *a, *b;
	char r[10];

	remote_job(&a, &b);
	kt_fx.pull_err = -EIO;
	ASSERT_OK(kt_recv(b, 2, 5, r, 10, 1, 0, NULL));
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 10, 80, false));
	EXPECT_CQE(b, 1, 0, -EIO);
	ASSERT_EQ(kt_fx.nfins, 1);
	EXPECT_ERR(kt_fx.fins[0].err, -EIO);
	EXPECT_EQ(kt_fx.fins[0].cookie, 80);
}

TEST(remote__pull_may_complete_before_it_returns)
{
	struct kt_ep *a, *b;
	char r[16] = {};
	struct kprog_post p;

	remote_job(&a, &b);
	kt_fx.pull_now = true;
	kt_fx.pull_data = "pulled at once!";
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 16, 81, false));
	ASSERT_OK(kt_recv(b, 2, 5, r, 16, 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_CQE(b, 1, 16, 0);
	EXPECT(!strcmp(r, "pulled at once!"));
	EXPECT_EQ(kt_fx.fins[0].bytes, 16);
	/* zero bytes: no pull at all */
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 0, 82, false));
	ASSERT_OK(kt_recv(b, 2, 5, r, 16, 2, 0, &p));
	EXPECT_CQE(b, 2, 0, 0);
	EXPECT_EQ(kt_fx.npulls, 1);
	EXPECT_EQ(kt_fx.fins[1].cookie, 82);
}

TEST(remote__message_above_4_gib_is_probed_and_truncated_by_a_small_receive)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = { .source = 2, .tag = ANY_TAG };
	char d[100], r[100];
	struct kprog_post p;

	remote_job(&a, &b);
	kt_fill(d, 100, 9);
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 6 * GiB, 83, false));
	ASSERT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.bytes, 6 * GiB);
	ASSERT_OK(kt_recv(b, 2, 5, r, 100, 1, 0, &p));
	EXPECT_EQ(kt_fx.pulls[0].len, 6 * GiB);
	kt_fx_pull_done(0, d, 0);
	EXPECT_CQE(b, 1, 100, -EMSGSIZE);
	EXPECT(kt_check(r, 100, 9));
	EXPECT_EQ(kt_fx.fins[0].bytes, 100);
}

TEST(remote__wildcards_mix_local_and_remote_senders_in_arrival_order)
{
	struct kt_ep *a, *b;
	char s[4] = "loc", r[4];
	struct kprog_cqe c;
	struct kprog_post p;
	int i;
	const s32 want[4] = { 2, 1, 4, 3 };

	remote_job(&a, &b);
	for (i = 0; i < 4; i++)
		ASSERT_OK(kt_recv(a, ANY_SRC, ANY_TAG, r, 4, 10 + i, 0, NULL));
	EXPECT_OK(kt_fx_eager(a, 2, 0, 1, "r2", 3, false));
	ASSERT_OK(kt_send(b, 0, 2, s, 4, 1, 0, NULL));
	EXPECT_OK(kt_fx_eager(a, 4, 0, 3, "r4", 3, true));
	EXPECT_OK(kt_fx_rndv(a, 3, 0, 4, 4, 84, false));
	kt_fx_pull_done(0, "r3!", 0);
	/* r4 was copied from the softirq: its receive's pages were pinned */
	EXPECT_EQ(mock_run_work(), 0);
	for (i = 0; i < 4; i++) {
		ASSERT(kt_pop(a, &c));
		if (c.req_id == 12) {		/* copied by the worker, last */
			EXPECT_EQ(c.source, 4);
			continue;
		}
		EXPECT_EQ(c.source, want[c.req_id - 10]);
		EXPECT_EQ(c.tag, c.req_id - 10 + 1);
	}
	/* unexpected: the oldest of any source, or of the named one */
	EXPECT_OK(kt_fx_eager(a, 3, 0, 7, "x", 1, false));
	ASSERT_OK(kt_send(b, 0, 7, s, 2, 2, 0, NULL));
	EXPECT_OK(kt_fx_eager(a, 4, 0, 7, "y", 1, false));
	ASSERT_OK(kt_recv(a, 1, 7, r, 4, 20, 0, &p));
	EXPECT_EQ(p.cqe.bytes, 2);
	ASSERT_OK(kt_recv(a, ANY_SRC, 7, r, 4, 21, 0, &p));
	EXPECT_EQ(p.cqe.source, 3);
	ASSERT_OK(kt_recv(a, ANY_SRC, ANY_TAG, r, 4, 22, 0, &p));
	EXPECT_EQ(p.cqe.source, 4);
}

TEST(remote__arrivals_over_the_eager_quota_are_still_queued)
{
	struct kt_ep *a, *b;
	static char d[1000];

	kprog_eager_quota = 1024;
	remote_job(&a, &b);
	/* the fake's arrivals cannot bounce: they are buffered anyway */
	EXPECT_OK(kt_fx_eager(b, 2, 0, 1, d, 700, false));
	EXPECT_OK(kt_fx_eager(b, 2, 0, 1, d, 700, false));
	EXPECT_EQ(b->ep->eager_bytes, 2 * (700 + KPROG_EAGER_OVERHEAD));
	EXPECT_EQ(kt_src(b, 2)->held, 2);
}

/* ---------------------------------------------------------------------
 * Loss of a node
 */
TEST(remote__node_lost_mid_pull_fails_the_receive)
{
	struct kt_ep *a, *b;
	char r[3000];
	struct kprog_post p;

	remote_job(&a, &b);
	ASSERT_OK(kt_recv(b, 2, 5, r, 3000, 1, 0, NULL));
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 3000, 85, false));
	ASSERT_EQ(kt_fx.npulls, 1);
	kt_fx_node_lost(b, 1);
	EXPECT_CQE(b, 1, 0, -ECONNRESET);
	ASSERT_EQ(kt_fx.nfins, 1);
	EXPECT_ERR(kt_fx.fins[0].err, -ECONNRESET);
	EXPECT_EQ(kt_src(b, 2)->flags, KPROG_SRC_LEFT);
	EXPECT_EQ(kt_src(b, 3)->flags, KPROG_SRC_LEFT);
	EXPECT_EQ(kt_src(b, 4)->flags, 0);
	/* node 2 is still there */
	ASSERT_OK(kt_recv(b, 4, 5, r, 3000, 2, 0, &p));
	EXPECT_OK(kt_fx_eager(b, 4, 0, 5, "ok", 3, false));
	EXPECT_CQE(b, 2, 3, 0);
}

TEST(remote__node_lost_fails_what_waits_for_its_ranks_and_keeps_eager_data)
{
	struct kt_ep *a, *b;
	static u8 big[20000];
	char r[16] = {};
	struct kprog_probe pr = { .source = 3, .tag = 9,
				  .flags = KPROG_PROBE_DEQUEUE, .msg_id = 5 };
	struct kprog_post q = {
		.req_id = 6, .addr = (uintptr_t)r, .len = 16,
		.flags = KPROG_RECV_MESSAGE, .msg_id = 5,
	};
	struct kprog_post p;
	u32 ev;

	remote_job(&a, &b);
	ASSERT_OK(kt_recv(a, 3, 0, r, 16, 1, 0, NULL));		/* fails */
	ASSERT_OK(kt_recv(a, ANY_SRC, 0, r, 16, 2, 0, NULL));	/* stays */
	ASSERT_OK(kt_recv(b, 2, 0, r, 16, 3, 0, NULL));		/* fails */
	EXPECT_OK(kt_fx_rndv(a, 2, 0, 8, 100, 86, false));	/* withdrawn */
	EXPECT_OK(kt_fx_eager(a, 3, 0, 8, "kept", 5, false));	/* stays */
	EXPECT_OK(kt_fx_rndv(a, 3, 0, 9, 100, 87, false));	/* mprobed */
	ASSERT_OK(kt_probe(a, &pr));
	ASSERT_EQ(pr.found, 1);
	ASSERT_OK(kt_send(a, 2, 0, big, sizeof(big), 4, 0, NULL)); /* fails */
	EXPECT_EQ(kt_src(a, 2)->held, 1);
	EXPECT_EQ(kt_src(a, 3)->held, 1);
	ev = kt_events(a);
	kt_fx_node_lost(a, 1);
	EXPECT_EQ(kt_events(a), ev + 2);	/* one per rank of the node */
	EXPECT_CQE(a, 4, 0, -ECONNRESET);	/* the send in flight */
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_EQ(kt_ring_count(a), 0);
	EXPECT_CQE(b, 3, 0, -ECONNRESET);
	EXPECT_EQ(kt_src(a, 2)->held, 0);
	ASSERT_EQ(kt_fx.nfins, 1);		/* the withdrawn rendezvous */
	EXPECT_EQ(kt_fx.fins[0].cookie, 86);
	EXPECT_ERR(kt_fx.fins[0].err, -ECONNRESET);
	/* the eager message is still there */
	ASSERT_OK(kt_recv(a, 3, 8, r, 16, 5, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_OK(p.cqe.error);
	EXPECT(!strcmp(r, "kept"));
	/* the mprobed rendezvous cannot be pulled any more */
	ASSERT_OK(kt_ioctl(a, KPROG_IOC_RECV, &q));
	EXPECT_EQ(q.done, 1);
	EXPECT_ERR(q.cqe.error, -ECONNRESET);
	EXPECT_EQ(kt_fx.fins[1].cookie, 87);
	EXPECT_EQ(kt_fx.npulls, 0);
	EXPECT_OK(kt_cancel(a, 2));
}

static struct kt_ep *hook_ep;

/* The transport notices that the receiver left and ends its pull. */
static void transport_ends_pull(void *arg)
{
	struct kt_fx_pull *pl = &kt_fx.pulls[0];

	if (pl->x && kprog_xfer_aborted(pl->x))
		kt_fx_pull_done(0, NULL, -ECONNRESET);
	mock_schedule_hook = NULL;
}

TEST(remote__receiver_closing_with_a_pull_in_flight_waits_for_the_transport)
{
	struct kt_ep *a, *b;
	char r[100];

	remote_job(&a, &b);
	ASSERT_OK(kt_recv(b, 2, 5, r, 100, 1, 0, NULL));
	EXPECT_OK(kt_fx_rndv(b, 2, 0, 5, 100, 88, false));
	hook_ep = b;
	mock_schedule_hook = transport_ends_pull;
	kt_close(b);
	EXPECT_EQ(mock_schedules, 1);
	EXPECT_ERR(kt_fx.fins[0].err, -ECONNRESET);
}

TEST(remote__receiver_closing_drops_queued_remote_rendezvous_with_a_fin)
{
	struct kt_ep *a, *b;

	remote_job(&a, &b);
	EXPECT_OK(kt_fx_rndv(b, 4, 0, 5, 100, 89, true));
	EXPECT_OK(kt_fx_eager(b, 4, 0, 5, "e", 2, false));
	kt_close(b);
	ASSERT_EQ(kt_fx.nfins, 1);
	EXPECT_EQ(kt_fx.fins[0].cookie, 89);
	EXPECT_ERR(kt_fx.fins[0].err, -ECONNRESET);
}

TEST(remote__receive_or_blocking_probe_naming_a_lost_rank_fails_at_once)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = { .source = 3, .tag = ANY_TAG,
				  .flags = KPROG_PROBE_BLOCK };
	char r[8];
	struct kprog_post p;

	remote_job(&a, &b);
	EXPECT_OK(kt_fx_eager(a, 3, 0, 1, "late", 5, false));
	kt_fx_node_lost(a, 1);
	/* what it sent before is still there */
	ASSERT_OK(kt_probe(a, &pr));
	EXPECT_EQ(pr.found, 1);
	ASSERT_OK(kt_recv(a, 3, 1, r, 8, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_OK(p.cqe.error);
	/* then, as for a local rank that left: no receive waits forever */
	ASSERT_OK(kt_recv(a, 3, 1, r, 8, 2, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_ERR(p.cqe.error, -ECONNRESET);
	EXPECT_ERR(kt_probe(a, &pr), -ECONNRESET);
	EXPECT_EQ(mock_schedules, 0);
	/* the other node is still reachable, and any-source still waits */
	ASSERT_OK(kt_recv(b, ANY_SRC, 1, r, 8, 3, 0, &p));
	EXPECT_EQ(p.done, 0);
	ASSERT_OK(kt_recv(b, 4, 1, r, 8, 4, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_OK(kt_cancel(b, 3));
	EXPECT_OK(kt_cancel(b, 4));
}

/* Internal: a rendezvous handed over for a sender already gone. */
TEST(remote__rendezvous_started_for_a_departed_sender_fails_without_a_pull)
{
	struct kt_ep *a, *b;
	struct kprog_env env = { .src = 2, .dst = 0, .len = 10,
				 .flags = KPROG_ENV_RNDV };
	struct kprog_msg *msg;
	struct kprog_op *rop;

	remote_job(&a, &b);
	msg = kprog_msg_alloc(&env, GFP_KERNEL);
	ASSERT(msg);
	msg->xport = &kt_fx_xport;
	msg->rd.net.cookie = 90;
	msg->src_gone = true;
	rop = kt_op_new(a, 1, false);
	kprog_op_get(rop);		/* the transfer's reference */
	kprog_rndv_start(msg, rop, true);
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_EQ(kt_fx.npulls, 0);
	ASSERT_EQ(kt_fx.nfins, 1);
	EXPECT_EQ(kt_fx.fins[0].cookie, 90);
	EXPECT_ERR(kt_fx.fins[0].err, -ECONNRESET);
}

TEST(remote__a_rank_leaving_a_job_with_remote_ranks_tells_the_transport)
{
	struct kt_ep *a, *b, *c;

	remote_job(&a, &b);
	kt_close(b);
	ASSERT_EQ(kt_fx.nleft, 1);
	EXPECT_EQ(kt_fx.left[0], 1);
	/* Even after its device went away (the job keeps the transport). */
	kprog_xport_set_net(NULL);
	kt_close(a);
	ASSERT_EQ(kt_fx.nleft, 2);
	EXPECT_EQ(kt_fx.left[1], 0);
	kprog_xport_set_net(&kt_fx_xport);
	/* A job on this node only has nobody to tell. */
	c = kt_open();
	ASSERT_OK(kt_join(c, kt_new_key(), 0, 1));
	kt_close(c);
	EXPECT_EQ(kt_fx.nleft, 2);
}

/* ---------------------------------------------------------------------
 * KPROG_IOC_NET_CONN: only for a joined endpoint, only toward its job's
 * other nodes (127.0.0.1 is node 0, this one; 127.0.0.2 and .3 the others)
 */
static struct kprog_net_conn conn_to(u8 last)
{
	struct kprog_net_conn c = { .op = KPROG_NET_PREPARE };

	c.peer.family = AF_INET;
	c.peer.addr[0] = 127;
	c.peer.addr[3] = last;
	return c;
}

TEST(remote__net_conn_needs_join_and_a_node_of_the_job)
{
	struct kprog_net_conn c = conn_to(2);
	struct kt_ep *a, *b, *lone;

	kt_fx_install();
	lone = kt_open();
	EXPECT_ERR(kt_ioctl(lone, KPROG_IOC_NET_CONN, &c), -EBADFD);
	EXPECT_ERR(kt_ioctl(lone, KPROG_IOC_NET_CONN, (void *)MOCK_BAD_UADDR),
		   -EBADFD);
	/* a job on this node only has no other node */
	ASSERT_OK(kt_join(lone, kt_new_key(), 0, 1));
	EXPECT_ERR(kt_ioctl(lone, KPROG_IOC_NET_CONN, &c), -EINVAL);
	EXPECT_EQ(kt_fx.nconns, 0);

	remote_job(&a, &b);
	EXPECT_OK(kt_ioctl(a, KPROG_IOC_NET_CONN, &c));
	EXPECT_EQ(c.status, KPROG_NET_CONNECTED);
	c = conn_to(3);
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_NET_CONN, &c));
	ASSERT_EQ(kt_fx.nconns, 2);
	EXPECT_EQ(kt_fx.conns[0].addr[3], 2);
	EXPECT_EQ(kt_fx.conns[1].addr[3], 3);
	/* this node, nodes not in the map, another family: refused */
	c = conn_to(1);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, &c), -EINVAL);
	c = conn_to(4);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, &c), -EINVAL);
	c = conn_to(2);
	c.peer.family = AF_INET6;
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, &c), -EINVAL);
	c.peer.family = 0;
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, &c), -EINVAL);
	EXPECT_EQ(kt_fx.nconns, 2);
	/* the transport's errors and unreadable or unwritable arguments */
	c = conn_to(2);
	kt_fx.conn_err = -ENODEV;
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, &c), -ENODEV);
	kt_fx.conn_err = 0;
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, (void *)MOCK_BAD_UADDR),
		   -EFAULT);
	mock_copy_to_user_errors = 1;
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_NET_CONN, &c), -EFAULT);
	EXPECT_EQ(kt_fx.nconns, 4);
}
