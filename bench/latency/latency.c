// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/latency.c: small-message latency (osu_latency-style ping-pong),
 * latency as the number of processes grows (HPCC-style, one pair at a
 * time, Open MPI's "sm latency" RFC) and message rate (osu_mbw_mr-style
 * windows), for plain Open MPI or under the kprog shim. This file: set-up,
 * header and kprog status, the data check, output rows, the tokens that
 * park idle ranks. The modes: latency_pingpong.c (pingpong, npscale),
 * latency_msgrate.c. Options, --help and statistics: latency_opts.c,
 * latency_stats.c (no MPI). bench/run-latency runs both libraries side by
 * side.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kprog_detect.h"
#include "latency.h"

struct lat_opts opt;
int me, nprocs;
unsigned char *sbuf, *rbuf, *msb, *mrb;
size_t mstride;
double *lat;
int maxb;

static FILE *csv;
static char kword[LAT_WORD], kdesc[256];
static long errors_total;			/* rank 0: every error reported to it */

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xalloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, n ? n : 1)) {
		fprintf(stderr, "latency: rank %d: cannot allocate %zu bytes\n", me, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(p, FILL, n);
	return p;
}

/* ---- data check ---- */

static unsigned char pat(unsigned seed, size_t i)
{
	unsigned char b = (unsigned char)((i * 131u + seed * 71u + 7u) ^ (i >> 8));

	return b == FILL ? 0x5A : b;	/* never the fill byte: every byte counts */
}

void fill(unsigned char *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = pat(seed, i);
}

/* wrong bytes in payload and guard, and a wrong count; first one reported */
long check(const unsigned char *b, size_t n, unsigned seed, const MPI_Status *st,
		  const char *what)
{
	long bad = 0;
	size_t i, first = (size_t)-1;
	int cnt = -1;

	MPI_Get_count(st, MPI_BYTE, &cnt);
	if (cnt != (int)n)
		bad++;
	for (i = 0; i < n + GUARD; i++)
		if (b[i] != (i < n ? pat(seed, i) : FILL)) {
			if (first == (size_t)-1)
				first = i;
			bad++;
		}
	if (bad)
		fprintf(stderr, "latency: rank %d: DATA ERROR in %s, %zu bytes: received count %d, %ld bad (first at byte %zu)\n",
			me, what, n, cnt, bad, first == (size_t)-1 ? 0 : first);
	return bad;
}

/* sequence number in the first min(n, 4) bytes of every timed message */
void stamp(unsigned char *b, size_t n, uint32_t seq)
{
	memcpy(b, &seq, n < 4 ? n : 4);
}

long stamp_bad(const unsigned char *b, size_t n, uint32_t seq)
{
	return memcmp(b, &seq, n < 4 ? n : 4) != 0;
}

/* the time limit: stop after this batch? (never before 3 are done) */
int over_time(double start, int done)
{
	return opt.time_limit > 0 && done >= 3 && now_s() - start > opt.time_limit;
}

/* ---- output (rank 0) ---- */

void row_init(struct lat_row *r, const char *mode, const char *pair, size_t size,
		     const char *unit)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->label, sizeof(r->label), "%s", opt.label);
	snprintf(r->kprog, sizeof(r->kprog), "%s", kword);
	snprintf(r->mode, sizeof(r->mode), "%s", mode);
	snprintf(r->pair, sizeof(r->pair), "%s", pair);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->np = nprocs;
	r->size = size;
	r->reps = 1;
	r->mb_s = NAN;
}

void csv_row(const struct lat_row *r)
{
	char line[512];

	errors_total += r->errors;
	if (csv && lat_csv_format(r, line, sizeof(line)) > 0)
		fprintf(csv, "%s\n", line);
}

/* ranks that take no part in a phase wait here for rank 0's DONE token */
void send_token(int to, int op, int idx)
{
	int t[2] = { op, idx };

	MPI_Send(t, 2, MPI_INT, to, TAG_TOKEN, MPI_COMM_WORLD);
}

void release_from(int first)
{
	int r;

	for (r = first; r < nprocs; r++)
		send_token(r, TOK_DONE, 0);
}

void wait_done(void)
{
	int t[2];

	do
		MPI_Recv(t, 2, MPI_INT, 0, TAG_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	while (t[0] != TOK_DONE);
}

/* ---- set-up ---- */

/* kprog status over every rank (collective); rank 0 fills kword/kdesc */
static void kprog_status(void)
{
	int st[2], *all = NULL;

	kprog_local_status(&st[0], &st[1]);
	if (me == 0)
		all = malloc(sizeof(int) * 2 * nprocs);
	MPI_Gather(st, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
	if (me == 0)
		lat_kprog_status(all, nprocs, kword, sizeof(kword), kdesc, sizeof(kdesc));
	if (me == 0 && !strcmp(kword, "active") && kprog_world_mode() == 2 &&
	    strlen(kdesc) + 24 < sizeof(kdesc))
		strcat(kdesc, "; network transport");
	free(all);
}

/* Open MPI's mpi_yield_when_idle as this process sees it (MPI_T); -1 unknown */
static int yield_when_idle(void)
{
	MPI_T_cvar_handle h;
	int prov, idx, count, val = 0, ret = -1;

	if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS)
		return -1;
	if (MPI_T_cvar_get_index("mpi_yield_when_idle", &idx) == MPI_SUCCESS &&
	    MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
		if (count == 1 && MPI_T_cvar_read(h, &val) == MPI_SUCCESS)
			ret = val != 0;
		MPI_T_cvar_handle_free(&h);
	}
	MPI_T_finalize();
	return ret;
}

static size_t max_size(const size_t *s, int n)
{
	return n > 0 ? s[n - 1] : 0;	/* sorted */
}

static void print_header(void)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", sz[3][400];
	struct utsname u;
	int len = 0, y = yield_when_idle();

	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, ",\n")] = 0;
	uname(&u);
	lat_format_sizes(opt.pp_sizes, opt.n_pp, sz[0], sizeof(sz[0]));
	lat_format_sizes(opt.np_sizes, opt.n_np, sz[1], sizeof(sz[1]));
	lat_format_sizes(opt.mr_sizes, opt.n_mr, sz[2], sizeof(sz[2]));
	printf("# latency: label %s, np %d, host %s (%s), %ld CPUs online\n", opt.label, nprocs,
	       u.nodename, u.release, sysconf(_SC_NPROCESSORS_ONLN));
	printf("# library: %s\n", lib);
	printf("# kprog-status-start: %s\n", kdesc);
	printf("# Open MPI mpi_yield_when_idle (rank 0, MPI_T): %s\n",
	       y < 0 ? "unknown" : y ? "1 (idle waits call sched_yield, still polling)" : "0 (idle waits busy-poll)");
	if (opt.modes & LAT_PINGPONG)
		printf("# pingpong sizes %s; %d round trips in %d batches after %d warm-up (above %zu B: %d after %d)\n",
		       sz[0], opt.iters, opt.batches, opt.warmup, opt.large, opt.iters_large, opt.warmup_large);
	if (opt.modes & LAT_NPSCALE)
		printf("# npscale sizes %s; per pair %d round trips in %d batches after %d warm-up%s\n", sz[1],
		       opt.np_iters, opt.np_batches, opt.np_warmup, opt.concurrent ? "; also concurrent" : "");
	if (opt.modes & LAT_MSGRATE)
		printf("# msgrate sizes %s; window %d, %d windows x %d repetitions after %d warm-up windows, ack %d B\n",
		       sz[2], opt.window, opt.loops, opt.reps, opt.mr_warmup, opt.ack);
	if (opt.time_limit > 0)
		printf("# time limit %.1f s per point (pair): fewer batches/repetitions when reached (see samples)\n",
		       opt.time_limit);
	printf("# times: clock_gettime(CLOCK_MONOTONIC); data: sequence stamps on every timed message, full verification pass before and after each point\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *wr = getenv("OMPI_COMM_WORLD_RANK");
	char err[256];
	size_t ppmax, mrmax;
	double t_start;

	if (lat_parse_opts(argc, argv, &opt, err, sizeof(err))) {
		if (!wr || !strcmp(wr, "0"))
			fprintf(stderr, "latency: %s\n", err);
		return 2;
	}
	if (opt.help) {
		if (!wr || !strcmp(wr, "0"))
			lat_usage(stdout, "latency");
		return 0;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (nprocs < 2) {
		if (me == 0)
			fprintf(stderr, "latency: needs at least 2 ranks (mpirun -np 2)\n");
		MPI_Finalize();
		return 2;
	}
	t_start = now_s();
	ppmax = max_size(opt.pp_sizes, opt.n_pp);
	if (max_size(opt.np_sizes, opt.n_np) > ppmax)
		ppmax = max_size(opt.np_sizes, opt.n_np);
	mrmax = max_size(opt.mr_sizes, opt.n_mr);
	mstride = (mrmax + GUARD + 63) & ~(size_t)63;
	sbuf = xalloc(ppmax + GUARD);
	rbuf = xalloc(ppmax + GUARD);
	maxb = opt.batches > opt.np_batches ? opt.batches : opt.np_batches;
	lat = calloc(maxb, sizeof(*lat));
	if (opt.modes & LAT_MSGRATE) {
		msb = xalloc(mstride * opt.window);
		mrb = xalloc(mstride * opt.window);
	}
	kprog_status();
	if (me == 0) {
		if (opt.csv) {
			csv = fopen(opt.csv, "w");
			if (!csv)
				perror(opt.csv);
			else
				fprintf(csv, "%s\n", LAT_CSV_HEADER);
		}
		print_header();
	}
	if (opt.modes & LAT_PINGPONG)
		run_pingpong();
	if (opt.modes & LAT_NPSCALE)
		run_npscale();
	if (opt.modes & LAT_MSGRATE)
		run_msgrate();
	kprog_status();
	if (me == 0) {
		printf("\n# kprog-status-end: %s\n", kdesc);
		printf("# data-errors: %ld\n", errors_total);
		printf("# done in %.1f s\n", now_s() - t_start);
		fflush(stdout);
		if (csv)
			fclose(csv);
	}
	MPI_Bcast(&errors_total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return errors_total ? 1 : 0;
}
