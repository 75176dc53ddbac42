/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench/kprog_detect.h: is this process really running on kprog? The
 * benchmarks label their kprog column with what they saw, not with what
 * they were asked to run: the shim can be loaded and still pass through.
 */
#ifndef KPROG_DETECT_H
#define KPROG_DETECT_H

#include <stddef.h>

/*
 * *loaded: libkprog.so is mapped; *devopen: /dev/kprog is open here and
 * (if the shim says, kprog_comm_mode()) MPI_COMM_WORLD goes through it.
 */
void kprog_local_status(int *loaded, int *devopen);

/*
 * What the shim says of MPI_COMM_WORLD (its kprog_comm_mode()): -2 no
 * shim (or an old one), -1 pass-through, 0 the world goes to Open MPI,
 * 1 kprog within the node, 2 kprog with the network transport.
 */
int kprog_world_mode(void);

/*
 * @all: {loaded, devopen} of rank 0 then rank 1. Writes one line saying
 * "absent", "active", "passthrough" or "partial" (and why) to @buf;
 * returns 1 if kprog is active on both ranks.
 */
int kprog_describe(const int all[4], char *buf, size_t len);

#endif
