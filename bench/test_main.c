// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the pure parts of kprog-stat and irqcost (CPU lists,
 * counter deltas, netlink message parsing without a kernel, statistics and
 * the seed's overhead formula). Last line "N passed, N failed".
 */
#include "test_expect.h"

int test_passed, test_failed;

int main(void)
{
	test_cpulist();
	test_kprog_stats();
	test_kprog_nl();
	test_irqcost_stats();
	test_irqcost_report();
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed != 0;
}
