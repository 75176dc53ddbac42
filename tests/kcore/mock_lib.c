// SPDX-License-Identifier: GPL-2.0
/*
 * tests/kcore/mock_lib.c: kernel library functions kprog_ib.ko calls
 * that are not verbs (mock_ib.c has those): scatter lists, IPv4 parsing,
 * random numbers, short sleeps, dynamic debug, completions, the DMA API
 * of devices that are not virtual (never reached: the fake RDMA device
 * uses virtual DMA, so every such call fails the test).
 */
#include <linux/scatterlist.h>
#include <linux/inet.h>
#include <linux/random.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/completion.h>
#include <linux/dma-mapping.h>
#include <linux/dynamic_debug.h>
#include <linux/refcount.h>
#include <linux/mm.h>
#include <net/net_namespace.h>
#include "mock.h"
#include "mock_int.h"
#include "runner.h"

unsigned long phys_base;
struct net init_net;

/* ---------------------------------------------------------------------
 * Scatter lists: one kmalloc()ed array, never chained.
 */
void sg_init_table(struct scatterlist *sgl, unsigned int nents)
{
	memset(sgl, 0, sizeof(*sgl) * nents);
	sg_mark_end(&sgl[nents - 1]);
}

int sg_alloc_table(struct sg_table *table, unsigned int nents, gfp_t gfp)
{
	memset(table, 0, sizeof(*table));
	if (!nents)
		return -EINVAL;
	table->sgl = mock_alloc(nents * sizeof(struct scatterlist), gfp,
				MOCK_KMALLOC, CALLER);
	if (!table->sgl)
		return -ENOMEM;
	sg_init_table(table->sgl, nents);
	table->nents = table->orig_nents = nents;
	return 0;
}

void sg_free_table(struct sg_table *table)
{
	mock_free(table->sgl, KFREE_KINDS, "sg_free_table", CALLER);
	table->sgl = NULL;
}

struct scatterlist *sg_next(struct scatterlist *sg)
{
	if (sg_is_last(sg))
		return NULL;
	return sg + 1;
}

/* ---------------------------------------------------------------------
 * Small helpers
 */
int in4_pton(const char *src, int srclen, u8 *dst, int delim,
	     const char **end)
{
	unsigned int v[4], i, n = 0;
	const char *p = src;

	if (srclen >= 0)
		mock_fatal_at(CALLER, "in4_pton(): only NUL-terminated strings are mocked");
	for (i = 0; i < 4; i++) {
		v[i] = 0;
		n = 0;
		while (*p >= '0' && *p <= '9' && n < 4) {
			v[i] = v[i] * 10 + *p++ - '0';
			n++;
		}
		if (!n || n > 3 || v[i] > 255)
			return 0;
		if (i < 3 && *p++ != '.')
			return 0;
	}
	if (*p != (char)delim)
		return 0;
	for (i = 0; i < 4; i++)
		dst[i] = v[i];
	if (end)
		*end = p;
	return 1;
}

void *memchr_inv(const void *start, int c, size_t bytes)
{
	const u8 *p = start;
	size_t i;

	for (i = 0; i < bytes; i++)
		if (p[i] != (u8)c)
			return (void *)&p[i];
	return NULL;
}

/* Deterministic: a test that fails reproduces. Reset before each test. */
static u64 mock_random_state;

void mock_lib_reset(void)
{
	mock_random_state = 0x9e3779b97f4a7c15ULL;
}

u32 get_random_u32(void)
{
	mock_random_state = mock_random_state * 6364136223846793005ULL +
			    1442695040888963407ULL;
	return mock_random_state >> 32;
}

unsigned long __msecs_to_jiffies(const unsigned int m)
{
	return DIV_ROUND_UP((unsigned long)m * HZ, 1000);
}

/* Time moves on (work that became due is queued), nothing else runs. */
void msleep(unsigned int msecs)
{
	mock_might_sleep(CALLER, "msleep()");
	mock_time_advance((u64)msecs * NSEC_PER_MSEC);
}

bool is_vmalloc_addr(const void *x)
{
	return false;
}

bool refcount_dec_not_one(refcount_t *r)
{
	if (refcount_read(r) == 1)
		return false;
	refcount_dec(r);
	return true;
}

/* pr_debug(): printed at KERN_DEBUG when the test runs with -v. */
void __dynamic_pr_debug(struct _ddebug *descriptor, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	_printk(KERN_DEBUG "%s", line);
}

void __warn_printk(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	_printk(KERN_WARNING "%s", line);
}

const char *dev_driver_string(const struct device *dev)
{
	return "mock";
}

/* ---------------------------------------------------------------------
 * Completions: the test's thread is the only one, so a wait that is not
 * already completed can only end through mock_schedule_hook or work the
 * waiter runs itself; otherwise the test fails instead of hanging.
 */
void __init_swait_queue_head(struct swait_queue_head *q, const char *name,
			     struct lock_class_key *key)
{
	INIT_LIST_HEAD(&q->task_list);
}

void complete(struct completion *x)
{
	if (x->done != UINT_MAX)
		x->done++;
}

void wait_for_completion(struct completion *x)
{
	mock_might_sleep(CALLER, "wait_for_completion()");
	if (!x->done && mock_schedule_hook)
		mock_schedule_hook(mock_schedule_hook_arg);
	while (!x->done && mock_run_work_one())
		;
	if (!x->done)
		mock_fatal_at(CALLER, "wait_for_completion() that nothing completes");
	if (x->done != UINT_MAX)
		x->done--;
}

/* ---------------------------------------------------------------------
 * The DMA API of a real device: the fake RDMA device maps virtually
 * (ib_uses_virt_dma()), so these are never called.
 */
#define MOCK_NO_DMA() mock_fatal_at(CALLER, "DMA API called for a virtual-DMA RDMA device")

dma_addr_t dma_map_page_attrs(struct device *dev, struct page *page,
			      size_t offset, size_t size,
			      enum dma_data_direction dir, unsigned long attrs)
{
	MOCK_NO_DMA();
}

void dma_unmap_page_attrs(struct device *dev, dma_addr_t addr, size_t size,
			  enum dma_data_direction dir, unsigned long attrs)
{
	MOCK_NO_DMA();
}

unsigned int dma_map_sg_attrs(struct device *dev, struct scatterlist *sg,
			      int nents, enum dma_data_direction dir,
			      unsigned long attrs)
{
	MOCK_NO_DMA();
}

void dma_unmap_sg_attrs(struct device *dev, struct scatterlist *sg,
			int nents, enum dma_data_direction dir,
			unsigned long attrs)
{
	MOCK_NO_DMA();
}

void dma_sync_single_for_cpu(struct device *dev, dma_addr_t addr,
			     size_t size, enum dma_data_direction dir)
{
	MOCK_NO_DMA();
}

void dma_sync_single_for_device(struct device *dev, dma_addr_t addr,
				size_t size, enum dma_data_direction dir)
{
	MOCK_NO_DMA();
}
