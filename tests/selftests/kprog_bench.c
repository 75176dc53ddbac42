// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftest: the benchmark module kprog_bench.ko, the interrupt
 * source of the interrupt-cost microbenchmark. Its generic netlink family
 * (per-CPU counters, IRQ_START/STOP/STATUS: errnos, extended acks,
 * permissions), the exact counts per CPU (runs + coalesced = fires <=
 * hz * duration), IRQ_WAIT on /dev/kprog_bench (wake mode, errnos), races
 * of all of these, a CPU going offline mid-run, then the module's life:
 * busy while a file is open or a thread waits, unloaded while the source
 * runs, loaded again.
 *
 * The program loads kmod/bench/kprog_bench.ko itself when it is not loaded (and
 * removes it at the end in that case), so that nothing else in the VM
 * runs with it: kprog.ko has no interrupt source, and kprog_bench.ko needs
 * nothing from kprog.ko. Runs as root in the VM; the counters are
 * host-wide, so nothing else may use the source meanwhile.
 */
#include "kprog_genl.h"

#define POSSIBLE	"/sys/devices/system/cpu/possible"
#define ONLINE		"/sys/devices/system/cpu/online"
#define KB_SYS		"/sys/module/kprog_bench"
#define KB_PARAMS	KB_SYS "/parameters/"
#define WORDS		(KPN_MAX_CPUS / 64)

/* The source's per-CPU counters, in the order of the attributes. */
enum {
	KB_HARDIRQ_RUNS, KB_HARDIRQ_NS, KB_TASKLET_RUNS, KB_TASKLET_NS,
	KB_WORK_ITEMS, KB_WORK_NS, KB_WAKEUPS, KB_COALESCED, KB_N,
};

static const char *const kb_names[KB_N] = {
	"hardirq_runs", "hardirq_ns", "tasklet_runs", "tasklet_ns",
	"work_items", "work_ns", "wakeups", "coalesced",
};

static const char *kb_name(int i)
{
	return i >= 0 && i < KB_N && kb_names[i] ? kb_names[i] : "?";
}

static __u64 by_cpu[KPN_MAX_CPUS][KB_N];
static __u64 sum[KB_N];

/* ---- the module ---------------------------------------------------- */

static int bench_loaded(void)
{
	struct stat st;

	return stat(KB_SYS, &st) == 0;
}

/*
 * Words of a CPU mask the module takes: NR_CPUS bits (kernel_max + 1),
 * which is 8192 on Debian's kernels and 64 on the debug kernel's config.
 */
static int mask_words(void)
{
	static int words;
	FILE *f;
	int max = -1;

	if (words)
		return words;
	f = fopen("/sys/devices/system/cpu/kernel_max", "r");
	if (f) {
		if (fscanf(f, "%d", &max) != 1)
			max = -1;
		fclose(f);
	}
	words = max < 0 ? WORDS : (max + 64) / 64;
	if (words > WORDS)
		words = WORDS;
	return words;
}

static long long kb_param(const char *name)
{
	return kp_sysfs_param(KB_PARAMS, name);
}

/* kmod/bench/kprog_bench.ko next to this checkout's tests/selftests/. */
static char saved_params[512];
static int loaded_here;		/* this program loaded the module */

/* Load the module (with @params); 0 or an errno. */
static int load_bench(const char *params)
{
	return kp_ko_load("kprog_bench", params, KPROG_BENCH_DEVICE);
}

static int try_remove(void)
{
	return kp_ko_remove("kprog_bench");
}

static int remove_when_idle(void)
{
	return kp_ko_remove_when_idle("kprog_bench", 10000);
}

/* Before the first test: the module, loaded by us if need be. */
static void __attribute__((constructor)) load_for_the_tests(void)
{
	static const char *const p[] = { "irq_max_hz", "irq_max_duration_ms",
					 "irq_max_load_ns" };
	size_t used = 0, i;
	int err;

	if (!bench_loaded()) {
		err = load_bench("");
		if (err)
			fprintf(stderr, "# kprog_bench: loading kmod/bench/kprog_bench.ko: %s\n",
				strerror(err));
		else
			loaded_here = 1;
	}
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		used += snprintf(saved_params + used, sizeof(saved_params) - used,
				 "%s%s=%lld", used ? " " : "", p[i],
				 kb_param(p[i]));
}

/* ---- the family ---------------------------------------------------- */

static int kb_open(struct kpn *k)
{
	return kpn_open_family(k, KPROG_BENCH_GENL_NAME,
			       KPROG_BENCH_GENL_VERSION, KPROG_BENCH_A_MAX);
}

struct kb_cpu {
	int cpu;		/* -1: no KPROG_BENCH_A_CPU */
	int missing;		/* counter attributes absent */
	__u64 v[KB_N];
};

struct kb_stats_arg {
	struct kb_cpu *cpus;
	int max, n;
};

static int kb_stats_msg(struct nlattr **tb, void *arg)
{
	struct kb_stats_arg *s = arg;
	struct kb_cpu *c;
	int i;

	if (s->n >= s->max)
		return -E2BIG;
	c = &s->cpus[s->n++];
	memset(c, 0, sizeof(*c));
	c->cpu = tb[KPROG_BENCH_A_CPU] ?
		 (int)nla_get_u32(tb[KPROG_BENCH_A_CPU]) : -1;
	for (i = 0; i < KB_N; i++) {
		struct nlattr *a = tb[KPROG_BENCH_A_STAT_HARDIRQ_RUNS + i];

		if (a && nla_len(a) == sizeof(__u64))
			c->v[i] = nla_get_u64(a);
		else
			c->missing++;
	}
	return 0;
}

static int kb_get_stats(struct kpn *k, struct kb_cpu *cpus, int max, int *n)
{
	struct kb_stats_arg s = { .cpus = cpus, .max = max };
	int ret;

	ret = kpn_request(k, KPROG_BENCH_CMD_GET_STATS, 1, NULL, 0,
			  kb_stats_msg, &s, NULL);
	*n = s.n;
	return ret;
}

/* Counters indexed by CPU number (zero where no message), and the sums. */
static int kb_stats_by_cpu(struct kpn *k)
{
	static struct kb_cpu cpus[KPN_MAX_CPUS];
	int n, i, j, ret;

	ret = kb_get_stats(k, cpus, KPN_MAX_CPUS, &n);
	if (ret)
		return ret;
	memset(by_cpu, 0, sizeof(by_cpu));
	memset(sum, 0, sizeof(sum));
	for (i = 0; i < n; i++) {
		if (cpus[i].cpu < 0 || cpus[i].cpu >= KPN_MAX_CPUS ||
		    cpus[i].missing)
			return -EPROTO;
		for (j = 0; j < KB_N; j++) {
			by_cpu[cpus[i].cpu][j] = cpus[i].v[j];
			sum[j] += cpus[i].v[j];
		}
	}
	return 0;
}

struct kb_irq {
	int hz, mode, load_ns, duration_ms;	/* < 0: attribute left out */
	const __u64 *cpus;			/* NULL: left out */
	int cpus_words;
};

static int kb_irq_start(struct kpn *k, const struct kb_irq *r)
{
	__u32 v[4] = { r->hz, r->mode, r->load_ns, r->duration_ms };
	struct kpn_attr a[5];
	int n = 0;

	if (r->hz >= 0)
		a[n++] = (struct kpn_attr){ KPROG_BENCH_A_IRQ_HZ, 4, &v[0] };
	if (r->mode >= 0)
		a[n++] = (struct kpn_attr){ KPROG_BENCH_A_IRQ_MODE, 4, &v[1] };
	if (r->load_ns >= 0)
		a[n++] = (struct kpn_attr){ KPROG_BENCH_A_IRQ_LOAD_NS, 4,
					    &v[2] };
	if (r->duration_ms >= 0)
		a[n++] = (struct kpn_attr){ KPROG_BENCH_A_IRQ_DURATION_MS, 4,
					    &v[3] };
	if (r->cpus)
		a[n++] = (struct kpn_attr){ KPROG_BENCH_A_IRQ_CPUS,
					    r->cpus_words * 8, r->cpus };
	return kpn_request(k, KPROG_BENCH_CMD_IRQ_START, 0, a, n, NULL, NULL,
			   NULL);
}

struct kb_status {
	int running;
	int have_hz, have_mode, have_load, have_cpus;
	__u32 hz, mode, load_ns;
	__u64 cpus[WORDS];
	int cpus_words;
};

static int kb_status_msg(struct nlattr **tb, void *arg)
{
	struct kb_status *s = arg;

	if (!tb[KPROG_BENCH_A_IRQ_RUNNING])
		return -EPROTO;
	s->running = nla_get_u8(tb[KPROG_BENCH_A_IRQ_RUNNING]);
	s->have_hz = !!tb[KPROG_BENCH_A_IRQ_HZ];
	if (s->have_hz)
		s->hz = nla_get_u32(tb[KPROG_BENCH_A_IRQ_HZ]);
	s->have_mode = !!tb[KPROG_BENCH_A_IRQ_MODE];
	if (s->have_mode)
		s->mode = nla_get_u32(tb[KPROG_BENCH_A_IRQ_MODE]);
	s->have_load = !!tb[KPROG_BENCH_A_IRQ_LOAD_NS];
	if (s->have_load)
		s->load_ns = nla_get_u32(tb[KPROG_BENCH_A_IRQ_LOAD_NS]);
	s->have_cpus = !!tb[KPROG_BENCH_A_IRQ_CPUS];
	if (s->have_cpus) {
		int len = nla_len(tb[KPROG_BENCH_A_IRQ_CPUS]);

		if (len % 8 || len > (int)sizeof(s->cpus))
			return -EPROTO;
		memcpy(s->cpus, nla_data(tb[KPROG_BENCH_A_IRQ_CPUS]), len);
		s->cpus_words = len / 8;
	}
	return 0;
}

static int kb_irq_status(struct kpn *k, struct kb_status *s)
{
	int nmsg = 0, ret;

	memset(s, 0, sizeof(*s));
	s->running = -1;
	ret = kpn_request(k, KPROG_BENCH_CMD_IRQ_STATUS, 0, NULL, 0,
			  kb_status_msg, s, &nmsg);
	if (!ret && nmsg != 1)
		ret = -EPROTO;
	return ret;
}

/* Poll IRQ_STATUS until the source is idle: 0, -ETIMEDOUT, -errno. */
static int kb_wait_idle(struct kpn *k, int ms)
{
	long long end = kp_now_ms() + ms;
	struct kb_status s;
	int ret;

	for (;;) {
		ret = kb_irq_status(k, &s);
		if (ret)
			return ret;
		if (!s.running)
			return 0;
		if (kp_now_ms() > end)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

static int kb_dev_open(void)
{
	int fd = open(KPROG_BENCH_DEVICE, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* KPROG_BENCH_IOC_IRQ_WAIT on @fd. 0 or -errno. */
static int kb_irq_wait(int fd, __u32 cpu, long long timeout_ns, __u64 *seq)
{
	struct kprog_bench_irq_wait w = { .cpu = cpu,
					  .timeout_ns = timeout_ns };

	if (ioctl(fd, KPROG_BENCH_IOC_IRQ_WAIT, &w))
		return -errno;
	if (seq)
		*seq = w.seq;
	return 0;
}

/* ---- the tests ----------------------------------------------------- */

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
	int ret;

	self->offlined = -1;
	ASSERT_TRUE(bench_loaded())
		TH_LOG("kprog_bench.ko is not loaded and could not be");
	ret = kb_open(&self->k);
	ASSERT_EQ(0, ret) TH_LOG("family \"%s\": %s", KPROG_BENCH_GENL_NAME,
				 kp_strerr(ret));
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_RESET_STATS));
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
		kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP);
	if (self->offlined >= 0)
		cpu_set_online(self->offlined, 1);
	kpn_close(&self->k);
}

static int nth_cpu(const __u64 *mask, int n)
{
	int c;

	for (c = 0; c < KPN_MAX_CPUS; c++)
		if (kp_bit(mask, c) && n-- == 0)
			return c;
	return -1;
}

/* The module stands alone: it holds nothing of kprog.ko. */
TEST_F(nl, needs_nothing_of_kprog)
{
	struct stat st;

	EXPECT_NE(0, stat("/sys/module/kprog/holders/kprog_bench", &st))
		TH_LOG("kprog_bench.ko uses symbols of kprog.ko");
	ASSERT_EQ(0, stat(KPROG_BENCH_DEVICE, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0600, st.st_mode & 0777) TH_LOG("mode %o",
						  st.st_mode & 0777);
}

TEST_F(nl, dump_has_one_message_per_possible_cpu)
{
	static struct kb_cpu cpus[KPN_MAX_CPUS];
	__u64 seen[WORDS] = { 0 };
	int n = 0, i;

	ASSERT_EQ(0, kb_get_stats(&self->k, cpus, KPN_MAX_CPUS, &n))
		TH_LOG("%s", self->k.msg);
	EXPECT_EQ(self->npossible, n);
	for (i = 0; i < n; i++) {
		int c = cpus[i].cpu;

		ASSERT_LE(0, c) TH_LOG("message %d without KPROG_BENCH_A_CPU",
				       i);
		ASSERT_GT(KPN_MAX_CPUS, c);
		EXPECT_TRUE(kp_bit(self->possible, c))
			TH_LOG("CPU %d is not possible", c);
		EXPECT_FALSE(kp_bit(seen, c)) TH_LOG("CPU %d twice", c);
		seen[c / 64] |= 1ULL << (c % 64);
		EXPECT_EQ(0, cpus[i].missing)
			TH_LOG("CPU %d: %d counters missing", c,
			       cpus[i].missing);
		EXPECT_EQ(0, cpus[i].v[KB_HARDIRQ_RUNS]);
	}
	EXPECT_EQ(0, memcmp(seen, self->possible, sizeof(seen)));
}

TEST_F(nl, commands_without_attributes_reject_them)
{
	__u32 cpu = 0;
	struct kpn_attr a = { KPROG_BENCH_A_CPU, 4, &cpu };

	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_BENCH_CMD_RESET_STATS,
				       0, &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_BENCH_CMD_IRQ_STATUS,
				       0, &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_BENCH_CMD_IRQ_STOP,
				       0, &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, kpn_request(&self->k, KPROG_BENCH_CMD_GET_STATS,
				       1, &a, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EOPNOTSUPP, kpn_cmd(&self->k, KPROG_BENCH_CMD_MAX + 1));
}

/*
 * Run as nobody: reading is allowed, changing is CAP_NET_ADMIN's; the
 * device is root's (0600), but an fd opened before the switch still works.
 */
TEST_F(nl, unprivileged_may_read_not_change)
{
	struct kb_irq r = { 100, KPROG_BENCH_IRQ_HARDIRQ, 0, 100 };
	static struct kb_cpu cpus[KPN_MAX_CPUS];
	struct kb_status st;
	struct kpn k;
	int n, fd = kb_dev_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setgid(65534));
	ASSERT_EQ(0, setuid(65534));
	EXPECT_EQ(-EACCES, kb_dev_open());
	ASSERT_EQ(0, kb_open(&k));
	EXPECT_EQ(0, kb_get_stats(&k, cpus, KPN_MAX_CPUS, &n));
	EXPECT_EQ(self->npossible, n);
	EXPECT_EQ(0, kb_irq_status(&k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_EQ(-EPERM, kpn_cmd(&k, KPROG_BENCH_CMD_RESET_STATS));
	EXPECT_EQ(-EPERM, kb_irq_start(&k, &r));
	EXPECT_EQ(-EPERM, kpn_cmd(&k, KPROG_BENCH_CMD_IRQ_STOP));
	EXPECT_EQ(0, kb_irq_status(&k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_EQ(-ENODEV, kb_irq_wait(fd, nth_cpu(self->online, 0), 0, NULL));
	close(fd);
	kpn_close(&k);
}

/*
 * START fails with @err and an extended-ack message (naming @miss as the
 * missing attribute, or an offending attribute if @bad), starting nothing.
 */
static void start_fails(struct __test_metadata *_metadata, struct kpn *k,
			const struct kb_irq *r, int err, int miss, int bad,
			const char *what)
{
	struct kb_status st;

	EXPECT_EQ(err, kb_irq_start(k, r)) TH_LOG("%s", what);
	EXPECT_NE(0, k->msg[0]) TH_LOG("%s: no extack message", what);
	if (miss)
		EXPECT_EQ(miss, k->miss_type) TH_LOG("%s", what);
	if (bad)
		EXPECT_TRUE(k->bad_attr) TH_LOG("%s: no offending attribute",
						what);
	TH_LOG("%s: %s: %s", what, kp_strerr(err), k->msg);
	EXPECT_EQ(0, kb_irq_status(k, &st));
	EXPECT_EQ(0, st.running) TH_LOG("%s started it", what);
}

/* The same with raw attributes. */
static void raw_fails(struct __test_metadata *_metadata, struct kpn *k,
		      const struct kpn_attr *a, int n, int err,
		      const char *what)
{
	EXPECT_EQ(err, kpn_request(k, KPROG_BENCH_CMD_IRQ_START, 0, a, n, NULL,
				   NULL, NULL)) TH_LOG("%s", what);
	EXPECT_NE(0, k->msg[0]) TH_LOG("%s: no extack message", what);
	TH_LOG("%s: %s: %s", what, kp_strerr(err), k->msg);
}

TEST_F(nl, irq_start_bad_arguments)
{
	long long max_hz = kb_param("irq_max_hz");
	long long max_ms = kb_param("irq_max_duration_ms");
	long long max_load = kb_param("irq_max_load_ns");
	__u64 mask[WORDS] = { 0 };
	__u32 hz = 100, dur = 100;
	struct kpn *k = &self->k;
	struct kb_status st;
	__u8 small = 1;
	__u64 big = 1;
	int cpu;

	ASSERT_LT(0, max_hz);
	ASSERT_LT(0, max_ms);
	ASSERT_LE(0, max_load);
	/* values out of range: ERANGE */
	start_fails(_metadata, k, &(struct kb_irq){ 0, 0, -1, 100 },
		    -ERANGE, 0, 1, "hz 0");
	start_fails(_metadata, k, &(struct kb_irq){ max_hz + 1, 0, -1, 100 },
		    -ERANGE, 0, 1, "hz above irq_max_hz");
	start_fails(_metadata, k, &(struct kb_irq){ 2000000, 0, -1, 100 },
		    -ERANGE, 0, 1, "hz above any limit");
	start_fails(_metadata, k,
		    &(struct kb_irq){ 100, __KPROG_BENCH_IRQ_MODE_MAX, -1, 100 },
		    -ERANGE, 0, 1, "unknown mode");
	start_fails(_metadata, k, &(struct kb_irq){ 100, 0, -1, 0 },
		    -ERANGE, 0, 1, "duration 0");
	start_fails(_metadata, k, &(struct kb_irq){ 100, 0, -1, max_ms + 1 },
		    -ERANGE, 0, 1, "duration above irq_max_duration_ms");
	start_fails(_metadata, k, &(struct kb_irq){ 1000, 0, 250001, 100 },
		    -ERANGE, 0, 1, "load above 1/4 of the period");
	start_fails(_metadata, k,
		    &(struct kb_irq){ 1, 0, max_load + 1, 100 },
		    -ERANGE, 0, 1, "load above irq_max_load_ns");
	/* missing attributes: EINVAL naming them */
	start_fails(_metadata, k, &(struct kb_irq){ -1, 0, -1, 100 },
		    -EINVAL, KPROG_BENCH_A_IRQ_HZ, 0, "no hz");
	start_fails(_metadata, k, &(struct kb_irq){ 100, 0, -1, -1 },
		    -EINVAL, KPROG_BENCH_A_IRQ_DURATION_MS, 0, "no duration");
	/* CPU masks */
	start_fails(_metadata, k, &(struct kb_irq){ 100, 0, -1, 100, mask, 1 },
		    -EINVAL, 0, 1, "empty CPU mask");
	start_fails(_metadata, k,
		    &(struct kb_irq){ 100, 0, -1, 100, mask, mask_words() },
		    -EINVAL, 0, 1, "empty CPU mask, many words");
	mask[mask_words() - 1] = 1ULL << 63;	/* the highest CPU the kernel knows */
	if (!kp_bit(self->possible, mask_words() * 64 - 1))
		start_fails(_metadata, k,
			    &(struct kb_irq){ 100, 0, -1, 100, mask, mask_words() },
			    -EINVAL, 0, 1, "impossible CPU");
	memset(mask, 0, sizeof(mask));
	for (cpu = 0; cpu < mask_words() * 64; cpu++) {
		if (kp_bit(self->possible, cpu) && !kp_bit(self->online, cpu)) {
			mask[cpu / 64] |= 1ULL << (cpu % 64);
			start_fails(_metadata, k,
				    &(struct kb_irq){ 100, 0, -1, 100, mask,
						      mask_words() },
				    -EINVAL, 0, 0, "offline CPU");
			break;
		}
	}
	memset(mask, 0, sizeof(mask));
	mask[0] = 1;
	/* raw attributes: bad lengths, attributes START does not take */
	{
		const struct kpn_attr a1[] = {
			{ KPROG_BENCH_A_IRQ_HZ, 1, &small },
			{ KPROG_BENCH_A_IRQ_DURATION_MS, 4, &dur },
		};
		const struct kpn_attr a2[] = {
			{ KPROG_BENCH_A_IRQ_HZ, 4, &hz },
			{ KPROG_BENCH_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_BENCH_A_IRQ_CPUS, 4, mask },
		};
		const struct kpn_attr a3[] = {
			{ KPROG_BENCH_A_IRQ_HZ, 4, &hz },
			{ KPROG_BENCH_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_BENCH_A_STAT_HARDIRQ_RUNS, 8, &big },
		};
		const struct kpn_attr a4[] = {
			{ KPROG_BENCH_A_IRQ_HZ, 4, &hz },
			{ KPROG_BENCH_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_BENCH_A_MAX + 1, 4, &hz },
		};
		const struct kpn_attr a5[] = {
			{ KPROG_BENCH_A_IRQ_HZ, 4, &hz },
			{ KPROG_BENCH_A_IRQ_DURATION_MS, 4, &dur },
			{ KPROG_BENCH_A_IRQ_CPUS, 12, mask },
		};

		raw_fails(_metadata, k, a1, 2, -EINVAL, "u8 hz");
		raw_fails(_metadata, k, a2, 3, -ERANGE, "4-byte CPU mask");
		raw_fails(_metadata, k, a3, 3, -EINVAL, "a counter attribute");
		raw_fails(_metadata, k, a4, 3, -EINVAL, "unknown attribute");
		/* not whole words: EINVAL, unless longer than NR_CPUS allows */
		raw_fails(_metadata, k, a5, 3, mask_words() * 8 < 12 ? -ERANGE : -EINVAL,
			  "12-byte CPU mask");
	}
	ASSERT_EQ(0, kb_irq_status(k, &st));
	EXPECT_EQ(0, st.running);
}

TEST_F(nl, irq_status_busy_and_stop)
{
	struct kb_irq r = { 100, KPROG_BENCH_IRQ_TASKLET, 1000, 5000 };
	struct kb_status st;
	int i;

	EXPECT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));	/* idle */
	ASSERT_EQ(0, kb_irq_status(&self->k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_FALSE(st.have_hz || st.have_mode || st.have_load ||
		     st.have_cpus);
	ASSERT_EQ(0, kb_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	ASSERT_EQ(0, kb_irq_status(&self->k, &st));
	EXPECT_EQ(1, st.running);
	EXPECT_TRUE(st.have_hz && st.have_mode && st.have_load &&
		    st.have_cpus);
	EXPECT_EQ(100, st.hz);
	EXPECT_EQ(KPROG_BENCH_IRQ_TASKLET, st.mode);
	EXPECT_EQ(1000, st.load_ns);
	ASSERT_LE((self->npossible + 63) / 64, st.cpus_words);
	for (i = 0; i < st.cpus_words * 64; i++)
		EXPECT_EQ(kp_bit(self->online, i), kp_bit(st.cpus, i))
			TH_LOG("CPU %d", i);
	EXPECT_EQ(-EBUSY, kb_irq_start(&self->k, &r));
	EXPECT_NE(0, self->k.msg[0]);
	EXPECT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));
	ASSERT_EQ(0, kb_irq_status(&self->k, &st));
	EXPECT_EQ(0, st.running);
	EXPECT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));
	/* mode left out: hard interrupt only */
	r.mode = -1;
	ASSERT_EQ(0, kb_irq_start(&self->k, &r));
	ASSERT_EQ(0, kb_irq_status(&self->k, &st));
	EXPECT_EQ(KPROG_BENCH_IRQ_HARDIRQ, st.mode);
}

/*
 * Run @mode at @hz for @ms on @mask (NULL: all online) with @load ns of
 * busy work, let it stop by itself, and check the exact invariants per CPU.
 */
static void irq_run(struct __test_metadata *_metadata,
		    FIXTURE_DATA(nl) *self, int mode, int hz, int ms, int load,
		    const __u64 *mask)
{
	struct kb_irq r = { hz, mode, load, ms, mask, mask ? mask_words() : 0 };
	__u64 limit = (__u64)hz * ms / 1000;
	const __u64 *on = mask ? mask : self->online;
	int runs_idx = mode == KPROG_BENCH_IRQ_TASKLET ? KB_TASKLET_RUNS :
		       mode == KPROG_BENCH_IRQ_WORK ? KB_WORK_ITEMS : -1;
	int c;

	ASSERT_EQ(0, kb_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	ASSERT_EQ(0, kb_wait_idle(&self->k, ms + 20000));
	ASSERT_EQ(0, kb_stats_by_cpu(&self->k));
	for (c = 0; c < KPN_MAX_CPUS; c++) {
		__u64 *v = by_cpu[c];

		if (!kp_bit(on, c)) {
			EXPECT_EQ(0, v[KB_HARDIRQ_RUNS]) TH_LOG("CPU %d", c);
			continue;
		}
		TH_LOG("CPU %d: %llu hard interrupts (at most %llu), %llu tasklets, %llu work items, %llu coalesced",
		       c, (unsigned long long)v[KB_HARDIRQ_RUNS],
		       (unsigned long long)limit,
		       (unsigned long long)v[KB_TASKLET_RUNS],
		       (unsigned long long)v[KB_WORK_ITEMS],
		       (unsigned long long)v[KB_COALESCED]);
		EXPECT_LT(0, v[KB_HARDIRQ_RUNS]) TH_LOG("CPU %d", c);
		EXPECT_GE(limit, v[KB_HARDIRQ_RUNS]) TH_LOG("CPU %d", c);
		if (runs_idx < 0) {
			EXPECT_EQ(0, v[KB_TASKLET_RUNS] + v[KB_WORK_ITEMS] +
				     v[KB_COALESCED]);
			EXPECT_LE(v[KB_HARDIRQ_RUNS] * load,
				  v[KB_HARDIRQ_NS]);
		} else {
			EXPECT_EQ(v[KB_HARDIRQ_RUNS],
				  v[runs_idx] + v[KB_COALESCED])
				TH_LOG("CPU %d", c);
			EXPECT_LE(v[runs_idx] * load, v[runs_idx + 1]);
		}
	}
	EXPECT_EQ(0, sum[KB_WAKEUPS]);
}

TEST_F_TIMEOUT(nl, irq_hardirq_counts, 120)
{
	irq_run(_metadata, self, KPROG_BENCH_IRQ_HARDIRQ, 1000, 200, 20000,
		NULL);
}

TEST_F_TIMEOUT(nl, irq_tasklet_runs_plus_coalesced_equal_fires, 120)
{
	irq_run(_metadata, self, KPROG_BENCH_IRQ_TASKLET, 1000, 200, 20000,
		NULL);
}

TEST_F_TIMEOUT(nl, irq_work_items_plus_coalesced_equal_fires, 120)
{
	irq_run(_metadata, self, KPROG_BENCH_IRQ_WORK, 1000, 200, 20000, NULL);
}

TEST_F_TIMEOUT(nl, irq_cpu_subset, 120)
{
	__u64 mask[WORDS] = { 0 };
	int last = nth_cpu(self->online, self->nonline - 1);

	if (self->nonline < 2)
		SKIP(return, "needs two online CPUs");
	mask[last / 64] |= 1ULL << (last % 64);
	irq_run(_metadata, self, KPROG_BENCH_IRQ_TASKLET, 2000, 100, 0, mask);
}

TEST_F(nl, reset_zeroes_every_counter)
{
	int c, i;

	irq_run(_metadata, self, KPROG_BENCH_IRQ_WORK, 1000, 50, 0, NULL);
	ASSERT_LT(0, sum[KB_HARDIRQ_RUNS]);
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_RESET_STATS));
	ASSERT_EQ(0, kb_stats_by_cpu(&self->k));
	for (c = 0; c < KPN_MAX_CPUS; c++)
		for (i = 0; i < KB_N; i++)
			EXPECT_EQ(0, by_cpu[c][i])
				TH_LOG("CPU %d %s", c, kb_name(i));
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
		w->err = kb_irq_wait(w->fd, w->cpu, w->timeout_ns, &seq);
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
	struct kb_irq r = { 1000, KPROG_BENCH_IRQ_WAKE, 0, 300 };
	struct waiter w[64];
	int n = 0, i, fd = kb_dev_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kb_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	for (i = 0; i < self->nonline && n < 64; i++) {
		w[n] = (struct waiter){ .cpu = nth_cpu(self->online, i),
					.fd = fd, .timeout_ns = 5000000000LL };
		ASSERT_EQ(0, pthread_create(&w[n].th, NULL, waiter_fn, &w[n]));
		n++;
	}
	for (i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	ASSERT_EQ(0, kb_wait_idle(&self->k, 20000));
	ASSERT_EQ(0, kb_stats_by_cpu(&self->k));
	for (i = 0; i < n; i++) {
		__u64 *v = by_cpu[w[i].cpu];

		TH_LOG("CPU %d: woken %d times, last seq %llu, %llu fires, %llu wake-ups",
		       w[i].cpu, w[i].woken, (unsigned long long)w[i].last,
		       (unsigned long long)v[KB_HARDIRQ_RUNS],
		       (unsigned long long)v[KB_WAKEUPS]);
		EXPECT_EQ(-ENODEV, w[i].err) TH_LOG("%s", kp_strerr(w[i].err));
		EXPECT_LT(0, w[i].woken);
		EXPECT_EQ(0, w[i].order_bad);
		EXPECT_GE(v[KB_HARDIRQ_RUNS], w[i].last);
		EXPECT_LT(0, v[KB_WAKEUPS]);
		EXPECT_GE(v[KB_HARDIRQ_RUNS], v[KB_WAKEUPS]);
	}
	close(fd);
}

/* IRQ_WAIT until it fails with something else than a fire (0). */
static int irq_wait_no_fire(int fd, int cpu, long long tmo)
{
	int i, ret = 0;

	for (i = 0; i < 10 && !ret; i++)
		ret = kb_irq_wait(fd, cpu, tmo, NULL);
	return ret;
}

TEST_F_TIMEOUT(nl, irq_wait_errors, 120)
{
	struct kb_irq r = { 1, KPROG_BENCH_IRQ_WAKE, -1, 5000 };
	struct kprog_bench_irq_wait bad = { .cpu = 0, .__pad = 1 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct kicker kick = { .ms = 100 };
	struct waiter w = { .fd = -1, .timeout_ns = -1 };
	__u64 mask[WORDS] = { 0 };
	int fd = kb_dev_open(), cpu0 = nth_cpu(self->online, 0), off = -1, c;
	pthread_t kt;
	__u32 v;

	ASSERT_LE(0, fd);
	for (c = 0; c < KPN_MAX_CPUS && off < 0; c++)
		if (kp_bit(self->possible, c) && !kp_bit(self->online, c))
			off = c;
	/* idle */
	EXPECT_EQ(-ENODEV, kb_irq_wait(fd, cpu0, 0, NULL));
	EXPECT_EQ(-EINVAL, kb_irq_wait(fd, 100000, 0, NULL));
	EXPECT_EQ(-EINVAL, kb_irq_wait(fd, ~0U, 0, NULL));
	if (off >= 0)
		EXPECT_EQ(-EINVAL, kb_irq_wait(fd, off, 0, NULL));
	EXPECT_EQ(-1, ioctl(fd, KPROG_BENCH_IOC_IRQ_WAIT, &bad));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EFAULT,
		  ioctl(fd, KPROG_BENCH_IOC_IRQ_WAIT, NULL) ? -errno : 0);
	/* nothing else on this device, /dev/kprog's calls least of all */
	EXPECT_EQ(-ENOTTY, ioctl(fd, KPROG_IOC_VERSION, &v) ? -errno : 0);
	/* the number IRQ_WAIT had on /dev/kprog before the split */
	EXPECT_EQ(-ENOTTY, ioctl(fd, _IOWR(KPROG_BENCH_IOC_MAGIC, 7,
					   struct kprog_bench_irq_wait), &bad) ?
			   -errno : 0);

	/* another mode */
	r.mode = KPROG_BENCH_IRQ_HARDIRQ;
	ASSERT_EQ(0, kb_irq_start(&self->k, &r));
	EXPECT_EQ(-ENODEV, kb_irq_wait(fd, cpu0, 0, NULL));
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));

	/* wake mode on the first CPU only: not on the others */
	r.mode = KPROG_BENCH_IRQ_WAKE;
	mask[cpu0 / 64] |= 1ULL << (cpu0 % 64);
	r.cpus = mask;
	r.cpus_words = mask_words();
	ASSERT_EQ(0, kb_irq_start(&self->k, &r));
	if (self->nonline > 1)
		EXPECT_EQ(-ENODEV, kb_irq_wait(fd, nth_cpu(self->online, 1), 0,
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
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));
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
	static struct kb_cpu cpus[4][KPN_MAX_CPUS];
	struct racer *r = arg;
	unsigned int seed = r->id * 7919 + 1;
	struct kb_status st;
	struct kpn k;
	int fd = -1, n, ret;

	if (kb_open(&k)) {
		r->bad++;
		return NULL;
	}
	if (r->id == 3)
		fd = kb_dev_open();
	while (!*r->stop) {
		struct kb_irq q = { 200 + rand_r(&seed) % 4000,
				    rand_r(&seed) % __KPROG_BENCH_IRQ_MODE_MAX,
				    rand_r(&seed) % 2000,
				    1 + rand_r(&seed) % 30 };

		switch (r->id) {
		case 0:
		case 1:
			ret = kb_irq_start(&k, &q);
			if (ret && ret != -EBUSY)
				r->bad++, r->last_bad = ret;
			if (r->id == 1 && !(rand_r(&seed) % 3))
				usleep(q.duration_ms * 500);
			break;
		case 2:
			ret = kpn_cmd(&k, KPROG_BENCH_CMD_IRQ_STOP);
			if (ret)
				r->bad++, r->last_bad = ret;
			usleep(rand_r(&seed) % 5000);
			break;
		case 3:
			ret = kb_irq_wait(fd, r->cpu, 2000000, NULL);
			if (ret && ret != -ENODEV && ret != -ETIMEDOUT)
				r->bad++, r->last_bad = ret;
			if (ret == -ENODEV)
				usleep(500);
			break;
		default:
			ret = kb_irq_status(&k, &st);
			if (!ret)
				ret = kb_get_stats(&k, cpus[r->id - 4],
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
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_IRQ_STOP));
	ASSERT_EQ(0, kb_wait_idle(&self->k, 0));
	/* and it still counts exactly */
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_RESET_STATS));
	irq_run(_metadata, self, KPROG_BENCH_IRQ_WORK, 1000, 100, 0, NULL);
}

/*
 * A CPU going offline while the source runs: its timer moves to another
 * CPU, the sums stay exact, IRQ_WAIT and START refuse the offline CPU.
 */
static void hotplug_run(struct __test_metadata *_metadata,
			FIXTURE_DATA(nl) *self, int mode, int victim)
{
	struct kb_irq r = { 1000, mode, 0, 600 };
	__u64 mask[WORDS] = { 0 };
	int runs = mode == KPROG_BENCH_IRQ_TASKLET ? KB_TASKLET_RUNS :
						     KB_WORK_ITEMS;
	int fd = kb_dev_open(), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kpn_cmd(&self->k, KPROG_BENCH_CMD_RESET_STATS));
	ASSERT_EQ(0, kb_irq_start(&self->k, &r)) TH_LOG("%s", self->k.msg);
	usleep(100000);
	ret = cpu_set_online(victim, 0);
	if (ret) {
		close(fd);
		SKIP(return, "cannot take CPU %d offline: %s", victim,
		     kp_strerr(ret));
	}
	self->offlined = victim;
	EXPECT_EQ(-EINVAL, kb_irq_wait(fd, victim, 0, NULL));
	ASSERT_EQ(0, kb_wait_idle(&self->k, 20000));
	mask[victim / 64] |= 1ULL << (victim % 64);
	r.cpus = mask;
	r.cpus_words = mask_words();
	EXPECT_EQ(-EINVAL, kb_irq_start(&self->k, &r));
	ASSERT_EQ(0, cpu_set_online(victim, 1));
	self->offlined = -1;
	ASSERT_EQ(0, kb_stats_by_cpu(&self->k));
	TH_LOG("%llu fires, %llu runs, %llu coalesced",
	       (unsigned long long)sum[KB_HARDIRQ_RUNS],
	       (unsigned long long)sum[runs],
	       (unsigned long long)sum[KB_COALESCED]);
	EXPECT_LT(0, sum[KB_HARDIRQ_RUNS]);
	EXPECT_EQ(sum[KB_HARDIRQ_RUNS], sum[runs] + sum[KB_COALESCED]);
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
	hotplug_run(_metadata, self, KPROG_BENCH_IRQ_TASKLET, victim);
	hotplug_run(_metadata, self, KPROG_BENCH_IRQ_WORK, victim);
}

/*
 * ---- the module's life (last) --------------------------------------
 * A fixture of its own: the harness runs the tests fixture by fixture, in
 * the order the fixtures appear, and "global" (plain TEST) first.
 */
FIXTURE(life) {
	int unused;
};

FIXTURE_SETUP(life)
{
}

FIXTURE_TEARDOWN(life)
{
}

/* If a buggy reference count let it go, put it back for the next tests. */
static void put_back(struct __test_metadata *_metadata)
{
	int err = load_bench(saved_params);

	if (err)
		TH_LOG("could not load kmod/bench/kprog_bench.ko again: %s",
		       strerror(err));
}

TEST_F(life, rmmod_while_open_fails)
{
	int fd, err;

	ASSERT_TRUE(bench_loaded());
	fd = kb_dev_open();
	ASSERT_LE(0, fd);
	err = try_remove();
	if (!err)
		put_back(_metadata);
	EXPECT_TRUE(err == EBUSY || err == EWOULDBLOCK)
		TH_LOG("delete_module with an open fd: %s",
		       err ? strerror(err) : "removed!");
	EXPECT_TRUE(bench_loaded());
	if (!err)
		return;
	/* the fd still works */
	EXPECT_EQ(-ENODEV, kb_irq_wait(fd, 0, 0, NULL));
	close(fd);
}

struct irq_waiter {
	int fd, cpu, err;
};

static void *irq_waiter_fn(void *arg)
{
	struct irq_waiter *w = arg;

	do
		w->err = kb_irq_wait(w->fd, w->cpu, -1, NULL);
	while (!w->err);
	return NULL;
}

/* A thread waiting in IRQ_WAIT holds the module like any fd. */
TEST_F(life, rmmod_while_irq_wait_fails)
{
	struct kb_irq r = { 100, KPROG_BENCH_IRQ_WAKE, -1, 30000 };
	struct irq_waiter w = { .fd = kb_dev_open() };
	pthread_t th;
	struct kpn k;
	int err;

	ASSERT_TRUE(bench_loaded());
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, kb_open(&k));
	ASSERT_EQ(0, kb_irq_start(&k, &r)) TH_LOG("%s", k.msg);
	ASSERT_EQ(0, pthread_create(&th, NULL, irq_waiter_fn, &w));
	usleep(100000);
	err = try_remove();
	if (!err)
		put_back(_metadata);
	EXPECT_TRUE(err == EBUSY || err == EWOULDBLOCK)
		TH_LOG("delete_module: %s", err ? strerror(err) : "removed!");
	if (!err) {
		pthread_join(th, NULL);
		return;
	}
	EXPECT_EQ(0, kpn_cmd(&k, KPROG_BENCH_CMD_IRQ_STOP));
	pthread_join(th, NULL);
	EXPECT_EQ(-ENODEV, w.err);
	close(w.fd);
	kpn_close(&k);
}

/*
 * Unloading stops a running interrupt source (timers, queued work, in
 * every mode); after a reload the family is back and the source idle.
 */
TEST_F(life, unload_while_irq_source_runs_then_reload)
{
	static const int modes[] = { KPROG_BENCH_IRQ_WORK,
				     KPROG_BENCH_IRQ_TASKLET,
				     KPROG_BENCH_IRQ_WAKE };
	struct kb_irq r = { 2000, 0, 10000, 30000 };
	struct kb_status st;
	struct stat sb;
	unsigned int i;
	struct kpn k;
	int err, ko = kp_ko_open("kprog_bench");

	ASSERT_TRUE(bench_loaded());
	ASSERT_LE(0, ko) TH_LOG("kmod/bench/kprog_bench.ko not found: not unloading");
	close(ko);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		r.mode = modes[i];
		ASSERT_EQ(0, kb_open(&k));
		ASSERT_EQ(0, kb_irq_start(&k, &r)) TH_LOG("%s", k.msg);
		usleep(100000);
		ASSERT_EQ(0, kb_irq_status(&k, &st));
		ASSERT_EQ(1, st.running);
		kpn_close(&k);
		err = remove_when_idle();
		ASSERT_EQ(0, err) TH_LOG("delete_module with the source running (mode %d): %s",
					 modes[i], strerror(err));
		EXPECT_FALSE(bench_loaded());
		EXPECT_EQ(-ENOENT, kb_open(&k));
		EXPECT_NE(0, stat(KPROG_BENCH_DEVICE, &sb));
		err = load_bench(saved_params);
		ASSERT_EQ(0, err) TH_LOG("reload (params \"%s\"): %s",
					 saved_params, strerror(err));
		ASSERT_EQ(0, kb_open(&k));
		ASSERT_EQ(0, kb_irq_status(&k, &st));
		EXPECT_EQ(0, st.running);
		kpn_close(&k);
	}
	ASSERT_EQ(0, kb_open(&k));
	r.duration_ms = 50;
	EXPECT_EQ(0, kb_irq_start(&k, &r));
	EXPECT_EQ(0, kb_wait_idle(&k, 20000));
	kpn_close(&k);
}

/* Bad parameters are refused at load, and nothing stays behind. */
TEST_F(life, load_refuses_bad_parameters)
{
	static const char *const bad[] = {
		"irq_max_hz=0", "irq_max_hz=1000001",
		"irq_max_duration_ms=0", "irq_max_duration_ms=3600001",
		"irq_max_load_ns=1000001",
	};
	unsigned int i;
	int err;

	ASSERT_TRUE(bench_loaded());
	err = remove_when_idle();
	ASSERT_EQ(0, err) TH_LOG("delete_module: %s", strerror(err));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(EINVAL, load_bench(bad[i])) TH_LOG("%s", bad[i]);
		EXPECT_FALSE(bench_loaded()) TH_LOG("%s", bad[i]);
	}
	ASSERT_EQ(0, load_bench(saved_params));
}

/* Last: leave the VM as the program found it. */
TEST_F(life, remove_if_loaded_here)
{
	if (!loaded_here)
		SKIP(return, "kprog_bench.ko was loaded before: left loaded");
	EXPECT_EQ(0, remove_when_idle());
	EXPECT_FALSE(bench_loaded());
}

TEST_HARNESS_MAIN
