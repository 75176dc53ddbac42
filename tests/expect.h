/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tests/expect.h: the one assertion macro of the native unit tests
 * (libshim/core/test_dtype.c, bench/test_*.c). Each EXPECT counts a pass or
 * prints the failed condition with a message and counts a failure; a
 * test program ends with EXPECT_SUMMARY(), whose line
 * "N passed, N failed" is what scripts/check counts.
 */
#ifndef KPROG_TESTS_EXPECT_H
#define KPROG_TESTS_EXPECT_H

#include <stdio.h>

extern int expect_passed, expect_failed;
/* Exactly one file of each test program says EXPECT_COUNTERS; at file scope. */
#define EXPECT_COUNTERS int expect_passed, expect_failed

#define EXPECT(c, ...) do {						\
	if (c) {							\
		expect_passed++;					\
	} else {							\
		expect_failed++;					\
		printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);	\
		printf(__VA_ARGS__);					\
		putchar('\n');						\
	}								\
} while (0)

/* Prints the result line; evaluates to the exit status. */
#define EXPECT_SUMMARY()						\
	(printf("%d passed, %d failed\n", expect_passed, expect_failed), \
	 expect_failed != 0)

#endif
