// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests of the ibverbs transport (kprog_ib.ko) on one node:
 * KPROG_JOIN_NET_ONLY makes the other local ranks of a job remote at this
 * node's own address, so that everything goes through the transport's
 * loopback connection over soft-RoCE (rxe). Eager and rendezvous messages
 * (more than one registration, non-contiguous buffers), order, wildcards,
 * probe/mprobe, cancel, truncation, zero length, credits, accounting; then
 * the faults: a peer process killed mid-transfer, the RDMA device deleted
 * mid-transfer, unloading and loading the module again.
 *
 * Needs rxe and kprog_ib.ko (scripts/vm-run --rxe loads both); SKIPs
 * otherwise:
 *   scripts/vm-run --rxe -- env SELFTESTS=kprog_ib tests/selftests/run
 */
#define _GNU_SOURCE	/* setresuid() */
#include <arpa/inet.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include "kprog_test.h"

#define IB_STATE	"/sys/kernel/debug/kprog_ib/state"
#define KPROG_STATS	"/sys/kernel/debug/kprog/stats"
#define IB_PARAMS	"/sys/module/kprog_ib/parameters/"
#define NEP		3
#define MiB		(1UL << 20)
#define QUIET_MS	300

static int ib_loaded(void)
{
	struct stat st;

	return stat("/sys/module/kprog_ib", &st) == 0;
}

static int get_info(struct kprog_info *info)
{
	int fd = kp_open(), ret = 0;

	if (fd < 0)
		return fd;
	if (ioctl(fd, KPROG_IOC_GET_INFO, info))
		ret = -errno;
	close(fd);
	return ret;
}

/* The transport is up and this node has an address: 1, else 0. */
static int ib_usable(struct kprog_node_addr *na)
{
	struct kprog_info info;

	if (!ib_loaded() || get_info(&info) ||
	    !(info.transports & KPROG_XPORT_IB) ||
	    info.node_addr.family != AF_INET)
		return 0;
	if (na)
		*na = info.node_addr;
	return 1;
}

/* Wait until the transport is usable again (a device came back). */
static int ib_wait_usable(struct kprog_node_addr *na, long long ms)
{
	long long end = kp_now_ms() + ms;

	while (!ib_usable(na)) {
		if (kp_now_ms() > end)
			return -ETIMEDOUT;
		usleep(50000);
	}
	return 0;
}

/* A gauge of IB_STATE ("pinned_pages 0"); -1 if not there. */
static long ib_gauge(const char *name)
{
	char line[256], key[64];
	long v, ret = -1;
	FILE *f = fopen(IB_STATE, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", key, &v) == 2 && !strcmp(key, name))
			ret = v;
	fclose(f);
	return ret;
}

static const char *const ib_busy_gauges[] = {
	"pinned_pages", "registered_mrs", "reg_bytes", "send_transfers",
	"recv_transfers", "reads",
};

/* Every transfer gauge back to 0 within @ms: 0, or -ETIMEDOUT. */
static int ib_wait_idle(long long ms, char *why, size_t size)
{
	long long end = kp_now_ms() + ms;
	unsigned int i;
	long v;

	for (;;) {
		for (i = 0; i < ARRAY_SIZE(ib_busy_gauges); i++) {
			v = ib_gauge(ib_busy_gauges[i]);
			if (v) {
				snprintf(why, size, "%s = %ld",
					 ib_busy_gauges[i], v);
				break;
			}
		}
		if (i == ARRAY_SIZE(ib_busy_gauges))
			return 0;
		if (kp_now_ms() > end)
			return -ETIMEDOUT;
		usleep(20000);
	}
}

#define EXPECT_IDLE() do {						\
	char why_[128] = "";						\
	EXPECT_EQ(0, ib_wait_idle(10000, why_, sizeof(why_)))		\
		TH_LOG("not idle: %s", why_);				\
} while (0)

/*
 * Rank @rank of a KPROG_JOIN_NET_ONLY job of @size ranks, all at node
 * address @na: open + JOIN with the node map + mmap.
 */
static int ib_ep_open(struct kp_ep *e, __u64 key, __u32 rank, __u32 size,
		      const struct kprog_node_addr *na, __u32 eager)
{
	__u32 *rank_nodes = calloc(size, sizeof(*rank_nodes));
	int ret;

	kp_ep_reset(e);
	if (!rank_nodes)
		return -ENOMEM;
	ret = kp_open();
	if (ret < 0)
		goto out;
	e->fd = ret;
	kp_join_init(&e->j, key, rank, size, KPROG_JOIN_NET_ONLY, eager);
	e->j.nodes = (__u64)(uintptr_t)na;
	e->j.nr_nodes = 1;
	e->j.rank_nodes = (__u64)(uintptr_t)rank_nodes;
	ret = ioctl(e->fd, KPROG_IOC_JOIN, &e->j) ? -errno : 0;
	if (!ret)
		ret = kp_ep_map(e);
	if (ret) {
		if (e->map)
			munmap(e->map, e->j.ring_bytes);
		close(e->fd);
		kp_ep_reset(e);
		goto out;
	}
	e->rank = rank;
out:
	free(rank_nodes);
	return ret;
}

static int ib_job_open(struct kp_ep *e, int n, __u32 size, __u64 key,
		       const struct kprog_node_addr *na)
{
	int i, ret;

	for (i = 0; i < n; i++)
		kp_ep_reset(&e[i]);
	for (i = 0; i < n; i++) {
		ret = ib_ep_open(&e[i], key, i, size, na, 0);
		if (ret) {
			while (i--)
				kp_ep_close(&e[i]);
			return ret;
		}
	}
	return 0;
}

/* Sum over CPUs of a column of the kprog per-CPU counters; -1 if none. */
static long long stat_sum(const char *name)
{
	char line[2048], *tok, *save;
	int col = -1, i;
	long long sum = 0;
	FILE *f = fopen(KPROG_STATS, "r");

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		for (i = 0, tok = strtok_r(line, " \n", &save); tok;
		     i++, tok = strtok_r(NULL, " \n", &save))
			if (!strcmp(tok, name))
				col = i;
	while (col >= 0 && fgets(line, sizeof(line), f)) {
		for (i = 0, tok = strtok_r(line, " \n", &save); tok && i < col;
		     i++)
			tok = strtok_r(NULL, " \n", &save);
		if (tok)
			sum += strtoll(tok, NULL, 10);
	}
	fclose(f);
	return col < 0 ? -1 : sum;
}

FIXTURE(ib) {
	struct kp_ep e[NEP];
	struct kprog_node_addr na;
	__u64 key;
};

FIXTURE_SETUP(ib)
{
	int i, ret;

	for (i = 0; i < NEP; i++)
		kp_ep_reset(&self->e[i]);
	if (!ib_usable(&self->na))
		SKIP(return, "no RDMA device or kprog_ib.ko not loaded (scripts/vm-run --rxe)");
	self->key = kp_key();
	ret = ib_job_open(self->e, NEP, NEP, self->key, &self->na);
	ASSERT_EQ(0, ret) TH_LOG("NET_ONLY job: %s", kp_strerr(ret));
}

FIXTURE_TEARDOWN(ib)
{
	kp_job_close(self->e, NEP);
}

static void *buf_new(size_t len, __u64 seed)
{
	void *b = kp_alloc(len);

	if (b && seed)
		kp_fill(b, len, seed, 0);
	return b;
}

/* Complete @p and check it: @len bytes (of stream @seed when @buf). */
static void check_cqe(struct __test_metadata *_metadata, struct kp_ep *e,
		      const struct kprog_post *p, int err, size_t len,
		      int source, int tag, const void *buf, __u64 seed)
{
	struct kprog_cqe c;
	int ret = kp_complete(e, p, &c, 30000);

	ASSERT_EQ(0, ret) TH_LOG("req %llu: %s", (unsigned long long)p->req_id,
				 kp_strerr(ret));
	EXPECT_EQ(p->req_id, c.req_id);
	EXPECT_EQ(err, c.error) TH_LOG("req %llu: error %d",
				       (unsigned long long)p->req_id, c.error);
	EXPECT_EQ(len, c.bytes) TH_LOG("req %llu",
				       (unsigned long long)p->req_id);
	if (source >= 0) {
		EXPECT_EQ(source, c.source);
	}
	if (tag >= 0) {
		EXPECT_EQ(tag, c.tag);
	}
	if (buf && !err) {
		EXPECT_EQ(-1, kp_check(buf, len, seed, 0))
			TH_LOG("req %llu: wrong data",
			       (unsigned long long)p->req_id);
	}
}

/* Wait until a probe on @e sees a message matching (@src, @tag). */
static int wait_probe(struct kp_ep *e, int src, int tag,
		      struct kprog_probe *out)
{
	return kp_probe(e, 0, src, tag, KPROG_PROBE_BLOCK, 0, out);
}

/* One message from e[1] to e[0]: posted first, or unexpected. */
static void one_message(struct __test_metadata *_metadata,
			FIXTURE_DATA(ib) *self, size_t len, size_t soff,
			size_t roff, int unexpected, __u32 flags)
{
	struct kp_ep *s = &self->e[1], *r = &self->e[0];
	size_t map = len + 2 * 4096;
	char *sb = buf_new(map, 0), *rb = buf_new(map, 0);
	struct kprog_post ps, pr;
	struct kprog_probe pb;
	__u64 seed = 1000 + len + soff;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	kp_fill(sb + soff, len, seed, 0);
	if (!unexpected)
		ASSERT_EQ(0, kp_recv(r, 1, rb + roff, len, 1, 7, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(s, 2, sb + soff, len, 0, 7, 0, flags, &ps));
	if (unexpected) {
		ASSERT_EQ(0, wait_probe(r, 1, 7, &pb));
		EXPECT_EQ(len, pb.bytes);
		ASSERT_EQ(0, kp_recv(r, 1, rb + roff, len, 1, 7, 0, 0, &pr));
	}
	check_cqe(_metadata, r, &pr, 0, len, 1, 7, rb + roff, seed);
	check_cqe(_metadata, s, &ps, 0, len, 0, 7, NULL, 0);
	kp_free(sb, map);
	kp_free(rb, map);
}

#ifndef KPROG_IB_ONLY_LIMITS	/* kprog_ib_limits.c: the limit's test alone */
TEST_F(ib, info_reports_the_transport_and_this_nodes_address)
{
	const char *want = getenv("KPROG_RDMA_ADDR");
	struct kprog_info info;
	struct in_addr a;

	ASSERT_EQ(0, get_info(&info));
	EXPECT_EQ(KPROG_XPORT_SHM | KPROG_XPORT_IB, info.transports);
	EXPECT_EQ(AF_INET, info.node_addr.family);
	EXPECT_EQ(0, info.node_addr.port);	/* nobody listens */
	EXPECT_TRUE(info.features & KPROG_FEAT_NET_CONN);
	if (want && inet_pton(AF_INET, want, &a) == 1) {
		EXPECT_EQ(0, memcmp(&a, info.node_addr.addr, 4));
	}
}

/*
 * KPROG_IOC_NET_CONN on @c from rank 0 of a fresh two-rank job, rank 0 on
 * this node (@na), rank 1 on @map_peer (the module serves NET_CONN only to
 * a joined endpoint, toward the other nodes of its job); 0 or an errno
 * (ENOLINK: the JOIN failed).
 */
static int net_conn_in(const struct kprog_node_addr *na,
		       const struct kprog_node_addr *map_peer,
		       struct kprog_net_conn *c)
{
	struct kprog_node_addr nodes[2] = { *na, *map_peer };
	__u32 rank_nodes[2] = { 0, 1 };
	struct kprog_join j;
	int fd = kp_open(), err = 0;

	if (fd < 0)
		return -fd;
	kp_join_init(&j, kp_key(), 0, 2, 0, 0);
	j.rank_nodes = (__u64)(uintptr_t)rank_nodes;
	j.nodes = (__u64)(uintptr_t)nodes;
	j.nr_nodes = 2;
	j.self_node = 0;
	if (ioctl(fd, KPROG_IOC_JOIN, &j))
		err = ENOLINK;
	else if (ioctl(fd, KPROG_IOC_NET_CONN, c))
		err = errno;
	close(fd);
	return err;
}

/* The same toward a node of the map. */
static int net_conn(const struct kprog_node_addr *na, struct kprog_net_conn *c)
{
	return net_conn_in(na, &c->peer, c);
}

TEST_F(ib, net_conn_needs_join_and_a_node_of_the_job)
{
	struct kprog_net_conn c = { .op = KPROG_NET_PREPARE };
	struct kprog_node_addr other = self->na;
	int fd = kp_open();

	other.addr[3] ^= 0x80;
	c.peer = other;
	/* nothing before JOIN */
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_NET_CONN, &c));
	EXPECT_EQ(EBADFD, errno);
	close(fd);
	/* a job on this node only has no node to connect to */
	fd = kp_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, NULL));
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_NET_CONN, &c));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	/* nor has a job to a node its map does not name */
	other.addr[3] ^= 0x01;
	EXPECT_EQ(EINVAL, net_conn_in(&self->na, &other, &c));
	/* toward a node of the map it works */
	EXPECT_EQ(0, net_conn(&self->na, &c));
	EXPECT_NE(0, c.local.qpn);
}

TEST_F(ib, net_conn_refuses_bad_requests_and_this_node)
{
	struct kprog_net_conn c = { .op = KPROG_NET_PREPARE };

	/* this node connects its loopback itself */
	c.peer = self->na;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	c.peer.family = AF_INET6;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	/* another node (a made-up one): its end is made, in INIT */
	c.peer = self->na;
	c.peer.addr[3] ^= 0x80;
	c.op = 99;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	c.op = KPROG_NET_PREPARE;
	ASSERT_EQ(0, net_conn(&self->na, &c));
	EXPECT_EQ(KPROG_NET_VERSION, c.local.version);
	EXPECT_NE(0, c.local.qpn);
	EXPECT_EQ(0, c.local.remote_qpn);
	EXPECT_GE(c.local.recv_bufs, 8);
	/* a second PREPARE reports the same end */
	c.remote = c.local;
	ASSERT_EQ(0, net_conn(&self->na, &c));
	EXPECT_EQ(c.remote.qpn, c.local.qpn);
	EXPECT_EQ(c.remote.psn, c.local.psn);
	/* a malformed peer end is refused and changes nothing */
	c.op = KPROG_NET_CONNECT;
	c.remote.version = 0;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	c.remote = c.local;
	c.remote.qpn = 1U << 24;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	c.remote = c.local;
	c.remote.mtu = 0;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	c.remote = c.local;
	memset(c.remote.gid, 0, sizeof(c.remote.gid));
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	c.remote = c.local;
	c.remote.recv_bufs = 1;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	/* on RoCE the peer's GID must hold the peer's address */
	c.remote = c.local;
	EXPECT_EQ(EINVAL, net_conn(&self->na, &c));
	memcpy(&c.remote.gid[12], c.peer.addr, 4);
	/* an end that changed since it was reported waits for another round */
	c.local.qpn ^= 1;
	c.status = 0;
	EXPECT_EQ(0, net_conn(&self->na, &c));
	EXPECT_EQ(KPROG_NET_AGAIN, c.status);
}

/* PREPARE toward @peer on @fd as uid nobody (no capability): its errno or 0. */
static int prepare_as_nobody(int fd, const struct kprog_node_addr *peer)
{
	struct kprog_net_conn c = { .op = KPROG_NET_PREPARE, .peer = *peer };
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(255);
		_exit(ioctl(fd, KPROG_IOC_NET_CONN, &c) ? errno : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * One connection per node pair serves every job of both nodes: only
 * CAP_NET_ADMIN makes, connects or drops an end (conn_admin=1), so that
 * no user can reset it under other users' jobs; reading an existing end
 * stays open to everyone.
 */
TEST_F(ib, changing_a_node_pair_needs_cap_net_admin)
{
	struct kprog_node_addr nodes[2] = { self->na, self->na };
	struct kprog_net_conn c = { .op = KPROG_NET_PREPARE };
	__u32 rank_nodes[2] = { 0, 1 };
	struct kprog_join j;
	int fd = kp_open();

	nodes[1].addr[3] ^= 0x40;	/* a node no other test names */
	ASSERT_LE(0, fd);
	kp_join_init(&j, kp_key(), 0, 2, 0, 0);
	j.rank_nodes = (__u64)(uintptr_t)rank_nodes;
	j.nodes = (__u64)(uintptr_t)nodes;
	j.nr_nodes = 2;
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_JOIN, &j));
	/* no end toward it yet: a user may not make one */
	EXPECT_EQ(EPERM, prepare_as_nobody(fd, &nodes[1]));
	/* root may; then anyone reads it */
	c.peer = nodes[1];
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_NET_CONN, &c));
	EXPECT_NE(0, c.local.qpn);
	EXPECT_EQ(0, prepare_as_nobody(fd, &nodes[1]));
	close(fd);
}

#endif /* KPROG_IB_ONLY_LIMITS */

/*
 * A sender of @len bytes in a child with `ulimit -l` @limit bytes, without
 * CAP_IPC_LOCK (uid nobody): 0 when its send completed and its pins were
 * all returned afterwards, 1 when the send was refused with ENOMEM, 2
 * otherwise. The parent receives on e[0].
 */
static int memlock_sender(FIXTURE_DATA(ib) *self, size_t len, rlim_t limit)
{
	struct rlimit rl = { limit, limit };
	struct kprog_post ps;
	struct kprog_cqe c;
	char *sb = buf_new(len, 77);
	int ret;

	if (!sb || setrlimit(RLIMIT_MEMLOCK, &rl) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 2;
	ret = kp_send(&self->e[1], 2, sb, len, 0, 9, 0, 0, &ps);
	if (ret == -ENOMEM)
		return 1;
	if (ret || kp_complete(&self->e[1], &ps, &c, 60000) || c.error)
		return 2;
	/* the pin cache keeps the pages until they are unmapped */
	kp_free(sb, len);
	return kp_vm_pin_settled_kib() == 0 ? 0 : 2;
}

/*
 * RDMA reads pin the sender's pages long-term: they are charged to its
 * pinned_vm against RLIMIT_MEMLOCK, as an ib_umem registration is. A
 * limit below one registration chunk refuses the send (ENOMEM, the
 * shim's clear error); one of a few chunks carries a larger message chunk
 * by chunk; the charge is returned when the pins are.
 */
TEST_F_TIMEOUT(ib, pinned_pages_are_charged_to_the_sender_s_memlock_limit, 300)
{
	size_t len = 4 * MiB + 5;
	char *rb = buf_new(len, 0);
	struct kprog_post pr;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, rb);
	/* 16 KiB: not even one chunk */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_sender(self, len, 16384));
	kp_child_status(pid, &status);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(1, WEXITSTATUS(status)) TH_LOG("a 4 MiB send within 16 KiB of memlock");
	/* 8 MiB: chunk by chunk, within the limit */
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, rb, len, 1, 9, 0, 0, &pr));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_sender(self, len, 8 * MiB));
	check_cqe(_metadata, &self->e[0], &pr, 0, len, 1, 9, rb, 77);
	kp_child_status(pid, &status);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	kp_free(rb, len);
	EXPECT_IDLE();
}

/* The pin cache's hits and misses (IB_STATE's pin_cache line); 0 if there. */
static int pcache_counts(long long *hits, long long *misses)
{
	char line[256];
	int ret = -1;
	FILE *f = fopen(IB_STATE, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "pin_cache: hits %lld misses %lld", hits,
			   misses) == 2)
			ret = 0;
	fclose(f);
	return ret;
}

#define PCACHE_PARAM	IB_PARAMS "pin_cache_mb"

/* Set pin_cache_mb (off by default); the value before, or -1. */
static long pcache_set(long mb)
{
	long old = -1;
	FILE *f = fopen(PCACHE_PARAM, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &old) != 1)
		old = -1;
	fclose(f);
	f = fopen(PCACHE_PARAM, "w");
	if (!f)
		return -1;
	fprintf(f, "%ld\n", mb);
	if (fclose(f))
		return -1;
	return old;
}

/* Wait until the cache holds no page (its releases run in a worker). */
static long wait_uncached(void)
{
	long v;
	int i;

	for (i = 0; i < 200 && (v = ib_gauge("cached_pages")) > 0; i++)
		usleep(10000);
	return ib_gauge("cached_pages");
}

/* Send @len bytes of @sb (stream @seed) from e[1] to e[0] and check them. */
static void send_checked(struct __test_metadata *_metadata,
			 FIXTURE_DATA(ib) *self, const char *sb, char *rb,
			 size_t len, __u64 seed)
{
	struct kprog_post ps, pr;

	memset(rb, 0, len);
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, rb, len, 1, 11, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&self->e[1], 2, sb, len, 0, 11, 0, 0, &ps));
	check_cqe(_metadata, &self->e[0], &pr, 0, len, 1, 11, rb, seed);
	check_cqe(_metadata, &self->e[1], &ps, 0, len, 0, 11, NULL, 0);
}

/*
 * The pin cache keeps a buffer's pages pinned for the next transfer of it
 * (the sender's and, pinned writable, the receiver's), and forgets them as
 * soon as their mapping changes: what arrives is always what the buffer
 * holds when it is sent, after a write in place, an munmap and mmap at
 * the same address, madvise(MADV_DONTNEED) and mremap to another place;
 * pages no longer mapped are unpinned.
 */
TEST_F_TIMEOUT(ib, pin_cache_sends_the_new_data_after_writes_unmaps_and_remaps,
	       300)
{
	size_t len = 256 * 1024 + 3, map = len + 4096;
	char *sb = kp_alloc(map), *rb = kp_alloc(map), *p;
	long long h0, m0, h, m;

	long old;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	if (pcache_counts(&h0, &m0) ||
	    ib_gauge("cached_pages") < 0)
		SKIP(return, "kprog_ib has no pin cache");
	old = pcache_set(128);
	ASSERT_LE(0, old) TH_LOG("cannot write " PCACHE_PARAM);
	if (wait_uncached() != 0)
		TH_LOG("pages cached before the test: %ld",
		       ib_gauge("cached_pages"));
	/* first time: both sides pin */
	kp_fill(sb + 1, len, 1, 0);
	send_checked(_metadata, self, sb + 1, rb, len, 1);
	ASSERT_EQ(0, pcache_counts(&h, &m));
	EXPECT_EQ(h0, h);
	EXPECT_EQ(m0 + 2, m);
	EXPECT_LT(0, ib_gauge("cached_pages"));

	/* written in place: two hits, and the new data */
	kp_fill(sb + 1, len, 2, 0);
	send_checked(_metadata, self, sb + 1, rb, len, 2);
	ASSERT_EQ(0, pcache_counts(&h, &m));
	EXPECT_EQ(h0 + 2, h);
	EXPECT_EQ(m0 + 2, m);

	/* unmapped and mapped again at the same address: new pages */
	ASSERT_EQ(0, munmap(sb, map));
	p = mmap(sb, map, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(sb, p);
	kp_fill(sb + 1, len, 3, 0);
	send_checked(_metadata, self, sb + 1, rb, len, 3);
	ASSERT_EQ(0, pcache_counts(&h, &m));
	EXPECT_EQ(m0 + 3, m) TH_LOG("the unmapped pages were found again");
	EXPECT_EQ(h0 + 3, h);

	/* pages dropped (they read as zeros, then new data), both sides */
	ASSERT_EQ(0, madvise(sb, map, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(rb, map, MADV_DONTNEED));
	kp_fill(sb + 1, len, 4, 0);
	send_checked(_metadata, self, sb + 1, rb, len, 4);
	ASSERT_EQ(0, pcache_counts(&h, &m));
	EXPECT_EQ(m0 + 5, m);
	EXPECT_EQ(h0 + 3, h);

	/* moved away, and something else mapped where it was */
	p = kp_alloc(map);
	ASSERT_NE(NULL, p);
	p = mremap(sb, map, map, MREMAP_MAYMOVE | MREMAP_FIXED, p);
	EXPECT_NE(MAP_FAILED, p);
	if (p != MAP_FAILED) {
		ASSERT_EQ(sb, mmap(sb, map, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				   -1, 0));
		kp_fill(sb + 1, len, 5, 0);
		send_checked(_metadata, self, sb + 1, rb, len, 5);
		kp_fill(p + 1, len, 6, 0);
		send_checked(_metadata, self, p + 1, rb, len, 6);
		kp_free(p, map);
	}
	kp_free(sb, map);
	kp_free(rb, map);
	EXPECT_EQ(0, wait_uncached());
	EXPECT_LE(0, pcache_set(old));
	EXPECT_IDLE();
}

/*
 * A child with `ulimit -l` @limit bytes and no CAP_IPC_LOCK sends 512 KiB
 * from three buffers in turn (its own cached pages give way to the limit),
 * then a buffer whose chunk alone exceeds the limit: 0 when those sends
 * completed, the last was refused with ENOMEM and every pin was returned
 * once the buffers were unmapped; else the step that failed.
 */
static int memlock_cached_sender(FIXTURE_DATA(ib) *self, rlim_t limit)
{
	struct rlimit rl = { limit, limit };
	size_t len = 512 * 1024, big = 4 * MiB;
	struct kprog_post ps;
	struct kprog_cqe c;
	char *sb[3], *bb = buf_new(big, 5);
	int i, ret;

	for (i = 0; i < 3; i++)
		sb[i] = buf_new(len, 20 + i);
	if (!sb[0] || !sb[1] || !sb[2] || !bb || setrlimit(RLIMIT_MEMLOCK, &rl) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 10;
	for (i = 0; i < 3; i++) {
		ret = kp_send(&self->e[1], 2, sb[i], len, 0, 12, 0, 0, &ps);
		if (ret || kp_complete(&self->e[1], &ps, &c, 60000) || c.error)
			return 11 + i;
		if (kp_vm_pin_kib() * 1024 > (long)limit)
			return 14;
	}
	if (kp_send(&self->e[1], 2, bb, big, 0, 12, 0, 0, &ps) != -ENOMEM)
		return 15;
	for (i = 0; i < 3; i++)
		kp_free(sb[i], len);
	kp_free(bb, big);
	return kp_vm_pin_settled_kib() == 0 ? 0 : 16;
}

/*
 * Cached pins stay charged to their process's RLIMIT_MEMLOCK: a process
 * at its limit gets room by giving up its own idle cached pages, and a
 * chunk larger than the limit is refused with ENOMEM as without the cache.
 */
TEST_F_TIMEOUT(ib, pin_cache_gives_way_to_the_memlock_limit, 300)
{
	size_t len = 512 * 1024;
	char *rb = buf_new(len, 0);
	struct kprog_post pr[3];
	int status, i;
	long old;
	pid_t pid;

	ASSERT_NE(NULL, rb);
	old = pcache_set(128);
	if (old < 0)
		SKIP(return, "kprog_ib has no pin cache");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_cached_sender(self, MiB + 8192));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kp_recv(&self->e[0], 1, rb, len, 1, 12, 0, 0,
				     &pr[i]));
		check_cqe(_metadata, &self->e[0], &pr[i], 0, len, 1, 12, rb,
			  20 + i);
	}
	kp_child_status(pid, &status);
	EXPECT_LE(0, pcache_set(old));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	kp_free(rb, len);
	EXPECT_IDLE();
}

#ifndef KPROG_IB_ONLY_LIMITS
TEST_F(ib, eager_messages_posted_and_unexpected)
{
	size_t lens[] = { 1, 8, 100, 1000, 4096, 4097 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		one_message(_metadata, self, lens[i], i, 3 * i, 0, 0);
		one_message(_metadata, self, lens[i], 0, 0, 1, 0);
	}
	one_message(_metadata, self, kp_eager(&self->e[0]), 0, 0, 1, 0);
	EXPECT_IDLE();
}

/* kprog_ib's net_poll parameter; 0 or -errno */
static int net_poll_set(const char *v)
{
	int fd = open(IB_PARAMS "net_poll", O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int wait_poll(struct kp_ep *e)
{
	struct kprog_wait w = { .timeout_ns = 0, .flags = KPROG_WAIT_POLL };

	return ioctl(e->fd, KPROG_IOC_WAIT, &w) ? -errno : 0;
}

/*
 * KPROG_WAIT_POLL: a receiver that spins and polls runs the completions of
 * the connection itself; messages arrive whole and in order either way,
 * with net_poll on and off, and polls with nothing there are harmless.
 */
TEST_F_TIMEOUT(ib, a_polling_receiver_gets_remote_messages_in_order, 120)
{
	struct kp_ep *s = &self->e[1], *r = &self->e[0];
	enum { N = 16, LEN = 1000 };
	struct kprog_post ps[N], pr[N];
	char *sb = buf_new(N * LEN, 0), *rb = buf_new(N * LEN, 0);
	struct kprog_info info;
	long long t0;
	int pass, i, polls;

	ASSERT_EQ(0, get_info(&info));
	ASSERT_NE(0, info.features & KPROG_FEAT_WAIT_POLL);
	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	for (pass = 0; pass < 2; pass++) {
		ASSERT_EQ(0, net_poll_set(pass ? "0" : "1"));
		for (i = 0; i < N; i++)
			kp_fill(sb + i * LEN, LEN, 77 + i, 0);
		EXPECT_EQ(0, wait_poll(r));	/* nothing there yet */
		for (i = 0; i < N; i++)
			ASSERT_EQ(0, kp_recv(r, 1, rb + i * LEN, LEN, 1, 9, 0, 0, &pr[i]));
		for (i = 0; i < N; i++)
			ASSERT_EQ(0, kp_send(s, 2, sb + i * LEN, LEN, 0, 9, 0, 0, &ps[i]));
		t0 = kp_now_ms();
		for (polls = 0; kp_ring_count(r) < N && kp_now_ms() - t0 < 20000; polls++)
			wait_poll(r);
		EXPECT_EQ(N, kp_ring_count(r)) TH_LOG("pass %d after %d polls", pass, polls);
		/* same tag, same source: in posting order, each its own data */
		for (i = 0; i < N; i++)
			check_cqe(_metadata, r, &pr[i], 0, LEN, 1, 9, rb + i * LEN, 77 + i);
		for (i = 0; i < N; i++)
			check_cqe(_metadata, s, &ps[i], 0, LEN, 0, 9, NULL, 0);
	}
	EXPECT_EQ(0, net_poll_set("1"));
	kp_free(sb, N * LEN);
	kp_free(rb, N * LEN);
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, rendezvous_of_one_and_several_registrations, 300)
{
	size_t e = kp_eager(&self->e[0]);
	size_t lens[] = { e + 1, 65536, MiB, 2 * MiB + 4097, 9 * MiB + 5 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		one_message(_metadata, self, lens[i], 0, 0, 0, 0);
		one_message(_metadata, self, lens[i], 100 + i, 4095, 1, 0);
	}
	EXPECT_IDLE();
}

/* Segments of a non-contiguous buffer in one mapping, at odd places. */
static int make_iov(char *base, size_t map, const size_t *seg, int n,
		    struct kprog_iov *iov, size_t *total)
{
	size_t off = 0;
	int i;

	*total = 0;
	for (i = 0; i < n; i++) {
		off += 1000 + 13 * i;	/* a gap, and a misalignment */
		if (i == 2)
			off = (off + 4095) & ~4095UL;	/* page aligned */
		if (off + seg[i] > map)
			return -1;
		iov[i].base = (__u64)(uintptr_t)(base + off);
		iov[i].len = seg[i];
		off += seg[i];
		*total += seg[i];
	}
	return 0;
}

static void iov_fill(const struct kprog_iov *iov, int n, __u64 seed)
{
	size_t pos = 0;
	int i;

	for (i = 0; i < n; i++) {
		kp_fill((void *)(uintptr_t)iov[i].base, iov[i].len, seed, pos);
		pos += iov[i].len;
	}
}

static long iov_check(const struct kprog_iov *iov, int n, size_t len,
		      __u64 seed)
{
	size_t pos = 0, l;
	long bad;
	int i;

	for (i = 0; i < n && pos < len; i++) {
		l = iov[i].len < len - pos ? iov[i].len : len - pos;
		bad = kp_check((void *)(uintptr_t)iov[i].base, l, seed, pos);
		if (bad >= 0)
			return pos + bad;
		pos += l;
	}
	return -1;
}

TEST_F_TIMEOUT(ib, rendezvous_between_non_contiguous_buffers, 300)
{
	static const size_t sseg[] = { 5000, 123, 3 * MiB, 4096 * 3, 777,
				       MiB + 3 };
	static const size_t rseg[] = { 3 * MiB + 2, 1, 64 * 1024, 9999,
				       MiB };
	struct kprog_iov siov[6], riov[5];
	size_t map = 8 * MiB, slen, rlen;
	char *sb = buf_new(map, 0), *rb = buf_new(map, 0);
	struct kprog_post ps, pr;

	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	ASSERT_EQ(0, make_iov(sb, map, sseg, 6, siov, &slen));
	ASSERT_EQ(0, make_iov(rb, map, rseg, 5, riov, &rlen));
	ASSERT_GE(rlen, slen);
	iov_fill(siov, 6, 77);
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, riov, 5, 1, 3, 0, KPROG_POST_IOV,
			     &pr));
	ASSERT_EQ(0, kp_send(&self->e[1], 2, siov, 6, 0, 3, 0, KPROG_POST_IOV,
			     &ps));
	check_cqe(_metadata, &self->e[0], &pr, 0, slen, 1, 3, NULL, 0);
	check_cqe(_metadata, &self->e[1], &ps, 0, slen, 0, 3, NULL, 0);
	EXPECT_EQ(-1, iov_check(riov, 5, slen, 77));
	kp_free(sb, map);
	kp_free(rb, map);
	EXPECT_IDLE();
}

/* Eager, rendezvous and synchronous sends from one sender keep order. */
static void order_run(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ib) *self, int unexpected)
{
	size_t r = kp_rndv_size(&self->e[0], 100000);
	size_t lens[] = { 100, r, 10, 50, 3 * MiB, 0, 64, r + 1, 0, 9 };
	__u32 sync = (1 << 3) | (1 << 8);
	int n = ARRAY_SIZE(lens), i;
	struct kprog_post ps[10], pr[10];
	void *sb[10], *rb[10];

	for (i = 0; i < n; i++) {
		sb[i] = buf_new(lens[i] + 1, 500 + i);
		rb[i] = buf_new(3 * MiB + 1, 0);
		ASSERT_NE(NULL, sb[i]);
		ASSERT_NE(NULL, rb[i]);
	}
	if (!unexpected)
		for (i = 0; i < n; i++)
			ASSERT_EQ(0, kp_recv(&self->e[0], 100 + i, rb[i],
					     3 * MiB + 1, 1, 4, 0, 0, &pr[i]));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, kp_send(&self->e[1], 200 + i, sb[i], lens[i], 0,
				     4, 0, (sync >> i) & 1 ? KPROG_SEND_SYNC :
				     0, &ps[i]));
	if (unexpected)
		for (i = 0; i < n; i++)
			ASSERT_EQ(0, kp_recv(&self->e[0], 100 + i, rb[i],
					     3 * MiB + 1, 1, 4, 0, 0, &pr[i]));
	for (i = 0; i < n; i++)
		check_cqe(_metadata, &self->e[0], &pr[i], 0, lens[i], 1, 4,
			  rb[i], 500 + i);
	for (i = 0; i < n; i++)
		check_cqe(_metadata, &self->e[1], &ps[i], 0, lens[i], 0, 4,
			  NULL, 0);
	for (i = 0; i < n; i++) {
		kp_free(sb[i], lens[i] + 1);
		kp_free(rb[i], 3 * MiB + 1);
	}
}

TEST_F_TIMEOUT(ib, order_of_eager_rendezvous_and_sync_sends, 300)
{
	order_run(_metadata, self, 1);
	order_run(_metadata, self, 0);
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, wildcard_receives_take_both_senders_in_order, 120)
{
	size_t big = kp_rndv_size(&self->e[0], 200000);
	struct kprog_post ps[4], pr[4];
	struct kprog_cqe c;
	char *b[4], *rb[4];
	int i, from1 = 0, from2 = 0;

	for (i = 0; i < 4; i++) {
		b[i] = buf_new(big, 10 + i);
		rb[i] = buf_new(big, 0);
		ASSERT_NE(NULL, b[i]);
		ASSERT_NE(NULL, rb[i]);
	}
	/* rank 1: tags 1 then 2; rank 2: tag 3 (rendezvous) then 4 */
	ASSERT_EQ(0, kp_send(&self->e[1], 1, b[0], 64, 0, 1, 0, 0, &ps[0]));
	ASSERT_EQ(0, kp_send(&self->e[1], 2, b[1], big, 0, 2, 0, 0, &ps[1]));
	ASSERT_EQ(0, kp_send(&self->e[2], 3, b[2], big, 0, 3, 0, 0, &ps[2]));
	ASSERT_EQ(0, kp_send(&self->e[2], 4, b[3], 64, 0, 4, 0, 0, &ps[3]));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kp_recv(&self->e[0], 10 + i, rb[i], big,
				     KPROG_ANY_SOURCE, KPROG_ANY_TAG, 0, 0,
				     &pr[i]));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kp_complete(&self->e[0], &pr[i], &c, 30000));
		EXPECT_EQ(0, c.error);
		ASSERT_TRUE(c.source == 1 || c.source == 2);
		/* per sender, in send order */
		if (c.source == 1) {
			EXPECT_EQ(1 + from1, c.tag);
			from1++;
		} else {
			EXPECT_EQ(3 + from2, c.tag);
			from2++;
		}
		EXPECT_EQ(c.tag == 2 || c.tag == 3 ? big : 64, c.bytes);
		EXPECT_EQ(-1, kp_check(rb[i], c.bytes, 9 + c.tag, 0));
	}
	for (i = 0; i < 4; i++)
		check_cqe(_metadata, &self->e[1 + i / 2], &ps[i], 0,
			  i == 1 || i == 2 ? big : 64, 0, i + 1, NULL, 0);
	for (i = 0; i < 4; i++) {
		kp_free(b[i], big);
		kp_free(rb[i], big);
	}
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, probe_and_mprobe_see_remote_messages, 120)
{
	size_t big = kp_rndv_size(&self->e[0], 3 * MiB);
	char *s1 = buf_new(100, 21), *s2 = buf_new(big, 22);
	char *r1 = buf_new(100, 0), *r2 = buf_new(big, 0);
	struct kprog_post ps1, ps2, pr1, pr2;
	struct kprog_probe pb;

	ASSERT_EQ(0, kp_send(&self->e[1], 1, s1, 100, 0, 5, 0, 0, &ps1));
	ASSERT_EQ(0, kp_send(&self->e[1], 2, s2, big, 0, 6, 0, 0, &ps2));
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, 6, KPROG_PROBE_BLOCK, 0, &pb));
	EXPECT_EQ(1, pb.found);
	EXPECT_EQ(1, pb.out_source);
	EXPECT_EQ(6, pb.out_tag);
	EXPECT_EQ(big, pb.bytes);
	/* a dequeuing probe takes the eager one, the receive names it */
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, KPROG_ANY_SOURCE, 5,
			      KPROG_PROBE_BLOCK | KPROG_PROBE_DEQUEUE, 77, &pb));
	EXPECT_EQ(1, pb.found);
	EXPECT_EQ(100, pb.bytes);
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, 5, 0, 0, &pb));
	EXPECT_EQ(0, pb.found);
	/* the rendezvous one by a dequeuing probe too */
	ASSERT_EQ(0, kp_probe(&self->e[0], 0, 1, 6,
			      KPROG_PROBE_DEQUEUE, 78, &pb));
	EXPECT_EQ(1, pb.found);
	ASSERT_EQ(0, kp_recv_msg(&self->e[0], 31, r2, big, 78, &pr2));
	ASSERT_EQ(0, kp_recv_msg(&self->e[0], 30, r1, 100, 77, &pr1));
	check_cqe(_metadata, &self->e[0], &pr1, 0, 100, 1, 5, r1, 21);
	check_cqe(_metadata, &self->e[0], &pr2, 0, big, 1, 6, r2, 22);
	check_cqe(_metadata, &self->e[1], &ps2, 0, big, 0, 6, NULL, 0);
	kp_free(s1, 100);
	kp_free(r1, 100);
	kp_free(s2, big);
	kp_free(r2, big);
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, cancel_of_receives_and_of_remote_rendezvous_sends, 120)
{
	size_t big = kp_rndv_size(&self->e[0], MiB);
	char *sb = buf_new(big, 31), *rb = buf_new(big, 0);
	struct kprog_post ps, pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_recv(&self->e[0], 1, rb, big, 1, 9, 0, 0, &pr));
	EXPECT_EQ(0, kp_cancel(&self->e[0], 1));
	ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &c, 5000));
	EXPECT_EQ(-ECANCELED, c.error);
	EXPECT_EQ(KPROG_CQE_CANCELLED, c.flags);
	/*
	 * A rendezvous send to another node cannot be withdrawn: its RTS is
	 * at the receiving node (EBUSY); it completes normally.
	 */
	ASSERT_EQ(0, kp_send(&self->e[1], 2, sb, big, 0, 9, 0, 0, &ps));
	EXPECT_EQ(0, ps.done);
	EXPECT_EQ(-EBUSY, kp_cancel(&self->e[1], 2));
	ASSERT_EQ(0, kp_recv(&self->e[0], 3, rb, big, 1, 9, 0, 0, &pr));
	check_cqe(_metadata, &self->e[0], &pr, 0, big, 1, 9, rb, 31);
	check_cqe(_metadata, &self->e[1], &ps, 0, big, 0, 9, NULL, 0);
	kp_free(sb, big);
	kp_free(rb, big);
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, truncation_of_eager_and_rendezvous_messages, 120)
{
	size_t big = 3 * MiB + 17;
	char *sb = buf_new(big, 41), *rb = buf_new(big, 0);
	struct kprog_post ps, pr;

	ASSERT_EQ(0, kp_send(&self->e[1], 1, sb, 1000, 0, 2, 0, 0, &ps));
	EXPECT_EQ(1, ps.done);
	ASSERT_EQ(0, kp_recv(&self->e[0], 2, rb, 100, 1, 2, 0, 0, &pr));
	check_cqe(_metadata, &self->e[0], &pr, -EMSGSIZE, 100, 1, 2, NULL, 0);
	EXPECT_EQ(-1, kp_check(rb, 100, 41, 0));
	/* rendezvous: the receive gets what fits, the sender learns it */
	ASSERT_EQ(0, kp_recv(&self->e[0], 3, rb, MiB + 5, 1, 2, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&self->e[1], 4, sb, big, 0, 2, 0, 0, &ps));
	check_cqe(_metadata, &self->e[0], &pr, -EMSGSIZE, MiB + 5, 1, 2, NULL,
		  0);
	EXPECT_EQ(-1, kp_check(rb, MiB + 5, 41, 0));
	check_cqe(_metadata, &self->e[1], &ps, 0, MiB + 5, 0, 2, NULL, 0);
	kp_free(sb, big);
	kp_free(rb, big);
	EXPECT_IDLE();
}

TEST_F(ib, zero_length_eager_and_synchronous_messages)
{
	char b[8] = "x";
	struct kprog_post ps, pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_send(&self->e[1], 1, b, 0, 0, 1, 0, 0, &ps));
	EXPECT_EQ(1, ps.done);
	ASSERT_EQ(0, kp_recv(&self->e[0], 2, b, 8, 1, 1, 0, 0, &pr));
	check_cqe(_metadata, &self->e[0], &pr, 0, 0, 1, 1, NULL, 0);
	/* synchronous: done only once the receive matched it */
	ASSERT_EQ(0, kp_send(&self->e[1], 3, b, 0, 0, 1, 0, KPROG_SEND_SYNC,
			     &ps));
	EXPECT_EQ(0, ps.done);
	EXPECT_EQ(-ETIMEDOUT, kp_wait_cqe(&self->e[1], 3, &c, QUIET_MS));
	ASSERT_EQ(0, kp_recv(&self->e[0], 4, b, 8, 1, 1, 0, 0, &pr));
	check_cqe(_metadata, &self->e[0], &pr, 0, 0, 1, 1, NULL, 0);
	check_cqe(_metadata, &self->e[1], &ps, 0, 0, 0, 1, NULL, 0);
	EXPECT_IDLE();
}

TEST_F(ib, synchronous_send_completes_after_the_match)
{
	char *sb = buf_new(100, 51), *rb = buf_new(100, 0);
	struct kprog_post ps, pr;
	struct kprog_cqe c;

	ASSERT_EQ(0, kp_send(&self->e[1], 1, sb, 100, 0, 8, 0, KPROG_SEND_SYNC,
			     &ps));
	EXPECT_EQ(0, ps.done);
	EXPECT_EQ(-ETIMEDOUT, kp_wait_cqe(&self->e[1], 1, &c, QUIET_MS));
	ASSERT_EQ(0, kp_recv(&self->e[0], 2, rb, 100, 1, 8, 0, 0, &pr));
	check_cqe(_metadata, &self->e[0], &pr, 0, 100, 1, 8, rb, 51);
	check_cqe(_metadata, &self->e[1], &ps, 0, 100, 0, 8, NULL, 0);
	kp_free(sb, 100);
	kp_free(rb, 100);
}

/* More messages than receive buffers: credits come back, order holds. */
TEST_F_TIMEOUT(ib, many_eager_messages_outrun_the_receive_buffers, 300)
{
	enum { N = 400 };
	static char sbuf[N][256], rbuf[N][256];
	struct kprog_post ps, pr;
	int i;

	for (i = 0; i < N; i++) {
		kp_fill(sbuf[i], 64 + i % 190, 7000 + i, 0);
		ASSERT_EQ(0, kp_send(&self->e[1], i, sbuf[i], 64 + i % 190, 0,
				     11, 0, 0, &ps));
		ASSERT_EQ(1, ps.done);
		/* and some traffic the other way, for the piggybacked credits */
		if (i % 50 == 0)
			ASSERT_EQ(0, kp_send(&self->e[0], 10000 + i, sbuf[i], 8,
					     1, 12, 0, 0, &ps));
	}
	for (i = 0; i < N; i++) {
		ASSERT_EQ(0, kp_recv(&self->e[0], 20000 + i, rbuf[i], 256, 1,
				     11, 0, 0, &pr));
		check_cqe(_metadata, &self->e[0], &pr, 0, 64 + i % 190, 1, 11,
			  rbuf[i], 7000 + i);
	}
	for (i = 0; i < N; i += 50) {
		ASSERT_EQ(0, kp_recv(&self->e[1], 30000 + i, rbuf[i], 256, 0,
				     12, 0, 0, &pr));
		check_cqe(_metadata, &self->e[1], &pr, 0, 8, 0, 12, NULL, 0);
	}
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, a_rank_sends_to_itself_through_the_loopback, 120)
{
	size_t big = 2 * MiB + 3;
	char *sb = buf_new(big, 61), *rb = buf_new(big, 0);
	struct kprog_post ps, pr;

	ASSERT_EQ(0, kp_send(&self->e[0], 1, sb, 10, 0, 1, 0, 0, &ps));
	ASSERT_EQ(0, kp_recv(&self->e[0], 2, rb, 10, 0, 1, 0, 0, &pr));
	check_cqe(_metadata, &self->e[0], &pr, 0, 10, 0, 1, rb, 61);
	ASSERT_EQ(0, kp_recv(&self->e[0], 3, rb, big, 0, 2, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&self->e[0], 4, sb, big, 0, 2, 0, 0, &ps));
	check_cqe(_metadata, &self->e[0], &pr, 0, big, 0, 2, rb, 61);
	check_cqe(_metadata, &self->e[0], &ps, 0, big, 0, 2, NULL, 0);
	kp_free(sb, big);
	kp_free(rb, big);
	EXPECT_IDLE();
}

TEST_F_TIMEOUT(ib, completions_and_registrations_are_accounted, 120)
{
	long long cqes, tasklets, works, reg, bytes;
	size_t big = 4 * MiB;

	cqes = stat_sum("net_cqes");
	if (cqes < 0)
		SKIP(return, KPROG_STATS " unreadable");
	tasklets = stat_sum("tasklet_runs");
	works = stat_sum("work_items");
	reg = stat_sum("net_reg_bytes");
	bytes = stat_sum("bytes");
	one_message(_metadata, self, big, 0, 0, 0, 0);
	EXPECT_LT(cqes, stat_sum("net_cqes"));
	/* completions in softirq, READ set-up in workers */
	EXPECT_LT(tasklets, stat_sum("tasklet_runs"));
	EXPECT_LT(works, stat_sum("work_items"));
	EXPECT_LE(reg + (long long)big, stat_sum("net_reg_bytes"));
	EXPECT_LE(bytes + (long long)big, stat_sum("bytes"));
	EXPECT_IDLE();
}

/* ---------------------------------------------------------------------
 * Faults
 */

/* A child joins rank 1 and runs @fn; it tells the parent through @pfd. */
static pid_t child_rank(__u64 key, const struct kprog_node_addr *na,
			int (*fn)(struct kp_ep *e, int wfd, void *arg),
			void *arg, int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct kp_ep e;

		close(p[0]);
		if (ib_ep_open(&e, key, 1, 2, na, 0))
			_exit(2);
		_exit(fn(&e, p[1], arg));
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static int wait_byte(int fd, long long ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return -1;
	return c;
}

#define BIG	(96 * MiB)

static int child_receives(struct kp_ep *e, int wfd, void *arg)
{
	char *rb = kp_alloc(BIG);
	struct kprog_post pr;
	struct kprog_cqe c;

	if (!rb || kp_recv(e, 1, rb, BIG, 0, 1, 0, 0, &pr))
		return 3;
	if (write(wfd, "r", 1) != 1)
		return 4;
	/* killed meanwhile, normally */
	kp_complete(e, &pr, &c, 120000);
	return 0;
}

TEST_F_TIMEOUT(ib, receiver_killed_mid_transfer_fails_the_send, 300)
{
	struct kprog_node_addr na = self->na;
	char *sb = buf_new(BIG, 71);
	struct kprog_post ps;
	struct kprog_cqe c;
	struct kp_ep s;
	int rfd, st;
	__u64 key = kp_key();
	pid_t pid;

	ASSERT_NE(NULL, sb);
	ASSERT_EQ(0, ib_ep_open(&s, key, 0, 2, &na, 0));
	pid = child_rank(key, &na, child_receives, NULL, &rfd);
	ASSERT_LT(0, pid);
	ASSERT_EQ('r', wait_byte(rfd, 30000));
	ASSERT_EQ(0, kp_send(&s, 5, sb, BIG, 1, 1, 0, 0, &ps));
	/* the READs run; the receiving process dies in the middle */
	usleep(300000);
	kill(pid, SIGKILL);
	kp_child_status(pid, &st);
	close(rfd);
	ASSERT_EQ(0, kp_complete(&s, &ps, &c, 60000));
	EXPECT_EQ(-ECONNRESET, c.error) TH_LOG("bytes %llu",
					       (unsigned long long)c.bytes);
	EXPECT_GT(BIG, c.bytes);
	kp_ep_close(&s);
	kp_free(sb, BIG);
	EXPECT_IDLE();
}

static int child_sends(struct kp_ep *e, int wfd, void *arg)
{
	char *sb = kp_alloc(BIG);
	struct kprog_post ps;
	struct kprog_cqe c;

	if (!sb)
		return 3;
	kp_fill(sb, BIG, 72, 0);
	if (kp_send(e, 1, sb, BIG, 0, 1, 0, 0, &ps))
		return 4;
	if (write(wfd, "s", 1) != 1)
		return 5;
	kp_complete(e, &ps, &c, 120000);
	return 0;
}

TEST_F_TIMEOUT(ib, sender_killed_mid_transfer_ends_the_receive, 300)
{
	struct kprog_node_addr na = self->na;
	char *rb = buf_new(BIG, 0), b[8];
	struct kprog_post pr;
	struct kprog_cqe c;
	struct kp_ep r;
	int rfd, st;
	__u64 key = kp_key();
	pid_t pid;

	ASSERT_NE(NULL, rb);
	ASSERT_EQ(0, ib_ep_open(&r, key, 0, 2, &na, 0));
	pid = child_rank(key, &na, child_sends, NULL, &rfd);
	ASSERT_LT(0, pid);
	ASSERT_EQ('s', wait_byte(rfd, 30000));
	ASSERT_EQ(0, kp_recv(&r, 5, rb, BIG, 1, 1, 0, 0, &pr));
	usleep(300000);
	kill(pid, SIGKILL);
	kp_child_status(pid, &st);
	close(rfd);
	/*
	 * Pages being read stay pinned until their READ is done; what could
	 * no longer be pinned (the process is gone) fails the receive.
	 */
	ASSERT_EQ(0, kp_complete(&r, &pr, &c, 60000));
	EXPECT_TRUE(c.error == -ECONNRESET ||
		    (c.error == 0 && c.bytes == BIG))
		TH_LOG("error %d bytes %llu", c.error,
		       (unsigned long long)c.bytes);
	/* the rank is gone: a receive naming it fails at once */
	ASSERT_EQ(0, kp_recv(&r, 6, b, 8, 1, 1, 0, 0, &pr));
	if (!pr.done) {
		ASSERT_EQ(0, kp_complete(&r, &pr, &c, 10000));
	} else {
		c = pr.cqe;
	}
	EXPECT_EQ(-ECONNRESET, c.error);
	kp_ep_close(&r);
	kp_free(rb, BIG);
	EXPECT_IDLE();
}

/* `rdma link` on the device the transport uses. */
static int rdma_link(const char *verb, const char *dev, const char *netdev)
{
	char cmd[256];

	if (netdev)
		snprintf(cmd, sizeof(cmd), "rdma link %s %s type rxe netdev %s",
			 verb, dev, netdev);
	else
		snprintf(cmd, sizeof(cmd), "rdma link %s %s", verb, dev);
	return system(cmd);
}

/* The netdev under rxe device @dev ("rdma link show" says it). */
static int rxe_netdev(const char *dev, char *out, size_t size)
{
	char cmd[128], line[512], *p;
	FILE *f;
	int ret = -1;

	snprintf(cmd, sizeof(cmd), "rdma link show %s/1 2>/dev/null", dev);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f) && (p = strstr(line, "netdev ")) &&
	    sscanf(p + 7, "%63s", out) == 1 && strlen(out) < size)
		ret = 0;
	pclose(f);
	return ret;
}

TEST_F_TIMEOUT(ib, device_deleted_mid_transfer_fails_both_sides, 300)
{
	const char *dev = getenv("KPROG_RXE_DEV") ?: "rxe0";
	struct kprog_node_addr na;
	char netdev[64], *sb = buf_new(BIG, 81), *rb = buf_new(BIG, 0);
	struct kprog_post ps, pr;
	struct kprog_cqe c;
	struct kp_ep e2[2];

	ASSERT_EQ(0, rxe_netdev(dev, netdev, sizeof(netdev)))
		TH_LOG("no rxe device %s", dev);
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, rb, BIG, 1, 1, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&self->e[1], 2, sb, BIG, 0, 1, 0, 0, &ps));
	usleep(300000);
	ASSERT_EQ(0, rdma_link("delete", dev, NULL));
	ASSERT_EQ(0, kp_complete(&self->e[0], &pr, &c, 60000));
	EXPECT_EQ(-ECONNRESET, c.error);
	ASSERT_EQ(0, kp_complete(&self->e[1], &ps, &c, 60000));
	EXPECT_EQ(-ECONNRESET, c.error);
	EXPECT_IDLE();
	EXPECT_EQ(0, ib_usable(NULL));
	/* nothing reaches the other ranks now */
	EXPECT_EQ(-EHOSTUNREACH, kp_send(&self->e[1], 3, sb, 8, 0, 1, 0, 0,
					 &ps));
	EXPECT_EQ(-EHOSTUNREACH, ib_ep_open(&e2[0], kp_key(), 0, 2,
					    &self->na, 0));
	/* the device comes back: new jobs work again */
	ASSERT_EQ(0, rdma_link("add", dev, netdev));
	ASSERT_EQ(0, ib_wait_usable(&na, 30000));
	ASSERT_EQ(0, ib_job_open(e2, 2, 2, kp_key(), &na));
	ASSERT_EQ(0, kp_recv(&e2[0], 4, rb, BIG, 1, 1, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&e2[1], 5, sb, 3 * MiB, 0, 1, 0, 0, &ps));
	check_cqe(_metadata, &e2[0], &pr, 0, 3 * MiB, 1, 1, rb, 81);
	check_cqe(_metadata, &e2[1], &ps, 0, 3 * MiB, 0, 1, NULL, 0);
	kp_job_close(e2, 2);
	kp_free(sb, BIG);
	kp_free(rb, BIG);
	EXPECT_IDLE();
}

/* ---------------------------------------------------------------------
 * Unload and load again (last: it replaces the module)
 */

static int ib_remove(void)
{
	return kp_ko_remove("kprog_ib");
}

static int ib_remove_when_idle(void)
{
	return kp_ko_remove_when_idle("kprog_ib", 15000);
}

/* The loaded module's parameters as "name=value ...". */
static void ib_params(char *out, size_t size)
{
	static const char *const names[] = {
		"eager_size", "recv_bufs", "max_conns", "max_reg_mb",
		"reg_pages", "max_reads", "conn_mrs", "node_addr",
	};
	char path[256], val[128];
	size_t used = 0;
	unsigned int i;
	ssize_t n;
	int fd;

	out[0] = 0;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), IB_PARAMS "%s", names[i]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, val, sizeof(val) - 1);
		close(fd);
		if (n <= 0)
			continue;
		val[n] = 0;
		val[strcspn(val, "\n")] = 0;
		if (!val[0] || !strcmp(val, "(null)"))
			continue;
		used += snprintf(out + used, size - used, "%s%s=%s",
				 used ? " " : "", names[i], val);
		if (used >= size) {
			out[size - 1] = 0;
			return;
		}
	}
}

static int ib_load(const char *params)
{
	return kp_ko_load("kprog_ib", params, NULL);
}

TEST_F_TIMEOUT(ib, unload_is_refused_while_used_then_works_and_reloads, 300)
{
	char params[512], *sb = buf_new(BIG, 91), *rb = buf_new(BIG, 0);
	struct kprog_node_addr na;
	struct kprog_post ps, pr;
	struct kp_ep e2[2];
	int err;

	ib_params(params, sizeof(params));
	/* a job uses the transport: the module is busy */
	err = ib_remove();
	EXPECT_TRUE(err == EBUSY || err == EWOULDBLOCK) TH_LOG("%s",
							       strerror(err));
	EXPECT_TRUE(ib_loaded());
	/* traffic in flight, then every endpoint closes (as at an exit) */
	ASSERT_EQ(0, kp_recv(&self->e[0], 1, rb, BIG, 1, 1, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&self->e[1], 2, sb, BIG, 0, 1, 0, 0, &ps));
	usleep(200000);
	kp_job_close(self->e, NEP);
	/* the jobs are gone once their transfers ended: it goes */
	err = ib_remove_when_idle();
	ASSERT_EQ(0, err) TH_LOG("rmmod kprog_ib: %s", strerror(err));
	EXPECT_FALSE(ib_loaded());
	EXPECT_EQ(0, ib_usable(NULL));
	EXPECT_EQ(-EHOSTUNREACH, ib_ep_open(&e2[0], kp_key(), 0, 2,
					    &self->na, 0));
	/* and comes back */
	err = ib_load(params);
	ASSERT_EQ(0, err) TH_LOG("loading kprog_ib.ko %s: %s", params,
				 strerror(err));
	ASSERT_EQ(0, ib_wait_usable(&na, 30000));
	ASSERT_EQ(0, ib_job_open(e2, 2, 2, kp_key(), &na));
	ASSERT_EQ(0, kp_recv(&e2[0], 3, rb, BIG, 1, 1, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&e2[1], 4, sb, 5 * MiB, 0, 1, 0, 0, &ps));
	check_cqe(_metadata, &e2[0], &pr, 0, 5 * MiB, 1, 1, rb, 91);
	check_cqe(_metadata, &e2[1], &ps, 0, 5 * MiB, 0, 1, NULL, 0);
	kp_job_close(e2, 2);
	kp_free(sb, BIG);
	kp_free(rb, BIG);
	EXPECT_IDLE();
}

#endif /* KPROG_IB_ONLY_LIMITS */

TEST_HARNESS_MAIN
