// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/grant.c: rendezvous sends posted through a channel record and a
 * grant slot. The test plays both processes: rank 0 fills its grant
 * table (mapped as its process maps it) and writes the record, rank 1
 * receives; and both write what a broken or hostile process could.
 */
#include <linux/mm.h>
#include "kprog.h"
#include "ktest.h"

#define SHARED	(VM_READ | VM_WRITE | VM_SHARED | VM_MAYSHARE)
#define LEN	(3 * PAGE_SIZE + 123)

static u8 src[4 * PAGE_SIZE] __aligned(PAGE_SIZE);
static u8 dst[4 * PAGE_SIZE] __aligned(PAGE_SIZE);

struct gjob {
	struct kt_ep *a, *b;		/* ranks 0 and 1 */
	struct kt_chan ca, cb;
	struct kprog_grant *g;		/* a's grant table, as a maps it */
};

static void gjob(struct gjob *j)
{
	void *m;

	kt_pair(&j->a, &j->b);
	if (kt_chan_open(j->a, 1, &j->ca) || kt_chan_open(j->b, 0, &j->cb))
		kt_fatal(__FILE__, __LINE__, "channel open");
	if (kt_mmap(j->a, PAGE_SIZE, KPROG_GRANT_MMAP_OFFSET >> PAGE_SHIFT,
		    SHARED, &m))
		kt_fatal(__FILE__, __LINE__, "grant table mmap");
	j->g = m;
}

/* Slot @idx: a send of src[0..@len) to rank @to, tag 5, request @id. */
static void grant(struct gjob *j, u32 idx, u32 to, u64 id, u64 len)
{
	struct kprog_grant *g = &j->g[idx];

	g->dst = to;
	g->context = 0;
	g->tag = 5;
	g->req_id = id;
	g->addr = (uintptr_t)src;
	g->len = len;
	g->state = KPROG_GRANT_SEQ(g->state) + 4 + KPROG_GRANT_OPEN;
}

/* A rendezvous record naming slot @idx and request @id, tag 5. */
static void rts(struct kt_chan *c, u32 idx, u64 id)
{
	struct kprog_chan_rts r = { .grant = idx, .req_id = id };
	u64 pos = c->tx->prod;

	if (kt_chan_put(c, 0, 5, &r, sizeof(r)))
		kt_fatal(__FILE__, __LINE__, "channel full");
	kt_chan_rec(c, true, pos)->flags |= KPROG_REC_RNDV;
}

/* src[0..LEN) filled from @seed, granted to rank 1 in slot @idx, its record. */
static void offer(struct gjob *j, u32 idx, u64 id, unsigned int seed)
{
	kt_fill(src, LEN, seed);
	grant(j, idx, 1, id, LEN);
	rts(&j->ca, idx, id);
}

TEST(grant__info_and_join_offer_a_table_of_max_grants_slots)
{
	struct kprog_info info;
	struct gjob j;

	gjob(&j);
	ASSERT_OK(kt_info(j.a, &info));
	EXPECT(info.features & KPROG_FEAT_GRANTS);
	EXPECT_EQ(info.max_grants, 64);
	EXPECT_EQ(j.g[63].state, KPROG_GRANT_FREE);
}

TEST(grant__record_sends_the_granted_buffer_to_the_receive)
{
	struct kprog_post p;
	struct gjob j;

	gjob(&j);
	kt_fill(src, LEN, 3);
	memset(dst, 0, sizeof(dst));
	grant(&j, 7, 1, 77, LEN);
	rts(&j.ca, 7, 77);
	/* the receive drains it, takes it and copies in its call */
	ASSERT_OK(kt_recv(j.b, 0, 5, dst, sizeof(dst), 2, KPROG_POST_BLOCKING, &p));
	EXPECT_EQ(KPROG_GRANT_STATE(j.g[7].state), KPROG_GRANT_TAKEN);
	EXPECT_EQ(KPROG_GRANT_SEQ(j.g[7].state), 4);
	EXPECT_CQE(j.b, 2, LEN, 0);
	EXPECT_CQE(j.a, 77, LEN, 0);
	EXPECT(kt_check(dst, LEN, 3));
	EXPECT_EQ(dst[LEN], 0);
	EXPECT_EQ(kt_chan_rec(&j.ca, true, 0)->state, KPROG_REC_DONE);
	EXPECT_EQ(j.ca.tx->cons, j.ca.tx->prod);
	EXPECT_EQ(kt_nr_rndv(j.a), 0);
	EXPECT_EQ(mock_pinned_pages, 0);
}

TEST(grant__unmatched_record_waits_in_the_kernel_and_probes_with_its_length)
{
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	struct kprog_post p;
	struct gjob j;

	gjob(&j);
	offer(&j, 0, 9, 4);
	ASSERT_OK(kt_probe(j.b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.bytes, LEN);
	EXPECT_EQ(pr.out_tag, 5);
	EXPECT_EQ(kt_src(j.b, 0)->held, 1);
	/* a worker copies it to a receive that returns to compute */
	ASSERT_OK(kt_recv(j.b, 0, 5, dst, sizeof(dst), 2, 0, &p));
	mock_run_work();
	EXPECT_CQE(j.b, 2, LEN, 0);
	EXPECT_CQE(j.a, 9, LEN, 0);
	EXPECT(kt_check(dst, LEN, 4));
}

TEST(grant__record_keeps_its_place_among_eager_records_of_the_sender)
{
	struct kprog_post p;
	char small[8] = "first";
	char r[8] = {};
	struct gjob j;

	gjob(&j);
	kt_fill(src, LEN, 5);
	ASSERT_OK(kt_chan_put(&j.ca, 0, 5, small, sizeof(small)));
	grant(&j, 1, 1, 11, LEN);
	rts(&j.ca, 1, 11);
	/* tag 5 twice: the eager record first, then the rendezvous */
	ASSERT_OK(kt_recv(j.b, 0, 5, r, sizeof(r), 2, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT(!strcmp(r, "first"));
	ASSERT_OK(kt_recv(j.b, 0, 5, dst, sizeof(dst), 3, KPROG_POST_BLOCKING, &p));
	EXPECT_CQE(j.b, 3, LEN, 0);
	EXPECT_CQE(j.a, 11, LEN, 0);
}

TEST(grant__withdrawn_slot_is_not_sent_and_its_record_is_dropped)
{
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	struct gjob j;

	gjob(&j);
	grant(&j, 2, 1, 12, LEN);
	rts(&j.ca, 2, 12);
	j.g[2].state = KPROG_GRANT_SEQ(j.g[2].state) | KPROG_GRANT_FREE;
	ASSERT_OK(kt_probe(j.b, &pr));
	EXPECT_EQ(pr.found, 0);
	EXPECT_EQ(kt_chan_rec(&j.ca, true, 0)->state, KPROG_REC_DONE);
	EXPECT_EQ(kt_ring_count(j.a), 0);
	EXPECT_EQ(kt_nr_rndv(j.a), 0);
}

TEST(grant__slot_refilled_for_another_request_is_not_taken_by_an_old_record)
{
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	struct kprog_post p;
	struct gjob j;

	gjob(&j);
	offer(&j, 3, 13, 6);
	/* withdrawn and filled again for request 14, whose record follows */
	grant(&j, 3, 1, 14, LEN);
	rts(&j.ca, 3, 14);
	ASSERT_OK(kt_probe(j.b, &pr));
	EXPECT_EQ(kt_src(j.b, 0)->held, 1);
	ASSERT_OK(kt_recv(j.b, 0, 5, dst, sizeof(dst), 2, KPROG_POST_BLOCKING, &p));
	EXPECT_CQE(j.b, 2, LEN, 0);
	EXPECT_CQE(j.a, 14, LEN, 0);
	EXPECT_EQ(kt_ring_count(j.a), 0);
}

TEST(grant__records_naming_no_grant_for_this_receiver_are_dropped)
{
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	struct gjob j;

	gjob(&j);
	grant(&j, 4, 0, 15, LEN);	/* to rank 0, not to b */
	rts(&j.ca, 4, 15);
	rts(&j.ca, 64, 16);		/* past the table */
	rts(&j.ca, 0xffffffff, 17);
	grant(&j, 5, 1, 18, LEN);
	rts(&j.ca, 5, 99);		/* not the slot's request */
	grant(&j, 6, 1, 19, KPROG_MAX_MSG + 1);
	rts(&j.ca, 6, 19);		/* longer than any message */
	j.g[8] = j.g[5];
	j.g[8].req_id = 20;
	j.g[8].tag = -1;
	rts(&j.ca, 8, 20);		/* a negative tag */
	ASSERT_OK(kt_probe(j.b, &pr));
	EXPECT_EQ(pr.found, 0);
	EXPECT_EQ(j.ca.tx->cons, j.ca.tx->prod);
	EXPECT_EQ(KPROG_GRANT_STATE(j.g[4].state), KPROG_GRANT_OPEN);
	EXPECT_EQ(KPROG_GRANT_STATE(j.g[5].state), KPROG_GRANT_OPEN);
	EXPECT_EQ(kt_ring_count(j.a), 0);
	EXPECT(!mock_printk_take("malformed"));
}

TEST(grant__record_of_the_wrong_length_breaks_the_direction)
{
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	u64 junk[3] = { 0, 21, 0 };
	struct gjob j;
	u64 pos;

	gjob(&j);
	grant(&j, 0, 1, 21, LEN);
	pos = j.ca.tx->prod;
	ASSERT_OK(kt_chan_put(&j.ca, 0, 5, junk, sizeof(junk)));
	kt_chan_rec(&j.ca, true, pos)->flags |= KPROG_REC_RNDV;
	ASSERT_OK(kt_probe(j.b, &pr));
	EXPECT_EQ(pr.found, 0);
	EXPECT(mock_printk_take("malformed, not used any more"));
	EXPECT_EQ(KPROG_GRANT_STATE(j.g[0].state), KPROG_GRANT_OPEN);
}

TEST(grant__sender_draining_its_own_channel_hands_the_record_to_a_posted_receive)
{
	struct kprog_chan_drain d = { .peer = 1, .flags = KPROG_DRAIN_TO };
	struct kprog_post p;
	struct gjob j;

	gjob(&j);
	kt_fill(src, LEN, 7);
	ASSERT_OK(kt_recv(j.b, 0, 5, dst, sizeof(dst), 2, 0, &p));
	grant(&j, 0, 1, 22, LEN);
	rts(&j.ca, 0, 22);
	ASSERT_OK(kt_ioctl(j.a, KPROG_IOC_CHAN_DRAIN, &d));
	EXPECT_EQ(mock_run_work(), 1);
	EXPECT_CQE(j.b, 2, LEN, 0);
	EXPECT_CQE(j.a, 22, LEN, 0);
	EXPECT(kt_check(dst, LEN, 7));
	d.peer = KPROG_ANY_SOURCE;
	EXPECT_ERR(kt_ioctl(j.a, KPROG_IOC_CHAN_DRAIN, &d), -EINVAL);
	d.flags = 2;
	d.peer = 1;
	EXPECT_ERR(kt_ioctl(j.a, KPROG_IOC_CHAN_DRAIN, &d), -EINVAL);
}

static struct gjob j_leave;

/* The sender's process fails it (libshim/core/rts.c): the kernel closes the channel. */
TEST(grant__receiver_leaving_closes_the_channel_and_leaves_the_slot_to_its_owner)
{
	struct kprog_chan_drain d = { .peer = 1, .flags = KPROG_DRAIN_TO };
	u32 ev;

	gjob(&j_leave);
	grant(&j_leave, 0, 1, 23, LEN);
	rts(&j_leave.ca, 0, 23);
	ev = kt_events(j_leave.a);
	kt_close(j_leave.b);
	EXPECT_EQ(j_leave.ca.tx->closed, 1);
	EXPECT(kt_events(j_leave.a) > ev);
	EXPECT_OK(kt_ioctl(j_leave.a, KPROG_IOC_CHAN_DRAIN, &d));
	EXPECT_EQ(KPROG_GRANT_STATE(j_leave.g[0].state), KPROG_GRANT_OPEN);
	EXPECT_EQ(kt_ring_count(j_leave.a), 0);
	EXPECT_EQ(kt_nr_rndv(j_leave.a), 0);
}

TEST(grant__sender_leaving_takes_its_grants_with_it)
{
	struct kprog_probe pr = { .source = 0, .tag = KPROG_ANY_TAG };
	struct gjob j;

	gjob(&j);
	grant(&j, 0, 1, 24, LEN);
	rts(&j.ca, 0, 24);
	mock_proc_exit_mm(j.a->proc);	/* its mm is gone: an exiting process */
	kt_close(j.a);
	ASSERT_OK(kt_probe(j.b, &pr));
	EXPECT_EQ(pr.found, 0);
	EXPECT_EQ(kt_src(j.b, 0)->held, 0);
}

TEST(grant__table_is_mapped_only_shared_by_its_own_process_and_not_inherited)
{
	struct mock_proc *other = mock_proc_new(0), *own;
	unsigned long off = KPROG_GRANT_MMAP_OFFSET >> PAGE_SHIFT;
	struct kt_ep *e, *f;
	void *m;

	kt_pair(&e, &f);
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, off, VM_READ | VM_WRITE, &m), -EINVAL);
	EXPECT_ERR(kt_mmap(e, 2 * PAGE_SIZE, off, SHARED, &m), -EINVAL);
	ASSERT_OK(kt_mmap(e, PAGE_SIZE, off, SHARED, &m));
	EXPECT(kt_last_vm_flags & VM_DONTCOPY);
	/* the fd passed to another process (fork, SCM_RIGHTS) */
	own = e->proc;
	e->proc = other;
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, off, SHARED, &m), -EPERM);
	e->proc = own;
}

TEST(grant__none_when_max_grants_is_0)
{
	struct kprog_info info;
	struct kt_ep *a, *b;
	void *m;

	kprog_max_grants = 0;
	kt_pair(&a, &b);
	ASSERT_OK(kt_info(a, &info));
	EXPECT(!(info.features & KPROG_FEAT_GRANTS));
	EXPECT_EQ(info.max_grants, 0);
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, KPROG_GRANT_MMAP_OFFSET >> PAGE_SHIFT,
			   SHARED, &m), -ENODEV);
}

static struct gjob fj;

static int drain_b(void *arg)
{
	struct kprog_chan_drain d = { .peer = 0 };

	return kt_ioctl(fj.b, KPROG_IOC_CHAN_DRAIN, &d);
}

static void still_new(void *arg)
{
	EXPECT_EQ(KPROG_GRANT_STATE(fj.g[0].state), KPROG_GRANT_OPEN);
	EXPECT_EQ(kt_chan_rec(&fj.ca, true, 0)->state, KPROG_REC_NEW);
	EXPECT_EQ(kt_src(fj.b, 0)->held, 0);
	EXPECT_EQ(kt_nr_rndv(fj.a), 0);
}

TEST(grant__every_allocation_failing_in_a_drain_leaves_the_record_for_later)
{
	struct kprog_post p;

	gjob(&fj);
	offer(&fj, 0, 25, 8);
	EXPECT(kt_each_alloc_failure(drain_b, still_new, NULL, -ENOMEM) > 0);
	EXPECT_EQ(kt_src(fj.b, 0)->held, 1);
	ASSERT_OK(kt_recv(fj.b, 0, 5, dst, sizeof(dst), 2, KPROG_POST_BLOCKING, &p));
	EXPECT_CQE(fj.b, 2, LEN, 0);
	EXPECT_CQE(fj.a, 25, LEN, 0);
	EXPECT(kt_check(dst, LEN, 8));
}
