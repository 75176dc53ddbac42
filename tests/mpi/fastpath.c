// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI semantics across kprog's two paths: small messages (up to the
 * module's fast_limit, 8192 bytes by default) go through shared-memory
 * channels and are matched in user space; larger ones (rendezvous above
 * the eager limit, 8192) and synchronous sends go through the kernel.
 * tests/mpi/run also runs it as `fastpath4k`, with KPROG_FAST_LIMIT=4096:
 * then the medium messages (4097..8192 bytes) take the kernel's eager
 * path. Whatever path each message takes, MPI must hold.
 * Under plain Open MPI this is an ordinary MPI test. Run with 4 ranks
 * (works with 2: the ANY_SOURCE phases then have one sender).
 *
 *  A  non-overtaking: one sender, one tag, a random mix of zero-byte,
 *     small, medium, large messages and Ssends, in 16 patterns, with the
 *     receives posted before, after, interleaved, half before; into
 *     buffers of MAXLEN, then of the message's size
 *  B  ANY_SOURCE / ANY_TAG from every other rank, mixed paths: receives
 *     as the messages come, all posted before, one tag first; then small
 *     messages only into small buffers; per-sender order
 *  C  Probe, Iprobe, Mprobe, Improbe (ANY_SOURCE, ANY_TAG) then
 *     Recv/Mrecv/Imrecv: the probed message is the one received
 *  D  MPI_Cancel of a posted small receive: cancelled, buffer untouched,
 *     the next message goes to the next receive
 *  E  a channel filled to its bound: 6000 small Isends (and 1500 up to
 *     4096 bytes) before the receiver posts anything, received in order
 *  F  receives posted while older messages of the same sender wait in
 *     the kernel (medium, large), other tags passing them
 *  G  persistent requests: small, large and Ssend started in varying
 *     orders on one tag
 *  H  derived datatypes (vector, indexed) through the fast path
 *  I  zero-byte messages: Send/Ssend, Recv with count 0 and more, Probe
 *  J  truncation on the fast path (MPI_ERRORS_RETURN): Recv, Irecv
 *     posted first, Mprobe+Mrecv; the next message is intact
 *  K  a small MPI_Issend does not complete before its receive is posted
 *  L  small messages only: a stream received one by one, a ping-pong
 *     with receives posted first
 */
#include "check.h"

#define MAXLEN	100000
#define SLACK	64
static int rank, size;

/* ---------------- message plans ---------------- */

enum { K_ZERO, K_SMALL, K_MED, K_LARGE, K_SSEND };
static const char *const kname[] = { "zero", "small", "medium", "large", "ssend" };
static const int small_lens[] = { 1, 7, 64, 100, 1000, 2048, 4095, 4096 };

struct msg {
	int kind, len, tag;
};

static uint32_t rng(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/*
 * @n messages of a plan from @seed, tags tag0 .. tag0 + ntags - 1; with
 * @small_only only zero-byte and small messages.
 */
static void plan(uint32_t seed, int n, struct msg *m, int tag0, int ntags, int small_only)
{
	uint32_t s = seed * 2654435761u + 12345;
	int i, r;

	for (i = 0; i < n; i++) {
		r = (int)(rng(&s) % 100);
		if (small_only)
			r = r % 55;
		m[i].tag = tag0 + (int)(rng(&s) % (uint32_t)ntags);
		if (r < 45) {
			m[i].kind = K_SMALL;
			m[i].len = small_lens[rng(&s) % (sizeof(small_lens) / sizeof(small_lens[0]))];
		} else if (r < 55) {
			m[i].kind = K_ZERO;
			m[i].len = 0;
		} else if (r < 70) {
			m[i].kind = K_MED;
			m[i].len = 4097 + (int)(rng(&s) % 4096);
		} else if (r < 85) {
			m[i].kind = K_LARGE;
			m[i].len = 8193 + (int)(rng(&s) % (MAXLEN - 8193));
		} else {
			m[i].kind = K_SSEND;
			m[i].len = (int)(rng(&s) % 4097);
		}
	}
}

/* Sends of one plan, kept until wait_out(). */
struct out {
	int n;
	MPI_Request *rq;
	unsigned char **buf;
};

static void out_init(struct out *o, int n)
{
	o->n = 0;
	o->rq = xmalloc(sizeof(*o->rq) * n);
	o->buf = xmalloc(sizeof(*o->buf) * n);
}

static void wait_out(struct out *o)
{
	int i;

	MPI_CHECK(MPI_Waitall(o->n, o->rq, MPI_STATUSES_IGNORE));
	for (i = 0; i < o->n; i++)
		free(o->buf[i]);
	free(o->rq);
	free(o->buf);
	o->n = 0;
}

/* Message @idx of plan @m to @dst: blocking, or kept in @o. */
static void send_msg(const struct msg *m, int dst, int idx, MPI_Comm comm, struct out *o)
{
	unsigned char *b = xmalloc(m->len);

	pat_fill(b, m->len, pat_seed(rank, dst, m->tag, idx));
	if (!o) {
		if (m->kind == K_SSEND)
			MPI_CHECK(MPI_Ssend(b, m->len, MPI_BYTE, dst, m->tag, comm));
		else
			MPI_CHECK(MPI_Send(b, m->len, MPI_BYTE, dst, m->tag, comm));
		free(b);
		return;
	}
	o->buf[o->n] = b;
	if (m->kind == K_SSEND)
		MPI_CHECK(MPI_Issend(b, m->len, MPI_BYTE, dst, m->tag, comm, &o->rq[o->n]));
	else
		MPI_CHECK(MPI_Isend(b, m->len, MPI_BYTE, dst, m->tag, comm, &o->rq[o->n]));
	o->n++;
}

/* A received message must be message @idx of @src's plan. */
static void check_msg(const unsigned char *buf, const MPI_Status *st, int src,
		      const struct msg *m, int idx, const char *what)
{
	int cnt = -1;

	MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &cnt));
	CHECK(st->MPI_SOURCE == src && st->MPI_TAG == m->tag && cnt == m->len,
	      "%s: got source %d tag %d count %d, expected message %d of rank %d: "
	      "tag %d, %d bytes (%s)", what, st->MPI_SOURCE, st->MPI_TAG, cnt, idx, src,
	      m->tag, m->len, kname[m->kind]);
	CHECK_PAT(buf, m->len, pat_seed(src, rank, m->tag, idx),
		  "%s: message %d of rank %d (%s)", what, idx, src, kname[m->kind]);
}

/* ---------------- A: non-overtaking across paths ---------------- */

#define NA	24
#define NPAT	16

static void phase_a(void)
{
	struct msg m[NA];
	unsigned char *rb[NA];
	MPI_Request rq[NA];
	MPI_Status st[NA];
	struct out o;
	int pat, mode, i, tag = 100;
	char what[64];

	for (i = 0; i < NA; i++)
		rb[i] = xmalloc(MAXLEN);
	for (pat = 0; pat < NPAT; pat++) {
		mode = pat % 4;
		plan(1000 + pat, NA, m, tag, 1, 0);
		snprintf(what, sizeof(what), "A pattern %d mode %d", pat, mode);
		if (rank == 0) {
			int pre = mode == 0 ? NA : mode == 3 ? NA / 2 : 0;
			/*
			 * Patterns 8..15 receive into buffers of the message's
			 * size: small receives can then be matched in user space
			 * while large ones go to the kernel, on one sender and tag.
			 */
			int exact = pat >= NPAT / 2;

			for (i = 0; i < pre; i++)
				MPI_CHECK(MPI_Irecv(rb[i], exact ? m[i].len : MAXLEN, MPI_BYTE, 1, tag,
						    MPI_COMM_WORLD, &rq[i]));
			if (mode != 2)
				MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			for (i = pre; i < NA; i++) {
				status_poison(&st[i]);
				MPI_CHECK(MPI_Recv(rb[i], exact ? m[i].len : MAXLEN, MPI_BYTE, 1,
						   mode == 3 ? MPI_ANY_TAG : tag,
						   MPI_COMM_WORLD, &st[i]));
			}
			MPI_CHECK(MPI_Waitall(pre, rq, st));
			for (i = 0; i < NA; i++)
				check_msg(rb[i], &st[i], 1, &m[i], i, what);
		} else if (rank == 1) {
			if (mode == 1 || mode == 3) {
				out_init(&o, NA);
				for (i = 0; i < NA; i++)
					send_msg(&m[i], 0, i, MPI_COMM_WORLD, &o);
				MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
				wait_out(&o);
			} else {
				if (mode == 0)
					MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
				for (i = 0; i < NA; i++)
					send_msg(&m[i], 0, i, MPI_COMM_WORLD, NULL);
			}
		} else if (mode != 2) {
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		}
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	for (i = 0; i < NA; i++)
		free(rb[i]);
}

/* ---------------- B: ANY_SOURCE / ANY_TAG ---------------- */

#define NB	30

static void phase_b(void)
{
	int nsend = size - 1, total = nsend * NB, round, i, s, tag0 = 200;
	struct msg (*m)[NB] = xmalloc(sizeof(*m) * size);
	int *next = xmalloc(sizeof(int) * size);
	char what[64];
	struct out o;

	for (round = 0; round < 4; round++) {
		/* round 3: small messages only, received into 4096-byte buffers */
		int cap = round == 3 ? 4096 : MAXLEN;

		for (s = 1; s < size; s++)
			plan(2000 + s + 100 * (round == 3), NB, m[s], tag0, 3, round == 3);
		snprintf(what, sizeof(what), "B round %d", round);
		if (rank == 0) {
			unsigned char **rb = xmalloc(sizeof(*rb) * total);
			MPI_Request *rq = xmalloc(sizeof(*rq) * total);
			MPI_Status *st = xmalloc(sizeof(*st) * total);
			int pre = round == 1 ? total : 0;

			memset(next, 0, sizeof(int) * size);
			for (i = 0; i < total; i++)
				rb[i] = xmalloc(MAXLEN);
			for (i = 0; i < pre; i++)
				MPI_CHECK(MPI_Irecv(rb[i], MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
						    MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]));
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			if (round == 2) {
				/* one tag first from anyone, then the rest */
				int k = 0;

				for (s = 1; s < size; s++)
					for (i = 0; i < NB; i++)
						k += m[s][i].tag == tag0 + 1;
				for (i = 0; i < k; i++)
					MPI_CHECK(MPI_Recv(rb[i], MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
							   tag0 + 1, MPI_COMM_WORLD, &st[i]));
				for (; i < total; i++)
					MPI_CHECK(MPI_Recv(rb[i], MAXLEN, MPI_BYTE, MPI_ANY_SOURCE,
							   MPI_ANY_TAG, MPI_COMM_WORLD, &st[i]));
				/*
				 * Per sender and tag, in send order; the ANY_TAG
				 * receives also in send order per sender.
				 */
				for (s = 0; s < size; s++)
					next[s] = -1;
				for (i = 0; i < total; i++) {
					int src = st[i].MPI_SOURCE, seen = 0, j, l;

					CHECK(src >= 1 && src < size, "%s: source %d", what, src);
					for (l = 0; l < i; l++)
						seen += st[l].MPI_SOURCE == src &&
							st[l].MPI_TAG == st[i].MPI_TAG;
					for (j = 0; j < NB; j++)
						if (m[src][j].tag == st[i].MPI_TAG && seen-- == 0)
							break;
					CHECK(j < NB, "%s: extra message from %d tag %d", what, src,
					      st[i].MPI_TAG);
					check_msg(rb[i], &st[i], src, &m[src][j], j, what);
					if (i >= k) {
						CHECK(j > next[src], "%s: ANY_TAG receive got message %d "
						      "of %d after message %d", what, j, src, next[src]);
						next[src] = j;
					}
				}
			} else {
				for (i = pre; i < total; i++)
					MPI_CHECK(MPI_Recv(rb[i], cap, MPI_BYTE, MPI_ANY_SOURCE,
							   MPI_ANY_TAG, MPI_COMM_WORLD, &st[i]));
				MPI_CHECK(MPI_Waitall(pre, rq, st));
				/* receives in posting order: per sender, its send order */
				for (i = 0; i < total; i++) {
					int src = st[i].MPI_SOURCE;

					CHECK(src >= 1 && src < size, "%s: source %d", what, src);
					CHECK(next[src] < NB, "%s: extra message from %d", what, src);
					check_msg(rb[i], &st[i], src, &m[src][next[src]], next[src], what);
					next[src]++;
				}
			}
			for (i = 0; i < total; i++)
				free(rb[i]);
			free(rb);
			free(rq);
			free(st);
		} else {
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			out_init(&o, NB);
			for (i = 0; i < NB; i++)
				send_msg(&m[rank][i], 0, i, MPI_COMM_WORLD, &o);
			wait_out(&o);
		}
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	free(m);
	free(next);
}

/* ---------------- C: probes ---------------- */

#define NC	20

static void phase_c(void)
{
	int nsend = size - 1, total = nsend * NC, variant, i, s, tag0 = 300;
	struct msg (*m)[NC] = xmalloc(sizeof(*m) * size);
	int *next = xmalloc(sizeof(int) * size);
	unsigned char *rb = xmalloc(MAXLEN + SLACK);
	char what[64];
	struct out o;

	for (s = 1; s < size; s++)
		plan(3000 + s, NC, m[s], tag0, 2, 0);
	for (variant = 0; variant < 4; variant++) {
		snprintf(what, sizeof(what), "C variant %d", variant);
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank != 0) {
			out_init(&o, NC);
			for (i = 0; i < NC; i++)
				send_msg(&m[rank][i], 0, i, MPI_COMM_WORLD, &o);
			wait_out(&o);
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			continue;
		}
		memset(next, 0, sizeof(int) * size);
		for (i = 0; i < total; i++) {
			MPI_Status ps, st;
			MPI_Message msg = MPI_MESSAGE_NULL;
			MPI_Request rq;
			int flag = 0, cnt = -1, src, src2, flag2 = 0;

			status_poison(&ps);
			switch (variant) {
			case 0:
				MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ps));
				break;
			case 1:
				while (!flag)
					MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG,
							     MPI_COMM_WORLD, &flag, &ps));
				break;
			case 2:
				MPI_CHECK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
						     &msg, &ps));
				break;
			default:
				while (!flag)
					MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG,
							      MPI_COMM_WORLD, &flag, &msg, &ps));
			}
			src = ps.MPI_SOURCE;
			CHECK(src >= 1 && src < size && next[src] < NC, "%s: probed source %d", what,
			      src);
			MPI_CHECK(MPI_Get_count(&ps, MPI_BYTE, &cnt));
			CHECK(cnt == m[src][next[src]].len && ps.MPI_TAG == m[src][next[src]].tag,
			      "%s: probed tag %d count %d from %d, expected message %d: tag %d, %d bytes",
			      what, ps.MPI_TAG, cnt, src, next[src], m[src][next[src]].tag,
			      m[src][next[src]].len);
			if (variant < 2) {
				/* probing again sees the same message */
				MPI_CHECK(MPI_Iprobe(src, ps.MPI_TAG, MPI_COMM_WORLD, &flag2, &st));
				CHECK(flag2 && st.MPI_SOURCE == src, "%s: probed message vanished", what);
				MPI_CHECK(MPI_Recv(rb, cnt, MPI_BYTE, src, ps.MPI_TAG, MPI_COMM_WORLD,
						   &st));
			} else if (variant == 2) {
				MPI_CHECK(MPI_Mrecv(rb, cnt, MPI_BYTE, &msg, &st));
				CHECK(msg == MPI_MESSAGE_NULL, "%s: Mrecv left the handle", what);
			} else {
				MPI_CHECK(MPI_Imrecv(rb, MAXLEN, MPI_BYTE, &msg, &rq));
				CHECK(msg == MPI_MESSAGE_NULL, "%s: Imrecv left the handle", what);
				MPI_CHECK(MPI_Wait(&rq, &st));
			}
			src2 = st.MPI_SOURCE;
			CHECK(src2 == src, "%s: received from %d after probing %d", what, src2, src);
			check_msg(rb, &st, src, &m[src][next[src]], next[src], what);
			next[src]++;
		}
		/* nothing left */
		{
			int flag = 1;
			MPI_Status st;

			MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
			CHECK(!flag, "%s: a message left over from %d tag %d", what, st.MPI_SOURCE,
			      st.MPI_TAG);
		}
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	free(rb);
	free(m);
	free(next);
}

/* ---------------- D: cancel of a small receive ---------------- */

static void phase_d(void)
{
	unsigned char a[64], b[64], c[64];
	MPI_Request ra, rb, rc;
	MPI_Status st;
	int canc = -1, i;

	for (i = 0; i < 2; i++) {
		int src = i ? MPI_ANY_SOURCE : 1;

		if (rank == 0) {
			memset(a, 0x5A, sizeof(a));
			memset(b, 0x5A, sizeof(b));
			memset(c, 0x5A, sizeof(c));
			MPI_CHECK(MPI_Irecv(a, 64, MPI_BYTE, src, 400, MPI_COMM_WORLD, &ra));
			MPI_CHECK(MPI_Irecv(b, 64, MPI_BYTE, src, 400, MPI_COMM_WORLD, &rb));
			MPI_CHECK(MPI_Cancel(&ra));
			status_poison(&st);
			MPI_CHECK(MPI_Wait(&ra, &st));
			MPI_CHECK(MPI_Test_cancelled(&st, &canc));
			CHECK(canc, "D: the unmatched small receive was not cancelled");
			CHECK_FILL(a, 64, 0x5A, "D: cancelled receive buffer");
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			MPI_CHECK(MPI_Irecv(c, 64, MPI_BYTE, src, 400, MPI_COMM_WORLD, &rc));
			MPI_CHECK(MPI_Wait(&rb, &st));
			MPI_CHECK(MPI_Test_cancelled(&st, &canc));
			CHECK(!canc, "D: the second receive reports cancelled");
			CHECK_STATUS(&st, 1, 400, 10, MPI_BYTE);
			CHECK_PAT(b, 10, pat_seed(1, 0, 400, 2 * i), "D: first message");
			CHECK_FILL(b + 10, 54, 0x5A, "D: beyond the first message");
			MPI_CHECK(MPI_Wait(&rc, &st));
			CHECK_STATUS(&st, 1, 400, 20, MPI_BYTE);
			CHECK_PAT(c, 20, pat_seed(1, 0, 400, 2 * i + 1), "D: second message");
			CHECK_FILL(a, 64, 0x5A, "D: cancelled receive buffer, later");
		} else {
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			if (rank == 1) {
				struct msg m1 = { K_SMALL, 10, 400 }, m2 = { K_SMALL, 20, 400 };

				send_msg(&m1, 0, 2 * i, MPI_COMM_WORLD, NULL);
				send_msg(&m2, 0, 2 * i + 1, MPI_COMM_WORLD, NULL);
			}
		}
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
}

/* ---------------- E: a channel filled to its bound ---------------- */

static void phase_e(int n, int maxlen, int tag)
{
	int i;

	if (rank == 1) {
		struct out o;

		out_init(&o, n);
		for (i = 0; i < n; i++) {
			struct msg m = { K_SMALL, 1 + (i * 37) % maxlen, tag };

			send_msg(&m, 0, i, MPI_COMM_WORLD, &o);
		}
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		wait_out(&o);
	} else if (rank == 0) {
		unsigned char *b = xmalloc(maxlen);
		MPI_Status st;
		char what[64];

		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		snprintf(what, sizeof(what), "E %d messages up to %d bytes", n, maxlen);
		for (i = 0; i < n; i++) {
			struct msg m = { K_SMALL, 1 + (i * 37) % maxlen, tag };

			MPI_CHECK(MPI_Recv(b, maxlen, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st));
			check_msg(b, &st, 1, &m, i, what);
		}
		free(b);
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---------------- F: the kernel holds older messages ---------------- */

static void phase_f(void)
{
	/* medium, large (both through the kernel), then three small */
	static const struct msg f1[] = {
		{ K_MED, 6000, 500 }, { K_LARGE, 50000, 500 }, { K_SMALL, 10, 500 },
		{ K_SMALL, 0, 500 }, { K_SMALL, 4096, 500 },
	};
	/* medium on one tag, small on another passes it, small after it */
	static const struct msg f2[] = {
		{ K_MED, 5000, 501 }, { K_SMALL, 30, 502 }, { K_SMALL, 40, 501 },
		{ K_LARGE, 20000, 502 }, { K_SMALL, 50, 502 },
	};
	unsigned char *rb[5];
	MPI_Request rq[5];
	MPI_Status st[5];
	struct out o;
	int i;

	for (i = 0; i < 5; i++)
		rb[i] = xmalloc(MAXLEN);
	/* F1: all five sent before any receive is posted */
	if (rank == 1) {
		out_init(&o, 5);
		for (i = 0; i < 5; i++)
			send_msg(&f1[i], 0, i, MPI_COMM_WORLD, &o);
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		wait_out(&o);
	} else if (rank == 0) {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		/* give the sends time to land in the kernel and the channel */
		sleep_ms(50);
		for (i = 0; i < 5; i++)
			MPI_CHECK(MPI_Irecv(rb[i], MAXLEN, MPI_BYTE, 1, 500, MPI_COMM_WORLD, &rq[i]));
		MPI_CHECK(MPI_Waitall(5, rq, st));
		for (i = 0; i < 5; i++)
			check_msg(rb[i], &st[i], 1, &f1[i], i, "F1");
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

	/* F2: tag 502 first (may pass the held tag-501 message), then ANY_TAG */
	if (rank == 1) {
		out_init(&o, 5);
		for (i = 0; i < 5; i++)
			send_msg(&f2[i], 0, i, MPI_COMM_WORLD, &o);
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		wait_out(&o);
	} else if (rank == 0) {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		sleep_ms(50);
		MPI_CHECK(MPI_Recv(rb[1], MAXLEN, MPI_BYTE, 1, 502, MPI_COMM_WORLD, &st[1]));
		check_msg(rb[1], &st[1], 1, &f2[1], 1, "F2 tag 502 first");
		MPI_CHECK(MPI_Recv(rb[0], MAXLEN, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st[0]));
		check_msg(rb[0], &st[0], 1, &f2[0], 0, "F2 held medium");
		MPI_CHECK(MPI_Recv(rb[2], MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
				   MPI_COMM_WORLD, &st[2]));
		check_msg(rb[2], &st[2], 1, &f2[2], 2, "F2 small after it");
		MPI_CHECK(MPI_Recv(rb[3], MAXLEN, MPI_BYTE, 1, 502, MPI_COMM_WORLD, &st[3]));
		check_msg(rb[3], &st[3], 1, &f2[3], 3, "F2 large");
		MPI_CHECK(MPI_Recv(rb[4], MAXLEN, MPI_BYTE, 1, 502, MPI_COMM_WORLD, &st[4]));
		check_msg(rb[4], &st[4], 1, &f2[4], 4, "F2 last small");
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

	/* F3: a small receive posted first; a medium on another tag, then the small */
	if (rank == 0) {
		static const struct msg a = { K_SMALL, 33, 503 }, b = { K_MED, 7000, 504 };

		MPI_CHECK(MPI_Irecv(rb[0], MAXLEN, MPI_BYTE, 1, 503, MPI_COMM_WORLD, &rq[0]));
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_CHECK(MPI_Wait(&rq[0], &st[0]));
		check_msg(rb[0], &st[0], 1, &a, 1, "F3 posted small");
		MPI_CHECK(MPI_Recv(rb[1], MAXLEN, MPI_BYTE, 1, 504, MPI_COMM_WORLD, &st[1]));
		check_msg(rb[1], &st[1], 1, &b, 0, "F3 medium");
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		if (rank == 1) {
			static const struct msg a = { K_SMALL, 33, 503 }, b = { K_MED, 7000, 504 };

			/* the medium one may wait for its receive: nonblocking */
			out_init(&o, 2);
			send_msg(&b, 0, 0, MPI_COMM_WORLD, &o);
			send_msg(&a, 0, 1, MPI_COMM_WORLD, &o);
			wait_out(&o);
		}
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (i = 0; i < 5; i++)
		free(rb[i]);
}

/* ---------------- G: persistent requests ---------------- */

#define NG	4
#define ITERS_G	30

static void phase_g(void)
{
	/* small, large, ssend small, zero-byte, all on one tag */
	static const struct msg g[NG] = {
		{ K_SMALL, 200, 600 }, { K_LARGE, 70000, 600 }, { K_SSEND, 100, 600 },
		{ K_ZERO, 0, 600 },
	};
	unsigned char *b[NG];
	MPI_Request rq[NG];
	MPI_Status st[NG];
	int it, i, k;

	for (i = 0; i < NG; i++)
		b[i] = xmalloc(MAXLEN);
	if (rank == 1) {
		for (i = 0; i < NG; i++) {
			if (g[i].kind == K_SSEND)
				MPI_CHECK(MPI_Ssend_init(b[i], g[i].len, MPI_BYTE, 0, 600,
							 MPI_COMM_WORLD, &rq[i]));
			else
				MPI_CHECK(MPI_Send_init(b[i], g[i].len, MPI_BYTE, 0, 600,
							MPI_COMM_WORLD, &rq[i]));
		}
	} else if (rank == 0) {
		for (i = 0; i < NG; i++)
			MPI_CHECK(MPI_Recv_init(b[i], MAXLEN, MPI_BYTE, 1, 600, MPI_COMM_WORLD,
						&rq[i]));
	}
	for (it = 0; it < ITERS_G; it++) {
		/* the sender starts them in a rotating order; Startall every 3rd */
		int first = it % NG;

		if (rank == 1) {
			for (k = 0; k < NG; k++) {
				i = (first + k) % NG;
				pat_fill(b[i], g[i].len, pat_seed(1, 0, 600, it * NG + k));
			}
			if (it % 3 == 2 && first == 0) {
				MPI_CHECK(MPI_Startall(NG, rq));
			} else {
				for (k = 0; k < NG; k++)
					MPI_CHECK(MPI_Start(&rq[(first + k) % NG]));
			}
			MPI_CHECK(MPI_Waitall(NG, rq, MPI_STATUSES_IGNORE));
		} else if (rank == 0) {
			if (it & 1) {
				MPI_CHECK(MPI_Startall(NG, rq));
			} else {
				for (i = 0; i < NG; i++)
					MPI_CHECK(MPI_Start(&rq[i]));
			}
			MPI_CHECK(MPI_Waitall(NG, rq, st));
			for (k = 0; k < NG; k++) {
				char what[64];
				const struct msg *m = &g[(first + k) % NG];

				snprintf(what, sizeof(what), "G iteration %d receive %d", it, k);
				check_msg(b[k], &st[k], 1, m, it * NG + k, what);
			}
		}
		if (it % 10 == 9)
			MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	if (rank <= 1)
		for (i = 0; i < NG; i++)
			MPI_CHECK(MPI_Request_free(&rq[i]));
	for (i = 0; i < NG; i++)
		free(b[i]);
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---------------- H: derived datatypes ---------------- */

static void phase_h(void)
{
	MPI_Datatype vec, idx;
	int src[64], dst[64], i, j, cnt;
	int blens[3] = { 2, 5, 1 }, disps[3] = { 0, 10, 30 };
	MPI_Status st;

	/* 8 blocks of 3 ints, stride 5: 96 bytes of data over 38 ints */
	MPI_CHECK(MPI_Type_vector(8, 3, 5, MPI_INT, &vec));
	MPI_CHECK(MPI_Type_commit(&vec));
	MPI_CHECK(MPI_Type_indexed(3, blens, disps, MPI_INT, &idx));
	MPI_CHECK(MPI_Type_commit(&idx));
	for (i = 0; i < 64; i++)
		src[i] = 1000 * rank + i;
	if (rank == 1) {
		MPI_CHECK(MPI_Send(src, 1, vec, 0, 700, MPI_COMM_WORLD));	/* -> contiguous */
		MPI_CHECK(MPI_Send(src, 24, MPI_INT, 0, 701, MPI_COMM_WORLD));	/* -> vector */
		MPI_CHECK(MPI_Send(src, 1, vec, 0, 702, MPI_COMM_WORLD));	/* -> vector */
		MPI_CHECK(MPI_Send(src, 1, idx, 0, 703, MPI_COMM_WORLD));	/* -> contiguous */
		MPI_CHECK(MPI_Send(src, 8, MPI_INT, 0, 704, MPI_COMM_WORLD));	/* -> indexed */
	} else if (rank == 0) {
		/* vector sent, contiguous received: the packed elements */
		memset(dst, 0xFF, sizeof(dst));
		MPI_CHECK(MPI_Recv(dst, 64, MPI_INT, 1, 700, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 700, 24, MPI_INT);
		for (i = 0; i < 8; i++)
			for (j = 0; j < 3; j++)
				CHECK(dst[i * 3 + j] == 1000 + i * 5 + j,
				      "H vector->contiguous: element %d is %d", i * 3 + j,
				      dst[i * 3 + j]);
		CHECK(dst[24] == -1, "H: written beyond 24 ints");
		/* contiguous sent, vector received: scattered, gaps untouched */
		for (j = 701; j <= 702; j++) {
			memset(dst, 0xFF, sizeof(dst));
			MPI_CHECK(MPI_Recv(dst, 1, vec, 1, j, MPI_COMM_WORLD, &st));
			CHECK_STATUS(&st, 1, j, 1, vec);
			for (i = 0; i < 40; i++) {
				int blk = i / 5, off = i % 5, want;

				if (blk < 8 && off < 3)
					want = j == 701 ? 1000 + blk * 3 + off : 1000 + i;
				else
					want = -1;
				CHECK(dst[i] == want, "H tag %d: int %d is %d, expected %d", j, i,
				      dst[i], want);
			}
		}
		memset(dst, 0xFF, sizeof(dst));
		MPI_CHECK(MPI_Recv(dst, 64, MPI_INT, 1, 703, MPI_COMM_WORLD, &st));
		MPI_CHECK(MPI_Get_count(&st, MPI_INT, &cnt));
		CHECK(cnt == 8, "H indexed->contiguous: count %d", cnt);
		CHECK(dst[0] == 1000 && dst[1] == 1001 && dst[2] == 1010 && dst[6] == 1014 &&
		      dst[7] == 1030 && dst[8] == -1, "H indexed->contiguous: wrong data");
		memset(dst, 0xFF, sizeof(dst));
		MPI_CHECK(MPI_Recv(dst, 1, idx, 1, 704, MPI_COMM_WORLD, &st));
		CHECK(dst[0] == 1000 && dst[1] == 1001 && dst[2] == -1 && dst[10] == 1002 &&
		      dst[14] == 1006 && dst[15] == -1 && dst[30] == 1007 && dst[31] == -1,
		      "H contiguous->indexed: wrong data");
	}
	MPI_CHECK(MPI_Type_free(&vec));
	MPI_CHECK(MPI_Type_free(&idx));
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---------------- I: zero-byte messages ---------------- */

static void phase_i(void)
{
	unsigned char b[16];
	MPI_Status st;
	int flag = 0, i;

	if (rank == 1) {
		for (i = 0; i < 4; i++) {
			if (i == 2)
				MPI_CHECK(MPI_Ssend(b, 0, MPI_BYTE, 0, 800 + i, MPI_COMM_WORLD));
			else
				MPI_CHECK(MPI_Send(b, 0, MPI_INT, 0, 800 + i, MPI_COMM_WORLD));
		}
		MPI_CHECK(MPI_Send(b, 3, MPI_BYTE, 0, 804, MPI_COMM_WORLD));
	} else if (rank == 0) {
		memset(b, 0x33, sizeof(b));
		MPI_CHECK(MPI_Recv(b, 0, MPI_BYTE, 1, 800, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 800, 0, MPI_BYTE);
		MPI_CHECK(MPI_Recv(b, 16, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 801, 0, MPI_BYTE);
		MPI_CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 802, 0, MPI_BYTE);
		MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 802, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 802, 0, MPI_BYTE);
		while (!flag)
			MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 803, MPI_COMM_WORLD, &flag, &st));
		CHECK_STATUS(&st, 1, 803, 0, MPI_INT);
		MPI_CHECK(MPI_Recv(b, 4, MPI_INT, 1, 803, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 803, 0, MPI_INT);
		CHECK_FILL(b, 16, 0x33, "I: zero-byte receives wrote into the buffer");
		MPI_CHECK(MPI_Recv(b, 16, MPI_BYTE, 1, 804, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 804, 3, MPI_BYTE);
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---------------- J: truncation ---------------- */

static void check_trunc(int rc, MPI_Status *st, const unsigned char *b, int cap, int len,
			int tag, int idx, const char *what)
{
	int cls = -1, cnt = -1;

	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_TRUNCATE, "%s: error class %d (%s), expected MPI_ERR_TRUNCATE",
	      what, cls, test_errclass_str(rc));
	CHECK(st->MPI_SOURCE == 1 && st->MPI_TAG == tag, "%s: status source %d tag %d", what,
	      st->MPI_SOURCE, st->MPI_TAG);
	CHECK_PAT(b, cap, pat_seed(1, 0, tag, idx), "%s: the part received", what);
	if (test_strict()) {
		/* kprog: the count is what was received; nothing past the buffer */
		MPI_Get_count(st, MPI_BYTE, &cnt);
		CHECK(cnt == cap, "%s: count %d, expected %d", what, cnt, cap);
		CHECK_FILL(b + cap, SLACK, 0x44, "%s: past the buffer", what);
	}
	(void)len;
}

static void phase_j(void)
{
	MPI_Comm comm;
	unsigned char *b = xmalloc(4096 + SLACK);
	MPI_Message msg;
	MPI_Request rq;
	MPI_Status st;
	int rc, i;

	MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
	MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
	if (rank == 1) {
		for (i = 0; i < 3; i++) {
			struct msg big = { K_SMALL, 100 + i * 1000, 900 + i },
				   next = { K_SMALL, 20, 900 + i };

			if (i == 1)
				MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
			send_msg(&big, 0, 0, comm, NULL);
			send_msg(&next, 0, 1, comm, NULL);
		}
	} else if (rank == 0) {
		/* 1: MPI_Recv into 50 bytes */
		memset(b, 0x44, 4096 + SLACK);
		status_poison(&st);
		rc = MPI_Recv(b, 50, MPI_BYTE, 1, 900, comm, &st);
		check_trunc(rc, &st, b, 50, 100, 900, 0, "J Recv");
		MPI_CHECK(MPI_Recv(b, 4096, MPI_BYTE, 1, 900, comm, &st));
		CHECK_STATUS(&st, 1, 900, 20, MPI_BYTE);
		CHECK_PAT(b, 20, pat_seed(1, 0, 900, 1), "J next message after Recv");
		/* 2: Irecv posted before the message */
		memset(b, 0x44, 4096 + SLACK);
		MPI_CHECK(MPI_Irecv(b, 60, MPI_BYTE, 1, 901, comm, &rq));
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		status_poison(&st);
		rc = MPI_Wait(&rq, &st);
		check_trunc(rc, &st, b, 60, 1100, 901, 0, "J Irecv posted first");
		MPI_CHECK(MPI_Recv(b, 4096, MPI_BYTE, 1, 901, comm, &st));
		CHECK_STATUS(&st, 1, 901, 20, MPI_BYTE);
		CHECK_PAT(b, 20, pat_seed(1, 0, 901, 1), "J next message after Irecv");
		/* 3: Mprobe + Mrecv into a short buffer */
		memset(b, 0x44, 4096 + SLACK);
		MPI_CHECK(MPI_Mprobe(1, 902, comm, &msg, &st));
		CHECK_STATUS(&st, 1, 902, 2100, MPI_BYTE);
		status_poison(&st);
		rc = MPI_Mrecv(b, 70, MPI_BYTE, &msg, &st);
		check_trunc(rc, &st, b, 70, 2100, 902, 0, "J Mrecv");
		MPI_CHECK(MPI_Recv(b, 4096, MPI_BYTE, 1, 902, comm, &st));
		CHECK_STATUS(&st, 1, 902, 20, MPI_BYTE);
		CHECK_PAT(b, 20, pat_seed(1, 0, 902, 1), "J next message after Mrecv");
	} else {
		MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_CHECK(MPI_Comm_free(&comm));
	free(b);
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---------------- K: a small Issend waits for its receive ---------------- */

static void phase_k(void)
{
	unsigned char b[32];
	MPI_Request rq;
	MPI_Status st;
	int flag = 0, go = 1;
	double end;

	if (rank == 1) {
		pat_fill(b, 32, pat_seed(1, 0, 1000, 0));
		MPI_CHECK(MPI_Issend(b, 32, MPI_BYTE, 0, 1000, MPI_COMM_WORLD, &rq));
		end = now_sec() + 0.2;
		while (now_sec() < end && !flag)
			MPI_CHECK(MPI_Test(&rq, &flag, &st));
		CHECK(!flag, "K: a small Issend completed before its receive was posted");
		MPI_CHECK(MPI_Send(&go, 1, MPI_INT, 0, 1001, MPI_COMM_WORLD));
		MPI_CHECK(MPI_Wait(&rq, &st));
	} else if (rank == 0) {
		MPI_CHECK(MPI_Recv(&go, 1, MPI_INT, 1, 1001, MPI_COMM_WORLD, &st));
		MPI_CHECK(MPI_Recv(b, 32, MPI_BYTE, 1, 1000, MPI_COMM_WORLD, &st));
		CHECK_STATUS(&st, 1, 1000, 32, MPI_BYTE);
		CHECK_PAT(b, 32, pat_seed(1, 0, 1000, 0), "K");
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---------------- L: small traffic only ---------------- */

#define NL_STREAM	3000
#define NL_PING		500

static void phase_l(void)
{
	unsigned char b[4096];
	MPI_Request rq;
	MPI_Status st;
	int i;

	/* a stream of small messages received one by one, exact sizes */
	for (i = 0; i < NL_STREAM; i++) {
		struct msg m = { K_SMALL, (i * 131) % 4097, 1200 + i % 3 };

		if (rank == 1) {
			send_msg(&m, 0, i, MPI_COMM_WORLD, NULL);
		} else if (rank == 0) {
			MPI_CHECK(MPI_Recv(b, m.len, MPI_BYTE, 1, i % 4 == 3 ? MPI_ANY_TAG : m.tag,
					   MPI_COMM_WORLD, &st));
			check_msg(b, &st, 1, &m, i, "L stream");
		}
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	/* ping-pong with the receive posted before the send */
	if (rank <= 1) {
		int peer = 1 - rank;

		for (i = 0; i < NL_PING; i++) {
			struct msg m = { K_SMALL, 8 + i % 64, 1210 };

			MPI_CHECK(MPI_Irecv(b, sizeof(b), MPI_BYTE, peer, 1210, MPI_COMM_WORLD, &rq));
			if (rank == 0) {
				send_msg(&m, peer, i, MPI_COMM_WORLD, NULL);
				MPI_CHECK(MPI_Wait(&rq, &st));
			} else {
				MPI_CHECK(MPI_Wait(&rq, &st));
				send_msg(&m, peer, i, MPI_COMM_WORLD, NULL);
			}
			check_msg(b, &st, peer, &m, i, "L ping-pong");
		}
	}
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* FASTPATH_TRACE=1: rank 0 prints each phase as it starts. */
static void trace(const char *phase)
{
	static int on = -1;

	if (on < 0)
		on = getenv("FASTPATH_TRACE") && rank == 0;
	if (on)
		fprintf(stderr, "fastpath: phase %s at %.2f s\n", phase, now_sec());
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "fastpath", 2, &rank, &size);
	trace("A");
	phase_a();
	trace("B");
	phase_b();
	trace("C");
	phase_c();
	trace("D");
	phase_d();
	trace("E");
	phase_e(6000, 200, 1100);
	phase_e(1500, 4096, 1101);
	trace("F");
	phase_f();
	trace("G");
	phase_g();
	trace("H");
	phase_h();
	trace("I");
	phase_i();
	trace("J");
	phase_j();
	trace("K");
	phase_k();
	trace("L");
	phase_l();
	trace("end");
	return test_finish();
}
