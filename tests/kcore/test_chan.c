// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/chan.c: the fast-path channels shared with user space. The test
 * plays both processes: it writes records as the sending process does
 * (kt_chan_put), takes them as the receiving one does, and writes garbage
 * into the shared memory where a broken or hostile process could. Every
 * record the kernel reads is inside the vmalloc_user() region, so
 * AddressSanitizer catches any read outside it.
 */
#include <linux/mm.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "chan.h"
#include "ktest.h"
#include "fake_xport.h"

#define ANY_SRC KPROG_ANY_SOURCE
#define ANY_TAG KPROG_ANY_TAG
#define RB	65536			/* chan_bytes: one direction's ring */
#define SHARED	(VM_READ | VM_WRITE | VM_SHARED | VM_MAYSHARE)

/* a = rank 0, b = rank 1, the channel opened and mapped by both. */
static void chan_pair(struct kt_ep **a, struct kt_ep **b, struct kt_chan *ca,
		      struct kt_chan *cb)
{
	kt_pair(a, b);
	if (kt_chan_open(*a, 1, ca) || kt_chan_open(*b, 0, cb))
		kt_fatal(__FILE__, __LINE__, "channel open");
}

/* @n records from a to b: tag first + i, payload "rec<i>" */
static void put_recs(struct kt_chan *c, int first, int n)
{
	char buf[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "rec%d", first + i);
		if (kt_chan_put(c, 0, first + i, buf, strlen(buf) + 1))
			kt_fatal(__FILE__, __LINE__, "channel full");
	}
}

/* b receives the next message from @src (any tag) at once. */
static void expect_next_from(struct kt_ep *b, s32 src, int tag)
{
	char r[16] = {}, want[16];
	struct kprog_post p;

	snprintf(want, sizeof(want), "rec%d", tag);
	if (!EXPECT_OK(kt_recv(b, src, ANY_TAG, r, 16, 1000 + tag, 0, &p)))
		return;
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.tag, tag);
	if (!EXPECT(!strcmp(r, want)))
		kt_fail(__FILE__, __LINE__, "got \"%s\", want \"%s\"", r, want);
}

static void expect_next(struct kt_ep *b, int tag)
{
	expect_next_from(b, 0, tag);
}

static bool broken(struct kt_ep *a)
{
	return mock_printk_take("malformed, not used any more");
}

/* ---------------------------------------------------------------------
 * Opening and mapping
 */
TEST(chan__open_creates_the_pair_channel_and_publishes_it_to_both)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	u32 eva, evb;

	kt_pair(&a, &b);
	eva = kt_events(a);
	evb = kt_events(b);
	ASSERT_OK(kt_chan_open(a, 1, &ca));
	EXPECT_EQ(ca.co.offset, KPROG_CHAN_MMAP_OFFSET(1));
	EXPECT_EQ(ca.co.bytes, KPROG_CHAN_DATA_OFFSET + 2 * RB);
	EXPECT_EQ(ca.co.ring_bytes, RB);
	EXPECT_EQ(ca.co.max_msg, 8192);
	EXPECT_EQ(ca.co.tx, 0);
	EXPECT_EQ(kt_src(a, 1)->flags, KPROG_SRC_CHAN);
	EXPECT_EQ(kt_src(b, 0)->flags, KPROG_SRC_CHAN);
	EXPECT_EQ(a->ring->chan_gen, 1);
	EXPECT_EQ(b->ring->chan_gen, 1);
	EXPECT_EQ(kt_events(a), eva + 1);
	EXPECT_EQ(kt_events(b), evb + 1);
	EXPECT_EQ(a->ep->nr_chans, 1);				/* internal */
	/* the other side finds it */
	ASSERT_OK(kt_chan_open(b, 0, &cb));
	EXPECT_EQ(cb.co.offset, KPROG_CHAN_MMAP_OFFSET(0));
	EXPECT_EQ(cb.co.tx, 1);
	EXPECT(cb.mem == ca.mem);
	EXPECT(cb.rx == ca.tx);
	EXPECT_EQ(b->ring->chan_gen, 1);
	EXPECT_EQ(b->ep->nr_chans, 1);
	/* and opening again is the same channel */
	ASSERT_OK(kt_chan_open(a, 1, &cb));
	EXPECT(cb.mem == ca.mem);
}

TEST(chan__largest_message_leaves_room_for_two_in_a_small_ring)
{
	struct kt_ep *a, *b;
	struct kt_chan ca;

	kprog_chan_bytes = 4096;
	kprog_fast_limit = 1 << 20;
	kt_pair(&a, &b);
	ASSERT_OK(kt_chan_open(a, 1, &ca));
	EXPECT_EQ(ca.co.max_msg, 2048 - 64);
	EXPECT_EQ(2 * KPROG_CHAN_REC_SIZE(ca.co.max_msg), 4096);
}

TEST(chan__open_errors)
{
	struct kt_ep *v[3], *d = kt_open();
	struct kprog_chan_open co = { .peer = 1, .flags = 1 };
	struct kt_chan c;
	static const u32 map[3] = { 0, 0, 1 };
	u64 key = kt_new_key();

	kt_job(v, 3);
	EXPECT_ERR(kt_ioctl(v[0], KPROG_IOC_CHAN_OPEN, &co), -EINVAL);
	EXPECT_ERR(kt_chan_open(v[0], 0, &c), -EINVAL);		/* self */
	EXPECT_ERR(kt_chan_open(v[0], 3, &c), -EINVAL);
	kt_close(v[2]);
	EXPECT_ERR(kt_chan_open(v[0], 2, &c), -ENOTCONN);	/* left */
	kprog_fast_limit = 0;
	EXPECT_ERR(kt_chan_open(v[0], 1, &c), -EOPNOTSUPP);
	kprog_fast_limit = 8192;
	/* a rank on another node */
	kt_fx_install();
	ASSERT_OK(kt_join_map(d, key, 0, 3, map, 2, 0));
	EXPECT_ERR(kt_chan_open(d, 2, &c), -ENOTCONN);
	EXPECT_ERR(kt_chan_open(d, 1, &c), -ENOTCONN);		/* not yet */
	EXPECT_EQ(d->ep->nr_chans, 0);
}

TEST(chan__max_chans_reached_on_either_side_is_enospc)
{
	struct kt_ep *v[3];
	struct kt_chan c;

	kprog_max_chans = 1;
	kt_job(v, 3);
	ASSERT_OK(kt_chan_open(v[0], 1, &c));
	EXPECT_ERR(kt_chan_open(v[0], 2, &c), -ENOSPC);	/* this side */
	EXPECT_ERR(kt_chan_open(v[2], 1, &c), -ENOSPC);	/* the peer's */
	EXPECT_EQ(v[2]->ep->nr_chans, 0);
	EXPECT_OK(kt_chan_open(v[1], 0, &c));		/* the existing one */
}

TEST(chan__channel_memory_of_the_node_is_bounded_then_enospc)
{
	struct kt_ep *v[8][2];
	struct kt_chan c;
	int i;

	/*
	 * 1 MiB for the node: seven channels of 4 KiB + 2 * 64 KiB, one per
	 * job of two ranks (an endpoint's share, 8 KiB, is less than one
	 * channel: it still gets one).
	 */
	kprog_chan_mem_mib = 1;
	kprog_chan_bytes = 65536;
	for (i = 0; i < 8; i++)
		kt_job(v[i], 2);
	for (i = 0; i < 7; i++)
		ASSERT_OK(kt_chan_open(v[i][0], 1, &c));
	/* the eighth, of any job, would pass the node's bound */
	EXPECT_ERR(kt_chan_open(v[7][0], 1, &c), -ENOSPC);
	EXPECT_EQ(v[7][0]->ep->nr_chans, 0);
	/* an existing channel costs nothing more */
	EXPECT_OK(kt_chan_open(v[3][1], 0, &c));
	/* a channel both of whose sides closed gives its memory back */
	kt_close(v[0][0]);
	kt_close(v[0][1]);
	EXPECT_OK(kt_chan_open(v[7][0], 1, &c));
}

TEST(chan__an_endpoint_holds_its_share_of_the_node_then_enospc)
{
	struct kt_ep *v[6];
	struct kt_chan c;
	u32 i;

	/* 4 MiB for the node in 8 shares: 512 KiB, three channels of 132 KiB */
	kprog_chan_mem_mib = 4;
	kprog_chan_shares = 8;
	kprog_chan_bytes = 65536;
	kt_job(v, 6);
	for (i = 1; i <= 3; i++)
		ASSERT_OK(kt_chan_open(v[0], i, &c));
	EXPECT_ERR(kt_chan_open(v[0], 4, &c), -ENOSPC);	/* this side's */
	EXPECT_ERR(kt_chan_open(v[5], 0, &c), -ENOSPC);	/* the peer's */
	EXPECT_EQ(v[0]->ep->nr_chans, 3);
	EXPECT_EQ(v[5]->ep->nr_chans, 0);
	EXPECT_OK(kt_chan_open(v[4], 5, &c));		/* others have room */
	EXPECT_OK(kt_chan_open(v[2], 0, &c));		/* an existing one */
	/* a closed channel still counts until its memory is freed */
	kt_close(v[1]);
	EXPECT_ERR(kt_chan_open(v[0], 4, &c), -ENOSPC);
}

TEST(chan__one_job_holds_at_most_half_of_the_node)
{
	struct kt_ep *v[5], *w[2];
	struct kt_chan c;
	int i, j, made = 0, err;

	/* 1 MiB: seven channels on the node, three for one job */
	kprog_chan_mem_mib = 1;
	kprog_chan_shares = 1;
	kprog_chan_bytes = 65536;
	kt_job(v, 5);
	for (i = 0; i < 5; i++)
		for (j = i + 1; j < 5; j++) {
			err = kt_chan_open(v[i], j, &c);
			if (!err)
				made++;
			else
				EXPECT_ERR(err, -ENOSPC);
		}
	EXPECT_EQ(made, 3);
	/* another job of the node still gets its channel */
	kt_job(w, 2);
	EXPECT_OK(kt_chan_open(w[0], 1, &c));
	/* the job's channels, freed, give it room again */
	for (i = 0; i < 5; i++)
		kt_close(v[i]);
	kt_job(v, 5);
	for (i = 1; i <= 3; i++)
		EXPECT_OK(kt_chan_open(v[0], i, &c));
	EXPECT_ERR(kt_chan_open(v[0], 4, &c), -ENOSPC);
}

static struct kt_ep *fa, *fb;

static int open_chan(void *arg)
{
	struct kprog_chan_open co = { .peer = 1 };

	return kt_ioctl(fa, KPROG_IOC_CHAN_OPEN, &co);
}

TEST(chan__every_allocation_failing_in_open_unwinds)
{
	kt_pair(&fa, &fb);
	/* channel, its memory, this side's table entry, the peer's */
	EXPECT_EQ(kt_each_alloc_failure(open_chan, NULL, NULL, -ENOMEM), 4);
	EXPECT_EQ(fa->ep->nr_chans, 1);
	EXPECT_EQ(fb->ep->nr_chans, 1);
	EXPECT_EQ(fb->ring->chan_gen, 1);	/* published once */
}

TEST(chan__a_rank_joined_anew_cannot_reopen_its_predecessors_channel)
{
	struct kt_ep *a, *b, *c = kt_open_as(mock_proc_new(1000));
	struct kt_chan ca, cb, cc;

	chan_pair(&a, &b, &ca, &cb);
	kt_close(b);
	EXPECT_EQ(ca.tx->closed, 1);
	EXPECT_EQ(ca.rx->closed, 1);
	ASSERT_OK(kt_join(c, kprog_ep_job(a->ep)->key, 1, 2));
	EXPECT_ERR(kt_chan_open(c, 0, &cc), -EBUSY);
	/* a still has the old, closed one */
	ASSERT_OK(kt_chan_open(a, 1, &cc));
	EXPECT(cc.mem == ca.mem);
}

TEST(chan__mmap_checks_the_offset_length_and_sharing)
{
	struct kt_ep *a, *b;
	struct kt_chan ca;
	const unsigned long step = KPROG_CHAN_MMAP_OFFSET(0) >> PAGE_SHIFT;
	void *mem;

	kt_pair(&a, &b);
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, 2 * step, SHARED, NULL), -ENOENT);
	ASSERT_OK(kt_chan_open(a, 1, &ca));
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, 2 * step + 1, SHARED, NULL), -EINVAL);
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, step - 1, SHARED, NULL), -EINVAL);
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, 3 * step, SHARED, NULL), -EINVAL);
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, 2 * step, VM_READ | VM_WRITE, NULL),
		   -EINVAL);
	EXPECT_ERR(kt_mmap(a, ca.co.bytes + PAGE_SIZE, 2 * step, SHARED, NULL),
		   -EINVAL);
	mock_remap_errors = 1;
	EXPECT_ERR(kt_mmap(a, PAGE_SIZE, 2 * step, SHARED, NULL), -EAGAIN);
	EXPECT_OK(kt_mmap(a, PAGE_SIZE, 2 * step, VM_READ | VM_SHARED, &mem));
	EXPECT(mem == ca.mem);
	/* b's own offset names rank 0 */
	EXPECT_ERR(kt_mmap(b, PAGE_SIZE, 2 * step, SHARED, NULL), -ENOENT);
	EXPECT_OK(kt_mmap(b, PAGE_SIZE, step, SHARED, &mem));
	EXPECT(mem == ca.mem);
}

/* ---------------------------------------------------------------------
 * Draining into the kernel's matching
 */
TEST(chan__drain_moves_records_into_the_matching_in_record_order)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	u32 ev;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 3);
	ev = kt_events(b);
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(kt_src(b, 0)->held, 3);
	EXPECT_EQ(b->ring->unexp, 3);
	EXPECT_EQ(kt_events(b), ev + 3);
	EXPECT_EQ(kt_chan_rec(&ca, true, 0)->state, KPROG_REC_DONE);
	EXPECT_EQ(ca.tx->cons, ca.tx->prod);	/* all released */
	EXPECT_EQ(b->ep->eager_bytes, 3 * (5 + KPROG_EAGER_OVERHEAD));
	expect_next(b, 1);
	expect_next(b, 2);
	expect_next(b, 3);
	/* drained twice: nothing new */
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(b->ring->unexp, 0);
}

TEST(chan__drained_record_matches_a_posted_receive)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	char r[16] = {};
	struct kprog_post p;

	chan_pair(&a, &b, &ca, &cb);
	ASSERT_OK(kt_recv(b, 0, 7, r, 16, 1, 0, &p));
	EXPECT_EQ(p.done, 0);
	put_recs(&ca, 7, 1);
	EXPECT_OK(kt_chan_drain(b, ANY_SRC));
	EXPECT_CQE(b, 1, 5, 0);
	EXPECT(!strcmp(r, "rec7"));
	EXPECT_EQ(kt_src(b, 0)->held, 0);
}

TEST(chan__receive_and_probe_drain_the_channels_they_could_match)
{
	struct kt_ep *v[3];
	struct kt_chan c1, c2, c;
	struct kprog_probe pr = { .source = ANY_SRC, .tag = 9 };
	char r[16];
	struct kprog_post p;

	kt_job(v, 3);
	ASSERT_OK(kt_chan_open(v[1], 0, &c1));
	ASSERT_OK(kt_chan_open(v[2], 0, &c2));
	ASSERT_OK(kt_chan_open(v[0], 1, &c));
	put_recs(&c1, 5, 1);
	put_recs(&c2, 9, 1);
	/* a receive from rank 1 drains that channel only */
	ASSERT_OK(kt_recv(v[0], 1, ANY_TAG, r, 16, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.tag, 5);
	EXPECT_EQ(kt_src(v[0], 2)->held, 0);
	/* a probe of any source drains them all */
	ASSERT_OK(kt_probe(v[0], &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.out_source, 2);
	EXPECT_EQ(kt_src(v[0], 2)->held, 1);
	/* a receive by message id drains nothing */
	put_recs(&c1, 6, 1);
	EXPECT_ERR(kt_ioctl(v[0], KPROG_IOC_RECV, &(struct kprog_post){
		.flags = KPROG_RECV_MESSAGE, .msg_id = 1 }), -ENOENT);
	EXPECT_EQ(kt_src(v[0], 1)->held, 0);
}

TEST(chan__send_through_the_kernel_drains_its_channel_first)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	char s[16] = "kernel", r[16];
	struct kprog_post p;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 2);
	ASSERT_OK(kt_send(a, 1, 3, s, 7, 1, 0, &p));	/* would overtake */
	EXPECT_EQ(kt_src(b, 0)->held, 3);
	expect_next(b, 1);
	expect_next(b, 2);
	ASSERT_OK(kt_recv(b, 0, ANY_TAG, r, 16, 2, 0, &p));
	EXPECT(!strcmp(r, "kernel"));
	/* b's own channel to a is not touched by a's sends */
	put_recs(&cb, 4, 1);
	ASSERT_OK(kt_send(a, 1, 3, s, 7, 3, 0, &p));
	EXPECT_EQ(kt_chan_rec(&cb, true, 0)->state, KPROG_REC_NEW);
}

/*
 * The receiving process may be between finding a NEW record and taking it
 * (NEW -> TAKEN) when its sender's post through the kernel drains the
 * channel. Had that drain released the record, the sender could write a
 * new NEW record in its place, and the receiver's take would get that one
 * instead (the CI hang of `many`, a message in a receive whose tag it did
 * not have): a drain for the sender leaves the release to the receiver.
 */
TEST(chan__a_senders_drain_leaves_the_release_to_the_receiver)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	struct kprog_chan_rec *found;
	int n = 0;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 1);
	found = kt_chan_rec(&ca, true, 0);	/* what b is about to take */
	ASSERT_OK(kt_send(a, 1, 9, "k", 2, 2, 0, NULL));
	EXPECT_EQ(found->state, KPROG_REC_DONE);
	EXPECT_EQ(kt_src(b, 0)->held, 2);
	EXPECT_EQ(ca.tx->cons, 0);		/* not released */
	/* so the producer fills the ring without writing over it */
	while (!kt_chan_put(&ca, 0, 100 + n, "new", 4))
		n++;
	EXPECT_EQ(n, RB / KPROG_CHAN_REC_ALIGN - 1);
	EXPECT_EQ(found->state, KPROG_REC_DONE);	/* b's take fails */
	EXPECT_EQ(found->tag, 1);
	/* another post of a drains the new records, still without a release */
	ASSERT_OK(kt_send(a, 1, 9, "k", 2, 3, 0, NULL));
	EXPECT_EQ(kt_src(b, 0)->held, 3 + n);
	EXPECT_EQ(ca.tx->cons, 0);
	/* b's own drain releases them */
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(ca.tx->cons, ca.tx->prod);
	expect_next(b, 1);
}

TEST(chan__drained_messages_are_never_refused_for_quota)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	static char big[4096];

	kprog_eager_quota = 2048;
	chan_pair(&a, &b, &ca, &cb);
	ASSERT_OK(kt_chan_put(&ca, 0, 1, big, 4096));
	ASSERT_OK(kt_chan_put(&ca, 0, 2, big, 4096));
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(kt_src(b, 0)->held, 2);
	EXPECT(b->ep->eager_bytes > kprog_eager_quota);		/* internal */
}

/* What the record at position 0 of @arg's tx ring looks like, per alloc. */
static u32 seen_states[8];
static int nseen;

static void record_state(void *arg)
{
	struct kt_chan *c = arg;

	if (nseen < ARRAY_SIZE(seen_states))
		seen_states[nseen++] = kt_chan_rec(c, true, 0)->state;
}

TEST(chan__record_is_ktaken_while_matched_then_done)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	char r[16];

	chan_pair(&a, &b, &ca, &cb);
	ASSERT_OK(kt_recv(b, 0, 1, r, 16, 1, 0, NULL));
	put_recs(&ca, 1, 1);
	nseen = 0;
	mock_alloc_hook = record_state;
	mock_alloc_hook_arg = &ca;
	EXPECT_OK(kt_chan_drain(b, 0));
	mock_alloc_hook = NULL;
	/* message, payload: still NEW; the delivery's transfer: KTAKEN */
	ASSERT_EQ(nseen, 3);
	EXPECT_EQ(seen_states[0], KPROG_REC_NEW);
	EXPECT_EQ(seen_states[1], KPROG_REC_NEW);
	EXPECT_EQ(seen_states[2], KPROG_REC_KTAKEN);
	EXPECT_EQ(kt_chan_rec(&ca, true, 0)->state, KPROG_REC_DONE);
	EXPECT_CQE(b, 1, 5, 0);
}

static void process_takes_it(void *arg)
{
	struct kt_chan *c = arg;

	kt_chan_rec(c, true, 0)->state = KPROG_REC_TAKEN;
	mock_alloc_hook = NULL;
}

TEST(chan__record_taken_by_the_process_meanwhile_is_left_to_it)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	long live;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 1);
	live = mock_live_allocs;
	mock_alloc_hook = process_takes_it;
	mock_alloc_hook_arg = &ca;
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(kt_src(b, 0)->held, 0);
	EXPECT_EQ(kt_chan_rec(&ca, true, 0)->state, KPROG_REC_TAKEN);
	EXPECT_EQ(ca.tx->cons, 0);		/* not done yet */
	EXPECT_EQ(mock_live_allocs, live);
	/* the process is done with it: the next drain releases it */
	kt_chan_rec(&ca, true, 0)->state = KPROG_REC_DONE;
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(ca.tx->cons, ca.tx->prod);
}

TEST(chan__release_moves_cons_over_done_and_pad_records_only)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	static char pay[4096];
	u64 cons;
	int i;

	chan_pair(&a, &b, &ca, &cb);
	/* 15 records of 4 KiB fill 61440 bytes; 4096 are left */
	for (i = 0; i < 15; i++)
		ASSERT_OK(kt_chan_put(&ca, 0, i, pay, 4072));
	/* the process takes and finishes the first two, takes the third */
	kt_chan_rec(&ca, true, 0)->state = KPROG_REC_DONE;
	kt_chan_rec(&ca, true, 4096)->state = KPROG_REC_DONE;
	kt_chan_rec(&ca, true, 8192)->state = KPROG_REC_TAKEN;
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(kt_src(b, 0)->held, 12);	/* it skipped the taken ones */
	EXPECT_EQ(ca.tx->cons, 8192);		/* stopped at TAKEN */
	kt_chan_rec(&ca, true, 8192)->state = KPROG_REC_DONE;
	/* a record that does not fit at the end: PAD, then from 0 */
	ASSERT_OK(kt_chan_put(&ca, 0, 99, pay, 4096));
	cons = ca.tx->prod;
	EXPECT_EQ(cons, RB + KPROG_CHAN_REC_SIZE(4096));
	EXPECT_EQ(kt_chan_rec(&ca, true, 61440)->flags, KPROG_REC_PAD);
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT_EQ(ca.tx->cons, cons);		/* over the PAD too */
	EXPECT_EQ(kt_src(b, 0)->held, 13);
}

TEST(chan__records_keep_flowing_as_the_ring_wraps_many_times)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	static char pay[1000], r[1000];
	struct kprog_post p;
	int i;

	chan_pair(&a, &b, &ca, &cb);
	for (i = 0; i < 500; i++) {
		kt_fill(pay, 1000, i);
		ASSERT_OK(kt_chan_put(&ca, 0, i, pay, 1000));
		ASSERT_OK(kt_recv(b, 0, ANY_TAG, r, 1000, i, 0, &p));
		ASSERT_EQ(p.done, 1);
		EXPECT_EQ(p.cqe.tag, i);
		EXPECT(kt_check(r, 1000, i));
	}
	EXPECT(ca.tx->prod > 7 * RB);
	EXPECT_EQ(ca.tx->cons, ca.tx->prod);
	EXPECT_EQ(ca.tx->msgs, 500);
}

static int drain_b(void *arg)
{
	return kt_chan_drain(fb, 0);
}

TEST(chan__drain_without_memory_leaves_the_records_for_later)
{
	struct kt_chan ca, cb;

	chan_pair(&fa, &fb, &ca, &cb);
	put_recs(&ca, 1, 1);
	/* the message, then its payload */
	EXPECT_EQ(kt_each_alloc_failure(drain_b, NULL, NULL, -ENOMEM), 2);
	EXPECT_EQ(kt_src(fb, 0)->held, 1);
	expect_next(fb, 1);
	/* the first of two gets through, the second waits */
	put_recs(&ca, 2, 2);
	mock_kmalloc_errors = 0x4;
	EXPECT_ERR(kt_chan_drain(fb, 0), -ENOMEM);
	EXPECT_EQ(kt_src(fb, 0)->held, 1);
	EXPECT_OK(kt_chan_drain(fb, ANY_SRC));
	expect_next(fb, 2);
	expect_next(fb, 2 + 1);
	/* a receive or probe that cannot drain fails with it */
	put_recs(&ca, 4, 1);
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kt_recv(fb, 0, 0, NULL, 0, 1, 0, NULL), -ENOMEM);
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kt_probe(fb, &(struct kprog_probe){ .source = ANY_SRC }),
		   -ENOMEM);
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kt_send(fa, 1, 0, "x", 1, 2, 0, NULL), -ENOMEM);
	expect_next(fb, 4);
}

TEST(chan__drain_of_a_peer_without_a_channel_or_with_none_at_all)
{
	struct kt_ep *v[3];
	struct kt_chan c;

	kt_job(v, 3);
	EXPECT_OK(kt_chan_drain(v[0], ANY_SRC));	/* no channel at all */
	ASSERT_OK(kt_chan_open(v[0], 1, &c));
	EXPECT_OK(kt_chan_drain(v[0], 2));		/* none with rank 2 */
	EXPECT_OK(kt_send(v[0], 2, 0, "x", 1, 1, 0, NULL));
}

/* ---------------------------------------------------------------------
 * Departures
 */
TEST(chan__records_of_a_departed_sender_stay_deliverable)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	u32 gen, ev;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 2);
	gen = b->ring->chan_gen;
	ev = kt_events(b);
	kt_close(a);
	EXPECT_EQ(cb.rx->closed, 1);
	EXPECT_EQ(cb.tx->closed, 1);
	EXPECT_EQ(b->ring->chan_gen, gen + 1);
	EXPECT(kt_events(b) > ev);
	expect_next(b, 1);
	expect_next(b, 2);
}

TEST(chan__record_drained_into_a_departing_receiver_is_dropped)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	long live;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 1);
	live = mock_live_allocs;
	b->ep->dead = true;		/* internal: its departure began */
	EXPECT_ERR(kt_send(a, 1, 0, "x", 1, 1, 0, NULL), -ECONNRESET);
	EXPECT_EQ(kt_chan_rec(&ca, true, 0)->state, KPROG_REC_DONE);
	EXPECT_EQ(mock_live_allocs, live);
	b->ep->dead = false;
}

/* ---------------------------------------------------------------------
 * Garbage in the shared memory
 *
 * Each case runs on both directions: 0 (rank 0 to rank 1, the first data
 * ring) and 1 (rank 1 to rank 0, the last ring of the region: past it is
 * no memory, so AddressSanitizer reports any read beyond the region).
 */
struct gpair {
	struct kt_ep *s, *r;		/* the sender, the receiver */
	struct kt_chan cs, cr;		/* their views of the channel */
	u32 rs, rr;			/* their ranks */
};

static void gpair(struct gpair *g, int dir)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;

	chan_pair(&a, &b, &ca, &cb);
	g->s = dir ? b : a;
	g->r = dir ? a : b;
	g->cs = dir ? cb : ca;
	g->cr = dir ? ca : cb;
	g->rs = g->s->ep->rank;
	g->rr = g->r->ep->rank;
}

/* The receiver drains: it must stop using that direction, and only it. */
static void expect_broken(struct gpair *g)
{
	char r[16];
	struct kprog_post p;

	EXPECT_OK(kt_chan_drain(g->r, g->rs));
	EXPECT(broken(g->r));
	EXPECT_EQ(kt_src(g->r, g->rs)->held, 0);
	EXPECT_OK(kt_chan_drain(g->r, g->rs));	/* no second message */
	EXPECT(!mock_printk_buf[0]);
	/* the other direction is fine */
	put_recs(&g->cr, 5, 1);
	ASSERT_OK(kt_recv(g->s, g->rr, ANY_TAG, r, 16, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT(!strcmp(r, "rec5"));
	/* and messages through the kernel still flow */
	EXPECT_OK(kt_send(g->s, g->rr, 9, "k", 2, 2, 0, NULL));
	ASSERT_OK(kt_recv(g->r, g->rs, 9, r, 16, 3, 0, &p));
	EXPECT_EQ(p.done, 1);
}

TEST(chan__producer_index_too_far_ahead_breaks_the_direction)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);
		g.cs.tx->prod = RB + 64;
		expect_broken(&g);
	}
}

TEST(chan__consumer_index_ahead_of_the_producer_breaks_the_direction)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);
		g.cs.tx->cons = g.cs.tx->prod + 64;	/* prod - cons wraps */
		expect_broken(&g);
	}
}

TEST(chan__misaligned_indices_break_the_direction)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);
		g.cs.tx->cons = 8;
		expect_broken(&g);

		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);
		g.cs.tx->prod = 72;
		expect_broken(&g);
	}
}

TEST(chan__oversized_record_breaks_the_direction)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		put_recs(&g.cs, 1, 2);
		kt_chan_rec(&g.cs, true, 64)->len = 4097;	/* > max_msg */
		EXPECT_OK(kt_chan_drain(g.r, g.rs));
		EXPECT(broken(g.r));
		/* the first one got through */
		EXPECT_EQ(kt_src(g.r, g.rs)->held, 1);
		expect_next_from(g.r, g.rs, 1);

		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);
		kt_chan_rec(&g.cs, true, 0)->len = 0xffffffff;
		expect_broken(&g);
	}
}

TEST(chan__record_claiming_more_than_was_published_breaks_the_direction)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);				/* 64 bytes */
		kt_chan_rec(&g.cs, true, 0)->len = 1000;	/* 1024 */
		expect_broken(&g);
	}
}

TEST(chan__record_crossing_the_end_of_the_ring_breaks_the_direction)
{
	struct kprog_chan_rec *r;
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		/* a producer that wrote its last record across the end */
		gpair(&g, dir);
		g.cs.tx->cons = g.cs.tx->prod = RB - 64;
		r = kt_chan_rec(&g.cs, true, RB - 64);
		*r = (struct kprog_chan_rec){ .len = 4096, .tag = 1 };
		g.cs.tx->prod = RB - 64 + KPROG_CHAN_REC_SIZE(4096);
		expect_broken(&g);

		/* a PAD record larger than what was published */
		gpair(&g, dir);
		g.cs.tx->cons = RB - 128;
		g.cs.tx->prod = RB - 64;
		r = kt_chan_rec(&g.cs, true, RB - 128);
		*r = (struct kprog_chan_rec){ .flags = KPROG_REC_PAD };
		expect_broken(&g);
	}
}

TEST(chan__negative_tag_breaks_the_direction_and_takes_nothing)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		put_recs(&g.cs, 1, 1);
		kt_chan_rec(&g.cs, true, 0)->tag = -5;
		expect_broken(&g);
		EXPECT_EQ(kt_chan_rec(&g.cs, true, 0)->state, KPROG_REC_NEW);
	}
}

TEST(chan__indices_near_the_top_of_64_bits_are_handled_as_distances)
{
	struct gpair g;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		gpair(&g, dir);
		/* the producer started just below 2^64: the indices wrap */
		g.cs.tx->cons = g.cs.tx->prod = -(u64)128;
		put_recs(&g.cs, 1, 3);
		EXPECT(g.cs.tx->prod < 256);
		EXPECT_OK(kt_chan_drain(g.r, g.rs));
		EXPECT(!broken(g.r));
		EXPECT_EQ(g.cs.tx->cons, g.cs.tx->prod);
		expect_next_from(g.r, g.rs, 1);
		expect_next_from(g.r, g.rs, 2);
		expect_next_from(g.r, g.rs, 3);
	}
}

static void rewrite_record(void *arg)
{
	struct kt_chan *c = arg;
	struct kprog_chan_rec *r = kt_chan_rec(c, true, 0);

	/* the process rewrites the header while the kernel allocates */
	r->len = 0xffffffff;
	r->flags = KPROG_REC_PAD;
	c->tx->cons = 8;
	mock_alloc_hook = NULL;
}

TEST(chan__header_rewritten_during_a_drain_is_read_once)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	char r[16];
	struct kprog_post p;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 1);
	mock_alloc_hook = rewrite_record;
	mock_alloc_hook_arg = &ca;
	EXPECT_OK(kt_chan_drain(b, 0));
	/* the snapshot's 5 bytes were copied; release saw garbage, stopped */
	EXPECT_EQ(ca.tx->cons, 8);
	ASSERT_OK(kt_recv(b, 0, 1, r, 16, 1, 0, &p));
	EXPECT_EQ(p.cqe.bytes, 5);
	EXPECT(!strcmp(r, "rec1"));
	EXPECT_OK(kt_chan_drain(b, 0));
	EXPECT(broken(b));
}

/* ---------------------------------------------------------------------
 * Interleavings: the other side closes while a drain allocates
 */
static struct kt_ep *il_me, *il_other;

static void close_other(void *arg)
{
	mock_alloc_hook = NULL;
	kt_close(il_other);
	mock_set_current(il_me->proc);
}

TEST(chan__receiver_closing_during_a_senders_drain_drops_the_record)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;

	chan_pair(&a, &b, &ca, &cb);
	put_recs(&ca, 1, 2);
	il_me = a;
	il_other = b;
	mock_alloc_hook = close_other;
	/* drains its channel first, b leaves during that */
	EXPECT_ERR(kt_send(a, 1, 0, "x", 2, 1, 0, NULL), -ECONNRESET);
	EXPECT_EQ(kt_chan_rec(&ca, true, 0)->state, KPROG_REC_DONE);
	EXPECT_EQ(kt_chan_rec(&ca, true, 64)->state, KPROG_REC_DONE);
	EXPECT_EQ(ca.tx->closed, 1);
}

/*
 * A sender that dies after writing records: receives posted before get
 * them (its close hands them to the kernel first), later ones fail.
 */
TEST(chan__receive_posted_before_the_sender_died_gets_its_record)
{
	struct kt_ep *a, *b;
	struct kt_chan ca, cb;
	struct kprog_post p1, p2;
	struct kprog_cqe c;
	char r1[16] = {}, r2[16] = {};

	chan_pair(&a, &b, &ca, &cb);
	ASSERT_OK(kt_recv(b, 0, 7, r1, 16, 11, 0, &p1));
	ASSERT_OK(kt_recv(b, 0, 7, r2, 16, 12, 0, &p2));
	EXPECT_EQ(p1.done, 0);
	EXPECT_EQ(p2.done, 0);
	put_recs(&ca, 7, 1);
	kt_close(a);
	ASSERT(kt_pop(b, &c));
	EXPECT_EQ(c.req_id, 11);
	EXPECT_EQ(c.error, 0);
	EXPECT(!strcmp(r1, "rec7"));
	ASSERT(kt_pop(b, &c));
	EXPECT_EQ(c.req_id, 12);
	EXPECT_EQ(c.error, -ECONNRESET);
}
