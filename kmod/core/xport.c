// SPDX-License-Identifier: GPL-2.0
/*
 * kprog transport registry: which transports the module has, their
 * set-up and tear-down, and which one reaches a given peer.
 */
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/kprog.h>
#include "job.h"
#include "transport.h"

/* Shared memory first; a network transport serves the other nodes. */
static const struct kprog_transport *const kprog_transports[] = {
	&kprog_xport_shm,
};

static const struct kprog_transport *kprog_net_xport;

/**
 * kprog_xport_set_net() - install the transport that reaches other nodes
 * @xport: the network transport, or NULL when it goes away (no device)
 *
 * A transport calls it from its init or when its device appears or
 * leaves; JOIN refuses node maps with remote ranks while none is set.
 * Removing it waits until no kprog_xport_net_get() can still be looking
 * at the old one, so that its module may go once its jobs are gone.
 * Process context.
 */
void kprog_xport_set_net(const struct kprog_transport *xport)
{
	WRITE_ONCE(kprog_net_xport, xport);
	if (!xport)
		synchronize_rcu();
}
EXPORT_SYMBOL_GPL(kprog_xport_set_net);

/**
 * kprog_xport_net_get() - the network transport, its module referenced
 *
 * For a job that reaches ranks through it (JOIN) and for GET_INFO: the
 * transport's module cannot be unloaded while the reference is held.
 *
 * Return: the transport, or NULL when there is none or its module is
 * going away.
 */
const struct kprog_transport *kprog_xport_net_get(void)
{
	const struct kprog_transport *xport;

	rcu_read_lock();
	xport = READ_ONCE(kprog_net_xport);
	if (xport && !try_module_get(xport->owner))
		xport = NULL;
	rcu_read_unlock();
	return xport;
}

/**
 * kprog_xport_net_put() - drop what kprog_xport_net_get() took
 * @xport: its result (not NULL)
 *
 * Any context.
 */
void kprog_xport_net_put(const struct kprog_transport *xport)
{
	module_put(xport->owner);
}

/**
 * kprog_xport_for() - the transport that reaches a peer
 * @job: the peer's job
 * @peer: a snapshot from kprog_job_peer()
 *
 * A remote peer is reached through the network transport the job holds
 * (&kprog_job.net), while one is installed: a transport whose device went
 * away stops carrying new messages.
 *
 * Return: the transport, or NULL when the peer is not reachable (a local
 * rank that is not joined, or another node with no network transport).
 */
const struct kprog_transport *kprog_xport_for(const struct kprog_job *job,
					      const struct kprog_peer_ref *peer)
{
	switch (peer->kind) {
	case KPROG_PEER_LOCAL:
		return &kprog_xport_shm;
	case KPROG_PEER_REMOTE:
		return READ_ONCE(kprog_net_xport) ? job->net : NULL;
	default:
		return NULL;
	}
}

/**
 * kprog_xport_mask() - the transports that can carry traffic now
 *
 * Return: KPROG_XPORT_* bits for KPROG_IOC_GET_INFO.
 */
u32 kprog_xport_mask(void)
{
	return KPROG_XPORT_SHM | (READ_ONCE(kprog_net_xport) ? KPROG_XPORT_IB : 0);
}

/**
 * kprog_xport_poll() - KPROG_WAIT_POLL: the job's network completions now
 * @job: the caller's job
 *
 * Through the network transport the job holds (its module stays while the
 * job does); nothing for a job on one node. Process context.
 */
void kprog_xport_poll(struct kprog_job *job)
{
	if (job->net && job->net->poll && READ_ONCE(kprog_net_xport))
		job->net->poll(job);
}

/**
 * kprog_xport_init() - set every transport up; may sleep
 *
 * Return: 0, or the first transport's error (the others are undone).
 */
int kprog_xport_init(void)
{
	int i, err;

	for (i = 0; i < ARRAY_SIZE(kprog_transports); i++) {
		if (!kprog_transports[i]->init)
			continue;
		err = kprog_transports[i]->init();
		if (err)
			goto err_undo;
	}
	return 0;

err_undo:
	while (i--)
		if (kprog_transports[i]->exit)
			kprog_transports[i]->exit();
	return err;
}

/**
 * kprog_xport_exit() - tear every transport down, after the last endpoint
 */
void kprog_xport_exit(void)
{
	int i = ARRAY_SIZE(kprog_transports);

	while (i--)
		if (kprog_transports[i]->exit)
			kprog_transports[i]->exit();
}
