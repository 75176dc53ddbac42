// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the pure parts of kprog-stat and irqcost (CPU lists,
 * counter deltas, netlink message parsing without a kernel, statistics and
 * the seed's overhead formula). Last line "N passed, N failed".
 */
#include "test_expect.h"

EXPECT_COUNTERS;

int main(void)
{
	test_cpulist();
	test_kprog_stats();
	test_kprog_nl();
	test_irqcost_stats();
	test_irqcost_report();
	return EXPECT_SUMMARY();
}
