// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The queue of receives posted in batches (rbatch.h). Order is the whole
 * point: entries leave the queue only all at once, to the kernel in array
 * order, and the kernel stops at the first one it refuses, so what is not
 * posted is always a tail, handed back oldest first.
 */
#include <errno.h>
#include <string.h>
#include "rbatch.h"

uint32_t kp_rb_n;
void (*kp_rb_flusher)(void);
static uint32_t queue[KP_RB_MAX];

bool kp_rb_add(uint32_t slot)
{
	queue[kp_rb_n++] = slot;
	return kp_rb_n == KP_RB_MAX;
}

int kp_rb_flush(int fd, const struct kp_rb_ops *ops)
{
	struct kprog_post posts[KP_RB_MAX];
	uint32_t slots[KP_RB_MAX], n = kp_rb_n, done = 0, i;
	struct kprog_recv_batch b;
	int err = 0;

	if (!n)
		return 0;
	memcpy(slots, queue, n * sizeof(*slots));
	kp_rb_n = 0;
	for (i = 0; i < n; i++)
		posts[i] = *ops->post(slots[i]);
	while (done < n) {
		b = (struct kprog_recv_batch){ .posts = (uintptr_t)(posts + done),
					       .count = n - done };
		if (ops->ioctl(fd, KPROG_IOC_RECV_BATCH, &b) == 0) {
			done = n;
			break;
		}
		err = errno;
		done += b.posted < n - done ? b.posted : n - done;
		if (err != EINTR)
			break;
		err = 0;
	}
	for (i = done; i < n; i++)
		ops->refused(slots[i]);
	for (i = 0; i < done; i++)
		ops->posted(slots[i], &posts[i]);
	return err;
}
