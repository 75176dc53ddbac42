/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog internal structures, shared by the files of the module.
 *
 * Locking, outermost first:
 *   kprog_jobs_mutex   job registry, JOIN and endpoint departure
 *   ep->mlock          the endpoint's matching queues (it as receiver);
 *                      process context only, never two at a time
 *   ep->olock          the endpoint's own operations, overflow list, ring
 *                      (irq-safe: completions may come from any context)
 * job->lock (job->ranks[]) is a leaf taken with no other spinlock held.
 * Operations are never freed under a spinlock (see kprog_op_put()).
 */
#ifndef _KPROG_INTERNAL_H
#define _KPROG_INTERNAL_H

#include <linux/types.h>
#include <linux/bug.h>
#include <linux/lockdep.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/kref.h>
#include <linux/refcount.h>
#include <linux/uidgid.h>
#include <linux/poll.h>
#include <linux/fs.h>
#include <linux/kprog.h>

struct mm_struct;
struct vm_area_struct;
struct file;

/* Module parameters, validated at load. */
extern unsigned int kprog_eager_limit;
extern unsigned int kprog_eager_quota;
extern unsigned int kprog_max_ops;
extern unsigned int kprog_max_iov;
extern unsigned int kprog_max_iov_total;
extern unsigned int kprog_ring_entries;
extern unsigned int kprog_max_job_size;

/* Largest single message. */
#define KPROG_MAX_MSG		((u64)MAX_RW_COUNT)

/*
 * Every buffered eager message is charged this much on top of its payload
 * against the receiver's quota, so that zero-byte messages cannot pile up.
 */
#define KPROG_EAGER_OVERHEAD	256

struct kprog_job {
	struct hlist_node hnode;	/* kprog_jobs, under kprog_jobs_mutex */
	struct kref ref;		/* one per endpoint that ever joined */
	u64 key;
	kuid_t owner;
	bool shared;
	u32 size;
	u32 eager_limit;
	u32 members;			/* under kprog_jobs_mutex */
	spinlock_t lock;		/* ranks[] */
	unsigned long *left;		/* ranks that left; atomic bitops */
	struct kprog_ep **ranks;
};

enum kprog_op_state {
	KPROG_OP_NEW,		/* not yet visible to anybody */
	KPROG_OP_QUEUED,	/* in mep->posted or mep->unexpected */
	KPROG_OP_MPROBED,	/* in mep->mprobed, waiting for its receive */
	KPROG_OP_MATCHED,	/* paired; completes through a transfer */
	KPROG_OP_DONE,		/* withdrawn or completed */
};

enum kprog_op_olist {
	KPROG_OL_NONE,		/* not on an owner list */
	KPROG_OL_ACTIVE,	/* owner->ops: posted, completion pending */
	KPROG_OL_OVERFLOW,	/* owner->overflow: completed, ring was full */
};

/*
 * A posted send or receive. An eager send that completed at post time
 * lives on as the buffered message (owner NULL, kbuf holds the data, its
 * iovec array is freed and uncharged).
 *
 * References: one while on an owner list (or held by the posting ioctl
 * before that), one while on a matching queue of mep, one per transfer.
 */
struct kprog_op {
	refcount_t ref;
	struct kprog_ep *owner;		/* referenced; NULL for eager messages */
	struct kprog_ep *mep;		/* receiving endpoint; referenced */
	struct list_head qnode;		/* under mep->mlock */
	struct list_head onode;		/* under owner->olock */
	struct llist_node fnode;	/* deferred free */
	u8 state;			/* enum kprog_op_state, mep->mlock */
	u8 olist;			/* enum kprog_op_olist, owner->olock */
	bool is_send;
	bool eager;			/* fixed before the op is visible */
	u32 context;
	s32 peer;			/* send: destination; recv: source/ANY */
	s32 tag;			/* recv: tag or ANY */
	s32 src_rank;			/* send: sender's rank */
	u64 req_id;
	u64 msg_id;			/* KPROG_OP_MPROBED only */
	u64 len;
	u64 charge;			/* eager bytes charged at mep */
	struct mm_struct *mm;		/* mmgrab()ed poster's mm */
	void *kbuf;			/* eager payload */
	struct kprog_iov *iov;		/* non-empty segments; none if eager */
	u32 nr_iov;
	u32 iov_charge;			/* entries charged at owner; fixed */
	struct kprog_iov iov_inline;
	struct kprog_cqe cqe;		/* while on owner->overflow */
};

struct kprog_ep {
	struct kref ref;		/* the file, ops, lookups */
	struct kprog_job *job;		/* set once by JOIN (release/acquire) */
	u32 rank;

	/* This endpoint as receiver. */
	spinlock_t mlock;
	bool dead;			/* left the job: no more matching */
	struct list_head posted;	/* receives, in post order */
	struct list_head unexpected;	/* sends, in arrival order */
	struct list_head mprobed;	/* sends taken by a dequeuing probe */
	u64 eager_bytes;		/* charged by buffered eager messages */
	u32 unexp_seq;			/* bumped on arrivals and peer departures */

	/* This endpoint as owner of operations. */
	spinlock_t olock;
	bool closed;			/* completions are dropped */
	struct list_head ops;		/* KPROG_OL_ACTIVE */
	struct list_head overflow;	/* KPROG_OL_OVERFLOW */
	u32 nr_ops;			/* charged ops, <= kprog_max_ops */
	u32 iov_total;			/* their iov_charge, <= kprog_max_iov_total */
	atomic_t xfers;			/* transfers that may touch our memory */

	/* Completion ring, allocated by JOIN. */
	void *ring;
	struct kprog_ring_hdr *hdr;
	struct kprog_cqe *cqes;
	u64 ring_bytes;
	u32 ring_entries;
	u32 tail;			/* kernel copy, never read back */
	wait_queue_head_t wq;		/* ring, arrivals, departures */
};

/* ep.c */
struct kprog_ep *kprog_ep_alloc(void);
void kprog_ep_put(struct kprog_ep *ep);

/**
 * kprog_ep_get() - take a reference on an endpoint
 * @ep: endpoint already referenced by the caller or protected by a lock
 */
static inline void kprog_ep_get(struct kprog_ep *ep)
{
	kref_get(&ep->ref);
}

/**
 * kprog_ep_job() - the endpoint's job, or NULL before JOIN
 * @ep: endpoint
 */
static inline struct kprog_job *kprog_ep_job(struct kprog_ep *ep)
{
	/* Pairs with the release in kprog_job_join(). */
	return smp_load_acquire(&ep->job);
}

struct kprog_op *kprog_op_create(struct kprog_ep *ep,
				 const struct kprog_post *post, bool is_send);
void kprog_op_put(struct kprog_op *op);
void kprog_op_uncharge(struct kprog_op *op);

/**
 * kprog_op_release_slot() - return the max_ops slot and iovec entries of @op
 * @ep: its owner, olock held
 * @op: operation leaving the owner's lists (or never put on them)
 *
 * Exactly once per op that kprog_op_create() returned.
 */
static inline void kprog_op_release_slot(struct kprog_ep *ep,
					 struct kprog_op *op)
{
	lockdep_assert_held(&ep->olock);
	ep->nr_ops--;
	WARN_ON_ONCE(ep->iov_total < op->iov_charge);
	ep->iov_total -= op->iov_charge;
}

void kprog_op_activate(struct kprog_op *op);
int kprog_op_copy_in(struct kprog_op *op);
int kprog_ep_init(void);
void kprog_ep_exit(void);

/* job.c */
int kprog_job_join(struct kprog_ep *ep, struct kprog_join *join);
void kprog_job_leave(struct kprog_ep *ep);
struct kprog_ep *kprog_job_get_ep(struct kprog_job *job, u32 rank);
void kprog_job_put(struct kprog_job *job);

/* match.c */
int kprog_send(struct kprog_ep *ep, struct kprog_post *post);
int kprog_recv(struct kprog_ep *ep, struct kprog_post *post);
int kprog_probe(struct kprog_ep *ep, struct kprog_probe *probe);
int kprog_cancel(struct kprog_ep *ep, u64 req_id);
void kprog_match_ep_gone(struct kprog_ep *ep);
void kprog_match_ep_quiesce(struct kprog_ep *ep);

/* netlink.c */
int kprog_nl_init(void);
void kprog_nl_exit(void);

/* ring.c */
int kprog_ring_alloc(struct kprog_ep *ep);
void kprog_ring_free(struct kprog_ep *ep);
void kprog_op_complete(struct kprog_op *op, const struct kprog_cqe *cqe);
void kprog_ring_flush(struct kprog_ep *ep);
bool kprog_ring_holds(struct kprog_ep *ep, u64 req_id);
int kprog_ring_wait(struct kprog_ep *ep, s64 timeout_ns);
__poll_t kprog_ring_poll(struct kprog_ep *ep, struct file *file,
			 poll_table *wait);
int kprog_ring_mmap(struct kprog_ep *ep, struct vm_area_struct *vma);

#endif /* _KPROG_INTERNAL_H */
