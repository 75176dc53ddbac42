// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/latency_msgrate.c: the msgrate mode, osu_mbw_mr / osu_bw style:
 * rank 0 posts windows of MPI_Isend, rank 1 of MPI_Irecv, both
 * MPI_Waitall, rank 1 acks each window. See latency.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"

/* ---- msgrate: rank 0 sends windows to rank 1 ---- */

static unsigned char *mbuf(unsigned char *base, int j)
{
	return base + (size_t)j * mstride;
}

/* one window, every byte of every message checked (rank 1) */
static long mr_verify(int lead, size_t n, unsigned seed)
{
	MPI_Request *rq = malloc(sizeof(*rq) * opt.window);
	MPI_Status *st = malloc(sizeof(*st) * opt.window);
	unsigned char ack[64] = { 0 };
	long bad = 0;
	int j;

	for (j = 0; j < opt.window; j++) {
		if (lead) {
			fill(mbuf(msb, j), n, seed * 1000 + j);
			MPI_Isend(mbuf(msb, j), (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
		} else {
			memset(mbuf(mrb, j), FILL, n + GUARD);
			MPI_Irecv(mbuf(mrb, j), (int)(n + GUARD), MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
		}
	}
	MPI_Waitall(opt.window, rq, st);
	if (lead) {
		MPI_Recv(ack, opt.ack, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		for (j = 0; j < opt.window; j++)
			bad += check(mbuf(mrb, j), n, seed * 1000 + j, &st[j], "msgrate verification");
		MPI_Send(ack, opt.ack, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
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
		for (j = 0; j < opt.window; j++) {
			if (lead) {
				stamp(mbuf(msb, j), n, *seq + j);
				MPI_Isend(mbuf(msb, j), (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
			} else {
				MPI_Irecv(mbuf(mrb, j), (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &rq[j]);
			}
		}
		MPI_Waitall(opt.window, rq, MPI_STATUSES_IGNORE);
		if (lead) {
			MPI_Recv(ack, opt.ack, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			for (j = 0; j < opt.window; j++)
				bad += stamp_bad(mbuf(mrb, j), n, *seq + j);
			MPI_Send(ack, opt.ack, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
		}
		*seq += opt.window;
	}
	return bad;
}

void run_msgrate(void)
{
	double *rate = malloc(sizeof(double) * opt.reps);
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
		       opt.window, opt.ack);
		printf("# %d windows per repetition; messages/s and MB/s (1e6 B/s), statistics over the repetitions\n",
		       opt.loops);
		printf("#   size      msg/s(med)          q1          q3         min        MB/s  reps x msgs errors\n");
	}
	for (i = 0; i < opt.n_mr; i++) {
		size_t n = opt.mr_sizes[i];
		double t0, t1, start = 0;

		seq = 0;
		done = 0;
		bad = mr_verify(lead, n, 1);
		bad += mr_windows(lead, n, opt.mr_warmup, &seq);
		if (lead) {
			for (go = 1; done < opt.reps;) {
				MPI_Send(&go, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD);
				MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				t0 = now_s();
				bad += mr_windows(lead, n, opt.loops, &seq);
				t1 = now_s();
				if (!done)
					start = t0;
				rate[done++] = (double)opt.loops * opt.window / (t1 - t0);
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
				bad += mr_windows(lead, n, opt.loops, &seq);
			}
		}
		bad += mr_verify(lead, n, 2);
		if (lead) {
			struct lat_row r;
			long theirs;

			MPI_Recv(&theirs, 1, MPI_LONG, 1, TAG_ERR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			row_init(&r, "msgrate", "0-1", n, "msg/s");
			r.st = lat_stat_of(rate, done);
			r.iters = (long)done * opt.loops * opt.window;
			r.mb_s = r.st.med * n / 1e6;
			r.errors = bad + theirs;
			printf("%8zu %15.0f %11.0f %11.0f %11.0f %11.3f %4d x %-6d %5ld%s\n", n, r.st.med,
			       r.st.q1, r.st.q3, r.st.min, r.mb_s, done, opt.loops * opt.window, r.errors,
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

