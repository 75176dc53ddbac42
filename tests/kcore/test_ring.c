// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/ring.c and kmod/core/cq.c: the completion ring shared with user space,
 * its per-source area, the overflow list, flushing, KPROG_IOC_WAIT (with
 * events), poll and mmap. User space is played by the test: it reads and
 * writes the ring through its mapping.
 */
#include <linux/mm.h>
#include <linux/poll.h>
#include "kprog.h"
#include "op.h"
#include "stats.h"
#include "ktest.h"

/* A joined endpoint with a ring of @entries slots. */
static struct kt_ep *ring_ep(u32 entries)
{
	struct kt_ep *e = kt_open();

	kprog_ring_entries = entries;
	if (kt_join(e, kt_new_key(), 0, 1))
		kt_fatal(__FILE__, __LINE__, "join");
	return e;
}

/* Completes @n new operations of @e, req_ids @first, @first + 1, ... */
static void complete_ops(struct kt_ep *e, u64 first, int n)
{
	int i;

	for (i = 0; i < n; i++)
		kt_op_complete(kt_op_new(e, first + i, false), 100 + i, 0);
}

static bool holds(struct kt_ep *e, u64 req_id)
{
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&e->ep->olock, flags);
	ret = kprog_cq_holds(e->ep, req_id);
	spin_unlock_irqrestore(&e->ep->olock, flags);
	return ret;
}

static u64 stat(enum kprog_stat s)
{
	struct kprog_stats v;

	kprog_stats_read(0, &v);
	return v.v[s];
}

TEST(ring__alloc_sizes_the_ring_from_ring_entries)
{
	struct kt_ep *e = ring_ep(4);

	EXPECT_EQ(e->join.ring_entries, 4);
	EXPECT_EQ(e->join.ring_bytes, PAGE_SIZE);
	EXPECT_EQ(e->ring->entries, 4);
	EXPECT_EQ(e->ring->head, 0);
	EXPECT_EQ(e->ring->tail, 0);
	EXPECT(e->ring == e->ep->ring.mem);
	EXPECT_EQ(e->ring->nr_src, 1);
	EXPECT_EQ(e->ring->src_offset, 256);	/* 128 + 4 slots, aligned */
	EXPECT_EQ(kt_src(e, 0)->held, 0);
}

TEST(ring__per_source_area_follows_the_slots_and_grows_the_mapping)
{
	struct kprog_ring r = {};

	ASSERT_OK(kprog_ring_alloc(&r, 2, 1000, false));
	EXPECT_EQ(r.hdr->src_offset, 192);
	EXPECT_EQ(r.hdr->nr_src, 1000);
	/* then the per-destination send counts, no times */
	EXPECT_EQ(r.hdr->peer_offset, 192 + 1000 * 8);
	EXPECT_EQ(r.hdr->times_offset, 0);
	EXPECT(!r.times);
	EXPECT_EQ(r.bytes, PAGE_ALIGN(192 + 1000 * 8 + 1000 * 16));
	EXPECT((void *)r.src == r.mem + 192);
	r.peers[999].bytes = 1;		/* ASan: inside the allocation */
	r.src[999].held = 1;		/* ASan: inside the allocation */
	kprog_ring_free(&r);
	EXPECT(!r.mem && !r.hdr && !r.cqes);
}

TEST(ring__alloc_failure_is_enomem_and_free_without_a_ring_is_harmless)
{
	struct kprog_ring r = {};

	mock_kmalloc_errors = 1;
	EXPECT_ERR(kprog_ring_alloc(&r, 4, 1, false), -ENOMEM);
	EXPECT(!r.mem);
	kprog_ring_free(&r);
}

TEST(ring__held_counts_of_a_source_outside_the_job_warn_and_change_nothing)
{
	struct kt_ep *e = ring_ep(4);

	kt_catch_begin();
	kprog_ring_held(&e->ep->ring, 1, 1);
	kprog_ring_src_flags(&e->ep->ring, 1, KPROG_SRC_LEFT);
	EXPECT_EQ(kt_catch_end(), 2);
	EXPECT_EQ(e->ring->unexp, 0);
}

TEST(ring__completions_go_to_the_ring_in_order_and_free_their_ops)
{
	struct kt_ep *e = ring_ep(4);
	long live = mock_live_allocs;

	complete_ops(e, 1, 3);
	EXPECT_EQ(kt_ring_count(e), 3);
	EXPECT_EQ(kt_nr_ops(e), 0);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_CQE(e, 1, 100, 0);
	EXPECT_CQE(e, 2, 101, 0);
	EXPECT_CQE(e, 3, 102, 0);
	EXPECT_EQ(e->ring->overflow, 0);
}

TEST(ring__full_ring_goes_to_overflow_and_flush_moves_it_back)
{
	struct kt_ep *e = ring_ep(4);
	u64 events = stat(KPROG_STAT_EVENTS);
	int i;

	complete_ops(e, 1, 6);
	EXPECT_EQ(kt_ring_count(e), 4);
	EXPECT_EQ(e->ring->overflow, 1);
	EXPECT_EQ(kt_nr_ops(e), 2);	/* overflowed ops keep their slot */
	EXPECT_EQ(stat(KPROG_STAT_EVENTS) - events, 6);
	for (i = 1; i <= 4; i++)
		EXPECT_CQE(e, i, 99 + i, 0);
	EXPECT_OK(kt_wait(e, 0));
	EXPECT_EQ(e->ring->overflow, 0);
	EXPECT_EQ(kt_nr_ops(e), 0);
	EXPECT_CQE(e, 5, 104, 0);
	EXPECT_CQE(e, 6, 105, 0);
	EXPECT(!kt_pop(e, &(struct kprog_cqe){}));
}

TEST(ring__overflow_keeps_the_order_when_room_appears)
{
	struct kt_ep *e = ring_ep(4);
	int i;

	complete_ops(e, 1, 5);		/* 5 overflows */
	EXPECT_CQE(e, 1, 100, 0);	/* room for one */
	complete_ops(e, 6, 1);		/* still behind 5 */
	EXPECT_EQ(kt_ring_count(e), 3);
	EXPECT(holds(e, 6));
	EXPECT_OK(kt_wait(e, 0));	/* room for one: 5 moves, 6 stays */
	EXPECT_EQ(e->ring->overflow, 1);
	EXPECT_EQ(kt_nr_ops(e), 1);
	for (i = 2; i <= 5; i++)
		EXPECT_CQE(e, i, 99 + i, 0);
	EXPECT_OK(kt_wait(e, 0));
	EXPECT_EQ(e->ring->overflow, 0);
	EXPECT_CQE(e, 6, 100, 0);
}

TEST(ring__flush_wakes_waiters_only_when_it_moved_something)
{
	struct kt_ep *e = ring_ep(2);

	complete_ops(e, 1, 3);
	kprog_cq_flush(e->ep);	/* nothing fits */
	EXPECT_EQ(mock_wakeups_of(&e->ep->wq), 0);
	EXPECT_CQE(e, 1, 100, 0);
	kprog_cq_flush(e->ep);
	EXPECT_EQ(mock_wakeups_of(&e->ep->wq), 1);
	kprog_cq_flush(e->ep);	/* overflow empty: returns at once */
	EXPECT_EQ(mock_wakeups_of(&e->ep->wq), 1);
}

TEST(ring__indices_wrap_at_2_to_the_32)
{
	struct kt_ep *e = ring_ep(4);
	int i;

	e->ep->ring.tail = 0xfffffffeU;
	e->ring->tail = 0xfffffffeU;
	e->ring->head = 0xfffffffeU;
	complete_ops(e, 1, 5);
	EXPECT_EQ(e->ring->tail, 2);
	EXPECT_EQ(kt_ring_count(e), 4);
	EXPECT_EQ(e->ring->overflow, 1);
	for (i = 1; i <= 4; i++)
		EXPECT_CQE(e, i, 99 + i, 0);
	EXPECT_OK(kt_wait(e, 0));
	EXPECT_CQE(e, 5, 104, 0);
}

TEST(ring__completion_of_a_closed_endpoint_is_dropped_with_its_slot)
{
	struct kt_ep *e = ring_ep(4);
	struct kprog_op *op = kt_op_new(e, 1, false);
	long live = mock_live_allocs;

	e->ep->closed = true;
	kt_op_complete(op, 0, 0);
	EXPECT_EQ(kt_ring_count(e), 0);
	EXPECT_EQ(kt_nr_ops(e), 0);
	EXPECT_EQ(mock_live_allocs, live - 1);
}

TEST(ring__an_op_completes_once)
{
	struct kt_ep *e = ring_ep(4);
	struct kprog_op *op = kt_op_new(e, 1, false);

	refcount_inc(&op->ref);
	kt_op_complete(op, 0, 0);
	kt_op_complete(op, 0, 0);
	EXPECT_EQ(kt_ring_count(e), 1);
	kprog_op_put(op);
}

TEST(ring__holds_sees_unconsumed_slots_and_overflow_only)
{
	struct kt_ep *e = ring_ep(2);

	complete_ops(e, 1, 3);
	EXPECT(holds(e, 1));
	EXPECT(holds(e, 2));
	EXPECT(holds(e, 3));		/* overflow */
	EXPECT(!holds(e, 4));
	EXPECT_CQE(e, 1, 100, 0);
	EXPECT(!holds(e, 1));
	EXPECT(holds(e, 2));
}

TEST(ring__garbage_head_reads_as_full_and_breaks_nothing)
{
	struct kt_ep *e = ring_ep(4);
	u32 tail = e->ring->tail;

	/* Ahead of tail, and far behind it. */
	e->ring->head = tail + 1000;
	complete_ops(e, 1, 1);
	EXPECT_EQ(e->ring->overflow, 1);
	EXPECT(holds(e, 1));
	EXPECT(!holds(e, 2));		/* scans at most 4 slots */
	EXPECT_OK(kt_wait(e, 0));
	EXPECT_OK(kt_wait(e, 1000));	/* head != tail: "non-empty" */
	e->ring->head = tail - 1000;
	complete_ops(e, 2, 1);
	EXPECT_EQ(kt_nr_ops(e), 2);
	/* User space repairs its head: everything arrives, in order. */
	e->ring->head = tail;
	EXPECT_OK(kt_wait(e, 0));
	EXPECT_CQE(e, 1, 100, 0);
	EXPECT_CQE(e, 2, 100, 0);
}

TEST(ring__garbage_in_the_rest_of_the_mapping_is_ignored)
{
	struct kt_ep *e = ring_ep(4);

	e->ring->tail = 12345;
	e->ring->entries = 3;
	e->ring->overflow = 7;
	complete_ops(e, 1, 1);
	EXPECT_EQ(e->ring->tail, 1);	/* the kernel's own tail */
	e->ring->entries = 4;
	EXPECT_CQE(e, 1, 100, 0);
}

TEST(ring__wait_with_timeout_zero_only_flushes)
{
	struct kt_ep *e = ring_ep(4);

	EXPECT_OK(kt_wait(e, 0));
	EXPECT_EQ(mock_schedules, 0);
}

TEST(ring__wait_returns_at_once_when_the_ring_holds_a_completion)
{
	struct kt_ep *e = ring_ep(4);

	complete_ops(e, 1, 1);
	EXPECT_OK(kt_wait(e, -1));
	EXPECT_OK(kt_wait(e, 1000));
	EXPECT_EQ(mock_schedules, 0);
}

TEST(ring__wait_times_out_after_exactly_the_timeout)
{
	struct kt_ep *e = ring_ep(4);
	ktime_t t0 = mock_ktime;

	EXPECT_ERR(kt_wait(e, 5000), -ETIMEDOUT);
	EXPECT_EQ(mock_ktime - t0, 5000);
	EXPECT(!waitqueue_active(&e->ep->wq));
}

TEST(ring__wait_whose_deadline_passed_before_it_slept_times_out)
{
	struct kt_ep *e = ring_ep(4);

	mock_clock_step = 10000;	/* each clock read: 10 us later */
	EXPECT_ERR(kt_wait(e, 5000), -ETIMEDOUT);
	EXPECT_EQ(mock_schedules, 0);
}

static struct kt_ep *hook_ep;

static void complete_one(void *arg)
{
	complete_ops(hook_ep, 9, 1);
	mock_schedule_hook = NULL;
}

TEST(ring__wait_is_woken_by_a_completion)
{
	u64 wakeups = stat(KPROG_STAT_WAKEUPS);

	hook_ep = ring_ep(4);
	mock_schedule_hook = complete_one;
	EXPECT_OK(kt_wait(hook_ep, -1));
	EXPECT_EQ(mock_schedules, 1);
	EXPECT_EQ(mock_wakeups_of(&hook_ep->ep->wq), 1);
	EXPECT_EQ(stat(KPROG_STAT_WAKEUPS) - wakeups, 1);
	EXPECT_CQE(hook_ep, 9, 100, 0);

	mock_schedule_hook = complete_one;
	EXPECT_OK(kt_wait(hook_ep, 1000000));
	EXPECT_CQE(hook_ep, 9, 100, 0);
	EXPECT(!waitqueue_active(&hook_ep->ep->wq));
}

TEST(ring__completion_without_a_sleeper_wakes_nobody)
{
	struct kt_ep *e = ring_ep(4);
	u64 wakeups = stat(KPROG_STAT_WAKEUPS);

	complete_ops(e, 1, 1);
	EXPECT_EQ(mock_wakeups_of(&e->ep->wq), 0);
	EXPECT_EQ(stat(KPROG_STAT_WAKEUPS), wakeups);
}

/* The kernel completes five, user space consumes the four that fit. */
static void overflow_then_consume(void *arg)
{
	int i;

	complete_ops(hook_ep, 1, 5);
	for (i = 1; i <= 4; i++)
		EXPECT_CQE(hook_ep, i, 99 + i, 0);
	mock_schedule_hook = NULL;
}

TEST(ring__waiter_woken_with_only_overflowed_completions_flushes_them)
{
	hook_ep = ring_ep(4);
	mock_schedule_hook = overflow_then_consume;
	EXPECT_OK(kt_wait(hook_ep, -1));
	EXPECT_CQE(hook_ep, 5, 104, 0);
}

static void spurious_wakeup(void *arg)
{
	wake_up(&hook_ep->ep->wq);
	mock_schedule_hook = NULL;
}

TEST(ring__spurious_wakeup_sleeps_again_until_the_deadline)
{
	ktime_t t0 = mock_ktime;

	hook_ep = ring_ep(4);
	mock_schedule_hook = spurious_wakeup;
	EXPECT_ERR(kt_wait(hook_ep, 3000), -ETIMEDOUT);
	EXPECT_EQ(mock_schedules, 2);
	EXPECT_EQ(mock_ktime - t0, 3000);
}

TEST(ring__wait_interrupted_by_a_signal_is_eintr)
{
	struct kt_ep *e = ring_ep(4);

	mock_signal(e->proc);
	EXPECT_ERR(kt_wait(e, -1), -EINTR);
	EXPECT_ERR(kt_wait(e, 1000), -EINTR);
	EXPECT_OK(kt_wait(e, 0));
	clear_tsk_thread_flag(&e->proc->task, TIF_SIGPENDING);
}

TEST(ring__wait_with_a_huge_timeout_does_not_overflow)
{
	hook_ep = ring_ep(4);
	mock_schedule_hook = complete_one;
	EXPECT_OK(kt_wait(hook_ep, S64_MAX));
	EXPECT_CQE(hook_ep, 9, 100, 0);
}

static wait_queue_head_t *polled_wq;

static void record_wq(struct file *f, wait_queue_head_t *wq, poll_table *pt)
{
	polled_wq = wq;
}

TEST(ring__poll_reports_completions_and_flushes_the_overflow)
{
	struct kt_ep *e = kt_open();
	poll_table pt;

	init_poll_funcptr(&pt, record_wq);
	polled_wq = NULL;
	EXPECT_EQ(e->file.f_op->poll(&e->file, &pt), EPOLLERR);
	EXPECT(!polled_wq);
	kprog_ring_entries = 2;
	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	EXPECT_EQ(e->file.f_op->poll(&e->file, &pt), 0);
	EXPECT(polled_wq == &e->ep->wq);
	complete_ops(e, 1, 3);
	EXPECT_EQ(e->file.f_op->poll(&e->file, &pt), EPOLLIN | EPOLLRDNORM);
	EXPECT_CQE(e, 1, 100, 0);
	EXPECT_CQE(e, 2, 101, 0);
	EXPECT_EQ(e->file.f_op->poll(&e->file, &pt), EPOLLIN | EPOLLRDNORM);
	EXPECT_CQE(e, 3, 102, 0);
	EXPECT_EQ(e->file.f_op->poll(&e->file, &pt), 0);
}

TEST(ring__mmap_takes_only_a_shared_mapping_of_the_ring_at_offset_0)
{
	struct kt_ep *e = kt_open();
	unsigned long shared = VM_READ | VM_WRITE | VM_SHARED | VM_MAYSHARE;
	void *ring;

	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, 0, shared, NULL), -EBADFD);
	kprog_ring_entries = 4;
	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, 1, shared, NULL), -EINVAL);
	EXPECT_ERR(kt_mmap(e, 2 * PAGE_SIZE, 0, shared, NULL), -EINVAL);
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, 0, VM_READ | VM_WRITE, NULL),
		   -EINVAL);
	mock_remap_errors = 1;
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, 0, shared, NULL), -EAGAIN);
	EXPECT_OK(kt_mmap(e, PAGE_SIZE, 0, VM_READ | VM_SHARED, &ring));
	EXPECT(ring == e->ring);
}

TEST(ring__wait_on_events_returns_at_once_when_the_count_moved)
{
	struct kt_ep *a, *b;
	struct kprog_wait w = { .timeout_ns = -1, .flags = KPROG_WAIT_EVENTS };
	u32 rank = 1;

	kt_pair(&a, &b);
	w.events = kt_events(b);
	EXPECT_OK(kt_ioctl(a, KPROG_IOC_KICK, &rank));
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(mock_schedules, 0);
	/* Without the flag the count does not matter. */
	w.flags = 0;
	w.timeout_ns = 100;
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_WAIT, &w), -ETIMEDOUT);
	w.flags = 4;
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_WAIT, &w), -EINVAL);
}

static void kick_from_hook(void *arg)
{
	u32 rank = 1;

	EXPECT_OK(kt_ioctl(hook_ep, KPROG_IOC_KICK, &rank));
	mock_schedule_hook = NULL;
}

TEST(ring__wait_on_events_sleeps_until_an_event)
{
	struct kt_ep *a, *b;
	struct kprog_wait w = { .timeout_ns = -1, .flags = KPROG_WAIT_EVENTS };

	kt_pair(&a, &b);
	hook_ep = a;
	w.events = kt_events(b);
	mock_schedule_hook = kick_from_hook;
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(mock_schedules, 1);
	EXPECT_EQ(kt_events(b), w.events + 1);
	/* With a timeout too. */
	w.events = kt_events(b);
	w.timeout_ns = 1000000;
	mock_schedule_hook = kick_from_hook;
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_WAIT, &w));
	w.events = kt_events(b);
	w.timeout_ns = 1000;
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_WAIT, &w), -ETIMEDOUT);
}
