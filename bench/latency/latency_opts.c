// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench/latency_opts.c: see latency_opts.h. */
#include "latency_opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void lat_opts_default(struct lat_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->modes = LAT_PINGPONG | LAT_NPSCALE | LAT_MSGRATE;
	o->n_pp = lat_parse_sizes("0..64K", o->pp_sizes, LAT_MAX_SIZES);
	o->n_np = lat_parse_sizes("8", o->np_sizes, LAT_MAX_SIZES);
	o->n_mr = lat_parse_sizes("1..4096", o->mr_sizes, LAT_MAX_SIZES);
	o->iters = 1000;
	o->iters_large = 100;
	o->warmup = 100;
	o->warmup_large = 10;
	o->large = 8192;
	o->batches = 20;
	o->np_iters = 1000;
	o->np_warmup = 100;
	o->np_batches = 20;
	o->window = 64;
	o->loops = 20;
	o->reps = 11;
	o->mr_warmup = 10;
	o->ack = 4;
	o->label = "run";
}

void lat_usage(FILE *f, const char *prog)
{
	fprintf(f,
"Usage: mpirun -np N %s [MODE[,MODE..]] [options]      (--help works without mpirun)\n"
"\n"
"Small-message latency, latency as the number of processes grows, and message\n"
"rate, for plain Open MPI or under the kprog shim (LD_PRELOAD libkprog.so);\n"
"bench/latency/run-latency runs both side by side. Times: clock_gettime(CLOCK_MONOTONIC).\n"
"Before every measurement the ranks synchronise with explicit send/recv (a\n"
"\"go\" message and a \"ready\" reply, outside the timed region).\n"
"\n"
"Modes (default: all three; \"all\" also works):\n"
"  pingpong  MPI_Send/MPI_Recv ping-pong between ranks 0 and 1 (osu_latency):\n"
"            per size, warm-up round trips, then timed round trips in batches of\n"
"            K; one-way latency of a batch = its time / 2K. Reported: median, q1,\n"
"            q3, min, max of the batches (not one mean: the machine is noisy).\n"
"  npscale   the HPCC-style latency as the number of processes grows (Open MPI's\n"
"            'sm latency' RFC): pairs (0,1),(2,3),.. ping-pong ONE PAIR AT A TIME\n"
"            while every other rank waits in a blocking MPI_Recv of a token from\n"
"            rank 0 (as HPCC's idle ranks do: plain Open MPI busy-polls there,\n"
"            kprog may sleep). Per np: min/avg/max over the pairs of each pair's\n"
"            median one-way latency. Run it once per np (mpirun -np 2, 4, 8).\n"
"            One pair at a time isolates what the RFC is about: what the idle\n"
"            ranks and the number of connections cost the one measured pair.\n"
"            --concurrent also measures every pair at once (reported separately\n"
"            as npscale-concurrent). That cannot be flat on 2 vCPUs: with np = 8,\n"
"            8 ranks share 2 CPUs, so a message waits until its receiver is\n"
"            scheduled (a time slice, ms), whatever the library does.\n"
"  msgrate   osu_mbw_mr / osu_bw style: rank 0 posts a window of W MPI_Isend of\n"
"            s bytes and MPI_Waitall; rank 1 posts W MPI_Irecv and MPI_Waitall,\n"
"            then sends an ack; L windows per repetition. Messages/s and MB/s\n"
"            (10^6 B/s): median, quartiles over the repetitions.\n"
"\n"
"Options:\n"
"  --mode LIST          modes, as the positional words\n"
"  --sizes LIST         sizes of every selected mode; items are sizes (K/M\n"
"                       suffixes) or ranges LO..HI = LO and the powers of two\n"
"                       above it up to HI, e.g. 0..64K or 8,64,1K\n"
"  --pp-sizes LIST      pingpong sizes (default 0..64K)\n"
"  --np-sizes LIST      npscale sizes (default 8)\n"
"  --mr-sizes LIST      msgrate sizes (default 1..4096)\n"
"  --iters N            pingpong: timed round trips per size (default 1000)\n"
"  --iters-large N      ... for sizes above --large (default 100)\n"
"  --warmup N           untimed round trips first (default 100)\n"
"  --warmup-large N     ... above --large (default 10)\n"
"  --large BYTES        osu_latency's large-message threshold (default 8192)\n"
"  --batches B          batches per point (default 20): K = iters / B\n"
"  --np-iters N         npscale: timed round trips per pair (default 1000)\n"
"  --np-warmup N        npscale: warm-up round trips per pair (default 100)\n"
"  --np-batches B       npscale: batches per pair (default 20)\n"
"  --concurrent         npscale: also every pair at once\n"
"  --waitprof-ab        pingpong under the shim with KPROG_WAITPROF set: its\n"
"                       batches alternate the profiler off and on in the same\n"
"                       processes; one row per size with both and the cost\n"
"                       per profiled MPI_Recv (bench/latency/run-waitprof)\n"
"  --window W           msgrate: messages per window (default 64)\n"
"  --loops L            msgrate: windows per repetition (default 20)\n"
"  --reps R             msgrate: timed repetitions per size (default 11)\n"
"  --mr-warmup N        msgrate: untimed windows first (default 10, as osu_mbw_mr)\n"
"  --ack BYTES          msgrate: size of the ack after each window (default 4, 0..64)\n"
"  --time-limit SEC     stop a point (a pair) after the batch or repetition that\n"
"                       passes SEC seconds, at least 3 done (default 0: none)\n"
"  --csv FILE           one row per point (header below)\n"
"  --label NAME         library label in the output and CSV (default run)\n"
"  -h, --help           this text\n"
"\n"
"Data check: every timed message carries its sequence number in its first\n"
"min(size, 4) bytes, checked by the receiver; before and after the timed part\n"
"of each point, a verification pass fills every byte with a pattern that\n"
"changes per pass, pre-fills the receive buffer and 64 bytes past it with\n"
"0xA5 and checks payload, guard and received count (msgrate: every buffer of\n"
"a window). Errors go to stderr and the errors column; exit status 1.\n"
"The kprog status of the run (active / passthrough / absent / partial, from\n"
"/proc/self/{maps,fd} of every rank) is printed at start and end.\n"
"\n"
"CSV: " LAT_CSV_HEADER "\n"
"  unit us: one-way latency; samples = batches; npscale pair \"all\": the\n"
"  statistics over the pairs' medians (min, mean, max = the RFC's min/avg/max).\n"
"  unit msg/s: message rate; samples = repetitions; mb_s = median x size / 1e6.\n",
		prog);
}

static int to_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int to_modes(const char *s, unsigned *out)
{
	char buf[128], *w, *save = NULL;
	unsigned m = 0;

	if (!s || !*s || strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "pingpong"))
			m |= LAT_PINGPONG;
		else if (!strcmp(w, "npscale"))
			m |= LAT_NPSCALE;
		else if (!strcmp(w, "msgrate"))
			m |= LAT_MSGRATE;
		else if (!strcmp(w, "all"))
			m |= LAT_PINGPONG | LAT_NPSCALE | LAT_MSGRATE;
		else
			return -1;
	}
	if (!m)
		return -1;
	*out |= m;
	return 0;
}

#define BIG 100000000

static const char *const valued[] = {
	"--mode", "--sizes", "--pp-sizes", "--np-sizes", "--mr-sizes", "--iters", "--iters-large",
	"--warmup", "--warmup-large", "--large", "--batches", "--np-iters", "--np-warmup", "--np-batches",
	"--window", "--loops", "--reps", "--mr-warmup", "--ack", "--time-limit", "--csv", "--label",
};

static int known(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (!strcmp(name, valued[i]))
			return 1;
	return 0;
}

int lat_parse_opts(int argc, char **argv, struct lat_opts *o, char *err, size_t errlen)
{
	const char *sizes = NULL, *pp = NULL, *np = NULL, *mr = NULL;
	unsigned modes = 0;
	int i;

	lat_opts_default(o);
	for (i = 1; i < argc; i++) {
		char name[32];
		const char *a = argv[i], *v = NULL, *eq;
		int bad = 0;

		if (a[0] != '-') {
			if (to_modes(a, &modes)) {
				snprintf(err, errlen, "unknown mode '%s' (pingpong, npscale, msgrate, all)", a);
				return -1;
			}
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = 1;
			return 0;
		}
		if (!strcmp(a, "--concurrent")) {
			o->concurrent = 1;
			continue;
		}
		if (!strcmp(a, "--waitprof-ab")) {
			o->waitprof_ab = 1;
			continue;
		}
		eq = strchr(a, '=');
		if (eq && (size_t)(eq - a) < sizeof(name)) {
			memcpy(name, a, eq - a);
			name[eq - a] = 0;
			v = eq + 1;
		} else {
			snprintf(name, sizeof(name), "%s", a);
			if (!known(name))
				break;
			if (i + 1 >= argc) {
				snprintf(err, errlen, "%s needs a value", a);
				return -1;
			}
			v = argv[++i];
		}
		if (!known(name))
			break;
		if (!strcmp(name, "--mode"))
			bad = to_modes(v, &modes);
		else if (!strcmp(name, "--sizes"))
			sizes = v;
		else if (!strcmp(name, "--pp-sizes"))
			pp = v;
		else if (!strcmp(name, "--np-sizes"))
			np = v;
		else if (!strcmp(name, "--mr-sizes"))
			mr = v;
		else if (!strcmp(name, "--iters"))
			bad = to_int(v, 1, BIG, &o->iters);
		else if (!strcmp(name, "--iters-large"))
			bad = to_int(v, 1, BIG, &o->iters_large);
		else if (!strcmp(name, "--warmup"))
			bad = to_int(v, 0, BIG, &o->warmup);
		else if (!strcmp(name, "--warmup-large"))
			bad = to_int(v, 0, BIG, &o->warmup_large);
		else if (!strcmp(name, "--large"))
			bad = lat_parse_size(v, &o->large);
		else if (!strcmp(name, "--batches"))
			bad = to_int(v, 1, 100000, &o->batches);
		else if (!strcmp(name, "--np-iters"))
			bad = to_int(v, 1, BIG, &o->np_iters);
		else if (!strcmp(name, "--np-warmup"))
			bad = to_int(v, 0, BIG, &o->np_warmup);
		else if (!strcmp(name, "--np-batches"))
			bad = to_int(v, 1, 100000, &o->np_batches);
		else if (!strcmp(name, "--window"))
			bad = to_int(v, 1, 1024, &o->window);
		else if (!strcmp(name, "--loops"))
			bad = to_int(v, 1, BIG, &o->loops);
		else if (!strcmp(name, "--reps"))
			bad = to_int(v, 1, 100000, &o->reps);
		else if (!strcmp(name, "--mr-warmup"))
			bad = to_int(v, 0, BIG, &o->mr_warmup);
		else if (!strcmp(name, "--ack"))
			bad = to_int(v, 0, 64, &o->ack);
		else if (!strcmp(name, "--time-limit")) {
			char *end;

			o->time_limit = strtod(v, &end);
			bad = !*v || *end || !(o->time_limit >= 0);
		} else if (!strcmp(name, "--csv"))
			o->csv = v;
		else if (!strcmp(name, "--label")) {
			bad = !*v || strlen(v) >= LAT_WORD || strchr(v, ',') != NULL;
			o->label = v;
		}
		if (bad) {
			snprintf(err, errlen, "bad value '%s' for %s", v, name);
			return -1;
		}
	}
	if (i < argc) {
		snprintf(err, errlen, "unknown option %s (see --help)", argv[i]);
		return -1;
	}
	if (modes)
		o->modes = modes;
	{
		struct { const char *list, *name; size_t *out; int *n; } s[] = {
			{ pp ? pp : sizes, "--pp-sizes", o->pp_sizes, &o->n_pp },
			{ np ? np : sizes, "--np-sizes", o->np_sizes, &o->n_np },
			{ mr ? mr : sizes, "--mr-sizes", o->mr_sizes, &o->n_mr },
		};

		for (i = 0; i < 3; i++) {
			int n;

			if (!s[i].list)
				continue;
			n = lat_parse_sizes(s[i].list, s[i].out, LAT_MAX_SIZES);
			if (n < 0) {
				snprintf(err, errlen, "bad size list '%s' (%s or --sizes)", s[i].list, s[i].name);
				return -1;
			}
			*s[i].n = n;
		}
	}
	return 0;
}

void lat_batch_plan(int iters, int batches, int *k, int *nb)
{
	if (iters < 1)
		iters = 1;
	if (batches < 1)
		batches = 1;
	if (batches > iters)
		batches = iters;
	*k = iters / batches;
	*nb = batches;
}
