/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog tracepoints: one per protocol step of a message, so that
 * `perf trace -e 'kprog:*'` or tracefs (events/kprog/) can follow it:
 *
 *   kprog_post        a send or receive is posted (its req_id)
 *   kprog_arrive      a message reaches its receiving endpoint: matched
 *                     at once, queued as unexpected, refused (over the
 *                     eager quota: the sender uses rendezvous) or refused
 *                     because the receiver is gone
 *   kprog_match       a message and a receive are paired (both req_ids)
 *   kprog_copy_start  the payload copy begins (transport or eager copy-out)
 *   kprog_copy_end    it ends: bytes written to the receive buffer, errno
 *   kprog_complete    a completion is produced for an endpoint, and where
 *                     it went (ring, overflow list, the post's own result,
 *                     or dropped because the endpoint is closed)
 *
 * A message is named by its job, the sender's and the receiver's ranks and
 * the two req_ids (the sender's is 0 when its node did not send it); copy
 * events carry both req_ids. The events take plain values, never a local
 * endpoint, so that messages from other nodes are traced alike.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kprog

#if !defined(_KPROG_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KPROG_TRACE_H

#include <linux/tracepoint.h>
#include <linux/kprog.h>
#include "msg.h"

#ifndef _KPROG_TRACE_WHERE
#define _KPROG_TRACE_WHERE
/* Where a completion went, for kprog_complete. */
enum kprog_cqe_where {
	KPROG_WHERE_RING,
	KPROG_WHERE_OVERFLOW,
	KPROG_WHERE_INLINE,
	KPROG_WHERE_DROPPED,
};

/* What an arrival did with a message, for kprog_arrive. */
enum kprog_arrive_outcome {
	KPROG_ARRIVE_MATCHED,
	KPROG_ARRIVE_QUEUED,
	KPROG_ARRIVE_BOUNCED,
	KPROG_ARRIVE_REFUSED,
};
#endif

TRACE_DEFINE_ENUM(KPROG_WHERE_RING);
TRACE_DEFINE_ENUM(KPROG_WHERE_OVERFLOW);
TRACE_DEFINE_ENUM(KPROG_WHERE_INLINE);
TRACE_DEFINE_ENUM(KPROG_WHERE_DROPPED);
TRACE_DEFINE_ENUM(KPROG_ARRIVE_MATCHED);
TRACE_DEFINE_ENUM(KPROG_ARRIVE_QUEUED);
TRACE_DEFINE_ENUM(KPROG_ARRIVE_BOUNCED);
TRACE_DEFINE_ENUM(KPROG_ARRIVE_REFUSED);

TRACE_EVENT(kprog_post,
	    TP_PROTO(u64 job, u32 rank, bool send, u64 req_id, u32 context,
		     s32 peer, s32 tag, u64 len, u32 flags),
	    TP_ARGS(job, rank, send, req_id, context, peer, tag, len, flags),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, req_id)
			     __field(u64, len)
			     __field(u32, rank)
			     __field(u32, context)
			     __field(s32, peer)
			     __field(s32, tag)
			     __field(u32, flags)
			     __field(bool, send)),
	    TP_fast_assign(__entry->job = job;
			   __entry->req_id = req_id;
			   __entry->len = len;
			   __entry->rank = rank;
			   __entry->context = context;
			   __entry->peer = peer;
			   __entry->tag = tag;
			   __entry->flags = flags;
			   __entry->send = send;),
	    TP_printk("job=%#llx rank=%u %s req_id=%llu context=%u peer=%d tag=%d len=%llu flags=%#x",
		      __entry->job, __entry->rank,
		      __entry->send ? "send" : "recv", __entry->req_id,
		      __entry->context, __entry->peer, __entry->tag,
		      __entry->len, __entry->flags)
);

TRACE_EVENT(kprog_arrive,
	    TP_PROTO(u64 job, const struct kprog_env *env, u64 send_req,
		     int outcome),
	    TP_ARGS(job, env, send_req, outcome),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, send_req)
			     __field(u64, len)
			     __field(s32, src)
			     __field(u32, dst)
			     __field(u32, context)
			     __field(s32, tag)
			     __field(u32, flags)
			     __field(int, outcome)),
	    TP_fast_assign(__entry->job = job;
			   __entry->send_req = send_req;
			   __entry->len = env->len;
			   __entry->src = env->src;
			   __entry->dst = env->dst;
			   __entry->context = env->context;
			   __entry->tag = env->tag;
			   __entry->flags = env->flags;
			   __entry->outcome = outcome;),
	    TP_printk("job=%#llx src=%d send_req=%llu dst=%u context=%u tag=%d len=%llu flags=%#x %s",
		      __entry->job, __entry->src, __entry->send_req,
		      __entry->dst, __entry->context, __entry->tag,
		      __entry->len, __entry->flags,
		      __print_symbolic(__entry->outcome,
				       { KPROG_ARRIVE_MATCHED, "matched" },
				       { KPROG_ARRIVE_QUEUED, "queued" },
				       { KPROG_ARRIVE_BOUNCED, "over-quota" },
				       { KPROG_ARRIVE_REFUSED, "receiver-gone" }))
);

TRACE_EVENT(kprog_match,
	    TP_PROTO(u64 job, const struct kprog_env *env, u64 send_req,
		     u64 recv_req, u64 recv_len),
	    TP_ARGS(job, env, send_req, recv_req, recv_len),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, send_req)
			     __field(u64, recv_req)
			     __field(u64, send_len)
			     __field(u64, recv_len)
			     __field(s32, src)
			     __field(u32, dst)
			     __field(u32, context)
			     __field(s32, tag)
			     __field(bool, eager)),
	    TP_fast_assign(__entry->job = job;
			   __entry->send_req = send_req;
			   __entry->recv_req = recv_req;
			   __entry->send_len = env->len;
			   __entry->recv_len = recv_len;
			   __entry->src = env->src;
			   __entry->dst = env->dst;
			   __entry->context = env->context;
			   __entry->tag = env->tag;
			   __entry->eager = !(env->flags & KPROG_ENV_RNDV);),
	    TP_printk("job=%#llx src=%d send_req=%llu dst=%u recv_req=%llu context=%u tag=%d send_len=%llu recv_len=%llu %s",
		      __entry->job, __entry->src, __entry->send_req,
		      __entry->dst, __entry->recv_req, __entry->context,
		      __entry->tag, __entry->send_len, __entry->recv_len,
		      __entry->eager ? "eager" : "rendezvous")
);

DECLARE_EVENT_CLASS(kprog_copy,
		    TP_PROTO(u64 job, const struct kprog_env *env,
			     u64 send_req, u64 recv_req, u64 bytes, int err),
		    TP_ARGS(job, env, send_req, recv_req, bytes, err),
		    TP_STRUCT__entry(__field(u64, job)
				     __field(u64, send_req)
				     __field(u64, recv_req)
				     __field(u64, bytes)
				     __field(s32, src)
				     __field(u32, dst)
				     __field(int, err)),
		    TP_fast_assign(__entry->job = job;
				   __entry->send_req = send_req;
				   __entry->recv_req = recv_req;
				   __entry->bytes = bytes;
				   __entry->src = env->src;
				   __entry->dst = env->dst;
				   __entry->err = err;),
		    TP_printk("job=%#llx src=%d send_req=%llu dst=%u recv_req=%llu bytes=%llu err=%d",
			      __entry->job, __entry->src, __entry->send_req,
			      __entry->dst, __entry->recv_req,
			      __entry->bytes, __entry->err)
);

/* bytes: to copy; err: 0 */
DEFINE_EVENT(kprog_copy, kprog_copy_start,
	     TP_PROTO(u64 job, const struct kprog_env *env, u64 send_req,
		      u64 recv_req, u64 bytes, int err),
	     TP_ARGS(job, env, send_req, recv_req, bytes, err)
);

/* bytes: written to the receive buffer; err: 0 or a negative errno */
DEFINE_EVENT(kprog_copy, kprog_copy_end,
	     TP_PROTO(u64 job, const struct kprog_env *env, u64 send_req,
		      u64 recv_req, u64 bytes, int err),
	     TP_ARGS(job, env, send_req, recv_req, bytes, err)
);

TRACE_EVENT(kprog_complete,
	    TP_PROTO(u64 job, u32 rank, const struct kprog_cqe *c, int where),
	    TP_ARGS(job, rank, c, where),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, req_id)
			     __field(u64, bytes)
			     __field(u32, rank)
			     __field(s32, source)
			     __field(s32, tag)
			     __field(s32, error)
			     __field(int, where)),
	    TP_fast_assign(__entry->job = job;
			   __entry->req_id = c->req_id;
			   __entry->bytes = c->bytes;
			   __entry->rank = rank;
			   __entry->source = c->source;
			   __entry->tag = c->tag;
			   __entry->error = c->error;
			   __entry->where = where;),
	    TP_printk("job=%#llx rank=%u req_id=%llu source=%d tag=%d bytes=%llu error=%d %s",
		      __entry->job, __entry->rank, __entry->req_id,
		      __entry->source, __entry->tag, __entry->bytes,
		      __entry->error,
		      __print_symbolic(__entry->where,
				       { KPROG_WHERE_RING, "ring" },
				       { KPROG_WHERE_OVERFLOW, "overflow" },
				       { KPROG_WHERE_INLINE, "inline" },
				       { KPROG_WHERE_DROPPED, "dropped" }))
);

#endif /* _KPROG_TRACE_H */

/* Out of the kernel tree: define_trace.h finds this file through -I$(src). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kprog_trace
#include <trace/define_trace.h>
