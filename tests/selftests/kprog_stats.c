// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftest: the generic netlink family (per-CPU counters), the
 * debugfs view and the tracepoints.
 *
 * The counters must equal what was generated: completions consumed, bytes
 * received, transfers handed to the worker. Runs as root in the VM with
 * nothing else using the module (the counters are host-wide). The
 * interrupt source is kprog_bench.ko's (kprog_bench.c).
 */
#include "kprog_genl.h"
#include <dirent.h>
#include <sys/mount.h>

#define POSSIBLE	"/sys/devices/system/cpu/possible"
#define ONLINE		"/sys/devices/system/cpu/online"
#define DEBUGFS_STATS	"/sys/kernel/debug/kprog/stats"
#define WORDS		(KPN_MAX_CPUS / 64)

static __u64 by_cpu[KPN_MAX_CPUS][KS_N];
static __u64 sum[KS_N];

/* Every test starts with the counters zero. */
FIXTURE(nl) {
	struct kpn k;
	__u64 online[WORDS];
	__u64 possible[WORDS];
	int nonline, npossible;
};

FIXTURE_SETUP(nl)
{
	int ret = kpn_open(&self->k);

	ASSERT_EQ(0, ret) TH_LOG("family \"%s\": %s (module loaded?)",
				 KPROG_GENL_NAME, kp_strerr(ret));
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_RESET_STATS));
	self->npossible = kp_cpulist(POSSIBLE, self->possible, WORDS);
	self->nonline = kp_cpulist(ONLINE, self->online, WORDS);
	ASSERT_LT(0, self->npossible);
	ASSERT_LT(0, self->nonline);
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

FIXTURE_TEARDOWN(nl)
{
	kpn_close(&self->k);
}

static const char *stat_name(int i)
{
	return i >= 0 && i < KS_N ? kprog_stat_names[i] : "?";
}

TEST_F(nl, dump_has_one_message_per_possible_cpu)
{
	static struct kpn_cpu cpus[KPN_MAX_CPUS];
	__u64 seen[WORDS] = { 0 };
	int n = 0, i;

	ASSERT_EQ(0, kpn_get_stats(&self->k, cpus, KPN_MAX_CPUS, &n))
		TH_LOG("%s", self->k.msg);
	EXPECT_EQ(self->npossible, n);
	for (i = 0; i < n; i++) {
		int c = cpus[i].cpu;

		ASSERT_LE(0, c) TH_LOG("message %d without KPROG_A_CPU", i);
		ASSERT_GT(KPN_MAX_CPUS, c);
		EXPECT_TRUE(kp_bit(self->possible, c))
			TH_LOG("CPU %d is not possible", c);
		EXPECT_FALSE(kp_bit(seen, c)) TH_LOG("CPU %d twice", c);
		seen[c / 64] |= 1ULL << (c % 64);
		EXPECT_EQ(0, cpus[i].missing)
			TH_LOG("CPU %d: %d counters missing", c,
			       cpus[i].missing);
	}
	EXPECT_EQ(0, memcmp(seen, self->possible, sizeof(seen)));
}

TEST_F(nl, commands_without_attributes_reject_them)
{
	__u32 cpu = 0;
	struct kpn_attr a = { KPROG_A_CPU, 4, &cpu };

	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_CMD_RESET_STATS, 0,
				       &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_CMD_GET_STATS, 1,
				       &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EOPNOTSUPP, kpn_cmd(&self->k, KPROG_CMD_MAX + 1));
}

/* A GET_STATS message with an attribute of the interrupt source. */
static int retired_attrs(struct nlattr **tb, void *arg)
{
	int *bad = arg, i;

	for (i = 4; i <= 18; i++)
		if ((i <= 5 || i >= 12) && tb[i])
			(*bad)++;
	return 0;
}

/*
 * The interrupt source's commands (3..5, IRQ_START/STOP/STATUS before it
 * moved to kprog_bench.ko) are not served, with or without attributes,
 * and the counters only the source fed (4, 5, 18) are not sent.
 */
TEST_F(nl, no_interrupt_source)
{
	__u32 hz = 100, dur = 100;
	const struct kpn_attr a[] = { { 12, 4, &hz }, { 15, 4, &dur } };
	int cmd, n = 0, bad = 0;

	for (cmd = 3; cmd <= 5; cmd++) {
		EXPECT_EQ(-EOPNOTSUPP, kpn_cmd(&self->k, cmd)) TH_LOG("%d", cmd);
		EXPECT_EQ(-EOPNOTSUPP, kpn_request(&self->k, cmd, 0, a, 2,
						   NULL, NULL, NULL))
			TH_LOG("%d", cmd);
	}
	EXPECT_EQ(3, __KPROG_CMD_RETIRED_3);
	EXPECT_EQ(5, KPROG_CMD_MAX);
	EXPECT_EQ(11, KPROG_A_STAT_WAKEUPS);
	EXPECT_EQ(19, KPROG_A_STAT_NET_CQES);
	ASSERT_EQ(0, kpn_request(&self->k, KPROG_CMD_GET_STATS, 1, NULL, 0,
				 retired_attrs, &bad, &n));
	EXPECT_EQ(self->npossible, n);
	EXPECT_EQ(0, bad) TH_LOG("%d retired attributes sent", bad);
	/* kprog_bench's device is another module's, not this one's */
	EXPECT_NE(0, access("/sys/module/kprog/holders/kprog_bench", F_OK));
}

/* One message from @s to @r; every completion consumed is counted. */
struct xchg {
	size_t slen, rlen;
	int recv_first;
	__u32 sflags;
};

struct tally {
	__u64 cqes;		/* completions consumed (inline or ring) */
	__u64 recv_bytes;	/* sum of cqe.bytes of the receives */
	__u64 worker;		/* transfers above the eager limit */
};

static int one_message(struct kp_ep *s, struct kp_ep *r, const struct xchg *x,
		       __u64 id, struct tally *t)
{
	unsigned char *sb = kp_alloc(x->slen), *rb = kp_alloc(x->rlen);
	struct kprog_post ps, pr;
	struct kprog_cqe cs, cr;
	size_t n = x->slen < x->rlen ? x->slen : x->rlen;
	int ret = -ENOMEM;

	if (!sb || !rb)
		goto out;
	kp_fill(sb, x->slen, id, 0);
	if (x->recv_first) {
		ret = kp_recv(r, 2 * id + 1, rb, x->rlen, s->rank, 7, 0, 0,
			      &pr);
		if (!ret)
			ret = kp_send(s, 2 * id, sb, x->slen, r->rank, 7, 0,
				      x->sflags, &ps);
	} else {
		ret = kp_send(s, 2 * id, sb, x->slen, r->rank, 7, 0, x->sflags,
			      &ps);
		if (!ret)
			ret = kp_recv(r, 2 * id + 1, rb, x->rlen, s->rank, 7, 0,
				      0, &pr);
	}
	if (ret)
		goto out;
	ret = kp_complete(s, &ps, &cs, KP_TMO_MS);
	if (!ret)
		ret = kp_complete(r, &pr, &cr, KP_TMO_MS);
	if (ret)
		goto out;
	t->cqes += 2;
	t->recv_bytes += cr.bytes;
	if (n > kp_eager(s))
		t->worker++;
	if (cr.bytes != n || cs.error ||
	    cr.error != (x->slen > x->rlen ? -EMSGSIZE : 0) ||
	    kp_check(rb, n, id, 0) != -1)
		ret = -EBADMSG;
out:
	kp_free(sb, x->slen);
	kp_free(rb, x->rlen);
	return ret;
}

static void traffic(struct __test_metadata *_metadata, struct tally *t)
{
	struct kp_ep e[2];
	size_t eager;
	unsigned int i, order;

	memset(t, 0, sizeof(*t));
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	eager = kp_eager(&e[0]);
	{
		const struct xchg xs[] = {
			{ 0, 0 }, { 1, 1 }, { 100, 100 },
			{ eager, eager }, { eager + 1, eager + 1 },
			{ 100, 50 },				/* truncated */
			{ 64 << 10, 64 << 10 },
			{ 300 << 10, 100 << 10 },		/* truncated */
			{ (1 << 20) + 3, (1 << 20) + 3 },
			{ 200, 200, 0, KPROG_SEND_SYNC },	/* rendezvous */
		};

		for (order = 0; order < 2; order++)
			for (i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
				struct xchg x = xs[i];

				x.recv_first = order;
				ASSERT_EQ(0, one_message(&e[order], &e[!order],
							 &x, 16 * i + order,
							 t))
					TH_LOG("message %u order %u", i, order);
			}
	}
	kp_job_close(e, 2);
}

TEST_F(nl, counted_events_and_bytes_equal_generated)
{
	struct tally t;
	int c;

	traffic(_metadata, &t);
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	EXPECT_EQ(t.cqes, sum[KS_EVENTS]);
	EXPECT_EQ(t.recv_bytes, sum[KS_BYTES]);
	EXPECT_EQ(t.worker, sum[KS_WORK_ITEMS]);
	EXPECT_LT(0, t.worker);
	EXPECT_LT(0, sum[KS_WORK_NS]);
	EXPECT_EQ(0, sum[KS_TASKLET_RUNS]);
	for (c = 0; c < KPN_MAX_CPUS; c++)
		if (!kp_bit(self->possible, c))
			EXPECT_EQ(0, by_cpu[c][KS_EVENTS]);
	TH_LOG("%llu completions, %llu bytes, %llu worker transfers in %llu ns",
	       (unsigned long long)sum[KS_EVENTS],
	       (unsigned long long)sum[KS_BYTES],
	       (unsigned long long)sum[KS_WORK_ITEMS],
	       (unsigned long long)sum[KS_WORK_NS]);
}

TEST_F(nl, reset_zeroes_every_counter)
{
	struct tally t;
	int c, i;

	traffic(_metadata, &t);
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	ASSERT_LT(0, sum[KS_EVENTS]);
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_RESET_STATS));
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	for (c = 0; c < KPN_MAX_CPUS; c++)
		for (i = 0; i < KS_N; i++)
			EXPECT_EQ(0, by_cpu[c][i])
				TH_LOG("CPU %d %s", c, stat_name(i));
}

TEST_F(nl, debugfs_shows_the_same_counters)
{
	char line[1024], head[1024];
	int lines = 0, c, i;
	struct tally t;
	FILE *f;

	traffic(_metadata, &t);
	f = fopen(DEBUGFS_STATS, "r");
	if (!f)
		SKIP(return, DEBUGFS_STATS ": %s", strerror(errno));
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	strcpy(head, "cpu");
	for (i = 0; i < KS_N; i++)
		sprintf(head + strlen(head), " %s", kprog_stat_names[i]);
	strcat(head, "\n");
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	EXPECT_STREQ(head, line);
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		c = strtol(p, &p, 10);
		ASSERT_TRUE(c >= 0 && c < KPN_MAX_CPUS && kp_bit(self->possible, c))
			TH_LOG("line %s", line);
		for (i = 0; i < KS_N; i++)
			EXPECT_EQ(by_cpu[c][i], strtoull(p, &p, 10))
				TH_LOG("CPU %d %s", c, stat_name(i));
		lines++;
	}
	fclose(f);
	EXPECT_EQ(self->npossible, lines);
}

/* Run as nobody: reading is allowed, resetting is CAP_NET_ADMIN's. */
TEST_F(nl, unprivileged_may_read_not_change)
{
	static struct kpn_cpu cpus[KPN_MAX_CPUS];
	struct kpn k;
	int n;

	ASSERT_EQ(0, setgid(65534));
	ASSERT_EQ(0, setuid(65534));
	ASSERT_EQ(0, kpn_open(&k));
	EXPECT_EQ(0, kpn_get_stats(&k, cpus, KPN_MAX_CPUS, &n));
	EXPECT_EQ(self->npossible, n);
	EXPECT_EQ(-EPERM, kpn_cmd(&k, KPROG_CMD_RESET_STATS));
	kpn_close(&k);
}

/* tracefs: the mount point, mounting it if needed; NULL if unavailable. */
static const char *tracefs(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };
	char path[256];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/instances", dirs[i]);
		if (!access(path, F_OK))
			return dirs[i];
	}
	if (!mount("nodev", dirs[0], "tracefs", 0, NULL))
		return dirs[0];
	return NULL;
}

/* The line of @event in @text that has every one of @keys, after @from. */
static const char *find_event(const char *text, const char *from,
			      const char *event, const char *const *keys)
{
	const char *p = from ? from : text;
	char ev[64];

	snprintf(ev, sizeof(ev), " %s: ", event);
	while ((p = strstr(p, ev))) {
		const char *bol = p, *eol = strchr(p, '\n');
		int i, ok = 1;

		while (bol > text && bol[-1] != '\n')
			bol--;
		if (!eol)
			eol = p + strlen(p);
		for (i = 0; keys[i] && ok; i++) {
			const char *k = strstr(p, keys[i]);

			ok = k && k < eol;
		}
		if (ok)
			return bol;
		p = eol;
	}
	return NULL;
}

TEST_F_TIMEOUT(nl, tracepoints_follow_a_message, 120)
{
	const char *tfs = tracefs();
	char inst[256], path[320], job[64], sreq[64], rreq[64], sid[64],
	     rid[64], bytes[64];
	size_t len = 256 << 10, got = 0, cap = 1 << 22;
	struct kprog_post ps, pr;
	struct kprog_cqe c;
	unsigned char *sb, *rb;
	const char *p;
	struct kp_ep e[2];
	char *text;
	__u64 key = kp_key();
	int fd;
	ssize_t n;

	if (!tfs)
		SKIP(return, "no tracefs");
	snprintf(inst, sizeof(inst), "%s/instances/kprog_selftest_%d", tfs,
		 getpid());
	ASSERT_EQ(0, mkdir(inst, 0700)) TH_LOG("%s: %s", inst,
					       strerror(errno));
	snprintf(path, sizeof(path), "%s/events/kprog/enable", inst);
	ASSERT_EQ(0, write_file(path, "1"));

	sb = kp_alloc(len);
	rb = kp_alloc(len);
	ASSERT_TRUE(sb && rb);
	ASSERT_EQ(0, kp_job_open(e, 2, 2, key, 0, 0));
	ASSERT_LT(kp_eager(&e[0]), len);
	ASSERT_EQ(0, kp_recv(&e[1], 0x5eed0002, rb, len, 0, 9, 0, 0, &pr));
	ASSERT_EQ(0, kp_send(&e[0], 0x5eed0001, sb, len, 1, 9, 0, 0, &ps));
	ASSERT_EQ(0, kp_complete(&e[0], &ps, &c, KP_TMO_MS));
	ASSERT_EQ(0, kp_complete(&e[1], &pr, &c, KP_TMO_MS));
	kp_job_close(e, 2);
	ASSERT_EQ(0, write_file(path, "0"));

	snprintf(path, sizeof(path), "%s/trace", inst);
	text = malloc(cap + 1);
	ASSERT_NE(NULL, text);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	while (got < cap && (n = read(fd, text + got, cap - got)) > 0)
		got += n;
	close(fd);
	text[got] = 0;
	snprintf(path, sizeof(path), "%s", inst);
	rmdir(path);

	snprintf(job, sizeof(job), "job=%#llx ", (unsigned long long)key);
	snprintf(sreq, sizeof(sreq), "send_req=%llu ", 0x5eed0001ULL);
	snprintf(rreq, sizeof(rreq), "recv_req=%llu ", 0x5eed0002ULL);
	snprintf(sid, sizeof(sid), "req_id=%llu ", 0x5eed0001ULL);
	snprintf(rid, sizeof(rid), "req_id=%llu ", 0x5eed0002ULL);
	snprintf(bytes, sizeof(bytes), "bytes=%zu ", len);
	{
		const char *post_r[] = { job, "rank=1 recv", rid, "tag=9", NULL };
		const char *post_s[] = { job, "rank=0 send", sid, "peer=1", NULL };
		const char *match[] = { job, "src=0", sreq, "dst=1", rreq,
					"rendezvous", NULL };
		const char *copy_s[] = { job, sreq, rreq, bytes, "err=0", NULL };
		const char *done_s[] = { job, "rank=0", sid, bytes, "error=0",
					 "ring", NULL };
		const char *done_r[] = { job, "rank=1", rid, bytes, "error=0",
					 "ring", NULL };

		p = find_event(text, NULL, "kprog_post", post_r);
		ASSERT_NE(NULL, p) TH_LOG("no kprog_post of the receive");
		p = find_event(text, p, "kprog_post", post_s);
		ASSERT_NE(NULL, p) TH_LOG("no kprog_post of the send after it");
		p = find_event(text, p, "kprog_match", match);
		ASSERT_NE(NULL, p) TH_LOG("no kprog_match after the posts");
		p = find_event(text, p, "kprog_copy_start", copy_s);
		ASSERT_NE(NULL, p) TH_LOG("no kprog_copy_start after the match");
		p = find_event(text, p, "kprog_copy_end", copy_s);
		ASSERT_NE(NULL, p) TH_LOG("no kprog_copy_end after the start");
		EXPECT_NE(NULL, find_event(text, p, "kprog_complete", done_s))
			TH_LOG("no kprog_complete of the send after the copy");
		EXPECT_NE(NULL, find_event(text, p, "kprog_complete", done_r))
			TH_LOG("no kprog_complete of the receive after the copy");
	}
	free(text);
	kp_free(sb, len);
	kp_free(rb, len);
}

TEST_HARNESS_MAIN
