// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The collective start call and MPI_Wait split by the shim's own stamps
 * (collprof.h): per interval the median and mean over the calls, per rank,
 * printed at MPI_Finalize. Only libkprog-collprof.so has this code.
 */
#ifdef KP_COLL_PROF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collprof.h"

#define NSAMP 8192

uint64_t kp_cp_t[KP_CP_N];
unsigned int kp_cp_loops;

enum iv { I_CHECKS, I_BUILD, I_PREP, I_IOCTL, I_AFTER, I_START,
	  I_WPRE, I_WDONE, I_WPOST, I_WAIT, I_WAITED, I_N };
static const char *const iv_name[I_N] = {
	"start: checks (entry to kp_coll_new)",
	"start: request, buffers, schedule (to kp_coll_start)",
	"start: peers, ioc (to the ioctl)",
	"start: KPROG_IOC_COLL",
	"start: after the ioctl",
	"start: whole (shim + ioctl)",
	"wait done at once: entry to kp_coll_complete",
	"wait done at once: kp_coll_complete",
	"wait done at once: after it, to return",
	"wait done at once: whole",
	"wait that waited: whole",
};
static uint32_t samp[I_N][NSAMP];
static unsigned int ns[I_N];

static void keep(int i, uint64_t a, uint64_t b)
{
	if (ns[i] < NSAMP)
		samp[i][ns[i]++] = (uint32_t)kp_ticks_ns(b - a);
}

static bool ordered(int from, int to)
{
	for (int p = from; p < to; p++)
		if (!kp_cp_t[p] || kp_cp_t[p + 1] < kp_cp_t[p])
			return false;
	return true;
}

void kp_cp_start_done(void)
{
	const uint64_t *t = kp_cp_t;

	if (ordered(KP_CP_S_ENTRY, KP_CP_S_END)) {
		keep(I_CHECKS, t[KP_CP_S_ENTRY], t[KP_CP_S_NEW]);
		keep(I_BUILD, t[KP_CP_S_NEW], t[KP_CP_S_START]);
		keep(I_PREP, t[KP_CP_S_START], t[KP_CP_S_IOCTL]);
		keep(I_IOCTL, t[KP_CP_S_IOCTL], t[KP_CP_S_IOCTL_END]);
		keep(I_AFTER, t[KP_CP_S_IOCTL_END], t[KP_CP_S_END]);
		keep(I_START, t[KP_CP_S_ENTRY], t[KP_CP_S_END]);
	}
	memset(kp_cp_t, 0, sizeof(kp_cp_t[0]) * (KP_CP_S_END + 1));
}

void kp_cp_wait_done(void)
{
	const uint64_t *t = kp_cp_t;

	if (kp_cp_loops)
		keep(I_WAITED, t[KP_CP_W_ENTRY], t[KP_CP_W_END]);
	else if (ordered(KP_CP_W_ENTRY, KP_CP_W_END)) {
		keep(I_WPRE, t[KP_CP_W_ENTRY], t[KP_CP_W_DONE0]);
		keep(I_WDONE, t[KP_CP_W_DONE0], t[KP_CP_W_DONE1]);
		keep(I_WPOST, t[KP_CP_W_DONE1], t[KP_CP_W_END]);
		keep(I_WAIT, t[KP_CP_W_ENTRY], t[KP_CP_W_END]);
	}
	memset(&kp_cp_t[KP_CP_W_ENTRY], 0, sizeof(kp_cp_t[0]) * (KP_CP_N - KP_CP_W_ENTRY));
	kp_cp_loops = 0;
}

static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void kp_cp_report(int rank)
{
	for (int i = 0; i < I_N; i++) {
		unsigned int n = ns[i];
		double sum = 0;

		if (!n)
			continue;
		qsort(samp[i], n, sizeof(samp[i][0]), cmp);
		for (unsigned int j = 0; j < n; j++)
			sum += samp[i][j];
		fprintf(stderr, "collprof rank %d: %-52s n %5u median %8.2f us mean %8.2f p10 %8.2f p90 %8.2f\n",
			rank, iv_name[i], n, samp[i][n / 2] / 1e3, sum / n / 1e3,
			samp[i][n / 10] / 1e3, samp[i][n * 9 / 10] / 1e3);
	}
}
#endif
