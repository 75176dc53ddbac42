// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/umem.c: iovec import, copies into and out of the current process,
 * and the chunked copy into (or between) other processes' pages, with
 * lengths and cursors of messages above 4 GiB. The huge buffers are
 * mappings that take memory only where written (mock_huge_map()); their
 * copies are stopped after a chunk or two, what is checked is where.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include "kprog.h"
#include "umem.h"
#include "ktest.h"

#define GiB	(1ULL << 30)
#define CHUNK	(64 * PAGE_SIZE)	/* KPROG_UMEM_CHUNK pages */

static struct kprog_post plain(const void *buf, u64 len)
{
	return (struct kprog_post){ .addr = (uintptr_t)buf, .len = len };
}

static struct kprog_post iovs(const struct kprog_iov *iov, u64 n)
{
	return (struct kprog_post){ .addr = (uintptr_t)iov, .len = n,
				    .flags = KPROG_POST_IOV };
}

TEST(umem__plain_buffer_imports_as_one_inline_segment_up_to_the_largest_message)
{
	struct kprog_iov_import im;
	struct kprog_post p = plain((void *)0x100000, 5 * GiB);

	ASSERT_OK(kprog_iov_import(&im, &p));
	EXPECT(im.iov == &im.inline_iov);
	EXPECT_EQ(im.nr_iov, 1);
	EXPECT_EQ(im.len, 5 * GiB);
	EXPECT_EQ(im.iov[0].len, 5 * GiB);
	EXPECT_EQ(im.charge, 0);
	kprog_iov_release(&im);
	p.len = KPROG_MAX_MSG;
	EXPECT_OK(kprog_iov_import(&im, &p));
	p.len = KPROG_MAX_MSG + 1;
	EXPECT_ERR(kprog_iov_import(&im, &p), -EINVAL);
	p = plain((void *)(U64_MAX - 4095), 4096);
	EXPECT_ERR(kprog_iov_import(&im, &p), -EINVAL);
	p = plain(NULL, 0);
	EXPECT_OK(kprog_iov_import(&im, &p));
	EXPECT_EQ(im.nr_iov, 0);
	EXPECT_EQ(im.len, 0);
}

TEST(umem__iovec_segments_above_4_gib_add_up_in_64_bits)
{
	struct kprog_iov iov[4] = {
		{ 0x100000, 3 * GiB },
		{ 0x200000, 0 },		/* dropped */
		{ 0x300000, (1ULL << 32) + 7 },	/* not 7 */
		{ 0x400000, 1 },
	};
	struct kprog_post p = iovs(iov, 4);
	struct kprog_iov_import im;

	ASSERT_OK(kprog_iov_import(&im, &p));
	EXPECT_EQ(im.nr_iov, 3);
	EXPECT_EQ(im.charge, 4);
	EXPECT_EQ(im.len, 3 * GiB + (1ULL << 32) + 8);
	EXPECT_EQ(im.iov[1].len, (1ULL << 32) + 7);
	EXPECT_EQ(im.iov[2].base, 0x400000);
	kprog_iov_release(&im);
	EXPECT(im.iov == &im.inline_iov);
	kprog_iov_release(&im);			/* twice: harmless */
}

TEST(umem__iovec_total_just_above_the_largest_message_is_einval)
{
	struct kprog_iov iov[3] = {
		{ 0x100000, KPROG_MAX_MSG - 1 },
		{ 0x100000, 1 },
		{ 0x100000, 1 },
	};
	struct kprog_post p = iovs(iov, 2);
	struct kprog_iov_import im;
	long live = mock_live_allocs;

	ASSERT_OK(kprog_iov_import(&im, &p));
	EXPECT_EQ(im.len, KPROG_MAX_MSG);
	kprog_iov_release(&im);
	p.len = 3;
	EXPECT_ERR(kprog_iov_import(&im, &p), -EINVAL);
	/* a segment whose end wraps around */
	iov[0].base = U64_MAX - 10;
	iov[0].len = 100;
	p.len = 1;
	EXPECT_ERR(kprog_iov_import(&im, &p), -EINVAL);
	EXPECT_EQ(mock_live_allocs, live);
}

TEST(umem__iovec_import_errors)
{
	struct kprog_iov iov[2] = { { 0x100000, 1 } };
	struct kprog_post p = iovs(iov, kprog_max_iov + 1);
	struct kprog_iov_import im;
	long live = mock_live_allocs;

	EXPECT_ERR(kprog_iov_import(&im, &p), -EINVAL);
	p = iovs((void *)MOCK_BAD_UADDR, 2);
	EXPECT_ERR(kprog_iov_import(&im, &p), -EFAULT);
	p = iovs(iov, 2);
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kprog_iov_import(&im, &p), -ENOMEM);
	p = iovs((void *)MOCK_BAD_UADDR, 0);	/* empty: nothing read */
	EXPECT_OK(kprog_iov_import(&im, &p));
	EXPECT_EQ(im.len, 0);
	EXPECT_EQ(im.charge, 0);
	EXPECT_EQ(mock_live_allocs, live);
}

TEST(umem__copy_in_gathers_segments_and_stops_at_len)
{
	char a[100], b[3000], k[3100];
	struct kprog_iov iov[2] = { { (uintptr_t)a, 100 }, { (uintptr_t)b, 3000 } };

	kt_fill(a, 100, 1);
	kt_fill(b, 3000, 2);
	EXPECT_OK(kprog_umem_copy_in(k, iov, 2, 3100));
	EXPECT(kt_check(k, 100, 1));
	EXPECT(kt_check(k + 100, 3000, 2));
	memset(k, 0, sizeof(k));
	EXPECT_OK(kprog_umem_copy_in(k, iov, 2, 50));
	EXPECT(kt_check(k, 50, 1));
	EXPECT_EQ(k[50], 0);
	iov[1].base = MOCK_BAD_UADDR;
	EXPECT_ERR(kprog_umem_copy_in(k, iov, 2, 3100), -EFAULT);
}

TEST(umem__copy_out_scatters_and_reports_what_got_through)
{
	char k[200], a[50], b[200];
	struct kprog_iov iov[3] = {
		{ (uintptr_t)a, 50 }, { (uintptr_t)b, 200 }, { MOCK_BAD_UADDR, 8 },
	};
	int err;

	kt_fill(k, 200, 3);
	EXPECT_EQ(kprog_umem_copy_out(iov, 2, k, 120, &err), 120);
	EXPECT_OK(err);
	EXPECT(!memcmp(a, k, 50) && !memcmp(b, k + 50, 70));
	iov[1] = iov[2];
	EXPECT_EQ(kprog_umem_copy_out(iov, 2, k, 58, &err), 50);
	EXPECT_ERR(err, -EFAULT);
}

/* A buffer of the process @e... : the test's memory. */
static struct kprog_ubuf ubuf(struct mm_struct *mm, const struct kprog_iov *iov,
			      u32 n, u64 len)
{
	return (struct kprog_ubuf){ .mm = mm, .iov = iov, .nr_iov = n,
				    .len = len };
}

static int abort_after;

static bool stop_after_n(void *arg)
{
	return abort_after-- <= 0;
}

TEST_NO_MODULE(umem__kernel_buffer_into_another_process_goes_in_chunks)
{
	static u8 dst[3 * CHUNK + PAGE_SIZE] __aligned(PAGE_SIZE);
	struct mock_proc *p = mock_proc_new(1000);
	u8 *k = kvmalloc(3 * CHUNK, GFP_KERNEL);
	struct kprog_iov iov = { (uintptr_t)dst + 10, 3 * CHUNK };
	struct kprog_ubuf d = ubuf(p->mm, &iov, 1, iov.len);
	long rescheds = mock_cond_rescheds;
	int err;

	kt_fill(k, 3 * CHUNK, 4);
	EXPECT_EQ(kprog_umem_copy(&d, NULL, k, 3 * CHUNK, NULL, NULL, &err),
		  3 * CHUNK);
	EXPECT_OK(err);
	EXPECT(kt_check(dst + 10, 3 * CHUNK, 4));
	/* the first step ends at a chunk boundary of the destination */
	EXPECT_EQ(mock_cond_rescheds - rescheds, 4);
	EXPECT_EQ(mock_dirtied_pages, 3 * 64 + 1);
	EXPECT_EQ(mock_pinned_pages, 0);
	/* nothing to copy: no page array either */
	EXPECT_EQ(kprog_umem_copy(&d, NULL, k, 0, NULL, NULL, &err), 0);
	mock_kmalloc_errors = 1;
	EXPECT_EQ(kprog_umem_copy(&d, NULL, k, 10, NULL, NULL, &err), 0);
	EXPECT_ERR(err, -ENOMEM);
	kvfree(k);
}

TEST_NO_MODULE(umem__abort_exited_process_and_pin_failure_end_the_copy)
{
	static u8 src[2 * CHUNK] __aligned(PAGE_SIZE);
	static u8 dst[2 * CHUNK] __aligned(PAGE_SIZE);
	struct mock_proc *p = mock_proc_new(1000), *q = mock_proc_new(1000);
	struct kprog_iov si = { (uintptr_t)src, sizeof(src) };
	struct kprog_iov di = { (uintptr_t)dst, sizeof(dst) };
	struct kprog_ubuf s = ubuf(p->mm, &si, 1, si.len);
	struct kprog_ubuf d = ubuf(q->mm, &di, 1, di.len);
	int err;

	abort_after = 1;
	EXPECT_EQ(kprog_umem_copy(&d, &s, NULL, sizeof(src), stop_after_n,
				  NULL, &err), CHUNK);
	EXPECT_ERR(err, -ECONNRESET);
	mock_gup_errors = 0x2;		/* the destination of the first step */
	EXPECT_EQ(kprog_umem_copy(&d, &s, NULL, sizeof(src), NULL, NULL, &err),
		  0);
	EXPECT_ERR(err, -EFAULT);
	mock_gup_errors = 0x1;		/* its source */
	EXPECT_EQ(kprog_umem_copy(&d, &s, NULL, sizeof(src), NULL, NULL, &err),
		  0);
	EXPECT_ERR(err, -EFAULT);
	EXPECT_EQ(mock_pinned_pages, 0);
	mock_proc_exit_mm(q);
	EXPECT_EQ(kprog_umem_copy(&d, &s, NULL, 10, NULL, NULL, &err), 0);
	EXPECT_ERR(err, -ECONNRESET);
	mock_proc_exit_mm(p);
	EXPECT_EQ(kprog_umem_copy(&d, &s, NULL, 10, NULL, NULL, &err), 0);
	EXPECT_ERR(err, -ECONNRESET);
}

TEST_NO_MODULE(umem__copy_of_4_gib_plus_100_bytes_steps_a_whole_chunk_first)
{
	const u64 len = (1ULL << 32) + 100;
	struct mock_proc *p = mock_proc_new(1000), *q = mock_proc_new(1000);
	u8 *src = mock_huge_map(len), *dst = mock_huge_map(len + PAGE_SIZE);
	struct kprog_iov si = { (uintptr_t)src, len };
	struct kprog_iov di[2] = {
		{ (uintptr_t)dst, CHUNK / 2 },		/* segment change */
		{ (uintptr_t)dst + PAGE_SIZE + CHUNK / 2, len - CHUNK / 2 },
	};
	struct kprog_ubuf s = ubuf(p->mm, &si, 1, len);
	struct kprog_ubuf d = ubuf(q->mm, di, 2, len);
	int err;

	ASSERT(src && dst);
	kt_fill(src, 2 * CHUNK, 5);
	/*
	 * Half a chunk to the end of the first destination segment, then
	 * a whole chunk; a length cut to 32 bits would copy 100 bytes.
	 */
	abort_after = 2;
	EXPECT_EQ(kprog_umem_copy(&d, &s, NULL, len, stop_after_n, NULL, &err),
		  CHUNK / 2 + CHUNK);
	EXPECT_ERR(err, -ECONNRESET);
	EXPECT(kt_check(dst, CHUNK / 2, 5));
	EXPECT(!memcmp(dst + PAGE_SIZE + CHUNK / 2, src + CHUNK / 2, CHUNK));
	EXPECT_EQ(mock_pinned_pages, 0);
	mock_huge_unmap(src, len);
	mock_huge_unmap(dst, len + PAGE_SIZE);
}

/*
 * kprog_copy() (the vector loop of vcopy.c in an FPU section from 256
 * bytes, memcpy() below) against memcpy(), at every offset of both sides
 * within 16 bytes and at lengths around the loop's 64- and 16-byte steps
 * and a page; nothing outside the destination is written.
 */
TEST_NO_MODULE(umem__copy_matches_memcpy_at_every_alignment_and_length)
{
	static const size_t lens[] = { 0, 1, 15, 16, 17, 63, 64, 65, 255, 256,
				       257, 1000, 4095, 4096, 4097, 4200 };
	static u8 src[4200 + 16], dst[4200 + 48], ref[4200 + 48];
	size_t so, d, i, bad = 0;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (u8)(i * 7 + 3);
	for (so = 0; so < 16; so++)
		for (d = 0; d < 16; d++)
			for (i = 0; i < ARRAY_SIZE(lens); i++) {
				memset(dst, 0xa5, sizeof(dst));
				memset(ref, 0xa5, sizeof(ref));
				memcpy(ref + 16 + d, src + so, lens[i]);
				kprog_copy(dst + 16 + d, src + so, lens[i]);
				bad += !!memcmp(dst, ref, sizeof(dst));
			}
	EXPECT_EQ(bad, 0);
}
