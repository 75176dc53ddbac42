/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libkprog internals of the monitoring sessions (MPI_Monitoring.h):
 * sources of counts (mon_src.c) and the hook of pass-through sends.
 */
#ifndef KPROG_MON_H
#define KPROG_MON_H

#include <stdbool.h>
#include <mpi.h>
#include <linux/kprog.h>
#include "mon_sess.h"

extern bool kp_mon_counting;	/* a session is active and the shim counts pass-through */
extern bool kp_mon_active;	/* a session is active: collectives kprog carries are counted */

int kp_mon_src_init(void);
void kp_mon_src_fini(void);
int kp_mon_src_read(struct kp_mcount *cur);
bool kp_mon_src_needs_pass(void);
const char *kp_mon_src_describe(void);
void kp_mon_pass_send(MPI_Comm comm, int dest, int count, MPI_Datatype type);
/* The sends of a schedule handed to the module (peers: world ranks), as collective traffic. */
void kp_mon_coll_steps(const struct kprog_coll_step *steps, uint32_t n);

/* In the pass-through branch of every send wrapper: one flag test. */
#define KP_MON_PASS(comm, dest, count, type) do { \
	if (__builtin_expect(kp_mon_counting, 0)) \
		kp_mon_pass_send(comm, dest, count, type); \
} while (0)

#endif
