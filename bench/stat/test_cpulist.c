// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* cpulist.c: parsing, formatting, the netlink bitmap. */
#include <string.h>
#include "cpulist.h"
#include "test_expect.h"

static void parse_ok(const char *s, int want_n, const int *cpus)
{
	cpu_set_t set;
	int n = cpulist_parse(s, &set), i, all = 1;

	EXPECT(n == want_n, "'%s' -> %d CPUs, want %d", s, n, want_n);
	for (i = 0; i < want_n; i++)
		all &= CPU_ISSET(cpus[i], &set) != 0;
	EXPECT(all, "'%s' lacks a CPU", s);
}

static void parse_bad(const char *s)
{
	cpu_set_t set;

	EXPECT(cpulist_parse(s, &set) == -1, "'%s' accepted", s ? s : "(null)");
}

static void format_is(const char *list, const char *want)
{
	cpu_set_t set;
	char buf[64];
	int n;

	cpulist_parse(list, &set);
	n = cpulist_format(&set, buf, sizeof(buf));
	EXPECT(!strcmp(buf, want) && n == (int)strlen(want), "'%s' formats as '%s' (%d), want '%s'",
	       list, buf, n, want);
}

void test_cpulist(void)
{
	cpu_set_t set;
	uint64_t w[4];
	char small[6];
	int n;

	parse_ok("0", 1, (int[]){ 0 });
	parse_ok("0-3,8", 5, (int[]){ 0, 1, 2, 3, 8 });
	parse_ok(" 1 , 3 ", 2, (int[]){ 1, 3 });
	parse_ok("0-7:2", 4, (int[]){ 0, 2, 4, 6 });
	parse_ok("2-2", 1, (int[]){ 2 });
	parse_ok("5,1-2,5", 3, (int[]){ 1, 2, 5 });
	parse_ok("1023", 1, (int[]){ 1023 });
	parse_bad("");
	parse_bad(NULL);
	parse_bad("a");
	parse_bad("3-1");
	parse_bad("1,");
	parse_bad(",1");
	parse_bad("0-");
	parse_bad("1-3:0");
	parse_bad("-1");
	parse_bad("1024");
	parse_bad("99999999999999999999");
	parse_bad("1 2");

	format_is("0-3,8,10-11", "0-3,8,10-11");
	format_is("3,2,1", "1-3");
	format_is("0-7:2", "0,2,4,6");
	format_is("1023", "1023");
	CPU_ZERO(&set);
	EXPECT(cpulist_format(&set, small, sizeof(small)) == 0 && !small[0], "empty set");
	cpulist_parse("0-3,8,10-11", &set);
	n = cpulist_format(&set, small, sizeof(small));
	EXPECT(n == 11 && !strcmp(small, "0-3,8"), "truncated to whole entries: '%s' %d", small, n);

	cpulist_parse("0,63,64,130", &set);
	EXPECT(cpulist_to_words(&set, w, 4) == 3, "words needed for CPU 130");
	EXPECT(w[0] == (1ULL | 1ULL << 63) && w[1] == 1 && w[2] == 1ULL << 2 && w[3] == 0,
	       "bitmap %llx %llx %llx %llx", (unsigned long long)w[0], (unsigned long long)w[1],
	       (unsigned long long)w[2], (unsigned long long)w[3]);
	EXPECT(cpulist_to_words(&set, w, 1) == 3 && w[0] == (1ULL | 1ULL << 63),
	       "short buffer gets the first word only");
	EXPECT(cpulist_last(&set) == 130, "last CPU");
	CPU_ZERO(&set);
	EXPECT(cpulist_to_words(&set, w, 4) == 0 && cpulist_last(&set) == -1, "empty set: no words");
}
