// SPDX-License-Identifier: GPL-2.0
/*
 * kprog messages: allocation and release.
 */
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/printk.h>
#include "msg.h"
#include "op.h"

/* Live messages, checked at unload to catch leaks. */
static atomic_t kprog_live_msgs = ATOMIC_INIT(0);

/**
 * kprog_msg_alloc() - a new message
 * @env: its envelope
 * @gfp: allocation flags (GFP_ATOMIC from a softirq)
 *
 * Return: the message (state NEW, no payload) or NULL.
 */
struct kprog_msg *kprog_msg_alloc(const struct kprog_env *env, gfp_t gfp)
{
	struct kprog_msg *msg = kzalloc(sizeof(*msg), gfp);

	if (!msg)
		return NULL;
	atomic_inc(&kprog_live_msgs);
	INIT_LIST_HEAD(&msg->qnode);
	msg->env = *env;
	return msg;
}
EXPORT_SYMBOL_GPL(kprog_msg_alloc);

/**
 * kprog_msg_alloc_data() - room for an eager payload of env.len bytes
 * @msg: message without payload
 * @gfp: allocation flags
 *
 * Return: 0 or -ENOMEM.
 */
int kprog_msg_alloc_data(struct kprog_msg *msg, gfp_t gfp)
{
	if (!msg->env.len)
		return 0;
	msg->data = kvmalloc(msg->env.len, gfp);
	return msg->data ? 0 : -ENOMEM;
}
EXPORT_SYMBOL_GPL(kprog_msg_alloc_data);

/**
 * kprog_msg_free() - release a message that left every queue
 * @msg: message; its sender, if any, has been told (&kprog_transport.fin)
 *
 * Any context except under a spinlock taken in process context.
 */
void kprog_msg_free(struct kprog_msg *msg)
{
	kvfree(msg->data);
	if (msg->sop)
		kprog_op_put(msg->sop);
	kfree(msg);
	atomic_dec(&kprog_live_msgs);
}
EXPORT_SYMBOL_GPL(kprog_msg_free);

/**
 * kprog_msg_exit() - report messages still alive at unload
 */
void kprog_msg_exit(void)
{
	if (atomic_read(&kprog_live_msgs))
		pr_err("kprog: leaked %d messages\n",
		       atomic_read(&kprog_live_msgs));
}
