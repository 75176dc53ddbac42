// SPDX-License-Identifier: GPL-2.0
/*
 * kprog: in-kernel progression of MPI point-to-point messages.
 *
 * The misc device /dev/kprog; one endpoint per open file. This file copies
 * and checks ioctl arguments and hands them to the job registry and the
 * matching core.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/log2.h>
#include "kprog.h"
#include "transport.h"
#include "irqsrc.h"
#include "stats.h"
#include "kprog_trace.h"

unsigned int kprog_eager_limit = 8192;
module_param_named(eager_limit, kprog_eager_limit, uint, 0444);
MODULE_PARM_DESC(eager_limit,
		 "Default eager limit in bytes of a job (default 8192)");

unsigned int kprog_eager_quota = 1 << 20;
module_param_named(eager_quota, kprog_eager_quota, uint, 0444);
MODULE_PARM_DESC(eager_quota,
		 "Bytes of buffered eager messages per receiving endpoint, each charged 256 bytes extra (default 1 MiB)");

unsigned int kprog_max_ops = 16384;
module_param_named(max_ops, kprog_max_ops, uint, 0444);
MODULE_PARM_DESC(max_ops,
		 "Operations an endpoint may have posted or held back (default 16384)");

unsigned int kprog_max_iov = 1024;
module_param_named(max_iov, kprog_max_iov, uint, 0444);
MODULE_PARM_DESC(max_iov, "Most kprog_iov entries per post (default 1024)");

unsigned int kprog_max_iov_total = 65536;
module_param_named(max_iov_total, kprog_max_iov_total, uint, 0444);
MODULE_PARM_DESC(max_iov_total,
		 "kprog_iov entries held by an endpoint's operations, >= max_iov (default 65536, 1 MiB)");

unsigned int kprog_ring_entries = 1024;
module_param_named(ring_entries, kprog_ring_entries, uint, 0444);
MODULE_PARM_DESC(ring_entries,
		 "Completion ring slots per endpoint, a power of two (default 1024)");

unsigned int kprog_max_job_size = 4096;
module_param_named(max_job_size, kprog_max_job_size, uint, 0444);
MODULE_PARM_DESC(max_job_size, "Most ranks in a job (default 4096)");

static const struct kprog_transport *const kprog_transports[] = {
	&kprog_xport_shm,
};

static int kprog_open(struct inode *inode, struct file *file)
{
	struct kprog_ep *ep = kprog_ep_alloc();

	if (!ep)
		return -ENOMEM;
	file->private_data = ep;
	return 0;
}

static int kprog_release(struct inode *inode, struct file *file)
{
	struct kprog_ep *ep = file->private_data;

	if (kprog_ep_job(ep))
		kprog_job_leave(ep);
	kprog_ep_put(ep);
	return 0;
}

static long kprog_ioc_join(struct kprog_ep *ep, void __user *uarg)
{
	struct kprog_join j;
	int err;

	if (copy_from_user(&j, uarg, sizeof(j)))
		return -EFAULT;
	/* Fail on an unwritable argument before joining, not after. */
	if (copy_to_user(uarg, &j, sizeof(j)))
		return -EFAULT;
	err = kprog_job_join(ep, &j);
	if (err)
		return err;
	if (copy_to_user(uarg, &j, sizeof(j)))
		return -EFAULT;
	return 0;
}

static long kprog_ioc_post(struct kprog_ep *ep, void __user *uarg,
			   bool is_send)
{
	struct kprog_post __user *up = uarg;
	struct kprog_post p;
	int err;

	if (copy_from_user(&p, up, sizeof(p)))
		return -EFAULT;
	/* The result must be deliverable before anything is posted. */
	if (put_user(0U, &up->done))
		return -EFAULT;
	err = is_send ? kprog_send(ep, &p) : kprog_recv(ep, &p);
	if (err)
		return err;
	if (p.done) {
		kprog_stat_add(KPROG_STAT_EVENTS, 1);
		trace_kprog_complete(ep, &p.cqe, KPROG_WHERE_INLINE);
	}
	if (copy_to_user(&up->done, &p.done, sizeof(p.done)) ||
	    copy_to_user(&up->cqe, &p.cqe, sizeof(p.cqe)))
		return -EFAULT;
	return 0;
}

static long kprog_ioc_probe(struct kprog_ep *ep, void __user *uarg)
{
	struct kprog_probe pr;
	int err;

	if (copy_from_user(&pr, uarg, sizeof(pr)))
		return -EFAULT;
	if (copy_to_user(uarg, &pr, sizeof(pr)))
		return -EFAULT;
	err = kprog_probe(ep, &pr);
	if (err)
		return err;
	if (copy_to_user(uarg, &pr, sizeof(pr)))
		return -EFAULT;
	return 0;
}

static long kprog_ioc_irq_wait(void __user *uarg)
{
	struct kprog_irq_wait w;
	int err;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	err = kprog_irq_wait(&w);
	if (err)
		return err;
	if (copy_to_user(uarg, &w, sizeof(w)))
		return -EFAULT;
	return 0;
}

static long kprog_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	struct kprog_ep *ep = file->private_data;
	void __user *uarg = (void __user *)arg;
	struct kprog_cancel cancel;
	struct kprog_wait wait;

	switch (cmd) {
	case KPROG_IOC_VERSION:
		return put_user((u32)KPROG_ABI_VERSION, (u32 __user *)uarg);
	case KPROG_IOC_JOIN:
		return kprog_ioc_join(ep, uarg);
	case KPROG_IOC_IRQ_WAIT:
		return kprog_ioc_irq_wait(uarg);
	case KPROG_IOC_SEND:
	case KPROG_IOC_RECV:
	case KPROG_IOC_PROBE:
	case KPROG_IOC_CANCEL:
	case KPROG_IOC_WAIT:
		break;
	default:
		return -ENOTTY;
	}
	if (!kprog_ep_job(ep))
		return -EBADFD;

	kprog_ring_flush(ep);
	switch (cmd) {
	case KPROG_IOC_SEND:
		return kprog_ioc_post(ep, uarg, true);
	case KPROG_IOC_RECV:
		return kprog_ioc_post(ep, uarg, false);
	case KPROG_IOC_PROBE:
		return kprog_ioc_probe(ep, uarg);
	case KPROG_IOC_CANCEL:
		if (copy_from_user(&cancel, uarg, sizeof(cancel)))
			return -EFAULT;
		return kprog_cancel(ep, cancel.req_id);
	default: /* KPROG_IOC_WAIT */
		if (copy_from_user(&wait, uarg, sizeof(wait)))
			return -EFAULT;
		return kprog_ring_wait(ep, wait.timeout_ns);
	}
}

static int kprog_mmap(struct file *file, struct vm_area_struct *vma)
{
	return kprog_ring_mmap(file->private_data, vma);
}

static __poll_t kprog_poll(struct file *file, poll_table *wait)
{
	return kprog_ring_poll(file->private_data, file, wait);
}

static const struct file_operations kprog_fops = {
	.owner = THIS_MODULE,
	.open = kprog_open,
	.release = kprog_release,
	.unlocked_ioctl = kprog_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kprog_mmap,
	.poll = kprog_poll,
	.llseek = noop_llseek,
};

static struct miscdevice kprog_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kprog",
	.fops = &kprog_fops,
	.mode = 0666,
};

static int kprog_check_params(void)
{
	if (!kprog_ring_entries || !is_power_of_2(kprog_ring_entries) ||
	    kprog_ring_entries > (1U << 20)) {
		pr_err("kprog: ring_entries must be a power of two <= 1048576\n");
		return -EINVAL;
	}
	if (kprog_eager_quota <= KPROG_EAGER_OVERHEAD ||
	    kprog_eager_quota > (1U << 30)) {
		pr_err("kprog: eager_quota must be in (%u, 1 GiB]\n",
		       KPROG_EAGER_OVERHEAD);
		return -EINVAL;
	}
	if (kprog_eager_limit > (64U << 20)) {
		pr_err("kprog: eager_limit must be <= 64 MiB\n");
		return -EINVAL;
	}
	if (!kprog_max_ops || kprog_max_ops > (1U << 20)) {
		pr_err("kprog: max_ops must be in [1, 1048576]\n");
		return -EINVAL;
	}
	if (!kprog_max_iov || kprog_max_iov > 65536) {
		pr_err("kprog: max_iov must be in [1, 65536]\n");
		return -EINVAL;
	}
	if (kprog_max_iov_total < kprog_max_iov ||
	    kprog_max_iov_total > (1U << 24)) {
		pr_err("kprog: max_iov_total must be in [max_iov, 16777216]\n");
		return -EINVAL;
	}
	if (!kprog_max_job_size || kprog_max_job_size > (1U << 20)) {
		pr_err("kprog: max_job_size must be in [1, 1048576]\n");
		return -EINVAL;
	}
	return 0;
}

static void kprog_transports_exit(int n)
{
	while (n--)
		if (kprog_transports[n]->exit)
			kprog_transports[n]->exit();
}

static int __init kprog_init(void)
{
	int i, err;

	err = kprog_check_params();
	if (err)
		return err;
	err = kprog_ep_init();
	if (err)
		return err;
	for (i = 0; i < ARRAY_SIZE(kprog_transports); i++) {
		if (!kprog_transports[i]->init)
			continue;
		err = kprog_transports[i]->init();
		if (err)
			goto err_xport;
	}
	err = kprog_irq_init();
	if (err)
		goto err_xport;
	kprog_stats_debugfs_init();
	err = misc_register(&kprog_misc);
	if (err)
		goto err_irq;
	err = kprog_nl_init();
	if (err)
		goto err_misc;
	return 0;

err_misc:
	misc_deregister(&kprog_misc);
err_irq:
	kprog_stats_debugfs_exit();
	kprog_irq_exit();
err_xport:
	kprog_transports_exit(i);
	kprog_ep_exit();
	return err;
}

static void __exit kprog_exit(void)
{
	/* No new netlink request, then no new file: nothing can restart. */
	kprog_nl_exit();
	misc_deregister(&kprog_misc);
	kprog_stats_debugfs_exit();
	kprog_irq_exit();
	/* Transfers may still run after the last close; they free into ep. */
	kprog_transports_exit(ARRAY_SIZE(kprog_transports));
	kprog_ep_exit();
}

module_init(kprog_init);
module_exit(kprog_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kprog: in-kernel progression of MPI point-to-point messages");
MODULE_AUTHOR("kprog developers");
