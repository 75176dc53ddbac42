// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel memory of a job charged to its memory cgroup.
 *
 * memcg_bounds_rings_and_channels: a child in a cgroup v2 group with
 * memory.max = 16 MiB (cgroup2 is mounted and the memory controller
 * enabled here if the VM's init did not) JOINs endpoints of a big job and
 * opens channels until the module refuses: it must get ENOMEM, and the
 * module's rings, grant tables and channels (the vmalloc areas of [kprog]
 * in /proc/vmallocinfo) must stay within the group's limit. Before they
 * were charged (vmalloc_user() is not) the child reached its endpoint
 * cap with several times the limit allocated in the kernel.
 */
#include <sys/mount.h>
#include <sys/resource.h>
#include "kprog_test.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_LIMIT	(16L << 20)
#define MAX_EPS		900

/* Bytes of kprog's vmalloc areas now (vmallocinfo: "start-end size caller"). */
static long long kprog_vmalloc_bytes(void)
{
	char line[512];
	long long sum = 0, sz;
	FILE *f = fopen("/proc/vmallocinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[kprog]") &&
		    sscanf(line, "%*s %lld", &sz) == 1)
			sum += sz - 4096;	/* the guard page is no memory */
	fclose(f);
	return sum;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -errno;
}

/* A cgroup v2 group with the memory controller, or a negative errno. */
static int make_group(char *dir, size_t len)
{
	char path[256];

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return -errno;
	/* may fail when already on; then memory.max below tells */
	write_str(CG_ROOT "/cgroup.subtree_control", "+memory");
	snprintf(dir, len, CG_ROOT "/kprog_limits.%d", getpid());
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/memory.max", dir);
	snprintf(path + 200, 56, "%ld", CG_LIMIT);
	return write_str(path, path + 200);
}

struct outcome {
	int eps, chans, err, chan_err;
	long long kbytes;	/* kprog's vmalloc bytes at the child's peak */
};

/* In the group: JOIN and CHAN_OPEN until refused; report by pipe. */
static void fill(int out, __u32 size, long long base)
{
	static int fds[MAX_EPS];
	struct rlimit rl = { MAX_EPS + 64, MAX_EPS + 64 };
	struct outcome o = { 0 };
	__u64 key = kp_key();

	setrlimit(RLIMIT_NOFILE, &rl);
	for (o.eps = 0; o.eps < MAX_EPS; o.eps++) {
		int fd = kp_open(), err;

		if (fd < 0) {
			o.err = fd;
			break;
		}
		/* each endpoint its own rank of one job: channels between them */
		err = kp_join_fd(fd, key, o.eps, size, 0, 0, NULL);
		if (err) {
			close(fd);
			o.err = err;
			break;
		}
		fds[o.eps] = fd;
	}
	/* channels between the joined ranks, until refused */
	for (int i = 1; i < o.eps && !o.chan_err; i++) {
		struct kprog_chan_open co = { .peer = i - 1 };

		if (ioctl(fds[i], KPROG_IOC_CHAN_OPEN, &co))
			o.chan_err = -errno;
		else
			o.chans++;
	}
	o.kbytes = kprog_vmalloc_bytes() - base;
	if (write(out, &o, sizeof(o)) != sizeof(o))
		_exit(3);
	_exit(0);
}

TEST(memcg_bounds_rings_and_channels)
{
	long long base = kprog_vmalloc_bytes();
	long long max_size = kp_param("max_job_size");
	char dir[200], path[256], pid[32];
	struct outcome o;
	int p[2], go[2], status;
	pid_t child;

	if (base < 0)
		SKIP(return, "no /proc/vmallocinfo");
	ASSERT_LT(MAX_EPS, max_size);
	ASSERT_EQ(0, make_group(dir, sizeof(dir)));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		char c;

		close(p[0]);
		close(go[1]);
		/* once the parent moved us into the group */
		if (read(go[0], &c, 1) != 1)
			_exit(4);
		fill(p[1], max_size, base);
	}
	close(go[0]);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", child);
	ASSERT_EQ(0, write_str(path, pid));
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	close(p[1]);
	ASSERT_EQ(sizeof(o), read(p[0], &o, sizeof(o)));
	close(p[0]);
	kp_child_status(child, &status);
	TH_LOG("in %ld MiB: %d endpoints of a %lld-rank job (stopped by %s), %d channels (%s); kprog vmalloc %lld KiB",
	       CG_LIMIT >> 20, o.eps, max_size, o.err ? strerror(-o.err) : "none",
	       o.chans, o.chan_err ? strerror(-o.chan_err) : "none", o.kbytes >> 10);
	rmdir(dir);
	EXPECT_TRUE(WIFEXITED(status));
	/* refused with a clear error before the group's limit was passed */
	EXPECT_EQ(-ENOMEM, o.err ? o.err : o.chan_err);
	EXPECT_GE(CG_LIMIT, o.kbytes);
}

TEST_HARNESS_MAIN
