// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/main.c: module load and unload, parameter checks, the device's
 * file operations and the copying of ioctl arguments.
 */
#include <linux/poll.h>
#include <linux/mm.h>
#include <linux/socket.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "stats.h"
#include "transport.h"
#include "ktest.h"
#include "fake_xport.h"
#include "coll.h"
#include "stubs.h"

/* Nothing of a failed load may remain. */
static void expect_nothing_loaded(void)
{
	EXPECT(!mock_miscdev);
	EXPECT(!mock_debugfs_fops("stats"));
	EXPECT_EQ(mock_live_allocs, 0);
	EXPECT_EQ(kt_stub_nl_inits, 0);
}

TEST_NO_MODULE(main__load_registers_the_device_and_unload_removes_it)
{
	ASSERT_OK(kt_load());
	ASSERT(mock_miscdev);
	EXPECT(!strcmp(mock_miscdev->name, "kprog"));
	EXPECT_EQ(mock_miscdev->mode, 0660);
	EXPECT(mock_debugfs_fops("stats"));
	EXPECT_EQ(kt_stub_nl_inits, 1);
	kt_unload();
	expect_nothing_loaded();
}

TEST_NO_MODULE(main__dev_mode_is_the_mode_devtmpfs_gives_the_node)
{
	kprog_dev_mode = 0666;
	ASSERT_OK(kt_load());
	EXPECT_EQ(mock_miscdev->mode, 0666);
	kt_unload();
}

/* open() as @p: 0 or the negative errno; closes again on success. */
static int open_as(struct mock_proc *p)
{
	struct file f = { .f_op = mock_miscdev->fops,
			  .private_data = mock_miscdev };
	int err;

	mock_set_current(p);
	err = f.f_op->open(NULL, &f);
	if (!err)
		f.f_op->release(NULL, &f);
	return err;
}

TEST(main__dev_group_admits_its_members_and_cap_dac_override_only)
{
	struct mock_proc *member = mock_proc_new(1001);
	struct mock_proc *other = mock_proc_new(1002);
	struct mock_proc *root = mock_proc_new(0);

	member->cred.fsgid = KGIDT_INIT(4242);
	root->caps = BIT_ULL(CAP_DAC_OVERRIDE);
	EXPECT_OK(open_as(other));		/* -1: no check */
	kprog_dev_group = 4242;
	EXPECT_OK(open_as(member));
	EXPECT_ERR(open_as(other), -EACCES);
	EXPECT_OK(open_as(root));
	root->caps = BIT_ULL(CAP_SYS_ADMIN);	/* not the one that counts */
	EXPECT_ERR(open_as(root), -EACCES);
}

struct bad_param {
	unsigned int *param;
	unsigned int value;
	const char *msg;
};

TEST_NO_MODULE(main__load_rejects_every_out_of_range_parameter)
{
	const struct bad_param bad[] = {
		{ &kprog_ring_entries, 0, "ring_entries" },
		{ &kprog_ring_entries, 48, "ring_entries" },
		{ &kprog_ring_entries, 1U << 21, "ring_entries" },
		{ &kprog_eager_quota, KPROG_EAGER_OVERHEAD, "eager_quota" },
		{ &kprog_eager_quota, (1U << 30) + 1, "eager_quota" },
		{ &kprog_eager_limit, (64U << 20) + 1, "eager_limit" },
		{ &kprog_max_ops, 0, "max_ops" },
		{ &kprog_max_ops, (1U << 20) + 1, "max_ops" },
		{ &kprog_max_rndv, 0, "max_rndv" },
		{ &kprog_max_rndv, (1U << 20) + 1, "max_rndv" },
		{ &kprog_max_iov, 0, "max_iov" },
		{ &kprog_max_iov, 65537, "max_iov" },
		{ &kprog_max_iov_total, 1023, "max_iov_total" },
		{ &kprog_max_iov_total, (1U << 24) + 1, "max_iov_total" },
		{ &kprog_max_job_size, 0, "max_job_size" },
		{ &kprog_max_job_size, (1U << 20) + 1, "max_job_size" },
		{ &kprog_chan_bytes, 2048, "chan_bytes" },
		{ &kprog_chan_bytes, 3 * 4096, "chan_bytes" },
		{ &kprog_chan_bytes, 16U << 20, "chan_bytes" },
		{ &kprog_fast_limit, (1U << 20) + 1, "fast_limit" },
		{ &kprog_max_chans, 65537, "max_chans" },
		{ &kprog_chan_mem_mib, (1U << 20) + 1, "chan_mem_mib" },
		{ &kprog_chan_shares, 0, "chan_shares" },
		{ &kprog_chan_shares, 65537, "chan_shares" },
		{ &kprog_max_grants, 4097, "max_grants" },
		{ &kprog_max_coll_steps, 0, "max_coll_steps" },
		{ &kprog_max_coll_steps, (1U << 20) + 1, "max_coll_steps" },
		{ &kprog_max_colls, 65537, "max_colls" },
		{ &kprog_dev_mode, 01000, "dev_mode" },
		{ (unsigned int *)&kprog_dev_group, -2, "dev_group" },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		kt_params_reset();
		*bad[i].param = bad[i].value;
		EXPECT_ERR(kt_load(), -EINVAL);
		if (!EXPECT_PRINTK(bad[i].msg))
			kt_fail(__FILE__, __LINE__, "case %d", i);
		expect_nothing_loaded();
	}
	/* The limits themselves are accepted. */
	kt_params_reset();
	kprog_ring_entries = 1U << 20;
	kprog_eager_quota = 1U << 30;
	kprog_eager_limit = 64U << 20;
	kprog_max_ops = 1U << 20;
	kprog_max_rndv = 1U << 20;
	kprog_max_iov = 65536;
	kprog_max_iov_total = 1U << 24;
	kprog_max_job_size = 1U << 20;
	kprog_chan_bytes = 8U << 20;
	kprog_fast_limit = 1U << 20;
	kprog_max_chans = 65536;
	ASSERT_OK(kt_load());
	kt_unload();
	kt_params_reset();
	kprog_chan_bytes = 4096;
	kprog_fast_limit = 0;
	kprog_max_chans = 0;
	ASSERT_OK(kt_load());
	kt_unload();
}

static int load(void *arg)
{
	return kt_load();
}

static void after_failed_load(void *arg)
{
	expect_nothing_loaded();
}

TEST_NO_MODULE(main__every_allocation_failing_at_load_unwinds)
{
	/*
	 * Seven workqueues: deferred frees, eager deliveries, collective
	 * schedules (unbound, and bound beside the caller), shm copies
	 * (unbound, bound to a waiting process's CPU, and collectives'
	 * unbound high-priority).
	 */
	EXPECT_EQ(kt_each_alloc_failure(load, after_failed_load, NULL, -ENOMEM),
		  7);
	kt_unload();
	expect_nothing_loaded();
}

TEST_NO_MODULE(main__each_failing_load_step_unwinds_the_ones_before)
{
	mock_misc_register_errors = 1;
	EXPECT_ERR(kt_load(), -EBUSY);
	expect_nothing_loaded();

	kt_stub_nl_init_err = -ENOMEM;
	EXPECT_ERR(kt_load(), -ENOMEM);
	expect_nothing_loaded();
	kt_stub_nl_init_err = 0;
}

TEST(main__open_allocation_failure_is_enomem)
{
	struct file f = { .f_op = mock_miscdev->fops };

	mock_kmalloc_errors = 1;
	EXPECT_ERR(f.f_op->open(NULL, &f), -ENOMEM);
}

TEST(main__the_old_magic_answers_only_version_with_the_current_one)
{
	struct kt_ep *e = kt_open();
	u32 v = 0;
	unsigned int nr;

	EXPECT_EQ(KPROG_IOC_MAGIC == KPROG_IOC_MAGIC_V1, 0);
	/* a version-1 client learns the module is of another version */
	EXPECT_OK(kt_ioctl(e, KPROG_IOC_VERSION_V1, &v));
	EXPECT_EQ(v, KPROG_ABI_VERSION);
	EXPECT_EQ(v == 1, 0);
	/* and nothing else of 0xB7 is a call of ours, before JOIN or after */
	for (nr = 1; nr < 64; nr++)
		EXPECT_ERR(kt_ioctl(e, _IOC(_IOC_READ | _IOC_WRITE,
					    KPROG_IOC_MAGIC_V1, nr,
					    sizeof(struct kprog_join)), &v),
			   -ENOTTY);
	EXPECT_ERR(kt_ioctl(e, _IOWR(KPROG_IOC_MAGIC_V1, 1,
				     struct kprog_join), &v), -ENOTTY);
}

TEST(main__version_works_before_join_and_needs_a_writable_argument)
{
	static u32 v32;		/* below 4 GiB, for the 32-bit call */
	struct kt_ep *e = kt_open();
	u32 v = 0;

	EXPECT_OK(kt_ioctl(e, KPROG_IOC_VERSION, &v));
	EXPECT_EQ(v, KPROG_ABI_VERSION);
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_VERSION, (void *)MOCK_BAD_UADDR),
		   -EFAULT);
	EXPECT_OK(e->file.f_op->compat_ioctl(&e->file, KPROG_IOC_VERSION,
					     (unsigned long)&v32));
	EXPECT_EQ(v32, KPROG_ABI_VERSION);
}

TEST(main__unknown_ioctl_is_enotty)
{
	struct kt_ep *e = kt_open();

	EXPECT_ERR(kt_ioctl(e, _IO(KPROG_IOC_MAGIC, 99), NULL), -ENOTTY);
	EXPECT_ERR(kt_ioctl(e, 0, NULL), -ENOTTY);
}

TEST(main__every_endpoint_ioctl_before_join_is_ebadfd)
{
	static const unsigned int cmds[] = {
		KPROG_IOC_SEND, KPROG_IOC_RECV, KPROG_IOC_PROBE,
		KPROG_IOC_CANCEL, KPROG_IOC_WAIT, KPROG_IOC_CHAN_OPEN,
		KPROG_IOC_CHAN_DRAIN, KPROG_IOC_KICK, KPROG_IOC_NET_CONN,
		KPROG_IOC_RECV_BATCH,
		_IOC(_IOC_WRITE, KPROG_IOC_MAGIC, 6, KPROG_WAIT_V1_SIZE),
	};
	struct kt_ep *e = kt_open();
	char arg[128] = {};
	int i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		EXPECT_ERR(kt_ioctl(e, cmds[i], arg), -EBADFD);
}

/*
 * Number 7 was IRQ_WAIT, now kprog_bench.ko's: unknown here, joined or
 * not, whatever the argument, and nothing is read or written.
 */
TEST(main__retired_irq_wait_is_enotty_before_and_after_join)
{
	const unsigned int old = _IOC(_IOC_READ | _IOC_WRITE, KPROG_IOC_MAGIC,
				      7, 24);
	struct kt_ep *a, *b;
	u64 w[3] = { 0, 1, 0 };

	a = kt_open();
	EXPECT_ERR(kt_ioctl(a, old, w), -ENOTTY);
	EXPECT_ERR(kt_ioctl(a, old, (void *)MOCK_BAD_UADDR), -ENOTTY);
	EXPECT_ERR(kt_ioctl(a, _IO(KPROG_IOC_MAGIC, 7), NULL), -ENOTTY);
	kt_pair(&a, &b);
	EXPECT_ERR(kt_ioctl(a, old, w), -ENOTTY);
	EXPECT_EQ(w[0], 0);
	EXPECT_EQ(w[2], 0);
}

TEST(main__join_with_an_unreadable_or_unwritable_argument_joins_nothing)
{
	struct kt_ep *e = kt_open();
	struct kprog_join j = {
		.abi_version = KPROG_ABI_VERSION,
		.job_key = kt_new_key(),
		.size = 1,
	};

	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_JOIN, (void *)MOCK_BAD_UADDR),
		   -EFAULT);
	mock_copy_from_user_errors = 1;
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_JOIN, &j), -EFAULT);
	mock_copy_to_user_errors = 1;	/* checked before joining */
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_JOIN, &j), -EFAULT);
	EXPECT(!kprog_ep_job(e->ep));
	EXPECT_OK(kt_join_req(e, &j));
	EXPECT_EQ(j.ring_entries, kprog_ring_entries);
}

TEST(main__join_whose_answer_cannot_be_written_is_efault_but_joined)
{
	struct kt_ep *e = kt_open();
	struct kprog_join j = {
		.abi_version = KPROG_ABI_VERSION,
		.job_key = kt_new_key(),
		.size = 1,
	};

	mock_copy_to_user_errors = 2;	/* the answer, after the check */
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_JOIN, &j), -EFAULT);
	EXPECT(kprog_ep_job(e->ep));
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_JOIN, &j), -EISCONN);
}

TEST(main__post_with_unreadable_argument_or_undeliverable_result_posts_nothing)
{
	struct kt_ep *a, *b;
	struct kprog_post p = { .peer = 1, .len = 0 };
	struct kprog_probe pr = { .source = KPROG_ANY_SOURCE,
				  .tag = KPROG_ANY_TAG };

	kt_pair(&a, &b);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_SEND, (void *)MOCK_BAD_UADDR), -EFAULT);
	mock_copy_to_user_errors = 1;	/* put_user() of done */
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_SEND, &p), -EFAULT);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 0);
}

TEST(main__eager_send_whose_result_cannot_be_written_is_efault_but_sent)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = { .source = 0, .tag = 7 };
	char buf[8] = "abc";

	kt_pair(&a, &b);
	mock_copy_to_user_errors = 2;	/* done and cqe, after the post */
	EXPECT_ERR(kt_send(a, 1, 7, buf, 4, 1, 0, NULL), -EFAULT);
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(pr.bytes, 4);
	mock_copy_to_user_errors = 4;	/* the cqe */
	EXPECT_ERR(kt_send(a, 1, 7, buf, 4, 2, 0, NULL), -EFAULT);
}

TEST(main__completion_returned_by_the_post_counts_an_event)
{
	struct kt_ep *a, *b;
	struct kprog_post p;
	struct kprog_stats s0, s1;
	char buf[4] = "abc";

	kt_pair(&a, &b);
	kprog_stats_read(0, &s0);
	EXPECT_OK(kt_send(a, 1, 0, buf, 4, 1, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.req_id, 1);
	EXPECT_EQ(p.cqe.bytes, 4);
	kprog_stats_read(0, &s1);
	EXPECT_EQ(s1.v[KPROG_STAT_EVENTS] - s0.v[KPROG_STAT_EVENTS], 1);
}

TEST(main__probe_cancel_and_wait_with_unreadable_arguments_are_efault)
{
	struct kt_ep *a, *b;
	struct kprog_probe pr = { .source = KPROG_ANY_SOURCE,
				  .tag = KPROG_ANY_TAG };

	kt_pair(&a, &b);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_PROBE, (void *)MOCK_BAD_UADDR), -EFAULT);
	mock_copy_to_user_errors = 1;	/* checked before probing */
	EXPECT_ERR(kt_probe(a, &pr), -EFAULT);
	mock_copy_to_user_errors = 2;	/* the answer */
	EXPECT_ERR(kt_probe(a, &pr), -EFAULT);
	EXPECT_ERR(kt_probe(a, &(struct kprog_probe){ .flags = 0x80 }), -EINVAL);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CANCEL, (void *)MOCK_BAD_UADDR), -EFAULT);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_WAIT, (void *)MOCK_BAD_UADDR), -EFAULT);
}

TEST(main__mmap_and_poll_go_to_the_ring)
{
	struct kt_ep *e = kt_open();
	poll_table *no_table = NULL;

	EXPECT_EQ(e->file.f_op->poll(&e->file, no_table), EPOLLERR);
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, 0, VM_SHARED, NULL), -EBADFD);
	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	EXPECT_EQ(e->file.f_op->poll(&e->file, no_table), 0);
	/* Any other offset names a channel. */
	EXPECT_ERR(kt_mmap(e, PAGE_SIZE, KPROG_CHAN_MMAP_OFFSET(0) >> PAGE_SHIFT,
			   VM_SHARED, NULL), -ENOENT);
}

TEST(main__llseek_is_a_no_op)
{
	struct kt_ep *e = kt_open();

	EXPECT_EQ(e->file.f_op->llseek(&e->file, 10, SEEK_SET), 0);
}

TEST(main__stats_debugfs_file_shows_header_and_one_line_per_cpu)
{
	struct kt_ep *a, *b;
	char buf[4] = "abc", *text;

	kprog_stats_reset();
	kt_pair(&a, &b);
	EXPECT_OK(kt_send(a, 1, 0, buf, 4, 1, 0, NULL));
	text = mock_seq_read_all(mock_debugfs_fops("stats"));
	ASSERT(text);
	EXPECT(!strncmp(text, "cpu events tasklet_runs tasklet_ns work_items work_ns bytes wakeups net_cqes net_dropped net_reg_bytes net_pin_hits net_pin_misses\n",
			128));
	EXPECT(strstr(text, "\n0 1 0 0 0 0 0 0 0 0 0 0 0\n"));
	mock_free_text(text);
	kprog_stats_reset();
	text = mock_seq_read_all(mock_debugfs_fops("stats"));
	EXPECT(strstr(text, "\n0 0 0 0 0 0 0 0 0 0 0 0 0\n"));
	mock_free_text(text);
	mock_kmalloc_errors = 1;	/* seq_open() */
	EXPECT(!mock_seq_read_all(mock_debugfs_fops("stats")));
}

TEST(main__get_info_reports_the_abi_features_transports_and_limits)
{
	struct kt_ep *e = kt_open();
	struct kprog_info info;

	memset(&info, 0xff, sizeof(info));
	ASSERT_OK(kt_info(e, &info));		/* before JOIN */
	EXPECT_EQ(info.abi_version, KPROG_ABI_VERSION);
	EXPECT_EQ(info.features, KPROG_FEAT_MULTINODE | KPROG_FEAT_LARGE_MSG |
				 KPROG_FEAT_RECV_ARRIVED | KPROG_FEAT_FASTPATH |
				 KPROG_FEAT_PEERS | KPROG_FEAT_TIMES |
				 KPROG_FEAT_WAITER | KPROG_FEAT_GRANTS |
				 KPROG_FEAT_COLL | KPROG_FEAT_RECV_BATCH |
				 KPROG_FEAT_WAIT_POLL);
	EXPECT_EQ(info.transports, KPROG_XPORT_SHM);
	EXPECT_EQ(info.eager_limit, 8192);
	EXPECT_EQ(info.eager_quota, 1 << 20);
	EXPECT_EQ(info.max_ops, 16384);
	EXPECT_EQ(info.max_iov, 1024);
	EXPECT_EQ(info.max_iov_total, 65536);
	EXPECT_EQ(info.ring_entries, 1024);
	EXPECT_EQ(info.max_job_size, 4096);
	EXPECT_EQ(info.max_msg, 1ULL << 47);
	EXPECT_EQ(info.fast_limit, 8192);
	EXPECT_EQ(info.chan_bytes, 65536);
	EXPECT_EQ(info.max_chans, 256);
	EXPECT_EQ(info.max_rndv, 16384);
	EXPECT_EQ(info.max_grants, 64);
	EXPECT_EQ(info.max_coll_steps, 4096);
	EXPECT_EQ(info.node_addr.family, 0);	/* no network transport */
	/* A network transport shows; after JOIN too. */
	kt_fx_install();
	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	ASSERT_OK(kt_info(e, &info));
	EXPECT_EQ(info.transports, KPROG_XPORT_SHM | KPROG_XPORT_IB);
	EXPECT_ERR(kt_info(e, (void *)MOCK_BAD_UADDR), -EFAULT);
}

TEST_NO_MODULE(main__get_info_without_fast_path_has_no_fastpath_feature)
{
	struct kt_ep *e;
	struct kprog_info info;

	kprog_fast_limit = 0;
	ASSERT_OK(kt_load());
	e = kt_open();
	ASSERT_OK(kt_info(e, &info));
	EXPECT_EQ(info.features, KPROG_FEAT_MULTINODE | KPROG_FEAT_LARGE_MSG |
				 KPROG_FEAT_RECV_ARRIVED | KPROG_FEAT_PEERS |
				 KPROG_FEAT_TIMES | KPROG_FEAT_WAITER |
				 KPROG_FEAT_COLL | KPROG_FEAT_RECV_BATCH |
				 KPROG_FEAT_WAIT_POLL);
	EXPECT_EQ(info.fast_limit, 0);
}

TEST(main__v1_join_struct_is_accepted_and_only_its_bytes_are_written)
{
	const unsigned int join_v1 = _IOC(_IOC_READ | _IOC_WRITE,
					  KPROG_IOC_MAGIC, 1,
					  KPROG_JOIN_V1_SIZE);
	struct kt_ep *e = kt_open();
	struct {
		struct kprog_join j;
		u8 canary[8];
	} arg;
	void *ring;

	BUILD_BUG_ON(offsetof(struct kprog_join, rank_nodes) !=
		     KPROG_JOIN_V1_SIZE);
	memset(&arg, 0x5a, sizeof(arg));	/* the V2 fields are garbage */
	arg.j.abi_version = KPROG_ABI_VERSION;
	arg.j.flags = 0;
	arg.j.job_key = kt_new_key();
	arg.j.rank = 0;
	arg.j.size = 2;
	arg.j.eager_limit = 0;
	ASSERT_OK(kt_ioctl(e, join_v1, &arg));
	EXPECT_EQ(arg.j.ring_entries, 1024);
	EXPECT_EQ(arg.j.eager_limit, 8192);
	EXPECT_EQ(arg.j.max_ops, 16384);
	/* Not read as a node map, not overwritten. */
	EXPECT_EQ(arg.j.nr_nodes, 0x5a5a5a5a);
	EXPECT_EQ(arg.canary[0], 0x5a);
	EXPECT(kprog_ep_job(e->ep)->nr_nodes == 1);
	EXPECT(!kprog_ep_job(e->ep)->rank_node);
	EXPECT_OK(kt_mmap(e, arg.j.ring_bytes, 0, VM_SHARED, &ring));
}

TEST(main__v1_wait_struct_is_accepted_without_reading_flags)
{
	const unsigned int wait_v1 = _IOC(_IOC_WRITE, KPROG_IOC_MAGIC, 6,
					  KPROG_WAIT_V1_SIZE);
	struct kt_ep *e = kt_open();
	struct kprog_wait w;

	ASSERT_OK(kt_join(e, kt_new_key(), 0, 1));
	memset(&w, 0xff, sizeof(w));		/* flags would be invalid */
	w.timeout_ns = 0;
	EXPECT_OK(kt_ioctl(e, wait_v1, &w));
	EXPECT_ERR(kt_ioctl(e, KPROG_IOC_WAIT, &w), -EINVAL);
	w.timeout_ns = 1000;
	EXPECT_ERR(kt_ioctl(e, wait_v1, &w), -ETIMEDOUT);
	EXPECT_ERR(kt_ioctl(e, wait_v1, (void *)MOCK_BAD_UADDR), -EFAULT);
}

TEST(main__chan_drain_and_kick_check_their_arguments)
{
	struct kt_ep *a, *b;
	struct kprog_chan_drain d = { .peer = 0, .flags = ~KPROG_DRAIN_TO };
	u32 rank = 2, ev;

	kt_pair(&a, &b);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CHAN_DRAIN, (void *)MOCK_BAD_UADDR),
		   -EFAULT);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CHAN_DRAIN, &d), -EINVAL);
	EXPECT_ERR(kt_chan_drain(a, -2), -EINVAL);
	EXPECT_ERR(kt_chan_drain(a, 2), -EINVAL);
	EXPECT_OK(kt_chan_drain(a, 1));
	EXPECT_OK(kt_chan_drain(a, KPROG_ANY_SOURCE));

	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_KICK, (void *)MOCK_BAD_UADDR), -EFAULT);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_KICK, &rank), -EINVAL);
	ev = kt_events(b);
	rank = 1;
	EXPECT_OK(kt_ioctl(a, KPROG_IOC_KICK, &rank));
	EXPECT_EQ(kt_events(b), ev + 1);
	/* nobody sleeps on b: the event count moves, no wake-up is paid */
	EXPECT_EQ(mock_wakeups_of(&b->ep->wq), 0);
	kt_close(b);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_KICK, &rank), -ENOTCONN);
}

static struct kt_ep *kick_from;

static void kick_rank_1(void *arg)
{
	u32 rank = 1;

	kt_ioctl(kick_from, KPROG_IOC_KICK, &rank);
	mock_schedule_hook = NULL;
}

TEST(main__kick_wakes_a_peer_asleep_in_wait_for_events)
{
	struct kt_ep *a, *b;
	struct kprog_wait w = { .timeout_ns = -1, .flags = KPROG_WAIT_EVENTS };

	kt_pair(&a, &b);
	w.events = kt_events(b);
	kick_from = a;
	mock_schedule_hook = kick_rank_1;
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_WAIT, &w));
	EXPECT_EQ(mock_schedules, 1);
	EXPECT_EQ(mock_wakeups_of(&b->ep->wq), 1);
	EXPECT_EQ(kt_events(b), w.events + 1);
	EXPECT(!waitqueue_active(&b->ep->wq));
}

TEST(main__chan_open_with_an_unreadable_or_unwritable_argument_is_efault)
{
	struct kt_ep *a, *b;
	struct kprog_chan_open co = { .peer = 1 };

	kt_pair(&a, &b);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CHAN_OPEN, (void *)MOCK_BAD_UADDR),
		   -EFAULT);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CHAN_OPEN,
			    &(struct kprog_chan_open){ .peer = 5 }), -EINVAL);
	mock_copy_to_user_errors = 1;	/* created, the answer is lost */
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CHAN_OPEN, &co), -EFAULT);
	EXPECT_OK(kt_ioctl(a, KPROG_IOC_CHAN_OPEN, &co));
	EXPECT_EQ(co.offset, KPROG_CHAN_MMAP_OFFSET(1));
}

static int fx_addr_err;

static int fx_local_addr(struct kprog_node_addr *addr)
{
	if (fx_addr_err)
		return fx_addr_err;
	addr->family = AF_INET;
	addr->port = htons(18515);
	addr->addr[0] = 127;
	addr->addr[2] = 1;
	addr->addr[3] = 1;
	return 0;
}

TEST(main__get_info_reports_where_the_network_transport_is_reached)
{
	static struct module mod = { .name = "kprog_fx" };
	static struct kprog_transport x;
	struct kt_ep *e = kt_open();
	struct kprog_info info;

	kt_fx_install();
	x = kt_fx_xport;
	x.owner = &mod;
	x.local_addr = fx_local_addr;
	kprog_xport_set_net(&x);
	fx_addr_err = 0;
	ASSERT_OK(kt_info(e, &info));
	EXPECT_EQ(info.transports, KPROG_XPORT_SHM | KPROG_XPORT_IB);
	EXPECT_EQ(info.node_addr.family, AF_INET);
	EXPECT_EQ(info.node_addr.port, htons(18515));
	EXPECT_EQ(info.node_addr.addr[3], 1);
	EXPECT_EQ(mock_module_refs, 0);
	/* No usable device: no address. */
	fx_addr_err = -ENODEV;
	ASSERT_OK(kt_info(e, &info));
	EXPECT_EQ(info.node_addr.family, 0);
	EXPECT_EQ(info.node_addr.addr[3], 0);
	/* A module on its way out is not called. */
	fx_addr_err = 0;
	mock_module_going = true;
	ASSERT_OK(kt_info(e, &info));
	EXPECT_EQ(info.node_addr.family, 0);
	mock_module_going = false;
}

/* ---- KPROG_IOC_RECV_BATCH ---- */

static void batch_entry(struct kprog_post *p, s32 tag, void *buf, u64 len,
			u64 req_id)
{
	*p = (struct kprog_post){ .req_id = req_id, .peer = 0, .tag = tag,
				  .addr = (u64)(uintptr_t)buf, .len = len,
				  .done = 0xdead };
}

TEST(main__recv_batch_posts_in_order_and_returns_each_result)
{
	struct kt_ep *a, *b;
	struct kprog_post v[3];
	struct kprog_recv_batch rb = { .posts = (u64)(uintptr_t)v, .count = 3,
				       .posted = 99 };
	struct kprog_info info;
	char r0[8], r1[8], r2[8];

	kt_pair(&a, &b);
	EXPECT_OK(kt_info(b, &info));
	EXPECT_EQ(!!(info.features & KPROG_FEAT_RECV_BATCH), 1);
	/* arrived before: taken by its entry at once */
	EXPECT_OK(kt_send(a, 1, 5, "one", 4, 1, 0, NULL));
	batch_entry(&v[0], 5, r0, 8, 10);
	/* two receives of one tag: matched in entry order */
	batch_entry(&v[1], 6, r1, 8, 11);
	batch_entry(&v[2], 6, r2, 8, 12);
	EXPECT_OK(kt_ioctl(b, KPROG_IOC_RECV_BATCH, &rb));
	EXPECT_EQ(rb.posted, 3);
	EXPECT_EQ(v[0].done, 1);
	EXPECT_EQ(v[0].cqe.req_id, 10);
	EXPECT_EQ(v[0].cqe.bytes, 4);
	EXPECT_EQ(memcmp(r0, "one", 4), 0);
	EXPECT_EQ(v[1].done, 0);
	EXPECT_EQ(v[2].done, 0);
	EXPECT_OK(kt_send(a, 1, 6, "two", 4, 2, 0, NULL));
	EXPECT_OK(kt_send(a, 1, 6, "six", 4, 3, 0, NULL));
	EXPECT_CQE(b, 11, 4, 0);
	EXPECT_CQE(b, 12, 4, 0);
	EXPECT_EQ(memcmp(r1, "two", 4), 0);
	EXPECT_EQ(memcmp(r2, "six", 4), 0);
}

TEST(main__recv_batch_of_bad_size_or_flags_posts_nothing)
{
	struct kt_ep *a, *b;
	struct kprog_post v[KPROG_RECV_BATCH_MAX + 1];
	struct kprog_recv_batch rb = { .posts = (u64)(uintptr_t)v };
	struct kprog_probe pr = { .source = 0, .tag = 5 };
	char r[8];
	int i;

	kt_pair(&a, &b);
	for (i = 0; i < ARRAY_SIZE(v); i++)
		batch_entry(&v[i], 5, r, 8, 100 + i);
	rb.count = 0;
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV_BATCH, &rb), -EINVAL);
	rb.count = KPROG_RECV_BATCH_MAX + 1;
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV_BATCH, &rb), -EINVAL);
	rb.count = 1;
	rb.flags = 1;
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV_BATCH, &rb), -EINVAL);
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV_BATCH, (void *)MOCK_BAD_UADDR),
		   -EFAULT);
	/* no receive was posted: the message waits unexpected */
	EXPECT_OK(kt_send(a, 1, 5, "abc", 4, 1, 0, NULL));
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(kt_ring_count(b), 0);
}

TEST(main__recv_batch_stops_at_a_bad_entry_with_its_errno)
{
	struct kt_ep *a, *b;
	struct kprog_post v[3];
	struct kprog_recv_batch rb = { .posts = (u64)(uintptr_t)v, .count = 3,
				       .posted = 99 };
	struct kprog_probe pr = { .source = 0, .tag = 7 };
	char r0[8], r2[8];

	kt_pair(&a, &b);
	batch_entry(&v[0], 5, r0, 8, 10);
	batch_entry(&v[1], 6, r0, 8, 11);
	v[1].peer = 2;			/* not a rank of this job of 2 */
	batch_entry(&v[2], 7, r2, 8, 12);
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV_BATCH, &rb), -EINVAL);
	EXPECT_EQ(rb.posted, 1);
	/* the first is posted and completes; the third was not posted */
	EXPECT_OK(kt_send(a, 1, 5, "abc", 4, 1, 0, NULL));
	EXPECT_CQE(b, 10, 4, 0);
	EXPECT_OK(kt_send(a, 1, 7, "xyz", 4, 2, 0, NULL));
	EXPECT_OK(kt_probe(b, &pr));
	EXPECT_EQ(pr.found, 1);
	EXPECT_EQ(kt_ring_count(b), 0);
	/* an unreadable entry in the middle: EFAULT, the first is posted */
	batch_entry(&v[0], 8, r0, 8, 20);
	v[1].peer = 0;
	rb.posts = (u64)(uintptr_t)v;
	rb.count = 2;
	mock_copy_from_user_errors = 4;	/* the batch, then the second entry */
	EXPECT_ERR(kt_ioctl(b, KPROG_IOC_RECV_BATCH, &rb), -EFAULT);
	EXPECT_EQ(rb.posted, 1);
	EXPECT_OK(kt_send(a, 1, 8, "def", 4, 3, 0, NULL));
	EXPECT_CQE(b, 20, 4, 0);
}
