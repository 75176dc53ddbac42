/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The suite list of test_bench (the unit tests of kprog-stat and irqcost)
 * and their tolerance macro; EXPECT is tests/expect.h's. test_main.c runs
 * the suites and prints "N passed, N failed" last.
 */
#ifndef TEST_EXPECT_H
#define TEST_EXPECT_H

#include <math.h>
#include <stdio.h>

#include "expect.h"

/* |a - b| <= tol, and neither is NaN */
#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol))

void test_cpulist(void);
void test_kprog_stats(void);
void test_kprog_nl(void);
void test_irqcost_stats(void);
void test_irqcost_report(void);

#endif
