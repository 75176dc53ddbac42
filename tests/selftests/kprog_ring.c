// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests: the completion ring. Overflow (more completions than
 * slots, nothing dropped, overflow flag, WAIT timeout 0 moves them in),
 * KPROG_IOC_WAIT timeouts/wake-ups/signals, poll().
 */
#include "kprog_test.h"

FIXTURE(pair) {
	struct kp_ep e[2];
};

FIXTURE_SETUP(pair)
{
	int ret = kp_job_open(self->e, 2, 2, kp_key(), 0, 0);

	ASSERT_EQ(0, ret) TH_LOG("job: %s", kp_strerr(ret));
}

FIXTURE_TEARDOWN(pair)
{
	kp_job_close(self->e, 2);
}

/* Wait (sleeping, no WAIT ioctl) until the ring holds @n entries. */
static int wait_ring_count(struct kp_ep *e, __u32 n, int need_overflow,
			   long long ms)
{
	long long end = kp_now_ms() + ms;

	while (kp_now_ms() < end) {
		if (kp_ring_count(e) >= n &&
		    (!need_overflow ||
		     __atomic_load_n(&e->hdr->overflow, __ATOMIC_ACQUIRE)))
			return 0;
		usleep(5000);
	}
	return -ETIMEDOUT;
}

/*
 * Collect @n completions with ids base..base+n-1 from @e, draining the
 * ring and calling WAIT(0) to move overflowed ones in. Each id must be
 * seen exactly once. Stores them indexed by id - base.
 */
static void collect_all(struct __test_metadata *_metadata, struct kp_ep *e,
			__u64 base, __u32 n, struct kprog_cqe *out)
{
	unsigned char *seen = calloc(n, 1);
	long long end = kp_now_ms() + 10000;
	__u32 got = 0, i;
	int ret;

	ASSERT_NE(NULL, seen);
	while (got < n) {
		__u32 head = e->hdr->head;
		__u32 tail = __atomic_load_n(&e->hdr->tail, __ATOMIC_ACQUIRE);

		ASSERT_LE(tail - head, e->j.ring_entries);
		for (; head != tail; head++) {
			struct kprog_cqe c = e->cqes[head & (e->j.ring_entries - 1)];
			__u64 idx = c.req_id - base;

			ASSERT_LT(idx, n) TH_LOG("stray req_id %llu",
						 (unsigned long long)c.req_id);
			ASSERT_EQ(0, seen[idx])
				TH_LOG("req_id %llu twice",
				       (unsigned long long)c.req_id);
			seen[idx] = 1;
			out[idx] = c;
			got++;
		}
		__atomic_store_n(&e->hdr->head, head, __ATOMIC_RELEASE);
		if (got == n)
			break;
		ASSERT_GT(end, kp_now_ms())
			TH_LOG("only %u of %u completions after 10 s", got, n);
		if (__atomic_load_n(&e->hdr->overflow, __ATOMIC_ACQUIRE)) {
			ret = kp_ioc_wait(e->fd, 0);
			ASSERT_TRUE(ret == 0 || ret == -ETIMEDOUT)
				TH_LOG("WAIT(0): %s", kp_strerr(ret));
		} else {
			ret = kp_ioc_wait(e->fd, 100 * 1000000LL);
			ASSERT_TRUE(ret == 0 || ret == -ETIMEDOUT)
				TH_LOG("WAIT: %s", kp_strerr(ret));
		}
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(1, seen[i]);
	free(seen);
}

static void check_empty_after_overflow(struct __test_metadata *_metadata,
				       struct kp_ep *e)
{
	struct pollfd pfd = { .fd = e->fd, .events = POLLIN };
	long long t0;
	int ret;

	/* everything is out of the overflow list: flag cleared */
	ASSERT_EQ(0, kp_ring_count(e));
	ret = kp_ioc_wait(e->fd, 0);
	EXPECT_TRUE(ret == 0 || ret == -ETIMEDOUT);
	EXPECT_EQ(0, kp_ring_count(e));
	EXPECT_EQ(0, __atomic_load_n(&e->hdr->overflow, __ATOMIC_ACQUIRE));
	t0 = kp_now_ms();
	EXPECT_EQ(-ETIMEDOUT, kp_ioc_wait(e->fd, 50 * 1000000LL));
	EXPECT_LE(40, kp_now_ms() - t0);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

/*
 * More receives than ring slots, all completed by eager sends without
 * draining: the ring fills, overflow is set, nothing is lost.
 */
TEST_F_TIMEOUT(pair, overflow_recvs_completed_by_sends, 120)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	__u32 R = r->j.ring_entries, n = R + R / 2 + 3, i;
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	struct kprog_cqe *c;
	unsigned char *rb, *sb;
	struct kprog_post p;
	int ret;

	if (n + 1 > r->j.max_ops)
		SKIP(return, "max_ops %u < ring_entries %u * 1.5",
		     r->j.max_ops, R);
	ASSERT_GE(1u << 16, n);
	c = calloc(n, sizeof(*c));
	rb = calloc(n, 8);
	sb = malloc((size_t)n * 8);
	ASSERT_NE(NULL, rb);
	ASSERT_NE(NULL, sb);
	for (i = 0; i < n; i++) {
		ret = kp_recv(r, 1000 + i, rb + 8 * i, 8, 1, 1, 0, 0, &p);
		ASSERT_EQ(0, ret) TH_LOG("recv %u: %s", i, kp_strerr(ret));
		ASSERT_EQ(0, p.done);
	}
	EXPECT_EQ(0, kp_ring_count(r));
	for (i = 0; i < n; i++) {
		kp_fill(sb + 8 * i, 8, 7000 + i, 0);
		ret = kp_send(s, 100000 + i, sb + 8 * i, 8, 0, 1, 0, 0, &p);
		ASSERT_EQ(0, ret) TH_LOG("send %u: %s", i, kp_strerr(ret));
	}
	ASSERT_EQ(0, wait_ring_count(r, R, 1, 5000))
		TH_LOG("ring: %u entries, overflow %u",
		       kp_ring_count(r), r->hdr->overflow);
	EXPECT_EQ(R, kp_ring_count(r));
	EXPECT_EQ(1, r->hdr->overflow);
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLIN);
	/* WAIT returns at once while the ring is not empty */
	EXPECT_EQ(0, kp_ioc_wait(r->fd, 5000 * 1000000LL));

	collect_all(_metadata, r, 1000, n, c);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, c[i].error);
		EXPECT_EQ(8, c[i].bytes);
		EXPECT_EQ(1, c[i].source);
		EXPECT_EQ(1, c[i].tag);
		EXPECT_EQ(-1, kp_check(rb + 8 * i, 8, 7000 + i, 0))
			TH_LOG("recv %u got the wrong message", i);
	}
	check_empty_after_overflow(_metadata, r);
	free(c);
	free(rb);
	free(sb);
}

/* Overflow made of cancellation completions only. */
TEST_F_TIMEOUT(pair, overflow_cancellations, 120)
{
	struct kp_ep *e = &self->e[0];
	__u32 R = e->j.ring_entries, n = 2 * R + 1, i;
	struct kprog_cqe *c;
	static char buf[16];
	struct kprog_post p;
	int ret;

	if (n + 1 > e->j.max_ops)
		SKIP(return, "max_ops %u < 2 * ring_entries %u",
		     e->j.max_ops, R);
	ASSERT_GE(1u << 17, n);
	c = calloc(n, sizeof(*c));
	for (i = 0; i < n; i++) {
		ret = kp_recv(e, 50000 + i, buf, sizeof(buf), 1, 3, 0, 0, &p);
		ASSERT_EQ(0, ret) TH_LOG("recv %u: %s", i, kp_strerr(ret));
	}
	for (i = 0; i < n; i++) {
		ret = kp_cancel(e, 50000 + i);
		ASSERT_EQ(0, ret) TH_LOG("cancel %u: %s", i, kp_strerr(ret));
	}
	EXPECT_EQ(R, kp_ring_count(e));
	EXPECT_EQ(1, e->hdr->overflow);
	collect_all(_metadata, e, 50000, n, c);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(-ECANCELED, c[i].error);
		EXPECT_EQ(KPROG_CQE_CANCELLED, c[i].flags);
	}
	check_empty_after_overflow(_metadata, e);
	free(c);
}

/* Ops completed at post never show up in the ring. */
TEST_F_TIMEOUT(pair, done_at_post_no_ring_entry, 30)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	char m[32] = "hello", b[32];
	struct kprog_post p, q;
	int i;

	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, kp_send(s, 10 + i, m, sizeof(m), 0, 1, 0, 0, &p));
		ASSERT_EQ(1, p.done);
	}
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, kp_recv(r, 20 + i, b, sizeof(b), 1, 1, 0, 0, &q));
		if (!q.done)
			ASSERT_EQ(0, kp_wait_cqe(r, 20 + i, &q.cqe, KP_TMO_MS));
		EXPECT_EQ(0, q.cqe.error);
		EXPECT_EQ(sizeof(m), q.cqe.bytes);
	}
	usleep(200 * 1000);
	EXPECT_EQ(0, s->hdr->tail);
	EXPECT_EQ(0, kp_ring_count(r));
	EXPECT_EQ(0, kp_ring_drain(s));
}


/*
 * User space may scribble over the whole mapping. The kernel must use its
 * own tail and entries (never write outside the ring), treat a garbage
 * head as "full" or similar, and drop nothing.
 */
TEST_F_TIMEOUT(pair, user_garbage_in_ring_header, 30)
{
	struct kp_ep *e = &self->e[0];
	__u32 entries = e->j.ring_entries, i;
	static char buf[16];
	struct kprog_post p;
	struct kprog_cqe c;
	int ret;

	e->hdr->head = 0x80000000u;
	e->hdr->tail = 0x12345678u;
	e->hdr->entries = 0xffffffffu;
	e->hdr->overflow = 7;
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kp_recv(e, 10 + i, buf, sizeof(buf), 1, 1, 0, 0,
				     &p));
		ASSERT_EQ(0, kp_cancel(e, 10 + i));
	}
	ret = kp_ioc_wait(e->fd, 0);
	EXPECT_TRUE(ret == 0 || ret == -ETIMEDOUT);
	/* put the true head back (nothing was consumed) */
	e->hdr->head = 0;
	e->hdr->entries = entries;
	ret = kp_ioc_wait(e->fd, 0);
	EXPECT_TRUE(ret == 0 || ret == -ETIMEDOUT);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kp_wait_cqe(e, 10 + i, &c, KP_TMO_MS))
			TH_LOG("completion %u lost", i);
		EXPECT_EQ(-ECANCELED, c.error);
	}
	EXPECT_FALSE(e->ring_bad) TH_LOG("kernel tail follows the user's");
	EXPECT_EQ(4, e->hdr->tail);
}

TEST_F_TIMEOUT(pair, wait_timeout_empty, 30)
{
	long long t0 = kp_now_ms();
	int ret;

	EXPECT_EQ(-ETIMEDOUT, kp_ioc_wait(self->e[0].fd, 100 * 1000000LL));
	EXPECT_LE(90, kp_now_ms() - t0);
	EXPECT_GT(5000, kp_now_ms() - t0);
	t0 = kp_now_ms();
	ret = kp_ioc_wait(self->e[0].fd, 0);
	EXPECT_TRUE(ret == 0 || ret == -ETIMEDOUT) TH_LOG("WAIT(0): %d", ret);
	EXPECT_GT(1000, kp_now_ms() - t0);
	EXPECT_EQ(0, kp_ring_count(&self->e[0]));
}

struct delayed {
	struct kp_ep *e;
	int ms;
	int ret;
	char buf[16];
};

static void *send_later(void *arg)
{
	struct delayed *d = arg;
	struct kprog_post p;

	usleep(d->ms * 1000);
	d->ret = kp_send(d->e, 9, d->buf, sizeof(d->buf), 0, 2, 0, 0, &p);
	return NULL;
}

TEST_F_TIMEOUT(pair, wait_woken_by_completion, 30)
{
	struct delayed d = { .e = &self->e[1], .ms = 300 };
	char b[16];
	struct kprog_post p;
	struct kprog_cqe c;
	pthread_t th;
	long long t0;

	ASSERT_EQ(0, kp_recv(&self->e[0], 1, b, sizeof(b), 1, 2, 0, 0, &p));
	ASSERT_EQ(0, p.done);
	ASSERT_EQ(0, pthread_create(&th, NULL, send_later, &d));
	t0 = kp_now_ms();
	EXPECT_EQ(0, kp_ioc_wait(self->e[0].fd, -1));
	EXPECT_LE(200, kp_now_ms() - t0);
	pthread_join(th, NULL);
	ASSERT_EQ(0, d.ret);
	EXPECT_EQ(1, kp_ring_count(&self->e[0]));
	ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 1, &c, 0));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(16, c.bytes);
}

TEST_F_TIMEOUT(pair, wait_eintr, 30)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct kicker k = { .target = pthread_self(), .ms = 300 };
	pthread_t th;
	int ret;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, kick_fn, &k));
	ret = kp_ioc_wait(self->e[0].fd, -1);
	pthread_join(th, NULL);
	EXPECT_EQ(-EINTR, ret);
}

TEST_F_TIMEOUT(pair, poll_pollin, 30)
{
	struct delayed d = { .e = &self->e[1], .ms = 300 };
	struct pollfd pfd = { .fd = self->e[0].fd, .events = POLLIN };
	char b[16];
	struct kprog_post p;
	struct kprog_cqe c;
	pthread_t th;
	long long t0;

	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, b, sizeof(b), 1, 2, 0, 0, &p));
	EXPECT_EQ(0, poll(&pfd, 1, 50));
	ASSERT_EQ(0, pthread_create(&th, NULL, send_later, &d));
	t0 = kp_now_ms();
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_LE(200, kp_now_ms() - t0);
	pthread_join(th, NULL);
	ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 1, &c, 0));
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

TEST_HARNESS_MAIN
