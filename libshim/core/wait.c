// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Wait/Test family, Request_free, Request_get_status.
 *
 * Arrays without kprog requests go to PMPI unchanged. Arrays that mix
 * kprog and Open MPI requests are polled: drain the ring, PMPI_Test{all,
 * any,some} the Open MPI subset (copied out and back), until the call's
 * semantics are met. With only kprog requests still to wait for, the
 * caller sleeps in KPROG_IOC_WAIT.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "waitprof_hooks.h"
#include "collprof.h"

static bool done(const struct kp_req *r)
{
	return r->state == RS_COMPLETE;
}

static bool active(const struct kp_req *r)
{
	return r->state == RS_ACTIVE || r->state == RS_DEFERRED || r->state == RS_COMPLETE;
}

/*
 * May a kernel worker need this CPU to complete one of reqs? Only a
 * receive posted in the kernel or a send still active there (a rendezvous
 * the kernel moves). The spinner then yields now and then; one waiting
 * for fast-path messages only must not: a sched_yield() is a context
 * switch, which under a window of small messages costs more than the
 * messages themselves (it took kprog's message rate to a quarter of
 * plain Open MPI's).
 */
static bool kernel_work(int n, const MPI_Request reqs[])
{
	int j;

	for (j = 0; j < n; j++)
		if (kp_is_req(reqs[j]) && kp_wait_yields(kp_req(reqs[j])))
			return true;
	return false;
}

/* Are all of reqs' kprog requests receives posted in user space with a source (fast.c)? */
static bool only_user_recvs(int n, const MPI_Request reqs[])
{
	int j;

	for (j = 0; j < n; j++)
		if (kp_is_req(reqs[j]) && !kp_fast_want_recv(kp_req(reqs[j])))
			return false;
	return true;
}

/* ---- single requests ---- */

/* MPI_Wait (waitprof.c times it when the profiler is on) */
int kp_mpi_wait(MPI_Request *req, MPI_Status *status)
{
	KP_GUARD();
	struct kp_req *r;
	MPI_Comm ec;
	int rc;

	if (!req || !kp_is_req(*req)) {
		kp_progress();
		return KP_PMPI(PMPI_Wait(req, status));
	}
	r = kp_req(*req);
	if (r->state == RS_INACTIVE) {
		kp_status_empty(status);
		return MPI_SUCCESS;
	}
	bool prof = KP_CP_ON && r->kind == KR_COLL;	/* r may be gone at the end */

	KP_CP_IF(prof, KP_CP_W_ENTRY);
	kp_wait_one(r);
	rc = kp_req_finish(req, status, false, &ec);
	rc = kp_err(ec, rc);
	if (prof) {
		KP_CP(KP_CP_W_END);
		KP_CP_WAIT_DONE();
	}
	return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
	KP_GUARD();
	struct kp_req *r;
	MPI_Comm ec;
	int rc;

	kp_progress();
	if (!req || !kp_is_req(*req))
		return PMPI_Test(req, flag, status);
	r = kp_req(*req);
	if (r->state == RS_INACTIVE) {
		*flag = 1;
		kp_status_empty(status);
		return MPI_SUCCESS;
	}
	if (!done(r)) {
		*flag = 0;
		/* a polling caller must not starve a kernel worker moving its data */
		if (kp_req_kernel_work(r))
			sched_yield();
		return MPI_SUCCESS;
	}
	*flag = 1;
	rc = kp_req_finish(req, status, false, &ec);
	return kp_err(ec, rc);
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status)
{
	KP_GUARD();
	struct kp_req *r;

	kp_progress();
	if (!kp_is_req(req))
		return PMPI_Request_get_status(req, flag, status);
	r = kp_req(req);
	if (r->state == RS_INACTIVE) {
		*flag = 1;
		kp_status_empty(status);
	} else if (done(r)) {
		*flag = 1;
		kp_status_copy(status, r, false);
	} else {
		*flag = 0;
	}
	return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *req)
{
	KP_GUARD();
	struct kp_req *r;

	if (!req || !kp_is_req(*req))
		return PMPI_Request_free(req);
	kp_progress();
	r = kp_req(*req);
	if (r->state == RS_ACTIVE || r->state == RS_DEFERRED)
		r->user_freed = true;	/* released by its completion */
	else
		kp_req_release(r);
	*req = MPI_REQUEST_NULL;
	return MPI_SUCCESS;
}

/* ---- arrays ---- */

struct mix {
	int n, nours, nsub;
	int *map;		/* sub index -> array index */
	MPI_Request *sub;
	MPI_Status *subst;
	int *subidx;
	void *mem;
};

/* Split @reqs; false if none is ours (caller goes straight to PMPI). */
static bool mix_init(struct mix *m, int n, MPI_Request *reqs)
{
	int i;

	int nsub = 0;

	memset(m, 0, sizeof(*m));
	m->n = n;
	for (i = 0; i < n; i++)
		if (kp_is_req(reqs[i]))
			m->nours++;
		else if (reqs[i] != MPI_REQUEST_NULL)
			nsub++;
	if (!m->nours)
		return false;
	if (!nsub)
		return true;	/* only ours (or NULL): no Open MPI subset to keep */
	m->mem = malloc((size_t)n * (sizeof(int) * 2 + sizeof(MPI_Request) + sizeof(MPI_Status)) + 1);
	if (!m->mem)
		abort();
	m->subst = m->mem;
	m->sub = (MPI_Request *)(m->subst + n);
	m->map = (int *)(m->sub + n);
	m->subidx = m->map + n;
	for (i = 0; i < n; i++)
		if (!kp_is_req(reqs[i]) && reqs[i] != MPI_REQUEST_NULL) {
			m->map[m->nsub] = i;
			m->sub[m->nsub++] = reqs[i];
		}
	return true;
}

static void mix_fini(struct mix *m)
{
	free(m->mem);
}

/* Copy the Open MPI handles back (completed ones became NULL/inactive). */
static void mix_copy_back(struct mix *m, MPI_Request *reqs)
{
	int j;

	for (j = 0; j < m->nsub; j++)
		reqs[m->map[j]] = m->sub[j];
}

static bool ours_active(int n, MPI_Request *reqs)
{
	int i;

	for (i = 0; i < n; i++)
		if (kp_is_req(reqs[i]) && active(kp_req(reqs[i])))
			return true;
	return false;
}

/*
 * Are all of ours complete? *from: the requests before it are known to
 * be (a request stays complete until it is finished), so a wait that
 * polls again does not look at them again: one pass per call, not one per
 * poll, over a window of many requests.
 */
static bool ours_all_done(int n, MPI_Request *reqs, int *from)
{
	int i;

	for (i = *from; i < n; i++)
		if (kp_is_req(reqs[i]) && !done(kp_req(reqs[i])) &&
		    kp_req(reqs[i])->state != RS_INACTIVE) {
			*from = i;
			return false;
		}
	*from = n;
	return true;
}

/*
 * All complete: finish ours, take the Open MPI statuses, and work out
 * MPI_ERR_IN_STATUS. @subrc is what PMPI_Testall/Waitall returned.
 */
static int finish_all(struct mix *m, MPI_Request *reqs, MPI_Status *st, int subrc)
{
	MPI_Status tmp;
	MPI_Comm ec = MPI_COMM_NULL;
	int i, j, err = MPI_SUCCESS, e;
	int small[64];
	int *errs = m->n <= 64 ? small : calloc((size_t)m->n + 1, sizeof(int));

	if (!errs)
		abort();
	if (errs == small)
		memset(small, 0, sizeof(small));
	for (i = 0; i < m->n; i++) {
		MPI_Status *s = st == MPI_STATUSES_IGNORE ? &tmp : &st[i];

		if (kp_is_req(reqs[i])) {
			struct kp_req *r = kp_req(reqs[i]);

			if (r->state == RS_INACTIVE) {
				kp_status_empty(s);
				continue;
			}
			MPI_Comm c = kp_req_comm(r);

			e = kp_req_finish(&reqs[i], s, true, &c);
			errs[i] = e;
			if (e != MPI_SUCCESS && ec == MPI_COMM_NULL) {
				ec = c;
				err = MPI_ERR_IN_STATUS;
			}
		} else if (reqs[i] == MPI_REQUEST_NULL) {
			kp_status_empty(s);
		}
	}
	for (j = 0; j < m->nsub; j++) {
		i = m->map[j];
		if (st != MPI_STATUSES_IGNORE)
			st[i] = m->subst[j];
		errs[i] = subrc == MPI_ERR_IN_STATUS ? m->subst[j].MPI_ERROR : subrc;
	}
	mix_copy_back(m, reqs);
	if (subrc != MPI_SUCCESS)
		err = MPI_ERR_IN_STATUS;	/* Open MPI already called the handler */
	if (err != MPI_SUCCESS && st != MPI_STATUSES_IGNORE)
		for (i = 0; i < m->n; i++)
			st[i].MPI_ERROR = errs[i];
	if (errs != small)
		free(errs);
	if (err != MPI_SUCCESS && subrc == MPI_SUCCESS)
		kp_err(ec, err);
	return err;
}

/* MPI_Waitall (waitprof.c times it when the profiler is on) */
int kp_mpi_waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
	KP_GUARD();
	struct mix m;
	struct kp_wait w = { 0 };
	int subrc = MPI_SUCCESS, flag, rc, from = 0;
	bool subdone;

	kp_progress();
	if (!mix_init(&m, n, reqs))
		return KP_PMPI(PMPI_Waitall(n, reqs, statuses));
	subdone = m.nsub == 0;
	for (;;) {
		if (ours_all_done(n, reqs, &from)) {
			if (!subdone)
				subrc = KP_PMPI(PMPI_Waitall(m.nsub, m.sub, m.subst));
			break;
		}
		if (!subdone) {
			subrc = PMPI_Testall(m.nsub, m.sub, &flag, m.subst);
			if (flag || subrc != MPI_SUCCESS)
				subdone = true;
		}
		/* asked only when the wait has to wait: most windows do not */
		if (!w.t0) {
			w.kernel_work = kernel_work(n, reqs);
			kp_fast_want(subdone && only_user_recvs(n, reqs));
		}
		kp_wait_step(&w, !subdone);
		kp_progress();
	}
	kp_fast_want(false);
	kp_wait_end(&w);
	rc = finish_all(&m, reqs, statuses, subrc);
	mix_fini(&m);
	return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
	KP_GUARD();
	struct mix m;
	int subrc = MPI_SUCCESS, rc;

	kp_progress();
	if (!mix_init(&m, n, reqs))
		return PMPI_Testall(n, reqs, flag, statuses);
	*flag = 0;
	/* ours first: PMPI_Testall would complete Open MPI's for good */
	if (!ours_all_done(n, reqs, &(int){ 0 })) {
		mix_fini(&m);
		sched_yield();
		return MPI_SUCCESS;
	}
	if (m.nsub) {
		subrc = PMPI_Testall(m.nsub, m.sub, flag, m.subst);
		if (!*flag && subrc == MPI_SUCCESS) {
			mix_fini(&m);
			return MPI_SUCCESS;
		}
	}
	*flag = 1;
	rc = finish_all(&m, reqs, statuses, subrc);
	mix_fini(&m);
	return rc;
}

/* Complete one of ours at index i for Waitany/Testany. */
static int finish_any(MPI_Request *reqs, int i, int *index, MPI_Status *st)
{
	MPI_Comm ec;
	int rc = kp_req_finish(&reqs[i], st, false, &ec);

	*index = i;
	return kp_err(ec, rc);
}

/*
 * One pass of Waitany/Testany. Returns 1 when the call is satisfied (rc
 * set), 0 to keep going; sub_left says Open MPI requests are pending.
 */
static int any_pass(struct mix *m, MPI_Request *reqs, int *index, MPI_Status *st, int *rc,
		    bool *sub_left)
{
	int i, j, flag;
	MPI_Status s;

	kp_progress();
	for (i = 0; i < m->n; i++)
		if (kp_is_req(reqs[i]) && done(kp_req(reqs[i]))) {
			*rc = finish_any(reqs, i, index, st);
			return 1;
		}
	*sub_left = false;
	if (m->nsub) {
		*rc = PMPI_Testany(m->nsub, m->sub, &j, &flag, st == MPI_STATUS_IGNORE ? &s : st);
		mix_copy_back(m, reqs);
		if (flag && j != MPI_UNDEFINED) {
			*index = m->map[j];
			return 1;
		}
		if (*rc != MPI_SUCCESS)
			return 1;
		*sub_left = !flag;
	}
	if (!ours_active(m->n, reqs) && !*sub_left) {
		*index = MPI_UNDEFINED;
		kp_status_empty(st);
		*rc = MPI_SUCCESS;
		return 1;
	}
	return 0;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
	KP_GUARD();
	struct mix m;
	struct kp_wait w = { .kernel_work = kernel_work(n, reqs) };
	int rc = MPI_SUCCESS, j;
	bool sub_left;

	kp_progress();
	if (!mix_init(&m, n, reqs))
		return KP_PMPI(PMPI_Waitany(n, reqs, index, status));
	for (;;) {
		if (any_pass(&m, reqs, index, status, &rc, &sub_left))
			break;
		if (!ours_active(n, reqs)) {
			/* only Open MPI's left: block there */
			rc = KP_PMPI(PMPI_Waitany(m.nsub, m.sub, &j, status));
			mix_copy_back(&m, reqs);
			*index = j == MPI_UNDEFINED ? MPI_UNDEFINED : m.map[j];
			break;
		}
		kp_wait_step(&w, sub_left);
	}
	kp_wait_end(&w);
	mix_fini(&m);
	return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
	KP_GUARD();
	struct mix m;
	int rc = MPI_SUCCESS;
	bool sub_left;

	kp_progress();
	if (!mix_init(&m, n, reqs))
		return PMPI_Testany(n, reqs, index, flag, status);
	*flag = any_pass(&m, reqs, index, status, &rc, &sub_left);
	if (!*flag) {
		*index = MPI_UNDEFINED;
		sched_yield();
	}
	mix_fini(&m);
	return rc;
}

/*
 * One pass of Waitsome/Testsome: collect every completed request.
 * Returns the number found, or MPI_UNDEFINED if nothing is active.
 */
static int some_pass(struct mix *m, MPI_Request *reqs, int *indices, MPI_Status *st,
		     int *rc, bool *sub_left)
{
	int i, j, k = 0, o = 0, subrc = MPI_SUCCESS, e;
	bool any_active = false, failed = false;
	MPI_Comm ec = MPI_COMM_NULL;
	int *errs = calloc((size_t)m->n + 1, sizeof(int));

	if (!errs)
		abort();
	kp_progress();
	any_active = ours_active(m->n, reqs);
	for (i = 0; i < m->n; i++) {
		if (!kp_is_req(reqs[i]) || !done(kp_req(reqs[i])))
			continue;
		MPI_Comm c;

		e = kp_req_finish(&reqs[i], st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &st[k],
				  true, &c);
		if (e != MPI_SUCCESS && !failed) {
			failed = true;
			ec = c;
		}
		errs[k] = e;
		indices[k++] = i;
	}
	*sub_left = false;
	if (m->nsub) {
		subrc = PMPI_Testsome(m->nsub, m->sub, &o, m->subidx, m->subst);
		mix_copy_back(m, reqs);
		if (o == MPI_UNDEFINED) {
			o = 0;
		} else {
			any_active = true;
			*sub_left = o < m->nsub;
			for (j = 0; j < o; j++) {
				int sj = m->subidx[j];

				/* Testsome's statuses follow its indices, not the array */
				if (st != MPI_STATUSES_IGNORE)
					st[k] = m->subst[j];
				errs[k] = subrc == MPI_ERR_IN_STATUS ? m->subst[j].MPI_ERROR : subrc;
				indices[k++] = m->map[sj];
			}
		}
	}
	*rc = MPI_SUCCESS;
	if (failed || subrc != MPI_SUCCESS) {
		*rc = MPI_ERR_IN_STATUS;
		if (st != MPI_STATUSES_IGNORE)
			for (i = 0; i < k; i++)
				st[i].MPI_ERROR = errs[i];
		if (subrc == MPI_SUCCESS)
			kp_err(ec, MPI_ERR_IN_STATUS);
	}
	free(errs);
	if (!any_active && k == 0)
		return MPI_UNDEFINED;
	return k;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
	KP_GUARD();
	struct mix m;
	struct kp_wait w = { .kernel_work = kernel_work(n, reqs) };
	int rc = MPI_SUCCESS, k;
	bool sub_left;

	kp_progress();
	if (!mix_init(&m, n, reqs))
		return KP_PMPI(PMPI_Waitsome(n, reqs, outcount, indices, statuses));
	for (;;) {
		k = some_pass(&m, reqs, indices, statuses, &rc, &sub_left);
		if (k != 0)
			break;
		if (!ours_active(n, reqs)) {
			/* only Open MPI's left: block there */
			int j;

			rc = KP_PMPI(PMPI_Waitsome(m.nsub, m.sub, &k, m.subidx, statuses));
			mix_copy_back(&m, reqs);
			if (k != MPI_UNDEFINED)
				for (j = 0; j < k; j++)
					indices[j] = m.map[m.subidx[j]];
			break;
		}
		kp_wait_step(&w, sub_left);
	}
	kp_wait_end(&w);
	*outcount = k;
	mix_fini(&m);
	return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
	KP_GUARD();
	struct mix m;
	int rc = MPI_SUCCESS;
	bool sub_left;

	kp_progress();
	if (!mix_init(&m, n, reqs))
		return PMPI_Testsome(n, reqs, outcount, indices, statuses);
	*outcount = some_pass(&m, reqs, indices, statuses, &rc, &sub_left);
	if (*outcount == 0)
		sched_yield();
	mix_fini(&m);
	return rc;
}

/* ---- timed by the wait-state profiler when it is on (waitprof_hooks.h) ---- */

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	struct kp_wp_call w;
	MPI_Status st;
	uint64_t cbytes;
	int rc;

	if (!kp_wp_profiling())
		return kp_mpi_wait(req, status);
	if (status == MPI_STATUS_IGNORE) {
		memset(&st, 0, sizeof(st));	/* a send leaves it as it is */
		status = &st;
	}
	if (req && kp_coll_req(*req, &cbytes)) {
		/* a collective kprog runs: Wait at NxN, by the bytes it sends */
		kp_wp_enter(&w, __builtin_return_address(0), KP_WP_WAIT_NBC);
		rc = kp_mpi_wait(req, status);
		kp_wp_leave(&w, KP_WP_WAIT_NBC, cbytes);
		return rc;
	}
	kp_wp_enter(&w, __builtin_return_address(0), KP_WP_WAIT);
	rc = kp_mpi_wait(req, status);
	kp_wp_leave(&w, KP_WP_WAIT, kp_wp_status_bytes(status));
	return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
	struct kp_wp_call w;
	MPI_Status local[32], *st = statuses;
	uint64_t bytes = 0, nbc_bytes = 0, cbytes;
	int rc, i, fn;

	if (!kp_wp_profiling())
		return kp_mpi_waitall(n, reqs, statuses);
	if (statuses == MPI_STATUSES_IGNORE && n > 0)
		st = n <= 32 ? local : calloc((size_t)n, sizeof(*st));
	if (!st)	/* no memory for statuses: profile without sizes */
		st = MPI_STATUSES_IGNORE;
	else if (st != statuses)
		memset(st, 0, sizeof(*st) * (size_t)n);
	/* only kprog's collectives in the array: Wait at NxN, as MPI_Wait */
	for (i = 0; i < n && kp_coll_req(reqs[i], &cbytes); i++)
		nbc_bytes += cbytes;
	fn = n > 0 && i == n ? KP_WP_WAITALL_NBC : KP_WP_WAITALL;
	kp_wp_enter(&w, __builtin_return_address(0), fn);
	rc = kp_mpi_waitall(n, reqs, st);
	for (i = 0; st != MPI_STATUSES_IGNORE && i < n; i++)
		bytes += kp_wp_status_bytes(&st[i]);
	kp_wp_leave(&w, fn, fn == KP_WP_WAITALL_NBC ? nbc_bytes : bytes);
	if (st != statuses && st != local && st != MPI_STATUSES_IGNORE)
		free(st);
	return rc;
}
