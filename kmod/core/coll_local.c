// SPDX-License-Identifier: GPL-2.0
/*
 * kprog collective schedules: the COPY and REDUCE steps, which move bytes
 * within the process's own memory.
 *
 * They run in the schedule's starter, in process context on the process's
 * mm (the ioctl, or the work item after kthread_use_mm()). Each chunk pins
 * the pages of both operands (pin_user_pages_fast(), the destination with
 * FOLL_WRITE), works on them through kmap_local_page() and unpins them: no
 * user copy in between, pages pinned only for the chunk being processed,
 * as for every transfer (umem.c). The reduction kernels run between
 * kernel_fpu_begin() and kernel_fpu_end() on at most one page of each
 * operand at a time; the pages are already pinned, so nothing faults or
 * sleeps in there.
 *
 * A chunk that cannot be pinned (unmapped or read-only pages, a mapping
 * gup refuses) goes through kernel bounce buffers with user copies
 * instead, which is also what decides its errno (-EFAULT). So does a step
 * whose operands are not aligned to their element type, so that the
 * kernels only ever see aligned elements, as C wants.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/uaccess.h>
#include <linux/kprog.h>
#ifdef CONFIG_X86
#include <asm/fpu/api.h>
#endif
#include "coll.h"
#include "umem.h"

/*
 * Bytes per chunk: 16 pages, so that pinning and the rescheduling point
 * are not paid per page, and few pages pinned at a time (at most 17
 * per operand, 136 bytes of pointers on the stack each). At 4 pages a
 * COPY cost the module several times the time per byte of a
 * shared-memory pull (umem.c: 64 pages a step) in NBCBench under
 * emulation (docs/benchmarks-coll.md, "Work-based overhead").
 */
#define KPROG_LOCAL_CHUNK	(16 * PAGE_SIZE)
/* Pages a chunk spans per operand when it does not start on a page. */
#define KPROG_LOCAL_PAGES	(KPROG_LOCAL_CHUNK / PAGE_SIZE + 1)
/* The largest element (the 16-byte pairs of MINLOC/MAXLOC). */
#define KPROG_LOCAL_ELEM	16

/* A step's operation, whichever path its chunks take. */
struct kprog_local {
	const struct kprog_coll_step *st;
	bool reduce;
	u32 size;	/* element size; 1 for COPY */
	void *a, *b;	/* bounce buffers, allocated at the first need */
};

static void kprog_local_fpu_begin(const struct kprog_local *l)
{
#ifdef CONFIG_X86
	if (l->reduce)
		kernel_fpu_begin();
#endif
}

static void kprog_local_fpu_end(const struct kprog_local *l)
{
#ifdef CONFIG_X86
	if (l->reduce)
		kernel_fpu_end();
#endif
}

/* dst = src (op) dst on @n elements of mapped or kernel memory. */
static void kprog_local_apply(const struct kprog_local *l, void *dst,
			      const void *src, size_t n)
{
	if (l->reduce)
		kprog_reduce_apply(l->st->dtype, l->st->op, dst, src, n);
	else
		kprog_copy(dst, src, n);
}

/* Copies @n bytes at byte @off of the pinned @pages to or from @buf. */
static void kprog_local_pages_io(struct page **pages, size_t off, void *buf,
				 size_t n, bool to_pages)
{
	size_t c, po;
	void *p;

	while (n) {
		po = offset_in_page(off);
		c = min_t(size_t, n, PAGE_SIZE - po);
		p = kmap_local_page(pages[off >> PAGE_SHIFT]);
		if (to_pages)
			memcpy(p + po, buf, c);
		else
			memcpy(buf, p + po, c);
		kunmap_local(p);
		off += c;
		buf += c;
		n -= c;
	}
}

/*
 * Works on @n bytes of pinned pages; @so and @d_off are the operands' offsets
 * in their first page. Spans of whole elements lying within one page of
 * each operand are worked on in place; an element split across a page
 * boundary (only a 16-byte pair can be: the rest are aligned to their size,
 * which divides a page) goes through a small bounce of its own.
 */
static void kprog_local_pinned(const struct kprog_local *l, struct page **sp,
			       size_t so, struct page **dp, size_t d_off,
			       size_t n)
{
	u64 ea[KPROG_LOCAL_ELEM / 8], eb[KPROG_LOCAL_ELEM / 8];
	size_t pos, c, spo, dpo;
	void *s, *d;

	for (pos = 0; pos < n; pos += c) {
		spo = offset_in_page(so + pos);
		dpo = offset_in_page(d_off + pos);
		c = min3(n - pos, PAGE_SIZE - spo, PAGE_SIZE - dpo);
		c -= c % l->size;
		if (!c) {
			c = l->size;
			kprog_local_pages_io(sp, so + pos, ea, c, false);
			kprog_local_pages_io(dp, d_off + pos, eb, c, false);
			kprog_local_fpu_begin(l);
			kprog_local_apply(l, eb, ea, 1);
			kprog_local_fpu_end(l);
			kprog_local_pages_io(dp, d_off + pos, eb, c, true);
			continue;
		}
		s = kmap_local_page(sp[(so + pos) >> PAGE_SHIFT]);
		d = kmap_local_page(dp[(d_off + pos) >> PAGE_SHIFT]);
		kprog_local_fpu_begin(l);
		kprog_local_apply(l, d + dpo, s + spo,
				  l->reduce ? c / l->size : c);
		kprog_local_fpu_end(l);
		kunmap_local(d);
		kunmap_local(s);
	}
}

/* Pins the pages under [addr, addr + n): all of them (return 0) or none. */
static int kprog_local_pin(unsigned long addr, size_t n, bool write,
			   struct page **pages, int *nr)
{
	int ret;

	*nr = DIV_ROUND_UP(offset_in_page(addr) + n, PAGE_SIZE);
	ret = pin_user_pages_fast(addr & PAGE_MASK, *nr,
				  write ? FOLL_WRITE : 0, pages);
	if (ret == *nr)
		return 0;
	if (ret > 0)
		unpin_user_pages(pages, ret);
	return -EFAULT;
}

/* One chunk on the pinned pages; -EFAULT when they cannot all be pinned. */
static int kprog_local_chunk_pinned(const struct kprog_local *l, u64 pos,
				    size_t n)
{
	unsigned long src = l->st->src + pos, dst = l->st->dst + pos;
	struct page *sp[KPROG_LOCAL_PAGES], *dp[KPROG_LOCAL_PAGES];
	int ns, nd;

	if (kprog_local_pin(src, n, false, sp, &ns))
		return -EFAULT;
	if (kprog_local_pin(dst, n, true, dp, &nd)) {
		unpin_user_pages(sp, ns);
		return -EFAULT;
	}
	kprog_local_pinned(l, sp, offset_in_page(src), dp, offset_in_page(dst),
			   n);
	unpin_user_pages_dirty_lock(dp, nd, true);
	unpin_user_pages(sp, ns);
	return 0;
}

/* One chunk through the bounce buffers, with user copies. */
static int kprog_local_chunk_bounce(struct kprog_local *l, u64 pos, size_t n)
{
	void __user *src = u64_to_user_ptr(l->st->src + pos);
	void __user *dst = u64_to_user_ptr(l->st->dst + pos);

	if (!l->a) {
		l->a = kvmalloc(KPROG_LOCAL_CHUNK, GFP_KERNEL_ACCOUNT);
		if (!l->a)
			return -ENOMEM;
	}
	if (l->reduce && !l->b) {
		l->b = kvmalloc(KPROG_LOCAL_CHUNK, GFP_KERNEL_ACCOUNT);
		if (!l->b)
			return -ENOMEM;
	}
	if (copy_from_user(l->a, src, n) ||
	    (l->reduce && copy_from_user(l->b, dst, n)))
		return -EFAULT;
	if (l->reduce) {
		kprog_local_fpu_begin(l);
		kprog_local_apply(l, l->b, l->a, n / l->size);
		kprog_local_fpu_end(l);
	}
	if (copy_to_user(dst, l->reduce ? l->b : l->a, n))
		return -EFAULT;
	return 0;
}

/**
 * kprog_coll_local() - run a COPY or REDUCE step
 * @st: the step, checked (kprog_reduce_size() accepts a REDUCE's type and
 *	operation, its length is a multiple of the element size, the
 *	operands do not overlap)
 *
 * Process context on the process's mm (current->mm), may sleep.
 *
 * Return: 0, -EFAULT (an operand is not mapped, or the destination not
 * writable) or -ENOMEM.
 */
int kprog_coll_local(const struct kprog_coll_step *st)
{
	struct kprog_local l = {
		.st = st,
		.reduce = st->kind == KPROG_STEP_REDUCE,
		.size = 1,
	};
	bool pin;
	u64 pos;
	size_t n;
	int err = 0;

	if (l.reduce)
		l.size = kprog_reduce_size(st->dtype, st->op);
	/* Pairs need no more than 8-byte alignment (their value's). */
	pin = IS_ALIGNED(st->src | st->dst, min_t(u32, l.size, 8));
	for (pos = 0; pos < st->len; pos += n) {
		n = min_t(u64, st->len - pos, KPROG_LOCAL_CHUNK);
		if (!pin || kprog_local_chunk_pinned(&l, pos, n)) {
			err = kprog_local_chunk_bounce(&l, pos, n);
			if (err)
				break;
		}
		cond_resched();
	}
	kvfree(l.b);
	kvfree(l.a);
	return err;
}
