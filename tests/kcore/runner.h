/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface between the test runner (runner.c, built against the C
 * library) and everything built against the kernel headers (mock.c,
 * utils.c, the tests). Plain C types only: this header is included on
 * both sides, which cannot share any other header.
 */
#ifndef KCORE_RUNNER_H
#define KCORE_RUNNER_H

/* struct kt_test.flags */
#define KT_NO_MODULE	0x1	/* the fixture does not load the module */
#define KT_MUST_ABORT	0x2	/* passes only if it ends through kt_fatal() */

struct kt_test {
	const char *name;
	void (*fn)(void);
	unsigned int flags;
	struct kt_test *next;
};

void kt_register(struct kt_test *t);

/* A failed check: the test goes on and is counted as failed. */
void kt_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((__format__(__printf__, 3, 4)));
/* A failure after which the test cannot go on: leaves it at once. */
void kt_fatal(const char *file, int line, const char *fmt, ...)
	__attribute__((__format__(__printf__, 3, 4), __noreturn__));
/*
 * Between these two, failed checks are only counted (not reported, not
 * failing the test): for tests of the checks themselves. The end returns
 * how many there were.
 */
void kt_catch_begin(void);
int kt_catch_end(void);
/* Number of failures of the running test so far. */
int kt_failures(void);
/* Name of the running test. */
const char *kt_test_name(void);
/* Non-zero with -v: print captured kernel messages of every test. */
extern int kt_verbose;

/* The fixture, kernel side (utils.c). */
void kt_before_each(const struct kt_test *t);
void kt_after_each(const struct kt_test *t);
/*
 * After a test was aborted: @clean_up 1 tries what kt_after_each() does,
 * without reporting; then (or if that aborted too) @clean_up 0 forgets
 * whatever is left.
 */
void kt_after_abort(const struct kt_test *t, int clean_up);

/*
 * WARN()/BUG() are ud2 instructions with an entry in __bug_table; the
 * runner catches the SIGILL and asks the kernel side (mock.c) what the
 * entry says. Returns 0 if @addr is no known bug site.
 */
int mock_bug_lookup(unsigned long addr, const char **file, int *line,
		    int *warning);

#endif
