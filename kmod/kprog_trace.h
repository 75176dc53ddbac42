/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog tracepoints: one per protocol step of a message, so that
 * `perf trace -e 'kprog:*'` or tracefs (events/kprog/) can follow it:
 *
 *   kprog_post        a send or receive is posted (its req_id)
 *   kprog_match       a send and a receive are paired (both req_ids)
 *   kprog_copy_start  the payload copy begins (transport or eager copy-out)
 *   kprog_copy_end    it ends: bytes written to the receive buffer, errno
 *   kprog_complete    a completion is produced for an endpoint, and where
 *                     it went (ring, overflow list, the post's own result,
 *                     or dropped because the endpoint is closed)
 *
 * A message is named by its job, the sender's and the receiver's ranks and
 * the two req_ids; copy events carry both req_ids.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kprog

#if !defined(_KPROG_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KPROG_TRACE_H

#include <linux/tracepoint.h>
#include "kprog.h"

#ifndef _KPROG_TRACE_WHERE
#define _KPROG_TRACE_WHERE
/* Where a completion went, for kprog_complete. */
enum kprog_cqe_where {
	KPROG_WHERE_RING,
	KPROG_WHERE_OVERFLOW,
	KPROG_WHERE_INLINE,
	KPROG_WHERE_DROPPED,
};
#endif

TRACE_DEFINE_ENUM(KPROG_WHERE_RING);
TRACE_DEFINE_ENUM(KPROG_WHERE_OVERFLOW);
TRACE_DEFINE_ENUM(KPROG_WHERE_INLINE);
TRACE_DEFINE_ENUM(KPROG_WHERE_DROPPED);

TRACE_EVENT(kprog_post,
	    TP_PROTO(const struct kprog_ep *ep, const struct kprog_op *op,
		     u32 flags),
	    TP_ARGS(ep, op, flags),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, req_id)
			     __field(u64, len)
			     __field(u32, rank)
			     __field(u32, context)
			     __field(s32, peer)
			     __field(s32, tag)
			     __field(u32, flags)
			     __field(bool, send)),
	    TP_fast_assign(__entry->job = ep->job->key;
			   __entry->req_id = op->req_id;
			   __entry->len = op->len;
			   __entry->rank = ep->rank;
			   __entry->context = op->context;
			   __entry->peer = op->peer;
			   __entry->tag = op->tag;
			   __entry->flags = flags;
			   __entry->send = op->is_send;),
	    TP_printk("job=%#llx rank=%u %s req_id=%llu context=%u peer=%d tag=%d len=%llu flags=%#x",
		      __entry->job, __entry->rank,
		      __entry->send ? "send" : "recv", __entry->req_id,
		      __entry->context, __entry->peer, __entry->tag,
		      __entry->len, __entry->flags)
);

TRACE_EVENT(kprog_match,
	    TP_PROTO(const struct kprog_op *s, const struct kprog_op *r),
	    TP_ARGS(s, r),
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
	    TP_fast_assign(__entry->job = r->owner->job->key;
			   __entry->send_req = s->req_id;
			   __entry->recv_req = r->req_id;
			   __entry->send_len = s->len;
			   __entry->recv_len = r->len;
			   __entry->src = s->src_rank;
			   __entry->dst = r->owner->rank;
			   __entry->context = s->context;
			   __entry->tag = s->tag;
			   __entry->eager = s->eager;),
	    TP_printk("job=%#llx src=%d send_req=%llu dst=%u recv_req=%llu context=%u tag=%d send_len=%llu recv_len=%llu %s",
		      __entry->job, __entry->src, __entry->send_req,
		      __entry->dst, __entry->recv_req, __entry->context,
		      __entry->tag, __entry->send_len, __entry->recv_len,
		      __entry->eager ? "eager" : "rendezvous")
);

DECLARE_EVENT_CLASS(kprog_copy,
		    TP_PROTO(const struct kprog_op *s,
			     const struct kprog_op *r, u64 bytes, int err),
		    TP_ARGS(s, r, bytes, err),
		    TP_STRUCT__entry(__field(u64, job)
				     __field(u64, send_req)
				     __field(u64, recv_req)
				     __field(u64, bytes)
				     __field(s32, src)
				     __field(u32, dst)
				     __field(int, err)),
		    TP_fast_assign(__entry->job = r->owner->job->key;
				   __entry->send_req = s->req_id;
				   __entry->recv_req = r->req_id;
				   __entry->bytes = bytes;
				   __entry->src = s->src_rank;
				   __entry->dst = r->owner->rank;
				   __entry->err = err;),
		    TP_printk("job=%#llx src=%d send_req=%llu dst=%u recv_req=%llu bytes=%llu err=%d",
			      __entry->job, __entry->src, __entry->send_req,
			      __entry->dst, __entry->recv_req,
			      __entry->bytes, __entry->err)
);

/* bytes: to copy; err: 0 */
DEFINE_EVENT(kprog_copy, kprog_copy_start,
	     TP_PROTO(const struct kprog_op *s, const struct kprog_op *r,
		      u64 bytes, int err),
	     TP_ARGS(s, r, bytes, err)
);

/* bytes: written to the receive buffer; err: 0 or a negative errno */
DEFINE_EVENT(kprog_copy, kprog_copy_end,
	     TP_PROTO(const struct kprog_op *s, const struct kprog_op *r,
		      u64 bytes, int err),
	     TP_ARGS(s, r, bytes, err)
);

TRACE_EVENT(kprog_complete,
	    TP_PROTO(const struct kprog_ep *ep, const struct kprog_cqe *c,
		     int where),
	    TP_ARGS(ep, c, where),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, req_id)
			     __field(u64, bytes)
			     __field(u32, rank)
			     __field(s32, source)
			     __field(s32, tag)
			     __field(s32, error)
			     __field(int, where)),
	    TP_fast_assign(__entry->job = ep->job->key;
			   __entry->req_id = c->req_id;
			   __entry->bytes = c->bytes;
			   __entry->rank = ep->rank;
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
