/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The KPROG_* environment variables the shim reads: one table (env.c)
 * with each variable's type, default and meaning, so that the shim's
 * reads, `kprog-info --env`, libkprog(3) and docs/configuration.md
 * cannot drift apart. A new variable is a new id here and a row in the
 * table. No MPI and no shim state: kprog-info and the unit test link it.
 */
#ifndef KPROG_SHIM_ENV_H
#define KPROG_SHIM_ENV_H

#include <stdbool.h>
#include <stdio.h>

enum kp_env_id {
	KP_ENV_DISABLE,
	KP_ENV_TRANSPORT,
	KP_ENV_VERBOSE,
	KP_ENV_EAGER_LIMIT,
	KP_ENV_FAST,
	KP_ENV_FAST_LIMIT,
	KP_ENV_RTS,
	KP_ENV_SPIN_US,
	KP_ENV_SPIN_MIN_US,
	KP_ENV_SPIN_MAX_US,
	KP_ENV_SPIN_DEDICATED_US,
	KP_ENV_SPIN_OVERSUB_US,
	KP_ENV_FULL_WAIT_US,
	KP_ENV_RECV_COPY_MAX,
	KP_ENV_WAITPROF,
	KP_ENV_WAITPROF_OUT,
	KP_ENV_WAITPROF_STAMP,
	KP_ENV_MON_MPIT,
	KP_ENV_COLL,
	KP_ENV_COLL_MIN,
	KP_ENV_RECV_BATCH,
	KP_ENV_SMALL_RECV_YIELD,
	KP_ENV_NET_POLL_US,
	KP_ENV_NR
};

enum kp_env_type {
	KP_ENV_BOOL,	/* 1/0, yes/no, true/false, on/off (any case) */
	KP_ENV_TRI,	/* a boolean, or "auto" */
	KP_ENV_INT,	/* a decimal integer in [min, max] */
	KP_ENV_CHOICE,	/* one of the words of choices, '|'-separated */
	KP_ENV_STR,	/* any non-empty string */
};

struct kp_env_var {
	const char *name;
	enum kp_env_type type;
	const char *def;	/* the default, as a user would write it */
	long min, max;		/* KP_ENV_INT */
	const char *choices;	/* KP_ENV_CHOICE */
	const char *help;	/* one line: what it does */
};

extern const struct kp_env_var kp_env_vars[KP_ENV_NR];

/* Parsers, for the table's types; 0 on success, -1 if @s is not one. */
int kp_env_parse_bool(const char *s, bool *out);
int kp_env_parse_long(const char *s, long *out);

/*
 * Why @s is not a usable value of @v (a static string), or NULL if it
 * is. An unset or empty variable is never checked: it takes the default.
 */
const char *kp_env_invalid(const struct kp_env_var *v, const char *s);

/*
 * The variable's value: its setting when usable, else its default. An
 * unusable setting is reported once per variable on @kp_env_report's
 * stream (the shim sets it on world rank 0 only; NULL: silent).
 */
bool kp_env_bool(enum kp_env_id id);
int kp_env_tri(enum kp_env_id id);	/* 0, 1, or -1 for "auto" */
long kp_env_long(enum kp_env_id id);
const char *kp_env_str(enum kp_env_id id);

extern FILE *kp_env_report;

#endif
