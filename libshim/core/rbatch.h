/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Receives in batches (docs/DESIGN.md, "Receives in batches"): the queue
 * of a program's small MPI_Irecv from other nodes, kept here until one
 * KPROG_IOC_RECV_BATCH posts them all, in order. Only the queue and the
 * flush live here, without MPI or shim state, so that the unit test
 * (test_rbatch.c) drives them with its own ioctl; req.c says what a slot
 * is and what becomes of each entry, shim.h when the queue is flushed.
 */
#ifndef KPROG_SHIM_RBATCH_H
#define KPROG_SHIM_RBATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kprog.h>

#define KP_RB_MAX KPROG_RECV_BATCH_MAX

/* Receives queued, oldest first (request pool slots); read inline by KP_GUARD. */
extern uint32_t kp_rb_n;

/*
 * Posts the queue (req.c sets it when the pool is set up): every entry's
 * guard calls it through this pointer, so that no file calls req.c back.
 */
extern void (*kp_rb_flusher)(void);

/* What a flush does with the entries (req.c, or the unit test's mocks). */
struct kp_rb_ops {
	int (*ioctl)(int fd, unsigned long req, void *arg);
	/* the entry's post as it goes to the kernel (copied) */
	const struct kprog_post *(*post)(uint32_t slot);
	/* not posted (the refused entry and all after it), oldest first */
	void (*refused)(uint32_t slot);
	/* posted, with the kernel's done/cqe, oldest first, after every refused() */
	void (*posted)(uint32_t slot, const struct kprog_post *p);
};

/* Queue @slot behind the others; true when the queue is now full. */
bool kp_rb_add(uint32_t slot);

/*
 * Post the queue in one KPROG_IOC_RECV_BATCH (again from the first entry
 * not posted after EINTR). The queue is empty when the callbacks run, so
 * that whatever they post goes after its entries. Returns 0, or the errno
 * of the entry the kernel refused (that entry and the ones after it went
 * to refused()).
 */
int kp_rb_flush(int fd, const struct kp_rb_ops *ops);

#endif
