// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/utils.c: the per-test fixture and the helpers of utils.h.
 */
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/socket.h>
#include "kprog.h"
#include "job.h"
#include "op.h"
#include "transport.h"
#include "ktest.h"
#include "fake_xport.h"
#include "stubs.h"
#include "coll.h"
#include "ib.h"
#include "mock_ib.h"

/* ---------------------------------------------------------------------
 * Module parameters and loading
 */
static unsigned int *const params[] = {
	&kprog_eager_limit, &kprog_eager_quota, &kprog_max_ops, &kprog_max_rndv,
	&kprog_max_iov, &kprog_max_iov_total, &kprog_ring_entries,
	&kprog_max_job_size, &kprog_fast_limit, &kprog_chan_bytes,
	&kprog_max_chans, &kprog_chan_mem_mib, &kprog_chan_shares, &kprog_max_grants, &kprog_dev_mode,
	(unsigned int *)&kprog_dev_group, &kprog_max_coll_steps, &kprog_max_colls,
	&kprog_coll_start_delay_us,
};
static unsigned int param_defaults[ARRAY_SIZE(params)];
static bool param_defaults_saved;
static bool loaded;

void kt_params_reset(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(params); i++) {
		if (!param_defaults_saved)
			param_defaults[i] = *params[i];
		*params[i] = param_defaults[i];
	}
	param_defaults_saved = true;
}

int kt_load(void)
{
	int err = init_module();

	loaded = !err;
	return err;
}

void kt_unload(void)
{
	if (!loaded)
		kt_fatal(__FILE__, __LINE__, "kt_unload(): not loaded");
	cleanup_module();
	loaded = false;
}

/*
 * kprog_ib.ko, whose init_module/cleanup_module the Makefile renamed:
 * its parameters at their defaults, loaded on top of the core. Unloaded
 * by the fixture after the endpoints are closed and before the core.
 */
int kprog_ib_init_module(void);
void kprog_ib_cleanup_module(void);
static bool ib_loaded;

void kt_ib_params_reset(void)
{
	kprog_ib_eager_size = 8192;
	kprog_ib_recv_bufs = 64;
	kprog_ib_max_conns = 64;
	kprog_ib_max_reg_mb = 256;
	kprog_ib_reg_pages = 512;
	kprog_ib_max_reads = 8;
	kprog_ib_conn_mrs = 16;
	kprog_ib_keepalive_ms = 2000;
	kprog_ib_conn_admin = 1;
	kprog_ib_reg_qp = true;
}

int kt_ib_load(void)
{
	kt_ib_params_reset();
	return kt_ib_load_params();
}

/* Same as kt_ib_load() but with the parameters as the test set them. */
int kt_ib_load_params(void)
{
	int err;

	if (ib_loaded)
		kt_fatal(__FILE__, __LINE__, "kt_ib_load(): loaded already");
	err = kprog_ib_init_module();
	ib_loaded = !err;
	return err;
}

void kt_ib_unload(void)
{
	if (!ib_loaded)
		kt_fatal(__FILE__, __LINE__, "kt_ib_unload(): not loaded");
	kprog_ib_cleanup_module();
	ib_loaded = false;
}

/* ---------------------------------------------------------------------
 * The fixture
 */
static struct kt_ep eps[64];
static int neps;
static u64 next_key;

void kt_before_each(const struct kt_test *t)
{
	mock_reset();
	kt_params_reset();
	kt_ib_params_reset();
	kt_stub_nl_init_err = 0;
	memset(eps, 0, sizeof(eps));
	neps = 0;
	if (!(t->flags & KT_NO_MODULE) && kt_load())
		kt_fatal(__FILE__, __LINE__, "the module does not load");
}

void kt_after_each(const struct kt_test *t)
{
	int i;

	mock_alloc_hook = NULL;
	/* Whatever is queued would run some time after the test. */
	mock_run_work();
	/* The remote side lets go of what it still holds. */
	kt_fx_teardown();
	for (i = neps - 1; i >= 0; i--)
		if (eps[i].open)
			kt_close(&eps[i]);
	mock_schedule_hook = NULL;
	mock_run_work();
	if (ib_loaded) {
		mock_ib_run();
		kt_ib_unload();
	}
	if (loaded)
		kt_unload();
	if (kt_stub_nl_inits)
		kt_fail(__FILE__, __LINE__, "netlink init and exit unbalanced");
	mock_check_clean();
	if (kt_failures() && !kt_verbose && mock_printk_buf[0])
		kt_fail(__FILE__, __LINE__, "kernel messages of the test:\n%s",
			mock_printk_buf);
}

void kt_after_abort(const struct kt_test *t, int clean_up)
{
	int i;

	if (clean_up) {
		if (!kt_verbose && mock_printk_buf[0])
			kt_fail(__FILE__, __LINE__,
				"kernel messages of the test:\n%s",
				mock_printk_buf);
		if (mock_locks_held())
			kt_fail(__FILE__, __LINE__,
				"aborted with %d locks held: no clean-up, later tests may fail from it",
				mock_locks_held());
		/* Failures from here on would only repeat the abort. */
		kt_catch_begin();
		mock_schedule_hook = NULL;
		mock_alloc_hook = NULL;
		if (!mock_locks_held()) {
			mock_run_work();
			kt_fx_teardown();
			for (i = neps - 1; i >= 0; i--)
				if (eps[i].open)
					kt_close(&eps[i]);
			mock_run_work();
			if (ib_loaded) {
				mock_ib_run();
				kt_ib_unload();
			}
			if (loaded)
				kt_unload();
		}
		kt_catch_end();
		return;
	}
	/*
	 * Forget what is left without checking. If the clean-up above did
	 * not get through, the module's state is lost (it may still point
	 * into memory of the test) and its own leak counters may report
	 * this test's objects again in later tests.
	 */
	mock_abandon();
	kt_fx_forget();
	loaded = false;
	ib_loaded = false;
	kt_stub_nl_inits = 0;
}

const char *kt_errname(long err)
{
	static const char *const names[] = {
		[EPERM] = "EPERM", [ENOENT] = "ENOENT", [EINTR] = "EINTR",
		[E2BIG] = "E2BIG", [EAGAIN] = "EAGAIN", [ENOMEM] = "ENOMEM",
		[EACCES] = "EACCES", [EFAULT] = "EFAULT", [EBUSY] = "EBUSY",
		[EEXIST] = "EEXIST", [ENODEV] = "ENODEV", [EINVAL] = "EINVAL",
		[ENOTTY] = "ENOTTY", [ERANGE] = "ERANGE",
		[EBADFD] = "EBADFD", [EMSGSIZE] = "EMSGSIZE",
		[EPROTONOSUPPORT] = "EPROTONOSUPPORT",
		[EADDRINUSE] = "EADDRINUSE", [ENOBUFS] = "ENOBUFS",
		[EISCONN] = "EISCONN", [ECONNRESET] = "ECONNRESET",
		[ENOTCONN] = "ENOTCONN", [EHOSTUNREACH] = "EHOSTUNREACH",
		[EOPNOTSUPP] = "EOPNOTSUPP", [ENOSPC] = "ENOSPC",
		[EBADMSG] = "EBADMSG", [EIO] = "EIO",
		[ETIMEDOUT] = "ETIMEDOUT", [ECANCELED] = "ECANCELED",
		[ETIME] = "ETIME", [ERESTARTSYS] = "ERESTARTSYS",
	};
	static char buf[4][24];
	static int n;

	if (!err)
		return "0";
	if (err < 0 && -err < ARRAY_SIZE(names) && names[-err]) {
		n = (n + 1) % 4;
		snprintf(buf[n], sizeof(buf[n]), "-%s", names[-err]);
		return buf[n];
	}
	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "%ld", err);
	return buf[n];
}

u64 kt_new_key(void)
{
	return 0x6b70726f67000000ULL + ++next_key;
}

/* ---------------------------------------------------------------------
 * Files and ioctls
 */
struct kt_ep *kt_open_as(struct mock_proc *p)
{
	struct kt_ep *e;
	int err;

	if (!mock_miscdev)
		kt_fatal(__FILE__, __LINE__, "kt_open(): no device registered");
	if (neps == ARRAY_SIZE(eps))
		kt_fatal(__FILE__, __LINE__, "kt_open(): too many files");
	e = &eps[neps++];
	e->proc = p;
	e->file.f_op = mock_miscdev->fops;
	e->file.private_data = mock_miscdev;	/* as misc_open() leaves it */
	mock_set_current(p);
	err = e->file.f_op->open(NULL, &e->file);
	if (err)
		kt_fatal(__FILE__, __LINE__, "open: %s", kt_errname(err));
	e->ep = e->file.private_data;
	e->open = true;
	return e;
}

void kt_recycle_files(void)
{
	int i;

	for (i = 0; i < neps; i++)
		if (eps[i].open)
			kt_fatal(__FILE__, __LINE__, "kt_recycle_files(): a file is open");
	memset(eps, 0, sizeof(eps));
	neps = 0;
}

struct kt_ep *kt_open(void)
{
	return kt_open_as(mock_default_proc);
}

void kt_close(struct kt_ep *e)
{
	mock_set_current(e->proc);
	e->file.f_op->release(NULL, &e->file);
	e->open = false;
	e->ring = NULL;
}

long kt_ioctl(struct kt_ep *e, unsigned int cmd, void *arg)
{
	mock_set_current(e->proc);
	return e->file.f_op->unlocked_ioctl(&e->file, cmd, (unsigned long)arg);
}

unsigned long kt_last_vm_flags;

int kt_mmap(struct kt_ep *e, unsigned long len, unsigned long pgoff,
	    unsigned long vm_flags, void **ring)
{
	struct vm_area_struct vma = {
		.vm_start = 0x7f0000000000UL,
		.vm_end = 0x7f0000000000UL + len,
		.vm_pgoff = pgoff,
		.vm_flags = vm_flags,
		.vm_mm = e->proc->mm,
	};
	int err;

	mock_set_current(e->proc);
	mock_remap_addr = NULL;
	/* The mmap() system call holds the mmap lock for writing. */
	mmap_write_lock(e->proc->mm);
	err = e->file.f_op->mmap(&e->file, &vma);
	mmap_write_unlock(e->proc->mm);
	kt_last_vm_flags = vma.vm_flags;
	if (!err && !(vma.vm_flags & VM_DONTEXPAND))
		kt_fail(__FILE__, __LINE__, "the ring mapping may grow");
	if (ring)
		*ring = err ? NULL : mock_remap_addr;
	return err;
}

int kt_join_req(struct kt_ep *e, struct kprog_join *j)
{
	void *ring;
	int err;

	err = kt_ioctl(e, KPROG_IOC_JOIN, j);
	if (err)
		return err;
	e->join = *j;
	err = kt_mmap(e, j->ring_bytes, 0,
		      VM_READ | VM_WRITE | VM_SHARED | VM_MAYSHARE, &ring);
	if (err)
		kt_fatal(__FILE__, __LINE__, "mmap of the ring: %s",
			 kt_errname(err));
	e->ring = ring;
	return 0;
}

int kt_join(struct kt_ep *e, u64 key, u32 rank, u32 size)
{
	struct kprog_join j = {
		.abi_version = KPROG_ABI_VERSION,
		.job_key = key,
		.rank = rank,
		.size = size,
	};

	return kt_join_req(e, &j);
}

void kt_job(struct kt_ep **v, u32 n)
{
	u64 key = kt_new_key();
	u32 i;
	int err;

	for (i = 0; i < n; i++) {
		v[i] = kt_open_as(i ? mock_proc_new(1000) : mock_default_proc);
		err = kt_join(v[i], key, i, n);
		if (err)
			kt_fatal(__FILE__, __LINE__, "join of rank %u: %s", i,
				 kt_errname(err));
	}
}

void kt_pair(struct kt_ep **a, struct kt_ep **b)
{
	struct kt_ep *v[2];

	kt_job(v, 2);
	*a = v[0];
	*b = v[1];
}

static int kt_post(struct kt_ep *e, unsigned int cmd, s32 peer, s32 tag,
		   const void *buf, u64 len, u64 req_id, u32 flags,
		   struct kprog_post *out)
{
	struct kprog_post p = {
		.req_id = req_id,
		.addr = (u64)(uintptr_t)buf,
		.len = len,
		.peer = peer,
		.tag = tag,
		.flags = flags,
		.done = 0xdead,		/* the ioctl must set it */
	};
	int err = kt_ioctl(e, cmd, &p);

	if (out)
		*out = p;
	return err;
}

int kt_send(struct kt_ep *e, s32 peer, s32 tag, const void *buf, u64 len,
	    u64 req_id, u32 flags, struct kprog_post *out)
{
	return kt_post(e, KPROG_IOC_SEND, peer, tag, buf, len, req_id, flags,
		       out);
}

int kt_recv(struct kt_ep *e, s32 peer, s32 tag, void *buf, u64 len,
	    u64 req_id, u32 flags, struct kprog_post *out)
{
	return kt_post(e, KPROG_IOC_RECV, peer, tag, buf, len, req_id, flags,
		       out);
}

int kt_cancel(struct kt_ep *e, u64 req_id)
{
	struct kprog_cancel c = { .req_id = req_id };

	return kt_ioctl(e, KPROG_IOC_CANCEL, &c);
}

int kt_wait(struct kt_ep *e, s64 timeout_ns)
{
	struct kprog_wait w = { .timeout_ns = timeout_ns };

	return kt_ioctl(e, KPROG_IOC_WAIT, &w);
}

int kt_probe(struct kt_ep *e, struct kprog_probe *pr)
{
	return kt_ioctl(e, KPROG_IOC_PROBE, pr);
}

/* ---------------------------------------------------------------------
 * The ring, read as user space reads it
 */
bool kt_pop(struct kt_ep *e, struct kprog_cqe *c)
{
	struct kprog_ring_hdr *h = e->ring;
	struct kprog_cqe *cqes;
	u32 head, tail;

	if (!h)
		kt_fatal(__FILE__, __LINE__, "kt_pop(): no ring mapped");
	head = READ_ONCE(h->head);
	tail = smp_load_acquire(&h->tail);
	if (head == tail)
		return false;
	cqes = (void *)h + KPROG_RING_CQES_OFFSET;
	*c = cqes[head & (h->entries - 1)];
	smp_store_release(&h->head, head + 1);
	return true;
}

u32 kt_ring_count(struct kt_ep *e)
{
	struct kprog_ring_hdr *h = e->ring;

	return smp_load_acquire(&h->tail) - READ_ONCE(h->head);
}

/* ---------------------------------------------------------------------
 * Internal API helpers (the first to adapt when kmod/ changes)
 */
struct kprog_op *kt_op_new(struct kt_ep *e, u64 req_id, bool is_send)
{
	struct kprog_post p = { .req_id = req_id, .peer = 0 };
	struct kprog_op *op;

	mock_set_current(e->proc);
	op = kprog_op_create(e->ep, &p, is_send, NULL);
	if (IS_ERR(op))
		kt_fatal(__FILE__, __LINE__, "kprog_op_create: %s",
			 kt_errname(PTR_ERR(op)));
	kprog_op_activate(op);
	return op;
}

void kt_op_complete(struct kprog_op *op, u64 bytes, int error)
{
	struct kprog_cqe c = {
		.req_id = op->req_id,
		.bytes = bytes,
		.error = error,
	};

	kprog_op_complete(op, &c);
}

/* Slots held in either budget (max_ops, max_rndv). */
u32 kt_nr_ops(struct kt_ep *e)
{
	return READ_ONCE(e->ep->nr_ops) + READ_ONCE(e->ep->nr_rndv);
}

u32 kt_nr_rndv(struct kt_ep *e)
{
	return READ_ONCE(e->ep->nr_rndv);
}

/* ---------------------------------------------------------------------
 * Data and failure loops
 */
static u8 pattern(size_t i, unsigned int seed)
{
	return (u8)(i * 31 + seed * 7 + (i >> 8));
}

void kt_fill(void *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		((u8 *)buf)[i] = pattern(i, seed);
}

bool kt_check(const void *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (((const u8 *)buf)[i] != pattern(i, seed))
			return false;
	return true;
}

int kt_each_alloc_failure(int (*op)(void *arg), void (*undo)(void *arg),
			  void *arg, int expected_err)
{
	long live;
	int n, err;

	for (n = 0; n < 64; n++) {
		live = mock_live_allocs;
		mock_kmalloc_errors = 1ULL << n;
		err = op(arg);
		mock_kmalloc_errors = 0;
		if (!err)
			return n;
		if (err != expected_err)
			kt_fail(__FILE__, __LINE__,
				"allocation %d failing: %s, expected %s", n,
				kt_errname(err), kt_errname(expected_err));
		if (undo)
			undo(arg);
		if (mock_live_allocs != live)
			kt_fail(__FILE__, __LINE__,
				"allocation %d failing: %ld blocks leaked", n,
				mock_live_allocs - live);
	}
	kt_fail(__FILE__, __LINE__, "still failing after 64 allocations");
	return n;
}

/* ---------------------------------------------------------------------
 * Jobs spanning nodes, GET_INFO, per-source state
 */
int kt_join_map(struct kt_ep *e, u64 key, u32 rank, u32 size,
		const u32 *rank_nodes, u32 nr_nodes, u32 self_node)
{
	static struct kprog_node_addr nodes[8];
	struct kprog_join j = {
		.abi_version = KPROG_ABI_VERSION,
		.job_key = key,
		.rank = rank,
		.size = size,
		.rank_nodes = (u64)(uintptr_t)rank_nodes,
		.nodes = (u64)(uintptr_t)nodes,
		.nr_nodes = nr_nodes,
		.self_node = self_node,
	};
	u32 i;

	if (nr_nodes > ARRAY_SIZE(nodes))
		kt_fatal(__FILE__, __LINE__, "kt_join_map(): too many nodes");
	for (i = 0; i < ARRAY_SIZE(nodes); i++) {
		nodes[i].family = AF_INET;
		nodes[i].addr[0] = 127;
		nodes[i].addr[3] = i + 1;
	}
	return kt_join_req(e, &j);
}

int kt_info(struct kt_ep *e, struct kprog_info *info)
{
	return kt_ioctl(e, KPROG_IOC_GET_INFO, info);
}

struct kprog_src *kt_src(struct kt_ep *e, u32 rank)
{
	struct kprog_ring_hdr *h = e->ring;

	if (!h || rank >= h->nr_src)
		kt_fatal(__FILE__, __LINE__, "kt_src(): no such source");
	return (void *)h + h->src_offset + rank * sizeof(struct kprog_src);
}

u32 kt_events(struct kt_ep *e)
{
	return READ_ONCE(e->ring->events);
}

/* ---------------------------------------------------------------------
 * Fast-path channels, the user-space side
 */
int kt_chan_open(struct kt_ep *e, u32 peer, struct kt_chan *c)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->co.peer = peer;
	err = kt_ioctl(e, KPROG_IOC_CHAN_OPEN, &c->co);
	if (err)
		return err;
	err = kt_mmap(e, c->co.bytes, c->co.offset >> PAGE_SHIFT,
		      VM_READ | VM_WRITE | VM_SHARED | VM_MAYSHARE, &c->mem);
	if (err)
		kt_fatal(__FILE__, __LINE__, "mmap of the channel: %s",
			 kt_errname(err));
	c->tx = &((struct kprog_chan_hdr *)c->mem)->dir[c->co.tx];
	c->rx = &((struct kprog_chan_hdr *)c->mem)->dir[!c->co.tx];
	c->txring = c->mem + KPROG_CHAN_DATA_OFFSET +
		    (u64)c->co.tx * c->co.ring_bytes;
	c->rxring = c->mem + KPROG_CHAN_DATA_OFFSET +
		    (u64)!c->co.tx * c->co.ring_bytes;
	return 0;
}

struct kprog_chan_rec *kt_chan_rec(struct kt_chan *c, bool tx, u64 pos)
{
	return (void *)(tx ? c->txring : c->rxring) +
	       (pos & (c->co.ring_bytes - 1));
}

int kt_chan_put(struct kt_chan *c, u32 context, s32 tag, const void *data,
		u32 len)
{
	u64 prod = c->tx->prod, cons = READ_ONCE(c->tx->cons);
	u64 size = KPROG_CHAN_REC_SIZE(len), pad = 0;
	u32 off = prod & (c->co.ring_bytes - 1);
	struct kprog_chan_rec *r;

	if (off + size > c->co.ring_bytes)
		pad = c->co.ring_bytes - off;
	if (prod + pad + size - cons > c->co.ring_bytes)
		return -ENOSPC;
	if (pad) {
		r = kt_chan_rec(c, true, prod);
		*r = (struct kprog_chan_rec){ .state = KPROG_REC_DONE,
					      .flags = KPROG_REC_PAD };
		prod += pad;
	}
	r = kt_chan_rec(c, true, prod);
	*r = (struct kprog_chan_rec){ .state = KPROG_REC_NEW, .len = len,
				      .context = context, .tag = tag };
	memcpy(r + 1, data, len);
	c->tx->msgs++;
	c->tx->bytes += len;
	smp_store_release(&c->tx->prod, prod + size);
	return 0;
}

int kt_chan_drain(struct kt_ep *e, s32 peer)
{
	struct kprog_chan_drain d = { .peer = peer };

	return kt_ioctl(e, KPROG_IOC_CHAN_DRAIN, &d);
}
