/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kprog selftests: endpoints (open + JOIN + ring
 * mmap), posting, reaping completions from the ring with a deadline,
 * module parameters, data patterns.
 *
 * Helpers never ASSERT: they return 0 or a negative errno so that they
 * can also be used in forked children, which report by exit status.
 */
#ifndef KPROG_TEST_H
#define KPROG_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kprog.h>

#include "kselftest_harness.h"

#define KP_PARAM_DIR	"/sys/module/kprog/parameters/"
#define KP_TMO_MS	5000	/* default deadline for one completion */

struct kp_ep {
	int fd;
	int rank;
	struct kprog_join j;
	void *map;
	struct kprog_ring_hdr *hdr;
	struct kprog_cqe *cqes;
	/* completions read from the ring, not yet claimed by a test */
	struct kprog_cqe *stash;
	unsigned int nstash, capstash;
	int ring_bad;		/* tail ran more than entries ahead of head */
	int overflow_seen;	/* saw hdr->overflow set at least once */
};

/* A module parameter (dir: its /sys/module/.../parameters/); -1 if unreadable. */
static inline long long kp_sysfs_param(const char *dir, const char *name)
{
	char path[256], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtoll(buf, NULL, 0);
}

/* kprog's vmalloc areas (rings, grant tables, channels); -1: unreadable (needs root). */
static inline long kp_vmalloc_areas(void)
{
	char line[512];
	long n = 0;
	FILE *f = fopen("/proc/vmallocinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[kprog]"))
			n++;
	fclose(f);
	return n;
}

/* One step of a collective schedule (KPROG_IOC_COLL), the rest zero. */
static inline void kp_coll_step(struct kprog_coll_step *s, __u8 kind, __u32 round,
				__s32 peer, const void *src, void *dst, __u64 len)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->round = round;
	s->peer = peer;
	s->src = (__u64)(uintptr_t)src;
	s->dst = (__u64)(uintptr_t)dst;
	s->len = len;
}

static inline long long kp_param(const char *name)
{
	return kp_sysfs_param(KP_PARAM_DIR, name);
}

/* Is the parameter writable by root at run time (mode 0644 or so)? */
static inline int kp_param_writable(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), KP_PARAM_DIR "%s", name);
	if (stat(path, &st))
		return 0;
	return !!(st.st_mode & S_IWUSR);
}

static inline int kp_param_write(const char *name, long long v)
{
	char path[256], buf[64];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), KP_PARAM_DIR "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%lld\n", v);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static inline __u64 kp_key(void)
{
	static __u64 ctr;
	__u64 k = 0;

	if (getrandom(&k, sizeof(k), GRND_NONBLOCK) != sizeof(k))
		k = (__u64)time(NULL) * 0x9E3779B97F4A7C15ull;
	return k ^ ((__u64)getpid() << 32) ^ ++ctr;
}

static inline long long kp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Modules the tests unload and load again (kprog_rmmod, kprog_bench,
 * kprog_ib): kmod/core/kprog.ko or kmod/<x>/kprog_<x>.ko of the tree the
 * test binary was built in.
 */
static inline int kp_ko_open(const char *name)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	/* kprog.ko is in kmod/core/, kprog_<x>.ko in kmod/<x>/ */
	snprintf(path, sizeof(path), "%s/../../kmod/%s/%s.ko", dirname(exe),
		 strncmp(name, "kprog_", 6) ? "core" : name + 6, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * Load kmod/<name>.ko with @params; with @dev, wait up to 3 s for that node
 * (devtmpfs creates it asynchronously). 0 or an errno.
 */
static inline int kp_ko_load(const char *name, const char *params, const char *dev)
{
	long long end = kp_now_ms() + 3000;
	int fd = kp_ko_open(name), err = 0;
	struct stat st;

	if (fd < 0)
		return errno;
	if (syscall(SYS_finit_module, fd, params, 0))
		err = errno;
	close(fd);
	while (!err && dev && stat(dev, &st) && kp_now_ms() < end)
		usleep(10000);
	return err;
}

/* rmmod @name without waiting: 0 or an errno (EBUSY/EWOULDBLOCK: in use). */
static inline int kp_ko_remove(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? errno : 0;
}

/* Removal once nothing holds @name: retried while busy, up to @ms. */
static inline int kp_ko_remove_when_idle(const char *name, int ms)
{
	long long end = kp_now_ms() + ms;
	int err;

	do {
		err = kp_ko_remove(name);
		if (err != EBUSY && err != EWOULDBLOCK)
			break;
		usleep(50000);
	} while (kp_now_ms() < end);
	return err;
}

/* Pipes between a test and its child processes: one byte at a time. */
static inline int kp_pipe_put(int fd, char v)
{
	return write(fd, &v, 1) == 1 ? 0 : -1;
}

/* One byte within @ms; the byte, or -1 on timeout/EOF. */
static inline int kp_pipe_get(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char v;

	if (poll(&p, 1, ms) != 1)
		return -1;
	if (read(fd, &v, 1) != 1)
		return -1;
	return (unsigned char)v;
}

/* Exit code, 128 + signal, or -1 (did not end within @ms: killed). */
static inline int kp_child_wait(pid_t pid, int ms)
{
	long long end = kp_now_ms() + ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0)
			return -1;
		if (kp_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(5000);
	}
}

/* Device node kp_open() uses; a test may point it at its own node. */
static const char *kp_dev_path = KPROG_DEVICE;

static inline int kp_open(void)
{
	int fd = open(kp_dev_path, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline void kp_join_init(struct kprog_join *j, __u64 key, __u32 rank,
				__u32 size, __u32 flags, __u32 eager)
{
	memset(j, 0, sizeof(*j));
	j->abi_version = KPROG_ABI_VERSION;
	j->flags = flags;
	j->job_key = key;
	j->rank = rank;
	j->size = size;
	j->eager_limit = eager;
}

static inline int kp_join_fd(int fd, __u64 key, __u32 rank, __u32 size,
			     __u32 flags, __u32 eager, struct kprog_join *out)
{
	struct kprog_join j;

	kp_join_init(&j, key, rank, size, flags, eager);
	if (ioctl(fd, KPROG_IOC_JOIN, &j))
		return -errno;
	if (out)
		*out = j;
	return 0;
}

/* Map the ring of an already joined fd; checks the header it finds. */
static inline int kp_ep_map(struct kp_ep *e)
{
	__u32 n = e->j.ring_entries;

	if (!n || (n & (n - 1)) ||
	    e->j.ring_bytes < KPROG_RING_CQES_OFFSET +
			      (__u64)n * sizeof(struct kprog_cqe))
		return -EPROTO;
	e->map = mmap(NULL, e->j.ring_bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED, e->fd, 0);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		return -errno;
	}
	e->hdr = e->map;
	e->cqes = (struct kprog_cqe *)((char *)e->map + KPROG_RING_CQES_OFFSET);
	if (e->hdr->entries != n)
		return -EPROTO;
	return 0;
}

static inline void kp_ep_reset(struct kp_ep *e)
{
	memset(e, 0, sizeof(*e));
	e->fd = -1;
	e->rank = -1;
}

/* open + JOIN + mmap. On failure everything is undone, e->fd == -1. */
static inline int kp_ep_open(struct kp_ep *e, __u64 key, __u32 rank,
			     __u32 size, __u32 flags, __u32 eager)
{
	int ret;

	kp_ep_reset(e);
	ret = kp_open();
	if (ret < 0)
		return ret;
	e->fd = ret;
	ret = kp_join_fd(e->fd, key, rank, size, flags, eager, &e->j);
	if (!ret)
		ret = kp_ep_map(e);
	if (ret) {
		if (e->map)
			munmap(e->map, e->j.ring_bytes);
		close(e->fd);
		kp_ep_reset(e);
		return ret;
	}
	e->rank = rank;
	return 0;
}

static inline void kp_ep_close(struct kp_ep *e)
{
	if (e->map)
		munmap(e->map, e->j.ring_bytes);
	if (e->fd >= 0)
		close(e->fd);
	free(e->stash);
	kp_ep_reset(e);
}

/* Opens ranks 0..n-1 of a job of @size; 0 or the first error. */
static inline int kp_job_open(struct kp_ep *eps, int n, __u32 size, __u64 key,
			      __u32 flags, __u32 eager)
{
	int i, ret;

	for (i = 0; i < n; i++)
		kp_ep_reset(&eps[i]);
	for (i = 0; i < n; i++) {
		ret = kp_ep_open(&eps[i], key, i, size, flags, eager);
		if (ret) {
			while (i--)
				kp_ep_close(&eps[i]);
			return ret;
		}
	}
	return 0;
}

static inline void kp_job_close(struct kp_ep *eps, int n)
{
	int i;

	for (i = 0; i < n; i++)
		kp_ep_close(&eps[i]);
}

static inline void kp_stash_push(struct kp_ep *e, const struct kprog_cqe *c)
{
	if (e->nstash == e->capstash) {
		unsigned int cap = e->capstash ? 2 * e->capstash : 64;
		struct kprog_cqe *s = realloc(e->stash, cap * sizeof(*s));

		if (!s)
			abort();
		e->stash = s;
		e->capstash = cap;
	}
	e->stash[e->nstash++] = *c;
}

/* Copy every completion in the ring to the stash; returns how many. */
static inline unsigned int kp_ring_drain(struct kp_ep *e)
{
	__u32 head, tail, mask = e->j.ring_entries - 1;
	unsigned int n = 0;

	if (!e->hdr)
		return 0;
	head = e->hdr->head;
	tail = __atomic_load_n(&e->hdr->tail, __ATOMIC_ACQUIRE);
	if (tail - head > e->j.ring_entries) {
		e->ring_bad = 1;
		return 0;
	}
	while (head != tail) {
		kp_stash_push(e, &e->cqes[head & mask]);
		head++;
		n++;
	}
	__atomic_store_n(&e->hdr->head, head, __ATOMIC_RELEASE);
	if (__atomic_load_n(&e->hdr->overflow, __ATOMIC_ACQUIRE))
		e->overflow_seen = 1;
	return n;
}

static inline __u32 kp_ring_count(struct kp_ep *e)
{
	return __atomic_load_n(&e->hdr->tail, __ATOMIC_ACQUIRE) - e->hdr->head;
}

/* Remove the stashed completion of @req_id; 1 if found. */
static inline int kp_take(struct kp_ep *e, __u64 req_id, struct kprog_cqe *out)
{
	unsigned int i;

	for (i = 0; i < e->nstash; i++) {
		if (e->stash[i].req_id == req_id) {
			if (out)
				*out = e->stash[i];
			memmove(&e->stash[i], &e->stash[i + 1],
				(e->nstash - i - 1) * sizeof(*e->stash));
			e->nstash--;
			return 1;
		}
	}
	return 0;
}

static inline int kp_ioc_wait(int fd, long long timeout_ns)
{
	struct kprog_wait w = { .timeout_ns = timeout_ns };

	return ioctl(fd, KPROG_IOC_WAIT, &w) ? -errno : 0;
}

/*
 * Sleep in KPROG_IOC_WAIT until some completion is available, at most
 * @ms. Moves overflowed completions in. 0, -ETIMEDOUT, other -errno.
 */
static inline int kp_wait_some(struct kp_ep *e, long long ms)
{
	int ret;

	if (e->hdr && __atomic_load_n(&e->hdr->overflow, __ATOMIC_ACQUIRE)) {
		e->overflow_seen = 1;
		ret = kp_ioc_wait(e->fd, 0);
		if (ret && ret != -ETIMEDOUT)
			return ret;
		if (kp_ring_count(e))
			return 0;
	}
	if (ms < 0)
		ms = 0;
	ret = kp_ioc_wait(e->fd, ms * 1000000LL);
	return ret == -EINTR ? 0 : ret;
}

/* Wait for the ring completion of @req_id (at most @ms). 0 or -errno. */
static inline int kp_wait_cqe(struct kp_ep *e, __u64 req_id,
			      struct kprog_cqe *out, long long ms)
{
	long long end = kp_now_ms() + ms;
	int ret;

	for (;;) {
		kp_ring_drain(e);
		if (kp_take(e, req_id, out))
			return 0;
		if (e->ring_bad)
			return -EPROTO;
		if (kp_now_ms() >= end)
			return -ETIMEDOUT;
		ret = kp_wait_some(e, end - kp_now_ms());
		if (ret && ret != -ETIMEDOUT)
			return ret;
	}
}

/* Is a completion for @req_id present now (or within @ms)? */
static inline int kp_has_cqe(struct kp_ep *e, __u64 req_id, long long ms)
{
	struct kprog_cqe c;

	if (kp_wait_cqe(e, req_id, &c, ms))
		return 0;
	kp_stash_push(e, &c);	/* leave it for a later kp_wait_cqe */
	return 1;
}

/*
 * The ioctl, with the argument struct copied to @out (if any) whether it
 * failed or not, so tests can check that a failing call changed nothing.
 * 0 or -errno.
 */
static inline int kp_ioctl_out(int fd, unsigned long cmd, void *arg,
			       void *out, size_t size)
{
	int ret = ioctl(fd, cmd, arg) ? -errno : 0;

	if (out)
		memcpy(out, arg, size);
	return ret;
}

static inline int kp_post(struct kp_ep *e, unsigned long cmd, __u64 req_id,
			  const void *addr, __u64 len, __u32 ctx, __s32 peer,
			  __s32 tag, __u32 flags, struct kprog_post *out)
{
	struct kprog_post p;

	memset(&p, 0, sizeof(p));
	p.req_id = req_id;
	p.addr = (__u64)(uintptr_t)addr;
	p.len = len;
	p.context = ctx;
	p.peer = peer;
	p.tag = tag;
	p.flags = flags;
	p.done = 0xdeadbeef;	/* must be overwritten */
	return kp_ioctl_out(e->fd, cmd, &p, out, sizeof(p));
}

static inline int kp_send(struct kp_ep *e, __u64 req_id, const void *buf,
			  __u64 len, __s32 peer, __s32 tag, __u32 ctx,
			  __u32 flags, struct kprog_post *out)
{
	return kp_post(e, KPROG_IOC_SEND, req_id, buf, len, ctx, peer, tag,
		       flags, out);
}

static inline int kp_recv(struct kp_ep *e, __u64 req_id, void *buf, __u64 len,
			  __s32 peer, __s32 tag, __u32 ctx, __u32 flags,
			  struct kprog_post *out)
{
	return kp_post(e, KPROG_IOC_RECV, req_id, buf, len, ctx, peer, tag,
		       flags, out);
}

static inline int kp_recv_msg(struct kp_ep *e, __u64 req_id, void *buf,
			      __u64 len, __u64 msg_id, struct kprog_post *out)
{
	struct kprog_post p;

	memset(&p, 0, sizeof(p));
	p.req_id = req_id;
	p.addr = (__u64)(uintptr_t)buf;
	p.len = len;
	p.msg_id = msg_id;
	p.peer = 12345;		/* ignored with KPROG_RECV_MESSAGE */
	p.tag = 54321;
	p.flags = KPROG_RECV_MESSAGE;
	p.done = 0xdeadbeef;
	return kp_ioctl_out(e->fd, KPROG_IOC_RECV, &p, out, sizeof(p));
}

/*
 * Completion of a posted op: the one returned by the post if done, else
 * the ring entry (waiting at most @ms). 0 or -errno (-ETIMEDOUT).
 */
static inline int kp_complete(struct kp_ep *e, const struct kprog_post *p,
			      struct kprog_cqe *out, long long ms)
{
	if (p->done == 1) {
		*out = p->cqe;
		return 0;
	}
	if (p->done != 0)
		return -EPROTO;
	return kp_wait_cqe(e, p->req_id, out, ms);
}

static inline int kp_probe(struct kp_ep *e, __u32 ctx, __s32 src, __s32 tag,
			   __u32 flags, __u64 msg_id, struct kprog_probe *out)
{
	struct kprog_probe pr;

	memset(&pr, 0, sizeof(pr));
	pr.context = ctx;
	pr.source = src;
	pr.tag = tag;
	pr.flags = flags;
	pr.msg_id = msg_id;
	pr.found = 0xdeadbeef;
	return kp_ioctl_out(e->fd, KPROG_IOC_PROBE, &pr, out, sizeof(pr));
}

static inline int kp_cancel(struct kp_ep *e, __u64 req_id)
{
	struct kprog_cancel c = { .req_id = req_id };

	return ioctl(e->fd, KPROG_IOC_CANCEL, &c) ? -errno : 0;
}

/* Deterministic, seekable data: byte i of stream @seed. */
static inline __u64 kp_mix(__u64 x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static inline void kp_fill(void *buf, size_t len, __u64 seed, size_t off)
{
	unsigned char *p = buf;
	size_t i = 0;

	while (i < len) {
		size_t pos = off + i;
		__u64 w = kp_mix(seed ^ (pos >> 3) * 0xD1B54A32D192ED03ull);
		unsigned int b = pos & 7;

		for (; b < 8 && i < len; b++, i++)
			p[i] = (unsigned char)(w >> (8 * b));
	}
}

/* -1 if @buf holds bytes off..off+len of stream @seed, else the index. */
static inline long kp_check(const void *buf, size_t len, __u64 seed,
			    size_t off)
{
	const unsigned char *p = buf;
	size_t i = 0;

	while (i < len) {
		size_t pos = off + i;
		__u64 w = kp_mix(seed ^ (pos >> 3) * 0xD1B54A32D192ED03ull);
		unsigned int b = pos & 7;

		for (; b < 8 && i < len; b++, i++)
			if (p[i] != (unsigned char)(w >> (8 * b)))
				return (long)i;
	}
	return -1;
}

/* -1 if every byte of @buf is @c, else the index of the first other. */
static inline long kp_check_byte(const void *buf, size_t len, unsigned char c)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return (long)i;
	return -1;
}

static inline void *kp_alloc(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static inline void kp_free(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

/* Eager limit in force for a job (what JOIN reported). */
static inline __u32 kp_eager(const struct kp_ep *e)
{
	return e->j.eager_limit;
}

/* A size that surely goes by rendezvous: above the eager limit. */
static inline size_t kp_rndv_size(const struct kp_ep *e, size_t min)
{
	size_t s = (size_t)kp_eager(e) + 1;

	return s < min ? min : s;
}

/* A child's status: 0 if it exited with 0. */
static inline int kp_child_status(pid_t pid, int *status)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		return -errno;
	if (status)
		*status = st;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline const char *kp_strerr(int neg)
{
	return strerror(neg < 0 ? -neg : neg);
}

/*
 * Interrupts a thread blocked in the module after @ms, to check that sleeps
 * in the kernel return EINTR: install on_usr1 without SA_RESTART, start
 * kick_fn on a struct kicker naming the thread.
 */
static inline void on_usr1(int sig)
{
	(void)sig;
}

struct kicker {
	pthread_t target;
	int ms;
};

static inline void *kick_fn(void *arg)
{
	struct kicker *k = arg;

	usleep(k->ms * 1000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

/* Pages this process has pinned long-term (mm->pinned_vm, VmPin) in KiB, or -1. */
static inline long kp_vm_pin_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* VmPin once released pins are gone (a release may be deferred to a worker; at most 2 s). */
static inline long kp_vm_pin_settled_kib(void)
{
	int i;

	for (i = 0; i < 200 && kp_vm_pin_kib() > 0; i++)
		usleep(10000);
	return kp_vm_pin_kib();
}

#endif /* KPROG_TEST_H */
