// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/mock.c: the kernel, as far as the kmod files need it, for a
 * single-threaded user-space test process. Every definition in the
 * mock_*.c files is built against the kernel headers, so it has the
 * kernel's own prototype.
 *
 *   mock.c        failure reports and masks, kernel library helpers,
 *                 per-CPU data, paravirt ops, the bug table, and the
 *                 per-test reset and checks of all the others
 *   mock_lock.c   spinlocks, mutexes, rwsems; atomic context
 *   mock_mem.c    kmalloc, kvmalloc, vmalloc families
 *   mock_mm.c     user copies, mm references, pinned pages
 *   mock_sched.c  processes and current, sleeping and wake-ups, time
 *   mock_work.c   workqueues and tasklets
 *   mock_dev.c    printk, misc device, debugfs, seq_file, module glue
 */
#include <linux/bug.h>
#include <linux/llist.h>
#include <linux/list.h>
#include <linux/poison.h>
#include <linux/refcount.h>
#include <linux/cpumask.h>
#include <linux/sched/isolation.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <asm/paravirt.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

/* ---------------------------------------------------------------------
 * Failure reports
 */

/* Paths as seen from the repository root. */
static const char *short_path(const char *f)
{
	const char *p;

	if ((p = strstr(f, "tests/kcore/")) || (p = strstr(f, "kmod/")))
		return p;
	return f;
}

/*
 * The source location of @pc: of the innermost inlined frame that is not
 * in a kernel header (kmalloc() or spin_lock() are inline there; the
 * line worth reporting is the kmod or test line that used them).
 */
static void locate(void *pc, char *func, size_t fsize, char *file,
		   size_t size, int *line)
{
	char buf[2048], *frame, *next, *f, *l;

	/* One "func|file|line" per frame, innermost first, each ending in 0. */
	memset(buf, 0, sizeof(buf));
	__sanitizer_symbolize_pc((char *)pc - 1, "%f|%s|%l", buf,
				 sizeof(buf) - 1);
	*line = 0;
	snprintf(file, size, "?");
	snprintf(func, fsize, "?");
	for (frame = buf; *frame; frame = next) {
		next = frame + strlen(frame) + 1;
		f = strchr(frame, '|');
		l = f ? strchr(f + 1, '|') : NULL;
		if (!l)
			continue;
		*f++ = 0;
		*l++ = 0;
		snprintf(func, fsize, "%s", frame);
		snprintf(file, size, "%s", short_path(f));
		*line = 0;
		while (*l >= '0' && *l <= '9')
			*line = *line * 10 + *l++ - '0';
		if (!strstr(f, "/include/"))
			break;
	}
}

/* "function file:line" of a return address, for messages. */
const char *mock_where(void *pc, char *buf, size_t size)
{
	char func[128], file[256];
	int line;

	locate(pc, func, sizeof(func), file, sizeof(file), &line);
	snprintf(buf, size, "%s() at %s:%d", func, file, line);
	return buf;
}

/* A failed check, reported at the source line of @pc (the mock's caller). */
void mock_fail_at(void *pc, const char *fmt, ...)
{
	char func[128], file[256], msg[512];
	va_list ap;
	int line;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	locate(pc, func, sizeof(func), file, sizeof(file), &line);
	kt_fail(file, line, "%s", msg);
}

void mock_fatal_at(void *pc, const char *fmt, ...)
{
	char func[128], file[256], msg[512];
	va_list ap;
	int line;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	locate(pc, func, sizeof(func), file, sizeof(file), &line);
	kt_fatal(file, line, "%s", msg);
}

/* Consumes one bit of a failure-injection mask: true = fail this call. */
bool mock_check_error(u64 *mask)
{
	bool fail = *mask & 1;

	*mask >>= 1;
	return fail;
}

u64 mock_kmalloc_errors;
long mock_kmalloc_fail_nth;
u64 mock_copy_from_user_errors;
u64 mock_copy_to_user_errors;
u64 mock_gup_errors;
long mock_gup_err = -EFAULT;
u64 mock_misc_register_errors;
u64 mock_remap_errors;
unsigned long mock_gup_max_pages;

long mock_allocs, mock_live_allocs, mock_pinned_pages, mock_dirtied_pages;
long mock_wakeups, mock_schedules, mock_cond_rescheds, mock_lock_acquires;

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

unsigned long mock_housekeeping_cpus = ~0UL;

/* isolcpus= / nohz_full= as one mask for every type */
bool housekeeping_test_cpu(int cpu, enum hk_type type)
{
	return mock_housekeeping_cpus & BIT(cpu);
}

/* Makes @n CPUs possible and online, and the test run on @cpu. */
void mock_set_cpus(unsigned int n, int cpu)
{
	unsigned long mask = n >= BITS_PER_LONG ? ~0UL : (1UL << n) - 1;

	nr_cpu_ids = n;
	__cpu_possible_mask.bits[0] = mask;
	__cpu_online_mask.bits[0] = mask;
	__cpu_present_mask.bits[0] = mask;
	__cpu_active_mask.bits[0] = mask;
	this_cpu_write(cpu_number, cpu);
}

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
	mock_kmalloc_fail_nth = 0;
	mock_copy_from_user_errors = 0;
	mock_copy_to_user_errors = 0;
	mock_gup_errors = 0;
	mock_gup_err = -EFAULT;
	mock_misc_register_errors = 0;
	mock_remap_errors = 0;
	mock_gup_max_pages = 0;
	mock_alloc_hook = NULL;
	mock_allocs = mock_live_allocs = 0;
	mock_pinned_pages = mock_dirtied_pages = 0;
	mock_wakeups = mock_schedules = mock_cond_rescheds = 0;
	mock_lock_acquires = 0;
	mock_dev_reset();
	mock_lib_reset();
	mock_ib_reset();
	mock_sched_reset();
	mock_memcg_forget();
	mock_set_cpus(1, 0);
	mock_housekeeping_cpus = ~0UL;
}

void mock_check_clean(void)
{
	mock_ib_check();
	mock_lock_check();
	mock_work_check();
	mock_sched_check();
	mock_mm_check();
	mock_dev_check();
	mock_mem_check();
	mock_abandon();
}

/* Forgets everything without checking: the module may still point at it. */
void mock_abandon(void)
{
	mock_ib_forget();
	mock_lock_forget();
	mock_work_forget();
	mock_dev_forget();
	mock_mem_forget();
	mock_sched_forget();
}
