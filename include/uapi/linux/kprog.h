/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kprog: in-kernel progression of MPI point-to-point messages.
 *
 * This is the only interface between the kernel module (kmod/) and user
 * space (libshim/, tests/). Fixed-width types only, no pointers: every
 * address travels as __u64 so 32- and 64-bit user space see one layout.
 *
 * Life of a file descriptor (one endpoint):
 *   open("/dev/kprog")
 *   KPROG_IOC_VERSION            optional; lets a client check the ABI first
 *   KPROG_IOC_JOIN               joins (or creates) a job, takes a rank
 *   mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
 *   KPROG_IOC_SEND / KPROG_IOC_RECV / KPROG_IOC_PROBE / KPROG_IOC_CANCEL
 *   consume completions from the ring; KPROG_IOC_WAIT or poll() to sleep
 *   close()                      cancels everything still posted
 *
 * Every ioctl other than VERSION, GET_INFO and JOIN fails with EBADFD
 * (mmap too) until JOIN succeeded: an fd that has not joined a job can
 * only learn what the module offers. Bad arguments fail with EINVAL (or
 * the errno named below) and change nothing.
 *
 * The interrupt source of the interrupt-cost microbenchmark is not here:
 * it is the module kprog_bench.ko, with its own device and netlink family
 * (<linux/kprog_bench.h>), loaded only to run the benchmark, so that nodes
 * that run jobs under kprog carry none of it (least privilege).
 */
#ifndef _UAPI_LINUX_KPROG_H
#define _UAPI_LINUX_KPROG_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * Bumped on any incompatible change of this file. 2: the ioctl magic moved
 * from 0xB7 (nsfs's) to KPROG_IOC_MAGIC, see there.
 */
#define KPROG_ABI_VERSION	2

#define KPROG_DEVICE		"/dev/kprog"

/* Wildcards, valid in kprog_post.peer/tag of a receive and in probes. */
#define KPROG_ANY_SOURCE	(-1)
#define KPROG_ANY_TAG		(-1)

/*
 * KPROG_IOC_JOIN: attach this endpoint to job @job_key as @rank of @size.
 *
 * The first endpoint to join a key creates the job and fixes its size,
 * owner (effective uid) and eager limit. Later joiners must give the same
 * @size (EINVAL otherwise), an @eager_limit of 0 or the same value (EINVAL),
 * a free rank (EADDRINUSE) and, unless the job was created with
 * KPROG_JOIN_SHARED, the same effective uid (EACCES). A job of another user
 * can only be joined if both its creator and the joiner pass
 * KPROG_JOIN_SHARED: both processes must agree to share memory.
 * A second JOIN on one fd fails with EISCONN; a wrong @abi_version with
 * EPROTONOSUPPORT; @size above the module's max_job_size with E2BIG.
 */
#define KPROG_JOIN_SHARED	(1U << 0)
/*
 * KPROG_JOIN_NET_ONLY: reach the other ranks of this node through the
 * network transport too (its loopback), as if each were on another node;
 * for testing the transport on one machine. All joiners of a job on a
 * node must agree (EINVAL); needs a node map and a network transport; the
 * job gets no fast-path channels.
 */
#define KPROG_JOIN_NET_ONLY	(1U << 1)
/*
 * KPROG_JOIN_TIMES: the ring also carries, for every completion written
 * to it, a struct kprog_cqe_times (at kprog_ring_hdr.times_offset, slot
 * for slot with the completions): when the send and the receive were
 * posted and when they were matched. Off by default: it costs a clock
 * read per post and per match; once one endpoint of a job asked for it,
 * every kernel send of the job reads the clock too (sends posted before
 * have no time). Needs KPROG_FEAT_TIMES (else EINVAL).
 */
#define KPROG_JOIN_TIMES	(1U << 2)

struct kprog_join {
	__u32 abi_version;	/* in: KPROG_ABI_VERSION */
	__u32 flags;		/* in: KPROG_JOIN_* */
	__u64 job_key;		/* in: agreed by the ranks, e.g. random */
	__u32 rank;		/* in: 0 <= rank < size */
	__u32 size;		/* in: ranks in the job */
	__u32 eager_limit;	/* in: bytes, 0 = module default; out: in force */
	__u32 ring_entries;	/* out: completion slots in the ring */
	__u64 ring_bytes;	/* out: length to mmap at offset 0 */
	__u32 max_iov;		/* out: most kprog_iov entries per post */
	__u32 max_ops;		/* out: most operations posted at once */
	/*
	 * Jobs that span nodes (all zero: every rank is on this node). The
	 * first endpoint of a job on this node fixes the map; later ones must
	 * hand in the same one (EINVAL). @rank_nodes points to @size __u32,
	 * the node index of each rank; @nodes to @nr_nodes struct
	 * kprog_node_addr; @self_node is this node's index. Ranks on other
	 * nodes are reached through a transport that serves their address
	 * (EHOSTUNREACH at JOIN if none does, see KPROG_IOC_GET_INFO).
	 * The shorter struct without these fields (KPROG_JOIN_V1_SIZE bytes)
	 * is still accepted.
	 */
	__u64 rank_nodes;	/* in: user pointer, or 0 */
	__u64 nodes;		/* in: user pointer, or 0 */
	__u32 nr_nodes;		/* in: at most KPROG_MAX_NODES */
	__u32 self_node;	/* in: < nr_nodes */
};

#define KPROG_JOIN_V1_SIZE	48
#define KPROG_MAX_NODES		65536

/*
 * Address of a node of a job: the name its kprog module goes by, as the
 * shim learned it from GET_INFO (AF_INET, address in network byte order;
 * @port is 0: connections are made through KPROG_IOC_NET_CONN, nobody
 * listens).
 */
struct kprog_node_addr {
	__u16 family;
	__u16 port;		/* network byte order */
	__u32 __pad;
	__u8 addr[16];		/* IPv4 in the first 4 bytes */
};

/*
 * KPROG_IOC_NET_CONN: connect the network transport of this node to that
 * of another node out of band, as UCX does: the caller (the shim, at
 * MPI_Init, over MPI) carries each end's struct kprog_net_qp to the other
 * node. One connection (an RC queue pair at each end) per pair of nodes,
 * shared by all jobs.
 *
 * Only for a joined endpoint (EBADFD before JOIN), and only toward another
 * node of its job's node map, for a job with ranks off this node (EINVAL
 * otherwise): an fd connects this node to the nodes its job spans and to
 * nothing else. JOIN does not need the
 * connections (a message finds its node's connection when it is sent), so
 * the shim joins first, then its node leaders connect, then the job sends.
 * (Before this rule the shim connected first: such a shim gets EBADFD here
 * and falls back as for any failed connection: kprog within each node,
 * communicators that span nodes through Open MPI.)
 *
 * KPROG_NET_PREPARE fills @local with this node's end toward @peer: the
 * port's GID and LID, the queue pair toward @peer (made now, in INIT with
 * its receive buffers posted, if there is none) with its first PSN, and
 * the peer QP it is connected to (@remote_qpn, 0: none yet).
 *
 * KPROG_NET_CONNECT takes @local as PREPARE returned it here and @remote
 * as PREPARE returned it on @peer for this node, and sets @status:
 *   KPROG_NET_CONNECTED  the pair is connected (now, or it already was)
 *   KPROG_NET_AGAIN      not yet: an end was stale (the peer's module was
 *                        reloaded, a queue pair died, another job's
 *                        exchange changed it) and was dropped; PREPARE
 *                        and exchange again
 * Both ends reach the same verdict from the same two reports, so the
 * caller repeats until every pair says CONNECTED on both sides (bounded).
 *
 * Errors: EINVAL for an unknown @op, a @peer that is not AF_INET, is
 * this node or is no node of the caller's job, or a malformed @remote
 * (QPN, PSN, version, sizes, MTU);
 * ENODEV: no usable RDMA port; ENOBUFS: max_conns connections exist;
 * EHOSTUNREACH: no route to the peer's GID; EOPNOTSUPP: the job's network
 * transport makes no connections out of band.
 */
#define KPROG_NET_PREPARE	1
#define KPROG_NET_CONNECT	2

#define KPROG_NET_CONNECTED	1
#define KPROG_NET_AGAIN		2

#define KPROG_NET_VERSION	1

struct kprog_net_qp {
	__u8 gid[16];		/* the port's GID (RoCE v2: IPv4-mapped) */
	__u32 qpn;		/* its queue pair toward the other node */
	__u32 psn;		/* first packet sequence number it sends */
	__u32 remote_qpn;	/* the QP it is connected to, 0: none */
	__u32 recv_bufs;	/* receive buffers it posts (credits) */
	__u32 max_msg;		/* largest message it receives */
	__u16 lid;		/* InfiniBand: the port's LID */
	__u8 mtu;		/* the port's active MTU (enum ib_mtu) */
	__u8 rd_atom;		/* RDMA READs it serves and issues at once */
	__u8 version;		/* KPROG_NET_VERSION */
	__u8 __pad[7];
};

struct kprog_net_conn {
	__u32 op;		/* in: KPROG_NET_* */
	__u32 status;		/* out: KPROG_NET_CONNECTED or _AGAIN */
	struct kprog_node_addr peer;	/* in: the other node */
	struct kprog_net_qp local;	/* PREPARE: out; CONNECT: in */
	struct kprog_net_qp remote;	/* CONNECT: in */
};

/* One segment of a non-contiguous buffer. */
struct kprog_iov {
	__u64 base;
	__u64 len;
};

/*
 * KPROG_IOC_SEND and KPROG_IOC_RECV: post an operation.
 *
 * Send: @peer is the destination rank, @tag >= 0. Recv: @peer is a rank or
 * KPROG_ANY_SOURCE, @tag a tag >= 0 or KPROG_ANY_TAG. Matching follows MPI:
 * same @context, source and tag (or wildcard), and messages from one sender
 * on one context are matched in the order they were posted.
 *
 * @addr/@len describe the buffer; with KPROG_POST_IOV, @addr points to an
 * array of @len struct kprog_iov (at most max_iov, else EINVAL). The buffer
 * must stay valid and untouched until the completion arrives; the kernel
 * reads or writes it only once the operation is matched.
 *
 * Sends up to the job's eager limit are copied into a kernel buffer while
 * the receiver's eager quota allows, and complete at once. Larger sends,
 * synchronous sends (KPROG_SEND_SYNC) and sends over quota go by
 * rendezvous: once both sides are posted, a kernel worker copies the data
 * straight from the sender's pages into the receiver's pages.
 *
 * KPROG_POST_BLOCKING (KPROG_FEAT_WAITER) says the caller waits for this
 * operation next (MPI_Send, MPI_Recv, MPI_Wait): a rendezvous it matches
 * is then copied in the call itself, on the caller's CPU, which would
 * otherwise only wait. Without it the copy goes to a kernel worker, on
 * the CPU of the peer's waiting thread if the peer advertises one
 * (kprog_ring_hdr.waiter_cpu), so that it does not take the CPU of a
 * process that computes.
 *
 * On return, @done says whether the operation already completed. If it
 * did, @cqe holds its completion and no ring entry will be written for it.
 * Otherwise exactly one ring entry with this @req_id will follow.
 *
 * A receive with KPROG_RECV_MESSAGE takes the message that a matching
 * KPROG_IOC_PROBE with KPROG_PROBE_DEQUEUE removed and named @msg_id;
 * @peer and @tag are ignored (ENOENT if no such message).
 *
 * A receive with KPROG_RECV_ARRIVED only takes a message that has already
 * arrived (or waits in a channel from a matching source): if there is
 * none it fails with EAGAIN and is not posted. A client whose receives
 * wait in its own queue because max_ops is reached uses it to keep them
 * flowing (KPROG_FEAT_RECV_ARRIVED).
 *
 * Budgets: a receive holds one of the endpoint's max_ops slots while it
 * is posted or its data moves; a receive that finds its message already
 * arrived is never refused for want of a slot (that message is charged
 * at its sender already). A rendezvous send holds one of the endpoint's
 * max_rndv descriptors (see kprog_info) until it completes. An eager send
 * holds a slot only during the call.
 *
 * Errors: EINVAL (bad rank, tag, context, flags), EFAULT (unreadable iov
 * array or, for an eager send, unreadable buffer), ENOBUFS (max_ops,
 * max_rndv or max_iov_total reached), ECONNRESET (the destination rank has
 * not joined the job or has left it), EAGAIN (KPROG_RECV_ARRIVED and no
 * such message).
 */
#define KPROG_POST_IOV		(1U << 0)
#define KPROG_SEND_SYNC		(1U << 1)
#define KPROG_RECV_MESSAGE	(1U << 2)
#define KPROG_RECV_ARRIVED	(1U << 3)
#define KPROG_POST_BLOCKING	(1U << 4)

/* Completion entry; 32 bytes, also the ring's slot format. */
struct kprog_cqe {
	__u64 req_id;		/* the poster's cookie */
	__u64 bytes;		/* bytes moved (received count for a recv) */
	__s32 source;		/* rank of the sender (recv), of the peer (send) */
	__s32 tag;		/* tag of the message */
	__s32 error;		/* 0 or a negative errno, see below */
	__u32 flags;		/* KPROG_CQE_* */
};

/*
 * cqe.error: 0; -EMSGSIZE: the message was longer than the receive buffer,
 * @bytes were received (MPI_ERR_TRUNCATE); -ECONNRESET: the peer exited
 * or was killed before the transfer finished (the buffer contents are
 * undefined); -EFAULT: a buffer was not mapped; -ECANCELED with
 * KPROG_CQE_CANCELLED: cancelled by KPROG_IOC_CANCEL or at close.
 */
#define KPROG_CQE_CANCELLED	(1U << 0)

struct kprog_post {
	__u64 req_id;		/* in: cookie echoed in the completion */
	__u64 addr;		/* in: buffer, or kprog_iov array with IOV */
	__u64 len;		/* in: bytes, or iov count with IOV */
	__u64 msg_id;		/* in: with KPROG_RECV_MESSAGE */
	__u32 context;		/* in: communicator context id */
	__s32 peer;		/* in: see above */
	__s32 tag;		/* in: see above */
	__u32 flags;		/* in: KPROG_POST_*, KPROG_SEND_*, KPROG_RECV_* */
	__u32 done;		/* out: 1 if completed already, see @cqe */
	__u32 __pad;
	struct kprog_cqe cqe;	/* out: valid when @done */
};

/*
 * KPROG_IOC_PROBE: look for the first message matching (@context,
 * @source, @tag) that no receive has taken yet, without receiving it.
 * With KPROG_PROBE_BLOCK, sleep until one arrives (EINTR on a signal);
 * otherwise return at once with @found = 0 if there is none.
 * With KPROG_PROBE_DEQUEUE (MPI_Mprobe), a found message is removed from
 * matching and kept under @msg_id for a KPROG_RECV_MESSAGE receive;
 * EEXIST if @msg_id is already in use.
 */
#define KPROG_PROBE_BLOCK	(1U << 0)
#define KPROG_PROBE_DEQUEUE	(1U << 1)

struct kprog_probe {
	__u32 context;		/* in */
	__s32 source;		/* in: rank or KPROG_ANY_SOURCE */
	__s32 tag;		/* in: tag or KPROG_ANY_TAG */
	__u32 flags;		/* in: KPROG_PROBE_* */
	__u64 msg_id;		/* in: with KPROG_PROBE_DEQUEUE */
	__u32 found;		/* out: 1 if a message matched */
	__s32 out_source;	/* out */
	__s32 out_tag;		/* out */
	__u32 __pad;
	__u64 bytes;		/* out: message length */
};

/*
 * KPROG_IOC_CANCEL: cancel the posted operation named @req_id. Returns 0
 * if it was still unmatched: it is withdrawn and its completion (error
 * -ECANCELED, KPROG_CQE_CANCELLED) is written to the ring. EBUSY if it is
 * already matched or complete (it will complete normally), ENOENT if no
 * posted operation has that id. Receives and rendezvous sends can be
 * cancelled; an eager send completed at post time cannot.
 */
struct kprog_cancel {
	__u64 req_id;
};

/*
 * KPROG_IOC_WAIT: sleep until the ring holds at least one completion
 * (head != tail), or @timeout_ns passes (ETIMEDOUT), or a signal comes
 * (EINTR). @timeout_ns < 0 waits without limit, 0 only moves completions
 * held back by an overflow into the ring and returns. poll() on the fd
 * reports EPOLLIN under the same condition.
 * With KPROG_WAIT_EVENTS it also returns as soon as the endpoint's event
 * count (kprog_ring_hdr.events) differs from @events: read it, look at
 * everything it covers, then sleep with it. The 8-byte struct of ABI
 * version 1 (no @flags) is still accepted.
 * With KPROG_WAIT_POLL (KPROG_FEAT_WAIT_POLL) it first runs, on the
 * caller's CPU, the completions the network transport's completion
 * queues already hold for the connections to this job's nodes, as their
 * completion event would later: a rank that spins for a message from
 * another node calls it with @timeout_ns 0 now and then, and sees the
 * message as soon as the NIC has delivered it (without the flag, only
 * once the event has been handled, possibly on another CPU). A job on
 * one node, or a module without a network transport, polls nothing.
 */
#define KPROG_WAIT_EVENTS	(1U << 0)
#define KPROG_WAIT_POLL		(1U << 1)

struct kprog_wait {
	__s64 timeout_ns;
	__u32 flags;		/* KPROG_WAIT_* */
	__u32 events;		/* with KPROG_WAIT_EVENTS */
};

#define KPROG_WAIT_V1_SIZE	8

/*
 * The completion ring, mapped at offset 0 (length ring_bytes from JOIN).
 * The kernel writes slots and then advances @tail (release); user space
 * reads slots up to @tail (acquire) and then advances @head. Indices run
 * freely and wrap at 2^32; slot = index & (entries - 1).
 *
 * When the ring is full the kernel keeps further completions in its own
 * list (bounded by max_ops) and sets @overflow. User space that sees
 * @overflow set after draining calls KPROG_IOC_WAIT with timeout 0 to
 * have them moved in. Nothing is ever dropped.
 */
struct kprog_ring_hdr {
	__u32 head;		/* written by user space */
	/*
	 * Written by user space, a hint (KPROG_FEAT_WAITER): 0, or 1 + the
	 * CPU a thread of this process waits on in a blocking call. A
	 * rendezvous copy this process waits for is queued on that CPU.
	 */
	__u32 waiter_cpu;
	__u32 __pad0[14];	/* head and tail on separate cache lines */
	__u32 tail;		/* written by the kernel */
	__u32 overflow;		/* written by the kernel */
	__u32 entries;		/* power of two */
	/*
	 * Written by the kernel, for a user-space matcher (the fast path):
	 * @events is bumped whenever a message enters the unexpected queue,
	 * a peer of the job leaves, a channel to this endpoint opens or
	 * closes, or a peer kicks (KPROG_IOC_KICK); @chan_gen when a channel
	 * opens or closes; @unexp counts the messages in the unexpected
	 * queue. @src_offset locates @nr_src struct kprog_src, one per rank.
	 * @event_ns is the CLOCK_MONOTONIC time of the last event or
	 * completion: a process woken from KPROG_IOC_WAIT learns how long it
	 * really waited, apart from the time the wake-up took.
	 * @peer_offset locates @nr_src struct kprog_peer_count, one per
	 * destination rank (0: a module without them, see KPROG_FEAT_PEERS);
	 * @times_offset the @entries struct kprog_cqe_times of an endpoint
	 * joined with KPROG_JOIN_TIMES (0 otherwise).
	 */
	__u32 events;
	__u32 chan_gen;
	__u32 unexp;
	__u32 src_offset;
	__u32 nr_src;
	__aligned_u64 event_ns;
	__u32 peer_offset;
	__u32 times_offset;
	__u32 __pad1[4];
};

#define KPROG_RING_CQES_OFFSET	128

/*
 * Per sending rank, written by the kernel: @held messages of that rank
 * wait in this endpoint's unexpected queue; @flags says whether a channel
 * with it exists and whether it left. A channel record of that rank may
 * be matched in user space only while @held is 0 and no older record of
 * the channel is KPROG_REC_KTAKEN (both read after the record): then the
 * kernel holds nothing older of that rank.
 */
#define KPROG_SRC_CHAN		(1U << 0)
#define KPROG_SRC_LEFT		(1U << 1)

struct kprog_src {
	__u32 held;
	__u32 flags;
};

/*
 * Per destination rank, written by the kernel only (monitoring, seed
 * 002): messages and payload bytes this endpoint posted with
 * KPROG_IOC_SEND to that rank since JOIN, counted when the post succeeds
 * (a send cancelled later stays counted, as in Open MPI's pml
 * monitoring). Records sent through fast-path channels never reach the
 * kernel: their producer counts them in kprog_chan_dir.msgs and .bytes.
 */
struct kprog_peer_count {
	__u64 msgs;
	__u64 bytes;
};

/*
 * Times of a completion in the ring, with KPROG_JOIN_TIMES: slot i
 * describes cqes[i]. CLOCK_MONOTONIC nanoseconds, 0 where unknown: a
 * message that came through a fast-path channel has no @send_ns, one that
 * came from another node (or through the network loopback) has its
 * arrival at this node as @send_ns (the sender's clock is another
 * machine's; later than the post by one network latency); an operation
 * cancelled or failed before a match has no @match_ns. For a receive,
 * @send_ns is when the matched send was posted and @recv_ns when this
 * receive was; for a rendezvous send to a rank of
 * this node, @send_ns is its own post and @recv_ns that of the receive
 * (0 unless the receiver joined with KPROG_JOIN_TIMES too).
 * Late Sender (seed 003) = @send_ns - @recv_ns when positive; Late
 * Receiver of a synchronous send = @match_ns - @send_ns when the receive
 * came later. Completions returned by the posting ioctl itself (@done)
 * have none: such a receive found its message already there.
 */
struct kprog_cqe_times {
	__u64 send_ns;
	__u64 recv_ns;
	__u64 match_ns;
	__u64 __reserved;
};

/*
 * KPROG_IOC_GET_INFO: what this module offers, before or after JOIN
 * (like KNEM's knem_cmd_info). @abi_version is KPROG_ABI_VERSION, which
 * changes only for incompatible changes; additions show as feature bits.
 * @transports has a KPROG_XPORT_* bit per transport that can carry
 * traffic now (KPROG_XPORT_IB only with an RDMA device present).
 * The limits are the module parameters in force.
 */
#define KPROG_FEAT_MULTINODE	(1U << 0)	/* JOIN takes a node map */
#define KPROG_FEAT_LARGE_MSG	(1U << 1)	/* messages above 4 GiB */
#define KPROG_FEAT_FASTPATH	(1U << 2)	/* shared-memory channels */
#define KPROG_FEAT_RECV_ARRIVED	(1U << 3)	/* KPROG_RECV_ARRIVED, max_rndv */
#define KPROG_FEAT_PEERS	(1U << 4)	/* kprog_peer_count in the ring */
#define KPROG_FEAT_TIMES	(1U << 5)	/* KPROG_JOIN_TIMES */
#define KPROG_FEAT_WAITER	(1U << 6)	/* POST_BLOCKING, waiter_cpu */
#define KPROG_FEAT_NET_CONN	(1U << 7)	/* KPROG_IOC_NET_CONN */
#define KPROG_FEAT_GRANTS	(1U << 8)	/* rendezvous sends in channels */
#define KPROG_FEAT_COLL		(1U << 9)	/* KPROG_IOC_COLL schedules */
#define KPROG_FEAT_RECV_BATCH	(1U << 12)	/* KPROG_IOC_RECV_BATCH */
#define KPROG_FEAT_WAIT_POLL	(1U << 13)	/* KPROG_WAIT_POLL */

#define KPROG_XPORT_SHM		(1U << 0)
#define KPROG_XPORT_IB		(1U << 1)

struct kprog_info {
	__u32 abi_version;
	__u32 features;		/* KPROG_FEAT_* */
	__u32 transports;	/* KPROG_XPORT_* */
	__u32 eager_limit;	/* default eager limit of a job */
	__u32 eager_quota;
	__u32 max_ops;
	__u32 max_iov;
	__u32 max_iov_total;
	__u32 ring_entries;
	__u32 max_job_size;
	__u64 max_msg;		/* largest message in bytes */
	__u32 fast_limit;	/* largest fast-path message, 0 = none */
	__u32 chan_bytes;	/* bytes of one channel direction */
	__u32 max_chans;	/* channels one endpoint may open */
	__u32 max_rndv;		/* rendezvous sends waiting, per endpoint */
	/* with KPROG_XPORT_IB: the name other nodes know this one by */
	struct kprog_node_addr node_addr;
	__u32 max_grants;	/* grant slots per endpoint, 0 = none */
	__u32 max_coll_steps;	/* steps of one schedule (KPROG_FEAT_COLL) */
};

/*
 * The fast path: shared-memory channels between two endpoints of a job on
 * this node, through which small messages go with no system call.
 *
 * KPROG_IOC_CHAN_OPEN creates the pair's channel if it does not exist yet
 * (either side may; the other sees KPROG_SRC_CHAN and chan_gen change)
 * and tells where to map it: mmap(NULL, @bytes, PROT_READ | PROT_WRITE,
 * MAP_SHARED, fd, @offset). ENOTCONN: the peer is not an endpoint of this
 * node (yet or any more); EOPNOTSUPP: the fast path is off (fast_limit=0);
 * ENOSPC: one side has max_chans channels or its share of the node's
 * channel memory (chan_mem_mib / chan_shares), the job half of the node's,
 * or the node's is used up; EINVAL: a bad rank or self;
 * EBUSY: the peer still holds a closed channel with an earlier endpoint
 * of this rank (a rank that left and joined again gets no new channel
 * with it; messages go through the kernel).
 *
 * The region: struct kprog_chan_hdr, then at KPROG_CHAN_DATA_OFFSET the
 * data ring of direction 0 (lower rank to higher rank), then that of
 * direction 1, @ring_bytes each (a power of two). @tx is the direction
 * this endpoint sends on.
 *
 * A data ring holds records (struct kprog_chan_rec and the payload),
 * each KPROG_CHAN_REC_SIZE(len) bytes, never across the ring's end (the
 * producer fills the rest with a record flagged KPROG_REC_PAD). The
 * producer writes a record with state KPROG_REC_NEW, then advances @prod
 * (release). A consumer takes a record by changing its state from NEW
 * atomically: the receiving process to TAKEN, the kernel (draining the
 * channel into its matching when the order of messages requires it) to
 * KTAKEN, which stays until the message is matched or queued in the
 * kernel. Then the consumer copies the payload out and sets DONE
 * (release); the receiving side finds DONE or PAD records at @cons and
 * advances @cons past them (compare and swap): its process, or the kernel
 * in the receiver's own system calls. A drain for the sender (its post
 * through the kernel, KPROG_DRAIN_TO) leaves @cons alone: the receiving
 * process may have found a NEW record and be about to take it, and a
 * record released under it could be rewritten as a new NEW record that
 * its take would then get instead. Records may be taken out of order;
 * @cons never passes a record that is not DONE or PAD; @prod - @cons <=
 * ring_bytes.
 *
 * The kernel never trusts the region: a malformed index or record makes
 * it stop using the channel (the job's messages on it are lost), and it
 * bounds its work by the ring size.
 */
#define KPROG_CHAN_DATA_OFFSET	4096
#define KPROG_CHAN_REC_ALIGN	64
#define KPROG_CHAN_REC_SIZE(len) \
	(((__u64)(len) + sizeof(struct kprog_chan_rec) + KPROG_CHAN_REC_ALIGN - 1) & \
	 ~(__u64)(KPROG_CHAN_REC_ALIGN - 1))
#define KPROG_CHAN_MMAP_OFFSET(peer)	(((__u64)(peer) + 1) << 24)

#define KPROG_REC_NEW		0
#define KPROG_REC_TAKEN		1	/* by the receiving process */
#define KPROG_REC_DONE		2
#define KPROG_REC_KTAKEN	3	/* by the kernel, not yet matched */
#define KPROG_REC_PAD		(1U << 0)	/* kprog_chan_rec.flags */
#define KPROG_REC_RNDV		(1U << 1)	/* payload: struct kprog_chan_rts */

struct kprog_chan_rec {
	__u32 state;		/* KPROG_REC_* */
	__u32 flags;
	__u32 len;		/* payload bytes */
	__u32 context;
	__s32 tag;
	/*
	 * The producer's clock when it wrote the record, if its wait-state
	 * profiler is on (else 0): the consumer's exact Late Sender time of
	 * fast-path messages. Only the two processes read it (the shim: the
	 * TSC / 1024 where the kernel's clocksource is the TSC, else
	 * CLOCK_MONOTONIC ns / 1024, modulo 2^32); the kernel ignores it.
	 */
	__u32 send_stamp;
};

struct kprog_chan_dir {
	__u64 prod;		/* producer: bytes published */
	__u64 msgs;		/* producer: messages published */
	__u64 bytes;		/* producer: payload bytes published */
	__u64 __pad0[5];
	__u64 cons;		/* consumers: bytes released */
	__u64 __pad1[7];
	__u32 waiting;		/* receiver: asleep, kick me after a record */
	/*
	 * Receiver, a hint: it has receives posted in the kernel. A sender
	 * that sees it sends through the kernel (KPROG_IOC_SEND), where a
	 * posted receive progresses without its owner; else it may write a
	 * rendezvous record (struct kprog_chan_rts).
	 */
	__u32 krecv;
	/*
	 * Receiver, a hint: the CPU + 1 it waits on for a message of this
	 * direction (0: not waiting, or not said). A sender whose CPU it is
	 * may hand the CPU over after publishing a record. Only the two
	 * processes read it; the kernel ignores it.
	 */
	__u32 waiter_cpu;
	__u32 __pad2[13];
	__u32 closed;		/* kernel: an endpoint of the pair left */
	__u32 __pad3[15];
};

struct kprog_chan_hdr {
	struct kprog_chan_dir dir[2];
};

struct kprog_chan_open {
	__u32 peer;		/* in: rank */
	__u32 flags;		/* in: 0 */
	__u64 offset;		/* out: mmap offset */
	__u64 bytes;		/* out: mmap length */
	__u32 ring_bytes;	/* out: bytes of one direction's data ring */
	__u32 max_msg;		/* out: largest payload of a record */
	__u32 tx;		/* out: the direction this endpoint sends on */
	__u32 __pad;
};

/*
 * KPROG_IOC_CHAN_DRAIN: move the records not yet taken of the channel
 * from @peer (or of every channel with KPROG_ANY_SOURCE) into the
 * kernel's matching, in order, as if they had been sent through the
 * kernel: they match posted receives or become unexpected messages. A
 * user-space matcher calls it when a record may be meant for a receive it
 * posted in the kernel. KPROG_IOC_RECV and KPROG_IOC_PROBE drain the
 * channels they could match on their own, and a send through the kernel
 * drains its channel first, so that no message overtakes another.
 */
struct kprog_chan_drain {
	__s32 peer;		/* rank or KPROG_ANY_SOURCE */
	__u32 flags;		/* 0 or KPROG_DRAIN_TO */
};

/*
 * KPROG_DRAIN_TO: drain the caller's own channel to @peer (a rank, not
 * KPROG_ANY_SOURCE) into @peer's matching instead: a sender that wrote a
 * rendezvous record and then found the receiver's krecv hint set hands
 * it to the receive waiting in the kernel at once.
 */
#define KPROG_DRAIN_TO		(1U << 0)

/*
 * Rendezvous sends with no system call (KPROG_FEAT_GRANTS): a sender
 * describes its buffer in a grant slot of its own grant table and writes
 * a record flagged KPROG_REC_RNDV into the channel, whose payload names
 * the slot. The receiver never takes such a record itself; the kernel
 * does when it drains the channel (as for every record, in order) and
 * then sends the message from the grant as if the sender had called
 * KPROG_IOC_SEND: the send's completion, with the grant's @req_id, comes
 * in the sender's ring.
 *
 * The grant table: max_grants slots of struct kprog_grant, mapped only by
 * the endpoint's own process: mmap(NULL, KPROG_GRANT_BYTES(max_grants),
 * PROT_READ | PROT_WRITE, MAP_SHARED, fd, KPROG_GRANT_MMAP_OFFSET); not
 * inherited by fork (EPERM from another process). The peer cannot write
 * it, so the kernel can trust that a slot is what the sender grants:
 * it reads a slot once, takes only a slot that is OPEN, whose @dst is the
 * draining receiver and whose @req_id the record repeats, by changing its
 * state from OPEN to TAKEN (compare and swap), and reads nothing but
 * @addr..@addr + @len of the sender's memory, as for KPROG_IOC_SEND. Any
 * other record flagged RNDV is dropped (a cancelled send; a malformed one
 * stops the channel's direction as any malformed record).
 *
 * @state: the low two bits are KPROG_GRANT_FREE, OPEN or TAKEN; the rest
 * is the owner's, a count it changes every time it fills the slot (the
 * kernel keeps it when it takes the slot), so that a slot withdrawn and
 * filled again while the kernel read it is not taken by mistake. The
 * sender fills a FREE or TAKEN slot, then sets OPEN (release); it
 * withdraws a send by changing OPEN to FREE (compare and swap; if the
 * kernel took it, the send is in the kernel: KPROG_IOC_CANCEL). The slot
 * may be reused once it is not OPEN.
 */
/* between the ring (0) and the first channel; reachable by 32-bit mmap() */
#define KPROG_GRANT_MMAP_OFFSET	(1ULL << 23)
#define KPROG_GRANT_BYTES(n)	((__u64)(n) * sizeof(struct kprog_grant))

#define KPROG_GRANT_FREE	0
#define KPROG_GRANT_OPEN	1
#define KPROG_GRANT_TAKEN	2
#define KPROG_GRANT_STATE(s)	((s) & 3U)
#define KPROG_GRANT_SEQ(s)	((s) & ~3U)

struct kprog_grant {
	__u32 state;		/* KPROG_GRANT_* */
	__u32 dst;		/* the receiving rank */
	__u32 context;
	__s32 tag;
	__u64 req_id;		/* of the send's completion */
	__u64 addr;		/* the send buffer, contiguous */
	__u64 len;
	/*
	 * CLOCK_MONOTONIC when the send was posted, for the receivers' Late
	 * Sender times (KPROG_JOIN_TIMES), else 0; the sender's word only.
	 */
	__u64 send_ns;
	__u64 __pad[2];
};

struct kprog_chan_rts {
	__u32 grant;		/* slot in the sender's grant table */
	__u32 __pad;
	__u64 req_id;		/* the slot's */
};

/*
 * Collective schedules (KPROG_FEAT_COLL): KPROG_IOC_COLL hands the module
 * one nonblocking collective as a schedule of steps, which the module
 * runs from its completion path with no further call from the process,
 * and which ends with one completion in the ring (@req_id, @bytes 0,
 * @error 0 or the first step's error), as LibNBC's schedules do in user
 * space.
 *
 * Steps run in rounds: every step of round r starts once every step of
 * the rounds before it completed (@round is non-decreasing along the
 * array; steps of one round run in any order, at once). A step:
 *   KPROG_STEP_SEND    send @len bytes at @src to rank @peer
 *   KPROG_STEP_RECV    receive at most @len bytes from rank @peer at @dst
 *                      (a shorter message is an error: -EMSGSIZE)
 *   KPROG_STEP_COPY    copy @len bytes from @src to @dst (this process)
 *   KPROG_STEP_REDUCE  @dst[i] = @src[i] (op) @dst[i] for the @len / size
 *                      elements of type @dtype (this process)
 * Sends and receives match only sends and receives of other schedules:
 * they carry (@context, @tag) of the schedule, and every schedule of a
 * process on one @context must use a @tag of its own (the communicator's
 * collective sequence number); messages of one pair on one (@context,
 * @tag) match in the order of the steps. @peer is a rank of the job.
 * With KPROG_STEP_IOV (SEND and RECV only), @src or @dst points to
 * @len struct kprog_iov instead (at most max_iov).
 *
 * Every address is one of the calling process's; the module reaches its
 * buffers through the process's pages, only while the schedule runs. The
 * buffers (and temporary ones the caller allocated) must stay valid until
 * the completion arrives.
 *
 * The kernel does not trust a schedule: EINVAL for an unknown kind,
 * flag, type or op, a peer out of range or this rank, a @len that is not
 * a multiple of the type's size, rounds that decrease, overlapping @src
 * and @dst of a COPY or REDUCE, @nr_steps 0 (also: @flags or @__pad not
 * 0, a negative @tag, @dtype or @op set on a step other than REDUCE,
 * KPROG_STEP_IOV on COPY or REDUCE, more than max_iov entries); E2BIG for
 * @nr_steps above max_coll_steps (kprog_info); ENOBUFS when the endpoint
 * has max_colls schedules running (or max_ops operations: the schedule
 * holds one slot like a receive); EFAULT for an unreadable step array (or
 * a step's range outside user space); EOPNOTSUPP when the module runs no
 * schedules (no KPROG_FEAT_COLL). @peer of COPY and REDUCE, @dst of SEND
 * and @src of RECV are ignored. An iovec array is read when its step
 * starts. The completion's @source is this rank, its @tag the schedule's.
 * KPROG_IOC_CANCEL of a schedule's @req_id is EBUSY.
 * A step that fails (a peer that left: -ECONNRESET; an unmapped buffer:
 * -EFAULT) ends the schedule: its other steps are withdrawn and the
 * completion carries that error.
 *
 * On return, @done says whether the schedule already completed (then
 * @cqe holds its completion and no ring entry follows).
 */
#define KPROG_STEP_SEND		1
#define KPROG_STEP_RECV		2
#define KPROG_STEP_COPY		3
#define KPROG_STEP_REDUCE	4

#define KPROG_STEP_IOV		(1U << 0)	/* kprog_coll_step.flags */

/* Element types of KPROG_STEP_REDUCE (the C types of MPI's). */
enum kprog_dtype {
	KPROG_DT_INT8 = 1,
	KPROG_DT_UINT8,
	KPROG_DT_INT16,
	KPROG_DT_UINT16,
	KPROG_DT_INT32,
	KPROG_DT_UINT32,
	KPROG_DT_INT64,
	KPROG_DT_UINT64,
	KPROG_DT_FLOAT,
	KPROG_DT_DOUBLE,
	KPROG_DT_BOOL,		/* C _Bool / Fortran LOGICAL as 1 byte */
	/* pairs of MPI_MINLOC / MPI_MAXLOC: value, then an int index */
	KPROG_DT_FLOAT_INT,	/* struct { float; int; } (8 bytes) */
	KPROG_DT_DOUBLE_INT,	/* struct { double; int; } (16 bytes) */
	KPROG_DT_LONG_INT,	/* struct { long; int; } (16 bytes) */
	KPROG_DT_2INT,		/* struct { int; int; } (8 bytes) */
	KPROG_DT_SHORT_INT,	/* struct { short; int; } (8 bytes) */
	__KPROG_DT_MAX,
};

/* Operations of KPROG_STEP_REDUCE (MPI's predefined ones). */
enum kprog_redop {
	KPROG_OP_SUM = 1,
	KPROG_OP_PROD,
	KPROG_OP_MIN,
	KPROG_OP_MAX,
	KPROG_OP_LAND,
	KPROG_OP_LOR,
	KPROG_OP_LXOR,
	KPROG_OP_BAND,		/* integer types only */
	KPROG_OP_BOR,
	KPROG_OP_BXOR,
	KPROG_OP_MINLOC,	/* pair types only */
	KPROG_OP_MAXLOC,
	__KPROG_OP_MAX,
};

struct kprog_coll_step {
	__u8 kind;		/* KPROG_STEP_* */
	__u8 dtype;		/* REDUCE: enum kprog_dtype */
	__u8 op;		/* REDUCE: enum kprog_redop */
	__u8 flags;		/* KPROG_STEP_IOV */
	__u32 round;		/* non-decreasing along the schedule */
	__s32 peer;		/* SEND, RECV: rank in the job */
	__u32 __pad;
	__u64 src;		/* SEND, COPY, REDUCE */
	__u64 dst;		/* RECV, COPY, REDUCE */
	__u64 len;		/* bytes, or iov entries with KPROG_STEP_IOV */
};

struct kprog_coll {
	__u64 req_id;		/* in: cookie of the completion */
	__u64 steps;		/* in: user pointer to @nr_steps steps */
	__u32 nr_steps;		/* in */
	__u32 context;		/* in: the communicator's collective context */
	__s32 tag;		/* in: >= 0, the collective's sequence number */
	__u32 flags;		/* in: 0 */
	__u32 done;		/* out: 1 if completed already, see @cqe */
	__u32 __pad;
	struct kprog_cqe cqe;	/* out: valid when @done */
};

/* Most receives one KPROG_IOC_RECV_BATCH posts. */
#define KPROG_RECV_BATCH_MAX	64

/**
 * struct kprog_recv_batch - several receives posted in one system call
 * @posts: user address of an array of @count struct kprog_post, each a
 *	receive exactly as KPROG_IOC_RECV takes it; each entry's @done and
 *	@cqe are written back as KPROG_IOC_RECV writes them
 * @count: entries, 1..KPROG_RECV_BATCH_MAX (else EINVAL, nothing posted)
 * @flags: none defined yet, must be 0 (else EINVAL, nothing posted)
 * @posted: out: how many entries were posted, always the first @posted
 *
 * KPROG_IOC_RECV_BATCH (KPROG_FEAT_RECV_BATCH) posts the entries in array
 * order, so that the kernel sees the same posts in the same order as from
 * @count KPROG_IOC_RECV calls, and stops at the first entry that fails:
 * the call then returns that entry's error (the errors of KPROG_IOC_RECV)
 * and the entries from it on are not posted; those before it are, and
 * each completes as any receive does (its @done, or one ring entry). The
 * one exception is EFAULT from an entry whose result could not be written
 * back after it was posted: it counts in @posted, as the same failure of
 * KPROG_IOC_RECV leaves its receive posted. If @posted itself cannot be
 * written, the call is EFAULT before anything is posted.
 */
struct kprog_recv_batch {
	__u64 posts;
	__u32 count;
	__u32 flags;
	__u32 posted;
	__u32 __pad;
};

/*
 * 0xD4: free in Documentation/userspace-api/ioctl/ioctl-number.rst (6.1).
 * ABI version 1 used 0xB7, which nsfs and remoteproc own. Of that number
 * the module answers only KPROG_IOC_VERSION_V1, with the current version,
 * so that a client built for version 1 sees a version it does not know
 * (a shim then says so in one line and passes MPI through to Open MPI);
 * every other 0xB7 call is ENOTTY. A client of this version may ask
 * KPROG_IOC_VERSION_V1 when KPROG_IOC_VERSION is ENOTTY, to tell an older
 * module (it answers 1) from no kprog at all.
 */
#define KPROG_IOC_MAGIC		0xD4
#define KPROG_IOC_MAGIC_V1	0xB7
#define KPROG_IOC_VERSION_V1	_IOR(KPROG_IOC_MAGIC_V1, 0, __u32)
#define KPROG_IOC_VERSION	_IOR(KPROG_IOC_MAGIC, 0, __u32)
#define KPROG_IOC_JOIN		_IOWR(KPROG_IOC_MAGIC, 1, struct kprog_join)
#define KPROG_IOC_SEND		_IOWR(KPROG_IOC_MAGIC, 2, struct kprog_post)
#define KPROG_IOC_RECV		_IOWR(KPROG_IOC_MAGIC, 3, struct kprog_post)
#define KPROG_IOC_PROBE		_IOWR(KPROG_IOC_MAGIC, 4, struct kprog_probe)
#define KPROG_IOC_CANCEL	_IOW(KPROG_IOC_MAGIC, 5, struct kprog_cancel)
#define KPROG_IOC_WAIT		_IOW(KPROG_IOC_MAGIC, 6, struct kprog_wait)
/*
 * Number 7 was KPROG_IOC_IRQ_WAIT, the interrupt source's, now
 * KPROG_BENCH_IOC_IRQ_WAIT on /dev/kprog_bench (<linux/kprog_bench.h>):
 * on /dev/kprog it fails with ENOTTY, before JOIN and after. Not reused.
 */
#define KPROG_IOC_GET_INFO	_IOR(KPROG_IOC_MAGIC, 8, struct kprog_info)
#define KPROG_IOC_CHAN_OPEN	_IOWR(KPROG_IOC_MAGIC, 9, struct kprog_chan_open)
#define KPROG_IOC_CHAN_DRAIN	_IOW(KPROG_IOC_MAGIC, 10, struct kprog_chan_drain)
/* KPROG_IOC_KICK: bump the event count of rank *arg and wake it. */
#define KPROG_IOC_KICK		_IOW(KPROG_IOC_MAGIC, 11, __u32)
#define KPROG_IOC_NET_CONN	_IOWR(KPROG_IOC_MAGIC, 12, struct kprog_net_conn)
#define KPROG_IOC_COLL		_IOWR(KPROG_IOC_MAGIC, 13, struct kprog_coll)
#define KPROG_IOC_RECV_BATCH	_IOWR(KPROG_IOC_MAGIC, 16, struct kprog_recv_batch)

/*
 * Generic netlink family KPROG_GENL_NAME: per-CPU progression accounting.
 *
 * KPROG_CMD_GET_STATS (dump, any user): one message per possible CPU,
 *   KPROG_A_CPU plus every KPROG_A_STAT_* counter this module counts (u64,
 *   since module load or the last reset). Offline CPUs are included: their
 *   counts persist.
 * KPROG_CMD_RESET_STATS (CAP_NET_ADMIN): zero every counter of every CPU.
 *
 * Commands 3, 4 and 5 (IRQ_START, IRQ_STOP, IRQ_STATUS) and the
 * attributes KPROG_A_IRQ_* were the interrupt source's: they are
 * kprog_bench.ko's family now (<linux/kprog_bench.h>). Here the commands
 * fail with EOPNOTSUPP; no number is reused. The counters that only the
 * interrupt source fed (hard interrupt runs and time, coalesced fires)
 * went with it: their attributes are no longer sent.
 */
#define KPROG_GENL_NAME		"kprog"
#define KPROG_GENL_VERSION	1

enum kprog_genl_cmd {
	KPROG_CMD_UNSPEC,
	KPROG_CMD_GET_STATS,
	KPROG_CMD_RESET_STATS,
	__KPROG_CMD_RETIRED_3,		/* was IRQ_START */
	__KPROG_CMD_RETIRED_4,		/* was IRQ_STOP */
	__KPROG_CMD_RETIRED_5,		/* was IRQ_STATUS */
	__KPROG_CMD_MAX,
};

#define KPROG_CMD_MAX		(__KPROG_CMD_MAX - 1)

enum kprog_genl_attr {
	KPROG_A_UNSPEC,
	KPROG_A_PAD,
	KPROG_A_CPU,			/* u32 */
	/* per-CPU counters, u64 */
	KPROG_A_STAT_EVENTS,		/* completion events handled */
	__KPROG_A_RETIRED_4,		/* was STAT_HARDIRQ_RUNS */
	__KPROG_A_RETIRED_5,		/* was STAT_HARDIRQ_NS */
	KPROG_A_STAT_TASKLET_RUNS,	/* tasklet (softirq) runs */
	KPROG_A_STAT_TASKLET_NS,
	KPROG_A_STAT_WORK_ITEMS,	/* workqueue items run */
	KPROG_A_STAT_WORK_NS,
	KPROG_A_STAT_BYTES,		/* payload bytes moved */
	KPROG_A_STAT_WAKEUPS,		/* user threads woken */
	__KPROG_A_RETIRED_12,		/* 12..17 were the IRQ_* attributes */
	__KPROG_A_RETIRED_13,
	__KPROG_A_RETIRED_14,
	__KPROG_A_RETIRED_15,
	__KPROG_A_RETIRED_16,
	__KPROG_A_RETIRED_17,
	__KPROG_A_RETIRED_18,		/* was STAT_COALESCED */
	/* per-CPU counters of the network transport (kprog_ib.ko), u64 */
	KPROG_A_STAT_NET_CQES,		/* work completions handled */
	KPROG_A_STAT_NET_DROPPED,	/* wire messages dropped */
	KPROG_A_STAT_NET_REG_BYTES,	/* bytes registered for remote reads */
	KPROG_A_STAT_NET_PIN_HITS,	/* send chunks found in the pin cache */
	KPROG_A_STAT_NET_PIN_MISSES,	/* send chunks pinned afresh */
	__KPROG_A_MAX,
};

#define KPROG_A_MAX		(__KPROG_A_MAX - 1)

#endif /* _UAPI_LINUX_KPROG_H */
