// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench/progress_opts.c: option parsing and --help of bench/progress.
 */
#include "progress_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const po_strat_name[NSTRAT] = { "manual", "poll", "intr", "rt", "kernel" };
const char *const po_place_name[NPLACE] = { "spare", "shared" };
const char *const po_scheme_name[NSCHEME] = { "time", "work" };
const char *const po_kworker_name[3] = { "strict", "follow", "any" };

void popts_defaults(struct popts *o)
{
	static const size_t def_sizes[] = { 1024, 64 << 10, 1 << 20, 4 << 20 };

	memset(o, 0, sizeof(*o));
	for (int i = 0; i < NSTRAT; i++)
		o->strat[i] = 1;
	for (int i = 0; i < NPLACE; i++)
		o->place[i] = 1;
	for (int i = 0; i < NSCHEME; i++)
		o->scheme[i] = 1;
	o->nsizes = sizeof(def_sizes) / sizeof(def_sizes[0]);
	memcpy(o->sizes, def_sizes, sizeof(def_sizes));
	o->iters = 30;
	o->warmup = 1;
	o->block = 6;
	o->tb_iters = 0;	/* 0: the same as iters */
	o->cpu_compute = -1;
	o->cpu_spare = -1;
	o->cpu_server = -1;
	o->poll_yield = 0;
	o->rt_prio = 50;
	o->kworker = KW_STRICT;
	o->verify = VERIFY_FIRST_LAST;
	o->label = "";
}

void popts_usage(FILE *f)
{
	fputs(
"usage: mpirun -np 2 --bind-to none bench/progress [options]\n"
"\n"
"Progress-thread benchmarks of Hoefler & Lumsdaine (seed 001, section V):\n"
"rank 0 (client) posts MPI_Irecv + MPI_Isend, computes, waits; rank 1\n"
"(server) echoes. Reports the client's CPU overhead t_o per message, the\n"
"wake-up latency of the progress entity and context switches, for each\n"
"progression strategy, placement and message size.\n"
"\n"
"  --strategy LIST   manual,poll,intr,rt,kernel or all (default all)\n"
"                    manual  no thread: post, compute, wait (Open MPI progresses\n"
"                            only in the wait)\n"
"                    poll    progress thread looping MPI_Testall on the requests\n"
"                    intr    progress thread blocked in MPI_Waitall (sleeps in the\n"
"                            kernel under kprog; plain Open MPI busy-polls in it)\n"
"                    rt      intr with SCHED_FIFO (needs CAP_SYS_NICE)\n"
"                    kernel  no thread under an active kprog module: the module\n"
"                            progresses in kernel context (n/a without it)\n"
"  --placement LIST  spare,shared (default both): progress thread (and, under\n"
"                    kprog, its kernel workers) on a spare core or on the\n"
"                    compute core\n"
"  --scheme LIST     time,work (default both): compute for t_b wall time and\n"
"                    t_o = time in MPI calls; or a fixed workload calibrated to\n"
"                    t_b alone and t_o = t_overlapped - t_workload\n"
"  --sizes LIST      message sizes, K/M suffixes (default 1K,64K,1M,4M; >= 8)\n"
"  --iters N         measured rounds per point, medians reported (default 30)\n"
"  --block N         the points of a size run in turns, N measured rounds each\n"
"                    turn (default 6; 0: each point in one go), so that a slow\n"
"                    spell of a shared machine hits all mechanisms alike\n"
"  --warmup N        unmeasured rounds before each turn of a point (default 1)\n"
"  --tb-iters N      rounds of the blocking t_b measurement (default: --iters)\n"
"  --cpu-server N    CPU of rank 1 (default: 1st CPU allowed)\n"
"  --cpu-compute N   CPU of the client's compute thread (default: 2nd)\n"
"  --cpu-spare N|none  the spare core (default: 3rd; none with < 3 CPUs:\n"
"                    spare-core points are then skipped)\n"
"  --poll-yield K    poll thread calls sched_yield() every K failed polls\n"
"                    (default 0: never; the kprog shim's MPI_Test* yields by\n"
"                    itself when it finds nothing)\n"
"  --rt-prio P       SCHED_FIFO priority of the rt thread (default 50)\n"
"  --kworker-cpus strict|follow|any   under an active kprog: CPUs its unbound\n"
"                    kernel workers may use, set per point through\n"
"                    /sys/devices/virtual/workqueue/cpumask and restored at\n"
"                    exit. strict (default): only the placement's core;\n"
"                    follow: that core and the server's; any: leave it alone\n"
"  --verify first-last|all   rounds whose payload is checked (default\n"
"                    first-last of every point), outside the timed region\n"
"  --data PREFIX     write PREFIX.dat (one row per point), PREFIX.lat (latency\n"
"                    samples), PREFIX.hist (latency histogram), PREFIX.cores\n"
"                    (CPU time per message per core, from /proc/stat)\n"
"  --label NAME      name of this run in the rows and progress lines\n"
"  --quiet           no progress lines on stderr\n"
"  -h, --help        this text (works without mpirun)\n", f);
}

static void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

int po_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v, mul = 1;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	}
	if (*end == 'i' && mul > 1)	/* KiB, MiB */
		end++;
	if ((*end == 'b' || *end == 'B') && mul > 1)
		end++;
	if (*end || v > ULLONG_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

int po_parse_cpu(const char *s, int none_ok, int *out)
{
	char *end;
	long v;

	if (none_ok && !strcmp(s, "none")) {
		*out = -2;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 4095)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	if (!*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* comma list of names into flags; "all" sets every flag */
static int parse_names(const char *arg, const char *const *names, int n, int *flags,
		       char *err, size_t errlen, const char *what)
{
	char buf[256], *tok, *save;

	if (strlen(arg) >= sizeof(buf)) {
		seterr(err, errlen, "--%s: list too long", what);
		return -1;
	}
	strcpy(buf, arg);
	for (int i = 0; i < n; i++)
		flags[i] = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = 0;

		for (int i = 0; i < n; i++)
			if (!strcmp(tok, "all") || !strcmp(tok, names[i])) {
				flags[i] = 1;
				found = 1;
			}
		if (!found) {
			seterr(err, errlen, "--%s: unknown name '%s'", what, tok);
			return -1;
		}
	}
	for (int i = 0; i < n; i++)
		if (flags[i])
			return 0;
	seterr(err, errlen, "--%s: empty list", what);
	return -1;
}

int popts_parse(struct popts *o, int argc, char **argv, char *err, size_t errlen)
{
	enum {
		O_STRAT = 256, O_PLACE, O_SCHEME, O_SIZES, O_ITERS, O_WARMUP, O_TBITERS,
		O_CPUC, O_CPUS, O_CPUV, O_YIELD, O_RTPRIO, O_KW, O_VERIFY, O_DATA,
		O_LABEL, O_QUIET, O_BLOCK,
	};
	static const struct option lopts[] = {
		{ "strategy", 1, 0, O_STRAT }, { "placement", 1, 0, O_PLACE },
		{ "scheme", 1, 0, O_SCHEME }, { "sizes", 1, 0, O_SIZES },
		{ "iters", 1, 0, O_ITERS }, { "warmup", 1, 0, O_WARMUP },
		{ "tb-iters", 1, 0, O_TBITERS }, { "cpu-compute", 1, 0, O_CPUC },
		{ "cpu-spare", 1, 0, O_CPUS }, { "cpu-server", 1, 0, O_CPUV },
		{ "poll-yield", 1, 0, O_YIELD }, { "rt-prio", 1, 0, O_RTPRIO },
		{ "kworker-cpus", 1, 0, O_KW }, { "verify", 1, 0, O_VERIFY },
		{ "data", 1, 0, O_DATA }, { "label", 1, 0, O_LABEL },
		{ "quiet", 0, 0, O_QUIET }, { "block", 1, 0, O_BLOCK },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	char buf[512], *tok, *save;
	int c;

	err[0] = 0;
	optind = 0;	/* glibc: full re-initialisation, so tests can parse again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		switch (c) {
		case O_STRAT:
			if (parse_names(optarg, po_strat_name, NSTRAT, o->strat, err, errlen, "strategy"))
				return -1;
			break;
		case O_PLACE:
			if (parse_names(optarg, po_place_name, NPLACE, o->place, err, errlen, "placement"))
				return -1;
			break;
		case O_SCHEME:
			if (parse_names(optarg, po_scheme_name, NSCHEME, o->scheme, err, errlen, "scheme"))
				return -1;
			break;
		case O_SIZES:
			if (strlen(optarg) >= sizeof(buf)) {
				seterr(err, errlen, "--sizes: list too long");
				return -1;
			}
			strcpy(buf, optarg);
			o->nsizes = 0;
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				size_t s;

				if (o->nsizes == PO_MAX_SIZES) {
					seterr(err, errlen, "--sizes: at most %d sizes", PO_MAX_SIZES);
					return -1;
				}
				if (po_parse_size(tok, &s) || s < PO_MIN_SIZE || s > PO_MAX_SIZE) {
					seterr(err, errlen, "--sizes: bad size '%s' (%d bytes .. %lu MiB)",
					       tok, PO_MIN_SIZE, PO_MAX_SIZE >> 20);
					return -1;
				}
				o->sizes[o->nsizes++] = s;
			}
			if (!o->nsizes) {
				seterr(err, errlen, "--sizes: empty list");
				return -1;
			}
			break;
		case O_ITERS:
			if (parse_int(optarg, 1, 1000000, &o->iters)) {
				seterr(err, errlen, "--iters: want 1..1000000, got '%s'", optarg);
				return -1;
			}
			break;
		case O_WARMUP:
			if (parse_int(optarg, 0, 1000000, &o->warmup)) {
				seterr(err, errlen, "--warmup: want 0..1000000, got '%s'", optarg);
				return -1;
			}
			break;
		case O_BLOCK:
			if (parse_int(optarg, 0, 1000000, &o->block)) {
				seterr(err, errlen, "--block: want 0..1000000, got '%s'", optarg);
				return -1;
			}
			break;
		case O_TBITERS:
			if (parse_int(optarg, 1, 1000000, &o->tb_iters)) {
				seterr(err, errlen, "--tb-iters: want 1..1000000, got '%s'", optarg);
				return -1;
			}
			break;
		case O_CPUC:
		case O_CPUS:
		case O_CPUV: {
			int *dst = c == O_CPUC ? &o->cpu_compute : c == O_CPUS ? &o->cpu_spare : &o->cpu_server;

			if (po_parse_cpu(optarg, c == O_CPUS, dst)) {
				seterr(err, errlen, "bad CPU '%s'", optarg);
				return -1;
			}
			break;
		}
		case O_YIELD:
			if (parse_int(optarg, 0, INT_MAX, &o->poll_yield)) {
				seterr(err, errlen, "--poll-yield: want a count >= 0, got '%s'", optarg);
				return -1;
			}
			break;
		case O_RTPRIO:
			if (parse_int(optarg, 1, 99, &o->rt_prio)) {
				seterr(err, errlen, "--rt-prio: want 1..99, got '%s'", optarg);
				return -1;
			}
			break;
		case O_KW:
			if (!strcmp(optarg, "strict"))
				o->kworker = KW_STRICT;
			else if (!strcmp(optarg, "follow"))
				o->kworker = KW_FOLLOW;
			else if (!strcmp(optarg, "any"))
				o->kworker = KW_ANY;
			else {
				seterr(err, errlen, "--kworker-cpus: strict, follow or any, got '%s'", optarg);
				return -1;
			}
			break;
		case O_VERIFY:
			if (!strcmp(optarg, "all"))
				o->verify = VERIFY_ALL;
			else if (!strcmp(optarg, "first-last"))
				o->verify = VERIFY_FIRST_LAST;
			else {
				seterr(err, errlen, "--verify: first-last or all, got '%s'", optarg);
				return -1;
			}
			break;
		case O_DATA: o->data = optarg; break;
		case O_LABEL: o->label = optarg; break;
		case O_QUIET: o->quiet = 1; break;
		case 'h': o->help = 1; break;
		case ':':
			seterr(err, errlen, "option %s needs an argument", argv[optind - 1]);
			return -1;
		default:
			seterr(err, errlen, "unknown option %s", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		seterr(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!o->tb_iters)
		o->tb_iters = o->iters;
	if (o->cpu_spare >= 0 && o->cpu_compute >= 0 && o->cpu_spare == o->cpu_compute) {
		seterr(err, errlen, "--cpu-spare equals --cpu-compute: that is the shared placement");
		return -1;
	}
	return 0;
}
