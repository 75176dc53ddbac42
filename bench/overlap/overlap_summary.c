// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/overlap-summary: read back the CSVs of bench/overlap (plain Open
 * MPI and, optionally, under kprog) and print, per benchmark, the median
 * overhead ratio over the rendezvous region and over the whole grid, side
 * by side. bench/run-overlap calls it; it also works on old result
 * directories: bench/overlap-summary DIR/plain.csv DIR/kprog.csv
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlap_stats.h"

static const char *const benches[] = {
	"sender", "receiver", "both", "noncontig", "cpu", "nload"
};

struct table {
	struct ovl_row *rows;
	int n;
};

/* Returns 0, or -1 after saying which line is bad. */
static int load(const char *path, struct table *t)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0, cap = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (lineno == 1 && !strncmp(line, "bench,", 6))
			continue;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (t->n == cap) {
			struct ovl_row *r;

			cap = cap ? 2 * cap : 256;
			r = realloc(t->rows, cap * sizeof(*r));
			if (!r) {
				fclose(f);
				fprintf(stderr, "overlap-summary: out of memory\n");
				return -1;
			}
			t->rows = r;
		}
		if (ovl_parse_row(line, &t->rows[t->n])) {
			fprintf(stderr, "overlap-summary: %s:%d: not a bench/overlap CSV row\n",
				path, lineno);
			fclose(f);
			return -1;
		}
		t->n++;
	}
	fclose(f);
	return 0;
}

/* One region's columns: median per file (blank for a missing file), valid and invalid point counts. */
static void region(const double med[2], const int n[2], const int inv[2], int nf)
{
	char pts[32], bad[32];

	for (int i = 0; i < 2; i++) {
		if (i >= nf)
			printf(" %7s", "");
		else if (n[i])
			printf(" %7.2f", med[i]);
		else
			printf(" %7s", "-");
	}
	if (nf > 1) {
		snprintf(pts, sizeof(pts), "%d/%d", n[0], n[1]);
		snprintf(bad, sizeof(bad), "%d/%d", inv[0], inv[1]);
	} else {
		snprintf(pts, sizeof(pts), "%d", n[0]);
		snprintf(bad, sizeof(bad), "%d", inv[0]);
	}
	printf(" %9s %7s", pts, bad);
}

static void usage(FILE *f, int st)
{
	fprintf(f,
"usage: overlap-summary [options] PLAIN.csv [KPROG.csv]\n"
"Per benchmark, the median overhead ratio (equation 1; nload: slowdown) of the\n"
"valid grid points of each CSV written by bench/overlap --csv: over the\n"
"rendezvous region (sizes above --threshold) and over the whole grid. Invalid\n"
"points (valid 0, or no ratio; in older files a negative ratio) are left out\n"
"and counted, with their reasons.\n"
"  --threshold BYTES   rendezvous region = sizes > BYTES (default 0: every size)\n"
"  --plain-name NAME   column title of the first file (default plain)\n"
"  --kprog-name NAME   column title of the second file (default kprog)\n"
"  -h, --help          this text\n"
"Exit status: 0, 1 if a file cannot be read or parsed, 2 on bad usage.\n");
	exit(st);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threshold", 1, 0, 't' }, { "plain-name", 1, 0, 'p' },
		{ "kprog-name", 1, 0, 'k' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	struct table t[2] = { { 0 } };
	const char *name[2] = { "plain", "kprog" };
	struct ovl_summary sum[sizeof(benches) / sizeof(benches[0])][2] = { { { 0 } } };
	size_t thr = 0;
	int c, nf;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (ovl_parse_size(optarg, &thr)) {
				fprintf(stderr, "overlap-summary: bad --threshold '%s'\n", optarg);
				usage(stderr, 2);
			}
			break;
		case 'p': name[0] = optarg; break;
		case 'k': name[1] = optarg; break;
		case 'h': usage(stdout, 0); break;
		default: usage(stderr, 2);
		}
	}
	nf = argc - optind;
	if (nf < 1 || nf > 2)
		usage(stderr, 2);
	for (int i = 0; i < nf; i++)
		if (load(argv[optind + i], &t[i]))
			return 1;

	printf("# median over the valid grid points of the overhead ratio (eq. 1: 0 = full overlap, 1 = serialized; nload: slowdown)\n");
	printf("# rendezvous region: sizes > %zu bytes; 'valid' = points in the median, 'inv' = invalid points left out (%s%s)\n",
	       thr, name[0], nf > 1 ? "/kprog" : "");
	printf("%-10s | %-33s | %s\n", "", "rendezvous region", "whole grid");
	printf("%-10s | %7.7s %7.7s %9s %7s | %7.7s %7.7s %9s %7s\n", "bench", name[0], nf > 1 ? name[1] : "",
	       "valid", "inv", name[0], nf > 1 ? name[1] : "", "valid", "inv");
	for (size_t b = 0; b < sizeof(benches) / sizeof(benches[0]); b++) {
		struct ovl_summary s[2];

		for (int i = 0; i < 2; i++)
			sum[b][i] = s[i] = ovl_summarize(t[i].rows, t[i].n, benches[b], thr);
		if (!s[0].n_all && !s[1].n_all && !s[0].inv_all && !s[1].inv_all)
			continue;
		printf("%-10s |", benches[b]);
		region((double[2]){ s[0].rdv, s[1].rdv }, (int[2]){ s[0].n_rdv, s[1].n_rdv },
		       (int[2]){ s[0].inv_rdv, s[1].inv_rdv }, nf);
		printf(" |");
		region((double[2]){ s[0].all, s[1].all }, (int[2]){ s[0].n_all, s[1].n_all },
		       (int[2]){ s[0].inv_all, s[1].inv_all }, nf);
		printf("\n");
	}
	/* how many were left out, and why */
	for (int i = 0; i < nf; i++) {
		int inv = 0, pts = 0, why[OVL_NREASONS] = { 0 };
		char list[160] = "";
		size_t len = 0;

		for (size_t b = 0; b < sizeof(benches) / sizeof(benches[0]); b++) {
			inv += sum[b][i].inv_all;
			pts += sum[b][i].inv_all + sum[b][i].n_all;
			for (int k = 0; k < OVL_NREASONS; k++)
				why[k] += sum[b][i].inv_reason[k];
		}
		for (int k = 1; k < OVL_NREASONS && len < sizeof(list); k++)
			if (why[k])
				len += snprintf(list + len, sizeof(list) - len, "%s%s %d",
						len ? ", " : ": ", ovl_reason_name(k), why[k]);
		printf("# %s: %d of %d grid points invalid, left out of the medians%s\n", name[i], inv, pts,
		       list);
	}
	/*
	 * The ratio divides by the ping-pong T_comm. When the same transfer
	 * inside a benchmark (T0, no computation) takes far longer, the ratio
	 * reads far above 1 without saying anything about overlap: say so,
	 * with ratio0 (T_comm := T0) next to it.
	 */
	for (size_t b = 0; b < sizeof(benches) / sizeof(benches[0]); b++)
		for (int i = 0; i < nf; i++)
			if (sum[b][i].slow > 2)
				printf("# %s, %s: without computation the transfer took %.1fx the ping-pong T_comm (median over the region),\n"
				       "#   so its ratios overstate; with T_comm := T0 (ratio0) the region's median is %.2f\n",
				       name[i], benches[b], sum[b][i].slow, sum[b][i].rdv0);
	free(t[0].rows);
	free(t[1].rows);
	return 0;
}
