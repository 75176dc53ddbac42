/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/progress_opts.h: the options of bench/progress (seed 001 progress
 * thread benchmarks). Pure C, no MPI, so bench/test_progress.c can test
 * the parsing natively.
 */
#ifndef PROGRESS_OPTS_H
#define PROGRESS_OPTS_H

#include <stddef.h>
#include <stdio.h>

/*
 * Progression strategies of the client. MANUAL and KERNEL are the same
 * code (no thread; post, compute, wait): without an active module Open MPI
 * progresses only inside the wait (manual progression), under an active
 * kprog the module progresses in kernel context. Which one a run measures
 * depends on the library, so each run reports the no-thread points under
 * the name that is true for it.
 */
enum { ST_MANUAL, ST_POLL, ST_INTR, ST_RT, ST_KERNEL, NSTRAT };
/* where the progression runs: a core of its own, or the compute core */
enum { PL_SPARE, PL_SHARED, NPLACE };
/* time-based (compute for t_b) and work-based (fixed workload) schemes */
enum { SC_TIME, SC_WORK, NSCHEME };
/* which CPUs the kprog kernel workers may use, per placement */
enum { KW_STRICT, KW_FOLLOW, KW_ANY };
enum { VERIFY_FIRST_LAST, VERIFY_ALL };

#define PO_MAX_SIZES 32
#define PO_MIN_SIZE 8		/* the echo carries an 8-byte time stamp */
#define PO_MAX_SIZE (256UL << 20)

extern const char *const po_strat_name[NSTRAT];
extern const char *const po_place_name[NPLACE];
extern const char *const po_scheme_name[NSCHEME];
extern const char *const po_kworker_name[3];

struct popts {
	int strat[NSTRAT];
	int place[NPLACE];
	int scheme[NSCHEME];
	size_t sizes[PO_MAX_SIZES];
	int nsizes;
	int iters;		/* measured rounds per point */
	int warmup;		/* unmeasured rounds before each pass of a point */
	int block;		/* measured rounds per point per pass, 0: one pass */
	int tb_iters;		/* rounds of the blocking t_b measurement */
	int cpu_compute;	/* -1: automatic */
	int cpu_spare;		/* -1: automatic, -2: none */
	int cpu_server;		/* -1: automatic */
	int poll_yield;		/* poll thread: sched_yield every N polls, 0 never */
	int rt_prio;		/* SCHED_FIFO priority of the rt thread */
	int kworker;		/* KW_* */
	int verify;		/* VERIFY_* */
	const char *data;	/* prefix of the plain-text data files, or NULL */
	const char *label;	/* name of this run: plain, kprog, ... */
	int quiet;
	int help;
};

void popts_defaults(struct popts *o);

/*
 * Parses argv (getopt_long, resets optind). Returns 0 and fills @o, or -1
 * with a message in @err. --help sets o->help and returns 0.
 */
int popts_parse(struct popts *o, int argc, char **argv, char *err, size_t errlen);

/* "64K", "1M", "4096": 0 on success; K/M/G are binary; rejects junk */
int po_parse_size(const char *s, size_t *out);

/* a CPU number or "none" (-2, only if @none_ok) */
int po_parse_cpu(const char *s, int none_ok, int *out);

void popts_usage(FILE *f);

#endif
