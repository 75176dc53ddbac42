/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/kcore/mock.h: what the tests can see and steer of the mocked
 * kernel (mock.c). See README for what is mocked and why.
 *
 * Failure injection: every mock_*_errors variable is a bit mask over the
 * coming calls of its functions; bit 0 is the next call, bit n the call n
 * calls later, and each call shifts the mask right by one. A set bit
 * makes that call fail the way the kernel function can fail.
 */
#ifndef KCORE_MOCK_H
#define KCORE_MOCK_H

#include <linux/types.h>
#include <linux/sched.h>
#include <linux/mm_types.h>
#include <linux/cred.h>
#include <linux/wait.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>

/*
 * Every allocation: kmalloc family, kvmalloc family, vmalloc family,
 * bitmap_zalloc(), alloc_workqueue(). A failed one returns NULL.
 */
extern u64 mock_kmalloc_errors;
/* The n-th allocation from now fails (beyond the masks' 64); 0: off. */
extern long mock_kmalloc_fail_nth;
/* _copy_from_user() and get_user(): nothing copied, -EFAULT. */
extern u64 mock_copy_from_user_errors;
/* _copy_to_user() and put_user(): nothing copied, -EFAULT. */
extern u64 mock_copy_to_user_errors;
/* pin_user_pages_remote() and pin_user_pages_fast(): mock_gup_err. */
extern u64 mock_gup_errors;
/* What a failing pin returns: -EFAULT unless a test says (-EINTR: killed). */
extern long mock_gup_err;
/* misc_register(): -EBUSY. */
extern u64 mock_misc_register_errors;
/* remap_vmalloc_range(): -EAGAIN. */
extern u64 mock_remap_errors;

/* pin_user_pages_remote() and _fast() pin at most this many pages a call (0: all). */
extern unsigned long mock_gup_max_pages;

/*
 * User addresses are plain pointers of the test process. The first
 * MOCK_USER_MIN bytes are never mapped: copies from or to there fault
 * and pages there cannot be pinned (MOCK_BAD_UADDR is such an address).
 */
#define MOCK_USER_MIN	0x10000UL
#define MOCK_BAD_UADDR	0x1000UL

/*
 * Called at the start of every allocation (failed ones too), e.g. to play
 * another thread that writes shared memory while the kernel allocates.
 */
extern void (*mock_alloc_hook)(void *arg);
extern void *mock_alloc_hook_arg;

/* Counters, zeroed before each test. */
extern long mock_allocs;		/* allocation calls, failed ones too */
extern long mock_live_allocs;		/* allocated and not yet freed */
extern long mock_pinned_pages;		/* pinned and not yet unpinned */
extern long mock_dirtied_pages;		/* unpinned as dirty */
extern long mock_wakeups;		/* __wake_up() calls */
extern long mock_schedules;		/* schedule() calls */
extern long mock_cond_rescheds;		/* cond_resched() calls */
extern long mock_lock_acquires;		/* spinlocks, mutexes, rwsems */
int mock_wakeups_of(struct wait_queue_head *wq);

/* Time: ktime_get() and local_clock() read mock_ktime (ns). */
extern ktime_t mock_ktime;
/* Added to mock_ktime by every ktime_get() and local_clock() (default 0). */
extern u64 mock_clock_step;
/* Moves time on, with jiffies, and fires the hrtimers that expire. */
void mock_time_advance(u64 ns);

/*
 * Kernel messages are captured, "<level>text" per line. A message at
 * KERN_ERR or worse that the test has not taken fails the test.
 */
extern char mock_printk_buf[];
/* True if a captured message contains @s; forgets all messages. */
bool mock_printk_take(const char *s);
void mock_printk_clear(void);

/*
 * Module references taken with try_module_get() (NULL modules are not
 * counted); all must be dropped by the end of a test. mock_module_going:
 * try_module_get() fails, as for a module being unloaded.
 */
extern int mock_module_refs;
extern bool mock_module_going;
/* Inside rcu_read_lock() now? */
bool mock_rcu_reading(void);

/*
 * Work queued with queue_work() (any workqueue, system_wq included) waits
 * until the test runs it, in FIFO order, in a kernel thread context
 * (current->mm is NULL). destroy_workqueue() and flush_work() run what
 * they wait for.
 */
int mock_run_work(void);		/* until none is queued; returns items run */
bool mock_run_work_one(void);		/* the oldest item, if any */
int mock_work_queued(void);
/* The CPU the oldest queued item was queued on (WORK_CPU_UNBOUND: any). */
int mock_work_cpu(void);
/* The name of the workqueue the oldest queued item was queued on. */
const char *mock_work_wq_name(void);
/*
 * Called (once: cleared first) when queue_work_on() finds the item pending
 * already, before it returns false: a test runs that item there, as another
 * CPU would have run it between the caller's check and what it does next.
 */
struct work_struct;
extern void (*mock_queue_busy_hook)(struct work_struct *work);
/* @n CPUs online, the test runs on @cpu (reset: one CPU, CPU 0). */
void mock_set_cpus(unsigned int n, int cpu);
/* Housekeeping CPUs (housekeeping_test_cpu()); every CPU unless narrowed. */
extern unsigned long mock_housekeeping_cpus;
int mock_run_tasklets(void);		/* in softirq context */
/* Code between these two runs as a softirq (in_task() is false). */
void mock_softirq_enter(void);
void mock_softirq_exit(void);

/*
 * Sleeping: a task that would sleep calls the test's hook first (which
 * may e.g. complete something and wake it); if it is still not woken,
 * the earliest hrtimer fires (time moves to its expiry); if there is
 * none, the test fails instead of hanging.
 */
extern void (*mock_schedule_hook)(void *arg);
extern void *mock_schedule_hook_arg;

/*
 * Processes: a task with its own mm and credentials. current starts as
 * mock_default_proc (euid 1000). Processes share the test's memory, so a
 * buffer of the test is a valid user buffer of any of them.
 */
struct mock_proc {
	struct list_head node;
	struct mm_struct *mm;		/* NULL for kernel threads */
	bool exited;			/* mock_proc_exit_mm() was called */
	u64 caps;			/* capable(): bit per capability */
	struct cred cred;
	struct signal_struct sig;	/* rlimits: all RLIM_INFINITY */
	struct task_struct task;	/* last: it ends in a variable part */
};

extern struct mock_proc *mock_default_proc;
struct mock_proc *mock_proc_new(uid_t euid);	/* freed after the test */
void mock_set_current(struct mock_proc *p);
/* The memory cgroup of @mm (get_mem_cgroup_from_mm() without a reference). */
struct mem_cgroup *mock_memcg_of(struct mm_struct *mm);
/* The process exits: its mm loses its last user (mmget_not_zero() fails). */
void mock_proc_exit_mm(struct mock_proc *p);
/* A signal is pending for @p (interruptible sleeps end with -ERESTARTSYS). */
void mock_signal(struct mock_proc *p);

/* The device registered with misc_register(), NULL if none. */
extern struct miscdevice *mock_miscdev;
/* The files created with debugfs_create_file(). */
const struct file_operations *mock_debugfs_fops(const char *name);
/* The whole text a seq_file-backed file reads as; free with mock_free_text(). */
char *mock_seq_read_all(const struct file_operations *fops);
void mock_free_text(char *s);

/* Remap of a ring: what remap_vmalloc_range() was last given. */
extern void *mock_remap_addr;

/* Lock state of the test's thread. */
int mock_locks_held(void);
bool mock_irqs_enabled(void);

/* The fixture (utils.c) calls these around every test. */
void mock_reset(void);
void mock_check_clean(void);
void mock_abandon(void);		/* after an aborted test */

/*
 * A mapping of @len bytes (several GiB if need be) that only takes memory
 * where it is written: messages above 4 GiB whose copies stop early.
 */
void *mock_huge_map(u64 len);
void mock_huge_unmap(void *p, u64 len);

/* Fake pages: the struct page that maps a user address, and back. */
struct page *mock_page_of(unsigned long uaddr);

#endif
