// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * faults: one job of the fault campaign (tests/mpi/run-faults). All ranks
 * exchange traffic in iterations: eager and rendezvous messages with named
 * sources, wildcard receives (MPI_ANY_SOURCE, MPI_ANY_TAG) fed by every
 * peer, and a receive that nobody matches, cancelled. K ranks, the victims,
 * each kill themselves (SIGKILL) at a random moment of their own; every
 * survivor must get an error completion (MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD) naming each victim instead of hanging, and must keep
 * talking to the living ranks: no request naming a living rank may fail.
 *
 *   mpirun --enable-recovery -np N faults -s SEED [-k K] [-i ITERS] [-t SECONDS]
 *     -s  the job's seed: the victims, their iterations and their moments
 *     -k  victims (default 1, at most N - 1)
 *     -i  iterations (default 20); each victim dies in one of them
 *     -t  a survivor that has no error after this long fails (default 60)
 *
 * A survivor stops posting to a rank once a request naming it failed. The
 * survivors' wildcard receives cannot fail when one possible sender dies
 * (MPI semantics: another rank could still match them); once a victim is
 * known dead (its message may be missing in any later iteration, since
 * wildcards match messages of any iteration), a survivor cancels the
 * wildcard receives still pending when its named requests are done: they
 * must then complete (cancelled, or received); before any death they must
 * all be matched. When its named requests are done and
 * wildcards still wait, a survivor posts a receive naming each victim it
 * does not know dead (it fails if that rank is dead): a victim may have died
 * after its named messages and before its wildcard one left it; then the
 * survivor cancels too ("deaths found by a probe"). A survivor that finished every
 * iteration without an error naming some victim (it died after its last
 * messages) then receives from that victim by name: that must fail.
 * Lines (T: CLOCK_MONOTONIC seconds, the same clock for every rank of the
 * node, so the driver can time a kill to its error completions):
 *   faults: victim rank V dies in iteration I (WHEN) at T
 *   faults: survivor rank R: error MPI_ERR_... from rank V in iteration I at T
 *   faults: victim (alive) rank R: error ... (a victim that saw another die)
 *   faults: survivor rank R: done, K victims, C wildcard receives cancelled
 * (the iteration is ITERS for the final receive by name). Every rank leaves
 * with _exit() (MPI_Finalize would wait for the dead ranks): 0 for a
 * survivor that got its errors and could cancel, 1 otherwise.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS	16
#define EAGER_MAX	4096		/* below the module's default eager limit */
#define RNDV_MIN	(64 << 10)
#define RNDV_MAX	(1 << 20)
#define TAG_EAGER	1
#define TAG_RNDV	2
#define TAG_WILD	3
#define TAG_NEVER	99

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned long long rng;

static unsigned long long rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static const char *errname(int code)
{
	static char s[MPI_MAX_ERROR_STRING];
	int len = 0;

	MPI_Error_string(code, s, &len);
	return s;
}


static int rank, size, iters;
static int is_victim[MAX_RANKS], dead[MAX_RANKS];

/* The victim's end: one line with the moment, then SIGKILL. */
static void die(int it, const char *when)
{
	printf("faults: victim rank %d dies in iteration %d (%s) at %.6f\n", rank, it, when, now());
	fflush(stdout);
	raise(SIGKILL);
}

/* A request naming @peer failed: the first one for a victim is its error completion. */
static void peer_failed(int peer, int code, int it)
{
	if (!is_victim[peer]) {
		printf("faults: rank %d: error %s on a request naming rank %d, which is alive, in iteration %d\n",
		       rank, errname(code), peer, it);
		fflush(stdout);
		_exit(1);
	}
	if (dead[peer])
		return;
	dead[peer] = 1;
	/* a victim not dead yet prints its own kind of line: only survivors' count */
	printf("faults: %s rank %d: error %s from rank %d in iteration %d at %.6f\n",
	       is_victim[rank] ? "victim (alive)" : "survivor", rank, errname(code), peer, it, now());
	fflush(stdout);
}

/*
 * probe_dead() - is victim @v dead? A receive naming it (nobody sends
 * TAG_NEVER) fails if so; else it is cancelled and must complete.
 */
static int probe_dead(int v, int it)
{
	static char b;
	MPI_Request r;
	MPI_Status st;
	int flag = 0, rc = MPI_Irecv(&b, 1, MPI_BYTE, v, TAG_NEVER, MPI_COMM_WORLD, &r);
	double t = now();

	while (rc == MPI_SUCCESS && !flag && now() - t < 0.002)
		rc = MPI_Test(&r, &flag, &st);
	if (rc != MPI_SUCCESS) {
		peer_failed(v, rc, it);
		return 1;
	}
	if (flag) {
		printf("faults: rank %d: a receive of tag %d from rank %d completed\n", rank, TAG_NEVER, v);
		fflush(stdout);
		_exit(1);
	}
	MPI_Cancel(&r);
	rc = MPI_Wait(&r, &st);
	if (rc != MPI_SUCCESS) {	/* it died meanwhile */
		peer_failed(v, rc, it);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long seed = 1;
	int nvict = 1, tmo = 60, opt, mine = -1, cancelled = 0, nwerr = 0, nprobed = 0;
	int die_iter[MAX_RANKS], die_step[MAX_RANKS], perm[MAX_RANKS];
	MPI_Request req[8 * MAX_RANKS];
	int req_peer[8 * MAX_RANKS];	/* the rank a request names; -1: wildcard */
	char *sbuf, *rbuf;
	MPI_Comm wcomm;
	double t0;

	iters = 20;
	while ((opt = getopt(argc, argv, "s:k:i:t:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'k': nvict = atoi(optarg); break;
		case 'i': iters = atoi(optarg); break;
		case 't': tmo = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: faults -s SEED [-k VICTIMS] [-i ITERS] [-t SECONDS]\n");
			return 2;
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || size > MAX_RANKS || iters < 1 || nvict < 1 || nvict >= size) {
		if (!rank)
			fprintf(stderr, "faults: 2..%d ranks, -i >= 1, 1 <= -k < ranks\n", MAX_RANKS);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_dup(MPI_COMM_WORLD, &wcomm);	/* inherits MPI_ERRORS_RETURN */
	/* the same draws on every rank: all know the victims, each uses its own */
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int p = 0; p < size; p++)
		perm[p] = p;
	for (int k = 0; k < nvict; k++) {
		int j = k + (int)(rnd() % (size - k)), t = perm[k];

		perm[k] = perm[j];
		perm[j] = t;
		is_victim[perm[k]] = 1;
		die_iter[perm[k]] = rnd() % iters;
		/* before posting, after posting, while testing, early while testing */
		die_step[perm[k]] = rnd() % 4;
	}
	if (is_victim[rank])
		mine = rank;
	rng ^= (unsigned long long)(rank + 1) << 32;	/* sizes and waits differ per rank */
	sbuf = malloc((size_t)RNDV_MAX * size);
	rbuf = malloc((size_t)RNDV_MAX * 2 * size);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	memset(sbuf, rank + 1, (size_t)RNDV_MAX * size);
	memset(rbuf, 0, (size_t)RNDV_MAX * 2 * size);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now();
	for (int it = 0; it < iters; it++) {
		int me_dies = mine >= 0 && it == die_iter[mine];
		unsigned int us = rnd() % 20000;
		int nreq = 0, nnamed = 0, nwild = 0, named_done = 0, wild_done = 0;
		int posted_to[MAX_RANKS] = { 0 };
		MPI_Request never;
		MPI_Status st;
		int flag;
		double tstart, tprobe = now();

		if (me_dies && die_step[mine] == 0)
			die(it, "before posting");
		/* a receive nobody sends to, cancelled: must complete as cancelled */
		if (MPI_Irecv(rbuf, 1, MPI_BYTE, MPI_ANY_SOURCE, TAG_NEVER, MPI_COMM_WORLD, &never) == MPI_SUCCESS) {
			MPI_Cancel(&never);
			MPI_Wait(&never, &st);
			MPI_Test_cancelled(&st, &flag);
			if (!flag) {
				printf("faults: rank %d: a cancelled receive was not cancelled\n", rank);
				fflush(stdout);
				_exit(1);
			}
		}
		for (int p = 0; p < size; p++) {
			size_t e = 1 + rnd() % EAGER_MAX;
			size_t r = RNDV_MIN + rnd() % (RNDV_MAX - RNDV_MIN);
			size_t w = rnd() % 64;
			int wtag = (int)(rnd() % 8), rc, ok = 1;
			char *rb = rbuf + (size_t)2 * RNDV_MAX * p;

			if (p == rank || dead[p])
				continue;
			posted_to[p] = 1;
			/* wildcards on their own communicator, where every message fits */
			rc = MPI_Irecv(rb + RNDV_MAX + EAGER_MAX, 64, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
				       wcomm, &req[nreq]);
			if (rc != MPI_SUCCESS) {
				printf("faults: rank %d: posting a wildcard receive failed: %s\n", rank, errname(rc));
				fflush(stdout);
				_exit(1);
			}
			req_peer[nreq++] = -1;
			nwild++;
			/* the peer draws its own sizes: receive up to the maximum */
#define POST(call) do {							\
				if (ok) {					\
					rc = (call);				\
					if (rc != MPI_SUCCESS) {		\
						peer_failed(p, rc, it);		\
						ok = 0;				\
					} else {				\
						req_peer[nreq++] = p;		\
						nnamed++;			\
					}					\
				}						\
			} while (0)
			POST(MPI_Irecv(rb, EAGER_MAX, MPI_BYTE, p, TAG_EAGER, MPI_COMM_WORLD, &req[nreq]));
			POST(MPI_Irecv(rb + EAGER_MAX, RNDV_MAX, MPI_BYTE, p, TAG_RNDV, MPI_COMM_WORLD, &req[nreq]));
			POST(MPI_Isend(sbuf, (int)e, MPI_BYTE, p, TAG_EAGER, MPI_COMM_WORLD, &req[nreq]));
			POST(MPI_Isend(sbuf + EAGER_MAX, (int)r, MPI_BYTE, p, TAG_RNDV, MPI_COMM_WORLD, &req[nreq]));
			POST(MPI_Isend(sbuf, (int)w, MPI_BYTE, p, wtag, wcomm, &req[nreq]));
#undef POST
		}
		if (me_dies && die_step[mine] == 1)
			die(it, "after posting");
		if (me_dies && die_step[mine] == 3)
			us /= 10;
		tstart = now();
		while (named_done < nnamed || wild_done < nwild) {
			int idx[8 * MAX_RANKS], outc = 0, gone = 0;
			MPI_Status sts[8 * MAX_RANKS];
			int rc = MPI_Testsome(nreq, req, &outc, idx, sts);

			if (me_dies && now() - tstart >= us * 1e-6)
				die(it, "amid the traffic");
			if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
				printf("faults: rank %d: MPI_Testsome returned %s in iteration %d\n", rank, errname(rc), it);
				fflush(stdout);
				_exit(1);
			}
			if (outc == MPI_UNDEFINED)
				break;
			for (int k = 0; k < outc; k++) {
				int peer = req_peer[idx[k]], code = rc == MPI_ERR_IN_STATUS ? sts[k].MPI_ERROR : MPI_SUCCESS;

				if (peer < 0) {
					wild_done++;
					nwerr += code != MPI_SUCCESS;
				} else {
					named_done++;
					if (code != MPI_SUCCESS)
						peer_failed(peer, code, it);
				}
			}
			/*
			 * Any death so far: wildcards match messages of any
			 * iteration, so a message a victim never sent may be
			 * missing in any later iteration.
			 */
			for (int p = 0; p < size; p++)
				gone |= dead[p];
			if (named_done == nnamed && wild_done < nwild && !gone && now() - tprobe > 0.02) {
				/*
				 * Every named request is done, no death known:
				 * a victim of this iteration may have died
				 * after them, its wildcard message lost with
				 * it (a send it had posted, not completed). A
				 * receive naming it tells.
				 */
				tprobe = now();
				for (int v = 0; v < size; v++)
					if (posted_to[v] && is_victim[v] && !dead[v] && probe_dead(v, it)) {
						gone = 1;
						nprobed++;
					}
			}
			if (named_done == nnamed && wild_done < nwild && gone) {
				/*
				 * A rank of this iteration died: its wildcard
				 * message may never come. Cancel what is left;
				 * each must complete (cancelled or received).
				 */
				for (int k = 0; k < nreq; k++) {
					double tc = now();

					if (req[k] == MPI_REQUEST_NULL)
						continue;
					MPI_Cancel(&req[k]);
					flag = 0;
					while (!flag && now() - tc < 10)
						if (MPI_Test(&req[k], &flag, &st) != MPI_SUCCESS)
							flag = 1;
					if (!flag) {
						printf("faults: rank %d: a cancelled wildcard receive did not complete within 10 s\n",
						       rank);
						fflush(stdout);
						_exit(1);
					}
					cancelled++;
				}
				break;
			}
			if (now() - t0 > tmo) {
				printf("faults: rank %d: %d of %d named and %d of %d wildcard requests still pending after %d s in iteration %d (hang)\n",
				       rank, nnamed - named_done, nnamed, nwild - wild_done, nwild, tmo, it);
				fflush(stdout);
				_exit(1);
			}
			if (!outc)
				sched_yield();	/* ranks outnumber the vCPUs */
		}
		if (me_dies)
			die(it, "after its requests completed");
	}
	if (mine >= 0) {
		printf("faults: victim rank %d did not die\n", rank);
		fflush(stdout);
		_exit(1);
	}
	/*
	 * A victim that died after its last messages to this rank: a receive
	 * naming it must now fail instead of waiting forever.
	 */
	for (int v = 0; v < size; v++) {
		MPI_Request r;
		MPI_Status st;
		int flag = 0, rc;

		if (!is_victim[v] || dead[v])
			continue;
		rc = MPI_Irecv(rbuf, 1, MPI_BYTE, v, TAG_NEVER, MPI_COMM_WORLD, &r);
		while (rc == MPI_SUCCESS && !flag && now() - t0 < tmo) {
			rc = MPI_Test(&r, &flag, &st);
			if (rc == MPI_SUCCESS && !flag)
				sched_yield();
		}
		if (rc != MPI_SUCCESS) {
			peer_failed(v, rc, iters);
			continue;
		}
		printf("faults: survivor rank %d: no error from rank %d in %d iterations although it died\n",
		       rank, v, iters);
		fflush(stdout);
		_exit(1);
	}
	printf("faults: survivor rank %d: done, %d victims, %d wildcard receives cancelled, %d failed, %d deaths found by a probe\n",
	       rank, nvict, cancelled, nwerr, nprobed);
	fflush(stdout);
	_exit(0);
}
