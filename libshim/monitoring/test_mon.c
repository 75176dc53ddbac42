// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native unit tests of the MPI-free parts of the monitoring sessions and
 * of the wait-state profiler: session counting over start, suspend,
 * continue and reset with nested and overlapping sessions and the
 * mapping of world ranks to a sub-communicator's ranks (mon_sess.c); the
 * flush and rootflush file formats (mon_file.c); the logarithmic size
 * classes, minimum statistics and waiting times (waitprof_stats.c).
 * Last line "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mon_sess.h"
#include "waitprof_stats.h"
#include "expect.h"

EXPECT_COUNTERS;

#define W 4		/* world ranks */

static uint64_t vals[KP_MC_NCLASS * KP_MK_NKIND * W];
static struct kp_mcount cur = { .world = W, .v = vals };

/* What this process sent: k messages of s bytes to world rank w. */
static void sent(int cls, int w, uint64_t k, uint64_t s)
{
	*kp_mcount_at(&cur, cls, KP_MK_COUNT, w) += k;
	*kp_mcount_at(&cur, cls, KP_MK_SIZE, w) += k * s;
}

static int *ids(int n, const int *v)
{
	int *p = malloc(sizeof(int) * n);

	memcpy(p, v, sizeof(int) * n);
	return p;
}

static void test_sessions(void)
{
	struct kp_msess a, b, odd;
	unsigned long c[W], s[W];
	static const int world[] = { 0, 1, 2, 3 }, odds[] = { 1, 3 };

	memset(vals, 0, sizeof(vals));
	sent(KP_MC_P2P, 1, 5, 100);		/* before any session: not counted */
	EXPECT(!kp_msess_start(&a, W, ids(W, world), &cur), "start a");
	EXPECT(a.state == KP_MS_ACTIVE, "a active");
	sent(KP_MC_P2P, 1, 3, 10);
	EXPECT(!kp_msess_start(&b, W, ids(W, world), &cur), "start b (nested)");
	EXPECT(!kp_msess_start(&odd, 2, ids(2, odds), &cur), "start odd");
	sent(KP_MC_P2P, 3, 2, 1000);
	sent(KP_MC_COLL, 3, 1, 7);
	kp_msess_suspend(&b, &cur);
	EXPECT(b.state == KP_MS_SUSPENDED, "b suspended");
	sent(KP_MC_P2P, 2, 4, 1);		/* a only */
	kp_msess_suspend(&a, &cur);
	kp_msess_suspend(&odd, &cur);
	sent(KP_MC_P2P, 2, 100, 100);		/* nobody */
	kp_msess_continue(&b, &cur);
	sent(KP_MC_OSC, 0, 6, 8);		/* b again */
	kp_msess_suspend(&b, &cur);

	kp_msess_data(&a, 0x1, c, s);
	EXPECT(c[0] == 0 && c[1] == 3 && c[2] == 4 && c[3] == 2, "a counts %lu %lu %lu %lu",
	       c[0], c[1], c[2], c[3]);
	EXPECT(s[1] == 30 && s[2] == 4 && s[3] == 2000, "a sizes %lu %lu %lu", s[1], s[2], s[3]);
	kp_msess_data(&a, 0x7, c, s);
	EXPECT(c[3] == 3 && s[3] == 2007, "a all classes: %lu %lu", c[3], s[3]);
	kp_msess_data(&a, 0x2, c, NULL);
	EXPECT(c[3] == 1 && c[1] == 0, "a coll only");
	kp_msess_data(&b, 0x1, c, s);
	EXPECT(c[1] == 0 && c[2] == 0 && c[3] == 2 && s[3] == 2000, "b p2p");
	kp_msess_data(&b, 0x4, c, s);
	EXPECT(c[0] == 6 && s[0] == 48, "b osc after continue: %lu %lu", c[0], s[0]);
	/* the odd communicator: its rank 0 is world 1, rank 1 world 3 */
	kp_msess_data(&odd, 0x7, c, s);
	EXPECT(c[0] == 0 && c[1] == 3 && s[1] == 2007, "odd by its ranks: %lu %lu %lu", c[0],
	       c[1], s[1]);
	kp_msess_reset(&a);
	kp_msess_data(&a, 0x7, c, s);
	EXPECT(c[1] + c[2] + c[3] + s[3] == 0, "reset zeroes");
	kp_msess_continue(&a, &cur);
	sent(KP_MC_P2P, 1, 1, 1);
	kp_msess_suspend(&a, &cur);
	kp_msess_data(&a, 0x1, c, s);
	EXPECT(c[1] == 1 && s[1] == 1 && c[2] == 0, "counts again after reset");
	/* a source that went backwards adds nothing */
	kp_msess_continue(&a, &cur);
	*kp_mcount_at(&cur, KP_MC_P2P, KP_MK_COUNT, 1) = 0;
	kp_msess_suspend(&a, &cur);
	kp_msess_data(&a, 0x1, c, s);
	EXPECT(c[1] == 1, "no wrap-around: %lu", c[1]);
	kp_msess_free(&a);
	kp_msess_free(&b);
	kp_msess_free(&odd);
	EXPECT(a.state == KP_MS_FREE && !a.acc, "freed");
}

static void test_files(void)
{
	char dir[] = "/tmp/kprog-test-mon-XXXXXX", path[256], line[256];
	unsigned long c[3] = { 0, 2, 1 }, s[3] = { 0, 200, 0 };
	unsigned long m[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 18446744073709551615ul }, back[16];
	FILE *f;
	int n = 0;

	if (!mkdtemp(dir)) {
		EXPECT(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/v.1.prof", dir);
	EXPECT(!kp_mfile_write_vector(path, 1, 3, c, s), "write vector");
	f = fopen(path, "r");
	EXPECT(f && fgets(line, sizeof(line), f), "read vector");
	EXPECT(!strcmp(line, "E\t1\t1\t200 bytes\t2 msgs sent\n"), "line 1: %s", line);
	EXPECT(f && fgets(line, sizeof(line), f), "second line");
	EXPECT(!strcmp(line, "E\t1\t2\t0 bytes\t1 msgs sent\n"), "line 2: %s", line);
	EXPECT(f && !fgets(line, sizeof(line), f), "peers without messages omitted");
	if (f)
		fclose(f);
	unlink(path);
	snprintf(path, sizeof(path), "%s/m_counts.0.prof", dir);
	EXPECT(!kp_mfile_write_matrix(path, 3, m), "write matrix");
	f = fopen(path, "r");
	EXPECT(f && fgets(line, sizeof(line), f) && !strcmp(line, "0 1 2\n"), "row 0: %s", line);
	if (f)
		fclose(f);
	n = kp_mfile_read_matrix(path, back, 4);
	EXPECT(n == 3 && !memcmp(back, m, sizeof(m)), "matrix round trip, n %d", n);
	EXPECT(kp_mfile_read_matrix(path, back, 2) == -1, "matrix too big for the caller");
	unlink(path);
	EXPECT(kp_mfile_write_vector("/nonexistent/dir/x.0.prof", 0, 3, c, s) == -1,
	       "unwritable path is an error");
	rmdir(dir);
}

static void test_classes(void)
{
	EXPECT(kp_wp_class(0) == 0, "0 bytes");
	EXPECT(kp_wp_class(1) == 1, "1 byte");
	EXPECT(kp_wp_class(2) == 2 && kp_wp_class(3) == 2, "2..3");
	EXPECT(kp_wp_class(4) == 3 && kp_wp_class(7) == 3, "4..7");
	EXPECT(kp_wp_class(1024) == 11 && kp_wp_class(2047) == 11, "1 KiB");
	EXPECT(kp_wp_class(~0ull) == KP_WP_NCLASS - 1, "huge: last class");
}

static void test_minimum(void)
{
	struct kp_wp_table t;
	double mins[KP_WP_NFN][KP_WP_NCLASS];
	struct kp_wp_cell *a, *b;
	unsigned int i;

	EXPECT(!kp_wp_table_init(&t, 64), "table");
	/* site 1: 3 receives of 100 B, 1 s, 5 s, 2 s; site 2: one of 120 B, 0.5 s */
	kp_wp_record(&t, KP_WP_RECV, 1, 100, 1.0);
	kp_wp_record(&t, KP_WP_RECV, 1, 100, 5.0);
	a = kp_wp_record(&t, KP_WP_RECV, 1, 100, 2.0);
	b = kp_wp_record(&t, KP_WP_RECV, 2, 120, 0.5);
	kp_wp_record(&t, KP_WP_RECV, 1, 4096, 9.0);	/* another class */
	kp_wp_record(&t, KP_WP_ALLREDUCE, 1, 8, 3.0);
	EXPECT(a && a->n == 3 && a->sum == 8.0 && a->min == 1.0, "cell stats");
	kp_wp_local_min(&t, mins);
	EXPECT(mins[KP_WP_RECV][kp_wp_class(100)] == 0.5, "min over call sites");
	EXPECT(mins[KP_WP_RECV][kp_wp_class(4096)] == 9.0, "per class");
	EXPECT(isinf(mins[KP_WP_WAIT][0]), "unused: infinity");
	/* L(c) = sum d - n * M_p(f, s) = 8 - 3 * 0.5 */
	EXPECT(kp_wp_wait(a, mins[KP_WP_RECV][kp_wp_class(100)]) == 6.5, "late sender");
	EXPECT(kp_wp_wait(b, mins[KP_WP_RECV][kp_wp_class(120)]) == 0.0, "the minimum waits 0");
	/* a global minimum below the local one (Wait at NxN) */
	a = kp_wp_record(&t, KP_WP_ALLREDUCE, 1, 8, 1.0);
	EXPECT(kp_wp_wait(a, 0.25) == 3.5, "wait at NxN: %g", kp_wp_wait(a, 0.25));
	/* a full table merges new sites into the site-0 cell, loses no call */
	for (i = 0; i < 100; i++)
		kp_wp_record(&t, KP_WP_WAIT, 1000 + i, 1, 1.0);
	EXPECT(t.used * 4 <= t.cap * 3 + 4, "table stays below 3/4 (+ merge cells): %u", t.used);
	kp_wp_local_min(&t, mins);
	{
		uint64_t calls = 0;

		for (i = 0; i < t.cap; i++)
			if (t.cells[i].used && t.cells[i].fn == KP_WP_WAIT)
				calls += t.cells[i].n;
		EXPECT(calls == 100, "every call counted: %llu", (unsigned long long)calls);
	}
	kp_wp_table_free(&t);
}

/* The hot path adds integer ticks and ns; kp_wp_fold() brings them into the doubles. */
static void test_fold(void)
{
	struct kp_wp_table t;
	struct kp_wp_cell *c;

	EXPECT(!kp_wp_table_init(&t, 16), "table");
	c = kp_wp_record(&t, KP_WP_RECV, 7, 64, 10.0);	/* first call: the slow path */
	EXPECT(c && c->tmin == UINT64_MAX, "a new cell has no integer minimum");
	kp_wp_add(c, 4);
	kp_wp_add(c, 20);
	c->ls_n += 2;
	c->ls_ns += 3000000000ull;
	EXPECT(c->n == 3 && c->sum == 10.0 && c->min == 10.0, "not folded yet");
	kp_wp_fold(&t);
	EXPECT(c->n == 3 && c->sum == 34.0 && c->min == 4.0, "folded: sum %g min %g", c->sum, c->min);
	EXPECT(c->ls_exact == 3.0 && c->ls_ns == 0, "late sender in seconds: %g", c->ls_exact);
	kp_wp_fold(&t);
	EXPECT(c->sum == 34.0 && c->min == 4.0 && c->ls_exact == 3.0, "folding twice changes nothing");
	kp_wp_add(c, 50);
	kp_wp_fold(&t);
	EXPECT(c->n == 4 && c->sum == 84.0 && c->min == 4.0, "a larger call keeps the minimum");
	kp_wp_table_free(&t);
}

int main(void)
{
	test_sessions();
	test_files();
	test_classes();
	test_minimum();
	test_fold();
	return EXPECT_SUMMARY();
}
