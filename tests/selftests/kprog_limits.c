// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel memory of a job charged to its memory cgroup.
 *
 * memcg_bounds_rings_and_channels: a child in a cgroup v2 group with
 * memory.max = 16 MiB (cgroup2 is mounted and the memory controller
 * enabled here if the VM's init did not) JOINs endpoints of a big job (and
 * opens channels among the first eight) until the module refuses: it must
 * get ENOMEM, and the
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
	int done;
};

/*
 * The child opens every fd before it enters the group (files and
 * endpoints are charged to the parent's group then), and in the group only
 * JOINs and opens channels: their memory (rings, grant tables, channels)
 * is allocated with __GFP_RETRY_MAYFAIL, so the group's limit gives a
 * clean ENOMEM. Nothing else may be allocated there at the limit: a page
 * fault of the child's, or a small kernel allocation, would be an OOM kill
 * rather than an errno. So the child reports through a page shared and
 * touched before fork, and its arrays are touched before it enters.
 */
static int fds[MAX_EPS];

static void fill(int in, struct outcome *o, __u32 size)
{
	__u64 key = kp_key();
	int n, i, err;
	char c;

	for (n = 0; n < MAX_EPS; n++) {
		fds[n] = kp_open();
		if (fds[n] < 0)
			_exit(6);
	}
	/* once the parent moved us into the group */
	if (read(in, &c, 1) != 1)
		_exit(4);
	for (o->eps = 0; o->eps < MAX_EPS; o->eps++) {
		/* each endpoint its own rank of one job */
		err = kp_join_fd(fds[o->eps], key, o->eps, size, 0, 0, NULL);
		if (err) {
			o->err = err;
			break;
		}
		/* channels among the first eight, well below the limit */
		for (i = 0; o->eps == 7 && i < 7; i++) {
			struct kprog_chan_open co = { .peer = i };

			if (ioctl(fds[7], KPROG_IOC_CHAN_OPEN, &co))
				o->chan_err = -errno;
			else
				o->chans++;
		}
	}
	__atomic_store_n(&o->done, 1, __ATOMIC_RELEASE);
	/* keep everything until the parent has measured */
	if (read(in, &c, 1) < 0)
		_exit(5);
	_exit(0);
}

TEST(memcg_bounds_rings_and_channels)
{
	long long base = kprog_vmalloc_bytes();
	long long max_size = kp_param("max_job_size");
	struct rlimit rl = { MAX_EPS + 64, MAX_EPS + 64 };
	char dir[200], path[256], pid[32];
	long long kbytes, t0;
	struct outcome *o;
	int go[2], status;
	pid_t child;

	if (base < 0)
		SKIP(return, "no /proc/vmallocinfo");
	ASSERT_LT(MAX_EPS, max_size);
	ASSERT_EQ(0, make_group(dir, sizeof(dir)));
	o = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, o);
	memset(o, 0, 4096);
	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		close(go[1]);
		setrlimit(RLIMIT_NOFILE, &rl);
		memset(fds, 0xff, sizeof(fds));
		fill(go[0], o, max_size);
	}
	close(go[0]);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", child);
	ASSERT_EQ(0, write_str(path, pid));
	ASSERT_EQ(1, write(go[1], "g", 1));
	t0 = kp_now_ms();
	while (!__atomic_load_n(&o->done, __ATOMIC_ACQUIRE) &&
	       kp_now_ms() - t0 < 120000 && !waitpid(child, &status, WNOHANG))
		usleep(10000);
	/* with every endpoint and channel of the child still there */
	kbytes = kprog_vmalloc_bytes() - base;
	ASSERT_TRUE(__atomic_load_n(&o->done, __ATOMIC_ACQUIRE));
	close(go[1]);
	kp_child_status(child, &status);
	TH_LOG("in %ld MiB: %d endpoints of a %lld-rank job (stopped by %s), %d channels (%s); kprog vmalloc %lld KiB",
	       CG_LIMIT >> 20, o->eps, max_size, o->err ? strerror(-o->err) : "none",
	       o->chans, o->chan_err ? strerror(-o->chan_err) : "none", kbytes >> 10);
	rmdir(dir);
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("child status 0x%x", status);
	/* refused with a clear error before the group's limit was passed */
	EXPECT_EQ(-ENOMEM, o->err);
	EXPECT_EQ(7, o->chans);
	EXPECT_GE(CG_LIMIT, kbytes);
	munmap(o, 4096);
}

TEST_HARNESS_MAIN
