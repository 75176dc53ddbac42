// SPDX-License-Identifier: GPL-2.0
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
	EXPECT(ovl_parse_row("sender,64K,1,2,3,x,0,0,,,1,1,", &r) == -1, "bad number");
	EXPECT(ovl_parse_row("sender,10,1,2,3,0.1,0,0,,,1,1,,1,2,3,4,5", &r) == -1, "extra column");
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

/* a receiver grid: one eager point, two rendezvous points (T_measured,ratio given) */
static void write_csv(const char *path, const char *rdv1, const char *rdv2)
{
	FILE *f = fopen(path, "w");

	fprintf(f, "%s\n", OVL_CSV_HEADER);
	fprintf(f, "receiver,4096,10,10,15,0.5,0,0,,,1,1,,,,,\n");
	fprintf(f, "receiver,65536,10,10,%s,0,0,,,1,1,,,,,\n", rdv1);
	fprintf(f, "receiver,65536,20,10,%s,0,0,,,1,1,,,,,\n", rdv2);
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
	EXPECT(strstr(out, "receiver   |    0.90    0.10         2/2 |    0.90    0.10         3/3"),
	       "summary line:\n%s", out);
	EXPECT(!strstr(out, "overstate"), "no warning when T0 is near T_comm:\n%s", out);
	f = fopen(k, "a");
	fprintf(f, "receiver,65536,garbage\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "./overlap-summary %s %s 2>&1", p, k);
	f = popen(cmd, "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	out[n] = 0;
	EXPECT(f && WEXITSTATUS(pclose(f)) == 1 && strstr(out, "kprog.csv:5"),
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
	test_summary_tool();
	return EXPECT_SUMMARY();
}
