// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests across processes: rendezvous between two mms with iovecs
 * and progression without system calls, job isolation (keys and uids),
 * a peer killed in the middle of a transfer, close with operations in
 * flight.
 *
 * Forked children never use ASSERT/EXPECT: they report by exit status
 * (0 = fine, other values name the step that failed).
 */
#include "kprog_test.h"
#include <grp.h>
#include <sys/prctl.h>

#define NOBODY		65534

/* ---- parent/child plumbing ---- */

struct chan {
	int p2c[2], c2p[2];
};

static int chan_init(struct chan *c)
{
	if (pipe(c->p2c))
		return -1;
	if (pipe(c->c2p))
		return -1;
	return 0;
}

/* In the child after fork: keep the child's ends only. */
static void chan_child(struct chan *c)
{
	close(c->p2c[1]);
	close(c->c2p[0]);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static void chan_parent(struct chan *c)
{
	close(c->p2c[0]);
	close(c->c2p[1]);
}

/*
 * chan_init() and fork(): the child keeps its ends (chan_child()), the
 * parent its own (chan_parent()). The pid as fork() returns it; -1 if the
 * pipes or the fork failed.
 */
static pid_t chan_fork(struct chan *c)
{
	pid_t pid;

	if (chan_init(c))
		return -1;
	pid = fork();
	if (pid == 0)
		chan_child(c);
	else if (pid > 0)
		chan_parent(c);
	return pid;
}

/* ---- spinning on the ring without system calls ---- */

static volatile sig_atomic_t spin_expired;

static void on_alarm(int sig)
{
	(void)sig;
	spin_expired = 1;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * Spin reading the ring tail only, no system call, until a completion
 * shows up or @secs pass (SIGALRM). 0 if one arrived, -ETIMEDOUT.
 */
static int spin_for_cqe(struct kp_ep *e, unsigned int secs)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	__u32 head = e->hdr->head;
	int ret = -ETIMEDOUT;

	spin_expired = 0;
	sigaction(SIGALRM, &sa, &old);
	alarm(secs);
	while (!spin_expired) {
		if (__atomic_load_n(&e->hdr->tail, __ATOMIC_ACQUIRE) != head) {
			ret = 0;
			break;
		}
		cpu_relax();
	}
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	return ret;
}

/* ---- iovec layouts ---- */

struct layout {
	struct kprog_iov iov[32];
	unsigned int n;
	unsigned char *region;
	size_t region_len;
	size_t off[32];		/* offset of each segment in the stream */
};

/*
 * Cut a stream of @total bytes into the segments @sizes (the last one
 * takes the rest) placed in memory in the order @place, each at an odd
 * offset with a gap of @gap bytes (filled with 0xee) between them.
 */
static int layout_make(struct layout *l, size_t total, const size_t *sizes,
		       unsigned int n, const unsigned int *place, size_t gap)
{
	size_t sum = 0, pos, seglen[32];
	unsigned int i;

	if (n > 32)
		return -1;
	for (i = 0; i < n; i++) {
		seglen[i] = i + 1 < n ? sizes[i] : total - sum;
		if (i + 1 < n)
			sum += sizes[i];
	}
	if (sum > total)
		return -1;
	l->n = n;
	l->region_len = total + (n + 1) * gap + 4096;
	l->region = kp_alloc(l->region_len);
	if (!l->region)
		return -1;
	memset(l->region, 0xee, l->region_len);
	sum = 0;
	for (i = 0; i < n; i++) {
		l->off[i] = sum;
		sum += seglen[i];
		l->iov[i].len = seglen[i];
	}
	pos = 3;	/* page-unaligned */
	for (i = 0; i < n; i++) {
		unsigned int s = place[i];

		l->iov[s].base = (__u64)(uintptr_t)(l->region + pos);
		pos += seglen[s] + gap;
	}
	return 0;
}

static void layout_fill(struct layout *l, __u64 seed)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		kp_fill((void *)(uintptr_t)l->iov[i].base, l->iov[i].len, seed,
			l->off[i]);
}

/* 0 if the layout holds the stream, and the gaps are untouched. */
static long layout_check(struct layout *l, __u64 seed)
{
	unsigned int idx[32], i, k;
	unsigned char *pos = l->region, *end = l->region + l->region_len;

	for (i = 0; i < l->n; i++)
		if (kp_check((void *)(uintptr_t)l->iov[i].base, l->iov[i].len,
			     seed, l->off[i]) >= 0)
			return 1 + i;
	/* segments by address; every byte between them must be 0xee */
	for (i = 0; i < l->n; i++)
		idx[i] = i;
	for (i = 1; i < l->n; i++)
		for (k = i; k > 0 && l->iov[idx[k]].base <
				     l->iov[idx[k - 1]].base; k--) {
			unsigned int t = idx[k];

			idx[k] = idx[k - 1];
			idx[k - 1] = t;
		}
	for (i = 0; i <= l->n; i++) {
		unsigned char *next = i < l->n ?
			(unsigned char *)(uintptr_t)l->iov[idx[i]].base : end;
		long bad = kp_check_byte(pos, next - pos, 0xee);

		if (bad >= 0)
			return 1000 + (pos - l->region) + bad;
		if (i < l->n)
			pos = next + l->iov[idx[i]].len;
	}
	return 0;
}

/* ---------------- 8. rendezvous between two processes ---------------- */

#define XFER_LEN	(8u << 20)

static const size_t send_sizes[] = { 1, 4095, 100000, (3u << 20) + 7, 65536,
				      12345, 0 /* rest */ };
static const unsigned int send_place[] = { 3, 0, 6, 1, 5, 2, 4 };
static const size_t recv_sizes[] = { 7, 8192, 777777, 1u << 20, 3, 4096,
				     (2u << 20) + 1, 333, 99999, 5, 123456,
				     4097, 0 };
static const unsigned int recv_place[] = { 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
					   2, 1, 0 };

/* the child: rank 1, sends the 8 MiB iovec message, waits for it */
static int rndv_child(struct chan *ch, __u64 key, __u64 seed, int recv_first)
{
	struct layout l;
	struct kp_ep e;
	struct kprog_post p;
	struct kprog_cqe c;

	if (kp_ep_open(&e, key, 1, 2, 0, 0))
		return 2;
	if (e.j.max_iov < ARRAY_SIZE(send_sizes))
		return 3;
	if (layout_make(&l, XFER_LEN, send_sizes, ARRAY_SIZE(send_sizes),
			send_place, 61))
		return 4;
	layout_fill(&l, seed);
	if (recv_first && kp_pipe_get(ch->p2c[0], 20000) != 'r')
		return 5;
	if (kp_send(&e, 0xabc, l.iov, l.n, 0, 17, 3, KPROG_POST_IOV, &p))
		return 6;
	if (p.done)
		return 7;	/* 8 MiB never completes at post */
	if (!recv_first && kp_pipe_put(ch->c2p[1], 's'))
		return 8;
	if (kp_wait_cqe(&e, 0xabc, &c, 20000))
		return 9;
	if (c.error || c.bytes != XFER_LEN || c.source != 0 || c.tag != 17)
		return 10;
	if (layout_check(&l, seed))
		return 11;	/* the sender's buffer was modified */
	/* stay in the job until the parent is done */
	kp_pipe_get(ch->p2c[0], 20000);
	return 0;
}

static void rndv_two_procs(struct __test_metadata *_metadata, int recv_first)
{
	__u64 key = kp_key(), seed = kp_key();
	struct layout l;
	struct kp_ep e;
	struct kprog_post p;
	struct kprog_cqe c;
	struct chan ch;
	pid_t pid;
	long bad;
	int ret;

	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(rndv_child(&ch, key, seed, recv_first));
	ret = kp_ep_open(&e, key, 0, 2, 0, 0);
	ASSERT_EQ(0, ret) TH_LOG("join: %s", kp_strerr(ret));
	ASSERT_LE(ARRAY_SIZE(recv_sizes), e.j.max_iov);
	ASSERT_EQ(0, layout_make(&l, XFER_LEN, recv_sizes,
				 ARRAY_SIZE(recv_sizes), recv_place, 29));
	if (!recv_first)
		ASSERT_EQ('s', kp_pipe_get(ch.c2p[0], 20000))
			TH_LOG("child did not post its send");
	ret = kp_recv(&e, 0x1234, l.iov, l.n, 1, 17, 3, KPROG_POST_IOV, &p);
	ASSERT_EQ(0, ret) TH_LOG("recv: %s", kp_strerr(ret));
	ASSERT_EQ(0, p.done);
	if (recv_first)
		ASSERT_EQ(0, kp_pipe_put(ch.p2c[1], 'r'));
	/* no system call from here until the completion is in the ring */
	ret = spin_for_cqe(&e, 15);
	ASSERT_EQ(0, ret) TH_LOG("no completion within 15 s of spinning");
	ASSERT_EQ(0, kp_wait_cqe(&e, 0x1234, &c, 0));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(XFER_LEN, c.bytes);
	EXPECT_EQ(1, c.source);
	EXPECT_EQ(17, c.tag);
	bad = layout_check(&l, seed);
	EXPECT_EQ(0, bad) TH_LOG("data: %s %ld", bad >= 1000 ?
				 "gap byte overwritten at" : "segment", bad);
	kp_pipe_put(ch.p2c[1], 'q');
	EXPECT_EQ(0, kp_child_wait(pid, 20000));
	kp_ep_close(&e);
}

FIXTURE(xp) {
	char node[64];		/* device node made for another uid */
};

FIXTURE_SETUP(xp)
{
	self->node[0] = 0;
}

FIXTURE_TEARDOWN(xp)
{
	if (self->node[0])
		unlink(self->node);
}

/* receive posted first; the sender's post triggers the copy */
TEST_F_TIMEOUT(xp, rndv_8mib_iov_recv_first_no_syscall, 90)
{
	rndv_two_procs(_metadata, 1);
}

/* send posted first (unexpected); the receive triggers the copy */
TEST_F_TIMEOUT(xp, rndv_8mib_iov_send_first_no_syscall, 90)
{
	rndv_two_procs(_metadata, 0);
}

/* ---------------- 9. job isolation ---------------- */

TEST_F_TIMEOUT(xp, two_jobs_never_match, 60)
{
	struct kp_ep a[2], b[2];
	size_t big = 1 << 20;
	void *sm = kp_alloc(64), *bm = kp_alloc(big);
	void *r1 = kp_alloc(big), *r2 = kp_alloc(big), *r3 = kp_alloc(big);
	struct kprog_post ps1, ps2, ps3, pb, pa1, pa2;
	struct kprog_probe pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_job_open(a, 2, 2, kp_key(), 0, 0));
	ASSERT_EQ(0, kp_job_open(b, 2, 2, kp_key(), 0, 0));
	big = kp_rndv_size(&a[0], big);
	kp_free(bm, 1 << 20);
	bm = kp_alloc(big);
	kp_free(r2, 1 << 20);
	r2 = kp_alloc(big);
	kp_fill(sm, 64, 1, 0);
	kp_fill(bm, big, 2, 0);
	/* job B's rank 0 waits for anything */
	ASSERT_EQ(0, kp_recv(&b[0], 1, r3, big, KPROG_ANY_SOURCE,
			     KPROG_ANY_TAG, 0, 0, &pb));
	ASSERT_EQ(0, pb.done);
	/* job A's rank 1 sends small and large to its rank 0 */
	ASSERT_EQ(0, kp_send(&a[1], 2, sm, 64, 0, 5, 0, 0, &ps1));
	ASSERT_EQ(0, kp_send(&a[1], 3, bm, big, 0, 5, 0, 0, &ps2));
	EXPECT_FALSE(kp_has_cqe(&b[0], 1, 300));
	ASSERT_EQ(0, kp_probe(&b[0], 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0,
			      &pr));
	EXPECT_EQ(0, pr.found);
	ASSERT_EQ(0, kp_probe(&a[0], 0, 1, 5, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	ASSERT_EQ(0, kp_recv(&a[0], 4, r1, 64, 1, 5, 0, 0, &pa1));
	ASSERT_EQ(0, kp_recv(&a[0], 5, r2, big, 1, 5, 0, 0, &pa2));
	ASSERT_EQ(0, kp_complete(&a[0], &pa1, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(-1, kp_check(r1, 64, 1, 0));
	ASSERT_EQ(0, kp_complete(&a[0], &pa2, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(big, c.bytes);
	EXPECT_EQ(-1, kp_check(r2, big, 2, 0));
	ASSERT_EQ(0, kp_complete(&a[1], &ps2, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	/* B's own rank 1 does reach it */
	EXPECT_FALSE(kp_has_cqe(&b[0], 1, 0));
	ASSERT_EQ(0, kp_send(&b[1], 6, sm, 64, 0, 9, 0, 0, &ps3));
	ASSERT_EQ(0, kp_wait_cqe(&b[0], 1, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(1, c.source);
	EXPECT_EQ(9, c.tag);
	EXPECT_EQ(-1, kp_check(r3, 64, 1, 0));
	kp_job_close(a, 2);
	kp_job_close(b, 2);
}

/* A node of the kprog device that uid NOBODY may open. */
static const char *nobody_node(FIXTURE_DATA(xp) *self)
{
	struct stat st;

	if (stat(KPROG_DEVICE, &st))
		return NULL;
	if ((st.st_mode & 0006) == 0006)
		return KPROG_DEVICE;
	snprintf(self->node, sizeof(self->node), "/dev/kprog-selftest-%d",
		 getpid());
	unlink(self->node);
	if (mknod(self->node, S_IFCHR | 0666, st.st_rdev)) {
		self->node[0] = 0;
		return NULL;
	}
	chmod(self->node, 0666);
	return self->node;
}

static int become_nobody(const char *node)
{
	if (setgroups(0, NULL))
		return -1;
	if (setresgid(NOBODY, NOBODY, NOBODY))
		return -1;
	if (setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	if (geteuid() != NOBODY)
		return -1;
	kp_dev_path = node;
	return 0;
}

/* child: as nobody, try to join root's job; report the errnos seen */
static int uid_child(struct chan *ch, const char *node, __u64 key)
{
	int fd, ret;

	if (become_nobody(node))
		return 2;
	fd = kp_open();
	if (fd < 0)
		return 3;
	if (kp_pipe_get(ch->p2c[0], 20000) != 'c')
		return 4;
	ret = kp_join_fd(fd, key, 1, 2, 0, 0, NULL);
	if (ret == 0)
		return 5;
	if (ret != -EACCES)
		return 6;
	ret = kp_join_fd(fd, key, 1, 2, KPROG_JOIN_SHARED, 0, NULL);
	if (ret == 0)
		return 7;
	if (ret != -EACCES)
		return 8;
	return 0;
}

TEST_F_TIMEOUT(xp, other_uid_join_eacces, 60)
{
	const char *node = nobody_node(self);
	__u64 key = kp_key();
	struct kp_ep e;
	struct chan ch;
	pid_t pid;
	int st;

	ASSERT_NE(NULL, node) TH_LOG("cannot make a device node for uid %d",
				     NOBODY);
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(uid_child(&ch, node, key));
	ASSERT_EQ(0, kp_ep_open(&e, key, 0, 2, 0, 0));
	ASSERT_EQ(0, kp_pipe_put(ch.p2c[1], 'c'));
	st = kp_child_wait(pid, 20000);
	EXPECT_EQ(0, st) TH_LOG("child step %d (3: open as nobody failed, 5: joined a root job, 6: wrong errno, 7: joined with SHARED only on its side, 8: wrong errno)",
				st);
	kp_ep_close(&e);
}

/* child: as nobody, join root's shared job with SHARED and send to it */
static int shared_child(struct chan *ch, const char *node, __u64 key,
			__u64 key_unshared_join)
{
	size_t big = 1 << 20;
	unsigned char small[64], *bm;
	struct kprog_post p1, p2;
	struct kprog_cqe c;
	struct kp_ep e;
	int fd, ret;

	if (become_nobody(node))
		return 2;
	if (kp_pipe_get(ch->p2c[0], 20000) != 'c')
		return 4;
	/* a SHARED job still needs SHARED from the joiner */
	fd = kp_open();
	if (fd < 0)
		return 3;
	ret = kp_join_fd(fd, key_unshared_join, 1, 2, 0, 0, NULL);
	if (ret != -EACCES)
		return 5;
	close(fd);
	if (kp_ep_open(&e, key, 1, 2, KPROG_JOIN_SHARED, 0))
		return 6;
	big = kp_rndv_size(&e, big);
	bm = kp_alloc(big);
	if (!bm)
		return 7;
	kp_fill(small, sizeof(small), 31, 0);
	kp_fill(bm, big, 32, 0);
	if (kp_send(&e, 1, small, sizeof(small), 0, 1, 0, 0, &p1))
		return 8;
	if (kp_send(&e, 2, bm, big, 0, 2, 0, 0, &p2))
		return 9;
	if (kp_complete(&e, &p1, &c, 10000) || c.error)
		return 10;
	if (kp_complete(&e, &p2, &c, 20000) || c.error || c.bytes != big)
		return 11;
	if (kp_pipe_put(ch->c2p[1], (char)(big >> 16)))
		return 12;
	kp_pipe_get(ch->p2c[0], 20000);
	return 0;
}

TEST_F_TIMEOUT(xp, other_uid_shared_job, 60)
{
	const char *node = nobody_node(self);
	__u64 key = kp_key(), key2 = kp_key();
	size_t big = 1 << 20;
	unsigned char small[64], *bm;
	struct kprog_post p1, p2;
	struct kprog_cqe c;
	struct kp_ep e, e2;
	struct chan ch;
	pid_t pid;
	int st;

	ASSERT_NE(NULL, node);
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(shared_child(&ch, node, key, key2));
	ASSERT_EQ(0, kp_ep_open(&e, key, 0, 2, KPROG_JOIN_SHARED, 0));
	ASSERT_EQ(0, kp_ep_open(&e2, key2, 0, 2, KPROG_JOIN_SHARED, 0));
	big = kp_rndv_size(&e, big);
	bm = kp_alloc(big);
	ASSERT_NE(NULL, bm);
	ASSERT_EQ(0, kp_pipe_put(ch.p2c[1], 'c'));
	ASSERT_EQ(0, kp_recv(&e, 1, small, sizeof(small), 1, 1, 0, 0, &p1));
	ASSERT_EQ(0, kp_recv(&e, 2, bm, big, 1, 2, 0, 0, &p2));
	ASSERT_EQ(0, kp_complete(&e, &p1, &c, 20000)) {
		st = kp_child_wait(pid, 1000);
		TH_LOG("no message from the nobody child, its step %d", st);
	}
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(1, c.source);
	EXPECT_EQ(-1, kp_check(small, sizeof(small), 31, 0));
	ASSERT_EQ(0, kp_complete(&e, &p2, &c, 20000));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(big, c.bytes);
	EXPECT_EQ(-1, kp_check(bm, big, 32, 0));
	EXPECT_LE(0, kp_pipe_get(ch.c2p[0], 20000));
	kp_pipe_put(ch.p2c[1], 'q');
	st = kp_child_wait(pid, 20000);
	EXPECT_EQ(0, st) TH_LOG("child step %d", st);
	kp_ep_close(&e);
	kp_ep_close(&e2);
}

/* child: as nobody, create one unshared and one shared job */
static int creator_child(struct chan *ch, const char *node, __u64 k1,
			 __u64 k2)
{
	struct kp_ep a, b;

	if (become_nobody(node))
		return 2;
	if (kp_ep_open(&a, k1, 0, 2, 0, 0))
		return 3;
	if (kp_ep_open(&b, k2, 0, 2, KPROG_JOIN_SHARED, 0))
		return 4;
	if (kp_pipe_put(ch->c2p[1], 'c'))
		return 5;
	kp_pipe_get(ch->p2c[0], 20000);
	return 0;
}

/* root is no exception: another user's job needs SHARED on both sides */
TEST_F_TIMEOUT(xp, root_joins_other_uid_job, 60)
{
	const char *node = nobody_node(self);
	__u64 k1 = kp_key(), k2 = kp_key();
	struct chan ch;
	pid_t pid;
	int fd, st;

	ASSERT_NE(NULL, node);
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(creator_child(&ch, node, k1, k2));
	ASSERT_EQ('c', kp_pipe_get(ch.c2p[0], 20000)) {
		TH_LOG("child step %d", kp_child_wait(pid, 1000));
	}
	fd = kp_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EACCES, kp_join_fd(fd, k1, 1, 2, 0, 0, NULL));
	EXPECT_EQ(-EACCES, kp_join_fd(fd, k1, 1, 2, KPROG_JOIN_SHARED, 0,
				      NULL));
	EXPECT_EQ(-EACCES, kp_join_fd(fd, k2, 1, 2, 0, 0, NULL));
	EXPECT_EQ(0, kp_join_fd(fd, k2, 1, 2, KPROG_JOIN_SHARED, 0, NULL));
	close(fd);
	kp_pipe_put(ch.p2c[1], 'q');
	st = kp_child_wait(pid, 20000);
	EXPECT_EQ(0, st) TH_LOG("child step %d", st);
}

/* ---------------- 12. peer killed mid-transfer ---------------- */

#define KILL_LEN	(64u << 20)

/* child: rank 1 of 3; posts a 64 MiB send (or recv), then waits to die */
static int victim_child(struct chan *ch, __u64 key, __u64 seed, int do_send)
{
	unsigned char *buf = kp_alloc(KILL_LEN);
	struct kprog_post p;
	struct kp_ep e;
	int ret;

	if (!buf)
		return 2;
	if (kp_ep_open(&e, key, 1, 3, 0, 0))
		return 3;
	if (do_send) {
		kp_fill(buf, KILL_LEN, seed, 0);
		ret = kp_send(&e, 1, buf, KILL_LEN, 0, 1, 0, 0, &p);
	} else {
		memset(buf, 1, KILL_LEN);	/* fault the pages in */
		ret = kp_recv(&e, 1, buf, KILL_LEN, 0, 1, 0, 0, &p);
	}
	if (ret || p.done)
		return 4;
	if (kp_pipe_put(ch->c2p[1], 'p'))
		return 5;
	for (;;)
		pause();
}

/* After rank 1 died: sends to it fail, receives from it do not hang. */
static void check_rank_gone(struct __test_metadata *_metadata,
			    struct kp_ep *e, int dead)
{
	size_t big = kp_rndv_size(e, 64 * 1024);
	unsigned char *b = kp_alloc(big);
	struct kprog_post p;
	struct kprog_cqe c;
	int ret;

	ASSERT_NE(NULL, b);
	EXPECT_EQ(-ECONNRESET, kp_send(e, 500, b, 64, dead, 1, 0, 0, &p));
	EXPECT_EQ(-ECONNRESET, kp_send(e, 501, b, big, dead, 1, 0, 0, &p));
	EXPECT_EQ(-ECONNRESET, kp_send(e, 502, b, 8, dead, 1, 0,
				       KPROG_SEND_SYNC, &p));
	ret = kp_recv(e, 503, b, big, dead, 1, 0, 0, &p);
	if (ret) {
		EXPECT_EQ(-ECONNRESET, ret);
	} else {
		ASSERT_EQ(0, kp_complete(e, &p, &c, 5000))
			TH_LOG("receive from a dead rank hangs");
		EXPECT_EQ(-ECONNRESET, c.error);
	}
	kp_free(b, big);
}

/* Rank 1 may join again or not (the ABI leaves it open): no hang. */
static void check_rejoin(struct __test_metadata *_metadata, __u64 key)
{
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = kp_open(), ret;

		if (fd < 0)
			_exit(3);
		ret = kp_join_fd(fd, key, 1, 3, 0, 0, NULL);
		_exit(ret == 0 ? 0 : ret == -EADDRINUSE ? 1 : 2);
	}
	st = kp_child_wait(pid, 10000);
	EXPECT_TRUE(st == 0 || st == 1) TH_LOG("rejoin of a dead rank: %d", st);
}

TEST_F_TIMEOUT(xp, sender_killed_mid_transfer, 90)
{
	__u64 key = kp_key(), seed = kp_key();
	unsigned char *buf = kp_alloc(KILL_LEN), small[32], m[32];
	struct kprog_post p, p98, p99, ps;
	struct kprog_cqe c;
	struct kp_ep r, o;
	struct chan ch;
	pid_t pid;
	int ret;

	ASSERT_NE(NULL, buf);
	memset(buf, 0, KILL_LEN);
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(victim_child(&ch, key, seed, 1));
	ASSERT_EQ(0, kp_ep_open(&r, key, 0, 3, 0, 0));
	ASSERT_EQ(0, kp_ep_open(&o, key, 2, 3, 0, 0));
	/* pending before the death: one from rank 1, one from anyone */
	ASSERT_EQ(0, kp_recv(&r, 99, small, sizeof(small), 1, 99, 0, 0, &p99));
	ASSERT_EQ(0, kp_recv(&r, 98, small, sizeof(small), KPROG_ANY_SOURCE,
			     98, 0, 0, &p98));
	ASSERT_EQ('p', kp_pipe_get(ch.c2p[0], 30000)) {
		TH_LOG("child step %d", kp_child_wait(pid, 1000));
	}
	ret = kp_recv(&r, 1, buf, KILL_LEN, 1, 1, 0, 0, &p);
	kill(pid, SIGKILL);
	ASSERT_EQ(0, ret) TH_LOG("recv: %s", kp_strerr(ret));
	EXPECT_EQ(128 + SIGKILL, kp_child_wait(pid, 20000));

	ret = kp_complete(&r, &p, &c, 20000);
	ASSERT_EQ(0, ret) TH_LOG("matched receive did not complete");
	EXPECT_TRUE(c.error == 0 || c.error == -ECONNRESET)
		TH_LOG("error %d", c.error);
	if (c.error == 0) {
		TH_LOG("copy finished before the kill");
		EXPECT_EQ(KILL_LEN, c.bytes);
		EXPECT_EQ(-1, kp_check(buf, KILL_LEN, seed, 0));
	}
	ASSERT_EQ(0, kp_wait_cqe(&r, 99, &c, 5000))
		TH_LOG("receive posted from the dead rank never completed");
	EXPECT_EQ(-ECONNRESET, c.error);
	/* ANY_SOURCE can still be matched by a live rank */
	EXPECT_FALSE(kp_has_cqe(&r, 98, 300));
	kp_fill(m, sizeof(m), 77, 0);
	ASSERT_EQ(0, kp_send(&o, 5, m, sizeof(m), 0, 98, 0, 0, &ps));
	ASSERT_EQ(0, kp_wait_cqe(&r, 98, &c, 5000));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(2, c.source);
	EXPECT_EQ(-1, kp_check(small, sizeof(small), 77, 0));

	check_rank_gone(_metadata, &r, 1);
	check_rank_gone(_metadata, &o, 1);
	check_rejoin(_metadata, key);
	kp_ep_close(&r);
	kp_ep_close(&o);
}

TEST_F_TIMEOUT(xp, receiver_killed_mid_transfer, 90)
{
	__u64 key = kp_key();
	unsigned char *buf = kp_alloc(KILL_LEN);
	struct kprog_post p;
	struct kprog_cqe c;
	struct kp_ep s, o;
	struct chan ch;
	pid_t pid;
	int ret;

	ASSERT_NE(NULL, buf);
	kp_fill(buf, KILL_LEN, 3, 0);
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(victim_child(&ch, key, 0, 0));
	ASSERT_EQ(0, kp_ep_open(&s, key, 0, 3, 0, 0));
	ASSERT_EQ(0, kp_ep_open(&o, key, 2, 3, 0, 0));
	ASSERT_EQ('p', kp_pipe_get(ch.c2p[0], 30000)) {
		TH_LOG("child step %d", kp_child_wait(pid, 1000));
	}
	ret = kp_send(&s, 1, buf, KILL_LEN, 1, 1, 0, 0, &p);
	kill(pid, SIGKILL);
	ASSERT_EQ(0, ret) TH_LOG("send: %s", kp_strerr(ret));
	EXPECT_EQ(128 + SIGKILL, kp_child_wait(pid, 20000));
	ret = kp_complete(&s, &p, &c, 20000);
	ASSERT_EQ(0, ret) TH_LOG("matched send did not complete");
	EXPECT_TRUE(c.error == 0 || c.error == -ECONNRESET)
		TH_LOG("error %d", c.error);
	if (c.error == 0)
		EXPECT_EQ(KILL_LEN, c.bytes);
	/* the sender's buffer is never written */
	EXPECT_EQ(-1, kp_check(buf, KILL_LEN, 3, 0));
	check_rank_gone(_metadata, &s, 1);
	check_rank_gone(_metadata, &o, 1);
	check_rejoin(_metadata, key);
	kp_ep_close(&s);
	kp_ep_close(&o);
}

/* Killed with an unmatched rendezvous send: it is withdrawn. */
TEST_F_TIMEOUT(xp, sender_killed_before_match, 60)
{
	__u64 key = kp_key();
	unsigned char *buf = kp_alloc(KILL_LEN);
	struct kprog_probe pr;
	struct kprog_post p;
	struct kprog_cqe c;
	struct kp_ep r;
	struct chan ch;
	pid_t pid;
	int ret;

	ASSERT_NE(NULL, buf);
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(victim_child(&ch, key, 9, 1));
	ASSERT_EQ(0, kp_ep_open(&r, key, 0, 3, 0, 0));
	ASSERT_EQ('p', kp_pipe_get(ch.c2p[0], 30000)) {
		TH_LOG("child step %d", kp_child_wait(pid, 1000));
	}
	ASSERT_EQ(0, kp_probe(&r, 0, 1, 1, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	EXPECT_EQ(KILL_LEN, pr.bytes);
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, kp_child_wait(pid, 20000));
	usleep(100 * 1000);
	ASSERT_EQ(0, kp_probe(&r, 0, 1, 1, 0, 0, &pr));
	EXPECT_EQ(0, pr.found) TH_LOG("a dead rank's send is still queued");
	ret = kp_recv(&r, 1, buf, KILL_LEN, 1, 1, 0, 0, &p);
	if (ret) {
		EXPECT_EQ(-ECONNRESET, ret);
	} else {
		ASSERT_EQ(0, kp_complete(&r, &p, &c, 5000))
			TH_LOG("receive from a dead rank hangs");
		EXPECT_EQ(-ECONNRESET, c.error);
	}
	check_rank_gone(_metadata, &r, 1);
	kp_ep_close(&r);
}

/* ---------------- 14. close with operations in flight ---------------- */

TEST_F_TIMEOUT(xp, close_with_posted_ops, 60)
{
	struct kp_ep e[3];
	struct kp_ep *a = &e[0], *x = &e[1], *c3 = &e[2];
	size_t big;
	unsigned char *bx1, *bx2, *bm, *ba, sm[16];
	struct kprog_post p, pa;
	struct kprog_probe pr;
	struct kprog_cqe c;
	long long t0;
	int ret;

	ASSERT_EQ(0, kp_job_open(e, 3, 3, kp_key(), 0, 0));
	big = kp_rndv_size(a, 1 << 20);
	bx1 = kp_alloc(big);
	bx2 = kp_alloc(big);
	bm = kp_alloc(big);
	ba = kp_alloc(big);
	ASSERT_NE(NULL, ba);
	kp_fill(bm, big, 4, 0);
	/* X: two unmatched receives, two unexpected sends (rndv, sync) */
	ASSERT_EQ(0, kp_recv(x, 1, bx1, big, 0, 1, 0, 0, &p));
	ASSERT_EQ(0, kp_recv(x, 2, bx2, big, KPROG_ANY_SOURCE, 2, 0, 0, &p));
	ASSERT_EQ(0, kp_send(x, 3, bm, big, 0, 3, 0, 0, &p));
	ASSERT_EQ(0, p.done);
	ASSERT_EQ(0, kp_send(x, 4, sm, sizeof(sm), 2, 4, 0, KPROG_SEND_SYNC,
			     &p));
	ASSERT_EQ(0, p.done);
	/* A waits for something from X that never comes */
	ASSERT_EQ(0, kp_recv(a, 60, ba, big, 1, 6, 0, 0, &pa));
	ASSERT_EQ(0, kp_probe(a, 0, 1, 3, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);
	ASSERT_EQ(0, kp_probe(c3, 0, 1, 4, 0, 0, &pr));
	EXPECT_EQ(1, pr.found);

	t0 = kp_now_ms();
	kp_ep_close(x);
	EXPECT_GT(5000, kp_now_ms() - t0) TH_LOG("close took too long");

	ASSERT_EQ(0, kp_wait_cqe(a, 60, &c, 5000))
		TH_LOG("receive from a closed rank never completed");
	EXPECT_EQ(-ECONNRESET, c.error);
	/* X's unexpected sends were cancelled with it */
	ASSERT_EQ(0, kp_probe(a, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0,
			      &pr));
	EXPECT_EQ(0, pr.found);
	ASSERT_EQ(0, kp_probe(c3, 0, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0,
			      &pr));
	EXPECT_EQ(0, pr.found);
	ret = kp_recv(a, 61, ba, big, 1, 3, 0, 0, &p);
	if (ret) {
		EXPECT_EQ(-ECONNRESET, ret);
	} else {
		ASSERT_EQ(0, kp_complete(a, &p, &c, 5000));
		EXPECT_EQ(-ECONNRESET, c.error);
	}
	EXPECT_EQ(-1, kp_check_byte(ba, big, 0));
	check_rank_gone(_metadata, a, 1);
	check_rank_gone(_metadata, c3, 1);
	kp_job_close(e, 3);
}

/* close while a matched 64 MiB transfer runs, in both directions */
static void close_in_flight(struct __test_metadata *_metadata, int x_sends)
{
	struct kp_ep e[2];
	struct kp_ep *a = &e[0], *x = &e[1];
	unsigned char *ba = kp_alloc(KILL_LEN), *bx = kp_alloc(KILL_LEN);
	struct kprog_post px, pa;
	struct kprog_cqe c;
	int ret;

	ASSERT_NE(NULL, ba);
	ASSERT_NE(NULL, bx);
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	kp_fill(x_sends ? bx : ba, KILL_LEN, 6, 0);
	if (x_sends) {
		ASSERT_EQ(0, kp_send(x, 1, bx, KILL_LEN, 0, 1, 0, 0, &px));
		ASSERT_EQ(0, kp_recv(a, 2, ba, KILL_LEN, 1, 1, 0, 0, &pa));
	} else {
		ASSERT_EQ(0, kp_recv(x, 1, bx, KILL_LEN, 0, 1, 0, 0, &px));
		ASSERT_EQ(0, kp_send(a, 2, ba, KILL_LEN, 1, 1, 0, 0, &pa));
	}
	kp_ep_close(x);
	ret = kp_complete(a, &pa, &c, 20000);
	ASSERT_EQ(0, ret) TH_LOG("peer's matched op did not complete");
	EXPECT_TRUE(c.error == 0 || c.error == -ECONNRESET)
		TH_LOG("error %d", c.error);
	if (c.error == 0) {
		TH_LOG("copy finished before the close");
		EXPECT_EQ(KILL_LEN, c.bytes);
		if (x_sends)
			EXPECT_EQ(-1, kp_check(ba, KILL_LEN, 6, 0));
	}
	check_rank_gone(_metadata, a, 1);
	kp_ep_close(a);
}

TEST_F_TIMEOUT(xp, close_sender_in_flight, 60)
{
	close_in_flight(_metadata, 1);
}

TEST_F_TIMEOUT(xp, close_receiver_in_flight, 60)
{
	close_in_flight(_metadata, 0);
}

/*
 * An eager send that completed at post has been delivered as far as the
 * sender knows (MPI_Send returned): it must still be received after the
 * sender closes its endpoint.
 */
TEST_F_TIMEOUT(xp, eager_send_survives_sender_close, 30)
{
	struct kp_ep e[2];
	unsigned char m[100], b[100];
	struct kprog_post p;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	kp_fill(m, sizeof(m), 8, 0);
	ASSERT_EQ(0, kp_send(&e[1], 1, m, sizeof(m), 0, 5, 0, 0, &p));
	ASSERT_EQ(1, p.done);
	kp_ep_close(&e[1]);
	memset(m, 0, sizeof(m));
	ASSERT_EQ(0, kp_recv(&e[0], 2, b, sizeof(b), 1, 5, 0, 0, &p));
	ASSERT_EQ(0, kp_complete(&e[0], &p, &c, 5000));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(sizeof(b), c.bytes);
	EXPECT_EQ(-1, kp_check(b, sizeof(b), 8, 0));
	kp_ep_close(&e[0]);
}


/* ---------------- fork after posting (copy-on-write) ---------------- */

/*
 * A receive posted, then the process forks (its pages become
 * copy-on-write): the data must land in the poster's memory, and the
 * child's copy must not see it.
 */
TEST_F_TIMEOUT(xp, fork_after_posting_recv, 60)
{
	struct kp_ep e[2];
	size_t len;
	unsigned char *m, *b;
	struct kprog_post ps, pr;
	struct kprog_cqe c;
	struct chan ch;
	pid_t pid;
	int st;

	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	len = kp_rndv_size(&e[0], 1 << 20);
	m = kp_alloc(len);
	b = kp_alloc(len);
	ASSERT_NE(NULL, b);
	kp_fill(m, len, 221, 0);
	memset(b, 0, len);
	ASSERT_EQ(0, kp_recv(&e[0], 1, b, len, 1, 1, 0, 0, &pr));
	pid = chan_fork(&ch);
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* wait until the parent has its data, then look at ours */
		if (kp_pipe_get(ch.p2c[0], 20000) != 'd')
			_exit(2);
		_exit(kp_check_byte(b, len, 0) == -1 ? 0 : 3);
	}
	ASSERT_EQ(0, kp_send(&e[1], 2, m, len, 0, 1, 0, 0, &ps));
	ASSERT_EQ(0, kp_complete(&e[0], &pr, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(len, c.bytes);
	EXPECT_EQ(-1, kp_check(b, len, 221, 0))
		TH_LOG("data went to the child's copy, not the poster's");
	kp_pipe_put(ch.p2c[1], 'd');
	st = kp_child_wait(pid, 20000);
	EXPECT_EQ(0, st) TH_LOG("child's copy-on-write page was written");
	ASSERT_EQ(0, kp_complete(&e[1], &ps, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	kp_job_close(e, 2);
}


/*
 * After close() returns, the kernel no longer touches the memory of the
 * closed endpoint's operations: close withdraws everything, no completion
 * will ever say "done with this buffer", so user space must be able to
 * reuse it at once. A receive buffer rewritten right after close() must
 * keep what was written.
 */
TEST_F_TIMEOUT(xp, no_write_into_buffer_after_close, 120)
{
	size_t len = 32u << 20;
	unsigned char *a = kp_alloc(len), *b = kp_alloc(len);
	int iter, bad_iters = 0, first_val = -1;
	long first_bad = -1, nbad = 0, i;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	memset(a, 0xab, len);
	for (iter = 0; iter < 12; iter++) {
		struct kprog_post ps, pr;
		struct kprog_cqe c;
		struct kp_ep e[2];
		long bad;

		ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
		memset(b, 0x11, len);
		ASSERT_EQ(0, kp_send(&e[0], 1, a, len, 1, 1, 0, 0, &ps));
		ASSERT_EQ(0, kp_recv(&e[1], 2, b, len, 0, 1, 0, 0, &pr));
		usleep((iter % 6) * 1000);
		kp_ep_close(&e[1]);
		memset(b, 0, len);
		usleep(200 * 1000);
		bad = kp_check_byte(b, len, 0);
		if (bad >= 0) {
			bad_iters++;
			for (i = bad; i < (long)len; i++)
				nbad += b[i] != 0;
			if (first_bad < 0) {
				first_bad = bad;
				first_val = b[bad];
			}
		}
		ASSERT_EQ(0, kp_complete(&e[0], &ps, &c, 20000));
		EXPECT_TRUE(c.error == 0 || c.error == -ECONNRESET)
			TH_LOG("send error %d", c.error);
		kp_ep_close(&e[0]);
	}
	EXPECT_EQ(0, bad_iters)
		TH_LOG("%d of 12 closes: buffer written after close() returned (%ld bytes in all; first at offset %ld, value 0x%02x)",
		       bad_iters, nbad, first_bad, first_val);
}


/*
 * The sending side of the same rule: a send buffer rewritten right after
 * its endpoint was closed must not reach a receiver that is told the
 * transfer succeeded. The receiver sees either -ECONNRESET or the data as
 * it was before close().
 */
TEST_F_TIMEOUT(xp, no_read_of_send_buffer_after_close, 120)
{
	size_t len = 256 * 1024;	/* about one copy step */
	unsigned char *a = kp_alloc(len), *b = kp_alloc(len);
	int iter, mixed = 0, ok = 0, reset = 0;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	for (iter = 0; iter < 40; iter++) {
		struct kprog_post ps, pr;
		struct kprog_cqe c;
		struct kp_ep e[2];

		ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
		ASSERT_LT(kp_eager(&e[0]), len);
		memset(a, 0xab, len);
		memset(b, 0, len);
		ASSERT_EQ(0, kp_send(&e[1], 1, a, len, 0, 1, 0, 0, &ps));
		ASSERT_EQ(0, kp_recv(&e[0], 2, b, len, 1, 1, 0, 0, &pr));
		kp_ep_close(&e[1]);
		memset(a, 0xcd, len);
		ASSERT_EQ(0, kp_complete(&e[0], &pr, &c, 20000));
		if (c.error == -ECONNRESET) {
			reset++;
		} else {
			EXPECT_EQ(0, c.error);
			if (kp_check_byte(b, len, 0xab) >= 0)
				mixed++;
			else
				ok++;
		}
		kp_ep_close(&e[0]);
	}
	TH_LOG("%d reset, %d intact, %d with bytes written after close", reset,
	       ok, mixed);
	EXPECT_EQ(0, mixed);
}

TEST_HARNESS_MAIN
