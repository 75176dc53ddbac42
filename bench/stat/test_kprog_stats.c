// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kprog_stats.c: deltas (with resets in between), sums, rates (kprog-stat's arithmetic). */
#include <string.h>
#include "kprog_stats.h"
#include "test_expect.h"

void test_kprog_stats(void)
{
	struct kprog_cpu_stats a = { .cpu = 1 }, b = { .cpu = 1 }, d, sum = { .cpu = -1 };
	int s, ok = 1;

	for (s = 0; s < KS_NSTAT; s++) {
		a.v[s] = 1000 * (uint64_t)(s + 1);
		b.v[s] = a.v[s] + 10 * (uint64_t)(s + 1);
	}
	b.v[KS_BYTES] = a.v[KS_BYTES] + (5ULL << 33);	/* beyond 32 bits */
	EXPECT(kprog_stats_delta(&a, &b, &d) == 0, "no reset seen");
	for (s = 0; s < KS_NSTAT; s++)
		if (s != KS_BYTES)
			ok &= d.v[s] == 10 * (uint64_t)(s + 1);
	EXPECT(ok && d.v[KS_BYTES] == 5ULL << 33 && d.cpu == 1, "delta per counter");

	/* one counter lower than before: a reset happened, count from it */
	b.v[KS_WAKEUPS] = 3;
	EXPECT(kprog_stats_delta(&a, &b, &d) == 1, "reset detected");
	EXPECT(!memcmp(d.v, b.v, sizeof(d.v)), "after a reset the delta is the new value");

	/* identical samples: zero */
	EXPECT(kprog_stats_delta(&a, &a, &d) == 0 && d.v[KS_EVENTS] == 0, "zero delta");

	kprog_stats_add(&sum, &a);
	kprog_stats_add(&sum, &a);
	EXPECT(sum.v[KS_HARDIRQ_NS] == 2 * a.v[KS_HARDIRQ_NS] && sum.cpu == -1, "sum of two rows");

	d.v[KS_HARDIRQ_RUNS] = 8192;
	EXPECT(NEAR(kprog_stats_rate(&d, KS_HARDIRQ_RUNS, 0.5), 16384, 1e-9), "rate over 0.5 s");
	EXPECT(kprog_stats_rate(&d, KS_HARDIRQ_RUNS, 0) == 0, "rate over no time is 0");
	EXPECT(NEAR(kprog_stats_ns_per(3000, 4), 750, 1e-12), "ns per run");
	EXPECT(kprog_stats_ns_per(3000, 0) == 0, "ns per run without runs");

	ok = 1;
	for (s = 0; s < KS_NSTAT; s++) {
		int a = kprog_stat_attr(KPROG_FAMILY_KPROG, s);

		ok &= !a || (a >= KPROG_A_STAT_EVENTS && a <= KPROG_A_MAX);
		for (int t = 0; t < s; t++)
			ok &= !a || a != kprog_stat_attr(KPROG_FAMILY_KPROG, t);
	}
	EXPECT(ok && kprog_stat_attr(KPROG_FAMILY_KPROG, KS_WAKEUPS) == KPROG_A_STAT_WAKEUPS &&
	       kprog_stat_attr(KPROG_FAMILY_KPROG, KS_EVENTS) == KPROG_A_STAT_EVENTS &&
	       kprog_stat_attr(KPROG_FAMILY_KPROG, KS_BYTES) == KPROG_A_STAT_BYTES,
	       "kprog.ko's attribute of each of its counters");
	ok = 1;
	for (s = 0; s < KS_NSTAT; s++) {
		int a = kprog_stat_attr(KPROG_FAMILY_BENCH, s);

		ok &= !a || (a >= KPROG_BENCH_A_STAT_HARDIRQ_RUNS && a <= KPROG_BENCH_A_MAX);
		for (int t = 0; t < s; t++)
			ok &= !a || a != kprog_stat_attr(KPROG_FAMILY_BENCH, t);
	}
	EXPECT(ok && kprog_stat_attr(KPROG_FAMILY_BENCH, KS_HARDIRQ_RUNS) ==
		     KPROG_BENCH_A_STAT_HARDIRQ_RUNS &&
	       kprog_stat_attr(KPROG_FAMILY_BENCH, KS_COALESCED) == KPROG_BENCH_A_STAT_COALESCED &&
	       kprog_stat_attr(KPROG_FAMILY_BENCH, KS_WAKEUPS) == KPROG_BENCH_A_STAT_WAKEUPS &&
	       !kprog_stat_attr(KPROG_FAMILY_BENCH, KS_EVENTS) &&
	       !kprog_stat_attr(KPROG_FAMILY_BENCH, KS_BYTES),
	       "kprog_bench.ko's attribute of each of its counters, none for the others");
	EXPECT(!kprog_stat_attr(KPROG_FAMILY_KPROG, KS_NSTAT), "no attribute past the counters");
	EXPECT(!strcmp(kprog_stat_name(KS_EVENTS), "events") &&
	       !strcmp(kprog_stat_name(KS_WAKEUPS), "wakeups") &&
	       !strcmp(kprog_stat_name(KS_NSTAT), "?"), "counter names");
}
