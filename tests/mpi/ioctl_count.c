// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libioctlcount.so: preloaded next to the shim by ./run to prove that the
 * shim really drives /dev/kprog. Wraps ioctl(), counts the kprog requests
 * and prints one line at exit:
 *   kprog-ioctls rank R: send S recv R probe P cancel C wait W batches B join J
 * where R counts every receive posted, one by one or in one of B
 * KPROG_IOC_RECV_BATCH calls.
 * (R from OMPI_COMM_WORLD_RANK). Not an MPI program, needs no MPI.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/kprog.h>

static unsigned long n_join, n_send, n_recv, n_probe, n_cancel, n_wait, n_batch;
static int (*real_ioctl)(int, unsigned long, ...);

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real_ioctl)
		real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	switch (req) {
	case KPROG_IOC_JOIN: n_join++; break;
	case KPROG_IOC_SEND: n_send++; break;
	case KPROG_IOC_RECV: n_recv++; break;
	case KPROG_IOC_PROBE: n_probe++; break;
	case KPROG_IOC_CANCEL: n_cancel++; break;
	case KPROG_IOC_WAIT: n_wait++; break;
	case KPROG_IOC_RECV_BATCH: {
		struct kprog_recv_batch *b = arg;
		int rc = real_ioctl(fd, req, arg);

		n_batch++;
		n_recv += rc == 0 ? b->count : b->posted;
		return rc;
	}
	default: break;
	}
	return real_ioctl(fd, req, arg);
}

__attribute__((destructor)) static void report(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");

	if (!r)
		return;	/* mpirun itself, orted */
	fprintf(stderr, "kprog-ioctls rank %s: send %lu recv %lu probe %lu cancel %lu wait %lu batches %lu join %lu\n",
		r, n_send, n_recv, n_probe, n_cancel, n_wait, n_batch, n_join);
}
