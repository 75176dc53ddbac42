// SPDX-License-Identifier: GPL-2.0
/* tests/kcore/mock_lock.c: locks and atomic context (see mock.c). */
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/rcupdate.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

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

bool mock_in_atomic(void)
{
	return preempt_count() || !mock_irqs_enabled();
}

/* Sleeping in atomic context is a bug the kernel would at best warn about. */
void mock_might_sleep(void *pc, const char *what)
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

void __mutex_init(struct mutex *lock, const char *name,
		  struct lock_class_key *key)
{
	atomic_long_set(&lock->owner, 0);
}

static void mutex_acquire_(struct mutex *lock, void *pc)
{
	mock_might_sleep(pc, "mutex_lock()");
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
	mock_might_sleep(CALLER, "down_read()");
	held_add(sem, MOCK_HELD_READ, CALLER);
	atomic_long_inc(&sem->count);
}

int down_read_killable(struct rw_semaphore *sem)
{
	mock_might_sleep(CALLER, "down_read_killable()");
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
	mock_might_sleep(CALLER, "down_write()");
	held_add(sem, MOCK_HELD_WRITE, CALLER);
	atomic_long_set(&sem->count, 1);
}

void up_write(struct rw_semaphore *sem)
{
	held_del(sem, CALLER);
	atomic_long_set(&sem->count, 0);
}

bool mock_lock_is_held(const void *lock)
{
	return held_find(lock) >= 0;
}

/* After a work item or tasklet: it must leave the context as it found it. */
void mock_check_context(const char *who, void *fn)
{
	char buf[256];

	char lbuf[256] = "";

	if (nheld)
		mock_where(held[nheld - 1].pc, lbuf, sizeof(lbuf));
	if (nheld || !mock_irqs_enabled() || preempt_count())
		kt_fail(who, 0,
			"%s returned with %d locks held (the last taken in %s), irqs %s, preempt_count %#x",
			mock_where(fn, buf, sizeof(buf)), nheld, lbuf,
			mock_irqs_enabled() ? "on" : "off", preempt_count());
}

void mock_lock_check(void)
{
	char buf[256];
	int i;

	for (i = 0; i < nheld; i++)
		mock_fail_after("lock %p still held, taken in %s",
				held[i].lock,
				mock_where(held[i].pc, buf, sizeof(buf)));
	if (!mock_irqs_enabled())
		mock_fail_after("interrupts left disabled");
	if (preempt_count())
		mock_fail_after("preempt_count left at %#x", preempt_count());
}

void mock_lock_forget(void)
{
	nheld = 0;
	mock_irq_flags = X86_EFLAGS_IF;
	this_cpu_write(__preempt_count, PREEMPT_ENABLED);
}

/* ---------------------------------------------------------------------
 * RCU: one thread, so a grace period ends as soon as no read-side
 * critical section is open; call_rcu() callbacks run then (at once when
 * called outside one). Sleeping inside a read section fails the test.
 */
static int rcu_depth;
static struct rcu_head *rcu_pending;

static void mock_rcu_run(void)
{
	struct rcu_head *h;

	while ((h = rcu_pending)) {
		rcu_pending = h->next;
		h->func(h);
	}
}

void __rcu_read_lock(void)
{
	rcu_depth++;
}

void __rcu_read_unlock(void)
{
	if (rcu_depth <= 0)
		mock_fail_at(__builtin_return_address(0), "rcu_read_unlock() without rcu_read_lock()");
	if (!--rcu_depth)
		mock_rcu_run();
}

void call_rcu(struct rcu_head *head, rcu_callback_t func)
{
	head->func = func;
	head->next = rcu_pending;
	rcu_pending = head;
	if (!rcu_depth)
		mock_rcu_run();
}

bool mock_rcu_reading(void)
{
	return rcu_depth > 0;
}

/* No reader can be open across a sleep: the grace period is over. */
void synchronize_rcu(void)
{
	mock_might_sleep(CALLER, "synchronize_rcu()");
	if (rcu_depth)
		mock_fail_at(CALLER, "synchronize_rcu() inside rcu_read_lock()");
	mock_rcu_run();
}

void rcu_barrier(void)
{
	mock_might_sleep(CALLER, "rcu_barrier()");
	mock_rcu_run();
}
