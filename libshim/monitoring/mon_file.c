// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * File formats of the monitoring sessions (MPI_M_flush, MPI_M_rootflush).
 *
 * flush, one file per process, <filename>.<rank>.prof: one line per peer
 * it sent to, in the layout of Open MPI's own monitoring dump, so the two
 * can be compared line by line (E: messages of the program, as Open MPI
 * marks its "external" ones; Open MPI adds a size histogram):
 *     E<TAB><rank><TAB><peer><TAB><bytes> bytes<TAB><count> msgs sent
 * (ranks of the session's communicator; peers with no message omitted).
 *
 * rootflush, two files at the root, <filename>_counts.<rank>.prof and
 * <filename>_sizes.<rank>.prof: the n x n matrix, row i = what rank i
 * sent, one row per line, values separated by one space; gnuplot reads it
 * as "matrix" data (tools/kprog-monmap draws it).
 */
#include <stdio.h>
#include <stdlib.h>
#include "mon_sess.h"

int kp_mfile_write_vector(const char *path, int rank, int n, const unsigned long *counts,
			  const unsigned long *sizes)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned long c = counts ? counts[i] : 0, b = sizes ? sizes[i] : 0;

		if (c || b)
			fprintf(f, "E\t%d\t%d\t%lu bytes\t%lu msgs sent\n", rank, i, b, c);
	}
	return fclose(f) ? -1 : 0;
}

int kp_mfile_write_matrix(const char *path, int n, const unsigned long *m)
{
	FILE *f = fopen(path, "w");
	int i, j;

	if (!f)
		return -1;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			fprintf(f, "%lu%c", m[(size_t)i * n + j], j + 1 < n ? ' ' : '\n');
	return fclose(f) ? -1 : 0;
}

int kp_mfile_read_matrix(const char *path, unsigned long *m, int max_n)
{
	FILE *f = fopen(path, "r");
	int n = 0, cols = 0, c;
	size_t got = 0;
	unsigned long v;

	if (!f)
		return -1;
	/* the first line gives n */
	while ((c = fgetc(f)) != EOF && c != '\n')
		if (c == ' ')
			cols++;
	if (c == EOF && !cols) {
		fclose(f);
		return -1;
	}
	n = cols + 1;
	if (n > max_n) {
		fclose(f);
		return -1;
	}
	rewind(f);
	while (got < (size_t)n * n && fscanf(f, "%lu", &v) == 1)
		m[got++] = v;
	fclose(f);
	return got == (size_t)n * n ? n : -1;
}
