// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib_perf: latency and bandwidth of the ibverbs transport over its
 * loopback (KPROG_JOIN_NET_ONLY), between two processes of one node:
 *
 *   8-byte ping-pong: half the round trip (median and minimum), eager
 *   1 MiB rendezvous stream: a window of sends, each one RDMA READ by the
 *   receiving side's kernel; MB/s
 *
 *   scripts/vm-run --rxe -- tests/selftests/kprog_ib_perf [iterations]
 *
 * Not a test: it prints figures (exit 4 when the transport is missing).
 */
#include <sys/socket.h>
#include "kprog_test.h"

#define WINDOW	8
#define BWLEN	(1 << 20)

static int node_addr(struct kprog_node_addr *na)
{
	struct kprog_info info;
	int fd = kp_open(), ret = -ENODEV;

	if (fd < 0)
		return fd;
	if (!ioctl(fd, KPROG_IOC_GET_INFO, &info) &&
	    (info.transports & KPROG_XPORT_IB) &&
	    info.node_addr.family == AF_INET) {
		*na = info.node_addr;
		ret = 0;
	}
	close(fd);
	return ret;
}

static int join(struct kp_ep *e, __u64 key, __u32 rank,
		const struct kprog_node_addr *na)
{
	static __u32 rank_nodes[2];
	int ret;

	kp_ep_reset(e);
	ret = kp_open();
	if (ret < 0)
		return ret;
	e->fd = ret;
	kp_join_init(&e->j, key, rank, 2, KPROG_JOIN_NET_ONLY, 0);
	e->j.nodes = (__u64)(uintptr_t)na;
	e->j.nr_nodes = 1;
	e->j.rank_nodes = (__u64)(uintptr_t)rank_nodes;
	if (ioctl(e->fd, KPROG_IOC_JOIN, &e->j))
		return -errno;
	e->rank = rank;
	return kp_ep_map(e);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* Post, then wait for the completion; 0 or -errno (or the cqe's error). */
static int xfer(struct kp_ep *e, unsigned long cmd, __u64 id, void *buf,
		size_t len, int peer, int tag)
{
	struct kprog_post p;
	struct kprog_cqe c;
	int ret = kp_post(e, cmd, id, buf, len, 0, peer, tag, 0, &p);

	if (ret)
		return ret;
	ret = kp_complete(e, &p, &c, 60000);
	return ret ? ret : c.error;
}

static int rank1(struct kp_ep *e, int iters, int rounds)
{
	static char small[8];
	char *big = kp_alloc((size_t)WINDOW * BWLEN);
	struct kprog_post p[WINDOW];
	struct kprog_cqe c;
	int i, r, w;

	if (!big)
		return 3;
	for (i = 0; i < iters; i++)
		if (xfer(e, KPROG_IOC_RECV, 1, small, 8, 0, 1) ||
		    xfer(e, KPROG_IOC_SEND, 2, small, 8, 0, 2))
			return 4;
	for (r = 0; r < rounds; r++) {
		for (w = 0; w < WINDOW; w++)
			if (kp_recv(e, 10 + w, big + (size_t)w * BWLEN, BWLEN,
				    0, 3, 0, 0, &p[w]))
				return 5;
		for (w = 0; w < WINDOW; w++)
			if (kp_complete(e, &p[w], &c, 60000) || c.error)
				return 6;
	}
	return xfer(e, KPROG_IOC_SEND, 3, small, 8, 0, 4) ? 7 : 0;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000, rounds = 16, i, w, st;
	long long *lat, t0, t;
	static char small[8];
	struct kprog_node_addr na;
	struct kprog_post p[WINDOW];
	struct kprog_cqe c;
	struct kp_ep e;
	__u64 key = kp_key();
	char *big;
	pid_t pid;

	(void)test_harness_run;
	if (node_addr(&na)) {
		printf("kprog_ib_perf: no ibverbs transport (scripts/vm-run --rxe)\n");
		return 4;
	}
	lat = calloc(iters, sizeof(*lat));
	big = kp_alloc((size_t)WINDOW * BWLEN);
	if (!lat || !big || join(&e, key, 0, &na))
		return 1;
	memset(big, 7, (size_t)WINDOW * BWLEN);
	pid = fork();
	if (pid == 0) {
		struct kp_ep e1;

		_exit(join(&e1, key, 1, &na) ? 2 : rank1(&e1, iters, rounds));
	}
	for (i = 0; i < iters; i++) {
		int r1, r2 = 0;

		t0 = now_ns();
		r1 = xfer(&e, KPROG_IOC_SEND, 1, small, 8, 1, 1);
		if (!r1)
			r2 = xfer(&e, KPROG_IOC_RECV, 2, small, 8, 1, 2);
		if (r1 || r2) {
			printf("ping-pong %d failed: send %d recv %d\n", i, r1,
			       r2);
			return 1;
		}
		lat[i] = now_ns() - t0;
	}
	qsort(lat, iters, sizeof(*lat), cmp_ll);
	printf("eager 8 B ping-pong over the loopback: half round trip median %.1f us, min %.1f us (%d iterations)\n",
	       lat[iters / 2] / 2000.0, lat[0] / 2000.0, iters);

	t0 = now_ns();
	for (i = 0; i < rounds; i++) {
		for (w = 0; w < WINDOW; w++)
			if (kp_send(&e, 10 + w, big + (size_t)w * BWLEN, BWLEN,
				    1, 3, 0, 0, &p[w]))
				return 1;
		for (w = 0; w < WINDOW; w++)
			if (kp_complete(&e, &p[w], &c, 60000) || c.error) {
				printf("rendezvous send failed: %d\n", c.error);
				return 1;
			}
	}
	if (xfer(&e, KPROG_IOC_RECV, 3, small, 8, 1, 4))
		return 1;
	t = now_ns() - t0;
	printf("1 MiB rendezvous (RDMA READ) stream, window %d: %.1f MB/s (%d MiB in %.3f s)\n",
	       WINDOW, (double)rounds * WINDOW * BWLEN / (t / 1e9) / 1e6,
	       rounds * WINDOW, t / 1e9);
	st = kp_child_status(pid, NULL);
	kp_ep_close(&e);
	return st ? 1 : 0;
}
