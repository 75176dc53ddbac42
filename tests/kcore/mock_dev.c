// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/mock_dev.c: printk, the misc device, debugfs, seq_file and
 * module glue (see mock.c).
 */
#include <linux/printk.h>
#include <linux/miscdevice.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

/* ---------------------------------------------------------------------
 * Kernel messages
 */
char mock_printk_buf[16384];
static size_t printk_len;
static int printk_errors;

/* Every message gets through: tests see each one. */
int ___ratelimit(struct ratelimit_state *rs, const char *func)
{
	return 1;
}

int _printk(const char *fmt, ...)
{
	int level = MESSAGE_LOGLEVEL_DEFAULT;
	char line[1024];
	va_list ap;
	int n;

	if (fmt[0] == KERN_SOH_ASCII && fmt[1]) {
		if (fmt[1] >= '0' && fmt[1] <= '7')
			level = fmt[1] - '0';
		fmt += 2;
	}
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (level <= LOGLEVEL_ERR)
		printk_errors++;
	if (kt_verbose)
		printf("  printk <%d>%s%s", level, line,
		       n && line[strlen(line) - 1] == '\n' ? "" : "\n");
	snprintf(mock_printk_buf + printk_len,
		 sizeof(mock_printk_buf) - printk_len, "<%d>%s%s", level, line,
		 n && line[strlen(line) - 1] == '\n' ? "" : "\n");
	printk_len = strlen(mock_printk_buf);
	return n;
}

bool mock_printk_take(const char *s)
{
	bool found = strstr(mock_printk_buf, s);

	mock_printk_clear();
	return found;
}

void mock_printk_clear(void)
{
	mock_printk_buf[0] = 0;
	printk_len = 0;
	printk_errors = 0;
}

/* ---------------------------------------------------------------------
 * Devices: misc, debugfs, seq_file, module parameters
 */
struct miscdevice *mock_miscdev;

int misc_register(struct miscdevice *misc)
{
	if (mock_check_error(&mock_misc_register_errors))
		return -EBUSY;
	if (mock_miscdev)
		mock_fail_at(CALLER, "misc_register(): %s is registered already",
			     mock_miscdev->name);
	if (misc->minor == MISC_DYNAMIC_MINOR)
		misc->minor = 123;
	mock_miscdev = misc;
	return 0;
}

void misc_deregister(struct miscdevice *misc)
{
	if (misc != mock_miscdev)
		mock_fail_at(CALLER, "misc_deregister() of a device not registered");
	mock_miscdev = NULL;
}

long compat_ptr_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return file->f_op->unlocked_ioctl(file, cmd,
					  (unsigned long)compat_ptr(arg));
}

loff_t noop_llseek(struct file *file, loff_t offset, int whence)
{
	return file->f_pos;
}

const struct kernel_param_ops param_ops_uint;
const struct kernel_param_ops param_ops_charp;
const struct kernel_param_ops param_ops_int;
const struct kernel_param_ops param_ops_bool;

/* A writable parameter with bounds (kprog_ib's send_signal). */
int param_set_uint_minmax(const char *val, const struct kernel_param *kp,
			  unsigned int min, unsigned int max)
{
	unsigned long v = 0;
	const char *s;

	if (!*val || *val == '\n')
		return -EINVAL;
	for (s = val; *s && *s != '\n'; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -EINVAL;
	}
	if (v < min)
		return -EINVAL;
	*(unsigned int *)kp->arg = v;
	return 0;
}

int param_get_uint(char *buffer, const struct kernel_param *kp)
{
	return snprintf(buffer, 4096, "%u\n", *(unsigned int *)kp->arg);
}
struct module __this_module = { .name = "kprog" };

/*
 * Module references (a network transport's module, held by the jobs that
 * use it): counted per module; mock_module_going makes try_module_get()
 * fail as for a module being unloaded. Every reference must be dropped
 * by the end of a test.
 */
int mock_module_refs;
bool mock_module_going;

bool try_module_get(struct module *module)
{
	if (!module)
		return true;
	if (mock_module_going)
		return false;
	mock_module_refs++;
	return true;
}

void module_put(struct module *module)
{
	if (!module)
		return;
	if (mock_module_refs <= 0)
		mock_fail_at(CALLER, "module_put() without a reference");
	mock_module_refs--;
}

/* debugfs entries, as a flat table; a dentry is a pointer into it. */
static struct mock_dentry {
	char name[32];
	const struct file_operations *fops;
	struct mock_dentry *parent;
	bool used;
} dentries[16];

static struct dentry *dentry_new(const char *name, struct dentry *parent,
				 const struct file_operations *fops)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(dentries); i++) {
		if (dentries[i].used)
			continue;
		snprintf(dentries[i].name, sizeof(dentries[i].name), "%s", name);
		dentries[i].fops = fops;
		dentries[i].parent = (struct mock_dentry *)parent;
		dentries[i].used = true;
		return (struct dentry *)&dentries[i];
	}
	kt_fatal(__FILE__, __LINE__, "too many debugfs entries");
}

struct dentry *debugfs_create_dir(const char *name, struct dentry *parent)
{
	return dentry_new(name, parent, NULL);
}

struct dentry *debugfs_create_file(const char *name, umode_t mode,
				   struct dentry *parent, void *data,
				   const struct file_operations *fops)
{
	return dentry_new(name, parent, fops);
}

void debugfs_remove(struct dentry *dentry)
{
	struct mock_dentry *d = (struct mock_dentry *)dentry;
	int i;

	if (IS_ERR_OR_NULL(dentry))
		return;
	for (i = 0; i < ARRAY_SIZE(dentries); i++)
		if (dentries[i].used && dentries[i].parent == d)
			debugfs_remove((struct dentry *)&dentries[i]);
	d->used = false;
}

const struct file_operations *mock_debugfs_fops(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(dentries); i++)
		if (dentries[i].used && !strcmp(dentries[i].name, name))
			return dentries[i].fops;
	return NULL;
}

int seq_open(struct file *file, const struct seq_operations *op)
{
	struct seq_file *m = mock_alloc(sizeof(*m), GFP_KERNEL | __GFP_ZERO,
					MOCK_KMALLOC, CALLER);

	if (!m)
		return -ENOMEM;
	m->op = op;
	m->file = file;
	file->private_data = m;
	return 0;
}

static void seq_append(struct seq_file *m, const char *s, size_t n)
{
	if (m->count + n + 1 > m->size) {
		m->size = max(2 * m->size, m->count + n + 1);
		m->buf = realloc(m->buf, m->size);
		if (!m->buf)
			kt_fatal(__FILE__, __LINE__, "out of memory");
	}
	memcpy(m->buf + m->count, s, n);
	m->count += n;
	m->buf[m->count] = 0;
}

void seq_printf(struct seq_file *m, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	seq_append(m, buf, strlen(buf));
}

void seq_puts(struct seq_file *m, const char *s)
{
	seq_append(m, s, strlen(s));
}

void seq_putc(struct seq_file *m, char c)
{
	seq_append(m, &c, 1);
}

/* Produces the whole text at once, then hands out the part asked for. */
ssize_t seq_read(struct file *file, char __user *buf, size_t size,
		 loff_t *ppos)
{
	struct seq_file *m = file->private_data;
	loff_t pos = 0;
	void *p;

	m->count = 0;
	p = m->op->start(m, &pos);
	while (p && !IS_ERR(p)) {
		m->op->show(m, p);
		p = m->op->next(m, p, &pos);
	}
	m->op->stop(m, p);
	if (*ppos >= m->count)
		return 0;
	size = min_t(size_t, size, m->count - *ppos);
	if (copy_to_user(buf, m->buf + *ppos, size))
		return -EFAULT;
	*ppos += size;
	return size;
}

loff_t seq_lseek(struct file *file, loff_t offset, int whence)
{
	return 0;
}

int seq_release(struct inode *inode, struct file *file)
{
	struct seq_file *m = file->private_data;

	free(m->buf);
	mock_free(m, KFREE_KINDS, "seq_release", CALLER);
	return 0;
}

/* single_open(): one show() call; its seq_operations allocated as the kernel's are. */
static void *mock_single_start(struct seq_file *p, loff_t *pos)
{
	return *pos ? NULL : SEQ_START_TOKEN;
}

static void *mock_single_next(struct seq_file *p, void *v, loff_t *pos)
{
	++*pos;
	return NULL;
}

static void mock_single_stop(struct seq_file *p, void *v)
{
}

int single_open(struct file *file, int (*show)(struct seq_file *, void *),
		void *data)
{
	struct seq_operations *op = mock_alloc(sizeof(*op), GFP_KERNEL,
					       MOCK_KMALLOC, CALLER);
	int err;

	if (!op)
		return -ENOMEM;
	op->start = mock_single_start;
	op->next = mock_single_next;
	op->stop = mock_single_stop;
	op->show = show;
	err = seq_open(file, op);
	if (err) {
		mock_free(op, KFREE_KINDS, "single_open", CALLER);
		return err;
	}
	((struct seq_file *)file->private_data)->private = data;
	return 0;
}

int single_release(struct inode *inode, struct file *file)
{
	const struct seq_operations *op =
		((struct seq_file *)file->private_data)->op;

	seq_release(inode, file);
	mock_free(op, KFREE_KINDS, "single_release", CALLER);
	return 0;
}

char *mock_seq_read_all(const struct file_operations *fops)
{
	struct inode *inode = calloc(1, sizeof(*inode));
	struct file *file = calloc(1, sizeof(*file));
	size_t size = 1 << 16;
	char *text = calloc(1, size);
	loff_t pos = 0;
	ssize_t n = -1;

	if (!inode || !file || !text)
		kt_fatal(__FILE__, __LINE__, "out of memory");
	file->f_op = fops;
	if (!fops->open(inode, file)) {
		n = fops->read(file, (char __user *)text, size - 1, &pos);
		fops->release(inode, file);
	}
	free(inode);
	free(file);
	if (n < 0) {
		free(text);
		return NULL;
	}
	return text;
}

void mock_free_text(char *s)
{
	free(s);
}

void mock_dev_reset(void)
{
	mock_printk_clear();
	mock_remap_addr = NULL;
	mock_module_going = false;
}

void mock_dev_check(void)
{
	int i;

	if (mock_miscdev)
		mock_fail_after("misc device left registered");
	if (mock_module_refs)
		mock_fail_after("%d module reference(s) not dropped",
				mock_module_refs);
	for (i = 0; i < ARRAY_SIZE(dentries); i++)
		if (dentries[i].used)
			mock_fail_after("debugfs entry %s left",
					dentries[i].name);
	if (printk_errors)
		mock_fail_after("kernel error message(s):\n%s",
				mock_printk_buf);
}

void mock_dev_forget(void)
{
	mock_miscdev = NULL;
	mock_module_refs = 0;
	memset(dentries, 0, sizeof(dentries));
}
