// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/mock_sched.c: processes and current, sleeping and
 * wake-ups, time and hrtimers (see mock.c).
 */
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/clock.h>
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/user_namespace.h>
#include <linux/wait.h>
#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/cpumask.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

/* ---------------------------------------------------------------------
 * Processes
 */
DEFINE_PER_CPU(struct task_struct *, current_task);
struct mock_proc *mock_default_proc;
static LIST_HEAD(procs);
static LIST_HEAD(dead_procs);	/* of aborted tests: reachable, never freed */
struct mock_proc *mock_kworker;
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
	for (int r = 0; r < RLIM_NLIMITS; r++)
		p->sig.rlim[r].rlim_cur = p->sig.rlim[r].rlim_max = RLIM_INFINITY;
	p->task.signal = &p->sig;
	/* may run anywhere unless a test narrows it */
	cpumask_setall(&p->task.cpus_mask);
	p->task.cpus_ptr = &p->task.cpus_mask;
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

/* Credentials: one user namespace, groups by fsgid only. */
struct user_namespace init_user_ns;

kgid_t make_kgid(struct user_namespace *ns, gid_t gid)
{
	return KGIDT_INIT(gid);
}

int in_group_p(kgid_t grp)
{
	return gid_eq(current_fsgid(), grp);
}

bool capable(int cap)
{
	return container_of(current, struct mock_proc, task)->caps &
	       BIT_ULL(cap);
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
			mock_fail_after("mm of %s: mm_count %d, not 1 (mmgrab/mmdrop unbalanced)",
					p->task.comm,
					atomic_read(&p->mm->mm_count));
		if (check && atomic_read(&p->mm->mm_users) != !p->exited)
			mock_fail_after("mm of %s: mm_users %d, not %d (mmget/mmput unbalanced)",
					p->task.comm,
					atomic_read(&p->mm->mm_users),
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
	mock_might_sleep(CALLER, "cond_resched()");
	return 0;
}

int __SCT__might_resched(void)
{
	mock_might_sleep(CALLER, "might_sleep()");
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
	mock_work_timers();
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

void mock_sched_reset(void)
{
	memset(wakeups_by_wq, 0, sizeof(wakeups_by_wq));
	mock_schedule_hook = NULL;
	mock_schedule_hook_arg = NULL;
	mock_clock_step = 0;
	jiffies_at_zero = 1000;
	set_time(NSEC_PER_SEC);
	if (!mock_kworker)
		mock_kworker = proc_alloc(0, false);
	snprintf(mock_kworker->task.comm, sizeof(mock_kworker->task.comm),
		 "kworker");
	mock_kworker->task.flags |= PF_WQ_WORKER | PF_KTHREAD;	/* as a real kworker */
	mock_kworker->caps = ~0ULL;	/* kernel threads have every capability */
	nr_procs = 0;
	mock_default_proc = mock_proc_new(1000);
	mock_set_current(mock_default_proc);
}

void mock_sched_check(void)
{
	if (ntimers)
		mock_fail_after("%d hrtimers left armed", ntimers);
	procs_check_and_free(true);
}

void mock_sched_forget(void)
{
	ntimers = 0;
	procs_check_and_free(false);
}
