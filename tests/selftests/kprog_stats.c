// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftest: the generic netlink family (per-CPU counters, interrupt
 * source), the debugfs view, KPROG_IOC_IRQ_WAIT and the tracepoints.
 *
 * The counters must equal what was generated: completions consumed, bytes
 * received, transfers handed to the worker, and per CPU for the interrupt
 * source runs + coalesced fires = hard interrupt runs. Runs as root in the
 * VM with nothing else using the module (the counters are host-wide).
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

/* Every test starts with the source stopped and the counters zero. */
FIXTURE(nl) {
	struct kpn k;
	__u64 online[WORDS];
	__u64 possible[WORDS];
	int nonline, npossible;
	int offlined;		/* CPU a test took offline, or -1 */
};

FIXTURE_SETUP(nl)
{
	int ret = kpn_open(&self->k);

	self->offlined = -1;
	ASSERT_EQ(0, ret) TH_LOG("family \"%s\": %s (module loaded?)",
				 KPROG_GENL_NAME, kp_strerr(ret));
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));
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

static int cpu_set_online(int cpu, int on)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online",
		 cpu);
	return write_file(path, on ? "1" : "0");
}

FIXTURE_TEARDOWN(nl)
{
	if (self->k.sk)
		kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP);
	if (self->offlined >= 0)
		cpu_set_online(self->offlined, 1);
	kpn_close(&self->k);
}

static const char *stat_name(int i)
{
	return i >= 0 && i < KS_N ? kprog_stat_names[i] : "?";
}

static int nth_cpu(const __u64 *mask, int n)
{
	int c;

	for (c = 0; c < KPN_MAX_CPUS; c++)
		if (kp_bit(mask, c) && n-- == 0)
			return c;
	return -1;
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
	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_CMD_IRQ_STATUS, 0,
				       &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_CMD_GET_STATS, 1,
				       &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EOPNOTSUPP, kpn_cmd(&self->k, KPROG_CMD_MAX + 1));
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
	EXPECT_EQ(0, sum[KS_HARDIRQ_RUNS]);
	EXPECT_EQ(0, sum[KS_TASKLET_RUNS]);
	EXPECT_EQ(0, sum[KS_COALESCED]);
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

/*
 * Run as nobody: reading is allowed, changing is CAP_NET_ADMIN's. The
 * device is opened before the switch: /dev/kprog is 0660 root's (a user
 * outside its group cannot open it, kprog_abi.c device_group_access), but
 * an fd handed over keeps working.
 */
TEST_F(nl, unprivileged_may_read_not_change)
{
	struct kpn_irq r = { 100, KPROG_IRQ_HARDIRQ, 0, 100 };
	static struct kpn_cpu cpus[KPN_MAX_CPUS];
	struct kpn k;
	struct kpn_status st;
	int n, fd = kp_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setgid(65534));
	ASSERT_EQ(0, setuid(65534));
	ASSERT_EQ(0, kpn_open(&k));
	EXPECT_EQ(0, kpn_get_stats(&k, cpus, KPN_MAX_CPUS, &n));
	EXPECT_EQ(self->npossible, n);
	EXPECT_EQ(0, kpn_irq_status(&k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_EQ(-EPERM, kpn_cmd(&k, KPROG_CMD_RESET_STATS));
	EXPECT_EQ(-EPERM, kpn_irq_start(&k, &r));
	EXPECT_EQ(-EPERM, kpn_cmd(&k, KPROG_CMD_IRQ_STOP));
	EXPECT_EQ(0, kpn_irq_status(&k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_EQ(-ENODEV, kp_irq_wait(fd, nth_cpu(self->online, 0), 0, NULL));
	close(fd);
	kpn_close(&k);
}

/*
 * START fails with @err and an extended-ack message (naming @miss as the
 * missing attribute, or an offending attribute if @bad), starting nothing.
 */
static void start_fails(struct __test_metadata *_metadata, struct kpn *k,
			const struct kpn_irq *r, int err, int miss, int bad,
			const char *what)
{
	struct kpn_status st;

	EXPECT_EQ(err, kpn_irq_start(k, r)) TH_LOG("%s", what);
	EXPECT_NE(0, k->msg[0]) TH_LOG("%s: no extack message", what);
	if (miss)
		EXPECT_EQ(miss, k->miss_type) TH_LOG("%s", what);
	if (bad)
		EXPECT_TRUE(k->bad_attr) TH_LOG("%s: no offending attribute",
						what);
	TH_LOG("%s: %s: %s", what, kp_strerr(err), k->msg);
	EXPECT_EQ(0, kpn_irq_status(k, &st));
	EXPECT_EQ(0, st.running) TH_LOG("%s started it", what);
}

/* The same with raw attributes. */
static void raw_fails(struct __test_metadata *_metadata, struct kpn *k,
		      const struct kpn_attr *a, int n, int err,
		      const char *what)
{
	EXPECT_EQ(err, kpn_request(k, KPROG_CMD_IRQ_START, 0, a, n, NULL,
				   NULL, NULL)) TH_LOG("%s", what);
	EXPECT_NE(0, k->msg[0]) TH_LOG("%s: no extack message", what);
	TH_LOG("%s: %s: %s", what, kp_strerr(err), k->msg);
}

TEST_F(nl, irq_start_bad_arguments)
{
	long long max_hz = kp_param("irq_max_hz");
	long long max_ms = kp_param("irq_max_duration_ms");
	long long max_load = kp_param("irq_max_load_ns");
	__u64 mask[WORDS] = { 0 };
	__u32 hz = 100, dur = 100;
	struct kpn *k = &self->k;
	struct kpn_status st;
	__u8 small = 1;
	__u64 big = 1;
	int cpu;

	ASSERT_LT(0, max_hz);
	ASSERT_LT(0, max_ms);
	ASSERT_LE(0, max_load);
	/* values out of range: ERANGE */
	start_fails(_metadata, k, &(struct kpn_irq){ 0, 0, -1, 100 },
		    -ERANGE, 0, 1, "hz 0");
	start_fails(_metadata, k, &(struct kpn_irq){ max_hz + 1, 0, -1, 100 },
		    -ERANGE, 0, 1, "hz above irq_max_hz");
	start_fails(_metadata, k, &(struct kpn_irq){ 2000000, 0, -1, 100 },
		    -ERANGE, 0, 1, "hz above any limit");
	start_fails(_metadata, k,
		    &(struct kpn_irq){ 100, __KPROG_IRQ_MODE_MAX, -1, 100 },
		    -ERANGE, 0, 1, "unknown mode");
	start_fails(_metadata, k, &(struct kpn_irq){ 100, 0, -1, 0 },
		    -ERANGE, 0, 1, "duration 0");
	start_fails(_metadata, k, &(struct kpn_irq){ 100, 0, -1, max_ms + 1 },
		    -ERANGE, 0, 1, "duration above irq_max_duration_ms");
	start_fails(_metadata, k, &(struct kpn_irq){ 1000, 0, 250001, 100 },
		    -ERANGE, 0, 1, "load above 1/4 of the period");
	start_fails(_metadata, k,
		    &(struct kpn_irq){ 1, 0, max_load + 1, 100 },
		    -ERANGE, 0, 1, "load above irq_max_load_ns");
	/* missing attributes: EINVAL naming them */
	start_fails(_metadata, k, &(struct kpn_irq){ -1, 0, -1, 100 },
		    -EINVAL, KPROG_A_IRQ_HZ, 0, "no hz");
	start_fails(_metadata, k, &(struct kpn_irq){ 100, 0, -1, -1 },
		    -EINVAL, KPROG_A_IRQ_DURATION_MS, 0, "no duration");
	/* CPU masks */
	start_fails(_metadata, k, &(struct kpn_irq){ 100, 0, -1, 100, mask, 1 },
		    -EINVAL, 0, 1, "empty CPU mask");
	start_fails(_metadata, k,
		    &(struct kpn_irq){ 100, 0, -1, 100, mask, WORDS },
		    -EINVAL, 0, 1, "empty CPU mask, many words");
	mask[WORDS - 1] = 1ULL << 63;	/* CPU 4095 */
	if (!kp_bit(self->possible, KPN_MAX_CPUS - 1))
		start_fails(_metadata, k,
			    &(struct kpn_irq){ 100, 0, -1, 100, mask, WORDS },
			    -EINVAL, 0, 1, "impossible CPU");
	memset(mask, 0, sizeof(mask));
	for (cpu = 0; cpu < KPN_MAX_CPUS; cpu++) {
		if (kp_bit(self->possible, cpu) && !kp_bit(self->online, cpu)) {
			mask[cpu / 64] |= 1ULL << (cpu % 64);
			start_fails(_metadata, k,
				    &(struct kpn_irq){ 100, 0, -1, 100, mask,
						       WORDS },
				    -EINVAL, 0, 0, "offline CPU");
			break;
		}
	}
	memset(mask, 0, sizeof(mask));
	mask[0] = 1;
	/* raw attributes: bad lengths, attributes START does not take */
	{
		const struct kpn_attr a1[] = {
			{ KPROG_A_IRQ_HZ, 1, &small },
			{ KPROG_A_IRQ_DURATION_MS, 4, &dur },
		};
		const struct kpn_attr a2[] = {
			{ KPROG_A_IRQ_HZ, 4, &hz },
			{ KPROG_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_A_IRQ_CPUS, 4, mask },
		};
		const struct kpn_attr a3[] = {
			{ KPROG_A_IRQ_HZ, 4, &hz },
			{ KPROG_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_A_STAT_EVENTS, 8, &big },
		};
		const struct kpn_attr a4[] = {
			{ KPROG_A_IRQ_HZ, 4, &hz },
			{ KPROG_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_A_MAX + 1, 4, &hz },
		};
		const struct kpn_attr a5[] = {
			{ KPROG_A_IRQ_HZ, 4, &hz },
			{ KPROG_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_A_IRQ_CPUS, 12, mask },
		};

		raw_fails(_metadata, k, a1, 2, -EINVAL, "u8 hz");
		raw_fails(_metadata, k, a2, 3, -ERANGE, "4-byte CPU mask");
		raw_fails(_metadata, k, a3, 3, -EINVAL, "a counter attribute");
		raw_fails(_metadata, k, a4, 3, -EINVAL, "unknown attribute");
		raw_fails(_metadata, k, a5, 3, -EINVAL, "12-byte CPU mask");
	}
	ASSERT_EQ(0, kpn_irq_status(k, &st));
	EXPECT_EQ(0, st.running);
}

TEST_F(nl, irq_status_busy_and_stop)
{
	struct kpn_irq r = { 100, KPROG_IRQ_TASKLET, 1000, 5000 };
	struct kpn_status st;
	int i;

	EXPECT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));	/* idle */
	ASSERT_EQ(0, kpn_irq_status(&self->k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_FALSE(st.have_hz || st.have_mode || st.have_load ||
		     st.have_cpus);
	ASSERT_EQ(0, kpn_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	ASSERT_EQ(0, kpn_irq_status(&self->k, &st));
	EXPECT_EQ(1, st.running);
	EXPECT_TRUE(st.have_hz && st.have_mode && st.have_load &&
		    st.have_cpus);
	EXPECT_EQ(100, st.hz);
	EXPECT_EQ(KPROG_IRQ_TASKLET, st.mode);
	EXPECT_EQ(1000, st.load_ns);
	ASSERT_LE((self->npossible + 63) / 64, st.cpus_words);
	for (i = 0; i < st.cpus_words * 64; i++)
		EXPECT_EQ(kp_bit(self->online, i), kp_bit(st.cpus, i))
			TH_LOG("CPU %d", i);
	EXPECT_EQ(-EBUSY, kpn_irq_start(&self->k, &r));
	EXPECT_NE(0, self->k.msg[0]);
	EXPECT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));
	ASSERT_EQ(0, kpn_irq_status(&self->k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));
	/* mode left out: hard interrupt only */
	r.mode = -1;
	ASSERT_EQ(0, kpn_irq_start(&self->k, &r));
	ASSERT_EQ(0, kpn_irq_status(&self->k, &st));
	EXPECT_EQ(KPROG_IRQ_HARDIRQ, st.mode);
}

/*
 * Run @mode at @hz for @ms on @mask (NULL: all online) with @load ns of
 * busy work, let it stop by itself, and check the exact invariants per CPU.
 */
static void irq_run(struct __test_metadata *_metadata,
		    FIXTURE_DATA(nl) *self, int mode, int hz, int ms, int load,
		    const __u64 *mask)
{
	struct kpn_irq r = { hz, mode, load, ms, mask, mask ? WORDS : 0 };
	__u64 limit = (__u64)hz * ms / 1000;
	const __u64 *on = mask ? mask : self->online;
	int runs_idx = mode == KPROG_IRQ_TASKLET ? KS_TASKLET_RUNS :
		       mode == KPROG_IRQ_WORK ? KS_WORK_ITEMS : -1;
	int c;

	ASSERT_EQ(0, kpn_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	ASSERT_EQ(0, kpn_wait_idle(&self->k, ms + 20000));
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	for (c = 0; c < KPN_MAX_CPUS; c++) {
		__u64 *v = by_cpu[c];

		if (!kp_bit(on, c)) {
			EXPECT_EQ(0, v[KS_HARDIRQ_RUNS]) TH_LOG("CPU %d", c);
			continue;
		}
		TH_LOG("CPU %d: %llu hard interrupts (at most %llu), %llu tasklets, %llu work items, %llu coalesced",
		       c, (unsigned long long)v[KS_HARDIRQ_RUNS],
		       (unsigned long long)limit,
		       (unsigned long long)v[KS_TASKLET_RUNS],
		       (unsigned long long)v[KS_WORK_ITEMS],
		       (unsigned long long)v[KS_COALESCED]);
		EXPECT_LT(0, v[KS_HARDIRQ_RUNS]) TH_LOG("CPU %d", c);
		EXPECT_GE(limit, v[KS_HARDIRQ_RUNS]) TH_LOG("CPU %d", c);
		if (runs_idx < 0) {
			EXPECT_EQ(0, v[KS_TASKLET_RUNS] + v[KS_WORK_ITEMS] +
				     v[KS_COALESCED]);
			EXPECT_LE(v[KS_HARDIRQ_RUNS] * load,
				  v[KS_HARDIRQ_NS]);
		} else {
			EXPECT_EQ(v[KS_HARDIRQ_RUNS],
				  v[runs_idx] + v[KS_COALESCED])
				TH_LOG("CPU %d", c);
			EXPECT_LE(v[runs_idx] * load, v[runs_idx + 1]);
		}
	}
	EXPECT_EQ(0, sum[KS_EVENTS]);
}

TEST_F_TIMEOUT(nl, irq_hardirq_counts, 120)
{
	irq_run(_metadata, self, KPROG_IRQ_HARDIRQ, 1000, 200, 20000, NULL);
}

TEST_F_TIMEOUT(nl, irq_tasklet_runs_plus_coalesced_equal_fires, 120)
{
	irq_run(_metadata, self, KPROG_IRQ_TASKLET, 1000, 200, 20000, NULL);
}

TEST_F_TIMEOUT(nl, irq_work_items_plus_coalesced_equal_fires, 120)
{
	irq_run(_metadata, self, KPROG_IRQ_WORK, 1000, 200, 20000, NULL);
}

TEST_F_TIMEOUT(nl, irq_cpu_subset, 120)
{
	__u64 mask[WORDS] = { 0 };
	int last = nth_cpu(self->online, self->nonline - 1);

	if (self->nonline < 2)
		SKIP(return, "needs two online CPUs");
	mask[last / 64] |= 1ULL << (last % 64);
	irq_run(_metadata, self, KPROG_IRQ_TASKLET, 2000, 100, 0, mask);
}

struct waiter {
	pthread_t th;
	int cpu;
	int fd;
	long long timeout_ns;
	int woken;		/* successful waits */
	int order_bad;		/* seq did not increase */
	__u64 last;		/* last seq */
	int err;		/* the error that ended the loop */
};

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	__u64 seq = 0;

	w->err = kp_pin(w->cpu);
	while (!w->err) {
		w->err = kp_irq_wait(w->fd, w->cpu, w->timeout_ns, &seq);
		if (w->err)
			break;
		if (seq <= w->last)
			w->order_bad++;
		w->last = seq;
		w->woken++;
	}
	return NULL;
}

TEST_F_TIMEOUT(nl, irq_wake_wakes_pinned_threads, 120)
{
	struct kpn_irq r = { 1000, KPROG_IRQ_WAKE, 0, 300 };
	struct waiter w[64];
	int n = 0, i, fd = kp_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kpn_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	for (i = 0; i < self->nonline && n < 64; i++) {
		w[n] = (struct waiter){ .cpu = nth_cpu(self->online, i),
					.fd = fd, .timeout_ns = 5000000000LL };
		ASSERT_EQ(0, pthread_create(&w[n].th, NULL, waiter_fn, &w[n]));
		n++;
	}
	for (i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	ASSERT_EQ(0, kpn_wait_idle(&self->k, 20000));
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	for (i = 0; i < n; i++) {
		__u64 *v = by_cpu[w[i].cpu];

		TH_LOG("CPU %d: woken %d times, last seq %llu, %llu fires, %llu wake-ups",
		       w[i].cpu, w[i].woken, (unsigned long long)w[i].last,
		       (unsigned long long)v[KS_HARDIRQ_RUNS],
		       (unsigned long long)v[KS_WAKEUPS]);
		EXPECT_EQ(-ENODEV, w[i].err) TH_LOG("%s", kp_strerr(w[i].err));
		EXPECT_LT(0, w[i].woken);
		EXPECT_EQ(0, w[i].order_bad);
		EXPECT_GE(v[KS_HARDIRQ_RUNS], w[i].last);
		EXPECT_LT(0, v[KS_WAKEUPS]);
		EXPECT_GE(v[KS_HARDIRQ_RUNS], v[KS_WAKEUPS]);
	}
	close(fd);
}

/* IRQ_WAIT until it fails with something else than a fire (0). */
static int irq_wait_no_fire(int fd, int cpu, long long tmo)
{
	int i, ret = 0;

	for (i = 0; i < 10 && !ret; i++)
		ret = kp_irq_wait(fd, cpu, tmo, NULL);
	return ret;
}

TEST_F_TIMEOUT(nl, irq_wait_errors, 120)
{
	struct kpn_irq r = { 1, KPROG_IRQ_WAKE, -1, 5000 };
	struct kprog_irq_wait bad = { .cpu = 0, .__pad = 1 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct kicker kick = { .ms = 100 };
	struct waiter w = { .fd = -1, .timeout_ns = -1 };
	__u64 mask[WORDS] = { 0 };
	int fd = kp_open(), cpu0 = nth_cpu(self->online, 0), off = -1, c;
	pthread_t kt;

	ASSERT_LE(0, fd);
	for (c = 0; c < KPN_MAX_CPUS && off < 0; c++)
		if (kp_bit(self->possible, c) && !kp_bit(self->online, c))
			off = c;
	/* idle */
	EXPECT_EQ(-ENODEV, kp_irq_wait(fd, cpu0, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_irq_wait(fd, 100000, 0, NULL));
	EXPECT_EQ(-EINVAL, kp_irq_wait(fd, ~0U, 0, NULL));
	if (off >= 0)
		EXPECT_EQ(-EINVAL, kp_irq_wait(fd, off, 0, NULL));
	EXPECT_EQ(-1, ioctl(fd, KPROG_IOC_IRQ_WAIT, &bad));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EFAULT, ioctl(fd, KPROG_IOC_IRQ_WAIT, NULL) ? -errno : 0);

	/* another mode */
	r.mode = KPROG_IRQ_HARDIRQ;
	ASSERT_EQ(0, kpn_irq_start(&self->k, &r));
	EXPECT_EQ(-ENODEV, kp_irq_wait(fd, cpu0, 0, NULL));
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));

	/* wake mode on the first CPU only: not on the others */
	r.mode = KPROG_IRQ_WAKE;
	mask[cpu0 / 64] |= 1ULL << (cpu0 % 64);
	r.cpus = mask;
	r.cpus_words = WORDS;
	ASSERT_EQ(0, kpn_irq_start(&self->k, &r));
	if (self->nonline > 1)
		EXPECT_EQ(-ENODEV, kp_irq_wait(fd, nth_cpu(self->online, 1), 0,
					       NULL));
	/* 1 Hz: the first fire is a second away */
	EXPECT_EQ(-ETIMEDOUT, irq_wait_no_fire(fd, cpu0, 0));
	EXPECT_EQ(-ETIMEDOUT, irq_wait_no_fire(fd, cpu0, 20000000));
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	kick.target = pthread_self();
	ASSERT_EQ(0, pthread_create(&kt, NULL, kick_fn, &kick));
	EXPECT_EQ(-EINTR, irq_wait_no_fire(fd, cpu0, -1));
	pthread_join(kt, NULL);
	/* a sleeper is told when the source stops */
	w.cpu = cpu0;
	w.fd = fd;
	ASSERT_EQ(0, pthread_create(&w.th, NULL, waiter_fn, &w));
	usleep(200000);
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));
	pthread_join(w.th, NULL);
	EXPECT_EQ(-ENODEV, w.err) TH_LOG("%s", kp_strerr(w.err));
	close(fd);
}

/* Starts, stops, reads and waits from several threads at once. */
struct racer {
	pthread_t th;
	int id;
	int cpu;
	volatile int *stop;
	int bad;		/* unexpected errno */
	int last_bad;
	int ops;
};

static void *race_fn(void *arg)
{
	static struct kpn_cpu cpus[4][KPN_MAX_CPUS];
	struct racer *r = arg;
	unsigned int seed = r->id * 7919 + 1;
	struct kpn_status st;
	struct kpn k;
	int fd = -1, n, ret;

	if (kpn_open(&k)) {
		r->bad++;
		return NULL;
	}
	if (r->id == 3)
		fd = kp_open();
	while (!*r->stop) {
		struct kpn_irq q = { 200 + rand_r(&seed) % 4000,
				     rand_r(&seed) % __KPROG_IRQ_MODE_MAX,
				     rand_r(&seed) % 2000,
				     1 + rand_r(&seed) % 30 };

		switch (r->id) {
		case 0:
		case 1:
			ret = kpn_irq_start(&k, &q);
			if (ret && ret != -EBUSY)
				r->bad++, r->last_bad = ret;
			if (r->id == 1 && !(rand_r(&seed) % 3))
				usleep(q.duration_ms * 500);
			break;
		case 2:
			ret = kpn_cmd(&k, KPROG_CMD_IRQ_STOP);
			if (ret)
				r->bad++, r->last_bad = ret;
			usleep(rand_r(&seed) % 5000);
			break;
		case 3:
			ret = kp_irq_wait(fd, r->cpu, 2000000, NULL);
			if (ret && ret != -ENODEV && ret != -ETIMEDOUT)
				r->bad++, r->last_bad = ret;
			if (ret == -ENODEV)
				usleep(500);
			break;
		default:
			ret = kpn_irq_status(&k, &st);
			if (!ret)
				ret = kpn_get_stats(&k, cpus[r->id - 4],
						    KPN_MAX_CPUS, &n);
			if (ret)
				r->bad++, r->last_bad = ret;
			break;
		}
		r->ops++;
	}
	if (fd >= 0)
		close(fd);
	kpn_close(&k);
	return NULL;
}

TEST_F_TIMEOUT(nl, irq_start_stop_races, 180)
{
	volatile int stop = 0;
	struct racer r[6];
	int i;

	for (i = 0; i < 6; i++) {
		r[i] = (struct racer){ .id = i, .stop = &stop,
				       .cpu = nth_cpu(self->online, 0) };
		ASSERT_EQ(0, pthread_create(&r[i].th, NULL, race_fn, &r[i]));
	}
	sleep(3);
	stop = 1;
	for (i = 0; i < 6; i++) {
		pthread_join(r[i].th, NULL);
		EXPECT_EQ(0, r[i].bad) TH_LOG("thread %d: %d unexpected, last %s",
					      i, r[i].bad,
					      kp_strerr(r[i].last_bad));
		TH_LOG("thread %d: %d operations", i, r[i].ops);
	}
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_IRQ_STOP));
	ASSERT_EQ(0, kpn_wait_idle(&self->k, 0));
	/* and it still counts exactly */
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_RESET_STATS));
	irq_run(_metadata, self, KPROG_IRQ_WORK, 1000, 100, 0, NULL);
}

/*
 * A CPU going offline while the source runs: its timer moves to another
 * CPU, the sums stay exact, IRQ_WAIT and START refuse the offline CPU.
 */
static void hotplug_run(struct __test_metadata *_metadata,
			FIXTURE_DATA(nl) *self, int mode, int victim)
{
	struct kpn_irq r = { 1000, mode, 0, 600 };
	__u64 mask[WORDS] = { 0 };
	int runs = mode == KPROG_IRQ_TASKLET ? KS_TASKLET_RUNS : KS_WORK_ITEMS;
	int fd = kp_open(), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_CMD_RESET_STATS));
	ASSERT_EQ(0, kpn_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	usleep(100000);
	ret = cpu_set_online(victim, 0);
	if (ret) {
		close(fd);
		SKIP(return, "cannot take CPU %d offline: %s", victim,
		     kp_strerr(ret));
	}
	self->offlined = victim;
	EXPECT_EQ(-EINVAL, kp_irq_wait(fd, victim, 0, NULL));
	ASSERT_EQ(0, kpn_wait_idle(&self->k, 20000));
	mask[victim / 64] |= 1ULL << (victim % 64);
	r.cpus = mask;
	r.cpus_words = WORDS;
	EXPECT_EQ(-EINVAL, kpn_irq_start(&self->k, &r));
	ASSERT_EQ(0, cpu_set_online(victim, 1));
	self->offlined = -1;
	ASSERT_EQ(0, kpn_stats_by_cpu(&self->k, by_cpu, sum));
	TH_LOG("%llu fires, %llu runs, %llu coalesced",
	       (unsigned long long)sum[KS_HARDIRQ_RUNS],
	       (unsigned long long)sum[runs],
	       (unsigned long long)sum[KS_COALESCED]);
	EXPECT_LT(0, sum[KS_HARDIRQ_RUNS]);
	EXPECT_EQ(sum[KS_HARDIRQ_RUNS], sum[runs] + sum[KS_COALESCED]);
	close(fd);
}

TEST_F_TIMEOUT(nl, irq_cpu_goes_offline, 180)
{
	int victim = nth_cpu(self->online, self->nonline - 1);
	char path[128];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online",
		 victim);
	if (self->nonline < 2 || access(path, W_OK))
		SKIP(return, "needs a second CPU that can go offline");
	hotplug_run(_metadata, self, KPROG_IRQ_TASKLET, victim);
	hotplug_run(_metadata, self, KPROG_IRQ_WORK, victim);
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
