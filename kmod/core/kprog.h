/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog module-wide limits: the module parameters (validated at load, read
 * only afterwards) and the constants derived from them.
 *
 * The objects of the module each have their own header:
 *   job.h        jobs and their rank table of peers
 *   ep.h         endpoints (one per open file) and their completion ring
 *   op.h         operations posted by an endpoint (sends and receives)
 *   msg.h        messages arriving at an endpoint (envelope + payload or
 *                rendezvous descriptor)
 *   match.h      the matching core: one arrival path, probe, cancel,
 *                departure of peers
 *   chan.h       fast-path channels shared by two local endpoints
 *   transport.h  the contract between the core and the transports
 * docs/DESIGN.md has the picture and the locking rules.
 */
#ifndef _KPROG_KPROG_H
#define _KPROG_KPROG_H

#include <linux/types.h>

extern unsigned int kprog_eager_limit;
extern unsigned int kprog_eager_quota;
extern unsigned int kprog_max_ops;
extern unsigned int kprog_max_rndv;
extern unsigned int kprog_max_iov;
extern unsigned int kprog_max_iov_total;
extern unsigned int kprog_ring_entries;
extern unsigned int kprog_max_job_size;
extern unsigned int kprog_fast_limit;
extern unsigned int kprog_chan_bytes;
extern unsigned int kprog_max_chans;
extern unsigned int kprog_chan_mem_mib;
extern unsigned int kprog_chan_shares;
extern unsigned int kprog_max_grants;
extern unsigned int kprog_dev_mode;
extern int kprog_dev_group;

/*
 * Largest message: far beyond any count MPI can express, small enough
 * that no sum of lengths or offsets on the path can overflow a u64.
 */
#define KPROG_MAX_MSG		((u64)1 << 47)

/*
 * Every buffered eager message is charged this much on top of its payload
 * against the receiver's quota, so that zero-byte messages cannot pile up.
 */
#define KPROG_EAGER_OVERHEAD	256

#endif /* _KPROG_KPROG_H */
