// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/ep.c: endpoints and the life of operations: creation from a post
 * (buffer and iovec import, their errors), max_ops and max_iov_total
 * charges, the eager copy-in, references, and deferred frees.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include "kprog.h"
#include "ktest.h"

static struct kt_ep *joined_ep(void)
{
	struct kt_ep *e = kt_open();

	if (kt_join(e, kt_new_key(), 0, 2))
		kt_fatal(__FILE__, __LINE__, "join");
	return e;
}

/* kprog_op_create() as @e's process; the op or an ERR_PTR. */
static struct kprog_op *create(struct kt_ep *e, struct kprog_post *p,
			       bool is_send)
{
	mock_set_current(e->proc);
	return kprog_op_create(e->ep, p, is_send);
}

/* Returns what a failed post returns and drops the op. */
static void drop(struct kprog_op *op)
{
	kprog_op_uncharge(op);
	kprog_op_put(op);
}

static struct kprog_post buf_post(const void *buf, u64 len)
{
	return (struct kprog_post){
		.req_id = 42,
		.addr = (u64)(uintptr_t)buf,
		.len = len,
		.context = 3,
		.peer = 1,
		.tag = 9,
	};
}

static struct kprog_post iov_post(const struct kprog_iov *iov, u32 n)
{
	struct kprog_post p = buf_post(iov, n);

	p.flags = KPROG_POST_IOV;
	return p;
}

TEST(ep__new_endpoint_has_one_reference_and_empty_lists)
{
	struct kprog_ep *ep = kprog_ep_alloc();

	ASSERT(ep);
	EXPECT_EQ(kref_read(&ep->ref), 1);
	EXPECT(list_empty(&ep->posted) && list_empty(&ep->unexpected) &&
	       list_empty(&ep->mprobed) && list_empty(&ep->ops) &&
	       list_empty(&ep->overflow));
	EXPECT(!kprog_ep_job(ep));
	kprog_ep_put(ep);
}

TEST(ep__op_holds_a_slot_the_mm_and_the_owner_until_dropped)
{
	struct kt_ep *e = joined_ep();
	char buf[16];
	struct kprog_post p = buf_post(buf, sizeof(buf));
	struct mm_struct *mm = e->proc->mm;
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	EXPECT_EQ(refcount_read(&op->ref), 1);
	EXPECT(op->owner == e->ep);
	EXPECT(op->mm == mm);
	EXPECT_EQ(atomic_read(&mm->mm_count), 2);
	EXPECT_EQ(kref_read(&e->ep->ref), 2);
	EXPECT_EQ(kt_nr_ops(e), 1);
	EXPECT(op->is_send);
	EXPECT_EQ(op->req_id, 42);
	EXPECT_EQ(op->context, 3);
	EXPECT_EQ(op->peer, 1);
	EXPECT_EQ(op->tag, 9);
	EXPECT_EQ(op->src_rank, 0);
	drop(op);
	EXPECT_EQ(atomic_read(&mm->mm_count), 1);
	EXPECT_EQ(kref_read(&e->ep->ref), 1);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(ep__op_of_a_task_without_mm_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct mock_proc *kthread = mock_proc_new(0);
	struct kprog_post p = buf_post(NULL, 0);

	mock_proc_exit_mm(kthread);
	mock_set_current(kthread);
	EXPECT_ERR(PTR_ERR(kprog_op_create(e->ep, &p, false)), -EINVAL);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(ep__op_allocation_failure_is_enomem)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);

	mock_kmalloc_errors = 1;
	EXPECT_ERR(PTR_ERR(create(e, &p, false)), -ENOMEM);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(ep__plain_buffer_is_one_inline_segment_and_costs_no_iov_entry)
{
	struct kt_ep *e = joined_ep();
	char buf[16];
	struct kprog_post p = buf_post(buf, sizeof(buf));
	struct kprog_op *op = create(e, &p, false);

	ASSERT(!IS_ERR(op));
	EXPECT(op->iov == &op->iov_inline);
	EXPECT_EQ(op->nr_iov, 1);
	EXPECT_EQ(op->iov[0].base, (uintptr_t)buf);
	EXPECT_EQ(op->iov[0].len, 16);
	EXPECT_EQ(op->len, 16);
	EXPECT_EQ(op->iov_charge, 0);
	EXPECT_EQ(e->ep->iov_total, 0);
	drop(op);

	p.len = 0;
	op = create(e, &p, false);
	ASSERT(!IS_ERR(op));
	EXPECT_EQ(op->nr_iov, 0);
	EXPECT_EQ(op->len, 0);
	drop(op);
}

TEST(ep__plain_buffer_too_long_or_wrapping_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post((void *)0x100000, KPROG_MAX_MSG + 1);
	long live = mock_live_allocs;
	struct kprog_op *op;

	EXPECT_ERR(PTR_ERR(create(e, &p, false)), -EINVAL);
	p.len = KPROG_MAX_MSG;
	op = create(e, &p, false);
	EXPECT(!IS_ERR(op));
	drop(op);
	p.addr = U64_MAX - 10;
	p.len = 100;
	EXPECT_ERR(PTR_ERR(create(e, &p, false)), -EINVAL);
	EXPECT_EQ(kt_nr_ops(e), 0);
	EXPECT_EQ(mock_live_allocs, live);
}

TEST(ep__iov_count_above_max_iov_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = iov_post((void *)0x100000, kprog_max_iov + 1);

	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EINVAL);
}

TEST(ep__zero_iov_entries_are_an_empty_message_with_no_charge)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = iov_post((void *)MOCK_BAD_UADDR, 0);
	long allocs = mock_allocs;
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	EXPECT_EQ(mock_allocs - allocs, 1);	/* the op only */
	EXPECT_EQ(op->len, 0);
	EXPECT_EQ(op->nr_iov, 0);
	EXPECT_EQ(op->iov_charge, 0);
	drop(op);
}

TEST(ep__unreadable_iov_array_is_efault_and_leaks_nothing)
{
	struct kt_ep *e = joined_ep();
	struct kprog_iov iov[2] = { { 0x100000, 1 }, { 0x200000, 1 } };
	struct kprog_post p = iov_post((void *)MOCK_BAD_UADDR, 2);
	long live = mock_live_allocs;

	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EFAULT);
	p = iov_post(iov, 2);
	mock_copy_from_user_errors = 1;
	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EFAULT);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(ep__iov_drops_empty_segments_but_charges_every_entry)
{
	struct kt_ep *e = joined_ep();
	char a[10], c[5];
	struct kprog_iov iov[4] = {
		{ (uintptr_t)a, 10 }, { 0, 0 }, { (uintptr_t)c, 5 }, { 7, 0 },
	};
	struct kprog_post p = iov_post(iov, 4);
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	EXPECT_EQ(op->nr_iov, 2);
	EXPECT_EQ(op->len, 15);
	EXPECT_EQ(op->iov[0].base, (uintptr_t)a);
	EXPECT_EQ(op->iov[1].base, (uintptr_t)c);
	EXPECT_EQ(op->iov[1].len, 5);
	EXPECT_EQ(op->iov_charge, 4);
	EXPECT_EQ(e->ep->iov_total, 4);
	drop(op);
	EXPECT_EQ(e->ep->iov_total, 0);
}

TEST(ep__iov_segment_wrapping_the_address_space_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct kprog_iov iov[2] = { { 0x100000, 10 }, { U64_MAX - 4, 10 } };
	struct kprog_post p = iov_post(iov, 2);
	long live = mock_live_allocs;

	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EINVAL);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_EQ(e->ep->iov_total, 0);
}

TEST(ep__iov_total_above_the_largest_message_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct kprog_iov iov[2] = {
		{ 0x100000, KPROG_MAX_MSG / 2 + 1 },
		{ 0x100000, KPROG_MAX_MSG / 2 + 1 },
	};
	struct kprog_post p = iov_post(iov, 2);
	struct kprog_op *op;

	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EINVAL);
	iov[1].len = KPROG_MAX_MSG / 2 - 1;
	op = create(e, &p, true);
	EXPECT(!IS_ERR(op));
	EXPECT_EQ(op->len, KPROG_MAX_MSG);
	drop(op);
}

static struct kt_ep *cur_ep;
static struct kprog_post cur_post;

static int create_op(void *arg)
{
	struct kprog_op *op = create(cur_ep, &cur_post, true);

	if (IS_ERR(op))
		return PTR_ERR(op);
	drop(op);
	return 0;
}

TEST(ep__every_allocation_failing_in_op_creation_is_enomem)
{
	struct kprog_iov iov[3] = { { 0x100000, 1 } };

	cur_ep = joined_ep();
	cur_post = iov_post(iov, 3);
	/* the op, its iovec array */
	EXPECT_EQ(kt_each_alloc_failure(create_op, NULL, NULL, -ENOMEM), 2);
	EXPECT_EQ(kt_nr_ops(cur_ep), 0);
	EXPECT_EQ(cur_ep->ep->iov_total, 0);
}

TEST(ep__max_ops_reached_is_enobufs_until_a_slot_returns)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *a, *b;

	kprog_max_ops = 2;
	a = create(e, &p, false);
	b = create(e, &p, false);
	ASSERT(!IS_ERR(a) && !IS_ERR(b));
	EXPECT_ERR(PTR_ERR(create(e, &p, false)), -ENOBUFS);
	drop(a);
	a = create(e, &p, false);
	EXPECT(!IS_ERR(a));
	drop(a);
	drop(b);
}

TEST(ep__max_iov_total_reached_is_enobufs_for_iovec_posts_only)
{
	struct kt_ep *e = joined_ep();
	struct kprog_iov iov[3] = { { 0x100000, 1 }, { 0x100000, 1 } };
	struct kprog_post p3 = iov_post(iov, 3), p2 = iov_post(iov, 2);
	struct kprog_post plain = buf_post(NULL, 0);
	struct kprog_op *a, *b;
	long live;

	kprog_max_iov_total = 4;
	a = create(e, &p3, true);
	ASSERT(!IS_ERR(a));
	live = mock_live_allocs;
	EXPECT_ERR(PTR_ERR(create(e, &p2, true)), -ENOBUFS);
	EXPECT_EQ(mock_live_allocs, live);	/* its array is freed */
	b = create(e, &plain, true);		/* inline: no entry */
	EXPECT(!IS_ERR(b));
	drop(b);
	p2.len = 1;
	b = create(e, &p2, true);
	EXPECT(!IS_ERR(b));
	EXPECT_EQ(e->ep->iov_total, 4);
	drop(b);
	drop(a);
}

TEST(ep__copy_in_gathers_every_segment_into_one_kernel_buffer)
{
	struct kt_ep *e = joined_ep();
	char a[100], b[3000];
	struct kprog_iov iov[2] = { { (uintptr_t)a, 100 }, { (uintptr_t)b, 3000 } };
	struct kprog_post p = iov_post(iov, 2);
	struct kprog_op *op;

	kt_fill(a, 100, 1);
	kt_fill(b, 3000, 2);
	op = create(e, &p, true);
	ASSERT(!IS_ERR(op));
	EXPECT_OK(kprog_op_copy_in(op));
	ASSERT(op->kbuf);
	EXPECT(kt_check(op->kbuf, 100, 1));
	EXPECT(kt_check(op->kbuf + 100, 3000, 2));
	drop(op);
}

TEST(ep__copy_in_of_an_empty_message_allocates_nothing)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *op = create(e, &p, true);
	long allocs = mock_allocs;

	ASSERT(!IS_ERR(op));
	EXPECT_OK(kprog_op_copy_in(op));
	EXPECT(!op->kbuf);
	EXPECT_EQ(mock_allocs, allocs);
	drop(op);
}

TEST(ep__copy_in_failures_are_enomem_or_efault_and_leak_nothing)
{
	struct kt_ep *e = joined_ep();
	char a[64];
	struct kprog_iov iov[2] = { { (uintptr_t)a, 64 }, { MOCK_BAD_UADDR, 8 } };
	struct kprog_post p = buf_post(a, 64);
	struct kprog_op *op = create(e, &p, true);
	long live = mock_live_allocs;

	ASSERT(!IS_ERR(op));
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kprog_op_copy_in(op), -ENOMEM);
	mock_copy_from_user_errors = 1;
	EXPECT_ERR(kprog_op_copy_in(op), -EFAULT);
	drop(op);
	EXPECT_EQ(mock_live_allocs, live - 1);

	p = iov_post(iov, 2);		/* the second segment faults */
	op = create(e, &p, true);
	ASSERT(!IS_ERR(op));
	EXPECT_ERR(kprog_op_copy_in(op), -EFAULT);
	drop(op);
}

TEST(ep__last_put_in_process_context_frees_at_once)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *op = create(e, &p, false);
	long live = mock_live_allocs;

	kprog_op_uncharge(op);
	kprog_op_put(op);
	EXPECT_EQ(mock_live_allocs, live - 1);
	EXPECT_EQ(mock_work_queued(), 0);
}

TEST(ep__last_put_in_atomic_context_defers_the_free_to_one_work_item)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *a = create(e, &p, false), *b = create(e, &p, false);
	struct mm_struct *mm = e->proc->mm;
	DEFINE_SPINLOCK(lock);
	unsigned long flags;
	long live;

	kprog_op_uncharge(a);
	kprog_op_uncharge(b);
	live = mock_live_allocs;
	spin_lock(&lock);
	kprog_op_put(a);
	spin_unlock(&lock);
	local_irq_save(flags);
	kprog_op_put(b);
	local_irq_restore(flags);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_EQ(mock_work_queued(), 1);	/* one item for both */
	EXPECT_EQ(atomic_read(&mm->mm_count), 3);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_EQ(mock_live_allocs, live - 2);
	EXPECT_EQ(atomic_read(&mm->mm_count), 1);
}

TEST(ep__release_warns_when_an_op_kept_its_slot)
{
	struct kt_ep *e = joined_ep();

	e->ep->nr_ops = 1;		/* an op that never returned it */
	kt_catch_begin();
	kt_close(e);
	EXPECT_EQ(kt_catch_end(), 1);
}

TEST(ep__unload_reports_endpoints_and_ops_still_alive)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *op = create(e, &p, false);

	kt_close(e);			/* the op keeps the endpoint */
	kt_unload();
	EXPECT_PRINTK("leaked 1 endpoints, 1 operations");
	drop(op);
}
