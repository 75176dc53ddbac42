/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog completion ring: the memory an endpoint shares with its process.
 *
 * User space owns hdr->head and may write anything anywhere in the
 * mapping; the kernel reads only head (a garbage head reads as "full")
 * and keeps its own copy of tail.
 */
#ifndef _KPROG_RING_H
#define _KPROG_RING_H

#include <linux/types.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/atomic.h>
#include <linux/kprog.h>

struct vm_area_struct;

/**
 * struct kprog_ring - an endpoint's completion ring
 * @mem: vmalloc_user() memory, mapped at offset 0 of the file
 * @hdr: the shared header at the start of @mem
 * @cqes: the slots
 * @bytes: size of @mem (page aligned)
 * @entries: number of slots, a power of two
 * @tail: the kernel's tail, the only one it trusts
 * @src: per sending rank state published to user space (write-only for
 *	the kernel: nothing it decides depends on what it finds there)
 * @nr_src: entries in @src and @peers, the job size
 * @peers: per destination rank send counts (write-only for the kernel)
 * @times: per slot completion times, or NULL (KPROG_JOIN_TIMES)
 */
struct kprog_ring {
	void *mem;
	struct kprog_ring_hdr *hdr;
	struct kprog_cqe *cqes;
	u64 bytes;
	u32 entries;
	u32 tail;
	struct kprog_src *src;
	u32 nr_src;
	struct kprog_peer_count *peers;
	struct kprog_cqe_times *times;
};

int kprog_ring_alloc(struct kprog_ring *ring, u32 entries, u32 nr_src,
		     bool times);
void kprog_ring_free(struct kprog_ring *ring);
bool kprog_ring_room(const struct kprog_ring *ring);
void kprog_ring_write(struct kprog_ring *ring, const struct kprog_cqe *cqe,
		      const struct kprog_cqe_times *times);
bool kprog_ring_find(const struct kprog_ring *ring, u64 req_id);
bool kprog_ring_nonempty(const struct kprog_ring *ring);
void kprog_ring_set_overflow(struct kprog_ring *ring, bool on);
int kprog_ring_waiter_cpu(const struct kprog_ring *ring);
int kprog_ring_mmap(struct kprog_ring *ring, struct vm_area_struct *vma);

/**
 * kprog_ring_held() - publish a change of messages held from @src
 * @ring: the receiver's ring; caller holds the receiver's mlock
 * @src: sending rank < ring->nr_src
 * @delta: +1 or -1
 */
static inline void kprog_ring_held(struct kprog_ring *ring, u32 src, int delta)
{
	if (WARN_ON_ONCE(src >= ring->nr_src))
		return;
	WRITE_ONCE(ring->src[src].held, READ_ONCE(ring->src[src].held) + delta);
	WRITE_ONCE(ring->hdr->unexp, READ_ONCE(ring->hdr->unexp) + delta);
}

/**
 * kprog_ring_src_flags() - publish KPROG_SRC_* flags of @src
 * @ring: the receiver's ring
 * @src: sending rank < ring->nr_src
 * @set: flags to set
 */
static inline void kprog_ring_src_flags(struct kprog_ring *ring, u32 src,
					u32 set)
{
	if (WARN_ON_ONCE(src >= ring->nr_src))
		return;
	WRITE_ONCE(ring->src[src].flags, READ_ONCE(ring->src[src].flags) | set);
}

/**
 * kprog_ring_count_send() - account a send posted to @dst (monitoring)
 * @ring: the sender's ring
 * @dst: destination rank < ring->nr_src
 * @bytes: payload bytes
 *
 * Threads of one process may post at once: the counters are updated
 * atomically in the shared page (8-byte aligned, only ever added to by
 * the kernel; what user space writes there only spoils its own figures).
 */
static inline void kprog_ring_count_send(struct kprog_ring *ring, u32 dst,
					 u64 bytes)
{
	if (WARN_ON_ONCE(dst >= ring->nr_src))
		return;
	atomic64_inc((atomic64_t *)&ring->peers[dst].msgs);
	atomic64_add(bytes, (atomic64_t *)&ring->peers[dst].bytes);
}

#endif /* _KPROG_RING_H */
