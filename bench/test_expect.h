/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bench/ unit tests' one assertion macro and suite list; test_main.c
 * runs the suites and prints "N passed, N failed" last.
 */
#ifndef TEST_EXPECT_H
#define TEST_EXPECT_H

#include <math.h>
#include <stdio.h>

extern int test_passed, test_failed;

#define EXPECT(c, ...) do {						\
	if (c) {							\
		test_passed++;						\
	} else {							\
		test_failed++;						\
		printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);	\
		printf(__VA_ARGS__);					\
		putchar('\n');						\
	}								\
} while (0)

/* |a - b| <= tol, and neither is NaN */
#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol))

void test_cpulist(void);
void test_kprog_stats(void);
void test_kprog_nl(void);
void test_irqcost_stats(void);
void test_irqcost_report(void);

#endif
