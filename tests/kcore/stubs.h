/* SPDX-License-Identifier: GPL-2.0 */
/* Controls of the stand-ins in stubs.c. */
#ifndef KCORE_STUBS_H
#define KCORE_STUBS_H

/* Non-zero: kprog_irq_init() / kprog_nl_init() fail with this errno. */
extern int kt_stub_irq_init_err;
extern int kt_stub_nl_init_err;
/* kprog_irq_wait() fails with this errno, or succeeds with seq 1 if 0. */
extern int kt_stub_irq_wait_err;
/* Inits minus exits: 0 when balanced. */
extern int kt_stub_irq_inits, kt_stub_nl_inits;

#endif
