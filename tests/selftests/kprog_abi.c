// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests: device open, VERSION, JOIN, mmap of the ring, and bad
 * arguments to every ioctl (NULL/unmapped pointers, bad flags, tags,
 * ranks, iov counts, overflowing ranges, unmapped buffers, max_ops).
 */
#include <limits.h>
#include <stddef.h>
#include <grp.h>
#include <linux/kprog_bench.h>
#include "kprog_test.h"

/* Layout is part of the ABI (the ring is shared memory). */
TEST(abi_layout)
{
	ASSERT_EQ(32, sizeof(struct kprog_cqe));
	ASSERT_EQ(128, sizeof(struct kprog_ring_hdr));
	ASSERT_EQ(0, offsetof(struct kprog_ring_hdr, head));
	ASSERT_EQ(64, offsetof(struct kprog_ring_hdr, tail));
	ASSERT_GE(KPROG_RING_CQES_OFFSET, sizeof(struct kprog_ring_hdr));
	ASSERT_EQ(0, sizeof(struct kprog_post) % 8);
	ASSERT_EQ(0, sizeof(struct kprog_probe) % 8);
	ASSERT_EQ(0, sizeof(struct kprog_join) % 8);
	/* the benchmark module's one call (kprog_bench.ko), same rule */
	ASSERT_EQ(24, sizeof(struct kprog_bench_irq_wait));
	ASSERT_EQ(8, offsetof(struct kprog_bench_irq_wait, timeout_ns));
	ASSERT_EQ(16, offsetof(struct kprog_bench_irq_wait, seq));
}

TEST(version)
{
	__u32 v = 0xffffffff;
	int fd = kp_open();

	ASSERT_LE(0, fd) TH_LOG("open %s: %s", KPROG_DEVICE, kp_strerr(fd));
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_VERSION, &v));
	ASSERT_EQ(KPROG_ABI_VERSION, v);
	/* still answers after JOIN */
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, NULL));
	v = 0;
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_VERSION, &v));
	ASSERT_EQ(KPROG_ABI_VERSION, v);
	close(fd);
}

TEST(join_wrong_abi_version)
{
	static const __u32 bad[] = { 0, KPROG_ABI_VERSION + 1, 0xffffffff };
	struct kprog_join j = { 0 };
	__u64 key = kp_key();
	unsigned int i;
	int fd = kp_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		kp_join_init(&j, key, 0, 2, 0, 0);
		j.abi_version = bad[i];
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_JOIN, &j));
		EXPECT_EQ(EPROTONOSUPPORT, errno) TH_LOG("abi_version %u", bad[i]);
	}
	/* nothing changed: the fd can still join, and rank 0 is free */
	ASSERT_EQ(0, kp_join_fd(fd, key, 0, 2, 0, 0, NULL));
	close(fd);
}

TEST(join_twice_eisconn)
{
	__u64 key = kp_key(), key2 = kp_key();
	int fd = kp_open(), fd2;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kp_join_fd(fd, key, 0, 2, 0, 0, NULL));
	EXPECT_EQ(-EISCONN, kp_join_fd(fd, key, 1, 2, 0, 0, NULL));
	EXPECT_EQ(-EISCONN, kp_join_fd(fd, key2, 0, 2, 0, 0, NULL));
	EXPECT_EQ(-EISCONN, kp_join_fd(fd, key, 0, 2, 0, 0, NULL));
	/* the refused second JOIN did not take rank 1 */
	fd2 = kp_open();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, kp_join_fd(fd2, key, 1, 2, 0, 0, NULL));
	/* nor create job key2 with size 2 */
	close(fd2);
	fd2 = kp_open();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, kp_join_fd(fd2, key2, 0, 3, 0, 0, NULL));
	close(fd2);
	close(fd);
}

TEST(ioctl_before_join_ebadfd)
{
	char buf[64];
	struct kprog_post p;
	struct kprog_probe pr;
	struct kprog_cancel c = { .req_id = 1 };
	struct kprog_wait w = { .timeout_ns = 0 };
	int fd = kp_open();

	ASSERT_LE(0, fd);
	memset(&p, 0, sizeof(p));
	p.req_id = 1;
	p.addr = (__u64)(uintptr_t)buf;
	p.len = sizeof(buf);
	p.peer = 0;
	p.tag = 0;
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_SEND, &p));
	EXPECT_EQ(EBADFD, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_RECV, &p));
	EXPECT_EQ(EBADFD, errno);
	memset(&pr, 0, sizeof(pr));
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_PROBE, &pr));
	EXPECT_EQ(EBADFD, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_CANCEL, &c));
	EXPECT_EQ(EBADFD, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(EBADFD, errno);
	/* VERSION and JOIN work */
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, NULL));
	close(fd);
}

/*
 * Number 7 was IRQ_WAIT, the interrupt source's, which moved to
 * kprog_bench.ko (/dev/kprog_bench): here it is unknown, ENOTTY, before
 * JOIN and after, also through the 32-bit compat path, and its argument
 * is neither read nor written.
 */
TEST(retired_irq_wait_is_enotty)
{
	const unsigned int old = _IOC(_IOC_READ | _IOC_WRITE, KPROG_IOC_MAGIC,
				      7, 24);
	unsigned char arg[24], ref[24];
	int fd = kp_open(), i;

	ASSERT_LE(0, fd);
	memset(arg, 0x5a, sizeof(arg));
	memcpy(ref, arg, sizeof(ref));
	for (i = 0; i < 2; i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, old, arg));
		EXPECT_EQ(ENOTTY, errno) TH_LOG("%s JOIN", i ? "after" : "before");
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, old, NULL));
		EXPECT_EQ(ENOTTY, errno);
		EXPECT_EQ(0, memcmp(arg, ref, sizeof(arg)));
		if (!i)
			ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0,
						NULL));
	}
	close(fd);
}

/*
 * Before JOIN only VERSION, GET_INFO and JOIN do anything: every other
 * command number of the magic, in every direction and with any of the
 * ABI's sizes, fails with EBADFD (a call of an endpoint) or ENOTTY (no
 * such call), and so does mmap; the fd can still join afterwards.
 */
TEST(nothing_but_version_info_join_before_join)
{
	static unsigned char arg[4096];
	static const unsigned int dirs[] = {
		_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	const unsigned int sizes[] = {
		0, 4, 8, 16, 24, 32, KPROG_WAIT_V1_SIZE, KPROG_JOIN_V1_SIZE,
		sizeof(struct kprog_post), sizeof(struct kprog_probe),
		sizeof(struct kprog_wait), sizeof(struct kprog_join),
		sizeof(struct kprog_info), sizeof(struct kprog_chan_open),
		sizeof(struct kprog_net_conn), sizeof(struct kprog_coll),
		sizeof(struct kprog_recv_batch),
	};
	const unsigned int allowed[] = {
		KPROG_IOC_VERSION, KPROG_IOC_GET_INFO, KPROG_IOC_JOIN,
		_IOC(_IOC_READ | _IOC_WRITE, KPROG_IOC_MAGIC, 1,
		     KPROG_JOIN_V1_SIZE),
	};
	unsigned int nr, d, z, k, cmd;
	int fd = kp_open(), badfd = 0, bad = 0;
	__u32 v = 0;
	void *p;

	ASSERT_LE(0, fd);
	for (nr = 0; nr < 64; nr++)
		for (d = 0; d < ARRAY_SIZE(dirs); d++)
			for (z = 0; z < ARRAY_SIZE(sizes); z++) {
				for (k = 0; k < z; k++)	/* each size once */
					if (sizes[k] == sizes[z])
						break;
				if (k < z)
					continue;
				cmd = _IOC(dirs[d], KPROG_IOC_MAGIC, nr,
					   sizes[z]);
				for (k = 0; k < ARRAY_SIZE(allowed); k++)
					if (cmd == allowed[k])
						break;
				if (k < ARRAY_SIZE(allowed))
					continue;
				memset(arg, 0, sizeof(arg));
				errno = 0;
				if (ioctl(fd, cmd, arg) == 0 ||
				    (errno != EBADFD && errno != ENOTTY)) {
					bad++;
					TH_LOG("nr %u dir %u size %u: %s", nr,
					       dirs[d], sizes[z],
					       strerror(errno));
				}
				badfd += errno == EBADFD;
			}
	EXPECT_EQ(0, bad);
	/*
	 * SEND RECV PROBE CANCEL WAIT WAIT_V1 CHAN_OPEN CHAN_DRAIN KICK
	 * NET_CONN COLL RECV_BATCH
	 */
	EXPECT_EQ(12, badfd);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EBADFD, errno);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	EXPECT_EQ(0, ioctl(fd, KPROG_IOC_VERSION, &v));
	EXPECT_EQ(KPROG_ABI_VERSION, v);
	EXPECT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, NULL));
	close(fd);
}

TEST(join_rank_out_of_range)
{
	__u64 key = kp_key();
	int fd = kp_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, kp_join_fd(fd, key, 2, 2, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(fd, key, 5, 2, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(fd, key, 0xffffffff, 2, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(fd, key, 0, 0, 0, 0, NULL));
	/* the refused JOINs created no job: size 3 is accepted for the key */
	EXPECT_EQ(0, kp_join_fd(fd, key, 2, 3, 0, 0, NULL));
	close(fd);
}

TEST(join_rank_taken)
{
	__u64 key = kp_key();
	int a = kp_open(), b = kp_open(), c = kp_open();

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, kp_join_fd(a, key, 0, 3, 0, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, kp_join_fd(b, key, 0, 3, 0, 0, NULL));
	EXPECT_EQ(0, kp_join_fd(b, key, 1, 3, 0, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, kp_join_fd(c, key, 1, 3, 0, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, kp_join_fd(c, key, 0, 3, 0, 0, NULL));
	EXPECT_EQ(0, kp_join_fd(c, key, 2, 3, 0, 0, NULL));
	close(a);
	close(b);
	close(c);
}

TEST(join_size_mismatch)
{
	__u64 key = kp_key();
	int a = kp_open(), b = kp_open();

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, kp_join_fd(a, key, 0, 3, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(b, key, 1, 4, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(b, key, 1, 2, 0, 0, NULL));
	EXPECT_EQ(0, kp_join_fd(b, key, 1, 3, 0, 0, NULL));
	close(a);
	close(b);
}

TEST(join_eager_limit)
{
	long long def = kp_param("eager_limit");
	__u64 key = kp_key(), key2 = kp_key();
	struct kprog_join j = { 0 };
	__u32 lim;
	int a = kp_open(), b = kp_open(), c = kp_open(), d = kp_open();

	ASSERT_LT(1, def) TH_LOG("eager_limit parameter unreadable or < 2");
	ASSERT_LE(0, a);
	ASSERT_LE(0, d);
	/* 0 = module default */
	ASSERT_EQ(0, kp_join_fd(d, key2, 0, 1, 0, 0, &j));
	EXPECT_EQ(def, j.eager_limit);

	lim = def / 2;
	ASSERT_EQ(0, kp_join_fd(a, key, 0, 3, 0, lim, &j));
	EXPECT_EQ(lim, j.eager_limit);
	/* a different limit is refused, 0 or the same one accepted */
	EXPECT_EQ(-EINVAL, kp_join_fd(b, key, 1, 3, 0, lim + 1, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(b, key, 1, 3, 0, def, NULL));
	ASSERT_EQ(0, kp_join_fd(b, key, 1, 3, 0, 0, &j));
	EXPECT_EQ(lim, j.eager_limit);
	ASSERT_EQ(0, kp_join_fd(c, key, 2, 3, 0, lim, &j));
	EXPECT_EQ(lim, j.eager_limit);
	close(a);
	close(b);
	close(c);
	close(d);
}

TEST(join_out_fields)
{
	long long ring = kp_param("ring_entries");
	long long iov = kp_param("max_iov");
	long long ops = kp_param("max_ops");
	struct kprog_join j = { 0 };
	int fd = kp_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, &j));
	ASSERT_NE(0, j.ring_entries);
	EXPECT_EQ(0, j.ring_entries & (j.ring_entries - 1))
		TH_LOG("ring_entries %u not a power of two", j.ring_entries);
	EXPECT_LE(KPROG_RING_CQES_OFFSET + (__u64)j.ring_entries * 32,
		  j.ring_bytes);
	if (ring > 0 && !(ring & (ring - 1))) {
		EXPECT_EQ(ring, j.ring_entries);
	} else {
		EXPECT_LE(ring, j.ring_entries);
	}
	EXPECT_EQ(iov, j.max_iov);
	EXPECT_EQ(ops, j.max_ops);
	EXPECT_LT(0, j.max_iov);
	EXPECT_LT(0, j.max_ops);
	close(fd);
}

TEST(join_bad_flags)
{
	__u64 key = kp_key();
	int fd = kp_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, kp_join_fd(fd, key, 0, 1, 1U << 5, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_join_fd(fd, key, 0, 1, 1U << 31, 0, NULL));
	EXPECT_EQ(0, kp_join_fd(fd, key, 0, 1, 0, 0, NULL));
	close(fd);
}

static void check_unknown_ioctls(struct __test_metadata *_metadata, int fd)
{
	unsigned long bad[] = {
		_IO(KPROG_IOC_MAGIC, 0x7f),
		_IOWR(KPROG_IOC_MAGIC, 7, struct kprog_wait),
		_IOWR(KPROG_IOC_MAGIC, 1, __u32),	/* JOIN nr, wrong size */
		_IOR('x', 1, int),
		0,
	};
	char arg[256];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(arg, 0, sizeof(arg));
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, bad[i], arg));
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd 0x%lx", bad[i]);
	}
}

TEST(unknown_ioctl_enotty)
{
	int fd = kp_open();

	ASSERT_LE(0, fd);
	check_unknown_ioctls(_metadata, fd);
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, NULL));
	check_unknown_ioctls(_metadata, fd);
	close(fd);
}

TEST(join_size_above_max_e2big)
{
	long long max = kp_param("max_job_size");
	__u64 key = kp_key();
	int fd = kp_open();

	ASSERT_LT(0, max) TH_LOG("max_job_size parameter unreadable");
	ASSERT_LE(0, fd);
	EXPECT_EQ(-E2BIG, kp_join_fd(fd, key, 0, max + 1, 0, 0, NULL));
	EXPECT_EQ(-E2BIG, kp_join_fd(fd, key, 0, 0xffffffff, 0, 0, NULL));
	EXPECT_EQ(-E2BIG, kp_join_fd(fd, key, max, max + 1, 0, 0, NULL));
	/* exactly max_job_size is allowed */
	EXPECT_EQ(0, kp_join_fd(fd, key, max - 1, max, 0, 0, NULL));
	close(fd);
}

TEST(mmap_ring)
{
	struct kprog_join j = { 0 };
	struct kprog_ring_hdr *h;
	void *m;
	int fd = kp_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, &j));
	m = mmap(NULL, j.ring_bytes + 4096, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	if (m != MAP_FAILED)
		munmap(m, j.ring_bytes + 4096);
	m = mmap(NULL, 2 * j.ring_bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	if (m != MAP_FAILED)
		munmap(m, 2 * j.ring_bytes);

	m = mmap(NULL, j.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m) TH_LOG("mmap ring_bytes: %s", strerror(errno));
	h = m;
	EXPECT_EQ(0, h->head);
	EXPECT_EQ(0, h->tail);
	EXPECT_EQ(0, h->overflow);
	EXPECT_EQ(j.ring_entries, h->entries);
	/* user space owns head */
	h->head = 0;
	munmap(m, j.ring_bytes);
	close(fd);
}


/* A JOIN whose argument cannot be written back takes no rank. */
TEST(join_readonly_arg_changes_nothing)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct kprog_join *j = mmap(NULL, pg, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__u64 key = kp_key();
	int fd = kp_open(), fd2 = kp_open();

	ASSERT_NE(MAP_FAILED, j);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	kp_join_init(j, key, 0, 2, 0, 0);
	ASSERT_EQ(0, mprotect(j, pg, PROT_READ));
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_JOIN, j));
	EXPECT_EQ(EFAULT, errno);
	/* rank 0 is still free, and fd can still join */
	EXPECT_EQ(0, kp_join_fd(fd2, key, 0, 2, 0, 0, NULL));
	EXPECT_EQ(0, kp_join_fd(fd, key, 1, 2, 0, 0, NULL));
	munmap(j, pg);
	close(fd);
	close(fd2);
}

/* The ring is shared memory: a private (copy-on-write) mapping is refused. */
TEST(mmap_private_refused)
{
	struct kprog_join j = { 0 };
	void *m;
	int fd = kp_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, &j));
	m = mmap(NULL, j.ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
		 0);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(EINVAL, errno);
	if (m != MAP_FAILED)
		munmap(m, j.ring_bytes);
	/* a nonzero offset is refused too */
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4096);
	EXPECT_EQ(MAP_FAILED, m);
	if (m != MAP_FAILED)
		munmap(m, 4096);
	close(fd);
}

TEST(mmap_before_join_fails)
{
	void *m;
	int fd = kp_open();

	ASSERT_LE(0, fd);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, m);
	if (m != MAP_FAILED)
		munmap(m, 4096);
	close(fd);
}

/* ---- bad arguments on a joined job of 2 ---- */

FIXTURE(job2) {
	struct kp_ep e[2];
	__u64 key;
};

FIXTURE_SETUP(job2)
{
	int ret;

	self->key = kp_key();
	ret = kp_job_open(self->e, 2, 2, self->key, 0, 0);
	ASSERT_EQ(0, ret) TH_LOG("job of 2: %s", kp_strerr(ret));
}

FIXTURE_TEARDOWN(job2)
{
	kp_job_close(self->e, 2);
}

/* The message queue of rank 0 on context @ctx holds nothing. */
static int nothing_queued(struct kp_ep *e, __u32 ctx)
{
	struct kprog_probe pr;

	if (kp_probe(e, ctx, KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0, &pr))
		return 0;
	return pr.found == 0;
}

TEST_F_TIMEOUT(job2, null_args_efault, 30)
{
	unsigned long cmds[] = { KPROG_IOC_SEND, KPROG_IOC_RECV,
				 KPROG_IOC_PROBE, KPROG_IOC_CANCEL,
				 KPROG_IOC_WAIT, KPROG_IOC_VERSION };
	unsigned int i;
	int fd = kp_open();

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->e[1].fd, cmds[i], NULL));
		EXPECT_EQ(EFAULT, errno) TH_LOG("cmd 0x%lx", cmds[i]);
	}
	ASSERT_LE(0, fd);
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_JOIN, NULL));
	EXPECT_EQ(EFAULT, errno);
	close(fd);
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
}

TEST_F_TIMEOUT(job2, unmapped_args_efault, 30)
{
	unsigned long cmds[] = { KPROG_IOC_SEND, KPROG_IOC_RECV,
				 KPROG_IOC_PROBE, KPROG_IOC_CANCEL,
				 KPROG_IOC_WAIT, KPROG_IOC_VERSION };
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kprog_post *straddle;
	unsigned int i;
	int fd = kp_open();

	ASSERT_NE(MAP_FAILED, m);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, munmap(m + pg, pg));
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->e[1].fd, cmds[i], m + pg));
		EXPECT_EQ(EFAULT, errno) TH_LOG("cmd 0x%lx", cmds[i]);
	}
	errno = 0;
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_JOIN, m + pg));
	EXPECT_EQ(EFAULT, errno);
	/* a post whose second half lies in the unmapped page */
	straddle = (struct kprog_post *)(m + pg - 16);
	memset(straddle, 0, 16);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->e[1].fd, KPROG_IOC_SEND, straddle));
	EXPECT_EQ(EFAULT, errno);
	/* kernel-space address */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->e[1].fd, KPROG_IOC_RECV,
			    (void *)0xffffffff81000000ul));
	EXPECT_EQ(EFAULT, errno);
	munmap(m, pg);
	close(fd);
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
}

TEST_F_TIMEOUT(job2, bad_flags_einval, 30)
{
	char buf[64] = "x";
	struct kprog_probe pr;

	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 0, 0, 0, 1U << 20,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 0, 0, 0, 1U << 31,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, buf, 8, 1, 0, 0, 1U << 20,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_probe(&self->e[0], 0, 1, 0, 1U << 20, 0, &pr));
	EXPECT_EQ(-EINVAL, kp_probe(&self->e[0], 0, 1, 0, 1U << 31, 0, &pr));
	/* nothing was posted by the refused calls */
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 2));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[1], 1));
}

/* A receive flag on a send and a send flag on a receive are bad flags. */
TEST_F_TIMEOUT(job2, cross_flags_einval, 30)
{
	char buf[64] = "x";

	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 0, 0, 0,
				   KPROG_RECV_MESSAGE, NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, buf, 8, 1, 0, 0,
				   KPROG_SEND_SYNC, NULL));
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
}

TEST_F_TIMEOUT(job2, bad_tag_einval, 30)
{
	char buf[64] = "x";
	struct kprog_probe pr;

	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 0, -1, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 0, -2, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 0, INT_MIN, 0, 0,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, buf, 8, 1, -2, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, buf, 8, 1, INT_MIN, 0, 0,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_probe(&self->e[0], 0, 1, -2, 0, 0, &pr));
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 2));
}

TEST_F_TIMEOUT(job2, bad_peer_einval, 30)
{
	char buf[64] = "x";
	struct kprog_probe pr;

	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 2, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, 1000, 0, 0, 0,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, KPROG_ANY_SOURCE, 0,
				   0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, buf, 8, INT_MIN, 0, 0, 0,
				   NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, buf, 8, 2, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, buf, 8, -2, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_probe(&self->e[0], 0, 2, 0, 0, 0, &pr));
	EXPECT_EQ(-EINVAL, kp_probe(&self->e[0], 0, -2, 0, 0, 0, &pr));
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 2));
}

TEST_F_TIMEOUT(job2, iov_count_above_max_einval, 30)
{
	__u32 max = self->e[0].j.max_iov;
	struct kprog_iov *iov;
	struct kprog_post ps, pr;
	struct kprog_cqe cs, cr;
	unsigned char *sb, *rb;
	__u32 i;

	ASSERT_LT(0, max);
	ASSERT_GE(4096, max) TH_LOG("max_iov %u too large for this test", max);
	iov = calloc(max + 1, sizeof(*iov));
	sb = malloc(max + 1);
	rb = calloc(1, max + 1);
	ASSERT_NE(NULL, iov);
	for (i = 0; i <= max; i++) {
		sb[i] = (unsigned char)(i * 7 + 1);
		iov[i].base = (__u64)(uintptr_t)&sb[i];
		iov[i].len = 1;
	}
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, iov, max + 1, 0, 3, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_EQ(-EINVAL, kp_send(&self->e[1], 1, iov, 1ull << 40, 0, 3, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_EQ(-EINVAL, kp_recv(&self->e[0], 2, iov, max + 1, 1, 3, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));

	/* exactly max_iov segments of one byte each are fine */
	ASSERT_EQ(0, kp_send(&self->e[1], 1, iov, max, 0, 3, 0,
			     KPROG_POST_IOV, &ps));
	ASSERT_EQ(0, kp_recv(&self->e[0], 2, rb, max + 1, 1, 3, 0, 0, &pr));
	ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &cr, KP_TMO_MS));
	ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &cs, KP_TMO_MS));
	EXPECT_EQ(0, cr.error);
	EXPECT_EQ(max, cr.bytes);
	EXPECT_EQ(0, memcmp(sb, rb, max));
	EXPECT_EQ(0, rb[max]);
	EXPECT_EQ(0, cs.error);
	free(iov);
	free(sb);
	free(rb);
}

TEST_F_TIMEOUT(job2, iov_array_unmapped_efault, 30)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kprog_iov *iov;
	char buf[64];

	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, munmap(m + pg, pg));
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, m + pg, 2, 0, 0, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_EQ(-EFAULT, kp_recv(&self->e[0], 2, m + pg, 2, 1, 0, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, NULL, 2, 0, 0, 0,
				   KPROG_POST_IOV, NULL));
	/* array whose second entry is in the unmapped page */
	iov = (struct kprog_iov *)(m + pg - sizeof(*iov));
	iov->base = (__u64)(uintptr_t)buf;
	iov->len = 8;
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, iov, 2, 0, 0, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_EQ(-EFAULT, kp_recv(&self->e[0], 2, iov, 2, 1, 0, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 2));
	munmap(m, pg);
}

/* An eager send reads the buffer at post: EFAULT, nothing is queued. */
TEST_F_TIMEOUT(job2, eager_send_unmapped_efault, 30)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kprog_iov iov[2];

	ASSERT_LE(64, kp_eager(&self->e[1]));
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, munmap(m + pg, pg));
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, m + pg, 64, 0, 0, 0, 0,
				   NULL));
	/* straddling the end of the mapping */
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, m + pg - 32, 64, 0, 0, 0,
				   0, NULL));
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, (void *)8, 16, 0, 0, 0, 0,
				   NULL));
	/* one iov segment unreadable */
	iov[0].base = (__u64)(uintptr_t)m;
	iov[0].len = 16;
	iov[1].base = (__u64)(uintptr_t)(m + pg);
	iov[1].len = 16;
	EXPECT_EQ(-EFAULT, kp_send(&self->e[1], 1, iov, 2, 0, 0, 0,
				   KPROG_POST_IOV, NULL));
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	munmap(m, pg);
}

/*
 * addr + len wrapping around the address space is never a valid buffer:
 * refused at post (EINVAL or EFAULT), for sends of any size and receives.
 */
TEST_F_TIMEOUT(job2, range_overflow_refused, 30)
{
	char buf[64];
	__u64 a = (__u64)(uintptr_t)buf;
	__u64 wrap = ~0ull - a + 64;	/* a + wrap overflows */
	struct kprog_iov iov[1] = { { .base = a, .len = wrap } };
	struct kprog_post p;
	int ret;

	ret = kp_send(&self->e[1], 1, buf, wrap, 0, 0, 0, 0, &p);
	EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
		TH_LOG("wrapping send: %d", ret);
	ret = kp_send(&self->e[1], 2, buf, ~0ull, 0, 0, 0, 0, &p);
	EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
		TH_LOG("len ~0 send: %d", ret);
	ret = kp_recv(&self->e[0], 3, buf, wrap, 1, 0, 0, 0, &p);
	EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
		TH_LOG("wrapping recv: %d", ret);
	ret = kp_recv(&self->e[0], 4, buf, ~0ull, 1, 0, 0, 0, &p);
	EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
		TH_LOG("len ~0 recv: %d", ret);
	ret = kp_send(&self->e[1], 5, iov, 1, 0, 0, 0, KPROG_POST_IOV, &p);
	EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
		TH_LOG("wrapping iov send: %d", ret);
	ret = kp_recv(&self->e[0], 6, iov, 1, 1, 0, 0, KPROG_POST_IOV, &p);
	EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
		TH_LOG("wrapping iov recv: %d", ret);
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 3));
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 6));
}

/*
 * A huge send of a buffer that is not there (kernel half of the address
 * space, or beyond user space): never a success. Either refused at post,
 * or, if accepted as rendezvous, the transfer fails.
 */
TEST_F_TIMEOUT(job2, huge_send_never_succeeds, 30)
{
	static const __u64 addrs[] = { 0xffff888000000000ull, 0x1000ull };
	unsigned char *rb = kp_alloc(65536);
	unsigned int i;

	ASSERT_NE(NULL, rb);
	for (i = 0; i < ARRAY_SIZE(addrs); i++) {
		struct kprog_post ps, pr;
		struct kprog_cqe cs, cr;
		int ret;

		ret = kp_post(&self->e[1], KPROG_IOC_SEND, 10 + i,
			      (void *)(uintptr_t)addrs[i], 1ull << 46, 0, 0,
			      7, 0, &ps);
		if (ret) {
			EXPECT_TRUE(ret == -EINVAL || ret == -EFAULT)
				TH_LOG("addr %llx: %d", addrs[i], ret);
			continue;
		}
		EXPECT_EQ(0, ps.done);
		ASSERT_EQ(0, kp_recv(&self->e[0], 20 + i, rb, 65536, 1, 7, 0,
				     0, &pr));
		ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &cr, KP_TMO_MS));
		ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &cs, KP_TMO_MS));
		EXPECT_NE(0, cr.error);
		EXPECT_EQ(-EFAULT, cs.error);
	}
	kp_free(rb, 65536);
}

/* Rendezvous send from an unmapped buffer: completion with -EFAULT. */
TEST_F_TIMEOUT(job2, rndv_send_unmapped_cqe_efault, 60)
{
	size_t len = kp_rndv_size(&self->e[0], 256 * 1024);
	unsigned char *sb = kp_alloc(len), *rb = kp_alloc(len);
	struct kprog_post ps, pr;
	struct kprog_cqe cs, cr;
	int ret;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	ASSERT_EQ(0, munmap(sb, len));
	ret = kp_send(&self->e[1], 1, sb, len, 0, 4, 0, 0, &ps);
	if (ret) {
		/* refusing it at post is tolerated, not required */
		EXPECT_EQ(-EFAULT, ret);
		goto out;
	}
	EXPECT_EQ(0, ps.done);
	ASSERT_EQ(0, kp_recv(&self->e[0], 2, rb, len, 1, 4, 0, 0, &pr));
	ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &cs, KP_TMO_MS));
	ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &cr, KP_TMO_MS));
	EXPECT_EQ(-EFAULT, cs.error);
	EXPECT_NE(0, cr.error) TH_LOG("receiver told success without data");
out:
	kp_free(rb, len);
}

/* Rendezvous receive into read-only and unmapped memory: -EFAULT. */
TEST_F_TIMEOUT(job2, rndv_recv_bad_buffer_cqe_efault, 60)
{
	size_t len = kp_rndv_size(&self->e[0], 256 * 1024);
	unsigned char *sb = kp_alloc(len), *ro = kp_alloc(len),
		      *gone = kp_alloc(len);
	struct kprog_post ps, pr;
	struct kprog_cqe cs, cr;
	int pass;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, gone);
	kp_fill(sb, len, 5, 0);
	memset(ro, 0x5a, len);
	ASSERT_EQ(0, mprotect(ro, len, PROT_READ));
	ASSERT_EQ(0, munmap(gone, len));
	for (pass = 0; pass < 2; pass++) {
		unsigned char *dst = pass ? gone : ro;
		int ret;

		ASSERT_EQ(0, kp_send(&self->e[1], 1 + pass, sb, len, 0, 4, 0,
				     0, &ps));
		EXPECT_EQ(0, ps.done);
		ret = kp_recv(&self->e[0], 10 + pass, dst, len, 1, 4, 0, 0,
			      &pr);
		ASSERT_EQ(0, ret) TH_LOG("recv pass %d: %s", pass,
					 kp_strerr(ret));
		ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &cr, KP_TMO_MS));
		ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &cs, KP_TMO_MS));
		EXPECT_EQ(-EFAULT, cr.error) TH_LOG("pass %d", pass);
		EXPECT_EQ(1 + pass, cs.req_id);
	}
	EXPECT_EQ(-1, kp_check_byte(ro, len, 0x5a));
	kp_free(sb, len);
	kp_free(ro, len);
}


/*
 * A post or probe whose argument cannot be written back (done/cqe/found)
 * fails with EFAULT and changes nothing: no message sent, no receive
 * posted, no message dequeued.
 */
TEST_F_TIMEOUT(job2, readonly_args_change_nothing, 30)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kprog_post *p = (struct kprog_post *)m;
	struct kprog_probe *pr = (struct kprog_probe *)(m + 1024);
	char buf[64] = "payload", rb[64];
	struct kprog_probe q;
	struct kprog_post ok;

	ASSERT_NE(MAP_FAILED, m);
	memset(p, 0, sizeof(*p));
	p->req_id = 1;
	p->addr = (__u64)(uintptr_t)buf;
	p->len = 16;
	p->peer = 0;
	p->tag = 3;
	memset(pr, 0, sizeof(*pr));
	pr->source = 1;
	pr->tag = 4;
	pr->flags = KPROG_PROBE_DEQUEUE;
	pr->msg_id = 9;
	ASSERT_EQ(0, mprotect(m, pg, PROT_READ));

	errno = 0;
	EXPECT_EQ(-1, ioctl(self->e[1].fd, KPROG_IOC_SEND, p));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_TRUE(nothing_queued(&self->e[0], 0));
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->e[0].fd, KPROG_IOC_RECV, p));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-ENOENT, kp_cancel(&self->e[0], 1));

	/* a message to dequeue, then a read-only mprobe */
	ASSERT_EQ(0, kp_send(&self->e[1], 2, buf, 16, 0, 4, 0, 0, &ok));
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->e[0].fd, KPROG_IOC_PROBE, pr));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, 4, 0, 0, &q));
	EXPECT_EQ(1, q.found) TH_LOG("failed mprobe removed the message");
	EXPECT_EQ(-ENOENT, kp_recv_msg(&self->e[0], 3, rb, sizeof(rb), 9,
				       NULL));
	munmap(m, pg);
}


/*
 * Small transfers (eager into a posted receive, small synchronous sends)
 * into a bad receive buffer: the receive completes with -EFAULT, the
 * buffer is untouched, nothing crashes.
 */
TEST_F_TIMEOUT(job2, small_recv_bad_buffer_cqe_efault, 30)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *ro = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char m[64], b[64];
	struct kprog_post ps, pr;
	struct kprog_cqe c;
	int pass;

	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0x5a, 2 * pg);
	ASSERT_EQ(0, mprotect(ro, pg, PROT_READ));
	ASSERT_EQ(0, munmap(ro + pg, pg));
	kp_fill(m, sizeof(m), 9, 0);
	for (pass = 0; pass < 4; pass++) {
		/* read-only or unmapped; eager or synchronous */
		unsigned char *dst = pass & 1 ? ro + pg : ro;
		__u32 fl = pass & 2 ? KPROG_SEND_SYNC : 0;

		ASSERT_EQ(0, kp_recv(&self->e[0], 10 + pass, dst, sizeof(m), 1,
				     4, 0, 0, &pr));
		ASSERT_EQ(0, kp_send(&self->e[1], 1 + pass, m, sizeof(m), 0, 4,
				     0, fl, &ps));
		ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &c, KP_TMO_MS));
		EXPECT_EQ(-EFAULT, c.error) TH_LOG("pass %d", pass);
		ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &c, KP_TMO_MS));
	}
	EXPECT_EQ(-1, kp_check_byte(ro, pg, 0x5a));
	/* the endpoints still work */
	ASSERT_EQ(0, kp_recv(&self->e[0], 20, b, sizeof(b), 1, 4, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&self->e[1], 21, m, sizeof(m), 0, 4, 0, 0, &ps));
	ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &c, KP_TMO_MS));
	EXPECT_EQ(0, c.error);
	EXPECT_EQ(-1, kp_check(b, sizeof(b), 9, 0));
	munmap(ro, pg);
}

/* max_ops posted operations at once, then ENOBUFS. */
TEST_F_TIMEOUT(job2, max_ops_enobufs, 120)
{
	__u32 max = self->e[0].j.max_ops;
	static char buf[64];
	struct kprog_post p;
	struct kprog_cqe c;
	__u32 i;
	int ret;

	if (max > (1u << 20))
		SKIP(return, "max_ops %u too large to exhaust", max);
	for (i = 0; i < max; i++) {
		ret = kp_recv(&self->e[0], 1000 + i, buf, sizeof(buf), 1,
			      i & 0x7fff, 0, 0, &p);
		ASSERT_EQ(0, ret) TH_LOG("recv %u of %u: %s", i, max,
					 kp_strerr(ret));
		ASSERT_EQ(0, p.done);
	}
	EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 1, buf, sizeof(buf), 1, 0, 0,
				    0, NULL));
	/* a freed slot can be used again */
	ASSERT_EQ(0, kp_cancel(&self->e[0], 1000));
	ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 1000, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
	ret = kp_recv(&self->e[0], 2, buf, sizeof(buf), 1, 0, 0, 0, &p);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 3, buf, sizeof(buf), 1, 0, 0,
				    0, NULL));
	/* the other endpoint has its own budget */
	EXPECT_EQ(0, kp_recv(&self->e[1], 4, buf, sizeof(buf), 0, 0, 0, 0,
			     NULL));
}

/*
 * max_iov_total: iovec entries held by one endpoint's operations. Posts
 * with max_iov-entry arrays fill it after floor(max_iov_total / max_iov),
 * then ENOBUFS; single-buffer posts are not charged; entries come back on
 * cancel, on completion and, for eager sends, at post time.
 */
TEST_F_TIMEOUT(job2, max_iov_total_enobufs, 120)
{
	__u32 max = self->e[0].j.max_iov, max_ops = self->e[0].j.max_ops;
	long long total = kp_param("max_iov_total");
	long long quota = kp_param("eager_quota");
	struct kprog_post p, ps;
	struct kprog_cqe c;
	struct kprog_iov *iov;
	unsigned char *rb, *sb;
	__u32 i, n, rem;
	int ret;

	ASSERT_LE((long long)max, total) TH_LOG("max_iov_total %lld", total);
	n = total / max;
	rem = total % max;
	if (n + 2 > max_ops)
		SKIP(return, "max_ops %u reached before max_iov_total %lld",
		     max_ops, total);
	if (n > (1u << 20))
		SKIP(return, "max_iov_total %lld too large to exhaust", total);
	iov = calloc(max, sizeof(*iov));
	rb = calloc(1, max);
	sb = malloc(max);
	ASSERT_NE(NULL, iov);
	ASSERT_NE(NULL, rb);
	ASSERT_NE(NULL, sb);
	kp_fill(sb, max, 31, 0);
	for (i = 0; i < max; i++) {
		iov[i].base = (__u64)(uintptr_t)&rb[i];
		iov[i].len = 1;
	}

	for (i = 0; i < n; i++) {
		ret = kp_recv(&self->e[0], 1000 + i, iov, max, 1, 100 + i, 0,
			      KPROG_POST_IOV, &p);
		ASSERT_EQ(0, ret) TH_LOG("recv %u of %u: %s", i, n,
					 kp_strerr(ret));
		ASSERT_EQ(0, p.done);
	}
	EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 1, iov, max, 1, 1, 0,
				    KPROG_POST_IOV, NULL));
	EXPECT_EQ(-ENOBUFS, kp_send(&self->e[0], 1, iov, max, 1, 1, 0,
				    KPROG_POST_IOV, NULL));
	/* exactly what is left fits, one entry more does not */
	EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 2, iov, rem + 1, 1, 2, 0,
				    KPROG_POST_IOV, NULL));
	if (rem) {
		ASSERT_EQ(0, kp_recv(&self->e[0], 3, iov, rem, 1, 3, 0,
				     KPROG_POST_IOV, &p));
		EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 4, iov, 1, 1, 4, 0,
					    KPROG_POST_IOV, NULL));
		ASSERT_EQ(0, kp_cancel(&self->e[0], 3));
		ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 3, &c, KP_TMO_MS));
		EXPECT_EQ(-ECANCELED, c.error);
	}
	/* a single buffer carries no iovec array and is not charged */
	ASSERT_EQ(0, kp_recv(&self->e[0], 5, rb, max, 1, 5, 0, 0, &p));
	ASSERT_EQ(0, kp_cancel(&self->e[0], 5));
	ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 5, &c, KP_TMO_MS));

	/* cancel returns the entries */
	ASSERT_EQ(0, kp_cancel(&self->e[0], 1000));
	ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 1000, &c, KP_TMO_MS));
	EXPECT_EQ(-ECANCELED, c.error);
	ASSERT_EQ(0, kp_recv(&self->e[0], 6, iov, max, 1, 6, 0,
			     KPROG_POST_IOV, &p));
	EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 7, iov, max, 1, 7, 0,
				    KPROG_POST_IOV, NULL));

	/* so does completion */
	if (n > 1) {
		ASSERT_EQ(0, kp_send(&self->e[1], 8, sb, max, 0, 101, 0, 0,
				     &ps));
		ASSERT_EQ(0, kp_wait_cqe(&self->e[0], 1001, &c, KP_TMO_MS));
		EXPECT_EQ(0, c.error);
		EXPECT_EQ(max, c.bytes);
		EXPECT_EQ(0, memcmp(sb, rb, max));
		ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &c, KP_TMO_MS));
		EXPECT_EQ(0, c.error);
		ASSERT_EQ(0, kp_recv(&self->e[0], 9, iov, max, 1, 9, 0,
				     KPROG_POST_IOV, &p));
		EXPECT_EQ(-ENOBUFS, kp_recv(&self->e[0], 10, iov, max, 1, 10,
					    0, KPROG_POST_IOV, NULL));
	}

	/* buffered eager sends give their entries back at post time */
	if (max <= kp_eager(&self->e[1]) && n + 100 < 0x7000 &&
	    (long long)(n + 1) * (max + 256) <= quota) {
		for (i = 0; i <= n; i++) {
			ret = kp_send(&self->e[1], 2000 + i, iov, max, 0,
				      0x7000, 0, KPROG_POST_IOV, &ps);
			ASSERT_EQ(0, ret) TH_LOG("eager send %u of %u: %s", i,
						 n + 1, kp_strerr(ret));
			EXPECT_EQ(1, ps.done);
			EXPECT_EQ(0, ps.cqe.error);
		}
		/* and the buffered messages are still delivered */
		ASSERT_EQ(0, kp_recv(&self->e[0], 11, sb, max, 1, 0x7000, 0, 0,
				     &p));
		ASSERT_EQ(0, kp_complete(&self->e[0], &p, &c, KP_TMO_MS));
		EXPECT_EQ(0, c.error);
		EXPECT_EQ(max, c.bytes);
		EXPECT_EQ(0, memcmp(sb, rb, max));
	}
	/* the other endpoint has its own budget */
	EXPECT_EQ(0, kp_recv(&self->e[1], 12, iov, max, 0, 12, 0,
			     KPROG_POST_IOV, NULL));
	free(iov);
	free(rb);
	free(sb);
}

TEST_HARNESS_MAIN

/*
 * open(KPROG_DEVICE) in a child running as uid 65534 with only group
 * @gid: 0 or the errno.
 */
static int open_as_group(gid_t gid)
{
	pid_t pid = fork();
	int status, fd;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(gid) || setuid(65534))
			_exit(100);
		fd = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
		_exit(fd < 0 ? errno : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#define KP_TEST_GID	4242

/*
 * Least privilege: a user in the device's group opens it, one outside is
 * refused. The node is given the group and mode the udev rule
 * (packaging/udev/90-kprog.rules) gives it; with the dev_group module
 * parameter set, the module refuses non-members even through a node open
 * to everybody. Needs root (to change uid); the node is restored after.
 */
TEST(device_group_access)
{
	long long grp = kp_param("dev_group");
	gid_t member = grp >= 0 ? (gid_t)grp : KP_TEST_GID;
	struct stat st;

	if (geteuid() != 0)
		SKIP(return, "needs root to switch users");
	ASSERT_EQ(0, stat(KPROG_DEVICE, &st));
	EXPECT_EQ((mode_t)kp_param("dev_mode"), st.st_mode & 0777);
	ASSERT_EQ(0, chown(KPROG_DEVICE, -1, member));
	ASSERT_EQ(0, chmod(KPROG_DEVICE, 0660));
	EXPECT_EQ(0, open_as_group(member));
	EXPECT_EQ(EACCES, open_as_group(member + 1));
	if (grp >= 0) {
		/* the module's own check, past a node open to all */
		ASSERT_EQ(0, chmod(KPROG_DEVICE, 0666));
		EXPECT_EQ(0, open_as_group(member));
		EXPECT_EQ(EACCES, open_as_group(member + 1));
	}
	chown(KPROG_DEVICE, st.st_uid, st.st_gid);
	chmod(KPROG_DEVICE, st.st_mode & 07777);
}
