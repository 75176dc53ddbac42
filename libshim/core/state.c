// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The shim's state (struct kp_state in shim.h: the device, the ring, the
 * settings read at MPI_Init) and its log lines. Every file of the shim
 * reads these; they live here, below all of them, so that no file has to
 * call MPI_Init's file (init.c fills the state).
 */
#include <stdarg.h>
#include <stdio.h>
#include "shim.h"

struct kp_state kp = { .fd = -1 };

/*
 * One write per line: stderr is unbuffered, and mpirun merges the ranks'
 * output as it comes, so a line written in pieces could be cut by another
 * rank's (the tests look for whole "kprog[R]: joined:" lines).
 */
void kp_logf(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n, m;

	n = snprintf(line, sizeof(line), "kprog[%d]: ", kp.world_rank);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = m < 0 ? n : n + m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;	/* cut, but still one line */
	line[n++] = '\n';
	fwrite(line, 1, (size_t)n, stderr);
}
