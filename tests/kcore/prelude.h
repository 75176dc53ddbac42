/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Included before every file built against the kernel headers (after
 * kconfig.h), kmod sources included.
 *
 * Lockdep is off in the kernel configuration, so lockdep_assert_held()
 * compiles to nothing. Here it asks the lock mocks instead, which know
 * which locks the test's thread holds: the module's own assertions
 * (and those of kernel inline helpers, e.g. mmap_assert_locked()) are
 * checked.
 */
#ifndef KCORE_PRELUDE_H
#define KCORE_PRELUDE_H

#include <linux/lockdep.h>

void mock_assert_held(const void *lock, int mode, const char *file, int line);

#undef lockdep_assert_held
#undef lockdep_assert_held_write
#undef lockdep_assert_held_read
#undef lockdep_assert_held_once
#define lockdep_assert_held(l)		mock_assert_held(l, 0, __FILE__, __LINE__)
#define lockdep_assert_held_once(l)	mock_assert_held(l, 0, __FILE__, __LINE__)
#define lockdep_assert_held_write(l)	mock_assert_held(l, 1, __FILE__, __LINE__)
#define lockdep_assert_held_read(l)	mock_assert_held(l, 2, __FILE__, __LINE__)

#endif
