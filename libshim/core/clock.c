// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The shim's cheap clock (clock.h): the TSC where the kernel keeps time
 * with it, calibrated against CLOCK_MONOTONIC.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "clock.h"

/* Until kp_clock_init(): CLOCK_MONOTONIC, 1 ns per tick. */
struct kp_clock kp_clk = { .tsc = false, .mult = 1ull << 32 };

uint64_t kp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
/* The kernel's clocksource is the TSC: it found it invariant and synchronised. */
static bool kernel_uses_tsc(const char *path)
{
	char buf[32] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, "tsc");
}

/*
 * One (TSC, CLOCK_MONOTONIC) pair: the TSC read on both sides of the
 * clock_gettime, the narrowest of a few tries (an interrupt or a
 * preemption in between widens one), its midpoint.
 */
static void pair(uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	int i;

	*tick = *ns = 0;

	for (i = 0; i < 8; i++) {
		uint64_t a = __builtin_ia32_rdtsc();
		uint64_t n = kp_now_ns();
		uint64_t b = __builtin_ia32_rdtsc();

		if (b - a < best) {
			best = b - a;
			*tick = a + (b - a) / 2;
			*ns = n;
		}
	}
}

#define CALIBRATE_NS 2000000ull	/* error ~ 2 x pair width / this: ~0.02% emulated */
#endif

void kp_clock_init(const char *clocksource_path)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t t0, n0, t1, n1;

	if (!kernel_uses_tsc(clocksource_path ? clocksource_path :
			     "/sys/devices/system/clocksource/clocksource0/current_clocksource"))
		goto monotonic;
	pair(&t0, &n0);
	while (kp_now_ns() - n0 < CALIBRATE_NS)
		;
	pair(&t1, &n1);
	if (t1 <= t0 || n1 <= n0)
		goto monotonic;
	kp_clk.mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
	if (!kp_clk.mult)
		goto monotonic;
	kp_clk.tsc = true;
	kp_clk.t0 = t1;
	return;
monotonic:
#endif
	kp_clk.tsc = false;
	kp_clk.mult = 1ull << 32;
	kp_clk.t0 = kp_now_ns();
}

uint64_t kp_ticks_to_mono(uint64_t tick)
{
	uint64_t now = kp_now_ns(), t = kp_ticks(), d;

	if (t <= tick)
		return now;
	d = kp_ticks_ns(t - tick);
	return d < now ? now - d : 0;
}
