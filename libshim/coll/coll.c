// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Nonblocking collectives handed to the module (KPROG_IOC_COLL): which
 * communicators qualify, the collective request (a kp_req of kind
 * KR_COLL, so every Wait/Test call and mixed arrays take it like a
 * point-to-point one), the per-communicator sequence number that is the
 * schedule's tag, typed buffers as packed bytes, the hand-off and the
 * completion (one ring entry; MPI_Test reads it with no system call).
 *
 * Every member of a communicator must take the same path for a given
 * collective call, or the two halves never meet: the decision to go to
 * the module depends only on what is the same on every member (the
 * communicator, the module's features and limits, the op and the
 * reduction's type, which MPI requires to be the same everywhere), never
 * on a rank's own buffers or datatypes (a rank whose data is not one
 * block packs it into a temporary instead) and never on transient
 * state: a schedule the module has no room for (ENOBUFS: max_colls
 * running) waits here and is posted from progress, as p2p posts are.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "coll.h"
#include "dtype.h"
#include "mon.h"
#include "collprof.h"

struct kp_req *kp_coll_deferred;
struct kp_coll_pinit kp_coll_pinit;
static struct kp_req **deferred_tail = &kp_coll_deferred;
static uint64_t n_posted, n_deferred;	/* schedules handed over; after waiting here */
static uint64_t n_family[KP_CF_NR], n_persistent;	/* of n_posted */

void kp_coll_counts(uint64_t *posted, uint64_t *deferred)
{
	*posted = n_posted;
	*deferred = n_deferred;
}

void kp_coll_family_counts(uint64_t *fam, uint64_t *persistent)
{
	memcpy(fam, n_family, sizeof(n_family));
	*persistent = n_persistent;
}

/*
 * Steps of the largest schedule coll_algo.c builds on n ranks (the ring
 * allreduce: 3 (n-1) + a few); a communicator whose schedules might not
 * fit max_coll_steps passes through, on every member alike.
 */
static uint64_t max_steps(int n)
{
	return 4 * (uint64_t)n + 16;
}

KP_COLL_TEXT struct kp_comm *kp_coll_comm(MPI_Comm comm)
{
	struct kp_comm *c;

	KP_CP(KP_CP_S_ENTRY);
	if (!kp.coll)
		return NULL;
	c = kp_comm_lookup(comm);
	if (!c || max_steps(c->size) > kp.max_coll_steps)
		return NULL;
	return c;
}

static void coll_free(struct kp_req *r);

/*
 * Ended collectives' objects, kept for the next calls with the room of
 * their steps and unpack lists: a collective then makes no call into the
 * C library's allocator from its start to its end (the typical one has no
 * temporaries). Under the emulator each such call after the start's
 * system call or the computation walks cold pages (KP_COLL_TEXT says why); natively
 * it saves two allocations and frees per collective. Under the shim's lock
 * like every list of requests.
 */
#define COLL_KEEP 4			/* objects */
#define COLL_KEEP_STEPS 256		/* no bigger step arrays are kept */
static struct kp_coll *coll_kept[COLL_KEEP];
_Static_assert(offsetof(struct kp_coll, s) == 0, "coll_get() clears what follows the schedule");
static int n_kept;

KP_COLL_TEXT static struct kp_coll *coll_get(int rank, int size)
{
	struct kp_coll *k;
	struct kp_coll_unpack *unp, *pk;
	int capunp, cappk;

	if (!n_kept) {
		k = calloc(1, sizeof(*k));
		if (!k)
			abort();
		kp_sched_init(&k->s, rank, size);
		return k;
	}
	k = coll_kept[--n_kept];
	unp = k->unp;
	pk = k->pk;
	capunp = k->capunp;
	cappk = k->cappk;
	kp_sched_reuse(&k->s, rank, size);
	memset((char *)k + sizeof(k->s), 0, sizeof(*k) - sizeof(k->s));
	k->unp = unp;
	k->pk = pk;
	k->capunp = capunp;
	k->cappk = cappk;
	return k;
}

KP_COLL_TEXT struct kp_req *kp_coll_new(struct kp_comm *c)
{
	struct kp_req *r;
	struct kp_coll *k;

	KP_CP(KP_CP_S_NEW);
	r = kp_req_alloc();
	k = coll_get(c->rank, c->size);
	kp_coll_done = kp_coll_complete;
	kp_coll_free = coll_free;
	k->persistent = kp_coll_pinit.on;
	r->kind = KR_COLL;
	r->comm = c;
	kp_comm_get(c);
	r->peer = MPI_ANY_SOURCE;
	r->tag = MPI_ANY_TAG;
	r->coll = k;
	r->state = RS_INACTIVE;
	return r;
}

/* Remember a typed buffer and its temporary: unpacks (@pk false) or packs. */
static void add_unpack(struct kp_coll *k, void *tmp, void *buf, int count, MPI_Datatype type,
		       struct kp_layout *l, bool pk)
{
	struct kp_coll_unpack **v = pk ? &k->pk : &k->unp, *u;
	int *n = pk ? &k->npk : &k->nunp, *cap = pk ? &k->cappk : &k->capunp;

	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4;
		*v = realloc(*v, *cap * sizeof(**v));
		if (!*v)
			abort();
	}
	u = &(*v)[(*n)++];
	u->tmp = tmp;
	u->buf = buf;
	u->count = count;
	u->lay = l;
	u->type = MPI_DATATYPE_NULL;
	if (!l->flat)
		PMPI_Type_dup(type, &u->type);	/* the program may free its type meanwhile */
}

/* Pack count elements at buf into out (layout l). */
static void pack(struct kp_layout *l, const void *buf, int count, MPI_Datatype type, void *out,
		 size_t bytes)
{
	if (l->flat)
		kp_gather(l, buf, count, out, bytes);
	else
		kp_pack(l, buf, count, type, out);
}

KP_COLL_TEXT void *kp_coll_buf(struct kp_req *r, const void *buf, int count, MPI_Datatype type, bool in,
		  bool out, size_t *bytes)
{
	const struct kp_quick_type *q = kp_type_quick(type);
	struct kp_layout *l;
	void *tmp;

	*bytes = (size_t)count * (size_t)q->size;
	if (q->block || !*bytes)
		return (char *)buf + q->off;
	l = kp_layout_get(type);
	tmp = kp_sched_tmp(&r->coll->s, *bytes);
	if (!tmp) {
		kp_layout_put(l);
		return NULL;
	}
	if (in && r->coll->persistent)
		add_unpack(r->coll, tmp, (void *)buf, count, type, kp_layout_get(type), true);
	else if (in)
		pack(l, buf, count, type, tmp, *bytes);
	if (out)
		add_unpack(r->coll, tmp, (void *)buf, count, type, l, false);
	else
		kp_layout_put(l);
	return tmp;
}

void *kp_coll_vec(struct kp_req *r, const void *buf, const int *counts, const int *displs,
		  MPI_Datatype type, int n, bool in, bool out, size_t *bcounts, size_t *bdispls)
{
	const struct kp_quick_type *q = kp_type_quick(type);
	struct kp_layout *l;
	MPI_Aint lb, extent;
	size_t total = 0;
	char *tmp;
	int i;

	PMPI_Type_get_extent(type, &lb, &extent);
	for (i = 0; i < n; i++)
		bcounts[i] = (size_t)counts[i] * (size_t)q->size;
	if (q->block) {
		/* the blocks stay where they are: offsets from buf */
		for (i = 0; i < n; i++)
			bdispls[i] = (size_t)((MPI_Aint)displs[i] * extent + q->off);
		return (char *)buf;
	}
	for (i = 0; i < n; i++) {
		bdispls[i] = total;
		total += bcounts[i];
	}
	tmp = kp_sched_tmp(&r->coll->s, total);
	if (!tmp)
		return NULL;
	for (i = 0; i < n; i++) {
		char *b = (char *)buf + (MPI_Aint)displs[i] * extent;

		if (!bcounts[i])
			continue;
		l = kp_layout_get(type);
		if (in && r->coll->persistent)
			add_unpack(r->coll, tmp + bdispls[i], b, counts[i], type,
				   kp_layout_get(type), true);
		else if (in)
			pack(l, b, counts[i], type, tmp + bdispls[i], bcounts[i]);
		if (out)
			add_unpack(r->coll, tmp + bdispls[i], b, counts[i], type, l, false);
		else
			kp_layout_put(l);
	}
	return tmp;
}

/* Drop the types and layouts of n unpacks (the array stays). */
KP_COLL_TEXT static void put_unpacks(struct kp_coll_unpack *v, int n)
{
	for (int i = 0; i < n; i++) {
		if (v[i].type != MPI_DATATYPE_NULL)
			PMPI_Type_free(&v[i].type);
		kp_layout_put(v[i].lay);
	}
}

/*
 * Everything of the collective (kp_coll_free: a persistent one's release):
 * kept for the next one (coll_get()) or freed.
 */
KP_COLL_TEXT static void coll_free(struct kp_req *r)
{
	struct kp_coll *k = r->coll;

	put_unpacks(k->unp, k->nunp);
	put_unpacks(k->pk, k->npk);
	k->nunp = k->npk = 0;
	r->coll = NULL;
	if (n_kept < COLL_KEEP && k->s.cap <= COLL_KEEP_STEPS) {
		kp_sched_reset(&k->s);
		coll_kept[n_kept++] = k;
		return;
	}
	free(k->unp);
	free(k->pk);
	kp_sched_free(&k->s);
	free(k);
}

/* The collective's end: outputs into place, temporaries freed (kept: persistent). */
KP_COLL_TEXT static void finish(struct kp_req *r, int err)
{
	struct kp_coll *k = r->coll;
	int i;

	for (i = 0; i < k->nunp && !err; i++) {
		struct kp_coll_unpack *u = &k->unp[i];
		size_t bytes = (size_t)u->count * (size_t)u->lay->size;

		if (u->lay->flat)
			kp_scatter(u->lay, u->buf, u->count, u->tmp, bytes);
		else
			kp_unpack(u->lay, u->tmp, bytes, u->buf, u->type);
	}
	if (!k->persistent)
		coll_free(r);
	kp_complete_now(r, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
	r->err = err;
	r->status.MPI_ERROR = err;
}

KP_COLL_TEXT void kp_coll_complete(struct kp_req *r, const struct kprog_cqe *cqe)
{
	KP_CP_IF(kp_cp_t[KP_CP_W_ENTRY], KP_CP_W_DONE0);
	finish(r, kp_errno_to_mpi(-cqe->error));
	kp_log(3, "collective %llx done, error %d", (unsigned long long)cqe->req_id, cqe->error);
	if (r->user_freed)
		kp_req_release(r);
	KP_CP_IF(kp_cp_t[KP_CP_W_ENTRY], KP_CP_W_DONE1);
}

/* One post; 0, ENOBUFS (try again later) or another errno. */
KP_COLL_TEXT static int post(struct kp_req *r)
{
	struct kp_coll *k = r->coll;
	int rc;

	KP_CP(KP_CP_S_IOCTL);
	do {
		rc = ioctl(kp.fd, KPROG_IOC_COLL, &k->ioc);
	} while (rc < 0 && errno == EINTR);
	KP_CP(KP_CP_S_IOCTL_END);
	if (rc < 0)
		return errno;
	if (kp_mon_active)	/* a monitoring session counts what kprog carries */
		kp_mon_coll_steps(k->s.steps, k->s.n);
	/*
	 * The module copied the steps; their array stays with the object
	 * (coll_free() keeps it for the next collective), the buffers until
	 * the end.
	 */
	n_posted++;
	n_family[k->family]++;
	n_persistent += k->persistent;
	r->state = RS_ACTIVE;
	if (k->ioc.done)
		kp_complete(r, &k->ioc.cqe);
	return 0;
}

static void fail(struct kp_req *r, int e)
{
	kp_log(1, "collective schedule refused: errno %d", e);
	r->state = RS_ACTIVE;
	finish(r, kp_errno_to_mpi(e));
	if (r->user_freed)
		kp_req_release(r);
}

void kp_coll_flush(void)
{
	struct kp_req *r;
	int e;

	while ((r = kp_coll_deferred)) {
		e = post(r);
		if (e == ENOBUFS)
			return;
		kp_coll_deferred = r->pnext;
		if (!kp_coll_deferred)
			deferred_tail = &kp_coll_deferred;
		r->pnext = NULL;
		if (e)
			fail(r, e);
	}
}

/* Post now, or queue behind earlier deferred ones. 0 or an errno. */
KP_COLL_TEXT static int launch(struct kp_req *r)
{
	int e = kp_coll_deferred ? ENOBUFS : post(r);

	if (e == ENOBUFS) {
		n_deferred++;
		r->state = RS_DEFERRED;
		r->pnext = NULL;
		*deferred_tail = r;
		deferred_tail = &r->pnext;
		return 0;
	}
	return e;
}

KP_COLL_TEXT int kp_coll_start(struct kp_req *r, MPI_Request *req)
{
	struct kp_coll *k = r->coll;
	struct kp_comm *c = r->comm;
	uint32_t i;
	int e;

	KP_CP(KP_CP_S_START);
	/*
	 * Every member numbers its collectives on c alike; a persistent one
	 * takes its number here, at the (ordered) init, and keeps it for
	 * every start: one start ends before the next begins, so its
	 * messages never meet another start's.
	 */
	int tag = (int)(c->coll_seq++ & 0x7fffffff);

	if (k->s.oom) {
		MPI_Comm comm = c->comm;

		k->persistent = false;
		finish(r, MPI_ERR_NO_MEM);
		kp_req_release(r);
		return kp_err(comm, MPI_ERR_NO_MEM);
	}
	*req = kp_handle(r);
	for (i = 0; i < k->s.n; i++) {
		struct kprog_coll_step *st = &k->s.steps[i];

		if (st->kind == KPROG_STEP_SEND || st->kind == KPROG_STEP_RECV)
			st->peer = c->c2w[st->peer];
		if (st->kind == KPROG_STEP_SEND && !(st->flags & KPROG_STEP_IOV))
			k->bytes += st->len;
	}
	k->ioc = (struct kprog_coll){
		.req_id = kp_req_id(r),
		.steps = (uint64_t)(uintptr_t)k->s.steps,
		.nr_steps = k->s.n,
		.context = c->ctx | KP_COLL_CTX_BIT,
		.tag = tag,
	};
	if (k->persistent) {
		r->persistent = true;
		r->state = RS_INACTIVE;
		return MPI_SUCCESS;
	}
	if (!k->s.n) {
		/* nothing to move (one rank, no bytes): complete here */
		finish(r, MPI_SUCCESS);
		return MPI_SUCCESS;
	}
	kp_log(3, "collective %llx: %u steps, %u rounds, tag %d", (unsigned long long)k->ioc.req_id,
	       k->s.n, k->s.steps[k->s.n - 1].round + 1, tag);
	e = launch(r);
	if (e) {
		MPI_Comm comm = c->comm;
		int code = kp_errno_to_mpi(e);

		*req = MPI_REQUEST_NULL;
		fail(r, e);
		kp_req_release(r);
		return kp_err(comm, code);
	}
	KP_CP(KP_CP_S_END);
	KP_CP_START_DONE();
	return MPI_SUCCESS;
}

bool kp_coll_req(MPI_Request h, uint64_t *bytes)
{
	struct kp_req *r;

	if (h == MPI_REQUEST_NULL || !kp_is_req(h))
		return false;
	r = kp_req(h);
	if (r->kind != KR_COLL)
		return false;
	*bytes = r->coll ? r->coll->bytes : 0;
	return true;
}

int kp_coll_restart(struct kp_req *r)
{
	struct kp_coll *k = r->coll;
	int e;

	for (int i = 0; i < k->npk; i++) {
		struct kp_coll_unpack *u = &k->pk[i];

		pack(u->lay, u->buf, u->count, u->type, u->tmp, (size_t)u->count * u->lay->size);
	}
	if (!k->s.n) {
		finish(r, MPI_SUCCESS);
		return MPI_SUCCESS;
	}
	k->ioc.done = 0;
	e = launch(r);
	if (e) {
		int code = kp_errno_to_mpi(e);

		kp_log(1, "persistent collective refused: errno %d", e);
		r->state = RS_INACTIVE;
		return code;
	}
	return MPI_SUCCESS;
}
