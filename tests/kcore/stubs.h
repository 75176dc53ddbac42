/* SPDX-License-Identifier: GPL-2.0 */
/* Controls of the stand-ins in stubs.c. */
#ifndef KCORE_STUBS_H
#define KCORE_STUBS_H

/* Non-zero: kprog_nl_init() fails with this errno. */
extern int kt_stub_nl_init_err;
/* Inits minus exits: 0 when balanced. */
extern int kt_stub_nl_inits;

#endif
