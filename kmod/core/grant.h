/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog grants: rendezvous sends a process posts by writing a channel
 * record and a slot of its own grant table (grant.c).
 */
#ifndef _KPROG_GRANT_H
#define _KPROG_GRANT_H

#include <linux/types.h>
#include <linux/kprog.h>

struct kprog_ep;
struct vm_area_struct;

int kprog_grant_setup(struct kprog_ep *ep);
int kprog_grant_mmap(struct kprog_ep *ep, struct vm_area_struct *vma);
int kprog_grant_take(struct kprog_ep *dst, u32 src, struct kprog_chan_rec *rec,
		     u32 len);

#endif /* _KPROG_GRANT_H */
