// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests: matching (order, contexts, tags, wildcards), unexpected
 * messages and probe/mprobe, cancel, truncation, and the switch between
 * eager and rendezvous. All endpoints live in one process (one fd each);
 * a few tests add a thread or a forked process as a sender.
 */
#include <limits.h>
#include "kprog_test.h"

#define JOB_SIZE	5	/* ranks 0..3 joined by the fixture, 4 free */
#define NEP		4
#define QUIET_MS	300	/* "nothing arrives" is checked this long */

FIXTURE(job) {
	struct kp_ep e[NEP];
	__u64 key;
};

FIXTURE_SETUP(job)
{
	int ret;

	self->key = kp_key();
	ret = kp_job_open(self->e, NEP, JOB_SIZE, self->key, 0, 0);
	ASSERT_EQ(0, ret) TH_LOG("job: %s", kp_strerr(ret));
}

FIXTURE_TEARDOWN(job)
{
	kp_job_close(self->e, NEP);
}

static void *msg_buf(size_t len, __u64 seed)
{
	void *b = kp_alloc(len);

	if (b)
		kp_fill(b, len, seed, 0);
	return b;
}

/* Complete @p on @e and check it received @len bytes of stream @seed. */
static void check_recv(struct __test_metadata *_metadata, struct kp_ep *e,
		       const struct kprog_post *p, const void *buf,
		       size_t len, __u64 seed, int src, int tag)
{
	struct kprog_cqe c;
	int ret = kp_complete(e, p, &c, KP_TMO_MS);

	ASSERT_EQ(0, ret) TH_LOG("recv req %llu: %s",
				 (unsigned long long)p->req_id, kp_strerr(ret));
	EXPECT_EQ(p->req_id, c.req_id);
	EXPECT_EQ(0, c.error) TH_LOG("req %llu", (unsigned long long)p->req_id);
	EXPECT_EQ(len, c.bytes) TH_LOG("req %llu", (unsigned long long)p->req_id);
	EXPECT_EQ(src, c.source);
	EXPECT_EQ(tag, c.tag);
	EXPECT_EQ(0, c.flags);
	EXPECT_EQ(-1, kp_check(buf, len, seed, 0))
		TH_LOG("req %llu: data is not message %llu",
		       (unsigned long long)p->req_id, (unsigned long long)seed);
}

/* Complete the send @p and check its completion. */
static void check_send(struct __test_metadata *_metadata, struct kp_ep *e,
		       const struct kprog_post *p, size_t len, int dst, int tag)
{
	struct kprog_cqe c;
	int ret = kp_complete(e, p, &c, KP_TMO_MS);

	ASSERT_EQ(0, ret) TH_LOG("send req %llu: %s",
				 (unsigned long long)p->req_id, kp_strerr(ret));
	EXPECT_EQ(p->req_id, c.req_id);
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(len, c.bytes);
	EXPECT_EQ(dst, c.source);
	EXPECT_EQ(tag, c.tag);
	EXPECT_EQ(0, c.flags);
}

static int probe_found(struct kp_ep *e, __u32 ctx, int src, int tag)
{
	struct kprog_probe pr;

	if (kp_probe(e, ctx, src, tag, 0, 0, &pr))
		return -1;
	return pr.found;
}

/* ---------------- 2. matching order ---------------- */

enum { UNEXPECTED, POSTED };

static void order_test_flags(struct __test_metadata *_metadata,
			     FIXTURE_DATA(job) *self, const size_t *lens,
			     int n, int mode, unsigned int sync_mask)
{
	struct kp_ep *s = &self->e[1], *r = &self->e[0];
	struct kprog_post ps[16], pr[16];
	void *sb[16], *rb[16];
	size_t max = 0;
	int i;

	ASSERT_GE(16, n);
	for (i = 0; i < n; i++)
		if (lens[i] > max)
			max = lens[i];
	for (i = 0; i < n; i++) {
		sb[i] = msg_buf(lens[i], 100 + i);
		rb[i] = kp_alloc(max);
		ASSERT_NE(NULL, sb[i]);
		ASSERT_NE(NULL, rb[i]);
	}
	if (mode == POSTED)
		for (i = 0; i < n; i++) {
			ASSERT_EQ(0, kp_recv(r, 200 + i, rb[i], max, 1, 5, 0,
					     0, &pr[i]));
			EXPECT_EQ(0, pr[i].done);
		}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, kp_send(s, 300 + i, sb[i], lens[i], 0, 5, 0,
				     (sync_mask >> i) & 1 ? KPROG_SEND_SYNC : 0,
				     &ps[i]));
		if (lens[i] > kp_eager(s) || ((sync_mask >> i) & 1)) {
			EXPECT_EQ(0, ps[i].done) TH_LOG("msg %d", i);
		}
	}
	if (mode == UNEXPECTED)
		for (i = 0; i < n; i++)
			ASSERT_EQ(0, kp_recv(r, 200 + i, rb[i], max, 1, 5, 0,
					     0, &pr[i]));
	for (i = 0; i < n; i++)
		check_recv(_metadata, r, &pr[i], rb[i], lens[i], 100 + i, 1, 5);
	for (i = 0; i < n; i++)
		check_send(_metadata, s, &ps[i], lens[i], 0, 5);
	for (i = 0; i < n; i++) {
		kp_free(sb[i], lens[i]);
		kp_free(rb[i], max);
	}
}

static void order_test(struct __test_metadata *_metadata,
		       FIXTURE_DATA(job) *self, const size_t *lens, int n,
		       int mode)
{
	order_test_flags(_metadata, self, lens, n, mode, 0);
}

TEST_F_TIMEOUT(job, order_eager_unexpected, 60)
{
	size_t lens[16];
	int i;

	for (i = 0; i < 16; i++)
		lens[i] = 64 + i;
	order_test(_metadata, self, lens, 16, UNEXPECTED);
}

TEST_F_TIMEOUT(job, order_eager_posted, 60)
{
	size_t lens[16];
	int i;

	for (i = 0; i < 16; i++)
		lens[i] = 64 + i;
	order_test(_metadata, self, lens, 16, POSTED);
}

TEST_F_TIMEOUT(job, order_rndv_unexpected, 60)
{
	size_t r = kp_rndv_size(&self->e[0], 64 * 1024);
	size_t lens[6];
	int i;

	for (i = 0; i < 6; i++)
		lens[i] = r + i * 4097;
	order_test(_metadata, self, lens, 6, UNEXPECTED);
}

TEST_F_TIMEOUT(job, order_rndv_posted, 60)
{
	size_t r = kp_rndv_size(&self->e[0], 64 * 1024);
	size_t lens[6];
	int i;

	for (i = 0; i < 6; i++)
		lens[i] = r + i * 4097;
	order_test(_metadata, self, lens, 6, POSTED);
}

/* eager after rendezvous must not overtake it, nor the other way round */
TEST_F_TIMEOUT(job, order_mixed_unexpected, 60)
{
	size_t r = kp_rndv_size(&self->e[0], 64 * 1024);
	size_t lens[] = { 100, r, 10, r + 1, 200, 300, r + 2, 1 };

	order_test(_metadata, self, lens, ARRAY_SIZE(lens), UNEXPECTED);
}

TEST_F_TIMEOUT(job, order_mixed_posted, 60)
{
	size_t r = kp_rndv_size(&self->e[0], 64 * 1024);
	size_t lens[] = { 100, r, 10, r + 1, 200, 300, r + 2, 1 };

	order_test(_metadata, self, lens, ARRAY_SIZE(lens), POSTED);
}

/* synchronous small sends interleaved with eager ones stay in order */
TEST_F_TIMEOUT(job, order_sync_and_eager, 60)
{
	size_t lens[] = { 10, 20, 30, 0, 40, 50, 0, 60 };

	order_test_flags(_metadata, self, lens, ARRAY_SIZE(lens), UNEXPECTED,
			 0x5a);
	order_test_flags(_metadata, self, lens, ARRAY_SIZE(lens), POSTED,
			 0xa5);
}

/* Sends on different contexts never match each other. */
TEST_F_TIMEOUT(job, contexts_never_match, 60)
{
	struct kp_ep *s = &self->e[1], *r = &self->e[0];
	void *sb = msg_buf(128, 7), *rb = kp_alloc(128), *rb2 = kp_alloc(128);
	struct kprog_post ps, pr, pr2;
	size_t big = kp_rndv_size(r, 64 * 1024);
	void *bsb = msg_buf(big, 8), *brb = kp_alloc(big);
	struct kprog_post pbs, pbr;
	struct kprog_cqe c;

	/* unexpected on ctx 1, receive posted on ctx 2 */
	ASSERT_EQ(0, kp_send(s, 1, sb, 128, 0, 0, 1, 0, &ps));
	ASSERT_EQ(0, kp_recv(r, 2, rb2, 128, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
			     2, 0, &pr2));
	EXPECT_EQ(0, pr2.done);
	EXPECT_FALSE(kp_has_cqe(r, 2, QUIET_MS));
	EXPECT_EQ(0, probe_found(r, 2, KPROG_ANY_SOURCE, KPROG_ANY_TAG));
	EXPECT_EQ(0, probe_found(r, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG));
	EXPECT_EQ(1, probe_found(r, 1, KPROG_ANY_SOURCE, KPROG_ANY_TAG));
	ASSERT_EQ(0, kp_recv(r, 3, rb, 128, 1, 0, 1, 0, &pr));
	check_recv(_metadata, r, &pr, rb, 128, 7, 1, 0);
	check_send(_metadata, s, &ps, 128, 0, 0);

	/* posted on ctx 2 (still pending), a rendezvous send on ctx 3 */
	ASSERT_EQ(0, kp_send(s, 4, bsb, big, 0, 0, 3, 0, &pbs));
	EXPECT_FALSE(kp_has_cqe(r, 2, QUIET_MS));
	EXPECT_FALSE(kp_has_cqe(s, 4, 0));
	ASSERT_EQ(0, kp_recv(r, 5, brb, big, 1, 0, 3, 0, &pbr));
	check_recv(_metadata, r, &pbr, brb, big, 8, 1, 0);
	check_send(_metadata, s, &pbs, big, 0, 0);

	/* the ctx 2 receive is still unmatched */
	ASSERT_EQ(0, kp_cancel(r, 2));
	ASSERT_EQ(0, kp_wait_cqe(r, 2, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
}

/* A receive takes only its tag; posted receives are tried in order. */
TEST_F_TIMEOUT(job, tag_and_posted_order, 60)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m1 = msg_buf(64, 1), *m2 = msg_buf(64, 2), *m3 = msg_buf(64, 3),
	     *m4 = msg_buf(64, 4);
	void *b[4];
	struct kprog_post pr[4], ps[4];
	int i;

	for (i = 0; i < 4; i++)
		b[i] = kp_alloc(64);
	ASSERT_EQ(0, kp_recv(r, 10, b[0], 64, 1, 2, 0, 0, &pr[0]));
	ASSERT_EQ(0, kp_recv(r, 11, b[1], 64, 1, 1, 0, 0, &pr[1]));
	ASSERT_EQ(0, kp_send(s, 20, m1, 64, 0, 1, 0, 0, &ps[0]));
	check_recv(_metadata, r, &pr[1], b[1], 64, 1, 1, 1);
	EXPECT_FALSE(kp_has_cqe(r, 10, 0));
	ASSERT_EQ(0, kp_send(s, 21, m2, 64, 0, 2, 0, 0, &ps[1]));
	check_recv(_metadata, r, &pr[0], b[0], 64, 2, 1, 2);

	/* ANY_SOURCE posted before a specific-source receive wins */
	ASSERT_EQ(0, kp_recv(r, 12, b[2], 64, KPROG_ANY_SOURCE, 7, 0, 0,
			     &pr[2]));
	ASSERT_EQ(0, kp_recv(r, 13, b[3], 64, 1, 7, 0, 0, &pr[3]));
	ASSERT_EQ(0, kp_send(s, 22, m3, 64, 0, 7, 0, 0, &ps[2]));
	check_recv(_metadata, r, &pr[2], b[2], 64, 3, 1, 7);
	EXPECT_FALSE(kp_has_cqe(r, 13, 0));
	ASSERT_EQ(0, kp_send(s, 23, m4, 64, 0, 7, 0, 0, &ps[3]));
	check_recv(_metadata, r, &pr[3], b[3], 64, 4, 1, 7);
	for (i = 0; i < 4; i++)
		check_send(_metadata, s, &ps[i], 64, 0, i == 0 ? 1 :
			   i == 1 ? 2 : 7);
}

/*
 * KPROG_IOC_RECV_BATCH: the entries posted in order as KPROG_IOC_RECV
 * would post them (one whose message is there takes it at once), up to
 * a bad entry, whose errno the call returns; nothing after it is posted.
 */
TEST_F_TIMEOUT(job, recv_batch_posts_in_order_up_to_a_bad_entry, 60)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m[4], *b[5];
	struct kprog_post v[5], ps[4];
	struct kprog_recv_batch rb;
	static const int tags[5] = { 4, 5, 5, 5, 6 };
	int i;

	for (i = 0; i < 4; i++)
		m[i] = msg_buf(64, i + 1);
	for (i = 0; i < 5; i++) {
		b[i] = kp_alloc(64);
		memset(&v[i], 0, sizeof(v[i]));
		v[i].req_id = 10 + i;
		v[i].addr = (__u64)(uintptr_t)b[i];
		v[i].len = 64;
		v[i].peer = 1;
		v[i].tag = tags[i];
		v[i].done = 0xdeadbeef;
	}
	v[3].peer = JOB_SIZE;		/* no such rank */
	ASSERT_EQ(0, kp_send(s, 20, m[0], 64, 0, 4, 0, 0, &ps[0]));
	memset(&rb, 0, sizeof(rb));
	rb.posts = (__u64)(uintptr_t)v;
	rb.count = 5;
	rb.posted = 99;
	EXPECT_EQ(-1, ioctl(r->fd, KPROG_IOC_RECV_BATCH, &rb));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(3, rb.posted);
	EXPECT_EQ(1, v[0].done);
	EXPECT_EQ(0, v[1].done);
	EXPECT_EQ(0, v[2].done);
	check_recv(_metadata, r, &v[0], b[0], 64, 1, 1, 4);
	ASSERT_EQ(0, kp_send(s, 21, m[1], 64, 0, 5, 0, 0, &ps[1]));
	ASSERT_EQ(0, kp_send(s, 22, m[2], 64, 0, 5, 0, 0, &ps[2]));
	check_recv(_metadata, r, &v[1], b[1], 64, 2, 1, 5);
	check_recv(_metadata, r, &v[2], b[2], 64, 3, 1, 5);
	/* the entry after the bad one was not posted */
	ASSERT_EQ(0, kp_send(s, 23, m[3], 64, 0, 6, 0, 0, &ps[3]));
	EXPECT_EQ(1, probe_found(r, 0, 1, 6));
	EXPECT_FALSE(kp_has_cqe(r, 14, 0));
	for (i = 0; i < 4; i++)
		check_send(_metadata, s, &ps[i], 64, 0, i ? (i < 3 ? 5 : 6) : 4);
	rb.count = KPROG_RECV_BATCH_MAX + 1;
	EXPECT_EQ(-1, ioctl(r->fd, KPROG_IOC_RECV_BATCH, &rb));
	EXPECT_EQ(EINVAL, errno);
}

/* A specific source skips an earlier message from another rank. */
TEST_F_TIMEOUT(job, source_matching, 60)
{
	struct kp_ep *r = &self->e[0];
	void *m1 = msg_buf(80, 11), *m2 = msg_buf(80, 12);
	void *b1 = kp_alloc(80), *b2 = kp_alloc(80);
	struct kprog_post p1, p2, q1, q2;

	ASSERT_EQ(0, kp_send(&self->e[1], 1, m1, 80, 0, 3, 0, 0, &p1));
	ASSERT_EQ(0, kp_send(&self->e[2], 2, m2, 80, 0, 3, 0, 0, &p2));
	ASSERT_EQ(0, kp_recv(r, 3, b2, 80, 2, 3, 0, 0, &q2));
	check_recv(_metadata, r, &q2, b2, 80, 12, 2, 3);
	ASSERT_EQ(0, kp_recv(r, 4, b1, 80, 1, 3, 0, 0, &q1));
	check_recv(_metadata, r, &q1, b1, 80, 11, 1, 3);
	check_send(_metadata, &self->e[1], &p1, 80, 0, 3);
	check_send(_metadata, &self->e[2], &p2, 80, 0, 3);
}

/* A rank sends to itself, eager and rendezvous. */
TEST_F_TIMEOUT(job, send_to_self, 60)
{
	struct kp_ep *e = &self->e[2];
	size_t big = kp_rndv_size(e, 64 * 1024);
	void *m1 = msg_buf(50, 21), *m2 = msg_buf(big, 22);
	void *b1 = kp_alloc(50), *b2 = kp_alloc(big);
	struct kprog_post s1, s2, r1, r2;

	ASSERT_EQ(0, kp_send(e, 1, m1, 50, 2, 9, 0, 0, &s1));
	ASSERT_EQ(0, kp_send(e, 2, m2, big, 2, 9, 0, 0, &s2));
	ASSERT_EQ(0, kp_recv(e, 3, b1, 50, 2, 9, 0, 0, &r1));
	ASSERT_EQ(0, kp_recv(e, 4, b2, big, KPROG_ANY_SOURCE, 9, 0, 0, &r2));
	check_recv(_metadata, e, &r1, b1, 50, 21, 2, 9);
	check_recv(_metadata, e, &r2, b2, big, 22, 2, 9);
	check_send(_metadata, e, &s1, 50, 2, 9);
	check_send(_metadata, e, &s2, big, 2, 9);
}

/* ---------------- 3. wildcards ---------------- */

TEST_F_TIMEOUT(job, wildcards_unexpected, 60)
{
	struct kp_ep *r = &self->e[0];
	struct kprog_post ps[4], pr[4];
	void *b[4];
	int i;

	for (i = 1; i <= 3; i++) {
		void *m = msg_buf(90 + i, 40 + i);

		ASSERT_EQ(0, kp_send(&self->e[i], i, m, 90 + i, 0, 11 * i, 0,
				     0, &ps[i]));
		b[i] = kp_alloc(128);
	}
	ASSERT_EQ(0, kp_recv(r, 12, b[2], 128, KPROG_ANY_SOURCE, 22, 0, 0,
			     &pr[2]));
	check_recv(_metadata, r, &pr[2], b[2], 92, 42, 2, 22);
	ASSERT_EQ(0, kp_recv(r, 13, b[3], 128, 3, KPROG_ANY_TAG, 0, 0,
			     &pr[3]));
	check_recv(_metadata, r, &pr[3], b[3], 93, 43, 3, 33);
	ASSERT_EQ(0, kp_recv(r, 11, b[1], 128, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
			     0, 0, &pr[1]));
	check_recv(_metadata, r, &pr[1], b[1], 91, 41, 1, 11);
	for (i = 1; i <= 3; i++)
		check_send(_metadata, &self->e[i], &ps[i], 90 + i, 0, 11 * i);
}

TEST_F_TIMEOUT(job, wildcards_posted, 60)
{
	struct kp_ep *r = &self->e[0];
	size_t big = kp_rndv_size(r, 64 * 1024);
	void *m1 = msg_buf(70, 51), *m2 = msg_buf(big, 52),
	     *m3 = msg_buf(70, 53);
	void *b1 = kp_alloc(big), *b2 = kp_alloc(big), *b3 = kp_alloc(big);
	struct kprog_post r1, r2, r3, s1, s2, s3;

	ASSERT_EQ(0, kp_recv(r, 1, b1, big, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
			     0, 0, &r1));
	ASSERT_EQ(0, kp_recv(r, 2, b2, big, KPROG_ANY_SOURCE, 9, 0, 0, &r2));
	ASSERT_EQ(0, kp_send(&self->e[2], 3, m1, 70, 0, 5, 0, 0, &s1));
	check_recv(_metadata, r, &r1, b1, 70, 51, 2, 5);
	/* tag 8 from rank 3 does not match (ANY_SOURCE, 9) */
	ASSERT_EQ(0, kp_send(&self->e[3], 4, m3, 70, 0, 8, 0, 0, &s3));
	EXPECT_FALSE(kp_has_cqe(r, 2, QUIET_MS));
	/* rendezvous from rank 1 with tag 9 does */
	ASSERT_EQ(0, kp_send(&self->e[1], 5, m2, big, 0, 9, 0, 0, &s2));
	check_recv(_metadata, r, &r2, b2, big, 52, 1, 9);
	ASSERT_EQ(0, kp_recv(r, 6, b3, big, 3, KPROG_ANY_TAG, 0, 0, &r3));
	check_recv(_metadata, r, &r3, b3, 70, 53, 3, 8);
	check_send(_metadata, &self->e[2], &s1, 70, 0, 5);
	check_send(_metadata, &self->e[1], &s2, big, 0, 9);
	check_send(_metadata, &self->e[3], &s3, 70, 0, 8);
}

/* ---------------- 4. unexpected messages and probe ---------------- */

TEST_F_TIMEOUT(job, probe_unexpected, 60)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	size_t big = kp_rndv_size(r, 64 * 1024);
	void *m = msg_buf(100, 61), *mb = msg_buf(big, 62);
	void *b = kp_alloc(100), *bb = kp_alloc(big);
	struct kprog_probe pr;
	struct kprog_post ps, psb, p, pb;

	ASSERT_EQ(0, kp_send(s, 1, m, 100, 0, 9, 0, 0, &ps));
	ASSERT_EQ(0, kp_probe(r, 0, 1, 9, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(1, pr.out_source);
	EXPECT_EQ(9, pr.out_tag);
	EXPECT_EQ(100, pr.bytes);
	/* probing does not consume: again, with wildcards */
	ASSERT_EQ(0, kp_probe(r, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0,
			      &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(1, pr.out_source);
	EXPECT_EQ(9, pr.out_tag);
	EXPECT_EQ(100, pr.bytes);
	EXPECT_EQ(0, probe_found(r, 0, 2, KPROG_ANY_TAG));
	EXPECT_EQ(0, probe_found(r, 0, 1, 8));
	EXPECT_EQ(0, probe_found(r, 1, 1, 9));
	EXPECT_EQ(0, probe_found(s, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG));

	/* rendezvous: probe reports the full length, the send stays open */
	ASSERT_EQ(0, kp_send(&self->e[3], 2, mb, big, 0, 4, 0, 0, &psb));
	EXPECT_EQ(0, psb.done);
	ASSERT_EQ(0, kp_probe(r, 0, KPROG_ANY_SOURCE, 4, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(3, pr.out_source);
	EXPECT_EQ(4, pr.out_tag);
	EXPECT_EQ(big, pr.bytes);
	EXPECT_FALSE(kp_has_cqe(&self->e[3], 2, QUIET_MS));

	ASSERT_EQ(0, kp_recv(r, 3, b, 100, 1, 9, 0, 0, &p));
	check_recv(_metadata, r, &p, b, 100, 61, 1, 9);
	ASSERT_EQ(0, kp_recv(r, 4, bb, big, 3, 4, 0, 0, &pb));
	check_recv(_metadata, r, &pb, bb, big, 62, 3, 4);
	EXPECT_EQ(0, probe_found(r, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG));
	check_send(_metadata, s, &ps, 100, 0, 9);
	check_send(_metadata, &self->e[3], &psb, big, 0, 4);
}

TEST_F_TIMEOUT(job, probe_nothing, 30)
{
	struct kprog_probe pr;

	ASSERT_EQ(0, kp_probe(&self->e[0], 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
			      0, 0, &pr));
	EXPECT_EQ(0, pr.found);
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, 1, 0, 0, &pr));
	EXPECT_EQ(0, pr.found);
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, 1, KPROG_PROBE_DEQUEUE, 5,
			      &pr));
	EXPECT_EQ(0, pr.found);
}

struct delayed_send {
	struct kp_ep *e;
	int ms, dst, tag;
	void *buf;
	size_t len;
	struct kprog_post p;
	int ret;
};

static void *delayed_send_fn(void *arg)
{
	struct delayed_send *d = arg;

	usleep(d->ms * 1000);
	d->ret = kp_send(d->e, 77, d->buf, d->len, d->dst, d->tag, 0, 0,
			 &d->p);
	return NULL;
}

TEST_F_TIMEOUT(job, probe_block_woken_by_thread, 30)
{
	struct delayed_send d = { .e = &self->e[2], .ms = 300, .dst = 0,
				  .tag = 4, .len = 33 };
	struct kprog_probe pr;
	struct kprog_post p;
	void *b = kp_alloc(64);
	long long t0;
	pthread_t th;

	d.buf = msg_buf(33, 71);
	ASSERT_EQ(0, pthread_create(&th, NULL, delayed_send_fn, &d));
	t0 = kp_now_ms();
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, KPROG_ANY_SOURCE, 4,
			      KPROG_PROBE_BLOCK, 0, &pr));
	EXPECT_LE(200, kp_now_ms() - t0) TH_LOG("probe did not block");
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(2, pr.out_source);
	EXPECT_EQ(4, pr.out_tag);
	EXPECT_EQ(33, pr.bytes);
	pthread_join(th, NULL);
	ASSERT_EQ(0, d.ret);
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, b, 64, 2, 4, 0, 0, &p));
	check_recv(_metadata, &self->e[0], &p, b, 33, 71, 2, 4);
}

/* Blocking mprobe (BLOCK | DEQUEUE) of a rendezvous message. */
TEST_F_TIMEOUT(job, mprobe_block_rndv, 30)
{
	size_t big = kp_rndv_size(&self->e[0], 64 * 1024);
	struct delayed_send d = { .e = &self->e[3], .ms = 300, .dst = 0,
				  .tag = 6, .len = big };
	struct kprog_probe pr;
	struct kprog_post p;
	void *b = kp_alloc(big);
	pthread_t th;

	d.buf = msg_buf(big, 72);
	ASSERT_EQ(0, pthread_create(&th, NULL, delayed_send_fn, &d));
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 3, KPROG_ANY_TAG,
			      KPROG_PROBE_BLOCK | KPROG_PROBE_DEQUEUE, 42, &pr));
	pthread_join(th, NULL);
	ASSERT_EQ(0, d.ret);
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(3, pr.out_source);
	EXPECT_EQ(6, pr.out_tag);
	EXPECT_EQ(big, pr.bytes);
	EXPECT_EQ(0, probe_found(&self->e[0], 0, 3, 6));
	ASSERT_EQ(0, kp_recv_msg(&self->e[0], 1, b, big, 42, &p));
	check_recv(_metadata, &self->e[0], &p, b, big, 72, 3, 6);
	check_send(_metadata, &self->e[3], &d.p, big, 0, 6);
}

/* A blocked probe is woken by a send from another process (other mm). */
TEST_F_TIMEOUT(job, probe_block_woken_by_process, 30)
{
	struct kprog_probe pr;
	struct kprog_post p;
	void *b = kp_alloc(64);
	int go[2];
	pid_t pid;
	char c = 0;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kp_ep e;
		struct kprog_post sp;
		char m[48];

		if (kp_ep_open(&e, self->key, 4, JOB_SIZE, 0, 0))
			_exit(2);
		kp_fill(m, sizeof(m), 81, 0);
		usleep(300 * 1000);
		if (kp_send(&e, 1, m, sizeof(m), 0, 12, 0, 0, &sp))
			_exit(3);
		/* stay in the job until the parent has the message */
		if (read(go[0], &c, 1) != 1)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, KPROG_ANY_SOURCE, 12,
			      KPROG_PROBE_BLOCK, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(4, pr.out_source);
	EXPECT_EQ(12, pr.out_tag);
	EXPECT_EQ(48, pr.bytes);
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, b, 64, 4, 12, 0, 0, &p));
	check_recv(_metadata, &self->e[0], &p, b, 48, 81, 4, 12);
	ASSERT_EQ(1, write(go[1], &c, 1));
	EXPECT_EQ(0, kp_child_status(pid, NULL));
}

TEST_F_TIMEOUT(job, probe_block_eintr, 30)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct kicker k = { .target = pthread_self(), .ms = 300 };
	struct kprog_probe pr;
	pthread_t th;
	int ret;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, kick_fn, &k));
	ret = kp_probe(&self->e[0], 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
		       KPROG_PROBE_BLOCK, 0, &pr);
	pthread_join(th, NULL);
	EXPECT_EQ(-EINTR, ret);
}

/* mprobe: the dequeued message is hidden from probe and plain receives. */
TEST_F_TIMEOUT(job, mprobe_dequeue_then_recv_message, 60)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *ma = msg_buf(120, 91), *mb = msg_buf(130, 92);
	void *ba = kp_alloc(200), *bb = kp_alloc(200), *bc = kp_alloc(200);
	struct kprog_post sa, sb, pa, pb, pc;
	struct kprog_probe pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_send(s, 1, ma, 120, 0, 4, 0, 0, &sa));
	ASSERT_EQ(0, kp_send(s, 2, mb, 130, 0, 4, 0, 0, &sb));
	ASSERT_EQ(0, kp_probe(r, 0, 1, 4, KPROG_PROBE_DEQUEUE, 77, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(1, pr.out_source);
	EXPECT_EQ(4, pr.out_tag);
	EXPECT_EQ(120, pr.bytes);
	/* the next probe sees the second message */
	ASSERT_EQ(0, kp_probe(r, 0, 1, 4, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(130, pr.bytes);
	/* a plain receive gets the second message, not the dequeued one */
	ASSERT_EQ(0, kp_recv(r, 10, bb, 200, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
			     0, 0, &pb));
	check_recv(_metadata, r, &pb, bb, 130, 92, 1, 4);
	/* and a further one gets nothing */
	ASSERT_EQ(0, kp_recv(r, 11, bc, 200, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
			     0, 0, &pc));
	EXPECT_EQ(0, pc.done);
	EXPECT_FALSE(kp_has_cqe(r, 11, QUIET_MS));
	EXPECT_EQ(0, probe_found(r, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG));

	ASSERT_EQ(0, kp_recv_msg(r, 12, ba, 200, 77, &pa));
	check_recv(_metadata, r, &pa, ba, 120, 91, 1, 4);
	/* the id is used up */
	EXPECT_EQ(-ENOENT, kp_recv_msg(r, 13, ba, 200, 77, NULL));
	EXPECT_FALSE(kp_has_cqe(r, 11, 0));
	ASSERT_EQ(0, kp_cancel(r, 11));
	ASSERT_EQ(0, kp_wait_cqe(r, 11, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
	EXPECT_EQ(KPROG_CQE_CANCELLED, c.flags);
	check_send(_metadata, s, &sa, 120, 0, 4);
	check_send(_metadata, s, &sb, 130, 0, 4);
}

TEST_F_TIMEOUT(job, mprobe_unknown_and_duplicate_id, 60)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[2];
	void *m1 = msg_buf(64, 93), *m2 = msg_buf(64, 94);
	void *b = kp_alloc(64);
	struct kprog_post p1, p2, p;
	struct kprog_probe pr;

	EXPECT_EQ(-ENOENT, kp_recv_msg(r, 1, b, 64, 12345, NULL));
	ASSERT_EQ(0, kp_send(s, 1, m1, 64, 0, 1, 0, 0, &p1));
	ASSERT_EQ(0, kp_send(s, 2, m2, 64, 0, 1, 0, 0, &p2));
	ASSERT_EQ(0, kp_probe(r, 0, 2, 1, KPROG_PROBE_DEQUEUE, 5, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(-EEXIST, kp_probe(r, 0, 2, 1, KPROG_PROBE_DEQUEUE, 5, &pr));
	/* the refused dequeue left the second message in place */
	ASSERT_EQ(0, kp_probe(r, 0, 2, 1, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(-ENOENT, kp_recv_msg(r, 2, b, 64, 6, NULL));
	ASSERT_EQ(0, kp_recv_msg(r, 3, b, 64, 5, &p));
	check_recv(_metadata, r, &p, b, 64, 93, 2, 1);
	/* id 5 is free again once received */
	ASSERT_EQ(0, kp_probe(r, 0, 2, 1, KPROG_PROBE_DEQUEUE, 5, &pr));
	EXPECT_EQ(1, pr.found);
	ASSERT_EQ(0, kp_recv_msg(r, 4, b, 64, 5, &p));
	check_recv(_metadata, r, &p, b, 64, 94, 2, 1);
	check_send(_metadata, s, &p1, 64, 0, 1);
	check_send(_metadata, s, &p2, 64, 0, 1);
}

/* ---------------- 5. cancel ---------------- */

TEST_F_TIMEOUT(job, cancel_unmatched_recv, 30)
{
	struct kp_ep *r = &self->e[0];
	void *b = kp_alloc(64), *m = msg_buf(64, 101), *b2 = kp_alloc(64);
	struct kprog_post p, ps, p2;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_recv(r, 55, b, 64, 1, 3, 0, 0, &p));
	ASSERT_EQ(0, p.done);
	ASSERT_EQ(0, kp_cancel(r, 55));
	ASSERT_EQ(0, kp_wait_cqe(r, 55, &c, KP_TMO_MS));
	EXPECT_EQ(55, c.req_id);
	EXPECT_EQ(-ECANCELED, c.error);
	EXPECT_EQ(KPROG_CQE_CANCELLED, c.flags);
	EXPECT_EQ(0, c.bytes);
	/* exactly one completion; the id is gone */
	EXPECT_FALSE(kp_has_cqe(r, 55, QUIET_MS));
	EXPECT_NE(0, kp_cancel(r, 55));
	/* the cancelled receive does not take a later message */
	ASSERT_EQ(0, kp_send(&self->e[1], 1, m, 64, 0, 3, 0, 0, &ps));
	EXPECT_EQ(1, probe_found(r, 0, 1, 3));
	EXPECT_EQ(-1, kp_check_byte(b, 64, 0));
	ASSERT_EQ(0, kp_recv(r, 56, b2, 64, 1, 3, 0, 0, &p2));
	check_recv(_metadata, r, &p2, b2, 64, 101, 1, 3);
}

TEST_F_TIMEOUT(job, cancel_unknown_enoent, 30)
{
	void *b = kp_alloc(64);
	struct kprog_post p;

	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 12345));
	/* an id posted on another endpoint is unknown here */
	ASSERT_EQ(0, kp_recv(&self->e[1], 777, b, 64, 0, 0, 0, 0, &p));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 777));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[2], 777));
	EXPECT_EQ(0, kp_cancel(&self->e[1], 777));
}

/* Matched (transfer running or done, completion not yet reaped): EBUSY. */
TEST_F_TIMEOUT(job, cancel_matched_ebusy, 60)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	size_t len = kp_rndv_size(r, 16 << 20);
	void *m = msg_buf(len, 111), *b = kp_alloc(len);
	struct kprog_post ps, pr;
	struct kprog_cqe c;
	int ret;

	ASSERT_NE(NULL, m);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, kp_send(s, 1, m, len, 0, 2, 0, 0, &ps));
	ASSERT_EQ(0, ps.done);
	ASSERT_EQ(0, kp_recv(r, 2, b, len, 1, 2, 0, 0, &pr));
	if (!pr.done)
		EXPECT_EQ(-EBUSY, kp_cancel(r, 2));
	EXPECT_EQ(-EBUSY, kp_cancel(s, 1));
	check_recv(_metadata, r, &pr, b, len, 111, 1, 2);
	check_send(_metadata, s, &ps, len, 0, 2);
	/* once reaped: never 0 */
	ret = kp_cancel(r, 2);
	EXPECT_TRUE(ret == -EBUSY || ret == -ENOENT) TH_LOG("ret %d", ret);
	ret = kp_cancel(s, 1);
	EXPECT_TRUE(ret == -EBUSY || ret == -ENOENT) TH_LOG("ret %d", ret);
	EXPECT_FALSE(kp_has_cqe(r, 2, 0));
	(void)c;
}


/*
 * Completed but not yet reaped (its completion sits in the ring): the
 * header says EBUSY ("already matched or complete ... it will complete
 * normally"); ENOENT is only for ids that no posted operation has.
 */
TEST_F_TIMEOUT(job, cancel_completed_unreaped_ebusy, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m = msg_buf(64, 171), *b = kp_alloc(64);
	struct kprog_post ps, pr;
	long long end;

	ASSERT_EQ(0, kp_recv(r, 2, b, 64, 1, 2, 0, 0, &pr));
	ASSERT_EQ(0, pr.done);
	ASSERT_EQ(0, kp_send(s, 1, m, 64, 0, 2, 0, 0, &ps));
	/* wait for the ring entry without consuming it */
	end = kp_now_ms() + KP_TMO_MS;
	while (!kp_ring_count(r) && kp_now_ms() < end)
		usleep(1000);
	ASSERT_EQ(1, kp_ring_count(r));
	EXPECT_EQ(-EBUSY, kp_cancel(r, 2));
	check_recv(_metadata, r, &pr, b, 64, 171, 1, 2);
	EXPECT_FALSE(kp_has_cqe(r, 2, 0));
}

/* An eager send completed at post cannot be cancelled; still delivered. */
TEST_F_TIMEOUT(job, cancel_done_eager_send, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m = msg_buf(64, 121), *b = kp_alloc(64);
	struct kprog_post ps, pr;
	int ret;

	ASSERT_EQ(0, kp_send(s, 1, m, 64, 0, 2, 0, 0, &ps));
	ASSERT_EQ(1, ps.done);
	ret = kp_cancel(s, 1);
	EXPECT_TRUE(ret == -EBUSY || ret == -ENOENT) TH_LOG("ret %d", ret);
	ASSERT_EQ(0, kp_recv(r, 2, b, 64, 1, 2, 0, 0, &pr));
	check_recv(_metadata, r, &pr, b, 64, 121, 1, 2);
	EXPECT_FALSE(kp_has_cqe(s, 1, QUIET_MS));
}

/* An unmatched rendezvous (and synchronous) send can be withdrawn. */
TEST_F_TIMEOUT(job, cancel_unmatched_rndv_send, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	size_t len = kp_rndv_size(r, 1 << 20);
	void *m = msg_buf(len, 131), *m2 = msg_buf(16, 132);
	void *b = kp_alloc(len);
	struct kprog_post ps, ps2, pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_send(s, 1, m, len, 0, 2, 0, 0, &ps));
	ASSERT_EQ(0, ps.done);
	ASSERT_EQ(0, kp_send(s, 2, m2, 16, 0, 3, 0, KPROG_SEND_SYNC, &ps2));
	ASSERT_EQ(0, ps2.done);
	EXPECT_EQ(1, probe_found(r, 0, 1, 2));
	EXPECT_EQ(1, probe_found(r, 0, 1, 3));
	ASSERT_EQ(0, kp_cancel(s, 1));
	ASSERT_EQ(0, kp_cancel(s, 2));
	ASSERT_EQ(0, kp_wait_cqe(s, 1, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
	EXPECT_EQ(KPROG_CQE_CANCELLED, c.flags);
	ASSERT_EQ(0, kp_wait_cqe(s, 2, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
	EXPECT_EQ(KPROG_CQE_CANCELLED, c.flags);
	/* withdrawn: the receiver neither sees nor gets it */
	EXPECT_EQ(0, probe_found(r, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG));
	ASSERT_EQ(0, kp_recv(r, 3, b, len, 1, KPROG_ANY_TAG, 0, 0, &pr));
	EXPECT_EQ(0, pr.done);
	EXPECT_FALSE(kp_has_cqe(r, 3, QUIET_MS));
	EXPECT_EQ(-1, kp_check_byte(b, len, 0));
	EXPECT_EQ(0, kp_cancel(r, 3));
	EXPECT_FALSE(kp_has_cqe(s, 1, 0));
}

/* ---------------- 6. truncation ---------------- */

static void trunc_test(struct __test_metadata *_metadata,
		       FIXTURE_DATA(job) *self, size_t slen, size_t rlen,
		       int mode)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m = msg_buf(slen, 141);
	unsigned char *b = kp_alloc(slen);
	struct kprog_post ps = { 0 }, pr = { 0 };
	struct kprog_cqe c;

	ASSERT_NE(NULL, m);
	ASSERT_NE(NULL, b);
	memset(b, 0xa5, slen);
	if (mode == POSTED)
		ASSERT_EQ(0, kp_recv(r, 2, b, rlen, 1, 6, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(s, 1, m, slen, 0, 6, 0, 0, &ps));
	if (mode == UNEXPECTED)
		ASSERT_EQ(0, kp_recv(r, 2, b, rlen, 1, 6, 0, 0, &pr));
	ASSERT_EQ(0, kp_complete(r, &pr, &c, KP_TMO_MS));
	EXPECT_EQ(2, c.req_id);
	EXPECT_EQ(-EMSGSIZE, c.error);
	EXPECT_EQ(rlen, c.bytes);
	EXPECT_EQ(1, c.source);
	EXPECT_EQ(6, c.tag);
	EXPECT_EQ(-1, kp_check(b, rlen, 141, 0));
	EXPECT_EQ(-1, kp_check_byte(b + rlen, slen - rlen, 0xa5))
		TH_LOG("written past the receive buffer");
	ASSERT_EQ(0, kp_complete(s, &ps, &c, KP_TMO_MS));
	EXPECT_EQ(1, c.req_id);
	EXPECT_TRUE(c.error == 0 || c.error == -EMSGSIZE)
		TH_LOG("sender error %d", c.error);
	kp_free(m, slen);
	kp_free(b, slen);
}

TEST_F_TIMEOUT(job, truncate_rndv_unexpected, 60)
{
	trunc_test(_metadata, self, 1 << 20, 512 << 10, UNEXPECTED);
}

TEST_F_TIMEOUT(job, truncate_rndv_posted, 60)
{
	trunc_test(_metadata, self, 1 << 20, 512 << 10, POSTED);
}

TEST_F_TIMEOUT(job, truncate_eager_unexpected, 30)
{
	trunc_test(_metadata, self, 200, 100, UNEXPECTED);
}

TEST_F_TIMEOUT(job, truncate_eager_posted, 30)
{
	trunc_test(_metadata, self, 200, 100, POSTED);
}

TEST_F_TIMEOUT(job, zero_length_message, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	unsigned char sb[8] = { 1 }, rb[64];
	struct kprog_post ps, pr;

	memset(rb, 0x11, sizeof(rb));
	ASSERT_EQ(0, kp_send(s, 1, sb, 0, 0, 8, 0, 0, &ps));
	ASSERT_EQ(0, kp_recv(r, 2, rb, sizeof(rb), 1, 8, 0, 0, &pr));
	check_recv(_metadata, r, &pr, rb, 0, 0, 1, 8);
	check_send(_metadata, s, &ps, 0, 0, 8);
	EXPECT_EQ(-1, kp_check_byte(rb, sizeof(rb), 0x11));
}


/* ---------------- iovecs in one process ---------------- */

/* Zero-length segments (as MPI datatypes can produce) are allowed. */
static void iov_zero_segs(struct __test_metadata *_metadata,
			  FIXTURE_DATA(job) *self, size_t len)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	unsigned char *sb = msg_buf(len, 181), *rb = kp_alloc(len + 64);
	size_t a = len / 3, b = len / 2;
	struct kprog_iov si[5] = {
		{ (__u64)(uintptr_t)sb, 0 },
		{ (__u64)(uintptr_t)sb, a },
		{ (__u64)(uintptr_t)(sb + 7), 0 },
		{ (__u64)(uintptr_t)(sb + a), len - a },
		{ 0, 0 },
	};
	struct kprog_iov ri[4] = {
		{ (__u64)(uintptr_t)(rb + b), len - b },	/* second half first */
		{ (__u64)(uintptr_t)rb, 0 },
		{ (__u64)(uintptr_t)rb, b },
		{ (__u64)(uintptr_t)(rb + len), 0 },
	};
	struct kprog_post ps, pr;
	struct kprog_cqe c;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	memset(rb, 0x3c, len + 64);
	ASSERT_EQ(0, kp_send(s, 1, si, 5, 0, 4, 0, KPROG_POST_IOV, &ps));
	ASSERT_EQ(0, kp_recv(r, 2, ri, 4, 1, 4, 0, KPROG_POST_IOV, &pr));
	ASSERT_EQ(0, kp_complete(r, &pr, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(len, c.bytes);
	/* the stream is scattered: bytes 0..len-b-1 went to rb + b */
	EXPECT_EQ(-1, kp_check(rb + b, len - b, 181, 0));
	EXPECT_EQ(-1, kp_check(rb, b, 181, len - b));
	EXPECT_EQ(-1, kp_check_byte(rb + len, 64, 0x3c));
	check_send(_metadata, s, &ps, len, 0, 4);
}

TEST_F_TIMEOUT(job, iov_zero_length_segments_eager, 30)
{
	iov_zero_segs(_metadata, self, 300);
}

TEST_F_TIMEOUT(job, iov_zero_length_segments_rndv, 30)
{
	iov_zero_segs(_metadata, self, kp_rndv_size(&self->e[0], 200000));
}

/* An iovec of 0 entries is an empty buffer. */
TEST_F_TIMEOUT(job, iov_empty, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	struct kprog_iov dummy = { 0, 0 };
	unsigned char m[16] = { 1, 2, 3 };
	struct kprog_post ps, pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_send(s, 1, &dummy, 0, 0, 4, 0, KPROG_POST_IOV, &ps));
	ASSERT_EQ(0, kp_recv(r, 2, &dummy, 0, 1, 4, 0, KPROG_POST_IOV, &pr));
	ASSERT_EQ(0, kp_complete(r, &pr, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(0, c.bytes);
	check_send(_metadata, s, &ps, 0, 0, 4);
	/* a non-empty message into an empty iovec is truncated to 0 */
	ASSERT_EQ(0, kp_send(s, 3, m, sizeof(m), 0, 5, 0, 0, &ps));
	ASSERT_EQ(0, kp_recv(r, 4, &dummy, 0, 1, 5, 0, KPROG_POST_IOV, &pr));
	ASSERT_EQ(0, kp_complete(r, &pr, &c, KP_TMO_MS));
	EXPECT_EQ(-EMSGSIZE, c.error);
	EXPECT_EQ(0, c.bytes);
}

/* Truncation into an iovec fills the segments in order, then stops. */
static void iov_trunc(struct __test_metadata *_metadata,
		      FIXTURE_DATA(job) *self, size_t slen, size_t seg)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	unsigned char *sb = msg_buf(slen, 191), *rb = kp_alloc(4 * seg);
	struct kprog_iov ri[2] = {
		{ (__u64)(uintptr_t)(rb + 2 * seg), seg },
		{ (__u64)(uintptr_t)rb, seg },
	};
	struct kprog_post ps, pr;
	struct kprog_cqe c;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	ASSERT_LT(2 * seg, slen);
	memset(rb, 0x77, 4 * seg);
	ASSERT_EQ(0, kp_send(s, 1, sb, slen, 0, 4, 0, 0, &ps));
	ASSERT_EQ(0, kp_recv(r, 2, ri, 2, 1, 4, 0, KPROG_POST_IOV, &pr));
	ASSERT_EQ(0, kp_complete(r, &pr, &c, KP_TMO_MS));
	EXPECT_EQ(-EMSGSIZE, c.error);
	EXPECT_EQ(2 * seg, c.bytes);
	EXPECT_EQ(-1, kp_check(rb + 2 * seg, seg, 191, 0));
	EXPECT_EQ(-1, kp_check(rb, seg, 191, seg));
	EXPECT_EQ(-1, kp_check_byte(rb + seg, seg, 0x77));
	EXPECT_EQ(-1, kp_check_byte(rb + 3 * seg, seg, 0x77));
	ASSERT_EQ(0, kp_complete(s, &ps, &c, KP_TMO_MS));
	EXPECT_TRUE(c.error == 0 || c.error == -EMSGSIZE);
}

TEST_F_TIMEOUT(job, iov_truncation_eager, 30)
{
	iov_trunc(_metadata, self, 250, 100);
}

TEST_F_TIMEOUT(job, iov_truncation_rndv, 30)
{
	iov_trunc(_metadata, self, 1 << 20, 100000);
}

/* ---------------- departures seen from a live endpoint ---------------- */

struct closer {
	struct kp_ep *e;
	int ms;
};

static void *close_later(void *arg)
{
	struct closer *c = arg;

	usleep(c->ms * 1000);
	kp_ep_close(c->e);
	return NULL;
}

/* A blocking probe on a rank that leaves returns instead of hanging. */
TEST_F_TIMEOUT(job, probe_block_source_leaves, 30)
{
	struct closer cl = { .e = &self->e[1], .ms = 300 };
	struct kprog_probe pr;
	pthread_t th;
	long long t0 = kp_now_ms();
	int ret;

	ASSERT_EQ(0, pthread_create(&th, NULL, close_later, &cl));
	ret = kp_probe(&self->e[0], 0, 1, KPROG_ANY_TAG, KPROG_PROBE_BLOCK, 0,
		       &pr);
	pthread_join(th, NULL);
	EXPECT_TRUE(ret == -ECONNRESET || (ret == 0 && pr.found == 0))
		TH_LOG("probe returned %d found %u", ret, pr.found);
	EXPECT_GT(10000, kp_now_ms() - t0);
	/* a non-blocking probe on the gone rank simply finds nothing */
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, KPROG_ANY_TAG, 0, 0, &pr));
	EXPECT_EQ(0, pr.found);
}

/*
 * The ABI leaves open whether a rank can be joined again after it left.
 * If it can, the new endpoint must be fully usable and receives posted
 * for the old one must not have been kept for it.
 */
TEST_F_TIMEOUT(job, rank_rejoin_after_close, 30)
{
	struct kp_ep *r = &self->e[0], n;
	void *m = msg_buf(64, 201), *b = kp_alloc(64), *b2 = kp_alloc(64);
	struct kprog_post ps, pr, pold;
	struct kprog_cqe c;
	int ret;

	ASSERT_EQ(0, kp_recv(r, 1, b2, 64, 1, 9, 0, 0, &pold));
	kp_ep_close(&self->e[1]);
	ASSERT_EQ(0, kp_wait_cqe(r, 1, &c, KP_TMO_MS));
	EXPECT_EQ(-ECONNRESET, c.error);
	ret = kp_ep_open(&n, self->key, 1, JOB_SIZE, 0, 0);
	if (ret == -EADDRINUSE)
		return;
	ASSERT_EQ(0, ret) TH_LOG("rejoin: %s", kp_strerr(ret));
	ASSERT_EQ(0, kp_send(&n, 2, m, 64, 0, 9, 0, 0, &ps));
	ASSERT_EQ(0, kp_recv(r, 3, b, 64, 1, 9, 0, 0, &pr));
	check_recv(_metadata, r, &pr, b, 64, 201, 1, 9);
	check_send(_metadata, &n, &ps, 64, 0, 9);
	ASSERT_EQ(0, kp_send(r, 4, m, 64, 1, 9, 0, 0, &ps));
	ASSERT_EQ(0, kp_recv(&n, 5, b, 64, 0, 9, 0, 0, &pr));
	check_recv(_metadata, &n, &pr, b, 64, 201, 0, 9);
	EXPECT_EQ(-1, kp_check_byte(b2, 64, 0));
	kp_ep_close(&n);
}

/* ---------------- 7. eager / rendezvous switch ---------------- */

static void eager_boundary(struct __test_metadata *_metadata,
			   struct kp_ep *r, struct kp_ep *s, __u32 lim)
{
	void *m1 = msg_buf(lim, 151), *m2 = msg_buf(lim + 1, 152);
	void *b1 = kp_alloc(lim + 1), *b2 = kp_alloc(lim + 1);
	struct kprog_post p1, p2, q1, q2;

	ASSERT_EQ(0, kp_send(s, 1, m1, lim, r->rank, 3, 0, 0, &p1));
	EXPECT_EQ(1, p1.done) TH_LOG("send of eager_limit=%u bytes", lim);
	if (p1.done == 1) {
		EXPECT_EQ(1, p1.cqe.req_id);
		EXPECT_EQ(0, p1.cqe.error);
		EXPECT_EQ(lim, p1.cqe.bytes);
		EXPECT_EQ(r->rank, p1.cqe.source);
		EXPECT_EQ(3, p1.cqe.tag);
		EXPECT_EQ(0, p1.cqe.flags);
	}
	ASSERT_EQ(0, kp_send(s, 2, m2, lim + 1, r->rank, 3, 0, 0, &p2));
	EXPECT_EQ(0, p2.done) TH_LOG("send of eager_limit+1 bytes");
	EXPECT_FALSE(kp_has_cqe(s, 2, QUIET_MS));
	ASSERT_EQ(0, kp_recv(r, 3, b1, lim + 1, s->rank, 3, 0, 0, &q1));
	check_recv(_metadata, r, &q1, b1, lim, 151, s->rank, 3);
	EXPECT_FALSE(kp_has_cqe(s, 2, 0));
	ASSERT_EQ(0, kp_recv(r, 4, b2, lim + 1, s->rank, 3, 0, 0, &q2));
	check_recv(_metadata, r, &q2, b2, lim + 1, 152, s->rank, 3);
	check_send(_metadata, s, &p2, lim + 1, r->rank, 3);
	kp_free(m1, lim);
	kp_free(m2, lim + 1);
	kp_free(b1, lim + 1);
	kp_free(b2, lim + 1);
}

TEST_F_TIMEOUT(job, eager_limit_default, 60)
{
	long long def = kp_param("eager_limit");
	long long quota = kp_param("eager_quota");

	ASSERT_EQ(def, kp_eager(&self->e[0]));
	ASSERT_LT(0, def);
	if (quota >= 0 && quota < def)
		SKIP(return, "eager_quota %lld < eager_limit %lld", quota, def);
	eager_boundary(_metadata, &self->e[0], &self->e[1], def);
}

TEST_F_TIMEOUT(job, eager_limit_per_job, 60)
{
	struct kp_ep e[2];
	__u32 lim = 256;
	int ret;

	ret = kp_job_open(e, 2, 2, kp_key(), 0, lim);
	ASSERT_EQ(0, ret) TH_LOG("job: %s", kp_strerr(ret));
	EXPECT_EQ(lim, e[0].j.eager_limit);
	EXPECT_EQ(lim, e[1].j.eager_limit);
	eager_boundary(_metadata, &e[0], &e[1], lim);
	kp_job_close(e, 2);
}

/*
 * Once the receiver's eager quota is taken by buffered messages, further
 * small sends go rendezvous (not done at post) and still arrive intact
 * and in order; once received, the quota is free again.
 */
TEST_F_TIMEOUT(job, eager_quota_exhausted, 120)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1], *s2 = &self->e[2];
	long long quota = kp_param("eager_quota");
	size_t sz = kp_eager(r);
	struct kprog_post *ps, *pr, px, qx;
	unsigned char *m, *b;
	long long cap, i, k = -1, n;

	ASSERT_LE(0, quota) TH_LOG("eager_quota parameter unreadable");
	if (sz > 65536)
		sz = 65536;
	cap = quota / sz + 4;
	if (cap > 20000 || cap + 8 > r->j.max_ops)
		SKIP(return, "eager_quota %lld needs %lld messages", quota, cap);
	ps = calloc(cap + 3, sizeof(*ps));
	pr = calloc(cap + 3, sizeof(*pr));
	m = kp_alloc(sz * (cap + 3));
	b = kp_alloc(sz * (cap + 3));
	ASSERT_NE(NULL, m);
	ASSERT_NE(NULL, b);
	for (i = 0; i < cap; i++) {
		kp_fill(m + i * sz, sz, 1000 + i, 0);
		ASSERT_EQ(0, kp_send(s, i, m + i * sz, sz, 0, 1, 0, 0, &ps[i]));
		if (!ps[i].done) {
			k = i;
			break;
		}
	}
	ASSERT_LE(0, k) TH_LOG("%lld eager sends of %zu bytes all done at post, quota %lld",
			       cap, sz, quota);
	EXPECT_LE(k * (long long)sz, quota);
	if (quota >= 2 * (long long)sz)
		EXPECT_LE(1, k);
	TH_LOG("quota %lld: %lld messages of %zu bytes buffered", quota, k, sz);
	/* two more from the same sender: also over quota */
	for (i = k + 1; i < k + 3; i++) {
		kp_fill(m + i * sz, sz, 1000 + i, 0);
		ASSERT_EQ(0, kp_send(s, i, m + i * sz, sz, 0, 1, 0, 0, &ps[i]));
		EXPECT_EQ(0, ps[i].done) TH_LOG("send %lld over quota", i);
	}
	n = k + 3;
	/* the quota is the receiver's: another sender is over it too */
	ASSERT_EQ(0, kp_send(s2, 99, m, sz, 0, 1, 0, 0, &px));
	EXPECT_EQ(0, px.done);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, kp_recv(r, 10000 + i, b + i * sz, sz, 1, 1, 0, 0,
				     &pr[i]));
	for (i = 0; i < n; i++)
		check_recv(_metadata, r, &pr[i], b + i * sz, sz, 1000 + i, 1, 1);
	for (i = 0; i < n; i++)
		check_send(_metadata, s, &ps[i], sz, 0, 1);
	ASSERT_EQ(0, kp_recv(r, 20000, b, sz, 2, 1, 0, 0, &qx));
	check_recv(_metadata, r, &qx, b, sz, 1000, 2, 1);
	check_send(_metadata, s2, &px, sz, 0, 1);
	/* quota released: a small send completes at post again */
	ASSERT_EQ(0, kp_send(s, 5000, m, sz, 0, 2, 0, 0, &px));
	EXPECT_EQ(1, px.done);
	ASSERT_EQ(0, kp_recv(r, 20001, b, sz, 1, 2, 0, 0, &qx));
	check_recv(_metadata, r, &qx, b, sz, 1000, 1, 2);
}

TEST_F_TIMEOUT(job, sync_send_not_done_until_matched, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m = msg_buf(64, 161), *b = kp_alloc(64);
	struct kprog_post ps, pr;
	struct kprog_probe pb;

	ASSERT_EQ(0, kp_send(s, 1, m, 64, 0, 5, 0, KPROG_SEND_SYNC, &ps));
	EXPECT_EQ(0, ps.done);
	ASSERT_EQ(0, kp_probe(r, 0, 1, 5, 0, 0, &pb));
	EXPECT_EQ(1, pb.found);
	EXPECT_EQ(64, pb.bytes);
	EXPECT_FALSE(kp_has_cqe(s, 1, QUIET_MS));
	ASSERT_EQ(0, kp_recv(r, 2, b, 64, 1, 5, 0, 0, &pr));
	check_recv(_metadata, r, &pr, b, 64, 161, 1, 5);
	check_send(_metadata, s, &ps, 64, 0, 5);
}

/* Synchronous send to an already posted receive. */
TEST_F_TIMEOUT(job, sync_send_posted_recv, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	void *m = msg_buf(64, 162), *b = kp_alloc(64);
	struct kprog_post ps, pr;

	ASSERT_EQ(0, kp_recv(r, 2, b, 64, 1, 5, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(s, 1, m, 64, 0, 5, 0, KPROG_SEND_SYNC, &ps));
	check_recv(_metadata, r, &pr, b, 64, 162, 1, 5);
	check_send(_metadata, s, &ps, 64, 0, 5);
}


/*
 * A message taken by mprobe whose sender then leaves: a rendezvous one
 * fails with -ECONNRESET (no hang), an eager one (already buffered) is
 * still delivered.
 */
TEST_F_TIMEOUT(job, mprobed_message_sender_closes, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	size_t big = kp_rndv_size(r, 256 * 1024);
	void *mb = msg_buf(big, 211), *ms = msg_buf(100, 212);
	void *bb = kp_alloc(big), *bs = kp_alloc(100);
	struct kprog_post ps1, ps2, pr;
	struct kprog_probe q;
	struct kprog_cqe c;
	int ret;

	ASSERT_EQ(0, kp_send(s, 1, mb, big, 0, 1, 0, 0, &ps1));
	ASSERT_EQ(0, kp_send(s, 2, ms, 100, 0, 2, 0, 0, &ps2));
	ASSERT_EQ(1, ps2.done);
	ASSERT_EQ(0, kp_probe(r, 0, 1, 1, KPROG_PROBE_DEQUEUE, 50, &q));
	ASSERT_EQ(1, q.found);
	ASSERT_EQ(0, kp_probe(r, 0, 1, 2, KPROG_PROBE_DEQUEUE, 51, &q));
	ASSERT_EQ(1, q.found);
	kp_ep_close(s);
	ret = kp_recv_msg(r, 3, bb, big, 50, &pr);
	if (ret) {
		EXPECT_TRUE(ret == -ECONNRESET || ret == -ENOENT)
			TH_LOG("recv of a dead sender's mprobed message: %d", ret);
	} else {
		ASSERT_EQ(0, kp_complete(r, &pr, &c, KP_TMO_MS))
			TH_LOG("receive of a dead sender's message hangs");
		EXPECT_EQ(-ECONNRESET, c.error);
	}
	ASSERT_EQ(0, kp_recv_msg(r, 4, bs, 100, 51, &pr));
	check_recv(_metadata, r, &pr, bs, 100, 212, 1, 2);
}

TEST_F_TIMEOUT(job, sync_zero_length, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	char m[4], b[4];
	struct kprog_post ps, pr;

	ASSERT_EQ(0, kp_send(s, 1, m, 0, 0, 5, 0, KPROG_SEND_SYNC, &ps));
	EXPECT_EQ(0, ps.done);
	EXPECT_FALSE(kp_has_cqe(s, 1, QUIET_MS));
	ASSERT_EQ(0, kp_recv(r, 2, b, sizeof(b), 1, 5, 0, 0, &pr));
	check_recv(_metadata, r, &pr, b, 0, 0, 1, 5);
	check_send(_metadata, s, &ps, 0, 0, 5);
}

TEST_HARNESS_MAIN
