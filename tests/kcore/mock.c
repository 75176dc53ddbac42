// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/mock.c: the kernel functions that the kmod files call,
 * reimplemented for a single-threaded user-space test process.
 *
 * Built against the kernel headers like the module itself, so every
 * definition here has the kernel's own prototype. The C library cannot be
 * included next to them: the few libc functions used are declared by hand
 * below (memcpy, vsnprintf and friends are declared by the kernel headers
 * with the same prototypes as libc's).
 *
 * Sections: failure reports, memory, locks and atomic context, user
 * copies, address spaces and pages, processes, sleeping and wake-ups,
 * time and hrtimers, work and tasklets, messages, devices (misc, debugfs,
 * seq_file), kernel library helpers, per-CPU data and paravirt, and the
 * per-test reset and checks.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/clock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/interrupt.h>
#include <linux/hrtimer.h>
#include <linux/wait.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/miscdevice.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/bitmap.h>
#include <linux/llist.h>
#include <linux/refcount.h>
#include <linux/cpumask.h>
#include <linux/jiffies.h>
#include <linux/poison.h>
#include <linux/compat.h>
#include <asm/paravirt.h>
#include "mock.h"
#include "runner.h"

/* The C library, declared by hand (its headers clash with the kernel's). */
extern void *malloc(size_t size);
extern void *calloc(size_t nmemb, size_t size);
extern void *realloc(void *ptr, size_t size);
extern void *aligned_alloc(size_t alignment, size_t size);
extern void free(void *ptr);
extern int printf(const char *fmt, ...);
extern int mincore(void *addr, size_t length, unsigned char *vec);
/* AddressSanitizer's symbolizer names the callers in failure messages. */
extern void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *buf,
				     size_t size);

#define CALLER __builtin_return_address(0)

/* The symbolizer gives the line as text. */
static int line_of(const char *s)
{
	int n = 0;

	while (*s >= '0' && *s <= '9')
		n = n * 10 + *s++ - '0';
	return n;
}

/* ---------------------------------------------------------------------
 * Failure reports
 */

/* "function file:line" of a return address, for messages. */
static const char *mock_where(void *pc, char *buf, size_t size)
{
	__sanitizer_symbolize_pc((char *)pc - 1, "%f %s:%l", buf, size);
	return buf;
}

/* A failed check, reported at the source line of @pc (the mock's caller). */
static void __printf(2, 3) mock_fail_at(void *pc, const char *fmt, ...)
{
	char file[256], line[16], msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__sanitizer_symbolize_pc((char *)pc - 1, "%s", file, sizeof(file));
	__sanitizer_symbolize_pc((char *)pc - 1, "%l", line, sizeof(line));
	kt_fail(file, line_of(line), "%s", msg);
}

static void __printf(2, 3) __noreturn mock_fatal_at(void *pc,
						     const char *fmt, ...)
{
	char file[256], line[16], msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__sanitizer_symbolize_pc((char *)pc - 1, "%s", file, sizeof(file));
	__sanitizer_symbolize_pc((char *)pc - 1, "%l", line, sizeof(line));
	kt_fatal(file, line_of(line), "%s", msg);
}

/* Consumes one bit of a failure-injection mask: true = fail this call. */
static bool mock_check_error(u64 *mask)
{
	bool fail = *mask & 1;

	*mask >>= 1;
	return fail;
}

u64 mock_kmalloc_errors;
u64 mock_copy_from_user_errors;
u64 mock_copy_to_user_errors;
u64 mock_gup_errors;
u64 mock_misc_register_errors;
u64 mock_remap_errors;
unsigned long mock_gup_max_pages;

long mock_allocs, mock_live_allocs, mock_pinned_pages, mock_dirtied_pages;
long mock_wakeups, mock_schedules, mock_cond_rescheds, mock_lock_acquires;

/* ---------------------------------------------------------------------
 * Locks and atomic context
 *
 * The test's thread is the only one, so a lock it already holds can never
 * be released: taking it again is a deadlock and ends the test. Interrupt
 * state lives in mock_irq_flags (read by the paravirt thunks) and the
 * preemption count in the real per-CPU __preempt_count, so preemptible(),
 * irqs_disabled() and in_atomic() in kernel code tell the truth.
 */
unsigned long mock_irq_flags = X86_EFLAGS_IF;

enum { MOCK_HELD_ANY, MOCK_HELD_WRITE, MOCK_HELD_READ, MOCK_HELD_SPIN };

static struct {
	const void *lock;
	int mode;
	void *pc;
} held[32];
static int nheld;

int mock_locks_held(void)
{
	return nheld;
}

bool mock_irqs_enabled(void)
{
	return mock_irq_flags & X86_EFLAGS_IF;
}

static int held_find(const void *lock)
{
	int i;

	for (i = nheld - 1; i >= 0; i--)
		if (held[i].lock == lock)
			return i;
	return -1;
}

static void held_add(const void *lock, int mode, void *pc)
{
	char buf[256];
	int i = held_find(lock);

	if (i >= 0 && (mode != MOCK_HELD_READ || held[i].mode != MOCK_HELD_READ))
		mock_fatal_at(pc, "deadlock: lock %p is already held (taken in %s)",
			      lock, mock_where(held[i].pc, buf, sizeof(buf)));
	if (nheld == ARRAY_SIZE(held))
		mock_fatal_at(pc, "more than %zu locks held", ARRAY_SIZE(held));
	held[nheld].lock = lock;
	held[nheld].mode = mode;
	held[nheld].pc = pc;
	nheld++;
	mock_lock_acquires++;
}

static void held_del(const void *lock, void *pc)
{
	int i = held_find(lock);

	if (i < 0) {
		mock_fail_at(pc, "release of lock %p, which is not held", lock);
		return;
	}
	nheld--;
	memmove(&held[i], &held[i + 1], (nheld - i) * sizeof(held[0]));
}

void mock_assert_held(const void *lock, int mode, const char *file, int line)
{
	int i = held_find(lock);

	if (i < 0)
		kt_fail(file, line, "lockdep_assert_held: lock %p is not held",
			lock);
	else if (mode == MOCK_HELD_WRITE && held[i].mode == MOCK_HELD_READ)
		kt_fail(file, line, "lock %p is held for reading, not writing",
			lock);
	else if (mode == MOCK_HELD_READ && held[i].mode == MOCK_HELD_WRITE)
		kt_fail(file, line, "lock %p is held for writing, not reading",
			lock);
}

static bool mock_in_atomic(void)
{
	return preempt_count() || !mock_irqs_enabled();
}

/* Sleeping in atomic context is a bug the kernel would at best warn about. */
static void might_sleep_check(void *pc, const char *what)
{
	if (mock_in_atomic())
		mock_fail_at(pc, "%s in atomic context (preempt_count %#x, irqs %s)",
			     what, preempt_count(),
			     mock_irqs_enabled() ? "on" : "off");
}

static void spin_take(raw_spinlock_t *lock, void *pc)
{
	held_add(lock, MOCK_HELD_SPIN, pc);
	preempt_count_add(1);
	atomic_set(&lock->raw_lock.val, _Q_LOCKED_VAL);
}

static void spin_drop(raw_spinlock_t *lock, void *pc)
{
	if (held_find(lock) < 0) {
		held_del(lock, pc);	/* reports it */
		return;
	}
	held_del(lock, pc);
	preempt_count_sub(1);
	atomic_set(&lock->raw_lock.val, 0);
}

void _raw_spin_lock(raw_spinlock_t *lock)
{
	spin_take(lock, CALLER);
}

void _raw_spin_unlock(raw_spinlock_t *lock)
{
	spin_drop(lock, CALLER);
}

int _raw_spin_trylock(raw_spinlock_t *lock)
{
	if (held_find(lock) >= 0)
		return 0;
	spin_take(lock, CALLER);
	return 1;
}

void _raw_spin_lock_bh(raw_spinlock_t *lock)
{
	preempt_count_add(SOFTIRQ_DISABLE_OFFSET);
	spin_take(lock, CALLER);
}

void _raw_spin_unlock_bh(raw_spinlock_t *lock)
{
	spin_drop(lock, CALLER);
	preempt_count_sub(SOFTIRQ_DISABLE_OFFSET);
}

void _raw_spin_lock_irq(raw_spinlock_t *lock)
{
	mock_irq_flags &= ~X86_EFLAGS_IF;
	spin_take(lock, CALLER);
}

void _raw_spin_unlock_irq(raw_spinlock_t *lock)
{
	spin_drop(lock, CALLER);
	mock_irq_flags |= X86_EFLAGS_IF;
}

unsigned long _raw_spin_lock_irqsave(raw_spinlock_t *lock)
{
	unsigned long flags = mock_irq_flags;

	mock_irq_flags &= ~X86_EFLAGS_IF;
	spin_take(lock, CALLER);
	return flags;
}

void _raw_spin_unlock_irqrestore(raw_spinlock_t *lock, unsigned long flags)
{
	spin_drop(lock, CALLER);
	mock_irq_flags = (mock_irq_flags & ~X86_EFLAGS_IF) |
			 (flags & X86_EFLAGS_IF);
}

static void mutex_acquire_(struct mutex *lock, void *pc)
{
	might_sleep_check(pc, "mutex_lock()");
	held_add(lock, MOCK_HELD_WRITE, pc);
	atomic_long_set(&lock->owner, (long)current);
}

void mutex_lock(struct mutex *lock)
{
	mutex_acquire_(lock, CALLER);
}

int mutex_lock_interruptible(struct mutex *lock)
{
	mutex_acquire_(lock, CALLER);
	return 0;
}

int mutex_lock_killable(struct mutex *lock)
{
	mutex_acquire_(lock, CALLER);
	return 0;
}

int mutex_trylock(struct mutex *lock)
{
	if (held_find(lock) >= 0)
		return 0;
	held_add(lock, MOCK_HELD_WRITE, CALLER);
	atomic_long_set(&lock->owner, (long)current);
	return 1;
}

bool mutex_is_locked(struct mutex *lock)
{
	return atomic_long_read(&lock->owner);
}

void mutex_unlock(struct mutex *lock)
{
	held_del(lock, CALLER);
	atomic_long_set(&lock->owner, 0);
}

void __init_rwsem(struct rw_semaphore *sem, const char *name,
		  struct lock_class_key *key)
{
	atomic_long_set(&sem->count, 0);
}

void down_read(struct rw_semaphore *sem)
{
	might_sleep_check(CALLER, "down_read()");
	held_add(sem, MOCK_HELD_READ, CALLER);
	atomic_long_inc(&sem->count);
}

int down_read_killable(struct rw_semaphore *sem)
{
	might_sleep_check(CALLER, "down_read_killable()");
	held_add(sem, MOCK_HELD_READ, CALLER);
	atomic_long_inc(&sem->count);
	return 0;
}

void up_read(struct rw_semaphore *sem)
{
	held_del(sem, CALLER);
	atomic_long_dec(&sem->count);
}

void down_write(struct rw_semaphore *sem)
{
	might_sleep_check(CALLER, "down_write()");
	held_add(sem, MOCK_HELD_WRITE, CALLER);
	atomic_long_set(&sem->count, 1);
}

void up_write(struct rw_semaphore *sem)
{
	held_del(sem, CALLER);
	atomic_long_set(&sem->count, 0);
}

/* ---------------------------------------------------------------------
 * Memory
 *
 * Blocks come from malloc(), so AddressSanitizer checks every access, and
 * are tracked here: freeing with the wrong function, twice, or not at all
 * fails the test. Memory not asked to be zeroed is filled with 0xa5 so
 * that a missing initialisation shows.
 */
enum mock_kind { MOCK_KMALLOC, MOCK_KVMALLOC, MOCK_VMALLOC, MOCK_VMALLOC_USER };

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

static void *mock_alloc(size_t size, gfp_t flags, enum mock_kind kind,
			void *pc)
{
	struct mock_block *b;
	void *p;

	mock_allocs++;
	if (gfpflags_allow_blocking(flags))
		might_sleep_check(pc, "sleeping allocation");
	if (mock_check_error(&mock_kmalloc_errors))
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
static void mock_free(const void *p, unsigned int kinds, const char *fn,
		      void *pc)
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

#define KFREE_KINDS	(1U << MOCK_KMALLOC)
#define VFREE_KINDS	((1U << MOCK_VMALLOC) | (1U << MOCK_VMALLOC_USER))
#define KVFREE_KINDS	(KFREE_KINDS | VFREE_KINDS | (1U << MOCK_KVMALLOC))

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
				kt_fail(__FILE__, __LINE__,
					"leak: %zu bytes from %s() in %s",
					b->size, kind_names[b->kind],
					mock_where(b->pc, buf, sizeof(buf)));
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

void vfree(const void *p)
{
	might_sleep_check(CALLER, "vfree()");
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

/* Unused, but kmalloc() of a constant size names a cache in it. */
struct kmem_cache *kmalloc_caches[NR_KMALLOC_TYPES][KMALLOC_SHIFT_HIGH + 1];

/* ---------------------------------------------------------------------
 * User copies
 *
 * User pointers are the test's own pointers; the low MOCK_USER_MIN bytes,
 * anything beyond a 47-bit address space and pages not mapped in the test
 * process fault.
 */
static bool uaddr_bad(unsigned long a, unsigned long n)
{
	unsigned char vec[64];
	unsigned long p, len;

	if (a < MOCK_USER_MIN || a + n < a || a + n > (1UL << 47) - PAGE_SIZE)
		return true;
	/* mincore() fails with ENOMEM on a range that is not all mapped. */
	for (p = a & PAGE_MASK; p < a + n; p += len) {
		len = min(PAGE_ALIGN(a + n) - p, sizeof(vec) * PAGE_SIZE);
		if (mincore((void *)p, len, vec))
			return true;
	}
	return false;
}

unsigned long _copy_from_user(void *to, const void __user *from,
			      unsigned long n)
{
	might_sleep_check(CALLER, "copy_from_user()");
	if (mock_check_error(&mock_copy_from_user_errors) ||
	    uaddr_bad((unsigned long)from, n)) {
		memset(to, 0, n);	/* as the kernel does */
		return n;
	}
	memcpy(to, (const void __force *)from, n);
	return 0;
}

unsigned long _copy_to_user(void __user *to, const void *from,
			    unsigned long n)
{
	might_sleep_check(CALLER, "copy_to_user()");
	if (mock_check_error(&mock_copy_to_user_errors) ||
	    uaddr_bad((unsigned long)to, n))
		return n;
	memcpy((void __force *)to, from, n);
	return 0;
}

/* Called from the __put_user_N thunks (thunks.S). */
long mock_put_user(void *ptr, unsigned long val, int size, void *caller);
long mock_put_user(void *ptr, unsigned long val, int size, void *caller)
{
	might_sleep_check(caller, "put_user()");
	if (mock_check_error(&mock_copy_to_user_errors) ||
	    uaddr_bad((unsigned long)ptr, size))
		return -EFAULT;
	memcpy(ptr, &val, size);
	return 0;
}

struct mock_gu {
	long err;
	unsigned long val;
};

/* Called from the __get_user_N thunks (thunks.S). */
struct mock_gu mock_get_user(const void *ptr, int size, void *caller);
struct mock_gu mock_get_user(const void *ptr, int size, void *caller)
{
	struct mock_gu r = { 0, 0 };

	might_sleep_check(caller, "get_user()");
	if (mock_check_error(&mock_copy_from_user_errors) ||
	    uaddr_bad((unsigned long)ptr, size))
		r.err = -EFAULT;
	else
		memcpy(&r.val, ptr, size);
	return r;
}

void __check_object_size(const void *ptr, unsigned long n, bool to_user)
{
}

/* CONFIG_FORTIFY_SOURCE found a string or memory overflow. */
void fortify_panic(const char *name)
{
	mock_fatal_at(CALLER, "fortify: buffer overflow in %s()", name);
}

/* ---------------------------------------------------------------------
 * Address spaces and pages
 *
 * With page_offset_base 0, the kernel's page_address() of the fake page
 * for user address A is A itself: kmap_local_page() of a pinned page maps
 * the test's own buffer and a real copy moves real bytes. The fake struct
 * pages are never dereferenced (they lie far outside the process).
 */
unsigned long page_offset_base;
unsigned long vmemmap_base = 0x200000000000UL;

struct page *mock_page_of(unsigned long uaddr)
{
	return (struct page *)(vmemmap_base +
			       (uaddr >> PAGE_SHIFT) * sizeof(struct page));
}

static bool mock_page_ok(const struct page *page)
{
	unsigned long p = (unsigned long)page;

	return p >= vmemmap_base && !((p - vmemmap_base) % sizeof(*page));
}

void __mmdrop(struct mm_struct *mm)
{
	mock_fail_at(CALLER, "mm_count of mm %p fell to 0: mmdrop() without mmgrab()",
		     mm);
}

void mmput(struct mm_struct *mm)
{
	might_sleep_check(CALLER, "mmput()");
	if (atomic_dec_return(&mm->mm_users) < 0)
		mock_fail_at(CALLER, "mmput() of mm %p without a user", mm);
}

long pin_user_pages_remote(struct mm_struct *mm, unsigned long start,
			   unsigned long nr_pages, unsigned int gup_flags,
			   struct page **pages, struct vm_area_struct **vmas,
			   int *locked)
{
	unsigned long i, n = nr_pages;

	might_sleep_check(CALLER, "pin_user_pages_remote()");
	if (atomic_read(&mm->mm_users) <= 0)
		mock_fail_at(CALLER, "pin_user_pages_remote() on mm %p without mmget()",
			     mm);
	if (held_find(&mm->mmap_lock) < 0)
		mock_fail_at(CALLER, "pin_user_pages_remote() without the mmap lock");
	if (gup_flags & FOLL_GET)
		mock_fail_at(CALLER, "pin_user_pages_remote() with FOLL_GET");
	if (mock_check_error(&mock_gup_errors))
		return -EFAULT;
	if (mock_gup_max_pages && n > mock_gup_max_pages)
		n = mock_gup_max_pages;
	start &= PAGE_MASK;
	for (i = 0; i < n; i++) {
		if (uaddr_bad(start + i * PAGE_SIZE, PAGE_SIZE))
			break;
		pages[i] = mock_page_of(start + i * PAGE_SIZE);
		if (vmas)
			vmas[i] = NULL;
	}
	mock_pinned_pages += i;
	return i ? i : -EFAULT;
}

static void mock_unpin(struct page **pages, unsigned long n, void *pc)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		if (!mock_page_ok(pages[i]))
			mock_fail_at(pc, "unpin of page %p, which was never pinned",
				     pages[i]);
	mock_pinned_pages -= n;
	if (mock_pinned_pages < 0)
		mock_fail_at(pc, "more pages unpinned than pinned");
}

void unpin_user_pages(struct page **pages, unsigned long npages)
{
	mock_unpin(pages, npages, CALLER);
}

void unpin_user_pages_dirty_lock(struct page **pages, unsigned long npages,
				 bool make_dirty)
{
	might_sleep_check(CALLER, "unpin_user_pages_dirty_lock()");
	mock_unpin(pages, npages, CALLER);
	if (make_dirty)
		mock_dirtied_pages += npages;
}

void *mock_remap_addr;

int remap_vmalloc_range(struct vm_area_struct *vma, void *addr,
			unsigned long pgoff)
{
	struct mock_block *b = block_find(addr);

	if (mock_check_error(&mock_remap_errors))
		return -EAGAIN;
	if (!b || b->kind != MOCK_VMALLOC_USER) {
		/* The kernel refuses areas without VM_USERMAP. */
		mock_fail_at(CALLER, "remap_vmalloc_range() of %p, not from vmalloc_user()",
			     addr);
		return -EINVAL;
	}
	if ((pgoff << PAGE_SHIFT) + vma->vm_end - vma->vm_start >
	    PAGE_ALIGN(b->size))
		return -EINVAL;
	mock_remap_addr = addr;
	return 0;
}

/* mmap_read_lock() traces when its tracepoints are on; they never are. */
struct tracepoint __tracepoint_mmap_lock_start_locking;
struct tracepoint __tracepoint_mmap_lock_acquire_returned;
struct tracepoint __tracepoint_mmap_lock_released;

void __mmap_lock_do_trace_start_locking(struct mm_struct *mm, bool write)
{
}

void __mmap_lock_do_trace_acquire_returned(struct mm_struct *mm, bool write,
					   bool success)
{
}

void __mmap_lock_do_trace_released(struct mm_struct *mm, bool write)
{
}

/* ---------------------------------------------------------------------
 * Processes
 */
DEFINE_PER_CPU(struct task_struct *, current_task);
struct mock_proc *mock_default_proc;
static LIST_HEAD(procs);
static LIST_HEAD(dead_procs);	/* of aborted tests: reachable, never freed */
static struct mock_proc *kworker;
static int nr_procs;

static struct mock_proc *proc_alloc(uid_t euid, bool with_mm)
{
	/* task_struct is cache-line aligned. */
	struct mock_proc *p = aligned_alloc(__alignof__(*p),
					    ALIGN(sizeof(*p), __alignof__(*p)));

	if (!p)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	memset(p, 0, sizeof(*p));
	p->cred.uid = p->cred.euid = p->cred.fsuid = KUIDT_INIT(euid);
	p->cred.gid = p->cred.egid = p->cred.fsgid = KGIDT_INIT(euid);
	if (with_mm) {
		/* mm_struct ends in a CPU bitmap. */
		p->mm = calloc(1, sizeof(*p->mm) + cpumask_size());
		if (!p->mm)
			kt_fatal(__FILE__, __LINE__, "out of memory");
		atomic_set(&p->mm->mm_users, 1);
		atomic_set(&p->mm->mm_count, 1);
		init_rwsem(&p->mm->mmap_lock);
	}
	p->task.mm = p->mm;
	p->task.active_mm = p->mm;
	rcu_assign_pointer(p->task.cred, &p->cred);
	rcu_assign_pointer(p->task.real_cred, &p->cred);
	p->task.__state = TASK_RUNNING;
	p->task.pid = 100 + nr_procs;
	p->task.timer_slack_ns = 50000;
	snprintf(p->task.comm, sizeof(p->task.comm), "proc%d", nr_procs++);
	return p;
}

struct mock_proc *mock_proc_new(uid_t euid)
{
	struct mock_proc *p = proc_alloc(euid, true);

	list_add_tail(&p->node, &procs);
	return p;
}

void mock_set_current(struct mock_proc *p)
{
	this_cpu_write(current_task, &p->task);
}

void mock_proc_exit_mm(struct mock_proc *p)
{
	p->exited = true;
	p->task.mm = NULL;
	mmput(p->mm);
}

void mock_signal(struct mock_proc *p)
{
	set_tsk_thread_flag(&p->task, TIF_SIGPENDING);
}

/* Every mm must be back to the references its process holds. */
static void procs_check_and_free(bool check)
{
	struct mock_proc *p, *tmp;

	list_for_each_entry_safe(p, tmp, &procs, node) {
		if (check && atomic_read(&p->mm->mm_count) != 1)
			kt_fail(__FILE__, __LINE__,
				"mm of %s: mm_count %d, not 1 (mmgrab/mmdrop unbalanced)",
				p->task.comm, atomic_read(&p->mm->mm_count));
		if (check && atomic_read(&p->mm->mm_users) != !p->exited)
			kt_fail(__FILE__, __LINE__,
				"mm of %s: mm_users %d, not %d (mmget/mmput unbalanced)",
				p->task.comm, atomic_read(&p->mm->mm_users),
				!p->exited);
		/* After an aborted test the module may still point here. */
		if (check) {
			list_del(&p->node);
			free(p->mm);
			free(p);
		} else {
			list_move(&p->node, &dead_procs);
		}
	}
}

/* ---------------------------------------------------------------------
 * Sleeping and wake-ups
 */
void (*mock_schedule_hook)(void *arg);
void *mock_schedule_hook_arg;

static struct {
	struct wait_queue_head *wq;
	int n;
} wakeups_by_wq[64];

int mock_wakeups_of(struct wait_queue_head *wq)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(wakeups_by_wq); i++)
		if (wakeups_by_wq[i].wq == wq)
			return wakeups_by_wq[i].n;
	return 0;
}

static void count_wakeup(struct wait_queue_head *wq)
{
	int i;

	mock_wakeups++;
	for (i = 0; i < ARRAY_SIZE(wakeups_by_wq); i++) {
		if (!wakeups_by_wq[i].wq)
			wakeups_by_wq[i].wq = wq;
		if (wakeups_by_wq[i].wq == wq) {
			wakeups_by_wq[i].n++;
			return;
		}
	}
}

void __init_waitqueue_head(struct wait_queue_head *wq_head, const char *name,
			   struct lock_class_key *key)
{
	spin_lock_init(&wq_head->lock);
	INIT_LIST_HEAD(&wq_head->head);
}

int wake_up_process(struct task_struct *p)
{
	if (READ_ONCE(p->__state) == TASK_RUNNING)
		return 0;
	WRITE_ONCE(p->__state, TASK_RUNNING);
	return 1;
}

int default_wake_function(struct wait_queue_entry *curr, unsigned int mode,
			  int wake_flags, void *key)
{
	struct task_struct *p = curr->private;

	if (!(READ_ONCE(p->__state) & mode))
		return 0;
	return wake_up_process(p);
}

int autoremove_wake_function(struct wait_queue_entry *wq_entry,
			     unsigned int mode, int sync, void *key)
{
	int ret = default_wake_function(wq_entry, mode, sync, key);

	if (ret)
		list_del_init(&wq_entry->entry);
	return ret;
}

int __wake_up(struct wait_queue_head *wq_head, unsigned int mode,
	      int nr_exclusive, void *key)
{
	struct wait_queue_entry *curr, *next;
	int woken = 0;

	count_wakeup(wq_head);
	list_for_each_entry_safe(curr, next, &wq_head->head, entry) {
		unsigned int flags = curr->flags;
		int ret = curr->func(curr, mode, 0, key);

		if (ret < 0)
			break;
		woken += ret > 0;
		if (ret && (flags & WQ_FLAG_EXCLUSIVE) && !--nr_exclusive)
			break;
	}
	return woken;
}

void init_wait_entry(struct wait_queue_entry *wq_entry, int flags)
{
	wq_entry->flags = flags;
	wq_entry->private = current;
	wq_entry->func = autoremove_wake_function;
	INIT_LIST_HEAD(&wq_entry->entry);
}

long prepare_to_wait_event(struct wait_queue_head *wq_head,
			   struct wait_queue_entry *wq_entry, int state)
{
	if (signal_pending_state(state, current)) {
		list_del_init(&wq_entry->entry);
		return -ERESTARTSYS;
	}
	if (list_empty(&wq_entry->entry)) {
		if (wq_entry->flags & WQ_FLAG_EXCLUSIVE)
			list_add_tail(&wq_entry->entry, &wq_head->head);
		else
			list_add(&wq_entry->entry, &wq_head->head);
	}
	WRITE_ONCE(current->__state, state);
	return 0;
}

void finish_wait(struct wait_queue_head *wq_head,
		 struct wait_queue_entry *wq_entry)
{
	__set_current_state(TASK_RUNNING);
	if (!list_empty(&wq_entry->entry))
		list_del_init(&wq_entry->entry);
}

static bool fire_next_timer(void);

asmlinkage void schedule(void)
{
	struct task_struct *t = current;

	mock_schedules++;
	if (mock_in_atomic())
		mock_fatal_at(CALLER, "scheduling while atomic");
	if (READ_ONCE(t->__state) == TASK_RUNNING)
		return;
	if (mock_schedule_hook) {
		mock_schedule_hook(mock_schedule_hook_arg);
		this_cpu_write(current_task, t);
		if (READ_ONCE(t->__state) == TASK_RUNNING)
			return;
	}
	if (signal_pending_state(READ_ONCE(t->__state), t)) {
		WRITE_ONCE(t->__state, TASK_RUNNING);
		return;
	}
	/* Time passes until a timer wakes the task. */
	while (READ_ONCE(t->__state) != TASK_RUNNING)
		if (!fire_next_timer())
			mock_fatal_at(CALLER, "%s would sleep forever: nothing wakes it",
				      t->comm);
}

int __SCT__cond_resched(void)
{
	mock_cond_rescheds++;
	might_sleep_check(CALLER, "cond_resched()");
	return 0;
}

int __SCT__might_resched(void)
{
	might_sleep_check(CALLER, "might_sleep()");
	return 0;
}

/* ---------------------------------------------------------------------
 * Time and hrtimers
 */
ktime_t mock_ktime;
u64 mock_clock_step;
u64 jiffies_64;
unsigned long volatile jiffies;
static unsigned long jiffies_at_zero;

static void set_time(ktime_t t)
{
	mock_ktime = t;
	jiffies = jiffies_at_zero + t / TICK_NSEC;
	jiffies_64 = jiffies;
}

ktime_t ktime_get(void)
{
	set_time(mock_ktime + mock_clock_step);
	return mock_ktime;
}

u64 sched_clock_cpu(int cpu)
{
	set_time(mock_ktime + mock_clock_step);
	return mock_ktime;
}

ktime_t ktime_add_safe(const ktime_t lhs, const ktime_t rhs)
{
	ktime_t res = ktime_add_unsafe(lhs, rhs);

	if (res < 0 || res < lhs || res < rhs)
		res = ktime_set(KTIME_SEC_MAX, 0);
	return res;
}

static struct hrtimer *timers[64];
static int ntimers;

static ktime_t mock_get_time(void)
{
	return mock_ktime;
}

static struct hrtimer_clock_base mock_clock_base = { .get_time = mock_get_time };

void hrtimer_init(struct hrtimer *timer, clockid_t clock_id,
		  enum hrtimer_mode mode)
{
	memset(timer, 0, sizeof(*timer));
	timer->base = &mock_clock_base;
}

static int timer_find(const struct hrtimer *timer)
{
	int i;

	for (i = 0; i < ntimers; i++)
		if (timers[i] == timer)
			return i;
	return -1;
}

static bool timer_remove(struct hrtimer *timer)
{
	int i = timer_find(timer);

	if (i < 0)
		return false;
	timers[i] = timers[--ntimers];
	timer->state = HRTIMER_STATE_INACTIVE;
	return true;
}

void hrtimer_start_range_ns(struct hrtimer *timer, ktime_t tim,
			    u64 delta_ns, const enum hrtimer_mode mode)
{
	if (mode & HRTIMER_MODE_REL)
		tim = ktime_add_safe(tim, mock_ktime);
	hrtimer_set_expires_range_ns(timer, tim, delta_ns);
	if (timer_find(timer) < 0) {
		if (ntimers == ARRAY_SIZE(timers))
			mock_fatal_at(CALLER, "too many hrtimers");
		timers[ntimers++] = timer;
	}
	timer->state = HRTIMER_STATE_ENQUEUED;
}

int hrtimer_try_to_cancel(struct hrtimer *timer)
{
	return timer_remove(timer);
}

int hrtimer_cancel(struct hrtimer *timer)
{
	return timer_remove(timer);
}

u64 hrtimer_forward(struct hrtimer *timer, ktime_t now, ktime_t interval)
{
	ktime_t delta = ktime_sub(now, hrtimer_get_expires(timer));
	u64 orun = 1;

	if (delta < 0)
		return 0;
	if (delta >= interval) {
		orun = ktime_divns(delta, interval);
		hrtimer_add_expires_ns(timer, interval * orun);
		if (hrtimer_get_expires(timer) > now)
			return orun;
		orun++;
	}
	hrtimer_add_expires(timer, interval);
	return orun;
}

/* Fires the earliest timer, moving time to its expiry. */
static bool fire_next_timer(void)
{
	struct hrtimer *t;
	int i, first = 0;

	if (!ntimers)
		return false;
	for (i = 1; i < ntimers; i++)
		if (hrtimer_get_softexpires(timers[i]) <
		    hrtimer_get_softexpires(timers[first]))
			first = i;
	t = timers[first];
	timer_remove(t);
	if (hrtimer_get_softexpires(t) > mock_ktime)
		set_time(hrtimer_get_softexpires(t));
	if (t->function(t) == HRTIMER_RESTART)
		hrtimer_start_range_ns(t, hrtimer_get_softexpires(t), 0,
				       HRTIMER_MODE_ABS);
	return true;
}

void mock_time_advance(u64 ns)
{
	ktime_t end = mock_ktime + ns;
	int i;

	for (;;) {
		bool due = false;

		for (i = 0; i < ntimers; i++)
			due |= hrtimer_get_softexpires(timers[i]) <= end;
		if (!due || !fire_next_timer())
			break;
	}
	set_time(end);
}

static enum hrtimer_restart mock_sleeper_wakeup(struct hrtimer *timer)
{
	struct hrtimer_sleeper *t = container_of(timer, struct hrtimer_sleeper,
						 timer);
	struct task_struct *task = t->task;

	t->task = NULL;
	if (task)
		wake_up_process(task);
	return HRTIMER_NORESTART;
}

void hrtimer_init_sleeper(struct hrtimer_sleeper *sl, clockid_t clock_id,
			  enum hrtimer_mode mode)
{
	hrtimer_init(&sl->timer, clock_id, mode);
	sl->timer.function = mock_sleeper_wakeup;
	sl->task = current;
}

void hrtimer_sleeper_start_expires(struct hrtimer_sleeper *sl,
				   enum hrtimer_mode mode)
{
	hrtimer_start_expires(&sl->timer, mode);
}

/* ---------------------------------------------------------------------
 * Work and tasklets
 */
struct workqueue_struct {
	char name[32];
	unsigned int flags;
};

static struct workqueue_struct mock_system_wq = { .name = "events" };
struct workqueue_struct *system_wq = &mock_system_wq;

struct mock_work {
	struct work_struct *work;
	struct workqueue_struct *wq;
	struct mock_work *next;
};

static struct mock_work *work_head, **work_tail = &work_head;

struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags,
					 int max_active, ...)
{
	struct workqueue_struct *wq;
	va_list ap;

	wq = mock_alloc(sizeof(*wq), GFP_KERNEL, MOCK_KMALLOC, CALLER);
	if (!wq)
		return NULL;
	va_start(ap, max_active);
	vsnprintf(wq->name, sizeof(wq->name), fmt, ap);
	va_end(ap);
	wq->flags = flags;
	return wq;
}

bool queue_work_on(int cpu, struct workqueue_struct *wq,
		   struct work_struct *work)
{
	struct mock_work *w;

	if (test_and_set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work)))
		return false;
	w = malloc(sizeof(*w));
	if (!w)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	w->work = work;
	w->wq = wq;
	w->next = NULL;
	*work_tail = w;
	work_tail = &w->next;
	return true;
}

/* Takes the oldest item for which @match(item, arg) holds off the queue. */
static struct mock_work *work_take(bool (*match)(struct mock_work *, void *),
				   void *arg)
{
	struct mock_work **pp, *w;

	for (pp = &work_head; (w = *pp); pp = &w->next) {
		if (match && !match(w, arg))
			continue;
		*pp = w->next;
		if (work_tail == &w->next)
			work_tail = pp;
		return w;
	}
	return NULL;
}

static void check_context_clean(const char *who, void *fn)
{
	char buf[256];

	if (nheld || !mock_irqs_enabled() || preempt_count())
		kt_fail(__FILE__, __LINE__,
			"%s %s returned with %d locks held, irqs %s, preempt_count %#x",
			who, mock_where(fn, buf, sizeof(buf)), nheld,
			mock_irqs_enabled() ? "on" : "off", preempt_count());
}

/* Runs an item as a kernel worker would: no user mm, process context. */
static void work_run(struct mock_work *w)
{
	struct task_struct *prev = current;
	struct work_struct *work = w->work;
	work_func_t func = work->func;	/* the item may free itself */

	free(w);
	clear_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work));
	mock_set_current(kworker);
	func(work);
	this_cpu_write(current_task, prev);
	check_context_clean("work item", (void *)func + 1);
}

bool mock_run_work_one(void)
{
	struct mock_work *w = work_take(NULL, NULL);

	if (!w)
		return false;
	work_run(w);
	return true;
}

int mock_run_work(void)
{
	int n = 0;

	while (mock_run_work_one())
		n++;
	return n;
}

int mock_work_queued(void)
{
	struct mock_work *w;
	int n = 0;

	for (w = work_head; w; w = w->next)
		n++;
	return n;
}

static bool work_of_wq(struct mock_work *w, void *wq)
{
	return w->wq == wq;
}

static bool work_is(struct mock_work *w, void *work)
{
	return w->work == work;
}

void __flush_workqueue(struct workqueue_struct *wq)
{
	struct mock_work *w;

	might_sleep_check(CALLER, "flush_workqueue()");
	while ((w = work_take(work_of_wq, wq)))
		work_run(w);
}

void destroy_workqueue(struct workqueue_struct *wq)
{
	__flush_workqueue(wq);
	mock_free(wq, KFREE_KINDS, "destroy_workqueue", CALLER);
}

bool flush_work(struct work_struct *work)
{
	struct mock_work *w = work_take(work_is, work);

	might_sleep_check(CALLER, "flush_work()");
	if (!w)
		return false;
	work_run(w);
	return true;
}

bool cancel_work_sync(struct work_struct *work)
{
	struct mock_work *w = work_take(work_is, work);

	might_sleep_check(CALLER, "cancel_work_sync()");
	if (!w)
		return false;
	free(w);
	clear_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work));
	return true;
}

static struct tasklet_struct *tasklets[64];
static int ntasklets;

void __tasklet_schedule(struct tasklet_struct *t)
{
	if (ntasklets == ARRAY_SIZE(tasklets))
		mock_fatal_at(CALLER, "too many tasklets");
	tasklets[ntasklets++] = t;
}

void tasklet_init(struct tasklet_struct *t,
		  void (*func)(unsigned long), unsigned long data)
{
	memset(t, 0, sizeof(*t));
	t->func = func;
	t->data = data;
}

void tasklet_setup(struct tasklet_struct *t,
		   void (*callback)(struct tasklet_struct *))
{
	memset(t, 0, sizeof(*t));
	t->callback = callback;
	t->use_callback = true;
}

void tasklet_kill(struct tasklet_struct *t)
{
	int i;

	might_sleep_check(CALLER, "tasklet_kill()");
	for (i = 0; i < ntasklets; i++) {
		if (tasklets[i] == t) {
			memmove(&tasklets[i], &tasklets[i + 1],
				(--ntasklets - i) * sizeof(tasklets[0]));
			break;
		}
	}
	clear_bit(TASKLET_STATE_SCHED, &t->state);
}

int mock_run_tasklets(void)
{
	struct tasklet_struct *t;
	void *fn;
	int n = 0;

	while (ntasklets) {
		t = tasklets[0];
		memmove(&tasklets[0], &tasklets[1],
			--ntasklets * sizeof(tasklets[0]));
		clear_bit(TASKLET_STATE_SCHED, &t->state);
		fn = t->use_callback ? (void *)t->callback : (void *)t->func;
		preempt_count_add(SOFTIRQ_OFFSET);
		if (t->use_callback)
			t->callback(t);
		else
			t->func(t->data);
		preempt_count_sub(SOFTIRQ_OFFSET);
		check_context_clean("tasklet", fn + 1);
		n++;
	}
	return n;
}

/* ---------------------------------------------------------------------
 * Kernel messages
 */
char mock_printk_buf[16384];
static size_t printk_len;
static int printk_errors;

int _printk(const char *fmt, ...)
{
	int level = MESSAGE_LOGLEVEL_DEFAULT;
	char line[1024];
	va_list ap;
	int n;

	if (fmt[0] == KERN_SOH_ASCII && fmt[1]) {
		if (fmt[1] >= '0' && fmt[1] <= '7')
			level = fmt[1] - '0';
		fmt += 2;
	}
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (level <= LOGLEVEL_ERR)
		printk_errors++;
	if (kt_verbose)
		printf("  printk <%d>%s%s", level, line,
		       n && line[strlen(line) - 1] == '\n' ? "" : "\n");
	snprintf(mock_printk_buf + printk_len,
		 sizeof(mock_printk_buf) - printk_len, "<%d>%s%s", level, line,
		 n && line[strlen(line) - 1] == '\n' ? "" : "\n");
	printk_len = strlen(mock_printk_buf);
	return n;
}

bool mock_printk_take(const char *s)
{
	bool found = strstr(mock_printk_buf, s);

	mock_printk_clear();
	return found;
}

void mock_printk_clear(void)
{
	mock_printk_buf[0] = 0;
	printk_len = 0;
	printk_errors = 0;
}

/* ---------------------------------------------------------------------
 * Devices: misc, debugfs, seq_file, module parameters
 */
struct miscdevice *mock_miscdev;

int misc_register(struct miscdevice *misc)
{
	if (mock_check_error(&mock_misc_register_errors))
		return -EBUSY;
	if (mock_miscdev)
		mock_fail_at(CALLER, "misc_register(): %s is registered already",
			     mock_miscdev->name);
	if (misc->minor == MISC_DYNAMIC_MINOR)
		misc->minor = 123;
	mock_miscdev = misc;
	return 0;
}

void misc_deregister(struct miscdevice *misc)
{
	if (misc != mock_miscdev)
		mock_fail_at(CALLER, "misc_deregister() of a device not registered");
	mock_miscdev = NULL;
}

long compat_ptr_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return file->f_op->unlocked_ioctl(file, cmd,
					  (unsigned long)compat_ptr(arg));
}

loff_t noop_llseek(struct file *file, loff_t offset, int whence)
{
	return file->f_pos;
}

const struct kernel_param_ops param_ops_uint;
struct module __this_module = { .name = "kprog" };

/* debugfs entries, as a flat table; a dentry is a pointer into it. */
static struct mock_dentry {
	char name[32];
	const struct file_operations *fops;
	struct mock_dentry *parent;
	bool used;
} dentries[16];

static struct dentry *dentry_new(const char *name, struct dentry *parent,
				 const struct file_operations *fops)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(dentries); i++) {
		if (dentries[i].used)
			continue;
		snprintf(dentries[i].name, sizeof(dentries[i].name), "%s", name);
		dentries[i].fops = fops;
		dentries[i].parent = (struct mock_dentry *)parent;
		dentries[i].used = true;
		return (struct dentry *)&dentries[i];
	}
	kt_fatal(__FILE__, __LINE__, "too many debugfs entries");
}

struct dentry *debugfs_create_dir(const char *name, struct dentry *parent)
{
	return dentry_new(name, parent, NULL);
}

struct dentry *debugfs_create_file(const char *name, umode_t mode,
				   struct dentry *parent, void *data,
				   const struct file_operations *fops)
{
	return dentry_new(name, parent, fops);
}

void debugfs_remove(struct dentry *dentry)
{
	struct mock_dentry *d = (struct mock_dentry *)dentry;
	int i;

	if (IS_ERR_OR_NULL(dentry))
		return;
	for (i = 0; i < ARRAY_SIZE(dentries); i++)
		if (dentries[i].used && dentries[i].parent == d)
			debugfs_remove((struct dentry *)&dentries[i]);
	d->used = false;
}

const struct file_operations *mock_debugfs_fops(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(dentries); i++)
		if (dentries[i].used && !strcmp(dentries[i].name, name))
			return dentries[i].fops;
	return NULL;
}

int seq_open(struct file *file, const struct seq_operations *op)
{
	struct seq_file *m = mock_alloc(sizeof(*m), GFP_KERNEL | __GFP_ZERO,
					MOCK_KMALLOC, CALLER);

	if (!m)
		return -ENOMEM;
	m->op = op;
	m->file = file;
	file->private_data = m;
	return 0;
}

static void seq_append(struct seq_file *m, const char *s, size_t n)
{
	if (m->count + n + 1 > m->size) {
		m->size = max(2 * m->size, m->count + n + 1);
		m->buf = realloc(m->buf, m->size);
		if (!m->buf)
			kt_fatal(__FILE__, __LINE__, "out of memory");
	}
	memcpy(m->buf + m->count, s, n);
	m->count += n;
	m->buf[m->count] = 0;
}

void seq_printf(struct seq_file *m, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	seq_append(m, buf, strlen(buf));
}

void seq_puts(struct seq_file *m, const char *s)
{
	seq_append(m, s, strlen(s));
}

void seq_putc(struct seq_file *m, char c)
{
	seq_append(m, &c, 1);
}

/* Produces the whole text at once, then hands out the part asked for. */
ssize_t seq_read(struct file *file, char __user *buf, size_t size,
		 loff_t *ppos)
{
	struct seq_file *m = file->private_data;
	loff_t pos = 0;
	void *p;

	m->count = 0;
	p = m->op->start(m, &pos);
	while (p && !IS_ERR(p)) {
		m->op->show(m, p);
		p = m->op->next(m, p, &pos);
	}
	m->op->stop(m, p);
	if (*ppos >= m->count)
		return 0;
	size = min_t(size_t, size, m->count - *ppos);
	if (copy_to_user(buf, m->buf + *ppos, size))
		return -EFAULT;
	*ppos += size;
	return size;
}

loff_t seq_lseek(struct file *file, loff_t offset, int whence)
{
	return 0;
}

int seq_release(struct inode *inode, struct file *file)
{
	struct seq_file *m = file->private_data;

	free(m->buf);
	mock_free(m, KFREE_KINDS, "seq_release", CALLER);
	return 0;
}

char *mock_seq_read_all(const struct file_operations *fops)
{
	struct inode *inode = calloc(1, sizeof(*inode));
	struct file *file = calloc(1, sizeof(*file));
	size_t size = 1 << 16;
	char *text = calloc(1, size);
	loff_t pos = 0;
	ssize_t n = -1;

	if (!inode || !file || !text)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	file->f_op = fops;
	if (!fops->open(inode, file)) {
		n = fops->read(file, (char __user *)text, size - 1, &pos);
		fops->release(inode, file);
	}
	free(inode);
	free(file);
	if (n < 0) {
		free(text);
		return NULL;
	}
	return text;
}

void mock_free_text(char *s)
{
	free(s);
}

/* ---------------------------------------------------------------------
 * Kernel library helpers the headers call out of line
 */
unsigned long _find_next_bit(const unsigned long *addr, unsigned long nbits,
			     unsigned long start)
{
	for (; start < nbits; start++)
		if (test_bit(start, addr))
			return start;
	return nbits;
}

unsigned long _find_first_bit(const unsigned long *addr, unsigned long size)
{
	return _find_next_bit(addr, size, 0);
}

bool llist_add_batch(struct llist_node *new_first, struct llist_node *new_last,
		     struct llist_head *head)
{
	struct llist_node *first = READ_ONCE(head->first);

	do {
		new_last->next = first;
	} while (!try_cmpxchg(&head->first, &first, new_first));
	return !first;
}

/* CONFIG_DEBUG_LIST: the kernel's checks, failing the test. */
bool __list_add_valid(struct list_head *new, struct list_head *prev,
		      struct list_head *next)
{
	if (next->prev != prev || prev->next != next ||
	    new == prev || new == next) {
		mock_fail_at(CALLER, "list_add corruption: new %p prev %p next %p",
			     new, prev, next);
		return false;
	}
	return true;
}

bool __list_del_entry_valid(struct list_head *entry)
{
	struct list_head *prev = entry->prev, *next = entry->next;

	if (next == LIST_POISON1 || prev == LIST_POISON2 ||
	    prev->next != entry || next->prev != entry) {
		mock_fail_at(CALLER, "list_del corruption of entry %p", entry);
		return false;
	}
	return true;
}

void refcount_warn_saturate(refcount_t *r, enum refcount_saturation_type t)
{
	static const char *const what[] = {
		[REFCOUNT_ADD_NOT_ZERO_OVF] = "saturated (inc_not_zero)",
		[REFCOUNT_ADD_OVF] = "saturated (add)",
		[REFCOUNT_ADD_UAF] = "addition on 0: use after free",
		[REFCOUNT_SUB_UAF] = "underflow: use after free",
		[REFCOUNT_DEC_LEAK] = "decrement hit 0: leak",
	};

	refcount_set(r, REFCOUNT_SATURATED);
	mock_fail_at(CALLER, "refcount_t %p: %s", r, what[t]);
}

/* ---------------------------------------------------------------------
 * Per-CPU data, CPUs, paravirt, bug table
 *
 * The %gs base of a user process is 0, so %gs:var is var itself: this is
 * CPU 0 and its per-CPU offset is 0.
 */
DEFINE_PER_CPU(int, __preempt_count) = PREEMPT_ENABLED;
DEFINE_PER_CPU_READ_MOSTLY(int, cpu_number);
unsigned long __per_cpu_offset[NR_CPUS];
unsigned int nr_cpu_ids = 1;
struct cpumask __cpu_possible_mask = { .bits = { 1 } };
struct cpumask __cpu_online_mask = { .bits = { 1 } };
struct cpumask __cpu_present_mask = { .bits = { 1 } };
struct cpumask __cpu_active_mask = { .bits = { 1 } };

/* Thunks in thunks.S. */
extern void mock_pv_save_fl(void);
extern void mock_pv_irq_disable(void);
extern void mock_pv_irq_enable(void);
extern void mock_pv_unexpected(void);

struct paravirt_patch_template pv_ops;

void mock_pv_unexpected_called(void *ret);
void mock_pv_unexpected_called(void *ret)
{
	mock_fatal_at(ret, "unexpected paravirt call");
}

static void __attribute__((constructor)) mock_init_pv_ops(void)
{
	void **op = (void **)&pv_ops;
	size_t i;

	/* Anything not mocked stops the test rather than jumping to NULL. */
	for (i = 0; i < sizeof(pv_ops) / sizeof(void *); i++)
		op[i] = mock_pv_unexpected;
	pv_ops.irq.save_fl.func = mock_pv_save_fl;
	pv_ops.irq.irq_disable.func = mock_pv_irq_disable;
	pv_ops.irq.irq_enable.func = mock_pv_irq_enable;
}

extern const struct bug_entry __start___bug_table[] __weak;
extern const struct bug_entry __stop___bug_table[] __weak;

int mock_bug_lookup(unsigned long addr, const char **file, int *line,
		    int *warning)
{
	const struct bug_entry *b;

	for (b = __start___bug_table; b < __stop___bug_table; b++) {
		if ((unsigned long)&b->bug_addr_disp + b->bug_addr_disp != addr)
			continue;
		*file = (const char *)&b->file_disp + b->file_disp;
		*line = b->line;
		*warning = !!(b->flags & BUGFLAG_WARNING);
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Per-test reset and checks
 */
void mock_reset(void)
{
	mock_kmalloc_errors = 0;
	mock_copy_from_user_errors = 0;
	mock_copy_to_user_errors = 0;
	mock_gup_errors = 0;
	mock_misc_register_errors = 0;
	mock_remap_errors = 0;
	mock_gup_max_pages = 0;
	mock_allocs = mock_live_allocs = 0;
	mock_pinned_pages = mock_dirtied_pages = 0;
	mock_wakeups = mock_schedules = mock_cond_rescheds = 0;
	mock_lock_acquires = 0;
	memset(wakeups_by_wq, 0, sizeof(wakeups_by_wq));
	mock_schedule_hook = NULL;
	mock_schedule_hook_arg = NULL;
	mock_clock_step = 0;
	jiffies_at_zero = 1000;
	set_time(NSEC_PER_SEC);
	mock_printk_clear();
	mock_remap_addr = NULL;
	if (!kworker)
		kworker = proc_alloc(0, false);
	snprintf(kworker->task.comm, sizeof(kworker->task.comm), "kworker");
	nr_procs = 0;
	mock_default_proc = mock_proc_new(1000);
	mock_set_current(mock_default_proc);
}

void mock_check_clean(void)
{
	char buf[256];
	int i;

	for (i = 0; i < nheld; i++)
		kt_fail(__FILE__, __LINE__, "lock %p still held, taken in %s",
			held[i].lock, mock_where(held[i].pc, buf, sizeof(buf)));
	if (!mock_irqs_enabled())
		kt_fail(__FILE__, __LINE__, "interrupts left disabled");
	if (preempt_count())
		kt_fail(__FILE__, __LINE__, "preempt_count left at %#x",
			preempt_count());
	if (mock_work_queued())
		kt_fail(__FILE__, __LINE__, "%d work items left queued",
			mock_work_queued());
	if (ntasklets)
		kt_fail(__FILE__, __LINE__, "%d tasklets left scheduled",
			ntasklets);
	if (ntimers)
		kt_fail(__FILE__, __LINE__, "%d hrtimers left armed", ntimers);
	if (mock_pinned_pages)
		kt_fail(__FILE__, __LINE__, "%ld pages left pinned",
			mock_pinned_pages);
	if (mock_miscdev)
		kt_fail(__FILE__, __LINE__, "misc device left registered");
	for (i = 0; i < ARRAY_SIZE(dentries); i++)
		if (dentries[i].used)
			kt_fail(__FILE__, __LINE__, "debugfs entry %s left",
				dentries[i].name);
	if (printk_errors)
		kt_fail(__FILE__, __LINE__, "kernel error message(s):\n%s",
			mock_printk_buf);
	blocks_report_and_forget(true);
	procs_check_and_free(true);
	mock_abandon();
}

/* Forgets everything without checking: the module may still point at it. */
void mock_abandon(void)
{
	struct mock_work *w;

	nheld = 0;
	mock_irq_flags = X86_EFLAGS_IF;
	this_cpu_write(__preempt_count, PREEMPT_ENABLED);
	while ((w = work_take(NULL, NULL)))
		free(w);
	ntasklets = 0;
	ntimers = 0;
	mock_miscdev = NULL;
	memset(dentries, 0, sizeof(dentries));
	blocks_report_and_forget(false);
	procs_check_and_free(false);
}
