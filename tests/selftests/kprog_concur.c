// SPDX-License-Identifier: GPL-2.0
/*
 * One /dev/kprog fd used by many threads or by a parent and its forked
 * child at once (MPI_THREAD_MULTIPLE shares one fd between threads).
 *
 * join_race: two threads JOIN one fresh fd at the same moment, then the
 * fd is closed, many times (KP_CONCUR_ROUNDS, default 2000). Exactly one
 * JOIN may win (the other: EISCONN), and once every fd is closed no grant
 * table or ring of the module may remain: the module's vmalloc areas (its
 * rings, grant tables and channels: /proc/vmallocinfo lines whose caller
 * is in [kprog]) are counted before and after. Before JOIN was serialised per
 * endpoint both threads passed the "not joined yet" check and the loser's
 * error path freed the winner's grant table, leaving its own for good.
 *
 * fork_join_race: the same between a parent and its forked child sharing
 * the fd.
 */
#include "kprog_test.h"

static int rounds(void)
{
	const char *s = getenv("KP_CONCUR_ROUNDS");

	return s ? atoi(s) : 2000;
}

struct racer {
	pthread_barrier_t *start, *done;
	int *fd;
	__u64 *key;
	int *stop;
	int err;
	int wins, eisconn, other;
};

static void *race_fn(void *arg)
{
	struct racer *r = arg;
	int err;

	for (;;) {
		pthread_barrier_wait(r->start);
		if (__atomic_load_n(r->stop, __ATOMIC_ACQUIRE))
			return NULL;
		err = kp_join_fd(*r->fd, *r->key, 0, 1, 0, 0, NULL);
		if (!err)
			r->wins++;
		else if (err == -EISCONN)
			r->eisconn++;
		else
			r->other = err;
		pthread_barrier_wait(r->done);
	}
}

TEST(join_race)
{
	pthread_barrier_t start, done;
	long g0, g1;
	struct racer rc[2];
	pthread_t th[2];
	int fd = -1, stop = 0, n = rounds(), i, bad = 0;
	__u64 key = 0;

	g0 = kp_vmalloc_areas();
	if (g0 < 0)
		SKIP(return, "no /proc/vmallocinfo");
	pthread_barrier_init(&start, NULL, 3);
	pthread_barrier_init(&done, NULL, 3);
	for (i = 0; i < 2; i++) {
		rc[i] = (struct racer){ &start, &done, &fd, &key, &stop };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_fn, &rc[i]));
	}
	for (i = 0; i < n; i++) {
		fd = kp_open();
		ASSERT_LE(0, fd);
		key = kp_key();
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
		/* exactly one winner per fresh fd */
		if (rc[0].wins + rc[1].wins != i + 1)
			bad++;
		close(fd);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&start);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	g1 = kp_vmalloc_areas();
	TH_LOG("%d rounds: wins %d+%d, EISCONN %d+%d, kprog vmalloc areas %ld -> %ld",
	       n, rc[0].wins, rc[1].wins, rc[0].eisconn, rc[1].eisconn, g0, g1);
	EXPECT_EQ(0, rc[0].other);
	EXPECT_EQ(0, rc[1].other);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(n, rc[0].wins + rc[1].wins);
	EXPECT_EQ(g0, g1);
}

TEST(fork_join_race)
{
	int n = rounds() / 4, i, wins = 0, status;
	long g0, g1;

	g0 = kp_vmalloc_areas();
	if (g0 < 0)
		SKIP(return, "no /proc/vmallocinfo");
	for (i = 0; i < n; i++) {
		int fd = kp_open(), go[2], err;
		__u64 key = kp_key();
		pid_t pid;

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			char c;

			close(go[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(3);
			err = kp_join_fd(fd, key, 0, 1, 0, 0, NULL);
			_exit(!err ? 0 : err == -EISCONN ? 1 : 2);
		}
		close(go[0]);
		/* both start from the byte: the child wakes as we JOIN */
		ASSERT_EQ(1, write(go[1], "g", 1));
		err = kp_join_fd(fd, key, 0, 1, 0, 0, NULL);
		close(go[1]);
		kp_child_status(pid, &status);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_GE(1, WEXITSTATUS(status));
		ASSERT_TRUE(!err || err == -EISCONN);
		/* exactly one of the two joined */
		EXPECT_EQ(1, !err + !WEXITSTATUS(status));
		wins += !err;
		close(fd);
	}
	g1 = kp_vmalloc_areas();
	TH_LOG("%d rounds: parent won %d, kprog vmalloc areas %ld -> %ld",
	       n, wins, g0, g1);
	EXPECT_EQ(g0, g1);
}

TEST_HARNESS_MAIN
