// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_bench: the interrupt source of the interrupt-cost benchmark (seed
 * 001, Hoefler & Lumsdaine: stolen cycles per interrupt, with the
 * interrupt count taken from the module's own counters instead of
 * estimated), and those counters.
 *
 * One hrtimer per selected CPU, started on that CPU in pinned mode, fires
 * hz times a second. Each fire counts as a hard interrupt run and then,
 * by mode: nothing more (HARDIRQ); schedules the CPU's tasklet (TASKLET);
 * queues the CPU's work item on a bound high-priority workqueue (WORK);
 * wakes the threads sleeping in KPROG_BENCH_IOC_IRQ_WAIT for that CPU
 * (WAKE). The busy load runs in the mode's own context: the hard
 * interrupt for HARDIRQ and WAKE, the tasklet, or the work item.
 *
 * A fire whose tasklet or work item is still pending does not queue a
 * second run; it is counted as coalesced. Stopping waits until every
 * queued run has happened, so once the source is idle, per CPU,
 * runs + coalesced = hard interrupt runs, exactly.
 *
 * Each timer stops itself at the end time: a timer whose next expiry is
 * at or past it is not restarted, and one that expires there anyway does
 * nothing, so a CPU never counts more than hz * duration fires. A delayed
 * work item then does the rest of the stop (waiting for tasklets and work,
 * waking IRQ_WAIT sleepers). IRQ_STOP and module unload stop at once.
 *
 * CPU hotplug: CPUs must be online at start (checked under
 * cpus_read_lock()). If one goes offline while the source runs, the kernel
 * migrates its timer to a surviving CPU, which then fires for it and
 * counts the fires as its own; IRQ_WAIT on the offline CPU fails.
 *
 * On PREEMPT_RT the kernel runs non-HARD hrtimers in softirq context; the
 * timers here are not HARD so that waking threads stays legal there.
 */
#include <linux/module.h>
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/mutex.h>
#include <linux/cpu.h>
#include <linux/smp.h>
#include <linux/ktime.h>
#include <linux/netlink.h>
#include "bench.h"

DEFINE_PER_CPU(struct kprog_bench_stats, kprog_bench_stats);

const int kprog_bench_stat_attrs[KPROG_BENCH_NR_STATS] = {
	[KPROG_BENCH_STAT_HARDIRQ_RUNS] = KPROG_BENCH_A_STAT_HARDIRQ_RUNS,
	[KPROG_BENCH_STAT_HARDIRQ_NS] = KPROG_BENCH_A_STAT_HARDIRQ_NS,
	[KPROG_BENCH_STAT_TASKLET_RUNS] = KPROG_BENCH_A_STAT_TASKLET_RUNS,
	[KPROG_BENCH_STAT_TASKLET_NS] = KPROG_BENCH_A_STAT_TASKLET_NS,
	[KPROG_BENCH_STAT_WORK_ITEMS] = KPROG_BENCH_A_STAT_WORK_ITEMS,
	[KPROG_BENCH_STAT_WORK_NS] = KPROG_BENCH_A_STAT_WORK_NS,
	[KPROG_BENCH_STAT_WAKEUPS] = KPROG_BENCH_A_STAT_WAKEUPS,
	[KPROG_BENCH_STAT_COALESCED] = KPROG_BENCH_A_STAT_COALESCED,
};

/**
 * kprog_bench_stats_read() - snapshot of one CPU's counters
 * @cpu: a possible CPU
 * @out: filled
 *
 * Each counter is read once; they are not read atomically as a set.
 */
void kprog_bench_stats_read(unsigned int cpu, struct kprog_bench_stats *out)
{
	const struct kprog_bench_stats *s = per_cpu_ptr(&kprog_bench_stats, cpu);
	int i;

	for (i = 0; i < KPROG_BENCH_NR_STATS; i++)
		out->v[i] = READ_ONCE(s->v[i]);
}

/**
 * kprog_bench_stats_reset() - zero every counter of every possible CPU
 *
 * Best effort against concurrent increments. Any context.
 */
void kprog_bench_stats_reset(void)
{
	unsigned int cpu;
	int i;

	for_each_possible_cpu(cpu) {
		struct kprog_bench_stats *s = per_cpu_ptr(&kprog_bench_stats,
							  cpu);

		for (i = 0; i < KPROG_BENCH_NR_STATS; i++)
			WRITE_ONCE(s->v[i], 0);
	}
}

/*
 * 20 kHz: above the 8192 Hz of the seed's real-time clock, so its
 * experiment and a sweep past it fit; each fire is a hard interrupt on
 * every selected CPU, and under emulation much more than this leaves a
 * guest little time for anything else.
 */
unsigned int kprog_bench_max_hz = 20000;
module_param_named(irq_max_hz, kprog_bench_max_hz, uint, 0444);
MODULE_PARM_DESC(irq_max_hz,
		 "Highest interrupt source frequency per CPU in Hz, at most 1000000 (default 20000)");

unsigned int kprog_bench_max_duration_ms = 60000;
module_param_named(irq_max_duration_ms, kprog_bench_max_duration_ms, uint, 0444);
MODULE_PARM_DESC(irq_max_duration_ms,
		 "Longest interrupt source run in ms, at most 3600000 (default 60000)");

unsigned int kprog_bench_max_load_ns = 100000;
module_param_named(irq_max_load_ns, kprog_bench_max_load_ns, uint, 0444);
MODULE_PARM_DESC(irq_max_load_ns,
		 "Longest busy load per interrupt source fire in ns, also at most 1/4 of the period; at most 1000000 (default 100000)");

/* The per-CPU part; timer, tasklet and work never move to another pcpu. */
struct kbench_cpu {
	struct hrtimer timer;
	struct tasklet_struct tasklet;
	struct work_struct work;
	wait_queue_head_t wq;		/* IRQ_WAIT sleepers */
	u64 seq;			/* fires since the start */
	unsigned long pending;		/* bit 0: tasklet queued, not run */
};

static DEFINE_PER_CPU(struct kbench_cpu, kbench_cpus);

/*
 * Start, stop and the configuration. The configuration only changes while
 * no timer is armed; timers, tasklets and work read it without the lock.
 */
static DEFINE_MUTEX(kbench_mutex);
static struct kbench_state {
	bool running;		/* READ_ONCE outside the mutex */
	u32 gen;		/* bumped by every stop, for IRQ_WAIT */
	u32 hz;
	u32 mode;
	u32 load_ns;
	ktime_t period;
	ktime_t end;
	struct cpumask cpus;
} kbench;

static struct workqueue_struct *kbench_wq;
static void kbench_stop_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(kbench_stop_work, kbench_stop_fn);

/* Busy work standing in for a handler's real work. */
static void kbench_load(u64 start)
{
	u32 load = kbench.load_ns;

	while (kprog_bench_clock() - start < load)
		cpu_relax();
}

static enum hrtimer_restart kbench_fire(struct hrtimer *timer)
{
	struct kbench_cpu *pc = container_of(timer, struct kbench_cpu, timer);
	u64 start = kprog_bench_clock();

	/* Expired at the end (late arming or a long period): not a fire. */
	if (hrtimer_get_expires(timer) >= kbench.end)
		return HRTIMER_NORESTART;

	WRITE_ONCE(pc->seq, pc->seq + 1);
	switch (kbench.mode) {
	case KPROG_BENCH_IRQ_TASKLET:
		if (test_and_set_bit(0, &pc->pending))
			kprog_bench_stat_add(KPROG_BENCH_STAT_COALESCED, 1);
		else
			tasklet_schedule(&pc->tasklet);
		break;
	case KPROG_BENCH_IRQ_WORK:
		if (!queue_work_on(smp_processor_id(), kbench_wq, &pc->work))
			kprog_bench_stat_add(KPROG_BENCH_STAT_COALESCED, 1);
		break;
	case KPROG_BENCH_IRQ_WAKE:
		kbench_load(start);
		if (wq_has_sleeper(&pc->wq)) {
			wake_up(&pc->wq);
			kprog_bench_stat_add(KPROG_BENCH_STAT_WAKEUPS, 1);
		}
		break;
	default:
		kbench_load(start);
		break;
	}
	kprog_bench_stat_run(KPROG_BENCH_STAT_HARDIRQ_RUNS, start);

	hrtimer_forward_now(timer, kbench.period);
	if (hrtimer_get_expires(timer) >= kbench.end)
		return HRTIMER_NORESTART;
	return HRTIMER_RESTART;
}

static void kbench_tasklet_fn(struct tasklet_struct *t)
{
	struct kbench_cpu *pc = from_tasklet(pc, t, tasklet);
	u64 start = kprog_bench_clock();

	/*
	 * From here a fire queues a new run again. The tasklet core cleared
	 * its own scheduled bit before calling us, so that run will happen.
	 */
	clear_bit(0, &pc->pending);
	kbench_load(start);
	kprog_bench_stat_run(KPROG_BENCH_STAT_TASKLET_RUNS, start);
}

static void kbench_work_fn(struct work_struct *work)
{
	u64 start = kprog_bench_clock();

	kbench_load(start);
	kprog_bench_stat_run(KPROG_BENCH_STAT_WORK_ITEMS, start);
}

/* On the target CPU, from the IPI: a pinned timer stays on this CPU. */
static void kbench_arm(void *arg)
{
	struct kbench_cpu *pc = arg;

	hrtimer_start(&pc->timer, kbench.period, HRTIMER_MODE_REL_PINNED);
}

/* Mutex held. Every timer off, every queued run done, sleepers told. */
static void kbench_stop_locked(void)
{
	struct kbench_cpu *pc;
	unsigned int cpu;

	lockdep_assert_held(&kbench_mutex);
	if (!kbench.running)
		return;
	for_each_cpu(cpu, &kbench.cpus)
		hrtimer_cancel(&per_cpu_ptr(&kbench_cpus, cpu)->timer);
	/* No fire can queue anything now; let what is queued run. */
	for_each_cpu(cpu, &kbench.cpus) {
		pc = per_cpu_ptr(&kbench_cpus, cpu);
		if (kbench.mode == KPROG_BENCH_IRQ_TASKLET)
			tasklet_kill(&pc->tasklet);
		else if (kbench.mode == KPROG_BENCH_IRQ_WORK)
			flush_work(&pc->work);
	}
	WRITE_ONCE(kbench.gen, kbench.gen + 1);
	WRITE_ONCE(kbench.running, false);
	for_each_cpu(cpu, &kbench.cpus)
		wake_up_all(&per_cpu_ptr(&kbench_cpus, cpu)->wq);
	/* If it is running already, it finds the source idle. */
	cancel_delayed_work(&kbench_stop_work);
}

static void kbench_stop_fn(struct work_struct *work)
{
	ktime_t left;

	mutex_lock(&kbench_mutex);
	if (kbench.running) {
		/* Jiffies and ktime do not agree to the nanosecond. */
		left = ktime_sub(kbench.end, ktime_get());
		if (left > 0)
			mod_delayed_work(system_wq, &kbench_stop_work,
					 nsecs_to_jiffies(left) + 1);
		else
			kbench_stop_locked();
	}
	mutex_unlock(&kbench_mutex);
}

/**
 * kprog_bench_irq_start() - KPROG_BENCH_CMD_IRQ_START
 * @cfg: the request; every field checked by the caller against the
 *	module parameters, except that its CPUs are online
 * @extack: for the error message
 *
 * Return: 0, -EBUSY if already running, -EINVAL if a CPU is offline (or
 * none is online in @cfg->cpus).
 */
int kprog_bench_irq_start(const struct kprog_bench_irq_config *cfg,
			  struct netlink_ext_ack *extack)
{
	struct kbench_cpu *pc;
	unsigned int cpu;
	int err = 0;

	mutex_lock(&kbench_mutex);
	if (kbench.running) {
		NL_SET_ERR_MSG(extack, "interrupt source already running");
		err = -EBUSY;
		goto out_unlock;
	}
	cpus_read_lock();
	if (cfg->all_online) {
		cpumask_copy(&kbench.cpus, cpu_online_mask);
	} else if (cpumask_empty(cfg->cpus)) {
		NL_SET_ERR_MSG(extack, "KPROG_BENCH_A_IRQ_CPUS names no CPU");
		err = -EINVAL;
		goto out_cpus;
	} else if (!cpumask_subset(cfg->cpus, cpu_online_mask)) {
		NL_SET_ERR_MSG(extack, "a CPU in KPROG_BENCH_A_IRQ_CPUS is offline");
		err = -EINVAL;
		goto out_cpus;
	} else {
		cpumask_copy(&kbench.cpus, cfg->cpus);
	}
	kbench.hz = cfg->hz;
	kbench.mode = cfg->mode;
	kbench.load_ns = cfg->load_ns;
	kbench.period = ns_to_ktime(div_u64(NSEC_PER_SEC, cfg->hz));
	kbench.end = ktime_add_ms(ktime_get(), cfg->duration_ms);
	for_each_cpu(cpu, &kbench.cpus) {
		pc = per_cpu_ptr(&kbench_cpus, cpu);
		pc->seq = 0;
		pc->pending = 0;
	}
	WRITE_ONCE(kbench.running, true);
	/* Online CPUs stay online under cpus_read_lock(): this cannot fail. */
	for_each_cpu(cpu, &kbench.cpus) {
		pc = per_cpu_ptr(&kbench_cpus, cpu);
		WARN_ON_ONCE(smp_call_function_single(cpu, kbench_arm, pc,
						      1));
	}
	mod_delayed_work(system_wq, &kbench_stop_work,
			 msecs_to_jiffies(cfg->duration_ms) + 1);
out_cpus:
	cpus_read_unlock();
out_unlock:
	mutex_unlock(&kbench_mutex);
	return err;
}

/**
 * kprog_bench_irq_stop() - KPROG_BENCH_CMD_IRQ_STOP; nothing happens when idle
 *
 * Returns when no timer is armed and every queued tasklet and work item
 * has run. Process context.
 */
void kprog_bench_irq_stop(void)
{
	mutex_lock(&kbench_mutex);
	kbench_stop_locked();
	mutex_unlock(&kbench_mutex);
}

/**
 * kprog_bench_irq_status() - KPROG_BENCH_CMD_IRQ_STATUS
 * @cfg: filled while running (@duration_ms and @all_online excepted);
 *	@cfg->cpus must be allocated
 *
 * Return: whether the source is running.
 */
bool kprog_bench_irq_status(struct kprog_bench_irq_config *cfg)
{
	bool running;

	mutex_lock(&kbench_mutex);
	running = kbench.running;
	if (running) {
		cfg->hz = kbench.hz;
		cfg->mode = kbench.mode;
		cfg->load_ns = kbench.load_ns;
		cpumask_copy(cfg->cpus, &kbench.cpus);
	}
	mutex_unlock(&kbench_mutex);
	return running;
}

/* A fire on the CPU since @seq was read, or a stop since @gen. */
static bool kbench_woken(struct kbench_cpu *pc, u64 seq, u32 gen)
{
	return READ_ONCE(pc->seq) != seq || READ_ONCE(kbench.gen) != gen;
}

/**
 * kprog_bench_irq_wait() - KPROG_BENCH_IOC_IRQ_WAIT
 * @w: the request; @w->seq is filled
 *
 * Return: 0, -EINVAL (impossible or offline CPU), -ENODEV (source not
 * running in wake mode on that CPU, or stopped meanwhile), -ETIMEDOUT or
 * -EINTR.
 */
int kprog_bench_irq_wait(struct kprog_bench_irq_wait *w)
{
	struct kbench_cpu *pc;
	ktime_t tmo;
	u64 seq;
	u32 gen;
	long ret;

	if (w->__pad || w->cpu >= nr_cpu_ids || !cpu_online(w->cpu))
		return -EINVAL;
	pc = per_cpu_ptr(&kbench_cpus, w->cpu);

	if (mutex_lock_interruptible(&kbench_mutex))
		return -EINTR;
	if (!kbench.running || kbench.mode != KPROG_BENCH_IRQ_WAKE ||
	    !cpumask_test_cpu(w->cpu, &kbench.cpus)) {
		mutex_unlock(&kbench_mutex);
		return -ENODEV;
	}
	gen = kbench.gen;
	seq = READ_ONCE(pc->seq);
	mutex_unlock(&kbench_mutex);

	tmo = ns_to_ktime(w->timeout_ns);
	if (w->timeout_ns < 0)
		ret = wait_event_interruptible(pc->wq,
					       kbench_woken(pc, seq, gen));
	else if (w->timeout_ns == 0)
		ret = kbench_woken(pc, seq, gen) ? 0 : -ETIME;
	else
		ret = wait_event_interruptible_hrtimeout(pc->wq,
							 kbench_woken(pc, seq, gen),
							 tmo);

	/* A stop (and maybe a new start) came first: seq is another run's. */
	if (READ_ONCE(kbench.gen) != gen)
		return -ENODEV;
	if (ret == -ETIME)
		return -ETIMEDOUT;
	if (ret)
		return -EINTR;
	w->seq = READ_ONCE(pc->seq);
	return 0;
}

/**
 * kprog_bench_irq_init() - check the parameters, set up every possible CPU
 *
 * Return: 0, -EINVAL for a bad parameter or -ENOMEM.
 */
int kprog_bench_irq_init(void)
{
	struct kbench_cpu *pc;
	unsigned int cpu;

	if (!kprog_bench_max_hz || kprog_bench_max_hz > KPROG_BENCH_HZ_LIMIT) {
		pr_err("kprog_bench: irq_max_hz must be in [1, %u]\n",
		       KPROG_BENCH_HZ_LIMIT);
		return -EINVAL;
	}
	if (!kprog_bench_max_duration_ms ||
	    kprog_bench_max_duration_ms > 3600000) {
		pr_err("kprog_bench: irq_max_duration_ms must be in [1, 3600000]\n");
		return -EINVAL;
	}
	if (kprog_bench_max_load_ns > NSEC_PER_MSEC) {
		pr_err("kprog_bench: irq_max_load_ns must be <= 1000000\n");
		return -EINVAL;
	}
	/*
	 * Bound (per-CPU) so that a CPU's work runs on that CPU; high
	 * priority so that it runs soon after the interrupt, like a
	 * progression thread woken by it, rather than after whatever the
	 * CPU is computing.
	 */
	kbench_wq = alloc_workqueue("kprog_bench", WQ_HIGHPRI, 0);
	if (!kbench_wq)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		pc = per_cpu_ptr(&kbench_cpus, cpu);
		hrtimer_init(&pc->timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED);
		pc->timer.function = kbench_fire;
		tasklet_setup(&pc->tasklet, kbench_tasklet_fn);
		INIT_WORK(&pc->work, kbench_work_fn);
		init_waitqueue_head(&pc->wq);
	}
	return 0;
}

/**
 * kprog_bench_irq_exit() - stop the source for good
 *
 * Called at unload after the netlink family is gone (no new start) and
 * with no file open (no IRQ_WAIT sleeper).
 */
void kprog_bench_irq_exit(void)
{
	kprog_bench_irq_stop();
	cancel_delayed_work_sync(&kbench_stop_work);
	destroy_workqueue(kbench_wq);
}
