/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Nonblocking collectives in the shim (coll.c: requests, hand-off,
 * completion; coll_algo.c: schedules; coll_types.c: reduction types).
 */
#ifndef KPROG_COLL_H
#define KPROG_COLL_H

#include "shim.h"
#include <mpi-ext.h>	/* Open MPI's MPIX_*_init (pcollreq), after mpi.h */
#include "coll_algo.h"

/*
 * The collective context of a communicator: its point-to-point context
 * with the top bit set. Open MPI's context ids are far below 2^31, so it
 * never equals a point-to-point context (the channels' fast path carries
 * only those); the module keeps schedule traffic apart by an envelope
 * flag as well.
 */
#define KP_COLL_CTX_BIT	(1u << 31)

/* A typed output that lives in a temporary until the collective ends. */
struct kp_coll_unpack {
	void *tmp;
	void *buf;
	int count;
	MPI_Datatype type;	/* dup'd when PMPI_Unpack is needed */
	struct kp_layout *lay;
};

/*
 * Calls counted apart at finalize (KPROG_VERBOSE=1), so that a test can
 * tell that they ran in the module (tests/mpi/run, coll_more).
 */
enum kp_coll_family { KP_CF_OTHER, KP_CF_BARRIER, KP_CF_ALLTOALLW, KP_CF_NEIGHBOR, KP_CF_NR };

/* The state of one collective request (kp_req.coll). */
struct kp_coll {
	struct kp_sched s;
	struct kp_coll_unpack *unp;
	int nunp, capunp;
	/*
	 * A persistent collective (MPIX_*_init, coll_persist.c) keeps its
	 * schedule, temporaries and unpacks for every MPI_Start; its typed
	 * inputs are packed at each start (@pk), not once when it is built.
	 */
	bool persistent;
	uint8_t family;		/* enum kp_coll_family, for the finalize line */
	uint64_t bytes;		/* its SEND steps' bytes (the profiler's size class) */
	struct kp_coll_unpack *pk;
	int npk, cappk;
	struct kprog_coll ioc;	/* kept for a deferred post, and for every start */
};

/*
 * Set by the MPIX_*_init wrappers (coll_persist.c) around their call of
 * the nonblocking entry point: kp_coll_new() then makes a persistent
 * request, and what passes through goes to Open MPI's MPIX_*_init
 * (KP_COLL_PASS) with @info.
 */
struct kp_coll_pinit {
	bool on;
	MPI_Info info;
};
extern struct kp_coll_pinit kp_coll_pinit;
#define KP_COLL_PASS(nbcall, pcall) (kp_coll_pinit.on ? (pcall) : (nbcall))
#define KP_PINFO (kp_coll_pinit.info)

/* MPI's type and op as the module's, or false: pass through (coll_types.c). */
bool kp_coll_redop(MPI_Datatype type, MPI_Op op, struct kp_redop *ro);

/* ---- coll.c ---- */
/* The communicator's entry if its collectives go to the module, else NULL. */
struct kp_comm *kp_coll_comm(MPI_Comm comm);
/* A collective request on c, its schedule empty (rank and size of c). */
struct kp_req *kp_coll_new(struct kp_comm *c);
/*
 * Typed buffers as packed bytes for the builders: the user's memory when
 * count elements are one block, else a temporary of the schedule, packed
 * now when the schedule reads it (@in) and unpacked into the user's
 * buffer when the collective completes when it writes it (@out).
 */
void *kp_coll_buf(struct kp_req *r, const void *buf, int count, MPI_Datatype type, bool in,
		  bool out, size_t *bytes);
/* The same for the n blocks of a vector call (displacements in extents). */
void *kp_coll_vec(struct kp_req *r, const void *buf, const int *counts, const int *displs,
		  MPI_Datatype type, int n, bool in, bool out, size_t *bcounts, size_t *bdispls);
/*
 * Hand the schedule to the module; *req gets the handle. MPI error code.
 * A persistent request is only made ready here (inactive until started).
 */
int kp_coll_start(struct kp_req *r, MPI_Request *req);
/* MPI_Start of a persistent collective request (persist.c). MPI error code. */
int kp_coll_restart(struct kp_req *r);
/* From kp_complete(): the schedule's completion. */
void kp_coll_complete(struct kp_req *r, const struct kprog_cqe *cqe);
extern struct kp_req *kp_coll_deferred;	/* posts the module had no room for */
void kp_coll_flush(void);		/* retry them (progress) */
void kp_coll_counts(uint64_t *posted, uint64_t *deferred);	/* for the finalize line */
/* Schedules posted per family (KP_CF_NR entries) and persistent starts posted. */
void kp_coll_family_counts(uint64_t *fam, uint64_t *persistent);

#endif
