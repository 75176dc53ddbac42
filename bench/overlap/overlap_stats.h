/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
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

/*
 * A reference measured in blocks spread over the whole run (the 0-byte
 * latency before every point, the ping-pong of a size before every sweep
 * over that size): the statistics of all its samples pooled. The reference
 * value is the first quartile (q1) of the pool: noise only ever adds time,
 * so the lower quartile is the reference's own time while up to 3/4 of its
 * rounds may be slowed (a median resists only 1/2: under load kprog's
 * 0-byte ping-pong had 60 % slow rounds); the minimum is the low end of
 * its spread. NAN fields and n 0 when there are no samples.
 */
struct ovl_ref {
	double q1, med, min;
	int n;
};
struct ovl_ref ovl_ref_of(const double *v, int n);	/* @v is not modified */

/*
 * Why a point is invalid (its ratio is not computed):
 *   OVL_NOREF       a reference (0-byte latency, T_comm) is missing
 *   OVL_LAT0_GT_SEQ fewer than half of the rounds are valid, mostly because
 *                   the 0-byte latency was not shorter than the round's
 *                   whole sequence
 *   OVL_COMP_SHORT  fewer than half valid, mostly because the sequence was
 *                   shorter than 90 % of the computation it contains (the
 *                   calibration of the busy loop no longer holds)
 *   OVL_NEGATIVE    eq. 1 is below 0 by more than the references' spread
 *                   (T_measured is below the ideal time even when that is
 *                   computed with T_comm's fastest round and T_comp less
 *                   its slack): T_comm does not describe this benchmark's
 *                   transfer
 */
enum { OVL_OK, OVL_NOREF, OVL_LAT0_GT_SEQ, OVL_COMP_SHORT, OVL_NEGATIVE, OVL_NREASONS };
const char *ovl_reason_name(int reason);	/* "" for OVL_OK */
int ovl_reason_parse(const char *s);		/* -1 if unknown */

#define OVL_COMP_SLACK 0.10	/* a round may be this much shorter than T_comp */

/*
 * Equation 1 with the sign checked: @tmeas the point's median, @ref and
 * @ref_lo the reference and the low end of its spread (T_comm's first
 * quartile and minimum; or T0 and its first quartile for ratio0). A ratio
 * >= 0 is returned as is. A negative ratio that the references' own spread
 * explains (eq. 1 with @ref_lo and T_comp less OVL_COMP_SLACK is >= 0)
 * reads 0, "perfect overlap as far as this measurement can tell"; beyond
 * that, NAN and *@negative = 1 (when not NULL). NAN when an input is
 * missing.
 */
double ovl_ratio_checked(double tmeas, double ref, double ref_lo, double comp, int *negative);

/*
 * One point from its rounds. @seq: the time of each round on rank 0 as
 * the benchmark defines it before the latency subtraction (the sequence;
 * half of it for both-sides). @cpu (may be NULL): the CPU time of the
 * round's computation on rank 0 (per half for both-sides), its pure
 * computation time; T_comp of the round is @cpu[i], or @comp when @cpu is
 * NULL or not > 0. @sub_lat0 (sender, receiver, noncontig):
 * T = sequence - 0-byte latency (the reference @lat0.q1), where the
 * latency subtracted from a round is at most the part of the sequence not
 * covered by the computation (sequence - T_comp, floor 0): a latency
 * hidden inside the computation is not taken out twice. A round is invalid
 * when the latency is not shorter than its sequence, or when
 * T < (1 - OVL_COMP_SLACK) x T_comp. The point is invalid when fewer than
 * half of its rounds are valid, when a reference is missing, or when eq. 1
 * is negative beyond the references' spread (as ovl_ratio_checked, per
 * round). The ratio is the median of the valid rounds' eq. 1; T_measured,
 * its quartiles and minimum come from the valid rounds (from all rounds
 * when none is valid, for diagnosis). @comp 0 (the T0 rows): no ratio,
 * only T_measured.
 */
struct ovl_point_in {
	const double *seq, *cpu;
	int n;
	int sub_lat0;
	double comp;
	struct ovl_ref lat0, tcomm;
};
struct ovl_point {
	double tmeas, q1, q3, tmin, iqr_pct;
	double lat0_used;	/* median latency subtracted over the valid rounds */
	double tcomp;		/* median T_comp of the valid rounds (measured, or @comp) */
	double ratio_raw;	/* eq. 1 before the sign check (may be < 0) */
	/* T_comm used: @tcomm.q1; ratio_min uses the minima of both references */
	double ratio, rq1, rq3, rmin;	/* NAN when invalid; never < 0 */
	int nvalid, n, reason;
};
struct ovl_point ovl_eval_point(const struct ovl_point_in *in);

/* One row of the CSV written by bench/overlap --csv (header in OVL_CSV_HEADER). */
#define OVL_CSV_HEADER "bench,size,comp_us,tcomm_us,tmeasured_us,ratio,threads,errors," \
	"t0_us,ratio0,iqr_pct,tmin_us,ratio_min,tmeas_q1_us,tmeas_q3_us,ratio_q1,ratio_q3," \
	"valid,reason,rounds_valid,rounds,ratio_raw,lat0_us,tcomp_cpu_us"
#define OVL_BENCH_LEN 16
#define OVL_REASON_LEN 16
struct ovl_row {
	char bench[OVL_BENCH_LEN];
	size_t size;
	double comp, tcomm, tmeas, ratio;	/* ratio NAN if empty or invalid */
	int threads;
	long errors;
	double t0, ratio0, iqr_pct, tmin, ratio_min;
	double tmeas_q1, tmeas_q3, ratio_q1, ratio_q3;
	int valid;				/* 0: ratio not meaningful, see reason */
	char reason[OVL_REASON_LEN];		/* ovl_reason_name(), "" when valid */
	int rounds_valid, rounds;		/* -1 when not recorded */
	double ratio_raw, lat0;
	double tcomp_cpu;			/* median measured T_comp, NAN if not */
};

/*
 * Parse one data line (not the header). Empty fields read as NAN. Rows
 * of older files are accepted: 13 columns (no quartiles: NAN) or 17 (no
 * validity columns: a negative ratio then reads as invalid, "negative",
 * with the value in ratio_raw; rounds -1). Returns 0 or -1.
 */
int ovl_parse_row(const char *line, struct ovl_row *r);

/* The CSV line of @r (with its newline) into @buf; returns its length as snprintf. */
int ovl_format_row(char *buf, size_t len, const struct ovl_row *r);

/* A row that is an overlap point: not a base benchmark, not a T0 row. */
int ovl_is_grid_point(const struct ovl_row *r);

/*
 * Median ratio of benchmark @bench over the valid grid points of @rows:
 * over every point (@all) and over the rendezvous region (@rdv: size
 * greater than @rdv_threshold bytes). @n_all/@n_rdv get the counts of
 * valid points, @inv_all/@inv_rdv of the invalid ones (not valid, or no
 * ratio), which are left out of the medians; @inv_reason[OVL_*] counts
 * them by reason over the whole grid (OVL_NOREF also for a missing or
 * unknown reason). The medians are NAN when there are no valid points.
 * Over the rendezvous region also: @rdv0, the median of ratio0 (eq. 1 with
 * T_comm := T0, the same benchmark without computation), and @slow, the
 * median of T0 / T_comm: well above 1 when the transfer inside the
 * benchmark is much slower than in the ping-pong that gives T_comm, which
 * inflates the ratio.
 */
struct ovl_summary {
	double all, rdv, rdv0, slow;
	int n_all, n_rdv, inv_all, inv_rdv;
	int inv_reason[OVL_NREASONS];
};
struct ovl_summary ovl_summarize(const struct ovl_row *rows, int n, const char *bench,
				 size_t rdv_threshold);

#endif
