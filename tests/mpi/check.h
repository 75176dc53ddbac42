/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared helpers for the kprog MPI tests: CHECK macros that print
 * file:line and the rank and then MPI_Abort, deterministic data patterns
 * and status checks. Every test is an ordinary MPI program that must pass
 * under plain Open MPI; it prints nothing on success and exits 0.
 */
#ifndef KPROG_TESTS_MPI_CHECK_H
#define KPROG_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *test_name = "?";

static void test_fail(const char *file, int line, const char *cond,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5), noreturn));

static void test_fail(const char *file, int line, const char *cond,
		      const char *fmt, ...)
{
	int rank = -1, init = 0, fin = 0;
	char msg[1024] = "";
	va_list ap;

	MPI_Initialized(&init);
	MPI_Finalized(&fin);
	init = init && !fin;	/* checks may follow MPI_Finalize */
	if (init)
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	fprintf(stderr, "FAIL %s: rank %d: %s:%d: %s%s%s\n", test_name, rank,
		file, line, cond, *msg ? ": " : "", msg);
	fflush(stderr);
	fflush(stdout);
	if (init)
		MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

/* CHECK(cond, "fmt", args...) */
#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
			test_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* MPI_CHECK(MPI_Xxx(...)): the call must return MPI_SUCCESS. */
#define MPI_CHECK(call) \
	do { \
		int mpi_check_rc_ = (call); \
		if (mpi_check_rc_ != MPI_SUCCESS) { \
			char mpi_check_s_[MPI_MAX_ERROR_STRING]; \
			int mpi_check_l_ = 0, mpi_check_c_ = -1; \
			MPI_Error_class(mpi_check_rc_, &mpi_check_c_); \
			MPI_Error_string(mpi_check_rc_, mpi_check_s_, \
					 &mpi_check_l_); \
			test_fail(__FILE__, __LINE__, #call, \
				  "returned %d (class %d: %s)", mpi_check_rc_, \
				  mpi_check_c_, mpi_check_s_); \
		} \
	} while (0)

static inline const char *test_errclass_str(int rc)
{
	static char s[MPI_MAX_ERROR_STRING];
	int len = 0;

	MPI_Error_string(rc, s, &len);
	return s;
}

/*
 * Data pattern: byte at offset @off of a message identified by @seed.
 * A cheap hash so that shifted, swapped or stale data is detected.
 */
static inline uint32_t pat_seed(int src, int dst, int tag, int iter)
{
	uint32_t s = (uint32_t)src * 0x01000193u ^ (uint32_t)dst * 0x9E3779B1u ^
		     (uint32_t)tag * 0x85EBCA6Bu ^ (uint32_t)iter * 0xC2B2AE35u;

	return s ^ (s >> 16);
}

static inline unsigned char pat_byte(uint32_t seed, size_t off)
{
	uint32_t x = (uint32_t)off * 0x9E3779B1u + seed;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (unsigned char)x;
}

static inline void pat_fill(void *buf, size_t len, uint32_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat_byte(seed, i);
}

/* First offset in [from, len) that is wrong, or -1 if all match. */
static inline long pat_find_bad_from(const void *buf, size_t from, size_t len,
				     uint32_t seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = from; i < len; i++)
		if (p[i] != pat_byte(seed, i))
			return (long)i;
	return -1;
}

static inline long pat_find_bad(const void *buf, size_t len, uint32_t seed)
{
	return pat_find_bad_from(buf, 0, len, seed);
}

/* CHECK_PAT_FROM(buf, from, len, seed, "what fmt", ...): bytes [from, len) */
#define CHECK_PAT_FROM(buf, from, len, seed, ...) \
	do { \
		long cp_bad_ = pat_find_bad_from((buf), (from), (len), (seed)); \
		if (cp_bad_ >= 0) { \
			char cp_what_[512]; \
			snprintf(cp_what_, sizeof(cp_what_), __VA_ARGS__); \
			test_fail(__FILE__, __LINE__, "data pattern", \
				  "%s: byte %ld of %zu is 0x%02x, expected 0x%02x", \
				  cp_what_, cp_bad_, (size_t)(len), \
				  ((const unsigned char *)(buf))[cp_bad_], \
				  pat_byte((seed), cp_bad_)); \
		} \
	} while (0)

#define CHECK_PAT(buf, len, seed, ...) \
	CHECK_PAT_FROM(buf, 0, len, seed, __VA_ARGS__)

/* Every byte of buf[0..len) must equal @c (e.g. untouched filler). */
#define CHECK_FILL(buf, len, c, ...) \
	do { \
		const unsigned char *cf_p_ = (const unsigned char *)(buf); \
		size_t cf_i_; \
		for (cf_i_ = 0; cf_i_ < (size_t)(len); cf_i_++) \
			if (cf_p_[cf_i_] != (unsigned char)(c)) { \
				char cf_what_[512]; \
				snprintf(cf_what_, sizeof(cf_what_), __VA_ARGS__); \
				test_fail(__FILE__, __LINE__, "filler intact", \
					  "%s: byte %zu is 0x%02x, expected 0x%02x", \
					  cf_what_, cf_i_, cf_p_[cf_i_], \
					  (unsigned char)(c)); \
			} \
	} while (0)

/* Status: source, tag and count (in units of @type) must match. */
#define CHECK_STATUS(st, src, tag, count, type) \
	do { \
		int cs_cnt_ = -12345; \
		MPI_CHECK(MPI_Get_count((st), (type), &cs_cnt_)); \
		CHECK((st)->MPI_SOURCE == (src) && (st)->MPI_TAG == (tag) && \
		      cs_cnt_ == (count), \
		      "status source %d tag %d count %d, expected %d %d %d", \
		      (st)->MPI_SOURCE, (st)->MPI_TAG, cs_cnt_, (int)(src), \
		      (int)(tag), (int)(count)); \
	} while (0)

/* The empty status: source MPI_ANY_SOURCE, tag MPI_ANY_TAG, count 0. */
#define CHECK_EMPTY_STATUS(st) \
	do { \
		int ce_cnt_ = -12345, ce_canc_ = -1; \
		MPI_CHECK(MPI_Get_count((st), MPI_BYTE, &ce_cnt_)); \
		MPI_CHECK(MPI_Test_cancelled((st), &ce_canc_)); \
		CHECK((st)->MPI_SOURCE == MPI_ANY_SOURCE && \
		      (st)->MPI_TAG == MPI_ANY_TAG && ce_cnt_ == 0 && \
		      !ce_canc_, \
		      "expected empty status, got source %d tag %d count %d " \
		      "cancelled %d", (st)->MPI_SOURCE, (st)->MPI_TAG, \
		      ce_cnt_, ce_canc_); \
	} while (0)

/* Fill a status with junk so that fields the call must set are checked. */
static inline void status_poison(MPI_Status *st)
{
	memset(st, 0xA5, sizeof(*st));
}

/*
 * Strict mode (KPROG_TEST_STRICT=1, set by ./run when the shim is active on
 * /dev/kprog): also check behaviour that MPI requires or the kprog design
 * promises but that plain Open MPI 4.1.4 does not deliver (documented at
 * each use). Plain Open MPI is the reference for everything else.
 */
static inline int test_strict(void)
{
	const char *s = getenv("KPROG_TEST_STRICT");

	return s && *s == '1';
}

static inline double now_sec(void)
{
	return MPI_Wtime();
}

static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static inline void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	CHECK(p, "malloc(%zu) failed", n);
	return p;
}

static inline void test_init(int *argc, char ***argv, const char *name,
			     int min_ranks, int *rank, int *size)
{
	test_name = name;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	CHECK(*size >= min_ranks, "needs at least %d ranks, got %d",
	      min_ranks, *size);
	setvbuf(stdout, NULL, _IONBF, 0);
}

static inline int test_finish(void)
{
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}

#endif
