/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/kcore/ktest.h: what a test file includes. Defines TEST() and the
 * checks; see README for a template.
 *
 *   TEST(ring__full_ring_goes_to_overflow) { ... }
 *
 * runs with the module loaded (init_module() before, cleanup_module()
 * after, every open endpoint closed first) and fails if, at its end,
 * anything leaked: memory, locks, pinned pages, mm references, queued
 * work, armed timers, or a kernel error message nobody took.
 * TEST_NO_MODULE() leaves loading to the test (kt_load()).
 * TEST_MUST_ABORT() (no module) passes only if it is aborted.
 *
 * EXPECT*() report a failure and go on; ASSERT*() end the test.
 */
#ifndef KCORE_KTEST_H
#define KCORE_KTEST_H

#include "runner.h"
#include "mock.h"
#include "utils.h"

#define KT_DEFINE(name_, flags_)					\
	static void kt_fn_##name_(void);				\
	static struct kt_test kt_t_##name_ = {				\
		.name = #name_, .fn = kt_fn_##name_, .flags = flags_,	\
	};								\
	static void __attribute__((constructor)) kt_reg_##name_(void)	\
	{								\
		kt_register(&kt_t_##name_);				\
	}								\
	static void kt_fn_##name_(void)

#define TEST(name)		KT_DEFINE(name, 0)
#define TEST_NO_MODULE(name)	KT_DEFINE(name, KT_NO_MODULE)
/* A test of the infrastructure that passes only if it is aborted. */
#define TEST_MUST_ABORT(name)	KT_DEFINE(name, KT_NO_MODULE | KT_MUST_ABORT)

#define EXPECT(c) ({							\
	bool kt_ok_ = !!(c);						\
	if (!kt_ok_)							\
		kt_fail(__FILE__, __LINE__, "%s", #c);			\
	kt_ok_;								\
})

#define EXPECT_EQ(a, b) ({						\
	long long kt_a_ = (long long)(a), kt_b_ = (long long)(b);	\
	if (kt_a_ != kt_b_)						\
		kt_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld",	\
			#a, #b, kt_a_, kt_b_);				\
	kt_a_ == kt_b_;							\
})

/* @expr returns 0 or a negative errno; @err is what it should return. */
#define EXPECT_ERR(expr, err) ({					\
	long kt_r_ = (long)(expr), kt_e_ = (long)(err);			\
	if (kt_r_ != kt_e_)						\
		kt_fail(__FILE__, __LINE__, "%s: %s, expected %s",	\
			#expr, kt_errname(kt_r_), kt_errname(kt_e_));	\
	kt_r_ == kt_e_;							\
})

#define EXPECT_OK(expr)		EXPECT_ERR(expr, 0)

/* A captured kernel message contains @s (all captured ones are taken). */
#define EXPECT_PRINTK(s) ({						\
	bool kt_ok_ = mock_printk_take(s);				\
	if (!kt_ok_)							\
		kt_fail(__FILE__, __LINE__, "no kernel message with \"%s\"", s); \
	kt_ok_;								\
})

#define ASSERT(c) do {							\
	if (!(c))							\
		kt_fatal(__FILE__, __LINE__, "%s", #c);			\
} while (0)

#define ASSERT_EQ(a, b) do {						\
	if (!EXPECT_EQ(a, b))						\
		kt_fatal(__FILE__, __LINE__, "stopping here");		\
} while (0)

#define ASSERT_OK(expr) do {						\
	if (!EXPECT_OK(expr))						\
		kt_fatal(__FILE__, __LINE__, "stopping here");		\
} while (0)

/*
 * The next completion in @e's ring is for @req_id with @bytes and
 * @error (0 or a negative errno); it is consumed.
 */
#define EXPECT_CQE(e_, id_, n_, err_) ({				\
	struct kprog_cqe kt_c_;						\
	bool kt_ok_ = EXPECT(kt_pop(e_, &kt_c_));			\
	if (kt_ok_) {							\
		kt_ok_ &= EXPECT_EQ(kt_c_.req_id, id_);			\
		kt_ok_ &= EXPECT_EQ(kt_c_.bytes, n_);			\
		kt_ok_ &= EXPECT_ERR(kt_c_.error, err_);		\
	}								\
	kt_ok_;								\
})

#endif
