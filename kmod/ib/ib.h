/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog_ib: the ibverbs transport of kprog (the module kprog_ib.ko), its
 * objects and the calls between its files. docs/DESIGN.md ("The ibverbs
 * transport") has the picture.
 *
 *   xport_ib.c  the transport ops the core calls, module parameters,
 *               load and unload, the state file in debugfs
 *   ib_dev.c    RDMA devices (ib_client): which are usable, this node's
 *               address, registration with the core while one is
 *   ib_conn.c   connections (one RC QP per pair of nodes, connected out
 *               of band through KPROG_IOC_NET_CONN), receive buffers and
 *               credits, the send path and its backlog, completion
 *               handlers of sends and receives, teardown
 *   ib_wire.c   the wire format and the stateless checks of a message
 *   ib_plan.c   credit and chunk arithmetic (pure)
 *   ib_recv.c   what a received message does: admission of envelopes
 *               (job, node map, connection, ranks), delivery to the core,
 *               departures of remote ranks and lost nodes
 *   ib_rndv.c   rendezvous: user pages pinned per chunk, fast registration
 *               of the sender's chunks, RDMA READ into the receiver's
 *               pages (rdma_rw), DONE and FIN
 *   ib_trace.c  the tracepoints of ib_trace.h
 *   ib_pcache.c the pin cache: buffers' pages kept pinned between
 *               transfers until their mapping changes (mmu_interval_notifier)
 *
 * Calls go one way, down: xport_ib.c, ib_recv.c, ib_rndv.c, ib_pcache.c,
 * ib_conn.c, ib_dev.c, ib_wire.c and ib_plan.c. The connections report what they
 * receive and lose upwards through &struct kprog_ib_conn_upcalls, and a
 * device's removal reaches the connections through ib_dev.c's callback;
 * both are set at load by xport_ib.c (scripts/check-circles keeps it so).
 *
 * Contexts. Completion handlers run in softirq context (IB_POLL_SOFTIRQ).
 * They never sleep: pinning and unpinning user pages, READ set-up
 * (rdma_rw allocates), the last put of an endpoint, departures
 * (kprog_peer_gone) and connection teardown run on workqueues.
 *
 * Locks. kprog_ib_conns_lock (spin, bh) guards the list of connections;
 * each connection's lock (spin, bh) guards its state, credits, send
 * budgets, backlog and the lists of transfers bound to it, and is held
 * while posting, so that sends leave in backlog order. Never two
 * connection locks at once; no core lock is held when the core is
 * called.
 */
#ifndef _KPROG_IB_H
#define _KPROG_IB_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/scatterlist.h>
#include <rdma/ib_verbs.h>
#include <rdma/rw.h>
#include "msg.h"
#include "ib_wire.h"
#include "ib_plan.h"

struct kprog_job;
struct kprog_ep;
struct kprog_op;
struct kprog_xfer;
struct kprog_node_addr;
struct kprog_net_conn;
struct kprog_ubuf;
struct kprog_ib_pcent;
struct seq_file;

/* ---- module parameters (xport_ib.c), checked at load ---- */

extern unsigned int kprog_ib_eager_size;
extern unsigned int kprog_ib_recv_bufs;
extern unsigned int kprog_ib_max_conns;
extern unsigned int kprog_ib_max_reg_mb;
extern unsigned int kprog_ib_reg_pages;
extern unsigned int kprog_ib_max_reads;
extern unsigned int kprog_ib_conn_mrs;
extern bool kprog_ib_reg_qp;
extern unsigned int kprog_ib_keepalive_ms;
extern unsigned int kprog_ib_conn_admin;
extern unsigned int kprog_ib_pin_cache_mb;
extern unsigned int kprog_ib_send_signal;
extern bool kprog_ib_net_poll;

/**
 * struct kprog_ib_addr - a node's address, as connections see it
 * @family: AF_INET (the only family connected to)
 * @addr: the address, network byte order, IPv4 in the first 4 bytes
 */
struct kprog_ib_addr {
	u16 family;
	u8 addr[16];
};

/* ---- gauges, shown in debugfs: tests check that they return to 0 ---- */

enum kprog_ib_gauge {
	KPROG_IB_G_CONNS,	/* connections not yet freed */
	KPROG_IB_G_PINNED,	/* user pages pinned */
	KPROG_IB_G_MRS,		/* memory regions registered (valid rkeys) */
	KPROG_IB_G_REG_BYTES,	/* bytes held for registration (budget) */
	KPROG_IB_G_TXS,		/* rendezvous sends (sender side) */
	KPROG_IB_G_RDVS,	/* rendezvous messages (receiving side) */
	KPROG_IB_G_READS,	/* RDMA READ contexts posted */
	KPROG_IB_G_CACHED,	/* user pages held by the pin cache */
	KPROG_IB_NR_GAUGES,
};

extern atomic_long_t kprog_ib_gauges[KPROG_IB_NR_GAUGES];

/**
 * kprog_ib_gauge_add() - move a gauge
 * @g: enum kprog_ib_gauge
 * @n: amount, may be negative
 */
static inline void kprog_ib_gauge_add(enum kprog_ib_gauge g, long n)
{
	atomic_long_add(n, &kprog_ib_gauges[g]);
}

extern struct workqueue_struct *kprog_ib_wq;
extern struct workqueue_struct *kprog_ib_xfer_wq;
extern const struct kprog_transport kprog_ib_xport;

/* ---- messages on their way out (ib_conn.c) ---- */

/**
 * struct kprog_ib_out - a message queued for a connection
 * @node: in the connection's backlog, then, once posted, in its @sent list
 * @cqe: its send completion
 * @conn: the connection it was posted on
 * @seq: its place among the connection's posted requests (@post_seq)
 * @len: bytes of the message
 * @inv: post it as SEND_WITH_INV of @inv_rkey
 * @inv_rkey: the rkey it invalidates at the peer
 * @credit: the connection's own CREDIT message
 * @reg_wait: it carries an rkey whose REG_MR, posted on the connection's
 *	@reg_qp, has not completed: it and what is queued behind it wait (L)
 * @dma: its mapping while posted
 * @buf: the message: header, body, payload
 *
 * Allocated with its buffer (kprog_ib_out_alloc()) and freed when its send
 * completes or its connection dies; while @reg_wait, the chunk being
 * registered refers to it (its @reg_out), and the teardown frees it only
 * after the @reg_qp was drained.
 */
struct kprog_ib_out {
	struct list_head node;
	struct ib_cqe cqe;
	struct kprog_ib_conn *conn;
	u64 seq;
	u32 len;
	bool inv;
	bool credit;
	bool reg_wait;
	u32 inv_rkey;
	u64 dma;
	u8 buf[];
};

struct kprog_ib_out *kprog_ib_out_alloc(u32 len, gfp_t gfp);
void kprog_ib_out_free(struct kprog_ib_out *out);

/* ---- connections (ib_conn.c) ---- */

/**
 * enum kprog_ib_conn_state - the life of a connection
 * @KPROG_IB_CS_INIT: QP in INIT, receives posted, waiting for the peer's
 *	end (KPROG_NET_CONNECT); messages queue
 * @KPROG_IB_CS_CONNECTED: QP in RTS, messages flow
 * @KPROG_IB_CS_DEAD: failed or closed; teardown runs or ran
 */
enum kprog_ib_conn_state {
	KPROG_IB_CS_INIT,
	KPROG_IB_CS_CONNECTED,
	KPROG_IB_CS_DEAD,
};

/**
 * struct kprog_ib_port - the RDMA port this node's connections use
 * @dev: the device, referenced (ib_device_try_get())
 * @port: the port number
 * @gid_index: index of @gid in the port's GID table
 * @gid: the GID whose address is the node address (RoCE v2, IPv4)
 * @lid: the port's LID (InfiniBand link layer)
 * @mtu: the port's active MTU
 */
struct kprog_ib_port {
	struct ib_device *dev;
	u32 port;
	u32 gid_index;
	union ib_gid gid;
	u16 lid;
	enum ib_mtu mtu;
};

/**
 * struct kprog_ib_rx - a receive buffer
 * @cqe: its receive completion
 * @conn: its connection
 * @dma: its mapping
 * @ep: an endpoint whose last reference the completion handler could not
 *	drop; the buffer is reposted after the worker dropped it
 * @work: that worker
 * @buf: kprog_ib_conn.rx_size bytes
 */
struct kprog_ib_rx {
	struct ib_cqe cqe;
	struct kprog_ib_conn *conn;
	u64 dma;
	struct kprog_ep *ep;
	struct work_struct work;
	void *buf;
};

/**
 * struct kprog_ib_conn - one end of a reliable connection to a node
 * @ref: the connection list, transfers and messages bound to it,
 *	workers, a loopback twin
 * @lock: everything below marked (L)
 * @qp_mutex: held while the QP moves to RTS and while teardown drains and
 *	frees it
 * @state: enum kprog_ib_conn_state (L)
 * @loopback: the peer is this node (KPROG_JOIN_NET_ONLY's loopback)
 * @listed: the connection new messages to @peer take (one per node; the
 *	answering end of a loopback is not listed) (L, and the list lock)
 * @notify: when it dies, the ranks of @peer's node are lost
 * @peer: the node at the other end
 * @lnode: in the connection list
 * @twin: loopback: the other end, referenced until teardown
 * @dev: the RDMA device
 * @port_num: the device port
 * @gid_index: the source GID's index
 * @gid: the source GID
 * @lid: the port's LID
 * @mtu: the port's active MTU
 * @rd_atom: READs this end serves and issues at once (device limit)
 * @qpn: its QP's number
 * @psn: first PSN this end sends
 * @remote_qpn: the peer QP it is connected to, 0 before (L)
 * @pd: a protection domain of its own: rkeys registered for this peer
 *	are unusable on any other connection
 * @cq: from the device's CQ pool, polled in softirq
 * @cq_size: its entries
 * @qp: the RC queue pair
 * @mrs: the MR pool of registrations for the peer's READs
 * @mrs_out: MRs taken from it (L)
 * @max_pages: pages one registration (and one READ) maps
 * @rx: the receive buffers
 * @nr_rx: entries in @rx
 * @rx_size: bytes of each
 * @peer_max: largest message the peer receives
 * @cr: credits (L)
 * @sends_free: SENDs that may still be posted (L)
 * @reads_free: READ contexts that may still be posted (L)
 * @backlog: messages waiting for credits, a send slot or the connection
 *	(struct kprog_ib_out), in order (L)
 * @read_wait: receiving transfers waiting to post a READ (L)
 * @mr_wait: sending transfers waiting for a free MR (L)
 * @reg_alone: the device runs local work requests again when it
 *	retransmits the requests before them (rxe): a REG_MR is posted only
 *	with no request on the wire ahead of it ("Registration" in ib_rndv.c)
 * @reg_qp: QP connected to itself that carries only REG_MRs (rxe,
 *	reg_qp parameter): nothing of it is on the wire, so none is replayed
 *	and none waits for the wire; NULL: the fenced path
 * @wire_out: SENDs, READs and WRITEs posted and not yet completed (L)
 * @fence_wait: sending transfers waiting for @wire_out to reach 0 to
 *	post their REG_MR; while any waits, no new wire request is posted (L)
 * @sent: messages posted and not yet known complete, oldest first: most
 *	SENDs are unsignaled, and a signaled completion retires every message
 *	posted before it (L)
 * @post_seq: SENDs and probes posted so far (L)
 * @unsignaled: SENDs posted unsignaled since the last signaled SEND or
 *	probe (L)
 * @ka_seq: @post_seq of the probe in flight (L)
 * @txs: sending transfers whose RTS went on this connection (L)
 * @rdvs: receiving transfers being pulled through it (L)
 * @credit_busy: @credit_out is posted (L)
 * @credit_out: the CREDIT message, allocated with the connection
 * @ka_busy: the keepalive probe is posted (L)
 * @ka_probes: probes posted, for the state file (L)
 * @ka_cqe: the probe's completion
 * @ka_work: posts the probe every keepalive_ms while connected
 * @err: why it died
 * @dead_work: teardown
 * @init_work: drops an end left in INIT (its exchange never completed)
 */
struct kprog_ib_conn {
	struct kref ref;
	spinlock_t lock;	/* see (L) above */
	struct mutex qp_mutex;	/* QP state changes vs. teardown */
	u8 state;
	bool loopback;
	bool listed;
	bool notify;
	struct kprog_ib_addr peer;
	struct list_head lnode;
	struct kprog_ib_conn *twin;
	struct ib_device *dev;
	u32 port_num;
	u32 gid_index;
	union ib_gid gid;
	u16 lid;
	enum ib_mtu mtu;
	u8 rd_atom;
	u32 qpn;
	u32 psn;
	u32 remote_qpn;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u32 cq_size;
	struct ib_qp *qp;
	struct list_head mrs;
	u32 mrs_out;
	u32 max_pages;
	struct kprog_ib_rx *rx;
	u32 nr_rx;
	u32 rx_size;
	u32 peer_max;
	struct kprog_ib_credits cr;
	u32 sends_free;
	u32 reads_free;
	struct list_head backlog;
	struct list_head read_wait;
	struct list_head mr_wait;
	bool reg_alone;
	struct ib_qp *reg_qp;
	u32 wire_out;
	struct list_head fence_wait;
	struct list_head sent;
	u64 post_seq;
	u32 unsignaled;
	u64 ka_seq;
	struct list_head txs;
	struct list_head rdvs;
	bool credit_busy;
	struct kprog_ib_out *credit_out;
	bool ka_busy;
	u64 ka_probes;
	struct ib_cqe ka_cqe;
	struct delayed_work ka_work;
	int err;
	struct work_struct dead_work;
	struct delayed_work init_work;
};

extern spinlock_t kprog_ib_conns_lock;

/**
 * struct kprog_ib_conn_upcalls - what the connections report upwards
 * @recv: a message arrived on @conn (kprog_ib_recv()); returns an endpoint
 *	reference to drop where it may sleep, or NULL
 * @transfers_dead: @conn is dead: fail the transfers bound to it
 *	(kprog_ib_rndv_conn_dead())
 * @node_lost: the node at the other end of @conn is lost
 *	(kprog_ib_node_lost())
 * @wire_idle: nothing of @conn is on the wire any more and registrations
 *	wait for that (kprog_ib_rndv_wire_idle()); under its lock
 *
 * Given to kprog_ib_conn_init() by the module's load (xport_ib.c), so
 * that the connection layer calls nothing of the receive path and the
 * rendezvous above it.
 */
struct kprog_ib_conn_upcalls {
	struct kprog_ep *(*recv)(struct kprog_ib_conn *conn, const void *buf,
				 u32 len, bool inv, u32 inv_rkey);
	void (*transfers_dead)(struct kprog_ib_conn *conn);
	void (*node_lost)(struct kprog_ib_conn *conn);
	void (*wire_idle)(struct kprog_ib_conn *conn);
};

int kprog_ib_conn_init(const struct kprog_ib_conn_upcalls *up);
void kprog_ib_conn_exit(void);
struct kprog_ib_conn *kprog_ib_conn_get(const struct kprog_node_addr *na,
					bool create);
void kprog_ib_conn_put(struct kprog_ib_conn *conn);
int kprog_ib_conn_queue(struct kprog_ib_conn *conn, struct kprog_ib_out *out);
void kprog_ib_conn_queue_locked(struct kprog_ib_conn *conn,
				struct kprog_ib_out *out);
void kprog_ib_conn_fail_locked(struct kprog_ib_conn *conn, int err);
void kprog_ib_conn_kick(struct kprog_ib_conn *conn);
void kprog_ib_conn_kick_locked(struct kprog_ib_conn *conn);
void kprog_ib_conn_wire_done(struct kprog_ib_conn *conn);
void kprog_ib_conn_fence_flush(struct kprog_ib_conn *conn);

/**
 * kprog_ib_conn_fenced() - may no new request go on the wire now?
 * @conn: the connection, its lock held
 *
 * Return: true while a registration waits for the wire to be idle.
 */
static inline bool kprog_ib_conn_fenced(struct kprog_ib_conn *conn)
{
	return !list_empty(&conn->fence_wait);
}

int kprog_ib_conn_grant(struct kprog_ib_conn *conn, u16 credits);
void kprog_ib_conn_fail(struct kprog_ib_conn *conn, int err);
void kprog_ib_conn_dev_gone(struct ib_device *dev);
bool kprog_ib_conn_alive(struct kprog_ib_conn *conn);
void kprog_ib_conn_poll(struct kprog_ib_conn *conn);
void kprog_ib_conn_count(struct ib_wc *wc, u64 start);
void kprog_ib_conn_show(struct seq_file *m);
int kprog_ib_net_conn(struct kprog_net_conn *c);
void kprog_ib_addr_from_node(struct kprog_ib_addr *a,
			     const struct kprog_node_addr *na);

/* ---- devices (ib_dev.c) ---- */

int kprog_ib_dev_init(void (*gone)(struct ib_device *dev));
void kprog_ib_dev_exit(void);
int kprog_ib_local_addr(struct kprog_node_addr *addr);
int kprog_ib_port_get(struct kprog_ib_port *p);
void kprog_ib_port_put(struct kprog_ib_port *p);
bool kprog_ib_dev_present(struct ib_device *dev);
bool kprog_ib_addr_is_local(const struct kprog_ib_addr *a);
int kprog_ib_parse_node_addr(const char *s);

/* ---- receive path (ib_recv.c) ---- */

struct kprog_ep *kprog_ib_recv(struct kprog_ib_conn *conn, const void *buf,
			       u32 len, bool inv, u32 inv_rkey);
void kprog_ib_node_lost(struct kprog_ib_conn *conn);
bool kprog_ib_addr_eq(const struct kprog_ib_addr *a,
		      const struct kprog_node_addr *na);

/* ---- rendezvous (ib_rndv.c) ---- */

/**
 * struct kprog_ib_pin - pinned user pages of one chunk or piece
 * @lnode: on the unpin list
 * @npages: pages in @pages
 * @dirty: mark them dirty when unpinning (a READ wrote into them)
 * @budget: bytes of the registration budget it holds
 * @mm: the address space whose pinned_vm @npages are charged to
 *	(mmgrab()ed); NULL for a view of the pin cache
 * @cent: the pin cache's entry whose pages these are (not pinned nor
 *	charged again), or NULL
 * @sgt: one entry per page, offsets and lengths of the range
 * @pages: the pages
 */
struct kprog_ib_pin {
	struct llist_node lnode;
	struct mm_struct *mm;
	struct kprog_ib_pcent *cent;
	u32 npages;
	bool dirty;
	u64 budget;
	struct sg_table sgt;
	struct page *pages[];
};

/**
 * struct kprog_ib_chunk - a chunk of a sending transfer's buffer
 * @off: where it starts in the message
 * @len: bytes
 * @pin: its pinned pages (NULL: none)
 * @mr: its registration, from the connection's pool (NULL: none)
 * @nents: entries DMA-mapped for @mr
 * @rkey: the rkey in force while @registered
 * @registered: REG_MR posted, the rkey not yet invalidated
 * @invalidating: a LOCAL_INV of it is posted
 * @reg_wr: the REG_MR work request
 * @reg_cqe: its completion
 * @reg_out: the RTS or DESC that waits in the backlog for that completion
 *	(posted on the connection's reg_qp only), or NULL (L)
 * @inv_cqe: the LOCAL_INV's completion
 * @tx: the transfer it belongs to
 */
struct kprog_ib_chunk {
	u64 off;
	u64 len;
	struct kprog_ib_pin *pin;
	struct ib_mr *mr;
	int nents;
	u32 rkey;
	bool registered;
	bool invalidating;
	struct ib_reg_wr reg_wr;
	struct ib_cqe reg_cqe;
	struct kprog_ib_out *reg_out;
	struct ib_cqe inv_cqe;
	struct kprog_ib_tx *tx;
};

/**
 * enum kprog_ib_tx_state - a sending transfer
 * @KPROG_IB_TX_NEW: made by get_handle, not yet sent
 * @KPROG_IB_TX_SENT: its RTS is queued or sent on @conn
 * @KPROG_IB_TX_FIN: its FIN came; completes once no rkey is left
 * @KPROG_IB_TX_DONE: completed
 */
enum kprog_ib_tx_state {
	KPROG_IB_TX_NEW,
	KPROG_IB_TX_SENT,
	KPROG_IB_TX_FIN,
	KPROG_IB_TX_DONE,
};

/**
 * struct kprog_ib_tx - the sending side of a rendezvous to another node
 * @ref: its id, the connection's list, workers, completions in flight
 * @cnode: in @conn->txs
 * @wnode: in @conn->mr_wait or the budget wait list
 * @conn: the connection its RTS went on (referenced), or NULL
 * @sop: the send operation (referenced)
 * @key: the job key
 * @env: the envelope
 * @id: its index in the id table
 * @cookie: what the wire names it by (id and a generation)
 * @state: enum kprog_ib_tx_state (conn lock once sent)
 * @want: offset of a chunk the receiver asked for, not yet described,
 *	or U64_MAX (conn lock)
 * @rid: the receiving side's id for that chunk
 * @next: offset of the next chunk to describe (conn lock)
 * @waiting: on a wait list (conn lock / budget lock)
 * @fenced: on the connection's @fence_wait (conn lock)
 * @ch: at most two chunks held at once: the one being read and the next
 * @fin_bytes: from the FIN
 * @fin_status: from the FIN
 * @err: a chunk could not be pinned: the send completes with this
 * @work: pins and registers a wanted chunk
 */
struct kprog_ib_tx {
	struct kref ref;
	struct list_head cnode;
	struct list_head wnode;
	struct kprog_ib_conn *conn;
	struct kprog_op *sop;
	u64 key;
	struct kprog_env env;
	u32 id;
	u64 cookie;
	u8 state;
	u64 want;
	u64 rid;
	u64 next;
	bool waiting;
	bool fenced;
	struct kprog_ib_chunk ch[2];
	u64 fin_bytes;
	int fin_status;
	int err;
	struct work_struct work;
};

/**
 * struct kprog_ib_rdv - the receiving side of a rendezvous from another
 *	node; its message's &kprog_rdesc.net.conn points to it
 * @ref: the message, its id, workers, the READ in flight
 * @cnode: in @conn->rdvs while pulled
 * @wnode: in @conn->read_wait
 * @conn: the connection the RTS came on (referenced)
 * @cookie: the sender's cookie
 * @id: its index in the id table
 * @rid: what the wire names it by
 * @x: the transfer once pulled (until kprog_xfer_done())
 * @pos: bytes read into the receive buffer
 * @ch: chunks described by the sender, @ch[0] being read (conn lock)
 * @nch: valid entries of @ch (conn lock)
 * @want: offset of the chunk a PULL asked for, or U64_MAX (conn lock)
 * @reading: a READ is being set up, waits or is posted (conn lock)
 * @posted: it is posted (conn lock)
 * @err: the sender cannot provide a chunk: the transfer fails with this
 * @rw: the READ context
 * @rw_nwr: its work requests
 * @pin: the pages it reads into
 * @piece: bytes it reads
 * @read_cqe: its completion
 * @read_start: when it was posted (for the trace)
 * @work: pins the next piece and posts its READ
 */
struct kprog_ib_rdv {
	struct kref ref;
	struct list_head cnode;
	struct list_head wnode;
	struct kprog_ib_conn *conn;
	u64 cookie;
	u32 id;
	u64 rid;
	struct kprog_xfer *x;
	u64 pos;
	struct kprog_ib_chunk_desc ch[2];
	u8 nch;
	u64 want;
	bool reading;
	bool posted;
	int err;
	struct rdma_rw_ctx rw;
	int rw_nwr;
	struct kprog_ib_pin *pin;
	u64 piece;
	struct ib_cqe read_cqe;
	u64 read_start;
	struct work_struct work;
};

int kprog_ib_rndv_init(void);
void kprog_ib_rndv_exit(void);
int kprog_ib_get_handle(struct kprog_op *sop, struct kprog_msg *msg);
void kprog_ib_put_handle(struct kprog_op *sop);
int kprog_ib_tx_rts(struct kprog_ib_conn *conn, u64 key,
		    struct kprog_msg *msg);
int kprog_ib_tx_pull(struct kprog_ib_conn *conn,
		     const struct kprog_ib_parsed *m);
int kprog_ib_tx_done(struct kprog_ib_conn *conn,
		     const struct kprog_ib_parsed *m, bool inv, u32 inv_rkey);
struct kprog_ib_rdv *kprog_ib_rdv_new(struct kprog_ib_conn *conn,
				      const struct kprog_ib_parsed *m);
int kprog_ib_rdv_desc(struct kprog_ib_conn *conn,
		      const struct kprog_ib_parsed *m);
int kprog_ib_pull(struct kprog_xfer *x, bool inline_ok);
void kprog_ib_fin(struct kprog_msg *msg, u64 bytes, int err);
void kprog_ib_rndv_conn_dead(struct kprog_ib_conn *conn);
void kprog_ib_rndv_wire_idle(struct kprog_ib_conn *conn);
void kprog_ib_rndv_post_reads(struct kprog_ib_conn *conn);
void kprog_ib_rdv_put(struct kprog_ib_rdv *rdv);
int kprog_ib_pin_charge(const struct kprog_ubuf *b, u32 npages);

/* ---- the pin cache of send buffers (ib_pcache.c) ---- */

struct kprog_ib_pin *kprog_ib_pcache_pin(const struct kprog_ubuf *b, u64 pos,
					 u64 len, bool write, int *err);
void kprog_ib_pcache_unuse(struct kprog_ib_pcent *e);
void kprog_ib_pcache_show(struct seq_file *m);
void kprog_ib_pcache_exit(void);

#endif /* _KPROG_IB_H */
