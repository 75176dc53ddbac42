/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog fast-path channels: memory shared by two endpoints of a job on
 * this node, through which the processes exchange small messages without
 * a system call (include/uapi/linux/kprog.h has the layout and the
 * protocol). The kernel creates and maps them, and drains records into
 * its matching when the order of messages requires it.
 */
#ifndef _KPROG_CHAN_H
#define _KPROG_CHAN_H

#include <linux/types.h>
#include <linux/kprog.h>

struct kprog_ep;
struct vm_area_struct;

int kprog_chan_open(struct kprog_ep *ep, struct kprog_chan_open *co);
int kprog_chan_mmap(struct kprog_ep *ep, struct vm_area_struct *vma);
int kprog_chan_drain(struct kprog_ep *ep, s32 peer);
int kprog_chan_drain_to(struct kprog_ep *ep, u32 dst);
int kprog_chan_kick(struct kprog_ep *ep, u32 rank);
void kprog_chan_flush_out(struct kprog_ep *ep);
void kprog_chan_depart(struct kprog_ep *ep);

#endif /* _KPROG_CHAN_H */
