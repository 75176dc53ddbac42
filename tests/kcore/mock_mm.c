// SPDX-License-Identifier: GPL-2.0
/* tests/kcore/mock_mm.c: user memory seen from the kernel (see mock.c). */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/err.h>
#include <linux/mman.h>
#include <linux/mmap_lock.h>
#include <linux/tracepoint-defs.h>
#include <linux/kthread.h>
#include <asm/fpu/api.h>
#include <linux/mmu_notifier.h>
#include <linux/memcontrol.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

/* ---------------------------------------------------------------------
 * User copies
 *
 * User pointers are the test's own pointers; the low MOCK_USER_MIN bytes,
 * anything beyond a 47-bit address space and pages not mapped in the test
 * process fault.
 */
bool mock_uaddr_bad(unsigned long a, unsigned long n)
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
	mock_might_sleep(CALLER, "copy_from_user()");
	if (mock_check_error(&mock_copy_from_user_errors) ||
	    mock_uaddr_bad((unsigned long)from, n)) {
		memset(to, 0, n);	/* as the kernel does */
		return n;
	}
	memcpy(to, (const void __force *)from, n);
	return 0;
}

unsigned long _copy_to_user(void __user *to, const void *from,
			    unsigned long n)
{
	mock_might_sleep(CALLER, "copy_to_user()");
	if (mock_check_error(&mock_copy_to_user_errors) ||
	    mock_uaddr_bad((unsigned long)to, n))
		return n;
	memcpy((void __force *)to, from, n);
	return 0;
}

/* Called from the __put_user_N thunks (thunks.S). */
long mock_put_user(void *ptr, unsigned long val, int size, void *caller);
long mock_put_user(void *ptr, unsigned long val, int size, void *caller)
{
	mock_might_sleep(caller, "put_user()");
	if (mock_check_error(&mock_copy_to_user_errors) ||
	    mock_uaddr_bad((unsigned long)ptr, size))
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

	mock_might_sleep(caller, "get_user()");
	if (mock_check_error(&mock_copy_from_user_errors) ||
	    mock_uaddr_bad((unsigned long)ptr, size))
		r.err = -EFAULT;
	else
		memcpy(&r.val, ptr, size);
	return r;
}

/* check_copy_size(): a copy larger than the kernel object it fills. */
void __copy_overflow(int size, unsigned long count)
{
	mock_fail_at(CALLER, "copy of %lu bytes into an object of %d",
		     count, size);
}

void *memdup_user(const void __user *src, size_t len)
{
	void *p = mock_alloc(len, GFP_USER | __GFP_NOWARN, MOCK_KMALLOC,
			     CALLER);

	if (!p)
		return ERR_PTR(-ENOMEM);
	if (_copy_from_user(p, src, len)) {
		mock_free(p, KFREE_KINDS, "kfree", CALLER);
		return ERR_PTR(-EFAULT);
	}
	return p;
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
	mock_might_sleep(CALLER, "mmput()");
	if (atomic_dec_return(&mm->mm_users) < 0)
		mock_fail_at(CALLER, "mmput() of mm %p without a user", mm);
}

long pin_user_pages_remote(struct mm_struct *mm, unsigned long start,
			   unsigned long nr_pages, unsigned int gup_flags,
			   struct page **pages, struct vm_area_struct **vmas,
			   int *locked)
{
	unsigned long i, n = nr_pages;

	mock_might_sleep(CALLER, "pin_user_pages_remote()");
	if (atomic_read(&mm->mm_users) <= 0)
		mock_fail_at(CALLER, "pin_user_pages_remote() on mm %p without mmget()",
			     mm);
	if (!mock_lock_is_held(&mm->mmap_lock))
		mock_fail_at(CALLER, "pin_user_pages_remote() without the mmap lock");
	if (gup_flags & FOLL_GET)
		mock_fail_at(CALLER, "pin_user_pages_remote() with FOLL_GET");
	if (mock_check_error(&mock_gup_errors))
		return mock_gup_err;
	if (mock_gup_max_pages && n > mock_gup_max_pages)
		n = mock_gup_max_pages;
	start &= PAGE_MASK;
	for (i = 0; i < n; i++) {
		if (mock_uaddr_bad(start + i * PAGE_SIZE, PAGE_SIZE))
			break;
		pages[i] = mock_page_of(start + i * PAGE_SIZE);
		if (vmas)
			vmas[i] = NULL;
	}
	mock_pinned_pages += i;
	return i ? i : -EFAULT;
}

/*
 * The process's own pages, as coll_local.c pins them: current->mm must be
 * the process's (the ioctl's task, or a kernel thread after
 * kthread_use_mm()); the same errors and page limit as the remote pin.
 */
int pin_user_pages_fast(unsigned long start, int nr_pages,
			unsigned int gup_flags, struct page **pages)
{
	int i, n = nr_pages;

	mock_might_sleep(CALLER, "pin_user_pages_fast()");
	if (!current->mm)
		mock_fail_at(CALLER, "pin_user_pages_fast() by a task without an mm");
	if (gup_flags & FOLL_GET)
		mock_fail_at(CALLER, "pin_user_pages_fast() with FOLL_GET");
	if (mock_check_error(&mock_gup_errors))
		return mock_gup_err;
	if (mock_gup_max_pages && n > mock_gup_max_pages)
		n = mock_gup_max_pages;
	start &= PAGE_MASK;
	for (i = 0; i < n; i++) {
		if (mock_uaddr_bad(start + i * PAGE_SIZE, PAGE_SIZE))
			break;
		pages[i] = mock_page_of(start + i * PAGE_SIZE);
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
	mock_might_sleep(CALLER, "unpin_user_pages_dirty_lock()");
	mock_unpin(pages, npages, CALLER);
	if (make_dirty)
		mock_dirtied_pages += npages;
}

/* kprog_ib's READ target pages (ib_rndv.c) */
int set_page_dirty_lock(struct page *page)
{
	mock_might_sleep(CALLER, "set_page_dirty_lock()");
	mock_dirtied_pages++;
	return 1;
}

/*
 * The pin cache's notifiers (ib_pcache.c): no mapping ever changes under
 * the unit tests, so a notifier is recorded as inserted and its sequence
 * never moves (mmu_interval_read_retry() sees no invalidation).
 */
long mock_interval_notifiers;

int mmu_interval_notifier_insert(struct mmu_interval_notifier *sub, struct mm_struct *mm,
				 unsigned long start, unsigned long length,
				 const struct mmu_interval_notifier_ops *ops)
{
	mock_might_sleep(CALLER, "mmu_interval_notifier_insert()");
	sub->mm = mm;
	sub->ops = ops;
	sub->invalidate_seq = 0;
	mock_interval_notifiers++;
	return 0;
}

void mmu_interval_notifier_remove(struct mmu_interval_notifier *sub)
{
	mock_might_sleep(CALLER, "mmu_interval_notifier_remove()");
	if (--mock_interval_notifiers < 0)
		mock_fail_at(CALLER, "more interval notifiers removed than inserted");
}

unsigned long mmu_interval_read_begin(struct mmu_interval_notifier *sub)
{
	return sub->invalidate_seq;
}

void *mock_remap_addr;

int remap_vmalloc_range(struct vm_area_struct *vma, void *addr,
			unsigned long pgoff)
{
	size_t size = mock_vmalloc_user_size(addr);

	if (mock_check_error(&mock_remap_errors))
		return -EAGAIN;
	if (!size) {
		/* The kernel refuses areas without VM_USERMAP. */
		mock_fail_at(CALLER, "remap_vmalloc_range() of %p, not from vmalloc_user()",
			     addr);
		return -EINVAL;
	}
	if ((pgoff << PAGE_SHIFT) + vma->vm_end - vma->vm_start >
	    PAGE_ALIGN(size))
		return -EINVAL;
	mock_remap_addr = addr;
	return 0;
}

int kprog_vmem_mmap(struct vm_area_struct *vma, void *mem,
		    unsigned long bytes)
{
	size_t size = mock_vmalloc_user_size(mem);

	if (mock_check_error(&mock_remap_errors))
		return -EAGAIN;
	if (!size) {
		mock_fail_at(CALLER, "kprog_vmem_mmap() of %p, not from kprog_vmem_alloc()",
			     mem);
		return -EINVAL;
	}
	if (bytes > size || vma->vm_end - vma->vm_start > PAGE_ALIGN(bytes))
		return -EINVAL;
	mock_remap_addr = mem;
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

void *mock_huge_map(u64 len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == (void *)-1L ? NULL : p;
}

void mock_huge_unmap(void *p, u64 len)
{
	munmap(p, len);
}

static int mock_fpu_depth;
static struct mm_struct *mock_used_mm;

static void mock_memcg_check(void);

void mock_mm_check(void)
{
	mock_memcg_check();
	if (mock_used_mm || mock_fpu_depth)
		mock_fail_at(NULL, "an mm still in use by a kernel thread, or an FPU section open");
	if (mock_pinned_pages)
		mock_fail_after("%ld pages left pinned", mock_pinned_pages);
}

/* ---------------------------------------------------------------------
 * Memory cgroups: one per address space, whose references are counted
 * (css_put() is the kernel's inline: the reference is an atomic-mode
 * percpu_ref). mock_memcg_of() names a process's; the check after each
 * test fails on a reference left.
 */
DEFINE_PER_CPU(struct mem_cgroup *, int_active_memcg);

#define MOCK_MEMCGS	16
static struct mock_memcg {
	struct mem_cgroup memcg;
	struct percpu_ref_data data;
	struct mm_struct *mm;
} mock_memcgs[MOCK_MEMCGS];

struct mem_cgroup *mock_memcg_of(struct mm_struct *mm)
{
	struct mock_memcg *m;
	int i;

	for (i = 0; i < MOCK_MEMCGS; i++) {
		m = &mock_memcgs[i];
		if (m->mm == mm)
			return &m->memcg;
		if (!m->mm) {
			m->mm = mm;
			atomic_long_set(&m->data.count, 1);
			m->memcg.css.refcnt.data = &m->data;
			m->memcg.css.refcnt.percpu_count_ptr = __PERCPU_REF_ATOMIC;
			return &m->memcg;
		}
	}
	kt_fatal(__FILE__, __LINE__, "too many memory cgroups");
	return NULL;
}

struct mem_cgroup *get_mem_cgroup_from_mm(struct mm_struct *mm)
{
	struct mem_cgroup *memcg = mock_memcg_of(mm);

	atomic_long_inc(&memcg->css.refcnt.data->count);
	return memcg;
}

static void mock_memcg_check(void)
{
	int i;

	for (i = 0; i < MOCK_MEMCGS && mock_memcgs[i].mm; i++)
		if (atomic_long_read(&mock_memcgs[i].data.count) != 1)
			mock_fail_after("%ld memory cgroup reference(s) left",
					atomic_long_read(&mock_memcgs[i].data.count) - 1);
	mock_memcg_forget();
}

void mock_memcg_forget(void)
{
	memset(mock_memcgs, 0, sizeof(mock_memcgs));
}

/* ---------------------------------------------------------------------
 * A kernel thread working on a process's address space, and the FPU
 *
 * kthread_use_mm() makes the current kernel thread's user copies reach
 * @mm (here: the test's memory, as for every process); the use must end
 * before the thread does anything else. kernel_fpu_begin() disables
 * preemption as the kernel's does, so a user copy (which may fault and
 * sleep) or a nested section inside it fails the test.
 */
void kthread_use_mm(struct mm_struct *mm)
{
	if (current->mm || mock_used_mm)
		mock_fail_at(CALLER, "kthread_use_mm() by a task with an mm");
	if (atomic_read(&mm->mm_users) <= 0)
		mock_fail_at(CALLER, "kthread_use_mm() of mm %p without a user", mm);
	mock_used_mm = mm;
	current->mm = mm;
	current->active_mm = mm;
}

void kthread_unuse_mm(struct mm_struct *mm)
{
	if (mock_used_mm != mm || current->mm != mm)
		mock_fail_at(CALLER, "kthread_unuse_mm() of mm %p not in use", mm);
	mock_used_mm = NULL;
	current->mm = NULL;
	current->active_mm = NULL;
}

void kernel_fpu_begin_mask(unsigned int kfpu_mask)
{
	if (mock_fpu_depth++)
		mock_fail_at(CALLER, "nested kernel_fpu_begin()");
	__preempt_count_add(1);
}

void kernel_fpu_end(void)
{
	if (--mock_fpu_depth)
		mock_fail_at(CALLER, "kernel_fpu_end() without kernel_fpu_begin()");
	__preempt_count_sub(1);
}
