// SPDX-License-Identifier: GPL-2.0
/*
 * MPI_Init / MPI_Init_thread / MPI_Finalize: open /dev/kprog, agree on a
 * job key per node, JOIN, map the completion ring; or fall back to a pure
 * pass-through when anything fails on any rank.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include "shim.h"

struct kp_state kp = { .fd = -1 };
static struct kprog_info info;

void kp_logf(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kprog[%d]: ", kp.world_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t kp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	return *end ? def : v;
}

/* Failure steps, reported to world rank 0 through an Allreduce(MAX). */
enum { ST_OK, ST_OPEN, ST_VERSION_IOCTL, ST_VERSION, ST_JOIN, ST_MMAP, ST_MEM };

static void report(int code)
{
	int step = code >> 16, e = code & 0xffff;

	if (kp.world_rank != 0)
		return;
	switch (step) {
	case ST_OPEN:
		fprintf(stderr, "kprog: %s not available (%s); passing MPI through to Open MPI\n",
			KPROG_DEVICE, strerror(e));
		break;
	case ST_VERSION_IOCTL:
		fprintf(stderr, "kprog: KPROG_IOC_VERSION failed (%s); passing MPI through to Open MPI\n",
			strerror(e));
		break;
	case ST_VERSION:
		fprintf(stderr, "kprog: module ABI version %d, shim expects %d; passing MPI through to Open MPI\n",
			e, KPROG_ABI_VERSION);
		break;
	case ST_JOIN:
		fprintf(stderr, "kprog: KPROG_IOC_JOIN failed (%s); passing MPI through to Open MPI\n",
			strerror(e));
		break;
	case ST_MMAP:
		fprintf(stderr, "kprog: mapping the completion ring failed (%s); passing MPI through to Open MPI\n",
			strerror(e));
		break;
	default:
		fprintf(stderr, "kprog: set-up failed (%s); passing MPI through to Open MPI\n",
			strerror(e));
		break;
	}
}

static int open_and_join(uint64_t key)
{
	struct kprog_join j;
	__u32 ver = 0;
	void *ring;

	kp.fd = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
	if (kp.fd < 0)
		return ST_OPEN << 16 | errno;
	if (ioctl(kp.fd, KPROG_IOC_VERSION, &ver) < 0)
		return ST_VERSION_IOCTL << 16 | errno;
	if (ver != KPROG_ABI_VERSION)
		return ST_VERSION << 16 | (ver & 0xffff);
	/* A module without GET_INFO simply has no fast path. */
	if (ioctl(kp.fd, KPROG_IOC_GET_INFO, &info) < 0)
		memset(&info, 0, sizeof(info));
	memset(&j, 0, sizeof(j));
	j.abi_version = KPROG_ABI_VERSION;
	j.job_key = key;
	j.rank = kp.world_rank;
	j.size = kp.world_size;
	j.eager_limit = (__u32)env_long("KPROG_EAGER_LIMIT", 0);
	/* the wait-state profiler wants the kernel's times of its receives */
	if (kp_wp_on && (info.features & KPROG_FEAT_TIMES))
		j.flags |= KPROG_JOIN_TIMES;
	if (ioctl(kp.fd, KPROG_IOC_JOIN, &j) < 0)
		return ST_JOIN << 16 | errno;
	if (j.ring_entries == 0 || (j.ring_entries & (j.ring_entries - 1)) ||
	    j.ring_bytes < KPROG_RING_CQES_OFFSET + (uint64_t)j.ring_entries * sizeof(struct kprog_cqe))
		return ST_JOIN << 16 | EPROTO;
	ring = mmap(NULL, j.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kp.fd, 0);
	if (ring == MAP_FAILED)
		return ST_MMAP << 16 | errno;
	kp.ring = ring;
	kp.cqes = (struct kprog_cqe *)((char *)ring + KPROG_RING_CQES_OFFSET);
	kp.ring_bytes = j.ring_bytes;
	kp.ring_mask = j.ring_entries - 1;
	kp.max_iov = j.max_iov;
	kp.max_ops = j.max_ops;
	kp.recv_arrived = info.features & KPROG_FEAT_RECV_ARRIVED;
	kp.eager_limit = j.eager_limit;
	if ((j.flags & KPROG_JOIN_TIMES) && kp.ring->times_offset)
		kp.times = (const struct kprog_cqe_times *)((char *)ring + kp.ring->times_offset);
	return ST_OK;
}

static void teardown(void)
{
	if (kp.ring)
		munmap(kp.ring, kp.ring_bytes);
	kp.ring = NULL;
	kp.times = NULL;
	if (kp.fd >= 0)
		close(kp.fd);
	kp.fd = -1;
}

void kp_setup(int provided)
{
	int node_rank, node_size, code = ST_OK, all, i;
	int *node_world, *tmp;
	uint64_t key = 0;
	MPI_Group ng, wg;

	PMPI_Comm_rank(MPI_COMM_WORLD, &kp.world_rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &kp.world_size);
	kp.verbose = (int)env_long("KPROG_VERBOSE", 0);
	/*
	 * KPROG_SPIN_US fixes the spin; by default it adapts (spin.h) between
	 * KPROG_SPIN_MIN_US and KPROG_SPIN_MAX_US: 1 ms covers a wake-up
	 * under emulation, where a wake-up costs hundreds of microseconds.
	 */
	kp_spin_init(&kp.spin, env_long("KPROG_SPIN_US", -1), env_long("KPROG_SPIN_MIN_US", 1),
		     env_long("KPROG_SPIN_MAX_US", 1000), 50);
	kp.full_wait_ns = env_long("KPROG_FULL_WAIT_US", 50) * 1000;
	kp_wp_init();
	if (env_long("KPROG_DISABLE", 0) == 1) {
		kp_log(1, "KPROG_DISABLE=1: passing everything through");
		return;
	}
	if (provided == MPI_THREAD_MULTIPLE && !kp_ompi_cid_init()) {
		/*
		 * Threads need Open MPI's context ids (no Allreduce of ours
		 * that two threads could run at once: ompi_cid.c). Same
		 * decision on every rank; agreed below anyway.
		 */
		code = ST_MEM << 16;
	}

	PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &kp.node_comm);
	PMPI_Comm_rank(kp.node_comm, &node_rank);
	PMPI_Comm_size(kp.node_comm, &node_size);
	if (node_rank == 0) {
		while (getrandom(&key, sizeof(key), 0) != sizeof(key))
			;
	}
	PMPI_Bcast(&key, 1, MPI_UINT64_T, 0, kp.node_comm);

	/* which world ranks share this node */
	kp.local = calloc(kp.world_size, 1);
	node_world = malloc(sizeof(int) * node_size);
	tmp = malloc(sizeof(int) * node_size);
	if (!kp.local || !node_world || !tmp) {
		code = ST_MEM << 16 | ENOMEM;
	} else {
		for (i = 0; i < node_size; i++)
			tmp[i] = i;
		PMPI_Comm_group(kp.node_comm, &ng);
		PMPI_Comm_group(MPI_COMM_WORLD, &wg);
		PMPI_Group_translate_ranks(ng, node_size, tmp, wg, node_world);
		PMPI_Group_free(&ng);
		PMPI_Group_free(&wg);
		for (i = 0; i < node_size; i++)
			kp.local[node_world[i]] = 1;
	}
	free(node_world);
	free(tmp);

	if (code == ST_OK)
		code = open_and_join(key);
	PMPI_Allreduce(&code, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (all != ST_OK) {
		if (provided == MPI_THREAD_MULTIPLE && (all >> 16) == ST_MEM && !(all & 0xffff)) {
			if (kp.world_rank == 0)
				fprintf(stderr, "kprog: MPI_THREAD_MULTIPLE needs Open MPI's context ids, which cannot be read; passing MPI through to Open MPI\n");
		} else {
			report(all);
		}
		teardown();
		return;
	}
	kp_pool_init();
	kp.active = true;	/* before registering: register checks it */
	kp_comm_init();
	if (env_long("KPROG_FAST", 1) != 0)
		kp_fast_init(&info, env_long("KPROG_FAST_LIMIT", -1));
	kp_progress_hook(true);
	kp.mt = provided == MPI_THREAD_MULTIPLE;	/* from here on, the lock (lock.c) */
	if (kp.mt)
		kp_log(1, "MPI_THREAD_MULTIPLE: one lock around the shim (lock.c)");
	kp_log(1, "joined: node ranks %d, eager_limit %u, ring %u, max_iov %u, max_ops %u, fast path %s (%u bytes)",
	       node_size, kp.eager_limit, kp.ring_mask + 1, kp.max_iov, kp.max_ops,
	       kp_fast_active() ? "on" : "off", kp_fast_limit());
}

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);

	if (rc == MPI_SUCCESS)
		kp_setup(MPI_THREAD_SINGLE);
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	if (rc == MPI_SUCCESS)
		kp_setup(*provided);
	return rc;
}

/* Everything of MPI_Finalize but PMPI_Finalize (shared with Fortran's). */
void kp_shutdown(void)
{
	kp_wp_finalize();	/* collective: before anybody leaves */
	if (kp.active) {
		/* Buffered and freed sends still in flight must reach their
		 * receivers before close() cancels them.
		 */
		while (kp_outstanding_internal()) {
			kp_progress();
			if (kp_outstanding_internal())
				kp_sleep(1000000);
		}
		kp_progress();
		/* nobody leaves the job while a peer may still receive */
		PMPI_Barrier(kp.node_comm);
		if (kp_fast_active()) {
			const struct kp_fast_stats *f = kp_fast_stats();

			kp_log(1, "fast path: sent %llu received %llu user-posted %llu moved to the kernel %llu drains %llu kicks %llu channel full %llu (then through the kernel %llu)",
			       (unsigned long long)f->sent, (unsigned long long)f->received,
			       (unsigned long long)f->uposted, (unsigned long long)f->to_kernel,
			       (unsigned long long)f->drains, (unsigned long long)f->kicks,
			       (unsigned long long)f->full, (unsigned long long)f->full_fallback);
		}
		kp_log(1, "waits %llu slept %llu, spin limit %llu us (grew %llu, shrank %llu)",
		       (unsigned long long)kp.spin.waits, (unsigned long long)kp.spin.slept,
		       (unsigned long long)kp.spin.limit_ns / 1000,
		       (unsigned long long)kp.spin.grew, (unsigned long long)kp.spin.shrank);
		kp_progress_hook(false);
		kp_fast_fini();
		kp.active = false;
		teardown();
		kp_comm_fini();
	}
	if (kp.node_comm != MPI_COMM_NULL && kp.node_comm)
		PMPI_Comm_free(&kp.node_comm);
}

int MPI_Finalize(void)
{
	kp_shutdown();
	return PMPI_Finalize();
}
