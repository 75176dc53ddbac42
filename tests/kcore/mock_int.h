/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/kcore/mock_int.h: what the mock_*.c files share among themselves
 * (not for tests: they use mock.h).
 */
#ifndef KCORE_MOCK_INT_H
#define KCORE_MOCK_INT_H

#include <linux/types.h>
#include <linux/gfp.h>

/*
 * The C library, declared by hand: its headers clash with the kernel's.
 * (memcpy, vsnprintf and friends are declared by the kernel headers with
 * the same prototypes as libc's.)
 */
extern void *malloc(size_t size);
extern void *calloc(size_t nmemb, size_t size);
extern void *realloc(void *ptr, size_t size);
extern void *aligned_alloc(size_t alignment, size_t size);
extern void free(void *ptr);
extern int printf(const char *fmt, ...);
extern int mincore(void *addr, size_t length, unsigned char *vec);
extern void *mmap(void *addr, size_t length, int prot, int flags, int fd,
		  long offset);
extern int munmap(void *addr, size_t length);
/* AddressSanitizer's symbolizer names the callers in failure messages. */
extern void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *buf,
				     size_t size);

/* The return address of the mocked function: where the kernel code is. */
#define CALLER __builtin_return_address(0)

/* mock.c: failure reports at the source line of @pc, masks */
const char *mock_where(void *pc, char *buf, size_t size);
void mock_fail_at(void *pc, const char *fmt, ...) __printf(2, 3);
void mock_fatal_at(void *pc, const char *fmt, ...) __printf(2, 3) __noreturn;
bool mock_check_error(u64 *mask);
/* What the checks after a test find. */
#define mock_fail_after(fmt, ...) \
	kt_fail("after the test", 0, fmt, ##__VA_ARGS__)

/* mock_lock.c */
extern unsigned long mock_irq_flags;
bool mock_lock_is_held(const void *lock);
bool mock_in_atomic(void);
void mock_might_sleep(void *pc, const char *what);
void mock_check_context(const char *who, void *fn);
void mock_lock_check(void);
void mock_lock_forget(void);

/* mock_mem.c */
enum mock_kind { MOCK_KMALLOC, MOCK_KVMALLOC, MOCK_VMALLOC, MOCK_VMALLOC_USER };
#define KFREE_KINDS	(1U << MOCK_KMALLOC)
#define VFREE_KINDS	((1U << MOCK_VMALLOC) | (1U << MOCK_VMALLOC_USER))
#define KVFREE_KINDS	(KFREE_KINDS | VFREE_KINDS | (1U << MOCK_KVMALLOC))
void *mock_alloc(size_t size, gfp_t flags, enum mock_kind kind, void *pc);
void mock_free(const void *p, unsigned int kinds, const char *fn, void *pc);
/* The size of a vmalloc_user() block at @p, 0 if it is none. */
size_t mock_vmalloc_user_size(const void *p);
void mock_mem_check(void);
void mock_mem_forget(void);

/* mock_mm.c */
bool mock_uaddr_bad(unsigned long a, unsigned long n);
void mock_mm_check(void);

/* mock_sched.c */
extern struct mock_proc *mock_kworker;
void mock_memcg_forget(void);
void mock_sched_reset(void);
void mock_sched_check(void);
void mock_sched_forget(void);

/* mock_work.c */
void mock_work_timers(void);
void mock_work_check(void);
void mock_work_forget(void);

/* mock_lib.c */
void mock_lib_reset(void);

/* mock_ib.c */
void mock_ib_reset(void);
void mock_ib_check(void);
void mock_ib_forget(void);

/* mock_dev.c */
void mock_dev_reset(void);
void mock_dev_check(void);
void mock_dev_forget(void);

#endif
