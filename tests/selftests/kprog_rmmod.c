// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftest: the module cannot be removed while an endpoint is open
 * or joined and mapped; it can be removed, and loaded again, right after a
 * close with a transfer in flight. Run last. The module is never removed
 * on purpose while held; if the removal succeeds anyway (a bug), it is
 * loaded again from kmod/core/kprog.ko. (The interrupt source's module,
 * kprog_bench.ko, has its own such tests in kprog_bench.c.)
 */
#include "kprog_test.h"
#include <dirent.h>
#include <sys/klog.h>

static int module_loaded(void)
{
	struct stat st;

	return stat("/sys/module/kprog", &st) == 0;
}

/* "name=value ..." of the loaded module's parameters, to load it again. */
static void module_params(char *out, size_t size)
{
	struct dirent *d;
	size_t used = 0;
	DIR *dir = opendir(KP_PARAM_DIR);

	out[0] = 0;
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		long long v;

		if (d->d_name[0] == '.')
			continue;
		v = kp_param(d->d_name);
		if (v < 0)
			continue;
		used += snprintf(out + used, size - used, "%s%s=%lld",
				 used ? " " : "", d->d_name, v);
		if (used >= size) {
			out[size - 1] = 0;
			break;
		}
	}
	closedir(dir);
}

static char saved_params[1024];

/* Load the module again (with the parameters it had); 0 or an errno. */
static int load_again(void)
{
	return kp_ko_load("kprog", saved_params, KPROG_DEVICE);
}

/* Put the module back if a buggy refcount let it go. */
static void reload(struct __test_metadata *_metadata)
{
	int err = load_again();

	if (err)
		TH_LOG("could not load kmod/core/kprog.ko again: %s", strerror(err));
}

static void __attribute__((constructor)) remember_params(void)
{
	module_params(saved_params, sizeof(saved_params));
}

/* The kernel log's "kprog: leaked" lines; the last one in @last. */
static int leak_lines(char *last, size_t size)
{
	int len = klogctl(10, NULL, 0), n, count = 0;	/* SIZE_BUFFER */
	char *buf, *p;

	last[0] = 0;
	if (len <= 0)
		return 0;
	buf = malloc(len + 1);
	if (!buf)
		return 0;
	n = klogctl(3, buf, len);	/* READ_ALL */
	if (n < 0)
		n = 0;
	buf[n] = 0;
	for (p = buf; (p = strstr(p, "kprog: leaked")); p++) {
		size_t l = strcspn(p, "\n");

		count++;
		snprintf(last, size, "%.*s", (int)l, p);
	}
	free(buf);
	return count;
}

static int try_remove(void)
{
	return kp_ko_remove("kprog");
}

static int remove_when_idle(void)
{
	return kp_ko_remove_when_idle("kprog", 10000);
}

TEST(rmmod_while_open_fails)
{
	__u32 v = 0;
	int fd, err;

	ASSERT_TRUE(module_loaded());
	fd = kp_open();
	ASSERT_LE(0, fd);
	err = try_remove();
	if (!err)
		reload(_metadata);
	EXPECT_TRUE(err == EBUSY || err == EWOULDBLOCK)
		TH_LOG("delete_module with an open fd: %s",
		       err ? strerror(err) : "removed!");
	EXPECT_TRUE(module_loaded());
	if (!err)
		return;
	/* the fd still works */
	EXPECT_EQ(0, ioctl(fd, KPROG_IOC_VERSION, &v));
	EXPECT_EQ(KPROG_ABI_VERSION, v);
	close(fd);
}

TEST(rmmod_while_joined_and_mapped_fails)
{
	struct kp_ep e[2];
	char buf[64];
	struct kprog_post p;
	int err;

	ASSERT_TRUE(module_loaded());
	ASSERT_EQ(0, kp_job_open(e, 2, 2, kp_key(), 0, 0));
	/* an unmatched receive is in flight */
	ASSERT_EQ(0, kp_recv(&e[0], 1, buf, sizeof(buf), 1, 1, 0, 0, &p));
	/* closed fd, ring still mapped: the file is still referenced */
	close(e[1].fd);
	e[1].fd = -1;
	err = try_remove();
	if (!err)
		reload(_metadata);
	EXPECT_TRUE(err == EBUSY || err == EWOULDBLOCK)
		TH_LOG("delete_module: %s", err ? strerror(err) : "removed!");
	EXPECT_TRUE(module_loaded());
	if (!err)
		return;
	EXPECT_EQ(0, kp_cancel(&e[0], 1));
	kp_job_close(e, 2);
}


/*
 * Once every file is closed the module can go, even right after a close
 * with a transfer in flight; unloading must wait for that transfer, not
 * crash. The module is then loaded again with the same parameters.
 */
TEST(unload_after_close_in_flight_then_reload)
{
	size_t len = 64u << 20;
	char line[256];
	int leaks;
	struct stat st;
	__u32 v = 0;
	pid_t pid;
	int err, fd, ko = kp_ko_open("kprog");

	ASSERT_TRUE(module_loaded());
	ASSERT_LE(0, ko) TH_LOG("kmod/core/kprog.ko not found: not unloading");
	close(ko);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char *a = kp_alloc(len), *b = kp_alloc(len);
		struct kprog_post p;
		struct kp_ep e[2];

		if (!a || !b || kp_job_open(e, 2, 2, kp_key(), 0, 0))
			_exit(2);
		memset(a, 1, len);
		memset(b, 2, len);
		if (kp_send(&e[1], 1, a, len, 0, 1, 0, 0, &p) ||
		    kp_recv(&e[0], 2, b, len, 1, 1, 0, 0, &p))
			_exit(3);
		kp_job_close(e, 2);
		_exit(0);
	}
	ASSERT_EQ(0, kp_child_status(pid, NULL));
	leaks = leak_lines(line, sizeof(line));
	/* no file is open any more: removal must succeed (soon) */
	err = remove_when_idle();
	ASSERT_EQ(0, err) TH_LOG("delete_module with no open file: %s",
				 strerror(err));
	EXPECT_FALSE(module_loaded());
	EXPECT_NE(0, stat(KPROG_DEVICE, &st));
	/* the module counts live objects and reports leaks at unload */
	EXPECT_EQ(leaks, leak_lines(line, sizeof(line)))
		TH_LOG("objects leaked over the whole run: %s", line);
	err = load_again();
	ASSERT_EQ(0, err) TH_LOG("reload (params \"%s\"): %s", saved_params,
				 strerror(err));
	ASSERT_TRUE(module_loaded());
	fd = kp_open();
	ASSERT_LE(0, fd) TH_LOG("open after reload: %s", kp_strerr(fd));
	EXPECT_EQ(0, ioctl(fd, KPROG_IOC_VERSION, &v));
	EXPECT_EQ(KPROG_ABI_VERSION, v);
	EXPECT_EQ(0, kp_join_fd(fd, kp_key(), 0, 1, 0, 0, NULL));
	close(fd);
	TH_LOG("module reloaded with \"%s\"", saved_params);
}

/*
 * The same with collective schedules: the last close comes with their
 * start timers armed (coll_start_delay_us = 10 ms), work items queued and
 * a receive step posted; the module is removed at once. Unloading must
 * wait for the timers and the work items, and report no leaked schedule.
 */
TEST(unload_right_after_close_with_schedule_timers_armed)
{
	char line[256];
	int leaks, err, writable = kp_param_writable("coll_start_delay_us");
	int ko = kp_ko_open("kprog");
	pid_t pid;

	ASSERT_TRUE(module_loaded());
	ASSERT_LE(0, ko) TH_LOG("kmod/core/kprog.ko not found: not unloading");
	close(ko);
	if (!kp_param("max_colls"))
		SKIP(return, "max_colls=0: no schedules");
	if (writable)
		ASSERT_EQ(0, kp_param_write("coll_start_delay_us", 10000));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		size_t len = 1u << 20;
		unsigned char *a = kp_alloc(len), *b = kp_alloc(len);
		struct kprog_coll_step st[3];
		struct kprog_coll c;
		struct kp_ep e[2];
		double y;
		int i;

		if (!a || !b || kp_job_open(e, 2, 2, kp_key(), 0, 0))
			_exit(2);
		memset(st, 0, sizeof(st));
		st[0].kind = KPROG_STEP_RECV;
		st[0].peer = 1;
		st[0].dst = (__u64)(uintptr_t)&y;
		st[0].len = 8;
		st[1].kind = KPROG_STEP_COPY;
		st[1].src = (__u64)(uintptr_t)a;
		st[1].dst = (__u64)(uintptr_t)b;
		st[1].len = len;
		st[2] = st[1];
		st[2].round = 1;
		for (i = 0; i < 8; i++) {
			c = (struct kprog_coll){ .req_id = i,
				.steps = (__u64)(uintptr_t)st, .nr_steps = 3,
				.context = 1, .tag = i };
			if (ioctl(e[0].fd, KPROG_IOC_COLL, &c))
				_exit(3);
		}
		kp_job_close(e, 2);
		_exit(0);
	}
	ASSERT_EQ(0, kp_child_status(pid, NULL));
	leaks = leak_lines(line, sizeof(line));
	err = remove_when_idle();
	if (err && writable)
		kp_param_write("coll_start_delay_us", 100);
	ASSERT_EQ(0, err) TH_LOG("delete_module with no open file: %s",
				 strerror(err));
	EXPECT_FALSE(module_loaded());
	EXPECT_EQ(leaks, leak_lines(line, sizeof(line)))
		TH_LOG("objects leaked: %s", line);
	err = load_again();
	ASSERT_EQ(0, err) TH_LOG("reload (params \"%s\"): %s", saved_params,
				 strerror(err));
	ASSERT_TRUE(module_loaded());
	/* Loaded again with the parameters it had before the test. */
	EXPECT_NE(10000, kp_param("coll_start_delay_us"));
}

TEST_HARNESS_MAIN
