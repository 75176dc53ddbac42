// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests of collective schedules (KPROG_IOC_COLL) under
 * concurrency: what single-threaded tests cannot reach.
 *
 * - threads_post_schedules_and_point_to_point_on_one_fd: on each of two
 *   endpoints, several threads post exchange schedules (eager and
 *   rendezvous sizes, long COPY/REDUCE steps handed to the work item and
 *   its start timer) through the fd or their own dup of it, one thread
 *   posts point-to-point messages, one dups, queries and closes the fd in
 *   a loop; every completion is checked, every result compared.
 * - close_with_schedules_timers_and_work_in_flight: threads post
 *   schedules through their dups and close them mid-flight (the last
 *   close releases the endpoint with start timers armed, work items queued
 *   and the peer's completions coming in); the peer's schedules all end
 *   (0 or -ECONNRESET), none hangs.
 * - forked_children_post_on_the_shared_fd_and_exit: while the parent's
 *   schedules run, children forked with the fd post schedules on it (long
 *   local steps, rendezvous sends from their own memory) and exit at
 *   once; every child's schedule completes in the shared ring, and the
 *   peer's receives end.
 * - munmap_or_mremap_during_long_reduce_and_copy and
 *   munmap_of_a_receive_buffer_during_its_transfer: the schedule ends with
 *   0 or -EFAULT, never hangs or oopses.
 * - threads_race_for_the_last_max_colls_slots: exactly max_colls
 *   schedules are accepted, then ENOBUFS, and every slot comes back.
 * - killed_peer_ends_its_partners_schedules_with_an_error: a peer
 *   process with schedules running from several threads is SIGKILLed at
 *   a random moment; every schedule of its partner ends (0 or
 *   -ECONNRESET) and a later one naming it fails.
 * Each case checks that every file is gone, that the module's rings are
 * freed (/proc/vmallocinfo) and that no page stays pinned (/proc/vmstat
 * nr_foll_pin_acquired - nr_foll_pin_released); the last case, that the
 * kernel logged no report (scripts/kernel-reports' list: WARNING, BUG,
 * refcount_t, KASAN, lockdep, hung task, ...) nor "kprog: leaked" while
 * the cases ran.
 *
 * KP_COLL_CONCUR_ROUNDS scales the rounds (default 1; the VM runs of the
 * session used 5-10).
 */
#include "kprog_test.h"

#define TMO_MS		20000
#define NT		3		/* posting threads per endpoint */
#define CTX		7		/* the schedules' context */
#define MAXSTEPS	64

static int scale(void)
{
	const char *s = getenv("KP_COLL_CONCUR_ROUNDS");
	int n = s ? atoi(s) : 1;

	return n > 0 ? n : 1;
}

static long module_refs(void)
{
	return kp_sysfs_param("/sys/module/kprog/", "refcnt");
}

/* The kernel's page pins held now (acquired - released), -1: unknown. */
static long long pins(void)
{
	long long a = -1, r = -1, v;
	char name[64];
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			a = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			r = v;
	}
	fclose(f);
	return a < 0 || r < 0 ? -1 : a - r;
}

static long long pins_at_start;

static void __attribute__((constructor)) pins_snapshot(void)
{
	pins_at_start = pins();
}

/*
 * Files, rings and page pins are released a little after the last close
 * (RCU, work items): back to what they were before the case (pins: to
 * what they were when the program started; no case leaves any).
 */
static int settles_to(long refs, long areas)
{
	long long end = kp_now_ms() + 5000;

	while (module_refs() > refs || kp_vmalloc_areas() > areas ||
	       pins() > pins_at_start) {
		if (kp_now_ms() > end) {
			fprintf(stderr, "# not back: module refs %ld (was %ld), kprog vmalloc areas %ld (was %ld), page pins %lld (was %lld)\n",
				module_refs(), refs, kp_vmalloc_areas(), areas,
				pins(), pins_at_start);
			return 0;
		}
		usleep(10000);
	}
	return 1;
}

/* ---- one endpoint shared by threads: the ring read under a mutex ---- */

struct mtep {
	struct kp_ep e;
	pthread_mutex_t mu;
};

static void mt_init(struct mtep *m)
{
	pthread_mutex_init(&m->mu, NULL);
}

/* The completion of @req_id, whichever thread's call put it in the ring. */
static int mt_wait(struct mtep *m, __u64 req_id, struct kprog_cqe *out,
		   int ms)
{
	long long end = kp_now_ms() + ms;
	int found, bad;

	for (;;) {
		pthread_mutex_lock(&m->mu);
		kp_ring_drain(&m->e);
		found = kp_take(&m->e, req_id, out);
		bad = m->e.ring_bad;
		pthread_mutex_unlock(&m->mu);
		if (found)
			return 0;
		if (bad)
			return -EPROTO;
		if (kp_now_ms() >= end)
			return -ETIMEDOUT;
		/* Also moves overflowed completions into the ring. */
		kp_ioc_wait(m->e.fd, 2000000LL);
	}
}

/* ---- schedules built per thread ---- */

struct sb {
	struct kprog_coll_step st[MAXSTEPS];
	unsigned int n;
};

static void sb_add(struct sb *b, __u8 kind, __u32 round, __s32 peer,
		   const void *src, void *dst, __u64 len)
{
	kp_coll_step(&b->st[b->n++], kind, round, peer, src, dst, len);
}

static void sb_red(struct sb *b, __u32 round, const void *src, void *dst,
		   __u64 len)
{
	sb_add(b, KPROG_STEP_REDUCE, round, 0, src, dst, len);
	b->st[b->n - 1].dtype = KPROG_DT_INT32;
	b->st[b->n - 1].op = KPROG_OP_SUM;
}

/* Post @b on @fd: 0 (@out->done says whether it is over) or -errno. */
static int sb_post(int fd, const struct sb *b, __s32 tag, __u64 req_id,
		   struct kprog_coll *out)
{
	struct kprog_coll c = {
		.req_id = req_id,
		.steps = (__u64)(uintptr_t)b->st,
		.nr_steps = b->n,
		.context = CTX,
		.tag = tag,
	};
	int ret = ioctl(fd, KPROG_IOC_COLL, &c) ? -errno : 0;

	if (out)
		*out = c;
	return ret;
}

/* Post and wait for the one completion; its error (or the call's). */
static int sb_run(struct mtep *m, int fd, const struct sb *b, __s32 tag,
		  __u64 req_id, int ms)
{
	struct kprog_coll c;
	struct kprog_cqe q;
	int ret = sb_post(fd, b, tag, req_id, &c);

	if (ret)
		return ret;
	if (c.done)
		return c.cqe.req_id == req_id ? c.cqe.error : -EPROTO;
	ret = mt_wait(m, req_id, &q, ms);
	return ret ? ret : q.error;
}

/* Element @i of rank @r's block in iteration @it. */
static __s32 val(int r, int it, size_t i)
{
	return (r + 1) * 1000003 + it * 7919 + (__s32)i;
}

/*
 * An exchange of @len bytes with @peer, then the sum into @acc: round 0
 * sends @sbuf and receives @rbuf, round 1 adds @rbuf into @acc (a copy of
 * @sbuf) and round 2 copies @acc to @out. Long REDUCE/COPY steps go to the
 * work item after the start delay.
 */
static void exchange(struct sb *b, int peer, __s32 *sbuf, __s32 *rbuf,
		     __s32 *acc, __s32 *out, size_t len)
{
	b->n = 0;
	sb_add(b, KPROG_STEP_SEND, 0, peer, sbuf, NULL, len);
	sb_add(b, KPROG_STEP_RECV, 0, peer, NULL, rbuf, len);
	sb_red(b, 1, rbuf, acc, len);
	sb_add(b, KPROG_STEP_COPY, 2, 0, acc, out, len);
}

static const size_t sizes[] = { 256, 6000, 40000, 200000 };
#define MAXLEN	200000

struct bufs {
	__s32 *s, *r, *acc, *out;
};

static int bufs_alloc(struct bufs *b)
{
	b->s = kp_alloc(MAXLEN);
	b->r = kp_alloc(MAXLEN);
	b->acc = kp_alloc(MAXLEN);
	b->out = kp_alloc(MAXLEN);
	return b->s && b->r && b->acc && b->out ? 0 : -ENOMEM;
}

static void bufs_free(struct bufs *b)
{
	kp_free(b->s, MAXLEN);
	kp_free(b->r, MAXLEN);
	kp_free(b->acc, MAXLEN);
	kp_free(b->out, MAXLEN);
}

/* One exchange of iteration @it between ranks @self and @peer. */
static int exchange_once(struct mtep *m, int fd, struct bufs *b, int self,
			 int peer, __s32 tag, __u64 req_id, int it,
			 size_t len, int check)
{
	size_t i, n = len / 4;
	struct sb sb;
	int ret;

	for (i = 0; i < n; i++) {
		b->s[i] = val(self, it, i);
		b->acc[i] = b->s[i];
		b->r[i] = b->out[i] = 0;
	}
	exchange(&sb, peer, b->s, b->r, b->acc, b->out, len);
	ret = sb_run(m, fd, &sb, tag, req_id, TMO_MS);
	if (ret || !check)
		return ret;
	for (i = 0; i < n; i++) {
		if (b->out[i] != val(self, it, i) + val(peer, it, i)) {
			fprintf(stderr, "# rank %d tag %d it %d len %zu: [%zu] %d\n",
				self, tag, it, len, i, b->out[i]);
			return -EBADMSG;
		}
	}
	return 0;
}

FIXTURE(cc) {
	int dummy;
};

FIXTURE_SETUP(cc)
{
	struct kprog_info info;
	int fd = kp_open();

	if (fd < 0)
		SKIP(return, "no %s: %s", KPROG_DEVICE, kp_strerr(fd));
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_GET_INFO, &info));
	close(fd);
	if (!(info.features & KPROG_FEAT_COLL))
		SKIP(return, "module without KPROG_FEAT_COLL");
	if (kp_vmalloc_areas() < 0)
		SKIP(return, "no /proc/vmallocinfo (root needed)");
}

FIXTURE_TEARDOWN(cc)
{
}

/* ---- case 1: many threads on one fd ---- */

struct worker {
	pthread_t th;
	struct mtep *m;
	int fd;			/* the fd it posts through (maybe a dup) */
	int self, peer, k, iters;
	volatile int *stop;
	int err;
	int done;
};

static void *sched_fn(void *arg)
{
	struct worker *w = arg;
	struct bufs b;
	int it;

	w->err = bufs_alloc(&b);
	for (it = 0; !w->err && it < w->iters; it++) {
		w->err = exchange_once(w->m, w->fd, &b, w->self, w->peer,
				       100 + w->k, ((__u64)w->k << 32) | it, it,
				       sizes[(it + w->k) % 4], 1);
		w->done++;
	}
	bufs_free(&b);
	return NULL;
}

/* Point-to-point on context 0 beside the schedules: rank 0 sends. */
static void *p2p_fn(void *arg)
{
	struct worker *w = arg;
	size_t len;
	unsigned char *buf = kp_alloc(MAXLEN);
	struct kprog_post p;
	struct kprog_cqe q;
	__u64 id;
	int it;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (it = 0; !w->err && it < w->iters * 2; it++) {
		len = sizes[it % 4];
		id = (99ULL << 32) | it;
		if (w->self == 0) {
			kp_fill(buf, len, it, 0);
			w->err = kp_send(&w->m->e, id, buf, len, 1, 5, 0, 0, &p);
		} else {
			memset(buf, 0, len);
			w->err = kp_recv(&w->m->e, id, buf, len, 0, 5, 0, 0, &p);
		}
		if (w->err)
			break;
		if (p.done == 1)
			q = p.cqe;
		else
			w->err = mt_wait(w->m, id, &q, TMO_MS);
		if (!w->err && q.error)
			w->err = q.error;
		if (!w->err && w->self == 1 && kp_check(buf, len, it, 0) >= 0)
			w->err = -EBADMSG;
		w->done++;
	}
	kp_free(buf, MAXLEN);
	return NULL;
}

/* dup, use and close the fd in a loop: none of it touches the endpoint. */
static void *dup_fn(void *arg)
{
	struct worker *w = arg;
	struct kprog_info info;
	int fd;

	while (!*w->stop && !w->err) {
		fd = dup(w->fd);
		if (fd < 0) {
			w->err = -errno;
			break;
		}
		if (ioctl(fd, KPROG_IOC_GET_INFO, &info))
			w->err = -errno;
		close(fd);
		w->done++;
		usleep(200);
	}
	return NULL;
}

TEST_F_TIMEOUT(cc, threads_post_schedules_and_point_to_point_on_one_fd, 300)
{
	struct worker w[2][NT + 2];
	struct kp_ep e[2];
	struct mtep m[2];
	volatile int stop = 0;
	long refs = module_refs(), areas = kp_vmalloc_areas();
	int r, k, iters = 24 * scale(), fds[2][NT];

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	for (r = 0; r < 2; r++)
		mt_init(&m[r]);
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	m[0].e = e[0];
	m[1].e = e[1];
	for (r = 0; r < 2; r++) {
		for (k = 0; k < NT; k++) {
			/* Thread 0 posts through the fd, the others through dups. */
			fds[r][k] = k ? dup(m[r].e.fd) : m[r].e.fd;
			ASSERT_LE(0, fds[r][k]);
			w[r][k] = (struct worker){ .m = &m[r], .fd = fds[r][k],
				.self = r, .peer = 1 - r, .k = k,
				.iters = iters, .stop = &stop };
			ASSERT_EQ(0, pthread_create(&w[r][k].th, NULL, sched_fn,
						    &w[r][k]));
		}
		w[r][NT] = (struct worker){ .m = &m[r], .fd = m[r].e.fd,
			.self = r, .iters = iters, .stop = &stop };
		ASSERT_EQ(0, pthread_create(&w[r][NT].th, NULL, p2p_fn,
					    &w[r][NT]));
		w[r][NT + 1] = (struct worker){ .m = &m[r], .fd = m[r].e.fd,
			.self = r, .stop = &stop };
		ASSERT_EQ(0, pthread_create(&w[r][NT + 1].th, NULL, dup_fn,
					    &w[r][NT + 1]));
	}
	for (r = 0; r < 2; r++)
		for (k = 0; k <= NT; k++)
			pthread_join(w[r][k].th, NULL);
	stop = 1;
	for (r = 0; r < 2; r++)
		pthread_join(w[r][NT + 1].th, NULL);
	for (r = 0; r < 2; r++) {
		for (k = 0; k < NT; k++) {
			EXPECT_EQ(0, w[r][k].err) TH_LOG("rank %d thread %d: %s after %d",
							 r, k, kp_strerr(w[r][k].err),
							 w[r][k].done);
			EXPECT_EQ(iters, w[r][k].done);
			if (k)
				close(fds[r][k]);
		}
		EXPECT_EQ(0, w[r][NT].err) TH_LOG("rank %d p2p: %s", r,
						   kp_strerr(w[r][NT].err));
		EXPECT_EQ(0, w[r][NT + 1].err);
		EXPECT_LT(0, w[r][NT + 1].done);
		/* Nothing else completed: no stray entry in the ring. */
		kp_ring_drain(&m[r].e);
		EXPECT_EQ(0, m[r].e.nstash);
		kp_ep_close(&m[r].e);
	}
	EXPECT_TRUE(settles_to(refs, areas));
}

/* ---- case 2: the last close with schedules in flight ---- */

struct closer {
	pthread_t th;
	struct mtep *m;
	int fd, self, peer, k, posted, err;
	unsigned int seed;
	volatile int *stop;
	struct bufs b[4];
};

/* Rank 0: posts schedules through its dup without waiting, then closes it. */
static void *post_and_close_fn(void *arg)
{
	struct closer *c = arg;
	struct kprog_coll out;
	struct sb sb;
	int i, ret;

	for (i = 0; i < 4; i++) {
		if (bufs_alloc(&c->b[i])) {
			c->err = -ENOMEM;
			break;
		}
		exchange(&sb, c->peer, c->b[i].s, c->b[i].r, c->b[i].acc,
			 c->b[i].out, sizes[(i + c->k) % 4]);
		/* A tag each: a send the close stopped shifts no match. */
		ret = sb_post(c->fd, &sb, 100 + 8 * c->k + i,
			      ((__u64)c->k << 32) | i, &out);
		if (ret) {
			c->err = ret;
			break;
		}
		c->posted++;
		usleep(rand_r(&c->seed) % 1500);
	}
	close(c->fd);
	return NULL;
}

/* Rank 1: mirrors rank 0's schedules while rank 0 goes away. */
static void *mirror_fn(void *arg)
{
	struct closer *c = arg;
	struct kprog_cqe q;
	struct kprog_coll out;
	struct sb sb;
	int i, ret;

	for (i = 0; i < 4; i++) {
		if (bufs_alloc(&c->b[i])) {
			c->err = -ENOMEM;
			return NULL;
		}
		exchange(&sb, c->peer, c->b[i].s, c->b[i].r, c->b[i].acc,
			 c->b[i].out, sizes[(i + c->k) % 4]);
		/* A tag each: a send the close stopped shifts no match. */
		ret = sb_post(c->fd, &sb, 100 + 8 * c->k + i,
			      ((__u64)c->k << 32) | i, &out);
		if (ret) {
			c->err = ret;
			return NULL;
		}
		if (out.done) {
			q = out.cqe;
		} else {
			ret = mt_wait(c->m, ((__u64)c->k << 32) | i, &q, TMO_MS);
			if (ret) {
				c->err = ret;	/* a hang: -ETIMEDOUT */
				return NULL;
			}
		}
		if (q.error && q.error != -ECONNRESET) {
			c->err = q.error;
			return NULL;
		}
		c->posted++;
	}
	return NULL;
}

static void closer_free(struct closer *c)
{
	int i;

	for (i = 0; i < 4; i++)
		bufs_free(&c->b[i]);
}

TEST_F_TIMEOUT(cc, close_with_schedules_timers_and_work_in_flight, 300)
{
	long refs = module_refs(), areas = kp_vmalloc_areas();
	long long delay = kp_param("coll_start_delay_us");
	int writable = kp_param_writable("coll_start_delay_us");
	int rounds = 12 * scale(), i, k, bad = 0, hung = 0;
	unsigned int seed = 1;

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	/* Start timers armed for a while: the close finds them armed. */
	if (writable)
		kp_param_write("coll_start_delay_us", 3000);
	for (i = 0; i < rounds; i++) {
		struct closer c[2][NT];
		struct mtep m[2];
		struct kp_ep e[2];

		ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
		for (k = 0; k < 2; k++) {
			mt_init(&m[k]);
			m[k].e = e[k];
		}
		for (k = 0; k < NT; k++) {
			c[0][k] = (struct closer){ .m = &m[0],
				.fd = dup(m[0].e.fd), .self = 0, .peer = 1,
				.k = k, .seed = seed++ };
			c[1][k] = (struct closer){ .m = &m[1], .fd = m[1].e.fd,
				.self = 1, .peer = 0, .k = k };
			ASSERT_LE(0, c[0][k].fd);
			ASSERT_EQ(0, pthread_create(&c[1][k].th, NULL,
						    mirror_fn, &c[1][k]));
			ASSERT_EQ(0, pthread_create(&c[0][k].th, NULL,
						    post_and_close_fn, &c[0][k]));
		}
		/* Rank 0's own fd and ring go first: its dups are the last. */
		kp_ep_close(&m[0].e);
		for (k = 0; k < NT; k++) {
			pthread_join(c[0][k].th, NULL);
			pthread_join(c[1][k].th, NULL);
			if (c[0][k].err || (c[1][k].err &&
					    c[1][k].err != -ETIMEDOUT)) {
				bad++;
				TH_LOG("round %d thread %d: rank 0 %s, rank 1 %s",
				       i, k, kp_strerr(c[0][k].err),
				       kp_strerr(c[1][k].err));
			}
			hung += c[1][k].err == -ETIMEDOUT;
			closer_free(&c[0][k]);
			closer_free(&c[1][k]);
		}
		kp_ep_close(&m[1].e);
	}
	if (writable)
		kp_param_write("coll_start_delay_us", delay);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, hung);
	EXPECT_TRUE(settles_to(refs, areas));
}

/* ---- case 3: forked children post on the shared fd and exit ---- */

#define CHILD_SEND	100000		/* a rendezvous */

/* Child @i: posts on the parent's fd and exits at once (or nearly). */
static void child_post(struct kp_ep *e, int i, int sends)
{
	size_t len = 1 << 20;
	unsigned char *a = kp_alloc(len), *b = kp_alloc(len);
	struct sb sb;

	if (!a || !b)
		_exit(2);
	memset(a, i, len);
	sb.n = 0;
	if (i % 4 == 1 && i / 4 < sends) {
		/* A rendezvous send from the child's own memory. */
		sb_add(&sb, KPROG_STEP_SEND, 0, 1, a, NULL, CHILD_SEND);
		if (sb_post(e->fd, &sb, 2, 0xc0000000ULL + i, NULL))
			_exit(3);
	} else {
		/* Long local steps: the work item runs after the exit. */
		sb_add(&sb, KPROG_STEP_COPY, 0, 0, a, b, len);
		sb_red(&sb, 1, a, b, len);
		if (sb_post(e->fd, &sb, 3, 0xc0000000ULL + i, NULL))
			_exit(3);
	}
	if (i % 3 == 0)
		usleep(i % 2000);
	_exit(0);
}

/* A distinct errno into @errs (8 slots, 0-terminated). */
static void note_err(int *errs, int err)
{
	int j;

	for (j = 0; j < 7 && errs[j] && errs[j] != err; j++)
		;
	errs[j] = err;
}

TEST_F_TIMEOUT(cc, forked_children_post_on_the_shared_fd_and_exit, 300)
{
	long refs = module_refs(), areas = kp_vmalloc_areas();
	int children = 16 * scale(), i, status, bad_exit = 0, missing = 0;
	int sends = children / 4 < 40 ? children / 4 : 40, got = 0, top = 0;
	int cerrs[8] = { 0 }, rerrs[8] = { 0 };
	unsigned char *rbuf, *tbuf;
	long long idle;
	struct worker w[2];
	struct kprog_cqe q;
	struct kprog_coll c;
	struct mtep m[2];
	struct kp_ep e[2];
	struct sb sb;
	volatile int stop = 0;

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	rbuf = kp_alloc(CHILD_SEND);
	tbuf = kp_alloc(CHILD_SEND);
	ASSERT_TRUE(rbuf && tbuf);
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	for (i = 0; i < 2; i++) {
		mt_init(&m[i]);
		m[i].e = e[i];
	}
	/* Rank 1 waits for what the children send (tag 2). */
	sb.n = 0;
	sb_add(&sb, KPROG_STEP_RECV, 0, 0, NULL, rbuf, CHILD_SEND);
	for (i = 0; i < sends; i++) {
		ASSERT_EQ(0, sb_post(m[1].e.fd, &sb, 2, 5000 + i, &c));
		ASSERT_EQ(0, c.done);
	}
	/* The parent's own schedules run with rank 1 all along. */
	for (i = 0; i < 2; i++) {
		w[i] = (struct worker){ .m = &m[i], .fd = m[i].e.fd, .self = i,
			.peer = 1 - i, .k = 0, .iters = 8 * scale(),
			.stop = &stop };
		ASSERT_EQ(0, pthread_create(&w[i].th, NULL, sched_fn, &w[i]));
	}
	for (i = 0; i < children; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid)
			child_post(&m[0].e, i, sends);
		if (kp_child_status(pid, &status))
			bad_exit++;
	}
	for (i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
	/* Every child's schedule ended, in the ring the parent shares. */
	for (i = 0; i < children; i++) {
		if (mt_wait(&m[0], 0xc0000000ULL + i, &q, TMO_MS)) {
			missing++;
			continue;
		}
		if (q.error)
			note_err(cerrs, q.error);
	}
	/*
	 * A child gone before its send started sent nothing: rank 0 (the
	 * parent, alive) sends what rank 1 still waits for, one at a time.
	 */
	sb.n = 0;
	sb_add(&sb, KPROG_STEP_SEND, 0, 1, tbuf, NULL, CHILD_SEND);
	idle = kp_now_ms();
	while (got < sends && kp_now_ms() - idle < TMO_MS) {
		if (!mt_wait(&m[1], 5000 + got, &q, 300)) {
			if (q.error)
				note_err(rerrs, q.error);
			got++;
			idle = kp_now_ms();
			continue;
		}
		if (sb_run(&m[0], m[0].e.fd, &sb, 2, 0xd0000000ULL + top,
			   TMO_MS))
			break;
		top++;
	}
	TH_LOG("%d children (%d sends): errnos of their schedules %d %d %d, of rank 1's receives %d %d %d; %d topped up by the parent",
	       children, sends, cerrs[0], cerrs[1], cerrs[2], rerrs[0],
	       rerrs[1], rerrs[2], top);
	EXPECT_EQ(0, bad_exit);
	EXPECT_EQ(0, missing);
	EXPECT_EQ(sends, got);
	for (i = 0; i < 8; i++) {
		EXPECT_TRUE(!cerrs[i] || cerrs[i] == -ECONNRESET ||
			    cerrs[i] == -EFAULT) TH_LOG("%s", kp_strerr(cerrs[i]));
		EXPECT_TRUE(!rerrs[i] || rerrs[i] == -ECONNRESET ||
			    rerrs[i] == -EFAULT) TH_LOG("%s", kp_strerr(rerrs[i]));
	}
	EXPECT_EQ(0, w[0].err) TH_LOG("rank 0: %s", kp_strerr(w[0].err));
	EXPECT_EQ(0, w[1].err) TH_LOG("rank 1: %s", kp_strerr(w[1].err));
	kp_ep_close(&m[0].e);
	kp_ep_close(&m[1].e);
	kp_free(rbuf, CHILD_SEND);
	kp_free(tbuf, CHILD_SEND);
	EXPECT_TRUE(settles_to(refs, areas));
}

/* ---- case 4: munmap/mremap under a running schedule ---- */

struct unmapper {
	void *addr;
	size_t len;
	int us, mode;		/* 0 munmap, 1 mremap away, 2 nothing */
	void *moved;
};

static void *unmap_fn(void *arg)
{
	struct unmapper *u = arg;

	usleep(u->us);
	if (u->mode == 0) {
		munmap(u->addr, u->len);
	} else if (u->mode == 1) {
		void *to = mmap(NULL, u->len, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		u->moved = to == MAP_FAILED ? MAP_FAILED :
			   mremap(u->addr, u->len, u->len,
				  MREMAP_MAYMOVE | MREMAP_FIXED, to);
		if (u->moved == MAP_FAILED) {
			if (to != MAP_FAILED)
				munmap(to, u->len);
			u->moved = NULL;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(cc, munmap_or_mremap_during_long_reduce_and_copy, 300)
{
	size_t len = 8u << 20, i;
	long refs = module_refs(), areas = kp_vmalloc_areas();
	int rounds = 24 * scale(), r, n[3] = { 0 }, other = 0, hung = 0;
	struct mtep m;

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	mt_init(&m);
	ASSERT_EQ(0, kp_ep_open(&m.e, kp_key(), 0, 1, 0, 0));
	for (r = 0; r < rounds; r++) {
		__s32 *a = kp_alloc(len), *b = kp_alloc(len), *c = kp_alloc(len);
		struct unmapper u = { .len = len, .us = (r * 397) % 4000,
				      .mode = r % 3 };
		void **victim[3] = { (void **)&a, (void **)&b, (void **)&c };
		pthread_t th;
		struct sb sb;
		int ret;

		ASSERT_TRUE(a && b && c);
		for (i = 0; i < len / 4; i++) {
			a[i] = i;
			b[i] = 2 * i;
		}
		sb.n = 0;
		sb_red(&sb, 0, a, b, len);
		sb_add(&sb, KPROG_STEP_COPY, 1, 0, b, c, len);
		u.addr = *victim[(r / 3) % 3];
		ASSERT_EQ(0, pthread_create(&th, NULL, unmap_fn, &u));
		ret = sb_run(&m, m.e.fd, &sb, 1, r, TMO_MS);
		pthread_join(th, NULL);
		if (ret == 0)
			n[0]++;
		else if (ret == -EFAULT)
			n[1]++;
		else if (ret == -ETIMEDOUT)
			hung++;
		else {
			other++;
			TH_LOG("round %d: %s", r, kp_strerr(ret));
		}
		if (u.mode == 2 && !ret)
			for (i = 0; i < len / 4; i++)
				if (c[i] != (__s32)(3 * i)) {
					n[2]++;
					break;
				}
		if (u.mode == 1 && u.moved)
			kp_free(u.moved, len);
		if (u.mode == 0 || (u.mode == 1 && u.moved))
			*victim[(r / 3) % 3] = NULL;
		kp_free(a, len);
		kp_free(b, len);
		kp_free(c, len);
	}
	TH_LOG("%d rounds: %d ended with 0, %d with -EFAULT", rounds, n[0], n[1]);
	EXPECT_EQ(0, hung);
	EXPECT_EQ(0, other);
	EXPECT_EQ(0, n[2]);	/* wrong data with nothing unmapped */
	kp_ep_close(&m.e);
	EXPECT_TRUE(settles_to(refs, areas));
}

TEST_F_TIMEOUT(cc, munmap_of_a_receive_buffer_during_its_transfer, 300)
{
	size_t len = 16u << 20;
	long refs = module_refs(), areas = kp_vmalloc_areas();
	int rounds = 12 * scale(), r, hung = 0, other = 0, failed = 0;
	unsigned char *src;
	struct mtep m[2];
	struct kp_ep e[2];

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	for (r = 0; r < 2; r++) {
		mt_init(&m[r]);
		m[r].e = e[r];
	}
	src = kp_alloc(len);
	ASSERT_TRUE(src != NULL);
	memset(src, 7, len);
	for (r = 0; r < rounds; r++) {
		unsigned char *dst = kp_alloc(len);
		struct unmapper u = { .addr = dst, .len = len,
				      .us = (r * 733) % 6000, .mode = r % 2 };
		struct sb rs, ss;
		struct kprog_coll c0, c1;
		struct kprog_cqe q;
		pthread_t th;
		int e0, e1;

		ASSERT_TRUE(dst != NULL);
		rs.n = ss.n = 0;
		sb_add(&rs, KPROG_STEP_RECV, 0, 1, NULL, dst, len);
		sb_add(&ss, KPROG_STEP_SEND, 0, 0, src, NULL, len);
		ASSERT_EQ(0, sb_post(m[0].e.fd, &rs, 4, 1000 + r, &c0));
		ASSERT_EQ(0, pthread_create(&th, NULL, unmap_fn, &u));
		ASSERT_EQ(0, sb_post(m[1].e.fd, &ss, 4, 2000 + r, &c1));
		e0 = c0.done ? c0.cqe.error : mt_wait(&m[0], 1000 + r, &q, TMO_MS);
		if (!c0.done && !e0)
			e0 = q.error;
		e1 = c1.done ? c1.cqe.error : mt_wait(&m[1], 2000 + r, &q, TMO_MS);
		if (!c1.done && !e1)
			e1 = q.error;
		pthread_join(th, NULL);
		hung += e0 == -ETIMEDOUT || e1 == -ETIMEDOUT;
		failed += e0 != 0;
		if ((e0 && e0 != -EFAULT && e0 != -ETIMEDOUT) ||
		    (e1 && e1 != -EFAULT && e1 != -ETIMEDOUT &&
		     e1 != -ECONNRESET)) {
			other++;
			TH_LOG("round %d: receiver %s, sender %s", r,
			       kp_strerr(e0), kp_strerr(e1));
		}
		if (u.mode == 1)
			kp_free(u.moved ? u.moved : dst, len);
	}
	TH_LOG("%d rounds: %d receives failed (buffer gone)", rounds, failed);
	EXPECT_EQ(0, hung);
	EXPECT_EQ(0, other);
	kp_free(src, len);
	kp_job_close(e, 2);
	EXPECT_TRUE(settles_to(refs, areas));
}

/* ---- case 5: threads race for the last max_colls slots ---- */

struct racer {
	pthread_t th;
	int fd, k, ok, enobufs, err;
	pthread_barrier_t *go;
	__s32 tags[65536 / 4];
	double y;
};

static void *race_fn(void *arg)
{
	struct racer *x = arg;
	struct kprog_coll c;
	struct sb sb;
	int ret, i;

	pthread_barrier_wait(x->go);
	for (i = 0; x->enobufs < 50; i++) {
		sb.n = 0;
		sb_add(&sb, KPROG_STEP_RECV, 0, 1, NULL, &x->y, 8);
		ret = sb_post(x->fd, &sb, 1000 * (x->k + 1) + i,
			      ((__u64)(x->k + 1) << 32) | i, &c);
		if (ret == -ENOBUFS) {
			x->enobufs++;
		} else if (ret || c.done) {
			x->err = ret ? ret : -EPROTO;
			break;
		} else if (x->ok < (int)ARRAY_SIZE(x->tags)) {
			x->tags[x->ok++] = 1000 * (x->k + 1) + i;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(cc, threads_race_for_the_last_max_colls_slots, 300)
{
	long refs = module_refs(), areas = kp_vmalloc_areas();
	long long max = kp_param("max_colls");
	int rounds = 8 * scale(), r, k, i, total, bad = 0;
	struct racer *x = calloc(4, sizeof(*x));
	pthread_barrier_t go;
	struct mtep m[2];
	struct kp_ep e[2];
	double one = 1;

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	ASSERT_TRUE(x != NULL);
	ASSERT_LT(0, max);
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	for (r = 0; r < 2; r++) {
		mt_init(&m[r]);
		m[r].e = e[r];
	}
	for (r = 0; r < rounds; r++) {
		pthread_barrier_init(&go, NULL, 4);
		for (k = 0; k < 4; k++) {
			memset(&x[k], 0, sizeof(x[k]));
			x[k].fd = k % 2 ? m[0].e.fd : dup(m[0].e.fd);
			x[k].k = k;
			x[k].go = &go;
			ASSERT_LE(0, x[k].fd);
			ASSERT_EQ(0, pthread_create(&x[k].th, NULL, race_fn,
						    &x[k]));
		}
		total = 0;
		for (k = 0; k < 4; k++) {
			pthread_join(x[k].th, NULL);
			EXPECT_EQ(0, x[k].err);
			total += x[k].ok;
		}
		pthread_barrier_destroy(&go);
		/* Exactly max_colls got in, whoever won the last slots. */
		EXPECT_EQ(max, total) TH_LOG("round %d", r);
		/* Rank 1 answers each one: every slot comes back. */
		for (k = 0; k < 4; k++) {
			for (i = 0; i < x[k].ok; i++) {
				struct sb sb = { .n = 0 };
				struct kprog_coll c;

				sb_add(&sb, KPROG_STEP_SEND, 0, 0, &one, NULL, 8);
				if (sb_post(m[1].e.fd, &sb, x[k].tags[i], 7, &c) ||
				    !c.done || c.cqe.error)
					bad++;
			}
		}
		for (k = 0; k < 4; k++) {
			for (i = 0; i < x[k].ok; i++) {
				struct kprog_cqe q;
				__u64 id = ((__u64)(k + 1) << 32) |
					   (x[k].tags[i] - 1000 * (k + 1));

				if (mt_wait(&m[0], id, &q, TMO_MS) || q.error)
					bad++;
			}
			if (k % 2 == 0)
				close(x[k].fd);
		}
	}
	EXPECT_EQ(0, bad);
	free(x);
	kp_job_close(e, 2);
	EXPECT_TRUE(settles_to(refs, areas));
}

/* ---- case 6: a peer killed mid-schedule ---- */

#define KILL_RECVS	24

/* Round 0: one send to the peer and KILL_RECVS receives from it. */
static void many_recvs(struct sb *b, int peer, int sender, __s32 *buf,
		       size_t len)
{
	int i;

	b->n = 0;
	if (sender) {
		for (i = 0; i < KILL_RECVS; i++)
			sb_add(b, KPROG_STEP_SEND, 0, peer, buf, NULL, len);
		sb_add(b, KPROG_STEP_RECV, 0, peer, NULL, buf + len / 4, len);
	} else {
		sb_add(b, KPROG_STEP_SEND, 0, peer, buf, NULL, len);
		for (i = 0; i < KILL_RECVS; i++)
			sb_add(b, KPROG_STEP_RECV, 0, peer, NULL,
			       buf + (i + 1) * len / 4, len);
	}
	sb_red(b, 1, buf, buf + (KILL_RECVS + 1) * len / 4, len);
}

struct victim_thread {
	pthread_t th;
	struct mtep *m;
	int k;
};

/* The victim (rank 1): exchanges with rank 0 from NT threads until killed. */
static void *victim_fn(void *arg)
{
	struct victim_thread *v = arg;
	size_t len = v->k == 2 ? 20000 : 64;
	__s32 *buf = kp_alloc((KILL_RECVS + 2) * len);
	struct sb sb;
	int it;

	if (!buf)
		_exit(2);
	for (it = 0;; it++) {
		many_recvs(&sb, 0, 1, buf, len);
		if (sb_run(v->m, v->m->e.fd, &sb, 10 + v->k,
			   ((__u64)v->k << 32) | it, TMO_MS))
			_exit(3);
	}
	return NULL;
}

struct partner {
	pthread_t th;
	struct mtep *m;
	int k, ended, ok, reset, err;
};

static void *partner_fn(void *arg)
{
	struct partner *p = arg;
	size_t len = p->k == 2 ? 20000 : 64;
	__s32 *buf = kp_alloc((KILL_RECVS + 2) * len);
	struct sb sb;
	int it, ret;

	if (!buf) {
		p->err = -ENOMEM;
		return NULL;
	}
	for (it = 0;; it++) {
		many_recvs(&sb, 1, 0, buf, len);
		ret = sb_run(p->m, p->m->e.fd, &sb, 10 + p->k,
			     ((__u64)p->k << 32) | it, TMO_MS);
		p->ended++;
		if (!ret) {
			p->ok++;
			continue;
		}
		if (ret == -ECONNRESET)
			p->reset++;
		else
			p->err = ret;
		break;
	}
	kp_free(buf, (KILL_RECVS + 2) * len);
	return NULL;
}

TEST_F_TIMEOUT(cc, killed_peer_ends_its_partners_schedules_with_an_error, 300)
{
	long refs = module_refs(), areas = kp_vmalloc_areas();
	int rounds = 10 * scale(), r, k, bad = 0, p2[2];
	long ok = 0;

	if (_metadata->skip)
		return;

	ASSERT_LE(0, areas);
	for (r = 0; r < rounds; r++) {
		__u64 key = kp_key();
		struct partner p[NT];
		struct mtep m;
		struct sb sb;
		double y;
		pid_t pid;

		ASSERT_EQ(0, pipe(p2));
		mt_init(&m);
		ASSERT_EQ(0, kp_ep_open(&m.e, key, 0, 2, 0, 0));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct victim_thread v[NT];
			struct mtep vm;
			int i;

			close(p2[0]);
			kp_ep_close(&m.e);
			mt_init(&vm);
			if (kp_ep_open(&vm.e, key, 1, 2, 0, 0))
				_exit(1);
			for (i = 0; i < NT; i++) {
				v[i] = (struct victim_thread){ .m = &vm, .k = i };
				if (pthread_create(&v[i].th, NULL, victim_fn, &v[i]))
					_exit(1);
			}
			kp_pipe_put(p2[1], 1);
			pause();
			_exit(0);
		}
		close(p2[1]);
		ASSERT_EQ(1, kp_pipe_get(p2[0], TMO_MS));
		close(p2[0]);
		for (k = 0; k < NT; k++) {
			p[k] = (struct partner){ .m = &m, .k = k };
			ASSERT_EQ(0, pthread_create(&p[k].th, NULL, partner_fn,
						    &p[k]));
		}
		usleep(2000 + (r * 4111) % 30000);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		for (k = 0; k < NT; k++) {
			pthread_join(p[k].th, NULL);
			ok += p[k].ok;
			if (p[k].err || p[k].reset != 1) {
				bad++;
				TH_LOG("round %d thread %d: %d ended, %d reset, %s",
				       r, k, p[k].ended, p[k].reset,
				       kp_strerr(p[k].err));
			}
		}
		/*
		 * A later schedule naming the dead rank fails: at once once
		 * its file is released, which may come a little after the
		 * exit (a kernel copy holding its mm releases its mappings,
		 * and with them the file, when it ends).
		 */
		sb.n = 0;
		sb_add(&sb, KPROG_STEP_RECV, 0, 1, NULL, &y, 8);
		EXPECT_EQ(-ECONNRESET, sb_run(&m, m.e.fd, &sb, 99, 99, TMO_MS));
		kp_ep_close(&m.e);
	}
	TH_LOG("%d rounds: %ld schedules completed before the kills", rounds, ok);
	EXPECT_EQ(0, bad);
	EXPECT_TRUE(settles_to(refs, areas));
}

/* ---- the kernel's log while the cases ran ---- */

/* What scripts/kernel-reports calls a kernel report, and kprog's leaks. */
static const char *const bad_words[] = {
	"BUG:", "kernel BUG", "WARNING:", "Oops", "general protection",
	"Kernel panic", "KASAN:", "KFENCE:", "UBSAN:", "unreferenced object",
	"possible circular locking", "possible recursive locking",
	"inconsistent lock state", "suspicious RCU usage",
	"bad unlock balance", "held lock freed", "DEBUG_LOCKS_WARN_ON",
	"sleeping function called from invalid context", "ODEBUG",
	"list_add corruption", "list_del corruption", "refcount_t:",
	"blocked for more than", "soft lockup", "hard LOCKUP", "Call Trace:",
	"kprog: leaked",
};

/* /dev/kmsg from the start of this program on: what the cases added. */
static int kmsg_fd = -1;

static void __attribute__((constructor)) kmsg_open(void)
{
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
}

TEST_F(cc, kernel_log_has_no_report_from_these_cases)
{
	char rec[8192], last[256] = "";
	unsigned int i;
	ssize_t n;
	int bad = 0;

	if (_metadata->skip)
		return;
	if (kmsg_fd < 0)
		SKIP(return, "no /dev/kmsg (root needed)");
	for (;;) {
		n = read(kmsg_fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			break;
		rec[n] = 0;
		for (i = 0; i < ARRAY_SIZE(bad_words); i++) {
			if (strstr(rec, bad_words[i])) {
				bad++;
				snprintf(last, sizeof(last), "%.*s",
					 (int)strcspn(rec, "\n"), rec);
				break;
			}
		}
	}
	EXPECT_EQ(0, bad) TH_LOG("last of %d: %s", bad, last);
}

TEST_HARNESS_MAIN
