// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the latency benchmark's own logic (latency_stats.c,
 * latency_opts.c) and of bench/latency-table on small CSVs: statistics,
 * size lists, options, the batch plan, the kprog status of a job, CSV rows
 * written and read back, merging repetitions, the side-by-side table. No
 * MPI job needed. Last line "N passed, N failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "latency_opts.h"
#include "latency_stats.h"
#include "expect.h"

EXPECT_COUNTERS;

static int near(double a, double b)
{
	return fabs(a - b) < 1e-9 * (1 + fabs(b));
}
#define NEAR(a, b) near((a), (b))

static void test_stat(void)
{
	double odd[] = { 5, 1, 4, 2, 3 }, even[] = { 40, 10, 30, 20 }, one[] = { 7 };
	struct lat_stat s;

	s = lat_stat_of(odd, 5);
	EXPECT(NEAR(s.med, 3) && NEAR(s.q1, 2) && NEAR(s.q3, 4), "odd %g %g %g", s.q1, s.med, s.q3);
	EXPECT(s.min == 1 && s.max == 5 && NEAR(s.mean, 3) && s.n == 5, "odd min/max/mean/n");
	EXPECT(odd[0] == 1 && odd[4] == 5, "sorted in place");
	s = lat_stat_of(even, 4);
	/* type 7: q1 at h = 0.75 (17.5), median 25, q3 at 2.25 (32.5) */
	EXPECT(NEAR(s.med, 25) && NEAR(s.q1, 17.5) && NEAR(s.q3, 32.5), "even %g %g %g", s.q1, s.med, s.q3);
	s = lat_stat_of(one, 1);
	EXPECT(s.q1 == 7 && s.med == 7 && s.q3 == 7 && s.min == 7 && s.max == 7, "one sample");
	s = lat_stat_of(one, 0);
	EXPECT(isnan(s.med) && isnan(s.min) && isnan(s.mean) && s.n == 0, "no samples: NAN");
	{
		/* one outlier batch moves the mean, not the median */
		double v[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 100 };

		s = lat_stat_of(v, 10);
		EXPECT(s.med == 1 && s.q3 == 1 && NEAR(s.mean, 10.9), "outlier: med %g mean %g", s.med, s.mean);
	}
}

static void test_sizes(void)
{
	size_t s[LAT_MAX_SIZES], v;
	char buf[256];
	int n;

	EXPECT(!lat_parse_size("0", &v) && v == 0, "0");
	EXPECT(!lat_parse_size("4096", &v) && v == 4096, "4096");
	EXPECT(!lat_parse_size("64K", &v) && v == 65536, "64K");
	EXPECT(!lat_parse_size("1m", &v) && v == 1048576, "1m");
	EXPECT(!lat_parse_size("1024M", &v) && v == LAT_MAX_SIZE, "1024M is the limit");
	EXPECT(lat_parse_size("1025M", &v) == -1, "above the limit");
	EXPECT(lat_parse_size("1.5K", &v) == -1 && lat_parse_size("", &v) == -1 &&
	       lat_parse_size("-1", &v) == -1 && lat_parse_size("2G", &v) == -1 &&
	       lat_parse_size("8 ", &v) == -1 && lat_parse_size("K", &v) == -1,
	       "junk refused");

	n = lat_parse_sizes("0..64K", s, LAT_MAX_SIZES);
	EXPECT(n == 18 && s[0] == 0 && s[1] == 1 && s[2] == 2 && s[17] == 65536, "0..64K: %d", n);
	n = lat_parse_sizes("1..4096", s, LAT_MAX_SIZES);
	EXPECT(n == 13 && s[0] == 1 && s[12] == 4096, "1..4096: %d", n);
	n = lat_parse_sizes("3..16", s, LAT_MAX_SIZES);
	EXPECT(n == 4 && s[0] == 3 && s[1] == 4 && s[2] == 8 && s[3] == 16, "3..16: LO then powers of two");
	n = lat_parse_sizes("8..8", s, LAT_MAX_SIZES);
	EXPECT(n == 1 && s[0] == 8, "8..8");
	n = lat_parse_sizes("64,8,8,1K", s, LAT_MAX_SIZES);
	EXPECT(n == 3 && s[0] == 8 && s[1] == 64 && s[2] == 1024, "sorted, unique: %d", n);
	n = lat_parse_sizes("0..8,4..64", s, LAT_MAX_SIZES);
	EXPECT(n == 8 && s[7] == 64, "overlapping ranges merged: %d", n);
	EXPECT(lat_parse_sizes("8..1", s, LAT_MAX_SIZES) == -1, "LO > HI");
	EXPECT(lat_parse_sizes("", s, LAT_MAX_SIZES) == -1 && lat_parse_sizes(NULL, s, 4) == -1, "empty");
	EXPECT(lat_parse_sizes("8,,9", s, LAT_MAX_SIZES) == -1 && lat_parse_sizes("8,", s, LAT_MAX_SIZES) == -1 &&
	       lat_parse_sizes(",8", s, LAT_MAX_SIZES) == -1, "empty items");
	EXPECT(lat_parse_sizes("8,x", s, LAT_MAX_SIZES) == -1 && lat_parse_sizes("1...8", s, LAT_MAX_SIZES) == -1,
	       "bad items");
	EXPECT(lat_parse_sizes("0..64K", s, 10) == -1, "more than cap");

	{
		size_t f[] = { 0, 1, 1024, 1536, 65536, 1048576 };

		lat_format_sizes(f, 6, buf, sizeof(buf));
		EXPECT(!strcmp(buf, "0,1,1K,1536,64K,1M"), "format: %s", buf);
		lat_format_sizes(f, 6, buf, 6);
		EXPECT(strlen(buf) < 6, "format truncates safely: %s", buf);
		lat_format_sizes(f, 0, buf, sizeof(buf));
		EXPECT(buf[0] == 0, "format of nothing");
	}
}

/* lat_parse_opts on a NULL-terminated list of words */
static int parse(struct lat_opts *o, char *err, ...)
{
	char *argv[32] = { "latency" };
	int argc = 1;
	va_list ap;

	va_start(ap, err);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	err[0] = 0;
	return lat_parse_opts(argc, argv, o, err, 200);
}

static void test_opts(void)
{
	struct lat_opts o;
	char err[200];

	EXPECT(parse(&o, err, NULL) == 0, "no arguments");
	EXPECT(o.modes == (LAT_PINGPONG | LAT_NPSCALE | LAT_MSGRATE), "default: every mode");
	EXPECT(o.n_pp == 18 && o.pp_sizes[17] == 65536 && o.n_np == 1 && o.np_sizes[0] == 8 &&
	       o.n_mr == 13 && o.mr_sizes[12] == 4096, "default sizes");
	EXPECT(o.iters == 1000 && o.iters_large == 100 && o.warmup == 100 && o.warmup_large == 10 &&
	       o.large == 8192 && o.batches == 20, "osu-like defaults");
	EXPECT(o.window == 64 && o.ack == 4 && o.reps == 11 && o.mr_warmup == 10 && o.loops == 20 && !o.concurrent && o.time_limit == 0 &&
	       !o.csv && !strcmp(o.label, "run") && !o.help, "other defaults");

	EXPECT(parse(&o, err, "pingpong", NULL) == 0 && o.modes == LAT_PINGPONG, "positional mode");
	EXPECT(parse(&o, err, "--mode", "npscale,msgrate", NULL) == 0 &&
	       o.modes == (LAT_NPSCALE | LAT_MSGRATE), "--mode list");
	EXPECT(parse(&o, err, "pingpong,msgrate", "npscale", NULL) == 0 && o.modes == 7, "modes add up");
	EXPECT(parse(&o, err, "all", NULL) == 0 && o.modes == 7, "all");
	EXPECT(parse(&o, err, "pingpng", NULL) == -1 && strstr(err, "pingpng"), "bad mode: %s", err);

	EXPECT(parse(&o, err, "--sizes", "8,64", NULL) == 0 && o.n_pp == 2 && o.n_np == 2 && o.n_mr == 2,
	       "--sizes sets every mode");
	EXPECT(parse(&o, err, "--sizes", "8,64", "--np-sizes", "0", NULL) == 0 && o.n_pp == 2 &&
	       o.n_np == 1 && o.np_sizes[0] == 0, "--np-sizes overrides --sizes");
	EXPECT(parse(&o, err, "--pp-sizes=1K", "--mr-sizes", "2..8", NULL) == 0 && o.n_pp == 1 &&
	       o.pp_sizes[0] == 1024 && o.n_mr == 3, "--opt=value");
	EXPECT(parse(&o, err, "--sizes", "8..1", NULL) == -1 && strstr(err, "8..1"), "bad list: %s", err);

	EXPECT(parse(&o, err, "--iters", "5", "--batches=2", "--iters-large", "3", "--warmup", "0",
		     "--large", "4K", "--np-iters", "7", "--np-warmup", "1", "--np-batches", "3", NULL) == 0 &&
	       o.iters == 5 && o.batches == 2 && o.iters_large == 3 && o.warmup == 0 && o.large == 4096 &&
	       o.np_iters == 7 && o.np_warmup == 1 && o.np_batches == 3, "counts");
	EXPECT(parse(&o, err, "--window", "8", "--loops", "3", "--reps", "4", "--mr-warmup", "0",
		     "--ack", "0", "--concurrent", "--time-limit", "2.5", "--csv", "x.csv", "--label", "kprog",
		     NULL) == 0 && o.window == 8 && o.loops == 3 && o.reps == 4 && o.mr_warmup == 0 &&
	       o.ack == 0 && o.concurrent && NEAR(o.time_limit, 2.5) && !strcmp(o.csv, "x.csv") &&
	       !strcmp(o.label, "kprog"), "msgrate and output options");

	EXPECT(parse(&o, err, "pingpong", NULL) == 0 && !o.waitprof_ab, "no profiler A/B by default");
	EXPECT(parse(&o, err, "pingpong", "--waitprof-ab", NULL) == 0 && o.waitprof_ab,
	       "--waitprof-ab");
	EXPECT(parse(&o, err, "--iters", "0", NULL) == -1 && strstr(err, "--iters"), "iters 0: %s", err);
	EXPECT(parse(&o, err, "--iters", "12x", NULL) == -1, "iters junk");
	EXPECT(parse(&o, err, "--window", "1025", NULL) == -1, "window above 1024");
	EXPECT(parse(&o, err, "--ack", "65", NULL) == -1, "ack above 64");
	EXPECT(parse(&o, err, "--time-limit", "-1", NULL) == -1 && parse(&o, err, "--time-limit", "", NULL) == -1,
	       "bad time limit");
	EXPECT(parse(&o, err, "--label", "a,b", NULL) == -1 && parse(&o, err, "--label", "", NULL) == -1,
	       "label with a comma or empty (it is a CSV field)");
	EXPECT(parse(&o, err, "--bogus", NULL) == -1 && strstr(err, "unknown option --bogus"), "unknown: %s", err);
	EXPECT(parse(&o, err, "--bogus=1", NULL) == -1 && strstr(err, "unknown option"), "unknown with =");
	EXPECT(parse(&o, err, "--iters", NULL) == -1 && strstr(err, "needs a value"), "missing value: %s", err);
	EXPECT(parse(&o, err, "--iters", "3", "--help", "--bogus", NULL) == 0 && o.help, "--help wins");
	EXPECT(parse(&o, err, "-h", NULL) == 0 && o.help, "-h");
}

static void test_plan(void)
{
	int k, nb;

	lat_batch_plan(1000, 20, &k, &nb);
	EXPECT(k == 50 && nb == 20, "1000/20: %d x %d", nb, k);
	lat_batch_plan(100, 20, &k, &nb);
	EXPECT(k == 5 && nb == 20, "100/20: %d x %d", nb, k);
	lat_batch_plan(10, 20, &k, &nb);
	EXPECT(k == 1 && nb == 10, "fewer iterations than batches: %d x %d", nb, k);
	lat_batch_plan(7, 2, &k, &nb);
	EXPECT(k == 3 && nb == 2, "rounded down, never more than asked: %d x %d", nb, k);
	lat_batch_plan(0, 0, &k, &nb);
	EXPECT(k == 1 && nb == 1, "at least one round trip");
}

static void test_kprog_status(void)
{
	int active[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, none[4] = { 0 }, pass[6] = { 1, 0, 1, 0, 1, 0 };
	int part[4] = { 1, 1, 1, 0 };
	char w[LAT_WORD], d[256];

	EXPECT(lat_kprog_status(active, 4, w, sizeof(w), d, sizeof(d)) == 1 && !strcmp(w, "active") &&
	       strstr(d, "all 4 ranks"), "active: %s", d);
	EXPECT(lat_kprog_status(none, 2, w, sizeof(w), d, sizeof(d)) == 0 && !strcmp(w, "absent"), "absent");
	EXPECT(lat_kprog_status(pass, 3, w, sizeof(w), d, sizeof(d)) == 0 && !strcmp(w, "passthrough") &&
	       strstr(d, "NOT") == NULL && strstr(d, "not kprog"), "passthrough: %s", d);
	EXPECT(lat_kprog_status(part, 2, w, sizeof(w), d, sizeof(d)) == 0 && !strcmp(w, "partial") &&
	       strstr(d, "open on 1 of 2"), "partial: %s", d);
	EXPECT(lat_kprog_status(active, 0, w, sizeof(w), d, sizeof(d)) == 0, "no ranks is not active");
}

static struct lat_row mkrow(const char *label, const char *kprog, const char *mode, int np,
			    const char *pair, size_t size, double med)
{
	struct lat_row r;

	memset(&r, 0, sizeof(r));
	snprintf(r.label, sizeof(r.label), "%s", label);
	snprintf(r.kprog, sizeof(r.kprog), "%s", kprog);
	snprintf(r.mode, sizeof(r.mode), "%s", mode);
	snprintf(r.pair, sizeof(r.pair), "%s", pair);
	snprintf(r.unit, sizeof(r.unit), "%s", strcmp(mode, "msgrate") ? "us" : "msg/s");
	r.np = np;
	r.size = size;
	r.st.med = med;
	r.st.q1 = med - 0.1;
	r.st.q3 = med + 0.2;
	r.st.min = med - 0.5;
	r.st.max = med + 1;
	r.st.mean = med + 0.25;
	r.st.n = 20;
	r.iters = 1000;
	r.reps = 1;
	r.mb_s = NAN;
	return r;
}

static int count_fields(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == ',';
	return n;
}

static void test_csv(void)
{
	struct lat_row r = mkrow("plain", "absent", "pingpong", 2, "0-1", 8, 1.16), b;
	char line[512];
	int len;

	len = lat_csv_format(&r, line, sizeof(line));
	EXPECT(len > 0 && (size_t)len == strlen(line), "formatted: %s", line);
	EXPECT(!strcmp(line, "plain,absent,pingpong,2,0-1,8,us,1.16,1.06,1.36,0.66,2.16,1.41,20,1000,1,,0"),
	       "row: %s", line);
	EXPECT(count_fields(line) == count_fields(LAT_CSV_HEADER), "as many fields as the header");
	EXPECT(lat_csv_parse(line, &b) == 0, "parsed back");
	EXPECT(!strcmp(b.label, "plain") && !strcmp(b.kprog, "absent") && !strcmp(b.mode, "pingpong") &&
	       b.np == 2 && !strcmp(b.pair, "0-1") && b.size == 8 && !strcmp(b.unit, "us"), "words");
	EXPECT(NEAR(b.st.med, 1.16) && NEAR(b.st.q1, 1.06) && NEAR(b.st.q3, 1.36) && NEAR(b.st.min, 0.66) &&
	       NEAR(b.st.max, 2.16) && NEAR(b.st.mean, 1.41) && b.st.n == 20 && b.iters == 1000 &&
	       b.reps == 1 && isnan(b.mb_s) && b.errors == 0, "numbers");
	r = mkrow("kprog", "active", "msgrate", 2, "0-1", 4096, 123456.5);
	r.mb_s = 505.67;
	r.errors = 3;
	lat_csv_format(&r, line, sizeof(line));
	EXPECT(lat_csv_parse(line, &b) == 0 && NEAR(b.mb_s, 505.67) && b.errors == 3 &&
	       NEAR(b.st.med, 123456.5) && !strcmp(b.unit, "msg/s"),
	       "msgrate row: %s", line);
	r.st.q1 = NAN;
	lat_csv_format(&r, line, sizeof(line));
	EXPECT(strstr(line, ",msg/s,123456.5,,123456.7,"), "NAN as empty: %s", line);
	EXPECT(lat_csv_parse(line, &b) == 0 && isnan(b.st.q1), "empty reads as NAN");
	EXPECT(lat_csv_format(&r, line, 20) == -1, "too small a buffer");
	EXPECT(lat_csv_parse("plain,absent,pingpong,2,0-1,8,us,1,1,1,1,1,1,20,1000,1,", &b) == -1,
	       "a field short");
	EXPECT(lat_csv_parse("plain,absent,pingpong,2,0-1,8,us,1,1,1,1,1,1,20,1000,1,,0,9", &b) == -1,
	       "a field too many");
	EXPECT(lat_csv_parse("plain,absent,pingpong,0,0-1,8,us,1,1,1,1,1,1,20,1000,1,,0", &b) == -1,
	       "np 0");
	EXPECT(lat_csv_parse("plain,absent,pingpong,2,0-1,8,us,1x,1,1,1,1,1,20,1000,1,,0", &b) == -1,
	       "junk number");
	EXPECT(lat_csv_parse("plain,absent,pingpong,2,0-1,8,us,1,1,1,1,1,1,20,1000,1,,0\r\n", &b) == 0,
	       "CRLF accepted");
}

static void test_merge(void)
{
	struct lat_row in[8], out[8];
	const struct lat_row *f;
	int n;

	in[0] = mkrow("plain", "absent", "pingpong", 2, "0-1", 8, 1.0);
	in[1] = mkrow("kprog", "active", "pingpong", 2, "0-1", 8, 14.0);
	in[2] = mkrow("plain", "absent", "pingpong", 2, "0-1", 8, 3.0);
	in[3] = mkrow("kprog", "passthrough", "pingpong", 2, "0-1", 8, 10.0);
	in[4] = mkrow("plain", "absent", "pingpong", 2, "0-1", 8, 2.0);
	in[5] = mkrow("plain", "absent", "npscale", 4, "all", 8, 5.0);
	in[6] = mkrow("kprog", "active", "pingpong", 2, "0-1", 8, 12.0);
	in[7] = mkrow("plain", "absent", "pingpong", 2, "0-1", 64, 4.0);
	in[2].errors = 2;
	in[4].mb_s = 7;
	n = lat_merge(in, 8, out, 8);
	EXPECT(n == 4, "four points: %d", n);
	EXPECT(!strcmp(out[0].label, "plain") && out[0].size == 8 && !strcmp(out[1].label, "kprog") &&
	       !strcmp(out[2].mode, "npscale") && out[3].size == 64, "first-seen order");
	EXPECT(NEAR(out[0].st.med, 2) && NEAR(out[0].st.q1, 1.9) && NEAR(out[0].st.max, 3),
	       "median of each statistic: %g %g %g", out[0].st.med, out[0].st.q1, out[0].st.max);
	EXPECT(out[0].reps == 3 && out[0].iters == 3000 && out[0].st.n == 60 && out[0].errors == 2,
	       "sums: reps %d iters %ld n %d errors %ld", out[0].reps, out[0].iters, out[0].st.n, out[0].errors);
	EXPECT(NEAR(out[0].mb_s, 7), "NAN ignored in the median of mb_s");
	EXPECT(NEAR(out[1].st.med, 12) && !strcmp(out[1].kprog, "passthrough"),
	       "kprog: median 12, worst status %s", out[1].kprog);
	EXPECT(out[2].reps == 1 && NEAR(out[2].st.med, 5), "single run unchanged");
	EXPECT(lat_merge(in, 8, out, 2) == 2, "capped");
	EXPECT(lat_merge(in, 0, out, 8) == 0, "nothing in, nothing out");

	n = lat_merge(in, 8, out, 8);
	f = lat_find(out, n, "kprog", "pingpong", 2, "0-1", 8);
	EXPECT(f == &out[1], "find");
	EXPECT(!lat_find(out, n, "kprog", "pingpong", 4, "0-1", 8) && !lat_find(out, n, "x", "pingpong", 2, "0-1", 8),
	       "find: no such point");
	EXPECT(NEAR(lat_ratio(14, 1.16), 14 / 1.16) && isnan(lat_ratio(1, 0)) && isnan(lat_ratio(NAN, 1)) &&
	       isnan(lat_ratio(1, NAN)), "ratio");
}

static void write_rows(const char *path, const struct lat_row *r, int n)
{
	FILE *f = fopen(path, "w");
	char line[512];
	int i;

	fprintf(f, "%s\n", LAT_CSV_HEADER);
	for (i = 0; i < n; i++) {
		lat_csv_format(&r[i], line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
	fclose(f);
}

static int run_tool(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n = f ? fread(out, 1, len - 1, f) : 0;

	out[n] = 0;
	return f ? WEXITSTATUS(pclose(f)) : -1;
}

/* bench/latency-table end to end: two repetitions per library */
static void test_table_tool(void)
{
	char dir[] = "/tmp/test_latency.XXXXXX", cmd[1024], out[8192], p[300], k[300], dat[400];
	struct lat_row r[4];
	FILE *f;
	int st;

	if (!mkdtemp(dir)) {
		EXPECT(0, "mkdtemp");
		return;
	}
	snprintf(p, sizeof(p), "%s/plain-np2-r1.csv", dir);
	snprintf(k, sizeof(k), "%s/kprog-np2-r1.csv", dir);
	r[0] = mkrow("plain", "absent", "pingpong", 2, "0-1", 8, 1.0);
	r[1] = mkrow("plain", "absent", "pingpong", 2, "0-1", 8, 3.0);
	r[2] = mkrow("plain", "absent", "npscale", 4, "all", 8, 2.0);
	r[2].st.min = 1.5;
	r[2].st.mean = 2.5;
	r[2].st.max = 4;
	r[3] = mkrow("plain", "absent", "msgrate", 2, "0-1", 64, 1e6);
	r[3].mb_s = 64;
	write_rows(p, r, 4);
	r[0] = mkrow("kprog", "active", "pingpong", 2, "0-1", 8, 10.0);
	r[1] = mkrow("kprog", "active", "pingpong", 2, "0-1", 8, 30.0);
	r[2] = mkrow("kprog", "active", "npscale", 4, "all", 8, 2.0);
	r[2].st.min = 1.5;
	r[2].st.mean = 5;
	r[2].st.max = 6;
	r[3] = mkrow("kprog", "active", "msgrate", 2, "0-1", 64, 2.5e5);
	r[3].mb_s = 16;
	write_rows(k, r, 4);
	snprintf(cmd, sizeof(cmd), "./latency-table --dat %s --merged %s/merged.csv %s %s", dir, dir, p, k);
	st = run_tool(cmd, out, sizeof(out));
	EXPECT(st == 0, "latency-table ran (%d): %s", st, out);
	EXPECT(strstr(out, "       8 |     2.000 [    1.900..    2.200]      1.500 |    20.000 [   19.900..   20.200]     19.500 |     10.00"),
	       "pingpong line, medians of two runs, ratio 10:\n%s", out);
	EXPECT(strstr(out, "   4 |     1.500     2.500     4.000 |     1.500     5.000     6.000 |      2.00      1.50"),
	       "npscale line (min avg max, ratios of avg and max):\n%s", out);
	EXPECT(strstr(out, "      0.25"), "msgrate ratio 0.25:\n%s", out);
	EXPECT(strstr(out, "# plain: 3 points, up to 2 repetition(s) each, kprog status absent, data errors 0") &&
	       strstr(out, "# kprog: 3 points, up to 2 repetition(s) each, kprog status active"), "summary lines:\n%s", out);
	snprintf(dat, sizeof(dat), "%s/pingpong.dat", dir);
	f = fopen(dat, "r");
	EXPECT(f && fgets(out, sizeof(out), f) && !strcmp(out, "8 8 2 1.9 2.2 20 19.9 20.2\n"), "pingpong.dat: %s", out);
	if (f)
		fclose(f);
	snprintf(dat, sizeof(dat), "%s/npscale-8.dat", dir);
	f = fopen(dat, "r");
	EXPECT(f && fgets(out, sizeof(out), f) && !strcmp(out, "4 1.5 2.5 4 1.5 5 6\n"), "npscale-8.dat: %s", out);
	if (f)
		fclose(f);
	snprintf(dat, sizeof(dat), "%s/merged.csv", dir);
	f = fopen(dat, "r");
	EXPECT(f && fgets(out, sizeof(out), f) && !strncmp(out, LAT_CSV_HEADER, strlen(LAT_CSV_HEADER)) &&
	       fgets(out, sizeof(out), f) && strstr(out, "plain,absent,pingpong,2,0-1,8,us,2,") &&
	       strstr(out, ",40,2000,2,,0"), "merged.csv: %s", out);
	if (f)
		fclose(f);

	/* an error count makes the exit status 1; a bad row is reported with its line */
	r[0].errors = 1;
	write_rows(k, r, 4);
	f = fopen(k, "a");
	fprintf(f, "kprog,active,pingpong,garbage\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "./latency-table %s %s 2>&1", p, k);
	st = run_tool(cmd, out, sizeof(out));
	EXPECT(st == 1 && strstr(out, "kprog-np2-r1.csv:6: bad row") && strstr(out, "DATA ERROR"),
	       "errors: status %d\n%s", st, out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	st = system(cmd);
	(void)st;
}

int main(void)
{
	test_stat();
	test_sizes();
	test_opts();
	test_plan();
	test_kprog_status();
	test_csv();
	test_merge();
	test_table_tool();
	return EXPECT_SUMMARY();
}
