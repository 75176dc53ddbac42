// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where the monitoring sessions' counts come from: cumulative counters of
 * what this process sent, by world rank of the destination.
 *
 * Point-to-point traffic on kprog communicators: the kernel counts every
 * send posted with KPROG_IOC_SEND (kprog_peer_count in the ring), the
 * fast path's channels count the records this process published
 * (kprog_chan_dir.msgs/bytes). Neither costs anything extra: the kernel
 * adds two numbers per send, the channel counters exist anyway.
 *
 * Traffic Open MPI carries (pass-through communicators, collectives,
 * one-sided): Open MPI's monitoring performance variables through MPI_T
 * when its monitoring components are enabled (pml_monitoring_enable > 0),
 * as the seed's library reads them. Without them, the shim counts the
 * point-to-point sends it passes through itself (at the API: what
 * collectives send inside Open MPI is then not seen), and only while a
 * session is active (kp_mon_counting), so that a program without sessions
 * pays one test of a flag.
 *
 * Collectives kprog carries (schedules handed to the module, coll.c) are
 * counted by the shim when it posts them, while a session is active: the
 * SEND steps of the schedule, by destination, into the collective class
 * (MPI_M_COLL_ONLY), as Open MPI's coll monitoring counts the messages
 * its collectives send. The kernel's per-destination counters see only
 * KPROG_IOC_SEND, so nothing is counted twice; the collectives Open MPI
 * carries still come only from its MPI_T variables.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "env.h"
#include "mon.h"

bool kp_mon_counting;
bool kp_mon_active;
static uint64_t *pass;		/* [kind][world]: sends passed through to PMPI */
static uint64_t *coll;		/* [kind][world]: sends of schedules kprog ran */
static int world;

struct pvar {
	const char *name;
	int cls, kind;
	MPI_T_pvar_handle h;
	bool ok;
	size_t *buf;
};

static struct pvar pvars[] = {
	{ .name = "pml_monitoring_messages_count", .cls = KP_MC_P2P, .kind = KP_MK_COUNT },
	{ .name = "pml_monitoring_messages_size", .cls = KP_MC_P2P, .kind = KP_MK_SIZE },
	{ .name = "coll_monitoring_messages_count", .cls = KP_MC_COLL, .kind = KP_MK_COUNT },
	{ .name = "coll_monitoring_messages_size", .cls = KP_MC_COLL, .kind = KP_MK_SIZE },
	{ .name = "osc_monitoring_messages_sent_count", .cls = KP_MC_OSC, .kind = KP_MK_COUNT },
	{ .name = "osc_monitoring_messages_sent_size", .cls = KP_MC_OSC, .kind = KP_MK_SIZE },
};
#define NPVARS (int)(sizeof(pvars) / sizeof(pvars[0]))

static MPI_T_pvar_session tsess = MPI_T_PVAR_SESSION_NULL;
static bool mpit_up, pml_mon;

/* Open MPI's monitoring is on when pml_monitoring_enable > 0. */
static int cvar_int(const char *want)
{
	int idx, v = 0, count;
	MPI_T_cvar_handle h;

	/* by name (MPI 3.1): Open MPI has thousands of variables to walk otherwise */
	if (MPI_T_cvar_get_index(want, &idx) != MPI_SUCCESS)
		return 0;
	if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
		return 0;
	if (count != 1 || MPI_T_cvar_read(h, &v) != MPI_SUCCESS)
		v = 0;
	MPI_T_cvar_handle_free(&h);
	return v;
}

static int pvar_index(const char *want)
{
	int idx;

	/* Open MPI registers the monitoring variables in class SIZE */
	if (MPI_T_pvar_get_index(want, MPI_T_PVAR_CLASS_SIZE, &idx) != MPI_SUCCESS)
		return -1;
	return idx;
}

static void mpit_open(void)
{
	int provided, i, idx, count;
	MPI_Comm wc = MPI_COMM_WORLD;

	const char *env = getenv("OMPI_MCA_pml_monitoring_enable");
	int use = kp_env_tri(KP_ENV_MON_MPIT);
	bool enabled;

	/*
	 * KPROG_MON_MPIT=0 leaves MPI_T alone: Open MPI stops its own textual
	 * monitoring output (pml_monitoring_enable_output) once MPI_T reads
	 * the variables, and a cross-check wants that output. Without Open
	 * MPI's monitoring asked for on the command line (mpirun --mca sets
	 * OMPI_MCA_pml_monitoring_enable) its variables only read zero, and
	 * MPI_T's start-up costs a quarter of a second: skipped, unless
	 * KPROG_MON_MPIT=1 (monitoring enabled in an MCA parameter file).
	 */
	if (use == 0)
		return;
	if (use != 1 && !(env && atoi(env) > 0))
		return;
	if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
		return;
	mpit_up = true;
	/*
	 * Open MPI 4.1 unloads the pml monitoring component (and its cvar and
	 * pvars) once it has interposed itself: the environment tells too.
	 */
	enabled = cvar_int("pml_monitoring_enable") > 0 || (env && atoi(env) > 0);
	if (MPI_T_pvar_session_create(&tsess) != MPI_SUCCESS) {
		tsess = MPI_T_PVAR_SESSION_NULL;
		return;
	}
	for (i = 0; i < NPVARS; i++) {
		struct pvar *p = &pvars[i];
		int rc;

		/* the pml's counts replace the shim's only if they are real */
		if (p->cls == KP_MC_P2P && !enabled)
			continue;
		idx = pvar_index(p->name);
		if (idx < 0 || MPI_T_pvar_handle_alloc(tsess, idx, &wc, &p->h, &count) != MPI_SUCCESS)
			continue;
		if (count != world) {
			MPI_T_pvar_handle_free(tsess, &p->h);
			continue;
		}
		rc = MPI_T_pvar_start(tsess, p->h);
		if (rc != MPI_SUCCESS && rc != MPI_T_ERR_PVAR_NO_STARTSTOP) {
			MPI_T_pvar_handle_free(tsess, &p->h);
			continue;
		}
		p->buf = calloc((size_t)world, sizeof(size_t));
		if (!p->buf) {
			MPI_T_pvar_handle_free(tsess, &p->h);
			continue;
		}
		p->ok = true;
	}
	pml_mon = pvars[0].ok && pvars[1].ok;
	kp_log(1, "monitoring: Open MPI's pml monitoring %s; collective and one-sided %s",
	       pml_mon ? "read through MPI_T" : "not available: pass-through sends counted by the shim",
	       pvars[2].ok || pvars[4].ok ? "through MPI_T" : "not available");
}

int kp_mon_src_init(void)
{
	world = kp.world_size;
	if (!world)
		PMPI_Comm_size(MPI_COMM_WORLD, &world);
	pass = calloc((size_t)KP_MK_NKIND * world, sizeof(*pass));
	coll = calloc((size_t)KP_MK_NKIND * world, sizeof(*coll));
	if (!pass || !coll) {
		free(pass);
		free(coll);
		pass = coll = NULL;
		return -1;
	}
	mpit_open();
	return 0;
}

void kp_mon_src_fini(void)
{
	int i;

	kp_mon_counting = kp_mon_active = false;
	for (i = 0; i < NPVARS; i++) {
		if (pvars[i].ok) {
			MPI_T_pvar_stop(tsess, pvars[i].h);
			MPI_T_pvar_handle_free(tsess, &pvars[i].h);
		}
		free(pvars[i].buf);
		pvars[i].buf = NULL;
		pvars[i].ok = false;
	}
	if (tsess != MPI_T_PVAR_SESSION_NULL)
		MPI_T_pvar_session_free(&tsess);
	tsess = MPI_T_PVAR_SESSION_NULL;
	if (mpit_up)
		MPI_T_finalize();
	mpit_up = pml_mon = false;
	free(pass);
	free(coll);
	pass = coll = NULL;
}

bool kp_mon_src_needs_pass(void)
{
	return !pml_mon;
}

const char *kp_mon_src_describe(void)
{
	if (kp.active)
		return pml_mon ? "kprog + Open MPI monitoring (MPI_T)" : "kprog + shim";
	return pml_mon ? "Open MPI monitoring (MPI_T)" : "shim";
}

int kp_mon_src_read(struct kp_mcount *cur)
{
	int i, w;

	memset(cur->v, 0, (size_t)KP_MC_NCLASS * KP_MK_NKIND * world * sizeof(uint64_t));
	if (kp.active && kp.ring->peer_offset) {
		const struct kprog_peer_count *pc = (const void *)((char *)kp.ring +
								   kp.ring->peer_offset);

		for (w = 0; w < world; w++) {
			*kp_mcount_at(cur, KP_MC_P2P, KP_MK_COUNT, w) +=
				__atomic_load_n(&pc[w].msgs, __ATOMIC_RELAXED);
			*kp_mcount_at(cur, KP_MC_P2P, KP_MK_SIZE, w) +=
				__atomic_load_n(&pc[w].bytes, __ATOMIC_RELAXED);
		}
	}
	if (kp.active && kp_fast_active())
		kp_fast_sent_counts(kp_mcount_at(cur, KP_MC_P2P, KP_MK_COUNT, 0),
				    kp_mcount_at(cur, KP_MC_P2P, KP_MK_SIZE, 0));
	for (w = 0; w < world; w++) {
		*kp_mcount_at(cur, KP_MC_P2P, KP_MK_COUNT, w) += pass[w];
		*kp_mcount_at(cur, KP_MC_P2P, KP_MK_SIZE, w) += pass[world + w];
		*kp_mcount_at(cur, KP_MC_COLL, KP_MK_COUNT, w) += coll[w];
		*kp_mcount_at(cur, KP_MC_COLL, KP_MK_SIZE, w) += coll[world + w];
	}
	for (i = 0; i < NPVARS; i++) {
		struct pvar *p = &pvars[i];

		if (!p->ok)
			continue;
		if (MPI_T_pvar_read(tsess, p->h, p->buf) != MPI_SUCCESS)
			return -1;
		for (w = 0; w < world; w++)
			*kp_mcount_at(cur, p->cls, p->kind, w) += p->buf[w];
	}
	return 0;
}

/* World rank of rank dest of comm's remote group (the group for intra). */
static int world_of(MPI_Comm comm, int dest)
{
	MPI_Group g, wg;
	int inter = 0, w = MPI_UNDEFINED;

	PMPI_Comm_test_inter(comm, &inter);
	if (inter)
		PMPI_Comm_remote_group(comm, &g);
	else
		PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, 1, &dest, wg, &w);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	return w;
}

void kp_mon_pass_send(MPI_Comm comm, int dest, int count, MPI_Datatype type)
{
	int w, size = 0;

	if (!pass || dest < 0 || count < 0)
		return;
	w = world_of(comm, dest);
	if (w == MPI_UNDEFINED || w < 0 || w >= world)
		return;
	PMPI_Type_size(type, &size);
	pass[w]++;
	pass[world + w] += (uint64_t)size * (uint64_t)count;
}

void kp_mon_coll_steps(const struct kprog_coll_step *steps, uint32_t n)
{
	uint32_t i;

	if (!coll)
		return;
	for (i = 0; i < n; i++) {
		const struct kprog_coll_step *st = &steps[i];
		uint64_t bytes = st->len;

		if (st->kind != KPROG_STEP_SEND || st->peer < 0 || st->peer >= world)
			continue;
		if (st->flags & KPROG_STEP_IOV) {
			const struct kprog_iov *v = (const void *)(uintptr_t)st->src;

			bytes = 0;
			for (uint64_t j = 0; v && j < st->len; j++)
				bytes += v[j].len;
		}
		coll[st->peer]++;
		coll[world + st->peer] += bytes;
	}
}
