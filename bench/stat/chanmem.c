// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chanmem: kernel memory of fast-path channels per node as the number of
 * ranks on the node grows (issue 32). For each N given, one process opens
 * N endpoints, joins them as the ranks of one job and opens the channel of
 * every pair (all-to-all, the worst case: the shim opens a channel only
 * for a pair that talks), then reads what the node's kernel holds: the
 * vmalloc area (/proc/meminfo VmallocUsed, where rings, channels and grant
 * tables live) and slab, against the same before the job. Channels past
 * the module's bounds (max_chans per endpoint, chan_mem_mib per node) are
 * refused with ENOSPC: that pair uses the kernel path.
 *
 *   chanmem N...        as root in the VM, kprog.ko loaded
 * Prints one line per N: ranks, pairs, channels made, refused, channel
 * bytes the module reported, VmallocUsed and Slab growth in MiB, and
 * whether a second job of two ranks, started while the first holds its
 * channels, still gets one (other_job ok) or not (ENOSPC).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <linux/kprog.h>

static long meminfo_kib(const char *name)
{
	char line[256];
	size_t n = strlen(name);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			v = atol(line + n + 1);
			break;
		}
	fclose(f);
	return v;
}

/* Opens the channel of a job of two ranks; 0 or the errno. */
static int other_job(unsigned long long key)
{
	struct kprog_chan_open co = { .peer = 1 };
	struct kprog_join j;
	int fd[2], i, err = 0;

	for (i = 0; i < 2; i++) {
		fd[i] = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
		memset(&j, 0, sizeof(j));
		j.abi_version = KPROG_ABI_VERSION;
		j.job_key = key;
		j.rank = i;
		j.size = 2;
		if (fd[i] < 0 || ioctl(fd[i], KPROG_IOC_JOIN, &j))
			err = err ?: errno;
	}
	if (!err && ioctl(fd[0], KPROG_IOC_CHAN_OPEN, &co))
		err = errno;
	for (i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return err;
}

static int one(int n)
{
	long v0 = meminfo_kib("VmallocUsed"), s0 = meminfo_kib("Slab");
	unsigned long long key, bytes = 0;
	int *fd = calloc((size_t)n, sizeof(*fd));
	long made = 0, refused = 0, other = 0;
	struct kprog_join j;
	int i, k;

	if (!fd)
		return 1;
	key = (unsigned long long)time(NULL) << 20 ^ (unsigned long long)getpid() << 8 ^ n;
	for (i = 0; i < n; i++) {
		fd[i] = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
		memset(&j, 0, sizeof(j));
		j.abi_version = KPROG_ABI_VERSION;
		j.job_key = key;
		j.rank = i;
		j.size = n;
		if (fd[i] < 0 || ioctl(fd[i], KPROG_IOC_JOIN, &j)) {
			fprintf(stderr, "chanmem: rank %d of %d: %s\n", i, n, strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < n; i++)
		for (k = i + 1; k < n; k++) {
			struct kprog_chan_open co = { .peer = (__u32)k };

			if (!ioctl(fd[i], KPROG_IOC_CHAN_OPEN, &co)) {
				made++;
				bytes += co.bytes;
			} else if (errno == ENOSPC) {
				refused++;
			} else {
				other++;
			}
		}
	printf("ranks %4d  pairs %6d  channels %6ld  refused %6ld  other %ld  channel_mib %8.1f  vmalloc_mib %8.1f  slab_mib %6.1f",
	       n, n * (n - 1) / 2, made, refused, other, bytes / 1048576.0,
	       (meminfo_kib("VmallocUsed") - v0) / 1024.0, (meminfo_kib("Slab") - s0) / 1024.0);
	k = other_job(key + 1);
	printf("  other_job %s\n", k ? strerror(k) : "ok");
	fflush(stdout);
	for (i = 0; i < n; i++)
		close(fd[i]);
	free(fd);
	/* the module frees a channel when both sides closed it */
	usleep(200000);
	return other != 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	int i, err = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: chanmem N...\n");
		return 2;
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (i = 1; i < argc; i++)
		err |= one(atoi(argv[i]));
	return err;
}
