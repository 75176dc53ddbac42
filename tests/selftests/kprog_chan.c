// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests: the fast path's shared-memory channels
 * (include/uapi/linux/kprog.h, "The fast path"). The record protocol is
 * libshim/core/chan.c's, compiled in (it has no MPI in it).
 *
 *  - KPROG_IOC_CHAN_OPEN and the channel's mmap: errnos, the values it
 *    returns, one region seen from both sides, max_chans;
 *  - what the kernel publishes in the ring header for a user-space
 *    matcher: src flags, chan_gen, events, held, unexp;
 *  - order: records and sends through the kernel of one sender; drains
 *    (CHAN_DRAIN, RECV, PROBE) queue records in record order; DONE, cons,
 *    TAKEN records skipped;
 *  - KPROG_IOC_WAIT with KPROG_WAIT_EVENTS, KICK, the 8-byte WAIT;
 *  - garbage written by a misbehaving peer (a table of malformed indices
 *    and records, a forked scribbler, a seeded fuzz loop): no oops, no
 *    hang, "malformed" logged, other channels, the kernel path and other
 *    jobs unaffected;
 *  - a peer killed while it writes a record; the largest record.
 *
 * Forked children never use ASSERT/EXPECT: they report by exit status.
 */
#include "kprog_test.h"
#include <sys/klog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include "chan.h"

#define JOB_SIZE	5	/* ranks 0..3 joined by the fixture, 4 free */
#define NEP		4
#define CTX		0
#define QUIET_MS	300

#define REQUIRE_FAST() do { \
	if (kp_param("fast_limit") == 0) \
		SKIP(return, "fast path off (fast_limit=0)"); \
} while (0)

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

/* For tests that build their own jobs but need a longer timeout. */
FIXTURE(solo) {
	int unused;
};

FIXTURE_SETUP(solo)
{
}

FIXTURE_TEARDOWN(solo)
{
}

/* ---- channels ---- */

struct kp_ch {
	struct kprog_chan_open co;
	void *map;
	struct kp_dir tx, rx;
};

static int ch_open(int fd, __u32 peer, struct kprog_chan_open *co)
{
	memset(co, 0, sizeof(*co));
	co->peer = peer;
	return ioctl(fd, KPROG_IOC_CHAN_OPEN, co) ? -errno : 0;
}

/* CHAN_OPEN + mmap of the whole region; 0 or -errno. */
static int ch_map(struct kp_ep *e, __u32 peer, struct kp_ch *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	ret = ch_open(e->fd, peer, &c->co);
	if (ret)
		return ret;
	c->map = mmap(NULL, c->co.bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		      e->fd, (off_t)c->co.offset);
	if (c->map == MAP_FAILED) {
		c->map = NULL;
		return -errno;
	}
	kp_dir_init(&c->tx, c->map, &c->co, (int)c->co.tx);
	kp_dir_init(&c->rx, c->map, &c->co, 1 - (int)c->co.tx);
	return 0;
}

static void ch_unmap(struct kp_ch *c)
{
	if (c->map)
		munmap(c->map, c->co.bytes);
	c->map = NULL;
}

static struct kprog_chan_hdr *ch_hdr(struct kp_ch *c)
{
	return c->map;
}

static __u64 rseed(int src, int i)
{
	return 0xC0FFEE0000ull + (__u64)src * 100000 + (__u64)i;
}

/* Publish a record of @len bytes of stream @seed; 0 or -ENOSPC. */
static int rec_send(struct kp_dir *d, __u32 ctx, __s32 tag, __u32 len, __u64 seed)
{
	void *p = kp_dir_reserve(d, len, ctx, tag);

	if (!p)
		return -ENOSPC;
	kp_fill(p, len, seed, 0);
	kp_dir_publish(d);
	return 0;
}

static struct kprog_chan_rec *rec_at(const struct kp_dir *d, __u64 pos)
{
	return (struct kprog_chan_rec *)(d->ring + (pos & d->mask));
}

/* Writes a record header by hand (for malformed records). */
static void rec_raw(struct kp_dir *d, __u64 pos, __u32 state, __u32 flags,
		    __u32 len, __u32 ctx, __s32 tag)
{
	struct kprog_chan_rec *r = rec_at(d, pos);

	r->state = state;
	r->flags = flags;
	r->len = len;
	r->context = ctx;
	r->tag = tag;
	r->send_stamp = 0;
}

static __u64 ld64(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static __u32 ld32(const __u32 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st64(__u64 *p, __u64 v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* ---- what the kernel publishes in the ring header ---- */

static struct kprog_src *src_of(struct kp_ep *e, int rank)
{
	return (struct kprog_src *)((char *)e->map + e->hdr->src_offset) + rank;
}

static __u32 held_of(struct kp_ep *e, int rank)
{
	return ld32(&src_of(e, rank)->held);
}

static __u32 sflags_of(struct kp_ep *e, int rank)
{
	return ld32(&src_of(e, rank)->flags);
}

static __u32 unexp_of(struct kp_ep *e)
{
	return ld32(&e->hdr->unexp);
}

static __u32 events_of(struct kp_ep *e)
{
	return ld32(&e->hdr->events);
}

static __u32 gen_of(struct kp_ep *e)
{
	return ld32(&e->hdr->chan_gen);
}

/* ---- ioctls ---- */

static int drain(struct kp_ep *e, __s32 peer, __u32 flags)
{
	struct kprog_chan_drain d = { .peer = peer, .flags = flags };

	return ioctl(e->fd, KPROG_IOC_CHAN_DRAIN, &d) ? -errno : 0;
}

static int kick(struct kp_ep *e, __u32 rank)
{
	return ioctl(e->fd, KPROG_IOC_KICK, &rank) ? -errno : 0;
}

static int wait_ev(struct kp_ep *e, long long ns, __u32 flags, __u32 events)
{
	struct kprog_wait w = { .timeout_ns = ns, .flags = flags, .events = events };

	return ioctl(e->fd, KPROG_IOC_WAIT, &w) ? -errno : 0;
}

#define KPROG_IOC_WAIT_V1 _IOC(_IOC_WRITE, KPROG_IOC_MAGIC, 6, KPROG_WAIT_V1_SIZE)

static int wait_v1(struct kp_ep *e, long long ns)
{
	__s64 t = ns;

	return ioctl(e->fd, KPROG_IOC_WAIT_V1, &t) ? -errno : 0;
}

/* ---- the kernel log ---- */

static char *klog_all(void)
{
	int len = klogctl(10, NULL, 0), n;	/* SIZE_BUFFER */
	char *buf;

	if (len <= 0)
		return NULL;
	buf = malloc(len + 1);
	if (!buf)
		return NULL;
	n = klogctl(3, buf, len);		/* READ_ALL */
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

/* Lines of the kernel log holding @needle; -1 if the log is unreadable. */
static int klog_count(const char *needle)
{
	char *buf = klog_all(), *p;
	int n = 0;

	if (!buf)
		return -1;
	for (p = buf; (p = strstr(p, needle)); p++)
		n++;
	free(buf);
	return n;
}

/* Oopses, BUGs, WARNs and lockdep/KASAN-like reports in the kernel log. */
static int klog_oopses(void)
{
	static const char *const bad[] = {
		"Call Trace", "BUG:", "WARNING:", "general protection",
		"Oops", "UBSAN", "KASAN",
	};
	unsigned int i;
	int n = 0, c;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = klog_count(bad[i]);
		if (c > 0)
			n += c;
	}
	return n;
}

/* The kernel's "channel from->to malformed" line for job @key. */
static int malformed_logged(__u64 key, int from, int to)
{
	char needle[128];

	snprintf(needle, sizeof(needle), "job %#llx: channel %d->%d malformed",
		 (unsigned long long)key, from, to);
	return klog_count(needle);
}

/* ---- receives ---- */

static __u64 next_id = 1000;

/*
 * A kernel receive (src, tag) on @e that must get @len bytes of stream
 * @seed from @want_src with @want_tag.
 */
static void recv_check(struct __test_metadata *_metadata, struct kp_ep *e,
		       __u32 ctx, __s32 src, __s32 tag, size_t len, __u64 seed,
		       int want_src, int want_tag, const char *what)
{
	size_t cap = len + 64;
	unsigned char *buf = kp_alloc(cap);
	struct kprog_post p;
	struct kprog_cqe c;
	int ret;

	ASSERT_NE(NULL, buf);
	memset(buf, 0xEE, cap);
	ret = kp_recv(e, ++next_id, buf, cap, src, tag, ctx, 0, &p);
	ASSERT_EQ(0, ret) TH_LOG("%s: recv: %s", what, kp_strerr(ret));
	ret = kp_complete(e, &p, &c, KP_TMO_MS);
	ASSERT_EQ(0, ret) TH_LOG("%s: no completion: %s", what, kp_strerr(ret));
	EXPECT_EQ(0, c.error) TH_LOG("%s: error %d", what, c.error);
	EXPECT_EQ(len, c.bytes) TH_LOG("%s", what);
	EXPECT_EQ(want_src, c.source) TH_LOG("%s", what);
	EXPECT_EQ(want_tag, c.tag) TH_LOG("%s", what);
	EXPECT_EQ(-1, kp_check(buf, len, seed, 0))
		TH_LOG("%s: data is not message %llx", what, (unsigned long long)seed);
	EXPECT_EQ(-1, kp_check_byte(buf + len, cap - len, 0xEE))
		TH_LOG("%s: written beyond the message", what);
	kp_free(buf, cap);
}

/* Post a receive that must stay posted; cancel it; its -ECANCELED cqe. */
static void recv_nothing(struct __test_metadata *_metadata, struct kp_ep *e,
			 __s32 src, __s32 tag, const char *what)
{
	unsigned char buf[64];
	struct kprog_post p;
	struct kprog_cqe c;
	int ret;

	ret = kp_recv(e, ++next_id, buf, sizeof(buf), src, tag, CTX, 0, &p);
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", what, kp_strerr(ret));
	ASSERT_EQ(0, p.done) TH_LOG("%s: matched something (tag %d, %llu bytes)",
				    what, p.cqe.tag, (unsigned long long)p.cqe.bytes);
	ASSERT_EQ(0, kp_cancel(e, p.req_id));
	ASSERT_EQ(0, kp_wait_cqe(e, p.req_id, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
}

/* ---- parent/child plumbing ---- */

struct pipes {
	int p2c[2], c2p[2];
};

static pid_t fork_peer(struct pipes *p)
{
	pid_t pid;

	if (pipe(p->p2c) || pipe(p->c2p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p->p2c[1]);
		close(p->c2p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	} else if (pid > 0) {
		close(p->p2c[0]);
		close(p->c2p[1]);
	}
	return pid;
}

/* ======================= CHAN_OPEN and mmap ======================= */

TEST(before_join_ebadfd)
{
	struct kprog_chan_open co = { .peer = 1 };
	struct kprog_chan_drain d = { .peer = 1 };
	struct kprog_info info;
	__u32 rank = 1;
	void *m;
	int fd = kp_open();

	ASSERT_LE(0, fd) TH_LOG("open: %s", kp_strerr(fd));
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_CHAN_OPEN, &co));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_CHAN_DRAIN, &d));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_KICK, &rank));
	EXPECT_EQ(EBADFD, errno);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)KPROG_CHAN_MMAP_OFFSET(0));
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EBADFD, errno);

	/* GET_INFO works before JOIN and shows the parameters in force */
	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_GET_INFO, &info));
	EXPECT_EQ(kp_param("fast_limit"), info.fast_limit);
	EXPECT_EQ(kp_param("chan_bytes"), info.chan_bytes);
	EXPECT_EQ(kp_param("max_chans"), info.max_chans);
	if (info.fast_limit)
		EXPECT_TRUE(info.features & KPROG_FEAT_FASTPATH);
	close(fd);
}

TEST_F(job, open_einval)
{
	const __u32 bad[] = { 0 /* self */, JOB_SIZE, JOB_SIZE + 1, 0x7fffffff,
			      0xffffffff };
	struct kprog_chan_open co, before;
	__u32 gen0 = gen_of(&self->e[0]), gen1 = gen_of(&self->e[1]);
	unsigned int i;

	REQUIRE_FAST();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&co, 0xA5, sizeof(co));
		co.peer = bad[i];
		co.flags = 0;
		before = co;
		EXPECT_EQ(-1, ioctl(self->e[0].fd, KPROG_IOC_CHAN_OPEN, &co));
		EXPECT_EQ(EINVAL, errno) TH_LOG("peer %u", bad[i]);
		EXPECT_EQ(0, memcmp(&co, &before, sizeof(co))) TH_LOG("peer %u: changed", bad[i]);
	}
	memset(&co, 0, sizeof(co));
	co.peer = 1;
	co.flags = 1;
	EXPECT_EQ(-1, ioctl(self->e[0].fd, KPROG_IOC_CHAN_OPEN, &co));
	EXPECT_EQ(EINVAL, errno);
	co.flags = 0x80000000;
	EXPECT_EQ(-1, ioctl(self->e[0].fd, KPROG_IOC_CHAN_OPEN, &co));
	EXPECT_EQ(EINVAL, errno);
	/* nothing was created */
	EXPECT_EQ(0, sflags_of(&self->e[1], 0));
	EXPECT_EQ(0, sflags_of(&self->e[0], 1));
	EXPECT_EQ(gen0, gen_of(&self->e[0]));
	EXPECT_EQ(gen1, gen_of(&self->e[1]));
	EXPECT_EQ(-ENOENT, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->e[0].fd,
				(off_t)KPROG_CHAN_MMAP_OFFSET(1)) == MAP_FAILED ? -errno : 0);
}

TEST_F(job, open_enotconn)
{
	struct kprog_chan_open co;

	REQUIRE_FAST();
	/* rank 4 never joined */
	EXPECT_EQ(-ENOTCONN, ch_open(self->e[0].fd, 4, &co));
	EXPECT_EQ(0, sflags_of(&self->e[0], 4));
	/* rank 3 left (no channel with it existed) */
	kp_ep_close(&self->e[3]);
	EXPECT_EQ(-ENOTCONN, ch_open(self->e[0].fd, 3, &co));
	EXPECT_EQ(KPROG_SRC_LEFT, sflags_of(&self->e[0], 3));
	/* a good one still works */
	EXPECT_EQ(0, ch_open(self->e[0].fd, 1, &co));
}

TEST_F(job, open_values)
{
	struct kprog_chan_open a, b, a2, c, d;
	struct kprog_info info;
	__u32 want_max;

	REQUIRE_FAST();
	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, ioctl(self->e[0].fd, KPROG_IOC_GET_INFO, &info));
	ASSERT_EQ(0, ch_open(self->e[0].fd, 1, &a));
	ASSERT_EQ(0, ch_open(self->e[1].fd, 0, &b));

	EXPECT_EQ(KPROG_CHAN_MMAP_OFFSET(1), a.offset);
	EXPECT_EQ(KPROG_CHAN_MMAP_OFFSET(0), b.offset);
	EXPECT_EQ(info.chan_bytes, a.ring_bytes);
	EXPECT_EQ(0, a.ring_bytes & (a.ring_bytes - 1)) TH_LOG("ring_bytes %u", a.ring_bytes);
	EXPECT_EQ(KPROG_CHAN_DATA_OFFSET + 2 * (__u64)a.ring_bytes, a.bytes);
	EXPECT_EQ(a.bytes, b.bytes);
	EXPECT_EQ(a.ring_bytes, b.ring_bytes);
	EXPECT_EQ(a.max_msg, b.max_msg);
	want_max = a.ring_bytes / 2 - sizeof(struct kprog_chan_rec);
	if (info.fast_limit < want_max)
		want_max = info.fast_limit;
	want_max &= ~(KPROG_CHAN_REC_ALIGN - 1);
	EXPECT_EQ(want_max, a.max_msg);
	EXPECT_LE(a.max_msg, info.fast_limit);
	EXPECT_LE(2 * KPROG_CHAN_REC_SIZE(a.max_msg), a.ring_bytes);
	/* direction 0 goes from the lower rank to the higher */
	EXPECT_EQ(0, a.tx);
	EXPECT_EQ(1, b.tx);
	ASSERT_EQ(0, ch_open(self->e[3].fd, 1, &c));
	ASSERT_EQ(0, ch_open(self->e[1].fd, 3, &d));
	EXPECT_EQ(1, c.tx);
	EXPECT_EQ(0, d.tx);
	EXPECT_EQ(KPROG_CHAN_MMAP_OFFSET(1), c.offset);
	EXPECT_EQ(KPROG_CHAN_MMAP_OFFSET(3), d.offset);
	/* opening again: the same channel */
	ASSERT_EQ(0, ch_open(self->e[0].fd, 1, &a2));
	EXPECT_EQ(0, memcmp(&a, &a2, sizeof(a)));
}

TEST_F(job, one_region_both_sides)
{
	struct kp_ch c0, c1;
	struct kprog_chan_rec *r;
	uint64_t prod, size;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c1));
	ASSERT_EQ(0, ch_map(&self->e[0], 1, &c0));
	EXPECT_NE(c0.map, c1.map);
	/* fresh region: empty, open */
	EXPECT_EQ(0, ld64(&ch_hdr(&c0)->dir[0].prod));
	EXPECT_EQ(0, ld64(&ch_hdr(&c0)->dir[1].cons));
	EXPECT_EQ(0, ch_hdr(&c0)->dir[0].closed);
	EXPECT_EQ(0, ch_hdr(&c0)->dir[1].closed);

	/* 1 -> 0: written through rank 1's mapping, read through rank 0's */
	ASSERT_EQ(0, rec_send(&c1.tx, 42, 9, 333, rseed(1, 0)));
	prod = kp_dir_prod(&c0.rx);
	EXPECT_EQ(KPROG_CHAN_REC_SIZE(333), prod);
	EXPECT_EQ(1, c0.rx.h->msgs);
	EXPECT_EQ(333, c0.rx.h->bytes);
	r = kp_dir_rec(&c0.rx, 0, prod, &size);
	ASSERT_EQ(KPROG_CHAN_REC_SIZE(333), size);
	EXPECT_EQ(KPROG_REC_NEW, kp_rec_state(r));
	EXPECT_EQ(0, r->flags);
	EXPECT_EQ(333, r->len);
	EXPECT_EQ(42, r->context);
	EXPECT_EQ(9, r->tag);
	EXPECT_EQ(-1, kp_check(kp_rec_payload(r), 333, rseed(1, 0), 0));
	ASSERT_TRUE(kp_rec_take(r));
	EXPECT_EQ(KPROG_REC_TAKEN, kp_rec_state(rec_at(&c1.tx, 0)));
	EXPECT_FALSE(kp_rec_take(r));
	kp_rec_done(r);
	EXPECT_EQ(prod, kp_dir_release(&c0.rx));
	EXPECT_EQ(prod, ld64(&c1.tx.h->cons));

	/* 0 -> 1 */
	ASSERT_EQ(0, rec_send(&c0.tx, 1, 2, 0, 0));
	EXPECT_EQ(KPROG_CHAN_REC_SIZE(0), kp_dir_prod(&c1.rx));
	r = kp_dir_rec(&c1.rx, 0, kp_dir_prod(&c1.rx), &size);
	ASSERT_NE(0, size);
	EXPECT_EQ(0, r->len);
	EXPECT_EQ(2, r->tag);
	/* the receiver's flags are shared too */
	__atomic_store_n(&c0.rx.h->waiting, 1, __ATOMIC_RELEASE);
	EXPECT_EQ(1, ld32(&c1.tx.h->waiting));
	ch_unmap(&c0);
	ch_unmap(&c1);
}

TEST_F(job, mmap_errors)
{
	long page = sysconf(_SC_PAGESIZE);
	struct kprog_chan_open co;
	int fd = self->e[0].fd;
	void *m, *m2;

#define MMAP_ERR(len, flags, off) \
	((m = mmap(NULL, (len), PROT_READ | PROT_WRITE, (flags), fd, (off_t)(off))) == \
	 MAP_FAILED ? -errno : (munmap(m, (len)), 0))

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_open(fd, 1, &co));
	/* the region itself maps */
	EXPECT_EQ(0, MMAP_ERR(co.bytes, MAP_SHARED, co.offset));
	/* a part of it too */
	EXPECT_EQ(0, MMAP_ERR(page, MAP_SHARED, co.offset));
	/* inside a channel's window, not at its start */
	EXPECT_EQ(-EINVAL, MMAP_ERR(page, MAP_SHARED, co.offset + page));
	EXPECT_EQ(-EINVAL, MMAP_ERR(page, MAP_SHARED, co.offset + KPROG_CHAN_DATA_OFFSET));
	/* longer than the region */
	EXPECT_EQ(-EINVAL, MMAP_ERR(co.bytes + page, MAP_SHARED, co.offset));
	/* private */
	EXPECT_EQ(-EINVAL, MMAP_ERR(co.bytes, MAP_PRIVATE, co.offset));
	/* a rank beyond the job */
	EXPECT_EQ(-EINVAL, MMAP_ERR(page, MAP_SHARED, KPROG_CHAN_MMAP_OFFSET(JOB_SIZE)));
	EXPECT_EQ(-EINVAL, MMAP_ERR(page, MAP_SHARED, KPROG_CHAN_MMAP_OFFSET(100)));
	/* no channel with that peer (another rank, rank 4 not joined, self) */
	EXPECT_EQ(-ENOENT, MMAP_ERR(page, MAP_SHARED, KPROG_CHAN_MMAP_OFFSET(2)));
	EXPECT_EQ(-ENOENT, MMAP_ERR(page, MAP_SHARED, KPROG_CHAN_MMAP_OFFSET(4)));
	EXPECT_EQ(-ENOENT, MMAP_ERR(page, MAP_SHARED, KPROG_CHAN_MMAP_OFFSET(0)));
	/* the other side has it now too */
	fd = self->e[1].fd;
	EXPECT_EQ(0, MMAP_ERR(co.bytes, MAP_SHARED, KPROG_CHAN_MMAP_OFFSET(0)));
	/* a mapping cannot grow */
	m = mmap(NULL, co.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)KPROG_CHAN_MMAP_OFFSET(0));
	ASSERT_NE(MAP_FAILED, m);
	m2 = mremap(m, co.bytes, co.bytes + page, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, m2);
	if (m2 != MAP_FAILED)
		m = m2;
	else
		munmap(m, co.bytes);
#undef MMAP_ERR
}

TEST_F_TIMEOUT(solo, max_chans_enospc, 600)
{
	long long mc = kp_param("max_chans"), mjs = kp_param("max_job_size");
	long long size = KPROG_CHAN_DATA_OFFSET + 2 * kp_param("chan_bytes");
	long long shares = kp_param("chan_shares"), share;
	struct kprog_chan_open co;
	struct rlimit rl;
	struct kp_ep *e;
	__u64 key = kp_key();
	int n, r, ret;

	REQUIRE_FAST();
	ASSERT_LE(0, mc);
	ASSERT_LT(0, size);
	ASSERT_LT(0, shares);
	share = (kp_param("chan_mem_mib") << 20) / shares;
	/* an endpoint holds max_chans, or its share of the node if fewer (chan.c) */
	if (share / size < mc)
		mc = share / size > 1 ? share / size : 1;
	if (mc > 1024 || mc + 2 > mjs)
		SKIP(return, "max_chans=%lld: too many endpoints for this test (load with max_chans=2..1024)",
		     mc);
	n = (int)mc + 2;
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	e = calloc(n, sizeof(*e));
	ASSERT_NE(NULL, e);
	ret = kp_job_open(e, n, n, key, 0, 0);
	ASSERT_EQ(0, ret) TH_LOG("%d endpoints: %s", n, kp_strerr(ret));
	for (r = 1; r <= mc; r++) {
		ret = ch_open(e[0].fd, r, &co);
		if (ret) {
			EXPECT_EQ(0, ret) TH_LOG("channel 0-%d: %s", r, kp_strerr(ret));
			break;
		}
	}
	/* rank 0 is full: it can open no more, and nobody can open one with it */
	EXPECT_EQ(-ENOSPC, ch_open(e[0].fd, n - 1, &co));
	EXPECT_EQ(-ENOSPC, ch_open(e[n - 1].fd, 0, &co));
	EXPECT_EQ(0, sflags_of(&e[n - 1], 0) & KPROG_SRC_CHAN);
	EXPECT_EQ(0, sflags_of(&e[0], n - 1) & KPROG_SRC_CHAN);
	/* its existing channels still open; other pairs are unaffected */
	EXPECT_EQ(0, ch_open(e[0].fd, 1, &co));
	EXPECT_EQ(0, ch_open(e[n - 1].fd, 1, &co));
	kp_job_close(e, n);
	free(e);
}

/* ================ what the kernel publishes for user space ================ */

TEST_F(job, publish_on_open)
{
	struct kp_ep *a = &self->e[0], *b = &self->e[1], *o = &self->e[2];
	__u32 ga = gen_of(a), gb = gen_of(b), go = gen_of(o);
	__u32 ea = events_of(a), eb = events_of(b), eo = events_of(o);
	struct kprog_chan_open co;

	REQUIRE_FAST();
	ASSERT_LE(a->hdr->src_offset + (__u64)JOB_SIZE * sizeof(struct kprog_src),
		  a->j.ring_bytes);
	EXPECT_EQ(JOB_SIZE, a->hdr->nr_src);
	EXPECT_EQ(0, a->hdr->src_offset % 8);
	EXPECT_EQ(0, sflags_of(a, 1));
	EXPECT_EQ(0, sflags_of(b, 0));

	ASSERT_EQ(0, ch_open(b->fd, 0, &co));	/* rank 1 opens */
	EXPECT_EQ(KPROG_SRC_CHAN, sflags_of(a, 1));
	EXPECT_EQ(KPROG_SRC_CHAN, sflags_of(b, 0));
	EXPECT_EQ(ga + 1, gen_of(a));
	EXPECT_EQ(gb + 1, gen_of(b));
	EXPECT_NE(ea, events_of(a));
	EXPECT_NE(eb, events_of(b));
	/* a bystander sees nothing */
	EXPECT_EQ(go, gen_of(o));
	EXPECT_EQ(eo, events_of(o));
	EXPECT_EQ(0, sflags_of(o, 0));
	EXPECT_EQ(0, sflags_of(o, 1));
	/* opening it again (either side) is not a new channel */
	ga = gen_of(a);
	ASSERT_EQ(0, ch_open(a->fd, 1, &co));
	ASSERT_EQ(0, ch_open(b->fd, 0, &co));
	EXPECT_EQ(ga, gen_of(a));
	/* nothing held */
	EXPECT_EQ(0, held_of(a, 1));
	EXPECT_EQ(0, unexp_of(a));
}

TEST_F(job, held_and_unexp)
{
	struct kp_ep *r = &self->e[0], *s1 = &self->e[1], *s2 = &self->e[2], *s3 = &self->e[3];
	size_t big = kp_rndv_size(s1, 65536);
	unsigned char *sb = kp_alloc(big), *rb = kp_alloc(big);
	struct kprog_post p, rv, sp;
	struct kprog_probe pr;
	struct kprog_cqe c;
	struct kp_ch ch;
	__u32 ev;
	int i;

	REQUIRE_FAST();
	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	kp_fill(sb, big, 77, 0);
	EXPECT_EQ(0, held_of(r, 1));
	EXPECT_EQ(0, unexp_of(r));

	ev = events_of(r);
	ASSERT_EQ(0, kp_send(s1, 1, sb, 100, 0, 1, CTX, 0, &p));	/* eager */
	EXPECT_EQ(1, p.done);
	EXPECT_EQ(1, held_of(r, 1));
	EXPECT_EQ(1, unexp_of(r));
	EXPECT_NE(ev, events_of(r));
	ev = events_of(r);
	ASSERT_EQ(0, kp_send(s1, 2, sb, big, 0, 2, CTX, 0, &sp));	/* rendezvous */
	EXPECT_EQ(0, sp.done);
	EXPECT_EQ(2, held_of(r, 1));
	EXPECT_EQ(2, unexp_of(r));
	EXPECT_NE(ev, events_of(r));
	ASSERT_EQ(0, kp_send(s2, 3, sb, 10, 0, 1, CTX, 0, &p));
	EXPECT_EQ(1, held_of(r, 2));
	EXPECT_EQ(3, unexp_of(r));

	/* records drained into the kernel count as held */
	ASSERT_EQ(0, ch_map(s1, 0, &ch));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, rec_send(&ch.tx, CTX, 3, 10 * i, rseed(1, i)));
	EXPECT_EQ(2, held_of(r, 1));	/* not before they are drained */
	ASSERT_EQ(0, drain(r, 1, 0));
	EXPECT_EQ(5, held_of(r, 1));
	EXPECT_EQ(6, unexp_of(r));

	/* receives take them out */
	ASSERT_EQ(0, kp_recv(r, 10, rb, big, 1, 1, CTX, 0, &rv));
	EXPECT_EQ(1, rv.done);
	EXPECT_EQ(4, held_of(r, 1));
	EXPECT_EQ(5, unexp_of(r));
	/* a dequeuing probe too */
	ASSERT_EQ(0, kp_probe(r, CTX, 1, 2, KPROG_PROBE_DEQUEUE, 555, &pr));
	ASSERT_EQ(1, pr.found);
	EXPECT_EQ(3, held_of(r, 1));
	EXPECT_EQ(4, unexp_of(r));
	ASSERT_EQ(0, kp_recv_msg(r, 11, rb, big, 555, &rv));
	ASSERT_EQ(0, kp_complete(r, &rv, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(big, c.bytes);
	ASSERT_EQ(0, kp_complete(s1, &sp, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	ASSERT_EQ(0, kp_recv(r, 12, rb, big, 2, KPROG_ANY_TAG, CTX, 0, &rv));
	EXPECT_EQ(1, rv.done);
	EXPECT_EQ(0, held_of(r, 2));
	EXPECT_EQ(3, unexp_of(r));

	/* a cancelled rendezvous send leaves the queue */
	ASSERT_EQ(0, kp_send(s1, 20, sb, big, 0, 4, CTX, 0, &sp));
	EXPECT_EQ(4, held_of(r, 1));
	ASSERT_EQ(0, kp_cancel(s1, 20));
	EXPECT_EQ(3, held_of(r, 1));
	EXPECT_EQ(3, unexp_of(r));

	/* a message that finds its receive posted is never held */
	ASSERT_EQ(0, kp_recv(r, 30, rb, big, 3, 5, CTX, 0, &rv));
	EXPECT_EQ(0, rv.done);
	ASSERT_EQ(0, kp_send(s3, 31, sb, 10, 0, 5, CTX, 0, &p));
	ASSERT_EQ(0, kp_wait_cqe(r, 30, &c, KP_TMO_MS));
	EXPECT_EQ(0, held_of(r, 3));

	for (i = 0; i < 3; i++)
		recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, 10 * i, rseed(1, i), 1, 3,
			   "drained record");
	EXPECT_EQ(0, held_of(r, 1));
	EXPECT_EQ(0, unexp_of(r));
	ch_unmap(&ch);
	kp_free(sb, big);
	kp_free(rb, big);
}

TEST_F(job, peer_close_left_and_closed)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	size_t big = kp_rndv_size(s, 65536);
	unsigned char *sb = kp_alloc(big);
	struct kp_ch c0, c1;
	struct kprog_post p, rv;
	unsigned char buf[64];
	__u32 gen, ev;

	REQUIRE_FAST();
	ASSERT_NE(NULL, sb);
	ASSERT_EQ(0, ch_map(s, 0, &c1));
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	ASSERT_EQ(0, kp_send(s, 1, sb, big, 0, 8, CTX, 0, &p));	/* rendezvous, unmatched */
	EXPECT_EQ(0, p.done);
	EXPECT_EQ(1, held_of(r, 1));
	/* records after it stay in the channel */
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 7, 50, rseed(1, 0)));
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 7, 60, rseed(1, 1)));
	gen = gen_of(r);
	ev = events_of(r);
	EXPECT_EQ(0, ch_hdr(&c0)->dir[0].closed);
	EXPECT_EQ(0, ch_hdr(&c0)->dir[1].closed);

	/* the mapping holds the file: unmap before close so that it leaves */
	ch_unmap(&c1);
	kp_ep_close(s);
	EXPECT_EQ(KPROG_SRC_CHAN | KPROG_SRC_LEFT, sflags_of(r, 1));
	EXPECT_NE(gen, gen_of(r));
	EXPECT_NE(ev, events_of(r));
	EXPECT_EQ(1, ld32(&ch_hdr(&c0)->dir[0].closed));
	EXPECT_EQ(1, ld32(&ch_hdr(&c0)->dir[1].closed));
	/*
	 * Its unmatched rendezvous send is gone (its pages with it); the two
	 * records it wrote were handed to the kernel at departure.
	 */
	EXPECT_EQ(2, held_of(r, 1)) TH_LOG("held: the two records, not the rendezvous send");

	/* what it wrote before it left is still receivable, in order */
	recv_check(_metadata, r, CTX, 1, 7, 50, rseed(1, 0), 1, 7, "record 0 after close");
	recv_check(_metadata, r, CTX, 1, 7, 60, rseed(1, 1), 1, 7, "record 1 after close");
	EXPECT_EQ(0, held_of(r, 1));
	/* then a receive naming it fails at once */
	ASSERT_EQ(0, kp_recv(r, 5, buf, sizeof(buf), 1, 7, CTX, 0, &rv));
	EXPECT_EQ(1, rv.done);
	EXPECT_EQ(-ECONNRESET, rv.cqe.error);
	/* the channel still opens and maps on the side that stayed */
	ch_unmap(&c0);
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	EXPECT_EQ(1, ld32(&ch_hdr(&c0)->dir[1].closed));
	ch_unmap(&c0);
	/* a rank without a channel: LEFT only */
	kp_ep_close(&self->e[2]);
	EXPECT_EQ(KPROG_SRC_LEFT, sflags_of(r, 2));
	kp_free(sb, big);
}

/* Closing the fd while the channel is mapped: the endpoint leaves at munmap. */
TEST_F(job, departure_at_last_unmap)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	struct kp_ch c1;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(s, 0, &c1));
	munmap(s->map, s->j.ring_bytes);
	s->map = NULL;
	close(s->fd);
	s->fd = -1;
	usleep(20000);
	EXPECT_EQ(0, sflags_of(r, 1) & KPROG_SRC_LEFT);
	/* the mapping is still usable and the kernel still drains it */
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 3, 20, rseed(1, 3)));
	recv_check(_metadata, r, CTX, 1, 3, 20, rseed(1, 3), 1, 3, "record after close(fd)");
	ch_unmap(&c1);
	EXPECT_EQ(KPROG_SRC_CHAN | KPROG_SRC_LEFT, sflags_of(r, 1));
	kp_ep_reset(s);
}

/* ============================== order ============================== */

enum { K_REC, K_EAGER, K_RNDV, K_SYNC };

/*
 * One sender mixes channel records with sends through the kernel (eager,
 * rendezvous, synchronous) on one tag; the receiver's kernel receives,
 * posted before (@recv_first) or after, get them in the order written.
 */
static void order_mix(struct __test_metadata *_metadata, struct kp_ep *r, struct kp_ep *s,
		      int recv_first)
{
	static const int kind[] = { K_REC, K_REC, K_REC, K_EAGER, K_RNDV, K_REC, K_SYNC,
				    K_REC, K_EAGER, K_REC, K_RNDV, K_RNDV, K_REC, K_REC,
				    K_SYNC, K_EAGER, K_REC };
	enum { N = sizeof(kind) / sizeof(kind[0]), TAG = 4 };
	size_t rndv = kp_rndv_size(s, 65536), cap = rndv + N * 4096;
	struct kprog_post rp[N], sp[N];
	unsigned char *sb[N], *rb[N];
	struct kprog_cqe c;
	size_t len[N];
	struct kp_ch ch;
	int i, ret;

	ASSERT_EQ(0, ch_map(s, r->rank, &ch));
	for (i = 0; i < N; i++) {
		switch (kind[i]) {
		case K_REC:
			len[i] = (i * 397) % (ch.co.max_msg + 1);
			break;
		case K_EAGER:
			len[i] = 100 + i;
			break;
		case K_RNDV:
			len[i] = rndv + i * 4096;
			break;
		default:
			len[i] = 10 + i;
		}
		sb[i] = kp_alloc(len[i]);
		rb[i] = kp_alloc(cap);
		ASSERT_NE(NULL, sb[i]);
		ASSERT_NE(NULL, rb[i]);
		kp_fill(sb[i], len[i], rseed(s->rank, i), 0);
		sp[i].done = 1;
	}
	if (recv_first) {
		for (i = 0; i < N; i++) {
			ASSERT_EQ(0, kp_recv(r, 100 + i, rb[i], cap, s->rank, TAG, CTX, 0, &rp[i]));
			ASSERT_EQ(0, rp[i].done);
		}
	}
	for (i = 0; i < N; i++) {
		if (kind[i] == K_REC) {
			ASSERT_EQ(0, rec_send(&ch.tx, CTX, TAG, len[i], rseed(s->rank, i)));
			continue;
		}
		ret = kp_send(s, 200 + i, sb[i], len[i], r->rank, TAG, CTX,
			      kind[i] == K_SYNC ? KPROG_SEND_SYNC : 0, &sp[i]);
		ASSERT_EQ(0, ret) TH_LOG("send %d: %s", i, kp_strerr(ret));
	}
	if (recv_first) {
		/* the last records were written after the last kernel send */
		ASSERT_EQ(0, drain(r, s->rank, 0));
	} else {
		for (i = 0; i < N; i++)
			ASSERT_EQ(0, kp_recv(r, 100 + i, rb[i], cap, s->rank, TAG, CTX, 0, &rp[i]));
	}
	for (i = 0; i < N; i++) {
		ret = kp_complete(r, &rp[i], &c, KP_TMO_MS);
		ASSERT_EQ(0, ret) TH_LOG("receive %d: %s", i, kp_strerr(ret));
		EXPECT_EQ(0, c.error) TH_LOG("receive %d", i);
		EXPECT_EQ(len[i], c.bytes) TH_LOG("receive %d (kind %d) got %llu bytes", i,
						  kind[i], (unsigned long long)c.bytes);
		EXPECT_EQ(-1, kp_check(rb[i], len[i], rseed(s->rank, i), 0))
			TH_LOG("receive %d (kind %d): not message %d", i, kind[i], i);
	}
	for (i = 0; i < N; i++) {
		if (kind[i] != K_REC) {
			ret = kp_complete(s, &sp[i], &c, KP_TMO_MS);
			EXPECT_EQ(0, ret) TH_LOG("send %d: %s", i, kp_strerr(ret));
			EXPECT_EQ(0, c.error);
		}
		kp_free(sb[i], len[i]);
		kp_free(rb[i], cap);
	}
	/* every record was released */
	EXPECT_EQ(kp_dir_prod(&ch.tx), ld64(&ch.tx.h->cons));
	EXPECT_EQ(0, held_of(r, s->rank));
	ch_unmap(&ch);
}

TEST_F(job, order_records_and_kernel_sends_recv_late)
{
	REQUIRE_FAST();
	order_mix(_metadata, &self->e[0], &self->e[1], 0);
	/* the higher rank receiving: the other direction of a channel */
	order_mix(_metadata, &self->e[3], &self->e[2], 0);
}

TEST_F(job, order_records_and_kernel_sends_recv_first)
{
	REQUIRE_FAST();
	order_mix(_metadata, &self->e[0], &self->e[1], 1);
	order_mix(_metadata, &self->e[3], &self->e[2], 1);
}

/* Five records on tags 1..5: drained in record order, DONE, released. */
TEST_F(job, drain_in_record_order)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	struct kp_ch c0, c1;
	struct kprog_probe pr;
	__u32 lens[5];
	uint64_t pos, prod, size;
	int i;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(s, 0, &c1));
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	lens[0] = 0;
	lens[1] = 1;
	lens[2] = 63;
	lens[3] = 1000;
	lens[4] = c1.co.max_msg;
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, rec_send(&c1.tx, CTX, i + 1, lens[i], rseed(1, i)));
	prod = kp_dir_prod(&c0.rx);
	EXPECT_EQ(0, ld64(&c0.rx.h->cons));
	EXPECT_EQ(0, unexp_of(r));

	ASSERT_EQ(0, drain(r, 1, 0));
	EXPECT_EQ(5, held_of(r, 1));
	EXPECT_EQ(5, unexp_of(r));
	for (pos = 0, i = 0; pos != prod && i < 5; pos += size, i++) {
		struct kprog_chan_rec *rec = kp_dir_rec(&c0.rx, pos, prod, &size);

		ASSERT_NE(0, size);
		EXPECT_EQ(KPROG_REC_DONE, kp_rec_state(rec)) TH_LOG("record %d", i);
	}
	EXPECT_EQ(prod, ld64(&c0.rx.h->cons));
	EXPECT_EQ(prod, ld64(&c1.tx.h->cons));

	/* the first one is what a probe sees */
	ASSERT_EQ(0, kp_probe(r, CTX, 1, KPROG_ANY_TAG, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(1, pr.out_tag);
	EXPECT_EQ(1, pr.out_source);
	EXPECT_EQ(0, pr.bytes);
	for (i = 0; i < 5; i++)
		recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, lens[i], rseed(1, i), 1, i + 1,
			   "drained record");
	/* nothing more; draining an empty channel changes nothing */
	ASSERT_EQ(0, drain(r, 1, 0));
	ASSERT_EQ(0, drain(r, KPROG_ANY_SOURCE, 0));
	EXPECT_EQ(0, unexp_of(r));
	recv_nothing(_metadata, r, 1, KPROG_ANY_TAG, "after the records");

	/* CHAN_DRAIN's own errors */
	EXPECT_EQ(-EINVAL, drain(r, 1, ~KPROG_DRAIN_TO));
	EXPECT_EQ(-EINVAL, drain(r, KPROG_ANY_SOURCE, KPROG_DRAIN_TO));
	EXPECT_EQ(-EINVAL, drain(r, JOB_SIZE, 0));
	EXPECT_EQ(-EINVAL, drain(r, -2, 0));
	EXPECT_EQ(-EINVAL, drain(r, 0x7fffffff, 0));
	EXPECT_EQ(0, drain(r, 4, 0));	/* no channel: nothing to do */
	EXPECT_EQ(0, drain(r, 0, 0));	/* self */
	ch_unmap(&c0);
	ch_unmap(&c1);
}

/* RECV, PROBE and ANY_SOURCE receives drain the channels they could match. */
TEST_F(job, recv_and_probe_drain)
{
	struct kp_ep *r = &self->e[0];
	struct kp_ch c1, c2, c3;
	struct kprog_probe pr;
	int i;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c1));
	ASSERT_EQ(0, ch_map(&self->e[2], 0, &c2));
	ASSERT_EQ(0, ch_map(&self->e[3], 0, &c3));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, rec_send(&c1.tx, CTX, i + 1, 10 + i, rseed(1, i)));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, rec_send(&c2.tx, CTX, i + 1, 20 + i, rseed(2, i)));

	/* a receive for tag 3 of rank 1: drains rank 1's channel only */
	recv_check(_metadata, r, CTX, 1, 3, 12, rseed(1, 2), 1, 3, "recv tag 3");
	EXPECT_EQ(3, held_of(r, 1));
	EXPECT_EQ(0, held_of(r, 2));
	EXPECT_EQ(KPROG_REC_NEW, kp_rec_state(rec_at(&c2.tx, 0)));

	/* a probe of rank 2 drains rank 2's channel */
	ASSERT_EQ(0, kp_probe(r, CTX, 2, 2, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(2, pr.out_tag);
	EXPECT_EQ(21, pr.bytes);
	EXPECT_EQ(2, held_of(r, 2));

	/* an ANY_SOURCE receive drains every channel */
	ASSERT_EQ(0, rec_send(&c3.tx, CTX, 9, 30, rseed(3, 0)));
	recv_check(_metadata, r, CTX, KPROG_ANY_SOURCE, 9, 30, rseed(3, 0), 3, 9, "any source");

	/* and an ANY_SOURCE probe (blocking: finds at once) */
	ASSERT_EQ(0, rec_send(&c3.tx, CTX, 10, 31, rseed(3, 1)));
	ASSERT_EQ(0, kp_probe(r, CTX, KPROG_ANY_SOURCE, 10, KPROG_PROBE_BLOCK, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(3, pr.out_source);
	recv_check(_metadata, r, CTX, 3, 10, 31, rseed(3, 1), 3, 10, "after probe");

	/* per sender, the rest in record order */
	recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, 10, rseed(1, 0), 1, 1, "rank 1 #0");
	recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, 11, rseed(1, 1), 1, 2, "rank 1 #1");
	recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, 13, rseed(1, 3), 1, 4, "rank 1 #3");
	recv_check(_metadata, r, CTX, 2, KPROG_ANY_TAG, 20, rseed(2, 0), 2, 1, "rank 2 #0");
	recv_check(_metadata, r, CTX, 2, KPROG_ANY_TAG, 21, rseed(2, 1), 2, 2, "rank 2 #1");
	EXPECT_EQ(0, unexp_of(r));
	ch_unmap(&c1);
	ch_unmap(&c2);
	ch_unmap(&c3);
}

/* A send through the kernel drains the sender's channel to that receiver only. */
TEST_F(job, send_drains_only_its_channel)
{
	struct kp_ep *s = &self->e[1];
	unsigned char b[16] = { 0 };
	struct kprog_post p;
	struct kp_ch c0, c2;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(s, 0, &c0));
	ASSERT_EQ(0, ch_map(s, 2, &c2));
	ASSERT_EQ(0, rec_send(&c0.tx, CTX, 1, 5, 0));
	ASSERT_EQ(0, rec_send(&c2.tx, CTX, 1, 5, 0));
	ASSERT_EQ(0, kp_send(s, 1, b, sizeof(b), 2, 1, CTX, 0, &p));
	EXPECT_EQ(2, held_of(&self->e[2], 1));
	EXPECT_EQ(0, held_of(&self->e[0], 1));
	EXPECT_EQ(KPROG_REC_NEW, kp_rec_state(rec_at(&c0.tx, 0)));
	ASSERT_EQ(0, kp_send(s, 2, b, sizeof(b), 0, 1, CTX, 0, &p));
	EXPECT_EQ(2, held_of(&self->e[0], 1));
	EXPECT_EQ(KPROG_REC_DONE, kp_rec_state(rec_at(&c0.tx, 0)));
	ch_unmap(&c0);
	ch_unmap(&c2);
}

/* A record taken by the receiving process is skipped by the kernel's drain. */
TEST_F(job, taken_record_skipped)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	struct kprog_chan_rec *r1, *r2, *r3;
	uint64_t prod, s1, s2, s3;
	struct kp_ch c0, c1;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(s, 0, &c1));
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 1, 100, rseed(1, 1)));
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 2, 200, rseed(1, 2)));
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 3, 300, rseed(1, 3)));
	prod = kp_dir_prod(&c0.rx);
	r1 = kp_dir_rec(&c0.rx, 0, prod, &s1);
	ASSERT_NE(0, s1);
	r2 = kp_dir_rec(&c0.rx, s1, prod, &s2);
	ASSERT_NE(0, s2);
	r3 = kp_dir_rec(&c0.rx, s1 + s2, prod, &s3);
	ASSERT_NE(0, s3);
	ASSERT_EQ(prod, s1 + s2 + s3);

	ASSERT_TRUE(kp_rec_take(r2));		/* "user space" takes #2 */
	ASSERT_EQ(0, drain(r, 1, 0));
	EXPECT_EQ(2, held_of(r, 1));
	EXPECT_EQ(KPROG_REC_DONE, kp_rec_state(r1));
	EXPECT_EQ(KPROG_REC_TAKEN, kp_rec_state(r2));
	EXPECT_EQ(KPROG_REC_DONE, kp_rec_state(r3));
	EXPECT_EQ(s1, ld64(&c0.rx.h->cons)) TH_LOG("cons passed a TAKEN record");
	EXPECT_FALSE(kp_rec_take(r3));		/* the kernel has it */

	recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, 100, rseed(1, 1), 1, 1, "#1");
	recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, 300, rseed(1, 3), 1, 3, "#3");
	EXPECT_EQ(-1, kp_check(kp_rec_payload(r2), 200, rseed(1, 2), 0));
	kp_rec_done(r2);
	EXPECT_EQ(prod, kp_dir_release(&c0.rx));
	EXPECT_EQ(prod, ld64(&c1.tx.h->cons));
	ch_unmap(&c0);
	ch_unmap(&c1);
}

/* Records carry their context; zero-byte records work. */
TEST_F(job, record_context_and_zero_bytes)
{
	struct kp_ep *r = &self->e[0];
	struct kp_ch c;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c));
	ASSERT_EQ(0, rec_send(&c.tx, 7, 1, 0, 0));
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, 10, rseed(1, 1)));
	recv_check(_metadata, r, CTX, 1, 1, 10, rseed(1, 1), 1, 1, "context 0");
	recv_check(_metadata, r, 7, 1, 1, 0, 0, 1, 1, "context 7, zero bytes");
	ch_unmap(&c);
}

/* The largest record works; a longer len is malformed. */
TEST_F(job, max_msg_record)
{
	struct kp_ep *r = &self->e[0];
	uint64_t prod, size;
	struct kp_ch c;
	__u32 max;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c));
	max = c.co.max_msg;
	ASSERT_LT(0, max);
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, max, rseed(1, 0)));
	recv_check(_metadata, r, CTX, 1, 1, max, rseed(1, 0), 1, 1, "max_msg bytes");
	/* twice in a row fits the ring (with a wrap after enough of them) */
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, max, rseed(1, 1)));
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, max, rseed(1, 2)));
	recv_check(_metadata, r, CTX, 1, 1, max, rseed(1, 1), 1, 1, "max_msg #1");
	recv_check(_metadata, r, CTX, 1, 1, max, rseed(1, 2), 1, 1, "max_msg #2");
	/* the helper refuses more */
	EXPECT_EQ(NULL, kp_dir_reserve(&c.tx, max + 1, CTX, 1));

	/* one byte more, written by hand: the kernel must not take it */
	prod = c.tx.h->prod;
	size = KPROG_CHAN_REC_SIZE(max + 1);
	if ((prod & c.tx.mask) + size > (__u64)c.tx.mask + 1) {
		/* start it at the ring's start, like the producer would */
		__u64 pad = (__u64)c.tx.mask + 1 - (prod & c.tx.mask);

		rec_raw(&c.tx, prod, KPROG_REC_DONE, KPROG_REC_PAD, 0, 0, 0);
		prod += pad;
	}
	rec_raw(&c.tx, prod, KPROG_REC_NEW, 0, max + 1, CTX, 1);
	st64(&c.tx.h->prod, prod + size);
	ASSERT_EQ(0, drain(r, 1, 0));
	EXPECT_EQ(0, held_of(r, 1));
	EXPECT_EQ(KPROG_REC_NEW, kp_rec_state(rec_at(&c.tx, prod)));
	recv_nothing(_metadata, r, 1, 1, "oversized record");
	ch_unmap(&c);
}

/*
 * The receiving process takes the oldest NEW record of @rx if the ABI's
 * rule allows it (the kernel holds nothing of @src and no older record is
 * KTAKEN, both read after the record). Returns 1 (taken, *rec set, state
 * TAKEN), 0 (no NEW record), -1 (ask the kernel), -2 (malformed).
 */
static int user_take(struct kp_ep *r, int src, struct kp_dir *rx, struct kprog_chan_rec **out)
{
	/*
	 * cons before prod: read the other way round, a drain by the kernel
	 * in between can move cons past the prod read, and the walk below
	 * would never meet it (it hung this test in 32-bit runs).
	 */
	uint64_t cons = ld64(&rx->h->cons), prod = kp_dir_prod(rx), pos, size;
	int ktaken = 0;

	if (prod - cons > (uint64_t)rx->mask + 1)
		return -2;
	for (pos = cons; pos != prod; pos += size) {
		struct kprog_chan_rec *rec = kp_dir_rec(rx, pos, prod, &size);
		__u32 st;

		if (!size)
			return -2;
		if (rec->flags & KPROG_REC_PAD)
			continue;
		st = kp_rec_state(rec);
		if (st == KPROG_REC_KTAKEN) {
			ktaken = 1;
			continue;
		}
		if (st != KPROG_REC_NEW)
			continue;
		if (ktaken || held_of(r, src))
			return -1;
		if (!kp_rec_take(rec))
			return -1;	/* the kernel took it first */
		*out = rec;
		return 1;
	}
	return ktaken || held_of(r, src) ? -1 : 0;
}

/* Records through more than three laps of the ring, pads included. */
TEST_F(job, wrap_around_with_pads)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	struct kprog_chan_rec *rec;
	int sent = 0, got = 0, pads = 0, k, i;
	__u64 bytes = 0;
	struct kp_ch c0, c1;
	__u32 max;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(s, 0, &c1));
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	max = c1.co.max_msg;
	while (bytes < 4ull * c1.co.ring_bytes || got < sent) {
		__u32 len = (__u32)((sent * 1237u) % (max + 1));

		if (bytes < 4ull * c1.co.ring_bytes &&
		    !rec_send(&c1.tx, CTX, sent % 7, len, rseed(1, sent))) {
			bytes += KPROG_CHAN_REC_SIZE(len);
			sent++;
			continue;
		}
		/* full (or done writing): count the pads, then consume */
		{
			uint64_t pos = ld64(&c0.rx.h->cons), prod = kp_dir_prod(&c0.rx), size;

			for (; pos != prod; pos += size) {
				rec = kp_dir_rec(&c0.rx, pos, prod, &size);
				ASSERT_NE(0, size) TH_LOG("malformed at %llu", (unsigned long long)pos);
				pads += !!(rec->flags & KPROG_REC_PAD);
			}
		}
		/* a few taken here, the rest drained into the kernel */
		for (k = 0; k < 3 && got < sent; k++) {
			__u32 want = (__u32)((got * 1237u) % (max + 1));

			ASSERT_EQ(1, user_take(r, 1, &c0.rx, &rec)) TH_LOG("message %d", got);
			EXPECT_EQ(want, rec->len) TH_LOG("message %d", got);
			EXPECT_EQ(got % 7, rec->tag) TH_LOG("message %d", got);
			EXPECT_EQ(-1, kp_check(kp_rec_payload(rec), rec->len, rseed(1, got), 0))
				TH_LOG("message %d", got);
			kp_rec_done(rec);
			kp_dir_release(&c0.rx);
			got++;
		}
		if (got < sent && (sent & 1)) {
			ASSERT_EQ(0, drain(r, 1, 0));
			EXPECT_EQ(sent - got, (int)held_of(r, 1));
			for (i = got; i < sent; i++) {
				__u32 want = (__u32)((i * 1237u) % (max + 1));

				recv_check(_metadata, r, CTX, 1, KPROG_ANY_TAG, want, rseed(1, i), 1,
					   i % 7, "drained after a wrap");
			}
			got = sent;
		}
	}
	EXPECT_EQ(sent, got);
	EXPECT_LT(0, pads) TH_LOG("no pad record was ever written");
	EXPECT_LE(3ull * c1.co.ring_bytes, kp_dir_prod(&c1.tx));
	EXPECT_EQ(kp_dir_prod(&c1.tx), ld64(&c1.tx.h->cons));
	EXPECT_EQ(0, held_of(r, 1));
	ch_unmap(&c0);
	ch_unmap(&c1);
}

/*
 * Order under concurrency: a sender thread mixes records with sends
 * through the kernel (eager and rendezvous, which drain the channel); the
 * receiving thread takes records itself whenever the ABI's rule allows
 * and asks the kernel otherwise. Every message must come exactly once,
 * in order: this checks that the kernel publishes held and KTAKEN before
 * a record could be taken past an older message.
 */
struct cc_sender {
	struct kp_ep *e;
	struct kp_dir *d;
	int n, ret, kernel, rndv;
	int stop;	/* set by the receiver: stop sending */
	int sent;	/* set by the sender when it ends: messages sent */
	__u64 seed;
};

#define CC_BUF 16384

static __u32 cc_len(__u64 x)
{
	return x % 100 < 2 ? 9000 + (x >> 16) % 1000 : 4 + (x >> 8) % 300;
}

static void *cc_send_fn(void *arg)
{
	struct cc_sender *cs = arg;
	unsigned char *buf = malloc(CC_BUF);
	struct kprog_post p;
	struct kprog_cqe c;
	__u64 x = cs->seed;
	int i, ret = 0;

	if (!buf) {
		cs->ret = -ENOMEM;
		__atomic_store_n(&cs->sent, 0, __ATOMIC_RELEASE);
		return NULL;
	}
	for (i = 0; i < cs->n && !__atomic_load_n(&cs->stop, __ATOMIC_ACQUIRE); i++) {
		__u32 len;
		void *pl;

		x = kp_mix(x);
		len = cc_len(x);
		memcpy(buf, &i, 4);
		kp_fill(buf + 4, len - 4, cs->seed + i, 0);
		if (i % 4 == 0)
			sched_yield();	/* let the receiver keep up now and then */
		if ((x >> 40) % 100 >= 12 && len <= cs->d->max_msg &&
		    (pl = kp_dir_reserve(cs->d, len, CTX, 5))) {
			memcpy(pl, buf, len);
			kp_dir_publish(cs->d);
			continue;
		}
		cs->kernel++;
		ret = kp_send(cs->e, i, buf, len, 0, 5, CTX, 0, &p);
		if (!ret && !p.done) {
			cs->rndv++;
			while ((ret = kp_wait_cqe(cs->e, i, &c, 100)) == -ETIMEDOUT &&
			       !__atomic_load_n(&cs->stop, __ATOMIC_ACQUIRE))
				;
			if (!ret && c.error)
				ret = c.error;
		}
		if (ret) {
			cs->ret = ret;
			i++;	/* it may have arrived */
			break;
		}
	}
	free(buf);
	__atomic_store_n(&cs->sent, i, __ATOMIC_RELEASE);
	return NULL;
}

/* What the receiver sees of the channel, when it waits too long. */
static void cc_dump(struct __test_metadata *_metadata, struct kp_ep *r, struct kp_dir *rx,
		    int next)
{
	uint64_t pos, cons = ld64(&rx->h->cons), prod = kp_dir_prod(rx), size;
	int n = 0;

	TH_LOG("stuck at message %d: held %u unexp %u cons %llu prod %llu", next,
	       held_of(r, 1), unexp_of(r), (unsigned long long)cons, (unsigned long long)prod);
	for (pos = cons; pos != prod && n < 8; pos += size, n++) {
		struct kprog_chan_rec *rec = kp_dir_rec(rx, pos, prod, &size);
		int seq = -1;

		if (!size)
			break;
		if (!(rec->flags & KPROG_REC_PAD) && rec->len >= 4)
			memcpy(&seq, kp_rec_payload(rec), 4);
		TH_LOG("  record at %llu: state %u flags %u len %u seq %d",
		       (unsigned long long)pos, rec->state, rec->flags, rec->len, seq);
	}
}

TEST_F_TIMEOUT(job, order_user_take_vs_kernel_drain, 300)
{
	struct kp_ep *r = &self->e[0];
	struct cc_sender cs = { .e = &self->e[1], .n = 20000, .seed = kp_key(), .sent = -1 };
	unsigned char *rb = kp_alloc(CC_BUF);
	int next = 0, user = 0, kern = 0, ret, seq, sent;
	long long t0 = kp_now_ms(), stop_at = t0 + 60000, last = t0;
	struct kprog_chan_rec *rec;
	struct kprog_post p;
	struct kprog_cqe c;
	struct kp_ch c0, c1;
	pthread_t th;
	__u64 x;

	REQUIRE_FAST();
	ASSERT_NE(NULL, rb);
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c1));
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	cs.d = &c1.tx;
	TH_LOG("seed %#llx", (unsigned long long)cs.seed);
	ASSERT_EQ(0, pthread_create(&th, NULL, cc_send_fn, &cs));
	x = cs.seed;
	for (;;) {
		__u32 len;

		sent = __atomic_load_n(&cs.sent, __ATOMIC_ACQUIRE);
		if (sent >= 0 && next >= sent)
			break;
		if (kp_now_ms() > stop_at)
			__atomic_store_n(&cs.stop, 1, __ATOMIC_RELEASE);	/* bounded in time */
		if (kp_now_ms() - last > 30000) {
			EXPECT_GT(30000, kp_now_ms() - last) TH_LOG("no message for 30 s");
			cc_dump(_metadata, r, &c0.rx, next);
			break;
		}
		ret = user_take(r, 1, &c0.rx, &rec);
		if (ret == 0) {
			sched_yield();
			continue;
		}
		if (ret == -2) {
			EXPECT_NE(-2, ret) TH_LOG("malformed channel");
			break;
		}
		x = kp_mix(x);
		len = cc_len(x);
		if (ret == 1) {
			memcpy(&seq, kp_rec_payload(rec), 4);
			EXPECT_EQ(next, seq) TH_LOG("taken here: message %d instead of %d", seq, next);
			EXPECT_EQ(len, rec->len) TH_LOG("message %d", next);
			EXPECT_EQ(-1, kp_check((unsigned char *)kp_rec_payload(rec) + 4, len - 4,
					       cs.seed + next, 0)) TH_LOG("message %d", next);
			kp_rec_done(rec);
			kp_dir_release(&c0.rx);
			user++;
		} else {
			ret = kp_recv(r, ++next_id, rb, CC_BUF, 1, KPROG_ANY_TAG, CTX, 0, &p);
			ASSERT_EQ(0, ret) TH_LOG("recv: %s", kp_strerr(ret));
			if (p.done) {
				c = p.cqe;
			} else {
				/* a record may be meant for it: let the kernel see them */
				while ((ret = kp_wait_cqe(r, p.req_id, &c, 10)) == -ETIMEDOUT &&
				       kp_now_ms() - last < 30000)
					drain(r, 1, 0);
				if (ret) {
					EXPECT_EQ(0, ret) TH_LOG("message %d: %s", next, kp_strerr(ret));
					cc_dump(_metadata, r, &c0.rx, next);
					kp_cancel(r, p.req_id);
					break;
				}
			}
			EXPECT_EQ(0, c.error) TH_LOG("message %d", next);
			memcpy(&seq, rb, 4);
			EXPECT_EQ(next, seq) TH_LOG("from the kernel: message %d instead of %d", seq,
						    next);
			EXPECT_EQ(len, c.bytes) TH_LOG("message %d", next);
			EXPECT_EQ(-1, kp_check(rb + 4, len - 4, cs.seed + next, 0))
				TH_LOG("message %d", next);
			kern++;
		}
		next++;
		last = kp_now_ms();
		if (!_metadata->passed)
			break;
	}
	__atomic_store_n(&cs.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	TH_LOG("%d of %d messages in %lld ms: %d taken here, %d from the kernel (sender: %d through the kernel, %d rendezvous)",
	       next, cs.sent, kp_now_ms() - t0, user, kern, cs.kernel, cs.rndv);
	EXPECT_EQ(0, cs.ret) TH_LOG("sender: %s", kp_strerr(cs.ret));
	EXPECT_EQ(cs.sent, next);
	EXPECT_LT(1000, next);
	EXPECT_LT(0, user);
	EXPECT_LT(0, kern);
	kp_free(rb, CC_BUF);
	ch_unmap(&c0);
	ch_unmap(&c1);
}

/*
 * A consumer must read cons before prod: a drain in one of the receiver's
 * own system calls (another thread's) moves cons past a prod read before
 * it. (libshim/core/fast.c poll_peer() read prod first and walked
 * "pos != prod" from cons: in this interleaving it would walk past prod
 * into stale ring contents, see the report of this test series.) The
 * sender's kernel send drains the records too, but leaves cons alone: the
 * receiving process may be about to take one of them, and a record
 * released under it could be rewritten as a new NEW record that its take
 * would get instead (kmod/core/chan.c, the eleventh session's `many` hang).
 */
TEST_F(job, cons_passes_a_stale_prod)
{
	struct kp_ep *r = &self->e[0], *s = &self->e[1];
	unsigned char b[16];
	struct kprog_post p;
	struct kp_ch c0, c1;
	uint64_t prod, cons;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(s, 0, &c1));
	ASSERT_EQ(0, ch_map(r, 1, &c0));
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 1, 10, rseed(1, 0)));
	prod = kp_dir_prod(&c0.rx);		/* the receiver reads prod ... */
	ASSERT_EQ(0, rec_send(&c1.tx, CTX, 1, 20, rseed(1, 1)));
	kp_fill(b, sizeof(b), rseed(1, 2), 0);
	ASSERT_EQ(0, kp_send(s, 1, b, sizeof(b), 0, 1, CTX, 0, &p));
	EXPECT_EQ(0, ld64(&c0.rx.h->cons)) TH_LOG("a sender's drain released records");
	EXPECT_EQ(3, held_of(r, 1));		/* the two records, then the message */
	ASSERT_EQ(0, drain(r, 1, 0));		/* the receiver's own drain releases */
	cons = ld64(&c0.rx.h->cons);		/* ... then cons */
	EXPECT_LT(prod, cons) TH_LOG("prod %llu cons %llu", (unsigned long long)prod,
				     (unsigned long long)cons);
	recv_check(_metadata, r, CTX, 1, 1, 10, rseed(1, 0), 1, 1, "#0");
	recv_check(_metadata, r, CTX, 1, 1, 20, rseed(1, 1), 1, 1, "#1");
	recv_check(_metadata, r, CTX, 1, 1, 16, rseed(1, 2), 1, 1, "#2");
	ch_unmap(&c0);
	ch_unmap(&c1);
}

/*
 * A rank that left and joined again (supported by the kernel path). The
 * survivor keeps the closed channel of the old incarnation while it has
 * it mapped, so CHAN_OPEN from the new one fails with EBUSY, as the ABI
 * says (kprog.h, KPROG_IOC_CHAN_OPEN): that pair then uses the kernel
 * path only, which must work.
 */
TEST_F(job, rejoined_rank_channel)
{
	struct kp_ep *r = &self->e[0];
	unsigned char b[32];
	struct kprog_chan_open co;
	struct kprog_post p;
	struct kp_ch c1;
	int ret;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c1));
	ch_unmap(&c1);
	kp_ep_close(&self->e[1]);
	ASSERT_TRUE(sflags_of(r, 1) & KPROG_SRC_LEFT);
	ASSERT_EQ(0, kp_ep_open(&self->e[1], self->key, 1, JOB_SIZE, 0, 0));
	/* the kernel path between them works */
	kp_fill(b, sizeof(b), 9, 0);
	ASSERT_EQ(0, kp_send(&self->e[1], 1, b, sizeof(b), 0, 2, CTX, 0, &p));
	recv_check(_metadata, r, CTX, 1, 2, sizeof(b), 9, 1, 2, "after the rejoin");
	ret = ch_open(self->e[1].fd, 0, &co);
	EXPECT_TRUE(ret == 0 || ret == -EBUSY)
		TH_LOG("CHAN_OPEN from a rejoined rank: %s (0 or EBUSY expected)", kp_strerr(ret));
}

/* ============================ WAIT and KICK ============================ */

enum { LATER_KICK, LATER_SEND, LATER_REC_KICK };

struct later {
	struct kp_ep *e;	/* who acts */
	struct kp_dir *d;	/* LATER_REC_KICK: the channel */
	__u32 to;		/* rank kicked / sent to */
	int what, ms, tag;
	int ret;
};

static void *later_fn(void *arg)
{
	struct later *l = arg;
	static unsigned char b[64];
	struct kprog_post p;

	usleep(l->ms * 1000);
	switch (l->what) {
	case LATER_KICK:
		l->ret = kick(l->e, l->to);
		break;
	case LATER_SEND:
		l->ret = kp_send(l->e, 9999, b, sizeof(b), l->to, l->tag, CTX, 0, &p);
		break;
	default:
		l->ret = rec_send(l->d, CTX, l->tag, 8, 1);
		if (!l->ret)
			l->ret = kick(l->e, l->to);
	}
	return NULL;
}

/* WAIT(EVENTS, ev) while @l happens; checks it returned because of it. */
static void wait_for_later(struct __test_metadata *_metadata, struct kp_ep *w,
			   struct later *l, const char *what)
{
	__u32 ev = events_of(w);
	long long t0, el;
	pthread_t th;
	int ret;

	ASSERT_EQ(0, pthread_create(&th, NULL, later_fn, l));
	t0 = kp_now_ms();
	ret = wait_ev(w, 20000000000LL, KPROG_WAIT_EVENTS, ev);
	el = kp_now_ms() - t0;
	pthread_join(th, NULL);
	EXPECT_EQ(0, l->ret) TH_LOG("%s: the action failed: %s", what, kp_strerr(l->ret));
	EXPECT_EQ(0, ret) TH_LOG("%s: WAIT: %s", what, kp_strerr(ret));
	EXPECT_LE(l->ms / 2, el) TH_LOG("%s: WAIT returned before the event", what);
	EXPECT_GT(15000, el) TH_LOG("%s: WAIT returned late", what);
	EXPECT_NE(ev, events_of(w)) TH_LOG("%s", what);
}

TEST_F_TIMEOUT(job, wait_events, 120)
{
	struct kp_ep *w = &self->e[0];
	struct kprog_chan_open co;
	struct later l;
	struct kp_ch c;
	__u32 ev;

	REQUIRE_FAST();
	ev = events_of(w);
	/* nothing happens: times out; a stale count returns at once */
	EXPECT_EQ(-ETIMEDOUT, wait_ev(w, 100000000LL, KPROG_WAIT_EVENTS, ev));
	EXPECT_EQ(0, wait_ev(w, 20000000000LL, KPROG_WAIT_EVENTS, ev - 1));
	EXPECT_EQ(0, wait_ev(w, 0, KPROG_WAIT_EVENTS, ev));
	EXPECT_EQ(-EINVAL, wait_ev(w, 0, 4, ev));
	/* KPROG_WAIT_POLL in a job on one node: nothing to poll, as without */
	EXPECT_EQ(wait_ev(w, 0, 0, 0), wait_ev(w, 0, KPROG_WAIT_POLL, 0));
	EXPECT_EQ(0, wait_ev(w, 0, KPROG_WAIT_EVENTS | KPROG_WAIT_POLL, ev));
	EXPECT_EQ(-EINVAL, wait_ev(w, 0, 0x80000000, ev));

	/* a kick from the peer */
	memset(&l, 0, sizeof(l));
	l.e = &self->e[1];
	l.to = 0;
	l.what = LATER_KICK;
	l.ms = 200;
	wait_for_later(_metadata, w, &l, "kick");
	EXPECT_EQ(0, kp_ring_count(w));

	/* an arrival into the unexpected queue */
	l.what = LATER_SEND;
	l.tag = 3;
	wait_for_later(_metadata, w, &l, "arrival");
	EXPECT_EQ(1, unexp_of(w));

	/* a record plus a kick, the fast path's wake-up */
	ASSERT_EQ(0, ch_map(&self->e[2], 0, &c));
	l.e = &self->e[2];
	l.d = &c.tx;
	l.what = LATER_REC_KICK;
	wait_for_later(_metadata, w, &l, "record and kick");
	EXPECT_NE(0, kp_dir_prod(&c.tx));

	/* a channel opened by a peer */
	ev = events_of(w);
	ASSERT_EQ(0, ch_open(self->e[3].fd, 0, &co));
	EXPECT_EQ(0, wait_ev(w, 1000000000LL, KPROG_WAIT_EVENTS, ev));
	ch_unmap(&c);
}

TEST_F_TIMEOUT(job, wait_without_events_ignores_kicks, 60)
{
	struct kp_ep *w = &self->e[0];
	struct later l = { .e = &self->e[1], .to = 0, .what = LATER_KICK, .ms = 100 };
	pthread_t th;
	int ret;

	ASSERT_EQ(0, pthread_create(&th, NULL, later_fn, &l));
	ret = wait_ev(w, 600000000LL, 0, events_of(w));
	pthread_join(th, NULL);
	EXPECT_EQ(0, l.ret);
	EXPECT_EQ(-ETIMEDOUT, ret);
}

TEST_F_TIMEOUT(job, wait_v1, 60)
{
	struct kp_ep *w = &self->e[0];
	struct later l = { .e = &self->e[1], .to = 0, .what = LATER_SEND, .ms = 200, .tag = 6 };
	unsigned char buf[64];
	struct kprog_post p;
	struct kprog_cqe c;
	pthread_t th;
	int ret;

	EXPECT_EQ(-ETIMEDOUT, wait_v1(w, 50000000LL));
	EXPECT_EQ(0, wait_v1(w, 0));
	ASSERT_EQ(0, kp_recv(w, 77, buf, sizeof(buf), 1, 6, CTX, 0, &p));
	ASSERT_EQ(0, p.done);
	ASSERT_EQ(0, pthread_create(&th, NULL, later_fn, &l));
	ret = wait_v1(w, 20000000000LL);
	pthread_join(th, NULL);
	EXPECT_EQ(0, l.ret);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(1, kp_ring_count(w));
	ASSERT_EQ(0, kp_wait_cqe(w, 77, &c, KP_TMO_MS));
	EXPECT_EQ(64, c.bytes);
	/* a kick does not end a V1 wait */
	l.what = LATER_KICK;
	l.ms = 50;
	ASSERT_EQ(0, pthread_create(&th, NULL, later_fn, &l));
	ret = wait_v1(w, 400000000LL);
	pthread_join(th, NULL);
	EXPECT_EQ(-ETIMEDOUT, ret);
}

/* ---- rendezvous sends through a channel: grants (KPROG_FEAT_GRANTS) ---- */

#define REQUIRE_GRANTS() do { \
	REQUIRE_FAST(); \
	if (kp_param("max_grants") <= 0) \
		SKIP(return, "no grants (max_grants=0)"); \
} while (0)

static size_t gr_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (KPROG_GRANT_BYTES(kp_param("max_grants")) + page - 1) & ~(page - 1);
}

/* e's grant table, mapped; NULL with errno on failure. */
static struct kprog_grant *gr_map(struct kp_ep *e)
{
	void *m = mmap(NULL, gr_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, e->fd,
		       (off_t)KPROG_GRANT_MMAP_OFFSET);

	return m == MAP_FAILED ? NULL : m;
}

/* Slot @i: @len bytes at @buf to rank @dst, tag @tag, request @id; a record naming it. */
static int rts_send(struct kp_dir *d, struct kprog_grant *g, __u32 i, __u32 dst, __s32 tag,
		    const void *buf, __u64 len, __u64 id)
{
	struct kprog_chan_rts *r = kp_dir_reserve(d, sizeof(*r), CTX, tag);

	if (!r)
		return -ENOSPC;
	g[i].dst = dst;
	g[i].context = CTX;
	g[i].tag = tag;
	g[i].req_id = id;
	g[i].addr = (uintptr_t)buf;
	g[i].len = len;
	__atomic_store_n(&g[i].state, KPROG_GRANT_SEQ(g[i].state) + 4 + KPROG_GRANT_OPEN,
			 __ATOMIC_RELEASE);
	((struct kprog_chan_rec *)r - 1)->flags = KPROG_REC_RNDV;
	r->grant = i;
	r->__pad = 0;
	r->req_id = id;
	kp_dir_publish_as(d, len);
	return 0;
}

/*
 * Rank 1 grants three buffers to rank 0 between small records; rank 0
 * receives all in order (the granted ones copied from rank 1's pages by
 * the kernel), rank 1 gets a completion per granted send.
 */
TEST_F(job, grant_sends_in_record_order)
{
	struct kp_ep *s = &self->e[1], *r = &self->e[0];
	size_t lens[3] = { 20000, 3 * 4096 + 1, 300000 };
	unsigned char *bufs[3];
	struct kprog_grant *g;
	struct kprog_cqe c;
	struct kp_ch ch;
	int i;

	REQUIRE_GRANTS();
	ASSERT_EQ(0, ch_map(s, 0, &ch));
	g = gr_map(s);
	ASSERT_NE(NULL, g) TH_LOG("grant table mmap: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		bufs[i] = kp_alloc(lens[i]);
		ASSERT_NE(NULL, bufs[i]);
		kp_fill(bufs[i], lens[i], rseed(1, 100 + i), 0);
		ASSERT_EQ(0, rec_send(&ch.tx, CTX, 7, 10 + i, rseed(1, i)));
		ASSERT_EQ(0, rts_send(&ch.tx, g, 5 + i, 0, 7, bufs[i], lens[i], 900 + i));
	}
	for (i = 0; i < 3; i++) {
		recv_check(_metadata, r, CTX, 1, 7, 10 + i, rseed(1, i), 1, 7, "small");
		recv_check(_metadata, r, CTX, 1, 7, lens[i], rseed(1, 100 + i), 1, 7, "granted");
		ASSERT_EQ(0, kp_wait_cqe(s, 900 + i, &c, KP_TMO_MS));
		EXPECT_EQ(0, c.error);
		EXPECT_EQ(lens[i], c.bytes);
		EXPECT_EQ(KPROG_GRANT_TAKEN, KPROG_GRANT_STATE(g[5 + i].state));
		kp_free(bufs[i], lens[i]);
	}
	EXPECT_EQ(ld64(&ch.tx.h->prod), ld64(&ch.tx.h->cons));
	munmap(g, gr_bytes());
	ch_unmap(&ch);
}

/* A withdrawn grant is never sent, its record is dropped; the next one arrives. */
TEST_F(job, grant_withdrawn)
{
	struct kp_ep *s = &self->e[2], *r = &self->e[0];
	unsigned char *buf = kp_alloc(50000);
	struct kprog_grant *g;
	struct kprog_probe pr;
	struct kprog_cqe c;
	struct kp_ch ch;

	REQUIRE_GRANTS();
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ch_map(s, 0, &ch));
	g = gr_map(s);
	ASSERT_NE(NULL, g);
	kp_fill(buf, 50000, rseed(2, 1), 0);
	ASSERT_EQ(0, rts_send(&ch.tx, g, 0, 0, 3, buf, 50000, 31));
	__u32 st = g[0].state;

	ASSERT_TRUE(__atomic_compare_exchange_n(&g[0].state, &st,
						KPROG_GRANT_SEQ(st) | KPROG_GRANT_FREE, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, kp_probe(r, CTX, 2, 3, 0, 0, &pr));
	EXPECT_EQ(0, pr.found);
	EXPECT_EQ(0, held_of(r, 2));
	ASSERT_EQ(0, rts_send(&ch.tx, g, 0, 0, 3, buf, 50000, 32));
	recv_check(_metadata, r, CTX, 2, 3, 50000, rseed(2, 1), 2, 3, "after the withdrawn one");
	ASSERT_EQ(0, kp_wait_cqe(s, 32, &c, KP_TMO_MS));
	EXPECT_EQ(50000, c.bytes);
	EXPECT_EQ(0, kp_has_cqe(s, 31, 100));
	munmap(g, gr_bytes());
	ch_unmap(&ch);
	kp_free(buf, 50000);
}

/*
 * The table is its process's alone: another process (a forked child
 * with the fd) can neither map it nor see the parent's mapping.
 */
TEST_F(job, grant_table_not_shared_with_a_child)
{
	struct kp_ep *s = &self->e[1];
	struct kprog_grant *g;
	int status;
	pid_t pid;

	REQUIRE_GRANTS();
	EXPECT_EQ(MAP_FAILED, mmap(NULL, gr_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE, s->fd,
				   (off_t)KPROG_GRANT_MMAP_OFFSET));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * gr_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED,
				   s->fd, (off_t)KPROG_GRANT_MMAP_OFFSET));
	EXPECT_EQ(EINVAL, errno);
	g = gr_map(s);
	ASSERT_NE(NULL, g);
	g[0].dst = 0;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		void *m = mmap(NULL, gr_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
			       (off_t)KPROG_GRANT_MMAP_OFFSET);

		if (m != MAP_FAILED || errno != EPERM)
			_exit(1);
		/* not inherited: touching the parent's mapping faults */
		signal(SIGSEGV, SIG_DFL);
		*(volatile __u32 *)&g[0].dst = 1;
		_exit(2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("child status %#x", status);
	munmap(g, gr_bytes());
}

TEST_F(job, kick_errors)
{
	struct kp_ep *e = &self->e[1];
	__u32 ev0 = events_of(&self->e[0]), ev2 = events_of(&self->e[2]);
	__u32 ev1 = events_of(e);

	EXPECT_EQ(-EINVAL, kick(e, JOB_SIZE));
	EXPECT_EQ(-EINVAL, kick(e, 0xffffffff));
	EXPECT_EQ(-ENOTCONN, kick(e, 4));
	EXPECT_EQ(0, kick(e, 0));
	EXPECT_NE(ev0, events_of(&self->e[0]));
	EXPECT_EQ(ev2, events_of(&self->e[2]));
	EXPECT_EQ(0, kick(e, 1));	/* self */
	EXPECT_NE(ev1, events_of(e));
	kp_ep_close(&self->e[3]);
	EXPECT_EQ(-ENOTCONN, kick(e, 3));
}

/* A blocked PROBE wakes on a kick and finds the record that came with it. */
TEST_F_TIMEOUT(job, probe_block_woken_by_record_and_kick, 60)
{
	struct kp_ep *r = &self->e[0];
	struct kprog_probe pr;
	struct later l;
	struct kp_ch c;
	pthread_t th;
	int ret, src;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c));
	for (src = 1; src >= KPROG_ANY_SOURCE; src -= 2) {
		memset(&l, 0, sizeof(l));
		l.e = &self->e[1];
		l.d = &c.tx;
		l.what = LATER_REC_KICK;
		l.ms = 200;
		l.tag = 12 + src;
		ASSERT_EQ(0, pthread_create(&th, NULL, later_fn, &l));
		ret = kp_probe(r, CTX, src, l.tag, KPROG_PROBE_BLOCK, 0, &pr);
		pthread_join(th, NULL);
		EXPECT_EQ(0, ret) TH_LOG("source %d: %s", src, kp_strerr(ret));
		EXPECT_EQ(1, pr.found);
		EXPECT_EQ(1, pr.out_source);
		EXPECT_EQ(8, pr.bytes);
		recv_check(_metadata, r, CTX, 1, l.tag, 8, 1, 1, l.tag, "probed record");
	}
	ch_unmap(&c);
}

/* ============================== garbage ============================== */

/*
 * Each case corrupts direction 1 -> 0 of a channel (through rank 1's
 * mapping, as a misbehaving process would) after one good record.
 */
typedef void (*garbage_fn)(struct kp_dir *d, __u64 seed);

static void g_prod_unaligned(struct kp_dir *d, __u64 seed)
{
	st64(&d->h->prod, d->h->prod + 8);
}

static void g_prod_far(struct kp_dir *d, __u64 seed)
{
	st64(&d->h->prod, d->h->cons + 2 * ((__u64)d->mask + 1));
}

static void g_prod_wrapped(struct kp_dir *d, __u64 seed)
{
	st64(&d->h->prod, d->h->cons - 64);	/* behind cons */
}

static void g_cons_unaligned(struct kp_dir *d, __u64 seed)
{
	st64(&d->h->cons, 32);
}

static void g_cons_ahead(struct kp_dir *d, __u64 seed)
{
	st64(&d->h->cons, d->h->prod + 64);
}

static void g_len_over(struct kp_dir *d, __u64 seed)
{
	__u64 p = d->h->prod;

	rec_raw(d, p, KPROG_REC_NEW, 0, d->max_msg + 1, CTX, 1);
	st64(&d->h->prod, p + KPROG_CHAN_REC_SIZE(d->max_msg + 1));
}

static void g_len_huge(struct kp_dir *d, __u64 seed)
{
	__u64 p = d->h->prod;

	rec_raw(d, p, KPROG_REC_NEW, 0, 0xffffffff, CTX, 1);
	st64(&d->h->prod, p + 64);
}

static void g_len_beyond_prod(struct kp_dir *d, __u64 seed)
{
	__u64 p = d->h->prod;

	rec_raw(d, p, KPROG_REC_NEW, 0, 200, CTX, 1);
	st64(&d->h->prod, p + 64);
}

static void g_cross_end(struct kp_dir *d, __u64 seed)
{
	__u64 ring = (__u64)d->mask + 1, p = ring - 64;

	/* an empty ring whose next record starts 64 bytes before the end */
	st64(&d->h->cons, p);
	st64(&d->h->prod, p);
	rec_raw(d, p, KPROG_REC_NEW, 0, 100, CTX, 1);
	st64(&d->h->prod, p + KPROG_CHAN_REC_SIZE(100));
}

static void g_neg_tag(struct kp_dir *d, __u64 seed)
{
	rec_send(d, CTX, -5, 10, seed);
}

static void g_any_tag(struct kp_dir *d, __u64 seed)
{
	rec_send(d, CTX, KPROG_ANY_TAG, 10, seed);
}

static void g_int_min_tag(struct kp_dir *d, __u64 seed)
{
	rec_send(d, CTX, (__s32)0x80000000, 0, seed);
}

static void g_pad_short(struct kp_dir *d, __u64 seed)
{
	__u64 p = d->h->prod;

	/* a pad in the middle of the ring, with less published after it */
	rec_raw(d, p, KPROG_REC_DONE, KPROG_REC_PAD, 0, 0, 0);
	st64(&d->h->prod, p + 64);
}

static void g_flags_all(struct kp_dir *d, __u64 seed)
{
	__u64 p = d->h->prod;

	rec_raw(d, p, KPROG_REC_NEW, 0xffffffff, 10, CTX, 1);
	st64(&d->h->prod, p + 64);
}

static void g_random(struct kp_dir *d, __u64 seed)
{
	kp_fill(d->h, sizeof(*d->h), seed, 0);
	kp_fill(d->ring, (size_t)d->mask + 1, seed ^ 0x55, 0);
}

static const struct {
	const char *name;
	garbage_fn fn;
} gcases[] = {
	{ "prod not aligned", g_prod_unaligned },
	{ "prod more than a ring ahead", g_prod_far },
	{ "prod behind cons", g_prod_wrapped },
	{ "cons not aligned", g_cons_unaligned },
	{ "cons ahead of prod", g_cons_ahead },
	{ "len max_msg + 1", g_len_over },
	{ "len 0xffffffff", g_len_huge },
	{ "len beyond prod", g_len_beyond_prod },
	{ "record across the ring's end", g_cross_end },
	{ "negative tag", g_neg_tag },
	{ "tag KPROG_ANY_TAG", g_any_tag },
	{ "tag INT_MIN", g_int_min_tag },
	{ "pad record cut short", g_pad_short },
	{ "flags all ones", g_flags_all },
	{ "random bytes", g_random },
};

#define NGCASES (sizeof(gcases) / sizeof(gcases[0]))

/* The victim's system calls after a peer wrote garbage: none may hang. */
static void victim_calls(struct __test_metadata *_metadata, struct kp_ep *v, const char *what)
{
	struct kprog_probe pr;

	EXPECT_EQ(0, drain(v, 1, 0)) TH_LOG("%s", what);
	EXPECT_EQ(0, drain(v, KPROG_ANY_SOURCE, 0)) TH_LOG("%s", what);
	EXPECT_EQ(0, kp_probe(v, CTX, 1, KPROG_ANY_TAG, 0, 0, &pr)) TH_LOG("%s", what);
	EXPECT_EQ(0, kp_probe(v, CTX, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0, &pr))
		TH_LOG("%s", what);
	recv_nothing(_metadata, v, 1, 99, what);
	recv_nothing(_metadata, v, KPROG_ANY_SOURCE, 99, what);
}

/*
 * After the garbage: the kernel path of the same pair, another channel
 * to the victim and another job all still work. @bad may be NULL (the
 * misbehaving process is gone).
 */
static void still_serving(struct __test_metadata *_metadata, struct kp_ep *v,
			  struct kp_ep *bad, struct kp_ch *good, struct kp_ep *other,
			  struct kp_ch *other_ch, const char *what)
{
	unsigned char b[200];
	struct kprog_post p;

	kp_fill(b, sizeof(b), 34, 0);
	if (bad) {
		ASSERT_EQ(0, kp_send(bad, 1, b, sizeof(b), 0, 34, CTX, 0, &p)) TH_LOG("%s", what);
		recv_check(_metadata, v, CTX, 1, 34, sizeof(b), 34, 1, 34, what);
	}
	ASSERT_EQ(0, rec_send(&good->tx, CTX, 35, 40, 35)) TH_LOG("%s", what);
	recv_check(_metadata, v, CTX, 2, 35, 40, 35, 2, 35, what);
	ASSERT_EQ(0, kp_send(&v[2], 2, b, sizeof(b), 0, 36, CTX, 0, &p)) TH_LOG("%s", what);
	recv_check(_metadata, v, CTX, 2, 36, sizeof(b), 34, 2, 36, what);
	ASSERT_EQ(0, rec_send(&other_ch->tx, CTX, 37, 50, 37)) TH_LOG("%s", what);
	recv_check(_metadata, other, CTX, 1, 37, 50, 37, 1, 37, what);
}

TEST_F_TIMEOUT(solo, garbage_table, 600)
{
	int oops0 = klog_oopses();
	struct kp_ep e[3], f[2];
	struct kp_ch bad, good, other;
	unsigned int i;
	__u64 key;
	int ret;

	REQUIRE_FAST();
	if (klog_count("kprog") < 0)
		SKIP(return, "kernel log unreadable (not root?)");
	/* "malformed" is ratelimited (10 lines per 5 s): start a fresh window */
	usleep(5500000);
	for (i = 0; i < NGCASES; i++) {
		const char *what = gcases[i].name;

		if (i && i % 9 == 0)
			usleep(5500000);
		key = kp_key();
		ASSERT_EQ(0, kp_job_open(e, 3, 3, key, 0, 0));
		ASSERT_EQ(0, kp_job_open(f, 2, 2, kp_key(), 0, 0));
		ASSERT_EQ(0, ch_map(&e[1], 0, &bad));
		ASSERT_EQ(0, ch_map(&e[2], 0, &good));
		ASSERT_EQ(0, ch_map(&f[1], 0, &other));
		ASSERT_EQ(0, rec_send(&bad.tx, CTX, 33, 10, 1));
		gcases[i].fn(&bad.tx, 0xBAD0000 + i);

		victim_calls(_metadata, &e[0], what);
		ret = malformed_logged(key, 1, 0);
		EXPECT_LE(1, ret) TH_LOG("%s: no \"malformed\" line for job %#llx", what,
					 (unsigned long long)key);

		/* the channel is not used any more, even if repaired */
		st64(&bad.tx.h->cons, 0);
		st64(&bad.tx.h->prod, 0);
		memset(bad.tx.ring, 0, 4096);
		ASSERT_EQ(0, rec_send(&bad.tx, CTX, 38, 10, 38));
		ASSERT_EQ(0, drain(&e[0], 1, 0));
		EXPECT_EQ(KPROG_REC_NEW, kp_rec_state(rec_at(&bad.tx, 0)))
			TH_LOG("%s: the kernel drained a channel it found malformed", what);

		still_serving(_metadata, e, &e[1], &good, &f[0], &other, what);
		ch_unmap(&bad);
		ch_unmap(&good);
		ch_unmap(&other);
		kp_job_close(e, 3);
		kp_job_close(f, 2);
	}
	EXPECT_EQ(oops0, klog_oopses()) TH_LOG("the kernel log has new oopses/warnings");
}

/* A record in an unknown state is skipped, never taken; cons stops there. */
TEST_F(job, unknown_record_state_skipped)
{
	struct kp_ep *r = &self->e[0];
	__u64 p1;
	struct kp_ch c;

	REQUIRE_FAST();
	ASSERT_EQ(0, ch_map(&self->e[1], 0, &c));
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, 10, rseed(1, 0)));
	p1 = c.tx.h->prod;
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, 10, rseed(1, 1)));
	ASSERT_EQ(0, rec_send(&c.tx, CTX, 1, 10, rseed(1, 2)));
	rec_at(&c.tx, p1)->state = 0xdead;
	ASSERT_EQ(0, drain(r, 1, 0));
	EXPECT_EQ(2, held_of(r, 1));
	EXPECT_EQ(p1, ld64(&c.tx.h->cons));
	EXPECT_EQ(0xdead, rec_at(&c.tx, p1)->state);
	recv_check(_metadata, r, CTX, 1, 1, 10, rseed(1, 0), 1, 1, "#0");
	recv_check(_metadata, r, CTX, 1, 1, 10, rseed(1, 2), 1, 1, "#2");
	ch_unmap(&c);
}

/* The child of garbage_forked_scribbler: rank 1 writes anything, fast. */
static int scribbler(struct pipes *pp, __u64 key, __u64 seed)
{
	struct kp_ep e;
	struct kp_ch c;
	__u64 x = seed, ring;
	long long end;

	if (kp_ep_open(&e, key, 1, 3, 0, 0))
		return 2;
	if (ch_map(&e, 0, &c))
		return 3;
	ring = (__u64)c.tx.mask + 1;
	if (kp_pipe_put(pp->c2p[1], 'o'))
		return 4;
	end = kp_now_ms() + 1500;
	while (kp_now_ms() < end) {
		x = kp_mix(x);
		switch (x % 8) {
		case 0:		/* random header words */
			st64(&c.tx.h->prod, kp_mix(x + 1));
			break;
		case 1:
			st64(&c.tx.h->cons, kp_mix(x + 2) & ~63ull);
			break;
		case 2:		/* near-valid indices */
			st64(&c.tx.h->prod, c.tx.h->cons + ((x >> 8) % (ring / 64 + 2)) * 64);
			break;
		case 3:		/* random bytes in the ring */
			kp_fill(c.tx.ring + ((x >> 16) & c.tx.mask & ~63ull), 64, x, 0);
			break;
		case 4:		/* random record fields */
			rec_raw(&c.tx, c.tx.h->cons + ((x >> 8) % 16) * 64, (x >> 20) % 5,
				(x >> 24) & 1 ? 0 : (__u32)kp_mix(x),
				(x >> 25) & 1 ? (__u32)(x >> 32) % (c.tx.max_msg + 2) :
						(__u32)kp_mix(x + 5),
				(x >> 26) & 1, (__s32)((x >> 27) & 1 ? (x >> 40) % 4 : kp_mix(x + 6)));
			break;
		default:	/* start over and write good records */
			st64(&c.tx.h->cons, c.tx.h->prod & ~63ull);
			st64(&c.tx.h->prod, c.tx.h->prod & ~63ull);
			rec_send(&c.tx, CTX, (x >> 8) % 4, (x >> 16) % (c.tx.max_msg + 1), x);
		}
	}
	if (kp_pipe_put(pp->c2p[1], 'd'))
		return 5;
	kp_pipe_get(pp->p2c[0], 60000);	/* until the parent is done */
	return 0;
}

TEST_F_TIMEOUT(solo, garbage_forked_scribbler, 300)
{
	int oops0 = klog_oopses(), ret, n = 0;
	struct kp_ep e[3], f[2];
	struct kp_ch good, other;
	__u64 key = kp_key(), seed = kp_key();
	unsigned char *buf;
	struct kprog_post p;
	struct kprog_probe pr;
	struct kprog_cqe c;
	struct pipes pp;
	pid_t pid;

	REQUIRE_FAST();
	TH_LOG("seed %#llx", (unsigned long long)seed);
	kp_ep_reset(&e[1]);
	ASSERT_EQ(0, kp_ep_open(&e[0], key, 0, 3, 0, 0));
	ASSERT_EQ(0, kp_ep_open(&e[2], key, 2, 3, 0, 0));
	ASSERT_EQ(0, kp_job_open(f, 2, 2, kp_key(), 0, 0));
	ASSERT_EQ(0, ch_map(&e[2], 0, &good));
	ASSERT_EQ(0, ch_map(&f[1], 0, &other));
	buf = kp_alloc(1 << 16);
	ASSERT_NE(NULL, buf);
	pid = fork_peer(&pp);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(scribbler(&pp, key, seed));
	ASSERT_EQ('o', kp_pipe_get(pp.c2p[0], 30000));

	/* the victim keeps calling in while the peer scribbles */
	for (;;) {
		struct pollfd pf = { .fd = pp.c2p[0], .events = POLLIN };

		if (poll(&pf, 1, 0) == 1)
			break;
		n++;
		EXPECT_EQ(0, drain(&e[0], n & 1 ? 1 : KPROG_ANY_SOURCE, 0));
		EXPECT_EQ(0, kp_probe(&e[0], CTX, n & 2 ? 1 : KPROG_ANY_SOURCE,
				      KPROG_ANY_TAG, 0, 0, &pr));
		ret = kp_recv(&e[0], ++next_id, buf, 1 << 16, n & 4 ? 1 : KPROG_ANY_SOURCE,
			      KPROG_ANY_TAG, CTX, 0, &p);
		EXPECT_EQ(0, ret) TH_LOG("recv: %s", kp_strerr(ret));
		if (!ret && !p.done) {
			ret = kp_cancel(&e[0], p.req_id);
			EXPECT_TRUE(ret == 0 || ret == -EBUSY) TH_LOG("cancel: %s", kp_strerr(ret));
			EXPECT_EQ(0, kp_wait_cqe(&e[0], p.req_id, &c, KP_TMO_MS));
		}
		if (n > 1000000)
			break;
	}
	ASSERT_EQ('d', kp_pipe_get(pp.c2p[0], 30000));
	TH_LOG("%d rounds of victim calls", n);
	/* while the scribbler lives, and after it left */
	still_serving(_metadata, e, NULL, &good, &f[0], &other, "scribbler alive");
	kp_pipe_put(pp.p2c[1], 'q');
	EXPECT_EQ(0, kp_child_wait(pid, 30000));
	EXPECT_EQ(0, drain(&e[0], KPROG_ANY_SOURCE, 0));
	still_serving(_metadata, e, NULL, &good, &f[0], &other, "scribbler gone");
	EXPECT_TRUE(sflags_of(&e[0], 1) & KPROG_SRC_LEFT);
	EXPECT_EQ(oops0, klog_oopses()) TH_LOG("the kernel log has new oopses/warnings");
	kp_free(buf, 1 << 16);
	ch_unmap(&good);
	ch_unmap(&other);
	kp_ep_close(&e[0]);
	kp_ep_close(&e[2]);
	kp_job_close(f, 2);
}

/* One random change to a channel direction (fuzz). */
static void fuzz_mutate(struct kp_dir *d, __u64 x)
{
	__u64 ring = (__u64)d->mask + 1, cons = d->h->cons, prod = d->h->prod;
	__u64 pos = cons + ((x >> 8) % 32) * 64;
	struct kprog_chan_rec *r = rec_at(d, pos);

	switch (x % 12) {
	case 0:
		st64(&d->h->prod, kp_mix(x));
		break;
	case 1:
		st64(&d->h->prod, prod + (((x >> 8) % 5) - 2) * 64);
		break;
	case 2:
		st64(&d->h->prod, prod + ((x >> 8) % 64));
		break;
	case 3:
		st64(&d->h->cons, kp_mix(x) & ~63ull);
		break;
	case 4:
		st64(&d->h->cons, cons + (((x >> 8) % 5) - 2) * 64);
		break;
	case 5:
		r->len = (x >> 16) & 1 ? (__u32)kp_mix(x) : d->max_msg + ((x >> 17) % 3) - 1;
		break;
	case 6:
		r->tag = (__s32)kp_mix(x);
		break;
	case 7:
		r->flags = (x >> 16) & 1 ? KPROG_REC_PAD : (__u32)kp_mix(x);
		break;
	case 8:
		r->state = (x >> 16) % 6;
		break;
	case 9:
		r->context = (__u32)(x >> 16) % 3;
		break;
	case 10:
		((unsigned char *)d->ring)[(x >> 16) & d->mask] = (unsigned char)(x >> 40);
		break;
	default:
		/* the producer's next record lands near the end of the ring */
		st64(&d->h->cons, ring * ((x >> 20) % 3) + ring - 64 * (1 + (x >> 8) % 4));
		st64(&d->h->prod, d->h->cons);
	}
}

TEST_F_TIMEOUT(solo, fuzz, 600)
{
	int oops0 = klog_oopses(), iter = 0, ms;
	const char *s = getenv("KPROG_FUZZ_SEED");
	__u64 seed = s ? strtoull(s, NULL, 0) : kp_key(), x;
	struct kp_ep e[2];
	struct kp_ch tx, rx;
	unsigned char *buf;
	struct kprog_post p;
	struct kprog_probe pr;
	struct kprog_cqe c;
	long long end;
	int step, ret;

	REQUIRE_FAST();
	s = getenv("KPROG_FUZZ_MS");
	ms = s ? atoi(s) : 8000;
	TH_LOG("seed %#llx (KPROG_FUZZ_SEED), %d ms (KPROG_FUZZ_MS)", (unsigned long long)seed,
	       ms);
	buf = kp_alloc(1 << 16);
	ASSERT_NE(NULL, buf);
	x = seed;
	end = kp_now_ms() + ms;
	while (kp_now_ms() < end && iter < 100000) {
		iter++;
		ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
		ASSERT_EQ(0, ch_map(&e[1], 0, &tx));
		ASSERT_EQ(0, ch_map(&e[0], 1, &rx));
		for (step = 0; step < 24; step++) {
			x = kp_mix(x);
			switch ((x >> 56) % 9) {
			case 0:
			case 1:
				rec_send(&tx.tx, (x >> 8) % 2, (x >> 10) % 4,
					 (x >> 16) % (tx.co.max_msg + 1), x);
				break;
			case 2:
				fuzz_mutate(&tx.tx, kp_mix(x + 1));
				break;
			case 3:
				EXPECT_EQ(0, drain(&e[0], (x >> 8) & 1 ? 1 : KPROG_ANY_SOURCE, 0));
				break;
			case 4:
				ret = kp_recv(&e[0], ++next_id, buf, (x >> 9) & 1 ? 1 << 16 : 16,
					      (x >> 8) & 1 ? 1 : KPROG_ANY_SOURCE,
					      (x >> 10) & 1 ? KPROG_ANY_TAG : (int)((x >> 11) % 4),
					      (x >> 13) % 2, 0, &p);
				EXPECT_EQ(0, ret) TH_LOG("iter %d: recv: %s", iter, kp_strerr(ret));
				if (!ret && !p.done && !kp_cancel(&e[0], p.req_id))
					EXPECT_EQ(0, kp_wait_cqe(&e[0], p.req_id, &c, KP_TMO_MS));
				break;
			case 5:
				ret = kp_probe(&e[0], (x >> 13) % 2, (x >> 8) & 1 ? 1 : KPROG_ANY_SOURCE,
					       KPROG_ANY_TAG, (x >> 9) & 1 ? KPROG_PROBE_DEQUEUE : 0,
					       iter * 100 + step, &pr);
				EXPECT_EQ(0, ret) TH_LOG("iter %d: probe: %s", iter, kp_strerr(ret));
				if (!ret && pr.found && ((x >> 9) & 1)) {
					ret = kp_recv_msg(&e[0], ++next_id, buf, 1 << 16,
							  iter * 100 + step, &p);
					EXPECT_EQ(0, ret);
					EXPECT_EQ(1, p.done);
				}
				break;
			case 6:
				ret = kp_send(&e[1], ++next_id, buf, (x >> 8) % 300, 0,
					      (x >> 10) % 4, 0, 0, &p);
				EXPECT_EQ(0, ret) TH_LOG("iter %d: send: %s", iter, kp_strerr(ret));
				break;
			case 7:
				/* the receiving process consumes too */
				kp_dir_release(&rx.rx);
				break;
			default:
				EXPECT_EQ(0, kick(&e[(x >> 8) & 1], (x >> 9) & 1));
			}
		}
		ch_unmap(&tx);
		ch_unmap(&rx);
		if (x & 1) {
			kp_ep_close(&e[0]);
			kp_ep_close(&e[1]);
		} else {
			kp_ep_close(&e[1]);
			kp_ep_close(&e[0]);
		}
		if (_metadata->passed == 0)
			break;
	}
	TH_LOG("%d iterations", iter);
	kp_free(buf, 1 << 16);
	EXPECT_EQ(oops0, klog_oopses()) TH_LOG("the kernel log has new oopses/warnings");
	/* the fast path still works */
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	ASSERT_EQ(0, ch_map(&e[1], 0, &tx));
	ASSERT_EQ(0, rec_send(&tx.tx, CTX, 1, 64, 5));
	recv_check(_metadata, &e[0], CTX, 1, 1, 64, 5, 1, 1, "after the fuzz");
	ch_unmap(&tx);
	kp_job_close(e, 2);
}

/* ======================= peer killed mid-message ======================= */

/*
 * Rank 1 of a 2-rank job: publishes two records on tag 7, reserves a third
 * without publishing it, tells the parent and waits to be killed. With
 * @wait_go it first says 'o' and waits for 'g'.
 */
static int half_writer(struct pipes *pp, __u64 key, int wait_go)
{
	struct kp_ep e;
	struct kp_ch c;
	void *pl;

	if (kp_ep_open(&e, key, 1, 2, 0, 0))
		return 2;
	if (ch_map(&e, 0, &c))
		return 3;
	if (wait_go && (kp_pipe_put(pp->c2p[1], 'o') || kp_pipe_get(pp->p2c[0], 30000) != 'g'))
		return 4;
	if (rec_send(&c.tx, CTX, 7, 100, rseed(1, 0)))
		return 5;
	if (!wait_go && rec_send(&c.tx, CTX, 7, 2000, rseed(1, 1)))
		return 6;
	pl = kp_dir_reserve(&c.tx, 300, CTX, 7);
	if (!pl)
		return 7;
	memset(pl, 0x11, 150);		/* half written */
	if (kp_pipe_put(pp->c2p[1], 'r'))
		return 8;
	for (;;)
		pause();
}

TEST_F_TIMEOUT(solo, peer_killed_mid_record, 120)
{
	struct kp_ep r;
	struct kp_ch c;
	struct kprog_post p;
	struct kprog_probe pr;
	unsigned char buf[4096];
	struct pipes pp;
	__u64 key = kp_key();
	pid_t pid;

	REQUIRE_FAST();
	ASSERT_EQ(0, kp_ep_open(&r, key, 0, 2, 0, 0));
	pid = fork_peer(&pp);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(half_writer(&pp, key, 0));
	ASSERT_EQ('r', kp_pipe_get(pp.c2p[0], 30000)) {
		kill(pid, SIGKILL);
		TH_LOG("child status %d", kp_child_wait(pid, 5000));
	}
	ASSERT_EQ(0, ch_map(&r, 1, &c));
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, kp_child_wait(pid, 20000));
	EXPECT_EQ(KPROG_SRC_CHAN | KPROG_SRC_LEFT, sflags_of(&r, 1));
	EXPECT_EQ(1, ld32(&ch_hdr(&c)->dir[0].closed));
	EXPECT_EQ(1, ld32(&ch_hdr(&c)->dir[1].closed));
	/* the reserved record was never published */
	EXPECT_EQ(KPROG_CHAN_REC_SIZE(100) + KPROG_CHAN_REC_SIZE(2000), kp_dir_prod(&c.rx));

	recv_check(_metadata, &r, CTX, 1, 7, 100, rseed(1, 0), 1, 7, "record 0");
	recv_check(_metadata, &r, CTX, 1, 7, 2000, rseed(1, 1), 1, 7, "record 1");
	ASSERT_EQ(0, kp_recv(&r, 3, buf, sizeof(buf), 1, 7, CTX, 0, &p));
	EXPECT_EQ(1, p.done);
	EXPECT_EQ(-ECONNRESET, p.cqe.error);
	EXPECT_EQ(-ECONNRESET, kp_probe(&r, CTX, 1, 7, KPROG_PROBE_BLOCK, 0, &pr));
	ch_unmap(&c);
	kp_ep_close(&r);
}

/*
 * The receive is posted in the kernel before the record is written, and
 * nobody drains before the sender dies.
 *
 * KNOWN BUG (reported, not fixed here): the departure fails every receive
 * posted for the departed rank (kprog_peer_gone(), called from
 * kprog_depart()) before anything drains the channel, so receive A gets
 * -ECONNRESET while the record published before the death stays in the
 * channel, and the NEXT receive B gets it: the older message is delivered
 * to the younger receive, and a message an eager send would have
 * delivered is lost to its receive. Expected: A gets the record (records
 * "stay deliverable, like buffered eager messages"), B -ECONNRESET.
 */
TEST_F_TIMEOUT(solo, peer_killed_with_posted_recv, 120)
{
	unsigned char a[4096], b[4096];
	struct kprog_post pa, pb;
	struct kprog_cqe ca, cb;
	struct pipes pp;
	__u64 key = kp_key();
	struct kp_ep r;
	pid_t pid;

	REQUIRE_FAST();
	ASSERT_EQ(0, kp_ep_open(&r, key, 0, 2, 0, 0));
	pid = fork_peer(&pp);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(half_writer(&pp, key, 1));
	ASSERT_EQ('o', kp_pipe_get(pp.c2p[0], 30000));
	ASSERT_EQ(0, kp_recv(&r, 1, a, sizeof(a), 1, 7, CTX, 0, &pa));
	ASSERT_EQ(0, pa.done);
	ASSERT_EQ(0, kp_recv(&r, 2, b, sizeof(b), 1, 7, CTX, 0, &pb));
	ASSERT_EQ(0, pb.done);
	ASSERT_EQ(0, kp_pipe_put(pp.p2c[1], 'g'));
	ASSERT_EQ('r', kp_pipe_get(pp.c2p[0], 30000));
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, kp_child_wait(pid, 20000));
	ASSERT_EQ(0, kp_wait_cqe(&r, 1, &ca, KP_TMO_MS));
	ASSERT_EQ(0, kp_wait_cqe(&r, 2, &cb, KP_TMO_MS));
	EXPECT_EQ(0, ca.error) TH_LOG("BUG: the receive posted before the record got %d "
				      "(%s); the record published before the death is lost to it",
				      ca.error, kp_strerr(ca.error));
	EXPECT_EQ(100, ca.bytes);
	EXPECT_EQ(-1, kp_check(a, 100, rseed(1, 0), 0));
	EXPECT_EQ(-ECONNRESET, cb.error);
	kp_ep_close(&r);
}

TEST_HARNESS_MAIN
