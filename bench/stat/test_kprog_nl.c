// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kprog_nl.c without a kernel: reply messages of both families ("kprog",
 * "kprog_bench") built with libnl (nlmsg_alloc, genlmsg_put, nla_put) are
 * parsed back into the structs; the IRQ_START request is built and its
 * attributes read back.
 */
#include <errno.h>
#include <string.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>
#include "cpulist.h"
#include "kprog_nl.h"
#include "test_expect.h"

#define FAMILY 0x1d

static struct nl_msg *reply_v(uint8_t cmd, uint8_t version)
{
	struct nl_msg *msg = nlmsg_alloc();

	genlmsg_put(msg, 1, 7, FAMILY, 0, NLM_F_MULTI, cmd, version);
	return msg;
}

static struct nl_msg *reply(uint8_t cmd)
{
	return reply_v(cmd, KPROG_BENCH_GENL_VERSION);
}

/* Every counter family @which has, 64-bit values, a pad attribute and an unknown one. */
static void full_stats_message(enum kprog_family which)
{
	int cpu_attr = which == KPROG_FAMILY_BENCH ? KPROG_BENCH_A_CPU : KPROG_A_CPU;
	int pad = which == KPROG_FAMILY_BENCH ? KPROG_BENCH_A_PAD : KPROG_A_PAD;
	int max = which == KPROG_FAMILY_BENCH ? KPROG_BENCH_A_MAX : KPROG_A_MAX;
	struct kprog_cpu_stats st;
	struct nl_msg *msg;
	int s, n = 0, ok = 1;

	msg = reply_v(KPROG_CMD_GET_STATS, KPROG_GENL_VERSION);
	nla_put_u32(msg, cpu_attr, 3);
	nla_put(msg, pad, 0, NULL);
	for (s = 0; s < KS_NSTAT; s++)
		if (kprog_stat_attr(which, s))
			nla_put_u64(msg, kprog_stat_attr(which, s), (1ULL << 40) + (uint64_t)s * 11);
	nla_put_u32(msg, max + 3, 99);	/* a newer kernel's attribute */
	EXPECT(kprog_nl_parse_stats(which, nlmsg_hdr(msg), &st) == 0,
	       "%s: full stats message parses", kprog_family_name(which));
	for (s = 0; s < KS_NSTAT; s++) {
		if (!kprog_stat_attr(which, s)) {
			ok &= st.v[s] == 0;
			continue;
		}
		ok &= st.v[s] == (1ULL << 40) + (uint64_t)s * 11;
		n++;
	}
	EXPECT(ok && n > 4 && st.cpu == 3, "%s: each of its %d counters in its slot, cpu 3 (got cpu %d)",
	       kprog_family_name(which), n, st.cpu);
	nlmsg_free(msg);
}

static void stats_messages(void)
{
	struct kprog_cpu_stats st;
	struct nl_msg *msg;

	full_stats_message(KPROG_FAMILY_KPROG);
	full_stats_message(KPROG_FAMILY_BENCH);

	/* counters left out are 0 */
	msg = reply(KPROG_BENCH_CMD_GET_STATS);
	nla_put_u32(msg, KPROG_BENCH_A_CPU, 0);
	nla_put_u64(msg, KPROG_BENCH_A_STAT_HARDIRQ_RUNS, 8192);
	memset(&st, 0xff, sizeof(st));
	EXPECT(kprog_nl_parse_stats(KPROG_FAMILY_BENCH, nlmsg_hdr(msg), &st) == 0 && st.cpu == 0 &&
	       st.v[KS_HARDIRQ_RUNS] == 8192 && st.v[KS_EVENTS] == 0 && st.v[KS_WAKEUPS] == 0,
	       "partial stats message");
	nlmsg_free(msg);

	/* no CPU attribute */
	msg = reply_v(KPROG_CMD_GET_STATS, KPROG_GENL_VERSION);
	nla_put_u64(msg, KPROG_A_STAT_EVENTS, 1);
	EXPECT(kprog_nl_parse_stats(KPROG_FAMILY_KPROG, nlmsg_hdr(msg), &st) == -EPROTO,
	       "stats without CPU rejected");
	nlmsg_free(msg);

	/* a counter too short for a u64 */
	msg = reply_v(KPROG_CMD_GET_STATS, KPROG_GENL_VERSION);
	nla_put_u32(msg, KPROG_A_CPU, 1);
	nla_put_u32(msg, KPROG_A_STAT_BYTES, 5);
	EXPECT(kprog_nl_parse_stats(KPROG_FAMILY_KPROG, nlmsg_hdr(msg), &st) == -EPROTO,
	       "u32 where u64 is due rejected");
	nlmsg_free(msg);
	msg = reply(KPROG_BENCH_CMD_GET_STATS);
	nla_put_u32(msg, KPROG_BENCH_A_CPU, 1);
	nla_put_u32(msg, KPROG_BENCH_A_STAT_COALESCED, 5);
	EXPECT(kprog_nl_parse_stats(KPROG_FAMILY_BENCH, nlmsg_hdr(msg), &st) == -EPROTO,
	       "u32 where u64 is due rejected (kprog_bench)");
	nlmsg_free(msg);
}

static void status_messages(void)
{
	struct kprog_irq_status st;
	uint64_t words[2] = { 1ULL << 1, 1ULL << 1 };	/* CPUs 1 and 65 */
	struct nl_msg *msg;

	msg = reply(KPROG_BENCH_CMD_IRQ_STATUS);
	nla_put_u8(msg, KPROG_BENCH_A_IRQ_RUNNING, 1);
	nla_put_u32(msg, KPROG_BENCH_A_IRQ_HZ, 8192);
	nla_put_u32(msg, KPROG_BENCH_A_IRQ_MODE, KPROG_BENCH_IRQ_WAKE);
	nla_put_u32(msg, KPROG_BENCH_A_IRQ_LOAD_NS, 250);
	nla_put(msg, KPROG_BENCH_A_IRQ_CPUS, sizeof(words), words);
	EXPECT(kprog_nl_parse_irq_status(nlmsg_hdr(msg), &st) == 0, "status parses");
	EXPECT(st.running == 1 && st.hz == 8192 && st.mode == KPROG_BENCH_IRQ_WAKE && st.load_ns == 250,
	       "status fields %d %u %u %u", st.running, st.hz, st.mode, st.load_ns);
	EXPECT(st.have_cpus && CPU_COUNT(&st.cpus) == 2 && CPU_ISSET(1, &st.cpus) &&
	       CPU_ISSET(65, &st.cpus), "status CPU bitmap");
	nlmsg_free(msg);

	msg = reply(KPROG_BENCH_CMD_IRQ_STATUS);
	nla_put_u8(msg, KPROG_BENCH_A_IRQ_RUNNING, 0);
	EXPECT(kprog_nl_parse_irq_status(nlmsg_hdr(msg), &st) == 0 && st.running == 0 &&
	       !st.have_cpus && st.hz == 0, "idle status");
	nlmsg_free(msg);

	msg = reply(KPROG_BENCH_CMD_IRQ_STATUS);
	nla_put_u32(msg, KPROG_BENCH_A_IRQ_HZ, 100);
	EXPECT(kprog_nl_parse_irq_status(nlmsg_hdr(msg), &st) == -EPROTO, "status without RUNNING");
	nlmsg_free(msg);

	msg = reply(KPROG_BENCH_CMD_IRQ_STATUS);
	nla_put_u8(msg, KPROG_BENCH_A_IRQ_RUNNING, 1);
	nla_put(msg, KPROG_BENCH_A_IRQ_CPUS, 5, words);
	EXPECT(kprog_nl_parse_irq_status(nlmsg_hdr(msg), &st) == -EPROTO,
	       "bitmap not made of u64 words rejected");
	nlmsg_free(msg);
}

/* An NLMSG_ERROR for @err; @echo bytes of request payload unless capped; TLVs if @text. */
static struct nl_msg *error_msg(int err, int capped, int echo, const char *text)
{
	struct nl_msg *msg = nlmsg_alloc_simple(NLMSG_ERROR,
						(capped ? NLM_F_CAPPED : 0) |
						(text ? NLM_F_ACK_TLVS : 0));
	struct nlmsgerr *e = nlmsg_reserve(msg, sizeof(*e), NLMSG_ALIGNTO);

	e->error = -err;
	e->msg.nlmsg_len = NLMSG_HDRLEN + (capped ? 0 : echo);
	e->msg.nlmsg_type = FAMILY;
	if (!capped && echo)
		memset(nlmsg_reserve(msg, echo, NLMSG_ALIGNTO), 0xab, echo);
	if (text)
		nla_put_string(msg, NLMSGERR_ATTR_MSG, text);
	return msg;
}

static void error_messages(void)
{
	struct nl_msg *msg;
	char m[64], tiny[6];

	msg = error_msg(EINVAL, 1, 0, "hz above irq_max_hz");
	EXPECT(kprog_nl_parse_error(nlmsg_hdr(msg), m, sizeof(m)) == EINVAL &&
	       !strcmp(m, "hz above irq_max_hz"), "capped error with message: '%s'", m);
	EXPECT(kprog_nl_parse_error(nlmsg_hdr(msg), tiny, sizeof(tiny)) == EINVAL &&
	       !strcmp(tiny, "hz ab"), "message cut to the buffer: '%s'", tiny);
	nlmsg_free(msg);

	msg = error_msg(EBUSY, 0, 20, "already running");
	EXPECT(kprog_nl_parse_error(nlmsg_hdr(msg), m, sizeof(m)) == EBUSY &&
	       !strcmp(m, "already running"), "uncapped error: TLVs after the echoed request: '%s'", m);
	nlmsg_free(msg);

	msg = error_msg(EPERM, 1, 0, NULL);
	strcpy(m, "stale");
	EXPECT(kprog_nl_parse_error(nlmsg_hdr(msg), m, sizeof(m)) == EPERM && !m[0],
	       "error without extended ack");
	nlmsg_free(msg);

	msg = error_msg(0, 1, 0, NULL);
	EXPECT(kprog_nl_parse_error(nlmsg_hdr(msg), m, sizeof(m)) == 0, "an ACK is errno 0");
	nlmsg_free(msg);

	/* the end of a dump: 0, or the errno of a dump that failed half-way */
	{
		int v = -EMSGSIZE;

		msg = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
		nlmsg_append(msg, &v, sizeof(v), NLMSG_ALIGNTO);
		EXPECT(kprog_nl_parse_done(nlmsg_hdr(msg)) == EMSGSIZE, "failed dump's DONE");
		nlmsg_free(msg);
		v = 0;
		msg = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
		nlmsg_append(msg, &v, sizeof(v), NLMSG_ALIGNTO);
		EXPECT(kprog_nl_parse_done(nlmsg_hdr(msg)) == 0, "complete dump's DONE");
		nlmsg_free(msg);
		msg = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
		EXPECT(kprog_nl_parse_done(nlmsg_hdr(msg)) == 0, "DONE without payload");
		nlmsg_free(msg);
	}
}

/* Attribute @type of request @msg, NULL if absent. */
static struct nlattr *req_attr(struct nl_msg *msg, int type)
{
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));

	return nla_find(genlmsg_attrdata(g, 0), genlmsg_attrlen(g, 0), type);
}

static void irq_start_request(void)
{
	struct kprog_irq_req req = { .hz = 8192, .mode = KPROG_BENCH_IRQ_TASKLET, .load_ns = 500,
				     .duration_ms = 3000 };
	struct nl_msg *msg;
	struct genlmsghdr *g;
	struct nlattr *a;
	cpu_set_t cpus;
	uint64_t w;

	cpulist_parse("0,2", &cpus);
	req.cpus = &cpus;
	msg = kprog_nl_build_irq_start(FAMILY, &req);
	EXPECT(msg != NULL, "IRQ_START built");
	if (!msg)
		return;
	g = nlmsg_data(nlmsg_hdr(msg));
	EXPECT(nlmsg_hdr(msg)->nlmsg_type == FAMILY && g->cmd == KPROG_BENCH_CMD_IRQ_START &&
	       g->version == KPROG_BENCH_GENL_VERSION && nlmsg_hdr(msg)->nlmsg_flags & NLM_F_ACK,
	       "header: family, command, version, ack");
	EXPECT(nla_get_u32(req_attr(msg, KPROG_BENCH_A_IRQ_HZ)) == 8192 &&
	       nla_get_u32(req_attr(msg, KPROG_BENCH_A_IRQ_MODE)) == KPROG_BENCH_IRQ_TASKLET &&
	       nla_get_u32(req_attr(msg, KPROG_BENCH_A_IRQ_LOAD_NS)) == 500 &&
	       nla_get_u32(req_attr(msg, KPROG_BENCH_A_IRQ_DURATION_MS)) == 3000, "u32 attributes");
	a = req_attr(msg, KPROG_BENCH_A_IRQ_CPUS);
	EXPECT(a && nla_len(a) == 8, "CPU bitmap is one u64 word");
	if (a) {
		memcpy(&w, nla_data(a), 8);
		EXPECT(w == 0x5, "bitmap of CPUs 0 and 2: %llx", (unsigned long long)w);
	}
	nlmsg_free(msg);

	req.cpus = NULL;
	msg = kprog_nl_build_irq_start(FAMILY, &req);
	EXPECT(msg && !req_attr(msg, KPROG_BENCH_A_IRQ_CPUS), "no CPU set: attribute left out");
	nlmsg_free(msg);

	CPU_ZERO(&cpus);
	req.cpus = &cpus;
	msg = kprog_nl_build_irq_start(FAMILY, &req);
	EXPECT(!msg, "empty CPU set refused");
	nlmsg_free(msg);
}

static void mode_names(void)
{
	int m, ok = 1;

	for (m = 0; m < __KPROG_BENCH_IRQ_MODE_MAX; m++)
		ok &= kprog_irq_mode_parse(kprog_irq_mode_name(m)) == m;
	EXPECT(ok, "mode names round-trip");
	EXPECT(kprog_irq_mode_parse("softirq") == -1 && !kprog_irq_mode_name(__KPROG_BENCH_IRQ_MODE_MAX),
	       "unknown modes");
	EXPECT(!strcmp(kprog_irq_mode_name(KPROG_BENCH_IRQ_WORK), "work"), "work mode name");
}

void test_kprog_nl(void)
{
	stats_messages();
	status_messages();
	error_messages();
	irq_start_request();
	mode_names();
}
