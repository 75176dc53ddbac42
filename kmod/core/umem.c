// SPDX-License-Identifier: GPL-2.0
/*
 * kprog user memory: iovec import and copies into, out of and between
 * user buffers.
 *
 * A copy into another process's buffer pins one chunk of its pages at a
 * time (pin_user_pages_remote() under mmget_not_zero()), so a transfer
 * never holds more than 2 * KPROG_UMEM_CHUNK pinned pages, pins nothing
 * between chunks, and notices a departed process quickly.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/moduleparam.h>
#ifdef CONFIG_X86
#include <asm/fpu/api.h>
#endif
#include "kprog.h"
#include "umem.h"

#define KPROG_UMEM_CHUNK	64	/* pages per side per step */

/*
 * Bulk copies between pages (pulls, COPY steps) through the vector kernel
 * of vcopy.c instead of memcpy(). Under the emulator every kprog figure is
 * measured in (qemu's TCG, -cpu max: ERMS without FSRM), the kernel's
 * memcpy() is `rep movsb`, which TCG runs one byte per iteration of a
 * translated loop; 16-byte vector moves are one access each
 * (docs/benchmarks-coll.md, "The kernel's copies"). Natively both run at
 * the cache's speed. Writable at run time, for A/B runs in one boot.
 */
static bool kprog_copy_vector = true;
module_param_named(copy_vector, kprog_copy_vector, bool, 0644);
MODULE_PARM_DESC(copy_vector,
		 "Copy pulled and locally copied bytes with 16-byte vector moves (x86) instead of memcpy() (default 1)");

/* Below this a copy is not worth an FPU section. */
#define KPROG_VCOPY_MIN		256

/**
 * kprog_copy() - copy between mapped pages or kernel memory
 * @dst: destination
 * @src: source, not overlapping @dst
 * @n: bytes
 *
 * Process context (the FPU section of the vector path); nothing may
 * fault: pinned and mapped pages, or kernel memory.
 */
void kprog_copy(void *dst, const void *src, size_t n)
{
#ifdef CONFIG_X86
	if (n >= KPROG_VCOPY_MIN && READ_ONCE(kprog_copy_vector)) {
		kernel_fpu_begin();
		kprog_vcopy(dst, src, n);
		kernel_fpu_end();
		return;
	}
#endif
	memcpy(dst, src, n);
}

/**
 * kprog_iov_import() - take the buffer description of a post
 * @im: filled on success; release with kprog_iov_release()
 * @p: the post; its addresses are in current's address space
 *
 * Empty segments are dropped so that nobody downstream sees them.
 *
 * Return: 0, -EINVAL (too many entries, a wrapping or too large range),
 * -EFAULT (unreadable array) or -ENOMEM.
 */
int kprog_iov_import(struct kprog_iov_import *im, const struct kprog_post *p)
{
	struct kprog_iov *iov;
	u64 total = 0;
	u32 i, n;

	memset(im, 0, sizeof(*im));
	im->iov = &im->inline_iov;
	if (!(p->flags & KPROG_POST_IOV)) {
		if (p->len > KPROG_MAX_MSG || p->addr + p->len < p->addr)
			return -EINVAL;
		im->len = p->len;
		if (p->len) {
			im->inline_iov.base = p->addr;
			im->inline_iov.len = p->len;
			im->nr_iov = 1;
		}
		return 0;
	}

	if (p->len > kprog_max_iov)
		return -EINVAL;
	n = p->len;
	if (!n)
		return 0;
	iov = kvmalloc_array(n, sizeof(*iov), GFP_KERNEL_ACCOUNT);
	if (!iov)
		return -ENOMEM;
	if (copy_from_user(iov, u64_to_user_ptr(p->addr), n * sizeof(*iov))) {
		kvfree(iov);
		return -EFAULT;
	}
	im->iov = iov;
	im->charge = n;
	for (i = 0; i < n; i++) {
		if (!iov[i].len)
			continue;
		if (iov[i].base + iov[i].len < iov[i].base ||
		    iov[i].len > KPROG_MAX_MSG - total) {
			kprog_iov_release(im);
			return -EINVAL;
		}
		total += iov[i].len;
		iov[im->nr_iov++] = iov[i];
	}
	im->len = total;
	return 0;
}

/**
 * kprog_iov_release() - free what kprog_iov_import() allocated
 * @im: an import, or a zeroed one
 */
void kprog_iov_release(struct kprog_iov_import *im)
{
	if (im->iov && im->iov != &im->inline_iov)
		kvfree(im->iov);
	im->iov = &im->inline_iov;
	im->nr_iov = 0;
}

/**
 * kprog_umem_copy_in() - copy a buffer of the current process in
 * @dst: kernel buffer of @len bytes
 * @iov: segments in current's address space
 * @nr_iov: entries
 * @len: their total length
 *
 * Return: 0 or -EFAULT.
 */
int kprog_umem_copy_in(void *dst, const struct kprog_iov *iov, u32 nr_iov,
		       u64 len)
{
	u64 pos = 0;
	u32 i;

	for (i = 0; i < nr_iov && pos < len; i++) {
		if (copy_from_user(dst + pos, u64_to_user_ptr(iov[i].base),
				   min(iov[i].len, len - pos)))
			return -EFAULT;
		pos += iov[i].len;
	}
	return 0;
}

/**
 * kprog_umem_copy_out() - copy into a buffer of the current process
 * @iov: segments in current's address space
 * @nr_iov: entries
 * @src: kernel data
 * @len: bytes to copy, at most the segments' total
 * @err: set to 0 or -EFAULT
 *
 * Return: bytes copied.
 */
u64 kprog_umem_copy_out(const struct kprog_iov *iov, u32 nr_iov,
			const void *src, u64 len, int *err)
{
	u64 pos = 0, c;
	u32 i;

	*err = 0;
	for (i = 0; i < nr_iov && pos < len; i++) {
		c = min(iov[i].len, len - pos);
		if (copy_to_user(u64_to_user_ptr(iov[i].base), src + pos, c)) {
			*err = -EFAULT;
			break;
		}
		pos += c;
	}
	return pos;
}

/* A position in a user buffer, or in a kernel buffer when d is NULL. */
struct kprog_umem_cursor {
	const struct kprog_ubuf *d;
	u32 idx;	/* current segment */
	u64 off;	/* offset in it, or in the kernel buffer */
};

static unsigned long kprog_umem_addr(const struct kprog_umem_cursor *c)
{
	return c->d->iov[c->idx].base + c->off;
}

/* Bytes that can be handled in one step from the cursor. */
static u64 kprog_umem_span(const struct kprog_umem_cursor *c)
{
	if (!c->d)
		return U64_MAX;
	return min_t(u64, c->d->iov[c->idx].len - c->off,
		     KPROG_UMEM_CHUNK * PAGE_SIZE -
		     offset_in_page(kprog_umem_addr(c)));
}

static void kprog_umem_advance(struct kprog_umem_cursor *c, u64 n)
{
	c->off += n;
	if (c->d && c->off == c->d->iov[c->idx].len) {
		c->idx++;
		c->off = 0;
	}
}

/* Pins the pages under [addr, addr + n); returns how many, or -errno. */
static long kprog_umem_pin(struct mm_struct *mm, unsigned long addr, u64 n,
			   bool write, struct page **pages)
{
	unsigned long nr = DIV_ROUND_UP(offset_in_page(addr) + n, PAGE_SIZE);
	long ret;

	mmap_read_lock(mm);
#ifdef KPROG_GUP_HAS_VMAS
	ret = pin_user_pages_remote(mm, addr & PAGE_MASK, nr,
				    write ? FOLL_WRITE : 0, pages, NULL, NULL);
#else
	ret = pin_user_pages_remote(mm, addr & PAGE_MASK, nr,
				    write ? FOLL_WRITE : 0, pages, NULL);
#endif
	mmap_read_unlock(mm);
	/*
	 * gup's answer to a fatal signal of the copying task (a process
	 * killed in its own call): it is leaving, as kprog_umem_copy()'s
	 * abort would have said at the next chunk.
	 */
	if (ret == -EINTR || ret == -ERESTARTSYS)
		return -ECONNRESET;
	return ret ? ret : -EFAULT;
}

/*
 * Copies @n bytes; @src is used when the source is a kernel buffer. @vec:
 * the caller runs in process context (kprog_copy()), not in a softirq.
 */
static void kprog_umem_memcpy(struct page **dp, unsigned long doff,
			      struct page **sp, unsigned long soff,
			      const void *src, u64 n, bool vec)
{
	u64 pos = 0;
	size_t c, dpo, spo;
	void *d, *s;

	while (pos < n) {
		dpo = offset_in_page(doff + pos);
		c = min_t(u64, n - pos, PAGE_SIZE - dpo);
		d = kmap_local_page(dp[(doff + pos) >> PAGE_SHIFT]);
		if (src) {
			if (vec)
				kprog_copy(d + dpo, src + pos, c);
			else
				memcpy(d + dpo, src + pos, c);
		} else {
			spo = offset_in_page(soff + pos);
			c = min_t(size_t, c, PAGE_SIZE - spo);
			s = kmap_local_page(sp[(soff + pos) >> PAGE_SHIFT]);
			kprog_copy(d + dpo, s + spo, c);
			kunmap_local(s);
		}
		kunmap_local(d);
		flush_dcache_page(dp[(doff + pos) >> PAGE_SHIFT]);
		pos += c;
	}
}

/*
 * One step: pin up to a chunk on each side, copy, unpin. The address
 * spaces are held (mmget) only for the step: holding them across a whole
 * transfer would keep a killed process's mappings, and with them its
 * kprog file, alive until the copy finished.
 */
static long kprog_umem_step(const struct kprog_ubuf *dst,
			    const struct kprog_ubuf *src, const void *kbuf,
			    struct kprog_umem_cursor *sc,
			    struct kprog_umem_cursor *dc, u64 n,
			    struct page **sp, struct page **dp)
{
	unsigned long saddr = 0, daddr = kprog_umem_addr(dc);
	long ns = 0, nd, ret = -ECONNRESET;

	if (src && !mmget_not_zero(src->mm))
		return ret;
	if (!mmget_not_zero(dst->mm))
		goto out_src;

	if (src) {
		saddr = kprog_umem_addr(sc);
		ns = kprog_umem_pin(src->mm, saddr, n, false, sp);
		if (ns < 0) {
			ret = ns;
			goto out_dst;
		}
		n = min_t(u64, n, ns * PAGE_SIZE - offset_in_page(saddr));
	}
	nd = kprog_umem_pin(dst->mm, daddr, n, true, dp);
	if (nd < 0) {
		ret = nd;
		goto out_unpin;
	}
	n = min_t(u64, n, nd * PAGE_SIZE - offset_in_page(daddr));

	kprog_umem_memcpy(dp, offset_in_page(daddr), sp, offset_in_page(saddr),
			  kbuf ? kbuf + sc->off : NULL, n, true);
	unpin_user_pages_dirty_lock(dp, nd, true);
	ret = n;
out_unpin:
	if (ns > 0)
		unpin_user_pages(sp, ns);
out_dst:
	mmput(dst->mm);
out_src:
	if (src)
		mmput(src->mm);
	return ret;
}

/**
 * kprog_umem_copy() - copy into a user buffer of any process
 * @dst: destination
 * @src: source user buffer, or NULL when @kbuf is the source
 * @kbuf: kernel source of @len bytes when @src is NULL
 * @len: bytes to copy, at most the size of either side
 * @abort: asked before every chunk; may be NULL
 * @arg: its argument
 * @err: set to 0, -ECONNRESET (@abort said so, or an address space is
 *	gone), -EFAULT (unmapped or read-only pages) or -ENOMEM
 *
 * Process context, may sleep, no locks held.
 *
 * Return: bytes copied.
 */
u64 kprog_umem_copy(const struct kprog_ubuf *dst, const struct kprog_ubuf *src,
		    const void *kbuf, u64 len, kprog_umem_abort_t abort,
		    void *arg, int *err)
{
	struct kprog_umem_cursor sc = { .d = src }, dc = { .d = dst };
	struct page **pages;
	u64 done = 0, n;
	long ret;

	*err = 0;
	if (!len)
		return 0;
	pages = kmalloc_array(2 * KPROG_UMEM_CHUNK, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		*err = -ENOMEM;
		return 0;
	}
	while (done < len) {
		if (abort && abort(arg)) {
			*err = -ECONNRESET;
			break;
		}
		n = min3(len - done, kprog_umem_span(&sc), kprog_umem_span(&dc));
		ret = kprog_umem_step(dst, src, kbuf, &sc, &dc, n, pages,
				      pages + KPROG_UMEM_CHUNK);
		if (ret < 0) {
			*err = ret;
			break;
		}
		kprog_umem_advance(&sc, ret);
		kprog_umem_advance(&dc, ret);
		done += ret;
		cond_resched();
	}
	kfree(pages);
	return done;
}

/**
 * kprog_uland_pin() - pin a small receive buffer for copies from softirq
 * @l: zeroed; filled on success
 * @buf: the buffer, posted by the current process
 *
 * Only a buffer of one segment of at most KPROG_ULAND_MAX bytes. Nothing
 * is pinned on failure (the copy then goes through a worker, as before).
 * The pins last while the receive is posted (FOLL_LONGTERM), charged to
 * @buf->mm's pinned_vm within @buf->memlock (RLIMIT_MEMLOCK): a process
 * at its limit gets the worker instead. Process context.
 */
void kprog_uland_pin(struct kprog_uland *l, const struct kprog_ubuf *buf)
{
	unsigned long addr;
	int nr, got;

	if (buf->nr_iov != 1 || !buf->len || buf->len > KPROG_ULAND_MAX ||
	    buf->mm != current->mm)
		return;
	addr = buf->iov[0].base;
	nr = DIV_ROUND_UP(offset_in_page(addr) + buf->len, PAGE_SIZE);
	if (nr > KPROG_ULAND_PAGES)
		return;
	if (atomic64_add_return(nr, &buf->mm->pinned_vm) > buf->memlock)
		goto uncharge;
	got = pin_user_pages_fast(addr & PAGE_MASK, nr,
				  FOLL_WRITE | FOLL_LONGTERM, l->pages);
	if (got == nr) {
		l->off = offset_in_page(addr);
		l->nr = nr;
		return;
	}
	if (got > 0)
		unpin_user_pages(l->pages, got);
uncharge:
	atomic64_sub(nr, &buf->mm->pinned_vm);
}

/**
 * kprog_uland_copy() - copy into a buffer pinned by kprog_uland_pin()
 * @l: its pages (@l->nr > 0)
 * @src: kernel memory
 * @len: bytes, at most the buffer's length
 *
 * Any context.
 *
 * Return: @len.
 */
u64 kprog_uland_copy(const struct kprog_uland *l, const void *src, u64 len)
{
	kprog_umem_memcpy((struct page **)l->pages, l->off, NULL, 0, src, len,
			  false);
	return len;
}

/**
 * kprog_uland_unpin() - release what kprog_uland_pin() pinned
 * @l: the pages; emptied
 * @mm: the address space they were charged to (still mmgrab()ed)
 *
 * Process context.
 */
void kprog_uland_unpin(struct kprog_uland *l, struct mm_struct *mm)
{
	if (!l->nr)
		return;
	unpin_user_pages_dirty_lock(l->pages, l->nr, true);
	atomic64_sub(l->nr, &mm->pinned_vm);
	l->nr = 0;
}
