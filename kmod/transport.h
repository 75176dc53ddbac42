/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interface between the kprog matching core and the transports that move
 * the bytes of a matched message.
 */
#ifndef _KPROG_TRANSPORT_H
#define _KPROG_TRANSPORT_H

#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/kprog.h>

struct mm_struct;
struct kprog_op;

/**
 * struct kprog_xdesc - one side of a transfer
 * @mm: address space that @iov refers to. The core holds an mmgrab()
 *	reference for the life of the transfer; a transport that touches the
 *	pages must take mmget_not_zero() itself and treat failure as the peer
 *	having exited (-ECONNRESET). NULL when @kbuf is used.
 * @kbuf: kernel buffer holding the whole message (eager data), or NULL.
 *	Only ever set on the source side.
 * @iov: user-space segments in @mm, none of them empty, when @kbuf is NULL
 * @nr_iov: number of entries in @iov
 */
struct kprog_xdesc {
	struct mm_struct *mm;
	void *kbuf;
	const struct kprog_iov *iov;
	u32 nr_iov;
};

/**
 * struct kprog_xfer - a matched send and receive handed to a transport
 * @src: where the data comes from
 * @dst: where the data goes (always user memory)
 * @len: bytes to move, never 0; at most the size of either side
 * @xport: the transport that owns the transfer until kprog_xfer_done()
 * @work: free for the transport's use, e.g. to defer to a workqueue
 * @priv: free for the transport's use
 * @sop: core private: the send operation
 * @rop: core private: the receive operation
 *
 * The core allocates the transfer, fills every field and keeps both
 * operations (and with them @src/@dst) alive until kprog_xfer_done().
 */
struct kprog_xfer {
	struct kprog_xdesc src;
	struct kprog_xdesc dst;
	u64 len;
	const struct kprog_transport *xport;
	struct work_struct work;
	void *priv;
	struct kprog_op *sop;
	struct kprog_op *rop;
};

/**
 * struct kprog_transport - a way of moving bytes between two endpoints
 * @name: short name for messages
 * @init: called once at module load; may sleep. Optional.
 * @exit: called once at module unload after every endpoint is gone; must
 *	wait for all of the transport's transfers to be done (i.e. for their
 *	kprog_xfer_done() calls to have returned). Optional.
 * @run: optional. Move @xfer now, in the calling task's context (process
 *	context, no locks held, may sleep) and call kprog_xfer_done() before
 *	returning. The core uses it for transfers up to the job's eager limit,
 *	where handing off to a worker would cost more than the copy.
 * @submit: start moving @xfer. Called in process context without locks
 *	held; may sleep. Returns 0 if the transport took the transfer, in which
 *	case it must call kprog_xfer_done() exactly once, or a negative errno,
 *	in which case it must not (the core completes the transfer with that
 *	error).
 *
 * Between chunks a transport should call kprog_xfer_aborted() and stop with
 * -ECONNRESET when it returns true, so that a closed endpoint does not keep
 * a long copy going.
 */
struct kprog_transport {
	const char *name;
	int (*init)(void);
	void (*exit)(void);
	void (*run)(struct kprog_xfer *xfer);
	int (*submit)(struct kprog_xfer *xfer);
};

/**
 * kprog_xfer_done() - report the end of a transfer to the core
 * @xfer: the transfer handed to &kprog_transport.submit
 * @bytes: bytes actually written to the destination
 * @err: 0 or a negative errno (-EFAULT for an unmapped buffer,
 *	-ECONNRESET when a side went away, -ENOMEM, ...)
 *
 * Completes both operations and frees @xfer. Safe in any context,
 * including hard and soft interrupt context and with locks held: it only
 * takes irq-safe spinlocks and defers anything that may sleep.
 */
void kprog_xfer_done(struct kprog_xfer *xfer, u64 bytes, int err);

/**
 * kprog_xfer_aborted() - should a transfer in progress stop?
 * @xfer: a transfer handed to &kprog_transport.submit
 *
 * Return: true once either endpoint has been closed. Safe in any context.
 */
bool kprog_xfer_aborted(const struct kprog_xfer *xfer);

extern const struct kprog_transport kprog_xport_shm;

#endif /* _KPROG_TRANSPORT_H */
