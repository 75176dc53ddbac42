// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of the test infrastructure itself: that the mocks catch what they
 * claim to catch, so that a passing kmod test means something.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/interrupt.h>
#include <linux/hrtimer.h>
#include <linux/refcount.h>
#include <linux/sched/clock.h>
#include <linux/xarray.h>
#include "ktest.h"

TEST_NO_MODULE(mock__warn_on_fails_the_test_and_execution_goes_on)
{
	volatile int x = 1;

	kt_catch_begin();
	WARN_ON(x == 1);
	WARN_ON_ONCE(x == 1);
	WARN_ON_ONCE(x == 1);	/* every time, not once */
	x = 2;
	EXPECT_EQ(kt_catch_end(), 3);
	EXPECT_EQ(x, 2);
}

TEST_NO_MODULE(mock__kmalloc_errors_fail_exactly_the_chosen_allocations)
{
	void *p[4];
	int i;

	mock_kmalloc_errors = 0x5;	/* the 1st and the 3rd */
	p[0] = kmalloc(10, GFP_KERNEL);
	p[1] = kzalloc(10, GFP_KERNEL);
	p[2] = kvmalloc(10, GFP_KERNEL);
	p[3] = vmalloc_user(10);
	EXPECT(!p[0]);
	EXPECT(p[1]);
	EXPECT(!p[2]);
	EXPECT(p[3]);
	EXPECT_EQ(mock_allocs, 4);
	EXPECT_EQ(mock_live_allocs, 2);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(((u8 *)p[1])[i], 0);
	kfree(p[1]);
	vfree(p[3]);
	EXPECT_EQ(mock_live_allocs, 0);
}

static int hook_calls;

static void count_hook(void *arg)
{
	hook_calls += *(int *)arg;
}

TEST_NO_MODULE(mock__xarray_keeps_entries_by_index_one_allocation_each)
{
	struct xarray xa;
	static int v[4];
	unsigned long idx;
	void *e;
	int one = 1, n = 0;

	xa_init(&xa);
	mock_alloc_hook = count_hook;
	mock_alloc_hook_arg = &one;
	EXPECT(!xa_err(xa_store(&xa, 7, &v[0], GFP_KERNEL)));
	EXPECT(!xa_err(xa_store(&xa, 2, &v[1], GFP_KERNEL)));
	EXPECT(!xa_err(xa_store(&xa, 9, &v[2], GFP_KERNEL)));
	EXPECT_EQ(hook_calls, 3);
	mock_alloc_hook = NULL;
	EXPECT(xa_store(&xa, 7, &v[3], GFP_KERNEL) == &v[0]);	/* replaced */
	EXPECT_EQ(mock_live_allocs, 3);
	mock_kmalloc_errors = 1;
	EXPECT_ERR(xa_err(xa_store(&xa, 4, &v[0], GFP_KERNEL)), -ENOMEM);
	EXPECT(xa_load(&xa, 2) == &v[1]);
	EXPECT(!xa_load(&xa, 4));
	xa_for_each(&xa, idx, e) {
		EXPECT_EQ(idx, n == 0 ? 2 : n == 1 ? 7 : 9);
		n++;
	}
	EXPECT_EQ(n, 3);
	EXPECT(xa_erase(&xa, 2) == &v[1]);
	EXPECT(!xa_erase(&xa, 2));
	EXPECT(xa_store(&xa, 9, NULL, GFP_KERNEL) == &v[2]);	/* erases */
	EXPECT(!xa_empty(&xa));
	xa_destroy(&xa);
	EXPECT(xa_empty(&xa));
	EXPECT_EQ(mock_live_allocs, 0);
}

TEST_NO_MODULE(mock__memory_not_asked_zeroed_is_poisoned)
{
	u8 *p = kmalloc(8, GFP_KERNEL);

	EXPECT_EQ(p[3], 0xa5);
	kfree(p);
}

TEST_NO_MODULE(mock__wrong_free_double_free_and_leak_are_failures)
{
	void *v = vmalloc(100), *k = kmalloc(8, GFP_KERNEL);

	kt_catch_begin();
	kfree(v);		/* vmalloc memory */
	vfree(k);		/* kmalloc memory */
	EXPECT_EQ(kt_catch_end(), 2);
	kvfree(v);
	kfree(k);
	kt_catch_begin();
	kfree(k);		/* twice */
	EXPECT_EQ(kt_catch_end(), 1);

	k = kmalloc(8, GFP_KERNEL);
	kt_catch_begin();
	mock_check_clean();	/* what the fixture does after each test */
	EXPECT_EQ(kt_catch_end(), 1);
	mock_reset();
}

TEST_NO_MODULE(mock__spin_lock_irqsave_disables_irqs_and_preemption)
{
	DEFINE_SPINLOCK(lock);
	unsigned long flags;

	EXPECT(preemptible());
	spin_lock_irqsave(&lock, flags);
	EXPECT(irqs_disabled());
	EXPECT(!preemptible());
	EXPECT(spin_is_locked(&lock));
	EXPECT_EQ(mock_locks_held(), 1);
	spin_unlock_irqrestore(&lock, flags);
	EXPECT(!irqs_disabled());
	EXPECT(preemptible());
	spin_lock(&lock);
	EXPECT(!irqs_disabled());
	EXPECT(!preemptible());
	spin_unlock(&lock);
	EXPECT_EQ(mock_locks_held(), 0);
}

TEST_NO_MODULE(mock__local_irq_save_goes_through_paravirt_mocks)
{
	unsigned long flags;

	local_irq_save(flags);
	EXPECT(irqs_disabled());
	EXPECT(!mock_irqs_enabled());
	local_irq_restore(flags);
	EXPECT(!irqs_disabled());
}

TEST_NO_MODULE(mock__lockdep_assert_held_is_checked)
{
	DEFINE_SPINLOCK(lock);
	DEFINE_MUTEX(m);

	spin_lock(&lock);
	lockdep_assert_held(&lock);
	spin_unlock(&lock);
	kt_catch_begin();
	lockdep_assert_held(&lock);
	lockdep_assert_held(&m);
	EXPECT_EQ(kt_catch_end(), 2);
	mutex_lock(&m);
	lockdep_assert_held(&m);
	EXPECT(mutex_is_locked(&m));
	mutex_unlock(&m);
}

TEST_NO_MODULE(mock__sleeping_under_a_spinlock_is_a_failure)
{
	DEFINE_SPINLOCK(lock);
	DEFINE_MUTEX(m);
	void *p;

	spin_lock(&lock);
	kt_catch_begin();
	p = kmalloc(8, GFP_KERNEL);
	might_sleep();
	cond_resched();
	mutex_lock(&m);
	EXPECT_EQ(kt_catch_end(), 4);
	mutex_unlock(&m);
	kfree(p);
	p = kmalloc(8, GFP_ATOMIC);	/* fine */
	spin_unlock(&lock);
	kfree(p);
}

TEST_NO_MODULE(mock__taking_a_held_lock_again_is_a_failure_not_a_hang)
{
	DEFINE_SPINLOCK(lock);

	EXPECT(spin_trylock(&lock));
	EXPECT(!spin_trylock(&lock));
	spin_unlock(&lock);
	kt_catch_begin();
	spin_unlock(&lock);	/* not held */
	EXPECT_EQ(kt_catch_end(), 1);
}

TEST_NO_MODULE(mock__user_copies_move_bytes_and_fault_where_told)
{
	char src[8] = "kprog", dst[8] = "";
	u32 v = 0, w = 0;

	EXPECT_EQ(copy_from_user(dst, (void __user *)src, 6), 0);
	EXPECT(!strcmp(dst, "kprog"));
	EXPECT_EQ(copy_to_user((void __user *)dst, "abc", 4), 0);
	EXPECT(!strcmp(dst, "abc"));
	EXPECT_EQ(copy_from_user(dst, (void __user *)MOCK_BAD_UADDR, 4), 4);
	EXPECT_EQ(dst[0], 0);	/* zero-filled, as the kernel does */
	mock_copy_from_user_errors = 2;
	EXPECT_EQ(copy_from_user(dst, (void __user *)src, 1), 0);
	EXPECT_EQ(copy_from_user(dst, (void __user *)src, 1), 1);
	EXPECT_EQ(copy_from_user(dst, (void __user *)src, 1), 0);

	EXPECT_OK(put_user(0x12345678U, (u32 __user *)&v));
	EXPECT_EQ(v, 0x12345678);
	EXPECT_OK(get_user(w, (u32 __user *)&v));
	EXPECT_EQ(w, 0x12345678);
	EXPECT_ERR(put_user(1U, (u32 __user *)MOCK_BAD_UADDR), -EFAULT);
	EXPECT_ERR(get_user(w, (u32 __user *)MOCK_BAD_UADDR), -EFAULT);
	mock_copy_to_user_errors = 1;
	EXPECT_ERR(put_user(2U, (u32 __user *)&v), -EFAULT);
	EXPECT_EQ(v, 0x12345678);
}

TEST_NO_MODULE(mock__pinned_pages_map_back_to_the_user_buffer)
{
	static char buf[3 * PAGE_SIZE] __aligned(PAGE_SIZE);
	struct mm_struct *mm = current->mm;
	struct page *pages[3];
	long n;

	buf[PAGE_SIZE + 5] = 'x';
	EXPECT(mmget_not_zero(mm));
	mmap_read_lock(mm);
	n = pin_user_pages_remote(mm, (unsigned long)buf, 3, FOLL_WRITE,
				  pages, NULL, NULL);
	mmap_read_unlock(mm);
	EXPECT_EQ(n, 3);
	EXPECT_EQ(mock_pinned_pages, 3);
	EXPECT(kmap_local_page(pages[1]) == buf + PAGE_SIZE);
	EXPECT_EQ(((char *)kmap_local_page(pages[1]))[5], 'x');
	unpin_user_pages_dirty_lock(pages, 3, true);
	EXPECT_EQ(mock_pinned_pages, 0);
	EXPECT_EQ(mock_dirtied_pages, 3);

	mock_gup_max_pages = 2;
	mmap_read_lock(mm);
	EXPECT_EQ(pin_user_pages_remote(mm, (unsigned long)buf, 3, 0, pages,
					NULL, NULL), 2);
	unpin_user_pages(pages, 2);
	mock_gup_errors = 1;
	EXPECT_ERR(pin_user_pages_remote(mm, (unsigned long)buf, 3, 0, pages,
					 NULL, NULL), -EFAULT);
	EXPECT_ERR(pin_user_pages_remote(mm, MOCK_BAD_UADDR, 1, 0, pages,
					 NULL, NULL), -EFAULT);
	mmap_read_unlock(mm);
	mmput(mm);

	kt_catch_begin();	/* without the mmap lock */
	n = pin_user_pages_remote(mm, (unsigned long)buf, 1, 0, pages, NULL,
				  NULL);
	EXPECT_EQ(kt_catch_end(), 1);
	unpin_user_pages(pages, n);
}

static int work_runs;
static struct mm_struct *work_mm = (void *)1;

static void work_fn(struct work_struct *w)
{
	work_runs++;
	work_mm = current->mm;
}

TEST_NO_MODULE(mock__queued_work_runs_only_when_the_test_runs_it)
{
	struct workqueue_struct *wq = alloc_workqueue("t", 0, 0);
	DECLARE_WORK(w, work_fn);

	work_runs = 0;
	EXPECT(queue_work(wq, &w));
	EXPECT(!queue_work(wq, &w));	/* already pending */
	EXPECT_EQ(work_runs, 0);
	EXPECT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_EQ(work_runs, 1);
	EXPECT(!work_mm);		/* a kernel thread */
	EXPECT(current->mm);		/* and back */
	EXPECT(queue_work(wq, &w));
	destroy_workqueue(wq);		/* drains */
	EXPECT_EQ(work_runs, 2);
	EXPECT(schedule_work(&w));
	EXPECT(cancel_work_sync(&w));
	EXPECT_EQ(work_runs, 2);
}

static int tasklet_runs;
static bool tasklet_in_softirq;

static void tasklet_fn(struct tasklet_struct *t)
{
	tasklet_runs++;
	tasklet_in_softirq = in_softirq();
}

TEST_NO_MODULE(mock__tasklets_run_in_softirq_context_when_the_test_says)
{
	struct tasklet_struct t;

	tasklet_setup(&t, tasklet_fn);
	tasklet_runs = 0;
	tasklet_schedule(&t);
	tasklet_schedule(&t);		/* once only */
	EXPECT_EQ(tasklet_runs, 0);
	EXPECT_EQ(mock_run_tasklets(), 1);
	EXPECT_EQ(tasklet_runs, 1);
	EXPECT(tasklet_in_softirq);
	EXPECT(!in_softirq());
	tasklet_schedule(&t);
	tasklet_kill(&t);
	EXPECT_EQ(mock_run_tasklets(), 0);
}

static DECLARE_WAIT_QUEUE_HEAD(wq);
static bool cond;

static void wake_hook(void *arg)
{
	cond = true;
	wake_up(&wq);
}

TEST_NO_MODULE(mock__a_wait_is_ended_by_the_hook_or_by_its_timer)
{
	ktime_t t0 = mock_ktime;

	cond = false;
	mock_schedule_hook = wake_hook;
	EXPECT_OK(wait_event_interruptible(wq, cond));
	EXPECT(cond);
	EXPECT_EQ(mock_wakeups_of(&wq), 1);
	EXPECT_EQ(mock_schedules, 1);

	cond = false;
	mock_schedule_hook = NULL;
	EXPECT_ERR(wait_event_interruptible_hrtimeout(wq, cond, 5000), -ETIME);
	EXPECT_EQ(mock_ktime - t0, 5000);
	EXPECT(!waitqueue_active(&wq));

	mock_signal(mock_default_proc);
	EXPECT_ERR(wait_event_interruptible(wq, cond), -ERESTARTSYS);
	clear_tsk_thread_flag(current, TIF_SIGPENDING);
}

/* A sleep that nothing ends (no wake-up, timer or signal) would hang. */
TEST_MUST_ABORT(mock__a_wait_nothing_ends_aborts_the_test_instead_of_hanging)
{
	cond = false;
	wait_event(wq, cond);
}

/* The runner closes what an aborted test left open; the next test is clean. */
TEST_MUST_ABORT(mock__an_aborted_test_is_cleaned_up_for_the_next_one)
{
	static char buf[1 << 16];
	struct kt_ep *a, *b;

	ASSERT_OK(kt_load());
	kt_pair(&a, &b);
	EXPECT_OK(kt_send(a, 1, 0, buf, sizeof(buf), 1, 0, NULL));
	EXPECT_OK(kt_recv(b, 0, 0, buf, sizeof(buf), 2, 0, NULL));
	kt_fatal(__FILE__, __LINE__, "abort with a transfer queued");
}

TEST(mock__the_test_after_an_aborted_one_starts_clean)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	EXPECT_EQ(mock_work_queued(), 0);
}

TEST_MUST_ABORT(mock__bug_aborts_the_test)
{
	volatile int x = 1;

	BUG_ON(x);
}

TEST_NO_MODULE(mock__time_and_jiffies_move_only_when_the_test_moves_them)
{
	unsigned long j = jiffies;
	ktime_t t = ktime_get();

	EXPECT_EQ(ktime_get(), t);
	mock_time_advance(NSEC_PER_SEC);
	EXPECT_EQ(ktime_get() - t, NSEC_PER_SEC);
	EXPECT_EQ(jiffies - j, HZ);
	mock_clock_step = 10;
	EXPECT_EQ(local_clock() + 10, local_clock());
	EXPECT_EQ(ktime_add_safe(KTIME_MAX, 1), ktime_set(KTIME_SEC_MAX, 0));
}

TEST_NO_MODULE(mock__printk_is_captured_and_errors_must_be_taken)
{
	pr_info("hello %d\n", 42);
	EXPECT(strstr(mock_printk_buf, "<6>hello 42"));
	EXPECT_PRINTK("hello 42");
	EXPECT(!mock_printk_buf[0]);
	pr_err("bad thing\n");
	kt_catch_begin();
	mock_check_clean();
	EXPECT_EQ(kt_catch_end(), 1);
	mock_reset();
}

TEST_NO_MODULE(mock__list_corruption_and_refcount_underflow_are_failures)
{
	LIST_HEAD(head);
	struct list_head a;
	refcount_t r = REFCOUNT_INIT(1);

	list_add(&a, &head);
	list_del(&a);
	kt_catch_begin();
	list_del(&a);		/* poisoned */
	EXPECT_EQ(kt_catch_end(), 1);

	EXPECT(refcount_dec_and_test(&r));
	kt_catch_begin();
	refcount_dec(&r);
	EXPECT_EQ(kt_catch_end(), 1);
}
