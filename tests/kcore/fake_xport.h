/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/kcore/fake_xport.h: a recording network transport that plays the
 * other nodes of a job (fake_xport.c).
 *
 * kt_fx_install() makes it the module's network transport
 * (kprog_xport_set_net()). From then on:
 *
 *  - envelopes the core sends to remote ranks are recorded in
 *    kt_fx.sent[] (send_env); the fake keeps their messages: an eager
 *    one's payload stays readable, a rendezvous one waits until the test
 *    plays the remote receiver (kt_fx_remote_read(), kt_fx_remote_fin());
 *  - the test injects what remote ranks send: kt_fx_eager() with its
 *    payload, kt_fx_rndv() with a remote descriptor (msg->rd.net), both
 *    through kprog_arrive(), from process or softirq context;
 *  - a matched remote rendezvous makes the core call pull: recorded in
 *    kt_fx.pulls[], completed when the test says (kt_fx_pull_done()), at
 *    once (kt_fx.pull_now) or refused (kt_fx.pull_err);
 *  - fin is recorded in kt_fx.fins[] (bytes, error, the descriptor's
 *    cookie);
 *  - kt_fx_node_lost() plays the loss of a node: its pulls in flight fail
 *    with -ECONNRESET, its pending rendezvous sends complete with
 *    -ECONNRESET, and kprog_peer_gone() runs for each of its ranks.
 *
 * The fixture (utils.c) uninstalls it after every test and releases what
 * it still holds (kt_fx_teardown()).
 */
#ifndef KCORE_FAKE_XPORT_H
#define KCORE_FAKE_XPORT_H

#include <linux/types.h>
#include "transport.h"
#include "utils.h"

#define KT_FX_MAX	64

/* An envelope the core sent to a remote rank. */
struct kt_fx_sent {
	struct kprog_env env;
	u64 send_req;
	bool may_bounce;
	struct kprog_msg *msg;		/* held by the fake; NULL once done */
	u64 cookie;			/* rendezvous: from get_handle */
};

/* A transfer the core asked the fake to pull. */
struct kt_fx_pull {
	struct kprog_xfer *x;		/* NULL once reported done */
	struct kprog_env env;
	u64 cookie, addr, len;
	u32 rkey;
	bool inline_ok;
};

/* A fin: the receiving side of a remote rendezvous is over. */
struct kt_fx_fin {
	struct kprog_env env;
	u64 cookie;
	u64 bytes;
	int err;
};

struct kt_fx {
	/* Controls, set by the test (zero after install). */
	int send_err;		/* send_env fails with this errno */
	bool bounce;		/* bounceable eager envelopes: -ENOBUFS */
	int get_handle_err;	/* get_handle fails with this errno */
	int pull_err;		/* pull refuses with this errno */
	bool pull_now;		/* pull copies kt_fx.pull_data and is done */
	const void *pull_data;	/* what pull_now copies (NULL: nothing) */
	bool done_in_softirq;	/* kt_fx_pull_done() reports from a softirq */
	u32 env_flags;		/* or-ed into kt_fx_eager()'s and kt_fx_rndv()'s envelopes */
	/* Records. */
	struct kt_fx_sent sent[KT_FX_MAX];
	int nsent;
	struct kt_fx_pull pulls[KT_FX_MAX];
	int npulls;
	struct kt_fx_fin fins[KT_FX_MAX];
	int nfins;
	int handles;		/* get_handle minus put_handle */
	u32 left[KT_FX_MAX];	/* rank_left: the ranks, in call order */
	int nleft;
	/* net_conn: its errno (set by the test), the peers it was called for */
	int conn_err;
	struct kprog_node_addr conns[KT_FX_MAX];
	int nconns;
};

extern struct kt_fx kt_fx;
extern const struct kprog_transport kt_fx_xport;

/* Resets the records and controls and installs the fake. */
void kt_fx_install(void);
/* Fixture: uninstall, complete and free whatever the fake still holds. */
void kt_fx_teardown(void);
/* After an aborted test: forget everything without touching the module. */
void kt_fx_forget(void);

/*
 * A message from remote rank @src to @dst (a joined endpoint), through
 * kprog_arrive(), in a softirq if @softirq. Returns kprog_arrive()'s
 * result; on an error the fake frees the message (as a transport would
 * drop it).
 */
int kt_fx_eager(struct kt_ep *dst, u32 src, u32 context, s32 tag,
		const void *data, u64 len, bool softirq);
/* A rendezvous of @len bytes; @cookie names it in the pull and the fin. */
int kt_fx_rndv(struct kt_ep *dst, u32 src, u32 context, s32 tag, u64 len,
	       u64 cookie, bool softirq);

/*
 * Completes pull @i: copies up to x->len bytes of @data (none if NULL)
 * into the receive buffer, then kprog_xfer_done() with the bytes copied
 * and @err (or the copy's error).
 */
void kt_fx_pull_done(int i, const void *data, int err);

/* The remote receiver of rendezvous send kt_fx.sent[@i] copies its data. */
u64 kt_fx_remote_read(int i, void *buf, u64 len);
/* ... and reports the end of it (the sender's completion follows). */
void kt_fx_remote_fin(int i, u64 bytes, int err);

/* Node @node of @e's job is lost (see above). */
void kt_fx_node_lost(struct kt_ep *e, u32 node);

#endif
