// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_ib's test of the pinned-page charge alone (RLIMIT_MEMLOCK and
 * pinned_vm), with the helpers and fixture of kprog_ib.c: the harness
 * cannot pick one test, and the whole of kprog_ib takes long under
 * emulation. In the VM with soft-RoCE:
 *   scripts/vm-run --rxe -- env SELFTESTS=kprog_ib_limits tests/selftests/run
 */
#define KPROG_IB_ONLY_LIMITS
#include "kprog_ib.c"
