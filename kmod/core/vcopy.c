// SPDX-License-Identifier: GPL-2.0
/*
 * kprog's bulk copy kernel: a copy of bytes between mapped pages with
 * 16-byte vector loads and stores.
 *
 * Compiled with the FPU flags, as coll_reduce.c: it holds nothing but the
 * loop, never calls the kernel, and runs only between kernel_fpu_begin()
 * and kernel_fpu_end() (umem.c, kprog_copy()) on memory that cannot fault
 * (pinned and mapped pages, or kernel memory). Why a loop of our own when
 * the kernel has memcpy(): see kprog_copy().
 */
#include <linux/types.h>
#include "umem.h"

#ifdef CONFIG_X86
typedef u8 kprog_v16 __attribute__((vector_size(16)));

/**
 * kprog_vcopy() - copy @n bytes with 16-byte vector moves
 * @dst: destination, any alignment
 * @src: source, any alignment, not overlapping @dst
 * @n: bytes
 *
 * Only between kernel_fpu_begin() and kernel_fpu_end().
 */
void kprog_vcopy(void *__restrict dst, const void *__restrict src, size_t n)
{
	kprog_v16 a, b, c, d;
	u8 *dp = dst;
	const u8 *sp = src;

	for (; n >= 64; n -= 64, sp += 64, dp += 64) {
		__builtin_memcpy(&a, sp, 16);
		__builtin_memcpy(&b, sp + 16, 16);
		__builtin_memcpy(&c, sp + 32, 16);
		__builtin_memcpy(&d, sp + 48, 16);
		__builtin_memcpy(dp, &a, 16);
		__builtin_memcpy(dp + 16, &b, 16);
		__builtin_memcpy(dp + 32, &c, 16);
		__builtin_memcpy(dp + 48, &d, 16);
	}
	for (; n >= 16; n -= 16, sp += 16, dp += 16) {
		__builtin_memcpy(&a, sp, 16);
		__builtin_memcpy(dp, &a, 16);
	}
	while (n--)
		*dp++ = *sp++;
}
#endif
