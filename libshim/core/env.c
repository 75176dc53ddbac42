// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The KPROG_* variables (env.h): the table, the parsers, and the reads
 * that fall back to the default and say so once when a setting cannot be
 * used, instead of replacing it silently.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "env.h"

#define US_MAX 10000000L	/* 10 s: no wait of the shim is meant to spin longer */

const struct kp_env_var kp_env_vars[KP_ENV_NR] = {
	[KP_ENV_DISABLE] = { "KPROG_DISABLE", KP_ENV_BOOL, "0", 0, 0, NULL,
		"pass every MPI call through to Open MPI unchanged" },
	[KP_ENV_TRANSPORT] = { "KPROG_TRANSPORT", KP_ENV_CHOICE, "auto", 0, 0, "auto|ib|shm|local",
		"ranks of other nodes: auto (kprog_ib when every node has it), ib (also ranks of this node, through the NIC's loopback), shm or local (communicators spanning nodes pass through)" },
	[KP_ENV_VERBOSE] = { "KPROG_VERBOSE", KP_ENV_INT, "0", 0, 3, NULL,
		"log to stderr: 1 each rank's join line and set-up decisions, 2 also the connection exchanges, 3 more" },
	[KP_ENV_EAGER_LIMIT] = { "KPROG_EAGER_LIMIT", KP_ENV_INT, "0", 0, UINT_MAX, NULL,
		"eager limit of the job in bytes; 0 takes the module's eager_limit" },
	[KP_ENV_FAST] = { "KPROG_FAST", KP_ENV_BOOL, "1", 0, 0, NULL,
		"use the shared-memory channels of the small-message fast path" },
	[KP_ENV_FAST_LIMIT] = { "KPROG_FAST_LIMIT", KP_ENV_INT, "-1", -1, INT_MAX, NULL,
		"largest message through a channel in bytes, below the module's fast_limit; -1 the module's, 0 no channels" },
	[KP_ENV_RTS] = { "KPROG_RTS", KP_ENV_BOOL, "1", 0, 0, NULL,
		"contiguous rendezvous sends through a grant slot and a channel record, without a system call" },
	[KP_ENV_SPIN_US] = { "KPROG_SPIN_US", KP_ENV_INT, "-1", -1, US_MAX, NULL,
		"fixed spin of a blocking call before it sleeps, in us; -1 adapts it (see the next three)" },
	[KP_ENV_SPIN_MIN_US] = { "KPROG_SPIN_MIN_US", KP_ENV_INT, "1", 0, US_MAX, NULL,
		"lower bound of the adaptive spin, in us" },
	[KP_ENV_SPIN_MAX_US] = { "KPROG_SPIN_MAX_US", KP_ENV_INT, "1000", 0, US_MAX, NULL,
		"upper bound of the adaptive spin, in us" },
	[KP_ENV_SPIN_DEDICATED_US] = { "KPROG_SPIN_DEDICATED_US", KP_ENV_INT, "5000", -1, US_MAX, NULL,
		"spin when every rank of the node has a CPU of its own, in us; -1 keeps the adaptive spin there too" },
	[KP_ENV_SPIN_OVERSUB_US] = { "KPROG_SPIN_OVERSUB_US", KP_ENV_INT, "-1", -1, US_MAX, NULL,
		"spin (yielding the CPU) when ranks outnumber their CPUs or another job crowds them, in us; -1 the adaptive limit" },
	[KP_ENV_FULL_WAIT_US] = { "KPROG_FULL_WAIT_US", KP_ENV_INT, "50", 0, US_MAX, NULL,
		"how long a send spins for room in a full channel before it takes the kernel path, in us" },
	[KP_ENV_RECV_COPY_MAX] = { "KPROG_RECV_COPY_MAX", KP_ENV_INT, "65536", 0, LONG_MAX, NULL,
		"largest nonblocking receive, in bytes, that copies a rendezvous message already sent in its own call rather than by a kernel worker on the sender's CPU; 0 never" },
	[KP_ENV_WAITPROF] = { "KPROG_WAITPROF", KP_ENV_BOOL, "0", 0, 0, NULL,
		"the wait-state profiler: Late Sender, Late Receiver, Wait at NxN reports at MPI_Finalize" },
	[KP_ENV_WAITPROF_OUT] = { "KPROG_WAITPROF_OUT", KP_ENV_STR, "kprog-waitprof", 0, 0, NULL,
		"prefix of the profiler's reports: PREFIX.RANK and PREFIX.all" },
	[KP_ENV_WAITPROF_STAMP] = { "KPROG_WAITPROF_STAMP", KP_ENV_BOOL, "1", 0, 0, NULL,
		"while profiling, fast-path sends carry their send time (exact Late Sender of their receives)" },
	[KP_ENV_MON_MPIT] = { "KPROG_MON_MPIT", KP_ENV_TRI, "auto", 0, 0, NULL,
		"monitoring sessions read Open MPI's collective and one-sided counts through MPI_T; auto: when --mca pml_monitoring_enable is set" },
	[KP_ENV_COLL] = { "KPROG_COLL", KP_ENV_BOOL, "1", 0, 0, NULL,
		"nonblocking collectives run as schedules in the module (0: all stay with Open MPI)" },
	[KP_ENV_COLL_MIN] = { "KPROG_COLL_MIN", KP_ENV_INT, "-1", -1, LONG_MAX, NULL,
		"smallest nonblocking collective the module runs, in bytes per rank; smaller ones (and MPI_Ibarrier) stay with Open MPI; -1 a floor per family measured with NBCBench; the v forms always go to the module" },
	[KP_ENV_RECV_BATCH] = { "KPROG_RECV_BATCH", KP_ENV_BOOL, "1", 0, 0, NULL,
		"small MPI_Irecv from other nodes wait in a queue and go to the module up to 64 in one system call, at the rank's next MPI call (0: one call each)" },
	[KP_ENV_SMALL_RECV_YIELD] = { "KPROG_SMALL_RECV_YIELD", KP_ENV_BOOL, "1", 0, 0, NULL,
		"a blocking call waiting only for small receives posted in the module (which softirq completes, no worker) yields the CPU every 8 us as for other kernel work (0: it spins without yielding; the oversubscribed and crowded rules still yield)" },
	[KP_ENV_NET_POLL_US] = { "KPROG_NET_POLL_US", KP_ENV_INT, "0", 0, 1000000, NULL,
		"in a job across nodes, a blocking call that waits for the module spins and, this often, has the module run the network completions already there on its own CPU (KPROG_WAIT_POLL), instead of waiting for the NIC's completion event to be handled; 0 (the default): never (docs/rdma.md, thirteenth session)" },
};

FILE *kp_env_report;

int kp_env_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	unsigned int i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

int kp_env_parse_long(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno)
		return -1;
	*out = v;
	return 0;
}

/* Is @s one of the '|'-separated words of @choices? */
static bool is_choice(const char *choices, const char *s)
{
	size_t n = strlen(s);
	const char *p = choices;

	while (p && *p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !strncmp(p, s, n))
			return true;
		p = bar ? bar + 1 : NULL;
	}
	return false;
}

const char *kp_env_invalid(const struct kp_env_var *v, const char *s)
{
	bool b;
	long l;

	switch (v->type) {
	case KP_ENV_BOOL:
		return kp_env_parse_bool(s, &b) ? "not a boolean (1/0, yes/no, true/false, on/off)" : NULL;
	case KP_ENV_TRI:
		if (!strcasecmp(s, "auto"))
			return NULL;
		return kp_env_parse_bool(s, &b) ? "not auto or a boolean (1/0, yes/no, true/false, on/off)" : NULL;
	case KP_ENV_INT:
		if (kp_env_parse_long(s, &l))
			return "not a decimal integer";
		return l < v->min || l > v->max ? "out of range" : NULL;
	case KP_ENV_CHOICE:
		return is_choice(v->choices, s) ? NULL : "not one of the values it takes";
	case KP_ENV_STR:
		return NULL;
	}
	return "unknown type";
}

/* The usable setting of @id, or NULL for its default (reported once if set but unusable). */
static const char *setting(enum kp_env_id id)
{
	static bool reported[KP_ENV_NR];
	const struct kp_env_var *v = &kp_env_vars[id];
	const char *s = getenv(v->name);
	const char *why;

	if (!s || !*s)
		return NULL;
	why = kp_env_invalid(v, s);
	if (!why)
		return s;
	if (kp_env_report && !reported[id]) {
		reported[id] = true;
		if (v->type == KP_ENV_INT)
			fprintf(kp_env_report, "kprog: %s=%s: %s (takes %ld..%ld); using the default, %s\n",
				v->name, s, why, v->min, v->max, v->def);
		else if (v->type == KP_ENV_CHOICE)
			fprintf(kp_env_report, "kprog: %s=%s: %s (%s); using the default, %s\n",
				v->name, s, why, v->choices, v->def);
		else
			fprintf(kp_env_report, "kprog: %s=%s: %s; using the default, %s\n",
				v->name, s, why, v->def);
	}
	return NULL;
}

bool kp_env_bool(enum kp_env_id id)
{
	const char *s = setting(id);
	bool b = false;

	if (kp_env_parse_bool(s ? s : kp_env_vars[id].def, &b))
		b = false;	/* a table whose default does not parse: a bug, caught by test_env */
	return b;
}

int kp_env_tri(enum kp_env_id id)
{
	const char *s = setting(id);
	bool b;

	if (!s)
		s = kp_env_vars[id].def;
	if (!strcasecmp(s, "auto") || kp_env_parse_bool(s, &b))
		return -1;
	return b;
}

long kp_env_long(enum kp_env_id id)
{
	const char *s = setting(id);
	long l = 0;

	if (kp_env_parse_long(s ? s : kp_env_vars[id].def, &l))
		l = 0;
	return l;
}

const char *kp_env_str(enum kp_env_id id)
{
	const char *s = setting(id);

	return s ? s : kp_env_vars[id].def;
}
