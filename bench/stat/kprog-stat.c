// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kprog-stat: the kprog module's per-CPU progression counters, read over
 * its generic netlink family, printed per core like mpstat: once (totals
 * since module load or the last reset) or every interval (rates).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cpulist.h"
#include "kprog_nl.h"
#include "kprog_stats.h"

#define EXIT_NOMODULE	2

#ifndef KPROG_VERSION
#define KPROG_VERSION "unknown"
#endif

static const char usage_text[] =
"Usage: kprog-stat [options]\n"
"Print the kprog module's per-CPU progression counters, one row per CPU and\n"
"an \"all\" row (sum over the rows shown), read over its generic netlink\n"
"family \"" KPROG_GENL_NAME "\".\n"
"\n"
"Without -i/-c: one table of totals since the module was loaded or the\n"
"counters were last reset. With -i or -c: like mpstat, a table every\n"
"interval with per-second rates over that interval (header repeated), and\n"
"an \"Average\" table over the whole run at the end (also on ctrl-C).\n"
"\n"
"Options:\n"
"  -i, --interval SEC  seconds between tables (decimals allowed; default 1\n"
"                      when only -c is given); runs until -c or ctrl-C\n"
"  -c, --count N       print N interval tables, then the average, and exit\n"
"  -r, --reset         zero every counter of every CPU first (needs\n"
"                      CAP_NET_ADMIN); alone: reset and exit\n"
"      --cpu LIST      only these CPUs, e.g. 0-3,8 (default: every CPU the\n"
"                      module reports, offline ones included)\n"
"      --json          one JSON object per table instead of text, raw\n"
"                      counters (totals) or raw counters per second (rates)\n"
"  -h, --help          this text\n"
"  -V, --version       the version of kprog-stat\n"
"\n"
"Columns (text; with an interval every column is per second):\n"
"  events      completion events the module handled\n"
"  tasklet     tasklet (softirq) runs        tasklet_us  time spent in them\n"
"  work        workqueue items run           work_us     time spent in them\n"
"  MB          payload moved, 10^6 bytes\n"
"  wakeups     user threads woken\n"
"(The interrupt source of bench/irqcost is kprog_bench.ko's, with counters\n"
"of its own: kprog.ko has none of it.)\n"
"\n"
"Exit status: 0 fine; 1 bad option or a netlink error (e.g. -r without\n"
"CAP_NET_ADMIN); 2 the kprog module is not loaded.\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct opts {
	double interval;	/* 0: once */
	long count;		/* 0: unlimited */
	int reset, json, have_cpus;
	cpu_set_t cpus;
};

/* Is @cpu one of the rows to show? */
static int shown(const struct opts *o, int cpu)
{
	return cpu >= 0 && (!o->have_cpus || CPU_ISSET(cpu, &o->cpus));
}

/* Text columns: counters and how each is scaled for display. */
static const struct col {
	const char *head;
	enum kprog_stat s;
	double scale;
	int decimals;
} cols[] = {
	{ "events", KS_EVENTS, 1, 0 },
	{ "tasklet", KS_TASKLET_RUNS, 1, 0 },
	{ "tasklet_us", KS_TASKLET_NS, 1e-3, 1 },
	{ "work", KS_WORK_ITEMS, 1, 0 },
	{ "work_us", KS_WORK_NS, 1e-3, 1 },
	{ "MB", KS_BYTES, 1e-6, 2 },
	{ "wakeups", KS_WAKEUPS, 1, 0 },
	{ "pin_hits", KS_NET_PIN_HITS, 1, 0 },
	{ "pin_misses", KS_NET_PIN_MISSES, 1, 0 },
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static void print_header(const char *prefix)
{
	size_t c;

	printf("%-10s %5s", prefix, "CPU");
	for (c = 0; c < NCOLS; c++)
		printf(" %12s", cols[c].head);
	printf(" %12s\n", "pin_hit%");
}

/*
 * The pin cache's hit rate, hits / (hits + misses) in percent, of the
 * counts or of the interval's deltas (the same either way); "-" when no
 * chunk was pinned.
 */
static void print_hit_rate(const struct kprog_cpu_stats *d)
{
	unsigned long long h = d->v[KS_NET_PIN_HITS], m = d->v[KS_NET_PIN_MISSES];

	if (h + m)
		printf(" %12.1f", 100.0 * (double)h / (double)(h + m));
	else
		printf(" %12s", "-");
}

/* One text row; @seconds > 0 turns counts into rates. */
static void print_row(const char *prefix, const char *cpu, const struct kprog_cpu_stats *d,
		      double seconds)
{
	size_t c;

	printf("%-10s %5s", prefix, cpu);
	for (c = 0; c < NCOLS; c++) {
		double v = seconds > 0 ? kprog_stats_rate(d, cols[c].s, seconds)
				       : (double)d->v[cols[c].s];

		printf(" %12.*f", cols[c].decimals, v * cols[c].scale);
	}
	print_hit_rate(d);
	putchar('\n');
}

static void print_json_obj(const struct kprog_cpu_stats *d, double seconds)
{
	int s, first = 1;

	for (s = 0; s < KS_NSTAT; s++) {
		if (!kprog_stat_attr(KPROG_FAMILY_KPROG, s))
			continue;	/* kprog_bench.ko's, not this module's */
		if (seconds > 0)
			printf("%s\"%s\":%.3f", first ? "" : ",", kprog_stat_name(s),
			       kprog_stats_rate(d, s, seconds));
		else
			printf("%s\"%s\":%llu", first ? "" : ",", kprog_stat_name(s),
			       (unsigned long long)d->v[s]);
		first = 0;
	}
}

/*
 * One table of @n per-CPU entries @d (totals if @seconds is 0, else rates
 * over @seconds). @label heads the rows ("" for totals, a time, "Average:").
 */
static void print_table(const struct opts *o, const char *label, const struct kprog_cpu_stats *d,
			int n, double seconds, int reset_seen)
{
	struct kprog_cpu_stats all = { .cpu = -1 };
	char cpu[16];
	int i, first = 1;

	for (i = 0; i < n; i++)
		if (shown(o, d[i].cpu))
			kprog_stats_add(&all, &d[i]);
	if (o->json) {
		printf("{\"label\":\"%s\",\"unit\":\"%s\",\"seconds\":%.3f,\"reset_seen\":%s,\"cpus\":[",
		       label, seconds > 0 ? "per_second" : "total", seconds,
		       reset_seen ? "true" : "false");
		for (i = 0; i < n; i++) {
			if (!shown(o, d[i].cpu))
				continue;
			printf("%s{\"cpu\":%d,", first ? "" : ",", d[i].cpu);
			print_json_obj(&d[i], seconds);
			putchar('}');
			first = 0;
		}
		printf("],\"all\":{");
		print_json_obj(&all, seconds);
		printf("}}\n");
		fflush(stdout);
		return;
	}
	print_header(label);
	for (i = 0; i < n; i++) {
		if (!shown(o, d[i].cpu))
			continue;
		snprintf(cpu, sizeof(cpu), "%d", d[i].cpu);
		print_row(label, cpu, &d[i], seconds);
	}
	print_row(label, "all", &all, seconds);
	if (reset_seen)
		printf("%-10s (counters were reset during this interval: rows count from the reset)\n",
		       label);
	putchar('\n');
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sleep until monotonic time @t (seconds); returns early on a signal. */
static void sleep_until(double t)
{
	struct timespec ts = { .tv_sec = (time_t)t, .tv_nsec = (long)((t - floor(t)) * 1e9) };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static int fetch(struct kprog_nl *nl, struct kprog_cpu_stats **s, int *n)
{
	int err = kprog_nl_get_stats(nl, s, n);

	if (err)
		fprintf(stderr, "kprog-stat: reading counters: %s\n", kprog_nl_strerror(nl, err));
	return err;
}

/* The interval loop: tables of rates, then the average. */
static int monitor(struct kprog_nl *nl, const struct opts *o)
{
	struct kprog_cpu_stats *prev, *cur, *d, *sum;
	int np, nc, i, nmax, reset_any = 0, any = 0;
	double t_prev, t_start, t_next, t;
	long done = 0;
	char label[16];

	if (fetch(nl, &prev, &np))
		return 1;
	for (i = 0; i < np; i++)
		any |= shown(o, prev[i].cpu);
	if (!any) {
		fprintf(stderr, "kprog-stat: the module reports none of the CPUs asked for\n");
		free(prev);
		return 1;
	}
	t_start = t_prev = now_s();
	t_next = t_start;
	nmax = np;
	sum = calloc((size_t)nmax, sizeof(*sum));
	d = calloc((size_t)nmax, sizeof(*d));
	if (!sum || !d)
		abort();
	for (i = 0; i < nmax; i++)
		sum[i].cpu = prev[i].cpu;
	while (!stop && (!o->count || done < o->count)) {
		time_t wall;
		int reset = 0;

		t_next += o->interval;
		sleep_until(t_next);
		if (stop)
			break;
		if (fetch(nl, &cur, &nc))
			return 1;
		t = now_s();
		/* CPUs are possible CPUs: their number does not change while loaded */
		nc = nc < nmax ? nc : nmax;
		for (i = 0; i < nc; i++) {
			if (prev[i].cpu < 0 || cur[i].cpu < 0) {
				d[i].cpu = -1;
				continue;
			}
			reset |= kprog_stats_delta(&prev[i], &cur[i], &d[i]);
			kprog_stats_add(&sum[i], &d[i]);
		}
		reset_any |= reset;
		wall = time(NULL);
		strftime(label, sizeof(label), "%H:%M:%S", localtime(&wall));
		print_table(o, label, d, nc, t - t_prev, reset);
		free(prev);
		prev = cur;
		t_prev = t;
		done++;
	}
	if (done)
		print_table(o, "Average:", sum, nmax, t_prev - t_start, reset_any);
	free(prev);
	free(sum);
	free(d);
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "reset", no_argument, NULL, 'r' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "i:c:rhV", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval >= 0.01 && o->interval <= 86400)) {
				fprintf(stderr, "kprog-stat: --interval wants seconds in 0.01..86400, not '%s'\n",
					optarg);
				return -1;
			}
			break;
		case 'c':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count <= 0) {
				fprintf(stderr, "kprog-stat: --count wants a positive integer, not '%s'\n",
					optarg);
				return -1;
			}
			break;
		case 'r':
			o->reset = 1;
			break;
		case 'C':
			if (cpulist_parse(optarg, &o->cpus) <= 0) {
				fprintf(stderr, "kprog-stat: --cpu wants a CPU list like 0-3,8, not '%s'\n",
					optarg);
				return -1;
			}
			o->have_cpus = 1;
			break;
		case 'J':
			o->json = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("kprog-stat %s\n", KPROG_VERSION);
			exit(0);
		default:
			fputs("Try 'kprog-stat --help'.\n", stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kprog-stat: unexpected argument '%s'; try --help\n", argv[optind]);
		return -1;
	}
	if (o->count && !o->interval)
		o->interval = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct kprog_cpu_stats *s;
	struct sigaction sa = { .sa_handler = on_signal };
	struct kprog_nl *nl;
	struct opts o;
	int err, n, i, any = 0, rc = 0;

	if (parse_opts(argc, argv, &o))
		return 1;
	err = kprog_nl_open(&nl, KPROG_FAMILY_KPROG);
	if (err == -ENOENT) {
		fprintf(stderr, "kprog-stat: no generic netlink family \"%s\": the kprog module is not loaded\n",
			KPROG_GENL_NAME);
		return EXIT_NOMODULE;
	}
	if (err) {
		fprintf(stderr, "kprog-stat: netlink: %s\n", strerror(-err));
		return 1;
	}
	if (o.reset) {
		err = kprog_nl_reset_stats(nl);
		if (err == -EPERM) {
			fprintf(stderr, "kprog-stat: --reset needs CAP_NET_ADMIN (run as root)\n");
			rc = 1;
			goto out;
		} else if (err) {
			fprintf(stderr, "kprog-stat: reset: %s\n", kprog_nl_strerror(nl, err));
			rc = 1;
			goto out;
		}
		if (!o.interval) {
			if (!o.json)
				printf("kprog-stat: counters of every CPU reset\n");
			goto out;
		}
	}
	if (o.interval) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		rc = monitor(nl, &o);
		goto out;
	}
	if (fetch(nl, &s, &n)) {
		rc = 1;
		goto out;
	}
	for (i = 0; i < n; i++)
		any |= shown(&o, s[i].cpu);
	if (!any) {
		fprintf(stderr, "kprog-stat: the module reports none of the CPUs asked for\n");
		rc = 1;
	} else {
		print_table(&o, "total", s, n, 0, 0);
	}
	free(s);
out:
	kprog_nl_close(nl);
	return rc;
}
