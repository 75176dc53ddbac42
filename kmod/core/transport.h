/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contract between the kprog matching core and its transports.
 *
 * A transport works at the level of envelopes: on the sending side it
 * carries a message (envelope plus eager payload or rendezvous descriptor)
 * to the receiving endpoint, where it enters the core through the one
 * arrival path, kprog_arrive(). Once a rendezvous message is matched, the
 * core asks the transport that brought it to pull the data into the local
 * receive buffer (&kprog_transport.pull) and, when that is done, to tell
 * the sender (&kprog_transport.fin). Shared memory is a loopback transport
 * (RDS's loop.c hands a message "straight to the receiving path"); a
 * network transport calls the same entry points from its completion
 * handlers.
 *
 * Contexts: every core entry point below may be called in process context
 * or softirq context (not hard interrupt context), with no kprog lock
 * held. Transport callbacks are called in process context without locks
 * unless said otherwise.
 */
#ifndef _KPROG_TRANSPORT_H
#define _KPROG_TRANSPORT_H

#include <linux/types.h>
#include <linux/workqueue.h>
#include "msg.h"

struct kprog_ep;
struct kprog_op;
struct kprog_job;
struct kprog_peer_ref;
struct kprog_node_addr;
struct kprog_net_conn;
struct module;

/* Feature flags of a transport (as Open MPI's smsc component flags). */
#define KPROG_XF_REQUIRE_REGISTRATION	BIT(0)	/* get_handle first */
#define KPROG_XF_CAN_MAP		BIT(1)	/* reaches sender pages */
#define KPROG_XF_SOFTIRQ		BIT(2)	/* calls back in softirq */

/**
 * struct kprog_xfer - a matched message whose data moves into a receive
 * @msg: the message; the transfer owns it until kprog_xfer_done()
 * @rop: the receive operation; referenced by the transfer
 * @len: bytes to move, min(message length, receive buffer); may be 0
 * @work: free for the transport's use, e.g. to defer to a workqueue
 * @priv: free for the transport's use
 */
struct kprog_xfer {
	struct kprog_msg *msg;
	struct kprog_op *rop;
	u64 len;
	struct work_struct work;
	void *priv;
};

/**
 * struct kprog_transport - a way of reaching peers and moving their data
 * @name: short name for messages
 * @owner: the module that provides a network transport (THIS_MODULE), or
 *	NULL for one built into kprog.ko; every job that reaches ranks
 *	through it holds a reference on it (kprog_xport_net_get()), so the
 *	module stays until the last such job is gone
 * @features: KPROG_XF_*
 * @init: called once at module load; may sleep. Optional.
 * @exit: called once at unload after every endpoint is gone; must wait
 *	until all its transfers are done (their kprog_xfer_done() returned)
 *	and every message it delivered is released. Optional.
 * @send_env: carry @msg to rank @msg->env.dst of @job, reached as @peer.
 *	On success the message belongs to the receiving side (or the wire);
 *	on error the caller still owns it. -ENOBUFS: an eager message with
 *	@may_bounce was refused for lack of eager quota, the caller sends
 *	it by rendezvous. Process context.
 * @get_handle: make the buffer of rendezvous send @sop readable by the
 *	receiver and describe it in @msg->rd (register and pin it). Optional
 *	(a transport that can map the sender's pages needs none).
 * @put_handle: undo @get_handle once the send is over. Optional.
 * @pull: move @x->len bytes of the rendezvous message @x->msg into the
 *	receive @x->rop, then call kprog_xfer_done() exactly once (from any
 *	context). @inline_ok: the caller is the receiver's or sender's
 *	process and the transfer is small, so doing it before returning is
 *	cheaper than a deferral. Returns 0 if the transport took the
 *	transfer, or a negative errno, in which case it must not call
 *	kprog_xfer_done() (the core completes the transfer with that error).
 * @fin: the rendezvous of @msg is over on the receiving side (@bytes
 *	moved, @err 0 or a negative errno; -ECONNRESET when the receiver
 *	left): tell the sender, release what @msg holds of the transport.
 *	Any context (called from kprog_xfer_done() and from departures).
 * @rank_left: a local endpoint of @job, which has ranks reached through
 *	this transport, left: tell the nodes that may hold its messages or
 *	wait for it (they call kprog_peer_gone()). Process context. Optional.
 * @local_addr: where other nodes reach this node's transport, for
 *	KPROG_IOC_GET_INFO. Returns 0 or -ENODEV (no usable device). Optional.
 * @net_conn: KPROG_IOC_NET_CONN (prepare or complete a connection to
 *	another node, out of band); @c checked by the transport. Process
 *	context. Optional (-EOPNOTSUPP without).
 * @poll: run now, on this CPU, the completions that already wait in the
 *	transport's completion queues for the connections to @job's nodes
 *	(KPROG_WAIT_POLL: a waiter that spins for a message from another
 *	node). Process context, must not sleep long. Optional.
 */
struct kprog_transport {
	const char *name;
	struct module *owner;
	u32 features;
	int (*init)(void);
	void (*exit)(void);
	int (*send_env)(struct kprog_job *job, const struct kprog_peer_ref *peer,
			struct kprog_msg *msg);
	int (*get_handle)(struct kprog_op *sop, struct kprog_msg *msg);
	void (*put_handle)(struct kprog_op *sop);
	int (*pull)(struct kprog_xfer *x, bool inline_ok);
	void (*fin)(struct kprog_msg *msg, u64 bytes, int err);
	void (*rank_left)(struct kprog_job *job, u32 rank);
	int (*local_addr)(struct kprog_node_addr *addr);
	int (*net_conn)(struct kprog_net_conn *c);
	void (*poll)(struct kprog_job *job);
};

/* ---- core entry points for transports (match.c, rndv.c) ---- */

int kprog_arrive(struct kprog_ep *dst, struct kprog_msg *msg);
void kprog_xfer_done(struct kprog_xfer *x, u64 bytes, int err);
bool kprog_xfer_aborted(const struct kprog_xfer *x);
void kprog_send_done(struct kprog_op *sop, const struct kprog_env *env,
		     u64 bytes, int err);
void kprog_peer_gone(struct kprog_job *job, u32 rank, int err);

/* ---- the registry (xport.c) ---- */

const struct kprog_transport *kprog_xport_for(const struct kprog_job *job,
					      const struct kprog_peer_ref *peer);
void kprog_xport_set_net(const struct kprog_transport *xport);
const struct kprog_transport *kprog_xport_net_get(void);
void kprog_xport_net_put(const struct kprog_transport *xport);
u32 kprog_xport_mask(void);
void kprog_xport_poll(struct kprog_job *job);
int kprog_xport_init(void);
void kprog_xport_exit(void);

extern const struct kprog_transport kprog_xport_shm;

#endif /* _KPROG_TRANSPORT_H */
