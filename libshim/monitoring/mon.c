// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The MPI_M_* API of include/MPI_Monitoring.h (seed 002, section 4):
 * argument and state checks, the collective parts (gathers, files), on
 * top of the session counting of mon_sess.c.
 *
 * Decisions where the seed is silent:
 * - An msid is an index in a table of MPI_M_MAX_SESSIONS; freed slots are
 *   reused. MPI_M_ALL_MSID acts on every session in a state where the
 *   call makes sense (suspend: the active ones; continue: the suspended
 *   ones); reset and free with ALL_MSID need every session suspended
 *   (MPI_M_SESSION_STILL_ACTIVE otherwise).
 * - suspend of a suspended session, continue of an active one:
 *   MPI_M_MULTIPLE_CALL (the seed's wording); reset, free and the data
 *   accessors on an active session: MPI_M_SESSION_NOT_SUSPENDED;
 *   MPI_M_finalize with a session still active: MPI_M_SESSION_STILL_ACTIVE
 *   (nothing is freed then); otherwise it frees every session.
 * - start/suspend/continue are collective only in the sense of the seed
 *   (every process calls them); they communicate nothing, so a session
 *   costs no synchronisation. Data accessors are collective.
 * - get_info's provided is the thread level of MPI (the library is as
 *   thread-safe as the shim, i.e. up to MPI_THREAD_SERIALIZED).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "mon.h"
#include "MPI_Monitoring.h"

static bool inited;
static struct kp_msess sess[MPI_M_MAX_SESSIONS];
static struct kp_mcount cur;
static int nactive;

static void counting_update(void)
{
	kp_mon_counting = nactive > 0 && kp_mon_src_needs_pass();
	kp_mon_active = nactive > 0;
}

int MPI_M_init(void)
{
	if (inited)
		return MPI_M_MULTIPLE_CALL;
	PMPI_Comm_size(MPI_COMM_WORLD, &cur.world);
	cur.v = calloc((size_t)KP_MC_NCLASS * KP_MK_NKIND * cur.world, sizeof(uint64_t));
	if (!cur.v || kp_mon_src_init()) {
		free(cur.v);
		cur.v = NULL;
		return MPI_M_INTERNAL_FAIL;
	}
	memset(sess, 0, sizeof(sess));
	nactive = 0;
	inited = true;
	kp_log(1, "monitoring sessions on: %s", kp_mon_src_describe());
	return MPI_SUCCESS;
}

int MPI_M_finalize(void)
{
	int i;

	if (!inited)
		return MPI_M_MISSING_INIT;
	if (nactive)
		return MPI_M_SESSION_STILL_ACTIVE;
	for (i = 0; i < MPI_M_MAX_SESSIONS; i++) {
		if (sess[i].state == KP_MS_FREE)
			continue;
		PMPI_Comm_free((MPI_Comm *)sess[i].priv);
		free(sess[i].priv);
		kp_msess_free(&sess[i]);
	}
	kp_mon_src_fini();
	free(cur.v);
	cur.v = NULL;
	inited = false;
	return MPI_SUCCESS;
}

static int read_cur(void)
{
	return kp_mon_src_read(&cur) ? MPI_M_MPIT_FAIL : MPI_SUCCESS;
}

static MPI_Comm sess_comm(const struct kp_msess *s)
{
	return *(MPI_Comm *)s->priv;
}

/* The session named msid, in use; NULL for a bad id. */
static struct kp_msess *lookup(MPI_M_msid msid)
{
	if (msid < 0 || msid >= MPI_M_MAX_SESSIONS || sess[msid].state == KP_MS_FREE)
		return NULL;
	return &sess[msid];
}

int MPI_M_start(MPI_Comm comm, MPI_M_msid *msid)
{
	MPI_Group g, wg;
	int i, n, slot = -1, *ranks, *c2w, inter = 0, rc;
	MPI_Comm *dup;

	if (!inited)
		return MPI_M_MISSING_INIT;
	if (!msid || comm == MPI_COMM_NULL)
		return MPI_M_INVALID_MSID;
	if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return MPI_M_MPIT_FAIL;
	for (i = 0; i < MPI_M_MAX_SESSIONS && slot < 0; i++)
		if (sess[i].state == KP_MS_FREE)
			slot = i;
	if (slot < 0)
		return MPI_M_SESSION_OVERFLOW;
	PMPI_Comm_size(comm, &n);
	ranks = malloc(sizeof(int) * n);
	c2w = malloc(sizeof(int) * n);
	dup = malloc(sizeof(*dup));
	if (!ranks || !c2w || !dup) {
		free(ranks);
		free(c2w);
		free(dup);
		return MPI_M_INTERNAL_FAIL;
	}
	for (i = 0; i < n; i++)
		ranks[i] = i;
	PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, n, ranks, wg, c2w);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	free(ranks);
	/* Our own communicator for the gathers, made before counting starts. */
	if (PMPI_Comm_dup(comm, dup) != MPI_SUCCESS) {
		free(c2w);
		free(dup);
		return MPI_M_MPIT_FAIL;
	}
	rc = read_cur();
	if (rc == MPI_SUCCESS && kp_msess_start(&sess[slot], n, c2w, &cur))
		rc = MPI_M_INTERNAL_FAIL;
	if (rc != MPI_SUCCESS) {
		PMPI_Comm_free(dup);
		free(dup);
		free(c2w);
		return rc;
	}
	sess[slot].priv = dup;
	nactive++;
	counting_update();
	*msid = slot;
	return MPI_SUCCESS;
}

/*
 * Suspend (@from ACTIVE) or continue (@from SUSPENDED) session @msid, or
 * every session in state @from with MPI_M_ALL_MSID.
 */
static int switch_sessions(MPI_M_msid msid, enum kp_mstate from)
{
	struct kp_msess *s;
	int i, rc;

	if (!inited)
		return MPI_M_MISSING_INIT;
	if (msid != MPI_M_ALL_MSID) {
		s = lookup(msid);
		if (!s)
			return MPI_M_INVALID_MSID;
		if (s->state != from)
			return MPI_M_MULTIPLE_CALL;
	}
	rc = read_cur();
	if (rc != MPI_SUCCESS)
		return rc;
	for (i = 0; i < MPI_M_MAX_SESSIONS; i++) {
		if ((msid != MPI_M_ALL_MSID && i != msid) || sess[i].state != from)
			continue;
		if (from == KP_MS_ACTIVE) {
			kp_msess_suspend(&sess[i], &cur);
			nactive--;
		} else {
			kp_msess_continue(&sess[i], &cur);
			nactive++;
		}
	}
	counting_update();
	return MPI_SUCCESS;
}

int MPI_M_suspend(MPI_M_msid msid)
{
	return switch_sessions(msid, KP_MS_ACTIVE);
}

int MPI_M_continue(MPI_M_msid msid)
{
	return switch_sessions(msid, KP_MS_SUSPENDED);
}

/* Checks for reset and free: one suspended session, or all suspended. */
static int check_suspended(MPI_M_msid msid)
{
	struct kp_msess *s;

	if (!inited)
		return MPI_M_MISSING_INIT;
	if (msid == MPI_M_ALL_MSID)
		return nactive ? MPI_M_SESSION_STILL_ACTIVE : MPI_SUCCESS;
	s = lookup(msid);
	if (!s)
		return MPI_M_INVALID_MSID;
	return s->state == KP_MS_SUSPENDED ? MPI_SUCCESS : MPI_M_SESSION_NOT_SUSPENDED;
}

int MPI_M_reset(MPI_M_msid msid)
{
	int i, rc = check_suspended(msid);

	if (rc != MPI_SUCCESS)
		return rc;
	for (i = 0; i < MPI_M_MAX_SESSIONS; i++)
		if ((msid == MPI_M_ALL_MSID || i == msid) && sess[i].state == KP_MS_SUSPENDED)
			kp_msess_reset(&sess[i]);
	return MPI_SUCCESS;
}

int MPI_M_free(MPI_M_msid msid)
{
	int i, rc = check_suspended(msid);

	if (rc != MPI_SUCCESS)
		return rc;
	for (i = 0; i < MPI_M_MAX_SESSIONS; i++) {
		if ((msid != MPI_M_ALL_MSID && i != msid) || sess[i].state != KP_MS_SUSPENDED)
			continue;
		PMPI_Comm_free((MPI_Comm *)sess[i].priv);
		free(sess[i].priv);
		kp_msess_free(&sess[i]);
	}
	return MPI_SUCCESS;
}

int MPI_M_get_info(MPI_M_msid msid, int *provided, int *array_size)
{
	struct kp_msess *s;

	if (!inited)
		return MPI_M_MISSING_INIT;
	s = lookup(msid);
	if (!s)
		return MPI_M_INVALID_MSID;
	if (provided && PMPI_Query_thread(provided) != MPI_SUCCESS)
		return MPI_M_MPIT_FAIL;
	if (array_size)
		*array_size = s->size;
	return MPI_SUCCESS;
}

/* The session for a data accessor: exists and is suspended. */
static int data_session(MPI_M_msid msid, struct kp_msess **out)
{
	int rc;

	if (msid == MPI_M_ALL_MSID)
		return inited ? MPI_M_INVALID_MSID : MPI_M_MISSING_INIT;
	rc = check_suspended(msid);
	if (rc == MPI_SUCCESS)
		*out = &sess[msid];
	return rc;
}

int MPI_M_get_data(MPI_M_msid msid, unsigned long *msg_counts, unsigned long *msg_sizes,
		   int flags)
{
	struct kp_msess *s;
	int rc = data_session(msid, &s);

	if (rc != MPI_SUCCESS)
		return rc;
	kp_msess_data(s, flags, msg_counts, msg_sizes);
	return MPI_SUCCESS;
}

/* Gather both matrices at root (root < 0: at every process). */
static int gather(struct kp_msess *s, int root, unsigned long *mc, unsigned long *ms,
		  int flags)
{
	MPI_Comm comm = sess_comm(s);
	unsigned long *c = malloc(sizeof(*c) * s->size), *b = malloc(sizeof(*b) * s->size);
	int rank, rc = MPI_SUCCESS, want[2], any[2];

	if (!c || !b) {
		free(c);
		free(b);
		return MPI_M_INTERNAL_FAIL;
	}
	kp_msess_data(s, flags, c, b);
	PMPI_Comm_rank(comm, &rank);
	/* Every process takes part in both gathers if any wants the matrix. */
	want[0] = mc != MPI_M_DATA_IGNORE;
	want[1] = ms != MPI_M_DATA_IGNORE;
	if (root >= 0 && rank != root)
		want[0] = want[1] = 0;
	if (PMPI_Allreduce(want, any, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
		rc = MPI_M_MPIT_FAIL;
	if (rc == MPI_SUCCESS && any[0]) {
		if (root < 0)
			rc = PMPI_Allgather(c, s->size, MPI_UNSIGNED_LONG, mc, s->size,
					    MPI_UNSIGNED_LONG, comm);
		else
			rc = PMPI_Gather(c, s->size, MPI_UNSIGNED_LONG, mc, s->size,
					 MPI_UNSIGNED_LONG, root, comm);
		if (rc != MPI_SUCCESS)
			rc = MPI_M_MPIT_FAIL;
	}
	if (rc == MPI_SUCCESS && any[1]) {
		if (root < 0)
			rc = PMPI_Allgather(b, s->size, MPI_UNSIGNED_LONG, ms, s->size,
					    MPI_UNSIGNED_LONG, comm);
		else
			rc = PMPI_Gather(b, s->size, MPI_UNSIGNED_LONG, ms, s->size,
					 MPI_UNSIGNED_LONG, root, comm);
		if (rc != MPI_SUCCESS)
			rc = MPI_M_MPIT_FAIL;
	}
	free(c);
	free(b);
	return rc;
}

int MPI_M_allgather_data(MPI_M_msid msid, unsigned long *matrix_counts,
			 unsigned long *matrix_sizes, int flags)
{
	struct kp_msess *s;
	int rc = data_session(msid, &s);

	if (rc != MPI_SUCCESS)
		return rc;
	return gather(s, -1, matrix_counts, matrix_sizes, flags);
}

int MPI_M_rootgather_data(MPI_M_msid msid, int root, unsigned long *matrix_counts,
			  unsigned long *matrix_sizes, int flags)
{
	struct kp_msess *s;
	int rc = data_session(msid, &s);

	if (rc != MPI_SUCCESS)
		return rc;
	if (root < 0 || root >= s->size)
		return MPI_M_INVALID_ROOT;
	return gather(s, root, matrix_counts, matrix_sizes, flags);
}

int MPI_M_flush(MPI_M_msid msid, char *filename, int flags)
{
	struct kp_msess *s;
	unsigned long *c, *b;
	char *path;
	int rc = data_session(msid, &s), rank, ok, all;

	if (rc != MPI_SUCCESS)
		return rc;
	PMPI_Comm_rank(sess_comm(s), &rank);
	c = malloc(sizeof(*c) * s->size);
	b = malloc(sizeof(*b) * s->size);
	path = NULL;
	ok = c && b && filename && asprintf(&path, "%s.%d.prof", filename, rank) >= 0;
	if (ok) {
		kp_msess_data(s, flags, c, b);
		ok = !kp_mfile_write_vector(path, rank, s->size, c, b);
	}
	free(path);
	free(c);
	free(b);
	/* Collective: every process learns whether all files were written. */
	if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, sess_comm(s)) != MPI_SUCCESS)
		return MPI_M_MPIT_FAIL;
	return all ? MPI_SUCCESS : MPI_M_INTERNAL_FAIL;
}

int MPI_M_rootflush(MPI_M_msid msid, int root, char *filename, int flags)
{
	struct kp_msess *s;
	unsigned long *mc = NULL, *ms = NULL;
	char *pc = NULL, *ps = NULL;
	int rc = data_session(msid, &s), rank, wrank, ok = 1;

	if (rc != MPI_SUCCESS)
		return rc;
	if (root < 0 || root >= s->size)
		return MPI_M_INVALID_ROOT;
	PMPI_Comm_rank(sess_comm(s), &rank);
	if (rank == root) {
		size_t n = (size_t)s->size * s->size;

		mc = malloc(sizeof(*mc) * n);
		ms = malloc(sizeof(*ms) * n);
		ok = mc && ms;
	}
	/* A root without memory still takes part, with dummy buffers. */
	rc = gather(s, root, ok ? mc : NULL, ok ? ms : NULL, flags);
	if (rc == MPI_SUCCESS && rank == root && ok) {
		/* The seed names the files by the root's rank in MPI_COMM_WORLD. */
		PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
		ok = filename && asprintf(&pc, "%s_counts.%d.prof", filename, wrank) >= 0 &&
		     asprintf(&ps, "%s_sizes.%d.prof", filename, wrank) >= 0 &&
		     !kp_mfile_write_matrix(pc, s->size, mc) &&
		     !kp_mfile_write_matrix(ps, s->size, ms);
	}
	free(pc);
	free(ps);
	free(mc);
	free(ms);
	if (rc != MPI_SUCCESS)
		return rc;
	return ok ? MPI_SUCCESS : MPI_M_INTERNAL_FAIL;
}
