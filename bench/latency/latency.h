/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/latency.h: what the parts of bench/latency share (one program, not
 * an API): message tags, the options and buffers set up by latency.c, the
 * data check, output rows and the tokens that park ranks a mode does not
 * use. latency.c: set-up and main; latency_pingpong.c: pingpong, npscale;
 * latency_msgrate.c: msgrate.
 */
#ifndef LATENCY_H
#define LATENCY_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "latency_opts.h"
#include "latency_stats.h"

enum {
	TAG_PING = 101, TAG_PONG, TAG_GO, TAG_READY, TAG_ERR, TAG_TOKEN, TAG_RESULT,
	TAG_CREADY, TAG_CGO, TAG_DATA, TAG_ACK,
};
enum { TOK_DONE, TOK_SEQ, TOK_CONC };	/* tokens from rank 0 to waiting ranks */

#define GUARD 64	/* bytes past the payload checked in verification passes */
#define FILL 0xA5	/* receive buffers are pre-filled with this */

extern struct lat_opts opt;
extern int me, nprocs;
extern unsigned char *sbuf, *rbuf;	/* ping-pong: (largest size + GUARD) each */
extern unsigned char *msb, *mrb;	/* msgrate: window x mstride each */
extern size_t mstride;
extern double *lat;			/* maxb samples of the current point */
extern int maxb;			/* max(opt.batches, opt.np_batches) */

double now_s(void);			/* CLOCK_MONOTONIC, seconds */

/* ---- data check ---- */
/* fill @n bytes with the pattern of @seed (never the FILL byte) */
void fill(unsigned char *b, size_t n, unsigned seed);
/* bad bytes of payload (pattern @seed) and GUARD (FILL), +1 if the
 * received count is not @n; the first one is reported on stderr */
long check(const unsigned char *b, size_t n, unsigned seed, const MPI_Status *st,
	   const char *what);
/* sequence number in the first min(n, 4) bytes of every timed message */
void stamp(unsigned char *b, size_t n, uint32_t seq);
long stamp_bad(const unsigned char *b, size_t n, uint32_t seq);

/* --time-limit: stop the point after this batch? (never before 3 done) */
int over_time(double start, int done);

/* ---- output (rank 0) ---- */
void row_init(struct lat_row *r, const char *mode, const char *pair, size_t size,
	      const char *unit);
void csv_row(const struct lat_row *r);	/* to --csv; counts its errors */

/* ---- ranks a phase does not use wait in MPI_Recv for rank 0's token ---- */
void send_token(int to, int op, int idx);
void release_from(int first);		/* TOK_DONE to ranks first..np-1 */
void wait_done(void);

void run_pingpong(void);
void run_npscale(void);
void run_msgrate(void);

#endif
