/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench/overlap_stats.h: the overlap suite's own logic, free of MPI so
 * that it can be unit-tested (test_overlap.c): sample statistics, the
 * overhead ratio of equation 1, the sqrt(2) grid, option parsing and
 * reading the raw data (CSV) back for the side-by-side summary.
 */
#ifndef OVERLAP_STATS_H
#define OVERLAP_STATS_H

#include <stddef.h>

/* Median, first and third quartile of @n samples; sorts @v in place. */
struct ovl_quart {
	double q1, med, q3;
};
struct ovl_quart ovl_quartiles(double *v, int n);
double ovl_median(double *v, int n);

/*
 * Equation 1 of the paper:
 *   (T_measured - max(T_comm, T_comp)) / min(T_comm, T_comp)
 * 0 = perfect overlap, 1 = serialized. NAN when min() <= 0.
 */
double ovl_ratio_eq1(double tmeas, double tcomm, double tcomp);

/*
 * The sqrt(2) grid: min * 2^(k/2) for k = 0, 1, ... while <= max (with a
 * relative slack of 1e-4 for rounding). Sizes are rounded to whole bytes
 * and made unique. Return the number of values written (at most @cap;
 * sizes: at most 256).
 */
int ovl_grid_double(double min, double max, double *out, int cap);
int ovl_grid_size(size_t min, size_t max, size_t *out, int cap);

/*
 * "64K", "1M", "1.5M", "4096": bytes (K = 1024). Returns 0, or -1 for
 * anything else (empty, junk after the number, negative, overflow).
 */
int ovl_parse_size(const char *s, size_t *out);

/* Seconds left for @total units when @done took @elapsed s; -1 unknown. */
double ovl_eta(int done, int total, double elapsed);

/* One row of the CSV written by bench/overlap --csv (header in OVL_CSV_HEADER). */
#define OVL_CSV_HEADER "bench,size,comp_us,tcomm_us,tmeasured_us,ratio,threads,errors," \
	"t0_us,ratio0,iqr_pct,tmin_us,ratio_min,tmeas_q1_us,tmeas_q3_us,ratio_q1,ratio_q3"
#define OVL_BENCH_LEN 16
struct ovl_row {
	char bench[OVL_BENCH_LEN];
	size_t size;
	double comp, tcomm, tmeas, ratio;	/* ratio NAN if empty */
	int threads;
	long errors;
	double t0, ratio0, iqr_pct, tmin, ratio_min;
	double tmeas_q1, tmeas_q3, ratio_q1, ratio_q3;
};

/*
 * Parse one data line (not the header). Empty fields read as NAN. Rows
 * with the first 13 columns only (files written before the quartile
 * columns existed) are accepted with NAN quartiles. Returns 0 or -1.
 */
int ovl_parse_row(const char *line, struct ovl_row *r);

/* A row that is an overlap point: not a base benchmark, not a T0 row. */
int ovl_is_grid_point(const struct ovl_row *r);

/*
 * Median ratio of benchmark @bench over the grid points of @rows: over
 * every point (@all) and over the rendezvous region (@rdv: size greater
 * than @rdv_threshold bytes). @n_all/@n_rdv get the point counts; the
 * medians are NAN when there are no points. Over the rendezvous region
 * also: @rdv0, the median of ratio0 (eq. 1 with T_comm := T0, the same
 * benchmark without computation), and @slow, the median of T0 / T_comm:
 * well above 1 when the transfer inside the benchmark is much slower than
 * in the ping-pong that gives T_comm, which inflates the ratio.
 */
struct ovl_summary {
	double all, rdv, rdv0, slow;
	int n_all, n_rdv;
};
struct ovl_summary ovl_summarize(const struct ovl_row *rows, int n, const char *bench,
				 size_t rdv_threshold);

#endif
