/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog collective schedules (KPROG_IOC_COLL): a nonblocking collective
 * handed to the module as rounds of steps, run from the module's
 * completion path (coll.c), its COPY and REDUCE steps (coll_local.c) and
 * the reduction kernels of REDUCE (coll_reduce.c). docs/DESIGN.md,
 * "Collective schedules".
 */
#ifndef _KPROG_COLL_H
#define _KPROG_COLL_H

#include <linux/types.h>

struct kprog_ep;
struct kprog_op;
struct kprog_coll;
struct kprog_cqe;
struct kprog_coll_step;

extern unsigned int kprog_max_coll_steps;
extern unsigned int kprog_max_colls;
extern unsigned int kprog_coll_start_delay_us;

int kprog_coll_post(struct kprog_ep *ep, struct kprog_coll *uc);
void kprog_coll_close(struct kprog_ep *ep);
int kprog_coll_init(void);
void kprog_coll_exit(void);

/* coll_local.c */
int kprog_coll_local(const struct kprog_coll_step *st);

/* coll_reduce.c: arithmetic only, see there */
u32 kprog_reduce_size(u32 dtype, u32 op);
void kprog_reduce_apply(u32 dtype, u32 op, void *dst, const void *src,
			size_t n);

#endif /* _KPROG_COLL_H */
