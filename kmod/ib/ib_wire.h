/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog_ib wire format: the messages two kprog_ib modules exchange over
 * their reliable connection (one RC queue pair per pair of nodes).
 *
 * Every message is one SEND into one receive buffer the peer posted: a
 * header, a body whose size the type fixes, and for EAGER the payload.
 * Fields are little-endian and naturally aligned; reserved fields are
 * zero. Nothing received is trusted: kprog_ib_parse() checks every field
 * that can be checked without state (sizes, version, type, flags, ranges)
 * and turns the message into host values; the receive path then checks
 * what needs state (job, node map, connection, cookies, credits).
 *
 *   EAGER   envelope + payload: a whole small message
 *   RTS     envelope + the sender's cookie + the first registered chunk of
 *           its buffer (address, length, rkey), or none (length 0: the
 *           receiver asks for it with PULL once it matched)
 *   PULL    receiver -> sender: register and describe the chunk that
 *           starts at this offset (the receiver's id comes back in DESC)
 *   DESC    sender -> receiver: that chunk (length 0: the sender cannot
 *           provide it, the transfer fails)
 *   DONE    receiver -> sender: the chunk at this offset is read; sent
 *           with SEND_WITH_INV of its rkey
 *   FIN     receiver -> sender: the transfer is over (status, bytes);
 *           with KPROG_IB_INV its SEND invalidated the chunk at offset
 *   GONE    a rank of the sender's node left a job
 *   CREDIT  only the header: returns receive buffers
 *
 * Every header carries the credits it returns (receive buffers its sender
 * reposted since the last return).
 */
#ifndef _KPROG_IB_WIRE_H
#define _KPROG_IB_WIRE_H

#include <linux/types.h>
#include "msg.h"

#define KPROG_IB_WIRE_VERSION	1

enum kprog_ib_type {
	KPROG_IB_EAGER = 1,
	KPROG_IB_RTS,
	KPROG_IB_PULL,
	KPROG_IB_DESC,
	KPROG_IB_DONE,
	KPROG_IB_FIN,
	KPROG_IB_GONE,
	KPROG_IB_CREDIT,
	KPROG_IB_NR_TYPES,
};

/* kprog_ib_wdone.flags */
#define KPROG_IB_INV		BIT(0)	/* the SEND invalidated @offset */

/**
 * struct kprog_ib_hdr - starts every message
 * @version: KPROG_IB_WIRE_VERSION
 * @type: enum kprog_ib_type
 * @credits: receive buffers returned to the message's receiver
 * @len: bytes of the whole message, header included
 */
struct kprog_ib_hdr {
	u8 version;
	u8 type;
	__le16 credits;
	__le32 len;
};

/**
 * struct kprog_ib_wenv - the envelope of EAGER and RTS
 * @job_key: the job, as both nodes' ranks agreed
 * @len: message length
 * @send_req: the sender's req_id, for tracing
 * @context: communicator context
 * @src: sender's rank
 * @dst: receiver's rank
 * @tag: tag, >= 0
 * @flags: KPROG_ENV_* (EAGER: none; RTS: RNDV, optionally SYNC)
 * @rsvd: zero
 */
struct kprog_ib_wenv {
	__le64 job_key;
	__le64 len;
	__le64 send_req;
	__le32 context;
	__le32 src;
	__le32 dst;
	__le32 tag;
	__le32 flags;
	__le32 rsvd;
};

/**
 * struct kprog_ib_wchunk - a registered chunk of a sender's buffer
 * @offset: where it starts in the message
 * @addr: its address for RDMA READ
 * @len: bytes; 0 in an RTS: none registered yet
 * @rkey: remote key, valid until the chunk's DONE or FIN
 * @rsvd: zero
 */
struct kprog_ib_wchunk {
	__le64 offset;
	__le64 addr;
	__le64 len;
	__le32 rkey;
	__le32 rsvd;
};

/**
 * struct kprog_ib_wrts - body of RTS
 * @env: the envelope
 * @cookie: names the send at its node (PULL, DONE and FIN carry it)
 * @chunk: the first chunk, or len 0
 */
struct kprog_ib_wrts {
	struct kprog_ib_wenv env;
	__le64 cookie;
	struct kprog_ib_wchunk chunk;
};

/**
 * struct kprog_ib_wpull - body of PULL
 * @cookie: the send
 * @rid: names the receiving side's transfer (DESC carries it back)
 * @offset: the chunk wanted
 */
struct kprog_ib_wpull {
	__le64 cookie;
	__le64 rid;
	__le64 offset;
};

/**
 * struct kprog_ib_wdesc - body of DESC
 * @rid: the receiving side's transfer
 * @chunk: the chunk; len 0: the sender cannot provide it
 */
struct kprog_ib_wdesc {
	__le64 rid;
	struct kprog_ib_wchunk chunk;
};

/**
 * struct kprog_ib_wdone - body of DONE and FIN
 * @cookie: the send
 * @offset: DONE: the chunk read; FIN with KPROG_IB_INV: the chunk the
 *	SEND invalidated
 * @bytes: FIN: bytes the receive got (0 for DONE)
 * @status: FIN: 0 or a negative errno (0 for DONE)
 * @flags: KPROG_IB_INV (always for DONE)
 */
struct kprog_ib_wdone {
	__le64 cookie;
	__le64 offset;
	__le64 bytes;
	__le32 status;
	__le32 flags;
};

/**
 * struct kprog_ib_wgone - body of GONE
 * @job_key: the job
 * @rank: the rank that left
 * @rsvd: zero
 */
struct kprog_ib_wgone {
	__le64 job_key;
	__le32 rank;
	__le32 rsvd;
};

/* The largest message without payload (header and RTS body). */
#define KPROG_IB_CTL_MAX	(sizeof(struct kprog_ib_hdr) + \
				 sizeof(struct kprog_ib_wrts))
/* Header and envelope in front of an eager payload. */
#define KPROG_IB_EAGER_HDR	(sizeof(struct kprog_ib_hdr) + \
				 sizeof(struct kprog_ib_wenv))

/**
 * struct kprog_ib_chunk_desc - a chunk in host order
 * @offset: in the message
 * @addr: remote address
 * @len: bytes (0: none)
 * @rkey: remote key
 */
struct kprog_ib_chunk_desc {
	u64 offset;
	u64 addr;
	u64 len;
	u32 rkey;
};

/**
 * struct kprog_ib_parsed - a received message that passed kprog_ib_parse()
 * @type: enum kprog_ib_type
 * @credits: credits it returns
 * @key: EAGER, RTS, GONE: the job key
 * @env: EAGER, RTS: the envelope
 * @send_req: EAGER, RTS: the sender's req_id
 * @payload: EAGER: @env.len bytes inside the receive buffer
 * @cookie: RTS, PULL, DONE, FIN: the send
 * @rid: PULL, DESC: the receiving side's transfer
 * @chunk: RTS, DESC: the chunk
 * @offset: PULL, DONE, FIN: the offset
 * @bytes: FIN: bytes received
 * @status: FIN: 0 or an errno the sender may report
 * @flags: DONE, FIN: KPROG_IB_INV
 * @rank: GONE: the rank
 */
struct kprog_ib_parsed {
	u8 type;
	u16 credits;
	u64 key;
	struct kprog_env env;
	u64 send_req;
	const void *payload;
	u64 cookie;
	u64 rid;
	struct kprog_ib_chunk_desc chunk;
	u64 offset;
	u64 bytes;
	s32 status;
	u32 flags;
	u32 rank;
};

/**
 * enum kprog_ib_bad - why kprog_ib_parse() refused a message
 * @KPROG_IB_OK: it did not
 * @KPROG_IB_BAD_SHORT: shorter than a header
 * @KPROG_IB_BAD_VERSION: another wire version
 * @KPROG_IB_BAD_TYPE: unknown type
 * @KPROG_IB_BAD_LEN: header length differs from the bytes received, or
 *	the size of the type's body
 * @KPROG_IB_BAD_PAYLOAD: an eager payload longer than the receiver takes,
 *	or not as long as its envelope says
 * @KPROG_IB_BAD_ENV: envelope flags, tag or length out of range
 * @KPROG_IB_BAD_CHUNK: a chunk that wraps around, lies outside the
 *	message or is not where it must be
 * @KPROG_IB_BAD_FLAGS: unknown flags, or a status that is no errno
 * @KPROG_IB_BAD_RSVD: a reserved field is not zero
 */
enum kprog_ib_bad {
	KPROG_IB_OK,
	KPROG_IB_BAD_SHORT,
	KPROG_IB_BAD_VERSION,
	KPROG_IB_BAD_TYPE,
	KPROG_IB_BAD_LEN,
	KPROG_IB_BAD_PAYLOAD,
	KPROG_IB_BAD_ENV,
	KPROG_IB_BAD_CHUNK,
	KPROG_IB_BAD_FLAGS,
	KPROG_IB_BAD_RSVD,
};

enum kprog_ib_bad kprog_ib_parse(const void *buf, u32 len, u32 max_payload,
				 struct kprog_ib_parsed *out);
s32 kprog_ib_status(s32 status);

u32 kprog_ib_put_eager(void *buf, u64 key, const struct kprog_env *env,
		       u64 send_req);
u32 kprog_ib_put_rts(void *buf, u64 key, const struct kprog_env *env,
		     u64 send_req, u64 cookie,
		     const struct kprog_ib_chunk_desc *chunk);
u32 kprog_ib_put_pull(void *buf, u64 cookie, u64 rid, u64 offset);
u32 kprog_ib_put_desc(void *buf, u64 rid,
		      const struct kprog_ib_chunk_desc *chunk);
u32 kprog_ib_put_done(void *buf, u8 type, u64 cookie, u64 offset, u64 bytes,
		      s32 status, u32 flags);
u32 kprog_ib_put_gone(void *buf, u64 key, u32 rank);
u32 kprog_ib_put_credit(void *buf);
void kprog_ib_set_credits(void *buf, u16 credits);

#endif /* _KPROG_IB_WIRE_H */
