// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/op.c, msg.c, ep.c: endpoints, messages and the life of
 * operations: creation from a post (buffer and iovec import, their
 * errors), max_ops and max_iov_total charges, the owner's list,
 * references, deferred frees and the leak reports at unload.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include "kprog.h"
#include "ep.h"
#include "op.h"
#include "msg.h"
#include "umem.h"
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
	return kprog_op_create(e->ep, p, is_send, NULL);
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

TEST(op__op_holds_a_slot_the_mm_and_the_owner_until_dropped)
{
	struct kt_ep *e = joined_ep();
	char buf[16];
	struct kprog_post p = buf_post(buf, sizeof(buf));
	struct mm_struct *mm = e->proc->mm;
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	EXPECT_EQ(refcount_read(&op->ref), 1);
	EXPECT(op->owner == e->ep);
	EXPECT(op->buf.mm == mm);
	/* the mm's own, the joined endpoint's (its grants), the op's */
	EXPECT_EQ(atomic_read(&mm->mm_count), 3);
	EXPECT_EQ(kref_read(&e->ep->ref), 2);
	EXPECT_EQ(kt_nr_ops(e), 1);
	EXPECT(op->is_send);
	EXPECT_EQ(op->req_id, 42);
	EXPECT_EQ(op->context, 3);
	EXPECT_EQ(op->peer, 1);
	EXPECT_EQ(op->tag, 9);
	EXPECT_EQ(op->state, KPROG_OP_NEW);
	EXPECT_EQ(op->olist, KPROG_OL_NONE);
	drop(op);
	EXPECT_EQ(atomic_read(&mm->mm_count), 2);
	EXPECT_EQ(kref_read(&e->ep->ref), 1);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(op__op_of_a_task_without_mm_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct mock_proc *kthread = mock_proc_new(0);
	struct kprog_post p = buf_post(NULL, 0);

	mock_proc_exit_mm(kthread);
	mock_set_current(kthread);
	EXPECT_ERR(PTR_ERR(kprog_op_create(e->ep, &p, false, NULL)), -EINVAL);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(op__op_allocation_failure_is_enomem)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);

	mock_kmalloc_errors = 1;
	EXPECT_ERR(PTR_ERR(create(e, &p, false)), -ENOMEM);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(op__plain_buffer_is_one_inline_segment_and_costs_no_iov_entry)
{
	struct kt_ep *e = joined_ep();
	char buf[16];
	struct kprog_post p = buf_post(buf, sizeof(buf));
	struct kprog_op *op = create(e, &p, false);

	ASSERT(!IS_ERR(op));
	EXPECT(op->buf.iov == &op->iov_inline);
	EXPECT_EQ(op->buf.nr_iov, 1);
	EXPECT_EQ(op->buf.iov[0].base, (uintptr_t)buf);
	EXPECT_EQ(op->buf.iov[0].len, 16);
	EXPECT_EQ(op->buf.len, 16);
	EXPECT_EQ(op->iov_charge, 0);
	EXPECT_EQ(e->ep->iov_total, 0);
	drop(op);

	p.len = 0;
	op = create(e, &p, false);
	ASSERT(!IS_ERR(op));
	EXPECT_EQ(op->buf.nr_iov, 0);
	EXPECT_EQ(op->buf.len, 0);
	drop(op);
}

TEST(op__plain_buffer_too_long_or_wrapping_is_einval)
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

TEST(op__iov_count_above_max_iov_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = iov_post((void *)0x100000, kprog_max_iov + 1);

	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EINVAL);
}

TEST(op__zero_iov_entries_are_an_empty_message_with_no_charge)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = iov_post((void *)MOCK_BAD_UADDR, 0);
	long allocs = mock_allocs;
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	EXPECT_EQ(mock_allocs - allocs, 1);	/* the op only */
	EXPECT_EQ(op->buf.len, 0);
	EXPECT_EQ(op->buf.nr_iov, 0);
	EXPECT_EQ(op->iov_charge, 0);
	drop(op);
}

TEST(op__unreadable_iov_array_is_efault_and_leaks_nothing)
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

TEST(op__iov_drops_empty_segments_but_charges_every_entry)
{
	struct kt_ep *e = joined_ep();
	char a[10], c[5];
	struct kprog_iov iov[4] = {
		{ (uintptr_t)a, 10 }, { 0, 0 }, { (uintptr_t)c, 5 }, { 7, 0 },
	};
	struct kprog_post p = iov_post(iov, 4);
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	EXPECT_EQ(op->buf.nr_iov, 2);
	EXPECT_EQ(op->buf.len, 15);
	EXPECT_EQ(op->buf.iov[0].base, (uintptr_t)a);
	EXPECT_EQ(op->buf.iov[1].base, (uintptr_t)c);
	EXPECT_EQ(op->buf.iov[1].len, 5);
	EXPECT_EQ(op->iov_charge, 4);
	EXPECT_EQ(e->ep->iov_total, 4);
	drop(op);
	EXPECT_EQ(e->ep->iov_total, 0);
}

TEST(op__iov_segment_wrapping_the_address_space_is_einval)
{
	struct kt_ep *e = joined_ep();
	struct kprog_iov iov[2] = { { 0x100000, 10 }, { U64_MAX - 4, 10 } };
	struct kprog_post p = iov_post(iov, 2);
	long live = mock_live_allocs;

	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -EINVAL);
	EXPECT_EQ(mock_live_allocs, live);
	EXPECT_EQ(e->ep->iov_total, 0);
}

TEST(op__iov_total_above_the_largest_message_is_einval)
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
	EXPECT_EQ(op->buf.len, KPROG_MAX_MSG);
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

TEST(op__every_allocation_failing_in_op_creation_is_enomem)
{
	struct kprog_iov iov[3] = { { 0x100000, 1 } };

	cur_ep = joined_ep();
	cur_post = iov_post(iov, 3);
	/* its iovec array, the op */
	EXPECT_EQ(kt_each_alloc_failure(create_op, NULL, NULL, -ENOMEM), 2);
	EXPECT_EQ(kt_nr_ops(cur_ep), 0);
	EXPECT_EQ(cur_ep->ep->iov_total, 0);
}

TEST(op__max_ops_reached_is_enobufs_until_a_slot_returns)
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

TEST(op__max_iov_total_reached_is_enobufs_for_iovec_posts_only)
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

TEST(op__last_put_in_process_context_frees_at_once)
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

TEST(op__last_put_in_atomic_context_defers_the_free_to_one_work_item)
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
	/* one item for both, a tick later: no worker woken per free */
	EXPECT_EQ(mock_work_queued(), 0);
	EXPECT_EQ(atomic_read(&mm->mm_count), 4);	/* + the endpoint's */
	mock_time_advance(TICK_NSEC);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_EQ(mock_live_allocs, live - 2);
	EXPECT_EQ(atomic_read(&mm->mm_count), 2);
}

TEST(ep__release_warns_when_an_op_kept_its_slot)
{
	struct kt_ep *e = joined_ep();

	e->ep->nr_ops = 1;		/* an op that never returned it */
	kt_catch_begin();
	kt_close(e);
	EXPECT_EQ(kt_catch_end(), 1);
}

TEST(ep__unload_reports_endpoints_ops_and_messages_still_alive)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *op = create(e, &p, false);

	struct kprog_env env = { .len = 3 };
	struct kprog_msg *msg = kprog_msg_alloc(&env, GFP_KERNEL);

	ASSERT(msg);
	kt_close(e);			/* the op keeps the endpoint */
	kt_unload();
	EXPECT(strstr(mock_printk_buf, "kprog: leaked 1 operations"));
	EXPECT(strstr(mock_printk_buf, "kprog: leaked 1 messages"));
	EXPECT_PRINTK("kprog: leaked 1 endpoints");
	drop(op);
	kprog_msg_free(msg);
	ASSERT_OK(kt_load());
}

TEST(op__create_takes_over_an_imported_iovec_array)
{
	struct kt_ep *e = joined_ep();
	char a[10], b[20];
	struct kprog_iov iov[2] = { { (uintptr_t)a, 10 }, { (uintptr_t)b, 20 } };
	struct kprog_post p = iov_post(iov, 2);
	struct kprog_iov_import im;
	struct kprog_op *op;

	mock_set_current(e->proc);
	ASSERT_OK(kprog_iov_import(&im, &p));
	op = kprog_op_create(e->ep, &p, true, &im);
	ASSERT(!IS_ERR(op));
	EXPECT(im.iov == &im.inline_iov);	/* the op has the array */
	EXPECT_EQ(im.nr_iov, 0);
	EXPECT_EQ(op->buf.nr_iov, 2);
	EXPECT_EQ(op->buf.len, 30);
	EXPECT_EQ(op->iov_charge, 2);
	kprog_iov_release(&im);			/* harmless */
	drop(op);
}

TEST(op__charge_failure_after_taking_an_array_frees_it)
{
	struct kt_ep *e = joined_ep();
	struct kprog_iov iov[3] = { { 0x100000, 1 } };
	struct kprog_post p = iov_post(iov, 3);
	long live = mock_live_allocs;

	kprog_max_iov_total = 2;
	EXPECT_ERR(PTR_ERR(create(e, &p, true)), -ENOBUFS);
	EXPECT_EQ(mock_live_allocs, live);
	kprog_max_ops = 1;
	EXPECT_OK(kprog_op_charge(e->ep, 0));
	EXPECT_ERR(kprog_op_charge(e->ep, 0), -ENOBUFS);
	kprog_op_uncharge_raw(e->ep, 0);
	EXPECT_EQ(kt_nr_ops(e), 0);
}

TEST(op__deactivate_takes_an_op_back_unless_its_owner_left)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *op = create(e, &p, true);

	ASSERT(!IS_ERR(op));
	kprog_op_activate(op);
	EXPECT_EQ(op->olist, KPROG_OL_ACTIVE);
	EXPECT(kprog_op_deactivate(op));
	EXPECT_EQ(op->olist, KPROG_OL_NONE);
	EXPECT_EQ(kt_nr_ops(e), 0);
	EXPECT(!kprog_op_deactivate(op));	/* not on the list */
	kprog_op_put(op);
}

TEST(op__completion_of_an_op_not_on_its_owners_list_is_ignored)
{
	struct kt_ep *e = joined_ep();
	struct kprog_post p = buf_post(NULL, 0);
	struct kprog_op *op = create(e, &p, false);

	kt_op_complete(op, 1, 0);	/* never activated */
	EXPECT_EQ(kt_ring_count(e), 0);
	EXPECT_EQ(kt_nr_ops(e), 1);
	drop(op);
}

TEST(msg__alloc_copies_the_envelope_and_payload_room_follows_the_length)
{
	struct kprog_env env = { .context = 3, .src = 1, .dst = 2, .tag = 4,
				 .len = 100 };
	struct kprog_msg *msg = kprog_msg_alloc(&env, GFP_KERNEL);

	ASSERT(msg);
	EXPECT_EQ(msg->state, KPROG_MSG_NEW);
	EXPECT(list_empty(&msg->qnode));
	EXPECT_EQ(msg->env.tag, 4);
	EXPECT(!kprog_msg_is_rndv(msg));
	EXPECT_OK(kprog_msg_alloc_data(msg, GFP_KERNEL));
	ASSERT(msg->data);
	memset(msg->data, 1, 100);		/* ASan: all of it */
	kprog_msg_free(msg);

	env.len = 0;
	env.flags = KPROG_ENV_RNDV;
	msg = kprog_msg_alloc(&env, GFP_ATOMIC);
	ASSERT(msg);
	EXPECT(kprog_msg_is_rndv(msg));
	EXPECT_OK(kprog_msg_alloc_data(msg, GFP_KERNEL));
	EXPECT(!msg->data);
	kprog_msg_free(msg);
}

TEST(msg__allocation_failures_are_reported)
{
	struct kprog_env env = { .len = 10 };
	struct kprog_msg *msg;

	mock_kmalloc_errors = 1;
	EXPECT(!kprog_msg_alloc(&env, GFP_KERNEL));
	msg = kprog_msg_alloc(&env, GFP_KERNEL);
	ASSERT(msg);
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kprog_msg_alloc_data(msg, GFP_KERNEL), -ENOMEM);
	kprog_msg_free(msg);
}

TEST(ep__release_warns_when_a_channel_is_left_in_its_table)
{
	struct kprog_ep *ep = kprog_ep_alloc();
	static int dummy;

	ASSERT(ep);
	ASSERT(!xa_err(xa_store(&ep->chans, 3, &dummy, GFP_KERNEL)));
	kt_catch_begin();
	kprog_ep_put(ep);		/* xa_destroy() frees the entry */
	EXPECT_EQ(kt_catch_end(), 1);
}

TEST(ep__allocation_failure_leaves_nothing)
{
	mock_kmalloc_errors = 1;
	EXPECT(!kprog_ep_alloc());
}
