// SPDX-License-Identifier: GPL-2.0
/*
 * bench/latency.c: small-message latency (osu_latency-style ping-pong),
 * latency as the number of processes grows (HPCC-style, one pair at a
 * time, Open MPI's "sm latency" RFC) and message rate (osu_mbw_mr-style
 * windows), for plain Open MPI or under the kprog shim. Options, --help
 * and the statistics are in latency_opts.c / latency_stats.c (no MPI);
 * bench/run-latency runs both libraries side by side.
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
#include "latency_opts.h"
#include "latency_stats.h"

enum {
	TAG_PING = 101, TAG_PONG, TAG_GO, TAG_READY, TAG_ERR, TAG_TOKEN, TAG_RESULT,
	TAG_CREADY, TAG_CGO, TAG_DATA, TAG_ACK,
};
enum { TOK_DONE, TOK_SEQ, TOK_CONC };	/* tokens from rank 0 to waiting ranks */

#define GUARD 64	/* bytes past the payload checked in verification passes */
#define FILL 0xA5	/* receive buffers are pre-filled with this */

static struct lat_opts o;
static int me, nprocs;
static FILE *csv;
static char kword[LAT_WORD], kdesc[256];
static long errors_total;			/* rank 0: every error reported to it */
static unsigned char *sbuf, *rbuf;		/* ping-pong: (max size + GUARD) each */
static unsigned char *msb, *mrb;		/* msgrate: window x stride each */
static size_t mstride;
static double *lat;				/* maxb samples */
static int maxb;				/* max(o.batches, o.np_batches) */

static double now_s(void)
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

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = pat(seed, i);
}

/* wrong bytes in payload and guard, and a wrong count; first one reported */
static long check(const unsigned char *b, size_t n, unsigned seed, const MPI_Status *st,
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
static void stamp(unsigned char *b, size_t n, uint32_t seq)
{
	memcpy(b, &seq, n < 4 ? n : 4);
}

static long stamp_bad(const unsigned char *b, size_t n, uint32_t seq)
{
	return memcmp(b, &seq, n < 4 ? n : 4) != 0;
}

/* ---- ping-pong between this rank and @peer; @lead times ---- */

/* one round trip with every byte checked on both sides */
static long pp_verify(int peer, int lead, size_t n, unsigned seed)
{
	MPI_Status st;
	long bad = 0;

	memset(rbuf, FILL, n + GUARD);
	if (lead) {
		fill(sbuf, n, seed);
		MPI_Send(sbuf, (int)n, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
		MPI_Recv(rbuf, (int)(n + GUARD), MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD, &st);
		bad += check(rbuf, n, seed + 1, &st, "ping-pong verification (pong)");
	} else {
		MPI_Recv(rbuf, (int)(n + GUARD), MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD, &st);
		bad += check(rbuf, n, seed, &st, "ping-pong verification (ping)");
		fill(sbuf, n, seed + 1);
		MPI_Send(sbuf, (int)n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD);
	}
	return bad;
}

/* @k stamped round trips; returns the stamps found wrong */
static long pp_rounds(int peer, int lead, size_t n, int k, uint32_t *seq)
{
	long bad = 0;
	int i;

	for (i = 0; i < k; i++, (*seq)++) {
		if (lead) {
			stamp(sbuf, n, *seq);
			MPI_Send(sbuf, (int)n, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			bad += stamp_bad(rbuf, n, *seq);
			stamp(sbuf, n, *seq);
			MPI_Send(sbuf, (int)n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD);
			continue;
		}
		bad += stamp_bad(rbuf, n, *seq);
	}
	return bad;
}

/* the time limit: stop after this batch? (never before 3 are done) */
static int over_time(double start, int done)
{
	return o.time_limit > 0 && done >= 3 && now_s() - start > o.time_limit;
}

/*
 * One point: verification, warm-up, batches (each after a GO/READY
 * handshake, outside the timed part), verification. The lead returns the
 * batches done with their one-way latency (us) in lat[], *k the round
 * trips per batch, *err the errors of both sides.
 */
static int pp_point(int peer, int lead, size_t n, int warmup, int iters, int batches, int *k,
		    long *err)
{
	int nb, done = 0, go = 1;
	uint32_t seq = 0;
	double t0, t1, start = 0;
	long bad;

	lat_batch_plan(iters, batches, k, &nb);
	bad = pp_verify(peer, lead, n, 1);
	bad += pp_rounds(peer, lead, n, warmup, &seq);
	if (lead) {
		while (done < nb) {
			MPI_Send(&go, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD);
			MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			t0 = now_s();
			bad += pp_rounds(peer, lead, n, *k, &seq);
			t1 = now_s();
			if (!done)
				start = t0;
			lat[done++] = (t1 - t0) * 1e6 / (2.0 * *k);
			if (over_time(start, done))
				break;
		}
		go = 0;
		MPI_Send(&go, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD);
	} else {
		for (;;) {
			MPI_Recv(&go, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (!go)
				break;
			MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD);
			bad += pp_rounds(peer, lead, n, *k, &seq);
		}
	}
	bad += pp_verify(peer, lead, n, 2);
	if (lead) {
		long theirs;

		MPI_Recv(&theirs, 1, MPI_LONG, peer, TAG_ERR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		*err = bad + theirs;
	} else {
		MPI_Send(&bad, 1, MPI_LONG, peer, TAG_ERR, MPI_COMM_WORLD);
	}
	return done;
}

/* ---- output (rank 0) ---- */

static void row_init(struct lat_row *r, const char *mode, const char *pair, size_t size,
		     const char *unit)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->label, sizeof(r->label), "%s", o.label);
	snprintf(r->kprog, sizeof(r->kprog), "%s", kword);
	snprintf(r->mode, sizeof(r->mode), "%s", mode);
	snprintf(r->pair, sizeof(r->pair), "%s", pair);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->np = nprocs;
	r->size = size;
	r->reps = 1;
	r->mb_s = NAN;
}

static void csv_row(const struct lat_row *r)
{
	char line[512];

	errors_total += r->errors;
	if (csv && lat_csv_format(r, line, sizeof(line)) > 0)
		fprintf(csv, "%s\n", line);
}

static void print_lat(const struct lat_row *r, int k)
{
	printf("%8zu %6s %9.3f %9.3f %9.3f %9.3f %9.3f %4d x %-5d %6ld%s\n", r->size, r->pair,
	       r->st.med, r->st.q1, r->st.q3, r->st.min, r->st.max, r->st.n, k, r->errors,
	       r->errors ? "  DATA ERROR" : "");
	fflush(stdout);
}

static void lat_header(void)
{
	printf("#   size   pair    median        q1        q3       min       max  batches x K errors\n");
}

/* ranks that take no part in a phase wait here for rank 0's DONE token */
static void send_token(int to, int op, int idx)
{
	int t[2] = { op, idx };

	MPI_Send(t, 2, MPI_INT, to, TAG_TOKEN, MPI_COMM_WORLD);
}

static void release_from(int first)
{
	int r;

	for (r = first; r < nprocs; r++)
		send_token(r, TOK_DONE, 0);
}

static void wait_done(void)
{
	int t[2];

	do
		MPI_Recv(t, 2, MPI_INT, 0, TAG_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	while (t[0] != TOK_DONE);
}

/* ---- modes ---- */

static void run_pingpong(void)
{
	int i, k, nb;
	long err = 0;

	if (me >= 2) {
		wait_done();
		return;
	}
	if (me == 0) {
		printf("\n# pingpong: ranks 0 and 1, MPI_Send/MPI_Recv; one-way latency in us = batch time / 2K; statistics over the batches\n");
		if (nprocs > 2)
			printf("# the other %d ranks wait in MPI_Recv meanwhile\n", nprocs - 2);
		lat_header();
	}
	for (i = 0; i < o.n_pp; i++) {
		size_t n = o.pp_sizes[i];
		int large = n > o.large;

		nb = pp_point(1 - me, me == 0, n, large ? o.warmup_large : o.warmup,
			      large ? o.iters_large : o.iters, o.batches, &k, &err);
		if (me == 0) {
			struct lat_row r;

			row_init(&r, "pingpong", "0-1", n, "us");
			r.st = lat_stat_of(lat, nb);
			r.iters = (long)nb * k;
			r.errors = err;
			print_lat(&r, k);
			csv_row(&r);
		}
	}
	if (me == 0)
		release_from(2);
}

/* a pair's result: {batches, k, errors, samples...} */
static void send_result(int nb, int k, long err)
{
	double *m = malloc(sizeof(double) * (3 + maxb));

	m[0] = nb;
	m[1] = k;
	m[2] = (double)err;
	memcpy(m + 3, lat, sizeof(double) * nb);
	MPI_Send(m, 3 + nb, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
	free(m);
}

static int recv_result(int from, int *k, long *err)
{
	double *m = malloc(sizeof(double) * (3 + maxb));
	int nb;

	MPI_Recv(m, 3 + maxb, MPI_DOUBLE, from, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	nb = (int)m[0];
	*k = (int)m[1];
	*err = (long)m[2];
	memcpy(lat, m + 3, sizeof(double) * nb);
	free(m);
	return nb;
}

/* ranks other than 0 during npscale: wait for tokens, run the pair asked */
static void npscale_worker(void)
{
	int t[2], partner = me ^ 1, lead = !(me & 1), k, nb;
	long err = 0;

	for (;;) {
		MPI_Recv(t, 2, MPI_INT, 0, TAG_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (t[0] == TOK_DONE)
			return;
		if (t[0] == TOK_CONC) {
			MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_CREADY, MPI_COMM_WORLD);
			MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_CGO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		if (partner >= nprocs)
			continue;	/* odd rank out: never in a pair */
		nb = pp_point(partner, lead, o.np_sizes[t[1]], o.np_warmup, o.np_iters, o.np_batches,
			      &k, &err);
		if (lead)
			send_result(nb, k, err);
	}
}

/* rank 0: one size, sequential (one pair at a time) or concurrent */
static void npscale_size(int idx, int conc)
{
	const char *mode = conc ? "npscale-concurrent" : "npscale";
	size_t n = o.np_sizes[idx];
	int npairs = nprocs / 2, p, r, k, nb;
	double *med = malloc(sizeof(double) * npairs);
	struct lat_row row;
	long err, err_all = 0;
	char pair[LAT_WORD];

	printf("\n# %s np=%d, %zu bytes: %s\n", mode, nprocs, n,
	       conc ? "every pair ping-pongs at the same time (after a start barrier of explicit send/recv)" :
	       "one pair at a time; every other rank waits in MPI_Recv");
	lat_header();
	if (conc) {
		for (r = 1; r < nprocs; r++)
			send_token(r, TOK_CONC, idx);
		for (r = 1; r < nprocs; r++)
			MPI_Recv(NULL, 0, MPI_BYTE, r, TAG_CREADY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (r = 1; r < nprocs; r++)
			MPI_Send(NULL, 0, MPI_BYTE, r, TAG_CGO, MPI_COMM_WORLD);
	}
	for (p = 0; p < npairs; p++) {
		if (!conc)
			for (r = 2 * p; r <= 2 * p + 1; r++)
				if (r)
					send_token(r, TOK_SEQ, idx);
		if (p == 0)
			nb = pp_point(1, 1, n, o.np_warmup, o.np_iters, o.np_batches, &k, &err);
		else
			nb = recv_result(2 * p, &k, &err);
		snprintf(pair, sizeof(pair), "%d-%d", 2 * p, 2 * p + 1);
		row_init(&row, mode, pair, n, "us");
		row.st = lat_stat_of(lat, nb);
		row.iters = (long)nb * k;
		row.errors = err;
		err_all += err;
		med[p] = row.st.med;
		print_lat(&row, k);
		csv_row(&row);
	}
	row_init(&row, mode, "all", n, "us");
	row.st = lat_stat_of(med, npairs);
	row.iters = 0;
	row.errors = 0;		/* already counted in the pair rows */
	csv_row(&row);
	printf("# %s np=%d %zu B over the %d pair(s), pair medians: min %.3f avg %.3f max %.3f us%s\n",
	       mode, nprocs, n, npairs, row.st.min, row.st.mean, row.st.max,
	       err_all ? "  DATA ERROR" : "");
	fflush(stdout);
	free(med);
}

static void run_npscale(void)
{
	int i;

	if (me != 0) {
		npscale_worker();
		return;
	}
	for (i = 0; i < o.n_np; i++) {
		npscale_size(i, 0);
		if (o.concurrent && nprocs >= 4)
			npscale_size(i, 1);
	}
	release_from(1);
}

/* ---- msgrate: rank 0 sends windows to rank 1 ---- */

static unsigned char *mbuf(unsigned char *base, int j)
{
	return base + (size_t)j * mstride;
}

/* one window, every byte of every message checked (rank 1) */
static long mr_verify(int lead, size_t n, unsigned seed)
{
	MPI_Request *rq = malloc(sizeof(*rq) * o.window);
	MPI_Status *st = malloc(sizeof(*st) * o.window);
	unsigned char ack[64] = { 0 };
	long bad = 0;
	int j;

	for (j = 0; j < o.window; j++) {
		if (lead) {
			fill(mbuf(msb, j), n, seed * 1000 + j);
			MPI_Isend(mbuf(msb, j), (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
		} else {
			memset(mbuf(mrb, j), FILL, n + GUARD);
			MPI_Irecv(mbuf(mrb, j), (int)(n + GUARD), MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
		}
	}
	MPI_Waitall(o.window, rq, st);
	if (lead) {
		MPI_Recv(ack, o.ack, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		for (j = 0; j < o.window; j++)
			bad += check(mbuf(mrb, j), n, seed * 1000 + j, &st[j], "msgrate verification");
		MPI_Send(ack, o.ack, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
	}
	free(rq);
	free(st);
	return bad;
}

/* @loops windows of stamped messages; returns the stamps found wrong */
static long mr_windows(int lead, size_t n, int loops, uint32_t *seq)
{
	MPI_Request rq[1024];
	unsigned char ack[64] = { 0 };
	long bad = 0;
	int l, j;

	for (l = 0; l < loops; l++) {
		for (j = 0; j < o.window; j++) {
			if (lead) {
				stamp(mbuf(msb, j), n, *seq + j);
				MPI_Isend(mbuf(msb, j), (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
			} else {
				MPI_Irecv(mbuf(mrb, j), (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
			}
		}
		MPI_Waitall(o.window, rq, MPI_STATUSES_IGNORE);
		if (lead) {
			MPI_Recv(ack, o.ack, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			for (j = 0; j < o.window; j++)
				bad += stamp_bad(mbuf(mrb, j), n, *seq + j);
			MPI_Send(ack, o.ack, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
		}
		*seq += o.window;
	}
	return bad;
}

static void run_msgrate(void)
{
	double *rate = malloc(sizeof(double) * o.reps);
	int lead = me == 0, i, go, done;
	uint32_t seq;
	long bad;

	if (me >= 2) {
		wait_done();
		free(rate);
		return;
	}
	if (lead) {
		printf("\n# msgrate: rank 0 -> rank 1, windows of %d MPI_Isend / MPI_Irecv + MPI_Waitall, %d-byte ack per window;\n",
		       o.window, o.ack);
		printf("# %d windows per repetition; messages/s and MB/s (1e6 B/s), statistics over the repetitions\n",
		       o.loops);
		printf("#   size      msg/s(med)          q1          q3         min        MB/s  reps x msgs errors\n");
	}
	for (i = 0; i < o.n_mr; i++) {
		size_t n = o.mr_sizes[i];
		double t0, t1, start = 0;

		seq = 0;
		done = 0;
		bad = mr_verify(lead, n, 1);
		bad += mr_windows(lead, n, o.mr_warmup, &seq);
		if (lead) {
			for (go = 1; done < o.reps;) {
				MPI_Send(&go, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD);
				MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				t0 = now_s();
				bad += mr_windows(lead, n, o.loops, &seq);
				t1 = now_s();
				if (!done)
					start = t0;
				rate[done++] = (double)o.loops * o.window / (t1 - t0);
				if (over_time(start, done))
					break;
			}
			go = 0;
			MPI_Send(&go, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD);
		} else {
			for (;;) {
				MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (!go)
					break;
				MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
				bad += mr_windows(lead, n, o.loops, &seq);
			}
		}
		bad += mr_verify(lead, n, 2);
		if (lead) {
			struct lat_row r;
			long theirs;

			MPI_Recv(&theirs, 1, MPI_LONG, 1, TAG_ERR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			row_init(&r, "msgrate", "0-1", n, "msg/s");
			r.st = lat_stat_of(rate, done);
			r.iters = (long)done * o.loops * o.window;
			r.mb_s = r.st.med * n / 1e6;
			r.errors = bad + theirs;
			printf("%8zu %15.0f %11.0f %11.0f %11.0f %11.3f %4d x %-6d %5ld%s\n", n, r.st.med,
			       r.st.q1, r.st.q3, r.st.min, r.mb_s, done, o.loops * o.window, r.errors,
			       r.errors ? "  DATA ERROR" : "");
			fflush(stdout);
			csv_row(&r);
		} else {
			MPI_Send(&bad, 1, MPI_LONG, 0, TAG_ERR, MPI_COMM_WORLD);
		}
	}
	if (lead)
		release_from(2);
	free(rate);
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
	lat_format_sizes(o.pp_sizes, o.n_pp, sz[0], sizeof(sz[0]));
	lat_format_sizes(o.np_sizes, o.n_np, sz[1], sizeof(sz[1]));
	lat_format_sizes(o.mr_sizes, o.n_mr, sz[2], sizeof(sz[2]));
	printf("# latency: label %s, np %d, host %s (%s), %ld CPUs online\n", o.label, nprocs,
	       u.nodename, u.release, sysconf(_SC_NPROCESSORS_ONLN));
	printf("# library: %s\n", lib);
	printf("# kprog-status-start: %s\n", kdesc);
	printf("# Open MPI mpi_yield_when_idle (rank 0, MPI_T): %s\n",
	       y < 0 ? "unknown" : y ? "1 (idle waits call sched_yield, still polling)" : "0 (idle waits busy-poll)");
	if (o.modes & LAT_PINGPONG)
		printf("# pingpong sizes %s; %d round trips in %d batches after %d warm-up (above %zu B: %d after %d)\n",
		       sz[0], o.iters, o.batches, o.warmup, o.large, o.iters_large, o.warmup_large);
	if (o.modes & LAT_NPSCALE)
		printf("# npscale sizes %s; per pair %d round trips in %d batches after %d warm-up%s\n", sz[1],
		       o.np_iters, o.np_batches, o.np_warmup, o.concurrent ? "; also concurrent" : "");
	if (o.modes & LAT_MSGRATE)
		printf("# msgrate sizes %s; window %d, %d windows x %d repetitions after %d warm-up windows, ack %d B\n",
		       sz[2], o.window, o.loops, o.reps, o.mr_warmup, o.ack);
	if (o.time_limit > 0)
		printf("# time limit %.1f s per point (pair): fewer batches/repetitions when reached (see samples)\n",
		       o.time_limit);
	printf("# times: clock_gettime(CLOCK_MONOTONIC); data: sequence stamps on every timed message, full verification pass before and after each point\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *wr = getenv("OMPI_COMM_WORLD_RANK");
	char err[256];
	size_t ppmax, mrmax;
	double t_start;

	if (lat_parse_opts(argc, argv, &o, err, sizeof(err))) {
		if (!wr || !strcmp(wr, "0"))
			fprintf(stderr, "latency: %s\n", err);
		return 2;
	}
	if (o.help) {
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
	ppmax = max_size(o.pp_sizes, o.n_pp);
	if (max_size(o.np_sizes, o.n_np) > ppmax)
		ppmax = max_size(o.np_sizes, o.n_np);
	mrmax = max_size(o.mr_sizes, o.n_mr);
	mstride = (mrmax + GUARD + 63) & ~(size_t)63;
	sbuf = xalloc(ppmax + GUARD);
	rbuf = xalloc(ppmax + GUARD);
	maxb = o.batches > o.np_batches ? o.batches : o.np_batches;
	lat = calloc(maxb, sizeof(*lat));
	if (o.modes & LAT_MSGRATE) {
		msb = xalloc(mstride * o.window);
		mrb = xalloc(mstride * o.window);
	}
	kprog_status();
	if (me == 0) {
		if (o.csv) {
			csv = fopen(o.csv, "w");
			if (!csv)
				perror(o.csv);
			else
				fprintf(csv, "%s\n", LAT_CSV_HEADER);
		}
		print_header();
	}
	if (o.modes & LAT_PINGPONG)
		run_pingpong();
	if (o.modes & LAT_NPSCALE)
		run_npscale();
	if (o.modes & LAT_MSGRATE)
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
