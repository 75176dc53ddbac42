/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/latency_stats.h: the latency benchmark's own logic, free of MPI so
 * that test_latency.c can check it natively: sample statistics, size
 * lists, the kprog status of a job, and the CSV rows (writing, reading
 * back, merging repetitions). Options: latency_opts.h.
 */
#ifndef LATENCY_STATS_H
#define LATENCY_STATS_H

#include <stddef.h>
#include <stdio.h>

/* ---- statistics ---- */

/* Of @n samples (sorted in place): quartiles by linear interpolation
 * (type 7, as overlap_stats.c), min, max, mean. All NAN when n == 0. */
struct lat_stat {
	double med, q1, q3, min, max, mean;
	int n;
};
struct lat_stat lat_stat_of(double *v, int n);

/* ---- size lists ---- */

#define LAT_MAX_SIZES 64
#define LAT_MAX_SIZE (1UL << 30)

/*
 * "4096", "64K", "1M" (K = 1024, M = 1024^2, case-insensitive): bytes.
 * 0 .. LAT_MAX_SIZE. Returns 0, or -1 for anything else.
 */
int lat_parse_size(const char *s, size_t *out);

/*
 * Comma-separated items, each a size or a range LO..HI = LO, then every
 * power of two above LO up to HI ("0..64K" = 0,1,2,4,..,65536). The
 * result is sorted and without duplicates. Returns the count (>= 1), or
 * -1 (bad item, empty list, LO > HI, more than @cap sizes).
 */
int lat_parse_sizes(const char *list, size_t *out, int cap);

/* "0,1,2,4,...": the list written back compactly, K/M where exact. */
void lat_format_sizes(const size_t *s, int n, char *buf, size_t len);

/* ---- kprog status of a job ---- */

/*
 * @st: {loaded, devopen} per rank, @n ranks (kprog_local_status of
 * bench/kprog_detect.h on each). @word gets "active" (shim loaded and
 * /dev/kprog open on every rank), "passthrough" (loaded everywhere, open
 * nowhere), "absent" (loaded nowhere) or "partial"; @desc one sentence.
 * Returns 1 if active.
 */
int lat_kprog_status(const int *st, int n, char *word, size_t wlen, char *desc, size_t dlen);

/* ---- CSV rows ---- */

#define LAT_CSV_HEADER "label,kprog,mode,np,pair,size,unit,median,q1,q3,min,max,mean," \
	"samples,iters,reps,mb_s,errors"
#define LAT_WORD 24

/*
 * One measured point. unit "us": one-way latency, samples = batches
 * (npscale, pair "all": samples = pairs, each value over the pairs'
 * medians, so min/mean/max are the seed's min/avg/max). unit "msg/s":
 * message rate, samples = repetitions, mb_s = median x size / 1e6.
 */
struct lat_row {
	char label[LAT_WORD], kprog[LAT_WORD], mode[LAT_WORD], pair[LAT_WORD], unit[8];
	int np;
	size_t size;
	struct lat_stat st;
	long iters, errors;
	int reps;
	double mb_s;			/* NAN: empty */
};

/* One line without newline; NAN as an empty field. Returns its length, or
 * -1 if it did not fit. */
int lat_csv_format(const struct lat_row *r, char *buf, size_t len);

/* Parse one data line (not the header). Returns 0 or -1. */
int lat_csv_parse(const char *line, struct lat_row *r);

/*
 * Rows of several runs (repetitions) merged per point (label, mode, np,
 * pair, size), in first-seen order: every statistic is the median over
 * the runs of that statistic, samples, iters and errors are summed, reps
 * counts the runs, kprog is the worst status seen (active < passthrough <
 * partial < absent < anything else). Returns the number of rows written
 * to @out (at most @cap).
 */
int lat_merge(const struct lat_row *in, int n, struct lat_row *out, int cap);

/* The row of that point, or NULL. */
const struct lat_row *lat_find(const struct lat_row *rows, int n, const char *label,
			       const char *mode, int np, const char *pair, size_t size);

/* b / a, NAN unless both are finite and a > 0. */
double lat_ratio(double b, double a);

#endif
