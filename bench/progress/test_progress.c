// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native unit tests of bench/progress's pure logic (no MPI): percentiles
 * and summaries, the workload calibration steps, latency histogram bins,
 * the time-left estimate, option parsing and the kernel-worker cpumask
 * string. Last line "N passed, N failed".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "progress_opts.h"
#include "progress_stats.h"
#include "progress_sys.h"
#include "expect.h"

EXPECT_COUNTERS;

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static void test_percentiles(void)
{
	double one[] = { 7 };
	double v[] = { 1, 2, 3, 4, 5 };
	double w[] = { 10, 20, 30, 40 };
	double un[] = { 5, 1, 4, 2, 3, 100 };
	struct summary s;

	EXPECT(isnan(pct_sorted(v, 0, 50)), "empty -> NAN");
	EXPECT(near(pct_sorted(one, 1, 0), 7) && near(pct_sorted(one, 1, 99), 7), "single value");
	EXPECT(near(pct_sorted(v, 5, 50), 3), "median of 1..5 = %g", pct_sorted(v, 5, 50));
	EXPECT(near(pct_sorted(v, 5, 25), 2), "q1 of 1..5 = %g", pct_sorted(v, 5, 25));
	EXPECT(near(pct_sorted(v, 5, 0), 1) && near(pct_sorted(v, 5, 100), 5), "ends");
	EXPECT(near(pct_sorted(w, 4, 50), 25), "even n interpolates: %g", pct_sorted(w, 4, 50));
	EXPECT(near(pct_sorted(w, 4, 90), 37), "p90 of 10..40 = %g", pct_sorted(w, 4, 90));
	EXPECT(near(pct_sorted(w, 4, -5), 10) && near(pct_sorted(w, 4, 150), 40), "clamped p");

	summarize(un, 6, &s);
	EXPECT(s.n == 6, "n");
	EXPECT(un[0] == 1 && un[5] == 100, "sorted in place");
	EXPECT(near(s.min, 1) && near(s.max, 100), "min/max");
	EXPECT(near(s.med, 3.5), "median %g", s.med);
	EXPECT(near(s.q1, 2.25) && near(s.q3, 4.75), "quartiles %g %g", s.q1, s.q3);
	EXPECT(near(s.mean, 115.0 / 6), "mean %g", s.mean);
	EXPECT(s.p99 > 90 && s.p99 < 100, "p99 between the two largest: %g", s.p99);
	summarize(un, 0, &s);
	EXPECT(s.n == 0 && isnan(s.med) && isnan(s.max), "empty summary");
}

static void test_calibration(void)
{
	EXPECT(calib_next(100, 50, 100) == 200, "too short: proportional growth");
	EXPECT(calib_next(100, 200, 100) == 50, "too long: proportional shrink");
	EXPECT(calib_next(100, 1, 100) == 400, "growth capped at 4x: %llu",
	       (unsigned long long)calib_next(100, 1, 100));
	EXPECT(calib_next(100, 10000, 100) == 25, "shrink capped at 4x");
	EXPECT(calib_next(1, 1000, 1) == 1, "never below one unit");
	EXPECT(calib_next(0, 1, 2) == 2, "lambda 0 treated as 1");
	EXPECT(calib_next(10, 0, 100) == 40, "unmeasurably fast: grow 4x");
	EXPECT(calib_next(10, NAN, 100) == 40, "NAN time: grow 4x");
	EXPECT(calib_close(103, 100, 0.03) && calib_close(97, 100, 0.03), "within 3 %%");
	EXPECT(!calib_close(104, 100, 0.03) && !calib_close(96, 100, 0.03), "outside 3 %%");

	/* the loop the benchmark runs converges on a linear cost model */
	{
		const double unit = 0.37;	/* us per unit */
		const double target = 1234.0;
		uint64_t l = 1;
		int steps = 0;

		while (!calib_close(l * unit, target, 0.03) && steps++ < 20)
			l = calib_next(l, l * unit, target);
		EXPECT(calib_close(l * unit, target, 0.03), "converges: lambda %llu -> %g us in %d steps",
		       (unsigned long long)l, l * unit, steps);
		EXPECT(steps <= 12, "within 12 steps (%d)", steps);
	}
}

static void test_histogram(void)
{
	EXPECT(hist_bin(0) == 0 && hist_bin(0.99) == 0 && hist_bin(-3) == 0 && hist_bin(NAN) == 0,
	       "below 1 us -> bin 0");
	EXPECT(hist_bin(1) == 1, "1 us -> bin 1 (%d)", hist_bin(1));
	EXPECT(hist_bin(2) == 1 + HIST_PER_OCTAVE, "2 us -> one octave up (%d)", hist_bin(2));
	EXPECT(hist_bin(1024) == 1 + 10 * HIST_PER_OCTAVE, "1024 us (%d)", hist_bin(1024));
	EXPECT(hist_bin(1e300) == HIST_BINS - 1 && isinf(hist_hi(HIST_BINS - 1)), "last bin open-ended");
	{
		int outside = 0, gaps = 0, n = 0;

		for (double us = 1.0; us < 1e7; us *= 1.37, n++) {
			int b = hist_bin(us);

			if (!(hist_lo(b) <= us && us < hist_hi(b)))
				outside++;
		}
		EXPECT(n > 40 && outside == 0, "%d of %d values outside their bin's edges", outside, n);
		for (int b = 1; b < HIST_BINS - 1; b++)
			if (!near(hist_hi(b), hist_lo(b + 1)))
				gaps++;
		EXPECT(gaps == 0, "%d gaps between neighbouring bins", gaps);
	}
	EXPECT(near(hist_lo(0), 0) && near(hist_hi(0), 1), "bin 0 = [0, 1)");
}

static void test_eta(void)
{
	EXPECT(near(eta_left(10, 100, 300), 30), "scales the prediction by the observed rate");
	EXPECT(eta_left(10, 0, 300) < 0, "nothing predicted yet: unknown");
	EXPECT(near(eta_left(10, 100, 0), 0), "nothing left");
}

static void test_mask(void)
{
	char b[80], tiny[2];

	mask_str(b, sizeof(b), 2, -1);
	EXPECT(!strcmp(b, "4"), "CPU 2 -> 4, got %s", b);
	mask_str(b, sizeof(b), 1, 0);
	EXPECT(!strcmp(b, "3"), "CPUs 1,0 -> 3, got %s", b);
	mask_str(b, sizeof(b), 3, 3);
	EXPECT(!strcmp(b, "8"), "same CPU twice -> 8, got %s", b);
	mask_str(b, sizeof(b), 4, 0);
	EXPECT(!strcmp(b, "11"), "CPUs 4,0 -> 11, got %s", b);
	mask_str(b, sizeof(b), 9, -1);
	EXPECT(!strcmp(b, "200"), "CPU 9 -> 200, got %s", b);
	mask_str(b, sizeof(b), 255, 0);
	EXPECT(strlen(b) == 64 && b[0] == '8' && b[63] == '1', "CPUs 255,0 -> 64 digits, got %s", b);
	mask_str(b, sizeof(b), -1, -1);
	EXPECT(!strcmp(b, "0"), "no CPU -> 0, got %s", b);
	mask_str(b, sizeof(b), 300, -1);
	EXPECT(!strcmp(b, "0"), "CPU beyond the limit ignored, got %s", b);
	mask_str(tiny, sizeof(tiny), 9, -1);
	EXPECT(!strcmp(tiny, "0"), "a mask that does not fit is never truncated to a wrong one: %s", tiny);
}

static int parse(struct popts *o, char *err, const char *a1, const char *a2, const char *a3)
{
	char *argv[5] = { (char *)"progress", (char *)a1, (char *)a2, (char *)a3, NULL };
	int argc = 1 + !!a1 + (a1 && a2) + (a1 && a2 && a3);

	popts_defaults(o);
	return popts_parse(o, argc, argv, err, 256);
}

static void test_options(void)
{
	struct popts o;
	char err[256];
	size_t sz;
	int cpu;

	EXPECT(!po_parse_size("64K", &sz) && sz == 65536, "64K");
	EXPECT(!po_parse_size("1M", &sz) && sz == 1 << 20, "1M");
	EXPECT(!po_parse_size("4MiB", &sz) && sz == 4 << 20, "4MiB");
	EXPECT(!po_parse_size("100", &sz) && sz == 100, "plain bytes");
	EXPECT(po_parse_size("64X", &sz) && po_parse_size("", &sz) && po_parse_size("-1", &sz) &&
	       po_parse_size("K", &sz) && po_parse_size("1.5M", &sz), "junk rejected");
	EXPECT(!po_parse_cpu("3", 0, &cpu) && cpu == 3, "cpu 3");
	EXPECT(!po_parse_cpu("none", 1, &cpu) && cpu == -2, "none");
	EXPECT(po_parse_cpu("none", 0, &cpu) && po_parse_cpu("x", 1, &cpu) && po_parse_cpu("-1", 1, &cpu),
	       "bad cpus rejected");

	EXPECT(!parse(&o, err, NULL, NULL, NULL), "no options: %s", err);
	EXPECT(o.nsizes == 4 && o.sizes[0] == 1024 && o.sizes[3] == 4 << 20, "default sizes");
	EXPECT(o.strat[ST_MANUAL] && o.strat[ST_POLL] && o.strat[ST_INTR] && o.strat[ST_RT] &&
	       o.strat[ST_KERNEL], "all strategies by default");
	EXPECT(o.place[PL_SPARE] && o.place[PL_SHARED] && o.scheme[SC_TIME] && o.scheme[SC_WORK],
	       "both placements and schemes by default");
	EXPECT(o.tb_iters == o.iters, "t_b rounds default to --iters");
	EXPECT(o.kworker == KW_STRICT && o.cpu_spare == -1, "defaults");

	EXPECT(!parse(&o, err, "--strategy", "poll,rt", NULL), "strategy list: %s", err);
	EXPECT(!o.strat[ST_MANUAL] && o.strat[ST_POLL] && !o.strat[ST_INTR] && o.strat[ST_RT] &&
	       !o.strat[ST_KERNEL], "only poll and rt");
	EXPECT(parse(&o, err, "--strategy", "poll,bogus", NULL) && strstr(err, "bogus"),
	       "unknown strategy named in the error: %s", err);
	EXPECT(!parse(&o, err, "--placement=shared", "--scheme", "work"), "%s", err);
	EXPECT(!o.place[PL_SPARE] && o.place[PL_SHARED] && !o.scheme[SC_TIME] && o.scheme[SC_WORK],
	       "placement and scheme lists");
	EXPECT(!parse(&o, err, "--sizes", "8,1K,16M", NULL) && o.nsizes == 3 && o.sizes[0] == 8 &&
	       o.sizes[2] == 16 << 20, "size list: %s", err);
	EXPECT(parse(&o, err, "--sizes", "4", NULL), "sizes below 8 bytes rejected (time stamp)");
	EXPECT(parse(&o, err, "--sizes", "", NULL), "empty size list rejected");
	EXPECT(!parse(&o, err, "--iters", "7", NULL) && o.iters == 7 && o.tb_iters == 7, "iters");
	EXPECT(!parse(&o, err, "--iters", "7", "--tb-iters=30") && o.tb_iters == 30, "tb-iters");
	EXPECT(parse(&o, err, "--iters", "0", NULL) && parse(&o, err, "--iters", "3x", NULL),
	       "bad iters rejected");
	EXPECT(parse(&o, err, "--iters", NULL, NULL), "missing argument rejected");
	EXPECT(!parse(&o, err, "--cpu-spare", "none", NULL) && o.cpu_spare == -2, "spare none");
	EXPECT(parse(&o, err, "--cpu-spare=1", "--cpu-compute=1", NULL) && strstr(err, "shared"),
	       "spare == compute rejected: %s", err);
	EXPECT(!parse(&o, err, "--kworker-cpus", "follow", NULL) && o.kworker == KW_FOLLOW, "kworker");
	EXPECT(parse(&o, err, "--kworker-cpus", "some", NULL), "bad kworker rejected");
	EXPECT(parse(&o, err, "--rt-prio", "100", NULL) && !parse(&o, err, "--rt-prio", "99", NULL),
	       "rt-prio 1..99");
	EXPECT(!parse(&o, err, "--poll-yield", "16", NULL) && o.poll_yield == 16, "poll-yield");
	EXPECT(!parse(&o, err, "--block", "0", NULL) && o.block == 0, "block 0: one pass");
	EXPECT(parse(&o, err, "--block", "-1", NULL), "negative block rejected");
	EXPECT(!parse(&o, err, "--verify", "all", NULL) && o.verify == VERIFY_ALL, "verify all");
	EXPECT(!parse(&o, err, "-h", NULL, NULL) && o.help, "-h");
	EXPECT(!parse(&o, err, "--help", NULL, NULL) && o.help, "--help");
	EXPECT(parse(&o, err, "--nope", NULL, NULL), "unknown option rejected");
	EXPECT(parse(&o, err, "stray", NULL, NULL), "stray argument rejected");
	/* parsing twice in one process works (optind reset) */
	EXPECT(!parse(&o, err, "--iters", "5", NULL) && o.iters == 5, "re-parse");
}

int main(void)
{
	test_percentiles();
	test_calibration();
	test_histogram();
	test_eta();
	test_mask();
	test_options();
	return EXPECT_SUMMARY();
}
