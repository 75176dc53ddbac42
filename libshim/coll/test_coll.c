// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Native tests of the collective schedule builders (coll_algo.c) with a
 * user-space reference executor: the schedules of N simulated ranks run
 * as the module runs them (kprog.h, KPROG_IOC_COLL): rounds in order,
 * the steps of a round in random order, sends and receives of one pair
 * matched in step order, copies and reductions done in C. The executor
 * checks what the module checks (peers, overlapping copies, lengths of
 * whole elements, equal lengths at both ends) and that no step writes a
 * buffer a send of the same round still reads (the send's bytes are
 * snapshotted when its round starts and compared when it is matched).
 * Results are compared with a direct computation, for random sizes,
 * counts, roots, types, ops, in-place or not, on 1..9 ranks.
 * Last line "N passed, N failed".
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll_algo.h"
#include "expect.h"

EXPECT_COUNTERS;

#define MAXR 9

/* ---- reductions in C, as the module does them: dst = src op dst ---- */

struct fi { float v; int i; };
struct di { double v; int i; };
struct li { long v; int i; };
struct ii { int v; int i; };
struct si { short v; int i; };

static size_t dt_size(int dt)
{
	static const size_t sz[] = {
		[KPROG_DT_INT8] = 1, [KPROG_DT_UINT8] = 1, [KPROG_DT_INT16] = 2,
		[KPROG_DT_UINT16] = 2, [KPROG_DT_INT32] = 4, [KPROG_DT_UINT32] = 4,
		[KPROG_DT_INT64] = 8, [KPROG_DT_UINT64] = 8, [KPROG_DT_FLOAT] = 4,
		[KPROG_DT_DOUBLE] = 8, [KPROG_DT_BOOL] = 1,
		[KPROG_DT_FLOAT_INT] = sizeof(struct fi), [KPROG_DT_DOUBLE_INT] = sizeof(struct di),
		[KPROG_DT_LONG_INT] = sizeof(struct li), [KPROG_DT_2INT] = sizeof(struct ii),
		[KPROG_DT_SHORT_INT] = sizeof(struct si),
	};
	return sz[dt];
}

/* Integer ops on values widened to 64 bits (wrap-around like the C types). */
#define INT_OP(T, op, a, b) ({							\
	T a_ = (a), b_ = (b), r_ = 0;						\
	switch (op) {								\
	case KPROG_OP_SUM: r_ = (T)((uint64_t)a_ + (uint64_t)b_); break;	\
	case KPROG_OP_PROD: r_ = (T)((uint64_t)a_ * (uint64_t)b_); break;	\
	case KPROG_OP_MIN: r_ = a_ < b_ ? a_ : b_; break;			\
	case KPROG_OP_MAX: r_ = a_ > b_ ? a_ : b_; break;			\
	case KPROG_OP_LAND: r_ = a_ && b_; break;				\
	case KPROG_OP_LOR: r_ = a_ || b_; break;				\
	case KPROG_OP_LXOR: r_ = !a_ != !b_; break;				\
	case KPROG_OP_BAND: r_ = a_ & b_; break;				\
	case KPROG_OP_BOR: r_ = a_ | b_; break;					\
	case KPROG_OP_BXOR: r_ = a_ ^ b_; break;				\
	}									\
	r_; })

#define FLT_OP(T, op, a, b) ({							\
	T a_ = (a), b_ = (b), r_ = 0;						\
	switch (op) {								\
	case KPROG_OP_SUM: r_ = a_ + b_; break;					\
	case KPROG_OP_PROD: r_ = a_ * b_; break;				\
	case KPROG_OP_MIN: r_ = a_ < b_ ? a_ : b_; break;			\
	case KPROG_OP_MAX: r_ = a_ > b_ ? a_ : b_; break;			\
	}									\
	r_; })

#define LOC_OP(T, op, a, b) ({							\
	T a_ = (a), b_ = (b), r_ = b_;						\
	bool better_ = op == KPROG_OP_MINLOC ? a_.v < b_.v : a_.v > b_.v;	\
	if (better_ || (a_.v == b_.v && a_.i < b_.i))				\
		r_ = a_;							\
	r_; })

#define EACH(T, F) do {								\
	T *d_ = dst; const T *s_ = src;						\
	for (size_t i_ = 0; i_ < len / sizeof(T); i_++)				\
		d_[i_] = F(T, op, s_[i_], d_[i_]);				\
} while (0)

static void ref_reduce(int dt, int op, const void *src, void *dst, size_t len)
{
	switch (dt) {
	case KPROG_DT_INT8: EACH(int8_t, INT_OP); break;
	case KPROG_DT_UINT8: EACH(uint8_t, INT_OP); break;
	case KPROG_DT_INT16: EACH(int16_t, INT_OP); break;
	case KPROG_DT_UINT16: EACH(uint16_t, INT_OP); break;
	case KPROG_DT_INT32: EACH(int32_t, INT_OP); break;
	case KPROG_DT_UINT32: EACH(uint32_t, INT_OP); break;
	case KPROG_DT_INT64: EACH(int64_t, INT_OP); break;
	case KPROG_DT_UINT64: EACH(uint64_t, INT_OP); break;
	case KPROG_DT_BOOL: EACH(uint8_t, INT_OP); break;
	case KPROG_DT_FLOAT: EACH(float, FLT_OP); break;
	case KPROG_DT_DOUBLE: EACH(double, FLT_OP); break;
	case KPROG_DT_FLOAT_INT: EACH(struct fi, LOC_OP); break;
	case KPROG_DT_DOUBLE_INT: EACH(struct di, LOC_OP); break;
	case KPROG_DT_LONG_INT: EACH(struct li, LOC_OP); break;
	case KPROG_DT_2INT: EACH(struct ii, LOC_OP); break;
	case KPROG_DT_SHORT_INT: EACH(struct si, LOC_OP); break;
	}
}

/* Equal results: the pair types by their members, not their padding. */
#define SAME_PAIRS(T) do {							\
	const T *x_ = a, *y_ = b;						\
	for (size_t i_ = 0; i_ < len / sizeof(T); i_++)				\
		if (x_[i_].v != y_[i_].v || x_[i_].i != y_[i_].i)		\
			return false;						\
	return true;								\
} while (0)

static bool same(int dt, const void *a, const void *b, size_t len)
{
	switch (dt) {
	case KPROG_DT_FLOAT_INT: SAME_PAIRS(struct fi);
	case KPROG_DT_DOUBLE_INT: SAME_PAIRS(struct di);
	case KPROG_DT_LONG_INT: SAME_PAIRS(struct li);
	case KPROG_DT_2INT: SAME_PAIRS(struct ii);
	case KPROG_DT_SHORT_INT: SAME_PAIRS(struct si);
	}
	return !memcmp(a, b, len);
}

/* ---- the reference executor ---- */

struct pend {
	struct kprog_coll_step *st;
	int rank;
	void *snap;		/* SEND: its bytes when its round started */
};

/* Sends or receives of one pair, in step order. */
struct pq {
	struct pend *v;
	int n, cap;
};

struct sim {
	int n;
	struct kp_sched s[MAXR];
	uint32_t pos[MAXR], end[MAXR];	/* current round: steps [pos, end) */
	uint32_t left[MAXR];		/* steps of the current round not done */
	struct pq sq[MAXR][MAXR], rq[MAXR][MAXR];	/* [from][to], [at][from] */
	struct pend *local;		/* started copies and reductions */
	int nlocal;
	bool bad;
	bool quiet;		/* a test of the executor: a complaint is expected */
};

/* A malformed or stuck schedule: the run fails (and says why). */
static void complain(struct sim *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void complain(struct sim *m, const char *fmt, ...)
{
	va_list ap;

	m->bad = true;
	if (m->quiet)
		return;
	va_start(ap, fmt);
	printf("executor: ");
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

static bool overlap(uint64_t a, uint64_t b, uint64_t len)
{
	return len && a < b + len && b < a + len;
}

static void check_step(struct sim *m, int r, const struct kprog_coll_step *st)
{
	bool ok = true;

	if (st->kind == KPROG_STEP_SEND || st->kind == KPROG_STEP_RECV)
		ok = st->peer >= 0 && st->peer < m->n && st->peer != r;
	else if (st->kind == KPROG_STEP_COPY)
		ok = !overlap(st->src, st->dst, st->len);
	else if (st->kind == KPROG_STEP_REDUCE)
		ok = !overlap(st->src, st->dst, st->len) && st->len % dt_size(st->dtype) == 0;
	else
		ok = false;
	if (!ok)
		complain(m, "rank %d: bad step kind %d peer %d len %llu", r, st->kind, st->peer,
			 (unsigned long long)st->len);
}

static void push(struct pq *q, struct pend p)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 8;
		q->v = realloc(q->v, q->cap * sizeof(p));
	}
	q->v[q->n++] = p;
}

/* Start the next round of rank r (if any). */
static void start_round(struct sim *m, int r)
{
	struct kp_sched *s = &m->s[r];
	uint32_t i;

	m->pos[r] = m->end[r];
	if (m->pos[r] >= s->n)
		return;
	for (i = m->pos[r]; i < s->n && s->steps[i].round == s->steps[m->pos[r]].round; i++) {
		struct kprog_coll_step *st = &s->steps[i];
		struct pend p = { .st = st, .rank = r };

		check_step(m, r, st);
		if (m->bad)
			return;
		if (st->kind == KPROG_STEP_SEND) {
			p.snap = malloc(st->len + 1);
			memcpy(p.snap, (void *)(uintptr_t)st->src, st->len);
			push(&m->sq[r][st->peer], p);
		} else if (st->kind == KPROG_STEP_RECV) {
			push(&m->rq[r][st->peer], p);
		} else {
			m->local = realloc(m->local, (m->nlocal + 1) * sizeof(p));
			m->local[m->nlocal++] = p;
		}
	}
	m->end[r] = i;
	m->left[r] = i - m->pos[r];
	if (i < s->n && s->steps[i].round < s->steps[i - 1].round)
		complain(m, "rank %d: rounds decrease at step %u", r, i);
}

static void step_done(struct sim *m, int r)
{
	if (--m->left[r] == 0)
		start_round(m, r);
}

static struct pend pop(struct pq *q)
{
	struct pend p = q->v[0];

	memmove(q->v, q->v + 1, (q->n - 1) * sizeof(p));
	q->n--;
	return p;
}

/* Run every rank's schedule to its end; false: stuck or malformed. */
static bool run(struct sim *m)
{
	int r, a, b;

	for (r = 0; r < m->n; r++) {
		m->end[r] = 0;
		if (m->s[r].oom)
			return false;
		start_round(m, r);
	}
	for (;;) {
		int nact = 0, pick;
		/* actions: matchable pairs, then local steps */
		int pa[MAXR * MAXR], pb[MAXR * MAXR];

		if (m->bad)
			return false;
		for (a = 0; a < m->n; a++)
			for (b = 0; b < m->n; b++)
				if (m->sq[a][b].n && m->rq[b][a].n) {
					pa[nact] = a;
					pb[nact++] = b;
				}
		if (!nact && !m->nlocal)
			break;
		pick = rand() % (nact + m->nlocal);
		if (pick < nact) {
			struct pend s, rv;

			a = pa[pick];
			b = pb[pick];
			s = pop(&m->sq[a][b]);
			rv = pop(&m->rq[b][a]);
			if (s.st->len != rv.st->len)
				complain(m, "%d->%d: send %llu recv %llu bytes", a, b,
					 (unsigned long long)s.st->len,
					 (unsigned long long)rv.st->len);
			else if (memcmp(s.snap, (void *)(uintptr_t)s.st->src, s.st->len))
				complain(m, "%d->%d: a send's buffer changed in its round", a, b);
			else
				memcpy((void *)(uintptr_t)rv.st->dst, s.snap, s.st->len);
			free(s.snap);
			step_done(m, a);
			step_done(m, b);
		} else {
			struct pend p = m->local[pick - nact];

			m->local[pick - nact] = m->local[--m->nlocal];
			if (p.st->kind == KPROG_STEP_COPY)
				memcpy((void *)(uintptr_t)p.st->dst, (void *)(uintptr_t)p.st->src,
				       p.st->len);
			else
				ref_reduce(p.st->dtype, p.st->op, (void *)(uintptr_t)p.st->src,
					   (void *)(uintptr_t)p.st->dst, p.st->len);
			step_done(m, p.rank);
		}
	}
	for (r = 0; r < m->n; r++)
		if (m->pos[r] < m->s[r].n) {
			complain(m, "rank %d stuck at step %u of %u (round %u)", r, m->pos[r],
				 m->s[r].n, m->s[r].steps[m->pos[r]].round);
		}
	return !m->bad;
}

static void sim_init(struct sim *m, int n)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	for (int r = 0; r < n; r++)
		kp_sched_init(&m->s[r], r, n);
}

static void sim_free(struct sim *m)
{
	for (int a = 0; a < m->n; a++)
		for (int b = 0; b < m->n; b++) {
			while (m->sq[a][b].n)
				free(pop(&m->sq[a][b]).snap);
			free(m->sq[a][b].v);
			free(m->rq[a][b].v);
		}
	for (int r = 0; r < m->n; r++)
		kp_sched_free(&m->s[r]);
	free(m->local);
}

/* ---- data ---- */

static void fill(void *p, size_t len, unsigned int seed)
{
	unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		c[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

/* Elements of a reduction test: small values, exact in every type and op. */
static void fill_elems(void *p, size_t count, int dt, int op, int rank)
{
	for (size_t i = 0; i < count; i++) {
		int v = (int)((i * 7 + rank * 13 + i * rank) % 5) + 1;	/* 1..5 */

		if (op == KPROG_OP_LAND || op == KPROG_OP_LOR || op == KPROG_OP_LXOR)
			v = ((i + rank) % 3) != 0;
		if (op == KPROG_OP_PROD)
			v = (int)((i + rank) % 2) + 1;	/* 1..2: 2^9 fits everywhere */
		switch (dt) {
		case KPROG_DT_INT8: ((int8_t *)p)[i] = (int8_t)(op == KPROG_OP_BAND ? -v : v); break;
		case KPROG_DT_UINT8: case KPROG_DT_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
		case KPROG_DT_INT16: ((int16_t *)p)[i] = (int16_t)-v; break;
		case KPROG_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
		case KPROG_DT_INT32: ((int32_t *)p)[i] = v; break;
		case KPROG_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
		case KPROG_DT_INT64: ((int64_t *)p)[i] = -v; break;
		case KPROG_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v << 33; break;
		case KPROG_DT_FLOAT: ((float *)p)[i] = (float)v; break;
		case KPROG_DT_DOUBLE: ((double *)p)[i] = -(double)v; break;
		case KPROG_DT_FLOAT_INT: ((struct fi *)p)[i] = (struct fi){ (float)v, rank }; break;
		case KPROG_DT_DOUBLE_INT: ((struct di *)p)[i] = (struct di){ v, rank }; break;
		case KPROG_DT_LONG_INT: ((struct li *)p)[i] = (struct li){ v, rank }; break;
		case KPROG_DT_2INT: ((struct ii *)p)[i] = (struct ii){ v, rank }; break;
		case KPROG_DT_SHORT_INT: ((struct si *)p)[i] = (struct si){ (short)v, rank }; break;
		}
	}
}

/* A random valid (type, op) pair. */
static struct kp_redop rand_redop(void)
{
	static const int ints[] = { KPROG_OP_SUM, KPROG_OP_PROD, KPROG_OP_MIN, KPROG_OP_MAX,
				    KPROG_OP_LAND, KPROG_OP_LOR, KPROG_OP_LXOR, KPROG_OP_BAND,
				    KPROG_OP_BOR, KPROG_OP_BXOR };
	static const int flts[] = { KPROG_OP_SUM, KPROG_OP_PROD, KPROG_OP_MIN, KPROG_OP_MAX };
	static const int bools[] = { KPROG_OP_LAND, KPROG_OP_LOR, KPROG_OP_LXOR };
	struct kp_redop ro;

	ro.dtype = 1 + rand() % (__KPROG_DT_MAX - 1);
	if (ro.dtype <= KPROG_DT_UINT64)
		ro.op = ints[rand() % 10];
	else if (ro.dtype <= KPROG_DT_DOUBLE)
		ro.op = flts[rand() % 4];
	else if (ro.dtype == KPROG_DT_BOOL)
		ro.op = bools[rand() % 3];
	else
		ro.op = rand() % 2 ? KPROG_OP_MINLOC : KPROG_OP_MAXLOC;
	ro.esize = dt_size(ro.dtype);
	return ro;
}

/* A count that hits both sides of the algorithm thresholds. */
static size_t rand_bytes(size_t large)
{
	switch (rand() % 4) {
	case 0: return rand() % 4;
	case 1: return rand() % 300;
	case 2: return rand() % (2 * large);
	default: return large + rand() % 5000;
	}
}

/* The reference: reduction of ranks lo..hi of inputs in[] into out. */
static void direct(unsigned char *in[], int lo, int hi, size_t bytes, const struct kp_redop *ro,
		   unsigned char *out)
{
	memcpy(out, in[lo], bytes);
	for (int r = lo + 1; r <= hi; r++)
		ref_reduce(ro->dtype, ro->op, in[r], out, bytes);
}

/* ---- tests per collective ---- */

static void t_barrier(int n)
{
	struct sim m;

	sim_init(&m, n);
	for (int r = 0; r < n; r++)
		kp_build_barrier(&m.s[r]);
	EXPECT(run(&m), "barrier n=%d", n);
	/* every rank hears (through a chain) from every other one */
	EXPECT(n == 1 || m.s[0].n >= 2, "barrier n=%d has %u steps", n, m.s[0].n);
	sim_free(&m);
}

static void t_bcast(int n)
{
	struct sim m;
	size_t bytes = rand_bytes(KP_BCAST_LARGE);
	int root = rand() % n;
	unsigned char *buf[MAXR], *want = malloc(bytes + 1);

	fill(want, bytes, (unsigned int)rand());
	sim_init(&m, n);
	for (int r = 0; r < n; r++) {
		buf[r] = malloc(bytes + 1);
		if (r == root)
			memcpy(buf[r], want, bytes);
		else
			memset(buf[r], 0xee, bytes);
		kp_build_bcast(&m.s[r], buf[r], bytes, root);
	}
	EXPECT(run(&m), "bcast n=%d bytes=%zu root=%d", n, bytes, root);
	for (int r = 0; r < n; r++) {
		EXPECT(!memcmp(buf[r], want, bytes), "bcast n=%d bytes=%zu root=%d rank %d", n,
		       bytes, root, r);
		free(buf[r]);
	}
	free(want);
	sim_free(&m);
}

/*
 * A kept object's schedule (coll.c, coll_get()): emptied with the room of
 * its arrays kept (its temporaries freed: the sanitizer's leak check),
 * and the next build the same as a fresh schedule's.
 */
static void t_reuse(int n)
{
	struct kp_sched s, f;
	struct kp_redop ro = rand_redop();
	size_t count = 1 + rand_bytes(KP_ALLREDUCE_LARGE) / ro.esize;
	size_t bytes = 1 + rand_bytes(KP_BCAST_LARGE);
	int r = rand() % n, r2 = rand() % n, root = rand() % n;
	unsigned char *buf = malloc(count * ro.esize > bytes ? count * ro.esize : bytes);
	struct kprog_coll_step *steps;
	uint32_t cap, tmpcap;

	kp_sched_init(&s, r, n);
	kp_build_allreduce(&s, NULL, buf, count, &ro);	/* in place: a temporary when n > 1 */
	EXPECT(!s.oom && (n == 1 || s.ntmp > 0), "allreduce n=%d count=%zu: steps %u, temporaries %u",
	       n, count, s.n, s.ntmp);
	steps = s.steps;
	cap = s.cap;
	tmpcap = s.tmpcap;
	kp_sched_reuse(&s, r2, n);
	EXPECT(s.n == 0 && s.ntmp == 0 && s.rank == r2 && s.size == n && s.round == 0 &&
	       !s.round_used && !s.oom, "reused schedule is empty");
	EXPECT(s.steps == steps && s.cap == cap && s.tmpcap == tmpcap,
	       "reused schedule keeps its arrays' room");
	kp_build_bcast(&s, buf, bytes, root);
	kp_sched_init(&f, r2, n);
	kp_build_bcast(&f, buf, bytes, root);
	EXPECT(s.n == f.n && (!f.n || !memcmp(s.steps, f.steps, f.n * sizeof(*f.steps))) &&
	       s.round == f.round, "bcast n=%d bytes=%zu root=%d rank %d: reused %u steps, fresh %u",
	       n, bytes, root, r2, s.n, f.n);
	kp_sched_reset(&s);
	EXPECT(s.n == 0 && s.ntmp == 0 && (n == 1 || s.steps), "reset schedule is empty, keeps its steps' room");
	kp_sched_free(&s);
	kp_sched_free(&f);
	free(buf);
}

/* allreduce, reduce, scan, exscan */
enum red_kind { RK_ALLREDUCE, RK_REDUCE, RK_SCAN, RK_EXSCAN };

static void t_reduction(int n, enum red_kind kind)
{
	struct sim m;
	struct kp_redop ro = rand_redop();
	size_t count = rand_bytes(KP_ALLREDUCE_LARGE) / ro.esize, bytes = count * ro.esize;
	int root = rand() % n;
	bool inplace = rand() % 2;
	unsigned char *in[MAXR], *sb[MAXR], *rb[MAXR], *want = malloc(bytes + 1);
	static const char *const names[] = { "allreduce", "reduce", "scan", "exscan" };

	sim_init(&m, n);
	for (int r = 0; r < n; r++) {
		in[r] = malloc(bytes + 1);
		fill_elems(in[r], count, ro.dtype, ro.op, r);
		sb[r] = malloc(bytes + 1);
		rb[r] = malloc(bytes + 1);
		memcpy(sb[r], in[r], bytes);
		memset(rb[r], 0xee, bytes);
		/* in place: the input in the receive buffer (reduce: the root only) */
		bool ip = inplace && (kind != RK_REDUCE || r == root);

		if (ip)
			memcpy(rb[r], in[r], bytes);
		switch (kind) {
		case RK_ALLREDUCE:
			kp_build_allreduce(&m.s[r], ip ? NULL : sb[r], rb[r], count, &ro);
			break;
		case RK_REDUCE:
			kp_build_reduce(&m.s[r], ip ? NULL : sb[r], rb[r], count, &ro, root);
			break;
		case RK_SCAN:
		case RK_EXSCAN:
			kp_build_scan(&m.s[r], ip ? NULL : sb[r], rb[r], count, &ro,
				      kind == RK_EXSCAN);
			break;
		}
	}
	EXPECT(run(&m), "%s n=%d count=%zu dt=%d op=%d", names[kind], n, count, ro.dtype, ro.op);
	for (int r = 0; r < n; r++) {
		bool check = true;

		switch (kind) {
		case RK_ALLREDUCE: direct(in, 0, n - 1, bytes, &ro, want); break;
		case RK_REDUCE: direct(in, 0, n - 1, bytes, &ro, want); check = r == root; break;
		case RK_SCAN: direct(in, 0, r, bytes, &ro, want); break;
		case RK_EXSCAN: check = r > 0; if (r) direct(in, 0, r - 1, bytes, &ro, want); break;
		}
		if (check)
			EXPECT(same(ro.dtype, rb[r], want, bytes),
			       "%s n=%d count=%zu dt=%d op=%d root=%d inplace=%d: rank %d",
			       names[kind], n, count, ro.dtype, ro.op, root, inplace, r);
		/* the send buffer is never written */
		EXPECT(!memcmp(sb[r], in[r], bytes), "%s wrote a send buffer", names[kind]);
	}
	for (int r = 0; r < n; r++) {
		free(in[r]);
		free(sb[r]);
		free(rb[r]);
	}
	free(want);
	sim_free(&m);
}

/* Bytes of a rank's steps of one kind, and how many there are. */
static size_t kind_bytes(const struct kp_sched *s, int kind, unsigned int *nr)
{
	size_t b = 0;

	*nr = 0;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->steps[i].kind == kind) {
			b += s->steps[i].len;
			(*nr)++;
		}
	return b;
}

/*
 * The shape of a reduce's schedule (issue 30: the algorithm by size and
 * rank count). Large: the ring reduce-scatter + gather, in which every
 * rank reduces (n-1)/n of the vector, the root receives 2 (n-1)/n of it
 * and no rank copies its input; at n = 2 the root's path is two rounds.
 * Small: the binomial tree, in which no rank copies its input either (the
 * first child's vector arrives in the accumulator).
 */
static void t_reduce_shape(int n)
{
	struct kp_redop ro = { KPROG_DT_FLOAT, KPROG_OP_SUM, 4 };
	static const size_t sizes[] = { 1 << 20, 4 << 20, KP_REDUCE_RING, 64 + 4 * 3,
					KP_REDUCE_RING - 4 };
	struct sim m;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t bytes = sizes[k], count = bytes / ro.esize;
		bool large = bytes >= kp_reduce_large;
		int root = (int)k % n;
		unsigned char *in[MAXR], *rb[MAXR], *want = malloc(bytes);
		size_t red_sum = 0;

		sim_init(&m, n);
		for (int r = 0; r < n; r++) {
			in[r] = malloc(bytes);
			rb[r] = malloc(bytes);
			fill_elems(in[r], count, ro.dtype, ro.op, r);
			memset(rb[r], 0xee, bytes);
			kp_build_reduce(&m.s[r], in[r], rb[r], count, &ro, root);
		}
		for (int r = 0; r < n; r++) {
			const struct kp_sched *s = &m.s[r];
			unsigned int nc, nrd, nrv, nsd;
			size_t cb = kind_bytes(s, KPROG_STEP_COPY, &nc);
			size_t rdb = kind_bytes(s, KPROG_STEP_REDUCE, &nrd);
			size_t rvb = kind_bytes(s, KPROG_STEP_RECV, &nrv);
			size_t sdb = kind_bytes(s, KPROG_STEP_SEND, &nsd);

			red_sum += rdb;
			EXPECT(!s->oom && nc == 0 && cb == 0,
			       "reduce n=%d bytes=%zu rank %d: %u copies (%zu bytes)", n, bytes, r, nc,
			       cb);
			if (!large)
				continue;
			/* every rank reduces (n-1)/n of the vector (blocks differ by an element) */
			EXPECT(rdb + (size_t)n * ro.esize >= bytes / n * (n - 1) &&
			       rdb <= (bytes / n + ro.esize) * (n - 1),
			       "reduce n=%d bytes=%zu rank %d reduces %zu bytes", n, bytes, r, rdb);
			if (r == root)
				EXPECT(rvb <= 2 * (bytes / n + ro.esize) * (n - 1) &&
				       rvb + 2 * (size_t)n * ro.esize >= 2 * (bytes / n) * (n - 1) &&
				       nrv == 2 * (unsigned int)(n - 1),
				       "reduce n=%d bytes=%zu root receives %zu bytes in %u steps", n,
				       bytes, rvb, nrv);
			else
				EXPECT(sdb <= (size_t)n * (bytes / n + ro.esize) && nsd == (unsigned int)n,
				       "reduce n=%d bytes=%zu rank %d sends %zu bytes in %u steps", n,
				       bytes, r, sdb, nsd);
			if (n == 2 && r == root)
				EXPECT(s->n && s->steps[s->n - 1].round == 1,
				       "reduce n=2 bytes=%zu: the root's path is %u rounds", bytes,
				       s->n ? s->steps[s->n - 1].round + 1 : 0);
		}
		if (large)
			EXPECT(red_sum + (size_t)n * n * ro.esize >= bytes / n * (n - 1) * n,
			       "reduce n=%d bytes=%zu: %zu bytes reduced in all", n, bytes, red_sum);
		else if (n == 2)
			EXPECT(m.s[root].n == 2 && m.s[root].steps[0].kind == KPROG_STEP_RECV &&
			       m.s[root].steps[0].dst == (uint64_t)(uintptr_t)rb[root],
			       "reduce n=2 bytes=%zu: the root receives into its receive buffer", bytes);
		EXPECT(run(&m), "reduce shape n=%d bytes=%zu", n, bytes);
		direct(in, 0, n - 1, bytes, &ro, want);
		EXPECT(same(ro.dtype, rb[root], want, bytes), "reduce shape n=%d bytes=%zu root=%d",
		       n, bytes, root);
		for (int r = 0; r < n; r++) {
			free(in[r]);
			free(rb[r]);
		}
		free(want);
		sim_free(&m);
	}
}

static void t_reduce_scatter(int n)
{
	struct sim m;
	struct kp_redop ro = rand_redop();
	size_t counts[MAXR], total = 0, first[MAXR];
	bool block = rand() % 2, inplace = rand() % 2;
	unsigned char *in[MAXR], *rb[MAXR], *want;

	size_t each = rand_bytes(KP_ALLREDUCE_LARGE / 4) / ro.esize;

	for (int r = 0; r < n; r++) {
		counts[r] = block ? each : (size_t)rand() % (each + 2);
		first[r] = total;
		total += counts[r];
	}
	want = malloc(total * ro.esize + 1);
	sim_init(&m, n);
	for (int r = 0; r < n; r++) {
		in[r] = malloc(total * ro.esize + 1);
		rb[r] = malloc(total * ro.esize + 1);
		fill_elems(in[r], total, ro.dtype, ro.op, r);
		if (inplace)
			memcpy(rb[r], in[r], total * ro.esize);
		kp_build_reduce_scatter(&m.s[r], inplace ? NULL : in[r], rb[r], counts, &ro);
	}
	EXPECT(run(&m), "reduce_scatter n=%d total=%zu", n, total);
	direct(in, 0, n - 1, total * ro.esize, &ro, want);
	for (int r = 0; r < n; r++) {
		EXPECT(same(ro.dtype, rb[r], want + first[r] * ro.esize, counts[r] * ro.esize),
		       "reduce_scatter n=%d rank %d count %zu dt=%d op=%d inplace=%d", n, r,
		       counts[r], ro.dtype, ro.op, inplace);
		free(in[r]);
		free(rb[r]);
	}
	free(want);
	sim_free(&m);
}

/* alltoall(v), allgather(v), gather(v), scatter(v) */
enum mv_kind { MV_ALLTOALL, MV_ALLGATHER, MV_GATHER, MV_SCATTER, MV_ALLTOALLV, MV_ALLGATHERV,
	       MV_GATHERV, MV_SCATTERV, MV_NR };

static void t_move(int n, enum mv_kind kind)
{
	static const char *const names[] = { "alltoall", "allgather", "gather", "scatter",
					      "alltoallv", "allgatherv", "gatherv", "scatterv" };
	struct sim m;
	size_t block = rand_bytes(kind == MV_ALLTOALL ? KP_ALLTOALL_PAIRWISE : 8192);
	int root = rand() % n, r, i;
	bool inplace = rand() % 2, v = kind >= MV_ALLTOALLV;
	/* cnt[i][j]: bytes rank i sends rank j; blocks laid out with gaps */
	size_t cnt[MAXR][MAXR], sd[MAXR][MAXR], rd[MAXR][MAXR], sc[MAXR], rc[MAXR];
	size_t ssz[MAXR], rsz[MAXR];
	unsigned char *sb[MAXR], *rb[MAXR], *orig[MAXR];

	for (i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			/* rooted and all* v forms: a rank's share is the same to everyone */
			size_t b = v ? (size_t)rand() % (block + 2) : block;

			if (kind == MV_ALLGATHERV || kind == MV_GATHERV)
				b = j ? cnt[i][0] : b;
			if (kind == MV_SCATTERV)
				b = i ? cnt[0][j] : b;
			if (kind == MV_ALLTOALLV && inplace && j < i)
				b = cnt[j][i];	/* in place: symmetric counts */
			cnt[i][j] = b;
		}
	/* layouts: displacements in order with random gaps (v) */
	for (r = 0; r < n; r++) {
		size_t so = 0, ro = 0;

		for (i = 0; i < n; i++) {
			so += v ? (size_t)rand() % 5 : 0;
			ro += v ? (size_t)rand() % 5 : 0;
			sd[r][i] = so;
			rd[r][i] = ro;
			so += cnt[r][i];
			ro += cnt[i][r];
		}
		ssz[r] = so;
		rsz[r] = ro;
	}
	if (kind == MV_ALLTOALLV && inplace)
		for (r = 0; r < n; r++) {
			memcpy(sd[r], rd[r], sizeof(sd[r]));
			ssz[r] = rsz[r];
		}
	sim_init(&m, n);
	for (r = 0; r < n; r++) {
		sb[r] = malloc(ssz[r] + block * n + 1);
		orig[r] = malloc(ssz[r] + block * n + 1);
		rb[r] = malloc(rsz[r] + block * n + 1);
		fill(sb[r], ssz[r] + block * n, (unsigned int)r * 977 + 5);
		memcpy(orig[r], sb[r], ssz[r] + block * n);
		memset(rb[r], 0xee, rsz[r] + block * n);
	}
	for (r = 0; r < n; r++) {
		struct kp_sched *s = &m.s[r];
		bool ip = inplace;

		switch (kind) {
		case MV_ALLTOALL:
			if (ip)
				memcpy(rb[r], sb[r], block * n);
			kp_build_alltoall(s, ip ? NULL : sb[r], rb[r], block);
			break;
		case MV_ALLGATHER:
			if (ip)
				memcpy(rb[r] + block * r, sb[r], block);
			kp_build_allgather(s, ip ? NULL : sb[r], rb[r], block);
			break;
		case MV_GATHER:
			ip = ip && r == root;
			if (ip)
				memcpy(rb[r] + block * r, sb[r], block);
			kp_build_gather(s, ip ? NULL : sb[r], rb[r], block, root);
			break;
		case MV_SCATTER:
			ip = ip && r == root;
			kp_build_scatter(s, sb[root == r ? r : 0] , ip ? NULL : rb[r], block, root);
			break;
		case MV_ALLTOALLV:
			for (i = 0; i < n; i++) {
				sc[i] = cnt[r][i];
				rc[i] = cnt[i][r];
			}
			if (ip)
				memcpy(rb[r], sb[r], rsz[r]);
			kp_build_alltoallv(s, ip ? NULL : sb[r], sc, sd[r], rb[r], rc, rd[r]);
			break;
		case MV_ALLGATHERV:
		case MV_GATHERV:
			for (i = 0; i < n; i++)
				rc[i] = cnt[i][r];
			ip = ip && (kind == MV_ALLGATHERV || r == root);
			if (ip)
				memcpy(rb[r] + rd[r][r], sb[r], cnt[r][0]);
			if (kind == MV_GATHERV)
				kp_build_gatherv(s, ip ? NULL : sb[r], cnt[r][0], rb[r], rc, rd[r],
						 root);
			else
				kp_build_allgatherv(s, ip ? NULL : sb[r], cnt[r][0], rb[r], rc, rd[r]);
			break;
		case MV_SCATTERV:
			ip = ip && r == root;
			for (i = 0; i < n; i++)
				sc[i] = cnt[r][i];
			kp_build_scatterv(s, sb[r], sc, sd[r], ip ? NULL : rb[r], cnt[0][r], root);
			break;
		case MV_NR:
			break;
		}
	}
	EXPECT(run(&m), "%s n=%d block=%zu root=%d inplace=%d", names[kind], n, block, root,
	       inplace);
	for (r = 0; r < n; r++) {
		bool ok = true;

		switch (kind) {
		case MV_ALLTOALL:
			for (i = 0; i < n; i++)
				ok &= !memcmp(rb[r] + block * i, orig[i] + block * r, block);
			break;
		case MV_ALLGATHER:
			for (i = 0; i < n; i++)
				ok &= !memcmp(rb[r] + block * i, orig[i], block);
			break;
		case MV_GATHER:
			for (i = 0; r == root && i < n; i++)
				ok &= !memcmp(rb[r] + block * i, orig[i], block);
			break;
		case MV_SCATTER:
			if (!(inplace && r == root))
				ok = !memcmp(rb[r], orig[root] + block * r, block);
			break;
		case MV_ALLTOALLV:
			for (i = 0; i < n; i++)
				ok &= !memcmp(rb[r] + rd[r][i], orig[i] + sd[i][r], cnt[i][r]);
			break;
		case MV_ALLGATHERV:
		case MV_GATHERV:
			for (i = 0; (kind == MV_ALLGATHERV || r == root) && i < n; i++)
				ok &= !memcmp(rb[r] + rd[r][i], orig[i], cnt[i][r]);
			break;
		case MV_SCATTERV:
			if (!(inplace && r == root))
				ok = !memcmp(rb[r], orig[root] + sd[root][r], cnt[root][r]);
			break;
		case MV_NR:
			break;
		}
		EXPECT(ok, "%s n=%d block=%zu root=%d inplace=%d: rank %d", names[kind], n, block,
		       root, inplace, r);
		if (!(inplace && kind == MV_ALLTOALLV))
			EXPECT(!memcmp(sb[r], orig[r], ssz[r]), "%s wrote a send buffer",
			       names[kind]);
	}
	for (r = 0; r < n; r++) {
		free(sb[r]);
		free(rb[r]);
		free(orig[r]);
	}
	sim_free(&m);
}

/* The executor itself rejects what the module would, and finds hazards. */
static bool runs(void (*build)(struct sim *m))
{
	struct sim m;
	bool ok;

	sim_init(&m, 2);
	m.quiet = true;
	build(&m);
	ok = run(&m);
	sim_free(&m);
	return ok;
}

static char xa[8] = "abcdefg", xb[8];

static void x_stuck(struct sim *m) { kp_sched_recv(&m->s[0], 1, xb, 8); }
static void x_self(struct sim *m) { kp_sched_send(&m->s[0], 0, xa, 8); }
static void x_overlap(struct sim *m) { kp_sched_copy(&m->s[0], xa, xa + 2, 4); }
static void x_short(struct sim *m)
{
	kp_sched_send(&m->s[0], 1, xa, 4);
	kp_sched_recv(&m->s[1], 0, xb, 8);
}
static void x_hazard(struct sim *m)
{
	/* the copy into xa may run before the send of xa is matched */
	kp_sched_send(&m->s[0], 1, xa, 8);
	kp_sched_copy(&m->s[0], xb, xa, 8);
	kp_sched_recv(&m->s[1], 0, xb, 8);
}
static void x_good(struct sim *m)
{
	kp_sched_send(&m->s[0], 1, xa, 8);
	kp_sched_next_round(&m->s[0]);
	kp_sched_copy(&m->s[0], xb, xa, 8);
	kp_sched_recv(&m->s[1], 0, xb, 8);
}

static void t_executor(void)
{
	int caught = 0;

	EXPECT(!runs(x_stuck), "a receive without a send must be stuck");
	EXPECT(!runs(x_self), "a send to oneself is refused");
	EXPECT(!runs(x_overlap), "an overlapping copy is refused");
	EXPECT(!runs(x_short), "a message shorter than its receive is refused");
	EXPECT(runs(x_good), "a copy after the send's round is fine");
	memset(xb, 'z', 8);
	for (int i = 0; i < 50; i++) {
		memcpy(xa, "abcdefg", 8);
		caught += !runs(x_hazard);
	}
	EXPECT(caught > 0, "a buffer written under its send is found (%d of 50 runs)", caught);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 40;
	unsigned int seed = argc > 2 ? (unsigned int)atoi(argv[2]) : 12345;

	srand(seed);
	t_executor();
	/* the reduce both with its ring (from KP_REDUCE_RING) and without (the default) */
	for (int ring = 0; ring < 2; ring++) {
		kp_reduce_large = ring ? KP_REDUCE_RING : SIZE_MAX;
		for (int n = 2; n <= MAXR; n++)
			t_reduce_shape(n);
	}
	for (int it = 0; it < iters; it++)
		for (int n = 1; n <= MAXR; n++) {
			kp_reduce_large = it % 2 ? KP_REDUCE_RING : SIZE_MAX;
			t_barrier(n);
			t_bcast(n);
			t_reuse(n);
			for (int k = RK_ALLREDUCE; k <= RK_EXSCAN; k++)
				t_reduction(n, k);
			t_reduce_scatter(n);
			for (int k = 0; k < MV_NR; k++)
				t_move(n, k);
		}
	return EXPECT_SUMMARY();
}
