/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog matching core: the posted and unexpected queues of each receiving
 * endpoint and everything that touches them (match.c), and the protocol
 * steps that follow a match: eager delivery (eager.c) and rendezvous
 * transfers (rndv.c). The entry points used by transports are declared in
 * transport.h.
 */
#ifndef _KPROG_MATCH_H
#define _KPROG_MATCH_H

#include <linux/types.h>
#include <linux/kprog.h>
#include "msg.h"

struct kprog_ep;
struct kprog_op;
struct kprog_iov_import;

/* post.c: KPROG_IOC_SEND, KPROG_IOC_RECV */
int kprog_send(struct kprog_ep *ep, struct kprog_post *p);
int kprog_recv(struct kprog_ep *ep, struct kprog_post *p);
int kprog_probe_post(struct kprog_ep *ep, struct kprog_probe *pr);

/* match.c */
int kprog_match_recv(struct kprog_ep *ep, struct kprog_op *rop,
		     struct kprog_msg **msgp, bool arrived_only);
int kprog_match_probe(struct kprog_ep *ep, struct kprog_probe *pr);
bool kprog_match_held(struct kprog_ep *ep, u32 context, s32 source, s32 tag);
int kprog_cancel(struct kprog_ep *ep, u64 req_id);
bool kprog_op_withdraw(struct kprog_op *op);
void kprog_depart(struct kprog_ep *ep);

/* eager.c */
struct kprog_msg *kprog_eager_build(struct kprog_ep *ep,
				    const struct kprog_post *p,
				    const struct kprog_iov_import *im,
				    int *err);
u64 kprog_eager_copy_out(struct kprog_msg *msg, struct kprog_op *rop,
			 int *err);
void kprog_eager_deliver(struct kprog_msg *msg, struct kprog_op *rop);
int kprog_eager_init(void);
void kprog_eager_exit(void);

/* rndv.c */
struct kprog_msg *kprog_rndv_build(struct kprog_op *sop,
				   const struct kprog_transport *xport,
				   u32 flags, int *err);
void kprog_rndv_start(struct kprog_msg *msg, struct kprog_op *rop,
		      bool inline_ok);
void kprog_msg_drop(struct kprog_msg *msg, int err);

/**
 * kprog_env_match() - does a message match a receive's envelope?
 * @env: the message's envelope
 * @context: the receive's context
 * @source: its source rank or KPROG_ANY_SOURCE
 * @tag: its tag or KPROG_ANY_TAG
 * @coll: the receive is a step of a collective schedule: it matches only
 *	messages of schedules, and other receives and probes only others
 *
 * Return: true on a match.
 */
static inline bool kprog_env_match(const struct kprog_env *env, u32 context,
				   s32 source, s32 tag, bool coll)
{
	return env->context == context &&
	       !(env->flags & KPROG_ENV_COLL) == !coll &&
	       (source == KPROG_ANY_SOURCE || source == env->src) &&
	       (tag == KPROG_ANY_TAG || tag == env->tag);
}

#endif /* _KPROG_MATCH_H */
