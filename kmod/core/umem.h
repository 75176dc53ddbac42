/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog user memory: buffers described by iovecs in some process's
 * address space, and the one way the module moves bytes into or between
 * them when it is not running in that process (pin a chunk, map, copy,
 * unpin). Transports and the eager path use it; it knows nothing about
 * messages or operations.
 */
#ifndef _KPROG_UMEM_H
#define _KPROG_UMEM_H

#include <linux/types.h>
#include <linux/kprog.h>

struct mm_struct;

/**
 * struct kprog_ubuf - a buffer in user memory
 * @mm: the address space @iov refers to, mmgrab()ed by the owner of the
 *	buffer; users that touch the pages take mmget_not_zero() themselves
 * @iov: the segments, none of them empty
 * @nr_iov: entries in @iov
 * @len: total bytes
 * @memlock: pages the owner may hold pinned long-term in @mm (its
 *	RLIMIT_MEMLOCK when it posted, U64_MAX with CAP_IPC_LOCK, 0 when the
 *	buffer was posted from another process): what a transport that pins
 *	for a network transfer charges to @mm's pinned_vm against
 */
struct kprog_ubuf {
	struct mm_struct *mm;
	const struct kprog_iov *iov;
	u32 nr_iov;
	u64 len;
	u64 memlock;
};

/**
 * struct kprog_iov_import - an iovec taken from a post
 * @iov: the non-empty segments; @inline_iov or a kvmalloc()ed array
 * @nr_iov: entries in @iov
 * @len: total bytes, at most KPROG_MAX_MSG
 * @charge: entries of the array as posted (0 for a single buffer), what
 *	counts against max_iov_total
 * @inline_iov: storage for a single segment
 */
struct kprog_iov_import {
	struct kprog_iov *iov;
	u32 nr_iov;
	u64 len;
	u32 charge;
	struct kprog_iov inline_iov;
};

void kprog_copy(void *dst, const void *src, size_t n);
/* vcopy.c: only between kernel_fpu_begin() and kernel_fpu_end() */
void kprog_vcopy(void *__restrict dst, const void *__restrict src, size_t n);

int kprog_iov_import(struct kprog_iov_import *im, const struct kprog_post *p);
void kprog_iov_release(struct kprog_iov_import *im);

int kprog_umem_copy_in(void *dst, const struct kprog_iov *iov, u32 nr_iov,
		       u64 len);
u64 kprog_umem_copy_out(const struct kprog_iov *iov, u32 nr_iov,
			const void *src, u64 len, int *err);

/**
 * typedef kprog_umem_abort_t - asked between chunks whether to stop
 * @arg: the caller's argument
 *
 * Return: true to stop with -ECONNRESET.
 */
typedef bool (*kprog_umem_abort_t)(void *arg);

u64 kprog_umem_copy(const struct kprog_ubuf *dst, const struct kprog_ubuf *src,
		    const void *kbuf, u64 len, kprog_umem_abort_t abort,
		    void *arg, int *err);

/*
 * A small receive buffer of one segment, pinned when it is posted, so that
 * a message arriving in softirq context (from another node) is copied
 * into it at once, without waking a worker to pin and copy.
 */
#define KPROG_ULAND_PAGES	3
#define KPROG_ULAND_MAX		8192

struct page;

/**
 * struct kprog_uland - the pinned pages of a small receive buffer
 * @pages: the pages under the buffer, pinned FOLL_WRITE | FOLL_LONGTERM
 * @off: the buffer's offset in @pages[0]
 * @nr: pinned pages (0: none, the buffer is reached as before)
 */
struct kprog_uland {
	struct page *pages[KPROG_ULAND_PAGES];
	u16 off;
	u8 nr;
};

void kprog_uland_pin(struct kprog_uland *l, const struct kprog_ubuf *buf);
u64 kprog_uland_copy(const struct kprog_uland *l, const void *src, u64 len);
void kprog_uland_unpin(struct kprog_uland *l, struct mm_struct *mm);

#endif /* _KPROG_UMEM_H */
