// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-ins for the module files that are not compiled into the unit
 * tests yet (netlink.c): main.c calls them. When one of those files gets
 * tests, add it to KMOD_SRCS in the Makefile and delete its stubs here.
 * (The benchmark module's files, kmod/bench*.c, are another module:
 * kprog.ko never calls them.)
 */
#include <linux/errno.h>
#include "kprog.h"
#include "netlink.h"
#include "stubs.h"

int kt_stub_nl_init_err;
int kt_stub_nl_inits;

int kprog_nl_init(void)
{
	if (kt_stub_nl_init_err)
		return kt_stub_nl_init_err;
	kt_stub_nl_inits++;
	return 0;
}

void kprog_nl_exit(void)
{
	kt_stub_nl_inits--;
}
