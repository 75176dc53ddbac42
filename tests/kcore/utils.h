/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/kcore/utils.h: test helpers that drive the module the way user
 * space and the VFS do: open the device, ioctls with arguments in "user"
 * memory (the test's own), the ring read through its mapping. They use
 * the ABI (include/uapi/linux/kprog.h), not the module's internals, so
 * that they survive changes inside kmod/.
 */
#ifndef KCORE_UTILS_H
#define KCORE_UTILS_H

#include <linux/fs.h>
#include <linux/kprog.h>
#include "mock.h"

/* One open /dev/kprog, owned by a process. */
struct kt_ep {
	struct file file;
	struct mock_proc *proc;
	struct kprog_ep *ep;		/* the module's endpoint */
	bool open;
	struct kprog_join join;		/* the last successful JOIN's answer */
	struct kprog_ring_hdr *ring;	/* its mapping, after kt_join() */
};

/* The error name of a negative errno ("-EINVAL"), or the number. */
const char *kt_errname(long err);

/* Loads/unloads the module (TEST_NO_MODULE tests; TEST does it itself). */
int kt_load(void);
void kt_unload(void);
/*
 * kprog_ib.ko on top of the core (its parameters at their defaults; the
 * _params form keeps what the test set); the fixture unloads it.
 */
int kt_ib_load(void);
int kt_ib_load_params(void);
void kt_ib_params_reset(void);	/* done before every test */
void kt_ib_unload(void);
/* Module parameters back to their defaults (done before every test). */
void kt_params_reset(void);

/* A job key no other test used. */
u64 kt_new_key(void);

/* Opens the device as @p (as mock_default_proc with kt_open()). */
struct kt_ep *kt_open_as(struct mock_proc *p);
struct kt_ep *kt_open(void);
/* Every file is closed: their slots may be used again (long loops). */
void kt_recycle_files(void);
/* Closes it (everything left open is closed after the test anyway). */
void kt_close(struct kt_ep *e);
/* An ioctl on @e, as its process; returns 0 or a negative errno. */
long kt_ioctl(struct kt_ep *e, unsigned int cmd, void *arg);

/*
 * KPROG_IOC_JOIN, then mmap of the ring (e->ring); 0 or the JOIN's
 * negative errno. kt_join_req() takes the whole request.
 */
int kt_join(struct kt_ep *e, u64 key, u32 rank, u32 size);
int kt_join_req(struct kt_ep *e, struct kprog_join *j);
/* @n endpoints, one process each, joined as ranks 0..n-1 of a new job. */
void kt_job(struct kt_ep **eps, u32 n);
/* Two endpoints in one job: rank 0 and rank 1. */
void kt_pair(struct kt_ep **a, struct kt_ep **b);

/* An mmap of the ring; 0 or a negative errno. */
extern unsigned long kt_last_vm_flags;	/* the vma's flags after kt_mmap() */
int kt_mmap(struct kt_ep *e, unsigned long len, unsigned long pgoff,
	    unsigned long vm_flags, void **ring);

/*
 * Posts on context 0. @out (may be NULL) receives the post as the ioctl
 * left it (done, cqe). Return the ioctl's 0 or negative errno.
 */
int kt_send(struct kt_ep *e, s32 peer, s32 tag, const void *buf, u64 len,
	    u64 req_id, u32 flags, struct kprog_post *out);
int kt_recv(struct kt_ep *e, s32 peer, s32 tag, void *buf, u64 len,
	    u64 req_id, u32 flags, struct kprog_post *out);
int kt_cancel(struct kt_ep *e, u64 req_id);
int kt_wait(struct kt_ep *e, s64 timeout_ns);
int kt_probe(struct kt_ep *e, struct kprog_probe *pr);

/* Consumes the next completion of the ring, as user space does. */
bool kt_pop(struct kt_ep *e, struct kprog_cqe *c);
/* Completions in the ring not consumed yet. */
u32 kt_ring_count(struct kt_ep *e);

/*
 * Internal API of ep.c and ring.c (adapt these when kmod changes): an
 * operation of @e created and put on its list as a post does, and its
 * completion as a transport delivers it.
 */
struct kprog_op *kt_op_new(struct kt_ep *e, u64 req_id, bool is_send);
void kt_op_complete(struct kprog_op *op, u64 bytes, int error);
/* The number of operations charged to @e's max_ops. */
u32 kt_nr_ops(struct kt_ep *e);	/* max_ops + max_rndv slots held */
u32 kt_nr_rndv(struct kt_ep *e);

/*
 * KPROG_IOC_JOIN with a node map: rank r on node @rank_nodes[r] of
 * @nr_nodes (<= 8, AF_INET 127.0.0.n+1), this node @self_node.
 */
int kt_join_map(struct kt_ep *e, u64 key, u32 rank, u32 size,
		const u32 *rank_nodes, u32 nr_nodes, u32 self_node);
int kt_info(struct kt_ep *e, struct kprog_info *info);
/* The ring's per-source entry of @rank, and its event count. */
struct kprog_src *kt_src(struct kt_ep *e, u32 rank);
u32 kt_events(struct kt_ep *e);

/*
 * A fast-path channel as user space sees it: opened (KPROG_IOC_CHAN_OPEN)
 * and mapped; @tx is the direction this endpoint produces on.
 */
struct kt_chan {
	struct kprog_chan_open co;
	void *mem;
	struct kprog_chan_dir *tx, *rx;
	u8 *txring, *rxring;
};

int kt_chan_open(struct kt_ep *e, u32 peer, struct kt_chan *c);
/* The record at byte position @pos of the tx (or rx) data ring. */
struct kprog_chan_rec *kt_chan_rec(struct kt_chan *c, bool tx, u64 pos);
/*
 * Produces a record as the user-space sender does (a PAD record first if
 * it would cross the ring's end); -ENOSPC if it does not fit.
 */
int kt_chan_put(struct kt_chan *c, u32 context, s32 tag, const void *data,
		u32 len);
int kt_chan_drain(struct kt_ep *e, s32 peer);

/* Fills @buf with a pattern derived from @seed, and checks it. */
void kt_fill(void *buf, size_t len, unsigned int seed);
bool kt_check(const void *buf, size_t len, unsigned int seed);

/*
 * Runs @op with the n-th allocation failing, for n = 0, 1, ... until @op
 * succeeds; after each failure @undo (may be NULL) must have restored
 * the state @op started from. Returns the number of failures injected.
 * @op returns 0 or a negative errno.
 */
int kt_each_alloc_failure(int (*op)(void *arg), void (*undo)(void *arg),
			  void *arg, int expected_err);

#endif
