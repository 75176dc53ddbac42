// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Communicator table: which communicators go through kprog, their context
 * ids, and rank translation. Wrappers of every communicator constructor
 * register the result; Comm_free/Comm_disconnect remove it. The context id
 * is Open MPI's own (ompi_cid.c), or, if that cannot be read, agreed by an
 * Allreduce(MAX) of each member's next free id.
 */
#include <stdlib.h>
#include <string.h>
#include "hot.h"
#include "shim.h"

#define NBUCKET 256

static struct kp_comm *table[NBUCKET];
static uint32_t next_ctx = 2;	/* 0 = MPI_COMM_WORLD, 1 = MPI_COMM_SELF */
static struct kp_comm *cache;	/* last hit */

static unsigned int bucket(MPI_Comm comm)
{
	uintptr_t p = (uintptr_t)comm;

	return (unsigned int)((p >> 4) ^ (p >> 12)) & (NBUCKET - 1);
}

KP_HOT struct kp_comm *kp_comm_lookup(MPI_Comm comm)
{
	struct kp_comm *c;

	if (!kp.active)
		return NULL;
	if (cache && cache->comm == comm)
		return cache;
	for (c = table[bucket(comm)]; c; c = c->next)
		if (c->comm == comm) {
			cache = c;
			return c;
		}
	return NULL;
}

void kp_comm_get(struct kp_comm *c)
{
	c->refs++;
}

void kp_comm_put(struct kp_comm *c)
{
	if (--c->refs)
		return;
	free(c->c2w);
	free(c->w2c);
	free(c);
}

static void unlink_comm(MPI_Comm comm)
{
	struct kp_comm **pp, *c;

	for (pp = &table[bucket(comm)]; (c = *pp); pp = &c->next) {
		if (c->comm != comm)
			continue;
		*pp = c->next;
		if (cache == c)
			cache = NULL;
		c->freed = true;
		kp_comm_put(c);
		return;
	}
}

/*
 * Decide for a new communicator. Within the node it qualifies when kprog
 * is active; across nodes only if the job joined with the network
 * transport, which MPI_Init agreed over the whole world (kp.net is the
 * same on every rank, so every member of a communicator of world ranks
 * decides alike without asking the others).
 *
 * The context id is Open MPI's own, which Open MPI agreed over every
 * member (across nodes too), where it can be read. No collective runs
 * here then, and none may: a blocking Allreduce would run under the
 * shim's lock (MPI_THREAD_MULTIPLE: a thread of another rank that must
 * join it waits for that lock behind a constructor of another
 * communicator, so two ranks finishing their constructors in different
 * orders deadlock), or inside progress for MPI_Comm_idup (kp_idup_poll(),
 * while the peer may sleep in the kernel for a message this rank sends
 * only later). Only where Open MPI's ids cannot be read does an
 * Allreduce number the communicator; MPI_Init then refused
 * MPI_THREAD_MULTIPLE and MPI_Comm_idup passes through, so it runs in a
 * constructor, called in the same order on every member.
 */
void kp_comm_register(MPI_Comm comm, uint32_t fixed_ctx, bool fixed)
{
	int inter = 0, size, rank, i, ok = 1, spans = 0;
	int *ranks, *c2w;
	MPI_Group g, wg;
	struct kp_comm *c;
	uint32_t mine, agreed;

	if (!kp.active || comm == MPI_COMM_NULL)
		return;
	PMPI_Comm_test_inter(comm, &inter);
	if (inter)
		return;
	PMPI_Comm_size(comm, &size);
	PMPI_Comm_rank(comm, &rank);
	ranks = malloc(sizeof(int) * size);
	c2w = malloc(sizeof(int) * size);
	if (!ranks || !c2w)
		abort();
	for (i = 0; i < size; i++)
		ranks[i] = i;
	PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, size, ranks, wg, c2w);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	free(ranks);
	for (i = 0; i < size; i++) {
		if (c2w[i] == MPI_UNDEFINED)
			ok = 0;	/* a rank from another world */
		else if (!kp.local[c2w[i]])
			spans = 1;
	}
	if (spans && !kp.net)
		ok = 0;		/* a remote rank and no network transport */
	if (!ok) {
		free(c2w);
		return;
	}
	if (fixed) {
		agreed = fixed_ctx;
	} else if (kp_ompi_cid_usable()) {
		agreed = kp_ompi_cid(comm);	/* Open MPI agreed it: ompi_cid.c */
	} else {
		mine = next_ctx;
		PMPI_Allreduce(&mine, &agreed, 1, MPI_UINT32_T, MPI_MAX, comm);
		next_ctx = agreed + 1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->comm = comm;
	c->ctx = agreed;
	c->spans = spans;
	c->size = size;
	c->rank = rank;
	c->c2w = c2w;
	c->w2c = malloc(sizeof(int) * kp.world_size);
	if (!c->w2c)
		abort();
	memset(c->w2c, 0xff, sizeof(int) * kp.world_size);
	for (i = 0; i < size; i++)
		c->w2c[c2w[i]] = i;
	c->refs = 1;
	unlink_comm(comm);	/* a stale entry for a reused handle */
	c->next = table[bucket(comm)];
	table[bucket(comm)] = c;
	kp_log(2, "comm %p ctx %u size %d%s", (void *)comm, c->ctx, size,
	       spans ? " (spans nodes)" : "");
}

void kp_comm_init(void)
{
	if (!kp_ompi_cid_init())
		kp_log(1, "Open MPI's communicator layout is not the expected one: context ids agreed by Allreduce, Comm_idup not accelerated");
	kp_comm_register(MPI_COMM_WORLD, 0, true);
	kp_comm_register(MPI_COMM_SELF, 1, true);
}

void kp_comm_fini(void)
{
	int i;
	struct kp_comm *c;

	for (i = 0; i < NBUCKET; i++)
		while ((c = table[i])) {
			table[i] = c->next;
			c->freed = true;
			kp_comm_put(c);
		}
	cache = NULL;
}

void kp_comm_new(MPI_Comm *newcomm)
{
	if (newcomm && *newcomm != MPI_COMM_NULL)
		kp_comm_register(*newcomm, 0, false);
}

void kp_comm_forget(MPI_Comm comm)
{
	if (kp.active && comm != MPI_COMM_NULL)
		unlink_comm(comm);
}

int kp_err(MPI_Comm comm, int code)
{
	if (code != MPI_SUCCESS)
		PMPI_Comm_call_errhandler(comm, code);
	return code;
}

/* ---- constructors ---- */

#define WRAP_NEW(call, out) do {			\
	int rc_ = KP_PMPI(call);			\
	if (rc_ == MPI_SUCCESS && kp.active)		\
		kp_comm_new(out);			\
	return rc_;					\
} while (0)

/* A constructor whose new communicator has a topology (coll_neighbor.c) */
void (*kp_coll_topo_created)(MPI_Comm comm);
void (*kp_coll_topo_dup)(MPI_Comm old, MPI_Comm dup);

static void kp_topo_created(MPI_Comm comm)
{
	if (kp_coll_topo_created)
		kp_coll_topo_created(comm);
}

static void kp_topo_dup(MPI_Comm old, MPI_Comm dup)
{
	if (kp_coll_topo_dup)
		kp_coll_topo_dup(old, dup);
}

#define WRAP_TOPO(call, out, after) do {		\
	int rc_ = KP_PMPI(call);			\
	if (rc_ == MPI_SUCCESS && kp.active) {		\
		kp_comm_new(out);			\
		if (*(out) != MPI_COMM_NULL)		\
			after;				\
	}						\
	return rc_;					\
} while (0)

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_TOPO(PMPI_Comm_dup(comm, newcomm), newcomm, kp_topo_dup(comm, *newcomm));
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_TOPO(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm,
		  kp_topo_dup(comm, *newcomm));
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int MPI_Cart_create(MPI_Comm old, int ndims, const int dims[], const int periods[], int reorder,
		    MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Cart_create(old, ndims, dims, periods, reorder, newcomm), newcomm);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm);
}

int MPI_Graph_create(MPI_Comm old, int nnodes, const int index[], const int edges[], int reorder,
		     MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Graph_create(old, nnodes, index, edges, reorder, newcomm), newcomm);
}

int MPI_Dist_graph_create(MPI_Comm old, int n, const int sources[], const int degrees[],
			  const int dest[], const int weights[], MPI_Info info, int reorder,
			  MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_TOPO(PMPI_Dist_graph_create(old, n, sources, degrees, dest, weights, info, reorder,
					 newcomm), newcomm, kp_topo_created(*newcomm));
}

int MPI_Dist_graph_create_adjacent(MPI_Comm old, int indegree, const int sources[],
				   const int sourceweights[], int outdegree, const int dest[],
				   const int destweights[], MPI_Info info, int reorder,
				   MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_TOPO(PMPI_Dist_graph_create_adjacent(old, indegree, sources, sourceweights, outdegree,
						  dest, destweights, info, reorder, newcomm),
		  newcomm, kp_topo_created(*newcomm));
}

int MPI_Intercomm_merge(MPI_Comm inter, int high, MPI_Comm *newcomm)
{
	KP_GUARD();
	WRAP_NEW(PMPI_Intercomm_merge(inter, high, newcomm), newcomm);
}

int MPI_Comm_free(MPI_Comm *comm)
{
	KP_GUARD();
	MPI_Comm old = comm ? *comm : MPI_COMM_NULL;
	int rc = KP_PMPI(PMPI_Comm_free(comm));

	if (rc == MPI_SUCCESS && kp.active)
		unlink_comm(old);
	return rc;
}

int MPI_Comm_disconnect(MPI_Comm *comm)
{
	KP_GUARD();
	MPI_Comm old = comm ? *comm : MPI_COMM_NULL;
	int rc = KP_PMPI(PMPI_Comm_disconnect(comm));

	if (rc == MPI_SUCCESS && kp.active)
		unlink_comm(old);
	return rc;
}
