/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog_ib tracepoints (system kprog_ib): the steps of a rendezvous
 * between nodes, next to the core's kprog:* events of the same message.
 *
 *   kprog_ib_rts         an RTS is sent (at the sender's node) or
 *                        received (at the receiver's): job, ranks, tag,
 *                        length, cookie, bytes of the first chunk
 *   kprog_ib_read_start  the receiving node posts an RDMA READ of a piece
 *   kprog_ib_read_end    that READ completed (status 0 or an errno)
 *   kprog_ib_fin         a FIN is sent (receiving node) or received
 *                        (sending node): bytes, status
 *
 * A transfer is named by the sender's cookie; READs also by the receiving
 * side's id (rid), which PULL and DESC carry.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kprog_ib

#if !defined(_KPROG_IB_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KPROG_IB_TRACE_H

#include <linux/tracepoint.h>
#include "msg.h"

TRACE_EVENT(kprog_ib_rts,
	    TP_PROTO(u64 job, const struct kprog_env *env, u64 cookie,
		     u64 chunk, bool send),
	    TP_ARGS(job, env, cookie, chunk, send),
	    TP_STRUCT__entry(__field(u64, job)
			     __field(u64, cookie)
			     __field(u64, len)
			     __field(u64, chunk)
			     __field(s32, src)
			     __field(u32, dst)
			     __field(s32, tag)
			     __field(bool, send)),
	    TP_fast_assign(__entry->job = job;
			   __entry->cookie = cookie;
			   __entry->len = env->len;
			   __entry->chunk = chunk;
			   __entry->src = env->src;
			   __entry->dst = env->dst;
			   __entry->tag = env->tag;
			   __entry->send = send;),
	    TP_printk("%s job=%#llx src=%d dst=%u tag=%d len=%llu cookie=%#llx chunk=%llu",
		      __entry->send ? "send" : "recv", __entry->job,
		      __entry->src, __entry->dst, __entry->tag, __entry->len,
		      __entry->cookie, __entry->chunk)
);

TRACE_EVENT(kprog_ib_read_start,
	    TP_PROTO(u64 rid, u64 cookie, u64 offset, u64 len),
	    TP_ARGS(rid, cookie, offset, len),
	    TP_STRUCT__entry(__field(u64, rid)
			     __field(u64, cookie)
			     __field(u64, offset)
			     __field(u64, len)),
	    TP_fast_assign(__entry->rid = rid;
			   __entry->cookie = cookie;
			   __entry->offset = offset;
			   __entry->len = len;),
	    TP_printk("rid=%#llx cookie=%#llx offset=%llu len=%llu",
		      __entry->rid, __entry->cookie, __entry->offset,
		      __entry->len)
);

TRACE_EVENT(kprog_ib_read_end,
	    TP_PROTO(u64 rid, u64 offset, u64 len, int status),
	    TP_ARGS(rid, offset, len, status),
	    TP_STRUCT__entry(__field(u64, rid)
			     __field(u64, offset)
			     __field(u64, len)
			     __field(int, status)),
	    TP_fast_assign(__entry->rid = rid;
			   __entry->offset = offset;
			   __entry->len = len;
			   __entry->status = status;),
	    TP_printk("rid=%#llx offset=%llu len=%llu status=%d",
		      __entry->rid, __entry->offset, __entry->len,
		      __entry->status)
);

TRACE_EVENT(kprog_ib_fin,
	    TP_PROTO(u64 cookie, u64 bytes, int status, bool recv),
	    TP_ARGS(cookie, bytes, status, recv),
	    TP_STRUCT__entry(__field(u64, cookie)
			     __field(u64, bytes)
			     __field(int, status)
			     __field(bool, recv)),
	    TP_fast_assign(__entry->cookie = cookie;
			   __entry->bytes = bytes;
			   __entry->status = status;
			   __entry->recv = recv;),
	    TP_printk("%s cookie=%#llx bytes=%llu status=%d",
		      __entry->recv ? "recv" : "send", __entry->cookie,
		      __entry->bytes, __entry->status)
);

#endif /* _KPROG_IB_TRACE_H */

/* Out of the kernel tree: define_trace.h finds this file through -I$(src). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ib_trace
#include <trace/define_trace.h>
