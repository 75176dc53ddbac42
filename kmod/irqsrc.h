/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kprog interrupt source: per-CPU hrtimers with a choice of follow-up
 * work, for the interrupt-cost benchmark. Controlled over netlink
 * (netlink.c); KPROG_IOC_IRQ_WAIT (main.c) is its user-space end.
 */
#ifndef _KPROG_IRQSRC_H
#define _KPROG_IRQSRC_H

#include <linux/types.h>
#include <linux/cpumask.h>
#include <linux/kprog.h>

struct netlink_ext_ack;

/* Hard upper bound of the irq_max_hz parameter: a 1 us period. */
#define KPROG_IRQ_HZ_LIMIT	1000000

/* Module parameters (irqsrc.c), validated at load. */
extern unsigned int kprog_irq_max_hz;
extern unsigned int kprog_irq_max_duration_ms;
extern unsigned int kprog_irq_max_load_ns;

/**
 * struct kprog_irq_config - what the interrupt source does
 * @hz: fires per second on each CPU, 1..kprog_irq_max_hz
 * @mode: enum kprog_irq_mode
 * @load_ns: busy time per fire in the mode's context
 * @duration_ms: run time, 1..kprog_irq_max_duration_ms
 * @all_online: use every online CPU, ignore @cpus
 * @cpus: the CPUs to fire on
 */
struct kprog_irq_config {
	u32 hz;
	u32 mode;
	u32 load_ns;
	u32 duration_ms;
	bool all_online;
	cpumask_var_t cpus;
};

int kprog_irq_init(void);
void kprog_irq_exit(void);
int kprog_irq_start(const struct kprog_irq_config *cfg,
		    struct netlink_ext_ack *extack);
void kprog_irq_stop(void);
bool kprog_irq_status(struct kprog_irq_config *cfg);
int kprog_irq_wait(struct kprog_irq_wait *w);

#endif /* _KPROG_IRQSRC_H */
