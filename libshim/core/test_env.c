// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native unit test of env.c, the KPROG_* variables: booleans in every
 * spelling, integers in and out of range, choices, the defaults of the
 * table itself, and the report of an unusable value (once per variable,
 * and only where the shim asks for reports). Last line "N passed, N failed".
 */
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "expect.h"

EXPECT_COUNTERS;

/* What the report stream received since the last call. */
static char report[4096];
static FILE *report_stream(void)
{
	memset(report, 0, sizeof(report));
	return fmemopen(report, sizeof(report) - 1, "w");
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
		n++;
	return n;
}

static void test_parsers(void)
{
	static const char *const truths[] = { "1", "yes", "YES", "true", "True", "on", "ON" };
	static const char *const lies[] = { "0", "no", "No", "false", "FALSE", "off", "Off" };
	static const char *const junk[] = { "2", "y", "", "enable", "1 ", " 0", "yess" };
	unsigned int i;
	long l;
	bool b;

	for (i = 0; i < sizeof(truths) / sizeof(truths[0]); i++) {
		b = false;
		EXPECT(kp_env_parse_bool(truths[i], &b) == 0 && b, "%s is true", truths[i]);
		b = true;
		EXPECT(kp_env_parse_bool(lies[i], &b) == 0 && !b, "%s is false", lies[i]);
		EXPECT(kp_env_parse_bool(junk[i], &b) == -1, "%s is no boolean", junk[i]);
	}
	EXPECT(kp_env_parse_long("-1", &l) == 0 && l == -1, "-1");
	EXPECT(kp_env_parse_long("5000", &l) == 0 && l == 5000, "5000");
	EXPECT(kp_env_parse_long("010", &l) == 0 && l == 10, "decimal, not octal");
	EXPECT(kp_env_parse_long("12us", &l) == -1, "trailing junk");
	EXPECT(kp_env_parse_long("", &l) == -1, "empty");
	EXPECT(kp_env_parse_long("99999999999999999999999", &l) == -1, "overflow");
}

static void test_table(void)
{
	unsigned int i, j;

	for (i = 0; i < KP_ENV_NR; i++) {
		const struct kp_env_var *v = &kp_env_vars[i];

		EXPECT(v->name && !strncmp(v->name, "KPROG_", 6), "entry %u has a KPROG_ name", i);
		if (!v->name)
			continue;
		EXPECT(v->def && !kp_env_invalid(v, v->def), "%s's default %s is one of its values",
		       v->name, v->def ? v->def : "(none)");
		EXPECT(v->help && *v->help, "%s says what it does", v->name);
		for (j = 0; j < i; j++)
			EXPECT(strcmp(v->name, kp_env_vars[j].name), "%s listed once", v->name);
	}
}

static void test_reads(void)
{
	FILE *f;

	kp_env_report = NULL;
	unsetenv("KPROG_DISABLE");
	EXPECT(!kp_env_bool(KP_ENV_DISABLE), "KPROG_DISABLE unset: off");
	setenv("KPROG_DISABLE", "yes", 1);
	EXPECT(kp_env_bool(KP_ENV_DISABLE), "KPROG_DISABLE=yes disables");
	setenv("KPROG_DISABLE", "true", 1);
	EXPECT(kp_env_bool(KP_ENV_DISABLE), "KPROG_DISABLE=true disables");
	setenv("KPROG_DISABLE", "off", 1);
	EXPECT(!kp_env_bool(KP_ENV_DISABLE), "KPROG_DISABLE=off does not");
	setenv("KPROG_DISABLE", "", 1);
	EXPECT(!kp_env_bool(KP_ENV_DISABLE), "KPROG_DISABLE empty: the default");
	setenv("KPROG_RTS", "no", 1);
	EXPECT(!kp_env_bool(KP_ENV_RTS), "KPROG_RTS=no");
	unsetenv("KPROG_RTS");
	EXPECT(kp_env_bool(KP_ENV_RTS), "KPROG_RTS defaults on");

	setenv("KPROG_SPIN_DEDICATED_US", "-1", 1);
	EXPECT(kp_env_long(KP_ENV_SPIN_DEDICATED_US) == -1, "-1 turns the dedicated spin off");
	unsetenv("KPROG_SPIN_DEDICATED_US");
	EXPECT(kp_env_long(KP_ENV_SPIN_DEDICATED_US) == 5000, "default 5000");
	setenv("KPROG_MON_MPIT", "auto", 1);
	EXPECT(kp_env_tri(KP_ENV_MON_MPIT) == -1, "auto");
	setenv("KPROG_MON_MPIT", "on", 1);
	EXPECT(kp_env_tri(KP_ENV_MON_MPIT) == 1, "on");
	setenv("KPROG_MON_MPIT", "0", 1);
	EXPECT(kp_env_tri(KP_ENV_MON_MPIT) == 0, "0");
	unsetenv("KPROG_MON_MPIT");
	setenv("KPROG_TRANSPORT", "shm", 1);
	EXPECT(!strcmp(kp_env_str(KP_ENV_TRANSPORT), "shm"), "shm");
	unsetenv("KPROG_WAITPROF_OUT");
	EXPECT(!strcmp(kp_env_str(KP_ENV_WAITPROF_OUT), "kprog-waitprof"), "the profiler's prefix");

	/* unusable values: the default, reported once, only with a stream */
	setenv("KPROG_VERBOSE", "lots", 1);
	EXPECT(kp_env_long(KP_ENV_VERBOSE) == 0, "KPROG_VERBOSE=lots: the default");
	f = report_stream();
	kp_env_report = f;
	setenv("KPROG_SPIN_US", "20000000", 1);
	EXPECT(kp_env_long(KP_ENV_SPIN_US) == -1, "out of range: the default");
	EXPECT(kp_env_long(KP_ENV_SPIN_US) == -1, "again");
	setenv("KPROG_TRANSPORT", "infiniband", 1);
	EXPECT(!strcmp(kp_env_str(KP_ENV_TRANSPORT), "auto"), "unknown transport: auto");
	setenv("KPROG_DISABLE", "please", 1);
	EXPECT(!kp_env_bool(KP_ENV_DISABLE), "KPROG_DISABLE=please: not disabled");
	fclose(f);
	kp_env_report = NULL;
	EXPECT(strstr(report, "kprog: KPROG_SPIN_US=20000000: out of range (takes -1..10000000); using the default, -1\n") != NULL,
	       "range reported: %s", report);
	EXPECT(count(report, "KPROG_SPIN_US=") == 1, "reported once: %s", report);
	EXPECT(strstr(report, "KPROG_TRANSPORT=infiniband: not one of the values it takes (auto|ib|shm|local)") != NULL,
	       "choice reported: %s", report);
	EXPECT(strstr(report, "KPROG_DISABLE=please: not a boolean") != NULL, "boolean reported: %s", report);
	EXPECT(strstr(report, "KPROG_VERBOSE") == NULL, "nothing without a stream: %s", report);
}

int main(void)
{
	test_parsers();
	test_table();
	test_reads();
	return EXPECT_SUMMARY();
}
