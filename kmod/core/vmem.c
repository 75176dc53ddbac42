// SPDX-License-Identifier: GPL-2.0
/*
 * kprog memory shared with user space: the completion rings, the
 * fast-path channels and the grant tables.
 *
 * vmalloc_user() would be the natural allocator, but it charges nothing
 * to the caller's memory cgroup, so a job confined to a small cgroup could
 * make the kernel allocate far beyond its limit (issue 32). The accounted
 * form, __vmalloc(GFP_KERNEL_ACCOUNT), leaves out VM_USERMAP, which
 * remap_vmalloc_range() insists on, and __vmalloc_node_range() (which
 * could set it) is not exported to modules. So the pages are allocated
 * accounted and zeroed and mapped here page by page with vm_insert_page(),
 * as remap_vmalloc_range() itself does; freeing is vfree().
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include "vmem.h"

/**
 * kprog_vmem_alloc() - zeroed pages to be mapped into user space
 * @bytes: size, rounded up to whole pages
 *
 * Charged to the current task's memory cgroup (the process that joins or
 * opens the channel). __GFP_RETRY_MAYFAIL: a cgroup at its limit gets
 * NULL (the caller's -ENOMEM) rather than an OOM kill of one of its tasks.
 * Process context. Free with vfree().
 *
 * Return: the memory or NULL.
 */
void *kprog_vmem_alloc(unsigned long bytes)
{
	return __vmalloc(PAGE_ALIGN(bytes),
			 GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_RETRY_MAYFAIL);
}

/**
 * kprog_vmem_mmap() - map memory of kprog_vmem_alloc() at a whole mapping
 * @vma: the mapping; its offset was checked by the caller
 * @mem: the memory, from its first page
 * @bytes: its size as allocated
 *
 * Return: 0, -EINVAL (the mapping is longer than the memory) or an error
 * of vm_insert_page(); the pages already inserted go with the mapping,
 * which the kernel unmaps when mmap fails.
 */
int kprog_vmem_mmap(struct vm_area_struct *vma, void *mem, unsigned long bytes)
{
	unsigned long len = vma->vm_end - vma->vm_start, off;
	int err;

	if (len > PAGE_ALIGN(bytes))
		return -EINVAL;
	for (off = 0; off < len; off += PAGE_SIZE) {
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(mem + off));
		if (err)
			return err;
	}
	return 0;
}
