/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CPU lists as the kernel writes them ("0-3,8,10-11", see cpuset(7)
 * "List format") to and from cpu_set_t, and cpu_set_t to the __u64-word
 * bitmap of KPROG_BENCH_A_IRQ_CPUS.
 */
#ifndef KPROG_CPULIST_H
#define KPROG_CPULIST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parse @s into @set (cleared first). Accepts "N", "N-M" and "N-M:S"
 * (every S-th CPU of the range), comma separated, blanks ignored.
 * Returns the number of CPUs in the set, or -1 on a syntax error, a
 * reversed range, a zero stride, an empty list or a CPU >= CPU_SETSIZE.
 */
int cpulist_parse(const char *s, cpu_set_t *set);

/*
 * Write @set in list format (ranges merged) into @buf of @len bytes.
 * Returns the length the full string needs (like snprintf); when that
 * does not fit, @buf holds the entries that fit whole. "" when empty.
 */
int cpulist_format(const cpu_set_t *set, char *buf, size_t len);

/*
 * Fill @words (@nwords __u64s, bit n of word n/64 = CPU n) from @set.
 * Returns the number of words needed to hold the highest CPU (0 if the
 * set is empty); if that exceeds @nwords, only @nwords are written.
 */
size_t cpulist_to_words(const cpu_set_t *set, uint64_t *words, size_t nwords);

/* Highest CPU in @set, -1 if empty. */
int cpulist_last(const cpu_set_t *set);

#endif
