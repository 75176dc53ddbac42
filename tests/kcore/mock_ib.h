/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/kcore/mock_ib.h: the fake verbs layer (mock_ib.c) as the tests
 * see it. One RoCE device with one port, a GID table holding this node's
 * IPv4 address, and a fabric that moves the work requests posted on its
 * queue pairs only when the test says so (mock_ib_step(), mock_ib_run()):
 * SENDs land in the receive buffers the peer QP posted (RNR: they wait),
 * SEND_WITH_INV invalidates the peer's rkey, RDMA READs copy from the
 * peer's registered memory after checking its rkey, a zero-length WRITE
 * is acknowledged; a QP whose peer is gone gets "retry exceeded" and
 * moves to error, after which every request flushes. The device is
 * soft-RoCE (RDMA_DRIVER_RXE), and like rxe it fails a REG_MR posted
 * behind a SEND, READ or WRITE still on the wire (rxe runs it again when
 * it retransmits those: "rxe_reg_fast_mr: ... not free"). Completions run the
 * request's ib_cqe handler in softirq context, as IB_POLL_SOFTIRQ does.
 *
 * The other node of a pair can be played by the test (struct mock_ib_peer):
 * a QP of the fabric that receives into an inbox the test reads, sends
 * what the test gives it, and exposes test memory for the module's READs.
 */
#ifndef KCORE_MOCK_IB_H
#define KCORE_MOCK_IB_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

/* Failure masks (see mock.h): each makes its verb fail as the kernel's can. */
extern u64 mock_ib_modify_errors;	/* ib_modify_qp(): -EINVAL */
extern u64 mock_ib_send_cqes;	/* completions of send queues delivered */
extern u64 mock_ib_post_send_errors;	/* ib_post_send() and rdma_rw_ctx_post(): -ENOMEM */
extern u64 mock_ib_post_recv_errors;	/* ib_post_recv(): -ENOMEM */
extern u64 mock_ib_resolve_errors;	/* rdma_resolve_ip(): the callback gets -ENODATA */
extern u64 mock_ib_query_port_errors;	/* ib_query_port(): -EINVAL */
extern u64 mock_ib_map_mr_errors;	/* ib_map_mr_sg() maps nothing: -EINVAL */
/* The next post of a request of this ib_wr_opcode fails (-ENOMEM); -1: none. */
extern int mock_ib_post_fail_opcode;
/* The next request of this opcode completes with IB_WC_LOC_QP_OP_ERR; -1: none. */
extern int mock_ib_wc_fail_opcode;

/* The fake device (one port, RoCE v2, GID 1 = ::ffff:127.0.0.@host). */
struct ib_device *mock_ib_dev_add(u8 host);
/* Its removal: the clients' remove callbacks run first, as in ib_core. */
void mock_ib_dev_remove(struct ib_device *dev);
/* The port's state (IB_PORT_ACTIVE when added). */
void mock_ib_port_state(struct ib_device *dev, enum ib_port_state state);

/* Requests of these ib_wr_opcode bits are not moved by mock_ib_step(). */
extern u64 mock_ib_hold;
/* Moves the oldest request that can move; false if none can. */
bool mock_ib_step(void);
/* mock_ib_step() and queued work in turn until neither has anything. */
int mock_ib_run(void);
/* Requests posted and not yet completed, of one opcode (-1: any). */
int mock_ib_pending(int opcode);
/* Live QPs of the module (not the test's peers). */
int mock_ib_nr_qps(void);
/* The module's QP with this number, NULL if none. */
struct ib_qp *mock_ib_qp(u32 qpn);
/* The state the QP was last moved to. */
enum ib_qp_state mock_ib_qp_state(struct ib_qp *qp);

/* A node played by the test. */
struct mock_ib_peer;
struct mock_ib_peer *mock_ib_peer_new(u8 host);
u32 mock_ib_peer_qpn(struct mock_ib_peer *p);
u32 mock_ib_peer_psn(struct mock_ib_peer *p);
/* Connects the peer to the module's QP @qpn, whose first PSN is @psn. */
void mock_ib_peer_connect(struct mock_ib_peer *p, u32 qpn, u32 psn);
/* Queues a SEND (with invalidation of @inv_rkey when @inv) to its QP. */
void mock_ib_peer_send(struct mock_ib_peer *p, const void *buf, u32 len,
		       bool inv, u32 inv_rkey);
/* The oldest message it received; false if none. */
bool mock_ib_peer_recv(struct mock_ib_peer *p, void *buf, u32 *len,
		       bool *inv, u32 *inv_rkey);
/* Test memory the module may READ: returns its rkey. */
u32 mock_ib_peer_reg(struct mock_ib_peer *p, const void *buf, u64 len);
/* The peer READs the module's registered memory now: 0 or -EACCES. */
int mock_ib_peer_read(struct mock_ib_peer *p, void *dst, u64 addr, u32 rkey,
		      u64 len);
/* The node vanishes: its QP stops answering (requests to it fail). */
void mock_ib_peer_lost(struct mock_ib_peer *p);

#endif
