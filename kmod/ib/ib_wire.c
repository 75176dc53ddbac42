// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib wire format: encoding of every message and the stateless
 * checks of every received one (see ib_wire.h for the messages).
 *
 * Pure functions: no locks, no allocation, any context. The receive path
 * (ib_recv.c) drops and counts whatever kprog_ib_parse() refuses.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/err.h>
#include "kprog.h"
#include "ib_wire.h"

/* Bytes of the body of each type (EAGER: without its payload). */
static const u32 kprog_ib_body_len[KPROG_IB_NR_TYPES] = {
	[KPROG_IB_EAGER] = sizeof(struct kprog_ib_wenv),
	[KPROG_IB_RTS] = sizeof(struct kprog_ib_wrts),
	[KPROG_IB_PULL] = sizeof(struct kprog_ib_wpull),
	[KPROG_IB_DESC] = sizeof(struct kprog_ib_wdesc),
	[KPROG_IB_DONE] = sizeof(struct kprog_ib_wdone),
	[KPROG_IB_FIN] = sizeof(struct kprog_ib_wdone),
	[KPROG_IB_GONE] = sizeof(struct kprog_ib_wgone),
	[KPROG_IB_CREDIT] = 0,
};

static enum kprog_ib_bad kprog_ib_parse_env(const struct kprog_ib_wenv *w,
					    bool rndv,
					    struct kprog_ib_parsed *out)
{
	u32 flags = le32_to_cpu(w->flags);
	u32 src = le32_to_cpu(w->src);
	u32 tag = le32_to_cpu(w->tag);

	if (w->rsvd)
		return KPROG_IB_BAD_RSVD;
	/*
	 * EAGER: no flag; RTS: RNDV, and SYNC if the send was synchronous;
	 * either may be a step of a collective schedule (COLL).
	 */
	if (rndv && (!(flags & KPROG_ENV_RNDV) ||
		     (flags & ~(KPROG_ENV_RNDV | KPROG_ENV_SYNC |
				KPROG_ENV_COLL))))
		return KPROG_IB_BAD_ENV;
	if (!rndv && (flags & ~KPROG_ENV_COLL))
		return KPROG_IB_BAD_ENV;
	/* Ranks and tags are non-negative ints; lengths stay in range. */
	if (tag > S32_MAX || src > S32_MAX ||
	    le32_to_cpu(w->dst) > S32_MAX ||
	    le64_to_cpu(w->len) > KPROG_MAX_MSG)
		return KPROG_IB_BAD_ENV;
	out->key = le64_to_cpu(w->job_key);
	out->send_req = le64_to_cpu(w->send_req);
	out->env.context = le32_to_cpu(w->context);
	out->env.src = src;
	out->env.dst = le32_to_cpu(w->dst);
	out->env.tag = tag;
	out->env.len = le64_to_cpu(w->len);
	out->env.flags = flags;
	return KPROG_IB_OK;
}

/* A chunk lies inside a message of at most KPROG_MAX_MSG bytes. */
static enum kprog_ib_bad kprog_ib_parse_chunk(const struct kprog_ib_wchunk *w,
					      struct kprog_ib_chunk_desc *c)
{
	if (w->rsvd)
		return KPROG_IB_BAD_RSVD;
	c->offset = le64_to_cpu(w->offset);
	c->addr = le64_to_cpu(w->addr);
	c->len = le64_to_cpu(w->len);
	c->rkey = le32_to_cpu(w->rkey);
	if (!c->len)
		return c->addr || c->rkey ? KPROG_IB_BAD_CHUNK : KPROG_IB_OK;
	if (c->offset > KPROG_MAX_MSG || c->len > KPROG_MAX_MSG - c->offset ||
	    c->addr > U64_MAX - c->len)
		return KPROG_IB_BAD_CHUNK;
	return KPROG_IB_OK;
}

static enum kprog_ib_bad kprog_ib_parse_done(const struct kprog_ib_wdone *w,
					     u8 type,
					     struct kprog_ib_parsed *out)
{
	s32 status = (s32)le32_to_cpu(w->status);

	out->cookie = le64_to_cpu(w->cookie);
	out->offset = le64_to_cpu(w->offset);
	out->bytes = le64_to_cpu(w->bytes);
	out->flags = le32_to_cpu(w->flags);
	if (out->offset > KPROG_MAX_MSG || out->bytes > KPROG_MAX_MSG)
		return KPROG_IB_BAD_CHUNK;
	if (type == KPROG_IB_DONE)
		return out->flags != KPROG_IB_INV || status || out->bytes ?
		       KPROG_IB_BAD_FLAGS : KPROG_IB_OK;
	if ((out->flags & ~KPROG_IB_INV) || status > 0 || status < -MAX_ERRNO)
		return KPROG_IB_BAD_FLAGS;
	out->status = status;
	return KPROG_IB_OK;
}

/**
 * kprog_ib_parse() - check a received message and read it
 * @buf: the receive buffer
 * @len: bytes the completion says were received
 * @max_payload: largest eager payload this node accepts
 * @out: the message in host values, when it passes
 *
 * Stateless checks only: sizes, version, type, reserved fields, flags,
 * envelope ranges, chunks that wrap or leave the message. Any context.
 *
 * Return: KPROG_IB_OK, or why the message must be dropped.
 */
enum kprog_ib_bad kprog_ib_parse(const void *buf, u32 len, u32 max_payload,
				 struct kprog_ib_parsed *out)
{
	const struct kprog_ib_hdr *h = buf;
	const void *body = h + 1;
	enum kprog_ib_bad bad;
	u32 blen;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h))
		return KPROG_IB_BAD_SHORT;
	if (h->version != KPROG_IB_WIRE_VERSION)
		return KPROG_IB_BAD_VERSION;
	if (!h->type || h->type >= KPROG_IB_NR_TYPES)
		return KPROG_IB_BAD_TYPE;
	if (le32_to_cpu(h->len) != len)
		return KPROG_IB_BAD_LEN;
	blen = len - sizeof(*h);
	if (h->type == KPROG_IB_EAGER ? blen < kprog_ib_body_len[h->type] :
	    blen != kprog_ib_body_len[h->type])
		return KPROG_IB_BAD_LEN;
	out->type = h->type;
	out->credits = le16_to_cpu(h->credits);

	switch (h->type) {
	case KPROG_IB_EAGER: {
		const struct kprog_ib_wenv *w = body;

		bad = kprog_ib_parse_env(w, false, out);
		if (bad)
			return bad;
		if (out->env.len != blen - sizeof(*w) ||
		    out->env.len > max_payload)
			return KPROG_IB_BAD_PAYLOAD;
		out->payload = w + 1;
		return KPROG_IB_OK;
	}
	case KPROG_IB_RTS: {
		const struct kprog_ib_wrts *w = body;

		bad = kprog_ib_parse_env(&w->env, true, out);
		if (!bad)
			bad = kprog_ib_parse_chunk(&w->chunk, &out->chunk);
		if (bad)
			return bad;
		/* The first chunk, if any, starts the message. */
		if (out->chunk.offset || out->chunk.len > out->env.len)
			return KPROG_IB_BAD_CHUNK;
		out->cookie = le64_to_cpu(w->cookie);
		return KPROG_IB_OK;
	}
	case KPROG_IB_PULL: {
		const struct kprog_ib_wpull *w = body;

		out->cookie = le64_to_cpu(w->cookie);
		out->rid = le64_to_cpu(w->rid);
		out->offset = le64_to_cpu(w->offset);
		return out->offset > KPROG_MAX_MSG ? KPROG_IB_BAD_CHUNK :
		       KPROG_IB_OK;
	}
	case KPROG_IB_DESC: {
		const struct kprog_ib_wdesc *w = body;

		out->rid = le64_to_cpu(w->rid);
		return kprog_ib_parse_chunk(&w->chunk, &out->chunk);
	}
	case KPROG_IB_DONE:
	case KPROG_IB_FIN:
		return kprog_ib_parse_done(body, h->type, out);
	case KPROG_IB_GONE: {
		const struct kprog_ib_wgone *w = body;

		if (w->rsvd)
			return KPROG_IB_BAD_RSVD;
		out->key = le64_to_cpu(w->job_key);
		out->rank = le32_to_cpu(w->rank);
		return out->rank > S32_MAX ? KPROG_IB_BAD_ENV : KPROG_IB_OK;
	}
	default:	/* KPROG_IB_CREDIT */
		return KPROG_IB_OK;
	}
}

/**
 * kprog_ib_status() - the errno a send completes with for a FIN's status
 * @status: 0 or a negative errno from the wire
 *
 * The errnos the receiving side reports (see the cqe.error of the ABI)
 * pass; anything else becomes -EIO, so that a peer cannot make a local
 * completion say what kprog never says.
 *
 * Return: 0 or a negative errno.
 */
s32 kprog_ib_status(s32 status)
{
	switch (status) {
	case 0:
	case -ECONNRESET:
	case -ECANCELED:
	case -EFAULT:
	case -ENOMEM:
	case -EIO:
		return status;
	default:
		return -EIO;
	}
}

static u32 kprog_ib_put_hdr(void *buf, u8 type, u32 body)
{
	struct kprog_ib_hdr *h = buf;
	u32 len = sizeof(*h) + body;

	h->version = KPROG_IB_WIRE_VERSION;
	h->type = type;
	h->credits = 0;
	h->len = cpu_to_le32(len);
	return len;
}

static void kprog_ib_put_env(struct kprog_ib_wenv *w, u64 key,
			     const struct kprog_env *env, u64 send_req)
{
	w->job_key = cpu_to_le64(key);
	w->len = cpu_to_le64(env->len);
	w->send_req = cpu_to_le64(send_req);
	w->context = cpu_to_le32(env->context);
	w->src = cpu_to_le32(env->src);
	w->dst = cpu_to_le32(env->dst);
	w->tag = cpu_to_le32(env->tag);
	w->flags = cpu_to_le32(env->flags);
	w->rsvd = 0;
}

static void kprog_ib_put_chunk(struct kprog_ib_wchunk *w,
			       const struct kprog_ib_chunk_desc *c)
{
	w->offset = cpu_to_le64(c ? c->offset : 0);
	w->addr = cpu_to_le64(c ? c->addr : 0);
	w->len = cpu_to_le64(c ? c->len : 0);
	w->rkey = cpu_to_le32(c ? c->rkey : 0);
	w->rsvd = 0;
}

/**
 * kprog_ib_put_eager() - header and envelope of an EAGER message
 * @buf: at least KPROG_IB_EAGER_HDR + @env->len bytes; the caller copies
 *	the payload behind the returned offset
 * @key: job key
 * @env: envelope (no flags)
 * @send_req: the sender's req_id
 *
 * Return: bytes written (the payload's offset); the message is that plus
 * @env->len bytes long.
 */
u32 kprog_ib_put_eager(void *buf, u64 key, const struct kprog_env *env,
		       u64 send_req)
{
	kprog_ib_put_hdr(buf, KPROG_IB_EAGER,
			 sizeof(struct kprog_ib_wenv) + env->len);
	kprog_ib_put_env(buf + sizeof(struct kprog_ib_hdr), key, env,
			 send_req);
	return KPROG_IB_EAGER_HDR;
}

/**
 * kprog_ib_put_rts() - an RTS message
 * @buf: at least KPROG_IB_CTL_MAX bytes
 * @key: job key
 * @env: envelope (KPROG_ENV_RNDV set)
 * @send_req: the sender's req_id
 * @cookie: the send's cookie
 * @chunk: the first chunk, or NULL when none is registered
 *
 * Return: bytes of the message.
 */
u32 kprog_ib_put_rts(void *buf, u64 key, const struct kprog_env *env,
		     u64 send_req, u64 cookie,
		     const struct kprog_ib_chunk_desc *chunk)
{
	struct kprog_ib_wrts *w = buf + sizeof(struct kprog_ib_hdr);

	kprog_ib_put_env(&w->env, key, env, send_req);
	w->cookie = cpu_to_le64(cookie);
	kprog_ib_put_chunk(&w->chunk, chunk);
	return kprog_ib_put_hdr(buf, KPROG_IB_RTS, sizeof(*w));
}

/**
 * kprog_ib_put_pull() - a PULL message
 * @buf: at least KPROG_IB_CTL_MAX bytes
 * @cookie: the send
 * @rid: the receiving side's transfer
 * @offset: the chunk wanted
 *
 * Return: bytes of the message.
 */
u32 kprog_ib_put_pull(void *buf, u64 cookie, u64 rid, u64 offset)
{
	struct kprog_ib_wpull *w = buf + sizeof(struct kprog_ib_hdr);

	w->cookie = cpu_to_le64(cookie);
	w->rid = cpu_to_le64(rid);
	w->offset = cpu_to_le64(offset);
	return kprog_ib_put_hdr(buf, KPROG_IB_PULL, sizeof(*w));
}

/**
 * kprog_ib_put_desc() - a DESC message
 * @buf: at least KPROG_IB_CTL_MAX bytes
 * @rid: the receiving side's transfer
 * @chunk: the chunk, or NULL: none can be provided
 *
 * Return: bytes of the message.
 */
u32 kprog_ib_put_desc(void *buf, u64 rid,
		      const struct kprog_ib_chunk_desc *chunk)
{
	struct kprog_ib_wdesc *w = buf + sizeof(struct kprog_ib_hdr);

	w->rid = cpu_to_le64(rid);
	kprog_ib_put_chunk(&w->chunk, chunk);
	return kprog_ib_put_hdr(buf, KPROG_IB_DESC, sizeof(*w));
}

/**
 * kprog_ib_put_done() - a DONE or FIN message
 * @buf: at least KPROG_IB_CTL_MAX bytes
 * @type: KPROG_IB_DONE or KPROG_IB_FIN
 * @cookie: the send
 * @offset: the chunk read (DONE) or invalidated (FIN with KPROG_IB_INV)
 * @bytes: FIN: bytes received
 * @status: FIN: 0 or a negative errno
 * @flags: KPROG_IB_INV when the SEND invalidates the chunk's rkey
 *
 * Return: bytes of the message.
 */
u32 kprog_ib_put_done(void *buf, u8 type, u64 cookie, u64 offset, u64 bytes,
		      s32 status, u32 flags)
{
	struct kprog_ib_wdone *w = buf + sizeof(struct kprog_ib_hdr);

	w->cookie = cpu_to_le64(cookie);
	w->offset = cpu_to_le64(offset);
	w->bytes = cpu_to_le64(bytes);
	w->status = cpu_to_le32((u32)status);
	w->flags = cpu_to_le32(flags);
	return kprog_ib_put_hdr(buf, type, sizeof(*w));
}

/**
 * kprog_ib_put_gone() - a GONE message
 * @buf: at least KPROG_IB_CTL_MAX bytes
 * @key: job key
 * @rank: the rank that left
 *
 * Return: bytes of the message.
 */
u32 kprog_ib_put_gone(void *buf, u64 key, u32 rank)
{
	struct kprog_ib_wgone *w = buf + sizeof(struct kprog_ib_hdr);

	w->job_key = cpu_to_le64(key);
	w->rank = cpu_to_le32(rank);
	w->rsvd = 0;
	return kprog_ib_put_hdr(buf, KPROG_IB_GONE, sizeof(*w));
}

/**
 * kprog_ib_put_credit() - a CREDIT message (a header alone)
 * @buf: at least sizeof(struct kprog_ib_hdr) bytes
 *
 * Return: bytes of the message.
 */
u32 kprog_ib_put_credit(void *buf)
{
	return kprog_ib_put_hdr(buf, KPROG_IB_CREDIT, 0);
}

/**
 * kprog_ib_set_credits() - the credits a message returns, set when it is
 *	posted
 * @buf: a message built by one of the kprog_ib_put_*() functions
 * @credits: receive buffers returned
 */
void kprog_ib_set_credits(void *buf, u16 credits)
{
	struct kprog_ib_hdr *h = buf;

	h->credits = cpu_to_le16(credits);
}
