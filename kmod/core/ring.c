// SPDX-License-Identifier: GPL-2.0
/*
 * kprog completion ring: slots shared with user space. The callers hold
 * the lock that serialises the ring's producer (the endpoint's olock).
 */
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/timekeeping.h>
#include "ring.h"
#include "vmem.h"

/**
 * kprog_ring_alloc() - allocate a ring
 * @ring: an unused ring
 * @entries: slots, a power of two
 * @nr_src: ranks of the job (entries of the per-rank arrays)
 * @times: also an array of completion times, slot for slot
 *
 * Layout: header, completion slots, per-source state, per-destination
 * send counts, then the times if asked for (each part 64-byte aligned).
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_ring_alloc(struct kprog_ring *ring, u32 entries, u32 nr_src,
		     bool times)
{
	u64 src_off = ALIGN(KPROG_RING_CQES_OFFSET +
			    (u64)entries * sizeof(struct kprog_cqe), 64);
	u64 peer_off = ALIGN(src_off + (u64)nr_src * sizeof(struct kprog_src),
			     64);
	u64 times_off = ALIGN(peer_off + (u64)nr_src *
			      sizeof(struct kprog_peer_count), 64);
	u64 bytes = PAGE_ALIGN(times_off + (times ? (u64)entries *
				sizeof(struct kprog_cqe_times) : 0));

	ring->mem = kprog_vmem_alloc(bytes);
	if (!ring->mem)
		return -ENOMEM;
	ring->hdr = ring->mem;
	ring->cqes = ring->mem + KPROG_RING_CQES_OFFSET;
	ring->src = ring->mem + src_off;
	ring->peers = ring->mem + peer_off;
	ring->times = times ? ring->mem + times_off : NULL;
	ring->nr_src = nr_src;
	ring->bytes = bytes;
	ring->entries = entries;
	ring->tail = 0;
	ring->hdr->entries = entries;
	ring->hdr->src_offset = src_off;
	ring->hdr->nr_src = nr_src;
	ring->hdr->peer_offset = peer_off;
	ring->hdr->times_offset = times ? times_off : 0;
	return 0;
}

/**
 * kprog_ring_free() - free a ring (no-op without one)
 * @ring: ring no longer reachable by completions
 *
 * Pages still mapped by user space stay allocated until unmapped.
 */
void kprog_ring_free(struct kprog_ring *ring)
{
	vfree(ring->mem);
	ring->mem = NULL;
	ring->hdr = NULL;
	ring->cqes = NULL;
	ring->peers = NULL;
	ring->times = NULL;
}

/**
 * kprog_ring_room() - is there a free slot?
 * @ring: ring
 *
 * Return: true if a completion can be written now.
 */
bool kprog_ring_room(const struct kprog_ring *ring)
{
	u32 head = READ_ONCE(ring->hdr->head);

	return ring->tail - head < ring->entries;
}

/**
 * kprog_ring_write() - publish a completion; the caller checked for room
 * @ring: ring
 * @cqe: completion
 * @times: its times, written when the ring carries them
 */
void kprog_ring_write(struct kprog_ring *ring, const struct kprog_cqe *cqe,
		      const struct kprog_cqe_times *times)
{
	u32 slot = ring->tail & (ring->entries - 1);

	ring->cqes[slot] = *cqe;
	if (ring->times)
		ring->times[slot] = *times;
	ring->tail++;
	WRITE_ONCE(ring->hdr->event_ns, ktime_get_ns());
	/* Slot contents before the index; pairs with user space's acquire. */
	smp_store_release(&ring->hdr->tail, ring->tail);
}

/**
 * kprog_ring_find() - does an unconsumed slot hold @req_id?
 * @ring: ring
 * @req_id: cookie
 *
 * Looks at most at ring->entries slots, whatever head says.
 *
 * Return: true if found.
 */
bool kprog_ring_find(const struct kprog_ring *ring, u64 req_id)
{
	u32 head = READ_ONCE(ring->hdr->head);
	u32 n = min(ring->tail - head, ring->entries);

	while (n--) {
		if (READ_ONCE(ring->cqes[(ring->tail - 1 - n) &
					 (ring->entries - 1)].req_id) == req_id)
			return true;
	}
	return false;
}

/**
 * kprog_ring_nonempty() - has user space completions left to consume?
 * @ring: ring
 *
 * Lockless.
 *
 * Return: true if head != tail.
 */
bool kprog_ring_nonempty(const struct kprog_ring *ring)
{
	return READ_ONCE(ring->hdr->head) != READ_ONCE(ring->tail);
}

/**
 * kprog_ring_waiter_cpu() - where a thread of the ring's process waits
 * @ring: ring, or one not allocated yet
 *
 * Reads the hint user space writes while it is in a blocking call
 * (kprog_ring_hdr.waiter_cpu). Any value is harmless: it only steers
 * where a copy runs.
 *
 * Return: an online CPU, or -1 if none is advertised.
 */
int kprog_ring_waiter_cpu(const struct kprog_ring *ring)
{
	u32 v;

	if (!ring->hdr)
		return -1;
	v = READ_ONCE(ring->hdr->waiter_cpu);
	if (!v || v - 1 >= nr_cpu_ids || !cpu_online(v - 1))
		return -1;
	return v - 1;
}

/**
 * kprog_ring_set_overflow() - tell user space that completions wait
 * @ring: ring
 * @on: the overflow list is not empty
 */
void kprog_ring_set_overflow(struct kprog_ring *ring, bool on)
{
	WRITE_ONCE(ring->hdr->overflow, on);
}

/**
 * kprog_ring_mmap() - map the ring at offset 0
 * @ring: ring
 * @vma: the mapping, at most ring->bytes long
 *
 * Return: 0, or -EINVAL for a bad offset or length or a private mapping
 * (its writes would never reach the kernel).
 */
int kprog_ring_mmap(struct kprog_ring *ring, struct vm_area_struct *vma)
{
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start > ring->bytes ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
#ifdef KPROG_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	return kprog_vmem_mmap(vma, ring->mem, ring->bytes);
}
