// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-ins for the module files that are not compiled into the unit
 * tests yet (irqsrc.c, netlink.c): main.c calls them. When one of those
 * files gets tests, add it to KMOD_SRCS in the Makefile and delete its
 * stubs here.
 */
#include <linux/errno.h>
#include "kprog.h"
#include "irqsrc.h"
#include "stubs.h"

int kt_stub_irq_init_err;
int kt_stub_irq_wait_err;
int kt_stub_nl_init_err;
int kt_stub_irq_inits, kt_stub_nl_inits;

int kprog_irq_init(void)
{
	if (kt_stub_irq_init_err)
		return kt_stub_irq_init_err;
	kt_stub_irq_inits++;
	return 0;
}

void kprog_irq_exit(void)
{
	kt_stub_irq_inits--;
}

int kprog_irq_wait(struct kprog_irq_wait *w)
{
	if (kt_stub_irq_wait_err)
		return kt_stub_irq_wait_err;
	w->seq = 1;
	return 0;
}

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
