// SPDX-License-Identifier: GPL-2.0
/*
 * kprog_bench: the interrupt-cost benchmark's interrupt source as a module
 * of its own, loaded only by the microbenchmarks and their selftests, so
 * that the production module kprog.ko carries none of it (least privilege
 * on shared nodes). See include/uapi/linux/kprog_bench.h.
 *
 * This file: the misc device /dev/kprog_bench, whose one call is
 * KPROG_BENCH_IOC_IRQ_WAIT, and the module's init and exit. An open file
 * holds the module (fops.owner), so an IRQ_WAIT sleeper keeps it loaded;
 * the netlink family holds it for the length of a request.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include "bench.h"

static long kprog_bench_ioc_irq_wait(void __user *uarg)
{
	struct kprog_bench_irq_wait w;
	int err;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	err = kprog_bench_irq_wait(&w);
	if (err)
		return err;
	return copy_to_user(uarg, &w, sizeof(w)) ? -EFAULT : 0;
}

static long kprog_bench_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	switch (cmd) {
	case KPROG_BENCH_IOC_IRQ_WAIT:
		return kprog_bench_ioc_irq_wait((void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations kprog_bench_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = kprog_bench_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* root's only: the benchmark runs as root (it starts the source). */
static struct miscdevice kprog_bench_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kprog_bench",
	.fops = &kprog_bench_fops,
	.mode = 0600,
};

static int __init kprog_bench_init(void)
{
	int err;

	err = kprog_bench_irq_init();
	if (err)
		return err;
	err = kprog_bench_nl_init();
	if (err)
		goto err_irq;
	/* Last: once the node exists, a file may be open, and init cannot fail. */
	err = misc_register(&kprog_bench_misc);
	if (err)
		goto err_nl;
	return 0;

err_nl:
	kprog_bench_nl_exit();
err_irq:
	kprog_bench_irq_exit();
	return err;
}

static void __exit kprog_bench_exit(void)
{
	/* No new netlink request, then no new file: nothing can restart. */
	kprog_bench_nl_exit();
	misc_deregister(&kprog_bench_misc);
	kprog_bench_irq_exit();
}

module_init(kprog_bench_init);
module_exit(kprog_bench_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kprog_bench: interrupt source of kprog's interrupt-cost microbenchmark");
MODULE_AUTHOR("kprog developers");
