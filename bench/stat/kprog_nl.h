/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Client of the generic netlink families of the modules, on libnl-genl-3:
 * "kprog" (kprog.ko, include/uapi/linux/kprog.h), its per-CPU progression
 * counters; "kprog_bench" (kprog_bench.ko, include/uapi/linux/kprog_bench.h),
 * the interrupt source of the interrupt-cost benchmark and its counters.
 * A handle talks to one of them (enum kprog_family, kprog_stats.h).
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
#include <linux/kprog_bench.h>
#include "kprog_stats.h"

/* Generous: under TCG emulation a dump of many CPUs can take a while. */
#define KPROG_NL_TIMEOUT_S	10

struct kprog_nl;

/*
 * Connect and resolve family @which. -ENOENT means the family is not
 * registered, i.e. its module (kprog.ko or kprog_bench.ko) is not loaded.
 */
int kprog_nl_open(struct kprog_nl **nlp, enum kprog_family which);
void kprog_nl_close(struct kprog_nl *nl);

/* The extended-ack message of the last failed request, "" if none. */
const char *kprog_nl_ext_msg(const struct kprog_nl *nl);

/* "strerror(-err)" plus ": <ext ack message>" if the kernel sent one. */
const char *kprog_nl_strerror(struct kprog_nl *nl, int err);

/*
 * GET_STATS: *@stats becomes a malloc'd array indexed by CPU number, *@n
 * its length (highest reported CPU + 1). Slots the kernel did not report
 * have cpu == -1; counters the family does not have are 0. Free with free().
 */
int kprog_nl_get_stats(struct kprog_nl *nl, struct kprog_cpu_stats **stats, int *n);

/* RESET_STATS; -EPERM without CAP_NET_ADMIN. */
int kprog_nl_reset_stats(struct kprog_nl *nl);

struct kprog_irq_req {
	uint32_t hz;
	uint32_t mode;		/* enum kprog_bench_irq_mode */
	uint32_t load_ns;
	uint32_t duration_ms;
	const cpu_set_t *cpus;	/* NULL: all online CPUs (attribute left out) */
};

/*
 * The interrupt source, on a handle of KPROG_FAMILY_BENCH (-EOPNOTSUPP on
 * another). KPROG_BENCH_CMD_IRQ_START; -EBUSY if already running, -EPERM
 * without CAP_NET_ADMIN.
 */
int kprog_nl_irq_start(struct kprog_nl *nl, const struct kprog_irq_req *req);

/* KPROG_BENCH_CMD_IRQ_STOP; not an error when idle. */
int kprog_nl_irq_stop(struct kprog_nl *nl);

struct kprog_irq_status {
	int running;
	uint32_t hz, mode, load_ns;	/* valid while running */
	int have_cpus;
	cpu_set_t cpus;
};

/* KPROG_BENCH_CMD_IRQ_STATUS. */
int kprog_nl_irq_status(struct kprog_nl *nl, struct kprog_irq_status *st);

/* "hardirq", "tasklet", "work", "wake"; NULL for an unknown mode. */
const char *kprog_irq_mode_name(uint32_t mode);
/* The mode named @name, or -1. */
int kprog_irq_mode_parse(const char *name);

/*
 * The pieces below are what the calls above are made of; exposed so that
 * the unit tests can check them on messages built without a kernel.
 */

/* "kprog" or "kprog_bench". */
const char *kprog_family_name(enum kprog_family which);

/* One GET_STATS reply of family @which into @out. -EPROTO if malformed or without CPU. */
int kprog_nl_parse_stats(enum kprog_family which, struct nlmsghdr *nlh,
			 struct kprog_cpu_stats *out);

/* One IRQ_STATUS reply into @out. -EPROTO if malformed or without RUNNING. */
int kprog_nl_parse_irq_status(struct nlmsghdr *nlh, struct kprog_irq_status *out);

/*
 * An NLMSG_ERROR message: returns the errno it carries (positive, 0 for an
 * ACK) and copies its NLMSGERR_ATTR_MSG, if any, into @msg ("" otherwise).
 */
int kprog_nl_parse_error(struct nlmsghdr *nlh, char *msg, size_t len);

/* The errno a dump's NLMSG_DONE carries (positive), 0 if none or not DONE. */
int kprog_nl_parse_done(struct nlmsghdr *nlh);

/* The IRQ_START request for family id @family (kprog_bench's); NULL on ENOMEM or too many CPUs. */
struct nl_msg *kprog_nl_build_irq_start(int family, const struct kprog_irq_req *req);

#endif
