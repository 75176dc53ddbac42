// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fortran bindings: Open MPI 4.1's mpif.h / `use mpi` / `use mpi_f08`
 * entry points of every call the shim handles in C, converted to C and
 * routed through the same code.
 *
 * Open MPI's own Fortran bindings (libmpi_mpifh) call the PMPI_* C
 * functions, so without these a Fortran program never reaches the shim.
 * Which symbols (checked with nm -D on Debian 12's Open MPI 4.1.4):
 *  - mpif.h and `use mpi` (gfortran, ignore-TKR module) call the external
 *    names mpi_send_ etc.; libmpi_mpifh exports each call as mpi_x,
 *    mpi_x_, mpi_x__, MPI_X, MPI_X_f, MPI_X_f08, ompi_x_f and the same
 *    with pmpi/PMPI: all of them are defined here (FORTRAN()).
 *  - `use mpi_f08` (libmpi_usempif08) calls ompi_x_f for most calls and
 *    pmpi_x_ for those with LOGICAL arguments (Test*, Iprobe, Improbe,
 *    Request_get_status, Cart_create, ...): both are among the above.
 * The PMPI forms are taken too: the Fortran handle of a kprog request or
 * message means nothing to Open MPI, so every Fortran entry that takes or
 * returns one must be ours (a Fortran profiling tool's PMPI calls then
 * reach kprog, as its MPI calls would).
 *
 * Handles: communicators and datatypes with PMPI_*_f2c. Requests and
 * messages of kprog are slots of the shim's pool; their Fortran handle is
 * -2 - slot (Open MPI's are indices >= 0, MPI_REQUEST_NULL and
 * MPI_MESSAGE_NULL are 0), so both kinds live in one Fortran array and
 * convert without a table. Statuses go through PMPI_Status_f2c/c2f (the
 * input is converted too: single-status calls keep MPI_ERROR, as Open
 * MPI's bindings do). MPI_STATUS(ES)_IGNORE and MPI_BOTTOM are the
 * addresses of Open MPI's common blocks (mpi_fortran_*_), compared as
 * Open MPI's bindings compare them; LOGICAL is a 4-byte integer with
 * .TRUE. = 1 (OMPI_FORTRAN_VALUE_TRUE of this build).
 *
 * Calls that only create or free objects (Init, Finalize, communicator
 * constructors, Comm_free, Type_free) run Open MPI's own Fortran binding
 * (found with dlsym(RTLD_NEXT)) and then do what the C wrapper does
 * afterwards (join kprog, register the communicator, evict the datatype):
 * Open MPI keeps converting their arguments (LOGICAL arrays,
 * MPI_UNWEIGHTED, ...).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include "shim.h"
#include "dtype.h"

/* Open MPI's Fortran sentinels (common blocks, defined in libmpi). */
extern MPI_Fint mpi_fortran_bottom_[];
extern MPI_Fint mpi_fortran_status_ignore_[];
extern MPI_Fint mpi_fortran_statuses_ignore_[];

#define F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
_Static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0, "MPI_STATUS_SIZE");
#define F_TRUE 1		/* OMPI_FORTRAN_VALUE_TRUE */
#define F_OURS (-2)		/* Fortran handle of pool slot s: F_OURS - s */
#define F_SMALL 16		/* arrays up to this size need no malloc */

/* Every Fortran name Open MPI 4.1 exports for a call. */
#define FALIAS(name, impl)							\
	extern __typeof__(impl) name __attribute__((alias(#impl), visibility("default")));
#define FORTRAN(lc, UC, Mc, impl)						\
	FALIAS(mpi_##lc, impl) FALIAS(mpi_##lc##_, impl) FALIAS(mpi_##lc##__, impl)	\
	FALIAS(MPI_##UC, impl) FALIAS(MPI_##Mc##_f, impl) FALIAS(MPI_##Mc##_f08, impl)	\
	FALIAS(ompi_##lc##_f, impl)						\
	FALIAS(pmpi_##lc, impl) FALIAS(pmpi_##lc##_, impl) FALIAS(pmpi_##lc##__, impl)	\
	FALIAS(PMPI_##UC, impl) FALIAS(PMPI_##Mc##_f, impl) FALIAS(PMPI_##Mc##_f08, impl)

/* ---- conversions ---- */

static void set_ierr(MPI_Fint *ierr, int rc)
{
	if (ierr)
		*ierr = (MPI_Fint)rc;
}

static void *fbuf(void *b)
{
	return b == (void *)mpi_fortran_bottom_ ? MPI_BOTTOM : b;
}

static MPI_Request req_f2c(MPI_Fint f)
{
	struct kp_req *r;

	if (f <= F_OURS) {
		r = kp_req_at((uint32_t)((int64_t)F_OURS - f));
		if (r && r->kind != KR_MSG)
			return kp_handle(r);
	}
	return PMPI_Request_f2c(f);
}

static MPI_Fint req_c2f(MPI_Request c)
{
	if (kp_is_req(c))
		return (MPI_Fint)((int64_t)F_OURS - kp_req_slot(kp_req(c)));
	return PMPI_Request_c2f(c);
}

static MPI_Message msg_f2c(MPI_Fint f)
{
	struct kp_req *r;

	if (f <= F_OURS) {
		r = kp_req_at((uint32_t)((int64_t)F_OURS - f));
		if (r && r->kind == KR_MSG)
			return (MPI_Message)(void *)r;
	}
	return PMPI_Message_f2c(f);
}

static MPI_Fint msg_c2f(MPI_Message c)
{
	if (kp_is_msg(c))
		return (MPI_Fint)((int64_t)F_OURS - kp_req_slot((struct kp_req *)(void *)c));
	return PMPI_Message_c2f(c);
}

/*
 * The C side of the same conversions, for mixed-language programs: a C
 * routine that hands a request or message of the shim to Fortran (or takes
 * one from it) calls MPI_Request_c2f / f2c, MPI_Message_c2f / f2c, and Open
 * MPI's would take the shim's handle for one of its own objects (a pointer
 * it does not own). So these four are the shim's, giving and taking the
 * same -2 - slot handles as the Fortran entry points; every other handle
 * goes to Open MPI unchanged. Only the MPI_ names: the shim reaches Open
 * MPI's through the PMPI_ ones.
 */
MPI_Fint MPI_Request_c2f(MPI_Request request)
{
	return req_c2f(request);
}

MPI_Request MPI_Request_f2c(MPI_Fint request)
{
	return req_f2c(request);
}

MPI_Fint MPI_Message_c2f(MPI_Message message)
{
	return msg_c2f(message);
}

MPI_Message MPI_Message_f2c(MPI_Fint message)
{
	return msg_f2c(message);
}

static bool st_ignored(const MPI_Fint *f)
{
	return !f || f == mpi_fortran_status_ignore_;
}

/* A C status for the call, holding the Fortran one's fields (MPI_ERROR). */
static MPI_Status *st_in(MPI_Fint *f, MPI_Status *c)
{
	if (st_ignored(f))
		return MPI_STATUS_IGNORE;
	PMPI_Status_f2c(f, c);
	return c;
}

static void st_out(MPI_Fint *f, const MPI_Status *c)
{
	if (!st_ignored(f))
		PMPI_Status_c2f(c, f);
}

/* Arrays of n requests and n statuses, converted in and back out. */
struct farr {
	int n;
	MPI_Request *req;
	MPI_Status *st;		/* MPI_STATUSES_IGNORE or n statuses */
	int *idx;
	MPI_Request sreq[F_SMALL];
	MPI_Status sst[F_SMALL];
	int sidx[F_SMALL];
};

static void arr_in(struct farr *a, int n, const MPI_Fint *freq, MPI_Fint *fst, bool idx)
{
	int i;

	a->n = n < 0 ? 0 : n;
	a->req = a->sreq;
	a->st = MPI_STATUSES_IGNORE;
	a->idx = a->sidx;
	if (a->n > F_SMALL) {
		a->req = malloc(sizeof(*a->req) * a->n);
		a->idx = idx ? malloc(sizeof(int) * a->n) : NULL;
		if (!a->req || (idx && !a->idx))
			abort();
	}
	for (i = 0; i < a->n; i++)
		a->req[i] = req_f2c(freq[i]);
	if (fst && fst != mpi_fortran_statuses_ignore_) {
		a->st = a->n > F_SMALL ? malloc(sizeof(MPI_Status) * a->n) : a->sst;
		if (!a->st)
			abort();
		for (i = 0; i < a->n; i++)
			PMPI_Status_f2c(fst + (size_t)i * F_STATUS_SIZE, &a->st[i]);
	}
}

static void arr_out(struct farr *a, MPI_Fint *freq, MPI_Fint *fst)
{
	int i;

	for (i = 0; i < a->n; i++)
		freq[i] = req_c2f(a->req[i]);
	if (a->st != MPI_STATUSES_IGNORE)
		for (i = 0; i < a->n; i++)
			PMPI_Status_c2f(&a->st[i], fst + (size_t)i * F_STATUS_SIZE);
	if (a->req != a->sreq)
		free(a->req);
	if (a->idx != a->sidx)
		free(a->idx);
	if (a->st != a->sst && a->st != MPI_STATUSES_IGNORE)
		free(a->st);
}

/* ---- sends ---- */

#define F_SEND(lc, UC, Mc)								\
static void f_##lc(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest,		\
		   MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *ierr)			\
{											\
	set_ierr(ierr, MPI_##Mc(fbuf(buf), *count, PMPI_Type_f2c(*type), *dest, *tag,	\
				PMPI_Comm_f2c(*comm)));					\
}											\
FORTRAN(lc, UC, Mc, f_##lc)

F_SEND(send, SEND, Send)
F_SEND(ssend, SSEND, Ssend)
F_SEND(rsend, RSEND, Rsend)
F_SEND(bsend, BSEND, Bsend)

/* Nonblocking and persistent sends and receives: all end in a request. */
#define F_IREQ(lc, UC, Mc)								\
static void f_##lc(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *peer,		\
		   MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)	\
{											\
	MPI_Request c = MPI_REQUEST_NULL;						\
	int rc = MPI_##Mc(fbuf(buf), *count, PMPI_Type_f2c(*type), *peer, *tag,	\
			  PMPI_Comm_f2c(*comm), &c);					\
											\
	if (rc == MPI_SUCCESS)								\
		*req = req_c2f(c);							\
	set_ierr(ierr, rc);								\
}											\
FORTRAN(lc, UC, Mc, f_##lc)

F_IREQ(isend, ISEND, Isend)
F_IREQ(issend, ISSEND, Issend)
F_IREQ(irsend, IRSEND, Irsend)
F_IREQ(ibsend, IBSEND, Ibsend)
F_IREQ(irecv, IRECV, Irecv)
F_IREQ(send_init, SEND_INIT, Send_init)
F_IREQ(ssend_init, SSEND_INIT, Ssend_init)
F_IREQ(rsend_init, RSEND_INIT, Rsend_init)
F_IREQ(bsend_init, BSEND_INIT, Bsend_init)
F_IREQ(recv_init, RECV_INIT, Recv_init)

/* ---- receives ---- */

static void f_recv(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
		   MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	int rc = MPI_Recv(fbuf(buf), *count, PMPI_Type_f2c(*type), *source, *tag,
			  PMPI_Comm_f2c(*comm), st_in(status, &c));

	st_out(status, &c);
	set_ierr(ierr, rc);
}
FORTRAN(recv, RECV, Recv, f_recv)

static void f_sendrecv(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, MPI_Fint *dest,
		       MPI_Fint *stag, void *rbuf, MPI_Fint *rcount, MPI_Fint *rtype,
		       MPI_Fint *source, MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *status,
		       MPI_Fint *ierr)
{
	MPI_Status c;
	int rc = MPI_Sendrecv(fbuf(sbuf), *scount, PMPI_Type_f2c(*stype), *dest, *stag,
			      fbuf(rbuf), *rcount, PMPI_Type_f2c(*rtype), *source, *rtag,
			      PMPI_Comm_f2c(*comm), st_in(status, &c));

	st_out(status, &c);
	set_ierr(ierr, rc);
}
FORTRAN(sendrecv, SENDRECV, Sendrecv, f_sendrecv)

static void f_sendrecv_replace(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest,
			       MPI_Fint *stag, MPI_Fint *source, MPI_Fint *rtag, MPI_Fint *comm,
			       MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	int rc = MPI_Sendrecv_replace(fbuf(buf), *count, PMPI_Type_f2c(*type), *dest, *stag,
				      *source, *rtag, PMPI_Comm_f2c(*comm), st_in(status, &c));

	st_out(status, &c);
	set_ierr(ierr, rc);
}
FORTRAN(sendrecv_replace, SENDRECV_REPLACE, Sendrecv_replace, f_sendrecv_replace)

/* ---- probes and matched receives ---- */

static void f_iprobe(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag,
		     MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	int f = 0, rc = MPI_Iprobe(*source, *tag, PMPI_Comm_f2c(*comm), &f, st_in(status, &c));

	if (rc == MPI_SUCCESS) {
		*flag = f ? F_TRUE : 0;
		if (f)
			st_out(status, &c);
	}
	set_ierr(ierr, rc);
}
FORTRAN(iprobe, IPROBE, Iprobe, f_iprobe)

static void f_probe(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *status,
		    MPI_Fint *ierr)
{
	MPI_Status c;
	int rc = MPI_Probe(*source, *tag, PMPI_Comm_f2c(*comm), st_in(status, &c));

	st_out(status, &c);
	set_ierr(ierr, rc);
}
FORTRAN(probe, PROBE, Probe, f_probe)

static void f_improbe(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *flag,
		      MPI_Fint *message, MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	MPI_Message m = MPI_MESSAGE_NULL;
	int f = 0, rc = MPI_Improbe(*source, *tag, PMPI_Comm_f2c(*comm), &f, &m,
				    st_in(status, &c));

	if (rc == MPI_SUCCESS) {
		*flag = f ? F_TRUE : 0;
		if (f) {
			*message = msg_c2f(m);
			st_out(status, &c);
		}
	}
	set_ierr(ierr, rc);
}
FORTRAN(improbe, IMPROBE, Improbe, f_improbe)

static void f_mprobe(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *message,
		     MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	MPI_Message m = MPI_MESSAGE_NULL;
	int rc = MPI_Mprobe(*source, *tag, PMPI_Comm_f2c(*comm), &m, st_in(status, &c));

	if (rc == MPI_SUCCESS) {
		*message = msg_c2f(m);
		st_out(status, &c);
	}
	set_ierr(ierr, rc);
}
FORTRAN(mprobe, MPROBE, Mprobe, f_mprobe)

static void f_mrecv(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *message,
		    MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	MPI_Message m = msg_f2c(*message);
	int rc = MPI_Mrecv(fbuf(buf), *count, PMPI_Type_f2c(*type), &m, st_in(status, &c));

	*message = msg_c2f(m);
	st_out(status, &c);
	set_ierr(ierr, rc);
}
FORTRAN(mrecv, MRECV, Mrecv, f_mrecv)

static void f_imrecv(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *message,
		     MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Message m = msg_f2c(*message);
	MPI_Request c = MPI_REQUEST_NULL;
	int rc = MPI_Imrecv(fbuf(buf), *count, PMPI_Type_f2c(*type), &m, &c);

	*message = msg_c2f(m);
	if (rc == MPI_SUCCESS)
		*req = req_c2f(c);
	set_ierr(ierr, rc);
}
FORTRAN(imrecv, IMRECV, Imrecv, f_imrecv)

/* ---- single requests ---- */

static void f_cancel(MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request c = req_f2c(*req);

	set_ierr(ierr, MPI_Cancel(&c));
}
FORTRAN(cancel, CANCEL, Cancel, f_cancel)

static void f_request_free(MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request c = req_f2c(*req);
	int rc = MPI_Request_free(&c);

	if (rc == MPI_SUCCESS)
		*req = req_c2f(c);
	set_ierr(ierr, rc);
}
FORTRAN(request_free, REQUEST_FREE, Request_free, f_request_free)

static void f_request_get_status(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Status c;
	int f = 0, rc = MPI_Request_get_status(req_f2c(*req), &f, st_in(status, &c));

	if (rc == MPI_SUCCESS) {
		*flag = f ? F_TRUE : 0;
		if (f)
			st_out(status, &c);
	}
	set_ierr(ierr, rc);
}
FORTRAN(request_get_status, REQUEST_GET_STATUS, Request_get_status, f_request_get_status)

static void f_wait(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Request c = req_f2c(*req);
	MPI_Status s;
	int rc = MPI_Wait(&c, st_in(status, &s));

	*req = req_c2f(c);
	st_out(status, &s);
	set_ierr(ierr, rc);
}
FORTRAN(wait, WAIT, Wait, f_wait)

static void f_test(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
	MPI_Request c = req_f2c(*req);
	MPI_Status s;
	int f = 0, rc = MPI_Test(&c, &f, st_in(status, &s));

	*req = req_c2f(c);
	*flag = f ? F_TRUE : 0;
	if (f)
		st_out(status, &s);
	set_ierr(ierr, rc);
}
FORTRAN(test, TEST, Test, f_test)

static void f_start(MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request c = req_f2c(*req);
	int rc = MPI_Start(&c);

	*req = req_c2f(c);
	set_ierr(ierr, rc);
}
FORTRAN(start, START, Start, f_start)

/* ---- arrays ---- */

static void f_startall(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *ierr)
{
	struct farr a;
	int rc;

	arr_in(&a, *count, reqs, NULL, false);
	rc = MPI_Startall(a.n, a.req);
	arr_out(&a, reqs, NULL);
	set_ierr(ierr, rc);
}
FORTRAN(startall, STARTALL, Startall, f_startall)

static void f_waitall(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr)
{
	struct farr a;
	int rc;

	arr_in(&a, *count, reqs, statuses, false);
	rc = MPI_Waitall(a.n, a.req, a.st);
	arr_out(&a, reqs, statuses);
	set_ierr(ierr, rc);
}
FORTRAN(waitall, WAITALL, Waitall, f_waitall)

static void f_testall(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *statuses,
		      MPI_Fint *ierr)
{
	struct farr a;
	int f = 0, rc;

	arr_in(&a, *count, reqs, statuses, false);
	rc = MPI_Testall(a.n, a.req, &f, a.st);
	arr_out(&a, reqs, statuses);
	*flag = f ? F_TRUE : 0;
	set_ierr(ierr, rc);
}
FORTRAN(testall, TESTALL, Testall, f_testall)

/* Fortran indices count from 1; MPI_UNDEFINED has the same value in both. */
static MPI_Fint f_index(int i)
{
	return i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
}

static void f_waitany(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *status,
		      MPI_Fint *ierr)
{
	struct farr a;
	MPI_Status s;
	int i = MPI_UNDEFINED, rc;

	arr_in(&a, *count, reqs, NULL, false);
	rc = MPI_Waitany(a.n, a.req, &i, st_in(status, &s));
	arr_out(&a, reqs, NULL);
	*index = f_index(i);
	st_out(status, &s);
	set_ierr(ierr, rc);
}
FORTRAN(waitany, WAITANY, Waitany, f_waitany)

static void f_testany(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *index, MPI_Fint *flag,
		      MPI_Fint *status, MPI_Fint *ierr)
{
	struct farr a;
	MPI_Status s;
	int i = MPI_UNDEFINED, f = 0, rc;

	arr_in(&a, *count, reqs, NULL, false);
	rc = MPI_Testany(a.n, a.req, &i, &f, st_in(status, &s));
	arr_out(&a, reqs, NULL);
	*index = f_index(i);
	*flag = f ? F_TRUE : 0;
	if (f)
		st_out(status, &s);
	set_ierr(ierr, rc);
}
FORTRAN(testany, TESTANY, Testany, f_testany)

/* Waitsome/Testsome: indices come back 1-based, statuses by index order. */
static void some(bool wait, MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount,
		 MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
	struct farr a;
	int k = 0, j, rc;

	arr_in(&a, *count, reqs, statuses, true);
	if (wait)
		rc = MPI_Waitsome(a.n, a.req, &k, a.idx, a.st);
	else
		rc = MPI_Testsome(a.n, a.req, &k, a.idx, a.st);
	if (k != MPI_UNDEFINED)
		for (j = 0; j < k; j++)
			indices[j] = a.idx[j] + 1;
	arr_out(&a, reqs, statuses);
	*outcount = k;
	set_ierr(ierr, rc);
}

static void f_waitsome(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
		       MPI_Fint *statuses, MPI_Fint *ierr)
{
	some(true, count, reqs, outcount, indices, statuses, ierr);
}
FORTRAN(waitsome, WAITSOME, Waitsome, f_waitsome)

static void f_testsome(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *outcount, MPI_Fint *indices,
		       MPI_Fint *statuses, MPI_Fint *ierr)
{
	some(false, count, reqs, outcount, indices, statuses, ierr);
}
FORTRAN(testsome, TESTSOME, Testsome, f_testsome)

/* ---- calls Open MPI's binding does, followed by the shim's part ---- */

typedef void (*f_fn)(void);

static f_fn real_fn(const char *name, f_fn *cache)
{
	f_fn f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (f)
		return f;
	*(void **)&f = dlsym(RTLD_NEXT, name);
	if (!f) {
		kp_logf("Open MPI's Fortran binding %s not found", name);
		abort();
	}
	__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}

/* REAL(lc, (types)) : Open MPI's ompi_lc_f with that prototype. */
#define REAL(lc, proto) ({ static f_fn c_; (void (*)proto)real_fn("ompi_" #lc "_f", &c_); })

static void f_init(MPI_Fint *ierr)
{
	MPI_Fint e = MPI_SUCCESS;

	REAL(init, (MPI_Fint *))(&e);
	if (e == MPI_SUCCESS)
		kp_setup(MPI_THREAD_SINGLE);
	set_ierr(ierr, e);
}
FORTRAN(init, INIT, Init, f_init)

static void f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
	MPI_Fint e = MPI_SUCCESS;

	REAL(init_thread, (MPI_Fint *, MPI_Fint *, MPI_Fint *))(required, provided, &e);
	if (e == MPI_SUCCESS)
		kp_setup(*provided);
	set_ierr(ierr, e);
}
FORTRAN(init_thread, INIT_THREAD, Init_thread, f_init_thread)

static void f_finalize(MPI_Fint *ierr)
{
	kp_shutdown();
	REAL(finalize, (MPI_Fint *))(ierr);
}
FORTRAN(finalize, FINALIZE, Finalize, f_finalize)

static void new_comm(const MPI_Fint *newcomm, const MPI_Fint *e)
{
	KP_GUARD();
	MPI_Comm c;

	if (*e != MPI_SUCCESS || !kp.active)
		return;
	c = PMPI_Comm_f2c(*newcomm);
	kp_comm_new(&c);
}

/* A constructor whose last two arguments are newcomm and ierr; P the rest. */
#define F_CTOR(lc, UC, Mc, P, A)							\
static void f_##lc(P, MPI_Fint *newcomm, MPI_Fint *ierr)				\
{											\
	MPI_Fint e = MPI_SUCCESS;							\
											\
	REAL(lc, (P, MPI_Fint *, MPI_Fint *))(A, newcomm, &e);				\
	new_comm(newcomm, &e);								\
	set_ierr(ierr, e);								\
}											\
FORTRAN(lc, UC, Mc, f_##lc)

#define V void *
#define P2 V a, V b
#define P3 P2, V c
#define P4 P3, V d
#define P5 P4, V e_
#define P7 P5, V f, V g
#define P8 P7, V h
#define P9 P8, V i
#define A2 a, b
#define A3 A2, c
#define A4 A3, d
#define A5 A4, e_
#define A7 A5, f, g
#define A8 A7, h
#define A9 A8, i

F_CTOR(comm_dup, COMM_DUP, Comm_dup, V a, a)
F_CTOR(comm_dup_with_info, COMM_DUP_WITH_INFO, Comm_dup_with_info, P2, A2)
F_CTOR(comm_split, COMM_SPLIT, Comm_split, P3, A3)
F_CTOR(comm_split_type, COMM_SPLIT_TYPE, Comm_split_type, P4, A4)
F_CTOR(comm_create, COMM_CREATE, Comm_create, P2, A2)
F_CTOR(comm_create_group, COMM_CREATE_GROUP, Comm_create_group, P3, A3)
F_CTOR(cart_create, CART_CREATE, Cart_create, P5, A5)
F_CTOR(cart_sub, CART_SUB, Cart_sub, P2, A2)
F_CTOR(graph_create, GRAPH_CREATE, Graph_create, P5, A5)
F_CTOR(dist_graph_create, DIST_GRAPH_CREATE, Dist_graph_create, P8, A8)
F_CTOR(dist_graph_create_adjacent, DIST_GRAPH_CREATE_ADJACENT, Dist_graph_create_adjacent,
       P9, A9)
F_CTOR(intercomm_merge, INTERCOMM_MERGE, Intercomm_merge, P2, A2)

/* As Open MPI's binding: the handle is valid at once, usable after the wait. */
static void f_comm_idup(MPI_Fint *comm, MPI_Fint *newcomm, MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Comm c = MPI_COMM_NULL;
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = MPI_Comm_idup(PMPI_Comm_f2c(*comm), &c, &r);

	if (rc == MPI_SUCCESS) {
		*newcomm = PMPI_Comm_c2f(c);
		*req = req_c2f(r);
	}
	set_ierr(ierr, rc);
}
FORTRAN(comm_idup, COMM_IDUP, Comm_idup, f_comm_idup)

#define F_COMM_GONE(lc, UC, Mc)								\
static void f_##lc(MPI_Fint *comm, MPI_Fint *ierr)					\
{											\
	MPI_Comm old = PMPI_Comm_f2c(*comm);						\
	MPI_Fint e = MPI_SUCCESS;							\
											\
	REAL(lc, (MPI_Fint *, MPI_Fint *))(comm, &e);					\
	if (e == MPI_SUCCESS) {								\
		KP_GUARD();								\
		kp_comm_forget(old);							\
	}										\
	set_ierr(ierr, e);								\
}											\
FORTRAN(lc, UC, Mc, f_##lc)

F_COMM_GONE(comm_free, COMM_FREE, Comm_free)
F_COMM_GONE(comm_disconnect, COMM_DISCONNECT, Comm_disconnect)

static void f_type_free(MPI_Fint *type, MPI_Fint *ierr)
{
	MPI_Datatype old = PMPI_Type_f2c(*type);
	MPI_Fint e = MPI_SUCCESS;

	REAL(type_free, (MPI_Fint *, MPI_Fint *))(type, &e);
	if (e == MPI_SUCCESS) {
		KP_GUARD();
		kp_layout_evict(old);
	}
	set_ierr(ierr, e);
}
FORTRAN(type_free, TYPE_FREE, Type_free, f_type_free)
