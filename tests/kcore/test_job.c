// SPDX-License-Identifier: GPL-2.0
/*
 * kmod/core/job.c: the job registry, JOIN and its errnos, who may join, rank
 * slots and the departure of endpoints.
 */
#include <linux/mm.h>
#include <linux/socket.h>
#include "kprog.h"
#include "job.h"
#include "ep.h"
#include "match.h"
#include "chan.h"
#include "transport.h"
#include "ktest.h"
#include "fake_xport.h"

static struct kprog_join join_req(u64 key, u32 rank, u32 size)
{
	return (struct kprog_join){
		.abi_version = KPROG_ABI_VERSION,
		.job_key = key,
		.rank = rank,
		.size = size,
	};
}

TEST(job__join_first_rank_creates_the_job_and_reports_the_limits)
{
	struct kt_ep *e = kt_open();
	struct kprog_join j = join_req(kt_new_key(), 2, 3);
	struct kprog_job *job;

	ASSERT_OK(kt_join_req(e, &j));
	EXPECT_EQ(j.eager_limit, 8192);
	EXPECT_EQ(j.ring_entries, 1024);
	EXPECT_EQ(j.ring_bytes, PAGE_ALIGN(KPROG_RING_CQES_OFFSET + 1024 * 32));
	EXPECT_EQ(j.max_iov, 1024);
	EXPECT_EQ(j.max_ops, 16384);
	job = kprog_ep_job(e->ep);
	ASSERT(job);
	EXPECT_EQ(job->key, j.job_key);
	EXPECT_EQ(job->size, 3);
	EXPECT_EQ(job->members, 1);
	EXPECT(job->peers[2].ep == e->ep);
	EXPECT_EQ(job->peers[2].kind, KPROG_PEER_LOCAL);
	EXPECT_EQ(job->peers[0].kind, KPROG_PEER_ABSENT);
	EXPECT_EQ(job->nr_nodes, 1);
	EXPECT(!job->rank_node && !job->nodes);
	EXPECT_EQ(e->ep->rank, 2);
	EXPECT(uid_eq(job->owner, KUIDT_INIT(1000)));
	EXPECT_EQ(e->ring->entries, 1024);
	EXPECT_EQ(e->ring->nr_src, 3);
	EXPECT_EQ(e->ring->src_offset, KPROG_RING_CQES_OFFSET + 1024 * 32);
}

TEST(job__join_second_rank_same_key_shares_job)
{
	struct kt_ep *a = kt_open(), *b = kt_open_as(mock_proc_new(1000));
	u64 key = kt_new_key();

	ASSERT_OK(kt_join(a, key, 0, 2));
	ASSERT_OK(kt_join(b, key, 1, 2));
	EXPECT(kprog_ep_job(a->ep) == kprog_ep_job(b->ep));
	EXPECT_EQ(kprog_ep_job(a->ep)->members, 2);
	EXPECT_EQ(kref_read(&kprog_ep_job(a->ep)->ref), 2);
}

TEST(job__join_other_key_makes_another_job)
{
	struct kt_ep *a = kt_open(), *b = kt_open();

	ASSERT_OK(kt_join(a, kt_new_key(), 0, 2));
	ASSERT_OK(kt_join(b, kt_new_key(), 0, 2));
	EXPECT(kprog_ep_job(a->ep) != kprog_ep_job(b->ep));
}

TEST(job__join_twice_on_one_endpoint_is_eisconn)
{
	struct kt_ep *e = kt_open();
	u64 key = kt_new_key();

	ASSERT_OK(kt_join(e, key, 0, 2));
	EXPECT_ERR(kt_join(e, key, 1, 2), -EISCONN);
	EXPECT_ERR(kt_join(e, kt_new_key(), 0, 1), -EISCONN);
}

TEST(job__join_errnos_of_bad_requests)
{
	struct kt_ep *e = kt_open();
	long live = mock_live_allocs;
	struct kprog_join j;

	j = join_req(kt_new_key(), 0, 2);
	j.abi_version = KPROG_ABI_VERSION + 1;
	EXPECT_ERR(kt_join_req(e, &j), -EPROTONOSUPPORT);
	j = join_req(kt_new_key(), 0, 2);
	j.flags = 2;
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);
	j = join_req(kt_new_key(), 0, 0);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);
	j = join_req(kt_new_key(), 0, kprog_max_job_size + 1);
	EXPECT_ERR(kt_join_req(e, &j), -E2BIG);
	j = join_req(kt_new_key(), 2, 2);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);
	EXPECT(!kprog_ep_job(e->ep));
	EXPECT_EQ(mock_live_allocs, live);
	j = join_req(kt_new_key(), 0, kprog_max_job_size);
	EXPECT_OK(kt_join_req(e, &j));
}

TEST(job__joiner_with_another_size_is_einval)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	u64 key = kt_new_key();

	ASSERT_OK(kt_join(a, key, 0, 2));
	EXPECT_ERR(kt_join(b, key, 1, 3), -EINVAL);
	EXPECT_ERR(kt_join(b, key, 1, 1), -EINVAL);
	EXPECT_EQ(kprog_ep_job(a->ep)->members, 1);
}

TEST(job__eager_limit_is_fixed_by_the_creator_and_checked_when_explicit)
{
	struct kt_ep *a = kt_open(), *b = kt_open(), *c = kt_open();
	struct kprog_join j = join_req(kt_new_key(), 0, 3);

	j.eager_limit = 100;
	ASSERT_OK(kt_join_req(a, &j));
	EXPECT_EQ(j.eager_limit, 100);
	j.rank = 1;
	j.eager_limit = 101;
	EXPECT_ERR(kt_join_req(b, &j), -EINVAL);
	j.eager_limit = 100;
	EXPECT_OK(kt_join_req(b, &j));
	j.rank = 2;
	j.eager_limit = 0;		/* 0: whatever the job has */
	EXPECT_OK(kt_join_req(c, &j));
	EXPECT_EQ(j.eager_limit, 100);
}

TEST(job__eager_limit_is_capped_by_the_quota_minus_the_overhead)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	struct kprog_join j = join_req(kt_new_key(), 0, 2);

	kprog_eager_quota = 4096;
	ASSERT_OK(kt_join_req(a, &j));	/* module default 8192 */
	EXPECT_EQ(j.eager_limit, 4096 - KPROG_EAGER_OVERHEAD);
	j = join_req(kt_new_key(), 0, 2);
	j.eager_limit = 1 << 20;
	ASSERT_OK(kt_join_req(b, &j));
	EXPECT_EQ(j.eager_limit, 4096 - KPROG_EAGER_OVERHEAD);
}

TEST(job__explicit_eager_limit_above_the_cap_matches_the_capped_one)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	struct kprog_join j = join_req(kt_new_key(), 0, 2);

	kprog_eager_quota = 4096;
	j.eager_limit = 5000;
	ASSERT_OK(kt_join_req(a, &j));
	j.rank = 1;
	j.eager_limit = 6000;		/* capped to the same value */
	EXPECT_OK(kt_join_req(b, &j));
}

TEST(job__join_of_a_taken_rank_is_eaddrinuse)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	u64 key = kt_new_key();
	struct kprog_job *job;
	unsigned int refs;
	long live;

	ASSERT_OK(kt_join(a, key, 1, 2));
	job = kprog_ep_job(a->ep);
	refs = kref_read(&job->ref);
	live = mock_live_allocs;
	EXPECT_ERR(kt_join(b, key, 1, 2), -EADDRINUSE);
	EXPECT_EQ(mock_live_allocs, live);	/* b's ring is gone again */
	EXPECT(!kprog_ep_job(b->ep));
	/* set before the rank check, taken back: no dangling ring, no job ref */
	EXPECT(!b->ep->ring.hdr);
	EXPECT_EQ(kref_read(&job->ref), refs);
	EXPECT_EQ(job->members, 1);
	EXPECT_OK(kt_join(b, key, 0, 2));
	EXPECT(b->ep->ring.hdr);
	EXPECT_EQ(b->ep->rank, 0);
	EXPECT_EQ(kref_read(&job->ref), refs + 1);
}

TEST(job__join_by_another_user_is_eacces)
{
	struct kt_ep *a = kt_open(), *b = kt_open_as(mock_proc_new(1001));
	u64 key = kt_new_key();

	ASSERT_OK(kt_join(a, key, 0, 2));
	EXPECT_ERR(kt_join(b, key, 1, 2), -EACCES);
	EXPECT(!kprog_ep_job(b->ep));
}

/* Another user's job can be joined only if both sides pass SHARED. */
static int join_shared(struct kt_ep *e, u64 key, u32 rank, bool shared)
{
	struct kprog_join j = join_req(key, rank, 2);

	j.flags = shared ? KPROG_JOIN_SHARED : 0;
	return kt_join_req(e, &j);
}

TEST(job__another_user_joins_only_when_both_sides_agree_to_share)
{
	struct mock_proc *other = mock_proc_new(1001);
	struct kt_ep *a1 = kt_open(), *a2 = kt_open(), *a3 = kt_open();
	struct kt_ep *b1 = kt_open_as(other), *b2 = kt_open_as(other);
	struct kt_ep *b3 = kt_open_as(other);
	u64 k1 = kt_new_key(), k2 = kt_new_key(), k3 = kt_new_key();

	ASSERT_OK(join_shared(a1, k1, 0, true));
	EXPECT_OK(join_shared(b1, k1, 1, true));
	EXPECT(kprog_ep_job(a1->ep)->shared);

	ASSERT_OK(join_shared(a2, k2, 0, true));
	EXPECT_ERR(join_shared(b2, k2, 1, false), -EACCES);

	ASSERT_OK(join_shared(a3, k3, 0, false));
	EXPECT_ERR(join_shared(b3, k3, 1, true), -EACCES);
}

TEST(job__same_user_joins_a_shared_job_without_the_flag)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	u64 key = kt_new_key();

	ASSERT_OK(join_shared(a, key, 0, true));
	EXPECT_OK(join_shared(b, key, 1, false));
}

TEST(job__owner_is_the_effective_uid_of_the_creator)
{
	struct mock_proc *p = mock_proc_new(1000);
	struct kt_ep *a, *b = kt_open();
	u64 key = kt_new_key();

	/* setuid program: real uid 1000, effective uid 0 */
	p->cred.euid = KUIDT_INIT(0);
	a = kt_open_as(p);
	ASSERT_OK(kt_join(a, key, 0, 2));
	EXPECT(uid_eq(kprog_ep_job(a->ep)->owner, GLOBAL_ROOT_UID));
	EXPECT_ERR(kt_join(b, key, 1, 2), -EACCES);
}

static struct kt_ep *failing_ep;
static u64 failing_key;

static int join_failing(void *arg)
{
	return kt_join(failing_ep, failing_key, 0, 2);
}

TEST(job__every_allocation_failing_in_join_is_enomem_and_leaves_no_trace)
{
	failing_ep = kt_open();
	failing_key = kt_new_key();
	/* ring, grant table, job, peers, left bitmap */
	EXPECT_EQ(kt_each_alloc_failure(join_failing, NULL, NULL, -ENOMEM), 5);
	EXPECT(kprog_ep_job(failing_ep->ep));
}

TEST(job__failing_ring_allocation_of_a_joiner_leaves_the_job_alone)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	u64 key = kt_new_key();

	ASSERT_OK(kt_join(a, key, 0, 2));
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kt_join(b, key, 1, 2), -ENOMEM);
	EXPECT_EQ(kprog_ep_job(a->ep)->members, 1);
	EXPECT_OK(kt_join(b, key, 1, 2));
}

TEST(job__a_closed_rank_can_be_taken_again_while_the_job_lives)
{
	struct kt_ep *a, *b, *c = kt_open();
	struct kprog_job *job;

	kt_pair(&a, &b);
	job = kprog_ep_job(a->ep);
	kt_close(b);
	EXPECT(!job->peers[1].ep);
	EXPECT_EQ(job->peers[1].kind, KPROG_PEER_ABSENT);
	EXPECT(test_bit(1, job->left));
	EXPECT_EQ(job->members, 1);
	EXPECT_OK(kt_join(c, job->key, 1, 2));
	EXPECT(kprog_ep_job(c->ep) == job);
	EXPECT(!test_bit(1, job->left));
}

TEST(job__last_member_leaving_removes_the_job_and_frees_the_key)
{
	struct kt_ep *a, *b, *c = kt_open();
	u64 key;

	kt_pair(&a, &b);
	key = kprog_ep_job(a->ep)->key;
	kt_close(a);
	kt_close(b);
	/* A new job under the same key, with another size. */
	EXPECT_OK(kt_join(c, key, 2, 3));
	EXPECT_EQ(kprog_ep_job(c->ep)->members, 1);
	EXPECT_EQ(kprog_ep_job(c->ep)->size, 3);
}

TEST(job__get_ep_returns_a_referenced_endpoint_or_null)
{
	struct kt_ep *a, *b;
	struct kprog_job *job;
	struct kprog_ep *ep;

	kt_pair(&a, &b);
	job = kprog_ep_job(a->ep);
	ep = kprog_job_get_ep(job, 1);
	EXPECT(ep == b->ep);
	EXPECT_EQ(kref_read(&ep->ref), 2);
	kprog_ep_put(ep);
	kt_close(b);
	EXPECT(!kprog_job_get_ep(job, 1));
}

TEST(job__job_lives_until_the_last_endpoint_that_joined_is_freed)
{
	struct kt_ep *a, *b;
	struct kprog_job *job;
	struct kprog_ep *ep;

	kt_pair(&a, &b);
	job = kprog_ep_job(a->ep);
	ep = kprog_job_get_ep(job, 0);	/* keeps a's endpoint */
	kt_close(a);
	kt_close(b);
	/* Out of the registry, but a's endpoint still holds it. */
	EXPECT_EQ(kref_read(&job->ref), 1);
	EXPECT_EQ(job->members, 0);
	kprog_ep_put(ep);
}

/* ---------------------------------------------------------------------
 * Jobs that span nodes
 */

/* ranks 0, 1 on node 0; 2 on node 1; 3 on node 2 */
static const u32 map4[4] = { 0, 0, 1, 2 };

static struct kprog_join map_req(u64 key, u32 rank, const u32 *rank_nodes,
				 struct kprog_node_addr *nodes, u32 nr_nodes)
{
	struct kprog_join j = join_req(key, rank, 4);

	j.rank_nodes = (uintptr_t)rank_nodes;
	j.nodes = (uintptr_t)nodes;
	j.nr_nodes = nr_nodes;
	return j;
}

static void fill_nodes(struct kprog_node_addr *n, u32 nr)
{
	u32 i;

	memset(n, 0, nr * sizeof(*n));
	for (i = 0; i < nr; i++) {
		n[i].family = i % 2 ? AF_INET6 : AF_INET;
		n[i].addr[0] = 127;
		n[i].addr[3] = i + 1;
		n[i].__pad = 0xdead;	/* ignored, cleared */
	}
}

TEST(job__node_map_errors_are_einval_and_join_nothing)
{
	struct kt_ep *e = kt_open();
	struct kprog_node_addr nodes[3];
	u32 bad_rank[4] = { 0, 0, 1, 3 };
	long live = mock_live_allocs;
	struct kprog_join j;

	kt_fx_install();		/* remote ranks are reachable */
	fill_nodes(nodes, 3);
	j = map_req(kt_new_key(), 0, map4, NULL, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* no nodes */
	j = map_req(kt_new_key(), 0, NULL, nodes, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* no ranks */
	j = map_req(kt_new_key(), 0, map4, nodes, 0);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* no count */
	j = map_req(kt_new_key(), 0, map4, nodes, 3);
	j.self_node = 3;
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* self outside */
	j = map_req(kt_new_key(), 0, NULL, NULL, 0);
	j.self_node = 1;
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* self alone */
	j = map_req(kt_new_key(), 0, map4, nodes, KPROG_MAX_NODES + 1);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* too many */
	j = map_req(kt_new_key(), 0, bad_rank, nodes, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* rank's node */
	nodes[2].family = AF_UNIX;
	j = map_req(kt_new_key(), 0, map4, nodes, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* family */
	fill_nodes(nodes, 3);
	j = map_req(kt_new_key(), 2, map4, nodes, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EINVAL);		/* rank elsewhere */
	j = map_req(kt_new_key(), 0, map4, (void *)MOCK_BAD_UADDR, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EFAULT);
	j = map_req(kt_new_key(), 0, (void *)MOCK_BAD_UADDR, nodes, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EFAULT);
	EXPECT(!kprog_ep_job(e->ep));
	EXPECT_EQ(mock_live_allocs, live);
	j = map_req(kt_new_key(), 0, map4, nodes, 3);
	EXPECT_OK(kt_join_req(e, &j));
}

TEST(job__remote_ranks_without_a_network_transport_are_ehostunreach)
{
	struct kt_ep *e = kt_open();
	static const u32 all_here[4] = { 1, 1, 1, 1 };
	struct kprog_node_addr nodes[3];
	struct kprog_join j;

	fill_nodes(nodes, 3);
	j = map_req(kt_new_key(), 0, map4, nodes, 3);
	EXPECT_ERR(kt_join_req(e, &j), -EHOSTUNREACH);
	EXPECT(!kprog_ep_job(e->ep));
	/* A map whose ranks are all on this node needs none. */
	j = map_req(kt_new_key(), 0, all_here, nodes, 3);
	j.self_node = 1;
	EXPECT_OK(kt_join_req(e, &j));
	EXPECT(kprog_job_is_local(kprog_ep_job(e->ep), 3));
}

TEST(job__node_map_with_a_network_transport_makes_remote_peers)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	struct kprog_node_addr nodes[3];
	struct kprog_job *job;
	struct kprog_peer_ref ref;
	u64 key = kt_new_key();
	struct kprog_join j;

	kt_fx_install();
	fill_nodes(nodes, 3);
	j = map_req(key, 1, map4, nodes, 3);
	ASSERT_OK(kt_join_req(a, &j));
	job = kprog_ep_job(a->ep);
	EXPECT_EQ(job->nr_nodes, 3);
	EXPECT_EQ(job->self_node, 0);
	EXPECT_EQ(job->nodes[1].family, AF_INET6);
	EXPECT_EQ(job->nodes[2].addr[3], 3);
	EXPECT_EQ(job->nodes[2].__pad, 0);
	EXPECT_EQ(job->peers[0].kind, KPROG_PEER_ABSENT);
	EXPECT_EQ(job->peers[1].kind, KPROG_PEER_LOCAL);
	EXPECT_EQ(job->peers[2].kind, KPROG_PEER_REMOTE);
	EXPECT_EQ(job->peers[2].node, 1);
	EXPECT_EQ(job->peers[3].node, 2);
	EXPECT(kprog_job_is_local(job, 0));
	EXPECT(!kprog_job_is_local(job, 3));
	kprog_job_peer(job, 3, &ref);
	EXPECT_EQ(ref.kind, KPROG_PEER_REMOTE);
	EXPECT_EQ(ref.node, 2);
	EXPECT(!ref.ep);
	EXPECT(kprog_xport_for(job, &ref) == &kt_fx_xport);
	EXPECT(!kprog_job_get_ep(job, 2));
	/* The other local rank joins with the same map. */
	fill_nodes(nodes, 3);
	j = map_req(key, 0, map4, nodes, 3);
	EXPECT_OK(kt_join_req(b, &j));
	EXPECT(kprog_ep_job(b->ep) == job);
	/* Without a transport a remote peer is unreachable, not local. */
	kprog_xport_set_net(NULL);
	EXPECT(!kprog_xport_for(job, &ref));
	kt_fx_install();
}

TEST(job__later_joiner_must_hand_in_the_same_node_map)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	struct kprog_node_addr nodes[3];
	static const u32 other[4] = { 0, 0, 2, 1 };
	u64 key = kt_new_key();
	struct kprog_join j;

	kt_fx_install();
	fill_nodes(nodes, 3);
	j = map_req(key, 0, map4, nodes, 3);
	ASSERT_OK(kt_join_req(a, &j));
	j = join_req(key, 1, 4);				/* no map */
	EXPECT_ERR(kt_join_req(b, &j), -EINVAL);
	j = map_req(key, 1, other, nodes, 3);			/* ranks */
	EXPECT_ERR(kt_join_req(b, &j), -EINVAL);
	nodes[2].port = 99;
	j = map_req(key, 1, map4, nodes, 3);			/* addresses */
	EXPECT_ERR(kt_join_req(b, &j), -EINVAL);
	fill_nodes(nodes, 3);
	j = map_req(key, 1, map4, nodes, 2);			/* node count */
	EXPECT_ERR(kt_join_req(b, &j), -EINVAL);
	nodes[3 - 1].__pad = 7;		/* padding does not count */
	j = map_req(key, 1, map4, nodes, 3);
	EXPECT_OK(kt_join_req(b, &j));
}

TEST(job__joiner_with_a_map_cannot_join_a_job_without_one)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	struct kprog_node_addr nodes[3];
	static const u32 one_node[4] = { 0, 0, 0, 0 };
	u64 key = kt_new_key();
	struct kprog_join j = join_req(key, 0, 4);

	ASSERT_OK(kt_join_req(a, &j));
	fill_nodes(nodes, 3);
	j = map_req(key, 1, one_node, nodes, 1);
	EXPECT_ERR(kt_join_req(b, &j), -EINVAL);
	j = map_req(key, 1, one_node, nodes, 1);
	j.self_node = 0;
	j.rank_nodes = 0;
	j.nodes = 0;
	j.nr_nodes = 0;
	EXPECT_OK(kt_join_req(b, &j));
}

static struct kprog_node_addr fail_nodes[3];

static int join_map_failing(void *arg)
{
	struct kprog_join j = map_req(failing_key, 0, map4, fail_nodes, 3);

	fill_nodes(fail_nodes, 3);
	return kt_join_req(failing_ep, &j);
}

TEST(job__every_allocation_failing_in_a_join_with_a_map_is_enomem)
{
	kt_fx_install();
	failing_ep = kt_open();
	failing_key = kt_new_key();
	/* nodes, rank_node, ring, grant table, job, peers, left bitmap */
	EXPECT_EQ(kt_each_alloc_failure(join_map_failing, NULL, NULL, -ENOMEM),
		  7);
	EXPECT_EQ(kprog_ep_job(failing_ep->ep)->nr_nodes, 3);
}

TEST(job__a_leaving_rank_is_leaving_until_its_departure_ends)
{
	struct kt_ep *a, *b;
	struct kprog_job *job;
	struct kprog_peer_ref ref;

	kt_pair(&a, &b);
	job = kprog_ep_job(a->ep);
	/* b's file is released, step by step (main.c's kprog_release()). */
	mock_set_current(b->proc);
	kprog_job_leave_begin(b->ep);
	kprog_job_peer(job, 1, &ref);
	EXPECT_EQ(ref.kind, KPROG_PEER_LEAVING);
	EXPECT(!ref.ep);
	EXPECT(!kprog_xport_for(job, &ref));
	EXPECT(kprog_job_rank_left(job, 1));
	/* Its rank cannot be taken yet. */
	EXPECT_ERR(kt_join(kt_open(), job->key, 1, 2), -EADDRINUSE);
	mock_set_current(b->proc);
	kprog_depart(b->ep);
	kprog_chan_depart(b->ep);
	kprog_job_leave_end(b->ep);
	EXPECT_EQ(job->peers[1].kind, KPROG_PEER_ABSENT);
	EXPECT_EQ(job->members, 1);
	kprog_ep_quiesce(b->ep);
	kprog_ep_put(b->ep);
	b->open = false;
	EXPECT_OK(kt_join(kt_open(), job->key, 1, 2));
}

/* Internal: JOIN's own re-check, for a join racing with another. */
TEST(job__join_of_an_endpoint_already_in_a_job_is_eisconn_inside_too)
{
	struct kt_ep *e = kt_open();
	struct kprog_join j = join_req(kt_new_key(), 0, 1);
	struct kprog_job_nodes map = {};
	struct kprog_ring ring = {};

	ASSERT_OK(kt_join_req(e, &j));
	ASSERT_OK(kprog_ring_alloc(&ring, 4, 1, false));
	EXPECT_ERR(kprog_job_join(e->ep, &j, &map, &ring), -EISCONN);
	kprog_ring_free(&ring);
}

/* ---------------------------------------------------------------------
 * The API for a network transport module: lookup by key (RCU), the walk
 * over jobs, ranks of lost nodes, KPROG_JOIN_NET_ONLY, and the reference
 * a job holds on the transport's module.
 */

/* The fake, provided by a module of its own (as kprog_ib.ko is). */
static struct module fx_module = { .name = "kprog_fx" };
static struct kprog_transport fx_owned;

static void install_owned_fake(void)
{
	kt_fx_install();
	fx_owned = kt_fx_xport;
	fx_owned.owner = &fx_module;
	kprog_xport_set_net(&fx_owned);
}

TEST(job__lookup_returns_the_job_of_a_key_referenced)
{
	struct kt_ep *a, *b;
	struct kprog_job *job, *found;

	kt_pair(&a, &b);
	job = kprog_ep_job(a->ep);
	found = kprog_job_lookup(job->key);
	EXPECT(found == job);
	EXPECT(!mock_rcu_reading());
	/* The reference keeps it after every member left. */
	kt_close(a);
	kt_close(b);
	EXPECT(!kprog_job_lookup(job->key));
	EXPECT_EQ(found->key, job->key);
	kprog_job_put(found);
	EXPECT(!kprog_job_lookup(kt_new_key()));
}

struct walk {
	int calls;
	int stop_at;
	u64 keys[4];
};

static int walk_fn(struct kprog_job *job, void *arg)
{
	struct walk *w = arg;

	if (w->calls < 4)
		w->keys[w->calls] = job->key;
	if (++w->calls == w->stop_at)
		return 7;
	return 0;
}

TEST(job__for_each_visits_every_job_until_one_call_says_stop)
{
	struct kt_ep *a = kt_open(), *b = kt_open();
	u64 ka = kt_new_key(), kb = kt_new_key();
	struct walk w = {};

	EXPECT_EQ(kprog_job_for_each(walk_fn, &w), 0);	/* no job */
	EXPECT_EQ(w.calls, 0);
	ASSERT_OK(kt_join(a, ka, 0, 1));
	ASSERT_OK(kt_join(b, kb, 0, 1));
	EXPECT_EQ(kprog_job_for_each(walk_fn, &w), 0);
	EXPECT_EQ(w.calls, 2);
	EXPECT((w.keys[0] == ka && w.keys[1] == kb) ||
	       (w.keys[0] == kb && w.keys[1] == ka));
	/* A non-zero return ends the walk; every reference is dropped. */
	memset(&w, 0, sizeof(w));
	w.stop_at = 1;
	EXPECT_EQ(kprog_job_for_each(walk_fn, &w), 7);
	EXPECT_EQ(w.calls, 1);
	/* The snapshot array cannot be allocated. */
	memset(&w, 0, sizeof(w));
	mock_kmalloc_errors = 1;
	EXPECT_ERR(kprog_job_for_each(walk_fn, &w), -ENOMEM);
	EXPECT_EQ(w.calls, 0);
}

TEST(job__a_rank_marked_left_fails_the_receives_naming_it_at_once)
{
	struct kt_ep *a = kt_open();
	struct kprog_node_addr nodes[3];
	struct kprog_post p;
	struct kprog_join j;
	struct kprog_job *job;
	char buf[8];

	kt_fx_install();
	fill_nodes(nodes, 3);
	j = map_req(kt_new_key(), 0, map4, nodes, 3);
	ASSERT_OK(kt_join_req(a, &j));
	job = kprog_ep_job(a->ep);
	EXPECT(!kprog_job_rank_left(job, 3));
	kprog_job_mark_left(job, 3);
	EXPECT(kprog_job_rank_left(job, 3));
	EXPECT(!kprog_job_rank_left(job, 2));
	EXPECT_OK(kt_recv(a, 3, 0, buf, sizeof(buf), 5, 0, &p));
	EXPECT_EQ(p.done, 1);
	EXPECT_EQ(p.cqe.error, -ECONNRESET);
	EXPECT_OK(kt_recv(a, 2, 0, buf, sizeof(buf), 6, 0, &p));
	EXPECT_EQ(p.done, 0);
	EXPECT_OK(kt_cancel(a, 6));
	EXPECT_CQE(a, 6, 0, -ECANCELED);
}

static struct kprog_join net_only_req(u64 key, u32 rank,
				      struct kprog_node_addr *node)
{
	static const u32 here[2] = { 0, 0 };
	struct kprog_join j = join_req(key, rank, 2);

	j.flags = KPROG_JOIN_NET_ONLY;
	j.rank_nodes = (uintptr_t)here;
	j.nodes = (uintptr_t)node;
	j.nr_nodes = 1;
	return j;
}

TEST(job__net_only_job_reaches_its_local_ranks_through_the_network)
{
	struct kt_ep *a = kt_open(), *b = kt_open(), *c = kt_open();
	struct kprog_node_addr node[1];
	struct kprog_peer_ref ref;
	struct kprog_job *job;
	struct kprog_chan_open co = { .peer = 1 };
	u64 key = kt_new_key();
	struct kprog_join j;
	struct kprog_post p;
	char buf[16] = "hello";

	fill_nodes(node, 1);
	j = net_only_req(key, 0, node);
	EXPECT_ERR(kt_join_req(a, &j), -EHOSTUNREACH);	/* no transport */
	kt_fx_install();
	j = net_only_req(key, 0, node);
	j.nr_nodes = 0;
	j.nodes = 0;
	j.rank_nodes = 0;
	EXPECT_ERR(kt_join_req(a, &j), -EINVAL);	/* needs a node map */
	j = net_only_req(key, 0, node);
	ASSERT_OK(kt_join_req(a, &j));
	job = kprog_ep_job(a->ep);
	EXPECT(job->net_only);
	EXPECT(job->net == &kt_fx_xport);
	/* Every joiner must agree. */
	j = net_only_req(key, 1, node);
	j.flags = 0;
	EXPECT_ERR(kt_join_req(c, &j), -EINVAL);
	j = net_only_req(key, 1, node);
	ASSERT_OK(kt_join_req(b, &j));
	/* A joined local rank is reached as a remote one, at this node. */
	kprog_job_peer(job, 1, &ref);
	EXPECT_EQ(ref.kind, KPROG_PEER_REMOTE);
	EXPECT_EQ(ref.node, 0);
	EXPECT(!ref.ep);
	EXPECT(kprog_xport_for(job, &ref) == &kt_fx_xport);
	EXPECT(kprog_job_is_local(job, 1));
	/* So a send goes through the network transport, no channel. */
	EXPECT_OK(kt_send(a, 1, 3, buf, 6, 9, 0, &p));
	EXPECT_EQ(p.done, 1);
	ASSERT_EQ(kt_fx.nsent, 1);
	EXPECT_EQ(kt_fx.sent[0].env.dst, 1);
	EXPECT_ERR(kt_ioctl(a, KPROG_IOC_CHAN_OPEN, &co), -ENOTCONN);
	/* Without a transport the ranks are unreachable. */
	kprog_xport_set_net(NULL);
	EXPECT_ERR(kt_send(a, 1, 3, buf, 6, 10, 0, &p), -EHOSTUNREACH);
	kprog_xport_set_net(&kt_fx_xport);
}

TEST(job__a_job_holds_the_network_transports_module_until_it_is_freed)
{
	struct kt_ep *a = kt_open(), *b = kt_open(), *c = kt_open();
	struct kprog_node_addr nodes[3];
	struct kprog_join j;
	u64 key = kt_new_key();

	install_owned_fake();
	/* A job on this node only takes no reference. */
	ASSERT_OK(kt_join(c, kt_new_key(), 0, 1));
	EXPECT_EQ(mock_module_refs, 0);
	fill_nodes(nodes, 3);
	j = map_req(key, 0, map4, nodes, 3);
	ASSERT_OK(kt_join_req(a, &j));
	EXPECT_EQ(mock_module_refs, 1);
	EXPECT(kprog_ep_job(a->ep)->net == &fx_owned);
	/* A later joiner's reference is not kept. */
	fill_nodes(nodes, 3);
	j = map_req(key, 1, map4, nodes, 3);
	ASSERT_OK(kt_join_req(b, &j));
	EXPECT_EQ(mock_module_refs, 1);
	/* Nor that of a joiner that fails. */
	fill_nodes(nodes, 3);
	j = map_req(key, 1, map4, nodes, 3);
	EXPECT_ERR(kt_join_req(kt_open(), &j), -EADDRINUSE);
	EXPECT_EQ(mock_module_refs, 1);
	/* The transport going away does not free the module yet. */
	kprog_xport_set_net(NULL);
	EXPECT_EQ(mock_module_refs, 1);
	kt_close(a);
	EXPECT_EQ(mock_module_refs, 1);
	kt_close(b);
	EXPECT_EQ(mock_module_refs, 0);
	/* A module being unloaded gives no new job. */
	install_owned_fake();
	mock_module_going = true;
	fill_nodes(nodes, 3);
	j = map_req(kt_new_key(), 0, map4, nodes, 3);
	EXPECT_ERR(kt_join_req(kt_open(), &j), -EHOSTUNREACH);
	EXPECT_EQ(mock_module_refs, 0);
}
