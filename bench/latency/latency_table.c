// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/latency_table.c: `latency-table`, the side-by-side report of
 * bench/run-latency. Reads the CSVs of bench/latency (every repetition of
 * both libraries), merges the repetitions per point (lat_merge: median of
 * each statistic), and prints per mode a table with the two libraries and
 * their ratio; optionally writes the merged CSV and gnuplot data files.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency_stats.h"

#define MAX_ROWS 20000

static const char *la = "plain", *lb = "kprog";
static struct lat_row *rows, *merged;
static int nrows, nmerged;

static void usage(FILE *f)
{
	fprintf(f,
"Usage: latency-table [--a LABEL] [--b LABEL] [--dat DIR] [--merged FILE] CSV...\n"
"Merges the rows of bench/latency's CSVs per point (label, mode, np, pair,\n"
"size): every statistic is the median over the runs (repetitions), samples,\n"
"iterations and errors are summed. Prints one table per mode with label A\n"
"(default plain), label B (default kprog) and the ratio B/A of the medians\n"
"(latency: > 1 = B slower; message rate: < 1 = B slower). '!' marks a point\n"
"whose interquartile range exceeds 30%% of its median (noisy).\n"
"--merged FILE writes the merged rows as CSV; --dat DIR writes gnuplot data:\n"
"pingpong.dat, msgrate.dat, npscale[-concurrent]-SIZE.dat (NaN = missing).\n");
}

static int read_csv(const char *path)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	int lineno = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strncmp(line, "label,", 6) || line[0] == '\n' || line[0] == '#')
			continue;
		if (nrows >= MAX_ROWS) {
			fprintf(stderr, "latency-table: more than %d rows\n", MAX_ROWS);
			break;
		}
		if (lat_csv_parse(line, &rows[nrows]))
			fprintf(stderr, "latency-table: %s:%d: bad row ignored\n", path, lineno);
		else
			nrows++;
	}
	fclose(f);
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

/* distinct values of size (or np) over the merged rows of @mode */
static int distinct(const char *mode, int by_np, size_t only_size, size_t *out, int cap)
{
	int i, j, n = 0;

	for (i = 0; i < nmerged; i++) {
		size_t v;

		if (strcmp(merged[i].mode, mode))
			continue;
		if (by_np && merged[i].size != only_size)
			continue;
		v = by_np ? (size_t)merged[i].np : merged[i].size;
		for (j = 0; j < n && out[j] != v; j++)
			;
		if (j == n && n < cap)
			out[n++] = v;
	}
	qsort(out, n, sizeof(*out), cmp_size);
	return n;
}

static const char *noisy(const struct lat_row *r)
{
	return r && r->st.med > 0 && (r->st.q3 - r->st.q1) / r->st.med > 0.3 ? "!" : " ";
}

/* median [q1..q3] and the fastest batch (or slowest rate): 43 columns */
static void cell(const struct lat_row *r, const char *fmt4)
{
	if (r) {
		printf(fmt4, r->st.med, r->st.q1, r->st.q3, noisy(r), r->st.min);
	} else {
		printf("%43s", "-");
	}
}

static void ratio_cell(const struct lat_row *a, const struct lat_row *b)
{
	double q = a && b ? lat_ratio(b->st.med, a->st.med) : NAN;

	if (isnan(q))
		printf(" | %9s", "-");
	else
		printf(" | %9.2f", q);
}

static FILE *dat_open(const char *dir, const char *name)
{
	char path[1024];
	FILE *f;

	if (!dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		perror(path);
	return f;
}

static void dat_vals(FILE *f, const struct lat_row *r, int minmax)
{
	if (!r)
		fprintf(f, " NaN NaN NaN");
	else if (minmax)
		fprintf(f, " %g %g %g", r->st.min, r->st.mean, r->st.max);
	else
		fprintf(f, " %g %g %g", r->st.med, r->st.q1, r->st.q3);
}

static void table_pingpong(const char *dir)
{
	size_t sz[LAT_MAX_SIZES * 4];
	int n = distinct("pingpong", 0, 0, sz, LAT_MAX_SIZES * 4), i;
	FILE *f;

	if (!n)
		return;
	f = dat_open(dir, "pingpong.dat");
	printf("\n== pingpong: one-way latency (us), ranks 0-1, MPI_Send/MPI_Recv: median [q1..q3] of the batches, min = fastest batch\n");
	printf("%8s | %43s | %43s | %9s\n", "size", la, lb, "ratio");
	printf("%8s | %33s %9s | %33s %9s | %9s\n", "bytes", "median [q1..q3]", "min", "median [q1..q3]", "min",
	       "kp/plain");
	for (i = 0; i < n; i++) {
		const struct lat_row *a = lat_find(merged, nmerged, la, "pingpong", 2, "0-1", sz[i]);
		const struct lat_row *b = lat_find(merged, nmerged, lb, "pingpong", 2, "0-1", sz[i]);

		printf("%8zu | ", sz[i]);
		cell(a, "%9.3f [%9.3f..%9.3f]%s %9.3f");
		printf(" | ");
		cell(b, "%9.3f [%9.3f..%9.3f]%s %9.3f");
		ratio_cell(a, b);
		printf("\n");
		if (f) {
			fprintf(f, "%zu %g", sz[i], sz[i] ? (double)sz[i] : 0.5);
			dat_vals(f, a, 0);
			dat_vals(f, b, 0);
			fprintf(f, "\n");
		}
	}
	if (f)
		fclose(f);
}

static void table_npscale(const char *mode, const char *dir)
{
	size_t sz[LAT_MAX_SIZES * 4], np[64];
	int ns = distinct(mode, 0, 0, sz, LAT_MAX_SIZES * 4), s, i, n;
	char name[128];
	FILE *f;

	for (s = 0; s < ns; s++) {
		n = distinct(mode, 1, sz[s], np, 64);
		snprintf(name, sizeof(name), "%s-%zu.dat", mode, sz[s]);
		f = dat_open(dir, name);
		printf("\n== %s, %zu B: one-way latency (us) of %s;\n", mode, sz[s],
		       strcmp(mode, "npscale") ? "every pair at the same time" :
		       "each pair, one pair at a time while the other ranks wait in MPI_Recv");
		printf("   min / avg / max over the pairs of each pair's median (the RFC's HPCC table)\n");
		printf("%4s | %29s | %29s | %19s\n", "np", la, lb, "kp/plain");
		printf("%4s | %9s %9s %9s | %9s %9s %9s | %9s %9s\n", "", "min", "avg", "max", "min",
		       "avg", "max", "avg", "max");
		for (i = 0; i < n; i++) {
			const struct lat_row *a = lat_find(merged, nmerged, la, mode, (int)np[i], "all", sz[s]);
			const struct lat_row *b = lat_find(merged, nmerged, lb, mode, (int)np[i], "all", sz[s]);
			double ra = a && b ? lat_ratio(b->st.mean, a->st.mean) : NAN;
			double rm = a && b ? lat_ratio(b->st.max, a->st.max) : NAN;

			printf("%4zu | ", np[i]);
			if (a)
				printf("%9.3f %9.3f %9.3f", a->st.min, a->st.mean, a->st.max);
			else
				printf("%29s", "-");
			printf(" | ");
			if (b)
				printf("%9.3f %9.3f %9.3f", b->st.min, b->st.mean, b->st.max);
			else
				printf("%29s", "-");
			printf(" | %9.2f %9.2f\n", ra, rm);
			if (f) {
				fprintf(f, "%zu", np[i]);
				dat_vals(f, a, 1);
				dat_vals(f, b, 1);
				fprintf(f, "\n");
			}
		}
		if (f)
			fclose(f);
	}
}

static void table_msgrate(const char *dir)
{
	size_t sz[LAT_MAX_SIZES * 4];
	int n = distinct("msgrate", 0, 0, sz, LAT_MAX_SIZES * 4), i;
	FILE *f;

	if (!n)
		return;
	f = dat_open(dir, "msgrate.dat");
	printf("\n== msgrate: messages/s rank 0 -> 1 (windows of Isend/Irecv + Waitall): median [q1..q3] of the repetitions, MB/s at the median\n");
	printf("%8s | %36s %9s | %36s %9s | %9s\n", "size", la, "", lb, "", "ratio");
	printf("%8s | %36s %9s | %36s %9s | %9s\n", "bytes", "msg/s [q1..q3]", "MB/s",
	       "msg/s [q1..q3]", "MB/s", "kp/plain");
	for (i = 0; i < n; i++) {
		const struct lat_row *a = lat_find(merged, nmerged, la, "msgrate", 2, "0-1", sz[i]);
		const struct lat_row *b = lat_find(merged, nmerged, lb, "msgrate", 2, "0-1", sz[i]);

		printf("%8zu | ", sz[i]);
		if (a)
			printf("%10.0f [%10.0f..%10.0f]%s %9.3f", a->st.med, a->st.q1, a->st.q3, noisy(a), a->mb_s);
		else
			printf("%46s", "-");
		printf(" | ");
		if (b)
			printf("%10.0f [%10.0f..%10.0f]%s %9.3f", b->st.med, b->st.q1, b->st.q3, noisy(b), b->mb_s);
		else
			printf("%46s", "-");
		ratio_cell(a, b);
		printf("\n");
		if (f) {
			fprintf(f, "%zu", sz[i]);
			dat_vals(f, a, 0);
			dat_vals(f, b, 0);
			fprintf(f, " %g %g\n", a ? a->mb_s : NAN, b ? b->mb_s : NAN);
		}
	}
	if (f)
		fclose(f);
}

/* per label: runs, worst kprog status, errors */
static void summary_line(const char *label)
{
	const char *worst = NULL;
	long err = 0;
	int i, points = 0, maxreps = 0;

	for (i = 0; i < nmerged; i++) {
		if (strcmp(merged[i].label, label))
			continue;
		points++;
		err += merged[i].errors;
		if (merged[i].reps > maxreps)
			maxreps = merged[i].reps;
		/* the first status other than active, if any */
		if (!worst || (!strcmp(worst, "active") && strcmp(merged[i].kprog, "active")))
			worst = merged[i].kprog;
	}
	if (!points) {
		printf("# %s: no data\n", label);
		return;
	}
	printf("# %s: %d points, up to %d repetition(s) each, kprog status %s, data errors %ld%s\n",
	       label, points, maxreps, worst, err, err ? "  DATA ERROR" : "");
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *mpath = NULL;
	long err = 0;
	int i;

	rows = calloc(MAX_ROWS, sizeof(*rows));
	merged = calloc(MAX_ROWS, sizeof(*merged));
	if (!rows || !merged)
		return 2;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (i + 1 < argc && !strcmp(argv[i], "--a")) {
			la = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--b")) {
			lb = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--dat")) {
			dir = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--merged")) {
			mpath = argv[++i];
		} else if (argv[i][0] == '-') {
			usage(stderr);
			return 2;
		} else if (read_csv(argv[i])) {
			return 2;
		}
	}
	nmerged = lat_merge(rows, nrows, merged, MAX_ROWS);
	if (mpath) {
		FILE *f = fopen(mpath, "w");
		char line[512];

		if (!f) {
			perror(mpath);
			return 2;
		}
		fprintf(f, "%s\n", LAT_CSV_HEADER);
		for (i = 0; i < nmerged; i++)
			if (lat_csv_format(&merged[i], line, sizeof(line)) > 0)
				fprintf(f, "%s\n", line);
		fclose(f);
	}
	summary_line(la);
	summary_line(lb);
	table_pingpong(dir);
	table_npscale("npscale", dir);
	table_npscale("npscale-concurrent", dir);
	table_msgrate(dir);
	for (i = 0; i < nmerged; i++)
		err += merged[i].errors;
	return err ? 1 : 0;
}
