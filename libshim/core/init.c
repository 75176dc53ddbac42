// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_Init / MPI_Init_thread / MPI_Finalize: open /dev/kprog, agree on
 * one job key for the world, the node of every rank and the address of
 * every node, JOIN (with that node map when the job spans nodes and every
 * node has the network transport), connect the nodes' modules (netconn.c:
 * the module serves that only to an endpoint of a job, toward its nodes),
 * map the completion ring; or fall back:
 * to node-local kprog when some node lacks the network transport, to a
 * pure pass-through when anything else fails on any rank.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include "cpus.h"
#include "shim.h"
#include "env.h"
#include "coll.h"
#include "collprof.h"

static struct kprog_info info;

/*
 * The lower files of the shim reach the higher ones only through these,
 * so that calls between files go one way (docs/DESIGN.md, "Shim rooms").
 */
static const struct kp_req_upcalls req_upcalls = {
	.krecv = kp_fast_krecv,
	.user_recvs = kp_fast_user_recvs,
	.rx_published = kp_fast_rx_published,
	.grant_done = kp_rts_done,
	.grant_cancel = kp_rts_cancel,
};
static const struct kp_fast_upcalls fast_upcalls = {
	.progress = kp_progress,
	.departed = kp_rts_reap,
};

/* Failure steps, reported to world rank 0 through an Allreduce(MAX). */
enum { ST_OK, ST_OPEN, ST_VERSION_IOCTL, ST_VERSION, ST_JOIN, ST_MMAP, ST_MEM, ST_CONN };

/* KPROG_TRANSPORT: which way ranks of other nodes (or of this one) go. */
enum { XP_AUTO, XP_IB, XP_SHM };

/* Why a rank cannot take part in a job across nodes (0: it can). */
enum { NB_OK, NB_NOMOD, NB_NOIB, NB_NOMULTI, NB_NOADDR };

static const char *const nb_text[] = {
	"",
	"no usable /dev/kprog",
	"no ibverbs transport (kprog_ib not loaded, or no RDMA device)",
	"a module without node maps or out-of-band connections",
	"no node address from the ibverbs transport",
};

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
	case ST_CONN:
		fprintf(stderr, "kprog: connecting the nodes' ibverbs transports failed (%s); passing MPI through to Open MPI\n",
			strerror(e));
		break;
	default:
		fprintf(stderr, "kprog: set-up failed (%s); passing MPI through to Open MPI\n",
			strerror(e));
		break;
	}
}

/* Open the device and learn what the module offers. */
static int dev_open(void)
{
	__u32 ver = 0;

	kp.fd = open(KPROG_DEVICE, O_RDWR | O_CLOEXEC);
	if (kp.fd < 0)
		return ST_OPEN << 16 | errno;
	if (ioctl(kp.fd, KPROG_IOC_VERSION, &ver) < 0) {
		int e = errno;

		/* a module of ABI version 1 answers only under its old magic */
		if (e == ENOTTY && ioctl(kp.fd, KPROG_IOC_VERSION_V1, &ver) == 0)
			return ST_VERSION << 16 | (ver & 0xffff);
		return ST_VERSION_IOCTL << 16 | e;
	}
	if (ver != KPROG_ABI_VERSION)
		return ST_VERSION << 16 | (ver & 0xffff);
	/* A module without GET_INFO simply has no fast path (nor a network). */
	if (ioctl(kp.fd, KPROG_IOC_GET_INFO, &info) < 0)
		memset(&info, 0, sizeof(info));
	return ST_OK;
}

/* Can this rank's module carry a job across nodes? */
static int net_check(void)
{
	if (kp.fd < 0)
		return NB_NOMOD;
	if (!(info.transports & KPROG_XPORT_IB))
		return NB_NOIB;
	if (!(info.features & KPROG_FEAT_MULTINODE) || !(info.features & KPROG_FEAT_NET_CONN))
		return NB_NOMULTI;
	if (info.node_addr.family != AF_INET && info.node_addr.family != AF_INET6)
		return NB_NOADDR;
	return NB_OK;
}

/*
 * JOIN; with @rank_nodes a job across nodes (node map of nr_nodes
 * addresses), @flags KPROG_JOIN_*. Then map the completion ring.
 */
static int dev_join(uint64_t key, const __u32 *rank_nodes, const struct kprog_node_addr *nodes,
		    __u32 flags)
{
	struct kprog_join j;
	void *ring;

	memset(&j, 0, sizeof(j));
	j.abi_version = KPROG_ABI_VERSION;
	j.flags = flags;
	j.job_key = key;
	j.rank = kp.world_rank;
	j.size = kp.world_size;
	j.eager_limit = (__u32)kp_env_long(KP_ENV_EAGER_LIMIT);
	/* the wait-state profiler wants the kernel's times of its receives */
	if (kp_wp_on && (info.features & KPROG_FEAT_TIMES))
		j.flags |= KPROG_JOIN_TIMES;
	if (rank_nodes) {
		j.rank_nodes = (__u64)(uintptr_t)rank_nodes;
		j.nodes = (__u64)(uintptr_t)nodes;
		j.nr_nodes = (__u32)kp.nr_nodes;
		j.self_node = (__u32)kp.node_idx;
	}
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
	kp.waiter = info.features & KPROG_FEAT_WAITER;
	/* KPROG_COLL=0: nonblocking collectives stay with Open MPI (A/B runs) */
	kp.coll = (info.features & KPROG_FEAT_COLL) && info.max_coll_steps &&
		  kp_env_bool(KP_ENV_COLL);
	kp.coll_min_auto = kp_env_long(KP_ENV_COLL_MIN) < 0;
	kp.coll_min = kp.coll_min_auto ? 0 : (size_t)kp_env_long(KP_ENV_COLL_MIN);
	kp.max_coll_steps = info.max_coll_steps;
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

/*
 * A child must not inherit queued receives: posting them would post on
 * the parent's endpoint (the descriptor is shared). Before fork() the
 * queue goes to the kernel, under the lock as any entry.
 */
static void flush_before_fork(void)
{
	int held = kp_guard_begin();

	kp_guard_end(&held);
}

static int transport_choice(void)
{
	const char *s = kp_env_str(KP_ENV_TRANSPORT);	/* a bad value is reported there */

	if (!strcmp(s, "ib"))
		return XP_IB;
	if (!strcmp(s, "shm") || !strcmp(s, "local"))
		return XP_SHM;
	return XP_AUTO;
}

/*
 * Which world ranks share this node (kp.local), the node's index (the
 * rank of its lowest world rank's node among the nodes) and the number
 * of nodes. Collective over MPI_COMM_WORLD.
 */
static int node_map(int node_size)
{
	int node_rank, i, nn[2] = { 0, 0 };
	int *node_world, *tmp;
	MPI_Group ng, wg;
	MPI_Comm leaders;

	PMPI_Comm_rank(kp.node_comm, &node_rank);
	PMPI_Comm_split(MPI_COMM_WORLD, node_rank == 0 ? 0 : MPI_UNDEFINED, kp.world_rank,
			&leaders);
	if (node_rank == 0) {
		PMPI_Comm_rank(leaders, &nn[0]);
		PMPI_Comm_size(leaders, &nn[1]);
		PMPI_Comm_free(&leaders);
	}
	PMPI_Bcast(nn, 2, MPI_INT, 0, kp.node_comm);
	kp.node_idx = nn[0];
	kp.nr_nodes = nn[1];

	kp.local = calloc(kp.world_size, 1);
	node_world = malloc(sizeof(int) * node_size);
	tmp = malloc(sizeof(int) * node_size);
	if (!kp.local || !node_world || !tmp) {
		free(node_world);
		free(tmp);
		return ST_MEM << 16 | ENOMEM;
	}
	for (i = 0; i < node_size; i++)
		tmp[i] = i;
	PMPI_Comm_group(kp.node_comm, &ng);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(ng, node_size, tmp, wg, node_world);
	PMPI_Group_free(&ng);
	PMPI_Group_free(&wg);
	for (i = 0; i < node_size; i++)
		kp.local[node_world[i]] = 1;
	free(node_world);
	free(tmp);
	return ST_OK;
}

/*
 * The node map of a job across nodes: every rank's node index (from the
 * node communicators) and every node's address (GET_INFO.node_addr of
 * its lowest rank). Collective over MPI_COMM_WORLD; identical on all
 * ranks of a node, as JOIN requires. *@leaders: the node leaders' (the
 * lowest rank of each node) communicator on them, MPI_COMM_NULL on the
 * others, for net_connect(). NULL on no memory (same on all ranks).
 */
static __u32 *net_map(struct kprog_node_addr **nodes_out, MPI_Comm *leaders)
{
	struct kprog_node_addr *nodes;
	__u32 *rank_nodes, me = (__u32)kp.node_idx;
	int node_rank, ok, all;

	*leaders = MPI_COMM_NULL;
	rank_nodes = malloc(sizeof(*rank_nodes) * kp.world_size);
	nodes = calloc(kp.nr_nodes, sizeof(*nodes));
	ok = rank_nodes && nodes;
	PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all) {
		free(rank_nodes);
		free(nodes);
		return NULL;
	}
	PMPI_Allgather(&me, 1, MPI_UINT32_T, rank_nodes, 1, MPI_UINT32_T, MPI_COMM_WORLD);
	PMPI_Comm_rank(kp.node_comm, &node_rank);
	PMPI_Comm_split(MPI_COMM_WORLD, node_rank == 0 ? 0 : MPI_UNDEFINED, kp.world_rank,
			leaders);
	if (node_rank == 0)
		PMPI_Allgather(&info.node_addr, sizeof(*nodes), MPI_BYTE, nodes, sizeof(*nodes),
			       MPI_BYTE, *leaders);
	PMPI_Bcast(nodes, (int)(sizeof(*nodes) * kp.nr_nodes), MPI_BYTE, 0, kp.node_comm);
	*nodes_out = nodes;
	return rank_nodes;
}

/*
 * After JOIN with the node map of net_map() (KPROG_IOC_NET_CONN needs a
 * joined endpoint and connects only toward its job's nodes): the node
 * leaders connect their modules to each other (netconn.c) and tell their
 * node. @joined: whether this rank's JOIN worked; a leader whose JOIN
 * failed takes part with that error, so that the exchange ends at once
 * everywhere. Frees *@leaders. Collective over MPI_COMM_WORLD. Returns 0
 * or an errno, the same on all ranks.
 */
static int net_connect(MPI_Comm *leaders, const struct kprog_node_addr *nodes, int joined)
{
	int err = 0;

	if (*leaders != MPI_COMM_NULL) {
		if (kp.nr_nodes > 1)
			err = kp_net_connect(*leaders, nodes, kp.nr_nodes, kp.node_idx,
					     joined ? 0 : EBADFD);
		PMPI_Comm_free(leaders);
	}
	PMPI_Bcast(&err, 1, MPI_INT, 0, kp.node_comm);
	return err;
}

/*
 * Do the node's ranks outnumber the CPUs they may use, or does each have
 * one of its own (spin.h has what each case does)? The CPUs are those the
 * node's ranks may run on (the union of their affinity masks: one each
 * when mpirun binds to cores, all of them when it does not), fewer if the
 * cgroup's CPU quota (cpu.max) allows less time than that, the smallest
 * quota of the node's ranks (one job's ranks usually share a cgroup).
 * Oversubscribed: a spin that yields to whoever is runnable on the CPU,
 * for the adaptive limit (or KPROG_SPIN_OVERSUB_US if >= 0), then a
 * sleep. A CPU each: a long fixed spin (KPROG_SPIN_DEDICATED_US, -1: the
 * adaptive one) that turns into the oversubscribed one while the run
 * delay shows other tasks taking the CPUs. A threaded rank
 * (MPI_THREAD_MULTIPLE) with enough CPUs may share them with its own
 * threads: the adaptive spin. KPROG_SPIN_US fixes the spin above all.
 * Collective over kp.node_comm.
 */
static void spin_policy(int node_size, int provided)
{
	cpu_set_t mine, all;
	long us = kp_env_long(KP_ENV_SPIN_DEDICATED_US);
	long ous = kp_env_long(KP_ENV_SPIN_OVERSUB_US);
	int ncpu, quota, q[2], mn[2];

	CPU_ZERO(&mine);
	if (sched_getaffinity(0, sizeof(mine), &mine))
		CPU_ZERO(&mine);
	PMPI_Allreduce(&mine, &all, (int)sizeof(all), MPI_BYTE, MPI_BOR, kp.node_comm);
	ncpu = CPU_COUNT(&all);
	/* the smallest quota of the node (0: none), with MIN over "none" = INT_MAX */
	quota = kp_cgroup_cpus();
	q[0] = quota ? quota : INT_MAX;
	q[1] = 0;
	PMPI_Allreduce(q, mn, 1, MPI_2INT, MPI_MINLOC, kp.node_comm);
	if (mn[0] != INT_MAX && mn[0] < ncpu)
		ncpu = mn[0];
	kp.spin.delay_known = kp_run_delay_open();	/* lost yields; the crowded watch */
	if (kp_cpu_queue_open(ncpu))
		kp_spin_when_free(&kp.spin, us < 0 ? 0 : us);	/* spin.h KP_SPIN_QUEUE_NS */
	if (ncpu < node_size) {
		kp_spin_oversub(&kp.spin, ous, node_size);
		if (kp.spin.oversub)
			kp_log(1, "%d ranks on %d CPUs%s: oversubscribed, blocking calls spin yielding for %s, then sleep",
			       node_size, ncpu, mn[0] == ncpu ? " (cgroup quota)" : "",
			       kp.spin.fixed ? "KPROG_SPIN_OVERSUB_US" : "the adaptive limit");
		return;
	}
	if (provided == MPI_THREAD_MULTIPLE)
		return;
	kp_spin_dedicate(&kp.spin, us);
	if (!kp.spin.dedicated)
		return;
	if (kp.spin.delay_known)
		kp_spin_watch_start(&kp.spin, ous, kp_clock_ns(), kp_run_delay_ns());
	kp_log(1, "%d ranks on %d CPUs: blocking calls spin %ld us before sleeping%s",
	       node_size, ncpu, us,
	       kp.spin.watch_next ? "; shorter while other tasks take the CPUs (run delay)" : "");
}

/* Host name of world rank @who, on rank 0 (collective). */
static void host_of(int who, char *name)
{
	int len = 0;

	name[0] = 0;
	if (kp.world_rank == who)
		PMPI_Get_processor_name(name, &len);
	PMPI_Bcast(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, who, MPI_COMM_WORLD);
}

void kp_setup(int provided)
{
	int node_size, code = ST_OK, all, xp, want_net, v[5], agreed[5], bad_rank, conn_err = 0;
	struct kprog_node_addr *nodes = NULL;
	char host[MPI_MAX_PROCESSOR_NAME];
	MPI_Comm leaders = MPI_COMM_NULL;
	__u32 *rank_nodes = NULL;
	uint64_t key = 0;

	PMPI_Comm_rank(MPI_COMM_WORLD, &kp.world_rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &kp.world_size);
	kp_env_report = kp.world_rank == 0 ? stderr : NULL;	/* bad KPROG_* values: once, rank 0 */
	kp.verbose = (int)kp_env_long(KP_ENV_VERBOSE);
	/*
	 * KPROG_SPIN_US fixes the spin; by default it adapts (spin.h) between
	 * KPROG_SPIN_MIN_US and KPROG_SPIN_MAX_US: 1 ms covers a wake-up
	 * under emulation, where a wake-up costs hundreds of microseconds.
	 */
	kp_spin_init(&kp.spin, kp_env_long(KP_ENV_SPIN_US), kp_env_long(KP_ENV_SPIN_MIN_US),
		     kp_env_long(KP_ENV_SPIN_MAX_US), 50);
	kp.full_wait_ns = kp_env_long(KP_ENV_FULL_WAIT_US) * 1000;
	kp.recv_copy_max = (uint64_t)kp_env_long(KP_ENV_RECV_COPY_MAX);
	kp_clock_init(NULL);	/* before anything times itself */
	kp_wp_init(provided == MPI_THREAD_MULTIPLE);
	if (kp_env_bool(KP_ENV_DISABLE)) {
		kp_log(1, "KPROG_DISABLE: passing everything through");
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
	xp = transport_choice();

	PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &kp.node_comm);
	PMPI_Comm_size(kp.node_comm, &node_size);
	all = node_map(node_size);
	spin_policy(node_size, provided);
	if (code == ST_OK)
		code = all;
	/* one key for the whole job: a job across nodes is one job */
	if (kp.world_rank == 0) {
		while (getrandom(&key, sizeof(key), 0) != sizeof(key))
			;
	}
	PMPI_Bcast(&key, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

	/*
	 * Step 1, agreed over the world: the device opens everywhere, and
	 * which ranks could not take part in a job across nodes (and why).
	 */
	if (code == ST_OK)
		code = dev_open();
	v[0] = code;
	v[1] = net_check();
	v[2] = v[1] ? INT_MAX - kp.world_rank : 0;	/* the lowest such rank */
	v[3] = xp;
	v[4] = -xp;
	PMPI_Allreduce(v, agreed, 5, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (agreed[0] != ST_OK) {
		if (provided == MPI_THREAD_MULTIPLE && (agreed[0] >> 16) == ST_MEM &&
		    !(agreed[0] & 0xffff)) {
			if (kp.world_rank == 0)
				fprintf(stderr, "kprog: MPI_THREAD_MULTIPLE needs Open MPI's context ids, which cannot be read; passing MPI through to Open MPI\n");
		} else {
			report(agreed[0]);
		}
		teardown();
		return;
	}
	if (agreed[3] != -agreed[4]) {
		if (kp.world_rank == 0)
			fprintf(stderr, "kprog: KPROG_TRANSPORT differs between ranks; passing MPI through to Open MPI\n");
		teardown();
		return;
	}
	want_net = xp == XP_IB || (xp == XP_AUTO && kp.nr_nodes > 1);
	if (want_net && agreed[1]) {
		bad_rank = INT_MAX - agreed[2];
		host_of(bad_rank, host);
		if (xp == XP_IB) {
			if (kp.world_rank == 0)
				fprintf(stderr, "kprog: KPROG_TRANSPORT=ib, but world rank %d (%s) has %s; passing MPI through to Open MPI\n",
					bad_rank, host, nb_text[agreed[1]]);
			teardown();
			return;
		}
		if (kp.world_rank == 0)
			fprintf(stderr, "kprog: the job spans %d nodes, but world rank %d (%s) has %s; communicators spanning nodes pass through to Open MPI\n",
				kp.nr_nodes, bad_rank, host, nb_text[agreed[1]]);
		want_net = 0;
	}

	/*
	 * Step 2: JOIN, with the node map when the job goes across nodes;
	 * then the node leaders connect the nodes (as endpoints of the job).
	 */
	if (want_net)
		rank_nodes = net_map(&nodes, &leaders);
	if (want_net && !rank_nodes)
		code = ST_MEM << 16 | ENOMEM;
	else
		code = dev_join(key, rank_nodes, nodes, xp == XP_IB ? KPROG_JOIN_NET_ONLY : 0);
	if (rank_nodes) {	/* the same on all ranks */
		conn_err = net_connect(&leaders, nodes, code == ST_OK);
		if (code == ST_OK && conn_err)
			code = ST_CONN << 16 | conn_err;
	}
	free(rank_nodes);
	free(nodes);
	PMPI_Allreduce(&code, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (all != ST_OK && want_net && xp == XP_AUTO) {
		/*
		 * The nodes could not be connected, or the module refused the
		 * node map somewhere: keep kprog on each node (a fresh job,
		 * another key), pass what spans nodes through.
		 */
		if (kp.world_rank == 0)
			fprintf(stderr, "kprog: %s across %d nodes failed (%s); communicators spanning nodes pass through to Open MPI\n",
				(all >> 16) == ST_CONN ? "connecting" : "joining", kp.nr_nodes,
				strerror(all & 0xffff));
		teardown();
		want_net = 0;
		code = dev_open();
		if (code == ST_OK)
			code = dev_join(key ^ 1, NULL, NULL, 0);
		PMPI_Allreduce(&code, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	}
	if (all != ST_OK) {
		report(all);
		teardown();
		return;
	}
	kp.net = want_net;
	kp.net_only = want_net && xp == XP_IB;
	/* KPROG_RECV_BATCH=0: one system call per receive again (A/B runs) */
	kp.rbatch = kp.net && (info.features & KPROG_FEAT_RECV_BATCH) &&
		    kp_env_bool(KP_ENV_RECV_BATCH);
	/* KPROG_SMALL_RECV_YIELD=0: no yields for small receives from other nodes (A/B runs) */
	kp.small_yield = kp_env_bool(KP_ENV_SMALL_RECV_YIELD);
	/* KPROG_NET_POLL_US=0: wait for the NIC's completion event (A/B runs) */
	if (kp.net && (info.features & KPROG_FEAT_WAIT_POLL))
		kp.net_poll_ns = (uint64_t)kp_env_long(KP_ENV_NET_POLL_US) * 1000;
	if (kp.rbatch && pthread_atfork(flush_before_fork, NULL, NULL))
		kp.rbatch = false;
	kp_pool_init(&req_upcalls);
	kp.active = true;	/* before registering: register checks it */
	kp_comm_init();
	if (kp_env_bool(KP_ENV_FAST) && !kp.net_only)
		kp_fast_init(&info, kp_env_long(KP_ENV_FAST_LIMIT), &fast_upcalls);
	kp_rts_init(&info);
	kp_progress_hook(true);
	kp.mt = provided == MPI_THREAD_MULTIPLE;	/* from here on, the lock (lock.c) */
	if (kp.mt)
		kp_log(1, "MPI_THREAD_MULTIPLE: one lock around the shim (lock.c)");
	kp_log(1, "joined: node ranks %d, nodes %d (this one %d), transport %s, eager_limit %u, ring %u, max_iov %u, max_ops %u, fast path %s (%u bytes), receive batches %s",
	       node_size, kp.nr_nodes, kp.node_idx,
	       kp.net_only ? "ib (forced)" : kp.net ? "shm+ib" : "shm",
	       kp.eager_limit, kp.ring_mask + 1, kp.max_iov, kp.max_ops,
	       kp_fast_active() ? "on" : "off", kp_fast_limit(), kp.rbatch ? "on" : "off");
}

/*
 * For benchmarks and tests (looked up with dlsym): how @comm's
 * point-to-point traffic goes. -1: the shim passes everything through;
 * 0: this communicator goes to Open MPI; 1: kprog within this node;
 * 2: kprog, through the network transport for ranks of other nodes (or
 * for all, KPROG_TRANSPORT=ib).
 */
__attribute__((visibility("default"))) int kprog_comm_mode(MPI_Comm comm)
{
	struct kp_comm *c;

	if (!kp.active)
		return -1;
	c = kp_comm_lookup(comm);
	if (!c)
		return 0;
	return kp.net_only || c->spans ? 2 : 1;
}

/*
 * Where start-up and shutdown time go (KPROG_VERBOSE=1): Open MPI's own
 * part and kprog's, so that a slower launch under the shim (issue 31: the
 * time around LAMMPS' own clock) can be told apart from the host's noise.
 */
static uint64_t init_t0;	/* when MPI_Init began */

static void init_timed(uint64_t t0, uint64_t t1)
{
	init_t0 = t0;
	kp_log(1, "MPI_Init: Open MPI %.1f ms, kprog set-up %.1f ms",
	       (t1 - t0) / 1e6, (kp_now_ns() - t1) / 1e6);
}

int MPI_Init(int *argc, char ***argv)
{
	uint64_t t0 = kp_now_ns();
	int rc = PMPI_Init(argc, argv);

	if (rc == MPI_SUCCESS) {
		uint64_t t1 = kp_now_ns();

		kp_setup(MPI_THREAD_SINGLE);
		init_timed(t0, t1);
	}
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	uint64_t t0 = kp_now_ns();
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	if (rc == MPI_SUCCESS) {
		uint64_t t1 = kp_now_ns();

		kp_setup(*provided);
		init_timed(t0, t1);
	}
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
		PMPI_Barrier(kp.net ? MPI_COMM_WORLD : kp.node_comm);
		if (kp_fast_active()) {
			const struct kp_fast_stats *f = kp_fast_stats();

			kp_log(1, "fast path: sent %llu received %llu user-posted %llu moved to the kernel %llu drains %llu kicks %llu channel full %llu (then through the kernel %llu)",
			       (unsigned long long)f->sent, (unsigned long long)f->received,
			       (unsigned long long)f->uposted, (unsigned long long)f->to_kernel,
			       (unsigned long long)f->drains, (unsigned long long)f->kicks,
			       (unsigned long long)f->full, (unsigned long long)f->full_fallback);
		}
		if (kp.net_poll_ns)
			kp_log(1, "network polls while waiting: %llu", (unsigned long long)kp.net_polls);
		kp_log(1, "waits %llu slept %llu, spin limit %llu us (grew %llu, shrank %llu; crowded %llu times%s; yields %llu, lost %llu, long but to our ranks %llu; spun on with CPUs free %llu, ended so %llu; sends that yielded %llu)",
		       (unsigned long long)kp.spin.waits, (unsigned long long)kp.spin.slept,
		       (unsigned long long)kp.spin.limit_ns / 1000,
		       (unsigned long long)kp.spin.grew, (unsigned long long)kp.spin.shrank,
		       (unsigned long long)kp.spin.crowded_times, kp.spin.crowded ? ", now" : "",
		       (unsigned long long)kp.spin.yields, (unsigned long long)kp.spin.yields_lost,
		       (unsigned long long)kp.spin.yields_own, (unsigned long long)kp.spin.alone, (unsigned long long)kp.spin.alone_ended,
		       (unsigned long long)kp.spin.handovers);
		kp_progress_hook(false);
		kp_log(1, "rendezvous sends through channels: %llu", (unsigned long long)kp_rts_sent());
		if (kp.coll) {
			uint64_t posted, deferred, fam[KP_CF_NR], persistent;

			kp_coll_counts(&posted, &deferred);
			kp_log(1, "collective schedules run by the module: %llu (%llu waited for room)",
			       (unsigned long long)posted, (unsigned long long)deferred);
			kp_coll_family_counts(fam, &persistent);
			kp_log(1, "of them barrier %llu, alltoallw %llu, neighbourhood %llu, persistent starts %llu",
			       (unsigned long long)fam[KP_CF_BARRIER],
			       (unsigned long long)fam[KP_CF_ALLTOALLW],
			       (unsigned long long)fam[KP_CF_NEIGHBOR], (unsigned long long)persistent);
		}
		KP_CP_REPORT(kp.world_rank);
		kp_rts_fini();
		kp_run_delay_close();
		kp_cpu_queue_close();
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
	uint64_t t0 = kp_now_ns(), t1, t2;
	int verbose = kp.verbose, rc;

	kp_shutdown();
	t1 = kp_now_ns();
	rc = PMPI_Finalize();
	t2 = kp_now_ns();
	if (verbose >= 1 && init_t0)
		kp_logf("MPI_Finalize: kprog %.1f ms, Open MPI %.1f ms (%.3f s after MPI_Init began)",
			(t1 - t0) / 1e6, (t2 - t1) / 1e6, (t0 - init_t0) / 1e9);
	return rc;
}
