// SPDX-License-Identifier: GPL-2.0
/*
 * kprog selftest: the module cannot be removed while an endpoint is open.
 * Run last. The module is never removed on purpose; if the removal
 * succeeds anyway (a bug), it is loaded again from kmod/kprog.ko.
 */
#include <libgen.h>
#include <limits.h>
#include "kprog_test.h"

static int module_loaded(void)
{
	struct stat st;

	return stat("/sys/module/kprog", &st) == 0;
}

/* Put the module back if a buggy refcount let it go. */
static void reload(struct __test_metadata *_metadata)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd;

	if (n <= 0)
		return;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/../../kmod/kprog.ko", dirname(exe));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		TH_LOG("cannot reload %s: %s", path, strerror(errno));
		return;
	}
	if (syscall(SYS_finit_module, fd, "", 0))
		TH_LOG("finit_module %s: %s", path, strerror(errno));
	close(fd);
}

static int try_remove(void)
{
	return syscall(SYS_delete_module, "kprog", O_NONBLOCK) ? errno : 0;
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

TEST_HARNESS_MAIN
