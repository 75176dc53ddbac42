/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Entry points that the kernel headers reach from inline asm with their
 * own calling conventions, forwarded to C functions in mock.c.
 *
 * put_user(): pointer in %rcx, value in %rax, error back in %ecx; only
 * %rbx and %rcx may change. get_user(): pointer in %rax, error back in
 * %eax and value in %rdx; nothing else may change. Callee-save paravirt
 * ops: only %rax may change. So every thunk saves the caller-saved
 * registers that the C ABI would clobber, and aligns the stack itself
 * (a call from inline asm may come with any alignment).
 */
	.text

.macro ALIGNED_CALL fn
	push %rbp
	mov %rsp, %rbp
	and $-16, %rsp
	call \fn
	mov %rbp, %rsp
	pop %rbp
.endm

.macro SAVE_SCRATCH
	push %rsi
	push %rdi
	push %r8
	push %r9
	push %r10
	push %r11
.endm

.macro RESTORE_SCRATCH
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
.endm

/* long mock_put_user(void *ptr, unsigned long val, int size, void *caller) */
.macro PUT_USER size
	.globl __put_user_\size
	.type __put_user_\size, @function
__put_user_\size:
	push %rax
	push %rdx
	SAVE_SCRATCH
	mov %rcx, %rdi
	mov %rax, %rsi
	mov $\size, %edx
	mov 64(%rsp), %rcx	/* our return address, above 8 saved words */
	ALIGNED_CALL mock_put_user
	mov %eax, %ecx
	RESTORE_SCRATCH
	pop %rdx
	pop %rax
	ret
	.size __put_user_\size, . - __put_user_\size
.endm

/*
 * struct { long err; unsigned long val; }
 * mock_get_user(void *ptr, int size, void *caller)
 */
.macro GET_USER size
	.globl __get_user_\size
	.type __get_user_\size, @function
__get_user_\size:
	push %rcx
	SAVE_SCRATCH
	mov %rax, %rdi
	mov $\size, %esi
	mov 56(%rsp), %rdx	/* our return address, above 7 saved words */
	ALIGNED_CALL mock_get_user	/* err in %rax, value in %rdx */
	RESTORE_SCRATCH
	pop %rcx
	ret
	.size __get_user_\size, . - __get_user_\size
.endm

PUT_USER 1
PUT_USER 2
PUT_USER 4
PUT_USER 8
GET_USER 1
GET_USER 2
GET_USER 4
GET_USER 8

/*
 * Paravirt irq ops (callee-save): the flags live in mock_irq_flags, so
 * irqs_disabled() and local_irq_save() see what the spinlock mocks did,
 * and cli/sti never run.
 */
	.globl mock_pv_save_fl
	.type mock_pv_save_fl, @function
mock_pv_save_fl:
	mov mock_irq_flags(%rip), %rax
	ret
	.size mock_pv_save_fl, . - mock_pv_save_fl

	.globl mock_pv_irq_disable
	.type mock_pv_irq_disable, @function
mock_pv_irq_disable:
	andq $~0x200, mock_irq_flags(%rip)
	ret
	.size mock_pv_irq_disable, . - mock_pv_irq_disable

	.globl mock_pv_irq_enable
	.type mock_pv_irq_enable, @function
mock_pv_irq_enable:
	orq $0x200, mock_irq_flags(%rip)
	ret
	.size mock_pv_irq_enable, . - mock_pv_irq_enable

/* Every other paravirt op: fail the test, naming the caller. */
	.globl mock_pv_unexpected
	.type mock_pv_unexpected, @function
mock_pv_unexpected:
	mov (%rsp), %rdi
	ALIGNED_CALL mock_pv_unexpected_called	/* does not return */
	ud2
	.size mock_pv_unexpected, . - mock_pv_unexpected

	.section .note.GNU-stack, "", @progbits
