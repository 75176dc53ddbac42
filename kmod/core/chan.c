// SPDX-License-Identifier: GPL-2.0
/*
 * kprog fast-path channels.
 *
 * A channel joins two endpoints of one job on this node: a page of
 * headers and one data ring per direction, vmalloc_user() memory mapped
 * into both processes. Small messages go through it with no system call;
 * the receiving process matches them itself (libshim). The kernel's part:
 *
 *  - create a channel on the first KPROG_IOC_CHAN_OPEN of either side
 *    (bounded by max_chans per endpoint), publish it to the other side
 *    (KPROG_SRC_CHAN, chan_gen, an event), map it;
 *  - drain a direction into the kernel's matching, in record order, when
 *    a message of the same sender goes through the kernel, when the
 *    receiver posts or probes in the kernel, or when it asks: so that no
 *    message overtakes an older one of the same sender;
 *  - wake a sleeping receiver when its sender kicks it;
 *  - mark the channel closed when one side leaves. Records already
 *    written stay deliverable, like buffered eager messages.
 *
 * The kernel never trusts the shared memory: every index and record is
 * checked, a bad one makes it stop draining that direction (the job's
 * messages on it are lost, nobody else's), and a drain looks at no more
 * records than the ring can hold.
 *
 * Locking: kprog_chan_mutex serialises creation and the endpoints' channel
 * tables; each direction's drain_lock serialises the kernel's drains of it
 * so that records reach kprog_arrive() in order (process context only).
 * The node's and the jobs' channel bytes are atomics: added and checked
 * under kprog_chan_mutex (no other creation between the two), subtracted
 * when a channel is freed, wherever its last reference goes.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/mutex.h>
#include <linux/kref.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "msg.h"
#include "chan.h"
#include "grant.h"
#include "vmem.h"
#include "transport.h"

/**
 * struct kprog_chan - a channel between two endpoints
 * @ref: one per endpoint table holding it
 * @job: the job of its two endpoints, referenced; charged @bytes
 * @rank: the two ranks, @rank[0] < @rank[1]; direction d goes from
 *	@rank[d] to @rank[1 - d]
 * @mem: the shared region: struct kprog_chan_hdr, then the data rings
 * @bytes: size of @mem
 * @ring_bytes: size of one direction's data ring, a power of two
 * @max_msg: largest payload of a record
 * @drain_lock: per direction, the kernel's drains
 * @drained: per direction, under @drain_lock: where the last drain ended;
 *	every record from @drained_cons up to it was found not NEW, or was
 *	taken, and none becomes NEW again before the ring's cons passes it,
 *	so drains for the sender, which do not release, skip them
 * @drained_cons: per direction, under @drain_lock: the ring's cons when the
 *	last drain began
 * @broken: per direction, under @drain_lock: the kernel found garbage
 */
struct kprog_chan {
	struct kref ref;
	struct kprog_job *job;
	u32 rank[2];
	void *mem;
	u64 bytes;
	u32 ring_bytes;
	u32 max_msg;
	struct mutex drain_lock[2];	/* one per direction */
	u64 drained[2];
	u64 drained_cons[2];
	bool broken[2];
};

static DEFINE_MUTEX(kprog_chan_mutex);
/* Bytes of every channel of the node, at most chan_mem_mib MiB. */
static atomic64_t kprog_chan_mem = ATOMIC64_INIT(0);

static void kprog_chan_release(struct kref *ref)
{
	struct kprog_chan *ch = container_of(ref, struct kprog_chan, ref);

	atomic64_sub(ch->bytes, &kprog_chan_mem);
	atomic64_sub(ch->bytes, &ch->job->chan_mem);
	kprog_job_put(ch->job);
	vfree(ch->mem);
	kfree(ch);
}

static void kprog_chan_put(struct kprog_chan *ch)
{
	kref_put(&ch->ref, kprog_chan_release);
}

static struct kprog_chan_dir *kprog_chan_dir(struct kprog_chan *ch, int d)
{
	return &((struct kprog_chan_hdr *)ch->mem)->dir[d];
}

static void *kprog_chan_ring(struct kprog_chan *ch, int d)
{
	return ch->mem + KPROG_CHAN_DATA_OFFSET + (u64)d * ch->ring_bytes;
}

/* Bytes of one channel: the header page and a ring per direction. */
static u64 kprog_chan_size(void)
{
	return KPROG_CHAN_DATA_OFFSET + 2 * (u64)kprog_chan_bytes;
}

/*
 * May @ep hold one channel more? Within max_chans and its share of the
 * node's bound, chan_mem_mib / chan_shares, at least one channel: every
 * channel of its table counts, a closed one too (its memory lives until
 * @ep leaves).
 */
static bool kprog_chan_ep_room(const struct kprog_ep *ep)
{
	u64 share = ((u64)kprog_chan_mem_mib << 20) / kprog_chan_shares;

	if (ep->nr_chans >= kprog_max_chans)
		return false;
	return (u64)(ep->nr_chans + 1) * kprog_chan_size() <=
	       max(share, kprog_chan_size());
}

/*
 * May @job hold one channel more? At most half of the node's bound (at
 * least one channel), whatever its number of ranks here: the other half
 * stays for the other jobs of the node.
 */
static bool kprog_chan_job_room(struct kprog_job *job)
{
	u64 half = ((u64)kprog_chan_mem_mib << 20) / 2;

	return atomic64_read(&job->chan_mem) + kprog_chan_size() <=
	       max(half, kprog_chan_size());
}

static struct kprog_chan *kprog_chan_alloc(struct kprog_job *job, u32 a, u32 b)
{
	struct kprog_chan *ch = kzalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);

	if (!ch)
		return NULL;
	ch->ring_bytes = kprog_chan_bytes;
	ch->bytes = kprog_chan_size();
	ch->mem = kprog_vmem_alloc(ch->bytes);
	if (!ch->mem) {
		kfree(ch);
		return NULL;
	}
	atomic64_add(ch->bytes, &kprog_chan_mem);
	kprog_job_get(job);
	ch->job = job;
	atomic64_add(ch->bytes, &job->chan_mem);
	/* At least two of the largest records fit in a ring. */
	ch->max_msg = min_t(u32, kprog_fast_limit,
			    ch->ring_bytes / 2 - sizeof(struct kprog_chan_rec));
	ch->max_msg &= ~(KPROG_CHAN_REC_ALIGN - 1);
	ch->rank[0] = min(a, b);
	ch->rank[1] = max(a, b);
	mutex_init(&ch->drain_lock[0]);
	mutex_init(&ch->drain_lock[1]);
	kref_init(&ch->ref);
	return ch;
}

/* Under kprog_chan_mutex: tell @ep that a channel with @peer exists. */
static void kprog_chan_publish(struct kprog_ep *ep, u32 peer)
{
	struct kprog_ring_hdr *hdr = ep->ring.hdr;

	kprog_ring_src_flags(&ep->ring, peer, KPROG_SRC_CHAN);
	WRITE_ONCE(hdr->chan_gen, READ_ONCE(hdr->chan_gen) + 1);
	kprog_ep_event(ep);
}

/* Under kprog_chan_mutex: a new channel between @ep and @pe. */
static int kprog_chan_create(struct kprog_ep *ep, struct kprog_ep *pe,
			     struct kprog_chan **out)
{
	struct kprog_chan *ch;
	int err;

	if (xa_load(&pe->chans, ep->rank))
		return -EBUSY;	/* a closed channel of a rank joined anew */
	if (!kprog_chan_ep_room(ep) || !kprog_chan_ep_room(pe) ||
	    !kprog_chan_job_room(ep->job))
		return -ENOSPC;
	/* Under kprog_chan_mutex: no other creation between test and add. */
	if (atomic64_read(&kprog_chan_mem) + kprog_chan_size() >
	    (u64)kprog_chan_mem_mib << 20)
		return -ENOSPC;
	ch = kprog_chan_alloc(ep->job, ep->rank, pe->rank);
	if (!ch)
		return -ENOMEM;
	err = xa_err(xa_store(&ep->chans, pe->rank, ch, GFP_KERNEL_ACCOUNT));
	if (err)
		goto err_free;
	kref_get(&ch->ref);
	err = xa_err(xa_store(&pe->chans, ep->rank, ch, GFP_KERNEL_ACCOUNT));
	if (err)
		goto err_erase;
	ep->nr_chans++;
	pe->nr_chans++;
	kprog_chan_publish(pe, ep->rank);
	kprog_chan_publish(ep, pe->rank);
	*out = ch;
	return 0;

err_erase:
	xa_erase(&ep->chans, pe->rank);
	kprog_chan_put(ch);
err_free:
	kprog_chan_put(ch);
	return err;
}

/**
 * kprog_chan_open() - KPROG_IOC_CHAN_OPEN
 * @ep: joined endpoint
 * @co: the request; output fields are filled
 *
 * Return: 0 or a negative errno as documented in the ABI header.
 */
int kprog_chan_open(struct kprog_ep *ep, struct kprog_chan_open *co)
{
	struct kprog_job *job = ep->job;
	struct kprog_chan *ch;
	struct kprog_ep *pe;
	int err = 0;

	if (co->flags)
		return -EINVAL;
	if (!kprog_fast_limit)
		return -EOPNOTSUPP;
	if (co->peer >= job->size || co->peer == ep->rank)
		return -EINVAL;
	if (!kprog_job_is_local(job, co->peer) || job->net_only)
		return -ENOTCONN;

	mutex_lock(&kprog_chan_mutex);
	ch = xa_load(&ep->chans, co->peer);
	if (!ch) {
		pe = kprog_job_get_ep(job, co->peer);
		if (!pe) {
			err = -ENOTCONN;
			goto out;
		}
		err = kprog_chan_create(ep, pe, &ch);
		kprog_ep_put(pe);
		if (err)
			goto out;
	}
	co->offset = KPROG_CHAN_MMAP_OFFSET(co->peer);
	co->bytes = ch->bytes;
	co->ring_bytes = ch->ring_bytes;
	co->max_msg = ch->max_msg;
	co->tx = ep->rank == ch->rank[0] ? 0 : 1;
out:
	mutex_unlock(&kprog_chan_mutex);
	return err;
}

/**
 * kprog_chan_mmap() - map the channel named by the mapping's offset
 * @ep: joined endpoint
 * @vma: a mapping at KPROG_CHAN_MMAP_OFFSET(peer), at most the channel's
 *	size, shared
 *
 * Return: 0, -EINVAL (bad offset, length or a private mapping) or
 * -ENOENT (no channel with that peer).
 */
int kprog_chan_mmap(struct kprog_ep *ep, struct vm_area_struct *vma)
{
	const unsigned long step = KPROG_CHAN_MMAP_OFFSET(0) >> PAGE_SHIFT;
	struct kprog_chan *ch;
	unsigned long peer;
	int err;

	if (vma->vm_pgoff % step || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	peer = vma->vm_pgoff / step - 1;
	if (peer >= ep->job->size)
		return -EINVAL;
	mutex_lock(&kprog_chan_mutex);
	ch = xa_load(&ep->chans, peer);
	if (!ch) {
		err = -ENOENT;
	} else if (vma->vm_end - vma->vm_start > ch->bytes) {
		err = -EINVAL;
	} else {
#ifdef KPROG_HAVE_VM_FLAGS_SET
		vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
		vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
		err = kprog_vmem_mmap(vma, ch->mem, ch->bytes);
	}
	mutex_unlock(&kprog_chan_mutex);
	return err;
}

/**
 * struct kprog_chan_snap - a record header as read once from shared memory
 * @rec: the record
 * @flags: its flags
 * @len: its payload length, checked against the channel
 * @size: its size in the ring, checked to stay inside the ring and
 *	inside what the producer published
 */
struct kprog_chan_snap {
	struct kprog_chan_rec *rec;
	u32 flags;
	u32 len;
	u64 size;
};

/*
 * Reads the header of the record at @pos once (user space may change it
 * at any time) and checks it. Returns false for a malformed record.
 */
static bool kprog_chan_snap(struct kprog_chan *ch, void *ring, u64 pos,
			    u64 prod, struct kprog_chan_snap *s)
{
	u32 off = pos & (ch->ring_bytes - 1);

	s->rec = ring + off;
	s->flags = READ_ONCE(s->rec->flags);
	s->len = READ_ONCE(s->rec->len);
	if (!(s->flags & KPROG_REC_PAD) && s->len > ch->max_msg)
		return false;
	if (s->flags & KPROG_REC_PAD)
		s->size = ch->ring_bytes - off;
	else
		s->size = KPROG_CHAN_REC_SIZE(s->len);
	return off + s->size <= ch->ring_bytes && prod - pos >= s->size;
}

/* Moves @cons past DONE and PAD records; under the direction's drain_lock. */
static void kprog_chan_release_recs(struct kprog_chan *ch, int d)
{
	struct kprog_chan_dir *h = kprog_chan_dir(ch, d);
	void *ring = kprog_chan_ring(ch, d);
	struct kprog_chan_snap s;
	u64 cons, prod;
	u32 n, state;

	for (n = ch->ring_bytes / KPROG_CHAN_REC_ALIGN; n; n--) {
		cons = READ_ONCE(h->cons);
		/* Records below @prod are written; pairs with the producer. */
		prod = smp_load_acquire(&h->prod);
		if (cons == prod || prod - cons > ch->ring_bytes ||
		    cons % KPROG_CHAN_REC_ALIGN ||
		    !kprog_chan_snap(ch, ring, cons, prod, &s))
			return;
		/* DONE: its taker has read the payload (release there). */
		state = smp_load_acquire(&s.rec->state);
		if (!(s.flags & KPROG_REC_PAD) && state != KPROG_REC_DONE)
			return;
		cmpxchg64(&h->cons, cons, cons + s.size);
	}
}

/* Takes one NEW record into a message and hands it to the matching. */
static int kprog_chan_take(const struct kprog_chan_snap *s,
			   struct kprog_ep *dst, u32 src)
{
	struct kprog_env env = {
		.context = READ_ONCE(s->rec->context),
		.src = src,
		.dst = dst->rank,
		.tag = READ_ONCE(s->rec->tag),
		.len = s->len,
	};
	struct kprog_msg *msg;
	int err;

	if (s->flags & KPROG_REC_RNDV)
		return kprog_grant_take(dst, src, s->rec, s->len);
	if (env.tag < 0)
		return -EBADMSG;
	msg = kprog_msg_alloc(&env, GFP_KERNEL_ACCOUNT);
	if (!msg)
		return -ENOMEM;
	if (kprog_msg_alloc_data(msg, GFP_KERNEL_ACCOUNT)) {
		kprog_msg_free(msg);
		return -ENOMEM;
	}
	if (cmpxchg(&s->rec->state, KPROG_REC_NEW, KPROG_REC_KTAKEN) !=
	    KPROG_REC_NEW) {
		kprog_msg_free(msg);	/* the process took it meanwhile */
		return 0;
	}
	memcpy(msg->data, s->rec + 1, s->len);
	/* Order matters more than quota: a drained message is never refused. */
	err = kprog_arrive(dst, msg);
	if (err)
		kprog_msg_free(msg);	/* the receiver left */
	/* Matched or queued (and counted in held[]) before it reads DONE. */
	smp_store_release(&s->rec->state, KPROG_REC_DONE);
	return 0;
}

/*
 * Drains direction @d of @ch into @dst, which is @ch->rank[1 - d]. With
 * @release (a call of @dst itself) @cons then moves past what is done.
 * A drain for the sender (its post through the kernel, KPROG_DRAIN_TO, its
 * departure) leaves @cons where it is: the receiving process may be
 * between finding a NEW record and taking it, and a @cons moved
 * meanwhile would let the producer write a new NEW record at the same
 * place, which its take would then get instead (a message lost, another
 * in a receive that did not match it). The receiver releases the records
 * drained so, in its next poll or system call that drains.
 */
static int kprog_chan_drain_dir(struct kprog_chan *ch, int d,
				struct kprog_ep *dst, bool release)
{
	struct kprog_chan_dir *h = kprog_chan_dir(ch, d);
	void *ring = kprog_chan_ring(ch, d);
	struct kprog_chan_snap s;
	u64 cons, prod, pos;
	int err = 0;

	mutex_lock(&ch->drain_lock[d]);
	if (ch->broken[d])
		goto out;
	cons = READ_ONCE(h->cons);
	/* Records below @prod are written; pairs with the producer. */
	prod = smp_load_acquire(&h->prod);
	if (prod - cons > ch->ring_bytes || (cons | prod) % KPROG_CHAN_REC_ALIGN)
		goto broken;
	/* from where the last drain ended, unless @cons passed it since */
	pos = ch->drained[d];
	if (cons - ch->drained_cons[d] > pos - ch->drained_cons[d] ||
	    pos - cons > prod - cons)
		pos = cons;
	ch->drained_cons[d] = cons;
	for (; pos != prod; pos += s.size) {
		if (!kprog_chan_snap(ch, ring, pos, prod, &s))
			goto broken;
		if (s.flags & KPROG_REC_PAD ||
		    READ_ONCE(s.rec->state) != KPROG_REC_NEW)
			continue;
		err = kprog_chan_take(&s, dst, ch->rank[d]);
		if (err == -EBADMSG)
			goto broken;
		if (err)
			break;
	}
	ch->drained[d] = pos;
	if (release)
		kprog_chan_release_recs(ch, d);
	goto out;

broken:
	pr_warn_ratelimited("kprog: job %#llx: channel %u->%u malformed, not used any more\n",
			    dst->job->key, ch->rank[d], ch->rank[1 - d]);
	ch->broken[d] = true;
	err = 0;
out:
	mutex_unlock(&ch->drain_lock[d]);
	return err;
}

/*
 * Has direction @d of @ch nothing written since its last release? Read
 * without drain_lock: a record published after this look is concurrent
 * with the caller's post and may be ordered after it, as under the lock.
 */
static bool kprog_chan_dir_empty(struct kprog_chan *ch, int d)
{
	struct kprog_chan_dir *h = kprog_chan_dir(ch, d);

	return READ_ONCE(h->prod) == READ_ONCE(h->cons);
}

/*
 * @ep's channel with @peer, not referenced, or NULL. Only in @ep's own
 * system calls and release: entries leave @ep's table only when @ep
 * departs (kprog_chan_depart()), so the table's reference keeps the
 * channel for the whole call without kprog_chan_mutex.
 */
static struct kprog_chan *kprog_chan_own(struct kprog_ep *ep, u32 peer)
{
	return xa_load(&ep->chans, peer);
}

/**
 * kprog_chan_drain() - drain channels into @ep's matching
 * @ep: the receiving endpoint (process context, its own system call)
 * @peer: the sending rank, or KPROG_ANY_SOURCE for every channel of @ep
 *
 * Return: 0 or -ENOMEM (records not drained stay in their channel).
 */
int kprog_chan_drain(struct kprog_ep *ep, s32 peer)
{
	struct kprog_chan *ch;
	unsigned long idx;
	int err = 0, e, d;

	if (!ep->nr_chans)
		return 0;
	if (peer != KPROG_ANY_SOURCE) {
		ch = kprog_chan_own(ep, peer);
		if (!ch)
			return 0;
		d = ep->rank == ch->rank[0];	/* from @peer to @ep */
		if (kprog_chan_dir_empty(ch, d))
			return 0;
		return kprog_chan_drain_dir(ch, d, ep, true);
	}
	mutex_lock(&kprog_chan_mutex);
	xa_for_each(&ep->chans, idx, ch) {
		kref_get(&ch->ref);
		mutex_unlock(&kprog_chan_mutex);
		e = kprog_chan_drain_dir(ch, ep->rank == ch->rank[0], ep,
					 true);
		err = err ?: e;
		kprog_chan_put(ch);
		mutex_lock(&kprog_chan_mutex);
	}
	mutex_unlock(&kprog_chan_mutex);
	return err;
}

/**
 * kprog_chan_drain_to() - drain @ep's channel to @dst before a message of
 *	@ep goes to @dst through the kernel, so that it cannot overtake
 * @ep: the sending endpoint (process context, its own system call)
 * @dst: the receiving rank
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_chan_drain_to(struct kprog_ep *ep, u32 dst)
{
	struct kprog_chan *ch;
	struct kprog_ep *de;
	int err = 0, d;

	if (!ep->nr_chans)
		return 0;
	ch = kprog_chan_own(ep, dst);
	if (!ch)
		return 0;
	d = ep->rank == ch->rank[0] ? 0 : 1;	/* from @ep to @dst */
	/* The common case of a kernel-path send: nothing to put before it. */
	if (kprog_chan_dir_empty(ch, d))
		return 0;
	de = kprog_job_get_ep(ep->job, dst);
	if (de) {
		err = kprog_chan_drain_dir(ch, d, de, false);
		kprog_ep_put(de);
	}
	return err;
}

/**
 * kprog_chan_flush_out() - hand a departing endpoint's records to the
 *	kernel's matching before it leaves
 * @ep: endpoint whose file is released, still in its job
 *
 * Records it wrote stay deliverable, like buffered eager messages; drained
 * now, they reach receives its departure would otherwise fail, in order.
 */
void kprog_chan_flush_out(struct kprog_ep *ep)
{
	struct kprog_chan *ch;
	unsigned long idx;

	if (!ep->nr_chans)
		return;
	mutex_lock(&kprog_chan_mutex);
	xa_for_each(&ep->chans, idx, ch) {
		mutex_unlock(&kprog_chan_mutex);
		kprog_chan_drain_to(ep, idx);
		mutex_lock(&kprog_chan_mutex);
	}
	mutex_unlock(&kprog_chan_mutex);
}

/**
 * kprog_chan_kick() - KPROG_IOC_KICK: wake rank @rank of @ep's job
 * @ep: joined endpoint
 * @rank: a rank of the job on this node
 *
 * Return: 0, -EINVAL (bad rank) or -ENOTCONN (not joined here).
 */
int kprog_chan_kick(struct kprog_ep *ep, u32 rank)
{
	struct kprog_ep *pe;

	if (rank >= ep->job->size)
		return -EINVAL;
	pe = kprog_job_get_ep(ep->job, rank);
	if (!pe)
		return -ENOTCONN;
	kprog_ep_event(pe);
	kprog_ep_put(pe);
	return 0;
}

/**
 * kprog_chan_depart() - a departing endpoint leaves its channels
 * @ep: endpoint whose file is released, out of the job's rank table
 *
 * Its channels are marked closed for the peers, which keep them (and the
 * records in them) until they leave too.
 */
void kprog_chan_depart(struct kprog_ep *ep)
{
	struct kprog_chan *ch;
	struct kprog_ep *pe;
	unsigned long idx;
	u32 peer;

	mutex_lock(&kprog_chan_mutex);
	xa_for_each(&ep->chans, idx, ch) {
		xa_erase(&ep->chans, idx);
		ep->nr_chans--;
		WRITE_ONCE(kprog_chan_dir(ch, 0)->closed, 1);
		WRITE_ONCE(kprog_chan_dir(ch, 1)->closed, 1);
		peer = ch->rank[ep->rank == ch->rank[0]];
		pe = kprog_job_get_ep(ep->job, peer);
		if (pe) {
			WRITE_ONCE(pe->ring.hdr->chan_gen,
				   READ_ONCE(pe->ring.hdr->chan_gen) + 1);
			kprog_ep_event(pe);
			kprog_ep_put(pe);
		}
		kprog_chan_put(ch);
	}
	mutex_unlock(&kprog_chan_mutex);
}
