/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Schedule builders of the nonblocking collectives (coll_algo.c): MPI-free,
 * so that the native reference executor (test_coll.c) runs exactly the
 * schedules the shim hands the module. Buffers are packed bytes (coll.c
 * packs what is not one block); peers are ranks of the communicator
 * (coll.c translates them to job ranks); reductions name a kprog type and
 * op and work on whole elements of @esize bytes.
 */
#ifndef KPROG_COLL_ALGO_H
#define KPROG_COLL_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kprog.h>

struct kp_sched {
	int rank, size;		/* in the communicator */
	struct kprog_coll_step *steps;
	uint32_t n, cap;
	uint32_t round;		/* of the next step */
	bool round_used;	/* a step was added in @round */
	void **tmps;		/* temporary buffers, freed with the schedule */
	uint32_t ntmp, tmpcap;
	bool oom;		/* an allocation failed: the schedule is unusable */
};

/*
 * The functions of a collective's start call and completion (the MPI_I*
 * entries, the request, the builders of the common calls, the hand-off,
 * the end) in one section of the shim, so that a call runs through a few
 * pages of instructions rather than across the library. Why: under the
 * emulator (the test VM) the kernel's code that runs between two calls
 * (the ioctl, interrupts) takes over the emulated TLB and the
 * translator's jump cache; each return or call into another page then
 * takes a lookup and a page walk, and the shim's part of a 1 MiB
 * MPI_Ibcast (a few hundred instructions) read 4-30 us
 * (docs/benchmarks-coll.md, ninth session).
 */
#define KP_COLL_TEXT __attribute__((section(".text.kp_coll")))

/* Algorithm thresholds (bytes), chosen by size and rank count. */
#define KP_BCAST_LARGE		(64 * 1024)	/* scatter + ring allgather above */
#define KP_ALLREDUCE_LARGE	(32 * 1024)	/* reduce-scatter + allgather above */
/*
 * Reduce: ring reduce-scatter + gather from kp_reduce_large bytes (count >=
 * n), binomial below. Off by default (SIZE_MAX): in the one timing boot of
 * the fifteenth session (docs/benchmarks-coll.md) it was slower than the
 * binomial tree at 64 KiB and not measurably faster at 256 KiB and 1 MiB.
 * KP_REDUCE_RING is the size it is tested at (test_coll.c).
 */
#define KP_REDUCE_RING		(32 * 1024)
extern size_t kp_reduce_large;
#define KP_ALLTOALL_PAIRWISE	(8 * 1024)	/* pairwise rounds from this block size */

void kp_sched_init(struct kp_sched *s, int rank, int size);
/*
 * An emptied schedule for rank and size that keeps the room of its steps
 * and of its list of temporaries (a kept object's, coll.c); the steps and
 * temporaries themselves are gone (kp_sched_reset()).
 */
void kp_sched_reuse(struct kp_sched *s, int rank, int size);
/* Frees the temporaries, empties the steps, keeps both arrays' room. */
void kp_sched_reset(struct kp_sched *s);
void kp_sched_free(struct kp_sched *s);		/* steps and temporaries */
void *kp_sched_tmp(struct kp_sched *s, size_t bytes);
/* Steps; zero-length copies and reductions are left out. */
void kp_sched_send(struct kp_sched *s, int peer, const void *src, size_t len);
void kp_sched_recv(struct kp_sched *s, int peer, void *dst, size_t len);
void kp_sched_copy(struct kp_sched *s, const void *src, void *dst, size_t len);
void kp_sched_reduce(struct kp_sched *s, const void *src, void *dst, size_t len, int dtype,
		     int op);
void kp_sched_next_round(struct kp_sched *s);	/* steps after it wait for those before */

/* A reduction: element type and op (coll_types.c) and element size. */
struct kp_redop {
	int dtype, op;
	size_t esize;
};

/*
 * Builders. A NULL send buffer means MPI_IN_PLACE (the data is in the
 * receive buffer, where MPI puts it for that call). Byte counts are per
 * block (one rank's share) unless the name says otherwise.
 */
void kp_build_barrier(struct kp_sched *s);
void kp_build_bcast(struct kp_sched *s, void *buf, size_t bytes, int root);
void kp_build_reduce(struct kp_sched *s, const void *sbuf, void *rbuf, size_t count,
		     const struct kp_redop *ro, int root);
void kp_build_allreduce(struct kp_sched *s, const void *sbuf, void *rbuf, size_t count,
			const struct kp_redop *ro);
void kp_build_alltoall(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block);
void kp_build_allgather(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block);
void kp_build_gather(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block, int root);
void kp_build_scatter(struct kp_sched *s, const void *sbuf, void *rbuf, size_t block, int root);
/*
 * Vector forms in bytes: counts[i] and displs[i] of rank i's block in the
 * buffer that holds all blocks (bytes from its start).
 */
void kp_build_gatherv(struct kp_sched *s, const void *sbuf, size_t sbytes, void *rbuf,
		      const size_t *counts, const size_t *displs, int root);
void kp_build_scatterv(struct kp_sched *s, const void *sbuf, const size_t *counts,
		       const size_t *displs, void *rbuf, size_t rbytes, int root);
void kp_build_allgatherv(struct kp_sched *s, const void *sbuf, size_t sbytes, void *rbuf,
			 const size_t *counts, const size_t *displs);
void kp_build_alltoallv(struct kp_sched *s, const void *sbuf, const size_t *scounts,
			const size_t *sdispls, void *rbuf, const size_t *rcounts,
			const size_t *rdispls);
/* Reductions over ranks 0..rank (inclusive scan) or 0..rank-1 (exclusive). */
void kp_build_scan(struct kp_sched *s, const void *sbuf, void *rbuf, size_t count,
		   const struct kp_redop *ro, bool exclusive);
/* Reduce, then block i (counts[i] elements) to rank i. */
void kp_build_reduce_scatter(struct kp_sched *s, const void *sbuf, void *rbuf,
			     const size_t *counts, const struct kp_redop *ro);

#endif
