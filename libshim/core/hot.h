/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The functions of a small message's blocking send and receive, in one
 * section (.text.kp_hot), so that they sit together in a few pages of
 * the library instead of across a dozen. The build links the shim as one
 * LTO partition (Makefile), which keeps the section in one piece.
 *
 * Why: under QEMU's TCG (the test VM) a jump or call is chained from one
 * translated block to the next only within a guest page; every other one
 * goes through a lookup. Spread over the library, the fast path's speed
 * depended on where unrelated code put it: the same objects after
 * 0 .. 7 x 1040 bytes of padding gave 0.78 .. 1.30 us per 8-byte trip and
 * a wait-state profiler cost of -60 .. +360 ns per call. Together, and
 * with MPI_Recv starting a page (KP_HOT_PAGE), every padding gives the
 * same placement: 0.97 .. 1.08 us. Natively the fast path then touches
 * fewer pages of instructions, which costs nothing. Which functions to
 * add is measured, not assumed: with the progress pass of a blocking
 * receive (kp_progress() and the channel polls) in here too, the
 * compiler's arrangement read 1.24 us (docs/DESIGN.md).
 */
#ifndef KPROG_SHIM_HOT_H
#define KPROG_SHIM_HOT_H

#define KP_HOT __attribute__((section(".text.kp_hot")))
/* The section then starts a page too, whatever precedes it. */
#define KP_HOT_PAGE __attribute__((section(".text.kp_hot"), aligned(4096)))

#endif
