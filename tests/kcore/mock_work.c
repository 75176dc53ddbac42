// SPDX-License-Identifier: GPL-2.0
/* tests/kcore/mock_work.c: workqueues and tasklets (see mock.c). */
#include <linux/workqueue.h>
#include <linux/interrupt.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

/* ---------------------------------------------------------------------
 * Work and tasklets
 */
struct workqueue_struct {
	char name[32];
	unsigned int flags;
};

static struct workqueue_struct mock_system_wq = { .name = "events" };
struct workqueue_struct *system_wq = &mock_system_wq;
static struct workqueue_struct mock_system_unbound_wq = { .name = "events_unbound" };
struct workqueue_struct *system_unbound_wq = &mock_system_unbound_wq;

struct mock_work {
	struct work_struct *work;
	struct workqueue_struct *wq;
	int cpu;
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

static void work_enqueue(int cpu, struct workqueue_struct *wq,
			 struct work_struct *work)
{
	struct mock_work *w;

	w = malloc(sizeof(*w));
	if (!w)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	w->work = work;
	w->wq = wq;
	w->cpu = cpu;
	w->next = NULL;
	*work_tail = w;
	work_tail = &w->next;
}

void (*mock_queue_busy_hook)(struct work_struct *work);

bool queue_work_on(int cpu, struct workqueue_struct *wq,
		   struct work_struct *work)
{
	void (*hook)(struct work_struct *work) = mock_queue_busy_hook;

	if (test_and_set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work))) {
		if (hook) {
			mock_queue_busy_hook = NULL;
			hook(work);
		}
		return false;
	}
	work_enqueue(cpu, wq, work);
	return true;
}

/*
 * Delayed work: pending until jiffies reach its time (mock_time_advance(),
 * msleep()), then queued as any item. The timer itself is not used.
 */
struct mock_delayed {
	struct delayed_work *dwork;
	struct workqueue_struct *wq;
	int cpu;
	unsigned long when;
	struct mock_delayed *next;
};

static struct mock_delayed *delayed_head;

void init_timer_key(struct timer_list *timer,
		    void (*func)(struct timer_list *), unsigned int flags,
		    const char *name, struct lock_class_key *key)
{
	memset(timer, 0, sizeof(*timer));
	timer->function = func;
	timer->flags = flags;
}

void delayed_work_timer_fn(struct timer_list *t)
{
	mock_fatal_at(CALLER, "a delayed work's timer fired: the mock never arms it");
}

bool queue_delayed_work_on(int cpu, struct workqueue_struct *wq,
			   struct delayed_work *dwork, unsigned long delay)
{
	struct mock_delayed *d;

	if (test_and_set_bit(WORK_STRUCT_PENDING_BIT,
			     work_data_bits(&dwork->work)))
		return false;
	if (!delay) {
		work_enqueue(cpu, wq, &dwork->work);
		return true;
	}
	d = malloc(sizeof(*d));
	if (!d)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	d->dwork = dwork;
	d->wq = wq;
	d->cpu = cpu;
	d->when = jiffies + delay;
	d->next = delayed_head;
	delayed_head = d;
	return true;
}

/* Queues the delayed items whose time came (earliest first). */
void mock_work_timers(void)
{
	struct mock_delayed **pp, **first, *d;

	for (;;) {
		first = NULL;
		for (pp = &delayed_head; (d = *pp); pp = &d->next)
			if (time_after_eq(jiffies, d->when) &&
			    (!first || time_before(d->when, (*first)->when)))
				first = pp;
		if (!first)
			return;
		d = *first;
		*first = d->next;
		work_enqueue(d->cpu, d->wq, &d->dwork->work);
		free(d);
	}
}

int mock_work_delayed(void)
{
	struct mock_delayed *d;
	int n = 0;

	for (d = delayed_head; d; d = d->next)
		n++;
	return n;
}

static bool delayed_take(struct delayed_work *dwork)
{
	struct mock_delayed **pp, *d;

	for (pp = &delayed_head; (d = *pp); pp = &d->next) {
		if (d->dwork == dwork) {
			*pp = d->next;
			free(d);
			return true;
		}
	}
	return false;
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

/* Runs an item as a kernel worker would: no user mm, process context. */
static void work_run(struct mock_work *w)
{
	struct task_struct *prev = current;
	struct work_struct *work = w->work;
	work_func_t func = work->func;	/* the item may free itself */

	free(w);
	clear_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work));
	mock_set_current(mock_kworker);
	func(work);
	this_cpu_write(current_task, prev);
	mock_check_context("work item", (void *)func + 1);
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

int mock_work_cpu(void)
{
	if (!work_head)
		kt_fatal(__FILE__, __LINE__, "no work queued");
	return work_head->cpu;
}

const char *mock_work_wq_name(void)
{
	if (!work_head)
		kt_fatal(__FILE__, __LINE__, "no work queued");
	return work_head->wq->name;
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

	mock_might_sleep(CALLER, "flush_workqueue()");
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

	mock_might_sleep(CALLER, "flush_work()");
	if (!w)
		return false;
	work_run(w);
	return true;
}

bool cancel_work_sync(struct work_struct *work)
{
	struct mock_work *w = work_take(work_is, work);

	mock_might_sleep(CALLER, "cancel_work_sync()");
	if (!w)
		return false;
	free(w);
	clear_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work));
	return true;
}

bool cancel_delayed_work_sync(struct delayed_work *dwork)
{
	mock_might_sleep(CALLER, "cancel_delayed_work_sync()");
	if (delayed_take(dwork)) {
		clear_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(&dwork->work));
		return true;
	}
	return cancel_work_sync(&dwork->work);
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

	mock_might_sleep(CALLER, "tasklet_kill()");
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
		mock_check_context("tasklet", fn + 1);
		n++;
	}
	return n;
}

void mock_softirq_enter(void)
{
	preempt_count_add(SOFTIRQ_OFFSET);
}

void mock_softirq_exit(void)
{
	preempt_count_sub(SOFTIRQ_OFFSET);
}

void mock_work_check(void)
{
	if (mock_work_queued())
		mock_fail_after("%d work items left queued",
				mock_work_queued());
	if (ntasklets)
		mock_fail_after("%d tasklets left scheduled", ntasklets);
	if (delayed_head)
		mock_fail_after("%d delayed work items left pending",
				mock_work_delayed());
}

void mock_work_forget(void)
{
	struct mock_work *w;

	struct mock_delayed *d;

	mock_queue_busy_hook = NULL;
	while ((w = work_take(NULL, NULL)))
		free(w);
	while ((d = delayed_head)) {
		delayed_head = d->next;
		free(d);
	}
	ntasklets = 0;
}
