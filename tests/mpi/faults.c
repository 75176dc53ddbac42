// SPDX-License-Identifier: GPL-2.0
/*
 * faults: one round of the fault campaign (tests/mpi/run-faults). All ranks
 * exchange traffic in iterations: eager and rendezvous messages with named
 * sources, wildcard receives (MPI_ANY_SOURCE, MPI_ANY_TAG) fed by every
 * peer, and a receive that nobody matches, cancelled. One rank, the victim,
 * kills itself (SIGKILL) at a random moment; the survivors must get an error
 * completion (MPI_ERRORS_RETURN on MPI_COMM_WORLD) instead of hanging.
 *
 *   mpirun --enable-recovery -np N faults -s SEED [-i ITERS] [-t SECONDS]
 *     -s  the round's seed: the victim rank, its iteration and its moment
 *     -i  iterations (default 20); the victim dies in one of them
 *     -t  a survivor that has no error after this long fails (default 60)
 *
 * The survivors' wildcard receives cannot fail when one possible sender
 * dies (MPI semantics: another rank could still match them); a survivor
 * that saw an error cancels them, which must then complete (cancelled).
 * A survivor that finished every iteration (the victim died after its last
 * messages) then receives from the victim by name: that must fail.
 * Each rank prints one line:
 *   faults: victim rank V dies in iteration I (after U us)
 *   faults: survivor rank R: error MPI_ERR_... in iteration I after S s; K wildcard receives cancelled
 * and leaves with _exit() (MPI_Finalize would wait for the dead rank):
 * 0 for a survivor that got its error and could cancel, 1 otherwise.
 */
#define _GNU_SOURCE
#include <mpi.h>
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

/* Post one request; a post that fails is the error completion too. */
#define POST(wild, call) do {						\
		int rc_ = (call);					\
		if (rc_ != MPI_SUCCESS) {				\
			err = rc_;					\
			err_iter = it;					\
			break;						\
		}							\
		is_wild[nreq++] = (wild);				\
	} while (0)

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

int main(int argc, char **argv)
{
	unsigned long long seed = 1;
	int iters = 20, tmo = 60, opt, rank, size, victim, die_iter, die_step;
	int nreq, nwild, err = MPI_SUCCESS, err_iter = -1, cancelled = 0;
	MPI_Request req[8 * MAX_RANKS];
	int is_wild[8 * MAX_RANKS];
	char *sbuf, *rbuf;
	MPI_Comm wcomm;
	double t0;

	while ((opt = getopt(argc, argv, "s:i:t:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'i': iters = atoi(optarg); break;
		case 't': tmo = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: faults -s SEED [-i ITERS] [-t SECONDS]\n");
			return 2;
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || size > MAX_RANKS || iters < 1) {
		if (!rank)
			fprintf(stderr, "faults: 2..%d ranks, -i >= 1\n", MAX_RANKS);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_dup(MPI_COMM_WORLD, &wcomm);	/* inherits MPI_ERRORS_RETURN */
	/* the same draws on every rank: all know the victim, only it uses them */
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	victim = rnd() % size;
	die_iter = rnd() % iters;
	die_step = rnd() % 4;	/* before posting, after posting, while testing, mid-rendezvous */
	rng ^= (unsigned long long)(rank + 1) << 32;	/* sizes and waits differ per rank */
	sbuf = malloc((size_t)RNDV_MAX * size);
	rbuf = malloc((size_t)RNDV_MAX * 2 * size);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	memset(sbuf, rank + 1, (size_t)RNDV_MAX * size);
	memset(rbuf, 0, (size_t)RNDV_MAX * 2 * size);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now();
	for (int it = 0; it < iters && err == MPI_SUCCESS; it++) {
		int me_dies = rank == victim && it == die_iter;
		unsigned int us = rnd() % 20000;
		MPI_Request never;
		MPI_Status st;
		int done = 0, flag;

		if (me_dies && die_step == 0) {
			printf("faults: victim rank %d dies in iteration %d (before posting)\n", rank, it);
			fflush(stdout);
			raise(SIGKILL);
		}
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
		nreq = nwild = 0;
		for (int p = 0; p < size && err == MPI_SUCCESS; p++) {
			size_t e = 1 + rnd() % EAGER_MAX;
			size_t r = RNDV_MIN + rnd() % (RNDV_MAX - RNDV_MIN);
			char *rb = rbuf + (size_t)2 * RNDV_MAX * p;

			if (p == rank)
				continue;
			/* the peer draws its own sizes: receive up to the maximum */
			POST(0, MPI_Irecv(rb, EAGER_MAX, MPI_BYTE, p, TAG_EAGER, MPI_COMM_WORLD, &req[nreq]));
			POST(0, MPI_Irecv(rb + EAGER_MAX, RNDV_MAX, MPI_BYTE, p, TAG_RNDV, MPI_COMM_WORLD, &req[nreq]));
			/* wildcards on their own communicator, where every message fits */
			POST(1, MPI_Irecv(rb + RNDV_MAX + EAGER_MAX, 64, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
					  wcomm, &req[nreq]));
			POST(0, MPI_Isend(sbuf, (int)e, MPI_BYTE, p, TAG_EAGER, MPI_COMM_WORLD, &req[nreq]));
			POST(0, MPI_Isend(sbuf + EAGER_MAX, (int)r, MPI_BYTE, p, TAG_RNDV, MPI_COMM_WORLD, &req[nreq]));
			POST(0, MPI_Isend(sbuf, (int)(rnd() % 64), MPI_BYTE, p, (int)(rnd() % 8), wcomm, &req[nreq]));
		}
		if (me_dies && die_step == 1) {
			printf("faults: victim rank %d dies in iteration %d (after posting)\n", rank, it);
			fflush(stdout);
			raise(SIGKILL);
		}
		if (me_dies && err == MPI_SUCCESS) {
			printf("faults: victim rank %d dies in iteration %d (after %u us of traffic)\n", rank, it, us);
			fflush(stdout);
			if (die_step == 3)
				us /= 10;
		}
		{
			double tstart = now();

			while (err == MPI_SUCCESS && done < nreq) {
				int idx[8 * MAX_RANKS], outc = 0;
				MPI_Status sts[8 * MAX_RANKS];
				int rc = MPI_Testsome(nreq, req, &outc, idx, sts);

				if (me_dies && now() - tstart >= us * 1e-6)
					raise(SIGKILL);
				if (rc == MPI_ERR_IN_STATUS) {
					for (int k = 0; k < outc; k++)
						if (sts[k].MPI_ERROR != MPI_SUCCESS && err == MPI_SUCCESS)
							err = sts[k].MPI_ERROR;
				} else if (rc != MPI_SUCCESS) {
					err = rc;
				}
				if (err != MPI_SUCCESS) {
					err_iter = it;
					break;
				}
				if (outc == MPI_UNDEFINED)
					break;
				done += outc;
				if (now() - t0 > tmo)
					break;
			}
		}
		if (me_dies)
			raise(SIGKILL);	/* its requests completed before its moment came */
		if (err == MPI_SUCCESS && done < nreq) {
			printf("faults: rank %d: no error and %d of %d requests still pending after %d s in iteration %d (hang)\n",
			       rank, nreq - done, nreq, tmo, it);
			fflush(stdout);
			_exit(1);
		}
	}
	if (rank == victim) {
		printf("faults: victim rank %d did not die\n", rank);
		fflush(stdout);
		_exit(1);
	}
	if (err == MPI_SUCCESS) {
		/*
		 * The victim died after its last messages to this rank: a
		 * receive naming it must now fail instead of waiting forever.
		 */
		MPI_Request r;
		MPI_Status st;
		int flag = 0, rc = MPI_Irecv(rbuf, 1, MPI_BYTE, victim, TAG_NEVER, MPI_COMM_WORLD, &r);

		while (rc == MPI_SUCCESS && !flag && now() - t0 < tmo)
			rc = MPI_Test(&r, &flag, &st);
		if (rc != MPI_SUCCESS) {
			err = rc;
			err_iter = iters;
		}
	}
	if (err == MPI_SUCCESS) {
		printf("faults: survivor rank %d: no error in %d iterations although rank %d died\n",
		       rank, iters, victim);
		fflush(stdout);
		_exit(1);
	}
	/*
	 * The wildcard receives still pending: cancel them, they must complete
	 * (cancelled or, if a live peer's message matched first, received).
	 */
	for (int k = 0; k < nreq; k++) {
		MPI_Status st;
		int flag = 0;
		double tc = now();

		if (req[k] == MPI_REQUEST_NULL || !is_wild[k])
			continue;
		MPI_Cancel(&req[k]);
		while (!flag && now() - tc < 10)
			if (MPI_Test(&req[k], &flag, &st) != MPI_SUCCESS)
				flag = 1;
		if (!flag) {
			printf("faults: survivor rank %d: a cancelled wildcard receive did not complete within 10 s\n", rank);
			fflush(stdout);
			_exit(1);
		}
		cancelled++;
	}
	printf("faults: survivor rank %d: error %s in iteration %d after %.2f s; %d wildcard receives cancelled\n",
	       rank, errname(err), err_iter, now() - t0, cancelled);
	fflush(stdout);
	_exit(0);
}
