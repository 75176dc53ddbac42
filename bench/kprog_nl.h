/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Client of the module's generic netlink family "kprog" (see
 * include/uapi/linux/kprog.h), on libnl-genl-3: per-CPU accounting
 * counters and the interrupt source of the interrupt-cost benchmark.
 *
 * Every call returns 0 or a negative errno: the kernel's own errno when it
 * refused the request (its extended-ack message, if any, is then in
 * kprog_nl_ext_msg()), -ETIMEDOUT if the kernel did not answer within
 * KPROG_NL_TIMEOUT_S, -EPROTO for a malformed answer. A handle is used by
 * one thread at a time (libnl sockets are not thread-safe).
 */
#ifndef KPROG_NL_H
#define KPROG_NL_H

#include <stdint.h>
#include <sched.h>
#include <netlink/netlink.h>
#include <linux/kprog.h>
#include "kprog_stats.h"

/* Generous: under TCG emulation a dump of many CPUs can take a while. */
#define KPROG_NL_TIMEOUT_S	10

struct kprog_nl;

/*
 * Connect and resolve the family. -ENOENT means the family is not
 * registered, i.e. the kprog module is not loaded.
 */
int kprog_nl_open(struct kprog_nl **nlp);
void kprog_nl_close(struct kprog_nl *nl);

/* The extended-ack message of the last failed request, "" if none. */
const char *kprog_nl_ext_msg(const struct kprog_nl *nl);

/* "strerror(-err)" plus ": <ext ack message>" if the kernel sent one. */
const char *kprog_nl_strerror(struct kprog_nl *nl, int err);

/*
 * KPROG_CMD_GET_STATS: *@stats becomes a malloc'd array indexed by CPU
 * number, *@n its length (highest reported CPU + 1). Slots the kernel did
 * not report have cpu == -1. Free with free().
 */
int kprog_nl_get_stats(struct kprog_nl *nl, struct kprog_cpu_stats **stats, int *n);

/* KPROG_CMD_RESET_STATS; -EPERM without CAP_NET_ADMIN. */
int kprog_nl_reset_stats(struct kprog_nl *nl);

struct kprog_irq_req {
	uint32_t hz;
	uint32_t mode;		/* enum kprog_irq_mode */
	uint32_t load_ns;
	uint32_t duration_ms;
	const cpu_set_t *cpus;	/* NULL: all online CPUs (attribute left out) */
};

/* KPROG_CMD_IRQ_START; -EBUSY if already running, -EPERM without CAP_NET_ADMIN. */
int kprog_nl_irq_start(struct kprog_nl *nl, const struct kprog_irq_req *req);

/* KPROG_CMD_IRQ_STOP; not an error when idle. */
int kprog_nl_irq_stop(struct kprog_nl *nl);

struct kprog_irq_status {
	int running;
	uint32_t hz, mode, load_ns;	/* valid while running */
	int have_cpus;
	cpu_set_t cpus;
};

/* KPROG_CMD_IRQ_STATUS. */
int kprog_nl_irq_status(struct kprog_nl *nl, struct kprog_irq_status *st);

/* "hardirq", "tasklet", "work", "wake"; NULL for an unknown mode. */
const char *kprog_irq_mode_name(uint32_t mode);
/* The mode named @name, or -1. */
int kprog_irq_mode_parse(const char *name);

/*
 * The pieces below are what the calls above are made of; exposed so that
 * the unit tests can check them on messages built without a kernel.
 */

/* One GET_STATS reply message into @out. -EPROTO if malformed or without CPU. */
int kprog_nl_parse_stats(struct nlmsghdr *nlh, struct kprog_cpu_stats *out);

/* One IRQ_STATUS reply into @out. -EPROTO if malformed or without RUNNING. */
int kprog_nl_parse_irq_status(struct nlmsghdr *nlh, struct kprog_irq_status *out);

/*
 * An NLMSG_ERROR message: returns the errno it carries (positive, 0 for an
 * ACK) and copies its NLMSGERR_ATTR_MSG, if any, into @msg ("" otherwise).
 */
int kprog_nl_parse_error(struct nlmsghdr *nlh, char *msg, size_t len);

/* The errno a dump's NLMSG_DONE carries (positive), 0 if none or not DONE. */
int kprog_nl_parse_done(struct nlmsghdr *nlh);

/* The IRQ_START request for family @family; NULL on ENOMEM or too many CPUs. */
struct nl_msg *kprog_nl_build_irq_start(int family, const struct kprog_irq_req *req);

#endif
