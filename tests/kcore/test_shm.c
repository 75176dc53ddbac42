// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/xport_shm.c: the shared-memory transport. Its pages are the
 * test's own buffers (pinned through the mock, mapped back by
 * kmap_local_page()), so every copy moves real bytes; the worker runs
 * when the test runs the work queue.
 */
#include <linux/mm.h>
#include "kprog.h"
#include "transport.h"
#include "ktest.h"

#define BIG	(200 * PAGE_SIZE)

static u8 src[BIG + PAGE_SIZE] __aligned(PAGE_SIZE);
static u8 dst[BIG + PAGE_SIZE] __aligned(PAGE_SIZE);

/*
 * A synchronous send (req_id 1) from a to b and its receive (req_id 2),
 * matched, the worker queued. With KPROG_POST_IOV in a flags argument,
 * the buffer is an iovec array and the length its count.
 */
static void rendezvous_iov(struct kt_ep *a, struct kt_ep *b,
			   const void *s, u64 slen, u32 sflags,
			   void *r, u64 rlen, u32 rflags)
{
	struct kprog_post p;

	ASSERT_OK(kt_send(a, 1, 0, s, slen, 1, sflags | KPROG_SEND_SYNC, &p));
	ASSERT_EQ(p.done, 0);
	ASSERT_OK(kt_recv(b, 0, 0, r, rlen, 2, rflags, &p));
	ASSERT_EQ(p.done, 0);
}

static void rendezvous(struct kt_ep *a, struct kt_ep *b, const void *s,
		       void *r, u64 len)
{
	rendezvous_iov(a, b, s, len, 0, r, len, 0);
}

TEST(shm__copies_across_pages_and_segments_on_both_sides)
{
	struct kt_ep *a, *b;
	/* odd sizes and offsets, segments ending mid-page */
	struct kprog_iov siov[3] = {
		{ (uintptr_t)src + 100, 5000 },
		{ (uintptr_t)src + 3 * PAGE_SIZE + 7, 3 * PAGE_SIZE },
		{ (uintptr_t)src + 10 * PAGE_SIZE + 4095, 20000 },
	};
	struct kprog_iov diov[2] = {
		{ (uintptr_t)dst + 1, 12345 },
		{ (uintptr_t)dst + 8 * PAGE_SIZE + 2048, 30000 },
	};
	u64 len = 5000 + 3 * PAGE_SIZE + 20000;
	u8 *expect = kvmalloc(len, GFP_KERNEL), *got = kvmalloc(len, GFP_KERNEL);
	u64 pos = 0;
	int i;

	kt_pair(&a, &b);
	kt_fill(src, sizeof(src), 11);
	memset(dst, 0, sizeof(dst));
	for (i = 0; i < 3; i++) {
		memcpy(expect + pos, (void *)(uintptr_t)siov[i].base, siov[i].len);
		pos += siov[i].len;
	}
	rendezvous_iov(a, b, siov, 3, KPROG_POST_IOV, diov, 2, KPROG_POST_IOV);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, len, 0);
	EXPECT_CQE(b, 2, len, 0);
	memcpy(got, dst + 1, 12345);
	memcpy(got + 12345, dst + 8 * PAGE_SIZE + 2048, len - 12345);
	EXPECT(!memcmp(got, expect, len));
	EXPECT_EQ(dst[0], 0);
	EXPECT_EQ(mock_pinned_pages, 0);
	kvfree(expect);
	kvfree(got);
}

TEST(shm__a_long_transfer_goes_in_chunks_and_unpins_everything)
{
	struct kt_ep *a, *b;
	long rescheds = mock_cond_rescheds;

	kt_pair(&a, &b);
	kt_fill(src, BIG, 12);
	memset(dst, 0, sizeof(dst));
	rendezvous(a, b, src, dst, BIG);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, BIG, 0);
	EXPECT_CQE(b, 2, BIG, 0);
	EXPECT(kt_check(dst, BIG, 12));
	/* 200 pages in steps of at most 64 */
	EXPECT_EQ(mock_cond_rescheds - rescheds, 4);
	EXPECT_EQ(mock_dirtied_pages, 200);
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(shm__short_pins_still_move_every_byte)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	kt_fill(src, 10 * PAGE_SIZE, 13);
	mock_gup_max_pages = 1;
	rendezvous(a, b, src + 10, dst + 20, 9 * PAGE_SIZE);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, 9 * PAGE_SIZE, 0);
	EXPECT(!memcmp(dst + 20, src + 10, 9 * PAGE_SIZE));
}

TEST(shm__source_pin_failure_fails_the_transfer_with_efault)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	mock_gup_errors = 1;
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, 0, -EFAULT);
	EXPECT_CQE(b, 2, 0, -EFAULT);
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(shm__destination_pin_failure_unpins_the_source)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	/* the second chunk's destination pin fails */
	rendezvous(a, b, src, dst, 100 * PAGE_SIZE);
	mock_gup_errors = 0x8;
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, 64 * PAGE_SIZE, -EFAULT);
	EXPECT_CQE(b, 2, 64 * PAGE_SIZE, -EFAULT);
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(shm__unmapped_receive_buffer_fails_with_efault)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, (void *)MOCK_BAD_UADDR, 3 * PAGE_SIZE);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, 0, -EFAULT);
	EXPECT_CQE(a, 1, 0, -EFAULT);
}

TEST(shm__exited_sender_is_econnreset)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	mock_proc_exit_mm(a->proc);	/* its files are not closed yet */
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_CQE(b, 2, 0, -ECONNRESET);
}

TEST(shm__exited_receiver_is_econnreset)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	mock_proc_exit_mm(b->proc);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_CQE(b, 2, 0, -ECONNRESET);
}

TEST(shm__page_array_allocation_failure_is_enomem)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	mock_kmalloc_errors = 1;
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(a, 1, 0, -ENOMEM);
	EXPECT_CQE(b, 2, 0, -ENOMEM);
}

/* The worker runs while the closing sender waits for it. */
static void run_work_hook(void *arg)
{
	mock_run_work();
}

TEST(shm__closing_sender_stops_the_copy_with_econnreset)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	mock_schedule_hook = run_work_hook;
	kt_close(a);			/* waits for the transfer */
	EXPECT_CQE(b, 2, 0, -ECONNRESET);
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(shm__eager_buffer_to_a_posted_receive_is_copied_in_the_senders_call)
{
	struct kt_ep *a, *b;
	struct kprog_iov diov[3] = {
		{ (uintptr_t)dst + PAGE_SIZE - 10, 20 },
		{ (uintptr_t)dst + 5 * PAGE_SIZE, 3000 },
		{ (uintptr_t)dst + 9 * PAGE_SIZE - 1, 5000 },
	};
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(src, 8000, 14);
	memset(dst, 0, sizeof(dst));
	ASSERT_OK(kt_recv(b, 0, 0, diov, 3, 2, KPROG_POST_IOV, NULL));
	ASSERT_OK(kt_send(a, 1, 0, src, 8000, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(mock_work_queued(), 0);
	EXPECT_CQE(b, 2, 8000, 0);
	EXPECT(!memcmp(dst + PAGE_SIZE - 10, src, 20));
	EXPECT(!memcmp(dst + 5 * PAGE_SIZE, src + 20, 3000));
	EXPECT(!memcmp(dst + 9 * PAGE_SIZE - 1, src + 3020, 4980));
}

TEST(shm__init_and_exit_create_and_destroy_the_workqueue)
{
	long live = mock_live_allocs;

	kt_unload();
	EXPECT_EQ(mock_live_allocs, live - 7);	/* the module's workqueues */
	EXPECT_OK(kprog_xport_shm.init());
	kprog_xport_shm.exit();
	ASSERT_OK(kt_load());
}

#define GiB	(1ULL << 30)
#define CHUNK	(64 * PAGE_SIZE)

TEST(shm__rendezvous_of_5_gib_reports_the_bytes_before_a_failed_pin)
{
	const u64 len = 5 * GiB;
	u8 *s = mock_huge_map(len), *r = mock_huge_map(len);
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	struct kt_ep *a, *b;
	struct kprog_post p;

	ASSERT(s && r);
	kt_pair(&a, &b);
	kt_fill(s, 2 * CHUNK, 15);
	ASSERT_OK(kt_send(a, 1, 0, s, len, 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	ASSERT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.bytes, len);
	ASSERT_OK(kt_recv(b, 0, 0, r, len, 2, 0, &p));
	/* second chunk: its source pin fails */
	mock_gup_errors = 0x4;
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, CHUNK, -EFAULT);
	EXPECT_CQE(a, 1, CHUNK, -EFAULT);
	EXPECT(kt_check(r, CHUNK, 15));
	mock_huge_unmap(s, len);
	mock_huge_unmap(r, len);
}

TEST(shm__rendezvous_of_5_gib_into_a_small_receive_is_truncated)
{
	const u64 len = 5 * GiB;
	u8 *s = mock_huge_map(len), r[100];
	struct kt_ep *a, *b;
	struct kprog_post p;

	ASSERT(s);
	kt_pair(&a, &b);
	kt_fill(s, 100, 16);
	ASSERT_OK(kt_recv(b, 0, 0, r, sizeof(r), 2, 0, NULL));
	ASSERT_OK(kt_send(a, 1, 0, s, len, 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(b, 2, 100, -EMSGSIZE);
	EXPECT_CQE(a, 1, 100, 0);		/* the sender is not truncated */
	EXPECT(kt_check(r, 100, 16));
	mock_huge_unmap(s, len);
}

TEST(shm__small_rendezvous_is_copied_in_the_receivers_call)
{
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(src, 1000, 17);
	ASSERT_OK(kt_send(a, 1, 0, src, 1000, 1, KPROG_SEND_SYNC, &p));
	ASSERT_OK(kt_recv(b, 0, 0, dst, 1000, 2, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_EQ(mock_work_queued(), 0);
	EXPECT_CQE(b, 2, 1000, 0);
	EXPECT_CQE(a, 1, 1000, 0);
	EXPECT(kt_check(dst, 1000, 17));
}

/* No worker: both sides completed and the data (@seed) arrived in the call. */
static void expect_copied_in_the_call(struct kt_ep *a, struct kt_ep *b,
				      unsigned int seed)
{
	EXPECT_EQ(mock_work_queued(), 0);
	EXPECT_CQE(b, 2, 3 * PAGE_SIZE, 0);
	EXPECT_CQE(a, 1, 3 * PAGE_SIZE, 0);
	EXPECT(kt_check(dst, 3 * PAGE_SIZE, seed));
}

TEST(shm__blocking_receive_copies_a_large_rendezvous_in_its_call)
{
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(src, 3 * PAGE_SIZE, 29);
	ASSERT_OK(kt_send(a, 1, 0, src, 3 * PAGE_SIZE, 1, KPROG_SEND_SYNC,
			  &p));
	ASSERT_OK(kt_recv(b, 0, 0, dst, 3 * PAGE_SIZE, 2,
			  KPROG_POST_BLOCKING, &p));
	expect_copied_in_the_call(a, b, 29);
}

TEST(shm__blocking_send_to_a_posted_receive_copies_in_its_call)
{
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	kt_fill(src, 3 * PAGE_SIZE, 31);
	ASSERT_OK(kt_recv(b, 0, 0, dst, 3 * PAGE_SIZE, 2, 0, &p));
	ASSERT_OK(kt_send(a, 1, 0, src, 3 * PAGE_SIZE, 1,
			  KPROG_SEND_SYNC | KPROG_POST_BLOCKING, &p));
	expect_copied_in_the_call(a, b, 31);
}

TEST(shm__blocking_send_queued_unmatched_is_copied_by_a_worker_later)
{
	struct kt_ep *a, *b;
	struct kprog_post p;

	/* The sender's wish applies to its own call only. */
	kt_pair(&a, &b);
	ASSERT_OK(kt_send(a, 1, 0, src, 3 * PAGE_SIZE, 1,
			  KPROG_SEND_SYNC | KPROG_POST_BLOCKING, &p));
	ASSERT_OK(kt_recv(b, 0, 0, dst, 3 * PAGE_SIZE, 2, 0, &p));
	EXPECT_EQ(mock_work_queued(), 1);
	mock_run_work();
	EXPECT_CQE(b, 2, 3 * PAGE_SIZE, 0);
	EXPECT_CQE(a, 1, 3 * PAGE_SIZE, 0);
}

/* One copy is queued, on @cpu; it then completes both sides. */
static void expect_copy_queued_on(struct kt_ep *a, struct kt_ep *b, int cpu)
{
	ASSERT_EQ(mock_work_queued(), 1);
	EXPECT_EQ(mock_work_cpu(), cpu);
	mock_run_work();
	EXPECT_CQE(b, 2, 3 * PAGE_SIZE, 0);
	EXPECT_CQE(a, 1, 3 * PAGE_SIZE, 0);
}

TEST(shm__copy_goes_to_the_cpu_where_the_sender_waits)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	mock_set_cpus(4, 0);
	a->ring->waiter_cpu = 1 + 3;	/* the sender spins on CPU 3 */
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, 3);
}

TEST(shm__copy_goes_to_the_cpu_where_the_receiver_waits)
{
	struct kt_ep *a, *b;
	struct kprog_post p;

	kt_pair(&a, &b);
	mock_set_cpus(4, 2);
	b->ring->waiter_cpu = 1 + 1;
	ASSERT_OK(kt_recv(b, 0, 0, dst, 3 * PAGE_SIZE, 2, 0, &p));
	ASSERT_OK(kt_send(a, 1, 0, src, 3 * PAGE_SIZE, 1, KPROG_SEND_SYNC,
			  &p));
	expect_copy_queued_on(a, b, 1);
}

TEST(shm__copy_is_unbound_when_nobody_waits_elsewhere)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	mock_set_cpus(4, 2);
	/* waiting on the caller's own CPU, offline or absurd: no use */
	a->ring->waiter_cpu = 1 + 2;
	b->ring->waiter_cpu = 1 + 7;
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, WORK_CPU_UNBOUND);
	a->ring->waiter_cpu = 0xffffffff;
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, WORK_CPU_UNBOUND);
}

TEST(shm__waiter_cpu_outside_the_process_s_allowed_cpus_is_ignored)
{
	struct cpumask *allowed = &mock_default_proc->task.cpus_mask;
	struct kt_ep *a, *b;

	mock_set_cpus(4, 0);
	/* the processes may run on CPUs 0-2 only (their cpuset) */
	cpumask_clear_cpu(3, allowed);
	kt_pair(&a, &b);
	a->ring->waiter_cpu = 1 + 3;	/* a high-priority worker on CPU 3? */
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, WORK_CPU_UNBOUND);
	/* one the process may use is honoured */
	a->ring->waiter_cpu = 1 + 2;
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, 2);
	/* the affinity narrowed after JOIN: seen at the next WAIT */
	cpumask_clear_cpu(2, allowed);
	ASSERT_OK(kt_wait(a, 0));
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, WORK_CPU_UNBOUND);
	cpumask_setall(allowed);
}

TEST(shm__waiter_cpu_that_is_isolated_is_ignored)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	mock_set_cpus(4, 0);
	/* isolcpus=3 / nohz_full=3: no housekeeping work there */
	mock_housekeeping_cpus = ~BIT(3);
	a->ring->waiter_cpu = 1 + 3;
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, WORK_CPU_UNBOUND);
	mock_housekeeping_cpus = ~0UL;
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	expect_copy_queued_on(a, b, 3);
}

TEST(shm__closing_receiver_stops_the_copy_and_the_sender_learns_it)
{
	struct kt_ep *a, *b;

	kt_pair(&a, &b);
	rendezvous(a, b, src, dst, 3 * PAGE_SIZE);
	mock_schedule_hook = run_work_hook;
	kt_close(b);
	EXPECT_CQE(a, 1, 0, -ECONNRESET);
	EXPECT_EQ(mock_pinned_pages, 0);
}
