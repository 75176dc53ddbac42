// SPDX-License-Identifier: GPL-2.0
/*
 * kprog shared-memory transport: a worker copies straight from the
 * sender's pages into the receiver's pages (one copy). Pages are pinned
 * one chunk at a time, so a transfer never holds more than
 * 2 * KPROG_SHM_CHUNK pinned pages and notices a departed peer quickly.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/workqueue.h>
#include "kprog.h"
#include "transport.h"
#include "stats.h"
#include "kprog_trace.h"

#define KPROG_SHM_CHUNK		64	/* pages per side per step */

static struct workqueue_struct *kprog_shm_wq;

struct kprog_shm_cursor {
	const struct kprog_xdesc *d;
	u32 idx;	/* current segment */
	u64 off;	/* offset in it, or in kbuf */
};

static unsigned long kprog_shm_addr(const struct kprog_shm_cursor *c)
{
	return c->d->iov[c->idx].base + c->off;
}

/* Bytes that can be handled in one step from the cursor. */
static u64 kprog_shm_span(const struct kprog_shm_cursor *c)
{
	if (c->d->kbuf)
		return U64_MAX;
	return min_t(u64, c->d->iov[c->idx].len - c->off,
		     KPROG_SHM_CHUNK * PAGE_SIZE -
		     offset_in_page(kprog_shm_addr(c)));
}

static void kprog_shm_advance(struct kprog_shm_cursor *c, u64 n)
{
	c->off += n;
	if (!c->d->kbuf && c->off == c->d->iov[c->idx].len) {
		c->idx++;
		c->off = 0;
	}
}

/* Pins the pages under [addr, addr + n); returns how many, or -errno. */
static long kprog_shm_pin(struct mm_struct *mm, unsigned long addr, u64 n,
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
	return ret ? ret : -EFAULT;
}

/* Copies @n bytes; @src is used when the source is a kernel buffer. */
static void kprog_shm_copy(struct page **dp, unsigned long doff,
			   struct page **sp, unsigned long soff,
			   const void *src, u64 n)
{
	u64 pos = 0;
	size_t c, dpo, spo;
	void *d, *s;

	while (pos < n) {
		dpo = offset_in_page(doff + pos);
		c = min_t(u64, n - pos, PAGE_SIZE - dpo);
		d = kmap_local_page(dp[(doff + pos) >> PAGE_SHIFT]);
		if (src) {
			memcpy(d + dpo, src + pos, c);
		} else {
			spo = offset_in_page(soff + pos);
			c = min_t(size_t, c, PAGE_SIZE - spo);
			s = kmap_local_page(sp[(soff + pos) >> PAGE_SHIFT]);
			memcpy(d + dpo, s + spo, c);
			kunmap_local(s);
		}
		kunmap_local(d);
		flush_dcache_page(dp[(doff + pos) >> PAGE_SHIFT]);
		pos += c;
	}
}

/*
 * One step: pin up to a chunk on each side, copy, unpin. The address
 * spaces are held (mmget) only for the step: holding them across the
 * whole transfer would keep a killed process's mappings, and with them
 * its kprog file, alive until the copy finished.
 */
static long kprog_shm_step(struct kprog_xfer *x, struct kprog_shm_cursor *sc,
			   struct kprog_shm_cursor *dc, u64 n,
			   struct page **sp, struct page **dp)
{
	unsigned long saddr = 0, daddr = kprog_shm_addr(dc);
	long ns = 0, nd, ret = -ECONNRESET;

	if (x->src.mm && !mmget_not_zero(x->src.mm))
		return ret;
	if (!mmget_not_zero(x->dst.mm))
		goto out_src;

	if (x->src.mm) {
		saddr = kprog_shm_addr(sc);
		ns = kprog_shm_pin(x->src.mm, saddr, n, false, sp);
		if (ns < 0) {
			ret = ns;
			goto out_dst;
		}
		n = min_t(u64, n, ns * PAGE_SIZE - offset_in_page(saddr));
	}
	nd = kprog_shm_pin(x->dst.mm, daddr, n, true, dp);
	if (nd < 0) {
		ret = nd;
		goto out_unpin;
	}
	n = min_t(u64, n, nd * PAGE_SIZE - offset_in_page(daddr));

	kprog_shm_copy(dp, offset_in_page(daddr), sp, offset_in_page(saddr),
		       x->src.kbuf ? x->src.kbuf + sc->off : NULL, n);
	unpin_user_pages_dirty_lock(dp, nd, true);
	ret = n;
out_unpin:
	if (ns > 0)
		unpin_user_pages(sp, ns);
out_dst:
	mmput(x->dst.mm);
out_src:
	if (x->src.mm)
		mmput(x->src.mm);
	return ret;
}

/* The whole transfer; returns the bytes copied, *err says why it stopped. */
static u64 kprog_shm_copy_all(struct kprog_xfer *x, int *err)
{
	struct kprog_shm_cursor sc = { .d = &x->src }, dc = { .d = &x->dst };
	struct page **pages;
	u64 done = 0, n;
	long ret;

	*err = 0;
	trace_kprog_copy_start(x->sop, x->rop, x->len, 0);
	pages = kmalloc_array(2 * KPROG_SHM_CHUNK, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		*err = -ENOMEM;
		goto out;
	}
	while (done < x->len) {
		if (kprog_xfer_aborted(x)) {
			*err = -ECONNRESET;
			break;
		}
		n = min3(x->len - done, kprog_shm_span(&sc),
			 kprog_shm_span(&dc));
		ret = kprog_shm_step(x, &sc, &dc, n, pages,
				     pages + KPROG_SHM_CHUNK);
		if (ret < 0) {
			*err = ret;
			break;
		}
		kprog_shm_advance(&sc, ret);
		kprog_shm_advance(&dc, ret);
		done += ret;
		kprog_stat_add(KPROG_STAT_BYTES, ret);
		cond_resched();
	}
	kfree(pages);
out:
	trace_kprog_copy_end(x->sop, x->rop, done, *err);
	return done;
}

/* In the poster's context, for small transfers. */
static void kprog_shm_run(struct kprog_xfer *x)
{
	u64 done;
	int err;

	done = kprog_shm_copy_all(x, &err);
	kprog_xfer_done(x, done, err);
}

static void kprog_shm_work(struct work_struct *work)
{
	struct kprog_xfer *x = container_of(work, struct kprog_xfer, work);
	u64 start = kprog_stat_clock(), done;
	int err;

	done = kprog_shm_copy_all(x, &err);
	/* Counted before the completions make it visible to user space. */
	kprog_stat_run(KPROG_STAT_WORK_ITEMS, start);
	kprog_xfer_done(x, done, err);
}

static int kprog_shm_submit(struct kprog_xfer *x)
{
	INIT_WORK(&x->work, kprog_shm_work);
	queue_work(kprog_shm_wq, &x->work);
	return 0;
}

static int kprog_shm_init(void)
{
	/* Unbound: long copies should spread over CPUs, not follow posters. */
	kprog_shm_wq = alloc_workqueue("kprog_shm", WQ_UNBOUND, 0);
	return kprog_shm_wq ? 0 : -ENOMEM;
}

static void kprog_shm_exit(void)
{
	destroy_workqueue(kprog_shm_wq);
}

const struct kprog_transport kprog_xport_shm = {
	.name = "shm",
	.init = kprog_shm_init,
	.exit = kprog_shm_exit,
	.run = kprog_shm_run,
	.submit = kprog_shm_submit,
};
