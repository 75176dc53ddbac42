// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPI_ANY_SOURCE / MPI_ANY_TAG with 3-4 ranks, every rank sending to and
 * receiving from every other rank at once. Statuses must report the real
 * source and tag, the count must be right, every message must be received
 * exactly once, and messages from one source must still match in order
 * (a wildcard receive matches the earliest pending message of a sender).
 *
 * Message i from s to d: tag 100 + i % NTAGS, size sizes[i % NSIZES],
 * payload = {s, d, i} header + pattern.
 *
 * Rounds:
 *  1  blocking Recv(ANY_SOURCE, ANY_TAG)
 *  2  per tag t: Recv(ANY_SOURCE, t)
 *  3  per source: Irecv(s, ANY_TAG) all pre-posted, Waitall
 *  4  Irecv(ANY_SOURCE, ANY_TAG) all pre-posted before the senders start,
 *     completed with Waitany
 */
#include "check.h"

#define M 48
#define NTAGS 4
#define TAG0 100
static const int sizes[] = { 16, 4000, 70000, 17, 200000, 20, 65536, 1024 };
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define MAXSZ 200000

static int rank, size;

struct hdr {
	int32_t src, dst, i, round;
};

static int msg_tag(int i)
{
	return TAG0 + i % NTAGS;
}

static int msg_size(int i)
{
	return sizes[(i * 5 + 3) % NSIZES];
}

static uint32_t msg_seed(int s, int d, int i, int round)
{
	return pat_seed(s, d, msg_tag(i), round * 1000 + i);
}

struct sends {
	MPI_Request req[8 * M];
	unsigned char *buf[8 * M];
	int n;
};

static void start_sends(struct sends *ss, int round)
{
	int d, i;

	ss->n = 0;
	/* Interleave destinations so every receiver sees mixed sources. */
	for (i = 0; i < M; i++)
		for (d = 0; d < size; d++) {
			int len = msg_size(i);
			struct hdr h = { rank, d, i, round };
			unsigned char *b;

			if (d == rank)
				continue;
			b = xmalloc(len);
			pat_fill(b, len, msg_seed(rank, d, i, round));
			memcpy(b, &h, sizeof(h));
			ss->buf[ss->n] = b;
			MPI_CHECK(MPI_Isend(b, len, MPI_BYTE, d, msg_tag(i),
					    MPI_COMM_WORLD, &ss->req[ss->n]));
			ss->n++;
		}
}

static void finish_sends(struct sends *ss)
{
	int k;

	MPI_CHECK(MPI_Waitall(ss->n, ss->req, MPI_STATUSES_IGNORE));
	for (k = 0; k < ss->n; k++)
		free(ss->buf[k]);
}

/* Checks one received message and returns its index i. */
static int check_msg(const unsigned char *buf, MPI_Status *st, int round,
		     int want_src, int want_tag, unsigned char seen[][M])
{
	struct hdr h;
	int cnt = -1, s, i;

	MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &cnt));
	CHECK(cnt >= (int)sizeof(h), "round %d: count %d too small", round, cnt);
	memcpy(&h, buf, sizeof(h));
	s = h.src;
	i = h.i;
	CHECK(h.dst == rank && h.round == round && s >= 0 && s < size &&
	      s != rank && i >= 0 && i < M,
	      "round %d: bad header src %d dst %d i %d round %d", round, h.src,
	      h.dst, h.i, h.round);
	CHECK(st->MPI_SOURCE == s, "round %d: status source %d, message from %d",
	      round, st->MPI_SOURCE, s);
	CHECK(st->MPI_TAG == msg_tag(i), "round %d: status tag %d, message %d "
	      "from %d has tag %d", round, st->MPI_TAG, i, s, msg_tag(i));
	CHECK(want_src == MPI_ANY_SOURCE || want_src == s,
	      "round %d: receive for source %d got a message from %d", round,
	      want_src, s);
	CHECK(want_tag == MPI_ANY_TAG || want_tag == msg_tag(i),
	      "round %d: receive for tag %d got tag %d", round, want_tag,
	      msg_tag(i));
	CHECK(cnt == msg_size(i), "round %d: message %d from %d count %d, "
	      "expected %d", round, i, s, cnt, msg_size(i));
	CHECK_PAT_FROM(buf, sizeof(h), (size_t)cnt, msg_seed(s, rank, i, round),
		       "round %d: message %d from %d", round, i, s);
	CHECK(!seen[s][i], "round %d: message %d from %d received twice",
	      round, i, s);
	seen[s][i] = 1;
	return i;
}

static void check_all_seen(unsigned char seen[][M], int round)
{
	int s, i;

	for (s = 0; s < size; s++)
		for (i = 0; i < M; i++)
			CHECK(s == rank || seen[s][i],
			      "round %d: message %d from %d never received",
			      round, i, s);
}

/* Round 1: Recv(ANY_SOURCE, ANY_TAG); per-source order must hold. */
static void round1(void)
{
	unsigned char seen[8][M] = { { 0 } };
	int next[8] = { 0 };
	unsigned char *buf = xmalloc(MAXSZ);
	struct sends ss;
	MPI_Status st;
	int n;

	start_sends(&ss, 1);
	for (n = 0; n < M * (size - 1); n++) {
		int i;

		status_poison(&st);
		MPI_CHECK(MPI_Recv(buf, MAXSZ, MPI_BYTE, MPI_ANY_SOURCE,
				   MPI_ANY_TAG, MPI_COMM_WORLD, &st));
		i = check_msg(buf, &st, 1, MPI_ANY_SOURCE, MPI_ANY_TAG, seen);
		CHECK(i == next[st.MPI_SOURCE], "round 1: from %d got message "
		      "%d, expected %d (overtaken)", st.MPI_SOURCE, i,
		      next[st.MPI_SOURCE]);
		next[st.MPI_SOURCE]++;
	}
	check_all_seen(seen, 1);
	finish_sends(&ss);
	free(buf);
}

/* Round 2: per tag, Recv(ANY_SOURCE, tag); order within (source, tag). */
static void round2(void)
{
	unsigned char seen[8][M] = { { 0 } };
	unsigned char *buf = xmalloc(MAXSZ);
	struct sends ss;
	MPI_Status st;
	int t, n;

	start_sends(&ss, 2);
	/* Tags in reverse order: the earlier tags wait as unexpected. */
	for (t = NTAGS - 1; t >= 0; t--) {
		int next[8], s;

		for (s = 0; s < 8; s++)
			next[s] = t;
		for (n = 0; n < (M / NTAGS) * (size - 1); n++) {
			int i;

			status_poison(&st);
			MPI_CHECK(MPI_Recv(buf, MAXSZ, MPI_BYTE,
					   MPI_ANY_SOURCE, TAG0 + t,
					   MPI_COMM_WORLD, &st));
			i = check_msg(buf, &st, 2, MPI_ANY_SOURCE, TAG0 + t,
				      seen);
			CHECK(i == next[st.MPI_SOURCE], "round 2: tag %d from "
			      "%d got message %d, expected %d", TAG0 + t,
			      st.MPI_SOURCE, i, next[st.MPI_SOURCE]);
			next[st.MPI_SOURCE] += NTAGS;
		}
	}
	check_all_seen(seen, 2);
	finish_sends(&ss);
	free(buf);
}

/* Round 3: Irecv(source, ANY_TAG) for everything, then one Waitall. */
static void round3(void)
{
	unsigned char seen[8][M] = { { 0 } };
	int nr = M * (size - 1), k = 0, s, i;
	MPI_Request *req = xmalloc(sizeof(*req) * nr);
	MPI_Status *st = xmalloc(sizeof(*st) * nr);
	unsigned char **buf = xmalloc(sizeof(*buf) * nr);
	int *src = xmalloc(sizeof(int) * nr), *idx = xmalloc(sizeof(int) * nr);
	struct sends ss;

	/* Sources interleaved in the posting order, descending. */
	for (i = 0; i < M; i++)
		for (s = size - 1; s >= 0; s--) {
			if (s == rank)
				continue;
			buf[k] = xmalloc(MAXSZ);
			src[k] = s;
			idx[k] = i;
			status_poison(&st[k]);
			MPI_CHECK(MPI_Irecv(buf[k], MAXSZ, MPI_BYTE, s,
					    MPI_ANY_TAG, MPI_COMM_WORLD,
					    &req[k]));
			k++;
		}
	start_sends(&ss, 3);
	MPI_CHECK(MPI_Waitall(nr, req, st));
	for (k = 0; k < nr; k++) {
		i = check_msg(buf[k], &st[k], 3, src[k], MPI_ANY_TAG, seen);
		CHECK(i == idx[k], "round 3: receive %d for source %d got "
		      "message %d, expected %d", k, src[k], i, idx[k]);
		free(buf[k]);
	}
	check_all_seen(seen, 3);
	finish_sends(&ss);
	free(req);
	free(st);
	free(buf);
	free(src);
	free(idx);
}

/*
 * Round 4: Irecv(ANY_SOURCE, ANY_TAG) all pre-posted before anyone sends,
 * Waitany. Per source, messages fill the receives in posting order.
 */
static void round4(void)
{
	unsigned char seen[8][M] = { { 0 } };
	int nr = M * (size - 1), k, n;
	MPI_Request *req = xmalloc(sizeof(*req) * nr);
	unsigned char **buf = xmalloc(sizeof(*buf) * nr);
	int *got = xmalloc(sizeof(int) * nr);
	int last_k[8], last_i[8];
	struct sends ss;

	for (k = 0; k < nr; k++) {
		buf[k] = xmalloc(MAXSZ);
		got[k] = -1;
		MPI_CHECK(MPI_Irecv(buf[k], MAXSZ, MPI_BYTE, MPI_ANY_SOURCE,
				    MPI_ANY_TAG, MPI_COMM_WORLD, &req[k]));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	start_sends(&ss, 4);
	for (n = 0; n < nr; n++) {
		MPI_Status st;
		int idx = -1;

		status_poison(&st);
		MPI_CHECK(MPI_Waitany(nr, req, &idx, &st));
		CHECK(idx >= 0 && idx < nr && got[idx] < 0,
		      "round 4: Waitany index %d", idx);
		CHECK(req[idx] == MPI_REQUEST_NULL, "round 4: request %d not "
		      "freed by Waitany", idx);
		got[idx] = check_msg(buf[idx], &st, 4, MPI_ANY_SOURCE,
				     MPI_ANY_TAG, seen) + st.MPI_SOURCE * M;
	}
	{
		int idx = 12345;
		MPI_Status st;

		MPI_CHECK(MPI_Waitany(nr, req, &idx, &st));
		CHECK(idx == MPI_UNDEFINED, "Waitany on all-null array gave "
		      "index %d", idx);
		CHECK_EMPTY_STATUS(&st);
	}
	check_all_seen(seen, 4);
	for (n = 0; n < 8; n++)
		last_k[n] = last_i[n] = -1;
	for (k = 0; k < nr; k++) {
		int s = got[k] / M, i = got[k] % M;

		CHECK(i > last_i[s], "round 4: from %d message %d went to "
		      "receive %d but message %d to later receive %d", s, i, k,
		      last_i[s], last_k[s]);
		last_i[s] = i;
		last_k[s] = k;
		free(buf[k]);
	}
	finish_sends(&ss);
	free(req);
	free(buf);
	free(got);
}

int main(int argc, char **argv)
{
	test_init(&argc, &argv, "wildcards", 2, &rank, &size);
	CHECK(size <= 8, "at most 8 ranks");
	round1();
	MPI_Barrier(MPI_COMM_WORLD);
	round2();
	MPI_Barrier(MPI_COMM_WORLD);
	round3();
	MPI_Barrier(MPI_COMM_WORLD);
	round4();
	return test_finish();
}
