// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests under concurrency: every endpoint of a job driven by its
 * own thread (all-to-all with mixed eager/rendezvous sizes and wildcard
 * receives), and receives cancelled while messages arrive. Checks that
 * every operation completes exactly once, nothing is lost, and messages
 * from one sender are matched in order.
 */
#include "kprog_test.h"

#define NT		4
#define ROUNDS		60
#define MAXMSG		(160 * 1024)

struct a2a {
	struct kp_ep e[NT];
	__u32 eager;
	int errors[NT];
	char why[NT][160];
};

/* Size of message number @seq from @src to @dst; mixes protocols. */
static size_t msg_size(__u32 eager, int src, int dst, int seq)
{
	__u64 h = kp_mix(((__u64)src << 40) ^ ((__u64)dst << 20) ^ seq);

	switch (h % 6) {
	case 0: return 0;
	case 1: return 1 + (h >> 8) % 256;
	case 2: return eager;
	case 3: return eager + 1;
	case 4: return 1 + (h >> 8) % eager;
	default: return eager + 1 + (h >> 8) % (MAXMSG - eager - 1);
	}
}

static __u64 msg_seed(int src, int dst, int seq)
{
	return ((__u64)src << 48) ^ ((__u64)dst << 32) ^ (__u64)seq ^ 0x5eed;
}

#define FAIL(t, ...) do {						\
		snprintf(A->why[t], sizeof(A->why[t]), __VA_ARGS__);	\
		A->errors[t]++;						\
		goto out;						\
	} while (0)

struct a2a_arg {
	struct a2a *A;
	int me;
};

static void *a2a_thread(void *arg)
{
	struct a2a_arg *aa = arg;
	struct a2a *A = aa->A;
	int me = aa->me, r, k, p, i;
	struct kp_ep *e = &A->e[me];
	int next_from[NT] = { 0 }, sent_to[NT] = { 0 };
	unsigned char *rbuf = kp_alloc((size_t)(NT - 1) * MAXMSG);
	unsigned char *sbuf = kp_alloc((size_t)(NT - 1) * MAXMSG);
	struct kprog_post rp[NT], sp[NT];
	struct kprog_cqe c;

	if (!rbuf || !sbuf)
		FAIL(me, "alloc");
	for (r = 0; r < ROUNDS; r++) {
		/*
		 * One receive per peer (ANY_TAG: the tag varies), then one
		 * send to every peer. A named source keeps this deadlock-free
		 * while each thread waits for its sends; ANY_SOURCE under
		 * concurrency is many_to_one_any_source.
		 */
		for (p = 0, k = 0; p < NT; p++) {
			if (p == me)
				continue;
			if (kp_recv(e, 1000000 + r * NT + k,
				    rbuf + (size_t)k * MAXMSG, MAXMSG,
				    p, KPROG_ANY_TAG, 0, 0, &rp[k]))
				FAIL(me, "recv post r%d", r);
			k++;
		}
		for (p = 0, k = 0; p < NT; p++) {
			int seq;
			size_t len;

			if (p == me)
				continue;
			seq = sent_to[p]++;
			len = msg_size(A->eager, me, p, seq);
			kp_fill(sbuf + (size_t)k * MAXMSG, len,
				msg_seed(me, p, seq), 0);
			if (kp_send(e, 2000000 + r * NT + k,
				    sbuf + (size_t)k * MAXMSG, len, p, seq % 7,
				    0, 0, &sp[k]))
				FAIL(me, "send post r%d to %d", r, p);
			k++;
		}
		/* receives first: in posting order, matched per sender */
		for (k = 0; k < NT - 1; k++) {
			int src, seq;

			if (kp_complete(e, &rp[k], &c, 30000))
				FAIL(me, "recv r%d k%d never completed", r, k);
			src = c.source;
			if (c.req_id != rp[k].req_id || c.error ||
			    src != k + (k >= me))
				FAIL(me, "recv r%d k%d: id %llu err %d src %d",
				     r, k, (unsigned long long)c.req_id,
				     c.error, src);
			seq = next_from[src]++;
			if (c.tag != seq % 7 ||
			    c.bytes != msg_size(A->eager, src, me, seq))
				FAIL(me, "recv r%d from %d: seq %d tag %d bytes %llu (order broken?)",
				     r, src, seq, c.tag,
				     (unsigned long long)c.bytes);
			if (kp_check(rbuf + (size_t)k * MAXMSG, c.bytes,
				     msg_seed(src, me, seq), 0) >= 0)
				FAIL(me, "recv r%d from %d seq %d: bad data",
				     r, src, seq);
		}
		for (k = 0; k < NT - 1; k++) {
			if (kp_complete(e, &sp[k], &c, 30000))
				FAIL(me, "send r%d k%d never completed", r, k);
			if (c.error || c.req_id != sp[k].req_id)
				FAIL(me, "send r%d k%d: err %d", r, k, c.error);
		}
	}
	/* no stray completion left */
	kp_ring_drain(e);
	if (e->nstash)
		FAIL(me, "%u stray completions", e->nstash);
	for (i = 0; i < NT; i++)
		if (i != me && next_from[i] != ROUNDS)
			FAIL(me, "got %d messages from %d", next_from[i], i);
out:
	kp_free(rbuf, (size_t)(NT - 1) * MAXMSG);
	kp_free(sbuf, (size_t)(NT - 1) * MAXMSG);
	return NULL;
}

FIXTURE(stress) {
	int unused;
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}

TEST_F_TIMEOUT(stress, all_to_all_threads, 240)
{
	struct a2a *A = calloc(1, sizeof(*A));
	struct a2a_arg args[NT];
	pthread_t th[NT];
	int i, ret;

	ASSERT_NE(NULL, A);
	ret = kp_job_open(A->e, NT, NT, kp_key(), 0, 0);
	ASSERT_EQ(0, ret) TH_LOG("job: %s", kp_strerr(ret));
	A->eager = kp_eager(&A->e[0]);
	ASSERT_LT(1, A->eager);
	ASSERT_GT(MAXMSG - 2, A->eager);
	for (i = 0; i < NT; i++) {
		args[i].A = A;
		args[i].me = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, a2a_thread, &args[i]));
	}
	for (i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NT; i++) {
		EXPECT_EQ(0, A->errors[i]) TH_LOG("rank %d: %s", i, A->why[i]);
	}
	kp_job_close(A->e, NT);
	free(A);
}

/* ---- many senders, one ANY_SOURCE receiver ---- */

#define M1		150
#define RWIN		8

struct m2o {
	struct kp_ep e[NT];
	__u32 eager;
	int err[NT];
	char why[NT][160];
};

struct m2o_arg {
	struct m2o *M;
	int me;
};

static void *m2o_sender(void *arg)
{
	struct m2o_arg *a = arg;
	struct m2o *M = a->M;
	int me = a->me, i, ret, reaped = 0;
	struct kp_ep *e = &M->e[me];
	int window = e->j.max_ops / 2 < 16 ? e->j.max_ops / 2 : 16;
	struct kprog_post *p = calloc(M1, sizeof(*p));
	unsigned char **b = calloc(M1, sizeof(*b));
	struct kprog_cqe c;

	if (!p || !b)
		goto fail;
	for (i = 0; i < M1; i++) {
		size_t len = msg_size(M->eager, me, 0, i);

		for (; reaped < i - window; reaped++) {
			if (kp_complete(e, &p[reaped], &c, 60000) || c.error)
				goto fail_reap;
			kp_free(b[reaped], msg_size(M->eager, me, 0, reaped));
			b[reaped] = NULL;
		}
		b[i] = kp_alloc(len);
		if (!b[i])
			goto fail;
		kp_fill(b[i], len, msg_seed(me, 0, i), 0);
		ret = kp_send(e, i, b[i], len, 0, i % 7, 0, 0, &p[i]);
		if (ret) {
			snprintf(M->why[me], sizeof(M->why[me]), "send %d: %s",
				 i, kp_strerr(ret));
			M->err[me] = 1;
			return NULL;
		}
	}
	for (; reaped < M1; reaped++)
		if (kp_complete(e, &p[reaped], &c, 60000) || c.error)
			goto fail_reap;
	return NULL;
fail_reap:
	snprintf(M->why[me], sizeof(M->why[me]), "send %d: no completion or error %d",
		 reaped, c.error);
	M->err[me] = 1;
	return NULL;
fail:
	snprintf(M->why[me], sizeof(M->why[me]), "alloc");
	M->err[me] = 1;
	return NULL;
}

TEST_F_TIMEOUT(stress, many_to_one_any_source, 240)
{
	struct m2o *M = calloc(1, sizeof(*M));
	struct m2o_arg args[NT];
	unsigned char *rb = kp_alloc((size_t)RWIN * MAXMSG);
	struct kprog_post rp[RWIN];
	int next_from[NT] = { 0 };
	int total = (NT - 1) * M1, posted = 0, done = 0, i;
	pthread_t th[NT];
	struct kprog_cqe c;
	struct kp_ep *e;

	ASSERT_NE(NULL, M);
	ASSERT_NE(NULL, rb);
	ASSERT_EQ(0, kp_job_open(M->e, NT, NT, kp_key(), 0, 0));
	e = &M->e[0];
	M->eager = kp_eager(e);
	ASSERT_GT(MAXMSG - 2, M->eager);
	for (i = 1; i < NT; i++) {
		args[i].M = M;
		args[i].me = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, m2o_sender, &args[i]));
	}
	for (; posted < RWIN && posted < total; posted++)
		ASSERT_EQ(0, kp_recv(e, posted, rb + (size_t)posted * MAXMSG,
				     MAXMSG, KPROG_ANY_SOURCE, KPROG_ANY_TAG,
				     0, 0, &rp[posted]));
	while (done < total) {
		int slot = done % RWIN, src, seq;
		unsigned char *b = rb + (size_t)slot * MAXMSG;

		ASSERT_EQ(0, kp_complete(e, &rp[slot], &c, 30000))
			TH_LOG("receive %d never completed", done);
		ASSERT_EQ(0, c.error);
		src = c.source;
		ASSERT_TRUE(src >= 1 && src < NT) TH_LOG("source %d", src);
		seq = next_from[src]++;
		ASSERT_EQ(seq % 7, c.tag) TH_LOG("from %d: order broken", src);
		ASSERT_EQ(msg_size(M->eager, src, 0, seq), c.bytes)
			TH_LOG("from %d seq %d: order broken", src, seq);
		ASSERT_EQ(-1, kp_check(b, c.bytes, msg_seed(src, 0, seq), 0))
			TH_LOG("from %d seq %d: bad data", src, seq);
		done++;
		if (posted < total) {
			ASSERT_EQ(0, kp_recv(e, posted, b, MAXMSG,
					     KPROG_ANY_SOURCE, KPROG_ANY_TAG,
					     0, 0, &rp[slot]));
			posted++;
		}
	}
	for (i = 1; i < NT; i++)
		pthread_join(th[i], NULL);
	for (i = 1; i < NT; i++) {
		EXPECT_EQ(0, M->err[i]) TH_LOG("sender %d: %s", i, M->why[i]);
		EXPECT_EQ(M1, next_from[i]);
	}
	kp_job_close(M->e, NT);
}

#define NCANCEL		300

struct race {
	struct kp_ep e[2];
	__u32 eager;
	int err;
	char why[160];
};

static void *race_sender(void *arg)
{
	struct race *R = arg;
	struct kp_ep *e = &R->e[1];
	unsigned char *buf = kp_alloc((size_t)NCANCEL * 4096);
	struct kprog_post *p = calloc(NCANCEL, sizeof(*p));
	unsigned char **big = calloc(NCANCEL, sizeof(*big));
	struct kprog_cqe c;
	int i, ret, reaped = 0, window = e->j.max_ops / 2;

	if (!buf || !p || !big) {
		R->err = 1;
		return NULL;
	}
	for (i = 0; i < NCANCEL; i++) {
		size_t len = msg_size(R->eager, 1, 0, i);
		unsigned char *b = buf + (size_t)i * 4096;

		/* stay within max_ops: reap the oldest sends first */
		for (; reaped < i - window; reaped++) {
			if (kp_complete(e, &p[reaped], &c, 60000) || c.error) {
				snprintf(R->why, sizeof(R->why),
					 "send %d: completion error %d",
					 reaped, c.error);
				R->err = 1;
				return NULL;
			}
		}

		if (len > 4096) {
			big[i] = kp_alloc(len);
			b = big[i];
		}
		kp_fill(b, len, msg_seed(1, 0, i), 0);
		ret = kp_send(e, 100 + i, b, len, 0, 0, 0, 0, &p[i]);
		if (ret) {
			snprintf(R->why, sizeof(R->why), "send %d: %s", i,
				 kp_strerr(ret));
			R->err = 1;
			return NULL;
		}
		if (i % 16 == 0)
			usleep(1000);
	}
	for (i = reaped; i < NCANCEL; i++) {
		if (kp_complete(e, &p[i], &c, 60000) || c.error) {
			snprintf(R->why, sizeof(R->why),
				 "send %d: completion error %d", i, c.error);
			R->err = 1;
			return NULL;
		}
	}
	return NULL;
}

/*
 * Receives posted and cancelled at once while a sender thread streams
 * messages: each receive completes exactly once, cancelled (0 from
 * CANCEL) or with the next message in order; no message is lost.
 */
TEST_F_TIMEOUT(stress, cancel_races_matching, 240)
{
	struct race *R = calloc(1, sizeof(*R));
	unsigned char *b = kp_alloc(MAXMSG);
	struct kprog_probe pr;
	struct kprog_post p;
	struct kprog_cqe c;
	int next = 0, cancelled = 0, busy = 0, ret;
	__u64 id = 1;
	pthread_t th;

	ASSERT_NE(NULL, R);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, kp_job_open(R->e, 2, 2, kp_key(), 0, 0));
	R->eager = kp_eager(&R->e[0]);
	ASSERT_GT(MAXMSG - 2, R->eager);
	ASSERT_EQ(0, pthread_create(&th, NULL, race_sender, R));
	while (next < NCANCEL) {
		ASSERT_GT(20 * NCANCEL, (int)id) TH_LOG("no progress");
		ASSERT_EQ(0, kp_recv(&R->e[0], id, b, MAXMSG, 1, 0, 0, 0, &p));
		ret = 1;
		if (id % 3)
			ret = kp_cancel(&R->e[0], id);
		ASSERT_EQ(0, kp_complete(&R->e[0], &p, &c, 30000))
			TH_LOG("recv %llu (cancel %d) never completed",
			       (unsigned long long)id, ret);
		if (ret == 0) {
			EXPECT_EQ(-ECANCELED, c.error);
			EXPECT_EQ(KPROG_CQE_CANCELLED, c.flags);
			cancelled++;
		} else {
			EXPECT_TRUE(ret == 1 || ret == -EBUSY || ret == -ENOENT)
				TH_LOG("cancel: %d", ret);
			if (ret != 1)
				busy++;
			ASSERT_EQ(0, c.error) TH_LOG("recv %llu msg %d",
						     (unsigned long long)id,
						     next);
			ASSERT_EQ(msg_size(R->eager, 1, 0, next), c.bytes);
			ASSERT_EQ(-1, kp_check(b, c.bytes, msg_seed(1, 0, next),
					       0)) TH_LOG("message %d", next);
			next++;
		}
		id++;
	}
	pthread_join(th, NULL);
	EXPECT_EQ(0, R->err) TH_LOG("sender: %s", R->why);
	ASSERT_EQ(0, kp_probe(&R->e[0], 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0,
			      0, &pr));
	EXPECT_EQ(0, pr.found);
	kp_ring_drain(&R->e[0]);
	EXPECT_EQ(0, R->e[0].nstash);
	TH_LOG("%d cancelled, %d cancels too late", cancelled, busy);
	kp_job_close(R->e, 2);
}


/* ---- chaos: random traffic, cancels, closes and rejoins ---- */

#define CH_NT		4
#define CH_SLOTS	12	/* 6 receives + 6 sends outstanding */
#define CH_MAXB		(96 * 1024)
#define CH_MS		4000

struct ch_slot {
	__u64 id;
	int live, is_send, cancelled;
	size_t len;
	unsigned char *buf;
};

struct chaos {
	__u64 key;
	int err[CH_NT];
	char why[CH_NT][200];
	long data[CH_NT], sent[CH_NT], resets[CH_NT], cancels[CH_NT],
	     closes[CH_NT];
};

struct ch_arg {
	struct chaos *C;
	int me;
};

static __u64 ch_rand(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#define CHFAIL(...) do {						\
		snprintf(C->why[me], sizeof(C->why[me]), __VA_ARGS__);	\
		C->err[me] = 1;						\
		goto out;						\
	} while (0)

/* Check one completion of slot @sl; 0 if fine. */
static int ch_check(struct chaos *C, int me, struct ch_slot *sl,
		    const struct kprog_cqe *c)
{
	if (sl->is_send) {
		if (c->error == -ECONNRESET) {
			C->resets[me]++;
			return 0;
		}
		if (c->error == -ECANCELED && sl->cancelled)
			return 0;
		if (c->error || c->bytes != sl->len) {
			snprintf(C->why[me], sizeof(C->why[me]),
				 "send id %llu: error %d bytes %llu of %zu",
				 (unsigned long long)sl->id, c->error,
				 (unsigned long long)c->bytes, sl->len);
			return -1;
		}
		C->sent[me]++;
		return 0;
	}
	if (c->error == -ECANCELED) {
		if (!sl->cancelled || c->flags != KPROG_CQE_CANCELLED) {
			snprintf(C->why[me], sizeof(C->why[me]),
				 "recv id %llu: ECANCELED, never cancelled",
				 (unsigned long long)sl->id);
			return -1;
		}
		C->cancels[me]++;
		return 0;
	}
	if (c->error == -ECONNRESET) {
		C->resets[me]++;
		return 0;
	}
	if (c->error || c->bytes > CH_MAXB || c->source < 0 ||
	    c->source >= CH_NT) {
		snprintf(C->why[me], sizeof(C->why[me]),
			 "recv id %llu: error %d bytes %llu source %d",
			 (unsigned long long)sl->id, c->error,
			 (unsigned long long)c->bytes, c->source);
		return -1;
	}
	if (c->bytes >= 16) {
		__u64 seed, len;

		memcpy(&seed, sl->buf, 8);
		memcpy(&len, sl->buf + 8, 8);
		if (len != c->bytes || (int)(seed >> 56) != c->source ||
		    (int)((seed >> 48) & 0xff) != me ||
		    kp_check(sl->buf + 16, c->bytes - 16, seed, 0) >= 0) {
			snprintf(C->why[me], sizeof(C->why[me]),
				 "recv id %llu from %d: %llu bytes, header says %llu from %d to %d, or bad data",
				 (unsigned long long)sl->id, c->source,
				 (unsigned long long)c->bytes,
				 (unsigned long long)len, (int)(seed >> 56),
				 (int)((seed >> 48) & 0xff));
			return -1;
		}
	}
	C->data[me]++;
	return 0;
}

static struct ch_slot *ch_find(struct ch_slot *sl, __u64 id)
{
	int i;

	for (i = 0; i < CH_SLOTS; i++)
		if (sl[i].live && sl[i].id == id)
			return &sl[i];
	return NULL;
}

static void *chaos_thread(void *arg)
{
	struct ch_arg *a = arg;
	struct chaos *C = a->C;
	int me = a->me, i, ret;
	__u64 rnd = kp_mix(me + 1) | 1, id = 1, seq = 0;
	struct ch_slot sl[CH_SLOTS];
	long long end = kp_now_ms() + CH_MS, t;
	struct kprog_post p;
	struct kprog_cqe c;
	struct kp_ep e;

	kp_ep_reset(&e);
	memset(sl, 0, sizeof(sl));
	for (i = 0; i < CH_SLOTS; i++) {
		sl[i].buf = kp_alloc(CH_MAXB);
		if (!sl[i].buf)
			CHFAIL("alloc");
		sl[i].is_send = i >= CH_SLOTS / 2;
	}
	if (kp_ep_open(&e, C->key, me, CH_NT, 0, 0))
		CHFAIL("join");
	while (kp_now_ms() < end) {
		__u64 r = ch_rand(&rnd);

		/* fill free slots */
		for (i = 0; i < CH_SLOTS; i++) {
			struct ch_slot *s = &sl[i];

			if (s->live)
				continue;
			s->id = id++;
			s->cancelled = 0;
			if (!s->is_send) {
				ret = kp_recv(&e, s->id, s->buf, CH_MAXB,
					      KPROG_ANY_SOURCE, KPROG_ANY_TAG,
					      0, 0, &p);
				if (ret)
					CHFAIL("recv post: %s", kp_strerr(ret));
			} else {
				int peer = ch_rand(&rnd) % CH_NT;
				__u64 x = ch_rand(&rnd), seed;

				s->len = x % 3 == 0 ? x % 16 :
					 x % 3 == 1 ? 16 + (x >> 8) % 8192 :
					 16 + (x >> 8) % (CH_MAXB - 16);
				seed = ((__u64)me << 56) | ((__u64)peer << 48) |
				       (++seq & 0xffffffffffffull);
				if (s->len >= 16) {
					memcpy(s->buf, &seed, 8);
					memcpy(s->buf + 8, &s->len, 8);
					kp_fill(s->buf + 16, s->len - 16, seed, 0);
				}
				ret = kp_send(&e, s->id, s->buf, s->len, peer,
					      (int)(x & 7), 0, 0, &p);
				if (ret == -ECONNRESET) {
					C->resets[me]++;
					continue;
				}
				if (ret)
					CHFAIL("send post: %s", kp_strerr(ret));
			}
			s->live = 1;
			if (p.done) {
				if (ch_check(C, me, s, &p.cqe))
					goto fail;
				s->live = 0;
			}
		}
		/* reap */
		ret = kp_ioc_wait(e.fd, 5 * 1000000LL);
		if (ret && ret != -ETIMEDOUT)
			CHFAIL("wait: %s", kp_strerr(ret));
		kp_ring_drain(&e);
		if (e.ring_bad)
			CHFAIL("ring indices broken");
		while (e.nstash) {
			struct ch_slot *s;

			c = e.stash[--e.nstash];
			s = ch_find(sl, c.req_id);
			if (!s)
				CHFAIL("completion for unknown or finished id %llu",
				       (unsigned long long)c.req_id);
			if (ch_check(C, me, s, &c))
				goto fail;
			s->live = 0;
		}
		if (r % 23 == 0) {
			/* cancel everything; every receive must then end */
			for (i = 0; i < CH_SLOTS; i++) {
				if (!sl[i].live)
					continue;
				ret = kp_cancel(&e, sl[i].id);
				if (ret == 0)
					sl[i].cancelled = 1;
				else if (ret != -EBUSY && ret != -ENOENT)
					CHFAIL("cancel: %s", kp_strerr(ret));
			}
			t = kp_now_ms() + 10000;
			for (i = 0; i < CH_SLOTS / 2; i++) {
				if (!sl[i].live)
					continue;
				if (kp_wait_cqe(&e, sl[i].id, &c,
						t - kp_now_ms()))
					CHFAIL("recv id %llu: no completion 10 s after cancel",
					       (unsigned long long)sl[i].id);
				if (ch_check(C, me, &sl[i], &c))
					goto fail;
				sl[i].live = 0;
			}
		} else if (r % 37 == 0) {
			/* leave and join again as the same rank */
			kp_ep_close(&e);
			C->closes[me]++;
			for (i = 0; i < CH_SLOTS; i++)
				sl[i].live = 0;
			/*
			 * A copy in flight may still touch our buffers for a
			 * moment after close (no_write_into_buffer_after_close
			 * tests that); do not let it count here.
			 */
			usleep(100 * 1000);
			t = kp_now_ms() + 2000;
			while ((ret = kp_ep_open(&e, C->key, me, CH_NT, 0, 0)) ==
			       -EADDRINUSE && kp_now_ms() < t)
				usleep(1000);
			if (ret)
				CHFAIL("rejoin: %s", kp_strerr(ret));
		}
	}
out:
	kp_ep_close(&e);
	for (i = 0; i < CH_SLOTS; i++)
		kp_free(sl[i].buf, CH_MAXB);
	return NULL;
fail:
	C->err[me] = 1;
	goto out;
}

/*
 * Random sends (random peers, sizes, tags) and ANY_SOURCE receives on
 * every rank, with cancels and close/rejoin cycles mixed in. Every
 * completion must name a live operation of ours (exactly once), carry
 * intact data (self-describing payloads) or an allowed error, cancelled
 * receives must end, and nothing may hang.
 */
TEST_F_TIMEOUT(stress, chaos_close_rejoin_cancel, 120)
{
	struct chaos *C = calloc(1, sizeof(*C));
	struct ch_arg args[CH_NT];
	pthread_t th[CH_NT];
	int i;

	ASSERT_NE(NULL, C);
	C->key = kp_key();
	for (i = 0; i < CH_NT; i++) {
		args[i].C = C;
		args[i].me = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, chaos_thread, &args[i]));
	}
	for (i = 0; i < CH_NT; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < CH_NT; i++) {
		EXPECT_EQ(0, C->err[i]) TH_LOG("rank %d: %s", i, C->why[i]);
		TH_LOG("rank %d: %ld received, %ld sent, %ld resets, %ld cancelled, %ld closes",
		       i, C->data[i], C->sent[i], C->resets[i], C->cancels[i],
		       C->closes[i]);
	}
}

TEST_HARNESS_MAIN
