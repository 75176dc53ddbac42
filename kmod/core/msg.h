/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog messages: what arrives at a receiving endpoint, from a local
 * endpoint or from another node. A message is an envelope plus either its
 * eager payload (in a kernel buffer) or a rendezvous descriptor saying
 * where the sender's data is; the matching core queues, probes and matches
 * messages without knowing which transport brought them.
 */
#ifndef _KPROG_MSG_H
#define _KPROG_MSG_H

#include <linux/types.h>
#include <linux/list.h>

struct kprog_op;
struct kprog_transport;

/* Envelope flags. */
#define KPROG_ENV_RNDV		BIT(0)	/* data stays with the sender */
#define KPROG_ENV_SYNC		BIT(1)	/* sender completes when matched */
/*
 * A step of a collective schedule (coll.c): matches only receives of
 * schedules, which match only such messages; never counted in the
 * per-source counts or events a user-space matcher reads.
 */
#define KPROG_ENV_COLL		BIT(2)

/**
 * struct kprog_env - the matching information of a message
 * @context: communicator context id
 * @src: sender's rank
 * @dst: receiver's rank
 * @tag: tag (>= 0)
 * @len: message length in bytes
 * @flags: KPROG_ENV_*
 */
struct kprog_env {
	u32 context;
	s32 src;
	u32 dst;
	s32 tag;
	u64 len;
	u32 flags;
};

/**
 * struct kprog_rdesc - where the data of a rendezvous message is
 * @net: for a network transport: the connection it came on, the sender's
 *	cookie for the FIN, and the first registered region (address,
 *	length, remote key)
 *
 * A local (shared-memory) rendezvous needs no descriptor: the sender's
 * operation (&kprog_msg.sop) describes its buffer.
 */
struct kprog_rdesc {
	struct {
		void *conn;
		u64 cookie;
		u64 addr;
		u64 len;
		u32 rkey;
	} net;
};

/**
 * enum kprog_msg_state - where a message is, under the receiver's mlock
 * @KPROG_MSG_NEW: not yet arrived
 * @KPROG_MSG_QUEUED: in the receiver's unexpected queue
 * @KPROG_MSG_MPROBED: taken by a dequeuing probe, in its mprobed list
 * @KPROG_MSG_MATCHED: paired with a receive
 * @KPROG_MSG_DONE: withdrawn or dropped
 */
enum kprog_msg_state {
	KPROG_MSG_NEW,
	KPROG_MSG_QUEUED,
	KPROG_MSG_MPROBED,
	KPROG_MSG_MATCHED,
	KPROG_MSG_DONE,
};

/**
 * struct kprog_msg - a message at (or on its way to) a receiving endpoint
 * @qnode: in the receiver's unexpected or mprobed list
 * @env: the envelope
 * @state: enum kprog_msg_state, under the receiver's mlock
 * @may_bounce: an eager message whose sender can still send it by
 *	rendezvous: the arrival may refuse it when the receiver's eager
 *	quota is used up (-ENOBUFS)
 * @src_gone: its sender left; a rendezvous can no longer be pulled
 * @poster_waits: a local sender posted it with KPROG_POST_BLOCKING, or
 *	a collective schedule's work item sent it (coll.c): if it matches
 *	on arrival, in the sender's call or work item, the sender copies it
 * @msg_id: the id a dequeuing probe gave it
 * @send_req: the sender's req_id when known (for tracing), else 0
 * @send_ns: when a sender on this node posted it, or when it arrived from
 *	another node (CLOCK_MONOTONIC; only while the job keeps times), else 0
 * @charge: eager quota charged at the receiver
 * @data: eager payload of @env.len bytes (kvmalloc()ed), NULL for none
 * @sop: a rendezvous from a local sender: its send operation, referenced
 * @xport: the transport that pulls a rendezvous and tells the sender
 * @rd: the rendezvous descriptor for @xport
 */
struct kprog_msg {
	struct list_head qnode;
	struct kprog_env env;
	u8 state;
	bool may_bounce;
	bool src_gone;
	bool poster_waits;
	u64 msg_id;
	u64 send_req;
	u64 send_ns;
	u64 charge;
	void *data;
	struct kprog_op *sop;
	const struct kprog_transport *xport;
	struct kprog_rdesc rd;
};

struct kprog_msg *kprog_msg_alloc(const struct kprog_env *env, gfp_t gfp);
int kprog_msg_alloc_data(struct kprog_msg *msg, gfp_t gfp);
void kprog_msg_free(struct kprog_msg *msg);
void kprog_msg_exit(void);

/**
 * kprog_msg_is_rndv() - does the message's data stay with its sender?
 * @msg: message
 *
 * Return: true for a rendezvous message.
 */
static inline bool kprog_msg_is_rndv(const struct kprog_msg *msg)
{
	return msg->env.flags & KPROG_ENV_RNDV;
}

#endif /* _KPROG_MSG_H */
