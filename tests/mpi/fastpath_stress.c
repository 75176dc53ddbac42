// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reproducer of a hang in the shim's fast path (not in ./run's default
 * list: it needs minutes and a loaded machine). Rank 1 streams 64-byte
 * messages to rank 0 and makes every 16th an MPI_Ssend (through the
 * kernel, which first drains the channel and moves its cons); rank 0
 * posts each receive first (matched in user space) and polls it with
 * MPI_Test. Run with 2 ranks: fastpath_stress [seconds, default 120].
 *
 * It reproduced a hang, fixed since: libshim/core/fast.c poll_peer() read the
 * channel's prod, then cons, and walked records "for (pos = cons; pos !=
 * prod; ...)"; when the sender published more records and its kernel send
 * drained them between the two loads, cons was already past the prod it
 * read and the walk cycled over stale ring contents forever. It now reads
 * cons first and checks the distance. tests/selftests/kprog_chan
 * (cons_passes_a_stale_prod) shows the interleaving deterministically.
 *
 * In the VM, with two CPU hogs to preempt rank 0 between the two loads,
 * it hung twice in two runs before the fix, after 58000 and 89000 messages
 * (40-50 s); after it, 237729 messages in 150 s:
 *   scripts/vm-run -- sh -c 'for i in 1 2; do (while :; do :; done) & done;
 *     mpirun --oversubscribe --mca btl self,vader
 *       -x LD_PRELOAD=$PWD/libshim/libkprog.so -np 2 tests/mpi/fastpath_stress 300'
 * A watchdog thread on rank 0 reports a stall (no message for 30 s) with
 * the main thread's backtrace (gdb, if installed) and exits with 3.
 * Without the shim (plain Open MPI) it must always pass.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "check.h"

static volatile int progress = -1;
static pid_t main_tid;

static void *watchdog(void *arg)
{
	int last = -2, still = 0;
	char cmd[256];

	(void)arg;
	for (;;) {
		sleep(1);
		if (progress != last) {
			last = progress;
			still = 0;
			continue;
		}
		if (++still < 30)
			continue;
		fprintf(stderr, "FAIL fastpath_stress: rank 0: STALL: no message for 30 s after "
			"message %d; its main thread:\n", last);
		snprintf(cmd, sizeof(cmd),
			 "cat /proc/%d/task/%d/stat >&2; command -v gdb >/dev/null && "
			 "gdb -q -batch -p %d -ex 'thread apply all bt' >&2 2>&1",
			 (int)getpid(), (int)main_tid, (int)getpid());
		still = system(cmd);
		_exit(3);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int rank, size, i, flag, seq, stop = 0;
	double secs, t0;
	unsigned char b[64];
	MPI_Request rq;
	pthread_t th;

	test_init(&argc, &argv, "fastpath_stress", 2, &rank, &size);
	secs = argc > 1 ? atof(argv[1]) : 120;
	t0 = now_sec();
	if (rank == 0) {
		main_tid = (pid_t)syscall(SYS_gettid);
		CHECK(!pthread_create(&th, NULL, watchdog, NULL), "pthread_create");
	}
	for (i = 0; !stop; i++) {
		if (rank == 1) {
			memcpy(b, &i, sizeof(i));
			/* the last message says stop */
			b[4] = now_sec() - t0 > secs;
			stop = b[4];
			if (i % 16 == 15)
				MPI_CHECK(MPI_Ssend(b, 64, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
			else
				MPI_CHECK(MPI_Send(b, 64, MPI_BYTE, 0, 1, MPI_COMM_WORLD));
		} else if (rank == 0) {
			MPI_CHECK(MPI_Irecv(b, 64, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq));
			flag = 0;
			while (!flag)
				MPI_CHECK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
			progress = i;
			memcpy(&seq, b, sizeof(seq));
			CHECK(seq == i, "message %d arrived as number %d", seq, i);
			stop = b[4];
		} else {
			stop = 1;
		}
	}
	if (rank == 0)
		printf("fastpath_stress: %d messages in %.1f s\n", i, now_sec() - t0);
	return test_finish();
}
