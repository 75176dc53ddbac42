// SPDX-License-Identifier: GPL-2.0
/* tests/kcore/mock_mem.c: the kernel's allocators (see mock.c). */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/bitmap.h>
#include <linux/xarray.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

/* ---------------------------------------------------------------------
 * Memory
 *
 * Blocks come from malloc(), so AddressSanitizer checks every access, and
 * are tracked here: freeing with the wrong function, twice, or not at all
 * fails the test. Memory not asked to be zeroed is filled with 0xa5 so
 * that a missing initialisation shows.
 */
static const char *const kind_names[] = {
	"kmalloc", "kvmalloc", "vmalloc", "vmalloc_user",
};

struct mock_block {
	const void *ptr;
	size_t size;
	enum mock_kind kind;
	void *pc;
	struct mock_block *next;
};

#define MOCK_BLOCK_BUCKETS 1024
static struct mock_block *blocks[MOCK_BLOCK_BUCKETS];
/*
 * Blocks leaked by a failed test, or left behind by an aborted one, are
 * never freed (the module may still point at them) but stay reachable,
 * so that LeakSanitizer does not report them a second time at exit.
 */
static struct mock_block *graveyard;

static struct mock_block **block_slot(const void *p)
{
	return &blocks[((unsigned long)p >> 4) % MOCK_BLOCK_BUCKETS];
}

static struct mock_block *block_find(const void *p)
{
	struct mock_block *b;

	for (b = *block_slot(p); b; b = b->next)
		if (b->ptr == p)
			return b;
	return NULL;
}

void (*mock_alloc_hook)(void *arg);
void *mock_alloc_hook_arg;

void *mock_alloc(size_t size, gfp_t flags, enum mock_kind kind, void *pc)
{
	struct mock_block *b;
	void *p;

	mock_allocs++;
	if (mock_alloc_hook)
		mock_alloc_hook(mock_alloc_hook_arg);
	if (gfpflags_allow_blocking(flags))
		mock_might_sleep(pc, "sleeping allocation");
	if (mock_check_error(&mock_kmalloc_errors))
		return NULL;
	if (mock_kmalloc_fail_nth && !--mock_kmalloc_fail_nth)
		return NULL;
	if (!size && kind <= MOCK_KVMALLOC)
		return ZERO_SIZE_PTR;
	if (kind >= MOCK_VMALLOC)
		p = aligned_alloc(PAGE_SIZE, PAGE_ALIGN(size));
	else
		p = malloc(size);
	b = malloc(sizeof(*b));
	if (!p || !b)
		mock_fatal_at(pc, "out of memory for %zu bytes", size);
	memset(p, flags & __GFP_ZERO ? 0 : 0xa5, size);
	b->ptr = p;
	b->size = size;
	b->kind = kind;
	b->pc = pc;
	b->next = *block_slot(p);
	*block_slot(p) = b;
	mock_live_allocs++;
	return p;
}

/* @kinds: bit mask of the mock_kind values @fn may free. */
void mock_free(const void *p, unsigned int kinds, const char *fn, void *pc)
{
	struct mock_block **pp, *b;
	char buf[256];

	if (ZERO_OR_NULL_PTR(p))
		return;
	for (pp = block_slot(p); (b = *pp); pp = &b->next)
		if (b->ptr == p)
			break;
	if (!b) {
		mock_fail_at(pc, "%s(%p): not allocated, or freed already",
			     fn, p);
		return;
	}
	if (!(kinds & (1U << b->kind))) {
		mock_fail_at(pc, "%s() of memory from %s() in %s", fn,
			     kind_names[b->kind],
			     mock_where(b->pc, buf, sizeof(buf)));
		return;
	}
	*pp = b->next;
	free(b);
	free((void *)p);
	mock_live_allocs--;
}

/* Reports the blocks still allocated and moves them to the graveyard. */
static void blocks_report_and_forget(bool report)
{
	struct mock_block *b, *next;
	char buf[256];
	int i;

	for (i = 0; i < MOCK_BLOCK_BUCKETS; i++) {
		for (b = blocks[i]; b; b = next) {
			next = b->next;
			if (report)
				mock_fail_after("leak: %zu bytes from %s() in %s",
						b->size, kind_names[b->kind],
						mock_where(b->pc, buf,
							   sizeof(buf)));
			b->next = graveyard;
			graveyard = b;
		}
		blocks[i] = NULL;
	}
	mock_live_allocs = 0;
}

void *__kmalloc(size_t size, gfp_t flags)
{
	if (size > KMALLOC_MAX_SIZE)
		return NULL;
	return mock_alloc(size, flags, MOCK_KMALLOC, CALLER);
}

void *__kmalloc_node(size_t size, gfp_t flags, int node)
{
	if (size > KMALLOC_MAX_SIZE)
		return NULL;
	return mock_alloc(size, flags, MOCK_KMALLOC, CALLER);
}

void *kmalloc_trace(struct kmem_cache *s, gfp_t flags, size_t size)
{
	return mock_alloc(size, flags, MOCK_KMALLOC, CALLER);
}

void *kmalloc_node_trace(struct kmem_cache *s, gfp_t flags, int node,
			 size_t size)
{
	return mock_alloc(size, flags, MOCK_KMALLOC, CALLER);
}

void *kmalloc_large(size_t size, gfp_t flags)
{
	return mock_alloc(size, flags, MOCK_KMALLOC, CALLER);
}

void *kmalloc_large_node(size_t size, gfp_t flags, int node)
{
	return mock_alloc(size, flags, MOCK_KMALLOC, CALLER);
}

void kfree(const void *p)
{
	mock_free(p, KFREE_KINDS, "kfree", CALLER);
}

void *kvmalloc_node(size_t size, gfp_t flags, int node)
{
	/* Like the kernel: larger requests are a bug, not a fallback. */
	if (size > INT_MAX) {
		if (!(flags & __GFP_NOWARN))
			mock_fail_at(CALLER, "kvmalloc() of %zu bytes", size);
		return NULL;
	}
	return mock_alloc(size, flags, MOCK_KVMALLOC, CALLER);
}

void kvfree(const void *p)
{
	mock_free(p, KVFREE_KINDS, "kvfree", CALLER);
}

void *vmalloc(unsigned long size)
{
	return mock_alloc(size, GFP_KERNEL, MOCK_VMALLOC, CALLER);
}

void *vzalloc(unsigned long size)
{
	return mock_alloc(size, GFP_KERNEL | __GFP_ZERO, MOCK_VMALLOC, CALLER);
}

void *vmalloc_user(unsigned long size)
{
	return mock_alloc(size, GFP_KERNEL | __GFP_ZERO, MOCK_VMALLOC_USER,
			  CALLER);
}

/*
 * kmod/core/vmem.c in the kernel: __vmalloc(GFP_KERNEL_ACCOUNT | __GFP_ZERO)
 * mapped page by page; here a block that kprog_vmem_mmap() (mock_mm.c)
 * accepts, as the kernel accepts only what kprog_vmem_alloc() made.
 */
void *kprog_vmem_alloc(unsigned long bytes)
{
	return mock_alloc(PAGE_ALIGN(bytes), GFP_KERNEL_ACCOUNT | __GFP_ZERO,
			  MOCK_VMALLOC_USER, CALLER);
}

/* lib/bitmap.c, for cpumask_equal() of masks longer than a word */
bool __bitmap_equal(const unsigned long *a, const unsigned long *b,
		    unsigned int bits)
{
	unsigned int k, lim = bits / BITS_PER_LONG;

	for (k = 0; k < lim; k++)
		if (a[k] != b[k])
			return false;
	if (bits % BITS_PER_LONG)
		return !((a[k] ^ b[k]) & BITMAP_LAST_WORD_MASK(bits));
	return true;
}

/* CONFIG_CPUMASK_OFFSTACK: masks are allocated, of NR_CPUS bits here. */
bool alloc_cpumask_var_node(cpumask_var_t *mask, gfp_t flags, int node)
{
	*mask = mock_alloc(BITS_TO_LONGS(NR_CPUS) * sizeof(long), flags,
			   MOCK_KMALLOC, CALLER);
	return *mask != NULL;
}

void free_cpumask_var(cpumask_var_t mask)
{
	if (mask)
		mock_free(mask, KFREE_KINDS, "free_cpumask_var", CALLER);
}

void vfree(const void *p)
{
	mock_might_sleep(CALLER, "vfree()");
	mock_free(p, VFREE_KINDS, "vfree", CALLER);
}

unsigned long *bitmap_zalloc(unsigned int nbits, gfp_t flags)
{
	return mock_alloc(BITS_TO_LONGS(nbits) * sizeof(unsigned long),
			  flags | __GFP_ZERO, MOCK_KMALLOC, CALLER);
}

unsigned long *bitmap_alloc(unsigned int nbits, gfp_t flags)
{
	return mock_alloc(BITS_TO_LONGS(nbits) * sizeof(unsigned long),
			  flags, MOCK_KMALLOC, CALLER);
}

void bitmap_free(const unsigned long *bitmap)
{
	mock_free(bitmap, KFREE_KINDS, "bitmap_free", CALLER);
}

/* ---------------------------------------------------------------------
 * XArray: a sorted list of (index, entry) hanging off xa_head, one
 * kmalloc()ed node per entry, so that xa_store() can fail (the
 * allocation mask covers it) and an xarray not emptied leaks.
 */
struct mock_xa_node {
	unsigned long index;
	void *entry;
	struct mock_xa_node *next;
};

static struct mock_xa_node **xa_slot(struct xarray *xa, unsigned long index)
{
	struct mock_xa_node **pp = (struct mock_xa_node **)&xa->xa_head;

	while (*pp && (*pp)->index < index)
		pp = &(*pp)->next;
	return pp;
}

void *xa_load(struct xarray *xa, unsigned long index)
{
	struct mock_xa_node *n = *xa_slot(xa, index);

	return n && n->index == index ? n->entry : NULL;
}

static void *xa_remove(struct xarray *xa, unsigned long index, void *pc)
{
	struct mock_xa_node **pp = xa_slot(xa, index), *n = *pp;
	void *old;

	if (!n || n->index != index)
		return NULL;
	old = n->entry;
	*pp = n->next;
	mock_free(n, KFREE_KINDS, "xa_erase", pc);
	return old;
}

void *xa_store(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp)
{
	struct mock_xa_node **pp = xa_slot(xa, index), *n = *pp;
	void *old;

	if (!entry)
		return xa_remove(xa, index, CALLER);
	if (n && n->index == index) {
		old = n->entry;
		n->entry = entry;
		return old;
	}
	n = mock_alloc(sizeof(*n), gfp, MOCK_KMALLOC, CALLER);
	if (!n)
		return XA_ERROR(-ENOMEM);
	n->index = index;
	n->entry = entry;
	n->next = *pp;
	*pp = n;
	return NULL;
}

void *xa_erase(struct xarray *xa, unsigned long index)
{
	return xa_remove(xa, index, CALLER);
}

/*
 * The allocating XArray of kprog_ib's transfer ids: the lowest free index
 * from *next on (wrapping within @limit). The kernel drops the xa_lock to
 * allocate with a sleeping @gfp; here the node is allocated without
 * sleeping (the caller holds the lock), with the same failure mask.
 */
int __xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry,
		      struct xa_limit limit, u32 *next, gfp_t gfp)
{
	struct mock_xa_node **pp, *n;
	u32 i = max(*next, limit.min);
	bool wrapped = false;

	for (;;) {
		if (i > limit.max || i < limit.min) {
			if (wrapped)
				return -EBUSY;
			wrapped = true;
			i = limit.min;
		}
		pp = xa_slot(xa, i);
		if (!*pp || (*pp)->index != i)
			break;
		i++;
	}
	n = mock_alloc(sizeof(*n), gfp & ~__GFP_DIRECT_RECLAIM, MOCK_KMALLOC,
		       CALLER);
	if (!n)
		return -ENOMEM;
	n->index = i;
	n->entry = entry;
	n->next = *pp;
	*pp = n;
	*id = i;
	*next = i + 1;
	return wrapped;
}

void *__xa_erase(struct xarray *xa, unsigned long index)
{
	return xa_remove(xa, index, CALLER);
}

void *xa_find(struct xarray *xa, unsigned long *index, unsigned long max,
	      xa_mark_t filter)
{
	struct mock_xa_node *n = *xa_slot(xa, *index);

	if (!n || n->index > max)
		return NULL;
	*index = n->index;
	return n->entry;
}

void *xa_find_after(struct xarray *xa, unsigned long *index,
		    unsigned long max, xa_mark_t filter)
{
	unsigned long next = *index + 1;

	if (!next)
		return NULL;
	*index = next;
	return xa_find(xa, index, max, filter);
}

void xa_destroy(struct xarray *xa)
{
	while (xa->xa_head)
		xa_remove(xa, ((struct mock_xa_node *)xa->xa_head)->index,
			  CALLER);
}

/* Unused, but kmalloc() of a constant size names a cache in it. */
struct kmem_cache *kmalloc_caches[NR_KMALLOC_TYPES][KMALLOC_SHIFT_HIGH + 1];

size_t mock_vmalloc_user_size(const void *p)
{
	struct mock_block *b = block_find(p);

	return b && b->kind == MOCK_VMALLOC_USER ? b->size : 0;
}

void mock_mem_check(void)
{
	blocks_report_and_forget(true);
}

void mock_mem_forget(void)
{
	blocks_report_and_forget(false);
}
