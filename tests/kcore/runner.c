// SPDX-License-Identifier: GPL-2.0
/*
 * The test runner of tests/kcore: runs every registered test in this
 * process, one after the other, and prints "N passed, N failed".
 *
 * It does not fork per test (as the kselftest harness does): gcov writes
 * its counters at a normal exit, which forked test children skip, and
 * AddressSanitizer's leak check likewise runs once at exit. A test that
 * cannot go on (a wait that would block forever, BUG(), a crash in a
 * mocked function) leaves through siglongjmp() instead.
 *
 *   ./unit             run every test
 *   ./unit -v          also print each test's kernel messages
 *   ./unit NAME...     run the tests whose name contains one of NAME
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include "runner.h"

int kt_verbose;

static struct kt_test *tests, **tests_tail = &tests;
static const struct kt_test *running;
static int failures, aborting, catching, caught, aborted;
static sigjmp_buf abort_jmp;

void kt_register(struct kt_test *t)
{
	*tests_tail = t;
	tests_tail = &t->next;
}

const char *kt_test_name(void)
{
	return running ? running->name : "(none)";
}

int kt_failures(void)
{
	return failures;
}

static void report(const char *what, const char *file, int line,
		   const char *fmt, va_list ap)
{
	const char *slash = strstr(file, "tests/kcore/");

	/* Paths relative to the repository root read best. */
	if (slash)
		file = slash;
	else if (!strncmp(file, "../../", 6))
		file += 6;
	/* The verdict line comes first, then what went wrong. */
	if (running && !failures)
		printf("FAIL %s\n", running->name);
	if (line)
		printf("  %s %s:%d: ", what, file, line);
	else
		printf("  %s %s: ", what, file);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

void kt_catch_begin(void)
{
	catching = 1;
	caught = 0;
}

int kt_catch_end(void)
{
	catching = 0;
	return caught;
}

void kt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (catching) {
		caught++;
		return;
	}
	va_start(ap, fmt);
	report("FAILED", file, line, fmt, ap);
	va_end(ap);
	failures++;
}

void kt_fatal(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	catching = 0;
	if (aborting == 2 || !running) {
		fprintf(stderr, "unit: fatal error outside a test\n");
		exit(2);
	}
	/* Cleaning up after an abort: give up quietly. */
	if (aborting)
		siglongjmp(abort_jmp, 1);
	if (running->flags & KT_MUST_ABORT) {
		aborted = 1;
		siglongjmp(abort_jmp, 1);
	}
	va_start(ap, fmt);
	report("ABORTED", file, line, fmt, ap);
	va_end(ap);
	failures++;
	siglongjmp(abort_jmp, 1);
}

/* WARN*() continue like in the kernel, but fail the test; BUG() aborts it. */
static void on_sigill(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	unsigned long rip = uc->uc_mcontext.gregs[REG_RIP];
	const unsigned char *insn = (const unsigned char *)rip;
	const char *file = "?";
	int line = 0, warning = 0;

	(void)sig;
	(void)si;
	if (insn[0] != 0x0f || insn[1] != 0x0b ||
	    !mock_bug_lookup(rip, &file, &line, &warning)) {
		fprintf(stderr, "unit: illegal instruction at %#lx in %s\n",
			rip, kt_test_name());
		signal(SIGILL, SIG_DFL);
		return;		/* re-executes and dies with SIGILL */
	}
	if (warning) {
		kt_fail(file, line, "WARNING in kernel code");
		uc->uc_mcontext.gregs[REG_RIP] += 2;
		return;
	}
	kt_fatal(file, line, "BUG in kernel code");
}

static int nr_names;
static char **names;

static int selected(const struct kt_test *t)
{
	int i;

	if (!nr_names)
		return 1;
	for (i = 0; i < nr_names; i++)
		if (strstr(t->name, names[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_sigill, .sa_flags = SA_SIGINFO };
	volatile int passed = 0, failed = 0;
	struct kt_test *volatile t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "-v")) {
		kt_verbose = 1;
		argc--;
		argv++;
	}
	nr_names = argc - 1;
	names = argv + 1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGILL, &sa, NULL);

	for (t = tests; t; t = t->next) {
		if (!selected(t))
			continue;
		running = t;
		failures = 0;
		aborted = 0;
		if (!sigsetjmp(abort_jmp, 1)) {
			kt_before_each(t);
			t->fn();
			if (t->flags & KT_MUST_ABORT)
				kt_fail(__FILE__, __LINE__, "the test did not abort");
			kt_after_each(t);
		} else {
			/* Clean up as after a test; if even that fails, forget. */
			aborting = 1;
			if (!sigsetjmp(abort_jmp, 1))
				kt_after_abort(t, 1);
			aborting = 2;
			kt_after_abort(t, 0);
			aborting = 0;
		}
		running = NULL;
		if (failures) {
			failed++;
		} else {
			printf("ok   %s\n", t->name);
			passed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
