// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Send, receive and probe calls. On a communicator in the kprog table they
 * post to /dev/kprog; on any other they go to PMPI unchanged.
 *
 * Bsend/Ibsend on a kprog communicator: the data is copied at once into a
 * malloc'd buffer and sent by kprog like any other send (so it stays in
 * order with the other sends on the communicator); the user's attached
 * buffer (MPI_Buffer_attach) is not used, so a Bsend never fails for lack
 * of buffer space. The copy is freed when the kernel completes the send.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "hot.h"
#include "shim.h"
#include "dtype.h"
#include "mon.h"
#include "waitprof_hooks.h"

struct kp_req *kp_new_op(int kind, int mode, struct kp_comm *c, const void *buf, int count,
			 MPI_Datatype type, int peer, int tag)
{
	struct kp_req *r = kp_req_alloc();

	r->kind = kind;
	r->mode = mode;
	r->comm = c;
	kp_comm_get(c);
	r->buf = (void *)buf;
	r->count = count;
	r->type = type;
	r->peer = peer;
	r->tag = tag;
	r->proc_null = peer == MPI_PROC_NULL;
	r->state = RS_INACTIVE;
	return r;
}

int kp_check_args(struct kp_comm *c, int count, int peer, int tag, bool recv)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	if (peer != MPI_PROC_NULL && !(recv && peer == MPI_ANY_SOURCE) &&
	    (peer < 0 || peer >= c->size))
		return MPI_ERR_RANK;
	if (tag < 0 && !(recv && tag == MPI_ANY_TAG))
		return MPI_ERR_TAG;
	return MPI_SUCCESS;
}

/* A buffered send: copy now, send in the background, free when done. */
static int bsend_post(struct kp_comm *c, const void *buf, int count, MPI_Datatype type,
		      int dest, int tag)
{
	struct kp_req *r;
	int rc;

	if (dest == MPI_PROC_NULL)
		return MPI_SUCCESS;
	r = kp_new_op(KR_SEND, M_BUFFERED, c, buf, count, type, dest, tag);
	r->internal = true;
	rc = kp_post_kernel(r);
	if (rc != MPI_SUCCESS || r->state == RS_FREE)
		return rc == MPI_SUCCESS ? MPI_SUCCESS : (kp_req_release(r), rc);
	r->buf = NULL;	/* only the copy is used from here on */
	return MPI_SUCCESS;
}

int kp_start_send(struct kp_req *r)
{
	int rc;

	if (r->proc_null) {
		kp_complete_now(r, MPI_PROC_NULL, MPI_ANY_TAG, 0);
		return MPI_SUCCESS;
	}
	/* send immediate: a channel record, complete at once */
	if (kp_fast_send(r->comm, r->buf, r->count, r->type, r->peer, r->tag, r->mode)) {
		kp_complete_now(r, r->peer, r->tag, 0);
		return MPI_SUCCESS;
	}
	if (r->mode == M_BUFFERED) {
		rc = bsend_post(r->comm, r->buf, r->count, r->type, r->peer, r->tag);
		if (rc == MPI_SUCCESS)
			kp_complete_now(r, r->peer, r->tag, 0);
		return rc;
	}
	/* a rendezvous header in the channel, no system call */
	if (kp_rts_send(r))
		return MPI_SUCCESS;
	return kp_post_kernel(r);
}

int kp_start_recv(struct kp_req *r)
{
	if (r->proc_null) {
		kp_complete_now(r, MPI_PROC_NULL, MPI_ANY_TAG, 0);
		return MPI_SUCCESS;
	}
	if (kp_fast_active() && !r->mrecv) {
		/* receive immediate, else posted here if it may stay here */
		if (kp_fast_try_recv(r) || kp_fast_upost(r))
			return MPI_SUCCESS;
		/* receives in the kernel are never older than ours */
		kp_fast_to_kernel();
	}
	return kp_post_kernel(r);
}

/* ---- sends ---- */

static int isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		 struct kp_comm *c, int mode, bool blocking, struct kp_req **out)
{
	struct kp_req *r;
	int rc;

	kp_progress();
	rc = kp_check_args(c, count, dest, tag, false);
	if (rc != MPI_SUCCESS)
		return rc;
	r = kp_new_op(KR_SEND, mode, c, buf, count, type, dest, tag);
	r->blocking = blocking;
	rc = kp_start_send(r);
	if (rc != MPI_SUCCESS) {
		kp_req_release(r);
		return rc;
	}
	*out = r;
	return MPI_SUCCESS;
}

/* Send immediate (valid arguments only): 1 if the send is complete. */
static int send_now(const void *buf, int count, MPI_Datatype type, int dest, int tag,
		    struct kp_comm *c, int mode)
{
	return count >= 0 && tag >= 0 && dest >= 0 && dest < c->size &&
	       kp_fast_send(c, buf, count, type, dest, tag, mode);
}

KP_HOT static int send_blocking(const void *buf, int count, MPI_Datatype type, int dest,
				int tag, MPI_Comm comm, struct kp_comm *c, int mode)
{
	uint64_t kicks = KP_SPIN_SEND_YIELD ? kp_fast_stats()->kicks : 0;
	struct kp_req *r;
	int rc;

	/* send immediate: no request object */
	if (send_now(buf, count, type, dest, tag, c, mode)) {
		/* the receiver may wait on this CPU */
		if (KP_SPIN_SEND_YIELD)
			kp_spin_handover(kp_fast_stats()->kicks != kicks,
					 kp_waiter_pub() ? kp_fast_waiter_of(c, dest) : 0);
		return MPI_SUCCESS;
	}
	rc = isend(buf, count, type, dest, tag, c, mode, true, &r);

	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	kp_wait_one(r);
	rc = r->err;
	kp_req_release(r);
	return kp_err(comm, rc);
}

static int send_nonblocking(const void *buf, int count, MPI_Datatype type, int dest, int tag,
			    MPI_Comm comm, struct kp_comm *c, int mode, MPI_Request *req)
{
	struct kp_req *r;
	int rc;

	/* send immediate: complete now, the shared completed request */
	if (send_now(buf, count, type, dest, tag, c, mode)) {
		*req = kp_handle(kp_req_done_send());
		return MPI_SUCCESS;
	}
	rc = isend(buf, count, type, dest, tag, c, mode, false, &r);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	*req = kp_handle(r);
	return MPI_SUCCESS;
}

KP_HOT int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return KP_PMPI(PMPI_Send(buf, count, type, dest, tag, comm));
	}
	return send_blocking(buf, count, type, dest, tag, comm, c, M_STD);
}

/* MPI_Ssend (waitprof.c times it when the profiler is on) */
int kp_mpi_ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return KP_PMPI(PMPI_Ssend(buf, count, type, dest, tag, comm));
	}
	return send_blocking(buf, count, type, dest, tag, comm, c, M_SYNC);
}

/* Ready mode has no flag in the ABI: a standard send is a valid Rsend. */
int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return KP_PMPI(PMPI_Rsend(buf, count, type, dest, tag, comm));
	}
	return send_blocking(buf, count, type, dest, tag, comm, c, M_READY);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	int rc;

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return KP_PMPI(PMPI_Bsend(buf, count, type, dest, tag, comm));
	}
	kp_progress();
	rc = kp_check_args(c, count, dest, tag, false);
	if (rc == MPI_SUCCESS)
		rc = bsend_post(c, buf, count, type, dest, tag);
	return kp_err(comm, rc);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return PMPI_Isend(buf, count, type, dest, tag, comm, req);
	}
	return send_nonblocking(buf, count, type, dest, tag, comm, c, M_STD, req);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return PMPI_Issend(buf, count, type, dest, tag, comm, req);
	}
	return send_nonblocking(buf, count, type, dest, tag, comm, c, M_SYNC, req);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
	}
	return send_nonblocking(buf, count, type, dest, tag, comm, c, M_READY, req);
}

/* The copy is taken at once, so the request is complete when returned. */
int MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
	}
	return send_nonblocking(buf, count, type, dest, tag, comm, c, M_BUFFERED, req);
}

/* ---- receives ---- */

/* @since: when the program's receive started (MPI_Recv), 0: now */
static int irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
		 struct kp_comm *c, bool blocking, uint64_t since, struct kp_req **out)
{
	struct kp_req *r;
	int rc;

	rc = kp_check_args(c, count, source, tag, true);
	if (rc != MPI_SUCCESS)
		return rc;
	r = kp_new_op(KR_RECV, M_STD, c, buf, count, type, source, tag);
	r->blocking = blocking;
	if (kp_wp_on)	/* the profiler's exact Late Sender counts from here */
		r->post_tick = since ? since : kp_ticks();
	/*
	 * Receive immediate before any progress: a message already in its
	 * channel completes the receive with no other polling (find_rec keeps
	 * older receives' claims); from one source, catching up on that
	 * source's channel is enough to post it in user space. Otherwise
	 * progress first, so that records newer than the last poll are seen,
	 * then the general path.
	 */
	if (kp_fast_active() && (source == MPI_ANY_SOURCE ? kp_fast_try_recv(r) : kp_fast_irecv(r))) {
		*out = r;
		return MPI_SUCCESS;
	}
	kp_progress();
	rc = kp_start_recv(r);
	if (rc != MPI_SUCCESS) {
		kp_req_release(r);
		return rc;
	}
	*out = r;
	return MPI_SUCCESS;
}

/*
 * May this MPI_Irecv wait in the batch queue (rbatch.h)? Small, from one
 * source on another node (no channel record and no receive posted in user
 * space can match its message), nothing of ours posted in user space (the
 * kernel's receives must stay older than those). kp_post() checks the rest
 * once the buffer is described: one segment, room, nothing kept back.
 */
static bool batchable(struct kp_comm *c, int count, MPI_Datatype type, int source, int tag)
{
	int w;

	if (!kp.rbatch || source < 0 || source >= c->size || (tag < 0 && tag != MPI_ANY_TAG) ||
	    count <= 0)
		return false;
	w = c->c2w[source];
	return !kp.local[w] && !kp_fast_user_recvs() &&
	       (uint64_t)kp_type_quick(type)->size * (uint64_t)count <= kp.eager_limit;
}

/*
 * A batchable receive skips the progress an MPI_Irecv makes (the ring,
 * channels, kept-back posts: the next call makes it) and goes straight to
 * kp_post(); any other first flushes the queue, as KP_GUARD does.
 */
static int irecv_batched(void *buf, int count, MPI_Datatype type, int source, int tag,
			 struct kp_comm *c, struct kp_req **out)
{
	struct kp_req *r = kp_new_op(KR_RECV, M_STD, c, buf, count, type, source, tag);
	int rc;

	r->batch = true;
	if (kp_wp_on)
		r->post_tick = kp_ticks();
	rc = kp_post_kernel(r);
	if (rc != MPI_SUCCESS) {
		kp_req_release(r);
		return rc;
	}
	*out = r;
	return MPI_SUCCESS;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	KP_GUARD_QUEUE();
	struct kp_comm *c = kp_comm_lookup(comm);
	struct kp_req *r;
	int rc;

	if (c && batchable(c, count, type, source, tag)) {
		rc = irecv_batched(buf, count, type, source, tag, c, &r);
	} else {
		kp_recv_batch_flush();
		if (!c)
			return PMPI_Irecv(buf, count, type, source, tag, comm, req);
		rc = irecv(buf, count, type, source, tag, c, false, 0, &r);
	}
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	*req = kp_handle(r);
	return MPI_SUCCESS;
}

/*
 * Wait for r, copy its status and free it. Like Open MPI, a single status
 * keeps its MPI_ERROR field (MPI 4.0 3.2.5); the error is the return code.
 * bytes: NULL, or where the received byte count goes (kp_mpi_recv()).
 */
static int finish_blocking(struct kp_req *r, MPI_Status *status, uint64_t *bytes)
{
	int rc;

	kp_wait_one(r);
	kp_status_copy(status, r, false);
	if (bytes)
		*bytes = r->status._ucount;
	KP_WP_REQ_DONE(r);
	rc = r->err;
	kp_req_release(r);
	return rc;
}

/*
 * MPI_Recv (waitprof.c times it when the profiler is on). bytes: NULL,
 * or where the received byte count goes (the profiler's size class, also
 * when the caller ignores the status: a status of its own would cost a
 * copy after the message arrived, on the critical path of the exchange).
 */
KP_HOT int kp_mpi_recv(void *buf, int count, MPI_Datatype type, int source, int tag,
		       MPI_Comm comm, MPI_Status *status, uint64_t *bytes)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	uint64_t since = 0;
	struct kp_req *r;
	MPI_Status st;
	int rc;

	if (!c) {
		if (!bytes)
			return KP_PMPI(PMPI_Recv(buf, count, type, source, tag, comm, status));
		st._ucount = 0;
		rc = KP_PMPI(PMPI_Recv(buf, count, type, source, tag, comm,
				       status == MPI_STATUS_IGNORE ? &st : status));
		*bytes = status == MPI_STATUS_IGNORE ? st._ucount : status->_ucount;
		return rc;
	}
	/* receive immediate: no request object */
	kp_fast_spin_t0 = 0;
	if (kp_fast_active() && kp_check_args(c, count, source, tag, true) == MPI_SUCCESS) {
		kp_progress();
		if (kp_fast_recv_now(c, buf, count, type, source, tag, &st, &rc) ||
		    kp_fast_recv_spin(c, buf, count, type, source, tag, &st, &rc)) {
			if (bytes)
				*bytes = st._ucount;
			if (status != MPI_STATUS_IGNORE) {
				st.MPI_ERROR = status->MPI_ERROR;	/* as Open MPI */
				*status = st;
			}
			return kp_err(comm, rc);
		}
	}
	/*
	 * The profiler's receive start: when the channel spin began (no
	 * extra clock read), else now (irecv()); the spin may have lasted
	 * milliseconds, which a later start would leave out.
	 */
	if (kp_wp_on)
		since = kp_fast_spin_t0;
	rc = irecv(buf, count, type, source, tag, c, true, since, &r);
	if (rc != MPI_SUCCESS) {
		if (bytes)
			*bytes = 0;
		return kp_err(comm, rc);
	}
	return kp_err(comm, finish_blocking(r, status, bytes));
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
		 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
		 MPI_Comm comm, MPI_Status *status)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	struct kp_req *rr, *rs;
	int rc, rc2;

	if (!c) {
		KP_MON_PASS(comm, dest, sendcount, sendtype);
		return KP_PMPI(PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
				     recvcount, recvtype, source, recvtag, comm, status));
	}
	rc = kp_check_args(c, sendcount, dest, sendtag, false);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	rc = irecv(recvbuf, recvcount, recvtype, source, recvtag, c, false, 0, &rr);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	rc = isend(sendbuf, sendcount, sendtype, dest, sendtag, c, M_STD, false, &rs);
	if (rc != MPI_SUCCESS) {
		/* the receive is already posted: withdraw it */
		kp_cancel(rr);
		kp_wait_one(rr);
		kp_req_release(rr);
		return kp_err(comm, rc);
	}
	kp_wait_one(rs);
	rc = rs->err;
	kp_req_release(rs);
	rc2 = finish_blocking(rr, status, NULL);
	return kp_err(comm, rc != MPI_SUCCESS ? rc : rc2);
}

/* Receive into a packed copy, send from the buffer, then unpack. */
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag,
			 int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	struct kp_layout *l;
	struct kp_req *rr, *rs;
	MPI_Datatype bt = MPI_BYTE;
	void *tmp;
	size_t bytes, got;
	int rc, rc2, rcount;

	if (!c) {
		KP_MON_PASS(comm, dest, count, type);
		return KP_PMPI(PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag,
					     comm, status));
	}
	rc = kp_check_args(c, count, dest, sendtag, false);
	if (rc == MPI_SUCCESS)
		rc = kp_check_args(c, count, source, recvtag, true);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	l = kp_layout_get(type);
	bytes = (size_t)l->size * (size_t)count;
	tmp = malloc(bytes ? bytes : 1);
	if (!tmp) {
		kp_layout_put(l);
		return kp_err(comm, MPI_ERR_NO_MEM);
	}
	rcount = (int)bytes;
	if (bytes > INT_MAX) {
		/* int counts: receive whole elements as blocks of bytes */
		if (l->size > INT_MAX) {
			rc = MPI_ERR_COUNT;
			goto out;
		}
		PMPI_Type_contiguous((int)l->size, MPI_BYTE, &bt);
		PMPI_Type_commit(&bt);
		rcount = count;
	}
	rc = irecv(tmp, rcount, bt, source, recvtag, c, false, 0, &rr);
	if (rc != MPI_SUCCESS)
		goto out;
	rc = isend(buf, count, type, dest, sendtag, c, M_STD, false, &rs);
	if (rc != MPI_SUCCESS) {
		kp_cancel(rr);
		kp_wait_one(rr);
		kp_req_release(rr);
		goto out;
	}
	kp_wait_one(rs);
	rc = rs->err;
	kp_req_release(rs);
	kp_wait_one(rr);
	got = rr->status._ucount;
	if (!rr->proc_null && !rr->status._cancelled && got) {
		if (l->flat)
			kp_scatter(l, buf, count, tmp, got);
		else
			kp_unpack(l, tmp, got, buf, type);
	}
	rc2 = finish_blocking(rr, status, NULL);
	if (rc == MPI_SUCCESS)
		rc = rc2;
out:
	if (bt != MPI_BYTE)
		MPI_Type_free(&bt);	/* ours: also drops its cached layout */
	free(tmp);
	kp_layout_put(l);
	return kp_err(comm, rc);
}

/* ---- probes ---- */

static void status_proc_null(MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = MPI_PROC_NULL;
	st->MPI_TAG = MPI_ANY_TAG;
	st->_cancelled = 0;
	st->_ucount = 0;
}

static int probe_once(struct kp_comm *c, int source, int tag, unsigned int flags,
		      uint64_t msg_id, int *found, MPI_Status *st)
{
	struct kprog_probe p;

	memset(&p, 0, sizeof(p));
	p.context = c->ctx;
	p.source = source == MPI_ANY_SOURCE ? KPROG_ANY_SOURCE : c->c2w[source];
	p.tag = tag == MPI_ANY_TAG ? KPROG_ANY_TAG : tag;
	p.flags = flags;
	p.msg_id = msg_id;
	if (ioctl(kp.fd, KPROG_IOC_PROBE, &p) < 0) {
		*found = 0;
		return errno == EINTR ? MPI_SUCCESS : kp_errno_to_mpi(errno);
	}
	*found = p.found;
	if (p.found && st != MPI_STATUS_IGNORE) {
		st->MPI_SOURCE = p.out_source >= 0 && p.out_source < kp.world_size &&
				 c->w2c[p.out_source] >= 0 ? c->w2c[p.out_source] : p.out_source;
		st->MPI_TAG = p.out_tag;
		st->_cancelled = 0;
		st->_ucount = p.bytes;
	}
	return MPI_SUCCESS;
}

/*
 * One look: the channels first (no system call when they can answer),
 * then the kernel. With m (Mprobe) a found message is dequeued into m.
 */
static int probe_step(struct kp_comm *c, int source, int tag, struct kp_req *m, int *found,
		      MPI_Status *st)
{
	if (kp_fast_probe(c, source, tag, m, found, m ? &m->status : st))
		return MPI_SUCCESS;
	return probe_once(c, source, tag, m ? KPROG_PROBE_DEQUEUE : 0, m ? m->msg_id : 0, found,
			  m ? &m->status : st);
}

/* Blocking probe: poll, spin, sleep until an event, as a blocking wait does. */
static int probe_blocking(struct kp_comm *c, int source, int tag, struct kp_req *m,
			  MPI_Status *st)
{
	struct kp_wait w = { .kernel_work = false };
	int found = 0, rc;

	for (;;) {
		kp_progress();
		rc = probe_step(c, source, tag, m, &found, st);
		if (rc != MPI_SUCCESS || found)
			break;
		kp_wait_step(&w, false);
	}
	kp_wait_end(&w);
	return rc;
}

static int check_probe(struct kp_comm *c, int source, int tag)
{
	return kp_check_args(c, 0, source, tag, true);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	int rc;

	if (!c)
		return PMPI_Iprobe(source, tag, comm, flag, status);
	rc = check_probe(c, source, tag);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	if (source == MPI_PROC_NULL) {
		*flag = 1;
		status_proc_null(status);
		return MPI_SUCCESS;
	}
	kp_progress();
	rc = probe_step(c, source, tag, NULL, flag, status);
	return kp_err(comm, rc);
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	int rc;

	if (!c)
		return KP_PMPI(PMPI_Probe(source, tag, comm, status));
	rc = check_probe(c, source, tag);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	if (source == MPI_PROC_NULL) {
		status_proc_null(status);
		return MPI_SUCCESS;
	}
	return kp_err(comm, probe_blocking(c, source, tag, NULL, status));
}

static struct kp_req *new_msg(struct kp_comm *c)
{
	struct kp_req *m = kp_req_alloc();

	m->kind = KR_MSG;
	m->comm = c;
	kp_comm_get(c);
	m->msg_id = kp_req_id(m);
	return m;
}

static void msg_found(struct kp_req *m, MPI_Status *st, MPI_Message *message)
{
	m->state = RS_COMPLETE;
	kp_status_copy(st, m, false);
	*message = (MPI_Message)(void *)m;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
		MPI_Status *status)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	struct kp_req *m;
	int rc;

	if (!c)
		return PMPI_Improbe(source, tag, comm, flag, message, status);
	rc = check_probe(c, source, tag);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	if (source == MPI_PROC_NULL) {
		*flag = 1;
		*message = MPI_MESSAGE_NO_PROC;
		status_proc_null(status);
		return MPI_SUCCESS;
	}
	kp_progress();
	m = new_msg(c);
	rc = probe_step(c, source, tag, m, flag, NULL);
	if (rc != MPI_SUCCESS || !*flag) {
		kp_req_release(m);
		*flag = 0;
		return kp_err(comm, rc);
	}
	msg_found(m, status, message);
	return MPI_SUCCESS;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
	KP_GUARD();
	struct kp_comm *c = kp_comm_lookup(comm);
	struct kp_req *m;
	int rc;

	if (!c)
		return KP_PMPI(PMPI_Mprobe(source, tag, comm, message, status));
	rc = check_probe(c, source, tag);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	if (source == MPI_PROC_NULL) {
		*message = MPI_MESSAGE_NO_PROC;
		status_proc_null(status);
		return MPI_SUCCESS;
	}
	m = new_msg(c);
	rc = probe_blocking(c, source, tag, m, NULL);
	if (rc != MPI_SUCCESS) {
		kp_req_release(m);
		return kp_err(comm, rc);
	}
	msg_found(m, status, message);
	return MPI_SUCCESS;
}

/* Turn our message handle into a posted receive of that message. */
static int mrecv_post(void *buf, int count, MPI_Datatype type, MPI_Message *message,
		      struct kp_req **out)
{
	struct kp_req *m = (struct kp_req *)(void *)*message;
	struct kp_comm *c = m->comm;
	struct kp_req *r;
	int rc;

	kp_progress();
	if (count < 0)
		return MPI_ERR_COUNT;
	r = kp_new_op(KR_RECV, M_STD, c, buf, count, type, m->status.MPI_SOURCE,
		      m->status.MPI_TAG);
	if (m->umsg) {
		/* taken from a channel by the probe: its payload is in m */
		r->status = m->status;
		r->err = kp_fast_mrecv(m, buf, count, type, &r->status);
		r->status.MPI_ERROR = r->err;
		r->state = RS_COMPLETE;
		kp_req_release(m);
		*message = MPI_MESSAGE_NULL;
		*out = r;
		return MPI_SUCCESS;
	}
	r->mrecv = true;
	r->msg_id = m->msg_id;
	kp_req_release(m);
	*message = MPI_MESSAGE_NULL;
	rc = kp_start_recv(r);
	if (rc != MPI_SUCCESS) {
		kp_req_release(r);
		return rc;
	}
	*out = r;
	return MPI_SUCCESS;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
	KP_GUARD();
	struct kp_req *r;
	MPI_Comm comm;
	int rc;

	if (!message || !kp_is_msg(*message))
		return KP_PMPI(PMPI_Mrecv(buf, count, type, message, status));
	comm = kp_req_comm((struct kp_req *)(void *)*message);
	rc = mrecv_post(buf, count, type, message, &r);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	return kp_err(comm, finish_blocking(r, status, NULL));
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
	       MPI_Request *req)
{
	KP_GUARD();
	struct kp_req *r;
	MPI_Comm comm;
	int rc;

	if (!message || !kp_is_msg(*message))
		return PMPI_Imrecv(buf, count, type, message, req);
	comm = kp_req_comm((struct kp_req *)(void *)*message);
	rc = mrecv_post(buf, count, type, message, &r);
	if (rc != MPI_SUCCESS)
		return kp_err(comm, rc);
	*req = kp_handle(r);
	return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *req)
{
	KP_GUARD();
	if (!req || !kp_is_req(*req))
		return PMPI_Cancel(req);
	kp_progress();
	if (kp_req(*req)->kind == KR_COLL)
		return MPI_SUCCESS;	/* cancelling a collective is erroneous: it runs on */
	if (!kp_fast_cancel(kp_req(*req)))
		kp_cancel(kp_req(*req));
	return MPI_SUCCESS;
}

/* ---- the blocking calls the wait-state profiler times (waitprof_hooks.h) ---- */

/*
 * One call of kp_mpi_recv(), which LTO then inlines: the blocking receive
 * runs in this one function and page (hot.h), profiled or not. A profiled
 * call used to call it and return through here, the off path jumped to
 * it, so the profiler also cost a call and a return between two pages: in
 * the VM 110 ns per 8-byte call against 30 now (no send stamps). The
 * received bytes come back from kp_mpi_recv() itself: with a status of
 * the profiler's own in place of MPI_STATUS_IGNORE, the receive copied
 * it between the message's arrival and the return, on the critical path.
 */
KP_HOT_PAGE int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
			 MPI_Comm comm, MPI_Status *status)
{
	struct kp_wp_call w;
	bool prof = kp_wp_profiling();
	uint64_t bytes = 0;
	int rc;

	if (prof)
		kp_wp_enter(&w, __builtin_return_address(0), KP_WP_RECV);
	rc = kp_mpi_recv(buf, count, type, source, tag, comm, status, prof ? &bytes : NULL);
	if (prof)
		kp_wp_leave_recv(&w, bytes);
	return rc;
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	struct kp_wp_call w;
	int rc;

	if (!kp_wp_profiling())
		return kp_mpi_ssend(buf, count, type, dest, tag, comm);
	kp_wp_enter(&w, __builtin_return_address(0), KP_WP_SSEND);
	rc = kp_mpi_ssend(buf, count, type, dest, tag, comm);
	kp_wp_leave(&w, KP_WP_SSEND, kp_wp_type_bytes(count, type));
	return rc;
}
