// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the overlap suite's own logic (overlap_stats.c) and of
 * bench/overlap-summary on a small CSV: statistics, equation 1, the
 * sqrt(2) grid, size parsing, reading rows back and the per-benchmark
 * summary. No MPI job needed. Last line "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "overlap_stats.h"
#include "expect.h"

EXPECT_COUNTERS;

static int near(double a, double b)
{
	return fabs(a - b) < 1e-9 * (1 + fabs(b));
}
#define NEAR(a, b) near((a), (b))

static void test_quartiles(void)
{
	double odd[] = { 5, 1, 4, 2, 3 };
	double even[] = { 40, 10, 30, 20 };
	double one[] = { 7 };
	struct ovl_quart q;

	q = ovl_quartiles(odd, 5);
	EXPECT(NEAR(q.med, 3) && NEAR(q.q1, 2) && NEAR(q.q3, 4), "odd %g %g %g", q.q1, q.med, q.q3);
	EXPECT(odd[0] == 1 && odd[4] == 5, "sorted in place");
	q = ovl_quartiles(even, 4);
	/* type 7: h = 3p -> q1 at 0.75 (17.5), median 25, q3 at 2.25 (32.5) */
	EXPECT(NEAR(q.med, 25) && NEAR(q.q1, 17.5) && NEAR(q.q3, 32.5),
	       "even %g %g %g", q.q1, q.med, q.q3);
	q = ovl_quartiles(one, 1);
	EXPECT(q.q1 == 7 && q.med == 7 && q.q3 == 7, "single sample");
	q = ovl_quartiles(one, 0);
	EXPECT(isnan(q.med), "no samples: NAN");
	{
		double v[] = { 3, 1, 2, 100 };

		EXPECT(NEAR(ovl_median(v, 4), 2.5), "median of even count averages the middle two");
	}
}

static void test_ratio(void)
{
	/* perfect overlap: the sequence lasts max(T_comm, T_comp) */
	EXPECT(NEAR(ovl_ratio_eq1(100, 100, 40), 0), "full overlap = 0");
	/* serialized: T_comm + T_comp */
	EXPECT(NEAR(ovl_ratio_eq1(140, 100, 40), 1), "serialized = 1 (comm longer)");
	EXPECT(NEAR(ovl_ratio_eq1(140, 40, 100), 1), "serialized = 1 (comp longer)");
	EXPECT(NEAR(ovl_ratio_eq1(120, 100, 40), 0.5), "half = 0.5");
	EXPECT(ovl_ratio_eq1(300, 100, 100) > 1.99, "worse than serialized > 1");
	EXPECT(isnan(ovl_ratio_eq1(10, 0, 5)), "T_comm 0: undefined");
	EXPECT(isnan(ovl_ratio_eq1(10, 5, -1)), "negative time: undefined");
	EXPECT(isnan(ovl_ratio_eq1(10, NAN, 5)), "NAN in, NAN out");
}

static void test_grid(void)
{
	double d[64];
	size_t s[64];
	int n;

	n = ovl_grid_double(1, 8, d, 64);
	EXPECT(n == 7, "1..8 us has 7 sqrt(2) steps, got %d", n);
	EXPECT(NEAR(d[1], sqrt(2)) && NEAR(d[6], 8), "values %g %g", d[1], d[6]);
	n = ovl_grid_double(1, 7.99, d, 64);
	EXPECT(n == 6, "max is inclusive only up to rounding, got %d", n);
	n = ovl_grid_double(1, 1e9, d, 5);
	EXPECT(n == 5, "capped at cap, got %d", n);
	EXPECT(ovl_grid_double(0, 8, d, 64) == 0 && ovl_grid_double(8, 1, d, 64) == 0,
	       "empty for min 0 or min > max");

	n = ovl_grid_size(1024, 4096, s, 64);
	EXPECT(n == 5 && s[0] == 1024 && s[1] == 1448 && s[2] == 2048 && s[3] == 2896 &&
	       s[4] == 4096, "1K..4K: n %d, %zu %zu %zu %zu %zu", n, s[0], s[1], s[2], s[3], s[4]);
	n = ovl_grid_size(16384, 4 << 20, s, 64);
	EXPECT(n == 17 && s[12] == 1 << 20 && s[16] == 4 << 20,
	       "16K..4M: 17 points through 1M, got %d", n);
	n = ovl_grid_size(1, 4, s, 64);
	EXPECT(n == 4 && s[0] == 1 && s[1] == 2 && s[2] == 3 && s[3] == 4,
	       "tiny sizes rounded and unique: n %d", n);
	EXPECT(ovl_grid_size(0, 4, s, 64) == 0, "size 0 start is empty");
}

static void test_parse_size(void)
{
	size_t v = 0;

	EXPECT(!ovl_parse_size("64K", &v) && v == 65536, "64K -> %zu", v);
	EXPECT(!ovl_parse_size("1M", &v) && v == 1048576, "1M");
	EXPECT(!ovl_parse_size("1.5M", &v) && v == 1572864, "1.5M");
	EXPECT(!ovl_parse_size("4096", &v) && v == 4096, "plain bytes");
	EXPECT(!ovl_parse_size("2KiB", &v) && v == 2048, "KiB");
	EXPECT(!ovl_parse_size("1g", &v) && v == 1073741824, "lower-case g");
	EXPECT(!ovl_parse_size("0", &v) && v == 0, "zero");
	EXPECT(ovl_parse_size("", &v) == -1, "empty rejected");
	EXPECT(ovl_parse_size("12x", &v) == -1, "junk rejected");
	EXPECT(ovl_parse_size("K", &v) == -1, "no number rejected");
	EXPECT(ovl_parse_size("-1", &v) == -1, "negative rejected");
	EXPECT(ovl_parse_size("0.5", &v) == -1, "fraction of a byte rejected");
	EXPECT(ovl_parse_size("1e300", &v) == -1, "overflow rejected");
}

static void test_eta(void)
{
	EXPECT(NEAR(ovl_eta(10, 40, 5), 15), "a quarter done in 5 s: 15 s left");
	EXPECT(NEAR(ovl_eta(40, 40, 5), 0), "done: 0 left");
	EXPECT(ovl_eta(0, 40, 5) < 0, "nothing done yet: unknown");
	EXPECT(ovl_eta(50, 40, 5) < 0, "inconsistent: unknown");
}

static void test_parse_row(void)
{
	struct ovl_row r;

	EXPECT(!ovl_parse_row("receiver,1048576,800.000,790.500,1590.100,1.012,0,0,760.00,1.05,4.2,1550.000,0.98,1500.000,1650.000,0.900,1.100\n", &r),
	       "full row");
	EXPECT(!strcmp(r.bench, "receiver") && r.size == 1048576 && NEAR(r.comp, 800) &&
	       NEAR(r.tcomm, 790.5) && NEAR(r.tmeas, 1590.1) && NEAR(r.ratio, 1.012) &&
	       r.threads == 0 && r.errors == 0 && NEAR(r.t0, 760) && NEAR(r.ratio0, 1.05) &&
	       NEAR(r.iqr_pct, 4.2) && NEAR(r.tmin, 1550) && NEAR(r.ratio_min, 0.98) &&
	       NEAR(r.tmeas_q1, 1500) && NEAR(r.tmeas_q3, 1650) && NEAR(r.ratio_q1, 0.9) &&
	       NEAR(r.ratio_q3, 1.1), "fields");
	EXPECT(!ovl_parse_row("pingpong,65536,0.000,50.000,50.000,,0,0,,,3.0,45.000,,48.000,52.000,,", &r),
	       "empty fields");
	EXPECT(isnan(r.ratio) && isnan(r.t0) && isnan(r.ratio_q1) && NEAR(r.tmeas_q3, 52),
	       "empty fields read as NAN");
	EXPECT(!ovl_parse_row("nload,4096,0.000,10.000,25.000,2.500,2,3,,,10.0,20.000,2.000", &r),
	       "old 13-column row");
	EXPECT(r.threads == 2 && r.errors == 3 && isnan(r.tmeas_q1) && isnan(r.ratio_q3),
	       "13 columns: quartiles NAN");
	EXPECT(r.valid && !r.reason[0] && r.rounds == -1 && NEAR(r.ratio_raw, 2.5) && isnan(r.lat0),
	       "older rows: valid unless negative, rounds unknown");
	EXPECT(ovl_parse_row("sender,64K,1,2,3,x,0,0,,,1,1,", &r) == -1, "bad number");
	EXPECT(!ovl_parse_row("sender,64K,1,2,3,-0.5,0,0,,,1,1,,1,2,3,4", &r) && !r.valid &&
	       isnan(r.ratio) && NEAR(r.ratio_raw, -0.5) && !strcmp(r.reason, "negative"),
	       "a 17-column row with a negative ratio reads as invalid (negative)");
	EXPECT(ovl_parse_row("sender,10,1,2,3,0.1,0,0,,,1,1,,1,2,3,4,1,,10,10,0.1,2,9,9", &r) == -1,
	       "extra column");
	EXPECT(ovl_parse_row("sender,10,1,2,3,0.1,0,0,,,1,1,,1,2,3,4,1", &r) == -1,
	       "18 columns: truncated");
	EXPECT(ovl_parse_row("sender,10,1,2,3,,0,0,,,1,1,,1,2,3,4,0,bogus,1,10,,,", &r) == -1,
	       "unknown reason rejected");
	EXPECT(ovl_parse_row("sender,10,1,2,3,0.1,0,0,,,1,1,,1,2,3,4,1,negative,10,10,0.1,2,1", &r) == -1,
	       "a valid row with a reason rejected");
	EXPECT(ovl_parse_row("sender,10,1,2,3,0.1,0,0,,,1,1,,1,2,3,4,2,,10,10,0.1,2,1", &r) == -1,
	       "valid flag other than 0/1 rejected");
	EXPECT(ovl_parse_row("sender,10,1,2,3", &r) == -1, "truncated row");
	EXPECT(ovl_parse_row(",10,1,2,3,0.1,0,0,,,1,1,", &r) == -1, "no benchmark name");
	EXPECT(ovl_parse_row("averyveryverylongbenchname,10,1,2,3,0.1,0,0,,,1,1,", &r) == -1,
	       "name too long");
}

static void row(struct ovl_row *r, const char *b, size_t size, double comp, double ratio)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->bench, b);
	r->size = size;
	r->comp = comp;
	r->ratio = ratio;
	r->t0 = r->ratio0 = NAN;	/* as read from an empty field */
	r->valid = 1;
	r->rounds = r->rounds_valid = -1;
}

static void row_invalid(struct ovl_row *r, const char *b, size_t size, double comp, const char *why)
{
	row(r, b, size, comp, NAN);
	r->valid = 0;
	strcpy(r->reason, why);
}

static void test_summary(void)
{
	struct ovl_row rows[10];
	struct ovl_summary s;

	row(&rows[0], "pingpong", 65536, 0, NAN);	/* base benchmark */
	row(&rows[1], "receiver", 4096, 0, NAN);	/* T0 row */
	row(&rows[2], "receiver", 4096, 10, 0.1);	/* eager */
	row(&rows[3], "receiver", 4096, 20, 0.2);
	row(&rows[4], "receiver", 65536, 10, 0.9);	/* rendezvous */
	row(&rows[5], "receiver", 65536, 20, 1.0);
	row(&rows[6], "receiver", 1048576, 10, 0.8);
	row(&rows[7], "receiver", 1048576, 20, NAN);	/* undefined ratio: skipped */
	row(&rows[8], "sender", 65536, 10, 0.0);
	row(&rows[9], "nload", 65536, 0, 3.0);		/* nload rows have no T_comp */

	EXPECT(ovl_is_grid_point(&rows[2]) && !ovl_is_grid_point(&rows[0]) &&
	       !ovl_is_grid_point(&rows[1]) && ovl_is_grid_point(&rows[9]), "grid points");
	s = ovl_summarize(rows, 10, "receiver", 8192);
	EXPECT(s.n_all == 5 && s.n_rdv == 3, "counts %d %d", s.n_all, s.n_rdv);
	EXPECT(NEAR(s.all, 0.8) && NEAR(s.rdv, 0.9), "medians all %g rdv %g", s.all, s.rdv);
	s = ovl_summarize(rows, 10, "nload", 8192);
	EXPECT(s.n_all == 1 && NEAR(s.rdv, 3.0), "nload counted without T_comp");
	s = ovl_summarize(rows, 10, "both", 0);
	EXPECT(!s.n_all && isnan(s.all) && isnan(s.rdv), "absent benchmark: NAN");
	EXPECT(rows[4].ratio == 0.9 && rows[6].ratio == 0.8, "input rows untouched");

	/* T0 / T_comm and ratio0 over the rendezvous region */
	for (int i = 4; i <= 6; i++) {
		rows[i].tcomm = 100;
		rows[i].t0 = i == 4 ? 300 : 1000;
		rows[i].ratio0 = i * 0.1;
	}
	s = ovl_summarize(rows, 10, "receiver", 8192);
	EXPECT(NEAR(s.slow, 10) && NEAR(s.rdv0, 0.5), "slow %g rdv0 %g", s.slow, s.rdv0);
	s = ovl_summarize(rows, 10, "sender", 8192);
	EXPECT(isnan(s.slow) && isnan(s.rdv0), "no T0: unknown");
}

/* robust reference: pooled blocks, one poisoned block cannot move it */
static void test_ref(void)
{
	double v[260];
	struct ovl_ref r;
	int n = 0;

	/* the first block measured while the machine was busy: 546 us */
	for (int i = 0; i < 20; i++)
		v[n++] = 546 + i;
	r = ovl_ref_of(v, n);
	EXPECT(NEAR(r.med, 555.5) && r.n == 20, "one block alone is what it is: %g", r.med);
	/* ... then 5 rounds before each of 48 points at 1.6 us */
	for (int k = 0; k < 48; k++)
		for (int i = 0; i < 5; i++)
			v[n++] = 1.5 + 0.05 * i;
	r = ovl_ref_of(v, n);
	EXPECT(r.n == 260 && NEAR(r.med, 1.6) && NEAR(r.q1, 1.55) && NEAR(r.min, 1.5),
	       "pooled: median %g q1 %g min %g of %d", r.med, r.q1, r.min, r.n);
	EXPECT(v[0] == 546 && NEAR(v[259], 1.7), "input left unsorted");
	/* a slow mode in most rounds (kprog's 0-byte ping-pong under load: 60 %) */
	for (int i = 0; i < 100; i++)
		v[i] = i < 60 ? 800 + i : 5 + 0.01 * i;
	r = ovl_ref_of(v, 100);
	EXPECT(r.med > 800 && r.q1 < 6 && NEAR(r.min, 5.6), "the median is the slow mode (%g), the lower "
	       "quartile still the latency (%g)", r.med, r.q1);
	v[0] = 546;
	v[2] = 548;
	v[1] = NAN;
	r = ovl_ref_of(v, 3);
	EXPECT(r.n == 2 && NEAR(r.med, 547), "NAN samples skipped: n %d med %g", r.n, r.med);
	r = ovl_ref_of(v, 0);
	EXPECT(r.n == 0 && isnan(r.med) && isnan(r.q1) && isnan(r.min), "empty: NAN");
}

static void test_ratio_checked(void)
{
	int neg = 0;

	EXPECT(NEAR(ovl_ratio_checked(140, 100, 90, 40, &neg), 1) && !neg, "positive as is");
	/* 98 vs T_comm 100 (fastest 96), comp 40: -0.05; against T_comm's fastest >= 0 */
	EXPECT(ovl_ratio_checked(98, 100, 96, 40, &neg) == 0 && !neg,
	       "negative within the spread reads 0");
	/* 78 vs 100 (fastest 95): below the ideal even with T_comm's fastest round */
	EXPECT(isnan(ovl_ratio_checked(78, 100, 95, 40, &neg)) && neg,
	       "negative beyond the spread: NAN, flagged");
	neg = 0;
	EXPECT(ovl_ratio_checked(98, 100, NAN, 40, &neg) != 0 && neg,
	       "no spread known: any negative is beyond it");
	neg = 0;
	EXPECT(isnan(ovl_ratio_checked(98, NAN, 96, 40, &neg)) && !neg, "missing T_comm: NAN, not flagged");
}

/* rounds of @n at @v0 + @step * i */
static void ramp(double *v, int n, double v0, double step)
{
	for (int i = 0; i < n; i++)
		v[i] = v0 + step * i;
}

static void test_eval_point(void)
{
	struct ovl_ref lat = { 2, 2.2, 1.5, 1000 }, tcomm = { 100, 105, 90, 40 };	/* q1, med, min, n */
	struct ovl_point_in in = { .n = 10, .sub_lat0 = 1, .lat0 = lat, .tcomm = tcomm };
	struct ovl_point p;
	double seq[10];

	in.seq = seq;

	/* serialized receiver side: sequence = CTS latency + T_comp + transfer */
	ramp(seq, 10, 2 + 200 + 100, 0);
	in.comp = 200;
	p = ovl_eval_point(&in);
	EXPECT(!p.reason && p.nvalid == 10 && NEAR(p.tmeas, 300) && NEAR(p.ratio, 1) &&
	       NEAR(p.lat0_used, 2) && NEAR(p.ratio_raw, 1), "serialized: ratio %g", p.ratio);

	/* perfect overlap, computation longer: the latency hides in it (cap) */
	ramp(seq, 10, 200.5, 0.1);
	p = ovl_eval_point(&in);
	EXPECT(!p.reason && p.ratio >= 0 && p.ratio < 0.01 && p.lat0_used < 1,
	       "latency not subtracted twice: ratio %g, lat0 used %g", p.ratio, p.lat0_used);
	EXPECT(p.tmeas >= in.comp, "T_measured %g never below T_comp", p.tmeas);

	/* the issue: a poisoned 546 us latency (and a flat 1 ms T_comm) */
	in.lat0 = (struct ovl_ref){ 546, 550, 500, 200 };
	in.tcomm = (struct ovl_ref){ 1000, 1010, 980, 40 };
	in.comp = 32;
	ramp(seq, 10, 420, 10);		/* sequences 420..510 us: all shorter than lat0 */
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_LAT0_GT_SEQ && p.nvalid == 0 && isnan(p.ratio),
	       "lat0 above every sequence: invalid (%s), no ratio", ovl_reason_name(p.reason));
	ramp(seq, 10, 600, 40);		/* 600..960 us: latency fits, ratio hugely negative */
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_NEGATIVE && isnan(p.ratio) && p.ratio_raw < -3,
	       "-3.3-like ratio: invalid (%s), raw %g kept for diagnosis", ovl_reason_name(p.reason),
	       p.ratio_raw);
	/* the same rounds with the pooled references of a quiet run */
	in.lat0 = lat;
	in.tcomm = (struct ovl_ref){ 500, 520, 450, 40 };
	p = ovl_eval_point(&in);
	EXPECT(!p.reason && p.ratio > 0, "robust references: valid, ratio %g", p.ratio);

	/* too few valid rounds: 6 of 10 shorter than the latency */
	in.lat0 = (struct ovl_ref){ 50, 55, 40, 200 };
	in.tcomm = tcomm;
	in.comp = 10;
	ramp(seq, 10, 30, 0);
	ramp(seq + 6, 4, 150, 10);
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_LAT0_GT_SEQ && p.nvalid == 4 && isnan(p.ratio),
	       "4 of 10 valid: invalid (%s, %d)", ovl_reason_name(p.reason), p.nvalid);
	EXPECT(NEAR(p.tmeas, 165 - 50), "T_measured of the valid rounds only: %g", p.tmeas);
	ramp(seq, 4, 30, 0);
	ramp(seq + 4, 6, 150, 10);
	p = ovl_eval_point(&in);
	EXPECT(!p.reason && p.nvalid == 6 && NEAR(p.tmeas, 175 - 50),
	       "6 of 10 valid: valid, median of those (%g)", p.tmeas);

	/* negative beyond the spread: the transfer is shorter than T_comm */
	in.lat0 = lat;
	in.comp = 10;
	ramp(seq, 10, 2 + 77, 0.2);	/* T 77..78.8 vs T_comm 100 (fastest 90) */
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_NEGATIVE && p.nvalid == 10 && p.ratio_raw < -1 && isnan(p.rq1) &&
	       isnan(p.rmin), "below the ideal: invalid (%s), raw %g", ovl_reason_name(p.reason),
	       p.ratio_raw);
	/* ... within the spread: reads 0 */
	ramp(seq, 10, 2 + 97, 0.2);	/* T 97..98.8, median 97.9 >= T_comm's fastest 90 */
	p = ovl_eval_point(&in);
	EXPECT(!p.reason && p.ratio == 0 && p.ratio_raw < 0 && p.rq1 == 0 && p.rq3 == 0,
	       "within the spread: 0 (raw %g)", p.ratio_raw);

	/* the busy loop ran much faster than calibrated: comp-short */
	in.sub_lat0 = 0;
	in.comp = 200;
	ramp(seq, 10, 150, 1);
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_COMP_SHORT && p.nvalid == 0, "comp-short: %s", ovl_reason_name(p.reason));
	ramp(seq, 10, 185, 0);		/* within the 10 % slack */
	p = ovl_eval_point(&in);
	EXPECT(p.nvalid == 10 && !p.reason && p.ratio == 0, "within the slack: %s %g",
	       ovl_reason_name(p.reason), p.ratio);

	/* the host took the vCPU away during the computation: its CPU time (under
	 * emulation it includes that) is the round's T_comp, and the stretch cancels */
	{
		double cpu[10];

		in.sub_lat0 = 1;
		in.comp = 200;
		ramp(seq, 10, 2 + 400 + 100, 0);	/* computation stretched to 400, then the transfer */
		p = ovl_eval_point(&in);
		EXPECT(!p.reason && NEAR(p.ratio, 3), "nominal T_comp: the host's share reads as overhead (%g)",
		       p.ratio);
		ramp(cpu, 10, 400, 0);
		in.cpu = cpu;
		p = ovl_eval_point(&in);
		EXPECT(!p.reason && NEAR(p.ratio, 1) && NEAR(p.tcomp, 400),
		       "measured T_comp: serialized reads 1 (%g), T_comp %g", p.ratio, p.tcomp);
		ramp(seq, 10, 2 + 401, 0);		/* overlapped inside the stretched computation */
		p = ovl_eval_point(&in);
		EXPECT(!p.reason && p.ratio < 0.02, "measured T_comp: overlap reads 0 (%g)", p.ratio);
		cpu[3] = NAN;				/* a round without its measure: nominal */
		ramp(seq, 10, 2 + 400 + 100, 0);
		p = ovl_eval_point(&in);
		EXPECT(!p.reason && NEAR(p.ratio, 1), "median unaffected by one nominal round (%g)", p.ratio);
		in.cpu = NULL;
	}

	/* missing references */
	in.tcomm.q1 = NAN;
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_NOREF && isnan(p.ratio), "no T_comm: no-ref");
	in.tcomm = tcomm;
	in.sub_lat0 = 1;
	in.lat0.q1 = NAN;
	p = ovl_eval_point(&in);
	EXPECT(p.reason == OVL_NOREF, "no latency to subtract: no-ref");

	/* a T0 row: no ratio, but T_measured and validity */
	in.lat0 = lat;
	in.comp = 0;
	ramp(seq, 10, 82, 0);
	p = ovl_eval_point(&in);
	EXPECT(!p.reason && NEAR(p.tmeas, 80) && isnan(p.ratio) && isnan(p.ratio_raw),
	       "T0: %g, no ratio", p.tmeas);
	in.n = 0;
	p = ovl_eval_point(&in);
	EXPECT(p.reason && isnan(p.tmeas), "no rounds: invalid");
}

/* bench/overlap writes, overlap-summary reads: every field survives */
static void test_csv_roundtrip(void)
{
	struct ovl_row w, r;
	char line[1024];

	memset(&w, 0, sizeof(w));
	strcpy(w.bench, "receiver");
	w.size = 1048576;
	w.comp = 724.077;
	w.tcomm = 700.5;
	w.tmeas = 600.25;
	w.ratio = NAN;
	w.threads = 0;
	w.errors = 3;
	w.t0 = 650.5;
	w.ratio0 = NAN;
	w.iqr_pct = 12.5;
	w.tmin = 590;
	w.ratio_min = NAN;
	w.tmeas_q1 = 595;
	w.tmeas_q3 = 610;
	w.ratio_q1 = w.ratio_q3 = NAN;
	w.valid = 0;
	strcpy(w.reason, "negative");
	w.rounds_valid = 9;
	w.rounds = 10;
	w.ratio_raw = -0.143;
	w.lat0 = 1.625;
	w.tcomp_cpu = 731.5;
	ovl_format_row(line, sizeof(line), &w);
	EXPECT(!strcmp(line, "receiver,1048576,724.077,700.500,600.250,,0,3,650.50,,12.5,590.000,,"
			     "595.000,610.000,,,0,negative,9,10,-0.143,1.625,731.500\n"), "written: %s", line);
	EXPECT(!ovl_parse_row(line, &r), "read back");
	EXPECT(!strcmp(r.bench, w.bench) && r.size == w.size && NEAR(r.comp, w.comp) &&
	       NEAR(r.tcomm, w.tcomm) && NEAR(r.tmeas, w.tmeas) && isnan(r.ratio) && r.errors == 3 &&
	       NEAR(r.t0, w.t0) && isnan(r.ratio0) && NEAR(r.iqr_pct, 12.5) && NEAR(r.tmin, 590) &&
	       NEAR(r.tmeas_q1, 595) && NEAR(r.tmeas_q3, 610) && isnan(r.ratio_q3),
	       "the measurement fields");
	EXPECT(!r.valid && !strcmp(r.reason, "negative") && r.rounds_valid == 9 && r.rounds == 10 &&
	       NEAR(r.ratio_raw, -0.143) && NEAR(r.lat0, 1.625) && NEAR(r.tcomp_cpu, 731.5),
	       "the validity fields");

	w.valid = 1;
	w.reason[0] = 0;
	w.ratio = 0.071;
	w.rounds_valid = w.rounds = -1;	/* not recorded */
	w.ratio_raw = w.lat0 = w.tcomp_cpu = NAN;
	ovl_format_row(line, sizeof(line), &w);
	EXPECT(!ovl_parse_row(line, &r) && r.valid && !r.reason[0] && NEAR(r.ratio, 0.071) &&
	       r.rounds == -1 && r.rounds_valid == -1 && isnan(r.lat0) && isnan(r.tcomp_cpu),
	       "valid row: %s", line);
	for (int k = OVL_OK; k < OVL_NREASONS; k++)
		EXPECT(ovl_reason_parse(ovl_reason_name(k)) == k, "reason %d by name", k);
	EXPECT(ovl_reason_parse("busy") == -1, "unknown reason");
	EXPECT(ovl_format_row(line, 8, &w) > 8 && strlen(line) == 7, "truncated safely");
}

static void test_summary_invalid(void)
{
	struct ovl_row rows[8];
	struct ovl_summary s;

	row(&rows[0], "receiver", 65536, 10, 0.9);
	row(&rows[1], "receiver", 65536, 20, 1.0);
	row(&rows[2], "receiver", 4096, 10, 0.2);
	row_invalid(&rows[3], "receiver", 65536, 40, "negative");
	row_invalid(&rows[4], "receiver", 65536, 80, "lat0>seq");
	row_invalid(&rows[5], "receiver", 4096, 40, "negative");
	row(&rows[6], "receiver", 65536, 160, NAN);	/* valid flag but no ratio */
	row_invalid(&rows[7], "receiver", 65536, 0, "lat0>seq");	/* a T0 row: not a point */
	s = ovl_summarize(rows, 8, "receiver", 8192);
	EXPECT(s.n_all == 3 && s.n_rdv == 2 && s.inv_all == 4 && s.inv_rdv == 3,
	       "valid %d/%d, invalid %d/%d", s.n_all, s.n_rdv, s.inv_all, s.inv_rdv);
	EXPECT(NEAR(s.rdv, 0.95) && NEAR(s.all, 0.9), "medians of the valid points only: %g %g",
	       s.rdv, s.all);
	EXPECT(s.inv_reason[OVL_NEGATIVE] == 2 && s.inv_reason[OVL_LAT0_GT_SEQ] == 1 &&
	       s.inv_reason[OVL_NOREF] == 1, "reasons counted");
	for (int i = 0; i < 3; i++)
		rows[i].valid = 0, strcpy(rows[i].reason, "lat0>seq");
	s = ovl_summarize(rows, 8, "receiver", 8192);
	EXPECT(!s.n_all && isnan(s.all) && isnan(s.rdv) && s.inv_all == 7,
	       "nothing valid: no median, not 0");
	/* ratio0 below 0 (older files) stays out of its median */
	row(&rows[0], "receiver", 65536, 10, 0.9);
	rows[0].ratio0 = -2;
	row(&rows[1], "receiver", 65536, 20, 1.0);
	rows[1].ratio0 = 0.8;
	s = ovl_summarize(rows, 2, "receiver", 8192);
	EXPECT(NEAR(s.rdv0, 0.8), "negative ratio0 left out: %g", s.rdv0);
}

/*
 * A receiver grid: one eager point, two rendezvous points (T_measured,ratio
 * given), one invalid rendezvous point (the ratio of its rounds was
 * negative beyond the spread) and, in the old 17-column format, nothing more.
 */
static void write_csv(const char *path, const char *rdv1, const char *rdv2)
{
	FILE *f = fopen(path, "w");

	fprintf(f, "%s\n", OVL_CSV_HEADER);
	fprintf(f, "lat0,0,0,1.6,1.6,,0,0,,,5,1.2,,1.5,1.7,,,1,,200,200,,,\n");
	fprintf(f, "receiver,4096,10,10,15,0.5,0,0,,,1,1,,,,,,1,,10,10,0.5,1.6,10\n");
	fprintf(f, "receiver,65536,10,10,%s,0,0,,,1,1,,,,,,1,,10,10,,1.6,10\n", rdv1);
	fprintf(f, "receiver,65536,20,10,%s,0,0,,,1,1,,,,,,1,,10,10,,1.6,20\n", rdv2);
	fprintf(f, "receiver,65536,40,10,30,,0,0,,,1,1,,,,,,0,negative,10,10,-3.300,1.6,40\n");
	fclose(f);
}

/* bench/overlap-summary end to end on two small CSVs */
static void test_summary_tool(void)
{
	char dir[] = "/tmp/test_overlap.XXXXXX", cmd[1024], out[4096];
	char p[300], k[300];
	FILE *f;
	size_t n;

	if (!mkdtemp(dir)) {
		EXPECT(0, "mkdtemp");
		return;
	}
	snprintf(p, sizeof(p), "%s/plain.csv", dir);
	snprintf(k, sizeof(k), "%s/kprog.csv", dir);
	write_csv(p, "19,0.9", "29,0.9");
	write_csv(k, "11,0.1", "21,0.1");
	snprintf(cmd, sizeof(cmd), "./overlap-summary --threshold 8K %s %s", p, k);
	f = popen(cmd, "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	out[n] = 0;
	EXPECT(f && pclose(f) == 0, "overlap-summary ran: %s", out);
	EXPECT(strstr(out, "receiver   |    0.90    0.10       2/2     1/1 |    0.90    0.10       3/3     1/1"),
	       "summary line (invalid points counted, left out):\n%s", out);
	EXPECT(strstr(out, "# plain: 1 of 4 grid points invalid, left out of the medians: negative 1") &&
	       strstr(out, "# kprog: 1 of 4 grid points invalid"), "how many, and why:\n%s", out);
	EXPECT(!strstr(out, "-3.3") && !strstr(out, " -0") && !strstr(out, " -1"),
	       "no negative median printed:\n%s", out);
	EXPECT(!strstr(out, "overstate"), "no warning when T0 is near T_comm:\n%s", out);
	f = fopen(k, "a");
	fprintf(f, "receiver,65536,garbage\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "./overlap-summary %s %s 2>&1", p, k);
	f = popen(cmd, "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	out[n] = 0;
	EXPECT(f && WEXITSTATUS(pclose(f)) == 1 && strstr(out, "kprog.csv:7"),
	       "bad row reported with its line: %s", out);
	unlink(p);
	unlink(k);
	rmdir(dir);
}

int main(void)
{
	test_quartiles();
	test_ratio();
	test_grid();
	test_parse_size();
	test_eta();
	test_parse_row();
	test_summary();
	test_ref();
	test_ratio_checked();
	test_eval_point();
	test_csv_roundtrip();
	test_summary_invalid();
	test_summary_tool();
	return EXPECT_SUMMARY();
}
