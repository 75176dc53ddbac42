// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/nbcbench: seed 001's NBCBench (Hoefler, Lumsdaine, Rehm: "Implementation
 * and Performance Analysis of Non-Blocking Collective Operations for MPI",
 * section V) for MPI_Iallreduce, MPI_Ialltoall and MPI_Ibcast, with the
 * OSU overlap figure beside it. Per collective, size and progression mode:
 *
 *   t_pure   start + MPI_Wait at once (the communication alone)
 *   t_work   the fixed work alone: W units, calibrated once per point so
 *            that it takes about t_pure
 *   t_total  start, the same W units (with MPI_Test every W/16 units in
 *            the "test" mode: manual progression), MPI_Wait
 *   time-based overhead  t_mpi: time inside MPI calls during t_total
 *            (start, the tests, the wait): what the rank spends on
 *            communication when it has enough work to hide it
 *   work-based overhead  t_total - t_work: CPU time progression takes from
 *            the rank counts, wherever it ran (a kernel worker on the
 *            rank's core slows the work down)
 *   overlap  OSU's: 100 * (1 - (t_total - t_work) / t_pure), clamped to 0..100
 *
 * Each figure is the median over the iterations of the maximum over the
 * ranks. Where the CPU went, per collective (sums over the ranks of the
 * node, means over the iterations of a mode):
 *   other_cpu  rank 0's /proc/stat: the node's busy time minus the ranks'
 *              own (getrusage); jiffy resolution, and it includes
 *              whatever else ran (mpirun, the guest's daemons)
 *   kern       kprog.ko's own accounting (netlink GET_STATS, summed over
 *              the CPUs): the time its work items (collective rounds,
 *              copies and reductions, shared-memory pulls) and softirq
 *              handlers ran; in this program every message the module
 *              carries is a collective's. 0 without the module.
 *   kern_max   the same on the CPU that had the most of it: with every
 *              CPU computing, the rank there is slowed down by about that
 *   rank_comm  the ranks' CPU time (getrusage: user + system, so the
 *              COLL ioctl's own work counts here) minus their CPU time in
 *              the work-alone iterations: the ranks' CPU spent on the
 *              collective
 *   kthreads   rank 0's reading of the CPU time of every kernel worker
 *              thread of the node (kworker*, ksoftirqd*: /proc/PID/schedstat,
 *              exact to the nanosecond for a thread that is not running
 *              when read, as they are not between the iterations): the
 *              CPU time kern's elapsed times are an upper bound of (the
 *              module's work items run in kworkers; softirq handlers run
 *              at interrupt exits are not in it), plus whatever else the
 *              kernel's workers did meanwhile (a few us per ms)
 * One line per point: "coll size mode t_pure t_work t_total t_mpi
 * ovh_work overlap other_cpu kern rank_comm kern_items kern_max t_start kthreads"
 * (times in us; t_start: the MPI_I* call alone, part of t_mpi).
 * Usage:
 *   nbcbench [--sizes 1K,16K,64K,256K,1M] [--iters N] [--colls iallreduce,ialltoall,ibcast]
 */
#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef HAVE_KPROG_NL
#include "kprog_nl.h"
#endif

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static volatile uint64_t sink;

/* One unit of work: a few LCG steps, no memory traffic. */
static void work(uint64_t units, MPI_Request *test_req, uint64_t test_every, double *t_mpi)
{
	uint64_t x = sink + 1;

	for (uint64_t u = 0; u < units; u++) {
		for (int i = 0; i < 64; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (test_req && test_every && (u + 1) % test_every == 0) {
			int flag;
			double t0 = now_us();

			MPI_Test(test_req, &flag, MPI_STATUS_IGNORE);
			*t_mpi += now_us() - t0;
		}
	}
	sink = x;
}

enum coll { C_IALLREDUCE, C_IALLTOALL, C_IBCAST };
static const char *const cname[] = { "iallreduce", "ialltoall", "ibcast" };

struct bufs {
	double *s, *r;
	size_t bytes;
	int n;
};

static void start(enum coll c, struct bufs *b, MPI_Request *req)
{
	switch (c) {
	case C_IALLREDUCE:
		MPI_Iallreduce(b->s, b->r, (int)(b->bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, req);
		break;
	case C_IALLTOALL:
		MPI_Ialltoall(b->s, (int)b->bytes, MPI_BYTE, b->r, (int)b->bytes, MPI_BYTE,
			      MPI_COMM_WORLD, req);
		break;
	case C_IBCAST:
		MPI_Ibcast(b->r, (int)b->bytes, MPI_BYTE, 0, MPI_COMM_WORLD, req);
		break;
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median over iterations of the per-iteration maximum over ranks. */
static double med_max(double *v, int n)
{
	MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double cpu_self_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 +
	       ru.ru_stime.tv_usec;
}

/* Busy time of all CPUs of the node (every field but idle and iowait), us. */
static double node_busy_us(void)
{
	unsigned long long v[10] = { 0 }, busy = 0;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 7) {
		fclose(f);
		return 0;
	}
	fclose(f);
	/* user nice system irq softirq: not idle, iowait, steal, guest (in user) */
	busy = v[0] + v[1] + v[2] + v[5] + v[6];
	return busy * 1e6 / 100.0;	/* USER_HZ */
}

/*
 * CPU time of the node's kernel worker threads so far (us): the first
 * field of /proc/PID/schedstat (ns on the CPU) of every kworker and
 * ksoftirqd thread (kernel threads are processes of their own in /proc).
 */
static double kthreads_us(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	double ns = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], comm[64] = "";
		unsigned long long run;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "kworker", 7) && strncmp(comm, "ksoftirqd", 9))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/schedstat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &run) == 1)
			ns += run;
		fclose(f);
	}
	closedir(d);
	return ns / 1e3;
}

#define MAXCPU 64

/*
 * kprog.ko's progression time so far, summed over the CPUs (us), and the
 * number of work items and softirq runs in *@items; each CPU's time in
 * @per_cpu (us, MAXCPU slots); 0 without the module (or built without
 * libnl).
 */
static double kern_us(double *items, double *per_cpu)
{
	*items = 0;
	memset(per_cpu, 0, sizeof(double) * MAXCPU);
#ifdef HAVE_KPROG_NL
	static struct kprog_nl *nl;
	static int tried;
	struct kprog_cpu_stats *st;
	double ns = 0;
	int n;

	if (!tried) {
		tried = 1;
		if (kprog_nl_open(&nl, KPROG_FAMILY_KPROG))
			nl = NULL;
	}
	if (!nl || kprog_nl_get_stats(nl, &st, &n))
		return 0;
	for (int i = 0; i < n; i++) {
		if (st[i].cpu < 0)
			continue;
		ns += st[i].v[KS_WORK_NS] + st[i].v[KS_TASKLET_NS];
		if (st[i].cpu < MAXCPU)
			per_cpu[st[i].cpu] = (st[i].v[KS_WORK_NS] + st[i].v[KS_TASKLET_NS]) / 1e3;
		*items += st[i].v[KS_WORK_ITEMS] + st[i].v[KS_TASKLET_RUNS];
	}
	free(st);
	return ns / 1e3;
#else
	return 0;
#endif
}

static size_t parse_size(const char *s)
{
	char *e;
	size_t v = strtoull(s, &e, 10);

	if (*e == 'K' || *e == 'k')
		v <<= 10;
	else if (*e == 'M' || *e == 'm')
		v <<= 20;
	return v;
}

int main(int argc, char **argv)
{
	const char *sizes = "1K,16K,64K,256K,1M", *colls = "iallreduce,ialltoall,ibcast";
	int iters = 10, rank, np;
	double units_per_us;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sizes"))
			sizes = argv[i + 1];
		else if (!strcmp(argv[i], "--iters"))
			iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--colls"))
			colls = argv[i + 1];
	}
	/*
	 * Units per microsecond: the median of 7 timed runs of 20000 units,
	 * the slowest rank's, agreed once; a rate measured per point would
	 * follow every stall of a loaded host (a 50x too long W under TCG).
	 */
	{
		double r[7], t0, dt;

		work(20000, NULL, 0, NULL);
		for (int i = 0; i < 7; i++) {
			t0 = now_us();
			work(20000, NULL, 0, NULL);
			dt = now_us() - t0;
			r[i] = 20000 / (dt > 0 ? dt : 1);
		}
		qsort(r, 7, sizeof(double), cmp_d);
		units_per_us = r[3];
		MPI_Allreduce(MPI_IN_PLACE, &units_per_us, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
	}
	if (!rank)
		printf("# coll size mode t_pure t_work t_total t_mpi ovh_work overlap other_cpu kern rank_comm kern_items kern_max t_start kthreads (us, np %d, median of %d)\n",
		       np, iters);
	for (int c = C_IALLREDUCE; c <= C_IBCAST; c++) {
		char *list, *tok, *save;

		if (!strstr(colls, cname[c]))
			continue;
		list = strdup(sizes);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			struct bufs b = { .bytes = parse_size(tok), .n = np };
			size_t total = c == C_IALLTOALL ? b.bytes * np : b.bytes;
			double *v = malloc(sizeof(double) * iters), *v2 = malloc(sizeof(double) * iters);
			double *v3 = malloc(sizeof(double) * iters);
			double t_pure, t_work, cpu_work;
			uint64_t units;
			MPI_Request req;

			b.s = malloc(total + 8);
			b.r = malloc(total + 8);
			memset(b.s, 1, total);
			memset(b.r, 0, total);
			/* t_pure (after two warm-up rounds) */
			for (int it = -2; it < iters; it++) {
				double t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = now_us();
				start(c, &b, &req);
				MPI_Wait(&req, MPI_STATUS_IGNORE);
				if (it >= 0)
					v[it] = now_us() - t0;
			}
			t_pure = med_max(v, iters);
			/* W: the work of t_pure at the rate measured once (see main) */
			units = (uint64_t)(t_pure * units_per_us) + 1;
			cpu_work = cpu_self_us();
			for (int it = 0; it < iters; it++) {
				double t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = now_us();
				work(units, NULL, 0, NULL);
				v[it] = now_us() - t0;
			}
			cpu_work = cpu_self_us() - cpu_work;
			MPI_Allreduce(MPI_IN_PLACE, &cpu_work, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
			t_work = med_max(v, iters);
			for (int mode = 0; mode < 2; mode++) {
				double busy0 = 0, cpu0, cpu, other, t_total, t_mpi, t_start, ovh, ovl;
				double kern0 = 0, items0 = 0, kern = 0, items = 0, kmax = 0;
				double kthr0 = 0, kthr = 0;
				double pc0[MAXCPU], pc[MAXCPU];

				if (!rank) {
					busy0 = node_busy_us();
					kern0 = kern_us(&items0, pc0);
					kthr0 = kthreads_us();
				}
				cpu0 = cpu_self_us();
				for (int it = 0; it < iters; it++) {
					double t0, tm = 0, t1;

					MPI_Barrier(MPI_COMM_WORLD);
					t0 = now_us();
					start(c, &b, &req);
					tm += now_us() - t0;
					v3[it] = tm;
					work(units, &req, mode ? (units / 16 ? units / 16 : 1) : 0, &tm);
					t1 = now_us();
					MPI_Wait(&req, MPI_STATUS_IGNORE);
					tm += now_us() - t1;
					v[it] = now_us() - t0;
					v2[it] = tm;
				}
				cpu = cpu_self_us() - cpu0;
				if (!rank) {
					kthr = kthreads_us() - kthr0;
					kern = kern_us(&items, pc) - kern0;
					for (int k = 0; k < MAXCPU; k++)
						if (pc[k] - pc0[k] > kmax)
							kmax = pc[k] - pc0[k];
				}
				MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
				other = rank ? 0 : (node_busy_us() - busy0 - cpu) / iters;
				t_total = med_max(v, iters);
				t_mpi = med_max(v2, iters);
				t_start = med_max(v3, iters);
				ovh = t_total - t_work;
				ovl = 100.0 * (1.0 - ovh / t_pure);
				ovl = ovl < 0 ? 0 : ovl > 100 ? 100 : ovl;
				if (!rank)
					printf("%s %zu %s %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f\n",
					       cname[c], b.bytes, mode ? "test16" : "notest", t_pure,
					       t_work, t_total, t_mpi, ovh, ovl, other < 0 ? 0 : other,
					       kern / iters, (cpu - cpu_work) / iters,
					       (items - items0) / iters, kmax / iters, t_start,
					       kthr / iters);
			}
			free(v);
			free(v2);
			free(v3);
			free(b.s);
			free(b.r);
		}
		free(list);
	}
	MPI_Finalize();
	return 0;
}
