// SPDX-License-Identifier: GPL-2.0
/*
 * kprog reduction kernels of KPROG_STEP_REDUCE: dst[i] = src[i] op dst[i]
 * on kernel buffers, for every (type, operation) MPI defines on the
 * predefined types of enum kprog_dtype.
 *
 * This file is compiled with the compiler's floating point and vector
 * code allowed (Kbuild: the FPU flags, as lib/test_fpu.c): it holds
 * nothing but arithmetic, never calls the kernel, and its functions run
 * only between kernel_fpu_begin() and kernel_fpu_end() (coll.c), on data
 * already copied in, so nothing can fault or sleep in there. Elsewhere
 * than on x86 the kernel has no such flags here: only integer types.
 */
#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/bits.h>
#include <linux/kprog.h>
#include "coll.h"

/* The pair types of MPI_MINLOC / MPI_MAXLOC, laid out as C lays them out. */
struct kprog_pair_float_int { float v; s32 i; };
struct kprog_pair_double_int { double v; s32 i; };
struct kprog_pair_long_int { s64 v; s32 i; };
struct kprog_pair_2int { s32 v; s32 i; };
struct kprog_pair_short_int { s16 v; s32 i; };

/* One element loop; @a, @b, @i and @n are the kernel's locals. */
#define KPROG_RED_EACH(expr)						\
	do {								\
		for (i = 0; i < n; i++)					\
			b[i] = (expr);					\
	} while (0)

/*
 * Integer types, all but MINLOC/MAXLOC (MPI: C integer, Logical, Byte).
 * Sums and products are carried out in u64 and truncated, so that signed
 * ones wrap as two's complement, as MPI implementations' do in practice,
 * with no undefined behaviour. (The type argument is named `type`:
 * checkpatch knows a type cannot be parenthesised.)
 */
#define KPROG_RED_INT(sfx, type)					\
static void kprog_red_##sfx(u32 op, void *__restrict dst,		\
			    const void *__restrict src, size_t n)	\
{									\
	const type *a = src;						\
	type *b = dst;							\
	size_t i;							\
									\
	switch (op) {							\
	case KPROG_OP_SUM:						\
		KPROG_RED_EACH((type)((u64)a[i] + (u64)b[i]));			\
		break;							\
	case KPROG_OP_PROD:						\
		KPROG_RED_EACH((type)((u64)a[i] * (u64)b[i]));			\
		break;							\
	case KPROG_OP_MIN:						\
		KPROG_RED_EACH(a[i] < b[i] ? a[i] : b[i]);		\
		break;							\
	case KPROG_OP_MAX:						\
		KPROG_RED_EACH(a[i] > b[i] ? a[i] : b[i]);		\
		break;							\
	case KPROG_OP_LAND:						\
		KPROG_RED_EACH(a[i] && b[i]);				\
		break;							\
	case KPROG_OP_LOR:						\
		KPROG_RED_EACH(a[i] || b[i]);				\
		break;							\
	case KPROG_OP_LXOR:						\
		KPROG_RED_EACH(!a[i] != !b[i]);				\
		break;							\
	case KPROG_OP_BAND:						\
		KPROG_RED_EACH(a[i] & b[i]);				\
		break;							\
	case KPROG_OP_BOR:						\
		KPROG_RED_EACH(a[i] | b[i]);				\
		break;							\
	case KPROG_OP_BXOR:						\
		KPROG_RED_EACH(a[i] ^ b[i]);				\
		break;							\
	}								\
}

/* Floating point: no bitwise operations (MPI). */
#define KPROG_RED_FLOAT(sfx, type)						\
static void kprog_red_##sfx(u32 op, void *__restrict dst,		\
			    const void *__restrict src, size_t n)	\
{									\
	const type *a = src;						\
	type *b = dst;							\
	size_t i;							\
									\
	switch (op) {							\
	case KPROG_OP_SUM:						\
		KPROG_RED_EACH(a[i] + b[i]);				\
		break;							\
	case KPROG_OP_PROD:						\
		KPROG_RED_EACH(a[i] * b[i]);				\
		break;							\
	case KPROG_OP_MIN:						\
		KPROG_RED_EACH(a[i] < b[i] ? a[i] : b[i]);		\
		break;							\
	case KPROG_OP_MAX:						\
		KPROG_RED_EACH(a[i] > b[i] ? a[i] : b[i]);		\
		break;							\
	case KPROG_OP_LAND:						\
		KPROG_RED_EACH(a[i] && b[i]);				\
		break;							\
	case KPROG_OP_LOR:						\
		KPROG_RED_EACH(a[i] || b[i]);				\
		break;							\
	case KPROG_OP_LXOR:						\
		KPROG_RED_EACH(!a[i] != !b[i]);				\
		break;							\
	}								\
}

/* MPI_MINLOC / MPI_MAXLOC; MPI's tie rule: equal values keep the lower index. */
#define KPROG_RED_LOC(sfx, type)						\
static void kprog_red_##sfx(u32 op, void *__restrict dst,		\
			    const void *__restrict src, size_t n)	\
{									\
	bool max = op == KPROG_OP_MAXLOC;				\
	const type *a = src;						\
	type *b = dst;							\
	size_t i;							\
									\
	for (i = 0; i < n; i++) {					\
		if (max ? a[i].v > b[i].v : a[i].v < b[i].v)		\
			b[i] = a[i];					\
		else if (a[i].v == b[i].v && a[i].i < b[i].i)		\
			b[i].i = a[i].i;				\
	}								\
}

KPROG_RED_INT(s8, s8)
KPROG_RED_INT(u8, u8)
KPROG_RED_INT(s16, s16)
KPROG_RED_INT(u16, u16)
KPROG_RED_INT(s32, s32)
KPROG_RED_INT(u32, u32)
KPROG_RED_INT(s64, s64)
KPROG_RED_INT(u64, u64)
#ifdef CONFIG_X86
KPROG_RED_FLOAT(flt, float)
KPROG_RED_FLOAT(dbl, double)
KPROG_RED_LOC(fi, struct kprog_pair_float_int)
KPROG_RED_LOC(di, struct kprog_pair_double_int)
#endif
KPROG_RED_LOC(li, struct kprog_pair_long_int)
KPROG_RED_LOC(ii, struct kprog_pair_2int)
KPROG_RED_LOC(si, struct kprog_pair_short_int)

/* C _Bool holds 0 or 1: the logical operations of u8 are its (MPI: no others). */
#define kprog_red_bool kprog_red_u8

typedef void (*kprog_red_fn)(u32 op, void *dst, const void *src, size_t n);

#define KPROG_OPS_INT	(BIT(KPROG_OP_SUM) | BIT(KPROG_OP_PROD) |	\
			 BIT(KPROG_OP_MIN) | BIT(KPROG_OP_MAX) |	\
			 BIT(KPROG_OP_LAND) | BIT(KPROG_OP_LOR) |	\
			 BIT(KPROG_OP_LXOR) | BIT(KPROG_OP_BAND) |	\
			 BIT(KPROG_OP_BOR) | BIT(KPROG_OP_BXOR))
#define KPROG_OPS_FLOAT	(KPROG_OPS_INT & ~(BIT(KPROG_OP_BAND) |	\
			 BIT(KPROG_OP_BOR) | BIT(KPROG_OP_BXOR)))
#define KPROG_OPS_BOOL	(BIT(KPROG_OP_LAND) | BIT(KPROG_OP_LOR) |	\
			 BIT(KPROG_OP_LXOR))
#define KPROG_OPS_LOC	(BIT(KPROG_OP_MINLOC) | BIT(KPROG_OP_MAXLOC))

/**
 * struct kprog_red_type - a reduction type
 * @fn: its kernel (NULL: the type is unknown, or not on this architecture)
 * @ops: the operations MPI defines on it, a bit per enum kprog_redop
 * @size: element size in bytes
 */
struct kprog_red_type {
	kprog_red_fn fn;
	u16 ops;
	u8 size;
};

#define KPROG_RED_TYPE(sfx, set, T) { kprog_red_##sfx, set, sizeof(T) }

static const struct kprog_red_type kprog_red_types[__KPROG_DT_MAX] = {
	[KPROG_DT_INT8] = KPROG_RED_TYPE(s8, KPROG_OPS_INT, s8),
	[KPROG_DT_UINT8] = KPROG_RED_TYPE(u8, KPROG_OPS_INT, u8),
	[KPROG_DT_INT16] = KPROG_RED_TYPE(s16, KPROG_OPS_INT, s16),
	[KPROG_DT_UINT16] = KPROG_RED_TYPE(u16, KPROG_OPS_INT, u16),
	[KPROG_DT_INT32] = KPROG_RED_TYPE(s32, KPROG_OPS_INT, s32),
	[KPROG_DT_UINT32] = KPROG_RED_TYPE(u32, KPROG_OPS_INT, u32),
	[KPROG_DT_INT64] = KPROG_RED_TYPE(s64, KPROG_OPS_INT, s64),
	[KPROG_DT_UINT64] = KPROG_RED_TYPE(u64, KPROG_OPS_INT, u64),
#ifdef CONFIG_X86
	[KPROG_DT_FLOAT] = KPROG_RED_TYPE(flt, KPROG_OPS_FLOAT, float),
	[KPROG_DT_DOUBLE] = KPROG_RED_TYPE(dbl, KPROG_OPS_FLOAT, double),
	[KPROG_DT_FLOAT_INT] = KPROG_RED_TYPE(fi, KPROG_OPS_LOC,
					      struct kprog_pair_float_int),
	[KPROG_DT_DOUBLE_INT] = KPROG_RED_TYPE(di, KPROG_OPS_LOC,
					       struct kprog_pair_double_int),
#endif
	[KPROG_DT_BOOL] = KPROG_RED_TYPE(bool, KPROG_OPS_BOOL, u8),
	[KPROG_DT_LONG_INT] = KPROG_RED_TYPE(li, KPROG_OPS_LOC,
					     struct kprog_pair_long_int),
	[KPROG_DT_2INT] = KPROG_RED_TYPE(ii, KPROG_OPS_LOC,
					 struct kprog_pair_2int),
	[KPROG_DT_SHORT_INT] = KPROG_RED_TYPE(si, KPROG_OPS_LOC,
					      struct kprog_pair_short_int),
};

/* The sizes the uapi header promises. */
static_assert(sizeof(struct kprog_pair_float_int) == 8);
static_assert(sizeof(struct kprog_pair_double_int) == 16);
static_assert(sizeof(struct kprog_pair_long_int) == 16);
static_assert(sizeof(struct kprog_pair_2int) == 8);
static_assert(sizeof(struct kprog_pair_short_int) == 8);

/**
 * kprog_reduce_size() - element size of a reduction MPI defines
 * @dtype: enum kprog_dtype
 * @op: enum kprog_redop
 *
 * No floating point: callable anywhere.
 *
 * Return: the size in bytes (it divides PAGE_SIZE), or 0 when @dtype or
 * @op is unknown or MPI defines no such reduction.
 */
u32 kprog_reduce_size(u32 dtype, u32 op)
{
	if (!dtype || dtype >= __KPROG_DT_MAX || !op || op >= __KPROG_OP_MAX ||
	    !kprog_red_types[dtype].fn ||
	    !(kprog_red_types[dtype].ops & BIT(op)))
		return 0;
	return kprog_red_types[dtype].size;
}

/**
 * kprog_reduce_apply() - @dst[i] = @src[i] (op) @dst[i]
 * @dtype: enum kprog_dtype, checked with kprog_reduce_size()
 * @op: enum kprog_redop, checked likewise
 * @dst: kernel buffer of @n elements
 * @src: kernel buffer of @n elements, not overlapping @dst
 * @n: elements
 *
 * Only between kernel_fpu_begin() and kernel_fpu_end().
 */
void kprog_reduce_apply(u32 dtype, u32 op, void *dst, const void *src,
			size_t n)
{
	kprog_red_types[dtype].fn(op, dst, src, n);
}
