/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog generic netlink family: per-CPU accounting
 * (include/uapi/linux/kprog.h).
 */
#ifndef _KPROG_NETLINK_H
#define _KPROG_NETLINK_H

int kprog_nl_init(void);
void kprog_nl_exit(void);

#endif /* _KPROG_NETLINK_H */
