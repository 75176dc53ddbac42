// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench/kprog_detect.c: see kprog_detect.h. */
#define _GNU_SOURCE
#include "kprog_detect.h"

#include <dirent.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int kprog_world_mode(void)
{
	int (*mode)(MPI_Comm) = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "kprog_comm_mode");

	return mode ? mode(MPI_COMM_WORLD) : -2;
}

void kprog_local_status(int *loaded, int *devopen)
{
	char line[4096], path[300], tgt[256];
	FILE *f = fopen("/proc/self/maps", "r");
	DIR *d;
	struct dirent *e;

	*loaded = 0;
	*devopen = 0;
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "libkprog"))
				*loaded = 1;
		fclose(f);
	}
	d = opendir("/proc/self/fd");
	if (!d)
		return;
	while ((e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, tgt, sizeof(tgt) - 1);
		if (n > 0) {
			tgt[n] = 0;
			if (!strcmp(tgt, "/dev/kprog"))
				*devopen = 1;
		}
	}
	closedir(d);
	/*
	 * Open, but MPI_COMM_WORLD passes through (a job across nodes without
	 * the network transport): not kprog for this benchmark.
	 */
	if (*devopen && kprog_world_mode() == 0)
		*devopen = 0;
}

int kprog_describe(const int all[4], char *buf, size_t len)
{
	if (!all[0] && !all[2])
		snprintf(buf, len, "absent (libkprog.so not loaded)");
	else if (all[1] && all[3])
		snprintf(buf, len, "active (libkprog.so loaded, /dev/kprog open on both ranks%s)",
			 kprog_world_mode() == 2 ? "; network transport" : "");
	else if (all[0] && all[2] && !all[1] && !all[3])
		snprintf(buf, len, "passthrough (libkprog.so loaded, /dev/kprog not open or not used for MPI_COMM_WORLD%s)",
			 access("/dev/kprog", F_OK) ? ": no /dev/kprog" : "");
	else
		snprintf(buf, len, "partial (rank0: shim %d dev %d, rank1: shim %d dev %d)",
			 all[0], all[1], all[2], all[3]);
	return all[1] && all[3];
}
