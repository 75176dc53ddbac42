// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/latency_pingpong.c: the ping-pong point (verification, warm-up,
 * timed batches after a GO/READY handshake) and the two modes built on it:
 * pingpong (ranks 0 and 1, one row per size) and npscale (pairs of an
 * np-rank job, one at a time or all at once, the others parked in
 * MPI_Recv of a token from rank 0). See latency.h.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"

/*
 * --waitprof-ab: the shim's switch of its wait-state profiler, for this
 * benchmark only (libshim/waitprof/waitprof.c); NULL when the shim is not loaded.
 */
static int (*wp_set)(int on);
/*
 * --waitprof-ab: the lead's MPI_Recv calls, timed in every 16th round trip
 * (two clock reads there only, in off and on batches alike): the mean
 * duration of a profiled call of each batch, to which the profiler's cost
 * per call is compared.
 */
#define RECV_SAMPLE 16
static double *recv_us;
static double recv_sum;
static long recv_n;

static void waitprof_set(int on)
{
	if (wp_set)
		wp_set(on);
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
			bool timed = recv_us && i % RECV_SAMPLE == 0;
			double t = timed ? now_s() : 0;

			MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (timed) {
				recv_sum += now_s() - t;
				recv_n++;
			}
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
			/* --waitprof-ab: even batches off, odd on (go 1 / 2 tells the peer) */
			if (opt.waitprof_ab) {
				go = 1 + (done & 1);
				waitprof_set(go == 2);
			}
			MPI_Send(&go, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD);
			MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			recv_sum = 0;
			recv_n = 0;
			t0 = now_s();
			bad += pp_rounds(peer, lead, n, *k, &seq);
			t1 = now_s();
			if (recv_us)
				recv_us[done] = recv_n ? recv_sum * 1e6 / (double)recv_n : 0;
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
			if (opt.waitprof_ab)
				waitprof_set(go == 2);
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

/* ---- output ---- */

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

/* --waitprof-ab: lat[] alternates off (even) and on (odd) batches */
static void print_waitprof_ab(size_t n, int nb, int k, long err)
{
	double *v = malloc(sizeof(double) * (nb + 1)), *d = malloc(sizeof(double) * (nb + 1));
	struct lat_stat off, on, diff, recv_off;
	int i, m = 0, p = 0;

	for (i = 0; i < nb; i += 2)
		v[m++] = lat[i];
	off = lat_stat_of(v, m);
	for (i = 1, m = 0; i < nb; i += 2)
		v[m++] = lat[i];
	on = lat_stat_of(v, m);
	/* each on batch against the off batch just before it: drift cancels */
	for (i = 1; i < nb; i += 2)
		d[p++] = (lat[i] - lat[i - 1]) * 1000;
	diff = lat_stat_of(d, p);
	for (i = 0, m = 0; i < nb; i += 2)
		v[m++] = recv_us[i];
	recv_off = lat_stat_of(v, m);
	printf("%8zu %9.3f %9.3f %9.3f %9.3f %7.3f %8.0f %8.0f [%6.0f..%6.0f] %3d x %-5d %9.3f %8.1f %6ld%s\n",
	       n, off.med, off.q1, on.med, on.q1, on.med / off.med, (on.med - off.med) * 1000,
	       diff.med, diff.q1, diff.q3, p, k, recv_off.med,
	       recv_off.med > 0 ? diff.med / (recv_off.med * 1000) * 100 : 0, err,
	       err ? "  DATA ERROR" : "");
	fflush(stdout);
	free(v);
	free(d);
}

/* ---- modes ---- */

void run_pingpong(void)
{
	int i, k, nb;
	long err = 0;

	if (opt.waitprof_ab) {
		recv_us = calloc((size_t)maxb + 1, sizeof(*recv_us));
		*(void **)&wp_set = dlsym(RTLD_DEFAULT, "kprog_waitprof_bench_set");
		if (!wp_set || wp_set(1) < 0) {
			if (me == 0)
				fprintf(stderr, "latency: --waitprof-ab needs the shim (LD_PRELOAD=libkprog.so) with KPROG_WAITPROF=1\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (me >= 2) {
		wait_done();
		return;
	}
	if (me == 0) {
		printf("\n# pingpong: ranks 0 and 1, MPI_Send/MPI_Recv; one-way latency in us = batch time / 2K; statistics over the batches\n");
		if (nprocs > 2)
			printf("# the other %d ranks wait in MPI_Recv meanwhile\n", nprocs - 2);
		if (opt.waitprof_ab) {
			printf("# --waitprof-ab: batches alternate the wait-state profiler off and on in these processes;\n");
			printf("# one-way latency (us) of each kind; per_call: ns per profiled MPI_Recv (one per trip),\n");
			printf("# from the medians and as the median [q1..q3] of each on batch minus the off batch before it;\n");
			printf("# recv_us: rank 0's MPI_Recv call with the profiler off (median over the off batches of the mean of\n");
			printf("# every %dth call, timed with the clock around it); per_call%%: pair_med over recv_us, the profiler's\n", RECV_SAMPLE);
			printf("# cost (the receiver's timing and the sender's stamp) per profiled call, against the call's own duration\n");
			printf("#   size    off_med    off_q1     on_med     on_q1  on/off per_call  pair_med [    q1..    q3] pairs x K     recv_us per_call%% errors\n");
		} else {
			lat_header();
		}
	}
	for (i = 0; i < opt.n_pp; i++) {
		size_t n = opt.pp_sizes[i];
		int large = n > opt.large;

		nb = pp_point(1 - me, me == 0, n, large ? opt.warmup_large : opt.warmup,
			      large ? opt.iters_large : opt.iters, opt.batches, &k, &err);
		if (me == 0 && opt.waitprof_ab) {
			print_waitprof_ab(n, nb, k, err);
		} else if (me == 0) {
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
		nb = pp_point(partner, lead, opt.np_sizes[t[1]], opt.np_warmup, opt.np_iters, opt.np_batches,
			      &k, &err);
		if (lead)
			send_result(nb, k, err);
	}
}

/* rank 0: one size, sequential (one pair at a time) or concurrent */
static void npscale_size(int idx, int conc)
{
	const char *mode = conc ? "npscale-concurrent" : "npscale";
	size_t n = opt.np_sizes[idx];
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
			nb = pp_point(1, 1, n, opt.np_warmup, opt.np_iters, opt.np_batches, &k, &err);
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

void run_npscale(void)
{
	int i;

	if (me != 0) {
		npscale_worker();
		return;
	}
	for (i = 0; i < opt.n_np; i++) {
		npscale_size(i, 0);
		if (opt.concurrent && nprocs >= 4)
			npscale_size(i, 1);
	}
	release_from(1);
}

