/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog memory shared with user space (rings, channels, grant tables):
 * charged to the memory cgroup of the task that allocates it.
 */
#ifndef _KPROG_VMEM_H
#define _KPROG_VMEM_H

#include <linux/mm_types.h>

void *kprog_vmem_alloc(unsigned long bytes);
int kprog_vmem_mmap(struct vm_area_struct *vma, void *mem,
		    unsigned long bytes);

#endif /* _KPROG_VMEM_H */
