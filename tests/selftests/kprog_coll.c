// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftests of collective schedules (KPROG_IOC_COLL): forked
 * processes join one job and run hand-built schedules (a ring allreduce
 * of doubles at eager and rendezvous sizes, a dissemination barrier, a
 * binomial broadcast, two allreduces in flight at once), which the
 * kernel progresses with no further call; bad arguments get their
 * errnos; a process killed mid-schedule gives the survivor -ECONNRESET,
 * and every file and reference goes; a non-root rank's steps, started by
 * the work item, pin no more than its RLIMIT_MEMLOCK.
 *
 * With KPROG_COLL_NET=1 (and kprog_ib.ko with an RDMA device, as
 * `scripts/vm-run --rxe` sets up) the ranks join with KPROG_JOIN_NET_ONLY,
 * so that every step crosses the ibverbs transport's loopback:
 *   scripts/vm-run --rxe -- env KPROG_COLL_NET=1 SELFTESTS=kprog_coll tests/selftests/run
 */
#define _GNU_SOURCE	/* setresuid() */
#include <sys/resource.h>
#include <sys/socket.h>
#include "kprog_test.h"

#define MAXN		4
#define TMO_MS		20000

/* Shared by the forked ranks of one run: a start barrier, flags. */
struct shared {
	int joined;
	int entered[MAXN];
	int errs[MAXN];
	int cqe_err[MAXN];	/* memlock_rank(): its schedule's completion */
	long pin_kib[MAXN];	/* memlock_rank(): the most VmPin it saw */
	long pin_left[MAXN];	/* memlock_rank(): VmPin once it was done */
};

static struct shared *sh;
static int use_net;
static struct kprog_node_addr net_addr;

/* The schedule's steps (a child builds its own copy after fork). */
static struct kprog_coll_step steps[256];
static unsigned int nsteps;

static void add(__u8 kind, __u32 round, __s32 peer, const void *src, void *dst,
		__u64 len)
{
	kp_coll_step(&steps[nsteps++], kind, round, peer, src, dst, len);
}

static void add_red(__u32 round, __u8 dtype, __u8 op, const void *src,
		    void *dst, __u64 len)
{
	add(KPROG_STEP_REDUCE, round, 0, src, dst, len);
	steps[nsteps - 1].dtype = dtype;
	steps[nsteps - 1].op = op;
}

static int coll_post(struct kp_ep *e, __s32 tag, __u64 req_id,
		     struct kprog_coll *out)
{
	struct kprog_coll c = {
		.req_id = req_id,
		.steps = (__u64)(uintptr_t)steps,
		.nr_steps = nsteps,
		.context = 7,
		.tag = tag,
	};
	int ret = ioctl(e->fd, KPROG_IOC_COLL, &c) ? -errno : 0;

	if (out)
		*out = c;
	return ret;
}

/* Post the schedule in steps[] and wait for its one completion. */
static int coll_run(struct kp_ep *e, __s32 tag, __u64 req_id)
{
	struct kprog_coll c;
	struct kprog_cqe q;
	int ret = coll_post(e, tag, req_id, &c);

	if (ret)
		return ret;
	if (c.done)
		return c.cqe.req_id == req_id ? c.cqe.error : -EPROTO;
	ret = kp_wait_cqe(e, req_id, &q, TMO_MS);
	return ret ? ret : q.error;
}

static int ep_open(struct kp_ep *e, __u64 key, int rank, int n)
{
	__u32 nodes[MAXN] = { 0 };
	int ret;

	if (!use_net)
		return kp_ep_open(e, key, rank, n, 0, 0);
	kp_ep_reset(e);
	ret = kp_open();
	if (ret < 0)
		return ret;
	e->fd = ret;
	kp_join_init(&e->j, key, rank, n, KPROG_JOIN_NET_ONLY, 0);
	e->j.nodes = (__u64)(uintptr_t)&net_addr;
	e->j.nr_nodes = 1;
	e->j.rank_nodes = (__u64)(uintptr_t)nodes;
	ret = ioctl(e->fd, KPROG_IOC_JOIN, &e->j) ? -errno : kp_ep_map(e);
	if (ret) {
		kp_ep_close(e);
		return ret;
	}
	e->rank = rank;
	return 0;
}

typedef int (*rank_fn)(struct kp_ep *e, int rank, int n, void *arg);

/*
 * Forks @n ranks of a new job; each joins, waits until all have, runs
 * @fn and reports its result in sh->errs[rank] (0 or a negative errno).
 * Returns the number of ranks that failed or did not finish.
 */
static int run_ranks(int n, rank_fn fn, void *arg)
{
	__u64 key = kp_key();
	pid_t pid[MAXN];
	int i, bad = 0;

	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			return n;
		if (!pid[i]) {
			struct kp_ep e;
			long long end = kp_now_ms() + TMO_MS;
			int ret = ep_open(&e, key, i, n);

			__atomic_add_fetch(&sh->joined, ret ? 1000 : 1,
					   __ATOMIC_SEQ_CST);
			while (!ret && __atomic_load_n(&sh->joined,
						       __ATOMIC_SEQ_CST) < n) {
				if (kp_now_ms() > end)
					ret = -ETIMEDOUT;
				usleep(1000);
			}
			if (!ret)
				ret = fn(&e, i, n, arg);
			sh->errs[i] = ret;
			kp_ep_close(&e);
			_exit(ret ? 1 : 0);
		}
	}
	for (i = 0; i < n; i++) {
		if (kp_child_wait(pid[i], TMO_MS + 5000)) {
			fprintf(stderr, "# rank %d: %s\n", i,
				kp_strerr(sh->errs[i] ? sh->errs[i] : -ETIMEDOUT));
			bad++;
		}
	}
	return bad;
}

/* ---- ring allreduce (reduce-scatter, then allgather) ---- */

struct ar_arg {
	size_t count;		/* doubles per rank */
	int twice;		/* two allreduces in flight, posted in turn */
};

static void chunk(size_t count, int n, int c, size_t *off, size_t *len)
{
	size_t base = count / n, rem = count % n;

	c = ((c % n) + n) % n;
	*off = c * base + (c < (int)rem ? c : rem);
	*len = base + (c < (int)rem);
}

/* Appends the steps of a ring allreduce of @data (sum of doubles). */
static void ring_allreduce(double *data, double *tmp, size_t count, int rank,
			   int n)
{
	int right = (rank + 1) % n, left = (rank + n - 1) % n, s;
	size_t so, sl, ro, rl;
	__u32 round = 0;

	for (s = 0; s < n - 1; s++, round += 2) {
		chunk(count, n, rank - s, &so, &sl);
		chunk(count, n, rank - s - 1, &ro, &rl);
		add(KPROG_STEP_SEND, round, right, data + so, NULL, sl * 8);
		add(KPROG_STEP_RECV, round, left, NULL, tmp, rl * 8);
		add_red(round + 1, KPROG_DT_DOUBLE, KPROG_OP_SUM, tmp,
			data + ro, rl * 8);
	}
	for (s = 0; s < n - 1; s++, round++) {
		chunk(count, n, rank + 1 - s, &so, &sl);
		chunk(count, n, rank - s, &ro, &rl);
		add(KPROG_STEP_SEND, round, right, data + so, NULL, sl * 8);
		add(KPROG_STEP_RECV, round, left, NULL, data + ro, rl * 8);
	}
}

static double val(int rank, size_t i)
{
	return rank * 1000.0 + i * 0.25;
}

static int allreduce_rank(struct kp_ep *e, int rank, int n, void *arg)
{
	struct ar_arg *a = arg;
	size_t count = a->count, i, k;
	int copies = a->twice ? 2 : 1, c, r, ret = 0;
	double *data[2], *tmp[2], want;
	struct kprog_cqe q;

	for (c = 0; c < copies; c++) {
		data[c] = malloc(count * 8);
		tmp[c] = malloc((count / n + 1) * 8);
		if (!data[c] || !tmp[c])
			return -ENOMEM;
		for (i = 0; i < count; i++)
			data[c][i] = val(rank, i) + c;
	}
	if (!a->twice) {
		nsteps = 0;
		ring_allreduce(data[0], tmp[0], count, rank, n);
		ret = coll_run(e, 1, 100);
	} else {
		/* Odd ranks post the second collective first. */
		for (k = 0; k < 2 && !ret; k++) {
			c = rank % 2 ? 1 - k : k;
			nsteps = 0;
			ring_allreduce(data[c], tmp[c], count, rank, n);
			ret = coll_post(e, 10 + c, 200 + c, NULL);
		}
		for (c = 0; c < 2 && !ret; c++) {
			ret = kp_wait_cqe(e, 200 + c, &q, TMO_MS);
			if (!ret)
				ret = q.error;
		}
	}
	for (c = 0; c < copies && !ret; c++) {
		for (i = 0; i < count; i++) {
			want = 0;
			for (r = 0; r < n; r++)
				want += val(r, i) + c;
			if (data[c][i] != want) {
				fprintf(stderr, "# rank %d: [%zu] %g != %g\n",
					rank, i, data[c][i], want);
				ret = -EBADMSG;
				break;
			}
		}
	}
	for (c = 0; c < copies; c++) {
		free(data[c]);
		free(tmp[c]);
	}
	return ret;
}

/* ---- dissemination barrier ---- */

static int barrier_rank(struct kp_ep *e, int rank, int n, void *arg)
{
	int k, round = 0, ret, r;

	nsteps = 0;
	for (k = 1; k < n; k *= 2, round++) {
		add(KPROG_STEP_SEND, round, (rank + k) % n, NULL, NULL, 0);
		add(KPROG_STEP_RECV, round, (rank + n - k) % n, NULL, NULL, 0);
	}
	/* The last rank comes late: nobody may leave before it entered. */
	if (rank == n - 1)
		usleep(200 * 1000);
	__atomic_store_n(&sh->entered[rank], 1, __ATOMIC_SEQ_CST);
	ret = coll_run(e, 3, 300);
	for (r = 0; !ret && r < n; r++)
		if (!__atomic_load_n(&sh->entered[r], __ATOMIC_SEQ_CST))
			ret = -EPROTO;
	return ret;
}

/* ---- binomial broadcast from rank 0 ---- */

static int bcast_rank(struct kp_ep *e, int rank, int n, void *arg)
{
	size_t len = *(size_t *)arg;
	unsigned char *buf = malloc(len);
	int c, hb, ret;

	if (!buf)
		return -ENOMEM;
	if (rank == 0)
		kp_fill(buf, len, 42, 0);
	else
		memset(buf, 0, len);
	nsteps = 0;
	/* The parent of c is c minus its highest bit. */
	for (c = 1; c < n; c++) {
		for (hb = 1; hb * 2 <= c; hb *= 2)
			;
		if (c == rank)
			add(KPROG_STEP_RECV, 0, c - hb, NULL, buf, len);
		else if (c - hb == rank)
			add(KPROG_STEP_SEND, 1, c, buf, NULL, len);
	}
	ret = nsteps ? coll_run(e, 4, 400) : 0;
	if (!ret && kp_check(buf, len, 42, 0) >= 0)
		ret = -EBADMSG;
	free(buf);
	return ret;
}

/* ---- a non-root poster's RLIMIT_MEMLOCK ---- */

struct ml_arg {
	size_t len;		/* bytes rank 1 sends to rank 0 */
	rlim_t limit;		/* both ranks' RLIMIT_MEMLOCK, in bytes */
};

/*
 * Rank 1 sends @len bytes to rank 0 in a one-step schedule each, posted
 * as uid nobody (no CAP_IPC_LOCK) with `ulimit -l` @limit bytes: a
 * rendezvous step, which the work item starts (a kernel thread, which has
 * every capability). Records the completion's error, the most the rank
 * had pinned long-term while it waited (sampled) and what was left pinned
 * once its buffer was unmapped; fails only when the test itself could not
 * run, or rank 0 got the wrong bytes.
 */
static int memlock_rank(struct kp_ep *e, int rank, int n, void *arg)
{
	struct ml_arg *a = arg;
	struct rlimit rl = { a->limit, a->limit };
	unsigned char *buf = kp_alloc(a->len);
	long long end = kp_now_ms() + TMO_MS;
	struct kprog_cqe q = { 0 };
	struct kprog_coll c;
	long pin, max = 0;
	int ret;

	if (!buf)
		return -ENOMEM;
	if (rank == 1)
		kp_fill(buf, a->len, 61, 0);
	/* Joined as root; the schedule is posted as nobody. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) {
		kp_free(buf, a->len);
		return -EPERM;
	}
	nsteps = 0;
	if (rank == 1)
		add(KPROG_STEP_SEND, 0, 0, buf, NULL, a->len);
	else
		add(KPROG_STEP_RECV, 0, 1, NULL, buf, a->len);
	ret = coll_post(e, 6, 600, &c);
	if (!ret && c.done)
		q = c.cqe;
	while (!ret && !c.done) {
		pin = kp_vm_pin_kib();
		if (pin > max)
			max = pin;
		/* 1 ms slices, so that VmPin is sampled while the step runs */
		ret = kp_wait_cqe(e, 600, &q, 1);
		if (!ret)
			break;
		if (ret == -ETIMEDOUT && kp_now_ms() <= end)
			ret = 0;
	}
	sh->cqe_err[rank] = q.error;
	sh->pin_kib[rank] = max;
	if (!ret && rank == 0 && !q.error && kp_check(buf, a->len, 61, 0) >= 0)
		ret = -EBADMSG;
	kp_free(buf, a->len);
	sh->pin_left[rank] = kp_vm_pin_settled_kib();
	return ret;
}

FIXTURE(coll) {
	int dummy;
};

FIXTURE_SETUP(coll)
{
	struct kprog_info info;
	int fd = kp_open();
	const char *net = getenv("KPROG_COLL_NET");

	if (fd < 0)
		SKIP(return, "no %s: %s", KPROG_DEVICE, kp_strerr(fd));
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_GET_INFO, &info));
	close(fd);
	if (!(info.features & KPROG_FEAT_COLL))
		SKIP(return, "module without KPROG_FEAT_COLL");
	use_net = net && *net == '1';
	if (use_net) {
		if (!(info.transports & KPROG_XPORT_IB) ||
		    info.node_addr.family != AF_INET)
			SKIP(return, "KPROG_COLL_NET=1 without a usable ibverbs transport");
		net_addr = info.node_addr;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
}

FIXTURE_TEARDOWN(coll)
{
	if (sh && sh != MAP_FAILED)
		munmap(sh, sizeof(*sh));
	sh = NULL;
}

TEST_F(coll, info_reports_the_feature_and_max_coll_steps)
{
	struct kprog_info info;
	int fd = kp_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, KPROG_IOC_GET_INFO, &info));
	EXPECT_TRUE(info.features & KPROG_FEAT_COLL);
	EXPECT_EQ(kp_param("max_coll_steps"), info.max_coll_steps);
	close(fd);
}

TEST_F_TIMEOUT(coll, ring_allreduce_of_doubles_eager, 120)
{
	struct ar_arg a = { .count = 1001 };
	int n;

	for (n = 2; n <= MAXN; n++)
		EXPECT_EQ(0, run_ranks(n, allreduce_rank, &a)) TH_LOG("%d ranks", n);
}

TEST_F_TIMEOUT(coll, ring_allreduce_of_doubles_rendezvous, 300)
{
	struct ar_arg a = { .count = 100003 };

	EXPECT_EQ(0, run_ranks(3, allreduce_rank, &a));
	EXPECT_EQ(0, run_ranks(4, allreduce_rank, &a));
}

TEST_F_TIMEOUT(coll, two_allreduces_in_flight_posted_in_opposite_orders, 120)
{
	struct ar_arg a = { .count = 5000, .twice = 1 };

	EXPECT_EQ(0, run_ranks(4, allreduce_rank, &a));
}

TEST_F_TIMEOUT(coll, barrier_waits_for_the_last_rank, 120)
{
	EXPECT_EQ(0, run_ranks(3, barrier_rank, NULL));
	EXPECT_EQ(0, run_ranks(4, barrier_rank, NULL));
}

TEST_F_TIMEOUT(coll, binomial_broadcast, 120)
{
	size_t small = 100, big = 300000;

	EXPECT_EQ(0, run_ranks(4, bcast_rank, &small));
	EXPECT_EQ(0, run_ranks(3, bcast_rank, &big));
}

/*
 * A schedule's steps may pin no more of a process than its RLIMIT_MEMLOCK,
 * although the work item that starts them is a kernel thread: a non-root
 * rank with 16 KiB of `ulimit -l` posts a rendezvous-sized send, which the
 * ibverbs transport must pin long-term (KPROG_COLL_NET=1): refused with
 * ENOMEM (the receiver then sees the sender leave); within 8 MiB it is
 * pinned chunk by chunk. Over the shared-memory transport nothing is
 * pinned long-term (chunk by chunk, for the copy only), and both complete.
 * Never more pinned than the limit, and nothing left pinned.
 */
TEST_F_TIMEOUT(coll, steps_of_a_non_root_poster_stay_within_its_memlock_limit,
	       180)
{
	struct ml_arg a = { .len = 4 << 20, .limit = 16384 };
	int r;

	EXPECT_EQ(0, run_ranks(2, memlock_rank, &a));
	if (use_net) {
		EXPECT_EQ(-ENOMEM, sh->cqe_err[1]) TH_LOG("%s",
			kp_strerr(sh->cqe_err[1]));
		EXPECT_EQ(-ECONNRESET, sh->cqe_err[0]) TH_LOG("%s",
			kp_strerr(sh->cqe_err[0]));
	} else {
		EXPECT_EQ(0, sh->cqe_err[1]);
		EXPECT_EQ(0, sh->cqe_err[0]);
	}
	for (r = 0; r < 2; r++) {
		EXPECT_GE(16, sh->pin_kib[r]) TH_LOG("rank %d", r);
		EXPECT_EQ(0, sh->pin_left[r]) TH_LOG("rank %d", r);
	}

	a.limit = 8 << 20;
	EXPECT_EQ(0, run_ranks(2, memlock_rank, &a));
	for (r = 0; r < 2; r++) {
		EXPECT_EQ(0, sh->cqe_err[r]) TH_LOG("rank %d: %s", r,
			kp_strerr(sh->cqe_err[r]));
		EXPECT_GE(8192, sh->pin_kib[r]) TH_LOG("rank %d", r);
		EXPECT_EQ(0, sh->pin_left[r]) TH_LOG("rank %d", r);
	}
}

static int bad_args_checks(struct kp_ep *e)
{
	static double x[4], y[4];
	struct kprog_coll c;
	unsigned int i;
	long long max;
	struct {
		struct kprog_coll_step s;
		int err;
	} bad[] = {
		{ { .kind = 0, .peer = 1, .len = 8 }, EINVAL },
		{ { .kind = KPROG_STEP_SEND, .peer = 0, .len = 8 }, EINVAL },
		{ { .kind = KPROG_STEP_SEND, .peer = 2, .len = 8 }, EINVAL },
		{ { .kind = KPROG_STEP_SEND, .peer = 1, .flags = 4 }, EINVAL },
		{ { .kind = KPROG_STEP_RECV, .peer = 1, .dst = -4096ULL,
		    .len = 8 }, EFAULT },
		{ { .kind = KPROG_STEP_REDUCE, .dtype = KPROG_DT_DOUBLE,
		    .op = KPROG_OP_BXOR, .len = 8 }, EINVAL },
		{ { .kind = KPROG_STEP_REDUCE, .dtype = KPROG_DT_DOUBLE,
		    .op = KPROG_OP_SUM, .len = 12 }, EINVAL },
		{ { .kind = KPROG_STEP_REDUCE, .dtype = KPROG_DT_INT32,
		    .op = KPROG_OP_MAXLOC, .len = 8 }, EINVAL },
		{ { .kind = KPROG_STEP_REDUCE, .dtype = 99,
		    .op = KPROG_OP_SUM, .len = 8 }, EINVAL },
	};

	bad[5].s.src = bad[6].s.src = bad[7].s.src = bad[8].s.src =
		(__u64)(uintptr_t)x;
	bad[5].s.dst = bad[6].s.dst = bad[7].s.dst = bad[8].s.dst =
		(__u64)(uintptr_t)y;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		nsteps = 1;
		steps[0] = bad[i].s;
		if (coll_post(e, 1, 1, NULL) != -bad[i].err) {
			fprintf(stderr, "# case %u: %s\n", i,
				kp_strerr(coll_post(e, 1, 1, NULL)));
			return -EPROTO;
		}
	}
	nsteps = 0;
	add(KPROG_STEP_COPY, 1, 0, x, y, 8);
	add(KPROG_STEP_COPY, 0, 0, x, y, 8);
	if (coll_post(e, 1, 1, NULL) != -EINVAL)	/* rounds decrease */
		return -EPROTO;
	nsteps = 0;
	if (coll_post(e, 1, 1, NULL) != -EINVAL)
		return -EPROTO;
	max = kp_param("max_coll_steps");
	c = (struct kprog_coll){ .steps = (__u64)(uintptr_t)steps,
				 .nr_steps = max + 1 };
	if (ioctl(e->fd, KPROG_IOC_COLL, &c) != -1 || errno != E2BIG)
		return -EPROTO;
	c = (struct kprog_coll){ .steps = 8, .nr_steps = 1 };
	if (ioctl(e->fd, KPROG_IOC_COLL, &c) != -1 || errno != EFAULT)
		return -EPROTO;
	c = (struct kprog_coll){ .steps = (__u64)(uintptr_t)steps,
				 .nr_steps = 1, .tag = -1 };
	if (ioctl(e->fd, KPROG_IOC_COLL, &c) != -1 || errno != EINVAL)
		return -EPROTO;
	/* max_colls schedules wait for a message that never comes. */
	nsteps = 0;
	add(KPROG_STEP_RECV, 0, 1, NULL, y, 8);
	for (i = 0; i < kp_param("max_colls"); i++)
		if (coll_post(e, 20 + i, 20 + i, &c) || c.done)
			return -EPROTO;
	if (coll_post(e, 1, 1, NULL) != -ENOBUFS)
		return -EPROTO;
	/* A schedule is not cancelled. */
	{
		struct kprog_cancel cc = { .req_id = 20 };

		if (ioctl(e->fd, KPROG_IOC_CANCEL, &cc) != -1 || errno != EBUSY)
			return -EPROTO;
	}
	return 0;
}

static int bad_args_rank(struct kp_ep *e, int rank, int n, void *arg)
{
	int ret;

	if (rank) {
		/* Stays joined until rank 0 is done: its receives wait for us. */
		while (!__atomic_load_n(&sh->entered[0], __ATOMIC_SEQ_CST))
			usleep(1000);
		return 0;
	}
	ret = bad_args_checks(e);
	__atomic_store_n(&sh->entered[0], 1, __ATOMIC_SEQ_CST);
	return ret;
}

TEST_F_TIMEOUT(coll, bad_arguments_get_their_errnos, 60)
{
	EXPECT_EQ(0, run_ranks(2, bad_args_rank, NULL));
}

static int module_refs(void)
{
	return kp_sysfs_param("/sys/module/kprog/", "refcnt");
}

TEST_F_TIMEOUT(coll, process_killed_mid_schedule_gives_econnreset, 120)
{
	__u64 key = kp_key();
	int refs = module_refs(), p[2];
	struct kprog_cqe q;
	struct kp_ep e;
	double x[64], y[64];
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, ep_open(&e, key, 0, 2));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kp_ep v;

		close(p[0]);
		kp_ep_close(&e);	/* the parent's endpoint stays the parent's */
		if (ep_open(&v, key, 1, 2))
			_exit(1);
		/* Sends its part of round 0, never round 1's. */
		nsteps = 0;
		add(KPROG_STEP_SEND, 0, 0, x, NULL, sizeof(x));
		add(KPROG_STEP_RECV, 0, 0, NULL, y, 8);
		add(KPROG_STEP_SEND, 1, 0, x, NULL, sizeof(x));
		coll_post(&v, 5, 1, NULL);
		kp_pipe_put(p[1], 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(1, kp_pipe_get(p[0], TMO_MS));
	nsteps = 0;
	add(KPROG_STEP_RECV, 0, 1, NULL, y, sizeof(y));
	add(KPROG_STEP_RECV, 1, 1, NULL, y, sizeof(y));
	add(KPROG_STEP_SEND, 1, 1, x, NULL, sizeof(x));
	ASSERT_EQ(0, coll_post(&e, 5, 77, NULL));
	usleep(100 * 1000);
	kp_ring_drain(&e);
	EXPECT_FALSE(kp_take(&e, 77, NULL));	/* round 1 waits */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ASSERT_EQ(0, kp_wait_cqe(&e, 77, &q, TMO_MS));
	EXPECT_EQ(-ECONNRESET, q.error);
	kp_ep_close(&e);
	close(p[0]);
	/* Every file is gone: the module is held by no one. */
	EXPECT_EQ(refs, module_refs());
}

TEST_HARNESS_MAIN
