// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib's pin cache: the pages of send and receive buffers stay pinned
 * between rendezvous transfers of the same buffer, as UCX's registration
 * cache keeps registrations, so that a rank that sends or receives into
 * one buffer again (the usual case of iterative codes) pays no
 * pin_user_pages() / unpin per message.
 *
 * What is cached is pinned pages only: no DMA mapping, no MR, no rkey.
 * Every transfer still registers its chunk with a fresh rkey (REG_MR from
 * the connection's pool) that lives from RTS to FIN (ib_rndv.c), so a
 * cached buffer is never readable by a peer outside a transfer.
 *
 * Entries. One per (mm, address, length, direction) of a send chunk or a
 * receive piece that lies in one segment of a buffer; a hit needs the
 * same four (a receive's pages are pinned writable). Each has an
 * mmu_interval_notifier on its pages: when the process unmaps, remaps,
 * moves (mremap), write-protects (fork, mprotect) or otherwise changes
 * the mapping of any of them, the entry leaves the cache at once (later
 * sends pin afresh, so they send the pages mapped then) and its pages are
 * unpinned once no transfer uses them. A write through the mapping needs
 * nothing: the pinned pages are the mapped ones (a long-term pin makes an
 * anonymous page exclusive), so the next send reads the new data.
 *
 * Bounds. pin_cache_mb (module parameter) bounds the bytes held by all
 * entries of the node, in use or idle; idle entries are evicted, least
 * recently used first, to make room. Each entry's pages are charged to
 * its process's pinned_vm against RLIMIT_MEMLOCK for as long as it lives,
 * as ib_umem_get() charges a registration: a new pin that would exceed the
 * limit first evicts that process's idle entries, then fails (ENOMEM, the
 * uncached path's error). A chunk the cache cannot hold (larger than the
 * bound, spread over segments, every entry busy) is pinned for its
 * transfer alone, as without the cache.
 *
 * Contexts. Lookups, insertions and evictions run in process context (the
 * sender's system call or a transfer worker); releases of idle entries
 * whose pages changed run in a worker (system_unbound_wq: the notifier
 * may fire while kprog_ib_wq is being destroyed at unload), because
 * mmu_interval_notifier_remove() cannot be called from the notifier.
 * kprog_ib_pcache_lock (spin) guards the hash, the LRU list, every
 * entry's users and valid flag, and the notifiers' sequence numbers.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/hashtable.h>
#include <linux/llist.h>
#include <linux/seq_file.h>
#include "kprog.h"
#include "umem.h"
#include "stats.h"
#include "ib.h"

/**
 * struct kprog_ib_pcent - a cached pin of one send buffer range
 * @mni: the notifier on its pages
 * @hnode: in the hash, while @valid
 * @lru: in the LRU list, while valid and unused
 * @rnode: on the release list
 * @mm: the address space (mmgrab()ed); its pinned_vm holds @npages
 * @addr: the first byte of the range
 * @len: its bytes
 * @write: pinned writable, for RDMA READs into it
 * @users: transfers using it (lock)
 * @valid: in the hash: its pages are the ones mapped (lock)
 * @npages: pages in @pages
 * @pages: the pinned pages
 */
struct kprog_ib_pcent {
	struct mmu_interval_notifier mni;
	struct hlist_node hnode;
	struct list_head lru;
	struct llist_node rnode;
	struct mm_struct *mm;
	unsigned long addr;
	u64 len;
	bool write;
	u32 users;
	bool valid;
	u32 npages;
	struct page *pages[];
};

/**
 * kprog_ib_pin_charge() - charge @npages long-term pins to @b's owner
 * @b: the user buffer whose pages are pinned (its mm and memlock limit)
 * @npages: pages about to be pinned
 *
 * Long-term pins count against the owner's RLIMIT_MEMLOCK in its mm's
 * pinned_vm, as ib_umem_get() counts a registration's (CAP_IPC_LOCK
 * exempt: read when the buffer was posted, kprog_ubuf.memlock), so that
 * RDMA reads cannot pin more of a job's memory than `ulimit -l` lets it
 * lock. A charge held by a pin is returned when the pin is released.
 * Here, below both its callers (ib_rndv.c and the pin cache).
 *
 * Return: 0, or -ENOMEM past the limit (nothing charged then).
 */
int kprog_ib_pin_charge(const struct kprog_ubuf *b, u32 npages)
{
	s64 pinned = atomic64_add_return(npages, &b->mm->pinned_vm);

	if (b->memlock != U64_MAX && pinned > 0 && (u64)pinned > b->memlock) {
		atomic64_sub(npages, &b->mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static DEFINE_SPINLOCK(kprog_ib_pcache_lock);
static DEFINE_HASHTABLE(kprog_ib_pcache_hash, 10);
static LIST_HEAD(kprog_ib_pcache_lru);
static u64 kprog_ib_pcache_bytes;	/* held by entries (lock) */
static LLIST_HEAD(kprog_ib_pcache_dead);
static atomic64_t kprog_ib_pcache_hits, kprog_ib_pcache_misses;

static void kprog_ib_pcache_dead_work(struct work_struct *work);
static DECLARE_WORK(kprog_ib_pcache_dead_item, kprog_ib_pcache_dead_work);

static u64 kprog_ib_pcache_key(struct mm_struct *mm, unsigned long addr,
			       u64 len, bool write)
{
	return hash_64((unsigned long)mm ^ addr ^ (len << 17) ^ write, 64);
}

/* Unpins and frees an entry out of the cache. Process context, no lock. */
static void kprog_ib_pcent_free(struct kprog_ib_pcent *e)
{
	mmu_interval_notifier_remove(&e->mni);
	unpin_user_pages(e->pages, e->npages);
	atomic64_sub(e->npages, &e->mm->pinned_vm);
	mmdrop(e->mm);
	kprog_ib_gauge_add(KPROG_IB_G_CACHED, -(long)e->npages);
	spin_lock(&kprog_ib_pcache_lock);
	kprog_ib_pcache_bytes -= e->len;
	spin_unlock(&kprog_ib_pcache_lock);
	kvfree(e);
}

static void kprog_ib_pcache_dead_work(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&kprog_ib_pcache_dead);
	struct kprog_ib_pcent *e, *tmp;

	llist_for_each_entry_safe(e, tmp, list, rnode)
		kprog_ib_pcent_free(e);
}

/* Under the lock: @e leaves the cache (its users keep it). */
static void kprog_ib_pcent_invalidate(struct kprog_ib_pcent *e)
{
	if (!e->valid)
		return;
	e->valid = false;
	hash_del(&e->hnode);
	list_del_init(&e->lru);
}

/* Under the lock: @e is neither cached nor used: free it soon. */
static void kprog_ib_pcent_dead(struct kprog_ib_pcent *e)
{
	if (llist_add(&e->rnode, &kprog_ib_pcache_dead))
		queue_work(system_unbound_wq, &kprog_ib_pcache_dead_item);
}

static bool kprog_ib_pcache_invalidate(struct mmu_interval_notifier *mni,
				       const struct mmu_notifier_range *range,
				       unsigned long cur_seq)
{
	struct kprog_ib_pcent *e = container_of(mni, struct kprog_ib_pcent,
						mni);

	spin_lock(&kprog_ib_pcache_lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (e->valid) {
		kprog_ib_pcent_invalidate(e);
		if (!e->users)
			kprog_ib_pcent_dead(e);
	}
	spin_unlock(&kprog_ib_pcache_lock);
	return true;
}

static const struct mmu_interval_notifier_ops kprog_ib_pcache_ops = {
	.invalidate = kprog_ib_pcache_invalidate,
};

/*
 * Evicts idle entries: of @mm only (NULL: any), until @room more bytes
 * fit under @limit (@room U64_MAX: all of them). Process context, no lock.
 */
static void kprog_ib_pcache_evict(struct mm_struct *mm, u64 room, u64 limit)
{
	struct kprog_ib_pcent *e, *tmp;
	LIST_HEAD(evict);
	u64 freed = 0;

	spin_lock(&kprog_ib_pcache_lock);
	list_for_each_entry_safe(e, tmp, &kprog_ib_pcache_lru, lru) {
		if (room != U64_MAX &&
		    kprog_ib_pcache_bytes - freed + room <= limit)
			break;
		if (mm && e->mm != mm)
			continue;
		kprog_ib_pcent_invalidate(e);
		list_add_tail(&e->lru, &evict);
		freed += e->len;
	}
	spin_unlock(&kprog_ib_pcache_lock);
	list_for_each_entry_safe(e, tmp, &evict, lru)
		kprog_ib_pcent_free(e);
}

/* A transfer's own view of a cached entry: its pages and scatter list. */
static struct kprog_ib_pin *kprog_ib_pcent_view(struct kprog_ib_pcent *e,
						int *err)
{
	struct kprog_ib_pin *pin;
	struct scatterlist *sg;
	u64 n = e->len;
	u32 i, po;

	pin = kvzalloc(struct_size(pin, pages, e->npages), GFP_KERNEL);
	if (!pin)
		goto nomem;
	if (sg_alloc_table(&pin->sgt, e->npages, GFP_KERNEL)) {
		kvfree(pin);
		goto nomem;
	}
	pin->npages = e->npages;
	pin->cent = e;
	memcpy(pin->pages, e->pages, e->npages * sizeof(*e->pages));
	for_each_sgtable_sg(&pin->sgt, sg, i) {
		po = i ? 0 : offset_in_page(e->addr);
		sg_set_page(sg, e->pages[i], min_t(u64, PAGE_SIZE - po, n), po);
		n -= min_t(u64, PAGE_SIZE - po, n);
	}
	return pin;

nomem:
	kprog_ib_pcache_unuse(e);
	*err = -ENOMEM;
	return NULL;
}

/* A new entry for [addr, addr + len) of @b->mm, used once; NULL: *err. */
static struct kprog_ib_pcent *kprog_ib_pcent_new(const struct kprog_ubuf *b,
						 unsigned long addr, u64 len,
						 bool write, int *err)
{
	unsigned int flags = FOLL_LONGTERM | (write ? FOLL_WRITE : 0);
	u32 npages = DIV_ROUND_UP(offset_in_page(addr) + len, PAGE_SIZE);
	unsigned long start = addr & PAGE_MASK, seq;
	struct kprog_ib_pcent *e;
	long ret;

	e = kvzalloc(struct_size(e, pages, npages), GFP_KERNEL_ACCOUNT);
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->mm = b->mm;
	e->addr = addr;
	e->len = len;
	e->write = write;
	INIT_LIST_HEAD(&e->lru);
	*err = kprog_ib_pin_charge(b, npages);
	if (*err == -ENOMEM) {
		/* Its own idle entries give way first. */
		kprog_ib_pcache_evict(b->mm, U64_MAX, 0);
		*err = kprog_ib_pin_charge(b, npages);
	}
	if (*err)
		goto err_free;
	*err = mmu_interval_notifier_insert(&e->mni, b->mm, start,
					    (unsigned long)npages << PAGE_SHIFT,
					    &kprog_ib_pcache_ops);
	if (*err) {
		*err = -EAGAIN;	/* pinned for the transfer alone */
		goto err_uncharge;
	}
	seq = mmu_interval_read_begin(&e->mni);
	mmap_read_lock(b->mm);
#ifdef KPROG_GUP_HAS_VMAS
	ret = pin_user_pages_remote(b->mm, start, npages, flags, e->pages,
				    NULL, NULL);
#else
	ret = pin_user_pages_remote(b->mm, start, npages, flags, e->pages,
				    NULL);
#endif
	mmap_read_unlock(b->mm);
	if (ret > 0)
		e->npages = ret;
	if (ret != npages) {
		*err = ret < 0 ? ret : -EFAULT;
		goto err_unpin;
	}
	spin_lock(&kprog_ib_pcache_lock);
	if (mmu_interval_read_retry(&e->mni, seq)) {
		/* Changed while being pinned: these may be stale pages. */
		spin_unlock(&kprog_ib_pcache_lock);
		*err = -EAGAIN;
		goto err_unpin;
	}
	e->valid = true;
	e->users = 1;
	hash_add(kprog_ib_pcache_hash, &e->hnode,
		 kprog_ib_pcache_key(e->mm, addr, len, write));
	spin_unlock(&kprog_ib_pcache_lock);
	mmgrab(e->mm);
	kprog_ib_gauge_add(KPROG_IB_G_CACHED, e->npages);
	return e;

err_unpin:
	unpin_user_pages(e->pages, e->npages);
	mmu_interval_notifier_remove(&e->mni);
err_uncharge:
	atomic64_sub(npages, &b->mm->pinned_vm);
err_free:
	kvfree(e);
	return NULL;
}

/**
 * kprog_ib_pcache_pin() - the pinned pages of a send chunk or receive
 *	piece, from the cache
 * @b: the buffer (its process's mm is referenced by the caller's
 *	mmget_not_zero())
 * @pos: where the chunk starts in the message
 * @len: its bytes
 * @write: pinned writable (a receive's pages, written by RDMA READ)
 * @err: set when NULL is returned: -EAGAIN (not cacheable: pin it for
 *	the transfer alone), -ENOMEM (over RLIMIT_MEMLOCK or out of memory),
 *	-EFAULT (not mapped)
 *
 * Process context, no lock held; the process's mm must have users.
 *
 * Return: a pin for the transfer alone whose pages are the cached ones
 * (released with kprog_ib_pin_release() like any other), or NULL.
 */
struct kprog_ib_pin *kprog_ib_pcache_pin(const struct kprog_ubuf *b, u64 pos,
					 u64 len, bool write, int *err)
{
	u64 limit = (u64)READ_ONCE(kprog_ib_pin_cache_mb) << 20;
	struct kprog_ib_pcent *e;
	unsigned long addr;
	u64 off = pos, bytes;
	u32 i = 0;

	*err = -EAGAIN;
	if (!limit || !len)
		return NULL;
	while (i < b->nr_iov && off >= b->iov[i].len)
		off -= b->iov[i++].len;
	if (i == b->nr_iov || b->iov[i].len - off < len)
		return NULL;	/* spread over segments */
	addr = b->iov[i].base + off;
	bytes = (u64)DIV_ROUND_UP(offset_in_page(addr) + len, PAGE_SIZE)
		<< PAGE_SHIFT;
	if (bytes > limit)
		return NULL;

	spin_lock(&kprog_ib_pcache_lock);
	hash_for_each_possible(kprog_ib_pcache_hash, e, hnode,
			       kprog_ib_pcache_key(b->mm, addr, len, write)) {
		if (e->mm == b->mm && e->addr == addr && e->len == len &&
		    e->write == write) {
			if (!e->users++)
				list_del_init(&e->lru);
			spin_unlock(&kprog_ib_pcache_lock);
			atomic64_inc(&kprog_ib_pcache_hits);
			kprog_stat_add(KPROG_STAT_NET_PIN_HITS, 1);
			return kprog_ib_pcent_view(e, err);
		}
	}
	spin_unlock(&kprog_ib_pcache_lock);
	atomic64_inc(&kprog_ib_pcache_misses);
	kprog_stat_add(KPROG_STAT_NET_PIN_MISSES, 1);

	kprog_ib_pcache_evict(NULL, len, limit);
	spin_lock(&kprog_ib_pcache_lock);
	if (kprog_ib_pcache_bytes + len > limit) {
		/* Every entry is busy: this chunk goes uncached. */
		spin_unlock(&kprog_ib_pcache_lock);
		return NULL;
	}
	kprog_ib_pcache_bytes += len;	/* reserved for the new entry */
	spin_unlock(&kprog_ib_pcache_lock);
	e = kprog_ib_pcent_new(b, addr, len, write, err);
	if (!e) {
		spin_lock(&kprog_ib_pcache_lock);
		kprog_ib_pcache_bytes -= len;
		spin_unlock(&kprog_ib_pcache_lock);
		return NULL;
	}
	return kprog_ib_pcent_view(e, err);
}

/**
 * kprog_ib_pcache_unuse() - a transfer is done with a cached entry
 * @e: the entry
 *
 * Process context (the unpin worker). An entry still valid becomes idle
 * (most recently used); one whose pages changed meanwhile is freed.
 */
void kprog_ib_pcache_unuse(struct kprog_ib_pcent *e)
{
	spin_lock(&kprog_ib_pcache_lock);
	if (!--e->users) {
		if (e->valid)
			list_add_tail(&e->lru, &kprog_ib_pcache_lru);
		else
			kprog_ib_pcent_dead(e);
	}
	spin_unlock(&kprog_ib_pcache_lock);
}

/**
 * kprog_ib_pcache_show() - the cache's counters, for the state file
 * @m: the file
 */
void kprog_ib_pcache_show(struct seq_file *m)
{
	u64 bytes;

	spin_lock(&kprog_ib_pcache_lock);
	bytes = kprog_ib_pcache_bytes;
	spin_unlock(&kprog_ib_pcache_lock);
	seq_printf(m, "pin_cache: hits %lld misses %lld bytes %llu limit %llu\n",
		   atomic64_read(&kprog_ib_pcache_hits),
		   atomic64_read(&kprog_ib_pcache_misses), bytes,
		   (u64)kprog_ib_pin_cache_mb << 20);
}

/**
 * kprog_ib_pcache_exit() - unpin every entry (module unload: no transfer
 *	is left)
 */
void kprog_ib_pcache_exit(void)
{
	kprog_ib_pcache_evict(NULL, U64_MAX, 0);
	/* Entries whose pages changed are freed by the worker. */
	do {
		flush_work(&kprog_ib_pcache_dead_item);
	} while (!llist_empty(&kprog_ib_pcache_dead));
	WARN_ON(kprog_ib_pcache_bytes);
}
