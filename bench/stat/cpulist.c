// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* CPU list parsing and formatting (see cpulist.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpulist.h"

static const char *skip_blanks(const char *s)
{
	while (isblank((unsigned char)*s))
		s++;
	return s;
}

/* A decimal CPU number < CPU_SETSIZE at *@s; advances *@s. -1 if none. */
static long parse_num(const char **s)
{
	const char *p = skip_blanks(*s);
	char *end;
	long v;

	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || v >= CPU_SETSIZE)
		return -1;
	*s = skip_blanks(end);
	return v;
}

int cpulist_parse(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	if (!s)
		return -1;
	for (;;) {
		long lo, hi, stride = 1, c;

		lo = parse_num(&s);
		if (lo < 0)
			return -1;
		hi = lo;
		if (*s == '-') {
			s++;
			hi = parse_num(&s);
			if (hi < lo)
				return -1;
			if (*s == ':') {
				s++;
				stride = parse_num(&s);
				if (stride <= 0)
					return -1;
			}
		}
		for (c = lo; c <= hi; c += stride)
			CPU_SET(c, set);
		if (*s == '\0')
			break;
		if (*s++ != ',')
			return -1;
	}
	return CPU_COUNT(set);
}

int cpulist_last(const cpu_set_t *set)
{
	int c;

	for (c = CPU_SETSIZE - 1; c >= 0; c--)
		if (CPU_ISSET(c, set))
			return c;
	return -1;
}

int cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	int c = 0, n = 0, w;

	if (len)
		buf[0] = '\0';
	while (c < CPU_SETSIZE) {
		int lo;

		if (!CPU_ISSET(c, set)) {
			c++;
			continue;
		}
		lo = c;
		while (c + 1 < CPU_SETSIZE && CPU_ISSET(c + 1, set))
			c++;
		if (lo == c)
			w = snprintf(NULL, 0, "%s%d", n ? "," : "", lo);
		else
			w = snprintf(NULL, 0, "%s%d-%d", n ? "," : "", lo, c);
		if ((size_t)(n + w) < len) {
			if (lo == c)
				sprintf(buf + n, "%s%d", n ? "," : "", lo);
			else
				sprintf(buf + n, "%s%d-%d", n ? "," : "", lo, c);
		} else if (len) {
			buf[len - 1] = '\0';	/* truncated, still terminated */
		}
		n += w;
		c++;
	}
	return n;
}

size_t cpulist_to_words(const cpu_set_t *set, uint64_t *words, size_t nwords)
{
	int last = cpulist_last(set), c;
	size_t need = last < 0 ? 0 : (size_t)last / 64 + 1;

	memset(words, 0, nwords * sizeof(*words));
	for (c = 0; c <= last; c++)
		if (CPU_ISSET(c, set) && (size_t)c / 64 < nwords)
			words[c / 64] |= 1ULL << (c % 64);
	return need;
}
