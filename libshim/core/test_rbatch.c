// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native unit test of receives in batches: the queue (rbatch.c) reaches
 * the kernel in order in one KPROG_IOC_RECV_BATCH, a refused entry and
 * the ones after it come back oldest first (before any posted entry's
 * completion runs, so that what a completion posts goes behind them), a
 * call interrupted after some entries goes on from the first not posted,
 * and KP_GUARD (shim.h) posts the queue before the entry's own work while
 * KP_GUARD_QUEUE (MPI_Irecv) leaves it queued. The ioctl is this file's:
 * it logs what reached "the kernel". Last line "N passed, N failed".
 */
#include <errno.h>
#include <string.h>
#include "shim.h"
#include "expect.h"

EXPECT_COUNTERS;
struct kp_state kp;	/* shim.h's guard reads kp.mt only */

#define SLOTS 200

static struct kprog_post posts[SLOTS];	/* slot -> its post; tag = slot */
static int klog[4 * SLOTS], nk;		/* tags in the order the kernel saw them; -1: another ioctl */
static int refused[SLOTS], nref, posted[SLOTS], nposted, first_posted_after;
static int calls, refuse_at = -1, refuse_err, intr_after = -1;

static int mock_ioctl(int fd, unsigned long req, void *arg)
{
	struct kprog_recv_batch *b = arg;
	struct kprog_post *p = (struct kprog_post *)(uintptr_t)b->posts;
	uint32_t i;

	(void)fd;
	calls++;
	if (req != KPROG_IOC_RECV_BATCH || !b->count || b->count > KPROG_RECV_BATCH_MAX) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < b->count; i++) {
		if (p[i].tag == refuse_at) {
			b->posted = i;
			errno = refuse_err;
			return -1;
		}
		if ((int)i == intr_after) {
			intr_after = -1;
			b->posted = i;
			errno = EINTR;
			return -1;
		}
		klog[nk++] = p[i].tag;
		p[i].done = p[i].tag % 3 == 0;	/* some found their message there */
		p[i].cqe.tag = p[i].tag;
		p[i].cqe.req_id = p[i].req_id;
	}
	b->posted = b->count;
	return 0;
}

static const struct kprog_post *post_of(uint32_t slot)
{
	return &posts[slot];
}

static void on_refused(uint32_t slot)
{
	refused[nref++] = slot;
}

static int post_in_completion = -1;

static void on_posted(uint32_t slot, const struct kprog_post *p)
{
	EXPECT(p->cqe.tag == (int)slot && p->cqe.req_id == posts[slot].req_id,
	       "slot %u gets its own result", slot);
	EXPECT(p->done == (slot % 3 == 0), "slot %u: done written back", slot);
	if (nref && !nposted)
		first_posted_after = nref;
	posted[nposted++] = slot;
	if (post_in_completion >= 0) {	/* a completion that posts again */
		kp_rb_add(post_in_completion);
		post_in_completion = -1;
	}
}

static const struct kp_rb_ops ops = {
	.ioctl = mock_ioctl, .post = post_of, .refused = on_refused, .posted = on_posted,
};

static void reset(void)
{
	nk = nref = nposted = calls = first_posted_after = 0;
	refuse_at = intr_after = -1;
}

static bool in_order(const int *v, int n, int first)
{
	int i;

	for (i = 0; i < n; i++)
		if (v[i] != first + i)
			return false;
	return true;
}

static void test_order(void)
{
	int i, full = 0;

	reset();
	EXPECT(kp_rb_flush(3, &ops) == 0 && calls == 0, "an empty queue makes no call");
	for (i = 0; i < 5; i++)
		full += kp_rb_add(10 + i);
	EXPECT(!full && kp_rb_n == 5, "five queued, not full");
	EXPECT(kp_rb_flush(3, &ops) == 0, "all posted");
	EXPECT(calls == 1, "one system call: %d", calls);
	EXPECT(nk == 5 && in_order(klog, 5, 10), "the kernel saw them in order");
	EXPECT(nposted == 5 && in_order(posted, 5, 10) && nref == 0, "each posted, in order");
	EXPECT(kp_rb_n == 0, "queue empty after the flush");

	reset();
	for (i = 0; i < KP_RB_MAX - 1; i++)
		EXPECT(!kp_rb_add(i), "entry %d does not fill it", i);
	EXPECT(kp_rb_add(KP_RB_MAX - 1), "entry %d fills it", KP_RB_MAX - 1);
	EXPECT(kp_rb_flush(3, &ops) == 0 && calls == 1 && nk == KP_RB_MAX &&
	       in_order(klog, KP_RB_MAX, 0), "a full queue in one call, in order");
}

/* A fresh mock with n entries queued: first, first + 1, ... */
static void queue_fresh(int n, uint32_t first)
{
	int i;

	reset();
	for (i = 0; i < n; i++)
		kp_rb_add(first + i);
}

static void test_refused(void)
{
	queue_fresh(6, 20);
	refuse_at = 22;
	refuse_err = ENOBUFS;
	EXPECT(kp_rb_flush(3, &ops) == ENOBUFS, "the refused entry's errno");
	EXPECT(nk == 2 && in_order(klog, 2, 20), "the kernel saw only the two before it");
	EXPECT(nref == 4 && in_order(refused, 4, 22), "the refused one and all after it, in order");
	EXPECT(nposted == 2 && in_order(posted, 2, 20), "the two before it posted");
	EXPECT(first_posted_after == 4, "refused before any completion ran");
	EXPECT(kp_rb_n == 0, "nothing left queued");

	queue_fresh(3, 30);
	refuse_at = 30;
	refuse_err = EINVAL;
	EXPECT(kp_rb_flush(3, &ops) == EINVAL && nk == 0 && nposted == 0 &&
	       nref == 3 && in_order(refused, 3, 30), "refused at the first: all back, in order");
}

static void test_interrupted(void)
{
	queue_fresh(7, 40);
	intr_after = 3;
	EXPECT(kp_rb_flush(3, &ops) == 0, "EINTR is no failure");
	EXPECT(calls == 2, "again from the first not posted: %d calls", calls);
	EXPECT(nk == 7 && in_order(klog, 7, 40), "each entry posted once, in order");
	EXPECT(nposted == 7 && nref == 0, "all posted");
}

static void test_completion_posts(void)
{
	reset();
	kp_rb_add(50);
	kp_rb_add(51);
	post_in_completion = 52;
	EXPECT(kp_rb_flush(3, &ops) == 0 && nk == 2, "the two queued posted");
	EXPECT(kp_rb_n == 1, "what a completion queued waits for the next flush");
	EXPECT(kp_rb_flush(3, &ops) == 0 && nk == 3 && klog[2] == 52, "then goes after them");
}

/* ---- the guard: the shim's flush (req.c) against this file's kernel ---- */

static void mock_flusher(void)
{
	kp_rb_flush(3, &ops);
}

static void entry_irecv(int slot)	/* MPI_Irecv's shape */
{
	KP_GUARD_QUEUE();
	kp_rb_add(slot);
}

static void entry_other(void)	/* any other entry: its own ioctl after the guard */
{
	KP_GUARD();
	klog[nk++] = -1;
}

static void test_guard(int mt)
{
	int i;

	reset();
	kp_rb_flusher = mock_flusher;
	kp.mt = mt;
	for (i = 0; i < 3; i++)
		entry_irecv(60 + i);
	EXPECT(nk == 0 && kp_rb_n == 3, "MPI_Irecv's guard leaves the queue (mt %d)", mt);
	entry_other();
	EXPECT(nk == 4 && in_order(klog, 3, 60) && klog[3] == -1,
	       "another entry's guard posted the queue first, in order (mt %d)", mt);
	EXPECT(calls == 1 && kp_rb_n == 0, "in one call (mt %d)", mt);
	entry_other();
	EXPECT(calls == 1 && nk == 5, "an empty queue costs no call (mt %d)", mt);
	kp.mt = false;
}

/*
 * The wait's yield rule (shim.h kp_req_wait_yields()): with
 * KPROG_SMALL_RECV_YIELD off, only an active small receive posted in the
 * kernel from another node stops yielding; everything else keeps
 * kp_req_kernel_work()'s answer.
 */
static void test_wait_yields(void)
{
	struct kp_req r = { .kind = KR_RECV, .state = RS_ACTIVE, .in_kernel = true, .cap = 8 };

	EXPECT(kp_req_wait_yields(&r, true, true), "setting on: a small remote receive yields");
	EXPECT(!kp_req_wait_yields(&r, false, true), "setting off: a small remote receive does not");
	EXPECT(kp_req_wait_yields(&r, false, false), "off, but a source of this node: yields");
	r.cap = KP_SOFTIRQ_RECV;
	EXPECT(!kp_req_wait_yields(&r, false, true), "off: %u bytes still softirq's", KP_SOFTIRQ_RECV);
	r.cap = KP_SOFTIRQ_RECV + 1;
	EXPECT(kp_req_wait_yields(&r, false, true), "off: a larger receive (a worker may copy) yields");
	r.cap = 8;
	r.state = RS_DEFERRED;
	EXPECT(kp_req_wait_yields(&r, false, true), "off: a receive not yet posted yields");
	r.state = RS_ACTIVE;
	r.in_kernel = false;
	EXPECT(!kp_req_wait_yields(&r, false, true) && !kp_req_wait_yields(&r, true, true),
	       "a receive in user space never yields for the kernel");
	r = (struct kp_req){ .kind = KR_SEND, .state = RS_ACTIVE, .cap = 8 };
	EXPECT(kp_req_wait_yields(&r, false, true), "off: an active send still yields");
}

int main(void)
{
	unsigned int i;

	for (i = 0; i < SLOTS; i++)
		posts[i] = (struct kprog_post){ .tag = i, .req_id = 1000 + i, .peer = 1 };
	test_order();
	test_refused();
	test_interrupted();
	test_completion_posts();
	test_guard(0);
	test_guard(1);
	test_wait_yields();
	return EXPECT_SUMMARY();
}
