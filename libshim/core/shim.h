/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libkprog internals: shared state of the PMPI shim that moves the
 * point-to-point traffic of node-local intra-communicators to /dev/kprog.
 */
#ifndef KPROG_SHIM_H
#define KPROG_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <mpi.h>
#include <linux/kprog.h>
#include "spin.h"
#include "clock.h"
#include "rbatch.h"

/* ---- global state (init.c) ---- */
struct kp_state {
	bool active;		/* kprog in use; false = pure pass-through */
	int fd;
	int world_rank, world_size;
	MPI_Comm node_comm;
	unsigned char *local;	/* world rank -> on this node */
	/*
	 * The job spans nodes through the module's network transport: every
	 * world rank is reachable, not only the local ones (KPROG_JOIN with a
	 * node map). net_only: KPROG_TRANSPORT=ib, ranks of this node go
	 * through the network transport too (no fast-path channels).
	 */
	bool net, net_only;
	int nr_nodes, node_idx;	/* nodes of the job, this node's index */
	struct kprog_ring_hdr *ring;
	struct kprog_cqe *cqes;
	size_t ring_bytes;
	uint32_t ring_mask;
	uint32_t max_iov, max_ops, eager_limit;
	bool recv_arrived;	/* the module has KPROG_RECV_ARRIVED */
	bool waiter;		/* the module has KPROG_FEAT_WAITER */
	bool rbatch;		/* KPROG_FEAT_RECV_BATCH and KPROG_RECV_BATCH: receives in batches */
	bool small_yield;	/* KPROG_SMALL_RECV_YIELD: kp_req_wait_yields() */
	uint64_t net_poll_ns;	/* KPROG_NET_POLL_US: kp_wait_step() polls the network (0: not) */
	uint64_t net_polls;	/* those polls, for the verbose summary */
	struct kp_spin spin;	/* how long blocking calls spin before sleeping */
	uint64_t activity;	/* bumped by every completion: idle detection */
	long full_wait_ns;	/* a send spins this long for channel room */
	uint64_t recv_copy_max;	/* KPROG_RECV_COPY_MAX (req.c post_ioctl()) */
	int verbose;
	/* wait-state profiler: the ring's times (KPROG_JOIN_TIMES), or NULL */
	const struct kprog_cqe_times *times;
	struct kprog_cqe_times cqe_times;	/* of the completion being handled */
	bool mt;		/* MPI_THREAD_MULTIPLE: the shim's lock is taken (lock.c) */
	bool coll;		/* nonblocking collectives go to the module (coll.c) */
	uint32_t max_coll_steps;	/* steps of one schedule (kprog_info) */
	size_t coll_min;	/* KPROG_COLL_MIN: smaller collectives stay with Open MPI */
	bool coll_min_auto;	/* KPROG_COLL_MIN -1: the floors of coll_mpi.c */
};
extern struct kp_state kp;

/* ---- MPI_THREAD_MULTIPLE (lock.c; sleeping: mt_wait.c) ---- */
void kp_mt_lock(void);
void kp_mt_unlock(void);
bool kp_mt_trylock(void);	/* true at once when !kp.mt */
int kp_mt_drop(void);		/* release completely; returns the depth */
void kp_mt_retake(int depth);
void kp_mt_yield(void);		/* let the other threads in */
void kp_mt_nap_begin(void);	/* a blocking call is about to sleep */
void kp_mt_nap_end(void);
void kp_mt_sleep(long timeout_ns, uint32_t events);	/* kp_sleep_events unlocked */
void kp_mt_after_progress(void);	/* something completed: kick the sleepers */

/* The batch queue to the kernel now (rbatch.h; req.c does it). */
static inline void kp_recv_batch_flush(void)
{
	if (__builtin_expect(kp_rb_n != 0, 0))
		kp_rb_flusher();
}

/* Locks without flushing the batch queue: MPI_Irecv, which may add to it. */
static inline int kp_guard_lock(void)
{
	if (__builtin_expect(kp.mt, 0)) {
		kp_mt_lock();
		return 1;
	}
	return 0;
}

/*
 * Every other entry first posts the receives MPI_Irecv queued (rbatch.h):
 * the kernel then holds them before this call can observe, cancel, probe
 * or post anything.
 */
static inline int kp_guard_begin(void)
{
	int held = kp_guard_lock();

	kp_recv_batch_flush();
	return held;
}

static inline void kp_guard_end(int *held)
{
	if (__builtin_expect(*held, 0))
		kp_mt_unlock();
}

/* First line of every shim entry point: holds the lock until it returns. */
#ifndef KP_NO_MT
#define KP_GUARD() int kp_guard_ __attribute__((cleanup(kp_guard_end), unused)) = kp_guard_begin()
#define KP_GUARD_QUEUE() int kp_guard_ __attribute__((cleanup(kp_guard_end), unused)) = kp_guard_lock()
#else
/*
 * libkprog-nomt.so (make -C libshim nomt): the shim as it would be with no
 * thread support at all, only to measure what the lock costs a
 * single-threaded program (bench A/B mode); never installed.
 */
#define KP_GUARD() int kp_guard_ __attribute__((unused)) = (kp_recv_batch_flush(), 0)
#define KP_GUARD_QUEUE() int kp_guard_ __attribute__((unused)) = 0
#endif

/* An Open MPI call that may block, made without the lock. */
#ifdef KP_NO_MT
#define KP_PMPI(call) (call)
#else
#define KP_PMPI(call) ({						\
	int kp_d_ = __builtin_expect(kp.mt, 0) ? kp_mt_drop() : 0;	\
	int kp_rc_ = (call);						\
	if (kp_d_)							\
		kp_mt_retake(kp_d_);					\
	kp_rc_;								\
})
#endif
void kp_setup(int provided);	/* after PMPI_Init/Init_thread succeeded */
void kp_shutdown(void);		/* before PMPI_Finalize */
/* connect this node to the job's other nodes (netconn.c); 0 or an errno */
int kp_net_connect(MPI_Comm leaders, const struct kprog_node_addr *nodes, int nr, int self,
		   int err);

#define kp_log(lvl, ...) do { if (kp.verbose >= (lvl)) kp_logf(__VA_ARGS__); } while (0)
void kp_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- communicators (comm.c) ---- */
struct kp_comm {
	MPI_Comm comm;
	uint32_t ctx;
	int size, rank;
	int *c2w;		/* comm rank -> world rank */
	int *w2c;		/* world rank -> comm rank or -1 */
	int refs;		/* table + requests holding it */
	bool freed;		/* removed from the table by Comm_free */
	bool spans;		/* has ranks of other nodes (network transport) */
	uint32_t coll_seq;	/* nonblocking collectives started: the next one's tag */
	uint32_t nbr_max;	/* distributed graph: most neighbours (in + out) of a member */
	struct kp_comm *next;
};

void kp_comm_init(void);
struct kp_comm *kp_comm_lookup(MPI_Comm comm);
void kp_comm_register(MPI_Comm comm, uint32_t fixed_ctx, bool fixed);
void kp_comm_new(MPI_Comm *newcomm);	/* after a creating PMPI call */
void kp_comm_get(struct kp_comm *c);
void kp_comm_put(struct kp_comm *c);
void kp_comm_fini(void);
void kp_comm_forget(MPI_Comm comm);	/* after Comm_free/Comm_disconnect */
/* Neighbourhood collectives (coll_neighbor.c): a distributed graph's bound, agreed at creation */
/*
 * The neighbourhood collectives' topology records (coll/coll_neighbor.c),
 * reached through pointers it sets when the library loads, so that the
 * core's communicator calls do not call up into a layer (no circle).
 */
extern void (*kp_coll_topo_created)(MPI_Comm comm);
extern void (*kp_coll_topo_dup)(MPI_Comm old, MPI_Comm dup);
int kp_err(MPI_Comm comm, int code);	/* invoke the errhandler, return code */

/* Open MPI's own context id of a communicator (ompi_cid.c) */
bool kp_ompi_cid_init(void);	/* false: the layout is not the expected one */
bool kp_ompi_cid_usable(void);
uint32_t kp_ompi_cid(MPI_Comm comm);

/* nonblocking constructors (idup.c) */
extern struct kp_req *kp_idup_pending;
void kp_idup_poll(void);	/* register what Open MPI completed */

/* datatype layouts: dtype.h (a request holds one while a scatter is due) */
struct kp_layout;

/* ---- requests (req.c) ---- */
enum kp_kind { KR_SEND, KR_RECV, KR_MSG, KR_IDUP, KR_COLL };
enum kp_rstate { RS_FREE, RS_INACTIVE, RS_ACTIVE, RS_DEFERRED, RS_COMPLETE };
enum kp_mode { M_STD, M_SYNC, M_READY, M_BUFFERED };

struct kp_req {
	uint32_t gen;
	uint32_t next_free;
	uint8_t kind, state, mode;
	bool persistent;
	bool user_freed;	/* release when it completes */
	bool internal;		/* no user handle (Bsend copies) */
	bool proc_null;
	bool mrecv;		/* receive of a dequeued message */
	bool in_kernel;		/* a posted receive counted in n_kernel_recv */
	bool upost;		/* a receive posted in user space (fast.c) */
	bool umsg;		/* KR_MSG: its payload is in tmp (fast-path Mprobe) */
	bool blocking;		/* the caller waits for it now: KPROG_POST_BLOCKING */
	bool batch;		/* MPI_Irecv's: may wait in the batch queue (rbatch.h) */
	bool shared;		/* the one completed-send object (kp_req_done_send) */
	uint32_t grant;		/* a send through its channel: 1 + its grant slot (rts.c) */
	struct kp_req *unext, *uprev;	/* user-posted receives, in order */
	struct kp_req *knext, *kprev;	/* receives posted in the kernel */
	struct kp_comm *comm;
	void *buf;
	int count;
	MPI_Datatype type;
	bool type_dup;		/* type is our own dup (persistent) */
	MPI_Datatype utype;	/* dup kept for PMPI_Unpack at completion */
	int peer, tag;		/* comm rank / MPI tag as given */
	uint64_t msg_id;	/* KR_RECV with mrecv; KR_MSG: its id */
	/* what was posted */
	struct kp_layout *lay;	/* held while a scatter/unpack is due */
	void *tmp;		/* packed copy */
	size_t tmp_bytes;
	uint64_t cap;		/* recv: bytes the buffer holds */
	bool tmp_unpack;	/* recv: unpack tmp at completion */
	struct kprog_iov *iov;
	uint32_t next_deferred;
	/* result */
	MPI_Status status;
	int err;		/* MPI error code of the completion */
	bool timed;		/* a timed receive (kernel or channel stamp): late_ns is exact */
	uint64_t post_tick;	/* receive, profiler on: when the program started it (kp_ticks) */
	uint64_t late_ns;	/* its Late Sender time (seed 003) */
	/*
	 * Not cleared by kp_req_alloc() (a third of the object, in every
	 * message): each is written before it is read, post by prepare().
	 */
	struct kprog_post post;	/* kept for deferred posting */
	/* KR_IDUP: Open MPI's request and communicator (idup.c) */
	MPI_Request inner;
	MPI_Comm newcomm;
	struct kp_req *pnext;	/* pending idups; deferred collectives */
	struct kp_coll *coll;	/* KR_COLL: its schedule and buffers (coll.c) */
};

#define KP_NO_REQ 0xffffffffu

/*
 * What the request layer (req.c) calls above it, given by MPI_Init
 * (init.c): the fast path's krecv hint and state (fast.c), the end of a
 * channel rendezvous (rts.c). Through these req.c calls neither file,
 * while both call it (scripts/check-circles).
 */
struct kp_req_upcalls {
	void (*krecv)(bool on);			/* kp_fast_krecv() */
	bool (*user_recvs)(void);		/* kp_fast_user_recvs() */
	uint64_t (*rx_published)(void);		/* kp_fast_rx_published() */
	void (*grant_done)(struct kp_req *r);	/* kp_rts_done() */
	int (*grant_cancel)(struct kp_req *r);	/* kp_rts_cancel() */
};

void kp_pool_init(const struct kp_req_upcalls *up);
bool kp_is_req(MPI_Request r);
bool kp_is_msg(MPI_Message m);
struct kp_req *kp_req_alloc(void);
struct kp_req *kp_req_done_send(void);	/* handle of every send complete at once */
void kp_req_release(struct kp_req *r);
void kp_req_drop(struct kp_req *r);	/* free what a post prepared */
bool kp_deferred_pending(void);
static inline MPI_Request kp_handle(struct kp_req *r) { return (MPI_Request)(void *)r; }
static inline struct kp_req *kp_req(MPI_Request r) { return (struct kp_req *)(void *)r; }
/* May a kernel worker be moving r's data (so a spinner should yield)? */
static inline bool kp_req_kernel_work(const struct kp_req *r)
{
	if (r->state == RS_DEFERRED)
		return true;	/* on its way to the kernel */
	return r->in_kernel || ((r->kind == KR_SEND || r->kind == KR_COLL) && r->state == RS_ACTIVE);
}
/*
 * Does a blocking call waiting for r yield the CPU now and then, for a
 * kernel worker that may need it (progress.c kp_wait_step())? As
 * kp_req_kernel_work(), except that a receive posted in the module from
 * one source on another node (@remote) that holds at most KP_SOFTIRQ_RECV
 * bytes needs no worker: the softirq that delivers its message copies
 * into its pinned pages and completes it (docs/DESIGN.md), and softirqs
 * run at interrupt exit whether the waiter yields or not. small_yield
 * (KPROG_SMALL_RECV_YIELD, default on) keeps the yield for these too.
 * kp_wait_yields() works out @remote.
 */
#define KP_SOFTIRQ_RECV 8192u
static inline bool kp_req_wait_yields(const struct kp_req *r, bool small_yield, bool remote)
{
	if (!small_yield && remote && r->kind == KR_RECV && r->state == RS_ACTIVE &&
	    r->in_kernel && r->cap <= KP_SOFTIRQ_RECV)
		return false;
	return kp_req_kernel_work(r);
}
bool kp_wait_yields(const struct kp_req *r);	/* progress.c */
uint64_t kp_req_id(struct kp_req *r);
uint32_t kp_req_slot(const struct kp_req *r);	/* its index in the pool */
struct kp_req *kp_req_at(uint32_t slot);	/* NULL: no live object there */
void kp_ring_drain(void);		/* completions from the ring, overflow */
void kp_deferred_flush(void);		/* posts the module refused earlier */
void kp_deferred_arrived(void);		/* idle: kept-back receives take arrived messages */
bool kp_deferred_sends(void);		/* sends wait for kernel slots */
bool kp_deferred_recvs(void);		/* receives wait for kernel slots */
const struct kp_req *kp_kernel_recvs(void);	/* receives in the kernel (knext) */
void kp_sleep(long timeout_ns);		/* KPROG_IOC_WAIT */
void kp_net_poll(void);			/* KPROG_IOC_WAIT, KPROG_WAIT_POLL, no sleep */
void kp_sleep_events(long timeout_ns, uint32_t events);	/* ... or an event */
int kp_post(struct kp_req *r, unsigned long ioc);	/* MPI error code */
void kp_complete(struct kp_req *r, const struct kprog_cqe *cqe);
/* Completion of a KR_COLL request; set by coll.c, so req.c needs no coll.c. */
extern void (*kp_coll_done)(struct kp_req *r, const struct kprog_cqe *cqe);
/*
 * A request of a collective kprog runs (coll.c), and the bytes its
 * schedule sends: the profiler files waits on it as Wait at NxN.
 */
bool kp_coll_req(MPI_Request h, uint64_t *bytes);
/* Frees a persistent collective's kept schedule at its release (coll.c). */
extern void (*kp_coll_free)(struct kp_req *r);
void kp_complete_now(struct kp_req *r, int src, int tag, size_t bytes);
void kp_cancel(struct kp_req *r);
bool kp_outstanding_internal(void);

/* ---- progress and waiting (progress.c) ---- */
struct kp_wait {
	uint64_t t0;		/* start of the wait, 0 before the first step */
	uint64_t last;		/* start of the current idle stretch */
	uint64_t seen;		/* kp.activity at that point */
	unsigned int polls;	/* idle steps, for reading the clock sparingly */
	unsigned int naps;	/* sleeps in a row that nothing ended (progress.c nap()) */
	uint64_t delay0;	/* run delay at this wait's first yield (kp_spin_yield()) */
	uint64_t queue_t;	/* last look at the machine's run queue (cpus_free()) */
	bool free;		/* then no task waited for a CPU */
	bool alone;		/* this idle stretch spun on past the limit (CPUs free) */
	bool slept;		/* this idle stretch slept in the kernel */
	bool kernel_work;	/* a kernel worker may need this CPU */
	bool dumped;		/* the hang diagnostics were printed */
};
void kp_progress(void);			/* ring, deferred posts, fast path */
void kp_progress_hook(bool on);		/* run kp_progress in opal_progress */
void kp_wait_step(struct kp_wait *w, bool ompi_pending);
void kp_wait_end(struct kp_wait *w);	/* the wait is over: adapt the spin */
void kp_spin_yield(uint64_t now, uint64_t *delay0);	/* a timed yield of a shared-case spin */
void kp_spin_handover(bool kicked, uint32_t waiter);	/* oversubscribed: a yield after a blocking send */
void kp_wait_one(struct kp_req *r);	/* until r is complete */

/* ---- fast path (fast.c) ---- */
struct kp_fast_stats {
	uint64_t sent, received, uposted, to_kernel, drains, kicks, full, full_fallback;
};
/*
 * What the fast path calls above it, given by MPI_Init (init.c): progress
 * while a full channel drains, the channel rendezvous's reaping when the
 * kernel's events moved (a departure).
 */
struct kp_fast_upcalls {
	void (*progress)(void);			/* kp_progress() */
	void (*departed)(void);			/* kp_rts_reap() */
};
/* limit >= 0: at most that many bytes per fast-path message (KPROG_FAST_LIMIT) */
void kp_fast_init(const struct kprog_info *info, long limit, const struct kp_fast_upcalls *up);
uint32_t kp_fast_limit(void);	/* 0 when the fast path is off */
void kp_fast_fini(void);
bool kp_fast_active(void);
const struct kp_fast_stats *kp_fast_stats(void);
int kp_fast_send(struct kp_comm *c, const void *buf, int count, MPI_Datatype type, int dest,
		 int tag, int mode);	/* 1: sent and complete */
int kp_fast_recv_now(struct kp_comm *c, void *buf, int count, MPI_Datatype type, int source,
		     int tag, MPI_Status *st, int *err);	/* 1: received */
extern uint64_t kp_fast_spin_t0;	/* when kp_fast_recv_spin() last began */
int kp_fast_recv_spin(struct kp_comm *c, void *buf, int count, MPI_Datatype type, int source,
		      int tag, MPI_Status *st, int *err);	/* ... polling its channel */
void kp_fast_dump(void);		/* state for a wait that hangs */
bool kp_fast_try_recv(struct kp_req *r);	/* completed r from a channel */
bool kp_fast_upost(struct kp_req *r);	/* posted r in user space */
int kp_fast_irecv(struct kp_req *r);	/* MPI_Irecv: done or posted here */
void kp_fast_to_kernel(void);		/* user-posted receives -> kernel */
int kp_fast_cancel(struct kp_req *r);	/* 1: r was user-posted, now cancelled */
int kp_fast_probe(struct kp_comm *c, int source, int tag, struct kp_req *m, int *found,
		  MPI_Status *st);	/* 1: answered; m: dequeue into it */
int kp_fast_mrecv(struct kp_req *m, void *buf, int count, MPI_Datatype type, MPI_Status *st);
void kp_fast_poll(void);
void kp_fast_sent_counts(uint64_t *msgs, uint64_t *bytes);	/* += per world rank */
bool kp_fast_news(void);		/* something to poll since the last poll */
bool kp_fast_user_recvs(void);		/* receives posted in user space exist */
uint64_t kp_fast_rx_published(void);	/* bytes published to us on all channels */
void kp_fast_waiting(bool on);		/* ask senders to kick us */
bool kp_fast_want_recv(const struct kp_req *r);	/* r needs only its source's kicks */
void kp_fast_want(bool narrow);		/* the wait's requests all do: fewer kicks */
void kp_fast_kick(int w);		/* after a record to w: wake it if it sleeps */
/*
 * The same-CPU hand-over (spin.h KP_SPIN_SEND_YIELD 3): while this rank
 * waits for a message it tells the senders of its channels the CPU it
 * waits on (kprog_chan_dir.waiter_cpu); a blocking send whose receiver
 * waits on the sender's own CPU yields to it. Oversubscribed and single-
 * threaded only: elsewhere nobody yields, so nobody publishes either.
 */
static inline bool kp_waiter_pub(void)
{
	return KP_SPIN_SEND_YIELD == 3 && kp.spin.oversub && !kp.mt;
}
void kp_fast_waiter(uint32_t cpu1);	/* a wait's CPU + 1 to its senders, 0: over */
uint32_t kp_fast_waiter_of(const struct kp_comm *c, int dest);	/* dest's, after a send to it */
struct kp_dir *kp_fast_tx(int w);	/* the channel to w to write in, or NULL */
void kp_fast_krecv(bool on);		/* the krecv hint: receives in the kernel */
/* ---- rendezvous sends through channels (rts.c) ---- */
void kp_rts_init(const struct kprog_info *info);	/* after kp_fast_init() */
void kp_rts_fini(void);
int kp_rts_send(struct kp_req *r);	/* 1: r is posted through its channel */
void kp_rts_done(struct kp_req *r);	/* r (r->grant) completed: free its slot */
int kp_rts_cancel(struct kp_req *r);	/* 1: withdrawn before the kernel took it */
uint64_t kp_rts_sent(void);
void kp_rts_reap(void);
void kp_handle_cqe(const struct kprog_cqe *cqe);	/* a completion, as from the ring */			/* fail sends whose receiver left */
bool kp_fast_closed(int w);		/* the channel with w is closed */
void kp_status_empty(MPI_Status *st);
void kp_status_copy(MPI_Status *dst, const struct kp_req *r, bool with_error);
/* After a wait/test found r complete: copy status, free or deactivate. */
int kp_req_finish(MPI_Request *h, MPI_Status *st, bool with_error, MPI_Comm *errcomm);
MPI_Comm kp_req_comm(const struct kp_req *r);	/* for its errhandler */
int kp_errno_to_mpi(int err);

/* ---- point-to-point (p2p.c, persist.c, post.c) ---- */
int kp_post_kernel(struct kp_req *r);	/* describe r's buffer, post it in the kernel */
int kp_start_send(struct kp_req *r);
int kp_start_recv(struct kp_req *r);
struct kp_req *kp_new_op(int kind, int mode, struct kp_comm *c, const void *buf, int count,
			 MPI_Datatype type, int peer, int tag);
int kp_check_args(struct kp_comm *c, int count, int peer, int tag, bool recv);

/* ---- wait-state profiler (waitprof.c) ---- */
extern bool kp_wp_on;			/* KPROG_WAITPROF set */
/*
 * The profiler is on and KPROG_WAITPROF_STAMP is not 0: fast-path sends
 * stamp their records for the receiver's exact Late Sender (fast.c).
 */
extern bool kp_wp_stamp;
extern struct kp_wp_call *kp_wp_cur;	/* the profiled call in progress */
/*
 * Clock reads the profiler shares with a fast-path receive (each is a
 * helper call under emulation): the profiled call's start, and its end
 * when a channel spin completed it (0: none); then also the send stamp
 * of the record it took (0: none), whose Late Sender the profiler works
 * out when the call ends (waitprof.c, leave_recv()).
 */
extern uint64_t kp_wp_t0, kp_wp_t1;
extern uint32_t kp_wp_t1_stamp;
/* Exact Late Sender times of the receives of the call in progress. */
extern uint64_t kp_wp_ls_n, kp_wp_ls_ns;
void kp_wp_init(bool threads);		/* reads the environment, before JOIN */
void kp_wp_finalize(void);		/* the report, collective, before PMPI_Finalize */
void kp_wp_req_done(const struct kp_req *r);

/*
 * An exact Late Sender time, for the call in progress; inline, as a
 * fast-path receive charges one in every profiled MPI_Recv.
 */
static inline void kp_wp_late(uint64_t late_ns)
{
	if (!kp_wp_cur)
		return;
	kp_wp_ls_n++;
	kp_wp_ls_ns += late_ns;
}
/* A request finished inside a profiled call: charge its kernel times. */
#define KP_WP_REQ_DONE(r) do { if (__builtin_expect(kp_wp_cur != NULL, 0)) kp_wp_req_done(r); } while (0)
/* The shim's own MPI_Recv, MPI_Ssend, MPI_Wait, MPI_Waitall (waitprof.c wraps them). */
int kp_mpi_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
		MPI_Status *status, uint64_t *bytes);
int kp_mpi_ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int kp_mpi_wait(MPI_Request *req, MPI_Status *status);
int kp_mpi_waitall(int n, MPI_Request reqs[], MPI_Status statuses[]);

#endif
